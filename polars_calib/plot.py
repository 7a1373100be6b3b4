"""Reliability diagrams drawn from a reliability table, and metrics over time from a summary.

Computing and drawing are kept apart: :func:`polars_calib.reliability` returns a
table (one row per group and bin), and :func:`plot_reliability` draws that table
without computing any metric. Drawing needs the optional ``plot`` extra,
``pip install 'polars_calib[plot]'`` (Altair, vl-convert for PNG export, and
matplotlib); the libraries are imported only when a diagram is drawn.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard, Union, overload

import polars as pl

from polars_calib._core.options import check_choice

__all__ = [
    "BACKENDS",
    "MAX_FACETS",
    "default_layout",
    "plot_metric_over_time",
    "plot_reliability",
    "save_png",
]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure

    AltairChart = Union[alt.VConcatChart, alt.HConcatChart, alt.LayerChart]

BACKENDS = ("altair", "matplotlib")

TABLE_COLUMNS = (
    "bin",
    "lower",
    "upper",
    "count",
    "mean_predicted",
    "observed",
    "observed_lower",
    "observed_upper",
)
"""Columns :func:`plot_reliability` reads; a reliability table has them all."""

INSTALL_HINT = "pip install 'polars_calib[plot]'"

DEFAULT_TITLE = "Reliability diagram"
X_TITLE = "Mean predicted probability"
Y_TITLE = "Observed frequency of positives"
COUNT_TITLE = "Count"
BIN_TITLE = "Predicted probability (bins)"
DIAGONAL_LABEL = "perfectly calibrated"

# With several group keys and neither `by` nor `facet` given, the last key gets one
# panel per value when it has at most this many values (the command line's rule).
MAX_FACETS = 4

# Share of each bin's width left empty on either side, so neighbouring bars stay apart.
BAR_PADDING = 0.06

# Columns added to the drawing frame; the leading underscores keep them apart from user keys.
GROUP = "__group__"
PANEL = "__panel__"
BAR_LOWER = "__bar_lower__"
BAR_UPPER = "__bar_upper__"


def _require(module: str, purpose: str) -> None:
    """Import `module`, or raise ImportError saying how to install the plot extra."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        msg = f"{purpose} needs the `{module}` package; install it with {INSTALL_HINT}"
        raise ImportError(msg) from error


@overload
def plot_reliability(
    table: pl.DataFrame,
    *,
    backend: Literal["altair"] = ...,
    by: str | Sequence[str] | None = ...,
    facet: str | None = ...,
    title: str | None = ...,
) -> AltairChart: ...


@overload
def plot_reliability(
    table: pl.DataFrame,
    *,
    backend: Literal["matplotlib"],
    by: str | Sequence[str] | None = ...,
    facet: str | None = ...,
    title: str | None = ...,
) -> Figure: ...


