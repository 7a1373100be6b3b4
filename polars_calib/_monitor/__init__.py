"""Calibration monitoring: windowed metrics with control limits (:mod:`.windows`)."""

from polars_calib._monitor.windows import ControlLimits, monitor_windows

__all__ = ["ControlLimits", "monitor_windows"]
