"""Writing HTML: escaping, sortable tables, chart figures, the document around them."""

from __future__ import annotations

import datetime as dt
import functools
import html
import importlib.util
import json
import math
import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_calib._report.assets import (
    EMBED_SCRIPT,
    GLOBALS,
    POLICY,
    SORT_SCRIPT,
    STYLE,
)
from polars_calib._version import __version__

__all__ = ["Page", "cell", "document", "e", "has_charts", "table"]

NUM = ' class="num"'

# Summary columns shown with thousands separators rather than 4 decimals.
COUNTS = ("count", "refused")


def has_charts() -> bool:
    """Whether Altair and vl-convert (the plot extra) are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("altair", "vl_convert"))


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


def e(value: object) -> str:
    """`value` as HTML text, quotes escaped (for attributes too)."""
    return html.escape(str(value), quote=True)


def spec(chart: Any, description: str) -> dict[str, Any]:
    """An Altair chart as a Vega-Lite specification with its data inlined."""
    import altair as alt

    with alt.data_transformers.enable("default", max_rows=None):
        spec: dict[str, Any] = chart.to_dict()
    spec["description"] = description  # the SVG's aria-label
    return spec


class Page:
    """The HTML of a page being written, and its chart specifications."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.specs: list[dict[str, Any]] = []

    def add(self, *parts: str) -> None:
        self.parts.extend(parts)

    def figure(self, chart: Any, caption: str, description: str) -> None:
        index = len(self.specs)
        self.specs.append(spec(chart, description))
        self.add(
            f'<figure><div class="chart" role="img" aria-label="{e(description)}" '
            f'data-spec="spec-{index}"></div>',
            f"<figcaption>{caption}</figcaption></figure>",
        )


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


def table(frame: pl.DataFrame, caption: str, table_id: str) -> str:
    """A sortable HTML table of `frame`, every value with its sort key."""
    numeric = {name for name, dtype in frame.schema.items() if dtype.is_numeric()}
    head = "".join(
        f'<th scope="col"{NUM if name in numeric else ""}>'
        f'<button type="button" title="Sort by {e(name)}">{e(name)}</button></th>'
        for name in frame.columns
    )
    rows = []
    for row in frame.iter_rows():
        cells = []
        for name, value in zip(frame.columns, row):
            shown, key = cell(value, name)
            kind = ' class="num"' if name in numeric else ""
            cells.append(f'<td{kind} data-value="{e(key)}">{e(shown)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table class="sortable" id="{table_id}">'
        f"<caption>{caption}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def document(
    title: str,
    source: str,
    facts: Sequence[tuple[str, str]],
    sections: Sequence[tuple[str, str]],
    page: Page,
) -> str:
    """The HTML document: a header of `facts` and links to `sections`, the page, the scripts."""
    nav = "".join(f'<li><a href="#{e(ident)}">{e(name)}</a></li>' for ident, name in sections)
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="polars_calib {e(__version__)}">',
        f"<title>{e(title)}: {e(source)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f'<header><h1>{e(title)}</h1><dl class="facts">',
        *(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts),
        f'</dl><nav aria-label="Sections"><ul>{nav}</ul></nav></header><main>',
    ]
    tail = ["</main>", f"<footer>Made with polars_calib {e(__version__)}.</footer>"]
    if page.specs:
        for index, chart in enumerate(page.specs):
            text = json.dumps(chart, allow_nan=False, default=str).replace("</", "<\\/")
            tail.append(f'<script type="application/json" id="spec-{index}">{text}</script>')
        tail.append(f"<script>{vega_bundle()}</script>")
        tail.append(f"<script>{EMBED_SCRIPT}</script>")
    tail.append(f"<script>{SORT_SCRIPT}</script></body></html>")
    return "\n".join([*head, *page.parts, *tail]) + "\n"


def generated() -> str:
    """When the page is made, in UTC to the second, as a ``<time>`` element."""
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    return f'<time datetime="{now.isoformat()}">{now:%Y-%m-%d %H:%M:%S} UTC</time>'
