"""The fairness audit: every slice from one pass, against per-slice summaries, fairlearn,
statsmodels."""

from __future__ import annotations

import functools
import itertools
import math
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.io.plugins import register_io_source
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import make_log
from polars_calib._audit import MAX_SLICES
from reference import calibration_error
from test_cli import HAS_PLOT, assert_one_line_error, run
from test_lazy import CountingSource

N_BINS = 10
# Point estimates unless a test asks for intervals: the bootstrap costs a pass per 64 replicates.
audit = functools.partial(pc.audit, n_resamples=None)


def attributes_log(seed: int, n: int, *, classes: int | None = None) -> pl.DataFrame:
    """`make_log`'s rows (sign-changing miscalibration) with four attributes of four dtypes.

    ``sex`` (String), ``age`` (Categorical, with nulls), ``region`` (Int32) and
    ``member`` (Boolean, with nulls).
    """
    rng = np.random.default_rng([seed, 2])
    age = rng.choice(["18-29", "30-49", "50-64", "65+", ""], n, p=[0.3, 0.3, 0.2, 0.15, 0.05])
    member = rng.choice([0, 1, 2], n, p=[0.45, 0.45, 0.1])
    return make_log(seed, n, classes=classes).with_columns(
        sex=pl.Series(rng.choice(["F", "M"], n)),
        age=pl.Series(age).replace("", None).cast(pl.Categorical),
        region=pl.Series(rng.integers(0, 3, n), dtype=pl.Int32),
        member=pl.Series(member).replace_strict(
            {0: False, 1: True, 2: None}, return_dtype=pl.Boolean
        ),
    )


def _in_slice(row: dict[str, object], attributes: list[str]) -> pl.Expr:
    """The rows of a slice: each fixed attribute equal to its value (null to null)."""
    return pl.all_horizontal(
        pl.lit(True), *(pl.col(name).eq_missing(pl.lit(row[name])) for name in attributes)
    )


# --------------------------------------------------------------------------
# Rolled up = computed on each slice directly
# --------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [None, "w"])
def test_every_slice_equals_a_summary_of_its_rows(weight: str | None) -> None:
    df = attributes_log(0, 3_000)
    by = ["sex", "age", "region", "member"]
    metrics = ["ece", "mce", "rmsce", "brier", "log_loss"]
    result = audit(
        df,
        "p",
        "y",
        by=by,
        max_order=3,
        metrics=metrics,
        n_bins=N_BINS,
        weight=weight,
    )
    slices = result.slices
    # overall, 2 + 5 + 3 + 3 single values, and the intersections that occur
    expected_count = sum(
        df.select(subset).n_unique() if subset else 1
        for order in range(4)
        for subset in itertools.combinations(by, order)
    )
    assert slices.height == expected_count
    assert slices.select(pl.struct("attributes", *by).is_unique().all()).item()
    for row in slices.iter_rows(named=True):
        rows = df.filter(_in_slice(row, row["attributes"]))
        direct = pc.summary(
            rows, "p", "y", metrics=[*metrics, "spiegelhalter_p"], n_bins=N_BINS, weight=weight
        )
        assert row["count"] == direct["count"].item() == rows.height - rows["p"].null_count()
        for column in ["mean_predicted", "observed", *metrics]:
            expected = direct[column].item()
            assert row[column] == pytest.approx(expected, abs=1e-12), (row["slice"], column)
        # Each slice's test: Spiegelhalter's, two-sided
        assert row["p_value"] == pytest.approx(direct["spiegelhalter_p"].item(), rel=1e-9)


@settings(max_examples=20)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 300),
    values=st.tuples(st.integers(1, 4), st.integers(1, 3), st.integers(1, 2)),
    null_share=st.sampled_from([0.0, 0.2]),
    max_order=st.integers(1, 3),
)
def test_rolled_up_slices_equal_direct_summaries_on_generated_frames(
    seed: int, n: int, values: tuple[int, int, int], null_share: float, max_order: int
) -> None:
    rng = np.random.default_rng(seed)

    def attribute(k: int) -> list[int | None]:
        drawn = rng.integers(0, k, n)
        return [None if rng.random() < null_share else int(v) for v in drawn]

    df = make_log(seed, n, nulls=null_share).with_columns(
        a=pl.Series(attribute(values[0]), dtype=pl.Int16),
        b=pl.Series([None if v is None else f"b{v}" for v in attribute(values[1])]),
        c=pl.Series([None if v is None else v == 1 for v in attribute(values[2])]),
    )
    metrics = ["ece", "mce", "brier"]
    result = audit(
        df,
        "p",
        "y",
        by=["a", "b", "c"],
        max_order=max_order,
        metrics=metrics,
        n_bins=7,
        weight="w",
        min_count=0,
    )
    for row in result.slices.iter_rows(named=True):
        rows = df.filter(_in_slice(row, row["attributes"]))
        assert rows.height > 0
        direct = pc.summary(rows, "p", "y", metrics=metrics, n_bins=7, weight="w").row(
            0, named=True
        )
        for column in ("count", "mean_predicted", "observed", *metrics):
            if direct[column] is None:
                assert row[column] is None
            else:
                assert row[column] == pytest.approx(direct[column], abs=1e-12)


