"""Central prediction intervals (issue #25): coverage, width, interval score, coverage gap, WIS.

Each expression is checked against the peers' numbers in
``tests/data/regression/fixtures.json`` (MAPIE 1.6, scoringrules 0.10, netcal 1.4,
uncertainty-toolbox 0.1.1) and against ``tests/reference_regression.py`` on generated
frames with groups and integer weights (a weight ``k`` is the row repeated ``k`` times,
so the unweighted reference on repeated rows is the weighted value), in every context
the expressions claim; then the refused rule, row by row.
"""

from __future__ import annotations

import json
import math
import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_calib as pc
import reference_regression as rr
from conftest import FrameContext
from polars_calib._core.prediction_intervals import interval_problem, nested_intervals_problem

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"
RTOL = 1e-12
INF = math.inf
NAN = math.nan


@cache
def fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


def records(peer: str, function: str) -> list[dict[str, Any]]:
    return [r for r in fixtures()["records"] if r["peer"] == peer and r["function"] == function]


def record_id(record: dict[str, Any]) -> str:
    return f"{record['dataset']}-{record['group']}-{record['options']}"


def interval_frame(dataset: str) -> pl.DataFrame:
    """A dataset of fixtures.json with one lower and upper column per nominal level."""
    d = fixtures()["datasets"][dataset]
    lower, upper = np.asarray(d["lower"]), np.asarray(d["upper"])
    columns: dict[str, Any] = {"y": d["y"], "group": d["group"]}
    for j in range(len(d["levels"])):
        columns[f"lo{j}"], columns[f"hi{j}"] = lower[:, j], upper[:, j]
    return pl.DataFrame(columns)


def of_group(df: pl.DataFrame, group: int | None) -> pl.DataFrame:
    return df if group is None else df.filter(pl.col("group") == group)


def value(df: pl.DataFrame, expr: pl.Expr) -> Any:
    return df.select(expr).item()


# --------------------------------------------------------------------------
# The peers' numbers
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [r for r in records("mapie", "regression_coverage_score") if r["dataset"] == "intervals"],
    ids=record_id,
)
def test_coverage_is_mapie_regression_coverage_score(record: dict[str, Any]) -> None:
    df = of_group(interval_frame("intervals"), record["group"])
    for j, expected in enumerate(record["value"]):
        got = value(df, pc.interval_coverage("y", lower=f"lo{j}", upper=f"hi{j}"))
        assert got == pytest.approx(expected, rel=RTOL)


@pytest.mark.parametrize(
    "record",
    [r for r in records("mapie", "regression_mean_width_score") if r["dataset"] == "intervals"],
    ids=record_id,
)
def test_width_is_mapie_regression_mean_width_score(record: dict[str, Any]) -> None:
    df = of_group(interval_frame("intervals"), record["group"])
    for j, expected in enumerate(record["value"]):
        got = value(df, pc.interval_width(lower=f"lo{j}", upper=f"hi{j}"))
        assert got == pytest.approx(expected, rel=RTOL)


@pytest.mark.parametrize(
    "record",
    [r for r in records("mapie", "regression_mwi_score") if r["dataset"] == "intervals"],
    ids=record_id,
)
def test_interval_score_is_mapie_regression_mwi_score(record: dict[str, Any]) -> None:
    df = of_group(interval_frame("intervals"), record["group"])
    j, level = record["options"]["level_index"], record["options"]["confidence_level"]
    got = value(df, pc.interval_score("y", lower=f"lo{j}", upper=f"hi{j}", level=level))
    assert got == pytest.approx(record["value"], rel=RTOL)


@pytest.mark.parametrize("record", records("mapie", "coverage_gap"), ids=record_id)
def test_coverage_gap_is_mapie_coverage_gap(record: dict[str, Any]) -> None:
    df = interval_frame(record["dataset"])
    o = record["options"]
    j = o["level_index"]
    average = "weighted" if o["weighted"] else "macro"
    gap = pc.coverage_gap(
        "y",
        lower=f"lo{j}",
        upper=f"hi{j}",
        level=o["confidence_level"],
        groups="group",
        average=average,
    )
    assert value(df, gap) == pytest.approx(record["value"], rel=RTOL)


