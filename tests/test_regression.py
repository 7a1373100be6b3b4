"""Gaussian regression calibration: the frame functions and expressions against the peers.

The peers' numbers are in ``tests/data/regression/fixtures.json`` (uncertainty-toolbox
0.1.1, properscoring, scoringrules, an mpmath table; see ``PEERS.md``); random frames
are checked against ``tests/reference_regression.py``.
"""

from __future__ import annotations

import json
import math
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc
import reference_regression as rr
from conftest import CountingSource, FrameContext, streams

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"

CURVE_FUNCTIONS = (
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
)
EXPRESSIONS = {
    "mean_absolute_calibration_error": pc.mean_absolute_calibration_error,
    "root_mean_squared_calibration_error": pc.root_mean_squared_calibration_error,
    "miscalibration_area": pc.miscalibration_area,
}


@cache
def _fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


def _dataset(name: str) -> pl.DataFrame:
    columns = _fixtures()["datasets"][name]
    return pl.DataFrame({k: columns[k] for k in ("group", "mu", "sigma", "y")})


def _records(*functions: str) -> list[dict[str, Any]]:
    return [
        r
        for r in _fixtures()["records"]
        if r["peer"] == "uncertainty-toolbox"
        and r["function"] in functions
        and r["dataset"] in ("gaussian", "gaussian_edges", "ut_fixture")
    ]


def _rows(record: dict[str, Any]) -> pl.DataFrame:
    df = _dataset(record["dataset"])
    return df if record["group"] is None else df.filter(pl.col("group") == record["group"])


def _id(record: dict[str, Any]) -> str:
    options = "-".join(str(v) for v in record["options"].values())
    return f"{record['function']}-{record['dataset']}-{record['group']}-{options}"


# --------------------------------------------------------------------------
# The PIT against mpmath
# --------------------------------------------------------------------------


def _pit_table() -> pl.DataFrame:
    table = _fixtures()["gaussian_table"]
    frame = pl.DataFrame({"z": table["z"], "cdf": table["cdf"]})
    return frame.with_columns(
        pc.pit("z", mean=pl.lit(0.0), std=pl.lit(1.0)).alias("u"),
    ).with_columns(((pl.col("u") - pl.col("cdf")) / pl.col("cdf")).abs().alias("relative"))


def test_pit_is_relatively_accurate_against_mpmath() -> None:
    table = _pit_table()
    assert table.filter(pl.col("z").abs() <= 8.0)["relative"].max() <= 1e-13
    # The lower tail where (1 + erf(z / sqrt 2)) / 2 is off by 3e-2.
    assert table.filter(pl.col("z") == -7.96)["relative"].item() <= 1e-13
    # Down to -37.5: the rounding of z / sqrt 2 costs about z^2 2^-53 (docs/regression.md).
    assert table.filter(pl.col("z") >= -37.5)["relative"].max() <= 2e-12


def test_pit_scales_and_shifts() -> None:
    df = pl.DataFrame({"y": [3.0, 1.0], "mu": [1.0, 1.0], "s": [2.0, 0.5]})
    u = df.select(pc.pit("y", mean="mu", std="s"))["y"].to_list()
    assert u == [pytest.approx(0.8413447460685429, rel=1e-15), 0.5]


