"""Shared test setup: the numpy oracle on the path, hypothesis profiles, example data."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile(
    "default", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", deadline=None, max_examples=1000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")


def sign_changing_log(
    seed: int, n: int, *, decimals: int | None = 2, groups: int = 1
) -> pl.DataFrame:
    """Probabilities and outcomes whose miscalibration changes sign across [0, 1].

    The outcome rate is ``p + 0.25 sin(2 pi p)`` (clipped): under-confident below
    0.5 and over-confident above, so a binning bug cannot hide behind a one-sided
    gap. With ``decimals`` the probabilities are rounded, putting many on bin edges.
    """
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    if decimals is not None:
        p = np.round(p, decimals)
    rate = np.clip(p + 0.25 * np.sin(2 * math.pi * p), 0.0, 1.0)
    y = (rng.random(n) < rate).astype(np.int64)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, n),
            "p": p,
            "y": y,
            "w": rng.random(n) * 2.0,
        }
    )


@pytest.fixture
def example_log() -> pl.DataFrame:
    """The bundled example prediction log."""
    return pl.read_parquet(Path(__file__).parents[1] / "examples" / "data" / "predictions.parquet")
