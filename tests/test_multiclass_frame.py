"""Frame form of the multi-class reductions: ``summary(..., reduction=...)``.

The frame form must give the expressions' numbers (per group, every reduction, norm,
strategy, weights, Array and List input), the tutorial's exact values, and refuse bad
vectors with a CalibrationDataError.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc
import reference
from test_multiclass import _vectors, tempered_log, tutorial_frame

EXPRESSIONS = {
    "confidence": pc.confidence_ece,
    "top_label": pc.top_label_ece,
    "classwise": pc.classwise_ece,
}
NORM_OF = {"ece": "l1", "rmsce": "l2", "mce": "max"}


@pytest.fixture(scope="module")
def tutorial() -> pl.DataFrame:
    return tutorial_frame()


def expected_summary(
    df: pl.DataFrame, reduction: str, weight: str | None, **binning: object
) -> pl.DataFrame:
    """The summary's columns computed with the multi-class expressions, per group."""
    metric = EXPRESSIONS[reduction]
    probs, y = pl.col("probs").cast(pl.List(pl.Float64)), pl.col("y")
    used = probs.is_not_null() & y.is_not_null()
    confidence = probs.list.max()
    correct = (probs.list.arg_max() == y).cast(pl.Float64)
    w = pl.lit(1.0) if weight is None else pl.col(weight)
    return (
        df.group_by("g")
        .agg(
            used.sum().cast(pl.Int64).alias("count"),
            pl.lit(0, pl.Int64).alias("refused"),
            ((confidence * w).sum() / w.filter(used).sum()).alias("mean_confidence"),
            ((correct * w).sum() / w.filter(used).sum()).alias("accuracy"),
            *(
                metric("probs", "y", norm=norm, weight=weight, **binning).alias(
                    f"{reduction}_{name}"
                )
                for name, norm in NORM_OF.items()
            ),
            pc.multiclass_brier("probs", "y", weight=weight).alias("brier"),
            pc.multiclass_log_loss("probs", "y", weight=weight).alias("log_loss"),
        )
        .sort("g")
    )


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 150),
    n_classes=st.integers(2, 5),
    reduction=st.sampled_from(sorted(EXPRESSIONS)),
    n_bins=st.integers(1, 12),
    strategy=st.sampled_from(["uniform", "quantile"]),
    closed=st.sampled_from(["right", "left"]),
    weighted=st.booleans(),
    temperature=st.sampled_from([0.4, 2.5]),
    dtype=st.sampled_from(["array", "list"]),
)
def test_summary_matches_the_expressions(
    seed: int,
    n: int,
    n_classes: int,
    reduction: str,
    n_bins: int,
    strategy: str,
    closed: str,
    weighted: bool,
    temperature: float,
    dtype: str,
) -> None:
    P, y, w, g = tempered_log(
        seed, n, n_classes, temperature=temperature, resolution=20, tie_rate=0.3, groups=3
    )
    df = pl.DataFrame({"probs": _vectors(P, dtype), "y": y, "w": w, "g": g})
    weight = "w" if weighted else None
    binning = {"n_bins": n_bins, "strategy": strategy, "closed": closed}
    got = df.calib.summary(
        "probs", "y", by="g", reduction=reduction, weight=weight, sum_tol=1e-9, **binning
    )
    want = expected_summary(df, reduction, weight, **binning)
    assert sorted(got.columns) == sorted(want.columns)
    assert got["g"].to_list() == want["g"].to_list()
    assert got["count"].to_list() == want["count"].to_list()
    for column in got.columns[2:]:
        assert got[column].to_list() == pytest.approx(want[column].to_list(), abs=1e-12), column


@pytest.mark.parametrize(
    ("reduction", "metric", "expected"),
    [
        ("confidence", "ece", Fraction(19, 90)),
        ("confidence", "mce", Fraction(3, 10)),
        ("classwise", "ece", Fraction(241, 1350)),
        ("classwise", "mce", Fraction(17, 35)),
    ],
)
def test_tutorial_numbers(
    tutorial: pl.DataFrame, reduction: str, metric: str, expected: Fraction
) -> None:
    got = tutorial.calib.summary("probs", "y", n_bins=5, reduction=reduction, metrics=[metric])
    assert got[f"{reduction}_{metric}"].item() == pytest.approx(float(expected), abs=1e-12)


