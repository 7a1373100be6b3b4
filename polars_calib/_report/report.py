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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

import polars as pl

from polars_calib._audit import Audit
from polars_calib._core.binning import Binning
from polars_calib._core.exprs import IntoExpr, Keys
from polars_calib._core.files import write_text
from polars_calib._core.options import (
    SUM_TOLERANCE,
    Closed,
    Metric,
    Reduction,
    Strategy,
    TopLabelAverage,
)
from polars_calib._report.drift import drift_section
from polars_calib._report.model import Settings
from polars_calib._report.page import render
from polars_calib._report.sections import audit_section
from polars_calib._report.tables import Request, report_tables

__all__ = ["DEFAULT_TITLE", "SMALL_GROUP", "HtmlReport", "html_report"]

DEFAULT_TITLE = "Calibration report"
SMALL_GROUP = 100
"""Default `min_count`: groups with fewer used rows are listed in the notes."""

METRICS: tuple[Metric, ...] = get_args(Metric)
"""The page's default metrics: every metric a summary computes."""


@dataclass(frozen=True)
class HtmlReport:
    """A calibration report as one self-contained HTML page, and the tables it shows.

    Attributes
    ----------
    html
        The page: one HTML document with its styles, scripts and chart data inlined.
    summary
        The summary table shown, per `by` group (over the whole log), as
        :func:`polars_calib.summary` returns it (:func:`polars_calib.regression_summary`
        for :func:`polars_calib.regression_html_report`'s page).
    reliability
        The reliability table drawn, per `by` group, as
        :func:`polars_calib.reliability` returns it (the calibration curve of
        :func:`polars_calib.quantile_reliability` for a regression page).
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
        """Write the page to `path` (UTF-8) and return the path; parent folders must exist.

        The page is written under a temporary name beside `path`, then renamed: a
        failed write leaves no partial page (and `path`, if it existed, as it was).
        """
        return write_text(path, self.html)


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
    weight: str | None = None,
    metrics: Sequence[Metric] = METRICS,
    confidence: float = 0.95,
    reduction: Reduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    average: TopLabelAverage | None = None,
    min_count: int = SMALL_GROUP,
    title: str | None = None,
    source: str | None = None,
    n_resamples: int | None = None,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity of the draws)
    audit: Keys | Audit = None,
    audit_max_order: int | None = None,
    statistics: pl.DataFrame | None = None,
    reliability: pl.DataFrame | None = None,
    drift: bool = False,
    drift_threshold: float | None = None,
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
    prob, label, by, time, every, n_bins, strategy, closed
        As :func:`polars_calib.summary`.
    metrics, weight, reduction, sum_tol, pos_label, average
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
        runs within the first `by` key (the model, whose values the diagrams are
        drawn for: :func:`polars_calib.audit`'s `within`), so that each model's
        slices are its own; without `by`, a log with a column named like a model
        (``model``, ``model_name``, ``model_id``, ``model_version``) holding several
        values raises ``ValueError`` rather than pooling the models. The audit
        takes the page's metrics, bins, weight, reduction, `min_count`,
        `confidence`, `n_resamples`, `seed` and `id`, and its own defaults
        otherwise (Holm correction, the automatic test). Or an
        :class:`~polars_calib.Audit` already computed, shown as it is (the command
        line's, run before it prints anything).
    audit_max_order
        The most attributes a slice fixes (:func:`polars_calib.audit`'s
        `max_order`): by default 2, or the number of attributes when smaller.
    statistics
        The statistics of `data` already collected, so that the log is not read
        again (the command line's, from which it printed its summary): what
        :func:`polars_calib.bin_statistics` returns with the page's `by`, `time`,
        `every`, bins, weight, reduction, `sum_tol` and `pos_label`, `metrics` among
        its metrics, and with `n_resamples` the bootstrap replicates (``resampling``
        including ``"bootstrap"``, the page's `n_resamples`, `seed` and `id`; other
        replicates are left out). ``None`` (default): the page computes them.
        `data` is then read only for its schema and for the passes the table cannot
        stand for (see Notes).
    reliability
        The reliability table to draw, as :func:`polars_calib.reliability` returns it
        for the page's `by` keys and bins; ``None`` (default): the page finishes it.
    drift
        Add a "Drift" section (needs `time`, a Date, Datetime or integer column): the
        alarms of :func:`polars_calib.monitor` per `by` group (odds ratios 0.5 and 2)
        and :func:`polars_calib.plot_cusum`'s charts of up to 8 groups, those with
        the most alarms. It reads the log again as :func:`polars_calib.monitor` does
        (in batches, in bounded memory), and refused rows raise in any frame, as
        :func:`polars_calib.monitor` raises.
    drift_threshold
        The charts' threshold; ``None`` (default): simulated per group and chart
        for an in-control ARL0 of 10,000 rows (:func:`polars_calib.cusum_thresholds`,
        seconds per group).

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
        not a column); an `audit` attribute that is the first `by` key; several
        models and no `by` (see `audit`).

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
    With `statistics` (and `reliability`), the page's own pass is left out.

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
    binning = Binning(n_bins, strategy, closed)
    if isinstance(min_count, bool) or not isinstance(min_count, int):
        msg = f"`min_count` must be an int, got {min_count!r}"
        raise TypeError(msg)
    # A lone name is one metric, as summary takes it.
    listed = [metrics] if isinstance(metrics, str) else metrics
    names = tuple(dict.fromkeys(cast("Sequence[Metric]", listed)))  # repeats dropped
    request = Request(
        data=data,
        prob=prob,
        label=label,
        by=by,
        time=time,
        every=every,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        metrics=names,
        weight=weight,
        confidence=confidence,
        reduction=reduction,
        sum_tol=sum_tol,
        pos_label=pos_label,
        average=average,
        n_resamples=n_resamples,
        seed=seed,
        id=id,
    )
    plan = None
    if statistics is None:
        # Every argument is checked, and the schema read, before a row is: the plan of
        # the statistics and of their finishers (the audit reads the log first).
        plan = request.plan(reduction=reduction, metrics=request.metrics, resampled=True)
        request.check_finishers(plan)
    if drift and time is None:
        msg = "`drift` needs `time`: the column ordering the rows of the CUSUM charts"
        raise ValueError(msg)
    sections = []
    if drift:
        sections.append(
            drift_section(
                data, prob, label, by=by, time=str(time), weight=weight, threshold=drift_threshold
            )
        )
    if audit is not None:
        result = (
            audit if isinstance(audit, Audit) else request.audit(audit, audit_max_order, min_count)
        )
        bounded = f"{result.metrics[0]}_lower" in result.slices.columns
        sections.append(audit_section(result, confidence if bounded else None))
    if plan is not None:
        statistics = request.collect(plan, reduction=reduction)
    assert statistics is not None
    tables = report_tables(request, statistics, reliability)
    name = source if source is not None else f"a {type(data).__name__}"
    settings = _settings(request, binning, name, title, min_count)
    html, notes = render(dataclasses.replace(tables, sections=tuple(sections)), settings)
    return HtmlReport(html, tables.summary, tables.reliability, tables.over_time, notes)


def _settings(
    request: Request, binning: Binning, source: str, title: str | None, min_count: int
) -> Settings:
    """What the page says produced it (the reduction: the one its tables measure)."""
    return Settings(
        source=source,
        prob=request.prob,
        label=request.label,
        by=request.keys,
        time=request.time,
        every=request.every,
        binning=binning,
        metrics=list(request.metrics),
        weight=request.weight,
        confidence=request.confidence,
        reduction=request.measured,
        min_count=min_count,
        title=DEFAULT_TITLE if title is None else str(title),
        n_resamples=request.n_resamples,
        seed=request.seed,
    )