def test_slices_say_which_attributes_they_fix_and_null_is_a_value() -> None:
    df = pl.DataFrame(
        {
            "a": ["x", "x", None, None, "y", "y"],
            "b": [1, 2, 1, 2, 1, None],
            "p": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
            "y": [0, 1, 0, 1, 0, 1],
        }
    )
    slices = audit(df, "p", "y", by=["a", "b"], min_count=0).slices
    labels = slices["slice"].to_list()
    assert labels == [
        "overall",
        "a=x",
        "a=y",
        "a=null",
        "b=1",
        "b=2",
        "b=null",
        "a=x, b=1",
        "a=x, b=2",
        "a=y, b=1",
        "a=y, b=null",
        "a=null, b=1",
        "a=null, b=2",
    ]
    a_null = slices.filter(pl.col("slice") == "a=null").row(0, named=True)
    assert a_null["attributes"] == ["a"] and a_null["a"] is None and a_null["b"] is None
    assert a_null["count"] == 2
    overall = slices.row(0, named=True)
    assert overall["attributes"] == [] and overall["order"] == 0 and overall["share"] == 1.0
    assert slices.schema["b"] == pl.Int64 and slices.schema["order"] == pl.Int32


def test_probability_vectors_with_a_reduction() -> None:
    df = attributes_log(1, 2_000, classes=3)
    for reduction in ("confidence", "classwise", "top_label"):
        result = audit(
            df,
            "probs",
            "cls",
            by=["sex", "region"],
            reduction=reduction,
            n_bins=N_BINS,
            metrics=["ece", "brier"],
            test=None,
        )
        name = f"{reduction}_ece"
        assert result.metrics == (name, "brier")
        for row in result.slices.iter_rows(named=True):
            rows = df.filter(_in_slice(row, row["attributes"]))
            direct = pc.summary(
                rows, "probs", "cls", reduction=reduction, n_bins=N_BINS, metrics=["ece", "brier"]
            )
            for column in ("accuracy", name, "brier"):
                assert row[column] == pytest.approx(direct[column].item(), abs=1e-12)
    # Vectors are tested by the consistency test of ECE ("auto"), from replicates
    tested = audit(df, "probs", "cls", by="sex", n_resamples=9, n_bins=N_BINS, min_count=0)
    p_values = tested.slices["p_value"]
    assert p_values.null_count() == 0 and p_values.is_between(0.1, 1.0).all()  # k / 10
    named = ["confidence_ece", "confidence_ece_lower", "confidence_ece_upper"]
    assert tested.slices.columns[8:11] == named


def test_frame_namespaces_and_a_lazy_frame_give_the_same_audit() -> None:
    df = attributes_log(2, 1_000)
    eager = df.calib.audit("p", "y", by=["sex", "region"], n_resamples=None)
    lazy = df.lazy().calib.audit("p", "y", by=["sex", "region"], n_resamples=None)
    assert_frame_equal(eager.slices, lazy.slices)
    assert_frame_equal(eager.disparities, lazy.disparities)


def test_the_audit_uses_no_unstable_polars_feature() -> None:
    df = attributes_log(12, 300)
    with pl.Config(warn_unstable=True):  # warnings are errors in the suite
        result = audit(df, "p", "y", by=["sex", "age"], n_resamples=10, min_count=0)
        pc.plot_audit(result, backend="matplotlib")
    assert result.slices.height > 3


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_a_scan_is_read_once(engine: str) -> None:
    source = CountingSource(attributes_log(3, 2_000))
    with pl.Config(engine_affinity=engine):  # type: ignore[arg-type]
        result = audit(
            source.frame(),
            "p",
            "y",
            by=["sex", "age", "region"],
            max_order=3,
            metrics=["ece", "brier", "log_loss"],
        )
    assert source.reads == 1
    assert result.slices.height > 20
    assert_frame_equal(
        result.slices,
        audit(
            source.data,
            "p",
            "y",
            by=["sex", "age", "region"],
            max_order=3,
            metrics=["ece", "brier", "log_loss"],
        ).slices,
    )


def test_with_intervals_a_scan_is_read_as_often_as_by_one_summary() -> None:
    # The resampling's own passes (the observed sums, then one per chunk of replicates).
    data = attributes_log(3, 500)
    options = {"n_resamples": 70, "confidence": 0.9, "metrics": ["ece"]}
    summary_source, audit_source = CountingSource(data), CountingSource(data)
    pc.summary(summary_source.frame(), "p", "y", by=["sex", "age"], **options).collect()
    audit(audit_source.frame(), "p", "y", by=["sex", "age"], test=None, **options)
    assert audit_source.reads == summary_source.reads <= 3


