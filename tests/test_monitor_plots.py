"""Drift charts: the CUSUM charts pc.monitor watches, its alarms, the O - E chart, decimation."""

from __future__ import annotations

import math
from datetime import date
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc

alt = pytest.importorskip("altair")

SERIES, PANEL = "__series__", "__panel__"


def _log(n: int = 400, seed: int = 3, shift: float = 3.0) -> pl.DataFrame:
    """Two models over integer times (ties included); from the middle on, model b's
    odds of an event are multiplied by `shift` and model a's divided by it: both
    charts alarm, in both directions."""
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, n // 2, n))
    model = rng.choice(["a", "b"], n)
    p = rng.uniform(0.05, 0.95, n)
    factor = np.where(ts >= n // 4, np.where(model == "b", shift, 1 / shift), 1.0)
    odds = factor * p / (1 - p)
    y = rng.random(n) < odds / (1 + odds)
    w = rng.uniform(0.5, 2.0, n)
    return pl.DataFrame({"model": model, "ts": ts, "p": p, "y": y, "w": w})


def _data(chart: Any) -> pl.DataFrame:
    """The rows an Altair chart draws (its one dataset)."""
    spec = chart.to_dict()
    (values,) = spec["datasets"].values()
    return pl.DataFrame(values, infer_schema_length=None)


def _restarted(p: np.ndarray, y: np.ndarray, w: np.ndarray, ratio: float, h: float) -> list[float]:
    """The Lindley recursion row by row, restarted at 0 after each value above `h`."""
    out, s = [], 0.0
    for pi, yi, wi in zip(p, y, w):
        s = max(0.0, s + wi * (yi * math.log(ratio) - math.log(1 - pi + ratio * pi)))
        out.append(s)
        if s > h:
            s = 0.0
    return out


@pytest.mark.parametrize("weight", [None, "w"])
def test_cusum_chart_marks_the_alarms_of_monitor(weight: str | None) -> None:
    log = _log()
    chart = pc.plot_cusum(log, "p", "y", by="model", time="ts", weight=weight, threshold=2.0)
    drawn = _data(chart)
    alarms = pc.monitor(log, "p", "y", by="model", time="ts", weight=weight, threshold=2.0)
    assert alarms.height >= 4
    assert set(alarms["odds_ratio"]) == {0.5, 2.0}
    marked = drawn.filter(pl.col("alarm")).select(
        pl.col(PANEL).str.strip_prefix("model = ").alias("model"),
        "ts",
        "odds_ratio",
        "statistic",
        "threshold",
        "run_start",
    )
    expected = alarms.sort("model", "ts", "odds_ratio")
    assert_frame_equal(marked.sort("model", "ts", "odds_ratio"), expected, check_dtypes=False)
    # The down chart (R = 0.5) is drawn below zero, its threshold too.
    down = drawn.filter(pl.col("odds_ratio") == 0.5)
    assert (down["value"] <= 0).all() and (down["limit"] == -2.0).all()
    assert (drawn.filter(pl.col("odds_ratio") == 2.0)["value"] >= 0).all()


def test_cusum_chart_is_the_restarted_recursion() -> None:
    log = _log()
    drawn = _data(pc.plot_cusum(log, "p", "y", by="model", time="ts", weight="w", threshold=2.0))
    assert drawn.height == 2 * log.height  # small: every row drawn
    for (model,), rows in (
        log.with_row_index().sort("model", "ts", "index").group_by("model", maintain_order=True)
    ):
        p, y, w = (rows[name].to_numpy() for name in ("p", "y", "w"))
        for ratio, sign in ((2.0, 1.0), (0.5, -1.0)):
            expected = sign * np.array(_restarted(p, y.astype(float), w, ratio, 2.0))
            got = drawn.filter(pl.col(PANEL) == f"model = {model}", pl.col("odds_ratio") == ratio)[
                "value"
            ]
            np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-9, atol=1e-9)


