"""Variance calibration of Gaussian predictions: ENCE, UCE and QCE, binned over σ.

Each expression bins the used rows of the current group by their standard deviation
(or variance, for UCE) with the package's one bin rule (:func:`~polars_calib._core.binning.edge_masks`
over :func:`~polars_calib._core.binning.range_edges` or
:func:`~polars_calib._core.binning.quantile_edges`), sums the Gaussian problem's terms
``squared_error`` and ``variance`` per bin with one masked sum each, and finishes inside
the group. They work in ``select``, ``group_by().agg``, ``over`` and the streaming
engine; a group holding a refused row gives null. See ``docs/regression.md``,
"Variance calibration: ENCE, UCE, QCE".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import polars as pl

from polars_calib._core.binning import edge_masks, quantile_edges, range_edges
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import Closed, Strategy, check_choice, check_n_bins
from polars_calib._core.regression import gaussian_problem

__all__ = ["ence", "qce", "uce"]

DECILES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""QCE's default levels: the central intervals of 10%, 20%, ..., 90%."""

_SIGMA_STRATEGIES = ("uniform", "quantile")


def _check_bins(
    n_bins: int, strategy: Strategy, value_range: tuple[float, float] | None, closed: Closed
) -> None:
    """``TypeError`` / ``ValueError`` naming the argument, when the expression is built."""
    check_n_bins(n_bins)
    check_choice("strategy", strategy, _SIGMA_STRATEGIES)
    check_choice("closed", closed, ("right", "left"))
    if value_range is None:
        return
    if strategy != "uniform":
        msg = f"`range` gives equal-width bins: use it with strategy='uniform', not {strategy!r}"
        raise ValueError(msg)
    if (
        not isinstance(value_range, tuple | list)
        or len(value_range) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value_range)
    ):
        msg = f"`range` must be a pair of numbers (lo, hi), got {value_range!r}"
        raise TypeError(msg)
    lo, hi = float(value_range[0]), float(value_range[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        msg = f"`range` must be finite numbers lo < hi, got {value_range!r}"
        raise ValueError(msg)


def _check_levels(levels: Sequence[float]) -> list[float]:
    if isinstance(levels, str) or not isinstance(levels, Sequence) or not levels:
        msg = f"`levels` must be a non-empty sequence of floats in (0, 1), got {levels!r}"
        raise TypeError(msg)
    out = []
    for level in levels:
        if isinstance(level, bool) or not isinstance(level, int | float):
            msg = f"`levels` must hold floats in (0, 1), got {level!r}"
            raise TypeError(msg)
        if not 0.0 < float(level) < 1.0:
            msg = f"`levels` must hold floats in (0, 1), got {level!r}"
            raise ValueError(msg)
        out.append(float(level))
    return out


class _Rows:
    """The used rows of a Gaussian problem in the current group, and their bins."""

    def __init__(
        self, target: IntoExpr, mean: IntoExpr, std: IntoExpr, weight: IntoExpr | None
    ) -> None:
        problem = gaussian_problem(target, mean, std, weight)
        self.weight = pl.lit(1.0) if problem.weight is None else problem.weight
        # Rows of weight zero count for nothing, not even for the group's σ range.
        self.counted = problem.present & ~problem.refused & (self.weight > 0.0)
        self.squared_error = problem.terms["squared_error"]
        self.variance = problem.terms["variance"]
        self.sigma = pl.when(self.counted).then(to_expr(std, "std").cast(pl.Float64))
        self.total = self.sum(pl.lit(1.0))
        self.valid = ~problem.invalid & (self.total > 0.0)

    def sum(self, value: pl.Expr, mask: pl.Expr | None = None) -> pl.Expr:
        """Weighted sum of `value` over the counted rows (in `mask`)."""
        kept = self.counted if mask is None else self.counted & mask
        return pl.when(kept).then(self.weight * value).sum()

    def masks(
        self,
        binned: pl.Expr,
        n_bins: int,
        strategy: Strategy,
        value_range: tuple[float, float] | None,
        closed: Closed,
    ) -> list[pl.Expr]:
        """One mask per bin of `binned` (σ or σ²) over the counted rows."""
        if value_range is not None:
            lo, hi = (pl.lit(float(v), pl.Float64) for v in value_range)
            edges = range_edges(lo, hi, n_bins)
        elif strategy == "uniform":
            edges = range_edges(binned.min(), binned.max(), n_bins)
        else:
            edges = quantile_edges(binned, n_bins)
        return edge_masks(binned, edges, closed)


def _named(value: pl.Expr, column: IntoExpr) -> pl.Expr:
    """`value` named after `column` (the target's name, as the other regression metrics)."""
    name = to_expr(column, "target").meta.output_name(raise_if_undetermined=False)
    return value if name is None else value.alias(name)


def ence(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
    closed: Closed = "right",
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return the expected normalized calibration error of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    n_bins
        Number of σ-bins (netcal's default, 10).
    strategy
        ``"uniform"`` (default): equal-width bins between the group's smallest and
        largest σ (netcal's), or over `range`; ``"quantile"``: equal-count bins at
        the group's quantiles of σ.
    range
        ``(lo, hi)``: fixed equal-width bins over ``[lo, hi]`` (the same bins in every
        group and partition); rows whose σ lies outside are in no bin.
    closed
        ``"right"`` (default): ``[e_0, e_1], (e_1, e_2], ...``; ``"left"``:
        ``[e_0, e_1), ..., [e_(B-1), e_B]``, netcal's closure.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate ``mean_b |RMV_b - RMSE_b| / RMV_b`` over the non-empty bins;
        null for a group holding a refused row or with no used row.

    See Also
    --------
    uce, qce

    Notes
    -----
    ``RMV_b = sqrt(sum_b w σ² / W_b)``, ``RMSE_b = sqrt(sum_b w (y - μ)² / W_b)``. Bin
    edges are ``np.linspace(lo, hi, n_bins + 1)`` as numpy computes them: with
    ``closed="left"`` the numbers are netcal's. ENCE grows with the number of bins on
    calibrated predictions (Pernot 2023): see ``docs/regression.md``.

    References
    ----------
    Levi, Gispan, Giladi and Fetaya, "Evaluating and calibrating uncertainty
    prediction in regression tasks", Sensors 22 (2022); netcal 1.4, ``ENCE``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(ence=pc.ence("y", mean="mu", std="sigma", n_bins=5))
    shape: (1, 1)
    ┌──────────┐
    │ ence     │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 1.666667 │
    └──────────┘
    """
    _check_bins(n_bins, strategy, range, closed)
    rows = _Rows(target, mean, std, weight)
    terms, filled = [], []
    for mask in rows.masks(rows.sigma, n_bins, strategy, range, closed):
        bin_weight = rows.sum(pl.lit(1.0), mask)
        rmv = (rows.sum(rows.variance, mask) / bin_weight).sqrt()
        rmse = (rows.sum(rows.squared_error, mask) / bin_weight).sqrt()
        terms.append(pl.when(bin_weight > 0.0).then((rmv - rmse).abs() / rmv))
        filled.append((bin_weight > 0.0).cast(pl.Float64))
    n_filled = pl.sum_horizontal(filled)
    value = pl.when(n_filled > 0.0).then(pl.sum_horizontal(terms) / n_filled)
    return _named(pl.when(rows.valid).then(value), target)


def uce(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
    closed: Closed = "right",
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return the uncertainty calibration error of Gaussian predictions, binned over σ².

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    n_bins
        Number of σ²-bins (netcal's default, 10).
    strategy
        ``"uniform"`` (default): equal-width bins between the group's smallest and
        largest σ² (netcal's), or over `range`; ``"quantile"``: equal-count bins.
    range
        ``(lo, hi)``: fixed equal-width bins of σ² over ``[lo, hi]``; rows outside are
        in no bin but count in ``W`` (as netcal: they add no error).
    closed
        ``"right"`` (default) or ``"left"`` (netcal's closure), as :func:`ence`.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate ``sum_b W_b / W |MSE_b - MV_b|``; null for a group holding
        a refused row or with no used row.

    See Also
    --------
    ence, qce

    Notes
    -----
    ``MSE_b`` and ``MV_b`` are the bin's weighted means of ``(y - μ)²`` and ``σ²``;
    ``W`` is the weight of every used row of the group.

    References
    ----------
    Laves, Ihler, Fast, Kahrs and Ortmaier, "Well-calibrated regression uncertainty in
    medical imaging with deep learning", MIDL 2020; netcal 1.4, ``UCE``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(uce=pc.uce("y", mean="mu", std="sigma", n_bins=5))
    shape: (1, 1)
    ┌──────┐
    │ uce  │
    │ ---  │
    │ f64  │
    ╞══════╡
    │ 0.33 │
    └──────┘
    """
    _check_bins(n_bins, strategy, range, closed)
    rows = _Rows(target, mean, std, weight)
    variance = pl.when(rows.counted).then(rows.variance)
    gaps = [
        (rows.sum(rows.squared_error, mask) - rows.sum(rows.variance, mask)).abs()
        for mask in rows.masks(variance, n_bins, strategy, range, closed)
    ]
    value = pl.sum_horizontal(gaps) / rows.total
    return _named(pl.when(rows.valid).then(value), target)


def qce(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    levels: Sequence[float] = DECILES,
    n_bins: int = 10,
    marginal: bool = True,
    strategy: Strategy = "uniform",
    range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
    closed: Closed = "right",
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return netcal's quantile calibration error of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    levels
        Nominal coverages τ in (0, 1) of the central intervals (default 0.1 ... 0.9).
    n_bins
        Number of σ-bins of the conditional form (netcal's default, 10).
    marginal
        ``True`` (default, as netcal's code): ``mean_τ |c_τ - τ|`` over all rows;
        ``False``: ``mean_τ sum_b W_b / W |c_(b,τ) - τ|`` over σ-bins.
    strategy, range, closed
        The σ-bins of the conditional form, as :func:`ence`.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate; null for a group holding a refused row or with no used row
        (conditional: no row in `range`).

    See Also
    --------
    ence, uce
    mean_absolute_calibration_error : The calibration curve's counterpart (other levels).

    Notes
    -----
    ``c_τ`` is the weighted share of rows inside the central τ-interval, as netcal
    tests it: ``(y - μ)² / σ² <= χ²₁(τ) = Φ⁻¹((1 + τ)/2)²``.

    References
    ----------
    Küppers, Schneider and Haselhoff, "Parametric and multivariate uncertainty
    calibration for regression and object detection", ECCV workshops 2022;
    netcal 1.4, ``QCE``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(qce=pc.qce("y", mean="mu", std="sigma").round(6))
    shape: (1, 1)
    ┌──────────┐
    │ qce      │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.388889 │
    └──────────┘
    """
    taus = _check_levels(levels)
    _check_bins(n_bins, strategy, range, closed)
    if not isinstance(marginal, bool):
        msg = f"`marginal` must be a bool, got {type(marginal).__name__}"
        raise TypeError(msg)
    rows = _Rows(target, mean, std, weight)
    normalized = rows.squared_error / rows.variance
    bounds = [NormalDist().inv_cdf(0.5 + tau / 2.0) ** 2 for tau in taus]
    masks = [None] if marginal else rows.masks(rows.sigma, n_bins, strategy, range, closed)
    bin_weights = [rows.sum(pl.lit(1.0), mask) for mask in masks]
    inside = pl.sum_horizontal(bin_weights)
    per_level = []
    for tau, bound in zip(taus, bounds):
        covered = (normalized <= bound).cast(pl.Float64)
        gaps = [
            (rows.sum(covered, mask) - tau * bin_weight).abs()
            for mask, bin_weight in zip(masks, bin_weights)
        ]
        per_level.append(pl.sum_horizontal(gaps) / inside)
    value = pl.when(inside > 0.0).then(pl.sum_horizontal(per_level) / len(taus))
    return _named(pl.when(rows.valid).then(value), target)
