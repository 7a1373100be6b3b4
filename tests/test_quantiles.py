"""Quantile predictions (``quantiles=``, ``levels=``): the frame functions and expressions.

Against ``tests/data/regression/fixtures.json`` (the ``quantiles`` dataset, scoringrules
0.10's ``quantile_score``, uncertainty-toolbox 0.1.1's ``check_score``) and
``tests/reference_regression.py``; see ``docs/regression.md``, "Quantile predictions".
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc
import reference_regression as rr
from conftest import CountingSource, FrameContext, streams

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"

CURVE = (
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
    "quantile_calibration_score",
)
EXPRESSIONS = {
    "mean_absolute_calibration_error": pc.mean_absolute_calibration_error,
    "root_mean_squared_calibration_error": pc.root_mean_squared_calibration_error,
    "miscalibration_area": pc.miscalibration_area,
    "quantile_calibration_score": pc.quantile_calibration_score,
}


@cache
def _fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


def _quantiles() -> tuple[pl.DataFrame, list[float]]:
    d = _fixtures()["datasets"]["quantiles"]
    df = pl.DataFrame({"group": d["group"], "y": d["y"], "q": d["q"]})
    return df, list(d["levels"])


def _reference(y: np.ndarray, q: np.ndarray, levels: list[float]) -> dict[str, Any]:
    """The metrics from the reference: the curve at the levels, and the area over [0, 1]
    with the curve's exact endpoints (0, 0) and (1, 1)."""
    tau = np.asarray(levels)
    obs = rr.quantile_curve_from_quantiles(y, q)
    pinball = np.array([rr.pinball(y, q[:, k], t).mean() for k, t in enumerate(levels)])
    return {
        "observed": obs,
        "mean_absolute_calibration_error": rr.mace(tau, obs),
        "root_mean_squared_calibration_error": rr.rmsce(tau, obs),
        "miscalibration_area": rr.miscalibration_area(np.r_[0.0, tau, 1.0], np.r_[0.0, obs, 1.0]),
        "quantile_calibration_score": float(np.mean((tau - obs) ** 2)),
        "pinball_loss": float(pinball.mean()),
        "pinball": pinball,
    }


def _close(actual: float, expected: float) -> bool:
    return bool(np.isclose(actual, expected, rtol=1e-12, atol=1e-15))


# --------------------------------------------------------------------------
# Against the reference and the peers
# --------------------------------------------------------------------------


def test_summary_matches_the_reference_per_group(frame_context: FrameContext) -> None:
    df, levels = _quantiles()
    data = frame_context.frame(df)
    summary = frame_context.collect(
        pc.regression_summary(data, "y", quantiles="q", levels=levels, by="group")
    )
    assert summary.columns == ["group", "count", "refused", *CURVE, "pinball_loss"]
    for row in summary.iter_rows(named=True):
        part = df.filter(pl.col("group") == row["group"])
        ref = _reference(part["y"].to_numpy(), np.array(part["q"].to_list()), levels)
        assert row["count"] == part.height and row["refused"] == 0
        for metric in (*CURVE, "pinball_loss"):
            assert _close(row[metric], ref[metric]), metric


def test_the_curve_and_pinball_per_level_match_the_reference_and_scoringrules() -> None:
    df, levels = _quantiles()
    curve = pc.quantile_reliability(df, "y", quantiles="q", levels=levels)
    ref = _reference(df["y"].to_numpy(), np.array(df["q"].to_list()), levels)
    assert curve["level"].to_list() == levels
    np.testing.assert_array_equal(curve["observed"].to_numpy(), ref["observed"])
    scores = {
        r["options"]["alpha"]: r["value"]
        for r in _fixtures()["records"]
        if r["function"] == "quantile_score" and r["dataset"] == "quantiles"
    }
    assert sorted(scores) == levels
    for row, level in zip(curve.iter_rows(named=True), levels, strict=True):
        assert _close(row["pinball"], float(np.mean(scores[level])))
        # One level alone, through the expression: the same mean.
        k = levels.index(level)
        one = df.select(pc.pinball_loss("y", quantiles=[pl.col("q").list.get(k)], levels=[level]))
        assert _close(one.item(), float(np.mean(scores[level])))


