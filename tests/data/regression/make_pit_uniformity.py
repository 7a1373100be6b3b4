"""Write ``pit_uniformity.json``: scipy's KS and chi-square tests of Gaussian PIT values.

Run once in the side environment (``/work/sidevenv-reg``, scipy 1.17.1; see PEERS.md):

    /work/sidevenv-reg/bin/python tests/data/regression/make_pit_uniformity.py

Inputs: the ``gaussian`` dataset of ``fixtures.json`` (every row and each group) and
two seeded samples written into the output (a calibrated one of 200 rows and a
miscalibrated one of 12). The PIT is scipy's ``norm.cdf((y - mu) / sigma)``; the
histogram's bins are right-closed, ``[0, 1/B], (1/B, 2/B], ...`` (edges ``k / B``).
The suite never imports scipy.
"""

import json
from pathlib import Path

import numpy as np
import scipy
from scipy import stats

HERE = Path(__file__).parent


def cases():
    data = json.loads((HERE / "fixtures.json").read_text())["datasets"]["gaussian"]
    y, mu, sigma, group = (np.asarray(data[k]) for k in ("y", "mu", "sigma", "group"))
    yield "gaussian", None, y, mu, sigma
    for g in (0, 1, 2):
        m = group == g
        yield "gaussian", g, y[m], mu[m], sigma[m]
    rng = np.random.default_rng(20261126)
    mu = np.round(rng.normal(0.0, 2.0, 200), 3)
    sigma = np.round(rng.uniform(0.5, 2.0, 200), 2)
    yield "calibrated200", None, np.round(mu + sigma * rng.normal(size=200), 4), mu, sigma
    mu, sigma = np.zeros(12), np.ones(12)
    yield "wide12", None, np.round(0.4 * rng.normal(size=12), 4), mu, sigma


def histogram(u, n_bins):
    inner = np.array([k / n_bins for k in range(1, n_bins)])
    return np.bincount(np.searchsorted(inner, u, side="left"), minlength=n_bins)


def main():
    inputs, results = {}, []
    for name, group, y, mu, sigma in cases():
        if name not in inputs and name != "gaussian":
            inputs[name] = {"y": y.tolist(), "mu": mu.tolist(), "sigma": sigma.tolist()}
        u = stats.norm.cdf((y - mu) / sigma)
        record = {"dataset": name, "group": group, "n": len(u)}
        for method in ("asymp", "exact"):
            test = stats.kstest(u, "uniform", method=method)
            record[f"ks_{method}"] = [float(test.statistic), float(test.pvalue)]
        for n_bins in (4, 10):
            test = stats.chisquare(histogram(u, n_bins))
            record[f"chi2_{n_bins}"] = [float(test.statistic), float(test.pvalue)]
        results.append(record)
    out = {
        "about": "scipy.stats.kstest(u, 'uniform', method=...) and chisquare(histogram) "
        "of the PIT u = norm.cdf((y - mu) / sigma); written by make_pit_uniformity.py",
        "versions": {"scipy": scipy.__version__, "numpy": np.__version__},
        "datasets": inputs,
        "records": results,
    }
    (HERE / "pit_uniformity.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
