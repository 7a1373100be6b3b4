"""The page's sections, one function each: the header's facts, the summary, the reliability
diagrams, the metric over time, an extra section (the audit's) and the notes.

Each adds a section of plain-text blocks to the :class:`~polars_calib._report.html.Page`
(the template escapes them). The charts are the public plotting
functions', laid out by the page's rule (:func:`layout`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_calib._audit import Audit
from polars_calib._plot.audit import plot_audit
from polars_calib._plot.over_time import plot_metric_over_time
from polars_calib._plot.reliability import plot_reliability
from polars_calib._report.html import (
    Details,
    Fact,
    ItemList,
    Page,
    Paragraph,
    cell,
    generated,
    has_charts,
    table,
)
from polars_calib._report.model import Section, Settings, Tables, WindowSettings
from polars_calib._report.notes import describe_bins
from polars_calib._version import __version__

__all__ = [
    "audit_section",
    "extra_section",
    "facts",
    "layout",
    "non_finite",
    "notes_section",
    "over_time_part",
    "over_time_section",
    "parts_by_first_key",
    "reliability_section",
    "summary_part",
    "summary_section",
    "window_facts",
]

PANELS = 4
"""The most values of the last key drawn as one panel each (else one colour per group)."""

WORST = 10
"""The slices the audit section lists."""


def layout(
    table: pl.DataFrame, keys: Sequence[str], least: int = 1
) -> tuple[list[str], str | None]:
    """The colour keys and the facet of a chart by `keys`.

    With at least `least` keys, the last one gets a panel per value when it has at
    most ``PANELS`` values, and the others the colours; otherwise every key gives the
    colours, in one panel.
    """
    keys = list(keys)
    if len(keys) >= max(least, 1) and table.get_column(keys[-1]).n_unique() <= PANELS:
        return keys[:-1], keys[-1]
    return keys, None


def facts(tables: Tables, settings: Settings) -> list[Fact]:
    """The header's facts: data, columns, rows, groups, windows, bins, metrics, ..."""
    summary, keys = tables.summary, settings.by
    weight = f", weight {settings.weight}" if settings.weight else ""
    groups = f"{summary.height:,} by {', '.join(keys)}" if keys else "one, the log"
    found = [
        Fact("Data", settings.source),
        Fact("Columns", f"probability {settings.prob}, label {settings.label}{weight}"),
        Fact("Rows", f"{tables.used:,} used, {tables.refused:,} refused"),
        Fact("Groups", groups),
    ]
    found += window_facts(tables.over_time, settings.time, settings.every)
    found += [
        Fact("Bins", describe_bins(settings.binning)),
        Fact("Metrics", ", ".join(settings.metrics)),
    ]
    if settings.n_resamples is not None:
        text = (
            f"{settings.confidence:.0%} bootstrap intervals, {settings.n_resamples:,} "
            f"replicates, seed {settings.seed}"
        )
        found.append(Fact("Intervals", text))
    return [
        *found,
        Fact("Package", f"polars_calib {__version__}, Polars {pl.__version__}"),
        generated(),
    ]


def window_facts(over_time: pl.DataFrame | None, time: str | None, every: str | None) -> list[Fact]:
    """The header's fact on the time windows (how many, the first and last start), if any."""
    if time is None or over_time is None or not over_time.height:
        return []
    starts = over_time.get_column(time).drop_nulls()
    if not starts.len():
        return []
    first, last = (cell(when)[0] for when in (starts.min(), starts.max()))
    text = (
        f"{starts.n_unique():,} windows of {every} by {time}, "
        f"from {first} to {last} (window starts)"
    )
    return [Fact("Time windows", text)]


def summary_section(page: Page, tables: Tables, settings: Settings) -> None:
    """The summary over the whole log, as a sortable table (or a sentence: no rows)."""
    summary_part(page, tables.summary, settings.by)


def summary_part(page: Page, summary: pl.DataFrame, keys: Sequence[str]) -> None:
    """The "Summary" section: `summary` per `keys`, sortable (or a sentence: no rows)."""
    part = page.part("summary", "Summary")
    if summary.height:
        caption = (
            f"Calibration metrics per {', '.join(keys)} over the whole log"
            if keys
            else "Calibration metrics of the whole log"
        ) + ". Select a column heading to sort."
        part.blocks.append(table(summary, caption, "summary-table"))
    else:
        part.blocks.append(Paragraph("The log holds no rows: there is nothing to measure."))


def reliability_section(page: Page, tables: Tables, settings: Settings) -> None:
    """One reliability diagram per value of the first key, a panel per value of the last."""
    part = page.part("reliability", "Reliability diagrams")
    part.blocks.append(
        Paragraph(
            "Points on the dashed diagonal are calibrated: above it, the model "
            "under-predicts; below it, it over-predicts. Hover a point for its numbers."
        )
    )
    for chart, description in _reliability_charts(tables.reliability, settings):
        part.blocks.append(page.figure(chart, description, description))


def _reliability_charts(reliability: pl.DataFrame, settings: Settings) -> list[tuple[Any, str]]:
    """(chart, description) per value of the first key: facets by the last key."""
    drawn = []
    for name, part, rest in parts_by_first_key(reliability, settings.by):
        if int(part.get_column("count").sum()) == 0:
            continue
        colours, facet = layout(part, rest)
        title = f"Reliability of {settings.prob}: {name}"
        chart = plot_reliability(part, by=colours, facet=facet, title=title)
        split = (f", one panel per {facet}" if facet else "") + (
            f", one colour per {' / '.join(colours)}" if colours else ""
        )
        description = (
            f"Reliability diagram of {name}{split}: observed frequency of positives "
            f"against mean predicted probability per bin, with {settings.confidence:.0%} "
            "intervals, over a histogram of the rows per bin."
        )
        drawn.append((chart, description))
    return drawn


