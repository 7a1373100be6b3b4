"""The HTML report of regression predictions: :func:`regression_html_report`.

The page of a log of Gaussian predictions (a mean and a standard deviation column),
laid out as :func:`~polars_calib.html_report`'s page from the public regression API:
one statistics table (:func:`~polars_calib.regression_statistics`, per `by` key and
time window), finished into the summary per window and over the whole log
(:func:`~polars_calib.regression_metrics_from_statistics`, the windows summed: the
level grid is fixed, so the table always merges) and the calibration curve
(:func:`~polars_calib.quantile_reliability_from_statistics`); the PIT histogram is
drawn from the table itself (:func:`~polars_calib.plot_pit_histogram`).

The prediction form is given by keyword (``mean=``, ``std=``) and travels as one
:class:`Prediction` to every call of the public API, so that the other forms
(``quantiles=``/``levels=``, ``lower=``/``upper=``, ``ensemble=``) join by adding
their fields to it and to the signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.options import (
    CURVES,
    GAUSSIAN_METRICS,
    Curve,
    RegressionMetric,
    check_choice,
    check_confidence,
    check_n_levels,
)
from polars_calib._core.validation import CalibrationDataError
from polars_calib._frames.regression import (
    quantile_reliability_from_statistics,
    regression_metrics_from_statistics,
    regression_statistics,
    validate_regression_statistics,
)
from polars_calib._report.model import Tables
from polars_calib._report.regression_page import RegressionSettings, render_regression
from polars_calib._report.report import SMALL_GROUP, HtmlReport
from polars_calib._report.tables import key_names

__all__ = ["REGRESSION_TITLE", "Prediction", "regression_html_report"]

REGRESSION_TITLE = "Calibration report of regression predictions"

REGRESSION_METRICS: tuple[RegressionMetric, ...] = GAUSSIAN_METRICS
"""The report's metrics: the Gaussian form's (the only form it reads yet)."""
"""The page's default metrics: every metric :func:`~polars_calib.regression_summary` computes."""


