"""Regression statistics tables finished after the fact: stored, merged, regrouped (#25).

`regression_metrics_from_statistics` and `quantile_reliability_from_statistics` finish
tables of `regression_statistics` to the numbers of `regression_summary` and
`quantile_reliability`, whether the table is whole, of two halves merged, or keyed by
more columns than the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import CountingSource

OPTIONS: dict[str, Any] = {"mean": "mu", "std": "sigma", "weight": "w"}
MERGE_KEYS = ["bin", "lower", "upper", "closed", "n_bins"]


def _frame(seed: int = 3, n: int = 400) -> pl.DataFrame:
    """Groups under-confident (0), over-confident (1) and both by sigma (2): the
    curve's gap changes sign across groups and within group 2; nulls, integer weights."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    mu = rng.normal(0.0, 2.0, n)
    sigma = rng.uniform(0.2, 2.0, n)
    scale = np.where(group == 0, 0.6, np.where(group == 1, 1.7, np.where(sigma < 1, 1.6, 0.6)))
    y = mu + scale * sigma * rng.normal(size=n)
    df = pl.DataFrame(
        {
            "g": group,
            "h": rng.integers(0, 2, n),
            "mu": mu,
            "sigma": sigma,
            "y": y,
            "w": rng.integers(0, 4, n).astype(float),
        }
    )
    return df.with_columns(pl.when(pl.Series(rng.random(n) >= 0.1)).then(pl.col("y")).alias("y"))


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize(("curve", "n_levels"), [("interval", 100), ("quantile", 21)])
def test_finishers_give_the_summary_and_the_curve(lazy: bool, curve: Any, n_levels: int) -> None:
    df = _frame()
    data = df.lazy() if lazy else df
    options = {**OPTIONS, "by": "g", "n_levels": n_levels}
    stats = pc.regression_statistics(data, "y", **options)
    # A LazyFrame's grid is given (a plan reads nothing); a DataFrame's is read.
    grid = {"n_levels": n_levels} if lazy else {}
    metrics = pc.regression_metrics_from_statistics(stats, by="g", curve=curve, **grid)
    curve_table = pc.quantile_reliability_from_statistics(stats, by="g", curve=curve, **grid)
    assert isinstance(metrics, type(data)) and isinstance(curve_table, type(data))
    summary = pc.regression_summary(data, "y", curve=curve, **options)
    reliability = pc.quantile_reliability(data, "y", curve=curve, **options)
    assert_frame_equal(metrics.lazy().collect(), summary.lazy().collect())
    assert_frame_equal(curve_table.lazy().collect(), reliability.lazy().collect())
    assert curve_table.lazy().collect().height == 3 * n_levels


