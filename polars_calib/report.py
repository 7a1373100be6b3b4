"""A shareable calibration report: one self-contained HTML page.

:func:`html_report` computes the statistics table of a prediction log once, finishes
it into the tables the Python API returns (:func:`polars_calib.summary`, the
reliability table of :func:`polars_calib.reliability`, and the summary per time
window), and lays them out as one HTML file: a header saying what produced it, a
sortable summary table, one reliability diagram per model (the charts of
:func:`polars_calib.plot_reliability`), the metric over time windows, and notes
(refused rows, small groups, the conventions used). The charts are Vega-Lite
specifications drawn in the browser by the Vega JavaScript inlined in the page
(from ``vl-convert-python``), so the file opens offline and sends no request: its
Content-Security-Policy forbids every network fetch.

The page is built from tables, section by section; a section whose table (or
feature) is missing is left out, never drawn empty: the charts without the plot
extra, the metric over time without `time`, the interval band without interval
columns (``<metric>_lower``, ``<metric>_upper``) in the summary.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import html
import importlib.util
import json
import math
import re
from statistics import NormalDist
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from polars_calib._exprs import IntoExpr, Keys
from polars_calib._options import (
    METRICS,
    SUM_TOLERANCE,
    TOP_LABEL_AVERAGES,
    Closed,
    Metric,
    Reduction,
    Strategy,
    TopLabelAverage,
    check_choice,
    check_confidence,
    check_metrics,
)
from polars_calib.binning import Binning
from polars_calib.binning import binning as make_binning
from polars_calib.frame import finish_summary
from polars_calib._audit import Audit
from polars_calib._audit import audit as run_audit
from polars_calib.plot import (
    INSTALL_HINT,
    MAX_FACETS,
    default_layout,
    plot_metric_over_time,
    plot_reliability,
)
from polars_calib.resampling import RESAMPLING_KEYS, Resample, replicate_keys, resamples_for
from polars_calib.statistics import (
    Prepared,
    collect_checked,
    merge_statistics,
    prepare,
    reliability_rows,
    statistics_query,
    terms_for,
)
from polars_calib.validation import CalibrationDataError, problem_counts, raise_for_problems

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "HtmlReport",
    "Section",
    "audit_section",
    "html_report",
    "reliability_table",
    "render",
    "report_page",
    "report_tables",
]

DEFAULT_TITLE = "Calibration report"
SMALL_GROUP = 100
"""Default `min_count`: groups with fewer used rows are listed in the notes."""

_NUM = ' class="num"'

# Summary columns shown with thousands separators rather than 4 decimals.
_COUNTS = ("count", "refused")


@dataclass(frozen=True)
class _Settings:
    """What produced the report, shown in its header."""

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
    reduction: Reduction | None
    min_count: int
    title: str
    n_resamples: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class _Tables:
    """The tables a report shows, each as the Python API returns it."""

    summary: pl.DataFrame
    reliability: pl.DataFrame
    over_time: pl.DataFrame | None
    refused_message: str | None
    sections: tuple[Section, ...] = ()


@dataclass(frozen=True)
class Section:
    """An extra section of the page, drawn from a table and a chart a feature returns.

    The fairness audit (its worst slices and forest plot) and other features
    plug in here: the page shows `intro`, the `table` (sortable) and the `chart`
    (an Altair chart), each only when given.
    """

    id: str
    title: str
    intro: str = ""
    table: pl.DataFrame | None = None
    chart: Any = None
    alt_text: str = ""


@dataclass(frozen=True)
class HtmlReport:
    """A calibration report as one self-contained HTML page, and the tables it shows.

    Attributes
    ----------
    html
        The page: one HTML document with its styles, scripts and chart data inlined.
    summary
        The summary table shown, per `by` group (over the whole log), as
        :func:`polars_calib.summary` returns it.
    reliability
        The reliability table drawn, per `by` group, as
        :func:`polars_calib.reliability` returns it.
    over_time
        The summary per group and time window (with `time` and `every`), else None.
    notes
        The notes listed at the end of the page, as plain text.
    """

    html: str
    summary: pl.DataFrame
    reliability: pl.DataFrame
    over_time: pl.DataFrame | None
    notes: tuple[str, ...]

    def save(self, path: str | Path) -> Path:
        """Write the page to `path` (UTF-8) and return the path; parent folders must exist."""
        path = Path(path)
        path.write_text(self.html, encoding="utf-8")
        return path


def html_report(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    metrics: Sequence[Metric] = METRICS,
    weight: str | None = None,
    confidence: float = 0.95,
    reduction: Reduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    average: TopLabelAverage = "macro",
    min_count: int = SMALL_GROUP,
    title: str | None = None,
    source: str | None = None,
    n_resamples: int | None = None,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity of the draws)
    audit: Keys = None,
    audit_max_order: int | None = None,
) -> HtmlReport:
    """A calibration report of a prediction log, as one self-contained HTML page.

    The statistics table is computed once and finished into the summary, the
    reliability table and (with `time`) the summary per window, the same tables
    :func:`polars_calib.summary` and :func:`polars_calib.reliability` return; the
    page shows them: a header (source, rows, time windows, bins, package version,
    when), the summary as a sortable table, one reliability diagram per value of
    the first `by` key (one panel per value of the last key, when it has at most
    four), the first metric per time window (:func:`polars_calib.plot_metric_over_time`),
    and notes. With `n_resamples`, every metric of the summary (whole log and per
    window) has its bootstrap interval, and the chart over time draws it as a band;
    with `audit`, a "Fairness audit" section shows :func:`polars_calib.audit`'s
    worst slices and its forest plot (:func:`polars_calib.plot_audit`).

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions (``pl.scan_parquet(...)`` for a file).
    prob, label, by, time, every, n_bins, strategy, closed, metrics, weight, reduction, sum_tol, pos_label, average
        As :func:`polars_calib.summary`.
    confidence
        Level of every interval on the page: the Wilson interval of the reliability
        diagrams' whiskers and, with `n_resamples`, the bootstrap intervals of the
        summary and of the audit (as the command line's ``--confidence``).
    min_count
        Groups with fewer used rows are listed in the notes as too small to judge;
        with `audit`, slices with fewer rows are flagged ``too_small``
        (:func:`polars_calib.audit`'s `min_count`).
    title
        The page's title; ``"Calibration report"`` by default.
    source
        What the header names as the data, such as the file name; by default
        ``"a DataFrame"`` or ``"a LazyFrame"``.
    n_resamples, seed, id
        Bootstrap replicates of the intervals (``None``, the default: no intervals),
        the seed of the draws and the row identity, as :func:`polars_calib.summary`'s;
        the intervals are at level `confidence` (``summary(confidence=confidence)``),
        and the audit's intervals use the same draws' settings.
    audit
        Attributes to audit (:func:`polars_calib.audit`'s `by`), such as
        ``["sex", "age_band"]``; ``None`` (default): no audit section. The audit
        takes the page's metrics, bins, weight, reduction, `min_count`,
        `confidence`, `n_resamples`, `seed` and `id`, and its own defaults
        otherwise (Holm correction, the automatic test).
    audit_max_order
        The most attributes a slice fixes (:func:`polars_calib.audit`'s
        `max_order`): by default 2, or the number of attributes when smaller.

    Returns
    -------
    HtmlReport
        ``.html`` (the page), ``.save(path)``, and the tables shown: ``.summary``,
        ``.reliability``, ``.over_time`` and the ``.notes``.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column (from the schema); with a DataFrame, refused
        rows, as :func:`polars_calib.summary` raises; with `audit`, refused rows
        in any frame, as :func:`polars_calib.audit` raises.
    TypeError, ValueError
        A bad argument, as :func:`polars_calib.summary`; a bad audit argument, as
        :func:`polars_calib.audit` (such as quantile bins, or an attribute that is
        not a column).

    Notes
    -----
    **Data policy.** That of :func:`polars_calib.summary`: a DataFrame holding
    refused rows (a probability outside [0, 1], a label other than 0/1, ...)
    raises; a LazyFrame gives a report in which the groups holding refused rows
    have their ``refused`` count and no metrics, and the notes say which checks
    refused how many rows. An empty log, or one whose rows are all null or refused,
    gives a report saying so, without charts.

    **Reads.** The statistics are read in one pass (quantile bins: two), and the
    tables are finished from them: the whole-log summary and the reliability table
    sum the time windows' statistics. Quantile bins with `time` (whose edges
    depend on each window's rows), and the top-label or classwise reduction (whose
    diagram is the confidence one), need a second pass for the whole-log tables.
    Refused rows in a LazyFrame are counted per check in one more pass. Intervals
    (`n_resamples`) add one pass per 64 replicates to the statistics' pass; the audit
    reads the log once more, plus one pass per 64 replicates with `n_resamples`.

    **The page.** The charts are :func:`polars_calib.plot_reliability`'s Altair
    charts, embedded as Vega-Lite with the Vega JavaScript inlined (about 0.9 MB);
    the page forbids network requests (Content-Security-Policy
    ``default-src 'none'``), so it opens offline. Without the plot extra
    (Altair and vl-convert-python) the page has its tables and notes, no charts.

    References
    ----------
    The numbers and their conventions are those of :func:`polars_calib.summary` and
    :func:`polars_calib.reliability` (see their References). The charts are
    Vega-Lite: A. Satyanarayan, D. Moritz, K. Wongsuphasawat and J. Heer, "Vega-Lite:
    A Grammar of Interactive Graphics", IEEE TVCG 23(1), 2017.

    See Also
    --------
    summary, reliability, polars_calib.plot_reliability

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "model": ["a"] * 4 + ["b"] * 4,
    ...     "p": [0.1, 0.4, 0.6, 0.9, 0.2, 0.3, 0.7, 0.8],
    ...     "y": [0, 0, 1, 1, 0, 1, 0, 1],
    ... })
    >>> report = pc.html_report(log, "p", "y", by="model", n_bins=5, metrics=["ece"])
    >>> report.html.startswith("<!DOCTYPE html>")
    True
    >>> report.summary
    shape: (2, 6)
    ┌───────┬───────┬─────────┬────────────────┬──────────┬──────┐
    │ model ┆ count ┆ refused ┆ mean_predicted ┆ observed ┆ ece  │
    │ ---   ┆ ---   ┆ ---     ┆ ---            ┆ ---      ┆ ---  │
    │ str   ┆ i64   ┆ i64     ┆ f64            ┆ f64      ┆ f64  │
    ╞═══════╪═══════╪═════════╪════════════════╪══════════╪══════╡
    │ a     ┆ 4     ┆ 0       ┆ 0.5            ┆ 0.5      ┆ 0.25 │
    │ b     ┆ 4     ┆ 0       ┆ 0.5            ┆ 0.5      ┆ 0.35 │
    └───────┴───────┴─────────┴────────────────┴──────────┴──────┘
    """
    binning = make_binning(n_bins, strategy, closed)
    names = check_metrics(metrics)
    z = check_confidence(confidence)
    check_choice("average", average, TOP_LABEL_AVERAGES)
    if isinstance(min_count, bool) or not isinstance(min_count, int):
        msg = f"`min_count` must be an int, got {min_count!r}"
        raise TypeError(msg)
    resamples = resamples_for(
        None if n_resamples is None else "bootstrap",
        1000 if n_resamples is None else n_resamples, seed, id,
    )  # fmt: skip
    prepared = prepare(
        data, prob, label, by=by, weight=weight, reduction=reduction, sum_tol=sum_tol,
        pos_label=pos_label, time=time, every=every,
        reserved=RESAMPLING_KEYS if resamples else frozenset(),
    )  # fmt: skip
    sections = []
    if audit is not None:
        # The audit's own checks (and errors), before the report's pass.
        result = run_audit(
            data, prob, label, by=audit, max_order=audit_max_order, metrics=names,  # type: ignore[arg-type]
            min_count=min_count, confidence=confidence, n_resamples=n_resamples, seed=seed,
            id=id, n_bins=n_bins, strategy=strategy, closed=closed, weight=weight,
            reduction=reduction, sum_tol=sum_tol, pos_label=pos_label,
        )  # fmt: skip
        sections.append(audit_section(result, confidence if n_resamples is not None else None))
    plan = statistics_query(
        prepared.lf, prepared.problem, prepared.keys, binning, terms_for(names),
        resamples=resamples,
    )  # fmt: skip
    strict = isinstance(data, pl.DataFrame)
    stats = collect_checked(prepared, plan) if strict else plan.collect()

    def again(used: Reduction | None) -> Prepared:
        # The same problem without windows: the whole-log tables of a second pass.
        return prepare(
            data, prob, label, by=by, weight=weight, reduction=used, sum_tol=sum_tol,
            pos_label=pos_label,
        )  # fmt: skip

    return report_page(
        prepared, stats, binning, names, z, again=again, strict=strict, average=average,
        source=source if source is not None else f"a {type(data).__name__}",
        title=title, time=time, every=every, prob=prob, label=label, weight=weight,
        min_count=min_count, interval=confidence if resamples else None,
        resamples=resamples, sections=sections,
    )  # fmt: skip


def audit_section(result: Audit, interval: float | None = None, k: int = 10) -> Section:
    """The "Fairness audit" section of a page: `result`'s worst slices and forest plot.

    The table is ``result.worst(k)`` without the columns the slice's name repeats
    (``attributes`` and the attribute columns); the chart is
    :func:`polars_calib.plot_audit` of every slice (when the plot extra is
    installed). `interval` is the level of the audit's intervals, if it has them.
    """
    metric = result.metrics[0]
    table = result.worst(k).drop("attributes", *result.by)
    order = max(result.slices.get_column("order").to_list(), default=0)
    n_slices = result.slices.height - 1  # the overall row is no slice
    size = f"slices of at least {result.min_count:,} rows" if not result.include_small else "slices"
    intro = (
        f"Calibration of every value of {', '.join(result.by)} and of their intersections "
        f"of up to {order} attributes ({n_slices:,} slices, from polars_calib.audit): the "
        f"{k} {size} with the largest {metric} (`_difference` and `_ratio` compare a slice "
        "with the whole log; `p_adjusted` is its calibration test adjusted for the number "
        "of slices), then the forest plot of every slice (hollow grey: too small to "
        "judge; dashed line: the whole log)."
    )
    chart = None
    if _has_charts():
        from polars_calib.forest import plot_audit

        chart = plot_audit(result, title=f"{metric} by slice")
    band = f", with {interval:.0%} bootstrap intervals" if interval is not None else ""
    alt_text = (
        f"Forest plot of {metric} per slice of {', '.join(result.by)}{band}, against "
        f"the whole log's {metric} (dashed line)."
    )
    return Section("audit", "Fairness audit", intro, table, chart, alt_text)


def report_page(
    prepared: Prepared,
    stats: pl.DataFrame,
    binning: Binning,
    metrics: Sequence[str],
    z: float,
    *,
    again: Callable[[Reduction | None], Prepared],
    source: str,
    prob: str,
    label: str,
    time: str | None = None,
    every: str | None = None,
    weight: str | None = None,
    strict: bool = True,
    average: TopLabelAverage = "macro",
    reliability: pl.DataFrame | None = None,
    progress: Callable[[str], None] | None = None,
    min_count: int = SMALL_GROUP,
    title: str | None = None,
    interval: float | None = None,
    resamples: Sequence[Resample] = (),
    sections: Sequence[Section] = (),
) -> HtmlReport:
    """The report of a collected statistics table (see :func:`report_tables`).

    The command line calls this with the statistics of its summary, so that the
    log is read once for the printed summary, its files and the page. `sections`
    are added after the metric over time (the audit's).
    """
    tables = report_tables(
        prepared, stats, binning, metrics, z, time=time, again=again, strict=strict,
        average=average, reliability=reliability, progress=progress, interval=interval,
        resamples=resamples,
    )  # fmt: skip
    tables = dataclasses.replace(tables, sections=(*tables.sections, *sections))
    confidence = interval if interval is not None else 2.0 * NormalDist().cdf(z) - 1.0
    bootstrap = [spec for spec in resamples if spec.method == "bootstrap"]
    # The report's tables are binary or reduced: never canonical (only summary and
    # bin_statistics build those).
    reduction = cast("Reduction | None", prepared.reduction)
    settings = _Settings(
        source=source, prob=prob, label=label, by=[k for k in prepared.keys if k != time],
        time=time, every=every, binning=binning, metrics=list(metrics), weight=weight,
        confidence=confidence, reduction=reduction, min_count=min_count,
        title=DEFAULT_TITLE if title is None else str(title),
        n_resamples=bootstrap[0].n_resamples if bootstrap and interval is not None else None,
        seed=bootstrap[0].seed if bootstrap else 0,
    )  # fmt: skip
    return render(tables, settings)


def report_tables(
    prepared: Prepared,
    stats: pl.DataFrame,
    binning: Binning,
    metrics: Sequence[str],
    z: float,
    *,
    time: str | None,
    again: Callable[[Reduction | None], Prepared],
    strict: bool,
    average: TopLabelAverage = "macro",
    reliability: pl.DataFrame | None = None,
    progress: Callable[[str], None] | None = None,
    interval: float | None = None,
    resamples: Sequence[Resample] = (),
) -> _Tables:
    """Finish a collected statistics table into the tables of a report.

    `stats` is the table of `prepared`, whose keys are the `by` names and, with
    windows, the `time` column (and, with bootstrap replicates, their keys: the
    summaries then have intervals at level `interval`). The whole-log tables sum
    the windows where the bins are fixed; otherwise they come from a second pass
    over the problem that ``again(reduction)`` prepares without windows (with the
    same `resamples`, raising on refused rows when `strict`). `reliability`, when
    given, is used as is (the command line's table); else :func:`reliability_table`.
    """
    keys = [k for k in prepared.keys if k != time]
    resampled = bool(replicate_keys(stats.columns))
    if resampled:  # the bootstrap's replicates only (the command line may add others)
        stats = stats.filter(pl.col("resampling").is_null() | (pl.col("resampling") == "bootstrap"))
    bootstrap = [spec for spec in resamples if spec.method == "bootstrap"]
    level = interval if resampled else None
    over_time: pl.DataFrame | None = None
    overall, overall_stats, whole = prepared, stats, None
    if time is not None:
        windows = finish_summary(stats.lazy(), prepared, metrics, average, level, resampled)
        over_time = windows.collect()
        if binning.strategy == "uniform":
            overall = dataclasses.replace(prepared, keys=keys)
            overall_stats = merge_statistics(stats.lazy(), keys).collect()
        else:
            if progress is not None:
                progress("computing the whole-log tables (a second pass)...")
            overall = again(cast("Reduction | None", prepared.reduction))
            overall_stats = _collect(overall, binning, metrics, strict, bootstrap)
            whole = overall_stats
    summary = finish_summary(
        overall_stats.lazy(), overall, metrics, average, level, resampled
    ).collect()
    if reliability is None:
        reliability = reliability_table(
            prepared, stats, binning, z, time=time, whole=whole, progress=progress,
            second=lambda used: _collect(again(used), binning, (), strict),
        )  # fmt: skip
    refused = int(summary.get_column("refused").sum()) if summary.height else 0
    message = _refused_message(prepared) if refused else None
    return _Tables(summary, reliability, over_time, message)


def reliability_table(
    prepared: Prepared,
    stats: pl.DataFrame,
    binning: Binning,
    z: float,
    *,
    time: str | None,
    second: Callable[[Reduction | None], pl.DataFrame],
    whole: pl.DataFrame | None = None,
    progress: Callable[[str], None] | None = None,
) -> pl.DataFrame:
    """The reliability table per `by` key of a summary's statistics: the one rule of reads.

    The table is the confidence (or binary) problem's, over the whole log. It sums
    `stats` (the table of `prepared`, per window with `time`) when they hold that
    problem on bins the windows share (no time, or uniform bins); else it sums
    `whole`, the whole-log statistics of the same problem when a second pass
    already computed them; else it takes ``second(reduction)``: the statistics,
    without windows, of the problem with that reduction (a second pass). The
    command line and :func:`report_tables` both call this.
    """
    keys = [k for k in prepared.keys if k != time]
    source: pl.DataFrame | None = None
    if prepared.reduction in (None, "confidence"):
        source = stats if time is None or binning.strategy == "uniform" else whole
    if source is None:
        if progress is not None:
            progress("computing the reliability table (a second pass)...")
        source = second(None if prepared.reduction is None else "confidence")
    if replicate_keys(source.columns):  # the observed rows
        source = source.filter(pl.col("replicate").is_null()).drop("resampling", "replicate")
    return reliability_rows(merge_statistics(source.lazy(), keys), keys, z).collect()


def _collect(
    prepared: Prepared,
    binning: Binning,
    metrics: Sequence[str],
    strict: bool,
    resamples: Sequence[Resample] = (),
) -> pl.DataFrame:
    """The statistics table of `prepared`, checked (raising on refused rows) when `strict`."""
    plan = statistics_query(
        prepared.lf, prepared.problem, prepared.keys, binning, terms_for(metrics),
        resamples=list(resamples),
    )  # fmt: skip
    return collect_checked(prepared, plan) if strict else plan.collect()


def _refused_message(prepared: Prepared) -> str:
    """What the checks refuse, counted per check (one more pass, only when rows are refused)."""
    checks = prepared.problem.checks
    try:
        raise_for_problems(problem_counts(prepared.lf, checks).collect(), checks)
    except CalibrationDataError as error:
        return str(error)
    return "rows refused"


# --------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------

_STYLE = """
:root { color-scheme: light; --ink: #1b1b1b; --muted: #555; --rule: #d0d0d0; --band: #f4f6f8; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0 auto; padding: 1.5rem 2rem 3rem; max-width: 1280px; }
h1 { font-size: 1.7rem; margin: 0 0 .5rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; border-bottom: 1px solid var(--rule); padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1.2rem; margin: .6rem 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
nav ul { display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; list-style: none; padding: 0; margin: .8rem 0; }
a { color: #0b57d0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: .4rem 0 1rem; }
caption { text-align: left; color: var(--muted); padding: .3rem 0; caption-side: top; }
th, td { padding: .25rem .7rem; border-bottom: 1px solid var(--rule); text-align: left; white-space: nowrap; }
th { background: var(--band); font-weight: 600; }
td.num, th.num { text-align: right; }
th button { all: inherit; cursor: pointer; padding: 0; }
th button::after { content: " \\2195"; color: #999; }
th[aria-sort=ascending] button::after { content: " \\2191"; color: var(--ink); }
th[aria-sort=descending] button::after { content: " \\2193"; color: var(--ink); }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 1rem 0 2rem; }
figcaption { color: var(--muted); margin-top: .3rem; max-width: 60rem; }
.chart { overflow-x: auto; min-height: 2rem; }
.chart svg { max-width: 100%; height: auto; }
.muted { color: var(--muted); }
footer { margin-top: 3rem; color: var(--muted); font-size: .9rem; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  nav, th button::after { display: none; }
  figure, table, .facts { break-inside: avoid; }
  h2 { break-after: avoid; }
  .scroll, .chart { overflow: visible; }
  a { color: inherit; text-decoration: none; }
}
"""

# No network: every fetch, image, font or frame from elsewhere is refused by the browser.
_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; base-uri 'none'; form-action 'none'"
)

_SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th) {
    var button = th.querySelector("button");
    if (!button) return;
    button.addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var column = th.cellIndex, numeric = th.classList.contains("num");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute("data-value"), y = b.cells[column].getAttribute("data-value");
        if (x === "" || y === "") return (x === "") - (y === "");  // empty cells last
        var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

_EMBED_SCRIPT = """
document.querySelectorAll("[data-spec]").forEach(function (element) {
  var spec = JSON.parse(document.getElementById(element.getAttribute("data-spec")).textContent);
  vegaEmbed(element, spec, { renderer: "svg", actions: false })
    .then(function () { element.setAttribute("data-rendered", "true"); })
    .catch(function (error) {
      element.textContent = "This chart could not be drawn: " + error;
      console.error(error);
    });
});
"""


# The bundle's snippet: Vega-Embed as a global for the page's own script.
_GLOBALS = "window.vegaEmbed = vegaEmbed; window.vega = vega; window.vegaLite = vegaLite;"


def _has_charts() -> bool:
    """Whether Altair and vl-convert (the plot extra) are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("altair", "vl_convert"))


@functools.lru_cache(maxsize=1)
def _vega_bundle() -> str:
    """Vega, Vega-Lite and Vega-Embed as one script (built once per process, about 0.9 MB)."""
    import altair as alt
    import vl_convert as vlc

    version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    try:
        bundle = vlc.javascript_bundle(_GLOBALS, vl_version=version)
    except ValueError:  # a Vega-Lite version vl-convert does not ship: its newest
        bundle = vlc.javascript_bundle(_GLOBALS)
    return _script_text(bundle)


def _script_text(text: str) -> str:
    """Script text that cannot close its <script> element early.

    ``<\\/`` means ``</`` in a JavaScript string, regular expression or JSON text
    alike; only the closing tag is touched (``</`` alone also opens regex literals).
    """
    return re.sub(r"</(script)", r"<\\/\\1", text, flags=re.IGNORECASE)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _spec(chart: Any, description: str) -> dict[str, Any]:
    """An Altair chart as a Vega-Lite specification with its data inlined."""
    import altair as alt

    with alt.data_transformers.enable("default", max_rows=None):
        spec: dict[str, Any] = chart.to_dict()
    spec["description"] = description  # the SVG's aria-label
    return spec


class _Page:
    """The HTML of a page being written, and its chart specifications."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.specs: list[dict[str, Any]] = []

    def add(self, *parts: str) -> None:
        self.parts.extend(parts)

    def figure(self, chart: Any, caption: str, description: str) -> None:
        index = len(self.specs)
        self.specs.append(_spec(chart, description))
        self.add(
            f'<figure><div class="chart" role="img" aria-label="{_e(description)}" '
            f'data-spec="spec-{index}"></div>',
            f"<figcaption>{caption}</figcaption></figure>",
        )


def _cell(value: object, column: str = "") -> tuple[str, str]:
    """A table cell's shown text and its sort value (empty for null)."""
    if value is None:
        return "—", ""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN", ""
        if math.isinf(value):
            return ("∞" if value > 0 else "−∞"), ("Infinity" if value > 0 else "-Infinity")
        shown = f"{value:,.0f}" if column in _COUNTS else f"{value:.4f}"
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


def _table(frame: pl.DataFrame, caption: str, table_id: str) -> str:
    """A sortable HTML table of `frame`, every value with its sort key."""
    numeric = {name for name, dtype in frame.schema.items() if dtype.is_numeric()}
    head = "".join(
        f'<th scope="col"{_NUM if name in numeric else ""}>'
        f'<button type="button" title="Sort by {_e(name)}">{_e(name)}</button></th>'
        for name in frame.columns
    )
    rows = []
    for row in frame.iter_rows():
        cells = []
        for name, value in zip(frame.columns, row):
            shown, key = _cell(value, name)
            kind = ' class="num"' if name in numeric else ""
            cells.append(f'<td{kind} data-value="{_e(key)}">{_e(shown)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table class="sortable" id="{table_id}">'
        f"<caption>{caption}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _describe_bins(binning: Binning) -> str:
    b = binning.n_bins
    if binning.strategy == "quantile":
        return f"{b} equal-mass bins per group (the group's linear-interpolation quantiles)"
    last = f"{b - 1}/{b}"
    if binning.closed == "right":
        edges = f"[0, 1/{b}], (1/{b}, 2/{b}], …, ({last}, 1]"
        return f"{b} equal-width bins, closed on the right: {edges}"
    edges = f"[0, 1/{b}), [1/{b}, 2/{b}), …, [{last}, 1]"
    return f"{b} equal-width bins, closed on the left: {edges}"


def _label(keys: Sequence[str], values: Sequence[object]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in zip(keys, values)) or "the whole log"


def _notes(tables: _Tables, settings: _Settings, charts: bool) -> list[str]:
    """The notes, as plain sentences."""
    summary, keys = tables.summary, settings.by
    notes = []
    used = int(summary.get_column("count").sum()) if summary.height else 0
    refused = int(summary.get_column("refused").sum()) if summary.height else 0
    if summary.height == 0:
        notes.append("The log holds no rows: there is nothing to measure.")
    elif used == 0 and refused == 0:
        notes.append(
            "No usable rows: every row has a null probability, label or weight, and rows "
            "holding a null are ignored."
        )
    if refused:
        where = summary.filter(pl.col("refused") > 0)
        groups = "; ".join(
            f"{_label(keys, row[:len(keys)])}: {row[-1]:,}"
            for row in where.select(*keys, "refused").iter_rows()
        )
        notes.append(
            f"{refused:,} rows were refused, so their groups have no metrics "
            f"({groups}). {tables.refused_message}"
        )
    small = summary.filter((pl.col("count") < settings.min_count) & (pl.col("count") > 0))
    if small.height:
        shown = [
            f"{_label(keys, row[:-1])} ({row[-1]:,} rows)"
            for row in small.select(*keys, "count").head(20).iter_rows()
        ]
        more = f", and {small.height - 20} more" if small.height > 20 else ""
        notes.append(
            f"Groups with fewer than {settings.min_count:,} rows, whose metrics are mostly "
            f"sampling noise: {'; '.join(shown)}{more}."
        )
    notes.append(f"Bins: {_describe_bins(settings.binning)}; see docs/binning.md.")
    notes.append(
        "ECE is the weighted mean over non-empty bins of |observed frequency − mean "
        "predicted probability|, MCE the largest such gap, RMSCE the root of the weighted "
        "mean square; empty bins contribute nothing. Rows with a null probability, label "
        "or weight are ignored."
    )
    notes.append(
        f"The diagrams' whiskers are {settings.confidence:.0%} Wilson intervals of each "
        "bin's observed frequency; the bars below count the rows per bin."
    )
    if settings.n_resamples is not None:
        notes.append(
            f"Intervals: each metric's `_lower` and `_upper` columns (and the band over "
            f"time) bound its {settings.confidence:.0%} percentile Poisson-bootstrap "
            f"interval, from {settings.n_resamples:,} replicates drawn with seed "
            f"{settings.seed}; see docs/significance.md."
        )
    if settings.weight is not None:
        notes.append(f"Rows are weighted by `{settings.weight}`; counts are rows, not weights.")
    if settings.reduction is not None:
        notes.append(
            f"Probability vectors: the binned metrics measure the {settings.reduction} "
            "reduction; the diagrams show the confidence (top probability against "
            "accuracy)."
        )
    if settings.time is not None:
        notes.append(
            f"Time windows are calendar-aligned, `{settings.time}` truncated to "
            f"{settings.every}: a window is named by its start, which may come before its "
            "first row."
        )
    if not charts:
        notes.append(f"No charts: they need the plot extra ({INSTALL_HINT}).")
    return notes


def _reliability_charts(
    table: pl.DataFrame, keys: list[str], settings: _Settings
) -> list[tuple[Any, str, str]]:
    """(chart, caption, description) per value of the first key: facets by the last key."""
    if not keys:
        parts: list[tuple[str, pl.DataFrame, list[str]]] = [("the whole log", table, [])]
    else:
        first, rest = keys[0], keys[1:]
        parts = [
            (f"{first} = {value}", table.filter(pl.col(first).eq_missing(value)).drop(first), rest)
            for value in table.get_column(first).unique(maintain_order=True).to_list()
        ]
    out = []
    for name, part, rest in parts:
        if int(part.get_column("count").sum()) == 0:
            continue
        # One key left: a panel per value (few) or a colour; more: plot_reliability's rule.
        if len(rest) == 1:
            few = part.get_column(rest[0]).n_unique() <= MAX_FACETS
            colours, facet = ([], rest[0]) if few else (rest, None)
        else:
            colours, facet = default_layout(part, rest)
        title = f"Reliability of {settings.prob}: {name}"
        chart = plot_reliability(part, by=colours, facet=facet, title=title)
        split = (f", one panel per {facet}" if facet else "") + (
            f", one colour per {' / '.join(colours)}" if colours else ""
        )
        description = (
            f"Reliability diagram of {name}{split}: observed frequency of positives against "
            f"mean predicted probability per bin, with {settings.confidence:.0%} intervals, "
            "over a histogram of the rows per bin."
        )
        out.append((chart, _e(description), description))
    return out


def render(tables: _Tables, settings: _Settings) -> HtmlReport:
    """Lay out a report's tables as one HTML page."""
    from polars_calib import __version__

    summary, keys = tables.summary, settings.by
    charts = _has_charts()
    used = int(summary.get_column("count").sum()) if summary.height else 0
    refused = int(summary.get_column("refused").sum()) if summary.height else 0
    notes = _notes(tables, settings, charts)
    page = _Page()
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)

    facts = [
        ("Data", _e(settings.source)),
        ("Columns", _e(f"probability {settings.prob}, label {settings.label}"
                       + (f", weight {settings.weight}" if settings.weight else ""))),
        ("Rows", _e(f"{used:,} used, {refused:,} refused")),
        ("Groups", _e(f"{summary.height:,} by {', '.join(keys)}" if keys else "one, the log")),
    ]  # fmt: skip
    if settings.time is not None and tables.over_time is not None and tables.over_time.height:
        starts = tables.over_time.get_column(settings.time).drop_nulls()
        if starts.len():
            first, last = (_cell(when)[0] for when in (starts.min(), starts.max()))
            facts.append(("Time windows", _e(
                f"{starts.n_unique():,} windows of {settings.every} by {settings.time}, "
                f"from {first} to {last} (window starts)"
            )))  # fmt: skip
    facts += [
        ("Bins", _e(_describe_bins(settings.binning))),
        ("Metrics", _e(", ".join(settings.metrics))),
        *(
            [("Intervals", _e(
                f"{settings.confidence:.0%} bootstrap intervals, {settings.n_resamples:,} "
                f"replicates, seed {settings.seed}"
            ))]
            if settings.n_resamples is not None else []
        ),
        ("Package", _e(f"polars_calib {__version__}, Polars {pl.__version__}")),
        ("Generated", f'<time datetime="{now.isoformat()}">{now:%Y-%m-%d %H:%M:%S} UTC</time>'),
    ]  # fmt: skip

    sections: list[tuple[str, str]] = [("summary", "Summary")]
    page.add('<section id="summary" aria-labelledby="summary-title">')
    page.add('<h2 id="summary-title">Summary</h2>')
    if summary.height:
        caption = (
            f"Calibration metrics per {', '.join(keys)} over the whole log"
            if keys else "Calibration metrics of the whole log"
        ) + ". Select a column heading to sort."
        page.add(_table(summary, _e(caption), "summary-table"))
    else:
        page.add("<p>The log holds no rows: there is nothing to measure.</p>")
    page.add("</section>")

    drawn = charts and used > 0
    if drawn:
        sections.append(("reliability", "Reliability diagrams"))
        page.add(
            '<section id="reliability" aria-labelledby="reliability-title">'
            '<h2 id="reliability-title">Reliability diagrams</h2>',
            "<p>Points on the dashed diagonal are calibrated: above it, the model "
            "under-predicts; below it, it over-predicts. Hover a point for its numbers.</p>",
        )
        for chart, caption, description in _reliability_charts(tables.reliability, keys, settings):
            page.figure(chart, caption, description)
        page.add("</section>")

    over_time = tables.over_time
    if settings.time is not None and over_time is not None and over_time.height:
        # The first metric, named after the reduction for probability vectors.
        first = settings.metrics[0]
        named = first if settings.reduction is None else f"{settings.reduction}_{first}"
        metric = [name for name in (first, named) if name in over_time.columns][-1:]
        sections.append(("over-time", "Over time"))
        page.add(
            '<section id="over-time" aria-labelledby="over-time-title">'
            '<h2 id="over-time-title">Over time</h2>'
        )
        if drawn and metric:
            band = f"{metric[0]}_lower" in over_time.columns
            title = f"{metric[0]} per {settings.every} window"
            colours, facet = default_layout(over_time, keys)  # plot_metric_over_time's
            description = (
                f"Line chart of {metric[0]} per {settings.every} window of {settings.time}"
                + (f", one line per {' / '.join(colours)}" if colours else "")
                + (f", one panel per {facet}" if facet else "")
                + (f", with its {settings.confidence:.0%} bootstrap interval as a band"
                   if band else "")
                + "."
            )
            chart = plot_metric_over_time(over_time, metric[0], settings.time, title=title)
            page.figure(chart, _e(description), description)
        caption = f"The summary per {settings.every} window of {settings.time}."
        page.add(
            "<details><summary>The numbers per window</summary>",
            _table(over_time, _e(caption), "over-time-table"),
            "</details></section>",
        )

    for extra in tables.sections:
        sections.append((extra.id, extra.title))
        page.add(
            f'<section id="{_e(extra.id)}" aria-labelledby="{_e(extra.id)}-title">'
            f'<h2 id="{_e(extra.id)}-title">{_e(extra.title)}</h2>'
        )
        if extra.intro:
            page.add(f"<p>{_e(extra.intro)}</p>")
        if extra.chart is not None and charts:
            text = extra.alt_text or extra.title
            page.figure(extra.chart, _e(text), text)
        if extra.table is not None:
            page.add(_table(extra.table, _e(extra.title), f"{_e(extra.id)}-table"))
        page.add("</section>")

    sections.append(("notes", "Notes"))
    page.add(
        '<section id="notes" aria-labelledby="notes-title"><h2 id="notes-title">Notes</h2><ul>',
        *(f"<li>{_e(note)}</li>" for note in notes),
        "</ul></section>",
    )

    nav = "".join(f'<li><a href="#{_e(ident)}">{_e(name)}</a></li>' for ident, name in sections)
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="polars_calib {_e(__version__)}">',
        f"<title>{_e(settings.title)}: {_e(settings.source)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f'<header><h1>{_e(settings.title)}</h1><dl class="facts">',
        *(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts),
        f'</dl><nav aria-label="Sections"><ul>{nav}</ul></nav></header><main>',
    ]
    tail = ["</main>", f"<footer>Made with polars_calib {_e(__version__)}.</footer>"]
    if page.specs:
        for index, spec in enumerate(page.specs):
            text = json.dumps(spec, allow_nan=False, default=str).replace("</", "<\\/")
            tail.append(f'<script type="application/json" id="spec-{index}">{text}</script>')
        tail.append(f"<script>{_vega_bundle()}</script>")
        tail.append(f"<script>{_EMBED_SCRIPT}</script>")
    tail.append(f"<script>{_SORT_SCRIPT}</script></body></html>")
    document = "\n".join([*head, *page.parts, *tail]) + "\n"
    return HtmlReport(document, summary, tables.reliability, tables.over_time, tuple(notes))