@dataclass(frozen=True)
class Prediction:
    """The prediction form's columns, by the keyword the public API takes them with."""

    mean: str
    std: str

    def kwargs(self) -> dict[str, Any]:
        """The form as keyword arguments of the public regression functions."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    def describe(self) -> str:
        """The form's columns in words, for the page's header."""
        return f"mean {self.mean}, standard deviation {self.std}"


@dataclass(frozen=True)
class RegressionRequest:
    """What a regression report is asked for: the log, its columns and the options."""

    data: pl.DataFrame | pl.LazyFrame
    target: str
    prediction: Prediction
    by: Keys
    time: str | None
    every: str | None
    n_levels: int
    weight: str | None
    metrics: tuple[RegressionMetric, ...]
    curve: Curve
    confidence: float

    @property
    def keys(self) -> list[str]:
        """The names of the `by` keys."""
        return key_names(self.by)

    def statistics(self) -> pl.DataFrame | pl.LazyFrame:
        """The log's statistics per key and window: a DataFrame's collected and checked
        (refused rows raise), a LazyFrame's plan (arguments and schema checked)."""
        return regression_statistics(
            self.data,
            self.target,
            **self.prediction.kwargs(),
            by=self.by,
            time=self.time,
            every=self.every,
            n_levels=self.n_levels,
            weight=self.weight,
        )

    def summary(self, stats: pl.DataFrame | pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
        """The summary of `stats` per `keys` (a plan: the grid is the request's, so a
        table without binned rows, such as an empty log's, still has its summary)."""
        return regression_metrics_from_statistics(
            stats.lazy(), by=keys, n_levels=self.n_levels, metrics=self.metrics, curve=self.curve
        )

    def curves(self, stats: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
        """The calibration curve of `stats` per `by` key, with its Wilson intervals (a plan)."""
        return quantile_reliability_from_statistics(
            stats.lazy(),
            by=self.keys,
            n_levels=self.n_levels,
            curve=self.curve,
            confidence=self.confidence,
        )

    def refused_message(self, stats: pl.DataFrame) -> str:
        """What the checks refuse, counted per check (a LazyFrame's; one more pass)."""
        try:
            validate_regression_statistics(
                stats,
                self.data,
                self.target,
                **self.prediction.kwargs(),
                by=self.by,
                time=self.time,
                every=self.every,
                weight=self.weight,
            )
        except CalibrationDataError as error:
            return str(error)
        return "rows refused"


def regression_html_report(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    mean: str,
    std: str,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
    metrics: RegressionMetric | Sequence[RegressionMetric] = REGRESSION_METRICS,
    curve: Curve = "interval",
    confidence: float = 0.95,
    min_count: int = SMALL_GROUP,
    title: str | None = None,
    source: str | None = None,
    statistics: pl.DataFrame | None = None,
) -> HtmlReport:
    """Return a calibration report of Gaussian regression predictions as one HTML page.

    The regression counterpart of :func:`html_report`: the statistics table is
    computed once (:func:`regression_statistics`) and finished into the tables
    :func:`regression_summary` and :func:`quantile_reliability` return; the page shows
    them: a header (source, columns, rows, time windows, levels, package version,
    when), the summary per `by` group over the whole log (count, refused, the
    calibration-curve metrics, CRPS, NLL, sharpness) as a sortable table, one
    calibration diagram (:func:`plot_quantile_reliability`) and one PIT histogram
    (:func:`plot_pit_histogram`) per value of the first `by` key (one panel per value
    of the last key, when it has at most four), the first metric per time window
    (:func:`plot_metric_over_time`) with the numbers per window, and notes.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions (``pl.scan_parquet(...)`` for a file).
    target
        Name of the column of observed values.
    mean, std
        Names of the columns of predicted means and standard deviations (``std > 0``).
    by, time, every, n_levels, weight
        As :func:`regression_summary`.
    metrics
        Metrics of the summary, as :func:`regression_summary`'s (all by default); the
        first is drawn over time.
    curve
        The calibration curve of the curve metrics and of the diagrams:
        ``"interval"`` (default, as :func:`regression_summary`: the share of targets
        inside each central interval) or ``"quantile"`` (the share at or below each
        predicted quantile).
    confidence
        Level of the Wilson intervals drawn around each level's observed share.
    min_count
        Groups with fewer used rows are listed in the notes as too small to judge.
    title
        The page's title; ``"Calibration report of regression predictions"`` by default.
    source
        What the header names as the data, such as the file name; by default
        ``"a DataFrame"`` or ``"a LazyFrame"``.
    statistics
        The statistics of `data` already collected, so that the log is not read again
        (the command line's, from which it printed its summary): what
        :func:`regression_statistics` returns with the page's `by`, `time`, `every`,
        `n_levels` and `weight`. ``None`` (default): the page computes them.

    Returns
    -------
    HtmlReport
        ``.html`` (the page), ``.save(path)``, and the tables shown: ``.summary``
        (:func:`regression_summary`'s), ``.reliability`` (the curve,
        :func:`quantile_reliability`'s), ``.over_time`` and the ``.notes``.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column (from the schema); with a DataFrame, refused
        rows, as :func:`regression_summary` raises.
    TypeError, ValueError
        A bad argument, as :func:`regression_summary`.

    Notes
    -----
    **Data policy.** That of :func:`regression_summary`: a DataFrame holding refused
    rows (a NaN or infinite target or mean, a standard deviation that is not a
    positive finite number, a bad weight) raises; a LazyFrame gives a page in which
    the groups holding refused rows have their ``refused`` count and no metrics (no
    curve, no bars), and the notes say which checks refused how many rows (one more
    pass). An empty log, or one whose rows are all null or refused, gives a page
    saying so, without charts.

    **Reads.** One pass: every table of the page is finished from the one statistics
    table (the PIT binned on the level grid, which windows share, so the whole-log
    tables sum the windows). With `statistics`, none.

    **The page.** As :func:`html_report`'s: self-contained, offline (its
    Content-Security-Policy forbids every request), every text escaped; without the
    plot extra it has its tables and notes, no charts.

    See Also
    --------
    html_report, regression_summary, quantile_reliability, plot_pit_histogram

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "store": ["a", "a", "a", "b", "b", "b"],
    ...     "y": [10.0, 12.0, 9.0, 20.0, 26.0, 15.0],
    ...     "mu": [11.0, 11.5, 10.0, 21.0, 21.0, 20.0],
    ...     "sigma": [2.0, 2.0, 1.5, 1.0, 1.0, 1.5],
    ... })
    >>> report = pc.regression_html_report(
    ...     log, "y", mean="mu", std="sigma", by="store", n_levels=11, metrics=["crps", "nll"]
    ... )
    >>> report.html.startswith("<!DOCTYPE html>")
    True
    >>> report.summary
    shape: (2, 5)
    ┌───────┬───────┬─────────┬──────────┬──────────┐
    │ store ┆ count ┆ refused ┆ crps     ┆ nll      │
    │ ---   ┆ ---   ┆ ---     ┆ ---      ┆ ---      │
    │ str   ┆ i64   ┆ i64     ┆ f64      ┆ f64      │
    ╞═══════╪═══════╪═════════╪══════════╪══════════╡
    │ a     ┆ 3     ┆ 0       ┆ 0.595627 ┆ 1.642349 │
    │ b     ┆ 3     ┆ 0       ┆ 3.064101 ┆ 7.239279 │
    └───────┴───────┴─────────┴──────────┴──────────┘
    """
    check_n_levels(n_levels)
    check_choice("curve", curve, CURVES)
    check_confidence(confidence)
    if isinstance(min_count, bool) or not isinstance(min_count, int):
        msg = f"`min_count` must be an int, got {min_count!r}"
        raise TypeError(msg)
    listed = [metrics] if isinstance(metrics, str) else list(metrics)
    for metric in listed:
        check_choice("metrics", metric, REGRESSION_METRICS)
    request = RegressionRequest(
        data=data,
        target=target,
        prediction=Prediction(mean=mean, std=std),
        by=by,
        time=time,
        every=every,
        n_levels=n_levels,
        weight=weight,
        metrics=tuple(dict.fromkeys(cast("Sequence[RegressionMetric]", listed))),
        curve=curve,
        confidence=confidence,
    )
    if statistics is None:
        # Every argument is checked, and the schema read, before a row is.
        plan = request.statistics()
        request.summary(plan, request.keys)
        request.curves(plan)
        statistics = plan if isinstance(plan, pl.DataFrame) else plan.collect()
    tables = regression_tables(request, statistics)
    settings = RegressionSettings(
        source=source if source is not None else f"a {type(data).__name__}",
        target=target,
        columns=request.prediction.describe(),
        by=request.keys,
        time=time,
        every=every,
        n_levels=n_levels,
        curve=curve,
        metrics=list(request.metrics),
        weight=weight,
        confidence=confidence,
        min_count=min_count,
        title=REGRESSION_TITLE if title is None else str(title),
    )
    html, notes = render_regression(tables, statistics, settings)
    return HtmlReport(html, tables.summary, tables.reliability, tables.over_time, notes)


def regression_tables(request: RegressionRequest, stats: pl.DataFrame) -> Tables:
    """The summary, the calibration curve and the summary per window of `stats`."""
    keys = request.keys
    over_time = None
    if request.time is not None:
        over_time = request.summary(stats, [*keys, request.time]).collect()
    summary = request.summary(stats, keys).collect()
    curves = request.curves(stats).collect()
    refused = int(summary.get_column("refused").sum()) if summary.height else 0
    message = request.refused_message(stats) if refused else None
    return Tables(summary, curves, over_time, message)
