"""The ``.calib`` namespace on ``pl.Expr``: one-line delegations to the free functions.

The expression the namespace is called on is the probability; see the free
functions in :mod:`polars_calib._metrics.binary`, :mod:`polars_calib._metrics.diagnostics`
and :mod:`polars_calib._metrics.multiclass` for parameters, formulas and examples.
"""

from __future__ import annotations

from typing import Any, cast

import polars as pl

from polars_calib._core.exprs import IntoExpr
from polars_calib._core.options import (
    SUM_TOLERANCE,
    Alternative,
    BinAverage,
    Closed,
    Distance,
    Kernel,
    LossStrategy,
    Norm,
    Score,
    SkceEstimator,
    Strategy,
    TopLabelAverage,
)
from polars_calib._core.validation import refused_rows
from polars_calib._metrics import binary as binary
from polars_calib._metrics import canonical as canonical
from polars_calib._metrics import cumulative as cumulative
from polars_calib._metrics import diagnostics as diagnostics
from polars_calib._metrics import kernel as kernel_module
from polars_calib._metrics import multiclass as multiclass

__all__ = ["CalibExpr", "ExprCalibNamespace", "col"]


@pl.api.register_expr_namespace("calib")
class ExprCalibNamespace:
    """Calibration metrics of the probabilities in this expression."""

    def __init__(self, expr: pl.Expr) -> None:
        self._prob = expr

    def ece(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        norm: Norm = "l1",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
        distance: Distance | None = None,
        bins: IntoExpr | None = None,
    ) -> pl.Expr:
        """Expected calibration error; see :func:`polars_calib.ece`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.ece("y", n_bins=2).round(4)).item()
        0.125
        """
        return binary.ece(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            norm=norm,
            weight=weight,
            pos_label=pos_label,
            distance=distance,
            bins=bins,
        )

    def mce(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Maximum calibration error; see :func:`polars_calib.mce`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.mce("y", n_bins=2).round(4)).item()
        0.25
        """
        return binary.mce(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def rmsce(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Root-mean-square calibration error; see :func:`polars_calib.rmsce`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.rmsce("y", n_bins=2).round(4)).item()
        0.1768
        """
        return binary.rmsce(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def brier(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> pl.Expr:
        """Brier score of binary probabilities; see :func:`polars_calib.brier`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.brier("y").round(4)).item()
        0.225
        """
        return binary.brier(self._prob, label, weight=weight, pos_label=pos_label)

    def log_loss(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> pl.Expr:
        """Log-loss of binary probabilities; see :func:`polars_calib.log_loss`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.log_loss("y").round(4)).item()
        0.6289
        """
        return binary.log_loss(self._prob, label, weight=weight, pos_label=pos_label)

    def ks_calibration(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> pl.Expr:
        """KS calibration error; see :func:`polars_calib.ks_calibration`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.ks_calibration("y").round(4)).item()
        0.175
        """
        return cumulative.ks_calibration(self._prob, label, weight=weight, pos_label=pos_label)

    def ks_calibration_p(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> pl.Expr:
        """p-value of the KS calibration test; see :func:`polars_calib.ks_calibration_p`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.ks_calibration_p("y").round(4)).item()
        0.4727
        """
        return cumulative.ks_calibration_p(self._prob, label, weight=weight, pos_label=pos_label)

    def kuiper_calibration(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> pl.Expr:
        """Kuiper calibration error; see :func:`polars_calib.kuiper_calibration`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.kuiper_calibration("y").round(4)).item()
        0.1875
        """
        return cumulative.kuiper_calibration(self._prob, label, weight=weight, pos_label=pos_label)

    def kuiper_calibration_p(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> pl.Expr:
        """p-value of Kuiper's calibration test; see :func:`polars_calib.kuiper_calibration_p`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.kuiper_calibration_p("y").round(4)).item()
        0.7314
        """
        return cumulative.kuiper_calibration_p(
            self._prob, label, weight=weight, pos_label=pos_label
        )

    def spiegelhalter_z(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> pl.Expr:
        """Spiegelhalter's Z; see :func:`polars_calib.spiegelhalter_z`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.spiegelhalter_z("y").round(4)).item()
        0.7107
        """
        return diagnostics.spiegelhalter_z(self._prob, label, weight=weight, pos_label=pos_label)

    def spiegelhalter_p(
        self,
        label: IntoExpr,
        *,
        alternative: Alternative = "two-sided",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Spiegelhalter's p-value; see :func:`polars_calib.spiegelhalter_p`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.spiegelhalter_p("y").round(4)).item()
        0.4773
        """
        return diagnostics.spiegelhalter_p(
            self._prob, label, alternative=alternative, weight=weight, pos_label=pos_label
        )

    def hosmer_lemeshow(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 10,
        strategy: Strategy = "quantile",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Hosmer-Lemeshow statistic; see :func:`polars_calib.hosmer_lemeshow`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.hosmer_lemeshow("y", n_bins=3).round(4)).item()
        6.8333
        """
        return diagnostics.hosmer_lemeshow(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def hosmer_lemeshow_p(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 10,
        strategy: Strategy = "quantile",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Hosmer-Lemeshow p-value; see :func:`polars_calib.hosmer_lemeshow_p`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.hosmer_lemeshow_p("y", n_bins=3).round(4)).item()
        0.0089
        """
        return diagnostics.hosmer_lemeshow_p(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def debiased_ece_squared(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Debiased squared calibration error; see :func:`polars_calib.debiased_ece_squared`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.debiased_ece_squared("y", n_bins=2).round(4)).item()
        -0.0417
        """
        return diagnostics.debiased_ece_squared(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def debiased_ece(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Debiased L2 calibration error; see :func:`polars_calib.debiased_ece`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.debiased_ece("y", n_bins=2).round(4)).item()
        0.0
        """
        return diagnostics.debiased_ece(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def brier_decomposition(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Brier score decomposition (a struct); see :func:`polars_calib.brier_decomposition`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> parts = pl.col("p").calib.brier_decomposition("y", n_bins=2)
        >>> df.select(parts.struct.field("brier", "reliability", "resolution", "uncertainty"))
        shape: (1, 4)
        ┌───────┬─────────────┬────────────┬─────────────┐
        │ brier ┆ reliability ┆ resolution ┆ uncertainty │
        │ ---   ┆ ---         ┆ ---        ┆ ---         │
        │ f64   ┆ f64         ┆ f64        ┆ f64         │
        ╞═══════╪═════════════╪════════════╪═════════════╡
        │ 0.225 ┆ 0.03125     ┆ 0.015625   ┆ 0.234375    │
        └───────┴─────────────┴────────────┴─────────────┘
        """
        return diagnostics.brier_decomposition(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def calibration_loss(
        self,
        label: IntoExpr,
        *,
        score: Score = "brier",
        n_bins: int = 15,
        strategy: LossStrategy = "uniform",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Calibration loss of a score; see :func:`polars_calib.calibration_loss`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.calibration_loss("y", n_bins=2).round(4)).item()
        0.0312
        """
        return diagnostics.calibration_loss(
            self._prob,
            label,
            score=score,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def refinement_loss(
        self,
        label: IntoExpr,
        *,
        score: Score = "brier",
        n_bins: int = 15,
        strategy: LossStrategy = "uniform",
        closed: Closed = "right",
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> pl.Expr:
        """Refinement loss of a score; see :func:`polars_calib.refinement_loss`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
        ...     "y": [0, 1, 1, 0, 0, 1, 1, 1],
        ... })
        >>> df.select(pl.col("p").calib.refinement_loss("y", n_bins=2).round(4)).item()
        0.2188
        """
        return diagnostics.refinement_loss(
            self._prob,
            label,
            score=score,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
        )

    def refused_rows(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> pl.Expr:
        """Rows refused per data check; see :func:`polars_calib.refused_rows`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({"p": [0.2, 1.5, 0.7], "y": [0, 1, 2]})
        >>> df.select(pl.col("p").calib.refused_rows("y").struct.field("rows", "refused")).row(0)
        (3, 2)
        """
        return refused_rows(self._prob, label, weight=weight, pos_label=pos_label)

    def multiclass_brier(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, sum_tol: float = SUM_TOLERANCE
    ) -> pl.Expr:
        """Brier score of probability vectors; see :func:`polars_calib.multiclass_brier`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "probs": [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]],
        ...     "y": [0, 2, 2, 1],
        ... }).with_columns(pl.col("probs").list.to_array(3))
        >>> df.select(pl.col("probs").calib.multiclass_brier("y").round(4)).item()
        0.435
        """
        return multiclass.multiclass_brier(self._prob, label, weight=weight, sum_tol=sum_tol)

    def multiclass_log_loss(
        self, label: IntoExpr, *, weight: IntoExpr | None = None, sum_tol: float = SUM_TOLERANCE
    ) -> pl.Expr:
        """Log-loss of probability vectors; see :func:`polars_calib.multiclass_log_loss`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "probs": [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]],
        ...     "y": [0, 2, 2, 1],
        ... }).with_columns(pl.col("probs").list.to_array(3))
        >>> df.select(pl.col("probs").calib.multiclass_log_loss("y").round(4)).item()
        0.7469
        """
        return multiclass.multiclass_log_loss(self._prob, label, weight=weight, sum_tol=sum_tol)

    def confidence_ece(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        norm: Norm = "l1",
        weight: IntoExpr | None = None,
        sum_tol: float = SUM_TOLERANCE,
    ) -> pl.Expr:
        """Confidence calibration error of probability vectors.

        See :func:`polars_calib.confidence_ece`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "probs": [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]],
        ...     "y": [0, 2, 2, 1],
        ... }).with_columns(pl.col("probs").list.to_array(3))
        >>> df.select(pl.col("probs").calib.confidence_ece("y", n_bins=2).round(4)).item()
        0.4
        """
        return multiclass.confidence_ece(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            norm=norm,
            weight=weight,
            sum_tol=sum_tol,
        )

    def classwise_ece(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        norm: Norm = "l1",
        weight: IntoExpr | None = None,
        sum_tol: float = SUM_TOLERANCE,
    ) -> pl.Expr:
        """Classwise calibration error of probability vectors.

        See :func:`polars_calib.classwise_ece`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "probs": [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]],
        ...     "y": [0, 2, 2, 1],
        ... }).with_columns(pl.col("probs").list.to_array(3))
        >>> df.select(pl.col("probs").calib.classwise_ece("y", n_bins=2).round(4)).item()
        0.1833
        """
        return multiclass.classwise_ece(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            norm=norm,
            weight=weight,
            sum_tol=sum_tol,
        )

    def top_label_ece(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        norm: Norm = "l1",
        weight: IntoExpr | None = None,
        sum_tol: float = SUM_TOLERANCE,
        average: TopLabelAverage | None = None,
    ) -> pl.Expr:
        """Top-label calibration error of probability vectors.

        See :func:`polars_calib.top_label_ece`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "probs": [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]],
        ...     "y": [0, 2, 2, 1],
        ... }).with_columns(pl.col("probs").list.to_array(3))
        >>> df.select(pl.col("probs").calib.top_label_ece("y", n_bins=2).round(4)).item()
        0.4167
        """
        return multiclass.top_label_ece(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            norm=norm,
            weight=weight,
            sum_tol=sum_tol,
            average=average,
        )

    def canonical_ece(
        self,
        label: IntoExpr,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        distance: Distance = "tv",
        average: BinAverage | None = None,
        bins: IntoExpr | None = None,
        weight: IntoExpr | None = None,
        sum_tol: float = SUM_TOLERANCE,
    ) -> pl.Expr:
        """Canonical calibration error of probability vectors.

        See :func:`polars_calib.canonical_ece`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "probs": [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]],
        ...     "y": [0, 2, 2, 1],
        ... }).with_columns(pl.col("probs").list.to_array(3))
        >>> df.select(pl.col("probs").calib.canonical_ece("y", n_bins=2).round(4)).item()
        0.325
        """
        return canonical.canonical_ece(
            self._prob,
            label,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            distance=distance,
            average=average,
            bins=bins,
            weight=weight,
            sum_tol=sum_tol,
        )

    def skce(
        self,
        label: IntoExpr,
        *,
        kernel: Kernel = "exponential",
        length_scale: float = 1.0,
        estimator: SkceEstimator = "unbiased",
        block_size: int = 2,
        sum_tol: float = SUM_TOLERANCE,
    ) -> pl.Expr:
        """Squared kernel calibration error; see :func:`polars_calib.skce`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "probs": [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.4, 0.4, 0.2]],
        ...     "y": [0, 2, 2, 1],
        ... }).with_columns(pl.col("probs").list.to_array(3))
        >>> df.select(pl.col("probs").calib.skce("y").round(4)).item()
        -0.0461
        """
        return kernel_module.skce(
            self._prob,
            label,
            kernel=kernel,
            length_scale=length_scale,
            estimator=estimator,
            block_size=block_size,
            sum_tol=sum_tol,
        )


class CalibExpr(pl.Expr):
    """``pl.Expr`` as type checkers should see it once ``polars_calib`` is imported.

    Never instantiated: :func:`col` returns a plain ``pl.Expr`` typed as this class.
    """

    calib: ExprCalibNamespace


def col(name: str) -> CalibExpr:
    """``pl.col(name)``, typed so that type checkers see its ``.calib`` namespace.

    See Also
    --------
    polars_calib.frame : the same for the ``.calib`` namespace of a frame.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.2, 0.8], "y": [0, 1]})
    >>> df.select(pc.col("p").calib.brier("y"))
    shape: (1, 1)
    ┌──────┐
    │ p    │
    │ ---  │
    │ f64  │
    ╞══════╡
    │ 0.04 │
    └──────┘
    """
    return cast(CalibExpr, pl.col(name))
