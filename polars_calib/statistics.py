"""The statistics table: sums per (group[, class], bin), and the finishers that read it.

Every frame feature is one aggregation of a :class:`~polars_calib._problem.Problem`
into this table, then a finisher over the small result:

``keys..., [class], bin, lower, upper, closed, count, weight, sum_p, sum_y[, sum_<term>...]``

* one row per group (and class, for the top-label and classwise reductions) and
  bin, **every** bin of the grid included (empty ones with count 0), so the table
  describes its own bins (``lower``, ``upper``: the exact edges; ``closed``:
  ``"right"`` or ``"left"``, the side of a bin that holds its edge) and a group never
  vanishes, even when all its rows are null;
* one more row per group holding refused rows: ``bin``, ``lower``, ``upper`` and the
  sums null, ``count`` the number of refused rows;
* ``count`` (Int64) rows; ``weight`` their total weight (the count when unweighted);
  ``sum_p``, ``sum_y`` the weighted sums of the problem's ``p`` and ``y``; and
  ``sum_squared_error``, ``sum_log_loss`` (and for the classwise reduction
  ``sum_confidence``, ``sum_correct``; for the tests and decompositions
  ``sum_spiegelhalter_numerator``, ``sum_spiegelhalter_variance``, ``sum_squared_p``,
  ``sum_p_y``): the weighted sums of the problem's row terms, each only when a
  requested metric needs it (:func:`terms_for`).

The canonical table (``reduction="canonical"``: probability vectors, no reduction)
has the same layout with the bin replaced by the **cell** of the simplex grid, an exact
packed integer (:meth:`~polars_calib.binning.Binning.cell_words`), and one pair of sums
per class: ``keys..., cell[, cell_1...], n_bins, closed, count, weight, sum_p_0..,
sum_y_0..[, sum_<term>...]``; only the non-empty cells are rows (the grid has
``n_bins**K`` cells), and one null-cell row per group holds its refused rows
(:func:`canonical_statistics`, finished by :func:`finish_cells`).

Uniform-bin tables merge by summing rows of the same group and bin (partitions, days,
processes, engines); quantile bins depend on all of a group's rows, so tables of
different partitions hold the same bin with different edges, which the finishers
refuse, as they refuse the same bin of two closures (a probability on an edge is in
different bins). Later statistics (test terms, bootstrap replicates, fits) add columns or keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast, overload

import polars as pl

from polars_calib import _finish
from polars_calib._exprs import GroupKeys, IntoExpr, Keys
from polars_calib._finish import BinSums, calibration_error
from polars_calib._options import (
    DIAGNOSTICS,
    METRICS,
    REDUCTIONS,
    SUM_TOLERANCE,
    TABLE_REDUCTIONS,
    TOP_LABEL_AVERAGES,
    Closed,
    Compat,
    ConsistencyMetric,
    Diagnostic,
    Metric,
    Norm,
    Reduction,
    Resampling,
    Score,
    Strategy,
    TopLabelAverage,
    BinAverage,
    Distance,
    TableReduction,
    check_choice,
    check_confidence,
    check_hosmer_lemeshow_bins,
    check_metrics,
    check_sum_tol,
)
from polars_calib._problem import Check, Problem, binary_problem, vector_problem
from polars_calib.binning import Binning, quantile_edges
from polars_calib.canonical import check_distance, distance_term
from polars_calib.resampling import (
    RESAMPLING_KEYS,
    TESTED_METRIC,
    Resample,
    Rows,
    chunks,
    drawn_columns,
    finish_resampled,
    long_table,
    replicate_keys,
    replicate_sums,
    resamples_for,
    with_replicate_words,
    with_row_key,
    word_columns,
)
from polars_calib.validation import (
    CalibrationDataError,
    check_schema,
    is_vector,
    problem_counts,
    raise_for_problems,
)

__all__ = [
    "RELIABILITY",
    "SUMS",
    "Partial",
    "Prepared",
    "bin_statistics",
    "canonical_classes",
    "canonical_plan",
    "canonical_statistics",
    "cell_columns",
    "check_canonical",
    "check_diagnostics",
    "check_statistics",
    "collect_checked",
    "complete_statistics",
    "diagnostic_parts",
    "diagnostic_value",
    "finish_cells",
    "finish_metrics",
    "merge_cells",
    "merge_partials",
    "merge_statistics",
    "metrics_from_statistics",
    "partial_statistics",
    "prepare",
    "reliability_from_statistics",
    "reliability_rows",
    "same_kind",
    "statistics_query",
    "summary_names",
    "top_label_choice",
    "validate_statistics",
]

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

SUMS = ("count", "weight", "sum_p", "sum_y")
"""The summable columns every statistics table has, after the keys and the bin."""



RELIABILITY = (
    "bin", "lower", "upper", "count", "mean_predicted", "observed", "gap",
    "observed_lower", "observed_upper",
)  # fmt: skip

_RESERVED = frozenset(
    (*SUMS, *METRICS, *DIAGNOSTICS, *RELIABILITY, "class", "refused", "mean_confidence",
     "accuracy")
)
_NORM_OF: dict[str, Norm] = {"ece": "l1", "rmsce": "l2", "mce": "max"}
_TERMS_OF: dict[str, tuple[str, ...]] = {
    "brier": ("squared_error",),
    "log_loss": ("log_loss",),
    "spiegelhalter_z": ("spiegelhalter_numerator", "spiegelhalter_variance"),
    "spiegelhalter_p": ("spiegelhalter_numerator", "spiegelhalter_variance"),
    "brier_decomposition": ("squared_p", "p_y"),
}

# Internal column names of the query (never in a result).
_P, _Y, _W, _REFUSED, _PRESENT = (f"__polars_calib_{n}__" for n in ("p", "y", "w", "refused", "present"))
_PACKED = "__polars_calib_key_bin__"
# A constant key that stands for "the whole frame" when there are no group keys, so
# that an empty input gives an empty result (Polars' select would give one row).
_ALL = "__polars_calib_all__"
# Integer key dtypes whose values, times the number of bins plus the bin, are exact doubles.
_PACKABLE = (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32)
_NULL_KEY = 2**33  # stands for a null key in a packed key: outside every packable range
_REFUSED_BIN = -1.0  # the bin of refused rows, counted per group
_IGNORED_BIN = -2.0  # the bin of ignored rows (a null input): only their group is kept
# Per-group columns of the tests whose p-values are computed from them (the special
# functions read their argument many times; a column is a cheap reference).
_Z, _HL, _HL_DF = (f"__polars_calib_{n}__" for n in ("z", "hl", "hl_df"))


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
) -> Partial:
    """The one aggregation of :func:`statistics_query`, before completion (see :class:`Partial`).

    With `bin_column`, the name of a column of `lf` holding each used row's bin within its
    group (median-variance bins), the table has that group's bins (a group with no
    used row: bin 0), with ``lower`` and ``upper`` the smallest and largest
    probability of the bin, and `binning` only says how the probabilities are read.

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
    :mod:`polars_calib.resampling`): the observed sums (both null), then each
    replicate's, aggregated a chunk of replicates at a time.
    """
    problem = problem.seen_by(binning.clip, binning.float32)
    whole = not keys
    if whole:
        # One group: a constant key, dropped at the end, so that the plan has the shape
        # of a grouped one, whose branches over the small result share one read.
        lf, keys = lf.with_columns(pl.lit(True).alias(_ALL)), [_ALL]
    if bin_column is not None:
        # Read by the table and the grid: the bins (a numpy step per group) run once.
        lf = lf.cache()
    if resamples:
        lf = with_row_key(lf, resamples)
    if problem.key is not None:
        keys = [*keys, "class"]
    if problem.exploded:
        # Classwise tables always carry the row sums that make a row's mean confidence
        # and accuracy (and tell the finishers the table is classwise).
        terms = [*dict.fromkeys([*terms, "confidence", "correct"])]
    names = ["count", "weight", "sum_p", "sum_y", *(f"sum_{name}" for name in terms)]

    def rows(
        source: pl.LazyFrame, extra: dict[str, pl.Expr], carried: Sequence[str] = ()
    ) -> tuple[pl.LazyFrame, Rows]:
        """The rows of the problem with `extra` columns (lists exploded along), and the
        `carried` columns of `source` kept."""
        p, y, w = problem.prob, problem.label, problem.weight
        refused, present = problem.refused, problem.present
        term_exprs = {name: problem.terms[name] for name in terms}
        frame = source
        if problem.key is not None and (problem.exploded or binning.strategy == "quantile"):
            # Columns of their own: exploded, or needed by the quantile window.
            columns = {_P: p, _Y: y, "class": problem.key, _REFUSED: refused, _PRESENT: present,  # noqa: E501
                       **{f"__{name}": term for name, term in term_exprs.items()}, **extra}  # fmt: skip
            if w is not None:
                columns[_W] = w
            base = [name for name in keys if name != "class"]
            kept = [*carried, *([bin_column] if bin_column is not None else [])]
            frame = frame.select(*base, *kept, *(e.alias(n) for n, e in columns.items()))
            if problem.exploded:
                lists = [_P, _Y, "class", *(f"__{name}" for name in term_exprs), *extra]
                frame = frame.explode(lists)
            frame = frame.with_columns(pl.col("class").cast(pl.Int32))
            p, y, refused, present = pl.col(_P), pl.col(_Y), pl.col(_REFUSED), pl.col(_PRESENT)
            w = None if w is None else pl.col(_W)
            term_exprs = {name: pl.col(f"__{name}") for name in term_exprs}
        else:
            if problem.key is not None:
                frame = frame.with_columns(problem.key.cast(pl.Int32).alias("class"))
            if extra:
                frame = frame.with_columns(e.alias(n) for n, e in extra.items())
        return frame, Rows(p, y, w, refused, present, term_exprs)

    def aggregate(frame: pl.LazyFrame, row: Rows, sums: list[pl.Expr]) -> pl.LazyFrame:
        if bin_column is not None:
            given = pl.col(bin_column)
            bin_key = pl.when(row.refused).then(pl.lit(-1, pl.Int32)).otherwise(given)
            return frame.group_by(*keys, bin_key.alias("bin")).agg(sums)
        if binning.strategy == "quantile":
            used = row.present & ~row.refused
            bins = binning.index(pl.when(used).then(row.p))
            bins = bins.over(keys) if keys else bins
            bin_key = pl.when(row.refused).then(pl.lit(-1, pl.Int32)).otherwise(bins)
            return frame.group_by(*keys, bin_key.alias("bin")).agg(sums)
        if keys == [_ALL] and binning.keyed:
            return _one_group_table(frame, row, sums, binning)
        bin_value = (
            pl.when(row.refused).then(_REFUSED_BIN).when(row.present).then(binning.value(row.p))
            .otherwise(_IGNORED_BIN)
        )  # fmt: skip
        return _uniform_table(frame, keys, bin_value, sums, binning)

    frame, row = rows(lf, {})
    table = aggregate(frame, row, row.sums())
    edges = None
    if bin_column is not None:
        used = row.present & ~row.refused
        edges = _given_grid(frame, row.p, used, keys, pl.col(bin_column))
    elif binning.strategy == "quantile":
        used = row.present & ~row.refused
        edges = _quantile_grid(frame, row.p, used, keys, binning)
    weighted = row.w is not None
    if resamples:
        tables = [table.with_columns(
            pl.lit(None, pl.String).alias("resampling"), pl.lit(None, pl.Int32).alias("replicate")
        )]  # fmt: skip
        for spec in resamples:
            for replicates in chunks(spec.n_resamples):
                source = with_replicate_words(lf, spec, replicates)
                extra = drawn_columns(spec, replicates, problem, terms)
                carried = list(word_columns(spec, replicates)) if not extra else []
                frame, row = rows(source, extra, carried)
                frame, sums, varying = replicate_sums(spec, replicates, frame, row, problem.binary)
                wide = aggregate(frame, row, sums)
                tables.append(long_table(wide, spec, replicates, keys, names, varying, weighted))
        table = pl.concat(tables, how="diagonal_relaxed")
        base = [key for key in keys if key != "class"]
        keys = [*base, "resampling", "replicate", *(["class"] if "class" in keys else [])]
    return Partial(table, keys, names, whole, weighted, edges, bin_column is not None)


def complete_statistics(partial: Partial, binning: Binning) -> pl.LazyFrame:
    """The statistics table from a (merged) partial aggregation: every bin of every group."""
    table, keys = partial.table, partial.keys
    if not partial.weighted:
        table = table.with_columns(pl.col("count").cast(pl.Float64).alias("weight"))
    grid = None if partial.given else binning.grid()
    result = _completed(
        table, grid, partial.edges, keys, partial.names, partial.whole, binning.closed
    )
    return result.drop(_ALL) if partial.whole else result


def merge_partials(tables: Sequence[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
    """Sum partial aggregations (:class:`Partial` tables) of parts of the rows."""
    table = pl.concat(tables, how="vertical_relaxed")
    sums = [name for name in table.columns if name not in (*keys, "bin")]
    return table.group_by(*keys, "bin").agg(pl.col(sums).sum()).select(table.columns)


def _one_group_table(
    lf: pl.LazyFrame, row: Rows, sums: list[pl.Expr], binning: Binning
) -> pl.LazyFrame:
    """One group's uniform table, grouped by :meth:`Binning.coarse_key` (fewer operations
    a row than the bin itself), whose few groups are then read as bins and summed again.

    Refused and ignored rows take the keys ``B + 2`` and ``B + 3``, which no probability
    in [0, 1] has (coarse keys lie in ``[-1, B]``).
    """
    refused, ignored = binning.n_bins + 2.0, binning.n_bins + 3.0
    key = (
        pl.when(row.refused).then(refused).when(row.present).then(binning.coarse_key(row.p))
        .otherwise(ignored)
    )  # fmt: skip
    coarse = pl.col(_PACKED)
    bin_value = (
        pl.when(coarse == refused).then(_REFUSED_BIN).when(coarse == ignored).then(_IGNORED_BIN)
        .otherwise(binning.key_bin(coarse))
    )  # fmt: skip
    table = (
        lf.group_by(key.alias(_PACKED)).agg(sums)
        .group_by(bin_value.cast(pl.Int32).alias("bin")).agg(pl.exclude(_PACKED).sum())
    )  # fmt: skip
    return table.with_columns(pl.lit(True).alias(_ALL))


def _uniform_table(
    lf: pl.LazyFrame, keys: list[str], bin_value: pl.Expr, sums: list[pl.Expr], binning: Binning
) -> pl.LazyFrame:
    """Aggregate by keys and uniform bin (packed with an integer key where possible)."""
    if keys == [_ALL]:
        # One group: the bin alone is the key (a hash aggregation over one column of
        # few values costs about half one over two); the constant key comes back after.
        table = lf.group_by(bin_value.alias("bin")).agg(sums)
        return table.with_columns(pl.lit(True).alias(_ALL), pl.col("bin").cast(pl.Int32))
    schema = lf.collect_schema()
    packable = [key for key in keys if schema[key] in _PACKABLE] if binning.n_bins < 2**19 else []
    if not packable:
        table = lf.group_by(*keys, bin_value.alias("bin")).agg(sums)
        return table.with_columns(pl.col("bin").cast(pl.Int32))
    packed, stride = packable[-1], binning.n_bins + 2
    key = pl.col(packed).cast(pl.Float64).fill_null(float(_NULL_KEY)) * stride + bin_value + 2.0
    others = [k for k in keys if k != packed]
    table = lf.group_by(*others, key.alias(_PACKED)).agg(sums)
    key_bin = pl.col(_PACKED).cast(pl.Int64)
    code = key_bin // stride
    return table.with_columns(
        pl.when(code != _NULL_KEY).then(code).cast(schema[packed]).alias(packed),
        (key_bin - code * stride - 2).cast(pl.Int32).alias("bin"),
    ).drop(_PACKED)


# --------------------------------------------------------------------------
# The canonical reduction: cells of the simplex grid
# --------------------------------------------------------------------------

CELL = "cell"
"""The first (often the only) cell word of a canonical table; its presence marks one."""

_CANONICAL_METRICS = ("ece", "mce", "rmsce", "brier", "log_loss")


def cell_names(n_words: int) -> list[str]:
    """The cell word columns: ``cell``, then ``cell_1``, ``cell_2``, ... for wide vectors."""
    return [CELL, *(f"{CELL}_{j}" for j in range(1, n_words))]


def cell_columns(names: Sequence[str]) -> list[str]:
    """The cell word columns of a canonical table's columns `names`, in order."""
    words = [name for name in names if name == CELL or name.startswith(f"{CELL}_")]
    return sorted(words, key=lambda name: 0 if name == CELL else int(name.rsplit("_", 1)[1]))


