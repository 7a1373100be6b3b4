"""KS and Kuiper calibration statistics and their p-values (issue 11, item 3).

Checked against a numpy reference written from the definition (ties read at their
last row, ``S_0 = 0``), the tails against both theta forms in numpy/scipy and
against MAPIE 1.6.0 (``mapie.metrics.calibration``, in the test extra), whose three
differences (random jitter of ties, no ``S_0`` in Kuiper's range, a statistic
divided by sigma) each have a test. A simulation checks the p-values are uniform
for a calibrated model (and that the Brownian-bridge laws would not be).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from scipy.special import erfc

import polars_calib as pc
from conftest import FrameContext, make_log
from polars_calib._core.special import brownian_max_abs_sf, brownian_range_sf

try:
    from mapie.metrics import calibration as mapie_calibration
except ImportError:  # pragma: no cover - mapie is in the test extra
    mapie_calibration = None

needs_mapie = pytest.mark.skipif(mapie_calibration is None, reason="mapie is not installed")

# --------------------------------------------------------------------------
# numpy reference, from the definitions
# --------------------------------------------------------------------------


def _q(z: np.ndarray) -> np.ndarray:
    return 0.5 * erfc(z / math.sqrt(2.0))


def max_abs_sf(x: float) -> float:
    """P(max |B| >= x): theta series below 1.2, normal tails above (many terms)."""
    if x <= 0:
        return 1.0
    if x < 1.2:
        k = np.arange(200)
        terms = (-1.0) ** k / (2 * k + 1) * np.exp(-((2 * k + 1) ** 2) * math.pi**2 / (8 * x * x))
        return float(1.0 - 4.0 / math.pi * terms.sum())
    j = np.arange(2000)
    return float(4.0 * np.sum((-1.0) ** j * _q((2 * j + 1) * x)))


def range_sf(x: float) -> float:
    """P(max B - min B >= x): theta series below 2.5, normal tails above."""
    if x <= 0:
        return 1.0
    if x < 2.5:
        k = np.arange(200) + 0.5
        terms = (8 / x**2 + 2 / (k * k * math.pi**2)) * np.exp(-2 * k * k * math.pi**2 / x**2)
        return float(1.0 - terms.sum())
    k = np.arange(1, 2000)
    return float(8.0 * np.sum((-1.0) ** (k - 1) * k * _q(k * x)))


def cumulative_path(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """S at the end of each tie, with S_0 = 0 first."""
    w = np.ones_like(p) if w is None else w
    values, inverse = np.unique(p, return_inverse=True)
    per_value = np.zeros(len(values))
    np.add.at(per_value, inverse, w * (y - p))
    return np.concatenate([[0.0], np.cumsum(per_value) / w.sum()])


def reference(p: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> dict[str, float]:
    path = cumulative_path(p, y, w)
    weights = np.ones_like(p) if w is None else w
    sd = math.sqrt(np.sum(weights * p * (1 - p))) / weights.sum()
    ks, kuiper = np.abs(path).max(), path.max() - path.min()
    return {
        "ks": ks,
        "kuiper": kuiper,
        "ks_p": max_abs_sf(ks / sd),
        "kuiper_p": range_sf(kuiper / sd),
    }


def expressions(weight: str | None = None) -> dict[str, pl.Expr]:
    return {
        "ks": pc.ks_calibration("p", "y", weight=weight),
        "kuiper": pc.kuiper_calibration("p", "y", weight=weight),
        "ks_p": pc.ks_calibration_p("p", "y", weight=weight),
        "kuiper_p": pc.kuiper_calibration_p("p", "y", weight=weight),
    }


def compute(df: pl.DataFrame, weight: str | None = None) -> dict[str, float]:
    return df.select(**expressions(weight)).row(0, named=True)


def _assert_close(got: dict[str, float], want: dict[str, float], atol: float = 1e-12) -> None:
    for name, value in want.items():
        assert got[name] == pytest.approx(value, abs=atol, rel=1e-12), name


# --------------------------------------------------------------------------
# The tails
# --------------------------------------------------------------------------

X = np.concatenate([[0.0, 1e-3, 0.05], np.linspace(0.1, 3.0, 59), np.linspace(3.2, 12.0, 45)])


def _tails() -> pl.DataFrame:
    return pl.DataFrame({"x": X}).with_columns(
        ks=brownian_max_abs_sf(pl.col("x")), kuiper=brownian_range_sf(pl.col("x"))
    )


def test_tails_match_both_theta_forms_to_1e_13() -> None:
    got = _tails()
    for name, oracle in [("ks", max_abs_sf), ("kuiper", range_sf)]:
        want = np.array([oracle(x) for x in X])
        np.testing.assert_allclose(got[name].to_numpy(), want, rtol=1e-13, atol=1e-15, err_msg=name)


@needs_mapie
def test_tails_match_mapie() -> None:
    # MAPIE 1.6.0 sums the theta series of the distribution function with its own
    # truncation: 1e-12 absolute up to x = 3 (beyond, it drifts to ~3e-11 while the
    # dual form stays exact, as the previous test shows).
    got = _tails().filter(pl.col("x").is_between(0.1, 3.0))
    ks = [1.0 - mapie_calibration.kolmogorov_smirnov_cdf(x) for x in got["x"]]
    kuiper = [1.0 - mapie_calibration.kuiper_cdf(x) for x in got["x"]]
    np.testing.assert_allclose(got["ks"].to_numpy(), ks, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["kuiper"].to_numpy(), kuiper, rtol=0, atol=1e-12)


def test_tails_are_the_brownian_motion_laws_by_simulation() -> None:
    rng = np.random.default_rng(0)
    walks = np.cumsum(rng.normal(size=(4000, 1000)), axis=1) / math.sqrt(1000)
    walks = np.concatenate([np.zeros((4000, 1)), walks], axis=1)
    largest, spread = np.abs(walks).max(axis=1), walks.max(axis=1) - walks.min(axis=1)
    got = _tails().filter(pl.col("x").is_in([1.0, 1.5, 2.0, 2.5]))
    for x, ks, kuiper in got.iter_rows():
        # A discrete walk slightly undershoots the continuous maximum: loose tolerance.
        assert np.mean(largest >= x) == pytest.approx(ks, abs=0.03)
        assert np.mean(spread >= x) == pytest.approx(kuiper, abs=0.03)


def test_null_statistic_gives_null_tail() -> None:
    got = pl.DataFrame({"x": [None, 1.0]}, schema={"x": pl.Float64}).select(
        ks=brownian_max_abs_sf(pl.col("x")), kuiper=brownian_range_sf(pl.col("x"))
    )
    assert got.row(0) == (None, None)


# --------------------------------------------------------------------------
# Against the definition
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("decimals", [None, 2, 1])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_numpy_reference(seed: int, decimals: int | None, weighted: bool) -> None:
    df = make_log(seed, 700, decimals=decimals)
    p, y, w = (df[c].to_numpy() for c in ("p", "y", "w"))
    want = reference(p, y.astype(float), w if weighted else None)
    _assert_close(compute(df, "w" if weighted else None), want)


def test_hand_computed_path() -> None:
    # y - p = -0.1, (0.6, -0.4) tied, 0.2: S = 0, -0.025, 0.025, 0.075 (the tie read once).
    df = pl.DataFrame({"p": [0.4, 0.1, 0.8, 0.4], "y": [1, 0, 1, 0]})
    got = compute(df)
    assert got["ks"] == pytest.approx(0.075, abs=1e-15)
    assert got["kuiper"] == pytest.approx(0.1, abs=1e-15)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 200),
    decimals=st.sampled_from([0, 1, 2]),
)
def test_shuffling_rows_inside_ties_changes_nothing(seed: int, n: int, decimals: int) -> None:
    df = make_log(seed % 10_000, n, decimals=decimals)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed)
    for weight in (None, "w"):
        want, got = compute(df, weight), compute(shuffled, weight)
        for name in want:
            if want[name] is None:
                assert got[name] is None
            else:
                assert got[name] == pytest.approx(want[name], abs=1e-14), name


def test_integer_weights_equal_repeated_rows() -> None:
    df = make_log(3, 300, decimals=None).with_columns(k=pl.int_range(pl.len()) % 3 + 1)
    repeated = df.select(pl.col("p", "y").repeat_by("k").explode())
    _assert_close(compute(df, "k"), compute(repeated))


def test_statistics_are_bounded_and_ordered() -> None:
    for seed in range(5):
        got = compute(make_log(seed, 200))
        assert 0.0 <= got["ks"] <= got["kuiper"] <= 2 * got["ks"] <= 2.0
        assert 0.0 <= got["ks_p"] <= 1.0 and 0.0 <= got["kuiper_p"] <= 1.0


# --------------------------------------------------------------------------
# MAPIE 1.6.0: the same test once its differences are accounted for
# --------------------------------------------------------------------------


def _mapie(p: np.ndarray, y: np.ndarray) -> dict[str, float]:
    return {
        "ks": mapie_calibration.kolmogorov_smirnov_statistic(y, p),
        "kuiper": mapie_calibration.kuiper_statistic(y, p),
        "ks_p": mapie_calibration.kolmogorov_smirnov_p_value(y, p),
        "kuiper_p": mapie_calibration.kuiper_p_value(y, p),
    }


@pytest.fixture
def no_jitter(monkeypatch: pytest.MonkeyPatch) -> None:
    """MAPIE without its random jitter of the scores (relative 1e-8 noise)."""
    monkeypatch.setattr(mapie_calibration, "add_jitter", lambda x, **_: x)


def _distinct_log(seed: int, n: int) -> pl.DataFrame:
    return make_log(seed, n, decimals=None).unique("p", keep="first", maintain_order=True)


@needs_mapie
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_agrees_with_mapie_without_ties_and_jitter(seed: int, no_jitter: None) -> None:
    # Nearly calibrated, so that the normalised statistics stay below 3, where MAPIE's
    # truncated series are exact to 1e-12 (see test_tails_match_mapie).
    df = _simulated(seed, 1, 500, 1.0 + 0.05 * seed)
    p, y = df["p"].to_numpy(), df["y"].to_numpy().astype(float)
    mapie = _mapie(p, y)
    got = compute(df)
    sd = math.sqrt(np.sum(p * (1 - p))) / len(p)
    # MAPIE's statistic is ours divided by sigma; its Kuiper range leaves S_0 = 0 out.
    path = cumulative_path(p, y)[1:]
    assert got["ks"] / sd == pytest.approx(mapie["ks"], rel=1e-12)
    assert (path.max() - path.min()) / sd == pytest.approx(mapie["kuiper"], rel=1e-12)
    assert got["ks_p"] == pytest.approx(mapie["ks_p"], abs=1e-12)
    if path.max() > 0 > path.min():  # the range spans 0: both conventions agree
        assert got["kuiper"] / sd == pytest.approx(mapie["kuiper"], rel=1e-12)
        assert got["kuiper_p"] == pytest.approx(mapie["kuiper_p"], abs=1e-12)


@needs_mapie
def test_mapie_kuiper_range_leaves_s0_out(no_jitter: None) -> None:
    # Under-confident everywhere: every S_i > 0, so MAPIE's range is smaller by min S.
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    got = compute(pl.DataFrame({"p": p, "y": y}))
    path = cumulative_path(p, y)
    sd = math.sqrt(np.sum(p * (1 - p))) / len(p)
    assert path[1:].min() > 0
    assert got["kuiper"] == pytest.approx(path.max(), abs=1e-15)  # from S_0 = 0
    mapie = mapie_calibration.kuiper_statistic(y, p)
    assert mapie * sd == pytest.approx(path.max() - path[1:].min(), abs=1e-15)
    assert got["kuiper"] - mapie * sd == pytest.approx(path[1:].min(), abs=1e-15)
    assert got["kuiper_p"] < mapie_calibration.kuiper_p_value(y, p)


@needs_mapie
def test_mapie_jitter_makes_ties_depend_on_row_order() -> None:
    # MAPIE jitters scores by a relative 1e-8 normal noise (random_state=1): inside a
    # tie the rows take a random order, so the answer depends on how rows are listed.
    df = make_log(5, 400, decimals=1)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=1)
    first = _mapie(df["p"].to_numpy(), df["y"].to_numpy().astype(float))
    second = _mapie(shuffled["p"].to_numpy(), shuffled["y"].to_numpy().astype(float))
    assert abs(first["ks"] - second["ks"]) > 1e-3
    ours_first, ours_second = compute(df), compute(shuffled)
    assert ours_first["ks"] == pytest.approx(ours_second["ks"], abs=1e-15)


@needs_mapie
def test_mapie_with_jitter_on_distinct_scores_agrees_to_the_jitter() -> None:
    df = _distinct_log(7, 500)
    p, y = df["p"].to_numpy(), df["y"].to_numpy().astype(float)
    mapie, got = _mapie(p, y), compute(df)
    sd = math.sqrt(np.sum(p * (1 - p))) / len(p)
    assert got["ks"] / sd == pytest.approx(mapie["ks"], rel=1e-6)
    assert got["ks_p"] == pytest.approx(mapie["ks_p"], abs=1e-6)


@needs_mapie
def test_mapie_documented_examples() -> None:
    # MAPIE 1.6.0's docstring examples. Without a tie that matters, the statistics
    # agree once divided by sigma (KS 0.978); Kuiper's 0.857 leaves S_0 out.
    df = pl.DataFrame({"p": [0.1, 0.9, 0.21, 0.9, 0.5], "y": [0, 1, 0, 1, 0]})
    got = compute(df)
    sd = math.sqrt(0.09 + 0.09 + 0.21 * 0.79 + 0.09 + 0.25) / 5
    assert round(got["ks"] / sd, 3) == 0.978
    assert round(got["kuiper"] / sd, 3) == 0.978  # S runs from S_0 = 0 down to -0.162
    assert round((got["kuiper"] - 0.02) / sd, 3) == 0.857  # MAPIE: from S_1 = -0.02
    # A tie of y = 1 and y = 0 at 0.5: MAPIE's jitter put the 0 first, so its path
    # dips to -0.15 inside the tie (p-values 0.7857 and 0.9684); read only after
    # the tie, the path is -1/60, -1/15, -1/15, -1/60, 1/60.
    df = pl.DataFrame({"p": [0.8, 0.3, 0.5, 0.5, 0.7, 0.1], "y": [1, 0, 1, 0, 1, 0]})
    got = compute(df)
    assert got["ks"] == pytest.approx(1 / 15, abs=1e-15)
    assert got["kuiper"] == pytest.approx(1 / 15 + 1 / 60, abs=1e-15)
    p, y = df["p"].to_numpy(), df["y"].to_numpy()
    assert round(mapie_calibration.kolmogorov_smirnov_p_value(y, p), 4) == 0.7857
    assert round(mapie_calibration.kuiper_p_value(y, p), 4) == 0.9684
    sd = math.sqrt(np.sum(p * (1 - p))) / 6
    assert got["ks_p"] == pytest.approx(max_abs_sf((1 / 15) / sd), abs=1e-12)
    assert got["ks_p"] > 0.99


# --------------------------------------------------------------------------
# The p-values as a test
# --------------------------------------------------------------------------


def _simulated(seed: int, groups: int, n: int, temperature: float) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.02, 0.98, size=groups * n)
    y = (rng.random(groups * n) < truth).astype(np.int64)
    logit = np.log(truth / (1 - truth)) * temperature
    return pl.DataFrame(
        {"g": np.repeat(np.arange(groups), n), "p": 1 / (1 + np.exp(-logit)), "y": y}
    )


def test_p_values_are_uniform_for_a_calibrated_model() -> None:
    df = _simulated(0, 300, 400, 1.0)
    got = df.group_by("g").agg(
        ks_p=pc.ks_calibration_p("p", "y"),
        kuiper_p=pc.kuiper_calibration_p("p", "y"),
        ks=pc.ks_calibration("p", "y"),
        sd=((pl.col("p") * (1 - pl.col("p"))).sum().sqrt() / pl.len()),
    )
    for name in ("ks_p", "kuiper_p"):
        assert stats.kstest(got[name].to_numpy(), "uniform").pvalue > 1e-3, name
    # Kolmogorov's Brownian-bridge law on the same statistic is far from uniform:
    bridge = stats.kstwobign.sf((got["ks"] / got["sd"]).to_numpy())
    assert stats.kstest(bridge, "uniform").pvalue < 1e-6
    assert np.mean(bridge < 0.05) > 0.15


def test_p_values_are_small_for_an_overconfident_model() -> None:
    got = (
        _simulated(1, 20, 2000, 2.0)
        .group_by("g")
        .agg(ks_p=pc.ks_calibration_p("p", "y"), kuiper_p=pc.kuiper_calibration_p("p", "y"))
    )
    assert got["ks_p"].max() < 1e-3  # type: ignore[operator]
    assert got["kuiper_p"].max() < 1e-3  # type: ignore[operator]


# --------------------------------------------------------------------------
# Contexts, degenerate groups, bad data
# --------------------------------------------------------------------------


def _log() -> pl.DataFrame:
    return make_log(21, 900, decimals=2, groups=3, nulls=0.05)


def _per_group(df: pl.DataFrame) -> dict[int, dict[str, float]]:
    return {
        g: {**compute(part), **{f"{k}_w": v for k, v in compute(part, "w").items()}}
        for (g,), part in df.partition_by("g", as_dict=True).items()
    }


def _all_expressions() -> dict[str, pl.Expr]:
    return {**expressions(), **{f"{k}_w": v for k, v in expressions("w").items()}}


def test_group_by_over_and_select_in_every_context(frame_context: FrameContext) -> None:
    df = _log()
    want = _per_group(df)
    frame = frame_context.frame(df)
    grouped = frame_context.collect(frame.group_by("g").agg(**_all_expressions()))
    for row in grouped.iter_rows(named=True):
        _assert_close(row, want[row["g"]], atol=1e-14)
    frame = frame_context.frame(df)
    over = frame_context.collect(
        frame.select("g", **{k: v.over("g") for k, v in _all_expressions().items()})
    ).unique("g")
    for row in over.iter_rows(named=True):
        _assert_close(row, want[row["g"]], atol=1e-14)
    frame = frame_context.frame(df.filter(pl.col("g") == 0))
    selected = frame_context.collect(frame.select(**_all_expressions())).row(0, named=True)
    _assert_close(selected, want[0], atol=1e-14)


def test_namespace_equals_free_functions() -> None:
    df = make_log(4, 100)
    got = df.select(
        ks=pl.col("p").calib.ks_calibration("y"),
        ks_p=pl.col("p").calib.ks_calibration_p("y"),
        kuiper=pc.col("p").calib.kuiper_calibration("y"),
        kuiper_p=pc.col("p").calib.kuiper_calibration_p("y"),
    ).row(0, named=True)
    _assert_close(got, compute(df), atol=0.0)


def test_null_rows_are_ignored() -> None:
    df = make_log(8, 300, nulls=0.2)
    complete = df.drop_nulls(["p", "y", "w"])
    _assert_close(compute(df, "w"), compute(complete, "w"), atol=1e-15)


def test_degenerate_groups() -> None:
    df = pl.DataFrame(
        {
            "g": ["empty", "one", "certain", "two", "nulls"],
            "p": [None, 0.3, 1.0, 0.5, None],
            "y": [None, 1, 1, 0, None],
        },
        schema={"g": pl.String, "p": pl.Float64, "y": pl.Int64},
    ).vstack(pl.DataFrame({"g": ["certain", "two"], "p": [0.0, 0.5], "y": [0, 1]}))
    got = {row["g"]: row for row in df.group_by("g").agg(**expressions()).iter_rows(named=True)}
    # No used row: everything null.
    assert all(got["empty"][k] is None for k in expressions())
    # One row: the statistic is |y - p|; no p-value from one row.
    assert got["one"]["ks"] == pytest.approx(0.7) and got["one"]["kuiper"] == pytest.approx(0.7)
    assert got["one"]["ks_p"] is None and got["one"]["kuiper_p"] is None
    # Every probability 0 or 1: S is 0, but the null variance is 0: no p-value.
    assert got["certain"]["ks"] == 0.0 and got["certain"]["ks_p"] is None
    # One tie of two rows: S is read once, after the tie.
    assert got["two"]["ks"] == 0.0 and got["two"]["kuiper"] == 0.0
    assert got["two"]["ks_p"] == 1.0


@pytest.mark.parametrize(("p", "y", "w"), [(1.5, 1, 1.0), (0.5, 2, 1.0), (0.5, 1, -1.0)])
def test_a_refused_row_makes_its_group_null(p: float, y: int, w: float) -> None:
    good = make_log(2, 50).with_columns(g=pl.lit(0, dtype=pl.Int64))
    bad = pl.concat(
        [
            good.head(5).with_columns(g=pl.lit(1, dtype=pl.Int64)),
            pl.DataFrame({"g": [1], "p": [p], "y": [y], "w": [w]}),
        ],
        how="vertical_relaxed",
    )
    df = pl.concat([good, bad], how="vertical_relaxed")
    got = df.group_by("g").agg(**_all_expressions()).sort("g")
    refused = got.row(1, named=True)
    # A bad weight refuses the row for the weighted statistics only.
    checked = [k for k in refused if k.endswith("_w") or (k != "g" and w >= 0)]
    assert checked and all(refused[k] is None for k in checked)
    _assert_close(
        got.row(0, named=True),
        {**compute(good), **{f"{k}_w": v for k, v in compute(good, "w").items()}},
    )


def test_wrong_argument_types_raise_when_built() -> None:
    with pytest.raises(TypeError):
        pc.ks_calibration(1.5, "y")  # type: ignore[arg-type]


def test_pos_label() -> None:
    df = make_log(6, 200)
    relabelled = df.with_columns(
        y=pl.when(pl.col("y") == 1).then(pl.lit("yes")).otherwise(pl.lit("no"))
    )
    got = relabelled.select(
        ks=pc.ks_calibration("p", "y", pos_label="yes"),
        kuiper_p=pc.kuiper_calibration_p("p", "y", pos_label="yes"),
    ).row(0, named=True)
    want = compute(df)
    assert got["ks"] == want["ks"] and got["kuiper_p"] == want["kuiper_p"]


def test_output_is_named_after_the_probability_column() -> None:
    df = make_log(12, 50).rename({"p": "score"})
    for function in (
        pc.ks_calibration,
        pc.ks_calibration_p,
        pc.kuiper_calibration,
        pc.kuiper_calibration_p,
    ):
        assert df.select(function("score", "y")).columns == ["score"]


def test_group_by_dynamic_windows_agree_with_select() -> None:
    from datetime import datetime, timedelta

    df = make_log(13, 400, decimals=2).with_columns(
        ts=pl.datetime_range(
            datetime(2024, 1, 1), datetime(2024, 1, 1) + timedelta(hours=399), "1h", eager=True
        )
    )
    got = df.group_by_dynamic("ts", every="2d", period="3d").agg(**expressions("w"))
    for row in got.iter_rows(named=True):
        start = row["ts"]
        part = df.filter((pl.col("ts") >= start) & (pl.col("ts") < start + timedelta(days=3)))
        _assert_close(row, compute(part, "w"), atol=1e-14)


def test_no_unstable_polars_feature() -> None:
    import warnings

    df = make_log(14, 200, groups=2)
    with pl.Config(warn_unstable=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        df.select(**_all_expressions())
        df.group_by("g").agg(**_all_expressions())
        df.lazy().select(**expressions()).collect(engine="streaming")
