"""The `polars-calib` command line, end to end in a subprocess (`python -m polars_calib`)."""

from __future__ import annotations

import errno
import importlib.util
import os
import subprocess
import sys
import types
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc

HAS_PLOT = all(importlib.util.find_spec(m) for m in ("altair", "vl_convert"))


def run(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "polars_calib", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        check=False,
    )


def small_log(n: int = 1_200) -> pl.DataFrame:
    """A deterministic log: two models, two segments, five days, probabilities to 2 dp."""
    i = pl.int_range(n, dtype=pl.Int64)
    return pl.select(
        ts=pl.lit(datetime(2024, 3, 1)) + pl.duration(minutes=i * 6),
        model=pl.when(i % 2 == 0).then(pl.lit("baseline")).otherwise(pl.lit("candidate")),
        segment=pl.when(i % 3 == 0).then(pl.lit("A")).otherwise(pl.lit("B")),
        p=((i * 37) % 101 / 100),
        y=((i * 53 % 97) / 97 < (i * 37) % 101 / 100).cast(pl.Int8),
        w=(i % 4 + 1).cast(pl.Float64),
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    """The error is the one last line of stderr; any lines before are progress messages."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert all(line.startswith("polars-calib: ") for line in lines), result.stderr
    errors = [line for line in lines if line.startswith("polars-calib: error: ")]
    assert errors == lines[-1:], result.stderr
    return errors[0]


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    return small_log()


@pytest.fixture
def parquet_log(tmp_path: Path, log: pl.DataFrame) -> Path:
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    return path


def test_report_parquet_writes_every_output(
    tmp_path: Path, parquet_log: Path, log: pl.DataFrame
) -> None:
    out = tmp_path / "out"
    result = run(
        "report",
        parquet_log,
        "--prob",
        "p",
        "--label",
        "y",
        "--by",
        "model,segment",
        "--bins",
        "8",
        "--out",
        out,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    expected = pc.summary(log, "p", "y", by=["model", "segment"], n_bins=8)
    assert_frame_equal(pl.read_parquet(out / "summary.parquet"), expected)
    assert_frame_equal(
        pl.read_csv(out / "summary.csv"), expected, check_dtypes=False, abs_tol=1e-12
    )
    reliability = pc.reliability(log, "p", "y", by=["model", "segment"], n_bins=8)
    assert_frame_equal(
        pl.read_csv(out / "reliability.csv"), reliability, check_dtypes=False, abs_tol=1e-12
    )
    # The printed table: every group, every metric column, floats to 4 decimals.
    for row in expected.iter_rows(named=True):
        assert f"{row['ece']:.4f}" in result.stdout
        assert f"{row['log_loss']:.4f}" in result.stdout
    assert all(name in result.stdout for name in expected.columns)
    # Progress goes to stderr, one line per stage.
    assert "polars-calib: scanning" in result.stderr
    png = out / "reliability.png"
    if HAS_PLOT:
        assert png.stat().st_size > 0
    else:
        assert "skipped reliability.png" in result.stderr


def test_report_csv_with_time_windows_and_weights(tmp_path: Path, log: pl.DataFrame) -> None:
    path = tmp_path / "log.csv"
    log.write_csv(path)
    out = tmp_path / "out"
    result = run(
        "report",
        path,
        "--prob",
        "p",
        "--label",
        "y",
        "--by",
        "model",
        "--time",
        "ts",
        "--every",
        "1d",
        "--weight",
        "w",
        "--metrics",
        "ece,brier",
        "--quiet",
        "--out",
        out,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # --quiet
    expected = pc.summary(
        log, "p", "y", by="model", time="ts", every="1d", weight="w", metrics=["ece", "brier"]
    )
    assert expected.height == 10  # 2 models x 5 days
    assert_frame_equal(pl.read_parquet(out / "summary.parquet"), expected, check_dtypes=False)


def test_report_without_out_only_prints(tmp_path: Path, parquet_log: Path) -> None:
    result = run("report", parquet_log, "--prob", "p", "--label", "y", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ece" in result.stdout and "log_loss" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.parquet"]


def test_directory_of_parquet_files(tmp_path: Path, log: pl.DataFrame) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    for index, part in enumerate(log.partition_by("segment", maintain_order=True)):
        part.write_parquet(parts / f"part-{index}.parquet")
    out = tmp_path / "out"
    result = run(
        "report",
        parts,
        "--prob",
        "p",
        "--label",
        "y",
        "--by",
        "model",
        "-q",
        "--out",
        out,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert_frame_equal(
        pl.read_parquet(out / "summary.parquet"), pc.summary(log, "p", "y", by="model")
    )


def test_missing_column_is_a_one_line_data_error(tmp_path: Path, parquet_log: Path) -> None:
    result = run("report", parquet_log, "--prob", "score", "--label", "y", cwd=tmp_path)
    line = assert_one_line_error(result, 1)
    assert "'score'" in line
    result = run(
        "report", parquet_log, "--prob", "p", "--label", "y", "--by", "region", cwd=tmp_path
    )
    assert "'region'" in assert_one_line_error(result, 1)


def test_bad_data_is_a_one_line_data_error(tmp_path: Path, log: pl.DataFrame) -> None:
    path = tmp_path / "bad.parquet"
    log.with_columns(p=pl.col("p") * 2).write_parquet(path)
    result = run("report", path, "--prob", "p", "--label", "y", cwd=tmp_path)
    assert "outside [0, 1]" in assert_one_line_error(result, 1)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.parquet", None, "no such file"),
        ("corrupt.parquet", b"not parquet", "parquet"),
        ("log.json", b"{}", "cannot tell the format"),
    ],
)
def test_unreadable_input(tmp_path: Path, name: str, content: bytes | None, message: str) -> None:
    if content is not None:
        (tmp_path / name).write_bytes(content)
    result = run("report", tmp_path / name, "--prob", "p", "--label", "y", "-q", cwd=tmp_path)
    assert message in assert_one_line_error(result, 1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--bins", "0"], "--bins"),
        (["--strategy", "kmeans"], "--strategy"),
        (["--time", "ts"], "--time and --every"),
        (["--time", "ts", "--every", "fortnight"], "--every"),
        (["--time", "ts", "--every", "0d"], "--every"),
        (["--bins", "10001"], "at most 10000"),
        (["--bins", "1001", "--strategy", "quantile"], "at most 1_000 with strategy='quantile'"),
        (["--metrics", "ece,auc"], "'auc'"),
        (["--no-such-option"], "unrecognized arguments"),
    ],
)
def test_bad_option_is_a_one_line_usage_error(
    tmp_path: Path, parquet_log: Path, options: list[str], message: str
) -> None:
    result = run("report", parquet_log, "--prob", "p", "--label", "y", *options, cwd=tmp_path)
    assert message in assert_one_line_error(result, 2)


def test_missing_required_option_and_command(tmp_path: Path, parquet_log: Path) -> None:
    no_label = run("report", parquet_log, "--prob", "p", cwd=tmp_path)
    assert "--label" in assert_one_line_error(no_label, 2)
    assert "COMMAND" in assert_one_line_error(run(cwd=tmp_path), 2)


def test_without_plot_extra_the_image_is_skipped(tmp_path: Path, parquet_log: Path) -> None:
    # Shadow the plotting libraries with modules that fail to import.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    for module in ("altair", "matplotlib", "vl_convert"):
        (shadow / f"{module}.py").write_text("raise ImportError('shadowed for a test')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    out = tmp_path / "out"
    result = run(
        "report", parquet_log, "--prob", "p", "--label", "y", "--out", out, cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "polars-calib: note: skipped reliability.png" in result.stderr
    assert "pip install 'polars_calib[plot]'" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "reliability.csv",
        "summary.csv",
        "summary.parquet",
    ]


def test_without_jinja2_the_page_is_a_one_line_error(tmp_path: Path, parquet_log: Path) -> None:
    # The page is rendered from a template (Jinja2, in the plot extra; Altair needs it
    # too): without it, one line naming the extra, no traceback (before: an ImportError's
    # traceback), and no page.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "jinja2.py").write_text("raise ImportError('shadowed for a test')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    page = tmp_path / "page.html"
    result = run(
        "report", parquet_log, "--prob", "p", "--label", "y", "--html", page, cwd=tmp_path, env=env
    )
    error = assert_one_line_error(result, 1)
    assert "pip install 'polars_calib[plot]'" in error
    assert not page.exists()


def test_help_and_version(tmp_path: Path) -> None:
    result = run("report", "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "--prob" in result.stdout and "--every" in result.stdout
    version = run("--version", cwd=tmp_path)
    assert version.stdout.strip() == f"polars-calib {pc.__version__}"


def test_probability_vectors_with_a_reduction(tmp_path: Path) -> None:
    log = pl.DataFrame(
        {
            "model": ["a", "a", "a", "a", "b", "b", "b"],
            "probs": [
                [0.25, 0.20, 0.55],
                [0.55, 0.05, 0.40],
                [0.10, 0.30, 0.60],
                [0.90, 0.05, 0.05],
                [0.70, 0.20, 0.10],
                [0.20, 0.50, 0.30],
                [0.30, 0.30, 0.40],
            ],
            "y": [0, 1, 2, 0, 0, 1, 1],
        }
    )
    log.write_parquet(tmp_path / "vectors.parquet")
    result = run(
        "report",
        "vectors.parquet",
        "--prob",
        "probs",
        "--label",
        "y",
        "--by",
        "model",
        "--bins",
        "3",
        "--reduction",
        "classwise",
        "--out",
        "out",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    written = pl.read_parquet(tmp_path / "out" / "summary.parquet")
    expected = log.calib.summary("probs", "y", by="model", n_bins=3, reduction="classwise")
    assert_frame_equal(written, expected, rel_tol=0.0, abs_tol=1e-15)
    assert written["classwise_ece"][0] == pytest.approx(0.191667, abs=1e-6)  # torchmetrics' example
    table = pl.read_csv(tmp_path / "out" / "reliability.csv")
    assert "class" not in table.columns  # the confidence reliability table


# --------------------------------------------------------------------------
# Never over an input; every write atomic (a temporary name, then a rename)
# --------------------------------------------------------------------------


def run_main(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """Run the command line in this process (fast); return its exit code and stderr."""
    from polars_calib.cli import main

    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().err


def one_error(err: str) -> str:
    """The one error line of stderr (no traceback, only progress lines before it)."""
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    assert lines and lines[-1].startswith("polars-calib: error: "), err
    assert all(line.startswith("polars-calib: ") for line in lines), err
    return lines[-1]


def contents(directory: Path) -> dict[str, bytes]:
    """Every file below `directory` and its bytes, hidden files included."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def calibrator_file(tmp_path: Path, log: pl.DataFrame) -> Path:
    return pc.fit_calibrator(log, "p", "y", by="model").save(tmp_path / "cal.json")


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink", "calibrator"])
def test_apply_refuses_an_out_that_is_an_input(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    parquet_log: Path,
    calibrator_file: Path,
    link: str,
) -> None:
    out = tmp_path / "scored.parquet"
    if link == "same":
        out = parquet_log
    elif link == "symlink":
        out.symlink_to(parquet_log)
    elif link == "hardlink":
        out.hardlink_to(parquet_log)
    else:
        out = calibrator_file
    before = contents(tmp_path)
    code, err = run_main(
        capsys, "apply", parquet_log, "--calibrator", calibrator_file, "--prob", "p", "--out", out
    )
    assert code == 2
    assert "would write over the input" in one_error(err)
    assert contents(tmp_path) == before


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_fit_and_html_refuse_to_write_over_the_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parquet_log: Path, link: str
) -> None:
    out = {"same": parquet_log, "symlink": tmp_path / "l", "hardlink": tmp_path / "h"}[link]
    if link == "symlink":
        out.symlink_to(parquet_log)
    elif link == "hardlink":
        out.hardlink_to(parquet_log)
    before = contents(tmp_path)
    common = [parquet_log, "--prob", "p", "--label", "y", "-q"]
    for argv in (["fit", *common, "--out", out], ["report", *common, "--html", out]):
        code, err = run_main(capsys, *argv)
        assert code == 2
        assert "would write over the input" in one_error(err)
        assert contents(tmp_path) == before


