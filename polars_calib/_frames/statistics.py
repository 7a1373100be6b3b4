"""The public statistics table of a frame (Polars, Spark or Dask), and its finishers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar, overload

import polars as pl

from polars_calib._core.exprs import GroupKeys, IntoExpr, Keys
from polars_calib._core.options import (
    METRICS,
    REDUCTIONS,
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
    check_choice,
    check_confidence,
    check_metrics,
)
from polars_calib._core.validation import CalibrationDataError, problem_counts
from polars_calib._engines import (
    Engine,
    EngineSpec,
    column_keys,
    engine_of,
    engine_resamples,
    engine_statistics,
)
from polars_calib._table.build import check_diagnostics, terms_for
from polars_calib._table.canonical import (
    canonical_metrics,
    check_canonical,
    check_canonical_metrics,
)
from polars_calib._table.columns import CELL, SUMS
from polars_calib._table.distance import check_distance
from polars_calib._table.finish import (
    finish_metrics,
    reliability_rows,
    summary_names,
    top_label_choice,
)
from polars_calib._table.merge import merge_statistics
from polars_calib._table.pipeline import Bins, table_plan
from polars_calib._table.plan import Prepared, check_statistics, prepare, same_kind
from polars_calib._table.replicates import TESTED_METRIC, Resample, replicate_keys, resamples_for
from polars_calib._table.resampled import finish_resampled

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


class _SparkFrame(Protocol):
    """A ``pyspark.sql.DataFrame``, as the type checkers see it (pyspark not needed)."""

    def mapInArrow(self, *args: Any, **kwargs: Any) -> Any: ...  # noqa: N802


class _DaskFrame(Protocol):
    """A ``dask.dataframe.DataFrame``, as the type checkers see it (dask not needed)."""

    def to_delayed(self, *args: Any, **kwargs: Any) -> Any: ...


@overload
def bin_statistics(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_bins: int = ...,
    strategy: Strategy = ...,
    closed: Closed = ...,
    weight: str | None = ...,
    reduction: TableReduction | None = ...,
    sum_tol: float = ...,
    pos_label: Any = ...,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = ...,
    compat: Compat | None = ...,
    min_size: int = ...,
    max_bins: int | None = ...,
    resampling: Resampling | Sequence[Resampling] | None = ...,
    n_resamples: int = ...,
    seed: int = ...,
    id: IntoExpr | None = ...,
) -> FrameT: ...


@overload
def bin_statistics(
    data: _SparkFrame | _DaskFrame,
    prob: str,
    label: str,
    *,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_bins: int = ...,
    strategy: Strategy = ...,
    closed: Closed = ...,
    weight: str | None = ...,
    reduction: TableReduction | None = ...,
    sum_tol: float = ...,
    pos_label: Any = ...,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = ...,
    compat: Compat | None = ...,
    min_size: int = ...,
    max_bins: int | None = ...,
    resampling: Resampling | Sequence[Resampling] | None = ...,
    n_resamples: int = ...,
    seed: int = ...,
    id: IntoExpr | None = ...,
) -> pl.DataFrame: ...


def bin_statistics(
    data: Any,
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
    reduction: TableReduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = METRICS,
    compat: Compat | None = None,
    min_size: int = 10,
    max_bins: int | None = None,
    resampling: Resampling | Sequence[Resampling] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity, as in summary)
) -> pl.DataFrame | pl.LazyFrame:
    """Sufficient statistics per group and bin: the mergeable form of every metric.

    Every uniform-bin metric is a function of a few sums per bin, and sums add up:
    statistics of partitions of a log (files, days, worker processes) concatenated
    and passed to :func:`metrics_from_statistics` or
    :func:`reliability_from_statistics` give the numbers of one pass over the
    whole log. The same table is computed on a Spark or Dask cluster from a
    ``pyspark.sql.DataFrame`` or a ``dask.dataframe.DataFrame``: each partition runs
    this package's Polars aggregation, the engine sums the partial tables, and the
    small result comes back as a Polars DataFrame (see ``docs/scale-out.md``).

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions; or a Spark or Dask DataFrame (uniform
        bins, `by` as column names; ``polars_calib`` installed on the workers).
    prob
        Name of the column holding the probability of the positive class, or
        probability vectors (``Array`` or ``List``).
    label
        Name of the 0/1 (or boolean) outcome column; with vectors, the true class.
    by
        Group keys: column names or expressions (``pl.col("ts").dt.truncate("1d")``);
        ``None`` for one group.
    time, every
        As :func:`polars_calib.summary`: the name of a Date or Datetime column and a
        Polars duration (``"1d"``), given together; the rows are grouped by calendar
        windows as well, the `time` key (after the `by` keys) holding each window's
        start, ``pl.col(time).dt.truncate(every)``. Spark and Dask data take them too.
    n_bins
        Number of bins, a positive int.
    strategy
        ``"uniform"`` (equal width, mergeable), ``"quantile"`` (equal mass within
        each group) or ``"median_variance"`` (binary data, see
        :func:`polars_calib.median_variance_bins`; ``lower`` and ``upper`` the range
        of the bin's probabilities); the last two are **not** mergeable: the bins
        depend on all of the group's rows, and the finishers refuse the same bin
        with different edges.
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ...``; ``"left"``:
        ``[0, 1/B), ..., [(B-1)/B, 1]``.
    weight
        Name of an optional column of non-negative sample weights.
    reduction
        For probability vectors: ``"confidence"`` (default), ``"top_label"`` or
        ``"classwise"`` (see :func:`polars_calib.summary`); or ``"canonical"``: no
        reduction, the sums of each non-empty cell of the simplex grid, which
        :func:`metrics_from_statistics` finishes into the canonical ECE of
        :func:`polars_calib.canonical_ece` (an ``Array`` column; uniform bins; see
        Returns and ``docs/ece-family.md``).
    sum_tol
        Vectors: largest accepted ``|sum(p) - 1|``.
    pos_label
        The label of the positive class when labels are not 0/1 (binary data).
    metrics
        Which metrics the table must be able to finish: the Brier and log-loss sums,
        and those of the tests and decompositions (see :func:`polars_calib.summary`),
        are computed only when asked for: ``sum_spiegelhalter_numerator`` and
        ``sum_spiegelhalter_variance`` (Spiegelhalter), ``sum_squared_p`` and
        ``sum_p_y`` (the Brier decomposition).
    compat
        A peer whose bins to reproduce (see :func:`polars_calib.ece`).
    min_size, max_bins
        ``strategy="median_variance"``: fewest rows per bin and most bins per group.
    resampling
        ``"bootstrap"``, ``"consistency"`` or both: the table also holds
        `n_resamples` replicates of each (see ``docs/significance.md``), for
        :func:`metrics_from_statistics` to finish with intervals (``confidence``) or
        consistency p-values. ``None`` (default): no replicates.
    n_resamples
        Replicates of each resampling, an int from 1 to 2**30.
    seed
        Seed of the draws, an int in ``[0, 2**32)``.
    id
        An integer column or expression identifying each row, from which (with the
        seed and the replicate) its draws are hashed; ``None``: the row's position in
        `data`, which reproduces across engines and thread counts but not across
        partitions (give an id to merge tables of partitions). Spark and Dask data
        need it (a column name), so that the draws do not depend on the partitioning.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data` (a DataFrame for Spark and Dask data), sorted by
        keys and bin, **sparse**: one row per group and bin that holds rows (empty
        bins are not rows; :func:`reliability_from_statistics` shows them). The
        columns: the keys, ``class`` (Int32, for the top-label and classwise
        reductions), ``bin`` (Int32, 0-based), ``lower`` and ``upper`` (Float64, the
        bin's edges), ``closed`` (String, ``"right"`` or ``"left"``), ``n_bins``
        (Int32, the size of a uniform ``k / n_bins`` grid; null for quantile,
        median-variance and a peer's bins): tables of different grids or closures do
        not merge; ``count`` (Int64, rows), ``weight`` (Float64, their total weight;
        the count when unweighted), the Float64 weighted sums ``sum_p``, ``sum_y``,
        ``sum_squared_error`` and ``sum_log_loss``, and with the classwise reduction
        ``sum_confidence`` and ``sum_correct`` (the largest probability and whether
        it is right, on each row's predicted class). A group holding refused rows
        has one more row with a null ``bin`` and sums, whose ``count`` is the number
        of refused rows; a group with neither used nor refused rows (only nulls) is
        one such row counting 0, so that no group vanishes. Quantile bins are the
        group's data: each group lists its whole quantile grid. With `resampling`,
        the keys are followed by ``resampling`` (String) and ``replicate`` (Int32,
        from 0): both null on the observed rows, then each replicate's non-empty
        bins (the bootstrap's ``count`` is the number of rows drawn; refused rows
        are counted, not drawn).

        With ``reduction="canonical"``, one row per group and **non-empty** cell:
        the keys, ``cell`` (Int64, the cell ``sum_k b_k n_bins**k`` of the
        components' bins ``b_k``; with more classes than one exact word packs, also
        ``cell_1``, ``cell_2``, ... for the next classes, see
        :meth:`polars_calib._core.binning.Binning.cell_words`), ``n_bins`` (Int32),
        ``closed`` (String), ``count``, ``weight``, ``sum_p_0`` .. ``sum_p_{K-1}`` (the
        weighted sums of each component), ``sum_y_0`` .. ``sum_y_{K-1}`` (the weight of
        each true class) and ``sum_squared_error``, ``sum_log_loss`` when `metrics` ask for
        them; a group's refused rows (or, when it has no used row, nothing) in one
        row of null cell and sums. Tables of partitions merge by summing rows of
        the same keys, cell, ``n_bins`` and ``closed``.

    Raises
    ------
    CalibrationDataError
        A DataFrame holding refused rows (see :func:`polars_calib.validate`), or a
        missing or mistyped column. A LazyFrame is checked from its schema only; its
        refused rows are counted in the plan (the null-bin rows). Spark and Dask data
        raise as a DataFrame does, their refused rows counted on the engine.
    ValueError
        Spark or Dask data with `resampling` and no `id` (as every bad option value);
        ``reduction="canonical"`` with other bins than uniform, `compat`,
        `resampling`, metrics other than ``"ece"``, ``"mce"``, ``"rmsce"``,
        ``"brier"``, ``"log_loss"``, or Spark or Dask data.

    Notes
    -----
    One aggregation over one pass of the data (see :mod:`polars_calib._table`).
    Rows with a null probability, label or weight are ignored, but their group keeps
    its rows. Quantile bins are computed within each group.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "model": ["a", "a", "a", "b", "b"],
    ...     "p": [0.1, 0.3, 0.8, 0.6, 0.9],
    ...     "y": [0, 1, 1, 0, 1],
    ... })
    >>> stats = pc.bin_statistics(df, "p", "y", by="model", n_bins=2, metrics=["ece"])
    >>> stats.columns
    ['model', 'bin', 'lower', 'upper', 'closed', 'n_bins', 'count', 'weight', 'sum_p', 'sum_y']
    >>> stats.drop("closed", "n_bins")  # "right" and 2 on every row; model b's bin 0 is empty
    shape: (3, 8)
    ┌───────┬─────┬───────┬───────┬───────┬────────┬───────┬───────┐
    │ model ┆ bin ┆ lower ┆ upper ┆ count ┆ weight ┆ sum_p ┆ sum_y │
    │ ---   ┆ --- ┆ ---   ┆ ---   ┆ ---   ┆ ---    ┆ ---   ┆ ---   │
    │ str   ┆ i32 ┆ f64   ┆ f64   ┆ i64   ┆ f64    ┆ f64   ┆ f64   │
    ╞═══════╪═════╪═══════╪═══════╪═══════╪════════╪═══════╪═══════╡
    │ a     ┆ 0   ┆ 0.0   ┆ 0.5   ┆ 2     ┆ 2.0    ┆ 0.4   ┆ 1.0   │
    │ a     ┆ 1   ┆ 0.5   ┆ 1.0   ┆ 1     ┆ 1.0    ┆ 0.8   ┆ 1.0   │
    │ b     ┆ 1   ┆ 0.5   ┆ 1.0   ┆ 2     ┆ 2.0    ┆ 1.5   ┆ 1.0   │
    └───────┴─────┴───────┴───────┴───────┴────────┴───────┴───────┘

    Probability vectors without reduction: the sums of each non-empty cell of the
    simplex grid (cell ``b_0 + 2 b_1 + 4 b_2`` of the components' bins ``b_k``):

    >>> vectors = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40], [0.10, 0.30, 0.60]],
    ...     "y": [0, 1, 2],
    ... }).with_columns(pl.col("probs").list.to_array(3))
    >>> pc.bin_statistics(
    ...     vectors, "probs", "y", n_bins=2, reduction="canonical", metrics=["ece"]
    ... ).select("cell", "count", "sum_p_0", "sum_p_2", "sum_y_0", "sum_y_2")
    shape: (2, 6)
    ┌──────┬───────┬─────────┬─────────┬─────────┬─────────┐
    │ cell ┆ count ┆ sum_p_0 ┆ sum_p_2 ┆ sum_y_0 ┆ sum_y_2 │
    │ ---  ┆ ---   ┆ ---     ┆ ---     ┆ ---     ┆ ---     │
    │ i64  ┆ i64   ┆ f64     ┆ f64     ┆ f64     ┆ f64     │
    ╞══════╪═══════╪═════════╪═════════╪═════════╪═════════╡
    │ 1    ┆ 1     ┆ 0.55    ┆ 0.4     ┆ 0.0     ┆ 0.0     │
    │ 4    ┆ 2     ┆ 0.35    ┆ 1.15    ┆ 1.0     ┆ 1.0     │
    └──────┴───────┴─────────┴─────────┴─────────┴─────────┘
    """
    bins = Bins(n_bins, strategy, closed, compat, min_size, max_bins)
    names = check_metrics(metrics, tests=True)
    resamples = resamples_for(resampling, n_resamples, seed, id)
    engine = engine_of(data)
    if reduction == "canonical":
        check_canonical(names, bins.binning(), compat)
        if engine is not None or resamples:
            msg = "reduction='canonical' tables are built from Polars frames, without resampling"
            raise ValueError(msg)
    if engine is not None:
        return _engine_statistics(
            data,
            engine,
            prob,
            label,
            bins,
            names,
            resamples,
            by=by,
            weight=weight,
            reduction=reduction,
            sum_tol=sum_tol,
            pos_label=pos_label,
            time=time,
            every=every,
        )
    plan = table_plan(
        data,
        prob,
        label,
        bins=bins,
        metrics=names,
        resamples=resamples,
        by=by,
        weight=weight,
        reduction=reduction,
        sum_tol=sum_tol,
        time=time,
        every=every,
        **({} if reduction == "canonical" else {"pos_label": pos_label}),
    )
    return plan.collected() if isinstance(data, pl.DataFrame) else plan.table


def _engine_statistics(
    data: Any,
    engine: Engine,
    prob: str,
    label: str,
    bins: Bins,
    names: list[str],
    resamples: list[Resample],
    **frame: Any,
) -> pl.DataFrame:
    """The statistics table of a Spark or Dask frame, computed where its data are."""
    bins.binning()  # the options checked before the engine runs a job
    if bins.strategy != "uniform":
        msg = (
            f"{engine} statistics need uniform bins (mergeable across partitions); "
            f"got strategy={bins.strategy!r}"
        )
        raise ValueError(msg)
    spec = EngineSpec(
        prob,
        label,
        column_keys(frame["by"]),
        frame["weight"],
        frame["reduction"],
        frame["sum_tol"],
        frame["pos_label"],
        bins.n_bins,
        bins.closed,
        bins.compat,
        tuple(terms_for(names)),
        time=frame["time"],
        every=frame["every"],
        resamples=engine_resamples(resamples, engine),
    )

    def check(prepared: Prepared) -> None:
        check_diagnostics(names, bins.n_bins, prepared.reduction is not None)

    return engine_statistics(data, spec, engine, check)[0]


_STATISTICS_COLUMNS = frozenset(
    {"bin", "lower", "upper", "closed", "n_bins", "resampling", "replicate", CELL, *SUMS}
)
"""Columns of a statistics table that a `by` key of its finishers cannot be named."""


def _keyed(stats: FrameT, by: Keys) -> tuple[FrameT, list[str]]:
    """`stats` with the `by` keys that are expressions added (from its schema), and their names.

    Keys name key columns of the table, or are expressions of them
    (``pl.col("segment").str.to_uppercase()``): the rows of a new key's value are
    summed, as keys left out are.
    """
    keys = GroupKeys(by, _STATISTICS_COLUMNS)
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        return stats, keys.names  # _statistics_frame says why
    schema = stats.collect_schema()
    missing = [name for name in keys.columns() if name not in schema]
    if missing:
        msg = f"`stats` has no key of `by`: missing column(s) {', '.join(map(repr, missing))}"
        raise CalibrationDataError(msg)
    return keys.added_to(stats), keys.names


def _statistics_frame(stats: object, keys: list[str]) -> pl.LazyFrame:
    """`stats` as a LazyFrame, checking that it has the keys and the statistics columns."""
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`stats` must be a polars DataFrame or LazyFrame, got {type(stats).__name__}"
        raise TypeError(msg)
    lf = stats.lazy()
    schema = lf.collect_schema()
    missing = [name for name in (*keys, "bin", "lower", "upper", *SUMS) if name not in schema]
    if missing:
        msg = (
            f"`stats` is not a statistics table (see `bin_statistics`): missing column(s) "
            f"{', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    return lf


def _merged(stats: FrameT, keys: list[str]) -> pl.LazyFrame:
    """Merge a statistics table; a DataFrame whose bins clash raises here."""
    merged = merge_statistics(_statistics_frame(stats, keys), keys)
    if isinstance(stats, pl.DataFrame):
        table: pl.DataFrame = merged.collect()
        group = [*keys, *replicate_keys(table.columns)]
        group += ["class"] if "class" in table.columns else []
        clash = table.filter(pl.col("bin").is_not_null()).filter(
            pl.struct(*group, "bin").is_duplicated()
        )
        if clash.height:
            msg = (
                "`stats` holds the same bin with different edges or closures (statistics "
                "with quantile bins, or different `n_bins` or `closed`, from several "
                f"partitions): they cannot be merged; first: {clash.row(0, named=True)}"
            )
            raise CalibrationDataError(msg)
        return table.lazy()
    return merged


def metrics_from_statistics(
    stats: FrameT,
    *,
    by: Keys = None,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = METRICS,
    average: TopLabelAverage | BinAverage | None = None,
    confidence: float | None = None,
    distance: Distance | None = None,
    reduction: Reduction | None = None,
) -> FrameT:
    """Finish calibration metrics per group from one or many statistics tables.

    Parameters
    ----------
    stats
        Output of :func:`bin_statistics`, or several of them concatenated (for
        example one per partition of a log, or yesterday's and today's): rows of the
        same group and bin are summed first.
    by
        The group keys of the result: any of the statistics' key columns, or
        expressions of them (``pl.col("segment").str.to_uppercase()``); keys left
        out are summed over (statistics per ``("model", "segment")`` give metrics
        per ``"model"``), and so are the rows that an expression gives the same
        value. ``None``: one group, all rows.
    metrics
        Which of ``"ece"``, ``"mce"``, ``"rmsce"``, ``"brier"``, ``"log_loss"`` to
        compute, in this order (Brier and log-loss need the table's sums of them),
        or the tests and decompositions of binary tables (see
        :func:`polars_calib.summary`; their sums must be in the table). Quantile-bin
        statistics (Hosmer-Lemeshow's deciles of risk) finish one table but do not
        merge across partitions.
    average
        Top-label statistics: ``"macro"`` (``None``, the default) or ``"weighted"``
        mean over predicted classes (see :func:`polars_calib.top_label_ece`).
        Canonical statistics: ``"weighted"`` (``None``, the default: cells weighted
        by their share of the weight) or ``"bins"`` (the plain mean over non-empty
        cells), as :func:`polars_calib.canonical_ece`.
    confidence
        A table with bootstrap replicates (``bin_statistics(resampling=...)``): the
        level of the percentile intervals of each metric, in (0, 1); ``None``: no
        intervals. Consistency p-values (``"consistency_p"`` and friends in
        `metrics`) need the table's consistency replicates.
    distance
        Canonical statistics (``bin_statistics(reduction="canonical")``): ``"tv"``
        (``None``, the default), ``"cityblock"`` or ``"sqeuclidean"``, the distance
        ``d`` of :func:`polars_calib.canonical_ece`. Other tables take ``None``.
    reduction
        Statistics of probability vectors: the reduction they were computed with
        (``"confidence"``, ``bin_statistics``' default for vectors, ``"top_label"`` or
        ``"classwise"``), to name the columns as :func:`polars_calib.summary` names
        them: ``mean_confidence``, ``accuracy`` and ``<reduction>_ece`` (``_mce``,
        ``_rmsce``, and their bounds). ``None`` (default): the names below. The table
        does not record it: a confidence table looks like a binary one.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `stats`; one row per group, sorted by the keys: the keys,
        ``count`` (Int64, rows used), ``refused`` (Int64, rows refused),
        ``mean_predicted`` and ``observed`` (Float64, the weighted mean probability
        and fraction of positives; for vector statistics, the mean confidence and
        the accuracy), then one Float64 column per metric, named after it (with
        `confidence`, followed by ``<metric>_lower`` and ``<metric>_upper``). A group
        with refused rows, or with no used row, has null metrics. Canonical
        statistics give the keys, ``count``, ``refused`` and the metrics (the means
        are vectors: no ``mean_predicted`` or ``observed``).

    Raises
    ------
    CalibrationDataError
        `stats` is not a statistics table, or (a DataFrame) holds the same bin with
        different edges: quantile statistics of several partitions cannot be merged
        (nor canonical statistics of different ``n_bins``). A LazyFrame gives such a
        group null metrics.
    ValueError
        A `distance` for a table that is not canonical; an `average` or a metric the
        table cannot finish.

    Notes
    -----
    With ``W_b = weight``, ``gap_b = (sum_y - sum_p) / W_b`` and ``W = sum_b W_b``,
    ECE is ``sum_b |sum_y - sum_p| / W``; Brier is ``sum(sum_squared_error) / W`` and
    log-loss ``sum(sum_log_loss) / W``: the expressions' finisher on summed
    statistics.

    Canonical statistics: per cell ``b`` of weight ``W_b > 0``,
    ``d_b = d(P_b, Y_b)`` with ``P_b = sum_p_k / W_b`` and ``Y_b = sum_y_k / W_b``
    over the classes ``k``; ``ece = sum_b (W_b / W) d_b`` (:func:`polars_calib.canonical_ece`),
    ``rmsce = sqrt(sum_b (W_b / W) d_b**2)`` and ``mce = max_b d_b`` (the binary
    RMSCE and MCE for ``d(a, b) = |a - b|``); with ``average="bins"``, plain means
    over the non-empty cells instead of weighted ones. ``brier`` and ``log_loss``
    are the multi-class scores.

    See Also
    --------
    bin_statistics, reliability_from_statistics

    Examples
    --------
    Statistics of two days, merged:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> day1 = pl.DataFrame({"p": [0.1, 0.3, 0.8], "y": [0, 1, 1]})
    >>> day2 = pl.DataFrame({"p": [0.6, 0.9], "y": [0, 1]})
    >>> stats = pl.concat([pc.bin_statistics(day, "p", "y", n_bins=2) for day in (day1, day2)])
    >>> pc.metrics_from_statistics(stats, metrics=["ece", "brier"])
    shape: (1, 6)
    ┌───────┬─────────┬────────────────┬──────────┬──────┬───────┐
    │ count ┆ refused ┆ mean_predicted ┆ observed ┆ ece  ┆ brier │
    │ ---   ┆ ---     ┆ ---            ┆ ---      ┆ ---  ┆ ---   │
    │ i64   ┆ i64     ┆ f64            ┆ f64      ┆ f64  ┆ f64   │
    ╞═══════╪═════════╪════════════════╪══════════╪══════╪═══════╡
    │ 5     ┆ 0       ┆ 0.54           ┆ 0.6      ┆ 0.18 ┆ 0.182 │
    └───────┴─────────┴────────────────┴──────────┴──────┴───────┘

    The same as one pass over both days:

    >>> pl.concat([day1, day2]).select(
    ...     ece=pc.ece("p", "y", n_bins=2), brier=pc.brier("p", "y")
    ... )
    shape: (1, 2)
    ┌──────┬───────┐
    │ ece  ┆ brier │
    │ ---  ┆ ---   │
    │ f64  ┆ f64   │
    ╞══════╪═══════╡
    │ 0.18 ┆ 0.182 │
    └──────┴───────┘
    """
    stats, keys = _keyed(stats, by)
    names = check_metrics(metrics, tests=True)
    if confidence is not None:
        check_confidence(confidence)
    if reduction is not None:
        check_choice("reduction", reduction, REDUCTIONS)
    if _is_canonical(stats):
        distance, bin_average = check_distance(distance or "tv", average or "weighted")
        check_canonical_metrics(names)
        if confidence is not None or reduction is not None:
            msg = (
                "canonical statistics have no replicates and no reduction: `confidence` "
                "and `reduction` must be None"
            )
            raise ValueError(msg)
        return same_kind(stats, canonical_metrics(stats, keys, names, distance, bin_average))
    top_label_average = top_label_choice(average, distance)
    schema = _statistics_frame(stats, keys).collect_schema()
    check_diagnostics(names, None, "class" in schema)
    missing = [f"sum_{term}" for term in terms_for(names)]
    missing = [name for name in dict.fromkeys(missing) if name not in schema]
    if missing:
        msg = f"`stats` has no {', '.join(missing)}: compute it with `metrics` including them"
        raise CalibrationDataError(msg)
    resampled = bool(replicate_keys(schema.names()))
    if not resampled and (confidence is not None or set(names) & set(TESTED_METRIC)):
        msg = (
            "`stats` has no replicates: intervals and consistency p-values need "
            "`bin_statistics(..., resampling=...)`"
        )
        raise CalibrationDataError(msg)
    merged = _merged(stats, keys)
    if resampled:
        table = finish_resampled(merged, keys, names, top_label_average, confidence)
    else:
        table = finish_metrics(merged, keys, names, top_label_average)
    table = summary_names(table, reduction)
    return same_kind(stats, table.rename(asked_names(metrics, table.collect_schema().names())))


def _is_canonical(stats: object) -> bool:
    """Whether `stats` is a canonical table (it has a ``cell`` column)."""
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        return False  # _statistics_frame says why
    return CELL in stats.collect_schema().names()


def reliability_from_statistics(
    stats: FrameT,
    *,
    by: Keys = None,
    confidence: float = 0.95,
) -> FrameT:
    """The reliability table per group from one or many statistics tables.

    Parameters
    ----------
    stats
        Output of :func:`bin_statistics`, or several concatenated; rows of the same
        group and bin are summed first. The table carries its bins: no ``n_bins``.
        A table with replicates (``bin_statistics(resampling=...)``) gives the
        reliability of its observed rows; the replicates are left out.
    by
        The group keys of the result: any of the statistics' key columns, or
        expressions of them, as :func:`metrics_from_statistics`'s; keys left out are
        summed over. ``None``: one group, all rows.
    confidence
        Confidence level of the Wilson interval on the observed fraction.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `stats`, with the columns of :func:`polars_calib.reliability`.

    Raises
    ------
    CalibrationDataError
        As :func:`metrics_from_statistics`.

    See Also
    --------
    bin_statistics, metrics_from_statistics

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.3, 0.8, 0.6, 0.9], "y": [0, 1, 1, 0, 1]})
    >>> stats = pc.bin_statistics(df, "p", "y", n_bins=4)
    >>> pc.reliability_from_statistics(stats).select("bin", "upper", "count", "observed")
    shape: (4, 4)
    ┌─────┬───────┬───────┬──────────┐
    │ bin ┆ upper ┆ count ┆ observed │
    │ --- ┆ ---   ┆ ---   ┆ ---      │
    │ i32 ┆ f64   ┆ i64   ┆ f64      │
    ╞═════╪═══════╪═══════╪══════════╡
    │ 0   ┆ 0.25  ┆ 1     ┆ 0.0      │
    │ 1   ┆ 0.5   ┆ 1     ┆ 1.0      │
    │ 2   ┆ 0.75  ┆ 1     ┆ 0.0      │
    │ 3   ┆ 1.0   ┆ 2     ┆ 1.0      │
    └─────┴───────┴───────┴──────────┘
    """
    stats, keys = _keyed(stats, by)
    z = check_confidence(confidence)
    if _is_canonical(stats):
        msg = (
            "`stats` is a canonical table (one row per cell of the simplex grid): "
            "reliability rows are per bin of a binary or reduced table"
        )
        raise ValueError(msg)
    return same_kind(stats, reliability_rows(_merged(stats, keys), keys, z))


def validate_statistics(
    stats: pl.DataFrame,
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    weight: str | None = None,
    reduction: TableReduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
) -> pl.DataFrame:
    """Raise if a collected statistics table of a LazyFrame counts refused rows.

    :func:`bin_statistics` of a DataFrame raises on refused rows; of a LazyFrame it
    returns a plan whose table counts them (a null-bin row per group). This gives a
    collected table the DataFrame's policy: it returns `stats` as it is, or raises
    :class:`~polars_calib.CalibrationDataError` naming each check and how many rows it
    refuses, counted by reading `data` again (only then). Classwise statistics whose
    vectors have different lengths raise too.

    Parameters
    ----------
    stats
        ``bin_statistics(data, ...).collect()`` (with or without replicates).
    data, prob, label, by, time, every, weight, reduction, sum_tol, pos_label
        The arguments `stats` was computed with, as :func:`bin_statistics`'s.

    Returns
    -------
    DataFrame
        `stats`.

    Raises
    ------
    CalibrationDataError
        `stats` counts refused rows (or a missing or mistyped column).

    See Also
    --------
    bin_statistics, polars_calib.validate

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.LazyFrame({"p": [0.2, 1.5, 0.7], "y": [0, 1, 1]})
    >>> stats = pc.bin_statistics(log, "p", "y", n_bins=2).collect()
    >>> pc.validate_statistics(stats, log, "p", "y")
    Traceback (most recent call last):
    ...
    polars_calib._core.validation.CalibrationDataError: invalid calibration data: column 'p':
    probability outside [0, 1] in 1 of 3 rows (e.g. 1.5)
    """
    prepared = prepare(
        data,
        prob,
        label,
        by=by,
        weight=weight,
        reduction=reduction,
        sum_tol=sum_tol,
        pos_label=pos_label,
        time=time,
        every=every,
        canonical=reduction == "canonical",
    )
    return check_statistics(
        prepared, stats, lambda checks: problem_counts(prepared.lf, checks).collect()
    )
