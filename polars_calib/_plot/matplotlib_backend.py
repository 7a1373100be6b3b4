"""The matplotlib backend: the reliability diagram, the metric over time and the forest plot.

Each function draws a frame its chart module has checked and laid out (see
:mod:`polars_calib._plot`) on a ``Figure`` not registered with ``pyplot``; matplotlib is
imported when a chart is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from polars_calib._plot.common import (
    ALERT,
    BAR_LOWER,
    BAR_UPPER,
    BIN_TITLE,
    COUNT_TITLE,
    DENSITY_TITLE,
    DIAGONAL_LABEL,
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
    palette,
)

__all__ = ["drift", "forest", "over_time", "pit_histogram", "quantile_reliability", "reliability"]

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from polars_calib._plot.drift import DriftFrame


def reliability(
    frame: pl.DataFrame,
    groups: list[str],
    facet: str | None,
    facets: list[object],
    legend_title: str,
    title: str,
) -> Figure:
    """The diagram over its histogram, one column of panels per facet value."""
    from matplotlib.figure import Figure

    order = frame.get_column(GROUP).unique(maintain_order=True).to_list()
    colours = dict(zip(order, palette(len(order))))
    # The legend goes below the histograms, in as many columns as the width allows.
    legend_columns = min(len(order) + 1, 3 * len(facets))
    legend_rows = -(-(len(order) + 1) // legend_columns) + 1 if groups else 0
    figure = Figure(figsize=(5.4 * len(facets), 6.6 + 0.25 * legend_rows), layout="constrained")
    axes = figure.subplots(2, len(facets), squeeze=False, gridspec_kw={"height_ratios": [3.2, 1.0]})
    for column, value in enumerate(facets):
        diagram, histogram = axes[0, column], axes[1, column]
        data = frame if facet is None else frame.filter(pl.col(facet).eq_missing(value))
        diagram.plot(
            [0.0, 1.0],
            [0.0, 1.0],
            linestyle="--",
            linewidth=1,
            color="gray",
            label=DIAGONAL_LABEL,
        )
        for name in order:
            rows = data.filter(pl.col(GROUP) == name)
            label = name if groups else "observed"
            _reliability_group(diagram, histogram, rows, colours[name], label)
        diagram.set_xlim(0.0, 1.0)
        diagram.set_ylim(0.0, 1.0)
        diagram.grid(True, linewidth=0.5, alpha=0.4)
        diagram.set_xlabel(X_TITLE)
        diagram.set_ylabel(Y_TITLE)
        if facet is not None:
            diagram.set_title(f"{facet} = {value}")
        histogram.set_xlim(0.0, 1.0)
        histogram.grid(True, axis="y", linewidth=0.5, alpha=0.4)
        histogram.set_xlabel(BIN_TITLE)
        histogram.set_ylabel(COUNT_TITLE)
    # One legend entry per group, whichever panel it first appears in.
    entries: dict[str, Any] = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    rank = {label: index for index, label in enumerate([DIAGONAL_LABEL, *order])}
    labels = sorted(entries, key=lambda label: rank.get(label, len(rank)))
    handles = [entries[label] for label in labels]
    if groups:
        figure.legend(
            handles,
            labels,
            title=legend_title,
            loc="outside lower center",
            ncols=legend_columns,
            frameon=False,
        )
    else:
        axes[0, 0].legend(handles, labels, loc="upper left")
    figure.suptitle(title)
    return figure


def _reliability_group(
    diagram: Any, histogram: Any, rows: pl.DataFrame, colour: str, label: str
) -> None:
    """One group's bars on the histogram, and its points with whiskers on the diagram."""
    bars = rows.filter(pl.col("count") > 0)
    histogram.bar(
        bars.get_column(BAR_LOWER).to_list(),
        bars.get_column("count").to_list(),
        width=(bars.get_column(BAR_UPPER) - bars.get_column(BAR_LOWER)).to_list(),
        align="edge",
        color=colour,
        alpha=0.85,
    )
    points = rows.filter(pl.col("mean_predicted").is_not_null()).sort("mean_predicted")
    if points.is_empty():
        return
    # Whisker lengths, never negative: a table whose interval misses its
    # estimate by an ulp (or was computed elsewhere) still draws; a missing
    # bound draws no whisker.
    whiskers = points.select(
        below=(pl.col("observed") - pl.col("observed_lower")).clip(lower_bound=0.0),
        above=(pl.col("observed_upper") - pl.col("observed")).clip(lower_bound=0.0),
    ).fill_null(0.0)
    diagram.errorbar(
        points.get_column("mean_predicted").to_list(),
        points.get_column("observed").to_list(),
        yerr=[whiskers.get_column(side).to_list() for side in ("below", "above")],
        fmt="o-",
        markersize=4,
        linewidth=1.5,
        capsize=2.5,
        elinewidth=1,
        color=colour,
        label=label,
    )


