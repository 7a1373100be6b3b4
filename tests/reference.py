"""Independent numpy-only reference implementation of calibration metrics.

Used by the test suite to cross-check ``polars_calib``.  Deliberately written
without polars or the package itself, favouring readability over speed.
"""

import math
import statistics
from fractions import Fraction

import numpy as np

EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------------
# Binning
# --------------------------------------------------------------------------


def uniform_edges(n_bins):
    """Uniform bin edges 0, 1/B, ..., 1; each edge is the correctly rounded k/B."""
    return np.arange(n_bins + 1) / n_bins


def _edges(p, n_bins, strategy):
    """Bin edges for the given strategy ("uniform" or "quantile")."""
    if strategy == "uniform":
        return uniform_edges(n_bins)
    if strategy == "quantile":
        return np.quantile(np.asarray(p, dtype=np.float64), np.arange(n_bins + 1) / n_bins)
    raise ValueError(f"unknown strategy {strategy!r}")


def _side(closed):
    """searchsorted side for right-closed (a, b] or left-closed [a, b) bins."""
    if closed == "right":
        return "left"
    if closed == "left":
        return "right"
    raise ValueError(f"unknown closed {closed!r}")


def bin_ids(p, n_bins, strategy="uniform", closed="right"):
    """0-based bin id of every probability; right-closed (a, b] or left-closed [a, b)."""
    p = np.asarray(p, dtype=np.float64)
    inner = _edges(p, n_bins, strategy)[1:-1]
    return np.searchsorted(inner, p, side=_side(closed)).astype(np.int64)


def _weights(p, weight):
    """Weight vector as float64 (ones when weight is None)."""
    if weight is None:
        return np.ones(len(p), dtype=np.float64)
    return np.asarray(weight, dtype=np.float64)


def bin_stats(p, y, n_bins, strategy="uniform", closed="right", weight=None):
    """Per-bin total weight, row count, weighted sum of p and weighted sum of y."""
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = _weights(p, weight)
    ids = bin_ids(p, n_bins, strategy, closed)
    return {
        "weight": np.bincount(ids, weights=w, minlength=n_bins),
        "count": np.bincount(ids, minlength=n_bins),
        "sum_p": np.bincount(ids, weights=w * p, minlength=n_bins),
        "sum_y": np.bincount(ids, weights=w * y, minlength=n_bins),
    }


# --------------------------------------------------------------------------
# Binary metrics
# --------------------------------------------------------------------------


def calibration_error(p, y, n_bins=15, strategy="uniform", closed="right", norm="l1", weight=None):
    """Binned calibration error (l1 = ECE, l2 = RMS-CE, max = MCE); nan if total weight is 0."""
    s = bin_stats(p, y, n_bins, strategy, closed, weight)
    W = s["weight"].sum()
    if W == 0:
        return float("nan")
    ok = s["weight"] > 0
    wb = s["weight"][ok]
    gap = s["sum_y"][ok] / wb - s["sum_p"][ok] / wb
    if norm == "l1":
        return float(np.sum(wb / W * np.abs(gap)))
    if norm == "l2":
        return float(np.sqrt(np.sum(wb / W * gap**2)))
    if norm == "max":
        return float(np.max(np.abs(gap)))
    raise ValueError(f"unknown norm {norm!r}")


def brier(p, y, weight=None):
    """Weighted mean squared difference between p and y."""
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = _weights(p, weight)
    return float(np.sum(w * (p - y) ** 2) / np.sum(w))


def log_loss(p, y, weight=None):
    """Weighted mean binary cross-entropy (natural log), p clipped to [eps, 1-eps]."""
    p = np.clip(np.asarray(p, dtype=np.float64), EPS, 1 - EPS)
    y = np.asarray(y, dtype=np.float64)
    w = _weights(p, weight)
    loss = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    return float(np.sum(w * loss) / np.sum(w))


# --------------------------------------------------------------------------
# Multi-class metrics (P has shape (n, K), y holds labels 0..K-1)
# --------------------------------------------------------------------------


def _confidence_correct(P, y):
    """Max probability per row and whether argmax (first max on ties) equals y."""
    P = np.asarray(P, dtype=np.float64)
    y = np.asarray(y)
    return P.max(axis=1), (P.argmax(axis=1) == y).astype(np.float64)


def _reduce(values, norm):
    """Mean over classes for l1/l2, max for max."""
    return float(np.max(values)) if norm == "max" else float(np.mean(values))


def confidence_error(P, y, **kw):
    """Calibration error of the max probability against argmax correctness."""
    conf, correct = _confidence_correct(P, y)
    return calibration_error(conf, correct, **kw)


def classwise_error(P, y, **kw):
    """Per-class one-vs-rest calibration error; mean (l1/l2) or max (max) over classes."""
    P = np.asarray(P, dtype=np.float64)
    y = np.asarray(y)
    errs = [calibration_error(P[:, j], y == j, **kw) for j in range(P.shape[1])]
    return _reduce(errs, kw.get("norm", "l1"))


def top_label_error(P, y, weight=None, **kw):
    """Confidence calibration error within each predicted class; unweighted mean or max."""
    P = np.asarray(P, dtype=np.float64)
    conf, correct = _confidence_correct(P, y)
    pred = P.argmax(axis=1)
    w = None if weight is None else np.asarray(weight, dtype=np.float64)
    errs = []
    for j in np.unique(pred):
        m = pred == j
        errs.append(
            calibration_error(conf[m], correct[m], weight=None if w is None else w[m], **kw)
        )
    return _reduce(errs, kw.get("norm", "l1"))


