"""Resampling: bootstrap intervals and the consistency test, as replicates of the table.

Both methods are a ``replicate`` key on the one statistics table
(:func:`polars_calib._table.build.statistics_query`): each used row contributes to every
replicate through a draw that is a pure function of (row identity, replicate, seed)
(:mod:`polars_calib._core.draws`), so the replicate sums are plain sums, computed in the
same aggregation as the observed ones, mergeable across partitions, and reproducible
on any engine.

* **Poisson bootstrap** (``resampling = "bootstrap"``): in replicate ``r`` each row's
  weight is multiplied by ``k ~ Poisson(1)``. A multinomial bootstrap (draw ``n`` rows
  with replacement) needs the group size ``n`` before the first draw and couples all
  of a group's rows, so it cannot be summed in one pass, streamed, or merged across
  partitions; the Poisson bootstrap draws each row on its own, and its resample size
  varies around ``n`` (Hanley & MacGibbon 2006; Chamandy et al. 2012), which changes
  the intervals by ``O(1/n)``.
* **Consistency resampling** (``resampling = "consistency"``): in replicate ``r`` each
  row's label is drawn from its own probability, ``y ~ Bernoulli(p)`` (for
  probability vectors, a class from the categorical ``q``), with ``p`` fixed: the
  distribution of a metric if the model were calibrated (Bröcker & Smith 2007).

Per-replicate metrics are the table's finisher with ``resampling`` and ``replicate``
as more group keys, so every metric the table can finish gets intervals; intervals
and p-values are a small aggregation over replicates (:func:`finish_resampled`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import polars as pl

from polars_calib._core.draws import poisson, with_words
from polars_calib._core.draws import with_row_key as _with_row_key
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import RESAMPLINGS, Resampling, check_choice
from polars_calib._core.problem import Problem

CHUNK = 64
"""Replicates aggregated together: one aggregation (one read of the data) per chunk.

Each replicate is a column of draws; a chunk bounds the columns held at once (the
in-memory engine materialises them) and the size of one query plan (whose planning
grows with its expressions)."""

KEY_WORDS = ("__polars_calib_h1__", "__polars_calib_h2__")

_ID = "__polars_calib_id__"

# The consistency test's replicates use counters 2**30 + r, apart from the bootstrap's.
_OFFSET: dict[str, int] = {"bootstrap": 0, "consistency": 2**30}

TESTED_METRIC = {
    "consistency_p": "ece",
    "consistency_p_mce": "mce",
    "consistency_p_rmsce": "rmsce",
    "consistency_p_brier": "brier",
    "consistency_p_log_loss": "log_loss",
}
"""The consistency test's p-values, by the metric each compares (``consistency_p``: ECE)."""

RESAMPLING_KEYS = frozenset(("resampling", "replicate"))
"""The key columns a table with replicates adds (reserved: `by` cannot use them)."""


def resamples_for(
    methods: Resampling | Sequence[Resampling] | None,
    n_resamples: int,
    seed: int,
    id: IntoExpr | None,  # noqa: A002
) -> list[Resample]:
    """Checked resampling requests, one per method (none for ``None``)."""
    if methods is None:
        return []
    listed = [methods] if isinstance(methods, str) else list(methods)
    return [
        Resample(check_choice("resampling", method, RESAMPLINGS), n_resamples, seed, id)  # type: ignore[arg-type]
        for method in dict.fromkeys(listed)
    ]


def check_n_resamples(n_resamples: object) -> int:
    """Return `n_resamples` if it is an int from 1 to 2**30."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int):
        msg = f"`n_resamples` must be a positive int, got {type(n_resamples).__name__} {n_resamples!r}"  # noqa: E501
        raise TypeError(msg)
    if not 1 <= n_resamples <= 2**30:
        msg = f"`n_resamples` must be an int from 1 to 2**30, got {n_resamples!r}"
        raise ValueError(msg)
    return n_resamples


def check_seed(seed: object) -> int:
    """Return `seed` if it is an int in ``[0, 2**32)``."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        msg = f"`seed` must be an int in [0, 2**32), got {type(seed).__name__} {seed!r}"
        raise TypeError(msg)
    if not 0 <= seed < 2**32:
        msg = f"`seed` must be an int in [0, 2**32), got {seed!r}"
        raise ValueError(msg)
    return seed


@dataclass(frozen=True)
class Resample:
    """A checked resampling request: method, replicates, seed and row identity.

    `id` is an integer column or expression identifying each row (``None``: the row's
    position in the frame, from 0). `first` is the number of the first replicate: the
    request is replicates ``first .. first + n_resamples - 1``, a part of a larger
    request whose other parts' tables merge with its own (a replicate's draws depend
    on its number, not on the part: :func:`word_columns`).
    """

    method: Resampling
    n_resamples: int = 1000
    seed: int = 0
    id: IntoExpr | None = None
    first: int = 0

    def __post_init__(self) -> None:
        check_n_resamples(self.n_resamples)
        check_seed(self.seed)
        if self.id is not None:
            to_expr(self.id, "id")
        first = self.first
        if isinstance(first, bool) or not isinstance(first, int):
            msg = f"`first` must be an int, got {type(first).__name__} {first!r}"
            raise TypeError(msg)
        if first < 0:
            msg = f"`first` must be a non-negative int, got {first!r}"
            raise ValueError(msg)
        if first + self.n_resamples > 2**30:
            msg = f"replicates must be numbered below 2**30, got {first} + {self.n_resamples}"
            raise ValueError(msg)

    @property
    def replicates(self) -> range:
        """The numbers of the requested replicates."""
        return range(self.first, self.first + self.n_resamples)


