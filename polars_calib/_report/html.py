"""Writing HTML: the page's content as blocks, rendered by one autoescaping template.

The sections fill a :class:`Page` with plain-text blocks (paragraphs, lists, sortable
tables, chart figures, details); :func:`document` renders them with the Jinja2
template ``templates/page.html``, which escapes every value. The only text put in the
page as it is: its own style and scripts (hashed into its Content-Security-Policy) and
the charts' specifications, written by :func:`json_text` without a ``<``, ``>`` or
``&``, so that no data value can end their ``<script>`` element or change how the
HTML parser reads it.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import importlib.util
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import polars as pl

from polars_calib._report.assets import (
    EMBED_SCRIPT,
    GLOBALS,
    POLICY,
    SORT_SCRIPT,
    STYLE,
)
from polars_calib._report.notes import PLOT_EXTRA
from polars_calib._version import __version__

__all__ = [
    "Details",
    "Fact",
    "Figure",
    "ItemList",
    "Page",
    "Paragraph",
    "Table",
    "cell",
    "document",
    "has_charts",
    "json_text",
    "table",
]

# Summary columns shown with thousands separators rather than 4 decimals.
COUNTS = ("count", "refused")

# JSON escapes for the characters that mean something to the HTML parser inside a
# <script> element ("</script", "<!--") or to old JavaScript parsers (U+2028, U+2029).
JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def has_charts() -> bool:
    """Whether Altair and vl-convert (the plot extra) are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("altair", "vl_convert"))


