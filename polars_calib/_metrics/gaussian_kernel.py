r"""The squared kernel calibration error (SKCE) of Gaussian predictions, without bins.

Widmann, Lindsten and Zachariah (2021) define the SKCE of any predictive distribution
``P`` for a target ``Y`` as ``E h((P, Y), (P', Y'))`` over independent pairs, with a
kernel ``k((p, y), (p', y')) = k_P(p, p') k_Y(y, y')`` and

``h = k_P(P, P') [k_Y(Y, Y') - E_{Z~P} k_Y(Z, Y') - E_{Z'~P'} k_Y(Y, Z') + E k_Y(Z, Z')]``.

CalibrationErrors.jl's kernel for normal predictions, followed here:
``k_P = exp(-W₂(P, P') / l)`` (``l = length_scale``), the 2-Wasserstein distance
between normals being ``W₂ = sqrt((μ - μ')² + (σ - σ')²)``, and
``k_Y(y, y') = exp(-t² (y - y')² / 2)`` with ``t = 1 / target_length_scale``
(Julia's ``SqExponentialKernel() ∘ ScaleTransform(t)``).
The Gaussian expectations are closed forms: with ``a = (1 + t² σ²)^(-1/2)`` and
``c = (1 + t² σ² + t² σ'²)^(-1/2)``,

``E_{Z~N(μ, σ²)} k_Y(Z, y) = a exp(-a² t² (μ - y)² / 2)``,
``E k_Y(Z, Z') = c exp(-c² t² (μ - μ')² / 2)``.

Estimators over one group's used rows, as :func:`polars_calib.skce`: ``"unbiased"``
(the mean of ``h_ij`` over pairs ``i < j``), ``"biased"`` (all ``n²`` ordered pairs)
and ``"block"`` (the mean of the unbiased estimates of consecutive blocks: linear
time, it streams). The quadratic ones hold every pair of a group in memory: a group
of more than :data:`~polars_calib._metrics.kernel.MAX_QUADRATIC_ROWS` rows raises; they
make no "any size" promise.
"""

from __future__ import annotations

import math

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import (
    SKCE_ESTIMATORS,
    SkceEstimator,
    check_choice,
    check_min_size,
)
from polars_calib._core.regression import gaussian_problem
from polars_calib._metrics.kernel import MAX_QUADRATIC_ROWS, too_large

__all__ = ["gaussian_skce"]

_MU, _SIGMA, _Y = "__polars_calib_mu__", "__polars_calib_sigma__", "__polars_calib_y__"


def _expected(scale: pl.Expr, gap: pl.Expr, t2: float) -> pl.Expr:
    """``scale exp(-scale² t² gap² / 2)``: a Gaussian expectation of ``k_Y``."""
    return scale * (scale * scale * (gap * gap) * (-0.5 * t2)).exp()


def _pair(
    first: tuple[pl.Expr, pl.Expr, pl.Expr],
    second: tuple[pl.Expr, pl.Expr, pl.Expr],
    length_scale: float,
    t2: float,
) -> pl.Expr:
    """``h_ij`` of two rows, each (μ, σ, y) (see the module)."""
    (mu_i, s_i, y_i), (mu_j, s_j, y_j) = first, second
    w2 = ((mu_i - mu_j) * (mu_i - mu_j) + (s_i - s_j) * (s_i - s_j)).sqrt()
    v_i, v_j = s_i * s_i * t2, s_j * s_j * t2
    a_i, a_j = (1.0 + v_i).pow(-0.5), (1.0 + v_j).pow(-0.5)
    c = (1.0 + v_i + v_j).pow(-0.5)
    one = pl.lit(1.0)
    bracket = (
        _expected(one, y_i - y_j, t2)
        - _expected(a_i, mu_i - y_j, t2)
        - _expected(a_j, y_i - mu_j, t2)
        + _expected(c, mu_i - mu_j, t2)
    )
    return (-w2 / length_scale).exp() * bracket


