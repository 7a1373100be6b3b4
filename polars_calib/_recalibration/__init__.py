"""Recalibration: fit a map per group on a labelled log, apply it as a lazy expression.

:func:`fit_calibrator` fits one recalibration map per group (``by=``), all groups at
once, on a DataFrame or a LazyFrame (a scan streams), and returns a
:class:`Calibrator`: its ``params`` (one row per group), an ``expr(prob)`` that
applies the fitted maps as a pure Polars expression (``with_columns``, the
streaming engine, a serialized plan), ``save`` / :func:`load_calibrator` (a
readable, versioned JSON file) and ``evaluate`` (before/after metrics and
reliability tables on held-out data).

The modules, each importing only the ones above it in this list:

* ``maps``: the maps' parameters, regressors and identity, the clipped-score warning;
* ``schema``: the saved file's declarative checks;
* ``rows``: the problem's rows a fit reads, and the fit's options;
* ``lookup``: each row's group among a small table (key codes, dense integer keys);
* ``solve``: damped Newton per group in numpy (steps, line search, stop rule);
* ``terms``: one Newton pass's per-row terms and their sums;
* ``newton``: Platt, beta and temperature fits (one aggregation per step, from a
  subsample's fit);
* ``isotonic``: one aggregation, then vectorised pool-adjacent-violators;
* ``histogram``: bin frequencies from the statistics table;
* ``apply``: the fitted maps as a pure expression;
* ``evaluate``: before/after metrics and reliability (:class:`Evaluation`);
* ``calibrator``: :class:`Calibrator` and its file format (:func:`load_calibrator`);
* ``fit``: :func:`fit_calibrator`, its argument checks and the fallbacks;
* ``regression_forms``: the conformal fits and applied expressions of the interval and
  quantile forms;
* ``regression``: :func:`fit_regression_calibrator` (every form) and its file.
"""

from polars_calib._recalibration.calibrator import (
    FORMAT,
    FORMAT_VERSION,
    Calibrator,
    load_calibrator,
)
from polars_calib._recalibration.evaluate import Evaluation
from polars_calib._recalibration.fit import fit_calibrator
from polars_calib._recalibration.maps import ClippedScoresWarning
from polars_calib._recalibration.regression import (
    RegressionCalibrator,
    fit_regression_calibrator,
)
from polars_calib._recalibration.regression_file import load_regression_calibrator

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Calibrator",
    "ClippedScoresWarning",
    "Evaluation",
    "RegressionCalibrator",
    "fit_calibrator",
    "fit_regression_calibrator",
    "load_calibrator",
    "load_regression_calibrator",
]
