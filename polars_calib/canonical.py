"""The canonical (full) multi-class calibration error: binned ECE with a distance.

``ECE_d = sum_b (W_b / W) d(P_b, Y_b)``: the rows are binned by their whole
probability vector, each bin ``b`` holding total weight ``W_b`` (its row count when
unweighted), mean prediction vector ``P_b`` and mean one-hot outcome ``Y_b``, and
``d`` is a distance on the simplex (Widmann, Lindsten and Zachariah, 2019;
CalibrationErrors.jl's ``ECE``). Bins are

* ``"uniform"``: the cells of the K-dimensional grid, each component binned by the
  package's one exact rule (:meth:`polars_calib.binning.Binning.value`); a cell is
  the list of its components' bin indices, and only the cells holding rows exist
  (grouped by that list, so K = 1000 classes never make ``B**K`` cells);
* given bins (``bins=``): any per-row key, for example the median-variance bins of
  :func:`polars_calib.median_variance_bins`, which are not an aggregation.

How the sums are taken inside one group (every context, both engines): the rows are
packed into one list per group (``implode``) and evaluated in ``list.eval``, where
the cell (its dense rank among the group's cells) times K plus the class is one
elementwise window key, as in :func:`polars_calib._finish.keyed_binned_error`.
"""

from __future__ import annotations

import polars as pl

from polars_calib._exprs import IntoExpr, to_expr
from polars_calib._finish import _packed
from polars_calib._options import (
    BIN_AVERAGES,
    DISTANCES,
    SUM_TOLERANCE,
    BinAverage,
    Closed,
    Distance,
    Strategy,
    check_choice,
    check_sum_tol,
)
from polars_calib._problem import Problem, vector_problem
from polars_calib.binning import Binning

__all__ = [
    "binary_distance_error", "canonical_ece", "cell_error", "check_distance", "distance_term",
]


def check_distance(distance: object, average: object = "weighted") -> tuple[Distance, BinAverage]:
    """`distance` and `average`, checked (``TypeError`` / ``ValueError`` naming them)."""
    check_choice("distance", distance, DISTANCES)
    check_choice("average", average, BIN_AVERAGES)
    return distance, average  # type: ignore[return-value]


def distance_term(gap_sum: pl.Expr, cell_weight: pl.Expr, distance: Distance) -> pl.Expr:
    """Per (cell, class), the term whose sum over classes is ``W_b d(P_b, Y_b)``.

    The one definition of the distances: the expression sums it over a cell's
    entries, the statistics table's finisher over its class columns.

    ``gap_sum`` is ``W_b (P_bk - Y_bk)``: total variation is ``1/2 sum_k |.|``,
    cityblock ``sum_k |.|`` and the squared Euclidean distance ``sum_k (.)**2``.
    """
    if distance == "tv":
        return 0.5 * gap_sum.abs()
    if distance == "cityblock":
        return gap_sum.abs()
    return gap_sum * gap_sum / cell_weight


