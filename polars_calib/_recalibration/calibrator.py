"""The calibrator: fitted maps per group, applied as an expression, saved as JSON.

:class:`Calibrator` holds the parameter table of a fit; its file format (a
readable, versioned JSON file) is :meth:`Calibrator.save` and :func:`load_calibrator`.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import polars as pl

from polars_calib._core.exprs import IntoExpr
from polars_calib._core.files import write_text
from polars_calib._core.options import (
    CalibrationMethod,
    Closed,
    Reduction,
    Strategy,
)
from polars_calib._core.validation import CalibrationDataError
from polars_calib._recalibration.apply import calibrated
from polars_calib._recalibration.evaluate import Evaluation, before_after
from polars_calib._recalibration.schema import InvalidFileError, check_content, check_frame, fail
from polars_calib._table.plan import FrameT
from polars_calib._version import __version__

__all__ = ["FORMAT", "FORMAT_VERSION", "Calibrator", "load_calibrator"]

FORMAT = "polars_calib.calibrator"
"""The ``format`` field of a saved calibrator."""

FORMAT_VERSION = 1
"""The version of the saved file's layout; loading refuses a newer one."""


@dataclass(frozen=True)
class Calibrator:
    """Recalibration maps fitted per group; see :func:`fit_calibrator`.

    Attributes
    ----------
    method
        ``"platt"``, ``"sigmoid"``, ``"beta"``, ``"isotonic"``, ``"histogram"`` or
        ``"temperature"``.
    reduction
        For probability vectors: ``"top_label"``, ``"confidence"`` or ``"classwise"``
        (one-vs-rest); None for binary data and temperature scaling.
    by
        The group-key columns.
    params
        One row per fitted group (and class): the keys, ``class`` (Int32, with the
        top-label and classwise reductions), ``count`` (Int64, rows used), the
        method's parameters, ``iterations`` (Int64 Newton steps over all the
        data, each one pass, of the iterative methods; a subsample's steps not
        counted; null otherwise), ``fallback`` (String: null when
        fitted, else ``"identity"`` or ``"global"``) and ``reason`` (String: why the
        group was not fitted).
    global_params
        With ``fallback="global"``: the same columns, fitted on all rows (per class
        for the keyed reductions), without the keys; else None.
    options
        The fit's options (``smoothed``, ``n_bins``, ``strategy``, ``closed``,
        ``fallback``, ``min_rows``, ``sum_tol``, ``pos_label``, ``n_classes``).
    schema
        The input column dtypes at fit time, as strings: the probability and each key.
    computed
        The keys of `by` that are expressions (``fit_calibrator(by=pl.col("ts").dt.year())``),
        by name: computed again from the data a calibrator is applied to. A calibrator
        with such keys works in memory but cannot be saved (Polars does not keep a
        serialized expression readable across its versions).
    """

    method: CalibrationMethod
    reduction: Reduction | None
    by: tuple[str, ...]
    params: pl.DataFrame
    global_params: pl.DataFrame | None = None
    options: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, str] = field(default_factory=dict)
    computed: dict[str, pl.Expr] = field(default_factory=dict, compare=False)

    def key_exprs(self) -> list[pl.Expr]:
        """Return the expression of each key of `by`: its column, or the expression fitted `by`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({
        ...     "model": ["a"] * 8 + ["b"] * 8,
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
        ...     "y": [0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1],
        ... })
        >>> cal = pc.fit_calibrator(
        ...     train, "p", "y", by=pl.col("model").str.to_uppercase(), min_rows=5
        ... )
        >>> cal.by, [str(key) for key in cal.key_exprs()]
        (('model',), ['col("model").str.to_uppercase()'])
        """
        return [self.computed.get(name, pl.col(name)) for name in self.by]

    @property
    def keys(self) -> list[str]:
        """The lookup keys of a row's parameters: `by`, then ``class`` when keyed."""
        keyed = self.reduction in ("top_label", "classwise")
        return [*self.by, *(["class"] if keyed else [])]

    def expr(self, prob: IntoExpr) -> pl.Expr:
        """Return the calibrated probability of each row, as an expression.

        Parameters
        ----------
        prob
            The probability column (binary), or the probability vectors, as at fit
            time. The group keys are read from the columns named in ``by``.

        Returns
        -------
        Expr
            Float64 (binary data, and the calibrated confidence of the predicted
            class with ``reduction="top_label"`` or ``"confidence"``), or
            ``List(Float64)`` vectors summing to 1 (``"temperature"`` and
            ``reduction="classwise"``). Null where the probability is null, refused
            (outside [0, 1], NaN; a bad vector), or its group was not seen at fit
            time and there is no ``fallback``.

        Notes
        -----
        Each row's group is found from its key columns (an integer key: a
        ``gather`` from a dense array indexed by the key; another key: a cast to
        an ``Enum`` of the fitted values), its parameters with a ``gather`` from
        literal columns of the parameter table: elementwise, so the expression
        streams, and the cost per row is independent of the number of groups; the
        literals, a few numbers per group, are part of the plan (a million groups
        make a plan of tens of megabytes). Isotonic and quantile-histogram maps
        also search their thresholds or edges (``search_sorted``), which Polars'
        streaming engine evaluates in memory for that column. With ``fallback``,
        a group not seen at fit time gets the identity map or the global fit.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
        ...     "y": [0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1],
        ... })
        >>> cal = pc.fit_calibrator(train, "p", "y", method="platt")
        >>> pl.DataFrame({"p": [0.05, 0.5, 0.95]}).with_columns(p_cal=cal.expr("p"))
        shape: (3, 2)
        ┌──────┬──────────┐
        │ p    ┆ p_cal    │
        │ ---  ┆ ---      │
        │ f64  ┆ f64      │
        ╞══════╪══════════╡
        │ 0.05 ┆ 0.064736 │
        │ 0.5  ┆ 0.689345 │
        │ 0.95 ┆ 0.986138 │
        └──────┴──────────┘
        """
        return calibrated(self, prob)

    def apply(
        self, data: FrameT, prob: str, *, alias: str | None = None, replace: bool = False
    ) -> FrameT:
        """Return `data` with the calibrated column added (``with_columns(cal.expr(prob))``).

        The key columns and the probability column are checked against the fit's
        dtypes from the schema (no data read; String, Categorical and Enum keys
        look each other up by their strings); a LazyFrame stays a plan. The new
        column is named `alias` (default ``f"{prob}_calibrated"``); a column of
        that name already in `data` (the probabilities themselves, a key) raises
        ``ValueError`` unless `replace` is True.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({
        ...     "model": ["a"] * 8 + ["b"] * 8,
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
        ...     "y": [0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1],
        ... })
        >>> cal = pc.fit_calibrator(train, "p", "y", by="model", min_rows=5)
        >>> cal.apply(pl.DataFrame({"model": ["a", "b"], "p": [0.5, 0.5]}), "p")
        shape: (2, 3)
        ┌───────┬─────┬──────────────┐
        │ model ┆ p   ┆ p_calibrated │
        │ ---   ┆ --- ┆ ---          │
        │ str   ┆ f64 ┆ f64          │
        ╞═══════╪═════╪══════════════╡
        │ a     ┆ 0.5 ┆ 0.809505     │
        │ b     ┆ 0.5 ┆ 0.5          │
        └───────┴─────┴──────────────┘
        """
        if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
            msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
            raise TypeError(msg)
        schema = data.collect_schema()
        read: list[str] = sorted(
            {root for expr in self.key_exprs() for root in expr.meta.root_names()}
        )
        problems = [f"column {name!r} is missing" for name in [prob, *read] if name not in schema]
        keys = {} if problems else data.lazy().select(self.key_exprs()).collect_schema()
        for name, dtype in keys.items():
            if not _same_key_kind(dtype, self.schema.get(name)):
                problems.append(f"column {name!r} holds {dtype}, fitted on {self.schema[name]}")
        if problems:
            raise CalibrationDataError("cannot apply the calibrator: " + "; ".join(problems))
        name = alias or f"{prob}_calibrated"
        if name in schema and not replace:
            msg = (
                f"`data` already has a column {name!r}: pass another `alias`, or "
                "`replace=True` to overwrite it"
            )
            raise ValueError(msg)
        return data.with_columns(self.expr(prob).alias(name))

    def evaluate(
        self,
        data: pl.DataFrame | pl.LazyFrame,
        prob: str,
        label: str,
        *,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        weight: str | None = None,
        confidence: float = 0.95,
    ) -> Evaluation:
        """Compute calibration before and after, per group, on held-out data: one statistics table.

        The rows are stacked twice (``stage`` ``"before"``: the input
        probabilities; ``"after"``: :meth:`expr`), and one
        :func:`polars_calib.bin_statistics` table per (keys, stage, bin) gives both
        the metrics (:func:`polars_calib.metrics_from_statistics`: ECE, Brier,
        log-loss) and the reliability table
        (:func:`polars_calib.reliability_from_statistics`). Top-label and
        confidence calibrators are evaluated on the confidence (the largest
        probability against whether its class is right, binary Brier and
        log-loss); vector outputs (temperature, classwise) with the confidence
        reduction and the multi-class Brier and log-loss. Runs the query (a
        LazyFrame is collected); a DataFrame holding refused rows raises
        :class:`~polars_calib.CalibrationDataError`.

        Returns
        -------
        Evaluation
            ``metrics`` (keys, ``stage``, ``count``, ``refused``,
            ``mean_predicted``, ``observed``, then three scores named for what
            they measure: binary data ``ece``, ``brier``, ``log_loss``; top-label
            and confidence calibrators ``confidence_ece``, ``confidence_brier``,
            ``confidence_log_loss``; vector outputs ``confidence_ece``,
            ``multiclass_brier``, ``multiclass_log_loss``) and ``reliability``
            (keys, ``stage``, then the reliability columns);
            ``Evaluation.plot()`` draws both stages.

        Examples
        --------
        Evaluated on its training data, for brevity (use held-out data):

        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({
        ...     "model": ["a"] * 8 + ["b"] * 8,
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
        ...     "y": [0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1],
        ... })
        >>> cal = pc.fit_calibrator(train, "p", "y", by="model", min_rows=5)
        >>> result = cal.evaluate(train, "p", "y", n_bins=2)
        >>> result.metrics.select("model", "stage", pl.col("ece", "brier").round(4))
        shape: (4, 4)
        ┌───────┬────────┬────────┬────────┐
        │ model ┆ stage  ┆ ece    ┆ brier  │
        │ ---   ┆ ---    ┆ ---    ┆ ---    │
        │ str   ┆ enum   ┆ f64    ┆ f64    │
        ╞═══════╪════════╪════════╪════════╡
        │ a     ┆ before ┆ 0.125  ┆ 0.125  │
        │ a     ┆ after  ┆ 0.1237 ┆ 0.1024 │
        │ b     ┆ before ┆ 0.25   ┆ 0.3    │
        │ b     ┆ after  ┆ 0.0644 ┆ 0.2449 │
        └───────┴────────┴────────┴────────┘
        """
        return before_after(self, data, prob, label, weight, n_bins, strategy, closed, confidence)

    def to_dict(self) -> dict[str, Any]:
        """Return the calibrator as the JSON-ready dictionary :meth:`save` writes.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({
        ...     "model": ["a"] * 8 + ["b"] * 8,
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
        ...     "y": [0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1],
        ... })
        >>> cal = pc.fit_calibrator(train, "p", "y", by="model", min_rows=5)
        >>> content = cal.to_dict()
        >>> content["method"], content["by"], content["params"]["columns"]["a"]
        ('platt', ['model'], 'Float64')
        """
        if self.computed:
            msg = (
                f"a calibrator with expression keys ({', '.join(self.computed)}) cannot be "
                "saved: Polars does not keep a serialized expression readable across its "
                "versions; add the keys as columns and fit `by` their names"
            )
            raise ValueError(msg)
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "package_version": __version__,
            "method": self.method,
            "reduction": self.reduction,
            "by": list(self.by),
            "options": self.options,
            "schema": self.schema,
            "params": _frame_to_json(self.params),
            "global_params": None
            if self.global_params is None
            else _frame_to_json(self.global_params),
        }

    def save(self, path: str | Path) -> Path:
        """Write the calibrator to `path` as readable JSON (see :func:`load_calibrator`).

        The file is written under a temporary name beside `path`, then renamed: a
        failed save (a non-finite parameter, a full disk) leaves `path` as it was.

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({
        ...     "model": ["a"] * 8 + ["b"] * 8,
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
        ...     "y": [0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1],
        ... })
        >>> cal = pc.fit_calibrator(train, "p", "y", by="model", min_rows=5)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = cal.save(Path(folder) / "calibrator.json")
        ...     pc.load_calibrator(path).params.equals(cal.params)
        True
        """
        text = json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"
        return write_text(path, text)


