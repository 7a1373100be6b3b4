"""Running charts over a log's rows (the drift charts), one panel per group, decimated.

The monitoring feature computes the rows (each group's charts in time order) and lays
them out in a :class:`DriftFrame`; the backends draw it
(:func:`polars_calib._plot.altair_backend.drift`,
:func:`polars_calib._plot.matplotlib_backend.drift`). A log of millions of rows is
not drawn row by row: :func:`decimate` keeps a bounded number of rows per panel and
series, and every row that carries a mark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_calib._plot import altair_backend, matplotlib_backend
from polars_calib._plot.common import PANEL, SERIES, require

__all__ = ["MAX_POINTS", "SERIES", "DriftFrame", "check_max_points", "decimate", "draw"]

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
    rows: int
    """The rows of the charts before decimation (the drawn rows are ``frame.height``)."""


def check_max_points(max_points: int) -> int:
    """`max_points`, checked: an int of at least 8."""
    if isinstance(max_points, bool) or not isinstance(max_points, int):
        msg = f"`max_points` must be an int, got {max_points!r}"
        raise TypeError(msg)
    if max_points < 8:
        msg = f"`max_points` must be at least 8, got {max_points}"
        raise ValueError(msg)
    return max_points


def decimate(frame: pl.DataFrame, order: str, max_points: int) -> pl.DataFrame:
    """The rows of `frame` worth drawing: at most about `max_points` per ``PANEL``, plus marks.

    Per panel and series (``PANEL``, ``SERIES``), the rows in `order` are cut into
    ``b = max_points // (4 s)`` buckets of consecutive rows (``s`` series in the
    panel); each bucket keeps its first and last rows and those of its smallest and
    largest ``value`` (the M4 rule: a line through them has the same pixels as one
    through every row when a bucket is a pixel wide). Every ``alarm`` row is kept,
    and the largest value (in absolute value) of each run, the rows between two
    alarms of a series. A panel of at most `max_points` rows is drawn whole.
    """
    keys = [PANEL, SERIES]
    series = pl.col(SERIES).n_unique().over(PANEL)
    buckets = (pl.lit(max_points) // (4 * series)).clip(lower_bound=1)
    size = pl.len().over(keys)
    position = pl.int_range(pl.len()).over(keys, order_by=order)
    run = pl.col("alarm").shift(1, fill_value=False).cum_sum().over(keys, order_by=order)
    frame = frame.with_columns(
        (position * buckets // size).alias("__bucket__"), run.alias("__run__")
    )
    bucket = [*keys, "__bucket__"]
    value = pl.col("value").fill_nan(None)
    kept = (
        (pl.len().over(PANEL) <= max_points)
        | pl.col("alarm")
        | (pl.col(order) == pl.col(order).min().over(bucket))
        | (pl.col(order) == pl.col(order).max().over(bucket))
        | (pl.col(order) == pl.col(order).get(value.arg_min()).over(bucket))
        | (pl.col(order) == pl.col(order).get(value.arg_max()).over(bucket))
        | (pl.col(order) == pl.col(order).get(value.abs().arg_max()).over([*keys, "__run__"]))
    )
    return frame.filter(kept.fill_null(False)).drop("__bucket__", "__run__")


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
