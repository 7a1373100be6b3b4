"""Recalibration (issue 13): fits against scikit-learn, betacal, MAPIE and exact numpy MLEs;
per-group fits, fallbacks, save/load, applying over a streamed scan, bad inputs, the CLI.

Peers (scikit-learn 1.9.1, betacal 1.1.0, MAPIE 1.6.0) are in the ``test`` extra. netcal's
``TemperatureScaling`` needs torch (not installed): temperature scaling is checked against
an exact maximum-likelihood fit with scipy; netcal stores the inverse temperature ``1 / T``
as its weight, ``params`` holds ``T``.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy.optimize import minimize_scalar
from sklearn.calibration import _sigmoid_calibration
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

import polars_calib as pc
from conftest import FrameContext, make_log, sign_changing_log
from polars_calib._core.problem import EPS
from polars_calib.cli import main

BINARY_METHODS = ("platt", "beta", "isotonic", "histogram")


def logit(p: np.ndarray) -> np.ndarray:
    c = np.clip(p, EPS, 1 - EPS)
    return np.log(c) - np.log(1 - c)


def beta_features(p: np.ndarray) -> np.ndarray:
    c = np.clip(p, EPS, 1 - EPS)
    return np.column_stack([np.log(c), -np.log(1 - c)])


def exact_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Unpenalised logistic regression (coefficients, then intercept), to convergence."""
    model = LogisticRegression(penalty=None, tol=1e-12, max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x, y, sample_weight=w)
    return np.array([*model.coef_[0], model.intercept_[0]])


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


