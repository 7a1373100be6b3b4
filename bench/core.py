"""The rebuilt core against what a user would write instead (issue 22), side by side.

Three runs, each in one process, contenders interleaved (round-robin, best of
``--repeats``), 15 right-closed bins, ECE per group:

``speed``      the frame form (``pc.summary(..., metrics=["ece"])``), the expression
               form (``group_by(keys).agg(pc.ece(...))``), the query a Polars user writes
               by hand (``ceil(p * B)`` bins clipped to ``1..B``, ``group_by`` over
               (keys, bin) with ``len``, ``sum(p)``, ``sum(y)``, then the weighted
               absolute gap), the same query in DuckDB SQL, and numpy ``bincount``, on
               10M rows in memory with one group and with 10,000 string groups, and on
               a 100M-row parquet file with 100 groups in the streaming engine;
``bootstrap``  ``pc.summary(..., confidence=0.9, n_resamples=R)`` (a Poisson bootstrap
               with the counter-based draws) against a vectorised numpy Poisson
               bootstrap of the same rows (per replicate ``rng.poisson(1, n)`` and
               ``bincount`` of ``k``, ``k p``, ``k y`` per (group, bin), ECE per group,
               percentiles), at 1M and 10M rows;
``memory``     peak resident memory of the bootstrap from a parquet scan in the
               streaming engine (100 groups), each row count in a fresh process, so
               that the figures show how the peak grows with rows.

Ratios are to the hand-written Polars query (speed) and to numpy (bootstrap). Run
``python bench/core.py speed`` (several minutes on 2 cores: it writes the 100M-row file
under ``bench/data`` once), ``python bench/core.py bootstrap``, ``python bench/core.py
memory``; ``--rows`` and ``--repeats`` make a smoke run. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

import polars_calib as pc

N_BINS = 15
DATA = Path(__file__).resolve().parent / "data"


def frame(rows: int, groups: int, seed: int = 0) -> pl.DataFrame:
    """Probabilities with miscalibration that changes sign; integer and string groups."""
    rng = np.random.default_rng(seed)
    p = rng.random(rows)
    rate = np.clip(p + 0.25 * np.sin(2 * math.pi * p), 0.0, 1.0)
    g = rng.integers(0, groups, rows, dtype=np.int32)
    df = pl.DataFrame({"g": g, "p": p, "y": (rng.random(rows) < rate).astype(np.int8)})
    return df.with_columns(s=pl.format("segment-{}", pl.col("g")))


def parquet(rows: int, groups: int) -> Path:
    """A parquet file of `rows` rows (written once, in chunks of 10M rows)."""
    path = DATA / f"core_{rows}_{groups}.parquet"
    if not path.exists():
        DATA.mkdir(exist_ok=True)
        step = 10_000_000
        parts = [
            frame(min(step, rows - start), groups, seed=start).drop("s")
            for start in range(0, rows, step)
        ]
        pl.concat(parts).write_parquet(path, row_group_size=1_000_000)
    return path


def hand_written(keys: list[str]) -> Callable[[pl.LazyFrame], pl.LazyFrame]:
    """The ECE query a Polars user writes: bins, sums per (keys, bin), weighted gap."""
    bin_ = (pl.col("p") * N_BINS).ceil().clip(1, N_BINS).alias("bin")

    def query(lf: pl.LazyFrame) -> pl.LazyFrame:
        sums = lf.group_by(*keys, bin_).agg(
            pl.len().alias("n"), pl.col("p").sum().alias("sp"), pl.col("y").sum().alias("sy")
        )
        gap = (pl.col("sy") - pl.col("sp")).abs().sum() / pl.col("n").sum()
        return sums.group_by(keys).agg(gap.alias("ece")) if keys else sums.select(gap.alias("ece"))

    return query


def duckdb_sql(keys: list[str], source: str) -> str:
    """The same query in DuckDB SQL over `source` (a table name or read_parquet(...))."""
    by = ", ".join(keys)
    inner_keys = f"{by}, " if keys else ""
    outer = f"SELECT {by}, " if keys else "SELECT "
    group = f" GROUP BY {by}" if keys else ""
    return (
        f"{outer}sum(abs(sy - sp)) / sum(n) AS ece FROM ("
        f"SELECT {inner_keys}least(greatest(ceil(p * {N_BINS}), 1), {N_BINS}) AS b, "
        f"count(*) AS n, sum(p) AS sp, sum(y) AS sy FROM {source} "
        f"GROUP BY {inner_keys}b){group}"
    )


def numpy_ece(g: np.ndarray | None, p: np.ndarray, y: np.ndarray, groups: int) -> np.ndarray:
    """ECE per group with ``bincount`` over (group, bin) cells."""
    bins = np.clip(np.ceil(p * N_BINS).astype(np.int64), 1, N_BINS) - 1
    cells = bins if g is None else g.astype(np.int64) * N_BINS + bins
    size = groups * N_BINS
    n = np.bincount(cells, minlength=size).reshape(groups, N_BINS)
    sp = np.bincount(cells, weights=p, minlength=size).reshape(groups, N_BINS)
    sy = np.bincount(cells, weights=y, minlength=size).reshape(groups, N_BINS)
    return np.abs(sy - sp).sum(axis=1) / n.sum(axis=1)


def interleaved(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best time of each run, the runs taken in turn `repeats` times."""
    best = dict.fromkeys(runs, math.inf)
    for _ in range(repeats):
        for name, run in runs.items():
            if best[name] > 10.0 and best[name] < math.inf:
                continue  # a contender 10x slower than the rest is timed once (np.unique)
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def speed_cases(rows: int, big_rows: int) -> list[tuple[str, dict[str, Callable[[], object]]]]:
    """The three cases of the speed table, each a dict of contenders."""
    import duckdb

    cases = []
    df = frame(rows, 10_000)
    con = duckdb.connect()
    con.register("log", df.to_arrow())
    p, y = (df[c].to_numpy() for c in ("p", "y"))
    y = y.astype(np.float64)
    for label, keys in (
        (f"{rows:,} rows in memory, 1 group", []),
        (f"{rows:,} rows in memory, 10k string groups", ["s"]),
    ):
        hand = hand_written(keys)
        by = keys or None
        runs: dict[str, Callable[[], object]] = {
            "hand-written Polars": lambda hand=hand: hand(df.lazy()).collect(),
            "frame form": lambda by=by: pc.summary(df, "p", "y", by=by, metrics=["ece"]),
            "expression form": (
                (lambda: df.group_by(keys).agg(pc.ece("p", "y")))
                if keys
                else (lambda: df.select(pc.ece("p", "y")))
            ),
            "DuckDB SQL": lambda keys=keys: con.sql(duckdb_sql(keys, "log")).fetchall(),
        }
        if keys:

            def unique_then_bincount() -> object:
                codes = np.unique(df["s"].to_numpy(), return_inverse=True)[1]
                return numpy_ece(codes, p, y, int(codes.max()) + 1)

            runs["numpy (np.unique + bincount)"] = unique_then_bincount
        else:
            runs["numpy bincount"] = lambda: numpy_ece(None, p, y, 1)
        cases.append((label, runs))
    path = parquet(big_rows, 100)
    scan = pl.scan_parquet(path)
    hand = hand_written(["g"])
    streaming = {"engine": "streaming"}
    cases.append(
        (
            f"{big_rows:,}-row parquet, 100 groups, streaming",
            {
                "hand-written Polars": lambda: hand(scan).collect(**streaming),
                "frame form": lambda: pc.summary(scan, "p", "y", by="g", metrics=["ece"]).collect(
                    **streaming
                ),
                "expression form": lambda: (
                    scan.group_by("g").agg(pc.ece("p", "y")).collect(**streaming)
                ),
                "DuckDB SQL": lambda: con.sql(
                    duckdb_sql(["g"], f"read_parquet('{path}')")
                ).fetchall(),
            },
        )
    )
    return cases


