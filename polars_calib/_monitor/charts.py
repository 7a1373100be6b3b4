"""The rows drawn of the drift charts: each group's restarted CUSUM charts and its O - E chart.

:func:`cusum_rows` runs the charts :func:`polars_calib.monitor` watches (restarted at 0
after each alarm) through the monitor's own passes over the log
(:mod:`polars_calib._monitor.stream`: the checks and the groups' row counts in one
streaming pass, the thresholds, then the rows in batches through
:class:`~polars_calib._monitor.batched.Charts`), and keeps of each (group, chart) only
the rows drawn (:mod:`polars_calib._monitor.decimation`): every alarm, the M4 rows of
buckets of consecutive rows and each run's largest value. :func:`oe_rows` does the same
for :func:`polars_calib.observed_minus_expected` (running sums per group,
:class:`~polars_calib._monitor.batched.Sums`). Memory holds a batch and the rows drawn,
never the log (a log whose groups go back in time is sorted out of memory first, as for
:func:`polars_calib.monitor`). The charts draw these rows
(:mod:`polars_calib._monitor.plots`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._monitor.alarms import GROUP, chart_arrays, check_options, thresholds_for
from polars_calib._monitor.api import _given, _lazy
from polars_calib._monitor.batched import TIME, Sums, from_physical
from polars_calib._monitor.cusum import excess_step
from polars_calib._monitor.decimation import Drawn
from polars_calib._monitor.stream import ROWS, checked_groups, run_batches, run_charts

__all__ = ["ROW_NUMBER", "ChartRows", "cusum_rows", "oe_rows"]

ROW_NUMBER = "n"
"""The row's number in its group, in time order (ties in the frame's order), from 0."""


@dataclass(frozen=True)
class ChartRows:
    """The rows drawn of the charts (`frame`), and the names of their group keys and time."""

    frame: pl.DataFrame
    keys: list[str]
    time: str


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
    max_points: int,
) -> ChartRows:
    """The rows drawn of each group's restarted CUSUM charts, with their alarms.

    One row per (drawn row, odds ratio): the keys, `time`, ``GROUP`` (the group's
    number), ``n`` (:data:`ROW_NUMBER`), ``odds_ratio``, ``statistic`` (the chart after
    the row, ``inf`` on a contradicted certain prediction), ``threshold``, ``alarm``
    and ``run_start`` (on an alarm's row, as :func:`polars_calib.monitor` gives it);
    every alarm is a row. The options and the errors are :func:`polars_calib.monitor`'s.
    """
    ratios = check_options(odds_ratio, arl0, simulated_alarms)
    if threshold is not None and reference is not None:
        msg = "give `threshold` or `reference` (the rows thresholds are simulated from), not both"
        raise ValueError(msg)
    if threshold is not None:  # checked before a row is read
        _given(pl.DataFrame({GROUP: [0]}), ratios, threshold)
    prepared, lf, schema = _lazy(data.lazy(), prob, label, by, weight, time, reference)
    keys: list[str] = prepared.keys
    groups, span = checked_groups(lf, prepared.problem, keys, time)
    if threshold is not None:
        table = _given(groups.select(GROUP), ratios, threshold)
    else:
        table = thresholds_for(
            lf, prepared.problem, keys, groups, ratios, arl0, simulated_alarms, seed
        ).select(GROUP, "odds_ratio", "threshold")
    matrix, _ = chart_arrays(groups.height, ratios, table, None)
    counts = groups[ROWS].to_numpy()

    def drawn() -> Drawn:
        return Drawn(counts, [matrix[:, j] for j in range(len(ratios))], max_points)

    charts = run_charts(
        lf, groups, keys, time, prepared.problem, ratios, matrix, span=span, drawn=drawn
    )
    assert charts.drawn is not None  # (made by `drawn`)
    alarms = charts.alarms(schema[time]).select(
        GROUP, ROW_NUMBER, "odds_ratio", "run_start", pl.lit(True).alias("alarm")
    )
    parts = [
        charts.drawn.frame(j).with_columns(odds_ratio=pl.lit(ratio))
        for j, ratio in enumerate(ratios)
    ]
    frame = (
        _drawn(pl.concat(parts), groups, keys, time, schema[time])
        .join(table, on=[GROUP, "odds_ratio"], how="left")
        .join(alarms, on=[GROUP, ROW_NUMBER, "odds_ratio"], how="left")
        .with_columns(pl.col("alarm").fill_null(False))
    )
    columns = [*keys, time, GROUP, ROW_NUMBER, "odds_ratio", "statistic", "threshold"]
    frame = frame.select(*columns, "alarm", "run_start")
    return ChartRows(frame.sort(GROUP, "odds_ratio", ROW_NUMBER), keys, time)


def _drawn(
    kept: pl.DataFrame, groups: pl.DataFrame, keys: list[str], time: str, dtype: pl.DataType
) -> pl.DataFrame:
    """The kept rows of :meth:`Drawn.frame` with their group's keys and their time."""
    kept = kept.rename({"group": GROUP, "n": ROW_NUMBER, "t": TIME})
    kept = kept.with_columns(from_physical(TIME, dtype).alias(time)).drop(TIME)
    return kept.join(groups.select(*keys, GROUP), on=GROUP, how="left")


def oe_rows(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys,
    time: str,
    weight: str | None,
    max_points: int,
) -> ChartRows:
    """The rows drawn of each group's observed-minus-expected chart, in time order.

    One row per drawn row: the keys, `time`, ``GROUP``, ``n`` and ``statistic``
    (:func:`polars_calib.observed_minus_expected` over the group's rows in time
    order). Refused rows and null times raise, as in :func:`polars_calib.monitor`.
    """
    prepared, lf, schema = _lazy(data.lazy(), prob, label, by, weight, time, None)
    keys: list[str] = prepared.keys
    groups, span = checked_groups(lf, prepared.problem, keys, time)
    term = [excess_step(prepared.problem).alias("__calib_excess__")]

    def sums() -> Sums:
        return Sums(groups.height, Drawn(groups[ROWS].to_numpy(), [None], max_points))

    drawn = run_batches(lf, groups, keys, time, term, sums, span).drawn
    frame = _drawn(drawn.frame(0), groups, keys, time, schema[time])
    return ChartRows(frame.select(*keys, time, GROUP, ROW_NUMBER, "statistic"), keys, time)
