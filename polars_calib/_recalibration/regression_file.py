"""Reading a saved regression calibrator: every field of its JSON file checked.

:func:`load_regression_calibrator` is the reader of ``RegressionCalibrator.save``
(:mod:`polars_calib._recalibration.regression`); its rules follow the file's
``format_version`` (see ``REGRESSION_FORMAT_VERSION``).
"""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path
from typing import Any, get_args

import polars as pl

from polars_calib._core.quantiles import check_levels
from polars_calib._core.validation import CalibrationDataError
from polars_calib._recalibration.calibrator import _frame_from_json
from polars_calib._recalibration.regression import (
    _PARAMETER,
    REGRESSION_FORMAT,
    REGRESSION_FORMAT_VERSION,
    CalibratorForm,
    RegressionCalibrator,
    RegressionRecalibration,
)
from polars_calib._recalibration.schema import (
    InvalidFileError,
    Rule,
    array,
    boolean,
    check_columns,
    choice,
    dictionary,
    distinct_names,
    fail,
    integer,
    number,
    optional,
    record,
    string,
)

__all__ = ["load_regression_calibrator"]


def _quantile_columns(value: Any, path: str) -> None:
    """The quantile form's column: a name, or a list of K names."""
    if isinstance(value, list):
        array(string, least=1)(value, path)
    else:
        string(value, path)


_FORM_OPTIONS: dict[str, tuple[str, ...]] = {
    "gaussian": ("mean", "std"),
    "interval": ("lower", "upper"),
    "quantile": ("quantiles", "levels"),
    "ensemble": ("ensemble",),
}


def _check_form(content: dict[str, Any]) -> str:
    """Check the form's options (its columns given, the others' absent); return the form."""
    options, method = content["options"], content["method"]
    form = options.get("form", "gaussian")  # a version 1 file: Gaussian
    for other, names in _FORM_OPTIONS.items():
        for name in names:
            if other == form and options.get(name) is None:
                fail(f"options.{name}", f"is missing (a {form} calibrator's)")
            if other != form and options.get(name) is not None:
                fail(f"options.{name}", f"must be null for a {form} calibrator")
    allowed = {"gaussian": method, "ensemble": "isotonic"}.get(form, "conformal")
    if method not in ("conformal", allowed):
        fail("method", f"must be 'conformal' for a {form} calibrator, got {method!r}")
    if form == "quantile":
        try:
            check_levels(options["levels"])
        except ValueError as error:
            fail("options.levels", str(error))
        quantiles = options["quantiles"]
        if isinstance(quantiles, list) and len(quantiles) != len(options["levels"]):
            fail("options.quantiles", f"must name one column per level ({len(options['levels'])})")
    return str(form)


_CONTENT = record(
    {
        "format": choice((REGRESSION_FORMAT,)),
        "format_version": integer(1, REGRESSION_FORMAT_VERSION),
        "package_version": string,
        "method": choice(get_args(RegressionRecalibration)),
        "by": distinct_names,
        "options": record(
            {
                "form": choice(get_args(CalibratorForm)),
                "mean": optional(string),
                "std": optional(string),
                "lower": optional(string),
                "upper": optional(string),
                "quantiles": optional(_quantile_columns),
                "levels": optional(array(number(0.0, 1.0, above=True), least=1)),
                "ensemble": optional(string),
                "level": optional(number(0.0, 1.0, above=True)),
            },
            ("level",),
        ),
        "schema": dictionary(string),
        "params": record(
            {"columns": dictionary(string), "rows": lambda value, path: None},
            ("columns", "rows"),
        ),
    },
    ("format", "format_version", "method", "by", "options", "schema", "params"),
)


