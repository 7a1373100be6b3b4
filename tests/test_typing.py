"""The package type-checks under mypy --strict, and so does the typed `pc.col` path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_mypy_strict_passes_on_the_package_and_the_typed_path() -> None:
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "polars_calib", "tests/typed_usage.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_pyright_basic_passes_on_the_package() -> None:
    pytest.importorskip("pyright")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--pythonpath",
            sys.executable,
            "polars_calib",
            "tests/typed_usage.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_typo_in_an_option_fails_the_type_check(tmp_path: Path) -> None:
    # Options are Literal types: `norm="l3"` is a type error, not only a runtime one.
    pytest.importorskip("mypy")
    bad = tmp_path / "typo.py"
    bad.write_text('import polars_calib as pc\npc.ece("p", "y", norm="l3")\n')
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1 and "norm" in result.stdout, result.stdout


FRAME_TYPOS = """\
import polars as pl

import polars_calib as pc

df = pl.DataFrame({"p": [0.2], "y": [0]})
pc.frame(df).summary("p", "y", strategy="quantile", n_bins=10)
pc.frame(df).summary("p", "y", strategy="quantle")
pc.frame(df.lazy()).summary("p", "y", n_bin=10)
"""
"""A correct call through `pc.frame` (line 6), then a mistyped option and keyword."""


@pytest.mark.slow
def test_a_typo_through_pc_frame_fails_mypy_and_pyright(tmp_path: Path) -> None:
    # `df.calib` is invisible to type checkers; `pc.frame(df)` sees every option.
    pytest.importorskip("mypy")
    pytest.importorskip("pyright")
    bad = tmp_path / "frame_typo.py"
    bad.write_text(FRAME_TYPOS)
    checkers = {
        "mypy": [sys.executable, "-m", "mypy", "--strict", str(bad)],
        "pyright": [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, str(bad)],
    }
    for checker, command in checkers.items():
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
        errors = [x for x in result.stdout.splitlines() if f"{bad.name}:" in x and "error" in x]
        lines = sorted({int(x.split(f"{bad.name}:")[1].split(":")[0]) for x in errors})
        assert result.returncode == 1 and lines == [7, 8], (checker, result.stdout)
        assert "quantle" in result.stdout and "n_bin" in result.stdout, (checker, result.stdout)


def test_package_ships_py_typed() -> None:
    assert (ROOT / "polars_calib" / "py.typed").exists()
