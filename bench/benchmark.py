"""Side-by-side benchmark: polars_calib against numpy, scikit-learn and a floor query.

Every contender computes binary ECE (15 right-closed equal-width bins) on the same data
in the same run; grouped cases compute it per group. Each measurement runs in a fresh
worker process (``--worker``), so its peak memory is its own; the data are written once
to parquet files under ``bench/data/`` (not committed) with miscalibration that changes
sign across [0, 1].

Contenders
----------
expression  ``pl.col("p").calib.ece("y")`` in ``select`` / ``group_by().agg``
frame       ``pc.summary(..., metrics=["ece"])`` (two-stage: bin statistics, then finish)
numpy       ``np.bincount`` over the bin index (or group x bin), the code a user would write
sklearn     ``calibration_curve`` per group, ECE from its per-bin output (1 and 100 groups)
floor       a query that only reads the columns: sums of p and y (per group when grouped)

The multi-class case (K = 10 classes) times classwise ECE: the expression
``pc.classwise_ece``, the frame form ``pc.summary(..., reduction="classwise")`` and a
numpy loop of one ``bincount`` per class. ``bench/multiclass_scale.py`` measures
K = 1000 classes x 1M rows from a parquet scan.

Each binary measurement is the best of three runs (two at 100M rows); each run starts
when the CPUs are idle (the machine may be shared), and a scanned file is read once
beforehand, so every contender scans it from the page cache.

Run ``python bench/benchmark.py`` (about 3 minutes on 2 cores; ``--quick`` for 1M and
10M rows only); it prints each time, the ratios and peak memory, and rewrites the table
in ``docs/performance.md``. Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
DOC = ROOT / "docs" / "performance.md"
N_BINS = 15
CHUNK = 10_000_000


# -- data --------------------------------------------------------------------------------


def data_path(rows: int, groups: int) -> Path:
    return DATA / f"log_{rows}_{groups}.parquet"


def write_data(rows: int, groups: int) -> Path:
    import polars as pl

    path = data_path(rows, groups)
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    parts = []
    rng = np.random.default_rng(rows + groups)
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        p = rng.random(n)
        rate = np.clip(p + 0.25 * np.sin(2 * math.pi * p), 0.0, 1.0)
        part = DATA / f"tmp_{rows}_{groups}_{start}.parquet"
        pl.DataFrame(
            {
                "g": rng.integers(0, groups, n, dtype=np.int32),
                "day": (np.arange(start, start + n) * 30 // rows).astype(np.int32),
                "p": p,
                "y": (rng.random(n) < rate).astype(np.int8),
            }
        ).write_parquet(part)
        parts.append(part)
    pl.scan_parquet(parts).sink_parquet(path)
    for part in parts:
        part.unlink()
    return path


# -- contenders (run inside a worker process) -----------------------------------------------


def _numpy_bins(p: np.ndarray) -> np.ndarray:
    # The code a user would write: right-closed bins through ceil, clipped.
    return np.clip(np.ceil(p * N_BINS).astype(np.int64) - 1, 0, N_BINS - 1)


def run_numpy(p: np.ndarray, y: np.ndarray, g: np.ndarray | None, groups: int) -> object:
    bins = _numpy_bins(p)
    key = bins if g is None else g.astype(np.int64) * N_BINS + bins
    size = N_BINS * (1 if g is None else groups)
    gap = np.bincount(key, weights=y - p, minlength=size).reshape(-1, N_BINS)
    count = np.bincount(key, minlength=size).reshape(-1, N_BINS)
    return np.abs(gap).sum(axis=1) / count.sum(axis=1)


def run_sklearn(p: np.ndarray, y: np.ndarray, g: np.ndarray | None, groups: int) -> object:
    from sklearn.calibration import calibration_curve

    def one(pp: np.ndarray, yy: np.ndarray) -> float:
        observed, predicted = calibration_curve(yy, pp, n_bins=N_BINS)
        # calibration_curve drops empty bins; its bins are right-closed like ours.
        counts = np.bincount(_numpy_bins(pp), minlength=N_BINS)
        counts = counts[counts > 0]
        return float(np.sum(counts * np.abs(observed - predicted)) / len(pp))

    if g is None:
        return one(p, y)
    order = np.argsort(g, kind="stable")
    bounds = np.searchsorted(g[order], np.arange(groups + 1))
    return [one(p[order[a:b]], y[order[a:b]]) for a, b in pairwise(bounds)]


def polars_query(contender: str, source: object, grouped: bool, by_day: bool) -> object:
    import polars as pl

    import polars_calib as pc

    lf = source if isinstance(source, pl.LazyFrame) else source.lazy()
    keys = ["g", "day"] if by_day else ["g"] if grouped else []
    if contender == "expression":
        ece = pl.col("p").calib.ece("y", n_bins=N_BINS)
        return lf.group_by(keys).agg(ece) if keys else lf.select(ece)
    if contender == "frame":
        return pc.summary(lf, "p", "y", by=keys or None, n_bins=N_BINS, metrics=["ece"])
    if contender == "floor":
        sums = [pl.col("p").sum(), pl.col("y").cast(pl.Int64).sum()]
        return lf.group_by(keys).agg(sums) if keys else lf.select(sums)
    raise ValueError(contender)


def _wait_idle(threshold: float = 0.9, window: float = 0.25, limit: float = 30.0) -> None:
    """Wait (up to `limit` seconds) until the CPUs are idle: the machine may be shared.

    Reads the idle share of all CPUs from /proc/stat over `window` seconds; on a
    system without it, returns at once.
    """

    def idle() -> tuple[int, int]:
        with open("/proc/stat") as stat:
            ticks = [int(field) for field in stat.readline().split()[1:]]
        return ticks[3] + ticks[4], sum(ticks)

    try:
        deadline = time.perf_counter() + limit
        while time.perf_counter() < deadline:
            idle0, total0 = idle()
            time.sleep(window)
            idle1, total1 = idle()
            if total1 > total0 and (idle1 - idle0) / (total1 - total0) >= threshold:
                return
    except OSError:
        return


def _warm(path: Path) -> None:
    """Read the file once, in chunks, so that every contender scans it from the page cache."""
    with path.open("rb") as file:
        while file.read(1 << 24):
            pass


def worker(contender: str, rows: int, groups: int, mode: str, by_day: bool) -> dict[str, float]:
    """Best of up to three runs (two for 100M rows), after loading the data.

    Each run starts when the CPUs are idle (see :func:`_wait_idle`); a scanned file
    is read once beforehand (see :func:`_warm`).
    """
    import polars as pl

    path = data_path(rows, groups)
    grouped = groups > 1
    repeats = 1 if contender == "sklearn" else 2 if rows >= 100_000_000 else 3
    if contender in ("numpy", "sklearn"):
        df = pl.read_parquet(path)
        p, y = df["p"].to_numpy(), df["y"].to_numpy().astype(np.float64)
        g = df["g"].to_numpy() if grouped else None
        del df
        function = run_numpy if contender == "numpy" else run_sklearn

        def run() -> object:
            return function(p, y, g, groups)

    elif mode == "memory":
        df = pl.read_parquet(path)

        def run() -> object:
            query = polars_query(contender, df, grouped, by_day)
            # Polars 2.1's default engine (streaming) on data already in memory.
            return query.collect() if isinstance(query, pl.LazyFrame) else query

    else:
        _warm(path)

        def run() -> object:
            query = polars_query(contender, pl.scan_parquet(path), grouped, by_day)
            return query.collect(engine="streaming") if isinstance(query, pl.LazyFrame) else query

    base = _peak_mb()
    times = []
    for _ in range(repeats):
        _wait_idle()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return {"seconds": min(times), "peak_mb": _peak_mb(), "extra_mb": _peak_mb() - base}


def multiclass_worker(contender: str, rows: int, classes: int) -> dict[str, float]:
    """Classwise ECE on a probability vector column: polars_calib against numpy."""
    import polars as pl

    import polars_calib as pc

    rng = np.random.default_rng(0)
    logits = rng.normal(0.0, 2.0, (rows, classes))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    # Labels from sharpened probabilities: under-confident low, over-confident high.
    sharp = probs**1.5 / (probs**1.5).sum(axis=1, keepdims=True)
    labels = (sharp.cumsum(axis=1) < rng.random((rows, 1))).sum(axis=1).clip(0, classes - 1)
    if contender == "numpy":

        def run() -> object:
            total = 0.0
            for j in range(classes):
                pj = probs[:, j]
                bins = _numpy_bins(pj)
                gap = np.bincount(bins, weights=(labels == j) - pj, minlength=N_BINS)
                total += np.abs(gap).sum() / rows
            return total / classes

    else:
        df = pl.DataFrame({"p": probs, "y": labels})
        del logits, sharp

        if contender == "expression":

            def run() -> object:
                return df.lazy().select(pc.classwise_ece("p", "y", n_bins=N_BINS)).collect()

        else:

            def run() -> object:
                return pc.summary(
                    df, "p", "y", reduction="classwise", n_bins=N_BINS, metrics=["ece"]
                )

    base = _peak_mb()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_mb": _peak_mb(), "extra_mb": _peak_mb() - base}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- orchestration -----------------------------------------------------------------------


def measure(
    contender: str, rows: int, groups: int, mode: str, by_day: bool = False
) -> dict[str, float]:
    command = [sys.executable, __file__, "--worker", contender, str(rows), str(groups), mode]
    if by_day:
        command.append("--by-day")
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return {"seconds": math.nan, "peak_mb": math.nan, "extra_mb": math.nan}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def cases(quick: bool) -> list[tuple[int, int, str, bool, list[str]]]:
    """(rows, groups, mode, by_day, contenders) for every row of the report."""
    sizes = [1_000_000, 10_000_000] if quick else [1_000_000, 10_000_000, 100_000_000]
    out = []
    for rows in sizes:
        for groups in (1, 100, 10_000) if rows < 100_000_000 else (100,):
            in_memory = ["floor", "expression", "frame", "numpy"]
            if groups <= 100 and rows <= 10_000_000:
                in_memory.append("sklearn")
            if rows < 100_000_000:
                out.append((rows, groups, "memory", False, in_memory))
            out.append((rows, groups, "streaming", False, ["floor", "expression", "frame"]))
        if rows == sizes[-1]:
            out.append((rows, 100, "streaming", True, ["floor", "expression", "frame"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M and 10M rows only")
    parser.add_argument("--worker", nargs=4, metavar=("CONTENDER", "ROWS", "GROUPS", "MODE"))
    parser.add_argument("--by-day", action="store_true")
    args = parser.parse_args()
    if args.worker and args.worker[3] == "multiclass":
        contender, rows, classes, _ = args.worker
        print(json.dumps(multiclass_worker(contender, int(rows), int(classes))))
        return
    if args.worker:
        contender, rows, groups, mode = args.worker
        print(json.dumps(worker(contender, int(rows), int(groups), mode, args.by_day)))
        return
    lines = []
    for rows, groups, mode, by_day, contenders in cases(args.quick):
        write_data(rows, groups)
        results = {c: measure(c, rows, groups, mode, by_day) for c in contenders}
        reference = (
            results["numpy"]["seconds"] if "numpy" in results else results["floor"]["seconds"]
        )
        label = "numpy" if "numpy" in results else "floor"
        keys = "model×day" if by_day else f"{groups:,} groups"
        for contender, r in results.items():
            line = (
                f"| {rows:,} | {keys} | {mode} | {contender} | {r['seconds']:.3f} | "
                f"{r['seconds'] / reference:.2f}× {label} | {r['peak_mb']:,.0f} |"
            )
            print(line, flush=True)
            lines.append(line)
    for rows in [1_000_000] if args.quick else [1_000_000, 10_000_000]:
        contenders = ("numpy", "frame", "expression")
        results = {c: measure(c, rows, 10, "multiclass") for c in contenders}
        reference = results["numpy"]["seconds"]
        for contender, r in results.items():
            line = (
                f"| {rows:,} | K = 10, classwise | memory | {contender} | {r['seconds']:.3f} | "
                f"{r['seconds'] / reference:.2f}× numpy | {r['peak_mb']:,.0f} |"
            )
            print(line, flush=True)
            lines.append(line)
    write_doc(lines)


def write_doc(lines: list[str]) -> None:
    header = DOC.read_text().split("<!-- results -->")[0] if DOC.exists() else "# Performance\n\n"
    table = [
        "<!-- results -->",
        "",
        "| rows | grouping | engine | contender | seconds | ratio | peak RSS MB |",
        "|---:|---|---|---|---:|---:|---:|",
        *lines,
        "",
    ]
    DOC.write_text(header + "\n".join(table))


if __name__ == "__main__":
    main()
