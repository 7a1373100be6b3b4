"""Files the package writes: atomic (a temporary name, then a rename), with usual permissions.

The command line's side (never over an input, report directories replaced whole) is in
``test_cli.py``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc


@pytest.fixture(scope="module")
def page() -> pc.HtmlReport:
    """A page as :func:`polars_calib.html_report` returns it (its tables are not written)."""
    html = "<!DOCTYPE html>\n<html><body><p>Calibration report</p></body></html>\n"
    return pc.HtmlReport(html, pl.DataFrame(), pl.DataFrame(), None, ())


def test_a_failed_page_write_leaves_the_previous_page(tmp_path: Path, page: pc.HtmlReport) -> None:
    path = page.save(tmp_path / "report.html")
    previous = path.read_bytes()
    # A lone surrogate cannot be encoded: the write fails after its file is opened.
    broken = dataclasses.replace(page, html=page.html.replace("</body>", "\ud800</body>"))
    with pytest.raises(UnicodeEncodeError):
        broken.save(path)
    assert path.read_bytes() == previous
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary left
    with pytest.raises(UnicodeEncodeError):
        broken.save(tmp_path / "new.html")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no partial page


def test_written_files_have_the_usual_permissions(tmp_path: Path, page: pc.HtmlReport) -> None:
    umask = os.umask(0o022)
    try:
        written = page.save(tmp_path / "report.html")
    finally:
        os.umask(umask)
    # As a plain open() would create it (a temporary file is private by default).
    assert written.stat().st_mode & 0o777 == 0o644


def test_saving_through_a_symlink_replaces_its_target(tmp_path: Path, page: pc.HtmlReport) -> None:
    target = tmp_path / "target.html"
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    page.save(link)
    assert link.is_symlink() and target.read_text(encoding="utf-8") == page.html


def test_apply_refuses_to_replace_a_column_unless_asked() -> None:
    train = pl.DataFrame(
        {"g": [0, 1] * 20, "p": [0.1, 0.3, 0.5, 0.7, 0.9] * 8, "y": [0, 1, 1, 0] * 10}
    )
    cal = pc.fit_calibrator(train, "p", "y", by="g")
    live = pl.DataFrame({"g": [0, 1], "p": [0.2, 0.8], "p_calibrated": [1.0, 1.0]})
    for alias in ("p", "g", None):  # the probabilities, a key, the default name
        with pytest.raises(ValueError, match=f"already has a column '{alias or 'p_calibrated'}'"):
            cal.apply(live, "p", alias=alias)
        with pytest.raises(ValueError, match="replace=True"):
            cal.apply(live.lazy(), "p", alias=alias)
    replaced = cal.apply(live, "p", alias="p", replace=True)
    assert_frame_equal(replaced, live.with_columns(p=cal.expr("p")))
