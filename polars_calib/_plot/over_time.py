"""A summary metric drawn over time windows, one line per group, its interval as a band."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import check_choice
from polars_calib._plot import altair_backend, matplotlib_backend
from polars_calib._plot.common import (
    ALERT,
    BACKENDS,
    GROUP,
    PANEL,
    OverTimeFrame,
    default_layout,
    group_label,
    keyed,
    labelled,
    require,
    window_ticks,
)

__all__ = ["plot_metric_over_time"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure


@overload
def plot_metric_over_time(
    summary: pl.DataFrame,
    metric: str,
    time: str,
    *,
    backend: Literal["altair"] = ...,
    by: Keys = ...,
    title: str | None = ...,
    facet: str | None = ...,
) -> alt.LayerChart | alt.FacetChart: ...


@overload
def plot_metric_over_time(
    summary: pl.DataFrame,
    metric: str,
    time: str,
    *,
    backend: Literal["matplotlib"],
    by: Keys = ...,
    title: str | None = ...,
    facet: str | None = ...,
) -> Figure: ...


def plot_metric_over_time(
    summary: pl.DataFrame,
    metric: str,
    time: str,
    *,
    backend: str = "altair",
    by: Keys = None,
    title: str | None = None,
    facet: str | None = None,
) -> alt.LayerChart | alt.FacetChart | Figure:
    """Draw a summary metric over time windows, one line per group, its interval as a band.

    With several group keys and neither `by` nor `facet` given, the chart is laid
    out by :func:`plot_reliability`'s rule (:func:`default_layout`): one panel per
    value of the last key when it has at most ``MAX_FACETS`` (4) values, coloured
    by the other keys combined; otherwise one panel, one colour per group. A
    window whose metric (or bound) is null, NaN or infinite is a gap in its line
    (or band), not a point. Hovering a point shows its group, window, value,
    bounds and row count. The HTML report draws its metric over time with this
    function.

    Parameters
    ----------
    summary
        A summary table (:func:`polars_calib.summary` with `time` and `every`,
        collected): the `time` column, the group keys, the `metric` column and,
        when the summary computed intervals (``confidence=``), ``<metric>_lower``
        and ``<metric>_upper``, drawn as a shaded band. Nothing is computed here.
    metric
        The column to draw, such as ``"ece"``, ``"brier"`` or ``"confidence_ece"``.
    time
        The column of window starts.
    backend
        ``"altair"`` (default) or ``"matplotlib"``.
    by
        Column(s) giving one colour per group: names or expressions of the
        summary's columns, as a summary's `by`. By default every column before
        ``count`` other than `time` (the summary's group keys), other than
        `facet` or the default facet.
    title
        Title of the chart; ``"<metric> over time"`` by default.
    facet
        Column with one panel per value, side by side, on a shared metric axis.
        By default none, except with several keys and `by` not given: the last
        key, when it has at most ``MAX_FACETS`` values.

    Returns
    -------
    altair.LayerChart or altair.FacetChart or matplotlib.figure.Figure
        The chart (a ``FacetChart`` of the layers with panels); save it with
        :func:`save_png`.

    Raises
    ------
    ImportError
        When the plotting library is not installed.
    TypeError
        When `summary` is not a DataFrame.
    ValueError
        When a column is missing.

    See Also
    --------
    polars_calib.summary, plot_reliability, polars_calib.html_report

    Examples
    --------
    >>> from datetime import date
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> summary = pl.DataFrame({
    ...     "model": ["a", "a", "b", "b"],
    ...     "day": [date(2024, 3, 1), date(2024, 3, 2)] * 2,
    ...     "count": [500, 480, 510, 490],
    ...     "ece": [0.031, 0.045, 0.020, 0.024],
    ...     "ece_lower": [0.022, 0.033, 0.013, 0.016],
    ...     "ece_upper": [0.048, 0.066, 0.035, 0.039],
    ... })
    >>> type(pc.plot_metric_over_time(summary, "ece", "day")).__name__
    'LayerChart'
    >>> type(pc.plot_metric_over_time(summary, "ece", "day", facet="model")).__name__
    'FacetChart'
    >>> type(pc.plot_metric_over_time(summary, "ece", "day", backend="matplotlib")).__name__
    'Figure'
    """
    check_choice("backend", backend, BACKENDS)
    drawn = _drawing_frame(summary, metric, time, by, facet, title)
    if backend == "altair":
        require("altair", "plot_metric_over_time(backend='altair')")
        return altair_backend.over_time(drawn)
    require("matplotlib", "plot_metric_over_time(backend='matplotlib')")
    return matplotlib_backend.over_time(drawn)


def _layout(
    summary: pl.DataFrame, time: str, by: Keys, facet: str | None
) -> tuple[pl.DataFrame, list[str], str | None]:
    """The colour keys and the facet column: as given, else by :func:`default_layout`.

    The summary's group keys are its columns before ``count``, other than `time`.
    """
    if facet is not None and not isinstance(facet, str):
        msg = f"`facet` must be a column name, got {facet!r}"
        raise TypeError(msg)
    summary, keys = keyed(summary, by, "summary")
    if keys is not None:
        return summary, keys, facet
    before = summary.columns[: summary.columns.index("count")] if "count" in summary.columns else []
    found = [name for name in before if name != time]
    if facet is None:
        return summary, *default_layout(summary, found)
    return summary, [name for name in found if name != facet], facet


def _drawing_frame(
    summary: pl.DataFrame,
    metric: str,
    time: str,
    by: Keys,
    facet: str | None,
    title: str | None,
) -> OverTimeFrame:
    """Check the summary and lay it out: the frame a backend draws, in group order."""
    if not isinstance(summary, pl.DataFrame):
        msg = f"`summary` must be a summary table (a DataFrame), got {type(summary).__name__}"
        raise TypeError(msg)
    summary, keys, facet = _layout(summary, time, by, facet)
    missing = [
        name
        for name in (time, metric, *keys, *([facet] if facet else []))
        if name not in summary.columns
    ]
    if missing:
        msg = f"`summary` has no column {missing[0]!r}"
        raise ValueError(msg)
    if facet is not None and facet in keys:
        msg = f"`facet` column {facet!r} is also a `by` column"
        raise ValueError(msg)
    lower, upper = f"{metric}_lower", f"{metric}_upper"
    band = lower in summary.columns and upper in summary.columns
    # Non-finite values are nulls: gaps in the line and band (and valid JSON).
    finite = [
        pl.when(pl.col(name).is_finite()).then(pl.col(name)).cast(pl.Float64).alias(name)
        for name in (metric, *((lower, upper) if band else ()))
    ]
    carried = [name for name in ("count", ALERT) if name in summary.columns]
    frame = labelled(summary, keys, group_label(keys, metric), GROUP)
    if facet:
        frame = labelled(frame, [facet], group_label([facet], ""), PANEL)
    frame = frame.select(pl.col(time), *finite, *carried, GROUP, *([PANEL] if facet else []))
    order = frame.get_column(GROUP).unique(maintain_order=True).to_list()
    return OverTimeFrame(
        frame=frame.sort(GROUP, time, maintain_order=True),
        metric=metric,
        time=time,
        keys=keys,
        facet=facet,
        order=order,
        band=band,
        counted="count" in carried,
        title=f"{metric} over time" if title is None else title,
        ticks=window_ticks(summary.get_column(time)),
    )
