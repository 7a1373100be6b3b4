"""The page of a regression report: its settings, sections and notes, in one HTML document.

The sections are those of the classification page where they are the same (the
summary, the metric over time, the notes) and two of their own: the calibration
diagrams (:func:`polars_calib.plot_quantile_reliability`) and the PIT histograms
(:func:`polars_calib.plot_pit_histogram`), one per value of the first key, laid out
by the page's rule (:func:`~polars_calib._report.sections.layout`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from polars_calib._core.options import Curve
from polars_calib._plot.regression import plot_pit_histogram, plot_quantile_reliability
from polars_calib._report import sections
from polars_calib._report.html import Fact, Page, Paragraph, document, generated, has_charts
from polars_calib._report.model import Tables
from polars_calib._report.notes import chart_notes, data_notes, weight_notes, window_notes
from polars_calib._version import __version__

__all__ = ["PIT_BARS", "RegressionSettings", "pit_bars", "render_regression"]

PIT_BARS = 20
"""The most bars of a PIT histogram: the table's bins are merged into the largest
number of bars that divides them and is at most this."""

CURVE_NAMES = {"interval": "central-interval", "quantile": "quantile"}


@dataclass(frozen=True)
class RegressionSettings:
    """What produced a regression report, shown in its header and notes."""

    source: str
    target: str
    columns: str
    by: list[str]
    time: str | None
    every: str | None
    n_levels: int
    curve: Curve
    metrics: list[str]
    weight: str | None
    confidence: float
    min_count: int
    title: str

    @property
    def bins(self) -> int:
        """The number of bins of the PIT: ``2 (n_levels - 1)``."""
        return 2 * (self.n_levels - 1)


def pit_bars(n_bins: int) -> int:
    """The bars of a PIT histogram of `n_bins` bins: the largest divisor at most ``PIT_BARS``."""
    return max(k for k in range(1, min(n_bins, PIT_BARS) + 1) if n_bins % k == 0)


def render_regression(
    tables: Tables, stats: pl.DataFrame, settings: RegressionSettings
) -> tuple[str, tuple[str, ...]]:
    """Lay out a regression report as one HTML page; return it and its notes.

    The sections: the summary; the calibration diagrams and the PIT histograms (with
    charts and a usable row); the first metric over time (with windows); the notes.
    """
    charts = has_charts()
    said = [*data_notes(tables, settings.by, settings.min_count, NULLS), *notes(settings, charts)]
    page = Page()
    sections.summary_part(page, tables.summary, settings.by)
    drawn = charts and tables.used > 0
    if drawn:
        curve_section(page, tables, settings)
        pit_section(page, stats, settings)
    over_time = tables.over_time
    if settings.time is not None and over_time is not None and over_time.height:
        metric = settings.metrics[0] if drawn else None
        sections.over_time_part(page, over_time, metric, settings)
    if page.missing:
        said.append(
            f"{page.missing:,} values of the charts' data are NaN or infinite: the charts "
            "draw them as missing (a gap, or no point); the tables show them as they are."
        )
    sections.notes_section(page, said)
    html = document(settings.title, settings.source, facts(tables, settings), page)
    return html, tuple(said)


NULLS = "target, mean, standard deviation or weight"
"""The columns whose nulls make a row ignored, as the notes say it."""


def facts(tables: Tables, settings: RegressionSettings) -> list[Fact]:
    """The header's facts: data, columns, rows, groups, windows, levels, metrics, ..."""
    keys = settings.by
    weight = f", weight {settings.weight}" if settings.weight else ""
    groups = f"{tables.summary.height:,} by {', '.join(keys)}" if keys else "one, the log"
    levels = (
        f"{settings.n_levels} levels j/{settings.n_levels - 1} of the "
        f"{CURVE_NAMES[settings.curve]} curve"
    )
    return [
        Fact("Data", settings.source),
        Fact("Columns", f"target {settings.target}, {settings.columns}{weight}"),
        Fact("Rows", f"{tables.used:,} used, {tables.refused:,} refused"),
        Fact("Groups", groups),
        *sections.window_facts(tables.over_time, settings.time, settings.every),
        Fact("Levels", levels),
        Fact("Metrics", ", ".join(settings.metrics)),
        Fact("Package", f"polars_calib {__version__}, Polars {pl.__version__}"),
        generated(),
    ]


