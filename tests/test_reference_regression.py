"""The numpy reference for regression calibration reproduces every peer number in fixtures.json.

The peers (uncertainty-toolbox 0.1.1, netcal 1.4.0, scoringrules 0.10.0, properscoring
0.1, MAPIE 1.6.0, CalibrationErrors.jl's tests) ran once in a side environment
(``tests/data/regression/make_fixtures.py``); these tests need none of them.  Where a
peer departs from the published definition, the reference's peer-compatible variant
is checked against the peer and a second test shows how the published one differs
(``tests/data/regression/PEERS.md`` has the details).
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import reference_regression as rr

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"
# float64 sums in another order, and a few-ulp difference between this Phi^-1 and
# scipy's ndtri; the absolute floor is for values that are (nearly) zero.
RTOL, ATOL = 1e-12, 1e-15


@cache
def fixtures() -> dict:
    return json.loads(FIXTURES.read_text())


def rows(dataset: str, group: int | None) -> dict:
    """The dataset's arrays, restricted to one group (None: every row)."""
    d = fixtures()["datasets"][dataset]
    if "group" not in d:
        return d
    g = np.asarray(d["group"])
    mask = np.ones(len(g), bool) if group is None else g == group
    return {k: np.asarray(v)[mask] for k, v in d.items() if k not in ("levels",)} | {
        "levels": d.get("levels")
    }


def gaussian(d):
    return d["y"], d["mu"], d["sigma"]


def ut(d, o, function):
    """uncertainty-toolbox 0.1.1 (Gaussian), the reference's compatible computation."""
    y, mu, s = gaussian(d)
    prop = o.get("prop_type", "interval")
    if function in ("get_proportion_lists", "get_proportion_lists_vectorized"):
        return np.array(rr.ut_curve(mu, s, y, prop))
    if function == "mean_absolute_calibration_error":
        return rr.mace(*rr.ut_curve(mu, s, y, prop))
    if function == "root_mean_squared_calibration_error":
        return rr.rmsce(*rr.ut_curve(mu, s, y, prop))
    if function == "miscalibration_area":
        return rr.miscalibration_area(*rr.ut_area_curve(mu, s, y, prop))
    if function == "sharpness":
        return rr.sharpness(s)
    if function == "nll_gaussian":
        return float(np.mean(rr.nll_gaussian_rows(y, mu, s)))
    if function == "crps_gaussian":
        return float(np.mean(rr.crps_gaussian_rows(y, mu, s)))
    if function == "check_score":
        return rr.ut_check_score(y, mu, s)
    if function == "interval_score":
        return rr.ut_interval_score(y, mu, s)
    raise KeyError(function)


def netcal(d, o, function):
    """netcal 1.4.0's regression metrics (Gaussian input, one dimension)."""
    y, mu, s = gaussian(d)
    bins = o.get("bins", 10)
    rng = o.get("range_")
    rng = None if rng is None else tuple(rng[0])
    q = o.get("q")
    thr = o.get("sample_threshold", 1)
    if function == "QCE":
        marginal = o.get("marginal", True)  # the constructor's default (the docstring says False)
        per = rr.qce(y, mu, s, q, bins, marginal, rng, reduce=False, sample_threshold=thr)
        return per[:, None] if o["reduction"] == "none" else [np.mean(per)]
    if function == "ENCE":
        return rr.ence(y, mu, s, bins, rng, sample_threshold=thr)
    if function == "UCE":
        return rr.uce(y, mu, s, bins, rng, sample_threshold=thr)
    if function == "PICP":
        return rr.picp_gaussian(y, mu, s, q)[:, None]
    if function == "MPIW":
        return rr.mpiw_gaussian(mu, s, q)[:, None]
    if function == "PinballLoss":
        loss = rr.netcal_pinball_compat(y, mu, s, q)
        return loss[:, :, None] if o["reduction"] == "none" else float(np.mean(loss))
    raise KeyError(function)


