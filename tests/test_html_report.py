"""The HTML report: its structure and numbers, its data policy, and a real browser opening it."""

from __future__ import annotations

import base64
import hashlib
import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc

ROOT = Path(__file__).parents[1]
METRICS = ("ece", "mce", "rmsce", "brier", "log_loss")
EXAMPLE = ROOT / "examples" / "data" / "predictions.parquet"
HAS_PLOT = all(importlib.util.find_spec(m) for m in ("altair", "vl_convert"))
needs_plot = pytest.mark.skipif(
    not HAS_PLOT, reason="the plot extra (altair, vl-convert) is not installed"
)


class Page(HTMLParser):
    """The parts of a report a test reads: tags with attributes, table cells, text, scripts."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.tables: dict[str, list[list[str | None]]] = {}
        self.headers: dict[str, list[str]] = {}
        self.scripts: dict[str, str] = {}
        self.text: list[str] = []
        self._table: str | None = None
        self._script: str | None = None
        self._in_head = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        if tag == "table":
            self._table = found.get("id") or f"table-{len(self.tables)}"
            self.tables[self._table], self.headers[self._table] = [], []
        elif tag == "tr" and self._table is not None and not self._in_head:
            self.tables[self._table].append([])
        elif tag == "thead":
            self._in_head = True
        elif tag == "td" and self._table is not None:
            self.tables[self._table][-1].append(found.get("data-value"))
        elif tag == "script":
            self._script = found.get("id") or f"script-{len(self.scripts)}"
            self.scripts[self._script] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag == "thead":
            self._in_head = False
        elif tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts[self._script] += data
        elif self._in_head and self._table is not None and data.strip():
            self.headers[self._table].append(data.strip())
        else:
            self.text.append(data)

    def ids(self) -> set[str]:
        return {str(attrs["id"]) for _, attrs in self.tags if attrs.get("id")}

    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())

    def frame(self, table: str) -> pl.DataFrame:
        """A table's sort values, as strings (null for an empty cell)."""
        rows = [[value or None for value in row] for row in self.tables[table]]
        return pl.DataFrame(rows, schema=self.headers[table], orient="row")


def assert_shows(page: Page, table: str, expected: pl.DataFrame, *, exact: bool = True) -> None:
    """The page's table holds `expected`'s columns and values (floats to the last bit)."""
    shown = page.frame(table)
    assert shown.columns == expected.columns
    typed = shown.with_columns(
        pl.col(name).str.to_datetime(time_unit=dtype.time_unit)
        if isinstance(dtype, pl.Datetime)
        else pl.col(name).cast(dtype)
        for name, dtype in expected.schema.items()
    )
    assert_frame_equal(typed, expected, check_exact=exact, rel_tol=1e-12, abs_tol=1e-15)


def small_log(n: int = 1_200) -> pl.DataFrame:
    """Two models, three segments (one small), four days; miscalibration changing sign."""
    i = pl.int_range(n, dtype=pl.Int64)
    p = (i * 37) % 101 / 100
    return pl.select(
        ts=pl.lit(datetime(2024, 3, 1)) + pl.duration(minutes=i * 5),
        model=pl.when(i % 2 == 0).then(pl.lit("baseline")).otherwise(pl.lit("candidate")),
        segment=pl.when(i % 40 == 1)
        .then(pl.lit("tiny"))
        .when(i % 3 == 0)
        .then(pl.lit("A"))
        .otherwise(pl.lit("B")),
        p=p,
        y=((i * 53 % 97) / 97 < p + 0.15 * (0.5 - p)).cast(pl.Int8),
    )


@pytest.fixture(scope="module")
def example_report() -> pc.HtmlReport:
    log = pl.scan_parquet(EXAMPLE)
    return pc.html_report(
        log,
        "p",
        "y",
        by=["model", "segment"],
        time="ts",
        every="1w",
        source="examples/data/predictions.parquet",
    )


@pytest.fixture(scope="module")
def full_report() -> pc.HtmlReport:
    """The example log's page with every section: intervals (a band) and the audit."""
    return pc.html_report(
        pl.scan_parquet(EXAMPLE),
        "p",
        "y",
        by=["model", "segment"],
        time="ts",
        every="1w",
        n_resamples=20,
        audit=["sex", "age_band"],
        source="examples/data/predictions.parquet",
    )


