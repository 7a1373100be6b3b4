"""Median-variance binning: recursive median splits of a group's predictions.

CalibrationErrors.jl's ``MedianVarianceBinning(minsize, maxbins)``, step by step:

1. a group of fewer than ``2 * min_size`` rows, or ``max_bins == 1``, is one bin;
2. otherwise the bins waiting to be split form a priority queue keyed by their
   largest per-component variance (the unbiased sample variance); the bin with the
   largest is taken and split on the component of largest variance (the first on
   ties) at that component's median: the values **strictly below** the median go
   left. The median is the upper middle order statistic ``x_(n//2)`` (0-based),
   so a tied median sends every tied value right, exactly as Julia's
   ``unsafe_median_split!`` (which never averages the two middle values);
3. if either half has fewer than ``min_size`` rows the bin is final as it is (no
   other component is tried); else each half of fewer than ``2 * min_size`` rows is
   final and each other half joins the queue, and the bin count grows by one;
4. this repeats while fewer than ``max_bins`` bins exist and the queue is not
   empty; the bins left in the queue are final.

Ties in the queue go to the bin queued first (Julia's heap leaves them unspecified).
A group of fewer than ``min_size`` rows is one bin (Julia raises). Bins are numbered
0, 1, ... in the lexicographic order of their mean prediction vectors (for binary
probabilities: from the lowest probabilities up).

Why numpy and not a Polars aggregation: the split order is a priority queue over the
bins of a group, each split depending on the previous ones, with a data-dependent
depth; it is not an aggregation of sums. The splitter runs once per group on that
group's used rows, outside every metric path (:func:`median_variance_bins` applies it
with ``group_by().map_groups``, which keeps a LazyFrame a plan); the metrics then
read the bin column as any other key (``pc.ece(..., bins="bin")``,
``pc.canonical_ece(..., bins="bin")``).
"""

from __future__ import annotations

import heapq

import numpy as np
import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.binning import binning as make_binning
from polars_calib._core.options import Closed, Compat, Strategy, check_min_size
from polars_calib._table.plan import Prepared

_ROWS = "__polars_calib_row__"

_POINTS = "__polars_calib_points__"

_USED = "__polars_calib_used__"

_ALL = "__polars_calib_all__"


def _max_variance(points: np.ndarray) -> tuple[float, int]:
    """The largest unbiased per-component variance and its component (first on ties)."""
    variances = points.var(axis=0, ddof=1)
    component = int(np.argmax(variances))
    return float(variances[component]), component