def _same_key_kind(dtype: pl.DataType, fitted: str | None) -> bool:
    """Return whether a key of `dtype` looks up groups fitted on a key of dtype `fitted`.

    The same dtype, or two of String, Categorical and Enum: :meth:`Calibrator.expr`
    reads such a key through its strings.
    """
    if fitted is None or str(dtype) == fitted:
        return True
    textual = ("String", "Categorical", "Enum")
    return dtype in (pl.String, pl.Categorical, pl.Enum) and fitted.startswith(textual)


def _json_value(value: Any) -> Any:
    """Return `value` for JSON; a non-finite float raises."""
    if isinstance(value, float) and not math.isfinite(value):
        msg = f"cannot save a non-finite parameter: {value!r}"
        raise ValueError(msg)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def _frame_to_json(frame: pl.DataFrame) -> dict[str, Any]:
    """Return `frame` as its column dtypes and rows; temporal values as their integers (exact)."""
    physical = frame.with_columns(
        pl.col(name).to_physical() for name, dtype in frame.schema.items() if dtype.is_temporal()
    )
    return {
        "columns": {name: str(dtype) for name, dtype in frame.schema.items()},
        "rows": [
            {k: _json_value(v) for k, v in row.items()} for row in physical.iter_rows(named=True)
        ],
    }


