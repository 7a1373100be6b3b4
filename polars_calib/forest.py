"""The forest plot of a fairness audit, drawn from its slices table.

:func:`polars_calib.audit` computes the table (one row per slice); :func:`plot_audit`
draws it and computes nothing: one row per slice, its metric as a point with its
interval as a horizontal bar when the table has one, and the overall value as a
dashed vertical line. Drawing needs the ``plot`` extra, as
:func:`polars_calib.plot_reliability` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast, overload

import polars as pl

from polars_calib._core.options import check_choice
from polars_calib.audit import Audit
from polars_calib.plot import BACKENDS, _require

__all__ = ["plot_audit"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure


DEFAULT_TITLE = "Calibration by slice"
ORDER_TITLE = "Attributes fixed"
SMALL = "too small"
ROW_HEIGHT = 18  # pixels per slice (Altair); a matplotlib row is ROW_HEIGHT / 60 inches

# The drawing frame's own columns (leading underscores keep them apart from attributes).
_LOWER, _UPPER, _KIND = "__lower__", "__upper__", "__kind__"


@overload
def plot_audit(
    audit: Audit | pl.DataFrame,
    *,
    metric: str | None = ...,
    backend: Literal["altair"] = ...,
    include_small: bool = ...,
    title: str | None = ...,
) -> alt.LayerChart: ...


@overload
def plot_audit(
    audit: Audit | pl.DataFrame,
    *,
    metric: str | None = ...,
    backend: Literal["matplotlib"],
    include_small: bool = ...,
    title: str | None = ...,
) -> Figure: ...


def plot_audit(
    audit: Audit | pl.DataFrame,
    *,
    metric: str | None = None,
    backend: str = "altair",
    include_small: bool = True,
    title: str | None = None,
) -> alt.LayerChart | Figure:
    """Draw a forest plot of an audit: each slice's metric, its interval, the overall line.

    One row per slice, in the table's order (single attributes first, then their
    intersections), coloured by how many attributes the slice fixes; slices
    flagged ``too_small`` are drawn hollow and grey. The overall value is a
    dashed vertical line: a slice far to its right is worse calibrated than the
    population, and an interval that does not reach the line says it is not
    noise.

    Parameters
    ----------
    audit
        The result of :func:`polars_calib.audit`, or its ``slices`` table (or
        rows of it, such as ``audit.worst(20)``; the overall row, ``order`` 0,
        draws the line when present).
    metric
        The metric to draw; by default the audit's first (``"ece"``). The
        interval is drawn from ``<metric>_lower`` and ``<metric>_upper`` when
        the table has them.
    backend
        ``"altair"`` (default) or ``"matplotlib"``.
    include_small
        Draw the slices flagged ``too_small`` (hollow); ``False`` leaves them out.
    title
        Title of the chart; ``"Calibration by slice"`` by default.

    Returns
    -------
    altair.LayerChart or matplotlib.figure.Figure
        Save either with :func:`polars_calib.save_png`.

    Raises
    ------
    ImportError
        When the plotting library is not installed.
    TypeError
        When `audit` is neither an :class:`~polars_calib.Audit` nor a DataFrame.
    ValueError
        When a column is missing.

    See Also
    --------
    polars_calib.audit, polars_calib.plot_reliability

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "sex": ["F", "M"] * 100,
    ...     "p": [0.2, 0.7, 0.4, 0.9] * 50,
    ...     "y": [0, 1, 1, 1] * 50,
    ... })
    >>> result = pc.audit(df, "p", "y", by="sex", min_count=10)
    >>> type(pc.plot_audit(result)).__name__
    'LayerChart'
    >>> type(pc.plot_audit(result, backend="matplotlib")).__name__
    'Figure'
    """
    check_choice("backend", backend, BACKENDS)
    frame, overall, column = _drawing_frame(audit, metric, include_small)
    title = DEFAULT_TITLE if title is None else title
    if backend == "altair":
        _require("altair", "plot_audit(backend='altair')")
        return _altair(frame, overall, column, title)
    _require("matplotlib", "plot_audit(backend='matplotlib')")
    return _matplotlib(frame, overall, column, title)


def _drawing_frame(
    audit: Audit | pl.DataFrame, metric: str | None, include_small: bool
) -> tuple[pl.DataFrame, float | None, str]:
    """The slices to draw (not the overall row), the overall value and the metric column."""
    if isinstance(audit, Audit):
        table, column = audit.slices, audit.metrics[0] if metric is None else metric
    elif isinstance(audit, pl.DataFrame):
        table, column = audit, "ece" if metric is None else metric
    else:
        msg = f"`audit` must be an Audit or its slices table, got {type(audit).__name__}"
        raise TypeError(msg)
    needed = ("slice", "order", "count", "too_small", column)
    missing = [name for name in needed if name not in table.columns]
    if missing:
        msg = (
            f"`audit` is not an audit's slices table: missing column(s) {', '.join(missing)}"
            " (compute it with polars_calib.audit)"
        )
        raise ValueError(msg)
    bounds = [f"{column}_lower", f"{column}_upper"]
    has_interval = all(name in table.columns for name in bounds)
    overall_rows = table.filter(pl.col("order") == 0)
    overall = overall_rows.item(0, column) if overall_rows.height else None
    rows = table.filter(pl.col("order") > 0)
    if not include_small:
        rows = rows.filter(~pl.col("too_small"))
    kind = (
        pl.when(pl.col("too_small")).then(pl.lit(SMALL))
        .otherwise(pl.format("{} attribute(s)", pl.col("order")))
    )  # fmt: skip
    frame = rows.select(
        "slice", "order", "count", "too_small", column,
        (pl.col(bounds[0]) if has_interval else pl.lit(None, pl.Float64)).alias(_LOWER),
        (pl.col(bounds[1]) if has_interval else pl.lit(None, pl.Float64)).alias(_UPPER),
        kind.alias(_KIND),
    )  # fmt: skip
    return frame, overall, column


def _altair(
    frame: pl.DataFrame, overall: float | None, column: str, title: str
) -> alt.LayerChart:
    import altair as alt

    order = frame.get_column("slice").to_list()
    kinds = frame.get_column(_KIND).unique(maintain_order=True).sort().to_list()
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    palette = [
        "#bbbbbb" if kind == SMALL else colours[index % len(colours)]
        for index, kind in enumerate(kinds)
    ]
    colour = alt.Color(
        f"{_KIND}:N", title=ORDER_TITLE, scale=alt.Scale(domain=kinds, range=palette)
    )
    y = alt.Y("slice:N", sort=order, title=None)
    tooltip = [
        alt.Tooltip("slice:N"), alt.Tooltip("count:Q"),
        alt.Tooltip(f"{column}:Q", format=".4f"),
        alt.Tooltip(f"{_LOWER}:Q", format=".4f", title="lower"),
        alt.Tooltip(f"{_UPPER}:Q", format=".4f", title="upper"),
    ]  # fmt: skip
    axis = alt.Axis(tickCount=8, labelOverlap=True)
    base = alt.Chart(frame)
    intervals = base.mark_rule(strokeWidth=1.5).encode(
        x=alt.X(f"{_LOWER}:Q", title=column, axis=axis), x2=f"{_UPPER}:Q", y=y, color=colour
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
    layers: list[Any] = [
        intervals, *([points] if (~small).any() else []), *([hollow] if small.any() else []),
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


def _matplotlib(frame: pl.DataFrame, overall: float | None, column: str, title: str) -> Figure:
    from matplotlib.figure import Figure

    n = frame.height
    figure = Figure(figsize=(7.5, 1.6 + ROW_HEIGHT / 60 * max(n, 3)), layout="constrained")
    ax = figure.subplots()
    kinds = sorted(frame.get_column(_KIND).unique().to_list())
    colours = {
        kind: "#999999" if kind == SMALL else f"C{index % 10}" for index, kind in enumerate(kinds)
    }
    positions = list(range(n))
    for kind in kinds:
        rows = frame.with_row_index("__position__").filter(pl.col(_KIND) == kind)
        values = rows.get_column(column)
        lower = (values - rows.get_column(_LOWER)).clip(lower_bound=0.0).fill_null(0.0)
        upper = (rows.get_column(_UPPER) - values).clip(lower_bound=0.0).fill_null(0.0)
        ax.errorbar(
            values.to_list(), rows.get_column("__position__").to_list(),
            xerr=[lower.to_list(), upper.to_list()], fmt="o", markersize=5, capsize=2,
            color=colours[kind], label=kind,
            markerfacecolor="white" if kind == SMALL else colours[kind],
        )  # fmt: skip
    if overall is not None:
        ax.axvline(overall, color="gray", linestyle="--", linewidth=1, label=f"overall {column}")
    ax.set_yticks(positions, frame.get_column("slice").to_list())
    ax.set_ylim(n - 0.5, -0.5)  # the first slice on top
    ax.set_xlabel(column)
    ax.grid(True, axis="x", linewidth=0.5, alpha=0.4)
    ax.legend(title=ORDER_TITLE, loc="best", fontsize="small")
    figure.suptitle(title)
    return figure
