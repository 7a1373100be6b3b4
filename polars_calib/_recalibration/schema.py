"""The calibrator file's schema: a small declarative checker naming the field of each problem.

A saved calibrator (:meth:`polars_calib.Calibrator.save`) is read back only after
every field has been checked: its type, its range, list lengths, the order of
isotonic points and histogram edges, and the group keys (one row per group, the
key columns those of ``by``). A field is a *rule*, a function of its value and its
path (``params.rows[2].x``) that raises :class:`InvalidFileError` naming both; the
rules of a file are tables of such functions, below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

from polars_calib._core.options import (
    CALIBRATION_METHODS,
    CLOSED,
    FALLBACKS,
    REDUCTIONS,
    STRATEGIES,
)
from polars_calib._core.validation import CalibrationDataError
from polars_calib._recalibration.maps import PARAMETERS

__all__ = ["InvalidFileError", "Rule", "check_columns", "check_content", "check_frame"]

Rule = Callable[[Any, str], None]
"""A field's check: ``rule(value, path)`` returns, or raises :class:`InvalidFileError`."""

METADATA = ("count", "iterations", "fallback", "reason")
"""The columns of ``params`` that are neither keys nor parameters."""


class InvalidFileError(CalibrationDataError):
    """A field of a calibrator file is missing, of the wrong type or out of range."""


def fail(path: str, problem: str) -> None:
    """Raise :class:`InvalidFileError` for the field at `path`."""
    raise InvalidFileError(f"{path}: {problem}")