def test_matplotlib_draws_the_same_charts() -> None:
    pytest.importorskip("matplotlib")
    log = _log()
    drawn = _data(pc.plot_cusum(log, "p", "y", by="model", time="ts", threshold=2.0))
    figure = pc.plot_cusum(
        log, "p", "y", by="model", time="ts", threshold=2.0, backend="matplotlib"
    )
    assert [ax.get_title(loc="left") for ax in figure.axes] == ["model = a", "model = b"]
    for ax in figure.axes:
        rows = drawn.filter(pl.col(PANEL) == ax.get_title(loc="left"))
        lines = {line.get_label(): line for line in ax.get_lines()}
        for name, series in rows.group_by(SERIES, maintain_order=True):
            np.testing.assert_allclose(lines[name[0]].get_ydata(), series["value"].to_numpy())
        thresholds = sorted(
            line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"
        )
        assert thresholds == [-2.0, 2.0]
        (markers,) = ax.collections
        alarms = rows.filter(pl.col("alarm"))
        assert sorted(markers.get_offsets()[:, 1].tolist()) == sorted(alarms["value"].to_list())


def test_decimation_keeps_every_alarm_and_bounds_the_points() -> None:
    log = _log(n=5_000, seed=5, shift=1.6)
    drawn = _data(
        pc.plot_cusum(log, "p", "y", by="model", time="ts", threshold=3.0, max_points=200)
    )
    alarms = pc.monitor(log, "p", "y", by="model", time="ts", threshold=3.0)
    assert 10 < alarms.height < 800
    per_panel = drawn.group_by(PANEL).agg(pl.len(), pl.col("alarm").sum())
    # At most max_points rows, plus each alarm and each run's maximum.
    assert (per_panel["len"] <= 200 + 2 * per_panel["alarm"] + 2).all()
    assert drawn["alarm"].sum() == alarms.height
    # The extremes of every chart are drawn.
    charts = log.with_columns(up=pc.observed_minus_expected("p", "y").over("model", order_by="ts"))
    assert drawn.height < charts.height
    oe = _data(pc.plot_observed_minus_expected(log, "p", "y", by="model", time="ts", max_points=40))
    assert oe.height <= 2 * 40
    for (model,), rows in charts.group_by("model"):
        got = oe.filter(pl.col(PANEL) == f"model = {model}")["value"]
        assert got.max() == rows["up"].max() and got.min() == rows["up"].min()


