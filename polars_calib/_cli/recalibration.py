"""``polars-calib fit`` and ``apply``: fit a calibrator to a log, apply it to another."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any, TextIO, get_args

import polars as pl

from polars_calib._cli.arguments import (
    PROG,
    DataError,
    UsageError,
    add_progress_options,
    bin_count,
    column_names,
    positive_int,
)
from polars_calib._cli.files import check_output_file, scan
from polars_calib._cli.progress import Progress
from polars_calib._cli.report_options import REDUCTIONS, STRATEGIES
from polars_calib._core.files import (
    atomic_path,
)
from polars_calib._core.options import (
    CalibrationMethod,
    Fallback,
)
from polars_calib._recalibration import ClippedScoresWarning, fit_calibrator, load_calibrator


def add_fit_parser(commands: Any) -> None:
    """The ``fit`` subcommand (see :func:`polars_calib.fit_calibrator`)."""
    fit = commands.add_parser(
        "fit",
        help="fit a recalibration map per group and save it as JSON",
        description="Fit a calibrator (Platt, sigmoid, beta, isotonic, histogram binning or "
        "temperature scaling) per group of a labelled log; print its parameters and "
        "write it to --out.",
    )
    fit.add_argument("log", metavar="LOG", help="a .parquet or .csv file, a glob, or a directory")
    fit.add_argument("--prob", required=True, metavar="COL", help="probability (or vector) column")
    fit.add_argument("--label", required=True, metavar="COL", help="0/1 outcome or true class")
    fit.add_argument(
        "--method",
        choices=get_args(CalibrationMethod),
        default="platt",
        help="recalibration map (default platt)",
    )
    fit.add_argument(
        "--by",
        type=column_names,
        default=[],
        metavar="COLS",
        help="comma-separated group-key columns: one map per group",
    )
    fit.add_argument("--weight", metavar="COL", help="non-negative sample-weight column")
    fit.add_argument(
        "--reduction",
        choices=REDUCTIONS,
        help="vectors with a binary method: top_label (default), confidence, "
        "classwise (one-vs-rest)",
    )
    fit.add_argument(
        "--smoothed", action="store_true", help="Platt's smoothed targets (platt, sigmoid)"
    )
    fit.add_argument(
        "--bins",
        type=bin_count,
        default=15,
        metavar="N",
        help="histogram binning: number of bins (default 15)",
    )
    fit.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="uniform",
        help="histogram binning: equal-width or equal-mass bins",
    )
    fit.add_argument(
        "--fallback",
        choices=get_args(Fallback),
        help="what a group that cannot be fitted gets (default: an error)",
    )
    fit.add_argument(
        "--min-rows",
        type=positive_int,
        default=10,
        metavar="N",
        help="the fewest rows a group needs (default 10)",
    )
    fit.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="FILE",
        help="the calibrator's JSON file",
    )
    add_progress_options(fit)


def add_apply_parser(commands: Any) -> None:
    """The ``apply`` subcommand (see :meth:`polars_calib.Calibrator.apply`)."""
    apply = commands.add_parser(
        "apply",
        help="add the calibrated column to a log, streamed to parquet",
        description="Apply a saved calibrator to a log and write it, with the calibrated "
        "column, to a parquet file (streaming).",
    )
    apply.add_argument("log", metavar="LOG", help="a .parquet or .csv file, a glob, or a directory")
    apply.add_argument(
        "--calibrator",
        type=Path,
        required=True,
        metavar="FILE",
        help="a JSON file written by 'polars-calib fit'",
    )
    apply.add_argument("--prob", required=True, metavar="COL", help="the column to calibrate")
    apply.add_argument(
        "--column",
        metavar="NAME",
        help="the new column's name (default: PROB_calibrated)",
    )
    apply.add_argument(
        "--replace",
        action="store_true",
        help="overwrite the column if the log already has it (default: an error)",
    )
    apply.add_argument("--out", type=Path, required=True, metavar="FILE", help="parquet output")
    add_progress_options(apply)


def fit_command(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
    """Run ``polars-calib fit``: fit, print the parameters, save the calibrator."""
    check_output_file("--out", args.out, [args.log])
    progress = Progress(stderr, quiet=args.quiet, detailed=args.progress)
    progress(f"fitting {args.method} on {args.log}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ClippedScoresWarning)
        calibrator = fit_calibrator(
            scan(args.log),
            args.prob,
            args.label,
            method=args.method,
            by=args.by or None,
            weight=args.weight,
            reduction=args.reduction,
            smoothed=args.smoothed,
            n_bins=args.bins,
            strategy=args.strategy,
            fallback=args.fallback,
            min_rows=args.min_rows,
        )
    for warning in caught:  # one line each (even with -q: they concern the result)
        print(f"{PROG}: warning: {warning.message}", file=stderr, flush=True)
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=1_000,
        float_precision=6,
        fmt_table_cell_list_len=4,
        tbl_hide_dataframe_shape=True,
    ):
        print(calibrator.params, file=stdout, flush=True)
    path = calibrator.save(args.out)
    progress(f"wrote {path}")
    progress.done()


def apply_command(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
    """Run ``polars-calib apply``: the log with the calibrated column, streamed to parquet.

    The parquet file is streamed to a temporary name beside ``--out`` and renamed
    when complete; ``--out`` may not be the log or the calibrator (through links).
    """
    check_output_file("--out", args.out, [args.log, args.calibrator])
    if not args.calibrator.exists():
        msg = f"no such file: {str(args.calibrator)!r}"
        raise DataError(msg)
    calibrator = load_calibrator(args.calibrator)
    log = scan(args.log)
    column = args.column or f"{args.prob}_calibrated"
    if column in log.collect_schema() and not args.replace:
        msg = (
            f"argument --column: the log already has a column {column!r}: give another "
            "--column, or --replace to overwrite it"
        )
        raise UsageError(msg)
    query = calibrator.apply(log, args.prob, alias=column, replace=args.replace)
    progress = Progress(stderr, quiet=args.quiet, detailed=args.progress)
    progress(f"writing {args.out} (streaming)", passes=1)
    with atomic_path(args.out) as temporary:
        query.sink_parquet(temporary, engine="streaming")
    progress.done()
