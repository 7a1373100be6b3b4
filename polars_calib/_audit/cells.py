"""The statistics table of an audit's finest cells: every attribute fixed, per bin.

The audit reads the data once, into this table (:mod:`polars_calib.statistics`, keyed
by every attribute); every coarser slice is a sum of its rows
(:mod:`polars_calib._audit.rollup`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_calib.binning import Binning
from polars_calib.resampling import Resample
from polars_calib.statistics import Prepared, collect_checked, statistics_query

__all__ = ["cell_statistics"]


def cell_statistics(
    prepared: Prepared, binning: Binning, terms: Sequence[str], resamples: Sequence[Resample]
) -> pl.DataFrame:
    """Compute the statistics table of the finest cells, in one pass over the data.

    Refused rows raise :class:`~polars_calib.validation.CalibrationDataError`.
    """
    plan = statistics_query(
        prepared.lf, prepared.problem, prepared.keys, binning, terms, resamples=resamples
    )
    return collect_checked(prepared, plan)