_SIMPLE = {
    name: getattr(pl, name)
    for name in (
        "Boolean",
        "Int8",
        "Int16",
        "Int32",
        "Int64",
        "UInt8",
        "UInt16",
        "UInt32",
        "UInt64",
        "Float32",
        "Float64",
        "String",
        "Date",
        "Time",
        "Categorical",
        "Null",
    )
}


def _parse_dtype(text: str) -> pl.DataType:
    """Return the dtype written as `text`.

    The simple ones, ``List(...)``, ``Datetime``/``Duration``, ``Enum``.
    """
    text = text.strip()
    if text in _SIMPLE:
        return cast(pl.DataType, _SIMPLE[text]())
    match = re.fullmatch(r"(\w+)\((.*)\)", text)
    if match:
        name, inner = match.groups()
        if name in _SIMPLE:  # e.g. Categorical(ordering=...)
            return cast(pl.DataType, _SIMPLE[name]())
        if name == "List":
            return pl.List(_parse_dtype(inner))
        options = {
            key.strip(): ast.literal_eval(value.strip())
            for key, value in (
                part.split("=", 1) for part in re.split(r",\s*(?=\w+=)", inner) if part
            )
        }
        if name == "Datetime":
            return pl.Datetime(options.get("time_unit", "us"), options.get("time_zone"))
        if name == "Duration":
            return pl.Duration(options.get("time_unit", "us"))
        if name == "Enum":
            return pl.Enum(options["categories"])
    msg = f"cannot read a column of dtype {text!r} from a saved calibrator"
    raise CalibrationDataError(msg)


