"""The ``.calib`` namespaces of ``DataFrame`` and ``LazyFrame``, and the typed :func:`frame`.

Every method is the free function of the same name, ``pc.NAME(data, ...)``, with the same
keyword signature less `data`, delegating in one call (``tests/test_namespaces.py`` keeps
the signatures equal). A DataFrame's methods return DataFrames, a LazyFrame's plans.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any, Generic, overload

import polars as pl

from polars_calib._audit import Audit, audit
from polars_calib._audit.cells import BATCH_ROWS
from polars_calib._core.deprecation import deprecated_alias, positional_options
from polars_calib._core.exprs import IntoExpr, Keys
from polars_calib._core.options import (
    METRICS,
    SUM_TOLERANCE,
    AuditTest,
    BinAverage,
    CalibrationMethod,
    Closed,
    Compat,
    ConsistencyMetric,
    Correction,
    Curve,
    Diagnostic,
    Distance,
    Fallback,
    Metric,
    Reduction,
    RegressionMetric,
    Resampling,
    Strategy,
    TableReduction,
    TopLabelAverage,
    VarianceMetric,
)
from polars_calib._core.validation import validate
from polars_calib._frames.frame import reliability, summary
from polars_calib._frames.median_variance import median_variance_bins
from polars_calib._frames.refused import refused_counts
from polars_calib._frames.regression import (
    quantile_reliability,
    regression_statistics,
    regression_summary,
)
from polars_calib._frames.statistics import bin_statistics
from polars_calib._frames.variance import variance_reliability, variance_summary
from polars_calib._monitor import ControlLimits, cusum_thresholds, monitor, monitor_windows
from polars_calib._recalibration import (
    Calibrator,
    RegressionCalibrator,
    fit_calibrator,
    fit_regression_calibrator,
)
from polars_calib._recalibration.newton import SAMPLE_ROWS
from polars_calib._recalibration.regression import RegressionRecalibration
from polars_calib._smooth import smooth_ece_statistics, smooth_ece_summary
from polars_calib._table.plan import FrameT
from polars_calib._table.variance import VARIANCE_METRICS

__all__ = ["DataFrameCalibNamespace", "LazyFrameCalibNamespace", "frame"]


class _FrameCalibNamespace(Generic[FrameT]):
    """The methods shared by the DataFrame and LazyFrame namespaces.

    Each is the free function of the same name, and returns the kind of frame it was
    called on.
    """

    def __init__(self, data: FrameT) -> None:
        self._data: FrameT = data

    def reliability(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: str | None = None,
        confidence: float = 0.95,
        reduction: Reduction | None = None,
        sum_tol: float = SUM_TOLERANCE,
        pos_label: Any = None,
        compat: Compat | None = None,
        min_size: int = 10,
        max_bins: int | None = None,
    ) -> FrameT:
        """Compute the reliability table: per bin, mean prediction against observed frequency.

        See :func:`polars_calib.reliability`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
        >>> df.calib.reliability("p", "y", n_bins=2).select(
        ...     "bin", "count", "mean_predicted", "observed"
        ... )
        shape: (2, 4)
        ┌─────┬───────┬────────────────┬──────────┐
        │ bin ┆ count ┆ mean_predicted ┆ observed │
        │ --- ┆ ---   ┆ ---            ┆ ---      │
        │ i32 ┆ i64   ┆ f64            ┆ f64      │
        ╞═════╪═══════╪════════════════╪══════════╡
        │ 0   ┆ 2     ┆ 0.3            ┆ 0.5      │
        │ 1   ┆ 2     ┆ 0.7            ┆ 0.5      │
        └─────┴───────┴────────────────┴──────────┘
        """
        return reliability(
            self._data,
            prob,
            label,
            by=by,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            confidence=confidence,
            reduction=reduction,
            sum_tol=sum_tol,
            pos_label=pos_label,
            compat=compat,
            min_size=min_size,
            max_bins=max_bins,
        )

    def summary(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        time: str | None = None,
        every: str | None = None,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: str | None = None,
        metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = METRICS,
        reduction: TableReduction | None = None,
        sum_tol: float = SUM_TOLERANCE,
        pos_label: Any = None,
        average: TopLabelAverage | BinAverage | None = None,
        compat: Compat | None = None,
        min_size: int = 10,
        max_bins: int | None = None,
        confidence: float | None = None,
        n_resamples: int | None = None,
        seed: int = 0,
        id: IntoExpr | None = None,  # noqa: A002  (as in summary)
        distance: Distance | None = None,
    ) -> FrameT:
        """Compute calibration metrics per group and window.

        See :func:`polars_calib.summary`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> lf = pl.LazyFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
        >>> plan = lf.calib.summary("p", "y", n_bins=2, metrics=["ece", "brier"])
        >>> plan.select("count", "refused", "ece", "brier").collect()
        shape: (1, 4)
        ┌───────┬─────────┬─────┬───────┐
        │ count ┆ refused ┆ ece ┆ brier │
        │ ---   ┆ ---     ┆ --- ┆ ---   │
        │ i64   ┆ i64     ┆ f64 ┆ f64   │
        ╞═══════╪═════════╪═════╪═══════╡
        │ 4     ┆ 0       ┆ 0.2 ┆ 0.2   │
        └───────┴─────────┴─────┴───────┘
        """
        return summary(
            self._data,
            prob,
            label,
            by=by,
            time=time,
            every=every,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            metrics=metrics,
            reduction=reduction,
            sum_tol=sum_tol,
            pos_label=pos_label,
            average=average,
            compat=compat,
            min_size=min_size,
            max_bins=max_bins,
            confidence=confidence,
            n_resamples=n_resamples,
            seed=seed,
            id=id,
            distance=distance,
        )

    def bin_statistics(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        time: str | None = None,
        every: str | None = None,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: str | None = None,
        reduction: TableReduction | None = None,
        sum_tol: float = SUM_TOLERANCE,
        pos_label: Any = None,
        metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = METRICS,
        compat: Compat | None = None,
        min_size: int = 10,
        max_bins: int | None = None,
        resampling: Resampling | Sequence[Resampling] | None = None,
        n_resamples: int = 1000,
        seed: int = 0,
        id: IntoExpr | None = None,  # noqa: A002  (as in bin_statistics)
    ) -> FrameT:
        """Compute the mergeable statistics per group and bin.

        See :func:`polars_calib.bin_statistics`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
        >>> df.calib.bin_statistics("p", "y", n_bins=2).select("bin", "count")
        shape: (2, 2)
        ┌─────┬───────┐
        │ bin ┆ count │
        │ --- ┆ ---   │
        │ i32 ┆ i64   │
        ╞═════╪═══════╡
        │ 0   ┆ 2     │
        │ 1   ┆ 2     │
        └─────┴───────┘
        """
        return bin_statistics(
            self._data,
            prob,
            label,
            by=by,
            time=time,
            every=every,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            reduction=reduction,
            sum_tol=sum_tol,
            pos_label=pos_label,
            metrics=metrics,
            compat=compat,
            min_size=min_size,
            max_bins=max_bins,
            resampling=resampling,
            n_resamples=n_resamples,
            seed=seed,
            id=id,
        )

    def smooth_ece_summary(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        weight: str | None = None,
        pos_label: Any = None,
    ) -> FrameT:
        """Compute the smooth ECE and its bandwidth per group.

        See :func:`polars_calib.smooth_ece_summary`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
        >>> df.calib.smooth_ece_summary("p", "y").select(
        ...     "count", pl.col("smooth_ece").round(4), "sigma"
        ... )
        shape: (1, 3)
        ┌───────┬────────────┬──────────┐
        │ count ┆ smooth_ece ┆ sigma    │
        │ ---   ┆ ---        ┆ ---      │
        │ i64   ┆ f64        ┆ f64      │
        ╞═══════╪════════════╪══════════╡
        │ 4     ┆ 0.1299     ┆ 0.131836 │
        └───────┴────────────┴──────────┘
        """
        return smooth_ece_summary(
            self._data, prob, label, by=by, weight=weight, pos_label=pos_label
        )

    def monitor_windows(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        time: str,
        every: str,
        reference: pl.Expr | tuple[date | datetime, date | datetime],
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: str | None = None,
        limits: ControlLimits = "sigma",
        confidence: float = 0.95,
        pos_label: Any = None,
        n_resamples: int | None = None,
        seed: int = 0,
        id: IntoExpr | None = None,  # noqa: A002  (as in monitor_windows)
    ) -> FrameT:
        """Compute calibration metrics per window with control limits from a reference period.

        See :func:`polars_calib.monitor_windows`.

        Examples
        --------
        >>> from datetime import date
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> lf = pl.LazyFrame({
        ...     "day": [date(2024, 3, 1), date(2024, 3, 1), date(2024, 3, 3)],
        ...     "p": [0.2, 0.6, 0.4],
        ...     "y": [0, 1, 1],
        ... })
        >>> plan = lf.calib.monitor_windows(
        ...     "p", "y", time="day", every="1d", reference=pl.col("day") < date(2024, 3, 2)
        ... )
        >>> plan.select("day", "reference", "count").collect()
        shape: (3, 3)
        ┌────────────┬───────────┬───────┐
        │ day        ┆ reference ┆ count │
        │ ---        ┆ ---       ┆ ---   │
        │ date       ┆ bool      ┆ i64   │
        ╞════════════╪═══════════╪═══════╡
        │ 2024-03-01 ┆ true      ┆ 2     │
        │ 2024-03-02 ┆ false     ┆ 0     │
        │ 2024-03-03 ┆ false     ┆ 1     │
        └────────────┴───────────┴───────┘
        """
        return monitor_windows(
            self._data,
            prob,
            label,
            by=by,
            time=time,
            every=every,
            reference=reference,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            limits=limits,
            confidence=confidence,
            pos_label=pos_label,
            n_resamples=n_resamples,
            seed=seed,
            id=id,
        )

    def smooth_ece_statistics(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        weight: str | None = None,
        pos_label: Any = None,
    ) -> FrameT:
        """Compute the mergeable fine-grid sums of the smooth ECE per group.

        See :func:`polars_calib.smooth_ece_statistics`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
        >>> stats = df.calib.smooth_ece_statistics("p", "y")
        >>> stats.filter(pl.col("grid").is_null()).select("count", "refused", "weight")
        shape: (1, 3)
        ┌───────┬─────────┬────────┐
        │ count ┆ refused ┆ weight │
        │ ---   ┆ ---     ┆ ---    │
        │ i64   ┆ i64     ┆ f64    │
        ╞═══════╪═════════╪════════╡
        │ 4     ┆ 0       ┆ 4.0    │
        └───────┴─────────┴────────┘
        """
        return smooth_ece_statistics(
            self._data, prob, label, by=by, weight=weight, pos_label=pos_label
        )

    def median_variance_bins(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        min_size: int = 10,
        max_bins: int | None = None,
        name: str = "bin",
        weight: str | None = None,
        pos_label: Any = None,
        sum_tol: float = SUM_TOLERANCE,
    ) -> FrameT:
        """Add each row's median-variance bin.

        See :func:`polars_calib.median_variance_bins`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
        >>> df.calib.median_variance_bins("p", "y", min_size=2)
        shape: (4, 3)
        ┌─────┬─────┬─────┐
        │ p   ┆ y   ┆ bin │
        │ --- ┆ --- ┆ --- │
        │ f64 ┆ i64 ┆ i32 │
        ╞═════╪═════╪═════╡
        │ 0.2 ┆ 0   ┆ 0   │
        │ 0.4 ┆ 1   ┆ 0   │
        │ 0.6 ┆ 0   ┆ 1   │
        │ 0.8 ┆ 1   ┆ 1   │
        └─────┴─────┴─────┘
        """
        return median_variance_bins(
            self._data,
            prob,
            label,
            by=by,
            min_size=min_size,
            max_bins=max_bins,
            name=name,
            weight=weight,
            pos_label=pos_label,
            sum_tol=sum_tol,
        )

    def refused_counts(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        weight: str | None = None,
        pos_label: Any = None,
    ) -> FrameT:
        """Count, per group, the rows each data check refuses.

        See :func:`polars_calib.refused_counts`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 1.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
        >>> df.calib.refused_counts("p", "y").select(
        ...     "rows", "refused", "probability outside [0, 1]"
        ... )
        shape: (1, 3)
        ┌──────┬─────────┬────────────────────────────┐
        │ rows ┆ refused ┆ probability outside [0, 1] │
        │ ---  ┆ ---     ┆ ---                        │
        │ u32  ┆ u32     ┆ u32                        │
        ╞══════╪═════════╪════════════════════════════╡
        │ 4    ┆ 1       ┆ 1                          │
        └──────┴─────────┴────────────────────────────┘
        """
        return refused_counts(self._data, prob, label, by=by, weight=weight, pos_label=pos_label)

    def audit(
        self,
        prob: str,
        label: str,
        *,
        by: Keys,
        within: Keys = None,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: str | None = None,
        max_order: int | None = None,
        metrics: Sequence[Metric] = ("ece", "brier"),
        min_count: int = 100,
        include_small: bool | None = None,
        correction: Correction | None = "holm",
        confidence: float = 0.95,
        n_resamples: int | None = 1000,
        seed: int = 0,
        id: IntoExpr | None = None,  # noqa: A002  (as in audit)
        test: AuditTest | None = "auto",
        reduction: Reduction | None = None,
        sum_tol: float = SUM_TOLERANCE,
        pos_label: Any = None,
        batch_rows: int = BATCH_ROWS,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> Audit:
        """Audit the calibration of every segment and intersection of segments.

        See :func:`polars_calib.audit`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame(
        ...     {"g": ["a", "a", "b", "b"], "p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]}
        ... )
        >>> report = df.calib.audit("p", "y", by="g", min_count=1, n_resamples=None)
        >>> report.slices.select("g", "count")
        shape: (3, 2)
        ┌──────┬───────┐
        │ g    ┆ count │
        │ ---  ┆ ---   │
        │ str  ┆ i64   │
        ╞══════╪═══════╡
        │ null ┆ 4     │
        │ a    ┆ 2     │
        │ b    ┆ 2     │
        └──────┴───────┘
        """
        return audit(
            self._data,
            prob,
            label,
            by=by,
            within=within,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            max_order=max_order,
            metrics=metrics,
            min_count=min_count,
            include_small=include_small,
            correction=correction,
            confidence=confidence,
            n_resamples=n_resamples,
            seed=seed,
            id=id,
            test=test,
            reduction=reduction,
            sum_tol=sum_tol,
            pos_label=pos_label,
            batch_rows=batch_rows,
            progress=progress,
        )

    def fit_calibrator(
        self,
        prob: str,
        label: str,
        *,
        method: CalibrationMethod = "platt",
        by: Keys = None,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: str | None = None,
        reduction: Reduction | None = None,
        smoothed: bool = False,
        fallback: Fallback | None = None,
        min_rows: int = 10,
        max_iter: int = 50,
        tol: float = 1e-8,
        sum_tol: float = SUM_TOLERANCE,
        pos_label: Any = None,
        sample_rows: int | None = SAMPLE_ROWS,
    ) -> Calibrator:
        """Fit a recalibration map per group.

        See :func:`polars_calib.fit_calibrator`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 0, 1, 1]})
        >>> cal = df.calib.fit_calibrator("p", "y", method="histogram", n_bins=2, min_rows=1)
        >>> df.select("p", recalibrated=cal.expr("p"))
        shape: (4, 2)
        ┌─────┬──────────────┐
        │ p   ┆ recalibrated │
        │ --- ┆ ---          │
        │ f64 ┆ f64          │
        ╞═════╪══════════════╡
        │ 0.2 ┆ 0.0          │
        │ 0.4 ┆ 0.0          │
        │ 0.6 ┆ 1.0          │
        │ 0.8 ┆ 1.0          │
        └─────┴──────────────┘
        """
        return fit_calibrator(
            self._data,
            prob,
            label,
            method=method,
            by=by,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            reduction=reduction,
            smoothed=smoothed,
            fallback=fallback,
            min_rows=min_rows,
            max_iter=max_iter,
            tol=tol,
            sum_tol=sum_tol,
            pos_label=pos_label,
            sample_rows=sample_rows,
        )

    def fit_regression_calibrator(
        self,
        target: str,
        *,
        mean: str | None = None,
        std: str | None = None,
        quantiles: str | Sequence[str] | None = None,
        levels: Sequence[float] | None = None,
        ensemble: str | None = None,
        seed: int = 0,
        id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
        lower: str | None = None,
        upper: str | None = None,
        by: Keys = None,
        method: RegressionRecalibration | None = None,
        level: float = 0.9,
        weight: str | None = None,
    ) -> RegressionCalibrator:
        """Fit a recalibration of regression predictions per group.

        See :func:`polars_calib.fit_regression_calibrator`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.LazyFrame({"y": [2.0, -2.0], "mu": 0.0, "sigma": 1.0})
        >>> df.calib.fit_regression_calibrator("y", mean="mu", std="sigma").params["scale"].item()
        2.0
        """
        return fit_regression_calibrator(
            self._data,
            target,
            mean=mean,
            std=std,
            quantiles=quantiles,
            levels=levels,
            ensemble=ensemble,
            seed=seed,
            id=id,
            lower=lower,
            upper=upper,
            by=by,
            method=method,
            level=level,
            weight=weight,
        )

    def regression_statistics(
        self,
        target: str,
        *,
        mean: str | None = None,
        std: str | None = None,
        quantiles: str | Sequence[str] | None = None,
        levels: Sequence[float] | None = None,
        ensemble: str | None = None,
        seed: int = 0,
        id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
        lower: str | Sequence[str] | None = None,
        upper: str | Sequence[str] | None = None,
        by: Keys = None,
        time: str | None = None,
        every: str | None = None,
        n_levels: int = 100,
        weight: str | None = None,
    ) -> FrameT:
        """Compute the mergeable statistics table of regression predictions.

        See :func:`polars_calib.regression_statistics`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"y": [1.5, 3.0], "mu": [1.0, 2.0], "s": [0.1, 0.5]})
        >>> df.calib.regression_statistics("y", mean="mu", std="s", n_levels=3)["bin"].to_list()
        [3]
        """
        return regression_statistics(
            self._data,
            target,
            mean=mean,
            std=std,
            quantiles=quantiles,
            levels=levels,
            ensemble=ensemble,
            seed=seed,
            id=id,
            lower=lower,
            upper=upper,
            by=by,
            time=time,
            every=every,
            n_levels=n_levels,
            weight=weight,
        )

    def regression_summary(
        self,
        target: str,
        *,
        mean: str | None = None,
        std: str | None = None,
        quantiles: str | Sequence[str] | None = None,
        levels: Sequence[float] | None = None,
        ensemble: str | None = None,
        seed: int = 0,
        id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
        lower: str | Sequence[str] | None = None,
        upper: str | Sequence[str] | None = None,
        level: float | Sequence[float] | None = None,
        by: Keys = None,
        time: str | None = None,
        every: str | None = None,
        n_levels: int = 100,
        weight: str | None = None,
        metrics: RegressionMetric | Sequence[RegressionMetric] | None = None,
        curve: Curve | None = None,
    ) -> FrameT:
        """Compute calibration metrics of regression predictions, one row per group.

        See :func:`polars_calib.regression_summary`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "s": [0.1, 0.5, 1.0]})
        >>> df.calib.regression_summary("y", mean="mu", std="s", metrics="crps")["crps"].round(6)[0]
        0.590806
        """
        return regression_summary(
            self._data,
            target,
            mean=mean,
            std=std,
            quantiles=quantiles,
            levels=levels,
            ensemble=ensemble,
            seed=seed,
            id=id,
            lower=lower,
            upper=upper,
            level=level,
            by=by,
            time=time,
            every=every,
            n_levels=n_levels,
            weight=weight,
            metrics=metrics,
            curve=curve,
        )

    def quantile_reliability(
        self,
        target: str,
        *,
        mean: str | None = None,
        std: str | None = None,
        quantiles: str | Sequence[str] | None = None,
        levels: Sequence[float] | None = None,
        ensemble: str | None = None,
        seed: int = 0,
        id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
        lower: str | Sequence[str] | None = None,
        upper: str | Sequence[str] | None = None,
        level: float | Sequence[float] | None = None,
        by: Keys = None,
        time: str | None = None,
        every: str | None = None,
        n_levels: int = 100,
        weight: str | None = None,
        curve: Curve = "quantile",
        confidence: float = 0.95,
    ) -> FrameT:
        """Compute the calibration curve of regression predictions, per level.

        See :func:`polars_calib.quantile_reliability`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "s": [0.1, 0.5, 1.0]})
        >>> df.calib.quantile_reliability("y", mean="mu", std="s", n_levels=3)["count"].to_list()
        [3, 3, 3]
        """
        return quantile_reliability(
            self._data,
            target,
            mean=mean,
            std=std,
            quantiles=quantiles,
            levels=levels,
            ensemble=ensemble,
            seed=seed,
            id=id,
            lower=lower,
            upper=upper,
            level=level,
            by=by,
            time=time,
            every=every,
            n_levels=n_levels,
            weight=weight,
            curve=curve,
            confidence=confidence,
        )

    def variance_reliability(
        self,
        target: str,
        *,
        mean: str,
        std: str,
        by: Keys = None,
        time: str | None = None,
        every: str | None = None,
        n_bins: int = 10,
        strategy: Strategy = "uniform",
        range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
        closed: Closed = "right",
        weight: str | None = None,
    ) -> FrameT:
        """Compute the variance calibration table of Gaussian predictions, per σ-bin.

        See :func:`polars_calib.variance_reliability`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "s": [0.1, 0.5, 1.0]})
        >>> df.calib.variance_reliability("y", mean="mu", std="s", n_bins=2)["count"].to_list()
        [2, 1]
        """
        return variance_reliability(
            self._data,
            target,
            mean=mean,
            std=std,
            by=by,
            time=time,
            every=every,
            n_bins=n_bins,
            strategy=strategy,
            range=range,
            closed=closed,
            weight=weight,
        )

    def variance_summary(
        self,
        target: str,
        *,
        mean: str,
        std: str,
        by: Keys = None,
        time: str | None = None,
        every: str | None = None,
        n_bins: int = 10,
        strategy: Strategy = "uniform",
        range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
        closed: Closed = "right",
        weight: str | None = None,
        metrics: VarianceMetric | Sequence[VarianceMetric] = VARIANCE_METRICS,
        marginal: bool = True,
    ) -> FrameT:
        """Compute ENCE, UCE and QCE of Gaussian predictions, one row per group.

        See :func:`polars_calib.variance_summary`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "s": [0.1, 0.5, 1.0]})
        >>> df.calib.variance_summary("y", mean="mu", std="s", n_bins=5, metrics="uce")["uce"][0]
        0.33
        """
        return variance_summary(
            self._data,
            target,
            mean=mean,
            std=std,
            by=by,
            time=time,
            every=every,
            n_bins=n_bins,
            strategy=strategy,
            range=range,
            closed=closed,
            weight=weight,
            metrics=metrics,
            marginal=marginal,
        )

    def cusum_thresholds(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        weight: str | None = None,
        odds_ratio: float | Sequence[float] = (0.5, 2.0),
        arl0: float = 10_000.0,
        reference: pl.Expr | None = None,
        simulated_alarms: int = 200,
        seed: int = 0,
    ) -> FrameT:
        """Compute the CUSUM threshold of each group and chart for a target in-control ARL0.

        See :func:`polars_calib.cusum_thresholds`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.1, 0.2, 0.3, 0.4] * 25, "y": [0, 0, 1, 0] * 25})
        >>> df.lazy().calib.cusum_thresholds(
        ...     "p", "y", odds_ratio=2.0, arl0=500, simulated_alarms=100
        ... ).collect().select("odds_ratio", pl.col("threshold").round(1))
        shape: (1, 2)
        ┌────────────┬───────────┐
        │ odds_ratio ┆ threshold │
        │ ---        ┆ ---       │
        │ f64        ┆ f64       │
        ╞════════════╪═══════════╡
        │ 2.0        ┆ 2.9       │
        └────────────┴───────────┘
        """
        return cusum_thresholds(
            self._data,
            prob,
            label,
            by=by,
            weight=weight,
            odds_ratio=odds_ratio,
            arl0=arl0,
            reference=reference,
            simulated_alarms=simulated_alarms,
            seed=seed,
        )

    def monitor(
        self,
        prob: str,
        label: str,
        *,
        by: Keys = None,
        time: str,
        weight: str | None = None,
        odds_ratio: float | Sequence[float] = (0.5, 2.0),
        arl0: float = 10_000.0,
        threshold: float | Sequence[float] | None = None,
        reference: pl.Expr | None = None,
        simulated_alarms: int = 200,
        seed: int = 0,
    ) -> FrameT:
        """Find the alarms of risk-adjusted CUSUM charts per group, in time order.

        See :func:`polars_calib.monitor`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> log = pl.DataFrame({"ts": [1, 2, 3, 4], "p": [0.9] * 4, "y": [0, 0, 1, 1]})
        >>> log.calib.monitor("p", "y", time="ts", odds_ratio=0.5, threshold=1.0)
        shape: (1, 5)
        ┌─────┬────────────┬───────────┬───────────┬───────────┐
        │ ts  ┆ odds_ratio ┆ statistic ┆ threshold ┆ run_start │
        │ --- ┆ ---        ┆ ---       ┆ ---       ┆ ---       │
        │ i64 ┆ f64        ┆ f64       ┆ f64       ┆ i64       │
        ╞═════╪════════════╪═══════════╪═══════════╪═══════════╡
        │ 2   ┆ 0.5        ┆ 1.195674  ┆ 1.0       ┆ null      │
        └─────┴────────────┴───────────┴───────────┴───────────┘
        """
        return monitor(
            self._data,
            prob,
            label,
            by=by,
            time=time,
            weight=weight,
            odds_ratio=odds_ratio,
            arl0=arl0,
            threshold=threshold,
            reference=reference,
            simulated_alarms=simulated_alarms,
            seed=seed,
        )

    @positional_options(".calib.validate", ["weight"])
    def validate(
        self,
        prob: str,
        label: str,
        *,
        weight: str | None = None,
        columns: Sequence[str] = (),
        pos_label: Any = None,
    ) -> None:
        """Raise :class:`~polars_calib.CalibrationDataError` if the data cannot give metrics.

        See :func:`polars_calib.validate`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 1.8], "y": [0, 1, 0, 1]})
        >>> df.calib.validate("p", "y")
        Traceback (most recent call last):
        ...
        polars_calib._core.validation.CalibrationDataError: invalid calibration data: column 'p':
        probability outside [0, 1] in 1 of 4 rows (e.g. 1.8)
        >>> df.head(3).calib.validate("p", "y")
        """
        validate(self._data, prob, label, weight=weight, columns=columns, pos_label=pos_label)

    # Old names, kept for one release (polars_calib._core.deprecation).
    fit = deprecated_alias(fit_calibrator, ".calib.fit", ".calib.fit_calibrator")
    refused_rows = deprecated_alias(refused_counts, ".calib.refused_rows", ".calib.refused_counts")
    smooth_ece = deprecated_alias(
        smooth_ece_summary, ".calib.smooth_ece", ".calib.smooth_ece_summary"
    )


@pl.api.register_lazyframe_namespace("calib")
class LazyFrameCalibNamespace(_FrameCalibNamespace[pl.LazyFrame]):
    """Calibration tables of a LazyFrame of predictions; each method returns a LazyFrame plan."""


@pl.api.register_dataframe_namespace("calib")
class DataFrameCalibNamespace(_FrameCalibNamespace[pl.DataFrame]):
    """Calibration tables of a DataFrame of predictions; each method returns a DataFrame."""


@overload
def frame(data: pl.DataFrame) -> DataFrameCalibNamespace: ...


@overload
def frame(data: pl.LazyFrame) -> LazyFrameCalibNamespace: ...


def frame(data: pl.DataFrame | pl.LazyFrame) -> DataFrameCalibNamespace | LazyFrameCalibNamespace:
    """``data.calib``, typed so that type checkers see its methods and their options.

    Polars registers ``.calib`` when the package is imported, which type checkers do not
    see: mypy and pyright report ``df.calib`` as an unknown attribute.
    ``pc.frame(df).summary(...)`` is the same call as ``df.calib.summary(...)``, with every
    option and the result typed.

    Parameters
    ----------
    data
        A DataFrame (methods return DataFrames) or a LazyFrame (methods return plans).

    Returns
    -------
    DataFrameCalibNamespace or LazyFrameCalibNamespace
        The ``.calib`` namespace of `data`.

    Raises
    ------
    TypeError
        `data` is not a polars DataFrame or LazyFrame.

    See Also
    --------
    col : the typed way to the ``.calib`` namespace of an expression.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
    >>> pc.frame(df).summary("p", "y", n_bins=2, metrics=["ece"]).select("count", "ece")
    shape: (1, 2)
    ┌───────┬─────┐
    │ count ┆ ece │
    │ ---   ┆ --- │
    │ i64   ┆ f64 │
    ╞═══════╪═════╡
    │ 4     ┆ 0.2 │
    └───────┴─────┘
    """
    if isinstance(data, pl.DataFrame):
        return DataFrameCalibNamespace(data)
    if isinstance(data, pl.LazyFrame):
        return LazyFrameCalibNamespace(data)
    msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
    raise TypeError(msg)
