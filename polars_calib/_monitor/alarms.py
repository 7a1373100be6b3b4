"""Alarms of restarted CUSUM charts per group, and their thresholds from a target ARL0.

Both frame functions check the frame (schema, then the refused rule with counts), sort
each group's rows by time (ties in the frame's order) and run, when the result is
collected, a plan over the sorted rows: :func:`thresholds_for` simulates each group's
calibrated stream; :func:`alarms_for` finds the alarms of the chart restarted at 0
after each one, one round (one pass over the groups still alarming) per alarm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_calib._core.problem import Problem
from polars_calib._core.validation import CalibrationDataError, problem_counts, raise_for_problems
from polars_calib._monitor.cusum import check_odds_ratio, cusum_step, used_rows
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
    "alarms_for",
    "check_options",
    "continued_alarms",
    "thresholds_for",
]

GROUP, REF = "__calib_group__", "__calib_reference__"
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
ORDERED = (pl.String, pl.Boolean, pl.Date, pl.Datetime, pl.Duration, pl.Time)


def in_order(columns: Sequence[str]) -> pl.Expr:
    """True when the rows are sorted by `columns` (nulls first, ties allowed), as
    ``sort(columns)`` orders them: each row is at or after the row before it."""
    after = pl.lit(True)  # equal rows: in order
    for name in reversed(columns):
        column, before = pl.col(name), pl.col(name).shift(1)
        greater = (column > before).fill_null(before.is_null() & column.is_not_null())
        after = greater | (column.eq_missing(before) & after)
    return after.fill_null(True).all()  # the first row


def grouped_in_time_order(df: pl.DataFrame, keys: list[str], time: str | None) -> pl.DataFrame:
    """`df` sorted by `keys`, then `time` (nulls first); ties keep the frame's order.

    The same rows as ``df.sort([*keys, time], maintain_order=True)``, faster: a log
    already in that order is returned as it is (one comparison per row); otherwise each
    group's row numbers are sorted by time inside a group-by (small sorts, the way
    ``over(order_by=)`` does it) and the groups put in key order: 2M rows of 100 groups
    in about a fifth of the multi-column stable sort's time (``docs/monitoring.md``,
    "Speed of the charts").
    """
    order = [*keys, *([time] if time else [])]
    # Comparisons order these types as sort does (categories and others: no shortcut).
    plain = all(df.schema[c].is_numeric() or df.schema[c] in ORDERED for c in order)
    if not order or (plain and df.select(in_order(order)).item()):
        return df
    if not keys:
        return df.sort(order, maintain_order=True)
    rows = pl.col(ROW) if time is None else pl.col(ROW).sort_by(time, maintain_order=True)
    picked = (
        df.lazy()
        .with_row_index(ROW)
        .group_by(keys)
        .agg(rows)
        .sort(keys)
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
    if time is not None and (nulls := df[time].null_count()):
        msg = f"invalid calibration data: column {time!r}: time null in {nulls} of {df.height} rows"
        raise CalibrationDataError(msg)
    df = grouped_in_time_order(df, keys, time)
    if not keys:
        return df.with_columns(pl.lit(0, pl.Int64).alias(GROUP))
    changed = pl.any_horizontal(pl.col(key).ne_missing(pl.col(key).shift(1)) for key in keys)
    return df.with_columns((changed.fill_null(True).cum_sum() - 1).cast(pl.Int64).alias(GROUP))


def thresholds_for(
    df: pl.DataFrame,
    problem: Problem,
    keys: list[str],
    ratios: list[float],
    arl0: float,
    simulated_alarms: int,
    seed: int,
) -> pl.DataFrame:
    """Per (group, odds ratio): the simulated threshold for `arl0` and its checks.

    `df` is :func:`checked_rows`' output with the reference flag ``REF``.
    """
    used = df.filter(used_rows(problem) & pl.col(REF).fill_null(False))
    weight = problem.weight if problem.weight is not None else pl.lit(1.0)
    # Sorted: the simulation picks rows by index, and the thresholds depend on the
    # reference's values, not on the order the frame holds them in.
    used = used.select(GROUP, *keys, problem.prob.alias("p"), weight.alias("w")).sort(
        GROUP, "p", "w"
    )
    groups = df.select(GROUP, *keys).unique(GROUP, keep="first", maintain_order=True)
    if missing := groups.height - used[GROUP].n_unique():
        msg = (
            f"invalid calibration data: {missing} of {groups.height} groups have no "
            "reference row with a probability and a label to simulate thresholds from"
        )
        raise CalibrationDataError(msg)
    log_rs = [math.log(ratio) for ratio in ratios]
    parts = used.partition_by(GROUP, maintain_order=True, include_key=True)
    arrays = [(part["p"].to_numpy(), part["w"].to_numpy()) for part in parts]
    atoms = [[term_atoms(p, w, log_r) for log_r in log_rs] for p, w in arrays]
    found = _simulated(arrays, atoms, arl0, EXCURSIONS * simulated_alarms, seed)
    rows = [[walked for _, walked in group] for group in found]
    records = []
    for g, part in enumerate(parts):
        for j, ratio in enumerate(ratios):
            estimate = found[g][j][0]
            h = math.nan if estimate is None else estimate.threshold
            records.append(
                {
                    **part.select(GROUP, *keys).row(0, named=True),
                    "odds_ratio": ratio,
                    "threshold": h,
                    "arl0": math.nan if estimate is None else estimate.arl,
                    "arl0_se": math.nan if estimate is None else estimate.se,
                    "arl0_markov": markov_check(*atoms[g][j], h) if estimate else math.nan,
                    "alarms_simulated": 0 if estimate is None else estimate.alarms,
                    "rows_simulated": rows[g][j],
                }
            )
    schema = pl.Schema({**df.select(GROUP, *keys).schema, **THRESHOLD_COLUMNS})
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


def alarms_for(
    df: pl.DataFrame,
    problem: Problem,
    keys: list[str],
    time: str,
    thresholds: pl.DataFrame,
) -> pl.DataFrame:
    """Every alarm of each group's restarted charts: one round per alarm of a group.

    `thresholds` holds ``GROUP``, ``odds_ratio`` and ``threshold``.
    """
    return continued_alarms(df, problem, keys, time, thresholds, None)[0]


def continued_alarms(
    df: pl.DataFrame,
    problem: Problem,
    keys: list[str],
    time: str,
    thresholds: pl.DataFrame,
    state: pl.DataFrame | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The alarms of each group's charts continued from `state`, and their end state.

    `state` holds ``GROUP``, ``odds_ratio`` and :data:`CHART_STATE` for the groups
    whose charts continue (None, or a group missing: a chart from ``S = 0``). The
    cumulative sum starts from the group's ``total``, added to its first term, so the
    sums are those of one pass over the whole log, to the bit. The end state has a row per
    (group, odds ratio) of `thresholds`, keyed by ``GROUP``.
    """
    dtype = df.schema[time]
    results = [  # no group, no alarm: an empty table of the result's columns
        pl.DataFrame(
            schema={
                GROUP: pl.Int64,
                time: dtype,
                "statistic": pl.Float64,
                "threshold": pl.Float64,
                "run_start": dtype,
                "odds_ratio": pl.Float64,
            }
        )
    ]
    ends = [  # no chart, no state
        pl.DataFrame(schema={GROUP: pl.Int64, "odds_ratio": pl.Float64})
        .with_columns(pl.lit(None, pl.Float64).alias(c) for c in CHART_STATE[:3])
        .with_columns(pl.lit(None, dtype).alias("run_start"))
    ]
    for ratio in thresholds["odds_ratio"].unique(maintain_order=True):
        step, flag = cusum_step(problem, math.log(ratio))
        chart = thresholds.filter(pl.col("odds_ratio") == ratio).select(GROUP, "threshold")
        start = _start(chart, state, ratio, dtype)
        # The seed joins each group's first term: C + W_1, then + W_2, ..., the additions
        # of one pass over the whole log (x + 0.0 is x on the other rows).
        first = pl.int_range(pl.len()).over(GROUP) == 0
        seeded = pl.col("step") + pl.when(first).then(pl.col("total")).otherwise(0.0)
        rows = (
            df.select(GROUP, time, step.alias("step"), flag.alias("flag"))
            .join(start.select(GROUP, "total"), on=GROUP, maintain_order="left")
            .select(
                GROUP,
                time,
                pl.int_range(pl.len()).over(GROUP).alias("n"),
                seeded.cum_sum().over(GROUP).alias("total"),
                "flag",
            )
            .join(chart, on=GROUP, maintain_order="left")
        )
        found, end = _rounds(rows, time, start.drop("total"))
        results.append(found.drop("n").with_columns(odds_ratio=pl.lit(ratio)))
        ends.append(end.select(GROUP, pl.lit(ratio).alias("odds_ratio"), *CHART_STATE))
    found = pl.concat(results)
    keyed = df.select(GROUP, *keys).unique(GROUP, keep="first")
    columns = [*keys, time, "odds_ratio", "statistic", "threshold", "run_start"]
    alarms = (
        found.join(keyed, on=GROUP, maintain_order="left")
        .sort(GROUP, time, "odds_ratio", maintain_order=True)  # ties: raised first, first
        .select(columns)
    )
    return alarms, pl.concat(ends)


