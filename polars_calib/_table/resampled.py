"""Finish a table with replicates: bootstrap intervals and consistency p-values."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_calib._core.options import TopLabelAverage
from polars_calib._table.columns import DISTINCT_IDS, grouped, shared_ids
from polars_calib._table.finish import finish_metrics
from polars_calib._table.replicates import TESTED_METRIC

_TIE = 1e-9  # relative: a consistency draw this close to the observed metric ties with it


def finish_resampled(
    stats: pl.LazyFrame,
    keys: list[str],
    metrics: Sequence[str],
    average: TopLabelAverage = "macro",
    confidence: float | None = None,
) -> pl.LazyFrame:
    """Metrics per group with bootstrap intervals and consistency p-values.

    `stats` is a merged table with replicates. The plain metrics are finished on the
    observed rows; with `confidence`, each gets ``<metric>_lower`` and
    ``<metric>_upper``, the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
    quantiles (linear interpolation, numpy's default) of its bootstrap replicates,
    null when a replicate's metric is null (a resample left the group empty). Each
    consistency name of `metrics` is ``(1 + #{phi(y_s) >= phi(y)}) / (1 + S)`` over its
    S consistency replicates (within a relative 1e-9, a tie counts), null when the
    observed metric is.
    """

    tests = {name: TESTED_METRIC[name] for name in metrics if name in TESTED_METRIC}
    plain = [name for name in metrics if name not in TESTED_METRIC]
    needed = [*dict.fromkeys([*plain, *tests.values()])]
    stats, group = grouped(stats, keys)
    observed = stats.filter(pl.col("replicate").is_null()).drop("resampling", "replicate")
    point = finish_metrics(observed, group, needed, average).cache()
    replicated = stats.filter(pl.col("replicate").is_not_null())
    drawn = [*group, "resampling", "replicate"]
    # The table is sparse: a replicate that drew none of a group's rows has no row of
    # it. Every (group, replicate) is a row, null where the group was left empty.
    finished = finish_metrics(replicated, drawn, needed, average).cache()
    every = point.select(group).join(
        finished.select("resampling", "replicate").unique(), how="cross"
    )
    per_replicate = every.join(finished, on=drawn, how="left", nulls_equal=True).cache()
    result = point
    # Intervals of the numbers (a decomposition's struct has none of its own).
    schema = point.collect_schema()
    interval = [name for name in plain if schema[name] == pl.Float64]
    if confidence is not None and interval:
        low, high = (1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0

        def bound(name: str, q: float, side: str) -> pl.Expr:
            value = pl.col(name).quantile(q, "linear")
            return pl.when(pl.col(name).null_count() == 0).then(value).alias(f"{name}_{side}")

        intervals = (
            per_replicate.filter(pl.col("resampling") == "bootstrap")
            .group_by(group)
            .agg(
                *(
                    bound(name, q, side)
                    for name in interval
                    for q, side in ((low, "lower"), (high, "upper"))
                )
            )
        )
        result = result.join(intervals, on=group, how="left", nulls_equal=True)
    if tests:
        phis = [*dict.fromkeys(tests.values())]
        observed_values = point.select(*group, *(pl.col(m).alias(f"__observed_{m}") for m in phis))
        draws = per_replicate.filter(pl.col("resampling") == "consistency").join(
            observed_values, on=group, how="left", nulls_equal=True
        )

        # A draw equal to the observation counts as at least as large; the two are
        # summed in different orders (and Brier and log-loss through their affine
        # form), so "equal" is within a relative 1e-9 (far above the rounding of
        # a sum of 10**9 terms, far below any difference a test could care about).
        def at_least(phi: str) -> pl.Expr:
            observed = pl.col(f"__observed_{phi}")
            return pl.col(phi) >= observed - _TIE * observed.abs()

        p_values = draws.group_by(group).agg(
            ((1 + at_least(phi).sum()) / (1 + pl.len())).cast(pl.Float64).alias(name)
            for name, phi in tests.items()
        )
        result = result.join(p_values, on=group, how="left", nulls_equal=True)
        # Null when the observed metric is null (no used row, refused rows).
        result = result.with_columns(
            pl.when(pl.col(phi).is_not_null()).then(pl.col(name)).alias(name)
            for name, phi in tests.items()
        )
    if DISTINCT_IDS in stats.collect_schema().names():
        bounds = [f"{n}_{side}" for n in interval for side in ("lower", "upper")]
        drawn = [*(bounds if confidence is not None else []), *tests]
        result = _without_shared_draws(result, stats, group, drawn)
    columns: list[str] = []
    for name in metrics:
        columns.append(name)
        if name in interval and confidence is not None:
            columns.extend((f"{name}_lower", f"{name}_upper"))
    return result.sort(group, nulls_last=True).select(
        *keys, "count", "refused", "mean_predicted", "observed", *columns
    )


def _without_shared_draws(
    result: pl.LazyFrame, stats: pl.LazyFrame, group: list[str], drawn: list[str]
) -> pl.LazyFrame:
    """`result` with the `drawn` columns null in groups whose rows share their ids (they
    share their draws; a DataFrame raises instead: ``plan.check_shared_ids``)."""
    shared = shared_ids(stats, group).select(*group, "shared")
    result = result.join(shared, on=group, how="left", nulls_equal=True)
    kept = ~pl.col("shared").fill_null(False)
    return result.with_columns(pl.when(kept).then(pl.col(c)).alias(c) for c in drawn)
