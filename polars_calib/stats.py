"""Per-bin sufficient statistics and the finishers that turn them into metrics.

Every binned metric is a function of three numbers per bin: its total weight
``W_b`` (the row count when unweighted), and the weighted sums of predictions
``P_b`` and of outcomes ``Y_b``. The finishers below take those as per-bin
series and are shared by the expression forms (which build the series inside the
current group with a window over the bin index) and the frame forms (which read
them from a statistics table), so each metric has exactly one definition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TypeVar

import polars as pl

from polars_calib._exprs import IntoExpr, check_choice, check_n_bins, to_expr
from polars_calib.binning import Binning, uniform_edges
from polars_calib.validation import REFUSED, CalibrationDataError, validated

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

NORMS = ("l1", "l2", "max")

# float64 machine epsilon: log-loss clips probabilities to [EPS, 1 - EPS], as scikit-learn does.
EPS = 2.220446049250313e-16


@dataclass(frozen=True)
class Outcomes:
    """Predictions and 0/1 outcomes ready for binning.

    ``prob``, ``label`` and ``weight`` are Float64 and null on every row that is not
    used (a null probability, label or weight). ``invalid`` is a boolean scalar: true
    when the group holds a value that makes every metric meaningless (a probability
    outside [0, 1] or NaN, a label other than 0/1, a negative or NaN weight).
    """

    prob: pl.Expr
    label: pl.Expr
    weight: pl.Expr | None
    invalid: pl.Expr

    def weighted(self, value: pl.Expr) -> pl.Expr:
        """`value` times the row weight (unchanged when unweighted)."""
        return value if self.weight is None else value * self.weight

    def total_weight(self) -> pl.Expr:
        """Sum of the weights of the rows used (their count when unweighted)."""
        if self.weight is None:
            return self.prob.count().cast(pl.Float64)
        return self.weight.sum()


def _binary_columns(
    prob: IntoExpr, label: IntoExpr, weight: IntoExpr | None
) -> tuple[pl.Expr, pl.Expr, pl.Expr | None, pl.Expr]:
    """Probabilities, labels and weights as Float64, unmasked, and the `invalid` scalar."""
    p = to_expr(prob, "prob").cast(pl.Float64)
    y = to_expr(label, "label").cast(pl.Float64)
    # is_between is false for NaN and null for null; any() skips nulls.
    invalid = (~p.is_between(0.0, 1.0)).any() | (~((y == 0.0) | (y == 1.0))).any()
    w = None
    if weight is not None:
        w = to_expr(weight, "weight").cast(pl.Float64)
        invalid = invalid | (~((w >= 0.0) & w.is_finite())).any()
    return p, y, w, invalid


def binary_outcomes(prob: IntoExpr, label: IntoExpr, weight: IntoExpr | None) -> Outcomes:
    """Validate and mask a binary problem: probabilities of the positive class and 0/1 labels."""
    p, y, w, invalid = _binary_columns(prob, label, weight)
    # Out-of-range rows make the group null anyway; masking them keeps the binning
    # arithmetic (a cast to an integer bin) away from NaN and huge values.
    used = p.is_between(0.0, 1.0) & y.is_not_null()
    if w is not None:
        used = used & w.is_not_null()
        w = pl.when(used).then(w)
    return Outcomes(pl.when(used).then(p), pl.when(used).then(y), w, invalid)


def per_bin(value: pl.Expr, bins: pl.Expr, binning: Binning) -> pl.Expr:
    """Sum of `value` in each bin of the current group, one row per bin.

    Uniform bins use a window over the bin index, a hash aggregation whose cost
    does not grow with the number of bins; it runs in every context (select, over,
    group_by, dynamic and rolling windows) and in the streaming engine. Quantile
    bins depend on the group's quantiles, and Polars only accepts elementwise
    window keys inside aggregations, so they sum one filtered bin at a time.
    """
    if binning.strategy == "uniform":
        return value.sum().over(bins).filter(bins.is_first_distinct() & bins.is_not_null())
    return pl.concat_list([value.filter(bins == k).sum() for k in range(binning.n_bins)]).explode()


def calibration_error(
    gap_sum: pl.Expr, bin_weight: pl.Expr, total_weight: pl.Expr, norm: str
) -> pl.Expr:
    """Finish ECE (``l1``), RMSCE (``l2``) or MCE (``max``) from per-bin series.

    ``gap_sum`` is ``Y_b - P_b`` (or its negation: the norms ignore the sign) and ``bin_weight`` is ``W_b`` for each bin;
    ``total_weight`` is ``sum_b W_b``. Bins with zero weight contribute nothing;
    the result is null when the total weight is zero.
    """
    has_weight = bin_weight > 0.0
    if norm == "l1":
        value = gap_sum.abs().sum() / total_weight
    elif norm == "l2":
        value = ((gap_sum * gap_sum / bin_weight).filter(has_weight).sum() / total_weight).sqrt()
    else:
        value = (gap_sum / bin_weight).abs().filter(has_weight).max()
    return pl.when(total_weight > 0.0).then(value)


def binned_error(outcomes: Outcomes, binning: Binning, norm: str) -> pl.Expr:
    """Binned calibration error of validated outcomes; null for an invalid group."""
    bins = binning.index(outcomes.prob)
    # Every norm ignores the sign of the gap; predicted-minus-observed keeps the
    # probability as the expression's root, so the output is named after it.
    gap_sum = per_bin(outcomes.weighted(outcomes.prob - outcomes.label), bins, binning)
    if outcomes.weight is None:
        bin_weight = per_bin(outcomes.prob.is_not_null().cast(pl.Float64), bins, binning)
    else:
        bin_weight = per_bin(outcomes.weight, bins, binning)
    error = calibration_error(gap_sum, bin_weight, outcomes.total_weight(), norm)
    return pl.when(~outcomes.invalid).then(error)


RANGE_BINS = 40
"""Up to this many uniform bins, :func:`binary_binned_error` sums each bin directly."""


def bin_masks(p: pl.Expr, binning: Binning) -> list[pl.Expr]:
    """Per uniform bin, whether `p` (null or in [0, 1]) lies in it, from its exact edges.

    The same rule as :meth:`Binning.index` (edges ``k / B`` correctly rounded, the
    closure of `binning`), without computing an index: a null `p` is in no bin.
    """
    n_bins = binning.n_bins
    if n_bins == 1:
        return [p.is_not_null()]
    edges = uniform_edges(n_bins)
    right = binning.closed == "right"
    masks = [p <= edges[1] if right else p < edges[1]]
    for lower, upper in zip(edges[1:-2], edges[2:-1]):
        masks.append((p > lower) & (p <= upper) if right else (p >= lower) & (p < upper))
    masks.append(p > edges[-2] if right else p >= edges[-2])
    return masks


def binary_binned_error(
    prob: IntoExpr, label: IntoExpr, weight: IntoExpr | None, binning: Binning, norm: str
) -> pl.Expr:
    """Binned calibration error of a binary problem: :func:`binned_error` of its outcomes, faster.

    With uniform bins (at most :data:`RANGE_BINS` of them), each bin's sum is one
    masked sum, ``when(lower < p <= upper).then(p - y).sum()``, and the finisher
    works on those scalars: no bin index, no window (a hash aggregation over the
    rows), no masks for unused rows. Aggregations get no common-subexpression
    elimination, so every repeated subexpression would be computed again; here each
    row's work is a subtraction and two comparisons per bin. Nulls propagate instead
    of being masked: a null probability is in no bin, a null label or weight makes
    the row's gap null, which sums and counts skip. Out-of-range or NaN values make
    the group null through `invalid`. Other binnings use :func:`binned_error`.

    ``l2`` and ``max`` divide by each bin's weight, so they sum through ``filter``:
    in rolling and dynamic windows Polars sums a ``when/then`` column by sliding (adding
    the rows that enter, subtracting those that leave), which leaves a residue such as
    1e-17 in an empty bin; a filtered sum is computed per window, exactly.
    """
    if binning.strategy != "uniform" or binning.n_bins > RANGE_BINS:
        return binned_error(binary_outcomes(prob, label, weight), binning, norm)
    p, y, w, invalid = _binary_columns(prob, label, weight)
    gap = p - y  # predicted minus observed: named after the probability, as binned_error
    masks = bin_masks(p, binning)
    if w is None:
        weighted_gap, total = gap, gap.count().cast(pl.Float64)
    else:
        weighted_gap = gap * w
        used_weight = pl.when(gap.is_not_null()).then(w)
        total = used_weight.sum()
    if norm == "l1":
        sums = [pl.when(mask).then(weighted_gap).sum().abs() for mask in masks]
        value = pl.sum_horizontal(sums) / total
    else:
        terms = []
        for mask in masks:
            gap_sum = weighted_gap.filter(mask).sum()
            if w is None:
                bin_weight = gap.filter(mask).count().cast(pl.Float64)
            else:
                bin_weight = used_weight.filter(mask).sum()
            if norm == "l2":
                term = gap_sum.pow(2) / bin_weight
            else:
                term = gap_sum.abs() / bin_weight
            terms.append(pl.when(bin_weight > 0.0).then(term))
        if norm == "l2":
            value = (pl.sum_horizontal(terms) / total).sqrt()
        else:
            value = pl.max_horizontal(terms)
    # Not fill_nan: it makes Polars evaluate the aggregation several times slower.
    return pl.when(~invalid & (total > 0.0)).then(value)


def squared_error(prob: pl.Expr, label: pl.Expr) -> pl.Expr:
    """Per-row Brier term ``(p - y)^2``."""
    return (prob - label) ** 2


def log_loss_term(prob: pl.Expr, label: pl.Expr) -> pl.Expr:
    """Per-row log-loss ``-(y log p + (1 - y) log(1 - p))`` with p clipped to [EPS, 1 - EPS]."""
    p = prob.clip(EPS, 1.0 - EPS)
    return -(p.log() * label + (1.0 - p).log() * (1.0 - label))


def weighted_mean(outcomes: Outcomes, term: pl.Expr) -> pl.Expr:
    """Weighted mean of a per-row term over the rows used; null for an invalid or empty group."""
    total = outcomes.total_weight()
    mean = outcomes.weighted(term).sum() / total
    return pl.when(~outcomes.invalid & (total > 0.0)).then(mean)


def binary_row_mean(
    prob: IntoExpr,
    label: IntoExpr,
    weight: IntoExpr | None,
    term: Callable[[pl.Expr, pl.Expr], pl.Expr],
) -> pl.Expr:
    """:func:`weighted_mean` of ``term(p, y)`` over a binary problem's rows, unmasked.

    ``term`` must be null where ``p`` or ``y`` is (as :func:`squared_error` and
    :func:`log_loss_term` are): nulls propagate instead of being masked. The rows
    used are counted from ``p - y``, not from the term: without common-subexpression
    elimination in aggregations, every reference to the term computes it again
    (two logarithms a row for log-loss).
    """
    p, y, w, invalid = _binary_columns(prob, label, weight)
    value = term(p, y)
    present = p - y  # null where p or y is
    if w is None:
        total, weighted_sum = present.count().cast(pl.Float64), value.sum()
    else:
        total, weighted_sum = pl.when(present.is_not_null()).then(w).sum(), (value * w).sum()
    return pl.when(~invalid & (total > 0.0)).then(weighted_sum / total)


# --------------------------------------------------------------------------
# Frame level: a statistics table per (group, bin), and finishers reading it
# --------------------------------------------------------------------------

STATISTICS = ("count", "weight", "sum_p", "sum_y", "sum_squared_error", "sum_log_loss")
"""The summable columns of a statistics table, after the keys and ``bin``."""

METRICS = ("ece", "mce", "rmsce", "brier", "log_loss")

RELIABILITY = (
    "bin", "lower", "upper", "count", "mean_predicted", "observed", "gap",
    "observed_lower", "observed_upper",
)  # fmt: skip

_RESERVED = frozenset((*STATISTICS, *METRICS, *RELIABILITY, "window"))

# A constant key that stands for "the whole frame" when there are no group keys, so
# that an empty input gives an empty result (Polars' select would give one row).
_ALL = "__polars_calib_all__"

_NORM_OF = {"ece": "l1", "rmsce": "l2", "mce": "max"}


def key_names(by: str | Sequence[str] | None) -> list[str]:
    """The group-key column names of `by`; raise ``ValueError`` on a clash with an output."""
    keys = [] if by is None else [by] if isinstance(by, str) else list(by)
    for key in keys:
        if not isinstance(key, str):
            msg = f"`by` must be a column name or a sequence of them, got {key!r}"
            raise TypeError(msg)
        if key in _RESERVED:
            msg = f"`by` cannot hold {key!r}: the result has a column of that name"
            raise ValueError(msg)
    if len(set(keys)) != len(keys):
        msg = f"`by` names a column twice: {keys}"
        raise ValueError(msg)
    return keys


def check_metrics(metrics: Sequence[str]) -> list[str]:
    """`metrics` as a list, each one of :data:`METRICS`, else raise ``ValueError``."""
    if isinstance(metrics, str):
        metrics = [metrics]
    return [check_choice("metrics", metric, METRICS) for metric in metrics]


def check_confidence(confidence: float) -> float:
    """The normal quantile ``z`` of a two-sided interval at `confidence` in (0, 1)."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        msg = f"`confidence` must be a float in (0, 1), got {confidence!r}"
        raise TypeError(msg)
    if not 0.0 < confidence < 1.0:
        msg = f"`confidence` must be in (0, 1), got {confidence!r}"
        raise ValueError(msg)
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def used_rows(lf: pl.LazyFrame, outcomes: Outcomes) -> pl.LazyFrame:
    """The rows whose probability, label and weight are all present."""
    return lf.filter(outcomes.prob.is_not_null())