def test_vectors_default_to_the_confidence_reduction(tutorial: pl.DataFrame) -> None:
    default = tutorial.calib.summary("probs", "y", n_bins=5)
    confidence = tutorial.calib.summary("probs", "y", n_bins=5, reduction="confidence")
    assert_frame_equal(default, confidence, rel_tol=0.0, abs_tol=1e-15)
    P = np.array([[float(v) for v in row] for row in reference.TUTORIAL_P])
    accuracy = float(np.mean(P.argmax(axis=1) == np.array(reference.TUTORIAL_Y)))
    assert default["accuracy"].item() == pytest.approx(accuracy, abs=1e-15)
    assert default["mean_confidence"].item() == pytest.approx(P.max(axis=1).mean(), abs=1e-15)


def test_lazy_streaming_and_time_windows() -> None:
    P, y, _, _ = tempered_log(7, 300, 4, temperature=0.4, resolution=1000, tie_rate=0.1)
    start = datetime(2024, 5, 1)
    df = pl.DataFrame(
        {
            "probs": _vectors(P),
            "y": y,
            "ts": [start + timedelta(hours=7 * i) for i in range(len(y))],
        }
    )
    lazy = df.lazy().calib.summary(
        "probs", "y", time="ts", every="1w", reduction="classwise", metrics=["ece", "brier"]
    )
    assert isinstance(lazy, pl.LazyFrame)
    got = lazy.collect(engine="streaming")
    want = (
        df.group_by(pl.col("ts").dt.truncate("1w"))
        .agg(
            pc.classwise_ece("probs", "y").alias("ece"),
            pc.multiclass_brier("probs", "y").alias("brier"),
        )
        .sort("ts")
    )
    assert got["ts"].to_list() == want["ts"].to_list()
    assert got["classwise_ece"].to_list() == pytest.approx(want["ece"].to_list(), abs=1e-12)
    assert got["brier"].to_list() == pytest.approx(want["brier"].to_list(), abs=1e-12)


def test_rows_with_nulls_are_ignored() -> None:
    df = pl.DataFrame(
        {
            "probs": [[0.7, 0.3], None, [0.2, 0.8], [0.6, 0.4], [0.1, 0.9]],
            "y": [0, 1, None, 1, 1],
            "w": [1.0, 1.0, 1.0, None, 2.0],
        }
    )
    kept = df.filter(pl.all_horizontal(pl.all().is_not_null()))
    for reduction in EXPRESSIONS:
        got = df.calib.summary("probs", "y", weight="w", n_bins=4, reduction=reduction)
        want = kept.calib.summary("probs", "y", weight="w", n_bins=4, reduction=reduction)
        assert_frame_equal(got, want, rel_tol=0.0, abs_tol=1e-15)
        assert got["count"].item() == 2


@pytest.mark.parametrize(
    ("probs", "labels", "message"),
    [
        ([[0.5, 0.5], [1.2, -0.2]], [0, 1], "column 'probs': vector holding a null, NaN or value"),
        ([[0.5, 0.5], [float("nan"), 0.5]], [0, 1], "column 'probs': vector holding a null, NaN"),
        ([[0.5, 0.6], [0.3, 0.7]], [0, 1], "column 'probs': vector sum off 1 by more than 1e-06"),
        ([[0.5, 0.5], [0.3, 0.7]], [0, 2], "column 'y': label not a class 0 .. K - 1 in 1 of 2"),
        (
            [[0.5, 0.5], [0.2, 0.3, 0.5]],
            [0, 1],
            "column 'probs': vectors of different lengths (from 2 to 3 entries)",
        ),
    ],
)
@pytest.mark.parametrize("reduction", sorted(EXPRESSIONS))
def test_bad_vectors_raise(
    probs: list[list[float]], labels: list[int], message: str, reduction: str
) -> None:
    df = pl.DataFrame({"probs": probs, "y": labels})
    if "different lengths" in message and reduction != "classwise":
        # Vectors of another length are valid vectors; only classwise needs one K.
        assert df.calib.summary("probs", "y", reduction=reduction)["count"].item() == 2
        return
    with pytest.raises(pc.CalibrationDataError) as raised:
        df.calib.summary("probs", "y", reduction=reduction)
    assert message in str(raised.value)
    # The lazy plan reads nothing when built; collected, it gives null and the count.
    got = df.lazy().calib.summary("probs", "y", reduction=reduction).collect()
    assert got[f"{reduction}_ece"].item() is None


def test_bad_reduction_arguments() -> None:
    vectors = pl.DataFrame({"probs": [[0.2, 0.8]], "y": [1], "class": [0]})
    with pytest.raises(ValueError, match="`reduction` must be one of"):
        vectors.calib.summary("probs", "y", reduction="top")
    with pytest.raises(ValueError, match="`by` cannot hold 'class'"):
        vectors.calib.summary("probs", "y", by="class")
    with pytest.raises(pc.CalibrationDataError, match="must be an Array or List"):
        pl.DataFrame({"p": [0.2], "y": [1]}).calib.summary("p", "y", reduction="classwise")
