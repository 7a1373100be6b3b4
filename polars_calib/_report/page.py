"""The page of a report's tables: its sections in order, in one HTML document."""

from __future__ import annotations

from polars_calib._report import sections
from polars_calib._report.html import Page, document, has_charts
from polars_calib._report.model import Settings, Tables
from polars_calib._report.notes import notes

__all__ = ["render"]


def render(tables: Tables, settings: Settings) -> tuple[str, tuple[str, ...]]:
    """Lay out a report's tables as one HTML page; return it and its notes.

    The sections: the summary; the reliability diagrams (with charts and a usable
    row); the metric over time (with windows); the extra sections (the audit's); the
    notes. A section without its table is left out, never drawn empty.
    """
    charts = has_charts()
    said = notes(tables, settings, charts)
    page = Page()
    sections.summary_section(page, tables, settings)
    drawn = charts and tables.used > 0
    if drawn:
        sections.reliability_section(page, tables, settings)
    over_time = tables.over_time
    if settings.time is not None and over_time is not None and over_time.height:
        sections.over_time_section(page, tables, settings, drawn)
    for extra in tables.sections:
        sections.extra_section(page, extra, charts)
    if page.missing:
        said.append(
            f"{page.missing:,} values of the charts' data are NaN or infinite: the charts "
            "draw them as missing (a gap, or no point); the tables show them as they are."
        )
    sections.notes_section(page, said)
    facts = sections.facts(tables, settings)
    html = document(settings.title, settings.source, facts, page)
    return html, tuple(said)