def _assert_same_numbers(left: pl.DataFrame, right: pl.DataFrame) -> None:
    """Equal tables, up to the order of floating-point sums (batches sum in their order)."""
    assert_frame_equal(left, right, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("lazy", [False, True])
def test_batches_of_rows_give_the_numbers_of_one_pass(lazy: bool, tmp_path: Path) -> None:
    # Data larger than `batch_rows` are aggregated a slice at a time and summed: memory is
    # set by the batch, not the data. The same numbers, intervals and tests included
    # (the draws hash each row's position in the data, not in its batch). Both sizes
    # are below the (cell, bin) keys times 64: the replicates are aggregated a few at a
    # time (one; three) over batches of fewer rows, each summed at once per slice.
    df = attributes_log(13, 2_500)
    options: dict[str, Any] = {
        "by": ["sex", "age", "region", "member"],
        "max_order": 3,
        "n_bins": N_BINS,
        "metrics": ["ece", "brier", "log_loss"],
        "weight": "w",
        "min_count": 0,
        "n_resamples": 30,
        "seed": 5,
        "confidence": 0.9,
    }
    one_pass = pc.audit(df, "p", "y", **options)
    path = tmp_path / "log.parquet"
    df.write_parquet(path, row_group_size=300)
    data = pl.scan_parquet(path) if lazy else df
    for batch_rows in (700, 2_500):  # four batches (the last one short); one full batch
        batched = pc.audit(data, "p", "y", batch_rows=batch_rows, **options)
        _assert_same_numbers(batched.slices, one_pass.slices)
        _assert_same_numbers(batched.disparities, one_pass.disparities)


def test_batches_of_probability_vectors_give_the_numbers_of_one_pass() -> None:
    df = attributes_log(14, 900, classes=3)
    for reduction in ("confidence", "classwise"):
        options: dict[str, Any] = {
            "by": ["sex", "age"],
            "reduction": reduction,
            "n_resamples": 20,
            "min_count": 0,
        }
        one_pass = pc.audit(df, "probs", "cls", **options)
        batched = pc.audit(df.lazy(), "probs", "cls", batch_rows=250, **options)
        _assert_same_numbers(batched.slices, one_pass.slices)


class SlicedSource(CountingSource):
    """A counting source that reads only the rows asked for (`n_rows`), as a file scan does."""

    def frame(self) -> pl.LazyFrame:
        def source(
            with_columns: list[str] | None,
            predicate: pl.Expr | None,
            n_rows: int | None,
            batch_size: int | None,
        ) -> Iterator[pl.DataFrame]:
            self.reads += 1
            out = self.data if with_columns is None else self.data.select(with_columns)
            out = out if n_rows is None else out.head(n_rows)
            yield out if predicate is None else out.filter(predicate)

        return register_io_source(source, schema=self.data.schema)


def test_a_scan_larger_than_a_batch_is_read_once_per_batch_and_once_to_count() -> None:
    source = SlicedSource(attributes_log(15, 1_000))
    batched = audit(source.frame(), "p", "y", by=["sex", "age"], batch_rows=400)
    assert source.reads == 1 + 1 + 2  # the first batch, the count, the two others
    _assert_same_numbers(batched.slices, audit(source.data, "p", "y", by=["sex", "age"]).slices)


def test_replicates_of_many_cells_are_summed_per_slice_a_chunk_and_a_batch_at_a_time() -> None:
    # More (cell, bin) keys than `batch_rows`: each pass aggregates one replicate over a
    # batch of rows and sums its finest table at once per slice (the finest cells'
    # replicates are never one table). The same slices, intervals and consistency
    # p-values (the test's own replicates) as one pass over all rows and replicates.
    df = attributes_log(17, 1_200)
    options: dict[str, Any] = {
        "by": ["sex", "age", "region", "member"],
        "n_bins": N_BINS,
        "metrics": ["ece", "brier"],
        "test": "consistency",
        "n_resamples": 8,
        "seed": 7,
        "confidence": 0.9,
        "min_count": 0,
    }
    one_pass = pc.audit(df, "p", "y", **options)
    source = SlicedSource(df)
    batched = pc.audit(source.frame(), "p", "y", batch_rows=300, **options)
    _assert_same_numbers(batched.slices, one_pass.slices)
    _assert_same_numbers(batched.disparities, one_pass.disparities)
    # The observed pass: the first batch, the count, three more; then each replicate
    # (8 bootstrap, 8 consistency) over the four batches.
    assert source.reads == 1 + 1 + 3 + (8 + 8) * 4
    slices = one_pass.slices
    assert slices.height > 40
    assert slices["ece_lower"].null_count() == 0
    assert slices["p_value"].n_unique() > 3


def test_string_attributes_keep_their_dtype_and_values() -> None:
    # String attributes are aggregated as categoricals (fewer bytes per row held) and
    # come back as strings.
    df = attributes_log(16, 600).with_columns(age=pl.col("age").cast(pl.String))
    slices = audit(df.lazy(), "p", "y", by=["sex", "age"], batch_rows=250).slices
    assert slices.schema["sex"] == slices.schema["age"] == pl.String
    assert set(slices["age"].drop_nulls()) == set(df["age"].drop_nulls())
    assert slices.filter(pl.col("slice") == "age=null")["count"].item() == df["age"].null_count()


# --------------------------------------------------------------------------
# fairlearn's MetricFrame, on the same ECE
# --------------------------------------------------------------------------


def test_agrees_with_fairlearn_metric_frame() -> None:
    pytest.importorskip("fairlearn")
    from fairlearn.metrics import MetricFrame

    # Continuous probabilities: no row on a bin edge, where a numpy ECE could bin differently.
    df = attributes_log(4, 4_000).with_columns(
        pl.col("p").fill_null(0.5) * 0.99 + 0.004,
        pl.col("y").fill_null(0),
        pl.col("age").fill_null("unknown"),
        pl.col("member").fill_null(False),
    )
    by = ["sex", "age", "region", "member"]
    result = audit(df, "p", "y", by=by, max_order=2, n_bins=N_BINS, min_count=0)
    pandas = df.to_pandas()

    def ece(y_true: np.ndarray, y_prob: np.ndarray) -> float:
        return float(calibration_error(np.asarray(y_prob), np.asarray(y_true), n_bins=N_BINS))

    checked = 0
    for order in (1, 2):
        for subset in itertools.combinations(by, order):
            frame = MetricFrame(
                metrics=ece,
                y_true=pandas["y"],
                y_pred=pandas["p"],
                sensitive_features=pandas[list(subset)],
            )
            ours = result.slices.filter(pl.col("attributes") == list(subset))
            by_group = frame.by_group.dropna()  # fairlearn lists combinations that never occur
            assert ours.height == len(by_group)
            for key, value in by_group.items():
                values = key if isinstance(key, tuple) else (key,)
                row = ours.filter(
                    pl.all_horizontal(
                        pl.col(n).cast(pl.String).str.to_lowercase() == str(v).lower()
                        for n, v in zip(subset, values)
                    )
                )
                assert row["ece"].item() == pytest.approx(value, abs=1e-12)
            disparity = result.disparities.filter(
                pl.col("attributes") == list(subset), pl.col("metric") == "ece"
            ).row(0, named=True)
            assert disparity["overall"] == pytest.approx(frame.overall, abs=1e-12)
            assert disparity["group_min"] == pytest.approx(frame.group_min(), abs=1e-12)
            assert disparity["group_max"] == pytest.approx(frame.group_max(), abs=1e-12)
            assert disparity["difference"] == pytest.approx(frame.difference(), abs=1e-12)
            assert disparity["difference_to_overall"] == pytest.approx(
                frame.difference(method="to_overall"), abs=1e-12
            )
            assert disparity["ratio"] == pytest.approx(frame.ratio(), abs=1e-12)
            assert disparity["ratio_to_overall"] == pytest.approx(
                frame.ratio(method="to_overall"), abs=1e-12
            )
            checked += 1
    assert checked == 10


# --------------------------------------------------------------------------
# Multiple testing: statsmodels' multipletests
# --------------------------------------------------------------------------


p_value_lists = st.lists(
    st.one_of(
        st.none(),
        st.sampled_from([0.0, 0.001, 0.01, 0.04, 0.05, 0.5, 1.0]),  # ties
        st.floats(0.0, 1.0),
    ),
    max_size=40,
)


@settings(max_examples=30)
@given(p_value_lists)
@example([])
@example([None, None])
@example([0.01, 0.01, 0.01])
def test_adjusted_p_values_agree_with_statsmodels(values: list[float | None]) -> None:
    from statsmodels.stats.multitest import multipletests

    frame = pl.DataFrame({"p": values}, schema={"p": pl.Float64})
    adjusted = frame.select(
        holm=pc.adjusted_p_values(pl.col("p"), correction="holm"),
        bh=pc.adjusted_p_values(pl.col("p"), correction="bh"),
    )
    present = frame["p"].is_not_null()
    assert adjusted.filter(~present).null_count().sum_horizontal().sum() == 2 * (~present).sum()
    tested = frame["p"].drop_nulls().to_numpy()
    if tested.size == 0:
        return
    for column, method in (("holm", "holm"), ("bh", "fdr_bh")):
        expected = multipletests(tested, method=method)[1]
        ours = adjusted.filter(present)[column].to_numpy()
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)


