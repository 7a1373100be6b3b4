"""Reliability tables and metric summaries of a whole frame, and the frame namespaces.

:func:`reliability` and :func:`summary` are free functions taking a DataFrame or a
LazyFrame and returning the same kind; ``df.calib.reliability(...)`` and
``lf.calib.summary(...)`` delegate to them. Both are two-stage queries over the
mergeable statistics of :mod:`polars_calib.stats`: sums per (group, bin), then a
finisher per group, so they run in Polars' streaming engine.

The data are checked before anything is computed (see
:func:`polars_calib.validate`): a bad frame raises one
:class:`~polars_calib.CalibrationDataError` naming each column, problem and row
count. The check runs **eagerly, when the function is called**, for a LazyFrame
too, together with the computation: the binary ``summary`` screens the data inside
its statistics pass (a scan is read once; bad data are read again to count their
problems), the others collect the checks and the computation together. ``summary``
collects its per-(group, bin) statistics and returns a lazy finisher over that small
table; ``reliability`` collects its table and returns it as a LazyFrame.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic

import polars as pl

from polars_calib._exprs import check_choice
from polars_calib.binning import Binning, quantile_edges
from polars_calib.multiclass import SUM_TOLERANCE, check_sum_tol
from polars_calib.reductions import (
    REDUCTIONS,
    finish_reduced,
    reduced_problem,
    reduced_statistics,
)
from polars_calib.stats import (
    METRICS,
    FrameT,
    binary_outcomes,
    bin_statistics,
    check_confidence,
    check_metrics,
    finish_metrics,
    key_names,
    reliability_rows,
    same_kind,
    statistics_query,
    uniform_grid,
    used_rows,
)
from polars_calib.validation import (
    collect_validated,
    is_vector,
    validate,
)


def reliability(
    data: FrameT,
    prob: str,
    label: str,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    closed: str = "right",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    confidence: float = 0.95,
    reduction: str | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> FrameT:
    """Reliability table: per bin, the mean prediction against the observed frequency.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    n_bins
        Number of bins, a positive int.
    strategy
        ``"uniform"`` (equal width) or ``"quantile"`` (equal mass within each group).
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ...``; ``"left"``:
        ``[0, 1/B), ..., [(B-1)/B, 1]``.
    by
        Group-key column name(s); ``None`` for one group.
    weight
        Name of an optional column of non-negative sample weights.
    confidence
        Confidence level of the Wilson interval on the observed frequency.
    reduction
        For probability vectors (an ``Array`` or ``List`` column, labels
        ``0 .. K - 1``), the binary problem(s) tabulated: ``"confidence"`` (the
        default: the largest probability against whether its arg-max is the label),
        ``"top_label"`` (the same, per predicted class) or ``"classwise"`` (``p_j``
        against ``label == j``, per class ``j``); as in
        :func:`polars_calib.confidence_ece` and friends. ``None`` for binary data.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a probability vector.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`; ``n_bins`` rows per group, empty bins included,
        sorted by keys and bin, with columns: the keys, ``class`` (Int64, with
        ``reduction="top_label"`` or ``"classwise"``), ``bin`` (Int32, 0-based),
        ``lower`` and ``upper`` (Float64 bin edges), ``count`` (Int64 rows),
        ``mean_predicted``, ``observed`` (fraction of positives), ``gap``
        (``observed - mean_predicted``), ``observed_lower`` and ``observed_upper``
        (Wilson interval), all Float64 and null in an empty bin.

    Raises
    ------
    CalibrationDataError
        When the data are invalid (see :func:`polars_calib.validate`).

    Notes
    -----
    Uniform edges are the exact ``k / n_bins``; quantile edges are the group's
    linear-interpolation quantiles, tied edges giving empty bins. With weights,
    the means are weighted and the Wilson interval uses the bin weight ``n``:
    ``(p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` with ``p`` the observed
    frequency and ``z`` the normal quantile of ``(1 + confidence) / 2``
    (Wilson, 1927). Rows with a null probability, label or weight are ignored; a
    group with no such row is absent.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.1, 0.2, 0.2, 0.7, 0.8, 0.9],
    ...     "y": [0, 0, 1, 1, 0, 1],
    ... })
    >>> table = df.calib.reliability("p", "y", n_bins=4)
    >>> table.select("bin", "lower", "upper", "count", "mean_predicted", "observed", "gap")
    shape: (4, 7)
    ┌─────┬───────┬───────┬───────┬────────────────┬──────────┬──────────┐
    │ bin ┆ lower ┆ upper ┆ count ┆ mean_predicted ┆ observed ┆ gap      │
    │ --- ┆ ---   ┆ ---   ┆ ---   ┆ ---            ┆ ---      ┆ ---      │
    │ i32 ┆ f64   ┆ f64   ┆ i64   ┆ f64            ┆ f64      ┆ f64      │
    ╞═════╪═══════╪═══════╪═══════╪════════════════╪══════════╪══════════╡
    │ 0   ┆ 0.0   ┆ 0.25  ┆ 3     ┆ 0.166667       ┆ 0.333333 ┆ 0.166667 │
    │ 1   ┆ 0.25  ┆ 0.5   ┆ 0     ┆ null           ┆ null     ┆ null     │
    │ 2   ┆ 0.5   ┆ 0.75  ┆ 1     ┆ 0.7            ┆ 1.0      ┆ 0.3      │
    │ 3   ┆ 0.75  ┆ 1.0   ┆ 2     ┆ 0.85           ┆ 0.5      ┆ -0.35    │
    └─────┴───────┴───────┴───────┴────────────────┴──────────┴──────────┘

    The 95% Wilson interval around each observed frequency:

    >>> table.select(
    ...     "bin", pl.col("observed", "observed_lower", "observed_upper").round(4)
    ... )
    shape: (4, 4)
    ┌─────┬──────────┬────────────────┬────────────────┐
    │ bin ┆ observed ┆ observed_lower ┆ observed_upper │
    │ --- ┆ ---      ┆ ---            ┆ ---            │
    │ i32 ┆ f64      ┆ f64            ┆ f64            │
    ╞═════╪══════════╪════════════════╪════════════════╡
    │ 0   ┆ 0.3333   ┆ 0.0615         ┆ 0.7923         │
    │ 1   ┆ null     ┆ null           ┆ null           │
    │ 2   ┆ 1.0      ┆ 0.2065         ┆ 1.0            │
    │ 3   ┆ 0.5      ┆ 0.0945         ┆ 0.9055         │
    └─────┴──────────┴────────────────┴────────────────┘
    """
    binning = Binning(n_bins, strategy, closed)
    keys = key_names(by)
    z = check_confidence(confidence)
    reduction, tol = _check_reduction(data, prob, reduction, sum_tol, keys)

    def table(lf: pl.LazyFrame) -> pl.LazyFrame:
        group = keys
        if reduction is not None:
            lf, group = reduced_problem(lf, prob, label, weight, keys, reduction)
        stats = statistics_query(lf, prob, label, weight, group, binning)
        if binning.strategy == "quantile":
            grid = _quantile_grid(lf, prob, label, weight, group, n_bins)
        else:
            grid = uniform_grid(n_bins)
        return reliability_rows(stats, grid, group, z)

    # One run over the data: the table and the validation counts are collected together.
    result = collect_validated(data, prob, label, weight, keys, table, sum_tol=tol)
    return same_kind(data, result.lazy())


def _check_reduction(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    reduction: str | None,
    sum_tol: float,
    keys: list[str],
) -> tuple[str | None, float | None]:
    """The reduction (``"confidence"`` by default for vectors, None for binary data)
    and the vector sum tolerance (None for binary data); raise on bad arguments."""
    if reduction is None and not _holds_vectors(data, prob):
        return None, None
    reduction = check_choice("reduction", reduction or "confidence", REDUCTIONS)
    if "class" in keys:
        msg = "`by` cannot hold 'class': the reduction keys its statistics by class"
        raise ValueError(msg)
    return reduction, check_sum_tol(sum_tol)


def _holds_vectors(data: pl.DataFrame | pl.LazyFrame, prob: str) -> bool:
    schema = data.collect_schema() if isinstance(data, (pl.DataFrame, pl.LazyFrame)) else {}
    dtype = schema.get(prob) if isinstance(prob, str) else None
    return dtype is not None and is_vector(dtype)


def _quantile_grid(
    lf: pl.LazyFrame, prob: str, label: str, weight: str | None, keys: list[str], n_bins: int
) -> pl.LazyFrame:
    """Per group, each quantile bin with its edges: the keys, ``bin``, ``lower``, ``upper``."""
    outcomes = binary_outcomes(prob, label, weight)
    edges = pl.concat_list(quantile_edges(outcomes.prob, n_bins)).alias("edges")
    rows = used_rows(lf, outcomes)
    per_group = rows.group_by(keys).agg(edges) if keys else rows.select(edges)
    return per_group.select(
        *keys,
        pl.int_ranges(0, n_bins, dtype=pl.Int32).alias("bin"),
        pl.col("edges").list.head(n_bins).alias("lower"),
        pl.col("edges").list.tail(n_bins).alias("upper"),
    ).explode("bin", "lower", "upper")


def summary(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: str | Sequence[str] | None = None,
    time: str | None = None,
    every: str | None = None,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    metrics: Sequence[str] = METRICS,
    weight: str | None = None,
    reduction: str | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> FrameT:
    """Calibration metrics per group, and per calendar window of a time column.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class, or
        probability vectors (``Array`` or ``List``; see `reduction`).
    label
        Name of the 0/1 (or boolean) outcome column; with vectors, the true class,
        an integer in ``0 .. K - 1``.
    by
        Group-key column name(s); ``None`` for one group.
    time
        Name of a Date or Datetime column; with `every`, the rows are grouped by
        tumbling calendar windows as well.
    every
        Window length, a Polars duration string (``"1h"``, ``"1d"``, ``"1w"``,
        ``"1mo"``); the ``window`` key holds each window's start,
        ``pl.col(time).dt.truncate(every)``.
    n_bins
        Number of bins of the binned metrics, a positive int.
    strategy
        ``"uniform"`` (equal width) or ``"quantile"`` (equal mass within each group).
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ...``; ``"left"``:
        ``[0, 1/B), ..., [(B-1)/B, 1]``.
    metrics
        Which of ``"ece"``, ``"mce"``, ``"rmsce"``, ``"brier"``, ``"log_loss"`` to
        compute, in this order.
    weight
        Name of an optional column of non-negative sample weights.
    reduction
        For probability vectors (an ``Array`` or ``List`` column, labels
        ``0 .. K - 1``), which multi-class calibration error ``ece``, ``mce`` and
        ``rmsce`` measure: ``"confidence"`` (the default for vectors),
        ``"top_label"`` or ``"classwise"``, the numbers of
        :func:`polars_calib.confidence_ece`, :func:`polars_calib.top_label_ece` and
        :func:`polars_calib.classwise_ece`. ``brier`` and ``log_loss`` are then the
        multi-class scores of :func:`polars_calib.brier` and
        :func:`polars_calib.log_loss`. ``None`` for binary data.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a probability vector.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`; one row per group, sorted by the keys: the `by`
        keys, ``window`` (with `time`), ``count`` (Int64 rows), ``mean_predicted``
        and ``observed`` (Float64 weighted mean probability and fraction of
        positives; for vectors, the mean confidence and the accuracy), then one
        Float64 column per metric, named after it.

    Raises
    ------
    CalibrationDataError
        When the data are invalid (see :func:`polars_calib.validate`) or the time
        column is not temporal.

    Notes
    -----
    Equal, up to rounding, to the expression forms in ``group_by().agg``
    (:func:`polars_calib.ece` and friends), computed as two aggregations:
    :func:`polars_calib.bin_statistics` per (group, bin), then
    :func:`polars_calib.metrics_from_statistics`'s finisher per group. Rows with a
    null probability, label or weight are ignored; a group with no such row is
    absent (the expressions give it null metrics).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "model": ["a", "a", "a", "b", "b", "b"],
    ...     "p": [0.1, 0.4, 0.8, 0.3, 0.6, 0.9],
    ...     "y": [0, 1, 1, 0, 0, 1],
    ... })
    >>> df.calib.summary("p", "y", by="model", n_bins=5, metrics=["ece", "brier"])
    shape: (2, 6)
    ┌───────┬───────┬────────────────┬──────────┬──────────┬──────────┐
    │ model ┆ count ┆ mean_predicted ┆ observed ┆ ece      ┆ brier    │
    │ ---   ┆ ---   ┆ ---            ┆ ---      ┆ ---      ┆ ---      │
    │ str   ┆ i64   ┆ f64            ┆ f64      ┆ f64      ┆ f64      │
    ╞═══════╪═══════╪════════════════╪══════════╪══════════╪══════════╡
    │ a     ┆ 3     ┆ 0.433333       ┆ 0.666667 ┆ 0.3      ┆ 0.136667 │
    │ b     ┆ 3     ┆ 0.6            ┆ 0.333333 ┆ 0.333333 ┆ 0.153333 │
    └───────┴───────┴────────────────┴──────────┴──────────┴──────────┘

    Per day, from a LazyFrame (the result is lazy too):

    >>> from datetime import datetime
    >>> log = df.lazy().with_columns(
    ...     ts=pl.Series([datetime(2024, 3, d, 12) for d in (1, 1, 2, 1, 2, 2)])
    ... )
    >>> log.calib.summary(
    ...     "p", "y", by="model", time="ts", every="1d", metrics=["brier"]
    ... ).collect()
    shape: (4, 6)
    ┌───────┬─────────────────────┬───────┬────────────────┬──────────┬───────┐
    │ model ┆ window              ┆ count ┆ mean_predicted ┆ observed ┆ brier │
    │ ---   ┆ ---                 ┆ ---   ┆ ---            ┆ ---      ┆ ---   │
    │ str   ┆ datetime[μs]        ┆ i64   ┆ f64            ┆ f64      ┆ f64   │
    ╞═══════╪═════════════════════╪═══════╪════════════════╪══════════╪═══════╡
    │ a     ┆ 2024-03-01 00:00:00 ┆ 2     ┆ 0.25           ┆ 0.5      ┆ 0.185 │
    │ a     ┆ 2024-03-02 00:00:00 ┆ 1     ┆ 0.8            ┆ 1.0      ┆ 0.04  │
    │ b     ┆ 2024-03-01 00:00:00 ┆ 1     ┆ 0.3            ┆ 0.0      ┆ 0.09  │
    │ b     ┆ 2024-03-02 00:00:00 ┆ 2     ┆ 0.75           ┆ 0.5      ┆ 0.185 │
    └───────┴─────────────────────┴───────┴────────────────┴──────────┴───────┘
    """
    binning = Binning(n_bins, strategy, closed)
    keys: list[str] = key_names(by)
    names = check_metrics(metrics)
    if (time is None) != (every is None):
        msg = "`time` and `every` go together: give both or neither"
        raise ValueError(msg)
    if "window" in keys:
        msg = "`by` cannot hold 'window': the result has a column of that name"
        raise ValueError(msg)
    group = [*keys, "window"] if every is not None else keys
    reduction, tol = _check_reduction(data, prob, reduction, sum_tol, keys)

    def statistics(lf: pl.LazyFrame) -> pl.LazyFrame:
        if time is not None and every is not None:
            lf = lf.with_columns(pl.col(time).dt.truncate(every).alias("window"))
        if reduction is not None:
            return reduced_statistics(
                lf, prob, label, weight, group, binning, reduction, names
            )
        return statistics_query(lf, prob, label, weight, group, binning, names)

    # The statistics are collected with the validation (see `collect_validated`), then
    # the small statistics table is finished lazily.
    stats = collect_validated(
        data, prob, label, weight, keys, statistics, time=time, sum_tol=tol
    ).lazy()
    if reduction is not None:
        return same_kind(data, finish_reduced(stats, group, names, reduction))
    return same_kind(data, finish_metrics(stats, group, names))


class _FrameCalibNamespace(Generic[FrameT]):
    """The methods shared by the DataFrame and LazyFrame namespaces.

    Each delegates in one line to the free function, and returns the kind of frame
    it was called on.
    """

    def __init__(self, data: FrameT) -> None:
        self._data: FrameT = data

    def reliability(
        self,
        prob: str,
        label: str,
        *,
        n_bins: int = 10,
        strategy: str = "uniform",
        closed: str = "right",
        by: str | Sequence[str] | None = None,
        weight: str | None = None,
        confidence: float = 0.95,
        reduction: str | None = None,
        sum_tol: float = SUM_TOLERANCE,
    ) -> FrameT:
        """Reliability table; see :func:`polars_calib.reliability`."""
        return reliability(
            self._data, prob, label, n_bins=n_bins, strategy=strategy, closed=closed, by=by,
            weight=weight, confidence=confidence, reduction=reduction, sum_tol=sum_tol,
        )

    def summary(
        self,
        prob: str,
        label: str,
        *,
        by: str | Sequence[str] | None = None,
        time: str | None = None,
        every: str | None = None,
        n_bins: int = 15,
        strategy: str = "uniform",
        closed: str = "right",
        metrics: Sequence[str] = METRICS,
        weight: str | None = None,
        reduction: str | None = None,
        sum_tol: float = SUM_TOLERANCE,
    ) -> FrameT:
        """Metrics per group and window; see :func:`polars_calib.summary`."""
        return summary(
            self._data, prob, label, by=by, time=time, every=every, n_bins=n_bins,
            strategy=strategy, closed=closed, metrics=metrics, weight=weight,
            reduction=reduction, sum_tol=sum_tol,
        )

    def bin_statistics(
        self,
        prob: str,
        label: str,
        *,
        by: str | Sequence[str] | None = None,
        n_bins: int = 15,
        strategy: str = "uniform",
        closed: str = "right",
        weight: str | None = None,
    ) -> FrameT:
        """Mergeable statistics per group and bin; see :func:`polars_calib.bin_statistics`."""
        return same_kind(
            self._data,
            bin_statistics(
                self._data, prob, label, by=by, n_bins=n_bins, strategy=strategy,
                closed=closed, weight=weight,
            ),
        )

    def validate(self, prob: str, label: str, weight: str | None = None) -> None:
        """Raise on invalid data; see :func:`polars_calib.validate`."""
        validate(self._data, prob, label, weight)


@pl.api.register_lazyframe_namespace("calib")
class LazyFrameCalibNamespace(_FrameCalibNamespace[pl.LazyFrame]):
    """Calibration tables of a LazyFrame of predictions; each method returns a LazyFrame."""


@pl.api.register_dataframe_namespace("calib")
class DataFrameCalibNamespace(_FrameCalibNamespace[pl.DataFrame]):
    """Calibration tables of a DataFrame of predictions; each method returns a DataFrame."""