def _start(
    chart: pl.DataFrame, state: pl.DataFrame | None, ratio: float, dtype: pl.DataType
) -> pl.DataFrame:
    """Per group of `chart`: ``after`` (-1: from the first row), ``total`` (the seed), ``base``,
    ``floor`` and ``restart`` (the run start carried), from `state` or a chart at 0."""
    start = chart.select(GROUP)
    if state is not None:
        given = state.filter(pl.col("odds_ratio") == ratio).select(GROUP, *CHART_STATE)
        start = start.join(given, on=GROUP, how="left", maintain_order="left")
    else:
        start = start.with_columns(pl.lit(None, pl.Float64).alias(c) for c in CHART_STATE[:3])
        start = start.with_columns(pl.lit(None, dtype).alias("run_start"))
    return start.select(
        GROUP,
        pl.lit(-1, pl.Int64).alias("after"),
        pl.col("total", "base", "floor").fill_null(0.0),
        pl.col("run_start").cast(dtype).alias("restart"),
    )


def alarm_rounds(rows: pl.DataFrame, time: str) -> pl.DataFrame:
    """The alarms of one chart from a chart at 0 (the charts drawn restart after them).

    `rows` holds per row ``GROUP``, `time`, ``n`` (the row's number in its group),
    ``total`` (the running sum of the chart's terms), ``flag`` and ``threshold``; each
    alarm keeps its row's ``n``.
    """
    start = _start(rows.select(GROUP).unique(maintain_order=True), None, 1.0, rows.schema[time])
    return _rounds(rows, time, start.drop("total"))[0]