def test_pinball_loss_of_gaussian_quantiles_is_uncertainty_toolbox_check_score() -> None:
    """check_score: the mean pinball loss over np.linspace(0.01, 0.99, 99) of N(mu, sigma^2)."""
    d = _fixtures()["datasets"]["gaussian"]
    grid = np.linspace(0.01, 0.99, 99)
    mu, sigma = np.asarray(d["mu"]), np.asarray(d["sigma"])
    q = mu[:, None] + sigma[:, None] * rr.norm_ppf(grid)[None, :]
    df = pl.DataFrame({"group": d["group"], "y": d["y"], "q": q.tolist()})
    levels = grid.tolist()
    for record in _fixtures()["records"]:
        if record["function"] != "check_score" or record["dataset"] != "gaussian":
            continue
        group = record["group"]
        rows = df if group is None else df.filter(pl.col("group") == group)
        loss = rows.select(pc.pinball_loss("y", quantiles="q", levels=levels)).item()
        assert np.isclose(loss, record["value"], rtol=1e-12), group


def test_pinball_loss_counts_no_tie_term_when_targets_sit_on_paired_quantiles() -> None:
    # Targets on the lower quantile of a symmetric pair (0.1, 0.9): the problem also sums
    # a tie indicator there (for the interval curve), which is no part of the pinball loss.
    y = [1.0, 2.5, 0.0, 0.0]
    q = [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [-1.0, 0.5, 1.0]]
    levels = [0.1, 0.5, 0.9]
    df = pl.DataFrame({"y": y, "q": q})
    expected = np.mean([rr.pinball(y, np.asarray(q)[:, k], t) for k, t in enumerate(levels)])
    loss = df.select(pc.pinball_loss("y", quantiles="q", levels=levels)).item()
    summary = pc.regression_summary(df, "y", quantiles="q", levels=levels)
    assert _close(loss, float(expected))
    assert _close(summary["pinball_loss"].item(), float(expected))


def test_expressions_match_the_frame_functions_per_group() -> None:
    df, levels = _quantiles()
    summary = pc.regression_summary(df, "y", quantiles="q", levels=levels, by="group")
    exprs = df.group_by("group").agg(
        *(f("y", quantiles="q", levels=levels).alias(m) for m, f in EXPRESSIONS.items()),
        pc.pinball_loss("y", quantiles="q", levels=levels).alias("pinball_loss"),
    )
    assert_frame_equal(
        exprs.sort("group"), summary.drop("count", "refused"), check_exact=False, rel_tol=1e-13
    )


def test_k_columns_and_an_array_column_give_the_list_column_numbers() -> None:
    df, levels = _quantiles()
    columns = [f"q{k}" for k in range(len(levels))]
    wide = df.with_columns(pl.col("q").list.get(k).alias(c) for k, c in enumerate(columns))
    arrays = df.with_columns(pl.col("q").list.to_array(len(levels)))
    listed = pc.regression_summary(df, "y", quantiles="q", levels=levels, by="group")
    as_array = pc.regression_summary(df, "y", quantiles="q", levels=np.array(levels), by="group")
    assert_frame_equal(as_array, listed)  # levels as a numpy array
    assert_frame_equal(
        pc.regression_summary(wide, "y", quantiles=columns, levels=levels, by="group"), listed
    )
    assert_frame_equal(
        pc.regression_summary(arrays, "y", quantiles="q", levels=levels, by="group"), listed
    )
    by_columns = pc.mean_absolute_calibration_error("y", quantiles=columns, levels=levels)
    by_array = pc.mean_absolute_calibration_error("y", quantiles="q", levels=levels)
    assert _close(wide.select(by_columns).item(), arrays.select(by_array).item())