# --------------------------------------------------------------------------
# uncertainty-toolbox's numbers: its records and its own test suite's values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("record", _records(*CURVE_FUNCTIONS), ids=_id)
def test_curve_metrics_reproduce_uncertainty_toolbox(record: dict[str, Any]) -> None:
    rows, curve = _rows(record), record["options"]["prop_type"]
    name = record["function"]
    summary = pc.regression_summary(rows, "y", mean="mu", std="sigma", metrics=name, curve=curve)
    expression = rows.select(EXPRESSIONS[name]("y", mean="mu", std="sigma", curve=curve))
    assert summary[name].item() == pytest.approx(record["value"], rel=1e-12, abs=1e-15)
    assert expression.item() == pytest.approx(record["value"], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("record", _records("sharpness", "nll_gaussian", "crps_gaussian"), ids=_id)
def test_scores_reproduce_uncertainty_toolbox(record: dict[str, Any]) -> None:
    rows = _rows(record)
    name = {"sharpness": "sharpness", "nll_gaussian": "nll", "crps_gaussian": "crps"}[
        record["function"]
    ]
    summary = pc.regression_summary(rows, "y", mean="mu", std="sigma", metrics=name)
    assert summary[name].item() == pytest.approx(record["value"], rel=1e-12)


def _suite_value_id(value: dict[str, Any]) -> str:
    return f"{value['function']}-{'-'.join(map(str, value['options'].values()))}"


SUITE = [
    v
    for v in _fixtures()["suite_values"]
    if "uncertainty-toolbox" in v["source"]
    and v["function"] in (*CURVE_FUNCTIONS, "sharpness", "nll_gaussian", "crps_gaussian")
    and v["inputs"].get("mu") == [1.0, 2.0, 3.0]
]


@pytest.mark.parametrize("value", SUITE, ids=_suite_value_id)
def test_uncertainty_toolbox_test_suite_values(value: dict[str, Any]) -> None:
    inputs = value["inputs"]
    df = pl.DataFrame({"y": inputs["y"], "mu": inputs["mu"], "s": inputs["sigma"]})
    curve = value["options"].get("prop_type", "interval")
    name = {"nll_gaussian": "nll", "crps_gaussian": "crps"}.get(
        value["function"], value["function"]
    )
    got = pc.regression_summary(df, "y", mean="mu", std="s", metrics=name, curve=curve)[name].item()
    # Its own tolerance is 1e-6; the CRPS is quoted to 11 digits, the others in full.
    rel = 1e-10 if name == "crps" else 1e-12
    assert got == pytest.approx(value["expected"], rel=rel)


@pytest.mark.parametrize("dataset", ["gaussian", "ut_fixture", "tails"])
def test_crps_per_row_reproduces_properscoring_and_scoringrules(dataset: str) -> None:
    columns = _fixtures()["datasets"][dataset]
    df = pl.DataFrame({k: columns[k] for k in ("mu", "sigma", "y")}).with_row_index()
    per_row = df.group_by("index", maintain_order=True).agg(
        pc.crps("y", mean="mu", std="sigma").alias("crps"),
        pc.nll("y", mean="mu", std="sigma").alias("nll"),
    )
    for record in _fixtures()["records"]:
        if (
            record["dataset"] == dataset
            and record["function"] in ("crps_gaussian", "crps_normal")
            and isinstance(record["value"], list)
        ):
            np.testing.assert_allclose(per_row["crps"].to_numpy(), record["value"], rtol=1e-12)
    # The published -log N(y; mu, sigma^2) stays finite where scoringrules' overflows.
    assert per_row["nll"].is_finite().all()
    expected = rr.nll_gaussian_rows(columns["y"], columns["mu"], columns["sigma"])
    np.testing.assert_allclose(per_row["nll"].to_numpy(), expected, rtol=1e-14)


@pytest.mark.parametrize("curve", ["interval", "quantile"])
def test_curve_is_the_pit_curve_of_uncertainty_toolbox(curve: str) -> None:
    """The interval curve equals uncertainty-toolbox's; its quantile curve is mirrored."""
    df = _dataset("gaussian")
    table = pc.quantile_reliability(df, "y", mean="mu", std="sigma", curve=curve)  # type: ignore[arg-type]
    u = rr.pit_gaussian(df["y"], df["mu"], df["sigma"])
    expected = (rr.interval_curve if curve == "interval" else rr.quantile_curve)(
        u, [j / 99 for j in range(100)]
    )
    np.testing.assert_array_equal(table["observed"].to_numpy(), expected)
    assert table["level"].to_list() == [j / 99 for j in range(100)]
    if curve == "interval":
        (record,) = [
            r
            for r in _fixtures()["records"]
            if r["function"] == "get_proportion_lists"
            and r["dataset"] == "gaussian"
            and r["group"] is None
            and r["options"]["prop_type"] == "interval"
        ]
        np.testing.assert_array_equal(table["observed"].to_numpy(), record["value"][1])


def test_interval_curve_counts_a_target_on_the_mean_at_level_zero() -> None:
    df = pl.DataFrame({"y": [1.0, 2.5, 0.0], "mu": [1.0, 2.0, 0.3], "s": [1.0, 1.0, 1.0]})
    table = pc.quantile_reliability(df, "y", mean="mu", std="s", n_levels=3, curve="interval")
    assert table["observed"][0] == pytest.approx(1 / 3)


def test_wilson_interval_per_level() -> None:
    df = _dataset("ut_fixture")
    table = pc.quantile_reliability(df, "y", mean="mu", std="sigma", n_levels=5, confidence=0.9)
    z = 1.6448536269514722
    for row in table.iter_rows(named=True):
        s, n = row["observed"] * 3, 3.0
        centre, half = (s + z * z / 2) / (n + z * z), z * math.sqrt(s * (n - s) / n + z * z / 4)
        assert row["lower"] == pytest.approx(centre - half / (n + z * z), abs=1e-12)
        assert row["upper"] == pytest.approx(centre + half / (n + z * z), abs=1e-12)


# --------------------------------------------------------------------------
# Random frames against the reference
# --------------------------------------------------------------------------


def _random_frame(seed: int, n: int, with_nulls: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    mu = rng.normal(0.0, 2.0, n)
    sigma = rng.uniform(0.2, 2.0, n)
    # Under-confident in group 0, over-confident in group 1, both in group 2 (by sigma):
    # the curve's gap changes sign across groups and within group 2.
    scale = np.where(group == 0, 0.6, np.where(group == 1, 1.7, np.where(sigma < 1, 1.6, 0.6)))
    y = mu + scale * sigma * rng.normal(size=n)
    weight = rng.integers(0, 4, n).astype(float)
    df = pl.DataFrame({"g": group, "mu": mu, "sigma": sigma, "y": y, "w": weight})
    if with_nulls:
        mask = pl.Series(rng.random(n) < 0.1)
        df = df.with_columns(pl.when(~mask).then(pl.col("y")).alias("y"))
    return df


def _reference_metrics(df: pl.DataFrame, curve: str, n_levels: int) -> dict[str, float]:
    used = df.drop_nulls()
    # An integer weight counts a row that many times.
    repeated = used.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode()).drop_nulls()
    y, mu, s = (repeated[c].to_numpy() for c in ("y", "mu", "sigma"))
    u = rr.pit_gaussian(y, mu, s)
    levels = np.array([j / (n_levels - 1) for j in range(n_levels)])
    obs = (rr.interval_curve if curve == "interval" else rr.quantile_curve)(u, levels)
    if curve == "interval":
        # The closed interval at level 0 is the target on the mean (y == mu).
        obs[0] = np.mean(y == mu)
    return {
        "mean_absolute_calibration_error": rr.mace(levels, obs),
        "root_mean_squared_calibration_error": rr.rmsce(levels, obs),
        "miscalibration_area": rr.miscalibration_area(levels, obs),
        "quantile_calibration_score": rr.kuleshov_score(u, levels),
        "crps": float(np.mean(rr.crps_gaussian_rows(y, mu, s))),
        "nll": float(np.mean(rr.nll_gaussian_rows(y, mu, s))),
        "sharpness": rr.sharpness(s),
    }


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    curve=st.sampled_from(["interval", "quantile"]),
    n_levels=st.sampled_from([2, 3, 11, 100]),
    with_nulls=st.booleans(),
)
def test_summary_and_expressions_match_the_reference(
    seed: int, n: int, curve: str, n_levels: int, with_nulls: bool
) -> None:
    df = _random_frame(seed, n, with_nulls)
    summary = pc.regression_summary(
        df,
        "y",
        mean="mu",
        std="sigma",
        by="g",
        weight="w",
        n_levels=n_levels,
        curve=curve,  # type: ignore[arg-type]
    )
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "weight": "w"}
    curved = {**options, "n_levels": n_levels, "curve": curve}
    expressions = df.group_by("g").agg(
        *(f("y", **curved).alias(name) for name, f in EXPRESSIONS.items()),
        pc.quantile_calibration_score("y", **options, n_levels=n_levels).alias(
            "quantile_calibration_score"
        ),
        pc.crps("y", **options).alias("crps"),
        pc.nll("y", **options).alias("nll"),
        pc.sharpness(pl.when(pl.col("y").is_not_null()).then(pl.col("sigma")), weight="w").alias(
            "sharpness"
        ),
    )
    for row in summary.iter_rows(named=True):
        group = df.filter(pl.col("g") == row["g"])
        expression = expressions.filter(pl.col("g") == row["g"]).row(0, named=True)
        if group.drop_nulls()["w"].sum() == 0:
            assert row["crps"] is None
            assert expression["crps"] is None
            continue
        expected = _reference_metrics(group, curve, n_levels)
        for name, value in expected.items():
            assert row[name] == pytest.approx(value, rel=1e-10, abs=1e-14), name
            assert expression[name] == pytest.approx(value, rel=1e-10, abs=1e-14), name


