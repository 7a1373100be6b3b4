"""The statistics tables of an audit: the finest cells' observed sums, each slice's replicates.

**Observed sums.** The audit reads the data once into the table of its finest cells
(every attribute fixed, per bin: :mod:`polars_calib._table`); every coarser slice's
observed sums are a sum of its rows (:mod:`polars_calib._audit.rollup`). The table's
size is set by cells × bins, never by rows, but Polars' streaming group-by holds the
rows of keys outside its hot table until the end, so with many keys (from about 100,000
(cell, bin) keys) its memory grows with the rows: 5 attributes of 10 values (1.5M keys)
took about 90 bytes per row. The table is therefore aggregated over batches of rows
(slices of the data, each aggregated by the streaming engine) and the batches' tables
summed (:func:`polars_calib._table.merge.merge_partials`: the sums are exact whatever the
batches). String attributes are read as categoricals, a third of the bytes per held row.

**Replicates** (intervals, the consistency test) are kept per attribute set, never per
finest cell: the finest table of 64 replicates would have up to cells × bins × 65 rows
(97M for 1.5M keys), however the rows are batched, where the sets' tables hold the
slices × bins × replicates the audit reports (1M for 1,051 slices). Each aggregation
of the replicate pass covers a chunk of replicates over a batch of rows, and its finest
table is summed at once over the attributes each set leaves free; the sets' tables are
summed over the batches, then completed. A chunk holds as many replicates (up to 64)
as keep its finest table within `batch_rows` rows (cells × bins × replicates); when
that is fewer than 64, its batches hold `batch_rows` / replicates rows, since every row
Polars holds carries a sum per replicate. The draws hash each row's position in the
data (or its `id`), not in its batch: the numbers are those of one pass whatever the
batches and chunks. Figures: docs/performance.md, "Audit memory".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.exprs import to_expr
from polars_calib._table.build import Partial, complete_statistics, partial_statistics
from polars_calib._table.merge import merge_partials
from polars_calib._table.plan import Prepared, check_row_ids, collect_checked
from polars_calib._table.replicates import CHUNK, Resample, chunks

__all__ = ["BATCH_ROWS", "Cells", "cell_statistics", "slice_replicates"]

BATCH_ROWS = 8_000_000
"""The rows aggregated at a time by default (:func:`audit`'s `batch_rows`)."""

# Each row's position in the data (not in its batch): the draws' identity without `id`.
_POSITION = "__audit_position__"

Progress = Callable[[str, int, int], None]
"""`audit`'s `progress`: called as ``progress(stage, done, total)`` after each aggregation."""


def _said(progress: Progress | None, stage: str, done: int, total: int) -> None:
    if progress is not None:
        progress(stage, done, total)


@dataclass(frozen=True)
class Cells:
    """The observed statistics table of the finest cells, and the data it was read from.

    ``table`` is the completed, checked table (String attributes as strings);
    ``source`` the data, String attributes as this audit's categoricals (``strings``);
    ``n_rows`` the data's rows, when they were counted (more than one batch).
    """

    table: pl.DataFrame
    source: pl.LazyFrame
    strings: list[str]
    n_rows: int | None


def cell_statistics(
    prepared: Prepared,
    binning: Binning,
    terms: Sequence[str],
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> Cells:
    """Compute the observed statistics table of the finest cells, `batch_rows` rows at a time.

    The first batch is read alone; only when it is full are the data's rows counted (a
    parquet file's metadata) and the other batches read, so that smaller data are read
    once, as by one statistics query. Refused rows raise
    :class:`~polars_calib._core.validation.CalibrationDataError`, as for one query.
    """
    source, strings = _encoded(prepared.lf, prepared.keys)

    def batch(offset: int) -> Partial:
        rows = source.slice(offset, batch_rows)
        return partial_statistics(rows, prepared.problem, prepared.keys, binning, terms)

    partial = batch(0)
    table = partial.table.collect(engine="streaming")
    n_rows = None
    if _rows(table) >= batch_rows:
        n_rows = _count(source)
        offsets = range(batch_rows, n_rows, batch_rows)
        _said(progress, "cells", 1, len(offsets) + 1)
        for done, offset in enumerate(offsets, 2):
            more = batch(offset).table.collect(engine="streaming")
            table = merge_partials([table, more], partial.keys)
            _said(progress, "cells", done, len(offsets) + 1)
    else:
        _said(progress, "cells", 1, 1)
    merged = dataclasses.replace(partial, table=table.lazy())
    cells = complete_statistics(merged, binning).with_columns(pl.col(strings).cast(pl.String))
    return Cells(collect_checked(prepared, cells), source, strings, n_rows)


def slice_replicates(
    cells: Cells,
    prepared: Prepared,
    binning: Binning,
    terms: Sequence[str],
    resamples: Sequence[Resample],
    sets: Sequence[tuple[str, ...]],
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> list[pl.LazyFrame]:
    """Compute the replicates' rows of each attribute set's statistics table (`sets` order).

    Each table is keyed by the set's attributes, ``resampling`` and ``replicate`` (and
    ``class``), completed as :func:`polars_calib._table.build.complete_statistics`
    completes one table; with the set's observed rows it is the set's statistics table.
    A chunk of replicates is aggregated over each batch of rows in turn (see the module).
    """
    source = cells.source
    if resamples[0].id is None:
        source = source.with_row_index(_POSITION)
        resamples = [dataclasses.replace(spec, id=_POSITION) for spec in resamples]
    else:
        check_row_ids(prepared, source, to_expr(resamples[0].id, "id"))
    # The most replicates (up to CHUNK) whose finest table stays within `batch_rows` rows;
    # fewer than CHUNK: rows x replicates within `batch_rows` too.
    size = max(1, min(CHUNK, batch_rows // max(1, cells.table.height)))
    rows = batch_rows if size == CHUNK else batch_rows // size
    n_rows = cells.n_rows
    if n_rows is None:
        # One batch was read: counted only if they take more than one batch here.
        n_rows = rows if rows == batch_rows else _count(source)
    offsets = range(0, max(n_rows, 1), rows)
    parts: list[list[pl.DataFrame]] = [[] for _ in sets]
    partial = None
    passes = [
        (spec, replicates) for spec in resamples for replicates in chunks(spec.replicates, size)
    ]
    total = len(passes) * len(offsets)
    for done, (spec, replicates) in enumerate(passes):
        chunk = dataclasses.replace(spec, first=replicates.start, n_resamples=len(replicates))

        def batch_done(batch: int, before: int = done * len(offsets)) -> None:
            _said(progress, "replicates", before + batch, total)

        partial, tables = _chunk_sums(
            source, prepared, binning, terms, chunk, sets, offsets, batch_done
        )
        for part, table in zip(parts, tables, strict=True):
            part.append(table)
    assert partial is not None  # one chunk at least: `resamples` is not empty
    return [
        complete_statistics(
            dataclasses.replace(partial, table=pl.concat(part).lazy(), keys=keys), binning
        ).with_columns(pl.col(_strings(cells, keys)).cast(pl.String))
        for part, (_, keys) in zip(parts, _set_keys(partial.keys, prepared.keys, sets), strict=True)
    ]


def _chunk_sums(
    source: pl.LazyFrame,
    prepared: Prepared,
    binning: Binning,
    terms: Sequence[str],
    chunk: Resample,
    sets: Sequence[tuple[str, ...]],
    offsets: range,
    batch_done: Callable[[int], None],
) -> tuple[Partial, list[pl.DataFrame]]:
    """Aggregate a chunk of replicates over each batch of rows (of `offsets.step` rows).

    Return the last batch's partial aggregation (its table aside: the keys and sums)
    and each set's partial table: each batch's finest table summed over the attributes
    the set leaves free, then over the batches. `batch_done` is called with the number
    of batches done after each.
    """
    summed: list[pl.DataFrame] = []
    partial = None
    for batch, offset in enumerate(offsets, 1):
        partial = partial_statistics(
            source.slice(offset, offsets.step),
            prepared.problem,
            prepared.keys,
            binning,
            terms,
            resamples=[chunk],
            observed=False,
        )
        finest = partial.table.collect(engine="streaming").lazy()
        keyed = _set_keys(partial.keys, prepared.keys, sets)
        # Every set's sum of the batch and of the batches before, in one collect (a plan
        # per set, run together: 4x faster than one eager group-by after another).
        before = [[table.lazy()] for table in summed] or [[] for _ in keyed]
        summed = pl.collect_all(
            merge_partials([*tables, finest.drop(free)], keys)
            for tables, (free, keys) in zip(before, keyed, strict=True)
        )
        batch_done(batch)
    assert partial is not None  # one batch at least, even of empty data
    return partial, summed


def _set_keys(
    keys: Sequence[str], attributes: Sequence[str], sets: Sequence[tuple[str, ...]]
) -> list[tuple[list[str], list[str]]]:
    """Each set's free attributes (summed over) and its table's keys (`keys` without them)."""
    keyed = []
    for subset in sets:
        free = [name for name in attributes if name not in subset]
        keyed.append((free, [key for key in keys if key not in free]))
    return keyed


def _strings(cells: Cells, keys: Sequence[str]) -> list[str]:
    """The String attributes among `keys` (read as categoricals)."""
    return [name for name in cells.strings if name in keys]


def _encoded(lf: pl.LazyFrame, keys: Sequence[str]) -> tuple[pl.LazyFrame, list[str]]:
    """Return `lf` with its String `keys` as categoricals (of this audit's own categories)."""
    schema = lf.collect_schema()
    strings = [name for name in keys if schema[name] == pl.String]
    categories = pl.Categorical(pl.Categories.random())
    return lf.with_columns(pl.col(strings).cast(categories)), strings


def _count(source: pl.LazyFrame) -> int:
    """Return the rows of `source` (a parquet file's metadata; otherwise a pass)."""
    return int(source.select(pl.len()).collect(engine="streaming").item())


def _rows(table: pl.DataFrame) -> int:
    """Return the rows a batch's table counts (at least its rows: a row per class exploded)."""
    return int(table["count"].sum())
