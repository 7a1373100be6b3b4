"""Mergeable statistics: partitions, merged, give the numbers of one pass.

Statistics of random partitions of a log, concatenated and finished, must equal
the summary (and reliability table) of the whole log to 1e-12, and the expression
forms; statistics per (model, segment) roll up to per model.
"""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc

sys.path.insert(0, str(Path(__file__).parent))
import reference as ref
from conftest import make_log

LOG = Path(__file__).parents[1] / "examples" / "data" / "predictions.parquet"


def sign_changing(seed: int, n: int, decimals: int | None, groups: int) -> pl.DataFrame:
    """y ~ Bernoulli(p + 0.2 sin(2 pi p)), in `groups` groups, with weights."""
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    if decimals is not None:
        p = np.round(p, decimals)
    q = np.clip(p + 0.2 * np.sin(2 * math.pi * p), 0.0, 1.0)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, n),
            "s": rng.integers(0, 2, n),
            "p": p,
            "y": (rng.random(n) < q).astype(np.int8),
            "w": rng.random(n) * 3.0,
        }
    )


def close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert_frame_equal(got, want, rel_tol=0, abs_tol=1e-12)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 400),
    parts=st.integers(1, 6),
    n_bins=st.integers(1, 20),
    closed=st.sampled_from(["right", "left"]),
    decimals=st.sampled_from([None, 2]),
    weighted=st.booleans(),
)
def test_merged_partitions_equal_one_pass(
    seed: int,
    n: int,
    parts: int,
    n_bins: int,
    closed: str,
    decimals: int | None,
    weighted: bool,
) -> None:
    df = sign_changing(seed, n, decimals, groups=3)
    part = np.random.default_rng(seed + 1).integers(0, parts, n)
    weight = "w" if weighted else None
    binning = {"n_bins": n_bins, "closed": closed, "weight": weight}
    stats = pl.concat(
        [
            pc.bin_statistics(
                df.lazy().filter(pl.Series(part == k)),
                "p",
                "y",
                by="g",
                **binning,  # type: ignore[arg-type]
            )
            for k in range(parts)
        ]
    )
    # Lazy in, lazy out; the merge sums the rows of a (group, bin) seen in several parts.
    merged = pc.metrics_from_statistics(stats, by="g")
    assert isinstance(merged, pl.LazyFrame)
    close(merged.collect(), pc.summary(df, "p", "y", by="g", **binning))  # type: ignore[arg-type]
    close(
        pc.reliability_from_statistics(stats.collect(), by="g"),
        pc.reliability(df, "p", "y", by="g", **binning),  # type: ignore[arg-type]
    )
    # and the expressions, directly
    want = df.group_by("g").agg(ece=pc.ece("p", "y", **binning)).sort("g")  # type: ignore[arg-type]
    np.testing.assert_allclose(merged.collect()["ece"], want["ece"], rtol=0, atol=1e-12)


def test_statistics_roll_up_over_left_out_keys() -> None:
    df = sign_changing(5, 500, 2, groups=3)
    stats = pc.bin_statistics(df, "p", "y", by=["g", "s"], n_bins=10, weight="w")
    close(
        pc.metrics_from_statistics(stats, by="g"),
        pc.summary(df, "p", "y", by="g", n_bins=10, weight="w"),
    )
    close(pc.metrics_from_statistics(stats), pc.summary(df, "p", "y", n_bins=10, weight="w"))


def test_incremental_update_yesterday_plus_today() -> None:
    log = pl.read_parquet(LOG)
    cut = log["ts"].dt.date() < pl.Series([log["ts"].dt.date().max()])
    yesterday = pc.bin_statistics(log.filter(cut), "p", "y", by="model")
    today = log.lazy().filter(~cut).calib.bin_statistics("p", "y", by="model")
    updated = pc.metrics_from_statistics(pl.concat([yesterday, today.collect()]), by="model")
    close(updated, log.calib.summary("p", "y", by="model"))


