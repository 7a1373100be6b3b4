"""Multi-class calibration: confidence, classwise and top-label reductions, vector Brier/log-loss.

Exact published numbers (the calibration tutorial's 30-item example, torchmetrics'
example), a differential test against the numpy oracle, every context, bad data and
bad parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import polars_calib as pc
import reference
from conftest import tempered_log, vectors

# The names test_multiclass_frame imports from here, until it imports them from conftest.
_vectors = vectors

Metric = Callable[..., pl.Expr]
ECES: dict[str, tuple[Metric, Callable[..., float]]] = {
    "confidence": (pc.confidence_ece, reference.confidence_error),
    "classwise": (pc.classwise_ece, reference.classwise_error),
    "top_label": (pc.top_label_ece, reference.top_label_error),
}


def _value(df: pl.DataFrame, expr: pl.Expr) -> float | None:
    value = df.select(expr).item()
    assert value is None or isinstance(value, float)
    return value


# -- the calibration tutorial's 30 items, 3 classes, 5 right-closed bins -------------------


def tutorial_frame() -> pl.DataFrame:
    """Return the tutorial's vectors (``probs``, ``Array(Float64, 3)``) and labels ``y``."""
    # float(Fraction) per entry, so rows 7-8 are the doubles nearest 1/3.
    rows = [[float(v) for v in row] for row in reference.TUTORIAL_P]
    return pl.DataFrame(
        {"probs": pl.Series(rows, dtype=pl.Array(pl.Float64, 3)), "y": reference.TUTORIAL_Y}
    )


@pytest.fixture(scope="module")
def tutorial() -> pl.DataFrame:
    return tutorial_frame()


@pytest.mark.parametrize(
    "column, expected", [(0, Fraction(169, 900)), (1, Fraction(131, 900)), (2, Fraction(91, 450))]
)
def test_tutorial_class_ece(tutorial: pl.DataFrame, column: int, expected: Fraction) -> None:
    probs = pl.col("probs").arr.get(column)
    got = _value(tutorial, pc.ece(probs, pl.col("y") == column, n_bins=5))
    assert got == pytest.approx(float(expected), abs=1e-12)


@pytest.mark.parametrize(
    "metric, norm, expected",
    [
        (pc.confidence_ece, "l1", Fraction(19, 90)),
        (pc.confidence_ece, "max", Fraction(3, 10)),
        (pc.classwise_ece, "l1", Fraction(241, 1350)),
        (pc.classwise_ece, "max", Fraction(17, 35)),
    ],
)
def test_tutorial_multiclass(
    tutorial: pl.DataFrame, metric: Metric, norm: str, expected: Fraction
) -> None:
    assert _value(tutorial, metric("probs", "y", n_bins=5, norm=norm)) == pytest.approx(
        float(expected), abs=1e-12
    )


def test_tutorial_list_input_and_wide_columns(tutorial: pl.DataFrame) -> None:
    wide = tutorial.select(
        p0=pl.col("probs").arr.get(0),
        p1=pl.col("probs").arr.get(1),
        p2=pl.col("probs").arr.get(2),
        y="y",
    )
    as_list = tutorial.with_columns(pl.col("probs").cast(pl.List(pl.Float64)))
    built = pc.prob_vector("p0", "p1", "p2")
    assert wide.select(built).to_series().dtype == pl.Array(pl.Float64, 3)
    for metric in (pc.confidence_ece, pc.classwise_ece, pc.top_label_ece):
        expected = _value(tutorial, metric("probs", "y", n_bins=5))
        assert _value(as_list, metric("probs", "y", n_bins=5)) == expected
        assert _value(wide, metric(built, "y", n_bins=5)) == expected


# -- torchmetrics' multiclass calibration-error example --------------------------------------


