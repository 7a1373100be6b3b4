r"""Is it miscalibrated? Calibration tests and score decompositions as Polars expressions.

Each function takes binary probabilities and 0/1 labels (column names or
expressions, with ``weight=`` and ``pos_label=`` as :func:`polars_calib.ece`) and
returns an aggregating ``pl.Expr``: one value per group in ``select``,
``group_by().agg``, ``group_by_dynamic().agg`` and ``over``, in the in-memory and the
streaming engine. p-values are computed in the query (:mod:`polars_calib._core.special`).

* :func:`spiegelhalter_z`, :func:`spiegelhalter_p`: Spiegelhalter's test (1986);
* :func:`hosmer_lemeshow`, :func:`hosmer_lemeshow_p`: the Hosmer-Lemeshow test;
* :func:`debiased_ece_squared`, :func:`debiased_ece`: Kumar, Liang & Ma's (2019)
  debiased estimate of the squared (L2) calibration error;
* :func:`brier_decomposition`: Murphy's (1973) decomposition of the Brier score with
  the within-bin terms of Stephenson et al. (2008), a struct;
* :func:`calibration_loss`, :func:`refinement_loss`: the split of the Brier score or
  the log-loss into calibration and refinement loss (Kull & Flach, 2015).

Every statistic is also a metric of :func:`polars_calib.summary` and
:func:`polars_calib.metrics_from_statistics` (``metrics=["spiegelhalter_p", ...]``,
the names of :data:`polars_calib._core.options.Diagnostic`), finished from the sums of the
statistics table by the same code (:mod:`polars_calib._table.bin_sums`), so that partitions
merge exactly; quantile-bin statistics do not merge (their edges depend on all of a
group's rows).

Data policy, that of the metrics: rows with a null probability, label or weight are
ignored; a group holding a refused row gives null; so does a group too small for the
statistic (see each function). Weights are frequency weights: a row of weight 2 counts
as two rows (Spiegelhalter's variance is ``sum w (1 - 2p)**2 p (1 - p)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.exprs import IntoExpr
from polars_calib._core.options import (
    ALTERNATIVES,
    LOSS_STRATEGIES,
    SCORES,
    Alternative,
    Closed,
    LossStrategy,
    Score,
    Strategy,
    check_choice,
    check_hosmer_lemeshow_bins,
)
from polars_calib._core.problem import Problem, binary_problem
from polars_calib._table import bin_sums as _finish

__all__ = [
    "brier_decomposition",
    "calibration_loss",
    "debiased_ece",
    "debiased_ece_squared",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "refinement_loss",
    "spiegelhalter_p",
    "spiegelhalter_z",
]


def _valid(problem: Problem, value: pl.Expr) -> pl.Expr:
    """`value`, or null for a group holding a refused row; named after the probability,
    as the metrics are (the packed sums would otherwise name it)."""
    result = pl.when(~problem.invalid).then(value)
    name = problem.prob.meta.output_name(raise_if_undetermined=False)
    return result if name is None else result.alias(name)


def _spiegelhalter(
    prob: IntoExpr, label: IntoExpr, weight: Any, pos_label: Any
) -> tuple[Problem, dict[str, pl.Expr]]:
    problem = binary_problem(prob, label, weight, pos_label)
    sums = {
        "numerator": _finish.row_sum(problem, "spiegelhalter_numerator"),
        "variance": _finish.row_sum(problem, "spiegelhalter_variance"),
    }
    return problem, sums


def spiegelhalter_z(
    prob: IntoExpr, label: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> pl.Expr:
    r"""Spiegelhalter's Z statistic: the Brier score standardised under calibration.

    Parameters
    ----------
    prob
        Probability of the positive class, in [0, 1].
    label
        Outcome: bool, or integers/floats equal to 0 or 1 (see `pos_label`).
    weight
        Optional non-negative frequency weights: each term is multiplied by its weight.
    pos_label
        The label of the positive class when labels are not 0/1.

    Returns
    -------
    Expr
        Float64, one value per group; null for an invalid group, an empty one, or one
        whose variance under calibration is 0 (every p in {0, 1/2, 1}: one row at
        p = 1/2, say).

    Notes
    -----
    .. math::

        Z = \frac{\sum_i w_i (y_i - p_i)(1 - 2 p_i)}
                 {\sqrt{\sum_i w_i (1 - 2 p_i)^2 p_i (1 - p_i)}}

    is asymptotically standard normal when the ``y_i`` are independent
    Bernoulli(``p_i``). Large positive values mean a Brier score larger than
    calibration explains (overconfidence); negative ones, a smaller one. MAPIE's
    ``spiegelhalter_statistic`` is the same number.

    References
    ----------
    D. J. Spiegelhalter, "Probabilistic prediction in patient management and clinical
    trials", Statistics in Medicine 5 (1986), 421-433.

    See Also
    --------
    spiegelhalter_p, hosmer_lemeshow

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.9, 0.21, 0.9, 0.5], "y": [0, 1, 0, 1, 0]})
    >>> df.select(z=pc.spiegelhalter_z("p", "y").round(4))
    shape: (1, 1)
    ┌─────────┐
    │ z       │
    │ ---     │
    │ f64     │
    ╞═════════╡
    │ -0.7567 │
    └─────────┘
    """
    problem, sums = _spiegelhalter(prob, label, weight, pos_label)

    def z(packed: dict[str, pl.Expr]) -> pl.Expr:
        return _finish.spiegelhalter_z(packed["numerator"], packed["variance"])

    return _valid(problem, _finish.in_group(sums, z))


def spiegelhalter_p(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    alternative: Alternative = "two-sided",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    r"""The p-value of Spiegelhalter's test of calibration.

    Parameters
    ----------
    prob, label, weight, pos_label
        As :func:`spiegelhalter_z`.
    alternative
        ``"two-sided"`` (default): :math:`2(1 - \Phi(|Z|))`; ``"greater"``:
        :math:`1 - \Phi(Z)`, small when the Brier score is too large (MAPIE's
        ``spiegelhalter_p_value`` reports this one); ``"less"``: :math:`\Phi(Z)`.

    Returns
    -------
    Expr
        Float64 in [0, 1], one value per group; null where :func:`spiegelhalter_z` is.

    Notes
    -----
    :math:`\Phi` is the standard normal distribution function, computed in the query
    (from Polars' ``erfc``, accurate to about 1e-13 relative, also far in the
    tails). ``metrics=["spiegelhalter_p"]`` in a summary is the two-sided p-value.

    References
    ----------
    D. J. Spiegelhalter (1986), see :func:`spiegelhalter_z`.

    See Also
    --------
    spiegelhalter_z, hosmer_lemeshow_p

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.8, 0.3, 0.5, 0.5, 0.7, 0.1], "y": [1, 0, 1, 0, 1, 0]})
    >>> df.select(
    ...     two_sided=pc.spiegelhalter_p("p", "y").round(4),
    ...     greater=pc.spiegelhalter_p("p", "y", alternative="greater").round(4),
    ... )
    shape: (1, 2)
    ┌───────────┬─────────┐
    │ two_sided ┆ greater │
    │ ---       ┆ ---     │
    │ f64       ┆ f64     │
    ╞═══════════╪═════════╡
    │ 0.3029    ┆ 0.8486  │
    └───────────┴─────────┘
    """
    check_choice("alternative", alternative, ALTERNATIVES)
    problem, sums = _spiegelhalter(prob, label, weight, pos_label)

    def z(packed: dict[str, pl.Expr]) -> pl.Expr:
        return _finish.spiegelhalter_z(packed["numerator"], packed["variance"])

    def p_value(packed: dict[str, pl.Expr]) -> pl.Expr:
        return _finish.normal_p_value(packed["z"], alternative)

    # Packed twice: the sums once, then Z once (the normal tail reads it many times).
    return _valid(problem, _finish.in_group({"z": _finish.in_group(sums, z)}, p_value))


def _hosmer_lemeshow(
    prob: IntoExpr,
    label: IntoExpr,
    n_bins: int,
    strategy: Strategy,
    closed: Closed,
    weight: Any,
    pos_label: Any,
    finisher: Callable[[_finish.BinSums], pl.Expr],
) -> pl.Expr:
    check_hosmer_lemeshow_bins(n_bins)
    binning = Binning(n_bins, strategy, closed)
    problem = binary_problem(prob, label, weight, pos_label)
    return _valid(problem, _finish.finish_binned(problem, binning, finisher))


def hosmer_lemeshow(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 10,
    strategy: Strategy = "quantile",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    r"""The Hosmer-Lemeshow statistic over `n_bins` groups of predicted risk.

    Parameters
    ----------
    prob, label, weight, pos_label
        As :func:`spiegelhalter_z`.
    n_bins
        Number of groups G, at least 3 (``ValueError`` otherwise: df = G - 2).
    strategy
        ``"quantile"`` (default: the classic deciles of risk, Hosmer and Lemeshow's
        :math:`\hat C`; **not** mergeable across partitions) or ``"uniform"`` (equal
        width, their :math:`\hat H`; mergeable), the package's bins
        (:class:`polars_calib.Binning`).
    closed
        Which side of each bin is closed (see :func:`polars_calib.ece`).

    Returns
    -------
    Expr
        Float64 >= 0 (possibly ``inf``), one value per group; null for an invalid or
        empty group.

    Notes
    -----
    Over the non-empty groups g, with :math:`n_g` their weight, :math:`O_g` the
    weighted count of positives and :math:`E_g = \sum w p` the expected one,

    .. math::

        H = \sum_g \frac{(O_g - E_g)^2}{E_g}
            + \frac{((n_g - O_g) - (n_g - E_g))^2}{n_g - E_g}.

    A group where :math:`E_g = 0` (every p is 0) or :math:`n_g - E_g = 0` (every p
    is 1) adds 0 when it holds no positive (no negative) either, and makes H infinite
    (p-value 0) otherwise: an outcome given probability 0 happened. Empty bins
    (quantile bins on tied probabilities, uniform bins with no row) are skipped and
    reduce the degrees of freedom.

    References
    ----------
    D. W. Hosmer and S. Lemeshow, "Goodness of fit tests for the multiple logistic
    regression model", Communications in Statistics A 9 (1980), 1043-1069.

    See Also
    --------
    hosmer_lemeshow_p, spiegelhalter_z

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.1, 0.2, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9],
    ...     "y": [0, 0, 1, 0, 1, 0, 1, 1, 1, 0],
    ... })
    >>> df.select(
    ...     h=pc.hosmer_lemeshow("p", "y", n_bins=3, strategy="uniform").round(4),
    ...     p_value=pc.hosmer_lemeshow_p("p", "y", n_bins=3, strategy="uniform").round(4),
    ... )
    shape: (1, 2)
    ┌────────┬─────────┐
    │ h      ┆ p_value │
    │ ---    ┆ ---     │
    │ f64    ┆ f64     │
    ╞════════╪═════════╡
    │ 1.0892 ┆ 0.2967  │
    └────────┴─────────┘
    """
    return _hosmer_lemeshow(
        prob,
        label,
        n_bins,
        strategy,
        closed,
        weight,
        pos_label,
        lambda bins: _finish.hosmer_lemeshow(bins)[0],
    )


def hosmer_lemeshow_p(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 10,
    strategy: Strategy = "quantile",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    r"""The p-value of the Hosmer-Lemeshow test: chi-square survival with G - 2 df.

    Parameters
    ----------
    prob, label, n_bins, strategy, closed, weight, pos_label
        As :func:`hosmer_lemeshow`.

    Returns
    -------
    Expr
        Float64 in [0, 1], one value per group; null for an invalid or empty group,
        and for a group with fewer than 3 non-empty bins (df < 1: one row, say).

    Notes
    -----
    :math:`P(\chi^2_{G - 2} > H)` with G the number of non-empty groups, computed in
    the query as a finite sum (integer df; accurate to about 1e-12 relative).

    References
    ----------
    Hosmer and Lemeshow (1980), see :func:`hosmer_lemeshow`.

    See Also
    --------
    hosmer_lemeshow, spiegelhalter_p

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.1, 0.2, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9],
    ...     "y": [0, 0, 1, 0, 1, 0, 1, 1, 1, 0],
    ... })
    >>> df.select(pc.hosmer_lemeshow_p("p", "y", n_bins=3, strategy="uniform").round(4)).item()
    0.2967
    """
    return _hosmer_lemeshow(
        prob, label, n_bins, strategy, closed, weight, pos_label, _finish.hosmer_lemeshow_p
    )


def _binned(
    prob: IntoExpr,
    label: IntoExpr,
    binning: Binning | None,
    weight: Any,
    pos_label: Any,
    finisher: Callable[[_finish.BinSums], pl.Expr],
    terms: tuple[str, ...] = (),
) -> pl.Expr:
    """`finisher` on the per-bin sums of the problem, null for a group with a refused row."""
    problem = binary_problem(prob, label, weight, pos_label)
    return _valid(problem, _finish.finish_binned(problem, binning, finisher, terms))


def debiased_ece_squared(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    r"""Debiased estimate of the squared (L2) binned calibration error; may be negative.

    Parameters
    ----------
    prob, label, weight, pos_label
        As :func:`spiegelhalter_z`.
    n_bins, strategy, closed
        The bins, as :func:`polars_calib.ece`.

    Returns
    -------
    Expr
        Float64, one value per group; null for an invalid or empty group.

    Notes
    -----
    The plug-in :math:`\mathrm{RMSCE}^2 = \sum_b (n_b / N)(\bar y_b - \bar p_b)^2`
    overestimates the squared error by the sampling variance of each
    :math:`\bar y_b`; Kumar, Liang & Ma subtract its unbiased estimate:

    .. math::

        \sum_b \frac{n_b}{N}\Big[(\bar y_b - \bar p_b)^2
            - \frac{\bar y_b (1 - \bar y_b)}{n_b - 1}\Big].

    A bin with one row contributes its plain term (Kumar et al.'s code gives it 0).
    Weights are frequency weights: :math:`n_b` becomes the bin's weight :math:`W_b`
    (a row of weight 2 is two rows), and a bin of weight at most 1 contributes its
    plain term.

    References
    ----------
    A. Kumar, P. Liang and T. Ma, "Verified uncertainty calibration", NeurIPS 2019
    (``calibration.get_calibration_error(..., debias=True)``).

    See Also
    --------
    debiased_ece, polars_calib.rmsce

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.1, 0.2, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9],
    ...     "y": [0, 0, 1, 0, 1, 0, 1, 1, 1, 0],
    ... })
    >>> df.select(
    ...     plug_in=pc.rmsce("p", "y", n_bins=2).pow(2).round(4),
    ...     debiased=pc.debiased_ece_squared("p", "y", n_bins=2).round(4),
    ... )
    shape: (1, 2)
    ┌─────────┬──────────┐
    │ plug_in ┆ debiased │
    │ ---     ┆ ---      │
    │ f64     ┆ f64      │
    ╞═════════╪══════════╡
    │ 0.0234  ┆ -0.0366  │
    └─────────┴──────────┘
    """
    binning = Binning(n_bins, strategy, closed)
    return _binned(prob, label, binning, weight, pos_label, _finish.debiased_ece_squared)


def debiased_ece(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    r"""Debiased L2 calibration error: the square root of :func:`debiased_ece_squared`,
    clipped at 0.

    Parameters
    ----------
    prob, label, n_bins, strategy, closed, weight, pos_label
        As :func:`debiased_ece_squared`.

    Returns
    -------
    Expr
        Float64 >= 0, one value per group; null for an invalid or empty group.

    Notes
    -----
    :math:`\sqrt{\max(0, \widehat{\mathrm{CE}^2})}`, comparable with
    :func:`polars_calib.rmsce` (which it is, less the sampling noise).

    References
    ----------
    Kumar, Liang and Ma (2019), see :func:`debiased_ece_squared`.

    See Also
    --------
    debiased_ece_squared, polars_calib.rmsce

    Examples
    --------
    >>> import numpy as np
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(2_000)
    >>> df = pl.DataFrame({"p": p, "y": rng.random(2_000) < p})  # calibrated
    >>> df.select(
    ...     rmsce=pc.rmsce("p", "y", n_bins=15).round(3),
    ...     debiased=pc.debiased_ece("p", "y", n_bins=15).round(3),
    ... )
    shape: (1, 2)
    ┌───────┬──────────┐
    │ rmsce ┆ debiased │
    │ ---   ┆ ---      │
    │ f64   ┆ f64      │
    ╞═══════╪══════════╡
    │ 0.041 ┆ 0.021    │
    └───────┴──────────┘
    """
    binning = Binning(n_bins, strategy, closed)
    return _binned(prob, label, binning, weight, pos_label, _finish.debiased_ece)


def brier_decomposition(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    r"""The Brier score split into reliability, resolution, uncertainty and within-bin terms.

    Parameters
    ----------
    prob, label, weight, pos_label
        As :func:`spiegelhalter_z`.
    n_bins, strategy, closed
        The bins, as :func:`polars_calib.ece`.

    Returns
    -------
    Expr
        A struct per group of Float64 fields ``brier``, ``reliability``,
        ``resolution``, ``uncertainty``, ``within_bin_variance`` and
        ``within_bin_covariance``; null for an invalid or empty group.

    Notes
    -----
    With :math:`W_b` the weight of bin b, :math:`\bar p_b`, :math:`\bar y_b` its means
    and :math:`\bar y` the overall rate (Murphy 1973; Stephenson et al. 2008):

    .. math::

        \mathrm{REL} &= \tfrac1W \sum_b W_b (\bar p_b - \bar y_b)^2, \quad
        \mathrm{RES} = \tfrac1W \sum_b W_b (\bar y_b - \bar y)^2, \quad
        \mathrm{UNC} = \bar y (1 - \bar y), \\
        \mathrm{WBV} &= \tfrac1W \sum_b \sum_{i \in b} w_i (p_i - \bar p_b)^2, \quad
        \mathrm{WBC} = \tfrac2W \sum_b \sum_{i \in b} w_i (y_i - \bar y_b)(p_i - \bar p_b),

    and ``brier = REL - RES + UNC + WBV - WBC`` exactly (to rounding, about 1e-15).
    The within-bin terms come from the per-bin sums of ``w p**2`` and ``w p y``.

    References
    ----------
    A. H. Murphy, "A new vector partition of the probability score", Journal of
    Applied Meteorology 12 (1973), 595-600. D. B. Stephenson, C. A. S. Coelho and
    I. T. Jolliffe, "Two extra components in the Brier score decomposition", Weather
    and Forecasting 23 (2008), 752-757.

    See Also
    --------
    calibration_loss, refinement_loss, polars_calib.brier

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({
    ...     "p": [0.1, 0.2, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9],
    ...     "y": [0, 0, 1, 0, 1, 0, 1, 1, 1, 0],
    ... })
    >>> df.select(parts=pc.brier_decomposition("p", "y", n_bins=5)).unnest("parts").select(
    ...     pl.all().round(4)
    ... )
    shape: (1, 6)
    ┌───────┬─────────────┬────────────┬─────────────┬─────────────────────┬───────────────────────┐
    │ brier ┆ reliability ┆ resolution ┆ uncertainty ┆ within_bin_variance ┆ within_bin_covariance │
    │ ---   ┆ ---         ┆ ---        ┆ ---         ┆ ---                 ┆ ---                   │
    │ f64   ┆ f64         ┆ f64        ┆ f64         ┆ f64                 ┆ f64                   │
    ╞═══════╪═════════════╪════════════╪═════════════╪═════════════════════╪═══════════════════════╡
    │ 0.241 ┆ 0.0693      ┆ 0.0833     ┆ 0.25        ┆ 0.0017              ┆ -0.0033               │
    └───────┴─────────────┴────────────┴─────────────┴─────────────────────┴───────────────────────┘
    """
    binning = Binning(n_bins, strategy, closed)
    return _binned(
        prob, label, binning, weight, pos_label, _finish.brier_decomposition, ("squared_p", "p_y")
    )


def _loss_split(
    prob: IntoExpr,
    label: IntoExpr,
    score: Score,
    n_bins: int,
    strategy: LossStrategy,
    closed: Closed,
    weight: Any,
    pos_label: Any,
    part: int,
) -> pl.Expr:
    """Calibration (`part` 0) or refinement (1) loss."""
    check_choice("score", score, SCORES)
    check_choice("strategy", strategy, LOSS_STRATEGIES)
    binning = None if strategy == "unique" else Binning(n_bins, strategy, closed)
    return _binned(
        prob,
        label,
        binning,
        weight,
        pos_label,
        lambda bins: _finish.calibration_refinement(bins, score)[part],
    )


def calibration_loss(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    score: Score = "brier",
    n_bins: int = 15,
    strategy: LossStrategy = "uniform",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    r"""Calibration loss of the Brier score or the log-loss: the part a recalibration removes.

    Parameters
    ----------
    prob, label, weight, pos_label
        As :func:`spiegelhalter_z`.
    score
        ``"brier"`` (default) or ``"log_loss"``.
    n_bins, closed
        The bins, as :func:`polars_calib.ece`.
    strategy
        ``"uniform"``, ``"quantile"``, or ``"unique"``: one bin per distinct
        probability, where ``score = calibration_loss + refinement_loss`` exactly
        (`n_bins` and `closed` are then unused; expressions only: the statistics
        table has fixed bins).

    Returns
    -------
    Expr
        Float64 >= 0, one value per group; null for an invalid or empty group.

    Notes
    -----
    Every probability in bin b is replaced by the bin's mean :math:`\bar p_b` and
    compared with the bin's rate of positives :math:`\bar y_b` (Kull & Flach 2015):

    * Brier: :math:`\mathrm{CL} = \tfrac1W \sum_b W_b (\bar p_b - \bar y_b)^2` (the
      reliability of :func:`brier_decomposition`), :math:`\mathrm{RL} = \tfrac1W
      \sum_b W_b \bar y_b (1 - \bar y_b)`;
    * log-loss: :math:`\mathrm{CL} = \tfrac1W \sum_b W_b\, \mathrm{KL}(\bar y_b \|
      \bar p_b)`, the binary Kullback-Leibler divergence (natural log, :math:`\bar
      p_b` clipped to :math:`[\epsilon, 1 - \epsilon]` as the log-loss clips p),
      :math:`\mathrm{RL} = \tfrac1W \sum_b W_b H(\bar y_b)`, the binary entropy.

    With wider bins the two add up to the score of the binned probabilities, not to
    the score itself (the Brier remainder is ``WBV - WBC`` of
    :func:`brier_decomposition`).

    References
    ----------
    M. Kull and P. Flach, "Novel decompositions of proper scoring rules for
    classification: score adjustment as precursor to calibration", ECML-PKDD 2015.

    See Also
    --------
    refinement_loss, brier_decomposition

    Examples
    --------
    The tutorial's two models of 10 positives and 20 negatives: the class proportion
    (ECE 0, log-loss 0.6365, all of it refinement loss) and 0.9 on the true class
    (ECE 0.1, log-loss 0.1054, all of it calibration loss):

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> y = [1] * 10 + [0] * 20
    >>> df = pl.DataFrame({"y": y, "prior": [1 / 3] * 30, "sharp": [0.9 if v else 0.1 for v in y]})
    >>> df.unpivot(["prior", "sharp"], index="y", variable_name="model").group_by(
    ...     "model", maintain_order=True
    ... ).agg(
    ...     ece=pc.ece("value", "y").round(4),
    ...     log_loss=pc.log_loss("value", "y").round(4),
    ...     cl=pc.calibration_loss("value", "y", score="log_loss", strategy="unique").round(4),
    ...     rl=pc.refinement_loss("value", "y", score="log_loss", strategy="unique").round(4),
    ... )
    shape: (2, 5)
    ┌───────┬─────┬──────────┬────────┬────────┐
    │ model ┆ ece ┆ log_loss ┆ cl     ┆ rl     │
    │ ---   ┆ --- ┆ ---      ┆ ---    ┆ ---    │
    │ str   ┆ f64 ┆ f64      ┆ f64    ┆ f64    │
    ╞═══════╪═════╪══════════╪════════╪════════╡
    │ prior ┆ 0.0 ┆ 0.6365   ┆ 0.0    ┆ 0.6365 │
    │ sharp ┆ 0.1 ┆ 0.1054   ┆ 0.1054 ┆ 0.0    │
    └───────┴─────┴──────────┴────────┴────────┘
    """
    return _loss_split(prob, label, score, n_bins, strategy, closed, weight, pos_label, 0)


def refinement_loss(
    prob: IntoExpr,
    label: IntoExpr,
    *,
    score: Score = "brier",
    n_bins: int = 15,
    strategy: LossStrategy = "uniform",
    closed: Closed = "right",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> pl.Expr:
    r"""Refinement loss of the Brier score or the log-loss: what calibration cannot remove.

    Parameters
    ----------
    prob, label, score, n_bins, strategy, closed, weight, pos_label
        As :func:`calibration_loss`.

    Returns
    -------
    Expr
        Float64 >= 0, one value per group; null for an invalid or empty group.

    Notes
    -----
    Brier: :math:`\tfrac1W \sum_b W_b \bar y_b (1 - \bar y_b)`; log-loss:
    :math:`\tfrac1W \sum_b W_b H(\bar y_b)` (see :func:`calibration_loss`): the loss
    of producing the same probability for rows of different classes.

    References
    ----------
    Kull and Flach (2015), see :func:`calibration_loss`.

    See Also
    --------
    calibration_loss, brier_decomposition

    Examples
    --------
    With one bin per distinct probability, the two losses add up to the score:

    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.2, 0.2, 0.2, 0.7, 0.7], "y": [0, 1, 1, 1, 0]})
    >>> df.select(
    ...     brier=pc.brier("p", "y"),
    ...     cl=pc.calibration_loss("p", "y", strategy="unique"),
    ...     rl=pc.refinement_loss("p", "y", strategy="unique"),
    ... ).with_columns(total=pl.col("cl") + pl.col("rl")).select(pl.all().round(4))
    shape: (1, 4)
    ┌───────┬────────┬────────┬───────┐
    │ brier ┆ cl     ┆ rl     ┆ total │
    │ ---   ┆ ---    ┆ ---    ┆ ---   │
    │ f64   ┆ f64    ┆ f64    ┆ f64   │
    ╞═══════╪════════╪════════╪═══════╡
    │ 0.38  ┆ 0.1467 ┆ 0.2333 ┆ 0.38  │
    └───────┴────────┴────────┴───────┘
    """
    return _loss_split(prob, label, score, n_bins, strategy, closed, weight, pos_label, 1)
