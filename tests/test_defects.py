"""Regression tests for the defects a new user and the peers' test cases found (issue 10),
and the crashes and unclear errors of issue 23."""

from __future__ import annotations

from datetime import date
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc

VECTOR_METRICS = [
    pc.confidence_ece,
    pc.classwise_ece,
    pc.top_label_ece,
    pc.multiclass_brier,
    pc.multiclass_log_loss,
]


@pytest.mark.parametrize("metric", VECTOR_METRICS)
def test_1_array_vectors_with_a_null_label_ignore_the_row(metric: object) -> None:
    arrays = pl.DataFrame(
        {
            "probs": pl.Series([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3]], dtype=pl.Array(pl.Float64, 3)),
            "y": [0, None],
        }
    )
    kept = arrays.head(1)
    got = arrays.select(metric("probs", "y"))  # type: ignore[operator]
    assert got.item() == pytest.approx(kept.select(metric("probs", "y")).item(), abs=1e-15)  # type: ignore[operator]
    # and with nulls in the vector column and the weight too
    more = pl.DataFrame(
        {
            "probs": pl.Series(
                [[0.7, 0.2, 0.1], None, [0.1, 0.6, 0.3]], dtype=pl.Array(pl.Float64, 3)
            ),
            "y": [0, 1, 1],
            "w": [1.0, 1.0, None],
        }
    )
    weighted = more.select(metric("probs", "y", weight="w")).item()  # type: ignore[operator]
    assert weighted == pytest.approx(kept.select(metric("probs", "y")).item(), abs=1e-15)  # type: ignore[operator]


@pytest.mark.parametrize("metric", VECTOR_METRICS)
def test_2_array_row_with_an_entry_outside_0_1_gives_null(metric: object) -> None:
    logits = pl.DataFrame(
        {
            "probs": pl.Series([[1.5, 0, 0], [0.1, 0.6, 0.3]], dtype=pl.Array(pl.Float64, 3)),
            "y": [0, 1],
        }
    )
    assert logits.select(metric("probs", "y")).item() is None  # type: ignore[operator]


def test_3_wilson_interval_contains_the_estimate_exactly_at_the_ends() -> None:
    for size in range(1, 201):
        for y in (0, 1):
            table = (
                pl.DataFrame({"p": [0.15] * size, "y": [y] * size})
                .calib.reliability("p", "y")
                .filter(pl.col("count") > 0)
            )
            row = table.row(0, named=True)
            observed, lower, upper = row["observed"], row["observed_lower"], row["observed_upper"]
            assert 0.0 <= lower <= observed <= upper <= 1.0
            assert (lower == 0.0) if y == 0 else (upper == 1.0)


def test_3_matplotlib_diagram_of_an_all_zero_bin_draws() -> None:
    pytest.importorskip("matplotlib")
    table = pl.DataFrame({"p": [0.15] * 20, "y": [0] * 20}).calib.reliability("p", "y")
    pc.plot_reliability(table, backend="matplotlib")


def test_4_a_group_whose_rows_are_all_null_stays_with_count_zero() -> None:
    df = pl.DataFrame({"m": ["a", "a", "b"], "p": [0.2, 0.8, None], "y": [0, 1, 1]})
    for data in (df, df.lazy()):
        got = data.calib.summary("p", "y", by="m")
        got = got.collect() if isinstance(got, pl.LazyFrame) else got
        assert got["m"].to_list() == ["a", "b"]
        assert got.filter(pl.col("m") == "b").select("count", "ece").row(0) == (0, None)
        table = data.calib.reliability("p", "y", by="m")
        table = table.collect() if isinstance(table, pl.LazyFrame) else table
        assert table.filter(pl.col("m") == "b").height == 15
    expression = df.group_by("m", maintain_order=True).agg(pc.ece("p", "y"))
    assert expression["p"].to_list()[1] is None


def test_5_non_numeric_probabilities_and_labels_are_refused() -> None:
    strings = pl.DataFrame({"p": ["0.1", "0.9"], "y": [0, 1]})
    # Refused when the query is planned, with a message naming the column (issue 23).
    refused = "column 'p' must hold binary probabilities"
    for metric in (pc.ece, pc.brier, pc.log_loss, pc.refused_rows):
        with pytest.raises(pl.exceptions.PolarsError, match=refused):
            strings.select(metric("p", "y"))
    for label in (pl.Series(["0", "1"]), pl.Series(["a", "b"], dtype=pl.Categorical)):
        df = pl.DataFrame({"p": [0.1, 0.9], "y": label})
        with pytest.raises(pl.exceptions.PolarsError, match="give pos_label="):
            df.select(pc.ece("p", "y"))
        with pytest.raises(pc.CalibrationDataError, match="a label must be numeric"):
            df.calib.summary("p", "y")