def class_columns(names: Sequence[str], prefix: str) -> list[str]:
    """The per-class sums ``<prefix>_0, <prefix>_1, ...`` of a canonical table, in class order."""
    found = [n for n in names if n.startswith(f"{prefix}_") and n[len(prefix) + 1 :].isdigit()]
    return sorted(found, key=lambda name: int(name[len(prefix) + 1 :]))


def canonical_classes(prepared: Prepared, prob: str) -> int:
    """K of a canonical table, from the schema: the vectors must be an ``Array`` column."""
    dtype = prepared.lf.collect_schema()[prob]
    if not isinstance(dtype, pl.Array):
        msg = (
            f"reduction='canonical' takes probability vectors as an Array column, whose "
            f"length K (the table's class columns) is in the schema; {prob!r} is {dtype}: "
            f"cast it with `pl.col({prob!r}).list.to_array(K)`"
        )
        raise CalibrationDataError(msg)
    clash = [key for key in prepared.keys if key in ("n_bins", *cell_names(1))]
    clash += [key for key in prepared.keys if key.startswith((f"{CELL}_", "sum_"))]
    if clash:
        msg = f"`by` cannot hold {clash[0]!r}: a column of the canonical statistics table"
        raise ValueError(msg)
    return int(dtype.size)


def check_canonical_metrics(metrics: Sequence[str]) -> None:
    """``ValueError`` for a metric a canonical table cannot finish."""
    other = [m for m in metrics if m not in _CANONICAL_METRICS]
    if other:
        msg = (
            f"reduction='canonical' finishes {', '.join(map(repr, _CANONICAL_METRICS))}; "
            f"got {', '.join(map(repr, other))} (tests, decompositions and resampling take "
            "binary problems)"
        )
        raise ValueError(msg)


def check_canonical(
    metrics: Sequence[str], binning: Binning | None, compat: Compat | None
) -> None:
    """``ValueError`` for what a canonical table cannot give (see :func:`bin_statistics`)."""
    check_canonical_metrics(metrics)
    if binning is None or binning.strategy != "uniform" or compat is not None:
        msg = (
            "reduction='canonical' bins every component on the uniform grid (mergeable "
            "cells): strategy must be 'uniform' and compat None; for median-variance bins "
            "use `median_variance_bins` and `canonical_ece(..., bins=...)`"
        )
        raise ValueError(msg)


