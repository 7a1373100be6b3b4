"""The ensemble and central-interval forms of the regression frame functions.

``regression_statistics``, ``regression_summary`` and ``quantile_reliability`` take
``ensemble=`` (with the rank PIT's ``seed=`` and ``id=``) or ``lower=``/``upper=``/``level=``
instead of ``mean=``/``std=``. Each frame number is checked against its expression per
group (``pc.crps_ensemble``, ``pc.rank_pit``, ``pc.interval_coverage``, ...), against the
peers' numbers of ``tests/data/regression/fixtures.json`` (scoringrules'
``crps_ensemble``, MAPIE's coverage, width, interval score and ``coverage_gap``) and
``tests/reference_regression.py``.
"""

from __future__ import annotations

import json
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
import reference_regression as rr
from conftest import FrameContext

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"
RTOL = 1e-12
CURVE_METRICS = [
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
    "quantile_calibration_score",
]


@cache
def fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


def ensemble_frame(name: str = "ensemble5") -> pl.DataFrame:
    d = fixtures()["datasets"][name]
    m = len(d["x"][0])
    return pl.DataFrame(
        {"group": d["group"], "y": d["y"], "x": d["x"]},
        schema={"group": pl.Int64, "y": pl.Float64, "x": pl.Array(pl.Float64, m)},
    ).with_row_index("row")


def interval_frame(name: str = "intervals") -> pl.DataFrame:
    d = fixtures()["datasets"][name]
    lower, upper = np.asarray(d["lower"]), np.asarray(d["upper"])
    columns: dict[str, Any] = {"y": d["y"], "group": d["group"]}
    for j in range(len(d["levels"])):
        columns[f"lo{j}"], columns[f"hi{j}"] = lower[:, j], upper[:, j]
    return pl.DataFrame(columns)


def records(function: str, dataset: str) -> list[dict[str, Any]]:
    return [
        r
        for r in fixtures()["records"]
        if r["function"] == function and r["dataset"] == dataset and r["peer"] != "properscoring"
    ]


# --------------------------------------------------------------------------
# Ensembles
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["ensemble5", "ensemble20"])
def test_ensemble_crps_per_group_is_the_expression_and_scoringrules(dataset: str) -> None:
    df = ensemble_frame(dataset)
    summary = pc.regression_summary(
        df, "y", ensemble="x", by="group", metrics=["crps", "crps_fair"]
    )
    expected = (
        df.group_by("group")
        .agg(
            pc.crps_ensemble("y", ensemble="x").alias("crps"),
            pc.crps_ensemble("y", ensemble="x", estimator="fair").alias("crps_fair"),
        )
        .sort("group")
    )
    assert_frame_equal(summary.select(expected.columns), expected, rel_tol=RTOL, abs_tol=0.0)
    group = df["group"].to_numpy()
    for record in records("crps_ensemble", dataset):
        estimator = record["options"]["estimator"]
        column = "crps_fair" if estimator in ("fair", "pwm") else "crps"
        rows = np.asarray(record["value"])
        peer = [rows[group == g].mean() for g in summary["group"]]
        np.testing.assert_allclose(summary[column].to_numpy(), peer, rtol=RTOL)


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("dataset", ["ensemble20", "dispersed"])
def test_ensemble_curve_metrics_are_the_reference_on_the_rank_pit(seed: int, dataset: str) -> None:
    df = dispersed_frame() if dataset == "dispersed" else ensemble_frame(dataset)
    n_levels = 21
    levels = [j / (n_levels - 1) for j in range(n_levels)]
    u = df.with_columns(u=pc.rank_pit("y", ensemble="x", seed=seed))
    kwargs: dict[str, Any] = {"ensemble": "x", "seed": seed, "by": "group", "n_levels": n_levels}
    for curve in ("interval", "quantile"):
        summary = pc.regression_summary(df, "y", metrics=CURVE_METRICS, curve=curve, **kwargs)
        for row in summary.iter_rows(named=True):
            pits = u.filter(pl.col("group") == row["group"])["u"].to_numpy()
            observed = (rr.interval_curve if curve == "interval" else rr.quantile_curve)(
                pits, levels
            )
            assert row["mean_absolute_calibration_error"] == pytest.approx(
                rr.mace(levels, observed), rel=RTOL
            )
            assert row["root_mean_squared_calibration_error"] == pytest.approx(
                rr.rmsce(levels, observed), rel=RTOL
            )
            assert row["miscalibration_area"] == pytest.approx(
                rr.miscalibration_area(levels, observed), rel=RTOL
            )
            assert row["quantile_calibration_score"] == pytest.approx(
                rr.kuleshov_score(pits, levels), rel=RTOL
            )
    table = pc.quantile_reliability(df, "y", **kwargs)
    for group, part in table.group_by("group"):
        pits = u.filter(pl.col("group") == group[0])["u"].to_numpy()
        np.testing.assert_allclose(part["observed"], rr.quantile_curve(pits, levels), rtol=RTOL)


