"""Tests of tests/peers.py, the numpy specification of the peers' calibration errors.

Every expected number below was produced by the real peer, not by peers.py:
scikit-learn 1.9.1, torchmetrics 1.9.0 on torch 2.13.0+cpu (x86-64; capability
AVX512, and ATEN_CPU_CAPABILITY=default where marked), netcal 1.4.0, MAPIE 1.6.0,
numpy 2.4.6, scipy 1.17.1.  The peers are not needed to run these tests.
Floats are written with repr, so every pinned value is exact.
"""

import math

import numpy as np
import pytest

import peers

# Binary inputs: probabilities on edges k/10, exact 0.0 and 1.0, ties
EDGE_P = [
    0.0,
    0.1,
    0.2,
    0.3,
    0.3,
    0.4,
    0.5,
    0.5,
    0.6,
    0.6,
    0.7,
    0.7,
    0.8,
    0.9,
    1.0,
    1.0,
    0.25,
    0.75,
    0.15,
    0.05,
    0.0,
    1.0,
    0.35,
    0.65,
]
EDGE_Y = [0, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1, 0]
# Binary inputs: uniform probabilities rounded to 2 decimals
R2_P = [
    0.68,
    0.21,
    0.31,
    0.8,
    1.0,
    0.14,
    0.08,
    0.18,
    0.36,
    0.17,
    0.59,
    0.62,
    0.11,
    0.57,
    0.0,
    0.47,
    0.98,
    0.8,
    0.6,
    0.33,
    0.21,
    0.44,
    0.28,
    0.87,
    0.21,
    0.27,
    0.81,
    0.27,
    0.27,
    0.07,
    0.47,
    0.26,
    0.89,
    0.29,
    0.77,
    0.49,
    0.47,
    0.96,
    0.9,
    0.08,
]
R2_Y = [
    1,
    1,
    0,
    1,
    1,
    0,
    0,
    0,
    1,
    1,
    0,
    1,
    0,
    1,
    0,
    0,
    1,
    1,
    1,
    0,
    0,
    1,
    0,
    0,
    1,
    0,
    1,
    0,
    1,
    0,
    1,
    1,
    1,
    0,
    0,
    1,
    0,
    1,
    1,
    0,
]
# Binary inputs: uniform probabilities
RAND_P = [
    0.8019590025685646,
    0.3793029101922408,
    0.40981567867379143,
    0.5658211106850368,
    0.2607160525371862,
    0.4363584511892198,
    0.13481885876743138,
    0.7028911583232353,
    0.10056103098593427,
    0.2795177487202619,
    0.21852061138050005,
    0.13162664068691,
    0.5490911414028141,
    0.19695715642104128,
    0.751169557376425,
    0.2798727103354204,
    0.9680080970310831,
    0.5651127192870163,
    0.08797606848968764,
    0.6202315964176985,
    0.2090192612295143,
    0.3777475872869961,
    0.20754026074851273,
    0.28412533212399005,
    0.6132496147256818,
    0.505464835672272,
    0.01961901161452051,
    0.9167337507638387,
    0.24682518295101097,
    0.48578504227177777,
]
RAND_Y = [1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1]
# Three classes: one-hot rows, ties for the top class, edge values
MC_P = [
    [1.0, 0.0, 0.0],
    [0.5, 0.5, 0.0],
    [0.1, 0.6, 0.3],
    [0.2, 0.2, 0.6],
    [0.3333333333333333, 0.3333333333333333, 0.3333333333333333],
    [0.7, 0.2, 0.1],
    [0.3, 0.3, 0.4],
    [0.0, 1.0, 0.0],
    [0.4, 0.4, 0.2],
    [0.6, 0.3, 0.1],
    [0.25, 0.5, 0.25],
    [0.1, 0.1, 0.8],
    [0.9, 0.05, 0.05],
    [0.45, 0.1, 0.45],
    [0.2, 0.7, 0.1],
    [0.0, 0.0, 1.0],
    [0.55, 0.25, 0.2],
    [0.3, 0.6, 0.1],
]
MC_Y = [0, 1, 1, 2, 0, 0, 2, 1, 1, 2, 1, 2, 0, 2, 1, 2, 0, 0]

BINARY = {"edge": (EDGE_P, EDGE_Y), "r2": (R2_P, R2_Y), "rand": (RAND_P, RAND_Y)}