@pytest.mark.parametrize("norm, expected", [("l1", 0.2000), ("l2", 0.2082), ("max", 0.2333)])
def test_torchmetrics_example(norm: str, expected: float) -> None:
    df = pl.DataFrame(
        {
            "probs": [
                [0.25, 0.20, 0.55],
                [0.55, 0.05, 0.40],
                [0.10, 0.30, 0.60],
                [0.90, 0.05, 0.05],
            ],
            "y": [0, 1, 2, 0],
        }
    )
    got = _value(df, pl.col("probs").calib.confidence_ece("y", n_bins=3, norm=norm))
    assert got is not None and round(got, 4) == expected


# -- differential test against the numpy oracle ------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    n_classes=st.integers(2, 6),
    metric=st.sampled_from(sorted(ECES)),
    n_bins=st.integers(1, 12),
    strategy=st.sampled_from(["uniform", "quantile"]),
    closed=st.sampled_from(["right", "left"]),
    norm=st.sampled_from(["l1", "l2", "max"]),
    weighted=st.booleans(),
    temperature=st.sampled_from([0.4, 2.5]),
    resolution=st.sampled_from([20, 1000]),
    tie_rate=st.sampled_from([0.0, 0.3]),
)
@example(
    seed=0,
    n=60,
    n_classes=2,
    metric="top_label",
    n_bins=5,
    strategy="quantile",
    closed="right",
    norm="l2",
    weighted=True,
    temperature=0.4,
    resolution=20,
    tie_rate=0.3,
)
@example(
    seed=1,
    n=100,
    n_classes=5,
    metric="classwise",
    n_bins=10,
    strategy="quantile",
    closed="left",
    norm="l2",
    weighted=False,
    temperature=2.5,
    resolution=1000,
    tie_rate=0.3,
)
@example(
    seed=2,
    n=100,
    n_classes=3,
    metric="confidence",
    n_bins=10,
    strategy="uniform",
    closed="left",
    norm="max",
    weighted=True,
    temperature=0.4,
    resolution=20,
    tie_rate=0.3,
)
def test_matches_numpy_reference(
    seed: int,
    n: int,
    n_classes: int,
    metric: str,
    n_bins: int,
    strategy: str,
    closed: str,
    norm: str,
    weighted: bool,
    temperature: float,
    resolution: int,
    tie_rate: float,
) -> None:
    P, y, w, _ = tempered_log(
        seed, n, n_classes, temperature=temperature, resolution=resolution, tie_rate=tie_rate
    )
    ours, oracle = ECES[metric]
    kw = {"n_bins": n_bins, "strategy": strategy, "closed": closed, "norm": norm}
    expected = oracle(P, y, weight=w if weighted else None, **kw)
    results = []
    for dtype in ("array", "list"):
        df = pl.DataFrame({"probs": vectors(P, dtype), "y": y, "w": w})
        results.append(_value(df, ours("probs", "y", weight="w" if weighted else None, **kw)))
    assert results[0] == results[1]
    assert results[0] == pytest.approx(expected, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 150),
    n_classes=st.integers(2, 6),
    weighted=st.booleans(),
)
def test_brier_and_log_loss_match_numpy_reference(
    seed: int, n: int, n_classes: int, weighted: bool
) -> None:
    P, y, w, _ = tempered_log(seed, n, n_classes, temperature=0.4, resolution=1000, tie_rate=0.0)
    weight = w if weighted else None
    for dtype in ("array", "list"):
        df = pl.DataFrame({"probs": vectors(P, dtype), "y": y, "w": w})
        kw = {"weight": "w" if weighted else None}
        assert _value(df, pc.multiclass_brier("probs", "y", **kw)) == pytest.approx(
            reference.multiclass_brier(P, y, weight), abs=1e-12
        )
        assert _value(df, pl.col("probs").calib.multiclass_log_loss("y", **kw)) == pytest.approx(
            reference.multiclass_log_loss(P, y, weight), rel=1e-12
        )


