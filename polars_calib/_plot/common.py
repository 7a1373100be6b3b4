"""What the charts share: the backends, the install hint, the layout rule, names and titles."""

from __future__ import annotations

import colorsys
import datetime as dt
import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from polars_calib._core.exprs import GroupKeys, Keys

__all__ = [
    "BACKENDS",
    "INSTALL_HINT",
    "MAX_FACETS",
    "OverTimeFrame",
    "PitFrame",
    "checked_table",
    "date_time",
    "default_layout",
    "escape",
    "group_label",
    "keyed",
    "labelled",
    "laid_out",
    "palette",
    "require",
    "side_by_side",
    "window_ticks",
]

BACKENDS = ("altair", "matplotlib")

INSTALL_HINT = "pip install 'polars_calib[plot]'"

# With several group keys and neither `by` nor `facet` given, the last key gets one
# panel per value when it has at most this many values (the command line's rule).
MAX_FACETS = 4

# Columns added to the drawing frames; the leading underscores keep them apart from user keys.
GROUP = "__group__"
PANEL = "__panel__"
SERIES = "__series__"  # the drift charts' series (a line and colour each)
ALERT = "__alert__"  # a window the monitor flags (plot_monitor_windows)
BAR_LOWER = "__bar_lower__"
BAR_UPPER = "__bar_upper__"
LABEL = "__label__"

# Share of each bin's width left empty on either side, so neighbouring bars stay apart.
BAR_PADDING = 0.06

# The reliability diagram.
RELIABILITY_TITLE = "Reliability diagram"
X_TITLE = "Mean predicted probability"
Y_TITLE = "Observed frequency of positives"
COUNT_TITLE = "Count"
BIN_TITLE = "Predicted probability (bins)"
DIAGONAL_LABEL = "perfectly calibrated"

# The quantile reliability diagram.
QUANTILE_TITLE = "Quantile reliability diagram"
LEVEL_TITLE = "Nominal level"
OBSERVED_TITLE = "Observed frequency"

# The PIT histogram.
PIT_TITLE = "PIT histogram"
DENSITY_TITLE = "Density (share of weight × bins)"
UNIFORM_LABEL = "uniform (density 1)"

# The forest plot of an audit.
FOREST_TITLE = "Calibration by slice"
ORDER_TITLE = "Attributes fixed"
SMALL = "too small"
ROW_HEIGHT = 18  # pixels per slice (Altair); a matplotlib row is ROW_HEIGHT / 60 inches
FOREST_LOWER, FOREST_UPPER, FOREST_KIND = "__lower__", "__upper__", "__kind__"

# One colour per group: matplotlib's (and d3's) ten, twenty, then hues of their own.
TAB10 = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
TAB20 = (
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
    "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7",
    "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
)  # fmt: skip

# The most window starts marked on a time axis (every k-th start beyond).
MAX_TICKS = 8


@dataclass(frozen=True)
class OverTimeFrame:
    """What a backend draws of a metric over time: the frame and how to read it.

    `frame` holds the `time` column, the metric (and its bounds with `band`), the
    ``count`` when the summary has it (`counted`), ``ALERT`` when the windows are
    flagged (:func:`polars_calib.plot_monitor_windows`), the group label (``GROUP``) and,
    with a `facet`, the panel label (``PANEL``); `order` is the groups' order.
    """

    frame: pl.DataFrame
    metric: str
    time: str
    keys: list[str]
    facet: str | None
    order: list[Any]
    band: bool
    counted: bool
    title: str
    ticks: list[Any] = field(default_factory=list)

    @property
    def bounds(self) -> tuple[str, str]:
        """The columns of the metric's interval, ``<metric>_lower`` and ``<metric>_upper``."""
        return f"{self.metric}_lower", f"{self.metric}_upper"

    @property
    def legend(self) -> str:
        """The legend's title: the keys, joined."""
        return " / ".join(self.keys) if self.keys else ""


