"""What ``report`` writes, in both forms: its output directory's files and its HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from polars_calib._cli.arguments import PROG, DataError, UsageError
from polars_calib._cli.files import PLOT_EXTRA, check_output_directory, check_output_file
from polars_calib._cli.progress import Progress
from polars_calib._cli.regression_options import RegressionOptions
from polars_calib._cli.report_options import ReportOptions
from polars_calib._report.report import HtmlReport

REPORT_FILES = (
    "summary.csv",
    "summary.parquet",
    "reliability.csv",
    "reliability.png",
    "pit_histogram.png",
    "over_time.png",
)
"""The files of ``report --out DIR``: the directory may hold only these (it is replaced whole)."""


SMALL_GROUP = 100
"""Slices of ``report --audit`` with fewer rows are flagged too small (the page's
`min_count`, under which its groups are noted as too small)."""


def report_files(options: ReportOptions | RegressionOptions) -> list[str]:
    """What ``--out DIR`` may hold: the report's files, and the ``--html`` page's entry."""
    owned: list[str] = list(REPORT_FILES)
    if options.out is not None and options.html is not None:
        out, page = Path(options.out).resolve(), Path(options.html).resolve()
        if page.is_relative_to(out):
            owned.append(page.relative_to(out).parts[0])
    return owned


def check_report_outputs(options: ReportOptions | RegressionOptions) -> None:
    """Refuse outputs that would write over the log, or over each other."""
    if options.out is not None:
        check_output_directory("--out", options.out, report_files(options), [options.log])
    if options.html is not None:
        check_output_file("--html", options.html, [options.log])
        page = Path(options.html).resolve()
        inside = options.out is not None and page.parent == Path(options.out).resolve()
        if inside and page.name in REPORT_FILES:
            msg = f"argument --html: {str(options.html)!r} is one of the --out files"
            raise UsageError(msg)


def save_page(page: HtmlReport, path: Path, progress: Progress, stderr: TextIO) -> None:
    """Write the page of ``--html`` to `path` (atomically), and say if it has no charts."""
    progress(f"writing {path}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        page.save(path)
    except OSError as error:
        msg = f"cannot write {str(path)!r}: {error.strerror}"
        raise DataError(msg) from error
    if any(note.startswith("No charts") for note in page.notes):
        print(
            f"{PROG}: note: {path} has no charts (the plot extra is not installed: {PLOT_EXTRA})",
            file=stderr,
        )
