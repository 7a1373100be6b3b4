"""Alarms of restarted CUSUM charts per group, and their thresholds from a target ARL0.

:func:`checked_rows` checks a frame (the refused rule with counts, null times) and sorts
each group's rows by time (ties in the frame's order), for the charts (``pc.monitor``
and the store's update read the log in batches: :mod:`polars_calib._monitor.stream`).
:func:`thresholds_for` simulates each group's calibrated stream from its reference rows
(a sample of them above :data:`~polars_calib._monitor.reference.SAMPLE_ROWS`);
:func:`alarm_rounds` runs the restarted charts of :mod:`polars_calib._monitor.batched`
over rows held in memory (the charts drawn), and :func:`chart_arrays` seeds them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_calib._core.problem import Problem
from polars_calib._core.validation import CalibrationDataError, problem_counts, raise_for_problems
from polars_calib._monitor.batched import GROUP, TIME, Charts, physical
from polars_calib._monitor.cusum import check_odds_ratio, cusum_step
from polars_calib._monitor.reference import reference_sample
from polars_calib._monitor.thresholds import (
    Estimate,
    markov_check,
    markov_threshold,
    term_atoms,
    tilted_threshold,
    walk_excursions,
)

__all__ = [
    "CHART_STATE",
    "GROUP",
    "alarm_rounds",
    "chart_arrays",
    "chart_terms",
    "check_options",
    "ordered_rows",
    "thresholds_for",
]

LOW, HIGH = 0.75, 1.25
"""The simulation keeps the records above ``LOW`` times the Markov chain's threshold and
walks each excursion up to ``HIGH`` times it (again from 0 and twice as high for a chart
whose threshold is not found between them)."""
EXCURSIONS = 5
"""Tilted excursions per simulated alarm asked for (``simulated_alarms``): at the default
200, 1,000 excursions, a standard error of about 4% (``docs/monitoring.md``)."""
THRESHOLD_COLUMNS = pl.Schema(
    {
        "odds_ratio": pl.Float64,
        "threshold": pl.Float64,
        "arl0": pl.Float64,
        "arl0_se": pl.Float64,
        "arl0_markov": pl.Float64,
        "alarms_simulated": pl.Int64,
        "rows_simulated": pl.Int64,
        "reference_rows": pl.Int64,
    }
)


def check_options(
    odds_ratio: float | Sequence[float], arl0: float, simulated_alarms: int
) -> list[float]:
    """The odds ratios as a list; raise ``ValueError`` for a bad option."""
    ratios = [odds_ratio] if isinstance(odds_ratio, (int, float)) else list(odds_ratio)
    for ratio in ratios:
        check_odds_ratio(ratio)
    if not ratios or len(set(ratios)) != len(ratios):
        msg = f"`odds_ratio` must hold distinct odds ratios, got {odds_ratio!r}"
        raise ValueError(msg)
    if isinstance(arl0, bool) or not isinstance(arl0, (int, float)) or not 1.0 < arl0 < 1e9:
        msg = f"`arl0` must be a number of rows between 1 and 1e9, got {arl0!r}"
        raise ValueError(msg)
    if isinstance(simulated_alarms, bool) or not isinstance(simulated_alarms, int):
        msg = f"`simulated_alarms` must be a positive int, got {simulated_alarms!r}"
        raise TypeError(msg)
    if simulated_alarms < 1:
        msg = f"`simulated_alarms` must be a positive int, got {simulated_alarms}"
        raise ValueError(msg)
    return [float(ratio) for ratio in ratios]


ROW = "__calib_row__"


def _sorted_in_groups(df: pl.DataFrame, keys: list[str], time: str) -> pl.DataFrame:
    """`df` sorted by `keys`, then `time` (nulls first); ties keep the frame's order.

    The same rows as ``df.sort([*keys, time], maintain_order=True)``, faster: each
    group's row numbers are sorted by time inside a group-by (small sorts, the way
    ``over(order_by=)`` does it) and the groups put in key order: 2M rows of 100 groups
    in about a fifth of the multi-column stable sort's time (``docs/monitoring.md``,
    "Speed of the charts").
    """
    if not keys:
        return df.sort(time, maintain_order=True)
    picked = (
        df.lazy()
        .with_row_index(ROW)
        .group_by(keys)
        .agg(pl.col(ROW).sort_by(time, maintain_order=True))
        .sort(keys, nulls_last=False)
        .select(pl.col(ROW).explode())
        .collect()
    )
    return df.select(pl.all().gather(picked[ROW]))


def checked_rows(
    df: pl.DataFrame, problem: Problem, keys: list[str], time: str | None
) -> pl.DataFrame:
    """`df` checked (refused rows, null times: :class:`CalibrationDataError`), sorted by
    keys and time (ties in the frame's order), with a group number ``GROUP`` (0, 1, ...)."""
    raise_for_problems(problem_counts(df.lazy(), problem.checks).collect(), problem.checks)
    if time is not None:
        raise_for_null_times(df, time)
    return ordered_rows(df, keys, time)


def raise_for_null_times(df: pl.DataFrame, time: str) -> None:
    """Raise :class:`CalibrationDataError` when `df`'s `time` column holds nulls."""
    if nulls := df[time].null_count():
        msg = f"invalid calibration data: column {time!r}: time null in {nulls} of {df.height} rows"
        raise CalibrationDataError(msg)


def ordered_rows(df: pl.DataFrame, keys: list[str], time: str | None) -> pl.DataFrame:
    """`df`'s rows as a stable sort by keys and time orders them, with the group's number
    ``GROUP`` (0, 1, ... in the order of the sorted keys); `time` without nulls.

    No sort when each group's rows are already in time order (an append-only log):
    the rows are gathered group by group (:func:`grouped_rows`) and checked, one
    comparison a row. Otherwise each group's rows sorted by time (:func:`_sorted_in_groups`).
    """
    rows = grouped_rows(df, keys)
    if time is not None and not _in_time_order(rows, time):
        ordered = _sorted_in_groups(df, keys, time)
        number = _numbered(keys) if keys else pl.lit(0, pl.Int64).alias(GROUP)
        rows = ordered.with_columns(number).with_columns(pl.col(GROUP).set_sorted())
    return rows


def grouped_rows(df: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`df`'s rows group by group, the groups in the order of their sorted keys (nulls
    first), each group's rows in the frame's order, with the group's number ``GROUP``.

    The rows of a stable sort by the keys, from one gathering of each column by group
    (``group_by(...).agg(pl.all())`` keeps each group's rows in order, then ``explode``),
    a fraction of the time of the sort.
    """
    if not keys:
        rows = df.with_columns(pl.lit(0, pl.Int64).alias(GROUP))
    elif df.is_empty() or df.width == len(keys):
        rows = df.sort(keys, maintain_order=True).with_columns(_numbered(keys))
    else:
        others = [name for name in df.columns if name not in keys]
        lists = df.group_by(keys).agg(others).sort(keys, nulls_last=False)
        lists = lists.with_row_index(GROUP).with_columns(pl.col(GROUP).cast(pl.Int64))
        rows = lists.explode(others).select(*df.columns, GROUP)
    # Sorted by construction; said so, a window `over(GROUP)` takes each group as a
    # slice (a third of the time of hashing the numbers again).
    return rows.with_columns(pl.col(GROUP).set_sorted())


def _numbered(keys: list[str]) -> pl.Expr:
    """The group's number of rows sorted by `keys`: 0 for the first group, then 1, ..."""
    changed = pl.any_horizontal(pl.col(key).ne_missing(pl.col(key).shift(1)) for key in keys)
    first = pl.int_range(pl.len()) == 0  # also when the first key is null
    return ((changed | first).cast(pl.Int64).cum_sum() - 1).alias(GROUP)


def _in_time_order(rows: pl.DataFrame, time: str) -> bool:
    """Whether each group's rows (of :func:`grouped_rows`) are in time order: one
    comparison of each row with the one before it (nulls are checked before)."""
    t, g = pl.col(time), pl.col(GROUP)
    ordered = (t >= t.shift(1)) | (g != g.shift(1))
    return bool(rows.select(ordered.all()).item())


def thresholds_for(
    lf: pl.LazyFrame,
    problem: Problem,
    keys: list[str],
    groups: pl.DataFrame,
    ratios: list[float],
    arl0: float,
    simulated_alarms: int,
    seed: int,
) -> pl.DataFrame:
    """Per (group, odds ratio): the simulated threshold for `arl0` and its checks.

    `lf` is the log in its order (the keys, the inputs and the reference flag ``REF``),
    `groups` the groups to simulate (``GROUP``, the keys and perhaps their reference
    counts): each group's simulation draws from its reference rows, at most
    :data:`~polars_calib._monitor.reference.SAMPLE_ROWS` of them
    (:func:`~polars_calib._monitor.reference.reference_sample`).
    """
    used = reference_sample(lf, problem, keys, groups, seed)
    log_rs = [math.log(ratio) for ratio in ratios]
    parts = used.partition_by(GROUP, maintain_order=True, include_key=True)
    arrays = [(part["p"].to_numpy(), part["w"].to_numpy()) for part in parts]
    atoms = [[term_atoms(p, w, log_r) for log_r in log_rs] for p, w in arrays]
    found = _simulated(arrays, atoms, arl0, EXCURSIONS * simulated_alarms, seed)
    rows = [[walked for _, walked in group] for group in found]
    named = groups.select(GROUP, *keys)
    records = []
    for g, part in enumerate(parts):
        group = named.row(by_predicate=pl.col(GROUP) == part[GROUP][0], named=True)
        for j, ratio in enumerate(ratios):
            estimate = found[g][j][0]
            h = math.nan if estimate is None else estimate.threshold
            records.append(
                {
                    **group,
                    "odds_ratio": ratio,
                    "threshold": h,
                    "arl0": math.nan if estimate is None else estimate.arl,
                    "arl0_se": math.nan if estimate is None else estimate.se,
                    "arl0_markov": markov_check(*atoms[g][j], h) if estimate else math.nan,
                    "alarms_simulated": 0 if estimate is None else estimate.alarms,
                    "rows_simulated": rows[g][j],
                    "reference_rows": part.height,
                }
            )
    schema = pl.Schema({**named.schema, **THRESHOLD_COLUMNS})
    return pl.DataFrame(records, schema=schema, orient="row")


def _simulated(
    arrays: list[tuple[np.ndarray, np.ndarray]],
    atoms: list[list[tuple[np.ndarray, np.ndarray]]],
    arl0: float,
    count: int,
    seed: int,
) -> list[list[tuple[Estimate | None, int]]]:
    """Per group and chart: the simulated threshold (None for a chart that never rises)
    and the rows walked, from `count` tilted excursions.

    The excursions walk from ``LOW`` to ``HIGH`` times the Markov chain's threshold (a
    guess: 10% on the ARL is 1 to 2% on h, far inside the margins); a chart whose
    threshold falls outside is walked again from 0 and twice as high, a few times.
    """
    # The tilt of a log-likelihood ratio is 1; times a common weight w, 1 / w.
    guesses = [1.0 / w[0] if len(w) and w.min() == w.max() > 0.0 else 1.0 for _, w in arrays]
    found: list[list[tuple[Estimate | None, int]]] = [[(None, 0)] * len(g) for g in atoms]
    todo: dict[tuple[int, int], tuple[float, float]] = {}
    for g, group in enumerate(atoms):
        for j, (values, probs) in enumerate(group):
            if np.any((values > 0.0) & (probs > 0.0)):  # else S stays 0: no threshold
                h = markov_threshold(values, probs, arl0, tolerance=0.1)
                top = float(values[probs > 0.0].max())
                todo[(g, j)] = (LOW * h, max(HIGH * h, top))
    for _ in range(5):
        keys = list(todo)
        charts = [(*atoms[g][j], guesses[g], *todo[(g, j)]) for g, j in keys]
        for (g, j), walked in zip(keys, walk_excursions(charts, count, seed)):
            estimate = tilted_threshold(walked, arl0)
            found[g][j] = (estimate, found[g][j][1] + walked.rows)
            if estimate is None:
                todo[(g, j)] = (0.0, 2.0 * walked.high)
            else:
                del todo[(g, j)]
        if not todo:
            break
    return found


CHART_STATE = ("total", "base", "floor", "run_start")
"""A chart's end state per (group, odds ratio): ``total``, the cumulative sum ``C`` of its
terms since the group's first row; ``base``, ``C`` at the last restart (0 before any);
``floor``, ``min(0, min (C - base))`` over the rows since that restart; ``run_start``, the
time of the last row since the restart at which ``S`` was 0 (else the restart's time).
``S = (total - base) - floor``, and the chart continues from it exactly (see
``docs/monitoring.md``, "The store and the daily job")."""


def chart_terms(problem: Problem, ratios: list[float]) -> list[pl.Expr]:
    """Per chart, its terms and its flags (see :func:`cusum_step`), as named columns."""
    exprs = []
    for j, ratio in enumerate(ratios):
        step, flag = cusum_step(problem, math.log(ratio))
        exprs += [
            step.alias(f"__calib_step{j}__"),
            flag.fill_null(False).alias(f"__calib_flag{j}__"),
        ]
    return exprs


def chart_arrays(
    groups: int, ratios: list[float], table: pl.DataFrame, state: pl.DataFrame | None
) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
    """The thresholds (a row per group, a column per ratio) and each chart's state arrays
    (a chart at 0 where `state` has no row)."""
    matrix = np.full((groups, len(ratios)), math.nan)
    charts = []
    for j, ratio in enumerate(ratios):
        chart = table.filter(pl.col("odds_ratio") == ratio)
        matrix[chart[GROUP].to_numpy(), j] = chart["threshold"].to_numpy()
        given: dict[str, np.ndarray] = {n: np.zeros(groups) for n in ("total", "base", "floor")}
        given["restart"] = np.zeros(groups, np.int64)
        given["started"] = np.zeros(groups, bool)
        if state is not None:
            rows = state.filter(pl.col("odds_ratio") == ratio, pl.col(GROUP) < groups)
            at = rows[GROUP].to_numpy()
            for name in ("total", "base", "floor"):
                given[name][at] = rows[name].fill_null(0.0).to_numpy()
            started = rows["run_start"].is_not_null().to_numpy()
            given["started"][at] = started
            restart = rows.select(physical("run_start").fill_null(0))["run_start"].to_numpy()
            given["restart"][at] = restart
        charts.append(given)
    return matrix, charts


def alarm_rounds(rows: pl.DataFrame, time: str) -> pl.DataFrame:
    """The alarms of one chart from a chart at 0 (the charts drawn restart after them).

    `rows` holds per row ``GROUP`` (0, 1, ...), `time`, ``n`` (the row's number in its
    group, the rows in that order), ``total`` (the running sum of the chart's terms),
    ``flag`` and ``threshold``; each alarm keeps its row's ``n``.
    """
    dtype = rows.schema[time]
    groups = rows.select(pl.col(GROUP).max() + 1).item() if rows.height else 0
    table = rows.unique(GROUP, keep="first").select(
        GROUP, pl.lit(1.0).alias("odds_ratio"), "threshold"
    )
    matrix, _ = chart_arrays(groups, [1.0], table, None)
    charts = Charts([1.0], matrix)
    frame = rows.select(GROUP, physical(time).alias(TIME), "total", pl.col("flag").fill_null(False))
    terms = [(frame["total"].to_numpy(), frame["flag"].to_numpy())]
    charts.feed(frame[GROUP].to_numpy(), frame[TIME].to_numpy(), terms, summed=True)
    return charts.alarms(dtype).select(
        GROUP, pl.col(TIME).alias(time), "statistic", "threshold", "run_start", "n"
    )
