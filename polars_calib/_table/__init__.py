"""The statistics table: sparse sums per (keys, bin[, class][, replicate]), and its finishers.

Every frame feature is one aggregation of a :class:`~polars_calib._core.problem.Problem`
into this table, then a finisher over the small result
(:func:`~polars_calib._table.pipeline.table_plan` assembles the first two for every
caller):

``keys..., [resampling, replicate], [class], bin, lower, upper, closed, n_bins, count,
weight, sum_p, sum_y[, sum_<term>...]``

* **sparse**: one row per group (and class, for the top-label and classwise
  reductions, and replicate, for resampling) and bin **that holds rows**; empty bins
  are never rows (a reliability table adds them for display:
  :func:`~polars_calib._table.finish.reliability_rows`), so memory is set by the
  groups and bins met, never by the grid or the replicates;
* self-describing: ``lower`` and ``upper`` are the bin's exact edges, ``closed``
  (``"right"`` or ``"left"``) the side of a bin that holds its edge, ``n_bins`` the
  size of a uniform ``k / n_bins`` grid (null for per-group grids: quantile,
  median-variance, a peer's edges), so tables of other grids never merge;
* no group vanishes: a group holding refused rows has one row with a null bin,
  ``count`` the number of refused rows and null sums; a group with neither used nor
  refused rows (only null inputs) has one such row counting 0;
* ``count`` (Int64) rows; ``weight`` their total weight (the count when unweighted);
  ``sum_p``, ``sum_y`` the weighted sums of the problem's ``p`` and ``y``, and the
  weighted sums of the row terms a requested metric needs
  (:func:`~polars_calib._table.build.terms_for`).

Quantile edges are data: a quantile table lists each group's whole grid (its observed
rows), so that a reliability table shows every quantile bin. The canonical table
(:mod:`~polars_calib._table.canonical`) has the same layout with the bin replaced by
the cell of the simplex grid.

Uniform-bin tables merge by summing rows of the same group and bin (partitions, days,
processes, engines: :mod:`~polars_calib._table.merge`); quantile bins depend on all of
a group's rows, so tables of different partitions hold the same bin with different
edges, which the finishers refuse, as they refuse the same bin of two closures.

Modules, each importing only those above it in this list and the core:
:mod:`~polars_calib._table.bin_sums` (finishers over per-bin sums, shared with the
expressions), :mod:`~polars_calib._table.distance` (the canonical ECE's distances),
:mod:`~polars_calib._table.columns` (column names), :mod:`~polars_calib._table.replicates`
(the replicate keys: counter-based draws), :mod:`~polars_calib._table.build` (the one
aggregation and its sparse table), :mod:`~polars_calib._table.plan` (a frame checked
into a problem), :mod:`~polars_calib._table.canonical`, :mod:`~polars_calib._table.merge`,
:mod:`~polars_calib._table.finish`, :mod:`~polars_calib._table.resampled` (intervals and
p-values), :mod:`~polars_calib._table.median_variance` (given bins), and
:mod:`~polars_calib._table.pipeline` (the one plan).
"""
