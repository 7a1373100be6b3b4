"""``polars-calib report`` of a classification log: the summary (ECE and the other
metrics), its statistics and the reliability table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

import polars as pl

from polars_calib._cli.arguments import UsageError
from polars_calib._cli.files import read_engine, scan
from polars_calib._cli.progress import Progress, log_passes, silenced, table_config
from polars_calib._cli.report_options import CONSISTENCY_METRICS, Log, ReportOptions
from polars_calib._cli.report_outputs import check_report_outputs
from polars_calib._cli.summary_files import write_outputs
from polars_calib._cli.summary_page import page_audit, write_html
from polars_calib._core.options import (
    ConsistencyMetric,
    Diagnostic,
    Metric,
    Reduction,
    Resampling,
)
from polars_calib._frames.statistics import (
    bin_statistics,
    metrics_from_statistics,
    reliability_from_statistics,
    validate_statistics,
)


def report(options: ReportOptions, stdout: TextIO, stderr: TextIO) -> None:
    """Run ``polars-calib report``: print the summary and write the outputs.

    The log's statistics are computed once (:func:`polars_calib.bin_statistics`, by
    Polars or the engine) and finished into the printed summary, the reliability
    table and the HTML page; a second pass reads the log only where the summary's
    statistics cannot give the reliability table (see :func:`_reliability`).
    """
    check_report_outputs(options)
    progress = Progress(stderr, quiet=options.quiet, detailed=options.progress)
    resampling = _resampling(options)
    # One pass, and one per 64 replicates of each resampling (an estimate with an engine).
    chunks = (log_passes(options.resamples or 1000) - 1) * len(resampling or [])
    reads = "one pass over the log" + (f" and {chunks} of replicates" if chunks else "")
    if options.engine is not None:
        if resampling and options.id is None:
            msg = (
                f"--engine {options.engine} with replicates (--resamples, a consistency "
                "p-value) needs --id COL, a unique integer row id: a row's position "
                "depends on the partitioning"
            )
            raise UsageError(msg)
        # The engine reads the log (a path Polars may not reach).
        progress(f"computing the statistics with {options.engine} ({reads})...", passes=1 + chunks)
        with silenced(options.quiet):
            data, schema = read_engine(options.engine, options.log)
        audited = None
    else:
        progress(f"scanning {options.log}")
        data = scan(options.log)
        audited = page_audit(data, options, progress)  # its errors before any output
        progress(f"computing the statistics ({reads})...", passes=1 + chunks)
        schema = None
    stats = _statistics(data, options, windows=True, resampling=resampling)
    log = Log(data, data.collect_schema() if schema is None else schema, options)
    table = metrics_from_statistics(
        stats,
        by=options.keys,
        metrics=options.metrics,
        confidence=options.interval,
        reduction=log.reduction,
    )
    with table_config():
        print(table, file=stdout, flush=True)
    reliability = None
    if options.out is not None:
        reliability = _reliability(log, stats, progress)
        write_outputs(options, options.out, table, reliability, progress, stderr)
    if options.html is not None:
        if reliability is None and options.engine is not None:
            # The engine's statistics give every table: the page reads no log.
            reliability = _reliability(log, stats, progress)
        write_html(options, log, stats, reliability, audited, progress, stderr)
    progress.done()


def _resampling(options: ReportOptions) -> list[Resampling] | None:
    """The replicates the statistics hold: the bootstrap's (``--resamples``), and the
    consistency test's (a consistency p-value among the metrics)."""
    methods: list[Resampling] = []
    if options.resamples is not None:
        methods.append("bootstrap")
    if set(options.metrics) & set(CONSISTENCY_METRICS):
        methods.append("consistency")
    return methods or None


def _statistics(
    data: Any,
    options: ReportOptions,
    *,
    windows: bool,
    resampling: list[Resampling] | None = None,
    reduction: Reduction | None = None,
    metrics: Sequence[Metric | ConsistencyMetric | Diagnostic] = (),
) -> pl.DataFrame:
    """The statistics table of the log, per `--by` key (and window, with `windows`).

    The engine's frame gives it checked; a Polars scan is collected, and its refused
    rows raise (counted by reading the log again, only then), as a DataFrame's do.
    """
    time, every = (options.time, options.every) if windows else (None, None)
    if windows:
        reduction, metrics = options.reduction, options.metrics
    with silenced(options.quiet and options.engine is not None):
        stats = bin_statistics(
            data,
            options.prob,
            options.label,
            by=options.by,
            time=time,
            every=every,
            n_bins=options.n_bins,
            strategy=options.strategy,
            closed=options.closed,
            weight=options.weight,
            reduction=reduction,
            metrics=metrics,
            resampling=resampling,
            n_resamples=options.resamples or 1000,
            seed=options.seed,
            id=options.id,
        )
    if isinstance(stats, pl.DataFrame):  # the engine's
        return stats
    plan: pl.LazyFrame = stats
    return validate_statistics(
        plan.collect(),
        data,
        options.prob,
        options.label,
        by=options.by,
        time=time,
        every=every,
        weight=options.weight,
        reduction=reduction,
    )


def _reliability(log: Log, stats: pl.DataFrame, progress: Progress) -> pl.DataFrame:
    """The reliability table per `--by` key over the whole log, by the HTML report's rule.

    From the summary's statistics when they hold the diagrams' problem (binary or
    confidence) on bins the windows share (no `--time`, or uniform bins); else from a
    second pass over the log, by the engine that read it.
    """
    options = log.options
    shared = options.time is None or options.strategy == "uniform"
    source = stats
    if options.reduction not in (None, "confidence") or not shared:
        progress("computing the reliability table (a second pass)...", passes=1)
        reduction: Reduction | None = None if log.reduction is None else "confidence"
        source = _statistics(log.data, options, windows=False, reduction=reduction)
    return reliability_from_statistics(source, by=options.by, confidence=options.confidence)
