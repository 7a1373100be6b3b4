"""Binary calibration metrics as Polars expressions.

Each function takes the probability of the positive class and a 0/1 label (column
names or expressions) and returns an aggregating ``pl.Expr``: one Float64 value per
group in ``select``, ``group_by().agg``, ``group_by_dynamic().agg``, ``rolling`` and
``over``, in the in-memory and the streaming engine.

Data policy, the same for every metric:

* a row whose probability, label or weight is null is ignored, and counts toward
  no denominator;
* a group holding a probability outside [0, 1] or NaN, a label other than 0/1 (with
  `pos_label`, a NaN label), or a negative, NaN, infinite or subnormal weight gives
  **null** (never a number), as does a group whose weights sum to 1e300 or more (its
  sums would overflow; see ``docs/reliability-and-summary.md``, "Weights");
* a group with no usable row (or zero total weight) gives null;
* with `pos_label`, a group without a label equal to it is all negatives (as 0/1
  labels without a 1): a group cannot tell a mistyped `pos_label` from that, so
  :func:`polars_calib.validate` and the frame functions refuse a `pos_label` that no
  label of the frame equals.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from polars_calib._core.binning import binning as make_binning
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import NORMS, Closed, Compat, Distance, Norm, Strategy, check_choice
from polars_calib._core.problem import binary_problem
from polars_calib._table.bin_sums import binned_error, row_mean
from polars_calib._table.distance import binary_distance_error, check_distance

__all__ = ["brier", "ece", "log_loss", "mce", "rmsce"]


def ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    norm: Norm = "l1",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    compat: Compat | None = None,
    distance: Distance | None = None,
    bins: IntoExpr | None = None,
) -> pl.Expr:
    r"""Expected calibration error of binary probabilities.

    Parameters
    ----------
    prob
        Probability of the positive class, in [0, 1].
    label
        Outcome: bool, or integers/floats equal to 0 or 1.
    n_bins
        Number of bins, a positive int.
    strategy
        ``"uniform"``: equal-width bins; ``"quantile"``: equal-mass bins with edges at
        the linear-interpolation quantiles of the group's probabilities.
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]``;
        ``"left"``: ``[0, 1/B), ..., [(B-1)/B, 1]``.
    norm
        ``"l1"`` (ECE), ``"l2"`` (RMSCE) or ``"max"`` (MCE).
    weight
        Optional non-negative sample weights; every count and mean becomes weighted.
    pos_label
        The label of the positive class when labels are not 0/1 (1/2, -1/1,
        strings): a label is 1 when it equals `pos_label`, else 0, as scikit-learn's.
    compat
        Reproduce a peer's bins exactly: ``"sklearn"``, ``"netcal"``,
        ``"torchmetrics"`` or ``"mapie"`` (see :func:`polars_calib._core.binning.binning`
        and ``docs/conventions.md``). The default is the exact ``k / B`` rule.
    distance
        ``"tv"``, ``"cityblock"`` or ``"sqeuclidean"``: the ECE of the vectors
        ``[1 - p, p]`` (:func:`polars_calib.canonical_ece`), binned on both
        components. Where no ``p`` sits on an edge, ``"tv"`` is the classic ECE and
        ``"cityblock"`` twice it; a ``p`` on an edge gets a cell of its own (see
        ``docs/ece-family.md``). ``norm`` must stay ``"l1"``.
    bins
        A column of precomputed bins (for example from
        :func:`polars_calib.median_variance_bins`) replacing `n_bins` and
        `strategy`; with no `distance`, the classic ECE over those bins.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Notes
    -----
    With :math:`W_b` the weight in bin :math:`b`, :math:`W = \sum_b W_b` and
    :math:`\mathrm{gap}_b` the observed frequency of positives minus the mean
    predicted probability in the bin,

    * ``l1``: :math:`\sum_b (W_b / W) |\mathrm{gap}_b|` (Naeini et al., 2015),
    * ``l2``: :math:`\sqrt{\sum_b (W_b / W)\, \mathrm{gap}_b^2}`,
    * ``max``: :math:`\max_b |\mathrm{gap}_b|` over bins with :math:`W_b > 0`.

    Empty bins contribute nothing. Edges are exact: ``0.7`` with 10 bins is in
    ``(0.6, 0.7]`` right-closed and in ``[0.7, 0.8)`` left-closed. Quantile edges are
    the unweighted quantiles of the group's probabilities; tied edges give empty bins.

    Examples
    --------
    The 10-item worked example with three bins:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.61, 0.39, 0.31, 0.76, 0.22, 0.59, 0.92, 0.83, 0.57, 0.41],
    ...     "y": [1, 1, 0, 1, 1, 1, 0, 1, 1, 0],
    ... })
    >>> df.select(ece=pc.ece("p", "y", n_bins=3).round(4))
    shape: (1, 1)
    ┌───────┐
    │ ece   │
    │ ---   │
    │ f64   │
    ╞═══════╡
    │ 0.241 │
    └───────┘

    Per group, with the namespace form:

    >>> df.with_columns(half=pl.int_range(pl.len()) % 2).group_by(
    ...     "half", maintain_order=True
    ... ).agg(ece=pl.col("p").calib.ece("y", n_bins=3).round(4))
    shape: (2, 2)
    ┌──────┬───────┐
    │ half ┆ ece   │
    │ ---  ┆ ---   │
    │ i64  ┆ f64   │
    ╞══════╪═══════╡
    │ 0    ┆ 0.442 │
    │ 1    ┆ 0.204 │
    └──────┴───────┘
    """
    check_choice("norm", norm, NORMS)
    if distance is not None or bins is not None:
        used, _ = check_distance(distance or "tv")
        if norm != "l1" or compat is not None:
            msg = "`distance` and `bins` take the default `norm='l1'` and no `compat`"
            raise ValueError(msg)
        # Given bins replace the grid (median-variance ones included).
        binning = None if bins is not None else make_binning(n_bins, strategy, closed)
        problem = binary_problem(prob, label, weight, pos_label)
        return binary_distance_error(problem, binning, bins, used).alias(
            to_expr(prob, "prob").meta.output_name(raise_if_undetermined=False) or "prob"
        )
    binning = make_binning(n_bins, strategy, closed, compat)
    return binned_error(binary_problem(prob, label, weight, pos_label), binning, norm)


def mce(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    compat: Compat | None = None,
) -> pl.Expr:
    """Maximum calibration error: :func:`ece` with ``norm="max"``.

    The largest ``|observed - mean predicted|`` over the non-empty bins.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.25, 0.25, 0.55, 0.75, 0.75], "y": [0, 0, 1, 1, 1]})
    >>> df.select(mce=pc.mce("p", "y", n_bins=2).round(4))
    shape: (1, 1)
    ┌────────┐
    │ mce    │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.3167 │
    └────────┘
    """
    return ece(
        prob,
        label,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        norm="max",
        weight=weight,
        pos_label=pos_label,
        compat=compat,
    )


def rmsce(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    compat: Compat | None = None,
) -> pl.Expr:
    """Root-mean-square calibration error: :func:`ece` with ``norm="l2"``.

    ``sqrt(sum_b (W_b / W) * gap_b**2)``.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.25, 0.25, 0.55, 0.75, 0.75], "y": [0, 0, 1, 1, 1]})
    >>> df.select(rmsce=pc.rmsce("p", "y", n_bins=2).round(4))
    shape: (1, 1)
    ┌────────┐
    │ rmsce  │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.2918 │
    └────────┘
    """
    return ece(
        prob,
        label,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        norm="l2",
        weight=weight,
        pos_label=pos_label,
        compat=compat,
    )


def brier(
    prob: IntoExpr, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> pl.Expr:
    """Brier score: the (weighted) mean of ``(p - y)**2``, in [0, 1].

    Matches scikit-learn's ``brier_score_loss`` for binary labels.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.9, 0.8, 0.3], "y": [0, 1, 1, 0]})
    >>> df.select(brier=pc.brier("p", "y").round(4))
    shape: (1, 1)
    ┌────────┐
    │ brier  │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.0375 │
    └────────┘
    """
    return row_mean(binary_problem(prob, label, weight, pos_label), "squared_error")


def log_loss(
    prob: IntoExpr, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> pl.Expr:
    """Log-loss (cross-entropy), natural log, with p clipped to ``[eps, 1 - eps]``.

    ``eps`` is the float64 machine epsilon, as in scikit-learn's ``log_loss``, so a
    confident wrong prediction costs about 36 rather than infinity.

    Returns
    -------
    Expr
        Float64, one value per group; null for an empty or invalid group.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.9, 0.8, 0.35], "y": [0, 1, 1, 0]})
    >>> df.select(log_loss=pc.log_loss("p", "y").round(4))
    shape: (1, 1)
    ┌──────────┐
    │ log_loss │
    │ ---      │
    │ f64      │
    ╞══════════╡
    │ 0.2162   │
    └──────────┘
    """
    return row_mean(binary_problem(prob, label, weight, pos_label), "log_loss")
