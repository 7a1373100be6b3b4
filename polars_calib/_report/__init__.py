"""The HTML report: one self-contained page laid out from the package's public tables.

:mod:`~polars_calib._report.report` holds :func:`~polars_calib.html_report` and
:class:`~polars_calib.HtmlReport`; :mod:`~polars_calib._report.tables` computes the
page's tables with the public table API (one statistics table, finished);
:mod:`~polars_calib._report.sections` writes each section (header facts, summary,
reliability diagrams, metric over time, the audit, notes) with the public plotting
functions; :mod:`~polars_calib._report.notes` words the notes;
:mod:`~polars_calib._report.page` puts the sections in order, and
:mod:`~polars_calib._report.html` and :mod:`~polars_calib._report.assets` write the
HTML, its styles and scripts. :mod:`~polars_calib._report.regression` holds
:func:`~polars_calib.regression_html_report`, the page of Gaussian regression
predictions, whose sections are in :mod:`~polars_calib._report.regression_page`.
"""
