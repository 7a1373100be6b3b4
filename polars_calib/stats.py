"""Per-bin sufficient statistics and the finishers that turn them into metrics.

Every binned metric is a function of three numbers per bin: its total weight
``W_b`` (the row count when unweighted), and the weighted sums of predictions
``P_b`` and of outcomes ``Y_b``. The finishers below take those as per-bin
series and are shared by the expression forms (which build the series inside the
current group with a window over the bin index) and the frame forms (which read
them from a statistics table), so each metric has exactly one definition.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from polars_calib._exprs import IntoExpr, to_expr
from polars_calib.binning import Binning

NORMS = ("l1", "l2", "max")

# float64 machine epsilon: log-loss clips probabilities to [EPS, 1 - EPS], as scikit-learn does.
EPS = 2.220446049250313e-16


@dataclass(frozen=True)
class Outcomes:
    """Predictions and 0/1 outcomes ready for binning.

    ``prob``, ``label`` and ``weight`` are Float64 and null on every row that is not
    used (a null probability, label or weight). ``invalid`` is a boolean scalar: true
    when the group holds a value that makes every metric meaningless (a probability
    outside [0, 1] or NaN, a label other than 0/1, a negative or NaN weight).
    """

    prob: pl.Expr
    label: pl.Expr
    weight: pl.Expr | None
    invalid: pl.Expr

    def weighted(self, value: pl.Expr) -> pl.Expr:
        """`value` times the row weight (unchanged when unweighted)."""
        return value if self.weight is None else value * self.weight

    def total_weight(self) -> pl.Expr:
        """Sum of the weights of the rows used (their count when unweighted)."""
        if self.weight is None:
            return self.prob.count().cast(pl.Float64)
        return self.weight.sum()


def binary_outcomes(prob: IntoExpr, label: IntoExpr, weight: IntoExpr | None) -> Outcomes:
    """Validate and mask a binary problem: probabilities of the positive class and 0/1 labels."""
    p = to_expr(prob, "prob").cast(pl.Float64)
    y = to_expr(label, "label").cast(pl.Float64)
    used = p.is_not_null() & y.is_not_null()
    invalid = (~p.is_between(0.0, 1.0)).any() | (~((y == 0.0) | (y == 1.0))).any()
    w = None
    if weight is not None:
        w = to_expr(weight, "weight").cast(pl.Float64)
        used = used & w.is_not_null()
        invalid = invalid | (~((w >= 0.0) & w.is_finite())).any()
        w = pl.when(used).then(w)
    return Outcomes(pl.when(used).then(p), pl.when(used).then(y), w, invalid)


def per_bin(value: pl.Expr, bins: pl.Expr, binning: Binning) -> pl.Expr:
    """Sum of `value` in each bin of the current group, one row per bin.

    Uniform bins use a window over the bin index, a hash aggregation whose cost
    does not grow with the number of bins; it runs in every context (select, over,
    group_by, dynamic and rolling windows) and in the streaming engine. Quantile
    bins depend on the group's quantiles, and Polars only accepts elementwise
    window keys inside aggregations, so they sum one filtered bin at a time.
    """
    if binning.strategy == "uniform":
        return value.sum().over(bins).filter(bins.is_first_distinct() & bins.is_not_null())
    return pl.concat_list([value.filter(bins == k).sum() for k in range(binning.n_bins)]).explode()


def calibration_error(
    gap_sum: pl.Expr, bin_weight: pl.Expr, total_weight: pl.Expr, norm: str
) -> pl.Expr:
    """Finish ECE (``l1``), RMSCE (``l2``) or MCE (``max``) from per-bin series.

    ``gap_sum`` is ``Y_b - P_b`` (or its negation: the norms ignore the sign) and ``bin_weight`` is ``W_b`` for each bin;
    ``total_weight`` is ``sum_b W_b``. Bins with zero weight contribute nothing;
    the result is null when the total weight is zero.
    """
    has_weight = bin_weight > 0.0
    if norm == "l1":
        value = gap_sum.abs().sum() / total_weight
    elif norm == "l2":
        value = ((gap_sum * gap_sum / bin_weight).filter(has_weight).sum() / total_weight).sqrt()
    else:
        value = (gap_sum / bin_weight).abs().filter(has_weight).max()
    return pl.when(total_weight > 0.0).then(value)


def binned_error(outcomes: Outcomes, binning: Binning, norm: str) -> pl.Expr:
    """Binned calibration error of validated outcomes; null for an invalid group."""
    bins = binning.index(outcomes.prob)
    # Every norm ignores the sign of the gap; predicted-minus-observed keeps the
    # probability as the expression's root, so the output is named after it.
    gap_sum = per_bin(outcomes.weighted(outcomes.prob - outcomes.label), bins, binning)
    if outcomes.weight is None:
        bin_weight = per_bin(outcomes.prob.is_not_null().cast(pl.Float64), bins, binning)
    else:
        bin_weight = per_bin(outcomes.weight, bins, binning)
    error = calibration_error(gap_sum, bin_weight, outcomes.total_weight(), norm)
    return pl.when(~outcomes.invalid).then(error)


def squared_error(prob: pl.Expr, label: pl.Expr) -> pl.Expr:
    """Per-row Brier term ``(p - y)^2``."""
    return (prob - label) ** 2


def log_loss_term(prob: pl.Expr, label: pl.Expr) -> pl.Expr:
    """Per-row log-loss ``-(y log p + (1 - y) log(1 - p))`` with p clipped to [EPS, 1 - EPS]."""
    p = prob.clip(EPS, 1.0 - EPS)
    return -(p.log() * label + (1.0 - p).log() * (1.0 - label))


def weighted_mean(outcomes: Outcomes, term: pl.Expr) -> pl.Expr:
    """Weighted mean of a per-row term over the rows used; null for an invalid or empty group."""
    total = outcomes.total_weight()
    mean = outcomes.weighted(term).sum() / total
    return pl.when(~outcomes.invalid & (total > 0.0)).then(mean)
