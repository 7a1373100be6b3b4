"""Ensemble predictions: M members drawn from the predictive distribution, and their refused rule.

An ensemble prediction of a target y is an ``Array`` or ``List`` column of M numbers
x_1 .. x_M per row (a sample from the predictive distribution). Its problem is a
:class:`~polars_calib._core.problem.Problem`, so the refused rule, the checks and their
messages are the ones every other problem has:

* ``prob`` is null (the rank PIT needs a seed and a row identity, see :func:`rank_pit_expr`);
* ``label`` is the target;
* ``terms`` are the per-row CRPS of the two estimators, ``crps_energy`` (pairs over M²)
  and ``crps_fair`` (pairs over M(M - 1)), computed from the members sorted per row with
  ``sum_{i,j} |x_i - x_j| = 2 sum_i (2i - M - 1) x_(i)`` (1-based order statistics), so
  no pairwise loop exists (``docs/regression.md``, "Ensembles").

A row is **present** when its target, its ensemble and its weight are non-null; it is
**refused** when a non-null value breaks a check: a NaN or infinite target, a null, NaN
or infinite member inside a non-null ensemble, fewer members than ``min_members`` (1;
2 for the fair CRPS, whose M(M - 1) is 0 for one member), or a weight the other problems
refuse. Rows of a ``List`` column may hold different numbers of members: each row is
scored with its own M (a row's CRPS and rank PIT only use its own members).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from polars_calib._core.draws import MASK, mix, seed_words
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.problem import (
    Check,
    Problem,
    _name,
    _present,
    _weight_checks,
    _weight_total_check,
    weight_ok,
)
from polars_calib._core.regression import _numeric

__all__ = [
    "ENSEMBLE_TERMS",
    "ensemble_problem",
    "member_quantile",
    "rank_pit_expr",
    "rank_quantile",
]

ENSEMBLE_TERMS = ("crps_energy", "crps_fair")
"""The row terms of an ensemble problem."""

_TWO_32 = 4294967296.0


def _members(ensemble: IntoExpr) -> pl.Expr:
    """The ensemble as ``List(Float64)`` (an ``Array`` column is cast to a list)."""
    # Not strict: a strict Array -> List cast fails under a `when` mask in Polars 2.1 when a
    # member is NaN or null (the refused rule counts those rows; the cast changes no value).
    return to_expr(ensemble, "ensemble").cast(pl.List(pl.Float64), strict=False)


def ensemble_problem(
    target: IntoExpr,
    ensemble: IntoExpr,
    weight: IntoExpr | None = None,
    *,
    min_members: int = 1,
) -> Problem:
    """The problem of ensemble predictions `ensemble` of `target` (see the module)."""
    y, x = _numeric(target, "target"), _members(ensemble)
    w, weight_checks = _weight_checks(weight)
    m = x.list.len()
    y_ok = y.is_finite()
    # A null member has a null is_finite: filled as not finite, so it is refused too.
    bad_member = x.list.eval(~pl.element().is_finite().fill_null(False)).list.any()
    too_few = m < min_members
    ensemble_name = _name(ensemble, "ensemble")
    few = (
        "an ensemble with no member" if min_members <= 1 else "an ensemble of fewer than 2 members"
    )
    checks = [
        Check(_name(target, "target"), "target NaN or infinite", ~y_ok, y),
        Check(ensemble_name, "ensemble member null, NaN or infinite", bad_member),
        Check(ensemble_name, few, too_few, m.cast(pl.Float64)),
        *weight_checks,
    ]
    ok = y_ok & ~bad_member & ~too_few
    if w is not None:
        ok = ok & weight_ok(w)
    present = _present(y, x, w)
    return Problem(
        pl.lit(None, dtype=pl.Float64),
        y,
        w,
        present,
        ~ok,
        (*checks, *_weight_total_check(weight, w, present)),
        ensemble_terms(y, x),
        ok=ok,
    )


def ensemble_terms(y: pl.Expr, x: pl.Expr) -> dict[str, pl.Expr]:
    """The per-row CRPS of an ensemble, energy (M²) and fair (M(M - 1)) forms."""
    m = x.list.len()
    spread = (x - y).list.eval(pl.element().abs()).list.mean()
    # half the pair sum: sum_{i<j} |x_i - x_j| = sum_i (2i - M - 1) x_(i), i = 1 .. M
    coefficients = pl.int_ranges(1, m + 1, dtype=pl.Int64) * 2 - m - 1
    # `list.eval` sorts each list (Polars 2.1's `list.sort()` is about 25x slower).
    half_pairs = (x.list.eval(pl.element().sort()) * coefficients).list.sum()
    m = m.cast(pl.Float64)
    return {
        "crps_energy": spread - half_pairs / (m * m),
        "crps_fair": spread - half_pairs / (m * (m - 1.0)),
    }


def member_quantile(ensemble: IntoExpr, level: float | pl.Expr) -> pl.Expr:
    """The empirical quantile at `level` of each row's members (numpy's ``"linear"`` rule).

    Hyndman and Fan's type 7, numpy's default: with the members sorted,
    x_(0) ≤ … ≤ x_(M - 1), h = (M - 1) · level, j = ⌊h⌋ and g = h - j, the quantile is
    x_(j) + g (x_(j + 1) - x_(j)), written as numpy's ``_lerp`` writes it
    (x_(j + 1) - (1 - g)(x_(j + 1) - x_(j)) when g ≥ 1/2), so the value is numpy's to the
    last bit. `level` is a number in [0, 1] or a Float64 expression (one per row). Null
    for a null or empty ensemble or a null level; a row the ensemble's refused rule
    refuses (a null, NaN or infinite member) gives a value that means nothing: mask it
    with the problem's ``ok``.
    """
    return _at_level(ensemble, level, lambda m, p: (m - 1.0) * p, tails=False)


def rank_quantile(ensemble: IntoExpr, level: float | pl.Expr) -> pl.Expr:
    """The quantile at `level` of each row's members on the rank PIT's scale.

    The rank PIT puts the i-th smallest member (1-based) at level i / (M + 1), and is
    linear between (a row's PIT is uniform within its rank): the quantile is numpy's
    ``"weibull"`` rule (Hyndman and Fan's type 6), h = (M + 1) · level - 1 (0-based)
    interpolated as :func:`member_quantile`. Below 1 / (M + 1) and above M / (M + 1) the
    members say only that a mass of 1 / (M + 1) lies beyond each end, not where: -inf
    and +inf there (numpy clamps to the extreme members instead). `level` and the nulls
    as :func:`member_quantile`.
    """
    # numpy's order of operations (M · level + level - 1), for its value to the last bit.
    return _at_level(ensemble, level, lambda m, p: m * p + p - 1.0, tails=True)


def _at_level(
    ensemble: IntoExpr,
    level: float | pl.Expr,
    position: Callable[[pl.Expr, pl.Expr], pl.Expr],
    *,
    tails: bool,
) -> pl.Expr:
    """The sorted members at the 0-based `position` (M, level) ∈ [0, M - 1], linear between.

    Written inside one ``list.eval`` over [level, sorted members...], where they are
    ``pl.element()``, a leaf: the members are sorted once per row. Outside it, each of
    the several reads of the sorted list would sort it again (Polars' common
    subexpression elimination does not reach inside ``when``), and a bound of an applied
    interval reads its two quantiles a dozen times (``docs/performance.md``).
    `tails`: -inf below position 0 and +inf above M - 1 (else the clamped neighbours).
    """
    members = _members(ensemble).list.eval(pl.element().sort())
    chosen = level if isinstance(level, pl.Expr) else pl.lit(level, pl.Float64)
    return (
        pl.concat_list(chosen.cast(pl.Float64), members)
        .list.eval(_interpolated(pl.element(), position, tails=tails))
        .list.first()
    )


def _interpolated(
    packed: pl.Expr, position: Callable[[pl.Expr, pl.Expr], pl.Expr], *, tails: bool
) -> pl.Expr:
    """Inside ``list.eval`` of [level, sorted members...]: the quantile (see `_at_level`)."""
    level, members = packed.first(), packed.slice(1)
    m = members.len().cast(pl.Float64)
    h = position(m, level)
    j = h.floor()
    g = h - j
    below = j.cast(pl.Int64)
    # h rounds to M - 1 at most: the upper neighbour stops at the last member.
    above = pl.min_horizontal(below + 1, m.cast(pl.Int64) - 1)
    a = members.get(below, null_on_oob=True)
    b = members.get(above, null_on_oob=True)
    step = b - a
    inside = pl.when(g >= 0.5).then(b - step * (1.0 - g)).otherwise(a + step * g)
    if not tails:
        return inside
    beyond = pl.when(h < 0.0).then(float("-inf")).when(h > m - 1.0).then(float("inf"))
    return pl.when(m < 1.0).then(None).otherwise(beyond.otherwise(inside))


def _bound(value: pl.Expr, step: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
    """``step(value)`` with `value` evaluated once: each mixer step reads its input several
    times, so nested mixes written inline grow exponentially; inside ``list.eval`` the
    input is ``pl.element()``, a leaf."""
    return pl.concat_list(value).list.eval(step(pl.element())).list.first()


def _uniform(identity: pl.Expr, seed: int) -> pl.Expr:
    """The uniform of replicate 0 for the row key of (`identity`, `seed`) (``_core/draws``).

    The same word as :func:`polars_calib._core.draws.word_int` ``(identity, 0, seed)``.
    """
    s1, s2 = seed_words(seed)
    ident = identity.cast(pl.Int64)
    lo, hi = ident & MASK, (ident // 2**32) & MASK
    h1 = _bound(_bound(lo ^ s1, mix) ^ hi, mix)
    h2 = _bound(_bound(hi ^ s2, mix) ^ lo, mix)
    return (_bound(h1, mix) ^ h2).cast(pl.Float64) / _TWO_32


def rank_pit_expr(
    target: IntoExpr, ensemble: IntoExpr, seed: int, identity: pl.Expr
) -> tuple[Problem, pl.Expr]:
    """The randomized rank PIT of each row (unmasked) and its problem.

    ``u = (B + V (E + 1)) / (M + 1)`` with ``B = #{x < y}``, ``E = #{x == y}`` and ``V``
    the row's uniform draw: uniform on ``[B / (M + 1), (B + E + 1) / (M + 1)]``.
    """
    problem = ensemble_problem(target, ensemble)
    x, y = _members(ensemble), problem.label
    difference = x - y  # IEEE: x - y < 0 exactly when x < y, == 0 exactly when x == y
    below = difference.list.eval((pl.element() < 0.0).cast(pl.Float64)).list.sum()
    equal = difference.list.eval((pl.element() == 0.0).cast(pl.Float64)).list.sum()
    m = x.list.len().cast(pl.Float64)
    u = (below + _uniform(identity, seed) * (equal + 1.0)) / (m + 1.0)
    return problem, u