@needs_plot
def test_sections_header_and_numbers_equal_summary(example_report: pc.HtmlReport) -> None:
    page = Page(example_report.html)
    assert {"summary", "reliability", "over-time", "notes", "summary-table"} <= page.ids()
    text = page.all_text()
    for fact in (
        "examples/data/predictions.parquet",
        "20,000 used, 0 refused",
        "windows of 1w by ts",
        "15 equal-width bins",
        f"polars_calib {pc.__version__}",
        "UTC",
    ):
        assert fact in text
    log = pl.read_parquet(EXAMPLE)
    summary = pc.summary(log, "p", "y", by=["model", "segment"])
    # The page shows its table to the last bit; the table sums the weekly windows'
    # statistics, so it equals the whole-log summary up to the order of the sums.
    assert_shows(page, "summary-table", example_report.summary)
    assert_frame_equal(example_report.summary, summary, rel_tol=1e-12, abs_tol=1e-15)
    weekly = pc.summary(log, "p", "y", by=["model", "segment"], time="ts", every="1w")
    assert example_report.over_time is not None
    assert_shows(page, "over-time-table", example_report.over_time)
    assert_frame_equal(example_report.over_time, weekly, rel_tol=1e-12, abs_tol=1e-15)
    reliability = pc.reliability(log, "p", "y", by=["model", "segment"])
    assert_frame_equal(example_report.reliability, reliability, rel_tol=1e-12, abs_tol=1e-15)
    # The summary table is sortable: every heading is a button, numbers flagged numeric.
    headings = [attrs for tag, attrs in page.tags if tag == "th"]
    assert len(headings) >= len(summary.columns)
    assert "sortable" in str(dict(page.tags[[t for t, _ in page.tags].index("table")][1]))


@needs_plot
def test_one_diagram_per_model_faceted_by_segment_with_counts(
    example_report: pc.HtmlReport,
) -> None:
    page = Page(example_report.html)
    charts = [attrs for tag, attrs in page.tags if attrs.get("data-spec")]
    assert len(charts) == 3  # two models' diagrams, then the metric over time
    specs = [json.loads(page.scripts[str(attrs["data-spec"])]) for attrs in charts]
    for spec, model in zip(specs, ["baseline", "candidate"]):
        assert "hconcat" in spec and len(spec["hconcat"]) == 3  # segments A, B, C
        assert f"model = {model}" in json.dumps(spec["title"])
        assert '"count"' in json.dumps(spec)  # the histogram of rows per bin
        assert spec["description"]  # the SVG's accessible name
    assert all(attrs.get("role") == "img" and attrs.get("aria-label") for attrs in charts)
    # Data are inlined: no chart loads anything.
    assert all('"url"' not in json.dumps(spec) for spec in specs)


@needs_plot
def test_self_contained_no_external_url(example_report: pc.HtmlReport) -> None:
    page = Page(example_report.html)
    links = [
        value
        for _, attrs in page.tags
        for name, value in attrs.items()
        if name in ("src", "href", "action", "poster", "data")
    ]
    assert links and all(str(value).startswith("#") for value in links)
    assert not any(tag in ("link", "iframe", "img", "object", "embed") for tag, _ in page.tags)
    policy = [
        attrs["content"]
        for tag, attrs in page.tags
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    assert policy and "default-src 'none'" in str(policy[0])
    # The Vega libraries are inlined, and the page stays a few MB at most.
    assert "vegaEmbed" in example_report.html
    assert len(example_report.html.encode()) < 3_000_000


def test_notes_list_small_groups_and_conventions(tmp_path: Path) -> None:
    report = pc.html_report(small_log(), "p", "y", by=["model", "segment"], min_count=100)
    notes = " ".join(report.notes)
    assert "fewer than 100 rows" in notes and "segment = tiny" in notes
    assert "segment = A" not in notes.split("fewer than")[1].split(".")[0]
    assert "closed on the right" in notes and "95% Wilson" in notes
    saved = report.save(tmp_path / "report.html")
    assert saved.read_text(encoding="utf-8") == report.html


def test_refused_rows_raise_for_a_dataframe_and_are_noted_for_a_lazyframe() -> None:
    log = small_log().with_columns(
        p=pl.when(pl.int_range(pl.len()) < 6).then(1.5).otherwise(pl.col("p"))
    )
    with pytest.raises(pc.CalibrationDataError, match=r"probability outside \[0, 1\] in 6 of"):
        pc.html_report(log, "p", "y", by="model")
    report = pc.html_report(log.lazy(), "p", "y", by="model")
    notes = " ".join(report.notes)
    assert "6 rows were refused" in notes and "in 6 of 1200 rows" in notes
    expected = pc.summary(log.lazy(), "p", "y", by="model").collect()
    assert_frame_equal(report.summary, expected)
    assert_shows(Page(report.html), "summary-table", expected)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("empty", "The log holds no rows"),
        ("all null", "No usable rows"),
        ("all refused", "1,200 rows were refused"),
    ],
)
def test_empty_or_all_invalid_log_gives_a_report_saying_so(case: str, message: str) -> None:
    log = small_log()
    if case == "empty":
        log = log.head(0)
    elif case == "all null":
        log = log.with_columns(p=pl.lit(None, pl.Float64))
    else:
        log = log.with_columns(y=pl.lit(3, pl.Int8))
    report = pc.html_report(log.lazy(), "p", "y", by="model", time="ts", every="1d")
    page = Page(report.html)
    assert message in page.all_text()
    assert "reliability" not in page.ids()  # no empty charts
    assert not any(attrs.get("data-spec") for _, attrs in page.tags)


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"prob": "score"}, pc.CalibrationDataError, "column 'score' is missing"),
        ({"n_bins": 0}, ValueError, "n_bins"),
        ({"time": "ts"}, ValueError, "`time` and `every` go together"),
        ({"metrics": ["ecce"]}, ValueError, "ecce"),
        ({"min_count": 1.5}, TypeError, "min_count"),
    ],
)
def test_bad_input_raises_as_summary(arguments: dict[str, object], error: type, match: str) -> None:
    options: dict[str, object] = {"prob": "p", "label": "y", "by": "model", **arguments}
    with pytest.raises(error, match=match):
        pc.html_report(small_log(), **options)  # type: ignore[arg-type]
    summary_options = {k: v for k, v in options.items() if k != "min_count"}
    if "min_count" not in arguments:
        with pytest.raises(error, match=match):
            pc.summary(small_log(), **summary_options)  # type: ignore[arg-type]


