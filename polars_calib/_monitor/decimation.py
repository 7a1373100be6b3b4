"""The rows drawn of running charts, kept batch after batch: memory set by the points drawn.

A chart of a long log is not drawn row by row. Per (group, chart) of ``N`` rows, with
``s`` charts a group and ``max_points`` the bound asked for:

* a group of at most ``max_points`` rows over its charts (``N s <= max_points``) is
  drawn whole;
* otherwise its rows, numbered ``n = 0 .. N - 1`` in time order, are cut into
  ``b = max(1, max_points // (4 s))`` buckets of consecutive rows (row ``n`` in bucket
  ``n b // N``), and each bucket keeps its first and last rows and those of its
  lowest and highest drawn value (the first such row on ties; the M4 rule: a line
  through them covers the pixels of a line through every row when a bucket is about a
  pixel wide);
* every alarm row is kept, and each run's row of largest absolute drawn value (the
  first on ties; a run is the rows after an alarm up to and including the next one).

The drawn value is the chart's statistic, except an infinite one (a contradicted certain
prediction), drawn at its chart's threshold (not drawn when that is not finite); a value
not drawn (NaN) is no bucket's or run's extreme. :class:`Drawn` holds, per (group,
chart), the kept rows of the buckets seen so far (four slots a bucket) and of the open
run, and folds each batch's rows into them with a few numpy passes: memory grows with
the groups and ``max_points``, never with the rows (``N`` comes from a count before).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

__all__ = ["Drawn"]

_FIRST, _LAST, _LOW, _HIGH = range(4)
_BIG = np.iinfo(np.int64).max


@dataclass
class _Kept:
    """Rows kept of one chart: per slot (or per group, for the open run) its row's
    number ``n`` (-1: none yet), physical time ``t``, ``statistic`` and drawn ``value``."""

    n: np.ndarray
    t: np.ndarray
    statistic: np.ndarray
    value: np.ndarray

    @classmethod
    def empty(cls, size: int) -> _Kept:
        return cls(
            np.full(size, -1, np.int64), np.zeros(size, np.int64), np.zeros(size), np.zeros(size)
        )

    def put(
        self, at: np.ndarray, n: np.ndarray, t: np.ndarray, s: np.ndarray, v: np.ndarray
    ) -> None:
        self.n[at], self.t[at], self.statistic[at], self.value[at] = n, t, s, v


@dataclass
class _Chart:
    """One chart's kept rows: four slots a bucket, the open runs, the closed runs' and
    the alarms' rows (``(group, n, t, statistic)`` arrays, one per batch)."""

    threshold: np.ndarray | None
    slots: list[_Kept]
    runs: _Kept
    done: list[tuple[np.ndarray, ...]] = field(default_factory=list)


