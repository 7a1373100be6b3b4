"""The Wilson score interval: exact at the ends, inside [0, 1], around the estimate.

The reference is Wilson's textbook formula evaluated in 150-digit decimal arithmetic,
where its cancellation at the ends costs nothing; the expression under test uses the
cancellation-free form in float64.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from statistics import NormalDist

import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from polars_calib._core.intervals import wilson_interval

Z95 = NormalDist().inv_cdf(0.975)
LEVELS = [0.5, 0.9, 0.95, 0.997]


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def reference(successes: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's bounds ``(2s + z² ∓ z √(z² + 4 s (n - s) / n)) / (2 (n + z²))``.

    Every input is a float, so converted exactly; with 150 digits the products are
    exact and the subtraction loses nothing that shows in a float64 result.
    """
    with localcontext() as context:
        context.prec = 150
        s, trials, zz = Decimal(successes), Decimal(n), Decimal(z)
        root = (zz * zz + 4 * s * (trials - s) / trials).sqrt()
        denominator = 2 * (trials + zz * zz)
        lower = (2 * s + zz * zz - zz * root) / denominator
        upper = (2 * s + zz * zz + zz * root) / denominator
        return float(lower), float(upper)


def _bounds(successes: list[float], n: list[float], z: float) -> pl.DataFrame:
    lower, upper = wilson_interval(pl.col("successes"), pl.col("n"), z)
    return pl.DataFrame(
        {"successes": successes, "n": n}, schema={"successes": pl.Float64, "n": pl.Float64}
    ).with_columns(
        observed=pl.col("successes") / pl.col("n"),
        lower=lower,
        upper=upper,
    )


def _check_guarantees(frame: pl.DataFrame) -> None:
    """The promises of the docstring, row by row, with the offending rows on failure."""
    s, n, p = pl.col("successes"), pl.col("n"), pl.col("observed")
    lower, upper = pl.col("lower"), pl.col("upper")
    broken = frame.filter(
        ~(
            (lower >= 0.0)
            & (lower <= p)
            & (p <= upper)
            & (upper <= 1.0)
            & ((lower == 0.0) == (s == 0.0))
            & ((upper == 1.0) == (s == n))
        )
    )
    assert broken.is_empty(), broken


def _check_reference(frame: pl.DataFrame, z: float, rel_tol: float = 1e-12) -> None:
    for successes, n, lower, upper in frame.select("successes", "n", "lower", "upper").iter_rows():
        want_lower, want_upper = reference(successes, n, z)
        assert math.isclose(lower, want_lower, rel_tol=rel_tol), (successes, n, lower)
        assert math.isclose(upper, want_upper, rel_tol=rel_tol), (successes, n, upper)


@pytest.mark.parametrize("confidence", LEVELS)
def test_every_count_up_to_200(confidence: float) -> None:
    """Every n in 1..200 and every s in 0..n, in one frame."""
    pairs = [(s, n) for n in range(1, 201) for s in range(n + 1)]
    z = _z(confidence)
    frame = _bounds([float(s) for s, _ in pairs], [float(n) for _, n in pairs], z)
    assert frame.height == 20_300
    _check_guarantees(frame)
    _check_reference(frame, z)


def test_the_ends_are_exact() -> None:
    sizes = [float(n) for n in range(1, 201)]
    zeros = _bounds([0.0] * 200, sizes, Z95)
    ones = _bounds(sizes, sizes, Z95)
    assert zeros.get_column("lower").to_list() == [0.0] * 200
    assert ones.get_column("upper").to_list() == [1.0] * 200
    # ... and the far bounds are Wilson's n / (n + z²) and z² / (n + z²), to the ulp.
    assert ones.get_column("lower").to_list() == pytest.approx(
        [n / (n + Z95 * Z95) for n in sizes], rel=1e-15
    )
    assert zeros.get_column("upper").to_list() == pytest.approx(
        [Z95 * Z95 / (n + Z95 * Z95) for n in sizes], rel=1e-15
    )


def test_large_counts() -> None:
    """Integer counts far beyond a bin of a real log keep every guarantee."""
    n = [1e6, 1e9, 1e12, 1e14, 1e14, 1e14]
    s = [1.0, 1e9 - 1.0, 5e11, 0.0, 1.0, 1e14 - 1.0]
    frame = _bounds(s, n, Z95)
    _check_guarantees(frame)
    _check_reference(frame, Z95)


