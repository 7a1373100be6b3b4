"""Calibration tests and decompositions with ECE, against ECE alone (issue 11's target).

Target: Spiegelhalter (Z and p), Hosmer-Lemeshow (uniform bins, statistic and p),
the debiased ECE, the Brier decomposition and the calibration/refinement losses of
Brier and log-loss, together with ECE, in at most 1.5x the time of ECE alone on 10M
rows. Side by side, in one process and one run:

frame       ``pc.summary(df, "p", "y", by=keys, n_bins=15, metrics=[...])``: one pass of
            sums per (group, bin) (the tests add 4 sums), then the finishers
expression  ``df.group_by(keys).agg(pc.ece(...), pc.spiegelhalter_p(...), ...)``
numpy       ``np.bincount`` of the same sums per (group, bin), finished in numpy (scipy
            for the tails when installed)

each for "ECE alone" and "ECE + all", for one group and 1,000 integer groups. Each time
is the best of ``--repeats`` runs, each started when the CPUs are idle (or after 10 s).

    python bench/diagnostics.py                 # 10M rows (a few minutes on 2 cores)
    python bench/diagnostics.py --rows 20000 --repeats 1 --no-wait   # a quick check

It prints a Markdown table. Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
import polars as pl
from benchmark import _wait_idle  # the same idle wait as the full benchmark (bench/ is on the path)

import polars_calib as pc

N_BINS = 15
ALL = [
    "ece",
    "spiegelhalter_z",
    "spiegelhalter_p",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "debiased_ece",
    "brier_decomposition",
    "calibration_loss",
    "refinement_loss",
    "log_loss_calibration_loss",
    "log_loss_refinement_loss",
]


def data(rows: int, groups: int) -> pl.DataFrame:
    """Probabilities with miscalibration that changes sign, and integer groups."""
    rng = np.random.default_rng(0)
    p = rng.random(rows)
    rate = np.clip(p + 0.25 * np.sin(2 * math.pi * p), 0.0, 1.0)
    g = rng.integers(0, groups, rows, dtype=np.int32)
    return pl.DataFrame({"g": g, "p": p, "y": (rng.random(rows) < rate).astype(np.int8)})


def expressions(everything: bool) -> list[pl.Expr]:
    ece = pc.ece("p", "y", n_bins=N_BINS).alias("ece")
    if not everything:
        return [ece]
    binned = {"n_bins": N_BINS}
    return [
        ece,
        pc.spiegelhalter_z("p", "y").alias("z"),
        pc.spiegelhalter_p("p", "y").alias("z_p"),
        pc.hosmer_lemeshow("p", "y", strategy="uniform", **binned).alias("hl"),
        pc.hosmer_lemeshow_p("p", "y", strategy="uniform", **binned).alias("hl_p"),
        pc.debiased_ece("p", "y", **binned).alias("debiased"),
        pc.brier_decomposition("p", "y", **binned).alias("parts"),
        pc.calibration_loss("p", "y", **binned).alias("brier_cl"),
        pc.refinement_loss("p", "y", **binned).alias("brier_rl"),
        pc.calibration_loss("p", "y", score="log_loss", **binned).alias("ll_cl"),
        pc.refinement_loss("p", "y", score="log_loss", **binned).alias("ll_rl"),
    ]


Tail = Callable[..., np.ndarray]


def _tails() -> tuple[Tail, Tail]:
    try:
        from scipy import stats
    except ImportError:  # the tails are a few values per group: plain Python will do

        def normal_sf(z: np.ndarray) -> np.ndarray:
            return np.array([0.5 * math.erfc(v / math.sqrt(2)) for v in np.atleast_1d(z)])

        def chi2_sf(x: np.ndarray, k: np.ndarray) -> np.ndarray:
            out = []
            for xv, kv in zip(np.atleast_1d(x), np.atleast_1d(k)):
                m, odd = int(kv) // 2, int(kv) % 2
                base = math.erfc(math.sqrt(xv / 2)) if odd else 0.0
                half = xv / 2
                out.append(
                    base
                    + sum(
                        math.exp(
                            -half + (i + odd / 2) * math.log(half) - math.lgamma(i + odd / 2 + 1)
                        )
                        for i in range(m)
                    )
                )
            return np.array(out)

        return normal_sf, chi2_sf
    return stats.norm.sf, stats.chi2.sf


NORMAL_SF, CHI2_SF = _tails()


def run_numpy(p: np.ndarray, y: np.ndarray, g: np.ndarray, groups: int, everything: bool) -> object:
    """The same statistics from per-(group, bin) sums, in numpy."""
    bins = np.clip(np.ceil(p * N_BINS).astype(np.int64) - 1, 0, N_BINS - 1)
    key = g.astype(np.int64) * N_BINS + bins
    size = groups * N_BINS

    def per_bin(values: np.ndarray | None) -> np.ndarray:
        return np.bincount(key, weights=values, minlength=size).reshape(groups, N_BINS)

    n, sum_p, sum_y = per_bin(None), per_bin(p), per_bin(y)
    total = n.sum(axis=1)
    ece = np.abs(sum_y - sum_p).sum(axis=1) / total
    if not everything:
        return ece
    one_minus_2p = 1 - 2 * p
    numerator = np.bincount(g, weights=(y - p) * one_minus_2p, minlength=groups)
    variance = np.bincount(g, weights=one_minus_2p**2 * p * (1 - p), minlength=groups)
    squared_p, p_y = per_bin(p * p), per_bin(p * y)
    z = numerator / np.sqrt(variance)
    z_p = 2 * NORMAL_SF(np.abs(z))
    with np.errstate(divide="ignore", invalid="ignore"):
        filled = n > 0
        mean_p, mean_y = sum_p / n, sum_y / n
        gap = sum_y - sum_p
        hl = np.where(filled, gap**2 / sum_p + gap**2 / (n - sum_p), 0.0).sum(axis=1)
        df = filled.sum(axis=1) - 2
        hl_p = CHI2_SF(hl, df)
        correction = np.where(n > 1, mean_y * (1 - mean_y) / (n - 1), 0.0)
        debiased = np.sqrt(
            np.clip(
                np.where(filled, n * ((mean_y - mean_p) ** 2 - correction), 0.0).sum(axis=1)
                / total,
                0.0,
                None,
            )
        )
        rate = sum_y.sum(axis=1) / total
        reliability = np.where(filled, n * (mean_p - mean_y) ** 2, 0.0).sum(axis=1) / total
        resolution = np.where(filled, n * (mean_y - rate[:, None]) ** 2, 0.0).sum(axis=1) / total
        wbv = np.where(filled, squared_p - sum_p * mean_p, 0.0).sum(axis=1) / total
        wbc = 2 * np.where(filled, p_y - sum_y * mean_p, 0.0).sum(axis=1) / total
        brier = (squared_p - 2 * p_y + sum_y).sum(axis=1) / total
        refinement = np.where(filled, n * mean_y * (1 - mean_y), 0.0).sum(axis=1) / total
        q = np.clip(mean_p, 2.220446049250313e-16, 1 - 2.220446049250313e-16)
        entropy = -(
            np.where(mean_y > 0, mean_y * np.log(mean_y), 0.0)
            + np.where(mean_y < 1, (1 - mean_y) * np.log(1 - mean_y), 0.0)
        )
        cross = -(mean_y * np.log(q) + (1 - mean_y) * np.log(1 - q))
        ll_cl = np.where(filled, n * (cross - entropy), 0.0).sum(axis=1) / total
        ll_rl = np.where(filled, n * entropy, 0.0).sum(axis=1) / total
    return (
        ece,
        z,
        z_p,
        hl,
        hl_p,
        debiased,
        reliability,
        resolution,
        rate * (1 - rate),
        wbv,
        wbc,
        brier,
        refinement,
        ll_cl,
        ll_rl,
    )


def best(run: Callable[[], object], repeats: int, wait: bool) -> float:
    times = []
    for _ in range(repeats):
        if wait:
            _wait_idle(limit=10.0)
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-wait", action="store_true", help="do not wait for idle CPUs")
    args = parser.parse_args()
    print(f"{args.rows:,} rows, {N_BINS} uniform bins, Polars {pl.__version__}")
    print("| groups | route | ECE alone (s) | ECE + all (s) | ratio (target ≤ 1.5) |")
    print("|---|---|---|---|---|")
    for groups in (1, args.groups):
        df = data(args.rows, groups)
        p, y, g = df["p"].to_numpy(), df["y"].to_numpy().astype(np.float64), df["g"].to_numpy()
        keys = ["g"] if groups > 1 else None
        routes: dict[str, Callable[[bool], object]] = {
            "frame": lambda everything: pc.summary(
                df, "p", "y", by=keys, n_bins=N_BINS, metrics=ALL if everything else ["ece"]
            ),
            "expression": lambda everything: (
                df.group_by("g").agg(expressions(everything))
                if keys
                else df.select(expressions(everything))
            ),
            "numpy": lambda everything: run_numpy(p, y, g, groups, everything),
        }
        for route, run in routes.items():
            alone = best(lambda: run(False), args.repeats, not args.no_wait)
            together = best(lambda: run(True), args.repeats, not args.no_wait)
            ratio = together / alone
            print(f"| {groups:,} | {route} | {alone:.3f} | {together:.3f} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
