"""Reliability diagrams: drawn from a given table, with every layer, by both backends."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import polars_calib as pc

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def table() -> pl.DataFrame:
    """A hand-made reliability table: two models, three bins, one bin empty.

    The numbers are arbitrary (no data could produce them), so a diagram showing
    them was drawn from the table, not recomputed.
    """
    return pl.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b", "b"],
            "bin": pl.Series([0, 1, 2, 0, 1, 2], dtype=pl.Int32),
            "lower": [0.0, 1 / 3, 2 / 3] * 2,
            "upper": [1 / 3, 2 / 3, 1.0] * 2,
            "count": [7, 0, 11, 5, 13, 3],
            "mean_predicted": [0.21, None, 0.83, 0.12, 0.51, 0.92],
            "observed": [0.111, None, 0.777, 0.333, 0.444, 0.555],
            "gap": [-0.099, None, -0.053, 0.213, -0.066, -0.365],
            "observed_lower": [0.01, None, 0.6, 0.1, 0.2, 0.3],
            "observed_upper": [0.3, None, 0.9, 0.6, 0.7, 0.8],
        }
    )


def _views(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every unit view (a spec with a mark) in a Vega-Lite spec."""
    if "mark" in spec:
        return [spec]
    children = [
        child for key in ("layer", "vconcat", "hconcat", "concat") for child in spec.get(key, [])
    ]
    return [view for child in children for view in _views(child)]


def _mark(view: dict[str, Any]) -> dict[str, Any]:
    mark = view["mark"]
    return mark if isinstance(mark, dict) else {"type": mark}


def _field(view: dict[str, Any], channel: str) -> Any:
    return view["encoding"].get(channel, {}).get("field")


def test_altair_chart_has_every_layer(table: pl.DataFrame) -> None:
    alt = pytest.importorskip("altair")
    chart = pc.plot_reliability(table, title="Two models")
    assert isinstance(chart, alt.VConcatChart)
    spec = chart.to_dict()
    assert spec["title"]["text"] == "Two models"
    views = _views(spec)
    kinds = {_mark(view)["type"] for view in views}
    assert {"line", "errorbar", "point", "bar"} <= kinds

    diagonal = [v for v in views if _mark(v)["type"] == "line" and "strokeDash" in _mark(v)]
    assert len(diagonal) == 1
    curve = [v for v in views if _mark(v)["type"] == "line" and "strokeDash" not in _mark(v)]
    assert _field(curve[0], "x") == "mean_predicted"
    assert _field(curve[0], "y") == "observed"

    (points,) = [v for v in views if _mark(v)["type"] == "point"]
    assert (_field(points, "x"), _field(points, "y")) == ("mean_predicted", "observed")
    assert points["encoding"]["x"]["scale"]["domain"] == [0.0, 1.0]
    assert points["encoding"]["y"]["scale"]["domain"] == [0.0, 1.0]

    (whiskers,) = [v for v in views if _mark(v)["type"] == "errorbar"]
    assert (_field(whiskers, "y"), _field(whiskers, "y2")) == ("observed_lower", "observed_upper")

    (histogram,) = [v for v in views if _mark(v)["type"] == "bar"]
    assert _field(histogram, "y") == "count"
    assert "x2" in histogram["encoding"]
    # One colour per group, with the key column as the legend title.
    assert points["encoding"]["color"]["title"] == "model"


def test_altair_draws_the_table_as_given(table: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    spec = pc.plot_reliability(table).to_dict()
    rows = [row for values in spec["datasets"].values() for row in values if "observed" in row]
    assert sorted(r["observed"] for r in rows if r["observed"] is not None) == sorted(
        table.get_column("observed").drop_nulls().to_list()
    )
    # Bars of one bin sit side by side inside [lower, upper].
    bars = pl.DataFrame(rows).select("lower", "upper", "__bar_lower__", "__bar_upper__")
    assert bars.filter(
        (pl.col("__bar_lower__") < pl.col("lower")) | (pl.col("__bar_upper__") > pl.col("upper"))
    ).is_empty()


def test_raw_predictions_are_refused() -> None:
    predictions = pl.DataFrame({"p": [0.1, 0.9], "y": [0, 1]})
    with pytest.raises(ValueError, match="not a reliability table: missing column"):
        pc.plot_reliability(predictions)
    with pytest.raises(TypeError, match="collect the LazyFrame first"):
        pc.plot_reliability(predictions.lazy())  # type: ignore[call-overload]


def test_bad_arguments(table: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="`backend` must be one of"):
        pc.plot_reliability(table, backend="plotly")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="'segment' is not in the reliability table"):
        pc.plot_reliability(table, by="segment")
    with pytest.raises(ValueError, match="also a `by` column"):
        pc.plot_reliability(table, by="model", facet="model")


