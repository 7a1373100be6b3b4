"""The rows a fit reads: the problem's columns under internal names, and the fit's options.

Every fit starts from the package's problem (:mod:`polars_calib._core.problem`: the rows
used and the one refused rule); :func:`problem_rows` gives its rows, one per
(row, class) for the keyed reductions, with the names the fitting queries use.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.options import CalibrationMethod, Reduction
from polars_calib._core.problem import vector_checks
from polars_calib._core.validation import problem_counts, raise_for_problems
from polars_calib._table.plan import Prepared

__all__ = [
    "GROUP",
    "INDEX",
    "LABEL",
    "PROB",
    "REFUSED",
    "TRUE_CLASS",
    "USED",
    "VECTOR",
    "WEIGHT",
    "FitSpec",
    "check_refused",
    "group_columns",
    "grouped",
    "problem_rows",
]

# Internal column names of the fitting queries (never in a result).
PROB, LABEL, WEIGHT, USED, REFUSED, GROUP = (
    f"__polars_calib_{n}__" for n in ("p", "y", "w", "used", "refused", "group")
)
VECTOR, TRUE_CLASS = "__polars_calib_vector__", "__polars_calib_class__"
INDEX = "__polars_calib_index__"


@dataclass(frozen=True)
class FitSpec:
    """The options of one fit (checked by :func:`polars_calib.fit_calibrator`).

    `sample_rows` is the size of the subsample whose fit starts the Newton steps of
    large data (None: no subsample).
    """

    method: CalibrationMethod
    reduction: Reduction | None
    smoothed: bool
    binning: Binning
    min_rows: int
    max_iter: int
    tol: float
    sample_rows: int | None


def problem_rows(
    prepared: Prepared, spec: FitSpec, prob: str, label: str, weight: str | None, sum_tol: float
) -> pl.LazyFrame:
    """Return the problem's rows: keys, [class], p, y (or vector, true class), weight, flags."""
    keys = prepared.keys
    if spec.method == "temperature":
        vectors, y, w, refused, _ = vector_checks(prob, label, weight, sum_tol)
        present = pl.all_horizontal(
            [e.is_not_null() for e in (vectors, y, *([] if w is None else [w]))]
        )
        refused = refused.fill_null(False)
        return prepared.lf.select(
            *keys,
            vectors.alias(VECTOR),
            y.cast(pl.Int64, strict=False).alias(TRUE_CLASS),
            (pl.lit(1.0) if w is None else w).alias(WEIGHT),
            (present & ~refused).alias(USED),
            refused.alias(REFUSED),
        )
    problem = prepared.problem
    refused = problem.refused.fill_null(False)
    columns = {
        PROB: problem.prob,
        LABEL: problem.label,
        WEIGHT: pl.lit(1.0) if problem.weight is None else problem.weight,
        USED: problem.present & ~refused,
        REFUSED: refused,
    }
    if problem.key is not None:
        columns["class"] = problem.key
    lf = prepared.lf.select(*keys, *(e.alias(n) for n, e in columns.items()))
    if problem.exploded:
        lf = lf.explode(PROB, LABEL, "class")
    if "class" in columns:
        lf = lf.with_columns(pl.col("class").cast(pl.Int32))
    return lf


def grouped(lf: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Return `lf` with a constant key when there are none (one group, as in `statistics`)."""
    return lf if keys else lf.with_columns(pl.lit(0, pl.Int64).alias(GROUP))


def group_columns(keys: list[str]) -> list[str]:
    """Return the columns a fit groups by: `keys`, or the constant key of :func:`grouped`."""
    return keys or [GROUP]


def check_refused(prepared: Prepared, refused: int) -> None:
    """Raise for refused rows, counted per check (a second read, only on bad data)."""
    if refused:
        checks = prepared.problem.checks
        raise_for_problems(problem_counts(prepared.lf, checks).collect(), checks)