def quantile_reliability(
    frame: pl.DataFrame,
    groups: list[str],
    facet: str | None,
    facets: list[object],
    legend_title: str,
    title: str,
) -> Figure:
    """The curve per group over the diagonal, its interval as a band, one axes per facet."""
    from matplotlib.figure import Figure

    order = frame.get_column(GROUP).unique(maintain_order=True).to_list()
    colours = dict(zip(order, palette(len(order))))
    figure = Figure(figsize=(1.0 + 4.4 * len(facets), 5.0), layout="constrained")
    grid = figure.subplots(1, len(facets), squeeze=False, sharey=True)
    for axes, value in zip(grid[0], facets):
        data = frame if facet is None else frame.filter(pl.col(facet).eq_missing(value))
        axes.plot([0.0, 1.0], [0.0, 1.0], "--", linewidth=1, color="gray", label=DIAGONAL_LABEL)
        for name in order:
            rows = data.filter(pl.col(GROUP) == name)
            if rows.height == 0:
                continue
            levels = rows.get_column("level").to_numpy()
            # Nulls as NaN: matplotlib breaks the line and the band there.
            axes.fill_between(
                levels,
                rows.get_column("lower").to_numpy(),
                rows.get_column("upper").to_numpy(),
                color=colours[name],
                alpha=0.18,
                linewidth=0,
            )
            axes.plot(
                levels,
                rows.get_column("observed").to_numpy(),
                ".-",
                markersize=3,
                linewidth=1.5,
                color=colours[name],
                label=name,
            )
        axes.set_xlim(0.0, 1.0)
        axes.set_ylim(0.0, 1.0)
        axes.grid(True, linewidth=0.5, alpha=0.4)
        axes.set_xlabel(LEVEL_TITLE)
        if facet is not None:
            axes.set_title(f"{facet} = {value}")
    grid[0, 0].set_ylabel(OBSERVED_TITLE)
    entries: dict[str, Any] = {}  # every panel's groups, once each
    for axes in grid[0]:
        for handle, label in zip(*axes.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    grid[0, -1].legend(
        list(entries.values()), list(entries), title=legend_title or None, loc="upper left"
    )
    figure.suptitle(title)
    return figure


def pit_histogram(drawn: PitFrame) -> Figure:
    """The density bars per group over the uniform line; one axes, and legend, per facet."""
    from matplotlib.figure import Figure

    frame, facet = drawn.frame, drawn.facet
    colours = dict(zip(drawn.order, palette(len(drawn.order))))
    panels = frame.get_column(PANEL).unique(maintain_order=True).to_list() if facet else [None]
    figure = Figure(figsize=(1.0 + 4.6 * len(panels), 4.6), layout="constrained")
    grid = figure.subplots(1, len(panels), squeeze=False, sharey=True)
    for axes, value in zip(grid[0], panels):
        data = frame if value is None else frame.filter(pl.col(PANEL) == value)
        for name in drawn.order:
            rows = data.filter(pl.col(GROUP) == name)
            if rows.height == 0:
                continue
            # A group without shares (refused rows, no weight) keeps its legend entry.
            heights = rows.get_column("density").fill_null(0.0)
            axes.bar(
                rows.get_column(BAR_LOWER).to_list(),
                heights.to_list(),
                width=(rows.get_column(BAR_UPPER) - rows.get_column(BAR_LOWER)).to_list(),
                align="edge",
                color=colours[name],
                alpha=0.85,
                label=rows.item(0, LABEL),
            )
        axes.axhline(1.0, linestyle="--", linewidth=1, color="gray", label=UNIFORM_LABEL)
        axes.set_xlim(0.0, 1.0)
        axes.grid(True, axis="y", linewidth=0.5, alpha=0.4)
        axes.set_xlabel(drawn.x_title)
        if value is not None:
            axes.set_title(f"{facet} = {value}")
        axes.legend(
            title=drawn.legend,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.14),
            fontsize="small",
            title_fontsize="small",
            frameon=False,
        )
    grid[0, 0].set_ylabel(DENSITY_TITLE)
    figure.suptitle(drawn.title)
    return figure


