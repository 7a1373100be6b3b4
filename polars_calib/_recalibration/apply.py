"""Applying fitted maps: each row's calibrated probability as a pure Polars expression.

Each row looks up its group in literal tables built from the small parameter table
(:mod:`polars_calib._recalibration.lookup`: the key's code, a ``gather`` from a dense
array or an ``Enum`` cast, then a ``gather`` of each parameter: elementwise, so it
streams); isotonic thresholds and quantile edges by one binary search per row
against the concatenated per-group tables
(:class:`polars_calib._core.binning.GroupedEdges`). The cost per row does not grow with
the number of groups, and the literals (a few numbers per group) travel with the
plan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

import numpy as np
import polars as pl

from polars_calib._core.binning import Binning, GroupedEdges, edge_bins
from polars_calib._core.exprs import IntoExpr
from polars_calib._core.options import SUM_TOLERANCE, CalibrationMethod, Closed, Reduction
from polars_calib._core.problem import EPS, binary_problem, vector_checks, vector_problem
from polars_calib._recalibration.lookup import gather, group_index
from polars_calib._recalibration.maps import PARAMETERS, features, identity_params, linear

__all__ = ["FittedMaps", "calibrated"]


class FittedMaps(Protocol):
    """What applying needs of a calibrator (:class:`polars_calib.Calibrator` has it)."""

    @property
    def method(self) -> CalibrationMethod: ...

    @property
    def reduction(self) -> Reduction | None: ...

    @property
    def by(self) -> tuple[str, ...]: ...

    @property
    def keys(self) -> list[str]: ...

    @property
    def params(self) -> pl.DataFrame: ...

    @property
    def global_params(self) -> pl.DataFrame | None: ...

    @property
    def options(self) -> dict[str, Any]: ...

    def key_exprs(self) -> list[pl.Expr]: ...


def calibrated(cal: FittedMaps, prob: IntoExpr) -> pl.Expr:
    """Return each row's calibrated probability (see :meth:`polars_calib.Calibrator.expr`)."""
    table, index = _lookup_table(cal)
    if cal.method == "temperature":
        return _apply_temperature(cal, table, index, prob)
    if cal.reduction is None:
        problem = binary_problem(prob, pl.lit(0))
        p = problem.prob
        g = index(pl.lit(None, pl.Int32))
        if cal.method in ("platt", "sigmoid", "beta"):
            # A refused p gets a null group index, so null parameters: the map's
            # arithmetic keeps it null (p itself unmasked, computed once when shared).
            return _binary_map(cal, table, pl.when(~problem.refused).then(g), p)
        valid = p.is_not_null() & ~problem.refused.fill_null(False)
        return pl.when(valid).then(_binary_map(cal, table, g, p))
    sum_tol = float(cal.options.get("sum_tol", SUM_TOLERANCE))
    if cal.reduction in ("top_label", "confidence"):
        problem = vector_problem(prob, pl.lit(0), None, sum_tol, "top_label")
        assert problem.key is not None
        g = index(problem.key.cast(pl.Int32))
        mapped = _binary_map(cal, table, g, problem.prob)
        valid = problem.prob.is_not_null() & ~problem.refused.fill_null(False)
        return pl.when(valid).then(mapped)
    # One-vs-rest: each class's map on its entry, renormalised (uniform if all are 0).
    n_classes = int(cal.options["n_classes"])
    vectors, _, _, refused, _ = vector_checks(prob, pl.lit(0), None, sum_tol)
    entries = []
    for j in range(n_classes):
        g = index(pl.lit(j, pl.Int32))
        entries.append(_binary_map(cal, table, g, vectors.list.get(j, null_on_oob=True)))
    mapped = pl.concat_list(entries)
    total = mapped.list.sum()
    uniform = pl.concat_list([pl.lit(1.0 / n_classes)] * n_classes)
    ok = ~refused.fill_null(False) & (vectors.list.len() == n_classes)
    ok = ok & pl.all_horizontal([e.is_not_null() for e in entries])
    return pl.when(ok & (total > 0.0)).then(mapped / total).when(ok).then(uniform)


def _lookup_table(cal: FittedMaps) -> tuple[pl.DataFrame, Callable[[pl.Expr], pl.Expr]]:
    """Return the rows whose parameters a row may read, and the row's index into them.

    The fitted rows, then the fallback rows: the identity map (one row) or the
    global fit (one row, or one per class). Returns the table and a function of
    the row's class expression (a literal for binary data) giving the index.
    """
    params = cal.params
    keys = cal.keys
    names = list(PARAMETERS[cal.method])
    fallback = cal.options.get("fallback")
    binning = Binning(
        cal.options.get("n_bins", 15),
        cal.options.get("strategy", "uniform"),
        cal.options.get("closed", "right"),
    )
    rows = params.select(names)
    extra: pl.DataFrame | None = None
    if fallback == "identity":
        identity = identity_params(cal.method, binning)
        extra = pl.DataFrame({n: [identity[n]] for n in names}, schema=rows.schema)
    elif fallback == "global" and cal.global_params is not None:
        extra = cal.global_params.select(names)
    table = rows if extra is None else pl.concat([rows, extra])

    def index(class_expr: pl.Expr) -> pl.Expr:
        by_exprs = cal.key_exprs()
        exprs = [*by_exprs, *([class_expr] if "class" in keys else [])]
        fitted = group_index(exprs, params.select(keys))
        if extra is None:
            return fitted
        if fallback == "global" and "class" in keys and cal.global_params is not None:
            other = group_index([class_expr], cal.global_params.select("class"))
            return fitted.fill_null(other + params.height)
        return fitted.fill_null(pl.lit(params.height, pl.Int64))

    return table, index


