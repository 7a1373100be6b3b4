"""Probability vectors in frame form: the multi-class reductions as statistics tables.

The frame functions (:func:`polars_calib.summary`, :func:`polars_calib.reliability`)
reduce probability vectors to binary problems exactly as the multi-class expressions
of :mod:`polars_calib.multiclass` do, and bin them with the one bin rule of
:class:`~polars_calib.Binning`:

* ``"confidence"``: one problem per row, the largest probability against whether its
  arg-max is the label;
* ``"top_label"``: the same, keyed by the predicted class;
* ``"classwise"``: one problem per (row, class), ``p_j`` against ``label == j``,
  keyed by the class. The vectors are exploded to one row per (row, class) in the
  query itself, so the streaming engine processes them in chunks and the
  per-(class, bin) sums are one hash aggregation.

The statistics table holds the binary sums per (group[, class], bin) and, beside
them, the group's sums over rows (confidence, accuracy, the multi-class Brier and
log-loss terms); both are aggregations of one query, so a summary reads the data
once.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_calib.binning import Binning
from polars_calib.stats import binary_outcomes, calibration_error, log_loss_term

REDUCTIONS = ("confidence", "top_label", "classwise")


def reduced_problem(
    lf: pl.LazyFrame, prob: str, label: str, weight: str | None, keys: list[str], reduction: str
) -> tuple[pl.LazyFrame, list[str]]:
    """Validated probability vectors as binary problems in the `prob` and `label` columns.

    Returns the frame and its group keys: `keys`, plus ``class`` for the top-label and
    classwise reductions (the predicted class, or the class of the exploded entry).
    Rows with a null vector, label or weight keep a null in the problem, which
    :func:`~polars_calib.stats.binary_outcomes` then ignores.
    """
    vectors = pl.col(prob).cast(pl.List(pl.Float64))
    true_class = pl.col(label).cast(pl.Int64, strict=False)
    if reduction == "classwise":
        columns = [*keys, prob, label, *([] if weight is None else [weight])]
        exploded = lf.select(
            *columns, pl.int_ranges(0, vectors.list.len()).alias("class")
        ).with_columns(vectors).explode(prob, "class")
        correct = (true_class == pl.col("class")).cast(pl.Float64)
        return exploded.with_columns(correct.alias(label)), [*keys, "class"]
    # Confidence and correctness exactly as the multi-class expressions define them.
    predicted = vectors.list.arg_max().cast(pl.Int64)
    lf = lf.with_columns(
        vectors.list.max().alias(prob),
        (predicted == true_class).cast(pl.Float64).alias(label),
        predicted.alias("class"),
    )
    if reduction == "top_label":
        return lf, [*keys, "class"]
    return lf.drop("class"), keys


def _used(prob: str, label: str, weight: str | None) -> pl.Expr:
    """The rows whose vector, label and weight are all present."""
    used = pl.col(prob).is_not_null() & pl.col(label).is_not_null()
    return used if weight is None else used & pl.col(weight).is_not_null()


def reduced_statistics(
    lf: pl.LazyFrame,
    prob: str,
    label: str,
    weight: str | None,
    keys: list[str],
    binning: Binning,
    reduction: str,
    metrics: Sequence[str] = (),
) -> pl.LazyFrame:
    """Sums per (group[, class], bin) of validated probability vectors.

    One row per group, class (top-label and classwise) and non-empty bin, sorted:
    the keys, ``class``, ``bin``, the binary problem's ``count``, ``weight``,
    ``sum_p`` and ``sum_y``, then the group's row sums (see :func:`_row_sums`),
    repeated on each of its rows. The Brier and log-loss sums are only computed
    when `metrics` asks for them.
    """
    if reduction == "classwise" and binning.strategy == "uniform":
        binned, group = _classwise_sums(lf, prob, label, weight, keys, binning), [*keys, "class"]
    else:
        binned, group = _problem_sums(lf, prob, label, weight, keys, binning, reduction)
    rows = _row_sums(lf, prob, label, weight, keys, metrics)
    joined = binned.join(rows, on=keys, how="left", nulls_equal=True) if keys else (
        binned.join(rows, how="cross")
    )
    return joined.sort(*group, "bin", nulls_last=True)


def _problem_sums(
    lf: pl.LazyFrame,
    prob: str,
    label: str,
    weight: str | None,
    keys: list[str],
    binning: Binning,
    reduction: str,
) -> tuple[pl.LazyFrame, list[str]]:
    """Binary sums per (group[, class], bin) of the reduction's problem, and its keys."""
    problem, group = reduced_problem(lf, prob, label, weight, keys, reduction)
    outcomes = binary_outcomes(prob, label, weight)
    p, y = outcomes.prob, outcomes.label
    bins = binning.index(p)
    if binning.strategy == "quantile" and group:
        bins = bins.over(group)
    binned = (
        problem.filter(p.is_not_null())
        .with_columns(bins.alias("bin"))
        .group_by(*group, "bin")
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            outcomes.total_weight().alias("weight"),
            outcomes.weighted(p).sum().alias("sum_p"),
            outcomes.weighted(y).sum().alias("sum_y"),
        )
    )
    return binned, group


