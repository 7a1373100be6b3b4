"""Recalibration of Gaussian predictions per group: σ scaling, split-conformal intervals and
the isotonic recalibration of the PIT (:mod:`polars_calib._recalibration.regression_isotonic`).

:func:`fit_regression_calibrator` reads the Gaussian problem's rows (the one refused
rule of :func:`~polars_calib._table.regression.prepare_gaussian`) and fits every
group in one aggregation; :class:`RegressionCalibrator` applies the fitted values as
a pure expression (a streaming-friendly lookup of the row's group, as
:class:`~polars_calib.Calibrator`) and is saved as a versioned JSON file whose every
field is checked on load (:func:`load_regression_calibrator`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import polars as pl

from polars_calib._core.exprs import GroupKeys, IntoExpr, Keys, to_expr
from polars_calib._core.files import write_text
from polars_calib._core.options import check_choice
from polars_calib._core.regression import gaussian_problem
from polars_calib._core.validation import CalibrationDataError
from polars_calib._recalibration.apply import _interpolate
from polars_calib._recalibration.calibrator import _frame_from_json, _frame_to_json
from polars_calib._recalibration.lookup import group_index, per_group
from polars_calib._recalibration.regression_isotonic import (
    fit_pit_isotonic,
    inverse,
    normal_quantile,
)
from polars_calib._recalibration.rows import (
    REFUSED,
    USED,
    WEIGHT,
    check_refused,
    group_columns,
    grouped,
)
from polars_calib._recalibration.schema import (
    InvalidFileError,
    Rule,
    array,
    boolean,
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
from polars_calib._table.plan import FrameT
from polars_calib._table.regression import prepare_gaussian
from polars_calib._version import __version__

__all__ = [
    "REGRESSION_FORMAT",
    "RegressionCalibrator",
    "RegressionRecalibration",
    "fit_regression_calibrator",
    "load_regression_calibrator",
]

RegressionRecalibration = Literal["std_scaling", "conformal", "isotonic"]
"""The recalibration methods of Gaussian predictions."""

REGRESSION_FORMAT = "polars_calib.regression_calibrator"
"""The ``format`` field of a saved regression calibrator."""

REGRESSION_FORMAT_VERSION = 1

_SCORE = "__polars_calib_score__"
_PARAMETER: dict[str, str] = {"std_scaling": "scale", "conformal": "quantile"}
"""The scalar parameter of each method but the isotonic one (its points ``x``, ``y``)."""


@dataclass(frozen=True, eq=False)
class RegressionCalibrator:
    """Fitted recalibration of Gaussian predictions, one row of ``params`` per group.

    ``params`` holds the keys, ``count`` (Int64 rows used), ``fallback`` (Boolean)
    and the method's parameter: ``scale`` (σ scaling: σ' = scale · σ; 1 where
    ``fallback``, a group without used weight or with every y equal to its μ) or
    ``quantile`` (conformal: the interval μ ∓ quantile · σ; infinite where
    ``fallback``, a group with too few rows for its level), or, isotonic, the
    points ``x`` and ``y`` (List(Float64)) of the map R from the PIT to its empirical
    CDF (the identity where ``fallback``, a group without used weight). Build one with
    :func:`fit_regression_calibrator`. ``computed`` holds the keys fitted `by` an
    expression (computed again from the data it is applied to; such a calibrator
    cannot be saved).
    """

    method: RegressionRecalibration
    by: tuple[str, ...]
    params: pl.DataFrame
    mean: str
    std: str
    level: float | None = None
    schema: dict[str, str] = field(default_factory=dict)
    computed: dict[str, pl.Expr] = field(default_factory=dict)

    def _keys(self) -> list[pl.Expr]:
        return [self.computed.get(k, pl.col(k)) for k in self.by]

    def _per_group(self, values: Any) -> pl.Expr:
        """Each row's entry of `values` (one float per fitted group; null if not fitted)."""
        table = self.params.select(list(self.by))
        column = np.asarray(values, np.float64).reshape(-1, 1)
        (found,) = per_group(self._keys(), table, column, [math.nan])
        return pl.when(found.is_nan()).then(None).otherwise(found)

    def _value(self) -> pl.Expr:
        """Each row's fitted value for its group (null for a group not fitted)."""
        if self.method == "isotonic":
            msg = (
                "an isotonic calibrator recalibrates the PIT, not σ: use "
                "cdf_expr(target), quantile_expr(level) or interval_exprs()"
            )
            raise ValueError(msg)
        return self._per_group(self.params[_PARAMETER[self.method]].cast(pl.Float64))

    def _gaussian(self, mean: IntoExpr | None, std: IntoExpr | None) -> tuple[pl.Expr, pl.Expr]:
        mu = pl.col(self.mean) if mean is None else to_expr(mean, "mean")
        sigma = pl.col(self.std) if std is None else to_expr(std, "std")
        return mu.cast(pl.Float64), sigma.cast(pl.Float64)

    def cdf_expr(
        self, target: IntoExpr, *, mean: IntoExpr | None = None, std: IntoExpr | None = None
    ) -> pl.Expr:
        """Return the recalibrated PIT ``R(Φ((y - μ) / σ))`` of an isotonic calibrator.

        Null on a row with a null or refused input (see :func:`polars_calib.pit`) or
        of a group not fitted.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({"y": [-2.0, -1.0, 1.0, 2.0], "mu": 0.0, "sigma": 1.0})
        >>> cal = pc.fit_regression_calibrator(
        ...     train, "y", mean="mu", std="sigma", method="isotonic"
        ... )
        >>> train.select(cal.cdf_expr("y"))["y"].to_list()
        [0.25, 0.5, 0.75, 1.0]
        """
        self._require("isotonic", "cdf_expr")
        mu, sigma = self._gaussian(mean, std)
        problem = gaussian_problem(target, mu, sigma)
        assert problem.ok is not None  # a Gaussian problem has its one-pass rule
        u = pl.when(problem.ok).then(problem.prob)
        name = to_expr(target, "target").meta.output_name(raise_if_undetermined=False) or "cdf"
        if not self.params.height:
            return pl.lit(None, pl.Float64).alias(name)  # nothing fitted: every group unseen
        g = group_index(self._keys(), self.params.select(list(self.by)))
        return _interpolate(self.params.select("x", "y"), g, u).alias(name)

    def quantile_expr(
        self, level: float, *, mean: IntoExpr | None = None, std: IntoExpr | None = None
    ) -> pl.Expr:
        """Return the recalibrated `level`-quantile ``μ + σ Φ⁻¹(R⁻¹(level))``, isotonic.

        ``R⁻¹(level)`` is one number per group (the smallest PIT where the map
        reaches `level`); ``±inf`` where it is 0 or 1.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({"y": [-2.0, -1.0, 1.0, 2.0], "mu": 0.0, "sigma": 1.0})
        >>> cal = pc.fit_regression_calibrator(
        ...     train, "y", mean="mu", std="sigma", method="isotonic"
        ... )
        >>> round(train.select(cal.quantile_expr(0.5)).item(0, 0), 6)
        -1.0
        """
        self._require("isotonic", "quantile_expr")
        tau = float(_check_level(level))
        points = zip(self.params["x"].to_list(), self.params["y"].to_list())
        z = [normal_quantile(inverse(x, y, tau)) for x, y in points]
        mu, sigma = self._gaussian(mean, std)
        return (mu + sigma * self._per_group(z)).alias(f"quantile_{level}")

    def _require(self, method: str, name: str) -> None:
        if self.method != method:
            msg = f"{name} needs method {method!r}, this calibrator is {self.method!r}"
            raise ValueError(msg)

    def expr(self, std: IntoExpr | None = None) -> pl.Expr:
        """Return the recalibrated σ (σ scaling) or the interval's half-width q · σ (conformal).

        A pure expression of the key columns and `std` (default: the fitted
        column), usable in ``with_columns`` on a LazyFrame or in streaming; a group
        not seen in the fit gives null.

        Returns
        -------
        pl.Expr
            Float64, named after `std`.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({"y": [1.0, -1.0, 2.0, -2.0], "mu": 0.0, "sigma": 1.0})
        >>> cal = pc.fit_regression_calibrator(train, "y", mean="mu", std="sigma")
        >>> train.lazy().select(cal.expr()).collect()["sigma"].to_list()
        [1.5811388300841898, 1.5811388300841898, 1.5811388300841898, 1.5811388300841898]
        """
        sigma = pl.col(self.std) if std is None else to_expr(std, "std")
        return (sigma.cast(pl.Float64) * self._value()).alias(_output_name(sigma))

    def interval_exprs(
        self,
        mean: IntoExpr | None = None,
        std: IntoExpr | None = None,
        *,
        level: float | None = None,
    ) -> tuple[pl.Expr, pl.Expr]:
        """Return the interval's bounds, named ``lower`` and ``upper``.

        Conformal: μ ∓ q · σ at the fitted level (infinite bounds for a group that
        had too few rows for its level). Isotonic: the recalibrated quantiles at
        ``(1 ∓ level) / 2`` (:meth:`quantile_expr`), `level` defaulting to the fit's.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({"y": [0.5, -1.0, 2.0, 0.1], "mu": 0.0, "sigma": 1.0})
        >>> cal = pc.fit_regression_calibrator(
        ...     train, "y", mean="mu", std="sigma", method="conformal", level=0.5
        ... )
        >>> train.select(*cal.interval_exprs()).row(0)
        (-1.0, 1.0)
        """
        if self.method == "isotonic":
            chosen = self.level if level is None else level
            if chosen is None:
                msg = "give the intervals' `level` (this calibrator holds none)"
                raise ValueError(msg)
            nominal = float(_check_level(chosen))
            lower = self.quantile_expr((1.0 - nominal) / 2.0, mean=mean, std=std)
            upper = self.quantile_expr((1.0 + nominal) / 2.0, mean=mean, std=std)
            return lower.alias("lower"), upper.alias("upper")
        if self.method != "conformal":
            msg = (
                "interval bounds need method 'conformal' or 'isotonic', this calibrator "
                f"is {self.method!r}"
            )
            raise ValueError(msg)
        if level is not None:
            msg = "a conformal calibrator's intervals are at its fitted level: give no `level`"
            raise ValueError(msg)
        mu = (pl.col(self.mean) if mean is None else to_expr(mean, "mean")).cast(pl.Float64)
        half = self.expr(std)
        return (mu - half).alias("lower"), (mu + half).alias("upper")

    def apply(self, data: FrameT) -> FrameT:
        """Return `data` with ``<std>_calibrated`` (σ scaling) or ``lower``/``upper`` added.

        ``lower``/``upper``: the conformal intervals, or the isotonic calibrator's
        recalibrated central intervals at its fitted `level`.

        A LazyFrame stays a plan.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({"g": [1, 1, 2, 2], "y": [2.0, -2.0, 0.5, -0.5],
        ...                       "mu": 0.0, "sigma": 1.0})
        >>> cal = pc.fit_regression_calibrator(train, "y", mean="mu", std="sigma", by="g")
        >>> cal.apply(train)["sigma_calibrated"].to_list()
        [2.0, 2.0, 0.5, 0.5]
        """
        if self.method in ("conformal", "isotonic"):
            return data.with_columns(*self.interval_exprs())
        return data.with_columns(self.expr().alias(f"{self.std}_calibrated"))

    def to_dict(self) -> dict[str, Any]:
        """Return the file's content (see :func:`load_regression_calibrator`)."""
        if self.computed:
            msg = (
                f"a calibrator with expression keys ({', '.join(self.computed)}) cannot be "
                "saved: add the keys as columns and fit `by` their names"
            )
            raise ValueError(msg)
        finite = self.params
        if self.method in _PARAMETER:
            name = _PARAMETER[self.method]
            finite = finite.with_columns(
                pl.when(pl.col(name).is_finite()).then(pl.col(name)).alias(name)
            )
        return {
            "format": REGRESSION_FORMAT,
            "format_version": REGRESSION_FORMAT_VERSION,
            "package_version": __version__,
            "method": self.method,
            "by": list(self.by),
            "options": {"mean": self.mean, "std": self.std, "level": self.level},
            "schema": self.schema,
            "params": _frame_to_json(finite),
        }

    def save(self, path: str | Path) -> Path:
        """Write the calibrator to `path` as JSON, atomically (read by the loader).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({"y": [1.0, -1.0, 2.0], "mu": 0.0, "sigma": 1.0})
        >>> cal = pc.fit_regression_calibrator(train, "y", mean="mu", std="sigma")
        >>> path = cal.save(pathlib.Path(tempfile.mkdtemp()) / "cal.json")
        >>> pc.load_regression_calibrator(path).params.equals(cal.params)
        True
        """
        text = json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"
        return write_text(path, text)


