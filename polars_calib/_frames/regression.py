"""Frame functions of Gaussian regression predictions: the statistics table and its finishers.

Each is the one plan (:func:`polars_calib._table.regression.gaussian_plan`: the problem,
its sparse statistics table per (keys, bin of the PIT)) and a finisher. A LazyFrame
gives a plan that reads nothing until collected (a group holding refused rows gets
null metrics); a DataFrame runs it and raises
:class:`~polars_calib.CalibrationDataError` on refused rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from polars_calib._core.exprs import Keys
from polars_calib._core.options import (
    CURVES,
    Curve,
    RegressionMetric,
    check_choice,
    check_confidence,
    check_n_levels,
)
from polars_calib._table.plan import FrameT, same_kind
from polars_calib._table.regression import (
    REGRESSION_METRICS,
    finish_regression,
    gaussian_plan,
    reliability_levels,
)

__all__ = ["quantile_reliability", "regression_statistics", "regression_summary"]


def regression_statistics(
    data: FrameT,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
) -> FrameT:
    """Return the mergeable statistics table of Gaussian predictions.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``).
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
        The same kind as `data`: one row per group and non-empty bin of the PIT (a
        null ``bin`` counts a group's refused rows; a group of only null rows has one
        row counting 0), with ``lower``, ``upper`` (exact edges ``k / n_bins``),
        ``closed``, ``n_bins``, ``count``, ``weight``, ``sum_p`` (the PIT), ``sum_y``
        (the target), ``sum_crps``, ``sum_nll``, ``sum_squared_error``,
        ``sum_variance`` and ``sum_center`` (rows with ``y == μ``), all weighted.
        Tables of parts of the rows merge by summing the rows of the same keys and bin.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame, refused rows (a NaN or
        infinite target or mean, ``std`` not a positive finite number, a bad weight).

    See Also
    --------
    regression_summary, quantile_reliability

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
    return same_kind(data, plan.checked())


def regression_summary(
    data: FrameT,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
    metrics: RegressionMetric | Sequence[RegressionMetric] = REGRESSION_METRICS,
    curve: Curve = "interval",
) -> FrameT:
    """Return calibration metrics of Gaussian predictions, one row per group.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``).
    by
        Group keys: column names or expressions; ``None`` for one group.
    time, every
        A Date or Datetime column and a window length: one row per group and window.
    n_levels
        Number of calibration levels ``j / (n_levels - 1)``.
    weight
        Name of an optional column of non-negative sample weights.
    metrics
        Metrics to compute, each named after its expression:
        ``"mean_absolute_calibration_error"``, ``"root_mean_squared_calibration_error"``,
        ``"miscalibration_area"``, ``"quantile_calibration_score"``, ``"crps"``,
        ``"nll"``, ``"sharpness"`` (all by default).
    curve
        The curve of the first three: ``"interval"`` (default, as uncertainty-toolbox)
        or ``"quantile"``. Kuleshov's score always reads the quantile curve.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`: the keys, ``count`` (Int64 rows used), ``refused``
        (Int64 rows refused), then the metrics (Float64; null for a group holding a
        refused row or with no used row). Every group has its row.

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
    check_choice("curve", curve, CURVES)
    asked = [metrics] if isinstance(metrics, str) else list(metrics)
    for metric in asked:
        check_choice("metrics", metric, REGRESSION_METRICS)
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
    result = finish_regression(plan.checked(), plan.keys, asked, n_levels, curve)
    return same_kind(data, result)


def quantile_reliability(
    data: FrameT,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
    curve: Curve = "quantile",
    confidence: float = 0.95,
) -> FrameT:
    """Return the calibration curve of Gaussian predictions: per level, the observed share.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``).
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
        ``p``-quantile; ``"interval"``: the share inside each central ``p``-interval.
    confidence
        Confidence level of the Wilson interval on the observed share.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`, `n_levels` rows per group, sorted: the keys,
        ``level`` (Float64 ``p``), ``observed`` (Float64 share), ``count`` (Int64
        rows used in the group), ``lower`` and ``upper`` (Wilson interval on the
        group's weight). Null shares and bounds for a group holding refused rows.

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
    check_choice("curve", curve, CURVES)
    z = check_confidence(confidence)
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
    result = reliability_levels(plan.checked(), plan.keys, n_levels, curve, z)
    return same_kind(data, result)
