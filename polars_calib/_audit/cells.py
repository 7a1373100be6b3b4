"""The statistics table of an audit's finest cells: every attribute fixed, per bin.

The audit reads the data once, into this table (:mod:`polars_calib._table`, keyed
by every attribute); every coarser slice is a sum of its rows
(:mod:`polars_calib._audit.rollup`). The table's size is set by cells × bins (×
replicates), never by rows, but Polars' streaming group-by holds the rows of keys
outside its hot table until the end, so with many keys (from about 100,000 (cell, bin)
keys) its memory grows with the rows: 5 attributes of 10 values (1.5M keys) took about
90 bytes per row. The table is therefore aggregated over batches of rows (slices of the
data, each aggregated by the streaming engine) and the batches' tables summed
(:func:`polars_calib._table.merge.merge_partials`: the sums are exact whatever the
batches). String attributes are read as categoricals, a third of the bytes per held row.
Figures: docs/performance.md, "Audit memory".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._table.build import Partial, complete_statistics, partial_statistics
from polars_calib._table.merge import merge_partials
from polars_calib._table.plan import Prepared, collect_checked
from polars_calib._table.replicates import Resample

__all__ = ["BATCH_ROWS", "cell_statistics"]

BATCH_ROWS = 8_000_000
"""The rows aggregated at a time by default (:func:`audit`'s `batch_rows`)."""

# Each row's position in the data (not in its batch): the draws' identity without `id`.
_POSITION = "__audit_position__"


def cell_statistics(
    prepared: Prepared,
    binning: Binning,
    terms: Sequence[str],
    resamples: Sequence[Resample],
    batch_rows: int = BATCH_ROWS,
) -> pl.DataFrame:
    """Compute the statistics table of the finest cells, in batches of `batch_rows` rows.

    The first batch is read alone; only when it is full are the data's rows counted (a
    parquet file's metadata) and the other batches read, so that smaller data are read
    once, as by one statistics query. Refused rows raise
    :class:`~polars_calib._core.validation.CalibrationDataError`, as for one query.
    """
    source, strings = _encoded(prepared.lf, prepared.keys)
    if resamples and resamples[0].id is None:
        source = source.with_row_index(_POSITION)
        resamples = [dataclasses.replace(spec, id=_POSITION) for spec in resamples]

    def batch(offset: int) -> Partial:
        rows = source.slice(offset, batch_rows)
        return partial_statistics(
            rows, prepared.problem, prepared.keys, binning, terms, resamples=resamples
        )

    partial = batch(0)
    table = partial.table.collect(engine="streaming")
    if _rows(table) >= batch_rows:
        n_rows = source.select(pl.len()).collect(engine="streaming").item()
        for offset in range(batch_rows, n_rows, batch_rows):
            more = batch(offset).table.collect(engine="streaming")
            table = merge_partials([table, more], partial.keys)
    merged = dataclasses.replace(partial, table=table.lazy())
    cells = complete_statistics(merged, binning).with_columns(pl.col(strings).cast(pl.String))
    return collect_checked(prepared, cells)


def _encoded(lf: pl.LazyFrame, keys: Sequence[str]) -> tuple[pl.LazyFrame, list[str]]:
    """Return `lf` with its String `keys` as categoricals (of this audit's own categories)."""
    schema = lf.collect_schema()
    strings = [name for name in keys if schema[name] == pl.String]
    categories = pl.Categorical(pl.Categories.random())
    return lf.with_columns(pl.col(strings).cast(categories)), strings


def _rows(table: pl.DataFrame) -> int:
    """Return the rows a batch's table counts (at least its rows: a row per class exploded)."""
    if "resampling" in table.columns:
        table = table.filter(pl.col("resampling").is_null())
    return int(table["count"].sum())
