"""Regression tests for the defects a new user and the peers' test cases found (issue 10)."""

from __future__ import annotations

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
    # Polars evaluates the refused rule's parts in parallel, so the first to fail on a string
    # column is either the range comparison or the NaN check: both name the column.
    refused = r"cannot compare string|`is_nan` operation not supported for dtype `str`"
    for metric in (pc.ece, pc.brier, pc.log_loss, pc.refused_rows):
        with pytest.raises(pl.exceptions.PolarsError, match=refused):
            strings.select(metric("p", "y"))
    for label in (pl.Series(["0", "1"]), pl.Series(["a", "b"], dtype=pl.Categorical)):
        df = pl.DataFrame({"p": [0.1, 0.9], "y": label})
        with pytest.raises(pl.exceptions.PolarsError, match="compare"):
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
    frame = df.calib.refused_rows("p", "y", by="g", weight="w")
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
