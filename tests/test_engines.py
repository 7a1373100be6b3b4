"""The statistics table computed on Spark and Dask equals the Polars one (issue 15).

One local Spark session (``local[2]``, UI disabled) and one Dask ``LocalCluster`` (2
workers, one thread each, in process) serve the whole module. Spark tests skip when
pyspark or Java is missing, saying which.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import make_log, near_edges

pytestmark = [
    # PySpark 4 warns that it does not yet support pandas 3 (it uses Arrow here).
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    # Dask's parquet reader of this version calls a pandas 3.1 deprecated argument.
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index"),
    # Dask's in-process cluster may leave a socket to the garbage collector.
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

ENGINES = ["spark", "dask"]
TOL = {"check_exact": False, "rel_tol": 1e-12, "abs_tol": 1e-12}


def _java_missing() -> str | None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Spark needs Java: no `java` on PATH and no JAVA_HOME"
    return None


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local Spark session (UI disabled) whose Python workers import this checkout."""
    pytest.importorskip("pyspark", reason="the spark extra (pyspark) is not installed")
    reason = _java_missing()
    if reason:
        pytest.skip(reason)
    from pyspark.sql import SparkSession

    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYSPARK_PYTHON", sys.executable)
        patch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
        session = (
            SparkSession.builder.master("local[2]")
            .appName("polars_calib tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.executorEnv.PYTHONPATH", path)
            .getOrCreate()
        )
        yield session
        session.stop()


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    """An in-process Dask cluster that takes no fixed port.

    Without a dashboard the scheduler still serves HTTP (health, metrics) on port 8787
    by default, and warns (an error here) when another program holds it: its HTTP
    server gets a free port of the loopback interface instead.
    """
    pytest.importorskip("dask.dataframe", reason="the dask extra is not installed")
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


Convert = Callable[..., Any]


@pytest.fixture(params=ENGINES)
def to_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Convert:
    """A Polars frame as the engine's frame, in `partitions` parquet files."""
    name = request.param
    request.getfixturevalue("spark" if name == "spark" else "dask_client")

    def convert(df: pl.DataFrame, partitions: int = 3) -> Any:
        directory = tmp_path / f"log_{len(list(tmp_path.iterdir()))}"
        directory.mkdir()
        size = max(1, math.ceil(df.height / partitions))
        for i, part in enumerate(df.iter_slices(size)):
            part.write_parquet(directory / f"part-{i:03d}.parquet")
        if name == "spark":
            return request.getfixturevalue("spark").read.parquet(str(directory))
        import dask.dataframe as dd

        # Arrow-backed columns: nulls stay apart from NaN, as in Polars.
        return dd.read_parquet(str(directory), dtype_backend="pyarrow")

    return convert


LARGE_CASES: list[tuple[list[str] | None, str | None, Any]] = [
    (["segment", "g"], "w", "right"),
    (None, None, "left"),
]


@pytest.fixture(scope="module")
def large() -> tuple[pl.DataFrame, list[pl.DataFrame]]:
    """~1M rows with nulls, many on bin edges, and their Polars tables (made once)."""
    df = make_log(15, 1_000_000, groups=12, nulls=0.01).with_columns(
        segment=pl.when(pl.col("g") % 3 == 0).then(pl.lit("a")).otherwise(pl.lit("b"))
    )
    tables = [
        pc.bin_statistics(df, "p", "y", by=by, weight=weight, closed=closed)
        for by, weight, closed in LARGE_CASES
    ]
    return df, tables


@pytest.mark.slow
def test_large_log_matches_polars(
    to_engine: Convert, large: tuple[pl.DataFrame, list[pl.DataFrame]]
) -> None:
    """~1M rows with nulls, on bin edges, weighted, per group: the Polars table to 1e-12."""
    df, tables = large
    data = to_engine(df, partitions=4)
    assert type(data).__module__.split(".")[0] in {"pyspark", "dask"}
    for (by, weight, closed), want in zip(LARGE_CASES, tables):
        got = pc.bin_statistics(data, "p", "y", by=by, weight=weight, closed=closed)
        assert got.schema == want.schema
        assert_frame_equal(got, want, **TOL)
        assert got["count"].to_list() == want["count"].to_list()  # bins: exactly
        assert_frame_equal(
            pc.metrics_from_statistics(got, by=by), pc.metrics_from_statistics(want, by=by), **TOL
        )
        assert_frame_equal(
            pc.reliability_from_statistics(got, by=by),
            pc.reliability_from_statistics(want, by=by),
            **TOL,
        )