def test_unknown_correction_is_refused() -> None:
    with pytest.raises(ValueError, match="`correction` must be one of 'holm', 'bh'"):
        pc.adjusted_p_values(pl.col("p"), correction="bonferroni")  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# A hidden intersection
# --------------------------------------------------------------------------


def hidden_intersection_log(seed: int) -> pl.DataFrame:
    """Every sex and every age band calibrated on the whole; one intersection is not.

    The offsets of the outcome rate from ``p`` cancel in each row and column of
    the sex x age table (sizes times offsets), with the same uniform ``p`` in
    every cell, so each single attribute's bins average them away: (F, 65+) is
    under-predicted by 0.25, (M, 65+) over-predicted by 0.05, and the other cells
    move by 1/60 the other way. The region is noise.
    """
    rng = np.random.default_rng(seed)
    cells = [("F", "65+", 600, 0.25), ("M", "65+", 3_000, -0.05)]
    cells += [("F", band, 3_000, -1 / 60) for band in ("18-29", "30-49", "50-64")]
    cells += [("M", band, 3_000, 1 / 60) for band in ("18-29", "30-49", "50-64")]
    frames = []
    for sex, age, n, offset in cells:
        p = rng.uniform(0.1, 0.7, n)
        y = rng.random(n) < p + offset
        frames.append(
            pl.DataFrame(
                {
                    "sex": sex,
                    "age": age,
                    "region": rng.choice(["north", "south", "west"], n),
                    "p": p,
                    "y": y,
                }
            )
        )
    return pl.concat(frames)


def test_worst_finds_the_miscalibrated_intersection_that_single_attributes_hide() -> None:
    df = hidden_intersection_log(5)
    result = audit(df, "p", "y", by=["sex", "age", "region"], n_bins=N_BINS)
    worst = result.worst(3)
    assert worst["slice"][0] == "sex=F, age=65+"
    top = worst.row(0, named=True)
    assert top["ece"] > 0.2 and top["ece_ratio"] > 3
    singles = result.slices.filter(pl.col("order") == 1)
    assert singles["ece"].max() < 0.07  # each attribute alone looks fine
    assert singles["ece"].max() < top["ece"] / 3
    sex_age = result.disparities.filter(
        pl.col("attributes") == ["sex", "age"], pl.col("metric") == "ece"
    )
    assert sex_age["worst_slice"].item() == "sex=F, age=65+"


