"""KS, Kuiper and smooth ECE against ECE alone and against numpy, on 10M rows.

Contenders, each in a fresh worker process on the same in-memory frame (continuous
probabilities with a sign-changing miscalibration, ``--groups`` groups):

ece           ``pc.ece("p", "y")`` alone (the reference cost)
ks_kuiper     ``pc.ks_calibration``, ``pc.kuiper_calibration`` and their two p-values
ece_ks        ECE and the four KS/Kuiper expressions in one query
smooth_ece    ``pc.smooth_ece_summary(df, "p", "y")`` (fine-grid table, then the numpy finisher)
numpy_ks      numpy: argsort, cumsum, ends of ties, the two tails (per group)
relplot       ``relplot.smECE(p, y)`` per group (relplot is numpy)

Run ``python bench/sorted_statistics.py`` (10M rows, one group; ``--groups 100`` for
groups). Each line gives the best of three runs, each after waiting (up to 30 s) for
idle CPUs, and the ratio to ``ece``. ``--rows 20000 --check`` runs each contender once
without waiting: a check that the script runs, not a measurement. Nothing here is a
test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

CONTENDERS = ("ece", "ks_kuiper", "ece_ks", "smooth_ece", "numpy_ks", "relplot")


def make_frame(rows: int, groups: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    p = rng.random(rows)
    rate = np.clip(p + 0.05 * np.sin(2 * math.pi * p), 0.0, 1.0)
    return {
        "g": rng.integers(0, groups, rows),
        "p": p,
        "y": (rng.random(rows) < rate).astype(np.int8),
    }


def _tail_numpy(x: float, kuiper: bool) -> float:
    """The two Brownian-motion tails, from the series (numpy reference of the expressions)."""
    from math import erfc

    if x <= 0:
        return 1.0
    if (x < 2.0) if kuiper else (x < 1.0):
        k = np.arange(12) + 0.5
        if kuiper:
            return float(
                1
                - np.sum(
                    (8 / x**2 + 2 / (k * k * math.pi**2)) * np.exp(-2 * k * k * math.pi**2 / x**2)
                )
            )
        j = np.arange(12)
        return float(
            1
            - 4
            / math.pi
            * np.sum(
                (-1.0) ** j / (2 * j + 1) * np.exp(-((2 * j + 1) ** 2) * math.pi**2 / (8 * x * x))
            )
        )
    if kuiper:
        return 8 * sum((-1) ** (k - 1) * k * 0.5 * erfc(k * x / math.sqrt(2)) for k in range(1, 13))
    return 4 * sum((-1) ** k * 0.5 * erfc((2 * k + 1) * x / math.sqrt(2)) for k in range(12))


def numpy_ks(p: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    order = np.argsort(p, kind="stable")
    ps, gaps = p[order], (y[order] - p[order])
    path = np.cumsum(gaps) / len(p)
    ends = np.append(ps[1:] != ps[:-1], True)
    path = np.concatenate([[0.0], path[ends]])
    sd = math.sqrt(np.sum(p * (1 - p))) / len(p)
    ks, kuiper = float(np.abs(path).max()), float(path.max() - path.min())
    return ks, kuiper, _tail_numpy(ks / sd, False), _tail_numpy(kuiper / sd, True)


def _per_group(data: dict[str, np.ndarray], function: object) -> list[object]:
    g = data["g"]
    order = np.argsort(g, kind="stable")
    bounds = np.flatnonzero(np.diff(g[order])) + 1
    return [
        function(data["p"][idx], data["y"][idx].astype(float))  # type: ignore[operator]
        for idx in np.split(order, bounds)
    ]


def worker(contender: str, rows: int, groups: int, check: bool) -> dict[str, float]:
    import polars as pl

    import polars_calib as pc

    data = make_frame(rows, groups)
    df = pl.DataFrame(data)
    ks = {
        "ks": pc.ks_calibration("p", "y"),
        "ks_p": pc.ks_calibration_p("p", "y"),
        "kuiper": pc.kuiper_calibration("p", "y"),
        "kuiper_p": pc.kuiper_calibration_p("p", "y"),
    }

    def query(**exprs: pl.Expr) -> object:
        return df.group_by("g").agg(**exprs) if groups > 1 else df.select(**exprs)

    runs = {
        "ece": lambda: query(ece=pc.ece("p", "y")),
        "ks_kuiper": lambda: query(**ks),
        "ece_ks": lambda: query(ece=pc.ece("p", "y"), **ks),
        "smooth_ece": lambda: pc.smooth_ece_summary(df, "p", "y", by="g" if groups > 1 else None),
        "numpy_ks": lambda: _per_group(data, numpy_ks),
        "relplot": lambda: _per_group(data, _relplot),
    }
    from benchmark import _wait_idle

    if contender == "relplot":
        import relplot  # noqa: F401  (seaborn and pandas: seconds to import, not timed)

    best = math.inf
    for _ in range(1 if check else 3):
        if not check:
            _wait_idle()
        start = time.perf_counter()
        runs[contender]()
        best = min(best, time.perf_counter() - start)
    return {"seconds": best}


def _relplot(p: np.ndarray, y: np.ndarray) -> object:
    import relplot

    return relplot.smECE(p, y, return_width=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=1)
    parser.add_argument("--only", nargs="*", choices=CONTENDERS, default=list(CONTENDERS))
    parser.add_argument("--check", action="store_true", help="one run each, no idle wait")
    parser.add_argument("--worker", metavar="CONTENDER")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.rows, args.groups, args.check)))
        return
    reference = None
    print("| rows | groups | contender | seconds | × ECE |")
    print("|---|---|---|---|---|")
    for contender in ["ece", *(c for c in args.only if c != "ece")]:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                contender,
                "--rows",
                str(args.rows),
                "--groups",
                str(args.groups),
                *(["--check"] if args.check else []),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        seconds = json.loads(out)["seconds"]
        reference = reference or seconds
        print(
            f"| {args.rows:,} | {args.groups} | {contender} | {seconds:.3f} | "
            f"{seconds / reference:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
