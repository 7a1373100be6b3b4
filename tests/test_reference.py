"""Checks of the numpy reference (tests/reference.py) against published worked numbers.

These validate the oracle itself, so tolerances are tight.
"""

import os
import sys
from fractions import Fraction

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import reference as ref

# --------------------------------------------------------------------------
# ECML-PKDD 2020 tutorial, 30 items, 3 classes, 5 right-closed uniform bins
# --------------------------------------------------------------------------


def _column(j):
    return [row[j] for row in ref.TUTORIAL_P]


def _one_vs_rest(j):
    return [int(label == j) for label in ref.TUTORIAL_Y]


def _exact_confidence():
    conf = [max(row) for row in ref.TUTORIAL_P]
    pred = [row.index(max(row)) for row in ref.TUTORIAL_P]  # ties -> first index
    correct = [int(a == b) for a, b in zip(pred, ref.TUTORIAL_Y)]
    return conf, correct


def test_tutorial_data_shape():
    assert len(ref.TUTORIAL_P) == 30 and len(ref.TUTORIAL_Y) == 30
    assert all(sum(row) == 1 for row in ref.TUTORIAL_P)
    assert ref.TUTORIAL_P[6] == ref.TUTORIAL_P[7] == [Fraction(1, 3)] * 3
    P, y = ref.tutorial_arrays()
    assert P.shape == (30, 3) and P.dtype == np.float64
    assert y.tolist() == [0] * 10 + [1] * 10 + [2] * 10


@pytest.mark.parametrize(
    "j, ece", [(0, Fraction(169, 900)), (1, Fraction(131, 900)), (2, Fraction(91, 450))]
)
def test_tutorial_exact_class_ece(j, ece):
    got = ref.exact_calibration_error(_column(j), _one_vs_rest(j), 5)
    assert isinstance(got, Fraction)
    assert got == ece


def test_tutorial_exact_class0_mce():
    assert ref.exact_calibration_error(_column(0), _one_vs_rest(0), 5, norm="max") == Fraction(
        17, 35
    )


def test_tutorial_exact_confidence():
    conf, correct = _exact_confidence()
    assert ref.exact_calibration_error(conf, correct, 5) == Fraction(19, 90)
    assert ref.exact_calibration_error(conf, correct, 5, norm="max") == Fraction(3, 10)


def test_tutorial_exact_classwise():
    eces = [ref.exact_calibration_error(_column(j), _one_vs_rest(j), 5) for j in range(3)]
    mces = [
        ref.exact_calibration_error(_column(j), _one_vs_rest(j), 5, norm="max") for j in range(3)
    ]
    assert sum(eces) / 3 == Fraction(241, 1350)
    assert max(mces) == Fraction(17, 35)


def test_tutorial_float_path():
    P, y = ref.tutorial_arrays()
    tol = 1e-12
    assert ref.calibration_error(P[:, 0], y == 0, n_bins=5) == pytest.approx(169 / 900, abs=tol)
    assert ref.calibration_error(P[:, 0], y == 0, n_bins=5, norm="max") == pytest.approx(
        17 / 35, abs=tol
    )
    assert ref.calibration_error(P[:, 1], y == 1, n_bins=5) == pytest.approx(131 / 900, abs=tol)
    assert ref.calibration_error(P[:, 2], y == 2, n_bins=5) == pytest.approx(91 / 450, abs=tol)
    assert ref.confidence_error(P, y, n_bins=5) == pytest.approx(19 / 90, abs=tol)
    assert ref.confidence_error(P, y, n_bins=5, norm="max") == pytest.approx(3 / 10, abs=tol)
    assert ref.classwise_error(P, y, n_bins=5) == pytest.approx(241 / 1350, abs=tol)
    assert ref.classwise_error(P, y, n_bins=5, norm="max") == pytest.approx(17 / 35, abs=tol)


def test_tutorial_exact_l2_matches_float_path():
    P, y = ref.tutorial_arrays()
    exact = ref.exact_calibration_error(_column(0), _one_vs_rest(0), 5, norm="l2")
    assert ref.calibration_error(P[:, 0], y == 0, n_bins=5, norm="l2") == pytest.approx(
        exact, abs=1e-12
    )


# --------------------------------------------------------------------------
# 10-item worked example, 3 bins
# --------------------------------------------------------------------------


def test_worked_10_ece():
    assert ref.calibration_error(ref.WORKED_10_P, ref.WORKED_10_Y, n_bins=3) == pytest.approx(
        0.241, abs=1e-12
    )
    exact = ref.exact_calibration_error(
        [Fraction(str(v)) for v in ref.WORKED_10_P], ref.WORKED_10_Y, 3
    )
    assert exact == Fraction(241, 1000)


