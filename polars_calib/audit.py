"""The fairness audit: calibration of every segment and intersection, from one pass.

:func:`audit` computes the statistics table (:mod:`polars_calib._table`) once, at
the finest grain (every ``by`` attribute, and the bins), then rolls it up to every
coarser slice by summing: the overall population, each attribute alone, and each
intersection of up to ``max_order`` attributes. The sums are mergeable, so every
slice's numbers equal those of a summary computed on that slice directly. The small
tables are then compared (differences and ratios to the overall value, fairlearn's
between-group disparities) and the slices' tests adjusted for multiplicity.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from polars_calib._core.exprs import IntoExpr, Keys
from polars_calib._core.options import AUDIT_TESTS, CORRECTIONS, METRICS, SUM_TOLERANCE, AuditTest, Closed, Correction, Metric, Reduction, Resampling, Strategy, check_choice, check_confidence
from polars_calib._core.binning import binning as make_binning
from polars_calib._frames.frame import finish_summary
from polars_calib._table.replicates import RESAMPLING_KEYS, resamples_for
from polars_calib._table.plan import collect_checked, prepare
from polars_calib._table.merge import merge_statistics
from polars_calib._table.build import statistics_query, terms_for
from polars_calib._core.validation import CalibrationDataError

__all__ = ["MAX_SLICES", "Audit", "adjusted_p_values", "audit"]

_P_VALUE = {"spiegelhalter": "spiegelhalter_p", "consistency": "consistency_p"}

MAX_SLICES = 10_000
"""The most slices an audit reports; more raise ``ValueError`` (lower ``max_order``)."""

# Key dtypes an attribute may have: values that name a group.
_GROUPABLE = (pl.String, pl.Categorical, pl.Enum, pl.Boolean, pl.Date)

_SLICE_COLUMNS = ("slice", "order", "attributes")
_TEST_COLUMNS = ("p_value", "p_adjusted", "too_small", "significant")


def adjusted_p_values(p: pl.Expr, method: Correction) -> pl.Expr:
    """Holm or Benjamini–Hochberg adjusted p-values of a column of p-values.

    An expression over the whole column (use it in ``select`` or ``with_columns``):
    null p-values stay null and do not count as tests.

    Parameters
    ----------
    p
        The p-values, Float64 in [0, 1].
    method
        ``"holm"`` (Holm 1979: controls the family-wise error rate) or ``"bh"``
        (Benjamini & Hochberg 1995: controls the false discovery rate).

    Returns
    -------
    Expr
        Float64, the adjusted p-values, in the rows' order.

    Notes
    -----
    With the ``m`` non-null p-values sorted, ``p_(1) <= ... <= p_(m)``:

    * Holm: ``min(1, max_{j <= i} (m - j + 1) p_(j))``;
    * Benjamini–Hochberg: ``min(1, min_{j >= i} m p_(j) / j)``.

    Tied p-values get the same adjusted value. These are statsmodels'
    ``multipletests(method="holm")`` and ``method="fdr_bh"``.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    *Scandinavian Journal of Statistics* 6, 65–70.
    Benjamini, Y. & Hochberg, Y. (1995). Controlling the false discovery rate.
    *JRSS B* 57, 289–300.

    See Also
    --------
    audit

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.01, 0.04, None, 0.03, 0.5]})
    >>> df.with_columns(
    ...     holm=pc.adjusted_p_values(pl.col("p"), "holm"),
    ...     bh=pc.adjusted_p_values(pl.col("p"), "bh"),
    ... )
    shape: (5, 3)
    ┌──────┬──────┬──────────┐
    │ p    ┆ holm ┆ bh       │
    │ ---  ┆ ---  ┆ ---      │
    │ f64  ┆ f64  ┆ f64      │
    ╞══════╪══════╪══════════╡
    │ 0.01 ┆ 0.04 ┆ 0.04     │
    │ 0.04 ┆ 0.09 ┆ 0.053333 │
    │ null ┆ null ┆ null     │
    │ 0.03 ┆ 0.09 ┆ 0.053333 │
    │ 0.5  ┆ 0.5  ┆ 0.5      │
    └──────┴──────┴──────────┘
    """
    check_choice("method", method, CORRECTIONS)
    p = p.cast(pl.Float64)
    m = p.count().cast(pl.Float64)
    ordered = p.drop_nulls().sort()
    i = pl.int_range(1, p.count() + 1, dtype=pl.Int64).cast(pl.Float64)
    if method == "holm":
        steps = (ordered * (m - i + 1.0)).cum_max()
    else:
        steps = (ordered * m / i).reverse().cum_min().reverse()
    adjusted = steps.clip(upper_bound=1.0)
    return adjusted.gather(p.rank("ordinal") - 1)


@dataclass(frozen=True)
class Audit:
    """The result of :func:`audit`: tables of slices and disparities (Polars DataFrames).

    Attributes
    ----------
    slices
        One row per slice (see :func:`audit`, Returns).
    disparities
        One row per attribute set and metric (see :func:`audit`, Returns).
    by
        The attributes audited, in order.
    metrics
        The metric columns of ``slices`` (named as in :func:`polars_calib.summary`).
    min_count
        Slices with fewer used rows are flagged ``too_small``.
    include_small
        Whether the disparities (and by default :meth:`worst`) count small slices.
    """

    slices: pl.DataFrame
    disparities: pl.DataFrame
    by: tuple[str, ...]
    metrics: tuple[str, ...]
    min_count: int
    include_small: bool = False

    def worst(
        self, k: int = 10, *, metric: str | None = None, include_small: bool | None = None
    ) -> pl.DataFrame:
        """The `k` slices with the largest value of `metric`, the overall row left out.

        Parameters
        ----------
        k
            How many slices, a positive int.
        metric
            A metric column of :attr:`slices`; by default the first of the audit's
            metrics (the calibration error when asked for).
        include_small
            Also rank the slices flagged ``too_small``; by default as the audit was
            asked (:func:`audit`'s `include_small`, itself ``False``: a small slice's
            metric is mostly sampling noise).

        Returns
        -------
        DataFrame
            Rows of :attr:`slices`, largest `metric` first (ties by count, larger
            first); slices with a null metric are left out.
        """
        if isinstance(k, bool) or not isinstance(k, int):
            msg = f"`k` must be a positive int, got {type(k).__name__} {k!r}"
            raise TypeError(msg)
        if k < 1:
            msg = f"`k` must be a positive int, got {k!r}"
            raise ValueError(msg)
        column = self.metrics[0] if metric is None else metric
        check_choice("metric", column, self.metrics)
        ranked = self.slices.filter(pl.col("order") > 0, pl.col(column).is_not_null())
        if not (self.include_small if include_small is None else include_small):
            ranked = ranked.filter(~pl.col("too_small"))
        return ranked.sort([column, "count"], descending=True, maintain_order=True).head(k)


def _attribute_sets(by: Sequence[str], max_order: int) -> list[tuple[str, ...]]:
    """The empty set (overall), then every set of 1 .. `max_order` attributes, in `by` order."""
    return [
        subset for order in range(max_order + 1) for subset in itertools.combinations(by, order)
    ]


def _check_attributes(schema: pl.Schema, by: Sequence[str]) -> None:
    """Each attribute must hold values that name groups (not floats, lists or structs)."""
    for name in by:
        dtype = schema[name]
        if not (dtype.is_integer() or isinstance(dtype, _GROUPABLE) or dtype == pl.Null):
            hint = (
                f" (bin it first, e.g. pl.col({name!r}).cut([...]).alias({name!r}))"
                if dtype.is_float()
                else ""
            )
            msg = (
                f"`by` column {name!r} holds {dtype}: an audit attribute must be a string, "
                f"categorical, enum, boolean, integer or date column{hint}"
            )
            raise CalibrationDataError(msg)


def _slice_label(subset: tuple[str, ...]) -> pl.Expr:
    """``"overall"``, or ``"a=x, b=y"`` (a null value written ``null``)."""
    if not subset:
        return pl.lit("overall")
    parts = [
        pl.concat_str(
            pl.lit(f"{name}="), pl.col(name).cast(pl.String).fill_null("null")
        )
        for name in subset
    ]
    return pl.concat_str(parts, separator=", ")


def audit(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys,
    max_order: int | None = None,
    metrics: Sequence[Metric] = ("ece", "brier"),
    min_count: int = 100,
    include_small: bool = False,
    correction: Correction | None = "holm",
    confidence: float = 0.95,
    n_resamples: int | None = 1000,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity of the draws)
    test: AuditTest | None = "auto",
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: str | None = None,
    reduction: Reduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
) -> Audit:
    """Calibration of every segment and intersection of segments, from one pass over the data.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions. **The audit is a report: it runs the
        query** (a LazyFrame is collected, reading the data once) and returns
        DataFrames.
    prob
        Name of the column holding the probability of the positive class, or
        probability vectors (``Array`` or ``List``; see `reduction`).
    label
        Name of the 0/1 (or boolean) outcome column; with vectors, the true class.
    by
        The attributes (a column name, an expression with an alias, or a sequence
        of them), each a string, categorical, enum, boolean, integer or date
        column. A null value is a value of its own: its slice is reported, with
        the attribute fixed to null.
    max_order
        The largest number of attributes a slice fixes, from 1 to ``len(by)``;
        by default 2 (or ``len(by)`` when smaller).
    metrics
        Which of ``"ece"``, ``"mce"``, ``"rmsce"``, ``"brier"``, ``"log_loss"``
        to compute per slice (as in :func:`polars_calib.summary`).
    min_count
        Slices with fewer used rows are flagged ``too_small``, and left out of
        :meth:`Audit.worst` and of the disparities unless `include_small`.
    include_small
        Count the small slices in the disparities and in :meth:`Audit.worst` too.
    correction
        Multiple-testing control across all reported slices (the overall row and
        the small ones included): ``"holm"`` (default, the family-wise error
        rate), ``"bh"`` (Benjamini–Hochberg, the false discovery rate) or ``None``.
    confidence
        Level of the intervals, in (0, 1); a slice is ``significant`` when its
        adjusted p-value is below ``1 - confidence``.
    n_resamples
        Poisson-bootstrap replicates of the intervals (the resampling of
        :func:`polars_calib.summary`); ``None``: no intervals (one pass over the
        data; with replicates, one more pass per 64 of them, as a summary).
    seed
        Seed of the draws, an int in ``[0, 2**32)``.
    id
        An integer column or expression identifying each row, hashed into its
        draws (as in :func:`polars_calib.summary`); ``None``: the row's position.
    test
        Each slice's test of the hypothesis that the model is calibrated there:
        ``"spiegelhalter"`` (Spiegelhalter's Z, two-sided; binary data),
        ``"consistency"`` (the consistency-resampling test of ECE, `n_resamples`
        label sets drawn from ``p``), ``"auto"`` (default: Spiegelhalter for binary
        data, consistency for probability vectors) or ``None``.
    n_bins, strategy, closed
        The bins of the binned metrics, as in :func:`polars_calib.summary`.
        Quantile bins are computed within each finest cell and cannot be rolled
        up: the audit requires ``"uniform"``.
    weight
        Name of an optional column of non-negative sample weights.
    reduction
        For probability vectors: ``"confidence"`` (default), ``"top_label"`` or
        ``"classwise"``, as in :func:`polars_calib.summary`.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a probability vector.
    pos_label
        Binary data: the label of the positive class when labels are not 0/1.

    Returns
    -------
    Audit
        ``slices``: one row per slice, the overall population first, then by
        order and attributes: ``slice`` (String, ``"overall"`` or
        ``"sex=F, region=north"``), ``order`` (Int32, the number of attributes
        fixed), ``attributes`` (List of String: **the attributes the slice
        fixes**; an attribute column holding null in a slice that lists it means
        the null value, otherwise "not fixed"), one column per attribute with its
        own dtype, ``count`` (Int64, rows used), ``share`` (Float64, the slice's
        fraction of the used rows), ``mean_predicted`` and ``observed`` (or
        ``mean_confidence`` and ``accuracy``), then per metric ``m``: ``m``,
        ``m_difference`` (``m`` minus the overall ``m``) and ``m_ratio`` (``m``
        over the overall ``m``), with `n_resamples` also ``m_lower`` and
        ``m_upper`` (the percentile bootstrap interval, after ``m``); then
        ``p_value`` (Float64, the slice's test), ``p_adjusted`` (after
        `correction`), ``too_small`` (Boolean) and ``significant`` (Boolean,
        ``p_adjusted < 1 - confidence``; null without a test).

        ``disparities``: one row per attribute set (each non-empty set of up to
        ``max_order`` attributes) and metric, over the set's slices of at least
        ``min_count`` rows (all of them with `include_small`): ``attributes``,
        ``order``, ``metric``, ``overall``,
        ``groups`` (slices compared), ``small`` (slices left out),
        ``group_min``, ``group_max``, ``difference`` (max − min),
        ``difference_to_overall`` (largest ``|m - overall|``), ``ratio``
        (min / max), ``ratio_to_overall`` (smallest of ``m / overall`` and its
        inverse), and ``worst_slice`` (the slice with the largest ``m``):
        fairlearn's ``MetricFrame`` ``group_min``, ``group_max``,
        ``difference(method="between_groups" | "to_overall")`` and
        ``ratio(method="between_groups" | "to_overall")`` on the set's slices.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column, an attribute that cannot name groups
        (floats, lists, structs), or refused rows (see
        :func:`polars_calib.validate`).
    ValueError
        `by` empty, `max_order` out of range, an unknown `correction`, quantile
        bins, or more than ``MAX_SLICES`` (10,000) slices.

    Notes
    -----
    **One pass.** The statistics table of :func:`polars_calib.bin_statistics` is
    computed once per (finest cell, bin), where a finest cell fixes every
    attribute; each slice's table is the sum of its cells' rows
    (:func:`polars_calib.metrics_from_statistics` with fewer keys), which is exact
    because the uniform-bin statistics are sums. A slice is reported when the
    data hold at least one of its rows (a combination of values that never occurs
    has no row).

    **Small slices.** A slice with fewer than `min_count` used rows keeps its row
    in ``slices`` with ``too_small`` true; it is left out of ``disparities``
    (its ``small`` count says how many were) and of :meth:`Audit.worst`, unless
    asked for.

    See Also
    --------
    polars_calib.summary, polars_calib.metrics_from_statistics, adjusted_p_values

    References
    ----------
    Weerts et al. (2023), *Fairlearn: Assessing and improving fairness of AI
    systems*, JMLR 24 (the ``MetricFrame`` disparities); Kearns et al. (2018),
    *Preventing fairness gerrymandering*, ICML (auditing intersections).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "sex": ["F", "F", "M", "M", "F", "M", "F", "M"],
    ...     "age": ["young", "old", "young", "old", "young", "old", "old", "young"],
    ...     "p": [0.2, 0.9, 0.3, 0.6, 0.1, 0.7, 0.8, 0.4],
    ...     "y": [0, 1, 1, 0, 0, 1, 1, 0],
    ... })
    >>> result = pc.audit(
    ...     df, "p", "y", by=["sex", "age"], n_bins=5, min_count=2, n_resamples=None
    ... )
    >>> result.slices.select("slice", "attributes", "count", "ece", "brier")
    shape: (9, 5)
    ┌──────────────────┬────────────────┬───────┬───────┬───────┐
    │ slice            ┆ attributes     ┆ count ┆ ece   ┆ brier │
    │ ---              ┆ ---            ┆ ---   ┆ ---   ┆ ---   │
    │ str              ┆ list[str]      ┆ i64   ┆ f64   ┆ f64   │
    ╞══════════════════╪════════════════╪═══════╪═══════╪═══════╡
    │ overall          ┆ []             ┆ 8     ┆ 0.225 ┆ 0.15  │
    │ sex=F            ┆ ["sex"]        ┆ 4     ┆ 0.15  ┆ 0.025 │
    │ sex=M            ┆ ["sex"]        ┆ 4     ┆ 0.3   ┆ 0.275 │
    │ age=old          ┆ ["age"]        ┆ 4     ┆ 0.3   ┆ 0.125 │
    │ age=young        ┆ ["age"]        ┆ 4     ┆ 0.15  ┆ 0.175 │
    │ sex=F, age=old   ┆ ["sex", "age"] ┆ 2     ┆ 0.15  ┆ 0.025 │
    │ sex=F, age=young ┆ ["sex", "age"] ┆ 2     ┆ 0.15  ┆ 0.025 │
    │ sex=M, age=old   ┆ ["sex", "age"] ┆ 2     ┆ 0.45  ┆ 0.225 │
    │ sex=M, age=young ┆ ["sex", "age"] ┆ 2     ┆ 0.15  ┆ 0.325 │
    └──────────────────┴────────────────┴───────┴───────┴───────┘
    >>> result.disparities.select("attributes", "metric", "group_min", "group_max", "ratio")
    shape: (6, 5)
    ┌────────────────┬────────┬───────────┬───────────┬──────────┐
    │ attributes     ┆ metric ┆ group_min ┆ group_max ┆ ratio    │
    │ ---            ┆ ---    ┆ ---       ┆ ---       ┆ ---      │
    │ list[str]      ┆ str    ┆ f64       ┆ f64       ┆ f64      │
    ╞════════════════╪════════╪═══════════╪═══════════╪══════════╡
    │ ["sex"]        ┆ ece    ┆ 0.15      ┆ 0.3       ┆ 0.5      │
    │ ["sex"]        ┆ brier  ┆ 0.025     ┆ 0.275     ┆ 0.090909 │
    │ ["age"]        ┆ ece    ┆ 0.15      ┆ 0.3       ┆ 0.5      │
    │ ["age"]        ┆ brier  ┆ 0.125     ┆ 0.175     ┆ 0.714286 │
    │ ["sex", "age"] ┆ ece    ┆ 0.15      ┆ 0.45      ┆ 0.333333 │
    │ ["sex", "age"] ┆ brier  ┆ 0.025     ┆ 0.325     ┆ 0.076923 │
    └────────────────┴────────┴───────────┴───────────┴──────────┘
    """
    # -- arguments, checked before anything is read -------------------------------
    binning = make_binning(n_bins, strategy, closed)
    if binning.strategy != "uniform":
        msg = (
            "`strategy` must be 'uniform' for an audit: quantile bins depend on each "
            "slice's own rows, so the finest cells cannot be summed into coarser slices"
        )
        raise ValueError(msg)
    # The summary's metrics only: a test or a decomposition has no disparity.
    listed = [metrics] if isinstance(metrics, str) else list(metrics)
    names = [check_choice("metrics", metric, METRICS) for metric in listed]
    if not names:
        msg = "`metrics` must name at least one metric"
        raise ValueError(msg)
    check_confidence(confidence)
    if correction is not None:
        check_choice("correction", correction, CORRECTIONS)
    if test is not None:
        check_choice("test", test, AUDIT_TESTS)
    if isinstance(min_count, bool) or not isinstance(min_count, int):
        msg = f"`min_count` must be a non-negative int, got {type(min_count).__name__}"
        raise TypeError(msg)
    if min_count < 0:
        msg = f"`min_count` must be a non-negative int, got {min_count!r}"
        raise ValueError(msg)
    prepared = prepare(
        data, prob, label, by=by, weight=weight, reduction=reduction, sum_tol=sum_tol,
        pos_label=pos_label,
        reserved=frozenset((*_SLICE_COLUMNS, *_TEST_COLUMNS)) | RESAMPLING_KEYS,
    )  # fmt: skip
    tested = _chosen_test(test, prepared.reduction is not None, n_resamples)
    p_value = None if tested is None else _P_VALUE[tested]
    methods: list[Resampling] = ["bootstrap"] if n_resamples is not None else []
    if tested == "consistency":
        methods.append("consistency")
    resamples = resamples_for(
        methods or None, 1000 if n_resamples is None else n_resamples, seed, id
    )
    finished_metrics = [*names, *([p_value] if p_value else [])]
    attributes = list(prepared.keys)
    if not attributes:
        msg = "`by` must name at least one attribute to audit"
        raise ValueError(msg)
    order = _check_max_order(max_order, len(attributes))
    _check_attributes(prepared.lf.collect_schema(), attributes)
    sets = _attribute_sets(attributes, order)
    if len(sets) > MAX_SLICES:
        raise ValueError(_too_many(len(sets), order))

    # -- one pass: the statistics of the finest cells ----------------------------
    plan = statistics_query(
        prepared.lf, prepared.problem, attributes, binning, terms_for(finished_metrics),
        resamples=resamples,
    )  # fmt: skip
    cells = collect_checked(prepared, plan)
    n_slices = sum(
        cells.select(subset).n_unique() if subset else 1 for subset in sets
    )
    if n_slices > MAX_SLICES:
        raise ValueError(_too_many(n_slices, order))

    # -- roll up: each attribute set's slices from the cells' sums ------------------
    schema = cells.schema
    finished = []
    for subset in sets:
        keyed = dataclasses.replace(prepared, keys=list(subset))
        table = finish_summary(
            merge_statistics(cells.lazy(), list(subset)), keyed, finished_metrics,
            confidence=None if n_resamples is None else confidence, resampled=bool(resamples),
        )  # fmt: skip
        finished.append(
            table.select(
                _slice_label(subset).alias("slice"),
                pl.lit(len(subset), pl.Int32).alias("order"),
                pl.lit(list(subset), pl.List(pl.String)).alias("attributes"),
                *(
                    pl.col(name) if name in subset else pl.lit(None, schema[name]).alias(name)
                    for name in attributes
                ),
                pl.exclude(*subset, "refused"),
            )
        )
    slices = pl.concat(pl.collect_all(finished))
    if p_value is not None:
        # A p-value is no metric: no bootstrap interval of it.
        bounds = [f"{p_value}_{side}" for side in ("lower", "upper")]
        slices = slices.drop(bounds, strict=False).rename({p_value: "p_value"})
    # The metrics as the summary names them (after the two means), without their bounds.
    first = slices.columns.index("observed" if "observed" in slices.columns else "accuracy") + 1
    metric_columns = [
        c for c in slices.columns[first:]
        if not c.endswith(("_lower", "_upper")) and c != "p_value"
    ]  # fmt: skip
    slices = _compared(slices, metric_columns, min_count, correction, 1.0 - confidence)
    disparities = _disparities(slices, sets[1:], metric_columns, include_small)
    return Audit(
        slices, disparities, tuple(attributes), tuple(metric_columns), min_count, include_small
    )


def _chosen_test(
    test: AuditTest | None, vectors: bool, n_resamples: int | None
) -> Literal["spiegelhalter", "consistency"] | None:
    """The test each slice gets: Spiegelhalter's for binary data, else consistency."""
    if test is None:
        return None
    chosen: Literal["spiegelhalter", "consistency"] = (
        ("consistency" if vectors else "spiegelhalter") if test == "auto" else test
    )
    if chosen == "spiegelhalter" and vectors:
        msg = (
            "`test='spiegelhalter'` takes binary probabilities: use test='consistency' "
            "(or 'auto') for probability vectors"
        )
        raise ValueError(msg)
    if chosen == "consistency" and n_resamples is None:
        msg = "the consistency test draws `n_resamples` label sets: give `n_resamples`"
        raise ValueError(msg)
    return chosen


