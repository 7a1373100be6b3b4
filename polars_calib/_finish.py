"""Finishers: binned calibration errors and weighted means from per-bin or per-row sums.

Every binned metric is a function of three numbers per bin: its total weight ``W_b``
(the row count when unweighted) and the weighted sums of predictions ``P_b`` and of
outcomes ``Y_b``. :func:`calibration_error` turns per-bin series of them into ECE,
RMSCE or MCE; the expression forms here build those series inside the current group
from a :class:`~polars_calib._problem.Problem`, and the frame forms
(:mod:`polars_calib.statistics`) read them from a statistics table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import polars as pl

from polars_calib._options import Norm, TopLabelAverage
from polars_calib._problem import Problem
from polars_calib.binning import Binning

__all__ = [
    "binned_error",
    "calibration_error",
    "keyed_binned_error",
    "per_bin",
    "row_mean",
]


def calibration_error(
    gap_sum: pl.Expr, bin_weight: pl.Expr, total_weight: pl.Expr, norm: Norm
) -> pl.Expr:
    """Finish ECE (``l1``), RMSCE (``l2``) or MCE (``max``) from per-bin series.

    ``gap_sum`` is ``Y_b - P_b`` (or its negation: the norms ignore the sign) and
    ``bin_weight`` is ``W_b`` for each bin; ``total_weight`` is ``sum_b W_b``. Bins
    with zero weight contribute nothing; the result is null when the total is zero.
    """
    has_weight = bin_weight > 0.0
    if norm == "l1":
        value = gap_sum.abs().sum() / total_weight
    elif norm == "l2":
        value = ((gap_sum * gap_sum / bin_weight).filter(has_weight).sum() / total_weight).sqrt()
    else:
        value = (gap_sum / bin_weight).abs().filter(has_weight).max()
    return pl.when(total_weight > 0.0).then(value)


def per_bin(value: pl.Expr, bins: pl.Expr, binning: Binning) -> pl.Expr:
    """Sum of `value` in each bin of the current group, one row per bin.

    Uniform bins use a window over the bin index, a hash aggregation whose cost
    does not grow with the number of bins; it runs in every context (select, over,
    group_by, dynamic and rolling windows) and in the streaming engine. Quantile
    bins depend on the group's quantiles, and Polars only accepts elementwise
    window keys inside aggregations, so they sum one filtered bin at a time.
    """
    if binning.strategy == "uniform":
        return value.sum().over(bins).filter(bins.is_first_distinct() & bins.is_not_null())
    return pl.concat_list([value.filter(bins == k).sum() for k in range(binning.n_bins)]).explode()


def binned_error(problem: Problem, binning: Binning, norm: Norm) -> pl.Expr:
    """Binned calibration error of one (unkeyed) problem in the current group.

    Null for a group holding a refused row, and for a group with no used row or
    zero total weight. Uniform bins up to
    :data:`~polars_calib.binning.MAX_MASKED_BINS` sum each bin through its mask
    (:func:`_masked_error`); others sum over a window keyed by the bin index.
    """
    problem = problem.seen_by(binning.clip, binning.float32)
    if binning.masked:
        error = _masked_error(problem, binning, norm)
    elif binning.strategy == "quantile":
        # Packed with one constant class: the group's edges are computed once (a bin
        # index referenced in B filtered sums would compute B quantiles B times).
        prob = pl.when(problem.present).then(problem.prob)
        columns = {"prob": prob, "label": problem.label, "group": pl.lit(0, pl.Int64)}
        if problem.weight is not None:
            columns["weight"] = problem.weight
        error = _grouped_error(columns, binning, norm, "macro")
        name = problem.prob.meta.output_name(raise_if_undetermined=False)
        error = error if name is None else error.alias(name)
    else:
        prob = pl.when(problem.present).then(problem.prob)
        bins = binning.index(prob)
        # Predicted minus observed: the probability stays the expression's root, so
        # the output is named after it. Every norm ignores the sign.
        gap_sum = per_bin(problem.weighted(prob - problem.label), bins, binning)
        weight = prob.is_not_null().cast(pl.Float64) if problem.weight is None else problem.weight
        bin_weight = per_bin(pl.when(problem.present).then(weight), bins, binning)
        error = calibration_error(gap_sum, bin_weight, bin_weight.sum(), norm)
    return pl.when(~problem.invalid).then(error)


def _masked_error(problem: Problem, binning: Binning, norm: Norm) -> pl.Expr:
    """Uniform-bin error with one masked sum per bin, ``when(mask).then(p - y).sum()``.

    No bin index, no window (a hash aggregation over the rows), no masks for unused
    rows: aggregations get no common-subexpression elimination, so every repeated
    subexpression would be computed again; here each row's work is a subtraction and
    two comparisons per bin. Nulls propagate: a null probability is in no bin, a null
    label or weight makes the row's gap null, which sums and counts skip.

    ``l2`` and ``max`` divide by each bin's weight, so they sum through ``filter``:
    in rolling and dynamic windows Polars sums a ``when/then`` column by sliding
    (adding the rows that enter, subtracting those that leave), which leaves a
    residue such as 1e-17 in an empty bin; a filtered sum is computed per window.
    """
    p, w = problem.prob, problem.weight
    gap = p - problem.label
    masks = binning.masks(p)
    # The weight of the rows whose gap is present (none when unweighted: count them).
    used_weight = None if w is None else pl.when(gap.is_not_null()).then(w)
    if used_weight is None:
        weighted_gap, total = gap, gap.count().cast(pl.Float64)
    else:
        weighted_gap, total = gap * w, used_weight.sum()
    if norm == "l1":
        sums = [pl.when(mask).then(weighted_gap).sum().abs() for mask in masks]
        value = pl.sum_horizontal(sums) / total
    else:
        terms = []
        for mask in masks:
            gap_sum = weighted_gap.filter(mask).sum()
            if used_weight is None:
                bin_weight = gap.filter(mask).count().cast(pl.Float64)
            else:
                bin_weight = used_weight.filter(mask).sum()
            term = gap_sum.pow(2) if norm == "l2" else gap_sum.abs()
            terms.append(pl.when(bin_weight > 0.0).then(term / bin_weight))
        if norm == "l2":
            value = (pl.sum_horizontal(terms) / total).sqrt()
        else:
            value = pl.max_horizontal(terms)
    # Not fill_nan: it makes Polars evaluate the aggregation several times slower.
    return pl.when(total > 0.0).then(value)


def row_mean(problem: Problem, term: str) -> pl.Expr:
    """Weighted mean of ``problem.terms[term]`` over the used rows of the current group.

    Null for a group holding a refused row or with no used row. The rows used are
    counted from ``p - y``, not from the term: without common-subexpression
    elimination in aggregations, every reference to the term computes it again.
    """
    value = problem.terms[term]
    present = pl.when(problem.present).then(problem.prob - problem.label)
    if problem.weight is None:
        total, weighted_sum = present.count().cast(pl.Float64), value.sum()
    else:
        total = pl.when(present.is_not_null()).then(problem.weight).sum()
        weighted_sum = (value * problem.weight).sum()
    return pl.when(~problem.invalid & (total > 0.0)).then(weighted_sum / total)


def keyed_binned_error(
    problem: Problem, binning: Binning, norm: Norm, average: TopLabelAverage = "macro"
) -> pl.Expr:
    """Binned error per class key of `problem`, reduced over the classes.

    Each class's error is :func:`calibration_error` of its per-bin sums (bins of
    `binning` within the class: quantile edges per class). ``norm="max"`` takes the
    largest over classes; otherwise ``average="macro"`` takes the unweighted mean
    over classes with positive weight, ``"weighted"`` the mean weighted by each
    class's total weight. An exploded problem (classwise) is exploded here.
    """
    problem = problem.seen_by(binning.clip, binning.float32)
    assert problem.key is not None
    prob, label, key, weight = problem.prob, problem.label, problem.key, problem.weight
    if problem.exploded:
        # Masked after the explode: Polars fails to mask a list cast from an Array
        # (``when(...).then(array.cast(List))``) when a masked row is null.
        n_classes = problem.prob.list.len()
        prob, label, key = prob.list.explode(), label.list.explode(), key.list.explode()
        present = problem.present.repeat_by(n_classes).list.explode()
        if weight is not None:
            weight = weight.repeat_by(n_classes).list.explode()
        prob = pl.when(present).then(prob)
    else:
        prob = pl.when(problem.present).then(prob)
    columns = {"prob": prob, "label": label, "group": key}
    if weight is not None:
        columns["weight"] = weight
    error = _grouped_error(columns, binning, norm, average)
    return pl.when(~problem.invalid).then(error)


def _packed(
    columns: Mapping[str, pl.Expr], body: Callable[[dict[str, pl.Expr]], pl.Expr]
) -> pl.Expr:
    """Evaluate `body` on `columns` packed into one list per group; a scalar per group.

    Inside ``list.eval`` the packed columns are elementwise fields, so windows keyed on
    them are allowed even where the columns came from ``explode`` or a window: the
    class and the bin form one *elementwise* key ``class * n_bins + bin``, and one
    hash aggregation gives every (class, bin) sum in every context.
    """
    fields = {name: pl.element().struct.field(name) for name in columns}
    packed = pl.struct([expr.alias(name) for name, expr in columns.items()]).implode()
    return packed.list.eval(body(fields)).list.first()


def _grouped_error(
    columns: dict[str, pl.Expr], binning: Binning, norm: Norm, average: TopLabelAverage
) -> pl.Expr:
    n_bins = binning.n_bins
    by_key = Binning(n_bins, "uniform", binning.closed)  # per_bin over an elementwise key

    def keyed(fields: dict[str, pl.Expr]) -> pl.Expr:
        prob = fields["prob"]
        if binning.strategy == "uniform":
            bins = binning.index(prob)
        else:
            bins = binning.index(prob).over(fields["group"])
        return fields["group"] * n_bins + bins

    def per_group_bin(fields: dict[str, pl.Expr]) -> pl.Expr:
        key, prob, weight = fields["key"], fields["prob"], fields.get("weight")
        gap = prob - fields["label"]
        gap_sum = per_bin(gap if weight is None else gap * weight, key, by_key)
        ones = prob.is_not_null().cast(pl.Float64) if weight is None else weight
        bin_weight = per_bin(ones, key, by_key)
        group = key.filter(key.is_first_distinct() & key.is_not_null()) // n_bins
        return _packed({"gap_sum": gap_sum, "bin_weight": bin_weight, "group": group}, finish)

    def finish(fields: dict[str, pl.Expr]) -> pl.Expr:
        bin_weight, group = fields["bin_weight"], fields["group"]
        per_group = calibration_error(fields["gap_sum"], bin_weight, bin_weight.sum(), norm)
        first = group.is_first_distinct()
        per_group = per_group.over(group).filter(first)
        class_weight = bin_weight.sum().over(group).filter(first)
        if norm == "max":
            return per_group.max()
        if average == "weighted":
            used = per_group.is_not_null()
            return (per_group * class_weight).filter(used).sum() / class_weight.filter(used).sum()
        return per_group.mean()

    def with_key(fields: dict[str, pl.Expr]) -> pl.Expr:
        # Packed once more even when the key is elementwise: list.eval does not share
        # common subexpressions, and the key is used five times.
        return _packed({**fields, "key": keyed(fields)}, per_group_bin)

    return _packed(columns, with_key)