def test_statistics_columns_and_sums_match_the_oracle() -> None:
    df = sign_changing(9, 300, 2, groups=1)
    stats = df.calib.bin_statistics("p", "y", n_bins=7, closed="left", weight="w")
    assert stats.schema == pl.Schema(
        {
            "bin": pl.Int32,
            "lower": pl.Float64,
            "upper": pl.Float64,
            "closed": pl.String,
            "n_bins": pl.Int32,
            "count": pl.Int64,
            "weight": pl.Float64,
            "sum_p": pl.Float64,
            "sum_y": pl.Float64,
            "sum_squared_error": pl.Float64,
            "sum_log_loss": pl.Float64,
        }
    )
    # Every bin, with its exact edges and closure: the table describes itself.
    assert stats["bin"].to_list() == list(range(7))
    assert stats["closed"].to_list() == ["left"] * 7
    assert stats["upper"].to_list() == pc.uniform_edges(7)[1:]
    p, y, w = (df[c].to_numpy() for c in ("p", "y", "w"))
    expected = ref.bin_stats(p, y, 7, "uniform", "left", w)
    present = expected["count"] > 0
    stats = stats.filter(pl.col("count") > 0)
    assert stats["bin"].to_list() == np.flatnonzero(present).tolist()
    for name in ("count", "weight", "sum_p", "sum_y"):
        np.testing.assert_allclose(stats[name], expected[name][present], rtol=1e-13, err_msg=name)
    ids = ref.bin_ids(p, 7, "uniform", "left")
    np.testing.assert_allclose(
        stats["sum_squared_error"], np.bincount(ids, w * (p - y) ** 2)[present], rtol=1e-13
    )
    assert stats["sum_log_loss"].sum() / stats["weight"].sum() == pytest.approx(
        ref.log_loss(p, y, w), rel=1e-13
    )


def test_quantile_statistics_are_per_group() -> None:
    df = sign_changing(2, 300, None, groups=2)
    stats = df.calib.bin_statistics("p", "y", by="g", n_bins=5, strategy="quantile")
    for (g,), part in stats.partition_by("g", as_dict=True).items():
        rows = df.filter(pl.col("g") == g)
        expected = ref.bin_stats(rows["p"].to_numpy(), rows["y"].to_numpy(), 5, "quantile")
        assert part["count"].to_list() == expected["count"].tolist()


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_statistics_in_the_streaming_engine(strategy: str) -> None:
    query = pl.scan_parquet(LOG).calib.bin_statistics(
        "p", "y", by=["model", "segment"], strategy=strategy
    )
    close(query.collect(engine="streaming"), query.collect(engine="in-memory"))


def test_statistics_frame_errors() -> None:
    stats = pc.bin_statistics(pl.DataFrame({"p": [0.3], "y": [1]}), "p", "y")
    with pytest.raises(pc.CalibrationDataError, match="no sum_log_loss"):
        pc.metrics_from_statistics(stats.drop("sum_log_loss"))
    with pytest.raises(pc.CalibrationDataError, match=r"missing column.*'model'"):
        pc.reliability_from_statistics(stats, by="model")
    empty = pc.metrics_from_statistics(stats.head(0), by=None)
    assert empty.height == 0  # an empty table has no groups


def test_statistics_that_cannot_merge_are_refused() -> None:
    # Quantile edges depend on all of a group's rows: two partitions' tables hold the
    # same bin with other edges. So do tables of different n_bins.
    df = sign_changing(3, 400, None, groups=2)
    halves = [df.head(200), df.tail(200)]
    quantile = pl.concat(
        [pc.bin_statistics(h, "p", "y", by="g", strategy="quantile") for h in halves]
    )
    with pytest.raises(pc.CalibrationDataError, match="cannot be merged"):
        pc.metrics_from_statistics(quantile, by="g")
    with pytest.raises(pc.CalibrationDataError, match="cannot be merged"):
        pc.reliability_from_statistics(quantile, by="g")
    # One partition's quantile table finishes; lazily, a clash gives null, not a number.
    one = pc.bin_statistics(df, "p", "y", by="g", strategy="quantile")
    assert pc.metrics_from_statistics(one, by="g")["ece"].null_count() == 0
    lazy = pc.metrics_from_statistics(quantile.lazy(), by="g").collect()
    assert lazy["ece"].null_count() == lazy.height
    mixed = pl.concat(
        [
            pc.bin_statistics(halves[0], "p", "y", n_bins=10),
            pc.bin_statistics(halves[1], "p", "y", n_bins=12),
        ]
    )
    with pytest.raises(pc.CalibrationDataError, match="cannot be merged"):
        pc.metrics_from_statistics(mixed)


