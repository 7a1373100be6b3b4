"""The canonical table: sums per non-empty cell of the simplex grid, and its finisher."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.options import BinAverage, Compat, Distance
from polars_calib._core.problem import WEIGHT_LIMIT, Problem
from polars_calib._core.validation import CalibrationDataError
from polars_calib._table.build import IGNORED_BIN, REFUSED_BIN, terms_for
from polars_calib._table.columns import (
    ALL_KEY,
    CELL,
    SUMS,
    cell_columns,
    cell_names,
    class_columns,
    grid_columns,
    grouped,
    sum_columns,
)
from polars_calib._table.distance import distance_term
from polars_calib._table.plan import Prepared

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

_CANONICAL_METRICS = ("ece", "mce", "rmsce", "brier", "log_loss")


def canonical_classes(prepared: Prepared, prob: str) -> int:
    """K of a canonical table, from the schema: the vectors must be an ``Array`` column."""
    dtype = prepared.lf.collect_schema()[prob]
    if not isinstance(dtype, pl.Array):
        msg = (
            f"reduction='canonical' takes probability vectors as an Array column, whose "
            f"length K (the table's class columns) is in the schema; {prob!r} is {dtype}: "
            f"cast it with `pl.col({prob!r}).list.to_array(K)`"
        )
        raise CalibrationDataError(msg)
    clash = [key for key in prepared.keys if key in ("n_bins", *cell_names(1))]
    clash += [key for key in prepared.keys if key.startswith((f"{CELL}_", "sum_"))]
    if clash:
        msg = f"`by` cannot hold {clash[0]!r}: a column of the canonical statistics table"
        raise ValueError(msg)
    return int(dtype.size)


def check_canonical_metrics(metrics: Sequence[str]) -> None:
    """``ValueError`` for a metric a canonical table cannot finish."""
    other = [m for m in metrics if m not in _CANONICAL_METRICS]
    if other:
        msg = (
            f"reduction='canonical' finishes {', '.join(map(repr, _CANONICAL_METRICS))}; "
            f"got {', '.join(map(repr, other))} (tests, decompositions and resampling take "
            "binary problems)"
        )
        raise ValueError(msg)


def check_canonical(metrics: Sequence[str], binning: Binning | None, compat: Compat | None) -> None:
    """``ValueError`` for what a canonical table cannot give (see :func:`bin_statistics`)."""
    check_canonical_metrics(metrics)
    if binning is None or binning.strategy != "uniform" or compat is not None:
        msg = (
            "reduction='canonical' bins every component on the uniform grid (mergeable "
            "cells): strategy must be 'uniform' and compat None; for median-variance bins "
            "use `median_variance_bins` and `canonical_ece(..., bins=...)`"
        )
        raise ValueError(msg)


def canonical_statistics(
    lf: pl.LazyFrame,
    problem: Problem,
    keys: list[str],
    binning: Binning,
    n_classes: int,
    terms: Sequence[str] = (),
) -> pl.LazyFrame:
    """The canonical statistics table of `problem` (``vector_problem(..., "canonical")``).

    One aggregation over one pass of the data, grouped by the keys and the cell words
    (:meth:`~polars_calib._core.binning.Binning.cell_words`; the first word is -1 for
    refused rows and -2 for ignored ones, which only keep their group), then a few
    steps over the small result: the words cast to Int64, refused rows' cell and sums
    null, a group with neither used nor refused rows kept as one null-cell row of
    count 0. The columns: the keys, the cell words, ``n_bins`` (Int32) and ``closed``
    (String: the grid's, so that tables of other grids or closures do not merge
    silently), ``count`` (Int64),
    ``weight``, ``sum_p_0 .. sum_p_{K-1}`` (weighted sums of each component),
    ``sum_y_0 .. sum_y_{K-1}`` (weighted counts of each true class), then the row
    terms in `terms`; sorted by keys and cell.
    """
    problem = problem.seen_by(binning.clip, binning.float32)
    vectors, label, weight = problem.prob, problem.label, problem.weight
    components = [vectors.list.get(k, null_on_oob=True) for k in range(n_classes)]
    words = binning.cell_words(components)
    names = cell_names(len(words))
    first = (
        pl.when(problem.refused)
        .then(REFUSED_BIN)
        .when(problem.present)
        .then(words[0])
        .otherwise(IGNORED_BIN)
    )
    rest = [pl.when(problem.refused).then(None).when(problem.present).then(w) for w in words[1:]]
    sums = [pl.len().alias("count")]
    if weight is not None:
        sums.append(weight.sum().alias("weight"))
    sums += [problem.weighted(p).sum().alias(f"sum_p_{k}") for k, p in enumerate(components)]
    for k in range(n_classes):
        hit = label == float(k)
        outcome = hit.sum() if weight is None else pl.when(hit).then(weight).otherwise(0.0).sum()
        sums.append(outcome.alias(f"sum_y_{k}"))
    sums += [problem.weighted(problem.terms[name]).sum().alias(f"sum_{name}") for name in terms]
    cells = [e.alias(n) for e, n in zip([first, *rest], names)]
    table = lf.group_by(*keys, *cells).agg(sums)
    summed = [
        "weight",
        *(f"sum_{v}_{k}" for v in ("p", "y") for k in range(n_classes)),
        *(f"sum_{name}" for name in terms),
    ]
    if weight is None:
        table = table.with_columns(pl.col("count").cast(pl.Float64).alias("weight"))
    # One null-cell row for a group without used rows: its refused rows', or an empty one.
    others = pl.len().over(keys) if keys else pl.len()
    table = table.filter((pl.col(CELL) != IGNORED_BIN) | (others == 1))
    celled = pl.col(CELL) >= 0.0
    table = table.with_columns(
        *(pl.when(celled).then(pl.col(n)).cast(pl.Int64) for n in names),
        pl.lit(binning.n_bins, pl.Int32).alias("n_bins"),
        pl.lit(binning.closed, pl.String).alias("closed"),
        pl.when(pl.col(CELL) != IGNORED_BIN).then(pl.col("count")).otherwise(0).cast(pl.Int64),
        pl.when(celled).then(pl.col(summed)).cast(pl.Float64),
    )
    columns = [*keys, *names, "n_bins", "closed", "count", *summed]
    return table.select(columns).sort(*keys, *names, nulls_last=True)


def merge_cells(stats: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Sum the rows of each (group, cell, grid) of canonical tables (keys not in `keys`
    summed over); the null-cell rows of a group merge into one, counting its refused rows."""
    columns = stats.collect_schema().names()
    sums = [name for name in sum_columns(stats) if name != "count"]
    return stats.group_by(*keys, *cell_columns(columns), *grid_columns(columns)).agg(
        pl.col("count").cast(pl.Int64).sum(), pl.col(sums).sum()
    )


