"""Quantile tables: the statistics table of quantile predictions and its finishers.

Each row of a quantile problem (:mod:`polars_calib._core.quantiles`) falls in the bin
``b = #{k : q_k < y}`` of the levels' grid ``0, τ_1, ..., τ_K, 1`` (K + 1 right-closed
bins): with non-decreasing quantiles ``y <= q_k`` exactly when ``k > b``, so the
quantile calibration curve is a cumulation of the bins' weights,
``obs(τ_k) = W(b < k) / W``, as the Gaussian curves are (``docs/regression.md``,
"Quantile predictions"). The table sums, per (keys, bin), the row count, the weight,
``sum_p`` (the bin's upper edge), ``sum_y``, one pinball-loss sum per level,
``sum_pinball_<τ_k>``, and for the lower level of each symmetric pair the weight of
targets on that quantile, ``sum_tie_<τ_k>`` (the central interval ``[q_k, q_(K+1-k)]``
holds them, and ``b`` alone does not say so): the column names carry the levels exactly
(``repr``), so a finisher reads a table's levels from its schema, even from a plan.
Tables of parts of the rows merge by summing rows of the same keys and bin.

The weight at each level is one masked sum over the bins below it
(:func:`quantile_levels`, by :func:`~polars_calib._table.regression.level_weights`, as
the Gaussian curves), from a table or from the rows of one group (the expressions of
:mod:`polars_calib._metrics.quantiles`); :func:`quantile_scalar` computes the curve's
numbers inside ``list.eval`` of their
:func:`~polars_calib._table.regression.level_list`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.intervals import wilson_interval
from polars_calib._core.problem import WEIGHT_LIMIT
from polars_calib._core.quantiles import (
    PINBALL_PREFIX,
    check_levels,
    pinball_term,
    quantile_binning,
    quantile_problem,
    symmetric_pairs,
    tie_term,
)
from polars_calib._core.validation import CalibrationDataError
from polars_calib._table.columns import grouped
from polars_calib._table.pipeline import Plan, prepared_plan
from polars_calib._table.plan import Prepared, group_keys, with_keys
from polars_calib._table.regression import (
    _check_schema,
    curve_shares,
    level_list,
    level_weights,
    span_masks,
)

__all__ = [
    "QUANTILE_METRICS",
    "finish_quantiles",
    "prepare_quantiles",
    "quantile_levels",
    "quantile_plan",
    "quantile_reliability_levels",
    "quantile_scalar",
    "quantile_terms",
    "table_levels",
    "with_grid_size",
]

QUANTILE_METRICS = (
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
    "quantile_calibration_score",
    "pinball_loss",
)
"""The metrics of quantile predictions, in the order of a summary (all by default)."""

_CURVE = {
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
    "quantile_calibration_score",
}


def check_quantile_metrics(metrics: Sequence[str]) -> None:
    """``ValueError`` for a metric quantile predictions do not have (or an unknown one)."""
    for metric in metrics:
        if metric not in QUANTILE_METRICS:
            msg = (
                f"`metrics`: {metric!r} is not a metric of quantile predictions "
                f"(`quantiles=`, `levels=`); they have {', '.join(map(repr, QUANTILE_METRICS))}"
            )
            raise ValueError(msg)


def quantile_plan(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    quantiles: str | Sequence[str],
    levels: Sequence[float],
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    weight: str | None = None,
) -> Plan:
    """Check a frame (its schema: nothing is read) and plan its quantile table."""
    found = check_levels(levels)
    prepared = prepare_quantiles(
        data,
        target,
        quantiles=quantiles,
        levels=found,
        by=by,
        time=time,
        every=every,
        weight=weight,
    )
    plan = prepared_plan(prepared, quantile_binning(found), terms=quantile_terms(found))
    return replace(plan, table=with_grid_size(plan.table, found))


def quantile_terms(levels: Sequence[float]) -> list[str]:
    """The row terms a quantile table sums: a pinball loss per level, and the ties of
    the lower level of each symmetric pair."""
    terms = [pinball_term(tau) for tau in levels]
    return terms + [tie_term(levels[k]) for k, _ in symmetric_pairs(levels)]


def with_grid_size(table: pl.LazyFrame, levels: Sequence[float]) -> pl.LazyFrame:
    """A completed quantile table with its ``n_bins``, K + 1 (the build leaves it null
    for edges that are not ``k / n_bins``)."""
    return table.with_columns(pl.lit(len(levels) + 1, pl.Int32).alias("n_bins"))


def prepare_quantiles(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    quantiles: str | Sequence[str],
    levels: Sequence[float],
    by: Keys,
    time: str | None,
    every: str | None,
    weight: str | None,
) -> Prepared:
    """Check a frame's schema (no data read) and build its quantile problem and keys."""
    found = check_levels(levels)
    keys = group_keys(data, by, time, every, frozenset(("level", "observed", "pinball")))
    assert isinstance(data, (pl.DataFrame, pl.LazyFrame))  # group_keys checked it
    columns = [quantiles] if isinstance(quantiles, str) else list(quantiles)
    for role, value in {"target": target, "weight": weight, "time": time}.items():
        if value is not None and not isinstance(value, str):
            msg = f"`{role}` must be a column name, got {type(value).__name__}"
            raise TypeError(msg)
    for value in columns:
        if not isinstance(value, str):
            msg = f"`quantiles` must be column names, got {type(value).__name__}"
            raise TypeError(msg)
    if not isinstance(quantiles, str) and len(columns) != len(found):
        msg = f"`quantiles` names {len(columns)} columns, but `levels` holds {len(found)} levels"
        raise ValueError(msg)
    lf = data.lazy()
    schema = lf.collect_schema()
    roles: dict[str, str | None] = {"target": target, "weight": weight}
    if isinstance(quantiles, str):
        _check_vector(schema, quantiles)
    else:
        roles.update({f"quantile at {tau!r}": c for tau, c in zip(found, columns, strict=True)})
    _check_schema(schema, roles, [*keys.columns(), *columns], time)
    lf, names = with_keys(lf, keys, time, every, {**roles, "quantiles": columns[0]})
    problem = quantile_problem(target, quantiles, found, weight)
    return Prepared(data, lf, problem, names, None)


