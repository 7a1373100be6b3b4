"""The canonical (full) multi-class calibration error: binned ECE with a distance.

``ECE_d = sum_b (W_b / W) d(P_b, Y_b)``: the rows are binned by their whole
probability vector, each bin ``b`` holding total weight ``W_b`` (its row count when
unweighted), mean prediction vector ``P_b`` and mean one-hot outcome ``Y_b``, and
``d`` is a distance on the simplex (Widmann, Lindsten and Zachariah, 2019;
CalibrationErrors.jl's ``ECE``). Bins are

* ``"uniform"``: the cells of the K-dimensional grid, each component binned by the
  package's one exact rule (:meth:`polars_calib._core.binning.Binning.value`); a cell is
  the list of its components' bin indices, and only the cells holding rows exist
  (grouped by that list, so K = 1000 classes never make ``B**K`` cells);
* given bins (``bins=``): any per-row key, for example the median-variance bins of
  :func:`polars_calib.median_variance_bins`, which are not an aggregation.

How the sums are taken inside one group (every context, both engines): the rows are
packed into one list per group (``implode``) and evaluated in ``list.eval``, where
the cell (its dense rank among the group's cells) times K plus the class is one
elementwise window key, as in :func:`polars_calib._table.bin_sums.keyed_binned_error`.
"""

from __future__ import annotations

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import BIN_AVERAGES, DISTANCES, BinAverage, Distance, check_choice
from polars_calib._core.problem import Problem
from polars_calib._table.bin_sums import _packed


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
    # (g / W) g, not g**2 / W: the square of a sum of large weights overflows.
    return gap_sum / cell_weight * gap_sum


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
