"""The option types of the public API and their checks, run when an expression is built.

One rule for errors: an argument of the wrong type raises ``TypeError``, a value out
of range ``ValueError`` (both naming the argument); bad *data* raise
:class:`~polars_calib.CalibrationDataError` or give a documented null.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from statistics import NormalDist
from typing import Literal, TypeVar, get_args

from polars_calib._core.deprecation import warn_renamed

__all__ = [
    "DURATION",
    "MAX_BINS",
    "MAX_EDGE_BINS",
    "RENAMED_METRICS",
    "Alternative",
    "AuditTest",
    "BinAverage",
    "CalibrationMethod",
    "Closed",
    "Compat",
    "ConsistencyMetric",
    "Correction",
    "Curve",
    "Diagnostic",
    "Distance",
    "Fallback",
    "Kernel",
    "LossStrategy",
    "Metric",
    "Norm",
    "Reduction",
    "RegressionMetric",
    "Resampling",
    "Score",
    "SkceEstimator",
    "Strategy",
    "TableReduction",
    "TopLabelAverage",
    "VarianceMetric",
    "asked_names",
    "check_choice",
    "check_confidence",
    "check_every",
    "check_hosmer_lemeshow_bins",
    "check_metrics",
    "check_min_size",
    "check_n_bins",
    "check_n_levels",
    "check_sum_tol",
]

Strategy = Literal["uniform", "quantile", "median_variance"]
"""Equal-width bins, equal-mass bins at the group's quantiles, or median-variance bins
(recursive median splits of the group's data; frame functions only, see
:mod:`polars_calib._table.median_variance`)."""

Distance = Literal["tv", "cityblock", "sqeuclidean"]
"""The distance between a bin's mean prediction and outcome vectors (``docs/ece-family.md``)."""

Kernel = Literal["exponential", "gaussian"]
"""The kernel on predictions of the squared kernel calibration error."""

SkceEstimator = Literal["unbiased", "biased", "block"]
"""The U-statistic, the V-statistic, or the mean of the U-statistics of consecutive blocks."""

BinAverage = Literal["weighted", "bins"]
"""Canonical ECE: bins weighted by their size, or the plain mean over non-empty bins."""

Closed = Literal["right", "left"]
"""Which side of each bin is closed."""

Norm = Literal["l1", "l2", "max"]
"""ECE (``l1``), RMSCE (``l2``) or MCE (``max``)."""

Reduction = Literal["confidence", "top_label", "classwise"]
"""How probability vectors become binary problems."""

TableReduction = Literal["confidence", "top_label", "classwise", "canonical"]
"""A :data:`Reduction`, or ``"canonical"``: no reduction, the statistics of each cell of
the simplex grid (``bin_statistics``, ``summary``, ``metrics_from_statistics`` only)."""

Metric = Literal["ece", "mce", "rmsce", "brier", "log_loss"]
"""A metric a summary can compute."""

ConsistencyMetric = Literal[
    "consistency_p",
    "consistency_p_mce",
    "consistency_p_rmsce",
    "consistency_p_brier",
    "consistency_p_log_loss",
]
"""The p-value of the consistency-resampling test of a metric (``consistency_p``: ECE)."""

Resampling = Literal["bootstrap", "consistency"]
"""The replicates of a statistics table: Poisson bootstrap, or labels drawn from ``p``."""

Diagnostic = Literal[
    "spiegelhalter_z",
    "spiegelhalter_p",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "debiased_ece_squared",
    "debiased_ece",
    "brier_decomposition",
    "calibration_loss",
    "refinement_loss",
    "log_loss_calibration_loss",
    "log_loss_refinement_loss",
]
"""A test statistic, p-value or decomposition a summary can finish from its sums
(binary data; see ``polars_calib._metrics.diagnostics``). Not in the default metrics.

Each is named after the function that computes it at its defaults
(``"calibration_loss"`` is ``pc.calibration_loss(p, y)``, of the Brier score); a
non-default score prefixes the name (``"log_loss_calibration_loss"`` is
``pc.calibration_loss(p, y, score="log_loss")``)."""

