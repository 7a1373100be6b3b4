"""Finishers: binned calibration errors, weighted means, tests and decompositions from sums.

Every binned metric is a function of three numbers per bin: its total weight ``W_b``
(the row count when unweighted) and the weighted sums of predictions ``P_b`` and of
outcomes ``Y_b``. :func:`calibration_error` turns per-bin series of them into ECE,
RMSCE or MCE; the expression forms here build those series inside the current group
from a :class:`~polars_calib._core.problem.Problem`, and the frame forms
(:mod:`polars_calib._table`) read them from a statistics table.

The tests and decompositions of :mod:`polars_calib._metrics.diagnostics` are finishers of the
same kind over :class:`BinSums` (per-bin series, with ``sum w p**2`` and ``sum w p y``
where needed) or over row sums: :func:`finish_binned` runs them inside one group, and
``statistics.diagnostic_parts`` on a statistics table.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.options import Alternative, Norm, Score, TopLabelAverage
from polars_calib._core.problem import EPS, Problem
from polars_calib._core.special import chi2_sf, normal_cdf, normal_sf

__all__ = [
    "BinSums",
    "binned_error",
    "brier_decomposition",
    "calibration_error",
    "calibration_refinement",
    "chi2_p_value",
    "debiased_ece",
    "debiased_ece_squared",
    "finish_binned",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "in_group",
    "keyed_binned_error",
    "normal_p_value",
    "per_bin",
    "row_mean",
    "row_sum",
    "spiegelhalter_z",
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
        # (G / W_b) G, not G**2 / W_b: the square of large weights' sums overflows
        # (1e200) and of small ones underflows (1e-200); G / W_b is at most 1.
        value = ((gap_sum / bin_weight * gap_sum).filter(has_weight).sum() / total_weight).sqrt()
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
    :data:`~polars_calib._core.binning.MAX_MASKED_BINS` sum each bin through its mask
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
            # l2: (G / W_b) G, not G**2 / W_b (see calibration_error).
            mean_gap = gap_sum / bin_weight
            term = mean_gap * gap_sum if norm == "l2" else mean_gap.abs()
            terms.append(pl.when(bin_weight > 0.0).then(term))
        if norm == "l2":
            value = (pl.sum_horizontal(terms) / total).sqrt()
        else:
            value = pl.max_horizontal(terms)
    # Not fill_nan: it makes Polars evaluate the aggregation several times slower.
    return pl.when(total > 0.0).then(value)


def row_mean(problem: Problem, term: str) -> pl.Expr:
    """Weighted mean of ``problem.terms[term]`` over the used rows of the current group.

    Null for a group holding a refused row or with no used row. The rows used are
    counted from ``present`` alone, not from the term or the probability: without
    common-subexpression elimination in aggregations, every reference computes its
    expression again (a Gaussian PIT is an ``erfc`` a row).
    """
    value = problem.terms[term]
    if problem.weight is None:
        total, weighted_sum = problem.present.sum().cast(pl.Float64), value.sum()
    else:
        total = pl.when(problem.present).then(problem.weight).sum()
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


# --------------------------------------------------------------------------
# Tests and decompositions (polars_calib._metrics.diagnostics): the same math for the
# expressions (per-bin series built inside one group) and the statistics table
# (per-bin series read from its rows).
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class BinSums:
    """Aligned per-bin series of one group: the statistics table's columns of a group.

    ``count`` rows, ``weight`` ``W_b``, ``sum_p`` ``P_b``, ``sum_y`` ``Y_b``, and the
    optional ``sum_squared_p`` (``S_b = sum w p**2``) and ``sum_p_y`` (``C_b = sum w p y``).
    """

    count: pl.Expr
    weight: pl.Expr
    sum_p: pl.Expr
    sum_y: pl.Expr
    sum_squared_p: pl.Expr | None = None
    sum_p_y: pl.Expr | None = None

    @classmethod
    def of_columns(cls, binned: pl.Expr, columns: Collection[str]) -> BinSums:
        """The series of a statistics table's rows where `binned` holds."""

        def column(name: str) -> pl.Expr | None:
            return pl.col(name).filter(binned) if name in columns else None

        return cls(
            pl.col("count").filter(binned).cast(pl.Float64),
            pl.col("weight").filter(binned),
            pl.col("sum_p").filter(binned),
            pl.col("sum_y").filter(binned),
            column("sum_squared_p"),
            column("sum_p_y"),
        )


