"""Before/after evaluation of a calibrator on held-out data: one statistics table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from polars_calib._core.options import SUM_TOLERANCE, Closed, Strategy
from polars_calib._core.problem import vector_problem
from polars_calib._frames.statistics import (
    bin_statistics,
    metrics_from_statistics,
    reliability_from_statistics,
)
from polars_calib._plot.reliability import plot_reliability
from polars_calib._recalibration.apply import FittedMaps, calibrated

__all__ = ["Evaluation", "before_after", "score_names"]


@dataclass(frozen=True)
class Evaluation:
    """Before/after metrics and reliability tables of a calibrator on held-out data."""

    metrics: pl.DataFrame
    reliability: pl.DataFrame
    keys: tuple[str, ...] = ()

    def plot(
        self, *, backend: Literal["altair", "matplotlib"] = "altair", title: str | None = None
    ) -> Any:
        """Draw the reliability diagram of both stages (``stage`` colours, a panel per key).

        Draws :attr:`reliability` with :func:`polars_calib.plot_reliability`
        (needs the ``plot`` extra).
        """
        # One panel per key (a colour per stage); several keys: a panel per stage.
        colour, facet = ["stage"], self.keys[0] if self.keys else None
        if len(self.keys) > 1:
            colour, facet = list(self.keys), "stage"
        return plot_reliability(
            self.reliability.with_columns(pl.col("stage").cast(pl.String)),
            backend=backend,
            by=colour,
            facet=facet,
            title=title,
        )


def score_names(cal: FittedMaps) -> tuple[str, str, str]:
    """Return the names of the ECE, Brier score and log-loss of an evaluation of `cal`.

    Binary data: ``ece``, ``brier``, ``log_loss``. Top-label and confidence
    calibrators: the binary scores of the confidence against whether its class is
    right (``confidence_ece``, ``confidence_brier``, ``confidence_log_loss``).
    Vector outputs: the confidence ECE and the multi-class scores
    (``confidence_ece``, ``multiclass_brier``, ``multiclass_log_loss``).
    """
    if cal.reduction in ("top_label", "confidence"):
        return "confidence_ece", "confidence_brier", "confidence_log_loss"
    if cal.method == "temperature" or cal.reduction == "classwise":
        return "confidence_ece", "multiclass_brier", "multiclass_log_loss"
    return "ece", "brier", "log_loss"


def before_after(
    cal: FittedMaps,
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    weight: str | None,
    n_bins: int,
    strategy: Strategy,
    closed: Closed,
    confidence: float,
) -> Evaluation:
    """Return calibration before and after, per group, on held-out `data`.

    See :meth:`polars_calib.Calibrator.evaluate`.
    """
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    keys, key_exprs = list(cal.by), cal.key_exprs()
    lf = data.lazy()
    extra = [weight] if weight is not None else []
    stage = pl.Enum(["before", "after"])
    after = calibrated(cal, prob)
    sum_tol = float(cal.options.get("sum_tol", SUM_TOLERANCE))
    if cal.reduction in ("top_label", "confidence"):
        problem = vector_problem(prob, label, None, sum_tol, "confidence")
        # A refused vector becomes a NaN probability, which the binary rule refuses.
        bad = problem.refused.fill_null(False)
        before_p = pl.when(bad).then(float("nan")).otherwise(problem.prob)
        after_p = pl.when(bad).then(float("nan")).otherwise(after)
        y: pl.Expr = problem.label
        pos_label = None
    elif cal.method == "temperature" or cal.reduction == "classwise":
        before_p = pl.col(prob).cast(pl.List(pl.Float64))
        after_p, y, pos_label = after, pl.col(label), None
    else:
        before_p, after_p, y = pl.col(prob), after, pl.col(label)
        pos_label = cal.options.get("pos_label")
    stacked = pl.concat(
        [
            lf.select(
                *key_exprs,
                before_p.alias(prob),
                y.alias(label),
                *extra,
                pl.lit("before", stage).alias("stage"),
            ),
            lf.select(
                *key_exprs,
                after_p.alias(prob),
                y.alias(label),
                *extra,
                pl.lit("after", stage).alias("stage"),
            ),
        ],
        how="vertical_relaxed",
    )
    group = [*keys, "stage"]
    options: dict[str, Any] = {
        "by": group,
        "n_bins": n_bins,
        "strategy": strategy,
        "closed": closed,
        "weight": weight,
        "pos_label": pos_label,
        "metrics": ["ece", "brier", "log_loss"],
    }
    if isinstance(data, pl.DataFrame):
        # Eager: refused rows raise, naming them.
        table = bin_statistics(stacked.collect(), prob, label, **options)
    else:
        table = bin_statistics(stacked, prob, label, **options).collect()
    metrics = metrics_from_statistics(table, by=group, metrics=["ece", "brier", "log_loss"])
    metrics = metrics.rename(dict(zip(["ece", "brier", "log_loss"], score_names(cal))))
    reliability = reliability_from_statistics(table, by=group, confidence=confidence)
    return Evaluation(metrics, reliability, tuple(keys))