# --------------------------------------------------------------------------
# Speed (docs/performance.md, "Regression"): what a plan computes per row
# --------------------------------------------------------------------------


def test_a_frame_plan_computes_the_pit_once_a_row() -> None:
    # The PIT (an erfc a row) is a column before the table's aggregation: the bin,
    # `sum_p` and the CRPS read it there (an aggregation would compute each again).
    lf = _random_frame(1, 20, True).lazy()
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "by": "g", "weight": "w"}
    plans = [
        pc.regression_summary(lf, "y", **options, metrics=metrics)
        for metrics in (["mean_absolute_calibration_error"], ["crps"], None)
    ]
    plans.append(pc.regression_statistics(lf, "y", **options))
    plans.append(pc.quantile_reliability(lf, "y", **options))
    for plan in plans:
        assert plan.explain().count("erfc") == 1


def test_a_summary_table_sums_only_the_terms_of_its_metrics() -> None:
    from polars_calib._table.regression import REGRESSION_METRICS, regression_terms

    assert regression_terms(["mean_absolute_calibration_error"]) == ["center"]
    assert regression_terms(["sharpness", "crps"]) == ["crps", "variance"]
    # The default metrics: every term but the squared error (the variance tables').
    assert regression_terms(REGRESSION_METRICS) == ["crps", "nll", "variance", "center"]