def _sliced(table: pl.DataFrame, segments: Sequence[str]) -> pl.DataFrame:
    """The table repeated per segment, with the keys `model`, `segment` first."""
    return pl.concat([table.with_columns(segment=pl.lit(s)) for s in segments]).select(
        "model", "segment", pl.exclude("model", "segment")
    )


def _colour(chart_spec: dict[str, Any]) -> dict[str, Any]:
    points = [v for v in _views(chart_spec) if _mark(v)["type"] == "point"]
    colours = [view["encoding"]["color"] for view in points]
    assert all(colour == colours[0] for colour in colours)
    return colours[0]


def test_combined_key_and_facets(table: pl.DataFrame) -> None:
    alt = pytest.importorskip("altair")
    sliced = _sliced(table, ("x", "y"))
    combined = pc.plot_reliability(sliced, by=["model", "segment"])
    assert isinstance(combined, alt.VConcatChart)
    colour = _colour(combined.to_dict())
    assert colour["title"] == "model / segment"
    assert "a / x" in colour["sort"]

    faceted = pc.plot_reliability(sliced, facet="segment")
    assert isinstance(faceted, alt.HConcatChart)
    assert len(faceted.to_dict()["hconcat"]) == 2


@pytest.mark.parametrize("segments", [2, 4])
def test_two_keys_facet_by_the_last_by_default(table: pl.DataFrame, segments: int) -> None:
    alt = pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    sliced = _sliced(table, "wxyz"[:segments])
    chart = pc.plot_reliability(sliced)
    assert isinstance(chart, alt.HConcatChart)
    spec = chart.to_dict()
    assert len(spec["hconcat"]) == segments
    assert [panel["vconcat"][0]["title"] for panel in spec["hconcat"]] == [
        f"segment = {s}" for s in "wxyz"[:segments]
    ]
    assert _colour(spec)["title"] == "model"
    assert _colour(spec)["sort"] == ["a", "b"]

    figure = pc.plot_reliability(sliced, backend="matplotlib")
    assert len(figure.axes) == 2 * segments  # a diagram and a histogram per value
    assert figure.axes[0].get_title() == "segment = w"
    assert [text.get_text() for text in figure.legends[0].get_texts()] == [
        "perfectly calibrated",
        "a",
        "b",
    ]


def test_above_the_cap_one_panel_coloured_by_every_key(table: pl.DataFrame) -> None:
    alt = pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    sliced = _sliced(table, "vwxyz")  # five values: one more than the cap (4)
    chart = pc.plot_reliability(sliced)
    assert isinstance(chart, alt.VConcatChart)
    assert _colour(chart.to_dict())["title"] == "model / segment"
    assert len(pc.plot_reliability(sliced, backend="matplotlib").axes) == 2


