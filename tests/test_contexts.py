"""Every binary metric gives the same number in every context it claims.

Two axes. The *data* context comes from the `frame_context` fixture (conftest):
a DataFrame, a LazyFrame collected in memory, a LazyFrame collected by the
streaming engine, a parquet scan collected by the streaming engine. The *query*
context is a parametrize: select, over, group_by().agg, group_by_dynamic (tumbling
and sliding), rolling. The frame functions (`summary`, `bin_statistics`,
`reliability`) run the whole query in each data context too, and equal the eager
result to 1e-12.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_calib as pc
import reference
from conftest import FrameContext, make_log
from polars_calib._core.binning import MAX_MASKED_BINS

Frame = pl.DataFrame | pl.LazyFrame

METRICS: dict[str, pl.Expr] = {
    "ece": pl.col("p").calib.ece("y", n_bins=10),
    "ece_left": pl.col("p").calib.ece("y", n_bins=10, closed="left"),
    "ece_quantile": pl.col("p").calib.ece("y", n_bins=5, strategy="quantile"),
    "ece_weighted": pl.col("p").calib.ece("y", n_bins=10, weight="w"),
    "ece_window": pl.col("p").calib.ece("y", n_bins=50, weight="w"),
    "mce": pl.col("p").calib.mce("y", n_bins=10),
    "rmsce": pl.col("p").calib.rmsce("y", n_bins=10, weight="w"),
    "brier": pl.col("p").calib.brier("y"),
    "log_loss": pl.col("p").calib.log_loss("y", weight="w"),
}

SCORES = ["ece", "mce", "rmsce", "brier", "log_loss"]
SUMMARY_COLUMNS = ["count", "mean_predicted", "observed", *SCORES]


def _log() -> pl.DataFrame:
    df = make_log(11, 600, decimals=2, groups=3)
    start = datetime(2024, 1, 1)
    return df.with_columns(
        ts=pl.Series([start + timedelta(hours=3 * i) for i in range(df.height)])
    ).with_columns(g=pl.col("g").cast(pl.String))


LOG = _log()


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    return LOG


def _by_select(frame: pl.DataFrame) -> dict[str, float | None]:
    """The oracle: each metric evaluated in a plain select on exactly the rows."""
    return frame.select(**METRICS).row(0, named=True)


def _assert_rows_match(result: pl.DataFrame, expected: list[dict[str, float | None]]) -> None:
    assert result.height == len(expected)
    for row, want in zip(result.select(list(METRICS)).iter_rows(named=True), expected):
        for name in METRICS:
            assert row[name] == pytest.approx(want[name], abs=1e-12), name


def _assert_columns_close(got: pl.DataFrame, want: pl.DataFrame, columns: list[str]) -> None:
    """Named columns equal: keys exactly, floats to 1e-12 (the output may gain columns)."""
    assert got.height == want.height
    for name in columns:
        a, b = got[name], want[name]
        assert a.dtype == b.dtype, name
        assert a.is_null().to_list() == b.is_null().to_list(), name
        if a.dtype.is_float():
            np.testing.assert_allclose(
                a.drop_nulls().to_numpy(),
                b.drop_nulls().to_numpy(),
                rtol=0,
                atol=1e-12,
                err_msg=name,
            )
        else:
            assert a.to_list() == b.to_list(), name


def _groups(log: pl.DataFrame) -> list[str]:
    return sorted(log["g"].unique().to_list())


QUERIES: dict[str, Callable[[Frame], Frame]] = {
    "group_by": lambda frame: frame.group_by("g").agg(**METRICS).sort("g"),
    "over_with_columns": lambda frame: (
        frame.with_columns(**{k: v.over("g") for k, v in METRICS.items()})
        .group_by("g")
        .first()
        .sort("g")
    ),
    "over_select": lambda frame: (
        frame.select("g", **{k: v.over("g") for k, v in METRICS.items()}).unique("g").sort("g")
    ),
}


@pytest.mark.parametrize("query", list(QUERIES))
def test_grouped_queries_agree_with_select(
    log: pl.DataFrame, frame_context: FrameContext, query: str
) -> None:
    expected = [_by_select(log.filter(pl.col("g") == g)) for g in _groups(log)]
    result = frame_context.collect(QUERIES[query](frame_context.frame(log)))
    _assert_rows_match(result, expected)


def test_select(log: pl.DataFrame, frame_context: FrameContext) -> None:
    result = frame_context.collect(frame_context.frame(log).select(**METRICS))
    _assert_rows_match(result, [_by_select(log)])


@cache
def _window_oracle(starts: tuple[datetime, ...], days: int) -> list[dict[str, float | None]]:
    length = timedelta(days=days)
    return [
        _by_select(LOG.filter((pl.col("ts") >= start) & (pl.col("ts") < start + length)))
        for start in starts
    ]


@pytest.mark.parametrize(("every", "period"), [("2d", "2d"), ("1d", "3d")])
def test_group_by_dynamic_windows(
    log: pl.DataFrame, frame_context: FrameContext, every: str, period: str
) -> None:
    query = frame_context.frame(log).group_by_dynamic("ts", every=every, period=period)
    result = frame_context.collect(query.agg(**METRICS))
    # The oracle depends on the windows only: computed once for the four data contexts.
    expected = _window_oracle(tuple(result["ts"]), int(period[:-1]))
    _assert_rows_match(result, expected)


def test_rolling_windows(log: pl.DataFrame, frame_context: FrameContext) -> None:
    query = frame_context.frame(log).rolling("ts", period="2d").agg(**METRICS)
    result = frame_context.collect(query)
    rows = np.linspace(0, log.height - 1, 12).astype(int)
    picked = result[rows.tolist()]
    expected = [
        _by_select(log.filter((pl.col("ts") > end - timedelta(days=2)) & (pl.col("ts") <= end)))
        for end in picked["ts"]
    ]
    _assert_rows_match(picked, expected)


def test_group_by_agrees_with_the_reference_per_group(
    log: pl.DataFrame, frame_context: FrameContext
) -> None:
    query = frame_context.frame(log).group_by("g").agg(ece=pc.ece("p", "y", n_bins=10)).sort("g")
    for g, got in frame_context.collect(query).iter_rows():
        part = log.filter(pl.col("g") == g)
        assert got == pytest.approx(
            reference.calibration_error(part["p"].to_numpy(), part["y"].to_numpy(), 10), abs=1e-12
        )


# --------------------------------------------------------------------------
# The frame functions: the whole query in every data context
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_bins", [10, 50])
def test_summary_in_every_data_context_equals_eager(
    log: pl.DataFrame, frame_context: FrameContext, n_bins: int
) -> None:
    options: dict[str, Any] = {"by": "g", "n_bins": n_bins, "weight": "w"}
    want = pc.summary(log, "p", "y", **options)
    got = frame_context.collect(frame_context.frame(log).calib.summary("p", "y", **options))
    _assert_columns_close(got, want, ["g", *SUMMARY_COLUMNS])
    stats = frame_context.frame(log).calib.bin_statistics("p", "y", **options)
    rolled = pc.metrics_from_statistics(frame_context.collect(stats), by="g")
    _assert_columns_close(rolled, want, ["g", *SUMMARY_COLUMNS])


def test_reliability_in_every_data_context_equals_eager(
    log: pl.DataFrame, frame_context: FrameContext
) -> None:
    options: dict[str, Any] = {"by": "g", "n_bins": 10, "weight": "w"}
    want = pc.reliability(log, "p", "y", **options)
    got = frame_context.collect(frame_context.frame(log).calib.reliability("p", "y", **options))
    columns = ["g", "bin", "lower", "upper", "count", "mean_predicted", "observed", "gap"]
    _assert_columns_close(got, want, [*columns, "observed_lower", "observed_upper"])


VECTOR_EXPRESSIONS = {
    "confidence": pc.confidence_ece,
    "top_label": pc.top_label_ece,
    "classwise": pc.classwise_ece,
}


@pytest.mark.parametrize("reduction", list(VECTOR_EXPRESSIONS))
def test_vector_summary_in_every_data_context_equals_the_expressions(
    frame_context: FrameContext, reduction: str
) -> None:
    df = make_log(4, 800, groups=3, classes=3, nulls=0.05)
    options: dict[str, Any] = {"by": "g", "n_bins": 10, "weight": "w", "reduction": reduction}
    query = frame_context.frame(df).calib.summary("probs", "cls", **options)
    got = frame_context.collect(query)
    metric = VECTOR_EXPRESSIONS[reduction]
    binning: dict[str, Any] = {"n_bins": 10, "weight": "w"}
    want = (
        df.group_by("g")
        .agg(
            ece=metric("probs", "cls", **binning),
            mce=metric("probs", "cls", norm="max", **binning),
            rmsce=metric("probs", "cls", norm="l2", **binning),
            brier=pc.multiclass_brier("probs", "cls", weight="w"),
            log_loss=pc.multiclass_log_loss("probs", "cls", weight="w"),
        )
        .sort("g")
        .rename({m: f"{reduction}_{m}" for m in ("ece", "mce", "rmsce")})
    )
    metrics = [f"{reduction}_{m}" for m in ("ece", "mce", "rmsce")]
    _assert_columns_close(got, want, ["g", *metrics, "brier", "log_loss"])


def test_the_whole_query_streams_from_a_parquet_scan(log: pl.DataFrame, tmp_path: Path) -> None:
    # Nothing collected in memory first: the scan, the aggregation and the finisher
    # all run under the streaming engine, the expression and the frame form together.
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    scan = pl.scan_parquet(path)
    options: dict[str, Any] = {"by": "g", "n_bins": 10, "weight": "w"}
    expressions = scan.group_by("g").agg(**METRICS).sort("g")
    frame = scan.calib.summary("p", "y", **options)
    rolled = pc.metrics_from_statistics(scan.calib.bin_statistics("p", "y", **options), by="g")
    got_expressions, got_frame, got_rolled = pl.collect_all(
        [expressions, frame, rolled], engine="streaming"
    )
    expected = [_by_select(log.filter(pl.col("g") == g)) for g in _groups(log)]
    _assert_rows_match(got_expressions, expected)
    want = log.calib.summary("p", "y", **options)
    _assert_columns_close(got_frame, want, ["g", *SUMMARY_COLUMNS])
    _assert_columns_close(got_rolled, want, ["g", *SUMMARY_COLUMNS])
    # And the expressions in group_by().agg equal the frame form per group.
    per_group = _per_group_expressions(log, "g", 10, "w")
    _assert_columns_close(got_frame, per_group, ["g", "count", *SCORES])


# --------------------------------------------------------------------------
# Holes of issue 9: > 40 bins, packed integer keys, Float32, null keys
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_bins", [41, 50, 100])
@pytest.mark.parametrize("closed", ["right", "left"])
def test_more_than_40_bins_match_the_numpy_reference(
    frame_context: FrameContext, n_bins: int, closed: str
) -> None:
    # Above MAX_MASKED_BINS the expressions sum over a window keyed by the bin index.
    assert n_bins > MAX_MASKED_BINS
    df = make_log(21, 3000, decimals=2, groups=2)
    binning: dict[str, Any] = {"n_bins": n_bins, "closed": closed}
    query = (
        frame_context.frame(df)
        .group_by("g")
        .agg(
            ece=pc.ece("p", "y", **binning),
            mce=pc.mce("p", "y", **binning),
            rmsce=pc.rmsce("p", "y", weight="w", **binning),
        )
        .sort("g")
    )
    for g, ece, mce, rmsce in frame_context.collect(query).iter_rows():
        part = df.filter(pl.col("g") == g)
        p, y, w = (part[c].to_numpy() for c in ("p", "y", "w"))
        assert ece == pytest.approx(
            reference.calibration_error(p, y, n_bins, closed=closed), abs=1e-12
        )
        assert mce == pytest.approx(
            reference.calibration_error(p, y, n_bins, closed=closed, norm="max"), abs=1e-12
        )
        assert rmsce == pytest.approx(
            reference.calibration_error(p, y, n_bins, closed=closed, norm="l2", weight=w), abs=1e-12
        )


def _per_group_expressions(
    df: pl.DataFrame, key: str, n_bins: int, weight: str | None
) -> pl.DataFrame:
    """Each metric as an expression per group, and the rows used, sorted (null key last)."""
    binning: dict[str, Any] = {"n_bins": n_bins, "weight": weight}
    return (
        df.group_by(key)
        .agg(
            count=pl.all_horizontal(pl.col("p", "y", *([weight] if weight else [])).is_not_null())
            .sum()
            .cast(pl.Int64),
            ece=pc.ece("p", "y", **binning),
            mce=pc.mce("p", "y", **binning),
            rmsce=pc.rmsce("p", "y", **binning),
            brier=pc.brier("p", "y", weight=weight),
            log_loss=pc.log_loss("p", "y", weight=weight),
        )
        .sort(key, nulls_last=True)
    )


@pytest.mark.parametrize(
    "key_dtype",
    [
        pl.Int32,
        pl.UInt16,
        pl.Int8,
        pl.Int64,
        pl.String,
        pl.Categorical,
        pl.Enum(["4", "3", "1", "0", "2"]),
    ],
)
def test_packed_keys_with_nulls_match_per_group_expressions(
    frame_context: FrameContext, key_dtype: pl.DataType
) -> None:
    # Integer keys up to 32 bits, and the codes of String, Categorical and Enum keys,
    # are packed with the bin into one Float64 key (Int64 keys are not); a null key is
    # its own group, kept after the others.
    df = make_log(8, 2000, groups=5, nulls=0.05, key_dtype=pl.String)
    df = df.with_columns(
        g=pl.when(pl.int_range(pl.len()) % 7 == 3).then(None).otherwise(pl.col("g"))
    ).with_columns(
        pl.col("g").cast(pl.Int64).cast(key_dtype)
        if key_dtype.is_integer()
        else pl.col("g").cast(key_dtype)
    )
    want = _per_group_expressions(df, "g", 20, "w")
    assert want["g"].null_count() == 1
    got = frame_context.collect(
        frame_context.frame(df).calib.summary("p", "y", by="g", n_bins=20, weight="w")
    )
    _assert_columns_close(got, want, ["g", "count", "ece", "mce", "rmsce", "brier", "log_loss"])
    assert got["g"].dtype == key_dtype
    assert got["g"][-1] is None


KEY_RANGES = {
    pl.Int8: [-128, 127, 0],
    pl.Int16: [-32768, 32767, -1],
    pl.Int32: [-(2**31), 2**31 - 1, 0],
    pl.UInt8: [0, 255, 1],
    pl.UInt16: [0, 65535, 1],
    pl.UInt32: [0, 2**32 - 1, 2**31],
}


@pytest.mark.parametrize("key_dtype", list(KEY_RANGES))
@pytest.mark.parametrize("n_bins", [1, 3000])
def test_packed_keys_at_the_ends_of_their_range(key_dtype: type[pl.DataType], n_bins: int) -> None:
    # key * (n_bins + 2) + bin + 2 must stay exact and apart from the null key's code.
    df = make_log(3, 2000, groups=4)
    keys = pl.Series([*KEY_RANGES[key_dtype], None], dtype=key_dtype)
    df = df.with_columns(g=keys.gather(df["g"]))
    want = _per_group_expressions(df, "g", n_bins, "w")
    got = df.lazy().calib.summary("p", "y", by="g", n_bins=n_bins, weight="w").collect()
    _assert_columns_close(got, want, ["g", "count", "ece", "mce", "rmsce", "brier", "log_loss"])


@pytest.mark.parametrize("n_bins", [10, 60])
def test_float32_probabilities(frame_context: FrameContext, n_bins: int) -> None:
    df = make_log(12, 1500, decimals=None, groups=2).with_columns(pl.col("p").cast(pl.Float32))
    # The numbers of the same values held as Float64 (every Float32 is an exact Float64).
    wide = df.with_columns(pl.col("p").cast(pl.Float64))
    want = _per_group_expressions(wide, "g", n_bins, "w")
    got = frame_context.collect(
        frame_context.frame(df)
        .group_by("g")
        .agg(
            ece=pc.ece("p", "y", n_bins=n_bins, weight="w"),
            mce=pc.mce("p", "y", n_bins=n_bins, weight="w"),
            brier=pc.brier("p", "y", weight="w"),
        )
        .sort("g")
    )
    _assert_columns_close(got, want, ["g", "ece", "mce", "brier"])
    summary = frame_context.collect(
        frame_context.frame(df).calib.summary("p", "y", by="g", n_bins=n_bins, weight="w")
    )
    _assert_columns_close(summary, want, ["g", "count", "ece", "mce", "rmsce", "brier", "log_loss"])
    for g, ece in want.select("g", "ece").iter_rows():
        part = wide.filter(pl.col("g") == g)
        p, y, w = (part[c].to_numpy() for c in ("p", "y", "w"))
        assert ece == pytest.approx(reference.calibration_error(p, y, n_bins, weight=w), abs=1e-12)


def test_null_group_keys_are_their_own_group(frame_context: FrameContext) -> None:
    df = pl.DataFrame(
        {
            "g": ["a", None, "a", None, "b", None],
            "p": [0.2, 0.9, 0.4, 0.8, 0.6, 0.1],
            "y": [0, 1, 1, 0, 1, 1],
        }
    )
    got = frame_context.collect(frame_context.frame(df).calib.summary("p", "y", by="g", n_bins=5))
    want = _per_group_expressions(df, "g", 5, None)
    assert got["g"].to_list() == ["a", "b", None]
    _assert_columns_close(got, want, ["g", "count", "ece", "mce", "rmsce", "brier", "log_loss"])
    null_rows = df.filter(pl.col("g").is_null())
    assert got["ece"][-1] == pytest.approx(
        reference.calibration_error(null_rows["p"].to_numpy(), null_rows["y"].to_numpy(), 5),
        abs=1e-12,
    )
