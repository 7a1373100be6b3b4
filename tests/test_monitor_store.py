"""The incremental monitoring store against a full recomputation, day by day.

Oracle: :func:`pc.monitor` and :func:`pc.summary` over the whole log as it stands after
each update. The log is in time order with many rows per timestamp, and updates cut it
anywhere, also between rows of one timestamp (rows arriving later at the store's last
seen time).
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import make_log

METRICS = ["ece", "spiegelhalter_z"]


def timed_log(n: int = 2_400, seed: int = 3) -> pl.DataFrame:
    """Two models over four days, 8 rows per timestamp (ties), in time order; the
    miscalibration changes sign across [0, 1] and model 1 under-predicts from day 3."""
    log = make_log(seed, n, groups=2, weights=False).rename({"g": "model"})
    start = datetime(2026, 10, 1)
    ts = [start + timedelta(minutes=20 * (i // 8)) for i in range(n)]
    log = log.with_columns(ts=pl.Series(ts))
    shifted = (pl.col("model") == 1) & (pl.col("ts") >= datetime(2026, 10, 3))
    rng = np.random.default_rng(seed)
    extra = pl.Series(rng.random(n) < 0.3)
    return log.with_columns(y=pl.when(shifted & extra).then(1).otherwise("y"))


def full_alarms(log: pl.DataFrame, **options: Any) -> pl.DataFrame:
    return pc.monitor(log, "p", "y", by="model", time="ts", **options)


def full_windows(log: pl.DataFrame, **options: Any) -> pl.DataFrame:
    return pc.summary(log, "p", "y", by="model", time="ts", every="1d", metrics=METRICS, **options)


def update(log: pl.DataFrame | pl.LazyFrame, store: Path, **options: Any) -> pl.DataFrame:
    options = {"by": "model", "time": "ts", "threshold": 2.5, **options}
    return pc.update_monitor_store(log, store, "p", "y", **options)


def check_against_full(store: Path, log: pl.DataFrame, **options: Any) -> None:
    """The store's alarms and windows are those of one pass over `log`."""
    threshold = options.get("threshold", 2.5)
    expected = full_alarms(log, threshold=threshold)
    assert_frame_equal(pc.monitor_store_alarms(store), expected)
    windows = pc.monitor_store_windows(store)
    assert_frame_equal(windows, full_windows(log), check_exact=False, rel_tol=1e-9)


@pytest.mark.parametrize("cuts", [[400, 800, 1200], [403, 805, 1211, 1597], [1, 9, 1300]])
def test_updates_day_by_day_give_the_full_recomputation(tmp_path: Path, cuts: list[int]) -> None:
    log = timed_log(1_600)
    store = tmp_path / "store"
    found = []
    for cut in [*cuts, log.height]:
        found.append(update(log[:cut].lazy(), store))
        check_against_full(store, log[:cut])
    expected = full_alarms(log, threshold=2.5)
    assert expected.height >= 10  # the test sees alarms, several after the shift
    assert_frame_equal(pl.concat(found).sort("model", "ts", maintain_order=True), expected)


