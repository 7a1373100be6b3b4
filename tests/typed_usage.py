"""Checked by mypy in tests/test_typing.py: the typed path to the `.calib` namespace."""

import polars as pl

import polars_calib as pc

ece: pl.Expr = pc.col("p").calib.ece("y", n_bins=10)
brier: pl.Expr = pc.brier("p", "y", weight="w")
frame = pl.DataFrame({"p": [0.2], "y": [0]}).select(ece, pc.mce(pl.col("p"), "y").alias("mce"))
stats = pc.bin_statistics(pl.DataFrame({"p": [0.2], "y": [0]}), "p", "y", strategy="quantile")
merged: pl.DataFrame = pc.metrics_from_statistics(stats, metrics=["ece", "brier"])
plan: pl.LazyFrame = pc.summary(
    pl.LazyFrame({"p": [0.2], "y": [0]}), "p", "y", by=(pl.col("p") > 0.5).alias("high")
)
canonical: pl.Expr = pc.col("probs").calib.canonical_ece("y", n_bins=5, distance="sqeuclidean")
kernel: pl.Expr = pc.skce("probs", "y", kernel="gaussian", estimator="block", block_size=4)
binned: pl.LazyFrame = pc.median_variance_bins(pl.LazyFrame({"p": [0.2], "y": [0]}), "p", "y")
mvb: pl.Expr = pc.ece("p", "y", bins="bin", distance="tv")


def resampled_statistics(df: pl.DataFrame) -> pl.DataFrame:
    """The table with bootstrap replicates type-checks through the overloads."""
    return pc.bin_statistics(df, "p", "y", resampling="bootstrap", n_resamples=8, seed=1)


def tested_statistics(df: pl.DataFrame) -> pl.DataFrame:
    """Tests and consistency p-values are metrics of the table, for the type checker too."""
    return pc.bin_statistics(df, "p", "y", metrics=["ece", "spiegelhalter_p", "consistency_p"])


def canonical_frame_form(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The canonical reduction, its distance and bin average, through the typed signatures."""
    table = pc.bin_statistics(lf, "probs", "y", reduction="canonical", n_bins=5, metrics=["ece"])
    merged = pc.metrics_from_statistics(table, metrics=["ece"], distance="cityblock")
    summary = pc.summary(lf, "probs", "y", reduction="canonical", average="bins", distance="tv")
    return pl.concat([merged, summary], how="diagonal")


def windowed_summary(
    lf: pl.LazyFrame, strategy: pc.Strategy, reduction: pc.Reduction | None
) -> pl.LazyFrame:
    """The exported option types annotate a caller; a table per window, named as a summary."""
    table = pc.bin_statistics(
        lf, "probs", "y", time="ts", every="1d", strategy=strategy, reduction=reduction
    )
    return pc.metrics_from_statistics(table, by="ts", reduction=reduction)