def test_small_slices_are_flagged_and_left_out_unless_asked() -> None:
    df = hidden_intersection_log(6)
    result = audit(df, "p", "y", by=["sex", "age"], min_count=1_000)
    small = result.slices.filter(pl.col("too_small"))
    assert small["slice"].to_list() == ["sex=F, age=65+"]
    assert "sex=F, age=65+" not in result.worst(20)["slice"].to_list()
    assert result.worst(1, include_small=True)["slice"].item() == "sex=F, age=65+"
    sex_age = result.disparities.filter(pl.col("attributes") == ["sex", "age"])
    assert sex_age["small"].to_list() == [1, 1]
    assert sex_age["groups"].to_list() == [7, 7]
    assert (sex_age["worst_slice"] != "sex=F, age=65+").all()
    assert result.worst(2, metric="brier").height == 2
    everything = audit(df, "p", "y", by=["sex", "age"], min_count=1_000, include_small=True)
    assert_frame_equal(everything.slices, result.slices)
    assert everything.worst(1)["slice"].item() == "sex=F, age=65+"
    assert everything.worst(1, include_small=False)["slice"].item() != "sex=F, age=65+"
    sex_age = everything.disparities.filter(pl.col("attributes") == ["sex", "age"])
    assert sex_age["small"].to_list() == [0, 0] and sex_age["groups"].to_list() == [8, 8]
    assert sex_age["worst_slice"].to_list() == ["sex=F, age=65+"] * 2


# --------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------