def _shown(value: Any) -> str:
    """Return `value` for a message, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def integer(low: int | None = None, high: int | None = None) -> Rule:
    """Return the rule of an integer (not a bool) in ``[low, high]``."""

    def rule(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            fail(path, f"must be an integer, got {_shown(value)}")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"in [{low}, {high}]" if high is not None else f"at least {low}"
            fail(path, f"must be an integer {bounds}, got {value}")

    return rule


def number(low: float = -math.inf, high: float = math.inf, *, above: bool = False) -> Rule:
    """Return the rule of a finite number in ``[low, high]`` (``(low, high]`` with `above`)."""

    def rule(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail(path, f"must be a number, got {_shown(value)}")
        if not math.isfinite(value):
            fail(path, f"must be a finite number, got {value}")
        if value < low or value > high or (above and value == low):
            interval = f"{'(' if above else '['}{low}, {high}]"
            fail(path, f"must be in {interval}, got {value}")

    return rule


def string(value: Any, path: str) -> None:
    """Check a string."""
    if not isinstance(value, str):
        fail(path, f"must be a string, got {_shown(value)}")


def boolean(value: Any, path: str) -> None:
    """Check a bool."""
    if not isinstance(value, bool):
        fail(path, f"must be true or false, got {_shown(value)}")


def scalar(value: Any, path: str) -> None:
    """Check a JSON scalar: null, a bool, a string or a finite number."""
    if value is not None and not isinstance(value, (bool, str)):
        number()(value, path)


def choice(options: Collection[str | None]) -> Rule:
    """Return the rule of one of `options`."""

    def rule(value: Any, path: str) -> None:
        if not isinstance(value, (str, type(None))) or value not in options:
            fail(path, f"must be one of {', '.join(map(repr, options))}, got {_shown(value)}")

    return rule


def optional(inner: Rule) -> Rule:
    """Return the rule of null or a value `inner` accepts."""

    def rule(value: Any, path: str) -> None:
        if value is not None:
            inner(value, path)

    return rule


def array(item: Rule, *, length: int | None = None, least: int = 0, order: bool = False) -> Rule:
    """Return the rule of a list of items: its `length` (or at `least`), sorted with `order`."""

    def rule(value: Any, path: str) -> None:
        if not isinstance(value, list):
            fail(path, f"must be a list, got {_shown(value)}")
        if length is not None and len(value) != length:
            fail(path, f"must hold {length} values, got {len(value)}")
        if len(value) < least:
            fail(path, f"must hold at least {least} value(s), got {len(value)}")
        for i, entry in enumerate(value):
            item(entry, f"{path}[{i}]")
        if order:
            for i in range(1, len(value)):
                if value[i] < value[i - 1]:
                    fail(path, f"must be non-decreasing, but [{i}] = {value[i]} < {value[i - 1]}")

    return rule


def record(fields: Mapping[str, Rule], required: Collection[str]) -> Rule:
    """Return the rule of an object with `fields` (the `required` ones present), no others."""

    def rule(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            fail(path, f"must be an object, got {_shown(value)}")
        prefix = f"{path}." if path else ""
        for name in value:
            if name not in fields:
                known = ", ".join(fields)
                fail(f"{prefix}{name}", f"is not a field of this object (known: {known})")
        for name in required:
            if name not in value:
                fail(f"{prefix}{name}", "is missing")
        for name, entry in value.items():
            fields[name](entry, f"{prefix}{name}")

    return rule


def dictionary(item: Rule) -> Rule:
    """Return the rule of an object of any names whose values `item` accepts."""

    def rule(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            fail(path, f"must be an object, got {_shown(value)}")
        for name, entry in value.items():
            item(entry, f"{path}.{name}")

    return rule


def distinct_names(value: Any, path: str) -> None:
    """Check a list of distinct strings."""
    array(string)(value, path)
    if len(set(value)) != len(value):
        fail(path, f"must be distinct names, got {_shown(value)}")


FRAME = record(
    {"columns": dictionary(string), "rows": array(dictionary(lambda value, path: None))},
    ("columns", "rows"),
)
"""The shape of ``params`` and ``global_params``: column dtypes and rows."""

OPTIONS: dict[str, Rule] = {
    "smoothed": boolean,
    "n_bins": integer(1),
    "strategy": choice(STRATEGIES),
    "closed": choice(CLOSED),
    "fallback": choice((None, *FALLBACKS)),
    "min_rows": integer(1),
    "sum_tol": number(0.0, 1.0),
    "pos_label": scalar,
    "n_classes": optional(integer(1)),
    "eps": number(0.0, 0.5),
}
"""The options of a fit a file records (each optional; a histogram needs its bins')."""


def content_rule(format_name: str, format_version: int) -> Rule:
    """Return the rule of the whole file, up to the rows of its parameter tables."""
    fields: dict[str, Rule] = {
        "format": choice((format_name,)),
        "format_version": integer(1, format_version),
        "package_version": string,
        "method": choice(CALIBRATION_METHODS),
        "reduction": choice((None, *REDUCTIONS)),
        "by": distinct_names,
        "options": record(OPTIONS, ()),
        "schema": dictionary(string),
        "params": FRAME,
        "global_params": optional(FRAME),
    }
    required = [name for name in fields if name not in ("package_version", "global_params")]
    return record(fields, required)


def check_content(content: Any, format_name: str, format_version: int) -> None:
    """Check a file's fields and how they agree (method, reduction, options, fallback)."""
    if not isinstance(content, dict) or content.get("format") != format_name:
        fail("format", f"must be {format_name!r}: not a calibrator file")
    version = content.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > format_version:
        fail(
            "format_version",
            f"is {version}; this polars_calib reads calibrator files up to format version "
            f"{format_version} (upgrade polars_calib)",
        )
    content_rule(format_name, format_version)(content, "")
    method, reduction, options = content["method"], content["reduction"], content["options"]
    if method == "temperature" and reduction is not None:
        fail("reduction", f"must be null for method 'temperature', got {reduction!r}")
    if method == "histogram":
        for name in ("n_bins", "strategy", "closed"):
            if name not in options:
                fail(f"options.{name}", "is missing (a histogram's bins)")
    if reduction == "classwise" and content["params"]["rows"] and options.get("n_classes") is None:
        fail("options.n_classes", "is missing (a classwise calibrator's classes)")
    fallback = options.get("fallback")
    if method == "sigmoid" and fallback == "identity":
        fail("options.fallback", "cannot be 'identity' for method 'sigmoid' (it has none)")
    has_global = content.get("global_params") is not None
    if (fallback == "global") != has_global:
        fail(
            "global_params",
            "must be given exactly when options.fallback is 'global' "
            f"(fallback {fallback!r}, global_params {'given' if has_global else 'null'})",
        )


def parameter_rules(method: str, options: Mapping[str, Any]) -> dict[str, tuple[str, Rule]]:
    """Return each parameter column's dtype and the rule of its values in a row."""
    probability = number(0.0, 1.0)
    if method in ("platt", "sigmoid", "beta"):
        return {name: ("Float64", number()) for name in PARAMETERS[method]}
    if method == "temperature":
        return {"temperature": ("Float64", number(0.0, above=True))}
    if method == "isotonic":
        points = array(probability, least=1, order=True)
        return {"x": ("List(Float64)", points), "y": ("List(Float64)", points)}
    n_bins = options["n_bins"]
    return {
        "edges": ("List(Float64)", array(probability, length=n_bins + 1, order=True)),
        "values": ("List(Float64)", array(optional(probability), length=n_bins)),
    }


def check_columns(
    columns: Mapping[str, str],
    path: str,
    keys: list[str],
    known: Mapping[str, tuple[str | None, Rule]],
    required: list[str],
) -> None:
    """Check a parameter table's declared `columns` (name to dtype): every `required`
    name present, every other one a key or `known`, and each known one of its dtype."""
    for name in required:
        if name not in columns:
            fail(f"{path}.{name}", "is missing")
    for name, dtype in columns.items():
        if name not in known and name not in keys:
            fail(f"{path}.{name}", "is neither a key (by) nor a column of this method")
        if name in known and dtype != known[name][0]:
            fail(f"{path}.{name}", f"must be {known[name][0]!r}, got {_shown(dtype)}")


def check_frame(
    frame: Mapping[str, Any],
    path: str,
    keys: list[str],
    method: str,
    options: Mapping[str, Any],
    classes: int | None,
) -> None:
    """Check a parameter table's columns and each row's values (not the key values).

    `keys` are its key columns (``class`` among them when keyed, checked here as an
    integer below `classes`); every row holds exactly the declared columns.
    """
    columns: Mapping[str, str] = frame["columns"]
    rules = parameter_rules(method, options)
    high = None if classes is None else classes - 1
    known: dict[str, tuple[str | None, Rule]] = {
        "count": ("Int64", integer(0)),
        "iterations": ("Int64", optional(integer(0))),
        "fallback": ("String", choice((None, *FALLBACKS))),
        "reason": ("String", optional(string)),
        **rules,
    }
    if "class" in keys:
        known["class"] = ("Int32", integer(0, high))
    check_columns(columns, f"{path}.columns", keys, known, required=[*keys, *rules])
    names = set(columns)
    for i, row in enumerate(frame["rows"]):
        where = f"{path}.rows[{i}]"
        if set(row) != names:
            missing, extra = sorted(names - set(row)), sorted(set(row) - names)
            fail(where, f"must hold the declared columns (missing {missing}, extra {extra})")
        for name, (_, rule) in known.items():
            if name in row:
                rule(row[name], f"{where}.{name}")
        if method == "isotonic" and len(row["x"]) != len(row["y"]):
            size, got = len(row["x"]), len(row["y"])
            fail(f"{where}.y", f"must hold as many values as x ({size}), got {got}")
