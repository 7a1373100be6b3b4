"""Checked by mypy and pyright in tests/test_typing.py: the typed paths to `.calib`."""

from pathlib import Path
from typing import assert_type

import polars as pl

import polars_calib as pc
from polars_calib import _namespaces as pc_namespaces

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


def typed_frame_namespaces(df: pl.DataFrame, lf: pl.LazyFrame) -> None:
    """`pc.frame` gives the `.calib` methods of a frame, each typed, returning its kind."""
    eager = pc.frame(df)
    lazy = pc.frame(lf)
    assert_type(eager, pc_namespaces.DataFrameCalibNamespace)
    assert_type(lazy, pc_namespaces.LazyFrameCalibNamespace)
    assert_type(eager.summary("p", "y", by="g", strategy="quantile", n_bins=10), pl.DataFrame)
    assert_type(lazy.summary("p", "y", metrics=["ece", "brier"], weight="w"), pl.LazyFrame)
    assert_type(eager.reliability("p", "y", closed="left"), pl.DataFrame)
    assert_type(lazy.bin_statistics("p", "y", resampling="bootstrap", seed=1), pl.LazyFrame)
    assert_type(lazy.smooth_ece_summary("p", "y", by="g"), pl.LazyFrame)
    assert_type(eager.refused_counts("p", "y", by=pl.col("p") > 0.5), pl.DataFrame)
    assert_type(eager.audit("p", "y", by=["g"], correction="bh"), pc.Audit)
    assert_type(lazy.fit_calibrator("p", "y", method="isotonic"), pc.Calibrator)
    assert_type(eager.validate("p", "y", weight="w", columns=["g"]), None)


def typed_regression(df: pl.DataFrame, lf: pl.LazyFrame, curve: pc.Curve) -> None:
    """Gaussian predictions: expressions, frame functions and the typed namespace."""
    assert_type(pc.crps("y", mean="mu", std="s", weight="w"), pl.Expr)
    assert_type(pc.miscalibration_area("y", mean="mu", std="s", curve=curve), pl.Expr)
    assert_type(pc.ence("y", mean="mu", std="s", range=(0.1, 2.0), closed="left"), pl.Expr)
    assert_type(pc.uce("y", mean="mu", std="s", strategy="quantile", weight="w"), pl.Expr)
    assert_type(pc.qce("y", mean="mu", std="s", levels=[0.5, 0.9], marginal=False), pl.Expr)
    assert_type(pc.pit_ks_p("y", mean="mu", std="s", weight="w"), pl.Expr)
    assert_type(pc.pit_chi2_p("y", mean="mu", std="s", n_bins=5), pl.Expr)
    assert_type(pc.gaussian_skce("y", mean="mu", std="s", estimator="block"), pl.Expr)
    assert_type(pc.size_stratified_coverage("y", lower="lo", upper="hi", n_bins=4), pl.Expr)
    cal = pc.fit_regression_calibrator(df, "y", mean="mu", std="s", method="isotonic")
    assert_type(cal.quantile_expr(0.9, mean="mu"), pl.Expr)
    assert_type(cal.interval_exprs(level=0.8), tuple[pl.Expr, pl.Expr])
    cqr = pc.fit_regression_calibrator(lf, "y", lower="lo", upper="hi", by="g", level=0.8)
    assert_type(cqr.interval_exprs(lower="lo2"), tuple[pl.Expr, pl.Expr])
    shifted = pc.fit_regression_calibrator(df, "y", quantiles=["q1", "q2"], levels=[0.1, 0.9])
    assert_type(shifted.quantiles_expr(), pl.Expr)
    assert_type(shifted.apply(lf), pl.LazyFrame)
    members = pc.fit_regression_calibrator(df, "y", ensemble="x", by="g", level=0.8)
    assert_type(members.interval_exprs(ensemble="x2"), tuple[pl.Expr, pl.Expr])
    ranked = pc.fit_regression_calibrator(lf, "y", ensemble="x", method="isotonic", id="row")
    assert_type(ranked.cdf_expr("y", seed=3, id="row"), pl.Expr)
    assert_type(ranked.quantile_expr(0.9, ensemble="x"), pl.Expr)
    metrics: list[pc.RegressionMetric] = ["crps", "mean_absolute_calibration_error"]
    assert_type(pc.regression_summary(lf, "y", mean="mu", std="s", metrics=metrics), pl.LazyFrame)
    assert_type(pc.frame(df).quantile_reliability("y", mean="mu", std="s"), pl.DataFrame)
    assert_type(pc.frame(lf).regression_statistics("y", mean="mu", std="s"), pl.LazyFrame)
    stats = assert_type(pc.regression_statistics(df, "y", mean="mu", std="s"), pl.DataFrame)
    finished = pc.regression_metrics_from_statistics(stats.lazy(), by=["g"], metrics=metrics)
    assert_type(finished, pl.LazyFrame)
    assert_type(pc.quantile_reliability_from_statistics(stats, curve=curve), pl.DataFrame)