def test_tables_of_different_closures_do_not_merge() -> None:
    # Rounded probabilities sit on the edges: a right-closed and a left-closed table
    # of two days bin those rows differently, so their sums must not be added.
    rng = np.random.default_rng(41)
    p = rng.integers(0, 11, 2_000) / 10.0
    y = (rng.random(2_000) < np.clip(p * 0.8 + 0.1, 0, 1)).astype(np.int8)
    df = pl.DataFrame({"p": p, "y": y, "g": rng.integers(0, 2, 2_000)})
    right = pc.bin_statistics(df.head(1_000), "p", "y", by="g", n_bins=10)
    left = pc.bin_statistics(df.tail(1_000), "p", "y", by="g", n_bins=10, closed="left")
    assert right["closed"].unique().to_list() == ["right"]
    mixed = pl.concat([right, left])
    with pytest.raises(pc.CalibrationDataError, match="different edges or closures"):
        pc.metrics_from_statistics(mixed, by="g")
    with pytest.raises(pc.CalibrationDataError, match="cannot be merged"):
        pc.reliability_from_statistics(mixed, by="g")
    lazy = pc.metrics_from_statistics(mixed.lazy(), by="g").collect()
    assert lazy["ece"].null_count() == lazy.height  # null, not a number
    # The same closure merges into the one-pass table; so do tables of earlier versions
    # (no closed column), which are not checked.
    both = pl.concat([right, pc.bin_statistics(df.tail(1_000), "p", "y", by="g", n_bins=10)])
    whole = pc.summary(df, "p", "y", by="g", n_bins=10, metrics=["ece"]).sort("g")
    merged = pc.metrics_from_statistics(both, by="g", metrics=["ece"]).sort("g")
    np.testing.assert_allclose(merged["ece"].to_numpy(), whole["ece"].to_numpy(), rtol=1e-12)
    old = pc.metrics_from_statistics(both.drop("closed"), by="g", metrics=["ece"]).sort("g")
    np.testing.assert_allclose(old["ece"].to_numpy(), whole["ece"].to_numpy(), rtol=1e-12)


def test_parallel_partitions_example_runs() -> None:
    script = Path(__file__).parents[1] / "examples" / "parallel_partitions.py"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "merged statistics == one pass" in done.stdout


@pytest.mark.parametrize("closed", ["right", "left"])
def test_the_one_group_table_bins_rows_on_edges_as_the_grouped_table(closed: str) -> None:
    """One group (grouped by the coarse key) and a grouped table (by the bin) agree on
    probabilities at every edge and an ulp either side, refused and null rows included."""
    edges = np.arange(23) / 22.0
    p = np.concatenate([edges, np.nextafter(edges, 2.0), np.nextafter(edges, -1.0)])
    p = np.clip(p, 0.0, 1.0)
    y = (np.arange(p.size) % 3 == 0).astype(np.int64)
    frame = pl.DataFrame({"p": [*p, None, 1.5, 0.4], "y": [*y, 1, 0, None], "g": 0})
    options: dict[str, Any] = {"n_bins": 22, "closed": closed}
    # A LazyFrame counts refused rows in the table (a DataFrame raises).
    whole = pc.bin_statistics(frame.lazy(), "p", "y", **options).collect()
    grouped = pc.bin_statistics(frame.lazy(), "p", "y", by="g", **options).collect().drop("g")
    assert_frame_equal(whole, grouped)
    counts = whole.filter(pl.col("bin").is_not_null())["count"].to_numpy()
    want = np.bincount(ref.bin_ids(p, 22, closed=closed), minlength=22)
    np.testing.assert_array_equal(counts, want)
    assert whole.filter(pl.col("bin").is_null())["count"].to_list() == [1]


# --------------------------------------------------------------------------
# What the surfaces finish a table with: windows, summary names, observed rows, checks
# --------------------------------------------------------------------------


def windowed_log() -> pl.DataFrame:
    """Two models over three days, the days' calibration differing."""
    log = sign_changing(41, 3_000, 2, groups=2)
    return log.with_columns(
        ts=pl.lit(datetime(2024, 3, 1)) + pl.duration(hours=pl.int_range(pl.len()) % 72),
        model=pl.when(pl.col("g") == 0).then(pl.lit("a")).otherwise(pl.lit("b")),
    )


