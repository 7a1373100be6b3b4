"""The restarted CUSUM charts over rows fed in batches, with a small state per group.

The rows of a group must come in its time order (ties in the frame's order), batch after
batch; the groups may interleave (a log in time order) or follow one another. Each chart
keeps, per group, what continuing it exactly needs (``CHART_STATE`` of
:mod:`polars_calib._monitor.alarms`): ``total`` (``C``, the running sum of its terms),
``base`` (``C`` at the last restart), ``floor`` (``min(0, min (C - base))`` since the
restart) and the run start carried, plus the rows seen. Memory holds a batch and these
arrays: it grows with the groups, not the rows.

Within a batch a group's rows are one segment: its chart is a ``cumsum`` (the same
additions, in the same order, as one pass over the whole log: the same numbers, to the
bit) and a ``minimum.accumulate``. The first alarm of each segment is found over the
whole segment; after it the chart restarts from the alarm's total and the search goes
on over windows of :data:`WINDOW` rows, doubling while no alarm is found. So the loop
runs over the groups of a batch and over the alarms, never over the rows: a quiet group
costs one vectorised pass per batch, and an alarm about ``log2(gap / WINDOW) + 1``
numpy passes over the rows to it (a chart alarming every few rows costs some
microseconds per alarm).

For the drift charts, :class:`Charts` also gives each row's statistic (restarted after
each alarm, ``inf`` on a contradicted certain prediction) to a
:class:`~polars_calib._monitor.decimation.Drawn`, which keeps the rows drawn; and
:class:`Sums` runs the O - E chart (each group's running sum) the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from polars_calib._monitor.decimation import Drawn

__all__ = [
    "BATCH_ROWS",
    "GROUP",
    "TIME",
    "WINDOW",
    "Charts",
    "Sums",
    "Unordered",
    "from_physical",
    "physical",
    "split",
]

BATCH_ROWS = 1 << 16
"""Rows per batch fed to the charts."""
WINDOW = 64
"""The first window searched after a restart (doubled while no alarm is found)."""
GROUP, TIME = "__calib_group__", "__calib_time__"


class Unordered(Exception):  # noqa: N818  (a signal, not an error shown to users)
    """A group's time went back between two of its rows: the rows need sorting first."""


@dataclass
class _Chart:
    """One chart's state, per group (arrays indexed by the group's number)."""

    ratio: float
    threshold: np.ndarray
    total: np.ndarray
    base: np.ndarray
    floor: np.ndarray
    restart: np.ndarray
    started: np.ndarray
    found: list[tuple[int, int, float, float, int, bool, int]] = field(default_factory=list)


def _segment(
    chart: _Chart,
    g: int,
    c: np.ndarray,
    flag: np.ndarray,
    t: np.ndarray,
    n0: int,
    out: tuple[np.ndarray, np.ndarray],
) -> None:
    """Run group `g`'s chart over its rows of a batch (their totals `c`), from its state;
    write each row's statistic and alarm into `out`."""
    h = chart.threshold[g]
    base, floor = chart.base[g], chart.floor[g]
    restart, started = chart.restart[g], chart.started[g]
    i, width, n = 0, len(c), len(c)
    while i < n:
        j = min(n, i + width)
        run = c[i:j] - base
        low = np.minimum(np.minimum.accumulate(run), floor)
        statistic = run - low
        hit = (statistic > h) | flag[i:j]
        k = int(np.argmax(hit))
        upto = k + 1 if hit[k] else j - i
        zeros = np.flatnonzero((statistic[:upto] == 0.0) & ~flag[i : i + upto])
        if zeros.size:
            restart, started = t[i + zeros[-1]], True
        out[0][i : i + upto] = statistic[:upto]
        if not hit[k]:
            floor, i, width = low[-1], j, 2 * width
            continue
        value = math.inf if flag[i + k] else float(statistic[k])
        out[0][i + k], out[1][i + k] = value, True
        chart.found.append((g, int(t[i + k]), value, h, int(restart), bool(started), n0 + i + k))
        base, floor, restart, started = c[i + k], 0.0, t[i + k], True
        i, width = i + k + 1, WINDOW
    chart.base[g], chart.floor[g] = base, floor
    chart.restart[g], chart.started[g] = restart, started
    if n:
        chart.total[g] = c[-1]


