"""The ``.calib`` namespaces of ``DataFrame`` and ``LazyFrame``: one-line delegations."""

from __future__ import annotations

from typing import Any, Generic

import polars as pl

from polars_calib._audit import Audit, audit
from polars_calib._core.exprs import Keys
from polars_calib._core.validation import refused_rows, validate
from polars_calib._frames.frame import reliability, summary
from polars_calib._frames.median_variance import median_variance_bins
from polars_calib._frames.statistics import bin_statistics
from polars_calib._recalibration import Calibrator, fit_calibrator
from polars_calib._smooth import smooth_ece, smooth_ece_statistics
from polars_calib._table.plan import FrameT, same_kind


class _FrameCalibNamespace(Generic[FrameT]):
    """The methods shared by the DataFrame and LazyFrame namespaces.

    Each delegates in one line to the free function, and returns the kind of frame
    it was called on.
    """

    def __init__(self, data: FrameT) -> None:
        self._data: FrameT = data

    def reliability(self, prob: str, label: str, **options: Any) -> FrameT:
        """Reliability table; see :func:`polars_calib.reliability` for the options."""
        return reliability(self._data, prob, label, **options)

    def summary(self, prob: str, label: str, **options: Any) -> FrameT:
        """Metrics per group and window; see :func:`polars_calib.summary` for the options."""
        return summary(self._data, prob, label, **options)

    def bin_statistics(self, prob: str, label: str, **options: Any) -> FrameT:
        """Mergeable statistics per group and bin; see :func:`polars_calib.bin_statistics`."""
        table: FrameT = bin_statistics(self._data, prob, label, **options)
        return table

    def smooth_ece(self, prob: str, label: str, **options: Any) -> FrameT:
        """Smooth ECE and its bandwidth per group; see :func:`polars_calib.smooth_ece`."""
        return smooth_ece(self._data, prob, label, **options)

    def smooth_ece_statistics(self, prob: str, label: str, **options: Any) -> FrameT:
        """Mergeable fine-grid sums per group; see :func:`polars_calib.smooth_ece_statistics`."""
        return smooth_ece_statistics(self._data, prob, label, **options)

    def median_variance_bins(self, prob: str, label: str, **options: Any) -> FrameT:
        """The rows with their median-variance bin.

        See :func:`polars_calib.median_variance_bins`.
        """
        return median_variance_bins(self._data, prob, label, **options)

    def refused_rows(self, prob: str, label: str, *, by: Keys = None, **options: Any) -> FrameT:
        """Per group, the rows each data check refuses; see :func:`polars_calib.refused_rows`."""
        counts = refused_rows(prob, label, **options)
        query = self._data.lazy()
        grouped = query.group_by(by, maintain_order=True) if by is not None else None
        result = grouped.agg(counts) if grouped is not None else query.select(counts)
        return same_kind(self._data, result.unnest("refused_rows"))

    def audit(self, prob: str, label: str, **options: Any) -> Audit:
        """Calibration of every slice and intersection; see :func:`polars_calib.audit`."""
        return audit(self._data, prob, label, **options)

    def fit(self, prob: str, label: str, **options: Any) -> Calibrator:
        """Fit recalibration maps per group; see :func:`polars_calib.fit_calibrator`."""
        return fit_calibrator(self._data, prob, label, **options)

    def validate(self, prob: str, label: str, weight: str | None = None, **options: Any) -> None:
        """Raise on invalid data; see :func:`polars_calib.validate`."""
        validate(self._data, prob, label, weight, **options)


@pl.api.register_lazyframe_namespace("calib")
class LazyFrameCalibNamespace(_FrameCalibNamespace[pl.LazyFrame]):
    """Calibration tables of a LazyFrame of predictions; each method returns a LazyFrame plan."""


@pl.api.register_dataframe_namespace("calib")
class DataFrameCalibNamespace(_FrameCalibNamespace[pl.DataFrame]):
    """Calibration tables of a DataFrame of predictions; each method returns a DataFrame."""
