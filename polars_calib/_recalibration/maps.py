"""The forms of the recalibration maps: their parameters, regressors and identity.

Shared by the fits (the regressors of a logistic fit) and by applying a calibrator
(the same regressors, the fitted parameters gathered per row).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.problem import EPS

__all__ = ["PARAMETERS", "features", "identity_params", "linear", "sigmoid"]

PARAMETERS: dict[str, tuple[str, ...]] = {
    "platt": ("a", "b"),
    "beta": ("a", "b", "c"),
    "temperature": ("temperature",),
    "isotonic": ("x", "y"),
    "histogram": ("edges", "values"),
}
"""The parameter columns of each method, in ``params``."""


def features(method: str, p: pl.Expr) -> list[pl.Expr]:
    """Return the regressors of a logistic method, of ``p`` clipped to ``[EPS, 1 - EPS]``.

    The last is the intercept's (the literal 1).
    """
    clipped = p.clip(EPS, 1.0 - EPS)
    if method == "platt":
        # One logarithm, not two: ln(p / (1 - p)) is within an ulp or two of
        # ln p - ln(1 - p) (1 - p and the quotient are each rounded once).
        return [(clipped / (1.0 - clipped)).log(), pl.lit(1.0)]
    return [clipped.log(), -((1.0 - clipped).log()), pl.lit(1.0)]


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
    """Return the parameters of the map ``q = p`` (histogram: empty bins of `binning`)."""
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
