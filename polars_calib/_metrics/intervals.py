"""Measures of central prediction intervals as Polars expressions.

Each function takes the target (first, by position; none for the width) and the
interval by keyword (``lower=``, ``upper=``), and returns an aggregating ``pl.Expr``:
one Float64 value per group in ``select``, ``group_by().agg``, ``over``, in the
in-memory and the streaming engine.

Data policy (the one rule of :func:`polars_calib._core.prediction_intervals.interval_problem`):

* a row whose target, bound or weight is null is ignored;
* a group holding a NaN or infinite target, a NaN bound, a lower bound of ``+inf`` or
  an upper bound of ``-inf``, a lower bound above its upper bound (never swapped), or
  a negative, NaN, infinite or subnormal weight gives **null**, as does a group whose
  weights sum to 1e300 or more;
* a one-sided interval (``lower = -inf`` or ``upper = +inf``) is used: its width and
  interval score are ``+inf``;
* a group with no usable row (or zero total weight) gives null.

The formulas, sources and the peers' differences are in ``docs/prediction-intervals.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import TOP_LABEL_AVERAGES, TopLabelAverage, check_choice
from polars_calib._core.prediction_intervals import (
    check_level,
    interval_problem,
    nested_intervals_problem,
)
from polars_calib._core.problem import Problem

__all__ = [
    "coverage_gap",
    "interval_coverage",
    "interval_score",
    "interval_width",
    "weighted_interval_score",
]


def _mean(problem: Problem, value: pl.Expr, name: str) -> pl.Expr:
    """Weighted mean of `value` (null off the used rows) over the current group.

    Null for a group holding a refused row or with no used row (zero total weight).
    A zero weight drops its row's value (``0 * inf`` would be NaN).
    """
    if problem.weight is None:
        total, weighted_sum = problem.present.sum().cast(pl.Float64), value.sum()
    else:
        w = problem.weight
        total = pl.when(problem.present).then(w).sum()
        weighted_sum = pl.when(w > 0.0).then(value * w).sum()
    return pl.when(~problem.invalid & (total > 0.0)).then(weighted_sum / total).alias(name)


def _target_name(target: IntoExpr) -> str:
    return to_expr(target, "target").meta.output_name(raise_if_undetermined=False) or "target"


def interval_coverage(
    target: IntoExpr,
    *,
    lower: IntoExpr,
    upper: IntoExpr,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Compute the share of targets inside their prediction interval (the coverage).

    Parameters
    ----------
    target
        The observed values.
    lower, upper
        The interval's bounds (``lower <= upper``; ``-inf`` / ``+inf`` for a one-sided
        interval).
    weight
        Optional non-negative row weights.

    Returns
    -------
    Expr
        Float64 in [0, 1], one value per group; null for an empty or invalid group.

    Notes
    -----
    :math:`\sum_i w_i 1\{l_i \le y_i \le u_i\} / \sum_i w_i`, bounds inclusive: MAPIE
    1.6's ``regression_coverage_score`` and netcal's PICP (the prediction interval
    coverage probability) for given bounds. Compare it with the intervals' nominal
    level; :func:`coverage_gap` does so per group.

    See Also
    --------
    interval_width, interval_score, coverage_gap

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "y": [0.0, 1.0, 2.0, 3.0],
    ...     "lo": [0.0, 0.0, 1.0, 4.0],
    ...     "hi": [1.0, 2.0, 2.0, 5.0],
    ... })
    >>> df.select(coverage=pc.interval_coverage("y", lower="lo", upper="hi"))
    shape: (1, 1)
    ┌──────────┐
    │ coverage │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.75     │
    └──────────┘
    """
    problem = interval_problem(target, lower, upper, weight)
    return _mean(problem, problem.terms["covered"], _target_name(target))


