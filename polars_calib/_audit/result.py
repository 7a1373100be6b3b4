"""The result of an audit: its slices and disparities tables, and the worst slices."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from polars_calib._core.options import check_choice

__all__ = ["Audit"]


@dataclass(frozen=True)
class Audit:
    """The result of :func:`audit`: tables of slices and disparities (Polars DataFrames).

    Attributes
    ----------
    slices
        One row per slice (see :func:`audit`, Returns).
    disparities
        One row per attribute set and metric (see :func:`audit`, Returns).
    by
        The attributes audited, in order.
    metrics
        The metric columns of ``slices`` (named as in :func:`polars_calib.summary`).
    min_count
        Slices with fewer used rows are flagged ``too_small``.
    include_small
        Whether the disparities (and by default :meth:`worst`) count small slices.
    within
        The keys kept whole (:func:`audit`'s `within`): each group of their values
        is audited on its own; ``()`` without them.
    """

    slices: pl.DataFrame
    disparities: pl.DataFrame
    by: tuple[str, ...]
    metrics: tuple[str, ...]
    min_count: int
    include_small: bool = False
    within: tuple[str, ...] = ()

    def worst(
        self, k: int = 10, *, metric: str | None = None, include_small: bool | None = None
    ) -> pl.DataFrame:
        """The `k` slices with the largest value of `metric`, the overall row left out.

        With :attr:`within`, the `k` worst of each group, group after group.

        Parameters
        ----------
        k
            How many slices, a positive int.
        metric
            A metric column of :attr:`slices`; by default the first of the audit's
            metrics (the calibration error when asked for).
        include_small
            Also rank the slices flagged ``too_small``; ``None`` (default): as the
            audit was asked (:func:`audit`'s `include_small`, whose default leaves
            them out: a small slice's metric is mostly sampling noise).

        Returns
        -------
        DataFrame
            Rows of :attr:`slices`, largest `metric` first (ties by count, larger
            first; with :attr:`within`, per group, in the order of :attr:`slices`);
            slices with a null metric are left out.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> df = pl.DataFrame({
        ...     "sex": ["F", "M"] * 100,
        ...     "age": ["young"] * 100 + ["old"] * 100,
        ...     "p": [0.2, 0.7, 0.4, 0.9] * 50,
        ...     "y": [0, 1, 1, 1] * 50,
        ... })
        >>> result = pc.audit(df, "p", "y", by=["sex", "age"], min_count=10, n_resamples=None)
        >>> result.worst(3).select("slice", "count", pl.col("ece").round(4))
        shape: (3, 3)
        ┌──────────────────┬───────┬─────┐
        │ slice            ┆ count ┆ ece │
        │ ---              ┆ ---   ┆ --- │
        │ str              ┆ i64   ┆ f64 │
        ╞══════════════════╪═══════╪═════╡
        │ sex=F            ┆ 100   ┆ 0.4 │
        │ sex=F, age=old   ┆ 50    ┆ 0.4 │
        │ sex=F, age=young ┆ 50    ┆ 0.4 │
        └──────────────────┴───────┴─────┘
        """
        if isinstance(k, bool) or not isinstance(k, int):
            msg = f"`k` must be a positive int, got {type(k).__name__} {k!r}"
            raise TypeError(msg)
        if k < 1:
            msg = f"`k` must be a positive int, got {k!r}"
            raise ValueError(msg)
        column = self.metrics[0] if metric is None else metric
        check_choice("metric", column, self.metrics)
        ranked = self.slices.filter(pl.col("order") > 0, pl.col(column).is_not_null())
        if not (self.include_small if include_small is None else include_small):
            ranked = ranked.filter(~pl.col("too_small"))
        ranked = ranked.sort([column, "count"], descending=True, maintain_order=True)
        if not self.within:
            return ranked.head(k)
        first = ranked.filter(pl.int_range(pl.len()).over(self.within) < k)
        return first.sort(self.within, nulls_last=True, maintain_order=True)