def test_brier_and_log_loss_match_sklearn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    P, y, w, _ = tempered_log(5, 300, 4, temperature=2.5, resolution=1000, tie_rate=0.0)
    P[0] = [1.0, 0.0, 0.0, 0.0]  # clipped at machine epsilon in both when y[0] != 0
    df = pl.DataFrame({"probs": vectors(P), "y": y, "w": w})
    labels = list(range(4))
    assert _value(df, pc.multiclass_brier("probs", "y")) == pytest.approx(
        metrics.brier_score_loss(y, P, labels=labels), abs=1e-12
    )
    assert _value(df, pc.multiclass_brier("probs", "y", weight="w")) == pytest.approx(
        metrics.brier_score_loss(y, P, sample_weight=w, labels=labels), abs=1e-12
    )
    assert _value(df, pc.multiclass_log_loss("probs", "y")) == pytest.approx(
        metrics.log_loss(y, P, labels=labels), rel=1e-12
    )
    assert _value(df, pc.multiclass_log_loss("probs", "y", weight="w")) == pytest.approx(
        metrics.log_loss(y, P, sample_weight=w, labels=labels), rel=1e-12
    )


def test_vector_scores_against_binary_ones() -> None:
    df = pl.DataFrame({"p": [0.1, 0.9, 0.8, 0.3], "y": [0, 1, 1, 0]})
    two = df.select(probs=pl.concat_list(1.0 - pl.col("p"), pl.col("p")), y="y")
    binary = _value(df, pl.col("p").calib.brier("y"))
    assert binary == pytest.approx(0.0375, abs=1e-15)
    # The vector score sums over both classes: twice the binary one for K = 2.
    assert _value(two, pl.col("probs").calib.multiclass_brier("y")) == pytest.approx(
        2 * binary, abs=1e-15
    )
    # A vector column in a binary metric is refused when the query is planned, with a
    # message pointing to the multi-class functions.
    for metric in (pc.brier, pc.log_loss, pc.ece):
        with pytest.raises(pl.exceptions.PolarsError, match=r"use pc\.confidence_ece"):
            two.select(metric("probs", "y"))
    assert _value(two, pc.multiclass_log_loss("probs", "y")) == pytest.approx(
        _value(df, pc.log_loss("p", "y")), rel=1e-12
    )


# -- every context ---------------------------------------------------------------------------

METRICS: dict[str, pl.Expr] = {
    "confidence": pl.col("probs").calib.confidence_ece("y", n_bins=8),
    "confidence_q": pc.confidence_ece("probs", "y", n_bins=4, strategy="quantile", weight="w"),
    "classwise": pl.col("probs").calib.classwise_ece("y", n_bins=8, closed="left", weight="w"),
    "classwise_l2_q": pc.classwise_ece("probs", "y", n_bins=4, strategy="quantile", norm="l2"),
    "classwise_max": pc.classwise_ece("probs", "y", n_bins=8, norm="max"),
    "top_label": pl.col("probs").calib.top_label_ece("y", n_bins=8, weight="w"),
    "top_label_l2_q": pc.top_label_ece("probs", "y", n_bins=4, strategy="quantile", norm="l2"),
    "brier": pl.col("probs").calib.multiclass_brier("y", weight="w"),
    "log_loss": pc.multiclass_log_loss("probs", "y"),
}


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    P, y, w, g = tempered_log(3, 240, 4, temperature=0.4, resolution=100, tie_rate=0.2, groups=3)
    start = datetime(2024, 1, 1)
    return (
        pl.DataFrame(
            {
                "g": g,
                "probs": vectors(P),
                "y": y,
                "w": w,
                "ts": [start + timedelta(hours=i) for i in range(len(y))],
            }
        )
        .sort("g", maintain_order=True)
        .with_columns(ts=pl.datetime_range(start, start + timedelta(hours=239), "1h", eager=True))
    )


def _expected(frame: pl.DataFrame) -> dict[str, float | None]:
    return frame.select(**METRICS).row(0, named=True)


def _assert_matches(got: dict[str, float | None], want: dict[str, float | None]) -> None:
    for name in METRICS:
        assert got[name] == pytest.approx(want[name], abs=1e-12), name


