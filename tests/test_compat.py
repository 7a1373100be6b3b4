"""`compat=`: each peer's bins, against numpy re-implementations checked bit for bit on peers."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import peers
import polars_calib as pc
from conftest import sign_changing_labels

PEER_ECE = {
    "sklearn": lambda p, y, b: peers.sklearn_calibration_curve_ece(y, p, n_bins=b),
    "netcal": lambda p, y, b: peers.netcal_ece(p, y, bins=b),
    "mapie": lambda p, y, b: peers.mapie_expected_calibration_error(y, p, num_bins=b),
    "torchmetrics": lambda p, y, b: peers.torchmetrics_binary_calibration_error(
        p.astype(np.float32), y, n_bins=b
    ),
}
# float64 sums in another order; torchmetrics accumulates in float32.
TOLERANCE = {"sklearn": 1e-14, "netcal": 1e-14, "mapie": 1e-14, "torchmetrics": 1e-6}


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(5, 200),
    n_bins=st.integers(2, 30),
    on_edges=st.booleans(),
    compat=st.sampled_from(sorted(PEER_ECE)),
)
@example(seed=0, n=50, n_bins=6, on_edges=True, compat="sklearn")
@example(seed=0, n=50, n_bins=10, on_edges=True, compat="netcal")
@example(seed=0, n=50, n_bins=10, on_edges=True, compat="mapie")
@example(seed=0, n=50, n_bins=23, on_edges=True, compat="torchmetrics")
def test_compat_reproduces_the_peer(
    seed: int, n: int, n_bins: int, on_edges: bool, compat: str
) -> None:
    rng = np.random.default_rng(seed)
    # Scores on edges k/B (and exact 0 and 1) are where the peers' edges differ from ours.
    p = rng.integers(0, n_bins + 1, n) / n_bins if on_edges else rng.random(n)
    y = sign_changing_labels(rng, p)
    df = pl.DataFrame({"p": p, "y": y})
    want = float(PEER_ECE[compat](p, y, n_bins))
    got = df.select(pc.ece("p", "y", n_bins=n_bins, compat=compat)).item()  # type: ignore[arg-type]
    assert got == pytest.approx(want, abs=TOLERANCE[compat], rel=0)
    frame = df.calib.summary("p", "y", n_bins=n_bins, compat=compat)["ece"].item()  # type: ignore[arg-type]
    assert frame == pytest.approx(got, abs=1e-14, rel=0)


def test_a_worked_example_where_the_default_and_scikit_learn_differ() -> None:
    # np.linspace(0, 1, 7)[5] is 0.8333333333333334 = 5/6 + 1 ulp: scikit-learn puts a
    # score of 5/6 in the bin below; the exact rule puts it in the bin (4/6, 5/6].
    df = pl.DataFrame({"p": [5 / 6, 5 / 6, 0.9], "y": [0, 0, 1]})
    exact = df.select(pc.ece("p", "y", n_bins=6)).item()
    sklearn = df.select(pc.ece("p", "y", n_bins=6, compat="sklearn")).item()
    assert sklearn == pytest.approx(
        peers.sklearn_calibration_curve_ece(df["y"].to_numpy(), df["p"].to_numpy(), n_bins=6),
        abs=1e-15,
    )
    assert exact != pytest.approx(sklearn, abs=1e-3)


def test_compat_in_multiclass_and_reliability() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.5, 0.5, 0.0], [0.2, 0.2, 0.6]])
    y = np.array([0, 2, 0, 2])
    df = pl.DataFrame({"probs": probs.tolist(), "y": y})
    got = df.select(pc.confidence_ece("probs", "y", n_bins=5, compat="torchmetrics")).item()
    want = peers.torchmetrics_multiclass_calibration_error(
        probs.astype(np.float32), y, num_classes=3, n_bins=5
    )
    assert got == pytest.approx(float(want), abs=1e-6)
    # MAPIE's top-label ECE is the unweighted mean over predicted classes.
    got = df.select(pc.top_label_ece("probs", "y", n_bins=5, compat="mapie")).item()
    want = peers.mapie_top_label_ece(y, probs, num_bins=5)
    assert got == pytest.approx(float(want), abs=1e-14)
    # The table carries the peer's bins: MAPIE's first bin holds the exact zeros.
    table = pl.DataFrame({"p": [0.0, 0.3], "y": [0, 1]}).calib.reliability(
        "p", "y", n_bins=5, compat="mapie"
    )
    assert table.select("lower", "upper", "count").row(0) == (0.0, 0.0, 1)
    assert table["upper"].to_list() == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_bad_compat_arguments() -> None:
    with pytest.raises(ValueError, match="`compat` must be one of"):
        pc.ece("p", "y", compat="pytorch")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="uniform bins"):
        pc.ece("p", "y", strategy="quantile", compat="sklearn")
