"""The frame API: reliability tables, summaries and validation.

Reliability tables are checked row by row against the numpy oracle
(tests/reference.py) on data whose miscalibration changes sign across [0, 1];
summaries against the expression forms in ``group_by().agg``.
"""

from __future__ import annotations

import math
import sys
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc
from polars_calib._core.options import METRICS
from polars_calib._table.columns import RELIABILITY

sys.path.insert(0, str(Path(__file__).parent))
import reference as ref

LOG = Path(__file__).parents[1] / "examples" / "data" / "predictions.parquet"
FLOATS = ["mean_predicted", "observed", "gap", "observed_lower", "observed_upper"]


def sign_changing(seed: int, n: int, decimals: int | None, groups: int = 1) -> pl.DataFrame:
    """y ~ Bernoulli(p + 0.2 sin(2 pi p)): over-confident above 1/2, under below."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    if decimals is not None:
        p = np.round(p, decimals)
    q = np.clip(p + 0.2 * np.sin(2 * math.pi * p), 0.0, 1.0)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, n),
            "p": p,
            "y": (rng.random(n) < q).astype(np.int8),
            "w": rng.random(n) * 3.0,
        }
    )


def assert_matches_reference(table: pl.DataFrame, expected: dict[str, np.ndarray]) -> None:
    assert table["bin"].to_list() == expected["bin"].tolist()
    assert table["count"].to_list() == expected["count"].tolist()
    for name in ("lower", "upper"):
        np.testing.assert_allclose(table[name].to_numpy(), expected[name], rtol=0, atol=1e-15)
    for name in FLOATS:
        got = table[name].fill_null(float("nan")).to_numpy()
        np.testing.assert_allclose(got, expected[name], rtol=0, atol=1e-12, err_msg=name)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    n_bins=st.integers(1, 20),
    closed=st.sampled_from(["right", "left"]),
    decimals=st.sampled_from([None, 2, 1]),
    weighted=st.booleans(),
    confidence=st.sampled_from([0.9, 0.95, 0.99]),
)
@example(seed=0, n=101, n_bins=10, closed="right", decimals=2, weighted=False, confidence=0.95)
@example(seed=1, n=101, n_bins=10, closed="left", decimals=2, weighted=True, confidence=0.95)
def test_uniform_reliability_matches_reference(
    seed: int,
    n: int,
    n_bins: int,
    closed: str,
    decimals: int | None,
    weighted: bool,
    confidence: float,
) -> None:
    df = sign_changing(seed, n, decimals)
    weight = "w" if weighted else None
    table = df.calib.reliability(
        "p", "y", n_bins=n_bins, closed=closed, weight=weight, confidence=confidence
    )
    expected = ref.reliability_table(
        df["p"].to_numpy(),
        df["y"].to_numpy(),
        n_bins,
        "uniform",
        closed,
        None if weight is None else df["w"].to_numpy(),
        confidence,
    )
    assert table.columns == list(ref.reliability_table([0.5], [1], 1))
    # Uniform edges are exactly k / n_bins, not Polars' 7 * (1 / 10).
    assert table["lower"].to_list() == [k / n_bins for k in range(n_bins)]
    assert table["upper"].to_list() == [(k + 1) / n_bins for k in range(n_bins)]
    assert_matches_reference(table, expected)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 200),
    n_bins=st.integers(1, 8),
    closed=st.sampled_from(["right", "left"]),
    decimals=st.sampled_from([None, 2, 1]),
    weighted=st.booleans(),
)
def test_quantile_reliability_matches_reference(
    seed: int, n: int, n_bins: int, closed: str, decimals: int | None, weighted: bool
) -> None:
    df = sign_changing(seed, n, decimals)
    weight = "w" if weighted else None
    table = df.calib.reliability(
        "p", "y", n_bins=n_bins, strategy="quantile", closed=closed, weight=weight
    )
    expected = ref.reliability_table(
        df["p"].to_numpy(),
        df["y"].to_numpy(),
        n_bins,
        "quantile",
        closed,
        None if weight is None else df["w"].to_numpy(),
    )
    assert_matches_reference(table, expected)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_per_group_has_the_full_grid(strategy: str) -> None:
    df = sign_changing(7, 400, 2, groups=4).with_columns(pl.col("g").cast(pl.String))
    lf_table = df.lazy().calib.reliability("p", "y", n_bins=12, by="g", strategy=strategy)
    assert isinstance(lf_table, pl.LazyFrame)
    table = lf_table.collect()
    assert table.columns[:2] == ["g", "bin"]
    assert table.group_by("g").len()["len"].to_list() == [12] * 4
    for (g,), part in table.partition_by("g", as_dict=True).items():
        rows = df.filter(pl.col("g") == g)
        expected = ref.reliability_table(rows["p"].to_numpy(), rows["y"].to_numpy(), 12, strategy)
        assert_matches_reference(part, expected)


def test_reliability_empty_bins_are_null_with_count_zero() -> None:
    df = pl.DataFrame({"p": [0.05, 0.95], "y": [0, 1]})
    table = df.calib.reliability("p", "y", n_bins=4)
    assert table["count"].to_list() == [1, 0, 0, 1]
    assert table.filter(pl.col("count") == 0).select(FLOATS).null_count().row(0) == (2,) * 5


# --------------------------------------------------------------------------
# summary == the expression forms
# --------------------------------------------------------------------------


def expression_summary(
    frame: pl.LazyFrame, keys: list[pl.Expr | str], **binning: object
) -> pl.LazyFrame:
    kw = {k: v for k, v in binning.items() if k != "weight"}
    weight = binning.get("weight")
    return frame.group_by(keys).agg(
        ece=pc.ece("p", "y", weight=weight, **kw),  # type: ignore[arg-type]
        mce=pc.mce("p", "y", weight=weight, **kw),  # type: ignore[arg-type]
        rmsce=pc.rmsce("p", "y", weight=weight, **kw),  # type: ignore[arg-type]
        brier=pc.brier("p", "y", weight=weight),  # type: ignore[arg-type]
        log_loss=pc.log_loss("p", "y", weight=weight),  # type: ignore[arg-type]
    )


def assert_frames_close(got: pl.DataFrame, want: pl.DataFrame, keys: list[str]) -> None:
    want = want.sort(keys)
    assert got.select(keys).equals(want.select(keys))
    for name in METRICS:
        np.testing.assert_allclose(
            got[name].to_numpy(), want[name].to_numpy(), rtol=0, atol=1e-12, err_msg=name
        )


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    return pl.read_parquet(LOG).with_columns(w=(pl.col("request_id") % 7).cast(pl.Float64) / 3)


SUMMARY_CASES = [
    ({"by": "model"}, ["model"], {}),
    ({"by": ["model", "segment"]}, ["model", "segment"], {"n_bins": 10, "closed": "left"}),
    ({"by": "model", "time": "ts", "every": "1d"}, ["model", "ts"], {"n_bins": 20}),
    ({"by": "model"}, ["model"], {"weight": "w"}),
    ({"by": "segment"}, ["segment"], {"strategy": "quantile", "n_bins": 8}),
]


@pytest.mark.parametrize(("grouping", "keys", "binning"), SUMMARY_CASES)
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_summary_equals_expressions(
    log: pl.DataFrame,
    grouping: dict[str, object],
    keys: list[str],
    binning: dict[str, object],
    lazy: bool,
    engine: str,
) -> None:
    data = log.lazy() if lazy else log
    result = pc.summary(data, "p", "y", **grouping, **binning)  # type: ignore[arg-type]
    if lazy:
        assert isinstance(result, pl.LazyFrame)
        got = result.collect(engine=engine)  # type: ignore[arg-type]
    else:
        assert isinstance(result, pl.DataFrame)
        got = result
    assert got.columns == [*keys, "count", "refused", "mean_predicted", "observed", *METRICS]
    key_exprs: list[pl.Expr | str] = [k for k in keys if k != "ts"]
    if "ts" in keys:
        key_exprs.append(pl.col("ts").dt.truncate("1d"))
    want = expression_summary(log.lazy(), key_exprs, **binning)
    want = want.collect(engine=engine)  # type: ignore[arg-type]
    assert_frames_close(got, want, keys)
    counts = log.group_by(key_exprs).agg(pl.len().cast(pl.Int64).alias("count")).sort(keys)
    assert got["count"].to_list() == counts["count"].to_list()


def test_summary_without_keys_and_namespace_forms(log: pl.DataFrame) -> None:
    got = log.calib.summary("p", "y", metrics=["ece", "brier"])
    want = log.select(ece=pc.ece("p", "y"), brier=pc.brier("p", "y"))
    assert got.columns == ["count", "refused", "mean_predicted", "observed", "ece", "brier"]
    assert got["count"].item() == log.height
    assert got["ece"].item() == pytest.approx(want["ece"].item(), abs=1e-12)
    assert got["brier"].item() == pytest.approx(want["brier"].item(), abs=1e-12)
    assert got["mean_predicted"].item() == pytest.approx(log["p"].mean(), abs=1e-12)
    assert got["observed"].item() == pytest.approx(log["y"].mean(), abs=1e-12)
    assert_frame_equal(
        log.lazy().calib.summary("p", "y").collect(),
        log.calib.summary("p", "y"),
        rel_tol=0,
        abs_tol=1e-12,
    )


def test_summary_streams(log: pl.DataFrame) -> None:
    """The two-stage query runs in the streaming engine from a parquet scan."""
    query = pl.scan_parquet(LOG).calib.summary("p", "y", by="model", time="ts", every="1d")
    streamed = query.collect(engine="streaming")
    assert streamed.height == 60
    assert_frame_equal(streamed, query.collect(engine="in-memory"), rel_tol=0, abs_tol=1e-12)


def test_null_rows_are_ignored() -> None:
    df = sign_changing(3, 200, 2, groups=2)
    holes = df.with_columns(
        p=pl.when(pl.int_range(pl.len()) % 5 == 0).then(None).otherwise("p"),
        y=pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise("y"),
    )
    kept = holes.drop_nulls(["p", "y"])
    assert_frame_equal(
        holes.calib.summary("p", "y", by="g"),
        kept.calib.summary("p", "y", by="g"),
        rel_tol=0,
        abs_tol=1e-12,
    )
    assert_frame_equal(
        holes.calib.reliability("p", "y"),
        kept.calib.reliability("p", "y"),
        rel_tol=0,
        abs_tol=1e-12,
    )


# --------------------------------------------------------------------------
# Validation and empty input
# --------------------------------------------------------------------------

BAD = [
    ({"p": [0.2, 1.5, -0.1, 0.3]}, "column 'p': probability outside [0, 1] in 2 of 4 rows"),
    ({"p": [0.2, float("nan"), 0.5, 0.3]}, "column 'p': probability NaN in 1 of 4 rows"),
    ({"y": [0, 1, 2, 1]}, "column 'y': label not 0 or 1 in 1 of 4 rows (e.g. 2.0)"),
    ({"w": [1.0, -2.0, -1.0, 1.0]}, "column 'w': weight negative in 2 of 4 rows (e.g. -2.0)"),
    ({"w": [1.0, float("inf"), 1.0, float("nan")]}, "column 'w': weight NaN or infinite in 2 of 4"),
    ({"p": ["0.2", "0.4", "0.5", "0.3"]}, "column 'p' holds String, but a probability must be"),
    ({"y": ["a", "b", "a", "b"]}, "column 'y' holds String, but a label must be numeric"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
@pytest.mark.parametrize("call", ["reliability", "summary", "bin_statistics", "validate"])
def test_each_data_problem_raises_one_clear_error(
    change: dict[str, list[object]], message: str, call: str
) -> None:
    data = {"p": [0.2, 0.4, 0.5, 0.3], "y": [0, 1, 1, 0], "w": [1.0, 1.0, 2.0, 1.0], **change}
    df = pl.DataFrame(data)
    with pytest.raises(pc.CalibrationDataError) as raised:
        getattr(df.calib, call)("p", "y", weight="w")
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(("change", "message"), BAD[:5])
def test_a_lazy_plan_counts_refused_rows_and_gives_null(
    change: dict[str, list[object]], message: str
) -> None:
    data = {"p": [0.2, 0.4, 0.5, 0.3], "y": [0, 1, 1, 0], "w": [1.0, 1.0, 2.0, 1.0], **change}
    good = {"p": [0.2, 0.4], "y": [0, 1], "w": [1.0, 1.0]}
    lf = pl.concat(
        [
            pl.LazyFrame(data).with_columns(g=pl.lit("bad")),
            pl.LazyFrame(good).with_columns(g=pl.lit("good")),
        ],
        how="diagonal_relaxed",
    )
    plan = lf.calib.summary("p", "y", by="g", weight="w")
    assert isinstance(plan, pl.LazyFrame)
    got = plan.collect()
    bad, fine = got.row(0, named=True), got.row(1, named=True)
    assert bad["refused"] > 0 and bad["ece"] is None and bad["brier"] is None
    assert fine["refused"] == 0 and fine["ece"] is not None
    table = lf.calib.reliability("p", "y", by="g", weight="w").collect()
    assert table.filter(pl.col("g") == "bad")["observed"].null_count() == table.height // 2
    # The per-group diagnostic says why.
    why = lf.calib.refused_counts("p", "y", by="g", weight="w").collect()
    assert why.filter(pl.col("g") == "bad")["refused"].item() == bad["refused"]


@pytest.mark.parametrize(("change", "message"), BAD[5:])
def test_a_lazy_plan_refuses_bad_dtypes_from_the_schema(
    change: dict[str, list[object]], message: str
) -> None:
    data = {"p": [0.2, 0.4, 0.5, 0.3], "y": [0, 1, 1, 0], "w": [1.0, 1.0, 2.0, 1.0], **change}
    with pytest.raises(pc.CalibrationDataError, match=message):
        pl.LazyFrame(data).calib.summary("p", "y", weight="w")


def test_all_problems_are_reported_together() -> None:
    df = pl.DataFrame({"p": [1.2, 0.5, 0.5], "y": [0, 3, 1], "w": [1.0, 1.0, -1.0]})
    with pytest.raises(pc.CalibrationDataError) as raised:
        df.calib.summary("p", "y", weight="w")
    message = str(raised.value)
    assert "'p'" in message and "'y'" in message and "'w'" in message


def test_missing_columns_are_named() -> None:
    df = pl.DataFrame({"p": [0.2], "y": [1], "model": ["a"]})
    with pytest.raises(pc.CalibrationDataError, match="column 'label' is missing"):
        df.calib.summary("p", "label")
    with pytest.raises(pc.CalibrationDataError, match="column 'segment' is missing"):
        df.calib.reliability("p", "y", by=["model", "segment"])
    with pytest.raises(pc.CalibrationDataError, match="column 'ts' is missing"):
        df.calib.summary("p", "y", time="ts", every="1d")
    with pytest.raises(pc.CalibrationDataError, match="column 'model' holds String"):
        df.calib.summary("p", "y", time="model", every="1d")


def test_argument_errors() -> None:
    df = pl.DataFrame({"p": [0.2], "y": [1]})
    with pytest.raises(ValueError, match="`time` and `every` go together"):
        df.calib.summary("p", "y", time="p")
    with pytest.raises(ValueError, match="`by` cannot hold 'bin'"):
        df.calib.reliability("p", "y", by="bin")
    with pytest.raises(ValueError, match="`metrics` must be one of"):
        df.calib.summary("p", "y", metrics=["ece", "auc"])
    with pytest.raises(ValueError, match="`confidence` must be in"):
        df.calib.reliability("p", "y", confidence=1.0)
    with pytest.raises(ValueError, match="`n_bins` must be a positive int"):
        df.calib.summary("p", "y", n_bins=0)
    with pytest.raises(TypeError, match="`prob` must be a column name"):
        pc.summary(df, pl.col("p"), "y")  # type: ignore[arg-type]


@pytest.mark.parametrize("by", [None, "model"])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_empty_input_gives_no_groups_or_one_empty_whole(by: str | None, strategy: str) -> None:
    # With keys, an empty frame has no groups; without, the whole frame is one group
    # (as an expression in `select` gives one null), with count 0 and null metrics.
    empty = pl.DataFrame(schema={"model": pl.String, "ts": pl.Date, "p": pl.Float64, "y": pl.Int64})
    keys = [] if by is None else [by]
    table = empty.calib.reliability("p", "y", by=by, strategy=strategy)
    assert table.height == (0 if keys else 15)
    assert table.columns == [*keys, *RELIABILITY]
    assert table["count"].sum() == 0 and table["observed"].null_count() == table.height
    summary = empty.lazy().calib.summary("p", "y", by=by, time="ts", every="1w").collect()
    assert summary.height == 0
    assert summary.schema == pl.Schema(
        {
            **dict.fromkeys(keys, pl.String),
            "ts": pl.Date,
            "count": pl.Int64,
            "refused": pl.Int64,
            **dict.fromkeys(["mean_predicted", "observed", *METRICS], pl.Float64),
        }
    )
    whole = empty.calib.summary("p", "y", by=by, strategy=strategy)
    assert whole.height == (0 if keys else 1)
    assert whole["ece"].null_count() == whole.height
    assert pc.bin_statistics(empty, "p", "y", by=by)["count"].sum() == 0


def test_all_null_columns_are_valid_and_give_an_empty_group() -> None:
    df = pl.DataFrame({"p": [None, None], "y": [None, None]})
    got = df.calib.summary("p", "y")
    assert got["count"].to_list() == [0] and got["ece"].to_list() == [None]


def test_window_by_date_and_boolean_labels() -> None:
    df = pl.DataFrame(
        {
            "day": [date(2024, 1, 1), date(2024, 1, 2), date(2024, 1, 9)],
            "p": [0.2, 0.9, 0.6],
            "y": [False, True, True],
        }
    )
    got = df.calib.summary("p", "y", time="day", every="1w", metrics=["brier"])
    assert got["day"].to_list() == [date(2024, 1, 1), date(2024, 1, 8)]
    assert got["brier"].to_list() == pytest.approx([(0.04 + 0.01) / 2, 0.16], abs=1e-15)


# --------------------------------------------------------------------------
# Multi-class reductions
# --------------------------------------------------------------------------


def dirichlet_log(seed: int, n: int, k: int, decimals: int | None) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k) * 0.7, n)
    if decimals is not None:
        probs = np.round(probs, decimals)
        probs[:, -1] = np.clip(1.0 - probs[:, :-1].sum(axis=1), 0.0, 1.0)
    labels = np.array([rng.choice(k, p=row / row.sum()) for row in probs])
    return pl.DataFrame({"probs": probs, "y": labels, "w": rng.random(n)})


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    k=st.integers(2, 5),
    n_bins=st.integers(1, 12),
    closed=st.sampled_from(["right", "left"]),
    decimals=st.sampled_from([None, 2]),
    weighted=st.booleans(),
)
def test_multiclass_reliability_matches_reference(
    seed: int, n: int, k: int, n_bins: int, closed: str, decimals: int | None, weighted: bool
) -> None:
    df = dirichlet_log(seed, n, k, decimals)
    P, y = np.stack(df["probs"].to_numpy()), df["y"].to_numpy()
    w = df["w"].to_numpy() if weighted else None
    weight = "w" if weighted else None
    conf, correct = P.max(axis=1), (P.argmax(axis=1) == y).astype(float)
    binning = {"n_bins": n_bins, "closed": closed}
    # rounded vectors sum to 1 only within k * 0.005 (see multiclass.SUM_TOLERANCE)
    tol = {"sum_tol": 0.05}

    table = df.calib.reliability("probs", "y", weight=weight, **tol, **binning)  # type: ignore[arg-type]
    assert table.columns == list(RELIABILITY)
    assert_matches_reference(table, ref.reliability_table(conf, correct, weight=w, **binning))

    table = df.calib.reliability(
        "probs",
        "y",
        weight=weight,
        reduction="classwise",
        **tol,
        **binning,  # type: ignore[arg-type]
    )
    assert table.columns == ["class", *RELIABILITY]
    for j in range(k):
        expected = ref.reliability_table(P[:, j], y == j, weight=w, **binning)
        assert_matches_reference(table.filter(pl.col("class") == j), expected)

    table = df.calib.reliability(
        "probs",
        "y",
        weight=weight,
        reduction="top_label",
        **tol,
        **binning,  # type: ignore[arg-type]
    )
    predicted = P.argmax(axis=1)
    assert table["class"].unique().sort().to_list() == np.unique(predicted).tolist()
    for j in np.unique(predicted):
        rows = predicted == j
        expected = ref.reliability_table(
            conf[rows], correct[rows], weight=None if w is None else w[rows], **binning
        )
        assert_matches_reference(table.filter(pl.col("class") == j), expected)


def test_multiclass_reliability_by_group_lazy_and_quantile() -> None:
    df = dirichlet_log(4, 200, 3, None).with_columns(g=pl.int_range(pl.len()) % 2)
    lazy = df.lazy().calib.reliability("probs", "y", by="g", reduction="top_label", n_bins=4)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().columns[:3] == ["g", "class", "bin"]
    table = df.calib.reliability("probs", "y", strategy="quantile", n_bins=4)
    P, y = np.stack(df["probs"].to_numpy()), df["y"].to_numpy()
    expected = ref.reliability_table(P.max(axis=1), P.argmax(axis=1) == y, 4, "quantile")
    assert_matches_reference(table, expected)


@pytest.mark.parametrize(
    ("probs", "labels", "message"),
    [
        ([[0.5, 0.5], [1.2, -0.2]], [0, 1], "column 'probs': vector holding a null, NaN or value"),
        ([[0.5, 0.6], [0.3, 0.7]], [0, 1], "column 'probs': vector sum off 1 by more than 1e-06"),
        ([[0.5, 0.5], [0.3, 0.7]], [0, 2], "column 'y': label not a class 0 .. K - 1 in 1 of 2"),
        (
            [[0.5, 0.5], [0.2, 0.3, 0.5]],
            [0, 1],
            "column 'probs': vectors of different lengths (from 2 to 3 entries)",
        ),
    ],
)
def test_multiclass_validation(probs: list[list[float]], labels: list[int], message: str) -> None:
    # Vectors of different lengths only break the classwise reduction (a class key).
    df = pl.DataFrame({"probs": probs, "y": labels})
    with pytest.raises(pc.CalibrationDataError) as raised:
        df.calib.reliability("probs", "y", reduction="classwise")
    assert message in str(raised.value)


def test_reduction_needs_vectors() -> None:
    df = pl.DataFrame({"p": [0.2], "y": [1]})
    with pytest.raises(pc.CalibrationDataError, match="must be an Array or List"):
        df.calib.reliability("p", "y", reduction="classwise")
    vectors = pl.DataFrame({"probs": [[0.2, 0.8]], "y": [1]})
    with pytest.raises(ValueError, match="`reduction` must be one of"):
        vectors.calib.reliability("probs", "y", reduction="top")
