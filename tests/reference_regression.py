"""Independent numpy-only reference for the calibration of regression predictions (issue #25).

Each measure follows its published definition; where a peer departs from it, a
``*_compat`` function reproduces the peer instead (``ut_*`` functions reproduce
uncertainty-toolbox's own computation), and the docstring says how the two differ.
No polars, no polars_calib, no peer and no scipy: the Gaussian CDF is ``math.erfc``,
its quantile function is :func:`norm_ppf` below.
``tests/test_reference_regression.py`` checks every function against the peers'
outputs stored in ``tests/data/regression/fixtures.json``; ``PEERS.md`` beside that
file lists the peers' quirks with their source lines.

Prediction forms: Gaussian (``mu``, ``sigma``), quantiles (``q`` of shape (n, L) at
``levels``), central intervals (``lower``, ``upper`` at a nominal ``level``),
ensembles (``x`` of shape (n, M)).
"""

import math
from fractions import Fraction

import numpy as np

SQRT2 = math.sqrt(2.0)
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
INV_SQRT_PI = 1.0 / math.sqrt(math.pi)

UT_GRID = np.linspace(0, 1, 100)
"""uncertainty-toolbox 0.1.1's levels ``np.linspace(0, 1, 100)`` (not k/99 in the last bit)."""


def _f64(a):
    return np.asarray(a, dtype=np.float64)


# --------------------------------------------------------------------------
# The standard normal: CDF through erfc, quantile function by Newton on it
# --------------------------------------------------------------------------


def norm_cdf(z):
    """Phi(z) = erfc(-z / sqrt 2) / 2, relatively accurate in the lower tail too.

    Rounding z / sqrt 2 costs about z^2 2^-53 relative: 7.3e-15 on |z| <= 8, 1.7e-13 at
    z = -37.5 (measured against mpmath in the tests).
    """
    return np.vectorize(lambda v: 0.5 * math.erfc(-v / SQRT2), otypes=[np.float64])(_f64(z))


def norm_sf(z):
    """1 - Phi(z) = erfc(z / sqrt 2) / 2, accurate in the upper tail."""
    return np.vectorize(lambda v: 0.5 * math.erfc(v / SQRT2), otypes=[np.float64])(_f64(z))


def norm_cdf_erf(z):
    """(1 + erf(z / sqrt 2)) / 2: loses the lower tail (3.2e-2 relative at z = -7.96, 0 at -8.5)."""
    return np.vectorize(lambda v: 0.5 * (1.0 + math.erf(v / SQRT2)), otypes=[np.float64])(_f64(z))


def norm_pdf(z):
    """phi(z)."""
    z = _f64(z)
    return INV_SQRT_2PI * np.exp(-(z * z) / 2.0)


# Acklam's rational approximation (relative error 1.15e-9), refined by Newton steps.
_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
      1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)  # fmt: skip
_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
      6.680131188771972e01, -1.328068155288572e01)  # fmt: skip
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
      -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)  # fmt: skip
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)


