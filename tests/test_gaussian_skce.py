"""The SKCE of Gaussian predictions: CalibrationErrors.jl's cases and the numpy reference."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_calib as pc
import reference_regression as rr
from conftest import FrameContext

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"


@cache
def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(FIXTURES.read_text())["skce_normal"]
    return cases


def _frame(mu: Any, sigma: Any, y: Any) -> pl.DataFrame:
    return pl.DataFrame(
        {"mu": mu, "sigma": sigma, "y": y}, schema=dict.fromkeys(["mu", "sigma", "y"], pl.Float64)
    )


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["expected_expr"])
def test_calibration_errors_jl_cases(case: dict[str, Any]) -> None:
    df = _frame(
        [p[0] for p in case["predictions"]], [p[1] for p in case["predictions"]], case["targets"]
    )
    options: dict[str, Any] = {"mean": "mu", "std": "sigma"}
    options["target_length_scale"] = 1.0 / case["target_scale"]
    for estimator in ("unbiased", "block"):  # two rows: one block of 2 is the U-statistic
        got = df.select(pc.gaussian_skce("y", estimator=estimator, **options)).item()
        assert got == pytest.approx(case["expected"], rel=1e-13, abs=1e-16)


def _random(seed: int, n: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    mu = rng.normal(0.0, 1.5, n)
    sigma = rng.uniform(0.3, 2.0, n)
    # Over-confident: the spread of y is twice sigma's.
    return _frame(mu, sigma, mu + 2.0 * sigma * rng.normal(size=n))


def _diagonal(df: pl.DataFrame, t: float) -> float:
    mu, sigma, y = (df[c].to_numpy() * t for c in ("mu", "sigma", "y"))
    a = 1.0 / np.sqrt(1.0 + sigma**2)
    c = 1.0 / np.sqrt(1.0 + 2.0 * sigma**2)
    return float(np.sum(1.0 - 2.0 * a * np.exp(-((a * (mu - y)) ** 2) / 2.0) + c))


@pytest.mark.parametrize("target_length_scale", [1.0, 2.0, 0.7])
def test_estimators_against_the_reference(target_length_scale: float) -> None:
    df = _random(3, 41)
    t = 1.0 / target_length_scale
    options: dict[str, Any] = {"mean": "mu", "std": "sigma"}
    options["target_length_scale"] = target_length_scale
    unbiased = rr.skce_normal(df["mu"], df["sigma"], df["y"], target_scale=t)
    got = df.select(pc.gaussian_skce("y", **options)).item()
    assert got == pytest.approx(unbiased, rel=1e-12)
    n = df.height
    biased = (n * (n - 1) * unbiased + _diagonal(df, t)) / n**2
    got = df.select(pc.gaussian_skce("y", estimator="biased", **options)).item()
    assert got == pytest.approx(biased, rel=1e-12)
    # Blocks of 3 (the 41st row dropped): the mean of each block's U-statistic.
    blocks = [df[k : k + 3] for k in range(0, 39, 3)]
    expected = np.mean(
        [rr.skce_normal(b["mu"], b["sigma"], b["y"], target_scale=t) for b in blocks]
    )
    got = df.select(pc.gaussian_skce("y", estimator="block", block_size=3, **options)).item()
    assert got == pytest.approx(expected, rel=1e-12)


def test_length_scale_of_the_prediction_kernel() -> None:
    # Two rows: h = exp(-W2 / l) [...]: the ratio of two length scales is exp(-W2 (1/l1 - 1/l2)).
    df = _frame([0.0, 1.0], [1.0, 2.0], [1.0, 0.0])
    one = df.select(pc.gaussian_skce("y", mean="mu", std="sigma")).item()
    two = df.select(pc.gaussian_skce("y", mean="mu", std="sigma", length_scale=2.0)).item()
    assert two / one == pytest.approx(math.exp(math.sqrt(2.0) / 2.0), rel=1e-13)


def test_miscalibration_is_positive_and_calibration_near_zero() -> None:
    rng = np.random.default_rng(8)
    n = 400
    mu, sigma = rng.normal(0.0, 1.0, n), rng.uniform(0.5, 1.5, n)
    calibrated = _frame(mu, sigma, mu + sigma * rng.normal(size=n))
    wrong = _frame(mu, sigma, mu + 3.0 * sigma * rng.normal(size=n))
    expr = pc.gaussian_skce("y", mean="mu", std="sigma")
    assert abs(calibrated.select(expr).item()) < 0.005
    assert wrong.select(expr).item() > 0.02


def test_groups_contexts_and_bad_rows(frame_context: FrameContext) -> None:
    parts = [_random(s, 20).with_columns(g=pl.lit(s)) for s in (1, 2, 3)]
    df = pl.concat(parts).with_columns(
        sigma=pl.when((pl.col("g") == 3) & (pl.int_range(pl.len()) == 50))
        .then(-1.0)
        .otherwise("sigma")
    )
    df = df.vstack(
        pl.DataFrame({"mu": [0.0], "sigma": [1.0], "y": [None], "g": [1]}, schema=df.schema)
    )
    query = (
        frame_context.frame(df)
        .group_by("g")
        .agg(
            u=pc.gaussian_skce("y", mean="mu", std="sigma"),
            b=pc.gaussian_skce("y", mean="mu", std="sigma", estimator="block", block_size=4),
        )
    )
    got = frame_context.collect(query.sort("g"))
    for i, part in enumerate(parts[:2]):
        expected = rr.skce_normal(part["mu"], part["sigma"], part["y"])
        assert got["u"][i] == pytest.approx(expected, rel=1e-12)
    assert got.row(2) == (3, None, None)


def test_too_large_groups_and_bad_options() -> None:
    df = _random(1, 2001)
    with pytest.raises(pl.exceptions.InvalidOperationError, match="estimator='block'"):
        df.select(pc.gaussian_skce("y", mean="mu", std="sigma"))
    assert (
        df.select(pc.gaussian_skce("y", mean="mu", std="sigma", estimator="block")).item()
        is not None
    )
    with pytest.raises(ValueError, match="target_length_scale"):
        pc.gaussian_skce("y", mean="mu", std="sigma", target_length_scale=0.0)
    with pytest.raises(ValueError, match="estimator"):
        pc.gaussian_skce("y", mean="mu", std="sigma", estimator="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="block_size"):
        pc.gaussian_skce("y", mean="mu", std="sigma", estimator="block", block_size=1)
