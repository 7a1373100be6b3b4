"""Frame functions of variance calibration: the σ-bin table and ENCE, UCE, QCE per group.

Each is the one plan (:func:`polars_calib._table.variance.variance_plan`: the Gaussian
problem, its statistics table per (keys, σ-bin)) and a finisher. A LazyFrame gives a
plan that reads nothing until collected (a group holding refused rows gets null
numbers); a DataFrame runs it and raises :class:`~polars_calib.CalibrationDataError` on
refused rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import Closed, Strategy, VarianceMetric, check_choice
from polars_calib._engines import Engine, EngineSpec, column_keys, engine_of, engine_statistics
from polars_calib._frames.statistics import _DaskFrame, _SparkFrame
from polars_calib._table.plan import FrameT, same_kind
from polars_calib._table.variance import (
    VARIANCE_METRICS,
    SigmaBins,
    SigmaTable,
    finish_variance,
    variance_bins,
    variance_plan,
)

__all__ = ["variance_reliability", "variance_summary"]


def _engine_table(
    data: Any,
    table: SigmaTable,
    engine: Engine,
    options: tuple[Keys, str | None, str | None, str | None],
) -> tuple[pl.LazyFrame, list[str]]:
    """A variance table of Spark or Dask data, computed on the engine, and its keys.

    Only fixed-range bins merge: a group's own range or quantiles of σ are a first
    pass over all of its rows (``ValueError``, before any job).
    """
    if table.bins.value_range is None:
        msg = (
            f"variance tables on {engine} need fixed bins, `range=(lo, hi)`: "
            f"strategy={table.bins.strategy!r} without a range takes each group's "
            "smallest and largest σ or its quantiles, a first pass over all of the "
            "group's rows, so tables of partitions do not merge"
        )
        raise ValueError(msg)
    by, time, every, weight = options
    spec = EngineSpec(by=column_keys(by), weight=weight, time=time, every=every, regression=table)
    stats, prepared = engine_statistics(data, spec, engine)
    return stats.lazy(), prepared.keys


@overload
def variance_reliability(
    data: FrameT,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_bins: int = ...,
    strategy: Strategy = ...,
    range: tuple[float, float] | None = ...,
    closed: Closed = ...,
    weight: str | None = ...,
) -> FrameT: ...


@overload
def variance_reliability(
    data: _SparkFrame | _DaskFrame,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_bins: int = ...,
    strategy: Strategy = ...,
    range: tuple[float, float] | None = ...,
    closed: Closed = ...,
    weight: str | None = ...,
) -> pl.DataFrame: ...


def variance_reliability(
    data: Any,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
    closed: Closed = "right",
    weight: str | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Return the variance calibration table of Gaussian predictions, per σ-bin.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions; or a Spark or Dask DataFrame (`by` as
        column names; fixed bins, `range`, only): each partition runs this table's
        Polars aggregation, the engine merges them (``docs/scale-out.md``).
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``).
    by
        Group keys: column names or expressions; ``None`` for one group.
    time, every
        A Date or Datetime column and a window length: one table per group and window.
    n_bins
        Number of σ-bins (netcal's default, 10).
    strategy
        ``"uniform"`` (default): equal-width bins between each group's smallest and
        largest σ (netcal's), or over `range`; ``"quantile"``: equal-count bins at each
        group's quantiles of σ. Both per-group grids are a first pass over the group.
    range
        ``(lo, hi)``: fixed equal-width bins over ``[lo, hi]``, the same in every group
        and partition (tables of parts of the rows merge by summing ``count``,
        ``weight`` and the sums per group and bin); rows outside are in no bin.
    closed
        ``"right"`` (default) or ``"left"`` (netcal's closure), as :func:`ence`.
    weight
        Name of an optional column of non-negative sample weights.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data` (a DataFrame for Spark and Dask data), sorted: per
        group and σ-bin holding rows, the keys,
        ``bin`` (Int32), ``lower`` and ``upper`` (Float64, the bin's smallest and
        largest σ), ``count`` (Int64), ``weight``, ``sum_squared_error`` and
        ``sum_variance`` (weighted sums of ``(y - μ)²`` and ``σ²``: what tables of
        parts of the rows sum), ``mse`` and ``mv`` (their weighted means), ``rmse``
        and ``rmv`` (the means' roots): the points of the ENCE diagram (RMSE against
        RMV). A group holding refused rows has
        a row with a null ``bin`` counting them, and null means.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame (or Spark or Dask data, counted
        on the engine), refused rows.
    ValueError
        Spark or Dask data without a fixed `range` (per-group bins do not merge).

    See Also
    --------
    variance_summary, ence

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> pc.variance_reliability(df, "y", mean="mu", std="sigma", n_bins=2).select(
    ...     "bin", "count", "rmse", "rmv"
    ... )
    shape: (2, 4)
    ┌─────┬───────┬──────────┬──────────┐
    │ bin ┆ count ┆ rmse     ┆ rmv      │
    │ --- ┆ ---   ┆ ---      ┆ ---      │
    │ i32 ┆ i64   ┆ f64      ┆ f64      │
    ╞═════╪═══════╪══════════╪══════════╡
    │ 0   ┆ 2     ┆ 0.790569 ┆ 0.360555 │
    │ 1   ┆ 1     ┆ 1.0      ┆ 1.0      │
    └─────┴───────┴──────────┴──────────┘
    """
    bins = SigmaBins(n_bins, strategy, range, closed)
    engine = engine_of(data)
    if engine is not None:
        sigma = SigmaTable(target, mean, std, bins)
        stats, keys = _engine_table(data, sigma, engine, (by, time, every, weight))
        return variance_bins(stats, keys, n_bins).collect()
    plan = variance_plan(
        data,
        target,
        mean=mean,
        std=std,
        bins=bins,
        by=by,
        time=time,
        every=every,
        weight=weight,
    )
    table: pl.DataFrame | pl.LazyFrame = same_kind(
        data, variance_bins(plan.checked(), plan.keys, n_bins)
    )
    return table