@dataclass(frozen=True)
class Rows:
    """The row expressions of a problem in a frame ready to aggregate."""

    p: pl.Expr
    y: pl.Expr
    w: pl.Expr | None
    refused: pl.Expr
    present: pl.Expr
    terms: dict[str, pl.Expr]
    ok: pl.Expr | None = None
    """The problem's verdict when it has one (see :attr:`verdict`)."""

    @property
    def verdict(self) -> pl.Expr:
        """True for a used row, false for a refused one, null for an ignored one."""
        if self.ok is not None:
            return self.ok
        return pl.when(self.refused).then(False).when(self.present).then(True)

    def weighted(self, value: pl.Expr) -> pl.Expr:
        """`value` times the weight (unchanged when unweighted)."""
        return value if self.w is None else value * self.w

    def sums(self) -> list[pl.Expr]:
        """The observed sums of the statistics table."""
        sums = [
            pl.len().cast(pl.Int64).alias("count"),
            self.weighted(self.p).sum().alias("sum_p"),
            self.weighted(self.y).sum().alias("sum_y"),
            *(self.weighted(t).sum().alias(f"sum_{name}") for name, t in self.terms.items()),
        ]
        if self.w is not None:
            sums.append(self.w.sum().alias("weight"))
        return sums


def with_row_key(lf: pl.LazyFrame, resamples: Sequence[Resample]) -> pl.LazyFrame:
    """`lf` with the two words of each row's key (:func:`polars_calib._core.draws.with_row_key`)."""
    first = resamples[0]
    if any((r.seed, r.id) != (first.seed, first.id) for r in resamples):
        msg = "the resamplings of one table share their `seed` and `id`"
        raise ValueError(msg)
    if first.id is None:
        lf = lf.with_row_index(_ID)
    else:
        identity = to_expr(first.id, "id")
        dtype = lf.select(identity).collect_schema().dtypes()[0]
        if not dtype.is_integer():
            msg = (
                f"`id` must be an integer column or expression, got {dtype}; a string id "
                "can be hashed first (`pl.col(id).hash()`, stable within a Polars version)"
            )
            raise TypeError(msg)
        lf = lf.with_columns(identity.alias(_ID))
    return _with_row_key(lf, pl.col(_ID), first.seed, KEY_WORDS).drop(_ID)


def chunks(replicates: range, size: int = CHUNK) -> Iterator[range]:
    """The `replicates` (a range of step 1) in chunks of `size` (:data:`CHUNK`)."""
    for start in range(replicates.start, replicates.stop, size):
        yield range(start, min(replicates.stop, start + size))


def word_columns(spec: Resample, replicates: range) -> dict[str, int]:
    """The columns of a chunk's random words, with their counters."""
    return {f"__w{r}": _OFFSET[spec.method] + r for r in replicates}


def with_replicate_words(lf: pl.LazyFrame, spec: Resample, replicates: range) -> pl.LazyFrame:
    """`lf` (holding the row key) with a chunk's words (:func:`polars_calib._core.draws.word`)."""
    return with_words(lf, KEY_WORDS, word_columns(spec, replicates))


def _word(spec: Resample, replicate: int) -> pl.Expr:
    return pl.col(f"__w{replicate}")


def drawn_columns(
    spec: Resample, replicates: range, problem: Problem, terms: Sequence[str]
) -> dict[str, pl.Expr]:
    """Per-row columns a chunk of consistency replicates draws (none for the bootstrap).

    Binary problems: the drawn label of each replicate, and per term ``t`` its value at
    label 0 and its change at label 1 (every term is affine in a 0/1 label, so a
    replicate's sum is ``sum(t0) + sum(y_r * (t1 - t0))``: no logarithm per replicate).
    Vectors: each replicate's label (whether the drawn class is the predicted one, or
    one-hot per class) and terms, from the problem rebuilt with the drawn class.
    """
    if spec.method == "bootstrap":
        return {}
    assert problem.draw is not None and problem.relabel is not None
    columns: dict[str, pl.Expr] = {}
    if problem.binary:
        at0, at1 = problem.relabel(pl.lit(0.0)), problem.relabel(pl.lit(1.0))
        for name in terms:
            columns[f"__t0_{name}"] = at0.terms[name]
            columns[f"__dt_{name}"] = at1.terms[name] - at0.terms[name]
        for r in replicates:
            columns[f"__y{r}"] = problem.draw(_word(spec, r))
        return columns
    for r in replicates:
        drawn = problem.relabel(problem.draw(_word(spec, r)))
        columns[f"__y{r}"] = drawn.label
        for name in terms:
            columns[f"__t{r}_{name}"] = drawn.terms[name]
    return columns


