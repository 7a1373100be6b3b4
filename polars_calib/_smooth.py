r"""Smooth ECE (Błasiok & Nakkiran, 2023) per group, as relplot's ``smECE`` computes it.

relplot smooths the residuals ``f - y`` and the row density with a reflected
Gaussian kernel of bandwidth :math:`\sigma`, each on a fine grid, and reports

.. math::

    \mathrm{smECE}_\sigma
    = \frac{\sum_t |\hat r_\sigma(t)|}{\sum_t (\hat\delta_\sigma(t) + 10^{-4})},

with :math:`\hat r` and :math:`\hat\delta` the smoothed residual and density read at
``max(round(10 / sigma), 200)`` evenly spaced points ``t``; the bandwidth is the
fixed point :math:`\sigma^* \approx \mathrm{smECE}_{\sigma^*}`, found by a bisection
of ten steps from ``sigma = 1`` (``relplot.metrics.smECE``, ``eps = 0.001``).

How it is computed here, in two steps:

1. **Fine-grid sums per group** (:func:`smooth_ece_statistics`): for each grid
   size ``G`` relplot may use (:data:`GRIDS`: 1000 intervals for ``sigma >= 0.01``,
   finer ones below), the sums per cell ``[k/G, (k+1)/G)`` of the weight ``w``, the
   weighted residual ``w (p - y)``, and both times the row's position in its cell
   (:func:`polars_calib._core.binning.linear_grid`): exactly what relplot's linear spread
   of each row onto the points ``k/G`` and ``(k+1)/G`` needs. One lazy
   aggregation per grid over one read of the data, in memory or streaming; the
   table **merges** by summing rows of the same group, grid and cell (partitions,
   days, engines).
2. **A small per-group finisher** (:func:`smooth_ece_from_statistics`): the kernel
   smoothing and the bandwidth search of relplot, in numpy, on the table's grids.

Why not an aggregating expression: the search is eleven smoothings in sequence,
each at a bandwidth that depends on the previous one's result and on a grid whose
size depends on that bandwidth; each is a convolution of a grid of up to 5121
points (about a million kernel terms). As list expressions inside a group, with no
common subexpressions shared in aggregations, that is a stack of exploded
cross products per group, far slower than the finisher's ``np.convolve`` on the
small table (the numpy step runs per group, never per row).

Weights are frequency weights: a row of weight 2 counts as two identical rows
(relplot has no weights; the agreement is with repeated rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from polars_calib._core.binning import linear_grid
from polars_calib._core.deprecation import deprecated_alias
from polars_calib._core.exprs import GroupKeys, Keys
from polars_calib._core.problem import binary_problem
from polars_calib._core.validation import (
    CalibrationDataError,
    check_schema,
    problem_counts,
    raise_for_problems,
)
from polars_calib._table.columns import grouped
from polars_calib._table.plan import FrameT, same_kind

__all__ = [
    "GRIDS",
    "smooth_ece_from_statistics",
    "smooth_ece_statistics",
    "smooth_ece_summary",
]

_BANDWIDTH_FLOOR = 0.001
"""relplot ``smECE(eps=0.001)``: a bandwidth below this is accepted without a smoothing."""
_REFINE = 10
"""relplot ``search_param(refine=10)``: the bisection's steps (bandwidths k / 1024)."""
_MESH = 200
"""relplot ``config.smECE_mesh_pts``: the fewest evaluation points."""
_DENSITY_FLOOR = 1e-4
"""relplot ``BaseKernelMixin.smooth(eps=0.0001)``: added to the smoothed density."""
_ALL = "__polars_calib_all__"
_COLUMNS = ("grid", "cell", "count", "refused", "weight", "gap", "weight_above", "gap_above")


def _grid_intervals(sigma: float) -> int:
    """The grid relplot smooths on at `sigma`: ``max(2000, round(20 / sigma)) // 2`` intervals."""
    return max(2000, round(20 / sigma)) // 2


