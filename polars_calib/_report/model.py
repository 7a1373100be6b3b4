"""What a page is laid out from: its settings, its tables and its extra sections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import polars as pl

from polars_calib._core.binning import Binning

__all__ = ["Section", "Settings", "Tables", "WindowSettings"]


class WindowSettings(Protocol):
    """What the section over time reads of a page's settings (classification or regression)."""

    @property
    def by(self) -> list[str]: ...
    @property
    def time(self) -> str | None: ...
    @property
    def every(self) -> str | None: ...
    @property
    def confidence(self) -> float: ...


@dataclass(frozen=True)
class Settings:
    """What produced the report, shown in its header and notes.

    `reduction` is the one the tables measure: ``"confidence"`` for probability
    vectors when none was asked for, None for binary data.
    """

    source: str
    prob: str
    label: str
    by: list[str]
    time: str | None
    every: str | None
    binning: Binning
    metrics: list[str]
    weight: str | None
    confidence: float
    reduction: str | None
    min_count: int
    title: str
    n_resamples: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class Section:
    """An extra section of the page, drawn from a table and a chart a feature returns.

    The fairness audit (its worst slices and forest plot) plugs in here: the page
    shows `intro`, the `table` (sortable) and the `chart` (an Altair chart), each
    only when given.
    """

    id: str
    title: str
    intro: str = ""
    table: pl.DataFrame | None = None
    chart: Any = None
    alt_text: str = ""


@dataclass(frozen=True)
class Tables:
    """The tables a report shows, each as the Python API returns it."""

    summary: pl.DataFrame
    reliability: pl.DataFrame
    over_time: pl.DataFrame | None
    refused_message: str | None
    sections: tuple[Section, ...] = ()

    @property
    def used(self) -> int:
        """The rows the summary used."""
        return int(self.summary.get_column("count").sum()) if self.summary.height else 0

    @property
    def refused(self) -> int:
        """The rows the summary refused."""
        return int(self.summary.get_column("refused").sum()) if self.summary.height else 0
