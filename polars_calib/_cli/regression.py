"""``polars-calib report`` of a regression log: the summary, the curve, the PIT
histogram, the page."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, TextIO

import polars as pl

from polars_calib._cli.arguments import PROG
from polars_calib._cli.files import PLOT_EXTRA, read_engine, replaced, save_chart, scan
from polars_calib._cli.progress import Progress, silenced, table_config
from polars_calib._cli.regression_options import RegressionOptions
from polars_calib._cli.report_outputs import (
    SMALL_GROUP,
    check_report_outputs,
    report_files,
    save_page,
)
from polars_calib._frames.regression import (
    validate_regression_statistics,
)
from polars_calib._plot.regression import plot_pit_histogram, plot_quantile_reliability
from polars_calib._report.regression import (
    PIT_FORMS,
    RegressionRequest,
    regression_html_report,
)
from polars_calib._report.regression_page import CURVE_NAMES, pit_bars
from polars_calib._report.sections import layout


def regression_report(options: RegressionOptions, stdout: TextIO, stderr: TextIO) -> None:
    """Run ``polars-calib report`` with the regression form: print the summary, write outputs.

    The log's statistics are computed once (:func:`polars_calib.regression_statistics`,
    by Polars or the engine) and finished into the printed summary
    (:func:`polars_calib.regression_metrics_from_statistics`), the calibration curve
    (:func:`polars_calib.quantile_reliability_from_statistics`), the PIT histogram and
    the HTML page (:func:`polars_calib.regression_html_report`): the log is read once.
    """
    check_report_outputs(options)
    progress = Progress(stderr, quiet=options.quiet, detailed=options.progress)
    if options.engine is not None:
        progress(
            f"computing the statistics with {options.engine} (one pass over the log)...", passes=1
        )
        with silenced(options.quiet):
            data, schema = read_engine(options.engine, options.log)
    else:
        progress(f"scanning {options.log}")
        data, schema = scan(options.log), None
        progress("computing the statistics (one pass over the log)...", passes=1)
    request = options.request(data)
    stats = _regression_statistics(request, options)
    # A plan of the request's grid: a table without binned rows (an empty log) has a summary.
    table = request.summary(stats, options.keys).collect()
    with table_config():
        print(table, file=stdout, flush=True)
    if options.out is not None:
        _write_regression_outputs(options, options.out, request, table, stats, progress, stderr)
    if options.html is not None:
        polars = data if isinstance(data, pl.LazyFrame) else pl.LazyFrame(schema=schema)
        _write_regression_html(options, polars, stats, progress, stderr)
    progress.done()


def _regression_statistics(request: RegressionRequest, options: RegressionOptions) -> pl.DataFrame:
    """The regression statistics table of the log, per `--by` key and window.

    The engine's frame gives it checked; a Polars scan is collected, and its refused
    rows raise (counted by reading the log again, only then), as a DataFrame's do.
    """
    with silenced(options.quiet and options.engine is not None):
        stats = request.statistics()
    if isinstance(stats, pl.DataFrame):  # the engine's
        return stats
    plan: pl.LazyFrame = stats
    return validate_regression_statistics(
        plan.collect(),
        request.data,
        options.target,
        **request.prediction.kwargs(),
        by=options.by,
        time=options.time,
        every=options.every,
        weight=options.weight,
    )


def _write_regression_outputs(
    options: RegressionOptions,
    out: Path,
    request: RegressionRequest,
    table: pl.DataFrame,
    stats: pl.DataFrame,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write ``--out``'s files of the regression form: the summary, the calibration curve
    and its diagram (not for central intervals, whose summary per level is their curve),
    the PIT histogram (the forms with a PIT), replacing `out` whole (as the
    classification's)."""
    planned = request.curves(stats)  # per `--by` key: the windows summed
    curve = None if planned is None else planned.collect()
    name = Path(options.log).name
    # The windows summed; panels as the diagram's default (the last key's, up to 4 values).
    colours, facet = layout(stats, options.by, least=2)
    charts: dict[str, Any] = {}
    if curve is not None:
        charts["reliability.png"] = functools.partial(
            plot_quantile_reliability,
            curve,
            title=f"{CURVE_NAMES[request.drawn_curve].capitalize()} calibration of "
            f"{options.target} ({name})",
        )
    if request.prediction.kind in PIT_FORMS:
        charts["pit_histogram.png"] = functools.partial(
            plot_pit_histogram,
            stats,
            by=colours,
            facet=facet,
            n_bins=pit_bars(2 * (options.n_levels - 1)),
            title=f"PIT histogram of {options.target} ({name})",
        )
    with replaced(out, report_files(options)) as staging:
        written = "summary.parquet" + (", reliability.csv" if curve is not None else "")
        progress(f"writing {out / 'summary.csv'}, {written}")
        table.write_csv(staging / "summary.csv")
        table.write_parquet(staging / "summary.parquet")
        if curve is not None:
            curve.write_csv(staging / "reliability.csv")
        if not int(stats.filter(pl.col("bin").is_not_null()).get_column("count").sum()):
            print(f"{PROG}: note: no usable row: no charts", file=stderr)
            return
        for file, plot in charts.items():
            progress(f"drawing {out / file}")
            if save_chart(plot, staging / file) is None:
                print(f"{PROG}: note: skipped {file} ({PLOT_EXTRA})", file=stderr)


def _write_regression_html(
    options: RegressionOptions,
    data: pl.LazyFrame,
    stats: pl.DataFrame,
    progress: Progress,
    stderr: TextIO,
) -> None:
    """Write the HTML report of ``--html`` (:func:`polars_calib.regression_html_report`)
    from the summary's statistics: the page reads no row."""
    assert options.html is not None
    progress("laying out the HTML report...")
    page = regression_html_report(
        data,
        options.target,
        **options.prediction,
        by=options.by,
        time=options.time,
        every=options.every,
        n_levels=options.n_levels,
        weight=options.weight,
        metrics=options.metrics,
        curve=options.curve,
        confidence=options.confidence,
        min_count=SMALL_GROUP,
        source=options.log,
        statistics=stats,
    )
    save_page(page, options.html, progress, stderr)
