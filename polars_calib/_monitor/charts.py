"""The rows of the drift charts: each group's restarted CUSUM charts and its O - E chart.

:func:`cusum_rows` gives, per row of the log and chart, the value of the chart that
:func:`polars_calib.monitor` watches (restarted at 0 after each alarm), with the
alarms flagged on their rows: the alarms are :func:`~polars_calib._monitor.alarms.alarm_rounds`',
the rows between two of them one run of ``cum_sum``/``cum_min`` from the previous
alarm's total, the very numbers the monitor compares with its threshold.
:func:`oe_rows` gives :func:`polars_calib.observed_minus_expected` on the same sorted
rows. The charts draw these rows (:mod:`polars_calib._monitor.plots`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.problem import Problem
from polars_calib._monitor.alarms import (
    GROUP,
    alarm_rounds,
    check_options,
    checked_rows,
    thresholds_for,
)
from polars_calib._monitor.api import _given, _lazy
from polars_calib._monitor.cusum import cusum_step, observed_minus_expected

__all__ = ["ROW_NUMBER", "ChartRows", "cusum_rows", "oe_rows"]

ROW_NUMBER = "n"
"""The row's number in its group, in time order (ties in the frame's order), from 0."""


@dataclass(frozen=True)
class ChartRows:
    """The rows of the charts (`frame`), and the names of their group keys and time."""

    frame: pl.DataFrame
    keys: list[str]
    time: str


def _rows(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    by: Keys,
    time: str,
    weight: str | None,
    reference: pl.Expr | None,
) -> tuple[pl.DataFrame, pl.DataFrame, list[str], Problem]:
    """The log's rows (in its order, with the reference flag), and the checked rows
    sorted by keys and time, as :func:`polars_calib.monitor` reads them."""
    lazy = data.lazy()  # one frame type for the checks; the rows are collected here
    prepared, lf, _ = _lazy(lazy, prob, label, by, weight, time, reference)
    keys: list[str] = prepared.keys
    log = lf.collect()
    rows = checked_rows(log, prepared.problem, keys, time)
    numbered = rows.with_columns(pl.int_range(pl.len()).over(GROUP).alias(ROW_NUMBER))
    return log, numbered, keys, prepared.problem


def cusum_rows(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys,
    time: str,
    weight: str | None,
    odds_ratio: float | Sequence[float],
    arl0: float,
    threshold: float | Sequence[float] | None,
    reference: pl.Expr | None,
    simulated_alarms: int,
    seed: int,
) -> ChartRows:
    """Each row's restarted CUSUM per chart, its threshold and whether it alarms.

    One row per (log row, odds ratio): the keys, `time`, ``GROUP`` (the group's
    number), ``n`` (:data:`ROW_NUMBER`), ``odds_ratio``, ``statistic`` (the chart after
    the row, ``inf`` on a contradicted certain prediction), ``threshold``, ``alarm``
    and ``run_start`` (on an alarm's row, as :func:`polars_calib.monitor` gives it).
    The options and the errors are :func:`polars_calib.monitor`'s.
    """
    ratios = check_options(odds_ratio, arl0, simulated_alarms)
    if threshold is not None and reference is not None:
        msg = "give `threshold` or `reference` (the rows thresholds are simulated from), not both"
        raise ValueError(msg)
    if threshold is not None:  # checked before a row is read
        _given(pl.DataFrame({GROUP: [0]}), ratios, threshold)
    log, rows, keys, problem = _rows(data, prob, label, by, time, weight, reference)
    groups = rows.select(GROUP, *keys).unique(GROUP, keep="first", maintain_order=True)
    if threshold is not None:
        table = _given(groups.select(GROUP), ratios, threshold)
    else:
        # From the log in its order: the sample's rows are those of `pc.monitor`.
        args = (ratios, arl0, simulated_alarms, seed)
        table = thresholds_for(log.lazy(), problem, keys, groups, *args)
    parts = []
    for ratio in ratios:
        step, flag = cusum_step(problem, math.log(ratio))
        chart = rows.select(
            *keys,
            time,
            GROUP,
            ROW_NUMBER,
            step.cum_sum().over(GROUP).alias("total"),
            flag.alias("flag"),
        ).join(
            table.filter(pl.col("odds_ratio") == ratio).select(GROUP, "threshold"),
            on=GROUP,
            maintain_order="left",
        )
        alarms = alarm_rounds(chart, time).select(
            GROUP, ROW_NUMBER, "run_start", pl.lit(True).alias("alarm")
        )
        parts.append(_restarted(chart, alarms).with_columns(odds_ratio=pl.lit(ratio)))
    columns = [*keys, time, GROUP, ROW_NUMBER, "odds_ratio", "statistic", "threshold"]
    frame = pl.concat(parts).select(*columns, "alarm", "run_start")
    return ChartRows(frame.sort(GROUP, "odds_ratio", ROW_NUMBER), keys, time)


def _restarted(chart: pl.DataFrame, alarms: pl.DataFrame) -> pl.DataFrame:
    """The chart restarted at 0 after each alarm row: the monitor's own arithmetic."""
    chart = chart.join(alarms, on=[GROUP, ROW_NUMBER], how="left", maintain_order="left")
    chart = chart.with_columns(pl.col("alarm").fill_null(False))
    # A run starts after an alarm, from that row's total (as the monitor's charts do).
    after = pl.col("alarm").shift(1, fill_value=False).over(GROUP)
    base = pl.when(after).then(pl.col("total").shift(1).over(GROUP))
    chart = chart.with_columns(
        run=after.cast(pl.Int64).cum_sum().over(GROUP),
        base=base.forward_fill().over(GROUP).fill_null(0.0),
    )
    run = pl.col("total") - pl.col("base")
    statistic = run - run.cum_min().over(GROUP, "run").clip(upper_bound=0.0)
    # A contradicted certain prediction alarms on its row: the chart is infinite there.
    statistic = pl.when(pl.col("flag")).then(math.inf).otherwise(statistic)
    return chart.with_columns(statistic=statistic)


def oe_rows(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys,
    time: str,
    weight: str | None,
) -> ChartRows:
    """Each row's observed-minus-expected chart, in time order per group.

    One row per log row: the keys, `time`, ``GROUP``, ``n`` and ``statistic``
    (:func:`polars_calib.observed_minus_expected` over the group's rows in time
    order). Refused rows and null times raise, as in :func:`polars_calib.monitor`.
    """
    _, rows, keys, _ = _rows(data, prob, label, by, time, weight, None)
    chart = observed_minus_expected(prob, label, weight=weight).over(GROUP)
    frame = rows.select(*keys, time, GROUP, ROW_NUMBER, chart.alias("statistic"))
    return ChartRows(frame, keys, time)
