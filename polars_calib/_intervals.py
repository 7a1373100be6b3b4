"""Confidence intervals of observed frequencies."""

from __future__ import annotations

import polars as pl

__all__ = ["wilson_interval"]


def wilson_interval(successes: pl.Expr, n: pl.Expr, z: float) -> tuple[pl.Expr, pl.Expr]:
    """Wilson score interval (Wilson, 1927) of ``successes / n``; null where ``n <= 0``.

    ``(p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)``, clipped to ``[0, p]`` and
    ``[p, 1]``: exact arithmetic gives 0 and 1 at the ends, floats leave a residue
    (1e-17 above an observed 0), which would put the estimate outside its interval.
    """
    ok = n > 0.0
    p = pl.when(ok).then(successes / n)
    shrink = 1.0 + z * z / n
    center = (p + z * z / (2.0 * n)) / shrink
    half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / shrink
    return (center - half).clip(0.0, p), (center + half).clip(p, 1.0)