# (data, n_bins, strategy, prob_true, prob_pred, counts) from sklearn.calibration.calibration_curve
SKLEARN = [
    (
        "edge",
        3,
        "uniform",
        [0.1111111111111111, 0.7142857142857143, 0.75],
        [0.15000000000000002, 0.5142857142857143, 0.85625],
        [9, 7, 8],
    ),
    (
        "edge",
        3,
        "quantile",
        [0.1111111111111111, 0.7142857142857143, 0.75],
        [0.15000000000000002, 0.5142857142857143, 0.85625],
        [9, 7, 8],
    ),
    (
        "edge",
        5,
        "uniform",
        [0.0, 0.6, 0.75, 0.6, 0.75],
        [0.08333333333333336, 0.32, 0.55, 0.72, 0.975],
        [6, 5, 4, 5, 4],
    ),
    (
        "edge",
        5,
        "quantile",
        [0.0, 0.4, 0.8, 0.5, 0.8],
        [0.06, 0.27999999999999997, 0.52, 0.7, 0.9400000000000001],
        [5, 5, 5, 4, 5],
    ),
    (
        "edge",
        10,
        "uniform",
        [
            0.0,
            0.0,
            0.3333333333333333,
            1.0,
            0.5,
            1.0,
            0.3333333333333333,
            1.0,
            1.0,
            0.6666666666666666,
        ],
        [
            0.037500000000000006,
            0.175,
            0.2833333333333333,
            0.375,
            0.5,
            0.6,
            0.6833333333333332,
            0.775,
            0.9,
            1.0,
        ],
        [4, 2, 3, 2, 2, 2, 3, 2, 1, 3],
    ),
    (
        "edge",
        10,
        "quantile",
        [
            0.0,
            0.0,
            0.0,
            0.6666666666666666,
            0.6666666666666666,
            1.0,
            0.3333333333333333,
            1.0,
            1.0,
            0.6666666666666666,
        ],
        [
            0.016666666666666666,
            0.125,
            0.225,
            0.31666666666666665,
            0.4666666666666666,
            0.6,
            0.6833333333333332,
            0.75,
            0.8500000000000001,
            1.0,
        ],
        [3, 2, 2, 3, 3, 2, 3, 1, 2, 3],
    ),
    (
        "r2",
        3,
        "uniform",
        [0.2631578947368421, 0.7, 0.8181818181818182],
        [0.1968421052631579, 0.5079999999999999, 0.8599999999999999],
        [19, 10, 11],
    ),
    (
        "r2",
        3,
        "quantile",
        [0.3333333333333333, 0.45454545454545453, 0.7857142857142857],
        [0.1686666666666667, 0.40727272727272723, 0.805],
        [15, 11, 14],
    ),
    (
        "r2",
        5,
        "uniform",
        [0.125, 0.4166666666666667, 0.625, 0.8, 0.8571428571428571],
        [0.10375, 0.27249999999999996, 0.5125, 0.7340000000000001, 0.9157142857142857],
        [8, 12, 8, 5, 7],
    ),
    (
        "r2",
        5,
        "quantile",
        [0.125, 0.5, 0.375, 0.7777777777777778, 0.8571428571428571],
        [0.10375, 0.2475, 0.39249999999999996, 0.6577777777777778, 0.9157142857142857],
        [8, 8, 8, 9, 7],
    ),
    (
        "r2",
        10,
        "uniform",
        [
            0.0,
            0.25,
            0.4444444444444444,
            0.3333333333333333,
            0.6,
            0.6666666666666666,
            1.0,
            0.6666666666666666,
            0.75,
            1.0,
        ],
        [
            0.05750000000000001,
            0.15,
            0.25222222222222224,
            0.3333333333333333,
            0.46799999999999997,
            0.5866666666666666,
            0.65,
            0.79,
            0.8675,
            0.98,
        ],
        [4, 4, 9, 3, 5, 3, 2, 3, 4, 3],
    ),
    (
        "r2",
        10,
        "quantile",
        [0.0, 0.25, 0.75, 0.25, 0.25, 0.5, 0.75, 0.8, 0.6666666666666666, 1.0],
        [
            0.05750000000000001,
            0.15,
            0.2225,
            0.2725,
            0.3225,
            0.46249999999999997,
            0.5625,
            0.7340000000000001,
            0.8566666666666668,
            0.96,
        ],
        [4, 4, 4, 4, 4, 4, 4, 5, 3, 4],
    ),
    (
        "rand",
        3,
        "uniform",
        [0.42857142857142855, 0.5454545454545454, 0.8],
        [0.18983542335656584, 0.5007255170731404, 0.8281523132126292],
        [14, 11, 5],
    ),
    (
        "rand",
        3,
        "quantile",
        [0.4, 0.4, 0.8],
        [0.15534640832750632, 0.3698706349003157, 0.7054267748581394],
        [10, 10, 10],
    ),
    (
        "rand",
        5,
        "uniform",
        [0.16666666666666666, 0.5, 0.5714285714285714, 0.75, 1.0],
        [
            0.11192646116092085,
            0.27431876575056335,
            0.502492711311704,
            0.6718854817107602,
            0.8955669501211622,
        ],
        [6, 10, 7, 4, 3],
    ),
    (
        "rand",
        5,
        "quantile",
        [
            0.16666666666666666,
            0.6666666666666666,
            0.16666666666666666,
            0.8333333333333334,
            0.8333333333333334,
        ],
        [
            0.11192646116092085,
            0.2370231862611644,
            0.36120377830027645,
            0.5474207440074331,
            0.7934988604134742,
        ],
        [6, 6, 6, 6, 6],
    ),
    (
        "rand",
        10,
        "uniform",
        [0.0, 0.25, 0.625, 0.0, 0.3333333333333333, 0.75, 1.0, 0.5, 1.0, 1.0],
        [
            0.053797540052104076,
            0.14099092171532923,
            0.2482671450032996,
            0.37852524873961846,
            0.44398639071159635,
            0.5463724517617847,
            0.6167406055716902,
            0.7270303578498302,
            0.8019590025685646,
            0.9423709238974609,
        ],
        [2, 4, 8, 2, 3, 4, 2, 2, 1, 2],
    ),
    (
        "rand",
        10,
        "quantile",
        [
            0.0,
            0.3333333333333333,
            0.6666666666666666,
            0.6666666666666666,
            0.3333333333333333,
            0.0,
            0.6666666666666666,
            1.0,
            0.6666666666666666,
            1.0,
        ],
        [
            0.06938537036338081,
            0.15446755195846087,
            0.2116933777861757,
            0.26235299473615303,
            0.31391520991546884,
            0.40849234668508405,
            0.5134470064489546,
            0.5813944815659117,
            0.6914307707057863,
            0.8955669501211622,
        ],
        [3, 3, 3, 3, 3, 3, 3, 3, 3, 3],
    ),
]


