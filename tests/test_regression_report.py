"""The regression form of the report: `polars-calib report --target --mean --std` and
`pc.regression_html_report`, their numbers against the public API, bad flags and data,
and the page's safety (escaped text, offline)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from test_cli import contents, one_error, run_main
from test_html_report import CHROMIUM, HAS_PLOT, Page, assert_shows, chromium, needs_plot

GAUSSIAN = {"mean": "mu", "std": "sigma"}
COLUMNS = ("--target", "y", "--mean", "mu", "--std", "sigma")


def gaussian_log(n: int = 800, seed: int = 11) -> pl.DataFrame:
    """Gaussian predictions of three stores over two weeks, with weights.

    Store a is calibrated; store b is over-confident in the first week (targets spread
    1.6 times the predicted σ) and under-confident in the second (0.6 times): its
    miscalibration changes sign between the windows; store c (small) is biased.
    """
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    store = np.where(i % 20 == 7, "c", np.where(i % 2 == 0, "a", "b"))
    second = i >= n // 2
    mu, sigma = rng.normal(100.0, 20.0, n), rng.uniform(5.0, 15.0, n)
    spread = np.where(store == "b", np.where(second, 0.6, 1.6), 1.0)
    shift = np.where(store == "c", 0.8, 0.0)
    return pl.DataFrame(
        {
            "store": store,
            "ts": [datetime(2026, 1, 5) + timedelta(minutes=int(k * 20_160 // n)) for k in i],
            "mu": mu,
            "sigma": sigma,
            "y": mu + (rng.normal(0.0, 1.0, n) * spread + shift) * sigma,
            "w": (1 + i % 3).astype(float),
        }
    )


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    return gaussian_log()


@pytest.fixture
def parquet_log(tmp_path: Path, log: pl.DataFrame) -> Path:
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    return path


def test_the_test_log_changes_the_sign_of_its_miscalibration(log: pl.DataFrame) -> None:
    weekly = pc.quantile_reliability(
        log, "y", **GAUSSIAN, by="store", time="ts", every="1w", n_levels=21, curve="interval"
    )
    # Store b's central 50% interval holds under half the targets in week 1 (σ too
    # small), over half in week 2 (σ too large).
    held = weekly.filter(pl.col("store") == "b", pl.col("level") == 0.5)["observed"].to_list()
    assert held[0] < 0.4 and held[1] > 0.6


# --------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------


def test_cli_regression_report_writes_the_api_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parquet_log: Path, log: pl.DataFrame
) -> None:
    out, page = tmp_path / "out", tmp_path / "out" / "page.html"
    code, err = run_main(
        capsys,
        "report",
        parquet_log,
        *COLUMNS,
        *("--by", "store", "--time", "ts", "--every", "1w", "--weight", "w"),
        *("--n-levels", "21", "--out", out, "--html", page),
    )
    assert code == 0, err
    windows = {"by": "store", "time": "ts", "every": "1w", "n_levels": 21, "weight": "w"}
    expected = pc.regression_summary(log, "y", **GAUSSIAN, **windows)  # type: ignore[arg-type]
    # One statistics pass, finished: the same numbers, summed in another order.
    written = pl.read_parquet(out / "summary.parquet")
    assert_frame_equal(written, expected, rel_tol=1e-12, abs_tol=1e-15)
    assert_frame_equal(
        pl.read_csv(out / "summary.csv", try_parse_dates=True),
        expected,
        check_dtypes=False,
        rel_tol=1e-12,
        abs_tol=1e-15,
    )
    curve = pc.quantile_reliability(
        log, "y", **GAUSSIAN, by="store", n_levels=21, weight="w", curve="interval"
    )
    assert_frame_equal(
        pl.read_csv(out / "reliability.csv"), curve, check_dtypes=False, rel_tol=1e-12
    )
    files = {"summary.csv", "summary.parquet", "reliability.csv", "page.html"}
    if HAS_PLOT:
        files |= {"reliability.png", "pit_histogram.png"}
    assert {path.name for path in out.iterdir()} == files
    # The page: the whole-log summary (the windows summed) and the numbers per window.
    shown = Page(page.read_text(encoding="utf-8"))
    whole = pc.regression_summary(log, "y", **GAUSSIAN, by="store", n_levels=21, weight="w")
    assert_shows(shown, "summary-table", whole, exact=False)
    assert_shows(shown, "over-time-table", expected, exact=False)
    assert "log.parquet" in shown.all_text()


def test_cli_regression_report_prints_the_summary(
    capsys: pytest.CaptureFixture[str], parquet_log: Path, log: pl.DataFrame
) -> None:
    from polars_calib.cli import main

    code = main(["report", str(parquet_log), *COLUMNS, "--by", "store", "--metrics", "crps,nll"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    expected = pc.regression_summary(log, "y", **GAUSSIAN, by="store", metrics=["crps", "nll"])
    for row in expected.iter_rows(named=True):
        assert f"{row['crps']:.4f}" in printed.out and f"{row['nll']:.4f}" in printed.out
    assert "mean_absolute_calibration_error" not in printed.out
    assert "computing the statistics (one pass over the log)" in printed.err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--prob", "p", *COLUMNS], "are two prediction forms: give one"),
        (["--label", "y", *COLUMNS], "are two prediction forms: give one"),
        (["--target", "y", "--mean", "mu"], "the regression form needs --std"),
        (["--mean", "mu", "--std", "sigma"], "the regression form needs --target"),
        (["--prob", "p"], "the classification form needs --label"),
        ([], "give the log's prediction form"),
        ([*COLUMNS, "--bins", "5"], "--bins is an option of the classification form"),
        ([*COLUMNS, "--resamples", "20"], "--resamples is an option of the classification"),
        ([*COLUMNS, "--strategy", "quantile"], "--strategy is an option of the classification"),
        ([*COLUMNS, "--audit", "store"], "--audit is an option of the classification form"),
        (["--prob", "p", "--label", "y", "--n-levels", "5"], "--n-levels is an option of the"),
        (["--prob", "p", "--label", "y", "--curve", "quantile"], "--curve is an option of the"),
        ([*COLUMNS, "--metrics", "crps,ece"], "unknown metric 'ece'"),
        ([*COLUMNS, "--n-levels", "1"], "--n-levels: must be an integer from 2 to 5001"),
        ([*COLUMNS, "--curve", "cdf"], "argument --curve: invalid choice"),
        ([*COLUMNS, "--time", "ts"], "--time and --every go together"),
    ],
)
def test_cli_bad_flags_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    parquet_log: Path,
    options: list[str],
    message: str,
) -> None:
    code, err = run_main(capsys, "report", parquet_log, *options, "--out", tmp_path / "out")
    assert code == 2
    assert message in one_error(err)
    assert not (tmp_path / "out").exists()  # refused before anything is read or written


def test_cli_refused_rows_are_a_one_line_error_with_their_count(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, log: pl.DataFrame
) -> None:
    bad = log.with_columns(
        sigma=pl.when(pl.int_range(pl.len()) % 100 == 3).then(0.0).otherwise("sigma")
    )
    bad.write_parquet(tmp_path / "bad.parquet")
    out, page = tmp_path / "out", tmp_path / "page.html"
    code, err = run_main(
        capsys, "report", tmp_path / "bad.parquet", *COLUMNS, "--out", out, "--html", page
    )
    assert code == 1
    assert one_error(err) == (
        "polars-calib: error: invalid calibration data: column 'sigma': standard deviation "
        "not a positive finite number in 8 of 800 rows (e.g. 0.0)"
    )
    assert not out.exists() and not page.exists()


def test_cli_regression_outputs_never_write_over_the_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, parquet_log: Path
) -> None:
    before = contents(tmp_path)
    code, err = run_main(capsys, "report", parquet_log, *COLUMNS, "--html", parquet_log)
    assert code == 2 and "would write over the input" in one_error(err)
    code, err = run_main(capsys, "report", parquet_log, *COLUMNS, "--out", tmp_path)
    assert code == 2 and "would write over the input" in one_error(err)
    assert contents(tmp_path) == before
    # A previous run's directory is replaced whole (atomically), as the classification's.
    out = tmp_path / "out"
    out.mkdir()
    (out / "over_time.png").write_bytes(b"an earlier run's chart")
    code, err = run_main(capsys, "report", parquet_log, *COLUMNS, "--out", out)
    assert code == 0, err
    assert not (out / "over_time.png").exists() and (out / "summary.parquet").exists()


# --------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(log: pl.DataFrame) -> pc.HtmlReport:
    return pc.regression_html_report(
        log, "y", **GAUSSIAN, by="store", time="ts", every="1w", n_levels=21, weight="w"
    )


def test_the_page_shows_the_api_tables(report: pc.HtmlReport, log: pl.DataFrame) -> None:
    options = {"by": "store", "n_levels": 21, "weight": "w"}
    summary = pc.regression_summary(log, "y", **GAUSSIAN, **options)  # type: ignore[arg-type]
    assert_frame_equal(report.summary, summary, rel_tol=1e-12, abs_tol=1e-15)
    weekly = pc.regression_summary(
        log,
        "y",
        **GAUSSIAN,
        **options,
        time="ts",
        every="1w",  # type: ignore[arg-type]
    )
    assert report.over_time is not None
    assert_frame_equal(report.over_time, weekly, rel_tol=1e-12, abs_tol=1e-15)
    curve = pc.quantile_reliability(log, "y", **GAUSSIAN, curve="interval", **options)  # type: ignore[arg-type]
    assert_frame_equal(report.reliability, curve, rel_tol=1e-12, abs_tol=1e-15)
    page = Page(report.html)
    assert_shows(page, "summary-table", report.summary)
    assert_shows(page, "over-time-table", report.over_time)
    assert {"summary", "over-time", "notes"} <= page.ids()
    text = page.all_text()
    for fact in ("target y, mean mu, standard deviation sigma, weight w", "800 used, 0 refused"):
        assert fact in text
    assert "2 windows of 1w by ts" in text and "21 levels j/20" in text
    notes = " ".join(report.notes)
    assert "40 equal-width bins closed on the right" in notes and "20 bars" in notes
    assert "fewer than 100 rows" in notes and "store = c (40 rows)" in notes


@needs_plot
def test_one_diagram_and_histogram_per_first_key_faceted_by_the_last(log: pl.DataFrame) -> None:
    two = log.with_columns(
        model=pl.when(pl.col("w") == 1).then(pl.lit("m1")).otherwise(pl.lit("m2"))
    )
    report = pc.regression_html_report(two, "y", **GAUSSIAN, by=["model", "store"], n_levels=21)
    page = Page(report.html)
    assert {"calibration", "pit"} <= page.ids()
    charts = [
        json.loads(page.scripts[str(a["data-spec"])]) for _, a in page.tags if a.get("data-spec")
    ]
    assert len(charts) == 4  # per model: its calibration diagram, then its histogram
    for spec in charts:
        assert len(spec["hconcat"]) == 3  # a panel per store
        assert spec["description"] and '"url"' not in json.dumps(spec)
    titles = [json.dumps(spec["title"]) for spec in charts]
    assert "Central-interval calibration: model = m1" in titles[0]
    assert "PIT histogram: model = m1" in titles[2]
    # The histogram's bars: the table's 40 bins merged into 20, each store's test.
    assert "20 bins, right-closed" in json.dumps(charts[2])
    assert "χ² = " in json.dumps(charts[2], ensure_ascii=False)


def test_refused_rows_raise_for_a_dataframe_and_are_noted_for_a_lazyframe(
    log: pl.DataFrame,
) -> None:
    bad = log.with_columns(
        sigma=pl.when(pl.int_range(pl.len()) % 100 == 2).then(-1.0).otherwise("sigma")
    )
    message = r"standard deviation not a positive finite number in 8 of 800 rows"
    with pytest.raises(pc.CalibrationDataError, match=message):
        pc.regression_html_report(bad, "y", **GAUSSIAN, by="store", n_levels=11)
    report = pc.regression_html_report(bad.lazy(), "y", **GAUSSIAN, by="store", n_levels=11)
    notes = " ".join(report.notes)
    assert "8 rows were refused" in notes and "in 8 of 800 rows (e.g. -1.0)" in notes
    expected = pc.regression_summary(bad.lazy(), "y", **GAUSSIAN, by="store", n_levels=11)
    assert_frame_equal(report.summary, expected.collect())
    assert report.summary["refused"].to_list() == [8, 0, 0]  # stores a, b, c
    assert report.summary["crps"].null_count() == 1


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("empty", "The log holds no rows"),
        ("all null", "No usable rows: every row has a null target"),
    ],
)
def test_an_empty_or_all_null_log_gives_a_page_saying_so(
    log: pl.DataFrame, case: str, message: str
) -> None:
    data = log.head(0) if case == "empty" else log.with_columns(y=pl.lit(None, pl.Float64))
    report = pc.regression_html_report(data.lazy(), "y", **GAUSSIAN, by="store", n_levels=11)
    page = Page(report.html)
    assert message in page.all_text()
    assert not {"calibration", "pit"} & page.ids()
    assert not any(attrs.get("data-spec") for _, attrs in page.tags)


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"std": "spread"}, pc.CalibrationDataError, "column 'spread' is missing"),
        ({"n_levels": 1}, ValueError, "n_levels"),
        ({"curve": "cdf"}, ValueError, "curve"),
        ({"metrics": ["ece"]}, ValueError, "ece"),
        ({"min_count": 1.5}, TypeError, "min_count"),
        ({"time": "ts"}, ValueError, "`time` and `every` go together"),
    ],
)
def test_bad_arguments_raise_before_a_row_is_read(
    log: pl.DataFrame, arguments: dict[str, object], error: type, match: str
) -> None:
    options: dict[str, object] = {**GAUSSIAN, "by": "store", **arguments}
    with pytest.raises(error, match=match):
        pc.regression_html_report(log.lazy(), "y", **options)  # type: ignore[arg-type]


HOSTILE = '</script><script>document.title="PWNED"</script><!--<script>'


@pytest.fixture(scope="module")
def hostile_page(log: pl.DataFrame) -> str:
    named = log.with_columns(store=pl.col("store") + HOSTILE).rename({"y": f"y{HOSTILE}"})
    return pc.regression_html_report(
        named,
        f"y{HOSTILE}",
        **GAUSSIAN,
        by="store",
        time="ts",
        every="1w",
        n_levels=11,
        title=f"<b>{HOSTILE}</b>",
        source=HOSTILE,
    ).html


def test_the_page_escapes_every_name_and_loads_nothing(hostile_page: str) -> None:
    page = Page(hostile_page)
    assert {tag for tag, _ in page.tags} <= {
        *("html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "dl", "dt"),
        *("dd", "time", "nav", "ul", "li", "a", "main", "section", "p", "div", "table"),
        *("caption", "thead", "tbody", "tr", "th", "td", "button", "details", "summary"),
        *("figure", "figcaption", "footer", "script"),
    }
    assert not any(name.startswith("on") for _, attrs in page.tags for name in attrs)
    assert page.all_text().count("PWNED") >= 4
    links = [v for _, a in page.tags for k, v in a.items() if k in ("src", "href", "action")]
    assert links and all(str(value).startswith("#") for value in links)
    (policy,) = (
        str(a["content"]) for t, a in page.tags if a.get("http-equiv") == "Content-Security-Policy"
    )
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy
    for name, text in page.scripts.items():
        if name.startswith("spec-"):  # chart data: JSON without "<", ">" or "&"
            assert not set("<>&") & set(text) and "PWNED" in text


@needs_plot
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_chromium_draws_every_chart_offline_and_runs_no_injected_script(
    hostile_page: str, tmp_path: Path
) -> None:
    path = tmp_path / "page.html"
    path.write_text(hostile_page, encoding="utf-8")
    result = chromium(path, tmp_path, "--dump-dom")
    assert result.returncode == 0, result.stderr[-2_000:]
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], "\n".join(console)
    dom = result.stdout
    (title,) = re.findall(r"<title>(.*?)</title>", dom, flags=re.DOTALL)
    assert "PWNED" in title and title != "PWNED"  # shown as text, never run
    charts = len(re.findall(r"data-spec=", hostile_page))
    assert charts == 7  # 3 stores' diagrams and histograms, the metric over time
    assert len(re.findall(r'data-rendered="true"', dom)) == charts


@pytest.mark.slow  # Dask's import and four charts drawn: about 12 s
def test_cli_regression_report_with_dask_gives_the_polars_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, log: pl.DataFrame
) -> None:
    pytest.importorskip("dask.dataframe", reason="the dask extra is not installed")
    parts = tmp_path / "log"
    parts.mkdir()
    for i, part in enumerate(log.iter_slices(300)):  # three partitions
        part.write_parquet(parts / f"part-{i}.parquet")
    common = ["report", parts, *COLUMNS, "--by", "store", "--time", "ts", "--every", "1w", "-q"]
    code, err = run_main(capsys, *common, "--engine", "dask", "--out", tmp_path / "dask")
    assert code == 0, err
    code, err = run_main(capsys, *common, "--out", tmp_path / "polars")
    assert code == 0, err
    for name in ("summary.parquet", "reliability.csv"):
        read = pl.read_parquet if name.endswith("parquet") else pl.read_csv
        expected = read(tmp_path / "polars" / name)
        assert_frame_equal(read(tmp_path / "dask" / name), expected, rel_tol=1e-12, abs_tol=1e-15)


def test_validate_regression_statistics_gives_a_lazy_table_the_dataframe_policy(
    log: pl.DataFrame,
) -> None:
    lazy = log.lazy()
    stats = pc.regression_statistics(lazy, "y", **GAUSSIAN, by="store", n_levels=11).collect()
    checked = pc.validate_regression_statistics(stats, lazy, "y", **GAUSSIAN, by="store")
    assert checked is stats  # a clean table, as it is, without reading the log again
    bad = lazy.with_columns(y=pl.when(pl.col("w") == 3.0).then(float("nan")).otherwise("y"))
    stats = pc.regression_statistics(bad, "y", **GAUSSIAN, by="store", n_levels=11).collect()
    assert stats.filter(pl.col("bin").is_null())["count"].sum() == 266  # the plan counts them
    with pytest.raises(pc.CalibrationDataError, match=r"column 'y': .* in 266 of 800 rows"):
        pc.validate_regression_statistics(stats, bad, "y", **GAUSSIAN, by="store")


# --------------------------------------------------------------------------
# The other prediction forms: quantiles, ensembles, central intervals
# --------------------------------------------------------------------------

LEVELS = [0.05, 0.25, 0.5, 0.75, 0.95]
Z_SCORES = [-1.6448536269514722, -0.6744897501960817, 0.0, 0.6744897501960817, 1.6448536269514722]
"""Φ⁻¹ of `LEVELS`: the quantiles of the log's Gaussian predictions."""