@needs_plot
def test_quantile_bins_and_vectors_take_a_second_pass_with_the_same_numbers() -> None:
    log = small_log()
    report = pc.html_report(log, "p", "y", by="model", time="ts", every="1d", strategy="quantile")
    assert_frame_equal(report.summary, pc.summary(log, "p", "y", by="model", strategy="quantile"))
    vectors = log.with_columns(probs=pl.concat_list(1 - pl.col("p"), "p"))
    report = pc.html_report(vectors, "probs", "y", by="model", reduction="classwise")
    expected = pc.summary(vectors, "probs", "y", by="model", reduction="classwise")
    assert_frame_equal(report.summary, expected)
    assert_frame_equal(report.reliability, pc.reliability(vectors, "probs", "y", by="model"))
    assert "classwise reduction" in " ".join(report.notes)


def specs(page: Page) -> list[dict[str, object]]:
    """The page's chart specifications, in order."""
    return [json.loads(text) for name, text in page.scripts.items() if name.startswith("spec-")]


def marks(spec: object) -> list[str]:
    """Every mark type of a Vega-Lite specification (layers, facets, concatenations)."""
    text = json.dumps(spec)
    return re.findall(r'"mark": \{"type": "(\w+)"', text) + re.findall(r'"mark": "(\w+)"', text)


@needs_plot
def test_intervals_and_audit_sections_equal_summary_and_audit() -> None:
    log = small_log()
    keys = ["model", "segment"]
    report = pc.html_report(
        log,
        "p",
        "y",
        by=keys,
        time="ts",
        every="1d",
        n_resamples=20,
        seed=3,
        audit=["segment"],
        min_count=50,
    )
    # The whole log's intervals sum the windows' replicates: those of a summary without windows.
    expected = pc.summary(log, "p", "y", by=keys, confidence=0.95, n_resamples=20, seed=3)
    assert_frame_equal(report.summary, expected, check_exact=False, rel_tol=1e-12)
    windows = pc.summary(
        log, "p", "y", by=keys, time="ts", every="1d", confidence=0.95, n_resamples=20, seed=3
    )
    assert_frame_equal(report.over_time, windows, check_exact=False, rel_tol=1e-12)
    assert_frame_equal(report.reliability, pc.reliability(log, "p", "y", by=keys))
    page = Page(report.html)
    assert {"audit", "audit-table", "over-time", "summary-table"} <= page.ids()
    assert_shows(page, "summary-table", report.summary)
    assert "ece_lower" in page.headers["summary-table"]
    text = page.all_text()
    assert "95% bootstrap intervals, 20 replicates, seed 3" in text
    assert "Fairness audit" in text and 'href="#audit"' in report.html
    # The audit section: pc.audit's worst slices, with the page's settings, and its forest plot:
    # within the first key (the model), as an audit of each model's rows.
    audited = pc.audit(
        log,
        "p",
        "y",
        by="segment",
        within="model",
        metrics=["ece", "mce", "rmsce", "brier", "log_loss"],
        min_count=50,
        n_resamples=20,
        seed=3,
    )
    worst = (
        audited.worst(10)
        .drop("attributes", "segment")
        .with_columns(pl.col(pl.Boolean).cast(pl.String))
    )
    assert worst.columns[:2] == ["model", "slice"]
    assert_shows(page, "audit-table", worst, exact=False)
    charts = specs(page)
    assert len(charts) == 4  # two diagrams (one per model), the metric over time, the forest plot
    over_time, forest = charts[2], charts[3]
    assert "area" in marks(over_time) and "line" in marks(over_time)
    assert over_time["facet"]["column"]["title"] == "segment"  # type: ignore[index]
    assert "forest" in str(forest["description"]).lower()
    # Without intervals: no band, no interval columns, an audit without intervals.
    plain = pc.html_report(log, "p", "y", by=keys, time="ts", every="1d", audit=["segment"])
    assert "area" not in marks(specs(Page(plain.html))[2])
    assert not any(c.endswith("_lower") for c in plain.summary.columns)
    assert "ece_lower" not in Page(plain.html).headers["audit-table"]


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"audit": ["nope"]}, pc.CalibrationDataError, "nope"),
        ({"audit": ["segment"], "strategy": "quantile"}, ValueError, "'uniform' for an audit"),
        ({"audit": ["segment"], "audit_max_order": 2}, ValueError, "max_order"),
        ({"n_resamples": 0}, ValueError, "n_resamples"),
    ],
)
def test_bad_audit_or_resampling_arguments_raise_as_audit_and_summary(
    arguments: dict[str, object], error: type, match: str
) -> None:
    log = small_log(200)
    with pytest.raises(error, match=match):
        pc.html_report(log, "p", "y", by="model", **arguments)  # type: ignore[arg-type]
    if "audit" in arguments:  # the audit's own error
        audit_args = {k: v for k, v in arguments.items() if k != "audit"}
        audit_args = {
            ("max_order" if k == "audit_max_order" else k): v for k, v in audit_args.items()
        }
        with pytest.raises(error, match=match):
            pc.audit(log, "p", "y", by=arguments["audit"], **audit_args)  # type: ignore[arg-type]