@pytest.mark.parametrize("command", ["report", "audit"])
def test_an_out_directory_holding_the_input_is_refused(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    log: pl.DataFrame,
    command: str,
) -> None:
    # `report summary.parquet --out .` and `audit slices.parquet --out .`: the input is
    # one of the files the command writes; then the input's directory, a link to the
    # input inside --out, and --out inside a directory of parquet files.
    name = "summary.parquet" if command == "report" else "slices.parquet"
    monkeypatch.chdir(tmp_path)
    log.write_parquet(name)
    parts = tmp_path / "parts"
    parts.mkdir()
    log.write_parquet(parts / "part-0.parquet")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / name).hardlink_to(name)
    before = contents(tmp_path)
    extra = ["--by", "segment", "--resamples", "0"] if command == "audit" else []
    cases = [(name, "."), (name, str(tmp_path)), (name, "linked"), ("parts", "parts/report")]
    for source, out in cases:
        argv = [command, source, "--prob", "p", "--label", "y", *extra, "--out", out]
        code, err = run_main(capsys, *argv)
        assert code == 2, (source, out)
        assert "would write over the input" in one_error(err)
        assert contents(tmp_path) == before


def test_an_out_directory_with_other_files_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parquet_log: Path
) -> None:
    out = tmp_path / "results"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, err = run_main(
        capsys, "report", parquet_log, "--prob", "p", "--label", "y", "-q", "--out", out
    )
    assert code == 2
    assert "'notes.txt'" in one_error(err) and "new or empty directory" in err
    assert contents(out) == {"notes.txt": b"mine"}