@dataclass(frozen=True)
class PitFrame:
    """What a backend draws of a PIT histogram: one row per panel, group and bin.

    `frame` holds the bin's ``lower`` and ``upper`` edges, its ``count``, ``weight``,
    ``share`` and ``density``, the group (``GROUP``), the group's legend entry with its
    test (``LABEL``), the bar's extent (``BAR_LOWER``, ``BAR_UPPER``) and, with a
    `facet`, the panel (``PANEL``). `order` is the groups' order, `facets` the panels'
    (``[None]`` without a facet).
    """

    frame: pl.DataFrame
    groups: list[str]
    facet: str | None
    facets: list[Any]
    order: list[str]
    n_bins: int
    closed: str
    title: str

    @property
    def legend(self) -> str:
        """The legend's title: the keys, then the test's degrees of freedom."""
        test = f"χ² test of uniformity, {self.n_bins - 1} df"
        return f"{' / '.join(self.groups)} ({test})" if self.groups else test

    @property
    def x_title(self) -> str:
        """The PIT axis's title: the bins and their closure."""
        return f"PIT ({self.n_bins} bins, {self.closed}-closed)"


def require(module: str, purpose: str) -> None:
    """Import `module`, or raise ImportError saying how to install the plot extra."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        msg = f"{purpose} needs the `{module}` package; install it with {INSTALL_HINT}"
        raise ImportError(msg) from error


def escape(name: str) -> str:
    """A column name as a Vega-Lite field, where dots and brackets address nested data."""
    return re.sub(r"([.\[\]\\])", r"\\\1", name)


def keyed(table: pl.DataFrame, by: Keys, what: str) -> tuple[pl.DataFrame, list[str] | None]:
    """`table` with the `by` keys that are expressions added, and the keys' names.

    ``None`` stays ``None`` (the chart's default layout). A key reading a column
    that `table` lacks raises ``ValueError`` naming it (`what` names the table).
    """
    if by is None:
        return table, None
    keys = GroupKeys(by)
    missing = [name for name in keys.columns() if name not in table.columns]
    if missing:
        msg = f"column {missing[0]!r} is not in the {what} (columns: {table.columns})"
        raise ValueError(msg)
    return keys.added_to(table), keys.names


def checked_table(table: object, columns: Sequence[str], what: str, source: str) -> pl.DataFrame:
    """`table` if it is a DataFrame with `columns`; ``TypeError`` or ``ValueError`` otherwise.

    `what` names the table (``"reliability table"``), `source` the function computing it.
    """
    if isinstance(table, pl.LazyFrame):
        msg = "`table` must be a DataFrame; collect the LazyFrame first"
        raise TypeError(msg)
    if not isinstance(table, pl.DataFrame):
        msg = f"`table` must be a {what} (a DataFrame), got {type(table).__name__}"
        raise TypeError(msg)
    missing = [name for name in columns if name not in table.columns]
    if missing:
        msg = (
            f"`table` is not a {what}: missing column(s) {', '.join(missing)}"
            f" (compute it with polars_calib.{source})"
        )
        raise ValueError(msg)
    return table


def laid_out(
    table: pl.DataFrame, by: Keys, facet: str | None, first: str, what: str
) -> tuple[pl.DataFrame, list[str], str | None]:
    """`table` with `by`'s expressions added, its colour columns and its facet column.

    The table's keys are its columns before `first`. Without `by`, they give the
    colours and the facet by :func:`default_layout` (or, with `facet`, every other key
    gives the colours). Raises ``ValueError`` for a column not in `table` (`what` names
    it) or a facet that is also a colour column.
    """
    if facet is not None and not isinstance(facet, str):
        msg = f"`facet` must be a column name, got {facet!r}"
        raise TypeError(msg)
    table, groups = keyed(table, by, what)
    if groups is None:
        keys = table.columns[: table.columns.index(first)]
        if facet is None:
            groups, facet = default_layout(table, keys)
        else:
            groups = [name for name in keys if name != facet]
    for name in [*groups, *([facet] if facet is not None else [])]:
        if name not in table.columns:
            msg = f"column {name!r} is not in the {what} (columns: {table.columns})"
            raise ValueError(msg)
    if facet is not None and facet in groups:
        msg = f"`facet` column {facet!r} is also a `by` column"
        raise ValueError(msg)
    return table, groups, facet


def side_by_side(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with each row's bar extent: the groups share each bin side by side.

    Group i of k (``GROUP``, in order of first appearance) gets the i-th k-th of the
    bin from ``lower`` to ``upper``, less ``BAR_PADDING`` of its width on either side.
    """
    order = frame.get_column(GROUP).unique(maintain_order=True)
    position = pl.col(GROUP).replace_strict(order, pl.int_range(order.len(), eager=True))
    width = pl.col("upper") - pl.col("lower")
    share = (1.0 - 2.0 * BAR_PADDING) / max(order.len(), 1)
    bar_lower = pl.col("lower") + width * (BAR_PADDING + share * position)
    return frame.with_columns(
        bar_lower.alias(BAR_LOWER), (bar_lower + width * share).alias(BAR_UPPER)
    )


def group_label(keys: Sequence[str], default: str) -> pl.Expr:
    """Each row's group, its keys' values joined by ``" / "`` (`default` without keys)."""
    if not keys:
        return pl.lit(default)
    return pl.concat_str(
        [pl.col(name).cast(pl.String).fill_null("null") for name in keys],
        separator=" / ",
    )


def labelled(frame: pl.DataFrame, keys: Sequence[str], label: pl.Expr, name: str) -> pl.DataFrame:
    """`frame` with `label` as the column `name`, one label per group of `keys`.

    A label is text, so two groups can share one: a null key and the text ``"null"``,
    or a separator inside a value (``"a / b"`` and ``"c"`` against ``"a"`` and
    ``"b / c"``). Drawn under one label, their points would merge into one line; so a
    later group whose label is taken gets `` (2)``, `` (3)``, ... in order of first
    appearance, and no group vanishes from a chart.
    """
    with_label = frame.with_columns(label.alias(name))
    if not keys:
        return with_label
    groups = with_label.select(*keys, name).unique(maintain_order=True)
    if groups.get_column(name).is_unique().all():
        return with_label
    names: list[str] = []
    used: set[str] = set()
    taken = set(groups.get_column(name).to_list())
    for text in groups.get_column(name).to_list():  # a loop over the groups, not the rows
        if text in used:
            count = 2
            while f"{text} ({count})" in taken:
                count += 1
            text = f"{text} ({count})"
            taken.add(text)
        used.add(text)
        names.append(text)
    groups = groups.with_columns(pl.Series(name, names, pl.String))
    return frame.join(groups, on=list(keys), how="left", nulls_equal=True, maintain_order="left")


def default_layout(table: pl.DataFrame, keys: Sequence[str]) -> tuple[list[str], str | None]:
    """The colour columns and the facet column of a diagram of `table` by `keys`.

    With two or more keys, the last one is the facet when it has at most
    ``MAX_FACETS`` values, and the others give the colours; otherwise every key
    gives the colours, in one panel.
    """
    keys = list(keys)
    if len(keys) >= 2 and table.get_column(keys[-1]).n_unique() <= MAX_FACETS:
        return keys[:-1], keys[-1]
    return keys, None


def palette(n: int) -> list[str]:
    """`n` distinct colours: the ten of ``tab10``, the twenty of ``tab20``, or `n` hues.

    Beyond twenty, the hues step by the golden ratio round the colour wheel, in two
    lightnesses, so that neighbouring groups differ most.
    """
    if n <= len(TAB10):
        return list(TAB10[:n])
    if n <= len(TAB20):
        return list(TAB20[:n])
    colours = []
    for index in range(n):
        hue = (index * 0.6180339887498949) % 1.0
        red, green, blue = colorsys.hls_to_rgb(hue, 0.42 if index % 2 else 0.62, 0.7)
        colours.append(f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}")
    return colours


def window_ticks(times: pl.Series) -> list[Any]:
    """The window starts a time axis marks: all, or every k-th to keep ``MAX_TICKS``.

    The ticks fall on window starts (a weekly window's Monday), where a time axis
    would choose its own (Sundays, for weeks).
    """
    if not times.dtype.is_temporal() or isinstance(times.dtype, (pl.Duration, pl.Time)):
        return []
    starts = times.drop_nulls().unique().sort().to_list()
    step = max(-(-len(starts) // MAX_TICKS), 1)
    return starts[::step]


def date_time(value: dt.date) -> dict[str, Any]:
    """A date or datetime as a Vega-Lite DateTime: local time, or UTC with a time zone.

    Altair writes a naive datetime (or a date) without a zone, which the browser reads
    as local time; a time-zone-aware one with its offset, an instant.
    """
    fields: dict[str, Any] = {"year": value.year, "month": value.month, "date": value.day}
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
            fields = {"year": value.year, "month": value.month, "date": value.day, "utc": True}
        fields |= {
            "hours": value.hour,
            "minutes": value.minute,
            "seconds": value.second,
            "milliseconds": value.microsecond // 1000,
        }
    return fields
