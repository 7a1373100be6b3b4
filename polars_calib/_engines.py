"""Other engines: the statistics table computed by Spark or Dask where the data are.

The design (see ``docs/scale-out.md``): the statistics table is a sum over rows, so
it is a sum over any partition of the rows. Each engine runs **Polars itself** on
its partitions (Spark: ``mapInArrow`` on the executors' Arrow batches; Dask: one task
per pandas partition), computing :func:`~polars_calib._table.build.partial_statistics`
there: the same problem (validity rule, row terms), the same bin rule and the same
sums as the Polars path, from the same code. The engine then merges the small
partial tables by summing rows of the same keys and bin (Spark: a ``groupBy`` whose
shuffle holds groups x bins rows per partition; Dask: a tree of merges on the
workers), the driver receives one row per (group, bin) and finishes the table with
:func:`~polars_calib._table.build.complete_statistics`: every bin of every group,
refused rows counted, exactly as for a Polars frame. Refused rows raise
:class:`~polars_calib._core.validation.CalibrationDataError`, counted per check on the
engine (a second pass, only when there are some).

Nothing here compares a probability with an edge, decides which rows are valid or
defines a sum: a new row term or key added to ``Problem`` / ``partial_statistics``
runs on every engine as it is: the resampling replicates (a ``replicate`` key) run
so, the request shipped as plain values and the draws keyed by the ``id`` column, which
an engine requires (:func:`engine_resamples`: a row's position depends on the
partitioning). The engines are never imported unless the data are
one of their frames (the caller has imported the engine then).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Literal

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.binning import binning as make_binning
from polars_calib._core.options import SUM_TOLERANCE, Closed, Compat, Reduction
from polars_calib._core.problem import Check
from polars_calib._core.validation import problem_counts
from polars_calib._table.build import Partial, complete_statistics, partial_statistics
from polars_calib._table.forms import RegressionForm
from polars_calib._table.merge import EDGE_MERGES, merge_partials
from polars_calib._table.plan import Prepared, check_statistics, prepare
from polars_calib._table.replicates import RESAMPLING_KEYS, Resample
from polars_calib._table.variance import SigmaTable

__all__ = [
    "ENGINES",
    "Engine",
    "EngineSpec",
    "column_keys",
    "engine_form",
    "engine_of",
    "engine_resamples",
    "engine_statistics",
    "local_spark",
    "read_with",
]

Engine = Literal["spark", "dask"]
ENGINES: tuple[Engine, ...] = ("spark", "dask")

# Rows of Arrow batches gathered before one Polars aggregation on a Spark executor
# (Spark hands a partition over in batches of 10,000 rows by default).
_CHUNK_ROWS = 1 << 20
# Partial tables merged by one Dask task (the fan-in of the merge tree).
_FAN_IN = 8


def column_keys(by: object) -> tuple[str, ...]:
    """Group keys of another engine: column names only (``TypeError`` otherwise)."""
    keys = [] if by is None else [by] if isinstance(by, str) else by
    if not isinstance(keys, (list, tuple)) or not all(isinstance(key, str) for key in keys):
        msg = f"`by` must be column names for a Spark or Dask DataFrame, got {by!r}"
        raise TypeError(msg)
    return tuple(keys)


def engine_resamples(resamples: Sequence[Resample], engine: Engine) -> tuple[Resample, ...]:
    """Resampling requests an engine can run: each keyed by a row identity column.

    A row's draws are hashed from its identity; the default identity, the row's
    position, depends on how the engine partitions and orders the rows, so on an
    engine `id` is required (``ValueError`` without it) and is a column name
    (``TypeError`` otherwise: the workers rebuild the query from plain values).
    """
    for resample in resamples:
        if resample.id is None:
            msg = (
                f"resampling on {engine} needs `id=`, a column holding a unique integer row "
                "id: the default (the row's position) depends on the partitioning, so the "
                "draws would differ from run to run"
            )
            raise ValueError(msg)
        if not isinstance(resample.id, str):
            msg = (
                f"`id` must be a column name for a Spark or Dask DataFrame, got {resample.id!r} "
                "(add the column on the engine first)"
            )
            raise TypeError(msg)
    return tuple(resamples)


def engine_form(form: RegressionForm, engine: Engine) -> RegressionForm:
    """A regression form an engine can run: an ensemble's rank PIT keyed by an `id` column.

    Each ensemble row's draw is hashed from its identity; the default identity, the
    row's position, depends on how the engine partitions and orders the rows, so on
    an engine `id` is required (``ValueError`` without it), as for resampling.
    """
    if form.kind == "ensemble" and form.id is None:
        msg = (
            f"ensemble predictions on {engine} need `id=`, a column holding a unique integer "
            "row id: the rank PIT's draws are keyed by the row identity, and the default "
            "(the row's position) depends on the partitioning, so the table would differ "
            "from run to run"
        )
        raise ValueError(msg)
    return form


def engine_of(data: object) -> Engine | None:
    """``"spark"`` for a ``pyspark.sql.DataFrame``, ``"dask"`` for a Dask DataFrame, else None.

    Looks in ``sys.modules`` only: an engine that is not imported cannot have made
    `data`, so nothing is imported here.
    """
    sql = sys.modules.get("pyspark.sql")
    if sql is not None and isinstance(data, sql.DataFrame):
        return "spark"
    dask_frames = sys.modules.get("dask.dataframe")
    if dask_frames is not None and isinstance(data, dask_frames.DataFrame):
        return "dask"
    return None


@dataclass(frozen=True)
class EngineSpec:
    """The arguments of :func:`~polars_calib.bin_statistics` (or, with `regression`, of
    :func:`~polars_calib.regression_statistics`), as plain values.

    Shipped to the engine's workers (pickled), which rebuild the problem with their
    own Polars from these values: no Polars expression crosses the wire.
    """

    prob: str = ""
    label: str = ""
    by: tuple[str, ...] = ()
    weight: str | None = None
    reduction: Reduction | None = None
    sum_tol: float = SUM_TOLERANCE
    pos_label: Any = None
    n_bins: int = 15
    closed: Closed = "right"
    compat: Compat | None = None
    terms: tuple[str, ...] = ("squared_error", "log_loss")
    time: str | None = None
    every: str | None = None
    resamples: tuple[Resample, ...] = ()
    """Resampling requests; their `id` is a column name (see :func:`engine_resamples`)."""
    regression: RegressionForm | SigmaTable | None = None
    """A regression problem (any prediction form, or a variance table's σ-bins) instead
    of `prob` and `label`: its own bins and terms replace `n_bins`, `closed`, `compat`
    and `terms`."""

    @property
    def binning(self) -> Binning:
        if self.regression is not None:
            return self.regression.binning
        return make_binning(self.n_bins, "uniform", self.closed, self.compat)

    @property
    def columns(self) -> list[str]:
        """The columns read: the problem's (probability and label, or a regression
        form's), the weight, time and keys."""
        form = self.regression
        problem = (self.prob, self.label) if form is None else form.columns
        named = (*problem, self.weight, self.time, *self.by, *self.identity)
        return list(dict.fromkeys(name for name in named if name is not None))

    @property
    def identity(self) -> tuple[str, ...]:
        """The row identity column of the resamplings (none without them)."""
        ids = {resample.id for resample in self.resamples}
        return tuple(name for name in ids if isinstance(name, str))

    def prepared(self, frame: pl.DataFrame | pl.LazyFrame) -> Prepared:
        """The problem and keys of `frame` (its schema is checked, no data read)."""
        if self.regression is not None:
            by = list(self.by)
            return self.regression.prepared(frame, by, self.time, self.every, self.weight)
        return prepare(
            frame,
            self.prob,
            self.label,
            by=list(self.by),
            weight=self.weight,
            reduction=self.reduction,
            sum_tol=self.sum_tol,
            pos_label=self.pos_label,
            time=self.time,
            every=self.every,
            reserved=RESAMPLING_KEYS if self.resamples else frozenset(),
        )

    def partial(self, frame: pl.DataFrame) -> Partial:
        """The partial aggregation of `frame`'s rows (a plan)."""
        prepared = self.prepared(frame)
        form = self.regression
        return partial_statistics(
            prepared.lf,
            prepared.problem,
            prepared.keys,
            self.binning,
            self.terms if form is None else form.terms,
            None if form is None else form.bin_column,
            resamples=self.resamples,
        )

    def completed(self, table: pl.LazyFrame) -> pl.LazyFrame:
        """The completed table as the Polars path gives it (a form's own columns)."""
        return table if self.regression is None else self.regression.completed(table)

    def partial_table(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The partial table of `frame`'s rows, collected (runs on a worker)."""
        return shipped(self.partial(frame)).collect()

    def counts(self, frame: pl.DataFrame, whole: bool) -> pl.DataFrame:
        """`frame`'s row count and, per check, its bad rows and an example (one row)."""
        prepared = self.prepared(frame)
        checks = _checks(prepared, whole)
        return problem_counts(prepared.lf, checks).collect()


def _checks(prepared: Prepared, whole: bool) -> list[Check]:
    checks = prepared.problem.checks
    return [check for check in checks if check.whole] if whole else list(checks)


def _merge_counts(parts: Sequence[pl.DataFrame], checks: Sequence[Check]) -> pl.DataFrame:
    """The counts of :func:`~polars_calib._core.validation.problem_counts` over all parts."""
    merged = pl.concat([part.cast({"rows": pl.Int64}) for part in parts], how="diagonal_relaxed")
    columns = [pl.col("rows").sum()]
    for i, check in enumerate(checks):
        count = pl.col(f"n{i}").cast(pl.Int64)
        if not check.whole:
            columns.append(count.sum().alias(f"n{i}"))
            if check.shown is not None:
                columns.append(pl.col(f"e{i}").drop_nulls().first())
            continue
        # A whole-group check is asked for only when the merged table shows the
        # problem (classwise row counts differ), which may lie between parts that
        # each pass: then it is said so.
        flag = pl.lit(1, pl.Int64) if check.between else (count.sum() > 0).cast(pl.Int64)
        columns.append(flag.alias(f"n{i}"))
        if check.shown is not None:
            flagged = pl.col(f"e{i}").cast(pl.String).filter(count > 0).first()
            columns.append(flagged.fill_null("between partitions").alias(f"e{i}"))
    return merged.select(columns)


def engine_statistics(
    data: Any,
    spec: EngineSpec,
    engine: Engine | None = None,
    check: Callable[[Prepared], None] | None = None,
) -> tuple[pl.DataFrame, Prepared]:
    """The statistics table of `data` (a Spark or Dask DataFrame), computed on its engine.

    Returns the table, identical in schema to the Polars one (see
    :func:`~polars_calib.bin_statistics`, or :func:`~polars_calib.regression_statistics`
    for a regression `spec`), and the prepared problem (for finishers
    that need the keys and reduction). Raises
    :class:`~polars_calib.CalibrationDataError` on a missing or mistyped column (from
    the schema, before any job) and on refused rows (counted on the engine); `check`
    (the caller's argument checks that need the problem) runs before any job too.
    """
    engine = engine or engine_of(data)
    if engine == "spark":
        runner: _Runner = _SparkRunner(data, spec)
    elif engine == "dask":
        runner = _DaskRunner(data, spec)
    else:
        msg = f"`data` must be a Spark or Dask DataFrame, got {type(data).__name__}"
        raise TypeError(msg)
    empty = runner.empty()
    prepared = spec.prepared(empty)  # the schema check, before any job
    if check is not None:
        check(prepared)
    template = spec.partial(empty)
    merged = received(runner.partial_table(template), template)
    stats = spec.completed(complete_statistics(merged, spec.binning)).collect()

    def count_problems(checks: Sequence[Check]) -> pl.DataFrame:
        whole = all(check.whole for check in checks)
        return _merge_counts(runner.counts(whole), checks)

    return check_statistics(prepared, stats, count_problems), prepared


def shipped(partial: Partial) -> pl.LazyFrame:
    """The partial table a worker sends: with given bins (a σ-bin table), each bin's
    smallest and largest value joined as ``lower`` and ``upper``, which merge by
    :data:`~polars_calib._table.merge.EDGE_MERGES`."""
    if not partial.given:
        return partial.table
    assert partial.edges is not None  # a given-bin partial carries its bins' ranges
    on = [*partial.keys, "bin"]
    return partial.table.join(partial.edges, on=on, how="left", nulls_equal=True)


def received(table: pl.DataFrame, template: Partial) -> Partial:
    """The merged partial table of all rows as a :class:`Partial` (see :func:`shipped`)."""
    edges = None
    if template.given:
        on = [*template.keys, "bin"]
        edges = table.lazy().filter(pl.col("bin") >= 0).select(*on, "lower", "upper")
        table = table.drop("lower", "upper")
    keys, names = template.keys, template.names
    return Partial(
        table.lazy(), keys, names, template.whole, template.weighted, edges, template.given
    )


class _Runner:
    """How one engine runs :class:`EngineSpec`'s Polars functions over its partitions."""

    def empty(self) -> pl.DataFrame:
        """An empty Polars frame of the columns read, with the dtypes partitions will have."""
        raise NotImplementedError

    def partial_table(self, template: Partial) -> pl.DataFrame:
        """The merged partial table of all rows."""
        raise NotImplementedError

    def counts(self, whole: bool) -> list[pl.DataFrame]:
        """Per part, the counts of :meth:`EngineSpec.counts`."""
        raise NotImplementedError


def _quoted(name: str) -> str:
    """A column name as Spark reads it literally (dots and backticks included)."""
    return "`" + name.replace("`", "``") + "`"


def _spark_workers_python(frame: Any) -> None:
    """Let a local session's Python workers run this interpreter, unless one was chosen.

    Without ``PYSPARK_PYTHON``, PySpark starts its workers with the ``python3`` on the
    PATH, which may lack this package (or Polars): its jobs failed inside 200 lines of
    Java. A local session's workers run on this machine, so they run this interpreter,
    as the command line's session does (``docs/scale-out.md``).
    """
    try:
        context = frame.sparkSession.sparkContext
    except Exception:  # Spark Connect: the server starts its workers
        return
    chosen = "PYSPARK_PYTHON" in os.environ or context.pythonExec != "python3"
    if context.master.startswith("local") and not chosen:
        context.pythonExec = sys.executable


def _spark_collect(frame: Any) -> list[Any]:
    """Collect a Spark DataFrame; a worker that cannot import this package says so."""
    try:
        return list(frame.collect())
    except Exception as error:
        missing = re.search(r"No module named '(polars[\w.]*)'", str(error))
        if missing is None:
            raise
        msg = (
            "Spark's Python workers cannot import polars_calib (no module "
            f"{missing.group(1)!r}): set PYSPARK_PYTHON to a Python that has polars_calib "
            "before the session starts (see docs/scale-out.md)"
        )
        raise ImportError(msg) from None


class _SparkRunner(_Runner):
    def __init__(self, data: Any, spec: EngineSpec) -> None:
        self.spec, self.functions = spec, import_module("pyspark.sql.functions")
        functions = self.functions
        self.data = data
        _spark_workers_python(data)
        missing = [name for name in spec.columns if name not in data.columns]
        # A missing column is reported by the schema check of `prepare`, not by Spark.
        present = [name for name in spec.columns if name not in missing]
        self.source = data.select(*(functions.col(_quoted(name)) for name in present))

    def empty(self) -> pl.DataFrame:
        to_arrow_schema = import_module("pyspark.sql.pandas.types").to_arrow_schema
        try:
            # All columns, so that a missing column's message lists them.
            schema = to_arrow_schema(self.data.schema)
        except Exception:  # a column type Arrow cannot hold
            schema = to_arrow_schema(self.source.schema)
        return pl.DataFrame(pl.from_arrow(schema.empty_table()))

    def _spark_schema(self, frame: pl.DataFrame) -> Any:
        """The Spark schema of a small Polars result: source columns keep their type."""
        types = import_module("pyspark.sql.types")
        fields = []
        for name, dtype in frame.schema.items():
            if name in self.source.columns:
                spark_type = self.source.schema[name].dataType
            elif dtype == pl.Boolean:
                spark_type = types.BooleanType()
            elif dtype in (pl.Int32, pl.Int16, pl.Int8, pl.UInt16, pl.UInt8):
                spark_type = types.IntegerType()
            elif dtype.is_integer():
                spark_type = types.LongType()
            elif dtype == pl.String:
                spark_type = types.StringType()
            else:
                spark_type = types.DoubleType()
            fields.append(types.StructField(name, spark_type, True))
        return types.StructType(fields)

    def _run(self, function: Callable[..., pl.DataFrame], template: pl.DataFrame) -> Any:
        to_arrow_schema = import_module("pyspark.sql.pandas.types").to_arrow_schema
        schema = self._spark_schema(template)
        mapper = _ArrowMapper(function, to_arrow_schema(schema), template.schema)
        return self.source.mapInArrow(mapper, schema)

    def partial_table(self, template: Partial) -> pl.DataFrame:
        empty = shipped(template).collect()
        keys = [*template.keys, "bin"]
        sums = [name for name in empty.columns if name not in keys]
        merge = _PartialMerger(self.spec, template.keys)
        partials = self._run(merge, empty)
        functions = self.functions
        merged = (
            partials.groupBy(*(_quoted(key) for key in keys))
            .agg(
                *(
                    getattr(functions, EDGE_MERGES.get(name, "sum"))(_quoted(name)).alias(name)
                    for name in sums
                )
            )
            .select(*(_quoted(name) for name in empty.columns))
        )
        return _rows_frame(_spark_collect(merged), empty.schema)

    def counts(self, whole: bool) -> list[pl.DataFrame]:
        counter = _Counter(self.spec, whole)
        template = counter(self.empty())
        return [_rows_frame(_spark_collect(self._run(counter, template)), template.schema)]


def _rows_frame(rows: Sequence[Any], schema: pl.Schema) -> pl.DataFrame:
    """Spark rows as a Polars frame of `schema`."""
    return pl.DataFrame([tuple(row) for row in rows], schema=schema, orient="row")


@dataclass(frozen=True)
class _PartialMerger:
    """Partial tables of Polars frames, merged (a picklable worker function)."""

    spec: EngineSpec
    keys: list[str]

    def __call__(self, *frames: pl.DataFrame) -> pl.DataFrame:
        return merge_partials([self.spec.partial_table(frame) for frame in frames], self.keys)


@dataclass(frozen=True)
class _Counter:
    """The problem counts of a Polars frame, as Int64 counts (a picklable worker function)."""

    spec: EngineSpec
    whole: bool

    def __call__(self, *frames: pl.DataFrame) -> pl.DataFrame:
        counts = pl.concat([self.spec.counts(frame, self.whole) for frame in frames])
        return counts.with_columns(pl.col("rows").cast(pl.Int64), pl.col("^n.*$").cast(pl.Int64))


@dataclass(frozen=True)
class _ArrowMapper:
    """A ``mapInArrow`` function: Arrow batches of a partition in, one small table out.

    Batches are gathered into chunks of about a million rows (one Polars query
    each), and `function` reduces the chunks to one small frame.
    """

    function: Callable[..., pl.DataFrame]
    arrow_schema: Any
    schema: pl.Schema

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        pa = import_module("pyarrow")
        chunks: list[pl.DataFrame] = []
        pending: list[Any] = []
        rows = 0
        for batch in batches:
            pending.append(batch)
            rows += batch.num_rows
            if rows >= _CHUNK_ROWS:
                chunks.append(pl.DataFrame(pl.from_arrow(pa.Table.from_batches(pending))))
                pending, rows = [], 0
        if pending:
            chunks.append(pl.DataFrame(pl.from_arrow(pa.Table.from_batches(pending))))
        if not chunks:
            return
        result = self.function(*chunks)
        table = result.cast(self.schema).to_arrow().cast(self.arrow_schema)
        yield from table.to_batches()


class _DaskRunner(_Runner):
    def __init__(self, data: Any, spec: EngineSpec) -> None:
        self.spec, self.data = spec, data
        present = [name for name in spec.columns if name in data.columns]
        self.source = data[present]

    def empty(self) -> pl.DataFrame:
        # The partitions' pandas dtypes, from the collection's metadata (no data read);
        # all columns, so that a missing column's message lists them.
        try:
            return _from_pandas(self.data._meta)
        except Exception:  # a column Polars cannot convert
            return _from_pandas(self.source._meta)

    def partial_table(self, template: Partial) -> pl.DataFrame:
        dask = import_module("dask")
        merge = _PartialMerger(self.spec, template.keys)
        empty = shipped(template).collect()
        parts = [dask.delayed(_FromPandas(merge))(part) for part in self.source.to_delayed()]
        if not parts:
            return empty
        while len(parts) > 1:
            # A merge tree on the workers: the driver receives one small table.
            parts = [
                dask.delayed(_Merged(template.keys))(*parts[i : i + _FAN_IN])
                for i in range(0, len(parts), _FAN_IN)
            ]
        (table,) = dask.compute(parts[0])
        return pl.DataFrame(table).cast(empty.schema)

    def counts(self, whole: bool) -> list[pl.DataFrame]:
        dask = import_module("dask")
        counter = _FromPandas(_Counter(self.spec, whole))
        parts = [dask.delayed(counter)(part) for part in self.source.to_delayed()]
        return list(dask.compute(*parts))


def _from_pandas(frame: Any) -> pl.DataFrame:
    """A pandas partition as Polars: a NaN of a NumPy float column is pandas' missing
    value, so it becomes null (ignored); Arrow-backed columns keep NaN (refused)."""
    return pl.from_pandas(frame, include_index=False)


@dataclass(frozen=True)
class _FromPandas:
    """`function` applied to a pandas partition converted to Polars (a Dask task)."""

    function: Callable[..., pl.DataFrame]

    def __call__(self, frame: Any) -> pl.DataFrame:
        return self.function(_from_pandas(frame))


@dataclass(frozen=True)
class _Merged:
    """Partial tables merged (a Dask task of the merge tree)."""

    keys: list[str]

    def __call__(self, *tables: pl.DataFrame) -> pl.DataFrame:
        return merge_partials(tables, self.keys)


def read_with(engine: Engine, source: str) -> tuple[Any, pl.Schema]:
    """A Spark (local session) or Dask DataFrame of a parquet or CSV path, and its schema.

    The command line's reader: the schema holds the columns as Polars dtypes (from the
    frame's metadata, no job; a column Polars cannot hold is left out), so that the
    command line tells a column of probability vectors as a Polars log's schema does.
    """
    frame = _read(engine, source)
    return frame, _polars_schema(frame, engine)


def _polars_schema(frame: Any, engine: Engine) -> pl.Schema:
    """The columns of a Spark or Dask DataFrame as Polars dtypes, those Polars can hold."""
    if engine == "spark":
        to_arrow_schema = import_module("pyspark.sql.pandas.types").to_arrow_schema
        struct = import_module("pyspark.sql.types").StructType

        def empty(name: str) -> pl.DataFrame:
            arrow = to_arrow_schema(struct([frame.schema[name]]))
            return pl.DataFrame(pl.from_arrow(arrow.empty_table()))
    else:

        def empty(name: str) -> pl.DataFrame:
            return _from_pandas(frame._meta[[name]])

    schema = pl.Schema()
    for name in frame.columns:
        try:
            schema.update(empty(name).schema)
        except Exception:  # a column type Polars cannot hold
            continue
    return schema


def _read(engine: Engine, source: str) -> Any:
    """A Spark (local session) or Dask DataFrame of a parquet or CSV path."""
    suffix = Path(source.rstrip("/*")).suffix.lower()
    csv = suffix in (".csv", ".tsv")
    if engine == "spark":
        reader = local_spark().read
        if csv:
            sep = "\t" if suffix == ".tsv" else ","
            return reader.csv(source, header=True, inferSchema=True, sep=sep)
        return reader.parquet(source)
    dd = import_module("dask.dataframe")
    if csv:
        return dd.read_csv(source, sep="\t" if suffix == ".tsv" else ",", dtype_backend="pyarrow")
    # Arrow-backed columns keep nulls apart from NaN, as Polars does.
    return dd.read_parquet(source, dtype_backend="pyarrow")


def local_spark(master: str = "local[*]", partitions: int = 8) -> Any:
    """A local Spark session whose Python workers import this package (UI disabled).

    The workers run this interpreter with this package's directory on their path,
    so they compute with the same code as the driver.
    """
    session = import_module("pyspark.sql").SparkSession
    root = str(Path(__file__).resolve().parent.parent)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return (
        session.builder.master(master)
        .appName("polars_calib")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.executorEnv.PYTHONPATH", path)
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(_CHUNK_ROWS))
        .getOrCreate()
    )
