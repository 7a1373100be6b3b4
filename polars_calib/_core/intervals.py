"""Confidence intervals of observed frequencies, as Polars expressions."""

from __future__ import annotations

import math
from statistics import NormalDist

import polars as pl

__all__ = ["wilson_interval", "with_poisson_interval"]


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


_NEWTON_STEPS = 6
"""Newton steps of :func:`with_poisson_interval`: from the Wilson-Hilferty start, the
worst relative error against scipy over the test cases (counts 0 to 25,000, levels 0.5 to
0.999) is 2e-9 after three steps and at rounding (1e-13) from four on; six leave a margin."""

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _log_factorial(i: pl.Expr) -> pl.Expr:
    """``log(i!)`` of a Float64 ``i >= 0`` (inside ``list.eval``), to about 1e-15 relative.

    Stirling's series of ``lgamma(z + 8)`` at ``z = i + 1`` (``z + 8 >= 9``: the first
    omitted term, ``1 / (156 z^13)``, is below 3e-15), less ``log(z (z + 1) ... (z + 7))``.
    """
    z = i + 1.0
    w = z + 8.0
    inverse = 1.0 / w
    square = inverse * inverse
    series = inverse * (
        1.0 / 12.0
        + square
        * (
            -1.0 / 360.0
            + square
            * (
                1.0 / 1260.0
                + square * (-1.0 / 1680.0 + square * (1.0 / 1188.0 - square * 691.0 / 360360.0))
            )
        )
    )
    stirling = (w - 0.5) * w.log() - w + _LOG_SQRT_2PI + series
    shifted = (z * (z + 1.0) * (z + 2.0) * (z + 3.0)).log() + (
        (z + 4.0) * (z + 5.0) * (z + 6.0) * (z + 7.0)
    ).log()
    return stirling - shifted


def _tail_terms(n: pl.Expr, upper: bool) -> tuple[pl.Expr, pl.Expr]:
    """The lists ``k`` and ``L_k`` with ``pmf(n ± k) / pmf(n) = exp(±(k log x - L_k))``.

    Upwards (`upper`), ``L_k = sum_{j=n+1..n+k} log j``; downwards,
    ``L_k = sum_{j=n-k+1..n} log j`` (at most ``n`` terms). Neither depends on ``x``,
    so the Newton steps only take a broadcast product and an ``exp`` per term. The sum
    stops ``9 sqrt(n) + 25`` counts from `n`: on the tail's side of the mode (where ``x``
    lies at the bounds) a term ``k`` counts away is below ``exp(-k² / 2(n + k))`` times
    the first, under 1e-17 of the sum from there.
    """
    width = (9.0 * n.sqrt() + 25.0).ceil().cast(pl.Int64)
    if upper:
        counts = pl.int_ranges(n + 1, n + width + 1)
    else:
        counts = pl.int_ranges(n, (n - width).clip(0, None), step=-1)
    logs = counts.cast(pl.List(pl.Float64)).list.eval(pl.element().log().cum_sum())
    k = pl.int_ranges(1, counts.list.len() + 1).cast(pl.List(pl.Float64))
    return k, logs


def _log_tail_ratio(k: pl.Expr, logs: pl.Expr, log_x: pl.Expr, upper: bool) -> pl.Expr:
    """``log(P / pmf(n))`` for ``P = P(X >= n)`` (`upper`) or ``P(X <= n)``, ``X ~ Poisson(x)``,
    from the lists of :func:`_tail_terms`: ``log(1 + sum_k pmf(n ± k) / pmf(n))``, with
    no underflow however small ``pmf(n)`` is."""
    exponents = k * log_x - logs if upper else logs - k * log_x
    return exponents.list.eval(pl.element().exp()).list.sum().log1p()


def _log_pmf(n: pl.Expr, x: pl.Expr) -> pl.Expr:
    """``log P(X = n)`` for ``X ~ Poisson(x)``, `n` >= 0."""
    count = n.cast(pl.Float64)
    return count * x.log() - x - _log_factorial(count)


