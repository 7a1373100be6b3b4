"""Binary metrics: published worked numbers, the numpy oracle, invariants and bad input."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import polars_calib as pc
import reference
from conftest import sign_changing_log

NORM_FUNCTIONS = {"l1": pc.ece, "l2": pc.rmsce, "max": pc.mce}


def _value(df: pl.DataFrame, expr: pl.Expr) -> float | None:
    return df.select(expr).item()  # type: ignore[no-any-return]


# -- published numbers ------------------------------------------------------------------


def test_worked_ten_item_example() -> None:
    df = pl.DataFrame({"p": reference.WORKED_10_P, "y": reference.WORKED_10_Y})
    assert _value(df, pc.ece("p", "y", n_bins=3)) == pytest.approx(0.241, abs=1e-12)
    means = (
        df.group_by(pc.bin_index("p", n_bins=3).alias("bin"))
        .agg(pl.col("p").mean())
        .sort("bin")["p"]
        .to_list()
    )
    assert means == pytest.approx([0.265, 0.514, 0.83666666666666667], abs=1e-12)
    assert [round(m, 3) for m in means] == [0.265, 0.514, 0.837]


def test_tutorial_class_one_against_the_rest_is_exact() -> None:
    probs, labels = reference.tutorial_arrays()
    df = pl.DataFrame({"p": probs[:, 0], "y": (labels == 0).astype(int)})
    assert _value(df, pc.ece("p", "y", n_bins=5)) == pytest.approx(
        float(Fraction(169, 900)), abs=1e-12
    )
    assert _value(df, pc.mce("p", "y", n_bins=5)) == pytest.approx(
        float(Fraction(17, 35)), abs=1e-12
    )


def test_scikit_learn_calibration_curve_documented_example() -> None:
    df = pl.DataFrame(
        {"y": [0, 0, 0, 0, 1, 1, 1, 1, 1], "p": [0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0]}
    )
    per_bin = (
        df.group_by(pc.bin_index("p", n_bins=3).alias("bin"))
        .agg(observed=pl.col("y").mean(), predicted=pl.col("p").mean(), n=pl.len())
        .sort("bin")
    )
    assert per_bin["observed"].to_list() == pytest.approx([0.0, 0.5, 1.0])
    assert per_bin["predicted"].to_list() == pytest.approx([0.2, 0.525, 0.85])
    gaps = np.abs(per_bin["observed"].to_numpy() - per_bin["predicted"].to_numpy())
    expected_ece = float((gaps * per_bin["n"].to_numpy()).sum() / 9)
    assert _value(df, pc.ece("p", "y", n_bins=3)) == pytest.approx(expected_ece, abs=1e-12)


@pytest.mark.parametrize("closed", ["right", "left"])
@pytest.mark.parametrize(("norm", "expected"), [("l1", 0.2900), ("l2", 0.2918), ("max", 0.3167)])
def test_torchmetrics_documented_example(closed: str, norm: str, expected: float) -> None:
    df = pl.DataFrame({"p": [0.25, 0.25, 0.55, 0.75, 0.75], "y": [0, 0, 1, 1, 1]})
    got = _value(df, pc.ece("p", "y", n_bins=2, norm=norm, closed=closed))
    assert got is not None and round(got, 4) == expected


def test_against_scikit_learn_calibration_curve_and_losses() -> None:
    calibration = pytest.importorskip("sklearn.calibration")
    metrics = pytest.importorskip("sklearn.metrics")
    # Continuous probabilities: scikit-learn's linspace edges only differ from the
    # exact edges for values sitting on an edge.
    df = sign_changing_log(3, 5000, decimals=None)
    p, y, w = df["p"].to_numpy(), df["y"].to_numpy(), df["w"].to_numpy()
    for strategy in ("uniform", "quantile"):
        observed, predicted = calibration.calibration_curve(y, p, n_bins=10, strategy=strategy)
        got = (
            df.group_by(pc.bin_index("p", n_bins=10, strategy=strategy).alias("b"))
            .agg(pl.col("y").mean(), pl.col("p").mean())
            .sort("b")
        )
        assert got["y"].to_numpy() == pytest.approx(observed, abs=1e-12)
        assert got["p"].to_numpy() == pytest.approx(predicted, abs=1e-12)
    assert _value(df, pc.brier("p", "y")) == pytest.approx(
        metrics.brier_score_loss(y, p), abs=1e-12
    )
    assert _value(df, pc.brier("p", "y", weight="w")) == pytest.approx(
        metrics.brier_score_loss(y, p, sample_weight=w), abs=1e-12
    )
    assert _value(df, pc.log_loss("p", "y")) == pytest.approx(metrics.log_loss(y, p), abs=1e-12)
    assert _value(df, pc.log_loss("p", "y", weight="w")) == pytest.approx(
        metrics.log_loss(y, p, sample_weight=w), abs=1e-12
    )


def test_log_loss_clips_at_machine_epsilon() -> None:
    df = pl.DataFrame({"p": [0.0, 1.0], "y": [1, 0]})
    expected = -np.log(np.finfo(np.float64).eps)
    assert _value(df, pc.log_loss("p", "y")) == pytest.approx(expected, rel=1e-12)


# -- differential test against the numpy oracle ---------------------------------------------


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 400),
    n_bins=st.integers(1, 25),
    strategy=st.sampled_from(["uniform", "quantile"]),
    closed=st.sampled_from(["right", "left"]),
    norm=st.sampled_from(["l1", "l2", "max"]),
    weighted=st.booleans(),
    decimals=st.sampled_from([1, 2, 3]),
)
@example(
    seed=0, n=1, n_bins=1, strategy="uniform", closed="right", norm="l1", weighted=False, decimals=2
)
@example(
    seed=1,
    n=300,
    n_bins=10,
    strategy="uniform",
    closed="left",
    norm="max",
    weighted=True,
    decimals=1,
)
@example(
    seed=2,
    n=300,
    n_bins=7,
    strategy="quantile",
    closed="right",
    norm="l2",
    weighted=False,
    decimals=1,
)
def test_calibration_error_matches_numpy_reference(
    seed: int,
    n: int,
    n_bins: int,
    strategy: str,
    closed: str,
    norm: str,
    weighted: bool,
    decimals: int,
) -> None:
    df = sign_changing_log(seed, n, decimals=decimals)
    weight = "w" if weighted else None
    got = _value(
        df,
        pc.ece("p", "y", n_bins=n_bins, strategy=strategy, closed=closed, norm=norm, weight=weight),
    )
    expected = reference.calibration_error(
        df["p"].to_numpy(),
        df["y"].to_numpy(),
        n_bins,
        strategy,
        closed,
        norm,
        df["w"].to_numpy() if weighted else None,
    )
    assert got == pytest.approx(expected, abs=1e-12)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), weighted=st.booleans())
def test_brier_and_log_loss_match_numpy_reference(seed: int, n: int, weighted: bool) -> None:
    df = sign_changing_log(seed, n, decimals=None)
    w = df["w"].to_numpy() if weighted else None
    weight = "w" if weighted else None
    p, y = df["p"].to_numpy(), df["y"].to_numpy()
    assert _value(df, pc.brier("p", "y", weight=weight)) == pytest.approx(
        reference.brier(p, y, w), abs=1e-12
    )
    assert _value(df, pc.log_loss("p", "y", weight=weight)) == pytest.approx(
        reference.log_loss(p, y, w), rel=1e-12
    )


# -- invariants ------------------------------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), n_bins=st.integers(1, 20))
def test_norms_are_ordered_and_bounded(seed: int, n: int, n_bins: int) -> None:
    df = sign_changing_log(seed, n)
    row = df.select(
        ece=pc.ece("p", "y", n_bins=n_bins),
        rmsce=pc.rmsce("p", "y", n_bins=n_bins),
        mce=pc.mce("p", "y", n_bins=n_bins),
    ).row(0)
    ece, rmsce, mce = row
    assert 0.0 <= ece <= rmsce + 1e-15 <= mce + 2e-15 <= 1.0 + 2e-15


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 200),
    strategy=st.sampled_from(["uniform", "quantile"]),
)
def test_permutation_invariance(seed: int, n: int, strategy: str) -> None:
    df = sign_changing_log(seed, n)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed % 1000)
    exprs = [
        pc.ece("p", "y", n_bins=8, strategy=strategy).alias("e"),
        pc.brier("p", "y").alias("b"),
    ]
    a, b = df.select(exprs).row(0), shuffled.select(exprs).row(0)
    assert a == pytest.approx(b, abs=1e-12)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200))
def test_null_rows_are_ignored(seed: int, n: int) -> None:
    df = sign_changing_log(seed, n)
    noisy = pl.concat(
        [
            df,
            pl.DataFrame(
                {"g": [0, 0, 0], "p": [None, 0.5, None], "y": [1, None, None], "w": [1.0, 1.0, 1.0]}
            ),
            pl.DataFrame({"g": [0], "p": [0.9], "y": [0], "w": [None]}, schema=df.schema),
        ]
    )
    for name, fn in NORM_FUNCTIONS.items():
        assert _value(noisy, fn("p", "y", weight="w")) == pytest.approx(
            _value(df, fn("p", "y", weight="w")), abs=1e-12
        ), name
    # Unweighted, only a null probability or label drops a row.
    unweighted = noisy.filter(pl.col("w").is_not_null())
    assert _value(unweighted, pc.brier("p", "y")) == pytest.approx(
        _value(df, pc.brier("p", "y")), abs=1e-12
    )


def test_unit_weights_equal_unweighted() -> None:
    df = sign_changing_log(5, 500).with_columns(one=pl.lit(1.0))
    for fn in (*NORM_FUNCTIONS.values(), pc.brier, pc.log_loss):
        assert _value(df, fn("p", "y", weight="one")) == pytest.approx(
            _value(df, fn("p", "y")), abs=1e-12
        )


def test_integer_weights_equal_repeated_rows() -> None:
    df = pl.DataFrame({"p": [0.1, 0.45, 0.8, 0.95], "y": [0, 1, 1, 0], "w": [1, 3, 2, 1]})
    repeated = df.select(pl.col("p", "y").repeat_by("w").explode())
    for fn in NORM_FUNCTIONS.values():
        assert _value(df, fn("p", "y", n_bins=4, weight="w")) == pytest.approx(
            _value(repeated, fn("p", "y", n_bins=4)), abs=1e-12
        )


# -- labels, names and bad input -------------------------------------------------------------


def test_bool_int_and_float_labels_agree() -> None:
    df = sign_changing_log(9, 200).with_columns(
        yb=pl.col("y").cast(pl.Boolean),
        yf=pl.col("y").cast(pl.Float32),
        yu=pl.col("y").cast(pl.UInt8),
    )
    values = {_value(df, pc.ece("p", label)) for label in ("y", "yb", "yf", "yu")}
    assert len(values) == 1


def test_output_is_named_after_the_probability_column() -> None:
    df = pl.DataFrame({"score": [0.2, 0.7], "y": [0, 1]})
    out = df.select(pc.ece("score", "y"))
    assert out.columns == ["score"]
    assert out.dtypes == [pl.Float64]
    assert df.select(pl.col("score").calib.log_loss("y")).columns == ["score"]


@pytest.mark.parametrize(
    ("p", "y", "w"),
    [
        (1.5, 1, 1.0),
        (-0.01, 0, 1.0),
        (float("nan"), 1, 1.0),
        (0.5, 2, 1.0),
        (0.5, -1, 1.0),
        (0.5, 0.5, 1.0),
        (0.5, float("nan"), 1.0),
        (0.5, 1, -1.0),
        (0.5, 1, float("nan")),
        (0.5, 1, float("inf")),
    ],
)
def test_bad_values_make_the_group_null_and_leave_other_groups_alone(
    p: float, y: float, w: float
) -> None:
    good = pl.DataFrame(
        {"g": ["good"] * 3, "p": [0.2, 0.6, 0.9], "y": [0.0, 1.0, 1.0], "w": [1.0, 2.0, 1.0]}
    )
    bad = pl.DataFrame(
        {"g": ["bad"] * 3, "p": [0.2, 0.6, p], "y": [0.0, 1.0, y], "w": [1.0, 1.0, w]}
    )
    df = pl.concat([good, bad])
    exprs = {
        "ece": pc.ece("p", "y", weight="w"),
        "mce": pc.mce("p", "y", weight="w"),
        "rmsce": pc.rmsce("p", "y", weight="w", strategy="quantile", n_bins=2),
        "brier": pc.brier("p", "y", weight="w"),
        "log_loss": pc.log_loss("p", "y", weight="w"),
    }
    out = df.group_by("g").agg(**exprs)
    bad_row = out.filter(pl.col("g") == "bad").drop("g").row(0)
    good_row = out.filter(pl.col("g") == "good").drop("g").row(0)
    assert bad_row == (None,) * len(exprs)
    assert None not in good_row


def test_empty_and_all_null_input_give_null() -> None:
    empty = pl.DataFrame({"p": [], "y": []}, schema={"p": pl.Float64, "y": pl.Int64})
    all_null = pl.DataFrame(
        {"p": [None, 0.3], "y": [1, None]}, schema={"p": pl.Float64, "y": pl.Int64}
    )
    zero_weight = pl.DataFrame({"p": [0.3], "y": [1], "w": [0.0]})
    for frame in (empty, all_null):
        row = frame.select(
            a=pc.ece("p", "y"),
            b=pc.mce("p", "y"),
            c=pc.rmsce("p", "y"),
            d=pc.brier("p", "y"),
            e=pc.log_loss("p", "y"),
            f=pc.ece("p", "y", strategy="quantile"),
        ).row(0)
        assert row == (None,) * 6
    assert _value(zero_weight, pc.ece("p", "y", weight="w")) is None
    assert _value(zero_weight, pc.mce("p", "y", weight="w")) is None
    assert _value(zero_weight, pc.brier("p", "y", weight="w")) is None


def test_bad_norm_raises() -> None:
    with pytest.raises(ValueError, match="`norm` must be one of 'l1', 'l2', 'max', got 'l3'"):
        pc.ece("p", "y", norm="l3")
    with pytest.raises(ValueError, match="`norm`"):
        pl.col("p").calib.ece("y", norm="L1")


def test_typed_col_path() -> None:
    df = pl.DataFrame({"p": [0.2, 0.7, 0.9], "y": [0, 1, 1]})
    assert _value(df, pc.col("p").calib.ece("y")) == _value(df, pc.ece("p", "y"))