def test_an_out_over_a_glob_or_directory_input_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, log: pl.DataFrame, calibrator_file: Path
) -> None:
    # The input's files are those a glob matches or a directory holds: an output that
    # is one of them, or a directory holding them, would write over the input.
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(2):
        log.write_parquet(parts / f"part-{i}.parquet")
    before = contents(tmp_path)
    matched = str(parts / "*.parquet")
    scores = ["--calibrator", calibrator_file, "--prob", "p", "--out", parts / "part-1.parquet"]
    tables = ["--prob", "p", "--label", "y", "-q", "--out", tmp_path]
    for argv in (
        ["apply", matched, *scores],
        ["report", matched, *tables],
        ["report", parts, *tables],
    ):
        code, err = run_main(capsys, *argv)
        assert code == 2, argv
        assert "would write over the input" in one_error(err)
        assert contents(tmp_path) == before


def test_a_report_directory_is_replaced_whole(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    parquet_log: Path,
) -> None:
    for module in ("altair", "matplotlib"):  # no chart (quicker): the tables are enough
        monkeypatch.setitem(sys.modules, module, None)
    out = tmp_path / "out"
    out.mkdir()
    (out / "over_time.png").write_bytes(b"a previous run's chart")
    code, err = run_main(
        capsys, "report", parquet_log, "--prob", "p", "--label", "y", "-q", "--out", out
    )
    assert code == 0, err
    # The previous run's chart of windows is gone with its run, not left beside new tables.
    assert sorted(p.name for p in out.iterdir()) == [
        "reliability.csv",
        "summary.csv",
        "summary.parquet",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.parquet", "out"]


def test_report_out_may_be_a_new_nested_directory(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    parquet_log: Path,
) -> None:
    for module in ("altair", "matplotlib"):  # no chart (quicker): the tables are enough
        monkeypatch.setitem(sys.modules, module, None)
    out = tmp_path / "runs" / "2026" / "today"  # none exists yet: all are made
    code, err = run_main(
        capsys, "report", parquet_log, "--prob", "p", "--label", "y", "-q", "--out", out
    )
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        "reliability.csv",
        "summary.csv",
        "summary.parquet",
    ]
    assert sorted(p.name for p in out.parent.iterdir()) == ["today"]  # no leftovers