def _decimated(full: pl.DataFrame, max_points: int) -> pl.DataFrame:
    """The rows of a whole drawn chart (every row drawn, in each panel's and series'
    row order) that the decimation keeps: the documented rule, written over the whole
    frame (the charts keep them batch after batch)."""
    keys = [PANEL, SERIES]
    order = pl.int_range(pl.len()).over(keys)
    frame = full.with_columns(order.alias("position"))
    series = pl.col(SERIES).n_unique().over(PANEL)
    buckets = (pl.lit(max_points) // (4 * series)).clip(lower_bound=1)
    run = pl.col("alarm").shift(1, fill_value=False).cum_sum().over(keys)
    frame = frame.with_columns(
        (pl.col("position") * buckets // pl.len().over(keys)).alias("bucket"), run.alias("run")
    )
    at, value = pl.col("position"), pl.col("value").fill_nan(None)
    bucket = [*keys, "bucket"]
    kept = (
        (pl.len().over(PANEL) <= max_points)
        | pl.col("alarm")
        | (at == at.min().over(bucket))
        | (at == at.max().over(bucket))
        | (at == at.get(value.arg_min()).over(bucket))
        | (at == at.get(value.arg_max()).over(bucket))
        | (at == at.get(value.abs().arg_max()).over([*keys, "run"]))
    )
    return frame.filter(kept.fill_null(False)).drop("position", "bucket", "run")


def _logs() -> dict[str, tuple[pl.DataFrame, dict[str, Any]]]:
    """Logs with alarms both ways, ties in time, several groups (two keys, a null one),
    weights, a group out of time order, contradicted certain predictions, dates."""
    log = _log(n=1_200, seed=5, shift=2.0)
    certain = pl.int_range(pl.len()) % 97 == 5  # p = 0 with y = 1, p = 1 with y = 0
    day = pl.lit(date(2026, 10, 1)) + pl.duration(days="ts")
    return {
        "two groups": (log, {"by": "model", "threshold": 2.0}),
        "weights": (log, {"by": "model", "weight": "w", "threshold": 1.5}),
        "out of time order": (
            log.sample(fraction=1.0, shuffle=True, seed=1),
            {"by": "model", "threshold": 2.0},
        ),
        "certain predictions": (
            log.with_columns(p=pl.when(certain).then(1.0 - pl.col("y")).otherwise("p")),
            {"by": "model", "threshold": 3.0},
        ),
        "two keys, three charts": (
            log.with_columns(seg=pl.when(pl.col("ts") % 3 > 0).then(pl.col("ts") % 3)),
            {"by": ["model", "seg"], "threshold": 2.0, "odds_ratio": (0.5, 2.0, 3.0)},
        ),
        "dates, one group": (log.with_columns(ts=day), {"threshold": 2.5}),
    }


@pytest.mark.parametrize("case", list(_logs()))
def test_decimated_charts_keep_the_rows_of_the_rule(case: str) -> None:
    log, options = _logs()[case]
    max_points = 200 if case == "weights" else 40
    common = {"time": "ts", **options}
    full = _data(pc.plot_cusum(log, "p", "y", **common, max_points=10**6))
    assert full.height == log.height * len(options.get("odds_ratio", (0.5, 2.0)))
    assert full["alarm"].sum() >= 4
    drawn = _data(pc.plot_cusum(log, "p", "y", **common, max_points=max_points))
    assert drawn.height < full.height / 2
    assert_frame_equal(drawn, _decimated(full, max_points))
    oe = {name: value for name, value in common.items() if name in ("by", "time", "weight")}
    full = _data(pc.plot_observed_minus_expected(log, "p", "y", **oe, max_points=10**6))
    drawn = _data(pc.plot_observed_minus_expected(log, "p", "y", **oe, max_points=max_points))
    assert full.height == log.height and drawn.height < full.height
    assert_frame_equal(drawn, _decimated(full, max_points))


@pytest.mark.parametrize("shuffled", [False, True])
def test_charts_of_a_log_of_several_batches_are_the_decimated_expressions(
    shuffled: bool,
) -> None:
    # Longer than a batch of the monitor's pass (65,536 rows): buckets and runs cross
    # batches. Without alarms the restarted chart is pc.cusum's, to the bit.
    n = 70_000
    rng = np.random.default_rng(11)
    p = rng.uniform(0.05, 0.95, n)
    log = pl.DataFrame(
        {
            "model": rng.choice(["a", "b"], n),
            "ts": np.arange(n) // 3,
            "p": p,
            "y": rng.random(n) < p,
        }
    )
    if shuffled:  # the groups' times go back: the rows are sorted out of memory first
        log = log.sample(fraction=1.0, shuffle=True, seed=2)
    ordered = log.with_row_index().sort("model", "ts", "index")
    panel = pl.format("model = {}", "model").alias(PANEL)
    series = {2.0: "R = 2 (under-prediction)", 0.5: "R = 0.5 (over-prediction)"}
    charts = [
        ordered.select(
            panel,
            pl.lit(name).alias(SERIES),
            (sign * pc.cusum("p", "y", odds_ratio=ratio).over("model")).alias("value"),
            pl.lit(False).alias("alarm"),
        )
        for (ratio, name), sign in zip(series.items(), (1.0, -1.0))
    ]
    full = pl.concat(charts).sort(PANEL, SERIES, maintain_order=True)
    drawn = _data(pc.plot_cusum(log, "p", "y", by="model", time="ts", threshold=1e9, max_points=64))
    assert_frame_equal(drawn.select(full.columns), _decimated(full, 64))
    full = ordered.select(
        panel,
        pl.lit("observed − expected").alias(SERIES),
        pc.observed_minus_expected("p", "y").over("model").alias("value"),
        pl.lit(False).alias("alarm"),
    )
    drawn = _data(
        pc.plot_observed_minus_expected(log, "p", "y", by="model", time="ts", max_points=64)
    )
    assert_frame_equal(drawn.select(full.columns), _decimated(full, 64))


def test_ties_across_batches_keep_the_first_row() -> None:
    # O - E of p = 0.5 is exact: up to 10 at row 19, then 9.5 and 10 by turns, every
    # bucket's and the run's maximum tied with rows of the batch before (65,536 rows).
    y = np.r_[np.ones(20), np.tile([0.0, 1.0], 35_000)]
    log = pl.DataFrame({"ts": np.arange(len(y)), "p": 0.5, "y": y})
    drawn = _data(pc.plot_observed_minus_expected(log, "p", "y", time="ts", max_points=24))
    full = log.select(
        pl.lit("all rows").alias(PANEL),
        pl.lit("observed − expected").alias(SERIES),
        pc.observed_minus_expected("p", "y").alias("value"),
        pl.lit(False).alias("alarm"),
    )
    assert_frame_equal(drawn.select(full.columns), _decimated(full, 24))


def test_oe_chart_is_the_expression_over_each_group() -> None:
    log = _log()
    drawn = _data(pc.plot_observed_minus_expected(log, "p", "y", by="model", time="ts", weight="w"))
    expected = (
        log.with_row_index()
        .sort("model", "ts", "index")
        .select(
            pl.format("model = {}", "model").alias(PANEL),
            pc.observed_minus_expected("p", "y", weight="w")
            .over("model", order_by="ts")
            .alias("value"),
        )
    )
    assert_frame_equal(drawn.select(PANEL, "value"), expected)
    assert drawn["limit"].is_null().all() and not drawn["alarm"].any()


def test_a_contradicted_certain_prediction_is_an_alarm_drawn_at_its_threshold() -> None:
    log = pl.DataFrame({"ts": [1, 2, 3, 4], "p": [0.3, 0.0, 0.2, 1.0], "y": [0, 1, 0, 0]})
    drawn = _data(pc.plot_cusum(log, "p", "y", time="ts", threshold=4.0))
    alarms = drawn.filter("alarm").select("ts", "odds_ratio", "value", "statistic")
    assert alarms.sort("ts").rows() == [(2, 2.0, 4.0, None), (4, 0.5, -4.0, None)]
    assert pc.monitor(log, "p", "y", time="ts", threshold=4.0)["statistic"].to_list() == [
        math.inf,
        math.inf,
    ]


def test_one_group_is_one_panel_and_dates_are_a_time_axis() -> None:

    log = _log().with_columns(day=pl.lit(date(2026, 10, 1)) + pl.duration(days="ts"))
    chart = pc.plot_cusum(log.filter(pl.col("model") == "a"), "p", "y", time="day", threshold=2.0)
    assert isinstance(chart, alt.LayerChart)
    spec = chart.to_dict()
    assert any(layer["encoding"].get("x", {}).get("type") == "temporal" for layer in spec["layer"])
    assert chart.to_dict()["title"] == "CUSUM charts (all rows)"


def test_bad_arguments_and_data() -> None:
    log = _log()
    with pytest.raises(ValueError, match="`max_points` must be at least 8"):
        pc.plot_cusum(log, "p", "y", time="ts", threshold=2.0, max_points=3)
    with pytest.raises(ValueError, match="backend"):
        pc.plot_observed_minus_expected(log, "p", "y", time="ts", backend="svg")  # type: ignore[call-overload]
    with pytest.raises(pc.CalibrationDataError, match="'p'"):
        pc.plot_cusum(log.with_columns(p=pl.col("p") + 1), "p", "y", time="ts", threshold=2.0)
    with pytest.raises(pc.CalibrationDataError, match="'when'"):
        pc.plot_observed_minus_expected(log, "p", "y", time="when")


def test_monitor_windows_chart_shades_the_limits_and_marks_the_alerts() -> None:
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(7)
    days = pl.DataFrame({"day": pl.date_range(date(2026, 9, 17), date(2026, 10, 5), eager=True)})
    log = days.join(pl.DataFrame({"model": ["a", "b"]}), how="cross").join(
        pl.DataFrame({"row": range(150)}), how="cross"
    )
    p = rng.uniform(0.05, 0.95, log.height)
    shifted = ((log["model"] == "b") & (log["day"] >= date(2026, 10, 1))).to_numpy()
    odds = np.where(shifted, 2.0, 1.0) * p / (1 - p)
    log = log.with_columns(p=p, y=rng.random(log.height) < odds / (1 + odds))
    windows = pc.monitor_windows(
        log, "p", "y", by="model", time="day", every="1d",
        reference=pl.col("day") < date(2026, 10, 1),
    )  # fmt: skip
    alerts = windows.filter("oe_ratio_alert")
    assert alerts.height >= 3 and set(alerts["model"]) == {"b"}
    chart = pc.plot_monitor_windows(windows, "oe_ratio", "day")
    assert '"triangle-up"' in chart.to_json()  # the alerts' layer
    drawn = _data(chart)
    np.testing.assert_allclose(drawn["oe_ratio_lower"], windows["oe_ratio_lower_limit"])
    np.testing.assert_allclose(drawn["oe_ratio_upper"], windows["oe_ratio_upper_limit"])
    assert drawn.filter(pl.col("__alert__"))["day"].to_list() == [
        f"{day}T00:00:00" for day in alerts["day"].to_list()
    ]
    figure = pc.plot_monitor_windows(windows, "oe_ratio", "day", backend="matplotlib")
    (markers,) = figure.axes[0].collections[-1:]
    np.testing.assert_allclose(markers.get_offsets()[:, 1], alerts["oe_ratio"].to_numpy())
    with pytest.raises(ValueError, match="oe_ratio_lower_limit"):
        pc.plot_monitor_windows(windows.drop("oe_ratio_lower_limit"), "oe_ratio", "day")


@pytest.mark.parametrize("kind", ["cusum", "oe"])
def test_a_chart_of_many_drawn_rows_can_be_shown(kind: str) -> None:
    # Four panels of about 2,000 drawn rows each: more than the 5,000 rows Altair
    # embeds from a data frame (MaxRowsError when the chart is shown), by design.
    rng = np.random.default_rng(5)
    n = 16_000
    p = rng.uniform(0.05, 0.95, n)
    log = pl.DataFrame(
        {
            "model": np.repeat(["a", "b", "c", "d"], n // 4),
            "day": np.tile(np.arange(n // 4), 4),
            "p": p,
            "y": rng.random(n) < p,
        }
    ).with_columns((pl.date(2026, 1, 1) + pl.duration(days=pl.col("day") // 40)).alias("day"))
    if kind == "cusum":
        chart = pc.plot_cusum(log, "p", "y", by="model", time="day", threshold=6.0)
    else:
        chart = pc.plot_observed_minus_expected(log, "p", "y", by="model", time="day")
    drawn = _data(chart)  # to_dict(), as a notebook does to show it
    assert drawn.height > 5_000
    # Dates drawn as Altair writes them (local midnight).
    assert drawn["day"][0] == "2026-01-01T00:00:00"


def test_a_null_group_and_the_text_null_get_a_panel_each() -> None:
    log = _log().with_columns(
        pl.when(pl.col("model") == "a").then(None).otherwise(pl.lit("null")).alias("model")
    )
    for plot in (pc.plot_cusum, pc.plot_observed_minus_expected):
        options = {"threshold": 2.0} if plot is pc.plot_cusum else {}
        drawn = _data(plot(log, "p", "y", by="model", time="ts", **options))
        panels = drawn.get_column(PANEL).unique(maintain_order=True).sort().to_list()
        assert panels == ["model = null", "model = null (2)"]
        # Each panel holds one group's rows: as many rows as drawing that group alone.
        for panel, group in (("model = null", None), ("model = null (2)", "null")):
            alone = log.filter(pl.col("model").eq_missing(group))
            single = _data(plot(alone, "p", "y", by="model", time="ts", **options))
            assert drawn.filter(pl.col(PANEL) == panel).height == single.height
