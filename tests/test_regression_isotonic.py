"""Isotonic recalibration of the Gaussian PIT per group (Kuleshov et al. 2018)."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist

import numpy as np
import polars as pl
import pytest

import polars_calib as pc

PHI = NormalDist().cdf
PHI_INV = NormalDist().inv_cdf


def _small() -> pl.DataFrame:
    return pl.DataFrame({"y": [-2.0, -1.0, 1.0, 2.0], "mu": 0.0, "sigma": 1.0})


def test_a_hand_computed_map() -> None:
    cal = pc.fit_regression_calibrator(_small(), "y", mean="mu", std="sigma", method="isotonic")
    (row,) = cal.params.iter_rows(named=True)
    # The empirical CDF of the PITs, with the anchors (0, 0) and (1, 1).
    assert row["count"] == 4 and row["fallback"] is False
    assert row["x"] == pytest.approx([0.0, PHI(-2), PHI(-1), PHI(1), PHI(2), 1.0], rel=1e-15)
    assert row["y"] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]
    new = pl.DataFrame({"y": [0.0, -3.0, 5.0], "mu": 0.0, "sigma": 1.0})
    got = new.select(cal.cdf_expr("y"), cal.quantile_expr(0.125).alias("q"))
    # R(1/2): a quarter of the way... linear between (Phi(-1), 1/2) and (Phi(1), 3/4).
    share = (0.5 - PHI(-1)) / (PHI(1) - PHI(-1))
    assert got["y"][0] == pytest.approx(0.5 + 0.25 * share, rel=1e-13)
    assert got["y"][1] == pytest.approx(0.25 * PHI(-3) / PHI(-2), rel=1e-12)
    assert got["y"][2] == 1.0
    # R^-1(1/8) = Phi(-2) / 2: the quantile is Phi^-1 of it (mu = 0, sigma = 1).
    assert got["q"][0] == pytest.approx(PHI_INV(PHI(-2) / 2), rel=1e-12)
    lower, upper = new.select(*cal.interval_exprs(level=0.5)).row(0)
    # The central 50% interval: R^-1(1/4) = Phi(-2) and R^-1(3/4) = Phi(1).
    assert lower == pytest.approx(-2.0, rel=1e-12)
    assert upper == pytest.approx(1.0, rel=1e-12)


def _log(seed: int, n: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    g = np.repeat(["over", "under", "shifted"], n)
    mu = rng.normal(0.0, 2.0, 3 * n)
    sigma = rng.uniform(0.5, 2.0, 3 * n)
    # Over-confident (spread 2 sigma), under-confident (0.4 sigma), biased (+0.8 sigma).
    scale = np.select([g == "over", g == "under"], [2.0, 0.4], 1.0)
    shift = np.where(g == "shifted", 0.8, 0.0)
    y = mu + sigma * (shift + scale * rng.normal(size=3 * n))
    return pl.DataFrame({"g": g, "y": y, "mu": mu, "sigma": sigma})


def test_held_out_quantile_curves_come_near_the_diagonal() -> None:
    train, test = _log(1, 3000), _log(2, 3000)
    cal = pc.fit_regression_calibrator(
        train, "y", mean="mu", std="sigma", by="g", method="isotonic"
    )
    levels = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]

    def gaps(quantile: pl.Expr) -> pl.Expr:
        return ((pl.col("y") <= quantile).mean() - pl.lit(level)).abs()

    before, after = [], []
    for level in levels:
        raw = pl.col("mu") + pl.col("sigma") * PHI_INV(level)
        table = test.group_by("g").agg(b=gaps(raw), a=gaps(cal.quantile_expr(level)))
        before.append(table["b"].max())
        after.append(table["a"].max())
    assert max(before) > 0.15
    assert max(after) < 0.03
    # The recalibrated PIT is uniform on held-out data, per group.
    pits = test.with_columns(u=cal.cdf_expr("y"))
    ks = pits.group_by("g").agg(pc.pit_ks("y", mean="mu", std="sigma").alias("raw"))
    assert ks["raw"].min() > 0.1
    for level in levels:
        shares = pits.group_by("g").agg((pl.col("u") <= level).mean())["u"]
        assert (shares - level).abs().max() < 0.03


def test_integer_weights_are_repeated_rows_and_zero_weights_fall_back() -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame(
        {
            "g": np.repeat([1, 2], 30),
            "y": rng.normal(0.0, 1.5, 60).round(1),  # ties in the PIT
            "mu": 0.0,
            "sigma": 1.0,
            "w": np.concatenate([rng.integers(1, 4, 30), np.zeros(30)]).astype(float),
        }
    )
    weighted = pc.fit_regression_calibrator(
        df, "y", mean="mu", std="sigma", by="g", method="isotonic", weight="w"
    )
    repeated = df.filter(pl.col("g") == 1).select(
        pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode()
    )
    plain = pc.fit_regression_calibrator(repeated, "y", mean="mu", std="sigma", method="isotonic")
    assert weighted.params["x"][0].to_list() == plain.params["x"][0].to_list()
    assert weighted.params["y"][0].to_list() == pytest.approx(
        plain.params["y"][0].to_list(), rel=1e-15
    )
    # Group 2 has no weight: the identity map, flagged.
    assert weighted.params.row(1) == (2, 30, True, [0.0, 1.0], [0.0, 1.0])
    new = pl.DataFrame({"g": [2, 3], "y": [0.5, 0.5], "mu": 0.0, "sigma": 1.0})
    got = new.select(cal=weighted.cdf_expr("y"), q=weighted.quantile_expr(0.9))
    assert got["cal"].to_list() == [pytest.approx(PHI(0.5), rel=1e-15), None]
    assert got["q"].to_list() == [pytest.approx(PHI_INV(0.9), rel=1e-13), None]


def test_saved_and_loaded(tmp_path: Path) -> None:
    cal = pc.fit_regression_calibrator(
        _log(5, 200), "y", mean="mu", std="sigma", by="g", method="isotonic", level=0.8
    )
    path = cal.save(tmp_path / "cal.json")
    loaded = pc.load_regression_calibrator(path)
    assert loaded.method == "isotonic" and loaded.level == 0.8
    assert loaded.params.equals(cal.params)
    test = _log(6, 100).lazy()
    expected = cal.apply(test).collect(engine="streaming")
    assert loaded.apply(test).collect(engine="streaming").equals(expected)
    assert expected.select((pl.col("lower") < pl.col("upper")).all()).item()
    content = json.loads(path.read_text())
    content["params"]["rows"][1]["x"][0] = 0.1
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"params\.rows\[1\]\.x"):
        pc.load_regression_calibrator(path)
    content["params"]["rows"][1]["x"][0] = 0.0
    content["params"]["rows"][1]["y"].pop()
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"params\.rows\[1\]\.y"):
        pc.load_regression_calibrator(path)


def test_refused_rows_and_misuse() -> None:
    bad = _small().with_columns(sigma=pl.Series([1.0, 0.0, 1.0, 1.0]))
    with pytest.raises(pc.CalibrationDataError, match="standard deviation"):
        pc.fit_regression_calibrator(bad, "y", mean="mu", std="sigma", method="isotonic")
    cal = pc.fit_regression_calibrator(_small(), "y", mean="mu", std="sigma", method="isotonic")
    assert bad.select(cal.cdf_expr("y"))["y"].to_list()[1] is None
    with pytest.raises(ValueError, match="cdf_expr"):
        cal.expr()
    scaled = pc.fit_regression_calibrator(_small(), "y", mean="mu", std="sigma")
    with pytest.raises(ValueError, match="isotonic"):
        scaled.cdf_expr("y")
    with pytest.raises(ValueError, match="level"):
        cal.quantile_expr(1.0)
    # R reaches 1 at Phi(2): the quantile at level 1 - 1e-12 is finite, just below 2.
    assert _small().select(cal.quantile_expr(1 - 1e-12)).item(0, 0) == pytest.approx(2.0, rel=1e-9)


def test_pits_of_exactly_0_and_1_keep_their_mass(tmp_path: Path) -> None:
    # z = -50 and 50: PITs of exactly 0 and 1, so no anchor is added at either end.
    train = pl.DataFrame({"y": [-50.0, -1.0, 1.0, 50.0], "mu": 0.0, "sigma": 1.0})
    cal = pc.fit_regression_calibrator(train, "y", mean="mu", std="sigma", method="isotonic")
    assert cal.params["x"][0].to_list() == pytest.approx([0.0, PHI(-1), PHI(1), 1.0], rel=1e-15)
    assert cal.params["y"][0].to_list() == [0.25, 0.5, 0.75, 1.0]
    # A quarter of the mass sits at PIT 0: every quantile below 1/4 is -inf.
    quantiles = train.head(1).select(cal.quantile_expr(0.1), cal.quantile_expr(0.5).alias("m"))
    assert quantiles.row(0) == (-float("inf"), pytest.approx(-1.0, rel=1e-12))
    loaded = pc.load_regression_calibrator(cal.save(tmp_path / "cal.json"))
    assert loaded.params.equals(cal.params)


def test_nothing_fitted_gives_null() -> None:
    empty = pl.DataFrame({"g": [1], "y": [1.0], "mu": 0.0, "sigma": 1.0}).clear()
    cal = pc.fit_regression_calibrator(
        empty, "y", mean="mu", std="sigma", by="g", method="isotonic"
    )
    new = pl.DataFrame({"g": [1], "y": [1.0], "mu": 0.0, "sigma": 1.0})
    assert new.select(cal.cdf_expr("y"), cal.quantile_expr(0.5)).row(0) == (None, None)