def with_poisson_interval(
    lf: pl.LazyFrame, observed: str, confidence: float, names: tuple[str, str]
) -> pl.LazyFrame:
    """`lf` with Garwood's exact interval of a Poisson mean, given an observed count.

    Parameters
    ----------
    lf
        The rows (a small table: one row per group and window).
    observed
        Name of the column of observed counts (integers >= 0, rounded; null stays null).
    confidence
        The two-sided level, in (0, 1).
    names
        Names of the lower and upper bound columns added (Float64).

    Returns
    -------
    LazyFrame
        `lf` with the two bounds: ``lower = ½ χ²_{2O, alpha/2}`` (0 when ``O = 0``) and
        ``upper = ½ χ²_{2(O+1), 1-alpha/2}``, ``alpha = 1 - confidence`` (Garwood, 1936).

    Notes
    -----
    ``½ χ²_{2k, q}`` is the ``q`` quantile of a Gamma(k, 1) variable, and for an integer
    ``k`` ``P(Gamma(k) <= x) = P(Poisson(x) >= k)``: the lower bound solves
    ``P(Poisson(L) >= O) = alpha/2`` and the upper ``P(Poisson(U) <= O) = alpha/2``,
    sums of positive terms (no cancellation). Each is solved by Newton's method on
    ``log P`` as a function of ``u = log x``, from the Wilson-Hilferty start. A gamma
    variable's density in ``u`` is log-concave, so its distribution and survival
    functions are too: Newton's iterates on a concave monotone function approach the
    root from one side after the first step, and converge quadratically. The steps are
    a fixed number of ``with_columns`` (nothing is read).
    Checked against scipy's ``chi2.ppf`` (``tests/test_monitor_windows.py``); the proof
    and the derivatives are in ``docs/monitoring.md``.

    References
    ----------
    F. Garwood (1936), "Fiducial limits for the Poisson distribution", *Biometrika*
    28(3/4), 437-442.
    """
    alpha = 1.0 - confidence
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    count_name, lower_u, upper_u = (f"__polars_calib_{n}__" for n in ("count", *names))
    count = pl.col(count_name)
    positive = count.clip(1, None)  # the lower bound's count (O = 0 gives 0, below)
    lists = [f"__polars_calib_{n}__" for n in ("k_up", "logs_up", "k_down", "logs_down")]
    k_up, logs_up, k_down, logs_down = (pl.col(n) for n in lists)

    def wilson_hilferty(shape: pl.Expr, z_q: float) -> pl.Expr:
        k = shape.cast(pl.Float64)
        return (k * (1.0 - 1.0 / (9.0 * k) + z_q / (3.0 * k.sqrt())).clip(0.05, None) ** 3).log()

    counts = lf.with_columns(pl.col(observed).round().cast(pl.Int64).alias(count_name))
    counts = counts.with_columns(
        *(
            e.alias(n)
            for e, n in zip([*_tail_terms(positive, True), *_tail_terms(count, False)], lists)
        ),
        wilson_hilferty(positive, -z).alias(lower_u),
        wilson_hilferty(count + 1, z).alias(upper_u),
    )
    target = math.log(alpha / 2.0)
    for _ in range(_NEWTON_STEPS):
        lower, upper = pl.col(lower_u), pl.col(upper_u)
        # log P = log pmf(n) + log(P / pmf(n)); d log P / d log x is n pmf(n) / P for
        # P(X >= n) (its x-derivative is pmf(n - 1) = n pmf(n) / x) and -x pmf(n) / P
        # for P(X <= n) (its x-derivative is -pmf(n)).
        lower_ratio = _log_tail_ratio(k_up, logs_up, lower, upper=True)
        upper_ratio = _log_tail_ratio(k_down, logs_down, upper, upper=False)
        lower_log = _log_pmf(positive, lower.exp()) + lower_ratio
        upper_log = _log_pmf(count, upper.exp()) + upper_ratio
        lower_slope = positive.cast(pl.Float64) / lower_ratio.exp()
        upper_slope = -upper.exp() / upper_ratio.exp()
        counts = counts.with_columns(
            lower - ((lower_log - target) / lower_slope).clip(-2.0, 2.0),
            upper - ((upper_log - target) / upper_slope).clip(-2.0, 2.0),
        )
    lower_name, upper_name = names
    valid = count >= 0  # null (and a negative count) stays null
    return counts.with_columns(
        pl.when(count > 0).then(pl.col(lower_u).exp()).when(valid).then(0.0).alias(lower_name),
        pl.when(valid).then(pl.col(upper_u).exp()).alias(upper_name),
    ).drop(count_name, lower_u, upper_u, *lists)
