r"""Calibration tests on cumulative differences: Kolmogorov–Smirnov and Kuiper.

Sorted by probability, the cumulative differences between outcomes and
probabilities, divided by the group's total weight,

.. math:: S_i = \frac{1}{W} \sum_{j \le i} w_j (y_j - p_j), \qquad S_0 = 0,

drift away from 0 where the model is miscalibrated (Gupta et al., 2021;
Arrieta-Ibarra et al., 2022). The **KS** statistic is :math:`\max_i |S_i|`, the
**Kuiper** statistic the range :math:`\max_i S_i - \min_i S_i` (both over
:math:`i \ge 0`, so ``S_0 = 0`` counts), both in probability units like the ECE.

They are **tie-invariant**: rows with the same probability have no order, so
:math:`S` is only read at the last row of each run of tied probabilities (the
value after the whole tie; rounded probabilities are common). Shuffling rows inside
a tie changes nothing beyond rounding.

Their p-values read the statistic divided by the standard deviation of
:math:`S_N` under the null hypothesis that :math:`y_j \sim \mathrm{Bernoulli}(p_j)`,

.. math:: \sigma = \frac{\sqrt{\sum_j w_j\, p_j (1 - p_j)}}{W},

against the asymptotic laws of the maximum of :math:`|B|` and of the range of a
standard Brownian motion on ``[0, 1]`` (:mod:`polars_calib._core.special`), as MAPIE does
(Tygert, 2022). Weights are frequency weights: a row of weight 2 counts as two
identical rows, in :math:`S` and in :math:`\sigma`.

These statistics need a group's rows in order: they are **not mergeable** (no sum
over partitions gives them), so they are aggregating expressions only (one sort
per group), not columns of the statistics table or of ``summary``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from polars_calib._core.exprs import IntoExpr
from polars_calib._core.problem import Problem, binary_problem
from polars_calib._core.special import brownian_max_abs_sf, brownian_range_sf

__all__ = [
    "ks_calibration",
    "ks_calibration_p",
    "kuiper_calibration",
    "kuiper_calibration_p",
]


def _path_summary(
    problem: Problem, summary: Callable[[pl.Expr], pl.Expr]
) -> tuple[pl.Expr, pl.Expr]:
    """`summary` of the path ``W * S`` (read at the end of each tie) divided by ``W``, and ``W``.

    The rows are sorted once, as a struct of probability and weighted gap, and
    imploded: inside ``list.eval`` the sorted rows are materialised, so a `summary`
    that reads the path twice does not sort twice (aggregations share no common
    subexpression). Unused rows (a null input) get a null probability, sort last and
    are dropped.
    """
    prob = pl.when(problem.present).then(problem.prob)
    # p - y, the negated path: KS and the range are the same, and the probability stays
    # the expression's root, so the output is named after it (as every metric's).
    gap = problem.weighted(prob - problem.label)
    if problem.weight is None:
        total = prob.count().cast(pl.Float64)
    else:
        total = pl.when(prob.is_not_null()).then(problem.weight).sum()
    # The struct is named after its first field, the probability: so is the output.
    rows = pl.struct(prob, gap.alias("__polars_calib_gap__")).sort_by(prob, nulls_last=True)
    ordered = pl.element().struct[0]
    # The last row of a tie: the next probability differs (or is null, or absent).
    tie_end = (ordered != ordered.shift(-1)).fill_null(True) & ordered.is_not_null()
    path = pl.element().struct[1].cum_sum().filter(tie_end)
    value = rows.implode().list.eval(summary(path)).list.first()
    return value / total, total


def _null_sd(problem: Problem, total: pl.Expr) -> pl.Expr:
    """``sqrt(sum_j w_j p_j (1 - p_j)) / W`` over the used rows."""
    prob = pl.when(problem.present).then(problem.prob)
    return problem.weighted(prob * (1.0 - prob)).sum().sqrt() / total


def _ks(problem: Problem) -> tuple[pl.Expr, pl.Expr]:
    return _path_summary(problem, lambda path: path.abs().max())


def _kuiper(problem: Problem) -> tuple[pl.Expr, pl.Expr]:
    # S_0 = 0 belongs to the path: the range spans 0.
    return _path_summary(
        problem, lambda path: path.max().clip(lower_bound=0.0) - path.min().clip(upper_bound=0.0)
    )


def _statistic(problem: Problem, value: pl.Expr, total: pl.Expr) -> pl.Expr:
    return pl.when(~problem.invalid & (total > 0.0)).then(value)


def _p_value(problem: Problem, value: pl.Expr, total: pl.Expr, tail: Any) -> pl.Expr:
    sd = _null_sd(problem, total)
    used = pl.when(problem.present).then(problem.prob).count()
    ok = ~problem.invalid & (total > 0.0) & (used >= 2) & (sd > 0.0)
    # The tail reads its argument some thirty times, and aggregations share no common
    # subexpression: evaluated on the imploded scalar, the sort runs once, not thirty times.
    x = (value / sd).implode().list.eval(tail(pl.element())).list.first()
    return pl.when(ok).then(x)


def ks_calibration(
    prob: IntoExpr, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> pl.Expr:
    r"""Kolmogorov–Smirnov calibration error: the largest cumulative difference.

    Parameters
    ----------
    prob
        Probability of the positive class, in [0, 1].
    label
        Outcome: bool, or integers/floats equal to 0 or 1.
    weight
        Optional non-negative frequency weights (a weight of 2 counts the row twice).
    pos_label
        The label of the positive class when labels are not 0/1.

    Returns
    -------
    Expr
        Float64, one value per group, in [0, 1]; null for an empty or invalid group
        (or zero total weight).

    Notes
    -----
    With the rows sorted by probability and :math:`S_i` the weighted cumulative
    sum of :math:`y_j - p_j` up to row :math:`i` divided by the total weight
    :math:`W`, read only at the last row of each run of tied probabilities,

    .. math:: \mathrm{KS} = \max_{i \ge 0} |S_i|, \qquad S_0 = 0.

    Tie-invariant: the order of rows with equal probabilities does not matter.
    Not mergeable: one sort per group (see :mod:`polars_calib._metrics.cumulative`).

    References
    ----------
    Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu & Hartley, "Calibration of
    neural networks using splines", ICLR 2021 (the KS calibration error).

    See Also
    --------
    ks_calibration_p, kuiper_calibration, ece

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "model": ["a", "a", "a", "a", "b", "b", "b", "b"],
    ...     "p": [0.1, 0.4, 0.4, 0.8, 0.2, 0.3, 0.7, 0.9],
    ...     "y": [0, 1, 0, 1, 1, 1, 0, 0],
    ... })
    >>> df.group_by("model", maintain_order=True).agg(
    ...     ks=pc.ks_calibration("p", "y"),
    ...     kuiper=pl.col("p").calib.kuiper_calibration("y"),
    ... )
    shape: (2, 3)
    ┌───────┬───────┬────────┐
    │ model ┆ ks    ┆ kuiper │
    │ ---   ┆ ---   ┆ ---    │
    │ str   ┆ f64   ┆ f64    │
    ╞═══════╪═══════╪════════╡
    │ a     ┆ 0.075 ┆ 0.1    │
    │ b     ┆ 0.375 ┆ 0.4    │
    └───────┴───────┴────────┘
    """
    problem = binary_problem(prob, label, weight, pos_label)
    return _statistic(problem, *_ks(problem))


def kuiper_calibration(
    prob: IntoExpr, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> pl.Expr:
    r"""Kuiper calibration error: the range of the cumulative differences.

    Parameters
    ----------
    prob
        Probability of the positive class, in [0, 1].
    label
        Outcome: bool, or integers/floats equal to 0 or 1.
    weight
        Optional non-negative frequency weights (a weight of 2 counts the row twice).
    pos_label
        The label of the positive class when labels are not 0/1.

    Returns
    -------
    Expr
        Float64, one value per group, in [0, 1]; null for an empty or invalid group
        (or zero total weight).

    Notes
    -----
    With :math:`S_i` as in :func:`ks_calibration` (read at the end of each tie),

    .. math:: \mathrm{Kuiper} = \max_{i \ge 0} S_i - \min_{i \ge 0} S_i, \qquad S_0 = 0,

    so the range always spans 0 (MAPIE's ``kuiper_statistic`` leaves ``S_0`` out).
    It sees a miscalibration that changes sign across [0, 1] (over-confident at one
    end, under-confident at the other) better than KS, which sees the largest
    excursion only.

    References
    ----------
    Gupta et al., "Calibration of neural networks using splines", ICLR 2021;
    Arrieta-Ibarra, Gujral, Tannen, Tygert & Xu, "Metrics of calibration for
    probabilistic predictions", JMLR 23 (2022).

    See Also
    --------
    kuiper_calibration_p, ks_calibration

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.4, 0.4, 0.8], "y": [0, 1, 0, 1]})
    >>> df.select(kuiper=pc.kuiper_calibration("p", "y"))
    shape: (1, 1)
    ┌────────┐
    │ kuiper │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.1    │
    └────────┘
    """
    problem = binary_problem(prob, label, weight, pos_label)
    return _statistic(problem, *_kuiper(problem))


def ks_calibration_p(
    prob: IntoExpr, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> pl.Expr:
    r"""p-value of the KS calibration test: is the model calibrated?

    Parameters
    ----------
    prob
        Probability of the positive class, in [0, 1].
    label
        Outcome: bool, or integers/floats equal to 0 or 1.
    weight
        Optional non-negative frequency weights (a weight of 2 counts the row twice).
    pos_label
        The label of the positive class when labels are not 0/1.

    Returns
    -------
    Expr
        Float64, one value per group, in [0, 1]; null for an empty or invalid
        group, a group with fewer than two used rows, and a group whose variance
        under the null is 0 (every probability 0 or 1).

    Notes
    -----
    :math:`P(\max_{t \le 1} |B(t)| \ge \mathrm{KS} / \sigma)` for a standard
    Brownian motion :math:`B`, with
    :math:`\sigma = \sqrt{\sum_j w_j p_j (1 - p_j)} / W` the standard deviation of
    the last cumulative difference under the null hypothesis
    :math:`y_j \sim \mathrm{Bernoulli}(p_j)`:
    :math:`1 - \frac{4}{\pi}\sum_{k \ge 0} \frac{(-1)^k}{2k+1}
    e^{-(2k+1)^2\pi^2/(8x^2)} = 4 \sum_{k \ge 0} (-1)^k Q((2k+1)x)`
    (Darling & Siegert, 1953). Asymptotic: the p-value of a small group is rough.
    MAPIE's ``kolmogorov_smirnov_p_value`` is the same test (it jitters tied
    probabilities at random instead of reading :math:`S` at the end of each tie).

    References
    ----------
    Tygert, "Calibration of P-values for calibration and for deviation of a
    subpopulation from the full population", arXiv:2202.00100 (2022);
    Darling & Siegert, Ann. Math. Statist. 24 (1953).

    See Also
    --------
    ks_calibration, kuiper_calibration_p

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 5,
    ...     "y": [0, 0, 1, 0, 1, 1, 0, 1] * 5,
    ... })
    >>> df.select(
    ...     ks=pc.ks_calibration("p", "y"), p=pc.ks_calibration_p("p", "y")
    ... ).select(pl.all().round(4))
    shape: (1, 2)
    ┌────────┬────────┐
    │ ks     ┆ p      │
    │ ---    ┆ ---    │
    │ f64    ┆ f64    │
    ╞════════╪════════╡
    │ 0.0875 ┆ 0.3716 │
    └────────┴────────┘
    """
    problem = binary_problem(prob, label, weight, pos_label)
    return _p_value(problem, *_ks(problem), brownian_max_abs_sf)


def kuiper_calibration_p(
    prob: IntoExpr, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> pl.Expr:
    r"""p-value of Kuiper's calibration test: is the model calibrated?

    Parameters
    ----------
    prob
        Probability of the positive class, in [0, 1].
    label
        Outcome: bool, or integers/floats equal to 0 or 1.
    weight
        Optional non-negative frequency weights (a weight of 2 counts the row twice).
    pos_label
        The label of the positive class when labels are not 0/1.

    Returns
    -------
    Expr
        Float64, one value per group, in [0, 1]; null as :func:`ks_calibration_p`.

    Notes
    -----
    :math:`P(\max B - \min B \ge \mathrm{Kuiper} / \sigma)` for a standard
    Brownian motion on ``[0, 1]``, :math:`\sigma` as in :func:`ks_calibration_p`:
    :math:`1 - \sum_{k \ge 0} \left(\frac{8}{x^2} + \frac{2}{(k+1/2)^2\pi^2}\right)
    e^{-2(k+1/2)^2\pi^2/x^2} = 8 \sum_{k \ge 1} (-1)^{k-1} k\, Q(kx)` (Feller, 1951).
    MAPIE's ``kuiper_p_value`` is the same law, applied to a range without
    :math:`S_0 = 0`.

    References
    ----------
    Tygert, arXiv:2202.00100 (2022); Feller, "The asymptotic distribution of the
    range of sums of independent random variables", Ann. Math. Statist. 22 (1951).

    See Also
    --------
    kuiper_calibration, ks_calibration_p

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 5,
    ...     "y": [0, 0, 1, 0, 1, 1, 0, 1] * 5,
    ... })
    >>> df.select(p=pc.kuiper_calibration_p("p", "y").round(4))
    shape: (1, 1)
    ┌────────┐
    │ p      │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.2339 │
    └────────┘
    """
    problem = binary_problem(prob, label, weight, pos_label)
    return _p_value(problem, *_kuiper(problem), brownian_range_sf)