def finish_cells(
    stats: pl.LazyFrame,
    keys: list[str],
    metrics: Sequence[str],
    distance: Distance = "tv",
    average: BinAverage = "weighted",
) -> pl.LazyFrame:
    """The canonical metrics per group from merged canonical statistics (see the module).

    Per cell ``b`` with weight ``W_b > 0``, ``d_b = d(P_b, Y_b)`` from the class sums;
    per group, with ``W`` the total weight: ``ece = sum_b (W_b / W) d_b`` (the plain
    mean of ``d_b`` with ``average="bins"``), ``rmsce = sqrt(sum_b (W_b / W) d_b**2)``
    (the root mean square over cells with ``"bins"``), ``mce = max_b d_b``; ``brier``
    and ``log_loss`` the multi-class scores. Columns: the keys, ``count``, ``refused``,
    then `metrics`; null metrics for a group holding a refused row, without weight,
    or merged from tables of different grids.
    """
    schema = stats.collect_schema().names()
    whole = not keys
    stats, group = grouped(stats, keys)
    celled = pl.col(CELL).is_not_null()
    cell_weight = pl.col("weight")
    gaps = [
        pl.col(p) - pl.col(y)
        for p, y in zip(class_columns(schema, "sum_p"), class_columns(schema, "sum_y"))
    ]
    mass = pl.sum_horizontal(distance_term(gap, cell_weight, distance) for gap in gaps)
    used = celled & (cell_weight > 0.0)
    distances = (mass / cell_weight).filter(used)
    row_sums = [n for n in ("sum_squared_error", "sum_log_loss") if n in schema]
    total = cell_weight.filter(celled).sum()
    if average == "weighted":
        ece = mass.filter(used).sum() / total
        # (m / W_b) m, not m**2 / W_b: the square of large weights' sums overflows.
        rmsce = ((mass / cell_weight * mass).filter(used).sum() / total).sqrt()
    else:
        ece = distances.mean()
        rmsce = (distances * distances).mean().sqrt()
    per_group = stats.group_by(group).agg(
        pl.col("count").filter(celled).sum().alias("count"),
        pl.col("count").filter(~celled).sum().alias("refused"),
        total.alias("weight"),
        *([pl.col(row_sums).filter(celled).sum()] if row_sums else []),
        ece.alias("ece"),
        rmsce.alias("rmsce"),
        distances.max().alias("mce"),
        (pl.struct(grid_columns(schema)).n_unique() > 1).alias("clash"),
    )
    if whole:
        # The one group exists even in empty data, as an expression in `select` gives it.
        per_group = pl.LazyFrame({ALL_KEY: [True]}).join(per_group, on=ALL_KEY, how="left")
        per_group = per_group.with_columns(
            pl.col("count", "refused").fill_null(0), pl.col("clash").fill_null(False)
        )
    weight = pl.col("weight")
    # A total of WEIGHT_LIMIT or more is refused: its sums overflow (a DataFrame raises).
    ok = (pl.col("refused") == 0) & ~pl.col("clash") & (weight > 0.0) & (weight < WEIGHT_LIMIT)
    values = {
        "ece": pl.col("ece"),
        "rmsce": pl.col("rmsce"),
        "mce": pl.col("mce"),
        "brier": pl.col("sum_squared_error") / pl.col("weight"),
        "log_loss": pl.col("sum_log_loss") / pl.col("weight"),
    }
    return (
        per_group.select(
            *group,
            pl.col("count").cast(pl.Int64),
            pl.col("refused").cast(pl.Int64),
            *(pl.when(ok).then(values[name]).alias(name) for name in metrics),
        )
        .sort(group, nulls_last=True)
        .select(*keys, "count", "refused", *metrics)
    )


