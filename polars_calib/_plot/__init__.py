"""Charts drawn from the package's tables, computing nothing.

:mod:`~polars_calib._plot.reliability` (:func:`~polars_calib.plot_reliability`, from a
reliability table), :mod:`~polars_calib._plot.over_time`
(:func:`~polars_calib.plot_metric_over_time`, from a summary per time window) and
:mod:`~polars_calib._plot.audit` (:func:`~polars_calib.plot_audit`, the forest plot of an
audit's slices) and :mod:`~polars_calib._plot.regression`
(:func:`~polars_calib.plot_quantile_reliability` and :func:`~polars_calib.plot_pit_histogram`,
from the regression tables) and :mod:`~polars_calib._plot.windows`
(:func:`~polars_calib.plot_monitor_windows`, from a windows table) check their table and
build a drawing frame; :mod:`~polars_calib._plot.drift` lays out the running charts the
monitoring feature computes and decimates (:func:`~polars_calib.plot_cusum`); each backend
draws the charts in its own module (:mod:`~polars_calib._plot.altair_backend`,
:mod:`~polars_calib._plot.matplotlib_backend`); :mod:`~polars_calib._plot.png` writes
either kind of chart to a PNG file (:func:`~polars_calib.save_png`). What they share
(the backends, the install hint, the layout rule, the drawing frames' column names and
the titles) is in :mod:`~polars_calib._plot.common`. The plotting libraries are imported
only when a chart is drawn.
"""
