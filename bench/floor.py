"""The frame form against the engine's own floor for binned sums (issue 9's targets).

10M rows, 15 right-closed bins, data in memory, in one process and one run:

floor       ``group_by(keys, bin).agg(len, sum(p), sum(y))`` over a bin column computed
            beforehand (not timed): what any binned metric must at least cost in Polars
frame       ``pc.summary(df, "p", "y", by=keys, metrics=["ece"])`` (bins, screening,
            the full grid, the finisher: everything)
expression  ``df.group_by(keys).agg(pc.ece("p", "y"))``

for one group, 10,000 integer groups and 10,000 string groups. Each time is the best
of three runs, each started when the CPUs are idle (or after 10 s of waiting). Run
``python bench/floor.py`` (about a minute on 2 cores); it prints the table and rewrites
its section of ``docs/performance.md``. Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
from benchmark import _wait_idle  # the same idle wait as the full benchmark (bench/ is on the path)

import polars_calib as pc

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"
ROWS = 10_000_000
N_BINS = 15
REPEATS = 3
BEGIN, END = "<!-- floor -->", "<!-- /floor -->"


def data(rows: int = ROWS, groups: int = 10_000) -> pl.DataFrame:
    """Probabilities with miscalibration that changes sign, integer and string groups."""
    rng = np.random.default_rng(0)
    p = rng.random(rows)
    rate = np.clip(p + 0.25 * np.sin(2 * math.pi * p), 0.0, 1.0)
    g = rng.integers(0, groups, rows, dtype=np.int32)
    df = pl.DataFrame({"g": g, "p": p, "y": (rng.random(rows) < rate).astype(np.int8)})
    return df.with_columns(s=pl.format("segment-{}", pl.col("g")))


def best(run: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        _wait_idle(limit=10.0)
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    df = data()
    # The floor's bin column, computed before timing (with the package's own rule).
    binned = df.with_columns(bin=pc.bin_index("p", n_bins=N_BINS))
    lines = []
    for label, keys in (
        ("1 group", []),
        ("10,000 int groups", ["g"]),
        ("10,000 string groups", ["s"]),
    ):
        sums = [pl.len(), pl.col("p").sum(), pl.col("y").sum()]
        contenders: dict[str, Callable[[], object]] = {
            "floor": lambda keys=keys: binned.group_by(*keys, "bin").agg(sums),
            "frame": lambda keys=keys: pc.summary(
                df, "p", "y", by=keys or None, n_bins=N_BINS, metrics=["ece"]
            ),
            "expression": lambda keys=keys: (
                df.group_by(keys).agg(pc.ece("p", "y", n_bins=N_BINS))
                if keys
                else df.select(pc.ece("p", "y", n_bins=N_BINS))
            ),
        }
        times = {name: best(run) for name, run in contenders.items()}
        for name, seconds in times.items():
            line = (
                f"| {label} | {name} | {seconds:.3f} | {seconds / times['floor']:.2f}× floor | "
                f"{seconds / times['expression']:.2f}× expression |"
            )
            print(line, flush=True)
            lines.append(line)
    write_doc(lines)


def write_doc(lines: list[str]) -> None:
    table = "\n".join(
        [
            BEGIN,
            "",
            f"{ROWS:,} rows, {N_BINS} bins, in memory (`python bench/floor.py`, one run):",
            "",
            "| grouping | contender | seconds | vs floor | vs expression |",
            "|---|---|---:|---:|---:|",
            *lines,
            "",
            END,
        ]
    )
    text = DOC.read_text()
    if BEGIN in text:
        text = re.sub(f"{BEGIN}.*?{END}", lambda _: table, text, flags=re.S)
    else:
        text = text.replace("<!-- results -->", table + "\n\n<!-- results -->")
    DOC.write_text(text)


if __name__ == "__main__":
    main()
