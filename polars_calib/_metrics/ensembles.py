"""Ensemble predictions (an ``Array`` or ``List`` column of M members) as expressions.

:func:`crps_ensemble` aggregates like :func:`polars_calib.crps` (``select``,
``group_by().agg``, ``over``, streaming; null for a group holding a refused row);
:func:`rank_pit` is elementwise (null on a refused or ignored row). The refused rule is
:mod:`polars_calib._core.ensembles`; see ``docs/regression.md``, "Ensembles".
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from polars_calib._core.ensembles import ensemble_problem, rank_pit_expr
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import check_choice
from polars_calib._table.replicates import check_seed

__all__ = ["CrpsEstimator", "crps_ensemble", "rank_pit"]

CrpsEstimator = Literal["energy", "fair"]
_ESTIMATORS = ("energy", "fair")


def _named(value: pl.Expr, column: IntoExpr) -> pl.Expr:
    """`value` named after `column` (the target's name, as the Gaussian expressions)."""
    name = to_expr(column, "target").meta.output_name(raise_if_undetermined=False)
    return value if name is None else value.alias(name)


def crps_ensemble(
    target: IntoExpr,
    *,
    ensemble: IntoExpr,
    estimator: CrpsEstimator = "energy",
    weight: IntoExpr | None = None,
) -> pl.Expr:
    r"""Return the mean continuous ranked probability score of ensemble predictions.

    Parameters
    ----------
    target
        The observed values.
    ensemble
        An ``Array`` or ``List`` column of M members per row (draws from the predictive
        distribution). Rows of a ``List`` column may have different M.
    estimator
        ``"energy"`` (default): ``E|X - y| - E|X - X'| / 2`` over the empirical
        distribution of the members, pairs over M² (properscoring ``crps_ensemble``,
        scoringrules ``"nrg"`` and ``"qd"``); ``"fair"``: pairs over M(M - 1), unbiased
        for the CRPS of the distribution the members are drawn from (Ferro 2014;
        scoringrules ``"fair"`` and ``"pwm"``). ``"fair"`` refuses rows of one member.
    weight
        Optional non-negative sample weights.

    Returns
    -------
    Expr
        Float64 aggregate: the weighted mean of the rows' CRPS; null for a group holding
        a refused row (a NaN or infinite target; a null, NaN or infinite member; no
        member, or one for ``"fair"``) or with no used row. Rows with a null target or a
        null ensemble are ignored.

    See Also
    --------
    crps : The closed form for Gaussian predictions.
    rank_pit : The randomized rank PIT of ensemble predictions.

    Notes
    -----
    With the members sorted per row, ``sum_{i,j} |x_i - x_j| = 2 sum_i (2i - M - 1) x_(i)``
    (1-based), so a row costs a sort, not M² differences.

    References
    ----------
    Gneiting and Raftery (2007), equation (20); Ferro (2014), "Fair scores for ensemble
    forecasts"; properscoring ``crps_ensemble``; scoringrules 0.10 ``crps_ensemble``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [0.0, 2.0], "x": [[0.0, 1.0], [0.0, 1.0]]})
    >>> df.select(
    ...     energy=pc.crps_ensemble("y", ensemble="x"),
    ...     fair=pc.crps_ensemble("y", ensemble="x", estimator="fair"),
    ... )
    shape: (1, 2)
    ┌────────┬──────┐
    │ energy ┆ fair │
    │ ---    ┆ ---  │
    │ f64    ┆ f64  │
    ╞════════╪══════╡
    │ 0.75   ┆ 0.5  │
    └────────┴──────┘
    """
    check_choice("estimator", estimator, _ESTIMATORS)
    problem = ensemble_problem(
        target, ensemble, weight, min_members=2 if estimator == "fair" else 1
    )
    used = problem.present & ~problem.refused
    row_weight = pl.lit(1.0) if problem.weight is None else problem.weight
    total = pl.when(used).then(row_weight).sum()
    term = problem.terms[f"crps_{estimator}"]
    value = pl.when(used).then(problem.weighted(term)).sum() / total
    return _named(pl.when(~problem.invalid & (total > 0.0)).then(value), target)


def rank_pit(
    target: IntoExpr,
    *,
    ensemble: IntoExpr,
    seed: int = 0,
    id: IntoExpr | None = None,  # noqa: A002  (the row identity of the draws)
) -> pl.Expr:
    """Return the randomized rank PIT of ensemble predictions, row by row.

    Parameters
    ----------
    target
        The observed values.
    ensemble
        An ``Array`` or ``List`` column of M members per row.
    seed
        Seed of the draws, an int in ``[0, 2**32)``.
    id
        The row identity the draw is a function of: by default the row's position in
        the frame (``pl.int_range(pl.len())``, from 0); an integer column or expression
        holding a unique row id gives the same draws on the same rows in any order,
        partition or engine (see ``docs/significance.md``, "Row identity").

    Returns
    -------
    Expr
        Float64 ``u = (B + V (E + 1)) / (M + 1)`` with ``B = #{x < y}``,
        ``E = #{x == y}`` and ``V`` uniform on ``[0, 1)``: uniform on
        ``[B / (M + 1), (B + E + 1) / (M + 1)]``; null on a row with a null target,
        ensemble or id, or a refused value (a NaN or infinite target; a null, NaN or
        infinite member; no member).

    See Also
    --------
    crps_ensemble : The CRPS of ensemble predictions.
    pit : The PIT of Gaussian predictions.

    Notes
    -----
    ``V`` is the counter-based hash of (row identity, replicate 0, seed) of
    ``polars_calib._core.draws``: the same on every engine. For a calibrated ensemble
    (y exchangeable with the members) ``u`` is uniform on [0, 1]; the interval
    ``[#{x < y} / M, #{x <= y} / M]`` is a single point unless y ties a member, and its
    values ``k / M`` are not uniform. The position identity counts rows of the frame
    the expression sees: inside ``over`` or ``group_by().agg`` it restarts in each
    group; give ``id`` there.

    References
    ----------
    Anderson (1996), "A method for producing and evaluating probabilistic forecasts
    from ensemble model integrations"; Hamill (2001), "Interpretation of rank
    histograms for verifying ensemble forecasts".

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"y": [0.5, 3.0, 1.0], "x": [[0.0, 1.0, 2.0]] * 3})
    >>> df.select(u=pc.rank_pit("y", ensemble="x", seed=1).round(4))
    shape: (3, 1)
    ┌────────┐
    │ u      │
    │ ---    │
    │ f64    │
    ╞════════╡
    │ 0.4419 │
    │ 0.8624 │
    │ 0.4481 │
    └────────┘
    """
    check_seed(seed)
    identity = pl.int_range(pl.len(), dtype=pl.Int64) if id is None else to_expr(id, "id")
    problem, u = rank_pit_expr(target, ensemble, seed, identity)
    assert problem.ok is not None  # an ensemble problem has its one-pass rule
    return _named(pl.when(problem.ok).then(u), target)
