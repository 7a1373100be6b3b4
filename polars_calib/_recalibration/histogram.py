"""Histogram binning per group: a bin's fitted value is its observed frequency.

One aggregation: the package's statistics table
(:func:`polars_calib._table.pipeline.prepared_plan`), with its exact bin rule, its
empty bins added back (:func:`polars_calib._table.finish.with_empty_bins`).
"""

from __future__ import annotations

import dataclasses

import polars as pl

from polars_calib._recalibration.rows import FitSpec, group_columns, grouped
from polars_calib._table.finish import with_empty_bins
from polars_calib._table.pipeline import prepared_plan
from polars_calib._table.plan import Prepared

__all__ = ["fit_histogram"]


def fit_histogram(prepared: Prepared, spec: FitSpec, keys: list[str]) -> pl.DataFrame:
    """Fit each group's bin frequencies from the statistics table (one aggregation).

    Returns
    -------
    DataFrame
        keys, count, edges, values (lists of Float64; a value is null for an
        empty bin), iterations, fallback, reason.
    """
    base = [k for k in keys if k != "class"]
    plan = prepared_plan(dataclasses.replace(prepared, keys=base), spec.binning)
    sparse = plan.collected().lazy()
    # The table is sparse: each group's uniform grid comes back whole (empty bins keep p).
    grouping = [*base, *(["class"] if "class" in sparse.collect_schema().names() else [])]
    stats = with_empty_bins(sparse, grouping, plan.grid).filter(pl.col("bin").is_not_null())
    group = group_columns(keys)
    value = pl.when(pl.col("weight") > 0.0).then(pl.col("sum_y") / pl.col("weight"))
    table = (
        grouped(stats, keys)
        .sort([*group, "bin"], nulls_last=True)
        .group_by(group, maintain_order=True)
        .agg(
            pl.col("count").sum().alias("count"),
            pl.col("lower").first().alias("first"),
            pl.col("upper"),
            value.alias("values"),
        )
        .with_columns(pl.concat_list("first", "upper").alias("edges"))
        .collect()
    )
    min_rows = spec.min_rows
    reason = pl.when(pl.col("count") < min_rows).then(
        pl.format("{} rows, fewer than min_rows={}", pl.col("count"), pl.lit(min_rows))
    )
    return table.select(
        *keys,
        pl.col("count").cast(pl.Int64),
        pl.when(reason.is_null()).then(pl.col("edges")).alias("edges"),
        pl.when(reason.is_null()).then(pl.col("values")).alias("values"),
        pl.lit(None, pl.Int64).alias("iterations"),
        pl.lit(None, pl.String).alias("fallback"),
        reason.cast(pl.String).alias("reason"),
    )
