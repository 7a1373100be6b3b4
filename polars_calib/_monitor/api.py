"""The monitoring frame functions: CUSUM alarms per group, and their thresholds."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import cast

import polars as pl
from polars.io.plugins import register_io_source

from polars_calib._core.exprs import Keys
from polars_calib._core.validation import CalibrationDataError
from polars_calib._monitor.alarms import GROUP, THRESHOLD_COLUMNS, check_options, thresholds_for
from polars_calib._monitor.reference import REF
from polars_calib._monitor.stream import checked_groups, stream_alarms
from polars_calib._table.plan import FrameT, Prepared, prepare

__all__ = ["cusum_thresholds", "monitor"]

_TIME_DTYPES = "a Date, Datetime or integer column"


def _lazy(
    data: FrameT,
    prob: str,
    label: str,
    by: Keys,
    weight: str | None,
    time: str | None,
    reference: pl.Expr | None,
) -> tuple[Prepared, pl.LazyFrame, pl.Schema]:
    """The checked plan (keys, time, inputs and the reference flag) and its schema."""
    prepared: Prepared = prepare(data, prob, label, by=by, weight=weight)
    if prepared.reduction is not None:
        msg = f"monitoring takes binary probabilities: column {prob!r} holds vectors"
        raise ValueError(msg)
    schema = prepared.lf.collect_schema()
    if time is not None:
        if time not in schema:
            names = ", ".join(schema.names())
            msg = f"invalid calibration data: column {time!r} is missing (columns: {names})"
            raise CalibrationDataError(msg)
        dtype = schema[time]
        if not (dtype == pl.Date or isinstance(dtype, pl.Datetime) or dtype.is_integer()):
            msg = (
                f"invalid calibration data: column {time!r} holds {dtype}, but `time` "
                f"must be {_TIME_DTYPES}"
            )
            raise CalibrationDataError(msg)
        if time in prepared.keys:
            msg = f"`by` cannot hold {time!r}: it is the `time` column"
            raise ValueError(msg)
    if reference is not None and not isinstance(reference, pl.Expr):
        msg = f"`reference` must be a boolean Polars expression, got {type(reference).__name__}"
        raise TypeError(msg)
    flag = pl.lit(True) if reference is None else reference.cast(pl.Boolean)
    inputs: list[str] = [*prepared.keys, *([time] if time else []), prob, label]
    inputs += [weight] if weight else []
    lf = prepared.lf.select(*dict.fromkeys(inputs), flag.alias(REF))
    return prepared, lf, lf.collect_schema()


def _given(
    groups: pl.DataFrame, ratios: list[float], threshold: float | Sequence[float]
) -> pl.DataFrame:
    """The thresholds table of given thresholds (one, or one per odds ratio)."""
    values = [threshold] * len(ratios) if isinstance(threshold, (int, float)) else list(threshold)
    if len(values) != len(ratios) or any(
        isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 for v in values
    ):
        msg = f"`threshold` must be a positive number or one per odds ratio, got {threshold!r}"
        raise ValueError(msg)
    table = pl.DataFrame({"odds_ratio": ratios, "threshold": [float(v) for v in values]})
    return groups.join(table, how="cross")


def cusum_thresholds(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    weight: str | None = None,
    odds_ratio: float | Sequence[float] = (0.5, 2.0),
    arl0: float = 10_000.0,
    reference: pl.Expr | None = None,
    simulated_alarms: int = 200,
    seed: int = 0,
) -> FrameT:
    """Compute the CUSUM threshold of each group and chart for a target in-control ARL0.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column (rows with a null one are left out).
    by
        Group keys: a threshold per group.
    weight
        Name of an optional column of non-negative row weights: each simulated row
        keeps the weight of the reference row it copies (a weight of k is not k rows).
    odds_ratio
        The charts' alternatives (see :func:`polars_calib.cusum`), one or several.
    arl0
        The target in-control average run length: rows between false alarms of one
        chart on a calibrated stream. Two charts at 10,000 alarm falsely together
        about every 5,000 rows.
    reference
        A boolean expression selecting the reference rows whose distribution of ``p``
        (and weights) the simulation draws from; all rows when None.
    simulated_alarms
        The simulation's size: ``5 * simulated_alarms`` excursions of the chart under
        importance sampling per group and chart, for a standard error below that of
        a plain simulation of ``simulated_alarms`` false alarms (``arl0 /
        sqrt(simulated_alarms)``): about half of it, 4% at the default.
    seed
        Seed of the counter-based draws.

    Returns
    -------
    DataFrame or LazyFrame
        One row per (group, odds ratio): the keys, ``odds_ratio``, ``threshold`` (the
        smallest ``h`` whose simulated ARL reaches `arl0`), ``arl0`` (the simulated ARL
        at ``h``), ``arl0_se`` (its standard error), ``arl0_markov`` (Brook and Evans'
        Markov-chain ARL at ``h``), ``alarms_simulated`` (the excursions above ``h``),
        ``rows_simulated`` (the rows they walked) and ``reference_rows`` (the reference
        rows drawn from: all of the group's up to 65,536, else a sample of 65,536).

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column, refused rows (as :func:`polars_calib.validate`),
        a group without a reference row; on a LazyFrame, when collected.

    Notes
    -----
    The chart restarted at 0 is a sequence of independent cycles (from ``S = 0`` to
    ``S <= 0`` or to the alarm), so ``ARL(h) = E[min(L, tau_h)] / P(tau_h < L)``, ``L``
    a cycle's end and ``tau_h`` its first row above ``h``. Both come from excursions of
    the chart whose terms are drawn from the reference rows' law tilted by ``exp(theta
    W)`` (importance sampling; Siegmund, 1976), weighted by their likelihood ratios,
    for every ``h`` at once; each step's reference row and label come from the
    counter-based draws of ``(excursion, step, seed)``: the same on any engine, and
    common to every group (see ``docs/monitoring.md``).

    A group with more than 65,536 reference rows is simulated from a uniform sample of
    65,536 of them without replacement (those with the smallest counter-based draws of
    their position in the log and the seed), chosen in a streaming pass: memory holds
    at most 65,536 rows' ``(p, w)`` per group, whatever the log's length, and the
    sample's error on the ARL is a twentieth of the simulation's standard error at the
    defaults. The same log, order and seed give the same sample on any engine.

    References
    ----------
    D. Brook, D. A. Evans (1972), "An approach to the probability distribution of
    CUSUM run length", *Biometrika* 59(3).
    D. Siegmund (1976), "Importance sampling in the Monte Carlo study of sequential
    tests", *The Annals of Statistics* 4(4).

    See Also
    --------
    monitor, cusum

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.1, 0.2, 0.3, 0.4] * 25, "y": [0, 0, 1, 0] * 25})
    >>> table = pc.cusum_thresholds(df, "p", "y", arl0=500, simulated_alarms=100)
    >>> table.select("odds_ratio", pl.col("threshold").round(1))
    shape: (2, 2)
    ┌────────────┬───────────┐
    │ odds_ratio ┆ threshold │
    │ ---        ┆ ---       │
    │ f64        ┆ f64       │
    ╞════════════╪═══════════╡
    │ 0.5        ┆ 2.9       │
    │ 2.0        ┆ 2.9       │
    └────────────┴───────────┘
    """
    ratios = check_options(odds_ratio, arl0, simulated_alarms)
    prepared, lf, schema = _lazy(data, prob, label, by, weight, None, reference)
    keys: list[str] = prepared.keys

    def run() -> pl.DataFrame:
        groups, _ = checked_groups(lf, prepared.problem, keys, None)
        table = thresholds_for(
            lf, prepared.problem, keys, groups, ratios, arl0, simulated_alarms, seed
        )
        return table.drop(GROUP)

    out = pl.Schema({**{key: schema[key] for key in keys}, **THRESHOLD_COLUMNS})
    return _when_collected(data, run, out, "cusum_thresholds")


def monitor(
    data: FrameT,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str,
    weight: str | None = None,
    odds_ratio: float | Sequence[float] = (0.5, 2.0),
    arl0: float = 10_000.0,
    threshold: float | Sequence[float] | None = None,
    reference: pl.Expr | None = None,
    simulated_alarms: int = 200,
    seed: int = 0,
) -> FrameT:
    """Find the alarms of risk-adjusted CUSUM charts per group, in time order.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of predictions (a log).
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column; rows with a null probability,
        label or weight add nothing (a chart waits for late labels).
    by
        Group keys: one pair of charts per group (a model, a segment).
    time
        Name of the column ordering the rows: a Date, Datetime or integer column,
        sorted here (rows of one group at the same time keep the frame's order). A
        null time is refused.
    weight
        Name of an optional column of non-negative row weights (multiplying the terms).
    odds_ratio
        The charts' alternatives, one chart each (see :func:`polars_calib.cusum`).
    arl0
        The target in-control average run length of each chart (rows between false
        alarms of a calibrated stream), for thresholds from :func:`cusum_thresholds`.
        Two charts at ARL0 = 10,000 together alarm falsely about every 5,000 rows.
    threshold
        Thresholds to use instead: one for every chart, or one per odds ratio.
    reference
        A boolean expression selecting the reference rows of the thresholds (all rows
        when None); not with `threshold`.
    simulated_alarms, seed
        The threshold simulation's size and seed (see :func:`cusum_thresholds`).

    Returns
    -------
    DataFrame or LazyFrame
        One row per (group, alarm), sorted by keys, time and odds ratio: the keys,
        `time` (the alarm's row), ``odds_ratio`` (the chart), ``statistic`` (``S`` at
        the alarm, ``inf`` for a contradicted certain prediction), ``threshold`` and
        ``run_start`` (the time of the last row at which ``S`` was 0: the start of the
        run that led to the alarm; the previous alarm's time when ``S`` has been
        positive since that restart; null when positive since the first row).

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column (from the schema), refused rows, null times, a
        group without a reference row; on a LazyFrame, when collected.

    Notes
    -----
    The chart alarms when ``S > threshold`` and restarts at 0 after the alarm's row. The
    rows are read in batches, each chart carrying per group its running sum, the sum at
    its last restart, their running minimum and the run start: memory grows with the
    groups, not the rows (simulated thresholds also hold at most 65,536 reference rows'
    ``(p, w)`` per group: see :func:`cusum_thresholds`). A log whose rows are in time
    order within each group is read as it is; otherwise it is first sorted out of
    memory, bucket by bucket of time through temporary parquet files. Within a batch
    each group's chart is a ``cumsum`` and a running minimum, and after an alarm the
    search restarts over windows of doubling size: a loop over the alarms, never over
    the rows. A LazyFrame's result is a plan (a Python scan) that reads nothing until
    collected; it then reads the log three times (the checks, the groups, the rows),
    four with simulated thresholds, and twice more to sort a log out of time order. See
    ``docs/monitoring.md``, "Memory".

    See Also
    --------
    cusum, cusum_thresholds, observed_minus_expected

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "model": ["a"] * 8,
    ...     "ts": [1, 2, 3, 4, 5, 6, 7, 8],
    ...     "p": [0.1] * 8,
    ...     "y": [0, 1, 1, 1, 0, 0, 0, 0],
    ... })
    >>> pc.monitor(log, "p", "y", by="model", time="ts", odds_ratio=2.0, threshold=1.0)
    shape: (1, 6)
    ┌───────┬─────┬────────────┬───────────┬───────────┬───────────┐
    │ model ┆ ts  ┆ odds_ratio ┆ statistic ┆ threshold ┆ run_start │
    │ ---   ┆ --- ┆ ---        ┆ ---       ┆ ---       ┆ ---       │
    │ str   ┆ i64 ┆ f64        ┆ f64       ┆ f64       ┆ i64       │
    ╞═══════╪═════╪════════════╪═══════════╪═══════════╪═══════════╡
    │ a     ┆ 3   ┆ 2.0        ┆ 1.195674  ┆ 1.0       ┆ 1         │
    └───────┴─────┴────────────┴───────────┴───────────┴───────────┘
    """
    ratios = check_options(odds_ratio, arl0, simulated_alarms)
    if threshold is not None and reference is not None:
        msg = "give `threshold` or `reference` (the rows thresholds are simulated from), not both"
        raise ValueError(msg)
    prepared, lf, schema = _lazy(data, prob, label, by, weight, time, reference)
    keys: list[str] = prepared.keys
    problem = prepared.problem

    def thresholds(groups: pl.DataFrame) -> pl.DataFrame:
        if threshold is not None:
            return _given(groups.select(GROUP), ratios, threshold)
        table = thresholds_for(lf, problem, keys, groups, ratios, arl0, simulated_alarms, seed)
        return table.select(GROUP, "odds_ratio", "threshold")

    if threshold is not None:  # checked now, not when collected
        _given(pl.DataFrame({GROUP: [0]}), ratios, threshold)
    out = pl.Schema([(key, schema[key]) for key in [*keys, time]])
    for name in ("odds_ratio", "statistic", "threshold"):
        out[name] = pl.Float64()
    out["run_start"] = schema[time]
    return _when_collected(
        data, lambda: stream_alarms(lf, problem, keys, time, ratios, thresholds), out, "monitor"
    )


def _when_collected(
    data: FrameT, run: Callable[[], pl.DataFrame], schema: pl.Schema, name: str
) -> FrameT:
    """`run()` now for a DataFrame; for a LazyFrame, a plan whose source calls it when
    collected (a Python IO source: the plan reads nothing before)."""

    def source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        out = run()
        if predicate is not None:
            out = out.filter(predicate)
        if with_columns is not None:
            out = out.select(with_columns)
        yield out if n_rows is None else out.head(n_rows)

    # Polars marks register_io_source unstable: a user who turned those warnings on must
    # not see ours. test_monitor_plan_is_a_python_scan pins the plan, so a change in
    # Polars fails the suite, not a user's alarms.
    done: pl.DataFrame | pl.LazyFrame
    eager = isinstance(data, pl.DataFrame)  # (not narrowing FrameT: one cast for both kinds)
    if eager:
        done = run()
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pl.exceptions.UnstableWarning)
            done = register_io_source(source, schema=schema, explain_name=f"polars_calib.{name}")
    return cast(FrameT, done)
