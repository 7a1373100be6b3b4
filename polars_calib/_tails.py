"""Upper tails of the maximum and the range of a standard Brownian motion, as expressions.

Under the null hypothesis of calibration, the cumulative differences of
:mod:`polars_calib.cumulative` divided by their standard deviation behave, for many
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
"""

from __future__ import annotations

import math

import polars as pl

__all__ = ["brownian_max_abs_sf", "brownian_range_sf"]

_TERMS = 12
"""Terms of each series: at the switch points the next term is below 1e-20 of the sum."""


def _q(z: pl.Expr) -> pl.Expr:
    """Standard normal upper tail ``Q(z)`` (Polars' ``erfc``, relative error ~1e-14)."""
    return (z * (1.0 / math.sqrt(2.0))).erfc() * 0.5


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
