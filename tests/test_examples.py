"""The example scripts run from any working directory and print what they promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HAS_PLOT

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"


def run_example(name: str, *args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def test_daily_ece_per_model(tmp_path: Path) -> None:
    out = run_example("daily_ece_per_model.py", cwd=tmp_path)
    assert "Daily summary per model" in out
    assert "summary() and the expression agree on 60 model-days" in out
    assert "2024-03-30" in out  # every one of the 30 days is printed


def test_compare_models(tmp_path: Path) -> None:
    out = run_example("compare_models.py", str(tmp_path / "out"), cwd=tmp_path)
    assert "gap_baseline" in out and "gap_candidate" in out
    assert "candidate: 5 bins under-predict, 5 over-predict" in out
    png = tmp_path / "out" / "compare_models.png"
    if HAS_PLOT:
        assert png.stat().st_size > 0
        assert f"written to {png}" in out
    else:
        assert "No diagram" in out


def test_segment_slicing(tmp_path: Path) -> None:
    out = run_example("segment_slicing.py", cwd=tmp_path)
    assert "ECE per slice with `over`" in out
    assert "baseline / segment C" in out  # the slice the log was built to hide


@pytest.mark.slow
def test_readme_python_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("altair")
    readme = (ROOT / "README.md").read_text()
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for block in re.findall(r"```python\n(.*?)```", readme, re.S):
        exec(block, namespace)  # the README's own code
    assert (tmp_path / "reliability.png").exists()
