"""Reliability diagrams drawn from a reliability table.

Computing and drawing are kept apart: :func:`polars_calib.reliability` returns a
table (one row per group and bin), and :func:`plot_reliability` draws that table
without computing any metric. Drawing needs the optional ``plot`` extra,
``pip install 'polars_calib[plot]'`` (Altair, vl-convert for PNG export, and
matplotlib); the libraries are imported only when a diagram is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import check_choice
from polars_calib._plot import altair_backend, matplotlib_backend
from polars_calib._plot.common import (
    BACKENDS,
    GROUP,
    RELIABILITY_TITLE,
    checked_table,
    group_label,
    labelled,
    laid_out,
    require,
    side_by_side,
)

__all__ = ["TABLE_COLUMNS", "plot_reliability"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure

    AltairChart = alt.VConcatChart | alt.HConcatChart | alt.LayerChart

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


@overload
def plot_reliability(
    table: pl.DataFrame,
    *,
    backend: Literal["altair"] = ...,
    by: Keys = ...,
    facet: str | None = ...,
    title: str | None = ...,
) -> AltairChart: ...


@overload
def plot_reliability(
    table: pl.DataFrame,
    *,
    backend: Literal["matplotlib"],
    by: Keys = ...,
    facet: str | None = ...,
    title: str | None = ...,
) -> Figure: ...


def plot_reliability(
    table: pl.DataFrame,
    *,
    backend: str = "altair",
    by: Keys = None,
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
        Column(s) giving one colour per group: names or expressions of the table's
        columns (``pl.col("model").cast(pl.String)``), as a summary's `by`. By
        default, every column before ``bin`` (the table's group keys, and ``class``
        for a multi-class table) other than `facet`, or than the last key when it
        is the default facet.
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
    title = RELIABILITY_TITLE if title is None else title
    if backend == "altair":
        require("altair", "plot_reliability(backend='altair')")
        return altair_backend.reliability(frame, groups, facet, facets, legend_title, title)
    require("matplotlib", "plot_reliability(backend='matplotlib')")
    return matplotlib_backend.reliability(frame, groups, facet, facets, legend_title, title)


def _drawing_frame(
    table: pl.DataFrame, by: Keys, facet: str | None
) -> tuple[pl.DataFrame, list[str], str | None, list[object]]:
    """Check the table; add the group key and each bar's horizontal extent.

    Returns the frame, the group columns, the facet column and the facet values
    (``[None]`` without facets), groups and facet values in order of first appearance.
    """
    table = checked_table(table, TABLE_COLUMNS, "reliability table", "reliability")
    table, groups, facet = laid_out(table, by, facet, "bin", "reliability table")
    frame = side_by_side(labelled(table, groups, group_label(groups, "all"), GROUP))
    facets: list[object] = (
        frame.get_column(facet).unique(maintain_order=True).to_list() if facet else [None]
    )
    return frame, groups, facet, facets
