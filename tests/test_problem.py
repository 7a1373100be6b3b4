"""The one refused rule equals the union of its checks (the reasons the messages give).

Binary data go through the public :func:`polars_calib.refused_rows` (the rule's count
beside each check's, per row). Probability vectors have no public per-check count yet,
so their rule is read from the private problem.
"""

from __future__ import annotations

import math
import sys

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import polars_calib as pc
from polars_calib._core.problem import vector_problem

ODD = [None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, 5e-324, 1.0 + 2**-52, -1e-300, 0.5, 2.0]


def _agree_per_row(frame: pl.DataFrame, weight: str | None) -> None:
    """Each row is refused (by the rule) exactly when some check counts it."""
    why = (
        frame.with_row_index("row")
        .group_by("row", maintain_order=True)
        .agg(why=pc.refused_rows("p", "y", weight=weight))
        .unnest("why")
    )
    # The rows' checks: the group's check of its total weight refuses no row of its own.
    group_checks = ("weights of a group summing to 1e300 or more (rescale them)",)
    checks = [c for c in why.columns if c not in ("row", "rows", "refused", *group_checks)]
    assert checks, why.columns
    got = why.select(rule=pl.col("refused") > 0, union=pl.any_horizontal(pl.col(checks) > 0))
    assert got["rule"].to_list() == got["union"].to_list()


def _agree(frame: pl.DataFrame, problem: object) -> None:
    rule = problem.refused  # type: ignore[attr-defined]
    checks = problem.checks  # type: ignore[attr-defined]
    union = pl.any_horizontal([c.bad.fill_null(False) for c in checks if not c.whole])
    got = frame.select(rule=rule.fill_null(False), union=union)
    assert got["rule"].to_list() == got["union"].to_list()


@settings(max_examples=80, deadline=None)
@given(
    p=st.lists(st.sampled_from(ODD) | st.floats(allow_nan=True), min_size=1, max_size=30),
    y=st.lists(st.sampled_from([None, 0, 1, 2, -1]), min_size=1, max_size=30),
    w=st.lists(st.sampled_from(ODD) | st.floats(allow_nan=True), min_size=1, max_size=30),
)
@example(p=[math.nan, None, 0.0, 1.0], y=[None, 1, 2, 0], w=[1.0, -0.0, math.inf, None])
def test_binary_rule_equals_its_checks(
    p: list[float | None], y: list[int | None], w: list[float | None]
) -> None:
    n = min(len(p), len(y), len(w))
    frame = pl.DataFrame(
        {"p": p[:n], "y": y[:n], "w": w[:n]},
        schema={"p": pl.Float64, "y": pl.Int64, "w": pl.Float64},
    )
    _agree_per_row(frame, "w")
    _agree_per_row(frame, None)
    _agree_per_row(frame.with_columns(pl.col("p").cast(pl.Float32)), None)


@pytest.mark.parametrize("reduction", ["confidence", "top_label", "classwise"])
def test_vector_rule_equals_its_checks(reduction: str) -> None:
    frame = pl.DataFrame(
        {
            "probs": [
                [0.2, 0.8],
                [0.5, None],
                [1.2, -0.2],
                [0.5, 0.6],
                None,
                [math.nan, 1.0],
                [0.3, 0.7],
                [0.3, 0.7],
                [],
                [0.1, 0.9],
            ],
            "y": [1, 0, 0, 1, 1, 0, 2, -1, 0, None],
            "w": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0],
        }
    )
    _agree(frame, vector_problem("probs", "y", "w", 1e-6, reduction))  # type: ignore[arg-type]


def _fate(p: float | None, y: object, w: float | None, pos_label: object) -> str:
    """A row's fate by the documented rule, in plain Python."""
    bad_p = p is not None and not (0.0 <= p <= 1.0)  # NaN compares false: refused
    bad_y = pos_label is None and y is not None and y not in (0, 1)
    # 0, or a normal positive float: negative, NaN, infinite and subnormal are refused.
    bad_w = w is not None and not (w == 0.0 or 2.2250738585072014e-308 <= w <= sys.float_info.max)
    if bad_p or bad_y or bad_w:
        return "refused"
    return "ignored" if None in (p, y, w) else "used"


@settings(max_examples=60, deadline=None)
@given(
    p=st.lists(st.sampled_from(ODD), min_size=1, max_size=25),
    y=st.lists(st.sampled_from([None, 0, 1, 2, -1]), min_size=1, max_size=25),
    w=st.lists(st.sampled_from(ODD), min_size=1, max_size=25),
    pos_label=st.sampled_from([None, 2]),
)
@example(p=[None, 0.5, 1.5, None], y=[2, None, None, 1], w=[1.0, 1.0, 1.0, -1.0], pos_label=None)
def test_each_row_is_used_refused_or_ignored_in_the_table(
    p: list[float | None], y: list[int | None], w: list[float | None], pos_label: object
) -> None:
    # The table's one key decides each row's fate in one expression (refused before
    # null, a null before a bin); per row (one group each): a bin when used, the null
    # bin counting it when refused, the null bin counting 0 when ignored.
    n = min(len(p), len(y), len(w))
    frame = pl.LazyFrame(
        {"row": range(n), "p": p[:n], "y": y[:n], "w": w[:n]},
        schema={"row": pl.Int64, "p": pl.Float64, "y": pl.Int64, "w": pl.Float64},
    )
    table = pc.bin_statistics(frame, "p", "y", by="row", weight="w", pos_label=pos_label)
    fates = (
        table.collect()
        .group_by("row")
        .agg(
            used=pl.col("bin").is_not_null().any(),
            refused=(pl.col("bin").is_null() & (pl.col("count") > 0)).any(),
        )
        .sort("row")
    )
    got = [
        "used" if used else "refused" if refused else "ignored"
        for used, refused in fates.select("used", "refused").iter_rows()
    ]
    assert fates["row"].to_list() == list(range(n))
    assert got == [_fate(*row, pos_label) for row in zip(p[:n], y[:n], w[:n])]