@dataclass
class _Segments:
    """A batch's rows sorted by group: each group's slice ``starts[i]:ends[i]``."""

    group: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    t: np.ndarray

    def scan(self, values: np.ndarray, how: np.ufunc) -> np.ndarray:
        """The running sum (``np.add``) or minimum (``np.minimum``) of `values` within
        each slice: one ``accumulate`` a slice, the additions of one pass in its order."""
        out = np.empty_like(values)
        for start, end in zip(self.starts.tolist(), self.ends.tolist()):
            how.accumulate(values[start:end], out=out[start:end])
        return out

    def running_sums(self, term: np.ndarray, total: np.ndarray) -> np.ndarray:
        """Each group's running sum of `term`, continuing from its `total` (per group)."""
        c = term.astype(np.float64)  # a copy
        c[self.starts] += total[self.group]  # C_k + W_(k+1): one pass's additions
        return self.scan(c, np.add)

    def numbers(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's group and its number in the group (after the group's `rows` before)."""
        length = self.ends - self.starts
        group = np.repeat(self.group, length)
        n = np.arange(len(group)) - np.repeat(self.starts, length) + rows[group]
        return group, n


def split(
    g: np.ndarray, t: np.ndarray, groups: int, last: np.ndarray
) -> tuple[np.ndarray, _Segments]:
    """A batch's order by group (stable) and its groups' slices; raise
    :class:`Unordered` when a group's time goes back (within the batch, or below
    `last`, its last time before)."""
    # Each group's rows one slice, in their order (a radix sort for 16-bit numbers).
    small = groups <= np.iinfo(np.uint16).max
    order = np.argsort(g.astype(np.uint16) if small else g, kind="stable")
    sorted_g, t = g[order], t[order]
    cuts = np.flatnonzero(np.diff(sorted_g)) + 1
    starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(g)]])
    segment = _Segments(sorted_g[starts], starts, ends, t)
    went_back = (np.diff(t) < 0) & (np.diff(sorted_g) == 0)
    if np.any(t[starts] < last[segment.group]) or np.any(went_back):
        raise Unordered
    return order, segment


def _run_segments(
    chart: _Chart,
    seg: _Segments,
    term: np.ndarray,
    flag: np.ndarray,
    rows: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Run one chart over every group's slice of a batch: the groups without an alarm
    in it at once (their running sums and minima as whole-batch scans), the others
    through :func:`_segment`. Give each row's statistic (the chart after it, ``inf`` on
    a contradicted certain prediction) and whether it alarms."""
    length = seg.ends - seg.starts
    c = seg.running_sums(term, chart.total)
    run = c - np.repeat(chart.base[seg.group], length)
    low = np.minimum(seg.scan(run, np.minimum), np.repeat(chart.floor[seg.group], length))
    statistic = run - low
    hit = (statistic > np.repeat(chart.threshold[seg.group], length)) | flag
    alarmed = np.logical_or.reduceat(hit, seg.starts)
    quiet, ends = seg.group[~alarmed], seg.ends[~alarmed] - 1
    chart.floor[quiet], chart.total[quiet] = low[ends], c[ends]
    zero = np.where((statistic == 0.0) & ~flag, np.arange(len(c)), -1)
    last_zero = np.maximum.reduceat(zero, seg.starts)[~alarmed]
    restarted = last_zero >= 0
    chart.restart[quiet[restarted]] = seg.t[last_zero[restarted]]
    chart.started[quiet[restarted]] = True
    marks = np.zeros(len(c), bool)
    for i in np.flatnonzero(alarmed).tolist():
        start, end, group = int(seg.starts[i]), int(seg.ends[i]), int(seg.group[i])
        times, out = seg.t[start:end], (statistic[start:end], marks[start:end])
        _segment(chart, group, c[start:end], flag[start:end], times, int(rows[group]), out)
    return statistic, marks


