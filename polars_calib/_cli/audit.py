"""``polars-calib audit``: the calibration of every slice of a log (a fairness audit)."""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, get_args

import polars as pl

from polars_calib._audit import Audit, audit, check_one_model
from polars_calib._cli.arguments import (
    PROG,
    UsageError,
    add_progress_options,
    bin_count,
    check_metrics,
    column_names,
    confidence_level,
    non_negative_int,
    positive_int,
)
from polars_calib._cli.files import PLOT_EXTRA, check_output_directory, replaced, save_chart, scan
from polars_calib._cli.progress import Progress, log_passes, table_config
from polars_calib._cli.report_options import METRICS, REDUCTIONS
from polars_calib._core.options import (
    AuditTest,
    Correction,
    Metric,
    Reduction,
)
from polars_calib._plot.audit import plot_audit

AUDIT_FILES = (
    "slices.csv",
    "slices.parquet",
    "disparities.csv",
    "disparities.parquet",
    "forest.png",
)
"""The files of ``audit --out DIR``: the directory may hold only these (it is replaced whole)."""


@dataclass(frozen=True)
class AuditOptions:
    """The checked options of ``polars-calib audit``."""

    log: str
    prob: str
    label: str
    by: list[str]
    within: list[str]
    max_order: int | None
    n_bins: int
    metrics: list[Metric]
    weight: str | None
    min_count: int
    correction: Correction | None
    confidence: float
    n_resamples: int | None
    seed: int
    test: AuditTest | None
    reduction: Reduction | None
    out: Path | None
    quiet: bool
    progress: bool = False


def add_audit_parser(commands: Any) -> None:
    """The ``audit`` subcommand's arguments."""
    audit = commands.add_parser(
        "audit",
        help="calibration of every segment and intersection of segments (a fairness audit)",
        description="Audit the calibration of every value of each --by attribute and of "
        "their intersections, from one pass over the log (per value of the --within keys, "
        "such as the model: a log of several models needs it); print the slices; with --out, "
        "write slices.csv, slices.parquet, disparities.csv, disparities.parquet and "
        "forest.png.",
    )
    audit.add_argument("log", metavar="LOG", help="as for `report`")
    audit.add_argument("--prob", required=True, metavar="COL", help="probability column")
    audit.add_argument("--label", required=True, metavar="COL", help="0/1 outcome column")
    audit.add_argument(
        "--by",
        type=column_names,
        required=True,
        metavar="COLS",
        help="comma-separated attribute columns, e.g. sex,age_band,region",
    )
    audit.add_argument(
        "--within",
        type=column_names,
        default=[],
        metavar="COLS",
        help="comma-separated columns kept whole, e.g. model: one audit per value (required "
        "when a column named model holds several values)",
    )
    audit.add_argument(
        "--max-order",
        type=positive_int,
        metavar="N",
        help="the most attributes a slice fixes (default 2, or the number of attributes)",
    )
    audit.add_argument(
        "--bins",
        type=bin_count,
        default=15,
        metavar="N",
        help="number of uniform bins of the binned metrics (default 15)",
    )
    audit.add_argument(
        "--metrics",
        type=column_names,
        default=["ece", "brier"],
        metavar="NAMES",
        help=f"comma-separated metrics among {','.join(METRICS)} (default: ece,brier)",
    )
    audit.add_argument("--weight", metavar="COL", help="non-negative sample-weight column")
    audit.add_argument(
        "--min-count",
        type=non_negative_int,
        default=100,
        metavar="N",
        help="slices with fewer rows are flagged too small (default 100)",
    )
    _add_audit_tests(audit)


def _add_audit_tests(audit: argparse.ArgumentParser) -> None:
    """``audit``'s tests, intervals and draws, reduction and outputs."""
    audit.add_argument(
        "--correction",
        choices=(*get_args(Correction), "none"),
        default="holm",
        help="multiple-testing control across the slices (default holm)",
    )
    audit.add_argument(
        "--confidence",
        type=confidence_level,
        default=0.95,
        metavar="LEVEL",
        help="level of the intervals; the tests' level is 1 - LEVEL (default 0.95)",
    )
    audit.add_argument(
        "--resamples",
        type=non_negative_int,
        default=1000,
        metavar="N",
        help="bootstrap replicates of the intervals; 0: no intervals (default 1000)",
    )
    audit.add_argument(
        "--seed", type=non_negative_int, default=0, metavar="N", help="seed of the draws"
    )
    audit.add_argument(
        "--test",
        choices=(*get_args(AuditTest), "none"),
        default="auto",
        help="each slice's test (default auto: Spiegelhalter, or consistency for vectors)",
    )
    audit.add_argument(
        "--reduction",
        choices=REDUCTIONS,
        metavar="{" + ",".join(REDUCTIONS) + "}",
        help="for probability vectors: the multi-class ECE (default confidence)",
    )
    audit.add_argument("--out", type=Path, metavar="DIR", help="directory to write outputs to")
    add_progress_options(audit)