def _column(name: str, dtype: pl.DataType, values: list[Any], path: str) -> pl.Series:
    """Return the column `name` of a saved table; a value its dtype cannot hold names its row."""
    physical = (pl.Int32 if dtype == pl.Date else pl.Int64) if dtype.is_temporal() else dtype
    errors = (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError)
    try:
        return pl.Series(name, values, dtype=physical, strict=True).cast(dtype)
    except errors:
        for i, value in enumerate(values):
            try:
                pl.Series(name, [value], dtype=physical, strict=True).cast(dtype)
            except errors:
                fail(f"{path}.rows[{i}].{name}", f"cannot be read as {dtype}: {value!r:.60}")
        raise


_DTYPE_ERRORS = (
    ValueError,
    TypeError,
    SyntaxError,
    KeyError,
    RecursionError,
    pl.exceptions.PolarsError,
)


def _frame_from_json(content: dict[str, Any], path: str, keys: list[str]) -> pl.DataFrame:
    """Return the frame :func:`_frame_to_json` wrote (checked: :func:`check_frame`).

    Its rows are unique by `keys`; exactly one without keys (the one group).
    """
    dtypes = {}
    for name, text in content["columns"].items():
        try:
            dtypes[name] = _parse_dtype(text)
        except _DTYPE_ERRORS as error:
            fail(f"{path}.columns.{name}", f"is not a dtype polars_calib reads: {error}")
    rows = content["rows"]
    columns = [
        _column(name, dtype, [row[name] for row in rows], path) for name, dtype in dtypes.items()
    ]
    frame = pl.DataFrame(columns) if columns else pl.DataFrame()
    if not keys and frame.height != 1:
        fail(f"{path}.rows", f"must hold one row without keys (by is empty), got {frame.height}")
    if keys and frame.height:
        repeated = ~frame.select(pl.struct(keys).is_first_distinct()).to_series()
        if repeated.any():
            i = int(repeated.arg_true()[0])
            fail(f"{path}.rows[{i}]", f"repeats the keys of another row ({', '.join(keys)})")
    return frame


