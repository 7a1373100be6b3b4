"""The special functions of the p-values, as Polars expressions, against scipy.

Accuracy: 1e-12 relative wherever the value is a normal double (scipy's own
accuracy is about 1e-15); absolute 1e-300 where it underflows.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from polars_calib._core.special import chi2_sf, erfc, normal_cdf, normal_sf

scipy_special = pytest.importorskip("scipy.special")
scipy_stats = pytest.importorskip("scipy.stats")

RTOL = 1e-12


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    normal = want > 1e-300
    relative = np.abs(got[normal] - want[normal]) / want[normal]
    assert relative.max() < RTOL, relative.max()
    assert np.abs(got[~normal] - want[~normal]).max(initial=0.0) < 1e-300


def test_erfc_and_normal_tails_match_scipy_from_minus_40_to_40() -> None:
    x = np.concatenate(
        [
            np.linspace(-40.0, 40.0, 40_001),
            [0.0, -0.0, 0.46875, -0.46875, 4.0, -4.0, 26.543, 1e-300, 5e-324],
            np.nextafter(np.array([0.46875, 4.0]), [1.0, 5.0]),
        ]
    )
    got = pl.DataFrame({"x": x}).select(
        erfc=erfc(pl.col("x")), sf=normal_sf(pl.col("x")), cdf=normal_cdf(pl.col("x"))
    )
    assert_close(got["erfc"].to_numpy(), scipy_special.erfc(x))
    assert_close(got["sf"].to_numpy(), scipy_stats.norm.sf(x))
    assert_close(got["cdf"].to_numpy(), scipy_stats.norm.cdf(x))


def test_upper_tail_keeps_its_relative_accuracy() -> None:
    # 1 - Phi(z) by subtraction is 0 beyond z = 8.3; the tail must not be.
    z = np.array([8.5, 10.0, 20.0, 37.0])
    got = pl.DataFrame({"z": z}).select(normal_sf(pl.col("z"))).to_series().to_numpy()
    assert (got > 0).all()
    assert_close(got, scipy_stats.norm.sf(z))


def test_chi2_survival_matches_scipy_for_integer_df_varying_per_row() -> None:
    x = np.concatenate([np.linspace(0.0, 400.0, 801), np.geomspace(1e-10, 3000.0, 200)])
    k = np.arange(1, 131)
    xs, ks = (a.ravel() for a in np.meshgrid(x, k))
    got = pl.DataFrame({"x": xs, "k": ks}).select(chi2_sf(pl.col("x"), pl.col("k")))
    assert_close(got.to_series().to_numpy(), scipy_stats.chi2.sf(xs, ks))


def test_chi2_survival_edges() -> None:
    frame = pl.DataFrame(
        {"x": [0.0, -1.0, 3.0, None, 3.0, 3.0], "k": [4, 2, None, 3, 0, -2]},
        schema={"x": pl.Float64, "k": pl.Int64},
    )
    got = frame.select(chi2_sf(pl.col("x"), pl.col("k"))).to_series().to_list()
    assert got == [1.0, 1.0, None, None, None, None]


def test_special_functions_in_aggregations() -> None:
    # One statistic and one df per group, in group_by, over and streaming.
    frame = pl.DataFrame({"g": [1, 1, 2, 2, 2], "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    statistic = chi2_sf(pl.col("x").sum(), pl.len()).alias("q")
    want = [scipy_stats.chi2.sf(3.0, 2), scipy_stats.chi2.sf(12.0, 3)]
    grouped = frame.lazy().group_by("g").agg(statistic).sort("g")
    for engine in ("in-memory", "streaming"):
        got = grouped.collect(engine=engine)["q"].to_numpy()
        np.testing.assert_allclose(got, want, rtol=RTOL)
    over = frame.select(statistic.over("g"))["q"].to_numpy()
    np.testing.assert_allclose(over, [want[0]] * 2 + [want[1]] * 3, rtol=RTOL)