def _check_params(content: dict[str, Any]) -> None:
    """Check the parameter table's columns and each row's values (named by path)."""
    method, keys = content["method"], content["by"]
    form = _check_form(content)
    rules: dict[str, tuple[str, Rule]] = {
        "count": ("Int64", integer(0)),
        "fallback": ("Boolean", boolean),
    }
    if form == "quantile":
        width = len(content["options"]["levels"])
        rules["shift"] = ("List(Float64)", array(optional(number()), length=width))
    elif method == "isotonic":  # the Gaussian and ensemble forms' map of the PIT
        points = array(number(0.0, 1.0), least=2, order=True)
        rules |= {"x": ("List(Float64)", points), "y": ("List(Float64)", points)}
    elif form in ("interval", "ensemble"):
        rules["quantile"] = ("Float64", optional(number()))  # negative: the interval shrinks
    else:
        name = _PARAMETER[method]
        positive = number(0.0, above=True) if name == "scale" else optional(number(0.0))
        rules[name] = ("Float64", positive)
    columns = content["params"]["columns"]
    check_columns(columns, "params.columns", keys, rules, required=[*keys, *rules])
    rows = content["params"]["rows"]
    if not isinstance(rows, list):
        fail("params.rows", "must be a list")
    for i, row in enumerate(rows):
        where = f"params.rows[{i}]"
        if not isinstance(row, dict) or set(row) != set(columns):
            fail(where, f"must hold exactly the declared columns {sorted(columns)}")
        for column, (_, rule) in rules.items():
            rule(row[column], f"{where}.{column}")
        if method == "isotonic":
            _check_points(row["x"], row["y"], where)
    if form != "quantile" and method != "std_scaling" and content["options"]["level"] is None:
        fail("options.level", f"is missing (a {method} calibrator's level)")


def _check_points(x: list[float], y: list[float], where: str) -> None:
    """An isotonic map's points: as many y as x, x strictly increasing from 0 to 1."""
    if len(x) != len(y):
        fail(f"{where}.y", f"must hold as many values as x ({len(x)}), got {len(y)}")
    if x[0] != 0.0 or x[-1] != 1.0 or any(b <= a for a, b in pairwise(x)):
        fail(f"{where}.x", "must increase strictly from 0 to 1")
    if y[-1] != 1.0:
        fail(f"{where}.y", f"must end at 1, got {y[-1]}")


def load_regression_calibrator(path: str | Path) -> RegressionCalibrator:
    """Read a calibrator written by ``RegressionCalibrator.save``, checking every field.

    The file is JSON: ``format`` (``"polars_calib.regression_calibrator"``),
    ``format_version``, ``package_version``, ``method``, ``by``, ``options``
    (``mean``, ``std``, ``level``), ``schema`` and ``params`` (``columns``: name
    to dtype, and ``rows``). An infinite conformal quantile is written as null.

    Raises
    ------
    CalibrationDataError
        Not UTF-8 JSON, not a regression calibrator file, or a field that fails its
        check; the message names the field's path, such as ``params.rows[1].scale``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> train = pl.DataFrame({"y": [1.0, -3.0, 2.0], "mu": 0.0, "sigma": 1.0})
    >>> cal = pc.fit_regression_calibrator(train, "y", mean="mu", std="sigma")
    >>> path = cal.save(pathlib.Path(tempfile.mkdtemp()) / "cal.json")
    >>> pc.load_regression_calibrator(path).method
    'std_scaling'
    """
    where = str(path)
    try:
        content = json.loads(Path(path).read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, ValueError) as error:
        msg = f"{where!r} is not a regression calibrator file: {error}"
        raise CalibrationDataError(msg) from None
    try:
        if not isinstance(content, dict) or content.get("format") != REGRESSION_FORMAT:
            fail("format", f"must be {REGRESSION_FORMAT!r}: not a regression calibrator file")
        _CONTENT(content, "")
        _check_params(content)
        keys = list(content["by"])
        params = _frame_from_json(content["params"], "params", keys)
    except InvalidFileError as error:
        msg = f"{where!r}: {error}"
        raise CalibrationDataError(msg) from None
    options = content["options"]
    form = options.get("form", "gaussian")
    if form == "quantile":
        params = params.with_columns(pl.col("shift").list.eval(pl.element().fill_null(math.inf)))
    elif content["method"] in _PARAMETER:
        name = _PARAMETER[content["method"]]
        params = params.with_columns(pl.col(name).fill_null(math.inf))
    quantiles = options.get("quantiles")
    levels = options.get("levels")
    return RegressionCalibrator(
        method=content["method"],
        by=tuple(keys),
        params=params,
        mean=options.get("mean"),
        std=options.get("std"),
        level=options["level"],
        schema=dict(content["schema"]),
        form=form,
        lower=options.get("lower"),
        upper=options.get("upper"),
        quantiles=tuple(quantiles) if isinstance(quantiles, list) else quantiles,
        levels=None if levels is None else tuple(float(v) for v in levels),
        ensemble=options.get("ensemble"),
    )
