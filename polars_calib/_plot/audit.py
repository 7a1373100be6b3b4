"""The forest plot of a fairness audit, drawn from its slices table.

:func:`polars_calib.audit` computes the table (one row per slice); :func:`plot_audit`
draws it and computes nothing: one row per slice, its metric as a point with its
interval as a horizontal bar when the table has one, and the overall value as a
dashed vertical line. Drawing needs the ``plot`` extra, as
:func:`polars_calib.plot_reliability` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, overload, runtime_checkable

import polars as pl

from polars_calib._core.labels import key_label
from polars_calib._core.options import check_choice
from polars_calib._plot import altair_backend, matplotlib_backend
from polars_calib._plot.common import (
    BACKENDS,
    FOREST_KIND,
    FOREST_LOWER,
    FOREST_TITLE,
    FOREST_UPPER,
    SMALL,
    require,
)

OVERALL = "overall"
"""The kind of a group's overall row (an audit `within` groups draws one per group)."""

__all__ = ["AuditResult", "plot_audit"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure


@runtime_checkable
class AuditResult(Protocol):
    """What the forest plot reads of an :class:`~polars_calib.Audit`: its slices and metrics.

    The charts sit below the features (the audit draws with them), so they know the
    audit's result by its shape.
    """

    @property
    def slices(self) -> pl.DataFrame: ...

    @property
    def include_small(self) -> bool: ...

    @property
    def metrics(self) -> tuple[str, ...]: ...


@overload
def plot_audit(
    audit: AuditResult | pl.DataFrame,
    *,
    metric: str | None = ...,
    backend: Literal["altair"] = ...,
    include_small: bool | None = ...,
    title: str | None = ...,
) -> alt.LayerChart: ...


@overload
def plot_audit(
    audit: AuditResult | pl.DataFrame,
    *,
    metric: str | None = ...,
    backend: Literal["matplotlib"],
    include_small: bool | None = ...,
    title: str | None = ...,
) -> Figure: ...


def plot_audit(
    audit: AuditResult | pl.DataFrame,
    *,
    metric: str | None = None,
    backend: str = "altair",
    include_small: bool | None = None,
    title: str | None = None,
) -> alt.LayerChart | Figure:
    """Draw a forest plot of an audit: each slice's metric, its interval, the overall line.

    One row per slice, in the table's order (single attributes first, then their
    intersections), coloured by how many attributes the slice fixes; slices
    flagged ``too_small`` are drawn hollow and grey. The overall value is a
    dashed vertical line: a slice far to its right is worse calibrated than the
    population, and an interval that does not reach the line says it is not
    noise.

    An audit `within` keys (several groups, such as models) draws each group's
    rows together, its overall row first (kind ``overall``, with its interval),
    each labelled by the group (``model=a | sex=F``), and no line: each group is
    compared with its own overall row.

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
        Draw the slices flagged ``too_small`` (hollow) or leave them out; ``None``
        (default): as the audit was asked (:func:`polars_calib.audit`'s
        `include_small`, itself left out by default), and a slices table's rows as
        given (they were chosen already, as by ``audit.worst(20)``).
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
    title = FOREST_TITLE if title is None else title
    if backend == "altair":
        require("altair", "plot_audit(backend='altair')")
        return altair_backend.forest(frame, overall, column, title)
    require("matplotlib", "plot_audit(backend='matplotlib')")
    return matplotlib_backend.forest(frame, overall, column, title)


def _drawing_frame(
    audit: AuditResult | pl.DataFrame, metric: str | None, include_small: bool | None
) -> tuple[pl.DataFrame, float | None, str]:
    """The slices to draw (not the overall row), the overall value and the metric column."""
    if isinstance(audit, pl.DataFrame):
        table, column = audit, "ece" if metric is None else metric
        include_small = True if include_small is None else include_small
    elif isinstance(audit, AuditResult):
        table, column = audit.slices, audit.metrics[0] if metric is None else metric
        include_small = audit.include_small if include_small is None else include_small
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
    # Rows of several groups of an audit `within` keys (its columns before `slice`): each
    # group's rows, its overall row first, labelled by the group; no line (no one overall).
    within = table.columns[: table.columns.index("slice")]
    overall_rows = table.filter(pl.col("order") == 0)
    grouped = bool(within) and table.select(within).n_unique() > 1
    overall = overall_rows.item(0, column) if overall_rows.height and not grouped else None
    rows = table if grouped else table.filter(pl.col("order") > 0)
    if not include_small:
        rows = rows.filter(~pl.col("too_small") | (pl.col("order") == 0))
    kind = (
        pl.when(pl.col("order") == 0)
        .then(pl.lit(OVERALL))
        .when(pl.col("too_small"))
        .then(pl.lit(SMALL))
        .otherwise(pl.format("{} attribute(s)", pl.col("order")))
    )
    label = pl.concat_str(key_label(within), pl.lit(" | "), "slice") if grouped else pl.col("slice")
    frame = rows.select(
        label.alias("slice"),
        "order",
        "count",
        "too_small",
        column,
        (pl.col(bounds[0]) if has_interval else pl.lit(None, pl.Float64)).alias(FOREST_LOWER),
        (pl.col(bounds[1]) if has_interval else pl.lit(None, pl.Float64)).alias(FOREST_UPPER),
        kind.alias(FOREST_KIND),
    )
    return frame, overall, column
