"""Conformal recalibration of interval, ensemble and quantile predictions per group.

The fits read each form's problem (the one refused rule of
:func:`~polars_calib._table.intervals.prepare_intervals`,
:func:`~polars_calib._table.ensembles.prepare_ensemble` and
:func:`~polars_calib._table.quantiles.prepare_quantiles`) and take each group's
order statistics in one aggregation; the applied bounds and quantiles are pure
expressions (:class:`~polars_calib.RegressionCalibrator`). The order statistic, its
finite-sample guarantee and the handling of inverted intervals and crossing quantiles
are derived in ``docs/regression.md``, "Conformal recalibration of intervals, ensembles and
quantiles". An ensemble is conformalized as the interval between its members'
empirical quantiles at (1 ∓ level) / 2 (:func:`ensemble_interval`), with the interval
form's score and correction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import polars as pl

from polars_calib._core.ensembles import ensemble_problem, member_quantile
from polars_calib._core.exprs import IntoExpr, Keys
from polars_calib._core.prediction_intervals import interval_problem
from polars_calib._core.quantiles import quantile_problem, quantile_values
from polars_calib._recalibration.rows import REFUSED, USED, group_columns, grouped
from polars_calib._table.ensembles import prepare_ensemble
from polars_calib._table.intervals import prepare_intervals
from polars_calib._table.plan import Prepared
from polars_calib._table.quantiles import prepare_quantiles

__all__ = [
    "SCORE",
    "adjusted_interval",
    "ensemble_adjusted",
    "ensemble_interval",
    "ensemble_scores",
    "interval_scores",
    "order_statistic",
    "quantile_scores",
    "quantile_shifts",
    "shifted_quantiles",
]

SCORE = "__polars_calib_score__"


def _score(k: int) -> str:
    return f"__polars_calib_score_{k}__"


def order_statistic(score: pl.Expr, level: Fraction) -> tuple[pl.Expr, pl.Expr]:
    """Per group: the ⌈(n + 1) · level⌉-th smallest used score, and whether it passes n.

    The ceiling is computed in integers from the exact decimal `level`; with +inf
    appended, k = n + 1 (too few rows for the level) picks the infinite value.
    """
    used = pl.col(USED)
    # Int128: the level's decimal numerator (up to 17 digits) times n + 1 passes 2**63.
    n = used.sum().cast(pl.Int128)
    numerator, denominator = (pl.lit(v, pl.Int128) for v in level.as_integer_ratio())
    k = (((n + 1) * numerator + denominator - 1) // denominator).cast(pl.Int64)
    scores = score.filter(used).append(pl.lit(math.inf, pl.Float64)).sort()
    return scores.get(k - 1), k > n.cast(pl.Int64)


def _rows(prepared: Prepared, scores: dict[str, pl.Expr]) -> pl.LazyFrame:
    problem = prepared.problem
    refused = problem.refused.fill_null(False)
    return prepared.lf.select(
        *prepared.keys,
        *(score.alias(name) for name, score in scores.items()),
        (problem.present & ~refused).alias(USED),
        refused.alias(REFUSED),
    )


def interval_scores(
    data: pl.DataFrame | pl.LazyFrame, target: str, lower: str, upper: str, by: Keys
) -> tuple[Prepared, pl.LazyFrame]:
    """The interval problem and its rows: keys, the CQR score ``max(l - y, y - u)``, flags."""
    prepared = prepare_intervals(
        data, target, lower=[lower], upper=[upper], by=by, time=None, every=None, weight=None
    )
    y = prepared.problem.label
    lo, hi = (pl.col(name).cast(pl.Float64) for name in (lower, upper))
    return prepared, _rows(prepared, {SCORE: _cqr_score(y, lo, hi)})


def _cqr_score(y: pl.Expr, lower: pl.Expr, upper: pl.Expr) -> pl.Expr:
    """The CQR nonconformity score ``max(l - y, y - u)``, negative inside the interval."""
    return pl.max_horizontal(lower - y, y - upper)


def ensemble_interval(ensemble: IntoExpr, level: float) -> tuple[pl.Expr, pl.Expr]:
    """The central interval at `level` of each row's members: their quantiles at (1 ∓ level) / 2.

    Type 7 quantiles (:func:`~polars_calib._core.ensembles.member_quantile`); null bounds
    on a row whose ensemble the ensemble form refuses (a null, NaN or infinite member, no
    member) or is null.
    """
    # The target plays no part in the members' own checks: a finite constant stands in.
    ok = ensemble_problem(pl.lit(0.0), ensemble).ok
    assert ok is not None  # an ensemble problem has its one-pass rule
    lower = member_quantile(ensemble, (1.0 - level) / 2.0)
    upper = member_quantile(ensemble, (1.0 + level) / 2.0)
    return pl.when(ok).then(lower), pl.when(ok).then(upper)


def ensemble_adjusted(
    ensemble: IntoExpr, level: float, quantile: pl.Expr
) -> tuple[pl.Expr, pl.Expr]:
    """The ensemble's central interval at `level`, adjusted as :func:`adjusted_interval`.

    The adjustment reads each bound several times: it runs inside one ``list.eval`` over
    [lower, upper, quantile], where they are leaves, so each row's members are sorted
    and interpolated once per output bound, not once per read (see
    :func:`~polars_calib._core.ensembles.member_quantile`).
    """
    lower, upper = ensemble_interval(ensemble, level)
    packed = pl.concat_list(lower, upper, quantile.cast(pl.Float64))
    new_lower, new_upper = adjusted_interval(*(pl.element().get(k) for k in range(3)))
    return (
        packed.list.eval(new_lower).list.first(),
        packed.list.eval(new_upper).list.first(),
    )


def ensemble_scores(
    data: pl.DataFrame | pl.LazyFrame, target: str, ensemble: str, level: float, by: Keys
) -> tuple[Prepared, pl.LazyFrame]:
    """The ensemble problem and its rows: keys, the CQR score of its central interval, flags."""
    prepared = prepare_ensemble(
        data, target, ensemble=ensemble, seed=0, id=None, by=by, time=None, every=None, weight=None
    )
    lo, hi = ensemble_interval(ensemble, level)
    return prepared, _rows(prepared, {SCORE: _cqr_score(prepared.problem.label, lo, hi)})


def quantile_scores(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    quantiles: str | Sequence[str],
    levels: Sequence[float],
    by: Keys,
) -> tuple[Prepared, pl.LazyFrame]:
    """The quantile problem and its rows: keys, ``y - q_k`` per level ``k``, flags."""
    prepared = prepare_quantiles(
        data,
        target,
        quantiles=quantiles,
        levels=levels,
        by=by,
        time=None,
        every=None,
        weight=None,
    )
    y = prepared.problem.label
    _, q = quantile_values(quantiles, len(levels))
    return prepared, _rows(prepared, {_score(k): y - qk for k, qk in enumerate(q)})


def quantile_shifts(rows: pl.LazyFrame, keys: list[str], levels: Sequence[float]) -> pl.DataFrame:
    """Per group: ``count``, ``refused``, ``fallback`` and ``shift`` (one per level).

    The shift of level τ is the ⌈(n + 1) τ⌉-th smallest ``y - q_τ``, +inf when that
    passes n; ``fallback`` is true when a level's shift is infinite.
    """
    group = group_columns(keys)
    parts = [order_statistic(pl.col(_score(k)), Fraction(str(tau))) for k, tau in enumerate(levels)]
    shifts = [f"__polars_calib_shift_{k}__" for k in range(len(levels))]
    past = [f"__polars_calib_past_{k}__" for k in range(len(levels))]
    return (
        grouped(rows, keys)
        .group_by(group)
        .agg(
            pl.col(USED).sum().cast(pl.Int64).alias("count"),
            pl.col(REFUSED).sum().alias("refused"),
            *(shift.alias(name) for (shift, _), name in zip(parts, shifts, strict=True)),
            *(beyond.alias(name) for (_, beyond), name in zip(parts, past, strict=True)),
        )
        .with_columns(
            pl.any_horizontal(past).alias("fallback"),
            pl.concat_list(shifts).cast(pl.List(pl.Float64)).alias("shift"),
        )
        .drop(*shifts, *past)
        .sort(group, nulls_last=True)
        .collect()
    )


def adjusted_interval(lower: pl.Expr, upper: pl.Expr, quantile: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The CQR interval ``[l - q, u + q]``, a point at the midpoint where it would invert.

    Null where the input bounds break the interval form's refused rule (``l > u``, a NaN
    bound, ``l = +inf`` or ``u = -inf``) or `quantile` is null (a group not fitted).
    """
    lo, hi = lower.cast(pl.Float64), upper.cast(pl.Float64)
    ok = interval_problem(None, lo, hi).ok
    assert ok is not None  # an interval problem has its one-pass rule
    new_lo, new_hi = lo - quantile, hi + quantile
    # q < -(u - l) / 2 would invert the interval (MAPIE returns it inverted and logs
    # "ill-sorted"): the midpoint keeps every guarantee, an inverted interval holds nothing.
    inverted = new_lo > new_hi
    middle = lo + (hi - lo) / 2.0
    return (
        pl.when(ok).then(pl.when(inverted).then(middle).otherwise(new_lo)),
        pl.when(ok).then(pl.when(inverted).then(middle).otherwise(new_hi)),
    )


def shifted_quantiles(
    quantiles: str | Sequence[str], levels: Sequence[float], shifts: list[pl.Expr]
) -> pl.Expr:
    """The shifted quantiles ``q_k + shift_k`` of each row, rearranged (sorted), as a list.

    Null where the input quantiles break the quantile form's refused rule (crossing, a
    non-finite entry, another length than the levels) or a shift is null (a group not
    fitted). The sort is the monotone rearrangement (Chernozhukov, Fernández-Val and
    Galichon 2010) of the output: the input is checked, never sorted.
    """
    # The target plays no part in the quantiles' own checks: a finite constant stands in.
    ok = quantile_problem(pl.lit(0.0), quantiles, levels).ok
    assert ok is not None  # a quantile problem has its one-pass rule
    _, q = quantile_values(quantiles, len(levels))
    shifted = pl.concat_list([qk + s for qk, s in zip(q, shifts, strict=True)]).list.sort()
    fitted = pl.all_horizontal(s.is_not_null() for s in shifts)
    return pl.when(ok & fitted).then(shifted)
