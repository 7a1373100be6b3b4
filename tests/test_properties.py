"""Properties over generated frames: hypothesis draws the data, and shrinks it.

Frames hold group keys ``k1``, ``k2`` (of several dtypes, with nulls), a
probability ``p`` (Float64 or Float32; exact 0 and 1, subnormals, values on and a
few ulps off the edges k/B, nulls), a label ``y`` and a weight ``w``; some frames
hold a few invalid cells (NaN or out-of-range probabilities, bad labels, bad
weights). Invariants, on the expressions (`pc.ece`, `pc.mce`, `pc.rmsce`,
`pc.brier`, `pc.log_loss`) and the frame functions (`pc.summary`,
`pc.bin_statistics` + `pc.metrics_from_statistics`):

* weights scaled by c > 0 change nothing;
* ``closed="left"`` equals ``closed="right"`` when no probability is on an edge;
* K = 2 classwise ECE of ``[1 - p, p]`` equals the binary ECE of ``p``;
* frame results do not depend on the order of the rows;
* statistics by (k1, k2) rolled up to k1 give the summary by k1;
* the expressions in ``group_by().agg`` give the summary's numbers;
* 0 <= ECE <= RMSCE <= MCE <= 1;
* a group holding an invalid value gives null (a DataFrame raises).

Frame results are compared on named columns only: the summary may gain columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import polars_calib as pc

BINNED = ("ece", "mce", "rmsce")
SCORES = ("brier", "log_loss")
METRICS = (*BINNED, *SCORES)
NAN, INF = float("nan"), float("inf")

# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------


def _near(value: float, steps: int) -> float:
    """`value` moved by `steps` ulps, kept in [0, 1]."""
    direction = math.inf if steps > 0 else -math.inf
    for _ in range(abs(steps)):
        value = math.nextafter(value, direction)
    return min(max(value, 0.0), 1.0)


# k/b is an edge of every bin count B that b divides: small b hit many drawn B.
edges = st.one_of(st.integers(1, 12), st.integers(1, 100)).flatmap(
    lambda b: st.integers(0, b).map(lambda k: k / b)
)
probabilities = st.one_of(
    st.floats(0.0, 1.0),  # hypothesis favours 0, 1, subnormals and other boundaries
    st.sampled_from([0.0, 1.0]),
    edges,
    st.builds(_near, edges, st.integers(-3, 3)),
    st.integers(0, 100).map(lambda j: j / 100),
)
weights = st.one_of(st.floats(1e-3, 10.0), st.sampled_from([0.0, 1.0]))


def sometimes_null(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`values`, null one time in eight (``one_of(none(), ...)`` would be one in two)."""
    return st.tuples(st.integers(0, 7), values).map(
        lambda drawn: None if drawn[0] == 7 else drawn[1]
    )


BAD_VALUES: dict[str, list[Any]] = {
    "p": [NAN, -0.1, 1.5, INF, -5e-324],
    "y": [2, -1],
    "w": [-1.0, NAN, INF],
}
KEY_DTYPES = [pl.Int64, pl.Int32, pl.UInt16, pl.Int8, pl.String]


COLUMNS = ("k1", "k2", "p", "y", "w")
SCHEMA = {"k1": pl.Int64, "k2": pl.Int64, "p": pl.Float64, "y": pl.Int64, "w": pl.Float64}


@st.composite
def logs(
    draw: st.DrawFn, *, invalid: bool = False, min_size: int = 1, max_size: int = 50
) -> pl.DataFrame:
    """A frame ``k1, k2, p, y, w``; with `invalid`, up to three invalid cells."""
    rows = draw(
        st.lists(
            st.tuples(
                sometimes_null(st.integers(0, 2)),
                sometimes_null(st.integers(0, 1)),
                sometimes_null(probabilities),
                sometimes_null(st.sampled_from([0, 1])),
                sometimes_null(weights),
            ),
            min_size=min_size,
            max_size=max_size,
        )
    )
    columns = {name: [row[j] for row in rows] for j, name in enumerate(COLUMNS)}
    if invalid and rows:
        for _ in range(draw(st.integers(1, 3))):
            name = draw(st.sampled_from(list(BAD_VALUES)))
            row = draw(st.integers(0, len(rows) - 1))
            columns[name][row] = draw(st.sampled_from(BAD_VALUES[name]))
    df = pl.DataFrame(columns, schema=SCHEMA)
    k1 = draw(st.sampled_from(KEY_DTYPES))
    k2 = draw(st.sampled_from([pl.UInt8, pl.String]))
    p = draw(st.sampled_from([pl.Float64, pl.Float32]))
    return df.with_columns(pl.col("k1").cast(k1), pl.col("k2").cast(k2), pl.col("p").cast(p))


