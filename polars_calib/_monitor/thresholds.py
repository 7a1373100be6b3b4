"""CUSUM thresholds for a target in-control average run length (ARL0).

Two estimates of the run length of a chart restarted at 0, for rows drawn from the
reference distribution of ``(p, w)`` with ``y ~ Bernoulli(p)`` (a calibrated stream):

* **simulation** with the package's counter-based draws (``_core/draws.py``): simulated
  row ``r`` picks reference row ``floor(u(r, 0) * n)`` and draws its label from
  ``u(r, 1)``, so the draws depend on ``(r, seed)`` only, on any engine. The draws are
  computed once, in chunks of ``CHUNK`` rows shared by every group; each group's charts
  are running sums over them (numpy, carried from chunk to chunk: in memory, a chunk
  and each chart's records above the Markov chain's guess, a small share of the rows).
  One long stream per group, cut into the Lindley chart's cycles (from a zero of ``S``
  to the next, or to the first row above ``h``): by Wald's identity ARL(h) = E[cycle
  length] / P(a cycle crosses h), estimated for every ``h`` at once from each cycle's
  records (``docs/monitoring.md``);
* the **Markov chain** of Brook and Evans (1972): ``S`` on ``m`` states of ``[0, h]``,
  the expected steps to absorption from state 0; numpy on an ``m x m`` matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_calib._core.draws import uniform, with_row_key, with_words

__all__ = [
    "Cycles",
    "Estimate",
    "draws",
    "markov_arl",
    "markov_check",
    "markov_threshold",
    "simulate",
    "simulated_threshold",
    "term_atoms",
]

STATES = 96
"""States of the Markov chain (Brook and Evans' discretisation of [0, h]) that checks a
simulated threshold, with half as many for Richardson's extrapolation (its error falls as
``1 / states**2``: within about 3% of a 1,600-state chain on rare events, 0.5% on common
ones); the search for the simulation's lower bound uses ``SEARCH_STATES``. Kept under
100: numpy's LAPACK solves larger systems with threads, 10 to 100 times slower on a
loaded machine."""
SEARCH_STATES = 40


def term_atoms(p: np.ndarray, w: np.ndarray, log_r: float) -> tuple[np.ndarray, np.ndarray]:
    """The atoms of W (y = 1, then y = 0, per reference row) and their probabilities."""
    shift = np.log1p(math.expm1(log_r) * p)
    values = np.concatenate([w * (log_r - shift), -w * shift])
    probs = np.concatenate([p, 1.0 - p]) / len(p)
    return values, probs


def markov_arl(values: np.ndarray, probs: np.ndarray, h: float, states: int = STATES) -> float:
    """ARL from ``S = 0`` of a chart alarming at ``S > h`` (Brook and Evans, 1972).

    State ``i`` holds ``S = i d`` (``d = h / (states - 1/2)``). A term ``W = (k + f) d``
    (``k`` an integer, ``0 <= f < 1``) moves ``k`` states with probability ``1 - f`` and
    ``k + 1`` with ``f``, which keeps the chart's drift exact (Brook and Evans round ``W``
    to the nearest state, which loses the terms smaller than ``d / 2`` of rare events);
    below state 0 it stops at 0, past the last state it alarms.
    """
    d = h / (states - 0.5)
    scaled = values / d
    low = np.floor(scaled)
    frac = scaled - low
    shift = np.clip(low, -states - 1, states).astype(np.int64) + states + 1
    mass = np.bincount(shift, weights=probs * (1.0 - frac), minlength=2 * states + 3)
    mass += np.bincount(shift + 1, weights=probs * frac, minlength=2 * states + 3)
    # mass[k + states + 1] = P(a move of k states), k = -states - 1 .. states + 1.
    i, j = np.arange(states)[:, None], np.arange(states)[None, :]
    q = mass[j - i + states + 1]
    q[:, 0] = np.cumsum(mass)[states + 1 - np.arange(states)]
    arl = np.linalg.solve(np.eye(states) - q, np.ones(states))
    return float(arl[0])


def markov_check(values: np.ndarray, probs: np.ndarray, h: float) -> float:
    """The Markov-chain ARL at `h`, extrapolated from ``STATES`` and ``STATES / 2`` states
    (at ``h = 0``, exactly ``1 / P(W > 0)``: the chart alarms at its first positive term)."""
    if h <= 0.0:
        positive = float(probs[values > 0.0].sum())
        return 1.0 / positive if positive > 0.0 else math.inf
    fine, coarse = markov_arl(values, probs, h, STATES), markov_arl(values, probs, h, STATES // 2)
    return (4.0 * fine - coarse) / 3.0


def markov_threshold(
    values: np.ndarray,
    probs: np.ndarray,
    arl0: float,
    states: int = SEARCH_STATES,
    tolerance: float = 0.01,
) -> float:
    """The ``h`` whose Markov-chain ARL is `arl0` (to `tolerance`, relative): ``log ARL``
    is nearly linear in ``h``, so a false-position search on it (Illinois' variant)
    takes a few solves."""
    lo, hi = 0.0, max(float(np.abs(values).max()), 1e-3)
    f_lo, f_hi = -math.log(arl0), math.log(markov_arl(values, probs, hi, states) / arl0)
    while f_hi < 0.0:
        lo, f_lo, hi = hi, f_hi, 2.0 * hi
        f_hi = math.log(markov_arl(values, probs, hi, states) / arl0)
    side, h, scale = 0, hi, hi
    for _ in range(100):
        h = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        if h < 1e-6 * scale:  # every h > 0 has an ARL above the target: h = 0
            return 0.0
        f = math.log(markov_arl(values, probs, h, states) / arl0)
        if abs(f) < tolerance or hi - lo < 1e-3 * hi:
            return h
        if f < 0.0:
            lo, f_lo = h, f
            f_hi = f_hi / 2.0 if side == -1 else f_hi
            side = -1
        else:
            hi, f_hi = h, f
            f_lo = f_lo / 2.0 if side == 1 else f_lo
            side = 1
    return h


@dataclass(frozen=True)
class Estimate:
    """A simulated threshold: ``h``, its simulated ARL and standard error, the alarms seen."""

    threshold: float
    arl: float
    se: float
    alarms: int


@dataclass(frozen=True)
class Cycles:
    """A simulated chart cut into its complete cycles (from a zero of ``S`` to the next).

    ``rows``: rows in complete cycles; ``squares``: the sum of their squared lengths.
    Per **record** (a row above ``low`` whose ``S`` exceeds every earlier row of its
    cycle), in row order: its ``value`` (``S``), the ``previous`` record's value in its
    cycle (``low`` for the first), its ``position`` in its cycle (1-based) and its
    cycle's ``length``. The first row above ``h >= low`` of a cycle is the record
    with ``previous <= h < value``.
    """

    rows: int
    squares: float
    low: float
    value: np.ndarray
    previous: np.ndarray
    position: np.ndarray
    length: np.ndarray


def draws(start: int, stop: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The counter-based draws of simulated rows ``start .. stop - 1``, common to every
    group: the uniform ``u(r, 0)`` that picks the reference row and the word
    ``u32(r, 1)`` (as a float) that draws the label."""
    lf = pl.LazyFrame().select(pl.int_range(start, stop, dtype=pl.Int64).alias("r"))
    lf = with_row_key(lf, pl.col("r"), seed, ("h1", "h2"))
    lf = with_words(lf, ("h1", "h2"), {"a": 0, "b": 1})
    drawn = lf.select(uniform(pl.col("a")), pl.col("b").cast(pl.Float64)).collect()
    return drawn["a"].to_numpy(), drawn["b"].to_numpy()


class _Chart:
    """One simulated chart fed chunk by chunk: the running sums, the open cycle and the
    records of the complete cycles (see :class:`Cycles`)."""

    def __init__(self, values: np.ndarray, low: float) -> None:
        self.values, self.low = values, low
        self.total, self.floor = 0.0, 0.0  # C after the last row; min(0, min C)
        self.zero, self.top = -1, low  # the open cycle's start and its largest record
        self.squares = 0.0
        self.open: list[np.ndarray] = [np.zeros(0), np.zeros(0), np.zeros(0, np.int64)]
        self.done: list[list[np.ndarray]] = [[], [], [], []]

    def feed(self, index: np.ndarray, offset: int) -> None:
        """Add the rows whose atoms are `index`, the first being row `offset`."""
        terms = self.values[index]
        terms[0] += self.total  # the carried sum first: the rounding of one cumsum
        total = np.cumsum(terms, out=terms)
        floor = np.minimum.accumulate(total)
        np.minimum(floor, self.floor, out=floor)
        self.total, self.floor = float(total[-1]), float(floor[-1])
        chart = np.subtract(total, floor, out=floor)
        zeros = np.flatnonzero(chart == 0.0)
        zeros += offset
        high = np.flatnonzero(chart > self.low)
        value = chart[high]
        high += offset
        after = np.searchsorted(zeros, high)
        start = np.where(after > 0, zeros[np.maximum(after - 1, 0)] if len(zeros) else 0, self.zero)
        # A record exceeds every earlier row of its cycle: in the order (cycle descending,
        # S descending, row ascending), no row before it in its cycle has a smaller row
        # number, and the rows of later cycles (before it in this order) all have larger
        # ones. The open cycle's rows must also exceed its records of earlier chunks.
        order = np.lexsort((high, -value, -start))
        seen = np.minimum.accumulate(high[order])
        record = np.empty(len(high), dtype=bool)
        record[order] = high[order] < np.concatenate([[np.iinfo(np.int64).max], seen[:-1]])
        record &= (start != self.zero) | (value > self.top)
        high, start, value, after = high[record], start[record], value[record], after[record]
        first = np.diff(start, prepend=-2) != 0
        before = np.where(start == self.zero, self.top, self.low)
        previous = np.where(first, before, np.concatenate([[self.low], value[:-1]]))
        self._close(zeros, high, start, value, previous, after)

    def _close(
        self,
        zeros: np.ndarray,
        high: np.ndarray,
        start: np.ndarray,
        value: np.ndarray,
        previous: np.ndarray,
        after: np.ndarray,
    ) -> None:
        """Keep the records of the cycles the chunk's `zeros` complete; carry the rest."""
        complete = after < len(zeros)
        position = high - start
        if len(zeros):  # the open cycle ends at the chunk's first zero
            carried = len(self.open[0])
            for i, part in enumerate((value, previous, position)):
                self.done[i] += [self.open[i], part[complete]]
            ends = zeros[after[complete]] - start[complete]
            self.done[3] += [np.full(carried, zeros[0] - self.zero), ends]
            # Cycle lengths within a chunk are below 2**32: their squares sum exactly in int64.
            steps = np.diff(zeros)
            first = int(zeros[0]) - self.zero
            self.squares += float(first * first) + float(np.dot(steps, steps))
            self.zero, self.top = int(zeros[-1]), self.low
            self.open = [part[:0] for part in self.open]
        pending = ~complete
        self.open = [
            np.concatenate([kept, part[pending]])
            for kept, part in zip(self.open, (value, previous, position))
        ]
        if len(self.open[0]):
            self.top = float(self.open[0][-1])

    def cycles(self) -> Cycles:
        """The complete cycles and their records."""
        value, previous, position, length = (
            np.concatenate(part) if part else np.zeros(0) for part in self.done
        )
        return Cycles(
            self.zero + 1,
            self.squares,
            self.low,
            value,
            previous,
            position.astype(np.int64),
            length.astype(np.int64),
        )


def _at(cycles: Cycles, h: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per ``h``: the sum of `x` over the records that are their cycle's first row
    above ``h`` (``previous <= h < value``)."""
    total = np.zeros(len(h), dtype=x.dtype)
    for bound, sign in ((cycles.previous, 1), (cycles.value, -1)):
        order = np.argsort(bound, kind="stable")
        sums = np.concatenate([np.zeros(1, dtype=x.dtype), np.cumsum(x[order])])
        total += sign * sums[np.searchsorted(bound[order], h, side="right")]
    return total


def simulated_threshold(cycles: Cycles, arl0: float) -> Estimate | None:
    """The smallest ``h`` whose simulated ARL reaches `arl0`; None when ``cycles.low > 0``
    is too high (0 when every ``h >= 0`` reaches it). The estimate changes only at a
    record's value: every one is tried."""
    if not len(cycles.value):
        return None
    h = np.concatenate([[cycles.low], np.sort(cycles.value)])
    crossing = _at(cycles, h, np.ones(len(cycles.value), dtype=np.int64))
    after = _at(cycles, h, cycles.length - cycles.position)  # rows after the first passage
    with np.errstate(divide="ignore"):
        arl = (cycles.rows - after) / crossing
    reached = np.flatnonzero(arl >= arl0)  # the largest value reaches it: no crossing
    if reached[0] == 0 and cycles.low > 0.0:
        return None
    best = float(h[reached[0]])
    chosen = (cycles.previous <= best) & (best < cycles.value)
    tau = cycles.position[chosen].astype(np.float64)
    length = cycles.length[chosen].astype(np.float64)
    k, estimate = len(tau), float(arl[reached[0]])
    # Delta method for a ratio of sums over iid cycles: sum (T - ARL a)^2 / (sum a)^2.
    squares = cycles.squares - float(np.sum(length**2 - tau**2))
    spread = max(squares - 2.0 * estimate * float(tau.sum()) + estimate * estimate * k, 0.0)
    return Estimate(best, estimate, math.sqrt(spread) / k if k else math.inf, k)


CHUNK = 1 << 16
"""Simulated rows per chunk: the draws and each chart's running state stay small
(memory bounded by the groups, not the rows) and the passes stay in the cache."""


def simulate(
    groups: list[tuple[np.ndarray, np.ndarray, list[float], list[float]]], rows: int, seed: int
) -> list[list[Cycles]]:
    """Per group ``(p, w, log_rs, lows)``: its simulated charts' cycles and records above
    `lows`, on the simulated rows ``0 .. rows - 1`` drawn once for every group.

    Row ``r`` copies reference row ``floor(u * n)`` and draws ``y = 1`` when its word
    is below ``p * 2**32`` (:func:`polars_calib._core.draws.bernoulli`); its term is
    that row's atom (:func:`term_atoms`), gathered by one index for every chart.
    """
    charts = [
        [_Chart(term_atoms(p, w, log_r)[0], low) for log_r, low in zip(log_rs, lows)]
        for p, w, log_rs, lows in groups
    ]
    limits = [p * 4294967296.0 for p, _, _, _ in groups]
    for offset in range(0, rows if groups else 0, CHUNK):
        u, word = draws(offset, min(offset + CHUNK, rows), seed)
        picks: dict[int, np.ndarray] = {}  # per reference size: groups often share one
        for limit, group in zip(limits, charts):
            n = len(limit)
            if (pick := picks.get(n)) is None:
                pick = picks[n] = (u * n).astype(np.int64)  # floor: u * n >= 0
            # y = 0 (word at or above p * 2**32) takes the second half of the atoms.
            index = pick + n * (word >= limit[pick])
            for chart in group:
                chart.feed(index, offset)
    return [[chart.cycles() for chart in group] for group in charts]
