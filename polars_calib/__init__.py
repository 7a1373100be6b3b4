"""Calibration metrics for classifiers as lazy Polars expressions.

Importing the package registers the ``.calib`` namespace on ``pl.Expr``,
``pl.DataFrame`` and ``pl.LazyFrame``.

Where things are: :mod:`~polars_calib._core.problem` (the input: a binary problem and
its validity rule), :mod:`~polars_calib._core.binning` (the bin rule),
:mod:`~polars_calib.statistics` (the statistics table and its finishers),
:mod:`~polars_calib._table.bin_sums` (the finishers of the expressions),
:mod:`~polars_calib._metrics.binary` and :mod:`~polars_calib._metrics.multiclass` (the expressions),
:mod:`~polars_calib._metrics.diagnostics` (calibration tests and score decompositions),
:mod:`~polars_calib.frame` (summaries and reliability tables), :mod:`~polars_calib._plot` (charts),
:mod:`~polars_calib.recalibration` (recalibration maps),
:mod:`~polars_calib._report` (the HTML report) and :mod:`~polars_calib.cli`.
"""

from polars_calib._audit import Audit, adjusted_p_values, audit
from polars_calib._core.binning import Binning, bin_index, uniform_edges
from polars_calib._core.exprs import IntoExpr, Keys
from polars_calib._core.options import (
    SUM_TOLERANCE,
    AuditTest,
    CalibrationMethod,
    Closed,
    ConsistencyMetric,
    Correction,
    Curve,
    Fallback,
    Metric,
    Reduction,
    RegressionMetric,
    Resampling,
    Strategy,
    TopLabelAverage,
    VarianceMetric,
)
from polars_calib._core.validation import CalibrationDataError, refused_rows, validate
from polars_calib._frames.frame import reliability, summary
from polars_calib._frames.median_variance import median_variance_bins
from polars_calib._frames.refused import refused_counts
from polars_calib._frames.regression import (
    quantile_reliability,
    quantile_reliability_from_statistics,
    regression_metrics_from_statistics,
    regression_statistics,
    regression_summary,
    validate_regression_statistics,
)
from polars_calib._frames.statistics import (
    bin_statistics,
    metrics_from_statistics,
    reliability_from_statistics,
    validate_statistics,
)
from polars_calib._frames.variance import variance_reliability, variance_summary
from polars_calib._metrics import namespace as _namespace  # noqa: F401  (registers `.calib`)
from polars_calib._metrics.binary import brier, ece, log_loss, mce, rmsce
from polars_calib._metrics.canonical import canonical_ece
from polars_calib._metrics.cumulative import (
    ks_calibration,
    ks_calibration_p,
    kuiper_calibration,
    kuiper_calibration_p,
)
from polars_calib._metrics.diagnostics import (
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
from polars_calib._metrics.ensembles import crps_ensemble, rank_pit
from polars_calib._metrics.gaussian_kernel import gaussian_skce
from polars_calib._metrics.intervals import (
    coverage_gap,
    interval_coverage,
    interval_score,
    interval_width,
    weighted_interval_score,
)
from polars_calib._metrics.kernel import skce
from polars_calib._metrics.multiclass import (
    classwise_ece,
    confidence_ece,
    multiclass_brier,
    multiclass_log_loss,
    prob_vector,
    top_label_ece,
)
from polars_calib._metrics.namespace import col
from polars_calib._metrics.pit_tests import pit_chi2, pit_chi2_p, pit_ks, pit_ks_p
from polars_calib._metrics.quantiles import pinball_loss
from polars_calib._metrics.regression import (
    crps,
    mean_absolute_calibration_error,
    miscalibration_area,
    nll,
    pit,
    quantile_calibration_score,
    root_mean_squared_calibration_error,
    sharpness,
)
from polars_calib._metrics.size_stratified import (
    size_stratified_coverage,
    size_stratified_coverage_gap,
)
from polars_calib._metrics.variance import ence, qce, uce
from polars_calib._monitor import (
    ControlLimits,
    cusum,
    cusum_thresholds,
    monitor,
    monitor_store_alarms,
    monitor_store_windows,
    monitor_windows,
    observed_minus_expected,
    plot_cusum,
    plot_observed_minus_expected,
    update_monitor_store,
)
from polars_calib._namespaces import frame  # registers `.calib` on frames
from polars_calib._plot.audit import plot_audit
from polars_calib._plot.over_time import plot_metric_over_time
from polars_calib._plot.png import save_png
from polars_calib._plot.regression import plot_pit_histogram, plot_quantile_reliability
from polars_calib._plot.reliability import plot_reliability
from polars_calib._plot.windows import plot_monitor_windows
from polars_calib._recalibration import (
    Calibrator,
    ClippedScoresWarning,
    Evaluation,
    RegressionCalibrator,
    fit_calibrator,
    fit_regression_calibrator,
    load_calibrator,
    load_regression_calibrator,
)
from polars_calib._report.regression import regression_html_report
from polars_calib._report.report import HtmlReport, html_report
from polars_calib._smooth import smooth_ece as smooth_ece  # deprecated, not in __all__
from polars_calib._smooth import (
    smooth_ece_from_statistics,
    smooth_ece_statistics,
    smooth_ece_summary,
)
from polars_calib._version import __version__ as __version__

__all__ = [
    "SUM_TOLERANCE",
    "Audit",
    "AuditTest",
    "Binning",
    "CalibrationDataError",
    "CalibrationMethod",
    "Calibrator",
    "ClippedScoresWarning",
    "Closed",
    "ConsistencyMetric",
    "ControlLimits",
    "Correction",
    "Curve",
    "Evaluation",
    "Fallback",
    "HtmlReport",
    "IntoExpr",
    "Keys",
    "Metric",
    "Reduction",
    "RegressionCalibrator",
    "RegressionMetric",
    "Resampling",
    "Strategy",
    "TopLabelAverage",
    "VarianceMetric",
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
    "coverage_gap",
    "crps",
    "crps_ensemble",
    "cusum",
    "cusum_thresholds",
    "debiased_ece",
    "debiased_ece_squared",
    "ece",
    "ence",
    "fit_calibrator",
    "fit_regression_calibrator",
    "frame",
    "gaussian_skce",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "html_report",
    "interval_coverage",
    "interval_score",
    "interval_width",
    "ks_calibration",
    "ks_calibration_p",
    "kuiper_calibration",
    "kuiper_calibration_p",
    "load_calibrator",
    "load_regression_calibrator",
    "log_loss",
    "mce",
    "mean_absolute_calibration_error",
    "median_variance_bins",
    "metrics_from_statistics",
    "miscalibration_area",
    "monitor",
    "monitor_store_alarms",
    "monitor_store_windows",
    "monitor_windows",
    "multiclass_brier",
    "multiclass_log_loss",
    "nll",
    "observed_minus_expected",
    "pinball_loss",
    "pit",
    "pit_chi2",
    "pit_chi2_p",
    "pit_ks",
    "pit_ks_p",
    "plot_audit",
    "plot_cusum",
    "plot_metric_over_time",
    "plot_monitor_windows",
    "plot_observed_minus_expected",
    "plot_pit_histogram",
    "plot_quantile_reliability",
    "plot_reliability",
    "prob_vector",
    "qce",
    "quantile_calibration_score",
    "quantile_reliability",
    "quantile_reliability_from_statistics",
    "rank_pit",
    "refinement_loss",
    "refused_counts",
    "refused_rows",
    "regression_html_report",
    "regression_metrics_from_statistics",
    "regression_statistics",
    "regression_summary",
    "reliability",
    "reliability_from_statistics",
    "rmsce",
    "root_mean_squared_calibration_error",
    "save_png",
    "sharpness",
    "size_stratified_coverage",
    "size_stratified_coverage_gap",
    "skce",
    "smooth_ece_from_statistics",
    "smooth_ece_statistics",
    "smooth_ece_summary",
    "spiegelhalter_p",
    "spiegelhalter_z",
    "summary",
    "top_label_ece",
    "uce",
    "uniform_edges",
    "update_monitor_store",
    "validate",
    "validate_regression_statistics",
    "validate_statistics",
    "variance_reliability",
    "variance_summary",
    "weighted_interval_score",
]