RENAMED_METRICS: dict[str, Diagnostic] = {
    "brier_calibration_loss": "calibration_loss",
    "brier_refinement_loss": "refinement_loss",
}
"""Metric names deprecated in 0.2 (a ``DeprecationWarning``; removed in 0.3.0), and
their new names. The result keeps the column named as asked."""

Alternative = Literal["two-sided", "greater", "less"]
"""The alternative hypothesis of a one-statistic test (``"greater"``: large values)."""

Score = Literal["brier", "log_loss"]
"""A proper scoring rule split into calibration and refinement loss."""

LossStrategy = Literal["uniform", "quantile", "unique"]
"""Bins of a calibration/refinement split: a :data:`Strategy`, or each distinct value of p."""

TopLabelAverage = Literal["macro", "weighted"]
"""Top-label ECE: unweighted mean over predicted classes, or weighted by their share."""

Correction = Literal["holm", "bh"]
"""Multiple-testing control: Holm's step-down (family-wise error) or Benjamini–Hochberg (FDR)."""

AuditTest = Literal["auto", "spiegelhalter", "consistency"]
"""The test of each slice of an audit (``"auto"``: Spiegelhalter for binary data,
the consistency-resampling test of ECE for probability vectors)."""

Compat = Literal["sklearn", "netcal", "torchmetrics", "mapie"]
"""A peer library whose bins a metric reproduces (see ``docs/conventions.md``)."""

CalibrationMethod = Literal["platt", "sigmoid", "beta", "isotonic", "histogram", "temperature"]
"""A recalibration map (see :func:`polars_calib.fit_calibrator`): ``"platt"`` is logistic
in ``logit(p)``, ``"sigmoid"`` in the score ``p`` itself (scikit-learn's sigmoid method)."""

Curve = Literal["interval", "quantile"]
"""The calibration curve of a regression metric: the share of targets inside each central
interval (uncertainty-toolbox's default) or at or below each quantile (Kuleshov et al. 2018)."""

RegressionMetric = Literal[
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
    "quantile_calibration_score",
    "crps",
    "nll",
    "sharpness",
    "pinball_loss",
    # The ensemble and interval forms' (polars_calib._frames.regression_forms).
    "crps_fair",
    "interval_coverage",
    "interval_width",
    "interval_score",
    "coverage_gap",
]
"""A metric of :func:`polars_calib.regression_summary` (each the name of its expression;
``crps_fair`` is ``crps_ensemble(estimator="fair")``, ``coverage_gap`` the signed
``coverage - level`` of one group). Each prediction form has its own: Gaussian predictions
the first seven, quantile predictions the first four and ``"pinball_loss"``, ensembles the
first four, ``"crps"`` and ``"crps_fair"``, intervals the last four."""

GAUSSIAN_METRICS: tuple[RegressionMetric, ...] = (
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
    "quantile_calibration_score",
    "crps",
    "nll",
    "sharpness",
)
"""The metrics of Gaussian predictions, in their default order."""

VarianceMetric = Literal["ence", "uce", "qce"]
"""A metric of :func:`polars_calib.variance_summary` (each the name of its expression)."""

Fallback = Literal["identity", "global"]
"""What a group that cannot be fitted (or was not seen) gets instead of an error or null."""

STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
CLOSED: tuple[Closed, ...] = get_args(Closed)
NORMS: tuple[Norm, ...] = get_args(Norm)
REDUCTIONS: tuple[Reduction, ...] = get_args(Reduction)
TABLE_REDUCTIONS: tuple[TableReduction, ...] = get_args(TableReduction)
METRICS: tuple[Metric, ...] = get_args(Metric)
CONSISTENCY_METRICS: tuple[ConsistencyMetric, ...] = get_args(ConsistencyMetric)
RESAMPLINGS: tuple[Resampling, ...] = get_args(Resampling)
DIAGNOSTICS: tuple[Diagnostic, ...] = get_args(Diagnostic)
ALTERNATIVES: tuple[Alternative, ...] = get_args(Alternative)
SCORES: tuple[Score, ...] = get_args(Score)
LOSS_STRATEGIES: tuple[LossStrategy, ...] = get_args(LossStrategy)
TOP_LABEL_AVERAGES: tuple[TopLabelAverage, ...] = get_args(TopLabelAverage)
CORRECTIONS: tuple[Correction, ...] = get_args(Correction)
AUDIT_TESTS: tuple[AuditTest, ...] = get_args(AuditTest)
PEERS: tuple[Compat, ...] = get_args(Compat)
DISTANCES: tuple[Distance, ...] = get_args(Distance)
KERNELS: tuple[Kernel, ...] = get_args(Kernel)
SKCE_ESTIMATORS: tuple[SkceEstimator, ...] = get_args(SkceEstimator)
BIN_AVERAGES: tuple[BinAverage, ...] = get_args(BinAverage)
CALIBRATION_METHODS: tuple[CalibrationMethod, ...] = get_args(CalibrationMethod)
FALLBACKS: tuple[Fallback, ...] = get_args(Fallback)
CURVES: tuple[Curve, ...] = get_args(Curve)