# Every edge k/B for B <= 100 (two-decimal values among them) and their neighbours.
EDGES = pl.DataFrame(
    {"p": np.unique(np.concatenate([near_edges(b) for b in range(1, 101)]))}
).with_columns(
    y=(pl.int_range(pl.len()) % 2).cast(pl.Int64), id=pl.int_range(pl.len(), dtype=pl.Int64)
)


def _same_bins(data: Any, n_bins: int, closed: Any, by: str | None = None) -> None:
    got = pc.bin_statistics(data, "p", "y", by=by, n_bins=n_bins, closed=closed, metrics=["ece"])
    want = pc.bin_statistics(EDGES, "p", "y", by=by, n_bins=n_bins, closed=closed, metrics=["ece"])
    assert got["count"].to_list() == want["count"].to_list(), (n_bins, closed)
    assert_frame_equal(got, want, **TOL)


@pytest.mark.slow
def test_every_edge_dask(dask_client: Any, tmp_path: Path) -> None:
    """Dask: every k/B edge of every B <= 100 and two-decimal data, both closures."""
    import dask.dataframe as dd

    data = dd.from_pandas(EDGES.to_pandas(), npartitions=2)
    for n_bins in range(1, 101):
        for closed in ("right", "left"):
            _same_bins(data, n_bins, closed)


@pytest.mark.slow
def test_edges_spark(spark: Any) -> None:
    """Spark: each value reaches Polars bit for bit (double, and decimal(3,2) data), and
    the bins of every edge and two-decimal value agree for B = 7 and 100, both closures."""
    from pyspark.sql import functions as F

    data = spark.createDataFrame(EDGES.to_arrow()).repartition(2)
    # One row per group: sum_p is the value as the engine's Polars saw it.
    got = pc.bin_statistics(data, "p", "y", by="id", n_bins=1, metrics=["ece"])
    assert got.filter(pl.col("count") == 1)["sum_p"].to_list() == EDGES["p"].to_list()
    for n_bins in (7, 100):  # a denominator that is not decimal, and the 0.01 grid
        for closed in ("right", "left"):
            _same_bins(data, n_bins, closed)
    # A decimal column (a SQL literal such as 0.07 is a decimal in Spark) reaches
    # Polars as Decimal and becomes the nearest double, as in Polars.
    two = pl.DataFrame({"p": [j / 100 for j in range(101)], "y": [j % 2 for j in range(101)]})
    decimal = spark.createDataFrame(two.to_arrow()).select(
        F.col("p").cast("decimal(3,2)").alias("p"), "y"
    )
    for closed in ("right", "left"):
        got = pc.bin_statistics(decimal, "p", "y", n_bins=100, closed=closed)
        assert_frame_equal(got, pc.bin_statistics(two, "p", "y", n_bins=100, closed=closed))


def _error(call: Callable[[], object]) -> str:
    with pytest.raises(pc.CalibrationDataError) as error:
        call()
    return str(error.value)


def test_bad_data_counted_on_the_engine(to_engine: Convert) -> None:
    """Refused rows raise the Polars message: each column, problem and count."""
    df = (
        make_log(3, 3_000, groups=3)
        .with_columns(
            p=pl.when(pl.col("g") == 1).then(pl.col("p") + 1.0).otherwise(pl.col("p")),
            y=pl.when(pl.int_range(pl.len()) % 7 == 0).then(2).otherwise(pl.col("y")),
            w=pl.when(pl.int_range(pl.len()) % 11 == 0).then(-1.0).otherwise(pl.col("w")),
        )
        .with_columns(p=pl.when(pl.int_range(pl.len()) == 5).then(float("nan")).otherwise("p"))
    )
    data = to_engine(df)
    message = _error(lambda: pc.bin_statistics(data, "p", "y", by="g", weight="w"))
    assert message == _error(lambda: pc.bin_statistics(df, "p", "y", by="g", weight="w"))
    assert "probability outside [0, 1] in" in message and "probability NaN in 1 of" in message


def test_schema_errors_before_any_job(to_engine: Convert) -> None:
    df = make_log(4, 100)
    data = to_engine(df)
    message = _error(lambda: pc.bin_statistics(data, "p", "nope"))
    assert "column 'nope' is missing" in message
    with pytest.raises(TypeError, match="column names"):
        pc.bin_statistics(data, "p", "y", by=pl.col("g") % 2)
    with pytest.raises(ValueError, match="uniform bins"):
        pc.bin_statistics(data, "p", "y", strategy="quantile")


