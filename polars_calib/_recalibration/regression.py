"""Recalibration of regression predictions per group: σ scaling, split-conformal intervals and
the isotonic recalibration of the PIT (:mod:`polars_calib._recalibration.regression_isotonic`)
for Gaussian predictions; conformalized intervals, ensembles and quantiles
(:mod:`polars_calib._recalibration.regression_forms`).

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import polars as pl

from polars_calib._core.ensembles import ensemble_problem, rank_quantile
from polars_calib._core.exprs import GroupKeys, IntoExpr, Keys, to_expr
from polars_calib._core.files import write_text
from polars_calib._core.options import check_choice
from polars_calib._core.quantiles import check_levels
from polars_calib._core.regression import gaussian_problem
from polars_calib._frames.regression_forms import Form
from polars_calib._metrics.ensembles import rank_pit
from polars_calib._recalibration.apply import _interpolate
from polars_calib._recalibration.calibrator import _frame_to_json
from polars_calib._recalibration.lookup import group_index, per_group
from polars_calib._recalibration.regression_forms import (
    SCORE,
    adjusted_interval,
    ensemble_adjusted,
    ensemble_scores,
    interval_scores,
    order_statistic,
    quantile_scores,
    quantile_shifts,
    shifted_quantiles,
)
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
from polars_calib._table.ensembles import prepare_ensemble
from polars_calib._table.plan import FrameT, Prepared
from polars_calib._table.regression import prepare_gaussian
from polars_calib._version import __version__

__all__ = [
    "REGRESSION_FORMAT",
    "CalibratorForm",
    "RegressionCalibrator",
    "RegressionRecalibration",
    "fit_regression_calibrator",
]

RegressionRecalibration = Literal["std_scaling", "conformal", "isotonic"]
"""The recalibration methods of regression predictions (all three for the Gaussian
form, ``"conformal"`` and ``"isotonic"`` for ensembles, ``"conformal"`` for intervals
and quantiles)."""

CalibratorForm = Literal["gaussian", "interval", "quantile", "ensemble"]
"""The prediction forms a regression calibrator recalibrates."""

REGRESSION_FORMAT = "polars_calib.regression_calibrator"
"""The ``format`` field of a saved regression calibrator."""

REGRESSION_FORMAT_VERSION = 2
"""Version 2 adds the interval and quantile forms (``options.form`` and their columns);
a version 1 file is a Gaussian calibrator and still loads. The ensemble form adds
``options.ensemble``, written only in an ensemble calibrator's file, so every other
file is unchanged (and an older reader refuses an ensemble file by that field)."""

_SCORE = SCORE
_PARAMETER: dict[str, str] = {"std_scaling": "scale", "conformal": "quantile"}
"""The scalar parameter of each method but the isotonic one (its points ``x``, ``y``)
and the quantile form's (its list ``shift``)."""


