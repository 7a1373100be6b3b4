"""Isotonic recalibration of the PIT of Gaussian predictions, per group (Kuleshov et al. 2018).

A Gaussian prediction's CDF ``F`` is recalibrated as ``R ∘ F``, with ``R`` the
isotonic map from the PIT ``u = F(y)`` to its empirical CDF ``P̂(u)``, the share of
the group's training PITs at or below ``u``. The fit:

1. one aggregation per (group, distinct PIT): the weight of each distinct ``u``;
2. per group, in numpy (a table no larger than the distinct PITs, outside the row
   path): ``P̂`` at each distinct ``u`` is the cumulative weight over the total, and
   the package's isotonic fit (:func:`~polars_calib._recalibration.isotonic._isotonic_points`,
   weighted pool-adjacent-violators) of ``P̂`` on ``u`` gives the points of ``R``.
   ``P̂`` is already non-decreasing, so the pooling only merges PITs closer than
   1e-15; it is the same fit as Kuleshov's ``IsotonicRegression`` on the pairs
   ``(u_t, P̂(u_t))``;
3. the anchors ``(0, 0)`` and ``(1, 1)`` are added (unless a PIT is exactly 0 or 1),
   so that ``R`` maps [0, 1] onto [0, 1]: a CDF. Kuleshov's ``out_of_bounds="clip"``
   instead holds ``R = 1/T`` below the smallest training PIT, so that ``R⁻¹(τ)`` is
   undefined for ``τ < 1/T``.

``R`` is piecewise linear between its points (``np.interp``), applied to new rows by
the calibrator's isotonic lookup (:func:`~polars_calib._recalibration.apply._interpolate`).
Its inverse at a level ``τ`` is one number per group, computed here in Python: the
smallest ``u`` with ``R(u) = τ`` on the piecewise-linear map, then the recalibrated
quantile is ``μ + σ Φ⁻¹(R⁻¹(τ))`` with ``Φ⁻¹`` from :class:`statistics.NormalDist`
(a per-group scalar, not a row computation; ``±inf`` at ``R⁻¹(τ) = 0`` or 1).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import polars as pl

from polars_calib._recalibration.isotonic import _isotonic_points
from polars_calib._recalibration.rows import (
    GROUP,
    REFUSED,
    USED,
    WEIGHT,
    group_columns,
    grouped,
)

__all__ = ["IDENTITY", "fit_pit_isotonic", "inverse", "normal_quantile"]

IDENTITY = ([0.0, 1.0], [0.0, 1.0])
"""The points of the identity map: a group without used weight keeps its predictions."""


def _points(u: np.ndarray, weight: np.ndarray) -> tuple[list[float], list[float]]:
    """The points (x, y) of ``R`` for a group's sorted distinct PITs and their weights."""
    cumulative = np.cumsum(weight)
    ecdf = cumulative / cumulative[-1]
    x, y = _isotonic_points(u, ecdf, weight)
    x_list, y_list = x.tolist(), y.tolist()
    if x_list[0] > 0.0:
        x_list, y_list = [0.0, *x_list], [0.0, *y_list]
    if x_list[-1] < 1.0:
        x_list, y_list = [*x_list, 1.0], [*y_list, 1.0]
    return x_list, y_list


def fit_pit_isotonic(rows: pl.LazyFrame, keys: list[str], pit: str) -> pl.DataFrame:
    """Fit ``R`` per group from the rows (keys, the PIT column `pit`, weight, used, refused).

    Returns
    -------
    DataFrame
        keys, ``count`` (Int64 rows used), ``refused`` (Int64), ``fallback`` (no used
        weight: the identity map) and the points ``x`` and ``y`` (List(Float64)).
    """
    group = group_columns(keys)
    kept = pl.col(USED) & (pl.col(WEIGHT) > 0.0)
    # One row per (group, distinct PIT): the table is no larger than the distinct PITs.
    points = (
        grouped(rows, keys)
        .group_by(*group, pl.when(kept).then(pl.col(pit)).alias("u"))
        .agg(
            pl.col(USED).sum().cast(pl.Int64).alias("count"),
            pl.col(REFUSED).sum().cast(pl.Int64).alias("refused"),
            pl.when(kept).then(pl.col(WEIGHT)).sum().alias("w"),
        )
    )
    distinct = pl.col("u").filter(pl.col("u").is_not_null())
    per_group = (
        points.group_by(group)
        .agg(
            pl.col("count").sum(),
            pl.col("refused").sum(),
            distinct.sort(),
            pl.col("w").filter(pl.col("u").is_not_null()).sort_by(distinct),
        )
        .sort(group, nulls_last=True)
        .collect()
    )
    if not keys and not per_group.height:
        per_group = pl.DataFrame(
            {GROUP: [0], "count": [0], "refused": [0], "u": [[]], "w": [[]]},
            schema={
                GROUP: pl.Int64,
                "count": pl.Int64,
                "refused": pl.Int64,
                "u": pl.List(pl.Float64),
                "w": pl.List(pl.Float64),
            },
        )
    xs, ys, fallbacks = [], [], []
    for u_list, w_list in zip(per_group["u"].to_list(), per_group["w"].to_list()):
        u, w = np.asarray(u_list, np.float64), np.asarray(w_list, np.float64)
        x, y = _points(u, w) if u.size else IDENTITY
        xs.append(x)
        ys.append(y)
        fallbacks.append(not u.size)
    return per_group.select(*keys, "count", "refused").with_columns(
        pl.Series("fallback", fallbacks, dtype=pl.Boolean),
        pl.Series("x", xs, dtype=pl.List(pl.Float64)),
        pl.Series("y", ys, dtype=pl.List(pl.Float64)),
    )


def inverse(x: list[float], y: list[float], level: float) -> float:
    """``R⁻¹(level)``: the smallest ``u`` where the piecewise-linear ``R`` reaches `level`."""
    k = int(np.searchsorted(np.asarray(y), level, side="left"))
    if k == 0:
        return x[0]
    if k == len(y):
        return x[-1]
    share = (level - y[k - 1]) / (y[k] - y[k - 1])
    return x[k - 1] + share * (x[k] - x[k - 1])


def normal_quantile(u: float) -> float:
    """``Φ⁻¹(u)`` (:class:`statistics.NormalDist`), ``-inf`` at 0 and ``inf`` at 1."""
    if u <= 0.0:
        return -math.inf
    if u >= 1.0:
        return math.inf
    return NormalDist().inv_cdf(u)