def interval_width(
    *,
    lower: IntoExpr,
    upper: IntoExpr,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Compute the mean width of prediction intervals (their sharpness).

    No target is read: the width of a model's intervals can be monitored before the
    outcomes arrive.

    Parameters
    ----------
    lower, upper
        The interval's bounds (``lower <= upper``; ``-inf`` / ``+inf`` for a one-sided
        interval, whose width is ``+inf``).
    weight
        Optional non-negative row weights.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Notes
    -----
    :math:`\sum_i w_i (u_i - l_i) / \sum_i w_i`: netcal's MPIW (mean prediction
    interval width) and MAPIE 1.6's ``regression_mean_width_score``, except that MAPIE
    takes :math:`|u_i - l_i|`, so a reversed interval counts as a positive width; here
    a group holding one is null.

    See Also
    --------
    interval_coverage, interval_score

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"lo": [0.0, 0.0, 1.0, 4.0], "hi": [1.0, 2.0, 2.0, 5.0]})
    >>> df.select(width=pc.interval_width(lower="lo", upper="hi"))
    shape: (1, 1)
    ┌───────┐
    │ width │
    │ ---   │
    │ f64   │
    ╞═══════╡
    │ 1.25  │
    └───────┘
    """
    problem = interval_problem(None, lower, upper, weight)
    return _mean(problem, problem.terms["width"], "width")


def _score_row(problem: Problem, alpha: float) -> pl.Expr:
    """The per-row interval score ``width + (2 / alpha)(below + above)``."""
    terms = problem.terms
    scale = 2.0 / alpha
    return terms["width"] + scale * terms["below"] + scale * terms["above"]


def interval_score(
    target: IntoExpr,
    *,
    lower: IntoExpr,
    upper: IntoExpr,
    level: float,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Compute the mean interval (Winkler) score of central prediction intervals.

    Parameters
    ----------
    target
        The observed values.
    lower, upper
        The central interval's bounds (``lower <= upper``).
    level
        The intervals' nominal coverage, in (0, 1): ``0.9`` for the 5% and 95%
        quantiles.
    weight
        Optional non-negative row weights.

    Returns
    -------
    Expr
        Float64, one value per group (lower is better); null for an empty or invalid
        group.

    Notes
    -----
    With :math:`\alpha = 1 - \text{level}`, the mean of

    .. math::

        (u - l) + \frac{2}{\alpha}(l - y)\,1\{y < l\} + \frac{2}{\alpha}(y - u)\,1\{y > u\},

    a proper score for the central :math:`(1 - \alpha)` interval (Winkler 1972;
    Gneiting and Raftery 2007, section 6.2): scoringrules 0.10's ``interval_score`` and
    MAPIE 1.6's ``regression_mwi_score``, except that MAPIE swaps reversed bounds
    (``min``/``max``) and scores the row; here its group is null.

    See Also
    --------
    interval_coverage, interval_width, weighted_interval_score

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "y": [0.0, 1.0, 2.0, 3.0],
    ...     "lo": [0.0, 0.0, 1.0, 4.0],
    ...     "hi": [1.0, 2.0, 2.0, 5.0],
    ... })
    >>> df.select(score=pc.interval_score("y", lower="lo", upper="hi", level=0.5))
    shape: (1, 1)
    ┌───────┐
    │ score │
    │ ---   │
    │ f64   │
    ╞═══════╡
    │ 2.25  │
    └───────┘
    """
    alpha = 1.0 - check_level(level)
    problem = interval_problem(target, lower, upper, weight)
    return _mean(problem, _score_row(problem, alpha), _target_name(target))