def test_an_out_directory_holding_the_working_directory_is_refused(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    parquet_log: Path,
) -> None:
    for module in ("altair", "matplotlib"):
        monkeypatch.setitem(sys.modules, module, None)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.csv").write_text("a previous run's table")
    before = contents(tmp_path)
    monkeypatch.chdir(out)  # replacing `.` would delete the working directory
    code, err = run_main(
        capsys, "report", parquet_log, "--prob", "p", "--label", "y", "-q", "--out", "."
    )
    assert code == 1
    assert "holds the working directory" in one_error(err)
    assert contents(tmp_path) == before and Path.cwd() == out


class _FullDisk(types.ModuleType):
    """A plotting library whose every use fails as a full disk would."""

    def __getattr__(self, name: str) -> object:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_report_leaves_the_previous_directory(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    parquet_log: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name in ("summary.csv", "reliability.csv", "reliability.png"):
        (out / name).write_bytes(b"previous run")
    before = contents(tmp_path)
    # The tables are written, then drawing the diagram fails.
    monkeypatch.setitem(sys.modules, "altair", _FullDisk("altair"))
    code, err = run_main(
        capsys, "report", parquet_log, "--prob", "p", "--label", "y", "-q", "--out", out
    )
    assert code == 1
    assert "No space left on device" in one_error(err)
    assert contents(tmp_path) == before  # no new table beside the old diagram, no leftovers


def test_a_failed_apply_leaves_no_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, log: pl.DataFrame, calibrator_file: Path
) -> None:
    # The CSV's schema is inferred from its first rows; a bad value far down fails the
    # stream after the parquet file was opened.
    bad = log.with_columns(pl.col("p").cast(pl.String))
    bad = bad.with_columns(
        p=pl.when(pl.int_range(pl.len()) == 1_000).then(pl.lit("oops")).otherwise("p")
    )
    bad.write_csv(tmp_path / "live.csv")
    out = tmp_path / "scored.parquet"
    out.write_bytes(b"previous run")
    before = contents(tmp_path)
    code, err = run_main(
        capsys,
        "apply",
        tmp_path / "live.csv",
        "--calibrator",
        calibrator_file,
        "--prob",
        "p",
        "--out",
        out,
        "-q",
    )
    assert code == 1
    assert "oops" in one_error(err)
    assert contents(tmp_path) == before


