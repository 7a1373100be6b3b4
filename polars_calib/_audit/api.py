"""The audit itself: its options checked, then the finest cells, the roll-up, the comparisons."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from polars_calib._audit.cells import BATCH_ROWS, cell_statistics, slice_replicates
from polars_calib._audit.compare import TEST_COLUMNS, compared, disparities
from polars_calib._audit.options import (
    P_VALUE,
    check_min_count,
    check_optional,
    chosen_test,
    metric_names,
    slice_resamples,
    uniform_binning,
)
from polars_calib._audit.result import Audit
from polars_calib._audit.rollup import metric_columns, rolled_up, with_p_values
from polars_calib._audit.slices import (
    SLICE_COLUMNS,
    attribute_sets,
    check_attributes,
    check_max_order,
    check_slice_count,
    count_slices,
    key_values,
)
from polars_calib._core.exprs import IntoExpr, Keys
from polars_calib._core.options import (
    AUDIT_TESTS,
    CORRECTIONS,
    SUM_TOLERANCE,
    AuditTest,
    Closed,
    Correction,
    Metric,
    Reduction,
    Strategy,
    check_confidence,
    check_min_size,
)
from polars_calib._table.build import terms_for
from polars_calib._table.plan import prepare
from polars_calib._table.replicates import RESAMPLING_KEYS

__all__ = ["audit"]

# Column names of the result: `by` cannot use them.
_RESERVED = frozenset((*SLICE_COLUMNS, *TEST_COLUMNS)) | RESAMPLING_KEYS


def audit(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    by: Keys,
    within: Keys = None,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: str | None = None,
    max_order: int | None = None,
    metrics: Sequence[Metric] = ("ece", "brier"),
    min_count: int = 100,
    include_small: bool | None = None,
    correction: Correction | None = "holm",
    confidence: float = 0.95,
    n_resamples: int | None = 1000,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity of the draws)
    test: AuditTest | None = "auto",
    reduction: Reduction | None = None,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    batch_rows: int = BATCH_ROWS,
    progress: Callable[[str, int, int], None] | None = None,
) -> Audit:
    """Audit the calibration of every segment and intersection of segments, in one pass.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions. **The audit is a report: it runs the
        query** (a LazyFrame is collected, reading the data once, in slices of
        `batch_rows` rows) and returns DataFrames.
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
    within
        Keys kept whole rather than sliced, such as the model (fairlearn's
        ``control_features``): a column name, an expression with an alias, or a
        sequence of them, of the dtypes of `by`. Each group of `within` values is
        audited on its own: its overall row, slices, intervals, tests (adjusted
        within the group), comparisons, disparities and worst slices, as an audit of
        that group's rows would give (the intervals too with `id`: without it, a
        row's draws hash its position in `data`); the tables carry the `within`
        columns first.
        ``None`` (default): one audit of every row. **A log of several models needs
        it** (or one model's rows): pooled, the slices describe no model.
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
        Count the small slices in the disparities, and by default in
        :meth:`Audit.worst` and :func:`polars_calib.plot_audit`, too. ``None``
        (default, the same in all three): leave them out (a small slice's metric is
        mostly sampling noise).
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
        data; with replicates, one more pass per 64 of them, as a summary, or per
        fewer when the (cell, bin) keys are many: see Notes).
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
    batch_rows
        The most rows aggregated at a time (a positive int; default 8,000,000): data
        of more rows are read in slices of this many, and the slices' tables summed,
        so that memory is set by it and not by the data (see Notes).
    progress
        Called after each aggregation over the data as ``progress(stage, done,
        total)``: `stage` is ``"cells"`` (the observed table, a batch of rows at a
        time) or ``"replicates"`` (a chunk of replicates over a batch of rows),
        `done` and `total` count that stage's aggregations (`total` is 1 until the
        rows are counted). For a progress bar on large data: with intervals, the
        replicates' aggregations are the long part. ``None`` (default): nothing.

    Returns
    -------
    Audit
        ``slices``: one row per slice, the overall population first, then by
        order and attributes (with `within`: the `within` columns first, and each
        group's rows together, its overall row first): ``slice`` (String,
        ``"overall"`` or ``"sex=F, region=north"``; a value that could be misread,
        such as the string ``"null"``, an empty string or one holding ``,``, ``=``
        or ``"``, is quoted, ``sex="null"``, with ``\\`` and ``\"`` escaped: a
        null is ``sex=null``), ``order`` (Int32, the number of attributes
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
        ``max_order`` attributes) and metric (per `within` group, its columns
        first), over the set's slices of at least ``min_count`` rows (all of them
        with `include_small`): ``attributes``,
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
        `by` empty, a column in both `by` and `within`, `max_order` out of range, an
        unknown `correction`, quantile bins, or more than ``MAX_SLICES`` (10,000)
        slices (all groups' together).

    Notes
    -----
    **One pass.** The statistics table of :func:`polars_calib.bin_statistics` is
    computed once per (finest cell, bin), where a finest cell fixes every
    attribute; each slice's table is the sum of its cells' rows
    (:func:`polars_calib.metrics_from_statistics` with fewer keys), which is exact
    because the uniform-bin statistics are sums. A slice is reported when the
    data hold at least one of its rows (a combination of values that never occurs
    has no row). Replicates are summed per slice, never kept per finest cell: each
    pass of replicates sums its finest table at once into every slice's.

    **Memory.** The table's size is set by the cells, the bins (and the
    replicates), not by the rows, but Polars' streaming group-by holds the rows of
    keys beyond its hot table until the end: with many (cell, bin) keys its memory
    would grow with the rows. Data of more than `batch_rows` rows are therefore
    aggregated in slices of `batch_rows` rows (each by the streaming engine), whose
    tables are summed: the numbers are those of one pass, up to the order of the
    floating-point sums. With replicates, a pass aggregates as many of them (up to
    64) as keep its finest table within `batch_rows` rows (keys × replicates); with
    fewer than 64 a pass, it reads `batch_rows` / replicates rows at a time (each
    row Polars holds carries a sum per replicate). A LazyFrame's slices are read
    from the source when Polars can push them down (a scan of files; a DataFrame);
    otherwise each slice computes the plan's rows up to its end again.

    **Small slices.** A slice with fewer than `min_count` used rows keeps its row
    in ``slices`` with ``too_small`` true; it is left out of ``disparities``
    (its ``small`` count says how many were) and of :meth:`Audit.worst`, unless
    asked for.

    **No rows.** Data without rows give the overall row alone (``count`` 0, null
    metrics and ``share``), as :func:`polars_calib.summary` gives, and disparities of
    no group; with `within`, no group: empty tables.

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
    binning = uniform_binning(n_bins, strategy, closed)
    names = metric_names(metrics)
    check_confidence(confidence)
    check_optional("correction", correction, CORRECTIONS)
    check_optional("test", test, AUDIT_TESTS)
    check_min_count(min_count)
    check_min_size("batch_rows", batch_rows)
    keys, n_within = key_values(by, within)
    prepared = prepare(
        data,
        prob,
        label,
        by=keys,
        weight=weight,
        reduction=reduction,
        sum_tol=sum_tol,
        pos_label=pos_label,
        reserved=_RESERVED,
    )
    tested = chosen_test(test, prepared.reduction is not None, n_resamples)
    resamples = slice_resamples(tested, n_resamples, seed, id)
    p_value = None if tested is None else P_VALUE[tested]
    finished = [*names, *([p_value] if p_value else [])]
    control, attributes = prepared.keys[:n_within], prepared.keys[n_within:]
    order = check_max_order(max_order, len(attributes))
    check_attributes(prepared.lf.collect_schema(), control, "within")
    check_attributes(prepared.lf.collect_schema(), attributes)
    sets = attribute_sets(attributes, order)
    check_slice_count(len(sets), order)
    # Each set's table keys: the `within` keys, kept whole, and the set's attributes.
    keyed = [(*control, *subset) for subset in sets]

    # One pass over the data: the finest cells; then every slice from their sums. The
    # replicates' pass sums each set's replicates (never a table of the finest cells').
    terms = terms_for(finished)
    cells = cell_statistics(prepared, binning, terms, batch_rows, progress)
    check_slice_count(count_slices(cells.table, keyed), order)
    replicates = None
    if resamples:
        replicates = slice_replicates(
            cells, prepared, binning, terms, resamples, keyed, batch_rows, progress
        )
    slices = rolled_up(
        cells.table,
        prepared,
        sets,
        finished,
        confidence=None if n_resamples is None else confidence,
        replicates=replicates,
        within=control,
    )
    slices = with_p_values(slices, p_value)
    metrics_found = metric_columns(slices)
    slices = compared(slices, metrics_found, min_count, correction, 1.0 - confidence, control)
    return Audit(
        slices,
        disparities(slices, sets[1:], metrics_found, bool(include_small), control),
        tuple(attributes),
        tuple(metrics_found),
        min_count,
        bool(include_small),
        tuple(control),
    )
