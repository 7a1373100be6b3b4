"""Quantile predictions: K predicted quantiles at given levels, and their refused rule.

A quantile prediction of a target y is K numbers ``q_1 <= ... <= q_K``, the predicted
quantiles at levels ``0 < τ_1 < ... < τ_K < 1``: an ``Array`` or ``List`` column of K
entries, or K columns. Its problem is a :class:`~polars_calib._core.problem.Problem`,
so the statistics table, its merging, the refused counts and the messages work
unchanged:

* the row's **bin** is ``b = #{k : q_k < y}`` in ``0 .. K``: with non-decreasing
  quantiles, ``y <= q_k`` exactly when ``k > b`` (1-based), ties ``y == q_k`` counting
  as at or below. The bins are the intervals of the levels, edges ``0, τ_1, ..., τ_K,
  1``, right-closed (a :class:`~polars_calib._core.binning.Binning` with the levels as
  inner edges); ``prob`` is the upper edge of the row's bin, ``τ_(b+1)`` (1 for
  ``b = K``), which the one bin rule puts back in bin ``b``, so the PIT of the row
  lies in ``[τ_b, τ_(b+1)]``;
* ``label`` is the target;
* ``terms`` are the per-row pinball losses ``(1{y < q_k} - τ_k)(q_k - y)``, one per
  level, named ``pinball_<τ_k>`` (``repr`` of the level: the table's schema carries
  its levels exactly), and, for the lower level of each symmetric pair
  (``τ_k + τ_(K+1-k) = 1``), ``tie_<τ_k>`` = ``1{y == q_k}``: the central interval
  ``[q_k, q_(K+1-k)]`` holds y when ``k <= b <= K - k`` (1-based) or ``y == q_k``.

A row is **present** when its target, its quantiles and its weight are non-null; it is
**refused** when a non-null value breaks a check: a NaN or infinite target; a list of
another length than K; a null, NaN or infinite quantile inside a non-null list; a
**crossing** (a quantile below the one before it: refused, never sorted; equal
adjacent quantiles are allowed); or a weight the other problems refuse. Given as K
columns, a row whose K values are all null is ignored, one with some null is refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from numbers import Real

import polars as pl

from polars_calib._core.binning import Binning
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
    "QuantileColumns",
    "check_levels",
    "is_quantile_form",
    "pinball_term",
    "quantile_binning",
    "quantile_name",
    "quantile_problem",
    "quantile_values",
    "symmetric_pairs",
    "tie_term",
    "unchecked_bin",
]

QuantileColumns = IntoExpr | Sequence[IntoExpr]
"""An ``Array``/``List`` column (name or expression) of K quantiles, or K columns."""

PINBALL_PREFIX = "pinball_"
TIE_PREFIX = "tie_"


def check_levels(levels: object) -> tuple[float, ...]:
    """Return `levels` as floats: a sequence of K >= 1 numbers in (0, 1), strictly increasing.

    ``TypeError`` for anything but a sequence of real numbers, ``ValueError`` naming
    the problem otherwise.
    """
    # Any iterable of numbers: a list, a tuple, a numpy array, a Series.
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Iterable):
        msg = f"`levels` must be a sequence of floats in (0, 1), got {type(levels).__name__}"
        raise TypeError(msg)
    values = list(levels)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, Real):
            msg = f"`levels` must hold numbers, got {value!r}"
            raise TypeError(msg)
    found = tuple(float(v) for v in values)
    if not found:
        msg = "`levels` must hold at least one level"
        raise ValueError(msg)
    outside = [v for v in found if not (0.0 < v < 1.0)]  # NaN is outside too
    if outside:
        msg = f"`levels` must lie strictly between 0 and 1, got {outside[0]!r}"
        raise ValueError(msg)
    for k in range(1, len(found)):
        if not found[k - 1] < found[k]:
            msg = (
                "`levels` must be strictly increasing, got "
                f"{found[k - 1]!r} then {found[k]!r} (positions {k - 1} and {k})"
            )
            raise ValueError(msg)
    return found


def pinball_term(level: float) -> str:
    """The name of the row term (and, with ``sum_``, of the table column) of `level`."""
    return f"{PINBALL_PREFIX}{level!r}"


def tie_term(level: float) -> str:
    """The name of the row term ``1{y == q_k}`` of the lower level of a symmetric pair."""
    return f"{TIE_PREFIX}{level!r}"


def symmetric_pairs(levels: Sequence[float]) -> list[tuple[int, int]]:
    """The pairs ``(k, K - 1 - k)`` of levels (0-based) that bound a central interval:
    ``τ_k + τ_(K-1-k) = 1`` (to 1e-12: ``0.3 + 0.7`` is not exactly 1 in every
    spelling), ``k < K - 1 - k``; outermost first."""
    n = len(levels)
    return [
        (k, n - 1 - k)
        for k in range(n // 2)
        if math.isclose(levels[k] + levels[n - 1 - k], 1.0, rel_tol=0.0, abs_tol=1e-12)
    ]


def quantile_binning(levels: Sequence[float]) -> Binning:
    """The bins of ``b = #{k : q_k < y}``: edges 0, the levels, 1; right-closed."""
    return Binning(len(levels) + 1, "uniform", "right", tuple(levels))


