"""Checking a frame of predictions before the frame functions summarise it.

The expression forms (:func:`polars_calib.ece` and friends) cannot raise while data
flows, so they turn a bad group into null. The frame functions
(:func:`polars_calib.reliability`, :func:`polars_calib.summary`,
:func:`polars_calib.bin_statistics`) see the whole frame, so they refuse bad data
with one :class:`CalibrationDataError` that lists every problem found:

* a missing column, or one of the wrong dtype (probabilities stored as strings),
  found from the schema alone (``collect_schema()``, no data read);
* probabilities outside [0, 1] or NaN, labels other than 0/1, negative, NaN or
  infinite weights, counted in ONE aggregating query over the data.

Null probabilities, labels and weights are not errors: those rows are ignored, as
in the expressions. An empty frame is valid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

Frame = pl.DataFrame | pl.LazyFrame
"""The frames the frame functions accept."""


class CalibrationDataError(ValueError):
    """The data cannot give calibration metrics: a missing or mistyped column, or bad values.

    The message names each column, the problem and how many rows have it.
    """


@dataclass(frozen=True)
class _Check:
    """One data problem: the rows of `column` where `bad` holds, described as `problem`."""

    column: str
    problem: str
    bad: pl.Expr


def _checks(prob: str, label: str, weight: str | None) -> list[_Check]:
    p = pl.col(prob).cast(pl.Float64)
    y = pl.col(label).cast(pl.Float64)
    checks = [
        _Check(prob, "probability NaN", p.is_nan()),
        _Check(prob, "probability outside [0, 1]", ~p.is_nan() & ~p.is_between(0.0, 1.0)),
        _Check(label, "label not 0 or 1", ~((y == 0.0) | (y == 1.0))),
    ]
    if weight is not None:
        w = pl.col(weight).cast(pl.Float64)
        checks += [
            _Check(weight, "weight negative", w < 0.0),
            _Check(weight, "weight NaN or infinite", ~w.is_finite()),
        ]
    return checks


def _schema_problems(
    schema: pl.Schema, prob: str, label: str, weight: str | None, columns: Sequence[str]
) -> list[str]:
    problems = []
    roles = [(prob, "probability"), (label, "label")]
    if weight is not None:
        roles.append((weight, "weight"))
    for name in [prob, label, *([] if weight is None else [weight]), *columns]:
        if name not in schema:
            problems.append(f"column {name!r} is missing (columns: {', '.join(schema.names())})")
    for name, role in roles:
        dtype = schema.get(name)
        if dtype is None:
            continue
        # An all-null column (dtype Null) is valid: every row is ignored.
        numeric = dtype.is_numeric() or dtype == pl.Null
        numeric = numeric or (role == "label" and dtype == pl.Boolean)
        if not numeric:
            expected = "numeric or boolean" if role == "label" else "numeric"
            problems.append(f"column {name!r} holds {dtype}, but a {role} must be {expected}")
    return problems


def check_schema(
    data: Frame,
    prob: str,
    label: str,
    weight: str | None = None,
    columns: Sequence[str] = (),
) -> pl.LazyFrame:
    """Check names and dtypes from the schema alone; return the data as a LazyFrame.

    `columns` are further columns that must exist (group keys, the time column).
    Raises :class:`CalibrationDataError`.
    """
    for argument, value in (("prob", prob), ("label", label), ("weight", weight)):
        if value is not None and not isinstance(value, str):
            msg = f"`{argument}` must be a column name, got {type(value).__name__}"
            raise TypeError(msg)
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    lf = data.lazy()
    problems = _schema_problems(lf.collect_schema(), prob, label, weight, columns)
    if problems:
        raise CalibrationDataError("invalid calibration data: " + "; ".join(problems))
    return lf


def validate(
    data: Frame,
    prob: str,
    label: str,
    weight: str | None = None,
    *,
    columns: Sequence[str] = (),
) -> None:
    """Raise :class:`CalibrationDataError` if the data cannot give calibration metrics.

    Reads the data once: one aggregating ``select`` counts the rows with each
    problem (on a LazyFrame, it is collected here).

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    weight
        Name of an optional column of non-negative sample weights.
    columns
        Further column names that must exist (group keys, a time column).

    Raises
    ------
    CalibrationDataError
        A ``ValueError`` naming each column, its problem and how many rows have it:
        a missing column, a non-numeric probability, label or weight, probabilities
        outside [0, 1] or NaN, labels other than 0/1, negative, NaN or infinite
        weights. Null values are not errors: those rows are ignored.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.2, 1.5, None, 0.7], "y": [0, 1, 1, 3]})
    >>> pc.validate(df, "p", "y")
    Traceback (most recent call last):
    ...
    polars_calib.validation.CalibrationDataError: invalid calibration data: column 'p': probability outside [0, 1] in 1 of 4 rows (e.g. 1.5); column 'y': label not 0 or 1 in 1 of 4 rows (e.g. 3.0)
    >>> pc.validate(df.filter(pl.col("p") < 1, pl.col("y") < 2), "p", "y")
    """
    validated(data, prob, label, weight, columns)


def validated(
    data: Frame, prob: str, label: str, weight: str | None = None, columns: Sequence[str] = ()
) -> pl.LazyFrame:
    """:func:`validate` the data and return it as a LazyFrame."""
    lf = check_schema(data, prob, label, weight, columns)
    checks = _checks(prob, label, weight)
    counts = lf.select(
        pl.len().alias("rows"),
        *(check.bad.sum().alias(f"n{i}") for i, check in enumerate(checks)),
        *(
            pl.col(check.column).cast(pl.Float64).filter(check.bad).first().alias(f"e{i}")
            for i, check in enumerate(checks)
        ),
    ).collect()
    total = counts.item(0, "rows")
    problems = []
    for i, check in enumerate(checks):
        n = counts.item(0, f"n{i}")
        if n:
            example = counts.item(0, f"e{i}")
            shown = "" if math.isnan(example) else f" (e.g. {example})"
            problems.append(f"column {check.column!r}: {check.problem} in {n} of {total} rows{shown}")
    if problems:
        raise CalibrationDataError("invalid calibration data: " + "; ".join(problems))
    return lf
