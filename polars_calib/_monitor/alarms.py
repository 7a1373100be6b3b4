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

import polars as pl

from polars_calib._core.problem import Problem
from polars_calib._core.validation import CalibrationDataError, problem_counts, raise_for_problems
from polars_calib._monitor.cusum import check_odds_ratio, cusum_step, used_rows
from polars_calib._monitor.thresholds import (
    markov_check,
    markov_threshold,
    simulate,
    simulated_threshold,
    term_atoms,
)

__all__ = [
    "CHART_STATE",
    "GROUP",
    "alarm_rounds",
    "alarms_for",
    "check_options",
    "continued_alarms",
    "first_of_group",
    "ordered_rows",
    "raise_for_null_times",
    "thresholds_for",
]

GROUP, REF = "__calib_group__", "__calib_reference__"
LOW = 0.75
"""The simulation keeps the rows above ``LOW`` times the Markov chain's threshold (all
positive rows again for a chart whose simulated ARL there already reaches the target)."""
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
    rows = math.ceil(simulated_alarms * arl0)
    log_rs = [math.log(ratio) for ratio in ratios]
    parts = used.partition_by(GROUP, maintain_order=True, include_key=True)
    arrays = [(part["p"].to_numpy(), part["w"].to_numpy()) for part in parts]
    atoms = [[term_atoms(p, w, log_r) for log_r in log_rs] for p, w in arrays]
    # A guess: 10% on the ARL is 1 to 2% on h, far above LOW's margin.
    lows = [
        [LOW * markov_threshold(*atom, arl0, tolerance=0.1) for atom in group] for group in atoms
    ]
    simulated = simulate([(p, w, log_rs, low) for (p, w), low in zip(arrays, lows)], rows, seed)
    found = [[simulated_threshold(cycles, arl0) for cycles in group] for group in simulated]
    # The Markov chain's guess was too high: again from every positive S.
    again = [(g, j) for g, group in enumerate(found) for j, f in enumerate(group) if f is None]
    redone = simulate([(*arrays[g], [log_rs[j]], [0.0]) for g, j in again], rows, seed)
    for (g, j), (cycles,) in zip(again, redone):
        found[g][j] = simulated_threshold(cycles, arl0)
    records = []
    for g, part in enumerate(parts):
        for j, ratio in enumerate(ratios):
            estimate = found[g][j]
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
                    "rows_simulated": rows,
                }
            )
    schema = pl.Schema({**df.select(GROUP, *keys).schema, **THRESHOLD_COLUMNS})
    return pl.DataFrame(records, schema=schema, orient="row")


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
    first = _first_round(df, problem, time, thresholds, state)
    for ratio in thresholds["odds_ratio"].unique(maintain_order=True):
        round_one = first.filter(pl.col("odds_ratio") == ratio)
        ends.append(round_one.filter(~pl.col("alarmed")).select(ends[0].columns))
        alarmed = round_one.filter(pl.col("alarmed"))[GROUP]
        if alarmed.is_empty():
            continue
        # The charts that alarm, again from their start, one round per alarm.
        rows = df.filter(pl.col(GROUP).is_in(alarmed.implode()))
        chart = thresholds.filter(
            pl.col("odds_ratio") == ratio, pl.col(GROUP).is_in(alarmed.implode())
        )
        found, end = _alarm_rows_rounds(
            rows, problem, time, chart.select(GROUP, "threshold"), state, ratio
        )
        results.append(found.drop("n").with_columns(odds_ratio=pl.lit(ratio)))
        ends.append(end.select(GROUP, pl.lit(ratio).alias("odds_ratio"), *CHART_STATE))
    found = pl.concat(results)
    keyed = df.filter(first_of_group()).select(GROUP, *keys)
    columns = [*keys, time, "odds_ratio", "statistic", "threshold", "run_start"]
    alarms = (
        found.join(keyed, on=GROUP, maintain_order="left")
        .sort(GROUP, time, "odds_ratio", maintain_order=True)  # ties: raised first, first
        .select(columns)
    )
    return alarms, pl.concat(ends).sort(GROUP, "odds_ratio", maintain_order=True)


def _seeded(step: str, total: str) -> pl.Expr:
    """The chart's terms `step`, the group's first one plus the seed `total`: their
    cumulative sum is C + W_1, then + W_2, ..., the additions of one pass over the whole
    log (x + 0.0 is x on the other rows)."""
    return pl.col(step) + pl.when(first_of_group()).then(pl.col(total)).otherwise(0.0)


def first_of_group() -> pl.Expr:
    """True on each group's first row, of rows grouped as :func:`ordered_rows` gives them."""
    return pl.col(GROUP).ne_missing(pl.col(GROUP).shift(1))