GRIDS: tuple[int, ...] = tuple(
    sorted(
        {
            _grid_intervals(k / 2**_REFINE)
            for k in range(1, 2**_REFINE + 1)
            if k / 2**_REFINE >= _BANDWIDTH_FLOOR
        }
    )
)
"""Intervals of every grid the bandwidth search can smooth on: 1000 (``sigma >= 0.01``)
and one per bandwidth ``k / 1024`` below 0.01."""


# --------------------------------------------------------------------------
# Step 1: the fine-grid statistics table
# --------------------------------------------------------------------------


def _statistics_plan(
    lf: pl.LazyFrame,
    prob: str,
    label: str,
    keys: list[str],
    weight: str | None,
    pos_label: Any,
) -> pl.LazyFrame:
    """The table (see :func:`smooth_ece_statistics`) of `lf` grouped by `keys` (non-empty)."""
    problem = binary_problem(prob, label, weight, pos_label)
    refused = problem.refused.fill_null(False)
    used = problem.present & ~refused
    p = pl.when(used).then(problem.prob)
    mass = p.is_not_null().cast(pl.Float64) if problem.weight is None else problem.weight
    # The problem's columns once, cached: every grid's aggregation reads them, and the
    # data are read once (one aggregation per grid is several times faster than one
    # over exploded or cross-joined (row, grid) pairs).
    base = lf.select(
        *keys,
        p.alias("p"),
        pl.when(used).then(mass).alias("mass"),
        problem.weighted(p - problem.label).alias("gap"),  # relplot smooths f - y
        used.alias("used"),
        refused.alias("refused"),
    ).cache()
    prob_, mass_, gap_ = pl.col("p"), pl.col("mass"), pl.col("gap")
    totals = base.group_by(*keys).agg(
        pl.lit(None, pl.Int32).alias("grid"),
        pl.lit(None, pl.Int32).alias("cell"),
        pl.col("used").sum().cast(pl.Int64).alias("count"),
        pl.col("refused").sum().cast(pl.Int64).alias("refused"),
        mass_.sum().alias("weight"),
        gap_.sum().alias("gap"),
        pl.lit(0.0).alias("weight_above"),
        pl.lit(0.0).alias("gap_above"),
    )
    parts = [totals.select(*keys, *_COLUMNS)]
    for intervals in GRIDS:
        cell, fraction = linear_grid(prob_, intervals)
        part = base.filter(prob_.is_not_null()).group_by(*keys, cell.cast(pl.Int32).alias("cell"))
        part_sums = part.agg(
            pl.lit(intervals, pl.Int32).alias("grid"),
            pl.len().cast(pl.Int64).alias("count"),
            pl.lit(0, pl.Int64).alias("refused"),
            mass_.sum().alias("weight"),
            gap_.sum().alias("gap"),
            (mass_ * fraction).sum().alias("weight_above"),
            (gap_ * fraction).sum().alias("gap_above"),
        )
        parts.append(part_sums.select(*keys, *_COLUMNS))
    return pl.concat(parts)


def _prepared(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    by: Keys,
    weight: str | None,
    pos_label: Any,
) -> tuple[pl.LazyFrame, list[str], bool]:
    if isinstance(prob, pl.Expr) or not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = (
            "`data` must be a polars DataFrame or LazyFrame: smooth ECE is a frame "
            "function, `pc.smooth_ece_summary(df, 'p', 'y', by=...)`, not an aggregating "
            f"expression (see polars_calib._smooth); got {type(data).__name__}"
        )
        raise TypeError(msg)
    keys = GroupKeys(by, frozenset(_COLUMNS) | {"smooth_ece", "sigma"})
    lf = check_schema(data, prob, label, weight, keys.columns(), pos_label=pos_label)
    added = keys.computed()
    if added:
        lf = lf.with_columns(added)
    names = list(keys.names)
    whole = not names
    lf, names = grouped(lf, names)
    return lf, names, whole


