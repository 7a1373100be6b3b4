"""``report --html`` of a classification log: the page, its audit section."""

from __future__ import annotations

from typing import TextIO

import polars as pl

from polars_calib._audit import Audit, audit, check_one_model
from polars_calib._cli.progress import Progress, log_passes
from polars_calib._cli.report_options import Log, ReportOptions
from polars_calib._cli.report_outputs import SMALL_GROUP, save_page
from polars_calib._report.report import html_report


def page_audit(lf: pl.LazyFrame, options: ReportOptions, progress: Progress) -> Audit | None:
    """The audit of ``--audit`` for the page (:func:`polars_calib.audit`), else none.

    It runs within the first ``--by`` key (the model, as the page's diagrams are per
    value of it); without ``--by``, a log whose ``model`` column holds several values is
    refused rather than pooled (:func:`polars_calib._audit.check_one_model`).
    """
    if options.audit is None:
        return None
    if not options.by:
        check_one_model(lf, options.audit, "--by {}")
    passes = "" if options.resamples is None else " and one per 64 bootstrap replicates"
    within = f" within each {options.by[0]}" if options.by else ""
    progress(
        f"auditing {','.join(options.audit)}{within} (one pass over the log{passes})...",
        passes=log_passes(options.resamples),
    )
    return audit(
        lf,
        options.prob,
        options.label,
        by=options.audit,
        within=options.by[:1],
        max_order=options.audit_max_order,
        metrics=options.page_metrics,
        min_count=SMALL_GROUP,
        confidence=options.confidence,
        n_resamples=options.resamples,
        seed=options.seed,
        id=options.id,
        n_bins=options.n_bins,
        strategy=options.strategy,
        closed=options.closed,
        weight=options.weight,
        reduction=options.reduction,
        progress=progress.step,
    )


def write_html(
    options: ReportOptions,
    log: Log,
    stats: pl.DataFrame,
    reliability: pl.DataFrame | None,
    audited: Audit | None,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write the HTML report of ``--html`` (:func:`polars_calib.html_report`) from the
    summary's statistics (with their replicates, for the intervals), the reliability
    table when there is one, the audit, and with ``--drift`` the Drift section."""
    assert options.html is not None
    progress("laying out the HTML report...")
    # The page's own passes (see html_report's Notes), said as they come.
    if options.drift:
        thresholds = "" if options.drift_threshold is not None else "; thresholds simulated"
        progress(f"charting drift per group (one more pass over the log{thresholds})...", passes=1)
    if options.time is not None and options.strategy != "uniform":
        progress("computing the whole-log tables (a second pass)...", passes=1)
    if reliability is None and options.reduction not in (None, "confidence"):
        progress("computing the reliability table (a second pass)...", passes=1)
    page = html_report(
        log.polars,
        options.prob,
        options.label,
        by=options.by,
        time=options.time,
        every=options.every,
        n_bins=options.n_bins,
        strategy=options.strategy,
        closed=options.closed,
        metrics=options.page_metrics,
        weight=options.weight,
        confidence=options.confidence,
        reduction=options.reduction,
        min_count=SMALL_GROUP,
        source=options.log,
        n_resamples=options.resamples,
        seed=options.seed,
        id=options.id,
        audit=audited,
        statistics=stats,
        reliability=reliability,
        drift=options.drift,
        drift_threshold=options.drift_threshold,
    )
    save_page(page, options.html, progress, stderr)
