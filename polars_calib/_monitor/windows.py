"""Windowed monitoring: per (group, window) metrics with control limits from a reference period.

:func:`monitor_windows` is a finisher of :func:`polars_calib.summary`'s per-window table
(the one plan: problem, statistics per (keys, window, bin), metrics): it adds the
windows that hold no row, the O/E ratio with Garwood's exact interval, and per group
control limits from the reference windows, with an alert flag per metric. The
formulas, the choices and their sources are in ``docs/monitoring.md``
("Windows and control limits").
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

import polars as pl

from polars_calib._core.exprs import GroupKeys, IntoExpr, Keys
from polars_calib._core.intervals import with_poisson_interval
from polars_calib._core.options import Closed, Strategy, check_choice, check_confidence
from polars_calib._frames.frame import summary
from polars_calib._frames.statistics import bin_statistics
from polars_calib._table.finish import finish_metrics
from polars_calib._table.plan import FrameT, same_kind

__all__ = ["ControlLimits", "monitor_windows", "windows_with_limits"]

ControlLimits = Literal["sigma", "bootstrap"]
"""How control limits are set from the reference windows (see :func:`monitor_windows`)."""

MONITORED = ("ece", "spiegelhalter_z", "oe_ratio")
"""The metrics given control limits and an alert flag, in column order."""

_RANGES: dict[str, tuple[float | None, float | None]] = {
    "ece": (0.0, 1.0),
    "spiegelhalter_z": (None, None),
    "oe_ratio": (0.0, None),
}
"""The range of each metric, to which its limits are clipped (as NannyML clips them)."""

_SIGMAS = 3.0
_TAILS = (0.00135, 0.99865)
"""The bootstrap limits' quantiles: a normal variable's mass outside ± 3 sd, each side."""
_BOOTSTRAP_REPLICATES = 200
_REFERENCE = "reference"
_OBSERVED_COUNT = "__polars_calib_observed_count__"


def monitor_windows(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str,
    every: str,
    reference: pl.Expr | tuple[date | datetime, date | datetime],
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: str | None = None,
    limits: ControlLimits = "sigma",
    confidence: float = 0.95,
    pos_label: Any = None,
    n_resamples: int | None = None,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity of the draws)
) -> FrameT:
    """Compute calibration metrics per window with control limits from a reference period.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions, with a time column.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    by
        Group keys (a model, a segment): column names or expressions; ``None`` for one
        group. Each group gets its own windows and limits.
    time
        Name of a Date or Datetime column.
    every
        Window length, a positive Polars duration string (``"1d"``, ``"1w"``, ``"1mo"``);
        each window starts at ``pl.col(time).dt.truncate(every)``, as in
        :func:`polars_calib.summary`.
    reference
        The reference period: a Boolean expression over the rows
        (``pl.col("ts") < date(2026, 10, 1)``), or a ``(start, end)`` pair of dates or
        datetimes, the half-open period ``[start, end)``. A window is a reference window
        when all its rows are in the reference (with a pair: when the whole window,
        ``[window start, window start + every)``, lies in ``[start, end)``), so a window
        straddling the boundary is not one. A row where the expression is null is not in
        the reference.
    n_bins
        Number of bins of the ECE, a positive int.
    strategy
        ``"uniform"``, ``"quantile"`` or ``"median_variance"``, as in
        :func:`polars_calib.summary` (quantile bins are each window's own).
    closed
        ``"right"`` (default) or ``"left"``: the side of a bin that holds its edge.
    weight
        Name of an optional column of non-negative sample weights.
    limits
        ``"sigma"``: per group, the mean of a metric over the reference windows ± 3
        standard deviations (``ddof = 0``), clipped to the metric's range.
        ``"bootstrap"``: per group, the 0.135% and 99.865% quantiles (a normal
        variable's ± 3 sd) of the metric over the Poisson-bootstrap replicates of all
        the reference windows.
    confidence
        Level of Garwood's exact interval of the O/E ratio, in (0, 1).
    pos_label
        The label of the positive class when labels are not 0/1.
    n_resamples
        ``limits="bootstrap"``: replicates per window, an int from 1 to 2**30; ``None``:
        200. Unused by ``"sigma"``.
    seed, id
        ``limits="bootstrap"``: the seed and the row identity of the counter-based
        draws, as in :func:`polars_calib.summary` (``id=None``: the row's position among
        the reference period's rows).

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data`; one row per group and window of the log's whole time
        span (from the first window to the last of all rows, every group), sorted by
        the keys and `time`: the keys, `time` (the window's start), ``reference``
        (Boolean), ``count`` and ``refused`` (Int64), ``mean_predicted``, ``observed``,
        then for each of ``ece``, ``spiegelhalter_z`` and ``oe_ratio``: the value, (for
        ``oe_ratio``: ``oe_ratio_lower`` and ``oe_ratio_upper``, Garwood's interval),
        ``<metric>_lower_limit``, ``<metric>_upper_limit`` (Float64) and
        ``<metric>_alert`` (Boolean). A window without rows has count 0, null metrics and
        no alert (``False``). Rows with a null time, if any, make one last row per group
        with a null `time`, outside the span, the limits and the alerts.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column (from the schema, no data read); with a
        DataFrame, refused rows (see :func:`polars_calib.validate`).
    TypeError, ValueError
        A bad option: `reference` neither an expression nor a pair, `limits`,
        `confidence`, or the options of :func:`polars_calib.summary`.

    Notes
    -----
    The metrics are :func:`polars_calib.summary`'s (``time=``, ``every=``): ECE and
    Spiegelhalter's z of each window, the same numbers. The O/E ratio is
    ``Σ y / Σ p`` (weighted: ``Σ w y / Σ w p``); its interval is Garwood's (1936) exact
    interval of a Poisson mean ``[½ χ²_{2O, alpha/2}, ½ χ²_{2(O+1), 1-alpha/2}] / E`` with
    ``O = Σ y`` and ``E = Σ p``, ``alpha = 1 - confidence``. With `weight` the interval is
    null: a weighted sum is not a count of events, and the exact interval has no
    meaning for it.

    **Limits** (NannyML's default rule): per group, from the reference windows where
    the metric is not null, ``mean ± 3 sd`` with the population standard deviation
    (``ddof = 0``), clipped to the metric's range (ECE to ``[0, 1]``, O/E to
    ``[0, ∞)``). Fewer than two such windows give null limits (one window has no
    spread). **Alert**: the value is strictly outside its limits; ``False`` where the
    value is null (an empty window); null where the limits are (a group without
    reference windows: nothing to compare with).

    **When data are read.** On a LazyFrame the result is a plan that reads nothing
    until collected: the limits are a group-by over the small per-window table within
    the same plan. The reference expression is a second aggregation of the rows (per
    window: are all its rows in the reference), so the plan reads the data twice; a
    ``(start, end)`` pair is decided on the windows alone. ``limits="bootstrap"`` adds
    the replicates' table of the reference rows, read as
    ``summary(..., n_resamples=...)`` reads it (twice). On a DataFrame refused rows
    raise :class:`~polars_calib.CalibrationDataError`, as in
    :func:`polars_calib.summary`; on a LazyFrame a window holding refused rows gets its
    ``refused`` count and null metrics (no alert).

    References
    ----------
    F. Garwood (1936), "Fiducial limits for the Poisson distribution", *Biometrika* 28,
    437-442. NannyML, "Thresholds" (standard deviation thresholds), documentation.

    See Also
    --------
    summary, plot_metric_over_time

    Examples
    --------
    >>> from datetime import date
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "day": [date(2024, 3, d) for d in (1, 1, 1, 2, 2, 2, 3, 3, 3, 5, 5, 5)],
    ...     "p": [0.2, 0.5, 0.8] * 3 + [0.1, 0.2, 0.3],
    ...     "y": [0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0],
    ... })
    >>> windows = log.calib.monitor_windows(
    ...     "p", "y", time="day", every="1d", reference=pl.col("day") <= date(2024, 3, 3),
    ...     n_bins=5,
    ... )
    >>> windows.select(
    ...     "day", "reference", "count", "oe_ratio", "oe_ratio_upper_limit", "oe_ratio_alert"
    ... )
    shape: (5, 6)
    ┌────────────┬───────────┬───────┬──────────┬──────────────────────┬────────────────┐
    │ day        ┆ reference ┆ count ┆ oe_ratio ┆ oe_ratio_upper_limit ┆ oe_ratio_alert │
    │ ---        ┆ ---       ┆ ---   ┆ ---      ┆ ---                  ┆ ---            │
    │ date       ┆ bool      ┆ i64   ┆ f64      ┆ f64                  ┆ bool           │
    ╞════════════╪═══════════╪═══════╪══════════╪══════════════════════╪════════════════╡
    │ 2024-03-01 ┆ true      ┆ 3     ┆ 1.333333 ┆ 2.05392              ┆ false          │
    │ 2024-03-02 ┆ true      ┆ 3     ┆ 0.666667 ┆ 2.05392              ┆ false          │
    │ 2024-03-03 ┆ true      ┆ 3     ┆ 1.333333 ┆ 2.05392              ┆ false          │
    │ 2024-03-04 ┆ false     ┆ 0     ┆ null     ┆ 2.05392              ┆ false          │
    │ 2024-03-05 ┆ false     ┆ 3     ┆ 3.333333 ┆ 2.05392              ┆ true           │
    └────────────┴───────────┴───────┴──────────┴──────────────────────┴────────────────┘
    """
    check_choice("limits", limits, ("sigma", "bootstrap"))
    check_confidence(confidence)
    in_reference = _reference_rows(reference)
    table = summary(
        data,
        prob,
        label,
        by=by,
        time=time,
        every=every,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        weight=weight,
        metrics=["ece", "spiegelhalter_z"],
        pos_label=pos_label,
    ).lazy()
    names = table.collect_schema().names()
    keys: list[str] = names[: names.index(time)]
    flags = None
    if in_reference is not None:
        rows = GroupKeys(by).added_to(data.lazy())
        _check_reference_dtype(rows, in_reference)
        window = pl.col(time).dt.truncate(every)
        flags = rows.group_by([*keys, window]).agg(
            in_reference.fill_null(False).all().alias(_REFERENCE)
        )
    full = _completed(table, keys, time, every, reference if flags is None else flags)
    full = _with_oe_ratio(full, confidence, weighted=weight is not None)
    if limits == "bootstrap":
        # Only the reference rows are resampled (a straddling window's are dropped below).
        kept = _in_period(reference, time) if in_reference is None else in_reference
        replicates = bin_statistics(
            data.filter(kept.fill_null(False)),
            prob,
            label,
            by=by,
            time=time,
            every=every,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            weight=weight,
            pos_label=pos_label,
            metrics=["ece", "spiegelhalter_z"],
            resampling="bootstrap",
            n_resamples=_BOOTSTRAP_REPLICATES if n_resamples is None else n_resamples,
            seed=seed,
            id=id,
        ).lazy()
        full = _with_bootstrap_limits(full, replicates, keys, time)
    else:
        full = full.with_columns(_sigma_limits(keys))
    return same_kind(data, _with_alerts(full, keys, time))


def windows_with_limits(
    table: pl.LazyFrame,
    keys: list[str],
    time: str,
    every: str,
    reference: tuple[date | datetime, date | datetime],
    confidence: float,
    weighted: bool,
) -> pl.LazyFrame:
    """:func:`monitor_windows` (``limits="sigma"``, a ``(start, end)`` reference) from
    the per-window table of :func:`polars_calib.summary` (``time=``, ``every=``, the
    metrics ECE and Spiegelhalter's z): the finisher without the rows."""
    _reference_rows(reference)
    check_confidence(confidence)
    full = _with_oe_ratio(_completed(table, keys, time, every, reference), confidence, weighted)
    return _with_alerts(full.with_columns(_sigma_limits(keys)), keys, time)


def _completed(
    table: pl.LazyFrame, keys: list[str], time: str, every: str, reference: Any
) -> pl.LazyFrame:
    """`table` with every window of the log's span (an empty one counting 0) and the
    reference flag: from a ``(start, end)`` pair, or `reference`'s frame of flags per
    (keys, window)."""
    table = table.cache()  # read for the span and joined below: one evaluation
    windows = _all_windows(table, keys, time, every)
    if isinstance(reference, pl.LazyFrame):
        windows = windows.join(reference, on=[*keys, time], how="left", nulls_equal=True)
    else:
        windows = windows.with_columns(_reference_windows(reference, time, every).alias(_REFERENCE))
    windows = windows.with_columns(pl.col(_REFERENCE).fill_null(False))
    full = windows.join(table, on=[*keys, time], how="full", coalesce=True, nulls_equal=True)
    return full.with_columns(
        pl.col(_REFERENCE).fill_null(False), pl.col("count", "refused").fill_null(0)
    )


def _reference_rows(reference: object) -> pl.Expr | None:
    """The row-level reference expression, or None for a ``(start, end)`` pair."""
    if isinstance(reference, pl.Expr):
        return reference
    bounds: tuple[object, ...] = reference if isinstance(reference, tuple) else ()
    if len(bounds) != 2 or not all(isinstance(t, (date, datetime)) for t in bounds):
        msg = (
            "`reference` must be a Boolean expression over the rows or a (start, end) pair "
            f"of dates or datetimes, got {reference!r}"
        )
        raise TypeError(msg)
    start, end = bounds
    if type(start) is not type(end):
        msg = f"`reference` (start, end) must be two dates or two datetimes, got {reference!r}"
        raise TypeError(msg)
    if not start < end:  # type: ignore[operator]
        msg = f"`reference` (start, end) must have start < end, got {reference!r}"
        raise ValueError(msg)
    return None


def _check_reference_dtype(rows: pl.LazyFrame, reference: pl.Expr) -> None:
    """Raise ``TypeError`` unless `reference` is Boolean over `rows` (from the schema)."""
    dtype = rows.select(reference).collect_schema().dtypes()[0]
    if dtype != pl.Boolean:
        msg = f"`reference` must be a Boolean expression over the rows, got one of dtype {dtype}"
        raise TypeError(msg)


def _in_period(reference: Any, time: str) -> pl.Expr:
    """Whether a row's `time` is in the half-open period ``[start, end)`` of `reference`."""
    start, end = reference
    return (pl.col(time) >= pl.lit(start)) & (pl.col(time) < pl.lit(end))


def _reference_windows(reference: Any, time: str, every: str) -> pl.Expr:
    """Whether a window (its start in `time`) lies in the half-open period ``[start, end)``."""
    start, end = reference
    window = pl.col(time)
    return (window >= pl.lit(start)) & (window.dt.offset_by(every) <= pl.lit(end))


def _all_windows(table: pl.LazyFrame, keys: list[str], time: str, every: str) -> pl.LazyFrame:
    """Every (group, window) of the log's whole span: each group crossed with the windows
    from the first window of `table` to its last, every `every` (nothing is read)."""
    dtype = table.collect_schema()[time]
    span = table.select(pl.col(time).min().alias("start"), pl.col(time).max().alias("end"))
    span = span.filter(pl.col("start").is_not_null())
    if dtype == pl.Date:
        _check_whole_days(time, every)
        ranges = pl.date_ranges("start", "end", interval=every)
    else:
        ranges = pl.datetime_ranges("start", "end", interval=every)
    windows = span.select(ranges.alias(time)).explode(time).with_columns(pl.col(time).cast(dtype))
    if not keys:
        return windows
    groups = table.select(keys).unique()
    return groups.join(windows, how="cross")


def _check_whole_days(time: str, every: str) -> None:
    """Raise ``ValueError`` unless `every` is a whole number of days (a Date column's windows)."""
    try:
        pl.date_range(date(2000, 1, 1), date(2000, 1, 2), interval=every, eager=True)
    except pl.exceptions.ComputeError:
        msg = (
            f"`every` must be whole days (or weeks, months) for the Date column {time!r}, "
            f"got {every!r}"
        )
        raise ValueError(msg) from None


def _with_oe_ratio(full: pl.LazyFrame, confidence: float, weighted: bool) -> pl.LazyFrame:
    """`full` with ``oe_ratio`` and Garwood's interval (null with weights)."""
    # Null where nothing is expected (no row, or every p = 0): 0/0 would be NaN.
    used = (pl.col("count") > 0) & (pl.col("mean_predicted") > 0.0)
    ratio = pl.when(used).then(pl.col("observed") / pl.col("mean_predicted"))
    full = full.with_columns(ratio.alias("oe_ratio"))
    if weighted:
        bounds = [pl.lit(None, pl.Float64).alias(f"oe_ratio_{side}") for side in ("lower", "upper")]
        return full.with_columns(bounds)
    # Unweighted: the count of events O = observed * count, an integer up to rounding.
    full = full.with_columns((pl.col("observed") * pl.col("count")).alias(_OBSERVED_COUNT))
    full = with_poisson_interval(full, _OBSERVED_COUNT, confidence, ("oe_lower", "oe_upper"))
    expected = pl.col("mean_predicted") * pl.col("count")
    return full.with_columns(
        pl.when(used).then(pl.col("oe_lower") / expected).alias("oe_ratio_lower"),
        pl.when(used).then(pl.col("oe_upper") / expected).alias("oe_ratio_upper"),
    ).drop("oe_lower", "oe_upper", _OBSERVED_COUNT)


def _sigma_limits(keys: list[str]) -> list[pl.Expr]:
    """Each monitored metric's limits: the reference windows' mean ± 3 sd (ddof = 0),
    clipped to the metric's range; null below two reference windows with a value."""

    def per_group(expr: pl.Expr) -> pl.Expr:
        return expr.over(keys) if keys else expr

    columns: list[pl.Expr] = []
    for metric in MONITORED:
        value = pl.col(metric)
        reference = value.filter(pl.col(_REFERENCE) & value.is_not_null())
        mean, sd = reference.mean(), reference.std(ddof=0)
        enough = per_group(reference.count()) >= 2
        low, high = _RANGES[metric]
        lower = per_group(mean - _SIGMAS * sd)
        upper = per_group(mean + _SIGMAS * sd)
        if low is not None:
            lower, upper = lower.clip(low, None), upper.clip(low, None)
        if high is not None:
            lower, upper = lower.clip(None, high), upper.clip(None, high)
        columns += [
            pl.when(enough).then(lower).alias(f"{metric}_lower_limit"),
            pl.when(enough).then(upper).alias(f"{metric}_upper_limit"),
        ]
    return columns


def _with_bootstrap_limits(
    full: pl.LazyFrame, replicates: pl.LazyFrame, keys: list[str], time: str
) -> pl.LazyFrame:
    """`full` with each monitored metric's :data:`_TAILS` quantiles, per group, over the
    bootstrap replicates of its reference windows (null below two reference windows
    with a value).

    `replicates` is the statistics table with bootstrap replicates per (group, window);
    each replicate's metrics are the one finisher's, the O/E ratio ``observed /
    mean_predicted``. Each window's replicates are moved to its observed value (the ECE
    of a resample is biased upwards) and clipped to the metric's range. They join
    `full` as a list per window, so the plan stays one chain (its table is read once).
    """
    window = [*keys, time]
    table = replicates.filter(pl.col("replicate").is_not_null())
    metrics = finish_metrics(table, [*window, "resampling", "replicate"], list(MONITORED[:2]))
    ratio = pl.col("observed") / pl.col("mean_predicted")
    metrics = metrics.with_columns(
        pl.when(pl.col("mean_predicted") > 0.0).then(ratio).alias("oe_ratio")
    )
    drawn = metrics.group_by(window).agg(pl.col(m).alias(f"__drawn_{m}") for m in MONITORED)
    full = full.join(drawn, on=window, how="left", nulls_equal=True)

    def per_group(expr: pl.Expr) -> pl.Expr:
        return expr.over(keys) if keys else expr

    columns: list[pl.Expr] = []
    for m in MONITORED:
        values = pl.col(f"__drawn_{m}")
        low, high = _RANGES[m]
        centred = (values - values.list.mean() + pl.col(m)).list.eval(pl.element().clip(low, high))
        used = pl.col(_REFERENCE) & pl.col(m).is_not_null()
        enough = per_group(used.sum()) >= 2
        pooled = centred.filter(used).explode()
        columns += [
            pl.when(enough).then(per_group(pooled.quantile(q, "linear"))).alias(f"{m}_{side}_limit")
            for q, side in zip(_TAILS, ("lower", "upper"))
        ]
    return full.with_columns(columns).drop(f"__drawn_{m}" for m in MONITORED)


def _with_alerts(full: pl.LazyFrame, keys: list[str], time: str) -> pl.LazyFrame:
    """`full` with each monitored metric's alert flag, in column order, sorted."""
    alerts = []
    for metric in MONITORED:
        value = pl.col(metric)
        lower, upper = pl.col(f"{metric}_lower_limit"), pl.col(f"{metric}_upper_limit")
        outside = ((value > upper) | (value < lower)).fill_null(False)
        judged = lower.is_not_null() & pl.col(time).is_not_null()
        alerts.append(pl.when(judged).then(outside).alias(f"{metric}_alert"))
    order = [*keys, time, _REFERENCE, "count", "refused", "mean_predicted", "observed"]
    for metric in MONITORED:
        order.append(metric)
        if metric == "oe_ratio":
            order += ["oe_ratio_lower", "oe_ratio_upper"]
        order += [f"{metric}_{part}" for part in ("lower_limit", "upper_limit", "alert")]
    return full.with_columns(alerts).sort([*keys, time], nulls_last=True).select(order)
