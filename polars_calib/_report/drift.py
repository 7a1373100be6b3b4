"""The page's "Drift" section: the alarms of the CUSUM charts and the charts per group.

With ``html_report(..., drift=True)`` (which needs `time`), the section shows the
alarms :func:`polars_calib.monitor` finds (its table, sorted by time) and
:func:`polars_calib.plot_cusum`'s chart of the groups, computed once: the alarms
are the charts' marked rows. It plugs into the page as the audit does (a
:class:`~polars_calib._report.model.Section`); the page escapes its text.
"""

from __future__ import annotations

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._monitor.alarms import GROUP
from polars_calib._monitor.charts import ChartRows, cusum_rows
from polars_calib._monitor.plots import cusum_frame
from polars_calib._plot.drift import MAX_POINTS, draw
from polars_calib._report.html import has_charts
from polars_calib._report.model import Section

__all__ = ["MAX_ALARMS", "MAX_PANELS", "drift_section"]

MAX_PANELS = 8
"""The most groups drawn: those with the most alarms (then in key order)."""

MAX_ALARMS = 500
"""The most alarms listed (the first in time)."""

ARL0 = 10_000.0
"""The in-control average run length of each chart's simulated threshold."""


def drift_section(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys,
    time: str,
    weight: str | None,
    threshold: float | None,
) -> Section:
    """The "Drift" section: the alarms of each group's CUSUM pair and their charts.

    The charts are :func:`polars_calib.monitor`'s defaults (odds ratios 0.5 and 2,
    thresholds simulated for an in-control ARL0 of 10,000 rows per chart), or the
    given `threshold` for both.
    """
    charts = cusum_rows(
        data,
        prob,
        label,
        by=by,
        time=time,
        weight=weight,
        odds_ratio=(0.5, 2.0),
        arl0=ARL0,
        threshold=threshold,
        reference=None,
        simulated_alarms=200,
        seed=0,
        max_points=MAX_POINTS,
    )
    frame, keys = charts.frame, charts.keys
    columns = [*keys, time, "odds_ratio", "statistic", "threshold", "run_start"]
    alarms = frame.filter("alarm").sort(time, GROUP, "odds_ratio").select(columns)
    groups = frame.get_column(GROUP).n_unique()
    per_group = (
        frame.group_by(GROUP)
        .agg(pl.col("alarm").sum())
        .sort("alarm", GROUP, descending=[True, False])
    )
    drawn = per_group.head(MAX_PANELS).get_column(GROUP)
    where = f" per {', '.join(keys)}" if keys else ""
    rule = (
        f"thresholds {threshold:g}"
        if threshold is not None
        else f"thresholds simulated for an in-control run of {ARL0:,.0f} rows per chart"
    )
    intro = (
        f"Risk-adjusted CUSUM charts{where}, rows in {time} order (polars_calib.monitor: "
        f"odds ratios 2 and 0.5, {rule}; a chart restarts at 0 after each alarm): "
        f"{alarms.height:,} alarms in {groups:,} groups. The charts watching for "
        "under-prediction (R = 2) are drawn above zero, those watching for "
        "over-prediction (R = 0.5) below it; dashed lines are the thresholds, red "
        "triangles the alarms."
    )
    if groups > MAX_PANELS:
        intro += f" The {MAX_PANELS} groups with the most alarms are drawn."
    if alarms.height > MAX_ALARMS:
        intro += f" The table lists the first {MAX_ALARMS:,} alarms."
    chart = None
    if has_charts() and frame.height:
        shown = ChartRows(frame.filter(pl.col(GROUP).is_in(drawn.implode())), keys, time)
        chart = draw(cusum_frame(shown, "CUSUM charts"), "altair", "html_report")
    alt_text = f"CUSUM charts{where} over {time}, with their thresholds and alarms."
    return Section("drift", "Drift", intro, alarms.head(MAX_ALARMS), chart, alt_text)