def test_nulls_ignored_and_groups_kept(to_engine: Convert) -> None:
    """Null probabilities, labels and weights are ignored; an all-null group keeps its row."""
    df = make_log(5, 5_000, groups=4, nulls=0.2).with_columns(
        p=pl.when(pl.col("g") == 3).then(None).otherwise(pl.col("p"))
    )
    data = to_engine(df)
    got = pc.bin_statistics(data, "p", "y", by="g", weight="w", n_bins=10)
    want = pc.bin_statistics(df, "p", "y", by="g", weight="w", n_bins=10)
    assert_frame_equal(got, want, **TOL)
    # The table is sparse: the all-null group is one row of count 0, with no bin.
    kept = got.filter(pl.col("g") == 3)
    assert kept["count"].to_list() == [0] and kept["bin"].to_list() == [None]


def test_labels_weights_and_closure(to_engine: Convert) -> None:
    """`pos_label` on string labels, weights, a left closure and a peer's bins."""
    df = make_log(6, 20_000, groups=3).with_columns(
        outcome=pl.when(pl.col("y") == 1).then(pl.lit("churned")).otherwise(pl.lit("stayed"))
    )
    data = to_engine(df)
    options: dict[str, Any] = {"by": "g", "weight": "w", "pos_label": "churned"}
    for extra in ({"closed": "left"}, {"compat": "sklearn"}, {"n_bins": 40}):
        got = pc.bin_statistics(data, "p", "outcome", **options, **extra)
        assert_frame_equal(got, pc.bin_statistics(df, "p", "outcome", **options, **extra), **TOL)


@pytest.mark.parametrize("reduction", ["confidence", "classwise", "top_label"])
def test_probability_vectors(to_engine: Convert, reduction: Any) -> None:
    df = make_log(7, 20_000, groups=2, classes=4, nulls=0.01).with_columns(
        pl.col("probs").cast(pl.List(pl.Float64))
    )
    data = to_engine(df)
    got = pc.bin_statistics(data, "probs", "cls", by="g", reduction=reduction)
    want = pc.bin_statistics(df, "probs", "cls", by="g", reduction=reduction)
    assert_frame_equal(got, want, **TOL)


def test_engines_are_not_imported() -> None:
    """Polars data never import an engine; data of no known kind are refused by type."""
    code = (
        "import sys, polars as pl, polars_calib as pc\n"
        "pc.bin_statistics(pl.DataFrame({'p': [0.5], 'y': [1]}), 'p', 'y')\n"
        "assert not {'pyspark', 'dask'} & set(sys.modules), sorted(sys.modules)\n"
    )
    root = str(Path(__file__).parents[1])
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
    for other in (np.zeros(3), {"p": [0.5], "y": [1]}):
        with pytest.raises(TypeError, match="must be a polars DataFrame or LazyFrame"):
            pc.bin_statistics(other, "p", "y")  # type: ignore[call-overload]


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_engine(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path, example_log: pl.DataFrame
) -> None:
    """``polars-calib report --engine``: the engine reads the log, the outputs are Polars'."""
    from polars_calib.cli import main

    request.getfixturevalue("spark" if engine == "spark" else "dask_client")
    log = tmp_path / "log"
    log.mkdir()
    for i, part in enumerate(example_log.iter_slices(7_000)):
        part.write_parquet(log / f"part-{i}.parquet")
    common = ["report", str(log), "--prob", "p", "--label", "y", "--by", "model", "-q"]
    assert main([*common, "--engine", engine, "--out", str(tmp_path / engine)]) == 0
    assert main([*common, "--out", str(tmp_path / "polars")]) == 0
    for name in ("summary.parquet",):
        got = pl.read_parquet(tmp_path / engine / name)
        assert_frame_equal(got, pl.read_parquet(tmp_path / "polars" / name), **TOL)
    for name in ("reliability.csv",):
        got = pl.read_csv(tmp_path / engine / name)
        assert_frame_equal(got, pl.read_csv(tmp_path / "polars" / name), **TOL)


