r"""The risk-adjusted CUSUM and the observed-minus-expected chart as running expressions.

Both are cumulative sums of a per-row term, so they are ``cum_sum``/``cum_min`` over the
rows in order (``.over(keys, order_by=time)``): no loop over rows. The proofs and the
policies (refused rows, contradicted certain predictions) are in ``docs/monitoring.md``.
"""

from __future__ import annotations

import math

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.problem import WEIGHT_LIMIT, Problem, binary_problem

__all__ = [
    "broken_from",
    "check_odds_ratio",
    "cusum",
    "cusum_step",
    "excess_step",
    "observed_minus_expected",
    "used_rows",
]


def check_odds_ratio(odds_ratio: float) -> float:
    """Return ``log(odds_ratio)``; raise ``ValueError`` unless it is positive, finite and not 1."""
    if isinstance(odds_ratio, bool) or not isinstance(odds_ratio, (int, float)):
        msg = f"`odds_ratio` must be a positive number other than 1, got {odds_ratio!r}"
        raise TypeError(msg)
    if not (0.0 < odds_ratio < math.inf) or odds_ratio == 1.0:
        msg = f"`odds_ratio` must be a positive finite number other than 1, got {odds_ratio!r}"
        raise ValueError(msg)
    return math.log(odds_ratio)


def used_rows(problem: Problem) -> pl.Expr:
    """True on a row the charts use: present (no null input) and not refused."""
    if problem.ok is not None:
        return problem.ok.fill_null(False)
    return problem.present & ~problem.refused.fill_null(False)


def broken_from(problem: Problem) -> pl.Expr:
    """True from the first refused row on (and from the row where the weights used so far
    reach ``WEIGHT_LIMIT``): the running form of the package's one refused rule."""
    # From `ok` (false on a refused row), the expression `used_rows` reads too: the rule
    # is evaluated once per chart.
    refused = problem.refused if problem.ok is None else ~problem.ok
    broken = refused.fill_null(False).cum_max()
    if problem.weight is not None:
        used = pl.when(used_rows(problem)).then(problem.weight).otherwise(0.0)
        broken = broken | (used.cum_sum() >= WEIGHT_LIMIT)
    return broken


def cusum_step(problem: Problem, log_r: float) -> tuple[pl.Expr, pl.Expr]:
    """The finite log-likelihood ratio ``w (y log R - log(1 - p + R p))`` of each used row
    (0 on other rows) and the flag of a certain prediction its outcome contradicts in the
    chart's direction (``p = 0, y = 1`` for ``R > 1``; ``p = 1, y = 0`` for ``R < 1``)."""
    p, y = problem.prob, problem.label
    term = y * log_r - ((math.exp(log_r) - 1.0) * p).log1p()
    contradicted = (p == 0.0) & (y == 1.0) if log_r > 0 else (p == 1.0) & (y == 0.0)
    if problem.weight is not None:
        term = term * problem.weight
        contradicted = contradicted & (problem.weight > 0.0)
    used = used_rows(problem)
    step = pl.when(used & ~contradicted).then(term).otherwise(0.0)
    return step, (used & contradicted)


def _name(prob: IntoExpr) -> str:
    return to_expr(prob, "prob").meta.output_name(raise_if_undetermined=False) or "prob"