def coverage_gap(
    target: IntoExpr,
    *,
    lower: IntoExpr,
    upper: IntoExpr,
    level: float,
    groups: IntoExpr,
    average: TopLabelAverage | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Compute the mean gap between each group's coverage and the nominal level.

    Parameters
    ----------
    target
        The observed values.
    lower, upper
        The interval's bounds (``lower <= upper``).
    level
        The intervals' nominal coverage, in (0, 1).
    groups
        The groups whose coverage is compared with `level` (a column or an expression;
        ``pl.struct(...)`` for several). A row with a null group is ignored.
    average
        ``"macro"`` (the default, None): the unweighted mean over the non-empty groups;
        ``"weighted"``: each group weighted by its share of the rows (of the weight),
        MAPIE's ``weighted=True``.
    weight
        Optional non-negative row weights (each group's coverage and size are weighted).

    Returns
    -------
    Expr
        Float64 in [0, 1], one value per aggregation group; null for an empty or invalid
        one (any refused row, in any of its `groups`).

    Notes
    -----
    With :math:`c_g` the coverage of group :math:`g` (:func:`interval_coverage`) and
    :math:`W_g` its total weight (row count), the ``"macro"`` gap is
    :math:`\frac{1}{G}\sum_g |c_g - \text{level}|` over the :math:`G` groups with
    :math:`W_g > 0`, and the ``"weighted"`` one :math:`\sum_g (W_g / W)\,|c_g -
    \text{level}|`: MAPIE 1.6's ``coverage_gap`` (``covmetrics.CovGap``; MAPIE's groups
    must be integers, here any values). The per-group sums are windows
    (``.over(groups)``) inside the aggregation, so the expression also runs per
    ``group_by`` group: each of its `groups` is then a subgroup.

    See Also
    --------
    interval_coverage

    Examples
    --------
    MAPIE's example:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "y": [0.0, 1.0, 2.0, 3.0],
    ...     "g": [0, 0, 1, 1],
    ...     "lo": [0.0, 0.0, 1.0, 4.0],
    ...     "hi": [1.0, 2.0, 2.0, 5.0],
    ... })
    >>> df.select(gap=pc.coverage_gap("y", lower="lo", upper="hi", level=0.75, groups="g"))
    shape: (1, 1)
    ┌──────┐
    │ gap  │
    │ ---  │
    │ f64  │
    ╞══════╡
    │ 0.25 │
    └──────┘
    """
    level = check_level(level)
    chosen = cast(TopLabelAverage, check_choice("average", average or "macro", TOP_LABEL_AVERAGES))
    problem = interval_problem(target, lower, upper, weight)
    key = to_expr(groups, "groups")
    used = problem.present & key.is_not_null()
    size = pl.when(used).then(1.0 if problem.weight is None else problem.weight)
    # Per group, on every row: its total weight and its coverage (`.over` the groups).
    group_size = size.sum().over(key)
    group_coverage = (problem.terms["covered"] * size).sum().over(key) / group_size
    # One row stands for each non-empty group: the first used row of its key.
    first = pl.when(used).then(key).is_first_distinct() & used & (group_size > 0.0)
    gaps = (group_coverage - level).abs().filter(first)
    if chosen == "macro":
        value = gaps.mean()
    else:
        sizes = group_size.filter(first)
        value = (gaps * sizes).sum() / sizes.sum()
    return pl.when(~problem.invalid & (gaps.len() > 0)).then(value).alias(_target_name(target))


def weighted_interval_score(
    target: IntoExpr,
    *,
    median: IntoExpr,
    lower: Sequence[IntoExpr],
    upper: Sequence[IntoExpr],
    levels: Sequence[float],
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Compute the mean weighted interval score of central intervals and a median.

    Parameters
    ----------
    target
        The observed values.
    median
        The predicted median.
    lower, upper
        One column (or expression) per central interval: ``lower[k]`` and
        ``upper[k]`` bound the interval of nominal coverage ``levels[k]``.
    levels
        The intervals' nominal coverages, each in (0, 1).
    weight
        Optional non-negative row weights.

    Returns
    -------
    Expr
        Float64, one value per group (lower is better); null for an empty or invalid
        group (a reversed interval, a NaN or infinite median, ...).

    Notes
    -----
    With :math:`\alpha_k = 1 - \text{levels}[k]` and :math:`\mathrm{IS}_{\alpha}` the
    interval score (:func:`interval_score`), the mean over rows of

    .. math::

        \mathrm{WIS} = \frac{1}{K + 1/2}\Big(\tfrac{1}{2}|y - m|
            + \sum_{k=1}^K \tfrac{\alpha_k}{2}\,\mathrm{IS}_{\alpha_k}\Big)

    (Bracher, Ray, Gneiting and Reich 2021; with these weights it is twice the
    mean pinball loss over the :math:`2K + 1` quantiles, and approximates the CRPS).
    scoringrules 0.10's ``weighted_interval_score`` agrees on its numba backend; its
    numpy backend adds :math:`\tfrac{1}{2}m` instead of :math:`\tfrac{1}{2}|y - m|`
    (a bug), and its docstring gives the weights as :math:`2/\alpha_k` where the code
    uses :math:`\alpha_k / 2`.

    See Also
    --------
    interval_score

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "y": [0.0, 1.0, 3.0],
    ...     "median": [0.5, 1.0, 1.5],
    ...     "lo50": [0.0, 0.5, 1.0],
    ...     "hi50": [1.0, 1.5, 2.0],
    ...     "lo90": [-1.0, 0.0, 0.0],
    ...     "hi90": [2.0, 2.0, 2.5],
    ... })
    >>> df.select(
    ...     wis=pc.weighted_interval_score(
    ...         "y",
    ...         median="median",
    ...         lower=["lo50", "lo90"],
    ...         upper=["hi50", "hi90"],
    ...         levels=[0.5, 0.9],
    ...     ).round(4)
    ... )
    shape: (1, 1)
    ┌────────┐
    │ wis    │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.4833 │
    └────────┘
    """
    if isinstance(levels, (str, int, float)):
        msg = f"`levels` must be a sequence of floats in (0, 1), got {levels!r}"
        raise TypeError(msg)
    alphas = [1.0 - check_level(level, "levels") for level in levels]
    problem = nested_intervals_problem(target, median, lower, upper, weight)
    if len(alphas) != len(lower):
        msg = f"`levels` must hold one level per interval: got {len(alphas)} for {len(lower)}"
        raise ValueError(msg)
    terms = problem.terms
    total: pl.Expr | None = None
    for k, alpha in enumerate(alphas):
        scale = 2.0 / alpha
        score = terms[f"width_{k}"] + scale * terms[f"below_{k}"] + scale * terms[f"above_{k}"]
        total = alpha / 2.0 * score if total is None else total + alpha / 2.0 * score
    assert total is not None
    row = (total + 0.5 * terms["absolute_error"]) / (len(alphas) + 0.5)
    return _mean(problem, row, _target_name(target))