def _classwise_sums(
    lf: pl.LazyFrame,
    prob: str,
    label: str,
    weight: str | None,
    keys: list[str],
    binning: Binning,
) -> pl.LazyFrame:
    """Classwise sums per (group, class, uniform bin), the outcomes kept off the entries.

    The label is 1 in one entry of each row: the entries carry only ``p_j`` and ``j``
    (count, weight and ``sum_p`` per class and bin), and ``sum_y`` comes from one
    entry per row, the true class's, binned alike. This halves the per-entry work of
    the exploded problem; quantile bins cannot use it (their edges depend on all of
    a class's entries).
    """
    used = lf.filter(_used(prob, label, weight))
    w = None if weight is None else pl.col(weight).cast(pl.Float64)
    weights = [] if w is None else [w]
    p = pl.col(prob)
    # Out-of-range entries only occur in data the validation refuses; keep NaN and
    # huge values away from the integer cast of the bin rule.
    bins = binning.index(pl.when(p.is_between(0.0, 1.0)).then(p)).alias("bin")
    entries = (
        used.select(
            *keys, *weights, p.cast(pl.List(pl.Float64)),
            pl.int_ranges(0, p.cast(pl.List(pl.Float64)).list.len()).alias("class"),
        )  # fmt: skip
        .explode(prob, "class")
        .group_by(*keys, "class", bins)
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            (pl.len().cast(pl.Float64) if w is None else w.sum()).alias("weight"),
            (p if w is None else p * w).sum().alias("sum_p"),
        )
    )
    true_class = pl.col(label).cast(pl.Int64, strict=False)
    true_prob = p.cast(pl.List(pl.Float64)).list.get(true_class, null_on_oob=True)
    outcomes = (
        used.group_by(*keys, true_class.alias("class"), binning.index(
            pl.when(true_prob.is_between(0.0, 1.0)).then(true_prob)).alias("bin")
        )
        .agg((pl.len().cast(pl.Float64) if w is None else w.sum()).alias("sum_y"))
    )  # fmt: skip
    on = [*keys, "class", "bin"]
    return entries.join(outcomes, on=on, how="left", nulls_equal=True).with_columns(
        pl.col("sum_y").fill_null(0.0)
    )


