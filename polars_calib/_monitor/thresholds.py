"""CUSUM thresholds for a target in-control average run length (ARL0).

Two estimates of the run length of a chart restarted at 0, for rows drawn from the
reference distribution of ``(p, w)`` with ``y ~ Bernoulli(p)`` (a calibrated stream):

* **importance sampling** (Siegmund, 1976) with the package's counter-based draws
  (``_core/draws.py``). A chart restarted at 0 after each alarm is a sequence of
  independent cycles, each from ``S = 0`` to ``S <= 0`` or to the first row above ``h``
  (the alarm), so ``ARL(h) = E[min(L, tau_h)] / P(tau_h < L)`` exactly (``L`` the
  cycle's end at ``S <= 0``, ``tau_h`` its first row above ``h``). A cycle whose first
  term is not positive ends at once; the others (**excursions**) are walked under the
  terms' law tilted by ``exp(theta W)`` (``M(theta) = E[exp(theta W)] = 1``), which
  drifts up; the likelihood ratio of a path to ``S_t`` is ``Z1 M**(t - 1) exp(-theta
  S_t)``. The crossing probability is the mean ratio at the first record above ``h``;
  ``E[min(L, tau_h)] = 1 +`` the mean sum of the ratios of the rows before it, both
  for every ``h`` at once from each excursion's records (``docs/monitoring.md``);
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
    "Estimate",
    "Excursions",
    "markov_arl",
    "markov_check",
    "markov_threshold",
    "term_atoms",
    "tilt",
    "tilted_draws",
    "tilted_threshold",
    "walk_excursions",
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


def _at(previous: np.ndarray, value: np.ndarray, h: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per ``h``: the sum of `x` over the records that are their excursion's first row
    above ``h`` (``previous <= h < value``)."""
    total = np.zeros(len(h), dtype=x.dtype)
    for bound, sign in ((previous, 1), (value, -1)):
        order = np.argsort(bound)  # ties: one searchsorted boundary, any order
        sums = np.concatenate([np.zeros(1, dtype=x.dtype), np.cumsum(x[order])])
        total += sign * sums[np.searchsorted(bound[order], h, side="right")]
    return total


def block(start: int) -> int:
    """Steps of every live excursion drawn and walked at once from step `start` (a
    matrix of live excursions by steps): 8, then doubling up to 256 (most excursions
    end within a few steps; the others take tens to thousands)."""
    return min(max(start, 8), 256)


def tilt(values: np.ndarray, probs: np.ndarray, guess: float) -> tuple[float, float]:
    """``theta > 0`` with ``M(theta) = sum(probs * exp(theta * values)) = 1``, and
    ``log M(theta)`` as computed (near 0; the likelihood ratios use it, so the
    estimate stays unbiased whatever the root's rounding). `guess` is tried first
    (``1 / w`` for a log-likelihood ratio times a common weight ``w``: exactly the root);
    otherwise bisection on ``log M``, negative on ``(0, theta)`` (``M`` is convex,
    ``M(0) = 1``, ``M'(0) = E[W] < 0``) and positive beyond."""
    keep = probs > 0.0
    v, log_p = values[keep], np.log(probs[keep])

    def log_m(theta: float) -> float:
        x = log_p + theta * v
        top = float(x.max())
        return top + math.log(float(np.exp(x - top).sum()))

    if abs(at := log_m(guess)) < 1e-12:
        return guess, at
    lo, hi = 0.0, guess
    while log_m(hi) <= 0.0:  # M grows without bound when some term is positive
        if hi > 1e300:
            msg = "the tilt needs a positive term: the chart never rises"
            raise ValueError(msg)
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if log_m(mid) <= 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return hi, log_m(hi)


@dataclass(frozen=True)
class Excursions:
    """Tilted excursions of one chart, from a first positive step to ``S <= 0`` or
    ``S > high``, and their **records** above ``low`` (the rows whose ``S`` exceeds
    every earlier row of their excursion; the first row above ``h >= low`` is the record
    with ``previous <= h < value``, ``previous`` the record before it or ``low``).

    Per excursion: ``full``, the sum of the likelihood ratios of its rows before its
    end. Per record: its excursion (``walk``), ``value``, ``previous``, ``ratio`` (the
    likelihood ratio of the path to it) and ``after`` (``full`` minus the ratios of
    the rows before it). ``rows``: rows walked.
    """

    low: float
    high: float
    full: np.ndarray
    walk: np.ndarray
    value: np.ndarray
    previous: np.ndarray
    ratio: np.ndarray
    after: np.ndarray
    rows: int


