"""An audit's options, checked before any data are read, and the test each slice gets."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

from polars_calib._core.binning import Binning
from polars_calib._core.binning import binning as make_binning
from polars_calib._core.exprs import IntoExpr
from polars_calib._core.options import (
    METRICS,
    AuditTest,
    Closed,
    Metric,
    Resampling,
    Strategy,
    check_choice,
)
from polars_calib._table.replicates import Resample, resamples_for

__all__ = [
    "P_VALUE",
    "Test",
    "check_min_count",
    "check_optional",
    "chosen_test",
    "metric_names",
    "slice_resamples",
    "uniform_binning",
]

Test = Literal["spiegelhalter", "consistency"]
"""The test a slice gets (``"auto"`` resolved)."""

P_VALUE: dict[Test, str] = {"spiegelhalter": "spiegelhalter_p", "consistency": "consistency_p"}
"""The summary metric of each test's p-value."""


def uniform_binning(n_bins: int, strategy: Strategy, closed: Closed) -> Binning:
    """Return the checked bins; ``ValueError`` unless uniform (other bins cannot roll up)."""
    binning = make_binning(n_bins, strategy, closed)
    if binning.strategy != "uniform":
        msg = (
            "`strategy` must be 'uniform' for an audit: quantile bins depend on each "
            "slice's own rows, so the finest cells cannot be summed into coarser slices"
        )
        raise ValueError(msg)
    return binning


def metric_names(metrics: Metric | Sequence[Metric]) -> list[str]:
    """Return the summary metrics asked for (a test or a decomposition has no disparity)."""
    listed = [metrics] if isinstance(metrics, str) else list(metrics)
    names = list(dict.fromkeys(check_choice("metrics", metric, METRICS) for metric in listed))
    if not names:
        msg = "`metrics` must name at least one metric"
        raise ValueError(msg)
    return names


def check_optional(argument: str, value: object, choices: Collection[str]) -> None:
    """Raise unless `value` is ``None`` or one of `choices`."""
    if value is not None:
        check_choice(argument, value, choices)


def check_min_count(min_count: object) -> None:
    """Raise unless `min_count` is a non-negative int."""
    if isinstance(min_count, bool) or not isinstance(min_count, int):
        msg = f"`min_count` must be a non-negative int, got {type(min_count).__name__}"
        raise TypeError(msg)
    if min_count < 0:
        msg = f"`min_count` must be a non-negative int, got {min_count!r}"
        raise ValueError(msg)


def chosen_test(test: AuditTest | None, vectors: bool, n_resamples: int | None) -> Test | None:
    """Choose each slice's test: Spiegelhalter's for binary data, else consistency."""
    if test is None:
        return None
    chosen: Test = ("consistency" if vectors else "spiegelhalter") if test == "auto" else test
    if chosen == "spiegelhalter" and vectors:
        msg = (
            "`test='spiegelhalter'` takes binary probabilities: use test='consistency' "
            "(or 'auto') for probability vectors"
        )
        raise ValueError(msg)
    if chosen == "consistency" and n_resamples is None:
        msg = "the consistency test draws `n_resamples` label sets: give `n_resamples`"
        raise ValueError(msg)
    return chosen


def slice_resamples(
    test: Test | None,
    n_resamples: int | None,
    seed: int,
    id: IntoExpr | None,  # noqa: A002
) -> list[Resample]:
    """Return the resamplings: the bootstrap with `n_resamples`, and the consistency test's."""
    methods: list[Resampling] = []
    if n_resamples is not None:
        methods.append("bootstrap")
    if test == "consistency":
        methods.append("consistency")
    return resamples_for(methods or None, 1000 if n_resamples is None else n_resamples, seed, id)
