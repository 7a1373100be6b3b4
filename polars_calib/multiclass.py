"""Multi-class calibration metrics: reductions of probability vectors to binary problems.

Each metric takes a probability-vector column (``pl.Array(pl.Float64, K)`` or
``pl.List(pl.Float64)``, which give the same numbers) and an integer label in
``0 .. K - 1``, and returns an aggregating ``pl.Expr`` that works in every context the
binary metrics do. No metric bins on its own: each reduces the vectors to binary
problems and hands them to the binary machinery (:class:`~polars_calib.Binning`,
``per_bin``, ``calibration_error``).

* **confidence**: the maximum probability against whether the arg-max (first maximal
  index on ties, as ``numpy.argmax``) is the label; one binary problem.
* **classwise**: ``p_j`` against ``label == j`` for every class ``j``; K binary
  problems, averaged (``l1``, ``l2``) or maximised (``max``).
* **top-label**: the confidence problem within the rows predicted ``j``, for every
  predicted class; averaged without weights (``l1``, ``l2``) or maximised (``max``).

Several problems are evaluated at once without a Python loop: the vectors are
exploded to one element per (row, class), packed with ``implode`` and evaluated in
``list.eval``, where the class and the bin form one *elementwise* window key
``class * n_bins + bin``. Polars refuses window keys built from ``explode`` (or from a
group quantile) inside aggregations, but inside ``list.eval`` the packed columns are
ordinary elementwise fields, so one hash aggregation gives every (class, bin) sum in
select, over, group_by, dynamic and rolling windows, and the streaming engine.

Data policy (as the binary metrics, plus what vectors add):

* a row whose vector, label or weight is null is ignored;
* a group gives **null** when any used row has a vector holding a null, a NaN or a
  value outside [0, 1], a vector whose sum is off 1 by more than ``sum_tol``
  (default :data:`SUM_TOLERANCE`), a label that is not an integer in ``0 .. K - 1``,
  or a negative, NaN or infinite weight, or when the used rows' vectors differ in
  length (``List`` input);
* a group with no used row, or zero total weight, gives null.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from polars_calib import binary
from polars_calib._exprs import IntoExpr, check_choice, to_expr
from polars_calib.binning import Binning
from polars_calib.stats import (
    NORMS,
    Outcomes,
    binned_error,
    calibration_error,
    log_loss_term,
    per_bin,
    weighted_mean,
)

SUM_TOLERANCE = 1e-6
"""Default largest ``|sum(p) - 1|`` accepted for a probability vector.

