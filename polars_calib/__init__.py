"""Calibration metrics for classifiers as lazy Polars expressions.

Importing the package registers the ``.calib`` namespace on ``pl.Expr``,
``pl.DataFrame`` and ``pl.LazyFrame``.
"""

from polars_calib import namespace as _namespace  # noqa: F401  (registers `.calib`)
from polars_calib.binary import ece, mce, rmsce
from polars_calib.binning import Binning, bin_index, uniform_edges
from polars_calib.frame import reliability, summary
from polars_calib.multiclass import (
    brier,
    classwise_ece,
    confidence_ece,
    log_loss,
    prob_vector,
    top_label_ece,
)
from polars_calib.namespace import col
from polars_calib.plot import plot_reliability, save_png
from polars_calib.stats import (
    bin_statistics,
    metrics_from_statistics,
    reliability_from_statistics,
)
from polars_calib.validation import CalibrationDataError, validate

__all__ = [
    "Binning",
    "CalibrationDataError",
    "bin_index",
    "bin_statistics",
    "brier",
    "classwise_ece",
    "col",
    "confidence_ece",
    "ece",
    "log_loss",
    "mce",
    "metrics_from_statistics",
    "plot_reliability",
    "prob_vector",
    "reliability",
    "reliability_from_statistics",
    "rmsce",
    "save_png",
    "summary",
    "top_label_ece",
    "uniform_edges",
    "validate",
]

__version__ = "0.1.0"