def test_worked_10_table():
    t = ref.reliability_table(ref.WORKED_10_P, ref.WORKED_10_Y, n_bins=3)
    np.testing.assert_allclose(t["mean_predicted"], [0.265, 0.514, 2.51 / 3], rtol=0, atol=1e-12)
    assert np.round(t["mean_predicted"], 3).tolist() == [0.265, 0.514, 0.837]
    np.testing.assert_allclose(t["observed"], [0.5, 0.8, 2 / 3], rtol=0, atol=1e-12)
    assert t["count"].tolist() == [2, 5, 3]
    np.testing.assert_allclose(t["gap"], t["observed"] - t["mean_predicted"])
    np.testing.assert_allclose(t["lower"], [0, 1 / 3, 2 / 3])
    np.testing.assert_allclose(t["upper"], [1 / 3, 2 / 3, 1])


# --------------------------------------------------------------------------
# scikit-learn calibration_curve docs example
# --------------------------------------------------------------------------


def test_sklearn_calibration_curve_example():
    y = [0, 0, 0, 0, 1, 1, 1, 1, 1]
    p = [0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0]
    t = ref.reliability_table(p, y, n_bins=3)
    np.testing.assert_allclose(t["observed"], [0.0, 0.5, 1.0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(t["mean_predicted"], [0.2, 0.525, 0.85], rtol=0, atol=1e-12)


# --------------------------------------------------------------------------
# torchmetrics docs examples
# torchmetrics bins with torch.bucketize(..., right=True) - 1, i.e. left-closed
# [0, 0.5), [0.5, 1). No value in either docs example lies on an inner edge,
# so BOTH closures reproduce the published numbers; we test both.
# --------------------------------------------------------------------------

TM_BIN_P = [0.25, 0.25, 0.55, 0.75, 0.75]
TM_BIN_Y = [0, 0, 1, 1, 1]
TM_MC_P = [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40], [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]]
TM_MC_Y = [0, 1, 2, 0]


@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("norm, expected", [("l1", 0.2900), ("l2", 0.2918), ("max", 0.3167)])
def test_torchmetrics_binary(closed, norm, expected):
    got = ref.calibration_error(TM_BIN_P, TM_BIN_Y, n_bins=2, closed=closed, norm=norm)
    assert round(got, 4) == expected


@pytest.mark.parametrize("closed", ["left", "right"])
@pytest.mark.parametrize("norm, expected", [("l1", 0.2000), ("l2", 0.2082), ("max", 0.2333)])
def test_torchmetrics_multiclass(closed, norm, expected):
    got = ref.confidence_error(TM_MC_P, TM_MC_Y, n_bins=3, closed=closed, norm=norm)
    assert round(got, 4) == expected


# --------------------------------------------------------------------------
# Edge exactness
# --------------------------------------------------------------------------


def test_uniform_edges_exact():
    for B in range(1, 101):
        assert ref.uniform_edges(B).tolist() == [k / B for k in range(B + 1)]
    # np.linspace is not correctly rounded here; our edges are.
    assert ref.uniform_edges(5)[3] == 0.6


def test_edges_land_in_expected_bins():
    for B in range(1, 101):
        p = np.array([k / B for k in range(B + 1)])
        right = ref.bin_ids(p, B, closed="right")
        left = ref.bin_ids(p, B, closed="left")
        assert right.tolist() == [max(k - 1, 0) for k in range(B + 1)], B
        assert left.tolist() == [min(k, B - 1) for k in range(B + 1)], B


def test_hundredths_land_in_expected_bins():
    p = np.array([round(j / 100, 2) for j in range(101)])
    assert ref.bin_ids(p, 100, closed="right").tolist() == [max(j - 1, 0) for j in range(101)]
    assert ref.bin_ids(p, 100, closed="left").tolist() == [min(j, 99) for j in range(101)]


# --------------------------------------------------------------------------
# Wilson interval
# --------------------------------------------------------------------------


def test_wilson_8_of_10():
    lo, hi = ref.wilson_interval(8, 10)
    # z = 1.959964: center = (0.8 + 0.192073) / 1.384146, half = 0.371707 / 1.384146
    assert lo[0] == pytest.approx(0.490162, abs=1e-6)
    assert hi[0] == pytest.approx(0.943318, abs=1e-6)


def test_wilson_empty_is_nan():
    lo, hi = ref.wilson_interval([0, 3], [0, 3])
    assert np.isnan(lo[0]) and np.isnan(hi[0])
    assert hi[1] == pytest.approx(1.0, abs=1e-12)
