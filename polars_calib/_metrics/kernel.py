"""The squared kernel calibration error (SKCE) of probability vectors, without bins.

With a tensor-product kernel ``k((p, y), (p', y')) = k_P(p, p') delta(y, y')`` the
SKCE is ``E h((P, Y), (P', Y'))`` over independent pairs, where

``h_ij = k_P(p_i, p_j) <e_(y_i) - p_i, e_(y_j) - p_j>``

(Widmann, Lindsten and Zachariah, 2019, with the white kernel on targets:
CalibrationErrors.jl's ``unsafe_skce_eval_targets(::WhiteKernel, ...)``,
``(y == y') - p[y'] - p'[y] + <p, p'>``). Three estimators of one group's rows:

* ``"unbiased"``: the U-statistic, the mean of ``h_ij`` over the pairs ``i < j``
  (can be negative; its expectation is the SKCE);
* ``"biased"``: the V-statistic, the mean over all ``n**2`` ordered pairs, ``i = j``
  included (never negative);
* ``"block"``: the mean over the consecutive blocks of ``block_size`` used rows (an
  incomplete last block is dropped) of each block's U-statistic: linear time, and
  computed with shifts inside the group, so it streams.

The quadratic estimators pack the group's rows into one list and evaluate every pair
in ``list.eval``: memory grows with the square of the group's rows, so a group of
more than :data:`MAX_QUADRATIC_ROWS` rows raises, pointing to the block estimator.
"""

from __future__ import annotations

import math

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import (
    KERNELS,
    SKCE_ESTIMATORS,
    SUM_TOLERANCE,
    Kernel,
    SkceEstimator,
    check_choice,
    check_min_size,
    check_sum_tol,
)
from polars_calib._core.problem import vector_problem

__all__ = ["MAX_QUADRATIC_ROWS", "skce", "too_large"]

MAX_QUADRATIC_ROWS = 2_000
"""The largest group the quadratic estimators take (about 2 million pairs)."""


def _kernel(squared_distance: pl.Expr, kernel: Kernel, length_scale: float) -> pl.Expr:
    """``k_P`` of the squared Euclidean distance between two prediction vectors."""
    if kernel == "exponential":
        return (-squared_distance.sqrt() / length_scale).exp()
    return (-squared_distance / (2.0 * length_scale * length_scale)).exp()


def _pair_term(
    p_i: pl.Expr, g_i: pl.Expr, p_j: pl.Expr, g_j: pl.Expr, kernel: Kernel, length_scale: float
) -> pl.Expr:
    """``h_ij = k_P(p_i, p_j) <g_i, g_j>`` with ``g = onehot(y) - p`` (lists)."""
    difference = p_i - p_j
    squared = (difference * difference).list.sum()
    return _kernel(squared, kernel, length_scale) * (g_i * g_j).list.sum()


def too_large(n: pl.Expr, function: str = "skce") -> pl.Expr:
    """0.0, or an error naming the limit when a group has more rows than it.

    Polars has no expression that raises with a message: a strict cast of the
    message to a number fails, quoting it, when the filter keeps it.
    """
    msg = (
        f"{function}: a group holds more than {MAX_QUADRATIC_ROWS} rows, too many for the "
        "quadratic estimators (memory grows with the square of the rows); use "
        "estimator='block'"
    )
    return pl.lit(msg).filter(n > MAX_QUADRATIC_ROWS).cast(pl.Float64).sum()


def _quadratic(
    p: pl.Expr, g: pl.Expr, unbiased: bool, kernel: Kernel, length_scale: float
) -> pl.Expr:
    # Above the limit nothing is paired (the error term below raises instead).
    small = p.len() <= MAX_QUADRATIC_ROWS
    packed = pl.struct(p.alias("p"), g.alias("g")).filter(small).implode()
    row = pl.element()
    n = pl.len()
    index = pl.int_range(n * n)
    i, j = index // n, index % n
    upper = i < j
    i, j = i.filter(upper), j.filter(upper)
    first, second = row.gather(i), row.gather(j)
    pairs = _pair_term(
        first.struct.field("p"),
        first.struct.field("g"),
        second.struct.field("p"),
        second.struct.field("g"),
        kernel,
        length_scale,
    )
    if unbiased:
        body = pl.when(n >= 2).then(pairs.sum() / (n * (n - 1) / 2))
    else:
        g_row = row.struct.field("g")
        diagonal = (g_row * g_row).list.sum().sum()  # k_P(p, p) = 1
        body = pl.when(n >= 1).then((2.0 * pairs.sum() + diagonal) / (n * n))
    return packed.list.eval(body).list.first() + too_large(p.len())


def _block(p: pl.Expr, g: pl.Expr, block_size: int, kernel: Kernel, length_scale: float) -> pl.Expr:
    n = p.len()
    n_blocks = n // block_size
    position = pl.int_range(0, n)
    in_block = position % block_size
    complete = position < n_blocks * block_size
    total = pl.lit(0.0, dtype=pl.Float64)
    for lag in range(1, block_size):
        # The pairs (i - lag, i) of one block: i's offset in its block is >= lag.
        term = _pair_term(p, g, p.shift(lag), g.shift(lag), kernel, length_scale)
        total = total + term.filter(complete & (in_block >= lag)).sum()
    pairs_per_block = block_size * (block_size - 1) / 2
    return pl.when(n_blocks > 0).then(total / (n_blocks * pairs_per_block))


