"""The CUSUM and O-E charts, their thresholds for a target ARL0, and the monitor's alarms.

Oracles: a row-by-row Python recursion (Lindley's, with the package's policies), a
Python restarted chart for the alarms, and run lengths simulated with numpy's own
generator for the thresholds.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import CountingSource, FrameContext

# --------------------------------------------------------------------------
# Oracles
# --------------------------------------------------------------------------


def lindley(
    p: list[float | None], y: list[int | None], ratio: float, w: list[float] | None = None
) -> list[float | None]:
    """The chart row by row: ``S = max(0, S + W)``, the package's null and refused policy,
    ``inf`` from a certain prediction contradicted in the chart's direction on."""
    out: list[float | None] = []
    s, broken = 0.0, False
    for i, (pi, yi) in enumerate(zip(p, y)):
        wi = 1.0 if w is None else w[i]
        # The one rule: any non-null value that breaks a check refuses the row.
        if (pi is not None and not 0.0 <= pi <= 1.0) or (yi is not None and yi not in (0, 1)):
            broken = True
        if broken:
            out.append(None)
            continue
        if pi is not None and yi is not None and wi > 0:
            against = (pi == 0 and yi == 1) if ratio > 1 else (pi == 1 and yi == 0)
            if against:
                s = math.inf
            elif s != math.inf:
                term = yi * math.log(ratio) - math.log1p((ratio - 1.0) * pi)
                s = max(0.0, s + wi * term)
        out.append(s)
    return out


def restarted(
    times: list[int], p: list[float], y: list[int], ratio: float, h: float
) -> list[tuple[int, float, int | None]]:
    """(time, statistic, run start) of each alarm of the chart restarted after it."""
    alarms = []
    s, last_zero = 0.0, None
    for t, pi, yi in zip(times, p, y):
        against = (pi == 0 and yi == 1) if ratio > 1 else (pi == 1 and yi == 0)
        if against:
            stat = math.inf
        else:
            s = max(0.0, s + yi * math.log(ratio) - math.log1p((ratio - 1.0) * pi))
            stat = s
            if s == 0.0:
                last_zero = t
        if stat > h:
            alarms.append((t, stat, last_zero))
            s, last_zero = 0.0, t
    return alarms


def close(got: list[float | None], want: list[float | None], scale: float) -> bool:
    """Equal nulls and infinities; finite values within rounding of the sums' scale."""
    for a, b in zip(got, want, strict=True):
        if a is None or b is None or math.isinf(a) or math.isinf(b):
            if a != b:
                return False
        elif abs(a - b) > 1e-9 * (1.0 + scale):
            return False
    return True


# --------------------------------------------------------------------------
# The expressions
# --------------------------------------------------------------------------

PROBS = st.one_of(
    st.sampled_from([0.0, 1.0, 5e-324, 1e-300, 1e-16, 0.5, 1 - 1e-16, 1 - 2**-53]),
    st.floats(0.0, 1.0),
)
ROWS = st.lists(st.tuples(PROBS, st.sampled_from([0, 1])), min_size=1, max_size=60)


@settings(max_examples=80)
@given(rows=ROWS, ratio=st.sampled_from([1e-6, 0.5, 0.9, 1.1, 2.0, 1e6]))
@example(rows=[(0.0, 1), (0.5, 0), (1.0, 0), (0.2, 1)], ratio=2.0)
@example(rows=[(0.0, 1), (0.5, 0), (1.0, 0), (0.2, 1)], ratio=0.5)
@example(rows=[(1e-300, 1)] * 40, ratio=1e6)
def test_cusum_is_the_lindley_recursion(rows: list[tuple[float, int]], ratio: float) -> None:
    p, y = [r[0] for r in rows], [r[1] for r in rows]
    got = pl.DataFrame({"p": p, "y": y}).select(pc.cusum("p", "y", odds_ratio=ratio))
    scale = len(rows) * abs(math.log(ratio))
    assert close(got["p"].to_list(), lindley(p, y, ratio), scale)
    assert not got["p"].is_nan().any()


