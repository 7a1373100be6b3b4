"""The ``polars-calib`` command line: calibration reports of a prediction log.

``polars-calib report LOG --prob p --label y [--by model,segment] [--time ts --every 1d]
[--out DIR]`` scans the log lazily, prints :func:`polars_calib.summary` and, with
``--out``, writes the summary, the reliability table and its diagram. With
``--resamples N``, the summary has bootstrap intervals (at ``--confidence``), and with
``--time`` the first metric is drawn over the windows with its interval as a band
(``over_time.png``). With
``--engine spark`` (a local Spark session) or ``--engine dask``, that engine reads the
log and computes the statistics (see ``docs/scale-out.md``).
``polars-calib report LOG --target y --mean mu --std sigma [--by store] [--time ts --every 1w]
[--n-levels N] [--out DIR] [--html FILE]`` is the same report of Gaussian regression
predictions (:func:`polars_calib.regression_summary`, the calibration curve and the PIT
histogram); ``--quantiles q --levels 0.1,0.5,0.9``, ``--ensemble members [--seed N --id
COL]`` and ``--lower lo --upper hi --level 0.9`` are the other regression forms. A
command line holds one prediction form, and only its options.
``polars-calib fit LOG --prob p --label y --method platt [--by model] --out cal.json``
fits a calibrator (:func:`polars_calib.fit_calibrator`) and prints its parameters;
``polars-calib apply LOG --calibrator cal.json --prob p --out scored.parquet`` adds the
calibrated column, streaming the log to parquet. Also runs as
``python -m polars_calib``. Errors are one line on stderr, ``polars-calib: error: ...``,
with exit code 2 for a bad command line and 1 for unreadable or invalid data.
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn, TextIO, TypeGuard, get_args

import polars as pl

from polars_calib._audit import Audit, audit, check_one_model
from polars_calib._core.binning import Binning
from polars_calib._core.files import (
    atomic_path,
    check_replaceable,
    overwritten_input,
    replaced_directory,
)
from polars_calib._core.options import (
    CURVES,
    GAUSSIAN_METRICS,
    MAX_BINS,
    MAX_LEVELS,
    AuditTest,
    CalibrationMethod,
    Closed,
    ConsistencyMetric,
    Correction,
    Curve,
    Diagnostic,
    Fallback,
    Metric,
    Reduction,
    RegressionMetric,
    Resampling,
    Strategy,
    check_every,
    check_n_levels,
)
from polars_calib._core.prediction_intervals import check_level
from polars_calib._core.quantiles import check_levels
from polars_calib._engines import ENGINES, Engine, read_with
from polars_calib._frames.regression import (
    validate_regression_statistics,
)
from polars_calib._frames.statistics import (
    bin_statistics,
    metrics_from_statistics,
    reliability_from_statistics,
    validate_statistics,
)
from polars_calib._monitor import monitor_store_windows, update_monitor_store
from polars_calib._plot.audit import plot_audit
from polars_calib._plot.over_time import plot_metric_over_time
from polars_calib._plot.png import save_png
from polars_calib._plot.regression import plot_pit_histogram, plot_quantile_reliability
from polars_calib._plot.reliability import plot_reliability
from polars_calib._recalibration import ClippedScoresWarning, fit_calibrator, load_calibrator
from polars_calib._report.regression import (
    PIT_FORMS,
    Prediction,
    RegressionRequest,
    regression_html_report,
)
from polars_calib._report.regression_page import CURVE_NAMES, pit_bars
from polars_calib._report.report import HtmlReport, html_report
from polars_calib._report.sections import layout
from polars_calib._version import __version__

__all__ = [
    "RegressionOptions",
    "apply_command",
    "build_parser",
    "fit_command",
    "main",
    "parse_audit",
    "parse_report",
    "regression_report",
    "report",
    "run_audit",
    "scan",
]

PROG = "polars-calib"

PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")
CSV_SUFFIXES = (".csv", ".tsv")

METRICS: tuple[Metric, ...] = get_args(Metric)
CONSISTENCY_METRICS: tuple[ConsistencyMetric, ...] = get_args(ConsistencyMetric)
DIAGNOSTICS: tuple[Diagnostic, ...] = tuple(
    name for name in get_args(Diagnostic) if name != "brier_decomposition"
)
"""The tests and decompositions ``--metrics`` takes: one number each (a CSV column)."""
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
CLOSED: tuple[Closed, ...] = get_args(Closed)
REDUCTIONS: tuple[Reduction, ...] = get_args(Reduction)
CURVE_METRICS: tuple[RegressionMetric, ...] = GAUSSIAN_METRICS[:4]
"""The metrics of a calibration curve, which every form but the intervals has."""
FORM_METRICS: dict[str, tuple[RegressionMetric, ...]] = {
    "Gaussian": GAUSSIAN_METRICS,
    "quantile": (*CURVE_METRICS, "pinball_loss"),
    "ensemble": (*CURVE_METRICS, "crps", "crps_fair"),
    "interval": ("interval_coverage", "interval_width", "interval_score", "coverage_gap"),
}
"""Each regression form's metrics (:func:`polars_calib.regression_summary`'s default
columns, in order), which ``--metrics`` chooses from."""
REGRESSION_METRICS: tuple[RegressionMetric, ...] = tuple(
    dict.fromkeys(name for metrics in FORM_METRICS.values() for name in metrics)
)
"""Every regression form's metrics."""
DEFAULT_LEVELS = 100
"""``--n-levels``'s default: :func:`polars_calib.regression_summary`'s (uncertainty-toolbox's)."""

CLASSIFICATION_ONLY = (
    "bins",
    "strategy",
    "closed",
    "reduction",
    "resamples",
    "seed",
    "id",
    "audit",
    "audit_max_order",
)
"""``report``'s options of the classification form (argparse's names), refused with the
regression form's columns."""

PREDICTIONS: dict[str, tuple[str, ...]] = {
    "Gaussian": ("mean", "std"),
    "quantile": ("quantiles", "levels"),
    "ensemble": ("ensemble",),
    "interval": ("lower", "upper", "level"),
}
"""The regression prediction forms ``report`` takes with ``--target``, by their options
(argparse's names, the keywords of the regression functions): one per call, whole."""