def parts_by_first_key(
    table: pl.DataFrame, keys: Sequence[str]
) -> list[tuple[str, pl.DataFrame, list[str]]]:
    """`table` split by the values of the first key: (its name, its rows without the
    key, the other keys), in order of appearance; the whole table without keys."""
    if not keys:
        return [("the whole log", table, [])]
    first, rest = keys[0], list(keys[1:])
    return [
        (f"{first} = {value}", table.filter(pl.col(first).eq_missing(value)).drop(first), rest)
        for value in table.get_column(first).unique(maintain_order=True).to_list()
    ]


def over_time_section(page: Page, tables: Tables, settings: Settings, drawn: bool) -> None:
    """The first metric per window (drawn when charts are), and the numbers per window."""
    assert tables.over_time is not None and settings.time is not None
    over_time = tables.over_time
    # The first metric, named after the reduction for probability vectors.
    first = settings.metrics[0]
    named = first if settings.reduction is None else f"{settings.reduction}_{first}"
    metric = [name for name in (first, named) if name in over_time.columns][-1:]
    over_time_part(page, over_time, metric[0] if drawn and metric else None, settings)


def over_time_part(
    page: Page, over_time: pl.DataFrame, metric: str | None, settings: WindowSettings
) -> None:
    """The "Over time" section: `metric` per window (if given), and the numbers per window."""
    assert settings.time is not None
    time, every = settings.time, settings.every
    part = page.part("over-time", "Over time")
    if metric is not None:
        band = f"{metric}_lower" in over_time.columns
        colours, facet = layout(over_time, settings.by, least=2)
        description = (
            f"Line chart of {metric} per {every} window of {time}"
            + (f", one line per {' / '.join(colours)}" if colours else "")
            + (f", one panel per {facet}" if facet else "")
            + (f", with its {settings.confidence:.0%} bootstrap interval as a band" if band else "")
            + "."
        )
        title = f"{metric} per {every} window"
        chart = plot_metric_over_time(over_time, metric, time, by=colours, facet=facet, title=title)
        # The chart draws NaN and infinite values as gaps: counted with the page's others.
        drawn_columns = [metric, *([f"{metric}_lower", f"{metric}_upper"] * band)]
        page.missing += non_finite(over_time.select(drawn_columns))
        part.blocks.append(page.figure(chart, description, description))
    caption = f"The summary per {every} window of {time}."
    part.blocks.append(
        Details("The numbers per window", [table(over_time, caption, "over-time-table")])
    )


def non_finite(frame: pl.DataFrame) -> int:
    """How many values of `frame`'s float columns are NaN or infinite."""
    floats = frame.select(pl.col(pl.Float32, pl.Float64).is_finite().not_().sum())
    return int(sum(floats.row(0))) if floats.width else 0


def audit_section(result: Audit, interval: float | None) -> Section:
    """The "Fairness audit" section: `result`'s worst slices and its forest plot.

    The table is ``result.worst(10)`` without the columns the slice's name repeats
    (``attributes`` and the attribute columns); the chart is
    :func:`polars_calib.plot_audit` of every slice (when the plot extra is
    installed). `interval` is the level of the audit's intervals, if it has them.
    """
    metric = result.metrics[0]
    worst = result.worst(WORST).drop("attributes", *result.by)
    order = max(result.slices.get_column("order").to_list(), default=0)
    overall = result.slices.get_column("order").eq(0).sum()
    n_slices = result.slices.height - overall  # an overall row is no slice
    size = "slices" if result.include_small else f"slices of at least {result.min_count:,} rows"
    # An audit within the model key: each model's slices against that model's rows.
    each, per, whole, reference = "", "", "the whole log", f"the whole log's {metric} (dashed line)"
    if result.within:
        keys = ", ".join(result.within)
        each, per = f", within each {keys}", f" per {keys}"
        whole = f"its {keys}'s overall row"
        reference = f"each {keys}'s overall {metric} (its first row)"
    intro = (
        f"Calibration of every value of {', '.join(result.by)} and of their "
        f"intersections of up to {order} attributes{each} ({n_slices:,} slices, from "
        f"polars_calib.audit): the {WORST} {size} with the largest {metric}{per} "
        f"(`_difference` and `_ratio` compare a slice with {whole}; `p_adjusted` is "
        "its calibration test adjusted for the number of slices), then the forest plot "
        f"of every slice (hollow grey: too small to judge; {reference})."
    )
    chart = plot_audit(result, title=f"{metric} by slice") if has_charts() else None
    band = f", with {interval:.0%} bootstrap intervals" if interval is not None else ""
    alt_text = (
        f"Forest plot of {metric} per slice of {', '.join(result.by)}{each}{band}, against "
        f"{reference}."
    )
    return Section("audit", "Fairness audit", intro, worst, chart, alt_text)


def extra_section(page: Page, extra: Section, charts: bool) -> None:
    """A feature's section: its heading, intro, chart (with charts) and sortable table."""
    part = page.part(extra.id, extra.title)
    if extra.intro:
        part.blocks.append(Paragraph(extra.intro))
    if extra.chart is not None and charts:
        text = extra.alt_text or extra.title
        part.blocks.append(page.figure(extra.chart, text, text))
    if extra.table is not None:
        part.blocks.append(table(extra.table, extra.title, f"{extra.id}-table"))


def notes_section(page: Page, notes: Sequence[str]) -> None:
    """The notes, as a list."""
    page.part("notes", "Notes").blocks.append(ItemList(list(notes)))