def _binary_map(cal: FittedMaps, table: pl.DataFrame, g: pl.Expr, p: pl.Expr) -> pl.Expr:
    """Return the fitted map of each row's group (`g`, an index into `table`) at `p`."""
    method = cal.method
    if not table.height:
        return pl.lit(None, pl.Float64)  # nothing was fitted: every group is unseen
    if method in ("platt", "sigmoid", "beta"):
        # 1 / (1 + exp(-η)) with -η = Σ (-θ_i) f_i + (-θ_k): the parameters negated in
        # the literal tables, the intercept's regressor (1) not multiplied.
        negated = [gather(-table[n], g) for n in PARAMETERS[method]]
        minus_eta = linear(negated, features(method, p)[:-1])
        return 1.0 / (1.0 + minus_eta.exp())
    if method == "isotonic":
        return _interpolate(table, g, p)
    return _histogram_map(cal, table, g, p)


def _interpolate(table: pl.DataFrame, g: pl.Expr, p: pl.Expr) -> pl.Expr:
    """Return ``np.interp(p, x, y)`` of each row's group (constant beyond its points).

    A group of ``n`` points has ``n + 1`` pieces (before its first point, between
    neighbours, after its last), each ``slope * (p - x0) + y0`` (the ends: slope 0),
    computed in numpy as ``np.interp`` does; the row's piece is its position among
    its group's points (:class:`~polars_calib._core.binning.GroupedEdges`, one slot per
    group past its points), so one search and three gathers per row.
    """
    xs = [np.asarray(v, dtype=np.float64) for v in table["x"].to_list()]
    ys = [np.asarray(v, dtype=np.float64) for v in table["y"].to_list()]
    slopes, lefts, values = [], [], []
    for x, y in zip(xs, ys):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            inner = (y[1:] - y[:-1]) / (x[1:] - x[:-1])
        slopes.append(np.concatenate([[0.0], inner, [0.0]]))
        lefts.append(np.concatenate([[0.0], x[:-1], [0.0]]))
        values.append(np.concatenate([y[:1], y[:-1], y[-1:]]))
    edges = GroupedEdges([x.tolist() for x in xs], sentinel=True)
    piece = edges.position(g, p, strict=False)
    slope, left, value = (
        gather(pl.Series(np.concatenate(part), dtype=pl.Float64), piece)
        for part in (slopes, lefts, values)
    )
    # At a point itself, its value (as np.interp: an infinite slope must not give NaN).
    return pl.when(p == left).then(value).otherwise(slope * (p - left) + value)


def _histogram_map(cal: FittedMaps, table: pl.DataFrame, g: pl.Expr, p: pl.Expr) -> pl.Expr:
    """Return the observed frequency of the row's bin; an empty bin leaves `p` unchanged."""
    n_bins = int(cal.options["n_bins"])
    closed = cast(Closed, cal.options["closed"])
    values = table["values"].explode()
    if cal.options["strategy"] == "uniform":
        bins = Binning(n_bins, "uniform", closed).index(p).cast(pl.Int64)
    else:
        inner = GroupedEdges([edges[1:-1] for edges in table["edges"].to_list()])
        bins = edge_bins(g, p, inner, n_bins, closed)
    return pl.when(g.is_not_null()).then(pl.coalesce(gather(values, g * n_bins + bins), p))


def _apply_temperature(
    cal: FittedMaps, table: pl.DataFrame, index: Callable[[pl.Expr], pl.Expr], prob: IntoExpr
) -> pl.Expr:
    """Return each row's vector scaled by its group's temperature, ``softmax(ln p / T)``."""
    sum_tol = float(cal.options.get("sum_tol", SUM_TOLERANCE))
    vectors, _, _, refused, _ = vector_checks(prob, pl.lit(0), None, sum_tol)
    inverse = 1.0 / gather(table["temperature"], index(pl.lit(None, pl.Int32)))
    scaled = vectors.list.eval(pl.element().clip(EPS, 1.0).log()) * inverse
    exps = (scaled - scaled.list.max()).list.eval(pl.element().exp())
    return pl.when(~refused.fill_null(False) & inverse.is_not_null()).then(exps / exps.list.sum())