# Integer key dtypes whose values, times the number of bins plus the bin, are exact doubles.
_PACKABLE = (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32)
_NULL_KEY = 2**33  # stands for a null key in a packed key: outside every packable range
_PACKED = "__polars_calib_key_bin__"


def _packable_key(lf: pl.LazyFrame, keys: list[str], binning: Binning) -> str | None:
    """The last key that can carry the bin in one Float64 (see :func:`statistics_query`)."""
    if binning.n_bins > 2**19:  # |key * (B + 1) + bin| < 2**53
        return None
    schema = lf.collect_schema()
    packable = [key for key in keys if schema[key] in _PACKABLE]
    return packable[-1] if packable else None


def statistics_query(
    lf: pl.LazyFrame,
    prob: str,
    label: str,
    weight: str | None,
    keys: list[str],
    binning: Binning,
    metrics: Sequence[str] = METRICS,
) -> pl.LazyFrame:
    """The statistics table of the data (see :func:`bin_statistics`), screening it on the way.

    With uniform bins the table has one more column, :data:`~polars_calib.validation.REFUSED`:
    the rows holding a value the validation refuses (a probability outside [0, 1] or
    NaN, a label other than 0/1, a negative or non-finite weight) are gathered in
    one extra bin, ``n_bins``, flagged there, so that
    :func:`~polars_calib.validation.collect_validated` learns from the same pass over
    the data whether to count the problems (it drops the column). Valid data give no
    such row.

    Each row's bin is one ``when/then`` chain (refused, else unused, else the bin),
    so nothing is filtered or masked: the rows not used (a null probability, label
    or weight) make a null bin, dropped from the small result. Uniform bins are
    grouped as Float64 values (the integer cast is a pass of its own) and cast on the
    result. A hash aggregation over one key costs about half one over two columns,
    so the last key of an integer dtype up to 32 bits and the bin are packed into
    ``key * (n_bins + 1) + bin`` (exact in a Float64; a null key as 2**33), unpacked
    on the result. Quantile bins filter the rows used first (the edges are their
    quantiles) and have no screen. The Brier and log-loss sums are only computed
    when `metrics` asks for them (the log-loss term costs two logarithms a row).
    """
    p = pl.col(prob).cast(pl.Float64)
    y = pl.col(label).cast(pl.Float64)
    used = p.is_not_null() & y.is_not_null()
    # Null where a value is null, which when() takes as false.
    refused = ~p.is_between(0.0, 1.0) | ~((y == 0.0) | (y == 1.0))
    w = None
    if weight is not None:
        w = pl.col(weight).cast(pl.Float64)
        used = used & w.is_not_null()
        refused = refused | ~((w >= 0.0) & w.is_finite())

    def weighted(value: pl.Expr) -> pl.Expr:
        return value if w is None else value * w

    sums = [
        pl.len().cast(pl.Int64).alias("count"),
        weighted(p).sum().alias("sum_p"),
        weighted(y).sum().alias("sum_y"),
    ]
    if w is not None:
        sums.append(w.sum().alias("weight"))
    if "brier" in metrics:
        sums.append(weighted(squared_error(p, y)).sum().alias("sum_squared_error"))
    if "log_loss" in metrics:
        sums.append(weighted(log_loss_term(p, y)).sum().alias("sum_log_loss"))
    # Unweighted, the weight is the count: one aggregation less per row.
    weight_column = pl.col("count").cast(pl.Float64) if w is None else pl.col("weight")
    columns: list[pl.Expr] = [pl.col("count"), weight_column.alias("weight")]
    columns += [pl.col(s.meta.output_name()) for s in sums if s.meta.output_name() not in (
        "count", "weight")]

    if binning.strategy == "quantile":
        bins = binning.index(p)
        table = (
            lf.filter(p.is_between(0.0, 1.0) & used)
            .group_by(*keys, (bins.over(keys) if keys else bins).alias("bin"))
            .agg(sums)
            .select(*keys, "bin", *columns)
        )
        return table.sort(*keys, "bin", nulls_last=True)

    n_bins = binning.n_bins
    bins = pl.when(refused).then(float(n_bins)).when(used).then(binning.uniform_value(p))
    packed = _packable_key(lf, keys, binning)
    sorted_ = False
    if packed is None:
        table = lf.group_by(*keys, bins.alias("bin")).agg(sums).filter(
            pl.col("bin").is_not_null()
        )
        bin_column = pl.col("bin").cast(pl.Int32)
    else:
        key = pl.col(packed).cast(pl.Float64).fill_null(float(_NULL_KEY)) * (n_bins + 1) + bins
        others = [k for k in keys if k != packed]
        key_bin = pl.col(_PACKED).cast(pl.Int64)
        code = key_bin // (n_bins + 1)
        dtype = lf.collect_schema()[packed]
        table = lf.group_by(*others, key.alias(_PACKED)).agg(sums)
        table = table.filter(pl.col(_PACKED).is_not_null())
        if keys[-1] == packed:
            # Sorting by the packed key is sorting by (key, bin), nulls last, and cheaper.
            table, sorted_ = table.sort(*others, _PACKED, nulls_last=True), True
        table = table.with_columns(
            pl.when(code != _NULL_KEY).then(code).cast(dtype).alias(packed)
        )
        bin_column = (key_bin - code * (n_bins + 1)).cast(pl.Int32)
    table = table.select(*keys, bin_column.alias("bin"), *columns)
    table = table.with_columns((pl.col("bin") == n_bins).alias(REFUSED))
    return table if sorted_ else table.sort(*keys, "bin", nulls_last=True)


