"""The notes at the end of a page, as plain sentences: the data's, then the conventions'."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._report.model import Settings, Tables

__all__ = [
    "PLOT_EXTRA",
    "chart_notes",
    "data_notes",
    "describe_bins",
    "label",
    "notes",
    "weight_notes",
    "window_notes",
]

PLOT_EXTRA = "pip install 'polars_calib[plot]'"
"""How to install what the charts need (Altair and vl-convert), as the notes say it."""

SHOWN_GROUPS = 20
"""The most small groups a note names."""


def notes(tables: Tables, settings: Settings, charts: bool) -> list[str]:
    """The notes: what the data held (rows, refusals, small groups), then the conventions."""
    return [*_data_notes(tables, settings), *_convention_notes(settings, charts)]


def describe_bins(binning: Binning) -> str:
    """The bins in words, with their edges for equal-width bins."""
    b = binning.n_bins
    if binning.strategy == "quantile":
        return f"{b} equal-mass bins per group (the group's linear-interpolation quantiles)"
    last = f"{b - 1}/{b}"
    if binning.closed == "right":
        edges = f"[0, 1/{b}], (1/{b}, 2/{b}], …, ({last}, 1]"
        return f"{b} equal-width bins, closed on the right: {edges}"
    edges = f"[0, 1/{b}), [1/{b}, 2/{b}), …, [{last}, 1]"
    return f"{b} equal-width bins, closed on the left: {edges}"


def label(keys: Sequence[str], values: Sequence[object]) -> str:
    """A group's name, ``"model = a, segment = B"`` (``"the whole log"`` without keys)."""
    return ", ".join(f"{k} = {v}" for k, v in zip(keys, values)) or "the whole log"


def _data_notes(tables: Tables, settings: Settings) -> list[str]:
    """An empty or unusable log, the refused rows per group, the groups too small to judge."""
    return data_notes(tables, settings.by, settings.min_count, "probability, label or weight")


def data_notes(tables: Tables, keys: Sequence[str], min_count: int, inputs: str) -> list[str]:
    """An empty or unusable log, the refused rows per group (per `keys`), the groups with
    fewer than `min_count` rows; `inputs` names the columns whose nulls are ignored."""
    summary = tables.summary
    found = []
    used, refused = tables.used, tables.refused
    if summary.height == 0:
        found.append("The log holds no rows: there is nothing to measure.")
    elif used == 0 and refused == 0:
        found.append(
            f"No usable rows: every row has a null {inputs}, and rows holding a null are ignored."
        )
    if refused:
        where = summary.filter(pl.col("refused") > 0)
        groups = "; ".join(
            f"{label(keys, row[: len(keys)])}: {row[-1]:,}"
            for row in where.select(*keys, "refused").iter_rows()
        )
        found.append(
            f"{refused:,} rows were refused, so their groups have no metrics "
            f"({groups}). {tables.refused_message}"
        )
    count = pl.col("count")
    small = summary.filter((count < min_count) & (count > 0))
    if small.height:
        shown = [
            f"{label(keys, row[:-1])} ({row[-1]:,} rows)"
            for row in small.select(*keys, "count").head(SHOWN_GROUPS).iter_rows()
        ]
        more = f", and {small.height - SHOWN_GROUPS} more" if small.height > SHOWN_GROUPS else ""
        found.append(
            f"Groups with fewer than {min_count:,} rows, whose metrics are mostly "
            f"sampling noise: {'; '.join(shown)}{more}."
        )
    return found


def _convention_notes(settings: Settings, charts: bool) -> list[str]:
    """The bins, the metrics, the intervals, the weights, the reduction, the windows, charts."""
    said = [
        f"Bins: {describe_bins(settings.binning)}; see docs/binning.md.",
        (
            "ECE is the weighted mean over non-empty bins of |observed frequency − mean "
            "predicted probability|, MCE the largest such gap, RMSCE the root of the "
            "weighted mean square; empty bins contribute nothing. Rows with a null "
            "probability, label or weight are ignored."
        ),
        (
            f"The diagrams' whiskers are {settings.confidence:.0%} Wilson intervals of "
            "each bin's observed frequency; the bars below count the rows per bin."
        ),
    ]
    if settings.n_resamples is not None:
        said.append(
            f"Intervals: each metric's `_lower` and `_upper` columns (and the band over "
            f"time) bound its {settings.confidence:.0%} percentile Poisson-bootstrap "
            f"interval, from {settings.n_resamples:,} replicates drawn with seed "
            f"{settings.seed}; see docs/significance.md."
        )
    said += weight_notes(settings.weight)
    if settings.reduction is not None:
        said.append(
            f"Probability vectors: the binned metrics measure the {settings.reduction} "
            "reduction; the diagrams show the confidence (top probability against "
            "accuracy)."
        )
    return [*said, *window_notes(settings.time, settings.every), *chart_notes(charts)]


def weight_notes(weight: str | None) -> list[str]:
    """The note on the weights, if any."""
    if weight is None:
        return []
    return [f"Rows are weighted by `{weight}`; counts are rows, not weights."]


def window_notes(time: str | None, every: str | None) -> list[str]:
    """The note on the time windows, if any."""
    if time is None:
        return []
    said = (
        f"Time windows are calendar-aligned, `{time}` truncated to {every}: a window is "
        "named by its start, which may come before its first row."
    )
    return [said]


def chart_notes(charts: bool) -> list[str]:
    """The note saying why the page has no charts, if it has none."""
    return [] if charts else [f"No charts: they need the plot extra ({PLOT_EXTRA})."]