@dataclass(frozen=True, eq=False)
class RegressionCalibrator:
    """Fitted recalibration of regression predictions, one row of ``params`` per group.

    ``params`` holds the keys, ``count`` (Int64 rows used), ``fallback`` (Boolean)
    and the method's parameter. Gaussian `form`: ``scale`` (σ scaling: σ' = scale ·
    σ; 1 where ``fallback``, a group without used weight or with every y equal to its
    μ) or ``quantile`` (conformal: the interval μ ∓ quantile · σ; infinite where
    ``fallback``, a group with too few rows for its level), or, isotonic, the
    points ``x`` and ``y`` (List(Float64)) of the map R from the PIT to its empirical
    CDF (the identity where ``fallback``, a group without used weight). Interval
    form: ``quantile``, the CQR correction (the interval [lower − quantile, upper +
    quantile]; infinite where ``fallback``). Ensemble form: ``quantile``, the CQR
    correction of the members' central interval at `level` (see
    :meth:`interval_exprs`), or, isotonic, the points ``x`` and ``y`` of the map R
    from the rank PIT to its empirical CDF. Quantile form: ``shift``
    (List(Float64), one per level: q' = q + shift, then sorted; +inf at a level
    where ``fallback``). Build one with :func:`fit_regression_calibrator`.
    ``computed`` holds the keys fitted `by` an expression (computed again from the
    data it is applied to; such a calibrator cannot be saved).
    """

    method: RegressionRecalibration
    by: tuple[str, ...]
    params: pl.DataFrame
    mean: str | None
    std: str | None
    level: float | None = None
    schema: dict[str, str] = field(default_factory=dict)
    computed: dict[str, pl.Expr] = field(default_factory=dict)
    form: CalibratorForm = "gaussian"
    lower: str | None = None
    upper: str | None = None
    quantiles: str | tuple[str, ...] | None = None
    levels: tuple[float, ...] | None = None
    ensemble: str | None = None

    def _keys(self) -> list[pl.Expr]:
        return [self.computed.get(k, pl.col(k)) for k in self.by]

    def _per_group(self, values: Any) -> pl.Expr:
        """Each row's entry of `values` (one float per fitted group; null if not fitted)."""
        table = self.params.select(list(self.by))
        column = np.asarray(values, np.float64).reshape(-1, 1)
        (found,) = per_group(self._keys(), table, column, [math.nan])
        return pl.when(found.is_nan()).then(None).otherwise(found)

    def _require_form(self, form: CalibratorForm, name: str) -> None:
        if self.form != form:
            hint = {
                "gaussian": "expr(), interval_exprs(), cdf_expr() or quantile_expr()",
                "interval": "interval_exprs() or apply()",
                "ensemble": "interval_exprs() or apply()"
                + (" (and cdf_expr(), quantile_expr())" if self.method == "isotonic" else ""),
                "quantile": "quantiles_expr() or apply()",
            }[self.form]
            msg = f"{name} is for {form} predictions, this calibrator's are {self.form}: use {hint}"
            raise ValueError(msg)

    def _value(self) -> pl.Expr:
        """Each row's fitted value for its group (null for a group not fitted)."""
        self._require_form("gaussian", "expr()")
        if self.method == "isotonic":
            msg = (
                "an isotonic calibrator recalibrates the PIT, not σ: use "
                "cdf_expr(target), quantile_expr(level) or interval_exprs()"
            )
            raise ValueError(msg)
        return self._per_group(self.params[_PARAMETER[self.method]].cast(pl.Float64))

    def _gaussian(self, mean: IntoExpr | None, std: IntoExpr | None) -> tuple[pl.Expr, pl.Expr]:
        assert self.mean is not None and self.std is not None  # the Gaussian form's
        mu = pl.col(self.mean) if mean is None else to_expr(mean, "mean")
        sigma = pl.col(self.std) if std is None else to_expr(std, "std")
        return mu.cast(pl.Float64), sigma.cast(pl.Float64)

    def cdf_expr(
        self,
        target: IntoExpr,
        *,
        mean: IntoExpr | None = None,
        std: IntoExpr | None = None,
        ensemble: IntoExpr | None = None,
        seed: int = 0,
        id: IntoExpr | None = None,  # noqa: A002  (pc.rank_pit's row identity)
    ) -> pl.Expr:
        """Return the recalibrated PIT ``R(Φ((y - μ) / σ))`` of an isotonic calibrator.

        Null on a row with a null or refused input (see :func:`polars_calib.pit`) or
        of a group not fitted. Ensemble form: ``R(u)`` of the randomized rank PIT
        ``u`` of `ensemble` (default: the fitted column) with its `seed` and `id`, as
        :func:`polars_calib.rank_pit`.

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
        if self.form == "ensemble":
            self._no_gaussian(mean, std)
            u = rank_pit(target, ensemble=self._members(ensemble), seed=seed, id=id)
        else:
            if ensemble is not None or seed != 0 or id is not None:
                msg = (
                    "`ensemble=`, `seed=` and `id=` are the ensemble form's: this "
                    "calibrator is Gaussian"
                )
                raise TypeError(msg)
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
        self,
        level: float,
        *,
        mean: IntoExpr | None = None,
        std: IntoExpr | None = None,
        ensemble: IntoExpr | None = None,
    ) -> pl.Expr:
        """Return the recalibrated `level`-quantile ``μ + σ Φ⁻¹(R⁻¹(level))``, isotonic.

        ``R⁻¹(level)`` is one number per group (the smallest PIT where the map
        reaches `level`); ``±inf`` where it is 0 or 1. Ensemble form: the members'
        quantile at level ``t = R⁻¹(level)`` on the rank PIT's scale, where the i-th
        smallest of M members sits at i / (M + 1), linear between (numpy's
        ``"weibull"`` rule); ``-inf`` below 1 / (M + 1) and ``+inf`` above
        M / (M + 1), where the members do not say how far the tail goes. Null on a row
        whose ensemble the ensemble form refuses, or of a group not fitted.

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
        t = [inverse(x, y, tau) for x, y in points]
        if self.form == "ensemble":
            self._no_gaussian(mean, std)
            members = self._members(ensemble)
            # The target plays no part in the members' own checks: a constant stands in.
            ok = ensemble_problem(pl.lit(0.0), members).ok
            assert ok is not None  # an ensemble problem has its one-pass rule
            quantile = rank_quantile(members, self._per_group(t))
            return pl.when(ok).then(quantile).alias(f"quantile_{level}")
        if ensemble is not None:
            msg = "`ensemble=` is the ensemble form's: this calibrator is Gaussian"
            raise TypeError(msg)
        mu, sigma = self._gaussian(mean, std)
        z = [normal_quantile(u) for u in t]
        return (mu + sigma * self._per_group(z)).alias(f"quantile_{level}")

    def _members(self, ensemble: IntoExpr | None) -> IntoExpr:
        assert self.ensemble is not None  # the ensemble form's
        return pl.col(self.ensemble) if ensemble is None else ensemble

    @staticmethod
    def _no_gaussian(mean: IntoExpr | None, std: IntoExpr | None) -> None:
        if mean is not None or std is not None:
            msg = "`mean=` and `std=` are the Gaussian form's: this calibrator is an ensemble's"
            raise TypeError(msg)

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
        value = self._value()
        assert self.std is not None  # the Gaussian form's (checked by _value)
        sigma = pl.col(self.std) if std is None else to_expr(std, "std")
        return (sigma.cast(pl.Float64) * value).alias(_output_name(sigma))

    def interval_exprs(
        self,
        mean: IntoExpr | None = None,
        std: IntoExpr | None = None,
        *,
        level: float | None = None,
        lower: IntoExpr | None = None,
        upper: IntoExpr | None = None,
        ensemble: IntoExpr | None = None,
    ) -> tuple[pl.Expr, pl.Expr]:
        """Return the interval's bounds, named ``lower`` and ``upper``.

        Conformal: μ ∓ q · σ at the fitted level (infinite bounds for a group that
        had too few rows for its level). Isotonic: the recalibrated quantiles at
        ``(1 ∓ level) / 2`` (:meth:`quantile_expr`), `level` defaulting to the fit's.
        Interval form (`lower`, `upper`: default the fitted columns; no `mean`,
        `std` or `level`): ``[lower − q, upper + q]``, the midpoint of the input
        interval where ``q < −(upper − lower) / 2`` would invert it; null on a row
        whose bounds the interval form refuses, or of a group not fitted. Ensemble
        form (`ensemble`: default the fitted column; no other argument): the same
        adjustment of the members' central interval at the fitted level (their type 7
        quantiles at ``(1 ∓ level) / 2``); null on a row whose ensemble the ensemble
        form refuses (a null, NaN or infinite member, no member). An isotonic ensemble
        calibrator (`ensemble`, `level`) gives its recalibrated quantiles at
        ``(1 ∓ level) / 2`` (:meth:`quantile_expr`).

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
        if self.form == "interval" or (self.form == "ensemble" and self.method == "conformal"):
            return self._adjusted(mean, std, level, lower, upper, ensemble)
        if self.form == "ensemble":
            if lower is not None or upper is not None:
                msg = (
                    "`lower=` and `upper=` are the interval form's: an ensemble calibrator "
                    "takes `ensemble=`"
                )
                raise TypeError(msg)
        else:
            self._require_form("gaussian", "interval_exprs()")
            if lower is not None or upper is not None or ensemble is not None:
                msg = (
                    "`lower=`, `upper=` and `ensemble=` are the interval and ensemble forms': "
                    "this calibrator is Gaussian"
                )
                raise TypeError(msg)
        if self.method == "isotonic":
            chosen = self.level if level is None else level
            if chosen is None:
                msg = "give the intervals' `level` (this calibrator holds none)"
                raise ValueError(msg)
            nominal = float(_check_level(chosen))
            bounds = [
                self.quantile_expr(tau, mean=mean, std=std, ensemble=ensemble)
                for tau in ((1.0 - nominal) / 2.0, (1.0 + nominal) / 2.0)
            ]
            return bounds[0].alias("lower"), bounds[1].alias("upper")
        if self.method != "conformal":
            msg = (
                "interval bounds need method 'conformal' or 'isotonic', this calibrator "
                f"is {self.method!r}"
            )
            raise ValueError(msg)
        if level is not None:
            msg = "a conformal calibrator's intervals are at its fitted level: give no `level`"
            raise ValueError(msg)
        mu, _ = self._gaussian(mean, std)
        half = self.expr(std)
        return (mu - half).alias("lower"), (mu + half).alias("upper")

    def _adjusted(
        self,
        mean: IntoExpr | None,
        std: IntoExpr | None,
        level: float | None,
        lower: IntoExpr | None,
        upper: IntoExpr | None,
        ensemble: IntoExpr | None,
    ) -> tuple[pl.Expr, pl.Expr]:
        """The interval and ensemble forms' conformalized bounds (see :meth:`interval_exprs`)."""
        if self.form == "ensemble":
            if any(v is not None for v in (mean, std, level, lower, upper)):
                msg = (
                    "an ensemble calibrator adjusts the central interval of `ensemble=` at "
                    "its fitted level: give no `mean`, `std`, `level`, `lower` or `upper`"
                )
                raise TypeError(msg)
            assert self.ensemble is not None and self.level is not None  # the form's
            members = pl.col(self.ensemble) if ensemble is None else ensemble
            quantile = self._per_group(self.params["quantile"].cast(pl.Float64))
            new_lo, new_hi = ensemble_adjusted(members, self.level, quantile)
            return new_lo.alias("lower"), new_hi.alias("upper")
        if any(v is not None for v in (mean, std, level, ensemble)):
            msg = (
                "an interval calibrator adjusts `lower=` and `upper=` at its fitted "
                "level: give no `mean`, `std`, `level` or `ensemble`"
            )
            raise TypeError(msg)
        assert self.lower is not None and self.upper is not None  # the interval form's
        lo = pl.col(self.lower) if lower is None else to_expr(lower, "lower")
        hi = pl.col(self.upper) if upper is None else to_expr(upper, "upper")
        quantile = self._per_group(self.params["quantile"].cast(pl.Float64))
        new_lo, new_hi = adjusted_interval(lo, hi, quantile)
        return new_lo.alias("lower"), new_hi.alias("upper")

    def quantiles_expr(self, quantiles: str | Sequence[str] | None = None) -> pl.Expr:
        """Return the recalibrated quantiles of a quantile calibrator, as one list per row.

        ``q_k + shift_k`` at each level, sorted (the monotone rearrangement; the input
        is checked, not sorted). `quantiles` (default: the fitted column or columns)
        must be at the fitted levels.

        Returns
        -------
        pl.Expr
            List(Float64) of the K recalibrated quantiles, named after the quantile
            column (``quantiles`` for K columns); null on a row whose quantiles the
            quantile form refuses (crossing, a non-finite entry, another length), or
            of a group not fitted.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({"y": [1.0, 2.0, 3.0, 4.0], "q": [[0.0, 2.0]] * 4})
        >>> cal = pc.fit_regression_calibrator(train, "y", quantiles="q", levels=[0.2, 0.6])
        >>> cal.params["shift"].to_list()
        [[1.0, 1.0]]
        >>> train.head(1).select(cal.quantiles_expr()).item().to_list()
        [1.0, 3.0]
        """
        self._require_form("quantile", "quantiles_expr()")
        assert self.quantiles is not None and self.levels is not None  # the quantile form's
        chosen = self.quantiles if quantiles is None else quantiles
        if not isinstance(chosen, str):
            chosen = list(chosen)
            if len(chosen) != len(self.levels):
                msg = (
                    f"`quantiles` names {len(chosen)} columns, the calibrator has "
                    f"{len(self.levels)} levels"
                )
                raise ValueError(msg)
        width = len(self.levels)
        table = self.params.select(list(self.by))
        matrix = np.asarray(self.params["shift"].to_list(), np.float64).reshape(-1, width)
        found = per_group(self._keys(), table, matrix, [math.nan] * width)
        shifts = [pl.when(f.is_nan()).then(None).otherwise(f) for f in found]
        name = chosen if isinstance(chosen, str) else "quantiles"
        return shifted_quantiles(chosen, self.levels, shifts).alias(name)

    def apply(self, data: FrameT) -> FrameT:
        """Return `data` with ``<std>_calibrated`` (σ scaling) or ``lower``/``upper`` added.

        ``lower``/``upper``: the conformal intervals (of the Gaussian or the ensemble
        form), or the isotonic calibrator's (Gaussian or ensemble) recalibrated
        central intervals at its fitted `level`. Interval form:
        ``<lower>_calibrated`` and ``<upper>_calibrated``. Quantile form:
        ``<quantiles>_calibrated`` (a list), or ``<column>_calibrated`` for each of K
        quantile columns.

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
        if self.form == "interval":
            lower, upper = self.interval_exprs()
            return data.with_columns(
                lower.alias(f"{self.lower}_calibrated"), upper.alias(f"{self.upper}_calibrated")
            )
        if self.form == "quantile":
            listed = self.quantiles_expr()
            if isinstance(self.quantiles, str):
                return data.with_columns(listed.alias(f"{self.quantiles}_calibrated"))
            assert self.quantiles is not None
            return data.with_columns(
                listed.list.get(k).alias(f"{name}_calibrated")
                for k, name in enumerate(self.quantiles)
            )
        if self.form == "ensemble" or self.method in ("conformal", "isotonic"):
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
        if self.form == "quantile":
            finite_entry = pl.when(pl.element().is_finite()).then(pl.element())
            finite = finite.with_columns(pl.col("shift").list.eval(finite_entry))
        elif self.method in _PARAMETER:
            name = _PARAMETER[self.method]
            finite = finite.with_columns(
                pl.when(pl.col(name).is_finite()).then(pl.col(name)).alias(name)
            )
        quantiles = self.quantiles
        options = {
            "form": self.form,
            "mean": self.mean,
            "std": self.std,
            "lower": self.lower,
            "upper": self.upper,
            "quantiles": quantiles
            if quantiles is None or isinstance(quantiles, str)
            else list(quantiles),
            "levels": None if self.levels is None else list(self.levels),
            "level": self.level,
        }
        if self.form == "ensemble":
            options["ensemble"] = self.ensemble  # only here: other forms' files are unchanged
        return {
            "format": REGRESSION_FORMAT,
            "format_version": REGRESSION_FORMAT_VERSION,
            "package_version": __version__,
            "method": self.method,
            "by": list(self.by),
            "options": options,
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
    return order_statistic(pl.col(_SCORE), level)


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
    mean: str | None = None,
    std: str | None = None,
    quantiles: str | Sequence[str] | None = None,
    levels: Sequence[float] | None = None,
    ensemble: str | None = None,
    seed: int = 0,
    id: str | None = None,  # noqa: A002  (pc.rank_pit's row identity)
    lower: str | None = None,
    upper: str | None = None,
    by: Keys = None,
    method: RegressionRecalibration | None = None,
    level: float = 0.9,
    weight: str | None = None,
) -> RegressionCalibrator:
    """Fit a recalibration of regression predictions per group.

    Parameters
    ----------
    data
        A DataFrame or a LazyFrame (a scan streams); the fit collects one small
        table (one row per group).
    target
        Column name of the target.
    mean, std
        Column names of the predicted mean and standard deviation: the Gaussian
        form N(`mean`, `std`²). Give exactly one form (else a ``TypeError`` naming
        the forms given), as to :func:`regression_summary`.
    quantiles, levels
        The quantile form: an Array or List column of K predicted quantiles (or K
        column names) at their K levels in (0, 1), strictly increasing.
    ensemble
        The ensemble form: an Array or List column of M members per row (a sample
        from the predictive distribution), recalibrated as the central interval of
        its members at `level` (method ``"conformal"``, the default) or through its
        randomized rank PIT (``"isotonic"``).
    seed, id
        The rank PIT's draws (as :func:`polars_calib.rank_pit`): the seed, and an
        integer column holding a unique row id (default: the row's position in
        `data`). Only for ``"isotonic"`` ensembles (else a ``TypeError`` unless left
        at their defaults).
    lower, upper
        The interval form: column names of the bounds of one interval per row.
    by
        Group keys: one fit per group.
    method
        None (default): ``"std_scaling"`` for the Gaussian form, ``"conformal"`` for
        the others. ``"std_scaling"``: σ' = s · σ with s² the weighted mean of ((y − μ)/σ)²,
        the scale minimizing the Gaussian NLL (Levi et al. 2022). ``"conformal"``:
        split-conformal intervals μ ∓ q · σ, q the ⌈(n + 1) · level⌉-th smallest
        score |y − μ| / σ of the group (MAPIE's split method). ``"isotonic"``: the
        map R from the PIT ``u = Φ((y − μ)/σ)`` to its empirical CDF in the group
        (Kuleshov et al. 2018); the recalibrated CDF is R(u), the quantile at τ is
        μ + σ Φ⁻¹(R⁻¹(τ)) (``cdf_expr``, ``quantile_expr``, ``interval_exprs``).
        Intervals, ``"conformal"``: conformalized quantile regression (Romano et al.
        2019, MAPIE's ``ConformalizedQuantileRegressor`` with a symmetric
        correction): q the ⌈(n + 1) · level⌉-th smallest score max(lower − y, y −
        upper), the interval [lower − q, upper + q] (``interval_exprs``).
        Ensembles, ``"conformal"``: the same CQR correction of the members' central
        interval, from their empirical quantiles at (1 − level)/2 and (1 + level)/2
        (numpy's default ``"linear"`` rule, Hyndman and Fan's type 7).
        Ensembles, ``"isotonic"``: the map R from the randomized rank PIT to its
        empirical CDF in the group, as for the Gaussian form; the quantile at τ is the
        members' quantile at R⁻¹(τ) on the rank PIT's scale (``quantile_expr``).
        Quantiles, ``"conformal"``: each level τ shifted by the ⌈(n + 1) τ⌉-th
        smallest y − q_τ of the group, then sorted (``quantiles_expr``).
    level
        The conformal intervals' nominal coverage, in (0, 1) (Gaussian, interval and
        ensemble forms); for ``"isotonic"``, the level of the central intervals ``apply``
        adds; unused by σ scaling and the quantile form (each level is its own).
    weight
        Row weights (σ scaling, and isotonic, both forms, as frequency weights of the
        empirical CDF).

    Returns
    -------
    RegressionCalibrator
        Its ``params``: keys, ``count``, ``fallback`` and ``scale``, ``quantile``, the
        isotonic points ``x`` and ``y``, or the quantile form's ``shift``.

    Raises
    ------
    CalibrationDataError
        A missing or non-numeric column, or refused rows (the form's rule, as
        :func:`regression_summary`'s: a NaN or infinite target or mean, a standard
        deviation that is not a positive finite number, a bad weight, a lower bound
        above its upper bound, crossing quantiles, an ensemble member null, NaN or
        infinite, an ensemble with no member), counted per check. A row with a
        null is ignored.

    Notes
    -----
    A group with no used weight, or whose targets all equal their means, keeps
    scale 1 (``fallback`` true). A conformal group with ⌈(n + 1) · level⌉ > n
    gets an infinite quantile (``fallback`` true), as MAPIE with ``unbounded=True``.
    An isotonic group with no used weight keeps the identity map (``fallback``
    true); its map holds the anchors (0, 0) and (1, 1), so R is a CDF on [0, 1]
    (Kuleshov's clipped fit is not, below the smallest PIT). Each conformal
    correction of the interval and quantile forms is infinite, with ``fallback``
    true, where its order statistic passes n. See ``docs/regression.md``,
    "Recalibration".

    References
    ----------
    Levi, Gispan, Giladi, Fetaya (2022), "Evaluating and Calibrating Uncertainty
    Prediction in Regression Tasks", Sensors 22(15). MAPIE 1.6,
    ``SplitConformalRegressor`` and ``ConformalizedQuantileRegressor``. Romano,
    Patterson, Candès (2019), "Conformalized Quantile Regression", NeurIPS.
    Chernozhukov, Fernández-Val, Galichon (2010), "Quantile and Probability Curves
    Without Crossing", Econometrica 78(3). Kuleshov, Fenner, Ermon (2018), "Accurate
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
    kind = Form(
        mean=mean,
        std=std,
        quantiles=quantiles,
        levels=levels,
        ensemble=ensemble,
        seed=seed,
        id=id,
        lower=lower,
        upper=upper,
    ).kind
    chosen: RegressionRecalibration = method or (
        "std_scaling" if kind == "gaussian" else "conformal"
    )
    check_choice("method", chosen, get_args(RegressionRecalibration))
    exact_level = _check_level(level)
    allowed = {"gaussian": chosen, "ensemble": "isotonic"}.get(kind, "conformal")
    if chosen not in ("conformal", allowed):
        named = "'conformal'" + (" or 'isotonic'" if kind == "ensemble" else "")
        msg = f"the {kind} form's recalibration is method {named}, got {chosen!r}"
        raise ValueError(msg)
    if chosen == "conformal" and weight is not None:
        msg = "`weight` is not supported with method 'conformal' (unweighted split conformal)"
        raise ValueError(msg)
    computed = {e.meta.output_name(): e for e in GroupKeys(by).computed()}
    fields: dict[str, Any]
    if kind == "interval":
        for role, value in (("lower", lower), ("upper", upper)):
            if not isinstance(value, str):
                msg = (
                    f"`{role}` must be one column name (one interval per fit), got "
                    f"{type(value).__name__}"
                )
                raise TypeError(msg)
        assert lower is not None and upper is not None
        prepared, rows = interval_scores(data, target, lower, upper, by)
        fitted = _fit_scalar(rows, prepared.keys, "conformal", exact_level)
        columns, fields = ["quantile"], {"lower": lower, "upper": upper}
    elif kind == "ensemble":
        assert ensemble is not None
        options = (seed, id, by, weight)
        prepared, fitted, columns = _fit_ensemble(data, target, ensemble, options, chosen, level)
        fields = {"ensemble": ensemble}
    elif kind == "quantile":
        assert quantiles is not None and levels is not None
        found = check_levels(levels)
        prepared, rows = quantile_scores(data, target, quantiles, found, by)
        fitted = quantile_shifts(rows, prepared.keys, found)
        held = quantiles if isinstance(quantiles, str) else tuple(quantiles)
        columns, fields = ["shift"], {"quantiles": held, "levels": found}
    else:
        assert mean is not None and std is not None
        prepared, rows = _gaussian_rows(data, target, mean, std, by, weight, chosen)
        if chosen == "isotonic":
            fitted, columns = fit_pit_isotonic(rows, prepared.keys, _SCORE), ["x", "y"]
        else:
            fitted = _fit_scalar(rows, prepared.keys, chosen, exact_level)
            columns = [_PARAMETER[chosen]]
        fields = {"mean": mean, "std": std}
    check_refused(prepared, int(fitted["refused"].sum()))
    keys = prepared.keys
    schema = prepared.lf.collect_schema()
    return RegressionCalibrator(
        method=chosen,
        by=tuple(keys),
        params=fitted.select(*keys, "count", "fallback", *columns),
        level=None if chosen == "std_scaling" or kind == "quantile" else float(level),
        schema={k: str(schema[k]) for k in keys},
        computed=computed,
        form=kind,
        **{"mean": None, "std": None, **fields},
    )


def _gaussian_rows(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    mean: str,
    std: str,
    by: Keys,
    weight: str | None,
    method: str,
) -> tuple[Prepared, pl.LazyFrame]:
    """The Gaussian problem and its rows: keys, the method's score, weight, flags."""
    prepared = prepare_gaussian(data, target, mean=mean, std=std, by=by, weight=weight)
    problem = prepared.problem
    z2 = problem.terms["squared_error"] / problem.terms["variance"]
    score = {"std_scaling": z2, "conformal": z2.sqrt(), "isotonic": problem.prob}[method]
    return prepared, _score_rows(prepared, score)


def _score_rows(prepared: Prepared, score: pl.Expr) -> pl.LazyFrame:
    """The problem's rows: keys, `score`, weight, flags."""
    problem = prepared.problem
    refused = problem.refused.fill_null(False)
    return prepared.lf.select(
        *prepared.keys,
        score.alias(_SCORE),
        (pl.lit(1.0) if problem.weight is None else problem.weight).alias(WEIGHT),
        (problem.present & ~refused).alias(USED),
        refused.alias(REFUSED),
    )


def _fit_ensemble(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    ensemble: str,
    options: tuple[int, str | None, Keys, str | None],
    method: RegressionRecalibration,
    level: float,
) -> tuple[Prepared, pl.DataFrame, list[str]]:
    """Fit the ensemble form: the CQR correction of the members' central interval, or
    the isotonic map of the rank PIT (`options`: its seed and id, the keys, the weight)."""
    seed, identity, by, weight = options
    if method == "conformal":
        if seed != 0 or identity is not None:
            msg = (
                "`seed=` and `id=` are the rank PIT's, used by method 'isotonic': "
                "'conformal' reads no PIT"
            )
            raise TypeError(msg)
        prepared, rows = ensemble_scores(data, target, ensemble, level, by)
        return prepared, _fit_scalar(rows, prepared.keys, method, _check_level(level)), ["quantile"]
    prepared = prepare_ensemble(
        data,
        target,
        ensemble=ensemble,
        seed=seed,
        id=identity,
        by=by,
        time=None,
        every=None,
        weight=weight,
    )
    rows = _score_rows(prepared, prepared.problem.prob)  # the rank PIT
    return prepared, fit_pit_isotonic(rows, prepared.keys, _SCORE), ["x", "y"]
