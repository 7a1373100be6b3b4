"""The ``report`` subcommand's arguments."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from polars_calib._cli.arguments import (
    add_progress_options,
    bin_count,
    column_names,
    confidence_level,
    duration,
    level_count,
    numbers,
    positive_int,
    positive_number,
    seed_value,
)
from polars_calib._cli.regression_options import DEFAULT_LEVELS, REGRESSION_METRICS
from polars_calib._cli.report_options import (
    CLOSED,
    CONSISTENCY_METRICS,
    DIAGNOSTICS,
    METRICS,
    REDUCTIONS,
    STRATEGIES,
)
from polars_calib._core.options import (
    CURVES,
    MAX_LEVELS,
)
from polars_calib._engines import ENGINES


def add_report_parser(commands: Any) -> None:
    """The ``report`` subcommand: its log, prediction form, options and outputs."""
    report = commands.add_parser(
        "report",
        help="print calibration metrics per group; optionally write tables and a diagram",
        description="Print the calibration summary of a prediction log, one row per group "
        "(and time window); with --out, also write summary.csv, summary.parquet, "
        "reliability.csv and reliability.png (and, for regression, pit_histogram.png). "
        "The log holds one prediction form: --prob and --label (classification), or "
        "--target with --mean and --std, --quantiles and --levels, --ensemble, or --lower, "
        "--upper and --level (regression).",
    )
    add_report_input(report)
    add_regression_input(report)
    add_report_options(report)
    add_report_outputs(report)


def add_report_input(report: argparse.ArgumentParser) -> None:
    """``report``'s log and its columns: probability, label, keys and time windows."""
    report.add_argument(
        "log",
        metavar="LOG",
        help="a .parquet or .csv file, a glob of them (quote it), or a directory of parquet files",
    )
    report.add_argument(
        "--prob",
        metavar="COL",
        help="classification: probability column, or a column of probability vectors (Array/List)",
    )
    report.add_argument(
        "--label",
        metavar="COL",
        help="classification: 0/1 outcome column, or the true class 0..K-1 for vectors",
    )
    report.add_argument(
        "--by",
        type=column_names,
        default=[],
        metavar="COLS",
        help="comma-separated group-key columns, e.g. model,segment",
    )
    report.add_argument("--time", metavar="COL", help="Date/Datetime column (with --every)")
    report.add_argument(
        "--every",
        type=duration,
        metavar="DURATION",
        help="calendar window of the summary, e.g. 1h, 1d, 1w, 1mo (with --time)",
    )


def add_regression_input(report: argparse.ArgumentParser) -> None:
    """``report``'s regression form: the target and the prediction's columns, its levels."""
    regression = report.add_argument_group(
        "regression (instead of --prob and --label)",
        "The observed target and one prediction form per row: a Gaussian N(mean, std**2) "
        "(--mean, --std), predicted quantiles (--quantiles, --levels), an ensemble's "
        "members (--ensemble), or central intervals (--lower, --upper, --level); the "
        "summary is polars_calib.regression_summary's.",
    )
    regression.add_argument("--target", metavar="COL", help="observed-value column")
    regression.add_argument("--mean", metavar="COL", help="Gaussian: predicted-mean column")
    regression.add_argument(
        "--std", metavar="COL", help="Gaussian: predicted standard-deviation column (std > 0)"
    )
    regression.add_argument(
        "--quantiles",
        type=column_names,
        metavar="COLS",
        help="quantiles: an Array/List column of K predicted quantiles, or K comma-separated "
        "columns (with --levels)",
    )
    regression.add_argument(
        "--levels",
        type=numbers,
        metavar="LEVELS",
        help="quantiles: their K levels in (0, 1), strictly increasing, e.g. 0.05,0.5,0.95",
    )
    regression.add_argument(
        "--ensemble",
        metavar="COL",
        help="ensemble: an Array/List column of members (the rank PIT's draws: --seed, --id)",
    )
    regression.add_argument(
        "--lower",
        type=column_names,
        metavar="COLS",
        help="intervals: lower-bound column(s), comma-separated for nested intervals",
    )
    regression.add_argument(
        "--upper",
        type=column_names,
        metavar="COLS",
        help="intervals: upper-bound column(s), as --lower",
    )
    regression.add_argument(
        "--level",
        type=numbers,
        metavar="LEVELS",
        help="intervals: nominal coverage in (0, 1), one per interval, e.g. 0.5,0.9",
    )
    regression.add_argument(
        "--n-levels",
        type=level_count,
        metavar="N",
        help=f"levels j/(N-1) of the calibration curve, 2 <= N <= {MAX_LEVELS} (default "
        f"{DEFAULT_LEVELS})",
    )
    regression.add_argument(
        "--curve",
        choices=CURVES,
        help="the curve of the calibration metrics and diagram: the share inside each "
        "central interval, or at or below each quantile (default interval)",
    )


