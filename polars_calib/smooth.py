r"""Smooth ECE (Błasiok & Nakkiran, 2023) per group, as relplot's ``smECE`` computes it.

relplot smooths the residuals ``f - y`` and the row density with a reflected
Gaussian kernel of bandwidth :math:`\sigma`, each on a fine grid, and reports

.. math:: \mathrm{smECE}_\sigma = \frac{\sum_t |\hat r_\sigma(t)|}{\sum_t (\hat\delta_\sigma(t) + 10^{-4})},

with :math:`\hat r` and :math:`\hat\delta` the smoothed residual and density read at
``max(round(10 / sigma), 200)`` evenly spaced points ``t``; the bandwidth is the
fixed point :math:`\sigma^* \approx \mathrm{smECE}_{\sigma^*}`, found by a bisection
of ten steps from ``sigma = 1`` (``relplot.metrics.smECE``, ``eps = 0.001``).

How it is computed here, in two steps:

1. **Fine-grid sums per group** (:func:`smooth_ece_statistics`): every row spreads
   its weight ``w`` and weighted residual ``w (p - y)`` over the two neighbouring
   points of a grid ``k / G`` by linear interpolation
   (:func:`polars_calib.binning.linear_grid`), for each grid size ``G`` relplot may
   use (:data:`GRIDS`: 1000 intervals for ``sigma >= 0.01``, finer ones below). One
   lazy aggregation, in memory or streaming; the table **merges** by summing rows of
   the same group, grid and point (partitions, days, engines).
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

from typing import TYPE_CHECKING, Any

import polars as pl

from polars_calib._exprs import GroupKeys, Keys
from polars_calib._problem import binary_problem
from polars_calib.binning import linear_grid
from polars_calib.statistics import FrameT, grouped, same_kind
from polars_calib.validation import (
    CalibrationDataError,
    check_schema,
    problem_counts,
    raise_for_problems,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "GRIDS",
    "smooth_ece",
    "smooth_ece_from_statistics",
    "smooth_ece_statistics",
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
_COLUMNS = ("grid", "point", "count", "refused", "weight", "gap")


def _grid_intervals(sigma: float) -> int:
    """The grid relplot smooths on at `sigma`: ``max(2000, round(20 / sigma)) // 2`` intervals."""
    return max(2000, round(20 / sigma)) // 2


GRIDS: tuple[int, ...] = tuple(
    sorted({_grid_intervals(k / 2**_REFINE) for k in range(1, 2**_REFINE + 1)
            if k / 2**_REFINE >= _BANDWIDTH_FLOOR})
)  # fmt: skip
"""Intervals of every grid the bandwidth search can smooth on: 1000 (``sigma >= 0.01``)
and one per bandwidth ``k / 1024`` below 0.01."""


# --------------------------------------------------------------------------
# Step 1: the fine-grid statistics table
# --------------------------------------------------------------------------


def _statistics_plan(
    lf: pl.LazyFrame, prob: str, label: str, keys: list[str], weight: str | None,
    pos_label: Any,
) -> pl.LazyFrame:  # fmt: skip
    """The table (see :func:`smooth_ece_statistics`) of `lf` grouped by `keys` (non-empty)."""
    problem = binary_problem(prob, label, weight, pos_label)
    refused = problem.refused.fill_null(False)
    used = problem.present & ~refused
    p = pl.when(used).then(problem.prob)
    mass = p.is_not_null().cast(pl.Float64) if problem.weight is None else problem.weight
    mass = pl.when(used).then(mass)
    gap = problem.weighted(p - problem.label)  # relplot smooths f - y
    # One pass: each row becomes one entry per grid (its lower point, and what it
    # spreads to that point and the next) plus one entry for its group's totals (grid
    # null), exploded together and summed per (group, grid, point).
    entries: dict[str, list[pl.Expr]] = {
        "grid": [pl.lit(None, pl.Int32)], "point": [pl.lit(None, pl.Int32)],
        "count": [used.cast(pl.Int64)], "refused": [refused.cast(pl.Int64)],
        "weight_lower": [mass], "weight_upper": [pl.lit(0.0)],
        "gap_lower": [gap], "gap_upper": [pl.lit(0.0)],
    }  # fmt: skip
    for intervals in GRIDS:
        lower, fraction = linear_grid(p, intervals)
        for name, value in {
            "grid": pl.lit(intervals, pl.Int32), "point": lower.cast(pl.Int32),
            "count": pl.lit(0, pl.Int64), "refused": pl.lit(0, pl.Int64),
            "weight_lower": mass * (1.0 - fraction), "weight_upper": mass * fraction,
            "gap_lower": gap * (1.0 - fraction), "gap_upper": gap * fraction,
        }.items():  # fmt: skip
            entries[name].append(value)
    spread = lf.select(*keys, *(pl.concat_list(v).alias(k) for k, v in entries.items()))
    spread = spread.explode(list(entries)).filter(
        pl.col("grid").is_null() | pl.col("point").is_not_null()
    )
    sums = list(entries)[2:]
    by_lower = spread.group_by(*keys, "grid", "point").agg(pl.col(sums).sum()).cache()
    # Each point receives its own lower share and the upper share of the point below:
    # two branches over the cached sums. Both read every sum column (times 0 where
    # unused: the values are finite), so that they share one subplan and the data are
    # read once (a branch reading fewer columns is pruned to an aggregation of its own);
    # a totals row (grid null) gets its upper shares, zeros, on a null point.
    zero = pl.sum_horizontal(pl.col(sums)) * 0.0
    lower = by_lower.select(
        *keys, "grid", "point", pl.col("count", "refused"),
        weight=pl.col("weight_lower") + zero, gap=pl.col("gap_lower") + zero,
    )  # fmt: skip
    upper = by_lower.select(
        *keys, "grid", pl.col("point") + 1, (pl.col("count", "refused") * 0),
        weight=pl.col("weight_upper") + zero, gap=pl.col("gap_upper") + zero,
    )  # fmt: skip
    table = pl.concat([lower, upper]).group_by(*keys, "grid", "point").agg(
        pl.col("count", "refused", "weight", "gap").sum()
    )
    return table.select(*keys, *_COLUMNS)