@settings(max_examples=40)
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.none(), PROBS, st.sampled_from([-0.1, 1.5, math.nan])),
            st.one_of(st.none(), st.sampled_from([0, 1, 2])),
            st.sampled_from([0.0, 0.5, 1.0, 3.0, 1e200]),
        ),
        min_size=1,
        max_size=40,
    ),
    ratio=st.sampled_from([0.5, 2.0]),
)
@example(rows=[(0.3, 1, 1.0), (None, 1, 1.0), (1.5, 0, 1.0), (0.2, 1, 1.0)], ratio=2.0)
@example(rows=[(0.0, 1, 0.0), (1.0, 0, 0.0), (0.4, 1, 2.0)], ratio=2.0)
def test_nulls_refused_rows_and_weights_follow_the_one_rule(
    rows: list[tuple[float | None, int | None, float]], ratio: float
) -> None:
    """A null input adds nothing; from a refused row on, null; weights multiply W;
    a contradicted certain prediction with weight 0 adds nothing (never NaN)."""
    p, y, w = ([r[i] for r in rows] for i in range(3))
    df = pl.DataFrame(
        {"p": p, "y": y, "w": w}, schema={"p": pl.Float64, "y": pl.Int64, "w": pl.Float64}
    )
    got = df.select(pc.cusum("p", "y", odds_ratio=ratio, weight="w"))["p"].to_list()
    want = lindley(p, y, ratio, w)  # a NaN is not in [0, 1]: refused
    assert close(got, want, sum(w) * abs(math.log(ratio)))
    oe = df.select(pc.observed_minus_expected("p", "y", weight="w"))["p"]
    assert oe.is_null().to_list() == [v is None for v in want]
    assert not oe.is_nan().any()


def test_a_contradicted_certain_prediction_alarms_one_chart_and_leaves_the_other_finite() -> None:
    df = pl.DataFrame({"p": [0.3, 0.0, 0.4, 1.0, 0.5], "y": [0, 1, 1, 0, 1]})
    charts = df.select(
        up=pc.cusum("p", "y", odds_ratio=2.0),
        down=pc.cusum("p", "y", odds_ratio=0.5),
        oe=pc.observed_minus_expected("p", "y"),
    )
    assert charts["up"].to_list()[1:] == [math.inf] * 4
    down = charts["down"].to_list()
    assert all(math.isfinite(v) for v in down[:3]) and down[3:] == [math.inf] * 2
    assert charts["oe"].to_list() == pytest.approx([-0.3, 0.7, 1.3, 0.3, 0.8])
    # p = 0 with y = 1 on the down chart: the formula's bounded term, log R.
    only = pl.DataFrame({"p": [0.0], "y": [1]}).select(pc.cusum("p", "y", odds_ratio=0.5))
    assert only.item() == 0.0  # max(0, log 0.5)


def test_the_charts_run_per_group_in_time_order(frame_context: FrameContext) -> None:
    rng = np.random.default_rng(3)
    n = 300
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 3, n),
            "ts": rng.permutation(n),
            "p": rng.uniform(0.01, 0.99, n).round(3),
            "y": rng.integers(0, 2, n),
        }
    )
    frame = frame_context.frame(df)
    charts = frame.with_columns(
        up=pc.cusum("p", "y", odds_ratio=2.0).over("g", order_by="ts"),
        oe=pc.observed_minus_expected("p", "y").over("g", order_by="ts"),
    )
    got = frame_context.collect(charts).sort("g", "ts")
    for (g,), part in got.group_by("g"):
        want = lindley(part["p"].to_list(), part["y"].to_list(), 2.0)
        assert close(part["up"].to_list(), want, 300.0), g
        np.testing.assert_allclose(part["oe"], np.cumsum(part["y"] - part["p"]), atol=1e-9)


def test_odds_ratio_is_checked_when_the_expression_is_built() -> None:
    for bad in (1.0, 0.0, -2.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="odds_ratio"):
            pc.cusum("p", "y", odds_ratio=bad)
    with pytest.raises(TypeError, match="odds_ratio"):
        pc.cusum("p", "y", odds_ratio="2")  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Alarms
# --------------------------------------------------------------------------


