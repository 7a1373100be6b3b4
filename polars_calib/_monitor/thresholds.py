"""CUSUM thresholds for a target in-control average run length (ARL0).

Two estimates of the run length of a chart restarted at 0, for rows drawn from the
reference distribution of ``(p, w)`` with ``y ~ Bernoulli(p)`` (a calibrated stream):

* **simulation** with the package's counter-based draws (``_core/draws.py``): simulated
  row ``r`` picks reference row ``floor(u(r, 0) * n)`` and draws its label from
  ``u(r, 1)``, so the draws depend on ``(r, seed)`` only, on any engine. One long
  stream per group, cut into the Lindley chart's cycles (from a zero of ``S`` to the
  next, or to the first row above ``h``): by Wald's identity ARL(h) = E[cycle length]
  / P(a cycle crosses h), estimated for every ``h`` at once (``docs/monitoring.md``);
* the **Markov chain** of Brook and Evans (1972): ``S`` on ``m`` states of ``[0, h]``,
  the expected steps to absorption from state 0; numpy on an ``m x m`` matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_calib._core.draws import bernoulli, uniform, with_row_key, with_words

__all__ = [
    "Estimate",
    "markov_arl",
    "markov_check",
    "markov_threshold",
    "simulate",
    "simulated_threshold",
    "term_atoms",
    "words",
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
    """The Markov-chain ARL at `h`, extrapolated from ``STATES`` and ``STATES / 2`` states."""
    fine, coarse = markov_arl(values, probs, h, STATES), markov_arl(values, probs, h, STATES // 2)
    return (4.0 * fine - coarse) / 3.0


def markov_threshold(
    values: np.ndarray, probs: np.ndarray, arl0: float, states: int = SEARCH_STATES
) -> float:
    """The ``h`` whose Markov-chain ARL is `arl0` (to 1%): ``log ARL`` is nearly linear
    in ``h``, so a false-position search on it (Illinois' variant) takes a few solves."""
    lo, hi = 0.0, max(float(np.abs(values).max()), 1e-3)
    f_lo, f_hi = -math.log(arl0), math.log(markov_arl(values, probs, hi, states) / arl0)
    while f_hi < 0.0:
        lo, f_lo, hi = hi, f_hi, 2.0 * hi
        f_hi = math.log(markov_arl(values, probs, hi, states) / arl0)
    side, h = 0, hi
    for _ in range(100):
        h = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        f = math.log(markov_arl(values, probs, h, states) / arl0)
        if abs(f) < 0.01 or hi - lo < 1e-3 * hi:
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


def words(rows: int, seed: int) -> pl.DataFrame:
    """The simulated rows' numbers ``r`` and their two counter-based words (``a``: the
    reference row, ``b``: the label), common to every group."""
    lf = pl.LazyFrame().select(pl.int_range(rows, dtype=pl.Int64).alias("r"))
    lf = with_row_key(lf, pl.col("r"), seed, ("h1", "h2"))
    return with_words(lf, ("h1", "h2"), {"a": 0, "b": 1}).select("r", "a", "b").collect()


def _stream(p: np.ndarray, w: np.ndarray, drawn: pl.DataFrame, log_rs: list[float]) -> pl.LazyFrame:
    """The simulated stream: per row its number ``r`` and each chart's ``S`` (``s0``, ...)."""
    pick = (uniform(pl.col("a")) * len(p)).floor().cast(pl.Int64)
    picked = [pl.lit(pl.Series(p)).gather(pick).alias("p")]
    weighted = bool(np.any(w != 1.0))  # unweighted: no column of ones to gather
    picked += [pl.lit(pl.Series(w)).gather(pick).alias("w")] if weighted else []
    lf = drawn.lazy().select("r", "b", *picked)
    lf = lf.with_columns(y=bernoulli(pl.col("b"), pl.col("p")))
    charts = []
    for i, log_r in enumerate(log_rs):
        term = pl.col("y") * log_r - (math.expm1(log_r) * pl.col("p")).log1p()
        total = (pl.col("w") * term if weighted else term).cum_sum()
        charts.append((total - total.cum_min().clip(upper_bound=0.0)).alias(f"s{i}"))
    return lf.select("r", *charts)


def _cycles(stream: pl.LazyFrame, chart: str, low: float) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The rows of complete cycles above `low` (their cycle's start, end, position) and the
    totals: rows in complete cycles and the sum of squared cycle lengths."""
    zero = pl.when(pl.col(chart) == 0.0).then(pl.col("r"))
    lf = stream.select(
        "r",
        pl.col(chart).alias("s"),
        zero.shift(1).forward_fill().fill_null(-1).alias("start"),
        zero.backward_fill().alias("end"),
    ).filter(pl.col("end").is_not_null())
    position = pl.col("r") - pl.col("start")
    totals = lf.select(
        (pl.col("end").max() + 1).fill_null(0).alias("rows"),
        (2 * position - 1).sum().cast(pl.Float64).alias("squares"),
    )
    return lf.filter(pl.col("s") > low).with_columns(position=position), totals


def _arl(h: float, high: dict[str, np.ndarray], rows: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Simulated ARL at `h`: each crossing cycle's first passage and length."""
    above = high["s"] > h
    starts = high["start"][above]  # in row order: a cycle's rows are together
    first = np.flatnonzero(np.diff(starts, prepend=starts[:1] - 1))
    tau = high["position"][above][first].astype(np.float64)
    length = (high["end"] - high["start"])[above][first].astype(np.float64)
    exposure = rows - float(np.sum(length - tau))
    return (exposure / len(tau) if len(tau) else math.inf), tau, length


def simulated_threshold(
    high: pl.DataFrame, totals: pl.DataFrame, low: float, arl0: float
) -> Estimate | None:
    """The smallest ``h`` whose simulated ARL reaches `arl0`; None when `low` is too high."""
    arrays = {name: high[name].to_numpy() for name in ("s", "start", "end", "position")}
    rows = int(totals.item(0, "rows"))
    if _arl(low, arrays, rows)[0] >= arl0 or not len(high):
        return None
    lo, hi = low, float(arrays["s"].max())
    while hi - lo > 1e-6 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _arl(mid, arrays, rows)[0] < arl0 else (lo, mid)
    arl, tau, length = _arl(hi, arrays, rows)
    k = len(tau)
    # Delta method for a ratio of sums over iid cycles: sum (T - ARL a)^2 / (sum a)^2.
    squares = float(totals.item(0, "squares")) - float(np.sum(length**2 - tau**2))
    spread = max(squares - 2.0 * arl * float(tau.sum()) + arl * arl * k, 0.0)
    return Estimate(hi, arl, math.sqrt(spread) / k if k else math.inf, k)


def simulate(
    p: np.ndarray, w: np.ndarray, log_rs: list[float], lows: list[float], drawn: pl.DataFrame
) -> list[pl.LazyFrame]:
    """The plans of one group's simulation on the rows `drawn` (:func:`words`): per chart,
    its rows above `lows` in complete cycles and its totals."""
    stream = _stream(p, w, drawn, log_rs)
    plans: list[pl.LazyFrame] = []
    for i, low in enumerate(lows):
        plans.extend(_cycles(stream, f"s{i}", low))
    return plans