@overload
def variance_summary(
    data: FrameT,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_bins: int = ...,
    strategy: Strategy = ...,
    range: tuple[float, float] | None = ...,
    closed: Closed = ...,
    weight: str | None = ...,
    metrics: VarianceMetric | Sequence[VarianceMetric] = ...,
    marginal: bool = ...,
) -> FrameT: ...


@overload
def variance_summary(
    data: _SparkFrame | _DaskFrame,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_bins: int = ...,
    strategy: Strategy = ...,
    range: tuple[float, float] | None = ...,
    closed: Closed = ...,
    weight: str | None = ...,
    metrics: VarianceMetric | Sequence[VarianceMetric] = ...,
    marginal: bool = ...,
) -> pl.DataFrame: ...


def variance_summary(
    data: Any,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
    closed: Closed = "right",
    weight: str | None = None,
    metrics: VarianceMetric | Sequence[VarianceMetric] = VARIANCE_METRICS,
    marginal: bool = True,
) -> pl.DataFrame | pl.LazyFrame:
    """Return ENCE, UCE and QCE of Gaussian predictions, one row per group.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions; or a Spark or Dask DataFrame, with a
        fixed `range`, as :func:`variance_reliability`'s.
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``).
    by
        Group keys: column names or expressions; ``None`` for one group.
    time, every
        A Date or Datetime column and a window length: one row per group and window.
    n_bins, strategy, range, closed
        The σ-bins, as :func:`variance_reliability`'s (UCE's bins are over σ², as
        netcal's and :func:`uce`'s, so `range` is then a range of σ²).
    weight
        Name of an optional column of non-negative sample weights.
    metrics
        ``"ence"``, ``"uce"``, ``"qce"`` (all by default), each the number of the
        expression of the same name with the same options.
    marginal
        QCE's form, as :func:`qce`'s (its levels are netcal's, 0.1 ... 0.9).

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data` (a DataFrame for Spark and Dask data): the keys,
        ``count`` (Int64 rows used), ``refused``
        (Int64 rows refused), then the metrics (Float64; null for a group holding a
        refused row or with no used row). Every group has its row.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame (or Spark or Dask data, counted
        on the engine), refused rows.
    ValueError
        Spark or Dask data without a fixed `range` (per-group bins do not merge).

    See Also
    --------
    variance_reliability, ence, uce, qce

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> pc.variance_summary(df, "y", mean="mu", std="sigma", n_bins=5)
    shape: (1, 5)
    ┌───────┬─────────┬──────────┬──────┬──────────┐
    │ count ┆ refused ┆ ence     ┆ uce  ┆ qce      │
    │ ---   ┆ ---     ┆ ---      ┆ ---  ┆ ---      │
    │ i64   ┆ i64     ┆ f64      ┆ f64  ┆ f64      │
    ╞═══════╪═════════╪══════════╪══════╪══════════╡
    │ 3     ┆ 0       ┆ 1.666667 ┆ 0.33 ┆ 0.388889 │
    └───────┴─────────┴──────────┴──────┴──────────┘
    """
    bins = SigmaBins(n_bins, strategy, range, closed)
    asked = [metrics] if isinstance(metrics, str) else list(metrics)
    for metric in asked:
        check_choice("metrics", metric, VARIANCE_METRICS)
    if not isinstance(marginal, bool):
        msg = f"`marginal` must be a bool, got {type(marginal).__name__}"
        raise TypeError(msg)
    overs = ("sigma", "variance")[: 2 if "uce" in asked else 1]
    engine = engine_of(data)
    if engine is not None:
        options = (by, time, every, weight)
        tables = [
            _engine_table(data, SigmaTable(target, mean, std, bins, over), engine, options)
            for over in overs
        ]
        (sigma, keys), squared_table = tables[0], tables[1][0] if len(tables) > 1 else None
        return finish_variance(sigma, squared_table, keys, asked, n_bins, marginal).collect()
    plans = [
        variance_plan(
            data,
            target,
            mean=mean,
            std=std,
            bins=bins,
            over=over,
            by=by,
            time=time,
            every=every,
            weight=weight,
        )
        for over in overs
    ]
    plan = plans[0]
    squared = plans[1].checked() if len(plans) > 1 else None
    result = finish_variance(plan.checked(), squared, plan.keys, asked, n_bins, marginal)
    summary: pl.DataFrame | pl.LazyFrame = same_kind(data, result)
    return summary
