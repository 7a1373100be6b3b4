"""Quantile predictions (K quantiles at given levels) as aggregating expressions.

:func:`pinball_loss` and :func:`quantile_curve_metric` (the quantile form of
``pc.mean_absolute_calibration_error`` and its siblings) run, inside one group, the
finishers the frame functions run on a quantile table
(:mod:`polars_calib._table.quantiles`): each row's bin ``b = #{k : q_k < y}`` by the one
bin rule, and per level one masked sum of the weight over the bins below it. They work
in ``select``, ``group_by().agg``, ``over`` and the streaming engine, whose
``group_by().agg`` over a scan holds no rows; a group holding a refused row
(:mod:`polars_calib._core.quantiles`) gives null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.quantiles import (
    QuantileColumns,
    check_levels,
    pinball_term,
    quantile_problem,
    unchecked_bin,
)
from polars_calib._table.bin_sums import row_mean
from polars_calib._table.quantiles import quantile_levels, quantile_scalar
from polars_calib._table.regression import level_list

__all__ = ["pinball_loss", "quantile_curve_metric"]


def _named(value: pl.Expr, column: IntoExpr) -> pl.Expr:
    """`value` named after `column` (the target's name, as the Gaussian expressions)."""
    name = to_expr(column, "target").meta.output_name(raise_if_undetermined=False)
    return value if name is None else value.alias(name)


def quantile_curve_metric(
    metric: str,
    target: IntoExpr,
    quantiles: QuantileColumns,
    levels: Sequence[float],
    weight: IntoExpr | None,
) -> pl.Expr:
    """A scalar of the quantile curve of the current group (null: refused or empty)."""
    found = check_levels(levels)
    problem = quantile_problem(target, quantiles, found, weight)
    used = problem.present & ~problem.refused
    # W(b < k) per level, from the row's bin b (the one bin rule's index of `prob`).
    # Unused rows need no mask: a null input or weight keeps the row out of the sums,
    # and a refused row makes the group null.
    bins = unchecked_bin(target, quantiles, len(found))
    row_weight = pl.lit(1.0) if problem.weight is None else problem.weight
    weights = quantile_levels(bins, row_weight, len(found))
    total = pl.when(used).then(row_weight).sum()
    value = level_list(weights, total).list.eval(quantile_scalar(found, metric)).list.first()
    return _named(pl.when(~problem.invalid & (total > 0.0)).then(value), target)


def pinball_loss(
    target: IntoExpr,
    *,
    quantiles: QuantileColumns,
    levels: Sequence[float],
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return the mean pinball loss of quantile predictions, over rows and levels.

    Parameters
    ----------
    target
        The observed values.
    quantiles
        An ``Array`` or ``List`` column (or expression) of K predicted quantiles per
        row, or a list of K columns, non-decreasing (a crossing row is refused).
    levels
        The K levels of the quantiles, in (0, 1), strictly increasing.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate: the weighted mean over rows of the mean over levels of
        ``(1{y < q_k} - τ_k)(q_k - y)``; null for a group holding a refused row (a NaN
        or infinite target or quantile, a list of another length than K, a null
        inside the list, crossing quantiles, a bad weight) or with no used row.

    See Also
    --------
    mean_absolute_calibration_error : The quantile curve of the same predictions.
    quantile_reliability : The loss per level (its ``pinball`` column).

    Notes
    -----
    One level's loss is the mean over rows at that level: give one quantile and one
    level (``quantiles=["q50"], levels=[0.5]``). A tie ``y == q_k`` adds 0 whichever
    side it counts on. scoringrules 0.10's ``quantile_score`` is the per-row term;
    uncertainty-toolbox 0.1.1's ``check_score`` is this mean over the levels
    ``np.linspace(0.01, 0.99, 99)`` of a Gaussian's quantiles.

    References
    ----------
    Koenker and Bassett (1978); Gneiting and Raftery (2007), section 9.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.0, 2.5, 0.0], "q": [[0.0, 1.0, 2.0]] * 3})
    >>> df.select(loss=pc.pinball_loss("y", quantiles="q", levels=[0.1, 0.5, 0.9]))
    shape: (1, 1)
    ┌──────────┐
    │ loss     │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.261111 │
    └──────────┘
    """
    found = check_levels(levels)
    problem = quantile_problem(target, quantiles, found, weight)
    # The pinball terms only: the problem also sums tie terms for the interval curve.
    pinball = [problem.terms[pinball_term(level)] for level in found]
    mean = pl.sum_horizontal(pinball) / len(found)
    value = row_mean(replace(problem, terms={"pinball": mean}), "pinball")
    return _named(value, target)
