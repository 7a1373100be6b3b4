"""Write ``fixtures.json``: the regression peers' outputs on small fixed datasets.

Not part of the test suite.  Run it with the side environment that has the peers
installed (see ``PEERS.md`` beside this file for the versions and how to build it)::

    /work/sidevenv-reg/bin/python tests/data/regression/make_fixtures.py

It writes ``fixtures.json`` beside itself: the datasets (seeded numpy), then one record
per peer call (peer, version, function, the call's options, the dataset and group it
ran on, and the peer's output), then the peers' own test-suite values, then a
high-precision table of the Gaussian CDF and quantile function (mpmath).
``tests/test_reference_regression.py`` checks ``tests/reference_regression.py``
against every record, without any peer installed.
"""

from __future__ import annotations

import json
import math
import re
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore")

import mpmath  # noqa: E402
import netcal.metrics as nm  # noqa: E402
import properscoring as ps  # noqa: E402
import scoringrules as sr  # noqa: E402
import uncertainty_toolbox.metrics_calibration as utc  # noqa: E402
import uncertainty_toolbox.metrics_scoring_rule as uts  # noqa: E402
from mapie.metrics.conditional import coverage_gap  # noqa: E402
from mapie.metrics.regression import (  # noqa: E402
    regression_coverage_score,
    regression_mean_width_score,
    regression_mwi_score,
    regression_ssc,
    regression_ssc_score,
)
from mapie.regression import SplitConformalRegressor  # noqa: E402
from mapie.utils import _compute_regression_quantile  # noqa: E402
from properscoring._crps import _crps_ensemble_vectorized  # noqa: E402
from scipy.special import ndtri  # noqa: E402
from sklearn.dummy import DummyRegressor  # noqa: E402

OUT = Path(__file__).with_name("fixtures.json")
SEED = 20261126
QUANTILE_LEVELS = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]
INTERVAL_LEVELS = [0.5, 0.9]
QCE_LEVELS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
PEERS = {
    "uncertainty-toolbox": "uncertainty-toolbox",
    "netcal": "netcal",
    "scoringrules": "scoringrules",
    "properscoring": "properscoring",
    "mapie": "mapie",
}


# --------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------


