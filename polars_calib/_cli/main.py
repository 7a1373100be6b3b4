"""The ``polars-calib`` command line: the parser, and each command's dispatch."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import polars as pl

from polars_calib._cli.arguments import PROG, DataError, Parser, UsageError
from polars_calib._cli.audit import AuditOptions, add_audit_parser, audit_options, run_audit
from polars_calib._cli.monitor import add_monitor_parser, monitor_command
from polars_calib._cli.recalibration import (
    add_apply_parser,
    add_fit_parser,
    apply_command,
    fit_command,
)
from polars_calib._cli.regression import regression_report
from polars_calib._cli.regression_options import RegressionOptions
from polars_calib._cli.report_options import ReportOptions, report_options
from polars_calib._cli.report_parser import add_report_parser
from polars_calib._cli.summary import report
from polars_calib._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``polars-calib``."""
    parser = Parser(
        prog=PROG,
        description="Calibration reports (ECE, MCE, RMSCE, Brier, log-loss, reliability "
        "tables and diagrams) of a log of predicted probabilities and 0/1 outcomes, or of "
        "regression predictions (calibration curves, CRPS, coverage, PIT histograms).",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_report_parser(commands)
    add_audit_parser(commands)
    add_fit_parser(commands)
    add_apply_parser(commands)
    add_monitor_parser(commands)
    return parser


def parse_report(argv: Sequence[str]) -> ReportOptions | RegressionOptions:
    """Parse and check a ``report`` command line; raise :class:`UsageError` when it is wrong.

    The log's prediction form decides the options: ``--prob`` and ``--label``
    (classification, :class:`ReportOptions`) or ``--target``, ``--mean`` and ``--std``
    (regression, :class:`RegressionOptions`); one form, whole, and only its options.
    """
    return report_options(build_parser().parse_args(argv))


def parse_audit(argv: Sequence[str]) -> AuditOptions:
    """Parse and check an ``audit`` command line; raise :class:`UsageError` when it is wrong."""
    return audit_options(build_parser().parse_args(argv))


def _one_line(error: BaseException) -> str:
    """The first non-empty line of an error's message (Polars appends query plans)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 success, 1 data error, 2 usage error,
    3 a new alarm of ``polars-calib monitor``).

    Examples
    --------
    >>> from polars_calib.cli import main
    >>> main(["report", "predictions.parquet", "--prob", "p", "--bins", "0"])
    2
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["audit"]:
            run_audit(parse_audit(argv), sys.stdout, sys.stderr)
        elif argv[:1] == ["monitor"]:
            return monitor_command(build_parser().parse_args(argv), sys.stdout, sys.stderr)
        elif argv[:1] in (["fit"], ["apply"]):
            args = build_parser().parse_args(argv)
            run = fit_command if args.command == "fit" else apply_command
            run(args, sys.stdout, sys.stderr)
        else:
            options = parse_report(argv)
            if isinstance(options, RegressionOptions):
                regression_report(options, sys.stdout, sys.stderr)
            else:
                report(options, sys.stdout, sys.stderr)
    except UsageError as error:
        commands = (["report"], ["audit"], ["fit"], ["apply"], ["monitor"])
        command = f"{PROG} {argv[0]}" if argv[:1] in commands else PROG
        print(f"{PROG}: error: {error} (see '{command} --help')", file=sys.stderr)
        return 2
    except (DataError, ImportError, OSError, pl.exceptions.PolarsError, ValueError) as error:
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 0
