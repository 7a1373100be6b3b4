"""Every encoding of the bin rule agrees: index, value, masks and searchsorted on exact edges.

The oracle is :func:`reference.bin_ids` (numpy's searchsorted on the correctly rounded
edges k / B); the data, :func:`conftest.near_edges`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import polars_calib as pc
from conftest import near_edges
from reference import bin_ids


def _near_edges_and_random(n_bins: int, seed: int) -> np.ndarray:
    """Every edge k / B (200 of them at most) within 4 ulps, and 50 random values."""
    random = np.random.default_rng(seed).random(50)
    return np.concatenate([near_edges(n_bins, ulps=4, seed=seed), random])


@settings(max_examples=40, deadline=None)
@given(
    n_bins=st.integers(1, 3000),
    closed=st.sampled_from(["right", "left"]),
    seed=st.integers(0, 2**16),
)
@example(n_bins=10, closed="right", seed=0)
@example(n_bins=100, closed="left", seed=0)
@example(n_bins=40, closed="right", seed=1)  # the last masked count
@example(n_bins=41, closed="left", seed=1)  # the first windowed count
@example(n_bins=3000, closed="right", seed=2)
@example(n_bins=22, closed="left", seed=3)  # fl(fl(m / 22) * 22) != m for some m
@example(n_bins=25, closed="right", seed=3)
@example(n_bins=2**13 - 1, closed="left", seed=4)  # n_bins is at most 10_000 (MAX_BINS)
@example(n_bins=10_000, closed="right", seed=4)
def test_index_value_masks_and_searchsorted_agree(n_bins: int, closed: str, seed: int) -> None:
    p = _near_edges_and_random(n_bins, seed)
    binning = pc.Binning(n_bins, "uniform", closed)  # type: ignore[arg-type]
    frame = pl.DataFrame({"p": p})
    got = frame.select(
        index=binning.index(pl.col("p")),
        value=binning.value(pl.col("p")),
    )
    want = bin_ids(p, n_bins, "uniform", closed)
    np.testing.assert_array_equal(got["index"].to_numpy(), want)
    np.testing.assert_array_equal(got["value"].to_numpy(), want.astype(np.float64))
    if n_bins <= 200:  # one column per bin: keep it small
        masks = frame.select(
            pl.concat_list([m.cast(pl.Int32) for m in binning.masks(pl.col("p"))])
            .list.arg_max()
            .alias("masked"),
            pl.sum_horizontal(binning.masks(pl.col("p"))).alias("hits"),
        )
        assert masks["hits"].to_list() == [1] * len(p)  # every p in exactly one bin
        np.testing.assert_array_equal(masks["masked"].to_numpy(), want)


@settings(max_examples=30, deadline=None)
@given(
    n_bins=st.integers(1, 3000),
    closed=st.sampled_from(["right", "left"]),
    seed=st.integers(0, 2**16),
)
@example(n_bins=10, closed="right", seed=0)
@example(n_bins=100, closed="left", seed=0)
@example(n_bins=22, closed="left", seed=3)  # fl(fl(m / 22) * 22) != m for some m
@example(n_bins=3000, closed="right", seed=2)
def test_the_statistics_table_puts_every_row_in_its_bin(
    n_bins: int, closed: str, seed: int
) -> None:
    """The table's bins for one group, by keys packed with the bin (a small integer, a
    string's code) and by a key that is not (a 64-bit integer)."""
    p = _near_edges_and_random(n_bins, seed)
    want = np.bincount(bin_ids(p, n_bins, "uniform", closed), minlength=n_bins)
    df = pl.DataFrame({"p": p, "y": np.zeros(len(p), dtype=np.int64)}).with_columns(
        small=pl.lit(7, pl.Int32), text=pl.lit("a"), big=pl.lit(7, pl.Int64)
    )
    for by in (None, "small", "text", "big"):
        table = pc.bin_statistics(df, "p", "y", by=by, n_bins=n_bins, closed=closed)  # type: ignore[arg-type]
        held = table.filter(pl.col("count") > 0)
        assert held["bin"].to_list() == np.flatnonzero(want).tolist(), by
        assert held["count"].to_list() == want[want > 0].tolist(), by


