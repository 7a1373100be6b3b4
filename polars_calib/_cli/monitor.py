"""``polars-calib monitor``: update a monitoring store from a log's new rows."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from polars_calib._cli.arguments import (
    UsageError,
    bin_count,
    column_names,
    duration,
    positive_numbers,
    seed_value,
)
from polars_calib._cli.files import check_output_file, scan
from polars_calib._cli.progress import Progress, table_config
from polars_calib._core.files import (
    atomic_path,
    overwritten_input,
)
from polars_calib._monitor import monitor_store_windows, update_monitor_store

ALARM_EXIT = 3
"""The exit code of ``polars-calib monitor`` when an alarm fires among the rows it read."""


def add_monitor_parser(commands: Any) -> None:
    """The ``monitor`` subcommand (see :func:`polars_calib.update_monitor_store`)."""
    monitor = commands.add_parser(
        "monitor",
        help="update a monitoring store from a log's new rows; exit 3 on a new alarm",
        description="Read the rows of LOG the store has not seen, continue each group's "
        "risk-adjusted CUSUM charts, add the rows' statistics to the store, and print the "
        "new alarms. Exit status 3 when an alarm fires among the rows read, 0 otherwise.",
    )
    monitor.add_argument(
        "log", metavar="LOG", help="a .parquet or .csv file, a glob, or a directory"
    )
    monitor.add_argument("--prob", required=True, metavar="COL", help="probability column")
    monitor.add_argument("--label", required=True, metavar="COL", help="0/1 outcome column")
    monitor.add_argument(
        "--by", type=column_names, default=[], metavar="COLS", help="comma-separated group keys"
    )
    monitor.add_argument("--time", required=True, metavar="COL", help="Date or Datetime column")
    monitor.add_argument(
        "--every", type=duration, default="1d", metavar="DURATION", help="windows (default 1d)"
    )
    monitor.add_argument(
        "--bins",
        type=bin_count,
        default=15,
        metavar="N",
        help="uniform bins of the ECE (default 15)",
    )
    monitor.add_argument("--weight", metavar="COL", help="non-negative sample-weight column")
    monitor.add_argument(
        "--store", type=Path, required=True, metavar="DIR", help="the store (created if new)"
    )
    monitor.add_argument(
        "--odds-ratio",
        type=positive_numbers,
        default=[0.5, 2.0],
        metavar="R,...",
        help="the charts' odds ratios (default 0.5,2)",
    )
    monitor.add_argument(
        "--arl0", type=float, metavar="ROWS", help="in-control ARL of each chart (default 10000)"
    )
    monitor.add_argument(
        "--threshold", type=positive_numbers, metavar="H,...", help="thresholds instead of --arl0"
    )
    monitor.add_argument(
        "--seed", type=seed_value, default=0, help="seed of the threshold simulation"
    )
    monitor.add_argument(
        "--windows", type=Path, metavar="FILE", help="write the window table (.csv or .parquet)"
    )
    monitor.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def _check_monitor_outputs(args: argparse.Namespace) -> None:
    """Refuse a store or window file that would write over the log (a usage error)."""
    if args.threshold is not None and args.arl0 is not None:
        raise UsageError("argument --threshold: not allowed with argument --arl0")
    source = overwritten_input(args.store, [args.log], directory=True)
    if source is not None:
        msg = (
            f"argument --store: {str(args.store)!r} would write over the input {source!r} "
            "(it holds the input, or lies inside it): give another directory"
        )
        raise UsageError(msg)
    if args.windows is not None:
        check_output_file("--windows", args.windows, [args.log])
        if args.windows.suffix.lower() not in (".csv", ".parquet"):
            msg = f"argument --windows: expected a .csv or .parquet file, got {str(args.windows)!r}"
            raise UsageError(msg)
        if os.path.realpath(args.windows).startswith(os.path.realpath(args.store) + os.sep):
            raise UsageError("argument --windows: give a file outside the --store directory")


def monitor_command(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Run ``polars-calib monitor``: update the store, print the new alarms.

    Returns :data:`ALARM_EXIT` when an alarm fired among the rows read, else 0.
    """
    _check_monitor_outputs(args)
    threshold = args.threshold
    if threshold is not None and len(threshold) == 1:  # one for every chart
        threshold = threshold[0]
    progress = Progress(stderr, quiet=args.quiet)
    progress(f"updating {args.store} from {args.log}")
    alarms = update_monitor_store(
        scan(args.log),
        args.store,
        args.prob,
        args.label,
        by=args.by or None,
        time=args.time,
        every=args.every,
        n_bins=args.bins,
        weight=args.weight,
        odds_ratio=args.odds_ratio,
        arl0=10_000.0 if args.arl0 is None else args.arl0,
        threshold=threshold,
        seed=args.seed,
    )
    if alarms.height:
        with table_config():
            print(alarms, file=stdout, flush=True)
    if args.windows is not None:
        windows = monitor_store_windows(args.store)
        with atomic_path(args.windows) as temporary:
            if args.windows.suffix.lower() == ".csv":
                windows.write_csv(temporary)
            else:
                windows.write_parquet(temporary)
        progress(f"wrote {args.windows}")
    progress(f"{alarms.height} new alarm{'s' if alarms.height != 1 else ''}")
    progress.done()
    return ALARM_EXIT if alarms.height else 0
