"""K = 1000 classes x 1M rows: classwise ECE from a parquet scan, against a floor and numpy.

Writes ten parquet files of 100,000 probability vectors each (``Array(Float64, 1000)``,
7 GB in all, under ``bench/data/k1000/``, not committed) once, then times in fresh
worker processes, each reporting its peak RSS:

floor   a query that only reads the vectors and labels (their sums)
frame   ``pc.summary(pl.scan_parquet(...), "p", "y", reduction="classwise")``
numpy   one file at a time: ``np.bincount`` over class x bin, summed over the files
        (the whole 1M x 1000 matrix would need 8 GB before any temporary)

Run ``python bench/multiclass_scale.py`` (about 5 minutes on 2 cores; ``--rows`` for
fewer rows per file). Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data" / "k1000"
CLASSES, FILES, N_BINS = 1000, 10, 15


def write_data(rows: int) -> None:
    import polars as pl

    if len(list(DATA.glob(f"part-*-{rows}.parquet"))) == FILES:
        return
    DATA.mkdir(parents=True, exist_ok=True)
    for part in range(FILES):
        rng = np.random.default_rng(part)
        logits = rng.normal(0.0, 2.0, (rows, CLASSES))
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        # Labels from tempered probabilities: the gap changes sign across [0, 1].
        sharp = probs**1.3 / (probs**1.3).sum(axis=1, keepdims=True)
        labels = (sharp.cumsum(axis=1) < rng.random((rows, 1))).sum(axis=1)
        frame = pl.DataFrame(
            {
                "p": pl.Series(probs, dtype=pl.Array(pl.Float64, CLASSES)),
                "y": labels.clip(0, CLASSES - 1),
            }
        )
        frame.write_parquet(DATA / f"part-{part:02d}-{rows}.parquet", row_group_size=20_000)


def worker(contender: str, rows: int) -> dict[str, float]:
    import polars as pl

    import polars_calib as pc

    files = sorted(DATA.glob(f"part-*-{rows}.parquet"))
    start = time.perf_counter()
    if contender == "floor":
        scan = pl.scan_parquet(files)
        result = scan.select(pl.col("p").arr.sum().sum(), pl.col("y").sum()).collect()
    elif contender == "frame":
        scan = pl.scan_parquet(files)
        result = pc.summary(scan, "p", "y", reduction="classwise", n_bins=N_BINS).collect()
    else:
        gap = np.zeros(CLASSES * N_BINS)
        total = 0
        for path in files:
            frame = pl.read_parquet(path)
            probs, labels = frame["p"].to_numpy(), frame["y"].to_numpy()
            bins = np.clip(np.ceil(probs * N_BINS).astype(np.int64) - 1, 0, N_BINS - 1)
            keys = (np.arange(CLASSES) * N_BINS + bins).ravel()
            gap -= np.bincount(keys, weights=probs.ravel(), minlength=CLASSES * N_BINS)
            true_keys = labels * N_BINS + bins[np.arange(len(labels)), labels]
            gap += np.bincount(true_keys, minlength=CLASSES * N_BINS)
            total += len(labels)
        result = np.abs(gap).reshape(CLASSES, N_BINS).sum(axis=1).mean() / total
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(result, file=sys.stderr)
    return {"seconds": seconds, "peak_mb": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows per file (10 files)")
    parser.add_argument("--worker", metavar="CONTENDER")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.rows)))
        return
    write_data(args.rows)
    floor = None
    for contender in ("floor", "frame", "numpy"):
        out = subprocess.run(
            [sys.executable, __file__, "--worker", contender, "--rows", str(args.rows)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out)
        floor = floor or r["seconds"]
        print(
            f"| {FILES * args.rows:,} | K = {CLASSES}, classwise | streaming | {contender} | "
            f"{r['seconds']:.1f} | {r['seconds'] / floor:.2f}× floor | {r['peak_mb']:,.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
