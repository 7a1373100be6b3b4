"""Numpy-only re-implementations of the peers' calibration-error code, quirks included.

Each function follows its peer's code line by line, so that it returns the peer's
number bit for bit, without the peer installed.  They are the specification
for a ``compat=`` option; they are not meant to be good estimators.

Peers and versions read and checked (against the real packages, on random data,
probabilities on the edges k/B, exact 0.0 and 1.0, ties):

* scikit-learn 1.9.1   ``sklearn/calibration.py::calibration_curve``
* torchmetrics 1.9.0   ``torchmetrics/functional/classification/calibration_error.py``
  with torch 2.13.0+cpu (``torch.linspace``, ``torch.bucketize``, ``scatter_add_``,
  ``torch.sum`` on CPU)
* netcal 1.4.0         ``netcal/metrics/confidence/ECE.py`` and
  ``netcal/metrics/Miscalibration.py`` (``_Miscalibration``), with numpy's
  ``histogramdd`` and scipy's ``binned_statistic_dd``
* MAPIE 1.6.0          ``mapie/metrics/calibration.py`` (``_get_binning_groups``,
  ``_calc_bins``, ``expected_calibration_error``, ``top_label_ece``) and
  ``mapie/utils.py`` (``_check_split_strategy``, ``_check_number_bins``,
  ``_check_binary_zero_one``)

Quirks, in one line each (details in the functions):

* scikit-learn: edges ``np.linspace(0, 1, n_bins + 1)`` (or ``np.percentile`` of
  ``np.linspace(0, 1, n_bins + 1) * 100``); ``np.searchsorted(edges[1:-1], p)``
  (side "left"), so bins are right-closed ``(e[k-1], e[k]]`` and the first is
  ``[0, e[1]]``; empty bins are dropped from the returned arrays; no counts are
  returned.
* torchmetrics: ``torch.linspace(0, 1, n_bins + 1)`` in the confidences' dtype;
  ``torch.bucketize(conf, edges, right=True) - 1``, so bins are left-closed
  ``[e[k], e[k+1])`` and ``conf == 1.0`` lands in an extra slot ``n_bins`` of
  its own; arithmetic in the confidences' dtype (float32 for
  ``torch.tensor(<python floats>)``, always float32 for multiclass, whose
  confidences go through ``.float()``).
* netcal: default ``bins=10``; ``X`` clipped to ``[eps, 1 - eps]`` first (so 0 and
  1 never touch an edge); bins left-closed ``[e[k], e[k+1])`` in both
  ``np.histogramdd`` (counts) and ``binned_statistic_dd`` (means); a 1-D ``X``
  with at most two distinct labels is scored as P(y = 1) against ``y`` itself.
* MAPIE: ``num_bins`` counts edges, not bins: ``np.linspace(0, 1, num_bins)``
  and ``np.digitize(score, edges, right=True)``, so bin 0 is ``score <= 0`` (exact
  zeros only), bins 1..num_bins-1 are right-closed of width ``1/(num_bins-1)``,
  and a score above the last edge is in no bin; with "quantile" the first edge
  is the minimum, so bin 0 holds exactly the scores equal to the minimum.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = [
    "mapie_expected_calibration_error",
    "mapie_top_label_ece",
    "netcal_ece",
    "sklearn_calibration_curve",
    "sklearn_calibration_curve_ece",
    "torch_linspace",
    "torch_sum",
    "torchmetrics_binary_calibration_error",
    "torchmetrics_multiclass_calibration_error",
]


# ==========================================================================
# scikit-learn: sklearn.calibration.calibration_curve (1.9.1)
# ==========================================================================


def _sklearn_pos_label(y_true, pos_label):
    """sklearn.utils.validation._check_pos_label_consistency, for the cases it accepts."""
    if pos_label is not None:
        return pos_label
    classes = np.unique(y_true)
    if classes.dtype.kind in "OUS" or not (
        np.array_equal(classes, [0, 1])
        or np.array_equal(classes, [-1, 1])
        or np.array_equal(classes, [0])
        or np.array_equal(classes, [-1])
        or np.array_equal(classes, [1])
    ):
        raise ValueError("y_true takes values other than {0, 1} or {-1, 1}: pass pos_label")
    return 1


def sklearn_calibration_curve(y_true, y_prob, *, pos_label=None, n_bins=5, strategy="uniform"):
    """``calibration_curve`` plus the bin counts it computes and does not return.

    Returns ``(prob_true, prob_pred, counts)``, each over the non-empty bins, in
    bin order.  ``prob_true`` and ``prob_pred`` are bit-identical to
    scikit-learn's; ``counts`` is its internal ``bin_total[nonzero]``.
    """
    y_true = np.asarray(y_true)
    y_prob = np.asarray(y_prob)
    if y_true.ndim != 1 or y_prob.ndim != 1 or len(y_true) != len(y_prob):
        raise ValueError("y_true and y_prob must be 1-D of equal length")
    pos_label = _sklearn_pos_label(y_true, pos_label)
    if y_prob.min() < 0 or y_prob.max() > 1:
        raise ValueError("y_prob has values outside [0, 1].")
    if len(np.unique(y_true)) > 2:
        raise ValueError("Only binary classification is supported.")
    y_true = y_true == pos_label

    if strategy == "quantile":
        quantiles = np.linspace(0, 1, n_bins + 1)
        bins = np.percentile(y_prob, quantiles * 100)  # method="linear"
    elif strategy == "uniform":
        bins = np.linspace(0.0, 1.0, n_bins + 1)
    else:
        raise ValueError("strategy must be 'uniform' or 'quantile'")

    # side="left": an edge value goes to the bin below, i.e. bins are (a, b]
    binids = np.searchsorted(bins[1:-1], y_prob)

    bin_sums = np.bincount(binids, weights=y_prob, minlength=n_bins)
    bin_true = np.bincount(binids, weights=y_true, minlength=n_bins)
    bin_total = np.bincount(binids, minlength=n_bins)

    nonzero = bin_total != 0
    prob_true = bin_true[nonzero] / bin_total[nonzero]
    prob_pred = bin_sums[nonzero] / bin_total[nonzero]
    return prob_true, prob_pred, bin_total[nonzero]


def sklearn_calibration_curve_ece(y_true, y_prob, *, pos_label=None, n_bins=5, strategy="uniform"):
    """ECE as a scikit-learn user builds it from ``calibration_curve``.

    ``sum(counts * |prob_true - prob_pred|) / n`` with the counts of the very bins
    ``calibration_curve`` used (right-closed, ``searchsorted`` on
    ``np.linspace`` edges).  Beware the common recipe
    ``np.histogram(y_prob, bins=n_bins, range=(0, 1))[0]``: ``np.histogram`` is
    left-closed, so with a probability on an inner edge its counts are not those
    of ``calibration_curve``'s bins and can even have a different number of
    non-empty bins.
    """
    prob_true, prob_pred, counts = sklearn_calibration_curve(
        y_true, y_prob, pos_label=pos_label, n_bins=n_bins, strategy=strategy
    )
    return float(np.sum(counts * np.abs(prob_true - prob_pred)) / len(y_prob))


# ==========================================================================
# torch CPU kernels used by torchmetrics (torch 2.13.0+cpu)
# ==========================================================================


def _round_exact(x: Fraction, dtype) -> np.floating:
    """Correctly rounded (nearest, ties to even) value of an exact rational."""
    if dtype == np.float64:
        return np.float64(float(x))  # Fraction.__float__ is correctly rounded
    # float32: x = step32 * k or 1 - step32 * k is exact in float64 for the sizes
    # used here (<= 35 significant bits), so one float64 -> float32 rounding is exact.
    d = float(x)
    if Fraction(d) != x:
        raise ValueError("value not exact in float64; n_bins too large for this emulation")
    return np.float32(d)


def torch_linspace(start, end, steps, dtype=np.float32, fma=True):
    """``torch.linspace(start, end, steps, dtype=...)`` on CPU, bit for bit.

    ATen's ``linspace_kernel`` (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp):
    ``step = (end - start) / (steps - 1)`` in ``dtype``; element ``i`` is
    ``start + step * i`` for ``i < steps // 2`` and ``end - step * (steps - i - 1)``
    otherwise.  In the torch 2.13.0+cpu x86-64 wheel the AVX2 and AVX512 builds
    of this kernel evaluate each of these as one fused multiply-add (a single
    rounding): ``fma=True``.  Under ``ATEN_CPU_CAPABILITY=default`` they are a
    rounded product then a rounded sum: ``fma=False``.  Checked against torch
    for steps 2..1001 in float32 and float64, both ways.  Neither is
    ``np.linspace`` (``start + i * step`` in float64, last element set to ``end``).
    """
    dtype = np.dtype(dtype).type
    start, end = dtype(start), dtype(end)
    if steps == 1:
        return np.array([start], dtype=dtype)
    step = dtype(end - start) / dtype(steps - 1)
    half = steps // 2
    out = np.empty(steps, dtype=dtype)
    if not fma:
        for i in range(steps):
            out[i] = (
                dtype(start + dtype(step * dtype(i)))
                if i < half
                else dtype(end - dtype(step * dtype(steps - i - 1)))
            )
        return out
    s, a, b = Fraction(float(step)), Fraction(float(start)), Fraction(float(end))
    for i in range(steps):
        exact = a + s * i if i < half else b - s * (steps - i - 1)
        out[i] = _round_exact(exact, dtype)
    return out


def _ceil_log2(x: int) -> int:
    """ATen native/cpu/utils.h CeilLog2."""
    if x <= 2:
        return 1
    return int(x - 1).bit_length()


def _multi_row_sum(rows, dtype):
    """ATen SumKernel.cpp multi_row_sum: rows has shape (size, nrows, lanes)."""
    size, nrows = rows.shape[0], rows.shape[1:]
    num_levels = 4
    level_power = max(4, _ceil_log2(size) // num_levels)
    level_step = 1 << level_power
    level_mask = level_step - 1
    acc = [np.zeros(nrows, dtype=dtype) for _ in range(num_levels)]
    i = 0
    while i + level_step <= size:
        for _ in range(level_step):
            acc[0] = (acc[0] + rows[i]).astype(dtype)
            i += 1
        for j in range(1, num_levels):
            acc[j] = (acc[j] + acc[j - 1]).astype(dtype)
            acc[j - 1] = np.zeros(nrows, dtype=dtype)
            if i & (level_mask << (j * level_power)):
                break
    while i < size:
        acc[0] = (acc[0] + rows[i]).astype(dtype)
        i += 1
    for j in range(1, num_levels):
        acc[0] = (acc[0] + acc[j]).astype(dtype)
    return acc[0]


def _row_sum(items, dtype):
    """ATen SumKernel.cpp row_sum with ilp_factor 4: items has shape (size, *lanes)."""
    ilp = 4
    size = items.shape[0]
    size_ilp = size // ilp
    lanes = items.shape[1:]
    blocks = items[: size_ilp * ilp].reshape((size_ilp, ilp, *lanes))
    partial = _multi_row_sum(blocks, dtype)  # shape (ilp, *lanes)
    p0 = partial[0]
    for i in range(size_ilp * ilp, size):
        p0 = (p0 + items[i]).astype(dtype)
    for k in range(1, ilp):
        p0 = (p0 + partial[k]).astype(dtype)
    return p0


def torch_sum(x, simd_bytes=32):
    """``torch.sum`` of a contiguous 1-D float tensor on CPU, bit for bit.

    ATen cascade_sum (aten/src/ATen/native/cpu/SumKernel.cpp), accumulating in the
    tensor's own dtype.  ``simd_bytes`` is the width of ``at::vec::Vectorized``
    in the sum kernel: 32 bytes (8 float32 lanes) under AVX2 and under the
    default dispatch, and also on an AVX512 machine (checked: torch 2.13.0+cpu
    reporting capability "AVX512" sums like 32 bytes; a kernel compiled for 64
    bytes would need ``simd_bytes=64``).  With fewer elements than one vector
    it is a 4-way interleaved scalar sum; otherwise a lane-wise sum of whole
    vectors, then the tail, then the lanes in order.
    """
    x = np.asarray(x)
    dtype = x.dtype.type
    lanes = simd_bytes // x.dtype.itemsize
    n = len(x)
    if n >= lanes:  # vectorized_inner_sum
        m = n // lanes
        vec_acc = _row_sum(x[: m * lanes].reshape(m, lanes), dtype)
        final = dtype(0)
        for k in range(m * lanes, n):
            final = dtype(final + x[k])
        for k in range(lanes):
            final = dtype(final + vec_acc[k])
    else:  # scalar_inner_sum
        final = dtype(_row_sum(x.reshape(n, 1), dtype)[0])
    return dtype(dtype(0) + final)  # CastStoreAccumulate into a zero-filled output


def _scatter_add(n_slots, index, src, dtype):
    """``torch.zeros(n_slots).scatter_add_(0, index, src)`` on CPU: in input order."""
    out = np.zeros(n_slots, dtype=dtype)
    np.add.at(out, index, src.astype(dtype))
    return out


# ==========================================================================
# torchmetrics (1.9.0): binary / multiclass calibration_error
# ==========================================================================


def _torchmetrics_ce_compute(confidences, accuracies, n_bins, norm, simd_bytes, fma):
    """torchmetrics ``_ce_compute`` with ``_binning_bucketize`` (debias=False)."""
    dtype = confidences.dtype.type
    accuracies = accuracies.astype(dtype)
    bin_boundaries = torch_linspace(0, 1, n_bins + 1, dtype=dtype, fma=fma)
    if norm not in {"l1", "l2", "max"}:
        raise ValueError(
            f"Argument `norm` is expected to be one of 'l1', 'l2', 'max' but got {norm}"
        )

    # torch.bucketize(right=True): index i with b[i-1] <= x < b[i]; minus 1 gives a
    # left-closed [b[k], b[k+1]) bin, and x == 1.0 gets slot n_bins of its own
    # (the tensors have len(bin_boundaries) = n_bins + 1 slots).
    indices = np.searchsorted(bin_boundaries, confidences, side="right") - 1
    slots = n_bins + 1
    count_bin = _scatter_add(slots, indices, np.ones_like(confidences), dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf_bin = _scatter_add(slots, indices, confidences, dtype)
        conf_bin = np.nan_to_num(conf_bin / count_bin)  # 0/0 -> 0
        acc_bin = _scatter_add(slots, indices, accuracies, dtype)
        acc_bin = np.nan_to_num(acc_bin / count_bin)
    prop_bin = count_bin / torch_sum(count_bin, simd_bytes)

    if norm == "l1":
        return torch_sum(np.abs(acc_bin - conf_bin) * prop_bin, simd_bytes)
    if norm == "max":
        return dtype(np.max(np.abs(acc_bin - conf_bin)))
    ce = torch_sum(((acc_bin - conf_bin) * (acc_bin - conf_bin)) * prop_bin, simd_bytes)
    # NOTE: ce is bit-exact, but torch.sqrt on CPU is not correctly rounded
    # (about 20% of float32 inputs, 1% of float64, come out 1 ulp off np.sqrt),
    # so the l2 result can differ from torchmetrics' by 1 ulp.
    return np.sqrt(ce) if ce > 0 else 0  # torchmetrics returns torch.tensor(0) (int64)


def _sigmoid(x):
    # NOTE: torch's vectorised sigmoid/softmax are not emulated bit for bit.
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


def torchmetrics_binary_calibration_error(
    preds,
    target,
    n_bins=15,
    norm="l1",
    ignore_index=None,
    *,
    dtype=np.float32,
    simd_bytes=32,
    fma=True,
):
    """``torchmetrics.functional.classification.binary_calibration_error``.

    ``dtype`` is the dtype of the ``preds`` tensor: float32 for
    ``torch.tensor(<python floats>)`` (the peer's default), float64 for
    ``torch.from_numpy(<float64 array>)``.  The confidence is ``preds`` itself
    (P(y = 1)), the accuracy is ``target``.  Returns a numpy scalar of ``dtype``.
    Outside [0, 1] torchmetrics applies a sigmoid, emulated here only
    approximately.  ``simd_bytes`` and ``fma`` describe the torch build, see
    :func:`torch_sum` and :func:`torch_linspace`; the defaults are the x86-64
    wheel under its AVX2 or AVX512 dispatch.  Bit for bit for norm "l1" and
    "max"; "l2" to 1 ulp (torch's sqrt).
    """
    preds = np.asarray(preds, dtype=dtype).ravel()
    target = np.asarray(target).ravel()
    if ignore_index is not None:
        keep = target != ignore_index
        preds, target = preds[keep], target[keep]
    if not np.all((preds >= 0) & (preds <= 1)):
        preds = _sigmoid(preds)
    return _torchmetrics_ce_compute(preds, target, n_bins, norm, simd_bytes, fma)


def torchmetrics_multiclass_calibration_error(
    preds,
    target,
    num_classes,
    n_bins=15,
    norm="l1",
    ignore_index=None,
    *,
    dtype=np.float32,
    simd_bytes=32,
    fma=True,
):
    """``torchmetrics.functional.classification.multiclass_calibration_error``.

    Confidence = row max of ``preds`` (in ``dtype``), prediction = first argmax
    (``Tensor.max(dim=1)``); then ``confidences.float()``: the binning and all
    arithmetic are float32 whatever ``dtype`` is.  Rows with
    ``target == ignore_index`` are dropped first.
    """
    preds = np.asarray(preds, dtype=dtype)
    target = np.asarray(target).ravel()
    if preds.ndim != 2 or preds.shape[1] != num_classes:
        raise ValueError("preds must have shape (N, num_classes)")
    if ignore_index is not None:
        keep = target != ignore_index
        preds, target = preds[keep], target[keep]
    if not np.all((preds >= 0) & (preds <= 1)):
        # NOTE: approximate; torch's softmax is not emulated bit for bit.
        e = np.exp(preds - preds.max(axis=1, keepdims=True))
        preds = (e / e.sum(axis=1, keepdims=True)).astype(dtype)
    confidences = preds.max(axis=1).astype(np.float32)
    predictions = preds.argmax(axis=1)  # first maximum, as Tensor.max(dim=1)
    accuracies = (predictions == target).astype(np.float32)
    return _torchmetrics_ce_compute(confidences, accuracies, n_bins, norm, simd_bytes, fma)


# ==========================================================================
# netcal (1.4.0): netcal.metrics.ECE(bins=10).measure(X, y)
# ==========================================================================


def _netcal_bin_means(x, values, edges):
    """scipy.stats.binned_statistic_dd(x, values, 'mean', bins=[edges]), 1-D, core bins."""
    nbin = len(edges) + 1  # outlier bins 0 and nbin - 1
    binnumber = np.digitize(x, edges)  # left-closed: edges[i-1] <= x < edges[i]
    dedges_min = np.diff(edges).min()
    if dedges_min == 0:
        raise ValueError("The smallest edge difference is numerically 0.")
    decimal = int(-np.log10(dedges_min)) + 6
    on_edge = np.where((x >= edges[-1]) & (np.around(x, decimal) == np.around(edges[-1], decimal)))[
        0
    ]
    binnumber[on_edge] -= 1
    result = np.full(nbin, np.nan)
    flatcount = np.bincount(binnumber)
    a = flatcount.nonzero()
    flatsum = np.bincount(binnumber, np.asarray(values, dtype=np.float64))
    result[a] = flatsum[a] / flatcount[a]
    return result[1:-1]


def netcal_ece(X, y, bins=10, equal_intervals=True, sample_threshold=1):
    """``netcal.metrics.ECE(bins, equal_intervals, sample_threshold=...).measure(X, y)``.

    Classification mode, not batched, no uncertainty, float64 ``X``.

    * ``X`` of shape (n,) or (n, 1): P(y = 1); (n, 2): column 1 is used; (n, C):
      confidence = row max, accuracy = first argmax == y.  Which one applies is
      decided by ``len(np.unique(y)) <= 2`` (then ``y`` itself is the accuracy),
      not by the shape of ``X``.
    * ``X`` is clipped to ``[eps, 1 - eps]`` (``eps = np.finfo(X.dtype).eps``) before
      anything else.
    * Edges ``np.linspace(0, 1, bins + 1)``; with ``equal_intervals=False``
      ``np.quantile(X, edges)`` with the first and last forced to 0 and 1 (scipy
      then refuses duplicate edges).  Bins are left-closed ``[e[k], e[k+1])``.
    * Means of bins with fewer than ``sample_threshold`` samples are set to 0.
    * ``ECE = np.sum(|acc - conf| * (counts / total))``.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    y = np.squeeze(y) if y.ndim > 1 and 1 in y.shape[1:] else y
    if y.ndim == 2:
        y = y[:, -1] if y.shape[1] <= 2 else np.argmax(y, axis=1)
    epsilon = np.finfo(X.dtype).eps
    X = np.clip(X, epsilon, 1.0 - epsilon)
    if len(np.unique(y)) <= 2:
        matched = np.array(y)
        if X.shape[1] > 2:
            raise RuntimeError(
                "Asserted binary classification problem but retrieved more than 2 confidence dims."
            )
        if X.shape[1] == 2:
            X = X[:, 1:2]
    else:
        matched = np.argmax(X, axis=1) == y
        X = np.max(X, axis=1, keepdims=True)
    x = X[:, 0]

    edges = np.linspace(0.0, 1.0, bins + 1)
    if not equal_intervals:
        edges = np.quantile(x, q=edges, axis=0)
        edges[0] = 0.0
        edges[-1] = 1.0

    num_samples_hist, _ = np.histogramdd(X, bins=[edges])
    acc_hist = _netcal_bin_means(x, matched, edges)
    conf_hist = _netcal_bin_means(x, x, edges)
    hists = []
    for hist in (acc_hist, conf_hist):
        hist[num_samples_hist < sample_threshold] = np.nan
        hists.append(np.nan_to_num(hist, nan=0.0))
    acc_hist, conf_hist = hists

    total_samples = np.sum(np.sum(num_samples_hist, axis=0))
    deviation_map = np.abs(acc_hist - conf_hist)
    rel_samples_hist = num_samples_hist / total_samples
    miscalibration = np.sum(deviation_map * rel_samples_hist)
    return float(np.mean([miscalibration], axis=0))


# ==========================================================================
# MAPIE (1.6.0): mapie.metrics.calibration
# ==========================================================================


def _mapie_check_split_strategy(strategy):
    if strategy is None:
        strategy = "uniform"
    if strategy not in ["uniform", "quantile", "array split"]:
        raise ValueError("Please provide a valid splitting strategy.")
    return strategy


def _mapie_check_number_bins(num_bins):
    if isinstance(num_bins, int) is False:
        raise ValueError("Please provide a bin number as an integer.")
    if num_bins < 1:
        raise ValueError("Please provide a bin number greater than or equal to 1.")
    return num_bins


def _mapie_check_binary_zero_one(y_true):
    """mapie.utils._check_binary_zero_one: two values are mapped min -> 0, max -> 1.

    (MAPIE does it in place on the caller's array when ``column_or_1d`` returns a
    view; this copy does not.)  One distinct value is returned unchanged.
    """
    y_true = np.array(y_true).ravel()
    values = np.unique(y_true)
    if len(values) > 2 or (values.dtype.kind == "f" and np.any(values != np.round(values))):
        raise ValueError("Please provide y_true as a binary array.")
    if len(values) == 2 and not np.array_equal(values, [0, 1]):
        lo, hi = y_true == values.min(), y_true == values.max()
        y_true[lo] = 0
        y_true[hi] = 1
    return y_true


def _mapie_get_binning_groups(y_score, num_bins, strategy):
    if strategy == "quantile":
        quantiles = np.linspace(0, 1, num_bins)  # num_bins EDGES
        bins = np.percentile(y_score, quantiles * 100)  # bins[0] == min(y_score)
    elif strategy == "uniform":
        bins = np.linspace(0.0, 1.0, num_bins)  # num_bins EDGES
    else:  # "array split": chunks of the scores in their given (unsorted) order
        bin_groups = np.array_split(y_score, num_bins)
        bins = np.sort(np.array([bin_group.max() for bin_group in bin_groups[:-1]] + [np.inf]))
    return bins


def _mapie_calc_bins(y_true, y_score, num_bins, strategy):
    bins = _mapie_get_binning_groups(y_score, num_bins, strategy)
    # right=True: bins[i-1] < x <= bins[i]; bin 0 is x <= bins[0];
    # x > bins[-1] gets index num_bins and is counted nowhere.
    binned = np.digitize(y_score, bins, right=True)
    bin_accs = np.zeros(num_bins)
    bin_confs = np.zeros(num_bins)
    bin_sizes = np.zeros(num_bins)
    for b in range(num_bins):
        bin_sizes[b] = len(y_score[binned == b])
        if bin_sizes[b] > 0:
            bin_accs[b] = np.divide(np.sum(y_true[binned == b]), bin_sizes[b])
            bin_confs[b] = np.divide(np.sum(y_score[binned == b]), bin_sizes[b])
    return bins, bin_accs, bin_confs, bin_sizes


def mapie_expected_calibration_error(
    y_true, y_scores, num_bins=50, split_strategy=None, classwise=False, class_labels=None
):
    """``mapie.metrics.calibration.expected_calibration_error``.

    ``y_true`` is the 0/1 correctness of the prediction (or, for a 1-D score,
    the binary label); a 2-D ``y_scores`` is reduced by ``np.nanmax`` over
    columns.  ``sum(sizes * |acc - conf|) / sum(sizes)``: scores in no bin
    (above 1 with "uniform") are left out of the denominator as well.
    """
    split_strategy = _mapie_check_split_strategy(split_strategy)
    num_bins = _mapie_check_number_bins(num_bins)
    y_scores = np.asarray(y_scores)
    if classwise:
        if y_scores.ndim != 2:
            raise ValueError(
                "y_scores must be 2D of shape (n_samples, n_classes) when classwise=True."
            )
        if class_labels is None:
            raise ValueError("class_labels must be provided when classwise=True.")
        class_labels = np.asarray(class_labels)
        n_classes = y_scores.shape[1]
        ece = 0.0
        for c in range(n_classes):
            ece += mapie_expected_calibration_error(
                np.array(class_labels == c, dtype=int),
                y_scores[:, c],
                num_bins=num_bins,
                split_strategy=split_strategy,
            )
        return float(ece / n_classes)
    y_true_ = _mapie_check_binary_zero_one(y_true)
    if len(y_true_) != len(y_scores):
        raise ValueError("y_true and y_scores have different lengths")
    if np.any(np.isnan(y_scores)) or np.any(np.isinf(y_scores)):
        raise ValueError("y_scores contains NaN or inf")
    y_score = np.nanmax(y_scores, axis=1) if y_scores.ndim == 2 else y_scores.ravel()
    _, bin_accs, bin_confs, bin_sizes = _mapie_calc_bins(y_true_, y_score, num_bins, split_strategy)
    with np.errstate(invalid="ignore"):  # MAPIE warns and returns nan for 0 / 0
        return float(np.divide(np.sum(bin_sizes * np.abs(bin_accs - bin_confs)), np.sum(bin_sizes)))


def mapie_top_label_ece(
    y_true, y_scores, y_score_arg=None, num_bins=50, split_strategy=None, classes=None
):
    """``mapie.metrics.calibration.top_label_ece``.

    For each predicted class ``l`` (``np.nanargmax``, first maximum; mapped
    through ``classes`` if given), the binary ECE of the top score against
    ``y == l`` on the rows predicting ``l``, binned within those rows; the
    result is the UNWEIGHTED mean over the distinct predicted classes.
    """
    y_scores = np.asarray(y_scores)
    y_true = np.asarray(y_true).ravel()
    split_strategy = _mapie_check_split_strategy(split_strategy)
    num_bins = _mapie_check_number_bins(num_bins)
    if y_score_arg is None:
        y_score = np.nanmax(y_scores, axis=1)
        arg = np.nanargmax(y_scores, axis=1)
        y_score_arg = arg if classes is None else np.asarray(classes)[arg]
    else:
        y_score = y_scores.ravel()
        y_score_arg = np.asarray(y_score_arg).ravel()
    labels = np.unique(y_score_arg)
    ece = 0.0
    for label in labels:
        label_ind = np.where(label == y_score_arg)[0]
        y_true_ = np.array(y_true[label_ind] == label, dtype=int)
        ece += mapie_expected_calibration_error(
            y_true_, y_scores=y_score[label_ind], num_bins=num_bins, split_strategy=split_strategy
        )
    ece /= len(labels)
    return ece
