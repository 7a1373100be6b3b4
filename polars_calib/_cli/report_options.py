"""``report``'s checked options: the prediction form of a command line, and the
classification form's options."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard, get_args

import polars as pl

from polars_calib._cli.arguments import UsageError, as_flags, check_metrics, given_flags
from polars_calib._cli.regression_options import (
    FORM_OPTIONS,
    PREDICTIONS,
    RegressionOptions,
    check_form_options,
    prediction_form,
    regression_options,
)
from polars_calib._core.binning import Binning
from polars_calib._core.options import (
    Closed,
    ConsistencyMetric,
    Diagnostic,
    Metric,
    Reduction,
    Strategy,
)
from polars_calib._engines import Engine

METRICS: tuple[Metric, ...] = get_args(Metric)


CONSISTENCY_METRICS: tuple[ConsistencyMetric, ...] = get_args(ConsistencyMetric)


DIAGNOSTICS: tuple[Diagnostic, ...] = tuple(
    name for name in get_args(Diagnostic) if name != "brier_decomposition"
)
"""The tests and decompositions ``--metrics`` takes: one number each (a CSV column)."""


STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)


CLOSED: tuple[Closed, ...] = get_args(Closed)


REDUCTIONS: tuple[Reduction, ...] = get_args(Reduction)


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
    "drift",
    "drift_threshold",
)
"""``report``'s options of the classification form (argparse's names), refused with the
regression form's columns."""


REGRESSION_ONLY = ("n_levels", "curve")
"""``report``'s options of the regression form, refused with the classification form's."""


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
    drift: bool = False
    """``--drift``: the page's Drift section (the CUSUM charts of each group)."""
    drift_threshold: float | None = None
    """``--drift-threshold``: the charts' threshold; none: simulated for an ARL0 of 10,000."""

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
        return [name for name in self.metrics if is_metric(name)]


def is_metric(name: str) -> TypeGuard[Metric]:
    """Whether `name` is a metric (not a consistency p-value)."""
    return name in METRICS


def report_options(args: argparse.Namespace) -> ReportOptions | RegressionOptions:
    """Check a parsed ``report`` command line; raise :class:`UsageError` when it is wrong.

    The log's prediction form decides the options: ``--prob`` and ``--label``
    (classification, :class:`ReportOptions`) or ``--target``, ``--mean`` and ``--std``
    (regression, :class:`RegressionOptions`); one form, whole, and only its options.
    """
    if (args.time is None) != (args.every is None):
        msg = "--time and --every go together: give both or neither"
        raise UsageError(msg)
    if form_of(args) == "regression":
        return regression_options(args)
    return classification_options(args)


def form_of(args: argparse.Namespace) -> Literal["classification", "regression"]:
    """The prediction form of a ``report`` command line: one, whole, and only its options."""
    classification = given_flags(args, ("prob", "label"))
    regression = given_flags(
        args, ("target", *(name for form in PREDICTIONS.values() for name in form))
    )
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
    name = prediction_form(args)
    form, columns, others = (
        ("regression", as_flags(("target", *PREDICTIONS[name])), CLASSIFICATION_ONLY)
        if regression
        else ("classification", ("--prob", "--label"), REGRESSION_ONLY)
    )
    given = regression or classification
    missing = [flag for flag in columns if flag not in given]
    if missing:
        msg = f"the {form} form needs {' and '.join(missing)} with {' and '.join(given)}"
        raise UsageError(msg)
    # A regression form's own options (--seed, --id of ensembles): check_form_options.
    own = {option for options in FORM_OPTIONS.values() for option in options} if regression else ()
    wrong = given_flags(args, [option for option in others if option not in own])
    if wrong:
        other = "classification" if form == "regression" else "regression"
        msg = (
            f"{wrong[0]} is an option of the {other} form: the {form} form "
            f"({', '.join(columns)}) does not take it"
        )
        raise UsageError(msg)
    if regression:
        check_form_options(args, name, columns)
    return "regression" if regression else "classification"


def classification_options(args: argparse.Namespace) -> ReportOptions:
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
    check_metrics(args.metrics, (*METRICS, *CONSISTENCY_METRICS, *DIAGNOSTICS))
    _check_sections(args)
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
        drift=bool(args.drift),
        drift_threshold=args.drift_threshold,
    )


def _check_sections(args: argparse.Namespace) -> None:
    """Refuse (a usage error) the HTML page's sections (``--audit``, ``--drift``) without
    the page, without what they need, or with an engine (they read the log with Polars)."""
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
    if args.drift and args.time is None:
        msg = (
            "--drift needs --time COL (with --every): the Date or Datetime column ordering "
            "the rows of the CUSUM charts"
        )
        raise UsageError(msg)
    if args.drift and args.html is None:
        msg = "--drift is a section of the HTML report: give --html FILE (or run `monitor`)"
        raise UsageError(msg)
    if args.drift and args.engine is not None:
        msg = f"--drift reads the log with Polars: drop --engine {args.engine}"
        raise UsageError(msg)
    if args.drift_threshold is not None and not args.drift:
        msg = "--drift-threshold goes with --drift"
        raise UsageError(msg)


@dataclass(frozen=True)
class Log:
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