def _prepared(
    data: pl.DataFrame | pl.LazyFrame, prob: str, label: str, by: Keys, weight: str | None,
    pos_label: Any,
) -> tuple[pl.LazyFrame, list[str], bool]:  # fmt: skip
    if isinstance(prob, pl.Expr) or not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = (
            "`data` must be a polars DataFrame or LazyFrame: smooth ECE is a frame "
            "function, `pc.smooth_ece(df, 'p', 'y', by=...)`, not an aggregating "
            f"expression (see polars_calib.smooth); got {type(data).__name__}"
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
    """Fine-grid sums per group: the mergeable input of :func:`smooth_ece`.

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
        The same kind as `data`, sorted by keys, grid and point: the keys, ``grid``
        (Int32: the grid's intervals ``G``, one of :data:`GRIDS`) and ``point``
        (Int32: the grid point ``k``, at ``k / G``), ``count`` and ``refused``
        (Int64), ``weight`` and ``gap`` (Float64: the weight and the weighted
        ``p - y`` spread onto the point). Per group, one row with null ``grid`` and
        ``point`` holds the rows used and refused and the totals; the other rows
        (count 0) hold the occupied grid points. Tables of partitions of a log,
        concatenated, finish to the numbers of the whole log.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; with a DataFrame, refused rows.

    See Also
    --------
    smooth_ece, smooth_ece_from_statistics, polars_calib.bin_statistics

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.25, 0.5, 0.75], "y": [0, 1, 1]})
    >>> stats = pc.smooth_ece_statistics(df, "p", "y")
    >>> stats.filter(pl.col("grid").is_null() | (pl.col("grid") == 1000)).head(4)
    shape: (4, 6)
    ┌──────┬───────┬───────┬─────────┬────────┬──────┐
    │ grid ┆ point ┆ count ┆ refused ┆ weight ┆ gap  │
    │ ---  ┆ ---   ┆ ---   ┆ ---     ┆ ---    ┆ ---  │
    │ i32  ┆ i32   ┆ i64   ┆ i64     ┆ f64    ┆ f64  │
    ╞══════╪═══════╪═══════╪═════════╪════════╪══════╡
    │ null ┆ null  ┆ 3     ┆ 0       ┆ 3.0    ┆ -0.5 │
    │ 1000 ┆ 250   ┆ 0     ┆ 0       ┆ 1.0    ┆ 0.25 │
    │ 1000 ┆ 251   ┆ 0     ┆ 0       ┆ 0.0    ┆ 0.0  │
    │ 1000 ┆ 500   ┆ 0     ┆ 0       ┆ 1.0    ┆ -0.5 │
    └──────┴───────┴───────┴─────────┴────────┴──────┘
    """
    lf, keys, whole = _prepared(data, prob, label, by, weight, pos_label)
    plan = _statistics_plan(lf, prob, label, keys, weight, pos_label)
    plan = plan.sort(*keys, "grid", "point", nulls_last=False)
    if whole:
        plan = plan.drop(_ALL)
    if isinstance(data, pl.DataFrame):
        table = plan.collect()
        _raise_for_refused(table, lf, prob, label, weight, pos_label)
        return table
    return plan


def _raise_for_refused(
    table: pl.DataFrame, lf: pl.LazyFrame, prob: str, label: str, weight: str | None,
    pos_label: Any,
) -> None:  # fmt: skip
    if table["refused"].sum():
        checks = binary_problem(prob, label, weight, pos_label).checks
        raise_for_problems(problem_counts(lf, checks).collect(), checks)


# --------------------------------------------------------------------------
# Step 2: relplot's smoothing and bandwidth search on the grids of one group
# --------------------------------------------------------------------------


def _require_numpy() -> None:
    """numpy runs the finisher: checked when the query is built, not when it runs."""
    try:
        import numpy  # noqa: F401
    except ImportError as error:  # pragma: no cover - numpy is in the test extra
        msg = "smooth ECE needs numpy for its per-group finisher: pip install 'polars_calib[smooth]'"
        raise ImportError(msg) from error


def _kernel(points: int, sigma: float) -> np.ndarray:
    """relplot ``GaussianKernel.kernel_ev``: the Gaussian at ``linspace(0, 1) - 1/2``."""
    import numpy as np

    t = np.linspace(0, 1, points)
    kernel: np.ndarray = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma**2)) / (
        np.sqrt(2 * np.pi) * sigma
    )
    return kernel


