r"""Uniformity tests of the PIT of Gaussian predictions, per group.

Calibrated Gaussian predictions give PIT values ``u = Φ((y - μ) / σ)`` uniform on
[0, 1] (Gneiting et al. 2007). Two tests of that, each an aggregating expression
that runs in ``select``, ``group_by().agg``, ``over`` and the streaming engine:

* **Kolmogorov–Smirnov**: ``D = sup_u |F_n(u) - u|`` from the group's sorted PIT,
  ``D = max_i max(C_i / W - u_(i), u_(i) - C_(i-1) / W)`` with ``C_i`` the
  cumulative weight (``i`` unweighted: scipy's ``kstest(u, "uniform")``). Exact, and
  tie-free in meaning (a tie's rows share one jump of ``F_n``); it needs the group's
  rows sorted, so it is **not mergeable** (no sum over partitions gives it). Its
  p-value is the **asymptotic** Kolmogorov law, ``P(K >= sqrt(n) D)`` (scipy's
  ``kstest(..., method="asymp")``, ``kstwobign``), not the exact finite-``n`` law
  (scipy's default ``method="exact"``): for small groups it is larger (conservative),
  see ``docs/regression.md``.
* **Chi-square of the PIT histogram** on ``B`` equal-width bins (the package's one
  bin rule, right-closed: ``[0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]``):
  ``X² = sum_b (O_b - W/B)² / (W/B)`` over all ``B`` bins (empty ones included),
  p-value ``P(χ²_(B-1) > X²)``. Its inputs are the weight per bin: sums, so it
  **merges** across partitions.

Weights are **frequency weights**: a row of weight 2 counts as two identical rows, in
the statistic and in ``n = W`` of the p-values (for integer weights the numbers are
those of the repeated rows; other weights give an approximate test). The data policy
is the Gaussian problem's (:func:`polars_calib.pit`): rows with a null input are
skipped, a group holding a refused row gives null.
"""

from __future__ import annotations

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import check_n_bins
from polars_calib._core.problem import Problem
from polars_calib._core.regression import gaussian_problem
from polars_calib._core.special import chi2_sf, kolmogorov_sf
from polars_calib._table.bin_sums import in_group, per_bin

__all__ = ["pit_chi2", "pit_chi2_p", "pit_ks", "pit_ks_p"]

_PIT = "__polars_calib_pit__"
_WEIGHT = "__polars_calib_weight__"


def _named(value: pl.Expr, column: IntoExpr) -> pl.Expr:
    name = to_expr(column, "target").meta.output_name(raise_if_undetermined=False)
    return value if name is None else value.alias(name)


def _used(problem: Problem) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """The PIT and weight of the used rows (null elsewhere), and the group's total weight."""
    used = problem.present & ~problem.refused.fill_null(False)
    if problem.weight is not None:
        used = used & (problem.weight > 0.0)
    u = pl.when(used).then(problem.prob)
    w = pl.when(used).then(pl.lit(1.0) if problem.weight is None else problem.weight)
    return u, w, w.sum()


def _ks_statistic(problem: Problem) -> tuple[pl.Expr, pl.Expr]:
    """``D`` of the current group and its total weight ``W`` (see the module)."""
    u, w, total = _used(problem)
    # Sorted once as a struct, then read in list.eval (aggregations share no common
    # subexpression: each reference to a sort would sort again).
    # Unused rows (a null PIT) sort last and are dropped inside.
    rows = pl.struct(u.alias(_PIT), w.alias(_WEIGHT)).sort_by(u, nulls_last=True)
    row = pl.element().filter(pl.element().struct.field(_PIT).is_not_null())
    value, weight = row.struct.field(_PIT), row.struct.field(_WEIGHT)
    # Cumulative weights are integers for unit weights: C_i / W is the correctly
    # rounded i / n, as scipy's np.arange(1, n + 1) / n.
    after = weight.cum_sum()
    before = after - weight
    n = weight.sum()
    d = pl.max_horizontal((after / n - value).max(), (value - before / n).max())
    statistic = rows.implode().list.eval(d).list.first()
    return statistic, total


def _valid(problem: Problem, value: pl.Expr, total: pl.Expr) -> pl.Expr:
    return pl.when(~problem.invalid & (total > 0.0)).then(value)


