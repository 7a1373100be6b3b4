"""How an audit's slices compare: with the overall row, between groups, and as tests.

Each slice's differences and ratios to the overall value; per attribute set,
fairlearn's ``MetricFrame`` disparities over its slices; the slices' p-values adjusted
for multiplicity (:func:`adjusted_p_values`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_calib._core.deprecation import positional_options, renamed_keyword
from polars_calib._core.options import CORRECTIONS, Correction, check_choice

__all__ = ["TEST_COLUMNS", "adjusted_p_values", "compared", "disparities"]

TEST_COLUMNS = ("p_value", "p_adjusted", "too_small", "significant")
"""The columns of each slice's test and flags (`by` cannot use them)."""


@positional_options("pc.adjusted_p_values", ["correction"])
def adjusted_p_values(
    p: pl.Expr, *, correction: Correction = "holm", method: Correction | None = None
) -> pl.Expr:
    """Adjust a column of p-values for multiple testing (Holm or Benjamini–Hochberg).

    An expression over the whole column (use it in ``select`` or ``with_columns``):
    null p-values stay null and do not count as tests.

    Parameters
    ----------
    p
        The p-values, Float64 in [0, 1].
    correction
        ``"holm"`` (Holm 1979: controls the family-wise error rate; the default, as
        in :func:`audit`) or ``"bh"`` (Benjamini & Hochberg 1995: controls the false
        discovery rate).
    method
        Deprecated spelling of `correction` (a ``DeprecationWarning``; removed in
        0.3.0), as is passing it by position.

    Returns
    -------
    Expr
        Float64, the adjusted p-values, in the rows' order.

    Notes
    -----
    With the ``m`` non-null p-values sorted, ``p_(1) <= ... <= p_(m)``:

    * Holm: ``min(1, max_{j <= i} (m - j + 1) p_(j))``;
    * Benjamini–Hochberg: ``min(1, min_{j >= i} m p_(j) / j)``.

    Tied p-values get the same adjusted value. These are statsmodels'
    ``multipletests(method="holm")`` and ``method="fdr_bh"``.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    *Scandinavian Journal of Statistics* 6, 65–70.
    Benjamini, Y. & Hochberg, Y. (1995). Controlling the false discovery rate.
    *JRSS B* 57, 289–300.

    See Also
    --------
    audit

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.01, 0.04, None, 0.03, 0.5]})
    >>> df.with_columns(
    ...     holm=pc.adjusted_p_values(pl.col("p"), correction="holm"),
    ...     bh=pc.adjusted_p_values(pl.col("p"), correction="bh"),
    ... )
    shape: (5, 3)
    ┌──────┬──────┬──────────┐
    │ p    ┆ holm ┆ bh       │
    │ ---  ┆ ---  ┆ ---      │
    │ f64  ┆ f64  ┆ f64      │
    ╞══════╪══════╪══════════╡
    │ 0.01 ┆ 0.04 ┆ 0.04     │
    │ 0.04 ┆ 0.09 ┆ 0.053333 │
    │ null ┆ null ┆ null     │
    │ 0.03 ┆ 0.09 ┆ 0.053333 │
    │ 0.5  ┆ 0.5  ┆ 0.5      │
    └──────┴──────┴──────────┘
    """
    correction = renamed_keyword("pc.adjusted_p_values", "method", "correction", method, correction)
    check_choice("correction", correction, CORRECTIONS)
    p = p.cast(pl.Float64)
    m = p.count().cast(pl.Float64)
    ordered = p.drop_nulls().sort()
    i = pl.int_range(1, p.count() + 1, dtype=pl.Int64).cast(pl.Float64)
    if correction == "holm":
        steps = (ordered * (m - i + 1.0)).cum_max()
    else:
        steps = (ordered * m / i).reverse().cum_min().reverse()
    adjusted = steps.clip(upper_bound=1.0)
    return adjusted.gather(p.rank("ordinal") - 1)