@needs_plot
def test_metric_over_time_panels_tooltips_and_gaps() -> None:
    import altair as alt

    log = small_log()
    windows = pc.summary(log, "p", "y", by=["model", "segment"], time="ts", every="1d")
    windows = windows.with_columns(  # a NaN and an infinity: gaps, not points
        ece=pl.when(pl.int_range(pl.len()) == 1)
        .then(float("nan"))
        .when(pl.int_range(pl.len()) == 2)
        .then(float("inf"))
        .otherwise(pl.col("ece")),
        ece_lower=pl.col("ece") * 0.5,
        ece_upper=pl.col("ece") * 1.5,
    )
    chart = pc.plot_metric_over_time(windows, "ece", "ts")
    assert isinstance(chart, alt.FacetChart)  # the last key has 3 values: one panel each
    spec = chart.to_dict()
    assert spec["facet"]["column"]["title"] == "segment"
    assert json.dumps(spec).count('"invalid": null') == 2  # line and band break at nulls
    tooltips = [t["title"] for t in spec["spec"]["layer"][1]["encoding"]["tooltip"]]
    assert tooltips == ["model", "segment", "ts", "ece", "ece_lower", "ece_upper", "count"]
    values = next(iter(spec["datasets"].values()))
    assert sum(row["ece"] is None for row in values) == 2
    # Explicit colours keep one panel (the signature and result as before).
    assert isinstance(pc.plot_metric_over_time(windows, "ece", "ts", by="model"), alt.LayerChart)
    figure = pc.plot_metric_over_time(windows, "ece", "ts", backend="matplotlib")
    titles = [axes.get_title() for axes in figure.axes]
    assert titles == ["segment = A", "segment = B", "segment = tiny"]
    with pytest.raises(ValueError, match="also a `by` column"):
        pc.plot_metric_over_time(windows, "ece", "ts", by="model", facet="model")


@needs_plot
def test_the_audit_section_without_time_or_intervals() -> None:
    log = small_log()
    report = pc.html_report(log, "p", "y", by="model", audit=["segment"], min_count=50)
    page = Page(report.html)
    assert {"summary", "reliability", "audit", "audit-table", "notes"} <= page.ids()
    assert "over-time" not in page.ids()
    # One diagram per model, then the forest plot; its table is the audit's worst slices.
    assert sum(1 for _, attrs in page.tags if attrs.get("data-spec")) == 3
    audited = pc.audit(
        log,
        "p",
        "y",
        by="segment",
        within="model",
        metrics=list(METRICS),
        min_count=50,
        n_resamples=None,
    )
    worst = audited.worst(10).drop("attributes", "segment")
    worst = worst.with_columns(pl.col(pl.Boolean).cast(pl.String))
    assert_shows(page, "audit-table", worst, exact=False)
    assert "bootstrap intervals" not in str(specs(page)[-1]["description"])
    # An audit already computed is shown as it is (the command line's).
    again = pc.html_report(log, "p", "y", by="model", audit=audited, min_count=50)
    assert_shows(Page(again.html), "audit-table", worst)


def test_without_the_plot_extra_the_page_has_tables_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for module in ("altair", "vl_convert"):  # as if not installed: `import` fails
        monkeypatch.setitem(sys.modules, module, None)
    report = pc.html_report(small_log(), "p", "y", by="model", time="ts", every="1d")
    page = Page(report.html)
    assert "summary-table" in page.ids() and "over-time-table" in page.ids()
    assert "reliability" not in page.ids() and "vegaEmbed" not in report.html
    assert "No charts: they need the plot extra" in page.all_text()


def run_cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # This checkout's package, whatever is installed.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "polars_calib", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        check=False,
    )