def skce(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    kernel: Kernel = "exponential",
    length_scale: float = 1.0,
    estimator: SkceEstimator = "unbiased",
    block_size: int = 2,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Squared kernel calibration error of probability vectors (no bins).

    Parameters
    ----------
    prob
        Probability vectors: an ``Array`` or ``List`` column of K floats in [0, 1]
        summing to 1. Binary probabilities ``p`` enter as
        ``pc.prob_vector(1 - p, p)``.
    label
        True class, an integer in ``0 .. K - 1``.
    kernel
        The kernel on predictions: ``"exponential"``,
        :math:`\exp(-\lVert p - p' \rVert / \ell)`, or ``"gaussian"``,
        :math:`\exp(-\lVert p - p' \rVert^2 / (2 \ell^2))` (Euclidean norm).
    length_scale
        :math:`\ell`, a positive number.
    estimator
        ``"unbiased"`` (default, the U-statistic; can be negative), ``"biased"``
        (the V-statistic) or ``"block"`` (the mean of the U-statistics of
        consecutive blocks of `block_size` rows; linear time).
    block_size
        Rows per block of the block estimator, an int >= 2; an incomplete last
        block is dropped.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a vector (default 1e-6).

    Returns
    -------
    Expr
        Float64, one value per group; null for an invalid group, or one with too
        few used rows (unbiased: 2; block: `block_size`).

    Raises
    ------
    ValueError
        An unknown kernel or estimator, a length scale that is not positive, or
        ``block_size < 2`` (when the expression is built).
    polars.exceptions.InvalidOperationError
        When the query runs, a group of more than :data:`MAX_QUADRATIC_ROWS` rows
        with the quadratic estimators (the message points to ``"block"``).

    Notes
    -----
    With :math:`g_i = e_{y_i} - p_i`,
    :math:`h_{ij} = k_P(p_i, p_j)\, \langle g_i, g_j \rangle`, which is
    CalibrationErrors.jl's :math:`k_P(p_i, p_j) (\delta_{y_i y_j} - p_{i, y_j} -
    p_{j, y_i} + \langle p_i, p_j \rangle)` for the kernel
    :math:`k_P \otimes \delta`. Unbiased:
    :math:`\binom{n}{2}^{-1} \sum_{i<j} h_{ij}`; biased:
    :math:`n^{-2} \sum_{i,j} h_{ij}`; block (size :math:`m`, :math:`\lfloor n/m
    \rfloor` blocks of consecutive rows in the group's order): the mean over blocks
    of each block's unbiased estimate. Rows with a null vector or label are skipped
    (they neither count nor break blocks); data policy as
    :func:`polars_calib.canonical_ece`. Weights are not defined for the SKCE (a
    U-statistic of pairs has no standard weighted form): there is no `weight`.

    For binary data, ``[1 - p, p]`` has :math:`\lVert p - p' \rVert = \sqrt 2
    |p - p'|`: CalibrationErrors.jl with scalar probabilities uses :math:`|p - p'|`
    in the kernel, so its numbers match a length scale :math:`\sqrt 2` larger
    (exponential) and the same :math:`2 (y - p)(y' - p')` target term.

    References
    ----------
    D. Widmann, F. Lindsten and D. Zachariah, "Calibration tests in multi-class
    classification: a unifying framework", NeurIPS 2019; CalibrationErrors.jl,
    ``SKCE(k; unbiased, blocksize)``.

    See Also
    --------
    polars_calib.canonical_ece

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40],
    ...               [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]],
    ...     "y": [0, 1, 2, 0],
    ... })
    >>> df.select(
    ...     u=pc.skce("probs", "y"),
    ...     v=pc.skce("probs", "y", estimator="biased"),
    ...     block=pc.skce("probs", "y", estimator="block", block_size=2),
    ... ).select(pl.all().round(4))
    shape: (1, 3)
    ┌─────────┬────────┬─────────┐
    │ u       ┆ v      ┆ block   │
    │ ---     ┆ ---    ┆ ---     │
    │ f64     ┆ f64    ┆ f64     │
    ╞═════════╪════════╪═════════╡
    │ -0.1152 ┆ 0.0727 ┆ -0.1352 │
    └─────────┴────────┴─────────┘
    """
    check_choice("kernel", kernel, KERNELS)
    check_choice("estimator", estimator, SKCE_ESTIMATORS)
    if isinstance(length_scale, bool) or not isinstance(length_scale, (int, float)):
        msg = f"`length_scale` must be a positive number, got {length_scale!r}"
        raise TypeError(msg)
    if not (math.isfinite(length_scale) and length_scale > 0):
        msg = f"`length_scale` must be a positive number, got {length_scale!r}"
        raise ValueError(msg)
    check_min_size("block_size", block_size, 2)
    problem = vector_problem(prob, label, None, check_sum_tol(sum_tol), "classwise")
    used = problem.present & ~problem.refused.fill_null(False)
    p = problem.prob.filter(used)
    g = (problem.label - problem.prob).filter(used)
    scale = float(length_scale)
    if estimator == "block":
        value = _block(p, g, block_size, kernel, scale)
    else:
        value = _quadratic(p, g, estimator == "unbiased", kernel, scale)
    result = pl.when(~problem.invalid).then(value)
    name = to_expr(prob, "prob").meta.output_name(raise_if_undetermined=False)
    return result if name is None else result.alias(name)
