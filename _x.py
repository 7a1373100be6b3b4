import polars as pl, polars_calib as pc
pl.Config.set_tbl_width_chars(120)
df = pl.DataFrame({
    "p": [0.1, 0.2, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9],
    "y": [0, 0, 1, 0, 1, 0, 1, 1, 1, 0],
})
print(df.select(parts=pc.brier_decomposition("p", "y", n_bins=5)).unnest("parts").select(pl.all().round(4)))
df = pl.DataFrame({"p": [0.2, 0.2, 0.2, 0.7, 0.7], "y": [0, 1, 1, 1, 0]})
print(df.select(
    brier=pc.brier("p", "y"),
    cl=pc.calibration_loss("p", "y", strategy="unique"),
    rl=pc.refinement_loss("p", "y", strategy="unique"),
).with_columns(total=pl.col("cl") + pl.col("rl")).select(pl.all().round(4)))
