"""Daily expected calibration error per model, from the bundled prediction log.

    python examples/daily_ece_per_model.py

Two ways to the same numbers:

* the frame function :func:`polars_calib.summary` with ``time``/``every``: every
  metric per model and calendar day, in one call;
* the expression :func:`polars_calib.ece` inside ``group_by_dynamic``, for when the
  metric is one column among your own aggregations.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

import polars_calib as pc

LOG = Path(__file__).parent / "data" / "predictions.parquet"
N_BINS = 15


def main() -> None:
    log = pl.scan_parquet(LOG)

    # 1. The frame function: one row per model and day, every metric.
    daily = pc.summary(log, "p", "y", by="model", time="ts", every="1d", n_bins=N_BINS).collect()
    print("Daily summary per model (first 6 rows):")
    print(daily.head(6))

    # 2. The expression form, inside group_by_dynamic (the frame must be sorted by time).
    by_expression = (
        log.sort("ts")
        .group_by_dynamic("ts", every="1d", group_by="model")
        .agg(count=pl.len(), ece=pc.ece("p", "y", n_bins=N_BINS))
        .sort("model", "ts")
        .collect()
    )
    both = daily.select("model", "ts", "ece").join(
        by_expression, on=["model", "ts"], suffix="_expression"
    )
    largest = both.select((pl.col("ece") - pl.col("ece_expression")).abs().max()).item()
    print(
        f"\nsummary() and the expression agree on {both.height} model-days "
        f"(largest difference {largest:.1e})."
    )

    # Daily ECE side by side: one row per day, one column per model.
    wide = (
        daily.with_columns(day=pl.col("ts").dt.date())
        .pivot(on="model", index="day", values="ece")
        .with_columns((pl.col("candidate") - pl.col("baseline")).alias("candidate - baseline"))
    )
    print("\nDaily ECE, baseline vs candidate:")
    print(wide)
    worse = wide.filter(pl.col("candidate - baseline") > 0).height
    print(f"\nThe candidate is less calibrated than the baseline on {worse} of {wide.height} days.")


if __name__ == "__main__":
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=4, tbl_width_chars=200):
        main()