def canonical_statistics(
    lf: pl.LazyFrame,
    problem: Problem,
    keys: list[str],
    binning: Binning,
    n_classes: int,
    terms: Sequence[str] = (),
) -> pl.LazyFrame:
    """The canonical statistics table of `problem` (``vector_problem(..., "canonical")``).

    One aggregation over one pass of the data, grouped by the keys and the cell words
    (:meth:`~polars_calib.binning.Binning.cell_words`; the first word is -1 for
    refused rows and -2 for ignored ones, which only keep their group), then a few
    steps over the small result: the words cast to Int64, refused rows' cell and sums
    null, a group with neither used nor refused rows kept as one null-cell row of
    count 0. The columns: the keys, the cell words, ``n_bins`` (Int32) and ``closed``
    (String: the grid's, so that tables of other grids or closures do not merge
    silently), ``count`` (Int64),
    ``weight``, ``sum_p_0 .. sum_p_{K-1}`` (weighted sums of each component),
    ``sum_y_0 .. sum_y_{K-1}`` (weighted counts of each true class), then the row
    terms in `terms`; sorted by keys and cell.
    """
    problem = problem.seen_by(binning.clip, binning.float32)
    vectors, label, weight = problem.prob, problem.label, problem.weight
    components = [vectors.list.get(k, null_on_oob=True) for k in range(n_classes)]
    words = binning.cell_words(components)
    names = cell_names(len(words))
    first = (
        pl.when(problem.refused).then(_REFUSED_BIN).when(problem.present).then(words[0])
        .otherwise(_IGNORED_BIN)
    )  # fmt: skip
    rest = [pl.when(problem.refused).then(None).when(problem.present).then(w) for w in words[1:]]
    sums = [pl.len().alias("count")]
    if weight is not None:
        sums.append(weight.sum().alias("weight"))
    sums += [problem.weighted(p).sum().alias(f"sum_p_{k}") for k, p in enumerate(components)]
    for k in range(n_classes):
        hit = label == float(k)
        outcome = hit.sum() if weight is None else pl.when(hit).then(weight).otherwise(0.0).sum()
        sums.append(outcome.alias(f"sum_y_{k}"))
    sums += [problem.weighted(problem.terms[name]).sum().alias(f"sum_{name}") for name in terms]
    cells = [e.alias(n) for e, n in zip([first, *rest], names)]
    table = lf.group_by(*keys, *cells).agg(sums)
    summed = [
        "weight",
        *(f"sum_{v}_{k}" for v in ("p", "y") for k in range(n_classes)),
        *(f"sum_{name}" for name in terms),
    ]
    if weight is None:
        table = table.with_columns(pl.col("count").cast(pl.Float64).alias("weight"))
    # One null-cell row for a group without used rows: its refused rows', or an empty one.
    others = pl.len().over(keys) if keys else pl.len()
    table = table.filter((pl.col(CELL) != _IGNORED_BIN) | (others == 1))
    celled = pl.col(CELL) >= 0.0
    table = table.with_columns(
        *(pl.when(celled).then(pl.col(n)).cast(pl.Int64) for n in names),
        pl.lit(binning.n_bins, pl.Int32).alias("n_bins"),
        pl.lit(binning.closed, pl.String).alias("closed"),
        pl.when(pl.col(CELL) != _IGNORED_BIN).then(pl.col("count")).otherwise(0).cast(pl.Int64),
        pl.when(celled).then(pl.col(summed)).cast(pl.Float64),
    )
    columns = [*keys, *names, "n_bins", "closed", "count", *summed]
    return table.select(columns).sort(*keys, *names, nulls_last=True)


def canonical_plan(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    binning: Binning,
    metrics: Sequence[str],
    **options: Any,
) -> tuple[Prepared, pl.LazyFrame]:
    """The prepared input (`options` as :func:`prepare`'s) and the plan of its canonical
    table: what ``bin_statistics`` returns and ``summary`` finishes (checked by the caller
    with :func:`check_canonical`)."""
    prepared = prepare(data, prob, label, reduction="canonical", canonical=True, **options)
    plan = canonical_statistics(
        prepared.lf, prepared.problem, prepared.keys, binning,
        canonical_classes(prepared, prob), terms_for(metrics),
    )  # fmt: skip
    return prepared, plan


def _closure_columns(columns: Sequence[str]) -> list[str]:
    """``["closed"]`` when a table has its closure column (tables of earlier versions
    do not, and merge unchecked), else none."""
    return ["closed"] if "closed" in columns else []


def _grid_columns(columns: Sequence[str]) -> list[str]:
    """The columns naming a canonical table's grid: ``n_bins`` and its closure."""
    return ["n_bins", *_closure_columns(columns)]


