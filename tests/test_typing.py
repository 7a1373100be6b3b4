"""The package type-checks under mypy --strict, and so does the typed `pc.col` path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


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


def test_package_ships_py_typed() -> None:
    assert (ROOT / "polars_calib" / "py.typed").exists()
