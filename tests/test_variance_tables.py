"""Variance calibration per group from σ-binned tables: ``variance_summary`` and
``variance_reliability``, against netcal 1.4 (``fixtures.json``), the expressions
``pc.ence``, ``pc.uce``, ``pc.qce`` per group and ``tests/reference_regression.py``."""

from __future__ import annotations

import json
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
import reference_regression as rr
from conftest import FrameContext

FIXTURES = Path(__file__).parent / "data" / "regression" / "fixtures.json"
RTOL = 1e-12
DECILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
METRIC = {"ENCE": "ence", "UCE": "uce", "QCE": "qce"}


@cache
def fixtures() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURES.read_text())
    return data


def frame(dataset: str = "gaussian") -> pl.DataFrame:
    d = fixtures()["datasets"][dataset]
    return pl.DataFrame({k: d[k] for k in ("group", "mu", "sigma", "y")})


def netcal_records() -> list[dict[str, Any]]:
    return [
        r
        for r in fixtures()["records"]
        if r["peer"] == "netcal"
        and r["function"] in METRIC
        and r["dataset"] in ("gaussian", "gaussian_edges")
        and "sample_threshold" not in r["options"]
        and r["options"].get("reduction", "batchmean") == "batchmean"
        and (r["function"] != "QCE" or list(r["options"]["q"]) == DECILES)
    ]


def record_id(r: dict[str, Any]) -> str:
    options = {k: v for k, v in r["options"].items() if k != "q"}
    return f"{r['function']}-{r['dataset']}-{r['group']}-{options}"


@pytest.mark.parametrize("record", netcal_records(), ids=record_id)
def test_summary_reproduces_netcal_per_group(record: dict[str, Any]) -> None:
    options = record["options"]
    kwargs: dict[str, Any] = {"mean": "mu", "std": "sigma", "closed": "left"}
    kwargs["n_bins"] = options.get("bins", 10)
    if "range_" in options:
        kwargs["range"] = tuple(options["range_"][0])
    metric = METRIC[record["function"]]
    if metric == "qce":
        kwargs["marginal"] = options.get("marginal", True)
    df = frame(record["dataset"])
    if record["group"] is None:
        got = pc.variance_summary(df, "y", metrics=metric, **kwargs)[metric].item()
    else:
        summary = pc.variance_summary(df, "y", by="group", metrics=metric, **kwargs)
        got = summary.filter(pl.col("group") == record["group"])[metric].item()
    value = record["value"][0] if isinstance(record["value"], list) else record["value"]
    assert got == pytest.approx(value, rel=RTOL, abs=1e-15)


def test_netcal_records_cover_every_metric_and_both_range_kinds() -> None:
    records = netcal_records()
    assert {r["function"] for r in records} == set(METRIC)
    assert any("range_" in r["options"] for r in records)
    assert any(r["options"].get("marginal") is False for r in records)


OPTIONS = [
    {},
    {"strategy": "quantile", "n_bins": 4},
    {"range": (0.3, 1.5), "n_bins": 6},
    {"closed": "left", "n_bins": 5},
]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("weighted", [False, True])
def test_summary_is_the_expressions_per_group(options: dict[str, Any], weighted: bool) -> None:
    df = frame().with_columns(w=(pl.int_range(pl.len()) % 4).cast(pl.Float64) * 0.5)
    weight = "w" if weighted else None
    common: dict[str, Any] = {"mean": "mu", "std": "sigma", "weight": weight, **options}
    uce_common = dict(common)
    if "range" in options:  # UCE's bins are over σ², so is its range
        uce_common["range"] = tuple(v * v for v in options["range"])
    for marginal in (True, False):
        summary = pc.variance_summary(df, "y", by="group", marginal=marginal, **common)
        summary = summary.drop("uce").join(
            pc.variance_summary(df, "y", by="group", metrics="uce", **uce_common).select(
                "group", "uce"
            ),
            on="group",
        )
        expected = (
            df.group_by("group")
            .agg(
                pc.ence("y", **common).alias("ence"),
                pc.uce("y", **uce_common).alias("uce"),
                pc.qce("y", marginal=marginal, **common).alias("qce"),
            )
            .sort("group")
        )
        assert_frame_equal(summary.select(expected.columns), expected, rel_tol=RTOL, abs_tol=1e-15)


def test_reliability_is_the_reference_per_group_and_bin() -> None:
    df = frame()
    table = pc.variance_reliability(df, "y", mean="mu", std="sigma", by="group", closed="left")
    for (group,), part in table.group_by("group"):
        rows = df.filter(pl.col("group") == group)
        sigma, err = rows["sigma"].to_numpy(), (rows["y"] - rows["mu"]).to_numpy()
        idx = rr.equal_width_bins(sigma, 10)
        counts, (mse, mv) = rr._bin_means(idx, 10, err * err, sigma * sigma)
        filled = np.flatnonzero(counts)
        assert part.sort("bin")["bin"].to_list() == filled.tolist()
        np.testing.assert_allclose(part.sort("bin")["mse"], mse[filled], rtol=1e-13)
        np.testing.assert_allclose(part.sort("bin")["rmv"], np.sqrt(mv[filled]), rtol=1e-13)
    # The data: under-confident in some bins, over-confident in others.
    ratio = (table["rmse"] / table["rmv"]).to_numpy()
    assert (ratio < 0.8).any() and (ratio > 1.25).any()


