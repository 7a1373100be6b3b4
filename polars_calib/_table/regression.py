"""Regression tables: a Gaussian problem's statistics table and its finishers.

The PIT ``u`` of each row is binned by the one bin rule on ``B = 2 (L - 1)`` uniform,
right-closed bins, for ``L`` levels ``p_j = j / (L - 1)``. Both calibration curves are
then cumulative weights of bins (``docs/regression.md``, "One table, both curves"):

* quantile: ``W(u <= p_j)`` is the weight of bins ``0 .. 2j - 1``;
* central interval: ``W((1 - p_j)/2 <= u <= (1 + p_j)/2)`` is the weight of bins
  ``L - 1 - j .. L - 2 + j`` (the endpoints ``(L - 1 ∓ j) / B`` are edges of the grid),
  plus, at level 0, the weight of rows with ``y == μ`` (the table's ``sum_center``).

Each level's weight is one masked sum, ``when(mask).then(weight).sum()``, over the bins
its curve point covers (:func:`curve_spans`, :func:`level_weights`): over a table's rows
by their bin index (:func:`span_masks`; :func:`finish_regression`,
:func:`reliability_levels`), over a group's rows by comparing the PIT with the run's
outer edges (``Binning.within``; the expressions of
:mod:`polars_calib._metrics.regression`). The ``L`` weights and the group's total weight
form one list (:func:`level_list`), which :func:`curve_scalar` and :func:`curve_shares`
read inside ``list.eval``: no window and no ``implode``, so Polars' streaming engine runs
the aggregation of a ``group_by`` over a scan without holding its rows
(``docs/regression.md``, "The expressions stream").
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.exprs import Keys
from polars_calib._core.intervals import wilson_interval
from polars_calib._core.options import (
    CURVES,
    GAUSSIAN_METRICS,
    Curve,
    RegressionMetric,
    check_choice,
    check_n_levels,
)
from polars_calib._core.problem import WEIGHT_LIMIT
from polars_calib._core.regression import REGRESSION_TERMS, gaussian_columns, gaussian_problem
from polars_calib._core.validation import CalibrationDataError
from polars_calib._table.columns import grouped
from polars_calib._table.pipeline import Plan, prepared_plan
from polars_calib._table.plan import Prepared, group_keys, with_keys

__all__ = [
    "REGRESSION_METRICS",
    "curve_scalar",
    "curve_shares",
    "curve_spans",
    "finish_regression",
    "gaussian_plan",
    "level_binning",
    "level_list",
    "level_weights",
    "levels",
    "prepare_gaussian",
    "regression_terms",
    "reliability_levels",
    "span_masks",
]

REGRESSION_METRICS: tuple[RegressionMetric, ...] = GAUSSIAN_METRICS
"""The metrics of Gaussian predictions (their default list)."""

_CURVE_METRICS = {
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
}


def levels(n_levels: int) -> list[float]:
    """The levels ``j / (n_levels - 1)``, each the correctly rounded fraction."""
    return [j / (n_levels - 1) for j in range(n_levels)]


def level_binning(n_levels: int) -> Binning:
    """The bins of the PIT for `n_levels` levels: ``2 (n_levels - 1)`` uniform, right-closed."""
    return Binning(2 * (n_levels - 1))


def curve_spans(n_levels: int, curve: Curve) -> list[tuple[int, int]]:
    """Per level ``j``, the first and last bin its curve point covers (see the module):
    ``(0, 2j - 1)`` (quantile) or ``(L - 1 - j, L - 2 + j)`` (interval); a span whose
    last bin is below its first covers none."""
    last = n_levels - 1
    if curve == "quantile":
        return [(0, 2 * j - 1) for j in range(n_levels)]
    return [(last - j, last - 1 + j) for j in range(n_levels)]


def span_masks(bins: pl.Expr, spans: Sequence[tuple[int, int]]) -> list[pl.Expr | None]:
    """Per span, whether a row's bin (an integer of the one bin rule, null for an
    unused row) lies in it; None for a span that covers no bin."""
    return [
        None if last < first else bins <= last if first == 0 else bins.is_between(first, last)
        for first, last in spans
    ]


def level_weights(masks: Sequence[pl.Expr | None], weight: pl.Expr) -> list[pl.Expr]:
    """One aggregate per level: the sum of `weight` over the rows of the current group
    in the level's mask (:func:`span_masks`; 0 for None).

    A masked sum, ``when(mask).then(weight).sum()``: no filter, window or list, which
    Polars' streaming group-by runs as a reduction. Gaussian and quantile predictions,
    rows and tables, all build their curves here.
    """
    return [
        pl.lit(0.0, pl.Float64)
        if mask is None
        else pl.when(mask).then(weight).otherwise(0.0).sum().cast(pl.Float64)
        for mask in masks
    ]


def level_list(weights: Sequence[pl.Expr], total: pl.Expr) -> pl.Expr:
    """The list of the levels' `weights` and the group's `total` weight, last: what
    :func:`curve_shares` and :func:`curve_scalar` read (each aggregate referenced
    once: aggregations get no common-subexpression elimination in memory)."""
    return pl.concat_list([*weights, total.cast(pl.Float64)])


def curve_shares(n_levels: int) -> pl.Expr:
    """Inside ``list.eval`` of :func:`level_list`: the observed share per level.

    Each share is the correctly rounded quotient: Polars divides by a scalar through
    its reciprocal (35 / 100 -> 0.35000000000000003), so the divisor is column-shaped.
    """
    inside = pl.element().head(n_levels)
    return inside / (inside * 0.0 + pl.element().last())


def curve_scalar(n_levels: int, metric: str) -> pl.Expr:
    """Inside ``list.eval`` of :func:`level_list`: a scalar of the curve.

    Mean absolute and root-mean-squared calibration errors (the mean over levels of
    ``|obs - p|`` and the root of that of ``(obs - p)²``), the miscalibration area
    (trapezoids between the piecewise-linear curve and the diagonal, two triangles
    where it crosses it: uncertainty-toolbox 0.1.1) and Kuleshov's score (the mean
    over levels of ``(p - obs)²``, weights ``1 / L``, on the quantile curve).
    """
    gap = curve_shares(n_levels) - pl.lit(pl.Series(levels(n_levels)))
    if metric == "mean_absolute_calibration_error":
        return gap.abs().mean()
    if metric == "root_mean_squared_calibration_error":
        return (gap * gap).mean().sqrt()
    if metric == "quantile_calibration_score":
        return (gap * gap).mean()
    left, right = gap.head(n_levels - 1), gap.tail(n_levels - 1)
    step = 1.0 / (n_levels - 1)
    crossing = left * right < 0.0
    triangles = step * (left * left + right * right) / (2.0 * (left.abs() + right.abs()))
    trapezoid = step * (left + right).abs() / 2.0
    return pl.when(crossing).then(triangles).otherwise(trapezoid).sum()


def prepare_gaussian(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    weight: str | None = None,
    columns: bool = False,
) -> Prepared:
    """Check a frame's schema (no data read) and build its Gaussian problem and keys.

    With `columns`, the frame gains ``z`` and the PIT as columns, which the problem
    reads (:func:`~polars_calib._core.regression.gaussian_problem`): each is computed
    once per row by the statistics table's aggregation.
    """
    keys = group_keys(data, by, time, every, frozenset(("level", "observed")))
    assert isinstance(data, (pl.DataFrame, pl.LazyFrame))  # group_keys checked it
    roles = {"target": target, "mean": mean, "std": std, "weight": weight}
    for role, value in {**roles, "time": time}.items():
        if value is not None and not isinstance(value, str):
            msg = f"`{role}` must be a column name, got {type(value).__name__}"
            raise TypeError(msg)
    lf = data.lazy()
    _check_schema(lf.collect_schema(), roles, keys.columns(), time)
    lf, names = with_keys(lf, keys, time, every, roles)
    if columns:
        lf = lf.with_columns(gaussian_columns(target, mean, std))
    problem = gaussian_problem(target, mean, std, weight, columns=columns)
    return Prepared(data, lf, problem, names, None)


def _check_schema(
    schema: pl.Schema, roles: dict[str, str | None], others: list[str], time: str | None
) -> None:
    """Raise :class:`CalibrationDataError` for missing columns, non-numeric inputs (role:
    column in `roles`) and a `time` column that holds no dates."""
    named = [name for name in (*roles.values(), time) if name is not None]
    problems = [
        f"column {name!r} is missing (columns: {', '.join(schema.names())})"
        for name in dict.fromkeys([*named, *others])
        if name not in schema
    ]
    for role, name in roles.items():
        dtype = schema.get(name) if name is not None else None
        if dtype is not None and not (dtype.is_numeric() or dtype == pl.Null):
            problems.append(f"column {name!r} holds {dtype}, but the {role} must be numeric")
    dtype = schema.get(time) if time is not None else None
    if dtype is not None and not (dtype == pl.Date or isinstance(dtype, pl.Datetime)):
        problems.append(f"column {time!r} holds {dtype}, but `time` must be a Date or Datetime")
    if problems:
        raise CalibrationDataError("invalid calibration data: " + "; ".join(problems))


def gaussian_plan(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
    terms: Sequence[str] = REGRESSION_TERMS,
) -> Plan:
    """Check a frame and plan the statistics table of its Gaussian predictions, summing
    the row `terms` (all by default: :func:`regression_terms` gives a summary's)."""
    check_n_levels(n_levels)
    prepared = prepare_gaussian(
        data,
        target,
        mean=mean,
        std=std,
        by=by,
        time=time,
        every=every,
        weight=weight,
        columns=True,
    )
    return prepared_plan(prepared, level_binning(n_levels), terms=terms)


_TERM_OF = {
    "crps": "crps",
    "nll": "nll",
    "sharpness": "variance",
    **dict.fromkeys((*_CURVE_METRICS, "quantile_calibration_score"), "center"),
}


def regression_terms(metrics: Sequence[str]) -> list[str]:
    """The row terms a Gaussian table sums for a summary of `metrics`: each score's own,
    and ``center`` for the curves (the weight at the interval curve's level 0)."""
    terms = {_TERM_OF[metric] for metric in metrics}
    return [term for term in REGRESSION_TERMS if term in terms]


def _validity(group: list[str]) -> tuple[pl.Expr, pl.Expr]:
    """Per group of a table: (used weight, whether the group's numbers are defined)."""
    binned = pl.col("bin").is_not_null()
    total = pl.col("weight").filter(binned).sum()
    refused = pl.col("count").filter(~binned).sum()
    ok = (refused == 0) & (total > 0.0) & (total < WEIGHT_LIMIT)
    return total, ok


def finish_regression(
    stats: pl.LazyFrame, keys: list[str], metrics: Sequence[str], n_levels: int, curve: Curve
) -> pl.LazyFrame:
    """One row per group of a Gaussian table: keys, ``count``, ``refused``, `metrics`.

    A group holding a refused row, or with no used weight, gets null metrics.
    """
    check_choice("curve", curve, CURVES)
    stats, group = grouped(stats, keys)
    binned = pl.col("bin").is_not_null()
    total, ok = _validity(group)

    def mean_of(term: str) -> pl.Expr:
        return pl.col(f"sum_{term}").filter(binned).sum() / total

    values: dict[str, pl.Expr] = {
        "crps": mean_of("crps"),
        "nll": mean_of("nll"),
        "sharpness": mean_of("variance").sqrt(),
        # An ensemble table's (NaN where a row has one member: no fair estimate).
        "crps_fair": mean_of("crps_fair").fill_nan(None),
    }
    for metric in metrics:
        if metric in _CURVE_METRICS or metric == "quantile_calibration_score":
            used: Curve = "quantile" if metric == "quantile_calibration_score" else curve
            curve_list = _table_levels(n_levels, used, total)
            values[metric] = curve_list.list.eval(curve_scalar(n_levels, metric)).list.first()
    per_group = stats.group_by(group).agg(
        pl.col("count").filter(binned).sum().alias("count"),
        pl.col("count").filter(~binned).sum().alias("refused"),
        *(pl.when(ok).then(values[m]).alias(m) for m in metrics),
    )
    return per_group.sort(group, nulls_last=True).select(*keys, "count", "refused", *metrics)


def _table_levels(n_levels: int, curve: Curve, total: pl.Expr) -> pl.Expr:
    """:func:`level_list` of a group of a statistics table (its refused rows have a
    null bin, in no span)."""
    masks = span_masks(pl.col("bin"), curve_spans(n_levels, curve))
    weights = level_weights(masks, pl.col("weight"))
    if curve == "interval":
        center = pl.when(pl.col("bin").is_not_null()).then(pl.col("sum_center")).sum()
        weights[0] = weights[0] + center
    return level_list(weights, total)


def reliability_levels(
    stats: pl.LazyFrame, keys: list[str], n_levels: int, curve: Curve, z: float
) -> pl.LazyFrame:
    """Per group and level of a Gaussian table: ``level``, ``observed``, ``count`` (rows
    used in the group), ``lower`` and ``upper`` (Wilson, on the group's weight).

    A group holding a refused row, or with no used weight, has null shares and bounds.
    """
    check_choice("curve", curve, CURVES)
    stats, group = grouped(stats, keys)
    binned = pl.col("bin").is_not_null()
    total, ok = _validity(group)
    curve_list = _table_levels(n_levels, curve, total)
    # A group of only null rows has a curve of zeros and no weight: masked.
    masked = [pl.when("ok").then(pl.col(c)).alias(c) for c in ("inside", "observed")]
    lower, upper = wilson_interval(pl.col("inside"), pl.col("total"), z)
    return (
        stats.group_by(group)
        .agg(
            pl.lit(pl.Series(levels(n_levels))).alias("level"),
            curve_list.list.head(n_levels).alias("inside"),
            curve_list.list.eval(curve_shares(n_levels)).alias("observed"),
            pl.col("count").filter(binned).sum().alias("count"),
            total.alias("total"),
            ok.alias("ok"),
        )
        .explode("level", "inside", "observed")
        .with_columns(masked)
        .with_columns(lower.alias("lower"), upper.alias("upper"))
        .sort(*group, "level", nulls_last=True)
        .select(*keys, "level", "observed", "count", "lower", "upper")
    )
