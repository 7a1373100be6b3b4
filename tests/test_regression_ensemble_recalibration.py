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
    with pytest.raises(ValueError, match="method 'conformal' or 'isotonic', got 'std_scaling'"):
        pc.fit_regression_calibrator(data, "y", ensemble="x", method="std_scaling")
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


# Isotonic recalibration of the rank PIT (Kuleshov et al. 2018).


def _isotonic_reference(u: np.ndarray, tau: float) -> float:
    """numpy: R⁻¹(tau) for the map from (distinct) PITs `u` to their empirical CDF.

    R is linear between its points (0, 0), (u_(i), i / n) and (1, 1); with distinct
    PITs it increases strictly, so its inverse is the interpolation the other way.
    """
    n = len(u)
    x = np.concatenate([[0.0], np.sort(u), [1.0]])
    y = np.concatenate([[0.0], np.arange(1, n + 1) / n, [1.0]])
    return float(np.interp(tau, y, x))


def _weibull(members: list[float], t: float) -> float:
    """numpy's type 6 quantile, ±inf beyond the outer members' levels 1/(M+1), M/(M+1)."""
    m = len(members)
    if t < 1 / (m + 1):
        return -math.inf
    if t > m / (m + 1):
        return math.inf
    return float(np.quantile(members, t, method="weibull"))


def test_isotonic_ensemble_matches_numpy_per_group() -> None:
    spread = {"narrow": 0.6, "wide": 2.5}
    train = _ensembles(400, 5, spread, members=9).with_columns(row=pl.int_range(pl.len()) * 7)
    cal = pc.fit_regression_calibrator(
        train, "y", ensemble="x", by="g", method="isotonic", level=0.5, seed=11, id="row"
    )
    assert (cal.form, cal.method, cal.level) == ("ensemble", "isotonic", 0.5)
    assert cal.params.columns == ["g", "count", "fallback", "x", "y"]
    pit = train.with_columns(u=pc.rank_pit("y", ensemble="x", seed=11, id="row"))
    new = _ensembles(40, 6, spread, members=9)
    out = new.with_columns(
        *cal.interval_exprs(), median=cal.quantile_expr(0.5), q9=cal.quantile_expr(0.9)
    )
    for group in spread:
        u = pit.filter(pl.col("g") == group)["u"].to_numpy()
        assert len(np.unique(u)) == len(u)  # continuous draws: the reference's premise
        part = out.filter(pl.col("g") == group)
        members = [list(m) for m in part["x"]]
        for column, tau in (("lower", 0.25), ("upper", 0.75), ("median", 0.5), ("q9", 0.9)):
            t = _isotonic_reference(u, tau)
            expected = [_weibull(m, t) for m in members]
            np.testing.assert_allclose(part[column], expected, rtol=1e-12, atol=1e-12)
        # The recalibrated PIT of the training rows is their empirical CDF: R(u_i) = i / n.
        fitted = pit.filter(pl.col("g") == group).with_columns(
            r=cal.cdf_expr("y", seed=11, id="row")
        )
        ranks = fitted["u"].rank("ordinal").to_numpy() / fitted.height
        np.testing.assert_allclose(fitted["r"], ranks, rtol=1e-12, atol=1e-12)


def test_isotonic_ensemble_calibrates_held_out_pits_and_quantiles() -> None:
    # Under-dispersed in one group, over-dispersed in the other: the PIT curve lies on
    # either side of the diagonal before, on it after.
    spread = {"narrow": 0.7, "wide": 2.0}
    cal = pc.fit_regression_calibrator(
        _ensembles(4000, 7, spread, members=19), "y", ensemble="x", by="g", method="isotonic"
    )
    test = _ensembles(8000, 8, spread, members=19)
    before = test.with_columns(u=pc.rank_pit("y", ensemble="x", seed=1))
    after = test.with_columns(u=cal.cdf_expr("y", seed=1))
    for group, sign in (("narrow", 1.0), ("wide", -1.0)):
        for tau in (0.1, 0.3, 0.5, 0.7, 0.9):
            raw = before.filter(pl.col("g") == group).select((pl.col("u") <= tau).mean()).item()
            fixed = after.filter(pl.col("g") == group).select((pl.col("u") <= tau).mean()).item()
            # About 3 standard errors (2000 training rows and 4000 test rows per group).
            assert abs(fixed - tau) < 0.03, (group, tau, fixed)
            if tau in (0.1, 0.9):  # too narrow: too many PITs in the tails; too wide: too few
                assert sign * (raw - tau) * math.copysign(1.0, 0.5 - tau) > 0.04, (group, raw)
        quantiles = test.filter(pl.col("g") == group).select(
            (pl.col("y") <= cal.quantile_expr(tau)).mean().alias(str(tau))
            for tau in (0.25, 0.5, 0.75)
        )
        assert np.allclose(quantiles.row(0), (0.25, 0.5, 0.75), atol=0.03), (group, quantiles)


