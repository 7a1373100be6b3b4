"""Size-stratified coverage against MAPIE 1.6's ``regression_ssc`` records and the reference."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import polars_calib as pc
import reference_regression as rr
from conftest import FrameContext

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"


@cache
def _fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


def _records(function: str) -> list[dict[str, Any]]:
    return [
        r
        for r in _fixtures()["records"]
        if r["peer"] == "mapie" and r["function"] == function and r["dataset"] == "intervals"
    ]


def _intervals(group: int | None) -> pl.DataFrame:
    data = _fixtures()["datasets"]["intervals"]
    df = pl.DataFrame({k: data[k] for k in ("y", "group", "lower", "upper")})
    return df if group is None else df.filter(pl.col("group") == group)


def _ssc(j: int, n_bins: int = 3) -> pl.Expr:
    lower, upper = pl.col("lower").list.get(j), pl.col("upper").list.get(j)
    return pc.size_stratified_coverage("y", lower=lower, upper=upper, n_bins=n_bins)


@pytest.mark.parametrize("record", _records("regression_ssc"), ids=lambda r: str(r["group"]))
def test_mapie_regression_ssc(record: dict[str, Any]) -> None:
    df = _intervals(record["group"])
    n_bins = record["options"]["num_bins"]
    for j, expected in enumerate(record["value"]):
        got = df.select(_ssc(j, n_bins)).item().to_list()
        assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("record", _records("regression_ssc_score"), ids=lambda r: str(r["group"]))
def test_mapie_regression_ssc_score_is_the_smallest_bin(record: dict[str, Any]) -> None:
    df = _intervals(record["group"])
    got = [df.select(_ssc(j).list.min()).item() for j in range(2)]
    assert got == pytest.approx(record["value"], rel=1e-12)


def _ties() -> tuple[pl.DataFrame, list[int], list[float]]:
    data = _fixtures()["datasets"]["mapie_ssc_ties"]
    df = pl.DataFrame(
        {
            "y": data["y"],
            "lo": [v[0] for v in data["lower"]],
            "hi": [v[0] for v in data["upper"]],
        }
    )
    (record,) = [
        r
        for r in _fixtures()["records"]
        if r["function"] == "regression_ssc" and r["dataset"] == "mapie_ssc_ties"
    ]
    return df, data["argsort_order"], record["value"][0]


def test_ties_in_width_are_split_in_row_order(frame_context: FrameContext) -> None:
    df, mapie_order, mapie = _ties()
    ssc = pc.size_stratified_coverage("y", lower="lo", upper="hi")
    got = frame_context.collect(frame_context.frame(df).select(ssc)).item().to_list()
    stable = rr.size_stratified_coverage(df["y"], df["lo"], df["hi"]).tolist()
    assert got == stable == [0.625, 0.375, 0.25]
    # MAPIE's numpy argsort put the tied rows in another order: given the rows in
    # that order, the split (and the numbers) are MAPIE's.
    assert mapie == [0.625, 0.25, 0.375]
    reordered = frame_context.frame(df[mapie_order])
    assert frame_context.collect(reordered.select(ssc)).item().to_list() == mapie


def test_groups_gap_and_bad_rows(frame_context: FrameContext) -> None:
    rng = np.random.default_rng(4)
    n = 90
    g = np.repeat([0, 1, 2], n // 3)
    width = rng.uniform(0.2, 3.0, n)
    # Narrow intervals under-cover, wide ones over-cover; group 2 holds a reversed row.
    y = rng.normal(0.0, 1.0, n) * np.where(width < 1.0, 1.0, 0.2)
    lo, hi = -width / 2, width / 2
    lo[-1], hi[-1] = 1.0, 0.0
    df = pl.DataFrame({"g": g, "y": y, "lo": lo, "hi": hi})
    df = df.vstack(
        pl.DataFrame({"g": [1], "y": [None], "lo": [0.0], "hi": [1.0]}, schema=df.schema)
    )
    options: dict[str, Any] = {"lower": "lo", "upper": "hi", "n_bins": 4}
    query = (
        frame_context.frame(df)
        .group_by("g")
        .agg(
            ssc=pc.size_stratified_coverage("y", **options),
            gap=pc.size_stratified_coverage_gap("y", level=0.8, **options),
        )
        .sort("g")
    )
    got = frame_context.collect(query)
    for group in (0, 1):
        rows = df.filter((pl.col("g") == group) & pl.col("y").is_not_null())
        expected = rr.size_stratified_coverage(rows["y"], rows["lo"], rows["hi"], num_bins=4)
        assert got["ssc"][group].to_list() == pytest.approx(expected.tolist(), rel=1e-12)
        assert got["gap"][group] == pytest.approx(float(np.max(np.abs(expected - 0.8))), rel=1e-12)
    assert got["ssc"][0][0] < got["ssc"][0][3]  # the narrow bin covers less
    assert got.row(2) == (2, None, None)


def test_fewer_rows_than_bins_and_bad_options() -> None:
    df = pl.DataFrame({"y": [0.0, 1.0], "lo": [0.0, 0.0], "hi": [1.0, 2.0]})
    assert df.select(pc.size_stratified_coverage("y", lower="lo", upper="hi")).item() is None
    one_each = df.select(pc.size_stratified_coverage("y", lower="lo", upper="hi", n_bins=2))
    assert one_each.item().to_list() == [1.0, 1.0]
    with pytest.raises(ValueError, match="level"):
        pc.size_stratified_coverage_gap("y", lower="lo", upper="hi", level=1.0)
    with pytest.raises(ValueError, match="n_bins"):
        pc.size_stratified_coverage("y", lower="lo", upper="hi", n_bins=0)
