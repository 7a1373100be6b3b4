"""Checking a frame of predictions before the frame functions summarise it.

The expression forms (:func:`polars_calib.ece` and friends) cannot raise while data
flows, so they turn a bad group into null. The frame functions
(:func:`polars_calib.reliability`, :func:`polars_calib.summary`,
:func:`polars_calib.bin_statistics`) see the whole frame, so they refuse bad data
with one :class:`CalibrationDataError` that lists every problem found:

* a missing column, or one of the wrong dtype (probabilities stored as strings),
  found from the schema alone (``collect_schema()``, no data read);
* probabilities outside [0, 1] or NaN, labels other than 0/1, negative, NaN or
  infinite weights, found by ONE aggregating query over the data: for binary data,
  minima, maxima and NaN tests, as cheap as reading the columns; only when they
  show a problem does a second query count the rows of each problem for the message.

Null probabilities, labels and weights are not errors: those rows are ignored, as
in the expressions. An empty frame is valid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

Frame = pl.DataFrame | pl.LazyFrame
"""The frames the frame functions accept."""

REFUSED = "__polars_calib_refused__"
"""A boolean column a query may return: true on a row that gathers refused values.

:func:`polars_calib.stats.statistics_query` screens the data this way in the pass
that sums it; :func:`collect_validated` reads and drops the column.
"""


class CalibrationDataError(ValueError):
    """The data cannot give calibration metrics: a missing or mistyped column, or bad values.

    The message names each column, the problem and how many rows have it.
    """


@dataclass(frozen=True)
class _Check:
    """One data problem: the rows of `column` where `bad` holds, described as `problem`.

    `shown` is the Float64 value quoted from the first bad row, if any is worth quoting.
    With `whole`, `bad` and `shown` are already aggregates over the whole frame: a
    flag and a description (a check that must compare rows with each other, done in
    one streaming pass).
    """

    column: str
    problem: str
    bad: pl.Expr
    shown: pl.Expr | None = None
    whole: bool = False


def _checks(prob: str, label: str, weight: str | None, sum_tol: float | None) -> list[_Check]:
    y = pl.col(label).cast(pl.Float64)
    if sum_tol is None:
        p = pl.col(prob).cast(pl.Float64)
        checks = [
            _Check(prob, "probability NaN", p.is_nan()),
            _Check(prob, "probability outside [0, 1]", ~p.is_nan() & ~p.is_between(0.0, 1.0), p),
            _Check(label, "label not 0 or 1", ~((y == 0.0) | (y == 1.0)), y),
        ]
    else:
        vectors = pl.col(prob).cast(pl.List(pl.Float64))
        n_classes = vectors.list.len()
        entries_ok = vectors.list.eval(pl.element().is_between(0.0, 1.0).fill_null(False))
        checks = [
            _Check(prob, "vector holding a null, NaN or value outside [0, 1]",
                   ~entries_ok.list.all()),
            _Check(prob, f"vector sum off 1 by more than {sum_tol:g}",
                   (vectors.list.sum() - 1.0).abs() > sum_tol, vectors.list.sum()),
            # Not "shorter than the longest" per row: a global max inside a row-wise
            # check makes the streaming engine hold the whole column.
            _Check(prob, "vectors of different lengths", n_classes.min() != n_classes.max(),
                   pl.format("from {} to {} entries", n_classes.min(), n_classes.max()),
                   whole=True),
            _Check(label, "label not a class 0 .. K - 1",
                   ~((y == y.floor()) & (y >= 0.0) & (y < n_classes)), y),
        ]  # fmt: skip
    if weight is not None:
        w = pl.col(weight).cast(pl.Float64)
        checks += [
            _Check(weight, "weight negative", w < 0.0, w),
            _Check(weight, "weight NaN or infinite", ~w.is_finite(), w),
        ]
    return checks


def _screen(
    schema: pl.Schema, prob: str, label: str, weight: str | None, sum_tol: float | None
) -> pl.Expr | None:
    """A boolean scalar, true when the data may hold a problem of :func:`_checks`; or None.

    For binary data, reductions that cost little more than reading the columns
    (min, max, any NaN) flag every problem the row-wise checks count (a superset:
    it is never false when a check would find a row). Probability vectors have no
    such shortcut: None, and the checks are counted directly.
    """
    if sum_tol is not None:
        return None
    p = pl.col(prob).cast(pl.Float64)
    # min and max skip nulls, and the NaN test does not depend on whether they skip NaN.
    problem = (p.min() < 0.0) | (p.max() > 1.0) | p.is_nan().any()
    dtype = schema[label]
    if dtype.is_integer():
        problem = problem | (pl.col(label).min() < 0) | (pl.col(label).max() > 1)
    elif dtype not in (pl.Boolean, pl.Null):
        y = pl.col(label).cast(pl.Float64)
        problem = problem | (~((y == 0.0) | (y == 1.0))).any()
    if weight is not None:
        w = pl.col(weight).cast(pl.Float64)
        problem = problem | (w.min() < 0.0) | (~w.is_finite()).any()
    # All-null columns give null minima: no problem.
    return problem.fill_null(False).alias("problem")


def is_vector(dtype: pl.DataType) -> bool:
    """Whether `dtype` is a column of probability vectors (Array or List of numbers)."""
    return isinstance(dtype, (pl.Array, pl.List)) and dtype.inner.is_numeric()


def _schema_problems(
    schema: pl.Schema,
    prob: str,
    label: str,
    weight: str | None,
    columns: Sequence[str],
    vectors: bool,
    time: str | None,
) -> list[str]:
    problems = []
    optional = [name for name in (weight, time) if name is not None]
    for name in [prob, label, *optional, *columns]:
        if name not in schema:
            problems.append(f"column {name!r} is missing (columns: {', '.join(schema.names())})")
    # An all-null column (dtype Null) is valid: every row is ignored.
    roles = {
        prob: ("a probability vector must be an Array or List of numbers", is_vector)
        if vectors
        else ("a probability must be numeric", lambda d: d.is_numeric() or d == pl.Null),
        label: (
            "a label must be numeric or boolean",
            lambda d: d.is_numeric() or d in (pl.Boolean, pl.Null),
        ),
    }
    if weight is not None:
        roles[weight] = ("a weight must be numeric", lambda d: d.is_numeric() or d == pl.Null)
    if time is not None:
        roles[time] = (
            "`time` must be a Date or Datetime",
            lambda d: d == pl.Date or isinstance(d, pl.Datetime),
        )
    for name, (rule, accepts) in roles.items():
        dtype = schema.get(name)
        if dtype is not None and not accepts(dtype):
            problems.append(f"column {name!r} holds {dtype}, but {rule}")
    return problems


def check_schema(
    data: Frame,
    prob: str,
    label: str,
    weight: str | None = None,
    columns: Sequence[str] = (),
    vectors: bool = False,
    time: str | None = None,
) -> pl.LazyFrame:
    """Check names and dtypes from the schema alone; return the data as a LazyFrame.

    `columns` are further columns that must exist (group keys, the time column);
    with `vectors`, `prob` holds probability vectors; `time` names a column that must
    hold dates or datetimes. Raises :class:`CalibrationDataError`.
    """
    for argument, value in (("prob", prob), ("label", label), ("weight", weight)):
        if value is not None and not isinstance(value, str):
            msg = f"`{argument}` must be a column name, got {type(value).__name__}"
            raise TypeError(msg)
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    lf = data.lazy()
    problems = _schema_problems(
        lf.collect_schema(), prob, label, weight, columns, vectors, time
    )
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

    Reads the data once when it is valid: one aggregating ``select`` of minima,
    maxima and NaN tests (on a LazyFrame, it is collected here); bad data are read a
    second time, to count the rows with each problem.

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
    data: Frame,
    prob: str,
    label: str,
    weight: str | None = None,
    columns: Sequence[str] = (),
    sum_tol: float | None = None,
    time: str | None = None,
) -> pl.LazyFrame:
    """:func:`validate` the data and return it as a LazyFrame.

    With `sum_tol`, `prob` holds probability vectors that must sum to 1 within it,
    and labels are classes ``0 .. K - 1``; `time` must hold dates or datetimes.
    """
    lf = check_schema(data, prob, label, weight, columns, sum_tol is not None, time)
    screen = _screen(lf.collect_schema(), prob, label, weight, sum_tol)
    if screen is None or lf.select(screen).collect().item():
        checks = _checks(prob, label, weight, sum_tol)
        _raise_for_problems(_problem_counts(lf, checks).collect(), checks)
    return lf


def collect_validated(
    data: Frame,
    prob: str,
    label: str,
    weight: str | None,
    columns: Sequence[str],
    query: Callable[[pl.LazyFrame], pl.LazyFrame],
    time: str | None = None,
    sum_tol: float | None = None,
) -> pl.DataFrame:
    """Collect ``query(data)`` and :func:`validate` the data in the same run.

    Both queries are collected together (Polars may still decode a scan twice); the problems are raised before the result is
    returned (for binary data, a cheap screen runs with the query, and only bad data
    are read again, to count their problems). `sum_tol` and `time` as in
    :func:`validated`.
    """
    lf = check_schema(data, prob, label, weight, columns, sum_tol is not None, time)
    checks = _checks(prob, label, weight, sum_tol)
    screen = _screen(lf.collect_schema(), prob, label, weight, sum_tol)
    result_query = query(lf)
    if screen is not None and REFUSED in result_query.collect_schema():
        # The query screened the data in its own pass (a summary's statistics table):
        # collecting another query with it would read and decode a scan twice.
        result = result_query.collect()
        if result.get_column(REFUSED).any():
            _raise_for_problems(_problem_counts(lf, checks).collect(), checks)
        return result.filter(~pl.col(REFUSED)).drop(REFUSED)
    if screen is None:
        counts, result = pl.collect_all([_problem_counts(lf, checks), result_query])
        _raise_for_problems(counts, checks)
        return result
    flag, result = pl.collect_all([lf.select(screen), result_query])
    if flag.item():
        # Bad data: read it again to count the rows of each problem for the message.
        _raise_for_problems(_problem_counts(lf, checks).collect(), checks)
    return result


def _problem_counts(lf: pl.LazyFrame, checks: list[_Check]) -> pl.LazyFrame:
    """One aggregating query: the row count, and per check its bad rows and an example."""
    counts = [
        (check.bad.fill_null(False) if check.whole else check.bad.sum()).alias(f"n{i}")
        for i, check in enumerate(checks)
    ]
    shown = [
        (check.shown if check.whole else check.shown.filter(check.bad).first()).alias(f"e{i}")
        for i, check in enumerate(checks)
        if check.shown is not None
    ]
    return lf.select(pl.len().alias("rows"), *counts, *shown)


def _raise_for_problems(counts: pl.DataFrame, checks: list[_Check]) -> None:
    total = counts.item(0, "rows")
    problems = []
    for i, check in enumerate(checks):
        n = counts.item(0, f"n{i}")
        if not n:
            continue
        if check.whole:
            where = f"{check.problem} ({counts.item(0, f'e{i}')})"
        else:
            shown = f" (e.g. {counts.item(0, f'e{i}')})" if check.shown is not None else ""
            where = f"{check.problem} in {n} of {total} rows{shown}"
        problems.append(f"column {check.column!r}: {where}")
    if problems:
        raise CalibrationDataError("invalid calibration data: " + "; ".join(problems))