def _output_name(expr: pl.Expr) -> str:
    return expr.meta.output_name(raise_if_undetermined=False) or "std"


def _check_level(level: float) -> Fraction:
    """Return `level` as the exact fraction of its repr; ``ValueError`` outside (0, 1)."""
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        msg = f"`level` must be a number in (0, 1), got {type(level).__name__}"
        raise TypeError(msg)
    if not 0.0 < level < 1.0:
        msg = f"`level` must be in (0, 1), got {level}"
        raise ValueError(msg)
    return Fraction(str(float(level)))


def _parameter(method: str, level: Fraction) -> tuple[pl.Expr, pl.Expr]:
    """Per group of the problem's rows: (the method's parameter, whether it fell back)."""
    used = pl.col(USED)
    if method == "std_scaling":
        total = pl.col(WEIGHT).filter(used).sum()
        mean_z2 = (pl.col(_SCORE) * pl.col(WEIGHT)).filter(used).sum() / total
        fallback = ~((total > 0.0) & (mean_z2 > 0.0) & mean_z2.is_finite())
        return pl.when(fallback).then(1.0).otherwise(mean_z2.sqrt()), fallback
    # The k-th smallest of n scores, k = ceil((n + 1) level) in integers: with +inf
    # appended, k = n + 1 (too few rows for the level) picks the infinite bound.
    # Int128: the level's decimal numerator (up to 17 digits) times n + 1 passes 2**63.
    n = used.sum().cast(pl.Int128)
    numerator, denominator = (pl.lit(v, pl.Int128) for v in level.as_integer_ratio())
    k = (((n + 1) * numerator + denominator - 1) // denominator).cast(pl.Int64)
    n = n.cast(pl.Int64)
    scores = pl.col(_SCORE).filter(used).append(pl.lit(math.inf, pl.Float64)).sort()
    return scores.get(k - 1), k > n


def _fit_scalar(rows: pl.LazyFrame, keys: list[str], method: str, level: Fraction) -> pl.DataFrame:
    """Per group: ``count``, ``refused``, ``fallback`` and the method's scalar parameter."""
    group = group_columns(keys)
    parameter, fallback = _parameter(method, level)
    return (
        grouped(rows, keys)
        .group_by(group)
        .agg(
            pl.col(USED).sum().cast(pl.Int64).alias("count"),
            pl.col(REFUSED).sum().alias("refused"),
            fallback.alias("fallback"),
            parameter.alias(_PARAMETER[method]),
        )
        .sort(group, nulls_last=True)
        .collect()
    )


def fit_regression_calibrator(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    method: RegressionRecalibration = "std_scaling",
    level: float = 0.9,
    weight: str | None = None,
) -> RegressionCalibrator:
    """Fit a recalibration of Gaussian predictions N(`mean`, `std`²) per group.

    Parameters
    ----------
    data
        A DataFrame or a LazyFrame (a scan streams); the fit collects one small
        table (one row per group).
    target, mean, std
        Column names of the target, the predicted mean and standard deviation.
    by
        Group keys: one fit per group.
    method
        ``"std_scaling"``: σ' = s · σ with s² the weighted mean of ((y − μ)/σ)²,
        the scale minimizing the Gaussian NLL (Levi et al. 2022). ``"conformal"``:
        split-conformal intervals μ ∓ q · σ, q the ⌈(n + 1) · level⌉-th smallest
        score |y − μ| / σ of the group (MAPIE's split method). ``"isotonic"``: the
        map R from the PIT ``u = Φ((y − μ)/σ)`` to its empirical CDF in the group
        (Kuleshov et al. 2018); the recalibrated CDF is R(u), the quantile at τ is
        μ + σ Φ⁻¹(R⁻¹(τ)) (``cdf_expr``, ``quantile_expr``, ``interval_exprs``).
    level
        The conformal intervals' nominal coverage, in (0, 1); for ``"isotonic"``, the
        level of the central intervals ``apply`` adds.
    weight
        Row weights (σ scaling, and isotonic as frequency weights of the empirical
        CDF).

    Returns
    -------
    RegressionCalibrator
        Its ``params``: keys, ``count``, ``fallback`` and ``scale``, ``quantile``, or
        the isotonic points ``x`` and ``y``.

    Raises
    ------
    CalibrationDataError
        A missing or non-numeric column, or refused rows (a NaN or infinite target
        or mean, a standard deviation that is not a positive finite number, a bad
        weight), counted per check.

    Notes
    -----
    A group with no used weight, or whose targets all equal their means, keeps
    scale 1 (``fallback`` true). A conformal group with ⌈(n + 1) · level⌉ > n
    gets an infinite quantile (``fallback`` true), as MAPIE with ``unbounded=True``.
    An isotonic group with no used weight keeps the identity map (``fallback``
    true); its map holds the anchors (0, 0) and (1, 1), so R is a CDF on [0, 1]
    (Kuleshov's clipped fit is not, below the smallest PIT). See
    ``docs/regression.md``, "Recalibration".

    References
    ----------
    Levi, Gispan, Giladi, Fetaya (2022), "Evaluating and Calibrating Uncertainty
    Prediction in Regression Tasks", Sensors 22(15). MAPIE 1.6,
    ``SplitConformalRegressor``. Kuleshov, Fenner, Ermon (2018), "Accurate
    Uncertainties for Deep Learning Using Calibrated Regression", ICML.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> train = pl.DataFrame({"g": ["a", "a", "b", "b"], "y": [2.0, -2.0, 0.5, -0.5],
    ...                       "mu": 0.0, "sigma": 1.0})
    >>> pc.fit_regression_calibrator(train, "y", mean="mu", std="sigma", by="g").params
    shape: (2, 4)
    ┌─────┬───────┬──────────┬───────┐
    │ g   ┆ count ┆ fallback ┆ scale │
    │ --- ┆ ---   ┆ ---      ┆ ---   │
    │ str ┆ i64   ┆ bool     ┆ f64   │
    ╞═════╪═══════╪══════════╪═══════╡
    │ a   ┆ 2     ┆ false    ┆ 2.0   │
    │ b   ┆ 2     ┆ false    ┆ 0.5   │
    └─────┴───────┴──────────┴───────┘
    """
    check_choice("method", method, get_args(RegressionRecalibration))
    exact_level = _check_level(level)
    if method == "conformal" and weight is not None:
        msg = "`weight` is not supported with method 'conformal' (unweighted split conformal)"
        raise ValueError(msg)
    prepared = prepare_gaussian(data, target, mean=mean, std=std, by=by, weight=weight)
    problem, keys = prepared.problem, prepared.keys
    refused = problem.refused.fill_null(False)
    z2 = problem.terms["squared_error"] / problem.terms["variance"]
    score = {"std_scaling": z2, "conformal": z2.sqrt(), "isotonic": problem.prob}[method]
    rows = prepared.lf.select(
        *keys,
        score.alias(_SCORE),
        (pl.lit(1.0) if problem.weight is None else problem.weight).alias(WEIGHT),
        (problem.present & ~refused).alias(USED),
        refused.alias(REFUSED),
    )
    if method == "isotonic":
        fitted, columns = fit_pit_isotonic(rows, keys, _SCORE), ["x", "y"]
    else:
        fitted, columns = _fit_scalar(rows, keys, method, exact_level), [_PARAMETER[method]]
    check_refused(prepared, int(fitted["refused"].sum()))
    schema = prepared.lf.collect_schema()
    return RegressionCalibrator(
        method=method,
        by=tuple(keys),
        params=fitted.select(*keys, "count", "fallback", *columns),
        mean=mean,
        std=std,
        level=None if method == "std_scaling" else float(level),
        schema={k: str(schema[k]) for k in keys},
        computed={e.meta.output_name(): e for e in GroupKeys(by).computed()},
    )


_CONTENT = record(
    {
        "format": choice((REGRESSION_FORMAT,)),
        "format_version": integer(1, REGRESSION_FORMAT_VERSION),
        "package_version": string,
        "method": choice(get_args(RegressionRecalibration)),
        "by": distinct_names,
        "options": record(
            {"mean": string, "std": string, "level": optional(number(0.0, 1.0, above=True))},
            ("mean", "std", "level"),
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
    rules: dict[str, tuple[str, Rule]] = {
        "count": ("Int64", integer(0)),
        "fallback": ("Boolean", boolean),
    }
    if method == "isotonic":
        points = array(number(0.0, 1.0), least=2, order=True)
        rules |= {"x": ("List(Float64)", points), "y": ("List(Float64)", points)}
    else:
        name = _PARAMETER[method]
        positive = number(0.0, above=True) if name == "scale" else optional(number(0.0))
        rules[name] = ("Float64", positive)
    columns = content["params"]["columns"]
    for column in [*keys, *rules]:
        if column not in columns:
            fail(f"params.columns.{column}", "is missing")
    for column, dtype in columns.items():
        if column not in rules and column not in keys:
            fail(f"params.columns.{column}", "is neither a key (by) nor a column of this method")
        if column in rules and dtype != rules[column][0]:
            fail(f"params.columns.{column}", f"must be {rules[column][0]!r}, got {dtype!r:.60}")
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
    if method != "std_scaling" and content["options"]["level"] is None:
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
    if content["method"] in _PARAMETER:
        name = _PARAMETER[content["method"]]
        params = params.with_columns(pl.col(name).fill_null(math.inf))
    return RegressionCalibrator(
        method=content["method"],
        by=tuple(keys),
        params=params,
        mean=options["mean"],
        std=options["std"],
        level=options["level"],
        schema=dict(content["schema"]),
    )
