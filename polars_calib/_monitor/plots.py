"""The drift charts of a log: the CUSUM charts with their alarms, and the O - E chart.

The rows drawn come from the monitoring feature (:mod:`polars_calib._monitor.charts`:
the charts :func:`polars_calib.monitor` watches, and
:func:`polars_calib.observed_minus_expected`, read in batches and decimated to a
bounded number of points per panel as they are read,
:mod:`polars_calib._monitor.decimation`), the drawing from the chart layer
(:mod:`polars_calib._plot.drift`). Drawing needs the ``plot`` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, overload

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import check_choice
from polars_calib._monitor.alarms import GROUP
from polars_calib._monitor.charts import ROW_NUMBER, ChartRows, cusum_rows, oe_rows
from polars_calib._plot.common import BACKENDS, PANEL, SERIES, TAB10, labelled
from polars_calib._plot.drift import MAX_POINTS, DriftFrame, check_max_points, draw
from polars_calib._plot.drift import panel_label as _panel

__all__ = ["cusum_frame", "plot_cusum", "plot_observed_minus_expected"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure

UP, DOWN = "#d95f02", "#1b9e77"
"""The colours of the charts watching for under-prediction (R > 1) and over-prediction."""


def _finite(column: str) -> pl.Expr:
    """`column` with its non-finite values as nulls (valid JSON, a gap in a tooltip)."""
    return pl.when(pl.col(column).is_finite()).then(pl.col(column)).alias(column)


def cusum_frame(charts: ChartRows, title: str | None) -> DriftFrame:
    """The drawing frame of the CUSUM charts: down charts (R < 1) drawn below zero.

    A chart's value and threshold are drawn as ``S`` and ``h`` for ``R > 1`` and as
    ``-S`` and ``-h`` for ``R < 1``; an infinite ``S`` (a contradicted certain
    prediction) is drawn at its threshold, its alarm marked there.
    """
    frame = charts.frame
    ratios = frame.get_column("odds_ratio").unique(maintain_order=True).sort().to_list()
    names = [f"R = {ratio:g} ({'over' if ratio < 1 else 'under'}-prediction)" for ratio in ratios]
    sign = pl.when(pl.col("odds_ratio") < 1.0).then(-1.0).otherwise(1.0)
    threshold = pl.when(pl.col("threshold").is_finite()).then(pl.col("threshold"))
    height = pl.when(pl.col("statistic").is_infinite()).then(threshold).otherwise("statistic")
    drawn = frame.with_columns(
        pl.col("odds_ratio").replace_strict(ratios, names).alias(SERIES),
        (sign * height).alias("value"),
        (sign * threshold).alias("limit"),
    )
    drawn = labelled(drawn, charts.keys, _panel(charts.keys), PANEL)
    tooltip = ["odds_ratio", "statistic", "threshold", "run_start"]
    colours: list[str] = [DOWN if ratio < 1 else UP for ratio in ratios]
    if len(set(ratios)) > 2:  # several charts a side: a colour each
        colours = list(TAB10[: len(ratios)])
    return _frame(
        charts, drawn, names, colours, tooltip, "CUSUM (down: −S)", title or "CUSUM charts"
    )


def _frame(
    charts: ChartRows,
    drawn: pl.DataFrame,
    names: list[str],
    colours: list[str],
    tooltip: list[str],
    y_title: str,
    title: str,
) -> DriftFrame:
    """The drawing frame: the rows drawn, in group order, with their panels' order."""
    time = charts.time
    drawn = drawn.sort(GROUP, SERIES, ROW_NUMBER).select(
        PANEL,
        time,
        SERIES,
        "value",
        "limit",
        "alarm",
        *(_finite(name) if drawn.schema[name].is_float() else name for name in tooltip),
    )
    return DriftFrame(
        frame=drawn,
        time=time,
        panels=drawn.get_column(PANEL).unique(maintain_order=True).to_list(),
        series=names,
        colours=colours,
        tooltip=tooltip,
        y_title=y_title,
        title=title,
        temporal=drawn.schema[time].is_temporal(),
    )