def test_ties_count_as_at_or_below_and_equal_quantiles_are_allowed() -> None:
    # y on q(0.5), and a row with q(0.1) == q(0.5): both used, ties at or below.
    df = pl.DataFrame({"y": [1.0, 0.5], "q": [[0.0, 1.0, 2.0], [0.5, 0.5, 3.0]]})
    levels = [0.1, 0.5, 0.9]
    curve = pc.quantile_reliability(df, "y", quantiles="q", levels=levels)
    assert curve["observed"].to_list() == [0.5, 1.0, 1.0]
    assert curve["count"].to_list() == [2, 2, 2]


# --------------------------------------------------------------------------
# The refused rule
# --------------------------------------------------------------------------


CROSSING = pl.DataFrame(
    {
        "g": [0, 0, 0, 1, 1],
        "y": [0.5, 1.5, 0.0, 1.0, 2.0],
        "q": [[0.0, 1.0, 2.0], [1.0, 0.5, 2.0], [2.0, 1.0, 0.0], [0.0, 1.0, 2.0], [0.0, 1.0, 2.0]],
    }
)


def test_crossing_quantiles_are_refused_with_a_count_on_a_dataframe() -> None:
    with pytest.raises(pc.CalibrationDataError, match=r"'q'.*crossing.* in 2 of 5 rows"):
        pc.regression_summary(CROSSING, "y", quantiles="q", levels=[0.1, 0.5, 0.9])


def test_crossing_quantiles_give_null_and_a_refused_count_lazily() -> None:
    levels = [0.1, 0.5, 0.9]
    summary = pc.regression_summary(
        CROSSING.lazy(), "y", quantiles="q", levels=levels, by="g"
    ).collect()
    assert summary["refused"].to_list() == [2, 0]
    assert summary["count"].to_list() == [1, 2]
    assert summary["pinball_loss"].is_null().to_list() == [True, False]
    exprs = CROSSING.group_by("g", maintain_order=True).agg(
        pc.pinball_loss("y", quantiles="q", levels=levels),
        pc.miscalibration_area("y", quantiles="q", levels=levels).alias("area"),
    )
    assert exprs["y"].is_null().to_list() == [True, False]
    assert exprs["area"].is_null().to_list() == [True, False]


@pytest.mark.parametrize(
    ("q", "y", "message"),
    [
        ([0.0, 1.0], 0.0, "another length than the 3 levels"),
        ([0.0, None, 1.0], 0.0, "null inside the list"),
        ([0.0, float("nan"), 1.0], 0.0, "quantile NaN or infinite"),
        ([0.0, 1.0, float("inf")], 0.0, "quantile NaN or infinite"),
        ([0.0, 1.0, 2.0], float("nan"), "target NaN or infinite"),
    ],
)
def test_bad_rows_are_refused(q: list[float | None], y: float, message: str) -> None:
    df = pl.DataFrame({"y": [y, 1.0], "q": [q, [0.0, 1.0, 2.0]]})
    with pytest.raises(pc.CalibrationDataError, match=message):
        pc.regression_statistics(df, "y", quantiles="q", levels=[0.1, 0.5, 0.9])


def test_null_rows_are_ignored() -> None:
    df = pl.DataFrame(
        {"y": [None, 1.0, 1.0], "a": [0.0, None, 0.0], "b": [1.0, None, 2.0]},
        schema={"y": pl.Float64, "a": pl.Float64, "b": pl.Float64},
    )
    summary = pc.regression_summary(df, "y", quantiles=["a", "b"], levels=[0.25, 0.75])
    assert summary.select("count", "refused").row(0) == (1, 0)
    half = df.with_columns(b=pl.lit(None, pl.Float64))  # one of two columns null: refused
    with pytest.raises(pc.CalibrationDataError, match="null inside the list"):
        pc.regression_summary(half, "y", quantiles=["a", "b"], levels=[0.25, 0.75])