def _alarm_rows_rounds(
    rows: pl.DataFrame,
    problem: Problem,
    time: str,
    chart: pl.DataFrame,
    state: pl.DataFrame | None,
    ratio: float,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The alarms and end state of the chart of odds ratio `ratio` of each group of
    `chart` (``GROUP``, ``threshold``), continued from `state`, over its rows."""
    step, flag = cusum_step(problem, math.log(ratio))
    start = _start(chart, state, ratio, rows.schema[time])
    numbered = (
        rows.select(GROUP, time, step.alias("step"), flag.alias("flag"))
        .join(start.select(GROUP, "total"), on=GROUP, maintain_order="left")
        .with_columns(_seeded("step", "total").alias("total"))
        .select(
            GROUP,
            time,
            pl.int_range(pl.len()).over(GROUP).alias("n"),
            pl.col("total").cum_sum().over(GROUP),
            "flag",
        )
        .join(chart, on=GROUP, maintain_order="left")
    )
    return _rounds(numbered, time, start.drop("total"))


def _first_round(
    df: pl.DataFrame,
    problem: Problem,
    time: str,
    thresholds: pl.DataFrame,
    state: pl.DataFrame | None,
) -> pl.DataFrame:
    """Per (group, odds ratio) of `thresholds`: whether the chart continued from `state`
    alarms among `df`'s rows (``alarmed``) and, where it does not, its end state
    (:data:`CHART_STATE`): the first round of every chart, in one pass of the rows.

    The chart's arithmetic is that of :func:`_rounds`' first round (the same seeded
    cumulative sum, the same running minimum), so a chart that does not alarm ends in
    the state the rounds would give it, to the bit; the rounds run only for the others.
    """
    dtype = df.schema[time]
    if thresholds.is_empty() or df.is_empty():  # no chart
        columns = {GROUP: pl.Int64, "odds_ratio": pl.Float64, "alarmed": pl.Boolean}
        columns.update(dict.fromkeys(CHART_STATE[:3], pl.Float64))
        return pl.DataFrame(schema={**columns, "run_start": dtype})
    ratios: list[float] = thresholds["odds_ratio"].unique(maintain_order=True).to_list()
    starts = _starts(thresholds, state, ratios, dtype)
    # A row per group 0, 1, ..., in order: each row takes its group's start by position
    # (`gather`), the cost of a join without its hashing.
    groups = int(df.item(df.height - 1, GROUP)) + 1  # the last row's group: the largest
    every_group = pl.DataFrame({GROUP: range(groups)}, schema={GROUP: pl.Int64})
    by_group = every_group.join(starts, on=GROUP, how="left", maintain_order="left")

    def start(name: str) -> pl.Expr:
        return pl.lit(by_group[name]).gather(pl.col(GROUP))

    n = range(len(ratios))
    # Each stage a column of its own: an expression inside `over` is evaluated group by
    # group, a column is not.
    terms = []
    for j, ratio in enumerate(ratios):
        step, flag = cusum_step(problem, math.log(ratio))
        seed = pl.when(first_of_group()).then(start(f"total_{j}")).otherwise(0.0)
        terms += [(step + seed).alias(f"step_{j}"), flag.alias(f"flag_{j}")]
    totals = [pl.col(f"step_{j}").cum_sum().over(GROUP).alias(f"c_{j}") for j in n]
    runs = [(pl.col(f"c_{j}") - start(f"base_{j}")).alias(f"run_{j}") for j in n]
    lows = [pl.col(f"run_{j}").cum_min().over(GROUP).alias(f"low_{j}") for j in n]
    charts = [
        (pl.col(f"run_{j}") - pl.min_horizontal(f"low_{j}", start(f"floor_{j}"))).alias(f"s_{j}")
        for j in n
    ]
    summed = []
    for j in n:
        s, flagged = pl.col(f"s_{j}"), pl.col(f"flag_{j}")
        summed += [
            # Some S > h where the largest S is (NaN is above every number, as row by row).
            s.nan_max().alias(f"top_{j}"),
            flagged.any().alias(f"flagged_{j}"),
            pl.col(f"c_{j}").last().alias(f"last_{j}"),
            pl.col(f"run_{j}").min().alias(f"run_min_{j}"),
            pl.col(time).filter((s == 0.0) & ~flagged).last().alias(f"zero_{j}"),
        ]
    done = (
        df.select(GROUP, time, *terms)
        .with_columns(totals)
        .with_columns(runs)
        .with_columns(lows)
        .with_columns(charts)
        .group_by(GROUP)
        .agg(summed)
        .join(starts, on=GROUP)
    )
    return pl.concat(
        done.select(
            GROUP,
            pl.lit(ratio).alias("odds_ratio"),
            ((pl.col(f"top_{j}") > pl.col(f"threshold_{j}")) | pl.col(f"flagged_{j}")).alias(
                "alarmed"
            ),
            pl.col(f"last_{j}").alias("total"),
            pl.col(f"base_{j}").alias("base"),
            pl.min_horizontal(f"floor_{j}", f"run_min_{j}").alias("floor"),
            pl.coalesce(f"zero_{j}", f"restart_{j}").cast(dtype).alias("run_start"),
        )
        for j, ratio in enumerate(ratios)
    )


def _starts(
    thresholds: pl.DataFrame, state: pl.DataFrame | None, ratios: list[float], dtype: pl.DataType
) -> pl.DataFrame:
    """Per group: each chart's :func:`_start` and threshold, the columns of the chart of
    ``ratios[j]`` suffixed with ``_j``."""
    starts = thresholds.select(GROUP).unique(maintain_order=True)
    for j, ratio in enumerate(ratios):
        chart = thresholds.filter(pl.col("odds_ratio") == ratio).select(GROUP, "threshold")
        start = _start(chart, state, ratio, dtype).join(chart, on=GROUP).drop("after")
        named = {c: f"{c}_{j}" for c in start.columns if c != GROUP}
        starts = starts.join(start.rename(named), on=GROUP)
    return starts


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
    # Columns before `over` (an expression inside it is evaluated group by group).
    run = pl.col("run")
    chart = run - pl.min_horizontal(run.cum_min().over(GROUP), pl.col("floor"))
    zero = pl.when((pl.col("statistic") == 0.0) & ~pl.col("flag")).then(pl.col(time))
    return (
        lf.with_columns(run=pl.col("total") - pl.col("base"))
        .with_columns(statistic=chart)
        .with_columns(zero.alias("run_start"))
        .with_columns(pl.col("run_start").forward_fill().over(GROUP).fill_null(pl.col("restart")))
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