@pytest.fixture(scope="module")
def binary() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Training and held-out rows, miscalibrated with a sign change, unrounded."""
    return sign_changing_log(1, 4_000, decimals=None), sign_changing_log(2, 1_000, decimals=None)


def applied(cal: pc.Calibrator, frame: pl.DataFrame, prob: str = "p") -> np.ndarray:
    return frame.select(cal.expr(prob)).to_series().to_numpy()


# ---------------------------------------------------------------- peers


@pytest.mark.parametrize("weighted", [False, True])
def test_platt_equals_unpenalised_logistic_regression(binary, weighted: bool) -> None:
    train, test = binary
    w = train["w"].to_numpy() if weighted else None
    cal = pc.fit_calibrator(train, "p", "y", method="platt", weight="w" if weighted else None)
    expected = exact_logistic(logit(train["p"].to_numpy())[:, None], train["y"].to_numpy(), w)
    got = np.array(cal.params.select("a", "b").row(0))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    want = sigmoid(expected[0] * logit(test["p"].to_numpy()) + expected[1])
    np.testing.assert_allclose(applied(cal, test), want, atol=1e-6, rtol=0)
    assert cal.params["iterations"][0] <= 10


def test_platt_smoothed_targets_equal_sklearn_sigmoid_calibration(binary) -> None:
    train, test = binary
    cal = pc.fit_calibrator(train, "p", "y", method="platt", smoothed=True, weight="w")
    x = logit(train["p"].to_numpy())
    slope, intercept = _sigmoid_calibration(x, train["y"].to_numpy(), train["w"].to_numpy())
    # scikit-learn's map is 1 / (1 + exp(A f + B)): a = -A, b = -B.
    np.testing.assert_allclose(cal.params.select("a", "b").row(0), [-slope, -intercept], rtol=1e-6)
    want = sigmoid(-slope * logit(test["p"].to_numpy()) - intercept)
    np.testing.assert_allclose(applied(cal, test), want, atol=1e-6, rtol=0)


@pytest.mark.parametrize("smoothed", [False, True])
def test_sigmoid_on_the_score_equals_sklearn_sigmoid_calibration(binary, smoothed: bool) -> None:
    train, test = binary
    cal = pc.fit_calibrator(train, "p", "y", method="sigmoid", smoothed=smoothed, weight="w")
    score, label, w = (train[name].to_numpy() for name in ("p", "y", "w"))
    if smoothed:
        # Platt's targets; scikit-learn's map is 1 / (1 + exp(A s + B)): a = -A, b = -B.
        slope, intercept = _sigmoid_calibration(score, label, w)
        expected = np.array([-slope, -intercept])
    else:
        expected = exact_logistic(score[:, None], label, w)
    np.testing.assert_allclose(cal.params.select("a", "b").row(0), expected, rtol=1e-6)
    want = sigmoid(expected[0] * test["p"].to_numpy() + expected[1])
    np.testing.assert_allclose(applied(cal, test), want, atol=1e-7, rtol=0)


def test_sigmoid_is_calibrated_classifier_cv_on_a_forest_where_platt_warns() -> None:
    # A random forest's scores: 6% are exactly 0 or 1 (every tree agrees).
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.frozen import FrozenEstimator

    X, y = make_classification(3_000, n_informative=5, flip_y=0.05, random_state=0)
    forest = RandomForestClassifier(n_estimators=25, random_state=0).fit(X[:1000], y[:1000])
    held, test = slice(1000, 2000), slice(2000, 3000)
    frames = {
        "held": pl.DataFrame({"p": forest.predict_proba(X[held])[:, 1], "y": y[held]}),
        "test": pl.DataFrame({"p": forest.predict_proba(X[test])[:, 1], "y": y[test]}),
    }
    assert frames["held"].select(pl.col("p").is_in([0.0, 1.0]).mean()).item() == 0.06
    peer = CalibratedClassifierCV(FrozenEstimator(forest), method="sigmoid").fit(X[held], y[held])
    cal = pc.fit_calibrator(frames["held"], "p", "y", method="sigmoid", smoothed=True)
    # scikit-learn stops L-BFGS at its gradient tolerance: 1e-9 apart.
    np.testing.assert_allclose(
        applied(cal, frames["test"]), peer.predict_proba(X[test])[:, 1], atol=1e-8, rtol=0
    )
    with pytest.warns(pc.ClippedScoresWarning, match=r"the one group: 60 of 1000 rows \(6.0%\)"):
        platt = pc.fit_calibrator(frames["held"], "p", "y", method="platt", smoothed=True)
    ece = {
        name: fitted.evaluate(frames["test"], "p", "y").metrics["ece"].to_list()
        for name, fitted in (("sigmoid", cal), ("platt", platt))
    }
    assert ece["sigmoid"][1] < ece["platt"][1] < ece["platt"][0], ece


@pytest.mark.parametrize("method", ["platt", "beta"])
def test_clipped_scores_warn_above_5_percent_of_a_group(method: str) -> None:
    # Group "a": 10 of 200 rows at 0 or 1 (5%, no warning); "b": 11 of 200 (5.5%).
    rng = np.random.default_rng(67)
    parts = []
    for name, clipped in (("a", 10), ("b", 11)):
        p = np.concatenate([rng.uniform(0.05, 0.95, 200 - clipped), ([0.0, 1.0] * 6)[:clipped]])
        label = (rng.random(200) < np.clip(p, 0.1, 0.9)).astype(np.int64)
        parts.append(pl.DataFrame({"m": name, "p": p, "y": label}))
    log = pl.concat(parts)
    with pytest.warns(pc.ClippedScoresWarning) as record:
        pc.fit_calibrator(log, "p", "y", method=method, by="m")
    assert len(record) == 1
    message = str(record[0].message)
    assert "m='b': 11 of 200 rows (5.5%)" in message and "m='a'" not in message, message
    assert record[0].filename == __file__  # the warning points at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pc.fit_calibrator(log.filter(pl.col("m") == "a"), "p", "y", method=method)
        pc.fit_calibrator(log, "p", "y", method="sigmoid", by="m")  # reads the score as it is


@pytest.mark.parametrize("weighted", [False, True])
def test_isotonic_equals_sklearn(weighted: bool) -> None:
    # Rounded probabilities: ties pooled; 0.0 and 1.0 present.
    train = sign_changing_log(3, 3_000, decimals=2)
    test = pl.DataFrame({"p": np.r_[np.linspace(-0.0, 1.0, 401), 0.005, 0.995]})
    w = train["w"].to_numpy() if weighted else None
    cal = pc.fit_calibrator(train, "p", "y", method="isotonic", weight="w" if weighted else None)
    reference = IsotonicRegression(out_of_bounds="clip").fit(
        train["p"].to_numpy(), train["y"].to_numpy(), sample_weight=w
    )
    np.testing.assert_allclose(cal.params["x"][0].to_numpy(), reference.X_thresholds_, rtol=1e-12)
    np.testing.assert_allclose(cal.params["y"][0].to_numpy(), reference.y_thresholds_, atol=1e-12)
    np.testing.assert_allclose(
        applied(cal, test), reference.predict(test["p"].to_numpy()), atol=1e-12, rtol=0
    )


def isotonic_log(means: list[float], weights: list[float]) -> pl.DataFrame:
    """A log whose mean outcome at the ``j``-th distinct probability is ``means[j]``.

    Two rows per probability: outcome 1 of weight ``w mean``, outcome 0 of weight
    ``w (1 - mean)`` (rows of zero weight left out, and of subnormal weight: refused).
    """
    n = len(means)
    x = (np.arange(n) + 1.0) / (n + 1.0)
    mean, w = np.array(means), np.array(weights)
    frame = pl.DataFrame(
        {
            "p": np.r_[x, x],
            "y": np.r_[np.ones(n), np.zeros(n)].astype(np.int64),
            "w": np.r_[w * mean, w * (1.0 - mean)],
        }
    )
    return frame.filter(pl.col("w") >= 2.2250738585072014e-308)


@st.composite
def isotonic_blocks(draw: st.DrawFn) -> tuple[list[float], list[float]]:
    """Mean outcomes and weights per distinct probability: random, a slow staircase
    (increasing, then one low value: each round of pooling would take one more step),
    or few distinct levels (equal means, equal fitted values)."""
    n = draw(st.integers(1, 300))
    shape = draw(st.sampled_from(["random", "staircase", "levels"]))
    if shape == "random":
        level = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(0, 1)
        means = draw(st.lists(level, min_size=n, max_size=n))
    elif shape == "staircase":
        means = [*np.linspace(0.2, 0.9, n - 1).tolist(), draw(st.floats(0, 0.3))]
    else:
        means = draw(st.lists(st.sampled_from([0.2, 0.5, 0.8]), min_size=n, max_size=n))
        means = sorted(means, reverse=draw(st.booleans()))
    weights = draw(st.lists(st.sampled_from([0.5, 1.0, 3.0]), min_size=n, max_size=n))
    return means, weights


@settings(max_examples=80, deadline=None)
@given(blocks=isotonic_blocks())
@example(blocks=([*np.arange(1.0, 2_001.0) / 2_001.0, 0.0], [1.0] * 2_001))
@example(blocks=([0.5] * 40 + [0.3] + [0.5] * 40, [1.0] * 81))
def test_isotonic_equals_sklearn_on_staircases_and_ties(
    blocks: tuple[list[float], list[float]],
) -> None:
    frame = isotonic_log(*blocks)
    cal = pc.fit_calibrator(frame, "p", "y", method="isotonic", weight="w", min_rows=1)
    reference = IsotonicRegression(out_of_bounds="clip").fit(
        frame["p"].to_numpy(), frame["y"].to_numpy(), sample_weight=frame["w"].to_numpy()
    )
    # At every probability and between each two (the maps are linear in between).
    x = np.unique(frame["p"].to_numpy())
    grid = pl.DataFrame({"p": np.r_[0.0, x, (x[1:] + x[:-1]) / 2.0, 1.0]})
    want = reference.predict(grid["p"].to_numpy())
    np.testing.assert_allclose(applied(cal, grid), want, rtol=0, atol=1e-12)


def test_beta_equals_exact_mle_and_betacal_to_1e2(binary) -> None:
    from betacal import BetaCalibration

    train, test = binary
    cal = pc.fit_calibrator(train, "p", "y", method="beta")
    p, y = train["p"].to_numpy(), train["y"].to_numpy()
    expected = exact_logistic(beta_features(p), y)
    np.testing.assert_allclose(cal.params.select("a", "b", "c").row(0), expected, rtol=1e-6)
    f = beta_features(test["p"].to_numpy())
    want = sigmoid(f @ expected[:2] + expected[2])
    np.testing.assert_allclose(applied(cal, test), want, atol=1e-6, rtol=0)
    # betacal stops at scikit-learn's default tolerance (and a C = 1e11 penalty).
    peer = BetaCalibration("abm").fit(p, y)
    a, b, _ = peer.calibrator_.map_
    np.testing.assert_allclose(cal.params.select("a", "b").row(0), [a, b], rtol=1e-2)
    np.testing.assert_allclose(applied(cal, test), peer.predict(test["p"].to_numpy()), atol=1e-2)


def test_beta_keeps_betacal_monotone_rule() -> None:
    """Where the free fit has a < 0, betacal refits with a = 0 only on -ln(1 - p)."""
    from betacal import BetaCalibration

    rng = np.random.default_rng(5)
    p = rng.random(3_000)
    # Outcome rate falls below 0.3 and rises above: the free fit has a < 0.
    rate = np.clip(0.9 - 2.5 * p + 2.8 * p**2, 0.02, 0.98)
    y = (rng.random(3_000) < rate).astype(int)
    free = exact_logistic(beta_features(p), y)
    assert free[0] < 0
    cal = pc.fit_calibrator(pl.DataFrame({"p": p, "y": y}), "p", "y", method="beta")
    expected = exact_logistic(beta_features(p)[:, 1:], y)
    got = cal.params.select("a", "b", "c").row(0)
    assert got[0] == 0.0
    np.testing.assert_allclose(got[1:], expected, rtol=1e-6)
    peer = BetaCalibration("abm").fit(p, y)
    assert peer.calibrator_.map_[0] == 0
    np.testing.assert_allclose(got[1], peer.calibrator_.map_[1], rtol=1e-2)


def test_histogram_values_are_bin_frequencies_and_empty_bins_keep_p() -> None:
    train = sign_changing_log(4, 500, decimals=2).filter(
        ~pl.col("p").is_between(0.41, 0.59)  # bins 4 (0.4, 0.5] and 5 (0.5, 0.6] nearly empty
    )
    cal = pc.fit_calibrator(train, "p", "y", method="histogram", n_bins=10, weight="w")
    # Every bin of the grid, the empty ones too (the statistics table holds only the others).
    table = pc.reliability_from_statistics(
        pc.bin_statistics(train, "p", "y", n_bins=10, weight="w")
    )
    want = table.select("observed")
    # Weighted sums: Polars' parallel summation may differ in the last bit between runs.
    got = cal.params["values"][0].to_list()
    assert [v is None for v in got] == [v is None for v in want.to_series().to_list()]
    np.testing.assert_allclose(np.array(got, dtype=float), want.to_series().to_numpy(), rtol=1e-12)
    assert cal.params["edges"][0].to_list() == pc.uniform_edges(10)
    test = pl.DataFrame({"p": [0.0, 0.1, 0.1000001, 0.45, 0.5, 0.55, 1.0]})
    values = want.to_series().to_list()
    index = test.select(pc.bin_index("p", n_bins=10)).to_series().to_list()
    expected = [
        values[k] if values[k] is not None else p for p, k in zip(test["p"].to_list(), index)
    ]
    np.testing.assert_allclose(applied(cal, test), expected, rtol=1e-12)
    assert any(v is None for v in values)  # an empty bin was exercised


def test_histogram_quantile_edges_applied_with_the_bin_rule() -> None:
    train = sign_changing_log(6, 2_000, decimals=2, groups=3)
    cal = pc.fit_calibrator(
        train, "p", "y", method="histogram", strategy="quantile", n_bins=5, by="g"
    )
    for g in range(3):
        part = train.filter(pl.col("g") == g)
        stats = pc.bin_statistics(part, "p", "y", n_bins=5, strategy="quantile")
        row = cal.params.filter(pl.col("g") == g)
        assert row["edges"][0].to_list() == [stats["lower"][0], *stats["upper"].to_list()]
        # The fitted rows themselves: each row's value is its bin's frequency.
        index = part.select(pc.bin_index("p", n_bins=5, strategy="quantile")).to_series()
        values = row["values"][0].to_list()
        assert applied(cal, part).tolist() == [values[k] for k in index.to_list()]


def temperature_mle(probs: np.ndarray, label: np.ndarray) -> float:
    logs = np.log(np.clip(probs, EPS, 1.0))

    def nll(beta: float) -> float:
        s = beta * logs
        top = s.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(s - top).sum(axis=1))
        return float(np.sum(lse - s[np.arange(len(label)), label]))

    result = minimize_scalar(nll, bounds=(1e-3, 100), method="bounded", options={"xatol": 1e-12})
    return 1.0 / float(result.x)


def test_temperature_equals_exact_mle() -> None:
    df = make_log(7, 3_000, classes=4, decimals=None)
    cal = pc.fit_calibrator(df, "probs", "cls", method="temperature")
    probs, label = np.stack(df["probs"].to_numpy()), df["cls"].to_numpy()
    temperature = temperature_mle(probs, label)
    np.testing.assert_allclose(cal.params["temperature"][0], temperature, rtol=1e-6)
    out = np.stack(df.select(cal.expr("probs")).to_series().to_list())
    s = np.log(probs) / temperature
    want = np.exp(s - s.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, want, atol=1e-6)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


def breakpoints(x: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    """An isotonic fit's thresholds without the interior points of a constant run, its
    values equal to 1e-12: pooling in another order rounds a pooled mean otherwise
    (0.5 or 0.49999999999999994), which scikit-learn then keeps as two runs."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.ones(len(y), dtype=bool)
    if len(y) > 2:
        flat = np.abs(np.diff(y)) <= 1e-12
        keep[1:-1] = ~(flat[:-1] & flat[1:])
    return x[keep], y[keep]