def _acklam_lower(p):
    """Approximate Phi^-1(p) for 0 < p <= 1/2."""
    if p < 0.02425:
        t = math.sqrt(-2.0 * math.log(p))
        num = ((((_C[0] * t + _C[1]) * t + _C[2]) * t + _C[3]) * t + _C[4]) * t + _C[5]
        return num / ((((_D[0] * t + _D[1]) * t + _D[2]) * t + _D[3]) * t + 1.0)
    q = p - 0.5
    r = q * q
    num = (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q
    return num / (((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0)


def _ppf_lower(p):
    """Phi^-1(p) for 0 < p <= 1/2: Acklam, then Newton steps on erfc (relative, to a few ulp)."""
    x = _acklam_lower(p)
    for _ in range(3):
        f = 0.5 * math.erfc(-x / SQRT2)
        x -= (f - p) / (INV_SQRT_2PI * math.exp(-x * x / 2.0))
    return x


def _ppf_scalar(p):
    if p != p or p < 0.0 or p > 1.0:
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return _ppf_lower(p)
    return -_ppf_lower(1.0 - p)  # 1 - p is exact for p >= 1/2 (Sterbenz)


def norm_ppf(p):
    """Phi^-1(p), the standard normal quantile function (-inf at 0, inf at 1)."""
    return np.vectorize(_ppf_scalar, otypes=[np.float64])(_f64(p))


def chi2_1_ppf(tau):
    """The chi-square(1) quantile at tau: Phi^-1((1 + tau) / 2) squared."""
    return norm_ppf(0.5 + _f64(tau) / 2.0) ** 2


# --------------------------------------------------------------------------
# PIT
# --------------------------------------------------------------------------


def pit_gaussian(y, mu, sigma):
    """u = F(y) = erfc(-z / sqrt 2) / 2 with z = (y - mu) / sigma."""
    return norm_cdf((_f64(y) - _f64(mu)) / _f64(sigma))


def rank_pit_bounds(y, x):
    """The randomized rank PIT's support [#{x<y}/(M+1), (#{x<=y}+1)/(M+1)] for ensembles.

    For a calibrated ensemble (y exchangeable with the M members) a draw uniform on
    this interval is uniform on [0, 1].
    """
    y, x = _f64(y), _f64(x)
    m = x.shape[1]
    below = np.sum(x < y[:, None], axis=1)
    at_or_below = np.sum(x <= y[:, None], axis=1)
    return below / (m + 1), (at_or_below + 1) / (m + 1)


def empirical_pit_bounds(y, x):
    """[#{x<y}/M, #{x<=y}/M]: a single point unless y ties a member; not uniform."""
    y, x = _f64(y), _f64(x)
    m = x.shape[1]
    return np.sum(x < y[:, None], axis=1) / m, np.sum(x <= y[:, None], axis=1) / m


# --------------------------------------------------------------------------
# Calibration curves (Kuleshov et al. 2018) and their scalars
# --------------------------------------------------------------------------


def quantile_curve(u, levels=UT_GRID):
    """Observed frequency mean(u <= p) at each level p (the quantile calibration curve)."""
    u = _f64(u)
    return np.array([np.mean(u <= p) for p in _f64(levels)])


def interval_curve(u, levels=UT_GRID):
    """Share of rows inside the central p-interval: mean(|2u - 1| <= p)."""
    a = np.abs(2.0 * _f64(u) - 1.0)
    return np.array([np.mean(a <= p) for p in _f64(levels)])


def quantile_curve_from_quantiles(y, q):
    """Observed mean(y <= q_tau) for each column (level) of predicted quantiles."""
    return np.mean(_f64(y)[:, None] <= _f64(q), axis=0)


def interval_coverage(y, lower, upper):
    """PICP of given intervals: mean(lower <= y <= upper) (bounds inclusive)."""
    y = _f64(y)
    return float(np.mean((_f64(lower) <= y) & (y <= _f64(upper))))


def ut_curve(mu, sigma, y, prop_type="interval", num_bins=100):
    """uncertainty-toolbox 0.1.1's ``get_proportion_lists``: (expected, observed).

    It works on r = (mu - y) / sigma, the PIT's sign flipped: the quantile curve is
    ``mean(r <= Phi^-1(p))`` = 1 - mean(u < 1 - p), the published curve mirrored
    through (1/2, 1/2).  The interval curve keeps ``Phi^-1(1/2 - p/2) <= r <=
    Phi^-1(1/2 + p/2)`` and is not mirrored.
    """
    exp = np.linspace(0, 1, num_bins)
    r = (_f64(mu) - _f64(y)) / _f64(sigma)
    if prop_type == "interval":
        lo, hi = norm_ppf(0.5 - exp / 2.0), norm_ppf(0.5 + exp / 2.0)
        obs = np.array([np.mean((a <= r) & (r <= b)) for a, b in zip(lo, hi)])
    elif prop_type == "quantile":
        obs = np.array([np.mean(r <= b) for b in norm_ppf(exp)])
    else:
        raise ValueError(f"unknown prop_type {prop_type!r}")
    return exp, obs


def ut_area_curve(mu, sigma, y, prop_type="interval", num_bins=100):
    """The observed curve as ``miscalibration_area`` computes it: |r| <= Phi^-1(1/2 + p/2)."""
    exp = np.linspace(0, 1, num_bins)
    r = (_f64(mu) - _f64(y)) / _f64(sigma)
    if prop_type == "interval":
        b, r = norm_ppf(0.5 + exp / 2.0), np.abs(r)
    else:
        b = norm_ppf(exp)
    return exp, np.array([np.mean(r <= t) for t in b])


def mace(exp, obs):
    """Mean absolute calibration error: mean over levels of |obs - exp|."""
    return float(np.mean(np.abs(_f64(exp) - _f64(obs))))


def rmsce(exp, obs):
    """Root-mean-squared calibration error: sqrt(mean over levels of (obs - exp)^2)."""
    return float(np.sqrt(np.mean(np.square(_f64(exp) - _f64(obs)))))


def miscalibration_area(exp, obs):
    """Area between the piecewise-linear curve (exp, obs) and the diagonal.

    On a segment where d = obs - exp keeps its sign it is the trapezoid
    dx |d_l + d_r| / 2; where d changes sign, the two triangles
    dx (d_l^2 + d_r^2) / (2 (|d_l| + |d_r|)).
    """
    x, d = _f64(exp), _f64(obs) - _f64(exp)
    dx, dl, dr = np.diff(x), d[:-1], d[1:]
    cross = dl * dr < 0
    with np.errstate(invalid="ignore", divide="ignore"):
        hourglass = dx * (dl * dl + dr * dr) / (2.0 * (np.abs(dl) + np.abs(dr)))
    trapezoid = dx * np.abs(dl + dr) / 2.0
    return float(np.sum(np.where(cross, hourglass, trapezoid)))


def kuleshov_score(u, levels, weights=None):
    """Kuleshov et al. (2018): sum_j w_j (p_j - phat_j)^2 with phat_j = mean(u <= p_j).

    The weights default to 1/m: on the uncertainty-toolbox grid the score is then RMSCE^2.
    """
    levels = _f64(levels)
    w = np.full(len(levels), 1.0 / len(levels)) if weights is None else _f64(weights)
    return float(np.sum(w * (levels - quantile_curve(u, levels)) ** 2))


# --------------------------------------------------------------------------
# Gaussian scores
# --------------------------------------------------------------------------


def sharpness(sigma):
    """The RMS of sigma, sqrt(mean sigma^2) (uncertainty-toolbox's sharpness)."""
    return float(np.sqrt(np.mean(_f64(sigma) ** 2)))


def nll_gaussian_rows(y, mu, sigma):
    """-log N(y; mu, sigma^2) = log(2 pi)/2 + log sigma + z^2/2, finite for every finite z."""
    sigma = _f64(sigma)
    z = (_f64(y) - _f64(mu)) / sigma
    return LOG_SQRT_2PI + np.log(sigma) + z * z / 2.0


def logs_normal_compat(y, mu, sigma):
    """scoringrules 0.10's ``logs_normal``: -log(phi(z) / sigma).

    phi(z) underflows to a subnormal for |z| > 37.5 (losing digits: 742.0422 instead of
    742.0439 at z = 38.5) and to 0 for |z| > 38.6 (the score becomes inf).
    """
    sigma = _f64(sigma)
    z = (_f64(y) - _f64(mu)) / sigma
    with np.errstate(divide="ignore"):
        return -np.log(INV_SQRT_2PI * np.exp(-(z**2) / 2) / sigma)


def crps_gaussian_rows(y, mu, sigma):
    """Closed-form CRPS of N(mu, sigma^2): sigma (z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi))."""
    sigma = _f64(sigma)
    z = (_f64(y) - _f64(mu)) / sigma
    return sigma * (z * (2.0 * norm_cdf(z) - 1.0) + 2.0 * norm_pdf(z) - INV_SQRT_PI)


def pinball(y, q, tau):
    """Pinball (check, quantile) loss per row: (1{y < q} - tau)(q - y)."""
    y, q = _f64(y), _f64(q)
    return ((y < q).astype(np.float64) - tau) * (q - y)


def interval_score(y, lower, upper, alpha):
    """Winkler / Gneiting-Raftery interval score of the central (1 - alpha) interval, per row."""
    y, lo, hi = _f64(y), _f64(lower), _f64(upper)
    return (hi - lo) + 2.0 / alpha * (lo - y) * (y < lo) + 2.0 / alpha * (y - hi) * (y > hi)


def weighted_interval_score(y, median, lower, upper, alphas, w_median=0.5, w_alpha=None):
    """Bracher et al. (2021) WIS per row: (w0 |y - m| + sum_k w_k IS_{alpha_k}) / (K + 1/2).

    ``lower`` and ``upper`` have one column per alpha; the default weights are
    w_k = alpha_k / 2 and w0 = 1/2 (then WIS approximates the CRPS).
    """
    return _wis(y, median, lower, upper, alphas, w_median, w_alpha, abs_median=True)


def weighted_interval_score_compat(y, median, lower, upper, alphas, w_median=0.5, w_alpha=None):
    """scoringrules 0.10's numpy-backend WIS: adds w0 * median instead of w0 |y - median|."""
    return _wis(y, median, lower, upper, alphas, w_median, w_alpha, abs_median=False)


def _wis(y, median, lower, upper, alphas, w_median, w_alpha, abs_median):
    y, m, alphas = _f64(y), _f64(median), _f64(alphas)
    w = alphas / 2.0 if w_alpha is None else _f64(w_alpha)
    total = np.zeros(len(y))
    for k, a in enumerate(alphas):
        total += w[k] * interval_score(y, _f64(lower)[:, k], _f64(upper)[:, k], a)
    total += w_median * (np.abs(y - m) if abs_median else m)
    return total / (len(alphas) + 0.5)


def ut_check_score(y, mu, sigma, start_q=0.01, end_q=0.99, resolution=99):
    """uncertainty-toolbox's check score: mean pinball loss of Gaussian quantiles over a grid."""
    y, mu, sigma = _f64(y), _f64(mu), _f64(sigma)
    levels = np.linspace(start_q, end_q, resolution)
    per = [np.mean(pinball(y, mu + sigma * norm_ppf(t), t)) for t in levels]
    return float(np.sum(per) / len(per))


def ut_interval_score(y, mu, sigma, start_p=0.01, end_p=0.99, resolution=99):
    """uncertainty-toolbox's interval score: mean interval score of central Gaussian intervals."""
    y, mu, sigma = _f64(y), _f64(mu), _f64(sigma)
    per = []
    for p in np.linspace(start_p, end_p, resolution):
        lo = mu + sigma * norm_ppf(0.5 - p / 2.0)
        hi = mu + sigma * norm_ppf(0.5 + p / 2.0)
        per.append(np.mean(interval_score(y, lo, hi, 1 - p)))
    return float(np.sum(per) / len(per))


# --------------------------------------------------------------------------
# Ensembles
# --------------------------------------------------------------------------


def crps_ensemble(y, x, estimator="energy"):
    """Ensemble CRPS per row: E|X - y| - E|X - X'| / 2 over the empirical distribution.

    ``energy``: the pair term over M^2 (scoringrules' "nrg" and "qd", properscoring);
    ``fair``: over M(M - 1) (Ferro 2014; scoringrules' "fair", and its "pwm").
    """
    y, x = _f64(y), _f64(x)
    m = x.shape[1]
    e1 = np.mean(np.abs(x - y[:, None]), axis=1)
    pair = np.sum(np.abs(x[:, :, None] - x[:, None, :]), axis=(1, 2))
    if estimator == "energy":
        return e1 - 0.5 * pair / (m * m)
    if estimator == "fair":
        return e1 - 0.5 * pair / (m * (m - 1))
    raise ValueError(f"unknown estimator {estimator!r}")


# --------------------------------------------------------------------------
# Intervals: coverage, width, coverage gap, size-stratified coverage, conformal
# --------------------------------------------------------------------------


def mean_width(lower, upper):
    """MPIW: mean(upper - lower); the caller refuses lower > upper."""
    return float(np.mean(_f64(upper) - _f64(lower)))


def mean_width_compat(lower, upper):
    """MAPIE 1.6's ``regression_mean_width_score``: mean |upper - lower| (reversed bounds count)."""
    return float(np.mean(np.abs(_f64(upper) - _f64(lower))))


def mean_interval_score_compat(y, lower, upper, confidence_level):
    """MAPIE 1.6's ``regression_mwi_score``: the mean Winkler score after swapping reversed bounds.

    It takes min and max of the two bounds ("undo any possible quantile crossing"), so a
    row with lower > upper is scored as if it were right; alpha = 1 - confidence_level.
    """
    lo = np.minimum(_f64(lower), _f64(upper))
    hi = np.maximum(_f64(lower), _f64(upper))
    return float(np.mean(interval_score(y, lo, hi, 1 - confidence_level)))


def coverage_gap(y, lower, upper, groups, confidence_level, weighted=False):
    """Mean over non-empty groups of |coverage_g - level| (weighted: by n_g / n)."""
    y, groups = _f64(y), np.asarray(groups)
    covered = (_f64(lower) <= y) & (y <= _f64(upper))
    gaps, sizes = [], []
    for g in np.unique(groups):
        m = groups == g
        gaps.append(abs(float(np.mean(covered[m])) - confidence_level))
        sizes.append(int(m.sum()))
    gaps, sizes = np.array(gaps), np.array(sizes)
    if weighted:
        return float(np.sum(sizes / len(y) * gaps))
    return float(np.mean(gaps))


def size_stratified_coverage(y, lower, upper, num_bins=3, order=None):
    """MAPIE's ``regression_ssc``: coverage in num_bins near-equal groups of rows ranked by width.

    Rows are ranked by width |upper - lower| with ties in row order (a stable sort), or
    in the given ``order``; MAPIE uses numpy's default ``np.argsort``, which does not
    promise an order among equal widths.  The ranked rows are split with
    ``np.array_split`` (the first n % num_bins groups one row larger).
    """
    y, lo, hi = _f64(y), _f64(lower), _f64(upper)
    if order is None:
        order = np.argsort(np.abs(hi - lo), kind="stable")
    return np.array(
        [np.mean((lo[i] <= y[i]) & (y[i] <= hi[i])) for i in np.array_split(order, num_bins)]
    )


def conformal_quantile(scores, alpha):
    """Split-conformal quantile: the ceil((n + 1)(1 - alpha))-th smallest score (exact ceil)."""
    s = np.sort(_f64(scores))
    k = math.ceil((len(s) + 1) * (1 - Fraction(str(alpha))))
    if k > len(s):
        return math.inf
    return float(s[k - 1])


# --------------------------------------------------------------------------
# sigma-binned measures: ENCE, UCE, QCE (netcal 1.4), PICP/MPIW, netcal's pinball
# --------------------------------------------------------------------------


def equal_width_bins(v, n_bins, value_range=None):
    """Bin index of v in n_bins equal-width bins over [lo, hi] (default: min and max of v).

    Edges are ``np.linspace(lo, hi, n_bins + 1)``; bins are left-closed [e_k, e_{k+1})
    and the last one closed (v == hi is in it), as numpy's histogramdd and scipy's
    binned_statistic_dd do.  Rows outside [lo, hi] get -1 (in no bin).
    """
    v = _f64(v)
    lo, hi = (float(np.min(v)), float(np.max(v))) if value_range is None else value_range
    edges = np.linspace(lo, hi, n_bins + 1)
    idx = np.searchsorted(edges, v, side="right") - 1
    idx[v == edges[-1]] = n_bins - 1
    idx[(v < edges[0]) | (v > edges[-1])] = -1
    return idx


def _bin_means(idx, n_bins, *values, sample_threshold=1):
    """Row count and mean of each value per bin; the mean is 0 where count < sample_threshold.

    That is netcal's ``_Miscalibration.binning`` (empty bins and bins under the threshold
    get mean NaN, then 0); the count is left as it is.
    """
    counts = np.bincount(idx[idx >= 0], minlength=n_bins).astype(np.float64)
    means = []
    for val in values:
        s = np.bincount(idx[idx >= 0], weights=_f64(val)[idx >= 0], minlength=n_bins)
        with np.errstate(invalid="ignore", divide="ignore"):
            means.append(np.where(counts >= max(sample_threshold, 1), s / counts, 0.0))
    return counts, means


def _binning_sigma(sigma):
    """netcal bins sqrt(sigma^2); in IEEE arithmetic that is sigma exactly (no over/underflow)."""
    sigma = _f64(sigma)
    return np.sqrt(np.square(sigma))


def ence(y, mu, sigma, n_bins=10, value_range=None, sample_threshold=1):
    """ENCE (Levi et al. 2022): mean over non-empty sigma-bins of |RMV_b - RMSE_b| / RMV_b.

    RMV_b = sqrt(mean_b sigma^2), RMSE_b = sqrt(mean_b (mu - y)^2); equal-width bins of
    sigma over its min and max (or ``value_range``).  netcal's ``sample_threshold`` drops
    the bins with fewer rows.
    """
    s = _binning_sigma(sigma)
    var = np.square(_f64(sigma))
    idx = equal_width_bins(s, n_bins, value_range)
    mse_rows = np.square(_f64(mu) - _f64(y))
    counts, (mv, mse) = _bin_means(idx, n_bins, var, mse_rows, sample_threshold=sample_threshold)
    ok = counts >= max(sample_threshold, 1)
    if not ok.any():
        return math.nan  # netcal: nanmean of no bin
    rmv, rmse = np.sqrt(mv[ok]), np.sqrt(mse[ok])
    return float(np.mean(np.abs(rmv - rmse) / rmv))


def uce(y, mu, sigma, n_bins=10, value_range=None, sample_threshold=1):
    """UCE (Laves et al. 2020): sum_b N_b / N |MSE_b - MV_b| over equal-width bins of sigma^2.

    N counts every row, in a bin or not, as netcal does: with a ``value_range`` that
    leaves rows out, the weights sum to less than 1 (QCE renormalizes; UCE does not).
    netcal's ``sample_threshold`` adds 0 for the bins with fewer rows (no renormalizing).
    """
    var = np.square(_f64(sigma))
    idx = equal_width_bins(var, n_bins, value_range)
    mse_rows = np.square(_f64(mu) - _f64(y))
    counts, (mv, mse) = _bin_means(idx, n_bins, var, mse_rows, sample_threshold=sample_threshold)
    ok = counts > 0
    return float(np.sum(counts[ok] / len(var) * np.abs(mse[ok] - mv[ok])))


def in_central_interval(y, mu, sigma, tau):
    """netcal's two-sided coverage test: (y - mu)^2 / sigma^2 <= chi2_1(tau), per level and row."""
    m = np.square(_f64(y) - _f64(mu)) / np.square(_f64(sigma))
    return m[None, :] <= chi2_1_ppf(_f64(tau))[:, None]


def qce(
    y,
    mu,
    sigma,
    levels,
    n_bins=10,
    marginal=True,
    value_range=None,
    reduce=True,
    sample_threshold=1,
):
    """netcal 1.4's QCE (Kuppers et al. 2022) per level, or their mean.

    Marginal: |mean(in_tau) - tau|.  Conditional: sum_b N_b |mean_b(in_tau) - tau| / sum_b N_b
    over equal-width sigma-bins (rows outside ``value_range`` drop out; the weights are
    renormalized over the rows inside).  netcal's ``sample_threshold`` sets the frequency
    of a bin with fewer rows to 0 and keeps its weight: such a bin adds N_b tau.
    """
    levels = _f64(levels)
    inside = in_central_interval(y, mu, sigma, levels).astype(np.float64)
    if marginal:
        per = np.abs(np.mean(inside, axis=1) - levels)
    else:
        idx = equal_width_bins(_binning_sigma(sigma), n_bins, value_range)
        counts, freqs = _bin_means(idx, n_bins, *inside, sample_threshold=sample_threshold)
        ok = counts > 0
        if not ok.any():  # no row in range: undefined (the package gives null)
            return float("nan") if reduce else np.full(len(levels), np.nan)
        per = np.array(
            [
                np.sum(counts[ok] * np.abs(f[ok] - t)) / np.sum(counts[ok])
                for f, t in zip(freqs, levels)
            ]
        )
    return float(np.mean(per)) if reduce else per


def picp_gaussian(y, mu, sigma, levels):
    """netcal's PICP per level: the share inside the central tau-interval (chi-square test)."""
    return np.mean(in_central_interval(y, mu, sigma, levels), axis=1)


def central_bounds(mu, sigma, tau):
    """Bounds of the central tau-interval: mu + sigma Phi^-1(alpha/2 and 1 - alpha/2)."""
    alpha = 1.0 - tau
    return (
        _f64(mu) + _f64(sigma) * norm_ppf(alpha / 2.0),
        _f64(mu) + _f64(sigma) * norm_ppf(1.0 - alpha / 2.0),
    )


def mpiw_gaussian(mu, sigma, levels):
    """netcal's MPIW per level: the mean width of the central tau-intervals."""
    out = []
    for t in _f64(levels):
        lo, hi = central_bounds(mu, sigma, t)
        out.append(np.mean(np.abs(hi - lo)))
    return np.array(out)


def netcal_pinball_compat(y, mu, sigma, levels):
    """netcal 1.4's ``PinballLoss`` per (level, row): not the textbook pinball loss.

    For the central tau-interval it takes the bound nearer to y (the upper one on a tie)
    and weights |y - bound| by 1 - tau if y is inside the interval (chi-square test),
    tau otherwise.  The textbook loss is :func:`pinball` at the quantile level.
    """
    y = _f64(y)
    inside = in_central_interval(y, mu, sigma, levels)
    out = []
    for j, t in enumerate(_f64(levels)):
        lo, hi = central_bounds(mu, sigma, t)
        near = np.where(np.abs(lo - y) < np.abs(hi - y), lo, hi)
        out.append(np.abs(y - near) * np.where(inside[j], 1.0 - t, t))
    return np.array(out)


# --------------------------------------------------------------------------
# SKCE for Gaussian predictions (Widmann et al.; CalibrationErrors.jl)
# --------------------------------------------------------------------------


def skce_normal(mu, sigma, y, target_scale=1.0):
    """Unbiased SKCE with kernel exp(-W2(P, P')) * exp(-(t - t')^2 / 2) on the targets.

    Mean over pairs i < j of exp(-W2) [k(y_i, y_j) - a k(a mu_i, a y_j) - b k(b y_i, b mu_j)
    + c k(c mu_i, c mu_j)], a = (1 + s_i^2)^-1/2, b = (1 + s_j^2)^-1/2,
    c = (1 + s_i^2 + s_j^2)^-1/2, W2 = sqrt((mu_i - mu_j)^2 + (s_i - s_j)^2) on the
    predictions as given; the target kernel sees y, mu and sigma times ``target_scale``.
    """
    mu, sigma, y = _f64(mu), _f64(sigma), _f64(y)
    t = target_scale
    k = lambda a, b: math.exp(-((a - b) ** 2) / 2.0)  # noqa: E731
    terms = []
    for i in range(len(mu)):
        for j in range(i + 1, len(mu)):
            w2 = math.hypot(mu[i] - mu[j], sigma[i] - sigma[j])
            m1, s1, y1 = t * mu[i], t * sigma[i], t * y[i]
            m2, s2, y2 = t * mu[j], t * sigma[j], t * y[j]
            a = 1.0 / math.sqrt(1.0 + s1 * s1)
            b = 1.0 / math.sqrt(1.0 + s2 * s2)
            c = 1.0 / math.sqrt(1.0 + s1 * s1 + s2 * s2)
            h = k(y1, y2) - a * k(a * m1, a * y2) - b * k(b * y1, b * m2) + c * k(c * m1, c * m2)
            terms.append(math.exp(-w2) * h)
    return float(np.mean(terms))
