"""`polars-calib report --drift`: the HTML page's Drift section, from the command line."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import polars_calib as pc
from test_cli import run_main
from test_html_report import Page, assert_shows, small_log


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    path = tmp_path / "log.parquet"
    small_log().write_parquet(path)
    return path


def test_report_drift_writes_the_drift_section_of_monitor_alarms(
    tmp_path: Path, log_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # small_log's miscalibration changes sign with p: both charts alarm.
    page = tmp_path / "page.html"
    common = ["report", log_file, "--prob", "p", "--label", "y"]  # one group: a faster page
    code, err = run_main(
        capsys, *common, "--time", "ts", "--every", "1d", "--html", page, "--drift",
        "--drift-threshold", "2",
    )  # fmt: skip
    assert code == 0, err
    assert "charting drift per group (one more pass over the log)" in err
    shown = Page(page.read_text())
    assert {"drift", "drift-table"} <= shown.ids()
    alarms = pc.monitor(small_log(), "p", "y", time="ts", threshold=2.0)
    assert alarms.height >= 3 and set(alarms["odds_ratio"]) == {0.5, 2.0}
    assert_shows(shown, "drift-table", alarms.sort("ts", "odds_ratio"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--drift", "--html", "page.html"], "--drift needs --time COL (with --every)"),
        (
            ["--drift", "--time", "ts", "--every", "1d"],
            "--drift is a section of the HTML report: give --html FILE",
        ),
        (["--drift-threshold", "2", "--html", "page.html"], "--drift-threshold goes with --drift"),
        (
            ["--drift", "--drift-threshold", "0", "--time", "ts", "--every", "1d"],
            "argument --drift-threshold: must be a positive number, got '0'",
        ),
        (
            ["--drift", "--time", "ts", "--every", "1d", "--html", "page.html", "--engine", "dask"],
            "--drift reads the log with Polars: drop --engine dask",
        ),
    ],
)
def test_report_drift_refuses_a_bad_combination(
    tmp_path: Path,
    log_file: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    argv = ["report", log_file, "--prob", "p", "--label", "y", *extra]
    code, err = run_main(capsys, *(tmp_path / a if a == "page.html" else a for a in argv))
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"polars-calib: error: {message}"), line
    assert line.endswith("(see 'polars-calib report --help')")
    assert not (tmp_path / "page.html").exists()


def test_report_drift_is_an_option_of_the_classification_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.parquet"
    pl.DataFrame({"y": [1.0, 2.0], "mu": [1.0, 2.5], "sigma": [1.0, 1.0]}).write_parquet(path)
    code, err = run_main(
        capsys, "report", path, "--target", "y", "--mean", "mu", "--std", "sigma", "--drift"
    )
    assert code == 2
    assert "--drift is an option of the classification form" in err