def test_coverage_gap_reproduces_mapie_docstring_example() -> None:
    df = pl.DataFrame(
        {
            "y": [0.0, 1.0, 2.0, 3.0],
            "g": [0, 0, 1, 1],
            "lo": [0.0, 0.0, 1.0, 4.0],
            "hi": [1.0, 2.0, 2.0, 5.0],
        }
    )
    options: dict[str, Any] = {"lower": "lo", "upper": "hi", "level": 0.75, "groups": "g"}
    assert value(df, pc.coverage_gap("y", **options)) == 0.25
    assert value(df, pc.coverage_gap("y", average="weighted", **options)) == 0.25
    # Group 0 covers both rows (gap 0.25 above), group 1 one of two (0.25 below): a
    # pooled coverage of 0.75 would show no gap at all.
    assert value(df, pc.interval_coverage("y", lower="lo", upper="hi")) == 0.75


def test_mapie_swaps_reversed_bounds_where_the_package_refuses_them() -> None:
    """MAPIE scores a reversed row as if it were right (mwi, |width|); the group is null here."""
    df = interval_frame("mapie_reversed")
    (width,) = records("mapie", "regression_mean_width_score")[-1]["value"]
    mwi = next(
        r for r in records("mapie", "regression_mwi_score") if r["dataset"] == "mapie_reversed"
    )
    assert width == 1.25 and mwi["value"] == 1.25  # MAPIE's numbers, reversed rows included
    level = mwi["options"]["confidence_level"]
    bounds: dict[str, Any] = {"lower": "lo0", "upper": "hi0"}
    result = df.select(
        coverage=pc.interval_coverage("y", **bounds),
        width=pc.interval_width(**bounds),
        score=pc.interval_score("y", level=level, **bounds),
    )
    assert result.row(0) == (None, None, None)
    # Without the reversed rows, the published numbers.
    kept = df.filter(pl.col("lo0") <= pl.col("hi0"))
    assert value(kept, pc.interval_width(**bounds)) == rr.mean_width(kept["lo0"], kept["hi0"])


def quantile_frame() -> tuple[pl.DataFrame, list[float]]:
    d = fixtures()["datasets"]["quantiles"]
    q = np.asarray(d["q"])
    columns = {"y": d["y"], **{f"q{j}": q[:, j] for j in range(q.shape[1])}}
    return pl.DataFrame(columns), d["levels"]


def per_row(df: pl.DataFrame, expr: pl.Expr) -> np.ndarray:
    """`expr` per row, as a group_by over the row index (each row a group)."""
    out = df.with_row_index("row").group_by("row").agg(expr.alias("v")).sort("row")
    return out["v"].to_numpy()


@pytest.mark.parametrize(
    "record",
    [r for r in records("scoringrules", "interval_score") if r["dataset"] == "intervals"],
    ids=record_id,
)
def test_interval_score_per_row_is_scoringrules(record: dict[str, Any]) -> None:
    df = interval_frame("intervals")
    j, alpha = record["options"]["level_index"], record["options"]["alpha"]
    expr = pc.interval_score("y", lower=f"lo{j}", upper=f"hi{j}", level=1.0 - alpha)
    np.testing.assert_allclose(per_row(df, expr), record["value"], rtol=RTOL)
    assert value(df, expr) == pytest.approx(np.mean(record["value"]), rel=RTOL)


def test_interval_score_of_quantile_pairs_is_scoringrules() -> None:
    df, levels = quantile_frame()
    (record,) = [
        r for r in records("scoringrules", "interval_score") if r["dataset"] == "quantiles"
    ]
    expected = np.asarray(record["value"])
    last = len(levels) - 1
    for k, alpha in enumerate(record["options"]["alpha"]):
        lo = levels.index(next(t for t in levels if math.isclose(t, alpha / 2)))
        expr = pc.interval_score("y", lower=f"q{lo}", upper=f"q{last - lo}", level=1.0 - alpha)
        np.testing.assert_allclose(per_row(df, expr), expected[:, k], rtol=RTOL)