def plot_reliability(
    table: pl.DataFrame,
    *,
    backend: str = "altair",
    by: str | Sequence[str] | None = None,
    facet: str | None = None,
    title: str | None = None,
) -> AltairChart | Figure:
    """Draw a reliability diagram from a reliability table.

    The upper panel plots the observed frequency of positives against the mean
    predicted probability of each non-empty bin, with the table's confidence
    interval as whiskers, joined per group, over the dashed diagonal of perfect
    calibration. The lower panel is the histogram of predictions: one bar per bin,
    spanning the bin from ``lower`` to ``upper``, with its row count (groups share
    a bin side by side). Each group gets one colour; several colour columns are
    combined into one key, such as ``"candidate / A"``.

    With several key columns and neither `by` nor `facet` given, the diagram is
    split so that it stays readable: when the last key has at most ``MAX_FACETS``
    (4) distinct values, one panel per value of the last key, coloured by the
    other keys combined; with more values, one panel, one colour per combination
    of all the keys (pass `facet` to choose the split, or `by` with every key to
    keep one panel). The command line lays out its diagram by the same rule.

    Parameters
    ----------
    table
        A reliability table, as returned by :func:`polars_calib.reliability`
        (collected): the columns ``bin``, ``lower``, ``upper``, ``count``,
        ``mean_predicted``, ``observed``, ``observed_lower`` and ``observed_upper``,
        preceded by the group keys. Nothing is computed from raw predictions.
    backend
        ``"altair"`` (default, the library behind Polars' ``DataFrame.plot``) or
        ``"matplotlib"``.
    by
        Column(s) giving one colour per group. By default, every column before
        ``bin`` (the table's group keys, and ``class`` for a multi-class table)
        other than `facet`, or than the last key when it is the default facet.
    facet
        Column with one diagram per value, side by side. By default none, except
        with several keys and `by` not given: the last key, when it has at most
        ``MAX_FACETS`` values.
    title
        Title of the chart; ``"Reliability diagram"`` by default.

    Returns
    -------
    altair.VConcatChart or altair.HConcatChart or matplotlib.figure.Figure
        With ``backend="altair"``: the diagram over its histogram, a
        ``VConcatChart`` (an ``HConcatChart`` of them with `facet`). With
        ``backend="matplotlib"``: a ``Figure`` with the same content (not
        registered with ``pyplot``). Save either with :func:`save_png`.

    Raises
    ------
    ImportError
        When the plotting library is not installed.
    TypeError
        When `table` is not a DataFrame (collect a LazyFrame first).
    ValueError
        When a column is missing or an argument is out of range.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> table = pl.DataFrame({
    ...     "model": ["a", "a", "b", "b"],
    ...     "bin": [0, 1, 0, 1],
    ...     "lower": [0.0, 0.5, 0.0, 0.5],
    ...     "upper": [0.5, 1.0, 0.5, 1.0],
    ...     "count": [40, 60, 55, 45],
    ...     "mean_predicted": [0.3, 0.7, 0.2, 0.8],
    ...     "observed": [0.25, 0.75, 0.3, 0.6],
    ...     "observed_lower": [0.14, 0.63, 0.19, 0.46],
    ...     "observed_upper": [0.40, 0.84, 0.43, 0.73],
    ... })
    >>> chart = pc.plot_reliability(table, title="Two models")
    >>> type(chart).__name__
    'VConcatChart'
    >>> figure = pc.plot_reliability(table, backend="matplotlib")
    >>> type(figure).__name__
    'Figure'
    """
    check_choice("backend", backend, BACKENDS)
    frame, groups, facet, facets = _drawing_frame(table, by, facet)
    legend_title = " / ".join(groups)
    title = DEFAULT_TITLE if title is None else title
    if backend == "altair":
        _require("altair", "plot_reliability(backend='altair')")
        return _altair(frame, groups, facet, facets, legend_title, title)
    _require("matplotlib", "plot_reliability(backend='matplotlib')")
    return _matplotlib(frame, groups, facet, facets, legend_title, title)


def save_png(
    chart: AltairChart | alt.LayerChart | alt.FacetChart | Figure,
    path: str | Path,
    *,
    scale: float = 2.0,
) -> Path:
    """Write a diagram from :func:`plot_reliability` to a PNG file.

    Parameters
    ----------
    chart
        An Altair chart (exported with ``vl-convert-python``) or a matplotlib
        ``Figure`` (rendered with the Agg backend): a diagram of
        :func:`plot_reliability` or a forest plot of :func:`polars_calib.plot_audit`.
    path
        Where to write the image; parent directories must exist.
    scale
        Resolution multiplier: 2 doubles Altair's pixel size, and gives 200 dpi
        for matplotlib.

    Returns
    -------
    Path
        The path written.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> table = pl.DataFrame({
    ...     "bin": [0, 1], "lower": [0.0, 0.5], "upper": [0.5, 1.0], "count": [40, 60],
    ...     "mean_predicted": [0.3, 0.7], "observed": [0.25, 0.75],
    ...     "observed_lower": [0.14, 0.63], "observed_upper": [0.40, 0.84],
    ... })
    >>> figure = pc.plot_reliability(table, backend="matplotlib")
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     written = pc.save_png(figure, Path(directory) / "diagram.png")
    ...     written.stat().st_size > 0
    True
    """
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or scale <= 0:
        msg = f"`scale` must be a positive number, got {scale!r}"
        raise ValueError(msg)
    path = Path(path)
    if _is_figure(chart):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(chart)  # render off-screen, whatever pyplot's backend is
        chart.savefig(path, format="png", dpi=100 * scale)
        return path
    if _is_altair(chart):
        _require("vl_convert", "Saving an Altair chart as PNG")
        chart.save(str(path), format="png", scale_factor=scale)
        return path
    msg = f"`chart` must be an Altair chart or a matplotlib Figure, got {type(chart).__name__}"
    raise TypeError(msg)


def _is_figure(chart: object) -> TypeGuard[Figure]:
    return hasattr(chart, "savefig")


def _is_altair(chart: object) -> TypeGuard[AltairChart | alt.LayerChart]:
    return hasattr(chart, "to_dict") and hasattr(chart, "save")


