"""Write the bundled example prediction log, ``examples/data/predictions.parquet``.

Two binary models score the same 20,000 requests over 30 days, across three
customer segments. The candidate model is over-confident (too low below 0.5, too
high above), so its miscalibration changes sign across [0, 1]; the baseline is
close to calibrated except in segment "C", where it under-predicts. Probabilities
are rounded to two decimals, as real logs often are, so many sit on bin edges.

Run ``python examples/make_example_log.py`` to regenerate it (the output is
deterministic).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

OUT = Path(__file__).parent / "data" / "predictions.parquet"


def make_log(n_requests: int = 10_000, seed: int = 7) -> pl.DataFrame:
    """Return the example log: ts, request_id, model, segment, p, y."""
    rng = np.random.default_rng(seed)
    start = datetime(2024, 3, 1)
    seconds = np.sort(rng.integers(0, 30 * 24 * 3600, n_requests))
    ts = [start + timedelta(seconds=int(s)) for s in seconds]
    segment = rng.choice(["A", "B", "C"], size=n_requests, p=[0.5, 0.3, 0.2])
    true_p = rng.beta(2.0, 2.0, n_requests)
    y = (rng.random(n_requests) < true_p).astype(np.int8)
    logit = np.log(true_p / (1 - true_p))
    baseline = 1 / (1 + np.exp(-(logit + rng.normal(0, 0.3, n_requests))))
    baseline = np.where(segment == "C", baseline * 0.8, baseline)
    candidate = 1 / (1 + np.exp(-(2.0 * logit + rng.normal(0, 0.3, n_requests))))
    frames = [
        pl.DataFrame(
            {
                "ts": ts,
                "request_id": np.arange(n_requests),
                "model": name,
                "segment": segment,
                "p": np.round(prob, 2),
                "y": y,
            }
        )
        for name, prob in (("baseline", baseline), ("candidate", candidate))
    ]
    return pl.concat(frames).sort("ts", "model")


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    make_log().write_parquet(OUT)
    print(f"wrote {OUT}")
