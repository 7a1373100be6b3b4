"""``report``'s regression form: its prediction forms, their options and their checks."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polars_calib._cli.arguments import UsageError, as_flags, check_metrics, given_flags
from polars_calib._core.options import (
    GAUSSIAN_METRICS,
    Curve,
    RegressionMetric,
)
from polars_calib._core.prediction_intervals import check_level
from polars_calib._core.quantiles import check_levels
from polars_calib._engines import Engine
from polars_calib._report.regression import (
    Prediction,
    RegressionRequest,
)

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


def prediction_form(args: argparse.Namespace) -> str:
    """The regression prediction form given: one of :data:`PREDICTIONS` (the Gaussian
    when none is, for the message saying so)."""
    forms = [name for name, options in PREDICTIONS.items() if given_flags(args, options)]
    if len(forms) > 1:
        msg = f"{' and '.join(forms)} predictions are two prediction forms: give one"
        raise UsageError(msg)
    return forms[0] if forms else "Gaussian"


def check_form_options(args: argparse.Namespace, name: str, columns: Sequence[str]) -> None:
    """Refuse (a usage error) another regression form's options, such as ``--n-levels``
    with quantiles, and ``--engine`` with any form but the Gaussian."""
    others = {option for options in FORM_OPTIONS.values() for option in options}
    wrong = given_flags(args, sorted(others - set(FORM_OPTIONS[name])))
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


def regression_options(args: argparse.Namespace) -> RegressionOptions:
    """The checked options of a ``report`` command line of the regression form."""
    name = prediction_form(args)
    known = FORM_METRICS[name]
    metrics = None if args.metrics is None else list(args.metrics)
    check_metrics(metrics or [], known, of=f" of {name} predictions")
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
    counts = {flag: len(getattr(args, flag[2:])) for flag in as_flags(options.get(name, ()))}
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
