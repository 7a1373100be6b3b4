"""The statistics table's column names, and the helpers that read them from a schema."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

from polars_calib._core.options import DIAGNOSTICS, METRICS

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

SUMS = ("count", "weight", "sum_p", "sum_y")
"""The summable columns every statistics table has, after the keys and the bin."""

DISTINCT_IDS = "distinct_ids"
"""With a resampling `id`: per bin, about how many distinct ids its rows have (Polars'
``approx_n_unique``, summed when tables merge); fewer than half the rows means rows
share their draws (:data:`SHARED_IDS`)."""

SHARED_IDS = 0.5
"""Refuse a group whose distinct ids are fewer than this share of its rows: far outside
the estimate's error (a few percent) for unique ids, and met by a constant id or one of
a few values (a model, a date)."""

RELIABILITY = (
    "bin",
    "lower",
    "upper",
    "count",
    "mean_predicted",
    "observed",
    "gap",
    "observed_lower",
    "observed_upper",
)

RESERVED = frozenset(
    (*SUMS, *METRICS, *DIAGNOSTICS, *RELIABILITY, "class", "refused", "mean_confidence", "accuracy")
)

# A constant key that stands for "the whole frame" when there are no group keys, so
# that an empty input gives an empty result (Polars' select would give one row).
ALL_KEY = "__polars_calib_all__"

CELL = "cell"
"""The first (often the only) cell word of a canonical table; its presence marks one."""


def cell_names(n_words: int) -> list[str]:
    """The cell word columns: ``cell``, then ``cell_1``, ``cell_2``, ... for wide vectors."""
    return [CELL, *(f"{CELL}_{j}" for j in range(1, n_words))]


def cell_columns(names: Sequence[str]) -> list[str]:
    """The cell word columns of a canonical table's columns `names`, in order."""
    words = [name for name in names if name == CELL or name.startswith(f"{CELL}_")]
    return sorted(words, key=lambda name: 0 if name == CELL else int(name.rsplit("_", 1)[1]))


def class_columns(names: Sequence[str], prefix: str) -> list[str]:
    """The per-class sums ``<prefix>_0, <prefix>_1, ...`` of a canonical table, in class order."""
    found = [n for n in names if n.startswith(f"{prefix}_") and n[len(prefix) + 1 :].isdigit()]
    return sorted(found, key=lambda name: int(name[len(prefix) + 1 :]))


def closure_columns(columns: Sequence[str]) -> list[str]:
    """The grid columns a table has among ``closed`` and ``n_bins`` (tables of earlier
    versions have fewer, and merge unchecked)."""
    return [name for name in ("closed", "n_bins") if name in columns]


def grid_columns(columns: Sequence[str]) -> list[str]:
    """The columns naming a canonical table's grid: ``n_bins`` and its closure."""
    return ["n_bins", *(c for c in closure_columns(columns) if c != "n_bins")]


def grouped(lf: pl.LazyFrame, keys: list[str]) -> tuple[pl.LazyFrame, list[str]]:
    """`lf` and its group keys; a constant key stands for the whole frame when there are none."""
    if keys:
        return lf, keys
    return lf.with_columns(pl.lit(True).alias(ALL_KEY)), [ALL_KEY]


def sum_columns(stats: pl.LazyFrame) -> list[str]:
    """The summable columns of a statistics table."""
    names = stats.collect_schema().names()
    return [n for n in names if n in SUMS or n.startswith("sum_") or n == DISTINCT_IDS]


def shared_ids(stats: pl.LazyFrame, group: list[str]) -> pl.LazyFrame:
    """Per group of the observed rows of a table with :data:`DISTINCT_IDS`, its ``count``
    and ``distinct_ids``, and ``shared``: true when its rows share their ids."""
    observed = pl.col("bin").is_not_null()
    if "replicate" in stats.collect_schema().names():
        observed = observed & pl.col("replicate").is_null()
    per_group = (
        stats.filter(observed)
        .group_by(group or pl.lit(True))
        .agg(pl.col("count").sum(), pl.col(DISTINCT_IDS).sum())
    )
    ratio = pl.col(DISTINCT_IDS) / pl.col("count")
    return per_group.with_columns((ratio < SHARED_IDS).alias("shared"))