FORMS: dict[str, tuple[dict[str, object], list[str]]] = {
    # name: (the keywords of the Python API, the command line's options)
    "quantile": (
        {"quantiles": "q", "levels": LEVELS},
        ["--quantiles", "q", "--levels", ",".join(map(str, LEVELS))],
    ),
    "quantile columns": (
        {"quantiles": [f"q{k}" for k in range(5)], "levels": LEVELS},
        ["--quantiles", "q0,q1,q2,q3,q4", "--levels", ",".join(map(str, LEVELS))],
    ),
    "ensemble": ({"ensemble": "members", "seed": 7}, ["--ensemble", "members", "--seed", "7"]),
    "interval": (
        {"lower": ["lo50", "lo90"], "upper": ["hi50", "hi90"], "level": [0.5, 0.9]},
        ["--lower", "lo50,lo90", "--upper", "hi50,hi90", "--level", "0.5,0.9"],
    ),
}


def forms_log(log: pl.DataFrame) -> pl.DataFrame:
    """The Gaussian log's predictions in every other form (its miscalibration with them):
    5 quantiles (an Array and 5 columns), 8 members, the central 50% and 90% intervals."""
    draws = np.random.default_rng(5).normal(0.0, 1.0, (log.height, 8))
    mu, sigma = pl.col("mu"), pl.col("sigma")
    quantiles = [(mu + z * sigma).alias(f"q{k}") for k, z in enumerate(Z_SCORES)]
    return log.with_columns(
        *quantiles,
        pl.concat_arr(quantiles).alias("q"),
        # A List column (an Array one: test_a_refused_member_of_an_array_ensemble_...).
        members=(pl.Series(draws) * pl.col("sigma") + pl.col("mu")).arr.to_list(),
        lo50=mu + Z_SCORES[1] * sigma,
        hi50=mu + Z_SCORES[3] * sigma,
        lo90=mu + Z_SCORES[0] * sigma,
        hi90=mu + Z_SCORES[4] * sigma,
    )