class Charts:
    """The restarted charts of every group, one per odds ratio, fed batch after batch.

    `thresholds` holds a row per group (its number, 0 to ``groups - 1``) and one column
    per odds ratio. `state` optionally continues the charts: per chart, the arrays
    ``total``, ``base``, ``floor``, ``restart`` (the run start carried, physical time)
    and ``started`` (whether there is one).
    """

    def __init__(
        self,
        ratios: list[float],
        thresholds: np.ndarray,
        state: list[dict[str, np.ndarray]] | None = None,
        drawn: Drawn | None = None,
    ) -> None:
        groups = thresholds.shape[0]
        self.charts = []
        for j, ratio in enumerate(ratios):
            given: dict[str, np.ndarray] = state[j] if state is not None else {}
            zeros = np.zeros(groups)
            self.charts.append(
                _Chart(
                    ratio,
                    thresholds[:, j].astype(np.float64),
                    given.get("total", zeros).astype(np.float64).copy(),
                    given.get("base", zeros).astype(np.float64).copy(),
                    given.get("floor", zeros).astype(np.float64).copy(),
                    np.array(
                        given["restart"] if "restart" in given else np.zeros(groups), np.int64
                    ),
                    np.array(given["started"] if "started" in given else np.zeros(groups), bool),
                )
            )
        self.drawn = drawn
        """The rows drawn of each chart (:class:`~polars_calib._monitor.decimation.Drawn`),
        or None."""
        self.rows = np.zeros(groups, np.int64)
        self.last = np.full(groups, np.iinfo(np.int64).min, np.int64)
        self.at_last = np.zeros(groups, np.int64)
        """Per group: its last time fed, and how many of its rows were at that time."""

    def feed(self, g: np.ndarray, t: np.ndarray, columns: list[np.ndarray]) -> None:
        """Run the charts over a batch: per row its group `g` and physical time `t`, and
        per chart two `columns`, its terms and its flags. Raise :class:`Unordered` when
        a group's time goes back."""
        if not len(g):
            return
        order, segment = split(g, t, len(self.rows), self.last)
        t, starts, ends = segment.t, segment.starts, segment.ends
        last = t[ends - 1]
        at_last = np.add.reduceat((t == np.repeat(last, ends - starts)).astype(np.int64), starts)
        carried = np.where(last == self.last[segment.group], self.at_last[segment.group], 0)
        self.at_last[segment.group] = at_last + carried
        self.last[segment.group] = last
        group, n = segment.numbers(self.rows)
        for j, chart in enumerate(self.charts):
            term, flag = columns[2 * j][order], columns[2 * j + 1][order]
            statistic, alarm = _run_segments(chart, segment, term, flag, self.rows)
            if self.drawn is not None:
                self.drawn.fold(j, group, n, t, statistic, alarm)
        self.rows[segment.group] += ends - starts

    def alarms(self, dtype: pl.DataType) -> pl.DataFrame:
        """Every alarm: ``GROUP``, ``TIME``, ``odds_ratio``, ``statistic``, ``threshold``,
        ``run_start`` (times of `dtype`) and ``n`` (the row's number in its group), in
        the order found per chart."""
        frames = []
        for chart in self.charts:
            found: list[tuple[object, ...]] = list(zip(*chart.found)) or [()] * 7
            frames.append(
                pl.DataFrame(
                    {
                        GROUP: pl.Series(found[0], dtype=pl.Int64),
                        TIME: pl.Series(found[1], dtype=pl.Int64),
                        "odds_ratio": pl.Series([chart.ratio] * len(found[0]), dtype=pl.Float64),
                        "statistic": pl.Series(found[2], dtype=pl.Float64),
                        "threshold": pl.Series(found[3], dtype=pl.Float64),
                        "run_start": pl.Series(found[4], dtype=pl.Int64),
                        "started": pl.Series(found[5], dtype=pl.Boolean),
                        "n": pl.Series(found[6], dtype=pl.Int64),
                    }
                )
            )
        return pl.concat(frames).select(
            GROUP,
            from_physical(TIME, dtype),
            "odds_ratio",
            "statistic",
            "threshold",
            pl.when("started").then(from_physical("run_start", dtype)).alias("run_start"),
            "n",
        )

    def end_state(self, dtype: pl.DataType) -> pl.DataFrame:
        """Per (group, chart): ``GROUP``, ``odds_ratio``, ``total``, ``base``, ``floor`` and
        ``run_start`` (null when none)."""
        frames = []
        for chart in self.charts:
            frames.append(
                pl.DataFrame(
                    {
                        GROUP: np.arange(len(chart.total), dtype=np.int64),
                        "odds_ratio": np.full(len(chart.total), chart.ratio),
                        "total": chart.total,
                        "base": chart.base,
                        "floor": chart.floor,
                        "run_start": chart.restart,
                        "started": chart.started,
                    }
                )
            )
        run_start = pl.when("started").then(from_physical("run_start", dtype))
        return pl.concat(frames).select(
            GROUP, "odds_ratio", "total", "base", "floor", run_start.alias("run_start")
        )


class Sums:
    """Each group's running sum of its terms (the O - E chart), fed batch after batch,
    its drawn rows folded into `drawn` (one chart, no alarms)."""

    def __init__(self, groups: int, drawn: Drawn) -> None:
        self.total = np.zeros(groups)
        self.rows = np.zeros(groups, np.int64)
        self.last = np.full(groups, np.iinfo(np.int64).min, np.int64)
        self.drawn = drawn

    def feed(self, g: np.ndarray, t: np.ndarray, columns: list[np.ndarray]) -> None:
        """Add a batch: per row its group `g`, physical time `t` and term (`columns`'
        one). Raise :class:`Unordered` when a group's time goes back."""
        if not len(g):
            return
        order, segment = split(g, t, len(self.rows), self.last)
        c = segment.running_sums(columns[0][order], self.total)
        group, n = segment.numbers(self.rows)
        self.drawn.fold(0, group, n, segment.t, c, np.zeros(len(c), bool))
        self.total[segment.group] = c[segment.ends - 1]
        self.last[segment.group] = segment.t[segment.ends - 1]
        self.rows[segment.group] += segment.ends - segment.starts


def physical(time: str) -> pl.Expr:
    """The time column as Int64 (days of a Date, units of a Datetime, the integer)."""
    return pl.col(time).to_physical().cast(pl.Int64)


def from_physical(name: str, dtype: pl.DataType) -> pl.Expr:
    """An Int64 column of physical times back to `dtype`."""
    if dtype == pl.Date:
        return pl.col(name).cast(pl.Int32).cast(pl.Date)
    return pl.col(name).cast(dtype)