def test_rows_at_the_last_time_are_counted_across_batches(tmp_path: Path) -> None:
    # One update reads its rows in batches of 65,536: a tie spans the first cut, and
    # the rows at the last time are counted alone (rows arriving later at it are new).
    log = timed_log(70_004).with_columns(
        ts=datetime(2026, 10, 1) + pl.duration(seconds=pl.int_range(pl.len()) // 14)
    )
    store = tmp_path / "store"
    for cut in (log.height - 5, log.height):
        update(log[:cut].lazy(), store, threshold=8.0)
        check_against_full(store, log[:cut], threshold=8.0)


def test_a_rerun_with_nothing_new_changes_nothing(tmp_path: Path) -> None:
    log = timed_log(800)
    store = tmp_path / "store"
    update(log, store)
    before = {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}
    again = update(log, store)
    assert again.is_empty()
    assert again.schema == full_alarms(log, threshold=2.5).schema
    after = {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}
    assert after == before


def test_simulated_thresholds_are_fixed_by_the_first_update(tmp_path: Path) -> None:
    log = timed_log(1_600)
    store = tmp_path / "store"
    options = {"arl0": 300.0, "simulated_alarms": 20, "threshold": None}
    first = log.filter(pl.col("ts") < datetime(2026, 10, 2))
    update(first, store, **options)
    update(log, store, **options)
    expected = full_alarms(
        log,
        arl0=300.0,
        simulated_alarms=20,
        reference=pl.col("ts") < datetime(2026, 10, 2),
    )
    assert_frame_equal(pc.monitor_store_alarms(store), expected)


def test_late_rows_are_refused_with_their_count_and_the_store_kept(tmp_path: Path) -> None:
    log = timed_log(800)
    store = tmp_path / "store"
    update(log[:400], store)
    manifest = (store / "manifest.json").read_text()
    late = log[:3].with_columns(pl.col("ts") - timedelta(minutes=1))
    grown = pl.concat([log[:400], late, log[400:]])
    with pytest.raises(pc.CalibrationDataError, match=r"column 'ts': 3 rows .* older than"):
        update(grown, store)
    assert (store / "manifest.json").read_text() == manifest
    update(log, store)  # without them, the store goes on
    check_against_full(store, log)


def test_other_options_are_an_error_not_a_mix(tmp_path: Path) -> None:
    log = timed_log(400)
    store = tmp_path / "store"
    update(log[:200], store)
    with pytest.raises(ValueError, match=r"other options \(every: store '1d', given '1h'\)"):
        update(log, store, every="1h")
    with pytest.raises(ValueError, match=r"threshold: store \[2.5, 2.5\], given \[3.0, 3.0\]"):
        update(log, store, threshold=3.0)
    with pytest.raises(ValueError, match="not a monitoring store"):
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "notes.txt").write_text("mine")
        update(log, tmp_path / "other")


def test_a_failed_update_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    log = timed_log(1_200)
    store = tmp_path / "store"
    update(log[:500], store)
    manifest = (store / "manifest.json").read_text()
    alarms, windows = pc.monitor_store_alarms(store), pc.monitor_store_windows(store)
    # The alarms' part cannot be written (its directory is a dangling link): the
    # statistics' part was written first, and the manifest was not replaced.
    (store / "alarms").rename(tmp_path / "alarms")
    (store / "alarms").symlink_to(tmp_path / "nowhere")
    with pytest.raises(OSError):
        update(log, store)
    (store / "alarms").unlink()
    (tmp_path / "alarms").rename(store / "alarms")
    assert len(list((store / "statistics").glob("*.parquet"))) == 2  # one left over
    assert (store / "manifest.json").read_text() == manifest
    assert_frame_equal(pc.monitor_store_alarms(store), alarms)
    assert_frame_equal(pc.monitor_store_windows(store), windows)
    update(log, store)  # the next update ignores the left-over part, then removes it
    check_against_full(store, log)
    named = json.loads((store / "manifest.json").read_text())["parts"]["statistics"]
    on_disk = sorted(f"statistics/{p.name}" for p in (store / "statistics").glob("*.parquet"))
    assert on_disk == sorted(named)


def test_no_keys_and_a_date_column(tmp_path: Path) -> None:
    log = timed_log(900).with_columns(pl.col("ts").dt.date().alias("day"))
    store = tmp_path / "store"
    for cut in (300, 301, 900):
        update(log[:cut], store, by=None, time="day")
    expected = pc.monitor(log, "p", "y", time="day", threshold=2.5)
    assert_frame_equal(pc.monitor_store_alarms(store), expected)
    windows = pc.summary(log, "p", "y", time="day", every="1d", metrics=METRICS)
    assert_frame_equal(pc.monitor_store_windows(store), windows, check_exact=False, rel_tol=1e-9)


def test_bad_input_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    log = timed_log(400)
    store = tmp_path / "store"
    bad = log.with_columns(p=pl.when(pl.int_range(pl.len()) < 2).then(1.5).otherwise("p"))
    with pytest.raises(pc.CalibrationDataError, match="2 of 400"):
        update(bad, store)
    assert not store.exists() or not any(store.iterdir())
    with pytest.raises(pc.CalibrationDataError, match="must be a Date or Datetime"):
        update(log.with_columns(pl.int_range(pl.len()).alias("ts")), store)
    with pytest.raises(TypeError, match="column names"):
        update(log, store, by=pl.col("model"))
    shutil.rmtree(store, ignore_errors=True)