def test_fixed_range_tables_of_two_halves_merge_to_the_whole() -> None:
    df = frame()
    kwargs: dict[str, Any] = {"mean": "mu", "std": "sigma", "by": "group", "range": (0.2, 2.0)}
    whole = pc.variance_reliability(df, "y", **kwargs)
    halves = pl.concat([pc.variance_reliability(p, "y", **kwargs) for p in (df[:47], df[47:])])
    sums = ["count", "weight", "sum_squared_error", "sum_variance"]
    merged = halves.group_by("group", "bin").agg(pl.col(sums).sum()).sort("group", "bin")
    assert_frame_equal(merged, whole.select("group", "bin", *sums), rel_tol=RTOL)


def test_windows_are_the_expressions_per_window(frame_context: FrameContext) -> None:
    df = frame().with_columns(day=pl.Series([date(2026, 1, 1 + i % 20) for i in range(100)]))
    result = frame_context.collect(
        pc.variance_summary(
            frame_context.frame(df),
            "y",
            mean="mu",
            std="sigma",
            by="group",
            time="day",
            every="1w",
            n_bins=3,
            metrics=["ence", "qce"],
        )
    )
    expected = (
        df.with_columns(pl.col("day").dt.truncate("1w"))
        .group_by("group", "day")
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            pc.ence("y", mean="mu", std="sigma", n_bins=3).alias("ence"),
            pc.qce("y", mean="mu", std="sigma", n_bins=3).alias("qce"),
        )
        .sort("group", "day")
    )
    assert result.height == expected.height > 6
    assert_frame_equal(result.select(expected.columns), expected, rel_tol=RTOL)


def test_refused_rows_raise_or_give_null_with_their_count() -> None:
    df = frame().with_columns(
        sigma=pl.when(pl.int_range(pl.len()).is_in([3, 5])).then(0.0).otherwise(pl.col("sigma"))
    )
    with pytest.raises(pc.CalibrationDataError, match=r"'sigma'.*positive finite number in 2 of"):
        pc.variance_summary(df, "y", mean="mu", std="sigma", by="group")
    lazy = pc.variance_summary(df.lazy(), "y", mean="mu", std="sigma", by="group").collect()
    assert lazy["refused"].to_list() == [2, 0, 0]
    assert lazy.row(0)[3:] == (None, None, None)
    assert lazy["ence"][1] == pytest.approx(
        frame().filter(pl.col("group") == 1).select(pc.ence("y", mean="mu", std="sigma")).item()
    )
    table = pc.variance_reliability(df.lazy(), "y", mean="mu", std="sigma", by="group").collect()
    refused = table.filter(pl.col("bin").is_null())
    assert refused["count"].to_list() == [2]
    group0 = table.filter(pl.col("group") == 0)
    assert group0["rmse"].null_count() == group0.height > 1


def test_bad_options_are_refused_when_the_call_is_made() -> None:
    df = frame()
    with pytest.raises(ValueError, match="`range` gives equal-width bins"):
        pc.variance_summary(df, "y", mean="mu", std="sigma", strategy="quantile", range=(0, 1))
    with pytest.raises(ValueError, match="`metrics` must be one of"):
        pc.variance_summary(df, "y", mean="mu", std="sigma", metrics="nll")  # type: ignore[arg-type]


def _row_level_nodes(plan: str) -> list[tuple[str, str]]:
    """Each node of an ``explain`` plan between a source of rows (a scan or frame) and
    the first aggregation above it, as ``(node text, side of a join the rows come from)``."""
    lines = plan.splitlines()
    found: list[tuple[str, str]] = []
    for i, line in enumerate(lines):
        if not (line.lstrip().startswith("DF [") or " SCAN [" in line):
            continue
        indent, side = len(line) - len(line.lstrip()), ""
        for above in reversed(lines[:i]):
            text, depth = above.lstrip(), len(above) - len(above.lstrip())
            if depth == indent and text.startswith(("LEFT PLAN ON", "RIGHT PLAN ON")):
                side = side or text.split()[0]
            if depth >= indent or text.startswith(("[", "FROM", "simple", "END", "BUILD")):
                continue
            indent = depth
            if text.startswith("AGGREGATE"):
                break
            body = lines[lines.index(above) + 1] if "JOIN" not in text else ""
            forced = "ForceRight" in lines[lines.index(above) + 1] if "JOIN" in text else False
            found.append((f"{text} {body} {'forced' if forced else ''}", side))
            side = ""
    return found


@pytest.mark.parametrize("value_range", [None, (0.05, 3.0)], ids=["group range", "fixed range"])
def test_a_lazy_table_keeps_no_rows_in_the_streaming_plan(
    tmp_path: Path, value_range: tuple[float, float] | None
) -> None:
    # Peak memory set by groups x bins (docs/performance.md, "Memory"): between a scan
    # of the rows and their aggregation, no window, sort, cache or distinct, and a join
    # only of the rows (probe side) with a small side forced as the build side.
    path = tmp_path / "rows.parquet"
    frame().write_parquet(path)
    lf = pl.scan_parquet(path)
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "by": "group", "range": value_range}
    plans = [
        pc.variance_summary(lf, "y", **options).explain(engine="streaming"),
        pc.variance_reliability(lf, "y", **options).explain(engine="streaming"),
    ]
    for plan in plans:
        nodes = _row_level_nodes(plan)
        assert nodes
        for text, side in nodes:
            assert not text.startswith(("WINDOW", "SORT", "CACHE", "UNIQUE")), text
            assert ".over(" not in text, text
            if "JOIN" in text:
                assert "forced" in text and side == "LEFT", text
