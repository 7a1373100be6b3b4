"""The Altair backend: the reliability diagram, the metric over time and the forest plot.

Each function draws a frame its chart module has checked and laid out (see
:mod:`polars_calib._plot`); Altair is imported when a chart is drawn.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import polars as pl

from polars_calib._plot.common import (
    ALERT,
    BAR_LOWER,
    BAR_UPPER,
    BIN_TITLE,
    COUNT_TITLE,
    DENSITY_TITLE,
    FOREST_KIND,
    FOREST_LOWER,
    FOREST_UPPER,
    GROUP,
    LABEL,
    LEVEL_TITLE,
    OBSERVED_TITLE,
    ORDER_TITLE,
    PANEL,
    ROW_HEIGHT,
    SERIES,
    SMALL,
    UNIFORM_LABEL,
    X_TITLE,
    Y_TITLE,
    OverTimeFrame,
    PitFrame,
    date_time,
    escape,
    palette,
)

__all__ = ["drift", "forest", "over_time", "pit_histogram", "quantile_reliability", "reliability"]

P = ParamSpec("P")
C = TypeVar("C")

if TYPE_CHECKING:
    import altair as alt

    from polars_calib._plot.drift import DriftFrame


def _embedded(draw: Callable[P, C]) -> Callable[P, C]:
    """`draw`, its chart's data frames moved to named datasets of its top level.

    Altair refuses to show a chart that embeds a data frame of more than 5,000 rows
    (``MaxRowsError``, raised by ``to_dict``, which a notebook calls to show it). A
    chart of many groups draws more by design (a drift chart keeps about `max_points`
    rows a panel; a quantile diagram 100 levels a group), so the frames are written as
    Altair writes them, into the chart's ``datasets`` (one copy a frame).
    """

    @functools.wraps(draw)
    def drawn(*args: P.args, **kwargs: P.kwargs) -> C:
        chart: Any = draw(*args, **kwargs)
        chart = chart.copy(deep=True)
        datasets: dict[str, list[dict[str, Any]]] = {}
        _name_frames(chart, datasets)
        return cast("C", chart.properties(datasets=datasets) if datasets else chart)

    return drawn


def _name_frames(node: Any, datasets: dict[str, list[dict[str, Any]]]) -> None:
    """Replace each data frame of `node` and its parts by a named dataset."""
    import altair as alt

    if isinstance(getattr(node, "data", None), pl.DataFrame):
        name, values = _dataset(node.data)
        node.data = alt.NamedData(name=name)
        datasets[name] = values
    for part in ("layer", "hconcat", "vconcat", "concat"):
        children: Any = getattr(node, part, alt.Undefined)
        for child in [] if children is alt.Undefined else children:
            _name_frames(child, datasets)
    spec = getattr(node, "spec", alt.Undefined)
    if spec is not alt.Undefined:
        _name_frames(spec, datasets)


def _dataset(frame: pl.DataFrame) -> tuple[str, list[dict[str, Any]]]:
    """`frame` as JSON rows and a name from their hash, as Altair names its datasets.

    Temporal columns become the strings Altair writes for a data frame (local ISO
    times: a Date at midnight, a Datetime with its fraction and its zone's offset).
    """
    iso = []
    for name, dtype in frame.schema.items():
        if dtype == pl.Date:
            iso.append(pl.col(name).cast(pl.Datetime).dt.to_string("%Y-%m-%dT%H:%M:%S"))
        elif isinstance(dtype, pl.Datetime):
            zone = "%z" if dtype.time_zone is not None else ""
            iso.append(pl.col(name).dt.to_string(f"%Y-%m-%dT%H:%M:%S%.f{zone}"))
    values = frame.with_columns(iso).to_dicts()
    digest = hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()
    return f"data-{digest[:32]}", values


@_embedded
def reliability(
    frame: pl.DataFrame,
    groups: list[str],
    facet: str | None,
    facets: list[object],
    legend_title: str,
    title: str,
) -> alt.VConcatChart | alt.HConcatChart:
    """The diagram over its histogram, one panel per facet value (see ``plot_reliability``)."""
    import altair as alt

    order = frame.get_column(GROUP).unique(maintain_order=True).to_list()
    colour: Any = (  # a field encoding, or one constant colour without groups
        alt.Color(
            f"{GROUP}:N",
            title=legend_title,
            sort=order,
            legend=alt.Legend(orient="right"),
            scale=_colours(order),
        )
        if groups
        else alt.value("#1f77b4")
    )
    tooltip = [
        *[alt.Tooltip(field=escape(name), type="nominal", title=name) for name in groups],
        alt.Tooltip("bin:O"),
        alt.Tooltip("lower:Q", format=".3f"),
        alt.Tooltip("upper:Q", format=".3f"),
        alt.Tooltip("count:Q"),
        alt.Tooltip("mean_predicted:Q", format=".3f"),
        alt.Tooltip("observed:Q", format=".3f"),
        alt.Tooltip("observed_lower:Q", format=".3f"),
        alt.Tooltip("observed_upper:Q", format=".3f"),
    ]
    chart_title = alt.TitleParams(title, anchor="middle", fontSize=15, offset=12)
    if facet is None:
        panel = _reliability_panel(frame, None, colour, tooltip)
        return panel.properties(title=chart_title)
    panels = [
        _reliability_panel(
            frame.filter(pl.col(facet).eq_missing(value)),
            f"{facet} = {value}",
            colour,
            tooltip,
        )
        for value in facets
    ]
    return alt.hconcat(*panels, spacing=24).properties(title=chart_title)


def _colours(order: list[Any]) -> Any:
    """The colour scale of `order`'s groups: Vega's ten by default, more when needed."""
    import altair as alt

    return alt.Scale(domain=order, range=palette(len(order))) if len(order) > 10 else alt.Undefined


def _reliability_panel(
    data: pl.DataFrame, panel_title: str | None, colour: Any, tooltip: list[Any]
) -> alt.VConcatChart:
    """One panel: the diagonal, curve, whiskers and points over the histogram."""
    import altair as alt

    unit = alt.Scale(domain=[0.0, 1.0], nice=False)
    x = alt.X("mean_predicted:Q", scale=unit, title=X_TITLE)
    y = alt.Y("observed:Q", scale=unit, title=Y_TITLE)
    diagonal = (
        alt.Chart(pl.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]}))
        .mark_line(color="gray", strokeDash=[4, 4], strokeWidth=1)
        .encode(x=alt.X("x:Q", scale=unit), y=alt.Y("y:Q", scale=unit))
        .properties(description="diagonal: perfect calibration")
    )
    base = alt.Chart(data)
    curve = (
        base.mark_line(strokeWidth=1.5, opacity=0.7)
        .encode(x=x, y=y, color=colour, order=alt.Order("mean_predicted:Q"))
        .properties(description="curve: observed against mean predicted")
    )
    error_bars = (
        base.mark_errorbar(ticks=True)
        .encode(
            x=x,
            y=alt.Y("observed_lower:Q", scale=unit, title=Y_TITLE),
            y2="observed_upper:Q",
            color=colour,
        )
        .properties(description="error bars: confidence interval of the observed frequency")
    )
    points = (
        base.mark_point(filled=True, size=45, opacity=1.0)
        .encode(x=x, y=y, color=colour, tooltip=tooltip)
        .properties(description="points: one per non-empty bin")
    )
    diagram = alt.layer(diagonal, curve, error_bars, points).properties(width=360, height=360)
    if panel_title is not None:
        diagram = diagram.properties(title=panel_title)
    histogram = (
        base.mark_bar(opacity=0.85)
        .encode(
            x=alt.X(f"{BAR_LOWER}:Q", scale=unit, title=BIN_TITLE),
            x2=f"{BAR_UPPER}:Q",
            y=alt.Y("count:Q", title=COUNT_TITLE),
            y2=alt.datum(0),
            color=colour,
            tooltip=tooltip,
        )
        .properties(description="histogram: count per bin", width=360, height=110)
    )
    return alt.vconcat(diagram, histogram, spacing=8)


@_embedded
def quantile_reliability(
    frame: pl.DataFrame,
    groups: list[str],
    facet: str | None,
    facets: list[object],
    legend_title: str,
    title: str,
) -> alt.LayerChart | alt.HConcatChart:
    """The curve per group over the diagonal, its interval as a band, one panel per facet."""
    import altair as alt

    order = frame.get_column(GROUP).unique(maintain_order=True).to_list()
    colour: Any = (
        alt.Color(
            f"{GROUP}:N",
            title=legend_title,
            sort=order,
            # matplotlib's colours, as the PIT histogram's and the other backend's
            scale=alt.Scale(domain=order, range=palette(len(order))),
            legend=alt.Legend(symbolOpacity=1.0),
        )
        if groups
        else alt.value("#1f77b4")
    )
    tooltip = [
        *[alt.Tooltip(field=escape(name), type="nominal", title=name) for name in groups],
        alt.Tooltip("level:Q", format=".4f"),
        alt.Tooltip("observed:Q", format=".4f"),
        alt.Tooltip("lower:Q", format=".4f"),
        alt.Tooltip("upper:Q", format=".4f"),
        alt.Tooltip("count:Q", format=","),
    ]
    chart_title = alt.TitleParams(title, anchor="middle", fontSize=15, offset=12)
    if facet is None:
        return _quantile_panel(frame, colour, tooltip).properties(title=chart_title)
    panels = [
        _quantile_panel(frame.filter(pl.col(facet).eq_missing(value)), colour, tooltip).properties(
            title=f"{facet} = {value}"
        )
        for value in facets
    ]
    return alt.hconcat(*panels, spacing=24).properties(title=chart_title)


def _quantile_panel(data: pl.DataFrame, colour: Any, tooltip: list[Any]) -> alt.LayerChart:
    """One panel: the diagonal, and per group the band, the curve and its points."""
    import altair as alt

    unit = alt.Scale(domain=[0.0, 1.0], nice=False)
    x = alt.X("level:Q", scale=unit, title=LEVEL_TITLE)
    y = alt.Y("observed:Q", scale=unit, title=OBSERVED_TITLE)
    diagonal = (
        alt.Chart(pl.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]}))
        .mark_line(color="gray", strokeDash=[4, 4], strokeWidth=1)
        .encode(x=alt.X("x:Q", scale=unit), y=alt.Y("y:Q", scale=unit))
        .properties(description="diagonal: perfect calibration")
    )
    base = alt.Chart(data)
    band = (
        base.mark_area(opacity=0.18, invalid=None)
        .encode(
            x=x,
            y=alt.Y("lower:Q", scale=unit, title=OBSERVED_TITLE),
            y2="upper:Q",
            color=colour,
        )
        .properties(description="band: interval of the observed frequency")
    )
    curve = (
        base.mark_line(strokeWidth=1.5, invalid=None)
        .encode(x=x, y=y, color=colour, order=alt.Order("level:Q"))
        .properties(description="curve: observed frequency against nominal level")
    )
    points = (
        base.mark_point(filled=True, size=14, opacity=1.0)
        .encode(x=x, y=y, color=colour, tooltip=tooltip)
        .properties(description="points: one per level")
    )
    chart = alt.layer(diagonal, band, curve, points).properties(width=360, height=360)
    return cast("alt.LayerChart", chart)


@_embedded
def pit_histogram(drawn: PitFrame) -> alt.LayerChart | alt.HConcatChart:
    """The density bars per group over the uniform line; one panel, and legend, per facet."""
    import altair as alt

    frame, facet = drawn.frame, drawn.facet
    colours = dict(zip(drawn.order, palette(len(drawn.order))))
    chart_title = alt.TitleParams(drawn.title, anchor="middle", fontSize=15, offset=12)
    if facet is None:
        return _pit_panel(frame, drawn, colours).properties(title=chart_title)
    panels = [
        _pit_panel(frame.filter(pl.col(PANEL) == label), drawn, colours).properties(
            title=f"{facet} = {label}"
        )
        for label in frame.get_column(PANEL).unique(maintain_order=True).to_list()
    ]
    # Each panel's legend gives its groups' tests; the colours are the groups' own.
    chart = alt.hconcat(*panels, spacing=24).resolve_scale(color="independent")
    return cast("alt.HConcatChart", chart.properties(title=chart_title))


def _pit_panel(data: pl.DataFrame, drawn: PitFrame, colours: dict[str, str]) -> alt.LayerChart:
    """One panel: each group's bars (its legend entry names its test), the uniform line."""
    import altair as alt

    entries = data.select(GROUP, LABEL).unique(maintain_order=True)
    scale = alt.Scale(
        domain=entries.get_column(LABEL).to_list(),
        range=[colours[group] for group in entries.get_column(GROUP).to_list()],
    )
    colour = alt.Color(
        f"{LABEL}:N",
        title=drawn.legend,
        scale=scale,
        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0, titleLimit=0),
    )
    tooltip = [
        *([alt.Tooltip(f"{GROUP}:N", title=" / ".join(drawn.groups))] if drawn.groups else []),
        alt.Tooltip("lower:Q", format=".4f"),
        alt.Tooltip("upper:Q", format=".4f"),
        alt.Tooltip("count:Q", format=","),
        alt.Tooltip("weight:Q", format=",.4g"),
        alt.Tooltip("share:Q", format=".4f"),
        alt.Tooltip("density:Q", format=".3f"),
    ]
    unit = alt.Scale(domain=[0.0, 1.0], nice=False)
    bars = (
        alt.Chart(data)
        .mark_bar(opacity=0.85)
        .encode(
            x=alt.X(f"{BAR_LOWER}:Q", scale=unit, title=drawn.x_title),
            x2=f"{BAR_UPPER}:Q",
            y=alt.Y("density:Q", title=DENSITY_TITLE),
            y2=alt.datum(0),
            color=colour,
            tooltip=tooltip,
        )
        .properties(description="bars: share of weight per bin over the bin's width")
    )
    uniform = (
        alt.Chart(pl.DataFrame({"density": [1.0], "label": [UNIFORM_LABEL]}))
        .mark_rule(color="gray", strokeDash=[4, 4], strokeWidth=1)
        .encode(y="density:Q", tooltip=["label:N"])
        .properties(description="line: the uniform density 1 of calibrated predictions")
    )
    chart = alt.layer(bars, uniform).properties(width=420, height=260)
    return cast("alt.LayerChart", chart)


