"""Frame functions of Gaussian regression predictions: the statistics table and its finishers.

Each is the one plan (:func:`polars_calib._table.regression.gaussian_plan`: the problem,
its sparse statistics table per (keys, bin of the PIT)) and a finisher. A LazyFrame
gives a plan that reads nothing until collected (a group holding refused rows gets
null metrics); a DataFrame runs it and raises
:class:`~polars_calib.CalibrationDataError` on refused rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import (
    CURVES,
    Curve,
    RegressionMetric,
    check_choice,
    check_confidence,
    check_n_levels,
)
from polars_calib._core.quantiles import is_quantile_form
from polars_calib._core.validation import CalibrationDataError, problem_counts
from polars_calib._engines import (
    EngineSpec,
    column_keys,
    engine_form,
    engine_of,
    engine_statistics,
)
from polars_calib._frames.quantiles import (
    quantile_metrics_from_statistics,
    quantile_reliability_from_quantiles,
    quantile_reliability_quantiles_table,
    quantile_statistics,
    quantile_summary,
)
from polars_calib._frames.regression_forms import (
    Form,
    FormOptions,
    interval_metrics_from_statistics,
    is_interval_table,
    table_metrics,
)
from polars_calib._frames.statistics import _DaskFrame, _keyed, _SparkFrame
from polars_calib._table.intervals import interval_columns, interval_levels, interval_reliability
from polars_calib._table.plan import FrameT, check_statistics, same_kind
from polars_calib._table.quantiles import is_quantile_table, quantile_plan
from polars_calib._table.regression import (
    finish_regression,
    gaussian_plan,
    prepare_gaussian,
    regression_terms,
    reliability_levels,
)

__all__ = [
    "quantile_reliability",
    "quantile_reliability_from_statistics",
    "regression_metrics_from_statistics",
    "regression_statistics",
    "regression_summary",
    "validate_regression_statistics",
]

_TABLE_COLUMNS = (
    "bin",
    "lower",
    "upper",
    "closed",
    "n_bins",
    "count",
    "weight",
    "sum_center",
)
"""The columns a regression statistics table holds besides its keys and the sums of its
form's terms (``sum_crps``, ...: :func:`~polars_calib._frames.regression_forms.table_metrics`)."""


@overload
def regression_statistics(
    data: FrameT,
    target: str,
    *,
    mean: str | None = ...,
    std: str | None = ...,
    quantiles: str | Sequence[str] | None = ...,
    levels: Sequence[float] | None = ...,
    ensemble: str | None = ...,
    seed: int = ...,
    id: str | None = ...,
    lower: str | Sequence[str] | None = ...,
    upper: str | Sequence[str] | None = ...,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_levels: int = ...,
    weight: str | None = ...,
) -> FrameT: ...


@overload
def regression_statistics(
    data: _SparkFrame | _DaskFrame,
    target: str,
    *,
    mean: str | None = ...,
    std: str | None = ...,
    quantiles: str | Sequence[str] | None = ...,
    levels: Sequence[float] | None = ...,
    ensemble: str | None = ...,
    seed: int = ...,
    id: str | None = ...,
    lower: str | Sequence[str] | None = ...,
    upper: str | Sequence[str] | None = ...,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_levels: int = ...,
    weight: str | None = ...,
) -> pl.DataFrame: ...