def test_bad_arguments_raise_clear_errors() -> None:
    df = attributes_log(7, 200).with_columns(
        score=pl.col("p") * 100, tags=pl.concat_list("sex", "sex")
    )
    with pytest.raises(pc.CalibrationDataError, match="column 'nope' is missing"):
        audit(df, "p", "y", by=["sex", "nope"])
    with pytest.raises(pc.CalibrationDataError, match=r"'score' holds Float64.*bin_intervals"):
        audit(df, "p", "y", by=["sex", "score"])
    with pytest.raises(pc.CalibrationDataError, match="'tags' holds List"):
        audit(df, "p", "y", by=["tags"])
    with pytest.raises(ValueError, match="at least one attribute"):
        audit(df, "p", "y", by=[])
    for order in (0, 3):
        with pytest.raises(ValueError, match=r"`max_order` must be from 1 to len\(by\) = 2"):
            audit(df, "p", "y", by=["sex", "region"], max_order=order)
    with pytest.raises(TypeError, match="`max_order`"):
        audit(df, "p", "y", by=["sex"], max_order=1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`correction` must be one of 'holm', 'bh'"):
        audit(df, "p", "y", by="sex", correction="bonferroni")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'uniform' for an audit"):
        audit(df, "p", "y", by="sex", strategy="quantile")
    with pytest.raises(ValueError, match="`metrics` must be one of"):
        audit(df, "p", "y", by="sex", metrics=["ece", "hosmer_lemeshow"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="`test` must be one of"):
        audit(df, "p", "y", by="sex", test="ks")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="binary probabilities"):
        audit(attributes_log(7, 50, classes=3), "probs", "cls", by="sex", test="spiegelhalter")
    with pytest.raises(ValueError, match="`min_count`"):
        audit(df, "p", "y", by="sex", min_count=-1)
    with pytest.raises(ValueError, match="`batch_rows` must be an int >= 1"):
        audit(df, "p", "y", by="sex", batch_rows=0)
    with pytest.raises(ValueError, match="`by` cannot hold 'slice'"):
        audit(df.rename({"sex": "slice"}), "p", "y", by="slice")
    with pytest.raises(ValueError, match="`k` must be a positive int"):
        audit(df, "p", "y", by="sex").worst(0)
    with pytest.raises(ValueError, match="`metric` must be one of 'ece', 'brier'"):
        audit(df, "p", "y", by="sex").worst(metric="mce")


def test_too_many_slices_is_an_error_naming_the_limit() -> None:
    n = MAX_SLICES + 1
    df = pl.DataFrame({"id": pl.int_range(n, eager=True), "p": [0.5] * n, "y": [1] * n})
    limit = r"10,002 slices, more than the limit of 10,000.*max_order"
    with pytest.raises(ValueError, match=limit):
        audit(df, "p", "y", by="id")


def test_refused_rows_raise_even_from_a_lazy_frame() -> None:
    df = pl.DataFrame({"s": ["a", "b"], "p": [0.5, 1.5], "y": [1, 0]})
    with pytest.raises(pc.CalibrationDataError, match="'p'"):
        audit(df.lazy(), "p", "y", by="s")


def test_shares_differences_and_ratios_are_to_the_overall_row() -> None:
    result = audit(attributes_log(8, 1_500), "p", "y", by=["sex", "member"])
    slices = result.slices
    overall = slices.row(0, named=True)
    for metric in ("ece", "brier"):
        assert slices[f"{metric}_difference"].to_list() == pytest.approx(
            (slices[metric] - overall[metric]).to_list(), abs=1e-15
        )
        assert slices[f"{metric}_ratio"].to_list() == pytest.approx(
            (slices[metric] / overall[metric]).to_list(), rel=1e-15
        )
    sex = slices.filter(pl.col("attributes") == ["sex"])
    assert sex["share"].sum() == pytest.approx(1.0, abs=1e-15)
    assert math.isclose(sex["count"].sum(), overall["count"])


# --------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------


def audit_cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``polars-calib audit ...`` in a subprocess, importing this checkout's package."""
    root = str(Path(pc.__file__).parents[1])
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    return run("audit", *args, cwd=cwd, env={**os.environ, "PYTHONPATH": path})


def test_cli_audit_writes_the_tables_and_the_forest_plot(tmp_path: Path) -> None:
    df = hidden_intersection_log(9)
    log = tmp_path / "log.parquet"
    df.write_parquet(log)
    out = tmp_path / "out"
    result = audit_cli(
        log,
        "--prob",
        "p",
        "--label",
        "y",
        "--by",
        "sex,age,region",
        "--max-order",
        "2",
        "--bins",
        "10",
        "--min-count",
        "500",
        "--resamples",
        "20",
        "--seed",
        "4",
        "--out",
        out,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "sex=F, age=65+" in result.stdout
    expected = audit(
        df,
        "p",
        "y",
        by=["sex", "age", "region"],
        n_bins=10,
        min_count=500,
        n_resamples=20,
        seed=4,
    )
    assert_frame_equal(pl.read_parquet(out / "slices.parquet"), expected.slices)
    assert_frame_equal(pl.read_parquet(out / "disparities.parquet"), expected.disparities)
    csv = pl.read_csv(out / "slices.csv")
    assert csv["attributes"].to_list()[:2] == ["", "sex"]  # the overall row fixes none
    assert csv["slice"].to_list() == expected.slices["slice"].to_list()
    assert pl.read_csv(out / "disparities.csv").height == expected.disparities.height
    if HAS_PLOT:
        assert (out / "forest.png").stat().st_size > 0


def test_cli_audit_errors_are_one_line(tmp_path: Path) -> None:
    log = tmp_path / "log.parquet"
    hidden_intersection_log(9).head(200).write_parquet(log)
    too_high = audit_cli(
        log,
        "--prob",
        "p",
        "--label",
        "y",
        "--by",
        "sex",
        "--max-order",
        "2",
        cwd=tmp_path,
    )
    assert "--max-order" in assert_one_line_error(too_high, 2)
    assert "'polars-calib audit --help'" in too_high.stderr
    missing = audit_cli(log, "--prob", "p", "--label", "y", "--by", "sex,nope", cwd=tmp_path)
    assert "column 'nope' is missing" in assert_one_line_error(missing, 1)
    no_by = audit_cli(log, "--prob", "p", "--label", "y", cwd=tmp_path)
    assert "--by" in assert_one_line_error(no_by, 2)


# --------------------------------------------------------------------------
# Intervals and tests of each slice
# --------------------------------------------------------------------------


def test_rolled_up_intervals_and_p_values_equal_each_slice_resampled_directly() -> None:
    df = attributes_log(10, 1_500).with_columns(request=pl.int_range(pl.len(), dtype=pl.Int64))
    options = {"n_bins": N_BINS, "confidence": 0.9, "n_resamples": 25, "seed": 3, "id": "request"}
    result = audit(
        df,
        "p",
        "y",
        by=["sex", "member"],
        metrics=["ece", "brier"],
        test="consistency",
        min_count=0,
        correction=None,
        **options,
    )
    columns = ["ece", "ece_lower", "ece_upper", "brier", "brier_lower", "brier_upper"]
    for row in result.slices.iter_rows(named=True):
        rows = df.filter(_in_slice(row, row["attributes"]))
        direct = pc.summary(
            rows, "p", "y", metrics=["ece", "brier", "consistency_p"], **options
        ).row(0, named=True)
        for column in columns:
            assert row[column] == pytest.approx(direct[column], abs=1e-12), (row["slice"], column)
        assert row["p_value"] == direct["consistency_p"]
        assert row["p_adjusted"] == row["p_value"]


def test_p_values_adjusted_across_all_slices_as_statsmodels_does() -> None:
    from statsmodels.stats.multitest import multipletests

    df = hidden_intersection_log(11)
    for correction, method in (("holm", "holm"), ("bh", "fdr_bh")):
        result = audit(
            df,
            "p",
            "y",
            by=["sex", "age"],
            correction=correction,  # type: ignore[arg-type]
            n_resamples=None,
            confidence=0.99,
        )
        slices = result.slices
        expected = multipletests(slices["p_value"].to_numpy(), method=method, alpha=0.01)
        np.testing.assert_allclose(slices["p_adjusted"].to_numpy(), expected[1], rtol=1e-12)
        assert slices["significant"].to_list() == expected[0].tolist()
        assert slices.filter(pl.col("slice") == "sex=F, age=65+")["significant"].item()


# --------------------------------------------------------------------------
# Keys kept whole (`within`): one audit per model, never a pooled one
# --------------------------------------------------------------------------


def two_models_log() -> pl.DataFrame:
    """Two models scoring the same rows: `hidden_intersection_log`'s and one shifted up."""
    base = hidden_intersection_log(13)
    shifted = base.with_columns(p=(pl.col("p") + 0.2).clip(0.0, 1.0))
    return pl.concat(
        [base.with_columns(model=pl.lit("a")), shifted.with_columns(model=pl.lit("b"))]
    )


def test_within_audits_each_model_as_an_audit_of_its_rows_alone() -> None:
    log = two_models_log().gather_every(4)
    log = log.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    options: dict[str, Any] = {
        "by": ["sex", "age"],
        "n_bins": N_BINS,
        "n_resamples": 10,
        "id": "row",
        "min_count": 170,
    }
    result = audit(log, "p", "y", within="model", **options)
    assert result.within == ("model",) and result.by == ("sex", "age")
    assert result.slices.columns[:2] == ["model", "slice"]
    assert result.disparities.columns[:2] == ["model", "attributes"]
    overall = result.slices.filter(pl.col("order") == 0)
    assert overall["model"].to_list() == ["a", "b"]
    for model in ("a", "b"):
        alone = audit(log.filter(pl.col("model") == model), "p", "y", **options)
        mine = pl.col("model") == model
        assert_frame_equal(result.slices.filter(mine).drop("model"), alone.slices)
        assert_frame_equal(result.disparities.filter(mine).drop("model"), alone.disparities)
        assert_frame_equal(result.worst(3).filter(mine).drop("model"), alone.worst(3))
    # The pooled audit describes neither model: its overall ECE is that of no model.
    pooled = audit(log, "p", "y", **options).slices.row(0, named=True)
    assert pooled["count"] == overall["count"].sum()
    assert all(abs(pooled["ece"] - ece) > 0.01 for ece in overall["ece"])
    assert result.worst(3)["model"].to_list() == ["a"] * 3 + ["b"] * 3
    lazy = log.lazy().calib.audit("p", "y", within=["model"], **options)
    assert_frame_equal(lazy.slices, result.slices)


def test_within_keys_are_checked() -> None:
    log = two_models_log().gather_every(40).with_columns(score=pl.col("p") * 10)
    with pytest.raises(ValueError, match=r"'sex' is in both `within`.*and `by`"):
        audit(log, "p", "y", by=["sex", "age"], within="sex")
    with pytest.raises(pc.CalibrationDataError, match="`within` column 'score' holds Float64"):
        audit(log, "p", "y", by="sex", within="score")
    with pytest.raises(pc.CalibrationDataError, match="'nope' is missing"):
        audit(log, "p", "y", by="sex", within="nope")
    with pytest.raises(ValueError, match="cannot hold 'slice'"):
        audit(log.rename({"model": "slice"}), "p", "y", by="sex", within="slice")
    # An expression with an alias, as `by` takes; a null model is a group of its own.
    keyed = log.with_columns(pl.when(pl.col("model") == "b").then(pl.col("model")).alias("m"))
    result = audit(keyed, "p", "y", by="sex", within=pl.col("m").alias("version"), min_count=0)
    assert result.slices.filter(pl.col("order") == 0)["version"].to_list() == ["b", None]


# --------------------------------------------------------------------------
# Slice labels name one slice each
# --------------------------------------------------------------------------


def test_slice_labels_quote_values_that_could_be_misread() -> None:
    values = ["F", "null", None, "F, age=18-30", 'say "hi"', "", " F", "a\\b"]
    df = pl.DataFrame(
        {
            "sex": values,
            "age": ["18-30"] * len(values),
            "a=b": [1] * len(values),
            "p": [0.5] * len(values),
            "y": [1] * len(values),
        }
    )
    slices = audit(df, "p", "y", by=["sex", "age", "a=b"], min_count=0).slices
    sex = slices.filter(pl.col("attributes") == ["sex"])
    assert sex["sex"].to_list() == sorted(values, key=lambda v: (v is None, v))  # typed values
    labels = dict(zip(sex["sex"].to_list(), sex["slice"].to_list(), strict=True))
    assert labels == {
        "F": "sex=F",
        "null": 'sex="null"',
        None: "sex=null",
        "F, age=18-30": 'sex="F, age=18-30"',
        'say "hi"': 'sex="say \\"hi\\""',
        "": 'sex=""',
        " F": 'sex=" F"',
        "a\\b": 'sex="a\\\\b"',
    }
    pair = slices.filter(pl.col("attributes") == ["sex", "age"], pl.col("sex") == "F")
    assert pair["slice"].item() == "sex=F, age=18-30"  # not the value "F, age=18-30"
    assert slices.filter(pl.col("order") == 1)["slice"].to_list()[-1] == '"a=b"=1'
    assert slices["slice"].is_unique().all()


def test_slice_labels_quote_and_escape_key_names() -> None:
    # A key's name is quoted like a value: a quote and a backslash in it are escaped.
    df = pl.DataFrame({'say "hi"': ["x"], "a\\b": ["y"], "p": [0.5], "y": [1]})
    slices = audit(df, "p", "y", by=['say "hi"', "a\\b"], min_count=0, test=None).slices
    assert slices["slice"].to_list() == [
        "overall",
        '"say \\"hi\\""=x',
        '"a\\\\b"=y',
        '"say \\"hi\\""=x, "a\\\\b"=y',
    ]


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.none()
            | st.text(alphabet=["a", ",", "=", " ", '"', "\\", "n", "u", "l"], max_size=5),
            st.none() | st.sampled_from(["x", "null", "x, b=x", ""]),
        ),
        min_size=1,
        max_size=12,
    )
)
@example([("null", None), (None, "null"), ("x, b=x", "x"), ("x", "x, b=x")])
def test_slice_labels_are_unique_whatever_the_values(
    rows: list[tuple[str | None, str | None]],
) -> None:
    df = pl.DataFrame(
        {"a": [a for a, _ in rows], "b": [b for _, b in rows], "p": 0.5, "y": 1},
        schema_overrides={"a": pl.String, "b": pl.String},
    )
    slices = audit(df, "p", "y", by=["a", "b"], min_count=0, test=None).slices
    assert slices["slice"].is_unique().all()


