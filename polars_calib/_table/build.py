"""Build the statistics table: the one aggregation of a problem and its sparse table."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import polars as pl

from polars_calib._core.binning import Binning, quantile_edges
from polars_calib._core.options import DIAGNOSTICS, check_hosmer_lemeshow_bins
from polars_calib._core.problem import Problem
from polars_calib._table.columns import ALL_KEY, DISTINCT_IDS
from polars_calib._table.replicates import (
    KEY_WORDS,
    TESTED_METRIC,
    Resample,
    Rows,
    chunks,
    drawn_columns,
    long_table,
    replicate_sums,
    with_replicate_words,
    with_row_key,
    word_columns,
)

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

_TERMS_OF: dict[str, tuple[str, ...]] = {
    "brier": ("squared_error",),
    "log_loss": ("log_loss",),
    "spiegelhalter_z": ("spiegelhalter_numerator", "spiegelhalter_variance"),
    "spiegelhalter_p": ("spiegelhalter_numerator", "spiegelhalter_variance"),
    "brier_decomposition": ("squared_p", "p_y"),
}

# Internal column names of the query (never in a result).
_P, _Y, _W, _REFUSED, _PRESENT = (
    f"__polars_calib_{n}__" for n in ("p", "y", "w", "refused", "present")
)

_PACKED = "__polars_calib_key_bin__"
_KEY = "__polars_calib_bin__"

# Integer key dtypes whose values, times the number of bins plus the bin, are exact doubles.
_PACKABLE = (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32)

_NULL_KEY = 2**33  # stands for a null key in a packed key: outside every packable range

REFUSED_BIN = -1.0  # the bin of refused rows, counted per group

IGNORED_BIN = -2.0  # the bin of ignored rows (a null input): only their group is kept


def terms_for(metrics: Sequence[str]) -> list[str]:
    """The row terms a list of metrics (or of their consistency tests) needs summed, each once."""
    bases = [TESTED_METRIC.get(m, m) for m in metrics]
    return list(dict.fromkeys(term for m in bases for term in _TERMS_OF.get(m, ())))


def check_diagnostics(metrics: Sequence[str], n_bins: int | None, vectors: bool) -> None:
    """``ValueError`` for a test or decomposition the table cannot give: Hosmer-Lemeshow
    with fewer than 3 bins (`n_bins` None: not known yet), and any of them on
    probability vectors or a table keyed by class (binary data only)."""
    diagnostics = [m for m in metrics if m in DIAGNOSTICS]
    if diagnostics and vectors:
        msg = (
            f"{', '.join(map(repr, diagnostics))}: tests and decompositions take binary "
            "probabilities, not probability vectors"
        )
        raise ValueError(msg)
    if n_bins is not None and any(m.startswith("hosmer_lemeshow") for m in diagnostics):
        check_hosmer_lemeshow_bins(n_bins)


@dataclass(frozen=True)
class Partial:
    """The mergeable aggregation of a problem, before its table is completed.

    ``table`` holds one row per (``keys``, ``bin``) met in the rows: ``bin`` Int32, -1
    for refused rows and -2 for ignored ones (which only keep their group), then
    ``count`` and the sums (``weight`` only when weighted). Tables of parts of the
    rows (partitions of another engine) merge by summing rows of the same keys and
    bin (:func:`merge_partials`); :func:`complete_statistics` makes the statistics
    table of the whole. ``keys`` are the table's keys (a constant key stands for the
    whole frame with `whole`; ``class`` for keyed reductions); ``names`` the summed
    columns of the completed table; ``edges`` the quantile grid, if any (not
    mergeable).
    """

    table: pl.LazyFrame
    keys: list[str]
    names: list[str]
    whole: bool
    weighted: bool
    edges: pl.LazyFrame | None
    given: bool = False
    """Bins given by a column (median-variance): ``edges`` holds them, no uniform grid."""


def statistics_query(
    lf: pl.LazyFrame,
    problem: Problem,
    keys: list[str],
    binning: Binning,
    terms: Sequence[str] = ("squared_error", "log_loss"),
    bin_column: str | None = None,
    resamples: Sequence[Resample] = (),
) -> pl.LazyFrame:
    """The statistics table of `problem` over `lf` grouped by `keys` (see the module).

    :func:`partial_statistics` (one aggregation), then :func:`complete_statistics`.
    """
    partial = partial_statistics(lf, problem, keys, binning, terms, bin_column, resamples)
    return complete_statistics(partial, binning)


def partial_statistics(
    lf: pl.LazyFrame,
    problem: Problem,
    keys: list[str],
    binning: Binning,
    terms: Sequence[str] = ("squared_error", "log_loss"),
    bin_column: str | None = None,
    resamples: Sequence[Resample] = (),
    *,
    observed: bool = True,
) -> Partial:
    """The one aggregation of :func:`statistics_query`, before completion (see :class:`Partial`).

    With `bin_column`, the name of a column of `lf` holding each used row's bin within its
    group (median-variance or σ-bins), the table has that group's bins, with ``lower``
    and ``upper`` the smallest and largest probability of the bin (aggregates of the
    same pass), and `binning` only says how the probabilities are read.

    `keys` are columns of `lf`. One aggregation over one pass of the data: each row's
    bin is one ``when/then`` chain (refused, else the bin when present, else
    ignored), so nothing is filtered or masked; ignored rows are dropped from the
    small result after their group is noted. Uniform bins are grouped as Float64
    values (the integer cast is a pass of its own) and cast on the result. A hash
    aggregation over one key costs about half one over two columns, so the last key
    of an integer dtype up to 32 bits and the bin are packed into
    ``key * (n_bins + 2) + bin + 2`` (exact in a Float64; a null key as 2**33; bin -1
    gathers refused rows and -2 ignored ones, which keep their group). Only
    the row terms in `terms` are summed (log-loss costs two logarithms a row).

    With `resamples`, the table gains the keys ``resampling`` and ``replicate`` (see
    :mod:`polars_calib._table.replicates`): the observed sums (both null), then each
    replicate's, aggregated a chunk of replicates at a time. With `observed` false
    (and `resamples`), the replicates' rows only: the part of a table that these
    replicates contribute, to sum with its other parts (the observed rows', other
    replicates' with :attr:`Resample.first`) by :func:`merge_partials`.
    """
    if not (observed or resamples):
        msg = "a table without its observed rows holds replicates: give `resamples`"
        raise ValueError(msg)
    problem = problem.seen_by(binning.clip, binning.float32)
    whole = not keys
    if whole:
        # One group: a constant key, dropped at the end, so that the plan has the shape
        # of a grouped one, whose branches over the small result share one read.
        lf, keys = lf.with_columns(pl.lit(True).alias(ALL_KEY)), [ALL_KEY]
    if resamples:
        lf = with_row_key(lf, resamples)
    if problem.key is not None:
        keys = [*keys, "class"]
    if problem.exploded:
        # Classwise tables always carry the row sums that make a row's mean confidence
        # and accuracy (and tell the finishers the table is classwise).
        terms = [*dict.fromkeys([*terms, "confidence", "correct"])]
    query = _Query(problem, keys, binning, list(terms), bin_column)
    names = query.names
    sums = None
    if observed and resamples and resamples[0].id is not None:
        # Rows sharing an id share their draws: count the ids in the same pass (the
        # observed rows'; a part of replicates only has none to count).
        frame, row = query.rows(lf, {}, KEY_WORDS)
        h1, h2 = (pl.col(word).cast(pl.UInt64) for word in KEY_WORDS)
        ids = (h1 * 2**32 + h2).approx_n_unique().cast(pl.Int64).alias(DISTINCT_IDS)
        sums, names = [*row.sums(), ids], [*names, DISTINCT_IDS]
    else:
        frame, row = query.rows(lf, {})
    ranges = [row.p.min().alias("lower"), row.p.max().alias("upper")] if bin_column else []
    table = query.aggregate(frame, row, [*(sums or row.sums()), *ranges])
    edges = None
    if bin_column is not None:
        table, edges = _given_ranges(table, keys)
    elif binning.strategy == "quantile":
        used = row.present & ~row.refused
        edges = _quantile_grid(frame, row.p, used, keys, binning)
    weighted = row.w is not None
    if resamples:
        tables = []
        if observed:
            tables.append(
                table.with_columns(
                    pl.lit(None, pl.String).alias("resampling"),
                    pl.lit(None, pl.Int32).alias("replicate"),
                )
            )
        tables += query.replicate_tables(lf, resamples, weighted)
        table = pl.concat(tables, how="diagonal_relaxed")
        base = [key for key in keys if key != "class"]
        keys = [*base, "resampling", "replicate", *(["class"] if "class" in keys else [])]
    return Partial(table, keys, names, whole, weighted, edges, bin_column is not None)


@dataclass(frozen=True)
class _Query:
    """What one aggregation of :func:`partial_statistics` reads: the problem, its keys
    (``class`` last for keyed reductions), the binning, the summed terms, and the
    column of given bins (if any)."""

    problem: Problem
    keys: list[str]
    binning: Binning
    terms: list[str]
    bin_column: str | None

    @property
    def names(self) -> list[str]:
        """The summed columns of the table."""
        return ["count", "weight", "sum_p", "sum_y", *(f"sum_{name}" for name in self.terms)]

    def rows(
        self, source: pl.LazyFrame, extra: dict[str, pl.Expr], carried: Sequence[str] = ()
    ) -> tuple[pl.LazyFrame, Rows]:
        """The rows of the problem with `extra` columns (lists exploded along), and the
        `carried` columns of `source` kept."""
        problem = self.problem
        p, y, w = problem.prob, problem.label, problem.weight
        refused, present = problem.refused, problem.present
        term_exprs = {name: problem.terms[name] for name in self.terms}
        if problem.key is None or not (problem.exploded or self.binning.strategy == "quantile"):
            frame = source
            if problem.key is not None:
                frame = frame.with_columns(problem.key.cast(pl.Int32).alias("class"))
            if extra:
                frame = frame.with_columns(e.alias(n) for n, e in extra.items())
            return frame, Rows(p, y, w, refused, present, term_exprs, problem.ok)
        # Columns of their own: exploded, or needed by the quantile window.
        columns = {
            _P: p,
            _Y: y,
            "class": problem.key,
            _REFUSED: refused,
            _PRESENT: present,
            **{f"__{name}": term for name, term in term_exprs.items()},
            **extra,
        }
        if w is not None:
            columns[_W] = w
        base = [name for name in self.keys if name != "class"]
        kept = [*carried, *([self.bin_column] if self.bin_column is not None else [])]
        frame = source.select(*base, *kept, *(e.alias(n) for n, e in columns.items()))
        if problem.exploded:
            # An empty vector keeps its row (nulls, refused) instead of vanishing.
            frame = frame.explode(
                [_P, _Y, "class", *(f"__{n}" for n in term_exprs), *extra], empty_as_null=True
            )
        frame = frame.with_columns(pl.col("class").cast(pl.Int32))
        terms = {name: pl.col(f"__{name}") for name in term_exprs}
        weight = None if w is None else pl.col(_W)
        row = Rows(pl.col(_P), pl.col(_Y), weight, pl.col(_REFUSED), pl.col(_PRESENT), terms)
        return frame, row

    def aggregate(self, frame: pl.LazyFrame, row: Rows, sums: list[pl.Expr]) -> pl.LazyFrame:
        """Sum `sums` per (keys, bin): refused rows in bin -1, ignored ones in bin -2."""
        keys, binning = self.keys, self.binning
        if self.bin_column is not None or binning.strategy == "quantile":
            if self.bin_column is not None:
                bins = pl.col(self.bin_column)
            else:
                bins = binning.index(pl.when(row.present & ~row.refused).then(row.p))
                bins = bins.over(keys) if keys else bins
            bin_key = (
                pl.when(row.verdict)
                .then(bins)
                .when(row.verdict.is_null())
                .then(pl.lit(-2, pl.Int32))
                .otherwise(pl.lit(-1, pl.Int32))
            )
            return frame.group_by(*keys, bin_key.alias("bin")).agg(sums)
        bin_value = (
            pl.when(row.verdict)
            .then(binning.value(row.p))
            .when(row.verdict.is_null())
            .then(IGNORED_BIN)
            .otherwise(REFUSED_BIN)
        )
        return _uniform_table(frame, keys, bin_value, sums, binning)

    def replicate_tables(
        self, lf: pl.LazyFrame, resamples: Sequence[Resample], weighted: bool
    ) -> list[pl.LazyFrame]:
        """The replicates' rows of the table: one aggregation per chunk of replicates."""
        tables = []
        for spec in resamples:
            for replicates in chunks(spec.replicates):
                source = with_replicate_words(lf, spec, replicates)
                extra = drawn_columns(spec, replicates, self.problem, self.terms)
                carried = list(word_columns(spec, replicates)) if not extra else []
                frame, row = self.rows(source, extra, carried)
                frame, sums, varying = replicate_sums(
                    spec, replicates, frame, row, self.problem.binary
                )
                wide = self.aggregate(frame, row, sums)
                tables.append(
                    long_table(wide, spec, replicates, self.keys, self.names, varying, weighted)
                )
        return tables


def complete_statistics(partial: Partial, binning: Binning) -> pl.LazyFrame:
    """The statistics table from a (merged) partial aggregation: every bin of every group."""
    table, keys = partial.table, partial.keys
    if DISTINCT_IDS in partial.names:
        # Counted on the observed rows only (a merge sums a replicate's nulls to 0).
        observed = pl.col("replicate").is_null()
        table = table.with_columns(pl.when(observed).then(pl.col(DISTINCT_IDS)).alias(DISTINCT_IDS))
    if not partial.weighted:
        table = table.with_columns(pl.col("count").cast(pl.Float64).alias("weight"))
    grid = None if partial.given else binning.grid()
    # The uniform grid's size, which display completes from; none for per-group bins.
    uniform = not partial.given and binning.strategy == "uniform" and binning.inner is None
    result = _completed(
        table,
        grid,
        partial.edges,
        keys,
        partial.names,
        partial.whole,
        binning.closed,
        binning.n_bins if uniform else None,
    )
    return result.drop(ALL_KEY) if partial.whole else result


def _uniform_table(
    lf: pl.LazyFrame, keys: list[str], bin_value: pl.Expr, sums: list[pl.Expr], binning: Binning
) -> pl.LazyFrame:
    """Aggregate by keys and uniform bin (packed with one key's integer code where possible).

    The bin key is a column of its own (``with_columns``) before the ``group_by``:
    there Polars evaluates a subexpression used several times once (the rounded
    product ``p * B`` of the bin rule, the refused rule's parts), where a ``group_by``
    key expression evaluates each use (measured: the exact key cost 1.5x the plain
    ``ceil(p * B)`` inline, 1.1x as a column).
    """
    if keys == [ALL_KEY]:
        # One group: the bin alone is the key (a hash aggregation over one column of
        # few values costs about half one over two); the constant key comes back after.
        table = lf.with_columns(bin_value.alias(_KEY)).group_by(_KEY).agg(sums)
        return table.select(
            pl.lit(True).alias(ALL_KEY), pl.col(_KEY).cast(pl.Int32).alias("bin"), pl.exclude(_KEY)
        )
    schema = lf.collect_schema()
    coded = _Coded.of(keys, schema) if binning.n_bins < 2**19 else None
    if coded is None:
        table = lf.with_columns(bin_value.alias(_KEY)).group_by(*keys, _KEY).agg(sums)
        return table.rename({_KEY: "bin"}).with_columns(pl.col("bin").cast(pl.Int32))
    stride = binning.n_bins + 2
    key = coded.code.cast(pl.Float64).fill_null(float(_NULL_KEY)) * stride + bin_value + 2.0
    others = [k for k in keys if k != coded.name]
    table = lf.with_columns(key.alias(_PACKED)).group_by(*others, _PACKED).agg(sums)
    key_bin = pl.col(_PACKED).cast(pl.Int64)
    code = key_bin // stride
    return table.with_columns(
        coded.decoded(pl.when(code != _NULL_KEY).then(code)).alias(coded.name),
        (key_bin - code * stride - 2).cast(pl.Int32).alias("bin"),
    ).drop(_PACKED)


@dataclass(frozen=True)
class _Coded:
    """The group key packed with the bin, as an integer code below ``2**32``, and back.

    A hash aggregation over one numeric column costs a fraction of one over a key and
    the bin (measured on 10M rows, 10,000 String groups: 0.57 s against 1.38 s), so
    the last key whose values have such a code is packed with the bin
    (``code * (n_bins + 2) + bin + 2``, exact in a Float64; a null key as ``2**33``):
    an integer of at most 32 bits is its own code; a Categorical or Enum its physical
    code; a String the code of a Categorical of the query's own categories (nothing
    enters the global string cache).
    """

    name: str
    dtype: pl.DataType
    physical: pl.DataType
    categories: pl.DataType | None

    @staticmethod
    def of(keys: Sequence[str], schema: pl.Schema) -> _Coded | None:
        """The key to pack (the last with a code), or None."""
        for name in reversed(keys):
            dtype = schema[name]
            if dtype in _PACKABLE:
                return _Coded(name, dtype, dtype, None)
            if isinstance(dtype, (pl.Categorical, pl.Enum)):
                empty = pl.LazyFrame(schema={name: dtype})
                physical = empty.select(pl.col(name).to_physical()).collect_schema()[name]
                return _Coded(name, dtype, physical, None)
            if dtype == pl.String:
                return _Coded(name, dtype, pl.UInt32(), pl.Categorical(pl.Categories.random()))
        return None

    @property
    def code(self) -> pl.Expr:
        """Each row's code."""
        if self.categories is not None:
            return pl.col(self.name).cast(self.categories).to_physical()
        return pl.col(self.name).to_physical()

    def decoded(self, code: pl.Expr) -> pl.Expr:
        """The key's values from their codes."""
        if self.categories is None and not isinstance(self.dtype, (pl.Categorical, pl.Enum)):
            return code.cast(self.dtype)
        # `cat.to` (codes to categories) is the one way back from a code, and Polars
        # marks it unstable: a user who turned those warnings on must not see ours. The
        # packed-key tests decode String, Categorical and Enum keys, so a change in
        # Polars fails the suite, not a user's numbers.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pl.exceptions.UnstableWarning)
            if self.categories is not None:
                return code.cast(self.physical).cat.to(self.categories).cast(pl.String)
            return code.cast(self.physical).cat.to(self.dtype)


def _quantile_grid(
    lf: pl.LazyFrame, p: pl.Expr, used: pl.Expr, keys: list[str], binning: Binning
) -> pl.LazyFrame:
    """Per group, each quantile bin with its edges: the keys, ``bin``, ``lower``, ``upper``."""
    n_bins = binning.n_bins
    edges = pl.concat_list(quantile_edges(pl.when(used).then(p), n_bins)).alias("edges")
    if keys == [ALL_KEY]:
        # The one group has its grid (null edges) even in empty data.
        per_group = lf.select(edges).with_columns(pl.lit(True).alias(ALL_KEY))
    else:
        per_group = lf.group_by(keys).agg(edges) if keys else lf.select(edges)
    return per_group.select(
        *keys,
        pl.int_ranges(0, n_bins, dtype=pl.Int32).alias("bin"),
        pl.col("edges").list.head(n_bins).alias("lower"),
        pl.col("edges").list.tail(n_bins).alias("upper"),
    ).explode("bin", "lower", "upper")


def _given_ranges(table: pl.LazyFrame, keys: list[str]) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Split an aggregation of given bins into its sums and each bin's ``lower`` and
    ``upper`` (its smallest and largest probability), both from the one aggregation.

    The ranges are two more aggregates of the table's own pass, not a second branch of
    the rows: a join of two branches of one scan makes Polars' streaming engine hold
    the rows of one branch while the other runs (``docs/performance.md``, "Memory").
    """
    table = table.cache()  # split in two below: one evaluation of the aggregation
    ranges = table.filter(pl.col("bin") >= 0).select(*keys, "bin", "lower", "upper")
    return table.drop("lower", "upper"), ranges


def _completed(
    table: pl.LazyFrame,
    grid: pl.LazyFrame | None,
    edges: pl.LazyFrame | None,
    keys: list[str],
    names: list[str],
    whole: bool,
    closed: str,
    n_bins: int | None,
) -> pl.LazyFrame:
    """The sparse statistics table of an aggregation: a row per non-empty bin, a row of
    refused rows, and a row for a group that has neither; sorted.

    Only bins that hold rows are rows (a replicate's bin whose draws gave it no row
    is none), with their edges from `grid` (uniform bins) or `edges` (each group's
    quantile or given bins); the closure (`closed`) and the uniform grid's `n_bins`
    (null for per-group bins) follow the edges, so that tables of other grids never
    merge. Each group holding refused rows has one row with a null bin counting them;
    a group of the observed rows with no used and no refused row (only null inputs)
    has one such row counting 0, so that no group vanishes. With `whole` (no group
    keys), the one group exists even in empty data, as an expression in ``select``
    gives one row. Empty bins are added only for display (:func:`reliability_rows`).

    A table with replicates is cached (``cache()``): its finisher reads it in two
    branches, which share one evaluation, so the data are read once.
    """
    sums = [name for name in names if name != "count"]
    replicated = "replicate" in keys
    if replicated:
        # Finished in two branches (the observed rows, the replicates): one evaluation
        # of the aggregation. Not otherwise: Polars does not push a filter of the rows
        # through a cache into a scan (a filtered parquet scan would read every row group).
        table = table.cache()
    base = [k for k in keys if k not in ("class", "resampling", "replicate")]
    bin_ = pl.col("bin")
    observed = pl.col("replicate").is_null() if replicated else pl.lit(True)
    if whole:
        # The one group, even in empty data: an ignored row of its own.
        table = pl.concat(
            [
                table,
                pl.LazyFrame({ALL_KEY: [True], "bin": [-2]}, schema_overrides={"bin": pl.Int32}),
            ],
            how="diagonal_relaxed",
        )
    # One branch over the small table (no joins with itself: each branch would be an
    # aggregation of its own, and read the data again). A group's ignored row stays,
    # as its empty row, only when the group has no other observed row.
    seen = ((bin_ >= -1) & observed).any().over(base) if base else ((bin_ >= -1) & observed).any()
    lone = (bin_ == -2) & observed & ~seen
    kept = table.filter(((bin_ >= 0) & (pl.col("count") > 0)) | (bin_ == -1) | lone)
    if "class" in keys:
        # An ignored row has no class: a group's one empty row has a null class.
        kept = kept.with_columns(pl.when(bin_ != -2).then(pl.col("class")).alias("class"))
    if whole or "class" in keys:
        # One empty row a group (the data's and the whole frame's own; every class's).
        kept = kept.unique(subset=[*keys, "bin"], keep="any")
    if edges is None:
        assert grid is not None
        kept = kept.join(grid, on="bin", how="left")
    else:
        on = [k for k in keys if k in edges.collect_schema().names()]
        edges = edges.cache()  # joined here, and by the quantile grid below
        kept = kept.join(edges, on=[*on, "bin"], how="left", nulls_equal=True)
        if grid is not None:
            kept = _with_quantile_grid(kept, edges, on, keys, sums)
    is_lone = bin_ == -2
    binned = bin_ >= 0
    return (
        kept.with_columns(
            pl.when(is_lone).then(pl.lit(0, pl.Int64)).otherwise(pl.col("count")).alias("count"),
            *(pl.when(binned).then(pl.col(c)).alias(c) for c in ("lower", "upper", *sums)),
            pl.when(binned).then(bin_).alias("bin"),
            pl.lit(closed, pl.String).alias("closed"),
            pl.lit(n_bins, pl.Int32).alias("n_bins"),
        )
        .select(*keys, "bin", "lower", "upper", "closed", "n_bins", *names)
        .sort(*keys, "bin", nulls_last=True)
    )


def _with_quantile_grid(
    kept: pl.LazyFrame, edges: pl.LazyFrame, on: list[str], keys: list[str], sums: list[str]
) -> pl.LazyFrame:
    """`kept` with the empty bins of each group's quantile grid (observed rows only).

    Quantile edges are the group's data: they are part of what the table describes,
    so each group lists its whole grid (groups x bins rows); replicates stay sparse.
    """
    observed = pl.col("replicate").is_null() if "replicate" in keys else pl.lit(True)
    kept = kept.cache()  # read twice below: one evaluation
    have = kept.filter((pl.col("bin") >= 0) & observed).select(*on, "bin")
    empty = edges.join(have, on=[*on, "bin"], how="anti", nulls_equal=True).with_columns(
        *(
            pl.lit(None, pl.Int32 if k in ("class", "replicate") else pl.String).alias(k)
            for k in keys
            if k not in on
        ),
        pl.lit(0, pl.Int64).alias("count"),
        *(pl.lit(0.0, pl.Float64).alias(name) for name in sums),
    )
    return pl.concat([kept, empty.select(kept.collect_schema().names())], how="vertical_relaxed")