def _row_sums(
    lf: pl.LazyFrame,
    prob: str,
    label: str,
    weight: str | None,
    keys: list[str],
    metrics: Sequence[str],
) -> pl.LazyFrame:
    """Per group, sums over the rows (not the binary problems) of the vectors.

    ``rows`` and ``row_weight`` (count and total weight of the rows used), and the
    weighted sums ``row_confidence`` (largest probability), ``row_correct`` (arg-max
    equals the label), and when asked ``row_squared_error`` and ``row_log_loss``
    (the multi-class Brier and log-loss terms, as :func:`polars_calib.brier` and
    :func:`polars_calib.log_loss` define them).
    """
    vectors = pl.col(prob).cast(pl.List(pl.Float64))
    true_class = pl.col(label).cast(pl.Int64, strict=False)
    true_prob = vectors.list.get(true_class, null_on_oob=True)
    w = None if weight is None else pl.col(weight).cast(pl.Float64)

    def total(term: pl.Expr) -> pl.Expr:
        return (term if w is None else term * w).sum()

    correct = (vectors.list.arg_max().cast(pl.Int64) == true_class).cast(pl.Float64)
    sums = [
        pl.len().cast(pl.Int64).alias("rows"),
        (pl.len().cast(pl.Float64) if w is None else w.sum()).alias("row_weight"),
        total(vectors.list.max()).alias("row_confidence"),
        total(correct).alias("row_correct"),
    ]
    if "brier" in metrics:
        # sum_c (p_c - [c = y])^2 = sum_c p_c^2 - 2 p_y + 1
        squares = vectors.list.eval(pl.element() * pl.element()).list.sum()
        sums.append(total(squares - 2.0 * true_prob + 1.0).alias("row_squared_error"))
    if "log_loss" in metrics:
        sums.append(total(log_loss_term(true_prob, pl.lit(1.0))).alias("row_log_loss"))
    used = lf.filter(_used(prob, label, weight))
    return used.group_by(keys).agg(sums) if keys else used.select(sums)


_ALL = "__polars_calib_all__"


def finish_reduced(
    stats: pl.LazyFrame, keys: list[str], metrics: list[str], reduction: str
) -> pl.LazyFrame:
    """Metrics per group from a reduced statistics table (see :func:`reduced_statistics`).

    The binned metrics are finished per class, then averaged over the classes with
    positive weight (``ece``, ``rmsce``) or maximised (``mce``); ``count``,
    ``mean_predicted`` (the mean confidence), ``observed`` (the accuracy), ``brier``
    and ``log_loss`` come from the row sums.
    """
    group = keys or [_ALL]
    if not keys:
        stats = stats.with_columns(pl.lit(True).alias(_ALL))
    per_class = group if reduction == "confidence" else [*group, "class"]
    total = pl.col("weight").sum()
    gap_sum = pl.col("sum_y") - pl.col("sum_p")
    row_sums = [name for name in stats.collect_schema().names() if name.startswith("row")]
    classes = stats.group_by(per_class).agg(
        pl.col(row_sums).first(),
        calibration_error(gap_sum, pl.col("weight"), total, "l1").alias("ece"),
        calibration_error(gap_sum, pl.col("weight"), total, "l2").alias("rmsce"),
        calibration_error(gap_sum, pl.col("weight"), total, "max").alias("mce"),
    )
    weight = pl.col("row_weight")
    per_row = {
        "mean_predicted": "row_confidence",
        "observed": "row_correct",
        "brier": "row_squared_error",
        "log_loss": "row_log_loss",
    }
    reduced = {"ece": pl.col("ece").mean(), "rmsce": pl.col("rmsce").mean(),
               "mce": pl.col("mce").max()}  # fmt: skip
    names = ["mean_predicted", "observed", *metrics]
    return (
        classes.group_by(group)
        .agg(pl.col(row_sums).first(), *(reduced[name].alias(name) for name in reduced))
        .with_columns(
            pl.col("rows").alias("count"),
            *(pl.when(weight > 0.0).then(pl.col(column) / weight).alias(name)
              for name, column in per_row.items() if name in names),
        )  # fmt: skip
        .sort(group, nulls_last=True)
        .select(*keys, "count", *names)
    )