def cell_error(
    gap: pl.Expr,
    cells: pl.Expr,
    weight: pl.Expr | None,
    present: pl.Expr,
    distance: Distance,
    average: BinAverage,
) -> pl.Expr:
    """``ECE_d`` of the current group from per-row lists and a per-row cell key.

    `gap` is each row's list ``p - onehot(y)`` (unweighted), `cells` any key whose
    equal values make one bin (a list of component bins, or an integer), `present`
    the rows used. ``average="weighted"`` gives ``sum_b (W_b / W) d_b``,
    ``"bins"`` the plain mean of ``d_b`` over the bins with positive weight (the
    reference text's ``(1/B) sum_b``). Null when the total weight is zero.
    """
    ones = pl.lit(1.0, dtype=pl.Float64)
    w = ones if weight is None else weight
    columns = {
        "gap": pl.when(present).then(gap),
        "cell": pl.when(present).then(cells),
        "w": pl.when(present).then(w),
    }

    def exploded(fields: dict[str, pl.Expr]) -> pl.Expr:
        gap, w = fields["gap"], fields["w"]
        # A null gap (an unused row) explodes to one null, as do its other lists.
        n_classes = gap.list.len()
        width = n_classes.max()
        cell = fields["cell"].rank("dense").cast(pl.Float64)
        cls = pl.int_ranges(0, n_classes).explode().cast(pl.Float64)
        return _packed(
            {
                "key": cell.repeat_by(n_classes).explode() * width + cls,
                "cell": cell.repeat_by(n_classes).explode(),
                "gap": (gap * w).explode(),
                "w": (w / width.cast(pl.Float64)).repeat_by(n_classes).explode(),
            },
            finish,
        )

    def finish(fields: dict[str, pl.Expr]) -> pl.Expr:
        key, cell = fields["key"], fields["cell"]
        first = key.is_first_distinct() & key.is_not_null()
        gap_sum = fields["gap"].sum().over(key).filter(first)
        # Each row adds w / K to each of its K entries: the cell's weight.
        cell_weight = fields["w"].sum().over(cell).filter(first)
        total = fields["w"].sum()
        used = cell_weight > 0.0
        terms = distance_term(gap_sum, cell_weight, distance).filter(used)
        if average == "weighted":
            value = terms.sum() / total
        else:
            n_cells = cell.filter(first).filter(used).n_unique()
            value = (terms / cell_weight.filter(used)).sum() / n_cells
        return pl.when(total > 0.0).then(value)

    return _packed(columns, exploded)


def _vector_cells(vectors: pl.Expr, binning: Binning) -> pl.Expr:
    """Each row's cell: the list of its components' uniform bins (the one exact rule)."""
    return vectors.list.eval(binning.value(pl.element()))


def problem_error(
    problem: Problem,
    vectors: pl.Expr,
    onehot: pl.Expr,
    bins: IntoExpr | None,
    binning: Binning | None,
    distance: Distance,
    average: BinAverage,
) -> pl.Expr:
    """``ECE_d`` of `problem`'s rows as vectors (null for a group holding a refused row)."""
    if bins is not None:
        cells = to_expr(bins, "bins")
    else:
        assert binning is not None
        if binning.strategy != "uniform":
            msg = (
                "a distance bins every component on the uniform grid: strategy must be "
                f"'uniform' (or give `bins`), got {binning.strategy!r}"
            )
            raise ValueError(msg)
        cells = _vector_cells(vectors, binning)
    error = cell_error(vectors - onehot, cells, problem.weight, problem.present, distance, average)
    return pl.when(~problem.invalid).then(error)


def binary_distance_error(
    problem: Problem, binning: Binning | None, bins: IntoExpr | None, distance: Distance
) -> pl.Expr:
    """``ECE_d`` of a binary problem as the vectors ``[1 - p, p]`` against ``[1 - y, y]``.

    Uniform cells bin both components, as CalibrationErrors.jl does with 2-vectors: a
    ``p`` on an edge (0.3 with 10 bins) and ``1 - p`` (0.7, also on an edge) fall in
    bins that no other ``p`` of their bin shares, so that row gets a cell of its own.
    """
    p, y = problem.prob, problem.label
    vectors = pl.concat_list([1.0 - p, p])
    onehot = pl.concat_list([1.0 - y, y])
    return problem_error(problem, vectors, onehot, bins, binning, distance, "weighted")


def canonical_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    distance: Distance = "tv",
    average: BinAverage = "weighted",
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
        ``"weighted"`` (default): bins weighted by their share of the rows;
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
    distance, average = check_distance(distance, average)
    problem = vector_problem(prob, label, weight, check_sum_tol(sum_tol), "classwise")
    error = problem_error(problem, problem.prob, problem.label, bins, binning, distance, average)
    name = to_expr(prob, "prob").meta.output_name(raise_if_undetermined=False)
    return error if name is None else error.alias(name)
