"""Smooth ECE (issue 11, item 6): relplot 1.0.3's ``smECE`` and its bandwidth, per group.

relplot is in the test extra: every comparison calls it. A numpy reference written
from the definition (each row's Gaussian smoothing evaluated directly, no grid)
checks that the grid computation is close to the continuous definition.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_calib as pc
from conftest import FrameContext, make_log
from polars_calib._smooth import GRIDS

try:
    import relplot
except ImportError:  # pragma: no cover - relplot is in the test extra
    relplot = None

needs_relplot = pytest.mark.skipif(relplot is None, reason="relplot is not installed")


def _relplot(df: pl.DataFrame) -> tuple[float, float]:
    value, sigma = relplot.smECE(
        df["p"].to_numpy(), df["y"].to_numpy().astype(float), return_width=True
    )
    return float(value), float(sigma)


def _ours(df: pl.DataFrame, **options: object) -> tuple[float, float]:
    row = pc.smooth_ece_summary(df, "p", "y", **options).row(0, named=True)  # type: ignore[arg-type]
    return row["smooth_ece"], row["sigma"]


def _calibrated(seed: int, n: int, temperature: float = 1.0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.beta(2.0, 2.0, n)
    logit = np.log(truth / (1 - truth)) * temperature
    return pl.DataFrame({"p": 1 / (1 + np.exp(-logit)), "y": (rng.random(n) < truth).astype(int)})


CASES = {
    "sign_changing_rounded": lambda: make_log(0, 600, decimals=2),
    "sign_changing_continuous": lambda: make_log(1, 2000, decimals=None),
    "coarse_ties": lambda: make_log(2, 300, decimals=1),
    "tiny": lambda: make_log(3, 7, decimals=None),
    "calibrated_large": lambda: _calibrated(4, 60_000),  # bandwidth below 0.01: a fine grid
    "overconfident": lambda: _calibrated(5, 3000, 2.5),
    "edges": lambda: pl.DataFrame({"p": [0.0, 1.0, 0.0, 1.0, 0.5], "y": [0, 1, 1, 1, 0]}),
    "all_zero": lambda: pl.DataFrame({"p": [0.0] * 5, "y": [0] * 5}),
}


@needs_relplot
@pytest.mark.parametrize("case", list(CASES))
def test_agrees_with_relplot_and_its_bandwidth(case: str) -> None:
    df = CASES[case]()
    value, sigma = _ours(df)
    want_value, want_sigma = _relplot(df)
    assert sigma == want_sigma
    assert value == pytest.approx(want_value, abs=1e-9)


def test_the_fine_grids_are_used() -> None:
    _, sigma = _ours(CASES["calibrated_large"]())
    assert sigma < 0.01
    assert max(2000, round(20 / sigma)) // 2 in GRIDS and max(2000, round(20 / sigma)) // 2 > 1000


def test_grids_cover_every_bandwidth_of_the_search() -> None:
    # Bisection midpoints are k / 1024; those below 0.001 are accepted unsmoothed.
    wanted = {max(2000, round(20 / (k / 1024))) // 2 for k in range(2, 1025)}
    assert set(GRIDS) == wanted
    assert len(GRIDS) == 10 and min(GRIDS) == 1000


def _definition(p: np.ndarray, y: np.ndarray, sigma: float) -> float:
    """smECE at `sigma` from the definition: reflected Gaussian, no grid, same mesh."""
    t = np.linspace(0, 1, max(round(10 / sigma), 200))
    kernel = np.zeros((len(t), len(p)))
    for image in (p, -p, 2 - p):
        d = t[:, None] - image[None, :]
        kernel += np.exp(-d * d / (2 * sigma**2)) / (math.sqrt(2 * math.pi) * sigma)
    residual, density = kernel @ (p - y), kernel.sum(axis=1)
    return float(np.abs(residual).sum() / density.sum())


@pytest.mark.parametrize("seed", [0, 1])
def test_close_to_the_gridless_definition_at_the_chosen_bandwidth(seed: int) -> None:
    df = make_log(seed, 400, decimals=None)
    value, sigma = _ours(df)
    # relplot's linear grid and its half-width kernel window: close, not equal.
    want = _definition(df["p"].to_numpy(), df["y"].to_numpy().astype(float), sigma)
    assert value == pytest.approx(want, rel=0.02)


@needs_relplot
def test_integer_weights_equal_repeated_rows() -> None:
    df = make_log(6, 300, decimals=None).with_columns(k=pl.int_range(pl.len()) % 3 + 1)
    repeated = df.select(pl.col("p", "y").repeat_by("k").explode())
    value, sigma = _ours(df, weight="k")
    want_value, want_sigma = _relplot(repeated)
    assert sigma == want_sigma
    assert value == pytest.approx(want_value, abs=1e-9)


def test_rows_order_and_nulls_do_not_matter() -> None:
    df = make_log(7, 500, decimals=2, nulls=0.1)
    complete = df.drop_nulls(["p", "y"])
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=3)
    want = _ours(complete)
    for frame in (df, shuffled):
        value, sigma = _ours(frame)
        assert sigma == want[1] and value == pytest.approx(want[0], abs=1e-12)


@needs_relplot
def test_groups_in_every_context(frame_context: FrameContext) -> None:
    df = make_log(8, 900, decimals=2, groups=3)
    got = frame_context.collect(frame_context.frame(df).calib.smooth_ece_summary("p", "y", by="g"))
    assert got["g"].to_list() == [0, 1, 2]
    for row in got.iter_rows(named=True):
        part = df.filter(pl.col("g") == row["g"])
        value, sigma = _relplot(part)
        assert row["count"] == part.height and row["refused"] == 0
        assert row["sigma"] == sigma and row["smooth_ece"] == pytest.approx(value, abs=1e-9)


def test_lazy_reads_nothing_until_collected(tmp_path: object) -> None:
    lf = pl.LazyFrame({"p": [0.2, 0.7], "y": [0, 1]})
    plan = pc.smooth_ece_summary(lf, "p", "y")
    assert isinstance(plan, pl.LazyFrame)
    assert isinstance(pc.smooth_ece_statistics(lf, "p", "y"), pl.LazyFrame)
    assert plan.collect().columns == ["count", "refused", "smooth_ece", "sigma"]


def test_statistics_of_partitions_merge_exactly() -> None:
    df = make_log(9, 1200, decimals=None, groups=2)
    parts = [pc.smooth_ece_statistics(df[i::3], "p", "y", by="g", weight="w") for i in range(3)]
    merged = pc.smooth_ece_from_statistics(pl.concat(parts), by="g")
    whole = pc.smooth_ece_summary(df, "p", "y", by="g", weight="w")
    assert merged["sigma"].to_list() == whole["sigma"].to_list()
    np.testing.assert_allclose(merged["smooth_ece"], whole["smooth_ece"], rtol=0, atol=1e-12)
    assert merged["count"].to_list() == whole["count"].to_list()
    # Summed over the key: one group.
    overall = pc.smooth_ece_from_statistics(pl.concat(parts))
    assert overall["count"].to_list() == [df.height]
    assert overall["sigma"].item() == _ours(df, weight="w")[1]


@needs_relplot
def test_degenerate_groups_give_null() -> None:
    df = pl.DataFrame(
        {
            "g": ["nulls", "nulls", "zero_weight", "one"],
            "p": [None, 0.4, 0.3, 0.3],
            "y": [1, None, 1, 1],
            "w": [1.0, 1.0, 0.0, 1.0],
        },
    )
    got = {
        r["g"]: r
        for r in pc.smooth_ece_summary(df, "p", "y", by="g", weight="w").iter_rows(named=True)
    }
    assert got["nulls"]["count"] == 0 and got["nulls"]["smooth_ece"] is None
    assert got["zero_weight"]["smooth_ece"] is None and got["zero_weight"]["sigma"] is None
    # One row: defined, as relplot's.
    value, sigma = _relplot(pl.DataFrame({"p": [0.3], "y": [1]}))
    assert got["one"]["sigma"] == sigma and got["one"]["smooth_ece"] == pytest.approx(value)
    empty = pc.smooth_ece_summary(
        pl.DataFrame({"p": [], "y": []}, schema={"p": pl.Float64, "y": pl.Int64}), "p", "y"
    )
    assert empty.rows() == [(0, 0, None, None)]


def test_refused_rows() -> None:
    df = pl.DataFrame({"g": [0, 0, 1, 1], "p": [0.2, 1.5, 0.3, 0.6], "y": [0, 1, 1, 0]})
    with pytest.raises(pc.CalibrationDataError, match="outside"):
        pc.smooth_ece_summary(df, "p", "y", by="g")
    with pytest.raises(pc.CalibrationDataError, match="outside"):
        pc.smooth_ece_statistics(df, "p", "y", by="g")
    got = pc.smooth_ece_summary(df.lazy(), "p", "y", by="g").collect()
    assert got.row(0) == (0, 1, 1, None, None)
    assert got["smooth_ece"][1] is not None


def test_misuse_raises_when_built() -> None:
    # Written as an aggregation (`pc.smooth_ece_summary("p", "y")` lacks an argument): TypeError.
    with pytest.raises(TypeError):
        pc.smooth_ece_summary("p", "y")  # type: ignore[call-arg, type-var]
    with pytest.raises(TypeError, match="frame function"):
        pc.smooth_ece_summary("frame", "p", "y")  # type: ignore[type-var]
    with pytest.raises(pc.CalibrationDataError, match="missing"):
        pc.smooth_ece_summary(pl.DataFrame({"p": [0.5]}), "p", "y")
    with pytest.raises(pc.CalibrationDataError, match="not a smooth ECE statistics table"):
        pc.smooth_ece_from_statistics(pl.DataFrame({"x": [1]}))
    with pytest.raises(TypeError):
        pc.smooth_ece_from_statistics([1, 2])  # type: ignore[type-var]


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_a_plan_reads_the_data_once(engine: str) -> None:
    from test_lazy import CountingSource

    source = CountingSource(make_log(10, 500, groups=2))
    plan = source.frame().calib.smooth_ece_summary("p", "y", by="g")
    assert source.reads == 0
    got = plan.collect(engine=engine)  # type: ignore[call-overload]
    assert source.reads == 1 and got.height == 2


def test_no_unstable_polars_feature() -> None:
    import warnings

    df = make_log(11, 200, groups=2)
    with pl.Config(warn_unstable=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        pc.smooth_ece_summary(df, "p", "y", by="g")
        pc.smooth_ece_summary(df.lazy(), "p", "y", weight="w").collect()
        pc.smooth_ece_from_statistics(pc.smooth_ece_statistics(df, "p", "y"))


def test_smooth_ece_from_statistics_takes_expression_keys() -> None:
    df = make_log(22, 600, groups=4).with_columns(
        segment=pl.col("g").replace_strict([0, 1, 2, 3], ["a", "A", "b", "B"])
    )
    stats = pc.smooth_ece_statistics(df, "p", "y", by=["g", "segment"], weight="w")
    got = pc.smooth_ece_from_statistics(stats, by=pl.col("segment").str.to_uppercase())
    upper = df.with_columns(pl.col("segment").str.to_uppercase())
    want = pc.smooth_ece_summary(upper, "p", "y", by="segment", weight="w")
    assert got["segment"].to_list() == ["A", "B"]
    assert got.drop("smooth_ece", "sigma").equals(want.drop("smooth_ece", "sigma"))
    np.testing.assert_allclose(got["smooth_ece"], want["smooth_ece"], rtol=1e-9)
    np.testing.assert_allclose(got["sigma"], want["sigma"], rtol=1e-9)