def merge_cells(stats: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Sum the rows of each (group, cell, grid) of canonical tables (keys not in `keys`
    summed over); the null-cell rows of a group merge into one, counting its refused rows."""
    columns = stats.collect_schema().names()
    sums = [name for name in sum_columns(stats) if name != "count"]
    return stats.group_by(*keys, *cell_columns(columns), *_grid_columns(columns)).agg(
        pl.col("count").cast(pl.Int64).sum(), pl.col(sums).sum()
    )


def finish_cells(
    stats: pl.LazyFrame,
    keys: list[str],
    metrics: Sequence[str],
    distance: Distance = "tv",
    average: BinAverage = "weighted",
) -> pl.LazyFrame:
    """The canonical metrics per group from merged canonical statistics (see the module).

    Per cell ``b`` with weight ``W_b > 0``, ``d_b = d(P_b, Y_b)`` from the class sums;
    per group, with ``W`` the total weight: ``ece = sum_b (W_b / W) d_b`` (the plain
    mean of ``d_b`` with ``average="bins"``), ``rmsce = sqrt(sum_b (W_b / W) d_b**2)``
    (the root mean square over cells with ``"bins"``), ``mce = max_b d_b``; ``brier``
    and ``log_loss`` the multi-class scores. Columns: the keys, ``count``, ``refused``,
    then `metrics`; null metrics for a group holding a refused row, without weight,
    or merged from tables of different grids.
    """
    schema = stats.collect_schema().names()
    whole = not keys
    stats, group = grouped(stats, keys)
    celled = pl.col(CELL).is_not_null()
    cell_weight = pl.col("weight")
    gaps = [
        pl.col(p) - pl.col(y)
        for p, y in zip(class_columns(schema, "sum_p"), class_columns(schema, "sum_y"))
    ]
    mass = pl.sum_horizontal(distance_term(gap, cell_weight, distance) for gap in gaps)
    used = celled & (cell_weight > 0.0)
    distances = (mass / cell_weight).filter(used)
    row_sums = [n for n in ("sum_squared_error", "sum_log_loss") if n in schema]
    total = cell_weight.filter(celled).sum()
    if average == "weighted":
        ece = mass.filter(used).sum() / total
        rmsce = ((mass * mass / cell_weight).filter(used).sum() / total).sqrt()
    else:
        ece = distances.mean()
        rmsce = (distances * distances).mean().sqrt()
    per_group = stats.group_by(group).agg(
        pl.col("count").filter(celled).sum().alias("count"),
        pl.col("count").filter(~celled).sum().alias("refused"),
        total.alias("weight"),
        *([pl.col(row_sums).filter(celled).sum()] if row_sums else []),
        ece.alias("ece"),
        rmsce.alias("rmsce"),
        distances.max().alias("mce"),
        (pl.struct(_grid_columns(schema)).n_unique() > 1).alias("clash"),
    )
    if whole:
        # The one group exists even in empty data, as an expression in `select` gives it.
        per_group = pl.LazyFrame({_ALL: [True]}).join(per_group, on=_ALL, how="left")
        per_group = per_group.with_columns(
            pl.col("count", "refused").fill_null(0), pl.col("clash").fill_null(False)
        )
    ok = (pl.col("refused") == 0) & ~pl.col("clash") & (pl.col("weight") > 0.0)
    values = {
        "ece": pl.col("ece"),
        "rmsce": pl.col("rmsce"),
        "mce": pl.col("mce"),
        "brier": pl.col("sum_squared_error") / pl.col("weight"),
        "log_loss": pl.col("sum_log_loss") / pl.col("weight"),
    }
    return (
        per_group.select(
            *group, pl.col("count").cast(pl.Int64), pl.col("refused").cast(pl.Int64),
            *(pl.when(ok).then(values[name]).alias(name) for name in metrics),
        )  # fmt: skip
        .sort(group, nulls_last=True)
        .select(*keys, "count", "refused", *metrics)
    )


def _quantile_grid(
    lf: pl.LazyFrame, p: pl.Expr, used: pl.Expr, keys: list[str], binning: Binning
) -> pl.LazyFrame:
    """Per group, each quantile bin with its edges: the keys, ``bin``, ``lower``, ``upper``."""
    n_bins = binning.n_bins
    edges = pl.concat_list(quantile_edges(pl.when(used).then(p), n_bins)).alias("edges")
    per_group = lf.group_by(keys).agg(edges) if keys else lf.select(edges)
    return per_group.select(
        *keys,
        pl.int_ranges(0, n_bins, dtype=pl.Int32).alias("bin"),
        pl.col("edges").list.head(n_bins).alias("lower"),
        pl.col("edges").list.tail(n_bins).alias("upper"),
    ).explode("bin", "lower", "upper")


def _given_grid(
    lf: pl.LazyFrame, p: pl.Expr, used: pl.Expr, keys: list[str], bins: pl.Expr
) -> pl.LazyFrame:
    """Per group, each given bin with the range of its probabilities (bin 0 when none)."""
    ranges = (
        lf.filter(used & bins.is_not_null())
        .group_by(*keys, bins.cast(pl.Int32).alias("bin"))
        .agg(p.min().alias("lower"), p.max().alias("upper"))
    )
    groups = lf.select(keys).unique()
    return groups.join(ranges, on=keys, how="left", nulls_equal=True).with_columns(
        pl.col("bin").fill_null(0)
    )


def _completed(
    table: pl.LazyFrame,
    grid: pl.LazyFrame | None,
    edges: pl.LazyFrame | None,
    keys: list[str],
    names: list[str],
    whole: bool,
    closed: str,
) -> pl.LazyFrame:
    """Every bin of every group (empty ones zero), the refused rows' row, sorted; the
    bins' closure (`closed`) after their edges, so that tables of other closures never
    merge (their bins share edges, not the rows on them).

    `grid` holds the uniform bins and edges; `edges`, when given, the quantile edges
    of each group (a group with no used row keeps its bins, with null edges).

    The small aggregated `table` feeds several branches; ``cache()`` lets them share
    one evaluation, so the data are read once. With `whole` (no group keys), the one
    group exists even in empty data, as an expression in ``select`` gives one row.
    """
    table = table.cache()
    sums = [name for name in names if name != "count"]
    base = [key for key in keys if key != "class"]
    if whole:
        # Joined with the table's keys although constant: with every branch reading the
        # same cached table, Polars evaluates it once.
        groups = pl.LazyFrame({_ALL: [True]}).join(
            table.select(keys).unique(), on=_ALL, how="left"
        )
    else:
        groups = table.select(keys).unique()
    if "class" in keys:
        # Classes come from the rows used or refused (an ignored row has no class); a
        # group with ignored rows only keeps one grid, of a null class.
        known = table.filter(pl.col("bin") >= -1).select(keys).unique()
        lone = groups.select(base).unique().join(known, on=base, how="anti", nulls_equal=True)
        lone = lone.with_columns(pl.lit(None, pl.Int32).alias("class"))
        groups = pl.concat([known, lone.select(keys)])
    # Edges are the observed rows': replicates keep them (joined on the keys they have).
    on = [] if edges is None else [k for k in keys if k in edges.collect_schema().names()]
    if grid is None:
        # Given bins: each group's own (the edges frame has every group).
        assert edges is not None
        full = groups.join(edges, on=on, how="inner", nulls_equal=True)
    else:
        full = groups.join(grid, how="cross")
    if edges is not None and grid is not None:
        full = full.drop("lower", "upper").join(
            edges, on=[*on, "bin"], how="left", nulls_equal=True
        )
    binned = table.filter(pl.col("bin") >= 0)
    full = full.join(binned, on=[*keys, "bin"], how="left", nulls_equal=True)
    full = full.with_columns(pl.col("count").fill_null(0), pl.col(sums).fill_null(0.0))
    # The refused rows' sums are nulled after the concat, not here: a branch that
    # reads fewer columns would be pruned to another aggregation, and read the data again.
    refused = table.filter(pl.col("bin") == -1).with_columns(
        pl.lit(None, pl.Int32).alias("bin"),
        pl.lit(None, pl.Float64).alias("lower"),
        pl.lit(None, pl.Float64).alias("upper"),
    )
    columns = [*keys, "bin", "lower", "upper", *names]
    result = pl.concat([full.select(columns), refused.select(columns)], how="vertical_relaxed")
    binned_sums = pl.when(pl.col("bin").is_not_null()).then(pl.col(sums))
    closure = pl.lit(closed, pl.String).alias("closed")
    return result.with_columns(binned_sums).select(
        *keys, "bin", "lower", "upper", closure, *names
    ).sort(*keys, "bin", nulls_last=True)


# --------------------------------------------------------------------------
# Finishers
# --------------------------------------------------------------------------


def grouped(lf: pl.LazyFrame, keys: list[str]) -> tuple[pl.LazyFrame, list[str]]:
    """`lf` and its group keys; a constant key stands for the whole frame when there are none."""
    if keys:
        return lf, keys
    return lf.with_columns(pl.lit(True).alias(_ALL)), [_ALL]


def sum_columns(stats: pl.LazyFrame) -> list[str]:
    """The summable columns of a statistics table."""
    return [n for n in stats.collect_schema().names() if n in SUMS or n.startswith("sum_")]


def merge_statistics(stats: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Sum the rows of each (group[, class], bin, edges): one row per bin of each group.

    Keys of `stats` not in `keys` are summed over. Rows of the same bin with other
    edges stay apart (quantile statistics of different partitions), for the
    finishers to refuse; so do replicates (``resampling``, ``replicate``).
    """
    columns = stats.collect_schema().names()
    group = [*keys, *replicate_keys(columns), *(["class"] if "class" in columns else [])]
    sums = sum_columns(stats)
    closed = _closure_columns(columns)
    return stats.group_by(*group, "bin", "lower", "upper", *closed).agg(
        pl.col("count").cast(pl.Int64).sum(), pl.col([s for s in sums if s != "count"]).sum()
    )


def finish_metrics(
    stats: pl.LazyFrame,
    keys: list[str],
    metrics: Sequence[str],
    average: TopLabelAverage = "macro",
) -> pl.LazyFrame:
    """Metrics per group from merged statistics (one row per group, class and bin).

    Columns: the keys, ``count`` (rows used), ``refused`` (rows refused), then
    ``mean_predicted`` and ``observed`` (the weighted means of ``p`` and ``y``: for
    vector tables, the mean confidence and the accuracy), then `metrics`. A group
    holding a refused row, a bin merged from different edges, or (classwise) classes
    with different row counts gets null metrics.
    """
    schema = stats.collect_schema().names()
    stats, group = grouped(stats, keys)
    keyed = "class" in schema
    classwise = "sum_confidence" in schema
    per_class = [*group, "class"] if keyed else group
    binned = pl.col("bin").is_not_null()
    weight = pl.col("weight").filter(binned)
    total = weight.sum()
    gap = (pl.col("sum_y") - pl.col("sum_p")).filter(binned)
    row_sums = [n for n in ("sum_squared_error", "sum_log_loss") if n in schema]
    mean_sums = ["sum_confidence", "sum_correct"] if classwise else ["sum_p", "sum_y"]
    diagnostics = [m for m in metrics if m in DIAGNOSTICS]
    bins = BinSums.of_columns(binned, schema)
    parts = {k: v for name in diagnostics for k, v in diagnostic_parts(name, bins, binned).items()}
    classes = stats.group_by(per_class).agg(
        *(value.alias(name) for name, value in parts.items()),
        pl.col("count").filter(binned).sum().alias("count"),
        pl.col("count").filter(~binned).sum().alias("refused"),
        total.alias("weight"),
        pl.col([*row_sums, *mean_sums]).filter(binned).sum(),
        pl.col("bin").filter(binned).is_duplicated().any().alias("clash"),
        *(calibration_error(gap, weight, total, norm).alias(metric)
          for metric, norm in _NORM_OF.items()),
    )  # fmt: skip

    def rows(column: str) -> pl.Expr:
        # Classwise: every row is in every class, so a group's rows are one class's rows.
        return pl.col(column).max() if classwise else pl.col(column).sum()

    has_weight = pl.col("weight") > 0.0
    reduced: dict[str, pl.Expr] = {
        "ece": pl.col("ece").max() if not keyed else _class_mean("ece", average, classwise),
        "rmsce": pl.col("rmsce").max() if not keyed else _class_mean("rmsce", average, classwise),
        "mce": pl.col("mce").max(),
        # Binary tables only (check_diagnostics): one class, the group's value.
        **{name: pl.col(name).first() for name in parts},
    }
    invalid = (
        (pl.col("refused").sum() > 0)
        | pl.col("clash").any()
        | ((pl.col("count").min() != pl.col("count").max()) if classwise else pl.lit(False))
    )
    per_group = classes.group_by(group).agg(
        rows("count").alias("count"),
        pl.col("refused").sum().alias("refused") if not classwise else pl.col("refused").max(),
        rows("weight").alias("weight"),
        pl.col([*row_sums, *mean_sums]).sum(),
        *(value.alias(name) for name, value in reduced.items()),
        invalid.alias("invalid"),
    )
    ok = ~pl.col("invalid") & has_weight
    means = {
        "mean_predicted": pl.col(mean_sums[0]) / pl.col("weight"),
        "observed": pl.col(mean_sums[1]) / pl.col("weight"),
        "brier": pl.col("sum_squared_error") / pl.col("weight"),
        "log_loss": pl.col("sum_log_loss") / pl.col("weight"),
    }
    values: dict[str, pl.Expr] = {
        **means,
        **{m: pl.col(m) for m in _NORM_OF},
        **{m: diagnostic_value(m) for m in diagnostics},
    }
    names = ["mean_predicted", "observed", *metrics]
    return (
        per_group.select(
            *group, "count", "refused",
            *(pl.when(ok).then(values[name]).alias(name) for name in names),
        )  # fmt: skip
        .sort(group, nulls_last=True)
        .select(*keys, "count", "refused", *names)
    )


def diagnostic_parts(name: str, bins: BinSums, binned: pl.Expr) -> dict[str, pl.Expr]:
    """The per-group aggregations of a test, p-value or decomposition, from table rows.

    `bins` are the group's per-bin series (the rows where `binned` holds); the
    expressions of :mod:`polars_calib.diagnostics` run the same finishers on sums
    built inside the group. :func:`diagnostic_value` finishes the columns.
    """

    def total(column: str) -> pl.Expr:
        return pl.col(column).filter(binned).sum()

    if name.startswith("spiegelhalter"):
        z = _finish.spiegelhalter_z(
            total("sum_spiegelhalter_numerator"), total("sum_spiegelhalter_variance")
        )
        return {_Z: z}
    if name.startswith("hosmer_lemeshow"):
        statistic, df = _finish.hosmer_lemeshow(bins)
        return {_HL: statistic, _HL_DF: df}
    return {name: _diagnostic(name, bins)}


def diagnostic_value(name: str) -> pl.Expr:
    """A diagnostic from the columns of :func:`diagnostic_parts` (two-sided Spiegelhalter p)."""
    if name == "spiegelhalter_z":
        return pl.col(_Z)
    if name == "spiegelhalter_p":
        return _finish.normal_p_value(pl.col(_Z), "two-sided")
    if name == "hosmer_lemeshow":
        return pl.col(_HL)
    if name == "hosmer_lemeshow_p":
        return _finish.chi2_p_value(pl.col(_HL), pl.col(_HL_DF))
    return pl.col(name)


def _diagnostic(name: str, bins: BinSums) -> pl.Expr:
    if name == "debiased_ece_squared":
        return _finish.debiased_ece_squared(bins)
    if name == "debiased_ece":
        return _finish.debiased_ece(bins)
    if name == "brier_decomposition":
        return _finish.brier_decomposition(bins)
    score: Score = "brier" if name.startswith("brier") else "log_loss"
    calibration, refinement = _finish.calibration_refinement(bins, score)
    return calibration if name.endswith("calibration_loss") else refinement


def _class_mean(metric: str, average: TopLabelAverage, classwise: bool) -> pl.Expr:
    """The mean of a per-class metric over the classes with positive weight."""
    if average == "weighted" and not classwise:
        used = pl.col(metric).is_not_null()
        return (pl.col(metric) * pl.col("weight")).filter(used).sum() / pl.col("weight").filter(
            used
        ).sum()
    return pl.col(metric).mean()


def reliability_rows(stats: pl.LazyFrame, keys: list[str], z: float) -> pl.LazyFrame:
    """The reliability table from merged statistics (one row per group, class and bin).

    Every bin of the table is a row, empty ones with count 0 and null means; a group
    holding refused rows keeps its counts, with null means and intervals.
    """
    from polars_calib._intervals import wilson_interval

    schema = stats.collect_schema().names()
    group = [*keys, *(["class"] if "class" in schema else [])]
    stats, grouping = grouped(stats, group)
    n = pl.col("weight")
    flags = stats.with_columns(
        (pl.col("count") * pl.col("bin").is_null()).sum().over(grouping).alias("_refused"),
    ).filter(pl.col("bin").is_not_null())
    clash = pl.col("bin").is_duplicated().over(grouping)
    has_weight = (n > 0.0) & (pl.col("_refused") == 0) & ~clash
    observed = pl.when(has_weight).then(pl.col("sum_y") / n)
    mean_predicted = pl.when(has_weight).then(pl.col("sum_p") / n)
    lower, upper = wilson_interval(pl.when(has_weight).then(pl.col("sum_y")), n, z)
    return (
        flags.with_columns(
            mean_predicted.alias("mean_predicted"),
            observed.alias("observed"),
            lower.alias("observed_lower"),
            upper.alias("observed_upper"),
        )
        .with_columns((pl.col("observed") - pl.col("mean_predicted")).alias("gap"))
        .sort(*grouping, "bin", nulls_last=True)
        .select(*group, *RELIABILITY)
    )


# --------------------------------------------------------------------------
# Public: the table of a frame, and the finishers of (merged) tables
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """A frame of predictions checked and turned into a problem, with its group keys.

    ``reduction`` is None for binary data. ``lf`` holds the computed keys.
    """

    data: pl.DataFrame | pl.LazyFrame
    lf: pl.LazyFrame
    problem: Problem
    keys: list[str]
    reduction: TableReduction | None


def prepare(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    weight: str | None = None,
    reduction: TableReduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    time: str | None = None,
    every: str | None = None,
    reserved: frozenset[str] = frozenset(),
    canonical: bool = False,
) -> Prepared:
    """Check a frame's schema (no data read) and build its problem and group keys.

    Probability vectors (an Array or List column) take `reduction` (``"confidence"``
    by default); binary data refuse a `reduction`. ``"canonical"`` only with
    `canonical` (the functions that build and finish canonical tables).
    """
    keys = GroupKeys(by, reserved | _RESERVED)
    if (time is None) != (every is None):
        msg = "`time` and `every` go together: give both or neither"
        raise ValueError(msg)
    if time is not None and time in keys.names:
        msg = f"`by` cannot hold {time!r}: it is the `time` window key"
        raise ValueError(msg)
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    dtype = data.collect_schema().get(prob) if isinstance(prob, str) else None
    vectors = dtype is not None and is_vector(dtype)
    if reduction is not None:
        check_choice("reduction", reduction, TABLE_REDUCTIONS if canonical else REDUCTIONS)
        vectors = True  # the schema check says what the column holds
    tol = check_sum_tol(sum_tol)
    if vectors and "class" in keys.names:
        msg = "`by` cannot hold 'class': the reduction keys its statistics by class"
        raise ValueError(msg)
    lf = check_schema(
        data, prob, label, weight, keys.columns(), vectors=vectors, time=time,
        pos_label=pos_label,
    )  # fmt: skip
    names = list(keys.names)
    added = keys.computed()
    if time is not None and every is not None:
        added.append(pl.col(time).dt.truncate(every).alias(time))
        names.append(time)
    if added:
        lf = lf.with_columns(added)
    if vectors:
        used_reduction: TableReduction = reduction or "confidence"
        problem = vector_problem(prob, label, weight, tol, used_reduction)
        return Prepared(data, lf, problem, names, used_reduction)
    return Prepared(data, lf, binary_problem(prob, label, weight, pos_label), names, None)


def collect_checked(prepared: Prepared, plan: pl.LazyFrame) -> pl.DataFrame:
    """Collect a statistics table; raise :class:`CalibrationDataError` if it counts refused rows.

    Valid data are read once. Bad data are read a second time, to count the rows of
    each problem for the message.
    """
    return check_statistics(
        prepared, plan.collect(), lambda checks: problem_counts(prepared.lf, checks).collect()
    )


def check_statistics(
    prepared: Prepared,
    stats: pl.DataFrame,
    count_problems: Callable[[Sequence[Check]], pl.DataFrame],
) -> pl.DataFrame:
    """Return `stats`; raise :class:`CalibrationDataError` if it counts refused rows.

    `count_problems` reads the data again (only then) and returns, for the message,
    the counts of :func:`polars_calib.validation.problem_counts` for the given checks
    (another engine computes them where its data are).
    """
    binned = CELL if CELL in stats.columns else "bin"
    if stats.filter(pl.col(binned).is_null())["count"].sum():
        checks = prepared.problem.checks
        raise_for_problems(count_problems(checks), checks)
    if "sum_confidence" in stats.columns:
        # Classwise: every row is in every class, so classes with different row counts
        # mean vectors of different lengths (read again only then, for the message).
        per_class = stats.group_by([*prepared.keys, "class"]).agg(pl.col("count").sum())
        counts = pl.col("count").n_unique()
        uneven = per_class.select((counts.over(prepared.keys) if prepared.keys else counts) > 1)
        if uneven.to_series().any():
            whole = [c for c in prepared.problem.checks if c.whole]
            raise_for_problems(count_problems(whole), whole)
    return stats


class _SparkFrame(Protocol):
    """A ``pyspark.sql.DataFrame``, as the type checkers see it (pyspark not needed)."""

    def mapInArrow(self, *args: Any, **kwargs: Any) -> Any: ...  # noqa: N802


class _DaskFrame(Protocol):
    """A ``dask.dataframe.DataFrame``, as the type checkers see it (dask not needed)."""

    def to_delayed(self, *args: Any, **kwargs: Any) -> Any: ...


@overload
def bin_statistics(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_bins: int = ...,
    strategy: Strategy = ...,
    closed: Closed = ...,
    weight: str | None = ...,
    reduction: TableReduction | None = ...,
    sum_tol: float = ...,
    pos_label: Any = ...,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = ...,
    compat: Compat | None = ...,
    min_size: int = ...,
    max_bins: int | None = ...,
    resampling: Resampling | Sequence[Resampling] | None = ...,
    n_resamples: int = ...,
    seed: int = ...,
    id: IntoExpr | None = ...,  # noqa: A002
) -> FrameT: ...


@overload
def bin_statistics(
    data: _SparkFrame | _DaskFrame,
    prob: str,
    label: str,
    *,
    by: Keys = ...,
    time: str | None = ...,
    every: str | None = ...,
    n_bins: int = ...,
    strategy: Strategy = ...,
    closed: Closed = ...,
    weight: str | None = ...,
    reduction: TableReduction | None = ...,
    sum_tol: float = ...,
    pos_label: Any = ...,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = ...,
    compat: Compat | None = ...,
    min_size: int = ...,
    max_bins: int | None = ...,
    resampling: Resampling | Sequence[Resampling] | None = ...,
    n_resamples: int = ...,
    seed: int = ...,
    id: IntoExpr | None = ...,  # noqa: A002
) -> pl.DataFrame: ...


def bin_statistics(
    data: Any,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: str | None = None,
    reduction: TableReduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = METRICS,
    compat: Compat | None = None,
    min_size: int = 10,
    max_bins: int | None = None,
    resampling: Resampling | Sequence[Resampling] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity, as in summary)
) -> pl.DataFrame | pl.LazyFrame:
    """Sufficient statistics per group and bin: the mergeable form of every metric.

    Every uniform-bin metric is a function of a few sums per bin, and sums add up:
    statistics of partitions of a log (files, days, worker processes) concatenated
    and passed to :func:`metrics_from_statistics` or
    :func:`reliability_from_statistics` give the numbers of one pass over the
    whole log. The same table is computed on a Spark or Dask cluster from a
    ``pyspark.sql.DataFrame`` or a ``dask.dataframe.DataFrame``: each partition runs
    this package's Polars aggregation, the engine sums the partial tables, and the
    small result comes back as a Polars DataFrame (see ``docs/scale-out.md``).

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions; or a Spark or Dask DataFrame (uniform
        bins, `by` as column names; ``polars_calib`` installed on the workers).
    prob
        Name of the column holding the probability of the positive class, or
        probability vectors (``Array`` or ``List``).
    label
        Name of the 0/1 (or boolean) outcome column; with vectors, the true class.
    by
        Group keys: column names or expressions (``pl.col("ts").dt.truncate("1d")``);
        ``None`` for one group.
    time, every
        As :func:`polars_calib.summary`: the name of a Date or Datetime column and a
        Polars duration (``"1d"``), given together; the rows are grouped by calendar
        windows as well, the `time` key (after the `by` keys) holding each window's
        start, ``pl.col(time).dt.truncate(every)``. Spark and Dask data take them too.
    n_bins
        Number of bins, a positive int.
    strategy
        ``"uniform"`` (equal width, mergeable), ``"quantile"`` (equal mass within
        each group) or ``"median_variance"`` (binary data, see
        :func:`polars_calib.median_variance_bins`; ``lower`` and ``upper`` the range
        of the bin's probabilities); the last two are **not** mergeable: the bins
        depend on all of the group's rows, and the finishers refuse the same bin
        with different edges.
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ...``; ``"left"``:
        ``[0, 1/B), ..., [(B-1)/B, 1]``.
    weight
        Name of an optional column of non-negative sample weights.
    reduction
        For probability vectors: ``"confidence"`` (default), ``"top_label"`` or
        ``"classwise"`` (see :func:`polars_calib.summary`); or ``"canonical"``: no
        reduction, the sums of each non-empty cell of the simplex grid, which
        :func:`metrics_from_statistics` finishes into the canonical ECE of
        :func:`polars_calib.canonical_ece` (an ``Array`` column; uniform bins; see
        Returns and ``docs/ece-family.md``).
    sum_tol
        Vectors: largest accepted ``|sum(p) - 1|``.
    pos_label
        The label of the positive class when labels are not 0/1 (binary data).
    metrics
        Which metrics the table must be able to finish: the Brier and log-loss sums,
        and those of the tests and decompositions (see :func:`polars_calib.summary`),
        are computed only when asked for: ``sum_spiegelhalter_numerator`` and
        ``sum_spiegelhalter_variance`` (Spiegelhalter), ``sum_squared_p`` and
        ``sum_p_y`` (the Brier decomposition).
    compat
        A peer whose bins to reproduce (see :func:`polars_calib.ece`).
    min_size, max_bins
        ``strategy="median_variance"``: fewest rows per bin and most bins per group.
    resampling
        ``"bootstrap"``, ``"consistency"`` or both: the table also holds
        `n_resamples` replicates of each (see ``docs/significance.md``), for
        :func:`metrics_from_statistics` to finish with intervals (``confidence``) or
        consistency p-values. ``None`` (default): no replicates.
    n_resamples
        Replicates of each resampling, an int from 1 to 2**30.
    seed
        Seed of the draws, an int in ``[0, 2**32)``.
    id
        An integer column or expression identifying each row, from which (with the
        seed and the replicate) its draws are hashed; ``None``: the row's position in
        `data`, which reproduces across engines and thread counts but not across
        partitions (give an id to merge tables of partitions). Spark and Dask data
        need it (a column name), so that the draws do not depend on the partitioning.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `data` (a DataFrame for Spark and Dask data), sorted by
        keys and bin: the keys, ``class`` (Int32, for the top-label and classwise
        reductions), ``bin`` (Int32, 0-based; every
        bin of every group, empty ones with count 0), ``lower`` and ``upper``
        (Float64, the bin's edges), ``closed`` (String, ``"right"`` or ``"left"``:
        tables of different closures do not merge), ``count`` (Int64, rows), ``weight`` (Float64,
        their total weight; the count when unweighted), the Float64 weighted sums
        ``sum_p``, ``sum_y``, ``sum_squared_error`` and ``sum_log_loss``, and with
        the classwise reduction ``sum_confidence`` and ``sum_correct`` (the largest
        probability and whether it is right, on each row's predicted class). A group
        holding refused rows has one more row with a null ``bin`` and sums, whose
        ``count`` is the number of refused rows. With `resampling`, the keys are
        followed by ``resampling`` (String) and ``replicate`` (Int32, from 0): both
        null on the observed rows, then each replicate's sums (the bootstrap's
        ``count`` is the number of rows drawn; refused rows are counted, not drawn).

        With ``reduction="canonical"``, one row per group and **non-empty** cell:
        the keys, ``cell`` (Int64, the cell ``sum_k b_k n_bins**k`` of the
        components' bins ``b_k``; with more classes than one exact word packs, also
        ``cell_1``, ``cell_2``, ... for the next classes, see
        :meth:`polars_calib.binning.Binning.cell_words`), ``n_bins`` (Int32),
        ``closed`` (String), ``count``, ``weight``, ``sum_p_0`` .. ``sum_p_{K-1}`` (the weighted sums of
        each component), ``sum_y_0`` .. ``sum_y_{K-1}`` (the weight of each true
        class) and ``sum_squared_error``, ``sum_log_loss`` when `metrics` ask for
        them; a group's refused rows (or, when it has no used row, nothing) in one
        row of null cell and sums. Tables of partitions merge by summing rows of
        the same keys, cell, ``n_bins`` and ``closed``.

    Raises
    ------
    CalibrationDataError
        A DataFrame holding refused rows (see :func:`polars_calib.validate`), or a
        missing or mistyped column. A LazyFrame is checked from its schema only; its
        refused rows are counted in the plan (the null-bin rows). Spark and Dask data
        raise as a DataFrame does, their refused rows counted on the engine.
    ValueError
        Spark or Dask data with `resampling` and no `id` (as every bad option value);
        ``reduction="canonical"`` with other bins than uniform, `compat`,
        `resampling`, metrics other than ``"ece"``, ``"mce"``, ``"rmsce"``,
        ``"brier"``, ``"log_loss"``, or Spark or Dask data.

    Notes
    -----
    One aggregation over one pass of the data (see :mod:`polars_calib.statistics`).
    Rows with a null probability, label or weight are ignored, but their group keeps
    its rows. Quantile bins are computed within each group.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "model": ["a", "a", "a", "b", "b"],
    ...     "p": [0.1, 0.3, 0.8, 0.6, 0.9],
    ...     "y": [0, 1, 1, 0, 1],
    ... })
    >>> stats = pc.bin_statistics(df, "p", "y", by="model", n_bins=2, metrics=["ece"])
    >>> stats.columns
    ['model', 'bin', 'lower', 'upper', 'closed', 'count', 'weight', 'sum_p', 'sum_y']
    >>> stats.drop("closed")  # closed: "right" on every row (the default)
    shape: (4, 8)
    ┌───────┬─────┬───────┬───────┬───────┬────────┬───────┬───────┐
    │ model ┆ bin ┆ lower ┆ upper ┆ count ┆ weight ┆ sum_p ┆ sum_y │
    │ ---   ┆ --- ┆ ---   ┆ ---   ┆ ---   ┆ ---    ┆ ---   ┆ ---   │
    │ str   ┆ i32 ┆ f64   ┆ f64   ┆ i64   ┆ f64    ┆ f64   ┆ f64   │
    ╞═══════╪═════╪═══════╪═══════╪═══════╪════════╪═══════╪═══════╡
    │ a     ┆ 0   ┆ 0.0   ┆ 0.5   ┆ 2     ┆ 2.0    ┆ 0.4   ┆ 1.0   │
    │ a     ┆ 1   ┆ 0.5   ┆ 1.0   ┆ 1     ┆ 1.0    ┆ 0.8   ┆ 1.0   │
    │ b     ┆ 0   ┆ 0.0   ┆ 0.5   ┆ 0     ┆ 0.0    ┆ 0.0   ┆ 0.0   │
    │ b     ┆ 1   ┆ 0.5   ┆ 1.0   ┆ 2     ┆ 2.0    ┆ 1.5   ┆ 1.0   │
    └───────┴─────┴───────┴───────┴───────┴────────┴───────┴───────┘

    Probability vectors without reduction: the sums of each non-empty cell of the
    simplex grid (cell ``b_0 + 2 b_1 + 4 b_2`` of the components' bins ``b_k``):

    >>> vectors = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40], [0.10, 0.30, 0.60]],
    ...     "y": [0, 1, 2],
    ... }).with_columns(pl.col("probs").list.to_array(3))
    >>> pc.bin_statistics(
    ...     vectors, "probs", "y", n_bins=2, reduction="canonical", metrics=["ece"]
    ... ).select("cell", "count", "sum_p_0", "sum_p_2", "sum_y_0", "sum_y_2")
    shape: (2, 6)
    ┌──────┬───────┬─────────┬─────────┬─────────┬─────────┐
    │ cell ┆ count ┆ sum_p_0 ┆ sum_p_2 ┆ sum_y_0 ┆ sum_y_2 │
    │ ---  ┆ ---   ┆ ---     ┆ ---     ┆ ---     ┆ ---     │
    │ i64  ┆ i64   ┆ f64     ┆ f64     ┆ f64     ┆ f64     │
    ╞══════╪═══════╪═════════╪═════════╪═════════╪═════════╡
    │ 1    ┆ 1     ┆ 0.55    ┆ 0.4     ┆ 0.0     ┆ 0.0     │
    │ 4    ┆ 2     ┆ 0.35    ┆ 1.15    ┆ 1.0     ┆ 1.0     │
    └──────┴───────┴─────────┴─────────┴─────────┴─────────┘
    """
    from polars_calib.median_variance import table_binning, table_input

    checked = table_binning(n_bins, strategy, closed, compat, min_size, max_bins)
    names = check_metrics(metrics, tests=True)
    resamples = resamples_for(resampling, n_resamples, seed, id)
    # Imported here: the engines' module builds on this one.
    from polars_calib._engines import (
        EngineSpec,
        column_keys,
        engine_of,
        engine_resamples,
        engine_statistics,
    )

    engine = engine_of(data)
    if reduction == "canonical":
        check_canonical(names, checked, compat)
        if engine is not None or resamples:
            msg = "reduction='canonical' tables are built from Polars frames, without resampling"
            raise ValueError(msg)
        assert checked is not None  # uniform (check_canonical)
        prepared, plan = canonical_plan(
            data, prob, label, checked, names, by=by, weight=weight, sum_tol=sum_tol,
            time=time, every=every,
        )  # fmt: skip
        return collect_checked(prepared, plan) if isinstance(data, pl.DataFrame) else plan
    if engine is not None:
        spec = EngineSpec(
            prob, label, column_keys(by), weight, reduction, sum_tol, pos_label, n_bins,
            closed, compat, tuple(terms_for(names)), time=time, every=every,
            resamples=engine_resamples(resamples, engine),
        )  # fmt: skip
        if strategy != "uniform":
            msg = (
                f"{engine} statistics need uniform bins (mergeable across partitions); "
                f"got strategy={strategy!r}"
            )
            raise ValueError(msg)

        def check(prepared: Prepared) -> None:
            check_diagnostics(names, n_bins, prepared.reduction is not None)

        return engine_statistics(data, spec, engine, check)[0]
    prepared = prepare(
        data, prob, label, by=by, weight=weight, reduction=reduction, sum_tol=sum_tol,
        pos_label=pos_label, time=time, every=every,
        reserved=RESAMPLING_KEYS if resamples else frozenset(),
    )  # fmt: skip
    check_diagnostics(
        names, None if checked is None else checked.n_bins, prepared.reduction is not None
    )
    lf, binning, bins = table_input(prepared, prob, checked, min_size, max_bins)
    plan = statistics_query(
        lf, prepared.problem, prepared.keys, binning, terms_for(names), bins, resamples
    )
    if isinstance(data, pl.DataFrame):
        return collect_checked(prepared, plan)
    return plan