def _escape(name: str) -> str:
    """A column name as a Vega-Lite field, where dots and brackets address nested data."""
    return re.sub(r"([.\[\]\\])", r"\\\1", name)


def _as_list(value: str | Sequence[str] | None, argument: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return list(value)
    msg = f"`{argument}` must be a column name or a sequence of them, got {value!r}"
    raise TypeError(msg)


def default_layout(table: pl.DataFrame, keys: Sequence[str]) -> tuple[list[str], str | None]:
    """The colour columns and the facet column of a diagram of `table` by `keys`.

    With two or more keys, the last one is the facet when it has at most
    ``MAX_FACETS`` values, and the others give the colours; otherwise every key
    gives the colours, in one panel.
    """
    keys = list(keys)
    if len(keys) >= 2 and table.get_column(keys[-1]).n_unique() <= MAX_FACETS:
        return keys[:-1], keys[-1]
    return keys, None


def _drawing_frame(
    table: pl.DataFrame, by: str | Sequence[str] | None, facet: str | None
) -> tuple[pl.DataFrame, list[str], str | None, list[object]]:
    """Check the table; add the group key and each bar's horizontal extent.

    Returns the frame, the group columns, the facet column and the facet values
    (``[None]`` without facets), groups and facet values in order of first appearance.
    """
    if isinstance(table, pl.LazyFrame):
        msg = "`table` must be a DataFrame; collect the LazyFrame first"
        raise TypeError(msg)
    if not isinstance(table, pl.DataFrame):
        msg = f"`table` must be a reliability table (a DataFrame), got {type(table).__name__}"
        raise TypeError(msg)
    missing = [name for name in TABLE_COLUMNS if name not in table.columns]
    if missing:
        msg = (
            f"`table` is not a reliability table: missing column(s) {', '.join(missing)}"
            " (compute it with polars_calib.reliability)"
        )
        raise ValueError(msg)
    if facet is not None and not isinstance(facet, str):
        msg = f"`facet` must be a column name, got {facet!r}"
        raise TypeError(msg)
    groups = _as_list(by, "by")
    if groups is None:
        keys = table.columns[: table.columns.index("bin")]
        if facet is None:
            groups, facet = default_layout(table, keys)
        else:
            groups = [name for name in keys if name != facet]
    for name in [*groups, *([facet] if facet is not None else [])]:
        if name not in table.columns:
            msg = f"column {name!r} is not in the reliability table (columns: {table.columns})"
            raise ValueError(msg)
    if facet is not None and facet in groups:
        msg = f"`facet` column {facet!r} is also a `by` column"
        raise ValueError(msg)

    key = (
        pl.concat_str(
            [pl.col(name).cast(pl.String).fill_null("null") for name in groups], separator=" / "
        )
        if groups
        else pl.lit("all")
    )
    frame = table.with_columns(key.alias(GROUP))
    order = frame.get_column(GROUP).unique(maintain_order=True)
    # Groups share each bin side by side: group i of k gets the i-th k-th of the bin.
    position = pl.col(GROUP).replace_strict(order, pl.int_range(order.len(), eager=True))
    width = pl.col("upper") - pl.col("lower")
    share = (1.0 - 2.0 * BAR_PADDING) / max(order.len(), 1)
    bar_lower = pl.col("lower") + width * (BAR_PADDING + share * position)
    frame = frame.with_columns(
        bar_lower.alias(BAR_LOWER), (bar_lower + width * share).alias(BAR_UPPER)
    )
    facets: list[object] = (
        frame.get_column(facet).unique(maintain_order=True).to_list() if facet else [None]
    )
    return frame, groups, facet, facets


def _altair(
    frame: pl.DataFrame,
    groups: list[str],
    facet: str | None,
    facets: list[object],
    legend_title: str,
    title: str,
) -> AltairChart:
    import altair as alt

    order = frame.get_column(GROUP).unique(maintain_order=True).to_list()
    colour: Any = (  # a field encoding, or one constant colour without groups
        alt.Color(f"{GROUP}:N", title=legend_title, sort=order, legend=alt.Legend(orient="right"))
        if groups
        else alt.value("#1f77b4")
    )
    unit = alt.Scale(domain=[0.0, 1.0], nice=False)
    tooltip = [
        *[alt.Tooltip(field=_escape(name), type="nominal", title=name) for name in groups],
        alt.Tooltip("bin:O"),
        alt.Tooltip("lower:Q", format=".3f"),
        alt.Tooltip("upper:Q", format=".3f"),
        alt.Tooltip("count:Q"),
        alt.Tooltip("mean_predicted:Q", format=".3f"),
        alt.Tooltip("observed:Q", format=".3f"),
        alt.Tooltip("observed_lower:Q", format=".3f"),
        alt.Tooltip("observed_upper:Q", format=".3f"),
    ]

    def panel(data: pl.DataFrame, panel_title: str | None) -> alt.VConcatChart:
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
        diagram = alt.layer(diagonal, curve, error_bars, points).properties(
            width=360, height=360
        )
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

    chart_title = alt.TitleParams(title, anchor="middle", fontSize=15, offset=12)
    if facet is None:
        return panel(frame, None).properties(title=chart_title)
    panels = [
        panel(frame.filter(pl.col(facet).eq_missing(value)), f"{facet} = {value}")
        for value in facets
    ]
    return alt.hconcat(*panels, spacing=24).properties(title=chart_title)


def _matplotlib(
    frame: pl.DataFrame,
    groups: list[str],
    facet: str | None,
    facets: list[object],
    legend_title: str,
    title: str,
) -> Figure:
    from matplotlib.figure import Figure

    order = frame.get_column(GROUP).unique(maintain_order=True).to_list()
    colours = {name: f"C{index % 10}" for index, name in enumerate(order)}
    # The legend goes below the histograms, in as many columns as the width allows.
    legend_columns = min(len(order) + 1, 3 * len(facets))
    legend_rows = -(-(len(order) + 1) // legend_columns) + 1 if groups else 0
    figure = Figure(figsize=(5.4 * len(facets), 6.6 + 0.25 * legend_rows), layout="constrained")
    axes = figure.subplots(
        2, len(facets), squeeze=False, gridspec_kw={"height_ratios": [3.2, 1.0]}
    )
    for column, value in enumerate(facets):
        diagram, histogram = axes[0, column], axes[1, column]
        data = frame if facet is None else frame.filter(pl.col(facet).eq_missing(value))
        diagram.plot(
            [0.0, 1.0], [0.0, 1.0], linestyle="--", linewidth=1, color="gray",
            label=DIAGONAL_LABEL,
        )
        for name in order:
            rows = data.filter(pl.col(GROUP) == name)
            bars = rows.filter(pl.col("count") > 0)
            histogram.bar(
                bars.get_column(BAR_LOWER).to_list(),
                bars.get_column("count").to_list(),
                width=(bars.get_column(BAR_UPPER) - bars.get_column(BAR_LOWER)).to_list(),
                align="edge", color=colours[name], alpha=0.85,
            )
            points = rows.filter(pl.col("mean_predicted").is_not_null()).sort("mean_predicted")
            if points.is_empty():
                continue
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
                fmt="o-", markersize=4, linewidth=1.5, capsize=2.5, elinewidth=1,
                color=colours[name], label=name if groups else "observed",
            )
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
            handles, labels, title=legend_title, loc="outside lower center",
            ncols=legend_columns, frameon=False,
        )
    else:
        axes[0, 0].legend(handles, labels, loc="upper left")
    figure.suptitle(title)
    return figure


