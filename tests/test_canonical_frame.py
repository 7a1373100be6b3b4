"""The frame form of the canonical ECE: ``reduction="canonical"`` statistics (issue 14).

The table holds per (group, cell of the simplex grid) the weight and the weighted sums
of each component and of each true class; its finisher must give the expression
``pc.canonical_ece``'s numbers and those of the numpy reference of
``test_ece_family``, tables of parts must merge into the table of the whole, and bad
data and bad options must be refused as in the other frame functions.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import FrameContext, make_log
from test_ece_family import canonical_reference, vectors_of

DISTANCES = ["tv", "cityblock", "sqeuclidean"]


def grid_bins(values: np.ndarray, n_bins: int, closed: str) -> np.ndarray:
    """Uniform bins with the correctly rounded edges k / B, from the definition."""
    edges = np.array([k / n_bins for k in range(n_bins + 1)])
    side = "left" if closed == "right" else "right"
    return np.clip(np.searchsorted(edges, values, side=side) - 1, 0, n_bins - 1)


def expression_per_group(df: pl.DataFrame, by: str | None, **options: object) -> list[float | None]:
    expr = pc.canonical_ece("probs", "cls", **options)  # type: ignore[arg-type]
    if by is None:
        return [df.select(expr).item()]
    return df.group_by(by).agg(expr).sort(by)["probs"].to_list()


# --------------------------------------------------------------------------
# The same numbers as the expression and the reference
# --------------------------------------------------------------------------


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("average", ["weighted", "bins"])
@pytest.mark.parametrize("closed", ["right", "left"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_bins", [1, 4, 10])
def test_frame_equals_expression_and_reference(
    distance: str, average: str, closed: str, weighted: bool, n_bins: int
) -> None:
    # Two decimals: many entries sit exactly on edges k / 10.
    df = make_log(31, 600, classes=3, decimals=2, groups=3)
    weight = "w" if weighted else None
    options = {
        "n_bins": n_bins,
        "closed": closed,
        "distance": distance,
        "average": average,
        "weight": weight,
    }
    got = pc.summary(df, "probs", "cls", by="g", reduction="canonical", metrics=["ece"], **options)  # type: ignore[arg-type]
    assert got.columns == ["g", "count", "refused", "canonical_ece"]
    want = expression_per_group(df, "g", **options)
    assert got["canonical_ece"].to_list() == pytest.approx(want, rel=1e-12, abs=1e-15)
    for g, value in zip(got["g"], got["canonical_ece"]):
        part = df.filter(pl.col("g") == g)
        probs = vectors_of(part)
        reference = canonical_reference(
            probs,
            part["cls"].to_numpy(),
            grid_bins(probs, n_bins, closed),
            distance,
            part["w"].to_numpy() if weighted else None,
            average,
        )
        assert value == pytest.approx(reference, rel=1e-12, abs=1e-15)


def test_on_edges_the_cells_follow_the_exact_rule() -> None:
    # 0.07 * 100 = 7.000000000000001, 0.23 and 0.7 are edges: right-closed, in the bin
    # below their edge; left-closed, in the bin above.
    df = pl.DataFrame(
        {
            "probs": pl.Series(
                [[0.07, 0.225, 0.705], [0.065, 0.23, 0.705], [0.1, 0.2, 0.7]],
                dtype=pl.Array(pl.Float64, 3),
            ),
            "cls": [2, 0, 1],
        }
    )
    probs = vectors_of(df)
    for closed in ("right", "left"):
        for n_bins in (10, 100):
            got = pc.summary(
                df,
                "probs",
                "cls",
                n_bins=n_bins,
                closed=closed,  # type: ignore[arg-type]
                reduction="canonical",
                metrics=["ece"],
            )["canonical_ece"].item()
            cells = grid_bins(probs, n_bins, closed)
            assert got == pytest.approx(
                canonical_reference(probs, df["cls"].to_numpy(), cells), rel=1e-12
            )
            assert got == pytest.approx(
                df.select(pc.canonical_ece("probs", "cls", n_bins=n_bins, closed=closed)).item(),  # type: ignore[arg-type]
                rel=1e-12,
            )
    # Right-closed with 100 bins: rows 0 and 1 share a cell, row 2 is alone (0.1 > 0.07).
    stats = pc.bin_statistics(df, "probs", "cls", n_bins=100, reduction="canonical")
    assert stats["count"].sort().to_list() == [1, 2]


def test_mce_rmsce_brier_log_loss() -> None:
    df = make_log(5, 500, classes=4, decimals=1, groups=2)
    got = pc.summary(
        df,
        "probs",
        "cls",
        by="g",
        n_bins=3,
        reduction="canonical",
        weight="w",
        distance="sqeuclidean",
    )
    assert got.columns == [
        "g",
        "count",
        "refused",
        "canonical_ece",
        "canonical_mce",
        "canonical_rmsce",
        "brier",
        "log_loss",
    ]
    for row in got.iter_rows(named=True):
        part = df.filter(pl.col("g") == row["g"])
        probs, labels, w = vectors_of(part), part["cls"].to_numpy(), part["w"].to_numpy()
        cells = grid_bins(probs, 3, "right")
        onehot = np.eye(4)[labels]
        distances, weights = [], []
        for cell in np.unique(cells, axis=0):
            rows = (cells == cell).all(axis=1)
            weight = w[rows].sum()
            mean_p = (w[rows, None] * probs[rows]).sum(0) / weight
            mean_y = (w[rows, None] * onehot[rows]).sum(0) / weight
            distances.append(((mean_p - mean_y) ** 2).sum())
            weights.append(weight)
        d, weights_ = np.array(distances), np.array(weights)
        assert row["canonical_mce"] == pytest.approx(d.max(), rel=1e-12)
        assert row["canonical_rmsce"] == pytest.approx(
            np.sqrt((weights_ * d**2).sum() / w.sum()), rel=1e-12
        )
        expected = part.select(
            brier=pc.multiclass_brier("probs", "cls", weight="w"),
            log_loss=pc.multiclass_log_loss("probs", "cls", weight="w"),
        )
        assert row["brier"] == pytest.approx(expected["brier"].item(), rel=1e-12)
        assert row["log_loss"] == pytest.approx(expected["log_loss"].item(), rel=1e-12)


def test_many_classes_several_words_only_non_empty_cells() -> None:
    # K = 1000 with 5 bins: 5**1000 cells, packed 22 classes a word (46 words); only
    # the rows' cells exist, and vectors differing in one far class are apart.
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(1000, 0.05), 60)
    probs[1] = probs[0]
    probs[1, [0, 990]] = probs[0, [990, 0]]  # the same cell but for classes 0 and 990
    labels = rng.integers(0, 1000, 60)
    df = pl.DataFrame({"probs": pl.Series(probs, dtype=pl.Array(pl.Float64, 1000)), "y": labels})
    stats = pc.bin_statistics(df, "probs", "y", n_bins=5, reduction="canonical", metrics=["ece"])
    words = [c for c in stats.columns if c.startswith("cell")]
    assert len(words) == 46 and words[:2] == ["cell", "cell_1"]
    assert stats.height == len(np.unique(grid_bins(probs, 5, "right"), axis=0))
    got = pc.metrics_from_statistics(stats, metrics=["ece"])["ece"].item()
    want = canonical_reference(probs, labels, grid_bins(probs, 5, "right"))
    assert got == pytest.approx(want, rel=1e-12)
    assert got == pytest.approx(
        df.select(pc.canonical_ece("probs", "y", n_bins=5)).item(), rel=1e-12
    )


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 80),
    classes=st.integers(2, 5),
    n_bins=st.integers(1, 8),
    decimals=st.sampled_from([1, 2, None]),
    distance=st.sampled_from(DISTANCES),
    cut=st.floats(0.0, 1.0),
    scale=st.sampled_from([0.5, 3.0, 1e3]),
)
@example(seed=0, n=1, classes=2, n_bins=1, decimals=1, distance="tv", cut=0.0, scale=0.5)
def test_properties(
    seed: int,
    n: int,
    classes: int,
    n_bins: int,
    decimals: int | None,
    distance: str,
    cut: float,
    scale: float,
) -> None:
    df = make_log(seed, n, classes=classes, decimals=decimals, groups=2)
    options = {"by": "g", "n_bins": n_bins, "weight": "w", "reduction": "canonical"}

    def canonical(data: pl.DataFrame, weight: str = "w") -> list[float | None]:
        table = pc.summary(
            data,
            "probs",
            "cls",
            metrics=["ece"],
            distance=distance,  # type: ignore[arg-type]
            **{**options, "weight": weight},
        )  # type: ignore[arg-type]
        return table.sort("g")["canonical_ece"].to_list()

    whole = canonical(df)
    # frame = expression
    expr = expression_per_group(df, "g", n_bins=n_bins, weight="w", distance=distance)
    assert whole == pytest.approx(expr, rel=1e-12, abs=1e-15)
    # permutation invariance
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed % 1000)
    assert canonical(shuffled) == pytest.approx(whole, rel=1e-12, abs=1e-15)
    # merge = whole: tables of two parts, concatenated and finished
    split = int(cut * n)
    parts = [df[:split], df[split:]]
    tables = [pc.bin_statistics(part, "probs", "cls", metrics=["ece"], **options) for part in parts]  # type: ignore[arg-type]
    merged = pc.metrics_from_statistics(
        pl.concat(tables), by="g", metrics=["ece"], distance=distance
    )  # type: ignore[arg-type]
    assert merged["ece"].to_list() == pytest.approx(whole, rel=1e-12, abs=1e-15)
    # weight scaling invariance
    scaled = canonical(df.with_columns(w2=pl.col("w") * scale), "w2")
    assert scaled == pytest.approx(whole, rel=1e-12, abs=1e-15)


def test_merge_of_halves_is_the_whole_table() -> None:
    df = make_log(8, 1000, classes=3, decimals=2, groups=3)
    options = {"by": "g", "n_bins": 5, "weight": "w", "reduction": "canonical"}
    whole = pc.bin_statistics(df, "probs", "cls", **options)  # type: ignore[arg-type]
    halves = pl.concat(
        [
            pc.bin_statistics(part, "probs", "cls", **options)
            for part in (  # type: ignore[arg-type]
                df[:500],
                df[500:],
            )
        ]
    )
    assert halves.height > whole.height  # cells met in both halves, not yet summed
    from polars_calib._table.canonical import merge_cells

    keys = ["g", "cell", "n_bins"]
    merged = merge_cells(halves.lazy(), ["g"]).collect().sort(keys).select(whole.columns)
    assert merged.select(keys).equals(whole.select(keys))
    assert merged["count"].equals(whole["count"])
    sums = [c for c in whole.columns if c.startswith("sum_") or c == "weight"]
    for column in sums:
        assert merged[column].to_list() == pytest.approx(whole[column].to_list(), rel=1e-12)
    # Keys left out are summed over: per group, then the whole.
    got = pc.metrics_from_statistics(halves, metrics=["ece"])["ece"].item()
    assert got == pytest.approx(
        df.select(pc.canonical_ece("probs", "cls", n_bins=5, weight="w")).item(), rel=1e-12
    )


def test_canonical_tables_of_different_closures_do_not_merge() -> None:
    # Components rounded to tenths sit on the edges of 10 bins: the two closures put
    # them in different cells, so the tables' cells are not the same cells.
    df = make_log(9, 600, classes=3, decimals=1, groups=2)
    options = {"by": "g", "n_bins": 10, "reduction": "canonical", "metrics": ["ece"]}
    right = pc.bin_statistics(df[:300], "probs", "cls", **options)  # type: ignore[arg-type]
    left = pc.bin_statistics(df[300:], "probs", "cls", closed="left", **options)  # type: ignore[arg-type]
    assert left["closed"].unique().to_list() == ["left"]
    mixed = pl.concat([right, left])
    with pytest.raises(pc.CalibrationDataError, match="different `n_bins` or `closed`"):
        pc.metrics_from_statistics(mixed, by="g", metrics=["ece"])
    lazy = pc.metrics_from_statistics(mixed.lazy(), by="g", metrics=["ece"]).collect()
    assert lazy["ece"].null_count() == lazy.height
    same = pl.concat([right, pc.bin_statistics(df[300:], "probs", "cls", **options)])  # type: ignore[arg-type]
    merged = pc.metrics_from_statistics(same, by="g", metrics=["ece"]).sort("g")
    whole = pc.summary(df, "probs", "cls", **options).sort("g")  # type: ignore[arg-type]
    assert merged["ece"].to_list() == pytest.approx(whole["canonical_ece"].to_list(), rel=1e-12)


# --------------------------------------------------------------------------
# Contexts, data policy, options
# --------------------------------------------------------------------------


def test_contexts_and_namespaces(frame_context: FrameContext) -> None:
    df = make_log(12, 300, classes=3, decimals=2, groups=3)
    expected = pc.summary(df, "probs", "cls", by="g", n_bins=4, reduction="canonical", weight="w")
    frame = frame_context.frame(df)
    got = frame_context.collect(
        frame.calib.summary("probs", "cls", by="g", n_bins=4, reduction="canonical", weight="w")
    )
    assert_frame_equal(got, expected, rel_tol=1e-12, abs_tol=1e-15)
    table = frame_context.collect(
        frame.calib.bin_statistics("probs", "cls", by="g", n_bins=4, reduction="canonical")
    )
    finished = pc.metrics_from_statistics(table, by="g", metrics=["ece"])
    assert finished["ece"].to_list() == pytest.approx(
        expression_per_group(df, "g", n_bins=4), rel=1e-12
    )


def test_refused_ignored_and_empty_groups() -> None:
    df = pl.DataFrame(
        {
            "g": [0, 0, 0, 1, 1, 2, 2],
            "probs": pl.Series(
                [[0.2, 0.8], [0.6, 0.4], [0.5, 0.5], None, [0.3, 0.7], [0.9, 0.9], [0.5, 0.5]],
                dtype=pl.Array(pl.Float64, 2),
            ),
            "y": [1, 0, 1, 0, None, 0, 0],
        }
    )
    # Group 1 has no used row, group 2 a refused one (a sum off 1).
    with pytest.raises(pc.CalibrationDataError, match="sum off 1"):
        pc.summary(df, "probs", "y", by="g", reduction="canonical")
    lazy = pc.summary(df.lazy(), "probs", "y", by="g", n_bins=2, reduction="canonical")
    assert isinstance(lazy, pl.LazyFrame)
    got = lazy.collect()
    assert got["count"].to_list() == [3, 0, 1]
    assert got["refused"].to_list() == [1 - 1, 0, 1]
    want = df.group_by("g").agg(pc.canonical_ece("probs", "y", n_bins=2)).sort("g")["probs"]
    assert got["canonical_ece"].to_list() == pytest.approx(want.to_list())
    assert got["canonical_ece"].to_list()[1:] == [None, None]
    table = pc.bin_statistics(
        df.lazy(), "probs", "y", by="g", n_bins=2, reduction="canonical"
    ).collect()
    nulls = table.filter(pl.col("cell").is_null())
    assert nulls["g"].to_list() == [1, 2] and nulls["count"].to_list() == [0, 1]
    assert nulls["sum_p_0"].to_list() == [None, None]
    # One group: a row even for empty data, as an expression gives.
    empty = pc.summary(df.head(0), "probs", "y", reduction="canonical", metrics=["ece"])
    assert empty.rows() == [(0, 0, None)]


def test_list_vectors_need_an_array() -> None:
    df = make_log(1, 20, classes=3).with_columns(pl.col("probs").cast(pl.List(pl.Float64)))
    with pytest.raises(pc.CalibrationDataError, match=r"list\.to_array"):
        pc.summary(df, "probs", "cls", reduction="canonical")
    with pytest.raises(pc.CalibrationDataError, match="Array"):
        pc.bin_statistics(df.lazy(), "probs", "cls", reduction="canonical")


def test_bad_options() -> None:
    df = make_log(1, 50, classes=3)
    with pytest.raises(ValueError, match="uniform"):
        pc.summary(df, "probs", "cls", reduction="canonical", strategy="quantile")
    with pytest.raises(ValueError, match="median_variance_bins"):
        pc.bin_statistics(df, "probs", "cls", reduction="canonical", strategy="median_variance")
    with pytest.raises(ValueError, match="compat"):
        pc.summary(df, "probs", "cls", reduction="canonical", compat="sklearn")
    with pytest.raises(ValueError, match="canonical"):
        pc.summary(df, "probs", "cls", reduction="canonical", metrics=["debiased_ece"])
    with pytest.raises(ValueError, match="resampling"):
        pc.summary(df, "probs", "cls", reduction="canonical", metrics=["consistency_p"])
    with pytest.raises(ValueError, match="confidence"):
        pc.summary(df, "probs", "cls", reduction="canonical", confidence=0.9)
    with pytest.raises(ValueError, match="resampling"):
        pc.bin_statistics(df, "probs", "cls", reduction="canonical", resampling="bootstrap")
    with pytest.raises(ValueError, match="distance"):
        pc.summary(df, "probs", "cls", reduction="canonical", distance="euclidean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="average"):
        pc.summary(df, "probs", "cls", reduction="canonical", average="macro")
    with pytest.raises(ValueError, match="average"):
        pc.summary(df, "probs", "cls", reduction="top_label", average="bins")
    with pytest.raises(ValueError, match="distance"):
        pc.summary(df, "probs", "cls", reduction="classwise", distance="tv")
    with pytest.raises(ValueError, match="reliability"):
        pc.reliability(df, "probs", "cls", reduction="canonical")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="by"):
        pc.summary(df.rename({"g": "cell"}), "probs", "cls", by="cell", reduction="canonical")
    stats = pc.bin_statistics(df, "probs", "cls", reduction="canonical", metrics=["ece"])
    with pytest.raises(ValueError, match="reliability"):
        pc.reliability_from_statistics(stats)
    with pytest.raises(pc.CalibrationDataError, match="sum_squared_error"):
        pc.metrics_from_statistics(stats, metrics=["brier"])
    with pytest.raises(ValueError, match="distance"):
        pc.metrics_from_statistics(pc.bin_statistics(df, "p", "y"), distance="tv")


def test_tables_of_other_grids_do_not_merge() -> None:
    df = make_log(2, 200, classes=3)
    tables = [
        pc.bin_statistics(df, "probs", "cls", n_bins=b, reduction="canonical", metrics=["ece"])
        for b in (4, 5)
    ]
    with pytest.raises(pc.CalibrationDataError, match="n_bins"):
        pc.metrics_from_statistics(pl.concat(tables), metrics=["ece"])
    lazy = pc.metrics_from_statistics(pl.concat(tables).lazy(), metrics=["ece"]).collect()
    assert lazy["ece"].to_list() == [None]


def test_mean_over_bins_and_sign_changing_data() -> None:
    # make_log's vectors are under-confident at low confidence and over-confident at
    # high: the canonical ECE is well above its value on labels drawn from the vectors.
    df = make_log(9, 4000, classes=3, decimals=None)
    rng = np.random.default_rng(9)
    probs = vectors_of(df)
    drawn = (rng.random(len(probs))[:, None] > probs.cumsum(1)).sum(1).clip(0, 2)
    calibrated = df.with_columns(cls=pl.Series(drawn))
    miscalibrated, baseline = (
        pc.summary(
            data, "probs", "cls", n_bins=3, reduction="canonical", metrics=["ece"], average="bins"
        )["canonical_ece"].item()
        for data in (df, calibrated)
    )
    assert miscalibrated > 2 * baseline
    assert miscalibrated == pytest.approx(
        df.select(pc.canonical_ece("probs", "cls", n_bins=3, average="bins")).item(), rel=1e-12
    )


def test_time_windows_and_expression_keys() -> None:
    from datetime import datetime, timedelta

    df = make_log(13, 400, classes=4, decimals=2, groups=2).with_columns(
        ts=pl.Series([datetime(2024, 1, 1) + timedelta(hours=5 * i) for i in range(400)])
    )
    got = pc.summary(
        df.lazy(),
        "probs",
        "cls",
        by=pl.col("g") + 1,
        time="ts",
        every="1w",
        n_bins=3,
        reduction="canonical",
        metrics=["ece"],
        weight="w",
    ).collect()
    want = (
        df.group_by(pl.col("g") + 1, pl.col("ts").dt.truncate("1w"))
        .agg(pc.canonical_ece("probs", "cls", n_bins=3, weight="w"))
        .sort("g", "ts")
    )
    assert got.select("g", "ts").equals(want.select("g", "ts"))
    assert got["canonical_ece"].to_list() == pytest.approx(want["probs"].to_list(), rel=1e-12)


def test_refused_rows_are_those_of_the_vector_checks() -> None:
    # The one validity rule of the vector reductions: the same rows refused, counted.
    rows = [[0.2, 0.8], [0.5, None], [float("nan"), 1.0], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]]
    df = pl.DataFrame(
        {
            "g": [0, 1, 2, 3, 4, 5],
            "probs": pl.Series(rows, dtype=pl.Array(pl.Float64, 2)),
            "y": [1, 0, 0, 2, 0, 1],
            "w": [1.0, 1.0, 1.0, 1.0, -1.0, 0.0],
        }
    )
    got = pc.summary(
        df.lazy(), "probs", "y", by="g", weight="w", reduction="canonical", metrics=["ece"]
    ).collect()
    classwise = pc.summary(
        df.lazy(), "probs", "y", by="g", weight="w", reduction="classwise", metrics=["ece"]
    ).collect()
    assert got["refused"].to_list() == classwise["refused"].to_list() == [0, 1, 1, 1, 1, 0]
    # Group 5 has weight 0: no metric, as the expression gives.
    assert got["canonical_ece"].to_list() == [pytest.approx(0.2), None, None, None, None, None]
    expr = df.group_by("g").agg(pc.canonical_ece("probs", "y", weight="w")).sort("g")
    assert expr["probs"].to_list() == got["canonical_ece"].to_list()


def test_float32_vectors() -> None:
    df = make_log(4, 200, classes=3, decimals=None)
    single = df.with_columns(pl.col("probs").cast(pl.Array(pl.Float32, 3)))
    got = pc.summary(
        single, "probs", "cls", n_bins=4, reduction="canonical", metrics=["ece"], sum_tol=1e-5
    )["canonical_ece"].item()
    want = single.select(pc.canonical_ece("probs", "cls", n_bins=4, sum_tol=1e-5)).item()
    assert got == pytest.approx(want, rel=1e-12)
