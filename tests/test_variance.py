"""ENCE, UCE and QCE (netcal 1.4) of Gaussian predictions, against netcal and the reference.

netcal's numbers are in ``tests/data/regression/fixtures.json`` (see ``PEERS.md``);
random frames with groups and weights are checked against
``tests/reference_regression.py`` (an integer weight counts a row that many times).
"""

from __future__ import annotations

import json
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
from conftest import streams

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"
FUNCTIONS = {"ENCE": pc.ence, "UCE": pc.uce, "QCE": pc.qce}
OPTIONS: dict[str, Any] = {"mean": "mu", "std": "sigma"}


@cache
def _fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


def _records(reduction: str | None = "batchmean") -> list[dict[str, Any]]:
    """netcal's records, but `sample_threshold` (not offered; see docs/regression.md)."""
    return [
        r
        for r in _fixtures()["records"]
        if r["peer"] == "netcal"
        and r["function"] in FUNCTIONS
        and "sample_threshold" not in r["options"]
        and r["options"].get("reduction", "batchmean") == reduction
    ]


def _rows(record: dict[str, Any]) -> pl.DataFrame:
    columns = _fixtures()["datasets"][record["dataset"]]
    df = pl.DataFrame({k: columns[k] for k in ("mu", "sigma", "y")})
    if record["group"] is None:
        return df
    return df.filter(pl.Series(columns["group"]) == record["group"])


def _id(record: dict[str, Any]) -> str:
    options = "-".join(f"{k}={v}" for k, v in record["options"].items() if k != "q")
    return f"{record['function']}-{record['dataset']}-{record['group']}-{options}"


def _netcal_options(record: dict[str, Any]) -> dict[str, Any]:
    options, kwargs = record["options"], {**OPTIONS, "closed": "left"}
    if "bins" in options:
        kwargs["n_bins"] = options["bins"]
    if "range_" in options:
        kwargs["range"] = tuple(options["range_"][0])
    if record["function"] == "QCE":
        kwargs["levels"] = options["q"]
        kwargs["marginal"] = options.get("marginal", True)
    return kwargs


@pytest.mark.parametrize("record", _records(), ids=_id)
def test_reproduces_netcal(record: dict[str, Any]) -> None:
    value = record["value"][0] if isinstance(record["value"], list) else record["value"]
    expr = FUNCTIONS[record["function"]]("y", **_netcal_options(record))
    assert _rows(record).select(expr).item() == pytest.approx(value, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("record", _records("none"), ids=_id)
def test_qce_per_level_reproduces_netcal(record: dict[str, Any]) -> None:
    options = _netcal_options(record)
    rows = _rows(record)
    for level, (expected,) in zip(options.pop("levels"), record["value"]):
        value = rows.select(pc.qce("y", levels=[level], **options)).item()
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_the_closure_decides_the_bin_of_a_sigma_on_an_edge() -> None:
    """netcal's bins are left-closed: a σ on an inner edge goes up (gaussian_edges)."""
    (record,) = [
        r
        for r in _records()
        if r["function"] == "ENCE"
        and r["dataset"] == "gaussian_edges"
        and r["group"] == 1
        and r["options"] == {"bins": 10}
    ]
    rows = _rows(record)
    left = rows.select(pc.ence("y", **OPTIONS, closed="left")).item()
    right = rows.select(pc.ence("y", **OPTIONS)).item()
    assert left == pytest.approx(record["value"], rel=1e-12)
    assert right != pytest.approx(left, rel=1e-3)


# --------------------------------------------------------------------------
# Random frames with groups and weights against the reference
# --------------------------------------------------------------------------


def _random_frame(seed: int, n: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    mu = rng.normal(0.0, 2.0, n)
    sigma = np.round(rng.uniform(0.2, 2.0, n), 2)  # ties, and values on edges
    # Under-confident in group 0, over-confident in group 1, both in group 2 (by σ):
    # the gap changes sign across groups and across the σ-bins of group 2.
    scale = np.where(group == 0, 0.6, np.where(group == 1, 1.7, np.where(sigma < 1, 1.6, 0.6)))
    y = mu + scale * sigma * rng.normal(size=n)
    weight = rng.integers(0, 4, n).astype(float)
    return pl.DataFrame({"g": group, "mu": mu, "sigma": sigma, "y": y, "w": weight})


def _reference(group: pl.DataFrame, n_bins: int, value_range: Any, levels: list[float]) -> dict:
    repeated = group.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode()).drop_nulls()
    y, mu, s = (repeated[c].to_numpy() for c in ("y", "mu", "sigma"))
    var_range = None if value_range is None else tuple(v * v for v in value_range)
    return {
        "ence": rr.ence(y, mu, s, n_bins, value_range),
        "uce": rr.uce(y, mu, s, n_bins, var_range),
        "qce_m": rr.qce(y, mu, s, levels, n_bins, True, value_range),
        "qce_c": rr.qce(y, mu, s, levels, n_bins, False, value_range),
    }


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 80),
    n_bins=st.sampled_from([1, 3, 5, 10]),
    fixed=st.booleans(),
)
# A σ on an inner edge of its group's range (0.6 = 0.25 + 0.35): group-by aggregates are a
# column, which Polars divides by a literal through its reciprocal (an edge one ulp off).
@example(seed=43134, n=25, n_bins=5, fixed=False)
# One row, outside the fixed range: no row in range for any measure.
@example(seed=0, n=1, n_bins=1, fixed=True)
def test_weighted_groups_match_the_reference_on_repeated_rows(
    seed: int, n: int, n_bins: int, fixed: bool
) -> None:
    df = _random_frame(seed, n)
    value_range = (0.3, 1.6) if fixed else None
    levels = [0.1, 0.5, 0.9]
    options: dict[str, Any] = {**OPTIONS, "n_bins": n_bins, "closed": "left", "weight": "w"}
    uce_range = None if value_range is None else tuple(v * v for v in value_range)
    result = df.group_by("g").agg(
        pc.ence("y", **options, range=value_range).alias("ence"),
        pc.uce("y", **options, range=uce_range).alias("uce"),
        pc.qce("y", **options, levels=levels, range=value_range).alias("qce_m"),
        pc.qce("y", **options, levels=levels, marginal=False, range=value_range).alias("qce_c"),
    )
    for row in result.iter_rows(named=True):
        group = df.filter(pl.col("g") == row["g"])
        if group["w"].sum() == 0:
            assert all(row[k] is None for k in ("ence", "uce", "qce_m"))
            continue
        expected = _reference(group, n_bins, value_range, levels)
        for name, value in expected.items():
            if np.isnan(value) or (name == "qce_c" and value_range is not None and value == 0):
                # No row in range: null here, NaN (ENCE) in the reference.
                inside = group.filter(pl.col("sigma").is_between(*value_range), pl.col("w") > 0)
                if inside.height == 0:
                    assert row[name] is None, name
                    continue
            assert row[name] == pytest.approx(value, rel=1e-12, abs=1e-14), name


