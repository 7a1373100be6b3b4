"""Ensemble predictions: the CRPS (energy and fair) and the randomized rank PIT.

The peers' numbers are in ``tests/data/regression/fixtures.json`` (properscoring and
scoringrules 0.10 on the ``ensemble5`` and ``ensemble20`` datasets, properscoring's own
toy examples; see ``PEERS.md``); random frames are checked against
``tests/reference_regression.py``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy import stats

import polars_calib as pc
import reference_regression as rr
from conftest import FrameContext
from polars_calib._core.draws import word_int

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"
ESTIMATORS = {"nrg": "energy", "qd": "energy", "fair": "fair", "pwm": "fair"}


@cache
def _fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


def _ensemble(name: str, dtype: str = "array") -> pl.DataFrame:
    data = _fixtures()["datasets"][name]
    m = len(data["x"][0])
    kind = pl.Array(pl.Float64, m) if dtype == "array" else pl.List(pl.Float64)
    return pl.DataFrame(
        {"group": data["group"], "y": data["y"], "x": data["x"]},
        schema={"group": pl.Int64, "y": pl.Float64, "x": kind},
    )


def _per_row(df: pl.DataFrame, estimator: str) -> np.ndarray:
    """The CRPS of each row: the aggregate over groups of one row."""
    expr = pc.crps_ensemble("y", ensemble="x", estimator=estimator)  # type: ignore[arg-type]
    out = df.with_row_index("row").group_by("row", maintain_order=True).agg(expr)
    return out["y"].to_numpy()


def _crps_records() -> list[dict[str, Any]]:
    return [r for r in _fixtures()["records"] if r["function"] == "crps_ensemble"]


@pytest.mark.parametrize(
    "record",
    _crps_records(),
    ids=lambda r: f"{r['peer']}-{r['dataset']}-{'-'.join(map(str, r['options'].values()))}",
)
@pytest.mark.parametrize("dtype", ["array", "list"])
def test_crps_ensemble_reproduces_the_peers(record: dict[str, Any], dtype: str) -> None:
    estimator = ESTIMATORS.get(record["options"].get("estimator", "nrg"))
    assert estimator is not None
    df = _ensemble(record["dataset"], dtype)
    expected = np.asarray(record["value"], dtype=float)
    np.testing.assert_allclose(_per_row(df, estimator), expected, rtol=1e-12, atol=1e-15)
    mean = df.select(pc.crps_ensemble("y", ensemble="x", estimator=estimator)).item()  # type: ignore[arg-type]
    assert mean == pytest.approx(expected.mean(), rel=1e-12)


def test_crps_ensemble_reproduces_properscoring_toy_examples() -> None:
    cases = [s for s in _fixtures()["suite_values"] if s["function"] == "crps_ensemble"]
    assert len(cases) == 12
    for case in cases:
        df = pl.DataFrame({"y": case["inputs"]["y"], "x": case["inputs"]["x"]})
        value = df.select(pc.crps_ensemble("y", ensemble="x")).item()
        assert value == pytest.approx(case["expected"], abs=1e-15), case


def test_crps_ensemble_matches_the_pairwise_reference_on_ties_and_ragged_lists() -> None:
    rng = np.random.default_rng(3)
    xs = [np.round(rng.normal(size=m), 1) for m in rng.integers(2, 12, size=60)]
    y = np.array([x[0] if i % 3 == 0 else round(rng.normal(), 1) for i, x in enumerate(xs)])
    w = rng.uniform(0.1, 2.0, size=60)
    df = pl.DataFrame({"y": y, "x": [x.tolist() for x in xs], "w": w})
    for estimator in ("energy", "fair"):
        expected = np.array([rr.crps_ensemble([yi], [xi], estimator)[0] for yi, xi in zip(y, xs)])
        np.testing.assert_allclose(_per_row(df, estimator), expected, rtol=1e-12, atol=1e-15)
        weighted = df.select(pc.crps_ensemble("y", ensemble="x", estimator=estimator, weight="w"))
        assert weighted.item() == pytest.approx(np.average(expected, weights=w), rel=1e-12)


def test_crps_ensemble_runs_in_select_group_by_over_and_every_context(
    frame_context: FrameContext,
) -> None:
    df = _ensemble("ensemble20")
    groups = sorted(set(df["group"]))
    parts = [df.filter(pl.col("group") == g) for g in groups]
    means = [float(np.mean(rr.crps_ensemble(p["y"], p["x"].to_numpy()))) for p in parts]
    expected = pl.DataFrame({"group": groups, "y": means})
    expr = pc.crps_ensemble("y", ensemble="x")
    grouped = frame_context.frame(df).group_by("group").agg(expr)
    result = frame_context.collect(grouped).sort("group")
    assert_frame_equal(result, expected, rel_tol=1e-12)
    over = df.select("group", expr.over("group")).unique().sort("group")
    assert_frame_equal(over, expected, rel_tol=1e-12)
    whole = frame_context.collect(frame_context.frame(df).select(expr)).item()
    assert whole == pytest.approx(np.mean(rr.crps_ensemble(df["y"], df["x"].to_numpy())), rel=1e-12)


BAD_ROWS = {
    "null member": ({"y": 0.5, "x": [0.0, None, 1.0]}, "both"),
    "NaN member": ({"y": 0.5, "x": [0.0, float("nan"), 1.0]}, "both"),
    "infinite member": ({"y": 0.5, "x": [0.0, float("inf"), 1.0]}, "both"),
    "NaN target": ({"y": float("nan"), "x": [0.0, 1.0, 2.0]}, "both"),
    "infinite target": ({"y": float("-inf"), "x": [0.0, 1.0, 2.0]}, "both"),
    "no member": ({"y": 0.5, "x": []}, "both"),
    "one member": ({"y": 0.5, "x": [1.0]}, "fair"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_a_group_holding_a_refused_row_gives_null(case: str) -> None:
    bad, refused_by = BAD_ROWS[case]
    good = [{"g": 1, "y": 0.1, "x": [0.0, 1.0, 2.0]}, {"g": 2, "y": 1.5, "x": [0.0, 1.0, 2.0]}]
    df = pl.DataFrame(
        [*good, {"g": 1, **bad}], schema={"g": pl.Int64, "y": pl.Float64, "x": pl.List(pl.Float64)}
    )
    for estimator in ("energy", "fair"):
        expr = pc.crps_ensemble("y", ensemble="x", estimator=estimator)  # type: ignore[arg-type]
        out = df.lazy().group_by("g").agg(expr).collect(engine="streaming").sort("g")
        first, second = out["y"].to_list()
        assert second is not None
        assert (first is None) == (refused_by in ("both", estimator)), estimator
    pits = df.select(pc.rank_pit("y", ensemble="x"))["y"].to_list()
    assert pits[0] is not None and pits[1] is not None
    assert (pits[2] is None) == (refused_by == "both")


def test_null_target_or_ensemble_rows_are_ignored() -> None:
    df = pl.DataFrame(
        {"y": [0.1, None, 0.7], "x": [[0.0, 1.0], [0.0, 5.0], None]},
        schema={"y": pl.Float64, "x": pl.List(pl.Float64)},
    )
    for estimator in ("energy", "fair"):
        value = df.select(pc.crps_ensemble("y", ensemble="x", estimator=estimator)).item()  # type: ignore[arg-type]
        assert value == pytest.approx(rr.crps_ensemble([0.1], [[0.0, 1.0]], estimator)[0])
    assert df.select(pc.rank_pit("y", ensemble="x"))["y"].null_count() == 2
    empty = df.filter(pl.col("y").is_null()).select(pc.crps_ensemble("y", ensemble="x"))
    assert empty.item() is None


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="estimator"):
        pc.crps_ensemble("y", ensemble="x", estimator="pwm")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        pc.rank_pit("y", ensemble="x", seed=-1)


# --------------------------------------------------------------------------
# The randomized rank PIT
# --------------------------------------------------------------------------


def test_rank_pit_is_the_hash_draw_on_the_reference_support() -> None:
    df = _ensemble("ensemble5")
    x = np.stack(df["x"].to_numpy())
    lower, upper = rr.rank_pit_bounds(df["y"], x)
    ids = np.arange(len(df)) * 7919 - 50
    for seed, identity in ((0, None), (12345, ids)):
        frame = df.with_columns(id=pl.Series(ids)) if identity is not None else df
        u = frame.select(
            pc.rank_pit("y", ensemble="x", seed=seed, id=None if identity is None else "id")
        )["y"].to_numpy()
        keys = range(len(df)) if identity is None else identity
        v = np.array([word_int(int(k), 0, seed) / 2**32 for k in keys])
        np.testing.assert_allclose(u, lower + v * (upper - lower), rtol=1e-14)
        assert np.all((lower <= u) & (u < upper))
    # rows 0-5 tie a member: their support is wider than 1 / (M + 1)
    assert np.all(upper[:6] - lower[:6] > 1.5 / 6)


def test_rank_pit_with_an_id_is_the_same_in_any_order_and_context(
    frame_context: FrameContext,
) -> None:
    df = _ensemble("ensemble20").with_row_index("id")
    expr = pc.rank_pit("y", ensemble="x", seed=7, id="id").alias("u")
    expected = df.select("id", expr)
    shuffled = frame_context.frame(df.sample(fraction=1.0, shuffle=True, seed=1))
    result = frame_context.collect(shuffled.select("id", expr)).sort("id")
    assert_frame_equal(result, expected)
    other_seed = df.select(pc.rank_pit("y", ensemble="x", seed=8, id="id"))["y"]
    assert not np.allclose(other_seed.to_numpy(), expected["u"].to_numpy())


def _pit_histogram_p(u: np.ndarray, n_bins: int = 20) -> float:
    # 20 bins: a multiple of neither M nor M + 1, so values on k / M or k / (M + 1) show
    counts = np.histogram(u, bins=n_bins, range=(0.0, 1.0))[0]
    return float(stats.chisquare(counts).pvalue)


def test_a_calibrated_ensemble_gives_a_flat_rank_pit_histogram() -> None:
    rng = np.random.default_rng(20261126)
    n, m = 3000, 9
    center = rng.normal(size=n)
    # members and target from the same distribution; rounding makes ties with the target
    x = np.round(center[:, None] + rng.normal(size=(n, m)), 1)
    y = np.round(center + rng.normal(size=n), 1)
    # over-dispersed in one half (too wide), under-dispersed in the other (too narrow)
    scale = np.where(np.arange(n) < n // 2, 2.0, 0.4)
    x_bad = center[:, None] + scale[:, None] * rng.normal(size=(n, m))
    df = pl.DataFrame(
        {"half": np.arange(n) < n // 2, "y": y, "x": x.tolist(), "x_bad": x_bad.tolist()}
    )
    out = df.select(
        "half",
        u=pc.rank_pit("y", ensemble="x", seed=3),
        bad=pc.rank_pit("y", ensemble="x_bad", seed=3),
    )
    assert _pit_histogram_p(out["u"].to_numpy()) > 1e-3
    for half in (True, False):
        part = out.filter(pl.col("half") == half)
        assert _pit_histogram_p(part["u"].to_numpy()) > 1e-3
        assert _pit_histogram_p(part["bad"].to_numpy()) < 1e-8
    # the two halves' miscalibration changes sign: too wide piles up in the middle,
    # too narrow at the ends
    for half, middle_heavy in ((True, True), (False, False)):
        bad = out.filter(pl.col("half") == half)["bad"].to_numpy()
        middle = np.mean(np.abs(bad - 0.5) < 0.25)
        assert (middle > 0.5) == middle_heavy
    # the empirical interval [#{x<y}/M, #{x<=y}/M] is a point on k / M, not uniform
    lower, upper = rr.empirical_pit_bounds(y, x)
    assert np.mean(lower == upper) > 0.5
    assert _pit_histogram_p(lower) < 1e-8


def test_rank_pit_by_position_is_the_same_in_every_context(frame_context: FrameContext) -> None:
    df = _ensemble("ensemble20", "list")
    expr = pc.rank_pit("y", ensemble="x", seed=5)
    expected = df.select(expr)
    result = frame_context.collect(frame_context.frame(df).select(expr))
    assert_frame_equal(result, expected)
    v = np.array([word_int(k, 0, 5) / 2**32 for k in range(len(df))])
    lower, upper = rr.rank_pit_bounds(df["y"], np.stack(df["x"].to_numpy()))
    np.testing.assert_allclose(expected["y"].to_numpy(), lower + v * (upper - lower), rtol=1e-14)
    # with an id, `over` gives each row the draw it has in the whole frame
    ided = df.with_row_index("id")
    over = ided.select(pc.rank_pit("y", ensemble="x", seed=5, id="id").over("group"))
    assert_frame_equal(over, expected)


_FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=30, deadline=None)
@given(y=_FINITE, members=st.lists(_FINITE, min_size=2, max_size=12))
@example(y=0.0, members=[0.0, 0.0])
@example(y=1.0, members=[1.0, 1.0, -1.0, 3.0])
def test_crps_ensemble_is_the_pairwise_reference(y: float, members: list[float]) -> None:
    df = pl.DataFrame({"y": [y], "x": [members]})
    scale = max(1.0, abs(y), *(abs(v) for v in members))
    for estimator in ("energy", "fair"):
        value = df.select(pc.crps_ensemble("y", ensemble="x", estimator=estimator)).item()  # type: ignore[arg-type]
        expected = rr.crps_ensemble([y], [members], estimator)[0]
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-13 * scale)
    energy = df.select(pc.crps_ensemble("y", ensemble="x")).item()
    assert energy >= -1e-13 * scale