def shifted_log(seed: int, n: int = 600, groups: int = 2) -> pl.DataFrame:
    """A log per group calibrated, then with the odds x 3 (even groups) or / 3 (odd ones)
    from row n/2: the miscalibration changes sign across groups."""
    rng = np.random.default_rng(seed)
    frames = []
    for g in range(groups):
        p = rng.uniform(0.05, 0.6, n).round(3)
        shift = 3.0 if g % 2 == 0 else 1 / 3
        odds = p / (1 - p) * np.where(np.arange(n) >= n // 2, shift, 1.0)
        y = (rng.random(n) < odds / (1 + odds)).astype(np.int64)
        frames.append(pl.DataFrame({"g": [f"m{g}"] * n, "ts": np.arange(n) * 10, "p": p, "y": y}))
    return pl.concat(frames)


@pytest.mark.parametrize("ratio", [2.0, 0.5])
def test_monitor_gives_the_alarms_of_the_restarted_chart(ratio: float) -> None:
    df = shifted_log(5)
    h = 2.5
    got = pc.monitor(df, "p", "y", by="g", time="ts", odds_ratio=ratio, threshold=h)
    assert got.columns == ["g", "ts", "odds_ratio", "statistic", "threshold", "run_start"]
    want = []
    for g in ("m0", "m1"):
        part = df.filter(pl.col("g") == g)
        for t, stat, start in restarted(
            part["ts"].to_list(), part["p"].to_list(), part["y"].to_list(), ratio, h
        ):
            want.append({"g": g, "ts": t, "statistic": stat, "run_start": start})
    expected = pl.DataFrame(
        want,
        schema={"g": pl.String, "ts": pl.Int64, "statistic": pl.Float64, "run_start": pl.Int64},
    )
    assert len(expected) >= 3  # several alarms, so restarts are tested
    assert_frame_equal(got.select(expected.columns), expected, check_exact=False, rel_tol=1e-9)
    assert (got["threshold"] == h).all() and (got["odds_ratio"] == ratio).all()


def test_monitor_sorts_by_time_keeps_ties_in_order_and_restarts_after_infinity() -> None:
    df = pl.DataFrame(
        {
            "ts": [3, 1, 2, 2, 5, 4],
            "p": [0.5, 0.2, 0.0, 0.3, 0.1, 0.1],
            "y": [1, 1, 1, 0, 1, 1],
        }
    )
    got = pc.monitor(df, "p", "y", time="ts", odds_ratio=2.0, threshold=0.5)
    ordered = df.with_row_index().sort("ts", "index")  # ties: the frame's order
    want = restarted(
        ordered["ts"].to_list(), ordered["p"].to_list(), ordered["y"].to_list(), 2.0, 0.5
    )
    assert got["ts"].to_list() == [t for t, _, _ in want]
    assert got["statistic"].to_list() == pytest.approx([s for _, s, _ in want])
    assert got["run_start"].to_list() == [start for _, _, start in want]
    assert got["statistic"][1] == math.inf  # p = 0 with y = 1 at ts = 2, then a restart
    # Rows of other times in another order give the same alarms.
    shuffled = pl.concat([df.slice(4), df.slice(0, 4)])
    assert_frame_equal(
        pc.monitor(shuffled, "p", "y", time="ts", odds_ratio=2.0, threshold=0.5), got
    )


def alarms_by_group(log: pl.DataFrame, keys: list[str], ratio: float, h: float) -> pl.DataFrame:
    """The oracle's alarms of each group's rows stably sorted by time (ties: the frame's
    order), groups in key order (nulls first)."""
    rows = []
    ordered = log.with_row_index().sort(*keys, "ts", "index")
    for key, part in ordered.group_by(keys, maintain_order=True):
        found = restarted(part["ts"].to_list(), part["p"].to_list(), part["y"].to_list(), ratio, h)
        rows += [(*key, t, s, start) for t, s, start in found]
    return pl.DataFrame(rows, schema=[*keys, "ts", "statistic", "run_start"], orient="row")


@pytest.mark.parametrize("bucket_rows", [None, 64])
def test_monitor_orders_rows_by_keys_then_time_from_any_order(
    bucket_rows: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two keys (one with nulls), tied times: the log in random order, in time order,
    already in (keys, time) order (the shortcut) or nearly (nulls last) give the
    oracle's alarms. With buckets of 64 rows, the out-of-memory sort of a log out of
    order cuts it into many buckets, each written in parts of 16 rows (a batch's share),
    and ties lie across parts: read back in the log's order, sorted stably."""
    if bucket_rows is not None:
        monkeypatch.setattr("polars_calib._monitor.stream.BUCKET_ROWS", bucket_rows)
    rng = np.random.default_rng(3)
    n = 900
    df = (
        shifted_log(4, n=n // 3, groups=3)
        .rename({"g": "h"})
        .with_columns(
            g=pl.Series(rng.choice(["a", "b", None], n).tolist()),
            ts=pl.col("ts") // 100,  # about three rows a time per group: ties
        )
    )
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=2)
    logs = [
        shuffled,
        shuffled.sort("ts", maintain_order=True),
        df.sort("g", "h", "ts", maintain_order=True),
        df.sort("g", "h", "ts", nulls_last=True, maintain_order=True),  # not in order
    ]
    for log in logs:
        want = alarms_by_group(log, ["g", "h"], 2.0, 2.0)
        assert want.height >= 5 and want["g"].null_count() >= 1
        got = pc.monitor(log, "p", "y", by=["g", "h"], time="ts", odds_ratio=2.0, threshold=2.0)
        assert_frame_equal(got.select(want.columns), want, check_exact=False, rel_tol=1e-9)


def test_monitor_refuses_bad_data_with_a_clear_error() -> None:
    df = pl.DataFrame({"ts": [1, 2, 3], "p": [0.2, 1.5, 0.3], "y": [0, 1, 1]})
    with pytest.raises(
        pc.CalibrationDataError, match=r"column 'p': probability outside \[0, 1\] in 1 of 3 rows"
    ):
        pc.monitor(df, "p", "y", time="ts", threshold=3.0)
    with pytest.raises(pc.CalibrationDataError, match="column 'when' is missing"):
        pc.monitor(df, "p", "y", time="when", threshold=3.0)
    with pytest.raises(pc.CalibrationDataError, match="time null in 1 of 3 rows"):
        pc.monitor(
            df.with_columns(ts=pl.Series([1, None, 3]), p=0.5), "p", "y", time="ts", threshold=3.0
        )
    with pytest.raises(pc.CalibrationDataError, match="'ts' holds String"):
        pc.monitor(df.with_columns(pl.col("ts").cast(pl.String)), "p", "y", time="ts")
    with pytest.raises(ValueError, match="not both"):
        pc.monitor(df, "p", "y", time="ts", threshold=3.0, reference=pl.col("ts") < 2)
    with pytest.raises(ValueError, match="one per odds ratio"):
        pc.monitor(df, "p", "y", time="ts", threshold=[1.0, 2.0, 3.0])


def test_a_lazy_monitor_is_a_plan_that_reads_nothing_until_collected() -> None:
    df = shifted_log(6, n=200, groups=1)
    source = CountingSource(df)
    plan = source.frame().calib.monitor("p", "y", by="g", time="ts", threshold=2.0)
    assert source.reads == 0
    assert_frame_equal(plan.collect(), df.calib.monitor("p", "y", by="g", time="ts", threshold=2.0))
    # The checks, the groups, then the rows in batches (a log in time order): never all
    # the rows at once (docs/monitoring.md, "Memory").
    assert source.reads == 3


def test_a_lazy_monitor_is_a_python_scan_not_a_udf_over_the_rows() -> None:
    # The old plan ran the rounds in a map_batches over the collected log (OPAQUE_PYTHON);
    # now the plan's source runs the charts batch by batch when collected.
    plan = shifted_log(6, n=50).lazy().calib.monitor("p", "y", by="g", time="ts", threshold=2.0)
    shown = plan.explain()
    assert "PYTHON[polars_calib.monitor] SCAN" in shown
    assert "OPAQUE_PYTHON" not in shown and "map" not in shown.lower()
    assert plan.select("ts").filter(pl.col("ts") > 0).head(2).collect().height <= 2


def test_monitor_carries_each_chart_across_batches_and_alarms_every_few_rows() -> None:
    # More rows than a batch (65,536), three groups interleaved in time order, and one
    # group so miscalibrated that it alarms every few rows: its restarts cross batches.
    rng = np.random.default_rng(3)
    n = 69_000
    g = rng.integers(0, 3, n)
    p = np.where(g == 0, 0.05, rng.uniform(0.05, 0.6, n)).round(3)
    odds = p / (1 - p) * np.where(g == 0, 40.0, np.where(g == 1, 1.5, 1.0))
    log = pl.DataFrame(
        {"g": g, "ts": np.arange(n) // 3, "p": p, "y": (rng.random(n) < odds / (1 + odds))}
    ).with_columns(pl.col("y").cast(pl.Int64))
    got = pc.monitor(log, "p", "y", by="g", time="ts", odds_ratio=2.0, threshold=2.5)
    want = []
    for group in range(3):
        part = log.filter(pl.col("g") == group)
        for t, stat, start in restarted(
            part["ts"].to_list(), part["p"].to_list(), part["y"].to_list(), 2.0, 2.5
        ):
            want.append({"g": group, "ts": t, "statistic": stat, "run_start": start})
    expected = pl.DataFrame(
        want, schema={"g": pl.Int64, "ts": pl.Int64, "statistic": pl.Float64, "run_start": pl.Int64}
    )
    assert expected.filter(pl.col("g") == 0).height > 3_000  # an alarm every few rows
    assert_frame_equal(got.select(expected.columns), expected, check_exact=False, rel_tol=1e-9)
    # The halves swapped, each group's time goes back: the rows are sorted (out of memory,
    # ties in the frame's order) before the charts run, with the same alarms.
    swapped = pl.concat([log.slice(n // 2), log.slice(0, n // 2)]).lazy()
    assert_frame_equal(
        swapped.calib.monitor("p", "y", by="g", time="ts", odds_ratio=2.0, threshold=2.5).collect(),
        got,
    )


# --------------------------------------------------------------------------
# Thresholds
# --------------------------------------------------------------------------


def run_lengths(p: np.ndarray, ratio: float, h: float, runs: int, seed: int) -> np.ndarray:
    """Run lengths of the chart from 0 to ``S > h``, rows drawn by numpy from `p`."""
    rng = np.random.default_rng(seed)
    s = np.zeros(runs)
    length = np.zeros(runs, dtype=np.int64)
    alive = np.ones(runs, dtype=bool)
    t = 0
    while alive.any():
        t += 1
        q = p[rng.integers(0, len(p), runs)]
        y = rng.random(runs) < q
        s = np.where(alive, np.maximum(0.0, s + y * math.log(ratio) - np.log1p((ratio - 1) * q)), s)
        done = alive & (s > h)
        length[done] = t
        alive &= ~done
    return length


def test_thresholds_give_the_target_arl_of_simulated_run_lengths() -> None:
    """Threshold for ARL0 = 200: numpy's own run lengths at it average 200 (within 4
    standard errors of both simulations), and the Markov chain agrees."""
    rng = np.random.default_rng(7)
    p = rng.beta(2, 5, 400).round(3)
    df = pl.DataFrame({"p": p, "y": (rng.random(400) < p).astype(np.int64)})
    table = pc.cusum_thresholds(df, "p", "y", arl0=200, simulated_alarms=300)
    for row in table.iter_rows(named=True):
        assert abs(row["arl0"] - 200) <= 0.02 * 200  # the smallest h reaching the target
        assert abs(row["arl0_markov"] - row["arl0"]) <= 4 * row["arl0_se"]
        lengths = run_lengths(p, row["odds_ratio"], row["threshold"], 1500, seed=1)
        se = lengths.std() / math.sqrt(len(lengths))
        assert abs(lengths.mean() - 200) <= 4 * math.hypot(se, row["arl0_se"]), row
        # Importance sampling: at most the plain simulation's 1 / sqrt(simulated alarms).
        assert 0.01 < row["arl0_se"] / row["arl0"] < 1 / math.sqrt(300)


def test_thresholds_from_tilted_excursions_give_the_target_arl() -> None:
    """ARL0 = 500 from 1,000 excursions of the tilted chart (importance sampling), under
    half the plain simulation's 100,000 rows, over several blocks of steps: numpy's own
    run lengths at the threshold average 500."""
    rng = np.random.default_rng(11)
    p = rng.uniform(0.02, 0.4, 200).round(3)
    df = pl.DataFrame({"p": p, "y": (rng.random(200) < p).astype(np.int64)})
    table = pc.cusum_thresholds(df, "p", "y", arl0=500, simulated_alarms=200)
    for row in table.iter_rows(named=True):
        assert row["rows_simulated"] < 100_000 / 2 and row["alarms_simulated"] >= 150
        assert abs(row["arl0"] - 500) <= 0.02 * 500
        assert abs(row["arl0_markov"] - row["arl0"]) <= 4 * row["arl0_se"]
        lengths = run_lengths(p, row["odds_ratio"], row["threshold"], 500, seed=2)
        se = lengths.std() / math.sqrt(len(lengths))
        assert abs(lengths.mean() - 500) <= 4 * math.hypot(se, row["arl0_se"]), row


@pytest.mark.parametrize(
    ("reference", "weighted"),
    [("uniform", False), ("rare", False), ("beta", True)],
)
def test_importance_sampled_thresholds_agree_with_the_markov_chain(
    reference: str, weighted: bool
) -> None:
    """Uniform p, rare events (p near 0: the tilted excursions are long) and weights
    (the tilt solved numerically): the Markov chain's ARL at the threshold is within 4
    standard errors of the target, the standard error below a plain simulation's
    ``1 / sqrt(simulated_alarms)``."""
    rng = np.random.default_rng(21)
    p = {
        "uniform": rng.uniform(0.0, 1.0, 200),
        "rare": rng.uniform(0.001, 0.01, 200),
        "beta": rng.beta(2, 5, 200),
    }[reference]
    df = pl.DataFrame({"p": p, "y": (rng.random(200) < p).astype(np.int64)})
    options: dict[str, Any] = {"arl0": 500, "simulated_alarms": 60}
    if weighted:
        df = df.with_columns(w=pl.Series(rng.uniform(0.5, 2.0, 200)))
        options["weight"] = "w"
    table = pc.cusum_thresholds(df, "p", "y", **options)
    for row in table.iter_rows(named=True):
        assert abs(row["arl0"] - 500) <= 0.02 * 500, row
        assert abs(row["arl0_markov"] - 500) <= 4 * row["arl0_se"], row
        assert row["arl0_se"] / row["arl0"] < 0.8 / math.sqrt(60), row


def test_a_target_below_every_positive_thresholds_arl_gives_threshold_zero() -> None:
    """p = 0.001: one event lifts the R = 2 chart by log 2, so every h > 0 has an ARL
    of about 1,000 rows, above a target of 300: the threshold is 0 (alarm at the first
    event; the Markov chain's ARL there is exactly 1 / P(W > 0)), not an error. The
    R = 0.5 chart, creeping up by 0.0005 a row, gets a positive threshold."""
    df = pl.DataFrame({"p": [0.001] * 3, "y": [0, 0, 0]})
    table = pc.cusum_thresholds(df, "p", "y", arl0=300, simulated_alarms=50)
    down, up = table.iter_rows(named=True)
    assert up["threshold"] == 0.0 and up["arl0"] >= 300
    assert up["arl0_markov"] == pytest.approx(1000.0, rel=1e-9)
    assert 0.0 < down["threshold"] < 1.0 and abs(down["arl0"] - 300) <= 0.05 * 300


def test_thresholds_are_reproducible_per_group_and_weights_are_not_rows() -> None:
    rng = np.random.default_rng(8)
    p = rng.uniform(0.05, 0.5, 300).round(2)
    df = pl.DataFrame({"g": ["a", "b"] * 150, "p": p, "y": (rng.random(300) < p).astype(np.int64)})
    options: dict[str, Any] = {"arl0": 100, "simulated_alarms": 50}
    both = pc.cusum_thresholds(df, "p", "y", by="g", **options)
    alone = pc.cusum_thresholds(df.filter(pl.col("g") == "b"), "p", "y", by="g", **options)
    assert_frame_equal(both.filter(pl.col("g") == "b"), alone)
    assert_frame_equal(
        df.lazy().calib.cusum_thresholds("p", "y", by="g", **options).collect(), both
    )
    # The reference's values, not their order in the frame, set the thresholds.
    assert_frame_equal(pc.cusum_thresholds(df.reverse(), "p", "y", by="g", **options), both)
    other = pc.cusum_thresholds(df, "p", "y", by="g", seed=1, **options)
    assert not other["threshold"].equals(both["threshold"])
    # A weight of 2 on every row doubles every term: the same draws, twice the threshold.
    doubled = pc.cusum_thresholds(df.with_columns(w=2.0), "p", "y", by="g", weight="w", **options)
    np.testing.assert_allclose(doubled["threshold"], 2 * both["threshold"], rtol=1e-12)
    # The reference rows are the ones simulated from.
    early = pc.cusum_thresholds(df, "p", "y", by="g", reference=pl.col("p") < 0.2, **options)
    assert not early["threshold"].equals(both["threshold"])
    with pytest.raises(pc.CalibrationDataError, match="1 of 2 groups have no reference row"):
        pc.cusum_thresholds(df, "p", "y", by="g", reference=pl.col("g") == "a", **options)


SAMPLE_ROWS = 65_536  # polars_calib._monitor.reference.SAMPLE_ROWS
FULL_REFERENCE = {0.5: 3.7014504953, 2.0: 3.4826490071}
"""Group "a"'s thresholds of the log of the test below simulated from all its 196,608
rows (computed once by the version that held them all: 2026-11-26, commit a7e6044)."""


@pytest.mark.slow  # about 3 s
def test_a_large_group_simulates_from_a_reproducible_sample(tmp_path: Path) -> None:
    """A group of 3 × SAMPLE_ROWS reference rows: its simulation draws from a sample
    of exactly SAMPLE_ROWS of them, the same from a DataFrame, a LazyFrame and a scan
    of the log in parquet files (the rows' positions in the log, read by the streaming
    engine), the thresholds within the simulation's standard error of those from all
    its rows; `pc.monitor` alarms at them, and a new store's first update gives its
    alarms. A small group beside it keeps all its rows (its thresholds are those of a
    log of it alone)."""
    rng = np.random.default_rng(5)
    n = 3 * SAMPLE_ROWS
    p = rng.beta(2, 5, n)
    large = pl.DataFrame({"g": "a", "p": p, "y": (rng.random(n) < p).astype(np.int64)})
    small = pl.DataFrame({"g": "b", "p": rng.beta(2, 5, 500)})
    small = small.with_columns(y=(pl.col("p") > 0.3).cast(pl.Int64))
    seconds = pl.duration(seconds=pl.int_range(pl.len()))
    log = pl.concat([large, small]).with_columns(ts=pl.datetime(2026, 1, 1) + seconds)
    for i, start in enumerate(range(0, log.height, 70_000)):
        log.slice(start, 70_000).write_parquet(tmp_path / f"{i}.parquet", row_group_size=9_000)
    options: dict[str, Any] = {"by": "g", "arl0": 1000, "simulated_alarms": 20}
    table = pc.cusum_thresholds(log, "p", "y", **options)
    assert_frame_equal(pc.cusum_thresholds(log, "p", "y", **options), table)
    for frame in (log.lazy(), pl.scan_parquet(tmp_path / "*.parquet")):
        assert_frame_equal(pc.cusum_thresholds(frame, "p", "y", **options).collect(), table)
    assert table["reference_rows"].to_list() == [SAMPLE_ROWS] * 2 + [500] * 2
    for row in table.filter(g="a").iter_rows(named=True):
        full = FULL_REFERENCE[row["odds_ratio"]]
        # A sample (not all the rows), and log ARL moves by h (the tilt is 1): the gap
        # is within the ARL's relative error.
        assert 1e-6 < abs(row["threshold"] - full) < row["arl0_se"] / row["arl0"], row
    alone = pc.cusum_thresholds(small, "p", "y", **options)
    assert_frame_equal(table.filter(g="b"), alone)
    alarms = pc.monitor(pl.scan_parquet(tmp_path / "*.parquet"), "p", "y", time="ts", **options)
    used = alarms.collect().join(table, on=["g", "odds_ratio"], suffix="_simulated")
    assert used.height > 100 and used["g"].n_unique() == 2
    assert (used["threshold"] == used["threshold_simulated"]).all()
    stored = pc.update_monitor_store(log, tmp_path / "store", "p", "y", time="ts", **options)
    assert_frame_equal(stored, alarms.collect())


def test_monitor_uses_the_simulated_thresholds() -> None:
    df = shifted_log(9, n=400, groups=1)
    options: dict[str, Any] = {
        "arl0": 300,
        "simulated_alarms": 30,
        "reference": pl.col("ts") < 2000,
    }
    table = pc.cusum_thresholds(df, "p", "y", by="g", **options)
    got = pc.monitor(df, "p", "y", by="g", time="ts", **options)
    given = pc.monitor(df, "p", "y", by="g", time="ts", threshold=table["threshold"].to_list())
    assert_frame_equal(got, given)
    assert got.height >= 1 and (got["ts"] >= 2000).all()  # the shift is found, after it


def test_monitor_gives_the_same_alarms_in_every_context(frame_context: FrameContext) -> None:
    """A Datetime time column, eager or lazy, in memory, streaming or scanned."""
    df = shifted_log(10, n=300).with_columns(
        ts=pl.datetime(2026, 1, 1) + pl.duration(minutes=pl.col("ts"))
    )
    want = pc.monitor(df, "p", "y", by="g", time="ts", threshold=2.5)
    assert want.height >= 2 and want.schema["run_start"] == pl.Datetime("us")
    got = pc.monitor(frame_context.frame(df), "p", "y", by="g", time="ts", threshold=2.5)
    assert_frame_equal(frame_context.collect(got), want)


def test_weights_multiply_the_terms_of_the_restarted_chart() -> None:
    df = shifted_log(12, n=300).with_columns(w=2.0)
    once = pc.monitor(df, "p", "y", by="g", time="ts", threshold=2.5)
    twice = pc.monitor(df, "p", "y", by="g", time="ts", weight="w", threshold=5.0)
    assert once.height >= 2
    assert_frame_equal(
        twice.with_columns(pl.col("statistic", "threshold") / 2), once, check_exact=False
    )


def test_an_empty_log_has_no_alarm_and_no_threshold() -> None:
    schema = {"g": pl.String, "ts": pl.Int64, "p": pl.Float64, "y": pl.Int64}
    empty = pl.DataFrame(schema=schema)
    choices: list[dict[str, Any]] = [{"threshold": 2.0}, {"arl0": 100.0}]
    for options in choices:
        found = pc.monitor(empty.lazy(), "p", "y", by="g", time="ts", **options).collect()
        assert found.is_empty() and found.columns[:2] == ["g", "ts"]
    assert pc.cusum_thresholds(empty, "p", "y", by="g", arl0=100).is_empty()


def test_rows_in_time_order_need_no_sort_and_give_the_alarms_of_a_sorted_log() -> None:
    # Ties of two rows (their order counts); every group alarms.
    df = shifted_log(4, groups=4).with_columns(pl.col("ts") // 20)
    expected = pc.monitor(df, "p", "y", by="g", time="ts", threshold=2.5)
    assert expected["g"].n_unique() == 4
    # The groups interleaved, each in time order (an append-only log): no sort.
    interleaved = df.sort("ts", maintain_order=True)
    # One group's second half before its first (whole ties moved): a sort.
    m3 = df.filter(pl.col("g") == "m3")
    unordered = pl.concat([m3.slice(300), df.filter(pl.col("g") != "m3"), m3.slice(0, 300)])
    for log in (interleaved, unordered):
        got = pc.monitor(log, "p", "y", by="g", time="ts", threshold=2.5)
        assert_frame_equal(got, expected)


def test_a_null_group_comes_first_as_the_keys_sort() -> None:
    # Its number was 2**32 - 1 (an unsigned count below 0), and its alarms came last.
    df = shifted_log(6, groups=3).with_columns(pl.col("g").replace("m0", None))
    got = pc.monitor(df, "p", "y", by="g", time="ts", threshold=2.5)
    assert got["g"].null_count() and got["g"].n_unique() == 3
    assert_frame_equal(got, got.sort("g", "ts", "odds_ratio", maintain_order=True))
