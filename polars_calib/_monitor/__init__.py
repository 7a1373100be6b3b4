"""Calibration drift monitoring: running charts, CUSUM alarms and their thresholds, and
windowed metrics with control limits.

:mod:`~polars_calib._monitor.cusum` holds the expressions (the risk-adjusted CUSUM and
the observed-minus-expected chart), :mod:`~polars_calib._monitor.thresholds` the ARL0
simulation and the Markov chain, :mod:`~polars_calib._monitor.alarms` the restarted
charts' options and thresholds, :mod:`~polars_calib._monitor.batched` and
:mod:`~polars_calib._monitor.stream` the charts run over the log in batches,
:mod:`~polars_calib._monitor.api` the frame functions,
:mod:`~polars_calib._monitor.windows` the metrics per window with control limits,
:mod:`~polars_calib._monitor.store` the incremental store a daily job updates, and
:mod:`~polars_calib._monitor.plots` the drift charts (their rows drawn from
:mod:`~polars_calib._monitor.charts` and :mod:`~polars_calib._monitor.decimation`).
"""

from polars_calib._monitor.api import cusum_thresholds, monitor
from polars_calib._monitor.cusum import cusum, observed_minus_expected
from polars_calib._monitor.plots import plot_cusum, plot_observed_minus_expected
from polars_calib._monitor.store import (
    monitor_store_alarms,
    monitor_store_windows,
    update_monitor_store,
)
from polars_calib._monitor.windows import ControlLimits, monitor_windows

__all__ = [
    "ControlLimits",
    "cusum",
    "cusum_thresholds",
    "monitor",
    "monitor_store_alarms",
    "monitor_store_windows",
    "monitor_windows",
    "observed_minus_expected",
    "plot_cusum",
    "plot_observed_minus_expected",
    "update_monitor_store",
]