def test_weights_are_carried_as_one_pass_carries_them(tmp_path: Path) -> None:
    log = timed_log(800).with_columns(w=(pl.int_range(pl.len()) % 4).cast(pl.Float64) / 2)
    store = tmp_path / "store"
    for cut in (301, 800):
        update(log[:cut], store, weight="w")
    expected = pc.monitor(log, "p", "y", by="model", time="ts", weight="w", threshold=2.5)
    assert expected.height >= 3
    assert_frame_equal(pc.monitor_store_alarms(store), expected)
    windows = full_windows(log, weight="w")
    assert_frame_equal(pc.monitor_store_windows(store), windows, check_exact=False, rel_tol=1e-9)


def test_alarms_of_one_chart_on_one_day_keep_their_order(tmp_path: Path) -> None:
    # A Date column: many alarms of one chart share a time; they stay in the order the
    # chart raised them, in the store as in one pass.
    log = timed_log(1_600).with_columns(pl.col("ts").dt.date().alias("day"))
    store = tmp_path / "store"
    for cut in (700, 1_600):
        update(log[:cut], store, time="day", threshold=1.0)
    expected = pc.monitor(log, "p", "y", by="model", time="day", threshold=1.0)
    per_chart_day = expected.group_by("model", "day", "odds_ratio").len()
    assert per_chart_day["len"].max() >= 5  # the test sees ties
    assert_frame_equal(pc.monitor_store_alarms(store), expected)
    # The order is the chart's: each alarm's run starts at or after the previous alarm.
    chart = expected.filter(pl.col("model") == 1, pl.col("odds_ratio") == 2.0)
    assert chart["run_start"].is_sorted()


def store_files(store: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}


def test_a_second_update_while_one_runs_is_refused_and_the_store_kept(tmp_path: Path) -> None:
    log = timed_log(800)
    store = tmp_path / "store"
    update(log[:400], store)
    assert not (store / "update.lock").exists()  # an update removes its lock
    # Another update is running: it holds the lock (as an update writes it).
    owner = {"pid": 4321, "host": "cron-host", "started": "2026-11-26T06:15:00+00:00"}
    (store / "update.lock").write_text(json.dumps(owner) + "\n")
    before = store_files(store)
    pattern = r"locked by another update: '.*update\.lock' is held by process 4321 on cron-host"
    with pytest.raises(FileExistsError, match=pattern):
        update(log, store)
    assert store_files(store) == before  # the store and the other update's lock, untouched
    (store / "update.lock").unlink()  # the documented way to clear a stale lock
    update(log, store)
    check_against_full(store, log)
    assert not (store / "update.lock").exists()


def test_a_failed_update_removes_its_lock(tmp_path: Path) -> None:
    log = timed_log(400)
    store = tmp_path / "store"
    bad = log.with_columns(p=pl.when(pl.int_range(pl.len()) < 2).then(1.5).otherwise("p"))
    for _ in range(2):  # the second run is refused for its data again, not for a lock
        with pytest.raises(pc.CalibrationDataError, match="2 of 400"):
            update(bad, store)
    assert not (store / "update.lock").exists()
    update(log, store)
    check_against_full(store, log)


@pytest.mark.parametrize("weight", [None, "w"])
def test_store_windows_with_a_reference_are_monitor_windows_of_the_whole_log(
    tmp_path: Path, weight: str | None
) -> None:
    log = timed_log(2_400).with_columns(w=(pl.int_range(pl.len()) % 3).cast(pl.Float64))
    log = log.filter(pl.col("ts").dt.day() != 3)  # an empty day: a window counting 0
    store = tmp_path / "store"
    for cut in (500, 1_000, log.height):
        update(log[:cut], store, weight=weight)
    reference = (datetime(2026, 10, 1), datetime(2026, 10, 3))
    got = pc.monitor_store_windows(store, reference=reference)
    expected = pc.monitor_windows(
        log, "p", "y", by="model", time="ts", every="1d", reference=reference, weight=weight
    )
    assert expected["count"].min() == 0 and expected["ece_alert"].any()
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-9)