@_embedded
def over_time(drawn: OverTimeFrame) -> alt.LayerChart | alt.FacetChart:
    """The metric's lines (and band) per window, one panel per facet value."""
    import altair as alt

    frame, metric, time, facet = drawn.frame, drawn.metric, drawn.time, drawn.facet
    (lower, upper), band, legend = drawn.bounds, drawn.band, drawn.legend
    x = alt.X(f"{escape(time)}:T", title=f"{time} (window start)", axis=_time_axis(drawn.ticks))
    colour: Any = (
        alt.Color(f"{GROUP}:N", title=legend or None, sort=drawn.order, scale=_colours(drawn.order))
        if drawn.keys
        else alt.value("#1f77b4")
    )
    tooltip = [
        *([alt.Tooltip(f"{GROUP}:N", title=legend)] if drawn.keys else []),
        *([alt.Tooltip(f"{PANEL}:N", title=facet)] if facet else []),
        alt.Tooltip(f"{escape(time)}:T", title=time),
        alt.Tooltip(f"{escape(metric)}:Q", format=".4f", title=metric),
        *(
            alt.Tooltip(f"{escape(name)}:Q", format=".4f", title=name)
            for name in ((lower, upper) if band else ())
        ),
        *([alt.Tooltip("count:Q", format=",", title="count")] if drawn.counted else []),
    ]
    base = alt.Chart(frame)
    line = base.mark_line(point=True, invalid=None).encode(
        x=x, y=alt.Y(f"{escape(metric)}:Q", title=metric), color=colour, tooltip=tooltip
    )
    layers: list[Any] = [line]
    if band:
        area = base.mark_area(opacity=0.2, invalid=None).encode(
            x=x,
            y=alt.Y(f"{escape(lower)}:Q", title=metric),
            y2=alt.Y2(f"{escape(upper)}:Q"),
            color=colour,
        )
        layers = [area, line]
    if ALERT in frame.columns and frame.get_column(ALERT).any():
        alerts = (
            base.mark_point(shape="triangle-up", filled=True, size=70, color="#d62728", opacity=1)
            .encode(x=x, y=alt.Y(f"{escape(metric)}:Q", title=metric), tooltip=tooltip)
            .transform_filter(f"datum.{ALERT}")
            .properties(description="triangles: the alerts")
        )
        layers.append(alerts)
    if facet is None:
        return alt.LayerChart(layer=layers, title=drawn.title, width=480, height=260)
    panels = frame.get_column(PANEL).unique(maintain_order=True).to_list()
    layered = alt.LayerChart(layer=layers, width=300, height=220)
    return layered.facet(
        column=alt.Column(f"{PANEL}:N", title=facet, sort=panels), title=drawn.title
    )


