"""Metrics as Polars expressions: a problem, then a finisher over per-bin sums."""
