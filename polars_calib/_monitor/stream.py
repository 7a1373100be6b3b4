"""`pc.monitor` over a log in bounded memory: checks, thresholds, then the rows in batches.

When collected, a monitor plan makes these passes over the log, each holding a batch or a
per-group table, not the rows:

1. one streaming aggregation: the refused rule's counts, null times, the time span and
   the groups (numbered in the order of their keys);
2. for simulated thresholds, one streaming pass keeping per group at most
   :data:`~polars_calib._monitor.reference.SAMPLE_ROWS` reference rows' ``(p, w)``
   (all of them up to that, a sample chosen by the counter-based hash of the row's
   position above it: :func:`~polars_calib._monitor.reference.reference_sample`;
   pass 1 counts each group's reference rows); ``threshold=`` reads none;
3. the rows in batches (``collect_batches``), in the log's order, through
   :class:`~polars_calib._monitor.batched.Charts`. A log whose rows are in time order
   within each group (a log appended in time order, or one sorted by group and time)
   needs nothing more. Otherwise a group's time goes back in some batch, and the rows are
   sorted first, out of memory: cut into buckets of about :data:`BUCKET_ROWS` rows by
   time (edges from a histogram of :data:`FINE_BINS` bins of the time span), each batch's
   share of a bucket written to an uncompressed Arrow IPC file of a temporary directory,
   then each bucket read back (its parts in the log's order), sorted by time (a stable
   sort: ties keep the log's order) and fed in batches. The directory is removed after.

A bucket holds the rows of its fine bins: a burst of more than :data:`BUCKET_ROWS` rows
within one fine bin (``1 / FINE_BINS`` of the span; many rows at one time) is one large
bucket, held at once.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import polars as pl

from polars_calib._core.problem import Problem
from polars_calib._core.validation import CalibrationDataError, problem_counts, raise_for_problems
from polars_calib._monitor.alarms import chart_arrays, chart_terms
from polars_calib._monitor.batched import (
    BATCH_ROWS,
    GROUP,
    TIME,
    Charts,
    Sums,
    Unordered,
    physical,
)
from polars_calib._monitor.decimation import Drawn
from polars_calib._monitor.reference import REF, REFERENCE_ROWS, reference_count

__all__ = [
    "BUCKET_ROWS",
    "FINE_BINS",
    "ROWS",
    "Groups",
    "checked_groups",
    "run_batches",
    "run_charts",
    "stream_alarms",
]

BUCKET_ROWS = 1 << 20
"""Rows per bucket of the out-of-memory sort (a bucket is sorted in memory)."""
FINE_BINS = 4096
"""Bins of the time span whose counts place the buckets' edges."""
_FINE = "__calib_fine__"
ROWS = "__calib_rows__"
Fed = TypeVar("Fed", Charts, Sums)
Groups = pl.DataFrame
"""The groups: their keys, ``GROUP`` (0, 1, ... in the order of the keys) and, from
:func:`checked_groups`, ``ROWS`` (the group's rows)."""


def checked_groups(
    lf: pl.LazyFrame, problem: Problem, keys: list[str], time: str | None
) -> tuple[Groups, tuple[int, int] | None]:
    """Check the log in one streaming pass (refused rows, null times:
    :class:`CalibrationDataError`); its groups with their rows, and its time span (None
    when no row).

    With a reference flag ``REF`` in the log, the groups also hold their reference
    counts (:data:`~polars_calib._monitor.reference.REFERENCE_ROWS`), which size the
    thresholds' sample (:func:`~polars_calib._monitor.reference.reference_sample`).
    """
    counted = [reference_count(problem)] if REF in lf.collect_schema() else []
    extra = [] if keys else list(counted)
    if time is not None:
        extra += [
            pl.col(time).null_count().alias("__nulls"),
            physical(time).min().alias("__low"),
            physical(time).max().alias("__high"),
        ]
    queries = [problem_counts(lf, problem.checks, extra)]
    if keys:  # a second aggregation (the keys in a list of the first would hold the rows)
        queries.append(lf.group_by(keys).agg(pl.len().cast(pl.Int64).alias(ROWS), *counted))
    done = pl.collect_all(queries, engine="streaming")
    counts = done[0]
    raise_for_problems(counts, problem.checks)
    rows = int(counts.item(0, "rows"))
    span = None
    if time is not None:
        nulls = int(counts.item(0, "__nulls"))
        if nulls:
            msg = f"invalid calibration data: column {time!r}: time null in {nulls} of {rows} rows"
            raise CalibrationDataError(msg)
        if rows:
            span = (int(counts.item(0, "__low")), int(counts.item(0, "__high")))
    if keys:
        groups = done[1].sort(keys)
    else:  # one group when the log has a row
        groups = counts.head(min(rows, 1)).with_columns(pl.lit(rows, pl.Int64).alias(ROWS))
    groups = groups.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(GROUP))
    names = [*keys, GROUP, ROWS, *([REFERENCE_ROWS] if counted else [])]
    return groups.select(names), span


def stream_alarms(
    lf: pl.LazyFrame,
    problem: Problem,
    keys: list[str],
    time: str,
    ratios: list[float],
    thresholds: Callable[[Groups], pl.DataFrame],
) -> pl.DataFrame:
    """The alarms of each group's restarted charts, as :func:`polars_calib.monitor` gives
    them. `thresholds` gives the table (``GROUP``, ``odds_ratio``, ``threshold``) of the
    groups, once the log is checked."""
    groups, span = checked_groups(lf, problem, keys, time)
    table = thresholds(groups)
    matrix, _ = chart_arrays(groups.height, ratios, table, None)
    charts = run_charts(lf, groups, keys, time, problem, ratios, matrix, span=span)
    dtype = lf.collect_schema()[time]
    return (
        charts.alarms(dtype)
        .join(groups, on=GROUP, maintain_order="left")
        .sort(GROUP, TIME, "odds_ratio", maintain_order=True)  # ties: raised first, first
        .select(
            *keys, pl.col(TIME).alias(time), "odds_ratio", "statistic", "threshold", "run_start"
        )
    )