def _quantile_ence(df: pl.DataFrame, n_bins: int) -> float:
    """ENCE over numpy's linear-interpolation quantile edges, right-closed."""
    y, mu, s = (df[c].to_numpy() for c in ("y", "mu", "sigma"))
    edges = np.quantile(s, np.arange(n_bins + 1) / n_bins)
    index = np.searchsorted(edges[1:-1], s, side="left")
    terms = []
    for k in range(n_bins):
        inside = index == k
        if inside.any():
            rmv = np.sqrt(np.mean(s[inside] ** 2))
            rmse = np.sqrt(np.mean((y[inside] - mu[inside]) ** 2))
            terms.append(abs(rmv - rmse) / rmv)
    return float(np.mean(terms))


def test_quantile_bins_are_equal_count_bins_of_sigma() -> None:
    df = _random_frame(11, 200).filter(pl.col("g") == 2)
    value = df.select(pc.ence("y", **OPTIONS, n_bins=4, strategy="quantile")).item()
    assert value == pytest.approx(_quantile_ence(df, 4), rel=1e-12)
    uniform = df.select(pc.ence("y", **OPTIONS, n_bins=4)).item()
    assert uniform != pytest.approx(value, rel=1e-3)


# --------------------------------------------------------------------------
# Contexts, refused rows, arguments
# --------------------------------------------------------------------------


def _all(**options: Any) -> list[pl.Expr]:
    return [
        pc.ence("y", **OPTIONS, **options).alias("ence"),
        pc.uce("y", **OPTIONS, **options).alias("uce"),
        pc.qce("y", **OPTIONS, **options).alias("qce"),
        pc.qce("y", **OPTIONS, marginal=False, **options).alias("qce_c"),
    ]


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_expressions_run_in_select_over_group_by_and_streaming(strategy: str) -> None:
    df = _random_frame(3, 300)
    options = {"weight": "w", "strategy": strategy}
    eager = df.group_by("g").agg(_all(**options)).sort("g")
    streamed = df.lazy().group_by("g").agg(_all(**options)).collect(engine="streaming").sort("g")
    assert_frame_equal(eager, streamed, rel_tol=1e-13)
    over = df.select("g", *(e.over("g") for e in _all(**options))).unique().sort("g")
    assert_frame_equal(eager, over, rel_tol=1e-13)
    for g in (0, 1, 2):
        part = df.filter(pl.col("g") == g)
        alone = part.lazy().select(_all(**options)).collect(engine="streaming")
        assert_frame_equal(alone, eager.filter(pl.col("g") == g).drop("g"), rel_tol=1e-13)