FORM_OPTIONS: dict[str, tuple[str, ...]] = {
    "Gaussian": ("n_levels", "curve"),
    "quantile": (),
    "ensemble": ("n_levels", "curve", "seed", "id"),
    "interval": (),
}
"""The options of each regression form besides its columns (argparse's names): the level
grid and curve of the forms with a PIT, the rank PIT's seed and row id; refused with
another form."""

REGRESSION_ONLY = ("n_levels", "curve")
"""``report``'s options of the regression form, refused with the classification form's."""

PLOT_EXTRA = "pip install 'polars_calib[plot]'"
"""What the charts need, as the notes on stderr say it."""

REPORT_FILES = (
    "summary.csv",
    "summary.parquet",
    "reliability.csv",
    "reliability.png",
    "pit_histogram.png",
    "over_time.png",
)
"""The files of ``report --out DIR``: the directory may hold only these (it is replaced whole)."""

AUDIT_FILES = (
    "slices.csv",
    "slices.parquet",
    "disparities.csv",
    "disparities.parquet",
    "forest.png",
)
"""The files of ``audit --out DIR``: the directory may hold only these (it is replaced whole)."""

STEP_SECONDS = 10.0
"""The least time between two lines of a long stage's progress (``Progress.step``)."""

SMALL_GROUP = 100
"""Slices of ``report --audit`` with fewer rows are flagged too small (the page's
`min_count`, under which its groups are noted as too small)."""


class UsageError(Exception):
    """A bad command line: exit code 2."""


class DataError(Exception):
    """Unreadable or invalid input data: exit code 1."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, without the usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass(frozen=True)
class ReportOptions:
    """The checked options of ``polars-calib report``."""

    log: str
    prob: str
    label: str
    by: list[str]
    time: str | None
    every: str | None
    n_bins: int
    strategy: Strategy
    closed: Closed
    metrics: list[Metric | ConsistencyMetric | Diagnostic]
    weight: str | None
    confidence: float
    reduction: Reduction | None
    out: Path | None
    quiet: bool
    html: Path | None = None
    engine: Engine | None = None
    resamples: int | None = None
    seed: int = 0
    id: str | None = None
    audit: list[str] | None = None
    audit_max_order: int | None = None
    progress: bool = False

    @property
    def keys(self) -> list[str]:
        """The summary's keys: `by`, and the time window."""
        return [*self.by, *([self.time] if self.time is not None else [])]

    @property
    def interval(self) -> float | None:
        """The level of the bootstrap intervals (with ``--resamples``), else none."""
        return self.confidence if self.resamples is not None else None

    @property
    def page_metrics(self) -> list[Metric]:
        """The metrics of the page and the audit (the p-values stay in the summary)."""
        return [name for name in self.metrics if _is_metric(name)]


@dataclass(frozen=True)
class RegressionOptions:
    """The checked options of ``polars-calib report`` with the regression form."""

    log: str
    target: str
    prediction: dict[str, Any]
    """The prediction form's columns by option (``{"mean": "mu", "std": "sigma"}``), the
    keyword arguments of the regression functions (:class:`Prediction`'s fields)."""
    by: list[str]
    time: str | None
    every: str | None
    n_levels: int
    curve: Curve | None
    metrics: list[RegressionMetric] | None
    weight: str | None
    confidence: float
    out: Path | None
    quiet: bool
    html: Path | None = None
    engine: Engine | None = None
    progress: bool = False

    @property
    def keys(self) -> list[str]:
        """The summary's keys: `by`, and the time window."""
        return [*self.by, *([self.time] if self.time is not None else [])]

    def request(self, data: Any) -> RegressionRequest:
        """The report's request of `data` (the log as read): the calls of the public API
        that give its statistics, summary and curve (those of the HTML page)."""
        return RegressionRequest(
            data=data,
            target=self.target,
            prediction=Prediction(**self.prediction),
            by=self.by,
            time=self.time,
            every=self.every,
            n_levels=self.n_levels,
            weight=self.weight,
            metrics=None if self.metrics is None else tuple(self.metrics),
            curve=self.curve,
            confidence=self.confidence,
        )


def _is_metric(name: str) -> TypeGuard[Metric]:
    """Whether `name` is a metric (not a consistency p-value)."""
    return name in METRICS


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"must be a positive integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _levels(text: str) -> int:
    try:
        return check_n_levels(int(text))
    except ValueError:
        msg = f"must be an integer from 2 to {MAX_LEVELS}, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _bins(text: str) -> int:
    value = _positive_int(text)
    if value > MAX_BINS:
        msg = f"must be at most {MAX_BINS} (see docs/binning.md), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        msg = f"must be a number strictly between 0 and 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        msg = f"must be an integer from 0 to 2**32 - 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        msg = f"must be comma-separated column names, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return names


def _numbers(text: str) -> list[float]:
    try:
        return [float(value) for value in text.split(",")]
    except ValueError:
        msg = f"must be comma-separated numbers, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _duration(text: str) -> str:
    try:
        return check_every(text)
    except ValueError:
        msg = f"must be a positive Polars duration such as 1h, 1d, 1w or 1mo, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``polars-calib``."""
    parser = _Parser(
        prog=PROG,
        description="Calibration reports (ECE, MCE, RMSCE, Brier, log-loss, reliability "
        "tables and diagrams) of a log of predicted probabilities and 0/1 outcomes, or of "
        "regression predictions (calibration curves, CRPS, coverage, PIT histograms).",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    _add_report_input(report)
    _add_regression_input(report)
    _add_report_options(report)
    _add_report_outputs(report)
    _add_audit_parser(commands)
    _add_fit_parser(commands)
    _add_apply_parser(commands)
    _add_monitor_parser(commands)
    return parser


def _add_report_input(report: argparse.ArgumentParser) -> None:
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
        type=_names,
        default=[],
        metavar="COLS",
        help="comma-separated group-key columns, e.g. model,segment",
    )
    report.add_argument("--time", metavar="COL", help="Date/Datetime column (with --every)")
    report.add_argument(
        "--every",
        type=_duration,
        metavar="DURATION",
        help="calendar window of the summary, e.g. 1h, 1d, 1w, 1mo (with --time)",
    )