def over_time(drawn: OverTimeFrame) -> Figure:
    """The metric's lines (and band) per window, one panel per facet value."""
    from matplotlib.figure import Figure

    frame, metric, time, facet = drawn.frame, drawn.metric, drawn.time, drawn.facet
    (lower, upper), band, legend = drawn.bounds, drawn.band, drawn.legend
    panels = frame.get_column(PANEL).unique(maintain_order=True).to_list() if facet else [None]
    figure = Figure(
        figsize=(7.0 if facet is None else 3.6 * len(panels), 4.0), layout="constrained"
    )
    grid = figure.subplots(1, len(panels), sharey=True, squeeze=False)
    for axes, value in zip(grid[0], panels):
        shown = frame if value is None else frame.filter(pl.col(PANEL) == value)
        for name, colour_name in zip(drawn.order, palette(len(drawn.order))):
            rows = shown.filter(pl.col(GROUP) == name)
            if rows.height == 0:
                continue
            times = rows.get_column(time).to_list()
            # Nulls as NaN: matplotlib breaks the line and the band there.
            axes.plot(
                times,
                rows.get_column(metric).to_numpy(),
                "o-",
                color=colour_name,
                label=name,
                markersize=3,
            )
            if band:
                axes.fill_between(
                    times,
                    rows.get_column(lower).to_numpy(),
                    rows.get_column(upper).to_numpy(),
                    color=colour_name,
                    alpha=0.2,
                    linewidth=0,
                )
            if ALERT in rows.columns and rows.get_column(ALERT).any():
                alerts = rows.filter(pl.col(ALERT))
                axes.scatter(
                    alerts.get_column(time).to_list(),
                    alerts.get_column(metric).to_numpy(),
                    marker="^",
                    s=36,
                    color="#d62728",
                    zorder=3,
                    label="alert",
                )
        if drawn.ticks:  # on window starts (a date axis ticks weeks on Sundays)
            axes.set_xticks(drawn.ticks)
        axes.set_xlabel(f"{time} (window start)")
        if value is not None:
            axes.set_title(f"{facet} = {value}")
        axes.grid(True, linewidth=0.5, alpha=0.4)
        for label in axes.get_xticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")
    grid[0, 0].set_ylabel(metric)
    if drawn.keys:
        shown_lines: dict[str, Any] = {}  # every panel's groups, once each, in order
        for axes in grid[0]:
            for handle, label in zip(*axes.get_legend_handles_labels()):
                shown_lines.setdefault(label, handle)
        grid[0, -1].legend(
            list(shown_lines.values()), list(shown_lines), title=legend, frameon=False
        )
    figure.suptitle(drawn.title)
    return figure