def test_cli_engine_needs_uniform_bins(capsys: pytest.CaptureFixture[str]) -> None:
    from polars_calib.cli import main

    argv = ["report", "log.parquet", "--prob", "p", "--label", "y", "--engine", "dask"]
    assert main([*argv, "--strategy", "quantile"]) == 2
    assert "--engine dask needs uniform bins" in capsys.readouterr().err


def test_vectors_of_different_lengths(to_engine: Convert) -> None:
    """Classwise vectors whose length changes, within or between partitions, raise."""
    df = pl.concat(
        [
            pl.DataFrame({"probs": [[0.5, 0.5]] * 3, "cls": [0, 1, 0]}),
            pl.DataFrame({"probs": [[0.2, 0.3, 0.5]] * 3, "cls": [0, 1, 2]}),
        ]
    )
    data = to_engine(df, partitions=2)
    message = _error(lambda: pc.bin_statistics(data, "probs", "cls", reduction="classwise"))
    assert "column 'probs': vectors of different lengths" in message


def test_dask_numpy_nan_is_missing(dask_client: Any) -> None:
    """In a NumPy float column pandas stores a missing value as NaN: ignored, as a null."""
    import dask.dataframe as dd

    df = make_log(8, 2_000, groups=2, nulls=0.1)
    data = dd.from_pandas(df.to_pandas(), npartitions=2)  # nulls become NaN here
    assert str(data.dtypes["p"]) == "float64"
    got = pc.bin_statistics(data, "p", "y", by="g", weight="w")
    assert_frame_equal(got, pc.bin_statistics(df, "p", "y", by="g", weight="w"), **TOL)
    with_nan = df.with_columns(p=pl.col("p").fill_null(float("nan")))
    with pytest.raises(pc.CalibrationDataError, match="probability NaN"):
        pc.bin_statistics(with_nan, "p", "y", by="g", weight="w")


# Resampling on the engines (issue 15 x issue 11): the replicate keys and their sums are
# columns of the partial table, so they run on every engine with no engine code.
DIAGNOSTIC_METRICS: list[Any] = [
    "ece",
    "brier",
    "spiegelhalter_z",
    "spiegelhalter_p",
    "hosmer_lemeshow_p",
    "brier_decomposition",
    "log_loss_calibration_loss",
]


@pytest.fixture(scope="module")
def replicated() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """20k rows with ids far from their positions (negative, above 2**32); the same rows
    shuffled (as an engine gets them); their Polars table with 32 replicates of each method."""
    df = make_log(21, 20_000, groups=3, nulls=0.01).with_columns(
        rid=(pl.int_range(pl.len(), dtype=pl.Int64) - 10_000) * 3_000_000_007
    )
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=3)
    want = pc.bin_statistics(df, "p", "y", **REPLICATED)
    return df, shuffled, want


REPLICATED: dict[str, Any] = {
    "by": "g",
    "weight": "w",
    "resampling": ["bootstrap", "consistency"],
    "n_resamples": 32,
    "seed": 11,
    "id": "rid",
    "metrics": DIAGNOSTIC_METRICS,
}


def test_replicates_match_polars(
    to_engine: Convert, replicated: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]
) -> None:
    """Bootstrap and consistency replicates on the engine, from shuffled rows in three
    partitions: the Polars table (counts exactly), intervals and p-values."""
    _, shuffled, want = replicated
    got = pc.bin_statistics(to_engine(shuffled), "p", "y", **REPLICATED)
    assert got.schema == want.schema
    assert got["count"].to_list() == want["count"].to_list()
    # The ids counted per partition are an estimate (Polars' approx_n_unique), summed.
    assert_frame_equal(got.drop("distinct_ids"), want.drop("distinct_ids"), **TOL)
    assert want.filter(pl.col("resampling") == "bootstrap")["replicate"].n_unique() == 32
    names: list[Any] = [
        "ece",
        "mce",
        "brier",
        "spiegelhalter_p",
        "consistency_p",
        "consistency_p_brier",
    ]
    got_metrics = pc.metrics_from_statistics(got, by="g", metrics=names, confidence=0.9)
    want_metrics = pc.metrics_from_statistics(want, by="g", metrics=names, confidence=0.9)
    assert_frame_equal(got_metrics, want_metrics, **TOL)
    assert got_metrics["ece_lower"].null_count() == 0


