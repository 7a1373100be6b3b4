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
    if function == "QCE":
        marginal = o.get("marginal", True)  # the constructor's default (the docstring says False)
        per = rr.qce(y, mu, s, q, bins, marginal, rng, reduce=False)
        return per[:, None] if o["reduction"] == "none" else [np.mean(per)]
    if function == "ENCE":
        return rr.ence(y, mu, s, bins, rng)
    if function == "UCE":
        return rr.uce(y, mu, s, bins, rng)
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
    if function == "coverage_gap":
        j = o["level_index"]
        return rr.coverage_gap(
            y, lo[:, j], hi[:, j], d["group"], o["confidence_level"], o["weighted"]
        )
    if function == "regression_ssc":
        return [
            rr.size_stratified_coverage(y, lo[:, j], hi[:, j], o["num_bins"])
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
