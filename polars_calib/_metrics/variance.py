"""Variance calibration of Gaussian predictions: ENCE, UCE and QCE, binned over σ.

Each expression bins the used rows of the current group by their standard deviation
(or variance, for UCE) with the package's one bin rule
(:func:`~polars_calib._core.binning.edge_index` among
:func:`~polars_calib._core.binning.range_edges` or
:func:`~polars_calib._core.binning.quantile_edges`), sums the Gaussian problem's terms
``squared_error`` and ``variance`` per bin, and finishes inside the group. They work
in ``select``, ``group_by().agg``, ``over`` and the streaming engine; a group holding a
refused row gives null. See ``docs/regression.md``, "Variance calibration: ENCE, UCE, QCE".
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import Closed, Strategy
from polars_calib._core.regression import gaussian_problem
from polars_calib._table.variance import SigmaBins

__all__ = ["ence", "qce", "uce"]

DECILES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""QCE's default levels: the central intervals of 10%, 20%, ..., 90%."""


def _check_levels(levels: Sequence[float]) -> list[float]:
    if isinstance(levels, str) or not isinstance(levels, Sequence) or not levels:
        msg = f"`levels` must be a non-empty sequence of floats in (0, 1), got {levels!r}"
        raise TypeError(msg)
    out = []
    for level in levels:
        if isinstance(level, bool) or not isinstance(level, int | float):
            msg = f"`levels` must hold floats in (0, 1), got {level!r}"
            raise TypeError(msg)
        if not 0.0 < float(level) < 1.0:
            msg = f"`levels` must hold floats in (0, 1), got {level!r}"
            raise ValueError(msg)
        out.append(float(level))
    return out


class _Rows:
    """The counted rows of a Gaussian problem in the current group, packed into one list.

    The row rule (present, not refused, positive weight) and the bin of each row are
    evaluated once: the counted rows' weight, ``σ²``, ``(y - μ)²``, bin (and the
    expression's extra columns) are packed into a list per group, and the finisher
    runs on its fields inside ``list.eval``, where each per-bin sum is a small
    expression of the fields (the row rule and the edges expanded in every masked sum
    made plans of seconds). The list holds the group's counted rows, as the package's
    quantile-bin expressions do.

    With a fixed ``range`` (or no bins: the marginal QCE) the bins are known before
    reading: the list holds instead one entry per bin of the weighted sums of its rows
    (masked sums, ``when(bin == k).then(w x).otherwise(0).sum()``) and one entry, bin -1,
    of all counted rows' sums: plain reductions, which Polars' streaming group-by runs
    without holding rows.
    """

    def __init__(
        self,
        target: IntoExpr,
        mean: IntoExpr,
        std: IntoExpr,
        weight: IntoExpr | None,
        bins: tuple[SigmaBins, str] | None = None,
        extra: dict[str, pl.Expr] | None = None,
    ) -> None:
        problem = gaussian_problem(target, mean, std, weight)
        row_weight = pl.lit(1.0) if problem.weight is None else problem.weight
        # Rows of weight zero count for nothing, not even for the group's σ range.
        counted = problem.present & ~problem.refused & (row_weight > 0.0)
        columns = {
            "weight": row_weight,
            "variance": problem.terms["variance"],
            "squared_error": problem.terms["squared_error"],
            **(extra or {}),
        }
        self.n_bins = 0 if bins is None else bins[0].n_bins
        # Sums when the bins are known before reading: a fixed range, or none (marginal).
        self.summed = bins is None or bins[0].value_range is not None
        total = pl.when(counted).then(row_weight).sum()
        self.valid = ~problem.invalid & (total > 0.0)
        if bins is not None:
            spec, over = bins
            sigma = to_expr(std, "std").cast(pl.Float64)
            binned = sigma if over == "sigma" else problem.terms["variance"]
            columns["bin"] = spec.index(pl.when(counted).then(binned))
        if self.summed:
            self._packed = _bin_sums(columns, counted, self.n_bins)
        else:
            packed = pl.struct([e.alias(k) for k, e in columns.items()]).filter(counted)
            self._packed = packed.implode()

    @staticmethod
    def field(name: str) -> pl.Expr:
        """A packed column, inside :meth:`finish`."""
        return pl.element().struct.field(name)

    def masks(self) -> list[pl.Expr]:
        """One mask per bin, inside :meth:`finish`."""
        return [self.field("bin") == k for k in range(self.n_bins)]

    def finish(self, value: pl.Expr, target: IntoExpr) -> pl.Expr:
        """`value` (of the packed fields) per group; null where the group is not valid."""
        result = self._packed.list.eval(value).list.first()
        return _named(pl.when(self.valid).then(result), target)

    def sum(self, name: str | None, mask: pl.Expr | None = None) -> pl.Expr:
        """Weighted sum of the column `name` (None: the weight) over the packed rows (in
        `mask`; all counted rows without one), inside :meth:`finish`."""
        if self.summed:
            value = self.field("weight" if name is None else name)
            return pl.when(self.field("bin") == -1 if mask is None else mask).then(value).sum()
        weighted = self.field("weight") * (
            1.0 if name is None else self.field(name).cast(pl.Float64)
        )
        return weighted.sum() if mask is None else pl.when(mask).then(weighted).sum()