# --------------------------------------------------------------------------
# No rows; the thresholds, on their boundaries
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_resamples", [None, 10])
def test_an_audit_of_no_rows_is_the_overall_row_alone(n_resamples: int | None) -> None:
    empty = attributes_log(14, 10).clear()
    for data in (empty, empty.lazy()):
        result = audit(data, "p", "y", by=["sex", "region"], n_resamples=n_resamples)
        overall = result.slices.row(0, named=True)
        assert result.slices.height == 1
        assert overall["slice"] == "overall" and overall["count"] == 0
        assert overall["share"] is None and overall["ece"] is None and overall["too_small"]
        assert result.disparities["groups"].to_list() == [0] * 6
        assert result.worst().height == 0
    grouped = audit(empty.with_columns(model=pl.lit("a")), "p", "y", by="sex", within="model")
    assert grouped.slices.height == 0 and grouped.disparities.height == 0
    assert grouped.slices.columns[:2] == ["model", "slice"]


def test_small_slices_are_those_below_min_count_exactly() -> None:
    # F: 5 rows, M: 4 rows, miscalibrated with a sign change (F over, M under).
    df = pl.DataFrame(
        {
            "sex": ["F"] * 5 + ["M"] * 4,
            "p": [0.8, 0.8, 0.8, 0.2, 0.2, 0.2, 0.2, 0.8, 0.8],
            "y": [0, 0, 1, 0, 0, 1, 1, 1, 1],
        }
    )
    result = audit(df, "p", "y", by="sex", min_count=5, n_bins=5)
    flags = dict(zip(result.slices["slice"], result.slices["too_small"], strict=True))
    assert flags == {"overall": False, "sex=F": False, "sex=M": True}  # 5 is enough, 4 is not
    assert result.worst(5)["slice"].to_list() == ["sex=F"]
    assert result.worst(5, include_small=True)["slice"].to_list() == ["sex=M", "sex=F"]
    ece = result.disparities.filter(pl.col("metric") == "ece").row(0, named=True)
    assert (ece["groups"], ece["small"], ece["worst_slice"]) == (1, 1, "sex=F")
    counted = audit(df, "p", "y", by="sex", min_count=5, n_bins=5, include_small=True)
    ece = counted.disparities.filter(pl.col("metric") == "ece").row(0, named=True)
    assert (ece["groups"], ece["small"], ece["worst_slice"]) == (2, 0, "sex=M")
    assert not audit(df, "p", "y", by="sex", min_count=4).slices["too_small"].any()
    assert audit(df, "p", "y", by="sex", min_count=10).slices["too_small"].all()
    everything = audit(df, "p", "y", by="sex", min_count=0).slices  # 0 is a valid count
    assert not everything["too_small"].any()
    with pytest.raises(ValueError, match="`min_count`"):
        audit(df, "p", "y", by="sex", min_count=-1)


