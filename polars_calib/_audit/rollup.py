"""Each slice's numbers, rolled up from the finest cells: their sums merged, then finished.

A slice's observed statistics are the sum of its finest cells' rows
(:func:`polars_calib._table.merge.merge_statistics` with the slice's attributes as keys),
exact because uniform-bin statistics are sums; its replicates' rows come summed per
attribute set (:func:`polars_calib._audit.cells.slice_replicates`). The summary's
finisher (:func:`polars_calib._frames.frame.finish_summary`) turns the slice's table into
its metrics, its intervals and its test, as :func:`polars_calib.summary` does for one
frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import polars as pl

from polars_calib._audit.slices import slice_label
from polars_calib._frames.frame import finish_summary
from polars_calib._table.merge import merge_statistics
from polars_calib._table.plan import Prepared

__all__ = ["metric_columns", "rolled_up", "with_p_values"]


def rolled_up(
    cells: pl.DataFrame,
    prepared: Prepared,
    sets: Sequence[tuple[str, ...]],
    metrics: Sequence[str],
    *,
    confidence: float | None,
    replicates: Sequence[pl.LazyFrame] | None = None,
    within: Sequence[str] = (),
) -> pl.DataFrame:
    """Compute one row per slice of each attribute set in `sets`, per `within` group.

    `cells` is the observed table of the finest cells; `replicates`, if any, each set's
    replicate rows (:func:`polars_calib._audit.cells.slice_replicates`), keyed by
    `within` too. Each row holds the `within` keys, names its slice (``slice``,
    ``order``, ``attributes``), holds every attribute (null where the slice does not
    fix it), then the summary's columns: the sets in their order, each `within`
    group's rows together.
    """
    finished = []
    for position, subset in enumerate(sets):
        keys = [*within, *subset]
        keyed = dataclasses.replace(prepared, keys=keys)
        stats = merge_statistics(cells.lazy(), keys)
        if replicates is not None:
            stats = pl.concat([stats, replicates[position]], how="diagonal_relaxed")
        table = finish_summary(
            stats, keyed, metrics, confidence=confidence, resampled=replicates is not None
        )
        if not keys:
            # The overall row is there without rows too (count 0), as a summary's is.
            table = pl.concat([table, pl.LazyFrame({"count": [0]})], how="diagonal_relaxed")
            table = table.head(1)
        finished.append(
            table.select(
                *within,
                slice_label(subset).alias("slice"),
                pl.lit(len(subset), pl.Int32).alias("order"),
                pl.lit(list(subset), pl.List(pl.String)).alias("attributes"),
                *(
                    pl.col(name) if name in subset else pl.lit(None, cells.schema[name]).alias(name)
                    for name in prepared.keys
                    if name not in within
                ),
                pl.exclude(*keys, "refused"),
            )
        )
    slices = pl.concat(pl.collect_all(finished))
    return slices.sort(within, nulls_last=True, maintain_order=True) if within else slices


def with_p_values(slices: pl.DataFrame, p_value: str | None) -> pl.DataFrame:
    """Name the test's column ``p_value``, without bounds (a p-value is no metric)."""
    if p_value is None:
        return slices
    bounds = [f"{p_value}_{side}" for side in ("lower", "upper")]
    return slices.drop(bounds, strict=False).rename({p_value: "p_value"})


def metric_columns(slices: pl.DataFrame) -> list[str]:
    """Return the metric columns, named as the summary names them (after its two means)."""
    columns = slices.columns
    first = columns.index("observed" if "observed" in columns else "accuracy") + 1
    return [c for c in columns[first:] if not c.endswith(("_lower", "_upper")) and c != "p_value"]
