"""Reproducible random draws as Polars integer expressions: a counter-based hash.

Every draw of the resampling methods (Poisson bootstrap weights, labels of the
consistency test) is a pure function of three integers, the **row identity**, the
**replicate** and the **seed**, so that any engine, partitioning, thread count or
row order gives the same draws for the same rows. No state, no generator object:
each draw is a hash, written with integer operations that never leave the signed
64-bit range (every value is a 32-bit word held in an Int64; every product is below
``2**63``), so Spark in ANSI mode, numpy and SQL engines can compute it bit for bit.

The algorithm (``MASK = 2**32 - 1``; ``>>`` is a shift of a non-negative value, the
same as floor division by a power of two; ``^`` exclusive or; ``&`` and):

``mix(x)``, for ``0 <= x < 2**32`` (Chris Wellons' *lowbias32*)::

    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & MASK                        # 0x7FEB352D < 2**31
    x = x ^ (x >> 15)
    x = (x * 0x046CA68B + (x & 1) * 2**31) & MASK      # = x * 0x846CA68B mod 2**32
    x = x ^ (x >> 16)

The row key, from the identity ``id`` (a signed 64-bit integer, two's complement)
and the seed ``0 <= seed < 2**32``::

    lo, hi = id & MASK, (id >> 32) & MASK        # arithmetic shift: floor(id / 2**32)
    s1 = mix(seed ^ 0x9E3779B9)
    s2 = mix(s1 ^ 0x85EBCA6B)
    h1 = mix(mix(lo ^ s1) ^ hi)
    h2 = mix(mix(hi ^ s2) ^ lo)

The 32-bit word of replicate ``r`` (``0 <= r < 2**31``), a Weyl sequence through the
mixer, xored with the second half of the key::

    u32(r) = mix((h1 + ((r * 0x9E3779B9) & MASK)) & MASK) ^ h2

and the uniform is ``u = u32 / 2**32`` in ``[0, 1)``, with 32 bits of resolution.
``s1``, ``s2`` and ``(r * 0x9E3779B9) & MASK`` are constants of the query (computed
in Python); per row, the key costs four mixes, and each replicate one more.

From the word:

* **Poisson(1)**, by inversion: ``k = #{j in 1..12 : u32 >= T_j}`` with the integer
  thresholds ``T_j = floor(2**32 * P(K < j))`` (:data:`POISSON_THRESHOLDS`): each probability
  is exact to ``2**-32``, and ``k <= 12`` (``P(K >= 13)``, about 1.1e-10, is below
  the resolution ``2**-32``, about 2.3e-10).
* **Bernoulli(p)**: ``u32 < p * 2**32`` compared as doubles (both sides are exact: an
  integer below ``2**53`` and ``p`` scaled by a power of two), so ``p = 0`` never
  and ``p = 1`` always draws 1.
* **Categorical(q)** (a probability vector): the class ``c`` is the number of
  cumulative sums ``q_0 + ... + q_j`` (``j < K - 1``) at or below ``u``, the inverse of
  the distribution function (the last class takes the rest of ``[0, 1)``).

Two rows with equal identities get equal draws; distinct identities collide on the
64-bit key ``(h1, h2)`` with probability about ``2**-64``. Rows whose keys differ by
a multiple of the Weyl constant share a draw at shifted replicates, xored with
different words: no statistical dependence appears in the tests
(``tests/test_resampling.py`` checks uniformity and independence across replicates
and rows).

References
----------
C. Wellons (2018), "Prospecting for hash functions" (lowbias32).
J. K. Salmon et al. (2011), "Parallel random numbers: as easy as 1, 2, 3", SC'11:
counter-based generators.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import polars as pl

__all__ = [
    "MASK",
    "POISSON_THRESHOLDS",
    "bernoulli",
    "categorical",
    "mix",
    "mix_int",
    "mixed",
    "poisson",
    "seed_words",
    "uniform",
    "with_row_key",
    "with_words",
    "word",
    "word_int",
]

MASK = 0xFFFFFFFF
_M1, _M2_LOW = 0x7FEB352D, 0x046CA68B  # 0x846CA68B = 2**31 + 0x046CA68B
_GOLDEN, _SECOND = 0x9E3779B9, 0x85EBCA6B
_TWO_32 = 4294967296.0


def _poisson_thresholds(count: int = 12) -> tuple[int, ...]:
    """``floor(2**32 * P(K < j))`` for j = 1 .. count, K ~ Poisson(1), exact in rationals."""
    from fractions import Fraction

    # e^-1 to 40 digits; P(K < j) = e^-1 sum_{i<j} 1/i!.
    e_inv = Fraction(3678794411714423215955237701614608674458, 10**40)
    thresholds, cumulative = [], Fraction(0)
    for j in range(1, count + 1):
        cumulative += Fraction(1, math.factorial(j - 1))
        thresholds.append(math.floor(e_inv * cumulative * 2**32))
    return tuple(thresholds)


POISSON_THRESHOLDS = _poisson_thresholds()
"""``T_j = floor(2**32 * P(K < j))``, j = 1..12: a word at or above ``T_j`` draws ``k >= j``."""


def mix_int(x: int) -> int:
    """:func:`mix` on a Python int (the reference, and the query's constants)."""
    x ^= x >> 16
    x = (x * _M1) & MASK
    x ^= x >> 15
    x = (x * _M2_LOW + (x & 1) * 2**31) & MASK
    return x ^ (x >> 16)


def mix(x: pl.Expr) -> pl.Expr:
    """The 32-bit mixer of the module as Int64 operations (`x` in ``[0, 2**32)``).

    One expression, for a few values; a frame's columns go through :func:`mixed`.
    """
    x = x ^ (x // 65536)
    x = (x * _M1) & MASK
    x = x ^ (x // 32768)
    x = (x * _M2_LOW + (x & 1) * 2**31) & MASK
    return x ^ (x // 65536)


_STEPS: tuple[Callable[[pl.Expr], pl.Expr], ...] = (
    lambda x: x ^ (x // 65536),
    lambda x: (x * _M1) & MASK,
    lambda x: x ^ (x // 32768),
    lambda x: (x * _M2_LOW + (x & 1) * 2**31) & MASK,
    lambda x: x ^ (x // 65536),
)
"""The five steps of :func:`mix`, each reading its input (twice) once."""


def mixed(lf: pl.LazyFrame, names: Sequence[str]) -> pl.LazyFrame:
    """`lf` with the word columns `names` replaced by their :func:`mix`, step by step.

    Each step of the mixer reads its input twice, so one expression of nested mixes
    doubles at every step (a row key's would hold thousands of nodes, which Polars
    then plans and deduplicates); one ``with_columns`` per step keeps every
    expression a few nodes deep.
    """
    for step in _STEPS:
        lf = lf.with_columns(step(pl.col(name)).alias(name) for name in names)
    return lf


def with_row_key(
    lf: pl.LazyFrame, identity: pl.Expr, seed: int, names: tuple[str, str]
) -> pl.LazyFrame:
    """`lf` with the row key ``(h1, h2)`` (see the module) as the columns `names`."""
    s1, s2 = seed_words(seed)
    h1, h2 = names
    lo, hi = f"{h1}_lo", f"{h1}_hi"
    ident = identity.cast(pl.Int64)
    lf = lf.with_columns((ident & MASK).alias(lo), ((ident // 2**32) & MASK).alias(hi))
    lf = mixed(lf.with_columns((pl.col(lo) ^ s1).alias(h1), (pl.col(hi) ^ s2).alias(h2)), names)
    lf = lf.with_columns((pl.col(h1) ^ pl.col(hi)).alias(h1), (pl.col(h2) ^ pl.col(lo)).alias(h2))
    return mixed(lf, names).drop(lo, hi)


def with_words(lf: pl.LazyFrame, key: tuple[str, str], counters: Mapping[str, int]) -> pl.LazyFrame:
    """`lf` with the word of each counter (a replicate) as a column, named by `counters`."""
    h1, h2 = key
    lf = lf.with_columns(
        ((pl.col(h1) + ((counter * _GOLDEN) & MASK)) & MASK).alias(name)
        for name, counter in counters.items()
    )
    lf = mixed(lf, list(counters))
    return lf.with_columns((pl.col(name) ^ pl.col(h2)).alias(name) for name in counters)


def seed_words(seed: int) -> tuple[int, int]:
    """The two words ``s1``, ``s2`` a seed contributes to every row key."""
    s1 = mix_int(seed ^ _GOLDEN)
    return s1, mix_int(s1 ^ _SECOND)


def word(h1: pl.Expr, h2: pl.Expr, replicate: int) -> pl.Expr:
    """The 32-bit word (Int64) of `replicate` for rows keyed ``(h1, h2)`` (columns of
    :func:`with_row_key`), as one expression; a chunk of replicates is :func:`with_words`."""
    step = (replicate * _GOLDEN) & MASK
    return mix((h1 + step) & MASK) ^ h2


def word_int(identity: int, replicate: int, seed: int) -> int:
    """:func:`word` on Python ints: the reference any engine can check against."""
    s1, s2 = seed_words(seed)
    lo, hi = identity & MASK, (identity >> 32) & MASK
    h1 = mix_int(mix_int(lo ^ s1) ^ hi)
    h2 = mix_int(mix_int(hi ^ s2) ^ lo)
    return mix_int((h1 + ((replicate * _GOLDEN) & MASK)) & MASK) ^ h2


def uniform(word: pl.Expr) -> pl.Expr:
    """The word as a Float64 uniform in ``[0, 1)``."""
    return word.cast(pl.Float64) / _TWO_32


def poisson(word: pl.Expr) -> pl.Expr:
    """A Poisson(1) draw (Int64, 0 .. 12) from a word, by inversion with integer thresholds."""
    # A sum of comparisons, not ``search_sorted`` over a literal Series: that node
    # does not stream (it holds every row of the column in memory) and is slower.
    return pl.sum_horizontal((word >= threshold).cast(pl.Int64) for threshold in POISSON_THRESHOLDS)


def bernoulli(word: pl.Expr, p: pl.Expr) -> pl.Expr:
    """A Bernoulli(`p`) draw (Float64, 0.0 or 1.0) from a word: ``word < p * 2**32``."""
    return (word.cast(pl.Float64) < p * _TWO_32).cast(pl.Float64)


def categorical(word: pl.Expr, vectors: pl.Expr) -> pl.Expr:
    """A class drawn (Int64) from probability vectors (``List(Float64)``) by inversion.

    The number of cumulative sums ``q_0 + ... + q_j`` (``j < K - 1``) at or below the
    uniform: ``cumulative - u <= 0`` has the sign of ``cumulative <= u`` exactly (an
    IEEE difference is zero only between equal numbers).
    """
    cumulative = vectors.list.eval(pl.element().cum_sum()).list.head(vectors.list.len() - 1)
    below = (cumulative - uniform(word)).list.eval((pl.element() <= 0.0).sum())
    return below.list.first().cast(pl.Int64)