@pytest.fixture(scope="module")
def other_log(log: pl.DataFrame) -> pl.DataFrame:
    return forms_log(log)


@pytest.mark.parametrize("form", list(FORMS))
def test_cli_each_form_writes_the_api_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, other_log: pl.DataFrame, form: str
) -> None:
    keywords, options = FORMS[form]
    other_log.write_parquet(tmp_path / "log.parquet")
    out, page = tmp_path / "out", tmp_path / "out" / "page.html"
    windows = {"by": "store", "time": "ts", "every": "1w", "weight": "w"}
    # The page's charts take seconds: the intervals' (none) here, the others' below.
    html = ["--html", page] if form == "interval" else []
    code, err = run_main(
        capsys,
        *("report", tmp_path / "log.parquet", "--target", "y", *options),
        *("--by", "store", "--time", "ts", "--every", "1w", "--weight", "w"),
        *("--out", out, *html),
    )
    assert code == 0, err
    expected = pc.regression_summary(other_log, "y", **keywords, **windows)  # type: ignore[arg-type]
    written = pl.read_parquet(out / "summary.parquet")
    assert_frame_equal(written, expected, rel_tol=1e-12, abs_tol=1e-15)
    files = {"summary.csv", "summary.parquet"}
    if form != "interval":  # intervals: the summary per level is their curve
        curve = pc.quantile_reliability(
            other_log,
            "y",
            **{k: v for k, v in keywords.items() if k != "level"},  # type: ignore[arg-type]
            by="store",
            weight="w",
            curve="interval" if form == "ensemble" else "quantile",
        )
        reliability = pl.read_csv(out / "reliability.csv")
        assert_frame_equal(reliability, curve, check_dtypes=False, rel_tol=1e-12)
        files |= {"reliability.csv", *({"reliability.png"} if HAS_PLOT else ())}
    if form == "ensemble" and HAS_PLOT:  # the only other form with a PIT
        files.add("pit_histogram.png")
    if form == "interval":
        files.add("page.html")
        shown = Page(page.read_text(encoding="utf-8"))
        whole = pc.regression_summary(other_log, "y", **keywords, by="store", weight="w")  # type: ignore[arg-type]
        assert_shows(shown, "summary-table", whole, exact=False)
        assert_shows(shown, "over-time-table", expected, exact=False)
        assert {"summary", "over-time", "notes"} <= shown.ids()
        assert not {"calibration", "pit"} & shown.ids()
    assert {path.name for path in out.iterdir()} == files