def quantile_name(quantiles: QuantileColumns) -> str:
    """The name of the quantiles in messages: the column, or the K columns joined."""
    if isinstance(quantiles, (str, pl.Expr)):
        return _name(quantiles, "quantiles")
    return ", ".join(_name(q, "quantiles") for q in quantiles)


def _as_list(quantiles: QuantileColumns, n_levels: int) -> pl.Expr:
    """The quantiles as ``List(Float64)``; K columns are one list (null when all are null)."""
    if isinstance(quantiles, (str, pl.Expr)):
        # Non-strict: an Array always converts; a strict cast fails on a null met
        # inside a masked when/then (as probability vectors).
        return to_expr(quantiles, "quantiles").cast(pl.List(pl.Float64), strict=False)
    columns = list(quantiles)
    if len(columns) != n_levels:
        msg = f"`quantiles` names {len(columns)} columns, but `levels` holds {n_levels} levels"
        raise ValueError(msg)
    # One cast of the list, not K checks as `_numeric` makes: aggregations re-plan the
    # K-fold tree at each reference (a text column fails at the cast; the frame
    # functions check the schema first).
    exprs = [to_expr(q, "quantiles") for q in columns]
    listed = pl.concat_list(exprs).cast(pl.List(pl.Float64))
    return pl.when(pl.any_horizontal(e.is_not_null() for e in exprs)).then(listed)


def quantile_values(quantiles: QuantileColumns, n_levels: int) -> tuple[pl.Expr, list[pl.Expr]]:
    """The quantiles as a list and as K expressions (null beyond a short list)."""
    listed = _as_list(quantiles, n_levels)
    return listed, [listed.list.get(k, null_on_oob=True) for k in range(n_levels)]