def run_charts(
    lf: pl.LazyFrame,
    groups: Groups,
    keys: list[str],
    time: str,
    problem: Problem,
    ratios: list[float],
    matrix: np.ndarray,
    state: list[dict[str, np.ndarray]] | None = None,
    span: tuple[int, int] | None = None,
    drawn: Callable[[], Drawn] | None = None,
) -> Charts:
    """Run the charts (from `state`, or from 0) over the rows of `lf` in batches, in
    the log's order, or sorted out of memory when a group's time goes back (`span`:
    the time span, read then when None); with `drawn`, keep the rows drawn of each
    chart in the :class:`Drawn` it makes."""
    terms = chart_terms(problem, ratios)

    def charts() -> Charts:
        return Charts(ratios, matrix, state, None if drawn is None else drawn())

    return run_batches(lf, groups, keys, time, terms, charts, span)


def run_batches(
    lf: pl.LazyFrame,
    groups: Groups,
    keys: list[str],
    time: str,
    terms: list[pl.Expr],
    make: Callable[[], Fed],
    span: tuple[int, int] | None = None,
) -> Fed:
    """Feed the rows of `lf` in batches to what `make` makes (:class:`Charts` or
    :class:`Sums`): per row its group's number, physical time and `terms`; in the log's
    order, or, when a group's time goes back, to a new one in time order, sorted out of
    memory (`span`: the time span, read then when None)."""
    in_order = _charted(lf, groups, keys, time, terms).collect_batches(
        chunk_size=BATCH_ROWS, maintain_order=True
    )
    try:
        return _run(in_order, make(), terms)
    except Unordered:
        if span is None:
            low, high = (
                lf.select(physical(time).min(), physical(time).max().alias("high"))
                .collect(engine="streaming")
                .row(0)
            )
            span = (int(low or 0), int(high or 0))
        with tempfile.TemporaryDirectory(prefix="polars-calib-monitor-") as directory:
            buckets = (
                _charted(batch.lazy(), groups, keys, time, terms).collect()
                for batch in _sorted(lf, time, span, Path(directory))
            )
            return _run(buckets, make(), terms)


def _charted(
    lf: pl.LazyFrame, groups: Groups, keys: list[str], time: str, terms: list[pl.Expr]
) -> pl.LazyFrame:
    """Per row (in the log's order): its group's number, its physical time, and the
    `terms` (each chart's term and flag, :func:`chart_terms`, or the O - E terms)."""
    # A join, not ``replace_strict``: Polars' streaming engine runs that one over the
    # whole column at once (the rows held: 700 MB at 16M rows).
    if keys:
        lf = lf.join(
            groups.lazy().select(*keys, GROUP),
            on=keys,
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
    else:
        lf = lf.with_columns(pl.lit(0, pl.Int64).alias(GROUP))
    return lf.select(GROUP, physical(time).alias(TIME), *terms)


def _run(frames: Iterator[pl.DataFrame], fed: Fed, terms: list[pl.Expr]) -> Fed:
    """Feed the frames of :func:`_charted` to `fed` (each group's rows in time order)."""
    names = [term.meta.output_name() for term in terms]
    for frame in frames:
        if frame.height:
            columns = [frame[name].to_numpy() for name in names]
            fed.feed(frame[GROUP].to_numpy(), frame[TIME].to_numpy(), columns)
    return fed


def _sorted(
    lf: pl.LazyFrame, time: str, span: tuple[int, int], directory: Path
) -> Iterator[pl.DataFrame]:
    """The log's rows in time order (ties in the log's order), in batches, sorted bucket
    by bucket through Arrow IPC files in `directory`."""
    low, high = span
    scale = FINE_BINS / (high - low + 1)
    fine = ((physical(time) - low).cast(pl.Float64) * scale).floor().cast(pl.Int64)
    fine = fine.clip(0, FINE_BINS - 1).alias(_FINE)
    histogram = lf.group_by(fine).agg(pl.len()).collect(engine="streaming")
    counts = np.zeros(FINE_BINS, np.int64)
    counts[histogram[_FINE].to_numpy()] = histogram["len"].to_numpy()
    bucket_of = (np.cumsum(counts) - counts) // BUCKET_ROWS  # by the bin's first row
    parts: dict[int, list[Path]] = {}
    for i, batch in enumerate(
        lf.with_columns(fine).collect_batches(chunk_size=BUCKET_ROWS // 4, maintain_order=True)
    ):
        batch = batch.with_columns(pl.Series(_FINE, bucket_of[batch[_FINE].to_numpy()]))
        for (b,), part in batch.partition_by(_FINE, as_dict=True, include_key=False).items():
            path = directory / f"{b:08d}-{i:08d}.arrow"
            # Uncompressed Arrow IPC: written and read about 2.5 times as fast as parquet.
            part.write_ipc(path, compression="uncompressed")
            parts.setdefault(int(b), []).append(path)
    for b in sorted(parts):
        # A bucket's parts in the log's order, and a stable sort: ties keep that order.
        rows = pl.scan_ipc(parts[b]).sort(time, maintain_order=True).collect()
        yield from rows.iter_slices(BATCH_ROWS)
        del rows