def scoringrules(d, o, function):
    """scoringrules 0.10.0."""
    if function == "crps_normal":
        return rr.crps_gaussian_rows(*gaussian(d))
    if function == "logs_normal":
        return rr.logs_normal_compat(*gaussian(d))
    if function == "crps_ensemble":
        est = {"nrg": "energy", "qd": "energy", "fair": "fair", "pwm": "fair"}[o["estimator"]]
        return rr.crps_ensemble(d["y"], d["x"], est)
    if function == "quantile_score":
        j = d["levels"].index(o["alpha"])
        return rr.pinball(d["y"], d["q"][:, j], o["alpha"])
    if function == "interval_score" and "q" in d:
        k = len(d["levels"]) // 2
        return np.stack(
            [
                rr.interval_score(d["y"], d["q"][:, j], d["q"][:, -1 - j], a)
                for j, a in enumerate(o["alpha"])
            ],
            axis=1,
        )
    if function == "interval_score":
        j = o["level_index"]
        return rr.interval_score(d["y"], d["lower"][:, j], d["upper"][:, j], o["alpha"])
    if function == "weighted_interval_score":
        k = len(d["levels"]) // 2
        args = (d["y"], d["q"][:, k], d["q"][:, :k], d["q"][:, ::-1][:, :k], o["alpha"])
        if o["backend"] == "numpy":
            return rr.weighted_interval_score_compat(*args)
        return rr.weighted_interval_score(*args)
    raise KeyError(function)


def properscoring(d, o, function):
    """properscoring 0.1."""
    if function == "crps_gaussian":
        return rr.crps_gaussian_rows(*gaussian(d))
    if function == "crps_ensemble":
        return rr.crps_ensemble(d["y"], d["x"], "energy")
    raise KeyError(function)


def mapie(d, o, function, dataset):
    """MAPIE 1.6.0."""
    if function in ("_compute_regression_quantile", "SplitConformalRegressor.predict_interval"):
        cases = fixtures()["datasets"]["split_conformal"]["cases"]
        case = cases[o["case"]] if "case" in o else None
        if case is None:
            case = next(c for c in cases if len(c["scores"]) == o["n"] and c["alpha"] == o["alpha"])
        v = rr.conformal_quantile(case["scores"], case["alpha"])
        return [-v, v] if "case" in o else v
    y, lo, hi = d["y"], d["lower"], d["upper"]
    levels = d["levels"]
    if function == "regression_coverage_score":
        return [rr.interval_coverage(y, lo[:, j], hi[:, j]) for j in range(len(levels))]
    if function == "regression_mean_width_score":
        return [rr.mean_width_compat(lo[:, j], hi[:, j]) for j in range(len(levels))]
    if function == "regression_mwi_score":
        j = o["level_index"]
        return rr.mean_interval_score_compat(y, lo[:, j], hi[:, j], o["confidence_level"])
    if function == "coverage_gap":
        j = o["level_index"]
        return rr.coverage_gap(
            y, lo[:, j], hi[:, j], d["group"], o["confidence_level"], o["weighted"]
        )
    order = d.get("argsort_order")  # the tie order MAPIE's np.argsort used, where it matters
    if function == "regression_ssc":
        return [
            rr.size_stratified_coverage(y, lo[:, j], hi[:, j], o["num_bins"], order)
            for j in range(len(levels))
        ]
    if function == "regression_ssc_score":
        return [
            np.min(rr.size_stratified_coverage(y, lo[:, j], hi[:, j], o["num_bins"]))
            for j in range(len(levels))
        ]
    raise KeyError(function)


def reference_value(rec: dict):
    d = rows(rec["dataset"], rec["group"])
    peer, fn, o = rec["peer"], rec["function"], rec["options"]
    if peer == "uncertainty-toolbox":
        return ut(d, o, fn)
    if peer == "netcal":
        return netcal(d, o, fn)
    if peer == "scoringrules":
        return scoringrules(d, o, fn)
    if peer == "properscoring":
        return properscoring(d, o, fn)
    if peer == "mapie":
        return mapie(d, o, fn, rec["dataset"])
    raise KeyError(peer)


def record_id(rec: dict) -> str:
    opts = ",".join(f"{k}={v}" for k, v in sorted(rec["options"].items()) if k != "q")
    return f"{rec['peer']}.{rec['function']}[{rec['dataset']}:{rec['group']}:{opts}]"


def _records():
    return fixtures()["records"]


@pytest.mark.parametrize("rec", _records(), ids=[record_id(r) for r in _records()])
def test_reference_reproduces_the_peer(rec: dict) -> None:
    expected = np.asarray(rec["value"], dtype=np.float64)
    actual = np.asarray(reference_value(rec), dtype=np.float64)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)


# --------------------------------------------------------------------------
# The peers' own test values, CalibrationErrors.jl, the high-precision table
# --------------------------------------------------------------------------


