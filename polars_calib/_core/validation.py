"""Refusing bad data: schema checks, counts of refused rows, and the error that names them.

The rule of what is refused lives in :mod:`polars_calib._core.problem` (one predicate per
problem, with a text per check); this module turns it into:

* :class:`CalibrationDataError`, raised by the DataFrame functions and by
  :func:`validate`, naming each column, the problem and how many rows have it;
* a missing column, or one of the wrong dtype, found from the schema alone
  (``collect_schema()``: no data read);
* :func:`refused_rows`, an expression counting, per group, the rows each check
  refuses: the reason behind a null metric.

Null probabilities, labels and weights are not errors: those rows are ignored, as
in the expressions. An empty frame is valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_calib._core.deprecation import positional_options
from polars_calib._core.exprs import IntoExpr
from polars_calib._core.problem import Check, binary_problem

__all__ = [
    "CalibrationDataError",
    "check_schema",
    "is_vector",
    "problem_counts",
    "raise_for_problems",
    "refused_rows",
    "validate",
]


class CalibrationDataError(ValueError):
    """The data cannot give calibration metrics: a missing or mistyped column, or bad values.

    The message names each column, the problem and how many rows have it.
    """


def is_vector(dtype: pl.DataType) -> bool:
    """Whether `dtype` is a column of probability vectors (Array or List of numbers)."""
    return isinstance(dtype, (pl.Array, pl.List)) and dtype.inner.is_numeric()


def _numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.Null


def check_schema(
    data: object,
    prob: str,
    label: str,
    weight: str | None = None,
    columns: Sequence[str] = (),
    vectors: bool = False,
    time: str | None = None,
    pos_label: Any = None,
) -> pl.LazyFrame:
    """Check names and dtypes from the schema alone; return the data as a LazyFrame.

    `columns` are further columns that must exist (those group keys read); with
    `vectors`, `prob` holds probability vectors; `time` must hold dates or
    datetimes; with `pos_label`, the label may have any dtype. Raises ``TypeError``
    for arguments of the wrong type, :class:`CalibrationDataError` for the data.
    """
    for argument, value in (("prob", prob), ("label", label), ("weight", weight)):
        if value is not None and not isinstance(value, str):
            msg = f"`{argument}` must be a column name, got {type(value).__name__}"
            raise TypeError(msg)
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    lf = data.lazy()
    schema = lf.collect_schema()
    problems = []
    optional = [name for name in (weight, time) if name is not None]
    for name in dict.fromkeys([prob, label, *optional, *columns]):
        if name not in schema:
            problems.append(f"column {name!r} is missing (columns: {', '.join(schema.names())})")
    # An all-null column (dtype Null) is valid: every row is ignored.
    roles: dict[str, tuple[str, Any]] = {
        prob: ("a probability vector must be an Array or List of numbers", is_vector)
        if vectors
        else ("a probability must be numeric or boolean", lambda d: _numeric(d) or d == pl.Boolean),
    }
    if pos_label is None:
        roles[label] = (
            "a label must be numeric or boolean (or give `pos_label`)",
            lambda d: _numeric(d) or d == pl.Boolean,
        )
    if weight is not None:
        roles[weight] = ("a weight must be numeric", _numeric)
    if time is not None:
        roles[time] = (
            "`time` must be a Date or Datetime",
            lambda d: d == pl.Date or isinstance(d, pl.Datetime),
        )
    for name, (rule, accepts) in roles.items():
        dtype = schema.get(name)
        if dtype is not None and not accepts(dtype):
            hint = " (use the multi-class functions or `reduction=`)" if is_vector(dtype) else ""
            problems.append(f"column {name!r} holds {dtype}, but {rule}{hint}")
    if problems:
        raise CalibrationDataError("invalid calibration data: " + "; ".join(problems))
    return lf


def check_pos_label(lf: pl.LazyFrame, label: str, pos_label: Any) -> None:
    """Raise :class:`CalibrationDataError` when labels exist and none equals `pos_label`.

    A `pos_label` that no label equals makes every row a negative: a mistyped value
    (``"Yes"`` for ``"yes"``, ``"1"`` for ``1``) would score a log of one class, which
    scikit-learn refuses too ("pos_label=... is not a valid label"). Reads `label` once.
    """
    seen = pl.col(label).drop_nulls().unique().sort().head(6).implode()
    found = lf.select((pl.col(label) == pos_label).any().alias("found"), seen.alias("seen"))
    row = found.collect().row(0, named=True)
    if not row["found"] and row["seen"]:
        labels = ", ".join(map(repr, row["seen"][:5])) + (", ..." if len(row["seen"]) > 5 else "")
        msg = (
            f"invalid calibration data: column {label!r}: no label equals "
            f"pos_label={pos_label!r}, so every row would be a negative (labels: {labels})"
        )
        raise CalibrationDataError(msg)


def problem_counts(
    lf: pl.LazyFrame, checks: Sequence[Check], extra: Sequence[pl.Expr] = ()
) -> pl.LazyFrame:
    """One aggregating query: the row count, and per check its bad rows and an example
    (and the `extra` aggregates, in the same pass)."""
    counts = [
        (check.bad.fill_null(False) if check.whole else check.bad.sum()).alias(f"n{i}")
        for i, check in enumerate(checks)
    ]
    shown = [
        (check.shown if check.whole else check.shown.filter(check.bad).first()).alias(f"e{i}")
        for i, check in enumerate(checks)
        if check.shown is not None
    ]
    return lf.select(pl.len().alias("rows"), *counts, *shown, *extra)


def raise_for_problems(counts: pl.DataFrame, checks: Sequence[Check]) -> None:
    """Raise :class:`CalibrationDataError` listing every check with bad rows, if any."""
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


@positional_options("pc.validate", ["weight"])
def validate(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    weight: str | None = None,
    columns: Sequence[str] = (),
    pos_label: Any = None,
) -> None:
    """Raise :class:`CalibrationDataError` if the data cannot give calibration metrics.

    Reads the data once (on a LazyFrame, the check is collected here): one
    aggregating query counting the rows each check refuses; with `pos_label`, the
    labels once more, to check that one of them equals it.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    weight
        Name of an optional column of non-negative sample weights (keyword-only, as
        everywhere; by position it still works, with a ``DeprecationWarning``, until
        0.3.0).
    columns
        Further column names that must exist (group keys, a time column).
    pos_label
        The label value of the positive class, when labels are not 0/1.

    Raises
    ------
    CalibrationDataError
        A ``ValueError`` naming each column, its problem and how many rows have it:
        a missing column, a non-numeric probability, label or weight, probabilities
        outside [0, 1] or NaN, labels other than 0/1 (with `pos_label`, NaN labels, or
        a `pos_label` that no label equals), negative, NaN, infinite or subnormal
        weights, weights summing to 1e300 or more. Null values are not errors: those
        rows are ignored.

    See Also
    --------
    refused_rows : the same checks counted per group, as an expression.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.2, 1.5, None, 0.7], "y": [0, 1, 1, 3]})
    >>> pc.validate(df, "p", "y")
    Traceback (most recent call last):
    ...
    polars_calib._core.validation.CalibrationDataError: invalid calibration data: column 'p':
    probability outside [0, 1] in 1 of 4 rows (e.g. 1.5); column 'y': label not 0 or 1 in 1 of
    4 rows (e.g. 3.0)
    >>> pc.validate(df.filter(pl.col("p") < 1, pl.col("y") < 2), "p", "y")
    """
    lf = check_schema(data, prob, label, weight, columns, pos_label=pos_label)
    checks = binary_problem(prob, label, weight, pos_label).checks
    raise_for_problems(problem_counts(lf, checks).collect(), checks)
    if pos_label is not None:
        check_pos_label(lf, label, pos_label)


def refused_rows(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    """Count, per group, the rows each data check refuses: why a metric is null.

    The same checks as the metrics' null policy and :func:`validate`, as an
    aggregating expression for ``select``, ``group_by().agg`` or ``over``.

    Parameters
    ----------
    prob, label, weight, pos_label
        As :func:`polars_calib.ece`.

    Returns
    -------
    Expr
        A struct with ``rows`` (UInt32, all rows of the group), ``refused`` (rows
        refused for any reason) and one count per check, named by its problem
        (``"probability NaN"``, ``"probability outside [0, 1]"``, ``"label not 0 or
        1"``, with `pos_label` ``"label NaN"``, and with weights ``"weight negative"``,
        ``"weight NaN or infinite"``, ``"weight positive but subnormal (below
        2.2e-308)"`` and the group's own check, ``"weights of a group summing to 1e300
        or more (rescale them)"``, 1 when the group's total weight is that large).

    See Also
    --------
    validate : raise on the first bad frame.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "model": ["a", "a", "b", "b"],
    ...     "p": [0.2, 1.5, 0.3, 0.7],
    ...     "y": [0, 1, 1, 3],
    ... })
    >>> df.group_by("model", maintain_order=True).agg(
    ...     ece=pc.ece("p", "y"), why=pc.refused_rows("p", "y")
    ... ).unnest("why").select("model", "ece", "refused", "probability outside [0, 1]",
    ...                        "label not 0 or 1")
    shape: (2, 5)
    ┌───────┬──────┬─────────┬────────────────────────────┬──────────────────┐
    │ model ┆ ece  ┆ refused ┆ probability outside [0, 1] ┆ label not 0 or 1 │
    │ ---   ┆ ---  ┆ ---     ┆ ---                        ┆ ---              │
    │ str   ┆ f64  ┆ u32     ┆ u32                        ┆ u32              │
    ╞═══════╪══════╪═════════╪════════════════════════════╪══════════════════╡
    │ a     ┆ null ┆ 1       ┆ 1                          ┆ 0                │
    │ b     ┆ null ┆ 1       ┆ 0                          ┆ 1                │
    └───────┴──────┴─────────┴────────────────────────────┴──────────────────┘
    """
    problem = binary_problem(prob, label, weight, pos_label)
    counts = [check.bad.fill_null(False).sum().alias(check.problem) for check in problem.checks]
    return pl.struct(pl.len().alias("rows"), problem.refused.sum().alias("refused"), *counts).alias(
        "refused_rows"
    )
