"""Per-group values as row expressions: each row's group among a small table of groups.

Streaming-friendly lookups only (``replace_strict`` and ``search_sorted`` would make
Polars' streaming engine fall back to memory for the column): a key's code is a
``gather`` from a dense array (integer keys) or a cast to an ``Enum`` (any other key),
and a group's values are ``gather`` s from literal columns, so the cost per row does
not grow with the number of groups. Used by the Newton fits (each row's parameters
at a step) and by applying a calibrator.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

__all__ = [
    "DENSE",
    "dense_slot",
    "dense_span",
    "gather",
    "group_index",
    "key_code",
    "key_range",
    "per_group",
]

DENSE = 1 << 22  # integer keys spanning up to this many values are looked up in a dense array


def dense_span(known: pl.Series) -> tuple[int, int] | None:
    """Return ``(low, size)`` of a dense array for the distinct non-null integer keys `known`.

    Key ``v`` is in slot ``v - low``, with a spare slot at either end (``low`` is the
    smallest key less 1); None if they are not integers or span more than :data:`DENSE`.
    """
    if not known.len() or not known.dtype.is_integer():
        return None
    smallest, largest = int(known.min()), int(known.max())  # type: ignore[arg-type]
    if largest - smallest >= DENSE or smallest <= -(2**63):
        return None
    return smallest - 1, largest - smallest + 3


def dense_slot(expr: pl.Expr, span: tuple[int, int]) -> pl.Expr:
    """Return each row's slot in a dense array of :func:`dense_span`.

    A key outside the fitted range is clipped onto a spare end slot (one clip, no
    mask); a null key gives null.
    """
    low, size = span
    return (expr.cast(pl.Int64) - low).clip(0, size - 1)


def key_range(frame: pl.DataFrame, group: list[str]) -> tuple[int, int] | None:
    """Return the smallest and largest key of `frame`'s rows, or None.

    None unless `group` is one integer key without nulls spanning at most
    :data:`DENSE` values.
    """
    if len(group) != 1 or frame[group[0]].null_count():
        return None
    span = dense_span(frame[group[0]])
    return None if span is None else (span[0] + 1, span[0] + span[1] - 2)


def per_group(
    key_exprs: list[pl.Expr],
    table: pl.DataFrame,
    columns: NDArray[np.float64],
    default: list[float],
    covering: tuple[int, int] | None = None,
) -> list[pl.Expr]:
    """Return each row's value of every column of `columns` for the row's group.

    `columns` holds one row per row of `table` (its key columns); column ``j`` gives
    ``default[j]`` to a group not in `table`.

    One integer key without nulls (the usual ``by="model_id"``) looks the values
    up directly: a ``gather`` from a dense array of each column, the defaults in
    its empty slots, by the row's slot (a null key onto a spare slot), so the
    result has no nulls to fill. With `covering` (:func:`key_range` of the rows
    looked up), the arrays span those keys and the key itself, less the smallest,
    is the slot (no clip, no null). Any other key gathers by the row's
    :func:`group_index`, then fills the default.
    """
    if len(table.columns) == 1 and not table[:, 0].null_count():
        span = dense_span(table[:, 0])
        slot, low, size = None, 0, 0
        if covering is not None:
            low, size = covering[0], covering[1] - covering[0] + 1
            slot = key_exprs[0] if low == 0 else key_exprs[0].cast(pl.Int64) - low
        elif span is not None:
            low, size = span
            slot = dense_slot(key_exprs[0], span).fill_null(0)
        if slot is not None:
            slots = table[:, 0].cast(pl.Int64).to_numpy() - low
            lookups = []
            for j, value in enumerate(default):
                dense = np.full(size, value, dtype=np.float64)
                dense[slots] = columns[:, j]
                lookups.append(pl.lit(pl.Series(dense)).gather(slot))
            return lookups
    code = group_index(key_exprs, table)
    return [
        gather(pl.Series(columns[:, j], dtype=pl.Float64), code).fill_null(value)
        for j, value in enumerate(default)
    ]


def key_code(expr: pl.Expr, values: pl.Series) -> tuple[pl.Expr, list[int]]:
    """Return each row's code among the distinct `values` (null if not among them), and theirs.

    Streaming-friendly lookups only (``replace_strict`` and ``search_sorted`` would
    make Polars' streaming engine fall back to memory for the column): integer keys
    spanning at most :data:`DENSE` values are a ``gather`` from a dense array
    indexed by ``key - min + 1``, clipped onto the null slot at either end (one
    clip, no mask); any other key is cast to String and then to an
    ``Enum`` of the fitted values' strings (non-strict: another value becomes null),
    whose physical code is the position. A null key has a code of its own when a
    null group was fitted.
    """
    distinct = values.unique(maintain_order=True)
    known = distinct.drop_nulls()
    n = known.len()
    position = {value: i for i, value in enumerate(known.to_list())}
    codes = [n if value is None else position[value] for value in values.to_list()]
    code: pl.Expr
    span = dense_span(known)
    if not n:
        code = pl.lit(None, pl.Int64)
    elif span is not None:
        low, size = span
        dense: list[int | None] = [None] * size
        for value, i in position.items():
            dense[value - low] = i
        code = pl.lit(pl.Series(dense, dtype=pl.Int64)).gather(dense_slot(expr, span))
    else:
        labels = known.cast(pl.String).to_list()
        code = expr.cast(pl.String).cast(pl.Enum(labels), strict=False).to_physical()
        code = code.cast(pl.Int64)
    if distinct.null_count():
        code = pl.when(expr.is_null()).then(pl.lit(n, pl.Int64)).otherwise(code)
    return code, codes


def group_index(key_exprs: list[pl.Expr], table: pl.DataFrame) -> pl.Expr:
    """Return each row's position (Int64) among the rows of `table` (its key columns), or null.

    Each key column's code (:func:`key_code`), the codes combined into one integer,
    and that integer's code among the fitted rows' combinations: every step is an
    elementwise ``gather`` or cast, so the lookup streams, and its cost per row does
    not grow with the number of groups.
    """
    names = table.columns
    if not names:
        return pl.lit(0, pl.Int64)
    if len(names) == 1:
        code, codes = key_code(key_exprs[0], table[names[0]])
        if codes == list(range(table.height)):
            return code  # one key, distinct values: its code is the row's position
    combined: pl.Expr | None = None
    rows = [0] * table.height
    stride = 1
    for expr, name in zip(key_exprs, names):
        code, codes = key_code(expr, table[name])
        combined = code * stride if combined is None else combined + code * stride
        rows = [r + c * stride for r, c in zip(rows, codes)]
        stride *= max(codes, default=0) + 1
        if stride > 2**62:
            msg = "too many combinations of key values to look them up"
            raise ValueError(msg)
    assert combined is not None
    index, _ = key_code(combined, pl.Series(rows, dtype=pl.Int64))
    return index


def gather(values: pl.Series, index: pl.Expr) -> pl.Expr:
    """Return ``values[index]`` per row: a gather from a literal column."""
    return pl.lit(values).gather(index)