def suite_value(case: dict):
    """The reference's value for one of the peers' own test cases."""
    i = {k: np.asarray(v, dtype=np.float64) for k, v in case["inputs"].items()}
    o, f = case["options"], case["function"]
    if f in ("get_proportion_in_interval", "get_proportion_under_quantile"):
        prop = "interval" if f == "get_proportion_in_interval" else "quantile"
        exp = np.array([o["quantile"]])
        r = (i["mu"] - i["y"]) / i["sigma"]
        if prop == "interval":
            lo, hi = rr.norm_ppf(0.5 - exp / 2), rr.norm_ppf(0.5 + exp / 2)
            return float(np.mean((lo <= r) & (r <= hi)))
        return float(np.mean(r <= rr.norm_ppf(exp)))
    if f == "check_score":
        return rr.ut_check_score(i["y"], i["mu"], i["sigma"], **o)
    if f == "interval_score" and "mu" in i:
        return rr.ut_interval_score(i["y"], i["mu"], i["sigma"], **o)
    if f == "interval_score":
        return rr.interval_score(i["y"], i["lower"], i["upper"], o["alpha"])
    if f == "crps_ensemble":
        return float(rr.crps_ensemble(i["y"], i["x"])[0])
    if f == "crps_normal":
        return float(rr.crps_gaussian_rows(i["y"], i["mu"], i["sigma"])[0])
    if f == "quantile_score":
        return float(rr.pinball(i["y"], i["q"], o["alpha"])[0])
    if f == "coverage_gap":
        return rr.coverage_gap(i["y"], i["lower"], i["upper"], i["group"], o["confidence_level"])
    if f == "regression_ssc":
        return rr.size_stratified_coverage(i["y"], i["lower"], i["upper"], o["num_bins"])
    return ut({**i, "levels": None}, o, f)


def _suite():
    return fixtures()["suite_values"]


@pytest.mark.parametrize(
    "case", _suite(), ids=[f"{c['function']}-{k}" for k, c in enumerate(_suite())]
)
def test_reference_reproduces_the_peers_test_suites(case: dict) -> None:
    np.testing.assert_allclose(
        suite_value(case), case["expected"], rtol=0, atol=max(case["tolerance"], 1e-15)
    )


@pytest.mark.parametrize("case", fixtures()["skce_normal"], ids=lambda c: c["expected_expr"])
def test_skce_of_normal_predictions_matches_calibration_errors_jl(case: dict) -> None:
    mu, sigma = np.array(case["predictions"]).T
    value = rr.skce_normal(mu, sigma, case["targets"], case["target_scale"])
    assert value == pytest.approx(case["expected"], rel=1e-14)


def test_gaussian_cdf_through_erfc_is_accurate_in_both_tails() -> None:
    t = fixtures()["gaussian_table"]
    z, cdf, sf = np.array(t["z"]), np.array(t["cdf"]), np.array(t["sf"])
    assert z.min() == -38.0 and z.max() == 8.3 and -7.96 in z
    normal = cdf > 2.2250738585072014e-308  # below it the exact value is a subnormal
    error = np.abs(rr.norm_cdf(z)[normal] / cdf[normal] - 1)
    # rounding z / sqrt(2) alone costs about z^2 * 2^-53 relative (erfc's slope), so the
    # bound grows in the far tail: 7.3e-15 on |z| <= 8, 1.7e-13 at z = -37.5
    bound = 4e-15 + 2 * z[normal] ** 2 * 2.0**-53
    assert np.all(error <= bound)
    assert np.max(error[np.abs(z[normal]) <= 8]) < 1e-14
    sub = ~normal  # z below -37.5: subnormal results, good to a few units of 4.9e-324
    np.testing.assert_allclose(rr.norm_cdf(z[sub]), cdf[sub], rtol=0, atol=1e-320)
    np.testing.assert_allclose(rr.norm_sf(z), sf, rtol=1e-14, atol=0)


def test_the_erf_form_of_the_cdf_loses_the_lower_tail() -> None:
    t = fixtures()["gaussian_table"]
    z, cdf = np.array(t["z"]), np.array(t["cdf"])
    k = int(np.flatnonzero(z == -7.96)[0])
    erf_form = float(rr.norm_cdf_erf(z[k]))
    assert abs(erf_form / cdf[k] - 1) > 3e-2  # (1 + erf(z/sqrt 2))/2 at z = -7.96
    assert abs(float(rr.norm_cdf(z[k])) / cdf[k] - 1) < 1e-14