def dispersed_frame() -> pl.DataFrame:
    """Ensembles of 9 members: under-dispersed in group 1, over-dispersed in group 0."""
    rng = np.random.default_rng(5)
    n = 400
    y = rng.normal(size=n)
    spread = np.where(np.arange(n) < n // 2, 0.4, 2.5)[:, None]
    x = rng.normal(size=(n, 9)) * spread
    return pl.DataFrame({"group": (np.arange(n) < n // 2).astype(int), "y": y, "x": x.tolist()})


def test_ensemble_curve_miscalibration_changes_sign_across_groups() -> None:
    """The data of the curve tests: one group's curve is above the diagonal, the other's
    below, so a sign error cannot pass."""
    curve = pc.quantile_reliability(dispersed_frame(), "y", ensemble="x", by="group", n_levels=5)
    at_quarter = curve.filter(pl.col("level") == 0.25).sort("group")["observed"].to_list()
    # Over-dispersed (group 0): fewer targets in the tails; under-dispersed: more.
    assert at_quarter[0] < 0.25 < at_quarter[1]


def test_ensemble_tables_of_two_halves_merge_to_the_whole() -> None:
    df = ensemble_frame("ensemble20")
    kwargs: dict[str, Any] = {"ensemble": "x", "id": "row", "by": "group", "n_levels": 11}
    whole = pc.regression_statistics(df, "y", **kwargs)
    halves = [pc.regression_statistics(part, "y", **kwargs) for part in (df[:37], df[37:])]
    merged = pc.regression_metrics_from_statistics(pl.concat(halves), by="group")
    direct = pc.regression_summary(df, "y", **kwargs)
    assert_frame_equal(merged, direct, rel_tol=RTOL, abs_tol=1e-15)
    from_whole = pc.regression_metrics_from_statistics(whole, by="group")
    assert_frame_equal(from_whole, direct, rel_tol=RTOL, abs_tol=1e-15)
    curve = pc.quantile_reliability_from_statistics(pl.concat(halves), by="group")
    assert_frame_equal(curve, pc.quantile_reliability(df, "y", **kwargs), rel_tol=RTOL)
    # The id gives each row its draw wherever it is: the PIT of pc.rank_pit with that id.
    u = df.select(pc.rank_pit("y", ensemble="x", id="row"))["y"]
    assert whole["sum_p"].sum() == pytest.approx(u.sum(), rel=RTOL)


def test_ensemble_rank_pit_is_the_expression_over_the_frame() -> None:
    """Without `id`, the draw is the row's position in the frame, as `pc.rank_pit` in a
    `select` over the same frame (not within each group)."""
    df = ensemble_frame("ensemble5")
    table = pc.regression_statistics(df, "y", ensemble="x", seed=3, by="group", n_levels=3)
    u = df.with_columns(u=pc.rank_pit("y", ensemble="x", seed=3))
    expected = u.group_by("group").agg(pl.col("u").sum()).sort("group")["u"]
    got = table.group_by("group").agg(pl.col("sum_p").sum()).sort("group")["sum_p"]
    np.testing.assert_allclose(got, expected, rtol=RTOL)


def test_ensemble_windows_are_the_expression_per_window(frame_context: FrameContext) -> None:
    df = ensemble_frame("ensemble5").with_columns(
        day=pl.Series([date(2026, 1, 1 + i % 14) for i in range(len(ensemble_frame()))])
    )
    result = frame_context.collect(
        pc.regression_summary(
            frame_context.frame(df),
            "y",
            ensemble="x",
            by="group",
            time="day",
            every="1w",
            metrics=["crps", "crps_fair"],
        )
    )
    expected = (
        df.with_columns(pl.col("day").dt.truncate("1w"))
        .group_by("group", "day")
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            pc.crps_ensemble("y", ensemble="x").alias("crps"),
            pc.crps_ensemble("y", ensemble="x", estimator="fair").alias("crps_fair"),
        )
        .sort("group", "day")
    )
    assert result.height == expected.height > 3
    assert_frame_equal(result.select(expected.columns), expected, rel_tol=RTOL)


def test_ensemble_refused_rows_raise_or_give_null_with_their_count() -> None:
    df = pl.DataFrame(
        {
            "g": [0, 0, 1, 1, 1],
            "y": [0.0, 1.0, 2.0, 3.0, 0.5],
            "x": [[0.0, 1.0], [0.5, float("nan")], [1.0, 2.0], [0.0, 1.0], None],
        }
    )
    with pytest.raises(pc.CalibrationDataError, match=r"'x'.*member null, NaN or infinite in 1 of"):
        pc.regression_summary(df, "y", ensemble="x", by="g")
    lazy = pc.regression_summary(df.lazy(), "y", ensemble="x", by="g").collect()
    assert lazy["refused"].to_list() == [1, 0]
    assert lazy["count"].to_list() == [1, 2]
    assert lazy["crps"][0] is None
    assert lazy["crps"][1] == pytest.approx(
        df.filter(pl.col("g") == 1).select(pc.crps_ensemble("y", ensemble="x")).item()
    )


def test_ensemble_fair_crps_is_null_with_a_one_member_row() -> None:
    df = pl.DataFrame({"g": [0, 0, 1], "y": [0.0, 1.0, 2.0], "x": [[0.0], [0.5, 1.0], [1.0, 3.0]]})
    summary = pc.regression_summary(df, "y", ensemble="x", by="g", metrics=["crps", "crps_fair"])
    assert summary["crps_fair"].to_list()[0] is None
    fair = pc.crps_ensemble("y", ensemble="x", estimator="fair")
    assert summary["crps_fair"][1] == pytest.approx(df.filter(pl.col("g") == 1).select(fair).item())
    assert summary["crps"][0] == pytest.approx(
        df.filter(pl.col("g") == 0).select(pc.crps_ensemble("y", ensemble="x")).item()
    )


# --------------------------------------------------------------------------
# Central intervals
# --------------------------------------------------------------------------


def interval_summary(df: pl.DataFrame | pl.LazyFrame, **options: Any) -> Any:
    return pc.regression_summary(
        df, "y", lower=["lo0", "lo1"], upper=["hi0", "hi1"], level=[0.5, 0.9], **options
    )


def test_interval_summary_is_the_expressions_per_group_and_level() -> None:
    df = interval_frame()
    summary = interval_summary(df, by="group")
    assert summary.columns == [
        "group",
        "level",
        "count",
        "refused",
        "interval_coverage",
        "interval_width",
        "interval_score",
        "coverage_gap",
    ]
    for j, level in enumerate([0.5, 0.9]):
        lo, hi = f"lo{j}", f"hi{j}"
        expected = (
            df.group_by("group")
            .agg(
                pl.lit(level).alias("level"),
                pl.len().cast(pl.Int64).alias("count"),
                pc.interval_coverage("y", lower=lo, upper=hi).alias("interval_coverage"),
                pc.interval_width(lower=lo, upper=hi).alias("interval_width"),
                pc.interval_score("y", lower=lo, upper=hi, level=level).alias("interval_score"),
            )
            .with_columns((pl.col("interval_coverage") - level).alias("coverage_gap"))
            .sort("group")
        )
        got = summary.filter(pl.col("level") == level).select(expected.columns)
        assert_frame_equal(got, expected, rel_tol=RTOL)


@pytest.mark.parametrize("function", ["regression_coverage_score", "regression_mean_width_score"])
def test_interval_summary_is_mapie_per_group(function: str) -> None:
    summary = interval_summary(interval_frame(), by="group")
    column = "interval_coverage" if function == "regression_coverage_score" else "interval_width"
    for record in records(function, "intervals"):
        g = record["group"]
        part = summary if g is None else summary.filter(pl.col("group") == g)
        if g is None:
            part = interval_summary(interval_frame())
        np.testing.assert_allclose(part.sort("level")[column], record["value"], rtol=RTOL)


def test_interval_score_is_mapie_mwi_per_group() -> None:
    summary = interval_summary(interval_frame(), by="group")
    whole = interval_summary(interval_frame())
    for record in records("regression_mwi_score", "intervals"):
        g, level = record["group"], record["options"]["confidence_level"]
        part = whole if g is None else summary.filter(pl.col("group") == g)
        got = part.filter(pl.col("level") == level)["interval_score"].item()
        assert got == pytest.approx(record["value"], rel=RTOL)


@pytest.mark.parametrize("dataset", ["intervals", "mapie_gap_example"])
def test_coverage_gap_of_the_summary_is_mapie_coverage_gap(dataset: str) -> None:
    """MAPIE's `coverage_gap` is the documented one-liner over the summary's signed gaps."""
    df = interval_frame(dataset)
    cases = records("coverage_gap", dataset)
    assert cases
    for record in cases:
        j, level = record["options"]["level_index"], record["options"]["confidence_level"]
        summary = pc.regression_summary(
            df, "y", lower=f"lo{j}", upper=f"hi{j}", level=level, by="group"
        )
        gap = pl.col("coverage_gap").abs()
        if record["options"]["weighted"]:
            value = summary.select((gap * pl.col("count")).sum() / pl.col("count").sum()).item()
        else:
            value = summary.select(gap.mean()).item()
        assert value == pytest.approx(record["value"], rel=RTOL)
        average = "weighted" if record["options"]["weighted"] else "macro"
        expression = pc.coverage_gap(
            "y", lower=f"lo{j}", upper=f"hi{j}", level=level, groups="group", average=average
        )
        assert value == pytest.approx(df.select(expression).item(), rel=RTOL)


def test_interval_tables_of_two_halves_merge_to_the_whole() -> None:
    df = interval_frame()
    kwargs: dict[str, Any] = {"lower": ["lo0", "lo1"], "upper": ["hi0", "hi1"], "by": "group"}
    whole = pc.regression_statistics(df, "y", **kwargs)
    halves = pl.concat([pc.regression_statistics(p, "y", **kwargs) for p in (df[:41], df[41:])])
    sums = [c for c in whole.columns if c.startswith("sum_") or c in ("count", "weight")]
    merged = halves.group_by("group", "bin", "lower", "upper", "closed", "n_bins").agg(
        pl.col(sums).sum()
    )
    assert_frame_equal(merged.sort("group").select(whole.columns), whole, rel_tol=RTOL)


def test_interval_windows_and_weights_are_the_expressions(frame_context: FrameContext) -> None:
    df = interval_frame().with_columns(
        day=pl.Series([date(2026, 1, 1 + i % 20) for i in range(100)]),
        w=pl.Series([0.5 + (i % 3) for i in range(100)]),
    )
    result = frame_context.collect(
        pc.regression_summary(
            frame_context.frame(df),
            "y",
            lower="lo1",
            upper="hi1",
            level=0.9,
            by="group",
            time="day",
            every="1w",
            weight="w",
        )
    )
    expected = (
        df.with_columns(pl.col("day").dt.truncate("1w"))
        .group_by("group", "day")
        .agg(
            pc.interval_coverage("y", lower="lo1", upper="hi1", weight="w").alias(
                "interval_coverage"
            ),
            pc.interval_width(lower="lo1", upper="hi1", weight="w").alias("interval_width"),
            pc.interval_score("y", lower="lo1", upper="hi1", level=0.9, weight="w").alias(
                "interval_score"
            ),
        )
        .sort("group", "day")
    )
    assert result.height == expected.height > 6
    assert_frame_equal(result.select(expected.columns), expected, rel_tol=RTOL)
    gaps = result["coverage_gap"].to_numpy()
    assert (gaps > 0).any() and (gaps < 0).any()  # miscoverage in both directions


def test_one_sided_intervals_and_zero_weights_are_the_expressions() -> None:
    df = pl.DataFrame(
        {
            "g": [0, 0, 0, 1, 1],
            "y": [0.0, 5.0, 1.0, 2.0, -3.0],
            "lo": [-1.0, float("-inf"), 0.0, 1.0, 0.0],
            "hi": [1.0, 2.0, 2.0, float("inf"), 1.0],
            "w": [1.0, 0.0, 2.0, 1.0, 3.0],
        }
    )
    summary = pc.regression_summary(df, "y", lower="lo", upper="hi", level=0.8, by="g", weight="w")
    expected = (
        df.group_by("g")
        .agg(
            pc.interval_width(lower="lo", upper="hi", weight="w").alias("interval_width"),
            pc.interval_score("y", lower="lo", upper="hi", level=0.8, weight="w").alias(
                "interval_score"
            ),
        )
        .sort("g")
    )
    assert_frame_equal(summary.select(expected.columns), expected, rel_tol=RTOL)
    assert summary["interval_width"].to_list()[1] == float("inf")


def test_interval_refused_rows_raise_or_give_null_with_their_count() -> None:
    df = interval_frame("mapie_reversed")
    with pytest.raises(pc.CalibrationDataError, match=r"lower bound above the upper bound in 2 of"):
        pc.regression_summary(df, "y", lower="lo0", upper="hi0", level=0.5, by="group")
    lazy = pc.regression_summary(df.lazy(), "y", lower="lo0", upper="hi0", level=0.5, by="group")
    out = lazy.collect()
    assert out["refused"].sum() == 2
    bad = out.filter(pl.col("refused") > 0)
    assert bad["interval_coverage"].null_count() == bad.height


# --------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------


def test_exactly_one_prediction_form_per_call() -> None:
    df = ensemble_frame().with_columns(mu=pl.lit(0.0), sigma=pl.lit(1.0))
    with pytest.raises(TypeError, match="exactly one prediction form"):
        pc.regression_summary(df, "y", mean="mu", std="sigma", ensemble="x")
    with pytest.raises(TypeError, match=r"exactly one prediction form.*none"):
        pc.regression_statistics(df, "y")
    with pytest.raises(TypeError, match="`mean=` and `std=` go together"):
        pc.quantile_reliability(df, "y", mean="mu")
    with pytest.raises(TypeError, match="nominal `level`"):
        pc.regression_summary(df, "y", lower="mu", upper="sigma")
    with pytest.raises(TypeError, match="`seed=` and `id=` are the rank PIT's"):
        pc.regression_summary(df, "y", mean="mu", std="sigma", seed=3)
    with pytest.raises(ValueError, match="one level per interval"):
        pc.regression_summary(df, "y", lower="mu", upper="sigma", level=[0.5, 0.9])


@pytest.mark.parametrize(
    ("form", "metric"),
    [
        ({"ensemble": "x"}, "nll"),
        ({"ensemble": "x"}, "sharpness"),
        ({"lower": "mu", "upper": "sigma", "level": 0.5}, "crps"),
        ({"mean": "mu", "std": "sigma"}, "interval_coverage"),
        ({"mean": "mu", "std": "sigma"}, "crps_fair"),
    ],
)
def test_a_metric_the_form_lacks_is_a_value_error(form: dict[str, Any], metric: str) -> None:
    df = ensemble_frame().with_columns(mu=pl.lit(0.0), sigma=pl.lit(1.0))
    with pytest.raises(ValueError, match=f"`metrics` must be one of .*got {metric!r}"):
        pc.regression_summary(df, "y", metrics=[metric], **form)


def test_the_default_metrics_are_per_form() -> None:
    df = ensemble_frame().with_columns(mu=pl.lit(0.0), sigma=pl.lit(1.0), lo=-1.0, hi=1.0)
    gaussian = pc.regression_summary(df, "y", mean="mu", std="sigma")
    ensemble = pc.regression_summary(df, "y", ensemble="x")
    intervals = pc.regression_summary(df, "y", lower="lo", upper="hi", level=0.6)
    assert gaussian.columns[-3:] == ["crps", "nll", "sharpness"]
    assert ensemble.columns[-2:] == ["crps", "crps_fair"]
    assert intervals.columns[-1] == "coverage_gap"


def test_engines_need_an_id_for_ensembles() -> None:
    """On an engine the rank PIT's draws are keyed by an `id` column (refused before any job)."""
    dd = pytest.importorskip("dask.dataframe")
    pandas = pytest.importorskip("pandas")
    frame = dd.from_pandas(pandas.DataFrame({"y": [0.0, 1.0], "x": [[0.0], [1.0]]}), npartitions=1)
    with pytest.raises(ValueError, match="ensemble predictions on dask need `id=`"):
        pc.regression_statistics(frame, "y", ensemble="x")
