"""Every binary metric gives the same number in every context it claims.

select, over, group_by().agg, group_by_dynamic (tumbling and sliding), rolling,
DataFrame and LazyFrame, the in-memory and the streaming engine, scan_parquet.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import sign_changing_log

import polars_calib as pc

METRICS: dict[str, pl.Expr] = {
    "ece": pl.col("p").calib.ece("y", n_bins=10),
    "ece_left": pl.col("p").calib.ece("y", n_bins=10, closed="left"),
    "ece_quantile": pl.col("p").calib.ece("y", n_bins=5, strategy="quantile"),
    "ece_weighted": pl.col("p").calib.ece("y", n_bins=10, weight="w"),
    "mce": pl.col("p").calib.mce("y", n_bins=10),
    "rmsce": pl.col("p").calib.rmsce("y", n_bins=10, weight="w"),
    "brier": pl.col("p").calib.brier("y"),
    "log_loss": pl.col("p").calib.log_loss("y", weight="w"),
}


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    df = sign_changing_log(11, 600, decimals=2, groups=3)
    start = datetime(2024, 1, 1)
    return df.with_columns(
        ts=pl.Series([start + timedelta(hours=3 * i) for i in range(df.height)])
    ).with_columns(g=pl.col("g").cast(pl.String))


def _by_select(frame: pl.DataFrame) -> dict[str, float | None]:
    """The oracle: each metric evaluated in a plain select on exactly the rows."""
    return frame.select(**METRICS).row(0, named=True)


def _assert_rows_match(result: pl.DataFrame, expected: list[dict[str, float | None]]) -> None:
    assert result.height == len(expected)
    for row, want in zip(result.select(list(METRICS)).iter_rows(named=True), expected):
        for name in METRICS:
            assert row[name] == pytest.approx(want[name], abs=1e-12), name


def _groups(log: pl.DataFrame) -> list[str]:
    return sorted(log["g"].unique().to_list())


CONTEXTS: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    "dataframe_group_by": lambda df: df.group_by("g").agg(**METRICS).sort("g"),
    "lazy_in_memory": lambda df: df.lazy().group_by("g").agg(**METRICS).sort("g").collect(
        engine="in-memory"
    ),
    "lazy_streaming": lambda df: df.lazy().group_by("g").agg(**METRICS).sort("g").collect(
        engine="streaming"
    ),
    "over": lambda df: df.with_columns(**{k: v.over("g") for k, v in METRICS.items()})
    .group_by("g")
    .first()
    .sort("g"),
    "over_streaming": lambda df: df.lazy()
    .select("g", **{k: v.over("g") for k, v in METRICS.items()})
    .unique("g")
    .sort("g")
    .collect(engine="streaming"),
}


@pytest.mark.parametrize("context", list(CONTEXTS))
def test_grouped_contexts_agree_with_select(log: pl.DataFrame, context: str) -> None:
    expected = [_by_select(log.filter(pl.col("g") == g)) for g in _groups(log)]
    _assert_rows_match(CONTEXTS[context](log), expected)


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_select_on_lazyframe(log: pl.DataFrame, engine: str) -> None:
    result = log.lazy().select(**METRICS).collect(engine=engine)  # type: ignore[call-overload]
    _assert_rows_match(result, [_by_select(log)])


def test_scan_parquet_streaming(log: pl.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    result = (
        pl.scan_parquet(path).group_by("g").agg(**METRICS).sort("g").collect(engine="streaming")
    )
    expected = [_by_select(log.filter(pl.col("g") == g)) for g in _groups(log)]
    _assert_rows_match(result, expected)


@pytest.mark.parametrize(("every", "period"), [("2d", "2d"), ("1d", "3d")])
def test_group_by_dynamic_windows(log: pl.DataFrame, every: str, period: str) -> None:
    result = log.group_by_dynamic("ts", every=every, period=period).agg(**METRICS)
    length = timedelta(days=int(period[:-1]))
    expected = [
        _by_select(log.filter((pl.col("ts") >= start) & (pl.col("ts") < start + length)))
        for start in result["ts"]
    ]
    _assert_rows_match(result, expected)


def test_rolling_windows(log: pl.DataFrame) -> None:
    result = log.rolling("ts", period="2d").agg(**METRICS)
    rows = np.linspace(0, log.height - 1, 12).astype(int)
    picked = result[rows.tolist()]
    expected = [
        _by_select(log.filter((pl.col("ts") > end - timedelta(days=2)) & (pl.col("ts") <= end)))
        for end in picked["ts"]
    ]
    _assert_rows_match(picked, expected)


def test_group_by_agrees_with_the_reference_per_group(log: pl.DataFrame) -> None:
    import reference

    result = log.group_by("g").agg(ece=pc.ece("p", "y", n_bins=10)).sort("g")
    for g, got in result.iter_rows():
        part = log.filter(pl.col("g") == g)
        assert got == pytest.approx(
            reference.calibration_error(part["p"].to_numpy(), part["y"].to_numpy(), 10), abs=1e-12
        )