QUANTILES = ["--target", "y", *FORMS["quantile"][1]]
ENSEMBLE = ["--target", "y", "--ensemble", "members"]
INTERVALS = ["--target", "y", *FORMS["interval"][1]]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--target", "y", "--quantiles", "q"], "the regression form needs --levels"),
        (["--target", "y", "--lower", "lo50", "--upper", "hi50"], "needs --level"),
        ([*ENSEMBLE, *COLUMNS[2:]], "Gaussian and ensemble predictions are two prediction"),
        ([*QUANTILES, "--lower", "lo50"], "quantile and interval predictions are two"),
        ([*QUANTILES, "--n-levels", "5"], "--n-levels is an option of the Gaussian and ensemble"),
        ([*QUANTILES, "--curve", "quantile"], "--curve is an option of the Gaussian and ensemble"),
        ([*INTERVALS, "--n-levels", "5"], "--n-levels is an option of the Gaussian and ensemble"),
        ([*COLUMNS, "--seed", "3"], "--seed is an option of the ensemble predictions"),
        ([*INTERVALS, "--id", "w"], "--id is an option of the ensemble predictions"),
        ([*ENSEMBLE, "--resamples", "20"], "--resamples is an option of the classification"),
        ([*ENSEMBLE, "--metrics", "nll"], "unknown metric 'nll' of ensemble predictions"),
        ([*INTERVALS, "--metrics", "crps"], "unknown metric 'crps' of interval predictions"),
        ([*QUANTILES, "--engine", "dask"], "--engine dask takes the Gaussian form"),
        (["--target", "y", "--quantiles", "q", "--levels", "0.5,0.1"], "--levels: `levels` must"),
        (["--target", "y", "--quantiles", "q", "--levels", "a,b"], "comma-separated numbers"),
        ([*INTERVALS[:-1], "0.5,1.5"], "argument --level: `level` must be in (0, 1)"),
        ([*INTERVALS[:-1], "0.5"], "need one of each per level: got 2 --lower, 2 --upper, 1"),
        (["--target", "y", "--quantiles", "q0,q1", "--levels", "0.1,0.5,0.9"], "one of each"),
        (["--prob", "p", "--label", "y", "--seed", "1", "--levels", "0.5"], "two prediction"),
    ],
)
def test_cli_bad_form_flags_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    parquet_log: Path,
    options: list[str],
    message: str,
) -> None:
    code, err = run_main(capsys, "report", parquet_log, *options, "--out", tmp_path / "out")
    assert code == 2
    assert message in one_error(err)
    assert not (tmp_path / "out").exists()  # refused before anything is read or written


