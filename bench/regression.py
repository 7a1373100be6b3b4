"""Calibration of Gaussian predictions against what a user would run instead (issue 25).

Targets (issue 25, "Speed"), on 10M rows and 100 groups of Gaussian predictions:

curve       ``pc.regression_summary(df, "y", mean=, std=, by="g", metrics=[MACE])``, the
            100-level calibration curve: at most 1.5x the binary ECE frame form
            ``pc.summary(df, "p", "label", by="g", metrics=["ece"])`` on the same rows
crps, nll   ``df.group_by("g").agg(pc.crps(...))`` (and ``pc.nll``): at most 1.2x a
            plain mean of a column, ``df.group_by("g").agg(pl.col("y").mean())``
peers       uncertainty-toolbox's ``mean_absolute_calibration_error`` and netcal's
            ``ENCE`` on 1M rows and one group, against ``pc.mean_absolute_calibration_error``
            and ``pc.ence`` on the same rows, when ``--peers-python`` names a Python
            with the peers installed (the side environment of
            ``tests/data/regression/PEERS.md``): they run there, timed the same way

Each time is the best of ``--repeats`` runs, each started when the CPUs are idle (or
after 10 s).

    python bench/regression.py                              # 10M rows
    python bench/regression.py --rows 20000 --repeats 1 --no-wait   # a quick check
    python bench/regression.py --peers-python /work/sidevenv-reg/bin/python

It prints a Markdown table. Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
from benchmark import _wait_idle  # the same idle wait as the full benchmark (bench/ is on the path)

import polars_calib as pc

GAUSS = {"mean": "mu", "std": "sigma"}

PEERS = """
import json, sys, time
import numpy as np
n = int(sys.argv[1]); repeats = int(sys.argv[2])
rng = np.random.default_rng(0)
mu = rng.normal(0, 2, n); sigma = rng.uniform(0.2, 2, n)
y = mu + np.where(np.arange(n) % 2 == 0, 0.7, 1.4) * sigma * rng.normal(size=n)
out = {}
def best(f):
    times = []
    for _ in range(repeats):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return min(times)
import uncertainty_toolbox as uct
out["uncertainty-toolbox MACE"] = best(lambda: uct.mean_absolute_calibration_error(mu, sigma, y))
from netcal.metrics import ENCE
out["netcal ENCE"] = best(lambda: ENCE(bins=10).measure((mu, sigma), y))
print(json.dumps(out))
"""


def data(rows: int, groups: int) -> pl.DataFrame:
    """Gaussian predictions, over-confident in even groups and under-confident in odd ones;
    beside them binary probabilities for the ECE reference."""
    rng = np.random.default_rng(0)
    g = rng.integers(0, groups, rows, dtype=np.int32)
    mu = rng.normal(0.0, 2.0, rows)
    sigma = rng.uniform(0.2, 2.0, rows)
    scale = np.where(g % 2 == 0, 0.7, 1.4)
    p = rng.random(rows)
    return pl.DataFrame(
        {
            "g": g,
            "mu": mu,
            "sigma": sigma,
            "y": mu + scale * sigma * rng.normal(size=rows),
            "p": p,
            "label": (rng.random(rows) < p).astype(np.int8),
        }
    )


def best(run: Callable[[], object], repeats: int, wait: bool) -> float:
    """The best of `repeats` timed runs, each after the CPUs are idle."""
    times = []
    for _ in range(repeats):
        if wait:
            _wait_idle()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def cases(df: pl.DataFrame, scan: pl.LazyFrame) -> dict[str, Callable[[], object]]:
    """The timed runs: each pair is ours and its reference."""
    mace = ["mean_absolute_calibration_error"]
    return {
        "curve: regression_summary (in memory)": lambda: pc.regression_summary(
            df, "y", **GAUSS, by="g", metrics=mace
        ),
        "curve reference: summary ECE (in memory)": lambda: pc.summary(
            df, "p", "label", by="g", metrics=["ece"]
        ),
        "curve: regression_summary (parquet scan, streaming)": lambda: pc.regression_summary(
            scan, "y", **GAUSS, by="g", metrics=mace
        ).collect(engine="streaming"),
        "curve reference: summary ECE (parquet scan, streaming)": lambda: pc.summary(
            scan, "p", "label", by="g", metrics=["ece"]
        ).collect(engine="streaming"),
        "crps: group_by().agg(pc.crps)": lambda: df.group_by("g").agg(pc.crps("y", **GAUSS)),
        "nll: group_by().agg(pc.nll)": lambda: df.group_by("g").agg(pc.nll("y", **GAUSS)),
        "scores reference: group_by().agg(mean)": lambda: df.group_by("g").agg(pl.col("y").mean()),
    }


def peers(rows: int, repeats: int, python: str, wait: bool) -> dict[str, float]:
    """The peers' times in their own environment, and ours on the same rows."""
    if wait:
        _wait_idle()
    out = subprocess.run(
        [python, "-c", PEERS, str(rows), str(repeats)],
        capture_output=True,
        text=True,
        check=True,
    )
    times: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    rng = np.random.default_rng(0)
    mu, sigma = rng.normal(0, 2, rows), rng.uniform(0.2, 2, rows)
    scale = np.where(np.arange(rows) % 2 == 0, 0.7, 1.4)
    one = pl.DataFrame({"mu": mu, "sigma": sigma, "y": mu + scale * sigma * rng.normal(size=rows)})
    times["pc.mean_absolute_calibration_error"] = best(
        lambda: one.select(pc.mean_absolute_calibration_error("y", **GAUSS)), repeats, wait
    )
    times["pc.ence"] = best(lambda: one.select(pc.ence("y", **GAUSS)), repeats, wait)
    return times


def main() -> None:
    """Run the cases and print a Markdown table of times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-wait", action="store_true")
    parser.add_argument("--peers-python", default=None)
    parser.add_argument("--peer-rows", type=int, default=1_000_000)
    args = parser.parse_args()
    wait = not args.no_wait
    df = data(args.rows, args.groups)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.parquet"
        df.write_parquet(path)
        times = {
            name: best(run, args.repeats, wait)
            for name, run in cases(df, pl.scan_parquet(path)).items()
        }
    print(f"| {args.rows:,} rows, {args.groups} groups | seconds |")
    print("|---|---|")
    for name, seconds in times.items():
        print(f"| {name} | {seconds:.3f} |")
    names = list(times)
    print(f"\ncurve / ECE, in memory: {times[names[0]] / times[names[1]]:.2f}x (target 1.5x)")
    print(f"curve / ECE, streaming scan: {times[names[2]] / times[names[3]]:.2f}x (target 1.5x)")
    for score in names[4:6]:
        print(f"{score} / mean: {times[score] / times[names[6]]:.2f}x (target 1.2x)")
    if args.peers_python:
        print(f"\n| {args.peer_rows:,} rows, one group | seconds |\n|---|---|")
        for name, seconds in peers(args.peer_rows, args.repeats, args.peers_python, wait).items():
            print(f"| {name} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
