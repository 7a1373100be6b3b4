"""100M rows of partitioned parquet: local Spark, a Dask LocalCluster and Polars streaming.

Writes 100 parquet files of 1M rows each (``model`` string of 10 values, ``day`` Int32
of 30, ``p``, ``y``, ``w``; about 2.3 GB under ``bench/data/scale_out/``, not committed)
once, then runs the per-(model, day) statistics table in a fresh process per
contender, and reports:

seconds     wall time of ``pc.bin_statistics(...)`` (the engine's start-up excluded)
driver MB   peak RSS of the driver process (Spark local mode: the driver JVM holds
            the executors too, so its figure is the process tree's)
tree MB     peak RSS of the driver and all its child processes (sampled every 0.1 s)
result      rows and bytes of the table back on the driver: groups x bins, not rows

contenders  ``polars``: ``pc.bin_statistics(pl.scan_parquet(files), ...)`` collected
            by the streaming engine; ``spark``: a ``local[*]`` session reading the
            directory; ``dask``: ``dd.read_parquet(..., dtype_backend="pyarrow")`` on
            a ``LocalCluster`` of 2 worker processes of one thread.

Run ``python bench/scale_out.py`` (long: write the data once, then about a quarter of
an hour on 2 cores); ``--rows-per-file 10000 --files 4`` runs in seconds. Prints a
Markdown table for ``docs/scale-out.md``. Nothing here is a test: timings vary.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "scale_out"
N_BINS = 15
BY = ["model", "day"]


def directory(rows: int, files: int) -> Path:
    return DATA / f"{files}x{rows}"


def write_data(rows: int, files: int) -> Path:
    import polars as pl

    target = directory(rows, files)
    if len(list(target.glob("part-*.parquet"))) == files:
        return target
    target.mkdir(parents=True, exist_ok=True)
    for part in range(files):
        rng = np.random.default_rng(part)
        p = rng.random(rows)
        # Miscalibration that changes sign across [0, 1].
        rate = np.clip(p + 0.25 * np.sin(2 * np.pi * p), 0.0, 1.0)
        frame = pl.DataFrame(
            {
                "model": rng.choice([f"model-{i}" for i in range(10)], rows),
                "day": rng.integers(0, 30, rows, dtype=np.int32),
                "p": p,
                "y": (rng.random(rows) < rate).astype(np.int8),
                "w": rng.random(rows) * 2.0,
            }
        )
        frame.write_parquet(target / f"part-{part:03d}.parquet")
    return target


class Peak:
    """Peak RSS of this process and of its process tree, sampled in a thread."""

    def __init__(self) -> None:
        import psutil

        self.process = psutil.Process()
        self.own = self.tree = 0
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while self.running:
            try:
                own = self.process.memory_info().rss
                children = sum(c.memory_info().rss for c in self.process.children(recursive=True))
            except Exception:  # a child exiting while sampled
                own = children = 0
            self.own, self.tree = max(self.own, own), max(self.tree, own + children)
            time.sleep(0.1)

    def stop(self) -> tuple[float, float]:
        self.running = False
        self.thread.join()
        return self.own / 2**20, self.tree / 2**20


def worker(contender: str, path: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    import polars as pl

    import polars_calib as pc

    peak = Peak()
    options: dict[str, Any] = {"by": BY, "weight": "w", "n_bins": N_BINS}
    if contender == "polars":
        files = sorted(path.glob("part-*.parquet"))
        start = time.perf_counter()
        plan = pc.bin_statistics(pl.scan_parquet(files), "p", "y", **options)
        stats = plan.collect(engine="streaming")
    elif contender == "spark":
        from polars_calib._engines import local_spark

        spark = local_spark()
        data = spark.read.parquet(str(path))
        start = time.perf_counter()
        stats = pc.bin_statistics(data, "p", "y", **options)
    else:
        import dask.dataframe as dd
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
        data = dd.read_parquet(str(path), dtype_backend="pyarrow")
        start = time.perf_counter()
        stats = pc.bin_statistics(data, "p", "y", **options)
    seconds = time.perf_counter() - start
    driver_mb, tree_mb = peak.stop()
    if contender == "dask":
        client.close()
        cluster.close()
    elif contender == "spark":
        spark.stop()
    print(pc.metrics_from_statistics(stats, metrics=["ece"]).head(3), file=sys.stderr)
    return {
        "seconds": seconds,
        "driver_mb": driver_mb,
        "tree_mb": tree_mb,
        "rows": stats.height,
        "bytes": stats.estimated_size(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-file", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument(
        "--contenders", default="polars,spark,dask", help="comma-separated (default: all)"
    )
    parser.add_argument("--worker", metavar="CONTENDER")
    args = parser.parse_args()
    path = directory(args.rows_per_file, args.files)
    if args.worker:
        print(json.dumps(worker(args.worker, path)))
        return
    write_data(args.rows_per_file, args.files)
    total = args.rows_per_file * args.files
    print("| rows | engine | seconds | driver MB | tree MB | result rows | result bytes |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for contender in args.contenders.split(","):
        command = [
            sys.executable,
            __file__,
            "--worker",
            contender,
            "--rows-per-file",
            str(args.rows_per_file),
            "--files",
            str(args.files),
        ]
        # Output to a file, not a pipe: a child the engine starts may keep a pipe open.
        with tempfile.TemporaryFile("w+") as out:
            subprocess.run(command, check=True, stdout=out, stderr=subprocess.DEVNULL)
            out.seek(0)
            r = json.loads(out.read().strip().splitlines()[-1])
        print(
            f"| {total:,} | {contender} | {r['seconds']:.1f} | {r['driver_mb']:,.0f} | "
            f"{r['tree_mb']:,.0f} | {r['rows']:,} | {r['bytes']:,} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