def test_top_label_isotonic_equals_mapie() -> None:
    from mapie.calibration import TopLabelCalibrator
    from sklearn.base import BaseEstimator, ClassifierMixin

    train = make_log(8, 3_000, classes=3, decimals=None)
    test = make_log(9, 1_000, classes=3, decimals=None)

    class Fixed(ClassifierMixin, BaseEstimator):
        """A prefit classifier whose probabilities are the rows' vectors (row index in X)."""

        def __init__(self, probs: np.ndarray | None = None) -> None:
            self.probs = probs

        def fit(self, X: np.ndarray, y: np.ndarray) -> Fixed:
            self.classes_ = np.arange(3)
            return self

        def predict_proba(self, X: np.ndarray) -> np.ndarray:
            assert self.probs is not None
            return self.probs[X[:, 0].astype(int)]

        def predict(self, X: np.ndarray) -> np.ndarray:
            return self.predict_proba(X).argmax(axis=1)

    both = np.concatenate([np.stack(train["probs"].to_numpy()), np.stack(test["probs"].to_numpy())])
    X = np.arange(len(both))[:, None]
    y = train["cls"].to_numpy()
    estimator = Fixed(both).fit(X, np.r_[y, test["cls"].to_numpy()])
    peer = TopLabelCalibrator(estimator=estimator, calibrator="isotonic", cv="prefit")
    peer.fit(X[: train.height], y)
    want = np.nanmax(peer.predict_proba(X[train.height :]), axis=1)
    cal = pc.fit_calibrator(train, "probs", "cls", method="isotonic", reduction="top_label")
    np.testing.assert_allclose(applied(cal, test, "probs"), want, atol=1e-12, rtol=0)
    for row in cal.params.iter_rows(named=True):
        reference = peer.calibrators[row["class"]]
        got, expected = (
            breakpoints(row["x"], row["y"]),
            breakpoints(reference.X_thresholds_, reference.y_thresholds_),
        )
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], expected[1], atol=1e-12)


def test_classwise_is_one_vs_rest_renormalised() -> None:
    df = make_log(10, 2_000, classes=3, decimals=None)
    cal = pc.fit_calibrator(df, "probs", "cls", method="platt", reduction="classwise")
    probs, label = np.stack(df["probs"].to_numpy()), df["cls"].to_numpy()
    columns = []
    for j in range(3):
        a, b = exact_logistic(logit(probs[:, j])[:, None], (label == j).astype(int))
        row = cal.params.filter(pl.col("class") == j)
        np.testing.assert_allclose(row.select("a", "b").row(0), [a, b], rtol=1e-6)
        columns.append(sigmoid(a * logit(probs[:, j]) + b))
    want = np.column_stack(columns)
    want /= want.sum(axis=1, keepdims=True)
    out = np.stack(df.select(cal.expr("probs")).to_series().to_list())
    np.testing.assert_allclose(out, want, atol=1e-6)


# ---------------------------------------------------------------- behaviour


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_each_method_lowers_held_out_ece_of_a_sign_changing_model(method: str) -> None:
    train = sign_changing_log(11, 6_000, decimals=None, groups=2)
    test = sign_changing_log(12, 6_000, decimals=None, groups=2)
    cal = pc.fit_calibrator(train, "p", "y", method=method, by="g")
    metrics = cal.evaluate(test, "p", "y", n_bins=10).metrics
    before = metrics.filter(pl.col("stage") == "before")["ece"]
    after = metrics.filter(pl.col("stage") == "after")["ece"]
    assert (after < before).all(), metrics
    if method in ("isotonic", "histogram"):  # the parametric maps bend less than the truth
        assert (after < 0.4 * before).all(), metrics


