"""The canonical (full) multi-class calibration error as an expression.

See :mod:`polars_calib._table.distance` for the distances.
"""

from __future__ import annotations

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import (
    SUM_TOLERANCE,
    BinAverage,
    Closed,
    Distance,
    Strategy,
    check_sum_tol,
)
from polars_calib._core.problem import vector_problem
from polars_calib._table.distance import check_distance, problem_error


def canonical_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    distance: Distance = "tv",
    average: BinAverage | None = None,
    bins: IntoExpr | None = None,
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Canonical (full) calibration error of probability vectors, binned on the simplex.

    Parameters
    ----------
    prob
        Probability vectors: an ``Array`` or ``List`` column of K floats in [0, 1]
        summing to 1 (see :func:`polars_calib.prob_vector`).
    label
        True class, an integer in ``0 .. K - 1``.
    n_bins
        Bins per component, a positive int: the cells of the uniform grid.
    strategy
        ``"uniform"``: the grid of ``n_bins`` equal-width bins per component.
        ``"median_variance"`` is not an aggregation (see
        :func:`polars_calib.median_variance_bins`): it raises ``ValueError`` here;
        give its bins with `bins`.
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]`` per
        component; ``"left"``: ``[0, 1/B), ..., [(B-1)/B, 1]``.
    distance
        ``"tv"`` (total variation, the default), ``"cityblock"`` or
        ``"sqeuclidean"``.
    average
        ``"weighted"`` (``None``, the default): bins weighted by their share of the rows;
        ``"bins"``: the plain mean over the non-empty bins.
    bins
        A column (or expression) of precomputed bins, one key per row (for example
        from :func:`polars_calib.median_variance_bins`); replaces `n_bins`,
        `strategy` and `closed`.
    weight
        Optional non-negative sample weights.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a vector (default 1e-6).

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Notes
    -----
    With :math:`W_b` the weight of bin :math:`b` (its row count when unweighted),
    :math:`W = \sum_b W_b`, :math:`\bar P_b` the mean prediction vector and
    :math:`\bar Y_b` the mean one-hot outcome of the bin,

    .. math:: \mathrm{ECE}_d = \sum_b \frac{W_b}{W}\, d(\bar P_b, \bar Y_b),

    with :math:`d(a, b) = \frac12 \sum_k |a_k - b_k|` (``tv``),
    :math:`\sum_k |a_k - b_k|` (``cityblock``) or :math:`\sum_k (a_k - b_k)^2`
    (``sqeuclidean``). This is the weighted mean CalibrationErrors.jl's ``ECE``
    computes; its documentation (and ``average="bins"``) writes
    :math:`\frac1B \sum_b d(\bar P_b, \bar Y_b)` over the :math:`B` non-empty bins.
    A uniform cell is the list of each component's bin (the package's exact edge
    rule; CalibrationErrors.jl uses ``ceil(B p)``, which puts some decimal edges such
    as 0.7 with 10 bins in the bin above). Only non-empty cells exist, and a group
    with several vector lengths is invalid (null). See ``docs/ece-family.md``.

    References
    ----------
    D. Widmann, F. Lindsten and D. Zachariah, "Calibration tests in multi-class
    classification: a unifying framework", NeurIPS 2019; CalibrationErrors.jl,
    ``ECE(UniformBinning(B), distance)``.

    See Also
    --------
    polars_calib.classwise_ece, polars_calib.confidence_ece, polars_calib.skce,
    polars_calib.median_variance_bins, polars_calib.summary (``reduction="canonical"``)

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
    ...     tv=pc.canonical_ece("probs", "y", n_bins=2),
    ...     sq=pc.canonical_ece("probs", "y", n_bins=2, distance="sqeuclidean"),
    ... ).select(pl.all().round(4))
    shape: (1, 2)
    ┌────────┬────────┐
    │ tv     ┆ sq     │
    │ ---    ┆ ---    │
    │ f64    ┆ f64    │
    ╞════════╪════════╡
    │ 0.3875 ┆ 0.2388 │
    └────────┴────────┘

    The frame form computes the same numbers from mergeable statistics per cell, one
    aggregation over the rows (an ``Array`` column; see
    :func:`polars_calib.bin_statistics`):

    >>> vectors = df.with_columns(pl.col("probs").list.to_array(3))
    >>> pc.summary(
    ...     vectors, "probs", "y", n_bins=2, reduction="canonical", metrics=["ece"]
    ... ).select(pl.col("canonical_ece").round(4)).item()
    0.3875
    """
    # Given bins replace the grid (whatever the strategy says, median-variance included).
    binning = Binning(n_bins, strategy, closed) if bins is None else None
    distance, average = check_distance(distance, average or "weighted")
    problem = vector_problem(prob, label, weight, check_sum_tol(sum_tol), "classwise")
    error = problem_error(problem, problem.prob, problem.label, bins, binning, distance, average)
    name = to_expr(prob, "prob").meta.output_name(raise_if_undetermined=False)
    return error if name is None else error.alias(name)