def cusum(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    odds_ratio: float,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Compute the risk-adjusted CUSUM of binary predictions, row by row.

    Parameters
    ----------
    prob
        Probability of the positive class, in [0, 1].
    label
        Outcome: bool, or integers/floats equal to 0 or 1.
    odds_ratio
        The alternative ``R``: the odds of ``y = 1`` multiplied by ``R``. ``R > 1``
        watches for under-prediction, ``R < 1`` for over-prediction.
    weight
        Optional non-negative row weights; a weight multiplies the row's term.

    Returns
    -------
    Expr
        Float64, one value per row: the CUSUM ``S_t >= 0`` after row ``t``, in the
        order of the rows (use ``.over(keys, order_by=time)``); ``inf`` from a certain
        prediction contradicted in the chart's direction on; null from the first
        refused row on.

    Notes
    -----
    With :math:`W_t = w_t\,(y_t \log R - \log(1 - p_t + R p_t))`, the log-likelihood
    ratio of row :math:`t` (Steiner et al., 2000), the chart is the Lindley recursion
    :math:`S_t = \max(0, S_{t-1} + W_t)`, :math:`S_0 = 0`, computed as

    .. math:: S_t = C_t - \min(0, \min_{s \le t} C_s), \qquad C_t = \sum_{s \le t} W_s.

    *Proof*, by induction on :math:`t`, writing :math:`m_t = \min(0, \min_{s\le t} C_s)`
    (so :math:`m_0 = 0 = C_0` and :math:`S_0 = 0`). Suppose :math:`S_{t-1} = C_{t-1} -
    m_{t-1}`. Then :math:`S_{t-1} + W_t = C_t - m_{t-1}`. If :math:`C_t \ge m_{t-1}`,
    :math:`m_t = m_{t-1}` and :math:`\max(0, C_t - m_{t-1}) = C_t - m_t`. Otherwise
    :math:`m_t = C_t` and :math:`\max(0, C_t - m_{t-1}) = 0 = C_t - m_t`. Both forms
    agree up to rounding (:math:`C_t` grows with :math:`t`, so the difference is a few
    ulps of :math:`|C_t|`).

    Rows with a null probability, label or weight add nothing (the value is carried).
    A refused row (a probability outside [0, 1] or NaN, a label other than 0/1, a bad
    weight, as :func:`polars_calib.ece` refuses it) makes the chart null from that row
    on, as do weights used so far summing to 1e300: the values before it stand.

    A certain prediction its outcome contradicts (``p = 0`` with ``y = 1`` on the
    ``R > 1`` chart, ``p = 1`` with ``y = 0`` on the ``R < 1`` chart) is infinite
    evidence: ``S`` is ``inf`` from that row on (an immediate alarm;
    :func:`polars_calib.monitor` restarts the chart after it). The other chart takes
    the formula's bounded term (``log R`` for ``p = 0``, ``y = 1``; ``-log R`` for
    ``p = 1``, ``y = 0``) and stays finite: never NaN. See ``docs/monitoring.md``.

    References
    ----------
    S. H. Steiner, R. J. Cook, V. T. Farewell, T. Treasure (2000), "Monitoring surgical
    performance using risk-adjusted cumulative sum charts", *Biostatistics* 1(4).

    See Also
    --------
    observed_minus_expected, monitor, cusum_thresholds

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "model": ["a", "a", "a", "b", "b", "a"],
    ...     "ts": [1, 2, 3, 1, 2, 4],
    ...     "p": [0.2, 0.1, 0.3, 0.5, 0.5, 0.2],
    ...     "y": [1, 1, 0, 0, 1, 1],
    ... })
    >>> log.with_columns(
    ...     up=pc.cusum("p", "y", odds_ratio=2.0).over("model", order_by="ts").round(4),
    ...     oe=pc.observed_minus_expected("p", "y").over("model", order_by="ts").round(4),
    ... )
    shape: (6, 6)
    ┌───────┬─────┬─────┬─────┬────────┬──────┐
    │ model ┆ ts  ┆ p   ┆ y   ┆ up     ┆ oe   │
    │ ---   ┆ --- ┆ --- ┆ --- ┆ ---    ┆ ---  │
    │ str   ┆ i64 ┆ f64 ┆ i64 ┆ f64    ┆ f64  │
    ╞═══════╪═════╪═════╪═════╪════════╪══════╡
    │ a     ┆ 1   ┆ 0.2 ┆ 1   ┆ 0.5108 ┆ 0.8  │
    │ a     ┆ 2   ┆ 0.1 ┆ 1   ┆ 1.1087 ┆ 1.7  │
    │ a     ┆ 3   ┆ 0.3 ┆ 0   ┆ 0.8463 ┆ 1.4  │
    │ b     ┆ 1   ┆ 0.5 ┆ 0   ┆ 0.0    ┆ -0.5 │
    │ b     ┆ 2   ┆ 0.5 ┆ 1   ┆ 0.2877 ┆ 0.0  │
    │ a     ┆ 4   ┆ 0.2 ┆ 1   ┆ 1.3571 ┆ 2.2  │
    └───────┴─────┴─────┴─────┴────────┴──────┘
    """
    log_r = check_odds_ratio(odds_ratio)
    problem = binary_problem(prob, label, weight)
    step, contradicted = cusum_step(problem, log_r)
    total = step.cum_sum()
    chart = total - total.cum_min().clip(upper_bound=0.0)
    # An infinite term would turn a later difference of sums into NaN: the flag is kept
    # apart from the finite sum and makes the chart infinite from its row on.
    chart = pl.when(contradicted.cum_max()).then(math.inf).otherwise(chart)
    return pl.when(~broken_from(problem)).then(chart).alias(_name(prob))


def observed_minus_expected(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Compute the observed-minus-expected (VLAD) chart: the running sum of ``y - p``.

    Parameters
    ----------
    prob
        Probability of the positive class, in [0, 1].
    label
        Outcome: bool, or integers/floats equal to 0 or 1.
    weight
        Optional non-negative row weights: the sum of ``w (y - p)``.

    Returns
    -------
    Expr
        Float64, one value per row: :math:`\sum_{s \le t} w_s (y_s - p_s)` in the order
        of the rows (use ``.over(keys, order_by=time)``); null from the first refused
        row on (as :func:`cusum`); rows with a null input add nothing.

    Notes
    -----
    Positive: more events than predicted (under-prediction). A calibrated stream keeps
    it a random walk with mean 0 and variance :math:`\sum w_s^2 p_s (1 - p_s)`.

    See Also
    --------
    cusum, monitor

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.2, 0.1, 0.3], "y": [1, 1, 0]})
    >>> df.select(oe=pc.observed_minus_expected("p", "y").round(4))
    shape: (3, 1)
    ┌─────┐
    │ oe  │
    │ --- │
    │ f64 │
    ╞═════╡
    │ 0.8 │
    │ 1.7 │
    │ 1.4 │
    └─────┘
    """
    problem = binary_problem(prob, label, weight)
    step = excess_step(problem)
    return pl.when(~broken_from(problem)).then(step.cum_sum()).alias(_name(prob))


def excess_step(problem: Problem) -> pl.Expr:
    """The O - E chart's term of each row: ``w (y - p)`` on a used row, else 0."""
    used = used_rows(problem)
    return pl.when(used).then(problem.weighted(problem.label - problem.prob)).otherwise(0.0)
