"""Windowed monitoring (``pc.monitor_windows``): the per-window summary numbers, every window
of the span, control limits from the reference windows, Garwood's interval, alerts."""

from __future__ import annotations

import json
import math
import statistics
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import CountingSource, FrameContext, sign_changing_labels

GARWOOD = json.loads((Path(__file__).parent / "data" / "garwood_scipy.json").read_text())
"""Garwood's bounds computed once with scipy (``chi2.ppf``): see the file's ``source``."""

START = date(2026, 9, 1)


def daily_log(seed: int, days: int, rows: int, *, shift_from: int | None = None) -> pl.DataFrame:
    """`rows` predictions a day for two models, outcomes miscalibrated with a sign change
    across [0, 1] (:func:`conftest.sign_changing_labels`); from day `shift_from` on, model
    "b" under-predicts: its outcomes' rate is raised by 0.2 more."""
    rng = np.random.default_rng(seed)
    n = days * rows * 2
    p = rng.random(n)
    day = np.repeat(np.arange(days), rows * 2)
    model = np.tile(np.repeat(["a", "b"], rows), days)
    y = sign_changing_labels(rng, p)
    if shift_from is not None:
        shifted = (model == "b") & (day >= shift_from)
        rate = np.clip(p + 0.25 * np.sin(2 * math.pi * p) + 0.2, 0.0, 1.0)
        y = np.where(shifted, rng.random(n) < rate, y).astype(np.int64)
    return pl.DataFrame(
        {
            "model": model,
            "day": [START + timedelta(days=int(d)) for d in day],
            "p": p,
            "y": y,
        }
    )


def test_the_metrics_are_the_per_window_summary(frame_context: FrameContext) -> None:
    log = daily_log(0, 6, 300)
    reference = pl.col("day") < date(2026, 9, 4)
    got = frame_context.collect(
        pc.monitor_windows(
            frame_context.frame(log),
            "p",
            "y",
            by="model",
            time="day",
            every="1d",
            reference=reference,
            n_bins=10,
        )
    )
    expected = pc.summary(
        log,
        "p",
        "y",
        by="model",
        time="day",
        every="1d",
        n_bins=10,
        metrics=["ece", "spiegelhalter_z"],
    )
    columns = expected.columns
    assert_frame_equal(got.select(columns), expected, check_exact=False, rel_tol=1e-12)
    ratio = got["oe_ratio"] - got["observed"] / got["mean_predicted"]
    assert ratio.abs().max() < 1e-12  # type: ignore[operator]


def test_every_window_of_the_span_is_a_row_per_group_empty_ones_with_count_0() -> None:
    log = daily_log(1, 8, 40).filter(
        (pl.col("day") != date(2026, 9, 4))  # no model that day
        & ~((pl.col("model") == "b") & (pl.col("day") < date(2026, 9, 3)))  # b starts late
    )
    got = log.calib.monitor_windows(
        "p", "y", by="model", time="day", every="1d", reference=pl.col("day") < date(2026, 9, 6)
    )
    days = [START + timedelta(days=d) for d in range(8)]
    assert got.select("model", "day").rows() == [(m, d) for m in ("a", "b") for d in days]
    empty = got.filter(pl.col("count") == 0)
    assert sorted(empty.select("model", "day").rows()) == [
        ("a", date(2026, 9, 4)),
        ("b", date(2026, 9, 1)),
        ("b", date(2026, 9, 2)),
        ("b", date(2026, 9, 4)),
    ]
    metrics = ["ece", "spiegelhalter_z", "oe_ratio", "oe_ratio_lower", "oe_ratio_upper"]
    assert empty.select(pl.col(metrics).is_null().all()).row(0) == (True,) * len(metrics)
    alerts = ["ece_alert", "spiegelhalter_z_alert", "oe_ratio_alert"]
    assert empty.select(pl.col(alerts).not_().all()).row(0) == (True,) * 3  # no alert
    assert not empty["reference"].any()


