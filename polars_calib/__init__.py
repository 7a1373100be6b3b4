"""Calibration metrics for classifiers as lazy Polars expressions.

Importing the package registers the ``.calib`` namespace on ``pl.Expr``.
"""

from polars_calib import namespace as _namespace  # noqa: F401  (registers `.calib`)
from polars_calib.binary import brier, ece, log_loss, mce, rmsce
from polars_calib.binning import Binning, bin_index, uniform_edges
from polars_calib.namespace import col
from polars_calib.plot import plot_reliability, save_png

__all__ = [
    "Binning",
    "bin_index",
    "brier",
    "col",
    "ece",
    "log_loss",
    "mce",
    "plot_reliability",
    "rmsce",
    "save_png",
    "uniform_edges",
]

__version__ = "0.1.0"