def compared(
    slices: pl.DataFrame,
    metrics: list[str],
    min_count: int,
    correction: Correction | None,
    alpha: float,
    within: Sequence[str] = (),
) -> pl.DataFrame:
    """Add each slice's share, differences and ratios to its group's overall row, its
    test (adjusted within its `within` group) and flags."""
    compared: list[pl.Expr] = []
    for metric in metrics:
        reference = _overall(pl.col(metric), within)
        value = pl.col(metric)
        # Polars divides by a scalar as a product with its inverse (1 ulp off): equal is 1.
        ratio = pl.when(value == reference).then(1.0).otherwise(value / reference)
        bounds = [
            pl.col(f"{metric}_{side}")
            for side in ("lower", "upper")
            if f"{metric}_{side}" in slices.columns
        ]
        compared += [
            value,
            *bounds,
            (value - reference).alias(f"{metric}_difference"),
            ratio.alias(f"{metric}_ratio"),
        ]
    p_value = adjusted = pl.lit(None, pl.Float64)  # no test: no p-values, nothing significant
    if "p_value" in slices.columns:
        p_value = pl.col("p_value")
        if correction is not None:
            adjusted = adjusted_p_values(p_value, correction=correction)
            adjusted = adjusted.over(within) if within else adjusted
        else:
            adjusted = p_value
    total = _overall(pl.col("count"), within)
    first = slices.columns.index(metrics[0])
    return slices.select(
        *slices.columns[: first - 2],
        pl.when(total > 0).then(pl.col("count") / total).alias("share"),
        *slices.columns[first - 2 : first],  # the two means
        *compared,
        p_value.alias("p_value"),
        adjusted.alias("p_adjusted"),
        (pl.col("count") < min_count).alias("too_small"),
        (adjusted < alpha).alias("significant"),
    )


def disparities(
    slices: pl.DataFrame,
    sets: list[tuple[str, ...]],
    metrics: list[str],
    include_small: bool,
    within: Sequence[str] = (),
) -> pl.DataFrame:
    """Compute fairlearn's disparities per attribute set and metric, over the set's slices
    (per `within` group: its columns first).

    The small slices count only with `include_small`.
    """
    # Each row's group's overall values, for the disparities to the overall.
    references = {metric: f"__overall_{metric}__" for metric in metrics}
    slices = slices.with_columns(
        _overall(pl.col(metric), within).alias(name) for metric, name in references.items()
    )
    kept = pl.lit(True) if include_small else ~pl.col("too_small")
    rows = []
    for subset in sets:
        members = slices.filter(pl.col("attributes") == pl.lit(list(subset), pl.List(pl.String)))
        for metric in metrics:
            value = pl.col(metric).filter(kept)
            reference = pl.col(references[metric]).first()
            summaries = [
                pl.lit(list(subset), pl.List(pl.String)).alias("attributes"),
                pl.lit(len(subset), pl.Int32).alias("order"),
                pl.lit(metric).alias("metric"),
                reference.alias("overall"),
                value.count().cast(pl.Int64).alias("groups"),
                (~kept).sum().cast(pl.Int64).alias("small"),
                *_disparity_exprs(value, reference),
                pl.col("slice").filter(kept).top_k_by(value, 1).first().alias("worst_slice"),
            ]
            # Without `within`: one row even of no slice (no group ever vanishes).
            rows.append(
                members.group_by(within, maintain_order=True).agg(summaries)
                if within
                else members.select(summaries)
            )
    table = pl.concat(rows)
    return table.sort(within, nulls_last=True, maintain_order=True) if within else table


def _overall(value: pl.Expr, within: Sequence[str]) -> pl.Expr:
    """The value of the overall row (``order`` 0) of each row's `within` group."""
    overall = value.filter(pl.col("order") == 0).first()
    return overall.over(within) if within else overall


def _disparity_exprs(value: pl.Expr, reference: pl.Expr) -> list[pl.Expr]:
    """Build fairlearn's group_min, group_max, difference and ratio (both methods)."""
    reference = reference.cast(pl.Float64)
    to_overall = value / reference
    return [
        value.min().alias("group_min"),
        value.max().alias("group_max"),
        (value.max() - value.min()).alias("difference"),
        (value - reference).abs().max().alias("difference_to_overall"),
        (value.min() / value.max()).alias("ratio"),
        pl.when(to_overall > 1.0)
        .then(1.0 / to_overall)
        .otherwise(to_overall)
        .min()
        .alias("ratio_to_overall"),
    ]