def split_median_variance(
    points: np.ndarray, min_size: int = 10, max_bins: int | None = None
) -> np.ndarray:
    """The median-variance bin (Int32, 0-based) of each row of `points` (n × K).

    See the module for the rule. ``max_bins=None`` means no limit.
    """
    check_min_size("min_size", min_size)
    if max_bins is not None:
        check_min_size("max_bins", max_bins)
    points = np.asarray(points, dtype=np.float64)
    if points.ndim == 1:
        points = points[:, None]
    n = points.shape[0]
    limit = np.inf if max_bins is None else max_bins
    final: list[np.ndarray] = []
    if n < 2 * min_size or limit == 1:
        final.append(np.arange(n))
    else:
        order = 0
        queue: list[tuple[float, int, np.ndarray, int]] = []
        variance, component = _max_variance(points)
        heapq.heappush(queue, (-variance, order, np.arange(n), component))
        n_bins = 1
        while n_bins < limit and queue:
            _, _, rows, component = heapq.heappop(queue)
            values = points[rows, component]
            median = np.partition(values, len(values) // 2)[len(values) // 2]
            below = values < median
            halves = (rows[below], rows[~below])
            if min(len(halves[0]), len(halves[1])) < min_size:
                final.append(rows)
                continue
            for half in halves:
                if len(half) < 2 * min_size:
                    final.append(half)
                else:
                    order += 1
                    variance, component = _max_variance(points[half])
                    heapq.heappush(queue, (-variance, order, half, component))
            n_bins += 1
        final.extend(rows for _, _, rows, _ in queue)
    bins = np.empty(n, dtype=np.int32)
    if n == 0:
        return bins
    for number, rows in enumerate(final):
        bins[rows] = number
    # Renumber in the lexicographic order of the bins' mean vectors.
    sizes = np.bincount(bins, minlength=len(final))
    means = np.column_stack(
        [
            np.bincount(bins, weights=points[:, k], minlength=len(final)) / sizes
            for k in range(points.shape[1])
        ]
    )
    ranking = np.lexsort(means.T[::-1])
    renumbered = np.empty(len(final), dtype=np.int32)
    renumbered[ranking] = np.arange(len(final), dtype=np.int32)
    return renumbered[bins]


def _group_bins(
    frame: pl.DataFrame, name: str, min_size: int, max_bins: int | None
) -> pl.DataFrame:
    used = frame[_USED].fill_null(False).to_numpy()
    points_column = frame[_POINTS].filter(pl.Series(used))
    bins = np.full(frame.height, -1, dtype=np.int32)
    if not len(points_column):
        return frame.select(_ROWS, pl.lit(None, pl.Int32).alias(name))
    if points_column.dtype == pl.Float64:
        points = points_column.to_numpy().reshape(-1, 1)
    else:
        lengths = points_column.list.len()
        if lengths.n_unique() > 1:
            # Vectors of different lengths: the group is invalid, its metrics null.
            return frame.select(_ROWS, pl.lit(None, pl.Int32).alias(name))
        width = int(lengths[0])
        points = points_column.explode().to_numpy().astype(np.float64).reshape(-1, width)
    bins[used] = split_median_variance(points, min_size, max_bins)
    column = pl.Series(name, bins, dtype=pl.Int32)
    return frame.select(_ROWS).with_columns(pl.when(column >= 0).then(column).alias(name))


def binned_rows(
    prepared: Prepared, prob: str, min_size: int, max_bins: int | None, name: str
) -> pl.LazyFrame:
    """``prepared.lf`` with the median-variance bin of each used row in column `name`.

    Binary problems are split on ``p``; probability vectors on their components.
    """
    problem = prepared.problem
    used = problem.present & ~problem.refused.fill_null(False)
    if prepared.reduction is None:
        points = problem.prob
    else:
        # The vectors themselves, not the reduction's confidence.
        points = pl.col(prob).cast(pl.List(pl.Float64), strict=False)
    lf = prepared.lf.with_row_index(_ROWS)
    keys = prepared.keys
    work = lf.select(_ROWS, *keys, points.alias(_POINTS), used.alias(_USED))
    schema = {_ROWS: pl.UInt32, name: pl.Int32}

    def binned(group: pl.DataFrame) -> pl.DataFrame:
        return _group_bins(group, name, min_size, max_bins)

    if not keys:
        work, keys = work.with_columns(pl.lit(True).alias(_ALL)), [_ALL]
    bins = work.group_by(keys).map_groups(binned, schema=schema)
    return lf.join(bins, on=_ROWS, how="left").sort(_ROWS).drop(_ROWS)


_BIN = "__polars_calib_mv_bin__"


def table_binning(
    n_bins: int,
    strategy: Strategy,
    closed: Closed,
    compat: Compat | None,
    min_size: int,
    max_bins: int | None,
) -> Binning | None:
    """The checked binning of a frame function; None for median-variance bins."""
    if strategy != "median_variance":
        return make_binning(n_bins, strategy, closed, compat)
    check_min_size("min_size", min_size)
    if max_bins is not None:
        check_min_size("max_bins", max_bins)
    if compat is not None:
        msg = f"`compat` reproduces the peers' uniform bins; got strategy={strategy!r}"
        raise ValueError(msg)
    return None


def table_input(
    prepared: Prepared, prob: str, binning: Binning | None, min_size: int, max_bins: int | None
) -> tuple[pl.LazyFrame, Binning, str | None]:
    """The rows, binning and bin column that :func:`statistics_query` takes."""
    if binning is not None:
        return prepared.lf, binning, None
    if prepared.reduction is not None:
        msg = (
            "median-variance bins in summaries and reliability tables are for binary "
            "data; bin probability vectors with `median_variance_bins` and use "
            "`canonical_ece(..., bins=...)`"
        )
        raise ValueError(msg)
    return binned_rows(prepared, prob, min_size, max_bins, _BIN), Binning(1), _BIN
