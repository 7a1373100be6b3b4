r"""Size-stratified coverage of prediction intervals (MAPIE 1.6's ``regression_ssc``).

An interval method can reach its nominal coverage on average while narrow intervals
under-cover and wide ones over-cover (Angelopoulos and Bates, 2021, section 3). The
size-stratified coverage ranks a group's rows by interval width ``upper - lower``,
splits the ranked rows into ``B`` near-equal bins as ``np.array_split`` does (with
``n = qB + r`` rows, the first ``r`` bins hold ``q + 1`` rows, the others ``q``), and
gives each bin's coverage (bounds inclusive). Its worst bin tells whether coverage
depends on the size of the interval.

**Ties in width** are ranked in the order the rows reach the aggregation (the
frame's row order within a group, as ``np.argsort(kind="stable")``): a tie that
straddles a split puts its first rows in the narrower bin. MAPIE ranks with numpy's
default ``np.argsort``, which keeps no order among equal widths, so its bins can
differ on such a tie (``docs/prediction-intervals.md``). A ranking is a whole-group
operation: these expressions are **not mergeable** across partitions.

The data policy is :func:`polars_calib.interval_coverage`'s (one rule,
:func:`polars_calib._core.prediction_intervals.interval_problem`); no weights (the bins
are counts of rows).
"""

from __future__ import annotations

import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import check_n_bins
from polars_calib._core.prediction_intervals import check_level, interval_problem

__all__ = ["size_stratified_coverage", "size_stratified_coverage_gap"]

_WIDTH, _COVERED = "__polars_calib_width__", "__polars_calib_covered__"


def _per_bin(target: IntoExpr, lower: IntoExpr, upper: IntoExpr, n_bins: int) -> pl.Expr:
    """The list of each width bin's coverage in the current group (see the module).

    Null for a group holding a refused row or with fewer used rows than bins.
    """
    check_n_bins(n_bins)
    problem = interval_problem(target, lower, upper)
    used = problem.present & ~problem.refused.fill_null(False)
    rows = pl.struct(
        problem.terms["width"].alias(_WIDTH), problem.terms["covered"].alias(_COVERED)
    ).filter(used)
    width = pl.element().struct.field(_WIDTH)
    covered = pl.element().struct.field(_COVERED)
    n = pl.len()
    # Ordinal ranks: equal widths in the order they come (a stable sort's positions).
    position = width.rank("ordinal").cast(pl.Int64) - 1
    size, larger = n // n_bins, n % n_bins
    head = larger * (size + 1)  # the rows of the `larger` bins of size + 1
    bins = (
        pl.when(position < head)
        .then(position // (size + 1))
        .otherwise(larger + (position - head) // pl.max_horizontal(size, 1))
    )
    # The bins packed once more: list.eval shares no subexpression, and each bin's
    # filter would rank the rows again.
    binned = pl.element().struct.field("bin")
    shares = [pl.element().struct.field("c").filter(binned == b).mean() for b in range(n_bins)]
    per_bin = (
        pl.struct(bins.alias("bin"), covered.alias("c"))
        .implode()
        .list.eval(pl.concat_list(shares))
        .list.first()
    )
    value = rows.implode().list.eval(per_bin).list.first()
    used_rows = used.sum()
    return pl.when(~problem.invalid & (used_rows >= n_bins)).then(value)


def _named(value: pl.Expr, target: IntoExpr) -> pl.Expr:
    name = to_expr(target, "target").meta.output_name(raise_if_undetermined=False)
    return value if name is None else value.alias(name)


def size_stratified_coverage(
    target: IntoExpr, *, lower: IntoExpr, upper: IntoExpr, n_bins: int = 3
) -> pl.Expr:
    """Compute the coverage of prediction intervals per bin of interval width, per group.

    Parameters
    ----------
    target
        The observed values.
    lower, upper
        The interval's bounds (``lower <= upper``).
    n_bins
        Number of width bins, near-equal in rows (MAPIE's ``num_bins``, default 3).

    Returns
    -------
    Expr
        ``List(Float64)`` of `n_bins` coverages, narrowest intervals first, one list
        per group; null for a group holding a refused row (see
        :func:`interval_coverage`) or with fewer used rows than `n_bins`.

    Notes
    -----
    Rows ranked by ``upper - lower`` (ties in row order), split as
    ``np.array_split`` (the first ``n % n_bins`` bins one row larger); each bin's
    share of ``lower <= y <= upper``. MAPIE 1.6's ``regression_ssc``; its
    ``regression_ssc_score`` is the smallest entry (``.list.min()``). MAPIE also
    refuses data with fewer than ``n_bins + 1`` distinct widths; here bins of
    equal widths are allowed. Not mergeable (a ranking per group).

    See Also
    --------
    size_stratified_coverage_gap, interval_coverage, coverage_gap

    References
    ----------
    A. N. Angelopoulos and S. Bates, "A gentle introduction to conformal prediction
    and distribution-free uncertainty quantification" (2021), section 3; MAPIE 1.6,
    ``mapie.metrics.regression.regression_ssc``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "y": [0.5, 3.0, 1.0, 0.2, 5.0, 2.0],
    ...     "lo": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    ...     "hi": [1.0, 1.5, 2.0, 2.5, 4.0, 6.0],
    ... })
    >>> ssc = pc.size_stratified_coverage("y", lower="lo", upper="hi")
    >>> df.select(ssc=ssc, mapie_score=ssc.list.min())
    shape: (1, 2)
    ┌─────────────────┬─────────────┐
    │ ssc             ┆ mapie_score │
    │ ---             ┆ ---         │
    │ list[f64]       ┆ f64         │
    ╞═════════════════╪═════════════╡
    │ [0.5, 1.0, 0.5] ┆ 0.5         │
    └─────────────────┴─────────────┘
    """
    return _named(_per_bin(target, lower, upper, n_bins), target)


def size_stratified_coverage_gap(
    target: IntoExpr, *, lower: IntoExpr, upper: IntoExpr, level: float, n_bins: int = 3
) -> pl.Expr:
    """Compute the worst width bin's gap between coverage and the nominal level, per group.

    Parameters
    ----------
    target
        The observed values.
    lower, upper
        The interval's bounds (``lower <= upper``).
    level
        The intervals' nominal coverage, in (0, 1).
    n_bins
        Number of width bins, as :func:`size_stratified_coverage`.

    Returns
    -------
    Expr
        Float64 in [0, 1], one value per group: ``max_b |coverage_b - level|`` over
        the bins of :func:`size_stratified_coverage`; null where that is null.

    See Also
    --------
    size_stratified_coverage, coverage_gap

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "y": [0.5, 3.0, 1.0, 0.2, 5.0, 2.0],
    ...     "lo": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    ...     "hi": [1.0, 1.5, 2.0, 2.5, 4.0, 6.0],
    ... })
    >>> df.select(gap=pc.size_stratified_coverage_gap("y", lower="lo", upper="hi", level=0.8))
    shape: (1, 1)
    ┌─────┐
    │ gap │
    │ --- │
    │ f64 │
    ╞═════╡
    │ 0.3 │
    └─────┘
    """
    nominal = check_level(level)
    per_bin = _per_bin(target, lower, upper, n_bins)
    gap = per_bin.list.eval((pl.element() - nominal).abs()).list.max()
    return _named(gap, target)