def test_a_group_holding_a_refused_row_is_null() -> None:
    df = _random_frame(4, 90).with_columns(
        sigma=pl.when(pl.int_range(pl.len()) == 0).then(0.0).otherwise("sigma")
    )
    bad_group = df["g"][0]
    result = df.group_by("g").agg(_all())
    for row in result.iter_rows(named=True):
        refused = row["g"] == bad_group
        assert all((row[k] is None) == refused for k in ("ence", "uce", "qce", "qce_c"))


def test_null_rows_are_ignored() -> None:
    df = _random_frame(5, 60)
    with_nulls = pl.concat([df, df.head(5).with_columns(y=None)])
    assert_frame_equal(with_nulls.select(_all()), df.select(_all()))


def test_calibrated_predictions_have_small_errors_and_miscalibrated_ones_large() -> None:
    rng = np.random.default_rng(0)
    n = 4000
    sigma = rng.uniform(0.5, 2.0, n)
    mu = rng.normal(size=n)
    df = pl.DataFrame({"mu": mu, "sigma": sigma, "y": mu + sigma * rng.normal(size=n)})
    wide = df.with_columns(sigma=pl.col("sigma") * 2.0)
    calibrated, miscalibrated = df.select(_all()), wide.select(_all())
    for name in ("ence", "qce", "qce_c"):
        assert calibrated[name].item() < 0.1 < miscalibrated[name].item(), name


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"n_bins": 0}, ValueError, "`n_bins` must be a positive int"),
        ({"strategy": "median_variance"}, ValueError, "`strategy` must be one of"),
        ({"range": (1.0, 1.0)}, ValueError, "`range` must be finite numbers lo < hi"),
        ({"range": (0.0, float("inf"))}, ValueError, "`range` must be finite"),
        ({"range": "0,1"}, TypeError, "`range` must be a pair of numbers"),
        ({"range": (0.0, 1.0), "strategy": "quantile"}, ValueError, "strategy='uniform'"),
        ({"closed": "both"}, ValueError, "`closed` must be one of"),
    ],
)
def test_bad_arguments_raise_when_built(options: dict, error: type, message: str) -> None:
    for function in (pc.ence, pc.uce, pc.qce):
        with pytest.raises(error, match=message):
            function("y", **OPTIONS, **options)


@pytest.mark.parametrize(
    ("levels", "error"),
    [
        ([], TypeError),
        ([0.0, 0.5], ValueError),
        ([1.0], ValueError),
        (["0.5"], TypeError),
        (0.5, TypeError),
    ],
)
def test_bad_levels_raise(levels: Any, error: type) -> None:
    with pytest.raises(error, match="`levels`"):
        pc.qce("y", **OPTIONS, levels=levels)


@pytest.mark.parametrize("weight", [None, "w"])
def test_a_fixed_range_and_the_marginal_qce_stream_in_group_by(weight: str | None) -> None:
    # Known bins: per-bin masked sums, no list of rows (a group's own range needs them).
    df = _random_frame(8, 400)
    if weight is None:
        df = df.with_columns(w=pl.lit(1.0))
    value_range, levels = (0.3, 1.6), [0.1, 0.5, 0.9]
    options: dict[str, Any] = {**OPTIONS, "n_bins": 5, "closed": "left", "weight": weight}
    query = (
        df.lazy()
        .group_by("g")
        .agg(
            pc.ence("y", **options, range=value_range).alias("ence"),
            pc.uce("y", **options, range=(0.3 * 0.3, 1.6 * 1.6)).alias("uce"),
            pc.qce("y", **options, levels=levels).alias("qce_m"),
            pc.qce("y", **options, levels=levels, marginal=False, range=value_range).alias("qce_c"),
        )
        .sort("g")
    )
    assert streams(query)
    assert not streams(df.lazy().group_by("g").agg(pc.ence("y", **options)))
    for row in query.collect(engine="streaming").iter_rows(named=True):
        expected = _reference(df.filter(pl.col("g") == row["g"]), 5, value_range, levels)
        for name, value in expected.items():
            assert row[name] == pytest.approx(value, rel=1e-12, abs=1e-14), name