def bin_statistics(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: str | Sequence[str] | None = None,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    weight: str | None = None,
) -> pl.LazyFrame:
    """Sufficient statistics per group and bin: the mergeable form of every metric.

    Every uniform-bin metric is a function of a few sums per bin, and sums add up:
    statistics of partitions of a log (files, days, worker processes) concatenated
    and passed to :func:`metrics_from_statistics` or
    :func:`reliability_from_statistics` give the numbers of one pass over the
    whole log.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    by
        Group-key column name(s); ``None`` for one group.
    n_bins
        Number of bins, a positive int.
    strategy
        ``"uniform"`` (equal width, mergeable) or ``"quantile"`` (equal mass within
        each group; **not** mergeable: the edges depend on all of the group's rows).
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ...``; ``"left"``:
        ``[0, 1/B), ..., [(B-1)/B, 1]``.
    weight
        Name of an optional column of non-negative sample weights.

    Returns
    -------
    LazyFrame
        One row per group and non-empty bin, sorted by keys and bin: the keys,
        ``bin`` (Int32, 0-based), ``count`` (Int64, rows), ``weight`` (Float64,
        sum of weights; the count when unweighted), and the Float64 weighted sums
        ``sum_p`` (of ``p``), ``sum_y`` (of ``y``), ``sum_squared_error`` (of
        ``(p - y)**2``) and ``sum_log_loss`` (of the clipped log-loss term).

    Raises
    ------
    CalibrationDataError
        When the data are invalid (see :func:`polars_calib.validate`); the check
        reads the data once, here.

    Notes
    -----
    Rows with a null probability, label or weight are ignored. The bins are
    :class:`polars_calib.Binning`'s, as in the expressions; quantile bins are
    computed within each group (a window ``.over(by)``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "model": ["a", "a", "a", "b", "b"],
    ...     "p": [0.1, 0.3, 0.8, 0.6, 0.9],
    ...     "y": [0, 1, 1, 0, 1],
    ... })
    >>> pc.bin_statistics(df, "p", "y", by="model", n_bins=2).collect()
    shape: (3, 8)
    ┌───────┬─────┬───────┬────────┬───────┬───────┬───────────────────┬──────────────┐
    │ model ┆ bin ┆ count ┆ weight ┆ sum_p ┆ sum_y ┆ sum_squared_error ┆ sum_log_loss │
    │ ---   ┆ --- ┆ ---   ┆ ---    ┆ ---   ┆ ---   ┆ ---               ┆ ---          │
    │ str   ┆ i32 ┆ i64   ┆ f64    ┆ f64   ┆ f64   ┆ f64               ┆ f64          │
    ╞═══════╪═════╪═══════╪════════╪═══════╪═══════╪═══════════════════╪══════════════╡
    │ a     ┆ 0   ┆ 2     ┆ 2.0    ┆ 0.4   ┆ 1.0   ┆ 0.5               ┆ 1.309333     │
    │ a     ┆ 1   ┆ 1     ┆ 1.0    ┆ 0.8   ┆ 1.0   ┆ 0.04              ┆ 0.223144     │
    │ b     ┆ 1   ┆ 2     ┆ 2.0    ┆ 1.5   ┆ 1.0   ┆ 0.37              ┆ 1.021651     │
    └───────┴─────┴───────┴────────┴───────┴───────┴───────────────────┴──────────────┘
    """
    binning = Binning(n_bins, strategy, closed)
    keys = key_names(by)
    lf = validated(data, prob, label, weight, keys)
    # The data are valid: no row is refused, and the screen's column goes.
    return statistics_query(lf, prob, label, weight, keys, binning).select(
        pl.exclude(REFUSED)
    )