def audit_options(args: argparse.Namespace) -> AuditOptions:
    """Check a parsed ``audit`` command line; raise :class:`UsageError` when it is wrong."""
    check_metrics(args.metrics, METRICS)
    if args.max_order is not None and args.max_order > len(args.by):
        msg = f"argument --max-order: at most the number of --by attributes ({len(args.by)})"
        raise UsageError(msg)
    return AuditOptions(
        log=str(args.log),
        prob=str(args.prob),
        label=str(args.label),
        by=list(args.by),
        within=list(args.within),
        max_order=args.max_order,
        n_bins=int(args.bins),
        metrics=list(args.metrics),
        weight=args.weight,
        min_count=int(args.min_count),
        correction=None if args.correction == "none" else args.correction,
        confidence=float(args.confidence),
        n_resamples=int(args.resamples) or None,
        seed=int(args.seed),
        test=None if args.test == "none" else args.test,
        reduction=args.reduction,
        out=args.out,
        quiet=bool(args.quiet),
        progress=bool(args.progress),
    )


def run_audit(options: AuditOptions, stdout: TextIO, stderr: TextIO) -> None:
    """Run ``polars-calib audit``: print the slices and write the tables and the forest plot."""
    if options.out is not None:
        check_output_directory("--out", options.out, AUDIT_FILES, [options.log])
    progress = Progress(stderr, quiet=options.quiet, detailed=options.progress)
    progress(f"scanning {options.log}")
    lf = scan(options.log)
    if not options.within:
        check_one_model(lf, options.by, "--within {}")
    passes = "" if options.n_resamples is None else " and one per 64 bootstrap replicates"
    within = f" within each {','.join(options.within)}" if options.within else ""
    progress(
        f"auditing every slice{within} (one pass over the log{passes})...",
        passes=log_passes(options.n_resamples),
    )
    result = audit(
        lf,
        options.prob,
        options.label,
        by=options.by,
        within=options.within,
        max_order=options.max_order,
        metrics=options.metrics,
        min_count=options.min_count,
        n_bins=options.n_bins,
        correction=options.correction,
        confidence=options.confidence,
        weight=options.weight,
        n_resamples=options.n_resamples,
        seed=options.seed,
        test=options.test,
        reduction=options.reduction,
        progress=progress.step,
    )
    with table_config():
        print(result.slices.drop("attributes", *result.by), file=stdout, flush=True)
    if options.out is not None:
        _write_audit(options, options.out, result, progress, stderr)
    progress.done()


def _write_audit(
    options: AuditOptions,
    out: Path,
    result: Audit,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write ``audit --out``'s files: the slices, the disparities and the forest plot.

    They are written to a new directory beside `out`, which replaces `out` whole
    once every file is written (as ``report --out``).
    """
    with replaced(out, AUDIT_FILES) as staging:
        progress(
            f"writing {out / 'slices.csv'}, slices.parquet, disparities.csv, disparities.parquet"
        )
        for name, table in (("slices", result.slices), ("disparities", result.disparities)):
            table.write_parquet(staging / f"{name}.parquet")
            # CSV holds no lists: the attributes a slice fixes, comma-separated.
            joined = table.with_columns(pl.col("attributes").list.join(","))
            joined.write_csv(staging / f"{name}.csv")
        progress(f"drawing {out / 'forest.png'}")
        _draw_forest(options, result, staging / "forest.png", stderr)


def _draw_forest(options: AuditOptions, result: Audit, path: Path, stderr: TextIO) -> None:
    """Draw the audit's forest plot to `path`, Altair else matplotlib, else a note."""
    title = f"Calibration by slice: {options.prob} ({Path(options.log).name})"
    if save_chart(functools.partial(plot_audit, result, title=title), path) is None:
        print(
            f"{PROG}: note: skipped forest.png (the plot extra is not installed: {PLOT_EXTRA})",
            file=stderr,
        )