def test_apply_refuses_to_replace_a_column_unless_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parquet_log: Path, calibrator_file: Path
) -> None:
    common = ["apply", parquet_log, "--calibrator", calibrator_file, "--prob", "p", "-q"]
    out = tmp_path / "scored.parquet"
    for column in ("p", "model"):
        code, err = run_main(capsys, *common, "--column", column, "--out", out)
        assert code == 2
        assert f"already has a column {column!r}" in one_error(err) and "--replace" in err
        assert not out.exists()
    code, err = run_main(capsys, *common, "--column", "p", "--replace", "--out", out)
    assert code == 0, err
    expected = pl.read_parquet(parquet_log).with_columns(
        p=pc.load_calibrator(calibrator_file).expr("p")
    )
    assert_frame_equal(pl.read_parquet(out), expected)


def test_progress_on_request_has_elapsed_times(
    capsys: pytest.CaptureFixture[str], parquet_log: Path
) -> None:
    common = ["report", parquet_log, "--prob", "p", "--label", "y", "--metrics", "ece"]
    code, err = run_main(capsys, *common)
    assert code == 0
    # Not a terminal: the stages alone, as a log file reads them.
    assert err.splitlines()[0] == f"polars-calib: scanning {parquet_log}"
    assert "done" not in err
    code, err = run_main(capsys, *common, "--progress")
    assert code == 0
    lines = err.splitlines()
    assert lines[0].startswith("polars-calib: [0:0") and lines[0].endswith(
        " scanning " + str(parquet_log)
    )
    assert lines[-1].startswith("polars-calib: [0:") and lines[-1].endswith("] done")
    assert run_main(capsys, *common, "--progress", "-q") == (0, "")


def test_progress_estimates_a_pass_from_the_passes_before(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    parquet_log: Path,
) -> None:
    for module in ("altair", "matplotlib"):  # no chart (quicker)
        monkeypatch.setitem(sys.modules, module, None)
    # Quantile bins per day: the whole-log reliability table needs a second pass.
    code, err = run_main(
        capsys,
        *["report", parquet_log, "--prob", "p", "--label", "y", "--metrics", "ece"],
        *["--time", "ts", "--every", "1d", "--strategy", "quantile", "--progress"],
        *["--out", tmp_path / "out"],
    )
    assert code == 0, err
    (line,) = [line for line in err.splitlines() if "second pass" in line]
    assert line.endswith(" for 1 pass)") and "(about 0:0" in line