def smooth_ece_statistics(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    weight: str | None = None,
    pos_label: Any = None,
) -> FrameT:
    """Fine-grid sums per group: the mergeable input of :func:`smooth_ece_summary`.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    by
        Group keys: column names or expressions; ``None`` for one group.
    weight
        Name of an optional column of non-negative frequency weights.
    pos_label
        The label of the positive class when labels are not 0/1.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`, sorted by keys, grid and cell: the keys, ``grid``
        (Int32: the grid's intervals ``G``, one of :data:`GRIDS`), ``cell`` (Int32:
        ``k``, the rows with ``k/G <= p < (k+1)/G``, and ``p = 1`` in the last),
        ``count`` and ``refused`` (Int64 rows), ``weight`` and ``gap`` (Float64
        sums of ``w`` and ``w (p - y)``), ``weight_above`` and ``gap_above``
        (Float64: the same sums times the fraction ``p G - k``, the share relplot
        spreads onto the point ``(k+1)/G``; the rest goes to ``k/G``). Per group,
        one row with null ``grid`` and ``cell`` counts the rows used and refused and
        holds the totals; the other rows are the occupied cells of every grid.
        Tables of partitions of a log, concatenated, finish to the numbers of the
        whole log.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame, refused rows.

    See Also
    --------
    smooth_ece_summary, smooth_ece_from_statistics, polars_calib.bin_statistics

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.2504, 0.5, 0.75], "y": [0, 1, 1]})
    >>> stats = pc.smooth_ece_statistics(df, "p", "y")
    >>> stats.filter(pl.col("grid").is_null() | (pl.col("grid") == 1000)).with_columns(
    ...     pl.col("weight_above", "gap_above").round(6)
    ... )
    shape: (4, 8)
    ┌──────┬──────┬───────┬─────────┬────────┬─────────┬──────────────┬───────────┐
    │ grid ┆ cell ┆ count ┆ refused ┆ weight ┆ gap     ┆ weight_above ┆ gap_above │
    │ ---  ┆ ---  ┆ ---   ┆ ---     ┆ ---    ┆ ---     ┆ ---          ┆ ---       │
    │ i32  ┆ i32  ┆ i64   ┆ i64     ┆ f64    ┆ f64     ┆ f64          ┆ f64       │
    ╞══════╪══════╪═══════╪═════════╪════════╪═════════╪══════════════╪═══════════╡
    │ null ┆ null ┆ 3     ┆ 0       ┆ 3.0    ┆ -0.4996 ┆ 0.0          ┆ 0.0       │
    │ 1000 ┆ 250  ┆ 1     ┆ 0       ┆ 1.0    ┆ 0.2504  ┆ 0.4          ┆ 0.10016   │
    │ 1000 ┆ 500  ┆ 1     ┆ 0       ┆ 1.0    ┆ -0.5    ┆ 0.0          ┆ 0.0       │
    │ 1000 ┆ 750  ┆ 1     ┆ 0       ┆ 1.0    ┆ -0.25   ┆ 0.0          ┆ 0.0       │
    └──────┴──────┴───────┴─────────┴────────┴─────────┴──────────────┴───────────┘

    The row at 0.2504 sits 0.4 of the way from 0.250 to 0.251: relplot gives 0.6 of
    it to the point 0.250 and 0.4 to 0.251.
    """
    lf, keys, whole = _prepared(data, prob, label, by, weight, pos_label)
    plan = _statistics_plan(lf, prob, label, keys, weight, pos_label)
    plan = plan.sort(*keys, "grid", "cell", nulls_last=False)
    if whole:
        plan = plan.drop(_ALL)
    if isinstance(data, pl.DataFrame):
        table = plan.collect()
        _raise_for_refused(table, lf, prob, label, weight, pos_label)
        return table
    return plan


def _raise_for_refused(
    table: pl.DataFrame,
    lf: pl.LazyFrame,
    prob: str,
    label: str,
    weight: str | None,
    pos_label: Any,
) -> None:
    if table["refused"].sum():
        checks = binary_problem(prob, label, weight, pos_label).checks
        raise_for_problems(problem_counts(lf, checks).collect(), checks)


# --------------------------------------------------------------------------
# Step 2: relplot's smoothing and bandwidth search on the grids of one group
# --------------------------------------------------------------------------


