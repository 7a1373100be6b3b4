"""Calibration of Gaussian regression predictions as aggregating expressions.

Each expression runs, inside one group, the finisher the frame functions run on the
statistics table (:mod:`polars_calib._table.regression`): the PIT binned by the one bin
rule on ``2 (n_levels - 1)`` bins, and per level one masked sum of the weight over the
bins the level covers. They work in ``select``, ``group_by().agg``, ``over`` and the
streaming engine, whose ``group_by().agg`` over a scan holds no rows (the sums are plain
reductions); a group holding a refused row gives null. See ``docs/regression.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import CURVES, Curve, check_choice, check_n_levels
from polars_calib._core.quantiles import QuantileColumns, is_quantile_form
from polars_calib._core.regression import gaussian_problem, unchecked_pit
from polars_calib._metrics.quantiles import quantile_curve_metric
from polars_calib._table.bin_sums import row_mean
from polars_calib._table.regression import (
    curve_scalar,
    curve_spans,
    level_binning,
    level_list,
    level_weights,
)

__all__ = [
    "crps",
    "mean_absolute_calibration_error",
    "miscalibration_area",
    "nll",
    "pit",
    "quantile_calibration_score",
    "root_mean_squared_calibration_error",
    "sharpness",
]


def _named(value: pl.Expr, column: IntoExpr) -> pl.Expr:
    """`value` named after `column` (the target's name, as ``pc.ece`` the probability's)."""
    name = to_expr(column, "target").meta.output_name(raise_if_undetermined=False)
    return value if name is None else value.alias(name)


def pit(target: IntoExpr, *, mean: IntoExpr, std: IntoExpr) -> pl.Expr:
    """Return the probability integral transform of Gaussian predictions, row by row.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).

    Returns
    -------
    Expr
        Float64 ``u = Φ((y - μ) / σ)`` in [0, 1], computed as ``erfc(-z/√2) / 2``
        (relatively accurate in the lower tail); null on a row with a null input or a
        refused value (a NaN or infinite target or mean, ``std`` not a positive finite
        number).

    See Also
    --------
    mean_absolute_calibration_error : The calibration curve of the PIT, as one number.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(u=pc.pit("y", mean="mu", std="sigma").round(6))
    shape: (3, 1)
    ┌──────────┐
    │ u        │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 1.0      │
    │ 0.97725  │
    │ 0.158655 │
    └──────────┘
    """
    problem = gaussian_problem(target, mean, std)
    assert problem.ok is not None  # a Gaussian problem has its one-pass rule
    return _named(pl.when(problem.ok).then(problem.prob), target)


def _curve_metric(
    metric: str,
    target: IntoExpr,
    mean: IntoExpr | None,
    std: IntoExpr | None,
    n_levels: int,
    curve: Curve | None,
    weight: IntoExpr | None,
    quantiles: QuantileColumns | None = None,
    levels: Sequence[float] | None = None,
) -> pl.Expr:
    """A scalar of the calibration curve of the current group (null: refused or empty)."""
    check_n_levels(n_levels)
    # The quantile form (polars_calib._metrics.quantiles): the quantile curve only.
    if is_quantile_form(mean, std, quantiles, levels, n_levels):
        if curve not in (None, "quantile"):
            msg = (
                f"`curve`: the metrics of quantile predictions read the quantile curve, "
                f"got {curve!r}"
            )
            raise ValueError(msg)
        assert quantiles is not None and levels is not None  # is_quantile_form checked them
        return quantile_curve_metric(metric, target, quantiles, levels, weight)
    assert mean is not None and std is not None  # is_quantile_form checked them
    curve = "interval" if curve is None else curve
    check_choice("curve", curve, CURVES)
    problem = gaussian_problem(target, mean, std, weight)
    used = problem.present & ~problem.refused
    # Unused rows need no mask: a null input or weight makes the row's PIT or weight
    # null (in no sum), and a refused row makes the group null.
    # One comparison per edge (Binning.within), not the bin index: each level refers to
    # the PIT once (the streaming engine shares it between levels, not inside one).
    pit, binning = unchecked_pit(target, mean, std), level_binning(n_levels)
    masks = [
        None if last < first else binning.within(pit, first, last)
        for first, last in curve_spans(n_levels, curve)
    ]
    row_weight = pl.lit(1.0) if problem.weight is None else problem.weight
    weights = level_weights(masks, row_weight)
    if curve == "interval":
        center = pl.when(used).then(problem.weighted(problem.terms["center"])).sum()
        weights[0] = weights[0] + center
    total = pl.when(used).then(row_weight).sum()
    value = level_list(weights, total).list.eval(curve_scalar(n_levels, metric)).list.first()
    return _named(pl.when(~problem.invalid & (total > 0.0)).then(value), target)


def mean_absolute_calibration_error(
    target: IntoExpr,
    *,
    mean: IntoExpr | None = None,
    std: IntoExpr | None = None,
    quantiles: QuantileColumns | None = None,
    levels: Sequence[float] | None = None,
    n_levels: int = 100,
    curve: Curve | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Return the mean absolute calibration error of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``): Gaussian predictions.
    quantiles, levels
        Instead of `mean` and `std`: an Array or List column of K predicted quantiles
        (or K columns) and their K levels in (0, 1), strictly increasing; the curve is
        then the quantile curve at the given levels (``docs/regression.md``,
        "Quantile predictions").
    n_levels
        Number of levels ``p_j = j / (n_levels - 1)``, ``j = 0 .. n_levels - 1``
        (uncertainty-toolbox's grid has 100).
    curve
        ``"interval"`` (the Gaussian default, as uncertainty-toolbox): the share of
        targets inside each central ``p``-interval of the prediction; ``"quantile"``
        (the only curve of quantile predictions, their default): the share at or below
        each ``p``-quantile (Kuleshov et al. 2018).
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate: ``mean_j |obs(p_j) - p_j|``; null for a group holding a
        refused row (see :func:`pit`) or with no used row.

    See Also
    --------
    root_mean_squared_calibration_error, miscalibration_area, quantile_calibration_score
    regression_summary : Every metric per group, from one table.

    Notes
    -----
    ``obs(p) = W(u <= p) / W`` (quantile) or ``W((1-p)/2 <= u <= (1+p)/2) / W``
    (interval) for the PIT ``u``, from one binning of ``u`` (``docs/regression.md``).

    References
    ----------
    Kuleshov, Fenner and Ermon, "Accurate uncertainties for deep learning using
    calibrated regression", ICML 2018; uncertainty-toolbox 0.1.1,
    ``mean_absolute_calibration_error``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(mace=pc.mean_absolute_calibration_error("y", mean="mu", std="sigma"))
    shape: (1, 1)
    ┌──────────┐
    │ mace     │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.373333 │
    └──────────┘
    """
    return _curve_metric(
        "mean_absolute_calibration_error",
        target,
        mean,
        std,
        n_levels,
        curve,
        weight,
        quantiles,
        levels,
    )


