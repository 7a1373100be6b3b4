"""Regression problems: a Gaussian prediction (mean, standard deviation) and its refused rule.

A Gaussian prediction N(μ, σ²) of a target y is a :class:`~polars_calib._core.problem.Problem`
like a binary one, so that the statistics table, its merging, the refused counts and the
error messages work unchanged:

* ``prob`` is the probability integral transform (PIT) ``u = Φ(z) = erfc(-z/√2) / 2``
  with ``z = (y - μ) / σ``: binned by the one bin rule, it gives the calibration curves;
  ``erfc`` keeps Φ's relative accuracy in the lower tail, where ``(1 + erf(z/√2)) / 2``
  loses it (see ``docs/regression.md``, "Accuracy");
* ``label`` is the target (the table's ``sum_y`` is the weighted sum of targets);
* ``terms`` are the per-row score terms: ``crps`` (the closed form
  ``σ [z (2Φ(z) - 1) + 2φ(z) - 1/√π]``), ``nll`` (``log(2π)/2 + log σ + z²/2``, finite for
  every finite z), ``squared_error`` (``(y - μ)²``), ``variance`` (``σ²``) and ``center``
  (1 where ``y == μ``: the PIT's point 1/2, the central interval of level 0).

A row is **present** when its target, mean, standard deviation and weight are non-null;
it is **refused** when a non-null value breaks a check: a NaN or infinite target or
mean, a standard deviation that is not a positive finite number, or a weight the
classification problems refuse. Rows that are not present are ignored. Non-numeric
columns are refused when the query is planned.
"""

from __future__ import annotations

import math

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.problem import (
    Check,
    Problem,
    _name,
    _numbers_only,
    _present,
    _weight_checks,
    _weight_total_check,
    weight_ok,
)
from polars_calib._core.special import normal_cdf

__all__ = [
    "PIT_COLUMN",
    "REGRESSION_TERMS",
    "Z_COLUMN",
    "gaussian_columns",
    "gaussian_problem",
    "unchecked_pit",
]

REGRESSION_TERMS = ("crps", "nll", "squared_error", "variance", "center")
"""The row terms of a Gaussian problem, summed by its statistics table."""

Z_COLUMN, PIT_COLUMN = "__polars_calib_z__", "__polars_calib_pit__"
"""The columns of :func:`gaussian_columns` (internal: never in a result)."""

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


def _numeric(value: IntoExpr, role: str) -> pl.Expr:
    name = _name(value, role)
    return _numbers_only(value, role, f"column {name!r} must hold numbers (the {role})").cast(
        pl.Float64
    )


def _inputs(target: IntoExpr, mean: IntoExpr, std: IntoExpr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    return _numeric(target, "target"), _numeric(mean, "mean"), _numeric(std, "std")


def gaussian_columns(target: IntoExpr, mean: IntoExpr, std: IntoExpr) -> list[pl.Expr]:
    """``z`` and the PIT as the columns :data:`Z_COLUMN` and :data:`PIT_COLUMN`, for
    ``with_columns`` before a frame's aggregation (see :func:`gaussian_problem`)."""
    y, mu, sigma = _inputs(target, mean, std)
    z = (y - mu) / sigma  # computed once: `with_columns` shares common subexpressions
    return [z.alias(Z_COLUMN), normal_cdf(z).alias(PIT_COLUMN)]


def unchecked_pit(target: IntoExpr, mean: IntoExpr, std: IntoExpr) -> pl.Expr:
    """The PIT of :func:`gaussian_problem`, from the inputs without their type checks.

    For an aggregation that references the PIT many times (a curve expression: once per
    level) beside its problem's own aggregates, which plan the checks once: each check
    is a struct and a selector that Polars plans again at every reference (a 100-level
    curve took a second to plan on 4 rows).
    """
    y = to_expr(target, "target").cast(pl.Float64)
    mu = to_expr(mean, "mean").cast(pl.Float64)
    sigma = to_expr(std, "std").cast(pl.Float64)
    return normal_cdf((y - mu) / sigma)


def gaussian_problem(
    target: IntoExpr,
    mean: IntoExpr,
    std: IntoExpr,
    weight: IntoExpr | None = None,
    *,
    columns: bool = False,
) -> Problem:
    """The problem of Gaussian predictions N(`mean`, `std`²) of `target` (see the module).

    With `columns`, ``z`` and the PIT are read from the columns of
    :func:`gaussian_columns`, which the frame must hold: an aggregation evaluates each
    reference to an expression again (no common-subexpression elimination there), and
    the PIT (an ``erfc``) and ``z`` are referenced by the bin, ``sum_p`` and the terms.
    """
    y, mu, sigma = _inputs(target, mean, std)
    w, weight_checks = _weight_checks(weight)
    y_ok, mu_ok = y.is_finite(), mu.is_finite()
    # NaN compares above every number in Polars: `sigma > 0` alone would take it.
    sigma_ok = (sigma > 0.0) & sigma.is_finite()
    checks = [
        Check(_name(target, "target"), "target NaN or infinite", ~y_ok, y),
        Check(_name(mean, "mean"), "mean NaN or infinite", ~mu_ok, mu),
        Check(
            _name(std, "std"),
            "standard deviation not a positive finite number",
            ~sigma_ok,
            sigma,
        ),
        *weight_checks,
    ]
    # Null where an input is null and nothing is refused, false on a refused row.
    ok = y_ok & mu_ok & sigma_ok
    if w is not None:
        ok = ok & weight_ok(w)
    present = _present(y, mu, sigma, w)
    if columns:
        z, pit = pl.col(Z_COLUMN), pl.col(PIT_COLUMN)
    else:
        z = (y - mu) / sigma
        pit = normal_cdf(z)
    return Problem(
        pit,
        y,
        w,
        present,
        ~ok,
        (*checks, *_weight_total_check(weight, w, present)),
        gaussian_terms(y, mu, sigma, z, pit),
        ok=ok,
    )


def gaussian_terms(
    y: pl.Expr, mu: pl.Expr, sigma: pl.Expr, z: pl.Expr, pit: pl.Expr
) -> dict[str, pl.Expr]:
    """The per-row score terms of a Gaussian prediction (see the module)."""
    density = (z * z * -0.5).exp() * _INV_SQRT_2PI
    return {
        "crps": sigma * (z * (2.0 * pit - 1.0) + 2.0 * density - _INV_SQRT_PI),
        "nll": _LOG_SQRT_2PI + sigma.log() + 0.5 * z * z,
        "squared_error": (y - mu) * (y - mu),
        "variance": sigma * sigma,
        "center": (y == mu).cast(pl.Float64),
    }