def _reflected(values: np.ndarray, sigma: float) -> np.ndarray:
    """relplot ``ReflectedGaussianKernel.convolve``: the grid smoothed, mirrored at 0 and 1."""
    import numpy as np

    points = len(values)
    extended = np.concatenate([np.flip(values)[:-1], values, np.flip(values)[1:]])
    smoothed = np.convolve(extended, _kernel(points, sigma), "valid")
    return smoothed[points // 2 : points // 2 + points]


def _interpolate(t: np.ndarray, values: np.ndarray) -> np.ndarray:
    """relplot ``kernels.interpolate``: the piecewise-linear grid function read at `t`."""
    import numpy as np

    intervals = len(values) - 1
    lower = (t * intervals).astype(int).clip(0, intervals - 1)
    fraction = (t - lower * (1 / intervals)) / (1 / intervals)
    read: np.ndarray = values[lower] * (1 - fraction) + values[lower + 1] * fraction
    return read


def _smooth_error(grids: dict[int, tuple[np.ndarray, np.ndarray]], sigma: float) -> float:
    """relplot ``metrics.smooth_ece(f, y, sigma)`` from the group's grid sums."""
    import numpy as np

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
    """Dense ``(weight, gap)`` arrays of each grid of one group's rows of the table."""
    import numpy as np

    grids = {}
    for intervals in GRIDS:
        part = frame.filter(pl.col("grid") == intervals)
        weight, gap = np.zeros(intervals + 1), np.zeros(intervals + 1)
        index = part["point"].to_numpy()
        weight[index], gap[index] = part["weight"].to_numpy(), part["gap"].to_numpy()
        grids[intervals] = (weight, gap)
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
    return stats.group_by(*keys, "grid", "point").agg(
        pl.col("count", "refused").sum(), pl.col("weight", "gap").sum()
    )


def _finished(stats: pl.LazyFrame, keys: list[str], whole: bool) -> pl.LazyFrame:
    """The lazy plan of the finisher over a (possibly unmerged) table."""
    _require_numpy()
    if whole:
        stats, keys = stats.with_columns(pl.lit(True).alias(_ALL)), [_ALL]
    columns: dict[str, pl.DataType] = {
        k: v for k, v in stats.collect_schema().items() if k in keys
    }
    columns.update(count=pl.Int64(), refused=pl.Int64(), smooth_ece=pl.Float64(),
                   sigma=pl.Float64())  # fmt: skip
    schema = pl.Schema(columns)
    merged = _merged(stats, keys)
    # numpy per group on the small merged table (see `_finish`); a plan until collected.
    result = merged.map_batches(lambda table: _finish(table, keys), schema=schema)
    result = result.sort(*keys)
    if whole:
        # One group even in empty data, as an expression in `select` gives one row.
        result = pl.LazyFrame({_ALL: [True]}).join(result, on=_ALL, how="left").with_columns(
            pl.col("count", "refused").fill_null(0)
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
        The group key columns of `stats` to keep; others are summed over.

    Returns
    -------
    DataFrame or LazyFrame
        As :func:`smooth_ece`.

    See Also
    --------
    smooth_ece, smooth_ece_statistics

    Examples
    --------
    Two halves of a log, summarised apart and finished together:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.3, 0.5, 0.7, 0.9] * 4, "y": [0, 1, 0, 1, 1] * 4})
    >>> parts = [pc.smooth_ece_statistics(half, "p", "y") for half in (df[:10], df[10:])]
    >>> pc.smooth_ece_from_statistics(pl.concat(parts)).equals(pc.smooth_ece(df, "p", "y"))
    True
    """
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`stats` must be a polars DataFrame or LazyFrame, got {type(stats).__name__}"
        raise TypeError(msg)
    names: list[str] = list(GroupKeys(by).names)
    missing = [c for c in (*names, *_COLUMNS) if c not in stats.collect_schema()]
    if missing:
        msg = (
            "`stats` is not a smooth ECE statistics table (see `smooth_ece_statistics`): "
            f"missing column(s) {', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    return same_kind(stats, _finished(stats.lazy(), names, not names))


def smooth_ece(
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
        `data` is not a frame (``pc.smooth_ece("p", "y")`` in an aggregation: smooth
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
    has its own fine-grid table, which merges (see :mod:`polars_calib.smooth`).

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
    >>> pc.smooth_ece(df, "p", "y", by="model").with_columns(pl.col("smooth_ece").round(4))
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