def test_three_keys_facet_by_the_last_colour_by_the_others(table: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    three = pl.concat(
        [_sliced(table, ("x", "y")).with_columns(region=pl.lit(r)) for r in ("north", "south")]
    ).select("model", "segment", "region", pl.exclude("model", "segment", "region"))
    spec = pc.plot_reliability(three).to_dict()
    assert len(spec["hconcat"]) == 2
    assert _colour(spec)["title"] == "model / segment"
    assert len(pc.plot_reliability(three, backend="matplotlib").axes) == 4


def test_one_key_and_class_facet_by_class(table: pl.DataFrame) -> None:
    """A multi-class table's keys end with ``class``: one panel per class."""
    pytest.importorskip("altair")
    per_class = _sliced(table, ("0", "1", "2")).rename({"segment": "class"})
    spec = pc.plot_reliability(per_class).to_dict()
    assert [panel["vconcat"][0]["title"] for panel in spec["hconcat"]] == [
        "class = 0",
        "class = 1",
        "class = 2",
    ]


def test_the_legend_lists_a_group_missing_from_the_first_panel(table: pl.DataFrame) -> None:
    pytest.importorskip("matplotlib")
    sliced = _sliced(table, ("x", "y")).filter(
        ~((pl.col("segment") == "x") & (pl.col("model") == "a"))
    )
    figure = pc.plot_reliability(sliced, backend="matplotlib")
    # Groups in order of first appearance in the table: b (segment x), then a.
    assert [text.get_text() for text in figure.legends[0].get_texts()] == [
        "perfectly calibrated",
        "b",
        "a",
    ]


def test_matplotlib_draws_all_zero_and_all_one_bins() -> None:
    """Wilson bounds at 0 and 1 give zero-length whiskers on that side, not an error."""
    pytest.importorskip("matplotlib")
    from matplotlib.container import ErrorbarContainer

    df = pl.DataFrame({"p": [0.15] * 20 + [0.85] * 7, "y": [0] * 20 + [1] * 7})
    table = df.calib.reliability("p", "y")
    figure = pc.plot_reliability(table, backend="matplotlib")
    (container,) = [c for c in figure.axes[0].containers if isinstance(c, ErrorbarContainer)]
    _, _, (whiskers,) = container.lines
    segments = [[tuple(point) for point in segment] for segment in whiskers.get_segments()]
    upper_at_zero = table.filter(pl.col("observed") == 0.0).item(0, "observed_upper")
    lower_at_one = table.filter(pl.col("observed") == 1.0).item(0, "observed_lower")
    assert [(x, y) for (x, y), _ in segments] == [
        pytest.approx((0.15, 0.0)),
        pytest.approx((0.85, lower_at_one)),
    ]
    assert [(x, y) for _, (x, y) in segments] == [
        pytest.approx((0.15, upper_at_zero)),
        pytest.approx((0.85, 1.0)),
    ]


def test_matplotlib_draws_an_interval_that_misses_its_estimate(table: pl.DataFrame) -> None:
    """A table from elsewhere, whose bounds miss the estimate by an ulp or are null."""
    pytest.importorskip("matplotlib")
    off = table.with_columns(
        observed_lower=pl.when(pl.col("bin") == 0)
        .then(pl.col("observed") + 1e-17)
        .otherwise(pl.col("observed_lower")),
        observed_upper=pl.when(pl.col("bin") == 2).then(None).otherwise(pl.col("observed_upper")),
    )
    figure = pc.plot_reliability(off, backend="matplotlib")
    assert len(figure.axes) == 2


def test_one_group_has_no_legend(table: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    single = table.filter(pl.col("model") == "a").drop("model")
    views = _views(pc.plot_reliability(single).to_dict())
    (points,) = [v for v in views if _mark(v)["type"] == "point"]
    assert "field" not in points["encoding"]["color"]


def test_matplotlib_figure_has_the_same_content(table: pl.DataFrame) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.container import BarContainer, ErrorbarContainer
    from matplotlib.figure import Figure

    figure = pc.plot_reliability(table, backend="matplotlib")
    assert isinstance(figure, Figure)
    diagram, histogram = figure.axes
    assert diagram.get_xlim() == (0.0, 1.0) and diagram.get_ylim() == (0.0, 1.0)
    assert sum(isinstance(c, ErrorbarContainer) for c in diagram.containers) == 2
    bars = [patch for c in histogram.containers if isinstance(c, BarContainer) for patch in c]
    assert sorted(bar.get_height() for bar in bars) == [3, 5, 7, 11, 13]  # the empty bin has none
    assert diagram.lines[0].get_linestyle() == "--"  # the diagonal
    legend_texts = [text.get_text() for text in figure.legends[0].get_texts()]
    assert legend_texts == ["perfectly calibrated", "a", "b"]


def test_matplotlib_facets(table: pl.DataFrame) -> None:
    pytest.importorskip("matplotlib")
    sliced = pl.concat([table.with_columns(segment=pl.lit(s)) for s in ("x", "y", "z")])
    figure = pc.plot_reliability(sliced, backend="matplotlib", facet="segment")
    assert len(figure.axes) == 6
    assert [ax.get_title() for ax in figure.axes[:3]] == [
        "segment = x",
        "segment = y",
        "segment = z",
    ]


def test_save_png_altair(table: pl.DataFrame, tmp_path: Path) -> None:
    pytest.importorskip("altair")
    pytest.importorskip("vl_convert")
    written = pc.save_png(pc.plot_reliability(table), tmp_path / "altair.png", scale=1)
    assert written.read_bytes().startswith(PNG_MAGIC)


def test_save_png_matplotlib(table: pl.DataFrame, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    figure = pc.plot_reliability(table, backend="matplotlib")
    written = pc.save_png(figure, str(tmp_path / "matplotlib.png"), scale=1)
    assert written == tmp_path / "matplotlib.png"
    assert written.read_bytes().startswith(PNG_MAGIC)
    assert written.stat().st_size > 10_000


def test_save_png_refuses_other_objects(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="Altair chart or a matplotlib Figure"):
        pc.save_png("chart", tmp_path / "x.png")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`scale` must be a positive number"):
        pc.save_png("chart", tmp_path / "x.png", scale=0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("backend", "module"), [("altair", "altair"), ("matplotlib", "matplotlib")]
)
def test_missing_library_says_how_to_install(
    table: pl.DataFrame, monkeypatch: pytest.MonkeyPatch, backend: str, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(ImportError, match=r"pip install 'polars_calib\[plot\]'"):
        pc.plot_reliability(table, backend=backend)  # type: ignore[call-overload]


def test_empty_table_draws_an_empty_diagram(table: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    empty = table.clear()
    assert pc.plot_reliability(empty).to_dict()["vconcat"]
    assert len(pc.plot_reliability(empty, backend="matplotlib").axes) == 2


def test_key_with_a_dot_is_escaped_for_vega_lite(table: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    dotted = table.rename({"model": "model.version"})
    (points,) = [
        v for v in _views(pc.plot_reliability(dotted).to_dict()) if _mark(v)["type"] == "point"
    ]
    assert points["encoding"]["tooltip"][0]["field"] == "model\\.version"
    assert points["encoding"]["color"]["title"] == "model.version"


def _twenty_groups() -> pl.DataFrame:
    """A reliability table of twenty models, two bins each."""
    models = [f"model {index:02d}" for index in range(20)]
    return pl.DataFrame(
        {
            "model": [name for name in models for _ in range(2)],
            "bin": pl.Series([0, 1] * 20, dtype=pl.Int32),
            "lower": [0.0, 0.5] * 20,
            "upper": [0.5, 1.0] * 20,
            "count": [10, 12] * 20,
            "mean_predicted": [0.2 + index / 200 for index in range(20) for _ in range(2)],
            "observed": [0.3, 0.6] * 20,
            "observed_lower": [0.1, 0.4] * 20,
            "observed_upper": [0.5, 0.8] * 20,
        }
    )


def test_twenty_groups_get_twenty_colours_in_both_backends() -> None:
    pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    table = _twenty_groups()
    spec = pc.plot_reliability(table, by="model").to_dict()
    scales = [
        view["encoding"]["color"]["scale"]
        for view in _views(spec)
        if "field" in view["encoding"].get("color", {})
    ]
    assert scales and all(len(set(scale["range"])) == 20 for scale in scales)
    assert all(
        scale["domain"] == table["model"].unique(maintain_order=True).to_list() for scale in scales
    )
    figure = pc.plot_reliability(table, by="model", backend="matplotlib")
    handles, labels = figure.axes[0].get_legend_handles_labels()
    drawn = [handle[0] for handle, label in zip(handles, labels) if label.startswith("model")]
    assert len(drawn) == 20 and len({line.get_color() for line in drawn}) == 20
    # The metric over time: twenty lines, twenty colours; and more groups still differ.
    windows = pl.DataFrame(
        {
            "model": [f"m{index}" for index in range(25) for _ in range(2)],
            "day": [date(2024, 3, 1), date(2024, 3, 2)] * 25,
            "count": [5, 6] * 25,
            "ece": [index / 100 for index in range(50)],
        }
    )
    spec = pc.plot_metric_over_time(windows, "ece", "day").to_dict()
    assert len(set(spec["layer"][0]["encoding"]["color"]["scale"]["range"])) == 25
    figure = pc.plot_metric_over_time(windows, "ece", "day", backend="matplotlib")
    assert len({line.get_color() for line in figure.axes[0].get_lines()}) == 25


def test_weekly_ticks_fall_on_the_window_starts_in_both_backends() -> None:
    pytest.importorskip("matplotlib")
    vlc = pytest.importorskip("vl_convert")
    mondays = pl.date_range(date(2024, 3, 4), date(2024, 5, 27), "1w", eager=True)
    windows = pl.DataFrame({"week": mondays.cast(pl.Datetime("us")), "count": 9, "ece": 0.1})
    shown = ["Mar 04", "Mar 18", "Apr 01", "Apr 15", "Apr 29", "May 13", "May 27"]
    svg = vlc.vegalite_to_svg(pc.plot_metric_over_time(windows, "ece", "week").to_dict())
    labels = re.findall(r"<text[^>]*>([A-Z][a-z]{2} \d\d)</text>", svg)
    assert labels == shown  # every other Monday: 13 windows, at most 8 ticks
    figure = pc.plot_metric_over_time(windows, "ece", "week", backend="matplotlib")
    figure.savefig(io.BytesIO(), format="png")  # lays the ticks out
    mdates = pytest.importorskip("matplotlib.dates")
    ticks = [mdates.num2date(value).date() for value in figure.axes[0].get_xticks()]
    assert ticks == mondays.to_list()[::2] and {tick.weekday() for tick in ticks} == {0}


def test_forest_plot_labels_are_whole() -> None:
    vlc = pytest.importorskip("vl_convert")
    long_name = "age_band=" + "a rather long attribute value " * 4 + "end"
    slices = pl.DataFrame(
        {
            "slice": ["overall", "sex=F", long_name],
            "order": [0, 1, 1],
            "count": [400, 200, 200],
            "too_small": [False, False, False],
            "ece": [0.05, 0.04, 0.08],
        }
    )
    chart = pc.plot_audit(slices)
    svg = vlc.vegalite_to_svg(chart.to_dict())
    assert long_name in svg and "…" not in svg
    figure = pc.plot_audit(slices, backend="matplotlib")
    assert long_name in [label.get_text() for label in figure.axes[0].get_yticklabels()]


def test_charts_take_expression_keys(table: pl.DataFrame) -> None:
    """`by` of the charts: an expression draws what the column it computes draws."""
    upper = table.with_columns(pl.col("model").str.to_uppercase())
    by_expression = pc.plot_reliability(table, by=pl.col("model").str.to_uppercase())
    assert by_expression.to_dict() == pc.plot_reliability(upper, by="model").to_dict()
    figure = pc.plot_reliability(
        table, by=[pl.col("model").str.to_uppercase()], backend="matplotlib"
    )
    assert figure.axes[0].get_legend_handles_labels()[1][1:] == ["A", "B"]
    windows = pl.DataFrame(
        {
            "model": [1, 1, 2, 2],
            "day": [date(2024, 3, 1), date(2024, 3, 2)] * 2,
            "count": [5, 6, 7, 8],
            "ece": [0.1, 0.2, 0.3, 0.4],
        }
    )
    cast = pc.plot_metric_over_time(windows, "ece", "day", by=pl.col("model").cast(pl.String))
    named = windows.with_columns(pl.col("model").cast(pl.String))
    assert cast.to_dict() == pc.plot_metric_over_time(named, "ece", "day", by="model").to_dict()
    with pytest.raises(ValueError, match="'segment' is not in the reliability table"):
        pc.plot_reliability(table, by=pl.col("segment").str.to_uppercase())


# --------------------------------------------------------------------------
# Regression: the quantile reliability diagram and the PIT histogram
# --------------------------------------------------------------------------


@pytest.fixture
def forecasts() -> pl.DataFrame:
    """Gaussian forecasts of two stores: a's σ too large, b's too small (the PIT
    piles in the middle for a, at both ends for b: the curves cross the diagonal)."""
    return pl.DataFrame(
        {
            "store": ["a", "a", "a", "a", "b", "b", "b", "b"],
            "y": [10.0, 12.0, 9.0, 14.0, 20.0, 26.0, 15.0, 22.0],
            "mu": [11.0, 11.5, 10.0, 12.0, 21.0, 21.0, 20.0, 21.0],
            "sigma": [2.0, 2.0, 1.5, 2.5, 1.0, 1.0, 1.5, 1.0],
        }
    )


def _rows(spec: dict[str, Any], column: str) -> pl.DataFrame:
    """The rows of the chart's datasets that hold `column`."""
    found = [row for rows in spec["datasets"].values() for row in rows if column in row]
    return pl.DataFrame(found)


def test_quantile_reliability_draws_the_table_as_given(forecasts: pl.DataFrame) -> None:
    alt = pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    table = forecasts.calib.quantile_reliability("y", mean="mu", std="sigma", by="store")
    chart = pc.plot_quantile_reliability(table, title="Two stores")
    assert isinstance(chart, alt.LayerChart)
    spec = chart.to_dict()
    assert spec["title"]["text"] == "Two stores"
    views = _views(spec)
    (band,) = [v for v in views if _mark(v)["type"] == "area"]
    assert (_field(band, "x"), _field(band, "y"), _field(band, "y2")) == ("level", "lower", "upper")
    (curve,) = [v for v in views if _mark(v)["type"] == "line" and "strokeDash" not in _mark(v)]
    assert (_field(curve, "x"), _field(curve, "y")) == ("level", "observed")
    assert curve["encoding"]["x"]["title"] == "Nominal level"
    assert [v for v in views if "strokeDash" in _mark(v)]  # the diagonal
    drawn = _rows(spec, "observed").select("store", "level", "observed", "lower", "upper")
    assert drawn.sort("store", "level").equals(table.drop("count"))

    figure = pc.plot_quantile_reliability(table, backend="matplotlib")
    (axes,) = figure.axes
    lines = {line.get_label(): line for line in axes.get_lines()}
    for store in ("a", "b"):
        expected = table.filter(pl.col("store") == store)
        assert list(lines[store].get_ydata()) == expected.get_column("observed").to_list()
    assert len(axes.collections) == 2  # one band per store
    assert [text.get_text() for text in axes.get_legend().get_texts()] == [
        "perfectly calibrated",
        "a",
        "b",
    ]


def test_quantile_reliability_groups_facets_and_gaps(forecasts: pl.DataFrame) -> None:
    alt = pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    two = pl.concat([forecasts.with_columns(model=pl.lit(m)) for m in ("m1", "m2")])
    table = two.calib.quantile_reliability(
        "y", mean="mu", std="sigma", by=["store", "model"], n_levels=5
    )
    chart = pc.plot_quantile_reliability(table)  # the last key (2 values) is the facet
    assert isinstance(chart, alt.HConcatChart)
    assert [panel["title"] for panel in chart.to_dict()["hconcat"]] == ["model = m1", "model = m2"]
    assert len(pc.plot_quantile_reliability(table, backend="matplotlib").axes) == 2
    one = pc.plot_quantile_reliability(table, by=["store", "model"], backend="matplotlib")
    assert len(one.axes) == 1 and len(one.axes[0].get_lines()) == 5  # diagonal and 4 groups
    # A group holding refused rows (a lazy table) is a gap, not a curve of zeros.
    bad = forecasts.lazy().with_columns(
        sigma=pl.when(pl.col("y") == 26.0).then(0.0).otherwise("sigma")
    )
    gappy = bad.calib.quantile_reliability("y", mean="mu", std="sigma", by="store").collect()
    figure = pc.plot_quantile_reliability(gappy, backend="matplotlib")
    b_line = next(line for line in figure.axes[0].get_lines() if line.get_label() == "b")
    assert all(value != value for value in b_line.get_ydata())  # NaN: nothing drawn
    observed = _rows(pc.plot_quantile_reliability(gappy).to_dict(), "observed")
    assert observed.filter(pl.col("store") == "b").get_column("observed").null_count() == 100


def test_quantile_reliability_refuses_other_tables(forecasts: pl.DataFrame) -> None:
    statistics = forecasts.calib.regression_statistics("y", mean="mu", std="sigma")
    with pytest.raises(ValueError, match="not a quantile reliability table: missing column"):
        pc.plot_quantile_reliability(statistics)
    binary = pl.DataFrame({"p": [0.2, 0.8], "y": [0, 1]}).calib.reliability("p", "y")
    with pytest.raises(ValueError, match=r"missing column\(s\) level"):
        pc.plot_quantile_reliability(binary)
    table = forecasts.lazy().calib.quantile_reliability("y", mean="mu", std="sigma")
    with pytest.raises(TypeError, match="collect the LazyFrame first"):
        pc.plot_quantile_reliability(table)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="'segment' is not in the quantile reliability table"):
        pc.plot_quantile_reliability(table.collect(), by="segment")


def test_pit_histogram_completes_the_sparse_table(forecasts: pl.DataFrame) -> None:
    """8 bins (5 levels): a holds bins 2 (2 rows), 4, 6; b holds 0, 1, 6, 7."""
    alt = pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    table = forecasts.calib.regression_statistics(
        "y", mean="mu", std="sigma", by="store", n_levels=5
    )
    assert table.height == 7  # sparse: 9 of the 16 bins are empty
    chart = pc.plot_pit_histogram(table)
    assert isinstance(chart, alt.LayerChart)
    bars = _rows(chart.to_dict(), "share")
    assert bars.height == 16
    a = bars.filter(pl.col("__group__") == "a").sort("lower")
    assert a.get_column("density").to_list() == [0.0, 0.0, 4.0, 0.0, 2.0, 0.0, 2.0, 0.0]
    assert a.get_column("count").to_list() == [0, 0, 2, 0, 1, 0, 1, 0]
    assert a.get_column("upper").to_list() == [(k + 1) / 8 for k in range(8)]
    # Merged to 4 bins: a [0, 2, 1, 1] and b [2, 0, 0, 2], expected 1 each:
    # chi-square 2 and 4 on 3 df, P(X > 2) = 0.5724067, P(X > 4) = 0.2614641.
    merged = pc.plot_pit_histogram(table, n_bins=4)
    (view,) = [v for v in _views(merged.to_dict()) if _mark(v)["type"] == "bar"]
    legend = view["encoding"]["color"]
    assert legend["title"] == "store (χ² test of uniformity, 3 df)"
    assert legend["scale"]["domain"] == ["a: χ² = 2, p = 0.572", "b: χ² = 4, p = 0.261"]
    assert view["encoding"]["x"]["title"] == "PIT (4 bins, right-closed)"
    figure = pc.plot_pit_histogram(table, n_bins=4, backend="matplotlib")
    (axes,) = figure.axes
    texts = [text.get_text() for text in axes.get_legend().get_texts()]
    assert texts == ["uniform (density 1)", "a: χ² = 2, p = 0.572", "b: χ² = 4, p = 0.261"]
    heights = [patch.get_height() for patch in axes.patches]
    assert heights == [0.0, 2.0, 1.0, 1.0, 2.0, 0.0, 0.0, 2.0]  # density = share x 4


def test_pit_histogram_weights_count_as_repeated_rows(forecasts: pl.DataFrame) -> None:
    pytest.importorskip("altair")
    weighted = forecasts.with_columns(w=pl.when(pl.col("y") == 12.0).then(3.0).otherwise(1.0))
    twelve = forecasts.filter(pl.col("y") == 12.0)
    repeated = pl.concat([forecasts, twelve, twelve])
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "by": "store", "n_levels": 5}
    by_weight = weighted.calib.regression_statistics("y", weight="w", **options)
    by_rows = repeated.calib.regression_statistics("y", **options)
    drawn = [_rows(pc.plot_pit_histogram(t).to_dict(), "share") for t in (by_weight, by_rows)]
    assert drawn[0].get_column("density").to_list() == drawn[1].get_column("density").to_list()
    labels = [set(frame.get_column("__label__").to_list()) for frame in drawn]
    assert labels[0] == labels[1]


def test_pit_histogram_groups_facets_and_refused_rows(forecasts: pl.DataFrame) -> None:
    alt = pytest.importorskip("altair")
    pytest.importorskip("matplotlib")
    two = pl.concat([forecasts.with_columns(model=pl.lit(m)) for m in ("m1", "m2")])
    bad = two.lazy().with_columns(
        sigma=pl.when((pl.col("y") == 26.0) & (pl.col("model") == "m2"))
        .then(0.0)
        .otherwise("sigma")
    )
    table = bad.calib.regression_statistics(
        "y", mean="mu", std="sigma", by=["store", "model"], n_levels=5
    ).collect()
    chart = pc.plot_pit_histogram(table)  # one panel per model, each with its legend
    assert isinstance(chart, alt.HConcatChart)
    spec = chart.to_dict()
    assert spec["resolve"]["scale"]["color"] == "independent"
    domains = [
        v["encoding"]["color"]["scale"]["domain"] for v in _views(spec) if _mark(v)["type"] == "bar"
    ]
    assert domains[0][1] == "b: χ² = 4, p = 0.78"  # 8 bins, 4 holding 1 of 4 rows: 7 df
    assert domains[1][1] == "b: 1 refused row, no test"
    bars = _rows(spec, "share").filter(pl.col("__panel__") == "m2", pl.col("__group__") == "b")
    assert bars.height == 8 and bars.get_column("density").null_count() == 8
    figure = pc.plot_pit_histogram(table, backend="matplotlib")
    assert [axes.get_title() for axes in figure.axes] == ["model = m1", "model = m2"]
    assert figure.axes[1].get_legend().get_texts()[2].get_text() == "b: 1 refused row, no test"
    # Keys not drawn are summed: by store alone, the two models' rows add up.
    used = table.filter(pl.col("bin").is_not_null())
    summed = _rows(pc.plot_pit_histogram(used, by="store").to_dict(), "share").sort("lower")
    a = summed.filter(pl.col("__group__") == "a")
    assert a.get_column("count").to_list() == [0, 0, 4, 0, 2, 0, 2, 0]
    assert a.get_column("density").to_list() == [0.0, 0.0, 4.0, 0.0, 2.0, 0.0, 2.0, 0.0]
    assert summed.get_column("count").sum() == 15


def test_pit_histogram_refuses_other_tables_and_bin_counts(forecasts: pl.DataFrame) -> None:
    table = forecasts.calib.regression_statistics("y", mean="mu", std="sigma", n_levels=5)
    with pytest.raises(
        ValueError, match=r"must divide the table's 8 bins .*one of 1, 2, 4, 8; got 3"
    ):
        pc.plot_pit_histogram(table, n_bins=3)
    with pytest.raises(ValueError, match="`n_bins` must be a positive int"):
        pc.plot_pit_histogram(table, n_bins=0)
    reliability = forecasts.calib.quantile_reliability("y", mean="mu", std="sigma")
    with pytest.raises(ValueError, match="not a regression statistics table: missing column"):
        pc.plot_pit_histogram(reliability)
    binary = pl.DataFrame({"p": [0.2, 0.8], "y": [0, 1]}).calib.bin_statistics("p", "y")
    with pytest.raises(ValueError, match=r"missing column\(s\) sum_crps"):
        pc.plot_pit_histogram(binary)
    finer = forecasts.calib.regression_statistics("y", mean="mu", std="sigma", n_levels=3)
    with pytest.raises(ValueError, match="mixes PIT grids"):
        pc.plot_pit_histogram(pl.concat([table, finer]))
    with pytest.raises(TypeError, match="collect the LazyFrame first"):
        pc.plot_pit_histogram(table.lazy())  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("backend", "module"), [("altair", "altair"), ("matplotlib", "matplotlib")]
)
def test_regression_charts_say_how_to_install(
    forecasts: pl.DataFrame, monkeypatch: pytest.MonkeyPatch, backend: str, module: str
) -> None:
    table = forecasts.calib.regression_statistics("y", mean="mu", std="sigma", n_levels=5)
    curve = forecasts.calib.quantile_reliability("y", mean="mu", std="sigma", n_levels=5)
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"pip install 'polars_calib\[plot\]'"):
        pc.plot_pit_histogram(table, backend=backend)  # type: ignore[call-overload]
    with pytest.raises(ImportError, match=r"pip install 'polars_calib\[plot\]'"):
        pc.plot_quantile_reliability(curve, backend=backend)  # type: ignore[call-overload]


def test_regression_charts_save_as_png(forecasts: pl.DataFrame, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("vl_convert")
    table = forecasts.calib.regression_statistics("y", mean="mu", std="sigma", n_levels=5)
    for backend in ("altair", "matplotlib"):
        chart = pc.plot_pit_histogram(table, backend=backend)  # type: ignore[call-overload]
        written = pc.save_png(chart, tmp_path / f"{backend}.png", scale=1)
        assert written.read_bytes().startswith(PNG_MAGIC)


def test_a_diagram_of_many_groups_can_be_shown() -> None:
    # 60 groups x 100 levels: more rows than the 5,000 Altair embeds from a data frame
    # (MaxRowsError when a notebook shows the chart); the rows go to named datasets.
    pytest.importorskip("altair")
    import numpy as np

    rng = np.random.default_rng(2)
    n = 30_000
    mu, sigma = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    group = rng.integers(0, 60, n)
    # Too narrow for half the groups, too wide for the others.
    spread = np.where(group % 2 == 0, 1.5, 0.6)
    log = pl.DataFrame(
        {"g": group, "mu": mu, "sigma": sigma, "y": mu + spread * sigma * rng.normal(size=n)}
    )
    table = pc.quantile_reliability(log, "y", mean="mu", std="sigma", by="g")
    assert table.height > 5_000
    spec = pc.plot_quantile_reliability(table).to_dict()
    drawn = [row for rows in spec["datasets"].values() for row in rows if "observed" in row]
    assert len(drawn) == table.height


def test_groups_whose_labels_coincide_stay_apart(table: pl.DataFrame) -> None:
    """A null key and the text "null", or a separator inside a value, give two groups
    the same text; the later one is told apart by " (2)" instead of merging with the
    other into one line (and one legend entry)."""
    pytest.importorskip("matplotlib")
    nulls = table.with_columns(pl.Series("model", [None] * 3 + ["null"] * 3, pl.String))
    figure = pc.plot_reliability(nulls, backend="matplotlib")
    assert [text.get_text() for text in figure.legends[0].get_texts()] == [
        "perfectly calibrated",
        "null",
        "null (2)",
    ]
    split = table.select(
        pl.Series("a", ["x / y"] * 3 + ["x"] * 3),
        pl.Series("b", ["z"] * 3 + ["y / z"] * 3),
        pl.exclude("model"),
    )
    figure = pc.plot_reliability(split, by=["a", "b"], backend="matplotlib")
    assert [text.get_text() for text in figure.legends[0].get_texts()] == [
        "perfectly calibrated",
        "x / y / z",
        "x / y / z (2)",
    ]
    # The label " (2)" is itself taken: the next free number.
    taken = pl.concat(
        [nulls, table.filter(pl.col("model") == "a").with_columns(model=pl.lit("null (2)"))]
    )
    figure = pc.plot_reliability(taken, backend="matplotlib")
    assert [text.get_text() for text in figure.legends[0].get_texts()][1:] == [
        "null",
        "null (3)",
        "null (2)",
    ]
