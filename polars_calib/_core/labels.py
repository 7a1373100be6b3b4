"""Labels that name a group by its key values, such as ``sex=F, age=65+``, unambiguously.

A value (or a key's name) that could be misread is quoted: empty, the word ``null``,
or holding a separator (``,`` ``=``), a quote, a backslash, a control character, or
whitespace at either end; inside quotes, ``\\`` and ``"`` are escaped with a
backslash. A null value is written ``null``, bare. So the string ``"null"`` reads
``a="null"`` where a null reads ``a=null``, and a value holding ``", b=y"`` cannot
pass for a second key: each label names one group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

__all__ = ["key_label", "quoted_name"]

# What a value or name is quoted for (see the module).
_NEEDS_QUOTES = r'[,="\\\x00-\x1f]|^\s|\s$|^$|^null$'


def key_label(names: Sequence[str]) -> pl.Expr:
    """Label each row by its values of the keys `names`: ``a=x, b=y`` (String)."""
    parts = [
        pl.concat_str(pl.lit(f"{quoted_name(name)}="), _quoted(pl.col(name).cast(pl.String)))
        for name in names
    ]
    return pl.concat_str(parts, separator=", ")


def quoted_name(name: str) -> str:
    """Return a key's name as a label writes it (quoted when it could be misread)."""
    if re.search(_NEEDS_QUOTES, name) is None:
        return name
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _quoted(value: pl.Expr) -> pl.Expr:
    """Return a String value as a label writes it: ``null``, bare, or quoted and escaped."""
    escaped = value.str.replace_all("\\", "\\\\", literal=True).str.replace_all(
        '"', '\\"', literal=True
    )
    return (
        pl.when(value.is_null())
        .then(pl.lit("null"))
        .when(value.str.contains(_NEEDS_QUOTES))
        .then(pl.concat_str(pl.lit('"'), escaped, pl.lit('"')))
        .otherwise(value)
    )