def _bin_sums(columns: dict[str, pl.Expr], counted: pl.Expr, n_bins: int) -> pl.Expr:
    """Per bin of ``columns["bin"]`` (and bin -1: every counted row), a struct of the
    weighted sums of the other columns, in one list."""
    weight, bin_ = columns["weight"], columns.get("bin")
    values = {k: v.cast(pl.Float64) for k, v in columns.items() if k not in ("weight", "bin")}

    def sums(mask: pl.Expr, index: int) -> pl.Expr:
        fields = [pl.when(mask).then(weight).otherwise(0.0).sum().alias("weight")]
        fields += [
            pl.when(mask).then(weight * v).otherwise(0.0).sum().alias(k) for k, v in values.items()
        ]
        return pl.struct(pl.lit(index, pl.Int32).alias("bin"), *fields)

    per_bin = [] if bin_ is None else [sums(bin_ == k, k) for k in range(n_bins)]
    return pl.concat_list([sums(counted, -1), *per_bin])


def _named(value: pl.Expr, column: IntoExpr) -> pl.Expr:
    """`value` named after `column` (the target's name, as the other regression metrics)."""
    name = to_expr(column, "target").meta.output_name(raise_if_undetermined=False)
    return value if name is None else value.alias(name)


def ence(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
    closed: Closed = "right",
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return the expected normalized calibration error of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    n_bins
        Number of σ-bins (netcal's default, 10).
    strategy
        ``"uniform"`` (default): equal-width bins between the group's smallest and
        largest σ (netcal's), or over `range`; ``"quantile"``: equal-count bins at
        the group's quantiles of σ.
    range
        ``(lo, hi)``: fixed equal-width bins over ``[lo, hi]`` (the same bins in every
        group and partition); rows whose σ lies outside are in no bin.
    closed
        ``"right"`` (default): ``[e_0, e_1], (e_1, e_2], ...``; ``"left"``:
        ``[e_0, e_1), ..., [e_(B-1), e_B]``, netcal's closure.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate ``mean_b |RMV_b - RMSE_b| / RMV_b`` over the non-empty bins;
        null for a group holding a refused row or with no used row.

    See Also
    --------
    uce, qce

    Notes
    -----
    ``RMV_b = sqrt(sum_b w σ² / W_b)``, ``RMSE_b = sqrt(sum_b w (y - μ)² / W_b)``. Bin
    edges are ``np.linspace(lo, hi, n_bins + 1)`` as numpy computes them: with
    ``closed="left"`` the numbers are netcal's. ENCE grows with the number of bins on
    calibrated predictions (Pernot 2023): see ``docs/regression.md``.

    Memory: with a fixed `range` the bins are known before reading, and the expression
    is a sum per bin, which a streaming ``group_by().agg`` over a scan runs without
    holding rows. netcal's range (the group's own smallest and largest value) and
    quantile bins are known only after reading the group: the expression then gathers
    its rows into one list before binning them (about 2 GB at 20M rows);
    :func:`~polars_calib.variance_summary` gives the same numbers per group from a
    statistics table that streams.

    References
    ----------
    Levi, Gispan, Giladi and Fetaya, "Evaluating and calibrating uncertainty
    prediction in regression tasks", Sensors 22 (2022); netcal 1.4, ``ENCE``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(ence=pc.ence("y", mean="mu", std="sigma", n_bins=5))
    shape: (1, 1)
    ┌──────────┐
    │ ence     │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 1.666667 │
    └──────────┘
    """
    bins = SigmaBins(n_bins, strategy, range, closed)
    rows = _Rows(target, mean, std, weight, (bins, "sigma"))
    terms, filled = [], []
    for mask in rows.masks():
        bin_weight = rows.sum(None, mask)
        rmv = (rows.sum("variance", mask) / bin_weight).sqrt()
        rmse = (rows.sum("squared_error", mask) / bin_weight).sqrt()
        terms.append(pl.when(bin_weight > 0.0).then((rmv - rmse).abs() / rmv))
        filled.append((bin_weight > 0.0).cast(pl.Float64))
    n_filled = pl.sum_horizontal(filled)
    return rows.finish(pl.when(n_filled > 0.0).then(pl.sum_horizontal(terms) / n_filled), target)


def uce(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
    closed: Closed = "right",
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return the uncertainty calibration error of Gaussian predictions, binned over σ².

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    n_bins
        Number of σ²-bins (netcal's default, 10).
    strategy
        ``"uniform"`` (default): equal-width bins between the group's smallest and
        largest σ² (netcal's), or over `range`; ``"quantile"``: equal-count bins.
    range
        ``(lo, hi)``: fixed equal-width bins of σ² over ``[lo, hi]``; rows outside are
        in no bin but count in ``W`` (as netcal: they add no error).
    closed
        ``"right"`` (default) or ``"left"`` (netcal's closure), as :func:`ence`.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate ``sum_b W_b / W |MSE_b - MV_b|``; null for a group holding
        a refused row or with no used row.

    See Also
    --------
    ence, qce

    Notes
    -----
    ``MSE_b`` and ``MV_b`` are the bin's weighted means of ``(y - μ)²`` and ``σ²``;
    ``W`` is the weight of every used row of the group.

    Memory: with a fixed `range` the bins are known before reading, and the expression
    is a sum per bin, which a streaming ``group_by().agg`` over a scan runs without
    holding rows. netcal's range (the group's own smallest and largest value) and
    quantile bins are known only after reading the group: the expression then gathers
    its rows into one list before binning them (about 2 GB at 20M rows);
    :func:`~polars_calib.variance_summary` gives the same numbers per group from a
    statistics table that streams.

    References
    ----------
    Laves, Ihler, Fast, Kahrs and Ortmaier, "Well-calibrated regression uncertainty in
    medical imaging with deep learning", MIDL 2020; netcal 1.4, ``UCE``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(uce=pc.uce("y", mean="mu", std="sigma", n_bins=5))
    shape: (1, 1)
    ┌──────┐
    │ uce  │
    │ ---  │
    │ f64  │
    ╞══════╡
    │ 0.33 │
    └──────┘
    """
    bins = SigmaBins(n_bins, strategy, range, closed)
    rows = _Rows(target, mean, std, weight, (bins, "variance"))
    gaps = [
        (rows.sum("squared_error", mask) - rows.sum("variance", mask)).abs()
        for mask in rows.masks()
    ]
    return rows.finish(pl.sum_horizontal(gaps) / rows.sum(None), target)


def qce(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    levels: Sequence[float] = DECILES,
    n_bins: int = 10,
    marginal: bool = True,
    strategy: Strategy = "uniform",
    range: tuple[float, float] | None = None,  # noqa: A002 (numpy's and netcal's name)
    closed: Closed = "right",
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Return netcal's quantile calibration error of Gaussian predictions.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    levels
        Nominal coverages τ in (0, 1) of the central intervals (default 0.1 ... 0.9).
    n_bins
        Number of σ-bins of the conditional form (netcal's default, 10).
    marginal
        ``True`` (default, as netcal's code): ``mean_τ |c_τ - τ|`` over all rows;
        ``False``: ``mean_τ sum_b W_b / W |c_(b,τ) - τ|`` over σ-bins.
    strategy, range, closed
        The σ-bins of the conditional form, as :func:`ence`.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate; null for a group holding a refused row or with no used row
        (conditional: no row in `range`).

    See Also
    --------
    ence, uce
    mean_absolute_calibration_error : The calibration curve's counterpart (other levels).

    Notes
    -----
    ``c_τ`` is the weighted share of rows inside the central τ-interval, as netcal
    tests it: ``(y - μ)² / σ² <= χ²₁(τ) = Φ⁻¹((1 + τ)/2)²``.

    Memory: the marginal QCE, and the conditional one with a fixed `range`, are sums
    (per bin), which a streaming ``group_by().agg`` over a scan runs without holding
    rows. With netcal's range (the group's own smallest and largest value) or quantile
    bins, the conditional QCE gathers the group's rows into one list before binning
    them (about 2 GB at 20M rows); :func:`~polars_calib.variance_summary` gives the same
    numbers per group from a statistics table that streams.

    References
    ----------
    Küppers, Schneider and Haselhoff, "Parametric and multivariate uncertainty
    calibration for regression and object detection", ECCV workshops 2022;
    netcal 1.4, ``QCE``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [1.5, 3.0, 2.0], "mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0]})
    >>> df.select(qce=pc.qce("y", mean="mu", std="sigma").round(6))
    shape: (1, 1)
    ┌──────────┐
    │ qce      │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.388889 │
    └──────────┘
    """
    taus = _check_levels(levels)
    bins = SigmaBins(n_bins, strategy, range, closed)
    if not isinstance(marginal, bool):
        msg = f"`marginal` must be a bool, got {type(marginal).__name__}"
        raise TypeError(msg)
    problem = gaussian_problem(target, mean, std)
    normalized = problem.terms["squared_error"] / problem.terms["variance"]
    # netcal's test (y - μ)² / σ² <= χ²₁(τ), χ²₁(τ) = Φ⁻¹((1 + τ) / 2)², one column per level.
    bounds = [NormalDist().inv_cdf(0.5 + tau / 2.0) ** 2 for tau in taus]
    covered = {f"covered_{j}": normalized <= bound for j, bound in enumerate(bounds)}
    rows = _Rows(target, mean, std, weight, None if marginal else (bins, "sigma"), covered)
    masks: list[pl.Expr | None] = [None] if marginal else [*rows.masks()]
    bin_weights = [rows.sum(None, mask) for mask in masks]
    inside = pl.sum_horizontal(bin_weights)
    per_level = []
    for j, tau in enumerate(taus):
        gaps = [
            (rows.sum(f"covered_{j}", mask) - tau * bin_weight).abs()
            for mask, bin_weight in zip(masks, bin_weights)
        ]
        per_level.append(pl.sum_horizontal(gaps) / inside)
    value = pl.when(inside > 0.0).then(pl.sum_horizontal(per_level) / len(taus))
    return rows.finish(value, target)
