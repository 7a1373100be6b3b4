"""Interval tables: the statistics table of central prediction intervals and its finisher.

The problem is :func:`polars_calib._core.prediction_intervals.nested_intervals_problem`
without a median: one or several central intervals ``[lower_k, upper_k]`` per row, each
with its nominal level, and the union of their refused rules. Its measures need no bin:
the table has one bin per group (``n_bins`` 1 over the first interval's indicator, so
``sum_p`` is its weighted coverage count) and sums each interval's level-free terms
``covered_k``, ``width_k``, ``below_k`` (``(l - y) 1{y < l}``) and ``above_k``. Every
measure is a ratio of these sums, so tables of parts of the rows merge by summing.
:func:`finish_intervals` reads them per group and level: the coverage, the mean width,
the interval score ``width + (2 / alpha)(below + above)`` and the signed coverage gap
``coverage - level``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.exprs import Keys
from polars_calib._core.intervals import wilson_interval
from polars_calib._core.options import RegressionMetric
from polars_calib._core.prediction_intervals import check_level, nested_intervals_problem
from polars_calib._table.columns import grouped
from polars_calib._table.pipeline import Plan, prepared_plan
from polars_calib._table.plan import Prepared, group_keys, with_keys
from polars_calib._table.regression import _check_schema, _validity

__all__ = [
    "INTERVAL_METRICS",
    "finish_intervals",
    "interval_columns",
    "interval_levels",
    "interval_plan",
    "interval_reliability",
    "interval_terms",
    "prepare_intervals",
]

INTERVAL_METRICS: tuple[RegressionMetric, ...] = (
    "interval_coverage",
    "interval_width",
    "interval_score",
    "coverage_gap",
)
"""The metrics of central intervals (their default list)."""

_TERMS = ("covered", "width", "below", "above")


def interval_columns(
    lower: str | Sequence[str], upper: str | Sequence[str]
) -> tuple[list[str], list[str]]:
    """The bounds' columns, one each per interval, in order.

    ``TypeError`` for bounds that are not column names, ``ValueError`` for counts that
    differ.
    """
    lowers = [lower] if isinstance(lower, str) else list(lower)
    uppers = [upper] if isinstance(upper, str) else list(upper)
    for name in (*lowers, *uppers):
        if not isinstance(name, str):
            msg = f"`lower` and `upper` must be column names, got {type(name).__name__}"
            raise TypeError(msg)
    if len(lowers) != len(uppers) or not lowers:
        msg = (
            "`lower` and `upper` must hold one column per interval, as many, at least "
            f"one: got {len(lowers)} and {len(uppers)}"
        )
        raise ValueError(msg)
    return lowers, uppers


def interval_levels(level: float | Sequence[float] | None, count: int) -> list[float]:
    """The checked nominal levels, one per interval (`count` of them).

    ``TypeError`` for a missing level; ``ValueError`` for one outside (0, 1) or for
    another number of levels than intervals.
    """
    if level is None:
        msg = "central intervals need their nominal `level` (a float in (0, 1), one per interval)"
        raise TypeError(msg)
    levels = [level] if isinstance(level, (int, float)) else list(level)
    checked = [check_level(value) for value in levels]
    if len(checked) != count:
        msg = f"`level` must hold one level per interval: got {len(checked)} for {count}"
        raise ValueError(msg)
    return checked


def prepare_intervals(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    lower: list[str],
    upper: list[str],
    by: Keys,
    time: str | None,
    every: str | None,
    weight: str | None,
) -> Prepared:
    """Check a frame's schema (no data read) and build its intervals' problem and keys."""
    keys = group_keys(data, by, time, every, frozenset(("level",)))
    assert isinstance(data, (pl.DataFrame, pl.LazyFrame))  # group_keys checked it
    for role, value in {"target": target, "weight": weight, "time": time}.items():
        if value is not None and not isinstance(value, str):
            msg = f"`{role}` must be a column name, got {type(value).__name__}"
            raise TypeError(msg)
    roles: dict[str, str | None] = {"target": target, "weight": weight}
    roles |= {f"lower bound {k}": name for k, name in enumerate(lower)}
    roles |= {f"upper bound {k}": name for k, name in enumerate(upper)}
    lf = data.lazy()
    _check_schema(lf.collect_schema(), roles, keys.columns(), time)
    lf, names = with_keys(lf, keys, time, every, roles)
    problem = nested_intervals_problem(target, None, lower, upper, weight)
    if problem.weight is not None:
        # A row of weight zero adds nothing: not 0 × ∞ (NaN) for a one-sided interval.
        positive = problem.weight > 0.0
        terms = {k: pl.when(positive).then(t).otherwise(0.0) for k, t in problem.terms.items()}
        problem = replace(problem, terms=terms)
    return Prepared(data, lf, problem, names, None)


def interval_plan(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    lower: list[str],
    upper: list[str],
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    weight: str | None = None,
) -> Plan:
    """Check a frame and plan the statistics table of its central intervals."""
    prepared = prepare_intervals(
        data, target, lower=lower, upper=upper, by=by, time=time, every=every, weight=weight
    )
    return prepared_plan(prepared, Binning(1), terms=interval_terms(len(lower)))


def interval_terms(count: int) -> list[str]:
    """The row terms an interval table sums, per interval ``k`` of `count`."""
    return [f"{term}_{k}" for k in range(count) for term in _TERMS]


def finish_intervals(
    stats: pl.LazyFrame, keys: list[str], metrics: Sequence[str], levels: Sequence[float]
) -> pl.LazyFrame:
    """One row per group and level of an interval table: keys, ``level``, ``count``,
    ``refused``, `metrics`. A group holding a refused row, or with no used weight, gets
    null metrics."""
    stats, group = grouped(stats, keys)
    binned = pl.col("bin").is_not_null()
    total, ok = _validity(group)

    def mean_of(name: str) -> pl.Expr:
        return pl.col(f"sum_{name}").filter(binned).sum() / total

    parts = []
    for k, level in enumerate(levels):
        alpha = 1.0 - level
        coverage = mean_of(f"covered_{k}")
        below_above = mean_of(f"below_{k}") + mean_of(f"above_{k}")
        values = {
            "interval_coverage": coverage,
            "interval_width": mean_of(f"width_{k}"),
            "interval_score": mean_of(f"width_{k}") + (2.0 / alpha) * below_above,
            "coverage_gap": coverage - level,
        }
        per_group = stats.group_by(group).agg(
            pl.lit(level, pl.Float64).alias("level"),
            pl.col("count").filter(binned).sum().alias("count"),
            pl.col("count").filter(~binned).sum().alias("refused"),
            *(pl.when(ok).then(values[m]).alias(m) for m in metrics),
        )
        parts.append(per_group)
    result = pl.concat(parts).sort(*group, "level", nulls_last=True)
    return result.select(*keys, "level", "count", "refused", *metrics)


def interval_reliability(
    stats: pl.LazyFrame, keys: list[str], levels: Sequence[float], z: float
) -> pl.LazyFrame:
    """Per group and nominal level of an interval table: ``level``, ``observed`` (the
    weighted coverage), ``count`` (rows used) and its Wilson interval ``lower``,
    ``upper`` on the group's weight; null shares and bounds where the group holds a
    refused row or no used weight."""
    stats, group = grouped(stats, keys)
    binned = pl.col("bin").is_not_null()
    total, ok = _validity(group)
    parts = [
        stats.group_by(group).agg(
            pl.lit(level, pl.Float64).alias("level"),
            pl.col(f"sum_covered_{k}").filter(binned).sum().alias("inside"),
            pl.col("count").filter(binned).sum().alias("count"),
            total.alias("total"),
            ok.alias("ok"),
        )
        for k, level in enumerate(levels)
    ]
    lower, upper = wilson_interval(pl.col("inside"), pl.col("total"), z)
    return (
        pl.concat(parts)
        .with_columns(pl.when("ok").then(pl.col("inside")).alias("inside"))
        .with_columns(
            (pl.col("inside") / pl.col("total")).alias("observed"),
            lower.alias("lower"),
            upper.alias("upper"),
        )
        .sort(*group, "level", nulls_last=True)
        .select(*keys, "level", "observed", "count", "lower", "upper")
    )