def test_5_refused_rows_says_why_a_group_is_null() -> None:
    df = pl.DataFrame(
        {
            "g": [1, 1, 1, 2, 2],
            "p": [0.2, float("nan"), 1.4, 0.5, 0.6],
            "y": [0, 1, 1, 1, 2],
            "w": [1.0, 1.0, -1.0, 1.0, 1.0],
        }
    )
    got = (
        df.group_by("g", maintain_order=True)
        .agg(pc.ece("p", "y", weight="w"), pc.refused_rows("p", "y", weight="w"))
        .unnest("refused_rows")
    )
    assert got["p"].to_list() == [None, None]
    assert got.row(0, named=True) | {"p": None} == {
        "g": 1,
        "p": None,
        "rows": 3,
        "refused": 2,
        "probability NaN": 1,
        "probability outside [0, 1]": 1,
        "label not 0 or 1": 0,
        "weight negative": 1,
        "weight NaN or infinite": 0,
        "weight positive but subnormal (below 2.2e-308)": 0,
        "weights of a group summing to 1e300 or more (rescale them)": 0,
    }
    assert got.filter(pl.col("g") == 2)["label not 0 or 1"].item() == 1
    frame = df.calib.refused_counts("p", "y", by="g", weight="w")
    assert frame["refused"].to_list() == [2, 1]


def test_8_top_label_macro_and_weighted_means() -> None:
    # Class 0 predicted by 3 rows (ECE_0), class 1 by 1 row (ECE_1).
    df = pl.DataFrame(
        {
            "probs": [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.4, 0.6]],
            "y": [0, 1, 0, 0],
        }
    )
    conf = np.array([0.9, 0.8, 0.7])
    correct = np.array([1.0, 0.0, 1.0])
    ece_0 = abs(conf.mean() - correct.mean())  # one bin holds all three (n_bins=1)
    ece_1 = abs(0.6 - 0.0)
    macro = df.select(pc.top_label_ece("probs", "y", n_bins=1)).item()
    weighted = df.select(pc.top_label_ece("probs", "y", n_bins=1, average="weighted")).item()
    assert macro == pytest.approx((ece_0 + ece_1) / 2, abs=1e-15)
    assert weighted == pytest.approx((3 * ece_0 + 1 * ece_1) / 4, abs=1e-15)
    frame = df.calib.summary("probs", "y", n_bins=1, reduction="top_label", average="weighted")
    assert frame["top_label_ece"].item() == pytest.approx(weighted, abs=1e-15)
    with pytest.raises(ValueError, match="`average` must be one of"):
        pc.top_label_ece("probs", "y", average="micro")  # type: ignore[arg-type]


def test_9_summary_names_say_what_they_hold() -> None:
    df = pl.DataFrame(
        {
            "probs": [[0.9, 0.1], [0.2, 0.8]],
            "y": [0, 0],
            "day": pl.Series(["2024-01-01", "2024-01-02"]).str.to_date(),
        }
    )
    got = df.calib.summary("probs", "y", time="day", every="1d", reduction="classwise")
    assert got.columns[:5] == ["day", "count", "refused", "mean_confidence", "accuracy"]
    assert "classwise_ece" in got.columns and "ece" not in got.columns


@pytest.mark.parametrize(
    ("labels", "pos_label"),
    [([1, 2, 2, 1], 2), ([-1, 1, 1, -1], 1), (["no", "yes", "yes", "no"], "yes")],
)
def test_10_pos_label(labels: list[object], pos_label: object) -> None:
    p = [0.2, 0.7, 0.9, 0.4]
    df = pl.DataFrame({"p": p, "y": labels})
    binary = pl.DataFrame({"p": p, "y": [0, 1, 1, 0]})
    want = binary.select(pc.ece("p", "y", n_bins=5), pc.brier("p", "y").alias("b"))
    got = df.select(
        pc.ece("p", "y", n_bins=5, pos_label=pos_label),
        pc.brier("p", "y", pos_label=pos_label).alias("b"),
    )
    assert_frame_equal(got, want)
    summary = df.calib.summary("p", "y", n_bins=5, pos_label=pos_label)
    assert summary["ece"].item() == pytest.approx(want["p"].item(), abs=1e-15)
    # Without pos_label, labels 1/2 are refused: null for the expression, an error for frames.
    if labels[0] == 1:
        assert df.select(pc.ece("p", "y")).item() is None
        with pytest.raises(pc.CalibrationDataError, match="label not 0 or 1"):
            df.calib.summary("p", "y")


