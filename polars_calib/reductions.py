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

The statistics table holds, per (group[, class], bin), the binary problem's sums
and the sums over rows (confidence, accuracy, the multi-class Brier and log-loss
terms), all in one aggregation over one pass: a summary reads the data once and
the streaming engine keeps its memory to a few chunks of exploded rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_calib.binning import Binning
from polars_calib.stats import EPS, calibration_error, grouped

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
        carried = [pl.col(label), *([] if weight is None else [pl.col(weight)])]
        exploded = _exploded(lf, prob, keys, carried, pl.Int64)
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


def _exploded(
    lf: pl.LazyFrame,
    prob: str,
    keys: list[str],
    carried: list[pl.Expr],
    dtype: type[pl.Int32] | type[pl.Int64],
) -> pl.LazyFrame:
    """One row per (row, class): the keys, `carried`, `prob` holding ``p_j`` (Float64) and
    ``class`` holding ``j`` (of `dtype`); other columns are not repeated."""
    vectors = pl.col(prob).cast(pl.List(pl.Float64))
    classes = pl.int_ranges(0, vectors.list.len(), dtype=dtype).alias("class")
    return lf.select(*keys, *carried, vectors.alias(prob), classes).explode(prob, "class")


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
    """Sums per (group[, class], bin) of validated probability vectors, in one aggregation.

    One row per group, class (top-label and classwise) and non-empty bin, sorted:
    the keys, ``class``, ``bin``; the binary problem's ``count``, ``weight``,
    ``sum_p`` and ``sum_y``; and sums over the rows whose entry this is (every row
    once: in classwise problems, through its predicted class's entry): ``rows``,
    ``row_weight``, ``row_confidence`` (largest probability), ``row_correct``
    (arg-max equals the label) and, when `metrics` asks for them,
    ``row_squared_error`` and ``row_log_loss`` (the multi-class Brier and log-loss
    terms of :func:`polars_calib.brier` and :func:`polars_calib.log_loss`). Every
    column adds up over partitions of the rows.

    One aggregation over one pass: a second branch over the same source (a join of
    two aggregations) would make Polars cache the whole source in memory.
    """
    vectors = pl.col(prob).cast(pl.List(pl.Float64))
    # Int32 classes: a quarter less to repeat over every (row, class) entry.
    true_class = pl.col(label).cast(pl.Int32, strict=False)
    predicted = vectors.list.arg_max().cast(pl.Int32)
    weights = [] if weight is None else [pl.col(weight).cast(pl.Float64)]
    rows = lf.filter(_used(prob, label, weight))
    group = [*keys, "class"]
    if reduction == "classwise":
        carried = [*weights, true_class.alias("_label"), predicted.alias("_predicted")]
        rows = _exploded(rows, prob, keys, carried, pl.Int32)
        p = pl.col(prob)
        y = (pl.col("_label") == pl.col("class")).cast(pl.Float64)
        # Each row counts once towards the row sums: through its predicted class's entry.
        once: pl.Expr | None = (pl.col("_predicted") == pl.col("class")).cast(pl.Float64)
        terms = {"row_confidence": p * once, "row_correct": y * once}
        squared_error = (p - y) * (p - y)  # summed over a row's classes: its Brier term
        true_log_loss = y * -p.clip(EPS, 1.0 - EPS).log()
    else:
        p = vectors.list.max()
        y = (predicted == true_class).cast(pl.Float64)
        once = None
        terms = {"row_confidence": p, "row_correct": y}
        true_prob = vectors.list.get(true_class, null_on_oob=True)
        # sum_c (p_c - [c = y])^2 = sum_c p_c^2 - 2 p_y + 1
        squares = vectors.list.eval(pl.element() * pl.element()).list.sum()
        squared_error = squares - 2.0 * true_prob + 1.0
        true_log_loss = -true_prob.clip(EPS, 1.0 - EPS).log()
        if reduction == "top_label":
            rows = rows.with_columns(predicted.alias("class"))
        else:
            group = keys
    if "brier" in metrics:
        terms["row_squared_error"] = squared_error
    if "log_loss" in metrics:
        terms["row_log_loss"] = true_log_loss
    w = None if weight is None else pl.col(weight).cast(pl.Float64)

    def total(term: pl.Expr) -> pl.Expr:
        return (term if w is None else term * w).sum()

    ones = pl.len().cast(pl.Float64) if w is None else w.sum()
    # Out-of-range probabilities only occur in data the validation refuses (raised
    # before any result is used); the bin rule maps them to a bin or null, no error.
    bins = binning.index(p)
    if binning.strategy == "quantile" and group:
        bins = bins.over(group)
    sums = [
        pl.len().cast(pl.Int64).alias("count"),
        ones.alias("weight"),
        total(p).alias("sum_p"),
        total(y).alias("sum_y"),
        (pl.len() if once is None else once.sum()).cast(pl.Int64).alias("rows"),
        (ones if once is None else total(once)).alias("row_weight"),
        *(total(term).alias(name) for name, term in terms.items()),
    ]
    return (
        rows.with_columns(bins.alias("bin"))
        .group_by(*group, "bin")
        .agg(sums)
        .sort(*group, "bin", nulls_last=True)
    )


def finish_reduced(
    stats: pl.LazyFrame, keys: list[str], metrics: list[str], reduction: str
) -> pl.LazyFrame:
    """Metrics per group from a reduced statistics table (see :func:`reduced_statistics`).

    The binned metrics are finished per class, then averaged over the classes with
    positive weight (``ece``, ``rmsce``) or maximised (``mce``); ``count``,
    ``mean_predicted`` (the mean confidence), ``observed`` (the accuracy), ``brier``
    and ``log_loss`` come from the row sums.
    """
    stats, group = grouped(stats, keys)
    per_class = group if reduction == "confidence" else [*group, "class"]
    total = pl.col("weight").sum()
    gap_sum = pl.col("sum_y") - pl.col("sum_p")
    row_sums = [name for name in stats.collect_schema().names() if name.startswith("row")]
    classes = stats.group_by(per_class).agg(
        pl.col(row_sums).sum(),
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
        .agg(pl.col(row_sums).sum(), *(reduced[name].alias(name) for name in reduced))
        .with_columns(
            pl.col("rows").alias("count"),
            *(pl.when(weight > 0.0).then(pl.col(column) / weight).alias(name)
              for name, column in per_row.items() if name in names),
        )  # fmt: skip
        .sort(group, nulls_last=True)
        .select(*keys, "count", *names)
    )