def _statistics_frame(stats: pl.DataFrame | pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """`stats` as a LazyFrame, checking that it has the keys and the statistics columns."""
    if not isinstance(stats, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`stats` must be a polars DataFrame or LazyFrame, got {type(stats).__name__}"
        raise TypeError(msg)
    lf = stats.lazy()
    schema = lf.collect_schema()
    missing = [name for name in (*keys, "bin", *STATISTICS) if name not in schema]
    if missing:
        msg = (
            f"`stats` is not a statistics table (see `bin_statistics`): missing column(s) "
            f"{', '.join(map(repr, missing))}"
        )
        raise CalibrationDataError(msg)
    return lf


def grouped(lf: pl.LazyFrame, keys: list[str]) -> tuple[pl.LazyFrame, list[str]]:
    """`lf` and its group keys; a constant key stands for the whole frame when there are none."""
    if keys:
        return lf, keys
    return lf.with_columns(pl.lit(True).alias(_ALL)), [_ALL]


def merge_statistics(stats: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Sum the rows of each (group, bin): one row per bin of each group."""
    return stats.group_by(*keys, "bin").agg(
        pl.col("count").cast(pl.Int64).sum(), pl.col(list(STATISTICS[1:])).sum()
    )


def finish_metrics(stats: pl.LazyFrame, keys: list[str], metrics: list[str]) -> pl.LazyFrame:
    """Metrics per group from a statistics table with one row per (group, bin)."""
    stats, group = grouped(stats, keys)
    total = pl.col("weight").sum()
    gap_sum = pl.col("sum_y") - pl.col("sum_p")
    columns = {
        "count": pl.col("count").sum(),
        "mean_predicted": pl.when(total > 0.0).then(pl.col("sum_p").sum() / total),
        "observed": pl.when(total > 0.0).then(pl.col("sum_y").sum() / total),
        "brier": pl.when(total > 0.0).then(pl.col("sum_squared_error").sum() / total),
        "log_loss": pl.when(total > 0.0).then(pl.col("sum_log_loss").sum() / total),
    }
    for metric, norm in _NORM_OF.items():
        columns[metric] = calibration_error(gap_sum, pl.col("weight"), total, norm)
    names = ["count", "mean_predicted", "observed", *metrics]
    return (
        stats.group_by(group)
        .agg(columns[name].alias(name) for name in names)
        .sort(group, nulls_last=True)
        .select(*keys, *names)
    )


def metrics_from_statistics(
    stats: FrameT,
    *,
    by: str | Sequence[str] | None = None,
    metrics: Sequence[str] = METRICS,
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
        compute, in this order.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `stats`; one row per group, sorted by the keys: the keys,
        ``count`` (Int64), ``mean_predicted`` and ``observed`` (Float64, the
        weighted mean probability and fraction of positives), then one Float64
        column per metric, named after it. Empty statistics give an empty result.

    Notes
    -----
    Uses the expressions' finisher on the summed statistics: with
    ``W_b = weight``, ``gap_b = (sum_y - sum_p) / W_b`` and ``W = sum_b W_b``, ECE
    is ``sum_b |sum_y - sum_p| / W``; Brier is ``sum(sum_squared_error) / W`` and
    log-loss ``sum(sum_log_loss) / W``. Only uniform-bin statistics can be merged:
    quantile edges depend on all the rows of a group.

    Examples
    --------
    Statistics of two days, merged:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> day1 = pl.DataFrame({"p": [0.1, 0.3, 0.8], "y": [0, 1, 1]})
    >>> day2 = pl.DataFrame({"p": [0.6, 0.9], "y": [0, 1]})
    >>> stats = pl.concat([
    ...     pc.bin_statistics(day, "p", "y", n_bins=2).collect() for day in (day1, day2)
    ... ])
    >>> pc.metrics_from_statistics(stats, metrics=["ece", "brier"])
    shape: (1, 5)
    ┌───────┬────────────────┬──────────┬──────┬───────┐
    │ count ┆ mean_predicted ┆ observed ┆ ece  ┆ brier │
    │ ---   ┆ ---            ┆ ---      ┆ ---  ┆ ---   │
    │ i64   ┆ f64            ┆ f64      ┆ f64  ┆ f64   │
    ╞═══════╪════════════════╪══════════╪══════╪═══════╡
    │ 5     ┆ 0.54           ┆ 0.6      ┆ 0.18 ┆ 0.182 │
    └───────┴────────────────┴──────────┴──────┴───────┘

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
    keys = key_names(by)
    names = check_metrics(metrics)
    lf = _statistics_frame(stats, keys)
    return same_kind(stats, finish_metrics(merge_statistics(lf, keys), keys, names))


def uniform_grid(n_bins: int) -> pl.LazyFrame:
    """The uniform bins with their exact edges: ``bin`` (Int32), ``lower``, ``upper``."""
    edges = uniform_edges(n_bins)
    return pl.LazyFrame(
        {"bin": range(n_bins), "lower": edges[:-1], "upper": edges[1:]},
        schema={"bin": pl.Int32, "lower": pl.Float64, "upper": pl.Float64},
    )


def reliability_rows(
    stats: pl.LazyFrame, grid: pl.LazyFrame, keys: list[str], z: float
) -> pl.LazyFrame:
    """The reliability table from one statistics row per (group, bin).

    `grid` holds ``bin``, ``lower`` and ``upper``, and the keys when the edges
    differ by group; every group gets every bin of the grid, empty ones with count 0.
    """
    stats, group = grouped(stats, keys)
    if not set(group) <= set(grid.collect_schema().names()):
        grid = stats.select(group).unique().join(grid, how="cross")
    n = pl.col("weight")
    has_weight = n > 0.0
    observed = pl.when(has_weight).then(pl.col("sum_y") / n)
    mean_predicted = pl.when(has_weight).then(pl.col("sum_p") / n)
    # Wilson score interval for the observed fraction, with n the bin weight.
    shrink = 1.0 + z * z / n
    center = (pl.col("observed") + z * z / (2.0 * n)) / shrink
    spread = pl.col("observed") * (1.0 - pl.col("observed")) / n + z * z / (4.0 * n * n)
    half = z * spread.sqrt() / shrink
    return (
        grid.join(stats, on=[*group, "bin"], how="left", nulls_equal=True)
        .with_columns(
            pl.col("count").fill_null(0),
            mean_predicted.alias("mean_predicted"),
            observed.alias("observed"),
        )
        .with_columns(
            (pl.col("observed") - pl.col("mean_predicted")).alias("gap"),
            (center - half).alias("observed_lower"),
            (center + half).alias("observed_upper"),
        )
        .sort(*group, "bin", nulls_last=True)
        .select(*keys, *RELIABILITY)
    )


def reliability_from_statistics(
    stats: FrameT,
    *,
    n_bins: int,
    by: str | Sequence[str] | None = None,
    confidence: float = 0.95,
) -> FrameT:
    """The reliability table per group from one or many uniform-bin statistics tables.

    Parameters
    ----------
    stats
        Output of :func:`bin_statistics` with ``strategy="uniform"``, or several
        concatenated; rows of the same group and bin are summed first.
    n_bins
        The ``n_bins`` the statistics were computed with.
    by
        The group keys of the result, any of the statistics' key columns; keys left
        out are summed over. ``None``: one group, all rows.
    confidence
        Confidence level of the Wilson interval on the observed fraction.

    Returns
    -------
    DataFrame or LazyFrame
        The same kind as `stats`, with the columns of
        :func:`polars_calib.reliability`.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.3, 0.8, 0.6, 0.9], "y": [0, 1, 1, 0, 1]})
    >>> stats = pc.bin_statistics(df, "p", "y", n_bins=4).collect()
    >>> pc.reliability_from_statistics(stats, n_bins=4).select("bin", "count", "observed")
    shape: (4, 3)
    ┌─────┬───────┬──────────┐
    │ bin ┆ count ┆ observed │
    │ --- ┆ ---   ┆ ---      │
    │ i32 ┆ i64   ┆ f64      │
    ╞═════╪═══════╪══════════╡
    │ 0   ┆ 1     ┆ 0.0      │
    │ 1   ┆ 1     ┆ 1.0      │
    │ 2   ┆ 1     ┆ 0.0      │
    │ 3   ┆ 2     ┆ 1.0      │
    └─────┴───────┴──────────┘
    """
    keys = key_names(by)
    check_n_bins(n_bins)
    z = check_confidence(confidence)
    lf = _statistics_frame(stats, keys)
    table = reliability_rows(merge_statistics(lf, keys), uniform_grid(n_bins), keys, z)
    return same_kind(stats, table)


def same_kind(data: FrameT, result: pl.LazyFrame) -> FrameT:
    """`result` collected when `data` is a DataFrame, else left lazy."""
    if isinstance(data, pl.DataFrame):
        return result.collect()
    return result