def _scale(group: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """The true spread over the predicted one: < 1 under-confident, > 1 over-confident.

    Group 0 is under-confident (0.6), group 1 over-confident (1.7), and group 2 changes
    sign with sigma: over-confident (1.6) below sigma = 1, under-confident (0.6) above.
    """
    return np.where(group == 0, 0.6, np.where(group == 1, 1.7, np.where(sigma < 1.0, 1.6, 0.6)))


def gaussian_dataset(rng: np.random.Generator) -> dict:
    """Three groups (30, 30, 40 rows) of Gaussian predictions with sign-changing errors."""
    group = np.repeat([0, 1, 2], [30, 30, 40])
    n = len(group)
    mu = np.round(rng.normal(0.0, 2.0, n), 3)
    sigma = np.round(rng.uniform(0.2, 2.0, n), 2)
    y = np.round(mu + _scale(group, sigma) * sigma * rng.standard_normal(n), 4)
    y[0] = mu[0]  # a target exactly on the mean
    y[31] = mu[31] - 9.0 * sigma[31]  # a deep lower-tail target (z = -9)
    return {"group": group, "mu": mu, "sigma": sigma, "y": y}


def edges_dataset(rng: np.random.Generator) -> dict:
    """Sigma exactly on netcal's 10 equal-width edges between 0.5 and 1.7 (and between)."""
    edges = np.linspace(0.5, 1.7, 11)
    sigma = np.concatenate([edges, edges[1:-1], (edges[:-1] + edges[1:]) / 2])
    n = len(sigma)
    group = np.zeros(n, dtype=np.int64)
    group[n // 2 :] = 1
    mu = np.round(rng.normal(0.0, 1.0, n), 3)
    y = np.round(mu + _scale(group, sigma) * sigma * rng.standard_normal(n), 4)
    y[3] = mu[3]
    return {"group": group, "mu": mu, "sigma": sigma, "y": y}


def quantile_dataset(g: dict) -> dict:
    """Predicted quantiles at QUANTILE_LEVELS from the Gaussian rows (first 60).

    Row 3 has q(0.25) == q(0.5), row 7 has q(0.05) == q(0.1) (equal adjacent quantiles,
    allowed); rows 10 and 11 have y equal to a predicted quantile.
    """
    idx = np.arange(60)
    z = ndtri(np.array(QUANTILE_LEVELS))
    q = np.round(g["mu"][idx, None] + g["sigma"][idx, None] * z[None, :], 4)
    q[3, 2] = q[3, 3]
    q[7, 0] = q[7, 1]
    y = g["y"][idx].copy()
    y[10] = q[10, 3]
    y[11] = q[11, 5]
    return {"group": g["group"][idx], "levels": QUANTILE_LEVELS, "q": q, "y": y}


def interval_dataset(g: dict) -> dict:
    """Central intervals at INTERVAL_LEVELS from the Gaussian rows.

    Row 1 has y on its 50% lower bound, row 2 on its 90% upper bound (bounds inclusive).
    """
    z = ndtri(0.5 + np.array(INTERVAL_LEVELS) / 2)
    lower = np.round(g["mu"][:, None] - g["sigma"][:, None] * z[None, :], 4)
    upper = np.round(g["mu"][:, None] + g["sigma"][:, None] * z[None, :], 4)
    y = g["y"].copy()
    y[1] = lower[1, 0]
    y[2] = upper[2, 1]
    return {"group": g["group"], "levels": INTERVAL_LEVELS, "lower": lower, "upper": upper, "y": y}


def ensemble_dataset(rng: np.random.Generator, g: dict, m: int) -> dict:
    """M members drawn from N(mu, sigma^2), rounded to 0.01 so members tie.

    Rows 0-4 have y equal to a member, row 5 has y equal to two members.
    """
    x = np.round(g["mu"][:, None] + g["sigma"][:, None] * rng.standard_normal((len(g["y"]), m)), 2)
    y = g["y"].copy()
    for r in range(5):
        y[r] = x[r, r % m]
    x[5, 1] = x[5, 0]
    y[5] = x[5, 0]
    return {"group": g["group"], "x": x, "y": y}


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------

RECORDS: list[dict] = []


def record(peer: str, function: str, dataset: str, group, options: dict, value) -> None:
    """Append one peer output (a float, or a nested list of floats)."""
    value = np.asarray(value, dtype=np.float64)
    out = float(value) if value.ndim == 0 else value.tolist()
    RECORDS.append(
        {
            "peer": peer,
            "function": function,
            "dataset": dataset,
            "group": group,
            "options": options,
            "value": out,
        }
    )


def recorder(peer: str, dataset: str, group):
    """``record`` with the peer, dataset and group bound: ``rec(function, value, **options)``."""

    def rec(function: str, value, **options) -> None:
        record(peer, function, dataset, group, options, value)

    return rec


def subsets(data: dict):
    """Yield (group label, row mask): every row (None), then each group."""
    yield None, np.ones(len(data["y"]), dtype=bool)
    for gid in np.unique(data["group"]):
        yield int(gid), data["group"] == gid


def gaussian_peers(name: str, data: dict) -> None:
    """Every Gaussian (mean, std) measure of every peer, on all rows and per group."""
    for gid, m in subsets(data):
        mu, sd, y = data["mu"][m], data["sigma"][m], data["y"][m]
        ut_gaussian(name, gid, mu, sd, y)
        netcal_gaussian(name, gid, mu, sd, y)
        if gid is not None:
            continue  # the per-row scores once, on every row
        rec = recorder("scoringrules", name, gid)
        for backend in ("numpy", "numba"):
            rec("crps_normal", sr.crps_normal(y, mu, sd, backend=backend), backend=backend)
            rec("logs_normal", sr.logs_normal(y, mu, sd, backend=backend), backend=backend)
        record("properscoring", "crps_gaussian", name, gid, {}, ps.crps_gaussian(y, mu, sd))


def ut_gaussian(name: str, gid, mu, sd, y) -> None:
    """uncertainty-toolbox 0.1.1 on Gaussian predictions."""
    rec = recorder("uncertainty-toolbox", name, gid)
    for prop in ("interval", "quantile"):
        for vec in (False, True):
            o = {"prop_type": prop, "vectorized": vec}
            rec(
                "mean_absolute_calibration_error",
                utc.mean_absolute_calibration_error(mu, sd, y, vectorized=vec, prop_type=prop),
                **o,
            )
            rec(
                "root_mean_squared_calibration_error",
                utc.root_mean_squared_calibration_error(mu, sd, y, vectorized=vec, prop_type=prop),
                **o,
            )
            rec(
                "miscalibration_area",
                utc.miscalibration_area(mu, sd, y, vectorized=vec, prop_type=prop),
                **o,
            )
        exp, obs = utc.get_proportion_lists(mu, sd, y, prop_type=prop)
        rec("get_proportion_lists", [exp, obs], prop_type=prop)
        exp, obs = utc.get_proportion_lists_vectorized(mu, sd, y, prop_type=prop)
        rec("get_proportion_lists_vectorized", [exp, obs], prop_type=prop)
    rec("sharpness", utc.sharpness(sd))
    rec("nll_gaussian", uts.nll_gaussian(mu, sd, y))
    rec("crps_gaussian", uts.crps_gaussian(mu, sd, y))
    rec("check_score", uts.check_score(mu, sd, y))
    rec("interval_score", uts.interval_score(mu, sd, y))


def netcal_gaussian(name: str, gid, mu, sd, y) -> None:
    """netcal 1.4.0's regression metrics on Gaussian predictions."""
    rec = recorder("netcal", name, gid)
    q = np.array(QCE_LEVELS)
    lo, hi = float(np.min(sd)), float(np.max(sd))
    for bins in (5, 10):
        for marginal in (True, False):
            qce = nm.QCE(bins=bins, marginal=marginal)
            rec(
                "QCE",
                qce.measure((mu, sd), y, q, reduction="none"),
                bins=bins,
                marginal=marginal,
                q=QCE_LEVELS,
                reduction="none",
            )
            rec(
                "QCE",
                qce.measure((mu, sd), y, q),
                bins=bins,
                marginal=marginal,
                q=QCE_LEVELS,
                reduction="batchmean",
            )
        rec("ENCE", nm.ENCE(bins=bins).measure((mu, sd), y), bins=bins)
        rec("UCE", nm.UCE(bins=bins).measure((mu, sd), y), bins=bins)
        # a fixed range wider than the data (merges across partitions), and one
        # narrower than the data (rows outside it drop out of the bins)
        for rng_ in ((0.0, 2.5), (lo, (lo + hi) / 2)):
            r = [list(rng_)]
            rec(
                "QCE",
                nm.QCE(bins=bins, marginal=False).measure((mu, sd), y, q, range_=r),
                bins=bins,
                marginal=False,
                q=QCE_LEVELS,
                reduction="batchmean",
                range_=r,
            )
            rec("ENCE", nm.ENCE(bins=bins).measure((mu, sd), y, range_=r), bins=bins, range_=r)
            vr = [[rng_[0] ** 2, rng_[1] ** 2]]
            rec("UCE", nm.UCE(bins=bins).measure((mu, sd), y, range_=vr), bins=bins, range_=vr)
    rec(
        "QCE",
        nm.QCE().measure((mu, sd), y, q),
        default_constructor=True,
        q=QCE_LEVELS,
        reduction="batchmean",
    )
    # sample_threshold > 1: bins with fewer rows are blanked to 0 but keep their weight
    # in QCE; ENCE drops them; UCE adds 0 for them without renormalizing
    for thr in (3, 8):
        conditional = nm.QCE(bins=10, marginal=False, sample_threshold=thr)
        v = conditional.measure((mu, sd), y, q)
        rec(
            "QCE",
            v,
            bins=10,
            marginal=False,
            q=QCE_LEVELS,
            reduction="batchmean",
            sample_threshold=thr,
        )
        v = nm.ENCE(bins=10, sample_threshold=thr).measure((mu, sd), y)
        rec("ENCE", v, bins=10, sample_threshold=thr)
        v = nm.UCE(bins=10, sample_threshold=thr).measure((mu, sd), y)
        rec("UCE", v, bins=10, sample_threshold=thr)
    res = nm.PICP().measure((mu, sd), y, q, reduction="none")
    rec("PICP", res.picp, q=QCE_LEVELS, reduction="none")
    rec("MPIW", res.mpiw, q=QCE_LEVELS, reduction="none")
    pl = nm.PinballLoss()
    if gid is None:
        rec(
            "PinballLoss",
            pl.measure((mu, sd), y, q, reduction="none"),
            q=QCE_LEVELS,
            reduction="none",
        )
    rec("PinballLoss", pl.measure((mu, sd), y, q), q=QCE_LEVELS, reduction="mean")


def quantile_peers(name: str, data: dict) -> None:
    """scoringrules' quantile, interval and weighted interval scores on predicted quantiles."""
    lv = np.array(data["levels"])
    for gid, m in list(subsets(data))[:1]:  # per-row scores: every row once
        q, y = data["q"][m], data["y"][m]
        rec = recorder("scoringrules", name, gid)
        for j, tau in enumerate(lv):
            rec(
                "quantile_score",
                sr.quantile_score(y, q[:, j], tau, backend="numpy"),
                alpha=float(tau),
            )
        # central intervals from the symmetric level pairs, and the median
        k = len(lv) // 2
        lower, upper = q[:, :k], q[:, ::-1][:, :k]
        alpha = 2 * lv[:k]
        rec(
            "interval_score",
            sr.interval_score(y, lower, upper, alpha, backend="numpy"),
            alpha=alpha.tolist(),
        )
        for backend in ("numpy", "numba"):
            wis = sr.weighted_interval_score(y, q[:, k], lower, upper, alpha, backend=backend)
            rec("weighted_interval_score", wis, alpha=alpha.tolist(), backend=backend)


def interval_peers(name: str, data: dict) -> None:
    """MAPIE 1.6 coverage, width, coverage gap and SSC; scoringrules' interval score."""
    yi = np.stack([data["lower"], data["upper"]], axis=1)  # (n, 2, levels)
    levels = data["levels"]
    for gid, m in subsets(data):
        y = data["y"][m]
        rec = recorder("mapie", name, gid)
        rec("regression_coverage_score", regression_coverage_score(y, yi[m]))
        rec("regression_mean_width_score", regression_mean_width_score(yi[m]))
        rec("regression_ssc", regression_ssc(y, yi[m], num_bins=3), num_bins=3)
        rec("regression_ssc_score", regression_ssc_score(y, yi[m], num_bins=3), num_bins=3)
        for j, lev in enumerate(levels):
            v = regression_mwi_score(y, yi[m][:, :, j : j + 1], lev)
            rec("regression_mwi_score", v, confidence_level=lev, level_index=j)
        for j, lev in enumerate(levels if gid is None else []):
            sc = sr.interval_score(y, yi[m, 0, j], yi[m, 1, j], 1 - lev, backend="numpy")
            record(
                "scoringrules",
                "interval_score",
                name,
                gid,
                {"alpha": 1 - lev, "level_index": j},
                sc,
            )
    y, grp = data["y"], data["group"]
    for j, lev in enumerate(levels):
        for weighted in (False, True):
            for cl in (lev, 0.8):
                v = coverage_gap(y, grp, cl, y_intervals=yi[:, :, j], weighted=weighted)
                record(
                    "mapie",
                    "coverage_gap",
                    name,
                    None,
                    {"confidence_level": cl, "weighted": weighted, "level_index": j},
                    v,
                )


def ensemble_peers(name: str, data: dict) -> None:
    """CRPS of ensembles: scoringrules' estimators on both backends, properscoring's two paths."""
    for gid, m in list(subsets(data))[:1]:  # per-row scores: every row once
        x, y = data["x"][m], data["y"][m]
        for est in ("nrg", "fair", "pwm", "qd"):
            for backend in ("numpy", "numba"):
                v = sr.crps_ensemble(y, x, estimator=est, backend=backend)
                record(
                    "scoringrules",
                    "crps_ensemble",
                    name,
                    gid,
                    {"estimator": est, "backend": backend},
                    v,
                )
        record(
            "properscoring", "crps_ensemble", name, gid, {"path": "gufunc"}, ps.crps_ensemble(y, x)
        )
        xs = np.sort(x, axis=-1)
        v = _crps_ensemble_vectorized(y, xs, np.ones_like(xs))
        record("properscoring", "crps_ensemble", name, gid, {"path": "vectorized"}, v)


def mapie_examples(datasets: dict) -> None:
    """MAPIE's docstring coverage-gap example, reversed bounds, and the split-conformal quantile."""
    d = {
        "y": np.array([0.0, 1.0, 2.0, 3.0]),
        "group": np.array([0, 0, 1, 1]),
        "lower": np.array([[0.0], [0.0], [1.0], [4.0]]),
        "upper": np.array([[1.0], [2.0], [2.0], [5.0]]),
        "levels": [0.75],
    }
    datasets["mapie_gap_example"] = d
    yi = np.stack([d["lower"], d["upper"]], axis=1)
    for weighted in (False, True):
        v = coverage_gap(d["y"], d["group"], 0.75, y_intervals=yi[:, :, 0], weighted=weighted)
        record(
            "mapie",
            "coverage_gap",
            "mapie_gap_example",
            None,
            {"confidence_level": 0.75, "weighted": weighted, "level_index": 0},
            v,
        )
    # reversed bounds (lower > upper) in rows 1 and 2: coverage counts them as misses,
    # the width takes |upper - lower|, the Winkler score swaps them
    r = {
        "y": np.array([0.5, 1.5, 1.0, 3.0]),
        "group": np.array([0, 0, 1, 1]),
        "lower": np.array([[0.0], [2.0], [1.5], [2.0]]),
        "upper": np.array([[1.0], [1.0], [0.5], [4.0]]),
        "levels": [0.9],
    }
    datasets["mapie_reversed"] = r
    yi = np.stack([r["lower"], r["upper"]], axis=1)
    record(
        "mapie",
        "regression_coverage_score",
        "mapie_reversed",
        None,
        {},
        regression_coverage_score(r["y"], yi),
    )
    v = regression_mwi_score(r["y"], yi, 0.9)
    record(
        "mapie",
        "regression_mwi_score",
        "mapie_reversed",
        None,
        {"confidence_level": 0.9, "level_index": 0},
        v,
    )
    record(
        "mapie",
        "regression_mean_width_score",
        "mapie_reversed",
        None,
        {},
        regression_mean_width_score(yi),
    )
    ssc_ties(datasets)
    split_conformal(datasets)


def ssc_ties(datasets: dict) -> None:
    """Size-stratified coverage where equal widths straddle a split between bins.

    MAPIE orders rows with numpy's default ``np.argsort`` (not stable: the order among
    equal widths is the sort's, and can depend on the CPU's SIMD path); the order it
    used here is stored as ``argsort_order``.
    """
    rng = np.random.default_rng(0)
    n = 24
    w = rng.choice([1.0, 2.0, 3.0], n)
    w[:4] = [0.5, 0.7, 3.5, 4.0]
    y = np.where(rng.random(n) < 0.5, 0.2, 9.0)
    d = {
        "y": y,
        "group": np.zeros(n, dtype=np.int64),
        "lower": np.zeros((n, 1)),
        "upper": w[:, None],
        "levels": [0.9],
        "argsort_order": np.argsort(w),
    }
    datasets["mapie_ssc_ties"] = d
    yi = np.stack([d["lower"], d["upper"]], axis=1)
    v = regression_ssc(y, yi, num_bins=3)
    record("mapie", "regression_ssc", "mapie_ssc_ties", None, {"num_bins": 3}, v)


def split_conformal(datasets: dict) -> None:
    """The split-conformal quantile: MAPIE's private helper over a grid, and its public path."""
    rng = np.random.default_rng(SEED + 7)
    cases = []
    for n in (5, 9, 10, 19, 20, 99):
        scores = np.round(rng.exponential(1.0, n), 3)
        scores[1] = scores[0]  # a tie
        for alpha in (0.05, 0.1, 0.2, 0.5):
            need = math.ceil((n + 1) * (1 - alpha) - 1e-9)
            if need > n:
                continue
            v = _compute_regression_quantile(scores, np.array([1 - alpha]), axis=0)[0, 0]
            cases.append({"scores": scores.tolist(), "alpha": alpha, "value": float(v)})
    datasets["split_conformal"] = {"cases": cases}
    for c in cases:
        record(
            "mapie",
            "_compute_regression_quantile",
            "split_conformal",
            None,
            {"alpha": c["alpha"], "n": len(c["scores"])},
            c["value"],
        )
    # public path: a constant-zero prefit model, so |y| are the conformity scores and
    # the interval is [-q, q]
    c = cases[-1]
    s = np.asarray(c["scores"])
    y = s * np.where(np.arange(len(s)) % 2 == 0, 1.0, -1.0)
    x = np.zeros((len(s), 1))
    est = DummyRegressor(strategy="constant", constant=0.0).fit(x, np.zeros(len(s)))
    scr = SplitConformalRegressor(estimator=est, confidence_level=1 - c["alpha"], prefit=True)
    scr.conformalize(x, y)
    _, iv = scr.predict_interval(np.zeros((1, 1)))
    record(
        "mapie",
        "SplitConformalRegressor.predict_interval",
        "split_conformal",
        None,
        {"alpha": c["alpha"], "n": len(s), "case": len(cases) - 1},
        [float(iv[0, 0, 0]), float(iv[0, 1, 0])],
    )


def ut_fixture_peers(datasets: dict) -> None:
    """uncertainty-toolbox's own test fixture through every Gaussian peer."""
    d = {
        "group": np.array([0, 0, 0]),
        "mu": np.array([1.0, 2.0, 3.0]),
        "sigma": np.array([0.1, 0.5, 1.0]),
        "y": np.array([1.5, 3.0, 2.0]),
    }
    datasets["ut_fixture"] = d
    ut_gaussian("ut_fixture", None, d["mu"], d["sigma"], d["y"])
    netcal_gaussian("ut_fixture", None, d["mu"], d["sigma"], d["y"])
    for backend in ("numpy", "numba"):
        record(
            "scoringrules",
            "crps_normal",
            "ut_fixture",
            None,
            {"backend": backend},
            sr.crps_normal(d["y"], d["mu"], d["sigma"], backend=backend),
        )
        record(
            "scoringrules",
            "logs_normal",
            "ut_fixture",
            None,
            {"backend": backend},
            sr.logs_normal(d["y"], d["mu"], d["sigma"], backend=backend),
        )
    record(
        "properscoring",
        "crps_gaussian",
        "ut_fixture",
        None,
        {},
        ps.crps_gaussian(d["y"], d["mu"], d["sigma"]),
    )


def tail_peers(datasets: dict) -> None:
    """Targets far in the tails: where the peers' Gaussian formulas overflow or lose accuracy."""
    z = np.array([-40.0, -38.5, -30.0, -9.0, -7.96, 0.0, 7.96, 9.0, 30.0, 38.5, 40.0])
    d = {
        "group": np.zeros(len(z), dtype=np.int64),
        "mu": np.zeros(len(z)),
        "sigma": np.ones(len(z)),
        "y": z,
    }
    datasets["tails"] = d
    for backend in ("numpy", "numba"):
        record(
            "scoringrules",
            "logs_normal",
            "tails",
            None,
            {"backend": backend},
            sr.logs_normal(z, 0.0, 1.0, backend=backend),
        )
        record(
            "scoringrules",
            "crps_normal",
            "tails",
            None,
            {"backend": backend},
            sr.crps_normal(z, 0.0, 1.0, backend=backend),
        )
    record("properscoring", "crps_gaussian", "tails", None, {}, ps.crps_gaussian(z, 0.0, 1.0))
    with np.errstate(all="ignore"):
        record(
            "uncertainty-toolbox",
            "nll_gaussian",
            "tails",
            None,
            {},
            uts.nll_gaussian(d["mu"], d["sigma"], z),
        )


# --------------------------------------------------------------------------
# The peers' own test values, CalibrationErrors.jl, the high-precision table
# --------------------------------------------------------------------------


def suite_values() -> list[dict]:
    """Expected values from the peers' own test suites and docstrings, with their source."""
    ut_cal = (
        "uncertainty-toolbox/uncertainty-toolbox tests/test_metrics_calibration.py @00662268be30"
    )
    ut_sr = (
        "uncertainty-toolbox/uncertainty-toolbox tests/test_metrics_scoring_rule.py @2ef6a39a7f0f"
    )
    fx = {"mu": [1.0, 2.0, 3.0], "sigma": [0.1, 0.5, 1.0], "y": [1.5, 3.0, 2.0]}
    out = [
        {
            "source": ut_cal,
            "function": "sharpness",
            "inputs": fx,
            "options": {},
            "expected": 0.648074069840786,
            "tolerance": 1e-6,
        },
        {
            "source": ut_cal,
            "function": "root_mean_squared_calibration_error",
            "inputs": fx,
            "options": {"prop_type": "interval"},
            "expected": 0.4165757476562379,
            "tolerance": 1e-6,
        },
        {
            "source": ut_cal,
            "function": "root_mean_squared_calibration_error",
            "inputs": fx,
            "options": {"prop_type": "quantile"},
            "expected": 0.30362567774902066,
            "tolerance": 1e-6,
        },
        {
            "source": ut_cal,
            "function": "mean_absolute_calibration_error",
            "inputs": fx,
            "options": {"prop_type": "interval"},
            "expected": 0.3733333333333335,
            "tolerance": 1e-6,
        },
        {
            "source": ut_cal,
            "function": "mean_absolute_calibration_error",
            "inputs": fx,
            "options": {"prop_type": "quantile"},
            "expected": 0.23757575757575758,
            "tolerance": 1e-6,
        },
        {
            "source": ut_cal,
            "function": "miscalibration_area",
            "inputs": fx,
            "options": {"prop_type": "interval"},
            "expected": 0.37710437710437716,
            "tolerance": 1e-6,
        },
        {
            "source": ut_cal,
            "function": "miscalibration_area",
            "inputs": fx,
            "options": {"prop_type": "quantile"},
            "expected": 0.23916245791245788,
            "tolerance": 1e-6,
        },
        {
            "source": ut_sr,
            "function": "nll_gaussian",
            "inputs": fx,
            "options": {},
            "expected": 4.920361108686675,
            "tolerance": 1e-6,
        },
        {
            "source": ut_sr,
            "function": "nll_gaussian",
            "inputs": {"mu": [0.0], "sigma": [1 / math.sqrt(2 * math.pi)], "y": [0.0]},
            "options": {},
            "expected": 0.0,
            "tolerance": 1e-6,
        },
        {
            "source": ut_sr,
            "function": "crps_gaussian",
            "inputs": fx,
            "options": {},
            "expected": 0.59080610693,
            "tolerance": 1e-6,
        },
        {
            "source": ut_sr,
            "function": "check_score",
            "inputs": fx,
            "options": {},
            "expected": 0.29801437323836477,
            "tolerance": 1e-6,
        },
        {
            "source": ut_sr,
            "function": "check_score",
            "inputs": {"mu": [0.0], "sigma": [1.0], "y": [1.0]},
            "options": {"start_q": 0.841, "end_q": 0.841, "resolution": 1},
            "expected": 0.0,
            "tolerance": 1e-2,
        },
        {
            "source": ut_sr,
            "function": "interval_score",
            "inputs": fx,
            "options": {},
            "expected": 3.20755700861995,
            "tolerance": 1e-6,
        },
        {
            "source": ut_sr,
            "function": "interval_score",
            "inputs": {"mu": [0.0], "sigma": [1.0], "y": [0.0]},
            "options": {"start_p": 0.682, "end_p": 0.954, "resolution": 2},
            "expected": 3.0,
            "tolerance": 1e-2,
        },
    ]
    for q, v in [(0.0, 0.0), (0.25, 0.0), (0.5, 0.0), (0.75, 0.3333333333333333), (1.0, 1.0)]:
        out.append(
            {
                "source": ut_cal,
                "function": "get_proportion_in_interval",
                "inputs": fx,
                "options": {"quantile": q},
                "expected": v,
                "tolerance": 1e-6,
            }
        )
    for q, v in [
        (0.0, 0.0),
        (0.25, 0.6666666666666666),
        (0.5, 0.6666666666666666),
        (0.75, 0.6666666666666666),
        (1.0, 1.0),
    ]:
        out.append(
            {
                "source": ut_cal,
                "function": "get_proportion_under_quantile",
                "inputs": fx,
                "options": {"quantile": q},
                "expected": v,
                "tolerance": 1e-6,
            }
        )
    ps_src = (
        "properscoring 0.1 properscoring/tests/test_crps.py::test_crps_toy_examples"
        " (shipped in the wheel)"
    )
    toys = [
        (0, [-1], 1.0),
        (0, [0], 0.0),
        (0, [1], 1.0),
        (0, [0, 0], 0.0),
        (0, [0, 1], 0.25),
        (0, [1, 0], 0.25),
        (0, [1, 1], 1.0),
        (2, [0, 1], 1.25),
        (0, [-1, 1], 0.5),
        (0, [0, 0, 1], 1.0 / 9),
        (1, [0, 0, 1], 4.0 / 9),
        (0, [-1, 0, 0, 1], 1.0 / 8),
    ]
    for y, ens, v in toys:
        out.append(
            {
                "source": ps_src,
                "function": "crps_ensemble",
                "inputs": {"y": [float(y)], "x": [[float(e) for e in ens]]},
                "options": {},
                "expected": v,
                "tolerance": 1e-7,
            }
        )
    sr_src = (
        "scoringrules 0.10.0 docstring examples (scoringrules/_crps.py, _interval.py, _quantile.py)"
    )
    out += [
        {
            "source": sr_src,
            "function": "crps_normal",
            "inputs": {"y": [0.0], "mu": [0.1], "sigma": [0.4]},
            "options": {},
            "expected": 0.10339992515976162,
            "tolerance": 1e-15,
        },
        {
            "source": sr_src,
            "function": "interval_score",
            "inputs": {"y": [0.1], "lower": [0.0], "upper": [0.4]},
            "options": {"alpha": 0.5},
            "expected": 0.4,
            "tolerance": 1e-15,
        },
        {
            "source": sr_src,
            "function": "interval_score",
            "inputs": {"y": [0.1, 0.2, 0.3], "lower": [0.0, 0.1, 0.2], "upper": [0.4, 0.3, 0.5]},
            "options": {"alpha": 0.5},
            # the docstring prints [0.4, 0.2, 0.4]; the code returns 0.3 for the third
            # (width 0.5 - 0.2, y inside): the expected value is the code's
            "expected": sr.interval_score(
                np.array([0.1, 0.2, 0.3]), np.array([0.0, 0.1, 0.2]), np.array([0.4, 0.3, 0.5]), 0.5
            ).tolist(),
            "docstring_says": [0.4, 0.2, 0.4],
            "tolerance": 1e-15,
        },
        {
            "source": sr_src,
            "function": "quantile_score",
            "inputs": {"y": [0.3], "q": [0.5]},
            "options": {"alpha": 0.2},
            "expected": 0.16,
            "tolerance": 1e-15,
        },
    ]
    mp_src = (
        "MAPIE 1.6.0 docstring examples (mapie/metrics/conditional.py::coverage_gap,"
        " mapie/metrics/regression.py)"
    )
    out += [
        {
            "source": mp_src,
            "function": "coverage_gap",
            "inputs": {
                "y": [0.0, 1.0, 2.0, 3.0],
                "group": [0, 0, 1, 1],
                "lower": [0.0, 0.0, 1.0, 4.0],
                "upper": [1.0, 2.0, 2.0, 5.0],
            },
            "options": {"confidence_level": 0.75},
            "expected": 0.25,
            "tolerance": 1e-15,
        },
        {
            "source": mp_src,
            "function": "regression_ssc",
            "inputs": {"y": [5.0, 7.5, 9.5], "lower": [4.0, 6.0, 9.0], "upper": [6.0, 9.0, 10.0]},
            "options": {"num_bins": 2},
            "expected": [1.0, 1.0],
            "tolerance": 0.0,
        },
    ]
    return out


def skce_cases() -> list[dict]:
    """CalibrationErrors.jl's unbiased SKCE unit tests for normal predictions."""
    mp = mpmath.mp
    mp.dps = 40
    e, s = mpmath.exp, mpmath.sqrt
    src = (
        "devmotion/CalibrationErrors.jl test/distributions/normal.jl @3789c1d496c6"
        " (also test/normal.jl @1b5516c906404)"
    )
    kernel = "ExponentialKernel(metric=Wasserstein()) ⊗ SqExponentialKernel()"
    kernel_t = (
        "ExponentialKernel(metric=Wasserstein()) ⊗ (SqExponentialKernel() ∘ ScaleTransform(0.5))"
    )
    n1, n2 = [0.0, 1.0], [1.0, 2.0]
    cases = [
        (kernel, 1.0, [n1, n1], [0.0, 0.0], "1 - sqrt(2) + 1/sqrt(3)", 1 - s(2) + 1 / s(3)),
        (
            kernel,
            1.0,
            [n1, n2],
            [1.0, 0.0],
            "exp(-sqrt(2)) * (exp(-1/2) - 1/sqrt(2) - 1/sqrt(5) + exp(-1/12)/sqrt(6))",
            e(-s(2)) * (e(-0.5) - 1 / s(2) - 1 / s(5) + e(-mpmath.mpf(1) / 12) / s(6)),
        ),
        (
            kernel,
            1.0,
            [n1, n2],
            [0.0, 1.0],
            (
                "exp(-sqrt(2)) * (exp(-1/2) - exp(-1/4)/sqrt(2) - exp(-1/10)/sqrt(5)"
                " + exp(-1/12)/sqrt(6))"
            ),
            e(-s(2))
            * (
                e(-0.5)
                - e(-0.25) / s(2)
                - e(-mpmath.mpf(1) / 10) / s(5)
                + e(-mpmath.mpf(1) / 12) / s(6)
            ),
        ),
        (
            kernel_t,
            0.5,
            [n1, n1],
            [0.0, 0.0],
            "1 - 2/sqrt(1.25) + 1/sqrt(1.5)",
            1 - 2 / s(1.25) + 1 / s(1.5),
        ),
        (
            kernel_t,
            0.5,
            [n1, n2],
            [1.0, 0.0],
            "exp(-sqrt(2)) * (exp(-1/8) - 1/sqrt(1.25) - 1/sqrt(2) + exp(-1/18)/sqrt(2.25))",
            e(-s(2))
            * (e(-mpmath.mpf(1) / 8) - 1 / s(1.25) - 1 / s(2) + e(-mpmath.mpf(1) / 18) / s(2.25)),
        ),
        (
            kernel_t,
            0.5,
            [n1, n2],
            [0.0, 1.0],
            (
                "exp(-sqrt(2)) * (exp(-1/8) - exp(-1/10)/sqrt(1.25) - exp(-1/16)/sqrt(2)"
                " + exp(-1/18)/sqrt(2.25))"
            ),
            e(-s(2))
            * (
                e(-mpmath.mpf(1) / 8)
                - e(-mpmath.mpf(1) / 10) / s(1.25)
                - e(-mpmath.mpf(1) / 16) / s(2)
                + e(-mpmath.mpf(1) / 18) / s(2.25)
            ),
        ),
    ]
    return [
        {
            "source": src,
            "kernel": k,
            "target_scale": g,
            "predictions": p,
            "targets": t,
            "expected_expr": ex,
            "expected": float(v),
        }
        for k, g, p, t, ex, v in cases
    ]


def gaussian_table() -> dict:
    """Phi(z), 1 - Phi(z) and Phi^-1(p) to 40 digits (mpmath), rounded to float64."""
    mp = mpmath.mp
    mp.dps = 40
    z = np.unique(
        np.round(np.concatenate([np.arange(-38.0, 8.3001, 0.25), [-7.96, -37.5, -37.0, 8.3]]), 6)
    )
    cdf = [float(mp.ncdf(mpmath.mpf(float(v)))) for v in z]
    sf = [float(mp.ncdf(-mpmath.mpf(float(v)))) for v in z]
    p = sorted(
        {
            *(10.0**-k for k in range(1, 308, 3)),
            1e-300,
            2.2250738585072014e-308,
            0.025,
            0.05,
            0.1,
            0.25,
            0.4,
            0.5,
            0.6,
            0.75,
            0.9,
            0.95,
            0.975,
            0.99,
            0.999,
            1 - 1e-6,
            1 - 1e-10,
            1 - 1e-15,
        }
    )
    ppf = []
    for v in p:
        pv = mpmath.mpf(v)
        ppf.append(
            float(
                mp.findroot(
                    lambda x, pv=pv: mp.ncdf(x) - pv, float(ndtri(v)), tol=mpmath.mpf(10) ** -35
                )
            )
        )
    return {
        "source": f"mpmath {mpmath.__version__} at 40 significant digits (ncdf; findroot of"
        " ncdf for the quantile), rounded to the nearest float64",
        "z": z.tolist(),
        "cdf": cdf,
        "sf": sf,
        "p": p,
        "ppf": ppf,
    }


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def jsonable(d):
    """Numpy arrays to lists, recursively."""
    if isinstance(d, dict):
        return {k: jsonable(v) for k, v in d.items()}
    if isinstance(d, np.ndarray):
        return d.tolist()
    if isinstance(d, (list, tuple)):
        return [jsonable(v) for v in d]
    if isinstance(d, np.generic):
        return d.item()
    return d


def dump(doc: dict) -> str:
    """JSON, readable and compact: each list of numbers on one line, each record on one line."""
    records = doc["records"]
    text = json.dumps({**doc, "records": "@RECORDS@"}, indent=1, ensure_ascii=False)
    number_list = re.compile(
        r"\[\s*((?:-?[\d.eE+-]+|Infinity|-Infinity|NaN|true|false|null)"
        r"(?:,\s*(?:-?[\d.eE+-]+|Infinity|-Infinity|NaN|true|false|null))*)\s*\]"
    )
    text = number_list.sub(lambda m: "[" + re.sub(r",\s*", ", ", m.group(1)) + "]", text)
    lines = ",\n  ".join(json.dumps(r, ensure_ascii=False) for r in records)
    return text.replace('"@RECORDS@"', "[\n  " + lines + "\n ]") + "\n"


def main() -> None:
    rng = np.random.default_rng(SEED)
    g = gaussian_dataset(rng)
    datasets = {
        "gaussian": g,
        "gaussian_edges": edges_dataset(rng),
        "quantiles": quantile_dataset(g),
        "intervals": interval_dataset(g),
        "ensemble5": ensemble_dataset(rng, g, 5),
        "ensemble20": ensemble_dataset(rng, g, 20),
    }
    gaussian_peers("gaussian", datasets["gaussian"])
    gaussian_peers("gaussian_edges", datasets["gaussian_edges"])
    quantile_peers("quantiles", datasets["quantiles"])
    interval_peers("intervals", datasets["intervals"])
    ensemble_peers("ensemble5", datasets["ensemble5"])
    ensemble_peers("ensemble20", datasets["ensemble20"])
    mapie_examples(datasets)
    ut_fixture_peers(datasets)
    tail_peers(datasets)
    doc = {
        "about": (
            "Peer outputs for issue #25, written by tests/data/regression/make_fixtures.py "
            "(side environment; see PEERS.md). group null = every row of the dataset."
        ),
        "versions": {
            "python": sys.version.split()[0],
            **{k: version(v) for k, v in PEERS.items()},
            "numpy": np.__version__,
            "scipy": version("scipy"),
            "numba": version("numba"),
            "torch": version("torch"),
            "covmetrics": version("covmetrics"),
            "mpmath": mpmath.__version__,
        },
        "seed": SEED,
        "datasets": jsonable(datasets),
        "records": jsonable(RECORDS),
        "suite_values": suite_values(),
        "skce_normal": skce_cases(),
        "gaussian_table": gaussian_table(),
    }
    OUT.write_text(dump(doc))
    print(f"wrote {OUT} ({len(RECORDS)} records)")


if __name__ == "__main__":
    main()