frames = st.one_of(logs(), logs(invalid=True))

DType = pl.DataType | type[pl.DataType]


def _frame(
    columns: dict[str, list[Any]], *, p_dtype: DType = pl.Float64, k1_dtype: DType = pl.Int64
) -> pl.DataFrame:
    """A pinned frame: the given columns; keys cycling and unit weights unless given."""
    n = len(columns["p"])
    full = {"k1": [j % 3 for j in range(n)], "k2": [j % 2 for j in range(n)], "w": [1.0] * n}
    schema = {**SCHEMA, "k1": k1_dtype, "p": p_dtype}
    return pl.DataFrame(full | columns, schema=schema).select(COLUMNS)


# The edge cases every property is pinned to (each with n_bins=10 where it takes one).
PINNED: dict[str, pl.DataFrame] = {
    "nan_with_nulls": _frame(
        {
            "k1": [0, 0, 0, 1, 1, 2, 2, 2],
            "p": [NAN, None, 0.3, NAN, 0.7, None, 0.5, 0.25],
            "y": [None, 1, 0, 1, None, None, 1, 0],
            "w": [1.0, None, 2.0, None, 0.5, 1.0, 1.5, 0.25],
        }
    ),
    "zeros_and_ones": _frame(
        {
            "p": [0.0] * 7 + [1.0] * 7 + [0.5, 0.0, 1.0],
            # 2 of the 7 at p = 0 are positive, 6 of the 7 at p = 1; then the last three.
            "y": [0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 0],
        }
    ),
    "on_edges": _frame(
        {
            "p": [k / b for b, top in ((10, 11), (15, 16), (7, 8)) for k in range(top)],
            "y": [k % 2 for k in range(11)] + [k // 2 % 2 for k in range(16)] + [1] * 4 + [0] * 4,
        }
    ),
    "subnormals": _frame(
        {
            "p": [5e-324, 1e-310, 2.2250738585072014e-308, 1e-300, 0.0, 1.0 - 2**-53, 1.0, 0.1],
            "y": [0, 1, 0, 1, 0, 1, 1, 0],
            "w": [1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0, 1e-3],
        }
    ),
    "float32": _frame(
        {
            "p": [0.1, 0.7, 0.3, 0.2, 0.9, 0.6, 0.4, 0.8, 1.0, 0.0, 0.5],
            "y": [0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1],
        },
        p_dtype=pl.Float32,
    ),
    "null_keys": _frame(
        {
            "k1": [None, None, 0, 1, None, 1, 0, None],
            "k2": [None, 1, None, 0, 1, None, 0, 0],
            "p": [0.2, 0.9, 0.4, 0.8, 0.6, 0.1, 0.35, 0.65],
            "y": [0, 1, 1, 0, 1, 1, 0, 1],
        },
        k1_dtype=pl.UInt16,
    ),
}


def pinned(**arguments: Any) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Pin a property to every frame of :data:`PINNED`, with the other `arguments`."""

    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        for frame in PINNED.values():
            test = example(df=frame, **arguments)(test)
        return test

    return decorate


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def expressions(
    df: pl.DataFrame,
    *,
    by: str | list[str] | None = "k1",
    weight: str | None = "w",
    **binning: Any,
) -> pl.DataFrame:
    """Every metric as an expression, per group (sorted, null keys last) or whole."""
    metrics = {m: getattr(pc, m)("p", "y", weight=weight, **binning) for m in BINNED}
    metrics |= {m: getattr(pc, m)("p", "y", weight=weight) for m in SCORES}
    if by is None:
        return df.select(**metrics)
    return df.group_by(by).agg(**metrics).sort(by, nulls_last=True)


def summary(df: pl.DataFrame, **options: Any) -> pl.DataFrame:
    """The frame summary of a LazyFrame (which gives null for invalid groups), collected."""
    return pc.summary(df.lazy(), "p", "y", **options).collect()


def assert_close(
    got: pl.DataFrame,
    want: pl.DataFrame,
    columns: list[str],
    *,
    rel: float = 0.0,
    abs: float = 1e-12,  # noqa: A002
) -> None:
    """Named columns equal: nulls in the same places, floats within tolerance, others exactly."""
    assert got.height == want.height, (got, want)
    for name in columns:
        for row, (a, b) in enumerate(zip(got[name].to_list(), want[name].to_list())):
            where = f"{name!r}, row {row}: got {a!r}, want {b!r}"
            if a is None or b is None:
                assert a is None and b is None, where
            elif isinstance(a, float):
                assert a == pytest.approx(b, rel=rel, abs=abs), where
            else:
                assert a == b, where


def _interior_edge(value: float | None, n_bins: int, margin: float = 0.0) -> bool:
    """Whether `value` is (within `margin` of) an inner edge k / n_bins, 0 < k < n_bins."""
    if value is None or not 0.0 <= value <= 1.0:
        return False
    k = round(value * n_bins)
    return any(0 < j < n_bins and abs(value - j / n_bins) <= margin for j in (k - 1, k, k + 1))


def _refused(p: float | None, y: int | None, w: float | None) -> bool:
    """The documented rule: a non-null value breaking a check refuses the row."""
    return (
        (p is not None and not 0.0 <= p <= 1.0)  # NaN fails both comparisons
        or (y is not None and y not in (0, 1))
        or (w is not None and not (math.isfinite(w) and w >= 0.0))
    )


def examples(share: float) -> int:
    """A share of the profile's examples (60 by default, 1000 with ``thorough``)."""
    profile = settings.default
    return max(10, round((profile.max_examples if profile else 60) * share))


n_bins_any = st.integers(1, 60)  # both expression paths: masked (<= 40) and window
closures = st.sampled_from(["right", "left"])
binnings = st.fixed_dictionaries(
    {"strategy": st.sampled_from(["uniform", "quantile"]), "n_bins": n_bins_any, "closed": closures}
)
UNIFORM_10 = {"strategy": "uniform", "n_bins": 10, "closed": "right"}

# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------


@settings(max_examples=examples(2 / 3))
@given(
    df=frames,
    c=st.one_of(st.sampled_from([1e-3, 0.5, 3.0, 1e3]), st.floats(1e-3, 1e3)),
    binning=binnings,
)
@pinned(c=7.0, binning=UNIFORM_10)
def test_weights_scaled_by_a_positive_constant_change_nothing(
    df: pl.DataFrame, c: float, binning: dict[str, Any]
) -> None:
    df = df.with_columns(scaled=pl.col("w") * c)
    assert_close(
        expressions(df, weight="scaled", **binning),
        expressions(df, weight="w", **binning),
        ["k1", *METRICS],
        rel=1e-12,
        abs=1e-14,
    )
    columns = ["k1", "count", "mean_predicted", "observed", *METRICS]
    assert_close(
        summary(df, by="k1", weight="scaled", **binning),
        summary(df, by="k1", weight="w", **binning),
        columns,
        rel=1e-12,
        abs=1e-14,
    )


@settings(max_examples=examples(2 / 3))
@given(df=frames, n_bins=n_bins_any)
@pinned(n_bins=10)
def test_left_and_right_closed_bins_agree_off_the_edges(df: pl.DataFrame, n_bins: int) -> None:
    p = df["p"].cast(pl.Float64).to_list()
    df = df.filter(pl.Series([not _interior_edge(v, n_bins) for v in p]))
    right: dict[str, Any] = {"n_bins": n_bins, "closed": "right"}
    left: dict[str, Any] = {"n_bins": n_bins, "closed": "left"}
    assert_close(expressions(df, **left), expressions(df, **right), ["k1", *BINNED])
    assert_close(
        summary(df, by="k1", **left), summary(df, by="k1", **right), ["k1", "count", *BINNED]
    )
    stats = [
        pc.bin_statistics(df.lazy(), "p", "y", by="k1", weight="w", **binning).collect()
        for binning in (left, right)
    ]
    assert_close(stats[0], stats[1], ["k1", "bin", "count", "weight", "sum_p", "sum_y"])


@settings(max_examples=examples(1 / 2))
@given(df=frames, n_bins=n_bins_any, closed=closures, weighted=st.booleans())
@pinned(n_bins=10, closed="right", weighted=True)
def test_two_class_classwise_ece_is_the_binary_ece(
    df: pl.DataFrame, n_bins: int, closed: str, weighted: bool
) -> None:
    # Class 0's bins mirror class 1's only when neither p nor the rounded 1 - p is on
    # (or a rounding away from) an inner edge: drop such rows.
    p = df["p"].cast(pl.Float64).to_list()
    keep = [
        not (_interior_edge(v, n_bins, 1e-9) or _interior_edge(1.0 - v, n_bins, 1e-9))
        if v is not None
        else True
        for v in p
    ]
    df = df.filter(pl.Series(keep))
    # A label that is a class index but not < K beside a null vector is ignored, not
    # refused (see test_a_label_beside_a_null_vector_is_refused_only_when_it_is_no_class_index):
    # leave it out here.
    df = df.with_columns(
        y=pl.when(pl.col("p").is_null() & ~pl.col("y").is_in([0, 1])).then(None).otherwise("y")
    )
    wide = df["p"].cast(pl.Float64).to_list()
    vectors = [None if v is None else [1.0 - v, v] for v in wide]
    df = df.with_columns(probs=pl.Series(vectors, dtype=pl.Array(pl.Float64, 2)))
    weight = "w" if weighted else None
    binning: dict[str, Any] = {"n_bins": n_bins, "closed": closed, "weight": weight}
    got = (
        df.group_by("k1")
        .agg(
            ece=pc.classwise_ece("probs", "y", norm="l1", **binning),
            mce=pc.classwise_ece("probs", "y", norm="max", **binning),
            rmsce=pc.classwise_ece("probs", "y", norm="l2", **binning),
        )
        .sort("k1", nulls_last=True)
    )
    assert_close(got, expressions(df, **binning), ["k1", *BINNED])


@settings(max_examples=examples(1 / 4))  # three frame functions, two orders each
@given(df=frames, binning=binnings, data=st.data())
@pinned(binning={**UNIFORM_10, "strategy": "quantile"}, data=None)
def test_frame_results_do_not_depend_on_row_order(
    df: pl.DataFrame, binning: dict[str, Any], data: st.DataObject | None
) -> None:
    # Pinned examples take the rows in reverse order.
    rows = range(df.height)
    order = data.draw(st.permutations(rows)) if data else list(reversed(rows))
    shuffled = df[order]
    options = {**binning, "weight": "w"}
    columns = ["k1", "k2", "count", "mean_predicted", "observed", *METRICS]
    by = ["k1", "k2"]
    assert_close(summary(shuffled, by=by, **options), summary(df, by=by, **options), columns)
    stats = [
        pc.bin_statistics(frame.lazy(), "p", "y", by="k1", **options).collect()
        for frame in (shuffled, df)
    ]
    sums = ["count", "weight", "sum_p", "sum_y"]
    assert_close(stats[0], stats[1], ["k1", "bin", "lower", "upper", *sums])
    tables = [
        pc.reliability(frame.lazy(), "p", "y", by="k1", **options).collect()
        for frame in (shuffled, df)
    ]
    assert_close(tables[0], tables[1], ["k1", "bin", "count", "mean_predicted", "observed", "gap"])


@settings(max_examples=examples(1 / 2))
@given(df=frames, n_bins=n_bins_any, closed=closures, weighted=st.booleans())
@pinned(n_bins=10, closed="right", weighted=True)
def test_statistics_by_two_keys_roll_up_to_the_summary_by_one(
    df: pl.DataFrame, n_bins: int, closed: str, weighted: bool
) -> None:
    options: dict[str, Any] = {"n_bins": n_bins, "closed": closed}
    options["weight"] = "w" if weighted else None
    by = ["k1", "k2"]
    stats = pc.bin_statistics(df.lazy(), "p", "y", by=by, **options).collect()
    columns = ["count", "mean_predicted", "observed", *METRICS]
    rolled_up = pc.metrics_from_statistics(stats, by="k1")
    assert_close(rolled_up, summary(df, by="k1", **options), ["k1", *columns])
    assert_close(pc.metrics_from_statistics(stats), summary(df, **options), columns)


@settings(max_examples=examples(2 / 3))
@given(df=frames, binning=binnings, weighted=st.booleans())
@pinned(binning=UNIFORM_10, weighted=True)
def test_expressions_per_group_equal_the_summary(
    df: pl.DataFrame, binning: dict[str, Any], weighted: bool
) -> None:
    options = {**binning, "weight": "w" if weighted else None}
    per_group = expressions(df, by="k1", **options)
    assert_close(summary(df, by="k1", **options), per_group, ["k1", *METRICS])
    assert_close(summary(df, **options), expressions(df, by=None, **options), list(METRICS))


@settings(max_examples=examples(2 / 3))
@given(df=frames, binning=binnings, weighted=st.booleans())
@pinned(binning={**UNIFORM_10, "closed": "left"}, weighted=True)
def test_metrics_are_ordered_and_bounded(
    df: pl.DataFrame, binning: dict[str, Any], weighted: bool
) -> None:
    options = {**binning, "weight": "w" if weighted else None}
    tol = 1e-12
    for result in (expressions(df, **options), summary(df, by="k1", **options)):
        for row in result.select(*BINNED, "brier").iter_rows(named=True):
            if row["ece"] is None:
                assert row["mce"] is None and row["rmsce"] is None, row
                continue
            assert -tol <= row["ece"] <= row["rmsce"] + tol, row
            assert row["rmsce"] <= row["mce"] + tol, row
            assert row["mce"] <= 1.0 + tol, row
            assert 0.0 <= row["brier"] <= 1.0 + tol, row


@settings(max_examples=examples(2 / 3))
@given(df=logs(invalid=True), binning=binnings)
@pinned(binning=UNIFORM_10)
def test_a_group_with_an_invalid_value_gives_null(
    df: pl.DataFrame, binning: dict[str, Any]
) -> None:
    oracle: dict[Any, dict[str, Any]] = {}
    for k1, p, y, w in df.select("k1", pl.col("p").cast(pl.Float64), "y", "w").iter_rows():
        group = oracle.setdefault(k1, {"refused": 0, "weight": 0.0})
        if _refused(p, y, w):
            group["refused"] += 1
        elif p is not None and y is not None and w is not None:
            group["weight"] += w
    options = {**binning, "weight": "w"}
    for result in (expressions(df, **options), summary(df, by="k1", **options)):
        for row in result.iter_rows(named=True):
            group = oracle[row["k1"]]
            null = group["refused"] > 0 or group["weight"] == 0.0
            for metric in METRICS:
                assert (row[metric] is None) == null, (metric, row, group)
            if "refused" in row:
                assert row["refused"] == group["refused"], (row, group)
    # A DataFrame raises instead (and otherwise gives the LazyFrame's numbers).
    if any(group["refused"] for group in oracle.values()):
        with pytest.raises(pc.CalibrationDataError):
            pc.summary(df, "p", "y", by="k1", **options)
    else:
        eager = pc.summary(df, "p", "y", by="k1", **options)
        assert_close(eager, summary(df, by="k1", **options), ["k1", *METRICS])


@pytest.mark.parametrize("frame", ["eager", "lazy"])
def test_a_label_beside_a_null_vector_is_refused_only_when_it_is_no_class_index(
    frame: str,
) -> None:
    # Found by test_two_class_classwise_ece_is_the_binary_ece. K is the length of a
    # row's vector: beside a null vector, a label is refused when it is no class index
    # at all (negative, fractional), and ignored with its row otherwise (documented in
    # polars_calib._core.problem); the binary path checks 0/1 whatever the probability.
    schema = {"probs": pl.Array(pl.Float64, 2), "y": pl.Float64}
    good = [[1.0, 0.0], [0.3, 0.7]]
    for label, refused in ((2.0, False), (-1.0, True), (0.5, True)):
        df = pl.DataFrame({"probs": [None, *good], "y": [label, 0.0, 1.0]}, schema=schema)
        got = df.select(
            classwise=pc.classwise_ece("probs", "y", n_bins=5),
            confidence=pc.confidence_ece("probs", "y", n_bins=5),
        )
        if refused:
            assert got.row(0) == (None, None)
        else:
            assert got.row(0) == pytest.approx((0.15, 0.15))
        data = df if frame == "eager" else df.lazy()
        for reduction in ("classwise", "confidence"):
            options: dict[str, Any] = {"n_bins": 5, "reduction": reduction}
            if refused and frame == "eager":
                with pytest.raises(pc.CalibrationDataError, match="label not a class"):
                    pc.summary(data, "probs", "y", **options)
                continue
            table = pc.summary(data, "probs", "y", **options)
            table = table if isinstance(table, pl.DataFrame) else table.collect()
            assert table["refused"].item() == int(refused)
            assert (table[f"{reduction}_ece"].item() is None) == refused


def test_the_pinned_frames_hold_what_they_claim() -> None:
    # The pins stay honest: each frame holds the edge case it is named after.
    nan = PINNED["nan_with_nulls"]
    assert nan["p"].is_nan().any() and nan["p"].is_null().any() and nan["y"].is_null().any()
    assert (PINNED["zeros_and_ones"]["p"].is_in([0.0, 1.0])).sum() >= 14
    on_edges = PINNED["on_edges"]["p"].to_list()
    assert sum(_interior_edge(v, 10) for v in on_edges) >= 9
    assert 5e-324 in PINNED["subnormals"]["p"].to_list()
    assert PINNED["float32"]["p"].dtype == pl.Float32
    assert PINNED["null_keys"]["k1"].null_count() >= 3
    assert np.isclose(PINNED["float32"]["p"].cast(pl.Float64)[0], 0.1, atol=1e-8)
