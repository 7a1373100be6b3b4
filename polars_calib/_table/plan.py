"""Check a frame's schema and turn its columns into a problem with group keys."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import polars as pl

from polars_calib._core.exprs import GroupKeys, Keys
from polars_calib._core.options import (
    REDUCTIONS,
    SUM_TOLERANCE,
    TABLE_REDUCTIONS,
    TableReduction,
    check_choice,
    check_every,
    check_sum_tol,
)
from polars_calib._core.problem import (
    WEIGHT_LIMIT,
    Check,
    Problem,
    binary_problem,
    vector_problem,
)
from polars_calib._core.validation import (
    CalibrationDataError,
    check_pos_label,
    check_schema,
    is_vector,
    problem_counts,
    raise_for_problems,
)
from polars_calib._table.columns import CELL, DISTINCT_IDS, RESERVED, SHARED_IDS, shared_ids

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


@dataclass(frozen=True)
class Prepared:
    """A frame of predictions checked and turned into a problem, with its group keys.

    ``reduction`` is None for binary data. ``lf`` holds the computed keys. ``label``
    and ``pos_label`` are the label column and the positive label, if given.
    """

    data: pl.DataFrame | pl.LazyFrame
    lf: pl.LazyFrame
    problem: Problem
    keys: list[str]
    reduction: TableReduction | None
    label: str | None = None
    pos_label: Any = None


def prepare(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    weight: str | None = None,
    reduction: TableReduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    time: str | None = None,
    every: str | None = None,
    reserved: frozenset[str] = frozenset(),
    canonical: bool = False,
) -> Prepared:
    """Check a frame's schema (no data read) and build its problem and group keys.

    Probability vectors (an Array or List column) take `reduction` (``"confidence"``
    by default); binary data refuse a `reduction`. ``"canonical"`` only with
    `canonical` (the functions that build and finish canonical tables).
    """
    keys = group_keys(data, by, time, every, reserved)
    dtype = data.collect_schema().get(prob) if isinstance(prob, str) else None
    vectors = dtype is not None and is_vector(dtype)
    if reduction is not None:
        check_choice("reduction", reduction, TABLE_REDUCTIONS if canonical else REDUCTIONS)
        vectors = True  # the schema check says what the column holds
    tol = check_sum_tol(sum_tol)
    if vectors and pos_label is not None:
        msg = (
            f"`pos_label` is for binary labels, got {pos_label!r} with probability vectors "
            f"in {prob!r}: their labels are class indices 0 .. K - 1 (no `pos_label`)"
        )
        raise ValueError(msg)
    if vectors and "class" in keys.names:
        msg = "`by` cannot hold 'class': the reduction keys its statistics by class"
        raise ValueError(msg)
    lf = check_schema(
        data,
        prob,
        label,
        weight,
        keys.columns(),
        vectors=vectors,
        time=time,
        pos_label=pos_label,
    )
    roles = {"probability": prob, "label": label, "weight": weight}
    lf, names = with_keys(lf, keys, time, every, roles)
    if vectors:
        used_reduction: TableReduction = reduction or "confidence"
        problem = vector_problem(prob, label, weight, tol, used_reduction)
        return Prepared(data, lf, problem, names, used_reduction)
    problem = binary_problem(prob, label, weight, pos_label)
    return Prepared(data, lf, problem, names, None, label, pos_label)


def group_keys(
    data: object, by: Keys, time: str | None, every: str | None, reserved: frozenset[str]
) -> GroupKeys:
    """Check the group keys and the `time`/`every` window of a frame function."""
    keys = GroupKeys(by, reserved | RESERVED)
    if (time is None) != (every is None):
        msg = "`time` and `every` go together: give both or neither"
        raise ValueError(msg)
    if every is not None:
        check_every(every)
    if time is not None and time in keys.names:
        msg = f"`by` cannot hold {time!r}: it is the `time` window key"
        raise ValueError(msg)
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    return keys


def with_keys(
    lf: pl.LazyFrame,
    keys: GroupKeys,
    time: str | None,
    every: str | None,
    roles: dict[str, str | None],
) -> tuple[pl.LazyFrame, list[str]]:
    """`lf` with its computed keys and its `time` window (truncated to `every`) added,
    and the names of all its keys; a computed key named like a column of `roles`
    (role: column) is refused."""
    names = list(keys.names)
    added = keys.computed()
    _check_key_names(added, roles)
    if time is not None and every is not None:
        added.append(pl.col(time).dt.truncate(every).alias(time))
        names.append(time)
    return (lf.with_columns(added) if added else lf), names


def _check_key_names(added: list[pl.Expr], columns: dict[str, str | None]) -> None:
    """Refuse a computed `by` key named like the probability, label or weight column.

    The key is added to the frame under its name: it would replace that column, and
    the metrics would read the key (``by=pl.col("p") > 0.5`` made every probability 0
    or 1).
    """
    for expr in added:
        name = expr.meta.output_name()
        for role, column in columns.items():
            if name == column:
                msg = (
                    f"`by` key {name!r} is an expression named like the {role} column "
                    f"{column!r}: it would replace that column; name it with .alias(...)"
                )
                raise ValueError(msg)


def collect_checked(prepared: Prepared, plan: pl.LazyFrame) -> pl.DataFrame:
    """Collect a statistics table; raise :class:`CalibrationDataError` if it counts refused rows.

    Valid data are read once. Bad data are read a second time, to count the rows of
    each problem for the message.
    """
    return check_statistics(
        prepared, plan.collect(), lambda checks: problem_counts(prepared.lf, checks).collect()
    )


def check_statistics(
    prepared: Prepared,
    stats: pl.DataFrame,
    count_problems: Callable[[Sequence[Check]], pl.DataFrame],
) -> pl.DataFrame:
    """Return `stats`; raise :class:`CalibrationDataError` if it counts refused rows.

    `count_problems` reads the data again (only then) and returns, for the message,
    the counts of :func:`polars_calib._core.validation.problem_counts` for the given checks
    (another engine computes them where its data are).
    """
    binned = CELL if CELL in stats.columns else "bin"
    if stats.filter(pl.col(binned).is_null())["count"].sum():
        checks = prepared.problem.checks
        raise_for_problems(count_problems(checks), checks)
    check_weight_totals(prepared, stats, binned)
    if DISTINCT_IDS in stats.columns:
        check_shared_ids(prepared, stats)
    if prepared.pos_label is not None and prepared.label is not None:
        observed = stats.filter(pl.col("replicate").is_null()) if "replicate" in stats else stats
        used = observed.filter(pl.col(binned).is_not_null())
        # Only a table without a positive reads the labels again, to be sure.
        if used["count"].sum() and not used["sum_y"].sum():
            check_pos_label(prepared.lf, prepared.label, prepared.pos_label)
    if "sum_confidence" in stats.columns:
        # Classwise: every row is in every class, so classes with different row counts
        # mean vectors of different lengths (read again only then, for the message).
        per_class = stats.group_by([*prepared.keys, "class"]).agg(pl.col("count").sum())
        counts = pl.col("count").n_unique()
        uneven = per_class.select((counts.over(prepared.keys) if prepared.keys else counts) > 1)
        if uneven.to_series().any():
            whole = [c for c in prepared.problem.checks if c.whole]
            raise_for_problems(count_problems(whole), whole)
    return stats


def check_weight_totals(prepared: Prepared, stats: pl.DataFrame, binned: str = "bin") -> None:
    """Raise :class:`CalibrationDataError` for groups whose weights sum to ``WEIGHT_LIMIT``
    or more (their sums overflow: see ``docs/reliability-and-summary.md``, "Weights")."""
    weight = prepared.problem.weight
    if weight is None:
        return
    used = pl.col(binned).is_not_null()
    if "replicate" in stats.columns:
        used = used & pl.col("replicate").is_null()
    keys = prepared.keys
    per_class = [*keys, "class"] if "class" in stats.columns else keys
    classwise = "sum_confidence" in stats.columns  # every row is in every class
    totals = stats.filter(used).group_by(per_class or pl.lit(0)).agg(pl.col("weight").sum())
    if keys:
        total = pl.col("weight").max() if classwise else pl.col("weight").sum()
        totals = totals.group_by(keys).agg(total)
    else:
        totals = totals.select(pl.col("weight").max() if classwise else pl.col("weight").sum())
    raise_for_weight_totals(prepared, totals)


def check_shared_ids(prepared: Prepared, stats: pl.DataFrame) -> None:
    """Raise :class:`CalibrationDataError` for groups whose rows share their resampling ids."""
    group = [*prepared.keys, *(["class"] if "class" in stats.columns else [])]
    raise_for_shared_ids(prepared, shared_ids(stats.lazy(), group).collect())


def check_row_ids(prepared: Prepared, lf: pl.LazyFrame, identity: pl.Expr) -> None:
    """Raise :class:`CalibrationDataError` for groups of `lf` whose rows share their
    `identity` (a pass of its own: the audit's observed cells are counted apart)."""
    per_group = lf.group_by(prepared.keys or pl.lit(True)).agg(
        pl.len().cast(pl.Int64).alias("count"),
        identity.approx_n_unique().cast(pl.Int64).alias(DISTINCT_IDS),
    )
    ratio = pl.col(DISTINCT_IDS) / pl.col("count")
    shared = per_group.with_columns((ratio < SHARED_IDS).alias("shared"))
    raise_for_shared_ids(prepared, shared.collect(engine="streaming"))


def raise_for_shared_ids(prepared: Prepared, per_group: pl.DataFrame) -> None:
    """Raise for the groups of `per_group` (keys, ``count``, ``distinct_ids``, ``shared``)
    whose rows share their resampling ids."""
    shared = per_group.filter("shared")
    if shared.height:
        first = shared.row(0, named=True)
        where = ", ".join(f"{k}={first[k]!r}" for k in prepared.keys) or "the whole frame"
        msg = (
            f"invalid calibration data: the resampling `id` repeats: about "
            f"{first[DISTINCT_IDS]} distinct ids for {first['count']} rows "
            f"(first of {shared.height} group(s): {where}); rows sharing an id share their "
            "draws, so the consistency test and the intervals would be wrong; give an id unique to "
            "each row, or none (the row's position)"
        )
        raise CalibrationDataError(msg)


def raise_for_weight_totals(prepared: Prepared, totals: pl.DataFrame) -> None:
    """Raise :class:`CalibrationDataError` if a group's total ``weight`` in `totals` (one
    row per group: its keys and its total) is ``WEIGHT_LIMIT`` or more, or NaN."""
    weight = prepared.problem.weight
    if weight is None:
        return
    over = totals.filter(pl.col("weight").is_nan() | (pl.col("weight") >= WEIGHT_LIMIT))
    if over.height:
        name = weight.meta.output_name(raise_if_undetermined=False) or "weight"
        first = over.row(0, named=True)
        group = ", ".join(f"{k}={first[k]!r}" for k in prepared.keys) or "the whole frame"
        msg = (
            f"invalid calibration data: column {name!r}: the weights of {over.height} "
            "group(s) sum to 1e300 or more, where weighted sums overflow "
            f"(first: {group}, total {first['weight']:g}); rescale the weights, for example "
            "divide them by their largest value"
        )
        raise CalibrationDataError(msg)


def same_kind(data: FrameT, result: pl.LazyFrame) -> FrameT:
    """`result` collected when `data` is a DataFrame, else the plan itself."""
    done: pl.DataFrame | pl.LazyFrame = (
        result.collect() if isinstance(data, pl.DataFrame) else result
    )
    return cast(FrameT, done)