MAX_LEVELS = 5_001
"""The most levels of a regression calibration curve: its PIT is binned on
``2 (n_levels - 1)`` bins, within :data:`MAX_BINS`."""

SUM_TOLERANCE = 1e-6
"""Default largest ``|sum(p) - 1|`` accepted for a probability vector.

A float64 softmax is off by about ``K * 1e-16`` and a float32 one, cast to float64,
by about ``1e-7`` (each entry rounds with relative error ``2**-24``, and the entries
sum to 1); 1e-6 accepts both with margin while rejecting vectors that are not
normalised (``1e-3`` off and more) or rows that lost a class. Probabilities
rounded to ``d`` decimals can be off by up to ``K * 0.5 * 10**-d``: pass that as
``sum_tol``.
"""

MAX_BINS = 10_000
"""The most bins of any binning (``docs/binning.md``, "How many bins").

Far above what a binned estimate can use: the common ``sqrt(n)`` rule reaches
10,000 bins at 10**8 rows, and a reliability table lists every bin of every group.
Without a bound, a typo (``n_bins=10**6``) builds a plan the size of the bins and
can exhaust memory before reading a row."""

MAX_EDGE_BINS = 1_000
"""The most bins whose edges are expressions of their own: equal-mass bins (an edge
per quantile) and a peer's edges (``compat=``). Such a plan, and the time to run it
even on 4 rows, grows with the square of the bins: about 20 s at 1,000 bins
(``docs/binning.md``)."""

DURATION = re.compile(r"^(\d+(ns|us|ms|s|m|h|d|w|mo|q|y))+$")
"""A window length `every` takes: one or more ``<integer><unit>`` terms, in the units of
Polars' ``dt.truncate`` (``1h30m``, ``1d``, ``2w``, ``1mo``, ``1q``, ``1y``)."""

T = TypeVar("T", bound=str)