def _kernel(points: int, sigma: float) -> np.ndarray:
    """relplot ``GaussianKernel.kernel_ev``: the Gaussian at ``linspace(0, 1) - 1/2``."""
    t = np.linspace(0, 1, points)
    kernel: np.ndarray = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma**2)) / (
        np.sqrt(2 * np.pi) * sigma
    )
    return kernel


def _reflected(values: np.ndarray, sigma: float) -> np.ndarray:
    """relplot ``ReflectedGaussianKernel.convolve``: the grid smoothed, mirrored at 0 and 1."""
    points = len(values)
    extended = np.concatenate([np.flip(values)[:-1], values, np.flip(values)[1:]])
    smoothed = np.convolve(extended, _kernel(points, sigma), "valid")
    return smoothed[points // 2 : points // 2 + points]


def _interpolate(t: np.ndarray, values: np.ndarray) -> np.ndarray:
    """relplot ``kernels.interpolate``: the piecewise-linear grid function read at `t`."""

    intervals = len(values) - 1
    lower = (t * intervals).astype(int).clip(0, intervals - 1)
    fraction = (t - lower * (1 / intervals)) / (1 / intervals)
    read: np.ndarray = values[lower] * (1 - fraction) + values[lower + 1] * fraction
    return read


def _smooth_error(grids: dict[int, tuple[np.ndarray, np.ndarray]], sigma: float) -> float:
    """relplot ``metrics.smooth_ece(f, y, sigma)`` from the group's grid sums."""
    weight, gap = grids[_grid_intervals(sigma)]
    t = np.linspace(0, 1, max(round(10 / sigma), _MESH))
    residual = _interpolate(t, _reflected(gap, sigma))
    density = _interpolate(t, _reflected(weight, sigma)) + _DENSITY_FLOOR
    return float(np.sum(np.abs(residual / density) * density) / np.sum(density))


def _search(grids: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """relplot ``smECE(eps=0.001)``: (smooth ECE, bandwidth), by ``search_param``."""
    errors: dict[float, float] = {}

    def error(sigma: float) -> float:
        if sigma not in errors:
            errors[sigma] = _smooth_error(grids, sigma)
        return errors[sigma]

    def wider_than_error(sigma: float) -> bool:
        return sigma < _BANDWIDTH_FLOOR or sigma < error(sigma)

    start = 1.0
    if not wider_than_error(start):
        end = 0.0
        for _ in range(_REFINE):
            middle = (start + end) / 2
            if wider_than_error(middle):
                end = middle
            else:
                start = middle
    return error(start), start


def _group_grids(frame: pl.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Dense ``(weight, gap)`` at the points of each grid, from one group's cells.

    Cell ``k`` gives point ``k`` its sum minus its ``_above`` share and point
    ``k + 1`` that share: relplot's ``(1 - frac) * y`` and ``frac * y``, summed.
    """
    grids = {}
    for intervals in GRIDS:
        part = frame.filter(pl.col("grid") == intervals)
        cell = part["cell"].to_numpy()
        spread = []
        for total, above in (("weight", "weight_above"), ("gap", "gap_above")):
            values = np.zeros(intervals + 1)
            share = part[above].to_numpy()
            values[cell] += part[total].to_numpy() - share
            values[cell + 1] += share
            spread.append(values)
        grids[intervals] = (spread[0], spread[1])
    return grids


def _finish(table: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Smooth ECE and bandwidth per group of a merged table: the numpy step.

    numpy, outside the row path: per group, about eleven convolutions of a grid of
    1001 to 5121 points (see the module); the table is small (at most
    ``sum(GRIDS) + len(GRIDS)`` rows per group).
    """
    totals = table.filter(pl.col("grid").is_null()).select(*keys, "count", "refused", "weight")
    errors: list[float | None] = []
    sigmas: list[float | None] = []
    parts = _partitions(table.filter(pl.col("grid").is_not_null()), keys)
    for row in totals.iter_rows(named=True):
        grids = parts.get(tuple(row[k] for k in keys))
        if row["refused"] or not row["weight"] or grids is None:
            errors.append(None)
            sigmas.append(None)
            continue
        value, sigma = _search(_group_grids(grids))
        errors.append(value)
        sigmas.append(sigma)
    return totals.select(*keys, "count", "refused").with_columns(
        pl.Series("smooth_ece", errors, dtype=pl.Float64),
        pl.Series("sigma", sigmas, dtype=pl.Float64),
    )


def _partitions(table: pl.DataFrame, keys: list[str]) -> dict[tuple[Any, ...], pl.DataFrame]:
    return {tuple(key): part for key, part in table.partition_by(keys, as_dict=True).items()}


def _merged(stats: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    return stats.group_by(*keys, "grid", "cell").agg(
        pl.col("count", "refused").sum(),
        pl.col("weight", "gap", "weight_above", "gap_above").sum(),
    )


def _finished(stats: pl.LazyFrame, keys: list[str], whole: bool) -> pl.LazyFrame:
    """The lazy plan of the finisher over a (possibly unmerged) table."""
    if whole:
        stats, keys = stats.with_columns(pl.lit(True).alias(_ALL)), [_ALL]
    columns: dict[str, pl.DataType] = {k: v for k, v in stats.collect_schema().items() if k in keys}
    columns.update(
        count=pl.Int64(), refused=pl.Int64(), smooth_ece=pl.Float64(), sigma=pl.Float64()
    )
    schema = pl.Schema(columns)
    merged = _merged(stats, keys)
    # numpy per group on the small merged table (see `_finish`); a plan until collected.
    result = merged.map_batches(lambda table: _finish(table, keys), schema=schema)
    result = result.sort(*keys)
    if whole:
        # One group even in empty data, as an expression in `select` gives one row.
        result = (
            pl.LazyFrame({_ALL: [True]})
            .join(result, on=_ALL, how="left")
            .with_columns(pl.col("count", "refused").fill_null(0))
        )
    return result.drop(_ALL) if whole else result


def smooth_ece_from_statistics(stats: FrameT, *, by: Keys = None) -> FrameT:
    """Smooth ECE per group from (concatenated) tables of :func:`smooth_ece_statistics`.

    Parameters
    ----------
    stats
        A table of :func:`smooth_ece_statistics`, or several concatenated (rows of
        the same group, grid and point are summed first).
    by
        The group keys of the result: key columns of `stats`, or expressions of them
        (``pl.col("segment").str.to_uppercase()``); keys left out are summed over,
        and so are the rows an expression gives the same value.

    Returns
    -------
    DataFrame or LazyFrame
        As :func:`smooth_ece_summary`.

    See Also
    --------
    smooth_ece_summary, smooth_ece_statistics

    Examples
    --------
    Two halves of a log, summarised apart and finished together:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.3, 0.5, 0.7, 0.9] * 4, "y": [0, 1, 0, 1, 1] * 4})
    >>> parts = [pc.smooth_ece_statistics(half, "p", "y") for half in (df[:10], df[10:])]
    >>> pc.smooth_ece_from_statistics(pl.concat(parts)).equals(pc.smooth_ece_summary(df, "p", "y"))
    True
    """
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`stats` must be a polars DataFrame or LazyFrame, got {type(stats).__name__}"
        raise TypeError(msg)
    keys: GroupKeys = GroupKeys(by, frozenset(_COLUMNS) | {"smooth_ece", "sigma"})
    names: list[str] = list(keys.names)
    missing = [c for c in (*keys.columns(), *_COLUMNS) if c not in stats.collect_schema()]
    if missing:
        msg = (
            "`stats` is not a smooth ECE statistics table (see `smooth_ece_statistics`): "
            f"missing column(s) {', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    return same_kind(stats, _finished(keys.added_to(stats.lazy()), names, not names))


def smooth_ece_summary(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    weight: str | None = None,
    pos_label: Any = None,
) -> FrameT:
    r"""Smooth ECE per group, with the bandwidth relplot's rule picks.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    by
        Group keys: column names or expressions; ``None`` for one group.
    weight
        Name of an optional column of non-negative frequency weights (a weight of 2
        counts the row twice).
    pos_label
        The label of the positive class when labels are not 0/1.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`, one row per group sorted by the keys: the keys,
        ``count`` and ``refused`` (Int64 rows used and refused), ``smooth_ece`` and
        ``sigma`` (Float64: the smooth ECE and its bandwidth, in [0, 1]); both null
        for a group with no used row (or zero total weight) or with refused rows.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column (from the schema); with a DataFrame, refused
        rows.
    TypeError
        `data` is not a frame (``pc.smooth_ece_summary("p", "y")`` in an aggregation: smooth
        ECE is a frame function).

    Notes
    -----
    For a bandwidth :math:`\sigma`, with the rows spread linearly onto a grid of
    :math:`G = \max(2000, \mathrm{round}(20/\sigma)) // 2` intervals, smoothed by the
    Gaussian kernel reflected at 0 and 1, and read at
    :math:`T = \max(\mathrm{round}(10/\sigma), 200)` points :math:`t`,
    :math:`\mathrm{smECE}_\sigma = \sum_t |\hat r_\sigma(t)| / \sum_t
    (\hat\delta_\sigma(t) + 10^{-4})`, where :math:`\hat r` smooths
    :math:`w(p - y)` and :math:`\hat\delta` smooths :math:`w`. The bandwidth is
    relplot's: from :math:`\sigma = 1`, ten bisection steps towards the fixed point
    :math:`\sigma = \mathrm{smECE}_\sigma` (a multiple of 1/1024, at least
    0.001). Equal to ``relplot.smECE(p, y, return_width=True)`` (relplot 1.0.3) to
    rounding. Not an aggregating expression and not in the bin statistics table: it
    has its own fine-grid table, which merges (see :mod:`polars_calib._smooth`).

    A LazyFrame gives a plan that reads nothing until collected (a group with
    refused rows then gets null values); a DataFrame runs at once and raises on
    refused rows.

    References
    ----------
    Błasiok & Nakkiran, "Smooth ECE: Principled reliability diagrams via kernel
    smoothing", ICLR 2024 (arXiv:2309.12236); relplot 1.0.3, ``relplot.metrics.smECE``.

    See Also
    --------
    smooth_ece_statistics, smooth_ece_from_statistics, ece, ks_calibration

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "model": ["a"] * 8 + ["b"] * 8,
    ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
    ...     "y": [0, 0, 1, 0, 1, 1, 0, 1] + [1, 1, 1, 0, 0, 1, 0, 0],
    ... })
    >>> pc.smooth_ece_summary(df, "p", "y", by="model").with_columns(
    ...     pl.col("smooth_ece").round(4)
    ... )
    shape: (2, 5)
    ┌───────┬───────┬─────────┬────────────┬──────────┐
    │ model ┆ count ┆ refused ┆ smooth_ece ┆ sigma    │
    │ ---   ┆ ---   ┆ ---     ┆ ---        ┆ ---      │
    │ str   ┆ i64   ┆ i64     ┆ f64        ┆ f64      │
    ╞═══════╪═══════╪═════════╪════════════╪══════════╡
    │ a     ┆ 8     ┆ 0       ┆ 0.1057     ┆ 0.107422 │
    │ b     ┆ 8     ┆ 0       ┆ 0.3702     ┆ 0.371094 │
    └───────┴───────┴─────────┴────────────┴──────────┘
    """
    lf, keys, whole = _prepared(data, prob, label, by, weight, pos_label)
    plan = _statistics_plan(lf, prob, label, keys, weight, pos_label)
    if isinstance(data, pl.DataFrame):
        table = plan.collect()
        _raise_for_refused(table, lf, prob, label, weight, pos_label)
        plan = table.lazy()
    if whole:
        plan = plan.drop(_ALL)
    return same_kind(data, _finished(plan, [] if whole else keys, whole))


smooth_ece = deprecated_alias(smooth_ece_summary, "pc.smooth_ece", "pc.smooth_ece_summary")
