"""A metric of :func:`polars_calib.monitor_windows` per window, its control limits as a band.

The windows table is drawn by :func:`polars_calib.plot_metric_over_time`'s chart: the
band is the group's control limits (not the metric's interval) and the windows the
table flags are marked. Nothing is computed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import check_choice
from polars_calib._plot.common import ALERT, BACKENDS, checked_table
from polars_calib._plot.over_time import plot_metric_over_time

__all__ = ["plot_monitor_windows"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure


@overload
def plot_monitor_windows(
    table: pl.DataFrame,
    metric: str,
    time: str,
    *,
    backend: Literal["altair"] = ...,
    by: Keys = ...,
    title: str | None = ...,
    facet: str | None = ...,
) -> alt.LayerChart | alt.FacetChart: ...


@overload
def plot_monitor_windows(
    table: pl.DataFrame,
    metric: str,
    time: str,
    *,
    backend: Literal["matplotlib"],
    by: Keys = ...,
    title: str | None = ...,
    facet: str | None = ...,
) -> Figure: ...


def plot_monitor_windows(
    table: pl.DataFrame,
    metric: str,
    time: str,
    *,
    backend: str = "altair",
    by: Keys = None,
    title: str | None = None,
    facet: str | None = None,
) -> alt.LayerChart | alt.FacetChart | Figure:
    """Draw a monitored metric per window, its control limits as a band, alerts marked.

    One line per group, as :func:`plot_metric_over_time` draws a summary over time:
    the shaded band is the group's control limits (``<metric>_lower_limit`` to
    ``<metric>_upper_limit``; none where they are null), and every window whose
    ``<metric>_alert`` is true is a red triangle. An empty window (null metric) is a
    gap.

    Parameters
    ----------
    table
        A table of :func:`polars_calib.monitor_windows` (collected).
    metric
        ``"ece"``, ``"spiegelhalter_z"`` or ``"oe_ratio"``: a metric with limits.
    time
        The column of window starts (`monitor_windows`' `time`).
    backend
        ``"altair"`` (default) or ``"matplotlib"``.
    by, title, facet
        As :func:`plot_metric_over_time`; the table's keys are its columns before
        `time`. The title is ``"<metric> per window, control limits shaded"`` by
        default.

    Returns
    -------
    altair.LayerChart or altair.FacetChart or matplotlib.figure.Figure
        As :func:`plot_metric_over_time`.

    Raises
    ------
    ImportError
        When the plotting library is not installed.
    TypeError
        When `table` is not a DataFrame.
    ValueError
        When a column is missing (not a windows table, or a metric without limits).

    See Also
    --------
    polars_calib.monitor_windows, plot_metric_over_time, polars_calib.plot_cusum

    Examples
    --------
    >>> from datetime import date
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "day": [date(2026, 9, d) for d in (1, 1, 2, 2, 3, 3, 4, 4)],
    ...     "p": [0.2, 0.6] * 4,
    ...     "y": [0, 1, 0, 1, 1, 0, 1, 1],
    ... })
    >>> windows = pc.monitor_windows(
    ...     log, "p", "y", time="day", every="1d", reference=pl.col("day") < date(2026, 9, 4)
    ... )
    >>> type(pc.plot_monitor_windows(windows, "oe_ratio", "day")).__name__
    'LayerChart'
    """
    limits = (f"{metric}_lower_limit", f"{metric}_upper_limit", f"{metric}_alert")
    columns = (time, "count", metric, *limits)
    windows = checked_table(table, columns, "monitor_windows table", "monitor_windows")
    keys = windows.columns[: windows.columns.index(time)]
    frame = windows.select(
        *keys,
        time,
        "count",
        metric,
        pl.col(limits[0]).alias(f"{metric}_lower"),
        pl.col(limits[1]).alias(f"{metric}_upper"),
        pl.col(limits[2]).fill_null(False).alias(ALERT),
    )
    title = f"{metric} per window, control limits shaded" if title is None else title
    check_choice("backend", backend, BACKENDS)
    if backend == "matplotlib":
        return plot_metric_over_time(
            frame, metric, time, backend="matplotlib", by=by, title=title, facet=facet
        )
    return plot_metric_over_time(frame, metric, time, by=by, title=title, facet=facet)