def test_progress_counts_the_audit_passes_with_what_is_left(
    capsys: pytest.CaptureFixture[str], parquet_log: Path
) -> None:
    # 128 replicates: two chunks of 64, each a pass over the log (the audit's `progress`);
    # the first step says what is left, the last one says it is done.
    args = ["audit", parquet_log, "--prob", "p", "--label", "y", "--by", "segment"]
    args += ["--within", "model", "--resamples", "128", "--metrics", "ece"]
    code, err = run_main(capsys, *args, "--progress")
    assert code == 0, err
    steps = [line for line in err.splitlines() if "replicates:" in line]
    assert steps[0].endswith(" replicates: 1 of 2 (about " + steps[0].split("about ")[1])
    assert steps[0].startswith("polars-calib: [0:") and steps[0].endswith(" left)")
    assert steps[-1].endswith(" replicates: 2 of 2")
    # Not on request and not a terminal: no step lines.
    code, err = run_main(capsys, *args)
    assert code == 0 and "replicates:" not in err


@pytest.mark.slow
def test_quiet_spark_prints_nothing_on_stderr(tmp_path: Path, parquet_log: Path) -> None:
    # A fresh process: Spark's JVM starts under --quiet (its log, pandas' warnings).
    pytest.importorskip("pyspark", reason="the spark extra (pyspark) is not installed")
    argv = ["report", parquet_log, "--prob", "p", "--label", "y", "--by", "model"]
    result = subprocess.run(
        [sys.executable, "-m", "polars_calib", *map(str, argv), "--engine", "spark", "-q"],
        capture_output=True,
        text=True,
        timeout=600,  # a JVM starting on a busy machine
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "baseline" in result.stdout


def test_header_only_csv_is_a_clear_error(tmp_path: Path) -> None:
    # It was read as String columns: "column 'p' holds String, but a probability must be numeric".
    (tmp_path / "empty.csv").write_text("p,y\n")
    result = run("report", tmp_path / "empty.csv", "--prob", "p", "--label", "y", cwd=tmp_path)
    assert "holds no rows (a CSV header only)" in assert_one_line_error(result, 1)


@pytest.mark.parametrize("engine", ["dask", "spark"])
@pytest.mark.parametrize("source", ["nothing/*.parquet", "missing.parquet"])
def test_engine_log_not_found(tmp_path: Path, engine: str, source: str) -> None:
    # Dask said "column 'p' is missing" for a glob without files (checked before any engine).
    result = run("report", source, "--prob", "p", "--label", "y", "--engine", engine, cwd=tmp_path)
    message = assert_one_line_error(result, 1)
    assert message.endswith(f"no file matches {source!r}" if "*" in source else f"{source!r}")


@pytest.mark.parametrize("command", [["audit", "--by", "segment"], ["fit"]])
def test_bins_bounded_in_every_command(tmp_path: Path, command: list[str]) -> None:
    args = [command[0], "log.parquet", "--prob", "p", "--label", "y", *command[1:]]
    result = run(*args, "--bins", "100000", cwd=tmp_path)
    assert "argument --bins: must be at most 10000" in assert_one_line_error(result, 2)


def test_report_metrics_take_the_function_names(
    tmp_path: Path, parquet_log: Path, log: pl.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--metrics`` takes the tests and decompositions by the names ``summary`` takes."""
    names = "ece,calibration_loss,refinement_loss,spiegelhalter_p"
    args = ["report", parquet_log, "--prob", "p", "--label", "y", "--by", "model"]
    code, err = run_main(capsys, *args, "--metrics", names, "--out", tmp_path / "out", "--quiet")
    assert (code, err) == (0, "")
    expected = pc.summary(log, "p", "y", by="model", metrics=names.split(","))  # type: ignore[arg-type]
    got = pl.read_parquet(tmp_path / "out" / "summary.parquet")
    assert_frame_equal(got, expected, check_dtypes=False)
    code, err = run_main(capsys, *args, "--metrics", "brier_calibration_loss", "--quiet")
    assert code == 2 and "unknown metric 'brier_calibration_loss'" in err