def test_tables_of_two_halves_merged_finish_to_the_whole() -> None:
    df = _frame(7, 500)
    options = {**OPTIONS, "by": "g"}
    halves = [pc.regression_statistics(part, "y", **options) for part in (df[:230], df[230:])]
    keys = ["g", *MERGE_KEYS]
    merged = pl.concat(halves).group_by(keys).agg(pl.exclude(keys).sum())
    summary = pc.regression_summary(df, "y", **options)
    reliability = pc.quantile_reliability(df, "y", **options)
    # The gap of the curve changes sign across groups (miscalibration both ways).
    gap = reliability.with_columns(gap=pl.col("observed") - pl.col("level"))["gap"]
    assert gap.min() < -0.05 and gap.max() > 0.05  # type: ignore[operator]
    for table in (merged, pl.concat(halves)):  # summed first, or by the finisher
        got = pc.regression_metrics_from_statistics(table, by="g")
        assert_frame_equal(got, summary, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
        curve = pc.quantile_reliability_from_statistics(table, by="g")
        assert_frame_equal(curve, reliability, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)


def test_keys_left_out_are_summed_and_expressions_regroup() -> None:
    df = _frame(11, 400)
    stats = pc.regression_statistics(df, "y", by=["g", "h"], **OPTIONS)
    close: dict[str, Any] = {"check_exact": False, "rel_tol": 1e-12, "abs_tol": 1e-15}
    for by in ("g", None, pl.col("g") % 2):
        got = pc.regression_metrics_from_statistics(stats, by=by)
        assert_frame_equal(got, pc.regression_summary(df, "y", by=by, **OPTIONS), **close)
        curve = pc.quantile_reliability_from_statistics(stats, by=by)
        assert_frame_equal(curve, pc.quantile_reliability(df, "y", by=by, **OPTIONS), **close)


def test_refused_rows_of_a_stored_table_give_null_metrics() -> None:
    df = _frame(5, 60).with_columns(
        sigma=pl.when(pl.int_range(pl.len()) == 0).then(-1.0).otherwise(pl.col("sigma"))
    )
    stats = pc.regression_statistics(df.lazy(), "y", by="g", **OPTIONS).collect()
    refused_group = df["g"][0]
    got = pc.regression_metrics_from_statistics(stats, by="g", metrics="crps")
    row = got.filter(pl.col("g") == refused_group)
    assert row["refused"].to_list() == [1] and row["crps"].to_list() == [None]
    assert got.filter(pl.col("g") != refused_group)["crps"].null_count() == 0


def test_tables_that_cannot_be_finished_are_refused() -> None:
    df = _frame(2, 80)
    classification = pc.bin_statistics(
        pl.DataFrame({"p": [0.2, 0.7], "y": [0, 1]}), "p", "y", n_bins=4
    )
    with pytest.raises(pc.CalibrationDataError, match=r"not a regression statistics.*sum_crps"):
        pc.regression_metrics_from_statistics(classification)
    with pytest.raises(pc.CalibrationDataError, match="not a regression statistics"):
        pc.quantile_reliability_from_statistics(classification.lazy(), n_levels=5)
    mixed = pl.concat([pc.regression_statistics(df, "y", n_levels=n, **OPTIONS) for n in (11, 21)])
    finishers = (pc.regression_metrics_from_statistics, pc.quantile_reliability_from_statistics)
    for finisher in finishers:
        with pytest.raises(pc.CalibrationDataError, match=r"mixes grids.*n_bins=20.*n_bins=40"):
            finisher(mixed)
        with pytest.raises(pc.CalibrationDataError, match="has no key of `by`"):
            finisher(mixed, by="nope")
        with pytest.raises(TypeError, match="polars DataFrame or LazyFrame"):
            finisher(df.to_dict())  # type: ignore[type-var]
    empty = pc.regression_statistics(df.with_columns(y=None), "y", **OPTIONS)
    with pytest.raises(pc.CalibrationDataError, match="no binned row"):
        pc.regression_metrics_from_statistics(empty)
    with pytest.raises(ValueError, match="curve"):
        pc.quantile_reliability_from_statistics(mixed, curve="both")  # type: ignore[arg-type]


def test_a_lazy_table_is_finished_without_reading_it_and_never_misread() -> None:
    df = _frame(3, 120)
    eleven = pc.regression_statistics(df, "y", by="g", n_levels=11, **OPTIONS)
    with pytest.raises(ValueError, match="give `n_levels` for a LazyFrame"):
        pc.regression_metrics_from_statistics(eleven.lazy(), by="g")
    with pytest.raises(ValueError, match="`n_levels` is 21, but the table's grid has 11"):
        pc.quantile_reliability_from_statistics(eleven, n_levels=21)
    source = CountingSource(eleven)
    plan = pc.regression_metrics_from_statistics(source.frame(), by="g", n_levels=11)
    assert source.reads == 0
    assert_frame_equal(plan.collect(), pc.regression_metrics_from_statistics(eleven, by="g"))
    assert source.reads == 1
    # Rows of another grid (a table of 21 levels appended to group 0) refuse their group:
    # null numbers, never those of a misread grid.
    other = pc.regression_statistics(df.filter(pl.col("g") == 0), "y", by="g", **OPTIONS)
    mixed = pl.concat([eleven, other]).lazy()
    got = pc.regression_metrics_from_statistics(mixed, by="g", n_levels=11).collect()
    assert got.filter(pl.col("g") == 0)["crps"].to_list() == [None]
    assert got.filter(pl.col("g") == 0)["refused"].item() > 0
    assert got.filter(pl.col("g") != 0)["crps"].null_count() == 0
    curve = pc.quantile_reliability_from_statistics(mixed, by="g", n_levels=11).collect()
    assert curve.filter(pl.col("g") == 0)["observed"].null_count() == 11
