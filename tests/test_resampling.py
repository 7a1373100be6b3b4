"""Resampling: the counter-based draws, bootstrap intervals and the consistency test."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats as scipy_stats

import polars_calib as pc
import reference as ref
import reference_random as rr
from conftest import FrameContext, make_log
from polars_calib._core import draws as _random
from test_lazy import CountingSource

IDS = np.array(
    [0, 1, 2, 3, 12345, -1, -5, 2**31, 2**32 + 7, 2**62, -(2**63), 2**63 - 1], dtype=np.int64
)


def _words(ids: np.ndarray, replicate: int, seed: int) -> np.ndarray:
    """The words the table path computes: one ``with_columns`` per step of the mixer."""
    frame = _random.with_row_key(pl.LazyFrame({"id": ids}), pl.col("id"), seed, ("h1", "h2"))
    frame = _random.with_words(frame, ("h1", "h2"), {"w": replicate})
    return frame.select("w").collect().to_series().to_numpy()


# --------------------------------------------------------------------------
# The draws
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "replicate"), [(0, 0), (1, 999), (2**32 - 1, 2**30 + 3)])
def test_words_agree_with_numpy_and_python(seed: int, replicate: int) -> None:
    got = _words(IDS, replicate, seed)
    np.testing.assert_array_equal(got, rr.words(IDS, replicate, seed))
    # The same as one expression over the row key's columns.
    keyed = _random.with_row_key(pl.LazyFrame({"id": IDS}), pl.col("id"), seed, ("h1", "h2"))
    one = keyed.select(_random.word(pl.col("h1"), pl.col("h2"), replicate)).collect()
    np.testing.assert_array_equal(one.to_series().to_numpy(), got)
    assert [_random.word_int(int(i), replicate, seed) for i in IDS] == got.tolist()
    assert ((got >= 0) & (got < 2**32)).all()


def test_mix_never_leaves_signed_64_bits() -> None:
    # The largest word through each step: every intermediate product stays below 2**63.
    top = 2**32 - 1
    assert top * 0x7FEB352D < 2**63
    assert top * 0x046CA68B + 2**31 < 2**63
    assert _random.mix_int(top) == int(rr.mix(np.uint64(top)))


def test_poisson_thresholds_are_exact() -> None:
    thresholds = np.array(_random.POISSON_THRESHOLDS)
    np.testing.assert_array_equal(thresholds, rr.poisson_thresholds())
    cdf = scipy_stats.poisson.cdf(np.arange(12), 1.0)
    assert np.all(np.abs(thresholds / 2**32 - cdf) < 2**-32 + 1e-15)
    # A few exact values: T_1 = floor(2**32 / e).
    assert thresholds[0] == 1580030168
    assert thresholds[1] == 3160060337  # 2 / e


def test_draws_from_a_word() -> None:
    words = pl.Series("w", [0, 1580030167, 1580030168, 3160060337, 2**32 - 1], dtype=pl.Int64)
    frame = pl.DataFrame({"w": words, "p": [0.0, 0.5, 0.5, 1.0, 1.0]})
    out = frame.select(
        k=_random.poisson(pl.col("w")), b=_random.bernoulli(pl.col("w"), pl.col("p"))
    )
    assert out["k"].to_list() == [0, 0, 1, 2, 12]
    assert out["b"].to_list() == [0.0, 1.0, 1.0, 1.0, 1.0]
    vectors = pl.DataFrame({"w": [0, 2**31, 2**32 - 1], "q": [[0.5, 0.5]] * 3})
    drawn = vectors.select(_random.categorical(pl.col("w"), pl.col("q"))).to_series()
    assert drawn.to_list() == [0, 1, 1]  # u = 0.5 is at the cumulative 0.5: class 1


def test_words_are_uniform_and_independent() -> None:
    ids = np.arange(20_000, dtype=np.int64)
    u = np.stack([_words(ids, r, 7) for r in range(4)]) / 2**32
    for row in u:
        assert scipy_stats.kstest(row, "uniform").pvalue > 1e-3
        counts = np.bincount((row * 256).astype(int), minlength=256)
        assert scipy_stats.chisquare(counts).pvalue > 1e-3
    # Across replicates of the same rows, and across neighbouring rows.
    correlations = np.corrcoef(u)
    assert np.abs(correlations[~np.eye(len(u), dtype=bool)]).max() < 4.5 / np.sqrt(ids.size)
    assert abs(np.corrcoef(u[0, :-1], u[0, 1:])[0, 1]) < 4.5 / np.sqrt(ids.size)
    # Every bit is balanced.
    bits = (_words(ids, 3, 11)[:, None] >> np.arange(32)) & 1
    assert np.all(np.abs(bits.mean(axis=0) - 0.5) < 4.5 * 0.5 / np.sqrt(ids.size))
    # Poisson frequencies.
    k = rr.poisson(_words(ids, 5, 1))
    assert abs(k.mean() - 1.0) < 0.02 and abs(k.var() - 1.0) < 0.03
    observed = np.bincount(np.minimum(k, 4), minlength=5)
    expected = scipy_stats.poisson.pmf(np.arange(5), 1.0)
    expected[4] = scipy_stats.poisson.sf(3, 1.0)
    assert scipy_stats.chisquare(observed, expected * ids.size).pvalue > 1e-3


# --------------------------------------------------------------------------
# The table, against numpy with the same draws
# --------------------------------------------------------------------------


def _reference_sums(p, y, w, ids, k, n_bins, groups):
    bins = ref.bin_ids(p, n_bins)
    index = groups * n_bins + bins
    size = (groups.max() + 1) * n_bins
    return {
        "count": np.bincount(index, weights=k, minlength=size),
        "weight": np.bincount(index, weights=k * w, minlength=size),
        "sum_p": np.bincount(index, weights=k * w * p, minlength=size),
        "sum_y": np.bincount(index, weights=k * w * y, minlength=size),
        "sum_squared_error": np.bincount(index, weights=k * w * (p - y) ** 2, minlength=size),
    }


def test_table_agrees_with_numpy_using_the_same_draws() -> None:
    df = make_log(3, 1500, groups=3, decimals=None).with_columns(pl.col("g").cast(pl.Int64))
    n_bins, seed = 8, 42
    stats = pc.bin_statistics(
        df,
        "p",
        "y",
        by="g",
        weight="w",
        n_bins=n_bins,
        metrics=["ece", "brier"],
        resampling=["bootstrap", "consistency"],
        n_resamples=70,
        seed=seed,
    )
    p, y, w = (df[c].to_numpy().astype(np.float64) for c in ("p", "y", "w"))
    g, ids = df["g"].to_numpy(), np.arange(df.height)
    for method, offset in (("bootstrap", 0), ("consistency", 2**30)):
        for r in (0, 63, 64, 69):  # both sides of a chunk boundary
            word = rr.words(ids, offset + r, seed)
            if method == "bootstrap":
                expected = _reference_sums(p, y, w, ids, rr.poisson(word), n_bins, g)
            else:
                drawn = rr.bernoulli(word, p)
                expected = _reference_sums(p, drawn, w, ids, np.ones_like(p), n_bins, g)
                expected["count"] = np.bincount(
                    g * n_bins + ref.bin_ids(p, n_bins), minlength=3 * n_bins
                )
            got = stats.filter(
                pl.col("resampling") == method,
                pl.col("replicate") == r,
                pl.col("bin").is_not_null(),
            ).sort("g", "bin")
            for name, values in expected.items():
                np.testing.assert_allclose(got[name].to_numpy(), values, rtol=1e-12, atol=1e-12)


def test_intervals_and_p_values_agree_with_numpy() -> None:
    df = make_log(5, 400, decimals=None)
    n, seed, confidence = 90, 3, 0.8
    result = pc.summary(
        df,
        "p",
        "y",
        weight="w",
        n_bins=10,
        confidence=confidence,
        n_resamples=n,
        seed=seed,
        metrics=["ece", "brier", "consistency_p", "consistency_p_log_loss"],
    )
    p, y, w = (df[c].to_numpy().astype(np.float64) for c in ("p", "y", "w"))
    ids = np.arange(df.height)
    eces, briers, consistency_ece, consistency_ll = [], [], [], []
    for r in range(n):
        k = rr.poisson(rr.words(ids, r, seed))
        eces.append(ref.calibration_error(p, y, 10, weight=w * k))
        briers.append(ref.brier(p, y, weight=w * k))
        drawn = rr.bernoulli(rr.words(ids, 2**30 + r, seed), p)
        consistency_ece.append(ref.calibration_error(p, drawn, 10, weight=w))
        consistency_ll.append(ref.log_loss(p, drawn, weight=w))
    quantiles = [(1 - confidence) / 2, (1 + confidence) / 2]
    row = result.row(0, named=True)
    np.testing.assert_allclose(
        [row["ece_lower"], row["ece_upper"]], np.quantile(eces, quantiles), rtol=1e-10
    )
    np.testing.assert_allclose(
        [row["brier_lower"], row["brier_upper"]], np.quantile(briers, quantiles), rtol=1e-10
    )
    ece, log_loss = ref.calibration_error(p, y, 10, weight=w), ref.log_loss(p, y, weight=w)
    assert row["consistency_p"] == (1 + sum(v >= ece for v in consistency_ece)) / (1 + n)
    assert row["consistency_p_log_loss"] == (1 + sum(v >= log_loss for v in consistency_ll)) / (
        1 + n
    )


@pytest.mark.parametrize(
    ("reduction", "reference"),
    [
        ("confidence", ref.confidence_error),
        ("classwise", ref.classwise_error),
        ("top_label", ref.top_label_error),
    ],
)
def test_vector_consistency_draws_classes(reduction: str, reference: Any) -> None:
    df = make_log(8, 300, classes=3, decimals=None)
    n, seed = 20, 9
    result = pc.summary(
        df,
        "probs",
        "cls",
        n_bins=5,
        metrics=["ece", "consistency_p"],
        n_resamples=n,
        seed=seed,
        reduction=reduction,  # type: ignore[arg-type]
    )
    probs, cls = np.stack(df["probs"].to_numpy()), df["cls"].to_numpy()
    ids = np.arange(df.height)
    draws = []
    for r in range(n):
        u = rr.words(ids, 2**30 + r, seed) / 2**32
        drawn = (np.cumsum(probs, axis=1)[:, :-1] <= u[:, None]).sum(axis=1)
        draws.append(reference(probs, drawn, n_bins=5))
    observed = reference(probs, cls, n_bins=5)
    assert result[f"{reduction}_ece"][0] == pytest.approx(observed, rel=1e-12)
    assert result["consistency_p"][0] == (1 + sum(d >= observed for d in draws)) / (1 + n)


# --------------------------------------------------------------------------
# Reproducible everywhere
# --------------------------------------------------------------------------

_OPTIONS = {
    "by": "g",
    "n_bins": 6,
    "confidence": 0.9,
    "n_resamples": 40,
    "seed": 5,
    "metrics": ["ece", "brier", "consistency_p"],
}


def _close(left: pl.DataFrame, right: pl.DataFrame) -> None:
    # Sums in another order round differently: equal to 1e-12, p-values exactly.
    assert_frame_equal(left, right, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)


def test_same_seed_same_numbers_in_every_context(frame_context: FrameContext) -> None:
    df = make_log(11, 600, groups=3)
    expected = pc.summary(df, "p", "y", **_OPTIONS)
    got = frame_context.collect(frame_context.frame(df).calib.summary("p", "y", **_OPTIONS))
    _close(got, expected)
    other_seed = pc.summary(df, "p", "y", **{**_OPTIONS, "seed": 6})
    assert not other_seed["ece_lower"].equals(expected["ece_lower"])


def test_same_numbers_with_one_thread(tmp_path: Path) -> None:
    df = make_log(12, 600, groups=3)
    path = tmp_path / "log.parquet"
    df.write_parquet(path)
    expected = pc.summary(df, "p", "y", **_OPTIONS)
    script = (
        "import json, sys, polars as pl, polars_calib as pc\n"
        f"out = pc.summary(pl.read_parquet({str(path)!r}), 'p', 'y', **json.loads(sys.argv[1]))\n"
        "print(pl.thread_pool_size()); print(out.write_json())\n"
    )
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    run = subprocess.run(
        [sys.executable, "-c", script, json.dumps(_OPTIONS)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[1],
    )
    threads, payload = run.stdout.split("\n", 1)
    assert threads == "1"
    got = pl.read_json(payload.encode(), schema=expected.schema)
    _close(got, expected)


def test_partitions_merge_with_an_id() -> None:
    df = make_log(13, 900, groups=2).with_columns(request=pl.int_range(pl.len()) * 7919 + 13)
    options = {"by": "g", "n_bins": 5, "n_resamples": 30, "seed": 1, "id": "request"}
    whole = pc.summary(df, "p", "y", confidence=0.9, metrics=["ece", "consistency_p"], **options)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=0)
    parts = [
        pc.bin_statistics(part, "p", "y", resampling=["bootstrap", "consistency"], **options)
        for part in (shuffled[:200], shuffled[200:650], shuffled[650:])
    ]
    merged = pc.metrics_from_statistics(
        pl.concat(parts), by="g", confidence=0.9, metrics=["ece", "consistency_p"]
    )
    _close(merged, whole)
    # The default identity is the position: another order draws otherwise.
    by_position = pc.summary(shuffled, "p", "y", confidence=0.9, **{**options, "id": None})
    assert not by_position["ece_lower"].equals(whole["ece_lower"])


# --------------------------------------------------------------------------
# Statistical behaviour
# --------------------------------------------------------------------------


def _simulated(groups: int, n: int, seed: int, sharpen: float = 1.0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.05, 0.95, groups * n)
    predicted = np.clip(0.5 + sharpen * (truth - 0.5), 0.0, 1.0)
    return pl.DataFrame(
        {
            "g": np.repeat(np.arange(groups), n),
            "p": predicted,
            "y": (rng.random(groups * n) < truth).astype(np.int64),
        }
    )


def test_bootstrap_coverage() -> None:
    # Brier of a calibrated model with p ~ U(0.05, 0.95): E[p(1 - p)] exactly.
    df = _simulated(150, 250, seed=1)
    truth = 0.5 * (0.95**2 - 0.05**2) / 0.9 - (0.95**3 - 0.05**3) / 3 / 0.9
    out = pc.summary(df, "p", "y", by="g", metrics=["brier"], confidence=0.9, n_resamples=200)
    covered = ((out["brier_lower"] <= truth) & (truth <= out["brier_upper"])).mean()
    assert 0.82 <= covered <= 0.97


def test_consistency_p_values_uniform_when_calibrated_and_small_when_not() -> None:
    calibrated = _simulated(200, 150, seed=2)
    out = pc.summary(
        calibrated,
        "p",
        "y",
        by="g",
        n_bins=5,
        n_resamples=99,
        metrics=["consistency_p", "consistency_p_brier"],
    )
    for name in ("consistency_p", "consistency_p_brier"):
        assert scipy_stats.kstest(out[name].to_numpy(), "uniform").pvalue > 1e-3
    overconfident = _simulated(20, 500, seed=3, sharpen=1.8)
    out = pc.summary(
        overconfident,
        "p",
        "y",
        by="g",
        n_bins=5,
        n_resamples=99,
        metrics=["consistency_p", "consistency_p_log_loss"],
    )
    assert (out["consistency_p"] <= 0.05).mean() >= 0.9
    assert (out["consistency_p_log_loss"] <= 0.05).mean() >= 0.9


# --------------------------------------------------------------------------
# Arguments, small groups, refused rows
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"confidence": 0.9, "n_resamples": 0}, ValueError),
        ({"confidence": 1.0}, ValueError),
        ({"confidence": 0.0}, ValueError),
        ({"confidence": True}, TypeError),
        ({"metrics": ["consistency_p"], "n_resamples": 2.5}, TypeError),
        ({"confidence": 0.9, "seed": -1}, ValueError),
        ({"confidence": 0.9, "seed": 2**32}, ValueError),
        ({"confidence": 0.9, "id": "p"}, TypeError),
        ({"metrics": ["consistency"]}, ValueError),
    ],
)
def test_bad_parameters_raise_when_built(options: dict[str, object], error: type) -> None:
    source = CountingSource(pl.DataFrame({"p": [0.2], "y": [1]}))
    with pytest.raises(error):
        pc.summary(source.frame(), "p", "y", **options)  # type: ignore[arg-type]
    assert source.reads == 0


def test_bin_statistics_bad_resampling_and_missing_replicates() -> None:
    df = pl.DataFrame({"p": [0.2, 0.7], "y": [0, 1]})
    with pytest.raises(ValueError, match="resampling"):
        pc.bin_statistics(df, "p", "y", resampling="jackknife")  # type: ignore[arg-type]
    with pytest.raises(pc.CalibrationDataError, match="replicates"):
        pc.metrics_from_statistics(pc.bin_statistics(df, "p", "y"), confidence=0.9)
    with pytest.raises(ValueError, match="`by` cannot hold"):
        pc.summary(df.with_columns(replicate=1), "p", "y", by="replicate", n_resamples=5)


def test_small_group_gets_a_null_interval_and_refused_rows_null() -> None:
    df = pl.DataFrame(
        {
            "g": ["one", "many", "many", "many", "bad", "bad"] + ["many"] * 40,
            "p": [0.3, 0.2, 0.6, 0.9, 0.5, 1.5] + [0.1 * (i % 10) for i in range(40)],
            "y": [1, 0, 1, 1, 0, 1] + [i % 2 for i in range(40)],
        }
    )
    out = pc.summary(
        df.lazy(),
        "p",
        "y",
        by="g",
        confidence=0.9,
        n_resamples=50,
        metrics=["ece", "consistency_p"],
    ).collect()
    rows = {row["g"]: row for row in out.iter_rows(named=True)}
    # One row: most resamples hold it, but some draw it 0 times: no interval.
    assert rows["one"]["ece"] is not None and rows["one"]["ece_lower"] is None
    assert rows["one"]["consistency_p"] is not None
    assert rows["many"]["ece_lower"] is not None
    assert rows["many"]["ece_lower"] <= rows["many"]["ece_upper"]
    assert rows["bad"]["refused"] == 1
    assert all(rows["bad"][c] is None for c in ("ece", "ece_lower", "ece_upper", "consistency_p"))
    with pytest.raises(pc.CalibrationDataError):
        pc.summary(df, "p", "y", by="g", confidence=0.9, n_resamples=5)


def test_lazy_summary_reads_nothing_until_collected() -> None:
    source = CountingSource(make_log(1, 50))
    plan = source.frame().calib.summary(
        "p", "y", confidence=0.9, n_resamples=100, metrics=["ece", "consistency_p"]
    )
    assert isinstance(plan, pl.LazyFrame)
    assert "consistency_p" in plan.collect_schema().names()
    assert source.reads == 0
    plan.collect()
    # Documented: once for the observed sums and once per chunk of 64 replicates.
    assert source.reads == 1 + 2 * 2


# --------------------------------------------------------------------------
# Surfaces: the chart over time and the command line
# --------------------------------------------------------------------------


def _weekly(example_log: pl.DataFrame) -> pl.DataFrame:
    return pc.summary(
        example_log,
        "p",
        "y",
        by="model",
        time="ts",
        every="1w",
        metrics=["ece", "brier"],
        confidence=0.9,
        n_resamples=30,
        id="request_id",
    )


def test_metric_over_time_chart_draws_the_band(example_log: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    weekly = _weekly(example_log)
    spec = pc.plot_metric_over_time(weekly, "ece", "ts").to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["area", "line"]
    assert spec["layer"][0]["encoding"]["y2"]["field"] == "ece_upper"
    figure = pc.plot_metric_over_time(weekly, "brier", "ts", backend="matplotlib")
    (axes,) = figure.axes
    assert len(axes.collections) == 2  # one band per model
    bare = pc.plot_metric_over_time(weekly.drop("ece_lower", "ece_upper"), "ece", "ts")
    assert [layer["mark"]["type"] for layer in bare.to_dict()["layer"]] == ["line"]
    with pytest.raises(ValueError, match="no column"):
        pc.plot_metric_over_time(weekly, "mce", "ts")


def test_cli_report_with_intervals_and_a_time_chart(tmp_path: Path) -> None:
    from polars_calib.cli import main

    log = Path(__file__).parents[1] / "examples" / "data" / "predictions.parquet"
    out = tmp_path / "out"
    code = main(
        [
            "report",
            str(log),
            "--prob",
            "p",
            "--label",
            "y",
            "--by",
            "model",
            "--time",
            "ts",
            "--every",
            "1w",
            "--metrics",
            "ece,consistency_p",
            "--resamples",
            "30",
            "--id",
            "request_id",
            "--out",
            str(out),
            "-q",
        ]
    )
    assert code == 0
    table = pl.read_parquet(out / "summary.parquet")
    expected = pc.summary(
        pl.read_parquet(log),
        "p",
        "y",
        by="model",
        time="ts",
        every="1w",
        metrics=["ece", "consistency_p"],
        confidence=0.95,
        n_resamples=30,
        id="request_id",
    )
    _close(table, expected)
    assert (out / "reliability.csv").exists()
    if importlib.util.find_spec("matplotlib") or importlib.util.find_spec("vl_convert"):
        assert (out / "over_time.png").stat().st_size > 0
    assert main(["report", str(log), "--prob", "p", "--label", "y", "--seed", "-1"]) == 2


def test_resampling_uses_no_unstable_polars_feature() -> None:
    df = make_log(4, 200, groups=2, classes=3)
    with pl.Config(warn_unstable=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        for data in (df, df.lazy()):
            for result in (
                data.calib.summary(
                    "p",
                    "y",
                    by="g",
                    confidence=0.9,
                    n_resamples=3,
                    metrics=["ece", "consistency_p_log_loss"],
                ),
                data.calib.summary(
                    "probs", "cls", reduction="classwise", n_resamples=3, metrics=["consistency_p"]
                ),
            ):
                if isinstance(result, pl.LazyFrame):
                    result.collect()


def test_a_draw_equal_to_the_observation_is_a_tie() -> None:
    # One row, p = 0.3, y = 1: a draw of 1 gives exactly the observed ECE and Brier
    # (summed in another order, and Brier through its affine form).
    df = pl.DataFrame({"p": [0.3], "y": [1]})
    n = 200
    out = pc.summary(df, "p", "y", metrics=["consistency_p", "consistency_p_brier"], n_resamples=n)
    ones = sum(rr.bernoulli(rr.words(np.array([0]), 2**30 + r, 0), 0.3)[0] for r in range(n))
    assert out["consistency_p"][0] == out["consistency_p_brier"][0] == (1 + ones) / (1 + n)


def test_quantile_bins_keep_the_observed_edges() -> None:
    # The consistency test draws labels only: the quantile edges are the observed ones.
    df = make_log(5, 400, decimals=None, groups=2)
    n, seed = 30, 3
    out = pc.summary(
        df,
        "p",
        "y",
        by="g",
        n_bins=5,
        strategy="quantile",
        n_resamples=n,
        seed=seed,
        metrics=["ece", "consistency_p"],
    )
    rows = df.with_row_index("i")
    for group in (0, 1):
        part = rows.filter(pl.col("g") == group)
        p, y = part["p"].to_numpy(), part["y"].to_numpy()
        ids = part["i"].to_numpy().astype(np.int64)
        observed = ref.calibration_error(p, y, 5, strategy="quantile")
        draws = [
            ref.calibration_error(
                p, rr.bernoulli(rr.words(ids, 2**30 + r, seed), p), 5, strategy="quantile"
            )
            for r in range(n)
        ]
        assert out["ece"][group] == pytest.approx(observed, rel=1e-12)
        assert out["consistency_p"][group] == (1 + sum(d >= observed for d in draws)) / (1 + n)


def test_every_number_the_table_finishes_gets_an_interval() -> None:
    # The tests and decompositions finished from the same sums need no code of their own.
    df = make_log(6, 600, groups=2, decimals=None)
    out = pc.summary(
        df,
        "p",
        "y",
        by="g",
        n_bins=8,
        confidence=0.9,
        n_resamples=40,
        metrics=["spiegelhalter_z", "debiased_ece", "brier_decomposition"],
    )
    for name in ("spiegelhalter_z", "debiased_ece"):
        assert (out[f"{name}_lower"] <= out[f"{name}_upper"]).all()
    assert "brier_decomposition_lower" not in out.columns  # a struct: no interval of its own
    # The bootstrap replicate of Spiegelhalter's Z is its statistic on the weighted rows.
    p, y = (df.filter(pl.col("g") == 0)[c].to_numpy().astype(float) for c in ("p", "y"))
    ids = df.with_row_index("i").filter(pl.col("g") == 0)["i"].to_numpy().astype(np.int64)
    z = []
    for r in range(40):
        k = rr.poisson(rr.words(ids, r, 0))
        numerator = np.sum(k * (y - p) * (1 - 2 * p))
        z.append(numerator / np.sqrt(np.sum(k * (1 - 2 * p) ** 2 * p * (1 - p))))
    expected = np.quantile(z, [0.05, 0.95])
    np.testing.assert_allclose(
        [out["spiegelhalter_z_lower"][0], out["spiegelhalter_z_upper"][0]], expected, rtol=1e-9
    )
