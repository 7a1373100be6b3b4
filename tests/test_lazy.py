"""A LazyFrame method builds a plan: nothing is read until it is collected, then once."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import CountingSource, make_log

ROWS = 2_000


def _data() -> pl.DataFrame:
    """A binary log in three groups, with its probabilities also as vectors ``[1 - p, p]``."""
    df = make_log(0, ROWS, decimals=None, groups=3, weights=False)
    return df.with_columns(probs=pl.concat_list(1 - pl.col("p"), "p").list.to_array(2))


PLANS: dict[str, Callable[[pl.LazyFrame], pl.LazyFrame]] = {
    "summary": lambda lf: lf.calib.summary("p", "y", by="g"),
    "summary, one group": lambda lf: lf.calib.summary("p", "y", metrics=["ece"]),
    "summary, by an expression": lambda lf: lf.calib.summary("p", "y", by=pl.col("g") % 2),
    "reliability": lambda lf: lf.calib.reliability("p", "y", by="g"),
    "bin_statistics": lambda lf: lf.calib.bin_statistics("p", "y", by="g"),
    "merged and finished": lambda lf: pc.metrics_from_statistics(
        lf.calib.bin_statistics("p", "y", by="g"), by="g"
    ),
    "classwise summary": lambda lf: lf.calib.summary("probs", "y", reduction="classwise"),
    "top-label reliability": lambda lf: lf.calib.reliability("probs", "y", reduction="top_label"),
    "canonical summary": lambda lf: lf.calib.summary("probs", "y", by="g", reduction="canonical"),
    "canonical statistics, merged and finished": lambda lf: pc.metrics_from_statistics(
        lf.calib.bin_statistics("probs", "y", by="g", reduction="canonical", metrics=["ece"]),
        metrics=["ece"],
        distance="sqeuclidean",
    ),
}


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
@pytest.mark.parametrize("name", list(PLANS))
def test_a_plan_reads_nothing_until_collected_then_once(name: str, engine: str) -> None:
    source = CountingSource(_data())
    plan = PLANS[name](source.frame())
    assert isinstance(plan, pl.LazyFrame)
    assert source.reads == 0
    result = plan.collect(engine=engine)  # type: ignore[call-overload]
    assert source.reads == 1, f"{name} read the data {source.reads} times"
    assert result.height > 0


@pytest.mark.parametrize("name", list(PLANS))
def test_a_filter_of_the_rows_reaches_the_source(name: str) -> None:
    # A filtered scan reads only what the filter keeps (a parquet scan skips row groups):
    # the filter must reach the source through the plan (a cache() would stop it).
    data = _data().with_row_index("row")
    source = CountingSource(data)
    kept = pl.col("row") < ROWS // 2
    got = PLANS[name](source.frame().filter(kept)).collect()
    assert source.reads == 1
    assert all(predicate is not None for predicate in source.predicates), name
    # The same numbers, to rounding: the source's one frame and the in-memory frame's
    # chunks may sum in another order.
    expected = PLANS[name](data.lazy().filter(kept)).collect()
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)


def test_quantile_bins_read_twice_edges_then_bins() -> None:
    source = CountingSource(_data())
    plan = source.frame().calib.summary("p", "y", by="g", strategy="quantile")
    assert source.reads == 0
    plan.collect()
    assert source.reads == 2  # documented: the group's quantile edges, then the bins


def test_a_plan_over_bad_rows_reads_once_and_gives_null() -> None:
    data = _data()
    bad = CountingSource(data.with_columns(p=pl.when(pl.col("g") == 0).then(2.0).otherwise("p")))
    got = bad.frame().calib.summary("p", "y", by="g").collect()
    assert got.filter(pl.col("g") == 0)["refused"].item() > 0
    assert got.filter(pl.col("g") == 0)["ece"].item() is None
    assert got.filter(pl.col("g") == 1)["ece"].item() is not None
    assert bad.reads == 1


def test_public_api_uses_no_unstable_polars_feature() -> None:
    df = _data()
    # The check can fail: prob_vector, documented as unstable, does warn.
    with pl.Config(warn_unstable=True), pytest.warns(pl.exceptions.UnstableWarning):
        df.select(pc.prob_vector("p", "p"))
    lists = df.with_columns(probs=pl.col("probs").arr.to_list())
    with pl.Config(warn_unstable=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        df.select(
            pc.ece("p", "y"),
            pc.mce("p", "y").alias("m"),
            pc.rmsce("p", "y").alias("r"),
            pc.brier("p", "y").alias("b"),
            pc.log_loss("p", "y").alias("l"),
            pc.ece("p", "y", n_bins=50).alias("e50"),
            pc.bin_index("p").alias("i"),
            pc.refused_rows("p", "y"),
        )
        lists.select(
            pc.confidence_ece("probs", "y"),
            pc.classwise_ece("probs", "y").alias("c"),
            pc.top_label_ece("probs", "y").alias("t"),
            pc.multiclass_brier("probs", "y").alias("b"),
            pc.multiclass_log_loss("probs", "y").alias("l"),
        )
        for data in (df, df.lazy()):
            for result in (
                data.calib.summary("p", "y", by="g"),
                data.calib.reliability("p", "y", by="g"),
                data.calib.summary("probs", "y", reduction="classwise"),
                pc.metrics_from_statistics(data.calib.bin_statistics("p", "y", by="g")),
            ):
                if isinstance(result, pl.LazyFrame):
                    result.collect()