def test_cli_html_writes_the_page_of_the_printed_summary(tmp_path: Path) -> None:
    log = small_log()
    log.write_parquet(tmp_path / "log.parquet")
    result = run_cli(
        "report",
        "log.parquet",
        "--prob",
        "p",
        "--label",
        "y",
        "--by",
        "model,segment",
        "--html",
        "out/report.html",
        "-q",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    page = Page((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    # The same numbers as the Python API (summed in the order the scan gives).
    summary = pc.summary(log, "p", "y", by=["model", "segment"])
    assert_shows(page, "summary-table", summary, exact=False)
    assert "log.parquet" in page.all_text()
    # Bad input: the same one-line error as without --html, and no page.
    bad = run_cli(
        "report",
        "log.parquet",
        "--prob",
        "score",
        "--label",
        "y",
        "--html",
        "bad.html",
        "-q",
        cwd=tmp_path,
    )
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.strip() == (
        "polars-calib: error: invalid calibration data: column 'score' is missing "
        "(columns: ts, model, segment, p, y)"
    )
    assert not (tmp_path / "bad.html").exists()


@needs_plot
def test_cli_audit_and_intervals_in_the_page(tmp_path: Path) -> None:
    log = small_log()
    log.write_parquet(tmp_path / "log.parquet")
    common = ("report", "log.parquet", "--prob", "p", "--label", "y", "--by", "model", "-q")
    result = run_cli(
        *common,
        "--time",
        "ts",
        "--every",
        "1d",
        "--metrics",
        "ece,brier",
        "--resamples",
        "20",
        "--seed",
        "5",
        "--audit",
        "segment",
        "--html",
        "report.html",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    page = Page((tmp_path / "report.html").read_text(encoding="utf-8"))
    summary = pc.summary(
        log, "p", "y", by="model", metrics=["ece", "brier"], confidence=0.95, n_resamples=20, seed=5
    )
    assert_shows(page, "summary-table", summary, exact=False)
    audited = pc.audit(  # within the model (the first --by key), never pooled
        log,
        "p",
        "y",
        by="segment",
        within="model",
        metrics=["ece", "brier"],
        n_resamples=20,
        seed=5,
    )
    worst = audited.worst(10).drop("attributes", "segment")
    assert_shows(
        page, "audit-table", worst.with_columns(pl.col(pl.Boolean).cast(pl.String)), exact=False
    )
    assert "area" in marks(specs(page)[2])  # the band over time (after one diagram per model)
    # The audit's own error (one line, exit 1), before the summary is printed.
    bad = run_cli(
        *common, "--strategy", "quantile", "--audit", "segment", "--html", "b.html", cwd=tmp_path
    )
    assert bad.returncode == 1 and bad.stdout == ""
    assert "'uniform' for an audit" in bad.stderr and "Traceback" not in bad.stderr
    alone = run_cli(*common, "--audit", "segment", cwd=tmp_path)
    assert alone.returncode == 2 and "give --html FILE" in alone.stderr
    sliced = run_cli(*common, "--audit", "segment,model", "--html", "c.html", cwd=tmp_path)
    assert sliced.returncode == 2 and "--audit cannot slice 'model'" in sliced.stderr
    pooled = run_cli(*common[:6], "-q", "--audit", "segment", "--html", "d.html", cwd=tmp_path)
    assert pooled.returncode == 1 and pooled.stdout == "" and "Traceback" not in pooled.stderr
    assert "2 models in column 'model'" in pooled.stderr and "(--by model)" in pooled.stderr
    assert not (tmp_path / "d.html").exists()


# --------------------------------------------------------------------------
# A real browser
# --------------------------------------------------------------------------

CHROMIUM = next(
    (
        found
        for name in ("chromium", "chromium-browser", "google-chrome")
        if (found := shutil.which(name))
    ),
    None,
)
# Headless, offline, nothing in the background: any network request the page makes is
# refused by the page's policy, and the policy violation would show on the console.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--proxy-server=127.0.0.1:9",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=15000",
)


def chromium(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def allow_script(page: str, script: str) -> str:
    """`page` whose Content-Security-Policy also allows the inline `script` (a test's own)."""
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return page.replace("script-src ", f"script-src 'sha256-{digest}' ", 1)


@needs_plot
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_chromium_renders_every_chart_offline_without_console_messages(
    full_report: pc.HtmlReport, tmp_path: Path
) -> None:
    example_report = full_report  # every section: intervals, band, audit table and forest plot
    # The page as saved, plus a click on the summary's `ece` heading (the sort script).
    click = (
        '<script>document.querySelectorAll("#summary-table th button")'
        '.forEach(function (b) { if (b.textContent === "ece") b.click(); });</script>'
    )
    path = tmp_path / "report.html"
    page, end = example_report.html.rsplit("</body>", 1)  # the bundle has "</body>" strings
    page = allow_script(page, click[len("<script>") : -len("</script>")])
    path.write_text(page + click + "</body>" + end, encoding="utf-8")
    result = chromium(path, tmp_path, "--dump-dom")
    assert result.returncode == 0, result.stderr[-2_000:]
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], "\n".join(console)
    dom = result.stdout
    charts = len(re.findall(r"data-spec=", example_report.html))
    assert charts == 4  # two diagrams, the metric over time (with its band), the forest plot
    assert {"audit-table", "over-time"} <= Page(example_report.html).ids()
    assert len(re.findall(r'data-rendered="true"', dom)) == charts
    assert len(re.findall(r'<svg [^>]*class="marks"', dom)) == charts
    assert "could not be drawn: " not in dom.split("<script")[0]
    sorted_page = Page(dom)
    shown = sorted_page.frame("summary-table").get_column("ece").cast(pl.Float64)
    assert shown.to_list() == example_report.summary.get_column("ece").sort().to_list()
    assert 'aria-sort="ascending"' in dom

    image = pytest.importorskip("PIL.Image")
    shot = tmp_path / "page.png"
    result = chromium(path, tmp_path, "--window-size=1280,2400", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.exists(), result.stderr[-2_000:]
    with image.open(shot) as picture:
        lower = picture.convert("RGB").crop((0, 900, 1280, 2400))  # the diagrams
        colours = lower.getcolors(maxcolors=1 << 20) or []
    # Blank would be one colour; drawn charts have points, lines, bars and text.
    assert len(colours) > 200
    blue = sum(n for n, (r, g, b) in colours if b > 150 and r < 100)
    assert blue > 2_000  # the default Vega blue of the points, whiskers and bars


def test_the_audit_runs_within_the_model_and_never_pools_models() -> None:
    log = small_log(400).with_columns(sex=pl.when(pl.int_range(pl.len()) % 5 < 2).then(pl.lit("F")))
    report = pc.html_report(log, "p", "y", by="model", audit=["sex"], min_count=0, metrics="ece")
    page = Page(report.html)
    assert page.headers["audit-table"][:2] == ["model", "slice"]
    # Each model's 2 slices (sex=F, sex=null; the page's 10 worst per model), model by model.
    shown = page.frame("audit-table")
    assert shown["model"].to_list() == ["baseline"] * 2 + ["candidate"] * 2
    assert sorted(shown["slice"].to_list()) == ["sex=F"] * 2 + ["sex=null"] * 2
    assert "within each model" in page.all_text()
    # No model key: a log whose `model` column holds two models is refused, not pooled.
    with pytest.raises(ValueError, match=r"2 models in column 'model' \(baseline, candidate\)"):
        pc.html_report(log, "p", "y", audit=["sex"])
    with pytest.raises(ValueError, match="cannot slice 'model'"):
        pc.html_report(log, "p", "y", by="model", audit=["model", "sex"])
    one = log.filter(pl.col("model") == "baseline")
    alone = pc.html_report(one, "p", "y", audit=["sex"], min_count=0, metrics="ece")
    assert Page(alone.html).headers["audit-table"][0] == "slice"  # one model: no key needed


def test_small_groups_are_those_with_rows_below_min_count_exactly() -> None:
    # a: 5 rows (enough), b: 4 (small), c: 1 (small), d: rows without a probability (no row
    # used: noted as empty elsewhere, not as small); miscalibration changing sign.
    log = pl.DataFrame(
        {
            "segment": ["a"] * 5 + ["b"] * 4 + ["c"] + ["d"] * 2,
            "p": [0.8, 0.8, 0.2, 0.2, 0.2, 0.2, 0.2, 0.8, 0.8, 0.6, None, None],
            "y": [0, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1],
        }
    )
    report = pc.html_report(log, "p", "y", by="segment", min_count=5, metrics="ece", n_bins=5)
    small = [note for note in report.notes if note.startswith("Groups with fewer than 5 rows")]
    assert len(small) == 1
    assert small[0].endswith(": segment = b (4 rows); segment = c (1 rows).")


def test_quoted_slice_labels_reach_the_page_whole() -> None:
    # A value with quotes and a separator: its label is quoted in the audit and stays one
    # attribute value in the page's HTML (quotes escaped inside attributes).
    odd = 'say "hi", x=1'
    log = small_log(200).with_columns(
        sex=pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.lit(odd)).otherwise(pl.lit("F"))
    )
    report = pc.html_report(log, "p", "y", by="model", audit=["sex"], min_count=0, metrics="ece")
    shown = Page(report.html).frame("audit-table")
    assert set(shown["slice"].to_list()) == {"sex=F", 'sex="say \\"hi\\", x=1"'}


# --------------------------------------------------------------------------
# Hostile names: the page is text, its data JSON, and only its own scripts run
# --------------------------------------------------------------------------

PWNED = "document.title='PWNED'"
HOSTILE_MODELS = (
    f"<script>{PWNED}</script>",
    f'"><img src=x onerror="{PWNED}">',
    f"</style><script>{PWNED}</script>",
    "<!--<script>",
)
HOSTILE_SEGMENTS = (
    "a very long segment name " * 20,
    "line one\nline two",
    "\u05de\u05d5\u05d3\u05dc \u202eRTL &amp; <b>bold",
)
HOSTILE_COLUMNS = {
    "model": "model</script><!--<script>",
    "segment": f'segment"><img src=x onerror="{PWNED}">',
    "p": "p</style>",
    "y": "y<!--",
    "ts": "ts</title>",
}
HOSTILE_TITLE = f"<script>{PWNED}</script> report"


@pytest.fixture(scope="module")
def hostile_report() -> pc.HtmlReport:
    """Every name the page shows is hostile: values, columns, title and source."""
    n = 1_200
    log = small_log(n).with_columns(
        model=pl.Series([HOSTILE_MODELS[k % 4] for k in range(n)]),
        segment=pl.Series([HOSTILE_SEGMENTS[k % 3] for k in range(n)]),
    )
    c = HOSTILE_COLUMNS
    return pc.html_report(
        log.rename(c),
        c["p"],
        c["y"],
        by=[c["model"], c["segment"]],
        time=c["ts"],
        every="1d",
        audit=[c["segment"]],
        min_count=50,
        title=HOSTILE_TITLE,
        source="<!--<script>",
    )


def test_hostile_names_stay_text_and_chart_data_stays_json(
    hostile_report: pc.HtmlReport,
) -> None:
    html = hostile_report.html
    page = Page(html)
    # Only the page's own elements: no injected tag, attribute or script.
    assert {tag for tag, _ in page.tags} <= {
        *("html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "dl", "dt"),
        *("dd", "time", "nav", "ul", "li", "a", "main", "section", "p", "div", "table"),
        *("caption", "thead", "tbody", "tr", "th", "td", "button", "details", "summary"),
        *("figure", "figcaption", "footer", "script"),
    }
    assert not any(name.startswith("on") for _, attrs in page.tags for name in attrs)
    assert page.all_text().count("PWNED") >= 4  # shown, as text
    assert HOSTILE_COLUMNS["segment"] in page.headers["summary-table"]
    assert HOSTILE_TITLE in " ".join(page.text)
    chart_specs = {name: text for name, text in page.scripts.items() if name.startswith("spec-")}
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    assert len(scripts) == len(chart_specs) + 3  # the specs, Vega, the embedding, the sort
    if HAS_PLOT:
        assert len(chart_specs) == 6  # four models' diagrams, over time, the forest plot
    for text in chart_specs.values():
        # No "<", ">" or "&" in a specification: nothing in it can end its element or
        # open a comment; the escapes read back as the names.
        assert not set("<>&") & set(text)
        assert "PWNED" in text
    if HAS_PLOT:
        loaded = json.dumps([json.loads(text) for text in chart_specs.values()])
        assert all(json.dumps(name)[1:-1] in loaded for name in HOSTILE_MODELS)


def test_the_policy_allows_only_the_page_own_scripts_and_style(
    hostile_report: pc.HtmlReport,
) -> None:
    page = Page(hostile_report.html)
    (policy,) = (
        str(attrs["content"])
        for tag, attrs in page.tags
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"
    )
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "default-src 'none'" in policy
    inline = [text for name, text in page.scripts.items() if not name.startswith("spec-")]
    style = re.findall(r"<style>(.*?)</style>", hostile_report.html, flags=re.DOTALL)
    hashes = re.findall(r"'sha256-([^']+)'", policy)
    expected = {
        base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        for text in [*inline, *style]
    }
    assert set(hashes) == expected and len(hashes) == len(inline) + 1


@needs_plot
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_chromium_draws_every_chart_with_hostile_names_and_runs_no_injected_script(
    hostile_report: pc.HtmlReport, tmp_path: Path
) -> None:
    # The page, and a hover on the forest plot's first point once every chart is drawn
    # (a test's script, allowed by its hash): its tooltip names a hostile slice.
    hover = """
    function hover() {
      if (document.querySelectorAll("[data-rendered]").length < 6) {
        setTimeout(hover, 50);
        return;
      }
      var figures = document.querySelectorAll("figure");
      var point = figures[figures.length - 1].querySelector(".mark-symbol path");
      var box = point.getBoundingClientRect();
      var at = { bubbles: true, clientX: box.x + box.width / 2, clientY: box.y + box.height / 2 };
      ["pointerover", "pointermove"].forEach(function (name) {
        point.dispatchEvent(new PointerEvent(name, at));
      });
    }
    hover();
    """
    page, end = hostile_report.html.rsplit("</body>", 1)
    path = tmp_path / "hostile.html"
    path.write_text(
        allow_script(page, hover) + f"<script>{hover}</script></body>{end}", encoding="utf-8"
    )
    result = chromium(path, tmp_path, "--dump-dom")
    assert result.returncode == 0, result.stderr[-2_000:]
    # No console message: no blocked inline script or style, no Vega warning.
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], "\n".join(console)
    dom = result.stdout
    # An injected script would have set the title to "PWNED"; no image was made.
    (title,) = re.findall(r"<title>(.*?)</title>", dom, flags=re.DOTALL)
    assert title == html.escape(f"{HOSTILE_TITLE}: <!--<script>", quote=False)
    assert "img" not in {tag for tag, _ in Page(dom).tags}
    charts = dom.split("<figure>")[1:]
    assert len(charts) == 6
    for chart in charts:  # each drawn: rendered, with its points
        chart = chart.split("</figure>")[0]
        assert 'data-rendered="true"' in chart and 'class="marks"' in chart
        assert chart.count('role="graphics-symbol"') >= 8
    # Vega's tooltip works under the policy, and shows the slice's name as text.
    (tooltip,) = re.findall(r'<div id="vg-tooltip-element"[^>]*>(.*?)</div>', dom)
    assert 'class="vg-tooltip visible' in dom and "<img" not in tooltip
    # (the hostile column name is quoted in the slice label: its `"` escaped as `\\"`)
    assert "&lt;img src=x onerror=" in tooltip and "PWNED" in tooltip


def test_time_zone_aware_window_starts_keep_their_time_and_offset() -> None:
    # Windows of a time-zone-aware log start at local midnight: the page shows the
    # offset (a date alone would hide which midnight); a naive midnight is a date.
    log = small_log(600)
    aware = log.with_columns(pl.col("ts").dt.replace_time_zone("Europe/Paris"))
    page = pc.html_report(aware, "p", "y", by="model", time="ts", every="1d", metrics=["ece"])
    assert '<td data-value="2024-03-01T00:00:00+01:00">2024-03-01 00:00:00+01:00</td>' in page.html
    assert "from 2024-03-01 00:00:00+01:00 to 2024-03-03 00:00:00+01:00" in page.html
    naive = pc.html_report(log, "p", "y", by="model", time="ts", every="1d", metrics=["ece"])
    assert '<td data-value="2024-03-01T00:00:00">2024-03-01</td>' in naive.html


@needs_plot
def test_nan_and_infinite_chart_values_are_drawn_missing_with_a_note() -> None:
    log = small_log()
    table = pc.reliability(log, "p", "y", by="model")
    row = pl.int_range(pl.len())
    broken = table.with_columns(  # values no reliability table should hold, given by hand
        observed=pl.when(row == 3).then(float("nan")).otherwise("observed"),
        mean_predicted=pl.when(row == 5).then(float("inf")).otherwise("mean_predicted"),
    )
    report = pc.html_report(log, "p", "y", by="model", reliability=broken)
    assert "2 values of the charts' data are NaN or infinite" in " ".join(report.notes)
    page = Page(report.html)
    assert "NaN or infinite" in page.all_text()
    values = [
        row
        for spec in specs(page)
        for data in spec["datasets"].values()  # type: ignore[attr-defined]
        for row in data
        if "observed" in row
    ]
    assert sum(row["observed"] is None for row in values) == 1
    assert sum(row["mean_predicted"] is None for row in values) == 1
    # A page without them has no such note.
    assert "NaN or infinite" not in " ".join(pc.html_report(log, "p", "y", by="model").notes)


def test_without_jinja2_the_page_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "jinja2", None)  # as if not installed
    with pytest.raises(ImportError, match=r"jinja2.*pip install 'polars_calib\[plot\]'"):
        pc.html_report(small_log(), "p", "y", by="model")


def test_the_drift_section_shows_the_alarms_of_monitor_and_their_charts() -> None:
    # small_log's miscalibration changes sign with p: both charts alarm.
    n = 1_200
    log = small_log(n).with_columns(model=pl.Series([HOSTILE_MODELS[k % 2] for k in range(n)]))
    report = pc.html_report(
        log.lazy(), "p", "y", by="model", time="ts", every="1d", drift=True, drift_threshold=2.0
    )
    page = Page(report.html)
    assert {"drift", "drift-table"} <= page.ids()
    alarms = pc.monitor(log, "p", "y", by="model", time="ts", threshold=2.0)
    assert alarms.height >= 3 and set(alarms["odds_ratio"]) == {0.5, 2.0}
    expected = alarms.sort("ts", "model", "odds_ratio")
    assert_shows(page, "drift-table", expected)
    # Only the page's own elements: the hostile model names are text.
    assert "img" not in {tag for tag, _ in page.tags}
    assert not any(name.startswith("on") for _, attrs in page.tags for name in attrs)
    if HAS_PLOT:
        (chart,) = (spec for spec in specs(page) if "CUSUM" in json.dumps(spec))
        assert "point" in marks(chart) and "rule" in marks(chart)
        (rows,) = chart["datasets"].values()  # type: ignore[attr-defined]
        assert sum(bool(row["alarm"]) for row in rows) == alarms.height
    with pytest.raises(ValueError, match="`drift` needs `time`"):
        pc.html_report(log, "p", "y", by="model", drift=True)


def test_metric_over_time_keeps_a_null_panel_apart_from_the_text_null() -> None:
    pytest.importorskip("matplotlib")
    log = small_log().with_columns(
        segment=pl.when(pl.col("segment") == "A")
        .then(None)
        .when(pl.col("segment") == "B")
        .then(pl.lit("null"))
        .otherwise("segment")
    )
    windows = pc.summary(log, "p", "y", by=["model", "segment"], time="ts", every="1d")
    figure = pc.plot_metric_over_time(windows, "ece", "ts", backend="matplotlib")
    titles = sorted(axes.get_title() for axes in figure.axes)
    assert titles == ["segment = null", "segment = null (2)", "segment = tiny"]
