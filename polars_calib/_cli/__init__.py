"""The ``polars-calib`` command line (:mod:`polars_calib.cli` is its entry point).

``main`` holds the parser and the dispatch; one module per command or family:
``summary`` (``report`` of a classification log: the summary, ECE and the other
metrics) with ``summary_files`` (``--out``) and ``summary_page`` (``--html``),
``regression`` (``report`` of a regression log), ``audit``, ``recalibration``
(``fit`` and ``apply``) and ``monitor``; ``report_parser``, ``report_options`` and
``regression_options`` are ``report``'s arguments and their checks, ``report_outputs``
what it writes in both forms; ``arguments``, ``files`` and ``progress`` are shared by
every command.
"""
