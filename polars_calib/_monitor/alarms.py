"""The CUSUM charts' options, terms and state, and their thresholds from a target ARL0.

:func:`thresholds_for` simulates each group's calibrated stream from its reference rows
(a sample of them above :data:`~polars_calib._monitor.reference.SAMPLE_ROWS`);
:func:`chart_terms` gives each chart's terms and :func:`chart_arrays` seeds the restarted
charts of :mod:`polars_calib._monitor.batched` (which ``pc.monitor``, the store's update
and the drift charts run over the log in batches: :mod:`polars_calib._monitor.stream`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_calib._core.problem import Problem
from polars_calib._monitor.batched import GROUP, physical
from polars_calib._monitor.cusum import check_odds_ratio, cusum_step
from polars_calib._monitor.reference import reference_sample
from polars_calib._monitor.thresholds import (
    Estimate,
    markov_check,
    markov_threshold,
    term_atoms,
    tilted_threshold,
    walk_excursions,
)

__all__ = [
    "CHART_STATE",
    "GROUP",
    "chart_arrays",
    "chart_terms",
    "check_options",
    "thresholds_for",
]

LOW, HIGH = 0.75, 1.25
"""The simulation keeps the records above ``LOW`` times the Markov chain's threshold and
walks each excursion up to ``HIGH`` times it (again from 0 and twice as high for a chart
whose threshold is not found between them)."""
EXCURSIONS = 5
"""Tilted excursions per simulated alarm asked for (``simulated_alarms``): at the default
200, 1,000 excursions, a standard error of about 4% (``docs/monitoring.md``)."""
THRESHOLD_COLUMNS = pl.Schema(
    {
        "odds_ratio": pl.Float64,
        "threshold": pl.Float64,
        "arl0": pl.Float64,
        "arl0_se": pl.Float64,
        "arl0_markov": pl.Float64,
        "alarms_simulated": pl.Int64,
        "rows_simulated": pl.Int64,
        "reference_rows": pl.Int64,
    }
)


def check_options(
    odds_ratio: float | Sequence[float], arl0: float, simulated_alarms: int
) -> list[float]:
    """The odds ratios as a list; raise ``ValueError`` for a bad option."""
    ratios = [odds_ratio] if isinstance(odds_ratio, (int, float)) else list(odds_ratio)
    for ratio in ratios:
        check_odds_ratio(ratio)
    if not ratios or len(set(ratios)) != len(ratios):
        msg = f"`odds_ratio` must hold distinct odds ratios, got {odds_ratio!r}"
        raise ValueError(msg)
    if isinstance(arl0, bool) or not isinstance(arl0, (int, float)) or not 1.0 < arl0 < 1e9:
        msg = f"`arl0` must be a number of rows between 1 and 1e9, got {arl0!r}"
        raise ValueError(msg)
    if isinstance(simulated_alarms, bool) or not isinstance(simulated_alarms, int):
        msg = f"`simulated_alarms` must be a positive int, got {simulated_alarms!r}"
        raise TypeError(msg)
    if simulated_alarms < 1:
        msg = f"`simulated_alarms` must be a positive int, got {simulated_alarms}"
        raise ValueError(msg)
    return [float(ratio) for ratio in ratios]


def thresholds_for(
    lf: pl.LazyFrame,
    problem: Problem,
    keys: list[str],
    groups: pl.DataFrame,
    ratios: list[float],
    arl0: float,
    simulated_alarms: int,
    seed: int,
) -> pl.DataFrame:
    """Per (group, odds ratio): the simulated threshold for `arl0` and its checks.

    `lf` is the log in its order (the keys, the inputs and the reference flag ``REF``),
    `groups` the groups to simulate (``GROUP``, the keys and perhaps their reference
    counts): each group's simulation draws from its reference rows, at most
    :data:`~polars_calib._monitor.reference.SAMPLE_ROWS` of them
    (:func:`~polars_calib._monitor.reference.reference_sample`).
    """
    used = reference_sample(lf, problem, keys, groups, seed)
    log_rs = [math.log(ratio) for ratio in ratios]
    parts = used.partition_by(GROUP, maintain_order=True, include_key=True)
    arrays = [(part["p"].to_numpy(), part["w"].to_numpy()) for part in parts]
    atoms = [[term_atoms(p, w, log_r) for log_r in log_rs] for p, w in arrays]
    found = _simulated(arrays, atoms, arl0, EXCURSIONS * simulated_alarms, seed)
    rows = [[walked for _, walked in group] for group in found]
    named = groups.select(GROUP, *keys)
    records = []
    for g, part in enumerate(parts):
        group = named.row(by_predicate=pl.col(GROUP) == part[GROUP][0], named=True)
        for j, ratio in enumerate(ratios):
            estimate = found[g][j][0]
            h = math.nan if estimate is None else estimate.threshold
            records.append(
                {
                    **group,
                    "odds_ratio": ratio,
                    "threshold": h,
                    "arl0": math.nan if estimate is None else estimate.arl,
                    "arl0_se": math.nan if estimate is None else estimate.se,
                    "arl0_markov": markov_check(*atoms[g][j], h) if estimate else math.nan,
                    "alarms_simulated": 0 if estimate is None else estimate.alarms,
                    "rows_simulated": rows[g][j],
                    "reference_rows": part.height,
                }
            )
    schema = pl.Schema({**named.schema, **THRESHOLD_COLUMNS})
    return pl.DataFrame(records, schema=schema, orient="row")


def _simulated(
    arrays: list[tuple[np.ndarray, np.ndarray]],
    atoms: list[list[tuple[np.ndarray, np.ndarray]]],
    arl0: float,
    count: int,
    seed: int,
) -> list[list[tuple[Estimate | None, int]]]:
    """Per group and chart: the simulated threshold (None for a chart that never rises)
    and the rows walked, from `count` tilted excursions.

    The excursions walk from ``LOW`` to ``HIGH`` times the Markov chain's threshold (a
    guess: 10% on the ARL is 1 to 2% on h, far inside the margins); a chart whose
    threshold falls outside is walked again from 0 and twice as high, a few times.
    """
    # The tilt of a log-likelihood ratio is 1; times a common weight w, 1 / w.
    guesses = [1.0 / w[0] if len(w) and w.min() == w.max() > 0.0 else 1.0 for _, w in arrays]
    found: list[list[tuple[Estimate | None, int]]] = [[(None, 0)] * len(g) for g in atoms]
    todo: dict[tuple[int, int], tuple[float, float]] = {}
    for g, group in enumerate(atoms):
        for j, (values, probs) in enumerate(group):
            if np.any((values > 0.0) & (probs > 0.0)):  # else S stays 0: no threshold
                h = markov_threshold(values, probs, arl0, tolerance=0.1)
                top = float(values[probs > 0.0].max())
                todo[(g, j)] = (LOW * h, max(HIGH * h, top))
    for _ in range(5):
        keys = list(todo)
        charts = [(*atoms[g][j], guesses[g], *todo[(g, j)]) for g, j in keys]
        for (g, j), walked in zip(keys, walk_excursions(charts, count, seed)):
            estimate = tilted_threshold(walked, arl0)
            found[g][j] = (estimate, found[g][j][1] + walked.rows)
            if estimate is None:
                todo[(g, j)] = (0.0, 2.0 * walked.high)
            else:
                del todo[(g, j)]
        if not todo:
            break
    return found


CHART_STATE = ("total", "base", "floor", "run_start")
"""A chart's end state per (group, odds ratio): ``total``, the cumulative sum ``C`` of its
terms since the group's first row; ``base``, ``C`` at the last restart (0 before any);
``floor``, ``min(0, min (C - base))`` over the rows since that restart; ``run_start``, the
time of the last row since the restart at which ``S`` was 0 (else the restart's time).
``S = (total - base) - floor``, and the chart continues from it exactly (see
``docs/monitoring.md``, "The store and the daily job")."""


def chart_terms(problem: Problem, ratios: list[float]) -> list[pl.Expr]:
    """Per chart, its terms and its flags (see :func:`cusum_step`), as named columns."""
    exprs = []
    for j, ratio in enumerate(ratios):
        step, flag = cusum_step(problem, math.log(ratio))
        exprs += [
            step.alias(f"__calib_step{j}__"),
            flag.fill_null(False).alias(f"__calib_flag{j}__"),
        ]
    return exprs


def chart_arrays(
    groups: int, ratios: list[float], table: pl.DataFrame, state: pl.DataFrame | None
) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
    """The thresholds (a row per group, a column per ratio) and each chart's state arrays
    (a chart at 0 where `state` has no row)."""
    matrix = np.full((groups, len(ratios)), math.nan)
    charts = []
    for j, ratio in enumerate(ratios):
        chart = table.filter(pl.col("odds_ratio") == ratio)
        matrix[chart[GROUP].to_numpy(), j] = chart["threshold"].to_numpy()
        given: dict[str, np.ndarray] = {n: np.zeros(groups) for n in ("total", "base", "floor")}
        given["restart"] = np.zeros(groups, np.int64)
        given["started"] = np.zeros(groups, bool)
        if state is not None:
            rows = state.filter(pl.col("odds_ratio") == ratio, pl.col(GROUP) < groups)
            at = rows[GROUP].to_numpy()
            for name in ("total", "base", "floor"):
                given[name][at] = rows[name].fill_null(0.0).to_numpy()
            started = rows["run_start"].is_not_null().to_numpy()
            given["started"][at] = started
            restart = rows.select(physical("run_start").fill_null(0))["run_start"].to_numpy()
            given["restart"][at] = restart
        charts.append(given)
    return matrix, charts