@pytest.mark.parametrize("case", SKLEARN, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_sklearn_calibration_curve(case):
    name, n_bins, strategy, prob_true, prob_pred, counts = case
    p, y = BINARY[name]
    got_true, got_pred, got_counts = peers.sklearn_calibration_curve(
        y, p, n_bins=n_bins, strategy=strategy
    )
    assert got_true.tolist() == prob_true
    assert got_pred.tolist() == prob_pred
    assert got_counts.tolist() == counts
    # the ECE a user builds from calibration_curve's outputs and the bin counts
    expected = float(
        np.sum(np.array(counts) * np.abs(np.array(prob_true) - np.array(prob_pred))) / len(p)
    )
    assert peers.sklearn_calibration_curve_ece(y, p, n_bins=n_bins, strategy=strategy) == expected


# (data, n_bins, norm, value for float32 preds, value for float64 preds) from
# torchmetrics binary_calibration_error(torch.tensor(p[, dtype=float64]), torch.tensor(y))
TM_BINARY = [
    ("edge", 3, "l1", 0.12083335220813751, 0.12083333333333335),
    ("edge", 3, "max", 0.3333333134651184, 0.33333333333333337),
    ("edge", 3, "l2", 0.16220416128635406, 0.1622041466337565),
    ("edge", 10, "l1", 0.1666666865348816, 0.13333333333333336),
    ("edge", 10, "max", 0.6000000238418579, 0.65),
    ("edge", 10, "l2", 0.22905299067497253, 0.22486492859294693),
    ("edge", 15, "l1", 0.1875, 0.1875),
    ("edge", 15, "max", 0.625, 0.65),
    ("edge", 15, "l2", 0.2524188458919525, 0.252522001241696),
    ("r2", 3, "l1", 0.0910000205039978, 0.09099999999999996),
    ("r2", 3, "max", 0.19200003147125244, 0.19200000000000006),
    ("r2", 3, "l2", 0.10878397524356842, 0.10878394811929311),
    ("r2", 10, "l1", 0.13450001180171967, 0.1345),
    ("r2", 10, "max", 0.7699999809265137, 0.77),
    ("r2", 10, "l2", 0.19340606033802032, 0.19340605672464806),
    ("r2", 15, "l1", 0.21549998223781586, 0.21550000000000002),
    ("r2", 15, "max", 0.7699999809265137, 0.77),
    ("r2", 15, "l2", 0.29061517119407654, 0.2906151624039042),
    ("rand", 3, "l1", 0.13250283896923065, 0.1325028317088893),
    ("rand", 3, "max", 0.23873600363731384, 0.2387360052148627),
    ("rand", 3, "l2", 0.16572050750255585, 0.1657205109090617),
    ("rand", 10, "l1", 0.23316308856010437, 0.2331630916658725),
    ("rand", 10, "max", 0.3832594156265259, 0.3832593944283098),
    ("rand", 10, "l2", 0.26587069034576416, 0.26587068970871675),
    ("rand", 15, "l1", 0.29951199889183044, 0.29951196313418194),
    ("rand", 15, "max", 0.7028911709785461, 0.7028911583232353),
    ("rand", 15, "l2", 0.34049054980278015, 0.3404905298662667),
]


def _ulps(a, b, dtype):
    view = np.int32 if dtype == np.float32 else np.int64
    return abs(int(np.asarray(a, dtype).view(view)) - int(np.asarray(b, dtype).view(view)))


def _check_torch_value(got, expected, norm, dtype):
    if norm == "l2":
        # the squared error is bit-exact; torch.sqrt on CPU is not correctly rounded
        assert _ulps(got, expected, dtype) <= 1
    else:
        assert np.asarray(got).dtype == dtype
        assert float(got) == expected


@pytest.mark.parametrize("case", TM_BINARY, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_torchmetrics_binary(case):
    name, n_bins, norm, v32, v64 = case
    p, y = BINARY[name]
    got32 = peers.torchmetrics_binary_calibration_error(
        p, y, n_bins=n_bins, norm=norm, dtype=np.float32
    )
    got64 = peers.torchmetrics_binary_calibration_error(
        p, y, n_bins=n_bins, norm=norm, dtype=np.float64
    )
    _check_torch_value(got32, v32, norm, np.float32)
    _check_torch_value(got64, v64, norm, np.float64)


# (n_bins, norm, value for float32 preds, value for float64 preds) from multiclass_calibration_error
TM_MULTI = [
    (3, "l1", 0.07592593133449554, 0.07592593133449554),
    (3, "max", 0.22499996423721313, 0.22499996423721313),
    (3, "l2", 0.11113004386425018, 0.11113004386425018),
    (5, "l1", 0.07592590898275375, 0.07592590898275375),
    (5, "max", 0.6666666269302368, 0.6666666269302368),
    (5, "l2", 0.16712898015975952, 0.16712898015975952),
    (10, "l1", 0.14814816415309906, 0.14814816415309906),
    (10, "max", 0.6666666269302368, 0.6666666269302368),
    (10, "l2", 0.21118418872356415, 0.21118418872356415),
    (15, "l1", 0.17037038505077362, 0.17037038505077362),
    (15, "max", 0.44999998807907104, 0.44999998807907104),
    (15, "l2", 0.22673656046390533, 0.22673656046390533),
]

TM_MULTI_IGNORE_Y = [0, -1, 1, 2, -1, 0, 2, 1, 1, 2, 1, 2, 0, 2, 1, 2, 0, 0]
TM_MULTI_IGNORE = 0.15625  # n_bins=10, ignore_index=-1


@pytest.mark.parametrize("case", TM_MULTI, ids=lambda c: f"{c[0]}-{c[1]}")
def test_torchmetrics_multiclass(case):
    n_bins, norm, v32, v64 = case
    for dtype, expected in ((np.float32, v32), (np.float64, v64)):
        got = peers.torchmetrics_multiclass_calibration_error(
            MC_P, MC_Y, 3, n_bins=n_bins, norm=norm, dtype=dtype
        )
        # confidences.float(): float32 arithmetic whatever the input dtype
        _check_torch_value(got, expected, norm, np.float32)


def test_torchmetrics_multiclass_ignore_index():
    got = peers.torchmetrics_multiclass_calibration_error(
        MC_P, TM_MULTI_IGNORE_Y, 3, n_bins=10, ignore_index=-1
    )
    assert float(got) == TM_MULTI_IGNORE


# torch.linspace(0, 1, steps, dtype=...) on CPU (x86-64 wheel, AVX512 dispatch: fused multiply-add)
TORCH_LINSPACE = {
    "float32:4": [0.0, 0.3333333432674408, 0.6666666269302368, 1.0],
    "float32:10": [
        0.0,
        0.1111111119389534,
        0.2222222238779068,
        0.3333333432674408,
        0.4444444477558136,
        0.5555555820465088,
        0.6666666865348816,
        0.7777777910232544,
        0.8888888955116272,
        1.0,
    ],
    "float32:11": [
        0.0,
        0.10000000149011612,
        0.20000000298023224,
        0.30000001192092896,
        0.4000000059604645,
        0.5,
        0.6000000238418579,
        0.699999988079071,
        0.800000011920929,
        0.8999999761581421,
        1.0,
    ],
    "float32:16": [
        0.0,
        0.06666667014360428,
        0.13333334028720856,
        0.20000001788139343,
        0.2666666805744171,
        0.3333333432674408,
        0.40000003576278687,
        0.46666669845581055,
        0.5333333015441895,
        0.5999999642372131,
        0.6666666269302368,
        0.7333333492279053,
        0.800000011920929,
        0.8666666746139526,
        0.9333333373069763,
        1.0,
    ],
    "float32:18": [
        0.0,
        0.05882352963089943,
        0.11764705926179886,
        0.1764705926179886,
        0.23529411852359772,
        0.29411765933036804,
        0.3529411852359772,
        0.4117647111415863,
        0.47058823704719543,
        0.529411792755127,
        0.5882353186607361,
        0.6470588445663452,
        0.7058823704719543,
        0.7647058963775635,
        0.8235294222831726,
        0.8823529481887817,
        0.9411764740943909,
        1.0,
    ],
    "float64:4": [0.0, 0.3333333333333333, 0.6666666666666667, 1.0],
    "float64:10": [
        0.0,
        0.1111111111111111,
        0.2222222222222222,
        0.3333333333333333,
        0.4444444444444444,
        0.5555555555555556,
        0.6666666666666667,
        0.7777777777777778,
        0.8888888888888888,
        1.0,
    ],
    "float64:11": [0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "float64:16": [
        0.0,
        0.06666666666666667,
        0.13333333333333333,
        0.2,
        0.26666666666666666,
        0.3333333333333333,
        0.4,
        0.4666666666666667,
        0.5333333333333333,
        0.6,
        0.6666666666666666,
        0.7333333333333334,
        0.8,
        0.8666666666666667,
        0.9333333333333333,
        1.0,
    ],
    "float64:18": [
        0.0,
        0.058823529411764705,
        0.11764705882352941,
        0.1764705882352941,
        0.23529411764705882,
        0.29411764705882354,
        0.3529411764705882,
        0.4117647058823529,
        0.47058823529411764,
        0.5294117647058824,
        0.5882352941176471,
        0.6470588235294118,
        0.7058823529411765,
        0.7647058823529411,
        0.8235294117647058,
        0.8823529411764706,
        0.9411764705882353,
        1.0,
    ],
}
# the same under ATEN_CPU_CAPABILITY=default (no fused multiply-add)
TORCH_LINSPACE_DEFAULT = {
    "float32:10": [
        0.0,
        0.1111111119389534,
        0.2222222238779068,
        0.3333333432674408,
        0.4444444477558136,
        0.5555555820465088,
        0.6666666269302368,
        0.7777777910232544,
        0.8888888955116272,
        1.0,
    ],
    "float32:16": [
        0.0,
        0.06666667014360428,
        0.13333334028720856,
        0.20000001788139343,
        0.2666666805744171,
        0.3333333432674408,
        0.40000003576278687,
        0.46666669845581055,
        0.5333333015441895,
        0.5999999642372131,
        0.6666666269302368,
        0.7333333492279053,
        0.7999999523162842,
        0.8666666746139526,
        0.9333333373069763,
        1.0,
    ],
    "float32:18": [
        0.0,
        0.05882352963089943,
        0.11764705926179886,
        0.1764705926179886,
        0.23529411852359772,
        0.29411765933036804,
        0.3529411852359772,
        0.4117647111415863,
        0.47058823704719543,
        0.529411792755127,
        0.5882352590560913,
        0.6470588445663452,
        0.7058823108673096,
        0.7647058963775635,
        0.8235294222831726,
        0.8823529481887817,
        0.9411764740943909,
        1.0,
    ],
}
# torch.from_numpy(np.array(RAND_P[:k], dtype=np.float32)).sum()
TORCH_SUM = [
    (3, 1.5910775661468506),
    (7, 2.9887919425964355),
    (8, 3.691683053970337),
    (9, 3.7922439575195312),
    (16, 6.198999404907227),
    (17, 7.167007923126221),
    (29, 11.820653915405273),
]


@pytest.mark.parametrize("key", sorted(TORCH_LINSPACE))
def test_torch_linspace(key):
    dtype, steps = key.split(":")
    got = peers.torch_linspace(0, 1, int(steps), dtype=getattr(np, dtype))
    assert got.tolist() == TORCH_LINSPACE[key]


@pytest.mark.parametrize("key", sorted(TORCH_LINSPACE_DEFAULT))
def test_torch_linspace_without_fma(key):
    dtype, steps = key.split(":")
    got = peers.torch_linspace(0, 1, int(steps), dtype=getattr(np, dtype), fma=False)
    assert got.tolist() == TORCH_LINSPACE_DEFAULT[key]


def test_torch_linspace_is_not_np_linspace():
    # 9 bins, float32: torch's edge 6 is 2/3 rounded up, the unfused formula rounds it down
    assert peers.torch_linspace(0, 1, 10)[6] == np.float32(2 / 3)
    assert peers.torch_linspace(0, 1, 10, fma=False)[6] < np.float32(2 / 3)
    # 15 bins, float64: edge 10 is 2/3 rounded down with the fused form, rounded up without
    assert peers.torch_linspace(0, 1, 16, dtype=np.float64)[10] == 2 / 3
    assert peers.torch_linspace(0, 1, 16, dtype=np.float64, fma=False)[10] > 2 / 3
    # 3 bins, float64: torch's edge 2 is 1 - 1/3 = 0.6666666666666667, np.linspace's and 2/3's
    # are 0.6666666666666666
    assert peers.torch_linspace(0, 1, 4, dtype=np.float64)[2] > np.linspace(0, 1, 4)[2] == 2 / 3


@pytest.mark.parametrize("case", TORCH_SUM, ids=lambda c: str(c[0]))
def test_torch_sum(case):
    k, expected = case
    x = np.array(RAND_P[:k], dtype=np.float32)
    assert float(peers.torch_sum(x)) == expected


# All k/B, B = 1..100, as float32; y = (i * 7919) % 3 == 0.  binary_calibration_error(n_bins=...)
# under the default x86-64 dispatch (AVX512 here) and under ATEN_CPU_CAPABILITY=default:
# torchmetrics' own number depends on the CPU dispatch, through the linspace edges.
TM_GRID_FMA = [
    (10, 0.28493621945381165),
    (23, 0.2868001163005829),
    (41, 0.2866010069847107),
    (72, 0.286935031414032),
]
TM_GRID_DEFAULT = [
    (10, 0.28493621945381165),
    (23, 0.2868001461029053),
    (41, 0.2866009771823883),
    (72, 0.2869350016117096),
]


def _grid():
    p = [k / b for b in range(1, 101) for k in range(b + 1)]
    y = [int((i * 7919) % 3 == 0) for i in range(len(p))]
    return p, y


@pytest.mark.parametrize("fma, pinned", [(True, TM_GRID_FMA), (False, TM_GRID_DEFAULT)])
def test_torchmetrics_edges_depend_on_dispatch(fma, pinned):
    p, y = _grid()
    for n_bins, expected in pinned:
        assert (
            float(peers.torchmetrics_binary_calibration_error(p, y, n_bins=n_bins, fma=fma))
            == expected
        )
    assert dict(TM_GRID_FMA)[23] != dict(TM_GRID_DEFAULT)[23]


# (data, bins, input form, value) from netcal.metrics.ECE(bins=...).measure(X, y);
# form: 1d = X is p, 2col = X is [1 - p, p], quantile = equal_intervals=False, mc = MC_P
NETCAL = [
    ("edge", 10, "1d", 0.19999999999999998),
    ("edge", 10, "2col", 0.19999999999999998),
    ("edge", 5, "1d", 0.15833333333333338),
    ("edge", 5, "2col", 0.15833333333333338),
    ("edge", 3, "1d", 0.10833333333333334),
    ("edge", 3, "2col", 0.10833333333333334),
    ("edge", 15, "1d", 0.18749999999999994),
    ("edge", 15, "2col", 0.18749999999999994),
    ("edge", 4, "quantile", 0.1083333333333334),
    ("r2", 10, "1d", 0.1265),
    ("r2", 10, "2col", 0.1265),
    ("r2", 5, "1d", 0.07200000000000004),
    ("r2", 5, "2col", 0.07200000000000004),
    ("r2", 3, "1d", 0.09099999999999996),
    ("r2", 3, "2col", 0.09099999999999996),
    ("r2", 15, "1d", 0.21550000000000002),
    ("r2", 15, "2col", 0.21550000000000002),
    ("r2", 4, "quantile", 0.10699999999999998),
    ("rand", 10, "1d", 0.23316309166587249),
    ("rand", 10, "2col", 0.23316309166587249),
    ("rand", 5, "1d", 0.12311872730467951),
    ("rand", 5, "2col", 0.12311872730467951),
    ("rand", 3, "1d", 0.1325028317088893),
    ("rand", 3, "2col", 0.1325028317088893),
    ("rand", 15, "1d", 0.299511963134182),
    ("rand", 15, "2col", 0.299511963134182),
    ("rand", 4, "quantile", 0.14518077921728836),
    ("mc", 10, "mc", 0.1037037037037037),
    ("mc", 5, "mc", 0.09814814814814815),
    ("mc", 3, "mc", 0.07592592592592592),
]


@pytest.mark.parametrize("case", NETCAL, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_netcal_ece(case):
    name, bins, form, expected = case
    if form == "mc":
        X, y, kwargs = np.array(MC_P), np.array(MC_Y), {}
    else:
        p, y = BINARY[name]
        p, y = np.array(p), np.array(y)
        X = np.stack([1 - p, p], axis=1) if form == "2col" else p
        kwargs = {"equal_intervals": False} if form == "quantile" else {}
    if expected == "ValueError":  # duplicate quantile edges: scipy refuses them
        with pytest.raises(ValueError):
            peers.netcal_ece(X, y, bins=bins, **kwargs)
    else:
        assert peers.netcal_ece(X, y, bins=bins, **kwargs) == expected


# (data, num_bins, split_strategy, value) from mapie expected_calibration_error(y, p, ...)
MAPIE_ECE = [
    ("edge", 1, "uniform", 0.0),
    ("edge", 1, "quantile", 0.0),
    ("edge", 1, "array split", 0.008333333333333304),
    ("edge", 2, "uniform", 0.008333333333333184),
    ("edge", 2, "quantile", 0.008333333333333184),
    ("edge", 2, "array split", 0.04583333333333336),
    ("edge", 5, "uniform", 0.12916666666666668),
    ("edge", 5, "quantile", 0.1083333333333333),
    ("edge", 5, "array split", 0.1625),
    ("edge", 10, "uniform", 0.13749999999999998),
    ("edge", 10, "quantile", 0.16666666666666666),
    ("edge", 10, "array split", 0.2208333333333333),
    ("edge", 11, "uniform", 0.2208333333333333),
    ("edge", 11, "quantile", 0.24166666666666667),
    ("edge", 11, "array split", 0.2208333333333333),
    ("edge", 50, "uniform", 0.24166666666666667),
    ("edge", 50, "quantile", 0.2416666666666666),
    ("edge", 50, "array split", "ValueError"),
    ("r2", 1, "uniform", 0.0),
    ("r2", 1, "quantile", 0.0),
    ("r2", 1, "array split", 0.068),
    ("r2", 2, "uniform", 0.06800000000000005),
    ("r2", 2, "quantile", 0.06800000000000005),
    ("r2", 2, "array split", 0.068),
    ("r2", 5, "uniform", 0.10699999999999996),
    ("r2", 5, "quantile", 0.10699999999999996),
    ("r2", 5, "array split", 0.098),
    ("r2", 10, "uniform", 0.1355),
    ("r2", 10, "quantile", 0.15599999999999997),
    ("r2", 10, "array split", 0.11399999999999999),
    ("r2", 11, "uniform", 0.12150000000000002),
    ("r2", 11, "quantile", 0.127),
    ("r2", 11, "array split", 0.13399999999999998),
    ("r2", 50, "uniform", 0.275),
    ("r2", 50, "quantile", 0.2935),
    ("r2", 50, "array split", "ValueError"),
    ("rand", 1, "uniform", "nan"),
    ("rand", 1, "quantile", 0.01961901161452051),
    ("rand", 1, "array split", 0.12311872730467956),
    ("rand", 2, "uniform", 0.12311872730467956),
    ("rand", 2, "quantile", 0.12442666141231425),
    ("rand", 2, "array split", 0.12311872730467964),
    ("rand", 5, "uniform", 0.13600149486007188),
    ("rand", 5, "quantile", 0.14648871332492305),
    ("rand", 5, "array split", 0.16997813785956187),
    ("rand", 10, "uniform", 0.27414815758014954),
    ("rand", 10, "quantile", 0.17583701130828422),
    ("rand", 10, "array split", 0.16997813785956187),
    ("rand", 11, "uniform", 0.23316309166587246),
    ("rand", 11, "quantile", 0.22364709152219645),
    ("rand", 11, "array split", 0.1699781378595619),
    ("rand", 50, "uniform", 0.3451059631455316),
    ("rand", 50, "quantile", 0.39571325476240543),
    ("rand", 50, "array split", "ValueError"),
]

# (num_bins, split_strategy, value) from mapie top_label_ece(MC_Y, MC_P, ...)
MAPIE_TOP = [
    (2, "uniform", 0.1560493827160494),
    (2, "quantile", 0.20543209876543211),
    (2, "array split", 0.15604938271604937),
    (3, "uniform", 0.17456790123456792),
    (3, "quantile", 0.23209876543209876),
    (3, "array split", 0.1634567901234568),
    (5, "uniform", 0.17456790123456792),
    (5, "quantile", 0.23950617283950618),
    (5, "array split", 0.2123456790123457),
    (10, "uniform", 0.2617283950617284),
    (10, "quantile", 0.2950617283950618),
    (10, "array split", "ValueError"),
    (11, "uniform", 0.23209876543209876),
    (11, "quantile", 0.2950617283950617),
    (11, "array split", "ValueError"),
]

# (num_bins, split_strategy, value) from expected_calibration_error(argmax == y, MC_P, ...)
MAPIE_ECE_2D = [
    (5, "uniform", 0.07592592592592601),
    (5, "quantile", 0.10370370370370376),
    (11, "uniform", 0.12592592592592594),
    (11, "quantile", 0.1703703703703704),
]


def _check_mapie(call, expected):
    if expected == "ValueError":  # "array split" with fewer scores than bins: an empty chunk
        with pytest.raises(ValueError):
            call()
    elif expected == "nan":  # no score in any bin: 0 / 0
        assert math.isnan(call())
    else:
        assert call() == expected


@pytest.mark.parametrize("case", MAPIE_ECE, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_mapie_expected_calibration_error(case):
    name, num_bins, strategy, expected = case
    p, y = BINARY[name]
    _check_mapie(
        lambda: peers.mapie_expected_calibration_error(
            np.array(y), np.array(p), num_bins=num_bins, split_strategy=strategy
        ),
        expected,
    )


@pytest.mark.parametrize("case", MAPIE_TOP, ids=lambda c: f"{c[0]}-{c[1]}")
def test_mapie_top_label_ece(case):
    num_bins, strategy, expected = case
    _check_mapie(
        lambda: peers.mapie_top_label_ece(
            np.array(MC_Y), np.array(MC_P), num_bins=num_bins, split_strategy=strategy
        ),
        expected,
    )


@pytest.mark.parametrize("case", MAPIE_ECE_2D, ids=lambda c: f"{c[0]}-{c[1]}")
def test_mapie_expected_calibration_error_2d(case):
    num_bins, strategy, expected = case
    correct = (np.argmax(MC_P, axis=1) == np.array(MC_Y)).astype(int)
    assert (
        peers.mapie_expected_calibration_error(
            correct, np.array(MC_P), num_bins=num_bins, split_strategy=strategy
        )
        == expected
    )


# ---- One small case per quirk, each value from the real peer ----


def test_quirk_sklearn_linspace_edge():
    # np.linspace(0, 1, 7)[5] == 0.8333333333333333 < 5/6: under (a, b] bins 5/6 leaves
    # the bin (4/6, 5/6] and joins 0.9 in the last bin: one bin, not two.
    prob_true, prob_pred, counts = peers.sklearn_calibration_curve(
        [1, 0], [0.8333333333333334, 0.9], n_bins=6
    )
    assert prob_pred.tolist() == [0.8666666666666667]
    assert prob_true.tolist() == [0.5]
    assert counts.tolist() == [2]


def test_quirk_torchmetrics_slot_for_one():
    # 0.95 in [0.9, 1.0) and 1.0 alone in slot n_bins: (|1 - .95| + |0 - 1|) / 2 in float32
    got = peers.torchmetrics_binary_calibration_error([0.95, 1.0], [1, 0], n_bins=10)
    assert float(got) == 0.5249999761581421


def test_quirk_netcal_clips_to_eps():
    # 0.0 and 1.0 become eps and 1 - eps: two perfect predictions score 2.2e-16, not 0
    assert (
        peers.netcal_ece(np.array([0.0, 1.0]), np.array([0, 1]), bins=10) == 2.220446049250313e-16
    )


def test_quirk_mapie_bin_of_exact_zeros():
    # num_bins=3 means edges 0, 0.5, 1: bin 0 holds the exact zeros, (0, 0.5] holds 0.05
    got = peers.mapie_expected_calibration_error(
        np.array([1, 1, 0]), np.array([0.0, 0.0, 0.05]), num_bins=3
    )
    assert got == 0.6833333333333332


def test_quirk_mapie_one_bin_is_zeros_only():
    # num_bins=1 means the single edge 0: no score above 0 is in any bin, 0 / 0
    got = peers.mapie_expected_calibration_error(
        np.array([1, 0, 1]), np.array([0.2, 0.5, 0.9]), num_bins=1
    )
    assert math.isnan(got)


def test_quirk_mapie_quantile_minimum_bin():
    # "quantile" with num_bins=2: edges min and max; bin 0 is the two 0.2's, bin 1 the rest
    got = peers.mapie_expected_calibration_error(
        np.array([0, 1, 1, 0, 1]),
        np.array([0.2, 0.2, 0.4, 0.6, 0.8]),
        num_bins=2,
        split_strategy="quantile",
    )
    assert got == 0.15999999999999998