def add_report_options(report: argparse.ArgumentParser) -> None:
    """``report``'s bins, metrics, weight, intervals, resampling draws and reduction."""
    # Options of one form only default to None, so that the other form can refuse them.
    report.add_argument(
        "--bins",
        type=bin_count,
        metavar="N",
        help="number of bins of the binned metrics and of the reliability table (default 15)",
    )
    report.add_argument(
        # Median-variance bins are a library feature (a numpy step per group).
        "--strategy",
        choices=[s for s in STRATEGIES if s != "median_variance"],
        help="equal-width or equal-mass bins (default uniform)",
    )
    report.add_argument(
        "--closed",
        choices=CLOSED,
        help="which side of each bin is closed (default right)",
    )
    report.add_argument(
        "--metrics",
        type=column_names,
        metavar="NAMES",
        help=f"comma-separated metrics among {','.join(METRICS)} (default: all), "
        f"consistency-test p-values among {','.join(CONSISTENCY_METRICS)}, and (binary data) "
        f"tests and decompositions among {','.join(DIAGNOSTICS)}; for regression, among "
        f"{','.join(REGRESSION_METRICS)} (default: all)",
    )
    report.add_argument("--weight", metavar="COL", help="non-negative sample-weight column")
    report.add_argument(
        "--confidence",
        type=confidence_level,
        default=0.95,
        metavar="LEVEL",
        help="level of the Wilson interval in the reliability table and, with "
        "--resamples, of the bootstrap intervals of the summary (default 0.95)",
    )
    report.add_argument(
        "--resamples",
        type=positive_int,
        metavar="N",
        help="bootstrap replicates: adds <metric>_lower/_upper to the summary (default: no "
        "intervals); also the label sets of consistency p-values (default 1000)",
    )
    report.add_argument(
        "--seed",
        type=seed_value,
        metavar="N",
        help="seed of the resampling draws, or of an ensemble's rank PIT, 0 <= N < 2**32 "
        "(default 0)",
    )
    report.add_argument(
        "--id",
        metavar="COL",
        help="integer row-identity column of the resampling draws, or of an ensemble's "
        "rank PIT (default: row position; required with --engine and replicates)",
    )
    report.add_argument(
        "--reduction",
        choices=REDUCTIONS,
        metavar="{" + ",".join(REDUCTIONS) + "}",
        help="for probability vectors: the multi-class ECE of the summary (default "
        "confidence); the reliability table and diagram are the confidence ones",
    )


def add_report_outputs(report: argparse.ArgumentParser) -> None:
    """``report``'s outputs (files, the HTML page and its audit) and its engine."""
    report.add_argument("--out", type=Path, metavar="DIR", help="directory to write outputs to")
    report.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write a self-contained HTML report (tables, diagrams, notes) to FILE",
    )
    report.add_argument(
        "--audit",
        type=column_names,
        metavar="COLS",
        help="with --html: a fairness-audit section auditing these attribute columns, e.g. "
        "sex,age_band, within each value of the first --by key (the model), as "
        "`polars-calib audit --by sex,age_band --within model` (one more pass over the log)",
    )
    report.add_argument(
        "--audit-max-order",
        type=positive_int,
        metavar="N",
        help="with --audit: the most attributes a slice fixes (default 2, or their number)",
    )
    report.add_argument(
        "--drift",
        action="store_true",
        default=None,  # None when not given, so that the regression form can refuse it
        help="with --html and --time: a Drift section, the risk-adjusted CUSUM charts of "
        "each --by group over the rows in --time order and their alarms, as `polars-calib "
        "monitor` (odds ratios 0.5 and 2; one more pass over the log)",
    )
    report.add_argument(
        "--drift-threshold",
        type=positive_number,
        metavar="H",
        help="with --drift: the charts' threshold, as `monitor --threshold` (default: "
        "simulated per group and chart for an in-control ARL0 of 10000 rows, as `monitor`'s; "
        "seconds per group)",
    )
    report.add_argument(
        "--engine",
        choices=ENGINES,
        help="compute the statistics on a local Spark session or with Dask reading LOG "
        "(the spark or dask extra; uniform bins); default: Polars",
    )
    add_progress_options(report)
