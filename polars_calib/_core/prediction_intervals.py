"""The problem of central prediction intervals: a target and its lower and upper bounds.

A row is a target ``y`` and a predicted interval ``[lower, upper]`` at a nominal level
(given to the measures, not to the problem: one problem serves every level). The
problem is the package's :class:`~polars_calib._core.problem.Problem`, so that the
statistics table can take it later as it takes a binary problem:

* ``prob`` is the indicator ``lower <= y <= upper`` (bounds inclusive, as MAPIE 1.6's
  ``regression_coverage_score``) as Float64: the "prediction" whose mean is the
  coverage, as a binary problem's observed frequency is the mean of its labels;
* ``label`` is the target ``y`` (Float64);
* ``terms`` are the level-free per-row sums every interval measure needs:
  ``covered`` (the indicator), ``width`` (``upper - lower``), ``below``
  (``(lower - y) 1{y < lower}``) and ``above`` (``(y - upper) 1{y > upper}``). The
  interval score at level ``1 - alpha`` is ``width + (2 / alpha)(below + above)``, so
  one table of sums serves every level and merges across partitions.

Without a target (the width needs none: it can be monitored before outcomes arrive),
``prob`` and ``label`` are null and the terms other than ``width`` are absent.

The refused rule (one rule: expression nulls and error counts both come from it):

* a NaN or infinite target;
* a NaN lower bound or a lower bound of ``+inf``; a NaN upper bound or an upper bound
  of ``-inf``. A **one-sided** interval is allowed: ``lower = -inf`` or ``upper =
  +inf`` (its coverage is well defined; its width and interval score are ``+inf``);
* ``lower > upper`` (reversed bounds, e.g. crossing quantiles): refused, **never
  swapped**. MAPIE 1.6's ``regression_mwi_score`` swaps them silently (``min``/``max``)
  and its ``regression_mean_width_score`` takes ``|upper - lower|``, so a reversed row
  counts as a positive width;
* a negative, NaN, infinite or subnormal weight, and a group whose weights sum to
  1e300 or more (the binary problem's weight checks).

A row holding a null in any input is ignored (it counts toward no denominator); a
partly null row is still refused when one of its non-null values breaks a check, as in
the binary problem. Non-numeric columns fail when the query is planned, with a message
naming the column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from polars_calib._core.exprs import IntoExpr
from polars_calib._core.problem import (
    Check,
    Problem,
    _name,
    _numbers_only,
    _present,
    _weight_checks,
    _weight_total_check,
    weight_ok,
)

__all__ = ["check_level", "interval_problem", "nested_intervals_problem"]

INF = float("inf")


def check_level(level: object, argument: str = "level") -> float:
    """Return the nominal coverage `level` as a float if it lies in (0, 1).

    A bool or a non-number is a ``TypeError``; 0, 1, a value outside (0, 1) or NaN a
    ``ValueError``, each naming `argument`.
    """
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        msg = f"`{argument}` must be a float in (0, 1), got {level!r}"
        raise TypeError(msg)
    if math.isnan(level) or not 0.0 < level < 1.0:
        msg = f"`{argument}` must be in (0, 1) (a nominal coverage), got {level!r}"
        raise ValueError(msg)
    return float(level)


def _column(value: IntoExpr, default: str, what: str) -> pl.Expr:
    name = _name(value, default)
    message = f"column {name!r} must hold numbers ({what})"
    return _numbers_only(value, default, message).cast(pl.Float64)


def _bound_checks(lower: IntoExpr, upper: IntoExpr) -> tuple[pl.Expr, pl.Expr, list[Check]]:
    lo, hi = (
        _column(lower, "lower", "the lower bounds"),
        _column(upper, "upper", "the upper bounds"),
    )
    lo_name, hi_name = _name(lower, "lower"), _name(upper, "upper")
    checks = [
        Check(lo_name, "lower bound NaN or +inf", lo.is_nan() | (lo == INF), lo),
        Check(hi_name, "upper bound NaN or -inf", hi.is_nan() | (hi == -INF), hi),
        Check(
            f"{lo_name}, {hi_name}",
            "lower bound above the upper bound",
            ~lo.is_nan() & ~hi.is_nan() & (lo > hi),
            lo - hi,
        ),
    ]
    return lo, hi, checks


def _bounds_ok(lo: pl.Expr, hi: pl.Expr) -> pl.Expr:
    """True on usable bounds, false on refused ones, null where a bound is null.

    Polars orders NaN above every number (``1 <= NaN`` is true), so a NaN upper bound
    is checked apart; ``lo < inf`` refuses a NaN or ``+inf`` lower bound.
    """
    return (lo <= hi) & (lo < INF) & (hi > -INF) & ~hi.is_nan()


def interval_problem(
    target: IntoExpr | None,
    lower: IntoExpr,
    upper: IntoExpr,
    weight: IntoExpr | None = None,
) -> Problem:
    """The problem of central intervals ``[lower, upper]`` for `target` (see the module).

    With `target` None, only the bounds and the weight are read (the width).
    """
    lo, hi, checks = _bound_checks(lower, upper)
    w, weight_checks = _weight_checks(weight)
    ok = _bounds_ok(lo, hi)
    y: pl.Expr | None = None
    if target is not None:
        y = _column(target, "target", "the targets")
        checks.insert(
            0, Check(_name(target, "target"), "target NaN or infinite", ~y.is_finite(), y)
        )
        ok = ok & y.is_finite()
    if w is not None:
        ok = ok & weight_ok(w)
    checks += weight_checks
    present = _present(y, lo, hi, w)
    refused = ~ok
    width = hi - lo
    terms: dict[str, pl.Expr] = {"width": pl.when(present).then(width)}
    if y is None:
        prob = label = pl.lit(None, dtype=pl.Float64)
    else:
        covered = ((lo <= y) & (y <= hi)).cast(pl.Float64)
        prob, label = covered, y
        terms |= {
            "covered": pl.when(present).then(covered),
            # when/then, not a product: an infinite bound times a 0 indicator is NaN.
            "below": pl.when(present).then(pl.when(y < lo).then(lo - y).otherwise(0.0)),
            "above": pl.when(present).then(pl.when(y > hi).then(y - hi).otherwise(0.0)),
        }
    return Problem(
        prob,
        label,
        w,
        present,
        refused,
        (*checks, *_weight_total_check(weight, w, present)),
        terms,
        ok=ok,
    )


def nested_intervals_problem(
    target: IntoExpr,
    median: IntoExpr | None,
    lower: Sequence[IntoExpr],
    upper: Sequence[IntoExpr],
    weight: IntoExpr | None = None,
) -> Problem:
    """The problem of K central intervals ``[lower[k], upper[k]]`` and a median for `target`.

    The rule is the union of each interval's rule and a NaN or infinite median (the
    intervals need not nest, nor hold the median: the score does not ask it). Terms:
    each interval's, suffixed ``_k`` (``width_0``, ``below_0``, ...), and
    ``absolute_error`` ``|y - median|``; ``prob`` is the first interval's indicator.
    Without a median (`median` None: the intervals alone, as the frame functions read
    them), the rule and the terms are the intervals' only.
    """
    if isinstance(lower, (str, pl.Expr)) or isinstance(upper, (str, pl.Expr)):
        msg = "`lower` and `upper` must be sequences of columns (one per level)"
        raise TypeError(msg)
    if len(lower) != len(upper) or not lower:
        msg = (
            "`lower` and `upper` must hold as many columns, at least one: "
            f"got {len(lower)} and {len(upper)}"
        )
        raise ValueError(msg)
    # The weight's checks once, with the first interval; the target's once too.
    parts = [
        interval_problem(target, lo, hi, weight if k == 0 else None)
        for k, (lo, hi) in enumerate(zip(lower, upper))
    ]
    y = parts[0].label
    checks = [*parts[0].checks]
    for part in parts[1:]:
        checks += part.checks[1:]
    present = pl.all_horizontal([part.present for part in parts])
    ok = pl.lit(True)
    terms: dict[str, pl.Expr] = {}
    if median is not None:
        m = _column(median, "median", "the medians")
        bad = ~m.is_finite()
        checks.insert(1, Check(_name(median, "median"), "median NaN or infinite", bad, m))
        present = present & m.is_not_null()
        ok = m.is_finite()
        terms["absolute_error"] = pl.when(present).then((y - m).abs())
    for part in parts:
        assert part.ok is not None
        ok = ok & part.ok
    for k, part in enumerate(parts):
        terms |= {f"{name}_{k}": pl.when(present).then(term) for name, term in part.terms.items()}
    return Problem(parts[0].prob, y, parts[0].weight, present, ~ok, tuple(checks), terms, ok=ok)
