"""Per-group conformal recalibration of ensemble predictions.

The members' central interval at `level` (their type 7 quantiles at (1 ∓ level) / 2, as
``np.quantile``'s default) is conformalized as the interval form is: the
⌈(n + 1) · level⌉-th smallest score max(lower − y, y − upper) of the group (MAPIE's
``ConformalizedQuantileRegressor`` with a symmetric correction). The reference below is
computed independently with numpy.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import polars_calib as pc


def _ensembles(n: int, seed: int, spread: dict[str, float], members: int = 8) -> pl.DataFrame:
    """Members of N(mu, spread²) for a target of N(mu, 1), one spread per group.

    A spread below 1 is an under-dispersed ensemble (its intervals too narrow), above 1
    an over-dispersed one (too wide): the correction changes sign between the groups.
    Members are rounded to 0.01, so they tie each other and the target now and then.
    """
    rng = np.random.default_rng(seed)
    groups = np.array(list(spread))[rng.integers(0, len(spread), n)]
    factor = np.array([spread[g] for g in groups])
    mu = rng.normal(0.0, 3.0, n)
    y = (mu + rng.standard_normal(n)).round(2)
    x = (mu[:, None] + factor[:, None] * rng.standard_normal((n, members))).round(2)
    return pl.DataFrame(
        {"g": groups, "y": y, "x": x}, schema_overrides={"x": pl.Array(pl.Float64, members)}
    )


def _reference(
    y: list[float], members: list[list[float]], level: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """numpy: the CQR correction of the members' central intervals, and those intervals."""
    lower = np.array([np.quantile(m, (1 - level) / 2) for m in members])
    upper = np.array([np.quantile(m, (1 + level) / 2) for m in members])
    scores = np.sort(np.maximum(lower - np.asarray(y), np.asarray(y) - upper))
    n = len(scores)
    k = math.ceil((n + 1) * Fraction(str(level)))
    return (math.inf if k > n else float(scores[k - 1])), lower, upper


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9])
def test_ensemble_correction_matches_numpy_per_group(level: float) -> None:
    train = _ensembles(300, 1, {"narrow": 0.4, "wide": 2.5})
    # A List column whose rows hold different numbers of members, one of them a single one.
    ragged = train.with_columns(
        pl.col("x").cast(pl.List(pl.Float64)).list.head(pl.int_range(pl.len()) % 8 + 1)
    )
    for data in (train, ragged):
        cal = pc.fit_regression_calibrator(data, "y", ensemble="x", by="g", level=level)
        assert (cal.form, cal.method, cal.level) == ("ensemble", "conformal", level)
        assert cal.params.columns == ["g", "count", "fallback", "quantile"]
        new = _ensembles(50, 2, {"narrow": 0.4, "wide": 2.5})
        out = cal.apply(new.lazy()).collect()
        for group in ("narrow", "wide"):
            part = data.filter(pl.col("g") == group)
            members = [list(m) for m in part["x"]]
            q, _, _ = _reference(part["y"].to_list(), members, level)
            row = cal.params.filter(pl.col("g") == group)
            assert row["quantile"].item() == pytest.approx(q, rel=1e-12, abs=1e-12)
            assert row["count"].item() == part.height
            held = out.filter(pl.col("g") == group)
            _, lower, upper = _reference(held["y"].to_list(), [list(m) for m in held["x"]], level)
            inverted = lower - q > upper + q
            middle = lower + (upper - lower) / 2
            expected_lower = np.where(inverted, middle, lower - q)
            expected_upper = np.where(inverted, middle, upper + q)
            np.testing.assert_allclose(held["lower"], expected_lower, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(held["upper"], expected_upper, rtol=1e-12, atol=1e-12)
        if data is train:
            # Too narrow in one group, too wide in the other: the correction changes sign
            # (the ragged rows' few members make narrower intervals in both).
            q = dict(cal.params.select("g", "quantile").iter_rows())
            assert q["narrow"] > 0.0 > q["wide"]


def _covered(frame: pl.DataFrame) -> dict[str, float]:
    inside = (pl.col("lower") <= pl.col("y")) & (pl.col("y") <= pl.col("upper"))
    return dict(frame.group_by("g").agg(inside.mean()).iter_rows())


def test_ensemble_correction_restores_coverage_on_held_out_rows() -> None:
    spread = {"narrow": 0.4, "wide": 2.5}
    cal = pc.fit_regression_calibrator(
        _ensembles(4000, 3, spread), "y", ensemble="x", by="g", level=0.8
    )
    test = _ensembles(8000, 4, spread)
    members = test["x"].to_numpy()
    raw = test.with_columns(
        lower=pl.Series(np.quantile(members, 0.1, axis=1)),
        upper=pl.Series(np.quantile(members, 0.9, axis=1)),
    )
    before, after = _covered(raw), _covered(cal.apply(test))
    assert before["narrow"] < 0.35 and before["wide"] > 0.88  # below, then above 0.8
    # About 3 standard errors (2000 training rows and 4000 test rows per group).
    for group in spread:
        assert abs(after[group] - 0.8) < 0.03, (group, after[group])


@settings(max_examples=6, deadline=None)
@given(
    n=st.integers(2, 40),
    members=st.integers(1, 9),
    level=st.sampled_from([0.1, 0.5, 0.8, 0.9, 0.95]),
    seed=st.integers(0, 2**16),
)
@example(n=2, members=1, level=0.9, seed=0)  # k = 3 > n: an infinite correction
def test_ensemble_correction_covers_its_calibration_rows(
    n: int, members: int, level: float, seed: int
) -> None:
    # Exchangeable rows split in halves; an under-dispersed ensemble (spread 0.3 for a
    # target of sd 1). At least ⌈(n + 1) level⌉ of the n fitted scores are at most the
    # correction, so at least a `level` share of the calibration rows is covered.
    data = _ensembles(2 * n, seed, {"a": 0.3}, members).with_columns(g=pl.int_range(pl.len()) % 2)
    fit, test = data.filter(pl.col("g") == 0), data.filter(pl.col("g") == 1)
    cal = pc.fit_regression_calibrator(fit, "y", ensemble="x", level=level)
    out = cal.apply(fit)
    # The row whose score is the correction lies on a bound: upper + (y - upper) can miss
    # y by a rounding, so "covered" allows 1e-12 relative (the same for the interval form).
    slack = 1e-12 * (1.0 + out["y"].abs())
    inside = ((out["lower"] <= out["y"] + slack) & (out["y"] <= out["upper"] + slack)).mean()
    assert inside >= level
    assert cal.apply(test)["lower"].null_count() == 0


def test_ensemble_calibrator_round_trips_and_falls_back(tmp_path: Path) -> None:
    rows = [[float(i), float(i) + 1.0] for i in range(11)]
    train = pl.DataFrame({"g": ["a"] * 9 + ["b"] * 2, "y": [0.5] * 11, "x": rows})
    cal = pc.fit_regression_calibrator(train, "y", ensemble="x", by="g", level=0.8)
    # Group b: k = ceil(3 * 0.8) = 3 > 2 rows, an infinite correction.
    assert cal.params.select("g", "count", "fallback").rows() == [("a", 9, False), ("b", 2, True)]
    assert math.isinf(cal.params["quantile"][1])
    path = cal.save(tmp_path / "ensemble.json")
    content = json.loads(path.read_text())
    assert content["options"]["form"] == "ensemble" and content["options"]["ensemble"] == "x"
    assert content["params"]["rows"][1]["quantile"] is None
    loaded = pc.load_regression_calibrator(path)
    assert loaded.params.equals(cal.params)
    assert (loaded.form, loaded.ensemble, loaded.level) == ("ensemble", "x", 0.8)
    new = pl.DataFrame(
        {"g": ["a", "b", "z", "a", "a"], "x": [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [], None]},
        schema_overrides={"x": pl.List(pl.Float64)},
    )
    out = loaded.apply(new)
    assert out.equals(cal.apply(new))
    # Group a: the ensemble's central interval [0.1, 0.9] moved by its correction; b
    # infinite; z not fitted; an empty and a null ensemble give null.
    q = cal.params["quantile"][0]
    assert out["lower"][0] == pytest.approx(0.1 - q, rel=1e-15)
    assert out["upper"].to_list()[1:] == [math.inf, None, None, None]
    # Another column of members, by name or expression.
    other = new.rename({"x": "members"})
    assert other.select(*cal.interval_exprs(ensemble="members")).equals(
        out.select("lower", "upper")
    )
    # Every other form's file is unchanged: no `ensemble` option in it.
    interval = train.with_columns(lo=0.0, hi=1.0)
    written = pc.fit_regression_calibrator(interval, "y", lower="lo", upper="hi").to_dict()
    assert "ensemble" not in written["options"]


def test_ensemble_bad_rows_are_refused_with_their_counts() -> None:
    data = pl.DataFrame(
        {"y": [1.0, 2.0, 3.0, None], "x": [[0.0, 2.0], [1.0, None], [2.0, 4.0], [0.0, 1.0]]}
    )
    with pytest.raises(
        pc.CalibrationDataError, match=r"ensemble member null, NaN or infinite.*in 1 of"
    ):
        pc.fit_regression_calibrator(data, "y", ensemble="x")
    with pytest.raises(pc.CalibrationDataError, match=r"ensemble member null.*in 1 of"):
        pc.fit_regression_calibrator(data.lazy(), "y", ensemble="x")
    empty = data.with_columns(pl.col("x").list.head(pl.int_range(pl.len()) + 0)).head(1)
    with pytest.raises(pc.CalibrationDataError, match=r"an ensemble with no member.*in 1 of"):
        pc.fit_regression_calibrator(empty, "y", ensemble="x")
    # A null target (and a null ensemble) is ignored, as by every regression function.
    ok = data.filter(pl.int_range(pl.len()) != 1)
    assert pc.fit_regression_calibrator(ok, "y", ensemble="x").params["count"].item() == 2
    cal = pc.fit_regression_calibrator(ok, "y", ensemble="x")
    # Applied, a refused ensemble gives null bounds, never a number.
    applied = cal.apply(data.with_columns(pl.col("x").list.eval(pl.element().fill_nan(None))))
    assert applied["lower"].is_null().to_list() == [False, True, False, False]
    nan = pl.DataFrame({"x": [[float("nan"), 1.0], [0.0, float("inf")]]})
    assert cal.apply(nan)["upper"].to_list() == [None, None]
    with pytest.raises(pc.CalibrationDataError, match=r"holds String"):
        pc.fit_regression_calibrator(data.with_columns(x=pl.lit("a")), "y", ensemble="x")


def test_ensemble_arguments_are_checked(tmp_path: Path) -> None:
    data = pl.DataFrame({"y": [1.0, 2.0], "x": [[0.0, 2.0], [1.0, 3.0]], "mu": 0.0})
    for method in ("std_scaling", "isotonic"):
        with pytest.raises(ValueError, match="ensemble form's recalibration is method 'con"):
            pc.fit_regression_calibrator(data, "y", ensemble="x", method=method)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`weight` is not supported"):
        pc.fit_regression_calibrator(data, "y", ensemble="x", weight="mu")
    cal = pc.fit_regression_calibrator(data, "y", ensemble="x")
    with pytest.raises(TypeError, match="give no `mean`, `std`, `level`, `lower` or `upper`"):
        cal.interval_exprs(level=0.5)
    with pytest.raises(ValueError, match=r"expr\(\) is for gaussian predictions"):
        cal.expr()
    with pytest.raises(ValueError, match=r"use interval_exprs\(\) or apply\(\)"):
        cal.quantiles_expr()
    gaussian = pc.fit_regression_calibrator(data.with_columns(s=1.0), "y", mean="mu", std="s")
    with pytest.raises(TypeError, match="`ensemble=` are the interval and ensemble forms'"):
        gaussian.interval_exprs(ensemble="x")
    # The file's ensemble option is checked like every other.
    path = cal.save(tmp_path / "cal.json")
    content = json.loads(path.read_text())
    del content["options"]["ensemble"]
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"options\.ensemble: is missing"):
        pc.load_regression_calibrator(path)
    content["options"] |= {"ensemble": "x", "lower": "x"}
    path.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"options\.lower: must be null"):
        pc.load_regression_calibrator(path)
