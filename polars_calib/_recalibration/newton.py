"""Platt, beta and temperature fits per group: one aggregation per Newton step.

Each step is **one** aggregation over all groups of the log-likelihood, its gradient
and its Hessian (sums of per-row terms, :mod:`polars_calib._recalibration.terms`;
the first step also counts and checks each group), then a 2×2 or 3×3 solve per
group in numpy (:mod:`polars_calib._recalibration.solve`). Large data first fit a
subsample, whose parameters start the full-data steps near the maximum.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from polars_calib._core.draws import uniform, with_row_key, word
from polars_calib._core.problem import EPS
from polars_calib._recalibration.lookup import key_range, per_group
from polars_calib._recalibration.maps import (
    CLIPPED_SHARE,
    PARAMETERS,
    ClippedScoresWarning,
    clipped,
    features,
    sigmoid,
)
from polars_calib._recalibration.rows import (
    GROUP,
    INDEX,
    LABEL,
    PROB,
    REFUSED,
    TRUE_CLASS,
    USED,
    VECTOR,
    WEIGHT,
    FitSpec,
    check_refused,
    group_columns,
    grouped,
)
from polars_calib._recalibration.solve import Terms, beta_constraint, newton
from polars_calib._recalibration.terms import logistic_step, pass_sums, temperature_step
from polars_calib._table.plan import Prepared, raise_for_weight_totals

__all__ = ["SAMPLE_ROWS", "fit_newton", "subsample"]

# The identity map starts a fit, unless a subsample's fit does (the sigmoid of the score,
# which has none: q = 1/2).
_START: dict[str, tuple[float, ...]] = {
    "platt": (1.0, 0.0),
    "sigmoid": (0.0, 0.0),
    "beta": (1.0, 1.0, 0.0),
    "temperature": (1.0,),
}
SAMPLE_ROWS = 200_000
"""The default size of the subsample whose fit starts the Newton steps."""
_SAMPLE_FROM = 4  # data of at least this many times the subsample's size fit one first
_SAMPLE_TOL = 1e-4  # the start's precision: well below its sampling error
_SAMPLE_SEED = 0  # the subsample's draws (:mod:`polars_calib._core.draws`)

RowsOf = Callable[[pl.LazyFrame], pl.LazyFrame]
"""The problem's rows (:func:`~polars_calib._recalibration.rows.problem_rows`) of a frame."""


def fit_newton(rows: RowsOf, prepared: Prepared, spec: FitSpec, keys: list[str]) -> pl.DataFrame:
    """Fit Platt, beta or temperature per group: Newton steps, from a subsample's fit.

    The rows each pass reads (:func:`_newton_rows`) are computed once for a
    DataFrame. Data of at least ``4 * spec.sample_rows`` rows first fit a
    :func:`subsample` of about ``spec.sample_rows`` rows (in memory), whose
    parameters start the full-data steps; the first full-data step also counts,
    checks and identifies each group (:func:`_newton_fit`).

    Returns
    -------
    DataFrame
        keys, count, the method's parameters, iterations, fallback, reason.
    """
    group = group_columns(keys)
    weighted = prepared.problem.weight is not None

    def newton_rows(lf: pl.LazyFrame) -> pl.LazyFrame:
        return _newton_rows(grouped(rows(lf), keys), group, spec.method, weighted)

    source = newton_rows(prepared.lf)
    covering = None
    if isinstance(prepared.data, pl.DataFrame):
        # In memory already: the regressors once, not once per pass.
        computed = source.collect()
        source, size, covering = computed.lazy(), prepared.data.height, key_range(computed, group)
    else:
        # One read (a parquet scan answers from its metadata).
        size = int(prepared.lf.select(pl.len()).collect().item())
    start = None
    if spec.sample_rows is not None and size >= _SAMPLE_FROM * spec.sample_rows:
        chosen = subsample(prepared.lf, size, spec.sample_rows)
        sample = newton_rows(chosen).filter(~pl.col(REFUSED)).collect()
        start = _start(sample, group, spec, weighted)

    def check(groups: pl.DataFrame) -> None:
        check_refused(prepared, int(groups["refused"].sum()))
        if "weight" in groups.columns:
            raise_for_weight_totals(prepared, groups)

    groups, theta, iterations, reasons = _newton_fit(
        source, group, spec, weighted, start, check, True, covering
    )
    _warn_clipped(groups, keys, spec.method)
    return _params(groups, keys, spec.method, theta, iterations, reasons)