@overload
def plot_cusum(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = ...,
    time: str,
    weight: str | None = ...,
    odds_ratio: float | Sequence[float] = ...,
    arl0: float = ...,
    threshold: float | Sequence[float] | None = ...,
    reference: pl.Expr | None = ...,
    simulated_alarms: int = ...,
    seed: int = ...,
    backend: Literal["altair"] = ...,
    max_points: int = ...,
    title: str | None = ...,
) -> alt.LayerChart | alt.FacetChart: ...


@overload
def plot_cusum(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = ...,
    time: str,
    weight: str | None = ...,
    odds_ratio: float | Sequence[float] = ...,
    arl0: float = ...,
    threshold: float | Sequence[float] | None = ...,
    reference: pl.Expr | None = ...,
    simulated_alarms: int = ...,
    seed: int = ...,
    backend: Literal["matplotlib"],
    max_points: int = ...,
    title: str | None = ...,
) -> Figure: ...


def plot_cusum(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str,
    weight: str | None = None,
    odds_ratio: float | Sequence[float] = (0.5, 2.0),
    arl0: float = 10_000.0,
    threshold: float | Sequence[float] | None = None,
    reference: pl.Expr | None = None,
    simulated_alarms: int = 200,
    seed: int = 0,
    backend: str = "altair",
    max_points: int = MAX_POINTS,
    title: str | None = None,
) -> alt.LayerChart | alt.FacetChart | Figure:
    """Draw the risk-adjusted CUSUM charts of a log, one panel per group, with their alarms.

    Each panel shows a group's charts in time order, as :func:`polars_calib.monitor`
    watches them (restarted at 0 after each alarm): the charts watching for
    under-prediction (``R > 1``, orange) above zero, those watching for
    over-prediction (``R < 1``, green) mirrored below it (``-S``), each with its
    threshold as a dashed line (``h``, or ``-h``), and every alarm of
    :func:`polars_calib.monitor` as a red triangle on its row. Hovering a point
    shows its chart, ``S``, the threshold and, on an alarm, the start of its run.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions (a log); a LazyFrame is read in batches
        as :func:`polars_calib.monitor` reads it (see Notes), never collected whole.
    prob, label, by, time, weight
        As :func:`polars_calib.monitor`: one panel per `by` group.
    odds_ratio, arl0, threshold, reference, simulated_alarms, seed
        As :func:`polars_calib.monitor`: the charts and their thresholds.
    backend
        ``"altair"`` (default) or ``"matplotlib"``.
    max_points
        Bound of the rows drawn per panel (besides the alarms and run maxima): a
        longer chart is decimated (see Notes).
    title
        Title of the chart; ``"CUSUM charts"`` by default.

    Returns
    -------
    altair.LayerChart or altair.FacetChart or matplotlib.figure.Figure
        One panel (a ``LayerChart``) or one row of panels per group (a
        ``FacetChart``, each panel its own y scale); or a ``Figure``. Save either
        with :func:`save_png`.

    Raises
    ------
    CalibrationDataError, TypeError, ValueError
        As :func:`polars_calib.monitor` (refused rows, null times, bad options).
    ImportError
        When the plotting library is not installed.

    Notes
    -----
    **Decimation.** A panel of more than `max_points` rows (over its charts) is not
    drawn row by row: each chart's rows are cut into ``max_points // (4 × charts)``
    buckets of consecutive rows, and each bucket keeps its first, last, lowest and
    highest rows (the first on ties; a line through them covers the same pixels as
    the whole chart when a bucket is about a pixel wide); every alarm is kept, and
    each run's highest row. A 10M-row log draws about `max_points` points per group
    plus its alarms.

    **Memory.** The log is read as :func:`polars_calib.monitor` reads it (a streaming
    pass for the checks and each group's rows, then the rows in batches, sorted out
    of memory when a group's time goes back), and each batch is folded into the rows
    kept: memory holds a batch and the rows drawn, not the log.

    A contradicted certain prediction (``S = inf``) is drawn at the threshold,
    marked as the alarm it is.

    See Also
    --------
    polars_calib.monitor, polars_calib.cusum, plot_observed_minus_expected

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "model": ["a"] * 8 + ["b"] * 8,
    ...     "ts": list(range(8)) * 2,
    ...     "p": [0.1] * 16,
    ...     "y": [0, 1, 1, 1, 0, 0, 0, 0] * 2,
    ... })
    >>> chart = pc.plot_cusum(log, "p", "y", by="model", time="ts", threshold=1.0)
    >>> type(chart).__name__
    'FacetChart'
    >>> figure = pc.plot_cusum(
    ...     log, "p", "y", by="model", time="ts", threshold=1.0, backend="matplotlib"
    ... )
    >>> type(figure).__name__
    'Figure'
    """
    check_choice("backend", backend, BACKENDS)
    check_max_points(max_points)
    charts = cusum_rows(
        data,
        prob,
        label,
        by=by,
        time=time,
        weight=weight,
        odds_ratio=odds_ratio,
        arl0=arl0,
        threshold=threshold,
        reference=reference,
        simulated_alarms=simulated_alarms,
        seed=seed,
        max_points=max_points,
    )
    return draw(cusum_frame(charts, title), backend, "plot_cusum")


