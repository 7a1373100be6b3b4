"""The quantile form of the regression frame functions (``quantiles=``, ``levels=``).

:mod:`polars_calib._frames.regression` documents the public functions and calls these
when a call gives quantiles: each is the one plan
(:func:`polars_calib._table.quantiles.quantile_plan`) and a finisher of
:mod:`polars_calib._table.quantiles`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_calib._core.options import CURVES, check_choice, check_confidence
from polars_calib._core.quantiles import check_levels
from polars_calib._table.plan import FrameT, same_kind
from polars_calib._table.quantiles import (
    QUANTILE_METRICS,
    check_interval_levels,
    check_quantile_metrics,
    check_table_edges,
    finish_quantiles,
    on_levels,
    quantile_plan,
    quantile_reliability_levels,
    table_levels,
)

__all__ = [
    "quantile_metrics_from_statistics",
    "quantile_reliability_from_quantiles",
    "quantile_reliability_quantiles_table",
    "quantile_statistics",
    "quantile_summary",
]


def _metrics(metrics: str | Sequence[str] | None) -> list[str]:
    if metrics is None:
        metrics = QUANTILE_METRICS
    asked: list[str] = [metrics] if isinstance(metrics, str) else list(metrics)
    check_quantile_metrics(asked)
    return asked


def _curve(curve: str | None) -> None:
    """The summaries' curve: quantile predictions have the quantile curve's metrics only."""
    if curve not in (None, "quantile"):
        msg = (
            f"`curve`: the metrics of quantile predictions read the quantile curve, got "
            f"{curve!r} (the coverage of central intervals of symmetric pairs of levels "
            "is `quantile_reliability(..., curve='interval')`)"
        )
        raise ValueError(msg)


def _reliability_curve(curve: str, levels: Sequence[float]) -> None:
    """The reliability tables' curve: ``"quantile"``, or ``"interval"`` with a symmetric pair."""
    check_choice("curve", curve, CURVES)
    if curve == "interval":
        check_interval_levels(levels)


def quantile_statistics(data: FrameT, target: str, **options: Any) -> FrameT:
    """The statistics table of quantile predictions (see ``regression_statistics``)."""
    plan = quantile_plan(data, target, **options)
    return same_kind(data, plan.checked())


def quantile_summary(
    data: FrameT,
    target: str,
    *,
    metrics: str | Sequence[str] | None,
    curve: str | None,
    **options: Any,
) -> FrameT:
    """Metrics of quantile predictions per group (see ``regression_summary``)."""
    asked = _metrics(metrics)
    _curve(curve)
    levels = check_levels(options["levels"])
    plan = quantile_plan(data, target, **options)
    return same_kind(data, finish_quantiles(plan.checked(), plan.keys, asked, levels))


def quantile_reliability_from_quantiles(
    data: FrameT, target: str, *, curve: str, confidence: float, **options: Any
) -> FrameT:
    """The quantile curve per group and level (see ``quantile_reliability``)."""
    levels = check_levels(options["levels"])
    _reliability_curve(curve, levels)
    z = check_confidence(confidence)
    plan = quantile_plan(data, target, **options)
    table = quantile_reliability_levels(plan.checked(), plan.keys, levels, z, curve)
    return same_kind(data, table)


def _levels_of(
    stats: pl.DataFrame | pl.LazyFrame, keys: list[str], n_levels: int | None
) -> tuple[float, ...]:
    if n_levels is not None:
        msg = "`n_levels` is the Gaussian tables' grid: a quantile table carries its levels"
        raise TypeError(msg)
    levels = table_levels(stats, keys)
    if isinstance(stats, pl.DataFrame):
        check_table_edges(stats, levels)
    return levels


def quantile_metrics_from_statistics(
    stats: FrameT,
    keys: list[str],
    *,
    n_levels: int | None,
    metrics: str | Sequence[str] | None,
    curve: str | None,
) -> FrameT:
    """Finish the metrics of a quantile table (see ``regression_metrics_from_statistics``)."""
    asked = _metrics(metrics)
    _curve(curve)
    levels = _levels_of(stats, keys, n_levels)
    table = on_levels(stats.lazy(), levels)
    return same_kind(stats, finish_quantiles(table, keys, asked, levels))


def quantile_reliability_quantiles_table(
    stats: FrameT,
    keys: list[str],
    *,
    n_levels: int | None,
    curve: str,
    confidence: float,
) -> FrameT:
    """Finish the quantile curve of a quantile table (see
    ``quantile_reliability_from_statistics``)."""
    z = check_confidence(confidence)
    levels = _levels_of(stats, keys, n_levels)
    _reliability_curve(curve, levels)
    table = on_levels(stats.lazy(), levels)
    return same_kind(stats, quantile_reliability_levels(table, keys, levels, z, curve))