def wis_expr(levels: list[float], alphas: list[float]) -> pl.Expr:
    last, k = len(levels) - 1, len(levels) // 2
    lows = [levels.index(next(t for t in levels if math.isclose(t, a / 2))) for a in alphas]
    return pc.weighted_interval_score(
        "y",
        median=f"q{k}",
        lower=[f"q{j}" for j in lows],
        upper=[f"q{last - j}" for j in lows],
        levels=[1.0 - a for a in alphas],
    )


def test_weighted_interval_score_is_scoringrules_numba_not_numpy() -> None:
    df, levels = quantile_frame()
    found = {r["options"]["backend"]: r for r in records("scoringrules", "weighted_interval_score")}
    alphas = found["numba"]["options"]["alpha"]
    got = per_row(df, wis_expr(levels, alphas))
    np.testing.assert_allclose(got, found["numba"]["value"], rtol=RTOL)
    # The numpy backend adds the median, not |y - median|: another number on most rows.
    assert np.mean(np.isclose(got, found["numpy"]["value"], rtol=1e-6)) < 0.5
    assert value(df, wis_expr(levels, alphas)) == pytest.approx(
        np.mean(found["numba"]["value"]), rel=RTOL
    )


def test_weighted_interval_score_is_twice_the_mean_pinball_loss() -> None:
    """Bracher et al.'s identity: with weights alpha/2 and 1/2, WIS = 2 mean pinball over 2K+1."""
    df, levels = quantile_frame()
    got = per_row(df, wis_expr(levels, [0.1, 0.2, 0.5]))
    q = df.select(pl.col("^q.*$")).to_numpy()
    used = range(len(levels))  # 0.05 ... 0.95: every quantile of the 2K + 1
    y = df["y"].to_numpy()
    pinball = np.mean([rr.pinball(y, q[:, j], levels[j]) for j in used], axis=0)
    np.testing.assert_allclose(got, 2.0 * pinball, rtol=1e-12)


def netcal_gaussian() -> pl.DataFrame:
    d = fixtures()["datasets"]["gaussian"]
    return pl.DataFrame({"y": d["y"], "mu": d["mu"], "sigma": d["sigma"], "group": d["group"]})


@pytest.mark.parametrize("function", ["PICP", "MPIW"])
def test_netcal_picp_and_mpiw_for_the_gaussian_central_bounds(function: str) -> None:
    """netcal's PICP tests (y - mu)^2 / sigma^2 <= chi2_1(tau); with the bounds given as
    columns, the coverage of those bounds is the same share here (no y on a bound)."""
    df = netcal_gaussian()
    found = [r for r in records("netcal", function) if r["dataset"] == "gaussian"]
    assert len(found) == 4  # every row, and each of the three groups
    for record in found:
        rows = of_group(df, record["group"])
        mu, sigma = rows["mu"].to_numpy(), rows["sigma"].to_numpy()
        levels = record["options"]["q"]
        got = []
        for tau in levels:
            lo, hi = rr.central_bounds(mu, sigma, tau)
            bounded = rows.with_columns(lo=pl.Series(lo), hi=pl.Series(hi))
            if function == "PICP":
                got.append(value(bounded, pc.interval_coverage("y", lower="lo", upper="hi")))
            else:
                got.append(value(bounded, pc.interval_width(lower="lo", upper="hi")))
        np.testing.assert_allclose(got, np.ravel(record["value"]), rtol=RTOL)


def test_uncertainty_toolbox_interval_score_is_a_mean_over_levels() -> None:
    df = netcal_gaussian()
    (record,) = [
        r
        for r in records("uncertainty-toolbox", "interval_score")
        if r["dataset"] == "gaussian" and r["group"] is None
    ]
    mu, sigma = df["mu"].to_numpy(), df["sigma"].to_numpy()
    scores = []
    for p in np.linspace(0.01, 0.99, 99):
        lo = mu + sigma * rr.norm_ppf(0.5 - p / 2.0)
        hi = mu + sigma * rr.norm_ppf(0.5 + p / 2.0)
        bounded = df.with_columns(lo=pl.Series(lo), hi=pl.Series(hi))
        expr = pc.interval_score("y", lower="lo", upper="hi", level=float(p))
        scores.append(value(bounded, expr))
    assert float(np.sum(scores) / 99) == pytest.approx(record["value"], rel=1e-12)