def replicate_sums(
    spec: Resample, replicates: range, frame: pl.LazyFrame, row: Rows, binary: bool
) -> tuple[pl.LazyFrame, list[pl.Expr], dict[str, str | None]]:
    """The frame with each replicate's row values, the sums, and the sums that vary.

    Replicate ``r``'s sums are named ``__r{r}_{name}``; the returned mapping names each
    varying sum and the column (if any) of its part common to all replicates. The
    observed row count is ``__count``; the consistency test keeps the weight and
    ``sum_p`` (the probabilities do not change), summed once under their own names.
    """
    sums = [pl.len().cast(pl.Int64).alias("__count")]
    if spec.method == "bootstrap":
        # Row values shared by the replicates, computed once (no common subexpressions
        # are shared inside an aggregation), then each replicate's Poisson multiplier.
        base = {"sum_p": row.weighted(row.p), "sum_y": row.weighted(row.y)}
        base |= {f"sum_{name}": row.weighted(t) for name, t in row.terms.items()}
        if row.w is not None:
            base["weight"] = row.w
        frame = frame.with_columns(value.alias(f"__v_{name}") for name, value in base.items())
        frame = frame.with_columns(
            poisson(_word(spec, r)).cast(pl.Float64).alias(f"__k{r}") for r in replicates
        )
        for r in replicates:
            k = pl.col(f"__k{r}")
            sums.append(k.sum().cast(pl.Int64).alias(f"__r{r}_count"))
            sums.extend((k * pl.col(f"__v_{name}")).sum().alias(f"__r{r}_{name}") for name in base)
        return frame, sums, dict.fromkeys(["count", *base])
    if row.w is not None:
        sums.append(row.w.sum().alias("weight"))
    sums.append(row.weighted(row.p).sum().alias("sum_p"))
    terms = list(row.terms)
    varying: dict[str, str | None] = {"sum_y": None}
    if binary:
        if row.w is not None:
            frame = frame.with_columns(
                (pl.col(f"__dt_{name}") * row.w).alias(f"__dt_{name}") for name in terms
            )
        for name in terms:
            sums.append(row.weighted(pl.col(f"__t0_{name}")).sum().alias(f"__t0_{name}"))
            varying[f"sum_{name}"] = f"__t0_{name}"
        for r in replicates:
            y = pl.col(f"__y{r}")
            sums.append(row.weighted(y).sum().alias(f"__r{r}_sum_y"))
            sums.extend(
                (y * pl.col(f"__dt_{name}")).sum().alias(f"__r{r}_sum_{name}") for name in terms
            )
        return frame, sums, varying
    varying |= dict.fromkeys(f"sum_{name}" for name in terms)
    for r in replicates:
        sums.append(row.weighted(pl.col(f"__y{r}")).sum().alias(f"__r{r}_sum_y"))
        sums.extend(
            row.weighted(pl.col(f"__t{r}_{name}")).sum().alias(f"__r{r}_sum_{name}")
            for name in terms
        )
    return frame, sums, varying


def long_table(
    wide: pl.LazyFrame,
    spec: Resample,
    replicates: range,
    keys: list[str],
    names: list[str],
    varying: dict[str, str | None],
    weighted: bool,
) -> pl.LazyFrame:
    """A chunk's wide sums as rows: the keys, ``resampling``, ``replicate``, bin, sums.

    One ``select`` per replicate (its sums renamed, plus their common parts), the
    selects concatenated: each replicate's sums are read from their own row of the
    wide table, so nothing is joined or parsed. (An ``unpivot`` per varying sum, joined
    on the keys, bin and replicate, cost a hash join of every row per sum: 13 s for
    730,000 keys x 4 replicates, against 0.01 s; ``concat_list`` over 64 columns is
    slower still.)
    """
    wide = wide.cache()  # read by every replicate's select: one aggregation

    def column(replicate: int, name: str) -> pl.Expr:
        if name not in varying:
            # Not resampled: the observed sum (the count as ``__count``).
            return pl.col("__count" if name == "count" else name)
        value = pl.col(f"__r{replicate}_{name}")
        common = varying[name]
        if common is not None:
            value = value + pl.col(common)
        if name == "count":
            # Refused rows are counted, not resampled: their row keeps the observed count.
            value = pl.when(pl.col("bin") == -1).then(pl.col("__count")).otherwise(value)
        return value

    # As the observed sums: ``weight`` only when weighted (completion adds the count).
    summed = [name for name in names if weighted or name != "weight"]
    return pl.concat(
        [
            wide.select(
                *keys,
                pl.lit(spec.method, pl.String).alias("resampling"),
                pl.lit(replicate, pl.Int32).alias("replicate"),
                "bin",
                *(column(replicate, name).alias(name) for name in summed),
            )
            for replicate in replicates
        ],
        how="vertical",
    )


def replicate_keys(columns: Sequence[str]) -> list[str]:
    """``["resampling", "replicate"]`` for a table with replicates, else none."""
    return ["resampling", "replicate"] if "replicate" in columns else []
