"""Variance tables: a Gaussian problem's sums per σ-bin (or σ²-bin), and their finishers.

The σ-bins are the one rule of :mod:`polars_calib._core.binning`: equal-width edges
between two values (:func:`~polars_calib._core.binning.range_edges`: a group's smallest
and largest σ, as netcal, or a fixed range) or a group's quantiles of σ, and
:func:`~polars_calib._core.binning.edge_index`. :class:`SigmaBins` holds the checked
options; the expressions of :mod:`polars_calib._metrics.variance` and the tables here
both bin through it. A table is the package's statistics table with the bins given as
a column (:func:`polars_calib._table.pipeline.prepared_plan`): per group and bin,
``count``, ``weight``, ``sum_squared_error`` (``(y - μ)²``), ``sum_variance`` (``σ²``)
and ``sum_covered_j`` (rows inside netcal's central interval of each QCE level). With a
fixed `range`, rows whose σ lies outside it are in the extra bin ``n_bins`` (ENCE and
the conditional QCE leave them out, UCE and the marginal QCE count them, as netcal
and the expressions do). Per-group ranges and quantile edges are a first pass over each
group (a ``group_by`` joined back to the rows), so their tables do not merge;
fixed-range tables do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import ClassVar

import polars as pl

from polars_calib._core.binning import Binning, edge_index, quantile_edges, range_edges
from polars_calib._core.exprs import Keys
from polars_calib._core.options import (
    Closed,
    Strategy,
    VarianceMetric,
    check_choice,
    check_n_bins,
)
from polars_calib._core.problem import Problem
from polars_calib._table.columns import grouped
from polars_calib._table.pipeline import Plan, prepared_plan
from polars_calib._table.plan import Prepared
from polars_calib._table.regression import prepare_gaussian

__all__ = [
    "DECILES",
    "VARIANCE_METRICS",
    "SigmaBins",
    "SigmaTable",
    "finish_variance",
    "variance_bins",
    "variance_plan",
]

DECILES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""QCE's levels: the central intervals of 10%, 20%, ..., 90% (netcal's)."""

VARIANCE_METRICS: tuple[VarianceMetric, ...] = ("ence", "uce", "qce")
"""The metrics of :func:`polars_calib.variance_summary` (its default list)."""

_SIGMA_STRATEGIES = ("uniform", "quantile")
_BIN = "__polars_calib_sigma_bin__"
_EDGE_KEY = "__polars_calib_sigma_group__"  # the one group's key (no `by`)
_VALUE = "__polars_calib_sigma_value__"  # a row's binned value, in the first pass


def _edge_names(n_edges: int) -> list[str]:
    """The columns of a group's edges, joined on its rows (dropped once binned)."""
    return [f"__polars_calib_sigma_edge_{k}__" for k in range(n_edges)]


@dataclass(frozen=True)
class SigmaBins:
    """The σ-bins (or σ²-bins) of a metric or table: the checked options that travel together.

    ``TypeError`` / ``ValueError`` naming the argument, when built.
    """

    n_bins: int
    strategy: Strategy
    value_range: tuple[float, float] | None
    closed: Closed

    def __post_init__(self) -> None:
        check_n_bins(self.n_bins)
        check_choice("strategy", self.strategy, _SIGMA_STRATEGIES)
        check_choice("closed", self.closed, ("right", "left"))
        value_range = self.value_range
        if value_range is None:
            return
        if self.strategy != "uniform":
            msg = (
                "`range` gives equal-width bins: use it with strategy='uniform', "
                f"not {self.strategy!r}"
            )
            raise ValueError(msg)
        if (
            not isinstance(value_range, tuple | list)
            or len(value_range) != 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value_range)
        ):
            msg = f"`range` must be a pair of numbers (lo, hi), got {value_range!r}"
            raise TypeError(msg)
        lo, hi = float(value_range[0]), float(value_range[1])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            msg = f"`range` must be finite numbers lo < hi, got {value_range!r}"
            raise ValueError(msg)

    def edges(self, binned: pl.Expr) -> list[pl.Expr]:
        """The ``n_bins + 1`` edges: the fixed range's, or aggregates of `binned` (its
        smallest and largest value, or its quantiles) in a group's context."""
        if self.value_range is not None:
            lo, hi = (pl.lit(float(v), pl.Float64) for v in self.value_range)
            return range_edges(lo, hi, self.n_bins)
        if self.strategy == "uniform":
            return range_edges(binned.min(), binned.max(), self.n_bins)
        return quantile_edges(binned, self.n_bins)

    def index(self, binned: pl.Expr) -> pl.Expr:
        """The bin of each row of `binned` among its group's edges (null on the rows not
        counted, or out of range)."""
        return edge_index(binned, self.edges(binned), self.closed)


