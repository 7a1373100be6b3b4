"""The reference rows a threshold simulation draws from, at most ``SAMPLE_ROWS`` per group.

The simulation of :func:`~polars_calib._monitor.alarms.thresholds_for` draws each step's
row from the group's reference rows' ``(p, w)``, held in memory. A group with at most
:data:`SAMPLE_ROWS` reference rows gives all of them; a larger one a uniform sample
without replacement of exactly ``SAMPLE_ROWS`` of them, chosen in one streaming pass
over the log: a row is kept when the counter-based word of (its position in the log,
:data:`SAMPLE_COUNTER`, the seed) (``_core/draws.py``) is below its group's limit, set
from the group's reference count so that a little more than ``SAMPLE_ROWS`` rows pass
(eight standard deviations more); of those, the ``SAMPLE_ROWS`` with the smallest words
(ties by position) are the sample: the smallest words of all the group's rows. The
sample depends on the log's rows and order and on the seed only: the same on every
run and engine, whatever the batches. Memory: groups × ``SAMPLE_ROWS``, never rows.
"""

from __future__ import annotations

import math

import polars as pl

from polars_calib._core.draws import with_row_key, with_words
from polars_calib._core.problem import Problem
from polars_calib._core.validation import CalibrationDataError
from polars_calib._monitor.batched import GROUP
from polars_calib._monitor.cusum import used_rows

__all__ = [
    "REF",
    "REFERENCE_ROWS",
    "SAMPLE_COUNTER",
    "SAMPLE_ROWS",
    "reference_count",
    "reference_sample",
]

REF = "__calib_reference__"
"""The column flagging a log's reference rows (``reference=``; every row when None)."""
REFERENCE_ROWS = "__calib_reference_rows__"
"""A group's reference rows with a probability and a label (in the groups' table)."""
SAMPLE_ROWS = 65_536
"""Reference rows per group a simulation draws from, at most. A sample of n rows moves
the law of the chart's step, so the ARL0 at a given threshold, by about 1 / sqrt(n)
times a coefficient of variation near 1: at 65,536 rows, by 0.1 to 0.2% (a standard
deviation; Brook and Evans' ARL at ARL0 = 10,000 of 20 samples of 2M rows, for p ~
Beta(2, 5), uniform, or between 0.001 and 0.01: ``docs/monitoring.md``), a twentieth
of the simulation's own standard error, about 4% at the defaults; a sample four times
smaller would still be a tenth. Memory: about 30 bytes a row (a few times that while a
group's charts are simulated), 2 MB a group."""
SAMPLE_COUNTER = 4
"""The counter of the sample's words (the excursions' draws use 2 and 3)."""
_SPARE = 8.0
"""Standard deviations of a group's kept count above ``SAMPLE_ROWS``: fewer rows pass
with a probability of about 2e-15 (then the sample is the rows that passed)."""
_POSITION, _WORD = "__calib_position__", "__calib_word__"
_LIMIT = "__calib_limit__"


def reference_count(problem: Problem) -> pl.Expr:
    """In an aggregation over a log holding ``REF``: its reference rows with a
    probability and a label (:data:`REFERENCE_ROWS`)."""
    return _is_reference(problem).sum().cast(pl.Int64).alias(REFERENCE_ROWS)


def _is_reference(problem: Problem) -> pl.Expr:
    """True on a reference row the charts use (a probability, a label, not refused)."""
    return used_rows(problem) & pl.col(REF).fill_null(False)


def _limits(groups: pl.DataFrame) -> pl.DataFrame:
    """Per group (``GROUP`` and :data:`REFERENCE_ROWS`), the limit of a row's word
    (Int64): ``2**32`` (every row) up to ``SAMPLE_ROWS`` rows, else a rate a little
    above ``SAMPLE_ROWS / rows`` times ``2**32``."""
    spare = SAMPLE_ROWS + _SPARE * math.sqrt(SAMPLE_ROWS)
    rows = pl.col(REFERENCE_ROWS)
    rate = pl.when(rows > SAMPLE_ROWS).then(spare / rows).otherwise(1.0).clip(upper_bound=1.0)
    limit = (rate * 4294967296.0).ceil().cast(pl.Int64)
    return groups.select(GROUP, limit.alias(_LIMIT))


def reference_sample(
    lf: pl.LazyFrame,
    problem: Problem,
    keys: list[str],
    groups: pl.DataFrame,
    seed: int,
) -> pl.DataFrame:
    """Per group of `groups`, the ``(p, w)`` of its reference rows (at most
    ``SAMPLE_ROWS``, see the module), sorted by ``GROUP``, ``p`` and ``w``.

    `lf` is the log in its order (the keys, the inputs and ``REF``); `groups` holds
    ``GROUP``, the keys and, when counted already (:func:`reference_count`, in the
    pass that found the groups), :data:`REFERENCE_ROWS`; the rows of other groups are
    left out. A group without a reference row raises :class:`CalibrationDataError`.
    """
    if REFERENCE_ROWS not in groups.columns:
        counts = _numbered(lf, groups, keys).group_by(GROUP).agg(reference_count(problem))
        counted = counts.collect(engine="streaming")
        groups = groups.join(counted, on=GROUP, how="left").with_columns(
            pl.col(REFERENCE_ROWS).fill_null(0)
        )
    if missing := int((groups[REFERENCE_ROWS] == 0).sum()):
        msg = (
            f"invalid calibration data: {missing} of {groups.height} groups have no "
            "reference row with a probability and a label to simulate thresholds from"
        )
        raise CalibrationDataError(msg)
    weight = problem.weight if problem.weight is not None else pl.lit(1.0)
    columns: list[str | pl.Expr] = [GROUP, problem.prob.alias("p"), weight.alias("w")]
    sampled = bool((groups[REFERENCE_ROWS] > SAMPLE_ROWS).any())
    if sampled:  # the position is the row's in the log: numbered before any filter
        lf = lf.with_row_index(_POSITION)
    rows = _numbered(lf, groups, keys).filter(_is_reference(problem))
    if not sampled:
        return rows.select(columns).collect(engine="streaming").sort(GROUP, "p", "w")
    rows = with_row_key(rows, pl.col(_POSITION), seed, ("__calib_h1__", "__calib_h2__"))
    rows = with_words(rows, ("__calib_h1__", "__calib_h2__"), {_WORD: SAMPLE_COUNTER})
    kept = (
        rows.join(_limits(groups).lazy(), on=GROUP)
        .filter(pl.col(_WORD) < pl.col(_LIMIT))
        .select(*columns, _WORD, _POSITION)
        .collect(engine="streaming")
    )
    first = pl.int_range(pl.len()).over(GROUP) < SAMPLE_ROWS
    chosen = kept.sort(GROUP, _WORD, _POSITION).filter(first)
    return chosen.select(GROUP, "p", "w").sort(GROUP, "p", "w")


def _numbered(lf: pl.LazyFrame, groups: pl.DataFrame, keys: list[str]) -> pl.LazyFrame:
    """`lf`'s rows of the groups of `groups`, with their number ``GROUP``."""
    if not keys:
        return lf.with_columns(pl.lit(0, pl.Int64).alias(GROUP))
    return lf.join(groups.lazy().select(*keys, GROUP), on=keys, how="inner", nulls_equal=True)