def _check_max_order(max_order: object, n: int) -> int:
    """`max_order` checked against the number of attributes (default: 2, at most `n`)."""
    if max_order is None:
        return min(2, n)
    if isinstance(max_order, bool) or not isinstance(max_order, int):
        msg = f"`max_order` must be an int from 1 to len(by) = {n}, got {max_order!r}"
        raise TypeError(msg)
    if not 1 <= max_order <= n:
        msg = f"`max_order` must be from 1 to len(by) = {n}, got {max_order!r}"
        raise ValueError(msg)
    return max_order


def _too_many(n_slices: int, max_order: int) -> str:
    return (
        f"the audit would report {n_slices:,} slices, more than the limit of "
        f"{MAX_SLICES:,}: use a lower `max_order` (now {max_order}), fewer attributes "
        "in `by`, or attributes with fewer values (group the rare ones)"
    )


def _compared(
    slices: pl.DataFrame,
    metrics: list[str],
    min_count: int,
    correction: Correction | None,
    alpha: float,
) -> pl.DataFrame:
    """Each slice's share, differences and ratios to the overall row, its test and flags."""
    overall = slices.row(0, named=True)  # the overall row comes first
    total = overall["count"]
    compared: list[pl.Expr] = []
    for metric in metrics:
        reference = pl.lit(overall[metric], pl.Float64)
        value = pl.col(metric)
        # Polars divides by a scalar as a product with its inverse (1 ulp off): equal is 1.
        ratio = pl.when(value == reference).then(1.0).otherwise(value / reference)
        bounds = [
            pl.col(f"{metric}_{side}")
            for side in ("lower", "upper") if f"{metric}_{side}" in slices.columns
        ]  # fmt: skip
        compared += [
            value,
            *bounds,
            (value - reference).alias(f"{metric}_difference"),
            ratio.alias(f"{metric}_ratio"),
        ]
    p_value = adjusted = pl.lit(None, pl.Float64)  # no test: no p-values, nothing significant
    if "p_value" in slices.columns:
        p_value = pl.col("p_value")
        adjusted = p_value if correction is None else adjusted_p_values(p_value, correction)
    first = slices.columns.index(metrics[0])
    return slices.select(
        *slices.columns[: first - 2],
        (pl.col("count") / total if total else pl.lit(None, pl.Float64)).alias("share"),
        *slices.columns[first - 2 : first],  # the two means
        *compared,
        p_value.alias("p_value"),
        adjusted.alias("p_adjusted"),
        (pl.col("count") < min_count).alias("too_small"),
        (adjusted < alpha).alias("significant"),
    )