REFUSED = {
    # form: (the rows broken, the one-line error)
    "quantile": (
        pl.concat_arr(*(pl.col("q").arr.get(k) for k in (1, 0, 2, 3, 4))).alias("q"),
        "column 'q': quantiles crossing (one below the one before it; never sorted) in 8 of 800",
    ),
    "ensemble": (
        pl.concat_list(pl.lit(None, pl.Float64), pl.col("members").list.slice(1)).alias("members"),
        "column 'members': ensemble member null, NaN or infinite in 8 of 800 rows",
    ),
    "interval": (
        pl.col("lo90").alias("hi50"),
        "column 'lo50, hi50': lower bound above the upper bound in 8 of 800 rows",
    ),
}


@pytest.mark.parametrize("form", list(REFUSED))
def test_cli_refused_rows_of_each_form_are_a_one_line_error_with_their_count(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, other_log: pl.DataFrame, form: str
) -> None:
    broken, message = REFUSED[form]
    every_100th = pl.int_range(pl.len()) % 100 == 3
    name = broken.meta.output_name()
    bad = other_log.with_columns(pl.when(every_100th).then(broken).otherwise(pl.col(name)))
    bad.write_parquet(tmp_path / "bad.parquet")
    out, page = tmp_path / "out", tmp_path / "page.html"
    options = FORMS[form][1]
    code, err = run_main(
        capsys,
        "report",
        tmp_path / "bad.parquet",
        "--target",
        "y",
        *options,
        "--out",
        out,
        "--html",
        page,
    )
    assert code == 1
    assert one_error(err).startswith(f"polars-calib: error: invalid calibration data: {message}")
    assert not out.exists() and not page.exists()