def test_the_limits_are_the_reference_mean_plus_minus_3_population_sds_by_hand() -> None:
    # Three reference days with O/E = 4/3, 2/3, 4/3: mean 10/9, variance (ddof=0) 24/243.
    log = pl.DataFrame(
        {
            "day": [date(2024, 3, d) for d in (1, 1, 1, 2, 2, 2, 3, 3, 3, 5, 5, 5)],
            "p": [0.2, 0.5, 0.8] * 3 + [0.1, 0.2, 0.3],
            "y": [0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0],
        }
    )
    got = log.calib.monitor_windows(
        "p", "y", time="day", every="1d", reference=pl.col("day") <= date(2024, 3, 3), n_bins=5
    )
    sd = math.sqrt(24 / 243)
    assert got["oe_ratio_upper_limit"].to_list() == pytest.approx([10 / 9 + 3 * sd] * 5, rel=1e-12)
    assert got["oe_ratio_lower_limit"].to_list() == pytest.approx([10 / 9 - 3 * sd] * 5, rel=1e-12)
    # 3.33 on the 5th: above 2.054 (strict comparison); the 4th is empty.
    assert got["oe_ratio_alert"].to_list() == [False, False, False, False, True]
    for metric, (low, high) in {
        "ece": (0.0, 1.0),
        "spiegelhalter_z": (-math.inf, math.inf),
    }.items():
        values = got.filter("reference")[metric].to_list()
        mean, spread = statistics.fmean(values), 3 * statistics.pstdev(values)
        lower = got[f"{metric}_lower_limit"].unique().item()
        upper = got[f"{metric}_upper_limit"].unique().item()
        assert lower == pytest.approx(min(max(mean - spread, low), high), abs=1e-12)
        assert upper == pytest.approx(min(max(mean + spread, low), high), abs=1e-12)


def test_the_limits_are_clipped_to_the_metric_range() -> None:
    # Reference ECEs 0.1, 0.1, 0.5: mean 0.7 / 3, sd (ddof=0) sqrt(0.32) / 3, so the
    # lower limit mean - 3 sd < 0 is clipped to 0; a window with p = 0 has no O/E ratio.
    log = pl.DataFrame(
        {
            "day": [date(2024, 3, d) for d in (1, 2, 3, 4)],
            "p": [0.1, 0.1, 0.5, 0.0],
            "y": [0, 0, 1, 0],
        }
    )
    got = log.calib.monitor_windows(
        "p", "y", time="day", every="1d", reference=pl.col("day") <= date(2024, 3, 3)
    )
    assert got["ece_lower_limit"].to_list() == [0.0] * 4
    assert got["ece_upper_limit"].to_list() == pytest.approx([0.7 / 3 + math.sqrt(0.32)] * 4)
    assert got["ece_alert"].to_list() == [False] * 4
    assert got.row(3, named=True)["oe_ratio"] is None
    assert got.row(3, named=True)["oe_ratio_upper"] is None


def test_garwood_interval_matches_scipy() -> None:
    for confidence in {case["confidence"] for case in GARWOOD["cases"]}:
        cases = [c for c in GARWOOD["cases"] if c["confidence"] == confidence]
        # A window per case: O positives among O + 1 rows at p = 1/2, so E = rows / 2.
        parts = []
        for k, case in enumerate(cases):
            rows = case["observed"] + 1
            parts.append(
                pl.DataFrame(
                    {
                        "day": [START + timedelta(days=k)] * rows,
                        "p": [0.5] * rows,
                        "y": [1] * case["observed"] + [0] * (rows - case["observed"]),
                    }
                )
            )
        got = pl.concat(parts).calib.monitor_windows(
            "p",
            "y",
            time="day",
            every="1d",
            reference=pl.col("day") < START,
            confidence=confidence,
        )
        expected = got["count"] * 0.5
        lower = (got["oe_ratio_lower"] * expected).to_list()
        upper = (got["oe_ratio_upper"] * expected).to_list()
        assert lower == pytest.approx([c["lower"] for c in cases], rel=1e-11, abs=1e-300)
        assert upper == pytest.approx([c["upper"] for c in cases], rel=1e-11)


def test_a_shift_raises_alerts_and_the_calibrated_model_does_not() -> None:
    log = daily_log(2, 30, 400, shift_from=20)
    got = (
        log.lazy()
        .calib.monitor_windows(
            "p",
            "y",
            by="model",
            time="day",
            every="1d",
            reference=(START, START + timedelta(days=20)),
            n_bins=10,
        )
        .collect()
    )
    after = got.filter(~pl.col("reference"))
    assert got.filter("reference").height == 40
    shifted = after.filter(pl.col("model") == "b")
    assert shifted["oe_ratio_alert"].all()
    # The ECE moves less (the shift narrows the gap where the model over-predicted).
    assert shifted["ece_alert"].sum() >= 3
    # The shift moves O/E above the limits, and Garwood's interval excludes 1.
    assert (shifted["oe_ratio"] > shifted["oe_ratio_upper_limit"]).all()
    assert (shifted["oe_ratio_lower"] > 1.0).all()
    calibrated = got.filter((pl.col("model") == "a") | pl.col("reference"))
    alerts = pl.col("ece_alert", "spiegelhalter_z_alert", "oe_ratio_alert")
    assert calibrated.select(alerts.any()).row(0) == (False, False, False)