def canonical_metrics(
    stats: FrameT,
    keys: list[str],
    metrics: Sequence[str],
    distance: Distance,
    average: BinAverage,
) -> pl.LazyFrame:
    """Merge canonical tables and finish their metrics; a DataFrame whose grids clash raises."""
    lf = stats.lazy()
    schema = lf.collect_schema().names()
    missing = [n for n in (*keys, "n_bins", *SUMS[:2]) if n not in schema]
    missing += [f"sum_{t}" for t in terms_for(metrics) if f"sum_{t}" not in schema]
    if missing:
        msg = (
            f"`stats` is not a canonical statistics table able to give {list(metrics)} "
            f"(see `bin_statistics`): missing column(s) {', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    merged = merge_cells(lf, keys)
    if isinstance(stats, pl.DataFrame):
        table = merged.collect()
        grid = pl.struct(grid_columns(table.columns))
        grids = table.group_by(keys or pl.lit(True)).agg(grid.n_unique().alias("grids"))
        if grids.height and grids["grids"].max() > 1:  # type: ignore[operator]
            msg = (
                "`stats` holds canonical statistics of different `n_bins` or `closed` for "
                "one group: their cells cannot be merged"
            )
            raise CalibrationDataError(msg)
        merged = table.lazy()
    return finish_cells(merged, keys, metrics, distance, average)
