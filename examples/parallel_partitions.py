"""Calibration metrics of a partitioned log, computed in parallel worker processes.

Uniform-bin metrics are sums in disguise: each worker reduces its partition to a
small statistics table (one row per model, segment and bin), and the tables,
concatenated, finish to exactly the numbers of one pass over the whole log.

    python examples/parallel_partitions.py

writes the bundled log as five parquet partitions (one per six days) to a
temporary directory, computes statistics per partition with two worker processes,
merges them, and checks the result against one pass.
"""

from __future__ import annotations

import multiprocessing
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

import polars_calib as pc

LOG = Path(__file__).parent / "data" / "predictions.parquet"
KEYS = ["model", "segment"]
N_BINS = 15


def partition_statistics(path: Path) -> pl.DataFrame:
    """One worker's job: the mergeable statistics of one partition file."""
    return pc.bin_statistics(pl.scan_parquet(path), "p", "y", by=KEYS, n_bins=N_BINS).collect()


def write_partitions(directory: Path, n_parts: int = 5) -> list[Path]:
    """Split the log by time into `n_parts` parquet files; return their paths."""
    log = pl.read_parquet(LOG)
    part = (log["ts"].rank("ordinal") * n_parts // (log.height + 1)).alias("part")
    paths = []
    for (k,), frame in log.with_columns(part).partition_by("part", as_dict=True).items():
        path = directory / f"part-{k}.parquet"
        frame.drop("part").write_parquet(path)
        paths.append(path)
    return paths


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_partitions(Path(tmp))
        # Polars is multithreaded: a forked child can inherit a held lock and hang,
        # so the workers are spawned (as the Polars user guide recommends).
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
            statistics = pl.concat(pool.map(partition_statistics, paths))
        print(f"{len(paths)} partitions -> {statistics.height} statistics rows")

        per_model = pc.metrics_from_statistics(statistics, by="model")
        per_segment = pc.metrics_from_statistics(statistics, by=KEYS)
        with pl.Config(tbl_cols=-1, float_precision=4):
            print(per_model)

        whole = pl.scan_parquet(Path(tmp) / "*.parquet")
        for merged, by in ((per_model, ["model"]), (per_segment, KEYS)):
            one_pass = whole.calib.summary("p", "y", by=by, n_bins=N_BINS).collect()
            assert_frame_equal(merged, one_pass, rel_tol=0, abs_tol=1e-12)
        table = pc.reliability_from_statistics(statistics, by="model")
        one_pass_table = whole.calib.reliability("p", "y", by="model", n_bins=N_BINS).collect()
        assert_frame_equal(table, one_pass_table, rel_tol=0, abs_tol=1e-12)
    print("merged statistics == one pass (to 1e-12): summary per model, per segment, reliability")


if __name__ == "__main__":
    main()
