"""Recalibration speed (issue 13): fitting Platt per group, and applying a calibrator to a scan.

Two measurements, each side by side in one run, each case in its own process (peak
memory is the process's maximum resident set), started when the CPUs are idle:

fit    Platt per group on ``--rows`` rows (default 10M) in memory, ``--groups`` groups
       (default 100): ``pc.fit_calibrator(df, "p", "y", method="platt", by="g")``
       (its data passes: one check pass plus the largest ``iterations``) against the
       loop a user writes today: ``df.partition_by("g")`` then scikit-learn's
       ``LogisticRegression(penalty=None)`` on ``logit(p)`` per group.
apply  a per-group Platt calibrator applied to a parquet scan of ``--apply-rows`` rows
       (default 100M, written once to ``--dir``), streamed to parquet:
       ``scan.with_columns(p_cal=cal.expr("p")).sink_parquet(...)`` against the same
       query without the column, ``scan.sink_parquet(...)``. Targets: at most 1.5x the
       time, peak memory at most 1 GB.

Run ``python bench/recalibration.py`` on an idle machine (a few minutes; about 1.5 GB of
disk for the 100M-row file); ``--rows 20000 --apply-rows 100000 --groups 10`` is a
seconds-long smoke run. Prints a markdown table for ``docs/performance.md``. Nothing
here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package
from benchmark import _wait_idle  # the same idle wait as the other benchmarks  # noqa: E402

import polars_calib as pc  # noqa: E402

EPS = 2.220446049250313e-16
CHUNK = 10_000_000


def make_frame(rows: int, groups: int, seed: int) -> pl.DataFrame:
    """Probabilities whose miscalibration changes sign, per group a different distortion."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, rows, dtype=np.int32)
    p = rng.random(rows)
    slope = 0.6 + 0.8 * (g / max(groups - 1, 1))  # each group its own Platt map
    logit = np.log(p) - np.log1p(-p)
    rate = 1.0 / (1.0 + np.exp(-(slope * logit + 0.1)))
    y = (rng.random(rows) < rate).astype(np.int8)
    return pl.DataFrame({"g": g, "p": p, "y": y})


def write_scan(directory: Path, rows: int, groups: int) -> Path:
    """The apply benchmark's input: parquet files of up to 10M rows each, written once."""
    target = directory / f"apply_{rows}_{groups}"
    done = target / "_complete"
    if done.exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    for i, start in enumerate(range(0, rows, CHUNK)):
        size = min(CHUNK, rows - start)
        make_frame(size, groups, seed=100 + i).drop("y").write_parquet(target / f"part-{i:03d}.parquet")
    done.touch()
    return target


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(run: object) -> float:
    _wait_idle(limit=10.0)
    start = time.perf_counter()
    run()  # type: ignore[operator]
    return time.perf_counter() - start


def worker(case: str, rows: int, groups: int, directory: Path) -> dict[str, float]:
    if case in ("polars_fit", "sklearn_loop"):
        df = make_frame(rows, groups, seed=0)
        if case == "polars_fit":
            result: dict[str, float] = {}

            def fit() -> None:
                cal = pc.fit_calibrator(df, "p", "y", method="platt", by="g")
                result["passes"] = 1 + float(cal.params["iterations"].max())  # type: ignore[arg-type]

            seconds = _timed(fit)
            return {"seconds": seconds, "peak_mb": _peak_mb(), **result}

        from sklearn.linear_model import LogisticRegression

        def loop() -> None:
            for part in df.partition_by("g"):
                p = np.clip(part["p"].to_numpy(), EPS, 1 - EPS)
                x = (np.log(p) - np.log1p(-p))[:, None]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    LogisticRegression(penalty=None).fit(x, part["y"].to_numpy())

        return {"seconds": _timed(loop), "peak_mb": _peak_mb()}

    source = write_scan(directory, rows, groups)
    train = make_frame(min(rows, 1_000_000), groups, seed=1)
    cal = pc.fit_calibrator(train, "p", "y", method="platt", by="g")
    out = directory / f"out_{case}.parquet"
    scan = pl.scan_parquet(source / "*.parquet")
    query = scan.with_columns(p_cal=cal.expr("p")) if case == "apply" else scan
    _timed(lambda: scan.select(pl.len()).collect())  # page cache warm
    seconds = _timed(lambda: query.sink_parquet(out, engine="streaming"))
    out.unlink(missing_ok=True)
    return {"seconds": seconds, "peak_mb": _peak_mb()}


def measure(case: str, rows: int, groups: int, directory: Path) -> dict[str, float]:
    command = [sys.executable, __file__, "--worker", case, "--rows", str(rows),
               "--groups", str(groups), "--dir", str(directory)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=7200)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return {"seconds": math.nan, "peak_mb": math.nan}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="fit: rows (default 10M)")
    parser.add_argument("--apply-rows", type=int, default=100_000_000,
                        help="apply: rows of the scanned file (default 100M)")  # fmt: skip
    parser.add_argument("--groups", type=int, default=100, help="groups (default 100)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/polars_calib_bench"),
                        help="where the scanned parquet file is written (kept for reruns)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.worker:
        print(json.dumps(worker(args.worker, args.rows, args.groups, args.dir)))
        return

    fit = measure("polars_fit", args.rows, args.groups, args.dir)
    loop = measure("sklearn_loop", args.rows, args.groups, args.dir)
    write_scan(args.dir, args.apply_rows, args.groups)
    plain = measure("plain", args.apply_rows, args.groups, args.dir)
    applied = measure("apply", args.apply_rows, args.groups, args.dir)
    print(f"Platt per group, {args.rows:,} rows x {args.groups} groups, in memory:\n")
    print("| contender | seconds | data passes | peak MB |\n|---|---:|---:|---:|")
    print(f"| `pc.fit_calibrator(method=\"platt\", by=\"g\")` | {fit['seconds']:.2f} | "
          f"{fit.get('passes', math.nan):.0f} | {fit['peak_mb']:.0f} |")  # fmt: skip
    print(f"| `partition_by` + `LogisticRegression` per group | {loop['seconds']:.2f} | | "
          f"{loop['peak_mb']:.0f} |")  # fmt: skip
    print(f"\nspeed-up: {loop['seconds'] / fit['seconds']:.1f}x (target >= 10x)\n")
    print(f"Applying a per-group Platt calibrator to a {args.apply_rows:,}-row parquet scan, "
          "streamed to parquet:\n")  # fmt: skip
    print("| query | seconds | peak MB |\n|---|---:|---:|")
    print(f"| `scan.sink_parquet(out)` | {plain['seconds']:.2f} | {plain['peak_mb']:.0f} |")
    print(f"| `scan.with_columns(p_cal=cal.expr(\"p\")).sink_parquet(out)` | "
          f"{applied['seconds']:.2f} | {applied['peak_mb']:.0f} |")  # fmt: skip
    print(f"\nratio: {applied['seconds'] / plain['seconds']:.2f}x (target <= 1.5x; "
          "peak memory target <= 1024 MB)")


if __name__ == "__main__":
    main()
