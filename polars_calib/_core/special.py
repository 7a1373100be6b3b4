"""Special functions as Polars expressions: normal tails, chi-square survival, and the
tails of the maximum and range of a Brownian motion.

The p-values of the calibration tests must stay inside the query (an aggregation per
group, in every context and engine), so they are written here from elementwise
expressions, accurate to about 1e-13 relative against scipy (``tests/test_special.py``,
``tests/test_cumulative.py``):

* :func:`erfc`: Polars' own ``Expr.erfc`` (stable; relative error about 6e-14 against
  scipy down to 1e-300, so the upper tail keeps its relative accuracy);
* :func:`normal_sf` / :func:`normal_cdf`: ``erfc(+-z / sqrt 2) / 2`` (no ``1 - ...``: no
  catastrophic cancellation);
* :func:`chi2_sf`: the survival function of a chi-square variable with an integer
  number of degrees of freedom, which may differ from row to row (group to group).
  For integer ``k`` the regularized upper incomplete gamma function is a finite sum
  (a Poisson tail): with ``m = k // 2`` and ``h = k / 2 - m`` (0 or 1/2),

  ``Q(x; k) = [h = 1/2] erfc(sqrt(x / 2)) + sum_{i < m} exp(-x/2 + a_i log(x/2) - lgamma(a_i + 1))``

  where ``a_i = i + h``. Each term is computed in log space (no overflow of
  ``(x/2)**a`` or ``a!``), and the terms are positive, so the sum keeps its relative
  accuracy in both tails. The ``m`` terms are a list per row (``int_ranges``), so
  ``k`` needs no bound known when the query is built; ``lgamma(a_i + 1)`` is the
  running sum of ``log(j + h)``, ``j = 1 .. i``, plus ``lgamma(1 + h)``;
* :func:`brownian_max_abs_sf` / :func:`brownian_range_sf`: the tails of the KS and
  Kuiper calibration tests (:mod:`polars_calib._metrics.cumulative`):

  Under the null hypothesis of calibration, the cumulative differences of
  :mod:`polars_calib._metrics.cumulative` divided by their standard deviation behave, for many
  rows, as a standard Brownian motion ``B`` on ``[0, 1]`` (not a bridge: the last
  cumulative difference is not pinned at 0). Their tests read the tails of

  * ``M = max |B(t)|`` (Darling & Siegert, 1953; the ``kolmogorov_smirnov_cdf`` of
    MAPIE), for the KS statistic::

        P(M >= x) = 1 - (4/pi) sum_{k>=0} (-1)^k / (2k+1) exp(-(2k+1)^2 pi^2 / (8 x^2))
                  = 4 sum_{k>=0} (-1)^k Q((2k+1) x)

  * ``R = max B - min B`` (Feller, 1951; MAPIE's ``kuiper_cdf``), for Kuiper's::

        P(R >= x) = 1 - sum_{k>=0} (8 / x^2 + 2 / ((k+1/2)^2 pi^2)) exp(-2 (k+1/2)^2 pi^2 / x^2)
                  = 8 sum_{k>=1} (-1)^(k-1) k Q(k x)

  with ``Q`` the standard normal upper tail, ``Q(z) = erfc(z / sqrt 2) / 2``. Each pair is
  one theta function in its two dual forms (Poisson summation): the first converges
  in a few terms for small ``x`` and the second for large ``x``, where it also keeps
  the relative accuracy of a tiny p-value (``1 - cdf`` would lose it). Each tail
  uses the first below its switch point and the second above, with enough terms for
  the float64 precision on both sides (the tests check both forms against numpy and
  scipy to 1e-13). These are Brownian-*motion* laws: Kolmogorov's and Kuiper's
  Brownian-*bridge* laws (``scipy.stats.kstwobign``) would be wrong here.

References
----------
M. Abramowitz and I. A. Stegun, Handbook of Mathematical Functions, 26.4.4-26.4.5.
D. A. Darling and A. J. F. Siegert, "The first passage problem for a continuous Markov
process", Annals of Mathematical Statistics 24 (1953).
W. Feller, "The asymptotic distribution of the range of sums of independent random
variables", Annals of Mathematical Statistics 22 (1951).
"""

from __future__ import annotations

import math

import polars as pl

__all__ = [
    "brownian_max_abs_sf",
    "brownian_range_sf",
    "chi2_sf",
    "erfc",
    "kolmogorov_sf",
    "normal_cdf",
    "normal_sf",
]

_LGAMMA_3_2 = math.lgamma(1.5)


def erfc(x: pl.Expr) -> pl.Expr:
    """The complementary error function ``1 - erf(x)``, Float64 (null stays null)."""
    return x.cast(pl.Float64).erfc()


def normal_sf(z: pl.Expr) -> pl.Expr:
    """Standard normal survival function ``1 - Phi(z)``, accurate in the upper tail."""
    return 0.5 * erfc(z.cast(pl.Float64) * math.sqrt(0.5))


def normal_cdf(z: pl.Expr) -> pl.Expr:
    """Standard normal distribution function ``Phi(z)``, accurate in the lower tail."""
    return 0.5 * erfc(-z.cast(pl.Float64) * math.sqrt(0.5))