# --------------------------------------------------------------------------
# Issue 23: crashes and unclear errors
# --------------------------------------------------------------------------

FOUR_ROWS = pl.DataFrame({"p": [0.1, 0.4, 0.6, 0.9], "y": [0, 1, 0, 1], "g": ["a", "a", "b", "b"]})


@pytest.mark.parametrize(
    "call",
    [
        lambda n, s: FOUR_ROWS.select(pc.ece("p", "y", n_bins=n, strategy=s)),
        lambda n, s: FOUR_ROWS.select(pc.bin_index("p", n_bins=n, strategy=s)),
        lambda n, s: pc.summary(FOUR_ROWS.lazy(), "p", "y", n_bins=n, strategy=s),
        lambda n, s: pc.reliability(FOUR_ROWS.lazy(), "p", "y", n_bins=n, strategy=s),
        lambda n, s: pc.bin_statistics(FOUR_ROWS.lazy(), "p", "y", n_bins=n, strategy=s),
        lambda n, s: pc.audit(FOUR_ROWS, "p", "y", by="g", n_bins=n, strategy=s),
        lambda n, s: pc.fit_calibrator(
            FOUR_ROWS, "p", "y", method="histogram", n_bins=n, strategy=s
        ),
    ],
)
def test_23_n_bins_is_bounded_before_anything_is_built(call: Any) -> None:
    # 10**5 quantile bins allocated 2.4 GB and aborted the interpreter; 10**6 was killed.
    for n_bins in (10**5, 10**6, 10_001):
        with pytest.raises(ValueError, match="`n_bins` must be at most 10_000"):
            call(n_bins, "uniform")
    with pytest.raises(ValueError, match="at most 1_000 with strategy='quantile'"):
        call(1_001, "quantile")


def test_23_n_bins_bounds_are_inclusive() -> None:
    assert FOUR_ROWS.select(pc.ece("p", "y", n_bins=10_000)).item() == pytest.approx(0.35)
    assert pc.summary(FOUR_ROWS, "p", "y", n_bins=10_000)["ece"].item() == pytest.approx(0.35)
    for compat in ("sklearn", "torchmetrics"):
        with pytest.raises(ValueError, match="at most 1_000 with `compat`"):
            pc.ece("p", "y", n_bins=1_001, compat=compat)  # type: ignore[arg-type]
        pc.ece("p", "y", n_bins=1_000, compat=compat)  # type: ignore[arg-type]
    pc.bin_index("p", n_bins=1_000, strategy="quantile")
    with pytest.raises(ValueError, match="at most 10_000"):
        pc.uniform_edges(10_001)


@pytest.mark.parametrize("every", ["fortnight", "1 d", "1D", "0d", "0w0d", "-1d", "1d_saturating"])
def test_23_every_is_checked_as_an_argument(every: str) -> None:
    log = FOUR_ROWS.with_columns(t=pl.date_range(date(2024, 1, 1), date(2024, 1, 4), eager=True))
    # Polars raised "expected leading integer in the duration string" when the data flowed.
    with pytest.raises(ValueError, match="`every` must be a positive Polars duration"):
        pc.summary(log.lazy(), "p", "y", time="t", every=every)
    with pytest.raises(ValueError, match="`every` must be a positive Polars duration"):
        pc.bin_statistics(log, "p", "y", time="t", every=every)
    assert pc.summary(log, "p", "y", time="t", every="1d").height == 4


def test_23_repeated_metrics_are_computed_once() -> None:
    log = pl.concat([FOUR_ROWS] * 5)
    twice = ["ece", "brier", "ece"]
    once = pc.summary(log, "p", "y", by="g", metrics=["ece", "brier"])
    assert_frame_equal(pc.summary(log, "p", "y", by="g", metrics=twice), once)
    assert_frame_equal(log.calib.summary("p", "y", by="g", metrics=twice), once)
    stats = pc.bin_statistics(log, "p", "y", by="g")
    assert_frame_equal(pc.metrics_from_statistics(stats, by="g", metrics=twice), once)
    audited = pc.audit(log, "p", "y", by="g", metrics=twice, n_resamples=None)  # type: ignore[arg-type]
    assert audited.slices.columns.count("ece") == 1
    page = pc.html_report(log, "p", "y", by="g", metrics=twice)  # type: ignore[arg-type]
    assert page.summary.columns.count("ece") == 1