def check_n_bins(n_bins: object, largest: int = MAX_BINS) -> int:
    """Return `n_bins` if it is an int in ``1 .. largest``; ``TypeError`` or ``ValueError``."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, int):
        msg = f"`n_bins` must be a positive int, got {type(n_bins).__name__} {n_bins!r}"
        raise TypeError(msg)
    if n_bins < 1:
        msg = f"`n_bins` must be a positive int, got {n_bins!r}"
        raise ValueError(msg)
    if n_bins > largest:
        msg = f"`n_bins` must be at most {largest:_} (see docs/binning.md), got {n_bins:_}"
        raise ValueError(msg)
    return n_bins


def check_n_levels(n_levels: object) -> int:
    """Return `n_levels` if it is an int in ``2 .. MAX_LEVELS``; ``TypeError`` or ``ValueError``."""
    if isinstance(n_levels, bool) or not isinstance(n_levels, int):
        msg = f"`n_levels` must be an int, got {type(n_levels).__name__}"
        raise TypeError(msg)
    if not 2 <= n_levels <= MAX_LEVELS:
        msg = f"`n_levels` must be between 2 and {MAX_LEVELS}, got {n_levels}"
        raise ValueError(msg)
    return n_levels


def check_choice(argument: str, value: object, choices: Collection[str]) -> str:
    """Return `value` if it is one of `choices`; ``TypeError`` or ``ValueError`` otherwise."""
    options = ", ".join(repr(c) for c in choices)
    if not isinstance(value, str):
        msg = f"`{argument}` must be one of {options}, got {type(value).__name__} {value!r}"
        raise TypeError(msg)
    if value not in choices:
        msg = f"`{argument}` must be one of {options}, got {value!r}"
        raise ValueError(msg)
    return value


def check_metrics(metrics: str | Sequence[str], tests: bool = False) -> list[str]:
    """`metrics` as a list, each one of :data:`METRICS` or :data:`DIAGNOSTICS` (or, with
    `tests`, a consistency p-value of :data:`CONSISTENCY_METRICS`), repeats dropped
    (the first kept, in order: a table has one column per name)."""
    if isinstance(metrics, str):
        metrics = [metrics]
    allowed = (*METRICS, *DIAGNOSTICS, *(CONSISTENCY_METRICS if tests else ()))
    old = [m for m in metrics if isinstance(m, str) and m in RENAMED_METRICS]
    if old:
        new = [RENAMED_METRICS[m] for m in old]
        warn_renamed(f"metrics={old!r}", f"metrics={new!r}", stacklevel=4)
    names = [check_choice("metrics", RENAMED_METRICS.get(m, m), allowed) for m in metrics]
    return list(dict.fromkeys(names))


def asked_names(metrics: str | Sequence[str], columns: Sequence[str]) -> dict[str, str]:
    """The renames giving the `columns` of metrics asked for by an old name that name.

    A metric asked for as ``"brier_calibration_loss"`` is computed as
    ``"calibration_loss"``; its column (and its interval's) keep the asked name.
    """
    asked = [metrics] if isinstance(metrics, str) else metrics
    renames = {}
    for old in asked:
        if not isinstance(old, str) or old not in RENAMED_METRICS:
            continue
        new = RENAMED_METRICS[old]
        for suffix in ("", "_lower", "_upper"):
            if new + suffix in columns:
                renames[new + suffix] = old + suffix
    return renames


def check_hosmer_lemeshow_bins(n_bins: int) -> int:
    """Hosmer-Lemeshow needs at least 3 groups (``df = groups - 2``): ``ValueError`` below."""
    check_n_bins(n_bins)
    if n_bins < 3:
        msg = f"Hosmer-Lemeshow needs `n_bins` >= 3 (df = groups - 2), got {n_bins!r}"
        raise ValueError(msg)
    return n_bins


def check_confidence(confidence: object) -> float:
    """The normal quantile ``z`` of a two-sided interval at `confidence` in (0, 1)."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        msg = f"`confidence` must be a float in (0, 1), got {confidence!r}"
        raise TypeError(msg)
    if not 0.0 < confidence < 1.0:
        msg = f"`confidence` must be in (0, 1), got {confidence!r}"
        raise ValueError(msg)
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def check_sum_tol(sum_tol: object) -> float:
    """Return `sum_tol` as a float if it is a finite number >= 0."""
    if isinstance(sum_tol, bool) or not isinstance(sum_tol, (int, float)):
        msg = f"`sum_tol` must be a finite number >= 0, got {sum_tol!r}"
        raise TypeError(msg)
    if not math.isfinite(sum_tol) or sum_tol < 0:
        msg = f"`sum_tol` must be a finite number >= 0, got {sum_tol!r}"
        raise ValueError(msg)
    return float(sum_tol)


def check_min_size(argument: str, value: object, smallest: int = 1) -> int:
    """Return `value` if it is an int >= `smallest`; ``TypeError`` or ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"`{argument}` must be an int >= {smallest}, got {type(value).__name__} {value!r}"
        raise TypeError(msg)
    if value < smallest:
        msg = f"`{argument}` must be an int >= {smallest}, got {value!r}"
        raise ValueError(msg)
    return value


def check_every(every: object) -> str:
    """Return `every` if it is a positive Polars duration; ``TypeError`` or ``ValueError``."""
    expected = "a positive Polars duration such as '1h', '1d', '1w' or '1mo'"
    if not isinstance(every, str):
        msg = f"`every` must be {expected}, got {type(every).__name__} {every!r}"
        raise TypeError(msg)
    if not DURATION.match(every) or not any(int(n) for n in re.findall(r"\d+", every)):
        msg = f"`every` must be {expected}, got {every!r}"
        raise ValueError(msg)
    return every
