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

``--memory`` measures peak memory instead (issue 22: flat as rows grow), on parquet
files of ``--rows`` rows (10M, 20M and 40M by default) written once under ``--dir``
(``/tmp/audit_bench``, zstd): five String attributes of ten values each, probabilities
with miscalibration that changes sign, Bernoulli outcomes. Each contender runs in a
fresh process on a scan of the file, and reports its peak RSS (data included) and time:

audit        ``pc.audit(pl.scan_parquet(path), "p", "y", by=<the five>,
             n_resamples=None)`` (``max_order=2``: 1,051 slices, ECE and Brier)
audit, R     the same with ``n_resamples=R`` (only when asked: ``--memory-resamples R``):
             bootstrap intervals, the replicates summed per slice (1,051 slices x 15
             bins x R rows), aggregated a few replicates over a batch of rows at a time
hand         what a user writes instead: per attribute set (the overall population,
             each attribute, each pair: 16 sets), a Polars ``group_by`` over (the set,
             the ``ceil(p * 15)`` bin) with ``len``, ``sum(p)``, ``sum(y)`` and the
             squared errors, then ECE and Brier per slice; each query collected with
             ``engine="streaming"`` (16 reads), or the 16 at once with
             ``pl.collect_all`` (one read, the scan cached)

``--batch-rows N`` passes ``batch_rows=N`` to the audits (several batches at small
sizes); ``--contenders`` runs only some of them; ``--max-mb M`` stops a contender whose
RSS passes M MB (polled every 0.2 s; reported as "> M"), for a "before" that would
exhaust the machine.

``python bench/audit.py --memory --rows 10000000 20000000 40000000`` reproduces the
figures of docs/performance.md ("Audit memory"); ``python bench/audit.py --memory --rows
2000000 4000000 8000000 --memory-resamples 64 --batch-rows 1000000 --contenders audit
replicates`` those of its intervals.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import math
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))

from benchmark import _wait_idle  # the same idle wait as the full benchmark

import polars_calib as pc

N_BINS = 15
BY = ["sex", "age_band", "region"]
METRICS = ["ece", "brier"]
MEMORY_BY = ["region", "product", "channel", "device", "cohort"]
MEMORY_ROWS = [10_000_000, 20_000_000, 40_000_000]
CHUNK = 5_000_000


def data(rows: int, seed: int = 0) -> pl.DataFrame:
    """The log: model, sex, age_band, region, p, y (women aged 65+ under-predicted)."""
    rng = np.random.default_rng(seed)
    p = rng.random(rows)
    sex = rng.integers(0, 2, rows)
    age = rng.integers(0, 4, rows)
    rate = p + 0.15 * np.sin(2 * math.pi * p) + np.where((sex == 0) & (age == 3), 0.15, 0.0)
    y = (rng.random(rows) < np.clip(rate, 0.0, 1.0)).astype(np.int8)
    return pl.DataFrame(
        {
            "model": pl.Series(rng.choice(["baseline", "candidate"], rows)),
            "sex": pl.Series(np.array(["F", "M"])[sex]),
            "age_band": pl.Series(np.array(["18-29", "30-49", "50-64", "65+"])[age]),
            "region": pl.Series(np.array(["north", "south", "west"])[rng.integers(0, 3, rows)]),
            "p": p,
            "y": y,
        }
    )


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


def timing(rows: int, resamples: int, repeats: int) -> None:
    """Time the audit against one summary and fairlearn, and print the figures."""
    df = data(rows)
    intervals: dict[str, Any] = {}
    if "n_resamples" in inspect.signature(pc.audit).parameters:
        intervals = {"confidence": 0.95, "n_resamples": resamples, "seed": 0}
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
                metrics={"ece": ece, "brier": brier},
                y_true=pandas["y"],
                y_pred=pandas["p"],
                sensitive_features=pandas[attributes],
            ).by_group
            for attributes in sets
        ]

    times = {
        "audit": best(audit, repeats),
        "summary": best(summary, repeats),
        "audit, no intervals": best(audit_points, repeats),
        "fairlearn": best(fairlearn, repeats),
    }
    label = f"{resamples} replicates" if intervals else "no intervals (not in this build)"
    print(f"{rows:,} rows, by {BY}, max_order=3, metrics {METRICS}, intervals: {label}")
    for name, seconds in times.items():
        print(f"  {name:<22} {seconds:8.3f} s")
    print(f"  audit / summary        {times['audit'] / times['summary']:8.2f}x  (target <= 2x)")
    print(
        f"  fairlearn / audit      {times['fairlearn'] / times['audit, no intervals']:8.2f}x"
        "  (both point estimates, 7 attribute sets)"
    )


# -- memory (issue 22): peak RSS as rows grow, each contender in a fresh process -------------


def write_memory_data(rows: int, directory: Path) -> Path:
    """The parquet file of `rows` rows (written once, in chunks, zstd)."""
    path = directory / f"audit_{rows}.parquet"
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(rows)
    parts = []
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        p = rng.random(n)
        rate = np.clip(p + 0.15 * np.sin(2 * math.pi * p), 0.0, 1.0)
        columns = {
            name: pl.Series(np.array([f"{name}_{i}" for i in range(10)])[rng.integers(0, 10, n)])
            for name in MEMORY_BY
        }
        part = directory / f"part_{rows}_{start}.parquet"
        pl.DataFrame(
            {**columns, "p": p, "y": (rng.random(n) < rate).astype(np.int8)}
        ).write_parquet(part, compression="zstd")
        parts.append(part)
    pl.scan_parquet(parts).sink_parquet(path, compression="zstd")
    for part in parts:
        part.unlink()
    return path