@pytest.mark.parametrize("form", list(FORMS))
def test_each_form_s_page_shows_the_api_tables(other_log: pl.DataFrame, form: str) -> None:
    keywords, _ = FORMS[form]
    lazy = other_log.lazy()
    report = pc.regression_html_report(lazy, "y", **keywords, by="store", weight="w")  # type: ignore[arg-type]
    summary = pc.regression_summary(other_log, "y", **keywords, by="store", weight="w")  # type: ignore[arg-type]
    assert_frame_equal(report.summary, summary, rel_tol=1e-12, abs_tol=1e-15)
    page = Page(report.html)
    assert_shows(page, "summary-table", report.summary)  # to the last bit
    assert_shows(page, "summary-table", summary, exact=False)  # summed in another order
    text = page.all_text()
    assert "800 used, 0 refused" in text  # intervals: rows, not rows × levels
    if form == "interval":
        assert report.reliability is report.summary
        assert "nominal coverage 0.5, 0.9" in text
        assert "PIT" not in " ".join(report.notes)
    else:
        curve = pc.quantile_reliability(
            other_log,
            "y",
            **{k: v for k, v in keywords.items() if k != "level"},  # type: ignore[arg-type]
            by="store",
            weight="w",
            curve="interval" if form == "ensemble" else "quantile",
        )
        assert_frame_equal(report.reliability, curve, rel_tol=1e-12, abs_tol=1e-15)
    assert ("PIT histograms merge" in " ".join(report.notes)) == (form == "ensemble")
    if HAS_PLOT:  # what each form has: a curve (not intervals), a PIT (Gaussian, ensemble)
        assert ("calibration" in page.ids()) == (form != "interval")
        assert ("pit" in page.ids()) == (form == "ensemble")