def _problem(prepared: Prepared, over: str) -> Problem:
    """The Gaussian problem with σ (or σ²) as its value and the variance tables' terms."""
    problem = prepared.problem
    terms = problem.terms
    normalized = terms["squared_error"] / terms["variance"]
    # netcal's test (y - μ)² / σ² <= χ²₁(τ), χ²₁(τ) = Φ⁻¹((1 + τ) / 2)², per QCE level.
    bounds = [NormalDist().inv_cdf(0.5 + tau / 2.0) ** 2 for tau in DECILES]
    covered = {f"covered_{j}": (normalized <= b).cast(pl.Float64) for j, b in enumerate(bounds)}
    value = terms["variance"] if over == "variance" else terms["variance"].sqrt()
    return Problem(
        value,
        problem.label,
        problem.weight,
        problem.present,
        problem.refused,
        problem.checks,
        {"squared_error": terms["squared_error"], "variance": terms["variance"], **covered},
        ok=problem.ok,
    )


@dataclass(frozen=True)
class SigmaTable:
    """The columns and σ-bins of a variance table, as plain values (they pickle: another
    engine's workers rebuild the table from them, as from a
    :class:`~polars_calib._table.forms.RegressionForm`)."""

    target: str
    mean: str
    std: str
    bins: SigmaBins
    over: str = "sigma"
    """``"sigma"`` (bins of σ) or ``"variance"`` (bins of σ²)."""

    bin_column: ClassVar[str | None] = _BIN
    """The column of each used row's bin (the table's bins are given by a column)."""

    @property
    def columns(self) -> list[str]:
        """The columns the problem reads."""
        return [self.target, self.mean, self.std]

    @property
    def binning(self) -> Binning:
        """How the table reads its values: `n_bins` bins and their closure."""
        return Binning(self.bins.n_bins, closed=self.bins.closed)

    @property
    def terms(self) -> tuple[str, ...]:
        """The row terms the table sums."""
        return ("squared_error", "variance", *(f"covered_{j}" for j in range(len(DECILES))))

    def prepared(
        self,
        frame: pl.DataFrame | pl.LazyFrame,
        by: Keys,
        time: str | None,
        every: str | None,
        weight: str | None,
    ) -> Prepared:
        """The problem, keys and rows (with their σ-bin column) of `frame` (its schema is
        checked, no data read)."""
        prepared = prepare_gaussian(
            frame,
            self.target,
            mean=self.mean,
            std=self.std,
            by=by,
            time=time,
            every=every,
            weight=weight,
        )
        problem, bins = _problem(prepared, self.over), self.bins
        row_weight = pl.lit(1.0) if problem.weight is None else problem.weight
        used = problem.present & ~problem.refused
        # Rows of weight zero count for nothing, not even for the group's σ range.
        binned = pl.when(used & (row_weight > 0.0)).then(problem.prob)
        lf, edges = prepared.lf, bins.edges(binned)
        if bins.value_range is None:
            lf, edges = _with_group_edges(lf, prepared.keys, bins, binned)
        index = edge_index(problem.prob, edges, bins.closed).fill_null(bins.n_bins)
        column = pl.when(used).then(index).cast(pl.Int32)
        joined = [_EDGE_KEY, *_edge_names(len(edges))]
        lf = lf.with_columns(column.alias(_BIN)).drop(joined, strict=False)
        return Prepared(prepared.data, lf, problem, prepared.keys, None)

    def completed(self, table: pl.LazyFrame) -> pl.LazyFrame:
        """A completed table as the plan gives it (unchanged)."""
        return table


def _with_group_edges(
    lf: pl.LazyFrame, keys: list[str], bins: SigmaBins, binned: pl.Expr
) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """The rows with their group's edges (of the values `binned`: a first pass over the
    rows, one row per group) joined on, and the edges as columns of the rows.

    The first pass is a ``group_by`` joined back to a second pass over the rows, with
    the small side forced as the join's build side: Polars' streaming engine then
    builds it before reading the rows again, where a window (``over``) or a join that
    samples both sides holds the rows (``docs/performance.md``, "Memory"). The build
    side is a hint (Polars marks it experimental): without it the numbers are the same.
    Quantile edges hold each group's values (the keys and `binned` alone) in the first
    pass: Polars' quantile aggregation runs in memory.
    """
    on = keys or [_EDGE_KEY]
    if not keys:
        lf = lf.with_columns(pl.lit(True).alias(_EDGE_KEY))
    edges = bins.edges(pl.col(_VALUE))
    names = _edge_names(len(edges))
    values = lf.select(*on, binned.alias(_VALUE))
    per_group = values.group_by(on).agg(e.alias(n) for e, n in zip(edges, names, strict=True))
    rows = lf.join(per_group, on=on, how="left", nulls_equal=True, build_side="force_right")
    return rows, [pl.col(n) for n in names]