def chi2_sf(x: pl.Expr, df: pl.Expr) -> pl.Expr:
    """Chi-square survival ``P(X > x)`` for integer degrees of freedom `df` >= 1.

    Float64; null where `x` or `df` is null or `df` < 1, 1 where ``x <= 0``. See
    the module for the finite sum and why it keeps its accuracy.
    """
    x = x.cast(pl.Float64)
    k = df.cast(pl.Int64)
    m = k // 2
    h = (k % 2).cast(pl.Float64) * 0.5
    half = x.clip(0.0, None) * 0.5
    # a log(x/2) with a = 0 must be 0 at x = 0, so log(0) becomes a large finite number.
    log_half = pl.when(half > 0.0).then(half.log()).otherwise(-1e300)
    a = pl.int_ranges(0, m, dtype=pl.Int64).cast(pl.List(pl.Float64)) + h
    # lgamma(a_i + 1) = lgamma(1 + h) + sum_{j=1..i} log(j + h); clip(1) drops j = 0.
    lgamma = a.list.eval(pl.element().clip(1.0, None).log().cum_sum()) + pl.when(h > 0.0).then(
        _LGAMMA_3_2
    ).otherwise(0.0)
    log_terms = a * log_half - lgamma - half
    terms = log_terms.list.eval(pl.element().exp()).list.sum()
    odd = pl.when(h > 0.0).then(erfc(half.sqrt())).otherwise(0.0)
    value = pl.when(x <= 0.0).then(1.0).otherwise(odd + terms)
    return pl.when(k >= 1).then(value)


_TERMS = 12
"""Terms of each series: at the switch points the next term is below 1e-20 of the sum."""


def _q(z: pl.Expr) -> pl.Expr:
    return normal_sf(z)


def brownian_max_abs_sf(x: pl.Expr) -> pl.Expr:
    """``P(max_{t<=1} |B(t)| >= x)`` for a standard Brownian motion; 1 for ``x <= 0``.

    Below ``x = 1`` the theta series of the distribution function (its largest
    omitted term is ``exp(-23^2 pi^2 / 8) / 23``), above it the alternating sum of
    normal tails (its largest omitted term is ``Q(25)``). Null stays null.
    """
    small = x.clip(lower_bound=0.05)  # exp(-pi^2 / (8 * 0.05^2)) == 0 in float64
    cdf = pl.sum_horizontal(
        (-1.0) ** k / (2 * k + 1) * (-((2 * k + 1) ** 2 * math.pi**2 / 8.0) / (small * small)).exp()
        for k in range(_TERMS)
    ) * (4.0 / math.pi)
    dual = pl.sum_horizontal((-1.0) ** k * _q((2 * k + 1) * x) for k in range(_TERMS)) * 4.0
    # Two conditions, not `otherwise`: sum_horizontal skips nulls, so a null x stays null here.
    return pl.when(x < 1.0).then(1.0 - cdf).when(x >= 1.0).then(dual)


def brownian_range_sf(x: pl.Expr) -> pl.Expr:
    """``P(max B - min B >= x)`` over ``[0, 1]`` for a standard Brownian motion.

    Below ``x = 2`` the theta series of the distribution function, above it the
    alternating sum of normal tails; 1 for ``x <= 0``. Null stays null.
    """
    small = x.clip(lower_bound=0.05)  # exp(-pi^2 / (2 * 0.05^2)) == 0 in float64
    inverse_square = 1.0 / (small * small)
    cdf = pl.sum_horizontal(
        (8.0 * inverse_square + 2.0 / ((k + 0.5) ** 2 * math.pi**2))
        * (-(2.0 * (k + 0.5) ** 2 * math.pi**2) * inverse_square).exp()
        for k in range(_TERMS)
    )
    dual = pl.sum_horizontal((-1.0) ** (k - 1) * k * _q(k * x) for k in range(1, _TERMS + 1)) * 8.0
    return pl.when(x < 2.0).then(1.0 - cdf).when(x >= 2.0).then(dual)


# --------------------------------------------------------------------------
# Kolmogorov's limiting law (the PIT's uniformity test, polars_calib._metrics.pit_tests)
# --------------------------------------------------------------------------


def kolmogorov_sf(x: pl.Expr) -> pl.Expr:
    """``P(K >= x)`` for Kolmogorov's limit ``K = sup |B(t)|`` of a Brownian *bridge*.

    The law of ``sqrt(n) D_n`` for large ``n`` (scipy's ``kstwobign.sf``). Below
    ``x = 1`` one minus the theta series ``sqrt(2 pi) / x sum_{k>=1} exp(-(2k-1)^2
    pi^2 / (8 x^2))``, above it ``2 sum_{k>=1} (-1)^(k-1) exp(-2 k^2 x^2)`` (its
    largest omitted term is ``exp(-2 * 13^2)``), which keeps the relative accuracy of
    a tiny p-value. 1 for ``x <= 0``; null stays null.
    """
    small = x.clip(lower_bound=0.05)  # exp(-pi^2 / (8 * 0.05^2)) == 0 in float64
    cdf = pl.sum_horizontal(
        (-((2 * k - 1) ** 2 * math.pi**2 / 8.0) / (small * small)).exp()
        for k in range(1, _TERMS + 1)
    ) * (math.sqrt(2.0 * math.pi) / small)
    dual = (
        pl.sum_horizontal(
            (-1.0) ** (k - 1) * (-2.0 * k * k * x * x).exp() for k in range(1, _TERMS + 1)
        )
        * 2.0
    )
    return pl.when(x < 1.0).then(1.0 - cdf).when(x >= 1.0).then(dual)