def finish_binned(
    problem: Problem,
    binning: Binning | None,
    finisher: Callable[[BinSums], pl.Expr],
    terms: Sequence[str] = (),
) -> pl.Expr:
    """Run a table finisher on the per-bin sums of `problem` in the current group.

    The sums are those of a statistics table (``count``, ``weight``, ``sum_p``,
    ``sum_y`` and ``sum_<term>`` for `terms` among ``squared_p`` and ``p_y``), over
    `binning`'s bins (``None``: one bin per distinct probability):

    * uniform bins up to ``MAX_MASKED_BINS``: one filtered sum per bin and series, as
      `_masked_error` (no index, no window: several times faster than a window;
      filtered, so that a rolling window leaves no residue in an empty bin);
    * other uniform bins, and distinct values: a window over the bin (:func:`per_bin`);
    * quantile bins: the rows packed once, the group's edges computed once inside,
      then windows over the bin (a bin index referenced in every filtered sum would
      compute the quantiles again each time).

    The series are then packed for the finisher (:func:`in_group`).
    """
    present = problem.present
    ones = pl.when(present).then(1.0)
    rows = {
        "count": ones,
        "weight": ones if problem.weight is None else pl.when(present).then(problem.weight),
        "sum_p": pl.when(present).then(problem.weighted(problem.prob)),
        "sum_y": pl.when(present).then(problem.weighted(problem.label)),
        **{f"sum_{t}": pl.when(present).then(problem.weighted(problem.terms[t])) for t in terms},
    }

    def finish(series: dict[str, pl.Expr]) -> pl.Expr:
        return finisher(BinSums(**series))

    prob: pl.Expr = pl.when(present).then(problem.prob)
    if binning is not None and binning.masked:
        return in_group(_masked_sums(problem, binning, terms), finish)
    by_key = Binning(1, "uniform")  # per_bin's window over any elementwise key
    if binning is None or binning.strategy == "uniform":
        bins = prob if binning is None else binning.index(prob)
        series = {name: per_bin(value, bins, by_key) for name, value in rows.items()}
        return in_group(series, finish)
    quantile = binning
    key = "__bin"

    def with_bins(fields: dict[str, pl.Expr]) -> pl.Expr:
        return _packed({**fields, key: quantile.index(fields["__prob"])}, sums)

    def sums(fields: dict[str, pl.Expr]) -> pl.Expr:
        bins = fields[key]
        return _packed({name: per_bin(fields[name], bins, by_key) for name in rows}, finish)

    return _packed({**rows, "__prob": prob}, with_bins)


