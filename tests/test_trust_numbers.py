"""No silent numbers at the edges (issue #23): weights near the float limits, `pos_label`,
a shared resampling `id`, `n_resamples` alone, and the guards mutation testing left alive.

Each test fails on the code before its fix (see the commit that adds it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import sign_changing_log

METRICS = ["ece", "mce", "rmsce", "brier", "log_loss"]

# Two groups; miscalibration that changes sign across [0, 1] (under-confident below 0.5).
LOG = sign_changing_log(7, 400, groups=2).drop("w")


def _with_weight(value: float) -> pl.DataFrame:
    return LOG.with_columns(pl.lit(value, pl.Float64).alias("w"))


def _expression_metrics(df: pl.DataFrame, weight: str | None) -> pl.DataFrame:
    exprs = [
        pc.ece("p", "y", weight=weight, n_bins=10).alias("ece"),
        pc.mce("p", "y", weight=weight, n_bins=10).alias("mce"),
        pc.rmsce("p", "y", weight=weight, n_bins=10).alias("rmsce"),
        pc.brier("p", "y", weight=weight).alias("brier"),
        pc.log_loss("p", "y", weight=weight).alias("log_loss"),
    ]
    return df.group_by("g").agg(exprs).sort("g")


# --- Item 2: weights near the float limits ------------------------------------------


@pytest.mark.parametrize("scale", [1e200, 1e-300])
def test_huge_and_tiny_weights_give_the_unweighted_numbers(scale: float) -> None:
    # Every metric is a ratio of weighted sums: a common factor changes nothing. Before,
    # 1e200 gave RMSCE inf (a square of a sum of weights) and 1e-300 an RMSCE of 0.0.
    truth = _expression_metrics(LOG, None)
    assert truth["ece"].min() > 0.02  # a miscalibrated log: 0.0 would be wrong
    scaled = _with_weight(scale)
    got = _expression_metrics(scaled, "w")
    frame = pc.summary(scaled, "p", "y", by="g", weight="w", n_bins=10, metrics=METRICS)
    lazy = pc.summary(scaled.lazy(), "p", "y", by="g", weight="w", n_bins=10, metrics=METRICS)
    for result in (got, frame, lazy.collect()):
        for metric in METRICS:
            np.testing.assert_allclose(
                result[metric].to_numpy(), truth[metric].to_numpy(), rtol=1e-12, err_msg=metric
            )


@pytest.mark.parametrize("weight", [1.0, 1e200, 1e-300])
def test_the_issues_two_rows_keep_their_true_values(weight: float) -> None:
    # The issue's repro: p 0.4 and 0.9, labels 0 and 1 (1e308 gave 0.0 for all three).
    df = pl.DataFrame({"p": [0.4, 0.9], "y": [0, 1], "w": [weight, weight]})
    got = df.select(
        pc.ece("p", "y", weight="w").alias("ece"),
        pc.rmsce("p", "y", weight="w").alias("rmsce"),
        pc.brier("p", "y", weight="w").alias("brier"),
        pc.log_loss("p", "y", weight="w").alias("log_loss"),
    ).row(0)
    log_loss = -(math.log(0.6) + math.log(0.9)) / 2.0
    assert got == pytest.approx((0.25, math.sqrt(0.085), 0.085, log_loss), rel=1e-12)


def test_huge_weights_keep_hosmer_lemeshow_finite() -> None:
    # (O - E)**2 overflowed at weights of 1e200 (frequency weights: the statistic grows).
    scaled = _with_weight(1e200)
    got = pc.summary(scaled, "p", "y", weight="w", n_bins=10, metrics=["hosmer_lemeshow"])
    assert math.isfinite(got["hosmer_lemeshow"].item())


def test_huge_weights_keep_the_canonical_rmsce() -> None:
    # A cell's squared mass (sqeuclidean distance, then RMSCE) overflowed at 1e200.
    P = np.column_stack([LOG["p"].to_numpy(), 1.0 - LOG["p"].to_numpy()])
    vec = pl.DataFrame({"v": P, "y": 1 - LOG["y"], "w": [1.0] * LOG.height}).with_columns(
        pl.col("v").cast(pl.Array(pl.Float64, 2))
    )

    def canonical(df: pl.DataFrame) -> float:
        options = {"reduction": "canonical", "n_bins": 5, "distance": "sqeuclidean"}
        got = pc.summary(df, "v", "y", weight="w", metrics=["rmsce"], **options)
        return got["canonical_rmsce"].item()

    assert canonical(vec.with_columns(w=pl.lit(1e200))) == pytest.approx(canonical(vec), rel=1e-12)


def test_weights_summing_past_1e300_are_refused_with_the_group_named() -> None:
    # 1e308 per row: the sums overflow (ECE, Brier, log-loss NaN or 0.0 before).
    df = LOG.with_columns(w=pl.when(pl.col("g") == 1).then(1e308).otherwise(1.0))
    got = _expression_metrics(df, "w")
    assert got.filter(pl.col("g") == 1).select(METRICS).row(0) == (None,) * len(METRICS)
    assert got.filter(pl.col("g") == 0)["ece"].item() > 0.02
    why = df.group_by("g").agg(pc.refused_rows("p", "y", weight="w")).sort("g")
    why = why.unnest("refused_rows")
    assert why["weights of a group summing to 1e300 or more (rescale them)"].to_list() == [0, 1]
    with pytest.raises(pc.CalibrationDataError, match=r"column 'w'.*g=1.*rescale the weights"):
        pc.summary(df, "p", "y", by="g", weight="w")
    lazy = pc.summary(df.lazy(), "p", "y", by="g", weight="w", metrics=METRICS).collect()
    assert lazy.filter(pl.col("g") == 1).select(METRICS).row(0) == (None,) * len(METRICS)
    assert lazy.filter(pl.col("g") == 0)["ece"].item() > 0.02
    with pytest.raises(pc.CalibrationDataError, match="1e300 or more"):
        pc.validate(df, "p", "y", weight="w")
    for method in ("isotonic", "platt"):  # NaN thresholds, "one class only" before
        with pytest.raises(pc.CalibrationDataError, match=r"column 'w'.*g=1"):
            pc.fit_calibrator(df, "p", "y", by="g", weight="w", method=method)


def test_subnormal_weights_are_refused_rows() -> None:
    # 5e-324 * p is 0 or 5e-324: ECE 0.5 and RMSCE 0.0 of a sign-changing log before.
    df = _with_weight(5e-324)
    got = _expression_metrics(df, "w")
    assert got.select(METRICS).rows() == [(None,) * len(METRICS)] * 2
    why = df.select(pc.refused_rows("p", "y", weight="w")).unnest("refused_rows")
    assert why["weight positive but subnormal (below 2.2e-308)"].item() == LOG.height
    with pytest.raises(pc.CalibrationDataError, match=r"subnormal .* in 400 of 400 rows"):
        pc.summary(df, "p", "y", weight="w")
    with pytest.raises(pc.CalibrationDataError, match="subnormal"):
        pc.fit_calibrator(df, "p", "y", weight="w", method="isotonic")
    # The smallest normal weight is used, as 0 is.
    smallest = LOG.with_columns(w=pl.lit(2.2250738585072014e-308))
    assert pc.summary(smallest, "p", "y", weight="w")["refused"].item() == 0


# --- Item 5: pos_label ------------------------------------------------------------


def test_pos_label_refuses_a_nan_label() -> None:
    df = pl.DataFrame({"p": [0.2, 0.7, 0.4], "y": [0.0, math.nan, 1.0]})
    got = df.select(pc.ece("p", "y", pos_label=1.0), pc.refused_rows("p", "y", pos_label=1.0))
    assert got["p"].item() is None
    assert got.unnest("refused_rows")["label NaN"].item() == 1
    with pytest.raises(pc.CalibrationDataError, match=r"column 'y': label NaN in 1 of 3 rows"):
        pc.summary(df, "p", "y", pos_label=1.0)


def test_a_pos_label_that_no_label_equals_is_refused() -> None:
    # A typo ("Yes") made every row a negative: a log of one class, silently.
    df = pl.DataFrame({"p": [0.2, 0.7, 0.4, 0.9], "y": ["no", "yes", "no", "yes"]})
    message = r"column 'y': no label equals pos_label='Yes'.*labels: 'no', 'yes'"
    for call in (
        lambda: pc.summary(df, "p", "y", pos_label="Yes"),
        lambda: pc.reliability(df, "p", "y", pos_label="Yes"),
        lambda: pc.validate(df.lazy(), "p", "y", pos_label="Yes"),
    ):
        with pytest.raises(pc.CalibrationDataError, match=message):
            call()
    # A group without a positive is fine when the frame has one.
    by = pc.summary(df.with_columns(g=pl.Series([0, 0, 1, 0])), "p", "y", by="g", pos_label="yes")
    assert by["observed"].to_list() == [2 / 3, 0.0]


def test_pos_label_with_probability_vectors_is_an_error() -> None:
    df = pl.DataFrame({"v": [[0.2, 0.8], [0.6, 0.4]], "y": [1, 0]})
    with pytest.raises(ValueError, match="`pos_label` is for binary labels"):
        pc.summary(df, "v", "y", pos_label=1)


# --- Item 8: n_resamples alone -----------------------------------------------------


def test_n_resamples_alone_gives_intervals_at_95() -> None:
    # Before: no interval at all, silently (unlike `audit` and `html_report`).
    alone = pc.summary(LOG, "p", "y", by="g", metrics=["ece"], n_resamples=20, seed=3)
    both = pc.summary(
        LOG, "p", "y", by="g", metrics=["ece"], n_resamples=20, seed=3, confidence=0.95
    )
    assert alone.columns[-3:] == ["ece", "ece_lower", "ece_upper"]
    # Two runs agree to rounding only: Polars adds a bin's rows in the order its threads
    # finish (docs/significance.md, "Row identity").
    assert_frame_equal(alone, both, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    assert (alone["ece_lower"] < alone["ece_upper"]).all()
    # Neither: no interval.
    assert "ece_lower" not in pc.summary(LOG, "p", "y", metrics=["ece"]).columns


# --- Item 18: guards the mutation run left untested --------------------------------


def test_classwise_calibrator_maps_an_all_zero_row_to_uniform() -> None:
    # Every class's histogram map sends entries at or below 0.5 to 0 (no positive there):
    # [0.34, 0.33, 0.33] maps to zeros, which cannot be renormalised: uniform instead.
    train = pl.DataFrame(
        {"v": [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]] * 5, "y": [0, 1, 2] * 5}
    ).with_columns(pl.col("v").cast(pl.Array(pl.Float64, 3)))
    cal = pc.fit_calibrator(
        train, "v", "y", method="histogram", reduction="classwise", n_bins=2, min_rows=1
    )
    new = pl.DataFrame({"v": [[0.34, 0.33, 0.33], [0.8, 0.1, 0.1]]}).with_columns(
        pl.col("v").cast(pl.Array(pl.Float64, 3))
    )
    got = new.select(cal.expr("v")).to_series().to_list()
    assert got == [pytest.approx([1 / 3] * 3, abs=1e-15), [1.0, 0.0, 0.0]]


@pytest.mark.parametrize("distance", ["tv", "sqeuclidean"])
@pytest.mark.parametrize("average", ["weighted", "bins"])
def test_canonical_ece_ignores_cells_of_zero_weight(distance: str, average: str) -> None:
    # Rows of weight 0 alone in their cells: a cell of zero weight has no distance (0 / 0)
    # and is no bin of the "bins" average; the numbers are those of the data without it.
    rng = np.random.default_rng(5)
    P = rng.dirichlet([8.0, 8.0, 8.0], 60)  # near the centre: the corners' cells are empty
    assert P.max() < 0.75
    y = np.array([rng.choice(3, p=q) for q in P])
    kept = pl.DataFrame({"v": P, "y": y, "w": rng.random(60) + 0.5})
    extra = pl.DataFrame(
        {"v": np.array([[0.98, 0.01, 0.01], [0.01, 0.98, 0.01]]), "y": [2, 0], "w": [0.0, 0.0]}
    )
    both = pl.concat([kept, extra]).with_columns(pl.col("v").cast(pl.Array(pl.Float64, 3)))
    kept = kept.with_columns(pl.col("v").cast(pl.Array(pl.Float64, 3)))
    options: dict[str, Any] = {"n_bins": 4, "distance": distance, "average": average}

    def expression(df: pl.DataFrame) -> float:
        return df.select(pc.canonical_ece("v", "y", weight="w", **options)).item()

    def frame(df: pl.DataFrame) -> tuple[float, ...]:
        metrics = ["ece", "mce", "rmsce"]
        canonical = {**options, "reduction": "canonical"}
        got = pc.summary(df, "v", "y", weight="w", metrics=metrics, **canonical)
        return got.select("canonical_ece", "canonical_mce", "canonical_rmsce").row(0)

    assert expression(both) == pytest.approx(expression(kept), rel=1e-12)
    assert frame(both) == pytest.approx(frame(kept), rel=1e-12)
    assert expression(kept) == pytest.approx(frame(kept)[0], rel=1e-12)


# --- Item 4: a shared resampling id ------------------------------------------------


def test_a_shared_id_is_refused_with_counts() -> None:
    # A constant id gave every row the same draws: consistency p = 1.0, null intervals.
    df = LOG.with_columns(rid=pl.int_range(pl.len()), same=pl.lit(7))
    options: dict[str, Any] = {"by": "g", "metrics": ["ece", "consistency_p"], "n_resamples": 19}
    good = pc.summary(df, "p", "y", id="rid", **options)
    assert good["consistency_p"].max() <= 0.1 and good["ece_lower"].null_count() == 0
    message = r"`id` repeats: about \d+ distinct ids for \d+ rows \(first of 2 group\(s\): g=0\)"
    with pytest.raises(pc.CalibrationDataError, match=message):
        pc.summary(df, "p", "y", id="same", **options)
    with pytest.raises(pc.CalibrationDataError, match=message):
        pc.summary(df, "p", "y", id=pl.col("rid") % 3, **options)  # 3 values for 200 rows
    lazy = pc.summary(df.lazy(), "p", "y", id="same", **options).collect()
    assert lazy.select("ece_lower", "ece_upper", "consistency_p").null_count().row(0) == (2, 2, 2)
    np.testing.assert_allclose(lazy["ece"], good["ece"], rtol=1e-12)  # the estimates stay
    with pytest.raises(pc.CalibrationDataError, match=r"`id` repeats"):
        pc.audit(df, "p", "y", by="g", n_bins=5, n_resamples=9, id="same")
