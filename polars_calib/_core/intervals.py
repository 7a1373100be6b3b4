"""Confidence intervals of observed frequencies, as Polars expressions."""

from __future__ import annotations

import math

import polars as pl

__all__ = ["wilson_interval"]


def wilson_interval(successes: pl.Expr, n: pl.Expr, z: float) -> tuple[pl.Expr, pl.Expr]:
    """Wilson score interval of the observed fraction ``successes / n``.

    Parameters
    ----------
    successes
        The (weighted) number of positives: the sum of ``y`` (times the weight) in a bin.
    n
        The (weighted) number of trials: the bin's weight, or its row count.
    z
        The standard normal quantile of the two-sided level, e.g. 1.959963984540054
        for 95 %; a positive finite number.

    Returns
    -------
    tuple of two Expr
        The lower and upper bounds, Float64, named ``wilson_lower`` and
        ``wilson_upper`` (alias them). Null where `n` is null or ``n <= 0``, and
        where `successes` is null.

    Raises
    ------
    TypeError
        When `z` is not a number.
    ValueError
        When `z` is not positive and finite.

    Notes
    -----
    With ``s`` the successes, ``f = n - s`` the failures and ``p = s / n``, Wilson's
    bounds are

    ``(p + z²/2n ∓ z √(p(1 - p)/n + z²/4n²)) / (1 + z²/n)
    = (2s + z² ∓ z D) / (2(n + z²))``, with ``D = √(z² + 4 s f / n)``.

    Written so, the lower bound subtracts two nearly equal numbers when ``s`` is
    small (and the upper bound when ``s`` is close to ``n``), and floats leave a
    residue: 1.4e-17 above an observed 0, so the estimate falls outside its interval.
    Multiplying by the conjugate ``2s + z² + z D`` removes the subtraction:

    ``lower = p · 2s / (2s + z² + z D)``, and, for ``s > n/2``,
    ``upper = 1 - (f / n) · 2f / (2f + z² + z D)``

    (for ``s <= n/2`` the upper bound is the sum ``(2s + z² + z D) / (2(n + z²))``,
    which keeps its relative accuracy when it is small). So the lower bound is exactly
    0 when ``s = 0`` and the upper bound exactly 1 when ``s = n``, and both are
    accurate to a few ulps (relative) everywhere. Both are then clipped, the lower to
    ``[0, p]`` and the upper to ``[p, 1]``: in exact arithmetic the clips change
    nothing; in floats they keep the few ulps of error from putting ``p`` (which is
    computed here as ``successes / n``, like the table's ``observed``) or the unit
    interval an ulp outside.

    For ``n > 0`` and ``0 <= s <= n``: ``0 <= lower <= p <= upper <= 1``,
    ``lower == 0`` when ``s == 0`` and ``upper == 1`` when ``s == n``. Conversely,
    ``lower > 0`` when ``s > 0`` and ``upper < 1`` when ``s < n``, as long as the
    exact bound is representable apart from 0 and 1: always for integer counts below
    about 10¹⁵; a fractional failure weight ``n - s`` under about ``1e-8 · z √n``
    gives an upper bound that rounds to 1.0 (and the observed fraction is then within
    1e-16 of 1 too).

    References
    ----------
    E. B. Wilson (1927), "Probable inference, the law of succession, and statistical
    inference", *Journal of the American Statistical Association* 22(158), 209-212.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_calib._core.intervals import wilson_interval
    >>> df = pl.DataFrame({
    ...     "sum_y": [0.0, 3.0, 10.0, 2.5, 1.0],
    ...     "weight": [10.0, 10.0, 10.0, 4.0, 0.0],
    ... })
    >>> lower, upper = wilson_interval(pl.col("sum_y"), pl.col("weight"), 1.959963984540054)
    >>> df.with_columns(lower.alias("lower"), upper.alias("upper")).with_columns(
    ...     pl.col("lower", "upper").round(4)
    ... )
    shape: (5, 4)
    ┌───────┬────────┬────────┬────────┐
    │ sum_y ┆ weight ┆ lower  ┆ upper  │
    │ ---   ┆ ---    ┆ ---    ┆ ---    │
    │ f64   ┆ f64    ┆ f64    ┆ f64    │
    ╞═══════╪════════╪════════╪════════╡
    │ 0.0   ┆ 10.0   ┆ 0.0    ┆ 0.2775 │
    │ 3.0   ┆ 10.0   ┆ 0.1078 ┆ 0.6032 │
    │ 10.0  ┆ 10.0   ┆ 0.7225 ┆ 1.0    │
    │ 2.5   ┆ 4.0    ┆ 0.2194 ┆ 0.9081 │
    │ 1.0   ┆ 0.0    ┆ null   ┆ null   │
    └───────┴────────┴────────┴────────┘
    """
    if isinstance(z, bool) or not isinstance(z, (int, float)):
        msg = f"`z` must be a positive finite number, got {z!r}"
        raise TypeError(msg)
    if not (math.isfinite(z) and z > 0.0):
        msg = f"`z` must be a positive finite number, got {z!r}"
        raise ValueError(msg)
    z = float(z)
    s = successes.cast(pl.Float64)
    trials = n.cast(pl.Float64)
    f = trials - s
    p = s / trials
    d = (z * z + 4.0 * p * f).sqrt()
    lower = p * (2.0 * s / (2.0 * s + z * z + z * d))
    upper = (
        pl.when(2.0 * s <= trials)
        .then((2.0 * s + z * z + z * d) / (2.0 * (trials + z * z)))
        .otherwise(1.0 - (f / trials) * (2.0 * f / (2.0 * f + z * z + z * d)))
    )
    has_trials = trials > 0.0
    return (
        pl.when(has_trials).then(lower.clip(0.0, p)).alias("wilson_lower"),
        pl.when(has_trials).then(upper.clip(p, 1.0)).alias("wilson_upper"),
    )
