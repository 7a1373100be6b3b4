"""Charts of regression predictions: the quantile reliability diagram and the PIT histogram.

:func:`polars_calib.quantile_reliability` and :func:`polars_calib.regression_statistics`
compute the tables; :func:`plot_quantile_reliability` and :func:`plot_pit_histogram` draw
them. The histogram completes the sparse table's grid for display (an empty bin is a bar
of height 0), may merge its bins, and reads the chi-square test of uniformity of the
bins it draws (:func:`polars_calib._core.special.chi2_sf`). Drawing needs the ``plot``
extra, as :func:`polars_calib.plot_reliability` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import check_choice, check_n_bins
from polars_calib._core.special import chi2_sf
from polars_calib._plot import altair_backend, matplotlib_backend
from polars_calib._plot.common import (
    BACKENDS,
    GROUP,
    LABEL,
    PANEL,
    PIT_TITLE,
    QUANTILE_TITLE,
    PitFrame,
    checked_table,
    group_label,
    labelled,
    laid_out,
    require,
    side_by_side,
)

__all__ = ["PIT_COLUMNS", "QUANTILE_COLUMNS", "plot_pit_histogram", "plot_quantile_reliability"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure

QUANTILE_COLUMNS = ("level", "observed", "count", "lower", "upper")
"""Columns :func:`plot_quantile_reliability` reads; a quantile reliability table has them."""

PIT_COLUMNS = ("bin", "lower", "upper", "closed", "n_bins", "count", "weight", "sum_crps")
"""Columns :func:`plot_pit_histogram` reads (``sum_crps`` tells a regression table)."""

EDGE_TOLERANCE = 1e-12
"""How far a PIT table's edge may be from ``bin / n_bins`` (its edges are exact)."""


@overload
def plot_quantile_reliability(
    table: pl.DataFrame,
    *,
    backend: Literal["altair"] = ...,
    by: Keys = ...,
    facet: str | None = ...,
    title: str | None = ...,
) -> alt.LayerChart | alt.HConcatChart: ...


@overload
def plot_quantile_reliability(
    table: pl.DataFrame,
    *,
    backend: Literal["matplotlib"],
    by: Keys = ...,
    facet: str | None = ...,
    title: str | None = ...,
) -> Figure: ...


