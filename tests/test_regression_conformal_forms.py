"""Per-group conformal recalibration of interval and quantile predictions.

The interval form is conformalized quantile regression (CQR), pinned against MAPIE
1.6's ``ConformalizedQuantileRegressor`` (``prefit=True``, ``symmetric_correction=True``),
whose numbers below were computed once with MAPIE installed: three prefit "estimators"
returning the columns ``lo``, ``hi`` and the midpoint, conformalized on ``CQR_Y``, and
``predict_interval`` on the intervals ``NEW``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_calib as pc

CQR_Y = [0.14, 0.13, -2.54, -1.37, -0.49, -0.89, -1.32, 0.91, -1.37, -1.35, 1.44, -0.37]
NARROW = (
    [-0.4, -0.26, -0.87, -1.53, -1.45, -1.82, -0.64, 0.35, -0.86, -0.95, -0.2, 0.12],
    [0.4, 0.86, 0.33, -0.25, 0.55, -0.16, 0.76, 2.33, -0.12, -0.29, 1.18, 0.6],
)
WIDE = (
    [-1.2, -1.38, -2.07, -2.81, -3.45, -3.48, -2.04, -1.63, -1.6, -1.61, -1.58, -0.36],
    [1.2, 1.98, 1.53, 1.03, 2.55, 1.5, 2.16, 4.31, 0.62, 0.37, 2.56, 1.08],
)
NEW = pl.DataFrame({"lo": [0.0, -2.0, 3.0], "hi": [1.0, -1.5, 3.05]})
# MAPIE 1.6: (intervals, confidence_level) -> (lower bounds, upper bounds) on NEW.
MAPIE = {
    ("narrow", 0.5): ([-0.26, -2.26, 2.74], [1.26, -1.24, 3.3099999999999996]),
    ("narrow", 0.8): ([-0.68, -2.68, 2.32], [1.6800000000000002, -0.82, 3.73]),
    ("narrow", 0.9): ([-1.67, -3.67, 1.33], [2.67, 0.16999999999999993, 4.72]),
    # q = -1.06: MAPIE returns every interval inverted (and logs "ill-sorted").
    ("wide", 0.5): ([1.06, -0.94, 4.0600000000000005], [-0.06000000000000005, -2.56, 1.99]),
    ("wide", 0.8): ([-0.010000000000000009, -2.01, 2.99], [1.01, -1.49, 3.0599999999999996]),
}


def _train(bounds: tuple[list[float], list[float]]) -> pl.DataFrame:
    return pl.DataFrame({"y": CQR_Y, "lo": bounds[0], "hi": bounds[1]})


@pytest.mark.parametrize(("name", "level"), list(MAPIE))
def test_cqr_matches_mapie(name: str, level: float) -> None:
    train = _train(NARROW if name == "narrow" else WIDE)
    cal = pc.fit_regression_calibrator(train, "y", lower="lo", upper="hi", level=level)
    assert cal.params.columns == ["count", "fallback", "quantile"]
    assert cal.method == "conformal" and cal.form == "interval"
    mapie_lower, mapie_upper = MAPIE[name, level]
    q = cal.params["quantile"].item()
    # The correction is MAPIE's, to the last bit, inverted intervals included.
    assert (NEW["lo"] - q).to_list() == pytest.approx(mapie_lower, rel=1e-15, abs=1e-15)
    assert (NEW["hi"] + q).to_list() == pytest.approx(mapie_upper, rel=1e-15, abs=1e-15)
    out = cal.apply(NEW.lazy()).collect()
    inverted = [lo > hi for lo, hi in zip(mapie_lower, mapie_upper, strict=True)]
    middle = ((NEW["lo"] + NEW["hi"]) / 2).to_list()
    expected_lower = [m if i else v for m, i, v in zip(middle, inverted, mapie_lower, strict=True)]
    expected_upper = [m if i else v for m, i, v in zip(middle, inverted, mapie_upper, strict=True)]
    assert out["lo_calibrated"].to_list() == pytest.approx(expected_lower, rel=1e-15, abs=1e-15)
    assert out["hi_calibrated"].to_list() == pytest.approx(expected_upper, rel=1e-15, abs=1e-15)
    assert any(inverted) == (name == "wide" and level == 0.5)


def _intervals(n: int, seed: int, scale: dict[str, float]) -> pl.DataFrame:
    """Intervals of nominal 80 % (±1.2816) for noise of sd 1, stretched by `scale` per group."""
    rng = np.random.default_rng(seed)
    groups = np.array(list(scale))[rng.integers(0, len(scale), n)]
    factor = np.array([scale[g] for g in groups])
    mu = rng.normal(0.0, 3.0, n)
    y = mu + rng.standard_normal(n)
    half = 1.2815515655446004 * factor
    return pl.DataFrame({"g": groups, "y": y, "lo": mu - half, "hi": mu + half})


def _coverage(frame: pl.DataFrame, lo: str, hi: str) -> dict[str, float]:
    covered = ((pl.col(lo) <= pl.col("y")) & (pl.col("y") <= pl.col(hi))).mean()
    return dict(frame.group_by("g").agg(covered).iter_rows())


def test_cqr_restores_coverage_per_group_on_held_out_rows() -> None:
    # Too narrow in "a" (coverage 0.47), too wide in "b" (0.99): the fix changes sign.
    scale = {"a": 0.5, "b": 2.0}
    cal = pc.fit_regression_calibrator(
        _intervals(4000, 1, scale), "y", lower="lo", upper="hi", by="g", level=0.8
    )
    q = dict(cal.params.select("g", "quantile").iter_rows())
    assert q["a"] > 0.5 and q["b"] < -1.0
    test = cal.apply(_intervals(8000, 2, scale))
    before, after = _coverage(test, "lo", "hi"), _coverage(test, "lo_calibrated", "hi_calibrated")
    assert before["a"] < 0.55 and before["b"] > 0.98
    # About 3 standard errors (2000 training rows and 4000 test rows per group).
    for group in scale:
        assert abs(after[group] - 0.8) < 0.03


def test_conformal_order_statistic_gives_its_exact_coverage() -> None:
    # 4000 groups of 9 training rows and one test row each: with k = ceil(10 * 0.85) = 9,
    # a new row is covered with probability k / (n + 1) = 0.9 exactly (continuous
    # scores), for the interval and the quantile form alike.
    rng = np.random.default_rng(3)
    groups, n = 4000, 10
    g = np.repeat(np.arange(groups), n)
    y = rng.standard_normal(groups * n)
    train = pl.DataFrame({"g": g, "y": y, "lo": -0.3, "hi": 0.3, "q": 0.5}).with_columns(
        test=pl.int_range(pl.len()).over("g") == n - 1
    )
    fit, test = train.filter(~pl.col("test")), train.filter(pl.col("test"))
    cal = pc.fit_regression_calibrator(fit, "y", lower="lo", upper="hi", by="g", level=0.85)
    out = cal.apply(test)
    covered = ((out["lo_calibrated"] <= out["y"]) & (out["y"] <= out["hi_calibrated"])).mean()
    assert abs(covered - 0.9) < 0.015  # 3 standard errors; k - 1 would give 0.8
    cal = pc.fit_regression_calibrator(fit, "y", quantiles=["q"], levels=[0.85], by="g")
    out = cal.apply(test)
    assert abs((out["y"] <= out["q_calibrated"]).mean() - 0.9) < 0.015


def _quantiles(n: int, seed: int) -> pl.DataFrame:
    """Quantiles at 0.1, 0.5, 0.9 of N(mu, 1): too narrow in "a", too wide and biased in "b"."""
    rng = np.random.default_rng(seed)
    groups = np.array(["a", "b"])[rng.integers(0, 2, n)]
    mu = rng.normal(0.0, 3.0, n)
    y = mu + rng.standard_normal(n)
    z = np.array([-1.2815515655446004, 0.0, 1.2815515655446004])
    spread = np.where(groups == "a", 0.3, 2.5)[:, None]
    bias = np.where(groups == "a", 0.0, 0.8)[:, None]
    q = mu[:, None] + bias + spread * z[None, :]
    return pl.DataFrame(
        {"g": groups, "y": y, "q": q}, schema_overrides={"q": pl.Array(pl.Float64, 3)}
    )


def test_quantile_shifts_restore_each_level_per_group() -> None:
    levels = [0.1, 0.5, 0.9]
    cal = pc.fit_regression_calibrator(
        _quantiles(4000, 4), "y", quantiles="q", levels=levels, by="g"
    )
    assert cal.params.columns == ["g", "count", "fallback", "shift"]
    shifts = dict(cal.params.select("g", "shift").iter_rows())
    assert shifts["a"][0] < 0 < shifts["a"][2] and shifts["b"][2] < 0  # signs differ
    test = cal.apply(_quantiles(8000, 5))
    listed = test.with_columns(pl.col("q").cast(pl.List(pl.Float64)))
    for group in ("a", "b"):
        part = listed.filter(pl.col("g") == group)
        for k, tau in enumerate(levels):
            before = (part["y"] <= part["q"].list.get(k)).mean()
            after = (part["y"] <= part["q_calibrated"].list.get(k)).mean()
            # About 3 standard errors (2000 training rows, 4000 test rows per group).
            assert abs(after - tau) < 0.04, (group, tau, after)
            if tau != 0.5:
                assert abs(before - tau) > 0.08
    # The output never crosses.
    assert test.select((pl.col("q_calibrated").list.sort() == pl.col("q_calibrated")).all()).item()


def test_shifted_quantiles_that_cross_are_rearranged() -> None:
    # Level 0.2's shift (+3) lifts it above level 0.8's (shift 0): the output is sorted.
    train = pl.DataFrame({"y": [3.0, 4.0, 5.0, 6.0], "q1": 0.0, "q2": 6.0})
    cal = pc.fit_regression_calibrator(train, "y", quantiles=["q1", "q2"], levels=[0.2, 0.8])
    assert cal.params["shift"].to_list() == [[3.0, 0.0]]
    new = pl.DataFrame({"q1": [0.0, 1.0], "q2": [1.0, 9.0]})
    out = cal.apply(new)
    assert out["q1_calibrated"].to_list() == [1.0, 4.0]  # sorted (3, 1) -> (1, 3)
    assert out["q2_calibrated"].to_list() == [3.0, 9.0]
    assert cal.apply(new.lazy()).collect().equals(out)  # a plan, the same columns
    # The input is checked, not sorted: a crossing row gives null.
    crossing = pl.DataFrame({"q1": [2.0], "q2": [1.0]})
    assert cal.apply(crossing)["q1_calibrated"].to_list() == [None]


def test_small_and_unseen_groups_fall_back(tmp_path: Path) -> None:
    train = pl.DataFrame(
        {"g": ["a"] * 9 + ["b"] * 2, "y": [float(i) for i in range(11)], "lo": 0.0, "hi": 1.0}
    )
    cal = pc.fit_regression_calibrator(train, "y", lower="lo", upper="hi", by="g", level=0.8)
    assert cal.params.select("g", "fallback").rows() == [("a", False), ("b", True)]
    assert math.isinf(cal.params["quantile"][1])
    new = pl.DataFrame({"g": ["b", "z"], "lo": [0.0, 0.0], "hi": [1.0, 1.0]})
    out = cal.apply(new)
    assert out["lo_calibrated"].to_list() == [-math.inf, None]  # infinite, unseen
    loaded = pc.load_regression_calibrator(cal.save(tmp_path / "interval.json"))
    assert loaded.params.equals(cal.params) and loaded.form == "interval"
    assert cal.apply(new).equals(loaded.apply(new))

    quantile = train.with_columns(q=pl.concat_list(pl.col("lo"), pl.col("hi")))
    cal = pc.fit_regression_calibrator(quantile, "y", quantiles="q", levels=[0.3, 0.9], by="g")
    assert cal.params["fallback"].to_list() == [False, True]
    assert cal.params["shift"][1].to_list() == [9.0, math.inf]  # k = ceil(3 * 0.9) = 3 > 2
    path = cal.save(tmp_path / "quantile.json")
    assert json.loads(path.read_text())["params"]["rows"][1]["shift"] == [9.0, None]
    loaded = pc.load_regression_calibrator(path)
    assert loaded.params.equals(cal.params)
    assert (loaded.quantiles, loaded.levels, loaded.level) == ("q", (0.3, 0.9), None)
    new = new.with_columns(q=pl.concat_list(pl.col("lo"), pl.col("hi")))
    assert loaded.apply(new).equals(cal.apply(new))
    assert cal.apply(new)["q_calibrated"].to_list() == [[9.0, math.inf], None]


def test_bad_rows_are_refused_with_their_counts() -> None:
    intervals = pl.DataFrame(
        {"y": [1.0, 2.0, None, 4.0], "lo": [0.0, 3.0, 0.0, 0.0], "hi": [2.0, 1.0, 1.0, 5.0]}
    )
    with pytest.raises(
        pc.CalibrationDataError, match=r"lower bound above the upper bound.*in 1 of"
    ):
        pc.fit_regression_calibrator(intervals, "y", lower="lo", upper="hi")
    # A null target is ignored (as by every regression function), a NaN one refused.
    ok = intervals.filter(pl.col("lo") <= pl.col("hi"))
    assert pc.fit_regression_calibrator(ok, "y", lower="lo", upper="hi").params["count"].item() == 2
    nan = ok.with_columns(pl.col("y").fill_null(float("nan")))
    with pytest.raises(pc.CalibrationDataError, match=r"target NaN or infinite.*in 1 of"):
        pc.fit_regression_calibrator(nan, "y", lower="lo", upper="hi")
    quantiles = pl.DataFrame({"y": [1.0, 2.0, 3.0], "q": [[0.0, 1.0], [2.0, 1.0], [1.0, 1.0]]})
    with pytest.raises(pc.CalibrationDataError, match=r"crossing.*in 1 of"):
        pc.fit_regression_calibrator(quantiles, "y", quantiles="q", levels=[0.1, 0.9])


def test_form_and_method_arguments_are_checked() -> None:
    data = pl.DataFrame({"y": [1.0], "mu": 0.0, "sigma": 1.0, "lo": 0.0, "hi": 1.0})
    with pytest.raises(TypeError, match="got gaussian and interval"):
        pc.fit_regression_calibrator(data, "y", mean="mu", std="sigma", lower="lo", upper="hi")
    with pytest.raises(TypeError, match="got none"):
        pc.fit_regression_calibrator(data, "y")
    with pytest.raises(ValueError, match="method 'conformal'"):
        pc.fit_regression_calibrator(data, "y", lower="lo", upper="hi", method="std_scaling")
    with pytest.raises(ValueError, match="`weight` is not supported"):
        pc.fit_regression_calibrator(data, "y", lower="lo", upper="hi", weight="mu")
    with pytest.raises(ValueError, match="the ensemble form's recalibration is method 'conf"):
        pc.fit_regression_calibrator(data, "y", ensemble="lo", method="std_scaling")
    with pytest.raises(TypeError, match="one interval per fit"):
        pc.fit_regression_calibrator(data, "y", lower=["lo"], upper=["hi"])  # type: ignore[arg-type]
    cal = pc.fit_regression_calibrator(data, "y", lower="lo", upper="hi")
    with pytest.raises(ValueError, match="expr\\(\\) is for gaussian predictions"):
        cal.expr()
    with pytest.raises(TypeError, match="give no `mean`"):
        cal.interval_exprs("mu", "sigma")
    gaussian = pc.fit_regression_calibrator(data, "y", mean="mu", std="sigma")
    with pytest.raises(ValueError, match="quantiles_expr\\(\\) is for quantile predictions"):
        gaussian.quantiles_expr()
    quantile = pc.fit_regression_calibrator(
        data.with_columns(q=pl.concat_list("lo", "hi")), "y", quantiles="q", levels=[0.1, 0.9]
    )
    with pytest.raises(ValueError, match="use quantiles_expr\\(\\) or apply\\(\\)"):
        quantile.interval_exprs()


def test_load_refuses_a_tampered_quantile_file(tmp_path: Path) -> None:
    data = pl.DataFrame({"y": [1.0, 2.0, 3.0], "q": [[0.0, 1.0]] * 3})
    path = pc.fit_regression_calibrator(data, "y", quantiles="q", levels=[0.2, 0.5]).save(
        tmp_path / "cal.json"
    )
    content = json.loads(path.read_text())
    content["params"]["rows"][0]["shift"] = [1.0]
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"params\.rows\[0\]\.shift: must hold 2"):
        pc.load_regression_calibrator(path)
    content["params"]["rows"][0]["shift"] = [1.0, 2.0]
    content["options"]["levels"] = [0.5, 0.2]
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"options\.levels: .*strictly increasing"):
        pc.load_regression_calibrator(path)
    content["options"]["levels"] = [0.2, 0.5]
    content["options"]["mean"] = "mu"
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"options\.mean: must be null"):
        pc.load_regression_calibrator(path)


def _nested(n: int, seed: int) -> pl.DataFrame:
    """50 % and 90 % intervals of N(mu, 1) noise: too narrow in "a", too wide in "b"."""
    rng = np.random.default_rng(seed)
    groups = np.array(["a", "b"])[rng.integers(0, 2, n)]
    mu = rng.normal(0.0, 3.0, n)
    y = mu + rng.standard_normal(n)
    factor = np.where(groups == "a", 0.5, 2.0)
    z50, z90 = 0.6744897501960817 * factor, 1.6448536269514722 * factor
    columns = {"lo50": mu - z50, "hi50": mu + z50, "lo90": mu - z90, "hi90": mu + z90}
    return pl.DataFrame({"g": groups, "y": y, **columns})


def test_interval_coverage_curve_has_wilson_intervals() -> None:
    data = _nested(600, 6)
    table = pc.quantile_reliability(
        data, "y", lower=["lo50", "lo90"], upper=["hi50", "hi90"], level=[0.5, 0.9], by="g"
    )
    assert table.columns == ["g", "level", "observed", "count", "lower", "upper"]
    lazy = data.lazy().calib.quantile_reliability(
        "y", lower=["lo50", "lo90"], upper=["hi50", "hi90"], level=[0.5, 0.9], by="g"
    )
    assert lazy.collect().equals(table)
    for row in table.iter_rows(named=True):
        part = data.filter(pl.col("g") == row["g"])
        suffix = "50" if row["level"] == 0.5 else "90"
        inside = ((part[f"lo{suffix}"] <= part["y"]) & (part["y"] <= part[f"hi{suffix}"])).sum()
        assert row["count"] == part.height
        assert row["observed"] == pytest.approx(inside / part.height, rel=1e-14)
        # Wilson (1927) in its textbook form.
        n, p, z = part.height, inside / part.height, 1.959963984540054
        center, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        low, high = (center - half) / (1 + z * z / n), (center + half) / (1 + z * z / n)
        assert (row["lower"], row["upper"]) == pytest.approx((low, high), rel=1e-9)
        # Too narrow in "a", too wide in "b": the gap changes sign.
        assert (row["observed"] < row["level"] - 0.1) == (row["g"] == "a")


def test_interval_coverage_curve_draws_with_both_backends() -> None:
    # The interval form's reliability diagram is the quantile one, drawn from its table
    # (the first call pays for importing the plotting libraries).
    table = pc.quantile_reliability(
        _nested(60, 7), "y", lower=["lo50", "lo90"], upper=["hi50", "hi90"], level=[0.5, 0.9]
    )
    chart = pc.plot_quantile_reliability(table, title="Interval coverage")
    assert type(chart).__name__ == "LayerChart"
    assert type(pc.plot_quantile_reliability(table, backend="matplotlib")).__name__ == "Figure"


def test_interval_coverage_curve_refuses_bad_rows_and_a_grid() -> None:
    data = pl.DataFrame({"g": [1, 1, 2], "y": [0.0, 1.0, 2.0], "lo": [1.0, 0.0, 0.0], "hi": 0.5})
    with pytest.raises(pc.CalibrationDataError, match="lower bound above the upper bound"):
        pc.quantile_reliability(data, "y", lower="lo", upper="hi", level=0.5, by="g")
    lazy = pc.quantile_reliability(data.lazy(), "y", lower="lo", upper="hi", level=0.5, by="g")
    assert lazy.collect()["observed"].to_list() == [None, 0.0]  # group 1 holds a refused row
    with pytest.raises(TypeError, match="`n_levels` is the Gaussian form's grid"):
        pc.quantile_reliability(data, "y", lower="lo", upper="hi", level=0.5, n_levels=11)
    with pytest.raises(TypeError, match="nominal `level`"):
        pc.quantile_reliability(data, "y", lower="lo", upper="hi")