def test_gaussian_quantile_function_is_accurate_from_the_smallest_normal_to_near_one() -> None:
    t = fixtures()["gaussian_table"]
    np.testing.assert_allclose(rr.norm_ppf(t["p"]), t["ppf"], rtol=1e-13, atol=0)
    assert rr.norm_ppf(0.5) == 0.0
    assert np.isneginf(rr.norm_ppf(0.0)) and np.isposinf(rr.norm_ppf(1.0))


# --------------------------------------------------------------------------
# The peers' departures from the published definitions
# --------------------------------------------------------------------------


def find(peer: str, function: str, dataset: str, group=None, **options) -> dict:
    """The one record of that call."""
    found = [
        r
        for r in fixtures()["records"]
        if (r["peer"], r["function"], r["dataset"], r["group"]) == (peer, function, dataset, group)
        and all(r["options"].get(k, "absent") == v for k, v in options.items())
    ]
    assert len(found) == 1, (peer, function, dataset, group, options, len(found))
    return found[0]


@pytest.mark.parametrize("group", [None, 0, 1, 2])
def test_uncertainty_toolbox_quantile_curve_is_mirrored_but_its_scalars_are_not(group) -> None:
    d = rows("gaussian", group)
    y, mu, s = gaussian(d)
    u = rr.pit_gaussian(y, mu, s)
    peer_exp, peer_obs = find(
        "uncertainty-toolbox", "get_proportion_lists", "gaussian", group, prop_type="quantile"
    )["value"]
    published = rr.quantile_curve(u, peer_exp)
    # the peer's curve is the published one mirrored through (1/2, 1/2)
    mirrored = np.array([np.mean(u >= 1 - p) for p in peer_exp])  # = 1 - mean(u < 1 - p)
    np.testing.assert_array_equal(peer_obs, mirrored)
    assert np.any(published != np.asarray(peer_obs))
    # the scalars over the symmetric grid are the same from either curve
    for fn, peer_fn in [
        (rr.mace, "mean_absolute_calibration_error"),
        (rr.rmsce, "root_mean_squared_calibration_error"),
        (rr.miscalibration_area, "miscalibration_area"),
    ]:
        rec = find(
            "uncertainty-toolbox", peer_fn, "gaussian", group, prop_type="quantile", vectorized=True
        )
        assert fn(peer_exp, published) == pytest.approx(rec["value"], rel=RTOL, abs=ATOL)


@pytest.mark.parametrize("group", [None, 0, 1, 2])
def test_uncertainty_toolbox_interval_curve_is_the_pit_interval_curve(group) -> None:
    d = rows("gaussian", group)
    u = rr.pit_gaussian(*gaussian(d))
    exp, obs = find(
        "uncertainty-toolbox", "get_proportion_lists", "gaussian", group, prop_type="interval"
    )["value"]
    np.testing.assert_array_equal(rr.interval_curve(u, exp), obs)


def test_uncertainty_toolbox_grid_is_linspace_not_k_over_99() -> None:
    differs = sum(rr.UT_GRID[k] != k / 99 for k in range(100))
    assert differs == 49
    exp = find("uncertainty-toolbox", "get_proportion_lists", "gaussian", prop_type="interval")[
        "value"
    ][0]
    np.testing.assert_array_equal(exp, rr.UT_GRID)


def test_kuleshov_score_with_equal_weights_on_the_grid_is_rmsce_squared() -> None:
    d = rows("gaussian", None)
    u = rr.pit_gaussian(*gaussian(d))
    rmsce = find(
        "uncertainty-toolbox",
        "root_mean_squared_calibration_error",
        "gaussian",
        prop_type="quantile",
        vectorized=False,
    )["value"]
    assert rr.kuleshov_score(u, rr.UT_GRID) == pytest.approx(rmsce**2, rel=1e-12)


def test_netcal_qce_default_is_marginal_whatever_its_docstring_says() -> None:
    default = find("netcal", "QCE", "gaussian", default_constructor=True)["value"]
    marginal = find("netcal", "QCE", "gaussian", bins=10, marginal=True, reduction="batchmean")
    conditional = find(
        "netcal",
        "QCE",
        "gaussian",
        bins=10,
        marginal=False,
        reduction="batchmean",
        range_="absent",
        sample_threshold="absent",
    )
    assert default == marginal["value"] != conditional["value"]


