"""Compare the calibration of two models scored on the same requests.

    python examples/compare_models.py [OUT_DIR]

Prints the summary of each model (ECE, MCE, RMSCE, Brier, log-loss) and their
reliability tables side by side, bin by bin. With the plot extra installed
(``pip install 'polars_calib[plot]'``) it also draws both models on one
reliability diagram and saves it as ``compare_models.png`` in OUT_DIR (default: a
``polars_calib_examples`` folder in the system's temporary directory).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import polars as pl

import polars_calib as pc

LOG = Path(__file__).parent / "data" / "predictions.parquet"
N_BINS = 10


def main(out_dir: Path) -> None:
    log = pl.scan_parquet(LOG)

    summary = pc.summary(log, "p", "y", by="model", n_bins=N_BINS).collect()
    print("Summary per model:")
    print(summary)

    # Compute once; the diagram below draws this same table.
    table = pc.reliability(log, "p", "y", by="model", n_bins=N_BINS).collect()
    side_by_side = table.pivot(
        on="model",
        index=["bin", "lower", "upper"],
        values=["count", "mean_predicted", "observed", "gap"],
    )
    print("\nReliability tables side by side (gap = observed - mean_predicted):")
    print(
        side_by_side.select(
            "bin",
            "lower",
            "upper",
            "count_baseline",
            "gap_baseline",
            "count_candidate",
            "gap_candidate",
        )
    )

    # The candidate's gap changes sign across [0, 1]: over-confident at both ends.
    signs = table.filter(pl.col("model") == "candidate").select(
        under=(pl.col("gap") > 0).sum(), over=(pl.col("gap") < 0).sum()
    )
    print(
        f"\ncandidate: {signs['under'].item()} bins under-predict, "
        f"{signs['over'].item()} over-predict (ECE hides the sign; the table shows it)."
    )

    try:
        chart = pc.plot_reliability(table, title="Baseline vs candidate")
        out_dir.mkdir(parents=True, exist_ok=True)
        path = pc.save_png(chart, out_dir / "compare_models.png")
    except ImportError as error:
        print(f"\nNo diagram: {error}")
    else:
        print(f"\nReliability diagram written to {path}")


if __name__ == "__main__":
    default = Path(tempfile.gettempdir()) / "polars_calib_examples"
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=4, tbl_width_chars=200):
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