@overload
def plot_metric_over_time(
    summary: pl.DataFrame,
    metric: str,
    time: str,
    *,
    backend: Literal["altair"] = ...,
    by: str | Sequence[str] | None = ...,
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
    by: str | Sequence[str] | None = ...,
    title: str | None = ...,
    facet: str | None = ...,
) -> Figure: ...


def plot_metric_over_time(
    summary: pl.DataFrame,
    metric: str,
    time: str,
    *,
    backend: str = "altair",
    by: str | Sequence[str] | None = None,
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
        Column(s) giving one colour per group. By default every column before
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
    if not isinstance(summary, pl.DataFrame):
        msg = f"`summary` must be a summary table (a DataFrame), got {type(summary).__name__}"
        raise TypeError(msg)
    if facet is not None and not isinstance(facet, str):
        msg = f"`facet` must be a column name, got {facet!r}"
        raise TypeError(msg)
    keys = _as_list(by, "by")
    if keys is None:
        before = summary.columns[: summary.columns.index("count")] if "count" in summary.columns else []  # noqa: E501
        found = [name for name in before if name != time]
        if facet is None:
            keys, facet = default_layout(summary, found)
        else:
            keys = [name for name in found if name != facet]
    missing = [name for name in (time, metric, *keys, *([facet] if facet else [])) if name not in summary.columns]  # noqa: E501
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
    group = (
        pl.concat_str([pl.col(k).cast(pl.String).fill_null("null") for k in keys], separator=" / ")
        if keys else pl.lit(metric)
    )  # fmt: skip
    carried = [name for name in ("count",) if name in summary.columns]
    panel = [pl.col(facet).cast(pl.String).fill_null("null").alias(PANEL)] if facet else []
    frame = summary.select(pl.col(time), *finite, *carried, group.alias(GROUP), *panel)
    order = frame.get_column(GROUP).unique(maintain_order=True).to_list()
    frame = frame.sort(GROUP, time, maintain_order=True)
    title = f"{metric} over time" if title is None else title
    legend = " / ".join(keys) if keys else ""
    if backend == "altair":
        _require("altair", "plot_metric_over_time(backend='altair')")
        import altair as alt

        x = alt.X(f"{_escape(time)}:T", title=f"{time} (window start)")
        colour: Any = (
            alt.Color(f"{GROUP}:N", title=legend or None, sort=order)
            if keys else alt.value("#1f77b4")
        )  # fmt: skip
        tooltip = [
            *([alt.Tooltip(f"{GROUP}:N", title=legend)] if keys else []),
            *([alt.Tooltip(f"{PANEL}:N", title=facet)] if facet else []),
            alt.Tooltip(f"{_escape(time)}:T", title=time),
            alt.Tooltip(f"{_escape(metric)}:Q", format=".4f", title=metric),
            *(
                alt.Tooltip(f"{_escape(name)}:Q", format=".4f", title=name)
                for name in ((lower, upper) if band else ())
            ),
            *([alt.Tooltip("count:Q", format=",", title="count")] if carried else []),
        ]
        base = alt.Chart(frame)
        line = base.mark_line(point=True, invalid=None).encode(
            x=x, y=alt.Y(f"{_escape(metric)}:Q", title=metric), color=colour, tooltip=tooltip
        )
        layers: list[Any] = [line]
        if band:
            area = base.mark_area(opacity=0.2, invalid=None).encode(
                x=x, y=alt.Y(f"{_escape(lower)}:Q", title=metric),
                y2=alt.Y2(f"{_escape(upper)}:Q"), color=colour,
            )  # fmt: skip
            layers = [area, line]
        if facet is None:
            return alt.LayerChart(layer=layers, title=title, width=480, height=260)
        panels = frame.get_column(PANEL).unique(maintain_order=True).to_list()
        layered = alt.LayerChart(layer=layers, width=300, height=220)
        return layered.facet(
            column=alt.Column(f"{PANEL}:N", title=facet, sort=panels), title=title
        )
    _require("matplotlib", "plot_metric_over_time(backend='matplotlib')")
    from matplotlib.figure import Figure

    panels = frame.get_column(PANEL).unique(maintain_order=True).to_list() if facet else [None]
    figure = Figure(figsize=(7.0 if facet is None else 3.6 * len(panels), 4.0), layout="constrained")
    grid = figure.subplots(1, len(panels), sharey=True, squeeze=False)
    for axes, value in zip(grid[0], panels):
        shown = frame if value is None else frame.filter(pl.col(PANEL) == value)
        for index, name in enumerate(order):
            rows = shown.filter(pl.col(GROUP) == name)
            if rows.height == 0:
                continue
            colour_name = f"C{index % 10}"
            times = rows.get_column(time).to_list()
            # Nulls as NaN: matplotlib breaks the line and the band there.
            axes.plot(times, rows.get_column(metric).to_numpy(), "o-", color=colour_name,
                      label=name, markersize=3)  # fmt: skip
            if band:
                axes.fill_between(
                    times, rows.get_column(lower).to_numpy(), rows.get_column(upper).to_numpy(),
                    color=colour_name, alpha=0.2, linewidth=0,
                )  # fmt: skip
        axes.set_xlabel(f"{time} (window start)")
        if value is not None:
            axes.set_title(f"{facet} = {value}")
        axes.grid(True, linewidth=0.5, alpha=0.4)
        for label in axes.get_xticklabels():
            label.set_rotation(30)
            label.set_horizontalalignment("right")
    grid[0, 0].set_ylabel(metric)
    if keys:
        shown_lines: dict[str, Any] = {}  # every panel's groups, once each, in order
        for axes in grid[0]:
            for handle, label in zip(*axes.get_legend_handles_labels()):
                shown_lines.setdefault(label, handle)
        grid[0, -1].legend(list(shown_lines.values()), list(shown_lines), title=legend, frameon=False)
    figure.suptitle(title)
    return figure