def pit_ks(
    target: IntoExpr, *, mean: IntoExpr, std: IntoExpr, weight: IntoExpr | None = None
) -> pl.Expr:
    r"""Compute the Kolmogorov–Smirnov distance of the PIT from the uniform law, per group.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    weight
        Optional non-negative frequency weights (a weight of 2 counts the row twice).

    Returns
    -------
    Expr
        Float64 in [0, 1], one value per group: :math:`\sup_u |F_n(u) - u|` of the
        PIT values :math:`u = \Phi((y - \mu) / \sigma)`; null for a group holding a
        refused row or with no used row.

    Notes
    -----
    With the group's PIT sorted, :math:`D = \max_i \max(C_i / W - u_{(i)}, u_{(i)} -
    C_{i-1} / W)`, :math:`C_i` the cumulative weight (:math:`i` unweighted), as
    scipy's ``kstest(u, "uniform").statistic``. Not mergeable (one sort per group):
    an aggregating expression only, not a column of the statistics table.

    See Also
    --------
    pit_ks_p, pit_chi2_p, pit

    References
    ----------
    Gneiting, Balabdaoui and Raftery, "Probabilistic forecasts, calibration and
    sharpness", JRSS B 69 (2007).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "g": ["a"] * 4 + ["b"] * 4,
    ...     "y": [-1.0, -0.2, 0.3, 1.1, 2.0, 2.5, 3.0, 2.2],
    ...     "mu": 0.0,
    ...     "sigma": 1.0,
    ... })
    >>> df.group_by("g", maintain_order=True).agg(
    ...     ks=pc.pit_ks("y", mean="mu", std="sigma").round(4),
    ...     p=pc.pit_ks_p("y", mean="mu", std="sigma").round(4),
    ... )
    shape: (2, 3)
    ┌─────┬────────┬────────┐
    │ g   ┆ ks     ┆ p      │
    │ --- ┆ ---    ┆ ---    │
    │ str ┆ f64    ┆ f64    │
    ╞═════╪════════╪════════╡
    │ a   ┆ 0.1707 ┆ 0.9998 │
    │ b   ┆ 0.9772 ┆ 0.001  │
    └─────┴────────┴────────┘
    """
    problem = gaussian_problem(target, mean, std, weight)
    return _named(_valid(problem, *_ks_statistic(problem)), target)


def pit_ks_p(
    target: IntoExpr, *, mean: IntoExpr, std: IntoExpr, weight: IntoExpr | None = None
) -> pl.Expr:
    r"""Compute the asymptotic p-value of the PIT's Kolmogorov–Smirnov test, per group.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    weight
        Optional non-negative frequency weights: ``n`` is their sum.

    Returns
    -------
    Expr
        Float64 in [0, 1], one value per group: :math:`P(K \ge \sqrt{n} D)` for
        Kolmogorov's limit law :math:`K` and :math:`D` of :func:`pit_ks`; null for a
        group holding a refused row or with no used row.

    Notes
    -----
    The asymptotic law, scipy's ``kstest(u, "uniform", method="asymp")``
    (``kstwobign.sf``), not scipy's default exact finite-``n`` law: for a few dozen
    rows it is larger than the exact p-value (conservative; ``docs/regression.md``
    gives figures). Not mergeable, as :func:`pit_ks`.

    See Also
    --------
    pit_ks, pit_chi2_p

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [-1.0, -0.2, 0.3, 1.1], "mu": 0.0, "sigma": 1.0})
    >>> df.select(p=pc.pit_ks_p("y", mean="mu", std="sigma").round(4))
    shape: (1, 1)
    ┌────────┐
    │ p      │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.9998 │
    └────────┘
    """
    problem = gaussian_problem(target, mean, std, weight)
    statistic, total = _ks_statistic(problem)

    def p_value(packed: dict[str, pl.Expr]) -> pl.Expr:
        return kolmogorov_sf(packed["d"] * packed["n"].sqrt())

    # Packed: the tail reads its argument two dozen times (one sort, not 24).
    value = in_group({"d": statistic, "n": total}, p_value)
    return _named(_valid(problem, value, total), target)


