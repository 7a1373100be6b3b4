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
from polars_calib.multiclass import _brier_term, _confidence, vector_outcomes
from polars_calib.stats import binary_outcomes, calibration_error, log_loss_term

REDUCTIONS = ("confidence", "top_label", "classwise")

# Every vector is valid by the time these queries run (the frame functions validate
# in the same run and raise before any result is used), so the tolerance of the
# masks below only keeps the arithmetic of a bad row away from the bin rule.
_ANY_SUM = 1.0


def reduced_problem(
    lf: pl.LazyFrame, prob: str, label: str, weight: str | None, keys: list[str], reduction: str
) -> tuple[pl.LazyFrame, list[str]]:
    """Validated probability vectors as binary problems in the `prob` and `label` columns.

    Returns the frame and its group keys: `keys`, plus ``class`` for the top-label and
    classwise reductions (the predicted class, or the class of the exploded entry).
    """
    if reduction == "classwise":
        exploded = _exploded(lf, prob, label)
        correct = (pl.col(label).cast(pl.Int64) == pl.col("class")).cast(pl.Float64)
        return exploded.with_columns(correct.alias(label)), [*keys, "class"]
    # Confidence and correctness exactly as the multi-class expressions define them.
    outcomes = _confidence(vector_outcomes(prob, label, weight, _ANY_SUM))
    lf = lf.with_columns(
        outcomes.prob.alias(prob), outcomes.label.alias(label), _predicted(prob).alias("class")
    )
    if reduction == "top_label":
        return lf, [*keys, "class"]
    return lf.drop("class"), keys


def _predicted(prob: str) -> pl.Expr:
    """The arg-max of each vector (first maximal index on ties), Int64."""
    return pl.col(prob).cast(pl.List(pl.Float64)).list.arg_max().cast(pl.Int64)


def _exploded(lf: pl.LazyFrame, prob: str, label: str) -> pl.LazyFrame:
    """One row per (row, class): `prob` holds ``p_j``, ``class`` holds ``j`` (Int64)."""
    vectors = pl.col(prob).cast(pl.List(pl.Float64))
    return lf.with_columns(
        vectors, pl.int_ranges(0, vectors.list.len()).alias("class")
    ).explode(prob, "class")


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
    rows = _row_sums(lf, prob, label, weight, keys, metrics)
    joined = binned.join(rows, on=keys, how="left", nulls_equal=True) if keys else (
        binned.join(rows, how="cross")
    )
    return joined.sort(*group, "bin", nulls_last=True)


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
    (the multi-class Brier and log-loss terms).
    """
    vectors = vector_outcomes(prob, label, weight, _ANY_SUM)
    outcomes = _confidence(vectors)
    true_prob = vectors.prob.list.get(vectors.label, null_on_oob=True)
    sums = [
        pl.len().cast(pl.Int64).alias("rows"),
        outcomes.total_weight().alias("row_weight"),
        outcomes.weighted(outcomes.prob).sum().alias("row_confidence"),
        outcomes.weighted(outcomes.label).sum().alias("row_correct"),
    ]
    if "brier" in metrics:
        term = _brier_term(vectors, true_prob)
        sums.append(outcomes.weighted(term).sum().alias("row_squared_error"))
    if "log_loss" in metrics:
        term = log_loss_term(true_prob, pl.lit(1.0))
        sums.append(outcomes.weighted(term).sum().alias("row_log_loss"))
    used = lf.filter(outcomes.prob.is_not_null())
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
