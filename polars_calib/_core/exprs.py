"""Turning user arguments (column names, expressions, group keys) into expressions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

__all__ = ["GroupKeys", "IntoExpr", "Keys", "output_name", "to_expr"]

IntoExpr = str | pl.Expr
"""A column name or a Polars expression."""

Keys = IntoExpr | Sequence[IntoExpr] | None
"""Group keys: a column name, an expression, a sequence of them, or None for one group."""

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


def to_expr(value: IntoExpr, argument: str) -> pl.Expr:
    """Return `value` as an expression: a string names a column.

    Raises ``TypeError`` naming `argument` for anything else.
    """
    if isinstance(value, str):
        return pl.col(value)
    if isinstance(value, pl.Expr):
        return value
    msg = f"`{argument}` must be a column name or a Polars expression, got {type(value).__name__}"
    raise TypeError(msg)


def output_name(value: IntoExpr, argument: str) -> str:
    """The name of the column `value` gives (a name, or an expression's output name)."""
    name = to_expr(value, argument).meta.output_name(raise_if_undetermined=False)
    if name is None:
        msg = f"`{argument}` must have an output name: give the expression an alias"
        raise ValueError(msg)
    return name


class GroupKeys:
    """Checked group keys: the expressions and the names of the columns they make."""

    def __init__(self, by: Keys, reserved: frozenset[str] = frozenset()) -> None:
        values: list[IntoExpr] = (
            [] if by is None else [by] if isinstance(by, (str, pl.Expr)) else list(by)
        )
        self.exprs = [to_expr(value, "by") for value in values]
        self.names = [output_name(value, "by") for value in values]
        for name in self.names:
            if name in reserved:
                msg = f"`by` cannot hold {name!r}: the result has a column of that name"
                raise ValueError(msg)
        if len(set(self.names)) != len(self.names):
            msg = f"`by` names a column twice: {self.names}"
            raise ValueError(msg)

    def computed(self) -> list[pl.Expr]:
        """The keys that are expressions rather than plain columns (to add to a frame)."""
        return [
            expr
            for expr, name in zip(self.exprs, self.names)
            if not expr.meta.is_column() or expr.meta.output_name() != name
        ]

    def added_to(self, frame: FrameT) -> FrameT:
        """`frame` with the computed keys added under their names (plain keys: as it is).

        A key reading a column that `frame` lacks raises ``ColumnNotFoundError`` from
        the schema (no data read); callers check :meth:`columns` first.
        """
        added = self.computed()
        return frame.with_columns(added) if added else frame

    def columns(self) -> list[str]:
        """The names of existing columns the keys read (for the schema check)."""
        return sorted({root for expr in self.exprs for root in expr.meta.root_names()})