@pytest.mark.parametrize(
    ("method", "reduction"),
    [
        ("temperature", None),
        ("isotonic", "top_label"),
        ("platt", "classwise"),
        ("histogram", "confidence"),
    ],
)
def test_vector_methods_lower_held_out_confidence_ece(method: str, reduction: str | None) -> None:
    train = make_log(13, 6_000, classes=3, decimals=None)
    test = make_log(14, 6_000, classes=3, decimals=None)
    cal = pc.fit_calibrator(train, "probs", "cls", method=method, reduction=reduction)
    metrics = cal.evaluate(test, "probs", "cls", n_bins=10).metrics
    before, after = metrics["confidence_ece"].to_list()
    assert after < before, metrics


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_per_group_fit_equals_each_group_alone(method: str) -> None:
    df = make_log(15, 3_000, groups=3, decimals=2).with_columns(
        seg=pl.col("g").cast(pl.String), day=pl.col("y").cast(pl.Int8) * 0 + (pl.col("g") % 2)
    )
    cal = pc.fit_calibrator(df, "p", "y", method=method, by=["seg", "day"], weight="w")
    assert cal.params.height == 3
    names = {
        "platt": ["a", "b"],
        "beta": ["a", "b", "c"],
        "isotonic": ["x", "y"],
        "histogram": ["edges", "values"],
    }[method]
    for row in cal.params.iter_rows(named=True):
        part = df.filter(pl.col("seg") == row["seg"])
        alone = pc.fit_calibrator(part, "p", "y", method=method, weight="w")
        for name in names:
            got, want = row[name], alone.params[name][0]
            if isinstance(got, float):
                assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
            else:
                assert got == pytest.approx(want.to_list(), rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(applied(cal, part), applied(alone, part), atol=1e-9)


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_lazy_and_scan_fits_equal_the_eager_fit(method: str, frame_context: FrameContext) -> None:
    df = make_log(16, 1_500, groups=2, nulls=0.05)
    eager = pc.fit_calibrator(df, "p", "y", method=method, by="g", weight="w")
    data = frame_context.frame(df)
    cal = data.calib.fit_calibrator("p", "y", method=method, by="g", weight="w")
    assert_frame_equal(cal.params, eager.params, rel_tol=1e-9)
    # Null rows are ignored; their groups stay.
    assert cal.params["count"].sum() < df.height


def test_a_lazy_fit_reads_once_per_step_and_applying_reads_nothing() -> None:
    from test_lazy import CountingSource

    source = CountingSource(sign_changing_log(17, 3_000, groups=3).select("g", "p", "y"))
    lf = source.frame()
    cal = lf.calib.fit_calibrator("p", "y", method="platt", by="g")
    # One read to count the rows, then one per Newton step (the slowest group's; the
    # first step also checks every group). Small data: no subsample.
    assert source.reads == 1 + cal.params["iterations"].max()  # type: ignore[operator]
    before = source.reads
    plan = lf.with_columns(q=cal.expr("p"))
    assert isinstance(plan, pl.LazyFrame) and source.reads == before
    source.reads = 0
    pc.fit_calibrator(lf, "p", "y", method="isotonic", by="g")
    assert source.reads == 1  # sums per distinct p: one aggregation
    source.reads = 0
    pc.fit_calibrator(lf, "p", "y", method="histogram", by="g")
    assert source.reads == 1  # the statistics table


def steep_log(seed: int, slopes: list[float], n: int) -> pl.DataFrame:
    """Per group ``g = i``, outcomes from ``sigmoid(slopes[i] logit(p) + 0.3)``."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, len(slopes), n)
    p = rng.random(n)
    rate = sigmoid(np.asarray(slopes)[g] * logit(p) + 0.3)
    return pl.DataFrame({"g": g, "p": p, "y": (rng.random(n) < rate).astype(np.int64)})


# `sample_rows=1_000`: data of 4,000 rows or more start from a subsample's fit (the
# default, 200,000, starts at 800,000 rows).


@pytest.mark.parametrize("weighted", [False, True])
def test_a_subsample_start_fits_groups_of_very_different_slopes_as_sklearn(weighted: bool) -> None:
    slopes = [0.05, 0.4, 1.0, 3.0, 8.0, -1.5]
    df = steep_log(31, slopes, 24_000).with_columns(
        w=pl.int_range(pl.len()).mod(5).cast(pl.Float64) * 0.5 if weighted else pl.lit(1.0)
    )
    options = {"method": "platt", "by": "g", "weight": "w" if weighted else None}
    cal = pc.fit_calibrator(df, "p", "y", **options, sample_rows=1_000)
    for (g,), part in df.partition_by("g", as_dict=True).items():
        w = part["w"].to_numpy() if weighted else None
        expected = exact_logistic(logit(part["p"].to_numpy())[:, None], part["y"].to_numpy(), w)
        got = cal.params.filter(pl.col("g") == g).select("a", "b").row(0)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    # Started near the maximum (the steepest group from ~170 rows), a few steps each;
    # from the identity, more.
    assert cal.params["iterations"].max() <= 4  # type: ignore[operator]
    plain = pc.fit_calibrator(df, "p", "y", **options, sample_rows=None)
    assert plain.params["iterations"].sum() > cal.params["iterations"].sum() + 6


def newton_mle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Platt's maximum-likelihood (a, b) by plain Newton, to machine precision."""
    theta = np.array([1.0, 0.0])
    for _ in range(100):
        mu = sigmoid(theta[0] * x + theta[1])
        v = mu * (1 - mu)
        grad = np.array([np.sum((mu - y) * x), np.sum(mu - y)])
        hess = np.array([[np.sum(v * x * x), np.sum(v * x)], [np.sum(v * x), np.sum(v)]])
        theta = theta - np.linalg.solve(hess, grad)
    return theta


@pytest.mark.parametrize("sample_rows", [None, 1_000])
def test_the_stop_without_a_confirming_pass_is_within_tol_of_the_maximum(
    sample_rows: int | None,
) -> None:
    df = steep_log(32, [0.3, 1.0, 2.5, 6.0], 20_000)
    for tol in (1e-8, 1e-4):
        cal = pc.fit_calibrator(
            df, "p", "y", method="platt", by="g", tol=tol, sample_rows=sample_rows
        )
        for (g,), part in df.partition_by("g", as_dict=True).items():
            exact = newton_mle(logit(part["p"].to_numpy()), part["y"].to_numpy().astype(float))
            got = np.array(cal.params.filter(pl.col("g") == g).select("a", "b").row(0))
            assert np.max(np.abs(got - exact)) <= tol * (1 + np.max(np.abs(exact)))


def test_a_group_needing_many_steps_converges_or_raises_as_before() -> None:
    # Group 1 is nearly separated (slope 40): far from the identity, many halvings.
    df = steep_log(33, [1.0, 40.0], 8_000)
    cal = pc.fit_calibrator(df, "p", "y", method="platt", by="g", sample_rows=1_000)
    part = df.filter(pl.col("g") == 1)
    expected = exact_logistic(logit(part["p"].to_numpy())[:, None], part["y"].to_numpy())
    np.testing.assert_allclose(
        cal.params.filter(pl.col("g") == 1).select("a", "b").row(0), expected, rtol=1e-6
    )
    with pytest.raises(pc.CalibrationDataError, match=r"g=1: did not converge in 1 Newton steps"):
        pc.fit_calibrator(df, "p", "y", method="platt", by="g", max_iter=1, sample_rows=1_000)


@pytest.mark.parametrize("method", ["beta", "temperature"])
def test_beta_and_temperature_from_a_subsample_start_equal_exact_fits(method: str) -> None:
    if method == "beta":
        df = sign_changing_log(34, 12_000, decimals=None)
        cal = pc.fit_calibrator(df, "p", "y", method="beta", sample_rows=1_000)
        expected = exact_logistic(beta_features(df["p"].to_numpy()), df["y"].to_numpy())
        np.testing.assert_allclose(cal.params.select("a", "b", "c").row(0), expected, rtol=1e-6)
        plain = pc.fit_calibrator(df, "p", "y", method="beta", sample_rows=None)
    else:
        df = make_log(35, 6_000, classes=3, decimals=None)
        cal = pc.fit_calibrator(df, "probs", "cls", method="temperature", sample_rows=1_000)
        probs, label = np.stack(df["probs"].to_numpy()), df["cls"].to_numpy()
        np.testing.assert_allclose(
            cal.params["temperature"][0], temperature_mle(probs, label), rtol=1e-6
        )
        plain = pc.fit_calibrator(df, "probs", "cls", method="temperature", sample_rows=None)
    # Started near the maximum: fewer full-data steps than from the identity.
    assert cal.params["iterations"][0] < plain.params["iterations"][0]


def test_the_subsample_is_spread_over_rows_of_a_period() -> None:
    # Rows cycling through 7 groups, cut into blocks of 7 rows (70,000 / 10,000): a
    # fixed offset per block would sample one group only.
    rng = np.random.default_rng(42)
    n = 70_000
    g = np.arange(n) % 7
    p = rng.random(n)
    y = (rng.random(n) < sigmoid((0.3 + 0.5 * g) * logit(p) + 0.2)).astype(np.int64)
    df = pl.DataFrame({"g": g, "p": p, "y": y})
    exact = {
        key: newton_mle(logit(part["p"].to_numpy()), part["y"].to_numpy().astype(float))
        for (key,), part in df.partition_by("g", as_dict=True).items()
    }

    def errors(sample_rows: int | None) -> list[float]:
        # tol=0.5: one full-data step from the start; its error shows how good the start was.
        cal = pc.fit_calibrator(
            df, "p", "y", method="platt", by="g", tol=0.5, sample_rows=sample_rows
        )
        return [
            float(np.max(np.abs(np.array(row[1:]) - exact[row[0]])))
            for row in cal.params.select("g", "a", "b").rows()
        ]

    assert max(errors(10_000)) < 1e-2  # every group started from about 1,400 rows
    assert max(errors(None)) > 0.1  # from the identity, one step is far


def test_a_dataframe_and_a_lazyframe_fit_from_the_same_subsample() -> None:
    df = steep_log(37, [0.5, 2.0], 5_003)

    def one_step(data: pl.DataFrame | pl.LazyFrame, sample_rows: int) -> np.ndarray:
        # tol=0.5: one full-data step from the subsample's start, so the answer is the
        # start's (a different subsample moves it by about 1e-4).
        cal = pc.fit_calibrator(
            data, "p", "y", method="platt", by="g", tol=0.5, sample_rows=sample_rows
        )
        assert cal.params["iterations"].to_list() == [1, 1]
        return cal.params.select("a", "b").to_numpy()

    eager = one_step(df, 1_000)
    np.testing.assert_allclose(one_step(df.lazy(), 1_000), eager, rtol=1e-12)
    other = one_step(df, 1_100)  # another subsample
    assert np.max(np.abs(other - eager)) > 1e-6


def test_a_lazy_fit_of_large_data_reads_twice_then_once_per_step() -> None:
    from test_lazy import CountingSource

    source = CountingSource(steep_log(36, [0.5, 2.0], 10_000))
    frame = source.frame()
    cal = frame.calib.fit_calibrator("p", "y", method="platt", by="g", sample_rows=1_000)
    # Counting the rows, selecting the subsample, then one read per Newton step.
    assert source.reads == 2 + cal.params["iterations"].max()  # type: ignore[operator]
    source.reads = 0
    plain = frame.calib.fit_calibrator("p", "y", method="platt", by="g", sample_rows=None)
    assert source.reads == 1 + plain.params["iterations"].max()  # type: ignore[operator]


def test_apply_streams_over_a_parquet_scan_and_a_serialized_plan(tmp_path: Path) -> None:
    train = sign_changing_log(18, 3_000, groups=4)
    cal = pc.fit_calibrator(train, "p", "y", method="isotonic", by="g")
    source, out = tmp_path / "live.parquet", tmp_path / "out.parquet"
    live = sign_changing_log(19, 20_000, groups=4)
    live.write_parquet(source)
    query = pl.scan_parquet(source).with_columns(p_cal=cal.expr("p"))
    query.sink_parquet(out, engine="streaming")
    expected = live.with_columns(p_cal=cal.expr("p"))
    assert_frame_equal(pl.read_parquet(out), expected)
    restored = pl.LazyFrame.deserialize(query.serialize())
    assert_frame_equal(restored.collect(engine="streaming"), expected)
    # Platt too (a gather per parameter), with the streaming engine.
    platt = pc.fit_calibrator(train, "p", "y", method="platt", by="g")
    streamed = pl.scan_parquet(source).with_columns(q=platt.expr("p")).collect(engine="streaming")
    assert_frame_equal(streamed, live.with_columns(q=platt.expr("p")))


def test_public_api_uses_no_unstable_polars_feature(tmp_path: Path) -> None:
    df = make_log(20, 800, classes=3, groups=2, decimals=None)
    with pl.Config(warn_unstable=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        for method in BINARY_METHODS:
            cal = pc.fit_calibrator(df, "p", "y", method=method, by="g", fallback="global")
            df.with_columns(cal.expr("p"))
            cal.evaluate(df, "p", "y")
        for method, reduction in (
            ("temperature", None),
            ("isotonic", "top_label"),
            ("platt", "classwise"),
        ):
            cal = pc.fit_calibrator(df, "probs", "cls", method=method, by="g", reduction=reduction)
            df.with_columns(cal.expr("probs"))
        pc.load_calibrator(cal.save(tmp_path / "c.json"))


# ---------------------------------------------------------------- unseen groups, fallbacks


@pytest.mark.parametrize("method", BINARY_METHODS)
def test_unseen_groups_get_null(method: str) -> None:
    train = sign_changing_log(21, 3_000, groups=2)
    live = pl.DataFrame({"g": [0, 1, 7, None], "p": [0.3, 0.3, 0.3, 0.3]})
    plain = pc.fit_calibrator(train, "p", "y", method=method, by="g")
    out = live.select(plain.expr("p")).to_series().to_list()
    assert out[2] is None and out[3] is None and None not in out[:2]


def test_empty_data_has_one_group_or_none() -> None:
    empty = sign_changing_log(39, 10).clear()
    for method in BINARY_METHODS:
        with pytest.raises(pc.CalibrationDataError, match="the one group: 0 rows"):
            pc.fit_calibrator(empty, "p", "y", method=method)
        cal = pc.fit_calibrator(empty, "p", "y", method=method, by="g")
        assert cal.params.height == 0
        assert pl.DataFrame({"g": [1], "p": [0.5]}).select(cal.expr("p")).item() is None


def test_unseen_groups_get_identity_or_global() -> None:
    train = sign_changing_log(21, 3_000, groups=2)
    live = pl.DataFrame({"g": [0, 1, 7, None], "p": [0.3, 0.3, 0.3, 0.3]})
    identity = pc.fit_calibrator(train, "p", "y", method="platt", by="g", fallback="identity")
    # The identity map a = 1, b = 0, evaluated as sigmoid(logit p): p to within an ulp.
    got_identity = live.select(identity.expr("p")).to_series().to_list()[2:]
    assert got_identity == pytest.approx([0.3, 0.3], rel=1e-15, abs=0)
    pooled = pc.fit_calibrator(train, "p", "y", method="platt", by="g", fallback="global")
    whole = pc.fit_calibrator(train, "p", "y", method="platt")
    assert pooled.global_params is not None
    assert_frame_equal(pooled.global_params, whole.params)
    global_value = live.select(whole.expr("p")).to_series()[0]
    got = live.select(pooled.expr("p")).to_series().to_list()[2:]
    assert got == pytest.approx([global_value] * 2, rel=1e-12)


@pytest.mark.parametrize("method", ["platt", "beta", "isotonic", "histogram"])
def test_fallback_replaces_unfittable_groups_and_records_why(method: str) -> None:
    good = sign_changing_log(22, 2_000)
    bad = pl.DataFrame({"g": [9] * 4, "p": [0.2, 0.4, 0.6, 0.8], "y": [0, 0, 1, 1]})
    df = pl.concat([good.select("g", "p", "y"), bad])
    with pytest.raises(pc.CalibrationDataError, match=r"g=9: 4 rows, fewer than min_rows=10"):
        pc.fit_calibrator(df, "p", "y", method=method, by="g")
    cal = pc.fit_calibrator(df, "p", "y", method=method, by="g", fallback="identity")
    row = cal.params.filter(pl.col("g") == 9).row(0, named=True)
    assert row["fallback"] == "identity" and "fewer than min_rows" in row["reason"]
    probe = pl.DataFrame({"g": [9, 9], "p": [0.25, 0.7]})
    np.testing.assert_allclose(applied(cal, probe), [0.25, 0.7], atol=1e-12)
    glob = pc.fit_calibrator(df, "p", "y", method=method, by="g", fallback="global")
    whole = pc.fit_calibrator(df, "p", "y", method=method)
    np.testing.assert_allclose(applied(glob, probe), applied(whole, probe), atol=1e-12)
    assert glob.params.filter(pl.col("g") == 9)["fallback"].item() == "global"


def test_top_label_fallback_is_per_class() -> None:
    df = make_log(23, 3_000, classes=3, groups=2)
    cal = pc.fit_calibrator(df, "probs", "cls", method="platt", by="g", fallback="global")
    assert cal.global_params is not None and cal.global_params["class"].to_list() == [0, 1, 2]
    live = pl.DataFrame(
        {"g": [5, 5], "probs": [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]},
        schema={"g": pl.Int64, "probs": pl.Array(pl.Float64, 3)},
    )
    whole = pc.fit_calibrator(df, "probs", "cls", method="platt")
    np.testing.assert_allclose(applied(cal, live, "probs"), applied(whole, live, "probs"))


# ---------------------------------------------------------------- save / load


@pytest.mark.parametrize(
    ("method", "reduction", "prob"),
    [
        ("platt", None, "p"),
        ("sigmoid", None, "p"),
        ("beta", None, "p"),
        ("isotonic", None, "p"),
        ("histogram", None, "p"),
        ("temperature", None, "probs"),
        ("isotonic", "top_label", "probs"),
        ("platt", "classwise", "probs"),
    ],
)
def test_save_load_round_trip_is_exact(
    tmp_path: Path, method: str, reduction: str | None, prob: str
) -> None:
    df = make_log(24, 2_000, classes=3, groups=2, decimals=None).with_columns(
        day=pl.lit(datetime(2024, 3, 1)) + pl.duration(days=pl.col("g")),
    )
    label = "y" if prob == "p" else "cls"
    options = {"strategy": "quantile"} if method == "histogram" else {}
    cal = pc.fit_calibrator(
        df,
        prob,
        label,
        method=method,
        reduction=reduction,
        by=["day", "g"],
        fallback="global",
        **options,
    )
    path = cal.save(tmp_path / "cal.json")
    content = json.loads(path.read_text())
    assert content["format"] == "polars_calib.calibrator" and content["format_version"] == 1
    assert content["package_version"] == pc.__version__
    assert content["schema"]["day"] == "Datetime(time_unit='us', time_zone=None)"
    loaded = pc.load_calibrator(path)
    assert_frame_equal(loaded.params, cal.params)  # exact: no tolerance
    assert loaded.global_params is not None and cal.global_params is not None
    assert_frame_equal(loaded.global_params, cal.global_params)
    assert (loaded.method, loaded.reduction, loaded.by) == (cal.method, cal.reduction, cal.by)
    assert_frame_equal(df.select(loaded.expr(prob)), df.select(cal.expr(prob)))


def test_load_refuses_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(pc.CalibrationDataError, match="not a calibrator file"):
        pc.load_calibrator(bad)
    cal = pc.fit_calibrator(sign_changing_log(25, 500), "p", "y")
    content = cal.to_dict()
    content["format_version"] = 99
    bad.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"format_version: is 99; .* up to format"):
        pc.load_calibrator(bad)
    content = cal.to_dict()
    content["reduction"] = "pairwise"
    bad.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"reduction: must be one of .*'pairwise'"):
        pc.load_calibrator(bad)
    content = cal.to_dict()
    content["params"]["columns"].pop("b")
    bad.write_text(json.dumps(content))
    with pytest.raises(pc.CalibrationDataError, match=r"params.columns.b: is missing"):
        pc.load_calibrator(bad)