def variance_plan(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    mean: str,
    std: str,
    bins: SigmaBins,
    over: str = "sigma",
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    weight: str | None = None,
) -> Plan:
    """Check a frame and plan the statistics table of its Gaussian predictions per σ-bin
    (`over` ``"sigma"``) or σ²-bin (``"variance"``)."""
    table = SigmaTable(target, mean, std, bins, over)
    prepared = table.prepared(data, by, time, every, weight)
    terms = table.terms
    return prepared_plan(prepared, table.binning, bin_column=_BIN, lf=prepared.lf, terms=terms)


def _used(n_bins: int) -> tuple[pl.Expr, pl.Expr]:
    """The table's rows of σ-bins (in range), and of any used row (in range or not)."""
    binned = pl.col("bin").is_not_null()
    return binned & (pl.col("bin") < n_bins), binned


def variance_bins(stats: pl.LazyFrame, keys: list[str], n_bins: int) -> pl.LazyFrame:
    """Per group and σ-bin of a variance table: keys, ``bin``, ``lower``, ``upper`` (the
    bin's smallest and largest σ), ``count``, ``weight``, ``sum_squared_error``,
    ``sum_variance``, ``mse``, ``mv``, ``rmse``, ``rmv``; the bins that hold rows,
    sorted. Null means for a group holding a refused row (a row with a null ``bin``
    counts them)."""
    stats, group = grouped(stats, keys)
    in_range, binned = _used(n_bins)
    refused = pl.col("count").filter(~binned).sum().over(group) > 0
    mse = pl.col("sum_squared_error") / pl.col("weight")
    mv = pl.col("sum_variance") / pl.col("weight")
    means = {"mse": mse, "mv": mv, "rmse": mse.sqrt(), "rmv": mv.sqrt()}
    return (
        stats.with_columns(refused.alias("__refused"))
        .filter(in_range | (~binned & (pl.col("count") > 0)))
        .with_columns(
            pl.when(~pl.col("__refused") & (pl.col("weight") > 0.0)).then(e).alias(n)
            for n, e in means.items()
        )
        .sort(*group, "bin", nulls_last=True)
        .select(
            *keys,
            "bin",
            "lower",
            "upper",
            "count",
            "weight",
            "sum_squared_error",
            "sum_variance",
            *means,
        )
    )


def finish_variance(
    sigma_stats: pl.LazyFrame,
    variance_stats: pl.LazyFrame | None,
    keys: list[str],
    metrics: Sequence[str],
    n_bins: int,
    marginal: bool,
) -> pl.LazyFrame:
    """One row per group: keys, ``count``, ``refused``, `metrics` (ENCE and QCE of the
    σ table, UCE of the σ² table). Null for a group holding a refused row or with no
    used weight (ENCE: no non-empty bin; conditional QCE: no row in range)."""
    stats, group = grouped(sigma_stats, keys)
    in_range, binned = _used(n_bins)
    total = pl.col("weight").filter(binned).sum()
    ok = (pl.col("count").filter(~binned).sum() == 0) & (total > 0.0)
    filled = in_range & (pl.col("weight") > 0.0)
    rmv = (pl.col("sum_variance") / pl.col("weight")).sqrt()
    rmse = (pl.col("sum_squared_error") / pl.col("weight")).sqrt()
    values = {
        "ence": ((rmv - rmse).abs() / rmv).filter(filled).mean(),
        "qce": _qce(n_bins, marginal),
    }
    per_group = stats.group_by(group).agg(
        pl.col("count").filter(binned).sum().alias("count"),
        pl.col("count").filter(~binned).sum().alias("refused"),
        *(pl.when(ok).then(values[m]).alias(m) for m in metrics if m != "uce"),
    )
    if "uce" in metrics:
        assert variance_stats is not None
        table, _ = grouped(variance_stats, keys)
        gap = (pl.col("sum_squared_error") - pl.col("sum_variance")).abs().filter(in_range)
        uce = table.group_by(group).agg(pl.when(ok).then(gap.sum() / total).alias("uce"))
        per_group = per_group.join(uce, on=group, how="left", nulls_equal=True)
    return per_group.sort(group, nulls_last=True).select(*keys, "count", "refused", *metrics)


def _qce(n_bins: int, marginal: bool) -> pl.Expr:
    """netcal's QCE of a group of a σ table: mean over levels of ``|c - τ|`` (marginal),
    or of ``sum_b W_b / W |c_b - τ|`` over the σ-bins in range (conditional)."""
    in_range, binned = _used(n_bins)
    rows = binned if marginal else in_range
    weight = pl.col("weight").filter(rows)
    per_level = []
    for j, tau in enumerate(DECILES):
        hits = pl.col(f"sum_covered_{j}").filter(rows)
        gaps = hits.sum() - tau * weight.sum() if marginal else hits - tau * weight
        per_level.append(gaps.abs().sum() / weight.sum())
    inside = weight.sum()
    return pl.when(inside > 0.0).then(pl.sum_horizontal(per_level) / len(DECILES))