def test_cli_audit_within_the_model_and_never_pooled(tmp_path: Path) -> None:
    log = two_models_log().gather_every(8)
    log.write_parquet(tmp_path / "log.parquet")
    common = ("log.parquet", "--prob", "p", "--label", "y", "--by", "sex,age", "--resamples", "0")
    out = tmp_path / "out"
    result = audit_cli(
        *common, "--within", "model", "--min-count", "50", "--out", out, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    expected = audit(log, "p", "y", by=["sex", "age"], within="model", min_count=50)
    assert_frame_equal(pl.read_parquet(out / "slices.parquet"), expected.slices)
    assert_frame_equal(pl.read_parquet(out / "disparities.parquet"), expected.disparities)
    pooled = audit_cli(*common, cwd=tmp_path)
    message = assert_one_line_error(pooled, 1)
    assert "2 models in column 'model' (a, b)" in message and "(--within model)" in message
    sliced = audit_cli(*common[:-4], "--by", "model,sex", "--resamples", "0", cwd=tmp_path)
    assert sliced.returncode == 0, sliced.stderr  # the models as slices: asked for, not pooled


@pytest.mark.skipif(not HAS_PLOT, reason="needs the plot extra")
def test_the_forest_plot_of_an_audit_within_models_draws_each_model_against_its_own_row() -> None:
    log = two_models_log().gather_every(8)
    result = audit(log, "p", "y", by="sex", within="model", min_count=0)
    figure = pc.plot_audit(result, backend="matplotlib")
    axes = figure.axes[0]
    labels = [label.get_text() for label in axes.get_yticklabels()]
    assert labels == [
        "model=a | overall",
        "model=a | sex=F",
        "model=a | sex=M",
        "model=b | overall",
        "model=b | sex=F",
        "model=b | sex=M",
    ]
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert "overall" in legend and "overall ece" not in legend  # no line of a pooled value
    spec = pc.plot_audit(result).to_dict()
    assert "strokeDash" not in str(spec)
    one = pc.plot_audit(result.slices.filter(pl.col("model") == "a"), backend="matplotlib")
    assert [t.get_text() for t in one.axes[0].get_yticklabels()] == ["sex=F", "sex=M"]
    worst = pc.plot_audit(result.worst(1), backend="matplotlib")  # no overall row: still apart
    labels = [t.get_text() for t in worst.axes[0].get_yticklabels()]
    assert [label.split(" | ")[0] for label in labels] == ["model=a", "model=b"]


def test_progress_is_told_each_aggregation_over_the_data() -> None:
    # Batches of 100 rows over 300: three observed batches, then each chunk of
    # replicates over each batch; the numbers do not depend on being watched.
    n = 300
    i = pl.int_range(n, eager=True)
    p = ((i * 37) % 101 / 100).alias("p")
    df = pl.DataFrame(
        {
            "p": p,
            "y": ((i * 53 % 97) / 97 < (p + 0.1 * (p * 6.28).sin()).clip(0, 1)).cast(pl.Int8),
            "a": (i % 3).cast(pl.String),
        }
    )
    calls: list[tuple[str, int, int]] = []
    options = {"by": "a", "n_resamples": 6, "batch_rows": 100, "metrics": ["ece"]}
    watched = pc.audit(df, "p", "y", progress=lambda *step: calls.append(step), **options)
    cells = [step for step in calls if step[0] == "cells"]
    replicates = [step for step in calls if step[0] == "replicates"]
    assert cells == [("cells", k, 3) for k in (1, 2, 3)]
    total = replicates[-1][2]
    assert total > 3 and replicates == [("replicates", k, total) for k in range(1, total + 1)]
    assert_frame_equal(watched.slices, pc.audit(df, "p", "y", **options).slices)
