"""Merge statistics tables: sum the rows of the same group and bin."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

from polars_calib._table.columns import closure_columns, sum_columns
from polars_calib._table.replicates import replicate_keys

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


def merge_partials(tables: Sequence[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """Sum partial aggregations (:class:`Partial` tables) of parts of the rows."""
    table = pl.concat(tables, how="vertical_relaxed")
    sums = [name for name in table.columns if name not in (*keys, "bin")]
    return table.group_by(*keys, "bin").agg(pl.col(sums).sum()).select(table.columns)


def merge_statistics(stats: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Sum the rows of each (group[, class], bin, edges): one row per bin of each group.

    Keys of `stats` not in `keys` are summed over. Rows of the same bin with other
    edges stay apart (quantile statistics of different partitions), for the
    finishers to refuse; so do replicates (``resampling``, ``replicate``).
    """
    columns = stats.collect_schema().names()
    group = [*keys, *replicate_keys(columns), *(["class"] if "class" in columns else [])]
    sums = sum_columns(stats)
    closed = closure_columns(columns)
    return stats.group_by(*group, "bin", "lower", "upper", *closed).agg(
        pl.col("count").cast(pl.Int64).sum(), pl.col([s for s in sums if s != "count"]).sum()
    )