def plot_quantile_reliability(
    table: pl.DataFrame,
    *,
    backend: str = "altair",
    by: Keys = None,
    facet: str | None = None,
    title: str | None = None,
) -> alt.LayerChart | alt.HConcatChart | Figure:
    """Draw a quantile reliability diagram from a quantile reliability table.

    The observed frequency of each level is plotted against the nominal level, one
    line per group, over the dashed diagonal of perfect calibration, with the table's
    interval (``lower`` to ``upper``, Wilson) as a shaded band. The table does not say
    which curve it holds: the x axis is the "nominal level" of either (the quantile
    curve, the share of targets at or below the predicted ``p``-quantile; the
    central-interval curve, the share inside the central ``p``-interval); name it in
    `title`. A null share (a group holding refused rows) is a gap.

    Groups and facets are laid out as by :func:`plot_reliability`: the table's keys
    are its columns before ``level`` (the window start with ``time``/``every``).

    Parameters
    ----------
    table
        A quantile reliability table, as returned by
        :func:`polars_calib.quantile_reliability` (collected): the columns ``level``,
        ``observed``, ``count``, ``lower`` and ``upper``, preceded by the group keys.
    backend
        ``"altair"`` (default) or ``"matplotlib"``.
    by
        Column(s) giving one colour per group: names or expressions of the table's
        columns. By default, every key other than `facet` (or the default facet).
    facet
        Column with one diagram per value, side by side. By default none, except
        with several keys and `by` not given: the last key, when it has at most
        ``MAX_FACETS`` (4) values.
    title
        Title of the chart; ``"Quantile reliability diagram"`` by default.

    Returns
    -------
    altair.LayerChart or altair.HConcatChart or matplotlib.figure.Figure
        With ``backend="altair"``: the layered diagram (an ``HConcatChart`` of them
        with a facet); with ``backend="matplotlib"``: a ``Figure`` with the same
        content (not registered with ``pyplot``). Save either with :func:`save_png`.

    Raises
    ------
    ImportError
        When the plotting library is not installed.
    TypeError
        When `table` is not a DataFrame (collect a LazyFrame first).
    ValueError
        When a column is missing (the table is not a quantile reliability table).

    See Also
    --------
    polars_calib.quantile_reliability, plot_pit_histogram, plot_reliability

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "store": ["a", "a", "a", "b", "b", "b"],
    ...     "y": [10.0, 12.0, 9.0, 20.0, 26.0, 15.0],
    ...     "mu": [11.0, 11.5, 10.0, 21.0, 21.0, 20.0],
    ...     "sigma": [2.0, 2.0, 1.5, 1.0, 1.0, 1.5],
    ... })
    >>> table = log.calib.quantile_reliability("y", mean="mu", std="sigma", by="store")
    >>> type(pc.plot_quantile_reliability(table)).__name__
    'LayerChart'
    >>> type(pc.plot_quantile_reliability(table, facet="store")).__name__
    'HConcatChart'
    >>> type(pc.plot_quantile_reliability(table, backend="matplotlib")).__name__
    'Figure'
    """
    check_choice("backend", backend, BACKENDS)
    table = checked_table(
        table, QUANTILE_COLUMNS, "quantile reliability table", "quantile_reliability"
    )
    table, groups, facet = laid_out(table, by, facet, "level", "quantile reliability table")
    finite = [
        pl.when(pl.col(name).is_finite()).then(pl.col(name)).cast(pl.Float64).alias(name)
        for name in ("level", "observed", "lower", "upper")
    ]
    frame = labelled(table.with_columns(*finite), groups, group_label(groups, "observed"), GROUP)
    facets: list[object] = (
        frame.get_column(facet).unique(maintain_order=True).to_list() if facet else [None]
    )
    frame = frame.sort(GROUP, "level", maintain_order=True)
    legend_title = " / ".join(groups)
    title = QUANTILE_TITLE if title is None else title
    drawn = (frame, groups, facet, facets, legend_title, title)
    if backend == "altair":
        require("altair", "plot_quantile_reliability(backend='altair')")
        return altair_backend.quantile_reliability(*drawn)
    require("matplotlib", "plot_quantile_reliability(backend='matplotlib')")
    return matplotlib_backend.quantile_reliability(*drawn)


@overload
def plot_pit_histogram(
    table: pl.DataFrame,
    *,
    backend: Literal["altair"] = ...,
    by: Keys = ...,
    facet: str | None = ...,
    title: str | None = ...,
    n_bins: int | None = ...,
) -> alt.LayerChart | alt.HConcatChart: ...


@overload
def plot_pit_histogram(
    table: pl.DataFrame,
    *,
    backend: Literal["matplotlib"],
    by: Keys = ...,
    facet: str | None = ...,
    title: str | None = ...,
    n_bins: int | None = ...,
) -> Figure: ...