def test_fractional_weights() -> None:
    """Weighted bins: s and n are sums of fractional weights, s a subset of n."""
    weights = [0.1, 0.2, 0.3, 1e-3, 2.5, 7.25, 1e3, 0.7]
    bins = [weights[: k + 1] for k in range(len(weights))]
    successes, n = [], []
    for bin_weights in bins:
        total = math.fsum(bin_weights)
        for cut in range(len(bin_weights) + 1):
            successes.append(math.fsum(bin_weights[:cut]))
            n.append(total)
    frame = _bounds(successes, n, Z95)
    _check_guarantees(frame)
    _check_reference(frame, Z95)


@given(
    rows=st.lists(
        st.tuples(st.floats(min_value=1e-3, max_value=1e3, allow_nan=False), st.booleans()),
        min_size=1,
        max_size=50,
    ),
    confidence=st.sampled_from(LEVELS),
)
@example(rows=[(0.3, False)] * 20, confidence=0.95)  # all 0: lower exactly 0
@example(rows=[(0.3, True)] * 20, confidence=0.95)  # all 1: upper exactly 1
@example(rows=[(1e-3, True), (1e3, False)], confidence=0.997)  # tiny observed fraction
@example(rows=[(1e3, True), (1e-3, False)], confidence=0.997)  # observed just below 1
@example(rows=[(0.1, True), (0.2, True), (0.7, False)], confidence=0.95)  # 0.1 + 0.2
def test_weighted_bins_keep_every_guarantee(
    rows: list[tuple[float, bool]], confidence: float
) -> None:
    z = _z(confidence)
    # fsum is correctly rounded, so a sum over a subset never exceeds the whole.
    successes = math.fsum(w for w, y in rows if y)
    n = math.fsum(w for w, _ in rows)
    frame = _bounds([successes], [n], z)
    _check_guarantees(frame)
    _check_reference(frame, z)


def test_null_where_there_is_no_weight() -> None:
    lower, upper = wilson_interval(pl.col("s"), pl.col("n"), Z95)
    frame = pl.DataFrame(
        {"s": [0, 0, 1, None, 2], "n": [0, -1, None, 5, 4]},
        schema={"s": pl.Int64, "n": pl.Int64},
    ).select(lower=lower, upper=upper)
    assert frame.schema == pl.Schema({"lower": pl.Float64, "upper": pl.Float64})
    assert frame.rows() == [(None, None)] * 4 + [frame.row(4)]
    assert frame.row(4) == pytest.approx(reference(2.0, 4.0, Z95), rel=1e-12)


def test_a_pure_expression_in_group_by_and_streaming() -> None:
    """Successes and trials may be aggregations; the plan runs in either engine."""
    df = pl.DataFrame({"g": ["a", "a", "a", "b", "b"], "y": [0, 0, 0, 1, 1]})
    lower, upper = wilson_interval(pl.col("y").sum(), pl.len(), Z95)
    plan = df.lazy().group_by("g").agg(lower.alias("lower"), upper.alias("upper")).sort("g")
    for engine in ("in-memory", "streaming"):
        got = plan.collect(engine=engine)  # type: ignore[call-overload]
        assert got.get_column("lower").to_list() == [0.0, pytest.approx(2 / (2 + Z95**2))]
        assert got.get_column("upper").to_list() == [pytest.approx(Z95**2 / (3 + Z95**2)), 1.0]


@pytest.mark.parametrize("z", ["1.96", True, None])
def test_z_of_the_wrong_type(z: object) -> None:
    with pytest.raises(TypeError, match="`z` must be a positive finite number"):
        wilson_interval(pl.col("s"), pl.col("n"), z)  # type: ignore[arg-type]


@pytest.mark.parametrize("z", [0.0, -1.96, math.inf, math.nan])
def test_z_out_of_range(z: float) -> None:
    with pytest.raises(ValueError, match="`z` must be a positive finite number"):
        wilson_interval(pl.col("s"), pl.col("n"), z)


def test_the_textbook_float_form_misses_the_ends() -> None:
    """Why the cancellation-free form: the textbook form in float64 leaves residues."""
    sizes = range(1, 201)
    z2 = Z95 * Z95
    residues = 0
    for n in sizes:
        shrink = 1.0 + z2 / n
        half = Z95 * math.sqrt(z2 / (4.0 * n * n)) / shrink
        residues += ((z2 / (2.0 * n)) / shrink - half != 0.0) or (
            (1.0 + z2 / (2.0 * n)) / shrink + half != 1.0
        )
    assert residues > 50
    _check_guarantees(_bounds([0.0] * 200, [float(n) for n in sizes], Z95))