def root_mean_squared_calibration_error(
    target: IntoExpr,
    *,
    mean: IntoExpr | None = None,
    std: IntoExpr | None = None,
    quantiles: QuantileColumns | None = None,
    levels: Sequence[float] | None = None,
    n_levels: int = 100,
    curve: Curve | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return the root-mean-squared calibration error of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``): Gaussian predictions.
    quantiles, levels
        Instead of `mean` and `std`: an Array or List column of K predicted quantiles
        (or K columns) and their K levels in (0, 1), strictly increasing; the curve is
        then the quantile curve at the given levels (``docs/regression.md``,
        "Quantile predictions").
    n_levels
        Number of levels ``j / (n_levels - 1)``.
    curve
        ``"interval"`` (the Gaussian default) or ``"quantile"``, as
        :func:`mean_absolute_calibration_error`.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate: ``sqrt(mean_j (obs(p_j) - p_j)²)``; null for a group
        holding a refused row or with no used row.

    See Also
    --------
    mean_absolute_calibration_error, miscalibration_area

    References
    ----------
    uncertainty-toolbox 0.1.1, ``root_mean_squared_calibration_error``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(rmsce=pc.root_mean_squared_calibration_error("y", mean="mu", std="sigma"))
    shape: (1, 1)
    ┌──────────┐
    │ rmsce    │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.416576 │
    └──────────┘
    """
    return _curve_metric(
        "root_mean_squared_calibration_error",
        target,
        mean,
        std,
        n_levels,
        curve,
        weight,
        quantiles,
        levels,
    )


def miscalibration_area(
    target: IntoExpr,
    *,
    mean: IntoExpr | None = None,
    std: IntoExpr | None = None,
    quantiles: QuantileColumns | None = None,
    levels: Sequence[float] | None = None,
    n_levels: int = 100,
    curve: Curve | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return the area between the calibration curve of Gaussian predictions and the diagonal.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``): Gaussian predictions.
    quantiles, levels
        Instead of `mean` and `std`: an Array or List column of K predicted quantiles
        (or K columns) and their K levels in (0, 1), strictly increasing; the curve is
        then the quantile curve at the given levels (``docs/regression.md``,
        "Quantile predictions").
    n_levels
        Number of levels ``j / (n_levels - 1)``.
    curve
        ``"interval"`` (the Gaussian default) or ``"quantile"``, as
        :func:`mean_absolute_calibration_error`.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate; null for a group holding a refused row or with no used row.

    See Also
    --------
    mean_absolute_calibration_error, root_mean_squared_calibration_error

    Notes
    -----
    With ``d_j = obs(p_j) - p_j`` and ``Δ = 1 / (n_levels - 1)``, each segment adds
    the trapezoid ``Δ |d_j + d_(j+1)| / 2``, or, where ``d`` changes sign, the two
    triangles ``Δ (d_j² + d_(j+1)²) / (2 (|d_j| + |d_(j+1)|))``.

    References
    ----------
    uncertainty-toolbox 0.1.1, ``miscalibration_area``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(area=pc.miscalibration_area("y", mean="mu", std="sigma"))
    shape: (1, 1)
    ┌──────────┐
    │ area     │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.377104 │
    └──────────┘
    """
    return _curve_metric(
        "miscalibration_area", target, mean, std, n_levels, curve, weight, quantiles, levels
    )


