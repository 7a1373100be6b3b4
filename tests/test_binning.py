"""The one bin rule: exact at every edge k/B, both closures, both strategies."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import polars_calib as pc
import reference
from conftest import near_edges


def _every_edge(max_bins: int) -> pl.DataFrame:
    rows = [(b, k, k / b) for b in range(1, max_bins + 1) for k in range(b + 1)]
    return pl.DataFrame(rows, schema=["n_bins", "k", "p"], orient="row")


@pytest.mark.parametrize("closed", ["right", "left"])
def test_every_edge_k_over_b_lands_where_exact_arithmetic_puts_it(closed: str) -> None:
    edges = _every_edge(100)
    got = pl.concat(
        [
            part.with_columns(bin=pc.bin_index("p", n_bins=b, closed=closed))
            for (b,), part in edges.group_by("n_bins")
        ]
    )
    k, b = pl.col("k"), pl.col("n_bins")
    expected = pl.max_horizontal(k - 1, 0) if closed == "right" else pl.min_horizontal(k, b - 1)
    wrong = got.filter(pl.col("bin") != expected)
    assert wrong.is_empty(), wrong.head()
    assert got.height == sum(b + 1 for b in range(1, 101))


@pytest.mark.parametrize("closed", ["right", "left"])
def test_two_decimal_probabilities_with_100_bins(closed: str) -> None:
    p = [round(j / 100, 2) for j in range(101)]
    got = pl.DataFrame({"p": p}).select(pc.bin_index("p", n_bins=100, closed=closed))
    expected = (
        [max(j - 1, 0) for j in range(101)]
        if closed == "right"
        else [min(j, 99) for j in range(101)]
    )
    assert got.to_series().to_list() == expected


def test_edge_cases_named_in_the_brief() -> None:
    df = pl.DataFrame({"p": [0.7, 0.07, 0.6, 0.3]})
    right = df.select(pc.bin_index("p", n_bins=10)).to_series().to_list()
    left = df.select(pc.bin_index("p", n_bins=10, closed="left")).to_series().to_list()
    assert right == [6, 0, 5, 2]
    assert left == [7, 0, 6, 3]
    seventh = pl.DataFrame({"p": [0.07]})
    assert seventh.select(pc.bin_index("p", n_bins=100)).item() == 6
    assert seventh.select(pc.bin_index("p", n_bins=100, closed="left")).item() == 7


probabilities = st.lists(
    st.one_of(
        st.floats(0.0, 1.0, allow_nan=False),
        st.integers(0, 1000).map(lambda j: j / 1000),
        st.integers(0, 100).map(lambda j: round(j / 100, 2)),
    ),
    min_size=1,
    max_size=200,
)


@given(p=probabilities, n_bins=st.integers(1, 60), closed=st.sampled_from(["right", "left"]))
@example(p=[0.07, 0.7, 1.0, 0.0], n_bins=100, closed="right")
@example(p=[0.07, 0.7, 1.0, 0.0], n_bins=100, closed="left")
def test_uniform_bins_match_searchsorted_reference(
    p: list[float], n_bins: int, closed: str
) -> None:
    got = pl.DataFrame({"p": p}).select(pc.bin_index("p", n_bins=n_bins, closed=closed))
    expected = reference.bin_ids(np.array(p), n_bins, "uniform", closed)
    assert got.to_series().to_list() == expected.tolist()


grid_probabilities = st.lists(
    st.integers(0, 1000).map(lambda j: j / 1000), min_size=1, max_size=200
)


@given(p=grid_probabilities, n_bins=st.integers(1, 20), closed=st.sampled_from(["right", "left"]))
@example(p=[0.5, 0.5, 0.5, 0.5], n_bins=4, closed="right")
def test_quantile_bins_match_numpy_quantiles(p: list[float], n_bins: int, closed: str) -> None:
    got = pl.DataFrame({"p": p}).select(
        pc.bin_index("p", n_bins=n_bins, strategy="quantile", closed=closed)
    )
    expected = reference.bin_ids(np.array(p), n_bins, "quantile", closed)
    assert got.to_series().to_list() == expected.tolist()


def test_quantile_bins_are_computed_per_group() -> None:
    df = pl.DataFrame(
        {"g": [0, 0, 0, 0, 1, 1, 1, 1], "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]}
    )
    got = df.select(pc.bin_index("p", n_bins=2, strategy="quantile").over("g"))
    assert got.to_series().to_list() == [0, 0, 1, 1, 0, 0, 1, 1]


def test_invalid_probabilities_get_a_null_bin() -> None:
    df = pl.DataFrame({"p": [None, float("nan"), -0.1, 1.1, 0.5]})
    got = df.select(pc.bin_index("p", n_bins=4)).to_series().to_list()
    assert got == [None, None, None, None, 1]


def test_bin_index_dtype_is_int32() -> None:
    df = pl.DataFrame({"p": [0.2]})
    assert df.select(pc.bin_index("p")).dtypes == [pl.Int32]
    assert df.select(pc.bin_index("p", strategy="quantile")).dtypes == [pl.Int32]


def test_uniform_edges_are_correctly_rounded() -> None:
    for b in range(1, 101):
        assert pc.uniform_edges(b) == [k / b for k in range(b + 1)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_bins": 0}, "`n_bins` must be a positive int, got 0"),
        ({"n_bins": -3}, "`n_bins` must be a positive int, got -3"),
        (
            {"strategy": "kmeans"},
            "`strategy` must be one of 'uniform', 'quantile', 'median_variance', got 'kmeans'",
        ),
        ({"closed": "both"}, "`closed` must be one of 'right', 'left', got 'both'"),
    ],
)
def test_bad_binning_parameters_raise_when_the_expression_is_built(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        pc.bin_index("p", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be"):
        pc.ece("p", "y", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_bins": 2.5}, "`n_bins` must be a positive int, got float 2.5"),
        ({"n_bins": True}, "`n_bins` must be a positive int, got bool True"),
        (
            {"strategy": 1},
            "`strategy` must be one of 'uniform', 'quantile', 'median_variance', got int 1",
        ),
    ],
)
def test_parameters_of_the_wrong_type_raise_type_error(
    kwargs: dict[str, object], message: str
) -> None:
    # One rule: a wrong type raises TypeError, a wrong value ValueError.
    with pytest.raises(TypeError, match=message):
        pc.bin_index("p", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be"):
        pc.ece("p", "y", **kwargs)  # type: ignore[arg-type]


def test_column_arguments_must_be_names_or_expressions() -> None:
    with pytest.raises(TypeError, match="`label` must be a column name or a Polars expression"):
        pc.ece("p", 3)  # type: ignore[arg-type]


@pytest.mark.parametrize("closed", ["right", "left"])
def test_bin_index_is_named_after_the_probability(closed: str) -> None:
    df = pl.DataFrame({"score": [0.0, 0.7, 1.0]})
    got = df.select(pc.bin_index("score", n_bins=10, closed=closed))  # type: ignore[arg-type]
    assert got.columns == ["score"]
    assert got["score"].to_list() == ([0, 6, 9] if closed == "right" else [0, 7, 9])


@pytest.mark.parametrize("closed", ["right", "left"])
@pytest.mark.parametrize("n_bins", [2, 18, 198])
def test_a_run_of_bins_is_the_bin_index_between_its_ends(closed: str, n_bins: int) -> None:
    # The curve expressions' level masks (two comparisons) against the one bin rule's index.
    from polars_calib._core.binning import Binning

    binning = Binning(n_bins, "uniform", closed)  # type: ignore[arg-type]
    df = pl.DataFrame({"p": [*near_edges(n_bins, ulps=2), None]})
    p, index = pl.col("p"), binning.index(pl.col("p"))
    runs = [(0, 0), (0, n_bins - 1), (n_bins - 1, n_bins - 1), (1, n_bins // 2), (0, n_bins // 2)]
    runs += [(n_bins // 3, n_bins - 1), (n_bins // 2, n_bins // 2)]
    for first, last in runs:
        got = df.select(binning.within(p, first, last).fill_null(False)).to_series()
        expected = df.select(index.is_between(first, last).fill_null(False)).to_series()
        assert got.to_list() == expected.to_list(), (first, last)
