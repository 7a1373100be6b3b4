"""Isotonic regression per group: one aggregation, then pool-adjacent-violators in numpy.

The aggregation sums the weight and the positives per group and distinct
probability; PAV is a scan over a group's distinct values (pooling adjacent blocks),
not an aggregation Polars has, on a table no larger than the number of distinct
probabilities, so numpy, outside the row path. The fit is scikit-learn's
``IsotonicRegression(out_of_bounds="clip")``.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from polars_calib._recalibration.rows import (
    GROUP,
    LABEL,
    PROB,
    REFUSED,
    USED,
    WEIGHT,
    FitSpec,
    check_refused,
    group_columns,
    grouped,
)
from polars_calib._table.plan import Prepared, raise_for_weight_totals

__all__ = ["fit_isotonic"]


def fit_isotonic(
    rows: pl.LazyFrame, prepared: Prepared, spec: FitSpec, keys: list[str]
) -> pl.DataFrame:
    """Fit the isotonic map of each group: its points ``x`` and values ``y``.

    Returns
    -------
    DataFrame
        keys, count, x, y (lists of Float64), iterations, fallback, reason.
    """
    per_group = _points(rows, prepared, keys)
    xs: list[list[float] | None] = []
    ys: list[list[float] | None] = []
    reasons: list[str | None] = []
    # Each group's points as slices of flat arrays (no Python list of them).
    ends = np.cumsum(per_group["x"].list.len().to_numpy())
    flat = {
        name: per_group[name].explode().drop_nulls().cast(pl.Float64).to_numpy()
        for name in ("x", "weight", "positives")
    }  # (an empty list explodes to one null; the values are not null)
    for g, count in enumerate(per_group["count"].to_list()):
        reason = (
            None
            if count >= spec.min_rows
            else (f"{count} rows, fewer than min_rows={spec.min_rows}")
        )
        part = slice(0 if g == 0 else int(ends[g - 1]), int(ends[g]))
        x, weight = flat["x"][part], flat["weight"][part]
        if reason is None and not x.size:
            reason = "no row of positive weight"
        if reason is not None:
            xs.append(None)
            ys.append(None)
        else:
            fitted_x, fitted_y = _isotonic_points(x, flat["positives"][part] / weight, weight)
            xs.append(fitted_x.tolist())
            ys.append(fitted_y.tolist())
        reasons.append(reason)
    return per_group.select(*keys, "count").with_columns(
        pl.Series("x", xs, dtype=pl.List(pl.Float64)),
        pl.Series("y", ys, dtype=pl.List(pl.Float64)),
        pl.lit(None, pl.Int64).alias("iterations"),
        pl.lit(None, pl.String).alias("fallback"),
        pl.Series("reason", reasons, dtype=pl.String),
    )


def _points(rows: pl.LazyFrame, prepared: Prepared, keys: list[str]) -> pl.DataFrame:
    """Return per group its rows used and, sorted, its distinct ``x`` with weight and positives.

    One aggregation per (group, distinct p) of the data; refused rows raise.
    """
    group = group_columns(keys)
    lf = grouped(rows, keys)
    used = pl.col(USED)
    # Rows of zero weight carry nothing (scikit-learn drops them).
    kept = used & (pl.col(WEIGHT) > 0.0)
    points = (
        lf.group_by(*group, pl.when(kept).then(pl.col(PROB)).alias("x"))
        .agg(
            used.sum().cast(pl.Int64).alias("count"),
            pl.col(REFUSED).sum().cast(pl.Int64).alias("refused"),
            pl.when(kept).then(pl.col(WEIGHT)).sum().alias("weight"),
            pl.when(kept).then(pl.col(WEIGHT) * pl.col(LABEL)).sum().alias("positives"),
        )
        .collect()
    )
    check_refused(prepared, int(points["refused"].sum()))
    raise_for_weight_totals(prepared, points.group_by(group).agg(pl.col("weight").sum()))
    # Each group's distinct values in increasing order (sorted within each group, the
    # groups in parallel: several times faster than one sort of the table by key and x).
    distinct = pl.col("x").filter(pl.col("x").is_not_null())
    per_group = (
        points.lazy()
        .group_by(group)
        .agg(
            pl.col("count").sum(),
            distinct.sort(),
            *(
                pl.col(n).filter(pl.col("x").is_not_null()).sort_by(distinct)
                for n in ("weight", "positives")
            ),
        )
        .sort(group, nulls_last=True)
        .collect()
    )
    if not keys and not per_group.height:
        # The one group exists in empty data too.
        per_group = pl.DataFrame(
            {GROUP: [0], "count": [0], "x": [[]], "weight": [[]], "positives": [[]]},
            schema={
                GROUP: pl.Int64,
                "count": pl.Int64,
                "x": pl.List(pl.Float64),
                "weight": pl.List(pl.Float64),
                "positives": pl.List(pl.Float64),
            },
        )
    return per_group


def _pav(y: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    """Return the non-decreasing least-squares fit of `y` (weighted pool-adjacent-violators).

    Adjacent blocks are pooled while the first's mean is at least the next's. The
    fit is the same whatever the order of the pooling, so numpy first pools, in
    rounds, every chain of adjacent blocks of non-increasing means at once (a
    chain's pooled mean stays at least its next block's, so each is a sequence of
    such pools); while a round still removes a tenth of the blocks. The few
    blocks left then go through the sequential scan (a Python loop over blocks).
    """
    sums, weights = y * w, w.astype(np.float64)
    starts = np.arange(len(y))
    while len(starts) > 1:
        means = sums / weights
        joined = means[:-1] >= means[1:]  # block i + 1 pools into block i
        if not joined.any():
            return np.repeat(means, np.diff(np.append(starts, len(y))))
        keep = np.flatnonzero(np.concatenate([[True], ~joined]))
        if len(keep) > 0.9 * len(starts):
            break  # slow progress: the sequential scan
        sums, weights = np.add.reduceat(sums, keep), np.add.reduceat(weights, keep)
        starts = starts[keep]
    return _pav_scan(sums / weights, weights, np.diff(np.append(starts, len(y))))


def _pav_scan(
    y: NDArray[np.float64], w: NDArray[np.float64], sizes: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Return each point's fitted value by the sequential pool-adjacent-violators scan.

    The input is blocks: means `y`, weights `w`, `sizes` points each.
    """
    means: list[float] = []
    weights: list[float] = []
    counts: list[int] = []
    for value, weight, size in zip(y.tolist(), w.tolist(), sizes.tolist()):
        means.append(value)
        weights.append(weight)
        counts.append(size)
        while len(means) > 1 and means[-2] >= means[-1]:
            total = weights[-2] + weights[-1]
            means[-2] = (means[-2] * weights[-2] + means[-1] * weights[-1]) / total
            weights[-2] = total
            counts[-2] += counts[-1]
            del means[-1], weights[-1], counts[-1]
    return np.repeat(np.array(means), np.array(counts, dtype=np.int64))


def _pool_close(
    x: NDArray[np.float64], mean: NDArray[np.float64], weight: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Pool sorted distinct values closer than ``1e-15`` to the first of their run."""
    resolution = float(np.finfo(np.float64).resolution)
    if len(x) < 2 or np.min(np.diff(x)) >= resolution:
        return x, mean, weight
    starts = [0]
    for j in range(1, len(x)):
        if x[j] - x[starts[-1]] >= resolution:
            starts.append(j)
    index = np.array(starts)
    totals = np.add.reduceat(weight, index)
    positives = np.add.reduceat(mean * weight, index)
    return x[index], positives / totals, totals


def _isotonic_points(
    x: NDArray[np.float64], mean: NDArray[np.float64], weight: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return scikit-learn's fitted thresholds: PAV, clipped to [0, 1], block interiors dropped.

    As scikit-learn's ``_make_unique``, values less than ``1e-15`` (float64
    resolution) above the first of a run are pooled into it.
    """
    x, mean, weight = _pool_close(x, mean, weight)
    fitted = np.clip(_pav(mean, weight), 0.0, 1.0)
    if len(fitted) > 2:
        keep = np.ones(len(fitted), dtype=bool)
        keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
        return x[keep], fitted[keep]
    return x, fitted
