"""The forms of the recalibration maps: their parameters, regressors and identity.

Shared by the fits (the regressors of a logistic fit) and by applying a calibrator
(the same regressors, the fitted parameters gathered per row).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.problem import EPS

__all__ = [
    "CLIPPED_SHARE",
    "PARAMETERS",
    "ClippedScoresWarning",
    "clipped",
    "features",
    "identity_params",
    "linear",
    "sigmoid",
]

CLIPPED_SHARE = 0.05
"""The share of a group's rows with a clipped score above which a fit warns.

Why 5%: a score of exactly 0 or 1 becomes ``logit = ±36.04``, seven times the
logit of 0.01; when some of those rows contradict their score, their loss, about
36 times the slope each, flattens the fit. In a simulation (scores 0 or 1 on a
share of the rows, 5% of them contradicted) Platt's slope was 0.97 at 1%, 0.93 at
2% and 0.53 at 5%; a random forest's 5.7% gave a slope of 0.097 (issue 23).
Scores rounded to two decimals (1% of uniform scores at 0.00 or 1.00) stay
below it.
"""


class ClippedScoresWarning(UserWarning):
    """Many scores of a group are exactly 0 or 1 (clipped) in a logit-based fit.

    Platt and beta calibration read ``logit(p)`` or ``ln p``, ``ln(1 - p)`` of ``p``
    clipped to ``[eps, 1 - eps]``; when more than :data:`CLIPPED_SHARE` of a
    group's rows are clipped, those rows can dominate the fit.
    ``method="sigmoid"`` fits on the score itself, as scikit-learn's sigmoid
    method does.
    """


PARAMETERS: dict[str, tuple[str, ...]] = {
    "platt": ("a", "b"),
    "sigmoid": ("a", "b"),
    "beta": ("a", "b", "c"),
    "temperature": ("temperature",),
    "isotonic": ("x", "y"),
    "histogram": ("edges", "values"),
}
"""The parameter columns of each method, in ``params``."""


def features(method: str, p: pl.Expr) -> list[pl.Expr]:
    """Return the regressors of a logistic method: ``p`` itself, or of ``p`` clipped.

    ``"sigmoid"`` reads the score ``p`` as it is; ``"platt"`` and ``"beta"`` read
    ``p`` clipped to ``[EPS, 1 - EPS]`` (:func:`clipped`). The last is the
    intercept's (the literal 1).
    """
    if method == "sigmoid":
        return [p, pl.lit(1.0)]
    clipped = p.clip(EPS, 1.0 - EPS)
    if method == "platt":
        # One logarithm, not two: ln(p / (1 - p)) is within an ulp or two of
        # ln p - ln(1 - p) (1 - p and the quotient are each rounded once).
        return [(clipped / (1.0 - clipped)).log(), pl.lit(1.0)]
    return [clipped.log(), -((1.0 - clipped).log()), pl.lit(1.0)]


def clipped(p: pl.Expr) -> pl.Expr:
    """Return whether :func:`features` clips `p` (below ``EPS`` or above ``1 - EPS``)."""
    return (p < EPS) | (p > 1.0 - EPS)


def linear(coefficients: list[pl.Expr], regressors: list[pl.Expr]) -> pl.Expr:
    """Return ``Σ c_i f_i + c_k``: `regressors` without the intercept's (1, not multiplied).

    The fit's ``η`` and the applied map's ``-η`` (negated coefficients) alike.
    """
    total = coefficients[-1]
    for c, f in zip(coefficients, regressors):
        total = c * f + total
    return total


def sigmoid(eta: pl.Expr) -> pl.Expr:
    """Return the logistic function of `eta`."""
    return 1.0 / (1.0 + (-eta).exp())


def identity_params(method: str, binning: Binning) -> dict[str, Any]:
    """Return the parameters of the map ``q = p`` (histogram: empty bins of `binning`).

    The sigmoid map of the score has no identity (``fit_calibrator`` refuses
    ``fallback="identity"`` with it).
    """
    if method == "sigmoid":
        msg = "the sigmoid map of the score has no identity: use fallback='global'"
        raise ValueError(msg)
    if method == "platt":
        return {"a": 1.0, "b": 0.0}
    if method == "beta":
        return {"a": 1.0, "b": 1.0, "c": 0.0}
    if method == "temperature":
        return {"temperature": 1.0}
    if method == "isotonic":
        return {"x": [0.0, 1.0], "y": [0.0, 1.0]}
    edges = [k / binning.n_bins for k in range(binning.n_bins + 1)]
    return {"edges": edges, "values": [None] * binning.n_bins}