def _fields(row: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    return row.struct.field(_MU), row.struct.field(_SIGMA), row.struct.field(_Y)


def _quadratic(rows: pl.Expr, unbiased: bool, length_scale: float, t2: float) -> pl.Expr:
    """The U- or V-statistic of the packed rows of the current group."""
    small = rows.len() <= MAX_QUADRATIC_ROWS
    packed = rows.filter(small).implode()
    row = pl.element()
    n = pl.len()
    index = pl.int_range(n * n)
    i, j = index // n, index % n
    upper = i < j
    # Each side gathered once, then packed: list.eval shares no subexpression, and the
    # pair term reads each field several times (a gather per reference otherwise).
    first, second = row.gather(i.filter(upper)), row.gather(j.filter(upper))
    both = pl.struct(first.alias("first"), second.alias("second")).implode()
    element = pl.element()
    term = _pair(
        _fields(element.struct.field("first")),
        _fields(element.struct.field("second")),
        length_scale,
        t2,
    )
    pairs = both.list.eval(term).explode()
    if unbiased:
        body = pl.when(n >= 2).then(pairs.sum() / (n * (n - 1) / 2))
    else:
        mu, sigma, y = _fields(row)
        a = (1.0 + sigma * sigma * t2).pow(-0.5)
        c = (1.0 + 2.0 * sigma * sigma * t2).pow(-0.5)
        diagonal = (1.0 - 2.0 * _expected(a, mu - y, t2) + c).sum()  # k_P(P, P) = 1
        body = pl.when(n >= 1).then((2.0 * pairs.sum() + diagonal) / (n * n))
    return packed.list.eval(body).list.first() + too_large(rows.len(), "gaussian_skce")


def _block(rows: pl.Expr, block_size: int, length_scale: float, t2: float) -> pl.Expr:
    """The mean of the U-statistics of consecutive blocks of `block_size` rows."""
    n = rows.len()
    n_blocks = n // block_size
    position = pl.int_range(0, n)
    in_block = position % block_size
    complete = position < n_blocks * block_size
    total = pl.lit(0.0, dtype=pl.Float64)
    for lag in range(1, block_size):
        # The pairs (i - lag, i) of one block: i's offset in its block is >= lag.
        term = _pair(_fields(rows), _fields(rows.shift(lag)), length_scale, t2)
        total = total + term.filter(complete & (in_block >= lag)).sum()
    pairs_per_block = block_size * (block_size - 1) / 2
    return pl.when(n_blocks > 0).then(total / (n_blocks * pairs_per_block))


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"`{name}` must be a positive number, got {value!r}"
        raise TypeError(msg)
    if not (math.isfinite(value) and value > 0):
        msg = f"`{name}` must be a positive number, got {value!r}"
        raise ValueError(msg)
    return float(value)


def gaussian_skce(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    length_scale: float = 1.0,
    target_length_scale: float = 1.0,
    estimator: SkceEstimator = "unbiased",
    block_size: int = 2,
) -> pl.Expr:
    r"""Compute the squared kernel calibration error of Gaussian predictions (no bins).

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    length_scale
        :math:`\ell` of the kernel on predictions, :math:`\exp(-W_2(P, P') / \ell)`.
    target_length_scale
        :math:`\ell_Y` of the kernel on targets, :math:`\exp(-(y - y')^2 / (2
        \ell_Y^2))`; CalibrationErrors.jl's ``SqExponentialKernel() ∘
        ScaleTransform(s)`` is :math:`\ell_Y = 1 / s`.
    estimator
        ``"unbiased"`` (default, the U-statistic over pairs; can be negative),
        ``"biased"`` (the V-statistic) or ``"block"`` (the mean of the U-statistics
        of consecutive blocks of `block_size` rows; linear time).
    block_size
        Rows per block of the block estimator, an int >= 2; an incomplete last block
        is dropped.

    Returns
    -------
    Expr
        Float64, one value per group; null for a group holding a refused row (see
        :func:`pit`) or with too few used rows (unbiased: 2; block: `block_size`).

    Raises
    ------
    ValueError
        An unknown estimator, a length scale that is not positive, or ``block_size <
        2`` (when the expression is built).
    polars.exceptions.InvalidOperationError
        When the query runs, a group of more than 2,000 rows with a quadratic
        estimator (memory grows with the square of the rows; use ``"block"``).

    Notes
    -----
    :math:`h_{ij} = e^{-W_2 / \ell}\,[k_Y(y_i, y_j) - a_i k_Y(a_i \mu_i, a_i y_j) -
    a_j k_Y(a_j y_i, a_j \mu_j) + c_{ij} k_Y(c_{ij} \mu_i, c_{ij} \mu_j)]` with
    :math:`a = (1 + \sigma^2 / \ell_Y^2)^{-1/2}`, :math:`c_{ij} = (1 + (\sigma_i^2 +
    \sigma_j^2) / \ell_Y^2)^{-1/2}` and :math:`W_2 = \sqrt{(\mu_i - \mu_j)^2 +
    (\sigma_i - \sigma_j)^2}`. Rows with a null input are skipped. No weights: a
    U-statistic of pairs has no standard weighted form. The quadratic estimators
    are not for groups of any size (see the Raises section).

    References
    ----------
    D. Widmann, F. Lindsten and D. Zachariah, "Calibration tests beyond
    classification", ICLR 2021; CalibrationErrors.jl, ``SKCE`` with
    ``ExponentialKernel(metric=Wasserstein()) ⊗ SqExponentialKernel()``.

    See Also
    --------
    skce : The SKCE of probability vectors.

    Examples
    --------
    CalibrationErrors.jl's test: two N(0, 1) predictions, targets 0 and 0, give
    :math:`1 - \sqrt 2 + 1 / \sqrt 3`:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [0.0, 0.0], "mu": [0.0, 0.0], "sigma": [1.0, 1.0]})
    >>> df.select(skce=pc.gaussian_skce("y", mean="mu", std="sigma").round(6))
    shape: (1, 1)
    ┌──────────┐
    │ skce     │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.163137 │
    └──────────┘
    """
    check_choice("estimator", estimator, SKCE_ESTIMATORS)
    scale = _positive("length_scale", length_scale)
    t2 = 1.0 / _positive("target_length_scale", target_length_scale) ** 2
    check_min_size("block_size", block_size, 2)
    problem = gaussian_problem(target, mean, std)
    used = problem.present & ~problem.refused.fill_null(False)
    mu = to_expr(mean, "mean").cast(pl.Float64)
    sigma = to_expr(std, "std").cast(pl.Float64)
    rows = pl.struct(mu.alias(_MU), sigma.alias(_SIGMA), problem.label.alias(_Y)).filter(used)
    if estimator == "block":
        value = _block(rows, block_size, scale, t2)
    else:
        value = _quadratic(rows, estimator == "unbiased", scale, t2)
    result = pl.when(~problem.invalid).then(value)
    name = to_expr(target, "target").meta.output_name(raise_if_undetermined=False)
    return result if name is None else result.alias(name)
