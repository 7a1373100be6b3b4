"""A regression problem's columns as plain values: what rebuilds its table anywhere.

:class:`RegressionForm` names a prediction form (Gaussian, quantiles, ensemble or
central intervals) by its column names, levels and seed only, so that it pickles and
crosses to another engine's workers, which rebuild the problem with their own Polars
(:mod:`polars_calib._engines`). Its problem, bins, summed terms and completion are
those of the form's plan (:func:`~polars_calib._table.regression.gaussian_plan`,
:func:`~polars_calib._table.quantiles.quantile_plan`,
:func:`~polars_calib._table.ensembles.ensemble_plan`,
:func:`~polars_calib._table.intervals.interval_plan`): the same functions, called the
same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.quantiles import quantile_binning
from polars_calib._core.regression import REGRESSION_TERMS
from polars_calib._table.ensembles import ENSEMBLE_TABLE_TERMS, prepare_ensemble
from polars_calib._table.intervals import interval_terms, prepare_intervals
from polars_calib._table.plan import Prepared
from polars_calib._table.quantiles import prepare_quantiles, quantile_terms, with_grid_size
from polars_calib._table.regression import level_binning, prepare_gaussian

__all__ = ["FormKind", "RegressionForm"]

FormKind = Literal["gaussian", "quantile", "ensemble", "interval"]


@dataclass(frozen=True)
class RegressionForm:
    """The target and prediction columns of a regression problem, as plain values.

    ``kind`` says which fields hold the prediction: ``mean`` and ``std``; ``quantiles``
    (one list column, or one column per level) at ``levels``; ``ensemble`` with the rank
    PIT's ``seed`` and ``id``; ``lower`` and ``upper`` (one column per interval).
    ``n_levels`` is the level grid of the PIT (Gaussian and ensemble forms).
    """

    kind: FormKind
    target: str
    mean: str | None = None
    std: str | None = None
    quantiles: str | tuple[str, ...] | None = None
    levels: tuple[float, ...] = ()
    ensemble: str | None = None
    seed: int = 0
    id: str | None = None
    lower: tuple[str, ...] = ()
    upper: tuple[str, ...] = ()
    n_levels: int = 100

    bin_column: ClassVar[str | None] = None
    """No column of given bins: the table bins by the form's rule."""

    @property
    def columns(self) -> list[str]:
        """The columns the problem reads (the target first)."""
        quantiles = (self.quantiles,) if isinstance(self.quantiles, str) else self.quantiles or ()
        named = (
            self.target,
            self.mean,
            self.std,
            *quantiles,
            self.ensemble,
            self.id,
            *self.lower,
            *self.upper,
        )
        return [name for name in named if isinstance(name, str)]

    @property
    def binning(self) -> Binning:
        """The bins of the table: the PIT's level grid, the quantile levels' grid, or
        one bin (intervals)."""
        if self.kind == "quantile":
            return quantile_binning(self.levels)
        if self.kind == "interval":
            return Binning(1)
        return level_binning(self.n_levels)

    @property
    def terms(self) -> tuple[str, ...]:
        """The row terms the table sums."""
        if self.kind == "quantile":
            return tuple(quantile_terms(self.levels))
        if self.kind == "interval":
            return tuple(interval_terms(len(self.lower)))
        return ENSEMBLE_TABLE_TERMS if self.kind == "ensemble" else REGRESSION_TERMS

    def prepared(
        self,
        frame: pl.DataFrame | pl.LazyFrame,
        by: list[str],
        time: str | None,
        every: str | None,
        weight: str | None,
    ) -> Prepared:
        """The problem and keys of `frame` (its schema is checked, no data read)."""
        if self.kind == "quantile":
            assert self.quantiles is not None
            return prepare_quantiles(
                frame,
                self.target,
                quantiles=self.quantiles,
                levels=self.levels,
                by=by,
                time=time,
                every=every,
                weight=weight,
            )
        if self.kind == "ensemble":
            assert self.ensemble is not None
            return prepare_ensemble(
                frame,
                self.target,
                ensemble=self.ensemble,
                seed=self.seed,
                id=self.id,
                by=by,
                time=time,
                every=every,
                weight=weight,
            )
        if self.kind == "interval":
            return prepare_intervals(
                frame,
                self.target,
                lower=list(self.lower),
                upper=list(self.upper),
                by=by,
                time=time,
                every=every,
                weight=weight,
            )
        assert self.mean is not None and self.std is not None
        return prepare_gaussian(
            frame,
            self.target,
            mean=self.mean,
            std=self.std,
            by=by,
            time=time,
            every=every,
            weight=weight,
        )

    def completed(self, table: pl.LazyFrame) -> pl.LazyFrame:
        """A completed table as the form's plan gives it (a quantile table's grid size)."""
        return with_grid_size(table, self.levels) if self.kind == "quantile" else table