def test_netcal_pinball_loss_is_not_the_textbook_pinball_loss() -> None:
    d = rows("gaussian", None)
    y, mu, s = gaussian(d)
    levels = find("netcal", "PinballLoss", "gaussian", reduction="mean")["options"]["q"]
    peer = np.asarray(find("netcal", "PinballLoss", "gaussian", reduction="none")["value"])[..., 0]
    np.testing.assert_allclose(rr.netcal_pinball_compat(y, mu, s, levels), peer, rtol=RTOL)
    for j, tau in enumerate(levels):
        textbook = rr.pinball(y, mu + s * rr.norm_ppf(tau), tau)
        assert not np.allclose(peer[j], textbook)


def test_netcal_uce_weights_do_not_renormalize_over_a_range_that_leaves_rows_out() -> None:
    d = rows("gaussian", None)
    y, mu, s = gaussian(d)
    rec = find("netcal", "UCE", "gaussian", bins=10, range_=[[0.2**2, 1.08**2]])
    inside = np.mean(s**2 <= 1.08**2)
    assert inside < 1
    assert rr.uce(y, mu, s, 10, (0.2**2, 1.08**2)) == pytest.approx(rec["value"], rel=RTOL)
    renormalized = rr.uce(
        y[s**2 <= 1.08**2],
        mu[s**2 <= 1.08**2],
        s[s**2 <= 1.08**2],
        10,
        (
            0.2**2,
            1.08**2,
        ),
    )
    assert renormalized * inside == pytest.approx(rec["value"], rel=1e-12)


def test_scoringrules_numpy_weighted_interval_score_adds_the_median() -> None:
    d = rows("quantiles", None)
    numpy_backend = np.asarray(
        find("scoringrules", "weighted_interval_score", "quantiles", backend="numpy")["value"]
    )
    numba_backend = np.asarray(
        find("scoringrules", "weighted_interval_score", "quantiles", backend="numba")["value"]
    )
    k = len(d["levels"]) // 2
    args = (d["y"], d["q"][:, k], d["q"][:, :k], d["q"][:, ::-1][:, :k], [0.1, 0.2, 0.5])
    np.testing.assert_allclose(rr.weighted_interval_score(*args), numba_backend, rtol=RTOL)
    np.testing.assert_allclose(rr.weighted_interval_score_compat(*args), numpy_backend, rtol=RTOL)
    assert not np.allclose(numpy_backend, numba_backend)
    # Bracher et al.'s weights alpha/2 (the docstring's 2/alpha is not what the code does):
    # with them WIS is the mean pinball loss over the 2K + 1 quantiles, times 2.
    pin = np.mean([rr.pinball(d["y"], d["q"][:, j], t) for j, t in enumerate(d["levels"])], 0)
    np.testing.assert_allclose(rr.weighted_interval_score(*args), 2 * pin, rtol=1e-12)


@pytest.mark.parametrize("dataset", ["ensemble5", "ensemble20"])
def test_scoringrules_pwm_estimator_is_the_fair_crps(dataset) -> None:
    d = rows(dataset, None)
    pwm = find("scoringrules", "crps_ensemble", dataset, estimator="pwm", backend="numpy")
    nrg = find("scoringrules", "crps_ensemble", dataset, estimator="nrg", backend="numpy")
    fair = rr.crps_ensemble(d["y"], d["x"], "fair")
    np.testing.assert_allclose(pwm["value"], fair, rtol=1e-12, atol=1e-15)
    assert not np.allclose(pwm["value"], nrg["value"])


def test_scoringrules_log_score_overflows_in_the_tails() -> None:
    d = rows("tails", None)
    y, mu, s = gaussian(d)
    peer = np.asarray(find("scoringrules", "logs_normal", "tails", backend="numpy")["value"])
    published = rr.nll_gaussian_rows(y, mu, s)
    assert np.all(np.isfinite(published))
    assert np.isinf(peer[np.abs(y) == 40]).all()
    tail = np.abs(y) == 38.5  # phi(z) is a subnormal there: digits lost
    assert abs(peer[tail][0] - published[tail][0]) > 1e-3
    fine = np.abs(y) <= 30
    np.testing.assert_allclose(peer[fine], published[fine], rtol=1e-13)
    # uncertainty-toolbox's NLL (scipy's logpdf) is the published one
    ut_nll = find("uncertainty-toolbox", "nll_gaussian", "tails")["value"]
    assert float(np.mean(published)) == pytest.approx(ut_nll, rel=1e-14)