def test_bin_statistics_time_windows_finish_into_the_summary_per_window() -> None:
    log = windowed_log()
    options: dict[str, Any] = {"by": "model", "time": "ts", "every": "1d", "weight": "w"}
    stats = pc.bin_statistics(log, "p", "y", **options)
    assert stats.columns[:3] == ["model", "ts", "bin"]
    assert stats["ts"].n_unique() == 3
    summary = pc.summary(log, "p", "y", **options)
    assert_frame_equal(pc.metrics_from_statistics(stats, by=["model", "ts"]), summary)
    # The windows sum to the whole log (uniform bins).
    whole = pc.metrics_from_statistics(stats, by="model")
    assert_frame_equal(whole, pc.summary(log, "p", "y", by="model", weight="w"), rel_tol=1e-12)
    lazy = pc.bin_statistics(log.lazy(), "p", "y", **options)
    assert_frame_equal(lazy.collect(), stats)
    with pytest.raises(ValueError, match="`time` and `every` go together"):
        pc.bin_statistics(log, "p", "y", time="ts")
    with pytest.raises(pc.CalibrationDataError, match="`time` must be a Date or Datetime"):
        pc.bin_statistics(log, "p", "y", time="p", every="1d")


@pytest.mark.parametrize("reduction", ["confidence", "top_label", "classwise"])
def test_metrics_from_statistics_names_vector_columns_as_the_summary(reduction: str) -> None:
    log = make_log(42, 2_000, groups=2, classes=3)
    options: dict[str, Any] = {"by": "g", "reduction": reduction, "n_bins": 5}
    stats = pc.bin_statistics(log, "probs", "cls", **options)
    named = pc.metrics_from_statistics(stats, by="g", reduction=reduction)  # type: ignore[arg-type]
    assert_frame_equal(named, pc.summary(log, "probs", "cls", **options))
    assert {"mean_confidence", "accuracy", f"{reduction}_ece"} <= set(named.columns)
    plain = pc.metrics_from_statistics(stats, by="g")
    assert {"mean_predicted", "observed", "ece"} <= set(plain.columns)


def test_metrics_from_statistics_names_the_bounds_and_refuses_a_bad_reduction() -> None:
    log = make_log(43, 500, classes=3)
    stats = pc.bin_statistics(log, "probs", "cls", resampling="bootstrap", n_resamples=5)
    named = pc.metrics_from_statistics(
        stats, metrics=["ece"], confidence=0.9, reduction="confidence"
    )
    want = pc.summary(log, "probs", "cls", metrics=["ece"], confidence=0.9, n_resamples=5)
    assert named.columns == want.columns
    assert "confidence_ece_lower" in named.columns
    with pytest.raises(ValueError, match="`reduction` must be one of"):
        pc.metrics_from_statistics(stats, reduction="canonical")  # type: ignore[arg-type]
    cells = pc.bin_statistics(log, "probs", "cls", n_bins=2, reduction="canonical", metrics=["ece"])
    with pytest.raises(ValueError, match="`reduction` must be None"):
        pc.metrics_from_statistics(cells, metrics=["ece"], reduction="confidence")


def test_reliability_from_statistics_reads_the_observed_rows_of_a_resampled_table() -> None:
    log = windowed_log()
    plain = pc.bin_statistics(log, "p", "y", by="model", weight="w")
    resampled = pc.bin_statistics(
        log,
        "p",
        "y",
        by="model",
        weight="w",
        resampling=["bootstrap", "consistency"],
        n_resamples=4,
    )
    want = pc.reliability_from_statistics(plain, by="model")
    assert_frame_equal(pc.reliability_from_statistics(resampled, by="model"), want)
    lazy = pc.reliability_from_statistics(resampled.lazy(), by="model")
    assert_frame_equal(lazy.collect(), want)


def test_validate_statistics_gives_a_lazy_table_the_dataframe_policy() -> None:
    log = windowed_log()
    options: dict[str, Any] = {"by": "model", "time": "ts", "every": "1d"}
    clean = pc.bin_statistics(log.lazy(), "p", "y", **options).collect()
    assert pc.validate_statistics(clean, log.lazy(), "p", "y", **options) is clean
    bad = log.with_columns(p=pl.when(pl.int_range(pl.len()) < 4).then(1.5).otherwise("p"))
    stats = pc.bin_statistics(bad.lazy(), "p", "y", **options).collect()
    with pytest.raises(pc.CalibrationDataError) as raised:
        pc.bin_statistics(bad, "p", "y", **options)
    with pytest.raises(pc.CalibrationDataError) as lazily:
        pc.validate_statistics(stats, bad.lazy(), "p", "y", **options)
    assert str(lazily.value) == str(raised.value)
    assert "probability outside [0, 1] in 4 of 3000 rows" in str(lazily.value)
    # Classwise vectors of different lengths: no refused row, yet not a table to finish.
    vectors = make_log(44, 50, classes=3).with_columns(pl.col("probs").arr.to_list())
    ragged = vectors.with_columns(
        probs=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit([0.5, 0.5])).otherwise("probs")
    )
    table = pc.bin_statistics(ragged.lazy(), "probs", "cls", reduction="classwise").collect()
    with pytest.raises(pc.CalibrationDataError, match="vectors of different lengths"):
        pc.validate_statistics(table, ragged.lazy(), "probs", "cls", reduction="classwise")


