"""Reliability tables and metric summaries of a whole frame.

:func:`reliability` and :func:`summary` are compositions of the statistics table
(:mod:`polars_calib._table`): one aggregation of the problem per (group, bin), then a
finisher over the small result. They take a DataFrame or a LazyFrame and return the
same kind; ``df.calib.reliability(...)`` and ``lf.calib.summary(...)`` delegate to them.

A LazyFrame method returns a plan that reads nothing until collected; a group with
refused rows gets null metrics and its ``refused`` count. A DataFrame method runs
the query and raises :class:`~polars_calib.CalibrationDataError` on refused rows.
Missing or mistyped columns raise from the schema alone, for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_calib._core.deprecation import warn_renamed
from polars_calib._core.exprs import IntoExpr, Keys
from polars_calib._core.options import (
    METRICS,
    SUM_TOLERANCE,
    BinAverage,
    Closed,
    Compat,
    ConsistencyMetric,
    Diagnostic,
    Distance,
    Metric,
    Reduction,
    Resampling,
    Strategy,
    TableReduction,
    TopLabelAverage,
    asked_names,
    check_confidence,
    check_metrics,
)
from polars_calib._table.canonical import finish_cells
from polars_calib._table.distance import check_distance
from polars_calib._table.finish import (
    finish_metrics,
    reliability_rows,
    summary_names,
    top_label_choice,
)
from polars_calib._table.pipeline import Bins, table_plan
from polars_calib._table.plan import FrameT, Prepared, same_kind
from polars_calib._table.replicates import TESTED_METRIC, resamples_for
from polars_calib._table.resampled import finish_resampled

if TYPE_CHECKING:
    pass


def reliability(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: str | None = None,
    confidence: float = 0.95,
    reduction: Reduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    compat: Compat | None = None,
    min_size: int = 10,
    max_bins: int | None = None,
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
    by
        Group keys: column names or expressions; ``None`` for one group.
    n_bins
        Number of bins, a positive int.
    strategy
        ``"uniform"`` (equal width), ``"quantile"`` (equal mass within each group) or
        ``"median_variance"`` (binary data: recursive median splits within each group,
        see :func:`polars_calib.median_variance_bins`; ``lower`` and ``upper`` are
        then the smallest and largest probability of the bin, and `n_bins` is unused).
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ...``; ``"left"``:
        ``[0, 1/B), ..., [(B-1)/B, 1]``.
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
    min_size, max_bins
        ``strategy="median_variance"``: fewest rows per bin and most bins per group.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`; ``n_bins`` rows per group, empty bins included,
        sorted by keys and bin, with columns: the keys, ``class`` (Int32, with
        ``reduction="top_label"`` or ``"classwise"``), ``bin`` (Int32, 0-based),
        ``lower`` and ``upper`` (Float64 bin edges), ``count`` (Int64 rows),
        ``mean_predicted``, ``observed`` (fraction of positives), ``gap``
        (``observed - mean_predicted``), ``observed_lower`` and ``observed_upper``
        (Wilson interval), all Float64 and null in an empty bin.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column (from the schema, no data read); with a
        DataFrame, refused rows (see :func:`polars_calib.validate`).

    Notes
    -----
    Uniform edges are the exact ``k / n_bins``; quantile edges are the group's
    linear-interpolation quantiles, tied edges giving empty bins. With weights,
    the means are weighted and the Wilson interval uses the bin weight ``n``:
    ``(p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` with ``p`` the observed
    frequency and ``z`` the normal quantile of ``(1 + confidence) / 2``
    (Wilson, 1927), exact at the ends: the interval of an all-0 bin starts at 0 and
    that of an all-1 bin ends at 1. Rows with a null probability, label or weight
    are ignored; a group with no such row keeps its bins, with count 0.

    A DataFrame holding refused rows raises :class:`~polars_calib.CalibrationDataError`.
    A LazyFrame gives a plan that reads nothing until collected; a group holding
    refused rows keeps its counts, with null means and intervals.

    See Also
    --------
    summary, reliability_from_statistics, polars_calib.plot_reliability

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
    if reduction == "canonical":
        msg = (
            "reliability rows are per bin of a binary problem; reduction='canonical' has "
            "cells of the simplex grid: see `bin_statistics(..., reduction='canonical')`"
        )
        raise ValueError(msg)
    z = check_confidence(confidence)
    plan = table_plan(
        data,
        prob,
        label,
        bins=Bins(n_bins, strategy, closed, compat, min_size, max_bins),
        by=by,
        weight=weight,
        reduction=reduction,
        sum_tol=sum_tol,
        pos_label=pos_label,
    )
    # The table is sparse: the display completes a uniform grid (its exact edges).
    return same_kind(data, reliability_rows(plan.checked(), plan.keys, z, plan.grid))


def summary(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: str | None = None,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = METRICS,
    reduction: TableReduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    average: TopLabelAverage | BinAverage | None = None,
    compat: Compat | None = None,
    min_size: int = 10,
    max_bins: int | None = None,
    confidence: float | None = None,
    n_resamples: int | None = None,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity of the draws)
    distance: Distance | None = None,
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
        Group keys: column names or expressions (``pl.col("ts").dt.truncate("1w")``);
        ``None`` for one group.
    time
        Name of a Date or Datetime column; with `every`, the rows are grouped by
        tumbling calendar windows as well.
    every
        Window length, a positive Polars duration string (``"1h"``, ``"1d"``, ``"1w"``,
        ``"1mo"``, ``"1h30m"``; anything else is a ``ValueError``); the `time` key holds
        each window's start, ``pl.col(time).dt.truncate(every)``.
    n_bins
        Number of bins of the binned metrics, a positive int.
    strategy
        ``"uniform"`` (equal width), ``"quantile"`` (equal mass within each group) or
        ``"median_variance"`` (binary data: recursive median splits within each group
        of at least `min_size` rows, at most `max_bins` bins; see
        :func:`polars_calib.median_variance_bins`).
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ...``; ``"left"``:
        ``[0, 1/B), ..., [(B-1)/B, 1]``.
    weight
        Name of an optional column of non-negative sample weights.
    metrics
        Which of ``"ece"``, ``"mce"``, ``"rmsce"``, ``"brier"``, ``"log_loss"`` to
        compute, in this order; binary data also take the tests and decompositions
        of :mod:`polars_calib._metrics.diagnostics` (``"spiegelhalter_z"``,
        ``"spiegelhalter_p"`` (two-sided), ``"hosmer_lemeshow"``,
        ``"hosmer_lemeshow_p"``, ``"debiased_ece_squared"``, ``"debiased_ece"``,
        ``"brier_decomposition"`` (a struct), ``"calibration_loss"`` and
        ``"refinement_loss"`` (of the Brier score: the functions at their defaults),
        ``"log_loss_calibration_loss"`` and ``"log_loss_refinement_loss"`` (with
        ``score="log_loss"``); the names ``"brier_calibration_loss"`` and
        ``"brier_refinement_loss"`` are deprecated, and still give columns of those
        names), over the summary's bins (``ValueError`` for
        Hosmer-Lemeshow with fewer than 3 bins, or any of them on vectors); and the
        p-values of the consistency-resampling test (`n_resamples` label sets drawn
        from ``p``): ``"consistency_p"`` (of ECE), ``"consistency_p_mce"``,
        ``"consistency_p_rmsce"``, ``"consistency_p_brier"``,
        ``"consistency_p_log_loss"`` (see ``docs/significance.md``).
    reduction
        For probability vectors (an ``Array`` or ``List`` column, labels
        ``0 .. K - 1``), which multi-class calibration error ``ece``, ``mce`` and
        ``rmsce`` measure: ``"confidence"`` (the default for vectors),
        ``"top_label"`` or ``"classwise"``, the numbers of
        :func:`polars_calib.confidence_ece`, :func:`polars_calib.top_label_ece` and
        :func:`polars_calib.classwise_ece`. ``brier`` and ``log_loss`` are then the
        multi-class scores of :func:`polars_calib.multiclass_brier` and
        :func:`polars_calib.multiclass_log_loss`. ``None`` for binary data.
        ``"canonical"``: no reduction: the canonical ECE of
        :func:`polars_calib.canonical_ece` (`distance`, `average`) from the
        statistics of each non-empty cell of the simplex grid
        (``bin_statistics(reduction="canonical")``; an ``Array`` column, uniform
        bins): the metrics ``canonical_ece``, ``canonical_mce``,
        ``canonical_rmsce`` (see :func:`polars_calib.metrics_from_statistics`),
        ``brier`` and ``log_loss``; no tests, decompositions or resampling.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a probability vector.
    pos_label
        Binary data: the label of the positive class when labels are not 0/1.
    compat
        A peer whose bins to reproduce (see :func:`polars_calib.ece`).
    average
        ``reduction="top_label"``: ``"macro"`` (``None``, the default) or
        ``"weighted"`` mean over predicted classes (see
        :func:`polars_calib.top_label_ece`). ``reduction="canonical"``:
        ``"weighted"`` (``None``, the default) or ``"bins"``, as
        :func:`polars_calib.canonical_ece`.
    min_size, max_bins
        ``strategy="median_variance"``: fewest rows per bin and most bins per group.
    confidence
        Level of the percentile Poisson-bootstrap intervals, in (0, 1); ``None``
        (default): 0.95. It gives the level only (see ``docs/significance.md``);
        `n_resamples` asks for the intervals. **Deprecated:** `confidence` without
        `n_resamples` still asks for intervals of 1000 replicates, with a
        ``DeprecationWarning``; from 0.3.0 it gives none (pass ``n_resamples=1000``).
    n_resamples
        Bootstrap replicates, an int from 1 to 2**30: giving it adds
        ``<metric>_lower`` and ``<metric>_upper`` to each metric other than the
        consistency p-values, as in :func:`polars_calib.audit` and
        :func:`polars_calib.html_report`; ``None`` (default): no intervals. It is
        also the number of label sets of the consistency p-values (1000 when
        ``None``).
    seed
        Seed of the draws, an int in ``[0, 2**32)``: the same seed gives the same
        intervals and p-values in memory and streaming, on a DataFrame or a scan.
    id
        An integer column or expression identifying each row (a request id): each
        draw is a hash of (id, replicate, seed), so the same rows give the same
        numbers in any order and split into any partitions. ``None``: the row's
        position in `data` (reproducible for the same frame, not across partitions).
    distance
        ``reduction="canonical"``: ``"tv"`` (``None``, the default), ``"cityblock"``
        or ``"sqeuclidean"`` (see :func:`polars_calib.canonical_ece`); other
        reductions take ``None``.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`; one row per group, sorted by the keys: the `by`
        keys, `time` (each window's start, with `every`), ``count`` (Int64, rows
        used), ``refused`` (Int64, rows refused), ``mean_predicted`` and
        ``observed`` (Float64 weighted mean probability and fraction of positives),
        then one Float64 column per metric, named after it. For probability vectors
        the means are ``mean_confidence`` and ``accuracy``, and the binned metrics
        are named after the reduction: ``confidence_ece``, ``classwise_mce``,
        ``top_label_rmsce``, ... With `n_resamples`, each metric is followed by its
        ``_lower`` and ``_upper`` bounds (null for a group so small that a
        resample drew none of its rows); consistency p-values are Float64, null
        where the metric is.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column, or a time column that is not temporal (from
        the schema, no data read); with a DataFrame, refused rows (see
        :func:`polars_calib.validate`).

    Notes
    -----
    Equal, up to rounding, to the expression forms in ``group_by().agg``
    (:func:`polars_calib.ece` and friends), computed as two aggregations:
    :func:`polars_calib.bin_statistics` per (group, bin), then
    :func:`polars_calib.metrics_from_statistics`'s finisher per group. Rows with a
    null probability, label or weight are ignored; a group with no such row keeps
    its row, with count 0 and null metrics, as the expressions give it.

    **When data are read.** On a DataFrame the query runs at once (the data are
    read once; bad data a second time, to count the problems for the error). On a
    LazyFrame it returns a plan that reads nothing until collected, so
    ``collect(engine="streaming")`` and ``pl.collect_all`` apply to the whole work;
    a group holding refused rows gets its ``refused`` count and null metrics
    instead of an error (:func:`polars_calib.refused_rows` tells why).

    See Also
    --------
    reliability, bin_statistics, metrics_from_statistics

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
    shape: (2, 7)
    ┌───────┬───────┬─────────┬────────────────┬──────────┬──────────┬──────────┐
    │ model ┆ count ┆ refused ┆ mean_predicted ┆ observed ┆ ece      ┆ brier    │
    │ ---   ┆ ---   ┆ ---     ┆ ---            ┆ ---      ┆ ---      ┆ ---      │
    │ str   ┆ i64   ┆ i64     ┆ f64            ┆ f64      ┆ f64      ┆ f64      │
    ╞═══════╪═══════╪═════════╪════════════════╪══════════╪══════════╪══════════╡
    │ a     ┆ 3     ┆ 0       ┆ 0.433333       ┆ 0.666667 ┆ 0.3      ┆ 0.136667 │
    │ b     ┆ 3     ┆ 0       ┆ 0.6            ┆ 0.333333 ┆ 0.333333 ┆ 0.153333 │
    └───────┴───────┴─────────┴────────────────┴──────────┴──────────┴──────────┘

    Per day, from a LazyFrame (the result is lazy too):

    >>> from datetime import datetime
    >>> log = df.lazy().with_columns(
    ...     ts=pl.Series([datetime(2024, 3, d, 12) for d in (1, 1, 2, 1, 2, 2)])
    ... )
    >>> log.calib.summary(
    ...     "p", "y", by="model", time="ts", every="1d", metrics=["brier"]
    ... ).collect()
    shape: (4, 7)
    ┌───────┬─────────────────────┬───────┬─────────┬────────────────┬──────────┬───────┐
    │ model ┆ ts                  ┆ count ┆ refused ┆ mean_predicted ┆ observed ┆ brier │
    │ ---   ┆ ---                 ┆ ---   ┆ ---     ┆ ---            ┆ ---      ┆ ---   │
    │ str   ┆ datetime[μs]        ┆ i64   ┆ i64     ┆ f64            ┆ f64      ┆ f64   │
    ╞═══════╪═════════════════════╪═══════╪═════════╪════════════════╪══════════╪═══════╡
    │ a     ┆ 2024-03-01 00:00:00 ┆ 2     ┆ 0       ┆ 0.25           ┆ 0.5      ┆ 0.185 │
    │ a     ┆ 2024-03-02 00:00:00 ┆ 1     ┆ 0       ┆ 0.8            ┆ 1.0      ┆ 0.04  │
    │ b     ┆ 2024-03-01 00:00:00 ┆ 1     ┆ 0       ┆ 0.3            ┆ 0.0      ┆ 0.09  │
    │ b     ┆ 2024-03-02 00:00:00 ┆ 2     ┆ 0       ┆ 0.75           ┆ 0.5      ┆ 0.185 │
    └───────┴─────────────────────┴───────┴─────────┴────────────────┴──────────┴───────┘
    """
    names = check_metrics(metrics, tests=True)
    bins = Bins(n_bins, strategy, closed, compat, min_size, max_bins)
    frame: dict[str, Any] = {
        "by": by,
        "weight": weight,
        "reduction": reduction,
        "sum_tol": sum_tol,
        "time": time,
        "every": every,
    }
    if reduction == "canonical":
        distance, bin_average = check_distance(distance or "tv", average or "weighted")
        if confidence is not None or n_resamples is not None:
            msg = (
                "reduction='canonical' has no resampling: `confidence` and `n_resamples` "
                "must be None"
            )
            raise ValueError(msg)
        plan = table_plan(data, prob, label, bins=bins, metrics=names, **frame)
        table = finish_cells(plan.checked(), plan.keys, names, distance, bin_average)
        renamed = {m: f"canonical_{m}" for m in ("ece", "mce", "rmsce") if m in names}
        return same_kind(data, table.rename(renamed))
    top_label_average = top_label_choice(average, distance)
    # One meaning, as in the audit and the report (docs/significance.md): `n_resamples`
    # asks for intervals, of that many replicates, of the metrics that have them (not of
    # consistency p-values: then it is their number of label sets); `confidence` is
    # their level. `confidence` alone asked for 1000 replicates until 0.3.0.
    intervals = set(names) - set(TESTED_METRIC)
    alone = confidence is not None and n_resamples is None and bool(intervals)
    level = 0.95 if confidence is None else confidence
    check_confidence(level)
    methods: list[Resampling] = []
    if (n_resamples is not None or alone) and intervals:
        methods.append("bootstrap")
    if set(names) & set(TESTED_METRIC):
        methods.append("consistency")
    replicates = 1000 if n_resamples is None else n_resamples
    resamples = resamples_for(methods or None, replicates, seed, id)
    plan = table_plan(
        data,
        prob,
        label,
        bins=bins,
        metrics=names,
        resamples=resamples,
        pos_label=pos_label,
        **frame,
    )
    if alone:  # after the plan's checks: a bad option raises rather than warns
        warn_renamed(
            "pc.summary(confidence=...) without n_resamples (intervals of 1000 replicates)",
            "pc.summary(confidence=..., n_resamples=1000)",
        )
    interval = level if "bootstrap" in methods else None
    table = finish_summary(
        plan.checked(), plan.prepared, names, top_label_average, interval, bool(resamples)
    )
    table = table.rename(asked_names(metrics, table.collect_schema().names()))
    return same_kind(data, table)


def finish_summary(
    stats: pl.LazyFrame,
    prepared: Prepared,
    metrics: Sequence[str],
    average: TopLabelAverage = "macro",
    confidence: float | None = None,
    resampled: bool = False,
) -> pl.LazyFrame:
    """The summary of a statistics table of `prepared`: its metrics, named for vectors.

    A table with replicates (`resampled`) gives intervals (with `confidence`) and
    p-values.
    """
    if resampled:
        table = finish_resampled(stats, prepared.keys, metrics, average, confidence)
    else:
        table = finish_metrics(stats, prepared.keys, metrics, average)
    # Vector summaries say what their columns hold.
    return summary_names(table, prepared.reduction)