def test_score_expressions_compute_the_pit_only_for_the_crps() -> None:
    # The rows used are counted from `present`, not from the PIT.
    assert str(pc.crps("y", mean="mu", std="sigma", weight="w")).count("erfc") == 1
    assert "erfc" not in str(pc.nll("y", mean="mu", std="sigma"))
    assert "erfc" not in str(pc.sharpness("sigma"))


# --------------------------------------------------------------------------
# Contexts, merging, laziness
# --------------------------------------------------------------------------


def test_expressions_run_in_select_over_group_by_and_streaming() -> None:
    df = _random_frame(3, 200, False)
    expr = pc.mean_absolute_calibration_error("y", mean="mu", std="sigma")
    frame = pc.regression_summary(df, "y", mean="mu", std="sigma", by="g")
    grouped = df.lazy().group_by("g").agg(expr.alias("mace"), pc.crps("y", mean="mu", std="sigma"))
    streamed = grouped.collect(engine="streaming").sort("g")
    assert_frame_equal(grouped.collect().sort("g"), streamed)
    np.testing.assert_allclose(
        streamed["mace"], frame["mean_absolute_calibration_error"], rtol=1e-14
    )
    np.testing.assert_allclose(streamed["y"], frame["crps"], rtol=1e-14)
    over = df.select("g", expr.over("g").alias("mace")).unique().sort("g")
    np.testing.assert_allclose(over["mace"], frame["mean_absolute_calibration_error"], rtol=1e-14)
    whole = df.lazy().select(expr).collect(engine="streaming").item()
    assert whole == pytest.approx(
        pc.regression_summary(df, "y", mean="mu", std="sigma")[
            "mean_absolute_calibration_error"
        ].item(),
        rel=1e-14,
    )


