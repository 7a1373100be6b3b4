"""The one plan: a frame's problem, its statistics table, and how to read it.

Every feature is the same steps: a frame's columns checked and turned into a problem
(:func:`~polars_calib._table.plan.prepare`), the problem aggregated into the sparse
statistics table (:func:`~polars_calib._table.build.statistics_query`, or the
canonical table's cells), then a finisher. :func:`table_plan` assembles the first two
for every caller (summaries, reliability tables, ``bin_statistics``, the audit,
recalibration, the report and the command line), so the options that travel together
(the bins: :class:`Bins`; the replicates: :class:`~polars_calib._table.replicates.Resample`)
are checked in one place and the table is built one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.options import Closed, Compat, Strategy
from polars_calib._table.build import check_diagnostics, statistics_query, terms_for
from polars_calib._table.canonical import canonical_classes, canonical_statistics, check_canonical
from polars_calib._table.median_variance import table_binning, table_input
from polars_calib._table.plan import Prepared, collect_checked, prepare
from polars_calib._table.replicates import RESAMPLING_KEYS, Resample

__all__ = ["Bins", "Plan", "prepared_plan", "table_plan"]


@dataclass(frozen=True)
class Bins:
    """The bin options of a frame function, which travel together.

    ``n_bins``, ``strategy`` and ``closed`` name the grid; ``compat`` a peer's grid;
    ``min_size`` and ``max_bins`` the median-variance splits. :meth:`binning` checks them.
    """

    n_bins: int = 15
    strategy: Strategy = "uniform"
    closed: Closed = "right"
    compat: Compat | None = None
    min_size: int = 10
    max_bins: int | None = None

    def binning(self) -> Binning | None:
        """The checked binning; None for median-variance bins (a column per group)."""
        return table_binning(
            self.n_bins, self.strategy, self.closed, self.compat, self.min_size, self.max_bins
        )


@dataclass(frozen=True)
class Plan:
    """A frame's prepared problem and the lazy plan of its statistics table.

    ``grid`` holds the bins and exact edges of a uniform grid (what a reliability table
    completes the sparse table with), None for per-group bins.
    """

    prepared: Prepared
    table: pl.LazyFrame
    grid: pl.LazyFrame | None

    @property
    def keys(self) -> list[str]:
        """The table's group keys."""
        return self.prepared.keys

    def checked(self) -> pl.LazyFrame:
        """The table to finish: a DataFrame's collected and checked (raising
        :class:`~polars_calib.CalibrationDataError` on refused rows), a LazyFrame's plan."""
        if isinstance(self.prepared.data, pl.DataFrame):
            return collect_checked(self.prepared, self.table).lazy()
        return self.table

    def collected(self) -> pl.DataFrame:
        """The table collected and checked, whatever the input (the audit, fits)."""
        return collect_checked(self.prepared, self.table)


def table_plan(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    bins: Bins = Bins(),
    metrics: Sequence[str] = (),
    resamples: Sequence[Resample] = (),
    reserved: frozenset[str] = frozenset(),
    **frame: Any,
) -> Plan:
    """Check a frame and plan its statistics table (nothing is read).

    `frame` holds :func:`~polars_calib._table.plan.prepare`'s options (``by``,
    ``weight``, ``reduction``, ``sum_tol``, ``pos_label``, ``time``, ``every``). The
    table sums the row terms `metrics` need; `resamples` add replicates.
    ``reduction="canonical"`` plans the canonical table of cells (uniform bins, no
    replicates).
    """
    checked = bins.binning()
    if frame.get("reduction") == "canonical":
        check_canonical(metrics, checked, bins.compat)
        assert checked is not None  # uniform (check_canonical)
        prepared = prepare(data, prob, label, canonical=True, reserved=reserved, **frame)
        table = canonical_statistics(
            prepared.lf,
            prepared.problem,
            prepared.keys,
            checked,
            canonical_classes(prepared, prob),
            terms_for(metrics),
        )
        return Plan(prepared, table, None)
    if resamples:
        reserved = reserved | RESAMPLING_KEYS
    prepared = prepare(data, prob, label, reserved=reserved, **frame)
    check_diagnostics(
        metrics, None if checked is None else checked.n_bins, prepared.reduction is not None
    )
    lf, binning, column = table_input(prepared, prob, checked, bins.min_size, bins.max_bins)
    return prepared_plan(prepared, binning, metrics, resamples, column, lf)


def prepared_plan(
    prepared: Prepared,
    binning: Binning,
    metrics: Sequence[str] = (),
    resamples: Sequence[Resample] = (),
    bin_column: str | None = None,
    lf: pl.LazyFrame | None = None,
    terms: Sequence[str] | None = None,
) -> Plan:
    """Plan the statistics table of a problem already prepared (the second step of
    :func:`table_plan`; a fit that prepared its problem itself starts here).

    `lf` holds the rows when they differ from ``prepared.lf`` (a column of given bins,
    `bin_column`). `terms` are the row terms summed, when not those `metrics` need
    (a regression problem's).
    """
    rows = prepared.lf if lf is None else lf
    summed = terms_for(metrics) if terms is None else terms
    table = statistics_query(
        rows, prepared.problem, prepared.keys, binning, summed, bin_column, resamples
    )
    uniform = bin_column is None and binning.strategy == "uniform"
    return Plan(prepared, table, binning.grid() if uniform else None)