def _add_regression_input(report: argparse.ArgumentParser) -> None:
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
        type=_names,
        metavar="COLS",
        help="quantiles: an Array/List column of K predicted quantiles, or K comma-separated "
        "columns (with --levels)",
    )
    regression.add_argument(
        "--levels",
        type=_numbers,
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
        type=_names,
        metavar="COLS",
        help="intervals: lower-bound column(s), comma-separated for nested intervals",
    )
    regression.add_argument(
        "--upper", type=_names, metavar="COLS", help="intervals: upper-bound column(s), as --lower"
    )
    regression.add_argument(
        "--level",
        type=_numbers,
        metavar="LEVELS",
        help="intervals: nominal coverage in (0, 1), one per interval, e.g. 0.5,0.9",
    )
    regression.add_argument(
        "--n-levels",
        type=_levels,
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


def _add_report_options(report: argparse.ArgumentParser) -> None:
    """``report``'s bins, metrics, weight, intervals, resampling draws and reduction."""
    # Options of one form only default to None, so that the other form can refuse them.
    report.add_argument(
        "--bins",
        type=_bins,
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
        type=_names,
        metavar="NAMES",
        help=f"comma-separated metrics among {','.join(METRICS)} (default: all), "
        f"consistency-test p-values among {','.join(CONSISTENCY_METRICS)}, and (binary data) "
        f"tests and decompositions among {','.join(DIAGNOSTICS)}; for regression, among "
        f"{','.join(REGRESSION_METRICS)} (default: all)",
    )
    report.add_argument("--weight", metavar="COL", help="non-negative sample-weight column")
    report.add_argument(
        "--confidence",
        type=_confidence,
        default=0.95,
        metavar="LEVEL",
        help="level of the Wilson interval in the reliability table and, with "
        "--resamples, of the bootstrap intervals of the summary (default 0.95)",
    )
    report.add_argument(
        "--resamples",
        type=_positive_int,
        metavar="N",
        help="bootstrap replicates: adds <metric>_lower/_upper to the summary (default: no "
        "intervals); also the label sets of consistency p-values (default 1000)",
    )
    report.add_argument(
        "--seed",
        type=_seed,
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


def _add_report_outputs(report: argparse.ArgumentParser) -> None:
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
        type=_names,
        metavar="COLS",
        help="with --html: a fairness-audit section auditing these attribute columns, e.g. "
        "sex,age_band, within each value of the first --by key (the model), as "
        "`polars-calib audit --by sex,age_band --within model` (one more pass over the log)",
    )
    report.add_argument(
        "--audit-max-order",
        type=_positive_int,
        metavar="N",
        help="with --audit: the most attributes a slice fixes (default 2, or their number)",
    )
    report.add_argument(
        "--engine",
        choices=ENGINES,
        help="compute the statistics on a local Spark session or with Dask reading LOG "
        "(the spark or dask extra; uniform bins); default: Polars",
    )
    report.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    report.add_argument(
        "--progress",
        action="store_true",
        help="progress with elapsed time and estimates even when stderr is not a terminal",
    )


def _add_fit_parser(commands: Any) -> None:
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
        type=_names,
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
        type=_bins,
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
        type=_positive_int,
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
    fit.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    fit.add_argument(
        "--progress",
        action="store_true",
        help="progress with elapsed time and estimates even when stderr is not a terminal",
    )


def _add_apply_parser(commands: Any) -> None:
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
    apply.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    apply.add_argument(
        "--progress",
        action="store_true",
        help="progress with elapsed time and estimates even when stderr is not a terminal",
    )


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


def check_output_file(option: str, output: Path, inputs: Sequence[str | Path]) -> None:
    """Refuse (a usage error) an output file that is an input, compared as files.

    The same path, a symbolic or hard link to an input file, or a path inside an
    input directory is refused, before anything is read.
    """
    source = overwritten_input(output, inputs)
    if source is not None:
        msg = (
            f"argument {option}: {str(output)!r} would write over the input {source!r} "
            "(the same file, a link to it, or inside its directory): give another path"
        )
        raise UsageError(msg)
    if output.is_dir():
        msg = f"argument {option}: {str(output)!r} is a directory: give a file name"
        raise UsageError(msg)


def check_output_directory(
    option: str, out: Path, owned: Sequence[str], inputs: Sequence[str | Path]
) -> None:
    """Refuse (a usage error) an output directory that cannot be replaced whole.

    It may not be, hold or lie inside an input (files compared through links), be a
    file, or hold files other than `owned` (the command's outputs).
    """
    source = overwritten_input(out, inputs, directory=True)
    if source is not None:
        msg = (
            f"argument {option}: {str(out)!r} would write over the input {source!r} "
            "(it holds the input or a link to it, or lies inside it; the directory is "
            "replaced whole): give another directory"
        )
        raise UsageError(msg)
    try:
        check_replaceable(out, owned)
    except ValueError as error:
        raise UsageError(f"argument {option}: {error}") from error


def parse_report(argv: Sequence[str]) -> ReportOptions | RegressionOptions:
    """Parse and check a ``report`` command line; raise :class:`UsageError` when it is wrong.

    The log's prediction form decides the options: ``--prob`` and ``--label``
    (classification, :class:`ReportOptions`) or ``--target``, ``--mean`` and ``--std``
    (regression, :class:`RegressionOptions`); one form, whole, and only its options.
    """
    args = build_parser().parse_args(argv)
    if (args.time is None) != (args.every is None):
        msg = "--time and --every go together: give both or neither"
        raise UsageError(msg)
    if _form(args) == "regression":
        return _regression_options(args)
    return _classification_options(args)


def _given(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """The options among `names` (argparse's names) given on the command line, as flags."""
    return _flags([name for name in names if getattr(args, name) is not None])


def _flags(names: Sequence[str]) -> list[str]:
    """Options' argparse names as their flags: ``n_levels`` is ``--n-levels``."""
    return ["--" + name.replace("_", "-") for name in names]


def _form(args: argparse.Namespace) -> Literal["classification", "regression"]:
    """The prediction form of a ``report`` command line: one, whole, and only its options."""
    classification = _given(args, ("prob", "label"))
    regression = _given(args, ("target", *(name for form in PREDICTIONS.values() for name in form)))
    if classification and regression:
        msg = (
            f"{' and '.join(classification)} (classification) and {' and '.join(regression)} "
            "(regression) are two prediction forms: give one"
        )
        raise UsageError(msg)
    if not classification and not regression:
        msg = (
            "give the log's prediction form: --prob COL --label COL (classification), or "
            "--target COL with --mean COL --std COL, --quantiles COLS --levels LEVELS, "
            "--ensemble COL, or --lower COLS --upper COLS --level LEVELS (regression)"
        )
        raise UsageError(msg)
    name = _prediction(args)
    form, columns, others = (
        ("regression", _flags(("target", *PREDICTIONS[name])), CLASSIFICATION_ONLY)
        if regression
        else ("classification", ("--prob", "--label"), REGRESSION_ONLY)
    )
    given = regression or classification
    missing = [flag for flag in columns if flag not in given]
    if missing:
        msg = f"the {form} form needs {' and '.join(missing)} with {' and '.join(given)}"
        raise UsageError(msg)
    # A regression form's own options (--seed, --id of ensembles): _check_form_options.
    own = {option for options in FORM_OPTIONS.values() for option in options} if regression else ()
    wrong = _given(args, [option for option in others if option not in own])
    if wrong:
        other = "classification" if form == "regression" else "regression"
        msg = (
            f"{wrong[0]} is an option of the {other} form: the {form} form "
            f"({', '.join(columns)}) does not take it"
        )
        raise UsageError(msg)
    if regression:
        _check_form_options(args, name, columns)
    return "regression" if regression else "classification"


def _check_form_options(args: argparse.Namespace, name: str, columns: Sequence[str]) -> None:
    """Refuse (a usage error) another regression form's options, such as ``--n-levels``
    with quantiles, and ``--engine`` with any form but the Gaussian."""
    others = {option for options in FORM_OPTIONS.values() for option in options}
    wrong = _given(args, sorted(others - set(FORM_OPTIONS[name])))
    if wrong:
        option = wrong[0].removeprefix("--").replace("-", "_")
        takers = [form for form, options in FORM_OPTIONS.items() if option in options]
        msg = (
            f"{wrong[0]} is an option of the {' and '.join(takers)} predictions: the {name} "
            f"predictions ({', '.join(columns)}) do not take it"
        )
        raise UsageError(msg)
    if args.engine is not None and name != "Gaussian":
        msg = (
            f"--engine {args.engine} takes the Gaussian form (--mean, --std) only: drop it "
            f"to read the {name} predictions with Polars"
        )
        raise UsageError(msg)


def _prediction(args: argparse.Namespace) -> str:
    """The regression prediction form given: one of :data:`PREDICTIONS` (the Gaussian
    when none is, for the message saying so)."""
    forms = [name for name, options in PREDICTIONS.items() if _given(args, options)]
    if len(forms) > 1:
        msg = f"{' and '.join(forms)} predictions are two prediction forms: give one"
        raise UsageError(msg)
    return forms[0] if forms else "Gaussian"


def _regression_options(args: argparse.Namespace) -> RegressionOptions:
    """The checked options of a ``report`` command line of the regression form."""
    name = _prediction(args)
    known = FORM_METRICS[name]
    metrics = None if args.metrics is None else list(args.metrics)
    unknown = [metric for metric in metrics or [] if metric not in known]
    if unknown:
        msg = (
            f"argument --metrics: unknown metric {unknown[0]!r} of {name} predictions "
            f"(choose from {', '.join(known)})"
        )
        raise UsageError(msg)
    return RegressionOptions(
        log=str(args.log),
        target=str(args.target),
        prediction=_form_values(args, name),
        by=list(args.by),
        time=args.time,
        every=args.every,
        n_levels=DEFAULT_LEVELS if args.n_levels is None else int(args.n_levels),
        curve=args.curve,
        metrics=metrics,
        weight=args.weight,
        confidence=float(args.confidence),
        out=args.out,
        quiet=bool(args.quiet),
        html=args.html,
        engine=args.engine,
        progress=bool(args.progress),
    )


def _check_counts(args: argparse.Namespace, name: str) -> None:
    """Refuse (a usage error) quantile columns or interval bounds and levels that are not
    as many (one quantile column is an Array/List of them)."""
    options = {"quantile": ("quantiles", "levels"), "interval": PREDICTIONS["interval"]}
    counts = {flag: len(getattr(args, flag[2:])) for flag in _flags(options.get(name, ()))}
    if name == "quantile" and counts["--quantiles"] == 1:
        return
    if len(set(counts.values())) > 1:
        given = ", ".join(f"{count} {flag}" for flag, count in counts.items())
        msg = f"the {name} predictions need one of each per level: got {given}"
        raise UsageError(msg)


def _form_values(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """The form's keyword arguments of the regression functions, as they take them: one
    column name as a string, several as a list; levels checked (a usage error)."""
    values: dict[str, Any] = {}
    for option in (*PREDICTIONS[name], *FORM_OPTIONS[name]):
        value = getattr(args, option)
        if option in ("quantiles", "lower", "upper") and len(value) == 1:
            value = value[0]  # one column: an Array/List of quantiles, or one interval
        if option == "level" and len(value) == 1:
            value = value[0]
        if value is not None and option not in ("n_levels", "curve"):
            values[option] = value
    _check_counts(args, name)
    try:
        if name == "quantile":
            check_levels(values["levels"])
        if name == "interval":
            for level in args.level:
                check_level(level)
    except ValueError as error:
        flag = "--levels" if name == "quantile" else "--level"
        raise UsageError(f"argument {flag}: {error}") from error
    return values


def _classification_options(args: argparse.Namespace) -> ReportOptions:
    """The checked options of a ``report`` command line of the classification form."""
    args.bins = 15 if args.bins is None else args.bins
    args.strategy = args.strategy or "uniform"
    args.closed = args.closed or "right"
    args.metrics = list(METRICS) if args.metrics is None else args.metrics
    args.seed = 0 if args.seed is None else args.seed
    if args.engine is not None and args.strategy != "uniform":
        msg = f"--engine {args.engine} needs uniform bins (mergeable across partitions)"
        raise UsageError(msg)
    try:
        Binning(args.bins, args.strategy, args.closed)  # the library's bounds, as usage
    except ValueError as error:
        raise UsageError(f"argument --bins: {error}") from error
    known = (*METRICS, *CONSISTENCY_METRICS, *DIAGNOSTICS)
    unknown = [name for name in args.metrics if name not in known]
    if unknown:
        choices = ", ".join(known)
        msg = f"argument --metrics: unknown metric {unknown[0]!r} (choose from {choices})"
        raise UsageError(msg)
    if args.audit is not None and args.html is None:
        msg = "--audit is a section of the HTML report: give --html FILE (or run `audit`)"
        raise UsageError(msg)
    if args.audit is not None and args.engine is not None:
        msg = f"--audit reads the log with Polars: drop --engine {args.engine}"
        raise UsageError(msg)
    if args.audit_max_order is not None and args.audit is None:
        msg = "--audit-max-order goes with --audit"
        raise UsageError(msg)
    if args.audit is not None and args.by[:1] and args.by[0] in args.audit:
        msg = (
            f"--audit cannot slice {args.by[0]!r}: the audit runs within each value of the "
            "first --by key (the model)"
        )
        raise UsageError(msg)
    return ReportOptions(
        log=str(args.log),
        prob=str(args.prob),
        label=str(args.label),
        by=list(args.by),
        time=args.time,
        every=args.every,
        n_bins=int(args.bins),
        strategy=args.strategy,
        closed=args.closed,
        metrics=list(args.metrics),
        weight=args.weight,
        confidence=float(args.confidence),
        reduction=args.reduction,
        out=args.out,
        quiet=bool(args.quiet),
        html=args.html,
        engine=args.engine,
        resamples=args.resamples,
        seed=int(args.seed),
        id=args.id,
        audit=args.audit,
        audit_max_order=args.audit_max_order,
        progress=bool(args.progress),
    )


def _check_found(source: str) -> None:
    """Raise :class:`DataError` when a local path, glob or directory names no log file."""
    path = Path(source)
    if glob.has_magic(source):
        if not glob.glob(source, recursive=True):
            msg = f"no file matches {source!r}"
            raise DataError(msg)
    elif path.is_dir():
        if not any(path.rglob("*.parquet")):
            msg = f"directory {source!r} holds no .parquet file"
            raise DataError(msg)
    elif not path.exists():
        msg = f"no such file: {source!r}"
        raise DataError(msg)


def scan(source: str) -> pl.LazyFrame:
    """Scan a parquet or CSV file, a glob of them, or a directory of parquet files, lazily."""
    _check_found(source)
    path = Path(source)
    if not glob.has_magic(source) and path.is_dir():
        return pl.scan_parquet(path)
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return pl.scan_parquet(source)
    if suffix in CSV_SUFFIXES:
        separator = "\t" if suffix == ".tsv" else ","
        lf = pl.scan_csv(source, separator=separator, try_parse_dates=True)
        # A header alone reads every column as String: say what is wrong instead.
        if lf.head(1).collect().is_empty():
            msg = f"{source!r} holds no rows (a CSV header only): nothing to read"
            raise DataError(msg)
        return lf
    msg = f"cannot tell the format of {source!r}: expected a .parquet or .csv file"
    raise DataError(msg)


def report(options: ReportOptions, stdout: TextIO, stderr: TextIO) -> None:
    """Run ``polars-calib report``: print the summary and write the outputs.

    The log's statistics are computed once (:func:`polars_calib.bin_statistics`, by
    Polars or the engine) and finished into the printed summary, the reliability
    table and the HTML page; a second pass reads the log only where the summary's
    statistics cannot give the reliability table (see :func:`_reliability`).
    """
    _check_report_outputs(options)
    progress = Progress(stderr, quiet=options.quiet, detailed=options.progress)
    resampling = _resampling(options)
    # One pass, and one per 64 replicates of each resampling (an estimate with an engine).
    chunks = (_passes(options.resamples or 1000) - 1) * len(resampling or [])
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
        with _silenced(options.quiet):
            data, schema = _read(options.engine, options.log)
        audited = None
    else:
        progress(f"scanning {options.log}")
        data = scan(options.log)
        audited = _audit(data, options, progress)  # its errors before any output
        progress(f"computing the statistics ({reads})...", passes=1 + chunks)
        schema = None
    stats = _statistics(data, options, windows=True, resampling=resampling)
    log = _Log(data, data.collect_schema() if schema is None else schema, options)
    table = metrics_from_statistics(
        stats,
        by=options.keys,
        metrics=options.metrics,
        confidence=options.interval,
        reduction=log.reduction,
    )
    with _table_config():
        print(table, file=stdout, flush=True)
    reliability = None
    if options.out is not None:
        reliability = _reliability(log, stats, progress)
        _write_outputs(options, options.out, table, reliability, progress, stderr)
    if options.html is not None:
        if reliability is None and options.engine is not None:
            # The engine's statistics give every table: the page reads no log.
            reliability = _reliability(log, stats, progress)
        write_html(options, log, stats, reliability, audited, progress, stderr)
    progress.done()


def _report_files(options: ReportOptions | RegressionOptions) -> list[str]:
    """What ``--out DIR`` may hold: the report's files, and the ``--html`` page's entry."""
    owned: list[str] = list(REPORT_FILES)
    if options.out is not None and options.html is not None:
        out, page = Path(options.out).resolve(), Path(options.html).resolve()
        if page.is_relative_to(out):
            owned.append(page.relative_to(out).parts[0])
    return owned


def _check_report_outputs(options: ReportOptions | RegressionOptions) -> None:
    """Refuse outputs that would write over the log, or over each other."""
    if options.out is not None:
        check_output_directory("--out", options.out, _report_files(options), [options.log])
    if options.html is not None:
        check_output_file("--html", options.html, [options.log])
        page = Path(options.html).resolve()
        inside = options.out is not None and page.parent == Path(options.out).resolve()
        if inside and page.name in REPORT_FILES:
            msg = f"argument --html: {str(options.html)!r} is one of the --out files"
            raise UsageError(msg)


def regression_report(options: RegressionOptions, stdout: TextIO, stderr: TextIO) -> None:
    """Run ``polars-calib report`` with the regression form: print the summary, write outputs.

    The log's statistics are computed once (:func:`polars_calib.regression_statistics`,
    by Polars or the engine) and finished into the printed summary
    (:func:`polars_calib.regression_metrics_from_statistics`), the calibration curve
    (:func:`polars_calib.quantile_reliability_from_statistics`), the PIT histogram and
    the HTML page (:func:`polars_calib.regression_html_report`): the log is read once.
    """
    _check_report_outputs(options)
    progress = Progress(stderr, quiet=options.quiet, detailed=options.progress)
    if options.engine is not None:
        progress(
            f"computing the statistics with {options.engine} (one pass over the log)...", passes=1
        )
        with _silenced(options.quiet):
            data, schema = _read(options.engine, options.log)
    else:
        progress(f"scanning {options.log}")
        data, schema = scan(options.log), None
        progress("computing the statistics (one pass over the log)...", passes=1)
    request = options.request(data)
    stats = _regression_statistics(request, options)
    # A plan of the request's grid: a table without binned rows (an empty log) has a summary.
    table = request.summary(stats, options.keys).collect()
    with _table_config():
        print(table, file=stdout, flush=True)
    if options.out is not None:
        _write_regression_outputs(options, options.out, request, table, stats, progress, stderr)
    if options.html is not None:
        polars = data if isinstance(data, pl.LazyFrame) else pl.LazyFrame(schema=schema)
        _write_regression_html(options, polars, stats, progress, stderr)
    progress.done()


def _regression_statistics(request: RegressionRequest, options: RegressionOptions) -> pl.DataFrame:
    """The regression statistics table of the log, per `--by` key and window.

    The engine's frame gives it checked; a Polars scan is collected, and its refused
    rows raise (counted by reading the log again, only then), as a DataFrame's do.
    """
    with _silenced(options.quiet and options.engine is not None):
        stats = request.statistics()
    if isinstance(stats, pl.DataFrame):  # the engine's
        return stats
    plan: pl.LazyFrame = stats
    return validate_regression_statistics(
        plan.collect(),
        request.data,
        options.target,
        **request.prediction.kwargs(),
        by=options.by,
        time=options.time,
        every=options.every,
        weight=options.weight,
    )


def _write_regression_outputs(
    options: RegressionOptions,
    out: Path,
    request: RegressionRequest,
    table: pl.DataFrame,
    stats: pl.DataFrame,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write ``--out``'s files of the regression form: the summary, the calibration curve
    and its diagram (not for central intervals, whose summary per level is their curve),
    the PIT histogram (the forms with a PIT), replacing `out` whole (as the
    classification's)."""
    planned = request.curves(stats)  # per `--by` key: the windows summed
    curve = None if planned is None else planned.collect()
    name = Path(options.log).name
    # The windows summed; panels as the diagram's default (the last key's, up to 4 values).
    colours, facet = layout(stats, options.by, least=2)
    charts: dict[str, Any] = {}
    if curve is not None:
        charts["reliability.png"] = functools.partial(
            plot_quantile_reliability,
            curve,
            title=f"{CURVE_NAMES[request.drawn_curve].capitalize()} calibration of "
            f"{options.target} ({name})",
        )
    if request.prediction.kind in PIT_FORMS:
        charts["pit_histogram.png"] = functools.partial(
            plot_pit_histogram,
            stats,
            by=colours,
            facet=facet,
            n_bins=pit_bars(2 * (options.n_levels - 1)),
            title=f"PIT histogram of {options.target} ({name})",
        )
    with _replaced(out, _report_files(options)) as staging:
        written = "summary.parquet" + (", reliability.csv" if curve is not None else "")
        progress(f"writing {out / 'summary.csv'}, {written}")
        table.write_csv(staging / "summary.csv")
        table.write_parquet(staging / "summary.parquet")
        if curve is not None:
            curve.write_csv(staging / "reliability.csv")
        if not int(stats.filter(pl.col("bin").is_not_null()).get_column("count").sum()):
            print(f"{PROG}: note: no usable row: no charts", file=stderr)
            return
        for file, plot in charts.items():
            progress(f"drawing {out / file}")
            if _save_chart(plot, staging / file) is None:
                print(f"{PROG}: note: skipped {file} ({PLOT_EXTRA})", file=stderr)


def _save_chart(plot: Any, path: Path) -> str | None:
    """Draw `plot` (a plotting function given all but `backend`) to `path` with Altair
    (vl-convert), else matplotlib; return the backend used, or None when neither can."""
    try:
        save_png(plot(), path)
        return "altair"
    except ImportError:
        pass
    try:
        save_png(plot(backend="matplotlib"), path, scale=1.5)
        return "matplotlib"
    except ImportError:
        return None


def _write_regression_html(
    options: RegressionOptions,
    data: pl.LazyFrame,
    stats: pl.DataFrame,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write the HTML report of ``--html`` (:func:`polars_calib.regression_html_report`)
    from the summary's statistics: the page reads no row."""
    assert options.html is not None
    progress("laying out the HTML report...")
    page = regression_html_report(
        data,
        options.target,
        **options.prediction,
        by=options.by,
        time=options.time,
        every=options.every,
        n_levels=options.n_levels,
        weight=options.weight,
        metrics=options.metrics,
        curve=options.curve,
        confidence=options.confidence,
        min_count=SMALL_GROUP,
        source=options.log,
        statistics=stats,
    )
    _save_page(page, options.html, progress, stderr)


@dataclass(frozen=True)
class _Log:
    """The log as read: the frame (a Polars scan or the engine's), and its Polars schema."""

    data: Any
    schema: pl.Schema
    options: ReportOptions

    @property
    def reduction(self) -> Reduction | None:
        """The reduction the tables measure: ``"confidence"`` for vectors when none is given."""
        dtype = self.schema.get(self.options.prob)
        vectors = isinstance(dtype, (pl.Array, pl.List))
        return self.options.reduction or ("confidence" if vectors else None)

    @property
    def polars(self) -> pl.LazyFrame:
        """The log as Polars reads it; with an engine, its schema only (no rows)."""
        if isinstance(self.data, pl.LazyFrame):
            return self.data
        return pl.LazyFrame(schema=self.schema)


class Progress:
    """Progress lines on stderr: one per stage, as it starts; nothing with ``--quiet``.

    On a terminal, or with ``--progress``, each line starts with the time elapsed
    (``[m:ss]``) and, for a stage reading the log, says how many passes it makes
    and how long they should take at the rate the earlier passes ran (the passes
    over the log are the long part of every command); a last line says when the
    command is done. Otherwise (a pipe, a file) the lines are the stages alone.
    """

    def __init__(self, stderr: TextIO, *, quiet: bool, detailed: bool | None = None) -> None:
        self.stderr, self.quiet = stderr, quiet
        self.detailed = _is_terminal(stderr) if not detailed else True
        self.start = self.stage_start = time.monotonic()
        self.stage_passes = 0
        self.pass_seconds, self.passes_done = 0.0, 0
        self.step_of: tuple[str, int] | None = None
        self.step_start = self.step_said = self.step_last = 0.0

    def __call__(self, message: str, *, passes: int = 0) -> None:
        """Say that a stage starts; `passes`: how many times it reads the log."""
        now = time.monotonic()
        if self.stage_passes:
            self.pass_seconds += now - self.stage_start
            self.passes_done += self.stage_passes
        self.stage_start, self.stage_passes = now, passes
        if self.quiet:
            return
        if self.detailed:
            message = f"[{_clock(now - self.start)}] {message}"
            if passes and self.passes_done:
                left = self.pass_seconds / self.passes_done * passes
                message += f" (about {_clock(left)} for {passes} pass{'es' * (passes > 1)})"
        print(f"{PROG}: {message}", file=self.stderr, flush=True)

    def step(self, stage: str, done: int, total: int) -> None:
        """Say how far a long stage is, `done` of `total` (the audit's `progress`).

        Only in the detailed form, at most every :data:`STEP_SECONDS` and at the
        stage's end, with what is left at the rate of its steps so far.
        """
        now = time.monotonic()
        if self.quiet or not self.detailed or total <= 1:
            return
        if (stage, total) != self.step_of:  # a new stage: its steps from the last one's end
            self.step_of, self.step_said = (stage, total), 0.0
            self.step_start = max(self.stage_start, self.step_last)
        self.step_last = now
        if done < total and now - self.step_said < STEP_SECONDS:
            return
        self.step_said = now
        left = (now - self.step_start) / done * (total - done)
        message = f"[{_clock(now - self.start)}]   {stage}: {done:,} of {total:,}"
        if done < total:
            message += f" (about {_clock(left)} left)"
        print(f"{PROG}: {message}", file=self.stderr, flush=True)

    def done(self) -> None:
        """Say that the command is done, and in how long (only in the detailed form)."""
        if self.detailed and not self.quiet:
            elapsed = _clock(time.monotonic() - self.start)
            print(f"{PROG}: [{elapsed}] done", file=self.stderr, flush=True)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    """A duration as ``m:ss`` (or ``h:mm:ss``)."""
    minutes, second = divmod(round(seconds), 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours}:{minute:02d}:{second:02d}" if hours else f"{minute}:{second:02d}"


def _passes(resamples: int | None) -> int:
    """The passes over the log of a statistics table: one, and one per 64 replicates."""
    return 1 + (-(-resamples // 64) if resamples else 0)


def _table_config() -> pl.Config:
    """How a table is printed: every row and column, floats to 4 decimals."""
    return pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=1_000,
        float_precision=4,
        fmt_str_lengths=80,
        tbl_hide_dataframe_shape=True,
    )


def _resampling(options: ReportOptions) -> list[Resampling] | None:
    """The replicates the statistics hold: the bootstrap's (``--resamples``), and the
    consistency test's (a consistency p-value among the metrics)."""
    methods: list[Resampling] = []
    if options.resamples is not None:
        methods.append("bootstrap")
    if set(options.metrics) & set(CONSISTENCY_METRICS):
        methods.append("consistency")
    return methods or None


@contextmanager
def _silenced(quiet: bool) -> Iterator[None]:
    """With `quiet`, silence what an engine prints itself: Spark's JVM log, Python warnings.

    This process's standard error (file descriptor 2) points to the null device
    while the block runs, and the processes started meanwhile (Spark's JVM and its
    Python workers, Dask's) keep it; warnings are ignored. An error still reaches
    the command line's one-line message, printed after the block.
    """
    if not quiet:
        yield
        return
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _read(engine: Engine, log: str) -> tuple[Any, pl.Schema]:
    """The log as the engine's frame, and its schema (the engine's extra is needed)."""
    if "://" not in log:  # a local path (the engine may read others, Polars not)
        _check_found(log)
    try:
        return read_with(engine, log)
    except ImportError as error:
        msg = f"--engine {engine} needs the {engine} extra: pip install 'polars_calib[{engine}]'"
        raise DataError(msg) from error


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
    with _silenced(options.quiet and options.engine is not None):
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


def _reliability(log: _Log, stats: pl.DataFrame, progress: Progress) -> pl.DataFrame:
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


def _write_outputs(
    options: ReportOptions,
    out: Path,
    table: pl.DataFrame,
    reliability: pl.DataFrame,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write ``--out``'s files: the summary, the reliability table and the charts.

    They are written to a new directory beside `out`, which replaces `out` whole
    once every file is written: a failed or killed run leaves the previous outputs.
    """
    with _replaced(out, _report_files(options)) as staging:
        progress(f"writing {out / 'summary.csv'}, summary.parquet, reliability.csv")
        table.write_csv(staging / "summary.csv")
        table.write_parquet(staging / "summary.parquet")
        reliability.write_csv(staging / "reliability.csv")
        progress(f"drawing {out / 'reliability.png'}")
        title = f"Reliability diagram of {options.prob} ({Path(options.log).name})"
        if draw_png(reliability, staging / "reliability.png", title) is None:
            print(
                f"{PROG}: note: skipped reliability.png (the plot extra is not installed: "
                f"{PLOT_EXTRA})",
                file=stderr,
            )
        if options.time is not None and options.interval is not None:
            bounded = next(name for name in table.columns if name.endswith("_lower"))
            metric = bounded.removesuffix("_lower")
            progress(f"drawing {out / 'over_time.png'}")
            if _draw_over_time(table, metric, options, staging / "over_time.png") is None:
                print(f"{PROG}: note: skipped over_time.png ({PLOT_EXTRA})", file=stderr)


@contextmanager
def _replaced(out: Path, owned: Sequence[str]) -> Iterator[Path]:
    """:func:`replaced_directory`, its errors as the command line's data errors."""
    try:
        with replaced_directory(out, owned) as staging:
            yield staging
    except OSError as error:
        msg = f"cannot write the output directory {str(out)!r}: {error.strerror or error}"
        raise DataError(msg) from error


def draw_png(table: pl.DataFrame, path: Path, title: str) -> str | None:
    """Draw the reliability diagram to `path` with Altair (vl-convert), else matplotlib.

    The layout is :func:`polars_calib.plot_reliability`'s default for the table's keys
    (the `--by` keys). Returns the backend used, or None when neither can write a
    PNG here.
    """
    try:
        save_png(plot_reliability(table, title=title), path)
        return "altair"
    except ImportError:
        pass
    try:
        figure = plot_reliability(table, backend="matplotlib", title=title)
        save_png(figure, path, scale=1.5)
        return "matplotlib"
    except ImportError:
        return None


def _draw_over_time(
    table: pl.DataFrame, metric: str, options: ReportOptions, path: Path
) -> str | None:
    """Draw `metric` over the time windows with its interval, Altair else matplotlib."""
    title = f"{metric} per {options.every} window ({Path(options.log).name})"
    assert options.time is not None
    try:
        # The Python default's layout, as the HTML report's chart.
        chart = plot_metric_over_time(table, metric, options.time, title=title)
        save_png(chart, path)
        return "altair"
    except ImportError:
        pass
    try:
        figure = plot_metric_over_time(
            table, metric, options.time, backend="matplotlib", title=title
        )
        save_png(figure, path, scale=1.5)
        return "matplotlib"
    except ImportError:
        return None


def _audit(lf: pl.LazyFrame, options: ReportOptions, progress: Progress) -> Audit | None:
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
        passes=_passes(options.resamples),
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
    log: _Log,
    stats: pl.DataFrame,
    reliability: pl.DataFrame | None,
    audited: Audit | None,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write the HTML report of ``--html`` (:func:`polars_calib.html_report`) from the
    summary's statistics (with their replicates, for the intervals), the reliability
    table when there is one, and the audit."""
    assert options.html is not None
    progress("laying out the HTML report...")
    # The page's own passes (see html_report's Notes), said as they come.
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
    )
    _save_page(page, options.html, progress, stderr)


def _save_page(page: HtmlReport, path: Path, progress: Progress, stderr: TextIO) -> None:
    """Write the page of ``--html`` to `path` (atomically), and say if it has no charts."""
    progress(f"writing {path}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        page.save(path)
    except OSError as error:
        msg = f"cannot write {str(path)!r}: {error.strerror}"
        raise DataError(msg) from error
    if any(note.startswith("No charts") for note in page.notes):
        print(
            f"{PROG}: note: {path} has no charts (the plot extra is not installed: {PLOT_EXTRA})",
            file=stderr,
        )


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


# --------------------------------------------------------------------------
# polars-calib monitor
# --------------------------------------------------------------------------

ALARM_EXIT = 3
"""The exit code of ``polars-calib monitor`` when an alarm fires among the rows it read."""


def _positive_numbers(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(0.0 < value < float("inf") for value in values):
        msg = f"must be comma-separated positive numbers, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return values


def _add_monitor_parser(commands: Any) -> None:
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
        "--by", type=_names, default=[], metavar="COLS", help="comma-separated group keys"
    )
    monitor.add_argument("--time", required=True, metavar="COL", help="Date or Datetime column")
    monitor.add_argument(
        "--every", type=_duration, default="1d", metavar="DURATION", help="windows (default 1d)"
    )
    monitor.add_argument(
        "--bins", type=_bins, default=15, metavar="N", help="uniform bins of the ECE (default 15)"
    )
    monitor.add_argument("--weight", metavar="COL", help="non-negative sample-weight column")
    monitor.add_argument(
        "--store", type=Path, required=True, metavar="DIR", help="the store (created if new)"
    )
    monitor.add_argument(
        "--odds-ratio",
        type=_positive_numbers,
        default=[0.5, 2.0],
        metavar="R,...",
        help="the charts' odds ratios (default 0.5,2)",
    )
    monitor.add_argument(
        "--arl0", type=float, metavar="ROWS", help="in-control ARL of each chart (default 10000)"
    )
    monitor.add_argument(
        "--threshold", type=_positive_numbers, metavar="H,...", help="thresholds instead of --arl0"
    )
    monitor.add_argument("--seed", type=_seed, default=0, help="seed of the threshold simulation")
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
        with _table_config():
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


# --------------------------------------------------------------------------
# polars-calib audit
# --------------------------------------------------------------------------


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


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        msg = f"must be a non-negative integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _add_audit_parser(commands: Any) -> None:
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
        type=_names,
        required=True,
        metavar="COLS",
        help="comma-separated attribute columns, e.g. sex,age_band,region",
    )
    audit.add_argument(
        "--within",
        type=_names,
        default=[],
        metavar="COLS",
        help="comma-separated columns kept whole, e.g. model: one audit per value (required "
        "when a column named model holds several values)",
    )
    audit.add_argument(
        "--max-order",
        type=_positive_int,
        metavar="N",
        help="the most attributes a slice fixes (default 2, or the number of attributes)",
    )
    audit.add_argument(
        "--bins",
        type=_bins,
        default=15,
        metavar="N",
        help="number of uniform bins of the binned metrics (default 15)",
    )
    audit.add_argument(
        "--metrics",
        type=_names,
        default=["ece", "brier"],
        metavar="NAMES",
        help=f"comma-separated metrics among {','.join(METRICS)} (default: ece,brier)",
    )
    audit.add_argument("--weight", metavar="COL", help="non-negative sample-weight column")
    audit.add_argument(
        "--min-count",
        type=_count,
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
        type=_confidence,
        default=0.95,
        metavar="LEVEL",
        help="level of the intervals; the tests' level is 1 - LEVEL (default 0.95)",
    )
    audit.add_argument(
        "--resamples",
        type=_count,
        default=1000,
        metavar="N",
        help="bootstrap replicates of the intervals; 0: no intervals (default 1000)",
    )
    audit.add_argument("--seed", type=_count, default=0, metavar="N", help="seed of the draws")
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
    audit.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    audit.add_argument(
        "--progress",
        action="store_true",
        help="progress with elapsed time and estimates even when stderr is not a terminal",
    )


def parse_audit(argv: Sequence[str]) -> AuditOptions:
    """Parse and check an ``audit`` command line; raise :class:`UsageError` when it is wrong."""
    args = build_parser().parse_args(argv)
    unknown = [name for name in args.metrics if name not in METRICS]
    if unknown:
        choices = ", ".join(METRICS)
        msg = f"argument --metrics: unknown metric {unknown[0]!r} (choose from {choices})"
        raise UsageError(msg)
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
        passes=_passes(options.n_resamples),
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
    with _table_config():
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
    with _replaced(out, AUDIT_FILES) as staging:
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
    try:
        save_png(plot_audit(result, title=title), path)
        return
    except ImportError:
        pass
    try:
        figure = plot_audit(result, backend="matplotlib", title=title)
        save_png(figure, path, scale=1.5)
    except ImportError:
        print(
            f"{PROG}: note: skipped forest.png (the plot extra is not installed: {PLOT_EXTRA})",
            file=stderr,
        )