@pytest.mark.parametrize(
    ("levels", "error", "message"),
    [
        ([], ValueError, "at least one level"),
        ([0.5, 0.5], ValueError, "strictly increasing"),
        ([0.9, 0.1], ValueError, "strictly increasing"),
        ([0.0, 0.5], ValueError, "strictly between 0 and 1"),
        ([0.5, 1.0], ValueError, "strictly between 0 and 1"),
        ([float("nan")], ValueError, "strictly between 0 and 1"),
        (0.5, TypeError, "sequence"),
        (["a"], TypeError, "numbers"),
    ],
)
def test_bad_levels_are_refused_when_the_call_is_made(
    levels: Any, error: type[Exception], message: str
) -> None:
    df = pl.DataFrame({"y": [1.0], "q": [[0.0]]})
    with pytest.raises(error, match=message):
        pc.regression_summary(df.lazy(), "y", quantiles="q", levels=levels)
    with pytest.raises(error, match=message):
        pc.pinball_loss("y", quantiles="q", levels=levels)


def test_one_prediction_form_per_call_and_metrics_of_the_form() -> None:
    df, levels = _quantiles()
    with pytest.raises(TypeError, match=r"exactly one prediction form.*gaussian and quantile"):
        pc.regression_summary(df, "y", mean="y", std="y", quantiles="q", levels=levels)
    with pytest.raises(TypeError, match="go together"):
        pc.quantile_reliability(df, "y", quantiles="q")
    with pytest.raises(TypeError, match="`mean=` and `std=` go together"):
        pc.regression_statistics(df, "y", mean="y")
    with pytest.raises(TypeError, match=r"exactly one prediction form.*got none"):
        pc.regression_statistics(df, "y")
    with pytest.raises(TypeError, match="not both"):
        pc.miscalibration_area("y", mean="y", std="y", quantiles="q", levels=levels)
    with pytest.raises(ValueError, match="'crps' is not a metric of quantile predictions"):
        pc.regression_summary(df, "y", quantiles="q", levels=levels, metrics=["crps"])
    with pytest.raises(ValueError, match="read the quantile curve"):
        pc.regression_summary(df, "y", quantiles="q", levels=levels, curve="interval")
    with pytest.raises(ValueError, match="read the quantile curve"):
        pc.mean_absolute_calibration_error("y", quantiles="q", levels=levels, curve="interval")
    with pytest.raises(ValueError, match="names 2 columns"):
        pc.regression_summary(df, "y", quantiles=["a", "b"], levels=levels)
    with pytest.raises(ValueError, match="must be one of"):
        pc.regression_summary(df, "y", mean="y", std="y", metrics=["pinball_loss"])


# --------------------------------------------------------------------------
# The table: merging, finishing, and the Gaussian form it must agree with
# --------------------------------------------------------------------------


def test_tables_of_two_halves_merge_to_the_table_of_the_whole() -> None:
    df, levels = _quantiles()
    df = df.with_columns(w=pl.Series(np.linspace(0.5, 2.0, df.height)))
    options: dict[str, Any] = {"quantiles": "q", "levels": levels, "by": "group", "weight": "w"}
    whole = pc.regression_statistics(df, "y", **options)
    halves = pl.concat(
        [
            pc.regression_statistics(df[:25], "y", **options),
            pc.regression_statistics(df[25:], "y", **options),
        ]
    )
    keys = ["group", "bin", "lower", "upper", "closed", "n_bins"]
    merged = halves.group_by(keys).agg(pl.exclude(keys).sum()).sort("group", "bin")
    assert_frame_equal(merged.select(whole.columns), whole, check_exact=False, rel_tol=1e-13)
    finished = pc.regression_metrics_from_statistics(halves, by="group")
    summary = pc.regression_summary(df, "y", **options)
    assert_frame_equal(finished, summary, check_exact=False, rel_tol=1e-13)
    curve = pc.quantile_reliability_from_statistics(halves.lazy(), by="group").collect()
    direct = pc.quantile_reliability(df, "y", **options)
    assert_frame_equal(curve, direct, check_exact=False, rel_tol=1e-13)


