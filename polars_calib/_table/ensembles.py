"""Ensemble tables: the Gaussian statistics table, with the randomized rank PIT.

The rank PIT of an ensemble row (:func:`polars_calib._core.ensembles.rank_pit_expr`) is a
value in [0, 1], so the table of a Gaussian problem applies unchanged: the PIT is binned
on the level grid (:func:`polars_calib._table.regression.level_binning`) and the curve
finishers read it as they read a Gaussian PIT. The summed terms are the ensemble CRPS in
its energy form (``sum_crps``, the column the Gaussian finisher reads) and its fair form
(``sum_crps_fair``, NaN on a row of one member, whose fair CRPS is undefined), and
``sum_center`` (rows whose PIT is exactly 1/2: the central interval of level 0).

The draw of a row is the counter-based hash of (row identity, seed): the row's position
in the frame (as ``pc.rank_pit`` in a ``select`` over the same frame), or an integer `id`
column, which gives the same PIT to the same rows in any partition, so that tables of
parts of a log merge to the table of the whole.
"""

from __future__ import annotations

import polars as pl

from polars_calib._core.ensembles import ensemble_problem, rank_pit_expr
from polars_calib._core.exprs import Keys
from polars_calib._core.options import RegressionMetric
from polars_calib._core.problem import Problem
from polars_calib._core.validation import CalibrationDataError
from polars_calib._table.pipeline import Plan, prepared_plan
from polars_calib._table.plan import Prepared, group_keys, with_keys
from polars_calib._table.regression import _check_schema, level_binning
from polars_calib._table.replicates import check_seed

__all__ = ["ENSEMBLE_METRICS", "ENSEMBLE_TABLE_TERMS", "ensemble_plan", "prepare_ensemble"]

ENSEMBLE_TABLE_TERMS = ("crps", "crps_fair", "center")
"""The row terms an ensemble table sums (``crps`` is the energy form)."""

ENSEMBLE_METRICS: tuple[RegressionMetric, ...] = (
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "miscalibration_area",
    "quantile_calibration_score",
    "crps",
    "crps_fair",
)
"""The metrics of ensemble predictions (their default list)."""

_PIT = "__polars_calib_rank_pit__"


def _check_ensemble(schema: pl.Schema, ensemble: str) -> None:
    dtype = schema.get(ensemble)
    if dtype is None:
        return  # reported missing by _check_schema
    if not isinstance(dtype, (pl.Array, pl.List)) or not (
        dtype.inner.is_numeric() or dtype.inner == pl.Null
    ):
        msg = (
            f"invalid calibration data: column {ensemble!r} holds {dtype}, but the "
            "ensemble must be an Array or List of numbers (the members)"
        )
        raise CalibrationDataError(msg)


def prepare_ensemble(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    ensemble: str,
    seed: int,
    id: str | None,  # noqa: A002  (as pc.rank_pit's)
    by: Keys,
    time: str | None,
    every: str | None,
    weight: str | None,
) -> Prepared:
    """Check a frame's schema (no data read) and build its ensemble problem and keys."""
    check_seed(seed)
    keys = group_keys(data, by, time, every, frozenset(("level", "observed")))
    assert isinstance(data, (pl.DataFrame, pl.LazyFrame))  # group_keys checked it
    roles = {"target": target, "weight": weight, "id": id}
    for role, value in {**roles, "ensemble": ensemble, "time": time}.items():
        if value is not None and not isinstance(value, str):
            msg = f"`{role}` must be a column name, got {type(value).__name__}"
            raise TypeError(msg)
    lf = data.lazy()
    schema = lf.collect_schema()
    _check_schema(schema, roles, [*keys.columns(), ensemble], time)
    _check_ensemble(schema, ensemble)
    if id is not None and not schema[id].is_integer():
        msg = f"`id` must name an integer column, got {id!r} of {schema[id]}"
        raise TypeError(msg)
    # The draws before any key: the row's position is its position in the frame.
    identity = pl.int_range(pl.len(), dtype=pl.Int64) if id is None else pl.col(id)
    lf = lf.with_columns(rank_pit_expr(target, ensemble, seed, identity)[1].alias(_PIT))
    lf, names = with_keys(lf, keys, time, every, {**roles, "ensemble": ensemble})
    return Prepared(data, lf, _problem(target, ensemble, weight), names, None)


def _problem(target: str, ensemble: str, weight: str | None) -> Problem:
    """The ensemble problem with the rank PIT as its probability and the table's terms."""
    problem = ensemble_problem(target, ensemble, weight)
    u = pl.col(_PIT)
    m = pl.col(ensemble).cast(pl.List(pl.Float64)).list.len()
    terms = {
        "crps": problem.terms["crps_energy"],
        # One member has no pair: NaN, which the finisher reports as a null fair CRPS.
        "crps_fair": pl.when(m > 1).then(problem.terms["crps_fair"]).otherwise(float("nan")),
        "center": (u == 0.5).cast(pl.Float64),
    }
    return Problem(
        u,
        problem.label,
        problem.weight,
        problem.present,
        problem.refused,
        problem.checks,
        terms,
        ok=problem.ok,
    )


def ensemble_plan(
    data: pl.DataFrame | pl.LazyFrame,
    target: str,
    *,
    ensemble: str,
    seed: int = 0,
    id: str | None = None,  # noqa: A002
    by: Keys = None,
    time: str | None = None,
    every: str | None = None,
    n_levels: int = 100,
    weight: str | None = None,
) -> Plan:
    """Check a frame and plan the statistics table of its ensemble predictions."""
    prepared = prepare_ensemble(
        data,
        target,
        ensemble=ensemble,
        seed=seed,
        id=id,
        by=by,
        time=time,
        every=every,
        weight=weight,
    )
    return prepared_plan(prepared, level_binning(n_levels), terms=ENSEMBLE_TABLE_TERMS)
