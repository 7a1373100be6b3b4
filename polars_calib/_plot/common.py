"""What the charts share: the backends, the install hint, the layout rule, names and titles."""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

__all__ = [
    "BACKENDS",
    "INSTALL_HINT",
    "MAX_FACETS",
    "OverTimeFrame",
    "as_list",
    "default_layout",
    "escape",
    "group_label",
    "require",
]

BACKENDS = ("altair", "matplotlib")

INSTALL_HINT = "pip install 'polars_calib[plot]'"

# With several group keys and neither `by` nor `facet` given, the last key gets one
# panel per value when it has at most this many values (the command line's rule).
MAX_FACETS = 4

# Columns added to the drawing frames; the leading underscores keep them apart from user keys.
GROUP = "__group__"
PANEL = "__panel__"
BAR_LOWER = "__bar_lower__"
BAR_UPPER = "__bar_upper__"

# The reliability diagram.
RELIABILITY_TITLE = "Reliability diagram"
X_TITLE = "Mean predicted probability"
Y_TITLE = "Observed frequency of positives"
COUNT_TITLE = "Count"
BIN_TITLE = "Predicted probability (bins)"
DIAGONAL_LABEL = "perfectly calibrated"

# The forest plot of an audit.
FOREST_TITLE = "Calibration by slice"
ORDER_TITLE = "Attributes fixed"
SMALL = "too small"
ROW_HEIGHT = 18  # pixels per slice (Altair); a matplotlib row is ROW_HEIGHT / 60 inches
FOREST_LOWER, FOREST_UPPER, FOREST_KIND = "__lower__", "__upper__", "__kind__"


@dataclass(frozen=True)
class OverTimeFrame:
    """What a backend draws of a metric over time: the frame and how to read it.

    `frame` holds the `time` column, the metric (and its bounds with `band`), the
    ``count`` when the summary has it (`counted`), the group label (``GROUP``) and,
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

    @property
    def bounds(self) -> tuple[str, str]:
        """The columns of the metric's interval, ``<metric>_lower`` and ``<metric>_upper``."""
        return f"{self.metric}_lower", f"{self.metric}_upper"

    @property
    def legend(self) -> str:
        """The legend's title: the keys, joined."""
        return " / ".join(self.keys) if self.keys else ""


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


def as_list(value: str | Sequence[str] | None, argument: str) -> list[str] | None:
    """`value` (a column name or a sequence of them) as a list; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return list(value)
    msg = f"`{argument}` must be a column name or a sequence of them, got {value!r}"
    raise TypeError(msg)


def group_label(keys: Sequence[str], default: str) -> pl.Expr:
    """Each row's group, its keys' values joined by ``" / "`` (`default` without keys)."""
    if not keys:
        return pl.lit(default)
    return pl.concat_str(
        [pl.col(name).cast(pl.String).fill_null("null") for name in keys],
        separator=" / ",
    )


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