def plot_pit_histogram(
    table: pl.DataFrame,
    *,
    backend: str = "altair",
    by: Keys = None,
    facet: str | None = None,
    title: str | None = None,
    n_bins: int | None = None,
) -> alt.LayerChart | alt.HConcatChart | Figure:
    """Draw the histogram of the PIT from a regression statistics table, with its test.

    Each bar is a bin's share of the group's weight divided by the bin's width (a
    density), over the dashed line of the uniform density 1 that calibrated
    predictions give. The bins are the table's ``2 (n_levels - 1)`` equal-width bins
    (right-closed: bin 0 is ``[0, 1/B]``, bin ``k`` is ``(k/B, (k+1)/B]``), or `n_bins`
    of them merged. A bin the sparse table has no row for is drawn as 0. Groups share
    each bin side by side; facets as in :func:`plot_reliability`. Rows of the table
    that differ in a key not drawn (not in `by` nor `facet`) are summed, as tables of
    parts of the rows merge.

    The legend gives each group's chi-square test of uniformity over the drawn bins
    (Pearson's statistic ``sum_b (W_b - W/B)**2 / (W/B)`` on the bins' weights, weights
    counting as repeated rows, ``B - 1`` degrees of freedom): the histogram's test,
    which depends on its bins and is trustworthy when each bin expects about 5 rows
    or more. A group holding refused rows has no bars and no test.

    Parameters
    ----------
    table
        A regression statistics table, as returned by
        :func:`polars_calib.regression_statistics` (collected): the group keys, then
        ``bin``, ``lower``, ``upper``, ``closed``, ``n_bins``, ``count``, ``weight``
        and the sums (``sum_crps`` among them).
    backend
        ``"altair"`` (default) or ``"matplotlib"``.
    by
        Column(s) giving one colour per group: names or expressions of the table's
        columns. By default, every key other than `facet` (or the default facet).
    facet
        Column with one histogram per value, side by side. By default none, except
        with several keys and `by` not given: the last key, when it has at most
        ``MAX_FACETS`` (4) values.
    title
        Title of the chart; ``"PIT histogram"`` by default.
    n_bins
        Number of bars: a divisor of the table's number of bins, merging neighbours;
        ``None`` (default): the table's bins.

    Returns
    -------
    altair.LayerChart or altair.HConcatChart or matplotlib.figure.Figure
        With ``backend="altair"``: the layered histogram (an ``HConcatChart`` of them,
        each with its legend, with a facet); with ``backend="matplotlib"``: a
        ``Figure`` with the same content. Save either with :func:`save_png`.

    Raises
    ------
    ImportError
        When the plotting library is not installed.
    TypeError
        When `table` is not a DataFrame (collect a LazyFrame first).
    ValueError
        When the table is not a regression statistics table (a missing column, mixed
        grids), or `n_bins` does not divide its number of bins (the message lists the
        choices).

    See Also
    --------
    polars_calib.regression_statistics, plot_quantile_reliability

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "store": ["a", "a", "a", "b", "b", "b"],
    ...     "y": [10.0, 12.0, 9.0, 20.0, 26.0, 15.0],
    ...     "mu": [11.0, 11.5, 10.0, 21.0, 21.0, 20.0],
    ...     "sigma": [2.0, 2.0, 1.5, 1.0, 1.0, 1.5],
    ... })
    >>> table = log.calib.regression_statistics(
    ...     "y", mean="mu", std="sigma", by="store", n_levels=11
    ... )
    >>> type(pc.plot_pit_histogram(table, n_bins=5)).__name__
    'LayerChart'
    >>> type(pc.plot_pit_histogram(table, backend="matplotlib")).__name__
    'Figure'
    """
    check_choice("backend", backend, BACKENDS)
    drawn = _pit_frame(table, by, facet, n_bins, PIT_TITLE if title is None else title)
    if backend == "altair":
        require("altair", "plot_pit_histogram(backend='altair')")
        return altair_backend.pit_histogram(drawn)
    require("matplotlib", "plot_pit_histogram(backend='matplotlib')")
    return matplotlib_backend.pit_histogram(drawn)


def _grid(table: pl.DataFrame, n_bins: int | None) -> tuple[int, int, str]:
    """The table's number of bins, the number drawn, and the closure; checked."""
    grids = table.select("n_bins", "closed").unique()
    if grids.height > 1:
        msg = f"`table` mixes PIT grids ({grids.rows()}): draw one grid at a time"
        raise ValueError(msg)
    if grids.height == 0 or grids.item(0, "n_bins") is None:
        msg = "`table` has no PIT grid (`n_bins` is empty)"
        raise ValueError(msg)
    table_bins, closed = int(grids.item(0, "n_bins")), str(grids.item(0, "closed"))
    binned = table.filter(pl.col("bin").is_not_null())
    exact = (pl.col("bin") / table_bins - pl.col("lower")).abs() <= EDGE_TOLERANCE
    if not binned.select(exact.all()).item():
        msg = "`table` is not a PIT table: its bins are not the equal-width grid k / n_bins"
        raise ValueError(msg)
    if n_bins is None:
        return table_bins, table_bins, closed
    check_n_bins(n_bins)
    if table_bins % n_bins != 0:
        choices = [k for k in range(1, table_bins + 1) if table_bins % k == 0]
        msg = (
            f"`n_bins` must divide the table's {table_bins} bins (2 (n_levels - 1)) so that"
            f" bins merge whole: one of {', '.join(map(str, choices))}; got {n_bins}"
        )
        raise ValueError(msg)
    return table_bins, n_bins, closed


