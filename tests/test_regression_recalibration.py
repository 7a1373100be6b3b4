"""Per-group recalibration of Gaussian predictions: σ scaling and split-conformal intervals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_calib as pc
import reference_regression as rr

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"


def gaussian_log(n: int, seed: int) -> pl.DataFrame:
    """Group "a" over-confident (noise 1.8 σ), "b" under-confident (0.5 σ), "c" calibrated."""
    rng = np.random.default_rng(seed)
    groups = np.array(["a", "b", "c"])[rng.integers(0, 3, n)]
    factor = np.select([groups == "a", groups == "b"], [1.8, 0.5], 1.0)
    mu = rng.normal(0.0, 2.0, n)
    sigma = rng.uniform(0.3, 2.0, n)
    y = mu + factor * sigma * rng.standard_normal(n)
    weight = rng.uniform(0.5, 2.0, n)
    return pl.DataFrame({"g": groups, "y": y, "mu": mu, "sigma": sigma, "w": weight})


def test_std_scaling_is_the_nll_minimum() -> None:
    train = gaussian_log(600, 1)
    cal = pc.fit_regression_calibrator(train, "y", mean="mu", std="sigma", by="g", weight="w")
    assert cal.params.columns == ["g", "count", "fallback", "scale"]
    for row in cal.params.iter_rows(named=True):
        part = train.filter(pl.col("g") == row["g"])
        y, mu, sigma, w = (part[c].to_numpy() for c in ("y", "mu", "sigma", "w"))
        s2 = np.sum(w * ((y - mu) / sigma) ** 2) / np.sum(w)
        assert row["scale"] == pytest.approx(math.sqrt(s2), rel=1e-12)
        # Brute force: the weighted NLL over a grid of scales is smallest at the fit.
        grid = np.linspace(0.2, 3.0, 2801)
        nll = [np.sum(w * rr.nll_gaussian_rows(y, mu, s * sigma)) for s in grid]
        assert abs(grid[int(np.argmin(nll))] - row["scale"]) <= 1e-3
    scales = dict(cal.params.select("g", "scale").iter_rows())
    assert scales["a"] > 1.5 and scales["b"] < 0.7  # the miscalibration changes sign


def test_std_scaling_improves_held_out_calibration_per_group() -> None:
    cal = pc.fit_regression_calibrator(gaussian_log(900, 2), "y", mean="mu", std="sigma", by="g")
    test = cal.apply(gaussian_log(900, 3))
    metrics: list[pc.RegressionMetric] = ["mean_absolute_calibration_error", "nll"]
    before = pc.regression_summary(test, "y", mean="mu", std="sigma", by="g", metrics=metrics)
    after = pc.regression_summary(
        test, "y", mean="mu", std="sigma_calibrated", by="g", metrics=metrics
    )
    for group in ("a", "b"):
        b, a = (t.filter(pl.col("g") == group).row(0, named=True) for t in (before, after))
        assert a["mean_absolute_calibration_error"] < b["mean_absolute_calibration_error"] / 2
        assert a["nll"] < b["nll"]


def test_expression_on_a_lazy_frame_and_unseen_group() -> None:
    cal = pc.fit_regression_calibrator(gaussian_log(300, 4), "y", mean="mu", std="sigma", by="g")
    new = pl.LazyFrame({"g": ["b", "z", "a"], "sigma": [1.0, 1.0, 2.0]})
    plan = new.with_columns(sigma_cal=cal.expr())
    assert isinstance(plan, pl.LazyFrame)
    out = plan.collect(engine="streaming")["sigma_cal"].to_list()
    scales = dict(cal.params.select("g", "scale").iter_rows())
    assert out == [scales["b"], None, 2.0 * scales["a"]]


def test_fixtures_conformal_quantiles() -> None:
    fixtures = json.loads(FIXTURES.read_text())
    cases = fixtures["datasets"]["split_conformal"]["cases"]
    frames = [
        pl.DataFrame({"case": i, "y": case["scores"], "mu": 0.0, "sigma": 1.0})
        for i, case in enumerate(cases)
    ]
    for i, case in enumerate(cases):
        cal = pc.fit_regression_calibrator(
            frames[i], "y", mean="mu", std="sigma", method="conformal", level=1 - case["alpha"]
        )
        assert cal.params["quantile"].item() == case["value"]
        assert case["value"] == rr.conformal_quantile(case["scores"], case["alpha"])
    (record,) = [r for r in fixtures["records"] if r["function"].endswith("predict_interval")]
    case = cases[record["options"]["case"]]
    cal = pc.fit_regression_calibrator(
        frames[record["options"]["case"]].with_columns(g=1),
        "y",
        mean="mu",
        std="sigma",
        by="g",
        method="conformal",
        level=1 - case["alpha"],
    )
    bounds = pl.DataFrame({"g": [1], "mu": [0.0], "sigma": [1.0]}).select(*cal.interval_exprs())
    assert list(bounds.row(0)) == record["value"]


def test_conformal_too_few_rows_is_infinite() -> None:
    # n = 8 at level 0.9: ceil(9 * 0.9) = 9 > 8; n = 9 at 0.9: the 9th (largest) score.
    data = pl.DataFrame(
        {
            "g": [1] * 8 + [2] * 9,
            "y": [float(i) for i in range(1, 9)] + [float(i) for i in range(1, 10)],
            "mu": 0.0,
            "sigma": 1.0,
        }
    )
    cal = pc.fit_regression_calibrator(
        data, "y", mean="mu", std="sigma", by="g", method="conformal"
    )
    assert cal.params["quantile"].to_list() == [math.inf, 9.0]
    assert cal.params["fallback"].to_list() == [True, False]
    lower, upper = cal.interval_exprs()
    out = data.head(1).select(lower, upper)
    assert out.row(0) == (-math.inf, math.inf)


def test_conformal_coverage_on_held_out_data_per_group() -> None:
    cal = pc.fit_regression_calibrator(
        gaussian_log(900, 5), "y", mean="mu", std="sigma", by="g", method="conformal", level=0.9
    )
    test = cal.apply(gaussian_log(3000, 6))
    covered = (pl.col("lower") <= pl.col("y")) & (pl.col("y") <= pl.col("upper"))
    coverage = test.group_by("g").agg(covered.mean().alias("y"))
    # 0.9 up to sampling error on ~1000 rows per group (the exact guarantee: below)
    assert coverage["y"].cast(pl.Float64).to_numpy().min() >= 0.88
    inside = (pl.col("y") - pl.col("mu")).abs() <= 1.645 * pl.col("sigma")
    raw = test.group_by("g").agg(inside.mean().alias("y"))
    # the raw 90% Gaussian intervals of group "a" undercover
    assert raw["y"].cast(pl.Float64).to_numpy().min() < 0.7


def test_refused_rows_raise_with_counts() -> None:
    data = pl.LazyFrame({"y": [1.0, 2.0, float("nan")], "mu": 0.0, "sigma": [1.0, -1.0, 1.0]})
    with pytest.raises(pc.CalibrationDataError, match=r"'y'.*1 of 3 rows.*'sigma'.*1 of 3 rows"):
        pc.fit_regression_calibrator(data, "y", mean="mu", std="sigma")
    with pytest.raises(ValueError, match="level"):
        pc.fit_regression_calibrator(data, "y", mean="mu", std="sigma", level=1.0)
    with pytest.raises(ValueError, match="weight"):
        pc.fit_regression_calibrator(
            data, "y", mean="mu", std="sigma", method="conformal", weight="mu"
        )


def test_group_without_usable_rows_falls_back_to_scale_one() -> None:
    data = pl.DataFrame(
        {"g": [1, 1, 2, 3, 3], "y": [1.0, 3.0, None, 0.0, 0.0], "mu": 0.0, "sigma": 1.0}
    )
    params = pc.fit_regression_calibrator(data, "y", mean="mu", std="sigma", by="g").params
    assert params["count"].to_list() == [2, 0, 2]
    assert params["fallback"].to_list() == [False, True, True]
    assert params["scale"].to_list() == [math.sqrt(5.0), 1.0, 1.0]


@pytest.mark.parametrize("method", ["std_scaling", "conformal"])
def test_save_load_round_trip(tmp_path: Path, method: str) -> None:
    data = gaussian_log(60, 7).with_columns(
        pl.when(pl.col("g") == "c").then(pl.lit("d")).otherwise(pl.col("g")).alias("g")
    )
    data = pl.concat([data, data.head(3).with_columns(g=pl.lit("tiny"))])
    cal = pc.fit_regression_calibrator(
        data,
        "y",
        mean="mu",
        std="sigma",
        by="g",
        method=method,  # type: ignore[arg-type]
    )
    loaded = pc.load_regression_calibrator(cal.save(tmp_path / "cal.json"))
    assert loaded.params.equals(cal.params)
    assert (loaded.method, loaded.by, loaded.mean, loaded.std, loaded.level, loaded.schema) == (
        cal.method,
        cal.by,
        cal.mean,
        cal.std,
        cal.level,
        cal.schema,
    )
    assert data.select(loaded.expr()).equals(data.select(cal.expr()))


def test_load_refuses_a_tampered_file(tmp_path: Path) -> None:
    data = pl.DataFrame({"g": [1, 1, 2, 2], "y": [1.0, -1.0, 2.0, 0.5], "mu": 0.0, "sigma": 1.0})
    path = pc.fit_regression_calibrator(data, "y", mean="mu", std="sigma", by="g").save(
        tmp_path / "cal.json"
    )
    content = json.loads(path.read_text())
    content["params"]["rows"][1]["scale"] = -2.0
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"params\.rows\[1\]\.scale"):
        pc.load_regression_calibrator(path)
    content["params"]["rows"][1]["scale"] = 1.0
    content["params"]["rows"][0]["fallback"] = "no"
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"params\.rows\[0\]\.fallback"):
        pc.load_regression_calibrator(path)
    content["params"]["rows"][0]["fallback"] = False
    content["method"] = "histogram"
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"method"):
        pc.load_regression_calibrator(path)
    # Another method's file must hold that method's parameters.
    content["method"] = "isotonic"
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"params\.columns\.x: is missing"):
        pc.load_regression_calibrator(path)
    path.write_text(json.dumps({"format": "polars_calib.calibrator"}))
    with pytest.raises(pc.CalibrationDataError, match="not a regression calibrator"):
        pc.load_regression_calibrator(path)


def test_expression_keys_are_computed_again_and_not_saved(tmp_path: Path) -> None:
    data = gaussian_log(300, 8)
    key = pl.col("g").str.to_uppercase().alias("G")
    cal = pc.fit_regression_calibrator(data, "y", mean="mu", std="sigma", by=key)
    plain = pc.fit_regression_calibrator(data, "y", mean="mu", std="sigma", by="g")
    assert cal.params["scale"].equals(plain.params["scale"])
    assert data.select(cal.expr()).equals(data.select(plain.expr()))
    with pytest.raises(ValueError, match="expression keys"):
        cal.save(tmp_path / "cal.json")


def test_conformal_rank_is_the_exact_ceiling() -> None:
    # (24 + 1) * 0.28 is 7.000000000000001 in floats: a float ceiling would take the 8th.
    scores = [float(i) for i in range(1, 25)]
    data = pl.DataFrame({"y": scores, "mu": 0.0, "sigma": 1.0})
    cal = pc.fit_regression_calibrator(
        data, "y", mean="mu", std="sigma", method="conformal", level=0.28
    )
    assert cal.params["quantile"].item() == 7.0 == rr.conformal_quantile(scores, 0.72)


def test_conformal_expected_coverage_is_the_guarantee_per_group() -> None:
    # 400 calibration sets of n = 30 rows for each group, fitted in one call (by rep, g):
    # each set's coverage of a new row is exact (the noise is 1.8 σ N(0, 1) in "a",
    # 0.5 σ N(0, 1) in "b"), and its mean over sets is k / (n + 1) = 28 / 31 >= 0.9.
    rng = np.random.default_rng(9)
    reps, n = 400, 30
    rep = np.repeat(np.arange(reps), 2 * n)
    group = np.tile(np.repeat(["a", "b"], n), reps)
    factor = np.where(group == "a", 1.8, 0.5)
    sigma = rng.uniform(0.3, 2.0, rep.size)
    data = pl.DataFrame(
        {"rep": rep, "g": group, "mu": 0.0, "sigma": sigma, "f": factor}
    ).with_columns(y=pl.Series(factor * sigma * rng.standard_normal(rep.size)))
    cal = pc.fit_regression_calibrator(
        data, "y", mean="mu", std="sigma", by=["rep", "g"], method="conformal", level=0.9
    )
    params = cal.params.with_columns(f=pl.when(pl.col("g") == "a").then(1.8).otherwise(0.5))
    q, f = params["quantile"].to_numpy(), params["f"].to_numpy()
    covered = np.array([math.erf(v) for v in q / (f * math.sqrt(2.0))])
    for name in ("a", "b"):
        mine = covered[params["g"].to_numpy() == name]
        error = 4.0 * mine.std() / math.sqrt(reps)
        assert abs(mine.mean() - 28 / 31) < error
        assert mine.mean() >= 0.9 - error


@pytest.mark.parametrize("lazy", [False, True])
def test_frame_method_is_the_free_function(lazy: bool) -> None:
    data = gaussian_log(200, 10)
    frame = data.lazy() if lazy else data
    cal = frame.calib.fit_regression_calibrator(
        "y", mean="mu", std="sigma", by="g", method="conformal", level=0.8
    )
    free = pc.fit_regression_calibrator(
        data, "y", mean="mu", std="sigma", by="g", method="conformal", level=0.8
    )
    assert cal.params.equals(free.params)


@pytest.mark.parametrize(("level", "rank"), [(0.8999999999999999, 9001), (1e-20, 1)])
def test_conformal_rank_of_a_long_decimal_level(level: float, rank: int) -> None:
    # 10001 * 8999999999999999 overflows Int64: the rank is computed in Int128.
    data = pl.DataFrame({"y": np.arange(1.0, 10001.0), "mu": 0.0, "sigma": 1.0})
    cal = pc.fit_regression_calibrator(
        data, "y", mean="mu", std="sigma", method="conformal", level=level
    )
    assert cal.params["quantile"].item() == float(rank)
