"""One Newton pass's per-row terms, their sums per group, and the derivatives from them.

A pass is one aggregation: the rows' terms at each row's group's parameters (the
log-likelihood, its gradient and Hessian, and while a group may be far from the
maximum the third derivatives), summed per group; numpy turns the sums into each
group's loss, gradient and Hessian (:data:`polars_calib._recalibration.solve.Terms`).
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
from numpy.typing import NDArray

from polars_calib._recalibration.maps import linear
from polars_calib._recalibration.rows import INDEX, WEIGHT
from polars_calib._recalibration.solve import Terms

__all__ = ["logistic_step", "pass_sums", "temperature_step"]


def pass_sums(
    rows: pl.LazyFrame, method: str, thetas: list[pl.Expr], weighted: bool, third: bool
) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """Return the rows with one Newton step's per-row terms at `thetas`, and their sums.

    With `third`, a logistic step sums the third derivatives too (Chebyshev's
    correction).
    """
    if method == "temperature":
        return _temperature_sums(rows, thetas[0], weighted)
    return _logistic_sums(rows, thetas, weighted, third)


def _logistic_sums(
    rows: pl.LazyFrame, thetas: list[pl.Expr], weighted: bool, third: bool
) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """Return the per-row terms of one logistic step, and their sums.

    The terms are softplus, μF, μ(1-μ)FF and μ(1-μ)(1-2μ)FFF (weighted; the third
    derivatives with `third`). ``η = Σ θ_i f_i + θ_k``, clipped below at -700
    (``exp(-η)`` overflows below -709; there ``μ`` is about 1e-304 and
    ``softplus(η)`` 0, either way); ``d = 1 + exp(-η)`` gives ``μ = 1 / d`` and
    ``softplus(η) = η + ln d`` (one exponential and one logarithm per row). The sums
    of ``w F`` and ``w y F`` do not change between steps (the first pass's).
    """
    k = len(thetas)
    regressors = [pl.col(f"__f{i}") for i in range(k - 1)]
    eta = linear(thetas, regressors)
    w = pl.col(WEIGHT)

    def weighted_by(value: pl.Expr) -> pl.Expr:
        return w * value if weighted else value

    mu = pl.col("__mu")
    terms = (
        rows.with_columns(eta.clip(lower_bound=-700.0).alias("__eta"))
        .with_columns((1.0 + (-pl.col("__eta")).exp()).alias("__d"))
        .with_columns((1.0 / pl.col("__d")).alias("__mu"))
        .with_columns(
            weighted_by(pl.col("__eta") + pl.col("__d").log()).alias("__softplus"),
            weighted_by(mu).alias("__wmu"),
            weighted_by(mu * (1.0 - mu)).alias("__wvar"),
        )
    )
    if third:
        terms = terms.with_columns((pl.col("__wvar") * (1.0 - 2.0 * mu)).alias("__wthird"))
    wmu, wvar, wthird = pl.col("__wmu"), pl.col("__wvar"), pl.col("__wthird")

    def times(term: pl.Expr, *indices: int) -> pl.Expr:
        for i in indices:
            term = term if i == k - 1 else term * regressors[i]  # the intercept's F is 1
        return term

    sums = [pl.col("__softplus").sum().alias("softplus")]
    for i in range(k):
        sums.append(times(wmu, i).sum().alias(f"mu{i}"))
        for j in range(i, k):
            sums.append(times(wvar, i, j).sum().alias(f"h{i}{j}"))
            for m in range(j, k) if third else ():
                sums.append(times(wthird, i, j, m).sum().alias(f"t{i}{j}{m}"))
    return terms, sums


def logistic_step(
    sums: pl.DataFrame,
    fixed: dict[str, NDArray[np.float64]],
    theta: NDArray[np.float64],
    targets: NDArray[np.float64],
) -> Terms:
    """Return the loss, gradient and Hessian per group from one step's sums.

    `fixed` holds the sums that do not change between steps (``f{i}``: ``sum w F_i``,
    ``y{i}``: ``sum w y F_i``), `sums` one step's (``softplus``, ``mu{i}``, ``h{ij}``,
    and ``t{ijm}`` when summed); `targets` the target of a positive and of a
    negative per group (the loss is linear in them).
    """
    k = theta.shape[1]
    col = {name: sums[name].to_numpy() for name in sums.columns if name != INDEX}
    positive, negative = targets[:, :1], targets[:, 1:]
    # sum w t F with t = T+ y + T- (1 - y)
    target_f = np.column_stack(
        [
            positive[:, 0] * fixed[f"y{i}"] + negative[:, 0] * (fixed[f"f{i}"] - fixed[f"y{i}"])
            for i in range(k)
        ]
    )
    loss = col["softplus"] - np.sum(theta * target_f, axis=1)
    grad = np.column_stack([col[f"mu{i}"] for i in range(k)]) - target_f
    hess = np.empty((len(theta), k, k))
    third = np.empty((len(theta), k, k, k))
    for i in range(k):
        for j in range(i, k):
            hess[:, i, j] = hess[:, j, i] = col[f"h{i}{j}"]
            for m in range(j, k) if "t000" in col else ():
                for a, b, c in itertools.permutations((i, j, m)):
                    third[:, a, b, c] = col[f"t{i}{j}{m}"]
    return loss, grad, hess, third if "t000" in col else None


def _temperature_sums(
    rows: pl.LazyFrame, inverse: pl.Expr, weighted: bool
) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """Return the per-row terms of a Newton step in ``β = 1 / T``, and their sums.

    The sums are the loss, its gradient and its Hessian.
    """
    logs = pl.col("__logs")
    scaled = logs * inverse
    top = scaled.list.max()
    exps = (scaled - top).list.eval(pl.element().exp())
    w = pl.col(WEIGHT) if weighted else pl.lit(1.0)
    terms = (
        rows.with_columns(inverse.alias("__beta"), top.alias("__top"), exps.alias("__exps"))
        .with_columns(
            pl.col("__exps").list.sum().alias("__total"),
            (pl.col("__exps") * logs).list.sum().alias("__first"),
            (pl.col("__exps") * logs * logs).list.sum().alias("__second"),
        )
        .with_columns(
            (pl.col("__first") / pl.col("__total")).alias("__mean"),
        )
    )
    mean, true_log = pl.col("__mean"), pl.col("__true")
    return terms, [
        (w * (pl.col("__top") + pl.col("__total").log() - pl.col("__beta") * true_log))
        .sum()
        .alias("loss"),
        (w * (mean - true_log)).sum().alias("grad"),
        (w * (pl.col("__second") / pl.col("__total") - mean * mean)).sum().alias("hess"),
    ]


def temperature_step(sums: pl.DataFrame) -> Terms:
    """Return the loss, gradient and Hessian per group from one temperature step's sums."""
    loss = sums["loss"].to_numpy()
    grad = sums["grad"].to_numpy()[:, None]
    hess = sums["hess"].to_numpy()[:, None, None]
    return loss, grad, hess, None