def _rounds(
    rows: pl.DataFrame, time: str, starts: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The alarms of one chart: per round, each active group's first alarm after its
    restart (with its row's number ``n``); and each group's end state
    (:data:`CHART_STATE`).

    `starts` holds per group ``after`` (the row number the chart starts after),
    ``base``, ``floor`` and ``restart``. One pass per round gives both each group's
    first alarm and its tail (the end state of a group that no longer alarms)."""
    found = [
        rows.head(0).select(
            GROUP,
            time,
            pl.lit(None, pl.Float64).alias("statistic"),
            "threshold",
            pl.col(time).alias("run_start"),
            "n",
        )
    ]
    ends = []
    while starts.height:
        hit = (pl.col("statistic") > pl.col("threshold")) | pl.col("flag")
        picked = (time, "statistic", "threshold", "run_start", "n")
        at_hit = [pl.col(c).filter(hit).first() for c in picked]
        at_hit += [pl.col("total").filter(hit).first().alias("alarm_total")]
        at_hit += [pl.col("flag").filter(hit).first()]
        tail = [
            pl.col("total").last().alias("last_total"),
            pl.col("run").min().alias("run_min"),
            pl.col("run_start").last().alias("last_start"),
        ]
        rounds = _charted(rows, starts, time).group_by(GROUP).agg(*at_hit, *tail)
        done = starts.lazy().join(rounds, on=GROUP, how="left").collect()
        alarmed = pl.col("n").is_not_null()
        alarms = done.filter(alarmed).with_columns(
            statistic=pl.when("flag").then(math.inf).otherwise("statistic")
        )
        found.append(alarms.select(GROUP, time, "statistic", "threshold", "run_start", "n"))
        ends.append(_end_state(done.filter(~alarmed)))
        starts = alarms.select(
            GROUP,
            pl.col("n").alias("after"),
            pl.col("alarm_total").alias("base"),
            pl.lit(0.0).alias("floor"),
            pl.col(time).alias("restart"),
        )
    if not ends:  # no group
        dtype = rows.schema[time]
        ends.append(
            pl.DataFrame(
                schema={GROUP: pl.Int64, "total": pl.Float64, "base": pl.Float64}
            ).with_columns(floor=pl.lit(None, pl.Float64), run_start=pl.lit(None, dtype))
        )
    return pl.concat(found), pl.concat(ends).sort(GROUP)


def _charted(rows: pl.DataFrame, starts: pl.DataFrame, time: str) -> pl.LazyFrame:
    """The rows after each group's start, with the chart ``statistic`` and ``run_start``."""
    lf = (
        rows.lazy()
        .join(starts.lazy(), on=GROUP, maintain_order="left")
        .filter(pl.col("n") > pl.col("after"))
    )
    run = pl.col("total") - pl.col("base")
    chart = run - pl.min_horizontal(run.cum_min().over(GROUP), pl.col("floor"))
    zero = pl.when((pl.col("statistic") == 0.0) & ~pl.col("flag")).then(pl.col(time))
    return lf.with_columns(run=run, statistic=chart).with_columns(
        run_start=zero.forward_fill().over(GROUP).fill_null(pl.col("restart"))
    )


def _end_state(done: pl.DataFrame) -> pl.DataFrame:
    """The end state of groups whose last round found no alarm: from their start (a
    restart, or the state given) and the tail of their rows after it (none when the
    last alarm was their last row)."""
    seen = pl.col("last_total").is_not_null()
    return done.select(
        GROUP,
        pl.when(seen).then("last_total").otherwise("base").alias("total"),
        "base",
        pl.min_horizontal("floor", "run_min").alias("floor"),
        pl.when(seen).then("last_start").otherwise("restart").alias("run_start"),
    )