def speed(args: argparse.Namespace) -> None:
    for label, runs in speed_cases(args.rows, args.big_rows):
        best = interleaved(runs, args.repeats)
        base = best["hand-written Polars"]
        print(f"\n{label}")
        for name, seconds in best.items():
            print(f"  {name:32s} {seconds:8.3f} s  {seconds / base:6.2f}x")


def numpy_bootstrap(df: pl.DataFrame, replicates: int, groups: int) -> np.ndarray:
    """A vectorised numpy Poisson bootstrap of ECE per group, with 90% intervals."""
    rng = np.random.default_rng(0)
    p, y = df["p"].to_numpy(), df["y"].to_numpy().astype(np.float64)
    bins = np.clip(np.ceil(p * N_BINS).astype(np.int64), 1, N_BINS) - 1
    cells = df["g"].to_numpy().astype(np.int64) * N_BINS + bins
    size = groups * N_BINS
    eces = np.empty((replicates, groups))
    for r in range(replicates):
        k = rng.poisson(1.0, len(p)).astype(np.float64)
        n = np.bincount(cells, weights=k, minlength=size).reshape(groups, N_BINS)
        sp = np.bincount(cells, weights=k * p, minlength=size).reshape(groups, N_BINS)
        sy = np.bincount(cells, weights=k * y, minlength=size).reshape(groups, N_BINS)
        eces[r] = np.abs(sy - sp).sum(axis=1) / n.sum(axis=1)
    return np.percentile(eces, [5, 95], axis=0)


def bootstrap(args: argparse.Namespace) -> None:
    for rows in args.bootstrap_rows:
        df = frame(rows, 100).drop("s")
        runs = {
            "numpy": lambda df=df: numpy_bootstrap(df, args.replicates, 100),
            "polars_calib": lambda df=df: pc.summary(
                df,
                "p",
                "y",
                by="g",
                metrics=["ece"],
                confidence=0.9,
                n_resamples=args.replicates,
            ),
        }
        best = interleaved(runs, args.repeats)
        print(f"\n{rows:,} rows, 100 groups, {args.replicates} replicates")
        for name, seconds in best.items():
            print(f"  {name:14s} {seconds:8.2f} s  {seconds / best['numpy']:6.2f}x")


def _peak_child(path: str, replicates: int) -> None:
    """One bootstrap from a parquet scan in the streaming engine; print its peak."""
    start = time.perf_counter()
    pc.summary(
        pl.scan_parquet(path),
        "p",
        "y",
        by="g",
        metrics=["ece"],
        confidence=0.9,
        n_resamples=replicates,
    ).collect(engine="streaming")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak}))


def memory(args: argparse.Namespace) -> None:
    print(f"bootstrap of a parquet scan, 100 groups, {args.replicates} replicates, streaming")
    for rows in args.memory_rows:
        path = parquet(rows, 100)
        out = subprocess.run(
            [sys.executable, __file__, "_peak", str(path), str(args.replicates)],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"  {rows:>12,} rows  {result['seconds']:8.1f} s  peak {result['peak_mb']:7.0f} MB")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_peak":
        _peak_child(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", choices=["speed", "bootstrap", "memory"])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--big-rows", type=int, default=100_000_000)
    parser.add_argument("--bootstrap-rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument(
        "--memory-rows", type=int, nargs="+", default=[1_000_000, 4_000_000, 10_000_000]
    )
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    {"speed": speed, "bootstrap": bootstrap, "memory": memory}[args.run](args)


if __name__ == "__main__":
    main()