def test_replicates_of_vectors(to_engine: Convert) -> None:
    """Probability vectors: Poisson weights and labels drawn from the categorical."""
    df = make_log(22, 6_000, groups=2, classes=3).with_columns(
        pl.col("probs").cast(pl.List(pl.Float64)), rid=pl.int_range(pl.len(), dtype=pl.Int64)
    )
    options: dict[str, Any] = {
        "by": "g",
        "reduction": "top_label",
        "resampling": ["bootstrap", "consistency"],
        "n_resamples": 8,
        "id": "rid",
    }
    got = pc.bin_statistics(to_engine(df.reverse(), partitions=2), "probs", "cls", **options)
    want = pc.bin_statistics(df, "probs", "cls", **options)
    # The ids counted per partition are an estimate (Polars' approx_n_unique), summed.
    assert_frame_equal(got.drop("distinct_ids"), want.drop("distinct_ids"), **TOL)


def test_diagnostic_sums_on_engines(to_engine: Convert) -> None:
    """Spiegelhalter, Hosmer-Lemeshow and decomposition terms are partial-table sums."""
    df = make_log(23, 20_000, groups=3)
    options: dict[str, Any] = {"by": "g", "weight": "w", "metrics": DIAGNOSTIC_METRICS}
    got = pc.bin_statistics(to_engine(df), "p", "y", **options)
    want = pc.bin_statistics(df, "p", "y", **options)
    assert {"sum_spiegelhalter_numerator", "sum_squared_p", "sum_p_y"} <= set(got.columns)
    assert_frame_equal(got, want, **TOL)
    metrics = pc.metrics_from_statistics(got, by="g", metrics=DIAGNOSTIC_METRICS)
    assert_frame_equal(
        metrics, pc.metrics_from_statistics(want, by="g", metrics=DIAGNOSTIC_METRICS), **TOL
    )
    assert metrics["spiegelhalter_p"].null_count() == 0


def test_engine_argument_errors(to_engine: Convert) -> None:
    """Before any job: resampling without a row id column, and tests of vectors."""
    df = make_log(24, 300, classes=3).with_columns(rid=pl.int_range(pl.len()), s=pl.lit("a"))
    data = to_engine(df)
    with pytest.raises(ValueError, match=r"needs `id=`.*depends on the partitioning"):
        pc.bin_statistics(data, "p", "y", resampling="bootstrap")
    with pytest.raises(TypeError, match="`id` must be a column name"):
        pc.bin_statistics(data, "p", "y", resampling="bootstrap", id=pl.col("rid"))
    with pytest.raises(TypeError, match="`id` must be an integer column"):
        pc.bin_statistics(data, "p", "y", resampling="bootstrap", id="s")
    with pytest.raises(ValueError, match="not probability vectors"):
        pc.bin_statistics(data, "probs", "cls", metrics=["spiegelhalter_p"])
    with pytest.raises(ValueError, match="n_bins` >= 3"):
        pc.bin_statistics(data, "p", "y", n_bins=2, metrics=["hosmer_lemeshow"])


