"""The prediction forms of the regression frame functions besides the Gaussian one.

:func:`~polars_calib.regression_statistics`, :func:`~polars_calib.regression_summary`
and :func:`~polars_calib.quantile_reliability` take the prediction by keyword: ``mean=``
and ``std=`` (Gaussian), ``ensemble=`` (an Array or List column of members, with the
rank PIT's ``seed=`` and ``id=``) or ``lower=``/``upper=`` (central intervals, with their
nominal ``level=``). :class:`Form` holds these keywords, says which form a call gives
(exactly one, else a ``TypeError``) and runs the one plan of the ensemble and interval
forms (:mod:`polars_calib._table.ensembles`, :mod:`polars_calib._table.intervals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import RegressionMetric, check_choice
from polars_calib._core.quantiles import check_levels
from polars_calib._core.validation import CalibrationDataError
from polars_calib._table.ensembles import ENSEMBLE_METRICS, ensemble_plan
from polars_calib._table.forms import FormKind, RegressionForm
from polars_calib._table.intervals import (
    INTERVAL_METRICS,
    finish_intervals,
    interval_columns,
    interval_levels,
    interval_plan,
)
from polars_calib._table.pipeline import Plan
from polars_calib._table.regression import REGRESSION_METRICS

__all__ = [
    "Form",
    "FormOptions",
    "interval_metrics_from_statistics",
    "is_interval_table",
    "table_metrics",
]


@dataclass(frozen=True)
class FormOptions:
    """The options every form's plan shares (the frame function's, as given)."""

    by: Keys
    time: str | None
    every: str | None
    n_levels: int
    weight: str | None


@dataclass(frozen=True)
class Form:
    """The prediction keywords of a regression frame function call."""

    mean: str | None = None
    std: str | None = None
    ensemble: str | None = None
    seed: int = 0
    id: str | None = None
    lower: str | Sequence[str] | None = None
    upper: str | Sequence[str] | None = None
    level: float | Sequence[float] | None = None
    quantiles: str | Sequence[str] | None = None
    levels: Sequence[float] | None = None

    @property
    def kind(self) -> FormKind:
        """``"gaussian"``, ``"quantile"``, ``"ensemble"`` or ``"interval"``: ``TypeError``
        unless exactly one (the quantile form is :mod:`polars_calib._frames.quantiles`')."""
        given: dict[FormKind, bool] = {
            "gaussian": self.mean is not None or self.std is not None,
            "quantile": self.quantiles is not None or self.levels is not None,
            "ensemble": self.ensemble is not None,
            "interval": self.lower is not None or self.upper is not None,
        }
        named: list[FormKind] = [kind for kind, present in given.items() if present]
        if len(named) != 1:
            msg = (
                "give exactly one prediction form: `mean=` and `std=` (Gaussian), "
                "`quantiles=` and `levels=` (quantiles), `ensemble=` (members), or "
                "`lower=` and `upper=` (central intervals); got "
                + (" and ".join(named) if named else "none")
            )
            raise TypeError(msg)
        kind: FormKind = named[0]
        pairs = {
            "gaussian": ("mean", "std"),
            "quantile": ("quantiles", "levels"),
            "interval": ("lower", "upper"),
        }
        for first, second in [pairs[kind]] if kind in pairs else []:
            if getattr(self, first) is None or getattr(self, second) is None:
                msg = f"`{first}=` and `{second}=` go together: give both"
                raise TypeError(msg)
        if kind != "interval" and self.level is not None:
            msg = "`level=` is the nominal coverage of central intervals (`lower=`, `upper=`)"
            raise TypeError(msg)
        if kind != "ensemble" and (self.seed != 0 or self.id is not None):
            msg = "`seed=` and `id=` are the rank PIT's, for `ensemble=` predictions"
            raise TypeError(msg)
        return kind

    def metrics(self, metrics: RegressionMetric | Sequence[RegressionMetric] | None) -> list[str]:
        """The metrics asked (the form's default list for None); ``ValueError`` for a
        metric the form does not have."""
        kind = self.kind
        own: tuple[str, ...] = {
            "gaussian": REGRESSION_METRICS,
            "ensemble": ENSEMBLE_METRICS,
            "interval": INTERVAL_METRICS,
        }[kind]
        if metrics is None:
            return list(own)
        asked: list[str] = [metrics] if isinstance(metrics, str) else list(metrics)
        for metric in asked:
            check_choice("metrics", metric, own)
        return asked

    def plan(self, data: pl.DataFrame | pl.LazyFrame, target: str, options: FormOptions) -> Plan:
        """The one plan of an ensemble or interval form (the Gaussian's is the caller's)."""
        if self.kind == "ensemble":
            assert self.ensemble is not None
            return ensemble_plan(
                data,
                target,
                ensemble=self.ensemble,
                seed=self.seed,
                id=self.id,
                by=options.by,
                time=options.time,
                every=options.every,
                n_levels=options.n_levels,
                weight=options.weight,
            )
        assert self.lower is not None and self.upper is not None
        lowers, uppers = interval_columns(self.lower, self.upper)
        return interval_plan(
            data,
            target,
            lower=lowers,
            upper=uppers,
            by=options.by,
            time=options.time,
            every=options.every,
            weight=options.weight,
        )

    def plain(self, target: str, n_levels: int) -> RegressionForm:
        """The form as plain values (what another engine's workers rebuild it from).

        A name that is not a string is kept, for the form's schema check to refuse
        (``TypeError``, before any job), as it does for a Polars frame.
        """
        kind = self.kind
        form = RegressionForm(kind, target, n_levels=n_levels)
        if kind == "quantile":
            quantiles = self.quantiles
            found = check_levels(self.levels)
            held = quantiles if isinstance(quantiles, str) else tuple(quantiles or ())
            return replace(form, quantiles=held, levels=found)
        if kind == "interval":
            assert self.lower is not None and self.upper is not None
            lowers, uppers = interval_columns(self.lower, self.upper)
            return replace(form, lower=tuple(lowers), upper=tuple(uppers))
        return replace(
            form, mean=self.mean, std=self.std, ensemble=self.ensemble, seed=self.seed, id=self.id
        )

    def interval_summary(self, plan: Plan, metrics: Sequence[str]) -> pl.LazyFrame:
        """The interval summary of a plan: one row per group and level."""
        assert self.lower is not None and self.upper is not None
        levels = interval_levels(self.level, len(interval_columns(self.lower, self.upper)[0]))
        return finish_intervals(plan.checked(), plan.keys, metrics, levels)


_SUMS = {"crps": "sum_crps", "crps_fair": "sum_crps_fair", "nll": "sum_nll"}
_SUMS["sharpness"] = "sum_variance"


def table_metrics(
    stats: pl.DataFrame | pl.LazyFrame,
    metrics: RegressionMetric | Sequence[RegressionMetric] | None,
) -> list[str]:
    """The metrics to finish from a Gaussian or ensemble statistics table (its schema
    says which: an ensemble table sums ``crps_fair``), the form's list for None.

    ``ValueError`` for a metric neither form has (the interval ones: their table holds
    no level); :class:`CalibrationDataError` for one whose sums the table lacks.
    """
    schema = stats.collect_schema()
    form = Form(ensemble="members") if "sum_crps_fair" in schema else Form(mean="m", std="s")
    asked = form.metrics(metrics)
    missing = [_SUMS[m] for m in asked if m in _SUMS and _SUMS[m] not in schema]
    if missing:
        msg = (
            "`stats` is not a regression statistics table (see `regression_statistics`): "
            f"missing column(s) {', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    return asked


def is_interval_table(stats: pl.DataFrame | pl.LazyFrame) -> bool:
    """Whether a table is an interval table (it sums ``sum_covered_0``): its schema only."""
    return "sum_covered_0" in stats.collect_schema()


def interval_metrics_from_statistics(
    stats: pl.DataFrame | pl.LazyFrame,
    keys: list[str],
    *,
    n_levels: int | None,
    metrics: RegressionMetric | Sequence[RegressionMetric] | None,
    curve: str | None,
    level: float | Sequence[float] | None,
) -> pl.LazyFrame:
    """Finish the summary of an interval table per `keys` and level (a plan).

    The table holds one set of sums per interval (``sum_covered_k``, ...) but not their
    nominal levels: `level` gives them, one per interval, as to
    :func:`~polars_calib.regression_summary`.
    """
    if n_levels is not None or curve is not None:
        msg = "`n_levels` and `curve` are the calibration curve's: an interval table has none"
        raise TypeError(msg)
    schema = stats.collect_schema()
    count = sum(1 for name in schema if name.startswith("sum_covered_"))
    levels = interval_levels(level, count)
    asked = Form(lower="lo", upper="hi", level=levels).metrics(metrics)
    return finish_intervals(stats.lazy(), keys, asked, levels)