def hand_written(lf: pl.LazyFrame, together: bool) -> list[pl.DataFrame]:
    """ECE and Brier per slice of every attribute set up to pairs, as a user writes it.

    One query per attribute set, each collected by the streaming engine; `together`:
    the 16 queries collected at once (``pl.collect_all``, whose shared scan Polars
    caches).
    """
    binned = lf.with_columns(pl.col("p").mul(N_BINS).ceil().clip(1, N_BINS).alias("bin"))
    sets = [list(s) for order in (0, 1, 2) for s in itertools.combinations(MEMORY_BY, order)]
    queries = []
    for subset in sets:
        bins = binned.group_by(*subset, "bin").agg(
            pl.len().alias("n"),
            pl.col("p").sum().alias("sum_p"),
            pl.col("y").sum().alias("sum_y"),
            ((pl.col("p") - pl.col("y")) ** 2).sum().alias("sum_sq"),
        )
        totals = [
            (pl.col("sum_y") - pl.col("sum_p")).abs().sum().truediv(pl.col("n").sum()).alias("ece"),
            (pl.col("sum_sq").sum() / pl.col("n").sum()).alias("brier"),
        ]
        queries.append(bins.group_by(subset).agg(totals) if subset else bins.select(totals))
    if together:
        return pl.collect_all(queries, engine="streaming")
    return [query.collect(engine="streaming") for query in queries]


def memory_worker(
    contender: str, path: str, resamples: int, batch_rows: int | None
) -> dict[str, float]:
    """One run of `contender` on a scan of `path`: seconds and peak RSS in MB."""
    lf = pl.scan_parquet(path)
    start = time.perf_counter()
    if contender in ("hand", "hand_all"):
        hand_written(lf, together=contender == "hand_all")
    else:
        n_resamples = None if contender == "audit" else resamples
        batches = {} if batch_rows is None else {"batch_rows": batch_rows}
        pc.audit(lf, "p", "y", by=MEMORY_BY, n_bins=N_BINS, n_resamples=n_resamples, **batches)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_worker(command: list[str], max_mb: float | None) -> str | None:
    """Run a worker; return its output, or ``None`` if it failed or passed `max_mb` of RSS."""
    import psutil

    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as run:
        watched = psutil.Process(run.pid)
        while run.poll() is None:
            try:
                rss = watched.memory_info().rss / 2**20
            except psutil.NoSuchProcess:
                break
            if max_mb is not None and rss > max_mb:
                run.kill()
                run.wait()
                return None
            time.sleep(0.2)
        out, err = run.communicate()
    if run.returncode != 0:
        print(err[-2000:], file=sys.stderr)
        return None
    return out


def memory(
    rows: list[int],
    directory: Path,
    resamples: int | None,
    batch_rows: int | None = None,
    only: list[str] | None = None,
    max_mb: float | None = None,
) -> None:
    """Peak RSS of each contender per row count, each in a fresh process; print a table."""
    contenders = {"audit": "audit"}
    if resamples:
        contenders[f"audit, {resamples} replicates"] = "replicates"
    contenders |= {"hand-written, a query per set": "hand", "hand-written, collect_all": "hand_all"}
    if only:
        contenders = {label: name for label, name in contenders.items() if name in only}
    print("| rows | contender | seconds | peak RSS MB |")
    print("|---:|---|---:|---:|")
    for n in rows:
        path = write_memory_data(n, directory)
        for label, contender in contenders.items():
            _wait_idle(limit=10.0)
            command = [
                sys.executable,
                __file__,
                "--worker",
                contender,
                str(path),
                str(resamples or 0),
                str(batch_rows or 0),
            ]
            out = run_worker(command, max_mb)
            if out is None:
                print(f"| {n:,} | {label} | — | > {max_mb:,.0f} or failed |", flush=True)
                continue
            result = json.loads(out.strip().splitlines()[-1])
            print(
                f"| {n:,} | {label} | {result['seconds']:.2f} | {result['peak_mb']:,.0f} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", type=int, nargs="+", help="row counts (default: 10M; memory: 10M 20M 40M)"
    )
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap replicates")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory", action="store_true", help="peak memory from parquet scans")
    parser.add_argument(
        "--memory-resamples", type=int, help="also the audit with this many replicates"
    )
    parser.add_argument("--batch-rows", type=int, help="the audits' `batch_rows` (memory)")
    parser.add_argument(
        "--contenders",
        nargs="+",
        choices=["audit", "replicates", "hand", "hand_all"],
        help="run only these (memory; default: all)",
    )
    parser.add_argument("--max-mb", type=float, help="stop a contender past this RSS (memory)")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/audit_bench"), help="data files")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        contender, path, resamples, batch_rows = args.worker
        result = memory_worker(contender, path, int(resamples), int(batch_rows) or None)
        print(json.dumps(result))
    elif args.memory:
        memory(
            args.rows or MEMORY_ROWS,
            args.dir,
            args.memory_resamples,
            args.batch_rows,
            args.contenders,
            args.max_mb,
        )
    else:
        for rows in args.rows or [10_000_000]:
            timing(rows, args.resamples, args.repeats)


if __name__ == "__main__":
    main()