def test_every_context_gives_the_same_summary(frame_context: FrameContext) -> None:
    df = _random_frame(5, 150, True)
    expected = pc.regression_summary(df, "y", mean="mu", std="sigma", by="g", weight="w")
    result = pc.regression_summary(
        frame_context.frame(df), "y", mean="mu", std="sigma", by="g", weight="w"
    )
    assert_frame_equal(frame_context.collect(result), expected, rel_tol=1e-13)


def test_tables_of_two_halves_merge_into_the_whole() -> None:
    df = _random_frame(7, 300, True)
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "by": "g", "weight": "w"}
    whole = pc.regression_statistics(df, "y", **options)
    halves = [pc.regression_statistics(part, "y", **options) for part in (df[:140], df[140:])]
    keys = ["g", "bin", "lower", "upper", "closed", "n_bins"]
    merged = (
        pl.concat(halves)
        .group_by(keys)
        .agg(pl.exclude(keys).sum())
        .sort("g", "bin", nulls_last=True)
        .select(whole.columns)
    )
    assert_frame_equal(merged, whole, rel_tol=1e-13)
    assert whole["n_bins"].unique().to_list() == [198]
    assert whole["closed"].unique().to_list() == ["right"]


def test_a_lazyframe_reads_nothing_until_collected() -> None:
    source = CountingSource(_random_frame(1, 50, False))
    lf = source.frame()
    plans = [
        lf.calib.regression_summary("y", mean="mu", std="sigma", by="g"),
        lf.calib.regression_statistics("y", mean="mu", std="sigma", by="g"),
        lf.calib.quantile_reliability("y", mean="mu", std="sigma", by="g"),
    ]
    assert source.reads == 0
    plans[0].collect()
    assert source.reads == 1


def test_time_windows_are_keys() -> None:
    days = [date(2026, 1, 1 + i // 10) for i in range(60)]  # Thursday 1 to Tuesday 6
    df = _random_frame(2, 60, False).with_columns(pl.Series("day", days))
    summary = pc.regression_summary(df, "y", mean="mu", std="sigma", time="day", every="1w")
    assert summary["count"].sum() == 60
    assert summary.height == 2


# --------------------------------------------------------------------------
# Bad data
# --------------------------------------------------------------------------

BAD = [
    ("sigma", -1.0, "'sigma': standard deviation not a positive finite number in 1 of 4 rows"),
    ("sigma", 0.0, "'sigma': standard deviation not a positive finite number in 1 of 4 rows"),
    ("sigma", float("nan"), "'sigma': standard deviation not a positive finite number in 1 of"),
    ("sigma", float("inf"), "'sigma': standard deviation not a positive finite number in 1 of"),
    ("y", float("nan"), "'y': target NaN or infinite in 1 of 4 rows"),
    ("y", float("-inf"), "'y': target NaN or infinite in 1 of 4 rows"),
    ("mu", float("inf"), "'mu': mean NaN or infinite in 1 of 4 rows"),
    ("w", -1.0, "'w': weight negative in 1 of 4 rows"),
]


def _with_bad(column: str, value: float) -> pl.DataFrame:
    df = pl.DataFrame(
        {
            "g": [0, 0, 1, 1],
            "y": [0.1, 0.5, 1.0, 2.0],
            "mu": [0.0, 0.4, 1.2, 1.0],
            "sigma": [1.0, 0.5, 0.3, 2.0],
            "w": [1.0, 2.0, 1.0, 1.0],
        }
    )
    return df.with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(value).otherwise(pl.col(column)).alias(column)
    )


@pytest.mark.parametrize(("column", "value", "message"), BAD)
def test_refused_rows_raise_on_a_dataframe(column: str, value: float, message: str) -> None:
    df = _with_bad(column, value)
    for function in (pc.regression_summary, pc.regression_statistics, pc.quantile_reliability):
        with pytest.raises(pc.CalibrationDataError, match=message):
            function(df, "y", mean="mu", std="sigma", by="g", weight="w")


@pytest.mark.parametrize(("column", "value", "message"), BAD)
def test_refused_rows_give_null_in_expressions_and_lazy_frames(
    column: str, value: float, message: str
) -> None:
    df = _with_bad(column, value)
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "weight": "w"}
    got = (
        df.group_by("g")
        .agg(
            pc.mean_absolute_calibration_error("y", **options).alias("mace"),
            pc.crps("y", **options).alias("crps"),
        )
        .sort("g")
    )
    assert got["mace"].to_list()[0] is None
    assert got["crps"].to_list()[0] is None
    assert got["mace"].to_list()[1] is not None
    lazy = pc.regression_summary(df.lazy(), "y", by="g", **options).collect()
    assert lazy["refused"].to_list() == [1, 0]
    assert lazy["crps"].to_list()[0] is None
    assert lazy["crps"].to_list()[1] is not None
    if column != "w":
        assert df.select(pc.pit("y", mean="mu", std="sigma"))["y"][1] is None


