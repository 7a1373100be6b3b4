"""Turning user arguments into expressions, and checking parameters at build time."""

from __future__ import annotations

from collections.abc import Collection
from typing import Union

import polars as pl

IntoExpr = Union[str, pl.Expr]
"""A column name or a Polars expression."""


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


def check_n_bins(n_bins: object) -> int:
    """Return `n_bins` if it is a positive int, else raise ``ValueError``."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1:
        msg = f"`n_bins` must be a positive int, got {n_bins!r}"
        raise ValueError(msg)
    return n_bins


def check_choice(argument: str, value: object, choices: Collection[str]) -> str:
    """Return `value` if it is one of `choices`, else raise ``ValueError`` naming `argument`."""
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        msg = f"`{argument}` must be one of {options}, got {value!r}"
        raise ValueError(msg)
    return value