def load_calibrator(path: str | Path) -> Calibrator:
    """Read a calibrator written by ``Calibrator.save``.

    The file is JSON: ``format`` (``"polars_calib.calibrator"``),
    ``format_version``, ``package_version`` (of the writer), ``method``,
    ``reduction``, ``by``, ``options``, ``schema`` (the input dtypes at fit time),
    ``params`` and ``global_params`` (each ``columns``: name to dtype, and
    ``rows``). Floats are written with Python's shortest round-trip repr, so the
    parameters are read back bit for bit; Date and Datetime keys as their
    integers.

    Every field is checked before anything is built (:mod:`polars_calib._recalibration.schema`):
    types, the format version (1 up to :data:`FORMAT_VERSION`), the method's
    parameter columns and their dtypes, finite parameters (a temperature above 0),
    isotonic points and values in [0, 1] and non-decreasing, histogram edges
    non-decreasing and ``n_bins + 1`` of them, one row per group (the key columns
    exactly those of ``by``, and ``class`` for the keyed reductions; one row
    without keys), and ``global_params`` exactly when ``fallback="global"``.

    Raises
    ------
    CalibrationDataError
        Not UTF-8 JSON, not a calibrator file, a newer format version, or a field
        that fails its check; the message names the field's path, such as
        ``params.rows[2].x``.

    See Also
    --------
    fit_calibrator

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> train = pl.DataFrame(
    ...     {"p": [0.2, 0.4, 0.6, 0.8] * 3, "y": [0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1]}
    ... )
    >>> cal = pc.fit_calibrator(train, "p", "y", method="beta")
    >>> path = cal.save(pathlib.Path(tempfile.mkdtemp()) / "beta.json")
    >>> pc.load_calibrator(path).params.equals(cal.params)
    True
    """
    where = str(path)
    raw = Path(path).read_bytes()
    try:
        content = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        msg = f"{where!r} is not a calibrator file: not UTF-8 text (byte {error.start})"
        raise CalibrationDataError(msg) from None
    except RecursionError:
        msg = f"{where!r} is not a calibrator file: JSON nested too deeply"
        raise CalibrationDataError(msg) from None
    except ValueError as error:  # not JSON; an integer of thousands of digits
        msg = f"{where!r} is not a calibrator file: {error}"
        raise CalibrationDataError(msg) from None
    try:
        return _from_content(content)
    except InvalidFileError as error:
        msg = f"{where!r}: {error}"
        raise CalibrationDataError(msg) from None


def _from_content(content: Any) -> Calibrator:
    """Return the calibrator of a file's JSON `content`, checked field by field."""
    check_content(content, FORMAT, FORMAT_VERSION)
    method, reduction, options = content["method"], content["reduction"], content["options"]
    by = content["by"]
    keyed = reduction in ("top_label", "classwise")
    classes = options.get("n_classes") if reduction == "classwise" else None
    keys = [*by, *(["class"] if keyed else [])]
    check_frame(content["params"], "params", keys, method, options, classes)
    params = _frame_from_json(content["params"], "params", keys)
    if classes is not None and params.height and params["class"].max() != classes - 1:
        fail("options.n_classes", f"must be the largest class plus 1, got {classes}")
    global_params = None
    if content.get("global_params") is not None:
        global_keys = ["class"] if keyed else []
        stored = content["global_params"]
        check_frame(stored, "global_params", global_keys, method, options, classes)
        global_params = _frame_from_json(stored, "global_params", global_keys)
    return Calibrator(
        method=method,
        reduction=reduction,
        by=tuple(by),
        params=params,
        global_params=global_params,
        options=dict(options),
        schema=dict(content["schema"]),
    )