# --------------------------------------------------------------------------
# The reference on generated frames: groups, weights, every context
# --------------------------------------------------------------------------


def generated(seed: int, sizes: list[int]) -> pl.DataFrame:
    """Rows of groups 0, 1, ... (`sizes`), on a grid of quarters so that targets tie bounds.

    Group 0's intervals are wide (over-cover), group 1's narrow and shifted (under-cover),
    so the coverage error changes sign across groups; `h` splits each group in two for
    the coverage gap; weights are integers 0 to 3.
    """
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(len(sizes)), sizes)
    n = len(g)
    y = np.round(rng.normal(0.0, 1.0, n) * 4) / 4
    centre = np.round((y + rng.normal(0.0, 0.7, n) + 0.5 * (g == 1)) * 4) / 4
    half = np.where(g % 2 == 0, 1.5, 0.25) * rng.integers(1, 5, n) / 2
    return pl.DataFrame(
        {
            "g": g,
            "h": rng.integers(0, 2, n),
            "y": y,
            "lo": centre - half,
            "hi": centre + half,
            "w": rng.integers(0, 4, n).astype(np.float64),
        }
    )


LEVEL = 0.8


def expressions(weight: str | None) -> dict[str, pl.Expr]:
    bounds: dict[str, Any] = {"lower": "lo", "upper": "hi", "weight": weight}
    gap: dict[str, Any] = {"level": LEVEL, "groups": "h", **bounds}
    return {
        "coverage": pc.interval_coverage("y", **bounds),
        "width": pc.interval_width(**bounds),
        "score": pc.interval_score("y", level=LEVEL, **bounds),
        "gap": pc.coverage_gap("y", **gap),
        "gap_weighted": pc.coverage_gap("y", average="weighted", **gap),
    }


def reference(rows: pl.DataFrame, weighted: bool) -> dict[str, float | None]:
    """The numpy reference of one group; a weight k repeats its row k times."""
    if weighted:
        rows = rows.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode()).drop_nulls()
    if rows.height == 0:
        return dict.fromkeys(["coverage", "width", "score", "gap", "gap_weighted"])
    y, lo, hi, h = (rows[c].to_numpy() for c in ("y", "lo", "hi", "h"))
    return {
        "coverage": rr.interval_coverage(y, lo, hi),
        "width": rr.mean_width(lo, hi),
        "score": float(np.mean(rr.interval_score(y, lo, hi, 1.0 - LEVEL))),
        "gap": rr.coverage_gap(y, lo, hi, h, LEVEL),
        "gap_weighted": rr.coverage_gap(y, lo, hi, h, LEVEL, weighted=True),
    }


def assert_matches_reference(df: pl.DataFrame, result: pl.DataFrame, weighted: bool) -> None:
    for row in result.iter_rows(named=True):
        expected = reference(df.filter(pl.col("g") == row["g"]), weighted)
        for name, number in expected.items():
            if number is None:
                assert row[name] is None, name
            else:
                assert row[name] == pytest.approx(number, rel=RTOL, abs=1e-15), name


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.integers(1, 30), min_size=2, max_size=4),
    weighted=st.booleans(),
)
def test_per_group_matches_the_reference(seed: int, sizes: list[int], weighted: bool) -> None:
    df = generated(seed, sizes)
    exprs = expressions("w" if weighted else None)
    result = df.group_by("g").agg(**exprs).sort("g")
    assert result.height == len(sizes)
    assert_matches_reference(df, result, weighted)


