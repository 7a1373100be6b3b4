"""Checked by mypy in tests/test_typing.py: the typed path to the `.calib` namespace."""

import polars as pl

import polars_calib as pc

ece: pl.Expr = pc.col("p").calib.ece("y", n_bins=10)
brier: pl.Expr = pc.brier("p", "y", weight="w")
frame = pl.DataFrame({"p": [0.2], "y": [0]}).select(ece, pc.mce(pl.col("p"), "y").alias("mce"))
