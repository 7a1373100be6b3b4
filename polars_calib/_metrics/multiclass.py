"""Multi-class calibration metrics: reductions of probability vectors to binary problems.

Each metric takes a probability-vector column (``pl.Array(pl.Float64, K)`` or
``pl.List(pl.Float64)``, which give the same numbers) and an integer label in
``0 .. K - 1``, and returns an aggregating ``pl.Expr`` that works in every context the
binary metrics do. No metric bins on its own: each reduces the vectors to binary
problems (:func:`polars_calib._core.problem.vector_problem`, the definition the frame
functions use too) and hands them to the binary finishers.

* **confidence**: the maximum probability against whether the arg-max (first maximal
  index on ties, as ``numpy.argmax``) is the label; one binary problem.
* **classwise**: ``p_j`` against ``label == j`` for every class ``j``; K binary
  problems, averaged (``l1``, ``l2``) or maximised (``max``).
* **top-label**: the confidence problem within the rows predicted ``j``, for every
  predicted class; averaged (``l1``, ``l2``) or maximised (``max``).

Several problems are evaluated at once without a Python loop (see
:func:`polars_calib._table.bin_sums.keyed_binned_error`): the entries are packed with
``implode`` and evaluated in ``list.eval``, where the class and the bin form one
elementwise window key, in select, over, group_by, dynamic and rolling windows, and
the streaming engine.

Data policy (as the binary metrics, plus what vectors add):

* a row whose vector, label or weight is null is ignored;
* a group gives **null** when any row has a vector holding a null, a NaN or a
  value outside [0, 1], a vector whose sum is off 1 by more than ``sum_tol``
  (default :data:`SUM_TOLERANCE`), a label that is not an integer in ``0 .. K - 1``,
  a negative, NaN, infinite or subnormal weight, or weights summing to 1e300 or more
  (see ``docs/reliability-and-summary.md``, "Weights"); the classwise reduction also
  needs every used vector of the group to have the same length (``List`` input);
* a group with no used row, or zero total weight, gives null.
"""

from __future__ import annotations

from typing import cast

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.binning import binning as make_binning
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import (
    NORMS,
    SUM_TOLERANCE,
    TOP_LABEL_AVERAGES,
    Closed,
    Compat,
    Norm,
    Strategy,
    TopLabelAverage,
    check_choice,
    check_sum_tol,
)
from polars_calib._core.problem import vector_problem
from polars_calib._table.bin_sums import binned_error, keyed_binned_error, row_mean

__all__ = [
    "SUM_TOLERANCE",
    "classwise_ece",
    "confidence_ece",
    "multiclass_brier",
    "multiclass_log_loss",
    "prob_vector",
    "top_label_ece",
]


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
    .. warning::
        This functionality is considered **unstable**: it is built with
        ``pl.concat_arr``, which Polars marks unstable. ``pl.concat_list`` of the
        columns gives a ``List`` column that every metric accepts too.

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


def _check(
    n_bins: int,
    strategy: str,
    closed: str,
    norm: str,
    sum_tol: object,
    compat: Compat | None = None,
) -> tuple[Binning, Norm, float]:
    binning = make_binning(n_bins, strategy, closed, compat)  # type: ignore[arg-type]
    check_choice("norm", norm, NORMS)
    return binning, norm, check_sum_tol(sum_tol)  # type: ignore[return-value]


def _named(result: pl.Expr, prob: IntoExpr) -> pl.Expr:
    """Name `result` after the probability expression, as the binary metrics are."""
    name = to_expr(prob, "prob").meta.output_name(raise_if_undetermined=False)
    return result if name is None else result.alias(name)


def confidence_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    norm: Norm = "l1",
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
    compat: Compat | None = None,
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
    binning, norm, tol = _check(n_bins, strategy, closed, norm, sum_tol, compat)
    problem = vector_problem(prob, label, weight, tol, "confidence")
    return _named(binned_error(problem, binning, norm), prob)


def classwise_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    norm: Norm = "l1",
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
    compat: Compat | None = None,
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
    binning, norm, tol = _check(n_bins, strategy, closed, norm, sum_tol, compat)
    problem = vector_problem(prob, label, weight, tol, "classwise")
    return _named(keyed_binned_error(problem, binning, norm), prob)