def quantile_problem(
    target: IntoExpr,
    quantiles: QuantileColumns,
    levels: Sequence[float],
    weight: IntoExpr | None = None,
) -> Problem:
    """The problem of quantile predictions at `levels` (checked) of `target` (see the module)."""
    n_levels = len(levels)
    y = _numeric(target, "target")
    listed, q = quantile_values(quantiles, n_levels)
    w, weight_checks = _weight_checks(weight)
    name = quantile_name(quantiles)
    y_ok = y.is_finite()
    length = listed.list.len()
    length_ok = length == n_levels
    has_null = listed.list.eval(pl.element().is_null()).list.any()
    # The rule's part: every entry a finite number (a null entry is not).
    entries_ok = listed.list.eval(pl.element().is_finite().fill_null(False)).list.all()
    # Crossing: the list is not its own sort (equal adjacent quantiles are sorted).
    ordered = listed.list.sort() == listed
    checks = [
        Check(_name(target, "target"), "target NaN or infinite", ~y_ok, y),
        Check(
            name,
            f"list of quantiles of another length than the {n_levels} levels",
            ~length_ok,
            length.cast(pl.Float64),
        ),
        Check(name, "quantile null inside the list", has_null),
        Check(name, "quantile NaN or infinite", ~has_null & ~entries_ok),
        Check(
            name,
            "quantiles crossing (one below the one before it; never sorted)",
            entries_ok & ~ordered,
        ),
        *weight_checks,
    ]
    ok = y_ok & length_ok & entries_ok & ordered
    if w is not None:
        ok = ok & weight_ok(w)
    present = _present(y, listed, w)
    below = _below(listed, y)
    # The upper edge of the row's bin: τ_(b+1), 1 above the last quantile.
    upper_edges = [*levels, 1.0]
    prob = pl.when(listed.is_not_null()).then(
        below.replace_strict(list(range(n_levels + 1)), upper_edges, return_dtype=pl.Float64)
    )
    terms = {
        pinball_term(tau): ((y < qk).cast(pl.Float64) - tau) * (qk - y)
        for tau, qk in zip(levels, q, strict=True)
    }
    # The central interval [q_k, q_(K-1-k)] holds y on its lower bound: b counts only
    # the quantiles strictly below y, so those ties are summed apart.
    for k, _ in symmetric_pairs(levels):
        terms[tie_term(levels[k])] = (y == q[k]).cast(pl.Float64)
    return Problem(
        prob,
        y,
        w,
        present,
        ~ok,
        (*checks, *_weight_total_check(weight, w, present)),
        terms,
        ok=ok,
    )


def _below(listed: pl.Expr, y: pl.Expr) -> pl.Expr:
    """The row's bin ``b = #{k : q_k < y}`` (see the module): the sign of ``q_k - y`` is
    exact (a finite difference is 0 only for equal numbers), so ``q_k - y < 0`` is
    ``q_k < y``."""
    return (listed - y).list.eval((pl.element() < 0.0).cast(pl.Int64)).list.sum()


def unchecked_bin(target: IntoExpr, quantiles: QuantileColumns, n_levels: int) -> pl.Expr:
    """The bin ``b`` of :func:`quantile_problem`'s rows (the one bin rule gives it back
    from the problem's ``prob``), from the inputs without their type checks; null
    where the target or the quantiles are null.

    For an aggregation that references it once per level beside its problem's own
    aggregates, which plan the checks once, and which Polars' streaming group-by runs
    as reductions (``prob``'s ``replace_strict`` of a list of values is not one).
    """
    y = to_expr(target, "target").cast(pl.Float64)
    listed = _as_list(quantiles, n_levels)
    return pl.when(y.is_not_null() & listed.is_not_null()).then(_below(listed, y))


def is_quantile_form(
    mean: object, std: object, quantiles: object, levels: object, n_levels: int = 100
) -> bool:
    """Whether a call gives quantiles (``quantiles=``, ``levels=``) rather than a Gaussian
    (``mean=``, ``std=``); ``TypeError`` unless it gives exactly one whole form."""
    gaussian = mean is not None or std is not None
    quantile = quantiles is not None or levels is not None
    if gaussian and quantile:
        msg = (
            "give one prediction form: `mean=` and `std=` (Gaussian) or `quantiles=` and "
            "`levels=` (quantiles), not both"
        )
        raise TypeError(msg)
    if quantile and (quantiles is None or levels is None):
        msg = "`quantiles=` and `levels=` go together: give both"
        raise TypeError(msg)
    if not quantile and (mean is None or std is None):
        msg = (
            "give the predictions: `mean=` and `std=` (Gaussian), or `quantiles=` and "
            "`levels=` (quantiles)"
        )
        raise TypeError(msg)
    if quantile and n_levels != 100:
        msg = "`n_levels` is the Gaussian form's grid: quantiles take their `levels=`"
        raise TypeError(msg)
    return quantile