class Drawn:
    """The rows drawn of each (group, chart), fed batch after batch (see the module).

    `rows` holds each group's rows (the groups numbered 0, 1, ...); `thresholds`, per
    chart, each group's threshold (None for a chart without: the O - E chart).
    """

    def __init__(
        self, rows: np.ndarray, thresholds: list[np.ndarray | None], max_points: int
    ) -> None:
        self.rows = rows.astype(np.int64)
        whole = self.rows * len(thresholds) <= max_points
        self.buckets = np.where(whole, self.rows, max(1, max_points // (4 * len(thresholds))))
        self.offset = np.concatenate([[0], np.cumsum(self.buckets)[:-1]]).astype(np.int64)
        size = int(self.buckets.sum())
        self.charts = [
            _Chart(h, [_Kept.empty(size) for _ in range(4)], _Kept.empty(len(rows)))
            for h in thresholds
        ]

    def fold(
        self,
        j: int,
        group: np.ndarray,
        n: np.ndarray,
        t: np.ndarray,
        statistic: np.ndarray,
        alarm: np.ndarray,
    ) -> None:
        """Fold a batch's rows of chart `j` into its kept rows: per row its `group`, its
        number `n` in the group, time `t`, `statistic` and `alarm`, sorted by group and
        ``n`` (each group's rows of the batch one slice, following its rows before)."""
        if not len(n):
            return
        chart = self.charts[j]
        value = statistic
        if chart.threshold is not None:
            h = chart.threshold[group]
            h = np.where(np.isfinite(h), h, np.nan)
            value = np.where(np.isinf(statistic), h, statistic)
        row = (n, t, statistic, value)
        slot = self.offset[group] + n * self.buckets[group] // self.rows[group]
        starts = np.flatnonzero(np.diff(slot, prepend=-1))
        self._buckets(chart, slot[starts], starts, row)
        self._runs(chart, group, starts_of(group), alarm, row)
        alarms = np.flatnonzero(alarm)
        chart.done.append((group[alarms], n[alarms], t[alarms], statistic[alarms]))

    @staticmethod
    def _buckets(
        chart: _Chart, slot: np.ndarray, starts: np.ndarray, row: tuple[np.ndarray, ...]
    ) -> None:
        """Fold each bucket's part of the batch (rows ``starts[i]:``) into its slots."""
        ends = np.append(starts[1:], len(row[0]))
        first, last, low, high = chart.slots
        new = first.n[slot] < 0
        first.put(slot[new], *(column[starts[new]] for column in row))
        last.put(slot, *(column[ends - 1] for column in row))
        for kept, how, better in ((low, np.minimum, np.less), (high, np.maximum, np.greater)):
            at, extreme = _extremes(row[3], starts, how)
            found = at >= 0
            s, at, extreme = slot[found], at[found], extreme[found]
            take = (kept.n[s] < 0) | better(extreme, kept.value[s])  # ties: the earlier row
            kept.put(s[take], *(column[at[take]] for column in row))

    @staticmethod
    def _runs(
        chart: _Chart,
        group: np.ndarray,
        group_starts: np.ndarray,
        alarm: np.ndarray,
        row: tuple[np.ndarray, ...],
    ) -> None:
        """Fold the runs' parts of the batch into the open runs; keep the closed runs'
        largest rows."""
        size = len(group)
        cut = np.zeros(size, bool)
        cut[group_starts] = True
        cut[1:] |= alarm[:-1]
        starts = np.flatnonzero(cut)
        ends = np.append(starts[1:], size)
        at, extreme = _extremes(np.abs(row[3]), starts, np.maximum)
        best = [np.where(at >= 0, column[np.maximum(at, 0)], 0) for column in row]
        best[0] = np.where(at >= 0, best[0], -1)
        best[3] = np.abs(best[3])
        # A group's first part continues its open run (which wins ties: its rows came first).
        first = np.isin(starts, group_starts)
        g = group[starts]
        carried = first & (chart.runs.n[g] >= 0) & ((at < 0) | ~(extreme > chart.runs.value[g]))
        for k, column in enumerate((chart.runs.n, chart.runs.t, chart.runs.statistic)):
            best[k] = np.where(carried, column[g], best[k])
        best[3] = np.where(carried, chart.runs.value[g], best[3])
        closed = alarm[ends - 1]
        out = closed & (best[0] >= 0)
        chart.done.append((g[out], best[0][out], best[1][out], best[2][out]))
        open_ = ~closed
        chart.runs.n[g[closed]] = -1
        chart.runs.put(g[open_], *(column[open_] for column in best))

    def frame(self, j: int) -> pl.DataFrame:
        """The kept rows of chart `j`: ``group``, ``n``, ``t`` (physical) and
        ``statistic``, one per row, sorted by group and ``n``."""
        chart = self.charts[j]
        groups = np.repeat(np.arange(len(self.rows), dtype=np.int64), self.buckets)
        parts: list[tuple[np.ndarray, ...]] = [
            (groups, kept.n, kept.t, kept.statistic) for kept in chart.slots
        ]
        runs = chart.runs
        parts.append((np.arange(len(self.rows), dtype=np.int64), runs.n, runs.t, runs.statistic))
        parts += chart.done
        columns = [np.concatenate([part[k] for part in parts]) for k in range(4)]
        names = ["group", "n", "t", "statistic"]
        kept = pl.DataFrame(dict(zip(names, columns)), schema=dict(zip(names, _DTYPES)))
        return kept.filter(pl.col("n") >= 0).unique(["group", "n"]).sort("group", "n")


_DTYPES = (pl.Int64, pl.Int64, pl.Int64, pl.Float64)


def starts_of(group: np.ndarray) -> np.ndarray:
    """Where each group's slice starts in `group` (sorted)."""
    return np.flatnonzero(np.diff(group, prepend=group[0] - 1))


def _extremes(
    value: np.ndarray, starts: np.ndarray, how: np.ufunc
) -> tuple[np.ndarray, np.ndarray]:
    """Per part (rows ``starts[i]:starts[i + 1]``): the first row of its extreme
    (``np.minimum`` or ``np.maximum``) non-NaN value (-1 when none) and that value."""
    valid = ~np.isnan(value)
    fill = np.inf if how is np.minimum else -np.inf
    extreme = how.reduceat(np.where(valid, value, fill), starts)
    lengths = np.diff(np.append(starts, len(value)))
    hit = valid & (value == np.repeat(extreme, lengths))
    at = np.minimum.reduceat(np.where(hit, np.arange(len(value)), _BIG), starts)
    return np.where(at == _BIG, -1, at), extreme