def environment() -> Any:
    """The Jinja2 environment of the page's template (autoescaping on, strict names)."""
    try:
        import jinja2
    except ImportError as error:
        msg = f"the HTML report needs the `jinja2` package; install it with {PLOT_EXTRA}"
        raise ImportError(msg) from error
    return jinja2.Environment(
        loader=jinja2.PackageLoader("polars_calib._report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (built once per process, about 0.9 MB)."""
    import altair as alt
    import vl_convert as vlc

    version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    try:
        bundle = vlc.javascript_bundle(GLOBALS, vl_version=version)
    except ValueError:  # a Vega-Lite version vl-convert does not ship: its newest
        bundle = vlc.javascript_bundle(GLOBALS)
    return script_text(bundle)


def script_text(text: str) -> str:
    """Script text that cannot close its <script> element early.

    ``<\\/`` means ``</`` in a JavaScript string, regular expression or JSON text
    alike; only the closing tag is touched (``</`` alone also opens regex literals).
    """
    return re.sub(r"</(script)", r"<\\/\\1", text, flags=re.IGNORECASE)


def json_text(value: Any) -> str:
    """`value` as JSON text safe inside a ``<script>`` element: ``<``, ``>``, ``&`` escaped.

    The escapes (``\\u003c``, ...) read back as the same characters in ``JSON.parse``.
    """
    return json.dumps(value, allow_nan=False, default=str, ensure_ascii=False).translate(
        JSON_ESCAPES
    )


def source_hash(text: str) -> str:
    """The Content-Security-Policy source allowing the inline script or style `text`."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def finite(value: Any) -> tuple[Any, int]:
    """`value` (JSON-like) with every NaN or infinite float as None, and how many there were."""
    if isinstance(value, float):
        return (value, 0) if math.isfinite(value) else (None, 1)
    if isinstance(value, dict):
        pairs = [(key, *finite(item)) for key, item in value.items()]
        return {key: item for key, item, _ in pairs}, sum(n for *_, n in pairs)
    if isinstance(value, (list, tuple)):
        items = [finite(item) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    return value, 0


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of text."""

    text: str
    kind: ClassVar[str] = "paragraph"


@dataclass(frozen=True)
class ItemList:
    """A bulleted list of texts."""

    items: Sequence[str]
    kind: ClassVar[str] = "list"


@dataclass(frozen=True)
class Figure:
    """A chart (drawn from the specification `spec`, a script element's id) and its caption."""

    spec: str
    caption: str
    description: str
    kind: ClassVar[str] = "figure"


@dataclass(frozen=True)
class Cell:
    """A table cell: its shown text, its sort value, whether it is a number."""

    shown: str
    key: str
    numeric: bool


@dataclass(frozen=True)
class Column:
    """A table heading: the column's name, whether it holds numbers."""

    name: str
    numeric: bool


@dataclass(frozen=True)
class Table:
    """A sortable table: its id, caption, headings and rows of cells."""

    id: str
    caption: str
    columns: Sequence[Column]
    rows: Sequence[Sequence[Cell]]
    kind: ClassVar[str] = "table"


@dataclass(frozen=True)
class Details:
    """Blocks shown on request, under a summary line."""

    summary: str
    blocks: Sequence[Any]
    kind: ClassVar[str] = "details"


@dataclass(frozen=True)
class Fact:
    """A fact of the header: its name, its text, and a machine-readable time (``<time>``)."""

    name: str
    text: str
    when: str | None = None


@dataclass
class Part:
    """A section of the page: its id, its heading and its blocks."""

    id: str
    title: str
    blocks: list[Any] = field(default_factory=list)


class Page:
    """A page being laid out: its sections, its chart specifications, its missing values."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.specs: list[dict[str, Any]] = []
        self.missing = 0  # NaN or infinite chart values, drawn as missing

    def part(self, ident: str, title: str) -> Part:
        """Start a section of the page (its blocks are added to what this returns)."""
        self.parts.append(Part(ident, title))
        return self.parts[-1]

    def figure(self, chart: Any, caption: str, description: str) -> Figure:
        """A figure of the Altair `chart` (its NaN and infinite values drawn as missing)."""
        import altair as alt

        with alt.data_transformers.enable("default", max_rows=None):
            spec: dict[str, Any] = chart.to_dict()
        spec["description"] = description  # the SVG's aria-label
        spec, missing = finite(spec)
        self.missing += missing
        self.specs.append(spec)
        return Figure(f"spec-{len(self.specs) - 1}", caption, description)


def cell(value: object, column: str = "") -> tuple[str, str]:
    """A table cell's shown text and its sort value (empty for null)."""
    if value is None:
        return "—", ""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN", ""
        if math.isinf(value):
            return ("∞" if value > 0 else "−∞"), ("Infinity" if value > 0 else "-Infinity")
        shown = f"{value:,.0f}" if column in COUNTS else f"{value:.4f}"
        return shown, repr(value)
    if isinstance(value, bool):
        return str(value).lower(), str(value).lower()
    if isinstance(value, int):
        return f"{value:,}", str(value)
    if isinstance(value, dt.datetime):
        shown = value.isoformat(sep=" ", timespec="seconds")
        if value.time() == dt.time(0) and value.tzinfo is None:
            shown = value.date().isoformat()
        return shown, value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat(), value.isoformat()
    return str(value), str(value)


def table(frame: pl.DataFrame, caption: str, table_id: str) -> Table:
    """A sortable table of `frame`, every value with its sort key."""
    numeric = [dtype.is_numeric() for dtype in frame.schema.values()]
    columns = [Column(name, flag) for name, flag in zip(frame.columns, numeric)]
    rows = [
        [Cell(*cell(value, name), flag) for name, flag, value in zip(frame.columns, numeric, row)]
        for row in frame.iter_rows()
    ]
    return Table(table_id, caption, columns, rows)


def document(title: str, source: str, facts: Sequence[Fact], page: Page) -> str:
    """The HTML document: a header of `facts` and links to the sections, the page, the scripts.

    Its Content-Security-Policy allows its own style and scripts by their hashes,
    and nothing else: no other inline script or style, no ``eval``, no request.
    """
    template = environment().get_template("page.html")
    from markupsafe import Markup  # Jinja2's own dependency

    scripts = [SORT_SCRIPT]
    if page.specs:
        scripts = [vega_bundle(), EMBED_SCRIPT, SORT_SCRIPT]
    policy = POLICY.format(
        scripts=" ".join(source_hash(text) for text in scripts), style=source_hash(STYLE)
    )
    specs = [
        {"id": f"spec-{index}", "json": Markup(json_text(spec))}
        for index, spec in enumerate(page.specs)
    ]
    return str(
        template.render(
            title=title,
            source=source,
            version=__version__,
            policy=policy,
            style=Markup(STYLE),
            facts=facts,
            parts=page.parts,
            specs=specs,
            scripts=[Markup(text) for text in scripts],
        )
    )


def generated() -> Fact:
    """When the page is made, in UTC to the second."""
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    return Fact("Generated", f"{now:%Y-%m-%d %H:%M:%S} UTC", now.isoformat())
