"""Bootstrap intervals and the consistency test against vectorised numpy (issue 11's target).

Target: 1M rows, 100 groups, 15 bins, S = 1000 consistency label sets and a
1000-replicate Poisson bootstrap, each at most 2x a vectorised numpy implementation.
Side by side, in one process and one run:

numpy bootstrap     per replicate ``k = rng.poisson(1, n)``, then ``np.bincount`` of
                    ``k``, ``k p``, ``k y`` and ``k (p - y)**2`` per (group, bin), then
                    ECE and Brier per group and replicate, then percentiles
numpy consistency   per replicate ``y_s = rng.binomial(1, p)``, ``np.bincount`` of
                    ``y_s`` and ``y_s (1 - 2p)`` (the Brier change), ECE and Brier, p-values
polars bootstrap    ``pc.summary(df, "p", "y", by="g", metrics=["ece", "brier"],
                    confidence=0.95, n_resamples=R)``
polars consistency  ``pc.summary(..., metrics=["consistency_p", "consistency_p_brier"],
                    n_resamples=S)``

Then how the cost grows: the same at a quarter of the replicates and a quarter of the
rows. numpy draws with its own generator (the fastest it has); polars with the
counter-based hash (reproducible on any engine and partitioning), which the numpy
side does not have to honour. Each time is the best of ``--repeats`` runs, each
started when the CPUs are idle (or after 10 s of waiting).

Run ``python bench/resampling.py`` (several minutes on 2 cores); check it with
``python bench/resampling.py --rows 20000 --replicates 50 --repeats 1``. It prints a
table; nothing here is a test.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
import polars as pl
from benchmark import _wait_idle  # the same idle wait as the full benchmark (bench/ is on the path)

import polars_calib as pc

N_BINS = 15
GROUPS = 100


def data(rows: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    p = rng.random(rows)
    rate = np.clip(p + 0.25 * np.sin(2 * math.pi * p), 0.0, 1.0)
    g = rng.integers(0, GROUPS, rows, dtype=np.int32)
    return pl.DataFrame({"g": g, "p": p, "y": (rng.random(rows) < rate).astype(np.int8)})


def _cells(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = df["p"].to_numpy()
    bins = np.clip(np.ceil(p * N_BINS).astype(np.int64) - 1, 0, N_BINS - 1)  # right-closed
    return (
        df["g"].to_numpy().astype(np.int64) * N_BINS + bins,
        p,
        df["y"].to_numpy().astype(np.float64),
    )


def _ece_brier(count, sum_p, sum_y, sum_se):
    """ECE and Brier per group from per-(group, bin) sums (arrays of GROUPS * N_BINS)."""
    shape = (GROUPS, N_BINS)
    total = count.reshape(shape).sum(axis=1)
    ece = np.abs(sum_y - sum_p).reshape(shape).sum(axis=1) / total
    return ece, sum_se.reshape(shape).sum(axis=1) / total


def numpy_bootstrap(df: pl.DataFrame, replicates: int) -> np.ndarray:
    cell, p, y = _cells(df)
    rng = np.random.default_rng(0)
    size, se = GROUPS * N_BINS, (p - y) ** 2
    eces, briers = [], []
    for _ in range(replicates):
        k = rng.poisson(1.0, p.size).astype(np.float64)
        sums = [np.bincount(cell, weights=k * v, minlength=size) for v in (1.0, p, y, se)]
        ece, brier = _ece_brier(*sums)
        eces.append(ece)
        briers.append(brier)
    return np.quantile(np.stack(eces), [0.025, 0.975], axis=0)


def numpy_consistency(df: pl.DataFrame, replicates: int) -> np.ndarray:
    cell, p, y = _cells(df)
    rng = np.random.default_rng(0)
    size = GROUPS * N_BINS
    count = np.bincount(cell, minlength=size).astype(np.float64)
    sum_p = np.bincount(cell, weights=p, minlength=size)
    base_se = np.bincount(cell, weights=p * p, minlength=size)  # (p - y)**2 at y = 0
    change = 1.0 - 2.0 * p  # its change at y = 1
    observed = _ece_brier(
        count,
        sum_p,
        np.bincount(cell, weights=y, minlength=size),
        np.bincount(cell, weights=(p - y) ** 2, minlength=size),
    )
    above = [np.zeros(GROUPS), np.zeros(GROUPS)]
    for _ in range(replicates):
        drawn = rng.binomial(1, p).astype(np.float64)
        sum_y = np.bincount(cell, weights=drawn, minlength=size)
        sum_se = base_se + np.bincount(cell, weights=drawn * change, minlength=size)
        for i, value in enumerate(_ece_brier(count, sum_p, sum_y, sum_se)):
            above[i] += value >= observed[i]
    return (1.0 + np.stack(above)) / (1.0 + replicates)


def polars_bootstrap(df: pl.DataFrame, replicates: int) -> pl.DataFrame:
    return pc.summary(
        df,
        "p",
        "y",
        by="g",
        n_bins=N_BINS,
        metrics=["ece", "brier"],
        confidence=0.95,
        n_resamples=replicates,
    )


def polars_consistency(df: pl.DataFrame, replicates: int) -> pl.DataFrame:
    return pc.summary(
        df,
        "p",
        "y",
        by="g",
        n_bins=N_BINS,
        n_resamples=replicates,
        metrics=["consistency_p", "consistency_p_brier"],
    )


def best(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        _wait_idle(limit=10.0)
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"{'rows':>9} {'R':>5} {'method':<12} {'numpy s':>8} {'polars s':>9} {'ratio':>6}")
    sizes = [
        (args.rows, args.replicates),
        (args.rows, max(1, args.replicates // 4)),
        (max(1, args.rows // 4), args.replicates),
    ]
    for rows, replicates in sizes:
        df = data(rows)
        for method, reference, ours in (
            ("bootstrap", numpy_bootstrap, polars_bootstrap),
            ("consistency", numpy_consistency, polars_consistency),
        ):
            numpy_time = best(lambda: reference(df, replicates), args.repeats)
            polars_time = best(lambda: ours(df, replicates), args.repeats)
            print(
                f"{rows:>9} {replicates:>5} {method:<12} {numpy_time:>8.2f} "
                f"{polars_time:>9.2f} {polars_time / numpy_time:>6.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