def typed_regression_forms(df: pl.DataFrame, lf: pl.LazyFrame) -> None:
    """The ensemble and interval forms of the frame functions; the variance tables."""
    assert_type(pc.regression_summary(lf, "y", ensemble="x", seed=3, id="row"), pl.LazyFrame)
    assert_type(pc.frame(df).quantile_reliability("y", ensemble="x"), pl.DataFrame)
    intervals = pc.regression_summary(df, "y", lower=["a", "b"], upper=["c", "d"], level=[0.5, 0.9])
    assert_type(intervals, pl.DataFrame)
    assert_type(pc.regression_statistics(lf, "y", lower="lo", upper="hi"), pl.LazyFrame)
    variance: list[pc.VarianceMetric] = ["ence", "uce"]
    summary = pc.variance_summary(lf, "y", mean="mu", std="s", range=(0.1, 2.0), metrics=variance)
    assert_type(summary, pl.LazyFrame)
    assert_type(pc.frame(df).variance_reliability("y", mean="mu", std="s"), pl.DataFrame)


def typed_prediction_intervals(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The interval measures are expressions; `average` is a `Literal`, levels are floats."""
    return lf.group_by("store").agg(
        coverage=pc.interval_coverage("y", lower="lo", upper=pl.col("hi")),
        width=pc.interval_width(lower="lo", upper="hi", weight="w"),
        score=pc.interval_score("y", lower="lo", upper="hi", level=0.9),
        gap=pc.coverage_gap("y", lower="lo", upper="hi", level=0.9, groups="g", average="weighted"),
        wis=pc.weighted_interval_score(
            "y", median="m", lower=["lo"], upper=[pl.col("hi")], levels=[0.9]
        ),
    )


def typed_monitor_windows(df: pl.DataFrame, lf: pl.LazyFrame, limits: pc.ControlLimits) -> None:
    """Windowed monitoring: a reference expression or a (start, end) pair of dates."""
    from datetime import date

    reference = pl.col("ts") < date(2026, 10, 1)
    windows = pc.monitor_windows(
        lf, "p", "y", by="model", time="ts", every="1d", reference=reference
    )
    assert_type(windows, pl.LazyFrame)
    pair = (date(2026, 9, 1), date(2026, 10, 1))
    eager = pc.frame(df).monitor_windows(
        "p", "y", time="ts", every="1w", reference=pair, limits=limits
    )
    assert_type(eager, pl.DataFrame)


def typed_drift_charts(df: pl.DataFrame, lf: pl.LazyFrame) -> None:
    """The drift charts: an Altair chart by default, a matplotlib Figure by name."""
    import altair as alt
    from matplotlib.figure import Figure

    chart = pc.plot_cusum(lf, "p", "y", by="model", time="ts", odds_ratio=2.0, threshold=4.0)
    assert_type(chart, alt.LayerChart | alt.FacetChart)
    figure = pc.plot_observed_minus_expected(df, "p", "y", time="ts", backend="matplotlib")
    assert_type(figure, Figure)


def typed_monitor_store(lf: pl.LazyFrame, store: Path) -> None:
    """The monitoring store: an update gives the new alarms; the readers give tables."""
    alarms = pc.update_monitor_store(lf, store, "p", "y", by=["model"], time="ts", arl0=1e4)
    assert_type(alarms, pl.DataFrame)
    assert_type(pc.monitor_store_alarms(store), pl.DataFrame)
    assert_type(pc.monitor_store_windows(str(store)), pl.DataFrame)