def test_cli_engine_replicates(
    dask_client: Any, tmp_path: Path, example_log: pl.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report --engine dask --resamples N --id COL``: Polars' intervals and p-values;
    without ``--id``, a usage error."""
    from polars_calib.cli import main

    log = tmp_path / "log"
    log.mkdir()
    for i, part in enumerate(example_log.reverse().iter_slices(7_000)):
        part.write_parquet(log / f"part-{i}.parquet")
    common = [
        "report",
        str(log),
        "--prob",
        "p",
        "--label",
        "y",
        "--by",
        "model",
        "-q",
        "--resamples",
        "16",
        "--metrics",
        "ece,consistency_p",
    ]
    assert main([*common, "--engine", "dask"]) == 2
    assert "--engine dask with replicates" in capsys.readouterr().err
    ided = [*common, "--id", "request_id"]
    assert main([*ided, "--engine", "dask", "--out", str(tmp_path / "dask")]) == 0
    assert main([*ided, "--out", str(tmp_path / "polars")]) == 0
    got = pl.read_parquet(tmp_path / "dask" / "summary.parquet")
    assert {"ece_lower", "consistency_p"} <= set(got.columns)
    assert_frame_equal(got, pl.read_parquet(tmp_path / "polars" / "summary.parquet"), **TOL)


def test_time_windows_on_engines(to_engine: Convert) -> None:
    """`time` and `every` group by calendar windows on the engine, as in Polars."""
    from datetime import date

    df = make_log(25, 5_000, groups=2).with_columns(
        day=pl.lit(date(2024, 3, 1)) + pl.duration(days=pl.int_range(pl.len()) % 9)
    )
    options: dict[str, Any] = {"by": "g", "time": "day", "every": "1w", "weight": "w"}
    got = pc.bin_statistics(to_engine(df), "p", "y", **options)
    assert got.columns[:3] == ["g", "day", "bin"]
    assert_frame_equal(got, pc.bin_statistics(df, "p", "y", **options), **TOL)


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_engine_vectors_and_windows(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``--engine`` with probability vectors (named as the summary names them, with no
    ``--reduction``), time windows and the HTML page: the outputs are Polars'."""
    from datetime import date

    from polars_calib.cli import main

    request.getfixturevalue("spark" if engine == "spark" else "dask_client")
    df = make_log(26, 3_000, groups=2, classes=3).with_columns(
        pl.col("probs").arr.to_list(),
        day=pl.lit(date(2024, 3, 1)) + pl.duration(days=pl.int_range(pl.len()) % 9),
    )
    df.write_parquet(tmp_path / "log.parquet")
    common = [
        "report",
        str(tmp_path / "log.parquet"),
        "--prob",
        "probs",
        "--label",
        "cls",
        "--by",
        "g",
        "--time",
        "day",
        "--every",
        "1w",
        "-q",
    ]
    for name in (engine, "polars"):
        extra = ["--engine", engine] if name == engine else []
        html = ["--html", str(tmp_path / name / "page.html")]
        assert main([*common, *extra, *html, "--out", str(tmp_path / name)]) == 0
    got = pl.read_parquet(tmp_path / engine / "summary.parquet")
    assert {"mean_confidence", "confidence_ece"} <= set(got.columns)
    assert_frame_equal(got, pl.read_parquet(tmp_path / "polars" / "summary.parquet"), **TOL)
    for name in ("reliability.csv",):
        got = pl.read_csv(tmp_path / engine / name)
        assert_frame_equal(got, pl.read_csv(tmp_path / "polars" / name), **TOL)
    page = (tmp_path / engine / "page.html").read_text(encoding="utf-8")
    assert "confidence_ece" in page and "the confidence reduction" in page


@pytest.mark.parametrize("partitions", [10, 17, 65])
def test_dask_merge_tree_keeps_every_partition(
    dask_client: Any, tmp_path: Path, partitions: int
) -> None:
    """Past 8 partitions Dask merges partial tables in a tree (8 at a time): each partition
    counts once, whatever the tree's depth (10 and 17: two levels, 65: three)."""
    import dask.dataframe as dd

    df = make_log(23, 13 * partitions, groups=3)
    for i, part in enumerate(df.iter_slices(13)):
        part.write_parquet(tmp_path / f"part-{i:03d}.parquet")
    data = dd.read_parquet(str(tmp_path), dtype_backend="pyarrow")
    assert data.npartitions == partitions
    got = pc.bin_statistics(data, "p", "y", by="g", weight="w", n_bins=5)
    want = pc.bin_statistics(df, "p", "y", by="g", weight="w", n_bins=5)
    assert_frame_equal(got, want, **TOL)
    assert got["count"].sum() == df.height


def test_spark_workers_run_this_interpreter_by_default(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session started without PYSPARK_PYTHON gives its workers the `python3` on the PATH
    (here one without Polars): the Python API runs them with this interpreter, as the
    command line does, instead of failing inside 200 lines of Java."""
    context = spark.sparkContext
    monkeypatch.delenv("PYSPARK_PYTHON")
    monkeypatch.setattr(context, "pythonExec", "python3")  # PySpark's default then
    df = make_log(29, 200)
    data = spark.createDataFrame(df.to_pandas())
    assert_frame_equal(pc.bin_statistics(data, "p", "y"), pc.bin_statistics(df, "p", "y"), **TOL)
    assert context.pythonExec == sys.executable


def test_spark_workers_without_the_package_say_so(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A chosen worker Python that cannot import polars_calib is one clear ImportError."""
    # This interpreter, but where polars_calib is not found (as on a worker without it).
    shadow = tmp_path / "shadow" / "polars_calib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'polars_calib'\", name='polars_calib')\n"
    )
    python = tmp_path / "python"
    python.write_text(
        # Away from the working directory, whose checkout Python would find first.
        f'#!/bin/sh\ncd "{tmp_path}" && PYTHONPATH="{shadow.parent}:$PYTHONPATH" '
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    monkeypatch.setenv("PYSPARK_PYTHON", str(python))
    monkeypatch.setattr(spark.sparkContext, "pythonExec", str(python))
    data = spark.createDataFrame(make_log(31, 20).to_pandas())
    with pytest.raises(ImportError, match="set PYSPARK_PYTHON to a Python that has polars_calib"):
        pc.bin_statistics(data, "p", "y")


def _gaussian_log(seed: int, n: int) -> pl.DataFrame:
    """Gaussian predictions in 3 groups, under-confident (0), over-confident (1) and both
    by sigma (2), with nulls, integer weights and a day column."""
    from datetime import date

    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    mu = rng.normal(0.0, 2.0, n)
    sigma = rng.uniform(0.2, 2.0, n)
    scale = np.where(group == 0, 0.6, np.where(group == 1, 1.7, np.where(sigma < 1, 1.6, 0.6)))
    y = mu + scale * sigma * rng.normal(size=n)
    df = pl.DataFrame(
        {"g": group, "mu": mu, "sigma": sigma, "y": y, "w": rng.integers(0, 4, n).astype(float)}
    )
    return df.with_columns(
        y=pl.when(pl.Series(rng.random(n) >= 0.05)).then(pl.col("y")),
        day=pl.lit(date(2024, 3, 1)) + pl.duration(days=pl.int_range(pl.len()) % 9),
    )


@pytest.mark.parametrize(
    "options",
    [
        {"by": "g", "weight": "w"},
        {"n_levels": 11, "time": "day", "every": "1w", "by": ["g"]},
    ],
)
def test_regression_statistics_on_engines(to_engine: Convert, options: dict[str, Any]) -> None:
    """The Gaussian table on the engine equals the Polars table, and finishes alike."""
    df = _gaussian_log(41, 2_000)
    got = pc.regression_statistics(to_engine(df), "y", mean="mu", std="sigma", **options)
    want = pc.regression_statistics(df, "y", mean="mu", std="sigma", **options)
    assert_frame_equal(got, want, **TOL)
    keys = [key for key in ("g", "day") if key in got.columns]
    finished = pc.regression_metrics_from_statistics(got, by=keys)
    summary = pc.regression_summary(df, "y", mean="mu", std="sigma", **options)
    assert_frame_equal(finished, summary, **TOL)


def test_regression_refused_rows_counted_on_engines(to_engine: Convert) -> None:
    """Refused Gaussian rows raise the Polars message: each column, problem and count;
    a missing column and a `by` expression are refused before any job."""
    df = _gaussian_log(43, 600).with_columns(
        sigma=pl.when(pl.int_range(pl.len()) % 50 == 0).then(-1.0).otherwise(pl.col("sigma")),
        mu=pl.when(pl.int_range(pl.len()) == 7).then(float("inf")).otherwise(pl.col("mu")),
    )
    data = to_engine(df)
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "by": "g", "weight": "w"}
    message = _error(lambda: pc.regression_statistics(data, "y", **options))
    assert message == _error(lambda: pc.regression_statistics(df, "y", **options))
    assert " 12 of 600 rows" in message and " 1 of 600 rows" in message
    assert "column 'nope' is missing" in _error(
        lambda: pc.regression_statistics(data, "y", mean="mu", std="nope")
    )
    with pytest.raises(TypeError, match="column names"):
        pc.regression_statistics(data, "y", mean="mu", std="sigma", by=pl.col("g") % 2)


def _forms_log(seed: int, n: int) -> pl.DataFrame:
    """Quantile, ensemble and interval predictions of one target in 3 groups: too narrow
    (0), too wide (1) and both by scale (2), with null targets, weights, a day and an id."""
    from datetime import date

    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    mu, sigma = rng.normal(0.0, 2.0, n), rng.uniform(0.2, 2.0, n)
    scale = np.where(group == 0, 0.6, np.where(group == 1, 1.7, np.where(sigma < 1, 1.6, 0.6)))
    y = mu + scale * sigma * rng.normal(size=n)
    z = np.array([-1.2815515655446004, 0.0, 1.2815515655446004])  # the 0.1, 0.5, 0.9 quantiles
    members = mu[:, None] + sigma[:, None] * rng.normal(size=(n, 7))
    df = pl.DataFrame(
        {
            "id": rng.permutation(n).astype(np.int64),
            "g": group,
            "y": y,
            "q": (mu[:, None] + sigma[:, None] * z).tolist(),
            "x": members.tolist(),
            "lo80": mu + z[0] * sigma,
            "hi80": mu + z[2] * sigma,
            "lo50": mu - 0.6744897501960817 * sigma,
            "hi50": mu + 0.6744897501960817 * sigma,
            "w": rng.integers(0, 4, n).astype(float),
        }
    )
    return df.with_columns(
        pl.col("q").list.to_array(3),
        y=pl.when(pl.Series(rng.random(n) >= 0.05)).then(pl.col("y")),
        day=pl.lit(date(2024, 3, 1)) + pl.duration(days=pl.int_range(pl.len()) % 9),
    )


FORMS: dict[str, dict[str, Any]] = {
    "quantile": {"quantiles": "q", "levels": [0.1, 0.5, 0.9], "by": "g", "weight": "w"},
    "quantile columns": {
        "quantiles": ["lo80", "hi80"],
        "levels": [0.1, 0.9],
        "time": "day",
        "every": "1w",
    },
    "ensemble": {"ensemble": "x", "id": "id", "seed": 7, "n_levels": 11, "by": "g"},
    "interval": {"lower": ["lo80", "lo50"], "upper": ["hi80", "hi50"], "by": "g", "weight": "w"},
}


@pytest.mark.parametrize("form", FORMS)
def test_regression_forms_on_engines(to_engine: Convert, form: str) -> None:
    """Each prediction form's table on the engine equals the Polars table of the same
    rows (shuffled, in 3 partitions), and finishes alike."""
    df = _forms_log(47, 1_500)
    options = FORMS[form]
    got = pc.regression_statistics(
        to_engine(df.sample(fraction=1.0, shuffle=True, seed=1)), "y", **options
    )
    want = pc.regression_statistics(df, "y", **options)
    assert_frame_equal(got, want, **TOL)
    if form != "interval":  # an interval table's finisher needs its levels (the summary's)
        keys = [key for key in ("g", "day") if key in got.columns]
        finished = pc.regression_metrics_from_statistics(got, by=keys)
        assert_frame_equal(finished, pc.regression_summary(df, "y", **options), **TOL)


def test_regression_forms_refused_rows_counted_on_engines(to_engine: Convert) -> None:
    """Crossing quantiles and reversed bounds raise the Polars message, counted on the
    engine; an ensemble without `id` is refused before any job."""
    df = _forms_log(53, 600).with_columns(
        q=pl.when(pl.int_range(pl.len()) % 40 == 0)
        .then(pl.col("q").arr.reverse())
        .otherwise(pl.col("q")),
        lo50=pl.when(pl.int_range(pl.len()) % 30 == 0).then(pl.col("hi50") + 1.0).otherwise("lo50"),
    )
    data = to_engine(df)
    crossing: dict[str, Any] = {"quantiles": "q", "levels": [0.1, 0.5, 0.9], "by": "g"}
    reversed_: dict[str, Any] = {"lower": ["lo80", "lo50"], "upper": ["hi80", "hi50"]}
    for options, count in ((crossing, " 15 of 600 rows"), (reversed_, " 20 of 600 rows")):
        message = _error(partial(pc.regression_statistics, data, "y", **options))
        assert message == _error(partial(pc.regression_statistics, df, "y", **options))
        assert count in message
    with pytest.raises(ValueError, match="need `id=`"):
        pc.regression_statistics(data, "y", ensemble="x")


def test_variance_tables_on_engines(to_engine: Convert) -> None:
    """σ-bin tables over a fixed range merge: on the engine they equal the Polars ones
    (bins, smallest and largest σ, sums), and so do ENCE, UCE and QCE; a group's own
    range is refused before any job."""
    df = _gaussian_log(59, 1_500)
    data = to_engine(df.sample(fraction=1.0, shuffle=True, seed=2))
    options: dict[str, Any] = {"mean": "mu", "std": "sigma", "by": "g", "weight": "w"}
    options |= {"n_bins": 6, "range": (0.3, 1.8), "closed": "left"}
    got = pc.variance_reliability(data, "y", **options)
    assert_frame_equal(got, pc.variance_reliability(df, "y", **options), **TOL)
    summary = pc.variance_summary(data, "y", **options)
    assert_frame_equal(summary, pc.variance_summary(df, "y", **options), **TOL)
    with pytest.raises(ValueError, match="need fixed bins"):
        pc.variance_reliability(data, "y", mean="mu", std="sigma", strategy="quantile")