A float64 softmax is off by about ``K * 1e-16`` and a float32 one, cast to float64,
by about ``1e-7`` (each entry rounds with relative error ``2**-24``, and the entries
sum to 1); 1e-6 accepts both with margin while rejecting vectors that are not
normalised (``1e-3`` off and more) or rows that lost a class. Probabilities
rounded to ``d`` decimals can be off by up to ``K * 0.5 * 10**-d``: pass that as
``sum_tol``.
"""

_VECTOR = "`prob` must be a pl.Array or pl.List of probabilities"


@dataclass(frozen=True)
class Vectors:
    """Validated probability vectors, one row per prediction.

    ``prob`` is ``List(Float64)`` and ``label`` is ``Int64``, both null on every row
    not used (null vector, label or weight); ``weight`` is Float64 and null there too.
    The label is a valid index on every used row of a valid group. ``invalid`` is a
    boolean scalar, true when the group breaks the data policy.
    """

    prob: pl.Expr
    label: pl.Expr
    weight: pl.Expr | None
    invalid: pl.Expr

    def n_classes(self) -> pl.Expr:
        """Per-row vector length (null on unused rows)."""
        return self.prob.list.len()


def check_sum_tol(sum_tol: object) -> float:
    """Return `sum_tol` as a float if it is a finite number >= 0, else raise ``ValueError``."""
    if (
        isinstance(sum_tol, bool)
        or not isinstance(sum_tol, (int, float))
        or not math.isfinite(sum_tol)
        or sum_tol < 0
    ):
        msg = f"`sum_tol` must be a finite number >= 0, got {sum_tol!r}"
        raise ValueError(msg)
    return float(sum_tol)


def vector_outcomes(
    prob: IntoExpr, label: IntoExpr, weight: IntoExpr | None, sum_tol: float
) -> Vectors:
    """Validate and mask probability vectors and their integer labels."""
    vectors = to_expr(prob, "prob").cast(pl.List(pl.Float64))
    y = to_expr(label, "label").cast(pl.Float64)
    used = vectors.is_not_null() & y.is_not_null()
    invalid = pl.lit(False)
    w = None
    if weight is not None:
        w = to_expr(weight, "weight").cast(pl.Float64)
        used = used & w.is_not_null()
        invalid = (~((w >= 0.0) & w.is_finite())).any()
        w = pl.when(used).then(w)
    n_classes = vectors.list.len()
    entries_ok = vectors.list.eval(pl.element().is_between(0.0, 1.0).fill_null(False)).list.all()
    sum_ok = (vectors.list.sum() - 1.0).abs() <= sum_tol
    label_ok = (y == y.floor()) & (y >= 0.0) & (y < n_classes)
    row_ok = entries_ok & sum_ok & label_ok
    used_lengths = pl.when(used).then(n_classes)
    invalid = (
        invalid
        | (used & ~row_ok).any()
        | (used_lengths.min() != used_lengths.max()).fill_null(False)
    )
    # Bad rows only make the group null, but they are still exploded and binned:
    # give them a harmless label so every derived list keeps the vector's length.
    index = pl.when(used).then(pl.when(label_ok).then(y).otherwise(0.0).cast(pl.Int64))
    return Vectors(pl.when(used).then(vectors), index, w, invalid)


def prob_vector(*columns: IntoExpr) -> pl.Expr:
    """Build a probability-vector column from one column per class.

    Parameters
    ----------
    *columns
        The K class probabilities, in class order: column names or expressions.

    Returns
    -------
    Expr
        ``Array(Float64, K)``, one vector per row; a null entry stays null inside
        the vector (which makes the metrics' group null).

    Notes
    -----
    Built with ``pl.concat_arr`` (marked unstable by Polars) after casting each
    column to Float64.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p0": [0.7, 0.1], "p1": [0.2, 0.3], "p2": [0.1, 0.6]})
    >>> df.select(probs=pc.prob_vector("p0", "p1", "p2"))
    shape: (2, 1)
    ┌─────────────────┐
    │ probs           │
    │ ---             │
    │ array[f64, 3]   │
    ╞═════════════════╡
    │ [0.7, 0.2, 0.1] │
    │ [0.1, 0.3, 0.6] │
    └─────────────────┘
    """
    if not columns:
        msg = "`prob_vector` needs at least one column, got none"
        raise ValueError(msg)
    return pl.concat_arr([to_expr(c, "columns").cast(pl.Float64) for c in columns])


def _confidence(vectors: Vectors) -> Outcomes:
    """Confidence (max probability) and correctness (arg-max == label) of each used row."""
    confidence = vectors.prob.list.max()
    predicted = vectors.prob.list.arg_max().cast(pl.Int64)
    # Out-of-range values only occur in invalid groups; keep them out of the bin rule.
    confidence = pl.when(confidence.is_between(0.0, 1.0)).then(confidence)
    correct = pl.when(confidence.is_not_null()).then((predicted == vectors.label).cast(pl.Float64))
    return Outcomes(confidence, correct, vectors.weight, vectors.invalid)


def _packed(
    columns: Mapping[str, pl.Expr], body: Callable[[dict[str, pl.Expr]], pl.Expr]
) -> pl.Expr:
    """Evaluate `body` on `columns` packed into one list per group; a scalar per group.

    Inside ``list.eval`` the packed columns are elementwise fields, so windows keyed on
    them are allowed even where the columns came from ``explode`` or a window.
    """
    fields = {name: pl.element().struct.field(name) for name in columns}
    packed = pl.struct([expr.alias(name) for name, expr in columns.items()]).implode()
    return packed.list.eval(body(fields)).list.first()


def _grouped_error(
    columns: dict[str, pl.Expr], binning: Binning, norm: str, reduce_max: bool
) -> pl.Expr:
    """Binary calibration error within each group of rows, reduced over the groups.

    `columns` holds ``prob`` and ``label`` (0/1) Float64, ``group`` (a class, Int64
    >= 0) and optionally ``weight``, all null on unused rows. Bins follow `binning`
    within each group (quantile edges per group); each group's error is
    :func:`calibration_error` of its per-bin sums, groups with zero total weight are
    skipped, and the rest are averaged without weights, or maximised.
    """
    n_bins = binning.n_bins
    by_key = Binning(n_bins, "uniform", binning.closed)  # per_bin over an elementwise key

    def keyed(fields: dict[str, pl.Expr]) -> pl.Expr:
        if binning.strategy == "uniform":
            bins = binning.index(fields["prob"])
        else:
            bins = binning.index(fields["prob"]).over(fields["group"])
        return fields["group"] * n_bins + bins

    def per_group_bin(fields: dict[str, pl.Expr]) -> pl.Expr:
        key = fields["key"]
        outcomes = Outcomes(fields["prob"], fields["label"], fields.get("weight"), pl.lit(False))
        gap_sum = per_bin(outcomes.weighted(outcomes.prob - outcomes.label), key, by_key)
        if outcomes.weight is None:
            bin_weight = per_bin(outcomes.prob.is_not_null().cast(pl.Float64), key, by_key)
        else:
            bin_weight = per_bin(outcomes.weight, key, by_key)
        group = key.filter(key.is_first_distinct() & key.is_not_null()) // n_bins
        return _packed({"gap_sum": gap_sum, "bin_weight": bin_weight, "group": group}, finish)

    def finish(fields: dict[str, pl.Expr]) -> pl.Expr:
        bin_weight, group = fields["bin_weight"], fields["group"]
        per_group = calibration_error(fields["gap_sum"], bin_weight, bin_weight.sum(), norm)
        per_group = per_group.over(group).filter(group.is_first_distinct())
        return per_group.max() if reduce_max else per_group.mean()

    def with_key(fields: dict[str, pl.Expr]) -> pl.Expr:
        # Packed once more even when the key is elementwise: list.eval does not share
        # common subexpressions, and the key is used five times.
        return _packed({**fields, "key": keyed(fields)}, per_group_bin)

    return _packed(columns, with_key)


def _columns(outcomes: Outcomes, group: pl.Expr) -> dict[str, pl.Expr]:
    columns = {"prob": outcomes.prob, "label": outcomes.label, "group": group}
    if outcomes.weight is not None:
        columns["weight"] = outcomes.weight
    return columns


def _check(
    n_bins: int, strategy: str, closed: str, norm: str, sum_tol: object
) -> tuple[Binning, str, float]:
    return Binning(n_bins, strategy, closed), check_choice("norm", norm, NORMS), check_sum_tol(
        sum_tol
    )


def _named(result: pl.Expr, prob: IntoExpr) -> pl.Expr:
    """Name `result` after the probability expression, as the binary metrics are."""
    name = to_expr(prob, "prob").meta.output_name(raise_if_undetermined=False)
    return result if name is None else result.alias(name)


def confidence_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    norm: str = "l1",
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Confidence calibration error of probability vectors (Guo et al., 2017).

    The binary :func:`~polars_calib.ece` of the confidence (the largest probability
    of each vector) against correctness (whether its arg-max is the label).

    Parameters
    ----------
    prob
        Probability vectors: an ``Array`` or ``List`` column of K floats in [0, 1]
        summing to 1 (see :func:`prob_vector` to build one from K columns).
    label
        True class, an integer in ``0 .. K - 1``.
    n_bins
        Number of bins, a positive int.
    strategy
        ``"uniform"`` (equal width) or ``"quantile"`` (equal mass, edges at the
        linear-interpolation quantiles of the group's confidences).
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]``;
        ``"left"``: ``[0, 1/B), ..., [(B-1)/B, 1]``.
    norm
        ``"l1"`` (ECE), ``"l2"`` (RMSCE) or ``"max"`` (MCE).
    weight
        Optional non-negative sample weights.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a vector (default
        :data:`SUM_TOLERANCE`, 1e-6).

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Notes
    -----
    With :math:`c_i = \max_k p_{ik}`, :math:`\hat y_i = \arg\max_k p_{ik}` (the first
    maximal index on ties, as ``numpy.argmax``) and bins :math:`B_b` of the
    confidences, ``l1`` is

    .. math:: \sum_b \frac{W_b}{W} \Bigl| \frac{1}{W_b}\sum_{i \in B_b} w_i
              [\hat y_i = y_i] - \frac{1}{W_b}\sum_{i \in B_b} w_i c_i \Bigr|,

    ``l2`` the root of the weighted mean squared gap and ``max`` the largest gap over
    non-empty bins, exactly as :func:`~polars_calib.ece`. Confidences are at least
    ``1/K``, so bins below it stay empty.

    Examples
    --------
    torchmetrics' multiclass example, three bins:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40],
    ...               [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]],
    ...     "y": [0, 1, 2, 0],
    ... })
    >>> df.select(
    ...     ece=pc.confidence_ece("probs", "y", n_bins=3),
    ...     mce=pl.col("probs").calib.confidence_ece("y", n_bins=3, norm="max"),
    ... ).select(pl.all().round(4))
    shape: (1, 2)
    ┌─────┬────────┐
    │ ece ┆ mce    │
    │ --- ┆ ---    │
    │ f64 ┆ f64    │
    ╞═════╪════════╡
    │ 0.2 ┆ 0.2333 │
    └─────┴────────┘
    """
    binning, norm, tol = _check(n_bins, strategy, closed, norm, sum_tol)
    vectors = vector_outcomes(prob, label, weight, tol)
    return _named(binned_error(_confidence(vectors), binning, norm), prob)


def classwise_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    norm: str = "l1",
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Classwise calibration error: every class's one-vs-rest error, averaged.

    Class ``j``'s error is the binary :func:`~polars_calib.ece` of ``p_j`` against
    ``label == j``. ``norm="l1"`` and ``"l2"`` give the mean over the K classes of the
    per-class ECE or RMSCE; ``norm="max"`` gives the largest gap over all classes and
    bins (classwise-MCE).

    Parameters
    ----------
    prob
        Probability vectors: an ``Array`` or ``List`` column of K floats in [0, 1]
        summing to 1.
    label
        True class, an integer in ``0 .. K - 1``.
    n_bins, strategy, closed, norm, weight, sum_tol
        As :func:`confidence_ece`; with ``"quantile"`` each class has its own edges,
        the quantiles of its probabilities in the group.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Notes
    -----
    With :math:`B_{b,j}` the bins of class :math:`j`'s probabilities and
    :math:`W_{b,j}` their weights,

    .. math:: \text{classwise-ECE} = \frac{1}{K} \sum_{j=1}^{K} \sum_b
              \frac{W_{b,j}}{W} \bigl| \bar y_j(B_{b,j}) - \bar p_j(B_{b,j}) \bigr|

    (Kull et al., 2019; the ECML-PKDD 2020 calibration tutorial). Bins as
    :func:`~polars_calib.ece`. The vectors are exploded to one row per (row, class)
    and every (class, bin) sum comes from one window over ``class * n_bins + bin``:
    memory grows with rows times K.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40],
    ...               [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]],
    ...     "y": [0, 1, 2, 0],
    ... })
    >>> df.select(
    ...     ece=pc.classwise_ece("probs", "y", n_bins=3),
    ...     mce=pc.classwise_ece("probs", "y", n_bins=3, norm="max"),
    ... ).select(pl.all().round(4))
    shape: (1, 2)
    ┌────────┬──────┐
    │ ece    ┆ mce  │
    │ ---    ┆ ---  │
    │ f64    ┆ f64  │
    ╞════════╪══════╡
    │ 0.1917 ┆ 0.55 │
    └────────┴──────┘
    """
    binning, norm, tol = _check(n_bins, strategy, closed, norm, sum_tol)
    vectors = vector_outcomes(prob, label, weight, tol)
    n_classes = vectors.n_classes()
    probs = vectors.prob.list.explode()
    probs = pl.when(probs.is_between(0.0, 1.0)).then(probs)
    # int_ranges(-y, K - y) is 0 exactly at the true class: the one-hot label.
    hit = pl.int_ranges(-vectors.label, n_classes - vectors.label).list.explode() == 0
    weight_expr = None
    if vectors.weight is not None:
        weight_expr = vectors.weight.repeat_by(n_classes).list.explode()
    outcomes = Outcomes(probs, pl.when(probs.is_not_null()).then(hit.cast(pl.Float64)),
                        weight_expr, vectors.invalid)
    group = pl.int_ranges(n_classes).list.explode()
    error = _grouped_error(_columns(outcomes, group), binning, norm, reduce_max=norm == "max")
    return _named(pl.when(~vectors.invalid).then(error), prob)


def top_label_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    norm: str = "l1",
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Top-label calibration error (Gupta and Ramdas, 2021).

    For each predicted class ``j`` (the arg-max, first maximal index on ties), the
    binary :func:`~polars_calib.ece` of confidence against correctness among the rows
    predicted ``j``; then the unweighted mean over the classes predicted at least
    once (``"l1"``, ``"l2"``), or the largest gap over all of them (``"max"``).

    Parameters
    ----------
    prob
        Probability vectors: an ``Array`` or ``List`` column of K floats in [0, 1]
        summing to 1.
    label
        True class, an integer in ``0 .. K - 1``.
    n_bins, strategy, closed, norm, weight, sum_tol
        As :func:`confidence_ece`; with ``"quantile"`` the edges are the quantiles of
        the confidences of the rows predicted ``j``, per predicted class.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Notes
    -----
    With :math:`J` the set of predicted classes whose rows have positive total weight,

    .. math:: \text{top-label-ECE} = \frac{1}{|J|} \sum_{j \in J}
              \mathrm{ECE}\bigl(c_i, [\hat y_i = y_i] \;:\; \hat y_i = j\bigr).

    Each class counts once whatever its number of rows, so a rarely predicted class
    weighs as much as a frequent one. Bins as :func:`~polars_calib.ece`.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40],
    ...               [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]],
    ...     "y": [0, 1, 2, 0],
    ... })
    >>> df.select(tl_ece=pc.top_label_ece("probs", "y", n_bins=3).round(4))
    shape: (1, 1)
    ┌────────┐
    │ tl_ece │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.2    │
    └────────┘
    """
    binning, norm, tol = _check(n_bins, strategy, closed, norm, sum_tol)
    vectors = vector_outcomes(prob, label, weight, tol)
    outcomes = _confidence(vectors)
    predicted = pl.when(outcomes.prob.is_not_null()).then(vectors.prob.list.arg_max())
    columns = _columns(outcomes, predicted.cast(pl.Int64))
    error = _grouped_error(columns, binning, norm, reduce_max=norm == "max")
    return _named(pl.when(~vectors.invalid).then(error), prob)