def test_select_matches_oracle(log: pl.DataFrame) -> None:
    P = np.array(log["probs"].to_list())
    y, w = log["y"].to_numpy(), log["w"].to_numpy()
    got = _expected(log)
    assert got["confidence"] == pytest.approx(reference.confidence_error(P, y, n_bins=8), abs=1e-12)
    assert got["classwise_max"] == pytest.approx(
        reference.classwise_error(P, y, n_bins=8, norm="max"), abs=1e-12
    )
    assert got["top_label"] == pytest.approx(
        reference.top_label_error(P, y, n_bins=8, weight=w), abs=1e-12
    )
    assert got["top_label_l2_q"] == pytest.approx(
        reference.top_label_error(P, y, n_bins=4, strategy="quantile", norm="l2"), abs=1e-12
    )


@pytest.mark.parametrize(
    "context",
    ["group_by", "over", "lazy_streaming", "group_by_dynamic", "rolling", "scan_parquet"],
)
def test_grouped_contexts(log: pl.DataFrame, context: str, tmp_path: Path) -> None:
    groups = sorted(log["g"].unique().to_list())
    want = [_expected(log.filter(pl.col("g") == g)) for g in groups]
    if context == "group_by":
        result = log.group_by("g").agg(**METRICS).sort("g")
    elif context == "over":
        result = (
            log.select("g", **{k: v.over("g") for k, v in METRICS.items()})
            .unique("g", keep="first")
            .sort("g")
        )
    elif context == "lazy_streaming":
        result = log.lazy().group_by("g").agg(**METRICS).sort("g").collect(engine="streaming")
    elif context == "scan_parquet":
        path = tmp_path / "log.parquet"
        log.write_parquet(path)
        result = (
            pl.scan_parquet(path).group_by("g").agg(**METRICS).sort("g").collect(engine="streaming")
        )
    elif context == "group_by_dynamic":
        # Tumbling 1-day windows over hourly rows: the first 24 rows, then the next 24...
        result = log.group_by_dynamic("ts", every="1d").agg(**METRICS).head(3)
        want = [_expected(log.slice(24 * i, 24)) for i in range(3)]
    else:
        # The window ending at each row: the last 10 hours.
        result = log.rolling("ts", period="10h").agg(**METRICS).slice(50, 3)
        want = [_expected(log.slice(41 + i, 10)) for i in range(3)]
    assert result.height == len(want)
    for row, expected in zip(result.iter_rows(named=True), want):
        _assert_matches(row, expected)


def test_whole_frame_streaming(log: pl.DataFrame) -> None:
    _assert_matches(
        log.lazy().select(**METRICS).collect(engine="streaming").row(0, named=True), _expected(log)
    )


# -- bad data: null per group; ignored rows; bad parameters ----------------------------------

GOOD = [[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]]
GOOD_Y = [0, 1, 1, 2]
ALL_METRICS: list[Callable[..., pl.Expr]] = [
    pc.confidence_ece,
    pc.classwise_ece,
    pc.top_label_ece,
    pc.multiclass_brier,
    pc.multiclass_log_loss,
]