def _pit_frame(
    table: pl.DataFrame, by: Keys, facet: str | None, n_bins: int | None, title: str
) -> PitFrame:
    """Check the table; merge its bins, complete the grid, add shares and the tests."""
    what = "regression statistics table"
    table = checked_table(table, PIT_COLUMNS, what, "regression_statistics")
    table, groups, facet = laid_out(table, by, facet, "bin", what)
    table_bins, drawn_bins, closed = _grid(table, n_bins)
    keyed = labelled(table, groups, group_label(groups, "all"), GROUP)
    if facet:
        keyed = labelled(keyed, [facet], group_label([facet], ""), PANEL)
    keys = [*([PANEL] if facet else []), GROUP]
    binned = pl.col("bin").is_not_null()
    # Every panel and group, in order of first appearance, with its weight and refused rows.
    totals = keyed.group_by(keys, maintain_order=True).agg(
        total=pl.col("weight").filter(binned).sum(),
        refused=pl.col("count").filter(~binned).sum(),
    )
    merged = (
        keyed.filter(binned)
        .group_by(*keys, (pl.col("bin") // (table_bins // drawn_bins)).cast(pl.Int64))
        .agg(pl.col("count").sum(), pl.col("weight").sum())
    )
    bins = pl.DataFrame({"bin": pl.int_range(drawn_bins, eager=True, dtype=pl.Int64)})
    used = (pl.col("refused") == 0) & (pl.col("total") > 0.0)
    share = pl.when(used).then(pl.col("weight") / pl.col("total"))
    frame = (
        totals.join(bins, how="cross")
        .join(merged, on=[*keys, "bin"], how="left", maintain_order="left")
        .with_columns(pl.col("count", "weight").fill_null(0))
        .with_columns(
            lower=pl.col("bin") / drawn_bins,
            upper=(pl.col("bin") + 1) / drawn_bins,
            share=share,
            density=share * drawn_bins,
        )
    )
    labels = _tests(frame, keys, drawn_bins, bool(groups))
    frame = frame.join(labels, on=keys, how="left", maintain_order="left")
    return PitFrame(
        frame=side_by_side(frame.drop("total", "refused")),
        groups=groups,
        facet=facet,
        facets=keyed.get_column(facet).unique(maintain_order=True).to_list() if facet else [None],
        order=keyed.get_column(GROUP).unique(maintain_order=True).to_list(),
        n_bins=drawn_bins,
        closed=closed,
        title=title,
    )


def _tests(frame: pl.DataFrame, keys: list[str], n_bins: int, named: bool) -> pl.DataFrame:
    """Per panel and group of the completed grid: its test, as a legend entry (``LABEL``).

    Pearson's statistic over the `n_bins` drawn bins, ``sum_b (W_b - W/B)**2 / (W/B)``,
    empty bins included, with ``B - 1`` degrees of freedom; a group holding refused
    rows, or with no weight, has none.
    """
    expected = pl.col("total") / n_bins
    tests = (
        frame.group_by(keys, maintain_order=True)
        .agg(
            pl.col("total").first(),
            pl.col("refused").first(),
            statistic=((pl.col("weight") - expected) ** 2 / expected).sum(),
        )
        .with_columns(
            statistic=pl.when((pl.col("refused") == 0) & (pl.col("total") > 0.0)).then("statistic")
        )
        .with_columns(p_value=chi2_sf(pl.col("statistic"), pl.lit(n_bins - 1)))
    )
    labels = [_label(row, named) for row in tests.iter_rows(named=True)]
    return tests.select(*keys, "statistic", "p_value", pl.Series(LABEL, labels, dtype=pl.String))


def _label(row: dict[str, object], named: bool) -> str:
    """A group's legend entry: its name and its test, or why it has none."""
    name = f"{row[GROUP]}: " if named else ""
    refused, statistic, p_value = row["refused"], row["statistic"], row["p_value"]
    if refused:
        rows = "row" if refused == 1 else "rows"
        return f"{name}{refused} refused {rows}, no test"
    if not isinstance(statistic, float):
        return f"{name}no rows"
    if not isinstance(p_value, float):
        return f"{name}χ² = {statistic:.3g}"
    return f"{name}χ² = {statistic:.3g}, p = {p_value:.3g}"