def test_mapie_width_and_winkler_score_take_reversed_bounds_as_if_swapped() -> None:
    d = rows("mapie_reversed", None)
    lo, hi = d["lower"][:, 0], d["upper"][:, 0]
    assert np.any(lo > hi)
    peer = find("mapie", "regression_mean_width_score", "mapie_reversed")["value"][0]
    assert rr.mean_width_compat(lo, hi) == peer != rr.mean_width(lo, hi)
    # the Winkler score swaps them: a reversed row scores as the interval the right way round
    mwi = find("mapie", "regression_mwi_score", "mapie_reversed")["value"]
    swapped = rr.interval_score(d["y"], np.minimum(lo, hi), np.maximum(lo, hi), 0.1)
    assert mwi == pytest.approx(float(np.mean(swapped)), rel=RTOL)
    assert mwi != pytest.approx(float(np.mean(rr.interval_score(d["y"], lo, hi, 0.1))))
    cov = find("mapie", "regression_coverage_score", "mapie_reversed")["value"][0]
    assert cov == rr.interval_coverage(d["y"], lo, hi) == 0.5  # the two reversed rows miss


def test_mapie_size_stratified_coverage_depends_on_the_order_of_equal_widths() -> None:
    d = rows("mapie_ssc_ties", None)
    peer = find("mapie", "regression_ssc", "mapie_ssc_ties")["value"][0]
    stable = rr.size_stratified_coverage(d["y"], d["lower"][:, 0], d["upper"][:, 0], 3)
    assert not np.allclose(stable, peer)


def test_split_conformal_quantile_is_the_order_statistic() -> None:
    cases = fixtures()["datasets"]["split_conformal"]["cases"]
    for c in cases:
        n, a = len(c["scores"]), c["alpha"]
        k = math.ceil((n + 1) * (1 - a) - 1e-9)
        assert c["value"] == sorted(c["scores"])[k - 1]


# --------------------------------------------------------------------------
# Reference-only pieces (no peer computes them)
# --------------------------------------------------------------------------


def test_rank_pit_bounds_widen_only_on_ties() -> None:
    x = np.array([[0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]])
    y = np.array([1.0, 1.5])
    lo, hi = rr.rank_pit_bounds(y, x)
    np.testing.assert_array_equal(lo, [1 / 5, 2 / 5])
    np.testing.assert_array_equal(hi, [4 / 5, 3 / 5])
    elo, ehi = rr.empirical_pit_bounds(y, x)
    np.testing.assert_array_equal(elo, [1 / 4, 2 / 4])
    np.testing.assert_array_equal(ehi, [3 / 4, 2 / 4])  # a point unless y ties a member


def test_quantile_curve_from_quantiles_counts_ties_as_at_or_below() -> None:
    d = rows("quantiles", None)
    obs = rr.quantile_curve_from_quantiles(d["y"], d["q"])
    assert obs.shape == (len(d["levels"]),)
    assert np.all(np.diff(obs) >= 0)  # equal adjacent quantiles keep the curve monotone
    assert d["y"][10] == d["q"][10, 3]  # a target on its median counts as y <= q
    assert obs[3] == np.mean(d["y"] <= d["q"][:, 3])


def test_netcal_qce_sample_threshold_keeps_the_weight_of_the_bins_it_blanks() -> None:
    d = rows("gaussian", None)
    y, mu, s = gaussian(d)
    rec = find("netcal", "QCE", "gaussian", bins=10, marginal=False, sample_threshold=8)
    levels = np.array(rec["options"]["q"])
    idx = rr.equal_width_bins(s, 10)
    counts = np.bincount(idx, minlength=10)
    kept = counts[idx] >= 8
    assert 0 < kept.sum() < len(y)
    inside = rr.in_central_interval(y, mu, s, levels)
    # a bin under the threshold counts with frequency 0: it adds N_b tau / N
    blanked = (~kept).sum() / len(y) * levels
    per_kept = [
        sum(
            np.sum(idx[kept] == b) * abs(np.mean(inside[j][kept & (idx == b)]) - t)
            for b in np.unique(idx[kept])
        )
        / len(y)
        for j, t in enumerate(levels)
    ]
    assert float(np.mean(per_kept + blanked)) == pytest.approx(rec["value"][0], rel=1e-12)


def test_the_reference_imports_numpy_and_the_standard_library_only() -> None:
    import ast

    tree = ast.parse((Path(__file__).parent / "reference_regression.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"math", "fractions", "numpy"}