def test_generated_groups_miss_the_level_in_both_directions() -> None:
    """The data of the property test can fail it: coverage above the level in one group,
    below in another, and a pooled coverage that hides part of it."""
    df = generated(7, [200, 200])
    result = df.group_by("g").agg(**expressions(None)).sort("g")
    coverage = result["coverage"].to_list()
    assert coverage[0] > LEVEL > coverage[1]
    ties = df.filter((pl.col("y") == pl.col("lo")) | (pl.col("y") == pl.col("hi"))).height
    assert ties > 10  # bounds inclusive is exercised


def test_every_context_gives_the_same_numbers(frame_context: FrameContext) -> None:
    df = generated(3, [25, 40, 10])
    eager = df.group_by("g").agg(**expressions("w")).sort("g")
    data = frame_context.frame(df)
    got = frame_context.collect(data.group_by("g").agg(**expressions("w")).sort("g"))
    assert_frame_equal(got, eager, check_exact=False, rel_tol=RTOL)
    selected = frame_context.collect(data.filter(pl.col("g") == 1).select(**expressions("w")))
    assert_frame_equal(selected, eager.filter(pl.col("g") == 1).drop("g"), rel_tol=RTOL)
    windows = {name: expr.over("g") for name, expr in expressions("w").items()}
    over = frame_context.collect(data.select("g", **windows).unique().sort("g"))
    assert_frame_equal(over, eager, check_exact=False, rel_tol=RTOL)


# --------------------------------------------------------------------------
# The refused rule: null for the group, never a number
# --------------------------------------------------------------------------


def two_groups(**changed: list[float | None]) -> pl.DataFrame:
    """Two groups of two rows; `changed` replaces columns (group 0 is rows 0 and 1)."""
    columns: dict[str, Any] = {
        "g": [0, 0, 1, 1],
        "y": [0.0, 1.0, 2.0, 3.0],
        "lo": [-1.0, 0.0, 1.0, 4.0],
        "hi": [1.0, 2.0, 2.0, 5.0],
        "m": [0.0, 1.0, 1.5, 4.5],
        "w": [1.0, 2.0, 1.0, 1.0],
    }
    return pl.DataFrame(columns | changed, schema_overrides=dict.fromkeys(changed, pl.Float64))


def all_measures(weight: str | None = None) -> dict[str, pl.Expr]:
    bounds: dict[str, Any] = {"lower": "lo", "upper": "hi", "weight": weight}
    return {
        "coverage": pc.interval_coverage("y", **bounds),
        "width": pc.interval_width(**bounds),
        "score": pc.interval_score("y", level=0.5, **bounds),
        "gap": pc.coverage_gap("y", level=0.5, groups="g", **bounds),
        "wis": pc.weighted_interval_score(
            "y", median="m", lower=["lo"], upper=["hi"], levels=[0.5], weight=weight
        ),
    }


def per_group(df: pl.DataFrame, weight: str | None = None) -> pl.DataFrame:
    return df.group_by("g").agg(**all_measures(weight)).sort("g")


@pytest.mark.parametrize(
    ("column", "bad", "target_free"),
    [
        ("lo", 1.5, False),  # lower above upper (1.0): never swapped
        ("lo", NAN, False),
        ("lo", INF, False),
        ("hi", NAN, False),
        ("hi", -INF, False),
        ("y", NAN, True),
        ("y", INF, True),
        ("y", -INF, True),
        ("w", -1.0, False),
        ("w", NAN, False),
        ("w", 1e-310, False),
        ("m", NAN, True),
    ],
)
def test_a_refused_row_makes_its_group_null(column: str, bad: float, target_free: bool) -> None:
    good = per_group(two_groups(), "w")
    values = two_groups()[column].to_list()
    values[0] = bad
    got = per_group(two_groups(**{column: values}), "w")
    assert got.row(1) == good.row(1)  # the other group is untouched
    refused = got.row(0, named=True)
    # The width reads no target nor median; the coverage gap no median.
    for name in ("coverage", "width", "score", "gap", "wis"):
        if (name == "width" and target_free) or (
            name in ("coverage", "score", "gap") and column == "m"
        ):
            assert refused[name] == good.row(0, named=True)[name]
        else:
            assert refused[name] is None, name