def test_a_table_off_its_levels_grid_is_refused_or_null() -> None:
    df, levels = _quantiles()
    stats = pc.regression_statistics(df, "y", quantiles="q", levels=levels, by="group")
    edited = stats.with_columns(
        pl.when(pl.col("group") == 1).then(pl.col("upper") + 0.01).otherwise("upper").alias("upper")
    )
    with pytest.raises(pc.CalibrationDataError, match="off the grid of its levels"):
        pc.regression_metrics_from_statistics(edited, by="group")
    lazy = pc.regression_metrics_from_statistics(edited.lazy(), by="group").collect()
    assert lazy["pinball_loss"].is_null().to_list() == [False, True]
    with pytest.raises(TypeError, match="carries its levels"):
        pc.regression_metrics_from_statistics(stats, n_levels=7)


@settings(max_examples=8, deadline=None)
@given(
    n_levels=st.integers(3, 12),
    seed=st.integers(0, 2**32 - 1),
    scale=st.floats(0.3, 3.0),
)
@example(n_levels=3, seed=0, scale=1.0)
def test_gaussian_quantiles_give_the_gaussian_quantile_curve(
    n_levels: int, seed: int, scale: float
) -> None:
    """Quantiles of N(mu, sigma^2) at the levels j / (L - 1), 0 < j < L - 1, give the
    Gaussian form's quantile curve at those levels, and its area over [0, 1]."""
    rng = np.random.default_rng(seed)
    n = 40
    mu, sigma = rng.normal(0.0, 2.0, n), rng.uniform(0.2, 2.0, n)
    y = mu + scale * sigma * rng.normal(size=n)
    grid = [j / (n_levels - 1) for j in range(1, n_levels - 1)]
    q = mu[:, None] + sigma[:, None] * rr.norm_ppf(np.asarray(grid))[None, :]
    df = pl.DataFrame({"y": y, "mu": mu, "sigma": sigma, "q": q.tolist()})
    gaussian = pc.quantile_reliability(df, "y", mean="mu", std="sigma", n_levels=n_levels)
    quantile = pc.quantile_reliability(df, "y", quantiles="q", levels=grid)
    inner = gaussian.filter(pl.col("level").is_in(grid))
    assert_frame_equal(quantile.drop("pinball"), inner)
    area = "miscalibration_area"
    g = pc.regression_summary(
        df, "y", mean="mu", std="sigma", n_levels=n_levels, curve="quantile", metrics=[area]
    )
    s = pc.regression_summary(df, "y", quantiles="q", levels=grid, metrics=[area])
    assert np.isclose(s[area].item(), g[area].item(), rtol=1e-12, atol=1e-15)


def test_the_table_describes_its_grid_and_its_levels() -> None:
    df = pl.DataFrame({"y": [1.0, 2.5, None], "q": [[0.0, 1.0, 2.0]] * 3})
    stats = pc.regression_statistics(df, "y", quantiles="q", levels=[0.1, 0.5, 0.9])
    assert stats.select("bin", "lower", "upper", "closed", "n_bins", "count", "sum_p").rows() == [
        (1, 0.1, 0.5, "right", 4, 1, 0.5),
        (3, 0.9, 1.0, "right", 4, 1, 1.0),
    ]
    assert stats.columns[-4:] == [
        "sum_pinball_0.1",
        "sum_pinball_0.5",
        "sum_pinball_0.9",
        "sum_tie_0.1",  # y on the lower bound of the central interval [q(0.1), q(0.9)]
    ]
    with pytest.raises(pc.CalibrationDataError, match="missing column"):
        pc.regression_metrics_from_statistics(stats.drop("closed"))


def test_lazy_frames_read_nothing_until_collected_and_read_once() -> None:
    df, levels = _quantiles()
    source = CountingSource(df)
    lf = source.frame()
    plans = [
        lf.calib.regression_summary("y", quantiles="q", levels=levels, by="group"),
        lf.calib.regression_statistics("y", quantiles="q", levels=levels, by="group"),
        lf.calib.quantile_reliability("y", quantiles="q", levels=levels, by="group"),
        pc.regression_metrics_from_statistics(
            lf.calib.regression_statistics("y", quantiles="q", levels=levels), by=None
        ),
    ]
    assert source.reads == 0
    plans[0].collect()
    assert source.reads == 1