def _warn_clipped(groups: pl.DataFrame, keys: list[str], method: str) -> None:
    """Warn for the groups whose share of clipped scores is above :data:`CLIPPED_SHARE`."""
    if method not in ("platt", "beta"):
        return
    count = pl.col("count")
    many = groups.filter(pl.col("__clipped") > CLIPPED_SHARE * count, count > 0)
    if not many.height:
        return
    shown = []
    for row in many.head(3).iter_rows(named=True):
        name = ", ".join(f"{k}={row[k]!r}" for k in keys) or "the one group"
        share = row["__clipped"] / row["count"]
        shown.append(f"{name}: {row['__clipped']} of {row['count']} rows ({share:.1%})")
    more = f"; and {many.height - 3} more group(s)" if many.height > 3 else ""
    msg = (
        f"method={method!r}: scores of exactly 0 or 1 (clipped to [eps, 1 - eps], "
        f"logit ±36) are more than {CLIPPED_SHARE:.0%} of the rows and can dominate "
        "the fit in " + "; ".join(shown) + more + ". method='sigmoid' fits on the "
        "score itself (scikit-learn's sigmoid method)."
    )
    warnings.warn(msg, ClippedScoresWarning, stacklevel=6)


def subsample(lf: pl.LazyFrame, size: int, rows: int) -> pl.LazyFrame:
    """Return about `rows` rows of `lf` (of `size` rows): one drawn in each block of rows.

    The rows are cut into blocks of ``every = size // rows`` rows, by position;
    block ``j`` keeps its row at offset ``floor(every * u_j)``, ``u_j`` the package's
    counter-based uniform of (identity ``j``, replicate 0, a fixed seed)
    (:mod:`polars_calib._core.draws`). The rows are kept by a predicate on the row
    index, so a DataFrame and a LazyFrame of the same rows give the same subsample:
    deterministic, spread evenly over the rows, and blind to a period in their
    order (every ``k``-th row would pick one group of rows that cycle through ``k``
    groups). A draw per block, not per row: hashing every row's identity would cost
    more than the whole fit.
    """
    every = size // rows
    blocks = pl.LazyFrame({"block": pl.int_range(-(-size // every), dtype=pl.Int64, eager=True)})
    keyed = with_row_key(blocks, pl.col("block"), _SAMPLE_SEED, ("__h1", "__h2"))
    offset = (uniform(word(pl.col("__h1"), pl.col("__h2"), 0)) * every).floor().cast(pl.Int64)
    positions = keyed.select(pl.col("block") * every + offset).collect().to_series()
    kept = positions.filter(positions < size).cast(pl.get_index_type())
    return lf.with_row_index(INDEX).filter(pl.col(INDEX).is_in(kept.implode())).drop(INDEX)


def _start(sample: pl.DataFrame, group: list[str], spec: FitSpec, weighted: bool) -> pl.DataFrame:
    """Return the subsample's fit of each group it could fit (``__start{j}`` columns)."""
    fitted, theta, _, failures = _newton_fit(
        sample.lazy(), group, replace(spec, tol=_SAMPLE_TOL), weighted, None, None, False
    )
    keep = [f is None and bool(np.all(np.isfinite(t))) for f, t in zip(failures, theta)]
    return (
        fitted.select(group)
        .with_columns(
            pl.Series(f"__start{j}", theta[:, j], dtype=pl.Float64) for j in range(theta.shape[1])
        )
        .filter(pl.Series(keep, dtype=pl.Boolean))
    )


def _params(
    groups: pl.DataFrame,
    keys: list[str],
    method: str,
    theta: NDArray[np.float64],
    iterations: NDArray[np.int64],
    reasons: list[str | None],
) -> pl.DataFrame:
    """Return the parameter table of a fit (temperature: ``T`` from ``β = 1 / T``)."""
    n = groups.height
    names = PARAMETERS[method]
    if method == "temperature":
        todo = np.array([reason is None for reason in reasons], dtype=bool)
        beta = theta[:, 0]
        for g in np.flatnonzero(todo & (beta <= 0.0)).tolist():
            reasons[g] = f"no positive temperature (inverse temperature {beta[g]:.3g})"
        theta = np.where(beta[:, None] > 0.0, 1.0 / np.where(beta > 0, beta, 1.0)[:, None], 1.0)
    values = {
        name: [None if reasons[i] is not None else float(theta[i, k]) for i in range(n)]
        for k, name in enumerate(names)
    }
    return groups.select(*keys, "count").with_columns(
        *(pl.Series(name, values[name], dtype=pl.Float64) for name in names),
        pl.Series("iterations", [int(v) for v in iterations], dtype=pl.Int64),
        pl.lit(None, pl.String).alias("fallback"),
        pl.Series("reason", reasons, dtype=pl.String),
    )


def _newton_rows(rows: pl.LazyFrame, group: list[str], method: str, weighted: bool) -> pl.LazyFrame:
    """Return the rows a Newton pass reads, with the regressors computed.

    The used rows and the refused ones (a refused row makes the fit raise after
    its first pass).
    """
    keep = pl.col(USED) | pl.col(REFUSED)
    weight = [pl.col(WEIGHT)] if weighted else []
    if method == "temperature":
        logs = pl.col(VECTOR).list.eval(pl.element().clip(EPS, 1.0).log())
        return rows.filter(keep).select(
            *group,
            logs.alias("__logs"),
            logs.list.get(pl.col(TRUE_CLASS), null_on_oob=True).alias("__true"),
            *weight,
            pl.col(REFUSED),
        )
    regressors = features(method, pl.col(PROB))[:-1]  # the intercept's regressor is 1
    return rows.filter(keep).select(
        *group,
        *(f.alias(f"__f{i}") for i, f in enumerate(regressors)),
        clipped(pl.col(PROB)).alias("__clipped"),
        pl.col(LABEL),
        *weight,
        pl.col(REFUSED),
    )


def _newton_fit(
    source: pl.LazyFrame,
    group: list[str],
    spec: FitSpec,
    weighted: bool,
    start: pl.DataFrame | None,
    check: Callable[[pl.DataFrame], None] | None,
    constrained: bool,
    covering: tuple[int, int] | None = None,
) -> tuple[pl.DataFrame, NDArray[np.float64], NDArray[np.int64], list[str | None]]:
    """Run Newton per group over `source`, each step one aggregation over all groups.

    The first pass, at `start` (a group's ``__start{j}`` columns; the identity map
    for a group it lacks), also counts each group's rows and refused rows, and what
    identifies a fit (its classes, their separation) and the sums that do not
    change between steps (:func:`_first_pass`); `check` sees those counts before
    any step is taken. `covering` is :func:`~polars_calib._recalibration.lookup.key_range`
    of `source`, when known. With `constrained`, beta calibration keeps betacal's
    monotone rule.

    Returns
    -------
    tuple
        The first pass's table (one row per group, sorted by `group`), the
        parameters, the passes per group and why a group was not fitted.
    """
    identity = _START[spec.method]
    key_exprs = [pl.col(name) for name in group]
    thetas = [pl.lit(value, pl.Float64) for value in identity]
    theta_columns = [f"__start{j}" for j in range(len(identity))]
    if start is not None and start.height:
        thetas = per_group(
            key_exprs,
            start.select(group),
            start.select(theta_columns).to_numpy(),
            list(identity),
            covering,
        )
    groups = _first_pass(source, group, spec.method, weighted, thetas)
    if check is not None:
        check(groups)
    reasons = [_precheck(row, spec) for row in groups.iter_rows(named=True)]
    theta = np.tile(np.array(identity), (groups.height, 1))
    if start is not None and start.height:
        starts = groups.select(group).join(
            start, on=group, how="left", nulls_equal=True, maintain_order="left"
        )
        theta = np.column_stack(
            [
                starts[name].fill_null(value).to_numpy()
                for name, value in zip(theta_columns, identity)
            ]
        )
    step = _Pass.of(source, groups, group, spec, weighted)
    todo = np.array([reason is None for reason in reasons], dtype=bool)
    constrain = beta_constraint if spec.method == "beta" and constrained else None
    first = step.terms(groups, np.arange(groups.height), theta)
    theta, iterations, failures = newton(
        step, theta, todo, spec.tol, spec.max_iter, constrain, first
    )
    for i, failure in enumerate(failures):
        if failure is not None and reasons[i] is None:
            reasons[i] = failure
    return groups, theta, iterations, reasons


def _first_pass(
    source: pl.LazyFrame, group: list[str], method: str, weighted: bool, thetas: list[pl.Expr]
) -> pl.DataFrame:
    """Return the first pass's table: per group, its counts and checks and a step's sums.

    A logistic fit groups by group and outcome (:func:`_identified`): a class's
    extremes are a plain min and max, and its sums give both the group's sums and
    the positives' (sum w y F = the y = 1 row's).
    """
    rows, sums = pass_sums(source, method, thetas, weighted, third=True)
    counts = [pl.len().alias("__rows"), pl.col(REFUSED).sum().cast(pl.Int64).alias("refused")]
    if method != "temperature":
        counts.append(pl.col("__clipped").sum().cast(pl.Int64))
        k = len(_START[method])
        by_class = rows.group_by(*group, LABEL).agg(*counts, *_logistic_checks(k, weighted), *sums)
        names = [s.meta.output_name() for s in sums]
        first = _identified(by_class.collect(), group, method, names)
    else:
        first = rows.group_by(group).agg(*counts, *sums).collect()
    if group == [GROUP]:
        # The one group exists in empty data too (as a whole-frame statistics table).
        first = pl.DataFrame({group[0]: [0]}, schema={group[0]: pl.Int64}).join(
            first, on=group[0], how="left"
        )
    return first.sort(group, nulls_last=True).with_columns(
        (pl.col("__rows").fill_null(0) - pl.col("refused").fill_null(0))
        .cast(pl.Int64)
        .alias("count"),
        pl.col("refused").fill_null(0),
    )


@dataclass(frozen=True)
class _Pass:
    """A Newton pass over `source` at given points of some of the groups of `groups`.

    `fixed` holds the sums of the first pass that do not change between steps, and
    `targets` the target of a positive and of a negative per group (logistic fits).
    """

    source: pl.LazyFrame
    groups: pl.DataFrame
    group: list[str]
    method: str
    weighted: bool
    fixed: dict[str, NDArray[np.float64]]
    targets: NDArray[np.float64] | None
    every_key: tuple[int, int] | None  # every row's group is one of these

    @classmethod
    def of(
        cls,
        source: pl.LazyFrame,
        groups: pl.DataFrame,
        group: list[str],
        spec: FitSpec,
        weighted: bool,
    ) -> _Pass:
        """Return the passes of a fit, from its first pass's table `groups`."""
        fixed: dict[str, NDArray[np.float64]] = {}
        targets = None
        if spec.method != "temperature":
            k = len(_START[spec.method])
            names = [*(f"f{i}" for i in range(k)), *(f"y{i}" for i in range(k))]
            fixed = {name: groups[name].fill_null(0.0).to_numpy() for name in names}
            targets = _targets(groups, spec.smoothed)
        every_key = key_range(groups, group)
        return cls(source, groups, group, spec.method, weighted, fixed, targets, every_key)

    def terms(self, sums: pl.DataFrame, index: NDArray[np.int64], at: NDArray[np.float64]) -> Terms:
        """Return the derivatives of the groups `index`, at `at`, from a pass's `sums`."""
        if self.targets is None:
            return temperature_step(sums)
        fixed = {name: values[index] for name, values in self.fixed.items()}
        return logistic_step(sums, fixed, at, self.targets[index])

    def __call__(self, index: NDArray[np.int64], at: NDArray[np.float64], far: bool) -> Terms:
        """Read the data once: the derivatives of the groups `index` at `at`."""
        # Each row's parameters, looked up among the active groups' (NaN: another group's
        # row, left out; every row's group is active when all are).
        active = self.groups.select(self.group)[index]
        k = at.shape[1]
        key_exprs = [pl.col(name) for name in self.group]
        thetas = per_group(key_exprs, active, at, [math.nan] * k, self.every_key)
        everyone = len(index) == self.groups.height
        lf = self.source if everyone else self.source.filter(thetas[0].is_not_nan())
        step_rows, step_sums = pass_sums(lf, self.method, thetas, self.weighted, third=far)
        sums = step_rows.group_by(self.group).agg(step_sums).collect()  # one step's sums
        # In the order of `index`; a group without rows gets NaN sums.
        aligned = (
            active.with_row_index(INDEX)
            .join(sums, on=self.group, how="left", nulls_equal=True)
            .sort(INDEX)
            .drop(INDEX, *self.group)
            .fill_null(math.nan)
        )
        return self.terms(aligned, index, at)


def _logistic_checks(k: int, weighted: bool) -> list[pl.Expr]:
    """Return the first pass's sums per group and outcome that do not change between steps.

    ``f{i}``: ``sum w F_i`` (the intercept's: the weight); and the extremes of the
    first regressor (increasing in ``p``) over the rows of positive weight.
    """
    regressors = [pl.col(f"__f{i}") for i in range(k - 1)]
    w = pl.col(WEIGHT)
    weight = w.sum() if weighted else pl.len().cast(pl.Float64)
    out = [weight.alias(f"f{k - 1}")]
    out += [(w * f if weighted else f).sum().alias(f"f{i}") for i, f in enumerate(regressors)]
    f0 = pl.when(w > 0.0).then(regressors[0]) if weighted else regressors[0]
    return [*out, f0.min().alias("__low"), f0.max().alias("__high")]


def _identified(
    by_class: pl.DataFrame, group: list[str], method: str, sums: list[str]
) -> pl.DataFrame:
    """Return per group the first pass's sums and checks, from its rows per outcome.

    The counts, the constant sums (``y{i}``: ``sum w y F_i``), a step's `sums`, the
    weight, the positives, each class's extremes of the first regressor, their
    extremes over both classes (``__low``, ``__high``) and as probabilities
    (``min_p``, ``max_p``).
    """
    k = len(_START[method])
    positive, negative = pl.col(LABEL) == 1.0, pl.col(LABEL) == 0.0
    low, high = pl.col("__low"), pl.col("__high")
    groups = by_class.group_by(group).agg(
        pl.col("__rows", "refused", "__clipped").sum(),
        *(pl.col(f"f{i}").sum() for i in range(k)),
        *(pl.col(f"f{i}").filter(positive).sum().alias(f"y{i}") for i in range(k)),
        *(pl.col(name).sum() for name in sums),
        low.filter(positive).min().alias("min_positive"),
        high.filter(positive).max().alias("max_positive"),
        low.filter(negative).min().alias("min_negative"),
        high.filter(negative).max().alias("max_negative"),
    )
    lowest = pl.min_horizontal("min_positive", "min_negative")
    highest = pl.max_horizontal("max_positive", "max_negative")

    # The first regressor back to p (for the message only): logit, the score, or ln p.
    def to_p(f: pl.Expr) -> pl.Expr:
        return sigmoid(f) if method == "platt" else f if method == "sigmoid" else f.exp()

    return groups.with_columns(
        pl.col(f"f{k - 1}").alias("weight"),
        pl.col(f"y{k - 1}").alias("positives"),
        lowest.alias("__low"),
        highest.alias("__high"),
        to_p(lowest).alias("min_p"),
        to_p(highest).alias("max_p"),
    )


def _precheck(row: dict[str, Any], spec: FitSpec) -> str | None:
    """Return why a group cannot be fitted, from its row of the first pass, or None."""
    count = row["count"]
    if count < spec.min_rows:
        return f"{count} rows, fewer than min_rows={spec.min_rows}"
    if spec.method == "temperature":
        return None
    weight, positives = row["weight"], row["positives"]
    if not weight > 0.0:
        return "no row of positive weight"
    if positives <= 0.0 or positives >= weight:
        return f"one class only (every outcome is {1 if positives > 0 else 0})"
    if row["__low"] == row["__high"]:
        shown = float(f"{row['min_p']:.12g}")  # p from its regressor, to 12 digits
        return f"not identifiable (every probability is {shown})"
    if not spec.smoothed:
        if row["max_negative"] <= row["min_positive"]:
            return "separated classes (every positive has p at or above every negative)"
        if row["max_positive"] <= row["min_negative"]:
            return "separated classes (every positive has p at or below every negative)"
    return None


def _targets(groups: pl.DataFrame, smoothed: bool) -> NDArray[np.float64]:
    """Return per group the target of a positive and of a negative (1 and 0, or Platt's)."""
    positives = groups["positives"].fill_null(0.0).to_numpy()
    negatives = groups["weight"].fill_null(0.0).to_numpy() - positives
    if smoothed:
        return np.column_stack([(positives + 1.0) / (positives + 2.0), 1.0 / (negatives + 2.0)])
    return np.column_stack([np.ones_like(positives), np.zeros_like(positives)])
