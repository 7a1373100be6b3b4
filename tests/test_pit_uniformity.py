"""Uniformity tests of the Gaussian PIT per group: KS and the chi-square of the histogram.

Reference numbers: scipy 1.17.1's ``kstest`` and ``chisquare``, computed once in the side
environment (``tests/data/regression/make_pit_uniformity.py`` wrote
``pit_uniformity.json``); the suite never imports scipy.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import FrameContext

DATA = Path(__file__).parent / "data" / "regression"


@cache
def _scipy() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "pit_uniformity.json").read_text())
    return data


def _rows(record: dict[str, Any]) -> pl.DataFrame:
    if record["dataset"] == "gaussian":
        columns = json.loads((DATA / "fixtures.json").read_text())["datasets"]["gaussian"]
        df = pl.DataFrame({k: columns[k] for k in ("group", "mu", "sigma", "y")})
        return df if record["group"] is None else df.filter(pl.col("group") == record["group"])
    return pl.DataFrame(_scipy()["datasets"][record["dataset"]])


def _id(record: dict[str, Any]) -> str:
    return f"{record['dataset']}-{record['group']}"


def _tests(n_bins: int = 10, weight: str | None = None) -> list[pl.Expr]:
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "weight": weight}
    return [
        pc.pit_ks("y", **options).alias("ks"),
        pc.pit_ks_p("y", **options).alias("ks_p"),
        pc.pit_chi2("y", n_bins=n_bins, **options).alias("chi2"),
        pc.pit_chi2_p("y", n_bins=n_bins, **options).alias("chi2_p"),
    ]


@pytest.mark.parametrize("record", _scipy()["records"], ids=_id)
def test_ks_and_chi2_reproduce_scipy(record: dict[str, Any]) -> None:
    for n_bins in (4, 10):
        got = _rows(record).select(_tests(n_bins)).row(0, named=True)
        statistic, p_value = record["ks_asymp"]
        assert got["ks"] == pytest.approx(statistic, rel=1e-12)
        assert got["ks_p"] == pytest.approx(p_value, rel=1e-12)
        statistic, p_value = record[f"chi2_{n_bins}"]
        assert got["chi2"] == pytest.approx(statistic, rel=1e-12)
        assert got["chi2_p"] == pytest.approx(p_value, rel=1e-12)
        # The p-value is the asymptotic law's: above scipy's exact one for these n.
        assert got["ks"] == pytest.approx(record["ks_exact"][0], rel=1e-12)
        assert got["ks_p"] > record["ks_exact"][1]


def test_the_histogram_is_right_closed() -> None:
    # y = mu + sigma * z with Phi(z) exactly 1/2 (z = 0): in bin [0, 1/2] of two bins.
    df = pl.DataFrame({"y": [0.0, 0.0, 0.0, 5.0], "mu": 0.0, "sigma": 1.0})
    got = df.select(pc.pit_chi2("y", mean="mu", std="sigma", n_bins=2)).item()
    # Right-closed: O = (3, 1), X² = 2 (1² + 1²) / 2 = 1; left-closed would give 4.
    assert got == 1.0


def test_ks_is_the_largest_gap_of_the_empirical_cdf() -> None:
    # PIT values 0.5, 0.5, 0.5 and ~1: F_n jumps to 3/4 at 1/2.
    df = pl.DataFrame({"y": [0.0, 0.0, 0.0, 40.0], "mu": 0.0, "sigma": 1.0})
    assert df.select(pc.pit_ks("y", mean="mu", std="sigma")).item() == 0.5 - 0.0
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=3)
    assert shuffled.select(pc.pit_ks("y", mean="mu", std="sigma")).item() == 0.5


def test_integer_weights_count_rows_twice() -> None:
    rng = np.random.default_rng(5)
    df = pl.DataFrame(
        {"y": rng.normal(0.3, 1.4, 40), "mu": 0.0, "sigma": 1.0, "w": rng.integers(0, 4, 40)}
    ).with_columns(pl.col("w").cast(pl.Float64))
    repeated = df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode()).drop("w")
    expected = repeated.select(_tests())
    got = df.select(_tests(weight="w"))
    assert_frame_equal(got, expected, rel_tol=1e-12)


def test_groups_contexts_and_bad_rows(frame_context: FrameContext) -> None:
    rng = np.random.default_rng(11)
    n = 300
    g = rng.integers(0, 3, n)
    sigma = rng.uniform(0.5, 2.0, n)
    # Group 0 calibrated, 1 over-confident (sigma too small), 2 refused (a sigma of 0).
    y = rng.normal(0.0, 1.0, n) * sigma * np.where(g == 1, 2.5, 1.0)
    sigma[np.flatnonzero(g == 2)[0]] = 0.0
    df = pl.DataFrame({"g": g, "y": y, "mu": 0.0, "sigma": sigma})
    df = df.vstack(pl.DataFrame({"g": [0], "y": [None], "mu": [0.0], "sigma": [1.0]}))
    query = frame_context.frame(df).group_by("g").agg(_tests()).sort("g")
    got = frame_context.collect(query)
    for group in (0, 1):
        one = df.filter((pl.col("g") == group) & pl.col("y").is_not_null())
        assert_frame_equal(got.filter(pl.col("g") == group).drop("g"), one.select(_tests()))
    assert got.row(2) == (2, None, None, None, None)
    assert got["ks_p"][0] > 0.05 and got["ks_p"][1] < 1e-4
    assert got["chi2_p"][0] > 0.05 and got["chi2_p"][1] < 1e-6
    ks = pc.pit_ks("y", mean="mu", std="sigma").over("g")
    over = frame_context.collect(frame_context.frame(df).select(pl.col("g"), ks))
    assert over.filter(pl.col("g") == 1)["y"].unique().to_list() == [got["ks"][1]]


def test_the_p_values_tail_keeps_relative_accuracy() -> None:
    # 200 targets far above: D = 1 - Phi(z) ~ 1, p = kstwobign.sf(sqrt(200)) ~ 2e-174.
    df = pl.DataFrame({"y": np.linspace(8.0, 9.0, 200), "mu": 0.0, "sigma": 1.0})
    got = df.select(pc.pit_ks_p("y", mean="mu", std="sigma")).item()
    d = 1.0 - 0.5 * math.erfc(8.0 / math.sqrt(2.0))
    x = d * math.sqrt(200.0)
    expected = 2.0 * sum((-1.0) ** (k - 1) * math.exp(-2.0 * k * k * x * x) for k in range(1, 6))
    assert got == pytest.approx(expected, rel=1e-12)
    assert got < 1e-150


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        pc.pit_chi2_p("y", mean="mu", std="sigma", n_bins=1)
    with pytest.raises(ValueError, match="n_bins"):
        pc.pit_chi2("y", mean="mu", std="sigma", n_bins=0)


@pytest.mark.parametrize("n_bins", [7, 40, 41, 64])
def test_masked_and_windowed_histograms_agree_with_numpy(n_bins: int) -> None:
    # Up to 40 bins each is a masked sum, above a window over the bin index.
    rng = np.random.default_rng(n_bins)
    df = pl.DataFrame({"y": rng.normal(0.2, 1.3, 500), "mu": 0.0, "sigma": 1.0})
    u = df.select(pc.pit("y", mean="mu", std="sigma")).to_series().to_numpy()
    inner = np.array([k / n_bins for k in range(1, n_bins)])
    counts = np.bincount(np.searchsorted(inner, u, side="left"), minlength=n_bins)
    expected = 500 / n_bins
    statistic = float(np.sum((counts - expected) ** 2 / expected))
    got = df.select(pc.pit_chi2("y", mean="mu", std="sigma", n_bins=n_bins)).item()
    assert got == pytest.approx(statistic, rel=1e-12)


def test_the_statistics_table_holds_the_histogram() -> None:
    # 6 bins of the PIT divide the table's 2 (n_levels - 1) = 12: summed, the same counts.
    rng = np.random.default_rng(9)
    df = pl.DataFrame({"y": rng.normal(0.4, 1.0, 300), "mu": 0.0, "sigma": 1.0})
    stats = pc.regression_statistics(df, "y", mean="mu", std="sigma", n_levels=7)
    counts = (
        stats.group_by(pl.col("bin") // 2)
        .agg(pl.col("weight").sum())
        .select(pl.col("weight"))
        .to_series()
        .to_numpy()
    )
    counts = np.concatenate([counts, np.zeros(6 - len(counts))])
    statistic = float(np.sum((counts - 50.0) ** 2 / 50.0))
    got = df.select(pc.pit_chi2("y", mean="mu", std="sigma", n_bins=6)).item()
    assert got == pytest.approx(statistic, rel=1e-12)