@functools.cache
def saved_calibrators() -> dict[str, dict[str, Any]]:
    """Small fitted calibrators as saved (to_dict), one per kind of parameter table."""
    binary = sign_changing_log(60, 300, groups=2)
    vectors = make_log(61, 300, classes=3, groups=2, decimals=None)
    fits = {
        "isotonic": pc.fit_calibrator(binary, "p", "y", method="isotonic", by="g"),
        "platt": pc.fit_calibrator(binary, "p", "y", method="platt", by="g"),
        "histogram": pc.fit_calibrator(
            binary,
            "p",
            "y",
            method="histogram",
            by="g",
            n_bins=4,
            strategy="quantile",
            fallback="global",
        ),
        "classwise": pc.fit_calibrator(
            vectors, "probs", "cls", method="beta", reduction="classwise", by="g"
        ),
        "temperature": pc.fit_calibrator(vectors, "probs", "cls", method="temperature"),
    }
    return {name: cal.to_dict() for name, cal in fits.items()}


def edited(kind: str, edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    """Return a copy of a saved calibrator of `kind` changed in place by `edit`."""
    content = copy.deepcopy(saved_calibrators()[kind])
    edit(content)
    return content


def set_row(frame: str, row: int, column: str, value: object) -> Callable[[dict[str, Any]], None]:
    """Return an edit setting one value of a saved parameter table."""

    def edit(content: dict[str, Any]) -> None:
        content[frame]["rows"][row][column] = value

    return edit


@pytest.mark.parametrize(
    ("kind", "edit", "match"),
    [
        # The cases: "probabilities" -3 and 7, NaN, unsorted, any version, no keys.
        (
            "isotonic",
            set_row("params", 0, "y", [-3.0, 7.0]),
            r"params.rows\[0\].y\[0\]: must be in",
        ),
        (
            "isotonic",
            set_row("params", 1, "x", [0.9, 0.1]),
            r"params.rows\[1\].x: must be non-decr",
        ),
        ("platt", set_row("params", 1, "a", float("nan")), r"params.rows\[1\].a: must be a finite"),
        ("platt", set_row("params", 0, "b", None), r"params.rows\[0\].b: must be a number"),
        ("platt", lambda c: c.update(format_version=0), r"format_version: must be an integer in"),
        ("platt", lambda c: c.update(format_version="1"), r"format_version: must be an integer"),
        ("platt", lambda c: c.update(by=[]), r"params.columns.g: is neither a key"),
        (
            "platt",
            lambda c: (c.update(by=[]), c["params"]["columns"].pop("g")),
            r"params.rows\[0\]: must hold the declared columns",
        ),
        (
            "platt",
            lambda c: c["params"]["rows"].append(dict(c["params"]["rows"][0])),
            r"params.rows\[2\]: repeats the keys of another row \(g\)",
        ),
        # One group's emptied arrays shifted another group's map.
        (
            "isotonic",
            lambda c: c["params"]["rows"][0].update(x=[], y=[]),
            r"params.rows\[0\].x: must hold at least 1",
        ),
        ("isotonic", set_row("params", 0, "y", [0.5]), r"params.rows\[0\].y: must hold as many"),
        (
            "histogram",
            set_row("params", 1, "values", [0.5]),
            r"params.rows\[1\].values: must hold 4",
        ),
        ("histogram", set_row("global_params", 0, "edges", [0.0, 0.5, 0.2, 0.7, 1.0]), "non-decr"),
        ("histogram", lambda c: c.update(global_params=None), r"global_params: must be given"),
        ("histogram", lambda c: c["options"].pop("n_bins"), r"options.n_bins: is missing"),
        ("temperature", set_row("params", 0, "temperature", 0.0), r"temperature: must be in \(0"),
        ("temperature", lambda c: c.update(reduction="top_label"), r"reduction: must be null"),
        ("classwise", set_row("params", 0, "class", 3), r"params.rows\[0\].class: must be an int"),
        ("classwise", lambda c: c["options"].update(n_classes=5), r"options.n_classes: must be"),
        ("platt", lambda c: c["options"].update(fallback="nearest"), r"options.fallback: must be"),
        (
            "platt",
            lambda c: (c.update(method="sigmoid"), c["options"].update(fallback="identity")),
            r"options.fallback: cannot be 'identity' for method 'sigmoid'",
        ),
        ("platt", lambda c: c["options"].update(colour=1), r"options.colour: is not a field"),
        (
            "platt",
            lambda c: c["params"]["columns"].update(g="Int64(x"),
            r"params.columns.g: is not",
        ),
        ("platt", lambda c: c["params"]["columns"].update(g="Enum(categories=1)"), "columns.g"),
        ("platt", set_row("params", 1, "g", "one"), r"params.rows\[1\].g: cannot be read as Int64"),
        ("platt", lambda c: c["params"].update(rows={}), r"params.rows: must be a list"),
        ("platt", lambda c: c.pop("method"), r"method: is missing"),
        ("platt", lambda c: c.update(package_version=3), r"package_version: must be a string"),
    ],
)
def test_load_checks_every_field_and_names_it(
    tmp_path: Path, kind: str, edit: Callable[[dict[str, Any]], object], match: str
) -> None:
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(saved_calibrators()[kind]))
    pc.load_calibrator(path)  # the unedited file loads
    path.write_text(json.dumps(edited(kind, edit)))
    with pytest.raises(pc.CalibrationDataError, match=match):
        pc.load_calibrator(path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (b'{"format": "polars_calib.calibrator", "by": [\xff]}', "not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"format": "polars_calib.calibrator", "form', "not a calibrator file"),
        (b"1" * 5_000, "not a calibrator file"),
        (b"[1, 2]", "format: must be 'polars_calib.calibrator'"),
    ],
)
def test_load_refuses_bytes_that_are_not_a_calibrator(
    tmp_path: Path, text: bytes, match: str
) -> None:
    path = tmp_path / "cal.json"
    path.write_bytes(text)
    with pytest.raises(pc.CalibrationDataError, match=match):
        pc.load_calibrator(path)


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Return the path of every value nested in a JSON value (dict keys, list positions)."""
    found: list[tuple[object, ...]] = [prefix]
    items: list[tuple[object, object]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for key, entry in items:
        found += _paths(entry, (*prefix, key))
    return found


ODD_VALUES = [None, True, -3, 7, 0, 0.5, -1e-300, 1e308, 2**70, float("nan"), "", "x", [], {}, [[]]]


@st.composite
def damaged_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """Draw a saved calibrator with one field dropped, replaced or reordered, or its bytes cut."""
    kind = draw(st.sampled_from(sorted(saved_calibrators())))
    content = copy.deepcopy(saved_calibrators()[kind])
    path = draw(st.sampled_from(_paths(content)[1:]))
    *parents, last = path
    holder: Any = content
    for key in parents:
        holder = holder[key]
    action = draw(st.sampled_from(["drop", "replace", "reverse", "truncate", "bytes"]))
    if action == "drop":
        del holder[last]
    elif action == "replace":
        holder[last] = draw(st.sampled_from(ODD_VALUES))
    elif isinstance(holder[last], list):
        value = holder[last]
        holder[last] = value[::-1] if action == "reverse" else value[: len(value) // 2]
    text = json.dumps(content).encode()
    if action == "bytes":
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from([b"", b"\xff\xfe", b"[" * 50_000, b"}"]))
    return kind, text


@given(damaged=damaged_files())
@settings(max_examples=30, deadline=None)
@example(damaged=("platt", b"\x00"))
def test_a_damaged_file_loads_and_round_trips_or_raises_calibration_data_error(
    damaged: tuple[str, bytes],
) -> None:
    kind, text = damaged
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "cal.json"
        path.write_bytes(text)
        try:
            cal = pc.load_calibrator(path)
        except pc.CalibrationDataError:
            return
        again = pc.load_calibrator(cal.save(Path(directory) / "again.json"))
    assert_frame_equal(again.params, cal.params)
    assert again.to_dict() == cal.to_dict()
    frame = (
        sign_changing_log(62, 20, groups=2)
        if kind in ("isotonic", "platt", "histogram")
        else (make_log(63, 20, classes=3, groups=2))
    )
    prob = "p" if kind in ("isotonic", "platt", "histogram") else "probs"
    frame.select(cal.expr(prob))  # applies: no error


def test_cli_apply_prints_one_line_for_a_damaged_calibrator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In process (main catches only the package's errors: any other would raise here).
    sign_changing_log(64, 50, groups=2).write_parquet(tmp_path / "live.parquet")
    damaged = {
        "values.json": (
            json.dumps(edited("isotonic", set_row("params", 0, "y", [-3.0, 7.0]))),
            "params.rows[0].y[0]: must be in [0.0, 1.0], got -3.0",
        ),
        "nested.json": ("[" * 100_000, "JSON nested too deeply"),
        "binary.json": ("\udcff", "not UTF-8 text"),
        "version.json": (json.dumps(edited("platt", lambda c: c.pop("format_version"))), "format"),
        "keys.json": (json.dumps(edited("platt", lambda c: c.update(by=[]))), "params.columns.g"),
    }
    for name, (text, message) in damaged.items():
        (tmp_path / name).write_bytes(text.encode("utf-8", "surrogateescape"))
        arguments = ["apply", tmp_path / "live.parquet", "--calibrator", tmp_path / name]
        arguments += ["--prob", "p", "--out", tmp_path / "out.parquet"]
        assert main([str(a) for a in arguments]) == 1
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("polars-calib: error: "), lines
        assert message in lines[0], lines
        assert captured.out == "" and not (tmp_path / "out.parquet").exists()


# ---------------------------------------------------------------- bad inputs


def test_refused_rows_name_column_problem_and_count() -> None:
    df = pl.DataFrame({"p": [0.2, 1.5, 0.4, 0.9] * 5, "y": [0, 1, 1, 2] * 5})
    for method in BINARY_METHODS:
        with pytest.raises(pc.CalibrationDataError) as error:
            pc.fit_calibrator(df, "p", "y", method=method)
        message = str(error.value)
        assert "column 'p': probability outside [0, 1] in 5 of 20 rows" in message, message
        assert "column 'y': label not 0 or 1 in 5 of 20 rows" in message, message


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (
            pl.DataFrame({"p": [0.1 * k for k in range(1, 10)] * 2, "y": [1] * 18}),
            r"one class only \(every outcome is 1\)",
        ),
        (
            pl.DataFrame({"p": [0.1 * k for k in range(1, 10)] * 2, "y": ([0] * 5 + [1] * 4) * 2}),
            "separated classes",
        ),
        (
            pl.DataFrame({"p": [0.9, 0.8, 0.7, 0.3, 0.2, 0.1] * 2, "y": [0, 0, 0, 1, 1, 1] * 2}),
            "separated classes",
        ),
        (pl.DataFrame({"p": [0.4] * 12, "y": [0, 1, 1] * 4}), "not identifiable"),
    ],
)
def test_unidentifiable_groups_raise_naming_the_group(frame: pl.DataFrame, reason: str) -> None:
    framed = frame.with_columns(model=pl.lit("m1"))
    with pytest.raises(pc.CalibrationDataError, match=f"model='m1': {reason}"):
        pc.fit_calibrator(framed, "p", "y", method="platt", by="model")


def test_separation_in_two_dimensions_does_not_converge() -> None:
    # Positives only in the middle: beta's map can separate them; Newton diverges.
    p = np.linspace(0.01, 0.99, 60)
    y = ((p > 0.3) & (p < 0.7)).astype(int)
    with pytest.raises(pc.CalibrationDataError, match=r"the one group: .*separated"):
        pc.fit_calibrator(pl.DataFrame({"p": p, "y": y}), "p", "y", method="beta")


def test_temperature_without_positive_solution_raises() -> None:
    # Every prediction right and confident: the likelihood grows as T -> 0.
    df = pl.DataFrame({"probs": [[0.8, 0.2], [0.3, 0.7]] * 10, "cls": [0, 1] * 10})
    with pytest.raises(pc.CalibrationDataError, match="the one group: "):
        pc.fit_calibrator(df, "probs", "cls", method="temperature")


def test_argument_errors() -> None:
    df = sign_changing_log(26, 200)
    cases: list[tuple[dict[str, object], type[Exception], str]] = [
        ({"method": "logistic"}, ValueError, "`method` must be one of"),
        ({"method": "sigmoid", "fallback": "identity"}, ValueError, "no identity map"),
        ({"method": 1}, TypeError, "`method` must be one of"),
        ({"fallback": "nearest"}, ValueError, "`fallback` must be one of"),
        ({"smoothed": "yes"}, TypeError, "`smoothed` must be a bool"),
        ({"method": "beta", "smoothed": True}, ValueError, "option of method='platt'"),
        ({"min_rows": 0}, ValueError, "`min_rows` must be a positive int"),
        ({"max_iter": 2.5}, TypeError, "`max_iter` must be a positive int"),
        ({"tol": 0}, ValueError, "`tol` must be a number in"),
        ({"sample_rows": 0}, ValueError, "`sample_rows` must be a positive int"),
        ({"sample_rows": 1e5}, TypeError, "`sample_rows` must be a positive int"),
        ({"by": "count"}, ValueError, "`by` cannot hold 'count'"),
        ({"n_bins": 0}, ValueError, "`n_bins` must be a positive int"),
        ({"method": "temperature"}, pc.CalibrationDataError, "Array or List"),
        ({"by": "missing"}, pc.CalibrationDataError, "column 'missing' is missing"),
    ]
    for options, error, match in cases:
        with pytest.raises(error, match=match):
            pc.fit_calibrator(df, "p", "y", **options)  # type: ignore[arg-type]
    vectors = make_log(27, 200, classes=3)
    with pytest.raises(ValueError, match="give no `reduction`"):
        pc.fit_calibrator(vectors, "probs", "cls", method="temperature", reduction="top_label")
    with pytest.raises(TypeError, match="`data` must be a polars"):
        pc.fit_calibrator({"p": [0.1]}, "p", "y")  # type: ignore[arg-type]


def test_apply_checks_the_key_dtypes_and_columns() -> None:
    cal = pc.fit_calibrator(sign_changing_log(28, 600, groups=2), "p", "y", by="g")
    live = pl.DataFrame({"g": ["0"], "p": [0.5]})
    with pytest.raises(pc.CalibrationDataError, match="column 'g' holds String, fitted on Int64"):
        cal.apply(live, "p")
    with pytest.raises(pc.CalibrationDataError, match="column 'q' is missing"):
        cal.apply(live.lazy(), "q")
    applied_frame = cal.apply(pl.DataFrame({"g": [0], "p": [0.5]}).lazy(), "p")
    assert isinstance(applied_frame, pl.LazyFrame)
    assert applied_frame.collect_schema().names() == ["g", "p", "p_calibrated"]


@pytest.mark.parametrize("fitted", [pl.String, pl.Categorical])
def test_apply_takes_string_categorical_and_enum_keys_as_expr_does(fitted: pl.DataType) -> None:
    log = sign_changing_log(65, 600, groups=3).with_columns(pl.format("m{}", "g").alias("model"))
    cal = pc.fit_calibrator(log.with_columns(pl.col("model").cast(fitted)), "p", "y", by="model")
    for dtype in (pl.String, pl.Categorical, pl.Enum(["m0", "m1", "m2"])):
        live = log.with_columns(pl.col("model").cast(dtype))
        expected = live.with_columns(cal.expr("p").alias("p_calibrated"))
        assert_frame_equal(cal.apply(live, "p"), expected)
        assert expected["p_calibrated"].null_count() == 0
    with pytest.raises(pc.CalibrationDataError, match="column 'g' holds String, fitted on Int64"):
        pc.fit_calibrator(log, "p", "y", by="g").apply(log.with_columns(pl.col("g").cast(str)), "p")


def test_isotonic_map_with_equal_or_adjacent_thresholds_is_np_interp(tmp_path: Path) -> None:
    # Equal thresholds (a step: 0.5, 0.5) and thresholds a subnormal apart (0, 5e-324),
    # whose slope overflows to inf: at the threshold itself only the guard "p equals
    # the piece's left end" gives its value (without it, inf * 0 = NaN), as np.interp.
    x, y = [0.0, 5e-324, 0.5, 0.5, 0.8], [0.1, 0.3, 0.5, 0.7, 0.9]
    content = edited("isotonic", lambda c: None)
    for row in content["params"]["rows"]:
        row.update(x=x, y=y)
    path = tmp_path / "step.json"
    path.write_text(json.dumps(content))
    cal = pc.load_calibrator(path)
    p = [0.0, 5e-324, 0.2, 0.5, 0.65, 0.8, 1.0]
    frame = pl.DataFrame({"g": [0, 1] * len(p), "p": [v for v in p for _ in (0, 1)]})
    got = frame.select(cal.expr("p")).to_series().to_numpy()
    np.testing.assert_array_equal(got, np.interp(frame["p"].to_numpy(), x, y))


def test_refused_values_at_apply_time_give_null() -> None:
    cal = pc.fit_calibrator(sign_changing_log(29, 600), "p", "y", method="isotonic")
    out = pl.DataFrame({"p": [0.5, 1.5, float("nan"), None]}).select(cal.expr("p"))
    assert out.to_series().to_list()[1:] == [None, None, None]


# ---------------------------------------------------------------- evaluation


def test_evaluate_is_summary_and_reliability_of_both_stages() -> None:
    train = sign_changing_log(30, 3_000, groups=2)
    test = sign_changing_log(31, 2_000, groups=2)
    cal = pc.fit_calibrator(train, "p", "y", method="beta", by="g")
    result = cal.evaluate(test, "p", "y", n_bins=8)
    after = test.with_columns(p=cal.expr("p"))
    for stage, frame in (("before", test), ("after", after)):
        want = pc.summary(frame, "p", "y", by="g", n_bins=8, metrics=["ece", "brier", "log_loss"])
        got = result.metrics.filter(pl.col("stage") == stage).drop("stage")
        assert_frame_equal(got, want, rel_tol=1e-12)
        table = pc.reliability(frame, "p", "y", by="g", n_bins=8)
        assert_frame_equal(
            result.reliability.filter(pl.col("stage") == stage).drop("stage"), table, rel_tol=1e-12
        )


@pytest.mark.parametrize(
    ("method", "reduction", "names"),
    [
        ("temperature", None, ["confidence_ece", "multiclass_brier", "multiclass_log_loss"]),
        ("platt", "classwise", ["confidence_ece", "multiclass_brier", "multiclass_log_loss"]),
        ("isotonic", "top_label", ["confidence_ece", "confidence_brier", "confidence_log_loss"]),
        ("platt", "confidence", ["confidence_ece", "confidence_brier", "confidence_log_loss"]),
    ],
)
def test_evaluate_names_multiclass_and_confidence_scores_apart(
    method: str, reduction: str | None, names: list[str]
) -> None:
    vectors = make_log(66, 1_500, classes=3, decimals=None)
    cal = pc.fit_calibrator(vectors, "probs", "cls", method=method, reduction=reduction)
    metrics = cal.evaluate(vectors, "probs", "cls").metrics
    assert metrics.columns[-3:] == names
    before = metrics.filter(pl.col("stage") == "before")
    expected = vectors.select(
        pc.confidence_ece("probs", "cls", n_bins=15).alias("ece"),
        pc.multiclass_brier("probs", "cls").alias("brier"),
        pc.multiclass_log_loss("probs", "cls").alias("log_loss"),
    )
    assert before["confidence_ece"].item() == pytest.approx(expected[0, 0], rel=1e-12)
    if names[1] == "multiclass_brier":
        assert before["multiclass_brier"].item() == pytest.approx(expected[0, 1], rel=1e-12)
        assert before["multiclass_log_loss"].item() == pytest.approx(expected[0, 2], rel=1e-12)
    else:
        confidence = pl.col("probs").arr.max()
        right = (pl.col("probs").arr.arg_max() == pl.col("cls")).cast(pl.Float64)
        brier = vectors.select(((confidence - right) ** 2).mean()).item()
        assert before["confidence_brier"].item() == pytest.approx(brier, rel=1e-12)


def test_evaluate_plot_draws_both_stages() -> None:
    pytest.importorskip("matplotlib")
    cal = pc.fit_calibrator(sign_changing_log(32, 1_000, groups=2), "p", "y", by="g")
    figure = cal.evaluate(sign_changing_log(33, 500, groups=2), "p", "y").plot(backend="matplotlib")
    assert figure.axes


# ---------------------------------------------------------------- command line


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # This checkout's package, whichever one the environment has installed.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    return subprocess.run(
        [sys.executable, "-m", "polars_calib", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        check=False,
    )


def test_cli_fit_then_apply(tmp_path: Path) -> None:
    train, live = sign_changing_log(34, 2_000, groups=2), sign_changing_log(35, 1_000, groups=2)
    train.write_parquet(tmp_path / "train.parquet")
    live.write_csv(tmp_path / "live.csv")
    fitted = run(
        "fit",
        tmp_path / "train.parquet",
        "--prob",
        "p",
        "--label",
        "y",
        "--by",
        "g",
        "--method",
        "isotonic",
        "--out",
        tmp_path / "cal.json",
        "-q",
        cwd=tmp_path,
    )
    assert fitted.returncode == 0, fitted.stderr
    assert "count" in fitted.stdout and fitted.stderr == ""
    cal = pc.load_calibrator(tmp_path / "cal.json")
    assert_frame_equal(
        cal.params, pc.fit_calibrator(train, "p", "y", method="isotonic", by="g").params
    )
    out = tmp_path / "scored.parquet"
    done = run(
        "apply",
        tmp_path / "live.csv",
        "--calibrator",
        tmp_path / "cal.json",
        "--prob",
        "p",
        "--out",
        out,
        "--column",
        "p_cal",
        "-q",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    expected = pl.read_csv(tmp_path / "live.csv").with_columns(p_cal=cal.expr("p"))
    assert_frame_equal(pl.read_parquet(out), expected)


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    bad = pl.DataFrame({"p": [0.5] * 20, "y": [1] * 20})
    bad.write_parquet(tmp_path / "bad.parquet")
    result = run(
        "fit",
        tmp_path / "bad.parquet",
        "--prob",
        "p",
        "--label",
        "y",
        "--out",
        tmp_path / "c.json",
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("polars-calib: error: cannot fit 1")
    assert "Traceback" not in result.stderr
    result = run(
        "apply",
        tmp_path / "bad.parquet",
        "--calibrator",
        tmp_path / "none.json",
        "--prob",
        "p",
        "--out",
        tmp_path / "o.parquet",
        cwd=tmp_path,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    result = run(
        "fit",
        tmp_path / "bad.parquet",
        "--prob",
        "p",
        "--label",
        "y",
        "--method",
        "magic",
        "--out",
        tmp_path / "c.json",
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_cli_fit_prints_the_clipped_scores_warning_as_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = sign_changing_log(68, 400, decimals=None).with_columns(
        p=pl.when(pl.int_range(pl.len()) % 10 == 0)
        .then(pl.col("y").cast(pl.Float64))
        .otherwise(pl.col("p"))
    )  # 10% of the scores are exactly 0 or 1
    log.write_parquet(tmp_path / "log.parquet")
    for method, warned in (("platt", True), ("sigmoid", False)):
        arguments = ["fit", str(tmp_path / "log.parquet"), "--prob", "p", "--label", "y"]
        arguments += ["--method", method, "--out", str(tmp_path / f"{method}.json"), "-q"]
        assert main(arguments) == 0
        lines = capsys.readouterr().err.strip().splitlines()
        if warned:
            assert len(lines) == 1, lines
            assert lines[0].startswith("polars-calib: warning: method='platt': scores of exactly")
            assert "the one group: 40 of 400 rows (10.0%)" in lines[0]
        else:
            assert lines == []


def test_refused_rows_of_a_scan_or_of_vectors_raise_too(tmp_path: Path) -> None:
    bad = sign_changing_log(36, 300).with_columns(
        p=pl.when(pl.col("p") > 0.9).then(1.5).otherwise(pl.col("p"))
    )
    path = tmp_path / "bad.parquet"
    bad.write_parquet(path)
    n = int((bad["p"] > 1).sum())
    with pytest.raises(pc.CalibrationDataError, match=f"outside \\[0, 1\\] in {n} of 300 rows"):
        pc.fit_calibrator(pl.scan_parquet(path), "p", "y", method="platt")
    vectors = pl.DataFrame({"probs": [[0.5, 0.6], [0.2, 0.8]] * 10, "cls": [0, 1] * 10})
    for method in ("temperature", "isotonic"):
        with pytest.raises(pc.CalibrationDataError, match=r"vector sum off 1 .* in 10 of 20 rows"):
            pc.fit_calibrator(vectors, "probs", "cls", method=method)


@pytest.mark.parametrize("dtype", [pl.Categorical, pl.Enum(["0", "1", "2"]), pl.Boolean])
def test_keys_of_other_dtypes_look_up_and_round_trip(tmp_path: Path, dtype: pl.DataType) -> None:
    df = sign_changing_log(37, 2_000, groups=3).with_columns(
        k=(pl.col("g") == 1) if dtype == pl.Boolean else pl.col("g").cast(pl.String).cast(dtype)
    )
    cal = pc.fit_calibrator(df, "p", "y", method="isotonic", by=["k", "g"])
    out = df.select(cal.expr("p")).to_series()
    assert out.null_count() == 0
    for key in cal.params.select("k", "g").iter_rows():
        part = df.filter(pl.col("g") == key[1])
        alone = pc.fit_calibrator(part, "p", "y", method="isotonic")
        np.testing.assert_allclose(applied(cal, part), applied(alone, part), atol=1e-12)
    loaded = pc.load_calibrator(cal.save(tmp_path / "k.json"))
    assert_frame_equal(loaded.params, cal.params)
    assert_frame_equal(df.select(loaded.expr("p")), df.select(cal.expr("p")))


@settings(max_examples=25)
@given(
    p=st.lists(
        st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.31, 0.5, 0.7, 0.9, 1.0]) | st.floats(0, 1),
        min_size=10,
        max_size=60,
    ),
    data=st.data(),
)
def test_isotonic_agrees_with_sklearn_on_generated_logs(
    p: list[float], data: st.DataObject
) -> None:
    y = data.draw(st.lists(st.integers(0, 1), min_size=len(p), max_size=len(p)))
    # Positive weights: scikit-learn pools zero-weight rows into an undefined mean (0/0);
    # we drop them, as MAPIE does.
    w = data.draw(st.lists(st.floats(0.01, 3.0), min_size=len(p), max_size=len(p)))
    frame = pl.DataFrame({"p": p, "y": y, "w": w})
    cal = pc.fit_calibrator(frame, "p", "y", method="isotonic", weight="w", min_rows=1)
    reference = IsotonicRegression(out_of_bounds="clip").fit(
        np.array(p), np.array(y), sample_weight=np.array(w)
    )
    grid = pl.DataFrame({"p": np.linspace(0, 1, 41)})
    np.testing.assert_allclose(
        applied(cal, grid), reference.predict(grid["p"].to_numpy()), atol=1e-12
    )
    # Monotone, within [0, 1].
    out = applied(cal, grid)
    assert np.all(np.diff(out) >= -1e-15) and out.min() >= 0 and out.max() <= 1


def test_labels_other_than_0_1_with_pos_label() -> None:
    df = sign_changing_log(38, 1_000)
    named = df.with_columns(
        outcome=pl.when(pl.col("y") == 1).then(pl.lit("churn")).otherwise(pl.lit("stay"))
    )
    cal = pc.fit_calibrator(named, "p", "outcome", method="beta", pos_label="churn")
    plain = pc.fit_calibrator(df, "p", "y", method="beta")
    assert_frame_equal(cal.params, plain.params, rel_tol=1e-9)
    metrics = cal.evaluate(named, "p", "outcome").metrics
    assert_frame_equal(metrics, plain.evaluate(df, "p", "y").metrics, rel_tol=1e-9)


@pytest.mark.parametrize("closed", ["right", "left"])
def test_edge_bins_follow_the_bin_rule_per_group(closed: str) -> None:
    from polars_calib._core.binning import GroupedEdges, edge_bins

    rng = np.random.default_rng(40)
    edges = [np.sort(np.round(rng.random(4), 1)) for _ in range(3)]  # ties, on the grid
    edges[1][:] = [0.2, 0.2, 0.5, 0.5]
    p = np.r_[np.round(rng.random(300), 1), 0.0, 1.0, 0.2, 0.5]
    g = rng.integers(0, 3, len(p))
    frame = pl.DataFrame({"g": g, "p": p})
    grouped = GroupedEdges([e.tolist() for e in edges])
    got = frame.select(edge_bins(pl.col("g"), pl.col("p"), grouped, 5, closed)).to_series()
    side = "left" if closed == "right" else "right"  # right-closed: edges below p
    want = [np.searchsorted(edges[gi], pi, side=side) for gi, pi in zip(g, p)]
    assert got.to_list() == want


@pytest.mark.parametrize(
    ("method", "by"),
    [
        ("platt", "g"),
        ("sigmoid", "s"),
        ("beta", ["g", "s"]),
        ("histogram", "s"),
    ],
)
def test_parametric_maps_stream_without_an_in_memory_fallback(
    tmp_path: Path, method: str, by: str | list[str]
) -> None:
    df = sign_changing_log(41, 2_000, groups=3).with_columns(s=pl.format("seg-{}", "g"))
    cal = pc.fit_calibrator(df, "p", "y", method=method, by=by)
    path = tmp_path / "live.parquet"
    df.write_parquet(path)
    query = pl.scan_parquet(path).with_columns(q=cal.expr("p"))
    graph = query.show_graph(engine="streaming", plan_stage="physical", raw_output=True)
    assert isinstance(graph, str)
    # Columnar functions (replace_strict, search_sorted) run in the in-memory engine.
    assert "columnar-function" not in graph, graph[:2000]
    assert_frame_equal(query.collect(engine="streaming"), df.with_columns(q=cal.expr("p")))


def test_fit_calibrator_takes_expression_keys(tmp_path: Path) -> None:
    """`by` an expression: the maps, the calibrated column and the evaluation of the key by name."""
    df = make_log(23, 2_000, groups=4).with_columns(
        segment=pl.col("g").replace_strict([0, 1, 2, 3], ["a", "A", "b", "B"])
    )
    upper = df.with_columns(pl.col("segment").str.to_uppercase())
    key = pl.col("segment").str.to_uppercase()
    methods: list[pc.CalibrationMethod] = ["platt", "isotonic"]
    for method in methods:
        cal = pc.fit_calibrator(df, "p", "y", method=method, by=key, weight="w")
        named = pc.fit_calibrator(upper, "p", "y", method=method, by="segment", weight="w")
        assert cal.by == ("segment",) and cal.params["segment"].to_list() == ["A", "B"]
        assert_frame_equal(cal.params, named.params, rel_tol=1e-9)
        applied = cal.apply(df.lazy(), "p").collect()  # the key computed from `segment`
        assert_frame_equal(
            applied.drop("segment"), named.apply(upper, "p").drop("segment"), rel_tol=1e-9
        )
        got = cal.evaluate(df, "p", "y", weight="w")
        want = named.evaluate(upper, "p", "y", weight="w")
        assert_frame_equal(got.metrics, want.metrics, rel_tol=1e-9)
        assert_frame_equal(got.reliability, want.reliability, rel_tol=1e-9)
    with pytest.raises(pc.CalibrationDataError, match="column 'segment' is missing"):
        cal.apply(df.drop("segment"), "p")
    with pytest.raises(ValueError, match="expression keys"):
        cal.save(tmp_path / "cal.json")
