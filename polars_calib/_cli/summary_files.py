"""``report --out``'s files of a classification log: the tables and the charts."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TextIO

import polars as pl

from polars_calib._cli.arguments import PROG
from polars_calib._cli.files import PLOT_EXTRA, replaced, save_chart
from polars_calib._cli.progress import Progress
from polars_calib._cli.report_options import ReportOptions
from polars_calib._cli.report_outputs import report_files
from polars_calib._plot.over_time import plot_metric_over_time
from polars_calib._plot.reliability import plot_reliability


def write_outputs(
    options: ReportOptions,
    out: Path,
    table: pl.DataFrame,
    reliability: pl.DataFrame,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write ``--out``'s files: the summary, the reliability table and the charts.

    They are written to a new directory beside `out`, which replaces `out` whole
    once every file is written: a failed or killed run leaves the previous outputs.
    """
    with replaced(out, report_files(options)) as staging:
        progress(f"writing {out / 'summary.csv'}, summary.parquet, reliability.csv")
        table.write_csv(staging / "summary.csv")
        table.write_parquet(staging / "summary.parquet")
        reliability.write_csv(staging / "reliability.csv")
        progress(f"drawing {out / 'reliability.png'}")
        title = f"Reliability diagram of {options.prob} ({Path(options.log).name})"
        if draw_png(reliability, staging / "reliability.png", title) is None:
            print(
                f"{PROG}: note: skipped reliability.png (the plot extra is not installed: "
                f"{PLOT_EXTRA})",
                file=stderr,
            )
        if options.time is not None and options.interval is not None:
            bounded = next(name for name in table.columns if name.endswith("_lower"))
            metric = bounded.removesuffix("_lower")
            progress(f"drawing {out / 'over_time.png'}")
            if draw_over_time(table, metric, options, staging / "over_time.png") is None:
                print(f"{PROG}: note: skipped over_time.png ({PLOT_EXTRA})", file=stderr)


def draw_png(table: pl.DataFrame, path: Path, title: str) -> str | None:
    """Draw the reliability diagram to `path` with Altair (vl-convert), else matplotlib.

    The layout is :func:`polars_calib.plot_reliability`'s default for the table's keys
    (the `--by` keys). Returns the backend used, or None when neither can write a
    PNG here.
    """
    return save_chart(functools.partial(plot_reliability, table, title=title), path)


def draw_over_time(
    table: pl.DataFrame, metric: str, options: ReportOptions, path: Path
) -> str | None:
    """Draw `metric` over the time windows with its interval, Altair else matplotlib."""
    title = f"{metric} per {options.every} window ({Path(options.log).name})"
    assert options.time is not None
    # The Python default's layout, as the HTML report's chart.
    plot = functools.partial(plot_metric_over_time, table, metric, options.time, title=title)
    return save_chart(plot, path)