@pytest.mark.parametrize(
    "probs, label, weight",
    [
        ([0.2, 0.3, 0.5], 3, 1.0),  # label out of range
        ([0.2, 0.3, 0.5], -1, 1.0),  # negative label
        ([0.2, 0.3, 0.5], 1.5, 1.0),  # not an integer
        ([0.2, None, 0.8], 1, 1.0),  # null inside the vector
        ([0.2, float("nan"), 0.8], 1, 1.0),  # NaN inside the vector
        ([1.2, -0.2, 0.0], 0, 1.0),  # outside [0, 1] though summing to 1
        ([0.5, 0.4, 0.05], 0, 1.0),  # sums to 0.95
        ([0.5, 0.5], 0, 1.0),  # a different length (List input)
        ([], 0, 1.0),  # empty vector
        ([0.2, 0.3, 0.5], 1, -1.0),  # negative weight
        ([0.2, 0.3, 0.5], 1, float("inf")),  # infinite weight
    ],
)
@pytest.mark.parametrize("metric", ALL_METRICS)
def test_bad_data_gives_null_for_its_group(
    metric: Callable[..., pl.Expr], probs: list[float | None], label: float, weight: float
) -> None:
    df = pl.DataFrame(
        {
            "g": [0] * 4 + [1] * 5,
            "probs": [*GOOD, *GOOD, probs],
            "y": [*GOOD_Y, *GOOD_Y, label],
            "w": [1.0] * 8 + [weight],
        },
        schema={"g": pl.Int64, "probs": pl.List(pl.Float64), "y": pl.Float64, "w": pl.Float64},
    )
    for kw in ({}, {"weight": "w"}):
        if weight != 1.0 and not kw:
            continue
        result = df.group_by("g").agg(metric("probs", "y", **kw)).sort("g")["probs"].to_list()
        assert result[0] is not None
        if len(probs) == 2 and metric is not pc.classwise_ece:
            # A shorter vector is a valid vector; only classwise needs one length K.
            assert result[1] is not None
        else:
            assert result[1] is None


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_null_vector_label_or_weight_rows_are_ignored(metric: Callable[..., pl.Expr]) -> None:
    good = pl.DataFrame({"probs": GOOD, "y": GOOD_Y, "w": [1.0, 2.0, 0.5, 1.0]})
    noisy = pl.concat(
        [
            good,
            pl.DataFrame(
                {
                    "probs": [None, [0.5, 0.5, 0.0], [0.1, 0.1, 0.8]],
                    "y": [0, None, 2],
                    "w": [1.0, 1.0, None],
                },
                schema=good.schema,
            ),
        ]
    )
    # Unweighted, the row with a null weight is used: only weighted metrics skip it.
    assert _value(noisy, metric("probs", "y")) == _value(
        good.vstack(noisy.tail(1)), metric("probs", "y")
    )
    assert _value(noisy, metric("probs", "y", weight="w")) == _value(
        good, metric("probs", "y", weight="w")
    )
    assert _value(noisy.clear(), metric("probs", "y")) is None


def test_sum_tolerance_is_adjustable() -> None:
    rounded = pl.DataFrame({"probs": [[0.333, 0.333, 0.333], [0.7, 0.2, 0.1]], "y": [0, 0]})
    assert _value(rounded, pc.classwise_ece("probs", "y")) is None
    assert _value(rounded, pc.classwise_ece("probs", "y", sum_tol=3 * 0.0005)) is not None
    assert _value(rounded, pc.multiclass_brier("probs", "y", sum_tol=0.002)) is not None


@pytest.mark.parametrize("metric", [pc.confidence_ece, pc.classwise_ece, pc.top_label_ece])
@pytest.mark.parametrize(
    "kw",
    [
        {"n_bins": 0},
        {"n_bins": 2.5},
        {"strategy": "equal"},
        {"closed": "both"},
        {"norm": "l3"},
        {"sum_tol": -1.0},
        {"sum_tol": float("nan")},
        {"sum_tol": "1e-6"},
    ],
)
def test_bad_parameters_raise_at_build_time(metric: Metric, kw: dict[str, object]) -> None:
    # A value of the wrong type raises TypeError (a ValueError's sibling), a bad value ValueError.
    wrong_type = any(
        (isinstance(v, str) and k == "sum_tol") or (isinstance(v, float) and k == "n_bins")
        for k, v in kw.items()
    )
    with pytest.raises(TypeError if wrong_type else ValueError, match=next(iter(kw))):
        metric("probs", "y", **kw)


def test_bad_vector_parameters_raise() -> None:
    with pytest.raises(ValueError, match="sum_tol"):
        pc.multiclass_brier("probs", "y", sum_tol=-1.0)
    with pytest.raises(ValueError, match="at least one"):
        pc.prob_vector()
