"""``polars-calib monitor``: the daily job over a growing log, its exit status and its errors.

In this process through ``main`` (the console script and ``python -m polars_calib`` exit
with what it returns), so the tests stay fast.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from polars_calib.cli import main


def daily_log(days: int, rows: int = 200) -> pl.DataFrame:
    """Two models, `rows` a day, 4 rows per timestamp; model b's outcomes all 1 on day 3."""
    i = pl.int_range(days * rows, dtype=pl.Int64)
    log = pl.select(
        ts=pl.lit(datetime(2026, 10, 1)) + pl.duration(minutes=(i // 4) * (4 * 1440 // rows)),
        model=pl.when(i % 2 == 0).then(pl.lit("a")).otherwise(pl.lit("b")),
        p=((i * 37) % 89 / 100 + 0.05),
        y=((i * 53 % 97) / 97 < (i * 37) % 89 / 100 + 0.05).cast(pl.Int8),
    )
    late = (pl.col("model") == "b") & (pl.col("ts") >= datetime(2026, 10, 3))
    return log.with_columns(y=pl.when(late).then(1).otherwise("y").cast(pl.Int8))


def monitor(
    capsys: pytest.CaptureFixture[str], log: Path | str, store: Path, *extra: str | Path
) -> tuple[int, str, str]:
    args = ["monitor", log, "--prob", "p", "--label", "y", "--by", "model", "--time", "ts"]
    code = main([str(a) for a in [*args, "--store", store, "--threshold", "4", *extra]])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_daily_job_exits_3_on_a_new_alarm_and_0_on_a_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = daily_log(4)
    logs, store = tmp_path / "logs", tmp_path / "store"
    logs.mkdir()
    codes = []
    for day in range(4):  # one file a day, as a daily export writes them
        start = datetime(2026, 10, 1) + timedelta(days=day)
        part = full.filter(pl.col("ts").is_between(start, start + timedelta(days=1), "left"))
        part.write_parquet(logs / f"day-{day}.parquet")
        code, out, err = monitor(capsys, logs / "*.parquet", store)
        codes.append(code)
    assert codes == [0, 0, 3, 3]  # model b breaks on day 3 and stays broken
    assert "new alarm" in err
    code, out, _ = monitor(capsys, logs / "*.parquet", store, "--windows", tmp_path / "w.csv")
    assert (code, out) == (0, "")  # nothing new: the same store, no alarm
    expected = pc.monitor(full, "p", "y", by="model", time="ts", threshold=4.0)
    assert_frame_equal(pc.monitor_store_alarms(store), expected)
    windows = pl.read_csv(tmp_path / "w.csv", try_parse_dates=True)
    summary = pc.summary(full, "p", "y", by="model", time="ts", every="1d", metrics=["ece"])
    assert windows["count"].to_list() == summary["count"].to_list()


def test_windows_with_a_reference_are_monitor_windows_of_the_whole_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = daily_log(4)
    full.write_parquet(tmp_path / "log.parquet")
    out = tmp_path / "w.parquet"
    extra = ["--windows", out, "--reference", "2026-10-01T00:00:00,2026-10-03T00:00:00"]
    code, _, _ = monitor(capsys, tmp_path / "log.parquet", tmp_path / "store", *extra)
    assert code == 3  # model b breaks on day 3
    reference = (datetime(2026, 10, 1), datetime(2026, 10, 3))
    expected = pc.monitor_windows(
        full, "p", "y", by="model", time="ts", every="1d", reference=reference
    )
    got = pl.read_parquet(out)
    assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)
    assert got.filter(pl.col("model") == "b")["ece_alert"].to_list()[-1]  # day 4 alerts


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--odds-ratio", "2,x"], "argument --odds-ratio: must be comma-separated positive"),
        (["--arl0", "100"], "argument --threshold: not allowed with argument --arl0"),
        (["--every", "1day"], "argument --every: must be a positive Polars duration"),
        (["--windows", "w.txt"], "argument --windows: expected a .csv or .parquet file"),
        (["--reference", "2026-10-01,2026-10-03"], "argument --reference: needs --windows"),
        (["--reference", "2026-10-03,2026-10-01"], "expected START before END"),
        (["--reference", "2026-10-01"], "expected START,END as two ISO dates"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    daily_log(1).write_parquet(tmp_path / "log.parquet")
    code, _, err = monitor(capsys, tmp_path / "log.parquet", tmp_path / "store", *extra)
    assert code == 2
    assert message in err


def test_a_store_over_the_input_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logs").mkdir()
    daily_log(1).write_parquet(tmp_path / "logs" / "day.parquet")
    code, _, err = monitor(capsys, tmp_path / "logs", tmp_path / "logs" / "store")
    assert code == 2
    assert "argument --store" in err
    assert not (tmp_path / "logs" / "store").exists()


def test_late_rows_and_other_options_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, store = daily_log(2), tmp_path / "store"
    log.write_parquet(tmp_path / "log.parquet")
    assert monitor(capsys, tmp_path / "log.parquet", store)[0] == 0
    code, _, err = monitor(capsys, tmp_path / "log.parquet", store, "--every", "1h")
    assert code == 1
    assert "built with other options (every: store '1d', given '1h')" in err
    late = log.head(5).with_columns(pl.col("ts") - timedelta(seconds=1))
    pl.concat([log, late]).write_parquet(tmp_path / "log.parquet")
    code, _, err = monitor(capsys, tmp_path / "log.parquet", store)
    assert code == 1
    assert "5 rows of the log are older than the store's last seen time" in err


def test_a_store_another_update_holds_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, store = daily_log(2), tmp_path / "store"
    log.write_parquet(tmp_path / "log.parquet")
    assert monitor(capsys, tmp_path / "log.parquet", store)[0] == 0
    (store / "update.lock").write_text('{"pid": 4321, "host": "h", "started": "2026-11-26"}\n')
    code, out, err = monitor(capsys, tmp_path / "log.parquet", store)
    assert (code, out) == (1, "")
    assert "is locked by another update" in err
    assert "update.lock" in err