def test_isotonic_ensemble_tails_beyond_the_members_are_infinite(tmp_path: Path) -> None:
    # Four members: the rank PIT puts them at levels 1/5 .. 4/5. A calibrated ensemble's
    # 90 % interval needs its 5 % and 95 % quantiles, beyond the outer members: the
    # members do not say how far, so the bounds are infinite (numpy would clamp them to
    # the outer members, an interval covering about 60 %, not 90 %).
    data = _ensembles(2000, 9, {"a": 1.0}, members=4)
    cal = pc.fit_regression_calibrator(data, "y", ensemble="x", method="isotonic", level=0.9)
    out = cal.apply(data.head(3))
    assert out["lower"].to_list() == [-math.inf] * 3 and out["upper"].to_list() == [math.inf] * 3
    middle = data.head(3).select(*cal.interval_exprs(level=0.4))
    assert middle.select(pl.all().is_finite().all()).row(0) == (True, True)
    path = cal.save(tmp_path / "isotonic.json")
    loaded = pc.load_regression_calibrator(path)
    assert loaded.params.equals(cal.params)
    assert (loaded.form, loaded.method, loaded.level, loaded.ensemble) == (
        "ensemble",
        "isotonic",
        0.9,
        "x",
    )
    assert loaded.apply(data).equals(cal.apply(data))


def test_isotonic_ensemble_weights_are_frequencies_and_bad_rows_refused() -> None:
    # Weight 2 is the row twice: with the row's id, its two copies draw the same PIT.
    data = _ensembles(60, 10, {"a": 0.5, "b": 2.0}).with_columns(
        row=pl.int_range(pl.len()), w=(pl.int_range(pl.len()) % 3 + 1).cast(pl.Float64)
    )
    weighted = pc.fit_regression_calibrator(
        data, "y", ensemble="x", by="g", method="isotonic", id="row", weight="w"
    )
    copies = data.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode())
    repeated = pc.fit_regression_calibrator(
        copies, "y", ensemble="x", by="g", method="isotonic", id="row"
    )
    for column in ("x", "y"):
        for a, b in zip(weighted.params[column], repeated.params[column], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
    # Another seed, other draws.
    other = pc.fit_regression_calibrator(
        data, "y", ensemble="x", by="g", method="isotonic", id="row", seed=5
    )
    assert not other.params["x"].equals(repeated.params["x"])
    bad = data.with_columns(x=pl.col("x").cast(pl.List(pl.Float64)))
    bad = bad.with_columns(
        x=pl.when(pl.col("row") == 4).then(pl.lit([1.0, None])).otherwise(pl.col("x"))
    )
    with pytest.raises(pc.CalibrationDataError, match=r"ensemble member null.*in 1 of"):
        pc.fit_regression_calibrator(bad, "y", ensemble="x", method="isotonic")
    with pytest.raises(TypeError, match="`seed=` and `id=` are the rank PIT's, used by"):
        pc.fit_regression_calibrator(data, "y", ensemble="x", seed=3)
    with pytest.raises(TypeError, match="`seed=` and `id=` are the rank PIT's"):
        pc.fit_regression_calibrator(data.with_columns(s=1.0), "y", mean="y", std="s", id="row")
    cal = pc.fit_regression_calibrator(data, "y", ensemble="x", method="isotonic")
    with pytest.raises(TypeError, match="`mean=` and `std=` are the Gaussian form's"):
        cal.quantile_expr(0.5, mean="y")
    with pytest.raises(TypeError, match="`lower=` and `upper=` are the interval form's"):
        cal.interval_exprs(lower="y")
    with pytest.raises(ValueError, match=r"use interval_exprs\(\) or apply\(\) \(and cdf_expr"):
        cal.expr()


def test_applied_ensemble_bounds_sort_the_members_once_per_quantile() -> None:
    # Written inline, an applied bound read its quantiles a dozen times and sorted the
    # members 231 times per row (32 s for 200,000 rows of 20 members against 3.4 s; see
    # docs/performance.md): each quantile now sorts once, inside one list.eval.
    data = pl.DataFrame({"y": [1.0, 2.0, 3.0], "x": [[0.0, 2.0], [1.0, 3.0], [2.0, 5.0]]})
    for method in ("conformal", "isotonic"):
        cal = pc.fit_regression_calibrator(data, "y", ensemble="x", method=method, level=0.5)
        for bound in cal.interval_exprs():
            assert str(bound).count("sort") <= 2, (method, str(bound).count("sort"))
