"""Calibration tests and decompositions (``polars_calib._metrics.diagnostics``).

Against numpy written from the definitions (below), scipy's distributions and
MAPIE's Spiegelhalter statistic; the decomposition identities; the tutorial's
numbers; expression = summary = merged partitions; every data context; small
groups; bad parameters; and the tests' behaviour on simulated calibrated and
overconfident models.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import FrameContext, make_log

sys.path.insert(0, str(Path(__file__).parent))
import reference as ref

scipy_stats = pytest.importorskip("scipy.stats")

DIAGNOSTICS = [
    "spiegelhalter_z",
    "spiegelhalter_p",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "debiased_ece_squared",
    "debiased_ece",
    "brier_decomposition",
    "calibration_loss",
    "refinement_loss",
    "log_loss_calibration_loss",
    "log_loss_refinement_loss",
]
PARTS = [
    "brier",
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
]


# --------------------------------------------------------------------------
# numpy, from the definitions
# --------------------------------------------------------------------------


def np_spiegelhalter(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    numerator = np.sum(w * (y - p) * (1 - 2 * p))
    variance = np.sum(w * (1 - 2 * p) ** 2 * p * (1 - p))
    return float(numerator / np.sqrt(variance))


def np_bins(p, y, w, n_bins, strategy, closed="right"):
    """Per non-empty bin: the list of (p, y, w) arrays."""
    ids = ref.bin_ids(p, n_bins, strategy, closed)
    return [(p[ids == b], y[ids == b], w[ids == b]) for b in range(n_bins) if w[ids == b].sum() > 0]


def np_hosmer_lemeshow(p, y, w, n_bins, strategy):
    def term(squared: float, expected: float) -> float:
        # The documented limits: a bin of p = 0 without positives (p = 1 without
        # negatives) adds 0; one with them makes H infinite.
        if expected == 0.0:
            return 0.0 if squared == 0.0 else math.inf
        return squared / expected

    h = 0.0
    bins = np_bins(p, y, w, n_bins, strategy)
    for bp, by, bw in bins:
        n, observed, expected = bw.sum(), np.sum(bw * by), np.sum(bw * bp)
        squared = (observed - expected) ** 2
        h += term(squared, expected) + term(squared, n - expected)
    df = len(bins) - 2
    return h, (scipy_stats.chi2.sf(h, df) if df >= 1 else None)


def np_debiased(p, y, w, n_bins, strategy):
    total = w.sum()
    value = 0.0
    for bp, by, bw in np_bins(p, y, w, n_bins, strategy):
        n = bw.sum()
        ybar, pbar = np.sum(bw * by) / n, np.sum(bw * bp) / n
        correction = ybar * (1 - ybar) / (n - 1) if n > 1 else 0.0
        value += n / total * ((ybar - pbar) ** 2 - correction)
    return value


def np_brier_parts(p, y, w, n_bins, strategy):
    total = w.sum()
    rate = np.sum(w * y) / total
    parts = dict.fromkeys(PARTS, 0.0)
    parts["brier"] = np.sum(w * (p - y) ** 2) / total
    parts["uncertainty"] = rate * (1 - rate)
    for bp, by, bw in np_bins(p, y, w, n_bins, strategy):
        n = bw.sum()
        pbar, ybar = np.sum(bw * bp) / n, np.sum(bw * by) / n
        parts["reliability"] += n * (pbar - ybar) ** 2 / total
        parts["resolution"] += n * (ybar - rate) ** 2 / total
        parts["within_bin_variance"] += np.sum(bw * (bp - pbar) ** 2) / total
        parts["within_bin_covariance"] += 2 * np.sum(bw * (by - ybar) * (bp - pbar)) / total
    return parts


def np_losses(p, y, w, n_bins, strategy):
    """Calibration and refinement loss of Brier and log-loss; strategy "unique" too."""
    total = w.sum()
    if strategy == "unique":
        bins = [(p[p == v], y[p == v], w[p == v]) for v in np.unique(p)]
        bins = [b for b in bins if b[2].sum() > 0]
    else:
        bins = np_bins(p, y, w, n_bins, strategy)
    out = dict.fromkeys(
        [
            "calibration_loss",
            "refinement_loss",
            "log_loss_calibration_loss",
            "log_loss_refinement_loss",
        ],
        0.0,
    )
    for bp, by, bw in bins:
        n = bw.sum()
        pbar = np.clip(np.sum(bw * bp) / n, 0.0, 1.0)
        ybar = np.sum(bw * by) / n
        out["calibration_loss"] += n * (pbar - ybar) ** 2 / total
        out["refinement_loss"] += n * ybar * (1 - ybar) / total
        q = np.clip(pbar, ref.EPS, 1 - ref.EPS)
        entropy = -sum(v * math.log(v) for v in (ybar, 1 - ybar) if v > 0)
        kl = sum(v * math.log(v / m) for v, m in ((ybar, q), (1 - ybar, 1 - q)) if v > 0)
        out["log_loss_calibration_loss"] += n * kl / total
        out["log_loss_refinement_loss"] += n * entropy / total
    return out


def expressions(n_bins: int, strategy: str, weight: str | None) -> list[pl.Expr]:
    """Every diagnostic as an expression over ``p`` and ``y``, named as a summary names it."""
    binned = {"n_bins": n_bins, "strategy": strategy, "weight": weight}
    return [
        pc.spiegelhalter_z("p", "y", weight=weight).alias("spiegelhalter_z"),
        pc.spiegelhalter_p("p", "y", weight=weight).alias("spiegelhalter_p"),
        pc.hosmer_lemeshow("p", "y", **binned).alias("hosmer_lemeshow"),
        pc.hosmer_lemeshow_p("p", "y", **binned).alias("hosmer_lemeshow_p"),
        pc.debiased_ece_squared("p", "y", **binned).alias("debiased_ece_squared"),
        pc.debiased_ece("p", "y", **binned).alias("debiased_ece"),
        pc.brier_decomposition("p", "y", **binned).alias("brier_decomposition"),
        pc.calibration_loss("p", "y", **binned).alias("calibration_loss"),
        pc.refinement_loss("p", "y", **binned).alias("refinement_loss"),
        pc.calibration_loss("p", "y", score="log_loss", **binned).alias(
            "log_loss_calibration_loss"
        ),
        pc.refinement_loss("p", "y", score="log_loss", **binned).alias("log_loss_refinement_loss"),
    ]


def unnested(frame: pl.DataFrame) -> pl.DataFrame:
    column = "brier_decomposition" if "brier_decomposition" in frame.columns else "p"
    return frame.unnest(column, separator=".")


# --------------------------------------------------------------------------
# Agreement with the definitions
# --------------------------------------------------------------------------


@settings(max_examples=15)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(20, 400),
    n_bins=st.integers(3, 12),
    strategy=st.sampled_from(["uniform", "quantile"]),
    weighted=st.booleans(),
    decimals=st.sampled_from([None, 2]),
)
@example(seed=12, n=20, n_bins=10, strategy="uniform", weighted=False, decimals=2)  # a bin of p = 0
def test_expressions_match_numpy(
    seed: int, n: int, n_bins: int, strategy: str, weighted: bool, decimals: int | None
) -> None:
    df = make_log(seed, n, decimals=decimals)
    weight = "w" if weighted else None
    p, y = df["p"].to_numpy(), df["y"].to_numpy().astype(float)
    w = df["w"].to_numpy() if weighted else np.ones(n)
    got = unnested(df.select(expressions(n_bins, strategy, weight))).row(0, named=True)
    z = np_spiegelhalter(p, y, w)
    h, h_p = np_hosmer_lemeshow(p, y, w, n_bins, strategy)
    debiased = np_debiased(p, y, w, n_bins, strategy)
    want = {
        "spiegelhalter_z": z,
        "spiegelhalter_p": 2 * scipy_stats.norm.sf(abs(z)),
        "hosmer_lemeshow": h,
        "hosmer_lemeshow_p": h_p,
        "debiased_ece_squared": debiased,
        "debiased_ece": math.sqrt(max(debiased, 0.0)),
        **{
            f"brier_decomposition.{k}": v
            for k, v in np_brier_parts(p, y, w, n_bins, strategy).items()
        },
        **np_losses(p, y, w, n_bins, strategy),
    }
    for name, value in want.items():
        if value is None:
            assert got[name] is None, name
        else:
            assert got[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name


def test_unique_strategy_matches_numpy() -> None:
    df = make_log(3, 500, decimals=1)
    p, y, w = df["p"].to_numpy(), df["y"].to_numpy().astype(float), df["w"].to_numpy()
    want = np_losses(p, y, w, 0, "unique")
    got = df.select(
        calibration_loss=pc.calibration_loss("p", "y", strategy="unique", weight="w"),
        refinement_loss=pc.refinement_loss("p", "y", strategy="unique", weight="w"),
        log_loss_calibration_loss=pc.calibration_loss(
            "p", "y", score="log_loss", strategy="unique", weight="w"
        ),
        log_loss_refinement_loss=pc.refinement_loss(
            "p", "y", score="log_loss", strategy="unique", weight="w"
        ),
    ).row(0, named=True)
    for name, value in want.items():
        assert got[name] == pytest.approx(value, rel=1e-12), name


# MAPIE 1.6.0, mapie.metrics.calibration: spiegelhalter_statistic(y, p) and
# spiegelhalter_p_value(y, p) (= 1 - Phi(Z), the one-sided "greater" p-value),
# computed with MAPIE 1.6.0 (the first two arrays are its docstring examples).
MAPIE_CASES = [
    ([0.1, 0.9, 0.21, 0.9, 0.5], [0, 1, 0, 1, 0], -0.7566972027376642, 0.7753843544681776),
    ([0.8, 0.3, 0.5, 0.5, 0.7, 0.1], [1, 0, 1, 0, 1, 0], -1.0302443927398632, 0.8485523523317797),
    (
        [0.05, 0.2, 0.35, 0.6, 0.75, 0.95, 0.99],
        [0, 0, 1, 1, 0, 1, 1],
        0.5747531852098414,
        0.28272911606398676,
    ),
]


@pytest.mark.parametrize(("p", "y", "z", "p_value"), MAPIE_CASES)
def test_spiegelhalter_matches_mapie_pinned(
    p: list[float], y: list[int], z: float, p_value: float
) -> None:
    df = pl.DataFrame({"p": p, "y": y})
    got = df.select(
        z=pc.spiegelhalter_z("p", "y"),
        greater=pc.spiegelhalter_p("p", "y", alternative="greater"),
        two_sided=pc.spiegelhalter_p("p", "y"),
    ).row(0, named=True)
    assert got["z"] == pytest.approx(z, rel=1e-12)
    # MAPIE computes 1 - cdf: about 1e-16 absolute, not relative, accuracy.
    assert got["greater"] == pytest.approx(p_value, rel=1e-12, abs=1e-15)
    # The default is two-sided, not MAPIE's.
    assert got["two_sided"] == pytest.approx(2 * min(p_value, 1 - p_value), rel=1e-12)


def test_spiegelhalter_matches_mapie_installed() -> None:
    calibration = pytest.importorskip("mapie.metrics.calibration")
    df = make_log(11, 2_000, decimals=None)
    p, y = df["p"].to_numpy(), df["y"].to_numpy()
    got = df.select(
        z=pc.spiegelhalter_z("p", "y"),
        greater=pc.spiegelhalter_p("p", "y", alternative="greater"),
        less=pc.spiegelhalter_p("p", "y", alternative="less"),
        two=pc.spiegelhalter_p("p", "y"),
    ).row(0, named=True)
    z = calibration.spiegelhalter_statistic(y, p)
    assert got["z"] == pytest.approx(z, rel=1e-12)
    assert got["greater"] == pytest.approx(calibration.spiegelhalter_p_value(y, p), rel=1e-9)
    assert got["less"] == pytest.approx(scipy_stats.norm.cdf(z), rel=1e-12)
    assert got["two"] == pytest.approx(2 * scipy_stats.norm.sf(abs(z)), rel=1e-12)


# --------------------------------------------------------------------------
# Identities and the tutorial's numbers
# --------------------------------------------------------------------------


@settings(max_examples=15)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 500),
    n_bins=st.integers(1, 15),
    strategy=st.sampled_from(["uniform", "quantile"]),
    weighted=st.booleans(),
)
def test_brier_decomposition_identity(
    seed: int, n: int, n_bins: int, strategy: str, weighted: bool
) -> None:
    df = make_log(seed, n)
    weight = "w" if weighted else None
    got = (
        df.select(
            parts=pc.brier_decomposition("p", "y", n_bins=n_bins, strategy=strategy, weight=weight),
            brier=pc.brier("p", "y", weight=weight),
            cl=pc.calibration_loss("p", "y", n_bins=n_bins, strategy=strategy, weight=weight),
            rl=pc.refinement_loss("p", "y", n_bins=n_bins, strategy=strategy, weight=weight),
            cl_unique=pc.calibration_loss("p", "y", strategy="unique", weight=weight),
            rl_unique=pc.refinement_loss("p", "y", strategy="unique", weight=weight),
            ll=pc.log_loss("p", "y", weight=weight),
            ll_cl=pc.calibration_loss("p", "y", score="log_loss", strategy="unique", weight=weight),
            ll_rl=pc.refinement_loss("p", "y", score="log_loss", strategy="unique", weight=weight),
        )
        .unnest("parts", separator=".")
        .row(0, named=True)
    )
    if got["brier"] is None:  # all weights zero
        return
    parts = {k: got[f"parts.{k}"] for k in PARTS}
    total = (
        parts["reliability"]
        - parts["resolution"]
        + parts["uncertainty"]
        + parts["within_bin_variance"]
        - parts["within_bin_covariance"]
    )
    assert total == pytest.approx(got["brier"], abs=1e-12)
    assert parts["brier"] == pytest.approx(got["brier"], abs=1e-12)
    # Bins: CL is the reliability, RL = UNC - RES.
    assert got["cl"] == pytest.approx(parts["reliability"], abs=1e-12)
    assert got["rl"] == pytest.approx(parts["uncertainty"] - parts["resolution"], abs=1e-12)
    # One bin per distinct p: the split is exact.
    assert got["cl_unique"] + got["rl_unique"] == pytest.approx(got["brier"], abs=1e-12)
    assert got["ll_cl"] + got["ll_rl"] == pytest.approx(got["ll"], abs=1e-12)


def test_tutorial_numbers() -> None:
    """The calibration tutorial (slides 36-37): 10 positives, 20 negatives."""
    y = [1] * 10 + [0] * 20
    df = pl.DataFrame({"y": y, "prior": [1 / 3] * 30, "sharp": [0.9 if v else 0.1 for v in y]})

    def row(model: str) -> dict[str, float]:
        return df.select(
            ece=pc.ece(model, "y"),
            log_loss=pc.log_loss(model, "y"),
            cl=pc.calibration_loss(model, "y", score="log_loss", strategy="unique"),
            rl=pc.refinement_loss(model, "y", score="log_loss", strategy="unique"),
        ).row(0, named=True)

    prior, sharp = row("prior"), row("sharp")
    assert prior["ece"] == pytest.approx(0.0, abs=1e-15)
    assert round(prior["log_loss"], 4) == 0.6365
    assert prior["cl"] == pytest.approx(0.0, abs=1e-15)
    assert prior["rl"] == pytest.approx(prior["log_loss"], rel=1e-12)
    assert round(sharp["ece"], 4) == 0.1
    assert round(sharp["log_loss"], 4) == 0.1054
    assert sharp["cl"] == pytest.approx(-math.log(0.9), rel=1e-12)
    assert sharp["rl"] == pytest.approx(0.0, abs=1e-15)


# --------------------------------------------------------------------------
# The table route: expression = summary = merged partitions
# --------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [None, "w"])
def test_summary_equals_expressions_and_merged_partitions(weight: str | None) -> None:
    df = make_log(5, 3_000, groups=3, nulls=0.02)
    summary = df.calib.summary("p", "y", by="g", n_bins=10, metrics=DIAGNOSTICS, weight=weight)
    grouped = df.group_by("g").agg(expressions(10, "uniform", weight)).sort("g")
    assert_frame_equal(
        unnested(summary.select("g", *DIAGNOSTICS)), unnested(grouped), rel_tol=1e-9, abs_tol=1e-12
    )
    parts = df.with_columns(part=pl.int_range(pl.len()) % 4).partition_by("part")
    stats = pl.concat(
        [
            pc.bin_statistics(part, "p", "y", by="g", n_bins=10, metrics=DIAGNOSTICS, weight=weight)
            for part in parts
        ]
    )
    merged = pc.metrics_from_statistics(stats, by="g", metrics=DIAGNOSTICS)
    assert_frame_equal(
        unnested(merged),
        unnested(summary.drop("ece", "mce", "rmsce", "brier", "log_loss", strict=False)),
        rel_tol=1e-9,
        abs_tol=1e-12,
    )
    # Rolled up over the key: the whole log.
    whole = pc.metrics_from_statistics(stats, metrics=DIAGNOSTICS)
    one = df.select(expressions(10, "uniform", weight))
    assert_frame_equal(
        unnested(whole.select(DIAGNOSTICS)), unnested(one), rel_tol=1e-9, abs_tol=1e-12
    )


def test_quantile_summary_equals_expressions() -> None:
    df = make_log(6, 2_000, groups=2)
    names = ["hosmer_lemeshow", "hosmer_lemeshow_p", "debiased_ece", "brier_decomposition"]
    summary = df.calib.summary(
        "p", "y", by="g", n_bins=10, strategy="quantile", metrics=names
    ).select("g", *names)
    grouped = (
        df.group_by("g")
        .agg([e for e in expressions(10, "quantile", None) if e.meta.output_name() in names])
        .sort("g")
    )
    assert_frame_equal(unnested(summary), unnested(grouped), rel_tol=1e-9, abs_tol=1e-12)


def test_statistics_hold_exactly_the_sums_asked_for() -> None:
    df = make_log(7, 100)

    def sums(metrics: list[str]) -> list[str]:
        table = pc.bin_statistics(df, "p", "y", metrics=metrics)  # type: ignore[arg-type]
        return [c for c in table.columns if c.startswith("sum_")]

    assert sums(["ece", "hosmer_lemeshow_p", "debiased_ece", "calibration_loss"]) == [
        "sum_p",
        "sum_y",
    ]
    assert sums(["spiegelhalter_p"]) == [
        "sum_p",
        "sum_y",
        "sum_spiegelhalter_numerator",
        "sum_spiegelhalter_variance",
    ]
    assert sums(["brier", "brier_decomposition"]) == [
        "sum_p",
        "sum_y",
        "sum_squared_error",
        "sum_squared_p",
        "sum_p_y",
    ]
    table = pc.bin_statistics(df, "p", "y", metrics=["ece"])
    with pytest.raises(pc.CalibrationDataError, match="sum_spiegelhalter_numerator"):
        pc.metrics_from_statistics(table, metrics=["spiegelhalter_z"])


def test_summary_default_metrics_are_unchanged() -> None:
    df = make_log(8, 50)
    assert df.calib.summary("p", "y").columns == [
        "count",
        "refused",
        "mean_predicted",
        "observed",
        "ece",
        "mce",
        "rmsce",
        "brier",
        "log_loss",
    ]


# --------------------------------------------------------------------------
# Contexts
# --------------------------------------------------------------------------


def test_summary_in_every_data_context(frame_context: FrameContext) -> None:
    df = make_log(9, 1_500, groups=3, nulls=0.02)
    eager = df.calib.summary("p", "y", by="g", n_bins=8, metrics=DIAGNOSTICS, weight="w")
    result = frame_context.frame(df).calib.summary(
        "p", "y", by="g", n_bins=8, metrics=DIAGNOSTICS, weight="w"
    )
    assert_frame_equal(frame_context.collect(result), eager, rel_tol=1e-9, abs_tol=1e-12)


def test_expressions_in_select_group_by_over_and_streaming(frame_context: FrameContext) -> None:
    df = make_log(10, 1_200, groups=3)
    exprs = expressions(8, "uniform", "w")
    want = unnested(df.group_by("g").agg(exprs).sort("g"))
    frame = frame_context.frame(df)
    grouped = frame.group_by("g").agg(exprs).sort("g")
    assert_frame_equal(unnested(frame_context.collect(grouped)), want, rel_tol=1e-9)
    over = frame.select("g", *(e.over("g") for e in exprs)).unique("g").sort("g")
    assert_frame_equal(unnested(frame_context.collect(over)), want, rel_tol=1e-9)
    one = frame.filter(pl.col("g") == 0).select(exprs)
    assert_frame_equal(unnested(frame_context.collect(one)), want[:1].drop("g"), rel_tol=1e-9)


def test_namespace_methods_delegate() -> None:
    df = make_log(12, 300)
    p = pc.col("p").calib
    got = df.select(
        p.spiegelhalter_z("y"),
        p.spiegelhalter_p("y", alternative="less").alias("sp"),
        p.hosmer_lemeshow("y").alias("h"),
        p.hosmer_lemeshow_p("y").alias("hp"),
        p.debiased_ece_squared("y").alias("d2"),
        p.debiased_ece("y").alias("d"),
        p.brier_decomposition("y").struct.field("brier"),
        p.calibration_loss("y", score="log_loss").alias("cl"),
        p.refinement_loss("y", strategy="unique").alias("rl"),
    )
    want = df.select(
        pc.spiegelhalter_z("p", "y"),
        pc.spiegelhalter_p("p", "y", alternative="less").alias("sp"),
        pc.hosmer_lemeshow("p", "y").alias("h"),
        pc.hosmer_lemeshow_p("p", "y").alias("hp"),
        pc.debiased_ece_squared("p", "y").alias("d2"),
        pc.debiased_ece("p", "y").alias("d"),
        pc.brier_decomposition("p", "y").struct.field("brier"),
        pc.calibration_loss("p", "y", score="log_loss").alias("cl"),
        pc.refinement_loss("p", "y", strategy="unique").alias("rl"),
    )
    assert_frame_equal(got, want)


# --------------------------------------------------------------------------
# Small groups, bad data, bad parameters
# --------------------------------------------------------------------------


def test_small_and_degenerate_groups() -> None:
    df = pl.DataFrame(
        {
            "g": ["one", "half", "empty", "refused", "fine", "fine", "fine", "fine"],
            "p": [0.3, 0.5, None, 1.5, 0.2, 0.4, 0.6, 0.8],
            "y": [1, 0, 1, 1, 0, 1, 0, 1],
        }
    )
    got = df.group_by("g").agg(expressions(3, "uniform", None)).sort("g")
    rows = {row["g"]: row for row in got.iter_rows(named=True)}
    for name in DIAGNOSTICS:
        # No used row, or a refused row: null.
        assert rows["empty"][name] is None, name
        assert rows["refused"][name] is None, name
        assert rows["fine"][name] is not None, name
    # One row: Spiegelhalter is defined unless its variance is 0 (p = 1/2); the
    # Hosmer-Lemeshow p-value needs 3 non-empty bins; the rest is defined.
    assert rows["one"]["spiegelhalter_z"] == pytest.approx(0.7 * 0.4 / math.sqrt(0.16 * 0.21))
    assert rows["half"]["spiegelhalter_z"] is None
    assert rows["half"]["spiegelhalter_p"] is None
    assert rows["one"]["hosmer_lemeshow"] is not None
    assert rows["one"]["hosmer_lemeshow_p"] is None
    assert rows["one"]["debiased_ece_squared"] == pytest.approx(0.7**2)  # the plain term
    assert rows["one"]["brier_decomposition"]["brier"] == pytest.approx(0.49)


def test_hosmer_lemeshow_bins_with_no_expected_events() -> None:
    # Every p is 0 in the first bin: no event there adds 0; an event makes H infinite.
    clean = pl.DataFrame({"p": [0.0, 0.0, 0.5, 0.5, 0.9, 0.9], "y": [0, 0, 1, 0, 1, 1]})
    hit = clean.with_columns(y=pl.Series([1, 0, 1, 0, 1, 1]))
    h = pc.hosmer_lemeshow("p", "y", n_bins=3, strategy="uniform")
    h_p = pc.hosmer_lemeshow_p("p", "y", n_bins=3, strategy="uniform")
    # Bins [0, 1/3], (1/3, 2/3], (2/3, 1]: O - E = 0, 0 and 2 - 1.8 (of n = 2).
    assert clean.select(h).item() == pytest.approx(0.2**2 / 1.8 + 0.2**2 / 0.2, rel=1e-12)
    assert hit.select(h).item() == math.inf
    assert hit.select(h_p).item() == 0.0


def test_bad_parameters_raise_when_built() -> None:
    with pytest.raises(ValueError, match="n_bins"):
        pc.hosmer_lemeshow("p", "y", n_bins=2)
    with pytest.raises(ValueError, match="n_bins"):
        pc.hosmer_lemeshow_p("p", "y", n_bins=2)
    with pytest.raises(ValueError, match="alternative"):
        pc.spiegelhalter_p("p", "y", alternative="two_sided")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="score"):
        pc.calibration_loss("p", "y", score="ece")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="strategy"):
        pc.debiased_ece("p", "y", strategy="unique")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n_bins"):
        pc.brier_decomposition("p", "y", n_bins=2.0)  # type: ignore[arg-type]
    df = make_log(13, 50, classes=3)
    with pytest.raises(ValueError, match="n_bins"):
        df.calib.summary("p", "y", n_bins=2, metrics=["hosmer_lemeshow_p"])
    with pytest.raises(ValueError, match="metrics"):
        df.calib.summary("p", "y", metrics=["spiegelhalter"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="binary"):
        df.calib.summary("probs", "cls", metrics=["spiegelhalter_p"])
    with pytest.raises(ValueError, match="binary"):
        pc.bin_statistics(df.lazy(), "probs", "cls", metrics=["brier_decomposition"])


def test_refused_rows_give_null_in_a_lazy_summary_and_raise_on_a_frame() -> None:
    df = pl.DataFrame({"g": [1, 1, 2, 2], "p": [0.2, 1.5, 0.3, 0.6], "y": [0, 1, 1, 0]})
    lazy = df.lazy().calib.summary("p", "y", by="g", n_bins=3, metrics=DIAGNOSTICS).collect()
    assert lazy.filter(pl.col("g") == 1).select(DIAGNOSTICS).row(0) == (None,) * len(DIAGNOSTICS)
    assert lazy.filter(pl.col("g") == 2)["spiegelhalter_z"].item() is not None
    with pytest.raises(pc.CalibrationDataError):
        df.calib.summary("p", "y", by="g", n_bins=3, metrics=DIAGNOSTICS)


# --------------------------------------------------------------------------
# The tests' behaviour under calibration and overconfidence
# --------------------------------------------------------------------------


def _simulated(seeds: int, n: int, sharpen: float) -> pl.DataFrame:
    """`seeds` logs of `n` rows; the model's logit is the truth's times `sharpen`."""
    rng = np.random.default_rng(2024)
    logit = rng.normal(0.0, 1.5, seeds * n)
    truth = 1 / (1 + np.exp(-logit))
    return pl.DataFrame(
        {
            "seed": np.repeat(np.arange(seeds), n),
            "p": 1 / (1 + np.exp(-sharpen * logit)),
            "y": rng.random(seeds * n) < truth,
        }
    )


def test_spiegelhalter_p_values_are_uniform_when_calibrated() -> None:
    df = _simulated(200, 500, 1.0)
    p_values = df.group_by("seed").agg(
        spiegelhalter=pc.spiegelhalter_p("p", "y"),
        hosmer_lemeshow=pc.hosmer_lemeshow_p("p", "y", strategy="uniform"),
    )
    spiegelhalter = p_values["spiegelhalter"].to_numpy()
    assert scipy_stats.kstest(spiegelhalter, "uniform").pvalue > 0.001
    # Hosmer-Lemeshow's chi-square is asymptotic: only a loose check of its mean.
    assert 0.35 < p_values["hosmer_lemeshow"].mean() < 0.65  # type: ignore[operator]


def test_p_values_are_near_zero_when_overconfident() -> None:
    df = _simulated(20, 2_000, 2.0)
    p_values = df.group_by("seed").agg(
        z=pc.spiegelhalter_z("p", "y"),
        mapie=pc.spiegelhalter_p("p", "y", alternative="greater"),
        hl=pc.hosmer_lemeshow_p("p", "y"),
    )
    assert (p_values["z"] > 0).all()  # a Brier score too large: positive Z
    assert (p_values["mapie"] < 1e-3).all()
    assert (p_values["hl"] < 1e-3).all()


def test_group_by_dynamic_windows_equal_each_window_alone() -> None:
    df = make_log(14, 600).with_columns(
        ts=pl.datetime(2024, 1, 1) + pl.duration(hours=pl.int_range(pl.len()))
    )
    exprs = expressions(6, "uniform", "w")
    got = unnested(df.group_by_dynamic("ts", every="5d").agg(exprs))
    windows = df.with_columns(ts=pl.col("ts").dt.truncate("5d")).partition_by("ts")
    want = unnested(pl.concat([w.select(pl.col("ts").first(), *exprs) for w in windows]))
    assert_frame_equal(got, want, rel_tol=1e-9, abs_tol=1e-12)


def test_quantile_statistics_of_partitions_do_not_merge() -> None:
    df = make_log(15, 400)
    stats = pl.concat(
        [
            pc.bin_statistics(part, "p", "y", n_bins=10, strategy="quantile", metrics=["ece"])
            for part in df.with_columns(k=pl.int_range(pl.len()) % 2).partition_by("k")
        ]
    )
    with pytest.raises(pc.CalibrationDataError, match="cannot be merged"):
        pc.metrics_from_statistics(stats, metrics=["hosmer_lemeshow_p"])
    lazy = pc.metrics_from_statistics(stats.lazy(), metrics=["hosmer_lemeshow_p"]).collect()
    assert lazy["hosmer_lemeshow_p"].item() is None


def test_no_unstable_polars_feature() -> None:
    df = make_log(16, 200)
    with pl.Config(warn_unstable=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        df.select(expressions(5, "uniform", None))
        df.select(expressions(5, "quantile", "w"))
        df.select(pc.calibration_loss("p", "y", strategy="unique"))
        for data in (df, df.lazy()):
            result = data.calib.summary("p", "y", n_bins=5, metrics=DIAGNOSTICS)
            if isinstance(result, pl.LazyFrame):
                result.collect()


def test_pos_label_equals_zero_one_labels() -> None:
    df = make_log(17, 300).with_columns(
        outcome=pl.when(pl.col("y") == 1).then(pl.lit("churned")).otherwise(pl.lit("stayed"))
    )
    want = unnested(df.select(expressions(5, "uniform", "w")))
    got = unnested(
        df.select(
            pc.spiegelhalter_z("p", "outcome", weight="w", pos_label="churned").alias("z"),
            pc.spiegelhalter_p("p", "outcome", weight="w", pos_label="churned").alias("sp"),
            pc.hosmer_lemeshow_p(
                "p", "outcome", n_bins=5, strategy="uniform", weight="w", pos_label="churned"
            ).alias("hl"),
            pc.brier_decomposition("p", "outcome", n_bins=5, weight="w", pos_label="churned"),
        )
    )
    assert got.row(0) == pytest.approx(
        want.select(
            "spiegelhalter_z", "spiegelhalter_p", "hosmer_lemeshow_p", "^brier_decomposition.*$"
        ).row(0),
        rel=1e-12,
    )
    summary = df.calib.summary(
        "p", "outcome", pos_label="churned", weight="w", n_bins=5, metrics=["spiegelhalter_z"]
    )
    assert summary["spiegelhalter_z"].item() == pytest.approx(want["spiegelhalter_z"].item())


def test_expressions_are_named_after_the_probability() -> None:
    df = make_log(18, 100)
    names = [
        df.select(expr).columns
        for expr in (
            pc.spiegelhalter_z("p", "y"),
            pc.spiegelhalter_p("p", "y"),
            pc.hosmer_lemeshow("p", "y"),
            pc.hosmer_lemeshow_p("p", "y", strategy="uniform"),
            pc.debiased_ece("p", "y"),
            pc.brier_decomposition("p", "y"),
            pc.calibration_loss("p", "y", strategy="unique"),
            pc.refinement_loss("p", "y"),
        )
    ]
    assert names == [["p"]] * 8


def test_metric_names_are_the_function_names() -> None:
    """``"calibration_loss"`` is ``pc.calibration_loss`` at its defaults; the old names warn
    and keep their columns (and their intervals')."""
    df = make_log(24, 500)
    options: dict[str, Any] = {"n_bins": 8, "weight": "w"}
    new = pc.summary(df, "p", "y", metrics=["calibration_loss", "refinement_loss"], **options)
    expected = df.select(
        calibration_loss=pc.calibration_loss("p", "y", **options),
        refinement_loss=pc.refinement_loss("p", "y", **options),
    )
    assert_frame_equal(new.select(expected.columns), expected, rel_tol=1e-12)
    old_names = ["brier_calibration_loss", "brier_refinement_loss"]
    with pytest.warns(DeprecationWarning, match="brier_calibration_loss"):
        old = pc.summary(df, "p", "y", metrics=old_names, **options)  # type: ignore[list-item]
    assert_frame_equal(old, new.rename(dict(zip(expected.columns, old_names))))
    message = "use metrics=\\['calibration_loss', 'refinement_loss'\\]"
    with pytest.warns(DeprecationWarning, match=message):
        stats = pc.bin_statistics(df, "p", "y", metrics=old_names, **options)  # type: ignore[list-item]
    with pytest.warns(DeprecationWarning):
        finished = pc.metrics_from_statistics(stats, metrics=old_names)  # type: ignore[list-item]
    assert finished.columns[-2:] == old_names
    with pytest.warns(DeprecationWarning):
        bounded = pc.summary(
            df,
            "p",
            "y",
            metrics=["brier_calibration_loss"],
            n_resamples=5,
            **options,  # type: ignore[list-item]
        )
    assert bounded.columns[-3:] == [f"brier_calibration_loss{s}" for s in ("", "_lower", "_upper")]
