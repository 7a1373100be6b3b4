"""The ECE family side by side (issue 14): canonical ECE, SKCE, median-variance bins.

Three comparisons, each the best of ``--repeat`` runs, on vectors of K = 10 classes
(``Array(Float64, 10)``, mis-calibrated as the test data):

canonical   the canonical ECE with 5 bins per component, in its frame form
            ``pc.summary(df, "probs", "y", reduction="canonical", n_bins=5,
            metrics=["ece"])`` and as the expression ``pc.canonical_ece(probs, y,
            n_bins=5)`` in ``select``, each against the classwise frame form
            ``pc.summary(df, "probs", "y", reduction="classwise", n_bins=5,
            metrics=["ece"])`` (target: <= 2x), ``--rows`` rows (default 10M); the
            two canonical values are checked equal
skce        ``pc.skce(probs, y, estimator="block", block_size=2)`` against one ECE
            on the same rows (target: <= 3x): the confidence ECE in its frame form
            ``pc.summary(..., reduction="confidence", metrics=["ece"])`` (the
            fastest ECE of these vectors), and the expressions ``pc.confidence_ece``
            and ``pc.canonical_ece``; the SKCE both in an eager ``select`` and in a
            lazy one (``df.lazy().select(...).collect()``: eager ``select`` does no
            common-subexpression elimination, and the SKCE's pair term reads each
            row's vector several times)
median      ``pc.median_variance_bins(df, "probs", "y", min_size=10)`` against a
            plain numpy implementation of the same splits (recursive, ``argsort``
            per bin), ``--mv-rows`` rows (default 1M); the partitions are checked equal

Run ``python bench/ece_family.py`` (several minutes and about 4 GB at the default
sizes); ``python bench/ece_family.py --rows 20000 --mv-rows 5000 --repeat 1`` checks
that it runs. Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import heapq
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import polars_calib as pc

CLASSES = 10


def make_vectors(rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 1.5, (rows, CLASSES))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    sharp = probs**1.3 / (probs**1.3).sum(axis=1, keepdims=True)
    labels = (sharp.cumsum(axis=1) < rng.random((rows, 1))).sum(axis=1).clip(0, CLASSES - 1)
    return pl.DataFrame(
        {
            "probs": pl.Series(probs, dtype=pl.Array(pl.Float64, CLASSES)),
            "y": labels,
        }
    )


def best(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result


def numpy_median_variance(points: np.ndarray, min_size: int) -> np.ndarray:
    """The same splits, written plainly: a heap of bins, a full argsort per split."""
    n = len(points)
    bins = np.zeros(n, dtype=np.int64)
    if n < 2 * min_size:
        return bins
    heap = [(-points.var(axis=0, ddof=1).max(), 0, np.arange(n))]
    final, order = [], 0
    while heap:
        _, _, rows = heapq.heappop(heap)
        values = points[rows]
        component = int(np.argmax(values.var(axis=0, ddof=1)))
        column = values[:, component]
        ranked = np.argsort(column, kind="stable")
        median = column[ranked[len(rows) // 2]]
        left, right = rows[column < median], rows[column >= median]
        if min(len(left), len(right)) < min_size:
            final.append(rows)
            continue
        for half in (left, right):
            if len(half) < 2 * min_size:
                final.append(half)
            else:
                order += 1
                heapq.heappush(heap, (-points[half].var(axis=0, ddof=1).max(), order, half))
    for number, rows in enumerate(final):
        bins[rows] = number
    return bins


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = pl.DataFrame({"a": a, "b": b})
    return pairs.n_unique() == pairs["a"].n_unique() == pairs["b"].n_unique()


def time_vectors(rows: int, repeat: int) -> dict[str, float | bool]:
    """Time the canonical ECE and the SKCE against the ECE frame forms on ``rows`` vectors.

    The frame is local, so it is freed on return, before the median-variance timings.
    """
    results: dict[str, float | bool] = {}
    df = make_vectors(rows)
    results["canonical_expr_s"], canonical = best(
        lambda: df.select(pc.canonical_ece("probs", "y", n_bins=5)).item(), repeat
    )
    results["classwise_frame_s"], _ = best(
        lambda: pc.summary(df, "probs", "y", reduction="classwise", n_bins=5, metrics=["ece"]),
        repeat,
    )
    results["canonical_frame_s"], frame = best(
        lambda: pc.summary(df, "probs", "y", reduction="canonical", n_bins=5, metrics=["ece"]),
        repeat,
    )
    results["canonical_over_classwise"] = results["canonical_expr_s"] / results["classwise_frame_s"]
    results["canonical_frame_over_classwise"] = (
        results["canonical_frame_s"] / results["classwise_frame_s"]
    )
    results["canonical_frame_equal"] = bool(
        abs(frame["canonical_ece"].item() - canonical) <= 1e-12 * max(1.0, abs(canonical))
    )
    results["skce_block_s"], _ = best(
        lambda: df.select(pc.skce("probs", "y", estimator="block", block_size=2)).item(),
        repeat,
    )
    results["confidence_ece_s"], _ = best(
        lambda: df.select(pc.confidence_ece("probs", "y", n_bins=15)).item(), repeat
    )
    results["skce_block_lazy_s"], _ = best(
        lambda: (
            df.lazy()
            .select(pc.skce("probs", "y", estimator="block", block_size=2))
            .collect()
            .item()
        ),
        repeat,
    )
    results["confidence_frame_s"], _ = best(
        lambda: pc.summary(df, "probs", "y", reduction="confidence", metrics=["ece"]),
        repeat,
    )
    results["skce_lazy_over_confidence_frame"] = (
        results["skce_block_lazy_s"] / results["confidence_frame_s"]
    )
    results["skce_over_confidence_frame"] = results["skce_block_s"] / results["confidence_frame_s"]
    results["skce_over_confidence_ece"] = results["skce_block_s"] / results["confidence_ece_s"]
    results["skce_over_canonical_ece"] = results["skce_block_s"] / results["canonical_expr_s"]
    results["canonical_value"] = canonical
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--mv-rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = time_vectors(args.rows, args.repeat)

    small = make_vectors(args.mv_rows, seed=1)
    points = small["probs"].to_numpy()
    results["median_variance_polars_s"], binned = best(
        lambda: pc.median_variance_bins(small, "probs", "y", min_size=10), args.repeat
    )
    results["median_variance_numpy_s"], reference = best(
        lambda: numpy_median_variance(points, 10), args.repeat
    )
    results["median_variance_ratio"] = (
        results["median_variance_polars_s"] / results["median_variance_numpy_s"]
    )
    results["median_variance_same_bins"] = same_partition(binned["bin"].to_numpy(), reference)
    print(json.dumps({"rows": args.rows, "mv_rows": args.mv_rows, **results}, indent=2))


if __name__ == "__main__":
    main()