def test_a_window_straddling_the_reference_boundary_is_not_a_reference_window() -> None:
    log = daily_log(3, 21, 20)  # 2026-09-01 is a Tuesday: weeks start on Mondays
    boundary = date(2026, 9, 10)  # a Thursday
    by_rows = log.calib.monitor_windows(
        "p", "y", by="model", time="day", every="1w", reference=pl.col("day") < boundary
    )
    by_pair = log.calib.monitor_windows(
        "p", "y", by="model", time="day", every="1w", reference=(date(2026, 8, 1), boundary)
    )
    weeks = by_rows.filter(pl.col("model") == "a").select("day", "reference").rows()
    # The first week (from Monday 2026-08-31) is inside; the week of the boundary is not.
    assert weeks == [
        (date(2026, 8, 31), True),
        (date(2026, 9, 7), False),
        (date(2026, 9, 14), False),
        (date(2026, 9, 21), False),
    ]
    assert_frame_equal(by_rows, by_pair)


def test_a_group_without_reference_windows_has_null_limits_and_alerts() -> None:
    log = daily_log(4, 6, 30).filter((pl.col("model") == "a") | (pl.col("day") >= date(2026, 9, 4)))
    got = log.calib.monitor_windows(
        "p", "y", by="model", time="day", every="1d", reference=pl.col("day") < date(2026, 9, 4)
    )
    b = got.filter(pl.col("model") == "b")
    limits = [c for c in got.columns if c.endswith(("_limit", "_alert"))]
    assert b.select(pl.col(limits).is_null().all()).row(0) == (True,) * len(limits)
    assert got.filter(pl.col("model") == "a")["oe_ratio_upper_limit"].null_count() == 0
    # One reference window gives no spread: null limits too.
    one = log.calib.monitor_windows(
        "p", "y", by="model", time="day", every="1d", reference=pl.col("day") < date(2026, 9, 2)
    )
    assert one["ece_upper_limit"].null_count() == one.height


def test_a_plan_reads_nothing_until_collected() -> None:
    log = daily_log(5, 4, 50)
    for reference, limits, reads in [
        ((START, START + timedelta(days=2)), "sigma", 1),
        (pl.col("day") < START + timedelta(days=2), "sigma", 2),  # documented: the flags
        # The replicates' table reads as `pc.summary(..., n_resamples=...)` does: twice.
        ((START, START + timedelta(days=2)), "bootstrap", 3),
    ]:
        source = CountingSource(log)
        plan = source.frame().calib.monitor_windows(
            "p",
            "y",
            by="model",
            time="day",
            every="1d",
            reference=reference,
            limits=limits,
            n_resamples=10,
        )  # type: ignore[arg-type]
        assert isinstance(plan, pl.LazyFrame)
        assert source.reads == 0
        assert plan.collect().height == 8
        assert source.reads == reads


def test_refused_rows_raise_on_a_dataframe_and_give_null_on_a_lazyframe() -> None:
    log = daily_log(6, 4, 20).with_columns(
        p=pl.when((pl.col("model") == "a") & (pl.col("day") == START)).then(1.5).otherwise("p")
    )
    options = {"time": "day", "every": "1d", "reference": pl.col("day") < date(2026, 9, 4)}
    with pytest.raises(pc.CalibrationDataError, match="'p'"):
        log.calib.monitor_windows("p", "y", by="model", **options)  # type: ignore[arg-type]
    got = log.lazy().calib.monitor_windows("p", "y", by="model", **options).collect()  # type: ignore[arg-type]
    bad = got.filter((pl.col("model") == "a") & (pl.col("day") == START))
    assert bad["refused"].item() == 20 and bad["ece"].item() is None
    assert bad["ece_alert"].item() is False


def test_weights_weight_the_ratio_and_give_no_exact_interval() -> None:
    log = daily_log(7, 4, 50).with_columns(w=pl.col("p") * 0 + 2.0)
    options = {"time": "day", "every": "1d", "reference": pl.col("day") < date(2026, 9, 3)}
    weighted = log.calib.monitor_windows("p", "y", weight="w", **options)  # type: ignore[arg-type]
    plain = log.calib.monitor_windows("p", "y", **options)  # type: ignore[arg-type]
    assert weighted["oe_ratio"].to_list() == pytest.approx(plain["oe_ratio"].to_list())
    assert weighted["oe_ratio_lower"].null_count() == weighted.height
    assert plain["oe_ratio_lower"].null_count() == 0