def test_the_grid_holds_the_exact_edges() -> None:
    for n_bins in (1, 3, 10, 49, 100):
        grid = pc.Binning(n_bins).grid().collect()
        assert grid["bin"].to_list() == list(range(n_bins))
        assert grid["lower"].to_list() == pc.uniform_edges(n_bins)[:-1]
        assert grid["upper"].to_list() == [float(Fraction(k, n_bins)) for k in range(1, n_bins + 1)]


@pytest.mark.parametrize("closed", ["right", "left"])
def test_a_null_is_in_no_bin(closed: str) -> None:
    binning = pc.Binning(5, "uniform", closed)  # type: ignore[arg-type]
    got = pl.DataFrame({"p": [None, 0.5]}, schema={"p": pl.Float64}).select(
        index=binning.index(pl.col("p")),
        hits=pl.sum_horizontal(binning.masks(pl.col("p"))),
    )
    assert got["index"].to_list() == [None, 2]
    assert got["hits"].to_list() == [0, 1]


# The public `pc.bin_index` near every edge, and the documented convention checked exactly.


def _in_documented_bin(p: float, b: int, n_bins: int, closed: str) -> bool:
    """`p` lies in bin `b` as binning.py documents it, by exact comparisons with the edges."""
    lower, upper = float(Fraction(b, n_bins)), float(Fraction(b + 1, n_bins))
    if closed == "right":  # [0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]
        return (lower < p or (b == 0 and p == 0.0)) and p <= upper
    # [0, 1/B), ..., [(B-1)/B, 1]: 1.0 in the last bin
    return lower <= p and (p < upper or (b == n_bins - 1 and p == 1.0))


@st.composite
def _near_edges(draw: st.DrawFn) -> tuple[int, list[float]]:
    """A bin count up to 3000 and probabilities within 4 ulps of random edges k/B."""
    n_bins = draw(st.integers(1, 3000))
    near = st.tuples(st.integers(0, n_bins), st.integers(-4, 4))  # an edge k, and ulps away
    picks = draw(st.lists(near, min_size=1, max_size=40))
    p = []
    for k, ulps in picks:
        value = float(Fraction(k, n_bins))
        for _ in range(abs(ulps)):
            value = float(np.nextafter(value, 2.0 if ulps > 0 else -1.0))
        if 0.0 <= value <= 1.0:
            p.append(value)
    return n_bins, p


@given(case=_near_edges(), closed=st.sampled_from(["right", "left"]))
@example(case=(10, [0.7, 0.6999999999999998, 0.7000000000000001, 0.0, 1.0]), closed="right")
@example(case=(10, [0.7, 0.6999999999999998, 0.7000000000000001, 0.0, 1.0]), closed="left")
@example(case=(100, [0.07, 0.06999999999999999, 0.07000000000000002]), closed="right")
@example(case=(3, [1 / 3, 2 / 3, 0.3333333333333333, 0.33333333333333337]), closed="left")
@example(case=(1, [0.0, 5e-324, 0.9999999999999999, 1.0]), closed="left")
@example(case=(3000, [2999 / 3000, 1 / 3000, 1499 / 3000, 0.5]), closed="right")
@example(case=(49, [1 / 49, 48 / 49, 0.02040816326530612, 0.020408163265306124]), closed="left")
def test_bin_index_near_every_edge_is_searchsorted_on_the_exact_edges(
    case: tuple[int, list[float]], closed: str
) -> None:
    n_bins, p = case
    got = pl.DataFrame({"p": p}, schema={"p": pl.Float64}).select(
        pc.bin_index("p", n_bins=n_bins, closed=closed)  # type: ignore[arg-type]
    )
    expected = bin_ids(np.array(p, dtype=np.float64), n_bins, "uniform", closed)
    assert got.to_series().to_list() == expected.tolist()
    # The mapping above is the convention binning.py documents, checked exactly.
    for value, b in zip(p, expected.tolist()):
        assert _in_documented_bin(value, b, n_bins, closed), (value, b)