def test_each_form_s_page_notes_refused_rows_of_a_lazyframe(other_log: pl.DataFrame) -> None:
    broken, message = REFUSED["interval"]
    bad = other_log.with_columns(
        pl.when(pl.int_range(pl.len()) % 100 == 3).then(broken).otherwise(pl.col("hi50"))
    )
    keywords = FORMS["interval"][0]
    report = pc.regression_html_report(bad.lazy(), "y", **keywords, by="store")  # type: ignore[arg-type]
    notes = " ".join(report.notes)
    assert "8 rows were refused" in notes and message in notes
    assert report.summary["refused"].to_list() == [0, 0, 8, 8, 0, 0]  # per store and level
    assert "792 used, 8 refused" in Page(report.html).all_text()
    with pytest.raises(pc.CalibrationDataError, match="in 8 of 800 rows"):
        pc.regression_html_report(bad, "y", **keywords, by="store")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({**FORMS["interval"][0], "n_levels": 11}, TypeError, "central intervals have none"),
        ({**FORMS["interval"][0], "curve": "quantile"}, TypeError, "central intervals have none"),
        ({**FORMS["quantile"][0], "n_levels": 11}, TypeError, "`n_levels` is the Gaussian"),
        ({**FORMS["quantile"][0], "curve": "interval"}, ValueError, "read the quantile curve"),
        ({**FORMS["ensemble"][0], "metrics": ["nll"]}, ValueError, "nll"),
        ({**FORMS["interval"][0], "level": [0.5]}, ValueError, "one level per interval"),
        ({"ensemble": "members", "mean": "mu", "std": "sigma"}, TypeError, "exactly one"),
    ],
)
def test_bad_form_arguments_raise_before_a_row_is_read(
    other_log: pl.DataFrame, arguments: dict[str, object], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        pc.regression_html_report(other_log.lazy(), "y", by="store", **arguments)  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# The frames layer the surfaces read: every form's table finished and checked
# --------------------------------------------------------------------------


def test_an_interval_table_finishes_to_the_summary_given_its_levels(
    other_log: pl.DataFrame,
) -> None:
    keywords = FORMS["interval"][0]
    columns = {k: v for k, v in keywords.items() if k != "level"}
    parts = [
        pc.regression_statistics(part, "y", **columns, by="store", weight="w")  # type: ignore[arg-type]
        for part in other_log.iter_slices(300)
    ]
    merged = pc.regression_metrics_from_statistics(
        pl.concat(parts), by="store", level=[0.5, 0.9], metrics=["interval_coverage"]
    )
    expected = pc.regression_summary(
        other_log,
        "y",
        **keywords,
        by="store",
        weight="w",
        metrics=["interval_coverage"],  # type: ignore[arg-type]
    )
    assert_frame_equal(merged, expected, rel_tol=1e-12, abs_tol=1e-15)
    with pytest.raises(ValueError, match="one level per interval"):
        pc.regression_metrics_from_statistics(parts[0], level=0.9)
    with pytest.raises(TypeError, match="nominal coverage of an interval table"):
        gaussian = pc.regression_statistics(other_log, "y", **GAUSSIAN)
        pc.regression_metrics_from_statistics(gaussian, level=0.9)


@pytest.mark.parametrize("form", ["quantile", "ensemble", "interval"])
def test_validate_regression_statistics_checks_every_form(
    other_log: pl.DataFrame, form: str
) -> None:
    columns = {k: v for k, v in FORMS[form][0].items() if k != "level"}
    broken, message = REFUSED[form]
    every_100th = pl.int_range(pl.len()) % 100 == 3
    bad = other_log.lazy().with_columns(
        pl.when(every_100th).then(broken).otherwise(pl.col(broken.meta.output_name()))
    )
    stats = pc.regression_statistics(bad, "y", **columns, by="store").collect()  # type: ignore[arg-type]
    with pytest.raises(pc.CalibrationDataError, match=re.escape(message)):
        pc.validate_regression_statistics(stats, bad, "y", **columns, by="store")  # type: ignore[arg-type]
    good = pc.regression_statistics(other_log.lazy(), "y", **columns, by="store").collect()  # type: ignore[arg-type]
    checked = pc.validate_regression_statistics(good, other_log.lazy(), "y", **columns, by="store")  # type: ignore[arg-type]
    assert checked is good


def test_the_command_line_s_metrics_are_each_form_s_defaults(other_log: pl.DataFrame) -> None:
    from polars_calib.cli import FORM_METRICS

    keywords = {
        "Gaussian": GAUSSIAN,
        **{k: v[0] for k, v in FORMS.items() if k != "quantile columns"},
    }
    for form, metrics in FORM_METRICS.items():
        summary = pc.regression_summary(other_log.head(20), "y", **keywords[form])  # type: ignore[arg-type]
        assert summary.columns[-len(metrics) :] == list(metrics), form


def test_a_refused_member_of_an_array_ensemble_is_counted() -> None:
    members = [[0.0, float("nan"), 1.0] if i == 1 else [0.0, 0.3, 1.0] for i in range(4)]
    df = pl.DataFrame({"y": [0.5] * 4, "m": pl.Series(members, dtype=pl.Array(pl.Float64, 3))})
    with pytest.raises(pc.CalibrationDataError, match="in 1 of 4 rows"):
        pc.regression_summary(df, "y", ensemble="m")


def test_an_array_ensemble_with_a_bad_member_gives_nulls_lazily_and_counts_it() -> None:
    members = [[0.0, None, 1.0] if i == 2 else [0.0, 0.3, 1.0] for i in range(5)]
    df = pl.DataFrame({"y": [0.5] * 5, "m": pl.Series(members, dtype=pl.Array(pl.Float64, 3))})
    row = pc.regression_summary(df.lazy(), "y", ensemble="m").collect().row(0, named=True)
    assert (row["count"], row["refused"], row["crps"]) == (4, 1, None)
    assert df.select(pc.crps_ensemble("y", ensemble="m")).item() is None