def top_label_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    norm: Norm = "l1",
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
    average: TopLabelAverage | None = None,
    compat: Compat | None = None,
) -> pl.Expr:
    r"""Top-label calibration error (Gupta and Ramdas, 2021).

    For each predicted class ``j`` (the arg-max, first maximal index on ties), the
    binary :func:`~polars_calib.ece` of confidence against correctness among the rows
    predicted ``j``; then, for ``"l1"`` and ``"l2"``, the mean over the classes
    predicted at least once (unweighted with ``average="macro"``, MAPIE's
    ``top_label_ece``; weighted by each class's share of the predictions with
    ``average="weighted"``, Gupta and Ramdas' estimator), or the largest gap over all
    of them (``"max"``).

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
    average
        ``"macro"`` (``None``, the default): every predicted class counts once, as MAPIE's
        ``top_label_ece``; ``"weighted"``: classes weighted by their total weight
        (row count), which is the binned estimate of Gupta and Ramdas' top-label
        ECE, :math:`E\,|P(Y = c(X) \mid c(X), h(X)) - h(X)|`.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    See Also
    --------
    confidence_ece, classwise_ece

    Notes
    -----
    With :math:`J` the set of predicted classes whose rows have positive total weight
    :math:`W_j` (:math:`W = \sum_j W_j`) and :math:`\mathrm{ECE}_j` the binary ECE of
    confidence against correctness among the rows predicted :math:`j`,

    .. math:: \text{macro} = \frac{1}{|J|} \sum_{j \in J} \mathrm{ECE}_j, \qquad
              \text{weighted} = \sum_{j \in J} \frac{W_j}{W} \mathrm{ECE}_j .

    With ``macro`` a rarely predicted class weighs as much as a frequent one. Bins as
    :func:`~polars_calib.ece`.

    References
    ----------
    C. Gupta and A. Ramdas, "Top-label calibration and multiclass-to-binary
    reductions", ICLR 2022. MAPIE, ``mapie.metrics.top_label_ece``.

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
    binning, norm, tol = _check(n_bins, strategy, closed, norm, sum_tol, compat)
    chosen = cast(TopLabelAverage, check_choice("average", average or "macro", TOP_LABEL_AVERAGES))
    problem = vector_problem(prob, label, weight, tol, "top_label")
    return _named(keyed_binned_error(problem, binning, norm, chosen), prob)


def multiclass_brier(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Brier score of probability vectors.

    The mean over rows of the squared distance to the one-hot label.

    Parameters
    ----------
    prob
        Probability vectors: an ``Array`` or ``List`` column of K floats in [0, 1]
        summing to 1.
    label
        True class, an integer in ``0 .. K - 1``.
    weight
        Optional non-negative sample weights.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a vector (default 1e-6).

    Returns
    -------
    Expr
        Float64 in [0, 2], one value per group; null for an empty or invalid group.

    See Also
    --------
    polars_calib.brier : the binary score, in [0, 1].
    multiclass_log_loss : the log-loss of probability vectors.

    Notes
    -----
    :math:`\frac{1}{W}\sum_i w_i \sum_c (p_{ic} - [c = y_i])^2`, the original Brier
    (1950) score and the calibration tutorial's (ECML-PKDD 2020); for K = 2 it is
    twice the binary score of ``p_1``. Vectors follow the multi-class data policy of
    :mod:`polars_calib._metrics.multiclass`.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40],
    ...               [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]],
    ...     "y": [0, 1, 2, 0],
    ... })
    >>> df.select(brier=pc.multiclass_brier("probs", "y").round(4))
    shape: (1, 1)
    ┌────────┐
    │ brier  │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.6362 │
    └────────┘
    """
    problem = vector_problem(prob, label, weight, check_sum_tol(sum_tol), "confidence")
    return _named(row_mean(problem, "squared_error"), prob)


def multiclass_log_loss(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    sum_tol: float = SUM_TOLERANCE,
) -> pl.Expr:
    r"""Log-loss of probability vectors: the mean of ``-log p_y``, the true class's probability.

    Parameters
    ----------
    prob
        Probability vectors: an ``Array`` or ``List`` column of K floats in [0, 1]
        summing to 1.
    label
        True class, an integer in ``0 .. K - 1``.
    weight
        Optional non-negative sample weights.
    sum_tol
        Largest accepted ``|sum(p) - 1|`` of a vector (default 1e-6).

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    See Also
    --------
    polars_calib.log_loss : the binary log-loss.
    multiclass_brier : the Brier score of probability vectors.

    Notes
    -----
    :math:`-\frac{1}{W}\sum_i w_i \log \mathrm{clip}(p_{i y_i}, \epsilon, 1 - \epsilon)`
    with :math:`\epsilon` the float64 machine epsilon, as scikit-learn's ``log_loss``.
    Only the probability of the true class counts; the other entries are validated
    but do not enter the loss.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "probs": [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40],
    ...               [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]],
    ...     "y": [0, 1, 2, 0],
    ... })
    >>> df.select(pl.col("probs").calib.multiclass_log_loss("y").round(4))
    shape: (1, 1)
    ┌────────┐
    │ probs  │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 1.2496 │
    └────────┘
    """
    problem = vector_problem(prob, label, weight, check_sum_tol(sum_tol), "confidence")
    return _named(row_mean(problem, "log_loss"), prob)