def curve_section(page: Page, tables: Tables, settings: RegressionSettings) -> None:
    """One calibration diagram per value of the first key, a panel per value of the last."""
    part = page.part("calibration", "Calibration diagrams")
    if settings.curve == "interval":
        reading = (
            "the share of targets inside each central interval against its level. Below "
            "the dashed diagonal, the intervals hold fewer targets than they promise "
            "(over-confident: the standard deviations are too small); above it, more "
            "(under-confident)."
        )
    else:
        reading = (
            "the share of targets at or below each predicted quantile against its level. "
            "A curve above the diagonal below the median and below it above is "
            "over-confident (too many targets in both tails); the reverse, "
            "under-confident; a curve wholly above or below it, a biased mean."
        )
    text = f"Each line is a group's {reading} Hover a point for its numbers."
    part.blocks.append(Paragraph(text))
    for name, curves, rest in sections.parts_by_first_key(tables.reliability, settings.by):
        if int(curves.get_column("count").sum()) == 0:
            continue
        colours, facet = sections.layout(curves, rest)
        title = f"{CURVE_NAMES[settings.curve].capitalize()} calibration: {name}"
        chart = plot_quantile_reliability(curves, by=colours, facet=facet, title=title)
        description = (
            f"Calibration diagram of {name}{_split(colours, facet)}: observed share of "
            f"targets against the nominal level of the {CURVE_NAMES[settings.curve]} "
            f"curve, with {settings.confidence:.0%} Wilson intervals as a band."
        )
        part.blocks.append(page.figure(chart, description, description))


def pit_section(page: Page, stats: pl.DataFrame, settings: RegressionSettings) -> None:
    """One PIT histogram per value of the first key, a panel per value of the last."""
    part = page.part("pit", "PIT histograms")
    part.blocks.append(
        Paragraph(
            "The histogram of each row's PIT, Φ((y − μ)/σ): calibrated predictions give a "
            "flat histogram at density 1 (dashed). A U (too many targets in the tails) is "
            "over-confident, a hump under-confident, a slope a biased mean. The legend gives "
            "each group's chi-square test of uniformity over the bars drawn."
        )
    )
    bars = pit_bars(settings.bins)
    for name, table, rest in sections.parts_by_first_key(stats, settings.by):
        if int(table.filter(pl.col("bin").is_not_null()).get_column("count").sum()) == 0:
            continue  # no used row (as the diagrams)
        colours, facet = sections.layout(table, rest)
        title = f"PIT histogram: {name}"
        chart = plot_pit_histogram(table, by=colours, facet=facet, n_bins=bars, title=title)
        description = (
            f"Histogram of the PIT of {name}{_split(colours, facet)}: {bars} right-closed "
            "bars of density over the uniform density 1, with each group's chi-square test."
        )
        part.blocks.append(page.figure(chart, description, description))


def _split(colours: list[str], facet: str | None) -> str:
    """How a chart splits its groups, in words."""
    return (f", one panel per {facet}" if facet else "") + (
        f", one colour per {' / '.join(colours)}" if colours else ""
    )


def notes(settings: RegressionSettings, charts: bool) -> list[str]:
    """The conventions: the levels and bins, the metrics, the intervals, the histogram, ..."""
    curve = CURVE_NAMES[settings.curve]
    bins, bars = settings.bins, pit_bars(settings.bins)
    said = [
        (
            f"Levels: {settings.n_levels} levels j/{settings.n_levels - 1}; the PIT is binned on "
            f"{bins} equal-width bins closed on the right ([0, 1/{bins}], "
            f"(1/{bins}, 2/{bins}], …), whose edges hold every level; see docs/regression.md."
        ),
        (
            f"On the {curve} curve, mean_absolute_calibration_error is the mean over the "
            "levels of |observed share − level|, root_mean_squared_calibration_error the "
            "root of the mean square, miscalibration_area the area between the curve and "
            "the diagonal; quantile_calibration_score (Kuleshov's) reads the quantile curve. "
            "crps and nll are the means of the Gaussian CRPS and negative log-likelihood, "
            f"sharpness the root mean square of σ. Rows with a null {NULLS} are ignored."
        ),
        (
            f"The diagrams' bands are {settings.confidence:.0%} Wilson intervals of each "
            "level's observed share."
        ),
        (
            f"The PIT histograms merge the {bins} bins into {bars} bars (right-closed); the "
            f"test is Pearson's chi-square of the bars' weights against uniform, {bars - 1} "
            "degrees of freedom, trustworthy with about 5 rows per bar or more."
        ),
    ]
    return [
        *said,
        *weight_notes(settings.weight),
        *window_notes(settings.time, settings.every),
        *chart_notes(charts),
    ]