def tilted_draws(walks: np.ndarray, start: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The draws of steps ``start + 1 .. start + block(start)`` of excursions `walks`,
    common to every chart: the uniform in ``[0, 1)`` that picks the reference row and the
    32-bit word (as a float) that draws the label, from the counter-based hash of the
    identity ``walk * 2**32 + step`` (words 2 and 3)."""
    steps = np.arange(start, start + block(start), dtype=np.int64)
    identity = (walks.astype(np.int64)[:, None] << 32) + steps[None, :]
    lf = pl.LazyFrame({"r": identity.ravel()})
    lf = with_row_key(lf, pl.col("r"), seed, ("h1", "h2"))
    lf = with_words(lf, ("h1", "h2"), {"a": 2, "b": 3})
    drawn = lf.select(uniform(pl.col("a")), pl.col("b").cast(pl.Float64)).collect()
    shape = (len(walks), len(steps))
    return drawn["a"].to_numpy().reshape(shape), drawn["b"].to_numpy().reshape(shape)


class _Walks:
    """The tilted excursions of one chart, walked a block of steps at a time.

    A step picks reference row ``i`` with its tilted weight (all alike without weights
    or with a common one: then ``floor(u * n)``) and draws ``y = 1`` when its word is
    below the tilted ``P(y = 1 | i) * 2**32``; the first step picks among the positive
    terms only."""

    def __init__(
        self,
        values: np.ndarray,
        probs: np.ndarray,
        guess: float,
        low: float,
        high: float,
        count: int,
    ) -> None:
        self.theta, self.log_m = tilt(values, probs, guess)
        tilted = probs * np.exp(self.theta * values - self.log_m)
        n = self.n = len(values) // 2
        row = tilted[:n] + tilted[n:]
        self.uniform = bool(np.ptp(row) <= 1e-12 * row.mean())
        self.row_cdf = np.cumsum(row)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.limit = np.where(row > 0.0, tilted[:n] / row, 0.0) * 4294967296.0
        self.values = values
        positive = np.flatnonzero((values > 0.0) & (probs > 0.0))
        first = probs[positive] * np.exp(self.theta * values[positive])
        self.log_first = math.log(float(first.sum()))  # log Z1: P(W > 0) reweighted
        self.positive, self.first_cdf = positive, np.cumsum(first)
        self.low, self.high = low, high
        self.alive = np.arange(count, dtype=np.int64)
        self.s, self.top = np.zeros(count), np.full(count, low)
        self.full = np.zeros(count)
        self.rows = 0
        self.parts: list[list[np.ndarray]] = [[], [], [], [], []]

    def terms(self, u: np.ndarray, word: np.ndarray, start: int) -> np.ndarray:
        """The atoms of the steps drawn by `u` and `word` (:func:`tilted_draws`)."""
        if self.uniform:
            pick = (u * self.n).astype(np.int64)  # floor: u * n >= 0
        else:
            pick = np.searchsorted(self.row_cdf, u * self.row_cdf[-1], side="right")
            np.minimum(pick, self.n - 1, out=pick)
        index = pick + self.n * (word >= self.limit[pick])  # y = 0: the second half
        if start == 0:  # the first step: a positive term, from the tilted law given W > 0
            x = (u[:, 0] + word[:, 0] / 18446744073709551616.0) * self.first_cdf[-1]
            first = np.searchsorted(self.first_cdf, x, side="right")
            index[:, 0] = self.positive[np.minimum(first, len(self.positive) - 1)]
        return index

    def step(self, u: np.ndarray, word: np.ndarray, start: int) -> None:
        """Walk the live excursions from step `start` with the draws `u`, `word`."""
        size = u.shape[1]
        walk = np.cumsum(self.values[self.terms(u, word, start)], axis=1)
        walk += self.s[:, None]
        steps = np.arange(start, start + size, dtype=np.float64)  # t - 1
        ratio = np.exp(self.log_first + steps * self.log_m - self.theta * walk)
        ended = (walk <= 0.0) | (walk > self.high)
        done = ended.any(axis=1)
        end = np.where(done, ended.argmax(axis=1), size)  # the ending step, or none
        column = np.arange(size)[None, :]
        inside = np.where(column < end[:, None], ratio, 0.0)  # rows alive after their step
        prefix = np.cumsum(inside, axis=1)
        prefix -= inside
        prefix += self.full[self.alive][:, None]
        self.full[self.alive] += inside.sum(axis=1)
        peak = np.maximum.accumulate(walk, axis=1)
        np.maximum(peak, self.top[:, None], out=peak)
        before = np.concatenate([self.top[:, None], peak[:, :-1]], axis=1)
        record = (column <= end[:, None]) & (walk > before)
        rows, cols = np.nonzero(record)
        kept = (self.alive[rows], walk[rows, cols], before[rows, cols])
        for i, part in enumerate((*kept, ratio[rows, cols], prefix[rows, cols])):
            self.parts[i].append(part)
        self.rows += int(np.minimum(end + 1, size).sum())
        live = ~done
        self.alive, self.s, self.top = self.alive[live], walk[live, -1], peak[live, -1]

    def excursions(self) -> Excursions:
        """The finished excursions and their records."""
        walk, value, previous, ratio, prefix = (
            np.concatenate(part) if part else np.zeros(0) for part in self.parts
        )
        walk = walk.astype(np.int64)
        after = self.full[walk] - prefix
        return Excursions(
            self.low, self.high, self.full, walk, value, previous, ratio, after, self.rows
        )


def walk_excursions(
    charts: list[tuple[np.ndarray, np.ndarray, float, float, float]], count: int, seed: int
) -> list[Excursions]:
    """Per chart ``(values, probs, guess, low, high)`` (its atoms, :func:`term_atoms`, and
    a guess of the tilt, :func:`tilt`): `count` excursions under the tilted law, their
    draws common to every chart."""
    walks = [_Walks(*chart, count) for chart in charts]
    start = 0
    while live := [w for w in walks if len(w.alive)]:
        keys = np.unique(np.concatenate([w.alive for w in live]))
        u, word = tilted_draws(keys, start, seed)
        for w in live:
            rows = np.searchsorted(keys, w.alive)
            w.step(u[rows], word[rows], start)
        start += block(start)
    return [w.excursions() for w in walks]


def tilted_threshold(found: Excursions, arl0: float) -> Estimate | None:
    """The smallest ``h`` in ``[low, high)`` whose estimated ARL reaches `arl0`: ``ARL(h)
    = (1 + mean A) / mean Z`` over the excursions, ``Z`` the ratio at the first record
    above ``h`` (0 without one), ``A`` the ratios of the rows before it (or before the
    end); None when ``low > 0`` is too high or ``high`` too low."""
    count = len(found.full)
    h = np.concatenate([[found.low], np.sort(found.value[found.value < found.high])])
    crossing = _at(found.previous, found.value, h, found.ratio)
    before = float(found.full.sum()) - _at(found.previous, found.value, h, found.after)
    with np.errstate(divide="ignore"):
        arl = (count + before) / crossing
    # Above every excursion's peak nothing crosses: no estimate there (walk higher).
    reached = np.flatnonzero((arl >= arl0) & (crossing > 0.0))
    if not len(reached) or (reached[0] == 0 and found.low > 0.0):
        return None
    best = float(h[reached[0]])
    chosen = (found.previous <= best) & (best < found.value)
    z = np.zeros(count)
    z[found.walk[chosen]] = found.ratio[chosen]
    a = found.full.copy()
    a[found.walk[chosen]] -= found.after[chosen]
    estimate = float(arl[reached[0]])
    # Delta method for a ratio of means over iid excursions: sqrt(sum D^2) / sum Z.
    spread = float(np.sum((1.0 + a - estimate * z) ** 2))
    return Estimate(best, estimate, math.sqrt(spread) / float(z.sum()), int(chosen.sum()))
