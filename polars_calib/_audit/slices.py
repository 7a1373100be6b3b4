"""The slices of an audit: its attribute sets, their labels and the limit on their number.

A slice fixes the values of a set of attributes (none: the overall population). The
audit reports every slice of every set of up to ``max_order`` attributes that holds at
least one row.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import polars as pl

from polars_calib._core.exprs import IntoExpr, Keys, output_name
from polars_calib._core.labels import key_label
from polars_calib._core.validation import CalibrationDataError

__all__ = [
    "MAX_SLICES",
    "SLICE_COLUMNS",
    "attribute_sets",
    "check_attributes",
    "check_max_order",
    "check_slice_count",
    "count_slices",
    "key_values",
    "slice_label",
]

MAX_SLICES = 10_000
"""The most slices an audit reports; more raise ``ValueError`` (lower ``max_order``)."""

SLICE_COLUMNS = ("slice", "order", "attributes")
"""The columns naming each slice, before its attributes (`by` cannot use them)."""

# Key dtypes an attribute may have: values that name a group.
_GROUPABLE = (pl.String, pl.Categorical, pl.Enum, pl.Boolean, pl.Date)


def key_values(by: Keys, within: Keys) -> tuple[list[IntoExpr], int]:
    """Return the keys of the finest cells (`within`'s, then `by`'s) and how many are `within`'s.

    Raise ``ValueError`` when a column is in both: a key is either kept whole or sliced.
    """
    values = [
        [] if keys is None else [keys] if isinstance(keys, (str, pl.Expr)) else list(keys)
        for keys in (within, by)
    ]
    sliced = {output_name(value, "by") for value in values[1]}
    for value in values[0]:
        name = output_name(value, "within")
        if name in sliced:
            msg = (
                f"{name!r} is in both `within` (kept whole: a separate audit per value) "
                "and `by` (sliced): name it in one of them"
            )
            raise ValueError(msg)
    return [*values[0], *values[1]], len(values[0])


def check_max_order(max_order: object, n: int) -> int:
    """Return `max_order` checked against `n` attributes (default: 2, at most `n`)."""
    if n == 0:
        msg = "`by` must name at least one attribute to audit"
        raise ValueError(msg)
    if max_order is None:
        return min(2, n)
    if isinstance(max_order, bool) or not isinstance(max_order, int):
        msg = f"`max_order` must be an int from 1 to len(by) = {n}, got {max_order!r}"
        raise TypeError(msg)
    if not 1 <= max_order <= n:
        msg = f"`max_order` must be from 1 to len(by) = {n}, got {max_order!r}"
        raise ValueError(msg)
    return max_order


def check_attributes(schema: pl.Schema, by: Sequence[str], argument: str = "by") -> None:
    """Raise unless each attribute holds values that name groups (not floats, lists, structs)."""
    for name in by:
        dtype = schema[name]
        if not (dtype.is_integer() or isinstance(dtype, _GROUPABLE) or dtype == pl.Null):
            hint = (
                f" (bin it first, e.g. pl.col({name!r}).bin_intervals([...], labels=[...]))"
                if dtype.is_float()
                else ""
            )
            msg = (
                f"`{argument}` column {name!r} holds {dtype}: an audit key must be a string, "
                f"categorical, enum, boolean, integer or date column{hint}"
            )
            raise CalibrationDataError(msg)


def attribute_sets(by: Sequence[str], max_order: int) -> list[tuple[str, ...]]:
    """The empty set (overall), then every set of 1 .. `max_order` attributes, in `by` order."""
    return [
        subset for order in range(max_order + 1) for subset in itertools.combinations(by, order)
    ]


def count_slices(cells: pl.DataFrame, sets: Sequence[tuple[str, ...]]) -> int:
    """The slices of `sets` that hold rows: the value combinations met in the finest cells."""
    return sum(cells.select(subset).n_unique() if subset else 1 for subset in sets)


def check_slice_count(n_slices: int, max_order: int) -> None:
    """Raise ``ValueError`` if `n_slices` is over :data:`MAX_SLICES`."""
    if n_slices > MAX_SLICES:
        msg = (
            f"the audit would report {n_slices:,} slices, more than the limit of "
            f"{MAX_SLICES:,}: use a lower `max_order` (now {max_order}), fewer attributes "
            "in `by`, or attributes with fewer values (group the rare ones)"
        )
        raise ValueError(msg)


def slice_label(subset: tuple[str, ...]) -> pl.Expr:
    """Name each slice: ``"overall"``, or ``a=x, b=y`` (a null value written ``null``).

    A value (or name) that could be misread is quoted, so that a label names one slice
    only: the string ``"null"`` is ``a="null"`` where a null is ``a=null``, and a value
    holding ``", b=y"`` stays inside its quotes (:func:`polars_calib._core.labels.key_label`).
    """
    if not subset:
        return pl.lit("overall")
    return key_label(subset)