def _masked_sums(problem: Problem, binning: Binning, terms: Sequence[str]) -> dict[str, pl.Expr]:
    """Per-bin sums through the bins' masks, with the cheapest row values.

    No mask repeats the ``present`` test (aggregations share no subexpression: it
    would be computed again for every bin and series); nulls propagate instead, as
    in `_masked_error`: a null probability is in no bin, and ``g = w (p - y)`` is null
    exactly on the other rows not used, so the count is that of ``g``, the weight
    that of the rows where ``g`` is, ``sum_y`` sums ``w y`` (null where y or w is)
    and ``sum_p = sum_y + sum g`` (equal to ``sum w p`` up to rounding).
    """
    p, y, w = problem.prob, problem.label, problem.weight
    gap = problem.weighted(p - y)
    masks = binning.masks(p)

    def per_bin_sums(total: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
        return pl.concat_list([total(mask) for mask in masks]).explode()

    def summed(value: pl.Expr) -> Callable[[pl.Expr], pl.Expr]:
        return lambda mask: value.filter(mask).sum()

    def counted(mask: pl.Expr) -> pl.Expr:
        return gap.filter(mask).count().cast(pl.Float64)

    def gap_and_y(mask: pl.Expr) -> pl.Expr:
        return problem.weighted(y).filter(mask).sum() + gap.filter(mask).sum()

    count = per_bin_sums(counted)
    weight = count if w is None else per_bin_sums(summed(pl.when(gap.is_not_null()).then(w)))
    return {
        "count": count,
        "weight": weight,
        "sum_p": per_bin_sums(gap_and_y),
        "sum_y": per_bin_sums(summed(problem.weighted(y))),
        # A term may not read y (p**2): `+ 0 g` makes it null where g is.
        **{
            f"sum_{t}": per_bin_sums(summed(problem.weighted(problem.terms[t]) + gap * 0.0))
            for t in terms
        },
    }


def in_group(
    columns: Mapping[str, pl.Expr], finisher: Callable[[dict[str, pl.Expr]], pl.Expr]
) -> pl.Expr:
    """Run `finisher` on `columns` (per-bin series, or scalars) of the current group.

    Aggregations get no common-subexpression elimination, and a finisher reads each
    series many times (a p-value reads its statistic a dozen times): each reference
    would compute the sums again, and the plan grows with every reference. Packed
    into one list (:func:`_packed`), each series is computed once and the finisher
    reads it as a field, in every context (select, group_by, over, streaming).
    """
    return _packed(columns, finisher)


def row_sum(problem: Problem, term: str) -> pl.Expr:
    """The weighted sum of ``problem.terms[term]`` over the used rows of the current group."""
    return pl.when(problem.present).then(problem.weighted(problem.terms[term])).sum()


def spiegelhalter_z(numerator: pl.Expr, variance: pl.Expr) -> pl.Expr:
    """Spiegelhalter's Z from ``sum w (y - p)(1 - 2p)`` and ``sum w (1 - 2p)**2 p (1 - p)``.

    Null when the variance under calibration is 0 (no row, or every p in {0, 1/2, 1}).
    """
    return pl.when(variance > 0.0).then(numerator / variance.sqrt())


def normal_p_value(z: pl.Expr, alternative: Alternative) -> pl.Expr:
    """The p-value of a standard normal statistic `z` under `alternative`, elementwise.

    ``erfc`` reads its argument some thirty times, and a plan grows with every copy:
    pass a column or a packed field (:func:`in_group`), not a computation.
    """
    if alternative == "greater":
        return normal_sf(z)
    if alternative == "less":
        return normal_cdf(z)
    return (2.0 * normal_sf(z.abs())).clip(None, 1.0)


def chi2_p_value(statistic: pl.Expr, df: pl.Expr) -> pl.Expr:
    """``P(chi2_df > statistic)``, null where ``df < 1``; elementwise, as
    :func:`normal_p_value`."""
    return pl.when(df >= 1).then(chi2_sf(statistic, df))


def _degenerate(expected: pl.Expr, total: pl.Expr) -> pl.Expr:
    """Whether an expected count is zero (up to the rounding of the sums it comes from)."""
    return expected <= total * 1e-12


def hosmer_lemeshow(bins: BinSums) -> tuple[pl.Expr, pl.Expr]:
    """The Hosmer-Lemeshow statistic and its degrees of freedom (non-empty bins - 2).

    Per non-empty bin, ``(O - E)**2 / E + (O - E)**2 / (n - E)`` with ``O = Y_b``,
    ``E = P_b``, ``n = W_b``. A half whose expected count is 0 (all predictions 0, or
    all 1, in the bin) contributes 0 when its observed count is 0 too, and makes the
    statistic infinite otherwise (an event given probability 0 happened). Null when
    the group has no weight.
    """
    n, observed, expected = bins.weight, bins.sum_y, bins.sum_p
    filled = n > 0.0
    gap = observed - expected
    no_event, no_non_event = _degenerate(expected, n), _degenerate(n - expected, n)
    matched = gap.abs() <= n * 1e-12
    term = (
        pl.when(~filled | matched)
        .then(0.0)
        .when(no_event | no_non_event)
        .then(float("inf"))
        .otherwise(gap / expected * gap + gap / (n - expected) * gap)
    )
    statistic = pl.when(n.sum() > 0.0).then(term.sum())
    df = filled.cast(pl.Int64).sum() - 2
    return statistic, df


def hosmer_lemeshow_p(bins: BinSums) -> pl.Expr:
    """Chi-square survival of :func:`hosmer_lemeshow`; null with fewer than 3 non-empty bins."""
    statistic, df = hosmer_lemeshow(bins)

    def p_value(packed: dict[str, pl.Expr]) -> pl.Expr:
        return chi2_p_value(packed["statistic"], packed["df"])

    # Packed: the chi-square tail reads its arguments a dozen times.
    return in_group({"statistic": statistic, "df": df}, p_value)


def debiased_ece_squared(bins: BinSums) -> pl.Expr:
    """Kumar, Liang & Ma's debiased squared ECE (frequency weights).

    ``sum_b (W_b / W) [(ybar_b - pbar_b)**2 - ybar_b (1 - ybar_b) / (W_b - 1)]``; a
    bin with ``W_b <= 1`` (one row) contributes its plain term. Null when the group
    has no weight.
    """
    w = bins.weight
    total = w.sum()
    filled = w > 0.0
    observed = bins.sum_y / w
    gap = observed - bins.sum_p / w
    correction = pl.when(w > 1.0).then(observed * (1.0 - observed) / (w - 1.0))
    term = (w * (gap * gap - correction.fill_null(0.0))).filter(filled)
    return pl.when(total > 0.0).then(term.sum() / total)


def debiased_ece(bins: BinSums) -> pl.Expr:
    """The square root of :func:`debiased_ece_squared`, clipped at 0."""
    return debiased_ece_squared(bins).clip(0.0, None).sqrt()


def brier_decomposition(bins: BinSums) -> pl.Expr:
    """Murphy's decomposition with Stephenson et al.'s within-bin terms, as a struct.

    ``brier = reliability - resolution + uncertainty + within_bin_variance -
    within_bin_covariance`` exactly (up to rounding); needs ``sum_squared_p`` and
    ``sum_p_y``. Null when the group has no weight.
    """
    assert bins.sum_squared_p is not None and bins.sum_p_y is not None
    w = bins.weight
    total = w.sum()
    filled = w > 0.0
    mean_p = pl.when(filled).then(bins.sum_p / w)
    mean_y = pl.when(filled).then(bins.sum_y / w)
    base_rate = bins.sum_y.sum() / total
    gap = mean_p - mean_y
    spread = mean_y - base_rate
    sums = bins.sum_squared_p - 2.0 * bins.sum_p_y + bins.sum_y
    parts = {
        "brier": sums.sum() / total,
        "reliability": (w * gap * gap).filter(filled).sum() / total,
        "resolution": (w * spread * spread).filter(filled).sum() / total,
        "uncertainty": base_rate * (1.0 - base_rate),
        "within_bin_variance": (bins.sum_squared_p - bins.sum_p * mean_p).filter(filled).sum()
        / total,
        "within_bin_covariance": 2.0
        * (bins.sum_p_y - bins.sum_y * mean_p).filter(filled).sum()
        / total,
    }
    struct = pl.struct([value.alias(name) for name, value in parts.items()])
    return pl.when(total > 0.0).then(struct)


def _entropy_term(q: pl.Expr) -> pl.Expr:
    """``q log q``, 0 at 0."""
    return pl.when(q > 0.0).then(q * q.log()).otherwise(0.0)


def calibration_refinement(bins: BinSums, score: Score) -> tuple[pl.Expr, pl.Expr]:
    """Calibration and refinement loss of `score` over the bins (Kull & Flach, 2015).

    Brier: ``sum_b (W_b / W)(pbar_b - ybar_b)**2`` and ``sum_b (W_b / W) ybar_b (1 -
    ybar_b)``; log-loss: the binary KL divergence ``KL(ybar_b || pbar_b)`` (``pbar``
    clipped to ``[eps, 1 - eps]`` as the log-loss clips p) and the binary entropy
    ``H(ybar_b)``. With one bin per distinct p they add up to the score exactly.
    Null when the group has no weight.
    """
    w = bins.weight
    total = w.sum()
    filled = w > 0.0
    mean_p = bins.sum_p / w
    mean_y = bins.sum_y / w
    if score == "brier":
        gap = mean_p - mean_y
        calibration = w * gap * gap
        refinement = w * mean_y * (1.0 - mean_y)
    else:
        clipped = mean_p.clip(EPS, 1.0 - EPS)
        entropy = -(_entropy_term(mean_y) + _entropy_term(1.0 - mean_y))
        cross = -(mean_y * clipped.log() + (1.0 - mean_y) * (1.0 - clipped).log())
        calibration = w * (cross - entropy)
        refinement = w * entropy

    def mean(value: pl.Expr) -> pl.Expr:
        return pl.when(total > 0.0).then(value.filter(filled).sum() / total)

    return mean(calibration), mean(refinement)