def multiclass_brier(P, y, weight=None):
    """Weighted mean over rows of the squared distance between P and one-hot(y)."""
    P = np.asarray(P, dtype=np.float64)
    onehot = np.eye(P.shape[1])[np.asarray(y)]
    w = _weights(P, weight)
    return float(np.sum(w * np.sum((P - onehot) ** 2, axis=1)) / np.sum(w))


def multiclass_log_loss(P, y, weight=None):
    """Weighted mean of -log P[i, y_i] with clipping to [eps, 1-eps]."""
    P = np.asarray(P, dtype=np.float64)
    p_true = np.clip(P[np.arange(len(P)), np.asarray(y)], EPS, 1 - EPS)
    w = _weights(P, weight)
    return float(-np.sum(w * np.log(p_true)) / np.sum(w))


# --------------------------------------------------------------------------
# Reliability diagram
# --------------------------------------------------------------------------


def wilson_interval(successes, n, confidence=0.95):
    """Wilson score interval (lower, upper) arrays; nan where n == 0."""
    s = np.atleast_1d(np.asarray(successes, dtype=np.float64))
    n = np.atleast_1d(np.asarray(n, dtype=np.float64))
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        phat = s / n
        denom = 1 + z**2 / n
        center = (phat + z**2 / (2 * n)) / denom
        half = z * np.sqrt(phat * (1 - phat) / n + z**2 / (4 * n**2)) / denom
    empty = n == 0
    return np.where(empty, np.nan, center - half), np.where(empty, np.nan, center + half)


def reliability_table(
    p, y, n_bins=10, strategy="uniform", closed="right", weight=None, confidence=0.95
):
    """Per-bin reliability diagram data with Wilson intervals on the observed fraction."""
    edges = _edges(p, n_bins, strategy)
    s = bin_stats(p, y, n_bins, strategy, closed, weight)
    W = s["weight"]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_p = np.where(W > 0, s["sum_p"] / W, np.nan)
        observed = np.where(W > 0, s["sum_y"] / W, np.nan)
    lo, hi = wilson_interval(np.where(W > 0, s["sum_y"], 0.0), W, confidence)
    return {
        "bin": np.arange(n_bins),
        "lower": edges[:-1],
        "upper": edges[1:],
        "count": s["count"],
        "mean_predicted": mean_p,
        "observed": observed,
        "gap": observed - mean_p,
        "observed_lower": lo,
        "observed_upper": hi,
    }


# --------------------------------------------------------------------------
# Exact (Fraction) calibration error for published worked examples
# --------------------------------------------------------------------------


def exact_calibration_error(p_fracs, y, n_bins, closed="right", norm="l1"):
    """Uniform-bin calibration error in exact Fraction arithmetic (l2 returns a float)."""
    p = [Fraction(v) for v in p_fracs]
    y = [Fraction(int(v)) for v in y]
    edges = [Fraction(k, n_bins) for k in range(1, n_bins)]
    bins = [[] for _ in range(n_bins)]
    for pi, yi in zip(p, y):
        if closed == "right":
            b = sum(1 for e in edges if pi > e)  # (a, b]: count edges strictly below
        else:
            b = sum(1 for e in edges if pi >= e)  # [a, b): count edges at or below
        bins[b].append((pi, yi))
    n = len(p)
    terms = [
        (Fraction(len(b), n), sum(yi for _, yi in b) / len(b) - sum(pi for pi, _ in b) / len(b))
        for b in bins
        if b
    ]
    if norm == "l1":
        return sum(w * abs(g) for w, g in terms)
    if norm == "l2":
        return math.sqrt(sum(w * g * g for w, g in terms))
    if norm == "max":
        return max(abs(g) for _, g in terms)
    raise ValueError(f"unknown norm {norm!r}")


# --------------------------------------------------------------------------
# Worked data
# --------------------------------------------------------------------------

# 10-item worked example; 3 uniform bins give ECE 0.241.
WORKED_10_P = [0.61, 0.39, 0.31, 0.76, 0.22, 0.59, 0.92, 0.83, 0.57, 0.41]
WORKED_10_Y = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0]


def _row(*tenths):
    """A tutorial row given in tenths."""
    return [Fraction(t, 10) for t in tenths]


_THIRD = [Fraction(1, 3)] * 3

# ECML-PKDD 2020 calibration tutorial, 30-item 3-class toy example.
TUTORIAL_P = [
    # items 1-10, true class 0
    _row(10, 0, 0),
    _row(9, 1, 0),
    _row(8, 1, 1),
    _row(7, 1, 2),
    _row(6, 3, 1),
    _row(4, 1, 5),
    list(_THIRD),
    list(_THIRD),
    _row(2, 4, 4),
    _row(1, 5, 4),
    # items 11-20, true class 1
    _row(8, 2, 0),
    _row(7, 0, 3),
    _row(5, 2, 3),
    _row(4, 4, 2),
    _row(4, 2, 4),
    _row(3, 4, 3),
    _row(2, 3, 5),
    _row(1, 6, 3),
    _row(1, 3, 6),
    _row(0, 2, 8),
    # items 21-30, true class 2
    _row(8, 2, 0),
    _row(8, 1, 1),
    _row(8, 0, 2),
    _row(6, 0, 4),
    _row(3, 0, 7),
    _row(2, 6, 2),
    _row(2, 4, 4),
    _row(0, 4, 6),
    _row(0, 3, 7),
    _row(0, 3, 7),
]
TUTORIAL_Y = [0] * 10 + [1] * 10 + [2] * 10


def tutorial_arrays():
    """Tutorial data as (P float64 array (30, 3), y int array)."""
    P = np.array([[float(v) for v in row] for row in TUTORIAL_P], dtype=np.float64)
    return P, np.array(TUTORIAL_Y, dtype=np.int64)