def forest(frame: pl.DataFrame, overall: float | None, column: str, title: str) -> Figure:
    """One row per slice: its interval and point (hollow when small), the overall line."""
    from matplotlib.figure import Figure

    n = frame.height
    figure = Figure(figsize=(7.5, 1.6 + ROW_HEIGHT / 60 * max(n, 3)), layout="constrained")
    ax = figure.subplots()
    kinds = sorted(frame.get_column(FOREST_KIND).unique().to_list())
    colours = {
        kind: "#999999" if kind == SMALL else f"C{index % 10}" for index, kind in enumerate(kinds)
    }
    positions = list(range(n))
    for kind in kinds:
        rows = frame.with_row_index("__position__").filter(pl.col(FOREST_KIND) == kind)
        values = rows.get_column(column)
        lower = (values - rows.get_column(FOREST_LOWER)).clip(lower_bound=0.0).fill_null(0.0)
        upper = (rows.get_column(FOREST_UPPER) - values).clip(lower_bound=0.0).fill_null(0.0)
        ax.errorbar(
            values.to_list(),
            rows.get_column("__position__").to_list(),
            xerr=[lower.to_list(), upper.to_list()],
            fmt="o",
            markersize=5,
            capsize=2,
            color=colours[kind],
            label=kind,
            markerfacecolor="white" if kind == SMALL else colours[kind],
        )
    if overall is not None:
        ax.axvline(
            overall,
            color="gray",
            linestyle="--",
            linewidth=1,
            label=f"overall {column}",
        )
    ax.set_yticks(positions, frame.get_column("slice").to_list())
    ax.set_ylim(n - 0.5, -0.5)  # the first slice on top
    ax.set_xlabel(column)
    ax.grid(True, axis="x", linewidth=0.5, alpha=0.4)
    ax.legend(title=ORDER_TITLE, loc="best", fontsize="small")
    figure.suptitle(title)
    return figure


def drift(drawn: DriftFrame) -> Figure:
    """Running charts: per panel a line per series, dashed thresholds, alarm triangles."""
    from matplotlib.figure import Figure

    frame, time = drawn.frame, drawn.time
    figure = Figure(figsize=(8.0, 1.2 + 2.2 * len(drawn.panels)), layout="constrained")
    grid = figure.subplots(len(drawn.panels), 1, sharex=True, squeeze=False)
    for axes, panel in zip(grid[:, 0], drawn.panels):
        rows = frame.filter(pl.col(PANEL) == panel)
        axes.axhline(0.0, color="gray", linewidth=0.8)
        for name, colour in zip(drawn.series, drawn.colours):
            line = rows.filter(pl.col(SERIES) == name)
            if line.height == 0:
                continue
            axes.plot(
                line.get_column(time).to_list(),
                line.get_column("value").to_numpy(),
                color=colour,
                linewidth=1.2,
                label=name,
            )
            limit = line.get_column("limit").drop_nulls()
            if limit.len():
                axes.axhline(limit.max(), color=colour, linestyle="--", linewidth=1.2)
        alarms = rows.filter(pl.col("alarm"))
        if alarms.height:
            axes.scatter(
                alarms.get_column(time).to_list(),
                alarms.get_column("value").to_numpy(),
                marker="^",
                s=36,
                color="#d62728",
                zorder=3,
                label="alarm",
            )
        axes.set_title(panel, fontsize="medium", loc="left")
        axes.set_ylabel(drawn.y_title)
        axes.grid(True, linewidth=0.5, alpha=0.4)
    grid[-1, 0].set_xlabel(time)
    entries: dict[str, Any] = {}  # every panel's lines, once each
    for axes in grid[:, 0]:
        for handle, label in zip(*axes.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    figure.legend(
        list(entries.values()),
        list(entries),
        loc="outside lower center",
        ncols=len(entries),
        frameon=False,
    )
    figure.suptitle(drawn.title)
    return figure
