"""Calibration per customer segment, as in a fairness audit.

    python examples/segment_slicing.py

A model can be well calibrated overall and badly calibrated for one slice of its
population. In the bundled log the baseline model under-predicts for segment "C";
this script finds that slice two ways:

* the expressions with ``over``: each row gets the ECE of its model and segment,
  next to the model's overall ECE, without collapsing the frame;
* :func:`polars_calib.summary` with ``by=["model", "segment"]``: one row per
  slice with every metric, joined to the per-model summary to flag slices that
  are much worse than their model overall.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

import polars_calib as pc

LOG = Path(__file__).parent / "data" / "predictions.parquet"
N_BINS = 10
# Flag a slice whose ECE is more than this multiple of its model's overall ECE.
RATIO = 2.0


def main() -> None:
    log = pl.scan_parquet(LOG)

    # 1. Window expressions: per-slice and per-model ECE on every row.
    per_row = log.with_columns(
        segment_ece=pc.ece("p", "y", n_bins=N_BINS).over("model", "segment"),
        model_ece=pc.ece("p", "y", n_bins=N_BINS).over("model"),
        # Mean prediction minus frequency of positives: the direction of the error.
        segment_bias=(pl.col("p").mean() - pl.col("y").mean()).over("model", "segment"),
    )
    slices = (
        per_row.select("model", "segment", "segment_ece", "model_ece", "segment_bias")
        .unique()
        .sort("model", "segment")
        .collect()
    )
    print("ECE per slice with `over` (each row keeps its model's overall ECE):")
    print(slices)

    # 2. The frame function: every metric per slice, and per model for reference.
    by_slice = pc.summary(log, "p", "y", by=["model", "segment"], n_bins=N_BINS)
    by_model = pc.summary(log, "p", "y", by="model", n_bins=N_BINS, metrics=["ece"])
    audit = (
        by_slice.join(by_model.select("model", model_ece="ece"), on="model")
        .with_columns(
            ratio=pl.col("ece") / pl.col("model_ece"),
            bias=pl.col("mean_predicted") - pl.col("observed"),
        )
        .select(
            "model",
            "segment",
            "count",
            "mean_predicted",
            "observed",
            "bias",
            "ece",
            "model_ece",
            "ratio",
            "brier",
        )
        .sort("model", "segment")
        .collect()
    )
    print("\nsummary(by=['model', 'segment']) against each model's overall ECE:")
    print(audit)

    flagged = audit.filter(pl.col("ratio") > RATIO)
    print(f"\nSlices with an ECE above {RATIO:g}x their model's:")
    for row in flagged.iter_rows(named=True):
        direction = "under-predicts" if row["bias"] < 0 else "over-predicts"
        print(
            f"  {row['model']} / segment {row['segment']}: ECE {row['ece']:.3f} vs "
            f"{row['model_ece']:.3f} overall; {direction} on average "
            f"(mean prediction {row['mean_predicted']:.3f}, observed {row['observed']:.3f})"
        )
    if flagged.is_empty():
        print("  none")


if __name__ == "__main__":
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=4, tbl_width_chars=200):
        main()