@pytest.mark.parametrize("reduction", [None, "confidence", "top_label", "classwise"])
def test_the_sparse_table_has_one_row_per_bin_and_keeps_every_group(reduction: Any) -> None:
    """Only non-empty bins are rows, each (keys, class, bin) once; an all-null group is one
    row of count 0 with a null bin (and class), whatever its rows' classes would be."""
    probs = [[0.2, 0.8], [0.7, 0.3], [0.6, 0.4], [0.1, 0.9], [0.45, 0.55], [0.9, 0.1]]
    df = pl.DataFrame({"g": [1, 1, 2, 2, 3, 3], "probs": probs, "y": [1, 0, None, None, 1, 1]})
    if reduction is None:
        df = df.with_columns(pl.col("probs").list.get(1).alias("probs"))
    table = pc.bin_statistics(df, "probs", "y", by="g", n_bins=4, reduction=reduction)
    keys = ["g", *(["class"] if "class" in table.columns else []), "bin"]
    assert table.select(keys).is_duplicated().sum() == 0
    assert table.filter(pl.col("bin").is_not_null())["count"].min() > 0
    empty = table.filter(pl.col("g") == 2)
    assert empty.height == 1
    assert empty["count"].to_list() == [0]
    assert empty["bin"].to_list() == [None]
    summary = pc.summary(df, "probs", "y", by="g", n_bins=4, reduction=reduction)
    assert summary["g"].to_list() == [1, 2, 3]


def _segmented(seed: int) -> pl.DataFrame:
    """A log of four segments, two pairs differing only in case (``a``/``A``, ``b``/``B``)."""
    df = make_log(seed, 800, groups=4)
    return df.with_columns(segment=pl.col("g").replace_strict([0, 1, 2, 3], ["a", "A", "b", "B"]))


def test_finishers_take_expression_keys() -> None:
    """`by` of the finishers: an expression of the key columns, equal to that key by name."""
    df = _segmented(21)
    options: dict[str, Any] = {"n_bins": 5, "weight": "w", "metrics": ["ece", "brier"]}
    stats = pc.bin_statistics(df, "p", "y", by=["g", "segment"], **options)
    upper = df.with_columns(pl.col("segment").str.to_uppercase())
    named = pc.bin_statistics(upper, "p", "y", by="segment", **options)
    expression = pl.col("segment").str.to_uppercase()
    got = pc.metrics_from_statistics(stats, by=expression, metrics=["ece", "brier"])
    want = pc.metrics_from_statistics(named, by="segment", metrics=["ece", "brier"])
    assert got["segment"].to_list() == ["A", "B"]
    assert_frame_equal(got, want, rel_tol=1e-12, abs_tol=1e-12)
    assert_frame_equal(got, pc.summary(upper, "p", "y", by="segment", **options), rel_tol=1e-12)
    got_rows = pc.reliability_from_statistics(stats.lazy(), by=[expression]).collect()
    want_rows = pc.reliability_from_statistics(named, by="segment")
    assert_frame_equal(got_rows, want_rows, rel_tol=1e-12, abs_tol=1e-12)
    # A cast key gives the numbers of the column cast first.
    cast = pc.metrics_from_statistics(stats, by=pl.col("g").cast(pl.String), metrics=["ece"])
    by_name = pc.metrics_from_statistics(
        stats.with_columns(pl.col("g").cast(pl.String)), by="g", metrics=["ece"]
    )
    assert cast.schema["g"] == pl.String
    assert_frame_equal(cast, by_name)
    with pytest.raises(pc.CalibrationDataError, match="'model'"):
        pc.metrics_from_statistics(stats, by=pl.col("model").str.to_uppercase())
    with pytest.raises(ValueError, match="`by` cannot hold 'count'"):
        pc.metrics_from_statistics(stats, by=pl.col("g").alias("count"))