@pytest.mark.parametrize("bad", [[], [None, None]])
def test_23_an_empty_or_all_null_vector_is_refused_classwise(bad: list[float | None]) -> None:
    # Polars raised ShapeError (the row's lists exploded to different lengths), and an empty
    # vector beside a valid one vanished from the classwise table instead of being refused.
    for rows in ([bad], [bad, [0.3, 0.7]]):
        vectors = pl.DataFrame(
            {"p": rows, "y": [0] * len(rows)}, schema={"p": pl.List(pl.Float64), "y": pl.Int64}
        )
        refused = "vector (sum off 1|holding a null)"
        for frame_function in (pc.bin_statistics, pc.summary, pc.reliability):
            with pytest.raises(pc.CalibrationDataError, match=refused):
                frame_function(vectors, "p", "y", reduction="classwise")
        assert vectors.select(pc.classwise_ece("p", "y")).item() is None


def test_23_a_string_label_in_a_binary_metric_points_to_pos_label() -> None:
    log = pl.DataFrame({"p": [0.2, 0.7, 0.9], "y": ["no", "yes", "yes"], "g": [1, 1, 2]})
    # Polars said "cannot compare string with numeric type (i32)".
    message = "column 'y' must hold 0/1 or boolean labels; for other labels give pos_label="
    for metric in (pc.ece, pc.brier, pc.log_loss, pc.mce, pc.spiegelhalter_z):
        for query in (
            log.lazy().select(metric("p", "y")),
            log.lazy().group_by("g").agg(metric("p", "y")),
            log.lazy().select(metric("p", "y").over("g")),
        ):
            with pytest.raises(pl.exceptions.PolarsError, match=message):
                query.collect()
        assert log.select(metric("p", "y", pos_label="yes")).item() is not None
    assert log.select(pc.ece("p", "y", pos_label="yes")).item() == pytest.approx(
        pl.DataFrame({"p": [0.2, 0.7, 0.9], "y": [0, 1, 1]}).select(pc.ece("p", "y")).item()
    )


def test_23_a_probability_vector_in_a_binary_metric_points_to_the_multiclass_ones() -> None:
    vectors = pl.DataFrame({"probs": [[0.2, 0.8], [0.6, 0.4]], "y": [1, 0]})
    arrays = vectors.with_columns(pl.col("probs").cast(pl.Array(pl.Float64, 2)))
    # Polars said "could not evaluate '<' comparison between series 'probs' of dtype ...".
    message = "column 'probs' must hold binary probabilities .* use pc.confidence_ece"
    for data in (vectors, arrays):
        for metric in (pc.ece, pc.brier, pc.log_loss, pc.rmsce):
            with pytest.raises(pl.exceptions.PolarsError, match=message):
                data.select(metric("probs", "y"))
        assert data.select(pc.confidence_ece("probs", "y")).item() is not None


def test_23_boolean_probabilities_are_hard_predictions_everywhere() -> None:
    # Expressions took them as 0.0 / 1.0 and frames refused them: both take them now.
    hard = pl.DataFrame({"p": [True, False, True, False, True], "y": [1, 0, 0, 0, 1]})
    floats = hard.with_columns(pl.col("p").cast(pl.Float64))
    want = pc.summary(floats, "p", "y")
    assert_frame_equal(pc.summary(hard, "p", "y"), want)
    assert_frame_equal(hard.calib.summary("p", "y"), want)
    assert_frame_equal(
        pc.reliability(hard.lazy(), "p", "y", n_bins=2).collect(),
        pc.reliability(floats, "p", "y", n_bins=2),
    )
    expression = hard.select(ece=pc.ece("p", "y"), brier=pc.brier("p", "y"))
    assert expression.row(0) == pytest.approx((want["ece"].item(), want["brier"].item()))
    pc.validate(hard, "p", "y")


def test_a_by_expression_named_like_an_input_column_is_refused() -> None:
    # `pl.col("p") > 0.5` keeps the name "p": added as a key it replaced the
    # probabilities, and every metric read 0/1 predictions (mean_predicted 0.0 and 1.0
    # here instead of 0.2 and 0.7), silently.
    lf = pl.LazyFrame({"p": [0.2, 0.7], "y": [0, 1], "w": [1.0, 2.0]})
    for key, role in [
        (pl.col("p") > 0.5, "probability"),
        (pl.col("y") == 1, "label"),
        (pl.col("w") > 1, "weight"),
    ]:
        with pytest.raises(ValueError, match=f"named like the {role} column"):
            pc.summary(lf, "p", "y", by=key, weight="w")
    table = pc.summary(lf, "p", "y", by=(pl.col("p") > 0.5).alias("high")).collect()
    assert table.sort("high")["mean_predicted"].to_list() == [0.2, 0.7]