def test_nulls_are_ignored_and_a_group_of_nulls_keeps_its_row() -> None:
    df = pl.DataFrame(
        {
            "g": [0, 0, 0, 1],
            "y": [0.1, None, 1.0, None],
            "mu": [0.0, 0.4, 1.2, 1.0],
            "sigma": [1.0, 0.5, 0.3, 2.0],
        }
    )
    summary = pc.regression_summary(df, "y", mean="mu", std="sigma", by="g")
    assert summary["count"].to_list() == [2, 0]
    assert summary["refused"].to_list() == [0, 0]
    assert summary["crps"][1] is None
    expected = pc.regression_summary(df.drop_nulls(), "y", mean="mu", std="sigma", by="g")
    assert_frame_equal(summary.head(1), expected)
    table = pc.quantile_reliability(df, "y", mean="mu", std="sigma", by="g", n_levels=3)
    assert table.filter(pl.col("g") == 1)["observed"].to_list() == [None, None, None]


def test_non_numeric_columns_are_refused_when_planned() -> None:
    df = pl.DataFrame({"y": ["a"], "mu": [0.0], "sigma": [1.0]})
    with pytest.raises(pc.CalibrationDataError, match="'y' holds String, but the target"):
        pc.regression_summary(df.lazy(), "y", mean="mu", std="sigma")
    with pytest.raises(pl.exceptions.PolarsError, match="'y' must hold numbers"):
        df.select(pc.crps("y", mean="mu", std="sigma"))


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"n_levels": 1}, ValueError),
        ({"n_levels": 2.5}, TypeError),
        ({"curve": "interval "}, ValueError),
    ],
)
def test_bad_options_raise(options: dict[str, Any], error: type[Exception]) -> None:
    df = _dataset("ut_fixture")
    with pytest.raises(error):
        pc.regression_summary(df, "y", mean="mu", std="sigma", **options)
    with pytest.raises(error):
        pc.miscalibration_area("y", mean="mu", std="sigma", **options)


def test_the_fallback_observable_sees_an_aggregation_over_a_list() -> None:
    lf = _random_frame(3, 20, False).lazy()
    assert not streams(lf.group_by("g").agg(pl.col("y").implode().list.len()))
    assert streams(lf.group_by("g").agg(pl.col("y").mean()))


@pytest.mark.parametrize("curve", ["interval", "quantile"])
@pytest.mark.parametrize("weight", [None, "w"])
def test_curve_expressions_stream_in_group_by(curve: str, weight: str | None) -> None:
    # Groups under- and over-dispersed (the curve's gap changes sign), with null rows.
    df = _random_frame(11, 300, True)
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "weight": weight}
    query = (
        df.lazy()
        .group_by("g")
        .agg(
            *(f("y", **options, curve=curve).alias(name) for name, f in EXPRESSIONS.items()),  # type: ignore[arg-type]
            pc.quantile_calibration_score("y", **options).alias("quantile_calibration_score"),
        )
    )
    assert streams(query)
    streamed = query.sort("g").collect(engine="streaming")
    summary = pc.regression_summary(
        df,
        "y",
        **options,
        by="g",
        curve=curve,
        metrics=list(streamed.columns[1:]),  # type: ignore[arg-type]
    )
    assert_frame_equal(streamed, summary.drop("count", "refused"), check_exact=True)
