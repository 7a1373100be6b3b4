"""Calibration metrics for classifiers as lazy Polars expressions.

Importing the package registers the ``.calib`` namespace on ``pl.Expr``,
``pl.DataFrame`` and ``pl.LazyFrame``.

Where things are: :mod:`~polars_calib._problem` (the input: a binary problem and
its validity rule), :mod:`~polars_calib.binning` (the bin rule),
:mod:`~polars_calib.statistics` (the statistics table and its finishers),
:mod:`~polars_calib._finish` (the finishers of the expressions),
:mod:`~polars_calib.binary` and :mod:`~polars_calib.multiclass` (the expressions),
:mod:`~polars_calib.diagnostics` (calibration tests and score decompositions),
:mod:`~polars_calib.frame` (summaries and reliability tables), :mod:`~polars_calib.plot`,
:mod:`~polars_calib.recalibration` (recalibration maps),
:mod:`~polars_calib.report` (the HTML report) and :mod:`~polars_calib.cli`.
"""

from polars_calib import audit as _audit_alias  # noqa: F401  (transitional: see polars_calib/audit.py)
from polars_calib import frame as _frame  # noqa: F401  (registers `.calib` on frames)
from polars_calib import namespace as _namespace  # noqa: F401  (registers `.calib`)
from polars_calib._audit import Audit, adjusted_p_values, audit
from polars_calib.binary import brier, ece, log_loss, mce, rmsce
from polars_calib.binning import Binning, bin_index, uniform_edges
from polars_calib.canonical import canonical_ece
from polars_calib.cumulative import (
    ks_calibration,
    ks_calibration_p,
    kuiper_calibration,
    kuiper_calibration_p,
)
from polars_calib.diagnostics import (
    brier_decomposition,
    calibration_loss,
    debiased_ece,
    debiased_ece_squared,
    hosmer_lemeshow,
    hosmer_lemeshow_p,
    refinement_loss,
    spiegelhalter_p,
    spiegelhalter_z,
)
from polars_calib.forest import plot_audit
from polars_calib.frame import reliability, summary
from polars_calib.multiclass import (
    classwise_ece,
    confidence_ece,
    multiclass_brier,
    multiclass_log_loss,
    prob_vector,
    top_label_ece,
)
from polars_calib.kernel import skce
from polars_calib.median_variance import median_variance_bins
from polars_calib.namespace import col
from polars_calib.plot import plot_metric_over_time, plot_reliability, save_png
from polars_calib.recalibration import Calibrator, Evaluation, fit_calibrator, load_calibrator
from polars_calib.report import HtmlReport, html_report
from polars_calib.smooth import smooth_ece, smooth_ece_from_statistics, smooth_ece_statistics
from polars_calib.statistics import (
    bin_statistics,
    metrics_from_statistics,
    reliability_from_statistics,
)
from polars_calib.validation import CalibrationDataError, refused_rows, validate

__all__ = [
    "Audit",
    "Binning",
    "CalibrationDataError",
    "Calibrator",
    "Evaluation",
    "HtmlReport",
    "adjusted_p_values",
    "audit",
    "bin_index",
    "bin_statistics",
    "brier",
    "brier_decomposition",
    "calibration_loss",
    "canonical_ece",
    "classwise_ece",
    "col",
    "confidence_ece",
    "debiased_ece",
    "debiased_ece_squared",
    "ece",
    "fit_calibrator",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "html_report",
    "ks_calibration",
    "ks_calibration_p",
    "kuiper_calibration",
    "kuiper_calibration_p",
    "load_calibrator",
    "log_loss",
    "mce",
    "median_variance_bins",
    "metrics_from_statistics",
    "multiclass_brier",
    "multiclass_log_loss",
    "plot_audit",
    "plot_metric_over_time",
    "plot_reliability",
    "prob_vector",
    "refinement_loss",
    "refused_rows",
    "reliability",
    "reliability_from_statistics",
    "rmsce",
    "save_png",
    "skce",
    "smooth_ece",
    "smooth_ece_from_statistics",
    "smooth_ece_statistics",
    "spiegelhalter_p",
    "spiegelhalter_z",
    "summary",
    "top_label_ece",
    "uniform_edges",
    "validate",
]

__version__ = "0.1.0"