def test_weighted_expressions_match_the_frame_functions_in_the_streaming_engine() -> None:
    df, levels = _quantiles()
    df = df.with_columns(w=pl.Series(np.linspace(0.0, 3.0, df.height)))
    summary = pc.regression_summary(df, "y", quantiles="q", levels=levels, by="group", weight="w")
    exprs = (
        df.lazy()
        .group_by("group")
        .agg(
            *(
                f("y", quantiles="q", levels=levels, weight="w").alias(m)
                for m, f in EXPRESSIONS.items()
            ),
            pc.pinball_loss("y", quantiles="q", levels=levels, weight="w").alias("pinball_loss"),
        )
        .sort("group")
        .collect(engine="streaming")
    )
    assert_frame_equal(exprs, summary.drop("count", "refused"), check_exact=False, rel_tol=1e-13)
    # Against the reference with the weights as repetitions: integer weights.
    w = np.arange(df.height) % 3
    weighted = pc.regression_summary(
        df.with_columns(w=pl.Series(w.astype(float))),
        "y",
        quantiles="q",
        levels=levels,
        weight="w",
    )
    y, q = df["y"].to_numpy(), np.array(df["q"].to_list())
    ref = _reference(np.repeat(y, w), np.repeat(q, w, axis=0), levels)
    for metric in (*CURVE, "pinball_loss"):
        assert _close(weighted[metric].item(), ref[metric]), metric


def test_central_intervals_of_symmetric_pairs_match_the_reference_bounds_inclusive() -> None:
    df, levels = _quantiles()
    # Targets on lower bounds: the inclusive coverage counts them (b alone would not).
    df = df.with_columns(
        pl.when(pl.int_range(pl.len()) < 3).then(pl.col("q").list.get(1)).otherwise("y").alias("y")
    )
    curve = pc.quantile_reliability(
        df, "y", quantiles="q", levels=levels, curve="interval", by="group"
    )
    assert curve.columns == ["group", "level", "observed", "count", "lower", "upper"]
    q = np.array(df["q"].to_list())
    for group in (0, 1):
        part = curve.filter(pl.col("group") == group)
        rows = (df["group"] == group).to_numpy()
        assert part["level"].to_list() == [0.5, 0.8, 0.9]
        for (lo, hi), observed in zip([(2, 4), (1, 5), (0, 6)], part["observed"], strict=True):
            expected = rr.interval_coverage(df["y"].to_numpy()[rows], q[rows, lo], q[rows, hi])
            assert observed == expected, (group, lo)
    stats = pc.regression_statistics(df, "y", quantiles="q", levels=levels, by="group")
    finished = pc.quantile_reliability_from_statistics(stats.lazy(), by="group", curve="interval")
    assert_frame_equal(finished.collect(), curve)
    with pytest.raises(ValueError, match="no symmetric pair"):
        pc.quantile_reliability(
            df, "y", quantiles="q", levels=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], curve="interval"
        )


@pytest.mark.parametrize("weight", [None, "w"])
def test_quantile_curve_expressions_stream_in_group_by(weight: str | None) -> None:
    # Group 0's quantiles are too narrow, group 1's too wide: the gap changes sign.
    rng = np.random.default_rng(4)
    levels = [0.1, 0.25, 0.5, 0.75, 0.9]
    z = np.array([NormalDist().inv_cdf(t) for t in levels])
    group = rng.integers(0, 2, 400)
    y = rng.normal(size=400)
    q = np.where(group[:, None] == 0, 0.5, 2.0) * z[None, :]
    df = pl.DataFrame({"g": group, "y": y, "q": q, "w": (np.arange(400) % 4).astype(float)})
    options: dict[str, Any] = {"quantiles": "q", "levels": levels, "weight": weight}
    query = (
        df.lazy()
        .group_by("g")
        .agg(*(f("y", **options).alias(m) for m, f in EXPRESSIONS.items()))
        .sort("g")
    )
    assert streams(query)
    summary = pc.regression_summary(df, "y", **options, by="g", metrics=list(EXPRESSIONS))
    assert_frame_equal(
        query.collect(engine="streaming"), summary.drop("count", "refused"), check_exact=True
    )
