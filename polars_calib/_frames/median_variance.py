"""The median-variance bins of a frame's rows, as a column.

See :mod:`polars_calib._table.median_variance` for the splits.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import SUM_TOLERANCE, check_min_size
from polars_calib._core.validation import problem_counts, raise_for_problems
from polars_calib._table.median_variance import binned_rows
from polars_calib._table.plan import FrameT, prepare, same_kind


def median_variance_bins(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    min_size: int = 10,
    max_bins: int | None = None,
    name: str = "bin",
    weight: str | None = None,
    pos_label: Any = None,
    sum_tol: float = SUM_TOLERANCE,
) -> FrameT:
    """The rows of `data` with their median-variance bin, per group.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Binary probabilities (split on ``p``), or probability vectors (``Array`` or
        ``List``, split on their components).
    label
        The 0/1 outcome, or with vectors the true class: rows with a null
        probability, label or weight are not binned (their bin is null), as the
        metrics ignore them.
    by
        Group keys: column names or expressions; each group is binned on its own.
    min_size
        Fewest rows per bin, an int >= 1.
    max_bins
        Most bins per group, an int >= 1; ``None``: no limit.
    name
        Name of the added bin column.
    weight
        Name of an optional weight column: it is not used by the splits (which count
        rows, as CalibrationErrors.jl), only to decide which rows are used.
    pos_label, sum_tol
        As :func:`polars_calib.ece` and :func:`polars_calib.canonical_ece`.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`, the same rows in the same order, plus `name`
        (Int32, ``0 .. B - 1`` within each group in the order of the bins' mean
        predictions; null where the row is not used).

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame, refused rows (see
        :func:`polars_calib.validate`). A LazyFrame's refused rows get a null bin and
        make the metrics of their group null.
    ValueError
        ``min_size < 1`` or ``max_bins < 1``.

    Notes
    -----
    The rule is CalibrationErrors.jl's ``MedianVarianceBinning`` (see
    :mod:`polars_calib._table.median_variance`): split the bin of largest variance at the
    median of its component of largest variance, the values strictly below the
    median going left, while both halves keep ``min_size`` rows and fewer than
    ``max_bins`` bins exist. Binary probabilities are split on ``p`` (Julia, given
    ``[1 - p, p]``, splits on ``1 - p``: the same bins except where a tied median
    sends the tied values the other way). The bins depend on all of a group's rows:
    statistics over them do not merge across partitions. A LazyFrame stays a plan
    (``group_by().map_groups``) and is read when collected.

    References
    ----------
    J. Vaicenavicius et al., "Evaluating model calibration in classification",
    AISTATS 2019; CalibrationErrors.jl, ``MedianVarianceBinning``.

    See Also
    --------
    polars_calib.canonical_ece, polars_calib.ece

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9],
    ...     "y": [0, 0, 1, 0, 1, 1, 0, 1],
    ... })
    >>> binned = pc.median_variance_bins(df, "p", "y", min_size=2)
    >>> binned["bin"].to_list()
    [0, 0, 1, 1, 2, 2, 3, 3]
    >>> binned.select(ece=pc.ece("p", "y", bins="bin"))
    shape: (1, 1)
    ┌──────┐
    │ ece  │
    │ ---  │
    │ f64  │
    ╞══════╡
    │ 0.25 │
    └──────┘
    """
    check_min_size("min_size", min_size)
    if max_bins is not None:
        check_min_size("max_bins", max_bins)
    if not isinstance(name, str):
        msg = f"`name` must be a str, got {type(name).__name__}"
        raise TypeError(msg)
    prepared = prepare(
        data, prob, label, by=by, weight=weight, sum_tol=sum_tol, pos_label=pos_label
    )
    if name in prepared.data.collect_schema().names():
        msg = f"`name` {name!r} is a column of `data` already"
        raise ValueError(msg)
    if isinstance(data, pl.DataFrame):
        problem = prepared.problem
        refused = prepared.lf.select(problem.refused.fill_null(False).sum()).collect().item()
        if refused:
            raise_for_problems(
                problem_counts(prepared.lf, problem.checks).collect(), problem.checks
            )
    columns = [*data.collect_schema().names(), name]
    return same_kind(data, binned_rows(prepared, prob, min_size, max_bins, name).select(columns))