@overload
def plot_observed_minus_expected(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = ...,
    time: str,
    weight: str | None = ...,
    backend: Literal["altair"] = ...,
    max_points: int = ...,
    title: str | None = ...,
) -> alt.LayerChart | alt.FacetChart: ...


@overload
def plot_observed_minus_expected(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = ...,
    time: str,
    weight: str | None = ...,
    backend: Literal["matplotlib"],
    max_points: int = ...,
    title: str | None = ...,
) -> Figure: ...


def plot_observed_minus_expected(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str,
    weight: str | None = None,
    backend: str = "altair",
    max_points: int = MAX_POINTS,
    title: str | None = None,
) -> alt.LayerChart | alt.FacetChart | Figure:
    """Draw the observed-minus-expected (VLAD) chart of a log, one panel per group.

    Each panel shows :func:`polars_calib.observed_minus_expected` over a group's rows
    in time order (as ``.over(by, order_by=time)``, ties in the frame's order): the
    running excess of outcomes over predictions, rising while the model
    under-predicts, falling while it over-predicts, around the zero line.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions (a log); a LazyFrame is read in batches,
        as :func:`plot_cusum` reads it.
    prob, label, by, time, weight
        As :func:`polars_calib.monitor`: one panel per `by` group.
    backend
        ``"altair"`` (default) or ``"matplotlib"``.
    max_points
        Bound of the rows drawn per panel, as :func:`plot_cusum` decimates them.
    title
        Title of the chart; ``"Observed − expected"`` by default.

    Returns
    -------
    altair.LayerChart or altair.FacetChart or matplotlib.figure.Figure
        As :func:`plot_cusum`.

    Raises
    ------
    CalibrationDataError, TypeError, ValueError
        As :func:`polars_calib.monitor` (refused rows, null times, bad options).
    ImportError
        When the plotting library is not installed.

    See Also
    --------
    polars_calib.observed_minus_expected, plot_cusum

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({"ts": [1, 2, 3, 4], "p": [0.2, 0.1, 0.3, 0.4], "y": [1, 1, 0, 1]})
    >>> type(pc.plot_observed_minus_expected(log, "p", "y", time="ts")).__name__
    'LayerChart'
    """
    check_choice("backend", backend, BACKENDS)
    check_max_points(max_points)
    charts = oe_rows(data, prob, label, by=by, time=time, weight=weight, max_points=max_points)
    name = "observed − expected"
    drawn = charts.frame.with_columns(
        pl.lit(name).alias(SERIES),
        pl.col("statistic").alias("value"),
        pl.lit(None, pl.Float64).alias("limit"),
        pl.lit(False).alias("alarm"),
    )
    drawn = labelled(drawn, charts.keys, _panel(charts.keys), PANEL)
    frame = _frame(
        charts,
        drawn,
        [name],
        [TAB10[0]],
        ["statistic"],
        "Σ w (y − p)",
        title or "Observed − expected",
    )
    return draw(frame, backend, "plot_observed_minus_expected")