def same_kind(data: FrameT, result: pl.LazyFrame) -> FrameT:
    """`result` collected when `data` is a DataFrame, else the plan itself."""
    done: pl.DataFrame | pl.LazyFrame = (
        result.collect() if isinstance(data, pl.DataFrame) else result
    )
    return cast(FrameT, done)


def _statistics_frame(stats: object, keys: list[str]) -> pl.LazyFrame:
    """`stats` as a LazyFrame, checking that it has the keys and the statistics columns."""
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`stats` must be a polars DataFrame or LazyFrame, got {type(stats).__name__}"
        raise TypeError(msg)
    lf = stats.lazy()
    schema = lf.collect_schema()
    missing = [name for name in (*keys, "bin", "lower", "upper", *SUMS) if name not in schema]
    if missing:
        msg = (
            f"`stats` is not a statistics table (see `bin_statistics`): missing column(s) "
            f"{', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    return lf


def _merged(stats: FrameT, keys: list[str]) -> pl.LazyFrame:
    """Merge a statistics table; a DataFrame whose bins clash raises here."""
    merged = merge_statistics(_statistics_frame(stats, keys), keys)
    if isinstance(stats, pl.DataFrame):
        table: pl.DataFrame = merged.collect()
        group = [*keys, *replicate_keys(table.columns)]
        group += ["class"] if "class" in table.columns else []
        clash = table.filter(pl.col("bin").is_not_null()).filter(
            pl.struct(*group, "bin").is_duplicated()
        )
        if clash.height:
            msg = (
                "`stats` holds the same bin with different edges or closures (statistics "
                "with quantile bins, or different `n_bins` or `closed`, from several "
                f"partitions): they cannot be merged; first: {clash.row(0, named=True)}"
            )
            raise CalibrationDataError(msg)
        return table.lazy()
    return merged


def metrics_from_statistics(
    stats: FrameT,
    *,
    by: str | Sequence[str] | None = None,
    metrics: Sequence[Metric | Diagnostic | ConsistencyMetric] = METRICS,
    average: TopLabelAverage | BinAverage | None = None,
    confidence: float | None = None,
    distance: Distance | None = None,
    reduction: Reduction | None = None,
) -> FrameT:
    """Finish calibration metrics per group from one or many statistics tables.

    Parameters
    ----------
    stats
        Output of :func:`bin_statistics`, or several of them concatenated (for
        example one per partition of a log, or yesterday's and today's): rows of the
        same group and bin are summed first.
    by
        The group keys of the result, any of the statistics' key columns; keys left
        out are summed over (statistics per ``("model", "segment")`` give metrics
        per ``"model"``). ``None``: one group, all rows.
    metrics
        Which of ``"ece"``, ``"mce"``, ``"rmsce"``, ``"brier"``, ``"log_loss"`` to
        compute, in this order (Brier and log-loss need the table's sums of them),
        or the tests and decompositions of binary tables (see
        :func:`polars_calib.summary`; their sums must be in the table). Quantile-bin
        statistics (Hosmer-Lemeshow's deciles of risk) finish one table but do not
        merge across partitions.
    average
        Top-label statistics: ``"macro"`` (``None``, the default) or ``"weighted"``
        mean over predicted classes (see :func:`polars_calib.top_label_ece`).
        Canonical statistics: ``"weighted"`` (``None``, the default: cells weighted
        by their share of the weight) or ``"bins"`` (the plain mean over non-empty
        cells), as :func:`polars_calib.canonical_ece`.
    confidence
        A table with bootstrap replicates (``bin_statistics(resampling=...)``): the
        level of the percentile intervals of each metric, in (0, 1); ``None``: no
        intervals. Consistency p-values (``"consistency_p"`` and friends in
        `metrics`) need the table's consistency replicates.
    distance
        Canonical statistics (``bin_statistics(reduction="canonical")``): ``"tv"``
        (``None``, the default), ``"cityblock"`` or ``"sqeuclidean"``, the distance
        ``d`` of :func:`polars_calib.canonical_ece`. Other tables take ``None``.
    reduction
        Statistics of probability vectors: the reduction they were computed with
        (``"confidence"``, ``bin_statistics``' default for vectors, ``"top_label"`` or
        ``"classwise"``), to name the columns as :func:`polars_calib.summary` names
        them: ``mean_confidence``, ``accuracy`` and ``<reduction>_ece`` (``_mce``,
        ``_rmsce``, and their bounds). ``None`` (default): the names below. The table
        does not record it: a confidence table looks like a binary one.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `stats`; one row per group, sorted by the keys: the keys,
        ``count`` (Int64, rows used), ``refused`` (Int64, rows refused),
        ``mean_predicted`` and ``observed`` (Float64, the weighted mean probability
        and fraction of positives; for vector statistics, the mean confidence and
        the accuracy), then one Float64 column per metric, named after it (with
        `confidence`, followed by ``<metric>_lower`` and ``<metric>_upper``). A group
        with refused rows, or with no used row, has null metrics. Canonical
        statistics give the keys, ``count``, ``refused`` and the metrics (the means
        are vectors: no ``mean_predicted`` or ``observed``).

    Raises
    ------
    CalibrationDataError
        `stats` is not a statistics table, or (a DataFrame) holds the same bin with
        different edges: quantile statistics of several partitions cannot be merged
        (nor canonical statistics of different ``n_bins``). A LazyFrame gives such a
        group null metrics.
    ValueError
        A `distance` for a table that is not canonical; an `average` or a metric the
        table cannot finish.

    Notes
    -----
    With ``W_b = weight``, ``gap_b = (sum_y - sum_p) / W_b`` and ``W = sum_b W_b``,
    ECE is ``sum_b |sum_y - sum_p| / W``; Brier is ``sum(sum_squared_error) / W`` and
    log-loss ``sum(sum_log_loss) / W``: the expressions' finisher on summed
    statistics.

    Canonical statistics: per cell ``b`` of weight ``W_b > 0``,
    ``d_b = d(P_b, Y_b)`` with ``P_b = sum_p_k / W_b`` and ``Y_b = sum_y_k / W_b``
    over the classes ``k``; ``ece = sum_b (W_b / W) d_b`` (:func:`polars_calib.canonical_ece`),
    ``rmsce = sqrt(sum_b (W_b / W) d_b**2)`` and ``mce = max_b d_b`` (the binary
    RMSCE and MCE for ``d(a, b) = |a - b|``); with ``average="bins"``, plain means
    over the non-empty cells instead of weighted ones. ``brier`` and ``log_loss``
    are the multi-class scores.

    See Also
    --------
    bin_statistics, reliability_from_statistics

    Examples
    --------
    Statistics of two days, merged:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> day1 = pl.DataFrame({"p": [0.1, 0.3, 0.8], "y": [0, 1, 1]})
    >>> day2 = pl.DataFrame({"p": [0.6, 0.9], "y": [0, 1]})
    >>> stats = pl.concat([pc.bin_statistics(day, "p", "y", n_bins=2) for day in (day1, day2)])
    >>> pc.metrics_from_statistics(stats, metrics=["ece", "brier"])
    shape: (1, 6)
    ┌───────┬─────────┬────────────────┬──────────┬──────┬───────┐
    │ count ┆ refused ┆ mean_predicted ┆ observed ┆ ece  ┆ brier │
    │ ---   ┆ ---     ┆ ---            ┆ ---      ┆ ---  ┆ ---   │
    │ i64   ┆ i64     ┆ f64            ┆ f64      ┆ f64  ┆ f64   │
    ╞═══════╪═════════╪════════════════╪══════════╪══════╪═══════╡
    │ 5     ┆ 0       ┆ 0.54           ┆ 0.6      ┆ 0.18 ┆ 0.182 │
    └───────┴─────────┴────────────────┴──────────┴──────┴───────┘

    The same as one pass over both days:

    >>> pl.concat([day1, day2]).select(
    ...     ece=pc.ece("p", "y", n_bins=2), brier=pc.brier("p", "y")
    ... )
    shape: (1, 2)
    ┌──────┬───────┐
    │ ece  ┆ brier │
    │ ---  ┆ ---   │
    │ f64  ┆ f64   │
    ╞══════╪═══════╡
    │ 0.18 ┆ 0.182 │
    └──────┴───────┘
    """
    keys = GroupKeys(by).names
    names = check_metrics(metrics, tests=True)
    if confidence is not None:
        check_confidence(confidence)
    if reduction is not None:
        check_choice("reduction", reduction, REDUCTIONS)
    if _is_canonical(stats):
        distance, bin_average = check_distance(distance or "tv", average or "weighted")
        check_canonical_metrics(names)
        if confidence is not None or reduction is not None:
            msg = (
                "canonical statistics have no replicates and no reduction: `confidence` "
                "and `reduction` must be None"
            )
            raise ValueError(msg)
        return same_kind(stats, canonical_metrics(stats, keys, names, distance, bin_average))
    top_label_average = top_label_choice(average, distance)
    schema = _statistics_frame(stats, keys).collect_schema()
    check_diagnostics(names, None, "class" in schema)
    missing = [f"sum_{term}" for term in terms_for(names)]
    missing = [name for name in dict.fromkeys(missing) if name not in schema]
    if missing:
        msg = f"`stats` has no {', '.join(missing)}: compute it with `metrics` including them"
        raise CalibrationDataError(msg)
    resampled = bool(replicate_keys(schema.names()))
    if not resampled and (confidence is not None or set(names) & set(TESTED_METRIC)):
        msg = (
            "`stats` has no replicates: intervals and consistency p-values need "
            "`bin_statistics(..., resampling=...)`"
        )
        raise CalibrationDataError(msg)
    merged = _merged(stats, keys)
    if resampled:
        table = finish_resampled(merged, keys, names, top_label_average, confidence)
    else:
        table = finish_metrics(merged, keys, names, top_label_average)
    return same_kind(stats, summary_names(table, reduction))


def summary_names(table: pl.LazyFrame, reduction: str | None) -> pl.LazyFrame:
    """Name a vector table's finished columns as a summary does (`reduction` None: as they are).

    The means become ``mean_confidence`` and ``accuracy``, the binned metrics (and their
    bounds) ``<reduction>_ece``, ``<reduction>_mce``, ``<reduction>_rmsce``.
    """
    if reduction is None:
        return table
    renamed = {"mean_predicted": "mean_confidence", "observed": "accuracy"}
    columns = table.collect_schema().names()
    for m in ("ece", "mce", "rmsce"):
        renamed |= {
            f"{m}{end}": f"{reduction}_{m}{end}"
            for end in ("", "_lower", "_upper") if f"{m}{end}" in columns
        }  # fmt: skip
    return table.rename(renamed)


def top_label_choice(average: object, distance: object) -> TopLabelAverage:
    """`average` of a table that is not canonical (``None``: ``"macro"``); no `distance`."""
    if distance is not None:
        msg = f"`distance` is for reduction='canonical' (its cells), got {distance!r}"
        raise ValueError(msg)
    if average is None:
        return "macro"
    return cast(TopLabelAverage, check_choice("average", average, TOP_LABEL_AVERAGES))


def _is_canonical(stats: object) -> bool:
    """Whether `stats` is a canonical table (it has a ``cell`` column)."""
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        return False  # _statistics_frame says why
    return CELL in stats.collect_schema().names()


def canonical_metrics(
    stats: FrameT, keys: list[str], metrics: Sequence[str], distance: Distance,
    average: BinAverage,
) -> pl.LazyFrame:
    """Merge canonical tables and finish their metrics; a DataFrame whose grids clash raises."""
    lf = stats.lazy()
    schema = lf.collect_schema().names()
    missing = [n for n in (*keys, "n_bins", *SUMS[:2]) if n not in schema]
    missing += [f"sum_{t}" for t in terms_for(metrics) if f"sum_{t}" not in schema]
    if missing:
        msg = (
            f"`stats` is not a canonical statistics table able to give {list(metrics)} "
            f"(see `bin_statistics`): missing column(s) {', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    merged = merge_cells(lf, keys)
    if isinstance(stats, pl.DataFrame):
        table = merged.collect()
        grid = pl.struct(_grid_columns(table.columns))
        grids = table.group_by(keys or pl.lit(True)).agg(grid.n_unique().alias("grids"))
        if grids.height and grids["grids"].max() > 1:  # type: ignore[operator]
            msg = (
                "`stats` holds canonical statistics of different `n_bins` or `closed` for "
                "one group: their cells cannot be merged"
            )
            raise CalibrationDataError(msg)
        merged = table.lazy()
    return finish_cells(merged, keys, metrics, distance, average)


def reliability_from_statistics(
    stats: FrameT,
    *,
    by: str | Sequence[str] | None = None,
    confidence: float = 0.95,
) -> FrameT:
    """The reliability table per group from one or many statistics tables.

    Parameters
    ----------
    stats
        Output of :func:`bin_statistics`, or several concatenated; rows of the same
        group and bin are summed first. The table carries its bins: no ``n_bins``.
        A table with replicates (``bin_statistics(resampling=...)``) gives the
        reliability of its observed rows; the replicates are left out.
    by
        The group keys of the result, any of the statistics' key columns; keys left
        out are summed over. ``None``: one group, all rows.
    confidence
        Confidence level of the Wilson interval on the observed fraction.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `stats`, with the columns of :func:`polars_calib.reliability`.

    Raises
    ------
    CalibrationDataError
        As :func:`metrics_from_statistics`.

    See Also
    --------
    bin_statistics, metrics_from_statistics

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.3, 0.8, 0.6, 0.9], "y": [0, 1, 1, 0, 1]})
    >>> stats = pc.bin_statistics(df, "p", "y", n_bins=4)
    >>> pc.reliability_from_statistics(stats).select("bin", "upper", "count", "observed")
    shape: (4, 4)
    ┌─────┬───────┬───────┬──────────┐
    │ bin ┆ upper ┆ count ┆ observed │
    │ --- ┆ ---   ┆ ---   ┆ ---      │
    │ i32 ┆ f64   ┆ i64   ┆ f64      │
    ╞═════╪═══════╪═══════╪══════════╡
    │ 0   ┆ 0.25  ┆ 1     ┆ 0.0      │
    │ 1   ┆ 0.5   ┆ 1     ┆ 1.0      │
    │ 2   ┆ 0.75  ┆ 1     ┆ 0.0      │
    │ 3   ┆ 1.0   ┆ 2     ┆ 1.0      │
    └─────┴───────┴───────┴──────────┘
    """
    keys = GroupKeys(by).names
    z = check_confidence(confidence)
    if _is_canonical(stats):
        msg = (
            "`stats` is a canonical table (one row per cell of the simplex grid): "
            "reliability rows are per bin of a binary or reduced table"
        )
        raise ValueError(msg)
    return same_kind(stats, reliability_rows(_merged(_observed(stats), keys), keys, z))


def validate_statistics(
    stats: pl.DataFrame,
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    weight: str | None = None,
    reduction: TableReduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
) -> pl.DataFrame:
    """Raise if a collected statistics table of a LazyFrame counts refused rows.

    :func:`bin_statistics` of a DataFrame raises on refused rows; of a LazyFrame it
    returns a plan whose table counts them (a null-bin row per group). This gives a
    collected table the DataFrame's policy: it returns `stats` as it is, or raises
    :class:`~polars_calib.CalibrationDataError` naming each check and how many rows it
    refuses, counted by reading `data` again (only then). Classwise statistics whose
    vectors have different lengths raise too.

    Parameters
    ----------
    stats
        ``bin_statistics(data, ...).collect()`` (with or without replicates).
    data, prob, label, by, time, every, weight, reduction, sum_tol, pos_label
        The arguments `stats` was computed with, as :func:`bin_statistics`'s.

    Returns
    -------
    DataFrame
        `stats`.

    Raises
    ------
    CalibrationDataError
        `stats` counts refused rows (or a missing or mistyped column).

    See Also
    --------
    bin_statistics, polars_calib.validate

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.LazyFrame({"p": [0.2, 1.5, 0.7], "y": [0, 1, 1]})
    >>> stats = pc.bin_statistics(log, "p", "y", n_bins=2).collect()
    >>> pc.validate_statistics(stats, log, "p", "y")
    Traceback (most recent call last):
    ...
    polars_calib.validation.CalibrationDataError: invalid calibration data: column 'p': probability outside [0, 1] in 1 of 3 rows (e.g. 1.5)
    """
    prepared = prepare(
        data, prob, label, by=by, weight=weight, reduction=reduction, sum_tol=sum_tol,
        pos_label=pos_label, time=time, every=every, canonical=reduction == "canonical",
    )  # fmt: skip
    return check_statistics(
        prepared, stats, lambda checks: problem_counts(prepared.lf, checks).collect()
    )


def _observed(stats: FrameT) -> FrameT:
    """The observed rows of a table with replicates; any other table as it is."""
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        return stats  # _statistics_frame says why
    if "replicate" not in stats.collect_schema().names():
        return stats
    return stats.filter(pl.col("replicate").is_null()).drop("resampling", "replicate")
