"""Merge statistics tables: sum the rows of the same group and bin."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

from polars_calib._table.columns import closure_columns, sum_columns
from polars_calib._table.replicates import replicate_keys

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


EDGE_MERGES = {"lower": "min", "upper": "max"}
"""How a partial table's columns other than sums merge: the smallest and largest value
of given bins (:func:`~polars_calib._table.build.partial_statistics` with a bin column)
are the smallest ``lower`` and the largest ``upper`` of the parts. Every other column
is summed."""


def merge_partials(tables: Sequence[FrameT], keys: list[str]) -> FrameT:
    """Sum partial aggregations (:class:`Partial` tables) of parts of the rows.

    Columns of `tables` that are neither `keys` nor ``bin`` are summed (``lower`` and
    ``upper`` take their smallest and largest value: :data:`EDGE_MERGES`): a table keyed
    by more columns than `keys` (dropped first) is summed over them. Eager tables give
    an eager sum, lazy ones a plan.
    """
    table = pl.concat(tables, how="vertical_relaxed")
    columns = table.collect_schema().names()
    merged = [name for name in columns if name not in (*keys, "bin")]
    aggregates = [getattr(pl.col(name), EDGE_MERGES.get(name, "sum"))() for name in merged]
    return table.group_by(*keys, "bin").agg(aggregates).select(columns)


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
