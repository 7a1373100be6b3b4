"""Frame functions: summaries, reliability tables and statistics tables of a frame.

Each is one :func:`~polars_calib._table.pipeline.table_plan` and a finisher; a
DataFrame in gives a DataFrame out (refused rows raise), a LazyFrame a plan.
"""