def test_rows_without_a_time_make_a_last_row_outside_the_span() -> None:
    log = daily_log(8, 3, 10).with_columns(
        day=pl.when(pl.int_range(pl.len()) < 5).then(None).otherwise("day")
    )
    got = pl.DataFrame(log).calib.monitor_windows(
        "p", "y", time="day", every="1d", reference=pl.col("day") < date(2026, 9, 3)
    )
    assert got["day"].to_list()[-1] is None and got["count"][-1] == 5
    assert got["ece_alert"][-1] is None and not got["reference"][-1]
    assert got.height == 4


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"reference": "day"}, TypeError, "`reference` must be"),
        ({"reference": (date(2026, 9, 3), date(2026, 9, 1))}, ValueError, "start < end"),
        ({"reference": pl.col("p")}, TypeError, "Boolean"),
        ({"limits": "iqr"}, ValueError, "`limits`"),
        ({"confidence": 1.5}, ValueError, "`confidence`"),
        ({"every": "daily"}, ValueError, "`every`"),
        ({"every": "12h"}, ValueError, "whole days"),
    ],
)
def test_bad_options_are_refused_by_name(
    options: dict[str, object], error: type[Exception], match: str
) -> None:
    arguments: dict[str, object] = {
        "time": "day",
        "every": "1d",
        "reference": pl.col("day") < date(2026, 9, 2),
        **options,
    }
    with pytest.raises(error, match=match):
        pc.monitor_windows(daily_log(9, 2, 5).lazy(), "p", "y", **arguments)  # type: ignore[arg-type]


def test_datetime_windows_keep_the_time_zone() -> None:
    log = daily_log(10, 2, 10).with_columns(
        ts=pl.col("day").cast(pl.Datetime("us", "Europe/Paris")) + pl.duration(hours=13)
    )
    got = log.calib.monitor_windows(
        "p", "y", time="ts", every="12h", reference=pl.col("ts").dt.day() == 1
    )
    assert got.schema["ts"] == pl.Datetime("us", "Europe/Paris")
    assert got.height == 3 and got["count"].to_list() == [20, 0, 20]


def test_bootstrap_limits_are_the_tail_quantiles_of_the_reference_replicates() -> None:
    log = daily_log(11, 8, 300, shift_from=5)
    options = {"by": "model", "time": "day", "every": "1d", "n_bins": 5}
    reference = (START, START + timedelta(days=5))
    got = log.calib.monitor_windows(
        "p", "y", reference=reference, limits="bootstrap", n_resamples=20, seed=3, **options
    )  # type: ignore[arg-type]
    # By hand from the public statistics table of the reference rows: each replicate's
    # O/E ratio per window, moved by the window's observed ratio less its replicates'
    # mean, then the 0.135% and 99.865% quantiles per model.
    in_reference = log.filter(pl.col("day") < START + timedelta(days=5))
    stats = in_reference.calib.bin_statistics(
        "p", "y", **options, resampling="bootstrap", n_resamples=20, seed=3
    )  # type: ignore[arg-type]
    ratios = (
        stats.filter(pl.col("replicate").is_not_null())
        .group_by("model", "day", "replicate")
        .agg(ratio=pl.col("sum_y").sum() / pl.col("sum_p").sum())
        .join(got.select("model", "day", "oe_ratio"), on=["model", "day"])
        .with_columns(
            ratio=pl.col("ratio") - pl.col("ratio").mean().over("model", "day") + pl.col("oe_ratio")
        )
        .group_by("model")
        .agg(
            lower=pl.col("ratio").quantile(0.00135, "linear"),
            upper=pl.col("ratio").quantile(0.99865, "linear"),
        )
        .sort("model")
    )
    limits = got.group_by("model").agg(
        pl.col("oe_ratio_lower_limit", "oe_ratio_upper_limit").first()
    )
    limits = limits.sort("model")
    assert limits["oe_ratio_lower_limit"].to_list() == pytest.approx(ratios["lower"].to_list())
    assert limits["oe_ratio_upper_limit"].to_list() == pytest.approx(ratios["upper"].to_list())
    # The same seed gives the same limits, lazily too; another seed others.
    again = log.lazy().calib.monitor_windows(
        "p", "y", reference=reference, limits="bootstrap", n_resamples=20, seed=3, **options
    )  # type: ignore[arg-type]
    assert_frame_equal(again.collect(), got)
    other = log.calib.monitor_windows(
        "p", "y", reference=reference, limits="bootstrap", n_resamples=20, seed=4, **options
    )  # type: ignore[arg-type]
    assert other["ece_upper_limit"].to_list() != got["ece_upper_limit"].to_list()
    # The shifted model alerts on O/E after the shift, with these limits too.
    shifted = got.filter((pl.col("model") == "b") & ~pl.col("reference"))
    assert shifted["oe_ratio_alert"].all()
