"""Running charts over a log's rows (the drift charts), one panel per group.

The monitoring feature computes the rows drawn (each group's charts in time order,
decimated to about :data:`MAX_POINTS` rows a panel and every row that carries a mark,
as it reads the log: :mod:`polars_calib._monitor.decimation`) and lays them out in a
:class:`DriftFrame`; the backends draw it
(:func:`polars_calib._plot.altair_backend.drift`,
:func:`polars_calib._plot.matplotlib_backend.drift`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_calib._plot import altair_backend, matplotlib_backend
from polars_calib._plot.common import PANEL, SERIES, require

__all__ = ["MAX_POINTS", "SERIES", "DriftFrame", "check_max_points", "draw"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure

MAX_POINTS = 2_000
"""Default bound of the rows drawn per panel, besides the marked rows."""


@dataclass(frozen=True)
class DriftFrame:
    """What a backend draws of running charts: one panel per group, one line per series.

    `frame` holds, per drawn row: ``PANEL`` (the group's label), the `time` column,
    ``SERIES``, ``value`` (the height drawn), ``limit`` (the series' threshold as
    drawn, or null), ``alarm`` (a marked row) and the `tooltip` columns; `panels` and
    `series` give the order, `colours` each series' colour.
    """

    frame: pl.DataFrame
    time: str
    panels: list[str]
    series: list[str]
    colours: list[str]
    tooltip: list[str]
    y_title: str
    title: str
    temporal: bool


def check_max_points(max_points: int) -> int:
    """`max_points`, checked: an int of at least 8."""
    if isinstance(max_points, bool) or not isinstance(max_points, int):
        msg = f"`max_points` must be an int, got {max_points!r}"
        raise TypeError(msg)
    if max_points < 8:
        msg = f"`max_points` must be at least 8, got {max_points}"
        raise ValueError(msg)
    return max_points


def draw(drawn: DriftFrame, backend: str, purpose: str) -> alt.LayerChart | alt.FacetChart | Figure:
    """Draw `drawn` with `backend` (``"altair"`` or ``"matplotlib"``), checked installed."""
    require(backend, f"{purpose}(backend={backend!r})")
    if backend == "altair":
        return altair_backend.drift(drawn)
    return matplotlib_backend.drift(drawn)


def panel_label(keys: list[str]) -> pl.Expr:
    """Each row's panel: ``key = value`` pairs joined by commas, or ``"all rows"``."""
    if not keys:
        return pl.lit("all rows").alias(PANEL)
    parts: list[Any] = []
    for index, name in enumerate(keys):
        parts += [pl.lit(f"{', ' if index else ''}{name} = ")]
        parts += [pl.col(name).cast(pl.String).fill_null("null")]
    return pl.concat_str(parts).alias(PANEL)
