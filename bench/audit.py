"""The fairness audit against one summary at the finest grouping, and against fairlearn (issue 12).

10M rows in memory: a model column (two models), three attributes ``sex`` (2 values),
``age_band`` (4) and ``region`` (3), probabilities with miscalibration that changes
sign, and one miscalibrated intersection. In one process and one run:

audit        ``pc.audit(df, "p", "y", by=[sex, age_band, region], max_order=3,
             metrics=["ece", "brier"])`` with bootstrap intervals when the installed
             package has them (``n_resamples``): every slice, disparities, p-values
summary      ``pc.summary(df, "p", "y", by=[sex, age_band, region], ...)`` with the
             same metrics and intervals (and ``spiegelhalter_p``, the audit's test, so
             that both compute the same table): the 24 finest cells only (target: the
             audit within 2x of it)
fairlearn    ``MetricFrame(metrics={"ece": ..., "brier": ...})`` on a pandas frame,
             once per attribute set (7 sets: what the audit reports), point estimates
             only (fairlearn's bootstrap, ``n_boot``, refits every metric per
             replicate and is out of reach at this size); the audit is timed without
             intervals beside it, and the ratio reported.

The model column is carried as in a real log and the audit covers all rows (an audit
of one model is the same call on ``df.filter(pl.col("model") == ...)``). Each time is
the best of ``--repeats`` runs, each started when the CPUs are idle (or after 10 s).
Run ``python bench/audit.py`` on an idle machine; ``--rows 20000 --repeats 1`` checks
that it runs. Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))

import polars_calib as pc
from benchmark import _wait_idle  # the same idle wait as the full benchmark

N_BINS = 15
BY = ["sex", "age_band", "region"]
METRICS = ["ece", "brier"]


def data(rows: int, seed: int = 0) -> pl.DataFrame:
    """The log: model, sex, age_band, region, p, y (women aged 65+ under-predicted)."""
    rng = np.random.default_rng(seed)
    p = rng.random(rows)
    sex = rng.integers(0, 2, rows)
    age = rng.integers(0, 4, rows)
    rate = p + 0.15 * np.sin(2 * math.pi * p) + np.where((sex == 0) & (age == 3), 0.15, 0.0)
    y = (rng.random(rows) < np.clip(rate, 0.0, 1.0)).astype(np.int8)
    return pl.DataFrame({
        "model": pl.Series(rng.choice(["baseline", "candidate"], rows)),
        "sex": pl.Series(np.array(["F", "M"])[sex]),
        "age_band": pl.Series(np.array(["18-29", "30-49", "50-64", "65+"])[age]),
        "region": pl.Series(np.array(["north", "south", "west"])[rng.integers(0, 3, rows)]),
        "p": p,
        "y": y,
    })  # fmt: skip


def ece(y_true: np.ndarray, y_prob: np.ndarray) -> float:
    """The package's ECE (15 right-closed uniform bins) in numpy, for fairlearn."""
    y_true, y_prob = np.asarray(y_true, dtype=float), np.asarray(y_prob, dtype=float)
    bins = np.clip(np.ceil(y_prob * N_BINS).astype(np.int64) - 1, 0, N_BINS - 1)
    gap = np.bincount(bins, y_true - y_prob, minlength=N_BINS)
    return float(np.abs(gap).sum() / y_true.size)


def brier(y_true: np.ndarray, y_prob: np.ndarray) -> float:
    y_true, y_prob = np.asarray(y_true, dtype=float), np.asarray(y_prob, dtype=float)
    return float(np.mean((y_prob - y_true) ** 2))


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
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap replicates")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    df = data(args.rows)
    intervals: dict[str, Any] = {}
    if "n_resamples" in inspect.signature(pc.audit).parameters:
        intervals = {"confidence": 0.95, "n_resamples": args.resamples, "seed": 0}
    common: dict[str, Any] = {"n_bins": N_BINS, "metrics": METRICS}

    def audit() -> object:
        return pc.audit(df, "p", "y", by=BY, max_order=3, **common, **intervals)

    points: dict[str, Any] = {"n_resamples": None} if intervals else {}

    def audit_points() -> object:
        return pc.audit(df, "p", "y", by=BY, max_order=3, **common, **points)

    def summary() -> object:
        # The same table as the audit's: its metrics and each slice's Spiegelhalter sums.
        tested = {**common, "metrics": [*METRICS, "spiegelhalter_p"]}
        return pc.summary(df, "p", "y", by=BY, **tested, **intervals)

    from fairlearn.metrics import MetricFrame

    pandas = df.to_pandas()
    sets = [list(s) for order in (1, 2, 3) for s in itertools.combinations(BY, order)]

    def fairlearn() -> object:
        return [
            MetricFrame(
                metrics={"ece": ece, "brier": brier}, y_true=pandas["y"], y_pred=pandas["p"],
                sensitive_features=pandas[attributes],
            ).by_group
            for attributes in sets
        ]  # fmt: skip

    times = {
        "audit": best(audit, args.repeats),
        "summary": best(summary, args.repeats),
        "audit, no intervals": best(audit_points, args.repeats),
        "fairlearn": best(fairlearn, args.repeats),
    }
    label = f"{args.resamples} replicates" if intervals else "no intervals (not in this build)"
    print(f"{args.rows:,} rows, by {BY}, max_order=3, metrics {METRICS}, intervals: {label}")
    for name, seconds in times.items():
        print(f"  {name:<22} {seconds:8.3f} s")
    print(f"  audit / summary        {times['audit'] / times['summary']:8.2f}x  (target <= 2x)")
    print(f"  fairlearn / audit      {times['fairlearn'] / times['audit, no intervals']:8.2f}x"
          "  (both point estimates, 7 attribute sets)")


if __name__ == "__main__":
    main()