def regression_statistics(
    data: Any,
    target: str,
    *,
    mean: str | None = None,
    std: str | None = None,
    quantiles: str | Sequence[str] | None = None,
    levels: Sequence[float] | None = None,
    # The ensemble and interval forms (_frames/regression_forms.py).
    ensemble: str | None = None,
    seed: int = 0,
    id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
    lower: str | Sequence[str] | None = None,
    upper: str | Sequence[str] | None = None,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Return the mergeable statistics table of regression predictions.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions; or a Spark or Dask DataFrame (`by` as
        column names; ``polars_calib`` installed on the workers): each partition runs
        this table's Polars aggregation, the engine sums them (``docs/scale-out.md``).
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``):
        the Gaussian form. Give exactly one form (else a ``TypeError``).
    quantiles, levels
        Instead of `mean` and `std`: the name of an Array or List column of K predicted
        quantiles (or K column names) and their K levels in (0, 1), strictly increasing
        (``docs/regression.md``, "Quantile predictions").
    ensemble
        Name of an Array or List column of ensemble members, instead of `mean` and
        `std`: the PIT is the randomized rank PIT (:func:`rank_pit`), the CRPS the
        ensemble's (:func:`crps_ensemble`; see ``docs/regression.md``, "Ensembles").
    seed, id
        The rank PIT's seed and row identity (an integer column): by default the row's
        position in `data`; an `id` keeps each row's draw in any partition (required
        for Spark and Dask data).
    lower, upper
        Names of the bounds of central prediction intervals (one column each, or one
        per interval), instead of `mean` and `std` (``docs/prediction-intervals.md``).
    by
        Group keys: column names or expressions; ``None`` for one group.
    time, every
        A Date or Datetime column and a window length (``"1w"``): the table is kept
        per window too (the window's start as a key).
    n_levels
        Number of calibration levels ``j / (n_levels - 1)``: the PIT is binned on
        ``2 (n_levels - 1)`` equal-width, right-closed bins.
    weight
        Name of an optional column of non-negative sample weights.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data` (a DataFrame for Spark and Dask data), sorted by the
        keys and bin: one row per group and non-empty bin of the PIT (a
        null ``bin`` counts a group's refused rows; a group of only null rows has one
        row counting 0), with ``lower``, ``upper`` (exact edges ``k / n_bins``),
        ``closed``, ``n_bins``, ``count``, ``weight``, ``sum_p`` (the PIT), ``sum_y``
        (the target), ``sum_crps``, ``sum_nll``, ``sum_squared_error``,
        ``sum_variance`` and ``sum_center`` (rows with ``y == μ``), all weighted.
        Quantile predictions have K + 1 bins, ``b = #{k : q_k < y}``, edges
        ``0, τ_1, ..., τ_K, 1`` (``n_bins`` K + 1), ``sum_p`` (each row's upper edge),
        ``sum_y`` and one ``sum_pinball_<τ_k>`` per level (the pinball loss).
        Tables of parts of the rows merge by summing the rows of the same keys and bin;
        :func:`regression_metrics_from_statistics` and
        :func:`quantile_reliability_from_statistics` finish them. An ensemble's table
        sums ``sum_crps`` (energy), ``sum_crps_fair`` and ``sum_center`` (rows whose
        PIT is 1/2); an interval table has one bin per group (over the first
        interval's coverage indicator) and sums ``sum_covered_k``, ``sum_width_k``,
        ``sum_below_k`` and ``sum_above_k`` per interval ``k``. Spark and Dask data
        give the Polars table of the same rows, for every form.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame (or Spark or Dask data, counted
        on the engine), refused rows (a NaN or infinite target or mean, ``std`` not a
        positive finite number, a bad weight; with quantiles: a NaN or infinite target
        or quantile, a list of another length than K, a null inside the list,
        crossing quantiles).
    TypeError
        Both prediction forms, or neither, or half of one.
    ValueError
        Ensemble predictions of Spark or Dask data without `id` (the row's position
        depends on the partitioning).

    See Also
    --------
    regression_summary, quantile_reliability, regression_metrics_from_statistics

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> pc.regression_statistics(df, "y", mean="mu", std="sigma", n_levels=3).select(
    ...     "bin", "lower", "upper", "count", "sum_p"
    ... )
    shape: (2, 5)
    ┌─────┬───────┬───────┬───────┬──────────┐
    │ bin ┆ lower ┆ upper ┆ count ┆ sum_p    │
    │ --- ┆ ---   ┆ ---   ┆ ---   ┆ ---      │
    │ i32 ┆ f64   ┆ f64   ┆ i64   ┆ f64      │
    ╞═════╪═══════╪═══════╪═══════╪══════════╡
    │ 0   ┆ 0.0   ┆ 0.25  ┆ 1     ┆ 0.158655 │
    │ 3   ┆ 0.75  ┆ 1.0   ┆ 2     ┆ 1.97725  │
    └─────┴───────┴───────┴───────┴──────────┘
    """
    check_n_levels(n_levels)
    form = Form(mean, std, ensemble, seed, id, lower, upper, None, quantiles, levels)
    if form.kind == "quantile":
        is_quantile_form(mean, std, quantiles, levels, n_levels)  # its own checks
    engine = engine_of(data)
    if engine is not None:
        # Every form, through the one engine path (polars_calib._engines).
        spec = EngineSpec(
            by=column_keys(by),
            weight=weight,
            time=time,
            every=every,
            regression=engine_form(form.plain(target, n_levels), engine),
        )
        return engine_statistics(data, spec, engine)[0]
    # The quantile form (polars_calib._frames.quantiles).
    if form.kind == "quantile":
        options = {"quantiles": quantiles, "levels": levels, "by": by, "weight": weight}
        quantile_table: pl.DataFrame | pl.LazyFrame = quantile_statistics(
            data, target, time=time, every=every, **options
        )
        return quantile_table
    # The ensemble and interval forms (polars_calib._frames.regression_forms).
    if form.kind != "gaussian":
        form_options = FormOptions(by, time, every, n_levels, weight)
        other: pl.DataFrame | pl.LazyFrame = same_kind(
            data, form.plan(data, target, form_options).checked()
        )
        return other
    assert mean is not None and std is not None  # the Gaussian form (Form.kind)
    plan = gaussian_plan(
        data,
        target,
        mean=mean,
        std=std,
        n_levels=n_levels,
        by=by,
        time=time,
        every=every,
        weight=weight,
    )
    table: pl.DataFrame | pl.LazyFrame = same_kind(data, plan.checked())
    return table


def regression_summary(
    data: FrameT,
    target: str,
    *,
    mean: str | None = None,
    std: str | None = None,
    quantiles: str | Sequence[str] | None = None,
    levels: Sequence[float] | None = None,
    # The ensemble and interval forms (_frames/regression_forms.py).
    ensemble: str | None = None,
    seed: int = 0,
    id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
    lower: str | Sequence[str] | None = None,
    upper: str | Sequence[str] | None = None,
    level: float | Sequence[float] | None = None,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
    metrics: RegressionMetric | Sequence[RegressionMetric] | None = None,
    curve: Curve | None = None,
) -> FrameT:
    """Return calibration metrics of Gaussian or quantile predictions, one row per group.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``):
        the Gaussian form. Give exactly one form (else a ``TypeError``).
    quantiles, levels
        Instead of `mean` and `std`: the name of an Array or List column of K predicted
        quantiles (or K column names) and their K levels in (0, 1), strictly increasing
        (``docs/regression.md``, "Quantile predictions").
    ensemble
        Name of an Array or List column of ensemble members, instead of `mean` and
        `std`: the PIT is the randomized rank PIT (:func:`rank_pit`), the CRPS the
        ensemble's (:func:`crps_ensemble`; see ``docs/regression.md``, "Ensembles").
    seed, id
        The rank PIT's seed and row identity (an integer column): by default the row's
        position in `data`; an `id` keeps each row's draw in any partition.
    lower, upper
        Names of the bounds of central prediction intervals (one column each, or one
        per interval), instead of `mean` and `std` (``docs/prediction-intervals.md``).
    level
        The intervals' nominal coverage (one per interval), with `lower` and `upper`.
    by
        Group keys: column names or expressions; ``None`` for one group.
    time, every
        A Date or Datetime column and a window length: one row per group and window.
    n_levels
        Number of calibration levels ``j / (n_levels - 1)``.
    weight
        Name of an optional column of non-negative sample weights.
    metrics
        Metrics to compute, each named after its expression; by default all of the
        form's. Gaussian: ``"mean_absolute_calibration_error"``,
        ``"root_mean_squared_calibration_error"``, ``"miscalibration_area"``,
        ``"quantile_calibration_score"``, ``"crps"``, ``"nll"``, ``"sharpness"``.
        Quantiles: the first four and ``"pinball_loss"``.
        Ensemble: the first four, ``"crps"`` (energy form) and ``"crps_fair"``.
        Intervals: ``"interval_coverage"``, ``"interval_width"``, ``"interval_score"``
        and ``"coverage_gap"`` (signed: coverage minus `level`). Another form's metric
        is a ``ValueError``.
    curve
        The curve of the first three: ``"interval"`` (the Gaussian default, as
        uncertainty-toolbox) or ``"quantile"`` (the only curve of quantile
        predictions). Kuleshov's score always reads the quantile curve.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`: the keys, ``count`` (Int64 rows used), ``refused``
        (Int64 rows refused), then the metrics (Float64; null for a group holding a
        refused row or with no used row). Every group has its row; with intervals,
        one row per group and level, with a ``level`` column after the keys.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame, refused rows.

    See Also
    --------
    regression_statistics, mean_absolute_calibration_error, crps

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.calib.regression_summary(
    ...     "y", mean="mu", std="sigma", metrics=["miscalibration_area", "crps"]
    ... )
    shape: (1, 4)
    ┌───────┬─────────┬─────────────────────┬──────────┐
    │ count ┆ refused ┆ miscalibration_area ┆ crps     │
    │ ---   ┆ ---     ┆ ---                 ┆ ---      │
    │ i64   ┆ i64     ┆ f64                 ┆ f64      │
    ╞═══════╪═════════╪═════════════════════╪══════════╡
    │ 3     ┆ 0       ┆ 0.377104            ┆ 0.590806 │
    └───────┴─────────┴─────────────────────┴──────────┘
    """
    check_n_levels(n_levels)
    form = Form(mean, std, ensemble, seed, id, lower, upper, level, quantiles, levels)
    # The quantile form (polars_calib._frames.quantiles).
    if form.kind == "quantile":
        is_quantile_form(mean, std, quantiles, levels, n_levels)  # its own checks
        options = {"quantiles": quantiles, "levels": levels, "by": by, "weight": weight}
        return quantile_summary(
            data, target, metrics=metrics, curve=curve, time=time, every=every, **options
        )
    # The Gaussian, ensemble and interval forms (polars_calib._frames.regression_forms).
    curve = "interval" if curve is None else curve
    check_choice("curve", curve, CURVES)
    asked = form.metrics(metrics)
    if form.kind != "gaussian":
        plan = form.plan(data, target, FormOptions(by, time, every, n_levels, weight))
        if form.kind == "interval":
            return same_kind(data, form.interval_summary(plan, asked))
        ensemble_result = finish_regression(plan.checked(), plan.keys, asked, n_levels, curve)
        return same_kind(data, ensemble_result)
    assert mean is not None and std is not None  # the Gaussian form (Form.kind)
    plan = gaussian_plan(
        data,
        target,
        mean=mean,
        std=std,
        n_levels=n_levels,
        by=by,
        time=time,
        every=every,
        weight=weight,
        terms=regression_terms(asked),
    )
    result = finish_regression(plan.checked(), plan.keys, asked, n_levels, curve)
    return same_kind(data, result)


def quantile_reliability(
    data: FrameT,
    target: str,
    *,
    mean: str | None = None,
    std: str | None = None,
    quantiles: str | Sequence[str] | None = None,
    levels: Sequence[float] | None = None,
    # The ensemble form (_frames/regression_forms.py).
    ensemble: str | None = None,
    seed: int = 0,
    id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
    # The interval form (_table/intervals.py): coverage against each nominal level.
    lower: str | Sequence[str] | None = None,
    upper: str | Sequence[str] | None = None,
    level: float | Sequence[float] | None = None,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
    curve: Curve = "quantile",
    confidence: float = 0.95,
) -> FrameT:
    """Return the calibration curve of regression predictions: per level, the observed share.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``):
        the Gaussian form. Give exactly one form (else a ``TypeError``).
    quantiles, levels
        Instead of `mean` and `std`: the name of an Array or List column of K predicted
        quantiles (or K column names) and their K levels in (0, 1), strictly increasing
        (``docs/regression.md``, "Quantile predictions").
    ensemble
        Name of an Array or List column of ensemble members, instead of `mean` and
        `std`: the PIT is the randomized rank PIT (:func:`rank_pit`), the CRPS the
        ensemble's (:func:`crps_ensemble`; see ``docs/regression.md``, "Ensembles").
    seed, id
        The rank PIT's seed and row identity (an integer column): by default the row's
        position in `data`; an `id` keeps each row's draw in any partition.
    lower, upper, level
        Instead of `mean` and `std`: central intervals, one column each per interval,
        and their nominal levels (one per interval): the curve is each interval's
        coverage against its level (the interval form's reliability diagram; no grid,
        so `n_levels` is not taken and `curve` is not read).
    by
        Group keys: column names or expressions; ``None`` for one group.
    time, every
        A Date or Datetime column and a window length: one curve per group and window.
    n_levels
        Number of levels ``j / (n_levels - 1)`` (21 gives steps of 0.05).
    weight
        Name of an optional column of non-negative sample weights.
    curve
        ``"quantile"`` (default): the share of targets at or below each predicted
        ``p``-quantile; ``"interval"``: the share inside each central ``p``-interval
        (quantile predictions: the interval ``[q_k, q_(K+1-k)]`` of each symmetric pair
        of levels, ``p = 1 - 2 τ_k``, bounds included; no ``pinball`` column).
    confidence
        Confidence level of the Wilson interval on the observed share.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`, `n_levels` rows per group, sorted: the keys,
        ``level`` (Float64 ``p``), ``observed`` (Float64 share), ``count`` (Int64
        rows used in the group), ``lower`` and ``upper`` (Wilson interval on the
        group's weight); with quantile predictions, at their levels, and
        ``pinball`` (Float64 mean pinball loss at the level). Null shares and bounds
        for a group holding refused rows.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame, refused rows.

    See Also
    --------
    regression_summary, mean_absolute_calibration_error

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> pc.quantile_reliability(df, "y", mean="mu", std="sigma", n_levels=3).select(
    ...     "level", "observed", "count"
    ... )
    shape: (3, 3)
    ┌───────┬──────────┬───────┐
    │ level ┆ observed ┆ count │
    │ ---   ┆ ---      ┆ ---   │
    │ f64   ┆ f64      ┆ i64   │
    ╞═══════╪══════════╪═══════╡
    │ 0.0   ┆ 0.0      ┆ 3     │
    │ 0.5   ┆ 0.333333 ┆ 3     │
    │ 1.0   ┆ 1.0      ┆ 3     │
    └───────┴──────────┴───────┘
    """
    check_n_levels(n_levels)
    form = Form(
        mean, std, ensemble, seed, id, lower, upper, level, quantiles=quantiles, levels=levels
    )
    # The quantile form (polars_calib._frames.quantiles).
    if form.kind == "quantile":
        is_quantile_form(mean, std, quantiles, levels, n_levels)  # its own checks
        options = {"quantiles": quantiles, "levels": levels, "by": by, "weight": weight}
        return quantile_reliability_from_quantiles(
            data, target, curve=curve, confidence=confidence, time=time, every=every, **options
        )
    # The Gaussian, ensemble and interval forms (polars_calib._frames.regression_forms).
    check_choice("curve", curve, CURVES)
    z = check_confidence(confidence)
    if form.kind == "interval":
        if n_levels != 100:
            msg = "`n_levels` is the Gaussian form's grid: intervals take their `level=`"
            raise TypeError(msg)
        assert lower is not None and upper is not None
        plan = form.plan(data, target, FormOptions(by, time, every, n_levels, weight))
        levels_of = interval_levels(level, len(interval_columns(lower, upper)[0]))
        coverage = interval_reliability(plan.checked(), plan.keys, levels_of, z)
        return same_kind(data, coverage)
    if form.kind == "ensemble":
        plan = form.plan(data, target, FormOptions(by, time, every, n_levels, weight))
        ensemble_curve = reliability_levels(plan.checked(), plan.keys, n_levels, curve, z)
        return same_kind(data, ensemble_curve)
    assert mean is not None and std is not None  # the Gaussian form (Form.kind)
    plan = gaussian_plan(
        data,
        target,
        mean=mean,
        std=std,
        n_levels=n_levels,
        by=by,
        time=time,
        every=every,
        weight=weight,
        terms=("center",),
    )
    result = reliability_levels(plan.checked(), plan.keys, n_levels, curve, z)
    return same_kind(data, result)


def _check_columns(stats: pl.DataFrame | pl.LazyFrame, keys: list[str]) -> None:
    """Raise :class:`CalibrationDataError` for a table without a regression table's
    columns (its schema only: nothing is read)."""
    schema = stats.collect_schema()
    missing = [name for name in (*keys, *_TABLE_COLUMNS) if name not in schema]
    if missing:
        msg = (
            "`stats` is not a regression statistics table (see `regression_statistics`): "
            f"missing column(s) {', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)


def _level_count(stats: pl.DataFrame | pl.LazyFrame, keys: list[str]) -> int:
    """The number of levels of a regression statistics table, read from its ``n_bins``.

    Raises :class:`CalibrationDataError` for a table that is not a regression table
    (missing columns), whose binned rows mix grids or closures, or that has no binned
    row (its grid is unknown).
    """
    _check_columns(stats, keys)
    grids = (
        stats.lazy()
        .filter(pl.col("bin").is_not_null())
        .select(pl.struct("n_bins", "closed").unique().sort())
        .collect()
        .to_series()
        .to_list()
    )
    if len(grids) != 1:
        msg = (
            "`stats` has no binned row: its grid of levels is unknown"
            if not grids
            else "`stats` mixes grids (tables of different `n_levels` cannot be merged): "
            + ", ".join(f"n_bins={g['n_bins']} closed={g['closed']!r}" for g in grids)
        )
        raise CalibrationDataError(msg)
    n_bins, closed = grids[0]["n_bins"], grids[0]["closed"]
    if not isinstance(n_bins, int) or n_bins < 2 or n_bins % 2 or closed != "right":
        msg = (
            "`stats` is not a regression statistics table (see `regression_statistics`): "
            f"its bins (n_bins={n_bins}, closed={closed!r}) are not 2 (n_levels - 1) "
            "right-closed bins of the PIT"
        )
        raise CalibrationDataError(msg)
    return n_bins // 2 + 1


def _grid_of(stats: pl.DataFrame | pl.LazyFrame, keys: list[str], n_levels: int | None) -> int:
    """The table's number of levels: read from a DataFrame (and checked against
    `n_levels` if given); a LazyFrame's must be given, since a plan reads nothing until
    collected (its rows of another grid are refused there: :func:`_on_grid`)."""
    if isinstance(stats, pl.DataFrame):
        found = _level_count(stats, keys)
        if n_levels is not None and n_levels != found:
            msg = f"`n_levels` is {n_levels}, but the table's grid has {found} levels"
            raise ValueError(msg)
        return found
    if n_levels is None:
        msg = (
            "give `n_levels` for a LazyFrame table: its grid is in the data, and a plan "
            "reads nothing until collected (or collect the table first)"
        )
        raise ValueError(msg)
    check_n_levels(n_levels)
    _check_columns(stats, keys)
    return n_levels


def _on_grid(stats: pl.LazyFrame, n_levels: int) -> pl.LazyFrame:
    """`stats` with its binned rows of another grid made refused rows (a null bin), so
    that their group's numbers are null, never numbers of a misread grid."""
    other = pl.col("bin").is_not_null() & (
        (pl.col("n_bins") != 2 * (n_levels - 1)) | (pl.col("closed") != "right")
    )
    return stats.with_columns(pl.when(other).then(None).otherwise(pl.col("bin")).alias("bin"))


def regression_metrics_from_statistics(
    stats: FrameT,
    *,
    by: Keys = None,
    n_levels: int | None = None,
    metrics: RegressionMetric | Sequence[RegressionMetric] | None = None,
    curve: Curve | None = None,
    level: float | Sequence[float] | None = None,
) -> FrameT:
    """Finish calibration metrics of regression predictions from one or many statistics tables.

    Parameters
    ----------
    stats
        Output of :func:`regression_statistics`, or several of them concatenated (one
        per partition of a log, or yesterday's and today's): rows of the same group and
        bin are summed. The table carries its grid: ``n_levels`` is read from its
        ``n_bins`` (``2 (n_levels - 1)``), which all its rows must share.
    by
        The group keys of the result: any of the table's key columns, or expressions
        of them; keys left out are summed over. ``None``: one group, all rows.
    n_levels
        The table's number of levels (its `n_levels` when built). A DataFrame's is read
        from the table (and checked if given); a LazyFrame's must be given, since a
        plan reads nothing until collected: there a group holding rows of another
        grid is counted as refused, and its metrics are null.
    metrics
        Metrics to compute, as :func:`regression_summary`'s (all of the table's form
        by default: a quantile table is recognised by its ``sum_pinball_*`` columns,
        which carry its levels; it takes no `n_levels`).
    curve
        The curve of the first three metrics, as :func:`regression_summary`'s
        (``None``: ``"interval"`` for a Gaussian table, ``"quantile"`` for a quantile
        table; an interval table has no curve).
    level
        The nominal coverage of each interval of an interval table (``lower=``,
        ``upper=``), one per interval, as :func:`regression_summary`'s: the table sums
        each interval's terms but does not hold its level. Other tables take none.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `stats`, with the columns of :func:`regression_summary`: the
        keys, ``count``, ``refused``, then the metrics (null for a group holding a
        refused row or with no used row), one row per group, sorted by the keys
        (an interval table's: one per group and level, with a ``level`` column).

    Raises
    ------
    CalibrationDataError
        `stats` is not a regression statistics table (a classification table has no
        ``sum_crps``), mixes grids (tables of different `n_levels`), or has no binned
        row (a DataFrame; a LazyFrame's rows of another grid give null metrics).
    ValueError
        A LazyFrame without `n_levels`, or an `n_levels` other than the table's.

    See Also
    --------
    regression_statistics, regression_summary, quantile_reliability_from_statistics

    Examples
    --------
    Statistics of two days, merged:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> day1 = pl.DataFrame({"y": [1.5, 3.0], "mu": [1.0, 2.0], "sigma": [0.1, 0.5]})
    >>> day2 = pl.DataFrame({"y": [2.0], "mu": [3.0], "sigma": [1.0]})
    >>> stats = pl.concat([
    ...     pc.regression_statistics(day, "y", mean="mu", std="sigma") for day in (day1, day2)
    ... ])
    >>> pc.regression_metrics_from_statistics(stats, metrics=["miscalibration_area", "crps"])
    shape: (1, 4)
    ┌───────┬─────────┬─────────────────────┬──────────┐
    │ count ┆ refused ┆ miscalibration_area ┆ crps     │
    │ ---   ┆ ---     ┆ ---                 ┆ ---      │
    │ i64   ┆ i64     ┆ f64                 ┆ f64      │
    ╞═══════╪═════════╪═════════════════════╪══════════╡
    │ 3     ┆ 0       ┆ 0.377104            ┆ 0.590806 │
    └───────┴─────────┴─────────────────────┴──────────┘
    """
    stats, keys = _keyed(stats, by)
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`stats` must be a polars DataFrame or LazyFrame, got {type(stats).__name__}"
        raise TypeError(msg)
    # An interval table (polars_calib._frames.regression_forms).
    if is_interval_table(stats):
        finished = interval_metrics_from_statistics(
            stats, keys, n_levels=n_levels, metrics=metrics, curve=curve, level=level
        )
        return same_kind(stats, finished)
    if level is not None:
        msg = "`level=` is the nominal coverage of an interval table's intervals"
        raise TypeError(msg)
    # A quantile table (polars_calib._frames.quantiles).
    if is_quantile_table(stats):
        return quantile_metrics_from_statistics(
            stats, keys, n_levels=n_levels, metrics=metrics, curve=curve
        )
    curve = "interval" if curve is None else curve
    check_choice("curve", curve, CURVES)
    asked = table_metrics(stats, metrics)  # the Gaussian or the ensemble form's
    n_levels = _grid_of(stats, keys, n_levels)
    table = _on_grid(stats.lazy(), n_levels)
    return same_kind(stats, finish_regression(table, keys, asked, n_levels, curve))


def quantile_reliability_from_statistics(
    stats: FrameT,
    *,
    by: Keys = None,
    n_levels: int | None = None,
    curve: Curve = "quantile",
    confidence: float = 0.95,
) -> FrameT:
    """Finish the calibration curve of regression predictions from one or many statistics tables.

    Parameters
    ----------
    stats
        Output of :func:`regression_statistics`, or several concatenated; rows of the
        same group and bin are summed. ``n_levels`` is read from the table's
        ``n_bins`` (``2 (n_levels - 1)``), which all its rows must share.
    by
        The group keys of the result: any of the table's key columns, or expressions
        of them; keys left out are summed over. ``None``: one group, all rows.
    n_levels
        As :func:`regression_metrics_from_statistics`'s: required for a LazyFrame.
    curve
        ``"quantile"`` (default) or ``"interval"``, as :func:`quantile_reliability`'s.
    confidence
        Confidence level of the Wilson interval on the observed share.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `stats`, with the columns of :func:`quantile_reliability`:
        the keys, ``level``, ``observed``, ``count``, ``lower`` and ``upper``,
        ``n_levels`` rows per group, sorted.

    Raises
    ------
    CalibrationDataError
        As :func:`regression_metrics_from_statistics`.

    See Also
    --------
    regression_statistics, quantile_reliability, regression_metrics_from_statistics

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> stats = pc.regression_statistics(df, "y", mean="mu", std="sigma", n_levels=3)
    >>> pc.quantile_reliability_from_statistics(stats).select("level", "observed", "count")
    shape: (3, 3)
    ┌───────┬──────────┬───────┐
    │ level ┆ observed ┆ count │
    │ ---   ┆ ---      ┆ ---   │
    │ f64   ┆ f64      ┆ i64   │
    ╞═══════╪══════════╪═══════╡
    │ 0.0   ┆ 0.0      ┆ 3     │
    │ 0.5   ┆ 0.333333 ┆ 3     │
    │ 1.0   ┆ 1.0      ┆ 3     │
    └───────┴──────────┴───────┘
    """
    stats, keys = _keyed(stats, by)
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`stats` must be a polars DataFrame or LazyFrame, got {type(stats).__name__}"
        raise TypeError(msg)
    # A quantile table (polars_calib._frames.quantiles).
    if is_quantile_table(stats):
        return quantile_reliability_quantiles_table(
            stats, keys, n_levels=n_levels, curve=curve, confidence=confidence
        )
    check_choice("curve", curve, CURVES)
    z = check_confidence(confidence)
    n_levels = _grid_of(stats, keys, n_levels)
    table = _on_grid(stats.lazy(), n_levels)
    return same_kind(stats, reliability_levels(table, keys, n_levels, curve, z))


def validate_regression_statistics(
    stats: pl.DataFrame,
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    mean: str | None = None,
    std: str | None = None,
    quantiles: str | Sequence[str] | None = None,
    levels: Sequence[float] | None = None,
    ensemble: str | None = None,
    seed: int = 0,
    id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
    lower: str | Sequence[str] | None = None,
    upper: str | Sequence[str] | None = None,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    weight: str | None = None,
) -> pl.DataFrame:
    """Raise if a collected regression statistics table of a LazyFrame counts refused rows.

    :func:`regression_statistics` of a DataFrame raises on refused rows; of a
    LazyFrame it returns a plan whose table counts them (a null-bin row per group).
    This gives a collected table the DataFrame's policy, as
    :func:`validate_statistics` does for classification: it returns `stats` as it is,
    or raises :class:`~polars_calib.CalibrationDataError` naming each check and how
    many rows it refuses, counted by reading `data` again (only then).

    Parameters
    ----------
    stats
        ``regression_statistics(data, ...).collect()``.
    data, target, by, time, every, weight
        The arguments `stats` was computed with, as :func:`regression_statistics`'s.
    mean, std, quantiles, levels, ensemble, seed, id, lower, upper
        The prediction form `stats` was computed with (one), as
        :func:`regression_statistics`'s.

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
    regression_statistics, validate_statistics

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.LazyFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.0, 1.0]})
    >>> stats = pc.regression_statistics(log, "y", mean="mu", std="sigma").collect()
    >>> pc.validate_regression_statistics(stats, log, "y", mean="mu", std="sigma")
    Traceback (most recent call last):
    ...
    polars_calib._core.validation.CalibrationDataError: invalid calibration data: column 'sigma':
    standard deviation not a positive finite number in 1 of 3 rows (e.g. 0.0)
    """
    form = Form(mean, std, ensemble, seed, id, lower, upper, None, quantiles, levels)
    if form.kind == "gaussian":
        assert mean is not None and std is not None  # the Gaussian form (Form.kind)
        prepared = prepare_gaussian(
            data, target, mean=mean, std=std, by=by, time=time, every=every, weight=weight
        )
    elif form.kind == "quantile":
        assert quantiles is not None and levels is not None  # the quantile form (Form.kind)
        plan = quantile_plan(
            data,
            target,
            quantiles=quantiles,
            levels=levels,
            by=by,
            time=time,
            every=every,
            weight=weight,
        )
        prepared = plan.prepared
    else:
        prepared = form.plan(data, target, FormOptions(by, time, every, 100, weight)).prepared
    return check_statistics(
        prepared, stats, lambda checks: problem_counts(prepared.lf, checks).collect()
    )