def _time_axis(ticks: list[Any]) -> Any:
    """A time axis ticked on window starts (its own ticks put weeks on Sundays).

    Local midnights (naive datetimes, dates) are labelled as days, ``Mar 04``.
    """
    import altair as alt

    if not ticks:
        return alt.Undefined
    days = all(
        not isinstance(tick, dt.datetime) or (tick.tzinfo is None and tick.time() == dt.time(0))
        for tick in ticks
    )
    values = [date_time(tick) for tick in ticks]
    return alt.Axis(values=values, format="%b %d") if days else alt.Axis(values=values)


@_embedded
def forest(frame: pl.DataFrame, overall: float | None, column: str, title: str) -> alt.LayerChart:
    """One row per slice: its interval, its point (hollow when small), the overall line."""
    import altair as alt

    order = frame.get_column("slice").to_list()
    kinds = frame.get_column(FOREST_KIND).unique(maintain_order=True).sort().to_list()
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    palette = [
        "#bbbbbb" if kind == SMALL else colours[index % len(colours)]
        for index, kind in enumerate(kinds)
    ]
    colour = alt.Color(
        f"{FOREST_KIND}:N",
        title=ORDER_TITLE,
        scale=alt.Scale(domain=kinds, range=palette),
    )
    # Whole slice names (labelLimit 0): a cut label can name another slice.
    y = alt.Y("slice:N", sort=order, title=None, axis=alt.Axis(labelLimit=0))
    tooltip = [
        alt.Tooltip("slice:N"),
        alt.Tooltip("count:Q"),
        alt.Tooltip(f"{column}:Q", format=".4f"),
        alt.Tooltip(f"{FOREST_LOWER}:Q", format=".4f", title="lower"),
        alt.Tooltip(f"{FOREST_UPPER}:Q", format=".4f", title="upper"),
    ]
    axis = alt.Axis(tickCount=8, labelOverlap=True)
    base = alt.Chart(frame)
    intervals = base.mark_rule(strokeWidth=1.5).encode(
        x=alt.X(f"{FOREST_LOWER}:Q", title=column, axis=axis),
        x2=f"{FOREST_UPPER}:Q",
        y=y,
        color=colour,
    )
    x = alt.X(f"{column}:Q", title=column, axis=axis)
    points = (
        base.mark_point(size=50, opacity=1.0, filled=True)
        .encode(x=x, y=y, color=colour, tooltip=tooltip)
        .transform_filter("!datum.too_small")
    )
    hollow = (  # the small slices: an open grey circle
        base.mark_point(size=50, opacity=1.0, filled=False)
        .encode(x=x, y=y, color=colour, tooltip=tooltip)
        .transform_filter("datum.too_small")
    )
    # A layer only where it has rows: an empty one has no extent (a Vega warning).
    small = frame.get_column("too_small")
    bounded = frame.get_column(FOREST_LOWER).is_not_null().any()
    layers: list[Any] = [
        *([intervals] if bounded else []),
        *([points] if (~small).any() else []),
        *([hollow] if small.any() else []),
    ]
    if overall is not None:
        line = pl.DataFrame({column: [overall], "label": [f"overall {column} {overall:.4f}"]})
        layers.insert(
            0,
            alt.Chart(line)
            .mark_rule(color="gray", strokeDash=[4, 4])
            .encode(x=f"{column}:Q", tooltip=["label:N"]),
        )
    height = max(ROW_HEIGHT * len(order), 60)
    chart_title = alt.TitleParams(title, anchor="middle", fontSize=15, offset=12)
    chart = alt.layer(*layers).properties(width=420, height=height, title=chart_title)
    return cast("alt.LayerChart", chart)