def quantile_calibration_score(
    target: IntoExpr,
    *,
    mean: IntoExpr | None = None,
    std: IntoExpr | None = None,
    quantiles: QuantileColumns | None = None,
    levels: Sequence[float] | None = None,
    n_levels: int = 100,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return Kuleshov's calibration score of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``): Gaussian predictions.
    quantiles, levels
        Instead of `mean` and `std`: an Array or List column of K predicted quantiles
        (or K columns) and their K levels in (0, 1), strictly increasing; the curve is
        then the quantile curve at the given levels (``docs/regression.md``,
        "Quantile predictions").
    n_levels
        Number of levels ``p_j = j / (n_levels - 1)``.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate ``sum_j w_j (p_j - obs(p_j))²`` over the quantile curve with
        ``w_j = 1 / n_levels`` (the square of the quantile curve's RMSCE); null for a
        group holding a refused row or with no used row.

    See Also
    --------
    root_mean_squared_calibration_error

    References
    ----------
    Kuleshov, Fenner and Ermon, ICML 2018, equation (9).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(cal=pc.quantile_calibration_score("y", mean="mu", std="sigma").round(6))
    shape: (1, 1)
    ┌──────────┐
    │ cal      │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.092189 │
    └──────────┘
    """
    used: Curve | None = None if quantiles is not None or levels is not None else "quantile"
    return _curve_metric(
        "quantile_calibration_score",
        target,
        mean,
        std,
        n_levels,
        used,
        weight,
        quantiles,
        levels,
    )


def crps(
    target: IntoExpr, *, mean: IntoExpr, std: IntoExpr, weight: IntoExpr | None = None
) -> pl.Expr:
    """Return the mean continuous ranked probability score of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate: the weighted mean of ``σ [z (2Φ(z) - 1) + 2φ(z) - 1/√π]``,
        ``z = (y - μ) / σ``; null for a group holding a refused row or with no used row.

    See Also
    --------
    nll

    References
    ----------
    Gneiting and Raftery (2007), equation (21); properscoring ``crps_gaussian``,
    scoringrules ``crps_normal``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(crps=pc.crps("y", mean="mu", std="sigma").round(6))
    shape: (1, 1)
    ┌──────────┐
    │ crps     │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.590806 │
    └──────────┘
    """
    return _named(row_mean(gaussian_problem(target, mean, std, weight), "crps"), target)


def nll(
    target: IntoExpr, *, mean: IntoExpr, std: IntoExpr, weight: IntoExpr | None = None
) -> pl.Expr:
    """Return the mean negative log-likelihood of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate: the weighted mean of ``log(2π)/2 + log σ + z²/2``
        (finite for every finite ``z``); null for a group holding a refused row or
        with no used row.

    See Also
    --------
    crps

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(nll=pc.nll("y", mean="mu", std="sigma").round(6))
    shape: (1, 1)
    ┌──────────┐
    │ nll      │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 4.920361 │
    └──────────┘
    """
    return _named(row_mean(gaussian_problem(target, mean, std, weight), "nll"), target)


def sharpness(std: IntoExpr, *, weight: IntoExpr | None = None) -> pl.Expr:
    """Return the sharpness of Gaussian predictions: the root mean square of `std`.

    Parameters
    ----------
    std
        The predicted standard deviation (``std > 0``).
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate ``sqrt(sum w σ² / sum w)``; null for a group holding a
        refused standard deviation or weight, or with no used row.

    References
    ----------
    uncertainty-toolbox 0.1.1, ``sharpness``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"sigma": [0.1, 0.5, 1.0]})
    >>> df.select(sharp=pc.sharpness("sigma").round(6))
    shape: (1, 1)
    ┌──────────┐
    │ sharp    │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.648074 │
    └──────────┘
    """
    # The target and mean are the standard deviation's own zero: only its rule applies.
    zero = pl.lit(0.0, pl.Float64)
    value = row_mean(gaussian_problem(zero, zero, std, weight), "variance").sqrt()
    return _named(value, std)
