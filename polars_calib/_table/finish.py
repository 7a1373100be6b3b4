"""Finish statistics tables: metrics, tests and decompositions per group; reliability rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar, cast

import polars as pl

from polars_calib._core.intervals import wilson_interval
from polars_calib._core.options import (
    DIAGNOSTICS,
    TOP_LABEL_AVERAGES,
    Norm,
    Score,
    TopLabelAverage,
    check_choice,
)
from polars_calib._core.problem import WEIGHT_LIMIT
from polars_calib._table import bin_sums as _finish
from polars_calib._table.bin_sums import BinSums, calibration_error
from polars_calib._table.columns import RELIABILITY, closure_columns, grouped, sum_columns

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

_NORM_OF: dict[str, Norm] = {"ece": "l1", "rmsce": "l2", "mce": "max"}

# Per-group columns of the tests whose p-values are computed from them (the special
# functions read their argument many times; a column is a cheap reference).
_Z, _HL, _HL_DF = (f"__polars_calib_{n}__" for n in ("z", "hl", "hl_df"))


def finish_metrics(
    stats: pl.LazyFrame,
    keys: list[str],
    metrics: Sequence[str],
    average: TopLabelAverage = "macro",
) -> pl.LazyFrame:
    """Metrics per group from merged statistics (one row per group, class and bin).

    Columns: the keys, ``count`` (rows used), ``refused`` (rows refused), then
    ``mean_predicted`` and ``observed`` (the weighted means of ``p`` and ``y``: for
    vector tables, the mean confidence and the accuracy), then `metrics`. A group
    holding a refused row, a bin merged from different edges, or (classwise) classes
    with different row counts gets null metrics.
    """
    schema = stats.collect_schema().names()
    stats, group = grouped(stats, keys)
    keyed = "class" in schema
    classwise = "sum_confidence" in schema
    per_class = [*group, "class"] if keyed else group
    binned = pl.col("bin").is_not_null()
    weight = pl.col("weight").filter(binned)
    total = weight.sum()
    gap = (pl.col("sum_y") - pl.col("sum_p")).filter(binned)
    row_sums = [n for n in ("sum_squared_error", "sum_log_loss") if n in schema]
    mean_sums = ["sum_confidence", "sum_correct"] if classwise else ["sum_p", "sum_y"]
    diagnostics = [m for m in metrics if m in DIAGNOSTICS]
    bins = BinSums.of_columns(binned, schema)
    parts = {k: v for name in diagnostics for k, v in diagnostic_parts(name, bins, binned).items()}
    classes = stats.group_by(per_class).agg(
        *(value.alias(name) for name, value in parts.items()),
        pl.col("count").filter(binned).sum().alias("count"),
        pl.col("count").filter(~binned).sum().alias("refused"),
        total.alias("weight"),
        pl.col([*row_sums, *mean_sums]).filter(binned).sum(),
        pl.col("bin").filter(binned).is_duplicated().any().alias("clash"),
        *(
            calibration_error(gap, weight, total, norm).alias(metric)
            for metric, norm in _NORM_OF.items()
        ),
    )

    def rows(column: str) -> pl.Expr:
        # Classwise: every row is in every class, so a group's rows are one class's rows.
        return pl.col(column).max() if classwise else pl.col(column).sum()

    # A total of WEIGHT_LIMIT or more (inf, NaN when it overflowed) is refused:
    # its sums overflow (the problem's whole check; a DataFrame raises).
    has_weight = (pl.col("weight") > 0.0) & (pl.col("weight") < WEIGHT_LIMIT)
    reduced: dict[str, pl.Expr] = {
        "ece": pl.col("ece").max() if not keyed else _class_mean("ece", average, classwise),
        "rmsce": pl.col("rmsce").max() if not keyed else _class_mean("rmsce", average, classwise),
        "mce": pl.col("mce").max(),
        # Binary tables only (check_diagnostics): one class, the group's value.
        **{name: pl.col(name).first() for name in parts},
    }
    invalid = (
        (pl.col("refused").sum() > 0)
        | pl.col("clash").any()
        | ((pl.col("count").min() != pl.col("count").max()) if classwise else pl.lit(False))
    )
    per_group = classes.group_by(group).agg(
        rows("count").alias("count"),
        pl.col("refused").sum().alias("refused") if not classwise else pl.col("refused").max(),
        rows("weight").alias("weight"),
        pl.col([*row_sums, *mean_sums]).sum(),
        *(value.alias(name) for name, value in reduced.items()),
        invalid.alias("invalid"),
    )
    ok = ~pl.col("invalid") & has_weight
    means = {
        "mean_predicted": pl.col(mean_sums[0]) / pl.col("weight"),
        "observed": pl.col(mean_sums[1]) / pl.col("weight"),
        "brier": pl.col("sum_squared_error") / pl.col("weight"),
        "log_loss": pl.col("sum_log_loss") / pl.col("weight"),
    }
    values: dict[str, pl.Expr] = {
        **means,
        **{m: pl.col(m) for m in _NORM_OF},
        **{m: diagnostic_value(m) for m in diagnostics},
    }
    names = ["mean_predicted", "observed", *metrics]
    return (
        per_group.select(
            *group,
            "count",
            "refused",
            *(pl.when(ok).then(values[name]).alias(name) for name in names),
        )
        .sort(group, nulls_last=True)
        .select(*keys, "count", "refused", *names)
    )


def diagnostic_parts(name: str, bins: BinSums, binned: pl.Expr) -> dict[str, pl.Expr]:
    """The per-group aggregations of a test, p-value or decomposition, from table rows.

    `bins` are the group's per-bin series (the rows where `binned` holds); the
    expressions of :mod:`polars_calib._metrics.diagnostics` run the same finishers on sums
    built inside the group. :func:`diagnostic_value` finishes the columns.
    """

    def total(column: str) -> pl.Expr:
        return pl.col(column).filter(binned).sum()

    if name.startswith("spiegelhalter"):
        z = _finish.spiegelhalter_z(
            total("sum_spiegelhalter_numerator"), total("sum_spiegelhalter_variance")
        )
        return {_Z: z}
    if name.startswith("hosmer_lemeshow"):
        statistic, df = _finish.hosmer_lemeshow(bins)
        return {_HL: statistic, _HL_DF: df}
    return {name: _diagnostic(name, bins)}


def diagnostic_value(name: str) -> pl.Expr:
    """A diagnostic from the columns of :func:`diagnostic_parts` (two-sided Spiegelhalter p)."""
    if name == "spiegelhalter_z":
        return pl.col(_Z)
    if name == "spiegelhalter_p":
        return _finish.normal_p_value(pl.col(_Z), "two-sided")
    if name == "hosmer_lemeshow":
        return pl.col(_HL)
    if name == "hosmer_lemeshow_p":
        return _finish.chi2_p_value(pl.col(_HL), pl.col(_HL_DF))
    return pl.col(name)


def _diagnostic(name: str, bins: BinSums) -> pl.Expr:
    if name == "debiased_ece_squared":
        return _finish.debiased_ece_squared(bins)
    if name == "debiased_ece":
        return _finish.debiased_ece(bins)
    if name == "brier_decomposition":
        return _finish.brier_decomposition(bins)
    score: Score = "log_loss" if name.startswith("log_loss") else "brier"
    calibration, refinement = _finish.calibration_refinement(bins, score)
    return calibration if name.endswith("calibration_loss") else refinement


def _class_mean(metric: str, average: TopLabelAverage, classwise: bool) -> pl.Expr:
    """The mean of a per-class metric over the classes with positive weight."""
    if average == "weighted" and not classwise:
        used = pl.col(metric).is_not_null()
        return (pl.col(metric) * pl.col("weight")).filter(used).sum() / pl.col("weight").filter(
            used
        ).sum()
    return pl.col(metric).mean()


def with_empty_bins(
    stats: pl.LazyFrame, grouping: list[str], grid: pl.LazyFrame | None
) -> pl.LazyFrame:
    """`stats` (merged, no replicates) with every bin of its uniform grid in each group,
    the empty ones counting 0.

    `grid` holds the bins and exact edges (:meth:`~polars_calib._core.binning.Binning.grid`)
    when the caller knows them; otherwise a table's own ``n_bins`` gives each group
    the edges ``k / n_bins`` (correctly rounded, as :func:`polars_calib.uniform_edges`),
    and a table of per-group bins (null ``n_bins``) keeps its non-empty bins.
    """
    sums = [name for name in sum_columns(stats) if name != "count"]
    columns = stats.collect_schema().names()
    if grid is not None:
        grids = stats.select(*grouping, *closure_columns(columns)).unique().join(grid, how="cross")
    else:
        # Polars divides by a scalar-shaped column through its reciprocal (3 / 5 ->
        # 0.6000000000000001); a column-shaped n_bins keeps each edge correctly rounded.
        k = pl.col("bin").cast(pl.Float64)
        size = k * 0.0 + pl.col("n_bins").cast(pl.Float64)
        grids = (
            stats.filter(pl.col("n_bins").is_not_null())
            .select(*grouping, *closure_columns(columns))
            .unique()
            .with_columns(pl.int_ranges(0, pl.col("n_bins"), dtype=pl.Int32).alias("bin"))
            .explode("bin")
            .with_columns((k / size).alias("lower"), ((k + 1.0) / size).alias("upper"))
        )
    empty = grids.join(stats, on=[*grouping, "bin"], how="anti", nulls_equal=True).with_columns(
        pl.lit(0, pl.Int64).alias("count"),
        *(pl.lit(0.0, pl.Float64).alias(name) for name in sums),
    )
    return pl.concat([stats, empty.select(columns)], how="vertical_relaxed")


def reliability_rows(
    stats: pl.LazyFrame, keys: list[str], z: float, grid: pl.LazyFrame | None = None
) -> pl.LazyFrame:
    """The reliability table from merged statistics (one row per group, class and bin).

    Every bin of the table is a row, empty ones with count 0 and null means; a group
    holding refused rows keeps its counts, with null means and intervals.
    """

    schema = stats.collect_schema().names()
    if "replicate" in schema:
        stats = stats.filter(pl.col("replicate").is_null()).drop("resampling", "replicate")
    group = [*keys, *(["class"] if "class" in schema else [])]
    stats, grouping = grouped(stats, group)
    if grid is not None or "n_bins" in schema:
        # Both branches read the same evaluation of the small table.
        stats = with_empty_bins(stats.cache(), grouping, grid)
    n = pl.col("weight")
    flags = stats.with_columns(
        (pl.col("count") * pl.col("bin").is_null()).sum().over(grouping).alias("_refused"),
    ).filter(pl.col("bin").is_not_null())
    clash = pl.col("bin").is_duplicated().over(grouping)
    has_weight = (n > 0.0) & (pl.col("_refused") == 0) & ~clash
    observed = pl.when(has_weight).then(pl.col("sum_y") / n)
    mean_predicted = pl.when(has_weight).then(pl.col("sum_p") / n)
    lower, upper = wilson_interval(pl.when(has_weight).then(pl.col("sum_y")), n, z)
    return (
        flags.with_columns(
            mean_predicted.alias("mean_predicted"),
            observed.alias("observed"),
            lower.alias("observed_lower"),
            upper.alias("observed_upper"),
        )
        .with_columns((pl.col("observed") - pl.col("mean_predicted")).alias("gap"))
        .sort(*grouping, "bin", nulls_last=True)
        .select(*group, *RELIABILITY)
    )


def top_label_choice(average: object, distance: object) -> TopLabelAverage:
    """`average` of a table that is not canonical (``None``: ``"macro"``); no `distance`."""
    if distance is not None:
        msg = f"`distance` is for reduction='canonical' (its cells), got {distance!r}"
        raise ValueError(msg)
    if average is None:
        return "macro"
    return cast(TopLabelAverage, check_choice("average", average, TOP_LABEL_AVERAGES))


def summary_names(table: pl.LazyFrame, reduction: str | None) -> pl.LazyFrame:
    """Name a vector table's finished columns as a summary does (`reduction` None: as they are).

    The means become ``mean_confidence`` and ``accuracy``, the binned metrics (and their
    bounds) ``<reduction>_ece``, ``<reduction>_mce``, ``<reduction>_rmsce``.
    """
    if reduction is None:
        return table
    renamed = {"mean_predicted": "mean_confidence", "observed": "accuracy"}
    columns = table.collect_schema().names()
    for m in ("ece", "mce", "rmsce"):
        renamed |= {
            f"{m}{end}": f"{reduction}_{m}{end}"
            for end in ("", "_lower", "_upper")
            if f"{m}{end}" in columns
        }
    return table.rename(renamed)
