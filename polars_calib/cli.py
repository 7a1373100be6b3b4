"""The ``polars-calib`` command line: calibration reports of a prediction log.

``polars-calib report LOG --prob p --label y [--by model,segment] [--time ts --every 1d]
[--out DIR]`` scans the log lazily, prints :func:`polars_calib.summary` and, with
``--out``, writes the summary, the reliability table and its diagram. With
``--resamples N``, the summary has bootstrap intervals (at ``--confidence``), and with
``--time`` the first metric is drawn over the windows with its interval as a band
(``over_time.png``). With
``--engine spark`` (a local Spark session) or ``--engine dask``, that engine reads the
log and computes the statistics (see ``docs/scale-out.md``).
``polars-calib report LOG --target y --mean mu --std sigma [--by store] [--time ts --every 1w]
[--n-levels N] [--out DIR] [--html FILE]`` is the same report of Gaussian regression
predictions (:func:`polars_calib.regression_summary`, the calibration curve and the PIT
histogram); ``--quantiles q --levels 0.1,0.5,0.9``, ``--ensemble members [--seed N --id
COL]`` and ``--lower lo --upper hi --level 0.9`` are the other regression forms. A
command line holds one prediction form, and only its options.
``polars-calib fit LOG --prob p --label y --method platt [--by model] --out cal.json``
fits a calibrator (:func:`polars_calib.fit_calibrator`) and prints its parameters;
``polars-calib apply LOG --calibrator cal.json --prob p --out scored.parquet`` adds the
calibrated column, streaming the log to parquet. Also runs as
``python -m polars_calib``. Errors are one line on stderr, ``polars-calib: error: ...``,
with exit code 2 for a bad command line and 1 for unreadable or invalid data.

The code is in :mod:`polars_calib._cli`; this module is the console script's entry point.
"""

from polars_calib._cli.audit import run_audit
from polars_calib._cli.files import scan
from polars_calib._cli.main import build_parser, main, parse_audit, parse_report
from polars_calib._cli.recalibration import apply_command, fit_command
from polars_calib._cli.regression import regression_report
from polars_calib._cli.regression_options import FORM_METRICS, RegressionOptions
from polars_calib._cli.summary import report

__all__ = [
    "FORM_METRICS",
    "RegressionOptions",
    "apply_command",
    "build_parser",
    "fit_command",
    "main",
    "parse_audit",
    "parse_report",
    "regression_report",
    "report",
    "run_audit",
    "scan",
]