def _is_vector(dtype: pl.DataType) -> bool:
    return isinstance(dtype, (pl.Array, pl.List))


def _vector_mean(
    prob: pl.Expr,
    label: IntoExpr,
    weight: IntoExpr | None,
    sum_tol: float,
    term: Callable[[Vectors, pl.Expr], pl.Expr],
) -> pl.Expr:
    vectors = vector_outcomes(prob, label, weight, sum_tol)
    true_prob = vectors.prob.list.get(vectors.label, null_on_oob=True)
    outcomes = Outcomes(true_prob, vectors.label.cast(pl.Float64), vectors.weight, vectors.invalid)
    return _named(weighted_mean(outcomes, term(vectors, true_prob)), prob)


def _brier_term(vectors: Vectors, true_prob: pl.Expr) -> pl.Expr:
    # sum_c (p_c - [c = y])^2 = sum_c p_c^2 - 2 p_y + 1
    squares = vectors.prob.list.eval(pl.element() * pl.element()).list.sum()
    return squares - 2.0 * true_prob + 1.0


def _log_loss_term(vectors: Vectors, true_prob: pl.Expr) -> pl.Expr:
    return log_loss_term(true_prob, pl.lit(1.0))


def brier(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Brier score of binary probabilities or of probability vectors.

    A Float64 `prob` is the binary case, :func:`polars_calib.binary.brier`: the mean
    of ``(p - y)**2``, in [0, 1]. An ``Array`` or ``List`` `prob` holds probability
    vectors and an integer label in ``0 .. K - 1``: the mean over rows of
    :math:`\sum_c (p_c - [c = y])^2`, in [0, 2], as the original Brier (1950) score
    and the calibration tutorial's; for K = 2 it is twice the binary score.

    Parameters
    ----------
    prob
        Probability of the positive class, or probability vectors.
    label
        0/1 outcome (binary) or the true class (vectors).
    weight
        Optional non-negative sample weights.
    sum_tol
        Vectors only: largest accepted ``|sum(p) - 1|`` (default 1e-6).

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Notes
    -----
    The binary or vector form is chosen when the query is planned, from the column's
    dtype, with ``Expr.pipe_with_dtype`` (marked unstable by Polars). Vectors follow
    the multi-class data policy of :mod:`polars_calib.multiclass`.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40],
    ...               [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]],
    ...     "y": [0, 1, 2, 0],
    ...     "p": [0.1, 0.9, 0.8, 0.3],
    ...     "b": [0, 1, 1, 0],
    ... })
    >>> df.select(
    ...     vector=pc.brier("probs", "y").round(4),
    ...     binary=pl.col("p").calib.brier("b").round(4),
    ... )
    shape: (1, 2)
    ┌────────┬────────┐
    │ vector ┆ binary │
    │ ---    ┆ ---    │
    │ f64    ┆ f64    │
    ╞════════╪════════╡
    │ 0.6362 ┆ 0.0375 │
    └────────┴────────┘
    """
    tol = check_sum_tol(sum_tol)

    def dispatch(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
        if _is_vector(dtype):
            return _vector_mean(expr, label, weight, tol, _brier_term)
        return binary.brier(expr, label, weight=weight)

    return to_expr(prob, "prob").pipe_with_dtype(dispatch)


def log_loss(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Log-loss of binary probabilities or of probability vectors.

    A Float64 `prob` is the binary case, :func:`polars_calib.binary.log_loss`. An
    ``Array`` or ``List`` `prob` holds probability vectors and an integer label in
    ``0 .. K - 1``: :math:`-\mathrm{mean}\,\log \mathrm{clip}(p_y, \epsilon, 1 -
    \epsilon)` with :math:`\epsilon` the float64 machine epsilon, as scikit-learn's
    ``log_loss``.

    Parameters
    ----------
    prob
        Probability of the positive class, or probability vectors.
    label
        0/1 outcome (binary) or the true class (vectors).
    weight
        Optional non-negative sample weights.
    sum_tol
        Vectors only: largest accepted ``|sum(p) - 1|`` (default 1e-6).

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Notes
    -----
    Dispatch on the dtype as :func:`brier`. Only the probability of the true class
    counts; the other entries are validated but do not enter the loss.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40],
    ...               [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]],
    ...     "y": [0, 1, 2, 0],
    ... })
    >>> df.select(pl.col("probs").calib.log_loss("y").round(4))
    shape: (1, 1)
    ┌────────┐
    │ probs  │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 1.2496 │
    └────────┘
    """
    tol = check_sum_tol(sum_tol)

    def dispatch(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
        if _is_vector(dtype):
            return _vector_mean(expr, label, weight, tol, _log_loss_term)
        return binary.log_loss(expr, label, weight=weight)

    return to_expr(prob, "prob").pipe_with_dtype(dispatch)