def test_one_sided_intervals_are_used() -> None:
    """lower = -inf or upper = +inf: coverage counts them; width and scores are +inf."""
    df = two_groups(lo=[-INF, 0.0, 1.0, 4.0], hi=[1.0, 2.0, 2.0, INF])
    got = per_group(df)
    assert got["coverage"].to_list() == [1.0, 0.5]
    assert got["width"].to_list() == [INF, INF]
    assert got["score"].to_list() == [INF, INF]
    # A zero weight drops the infinite row (no 0 * inf = NaN).
    weighted = per_group(df.with_columns(w=pl.Series([0.0, 1.0, 1.0, 1.0])), "w")
    assert weighted["width"].to_list() == [2.0, INF]
    assert weighted["coverage"].to_list() == [1.0, 0.5]


def test_a_null_row_is_ignored() -> None:
    for column in ("y", "lo", "hi", "w"):
        values: list[float | None] = list(two_groups()[column].to_list())
        values[0] = None
        got = per_group(two_groups(**{column: values}), "w")
        dropped = per_group(two_groups().slice(1), "w")
        if column == "y":  # the width reads no target: the row's width still counts
            assert got["width"].to_list() == per_group(two_groups(), "w")["width"].to_list()
            got = got.drop("width")
            dropped = dropped.drop("width")
        assert_frame_equal(got, dropped)


def test_a_null_group_key_is_ignored_by_the_coverage_gap() -> None:
    df = two_groups(g=[None, 0.0, 1.0, 1.0])
    gap = pc.coverage_gap("y", lower="lo", upper="hi", level=0.5, groups="g")
    assert value(df, gap) == value(df.slice(1), gap)