@_embedded
def drift(drawn: DriftFrame) -> alt.LayerChart | alt.FacetChart:
    """Running charts: per panel a line per series, dashed thresholds, alarm triangles."""
    import altair as alt

    frame, time = drawn.frame, drawn.time
    x = alt.X(f"{escape(time)}:{'T' if drawn.temporal else 'Q'}", title=time)
    y = alt.Y("value:Q", title=drawn.y_title)
    colour = alt.Color(
        f"{SERIES}:N",
        title=None,
        sort=drawn.series,
        scale=alt.Scale(domain=drawn.series, range=drawn.colours),
        legend=alt.Legend(orient="top"),
    )
    tooltip = [
        alt.Tooltip(f"{PANEL}:N", title="group"),
        alt.Tooltip(f"{escape(time)}:{'T' if drawn.temporal else 'Q'}", title=time),
        alt.Tooltip(f"{SERIES}:N", title="chart"),
        *(
            alt.Tooltip(f"{escape(name)}:{'T' if frame.schema[name].is_temporal() else 'Q'}")
            if frame.schema[name].is_temporal() or frame.schema[name].is_numeric()
            else alt.Tooltip(f"{escape(name)}:N")
            for name in drawn.tooltip
        ),
    ]
    base = alt.Chart()
    layers: list[Any] = [
        base.mark_rule(color="gray", strokeWidth=0.8).encode(y=alt.datum(0)),
        base.mark_line(strokeWidth=1.2).encode(x=x, y=y, color=colour, tooltip=tooltip),
    ]
    if frame.get_column("limit").is_not_null().any():
        layers.append(
            base.mark_rule(strokeDash=[5, 4], strokeWidth=1.2)
            .encode(y=alt.Y("limit:Q", aggregate="max", title=drawn.y_title), color=colour)
            .properties(description="dashed lines: the thresholds")
        )
    if frame.get_column("alarm").any():
        layers.append(
            base.mark_point(shape="triangle-up", filled=True, size=70, color="#d62728", opacity=1)
            .encode(x=x, y=y, tooltip=tooltip)
            .transform_filter("datum.alarm")
            .properties(description="triangles: the alarms")
        )
    if len(drawn.panels) == 1:
        chart = alt.layer(*layers, data=frame).properties(
            width=640, height=220, title=f"{drawn.title} ({drawn.panels[0]})"
        )
        return cast("alt.LayerChart", chart)
    layered = alt.layer(*layers, data=frame).properties(width=640, height=160)
    faceted = layered.facet(
        row=alt.Row(
            f"{PANEL}:N",
            sort=drawn.panels,
            title=None,
            header=alt.Header(labelAngle=0, labelAlign="left"),
        ),
        title=drawn.title,
    ).resolve_scale(y="independent")
    return cast("alt.FacetChart", faceted)