def _chi2(problem: Problem, n_bins: int) -> tuple[pl.Expr, pl.Expr]:
    """Pearson's ``X²`` of the PIT histogram on `n_bins` bins, and the total weight."""
    binning = Binning(check_n_bins(n_bins))
    u, w, total = _used(problem)

    def statistic(packed: dict[str, pl.Expr]) -> pl.Expr:
        value, weight = packed["u"], packed["w"]
        expected = weight.sum() / n_bins
        if binning.masked:
            # Every bin through its mask (empty ones sum to 0): the PIT is packed, so
            # the masks compare a field, not the whole PIT computation again.
            counts = pl.concat_list([weight.filter(m).sum() for m in binning.masks(value)])
            counts = counts.explode()
            return ((counts - expected) * (counts - expected) / expected).sum()
        counts = per_bin(weight, binning.index(value), binning)
        gaps = (counts - expected) * (counts - expected) / expected
        # Empty bins hold no row of the window: each adds (0 - E)² / E = E.
        return gaps.sum() + (n_bins - counts.len()) * expected

    return in_group({"u": u, "w": w}, statistic), total


def pit_chi2(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    n_bins: int = 10,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Compute the chi-square statistic of the PIT histogram against the uniform law.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    n_bins
        Number ``B`` of equal-width, right-closed bins of the PIT.
    weight
        Optional non-negative frequency weights.

    Returns
    -------
    Expr
        Float64, one value per group: :math:`\sum_b (O_b - W/B)^2 / (W/B)` over the
        ``B`` bins (empty ones included), :math:`O_b` the weight in bin ``b``; null for
        a group holding a refused row or with no used row.

    Notes
    -----
    Bins ``[0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]`` (the package's bin rule). The
    statistic is a function of the weight per bin: it merges across partitions (the
    histogram of :func:`polars_calib.regression_statistics` on a grid that ``B``
    divides holds the same counts). scipy's ``chisquare`` of those counts.

    See Also
    --------
    pit_chi2_p, pit_ks

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [-1.0, -0.2, 0.3, 1.1], "mu": 0.0, "sigma": 1.0})
    >>> df.select(x2=pc.pit_chi2("y", mean="mu", std="sigma", n_bins=2))
    shape: (1, 1)
    ┌─────┐
    │ x2  │
    │ --- │
    │ f64 │
    ╞═════╡
    │ 0.0 │
    └─────┘
    """
    problem = gaussian_problem(target, mean, std, weight)
    return _named(_valid(problem, *_chi2(problem, n_bins)), target)


def pit_chi2_p(
    target: IntoExpr,
    *,
    mean: IntoExpr,
    std: IntoExpr,
    n_bins: int = 10,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Compute the p-value of the chi-square test of the PIT histogram, per group.

    Parameters
    ----------
    target
        The observed values.
    mean, std
        The predicted mean and standard deviation (``std > 0``).
    n_bins
        Number ``B`` of equal-width, right-closed bins of the PIT (at least 2).
    weight
        Optional non-negative frequency weights.

    Returns
    -------
    Expr
        Float64 in [0, 1], one value per group: ``P(χ²_(B-1) > X²)`` for ``X²`` of
        :func:`pit_chi2`; null for a group holding a refused row or with no used
        row.

    Notes
    -----
    The chi-square approximation wants about 5 expected rows per bin (``W / B >=
    5``); below that the p-value is rough. Mergeable, as :func:`pit_chi2`.

    See Also
    --------
    pit_chi2, pit_ks_p

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [3.0, 2.5, 2.0, 2.2, 1.9, 2.8], "mu": 0.0, "sigma": 1.0})
    >>> df.select(p=pc.pit_chi2_p("y", mean="mu", std="sigma", n_bins=2).round(4))
    shape: (1, 1)
    ┌────────┐
    │ p      │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.0143 │
    └────────┘
    """
    if isinstance(n_bins, int) and not isinstance(n_bins, bool) and n_bins < 2:
        msg = f"`n_bins` must be at least 2 for a chi-square test, got {n_bins}"
        raise ValueError(msg)
    problem = gaussian_problem(target, mean, std, weight)
    statistic, total = _chi2(problem, n_bins)
    df = pl.lit(n_bins - 1, pl.Int64)

    def p_value(packed: dict[str, pl.Expr]) -> pl.Expr:
        return chi2_sf(packed["x2"], df)

    value = in_group({"x2": statistic}, p_value)
    return _named(_valid(problem, value, total), target)