def _check_vector(schema: pl.Schema, name: str) -> None:
    """Raise for a quantile column that holds no Array or List of numbers (if present)."""
    dtype = schema.get(name)
    if dtype is None:
        return  # reported as missing by _check_schema
    inner = dtype.inner if isinstance(dtype, (pl.Array, pl.List)) else None
    if inner is None or not (inner.is_numeric() or inner == pl.Null):
        msg = (
            f"invalid calibration data: column {name!r} holds {dtype}, but the quantiles "
            "must be an Array or List of numbers (or give K column names)"
        )
        raise CalibrationDataError(msg)


def is_quantile_table(stats: pl.DataFrame | pl.LazyFrame) -> bool:
    """Whether a table is a quantile table (it has pinball-loss sums): its schema only."""
    return any(name.startswith("sum_" + PINBALL_PREFIX) for name in stats.collect_schema())


def table_levels(stats: pl.DataFrame | pl.LazyFrame, keys: list[str]) -> tuple[float, ...]:
    """The levels of a quantile table, read from its schema (nothing is read); raise
    :class:`CalibrationDataError` for a table without a quantile table's columns."""
    prefix = "sum_" + PINBALL_PREFIX
    schema = stats.collect_schema()
    needed = (*keys, "bin", "lower", "upper", "closed", "n_bins", "count", "weight")
    missing = [name for name in needed if name not in schema]
    if missing:
        msg = (
            "`stats` is not a quantile statistics table (see `regression_statistics`): "
            f"missing column(s) {', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    names = [n for n in schema if n.startswith(prefix)]
    try:
        return check_levels([float(n[len(prefix) :]) for n in names])
    except ValueError as error:
        msg = f"`stats` is not a quantile statistics table: its columns {names} name no levels"
        raise CalibrationDataError(msg) from error


def on_levels(stats: pl.LazyFrame, levels: Sequence[float]) -> pl.LazyFrame:
    """`stats` with its binned rows whose bin and edges are not the levels' made
    refused rows (a null bin), so that their group's numbers are null."""
    edges = [0.0, *levels, 1.0]
    bin_ = pl.col("bin")
    lower = bin_.replace_strict(range(len(edges) - 1), edges[:-1], default=None)
    upper = bin_.replace_strict(range(len(edges) - 1), edges[1:], default=None)
    good = (
        (pl.col("lower") == lower)
        & (pl.col("upper") == upper)
        & (pl.col("closed") == "right")
        & (pl.col("n_bins") == len(edges) - 1)
    ).fill_null(False)
    other = bin_.is_not_null() & ~good
    return stats.with_columns(pl.when(other).then(None).otherwise(bin_).alias("bin"))


def check_table_edges(stats: pl.DataFrame, levels: Sequence[float]) -> None:
    """Raise :class:`CalibrationDataError` for a DataFrame whose binned rows are not on
    the grid of its levels (a table edited, or concatenated with another grid's)."""
    binned = stats.filter(pl.col("bin").is_not_null())
    masked = on_levels(binned.lazy(), levels).filter(pl.col("bin").is_null()).collect()
    if masked.height:
        first = masked.row(0, named=True)
        msg = (
            f"`stats` has {masked.height} row(s) off the grid of its levels "
            f"{list(levels)} (first: bin {first['bin']}, edges {first['lower']!r} .. "
            f"{first['upper']!r}, closed={first['closed']!r})"
        )
        raise CalibrationDataError(msg)


def quantile_levels(bins: pl.Expr, weight: pl.Expr, n_levels: int) -> list[pl.Expr]:
    """Aggregates: ``W(b < k)``, the weight at or below the k-th quantile, k = 1 .. K,
    of a table's rows (their bins ``b``)."""
    return level_weights(span_masks(bins, [(0, k - 1) for k in range(1, n_levels + 1)]), weight)


def quantile_scalar(levels: Sequence[float], metric: str) -> pl.Expr:
    """Inside ``list.eval`` of :func:`~polars_calib._table.regression.level_list` of
    :func:`quantile_levels`: a scalar of the quantile curve.

    Over the K given levels: the mean of ``|obs - τ|`` and the root of the mean of
    ``(obs - τ)²``; Kuleshov's score, the mean of ``(τ - obs)²`` (weights ``1 / K``).
    The miscalibration area is over [0, 1]: the curve is exactly 0 at τ = 0 and 1 at
    τ = 1, so the gap is 0 there; between consecutive points of ``0, τ_1, ..., τ_K,
    1`` the curve is linear, and each segment of width ``Δ`` adds the trapezoid
    ``Δ |d_l + d_r| / 2``, or the two triangles ``Δ (d_l² + d_r²) / (2 (|d_l| + |d_r|))``
    where the gap changes sign (uncertainty-toolbox's rule, on uneven steps).
    """
    n_levels = len(levels)
    gap = curve_shares(n_levels) - pl.lit(pl.Series(list(levels), dtype=pl.Float64))
    if metric == "mean_absolute_calibration_error":
        return gap.abs().mean()
    if metric == "root_mean_squared_calibration_error":
        return (gap * gap).mean().sqrt()
    if metric == "quantile_calibration_score":
        return (gap * gap).mean()
    zero = pl.lit(0.0, pl.Float64)
    padded = zero.append(gap).append(zero)
    left, right = padded.head(n_levels + 1), padded.tail(n_levels + 1)
    points = [0.0, *levels, 1.0]
    step = pl.lit(pl.Series([b - a for a, b in pairwise(points)]))
    crossing = left * right < 0.0
    triangles = step * (left * left + right * right) / (2.0 * (left.abs() + right.abs()))
    trapezoid = step * (left + right).abs() / 2.0
    return pl.when(crossing).then(triangles).otherwise(trapezoid).sum()


def _validity() -> tuple[pl.Expr, pl.Expr]:
    """Per group of a table: (used weight, whether the group's numbers are defined)."""
    binned = pl.col("bin").is_not_null()
    total = pl.col("weight").filter(binned).sum()
    refused = pl.col("count").filter(~binned).sum()
    ok = (refused == 0) & (total > 0.0) & (total < WEIGHT_LIMIT)
    return total, ok


def _table_levels(n_levels: int) -> list[pl.Expr]:
    """:func:`quantile_levels` of a group of a table (refused rows: a null bin)."""
    return quantile_levels(pl.col("bin"), pl.col("weight"), n_levels)


def _pinball(tau: float, total: pl.Expr) -> pl.Expr:
    """The mean pinball loss of a group at level `tau`, from its table rows."""
    binned = pl.col("bin").is_not_null()
    return pl.col(f"sum_{pinball_term(tau)}").filter(binned).sum() / total


def finish_quantiles(
    stats: pl.LazyFrame, keys: list[str], metrics: Sequence[str], levels: Sequence[float]
) -> pl.LazyFrame:
    """One row per group of a quantile table: keys, ``count``, ``refused``, `metrics`.

    A group holding a refused row, or with no used weight, gets null metrics.
    """
    stats, group = grouped(stats, keys)
    binned = pl.col("bin").is_not_null()
    total, ok = _validity()
    values: dict[str, pl.Expr] = {
        "pinball_loss": pl.sum_horizontal(_pinball(tau, total) for tau in levels) / len(levels)
    }
    curve_list = level_list(_table_levels(len(levels)), total)
    for metric in metrics:
        if metric in _CURVE:
            values[metric] = curve_list.list.eval(quantile_scalar(levels, metric)).list.first()
    per_group = stats.group_by(group).agg(
        pl.col("count").filter(binned).sum().alias("count"),
        pl.col("count").filter(~binned).sum().alias("refused"),
        *(pl.when(ok).then(values[m]).alias(m) for m in metrics),
    )
    return per_group.sort(group, nulls_last=True).select(*keys, "count", "refused", *metrics)


def check_interval_levels(levels: Sequence[float]) -> list[tuple[int, int]]:
    """The symmetric pairs of `levels`; ``ValueError`` when there is none."""
    pairs = symmetric_pairs(levels)
    if not pairs:
        msg = (
            f"`curve='interval'`: the levels {list(levels)} hold no symmetric pair "
            "(τ and 1 - τ) to bound a central interval"
        )
        raise ValueError(msg)
    return pairs


def _interval_columns(levels: Sequence[float]) -> list[pl.Expr]:
    """Aggregates of a table group: the central intervals of the symmetric pairs of
    levels, innermost first: ``level`` ``1 - 2 τ_k`` and ``inside`` the weight of
    ``q_k <= y <= q_(K-1-k)`` (0-based), ``C(K-1-k) - C(k) + T_k`` with ``C(t)`` the
    weight of bins up to t and ``T_k`` that of ties ``y == q_k``: the weight of bins
    ``k + 1 .. K - 1 - k`` and the ties."""
    pairs = check_interval_levels(levels)
    binned = pl.col("bin").is_not_null()
    spans = [(lower + 1, upper) for lower, upper in reversed(pairs)]
    weights = level_weights(span_masks(pl.col("bin"), spans), pl.col("weight"))
    inside = [
        weight + pl.col(f"sum_{tie_term(levels[lower])}").filter(binned).sum()
        for weight, (lower, _) in zip(weights, reversed(pairs), strict=True)
    ]
    nominal = [1.0 - 2.0 * levels[lower] for lower, _ in reversed(pairs)]
    return [
        pl.lit(pl.Series(nominal, dtype=pl.Float64)).alias("level"),
        pl.concat_list(inside).alias("inside"),
    ]


def quantile_reliability_levels(
    stats: pl.LazyFrame, keys: list[str], levels: Sequence[float], z: float, curve: str
) -> pl.LazyFrame:
    """Per group and level of a quantile table: ``level``, ``observed``, ``count`` (rows
    used in the group), ``lower`` and ``upper`` (Wilson, on the group's weight) and
    ``pinball`` (the mean pinball loss at the level); with `curve` ``"interval"``, per
    central interval of a symmetric pair of levels (no ``pinball``).

    A group holding a refused row, or with no used weight, has null shares, bounds
    and losses.
    """
    stats, group = grouped(stats, keys)
    binned = pl.col("bin").is_not_null()
    total, ok = _validity()
    if curve == "interval":
        columns = _interval_columns(levels)
        per_level = ["level", "inside"]
    else:
        columns = [
            pl.lit(pl.Series(list(levels), dtype=pl.Float64)).alias("level"),
            pl.concat_list(_table_levels(len(levels))).alias("inside"),
            pl.concat_list(_pinball(tau, total) for tau in levels).alias("pinball"),
        ]
        per_level = ["level", "inside", "pinball"]
    masked = [pl.when("ok").then(pl.col(c)).alias(c) for c in ("observed", *per_level[1:])]
    lower, upper = wilson_interval(pl.col("inside"), pl.col("total"), z)
    result = (
        stats.group_by(group)
        .agg(
            *columns,
            pl.col("count").filter(binned).sum().alias("count"),
            total.alias("total"),
            ok.alias("ok"),
        )
        .explode(*per_level)
        # Column by column: each share is the correctly rounded quotient.
        .with_columns((pl.col("inside") / pl.col("total")).alias("observed"))
        .with_columns(masked)
        .with_columns(lower.alias("lower"), upper.alias("upper"))
        .sort(*group, "level", nulls_last=True)
    )
    names = [*keys, "level", "observed", "count", "lower", "upper"]
    return result.select(*names, *per_level[2:])