def test_empty_and_zero_weight_groups_are_null() -> None:
    empty = two_groups().clear()
    assert per_group(empty).height == 0
    assert empty.select(**all_measures()).row(0) == (None,) * 5
    zero = two_groups(w=[0.0, 0.0, 1.0, 1.0])
    assert per_group(zero, "w").row(0)[1:] == (None,) * 5


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1, NAN, 0.0, 1.0])
def test_a_bad_level_is_a_value_error_naming_it(level: float) -> None:
    with pytest.raises(ValueError, match="`level` must be in"):
        pc.interval_score("y", lower="lo", upper="hi", level=level)
    with pytest.raises(ValueError, match="`level` must be in"):
        pc.coverage_gap("y", lower="lo", upper="hi", level=level, groups="g")
    with pytest.raises(ValueError, match="`levels` must be in"):
        pc.weighted_interval_score("y", median="m", lower=["lo"], upper=["hi"], levels=[level])


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="`level` must be a float"):
        pc.interval_score("y", lower="lo", upper="hi", level=True)
    with pytest.raises(TypeError, match="`levels` must be a sequence"):
        pc.weighted_interval_score("y", median="m", lower=["lo"], upper=["hi"], levels=0.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`lower` and `upper` must be sequences"):
        pc.weighted_interval_score("y", median="m", lower="lo", upper="hi", levels=[0.5])
    with pytest.raises(ValueError, match="as many columns"):
        pc.weighted_interval_score("y", median="m", lower=["lo"], upper=[], levels=[0.5])
    with pytest.raises(ValueError, match="one level per interval"):
        pc.weighted_interval_score("y", median="m", lower=["lo"], upper=["hi"], levels=[0.5, 0.9])
    with pytest.raises(ValueError, match="`average` must be"):
        pc.coverage_gap("y", lower="lo", upper="hi", level=0.5, groups="g", average="micro")  # type: ignore[arg-type]


def test_a_text_column_fails_when_planned_naming_it() -> None:
    df = two_groups().with_columns(pl.col("hi").cast(pl.String))
    with pytest.raises(pl.exceptions.PolarsError, match="column 'hi' must hold numbers"):
        df.select(pc.interval_coverage("y", lower="lo", upper="hi"))


def test_no_unstable_polars_feature() -> None:
    import warnings

    df = generated(5, [20, 20])
    with pl.Config(warn_unstable=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        df.select(**expressions("w"))
        df.group_by("g").agg(**expressions("w"))
        df.lazy().group_by("g").agg(**expressions("w")).collect(engine="streaming")
        two_groups().group_by("g").agg(**all_measures("w"))


# --------------------------------------------------------------------------
# The rule, row by row: its checks, and the documented fate of each row
# --------------------------------------------------------------------------

ODD = [None, NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 5e-324, 2.5, -1e-300, 1e308]


def fate(y: float | None, lo: float | None, hi: float | None, w: float | None) -> str:
    """A row's fate by the documented rule, in plain Python (NaN compares false)."""
    bad_y = y is not None and not math.isfinite(y)
    bad_lo = lo is not None and (math.isnan(lo) or lo == INF)
    bad_hi = hi is not None and (math.isnan(hi) or hi == -INF)
    reversed_ = lo is not None and hi is not None and lo > hi
    bad_w = w is not None and not (w == 0.0 or 2.2250738585072014e-308 <= w <= sys.float_info.max)
    if bad_y or bad_lo or bad_hi or reversed_ or bad_w:
        return "refused"
    return "ignored" if None in (y, lo, hi, w) else "used"


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(*[st.sampled_from(ODD) | st.floats(allow_nan=True)] * 4), min_size=1, max_size=25
    )
)
@example(rows=[(0.0, NAN, None, 1.0), (None, 2.0, 1.0, 1.0), (1.0, -INF, INF, 0.0)])
@example(rows=[(1.0, 0.0, NAN, None), (INF, None, None, None), (0.0, INF, INF, 1.0)])
def test_each_row_is_used_refused_or_ignored_and_the_rule_is_its_checks(
    rows: list[tuple[float | None, ...]],
) -> None:
    frame = pl.DataFrame(rows, schema=["y", "lo", "hi", "w"], orient="row")
    problem = interval_problem("y", "lo", "hi", "w")
    assert problem.ok is not None
    got = frame.select(
        ok=problem.ok,
        present=problem.present,
        rule=problem.refused.fill_null(False),
        union=pl.any_horizontal([c.bad.fill_null(False) for c in problem.checks if not c.whole]),
    )
    expected = [fate(*row) for row in rows]
    fates = ["ignored" if ok is None else "used" if ok else "refused" for ok in got["ok"]]
    assert fates == expected
    assert got["rule"].to_list() == got["union"].to_list() == [f == "refused" for f in expected]
    used = [f == "used" for f in expected]
    assert [p and not r for p, r in zip(got["present"], got["rule"])] == used
    # A NaN bound is one reason, not also "above the upper bound" (Polars orders NaN last).
    (reversed_,) = [c.bad for c in problem.checks if c.problem.startswith("lower bound above")]
    flagged = frame.select(reversed_.fill_null(False)).to_series().to_list()
    assert flagged == [lo is not None and hi is not None and lo > hi for _, lo, hi, _ in rows]


def test_the_nested_rule_is_its_checks() -> None:
    frame = pl.DataFrame(
        {
            "y": [0.0, 0.0, 0.0, 0.0, None, 0.0],
            "m": [0.0, NAN, 0.0, 0.0, 0.0, None],
            "lo1": [-1.0, -1.0, 2.0, -1.0, -1.0, -1.0],
            "hi1": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
            "lo2": [-2.0, -2.0, -2.0, NAN, -2.0, -2.0],
            "hi2": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
        }
    )
    problem = nested_intervals_problem("y", "m", ["lo1", "lo2"], ["hi1", "hi2"])
    got = frame.select(
        rule=problem.refused.fill_null(False),
        union=pl.any_horizontal([c.bad.fill_null(False) for c in problem.checks if not c.whole]),
        present=problem.present,
    )
    assert got["rule"].to_list() == got["union"].to_list()
    assert got["rule"].to_list() == [False, True, True, True, False, False]
    assert got["present"].to_list() == [True, True, True, True, False, False]
    # One check per reason: the target's and the weight's are not repeated per interval.
    reasons = [(c.column, c.problem) for c in problem.checks]
    assert len(reasons) == len(set(reasons))
