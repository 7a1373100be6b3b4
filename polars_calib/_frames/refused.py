"""Per group, the rows each data check refuses: the frame form of :func:`refused_rows`."""

from __future__ import annotations

from typing import Any

from polars_calib._core.exprs import GroupKeys, Keys
from polars_calib._core.validation import check_schema, refused_rows
from polars_calib._table.plan import FrameT, same_kind


def refused_counts(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    weight: str | None = None,
    pos_label: Any = None,
) -> FrameT:
    """Count, per group, the rows each data check refuses: why a group's metrics are null.

    The frame form of the :func:`polars_calib.refused_rows` expression: the same
    checks, aggregated per group of `by` and unnested into columns.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    by
        Group keys: column names or expressions; ``None`` for one row over the frame.
    weight
        Name of an optional column of non-negative sample weights.
    pos_label
        The label value of the positive class, when labels are not 0/1.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data` (a LazyFrame gives a plan that reads nothing until
        collected; refused rows never raise: they are what it counts), one row per
        group in order of appearance: the keys, then the fields of
        :func:`polars_calib.refused_rows`: ``rows``, ``refused`` and one UInt32 count
        per check, named by its problem.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column (from the schema alone).
    ValueError
        A `by` key named ``rows`` or ``refused``, or a key given twice.

    See Also
    --------
    refused_rows : the same counts as an aggregating expression.
    validate : raise on the first bad frame.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame(
    ...     {"model": ["a", "a", "b", "b"], "p": [0.2, 1.5, 0.3, 0.7], "y": [0, 1, 1, 3]}
    ... )
    >>> pc.refused_counts(df, "p", "y", by="model").select(
    ...     "model", "rows", "refused", "probability outside [0, 1]", "label not 0 or 1"
    ... )
    shape: (2, 5)
    ┌───────┬──────┬─────────┬────────────────────────────┬──────────────────┐
    │ model ┆ rows ┆ refused ┆ probability outside [0, 1] ┆ label not 0 or 1 │
    │ ---   ┆ ---  ┆ ---     ┆ ---                        ┆ ---              │
    │ str   ┆ u32  ┆ u32     ┆ u32                        ┆ u32              │
    ╞═══════╪══════╪═════════╪════════════════════════════╪══════════════════╡
    │ a     ┆ 2    ┆ 1       ┆ 1                          ┆ 0                │
    │ b     ┆ 2    ┆ 1       ┆ 0                          ┆ 1                │
    └───────┴──────┴─────────┴────────────────────────────┴──────────────────┘
    """
    keys = GroupKeys(by, frozenset({"rows", "refused"}))
    lf = check_schema(data, prob, label, weight, keys.columns(), pos_label=pos_label)
    counts = refused_rows(prob, label, weight=weight, pos_label=pos_label)
    if keys.exprs:
        result = lf.group_by(keys.exprs, maintain_order=True).agg(counts)
    else:
        result = lf.select(counts)
    return same_kind(data, result.unnest("refused_rows"))