def _disparities(
    slices: pl.DataFrame, sets: list[tuple[str, ...]], metrics: list[str], include_small: bool
) -> pl.DataFrame:
    """Per attribute set and metric, fairlearn's disparities over the set's (large) slices."""
    overall = slices.row(0, named=True)
    rows = []
    for subset in sets:
        members = slices.filter(pl.col("attributes") == pl.lit(list(subset), pl.List(pl.String)))
        large = members if include_small else members.filter(~pl.col("too_small"))
        for metric in metrics:
            rows.append(
                large.select(
                    pl.lit(list(subset), pl.List(pl.String)).alias("attributes"),
                    pl.lit(len(subset), pl.Int32).alias("order"),
                    pl.lit(metric).alias("metric"),
                    pl.lit(overall[metric], pl.Float64).alias("overall"),
                    pl.col(metric).count().cast(pl.Int64).alias("groups"),
                    pl.lit(members.height - large.height, pl.Int64).alias("small"),
                    *_disparity_exprs(pl.col(metric), overall[metric]),
                    pl.col("slice").top_k_by(metric, 1).first().alias("worst_slice"),
                )
            )
    return pl.concat(rows)


def _disparity_exprs(value: pl.Expr, overall: float | None) -> list[pl.Expr]:
    """fairlearn's group_min, group_max, difference and ratio (both methods)."""
    reference = pl.lit(overall, pl.Float64)
    to_overall = value / reference
    return [
        value.min().alias("group_min"),
        value.max().alias("group_max"),
        (value.max() - value.min()).alias("difference"),
        (value - reference).abs().max().alias("difference_to_overall"),
        (value.min() / value.max()).alias("ratio"),
        pl.when(to_overall > 1.0).then(1.0 / to_overall).otherwise(to_overall)
        .min().alias("ratio_to_overall"),
    ]  # fmt: skip

