"""Calibration of Gaussian predictions against what a user would run instead (issue 25).

Targets (issue 25, "Speed"), on 10M rows and 100 groups of Gaussian predictions:

curve       ``pc.regression_summary(df, "y", mean=, std=, by="g", metrics=[MACE])``, the
            100-level calibration curve: at most 1.5x the binary ECE frame form
            ``pc.summary(df, "p", "label", by="g", metrics=["ece"])`` on the same rows
crps, nll   ``df.group_by("g").agg(pc.crps(...))`` (and ``pc.nll``): at most 1.2x a
            plain mean of a column, ``df.group_by("g").agg(pl.col("y").mean())``
hand        what the same formulas cost written by hand in Polars, the part a metric
            cannot do without: the curve's table (the PIT ``erfc(-z/√2)/2`` as a column,
            ``group_by(g, ceil(u * 198)).agg(len())``) against the ECE's
            (``group_by(g, ceil(p * 15)).agg(len(), sum(p), sum(label))``), and the
            per-row CRPS and NLL formulas in ``group_by().agg(formula.mean())``
floors      the same ratios in other engines, each against its own reference on the same
            rows: numpy with scipy's ``erfc`` (``np.bincount`` per group, one thread)
            and DuckDB SQL (``avg`` and ``count`` per group; DuckDB has no ``erf``, so
            only the NLL and the ECE's table): what a target asks of any engine
peers       uncertainty-toolbox's ``mean_absolute_calibration_error`` and netcal's
            ``ENCE`` on 1M rows and one group, against ``pc.mean_absolute_calibration_error``
            and ``pc.ence`` on the same rows, when ``--peers-python`` names a Python
            with the peers installed (the side environment of
            ``tests/data/regression/PEERS.md``): they run there, timed the same way

Each time is the best of ``--repeats`` rounds over all the cases in turn, each run
started when the CPUs are idle (or after 10 s); beside the wall clock, the process's CPU
seconds (what a shared machine's load changes least).

    python bench/regression.py                              # 10M rows
    python bench/regression.py --rows 20000 --repeats 1 --no-wait   # a quick check
    python bench/regression.py --peers-python /work/sidevenv-reg/bin/python
    python bench/regression.py --floors                     # the ratios in numpy and DuckDB
    python bench/regression.py --memory                     # peak memory at 10M, 30M, 100M rows

``--memory`` measures peak memory instead (issue 25: 100M rows streamed in at most 1 GB):
it writes parquet files of Gaussian predictions in chunks (never all rows in memory),
then runs each query on ``pl.scan_parquet`` of the first N rows' files with the
streaming engine, each in a fresh process, and prints the process's peak RSS (Linux's
``VmHWM``) beside its peak after the imports; the files are deleted after (``--keep``
keeps them, in ``--dir``):

summary     ``regression_summary`` with the 100-level curve (MACE), CRPS and NLL, 100 groups
reliability ``quantile_reliability`` (the 100-level quantile curve per group)
ence        ``variance_summary(..., metrics=["ence"])``: ENCE over 10 σ-bins between each
            group's own min and max of σ (a first pass per group, joined back to the rows)
expressions ``group_by("g").agg(pc.mean_absolute_calibration_error(...), pc.crps(...))``:
            the expressions of issue 25's first example (the 100-level curve as 100 masked
            sums per group, no window or list of rows)
mean        ``group_by("g").agg(pl.col("y").mean())``: what the streaming engine itself keeps

It prints a Markdown table. Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
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


def hand_written(
    frame: pl.DataFrame | pl.LazyFrame,
) -> tuple[pl.LazyFrame, pl.LazyFrame, pl.Expr, pl.Expr]:
    """The same formulas by hand: the curve's and the ECE's tables, the CRPS and the NLL."""
    y, mu, sigma = pl.col("y"), pl.col("mu"), pl.col("sigma")
    z = (y - mu) / sigma
    lf = frame.lazy()
    curve = lf.with_columns(u=0.5 * (-z * math.sqrt(0.5)).erfc()).group_by(
        "g", (pl.col("u") * 198).ceil().alias("bin")
    )
    ece = lf.group_by("g", (pl.col("p") * 15).ceil().alias("bin"))
    pit = 0.5 * (-z * math.sqrt(0.5)).erfc()
    density = (z * z * -0.5).exp() / math.sqrt(2.0 * math.pi)
    crps = sigma * (z * (2.0 * pit - 1.0) + 2.0 * density - 1.0 / math.sqrt(math.pi))
    nll = 0.5 * math.log(2.0 * math.pi) + sigma.log() + 0.5 * z * z
    return (
        curve.agg(pl.len()),
        ece.agg(pl.len(), pl.col("p").sum(), pl.col("label").sum()),
        crps.mean(),
        nll.mean(),
    )


def cases(df: pl.DataFrame, scan: pl.LazyFrame) -> dict[str, Callable[[], object]]:
    """The timed runs: each pair is ours and its reference, then the hand-written ones."""
    mace = ["mean_absolute_calibration_error"]
    curve, ece, crps, nll = hand_written(df)
    scanned_curve, scanned_ece, _, _ = hand_written(scan)
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
        "hand: curve table (in memory)": lambda: curve.collect(),
        "hand: ECE table (in memory)": lambda: ece.collect(),
        "hand: curve table (parquet scan, streaming)": lambda: scanned_curve.collect(
            engine="streaming"
        ),
        "hand: ECE table (parquet scan, streaming)": lambda: scanned_ece.collect(
            engine="streaming"
        ),
        "hand: group_by().agg(CRPS formula.mean())": lambda: df.group_by("g").agg(crps),
        "hand: group_by().agg(NLL formula.mean())": lambda: df.group_by("g").agg(nll),
        "crps: lazy, streaming": lambda: lazy_scores(df, pc.crps("y", **GAUSS)),
        "nll: lazy, streaming": lambda: lazy_scores(df, pc.nll("y", **GAUSS)),
        "scores reference: lazy mean, streaming": lambda: lazy_scores(df, pl.col("y").mean()),
        "hand: CRPS formula, lazy, streaming": lambda: lazy_scores(df, crps),
        "hand: NLL formula, lazy, streaming": lambda: lazy_scores(df, nll),
    }


def lazy_scores(df: pl.DataFrame, score: pl.Expr) -> pl.DataFrame:
    """``df.lazy().group_by("g").agg(score)`` collected by the streaming engine: Polars
    runs an eager ``DataFrame.group_by().agg`` in its in-memory engine, which evaluates a
    formula inside an aggregation group by group (several times slower than the
    streaming engine's one pass over the rows)."""
    return df.lazy().group_by("g").agg(score).collect(engine="streaming")


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


def interleaved(
    runs: dict[str, Callable[[], object]], repeats: int, wait: bool
) -> dict[str, tuple[float, float]]:
    """Per run, the best wall and CPU seconds of `repeats` rounds over all `runs` in turn
    (each round meets the same load; CPU seconds are the process's, all threads: on a
    shared machine they say more than the wall clock, which waits for other jobs)."""
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            if wait:
                _wait_idle()
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return {name: (min(wall[name]), min(cpu[name])) for name in runs}


def report(times: dict[str, tuple[float, float]]) -> None:
    """Print the ratios of the targets, by wall and CPU seconds."""
    for clock, index in (("wall", 0), ("CPU", 1)):
        t = {name: pair[index] for name, pair in times.items()}
        print(f"\n{clock} seconds:")
        for where, kind in (
            ("in memory", "in memory"),
            ("streaming scan", "parquet scan, streaming"),
        ):
            ours = t[f"curve: regression_summary ({kind})"]
            ece = t[f"curve reference: summary ECE ({kind})"]
            hand = t[f"hand: curve table ({kind})"] / t[f"hand: ECE table ({kind})"]
            print(f"curve / ECE, {where}: {ours / ece:.2f}x (target 1.5x; by hand {hand:.2f}x)")
        for name, formula in (("crps", "CRPS"), ("nll", "NLL")):
            for form, ours, mean, hand in (
                (
                    "eager",
                    t[f"{name}: group_by().agg(pc.{name})"],
                    t["scores reference: group_by().agg(mean)"],
                    t[f"hand: group_by().agg({formula} formula.mean())"],
                ),
                (
                    "lazy, streaming",
                    t[f"{name}: lazy, streaming"],
                    t["scores reference: lazy mean, streaming"],
                    t[f"hand: {formula} formula, lazy, streaming"],
                ),
            ):
                print(
                    f"{name} / mean, {form}: {ours / mean:.2f}x (target 1.2x; the formula by "
                    f"hand {hand / mean:.2f}x); {name} / the formula by hand: {ours / hand:.2f}x"
                )


def floors(df: pl.DataFrame, repeats: int, wait: bool) -> dict[str, float]:
    """The targets' ratios in numpy (with scipy's ``erfc``) and DuckDB, on the same rows:
    the formula's cost against the reference's in each engine, by hand."""
    import duckdb  # optional: installed beside the bench, not a dependency
    from scipy.special import erfc

    g, y, mu, sigma, p = (df[c].to_numpy() for c in ("g", "y", "mu", "sigma", "p"))
    label = df["label"].to_numpy().astype(np.float64)
    groups = int(g.max()) + 1

    def per_group(values: np.ndarray) -> np.ndarray:
        return np.bincount(g, values, groups) / np.bincount(g, minlength=groups)

    def pit() -> np.ndarray:
        return 0.5 * erfc(-(y - mu) / sigma * math.sqrt(0.5))

    def crps() -> np.ndarray:
        z = (y - mu) / sigma
        density = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        u = 0.5 * erfc(-z * math.sqrt(0.5))
        return per_group(sigma * (z * (2.0 * u - 1.0) + 2.0 * density - 1.0 / math.sqrt(math.pi)))

    def nll() -> np.ndarray:
        z = (y - mu) / sigma
        return per_group(0.5 * math.log(2.0 * math.pi) + np.log(sigma) + 0.5 * z * z)

    def table(bins: int, values: np.ndarray) -> list[np.ndarray]:
        key = g.astype(np.int64) * (bins + 1) + np.ceil(values * bins).astype(np.int64)
        return [np.bincount(key, w, groups * (bins + 1)) for w in (None, values, label)]

    con = duckdb.connect()
    con.register("df", df.select("g", "y", "mu", "sigma", "p", "label").to_arrow())
    nll_sql = "0.5 * ln(2 * pi()) + ln(sigma) + 0.5 * ((y - mu) / sigma) ^ 2"
    runs: dict[str, Callable[[], object]] = {
        "numpy: mean per group": lambda: per_group(y),
        "numpy: CRPS per group": crps,
        "numpy: NLL per group": nll,
        "numpy: ECE table": lambda: table(15, p),
        "numpy: curve table": lambda: table(198, pit())[0],
        "duckdb: mean per group": lambda: con.sql("SELECT g, avg(y) FROM df GROUP BY g").fetchall(),
        "duckdb: NLL per group": lambda: con.sql(
            f"SELECT g, avg({nll_sql}) FROM df GROUP BY g"
        ).fetchall(),
        "duckdb: ECE table": lambda: con.sql(
            "SELECT g, ceil(p * 15) AS b, count(*), sum(p), sum(label) FROM df GROUP BY g, b"
        ).fetchall(),
    }
    return {name: seconds for name, (seconds, _) in interleaved(runs, repeats, wait).items()}


def report_floors(times: dict[str, float]) -> None:
    """Print each engine's own ratios beside the targets."""
    for name, seconds in times.items():
        print(f"| {name} | {seconds:.3f} |")
    mean, duck = times["numpy: mean per group"], times["duckdb: mean per group"]
    print(
        f"\nnumpy: CRPS / mean {times['numpy: CRPS per group'] / mean:.1f}x, NLL / mean "
        f"{times['numpy: NLL per group'] / mean:.1f}x (target 1.2x); curve table / ECE table "
        f"{times['numpy: curve table'] / times['numpy: ECE table']:.2f}x (target 1.5x)"
    )
    print(f"duckdb: NLL / mean {times['duckdb: NLL per group'] / duck:.1f}x (target 1.2x)")


# -- memory (issue 25): peak RSS as rows grow, each query in a fresh process ----------------

MEMORY_ROWS = [10_000_000, 30_000_000, 100_000_000]
CHUNK = 5_000_000  # rows of each parquet file: the writer never holds more
MEMORY_CASES = ("summary", "reliability", "ence", "expressions", "mean")


def write_memory_data(rows: list[int], groups: int, directory: Path) -> tuple[int, list[Path]]:
    """Parquet files of Gaussian predictions (``g``, ``mu``, ``sigma``, ``y``), each of one
    chunk of rows, written one at a time; their number covers the largest of `rows`."""
    chunk = math.gcd(math.gcd(*rows), CHUNK)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(max(rows) // chunk):
        path = directory / f"part_{index:05d}.parquet"
        if not path.exists():
            rng = np.random.default_rng(index)
            g = rng.integers(0, groups, chunk, dtype=np.int32)
            mu, sigma = rng.normal(0.0, 2.0, chunk), rng.uniform(0.2, 2.0, chunk)
            scale = np.where(g % 2 == 0, 0.7, 1.4)
            y = mu + scale * sigma * rng.normal(size=chunk)
            pl.DataFrame({"g": g, "mu": mu, "sigma": sigma, "y": y}).write_parquet(path)
        paths.append(path)
    return chunk, paths


def memory_query(case: str, lf: pl.LazyFrame) -> pl.LazyFrame:
    """The plan of one memory case over the scan `lf`."""
    if case == "summary":
        metrics = ["mean_absolute_calibration_error", "crps", "nll"]
        return pc.regression_summary(lf, "y", **GAUSS, by="g", metrics=metrics)
    if case == "reliability":
        return pc.quantile_reliability(lf, "y", **GAUSS, by="g")
    if case == "ence":
        return pc.variance_summary(lf, "y", **GAUSS, by="g", metrics=["ence"])
    if case == "expressions":
        return lf.group_by("g").agg(
            mace=pc.mean_absolute_calibration_error("y", **GAUSS), crps=pc.crps("y", **GAUSS)
        )
    return lf.group_by("g").agg(pl.col("y").mean())


def peak_rss_mb() -> float:
    """This process's peak RSS in MB: Linux's ``VmHWM``, the high-water mark of the
    process's own memory (``ru_maxrss`` keeps the parent's across ``fork`` and ``exec``,
    and the parent held a chunk of data)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_worker(case: str, paths: list[str]) -> dict[str, float]:
    """One run of `case` on a scan of `paths` (streaming): seconds, peak RSS in MB, and
    the peak RSS before the query (the imports)."""
    base_mb = peak_rss_mb()
    start = time.perf_counter()
    result = memory_query(case, pl.scan_parquet(paths)).collect(engine="streaming")
    return {
        "seconds": time.perf_counter() - start,
        "peak_mb": peak_rss_mb(),
        "base_mb": base_mb,
        "rows_out": result.height,
    }


def memory(
    rows: list[int], groups: int, directory: Path, wait: bool, keep: bool, cases: list[str]
) -> None:
    """Peak RSS of each case per row count, each in a fresh process; print a table."""
    chunk, paths = write_memory_data(rows, groups, directory)
    print("| rows | case | seconds | peak RSS MB | RSS after imports MB |")
    print("|---:|---|---:|---:|---:|")
    try:
        for n in rows:
            for case in cases:
                if wait:
                    _wait_idle(limit=10.0)
                used = [str(path) for path in paths[: n // chunk]]
                command = [sys.executable, __file__, "--worker", case, *used]
                out = subprocess.run(command, capture_output=True, text=True, check=True)
                result = json.loads(out.stdout.strip().splitlines()[-1])
                print(
                    f"| {n:,} | {case} | {result['seconds']:.1f} | {result['peak_mb']:,.0f} "
                    f"| {result['base_mb']:,.0f} |",
                    flush=True,
                )
    finally:
        if not keep:
            for path in paths:
                path.unlink(missing_ok=True)


def main() -> None:
    """Run the cases and print a Markdown table of times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-wait", action="store_true")
    parser.add_argument("--peers-python", default=None)
    parser.add_argument("--peer-rows", type=int, default=1_000_000)
    parser.add_argument("--floors", action="store_true", help="the ratios in numpy and DuckDB")
    parser.add_argument("--memory", action="store_true", help="peak memory from parquet scans")
    parser.add_argument(
        "--memory-rows", type=int, nargs="+", default=MEMORY_ROWS, help="row counts (memory)"
    )
    parser.add_argument("--dir", type=Path, default=Path("/tmp/regression_bench"))
    parser.add_argument("--keep", action="store_true", help="keep the data files (memory)")
    parser.add_argument(
        "--cases",
        nargs="+",
        choices=MEMORY_CASES,
        default=list(MEMORY_CASES),
        help="the memory cases to run (default: all)",
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    wait = not args.no_wait
    if args.worker:
        print(json.dumps(memory_worker(args.worker[0], args.worker[1:])))
        return
    if args.memory:
        memory(args.memory_rows, args.groups, args.dir, wait, args.keep, args.cases)
        return
    df = data(args.rows, args.groups)
    if args.floors:
        print(f"| {args.rows:,} rows, {args.groups} groups, other engines | seconds |\n|---|---|")
        report_floors(floors(df, args.repeats, wait))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.parquet"
        df.write_parquet(path)
        times = interleaved(cases(df, pl.scan_parquet(path)), args.repeats, wait)
    print(f"| {args.rows:,} rows, {args.groups} groups | seconds | CPU seconds |")
    print("|---|---|---|")
    for name, (seconds, cpu) in times.items():
        print(f"| {name} | {seconds:.3f} | {cpu:.3f} |")
    report(times)
    if args.peers_python:
        print(f"\n| {args.peer_rows:,} rows, one group | seconds |\n|---|---|")
        for name, seconds in peers(args.peer_rows, args.repeats, args.peers_python, wait).items():
            print(f"| {name} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
