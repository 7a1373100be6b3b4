"""Write the bundled example prediction log, ``examples/data/predictions.parquet``.

Two binary models score the same 20,000 requests over 30 days, across three
customer segments. The candidate model is over-confident (too low below 0.5, too
high above), so its miscalibration changes sign across [0, 1]; the baseline is
close to calibrated except in segment "C", where it under-predicts. Probabilities
are rounded to two decimals, as real logs often are, so many sit on bin edges.

Each request also has demographic attributes for the fairness audit
(``docs/audit.md``): ``sex`` (F, M), ``age_band`` (18-29, 30-49, 50-64, 65+) and
``region`` (north, south, west). They are drawn from a second random stream (the
other columns are those of the log before they were added), and the age band
depends on the outcome in opposite directions for women and men: surprising
outcomes (a positive where the true probability is below 0.5, or a negative where
it is above) are over-represented among women aged 65+ and under-represented among
men aged 65+. Each sex and each age band is about as calibrated as the whole
population, but both models are over-confident for women aged 65+ and
under-confident for men aged 65+: a miscalibration only an audit of intersections
finds.

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
    """Return the example log: ts, request_id, model, segment, p, y, sex, age_band, region."""
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
    sex, age_band, region = _demographics(y, true_p, seed)
    frames = [
        pl.DataFrame(
            {
                "ts": ts,
                "request_id": np.arange(n_requests),
                "model": name,
                "segment": segment,
                "p": np.round(prob, 2),
                "y": y,
                "sex": sex,
                "age_band": age_band,
                "region": region,
            }
        )
        for name, prob in (("baseline", baseline), ("candidate", candidate))
    ]
    return pl.concat(frames).sort("ts", "model")


AGE_BANDS = ["18-29", "30-49", "50-64", "65+"]
AGE_SHARES = np.array([0.25, 0.35, 0.25, 0.15])
# How much more (women) or less (men) likely a surprising outcome is to be aged 65+.
TILT = 0.8


def _demographics(
    y: np.ndarray, true_p: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sex, age band and region per request, from a stream of their own."""
    rng = np.random.default_rng([seed, 1])
    n = y.size
    sex = rng.choice(["F", "M"], size=n)
    region = rng.choice(["north", "south", "west"], size=n, p=[0.4, 0.35, 0.25])
    # A surprising outcome: positive although the true probability is below 0.5, or
    # negative although above. Among women, surprising requests are more often aged 65+
    # (a model is over-confident there); among men, less often (under-confident). The
    # unsurprising ones move the other way, so that 65+ keeps its share in each sex.
    surprising = (y == 1) != (true_p >= 0.5)
    rate = surprising.mean()
    tilt = np.where(surprising, TILT, -TILT * rate / (1 - rate))
    old = AGE_SHARES[3] * (1 + np.where(sex == "F", tilt, -tilt))
    younger = AGE_SHARES[:3] / AGE_SHARES[:3].sum()
    draw = rng.random(n)
    band = np.where(
        draw < old, 3, np.searchsorted(np.cumsum(younger), (draw - old) / (1 - old), side="right")
    )
    age_band = np.array(AGE_BANDS)[np.minimum(band, 3)]
    return sex, age_band, region


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    make_log().write_parquet(OUT)
    print(f"wrote {OUT}")
