"""The tables a report shows, from the public table API: one statistics table, finished.

The log's statistics (per `by` key and time window) are computed once with
:func:`~polars_calib.bin_statistics` and finished into the summary per window, the
whole-log summary (:func:`~polars_calib.metrics_from_statistics` summing the windows)
and the reliability table (:func:`~polars_calib.reliability_from_statistics`). A
second pass reads the log only where a window's statistics cannot be summed or are
not the diagrams' problem: quantile bins with `time` (edges per window), and the
top-label and classwise reductions (the diagrams are the confidence ones).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_calib._audit import Audit, audit, check_one_model
from polars_calib._core.exprs import IntoExpr, Keys
from polars_calib._core.options import Closed, Metric, Reduction, Strategy, TopLabelAverage
from polars_calib._core.validation import CalibrationDataError
from polars_calib._frames.statistics import (
    bin_statistics,
    metrics_from_statistics,
    reliability_from_statistics,
    validate_statistics,
)
from polars_calib._report.model import Tables

__all__ = ["Request", "key_names", "report_tables"]


def key_names(by: Keys) -> list[str]:
    """The names of the `by` keys (an expression's output name)."""
    keys: Sequence[IntoExpr]
    if by is None:
        keys = []
    elif isinstance(by, (str, pl.Expr)):
        keys = [by]
    else:
        keys = by
    return [key if isinstance(key, str) else key.meta.output_name() for key in keys]


@dataclass(frozen=True)
class Request:
    """What a report is asked for: the log and the options its tables are computed with."""

    data: pl.DataFrame | pl.LazyFrame
    prob: str
    label: str
    by: Keys
    time: str | None
    every: str | None
    n_bins: int
    strategy: Strategy
    closed: Closed
    metrics: tuple[Metric, ...]
    weight: str | None
    confidence: float
    reduction: Reduction | None
    sum_tol: float
    pos_label: Any
    average: TopLabelAverage | None
    n_resamples: int | None
    seed: int
    id: IntoExpr | None

    @property
    def keys(self) -> list[str]:
        """The names of the `by` keys (an expression's output name)."""
        return key_names(self.by)

    @property
    def interval(self) -> float | None:
        """The level of the bootstrap intervals: `confidence` with `n_resamples`, else none."""
        return self.confidence if self.n_resamples is not None else None

    @functools.cached_property
    def measured(self) -> Reduction | None:
        """The reduction the tables measure: ``"confidence"`` for vectors when none is asked.

        Read from the log's schema (checked by :meth:`plan` first).
        """
        vectors = isinstance(self.data.collect_schema().get(self.prob), (pl.Array, pl.List))
        return self.reduction or ("confidence" if vectors else None)

    def plan(
        self,
        *,
        windows: bool = True,
        reduction: Reduction | None = None,
        metrics: Sequence[Metric] = (),
        resampled: bool = False,
    ) -> pl.LazyFrame:
        """The plan of the log's statistics (arguments and schema checked, nothing read).

        Per `by` key, and per time window with `windows`; with `resampled`, the
        bootstrap replicates of the intervals (with `n_resamples`).
        """
        time, every = (self.time, self.every) if windows else (None, None)
        bootstrap = resampled and self.n_resamples is not None
        return bin_statistics(
            self.data.lazy(),
            self.prob,
            self.label,
            by=self.by,
            time=time,
            every=every,
            n_bins=self.n_bins,
            strategy=self.strategy,
            closed=self.closed,
            weight=self.weight,
            reduction=reduction,
            sum_tol=self.sum_tol,
            pos_label=self.pos_label,
            metrics=metrics,
            resampling="bootstrap" if bootstrap else None,
            n_resamples=1000 if self.n_resamples is None else self.n_resamples,
            seed=self.seed,
            id=self.id,
        )

    def collect(
        self,
        plan: pl.LazyFrame,
        *,
        windows: bool = True,
        reduction: Reduction | None = None,
    ) -> pl.DataFrame:
        """`plan` collected; a DataFrame's refused rows raise, as ``summary`` raises."""
        stats = plan.collect()
        if isinstance(self.data, pl.DataFrame):
            self.validate(stats, windows=windows, reduction=reduction)
        return stats

    def validate(
        self,
        stats: pl.DataFrame,
        *,
        windows: bool = True,
        reduction: Reduction | None = None,
    ) -> None:
        """Raise :class:`CalibrationDataError` if `stats` counts refused rows (the counts
        are read from the log again, only then)."""
        time, every = (self.time, self.every) if windows else (None, None)
        validate_statistics(
            stats,
            self.data,
            self.prob,
            self.label,
            by=self.by,
            time=time,
            every=every,
            weight=self.weight,
            reduction=reduction,
            sum_tol=self.sum_tol,
            pos_label=self.pos_label,
        )

    def audit(self, by: Keys, max_order: int | None, min_count: int) -> Audit:
        """The audit of the attributes `by`, with the report's metrics, bins and draws.

        It runs within the first `by` key of the report (the model: the page draws a
        diagram per value of it); without report keys, a log whose column named like a
        model holds several values is refused rather than pooled.
        """
        model = ([self.by] if isinstance(self.by, (str, pl.Expr)) else list(self.by or []))[:1]
        attributes = [by] if isinstance(by, (str, pl.Expr)) else list(by or [])
        names = {a if isinstance(a, str) else a.meta.output_name() for a in attributes}
        if model and self.keys[0] in names:
            msg = (
                f"`audit` cannot slice {self.keys[0]!r}: the report's audit runs within each "
                "value of its first `by` key (the model)"
            )
            raise ValueError(msg)
        if not model:
            check_one_model(self.data, sorted(names), "by={!r}")
        return audit(
            self.data,
            self.prob,
            self.label,
            by=by,
            within=model,
            max_order=max_order,
            metrics=self.metrics,
            min_count=min_count,
            confidence=self.confidence,
            n_resamples=self.n_resamples,
            seed=self.seed,
            id=self.id,
            n_bins=self.n_bins,
            strategy=self.strategy,
            closed=self.closed,
            weight=self.weight,
            reduction=self.reduction,
            sum_tol=self.sum_tol,
            pos_label=self.pos_label,
        )

    def check_finishers(self, plan: pl.LazyFrame) -> None:
        """Check the finishers' arguments on the statistics' `plan` (nothing is read)."""
        metrics_from_statistics(
            plan,
            by=self.keys,
            metrics=self.metrics,
            average=self.average,
            confidence=self.interval,
            reduction=self.reduction,
        )
        reliability_from_statistics(plan, by=self.keys, confidence=self.confidence)

    def finish(self, stats: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
        """The summary of `stats` per `keys`, named as ``summary`` names it."""
        return metrics_from_statistics(
            stats,
            by=keys,
            metrics=self.metrics,
            average=self.average,
            confidence=self.interval,
            reduction=self.measured,
        )


def report_tables(
    request: Request, stats: pl.DataFrame, reliability: pl.DataFrame | None = None
) -> Tables:
    """The summary, the reliability table and the summary per window of `stats`.

    `stats` is the log's statistics per `by` key (and time window), with the bootstrap
    replicates of the intervals (and possibly others, which are left out).
    `reliability`, when given, is shown as it is.
    """
    keys = request.keys
    over_time, overall, whole = None, stats, None
    if request.time is not None:
        over_time = request.finish(stats, [*keys, request.time])
        if request.strategy != "uniform":  # each window's own edges: a pass of its own
            plan = request.plan(
                windows=False,
                reduction=request.reduction,
                metrics=request.metrics,
                resampled=True,
            )
            whole = overall = request.collect(plan, windows=False, reduction=request.reduction)
    summary = request.finish(overall, keys)
    if reliability is None:
        reliability = _reliability(request, stats, whole)
    refused = int(summary.get_column("refused").sum()) if summary.height else 0
    message = _refused_message(request, stats) if refused else None
    return Tables(summary, reliability, over_time, message)


def _reliability(request: Request, stats: pl.DataFrame, whole: pl.DataFrame | None) -> pl.DataFrame:
    """The reliability table per `by` key over the whole log: the one rule of reads.

    The diagrams are the confidence (or binary) problem's: `stats` when it holds that
    problem on bins the windows share (no time, or uniform bins); else `whole`, the
    whole log's statistics of a second pass; else a pass of its own.
    """
    measured = request.measured
    source = None
    if measured in (None, "confidence"):
        uniform = request.time is None or request.strategy == "uniform"
        source = stats if uniform else whole
    if source is None:
        reduction: Reduction | None = None if measured is None else "confidence"
        plan = request.plan(windows=False, reduction=reduction)
        source = request.collect(plan, windows=False, reduction=reduction)
    return reliability_from_statistics(source, by=request.keys, confidence=request.confidence)


def _refused_message(request: Request, stats: pl.DataFrame) -> str:
    """What the checks refuse, counted per check (a LazyFrame's; one more pass)."""
    try:
        request.validate(stats, reduction=request.reduction)
    except CalibrationDataError as error:
        return str(error)
    return "rows refused"
