"""Canonical ECE with distances, median-variance bins and the SKCE (issue 14).

Every number is checked against a numpy reference written here from the
definitions (CalibrationErrors.jl's code, read for its rules: the cell of a vector,
the median split, the pair term of the tensor-product kernel), and against the
known-zero cases of CalibrationErrors.jl's tests.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import polars_calib as pc
from conftest import FrameContext, make_log
from polars_calib._table.median_variance import split_median_variance

# --------------------------------------------------------------------------
# References, from the definitions
# --------------------------------------------------------------------------


def exact_bin(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Right-closed uniform bins with the correctly rounded edges k / B, 0 in bin 0."""
    edges = np.array([k / n_bins for k in range(n_bins + 1)])
    return np.clip(np.searchsorted(edges, values, side="left") - 1, 0, n_bins - 1)


def julia_bin(values: np.ndarray, n_bins: int) -> np.ndarray:
    """CalibrationErrors.jl's ``binindex``: ``ceil(B p)`` (1-based), 0 in the first bin."""
    return np.where(values == 0, 0, np.ceil(n_bins * values) - 1).astype(int)


def distance_of(a: np.ndarray, b: np.ndarray, distance: str) -> float:
    if distance == "tv":
        return 0.5 * float(np.abs(a - b).sum())
    if distance == "cityblock":
        return float(np.abs(a - b).sum())
    return float(((a - b) ** 2).sum())


def canonical_reference(
    probs: np.ndarray,
    labels: np.ndarray,
    cells: np.ndarray,
    distance: str = "tv",
    weights: np.ndarray | None = None,
    average: str = "weighted",
) -> float:
    """sum_b (W_b / W) d(mean p, mean onehot) over the distinct rows of `cells`."""
    n, k = probs.shape
    w = np.ones(n) if weights is None else weights
    onehot = np.eye(k)[labels]
    groups: dict[tuple[float, ...], list[int]] = {}
    for i, cell in enumerate(np.atleast_2d(cells.T).T.tolist()):
        groups.setdefault(tuple(cell) if isinstance(cell, list) else (cell,), []).append(i)
    total, terms = 0.0, []
    for rows in groups.values():
        idx = np.array(rows)
        weight = w[idx].sum()
        if weight <= 0:
            continue
        mean_p = (w[idx, None] * probs[idx]).sum(0) / weight
        mean_y = (w[idx, None] * onehot[idx]).sum(0) / weight
        d = distance_of(mean_p, mean_y, distance)
        total += weight * d
        terms.append(d)
    return total / w.sum() if average == "weighted" else float(np.mean(terms))


def julia_median_variance(points: np.ndarray, min_size: int, max_bins: float) -> list[list[int]]:
    """A line-by-line reading of CalibrationErrors.jl's ``MedianVarianceBinning``.

    Variances by Welford's recursion; the median split by the partial sort of the
    indices and the cutoff of ``unsafe_median_split!``; ties in the queue to the
    bin queued first. Returns the bins as lists of row indices.
    """
    n, dims = points.shape

    def welford(idxs: list[int], d: int) -> float:
        mean, s = points[idxs[0], d], 0.0
        for i, index in enumerate(idxs[1:], start=2):
            value = points[index, d]
            new_mean = mean + (value - mean) / i
            s += (value - mean) * (value - new_mean)
            mean = new_mean
        return s / (len(idxs) - 1)

    def max_argmax(idxs: list[int]) -> tuple[float, int]:
        best, best_d = welford(idxs, 0), 0
        for d in range(1, dims):
            v = welford(idxs, d)
            if v > best:
                best, best_d = v, d
        return best, best_d

    def median_split(idxs: list[int], d: int) -> tuple[list[int], list[int]]:
        ordered = sorted(idxs, key=lambda i: points[i, d])
        m = len(ordered) // 2 + 1  # 1-based, as Julia
        if points[ordered[m - 2], d] < points[ordered[m - 1], d]:
            cutoff = m - 1
        else:
            pivot = points[ordered[m - 1], d]
            cutoff = sum(1 for i in ordered[: m - 1] if points[i, d] < pivot)
        return ordered[:cutoff], ordered[cutoff:]

    if n < 2 * min_size or max_bins == 1:
        return [list(range(n))]
    counter = 0
    var, d = max_argmax(list(range(n)))
    queue = [(-var, counter, list(range(n)), d)]
    bins: list[list[int]] = []
    nbins = 1
    while nbins < max_bins and queue:
        _, _, idxs, d = heapq.heappop(queue)
        below, above = median_split(idxs, d)
        if len(below) < min_size or len(above) < min_size:
            bins.append(idxs)
            continue
        for new in (below, above):
            if len(new) < 2 * min_size:
                bins.append(new)
            else:
                counter += 1
                var, d = max_argmax(new)
                heapq.heappush(queue, (-var, counter, new, d))
        nbins += 1
    bins.extend(item[2] for item in queue)
    return bins


def partition(bins: np.ndarray | list[list[int]]) -> set[frozenset[int]]:
    if isinstance(bins, np.ndarray):
        found: dict[int, set[int]] = {}
        for i, b in enumerate(bins.tolist()):
            found.setdefault(b, set()).add(i)
        return {frozenset(rows) for rows in found.values()}
    return {frozenset(rows) for rows in bins}


def skce_pairs(probs: np.ndarray, labels: np.ndarray, kernel: str, scale: float) -> np.ndarray:
    """h_ij = k_P(p_i, p_j) ((y_i == y_j) - p_i[y_j] - p_j[y_i] + <p_i, p_j>)."""
    dist = np.sqrt(((probs[:, None, :] - probs[None, :, :]) ** 2).sum(-1))
    k = np.exp(-dist / scale) if kernel == "exponential" else np.exp(-(dist**2) / (2 * scale**2))
    same = (labels[:, None] == labels[None, :]).astype(float)
    target = same - probs[np.arange(len(labels))[:, None], labels[None, :]]
    target = target - probs[np.arange(len(labels))[None, :], labels[:, None]]
    return k * (target + probs @ probs.T)


def skce_reference(
    probs: np.ndarray,
    labels: np.ndarray,
    estimator: str,
    kernel: str = "exponential",
    scale: float = 1.0,
    block_size: int = 2,
) -> float:
    if estimator == "block":
        n_blocks = len(labels) // block_size
        return float(
            np.mean(
                [
                    skce_reference(
                        probs[b * block_size : (b + 1) * block_size],
                        labels[b * block_size : (b + 1) * block_size],
                        "unbiased",
                        kernel,
                        scale,
                    )
                    for b in range(n_blocks)
                ]
            )
        )
    h = skce_pairs(probs, labels, kernel, scale)
    n = len(labels)
    if estimator == "biased":
        return float(h.sum() / n**2)
    return float((h.sum() - np.trace(h)) / (n * (n - 1)))


def vectors_of(df: pl.DataFrame, column: str = "probs") -> np.ndarray:
    return np.array(df[column].to_list(), dtype=float)


LOG = make_log(14, 400, classes=3, decimals=2, groups=3)

# --------------------------------------------------------------------------
# Canonical ECE
# --------------------------------------------------------------------------


@pytest.mark.parametrize("distance", ["tv", "cityblock", "sqeuclidean"])
@pytest.mark.parametrize("average", ["weighted", "bins"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_bins", [1, 3, 10])
def test_canonical_matches_reference(
    distance: str, average: str, weighted: bool, n_bins: int
) -> None:
    probs, labels = vectors_of(LOG), LOG["cls"].to_numpy()
    weights = LOG["w"].to_numpy() if weighted else None
    got = LOG.select(
        pc.canonical_ece(
            "probs",
            "cls",
            n_bins=n_bins,
            distance=distance,  # type: ignore[arg-type]
            average=average,
            weight="w" if weighted else None,
        )  # type: ignore[arg-type]
    ).item()
    cells = exact_bin(probs, n_bins)
    want = canonical_reference(probs, labels, cells, distance, weights, average)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    classes=st.integers(2, 6),
    n_bins=st.integers(1, 12),
    decimals=st.sampled_from([1, 2, None]),
)
def test_canonical_property(
    seed: int, n: int, classes: int, n_bins: int, decimals: int | None
) -> None:
    df = make_log(seed, n, classes=classes, decimals=decimals, weights=False)
    probs, labels = vectors_of(df), df["cls"].to_numpy()
    got = df.select(pc.canonical_ece("probs", "cls", n_bins=n_bins, distance="cityblock")).item()
    want = canonical_reference(probs, labels, exact_bin(probs, n_bins), "cityblock")
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_many_classes_only_non_empty_cells() -> None:
    # K = 1000 with 10 bins would be 10**1000 cells: only the rows' cells exist.
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(1000, 0.05), 50)
    labels = rng.integers(0, 1000, 50)
    df = pl.DataFrame({"probs": probs.tolist(), "y": labels})
    got = df.select(pc.canonical_ece("probs", "y", n_bins=10)).item()
    want = canonical_reference(probs, labels, exact_bin(probs, 10))
    assert got == pytest.approx(want, rel=1e-12)


def test_edge_rule_on_rounded_vectors() -> None:
    # 0.07 * 100 = 7.000000000000001: ceil(B p) puts 0.07 above its edge, the exact rule
    # in (0.06, 0.07]. The first two rows share the exact cell (6, 28, 64), not Julia's
    # ((7, 28, 64) and (6, 28, 64)), so the ECEs differ.
    probs = np.array([[0.07, 0.285, 0.645], [0.065, 0.29, 0.645], [0.2, 0.5, 0.3]])
    labels = np.array([1, 0, 2])
    assert (exact_bin(probs[0], 100) == exact_bin(probs[1], 100)).all()
    assert (julia_bin(probs[0], 100) != julia_bin(probs[1], 100)).any()
    df = pl.DataFrame({"probs": probs.tolist(), "y": labels})
    got = df.select(pc.canonical_ece("probs", "y", n_bins=100)).item()
    exact = canonical_reference(probs, labels, exact_bin(probs, 100))
    julia = canonical_reference(probs, labels, julia_bin(probs, 100))
    assert got == pytest.approx(exact, rel=1e-12)
    assert exact != pytest.approx(julia)
    # On the whole test log (two decimals: many entries on edges) too.
    probs = vectors_of(LOG)
    got = LOG.select(pc.canonical_ece("probs", "cls", n_bins=10)).item()
    assert got == pytest.approx(
        canonical_reference(probs, LOG["cls"].to_numpy(), exact_bin(probs, 10)), rel=1e-12
    )


@pytest.mark.parametrize("distance", ["tv", "cityblock", "sqeuclidean"])
def test_julia_known_zero_cases(distance: str) -> None:
    # CalibrationErrors.jl's tests, 10 uniform bins; its classes are 1-based (targets
    # [2, 1] are our classes [1, 0]).
    cases = [
        ([[0.0, 1.0], [1.0, 0.0]], [1, 0]),
        ([[0.0, 1.0], [0.5, 0.5], [0.5, 0.5], [1.0, 0.0]], [1, 1, 0, 0]),
    ]
    for probs, labels in cases:
        df = pl.DataFrame({"probs": probs, "y": labels})
        got = df.select(pc.canonical_ece("probs", "y", n_bins=10, distance=distance)).item()  # type: ignore[arg-type]
        assert got == 0.0
    for p, y in (([0.0, 1.0], [False, True]), ([0.0, 0.5, 0.5, 1.0], [False, False, True, True])):
        df = pl.DataFrame({"p": p, "y": y})
        assert df.select(pc.ece("p", "y", n_bins=10)).item() == 0.0
        assert df.select(pc.ece("p", "y", n_bins=10, distance=distance)).item() == 0.0  # type: ignore[arg-type]


def test_array_and_list_agree() -> None:
    as_list = LOG.with_columns(pl.col("probs").cast(pl.List(pl.Float64)))
    expr = pc.canonical_ece("probs", "cls", n_bins=4, weight="w")
    assert LOG.select(expr).item() == pytest.approx(as_list.select(expr).item(), rel=1e-14)
    built = LOG.with_columns(pl.col("probs").arr.to_struct().struct.unnest())
    vector = pc.prob_vector("field_0", "field_1", "field_2")
    got = built.select(pc.canonical_ece(vector, "cls", n_bins=4, weight="w")).item()
    assert got == pytest.approx(LOG.select(expr).item(), rel=1e-14)


def test_data_policy() -> None:
    df = pl.DataFrame(
        {
            "probs": [[0.2, 0.8], [0.6, 0.4], None, [0.5, 0.5]],
            "y": [1, 0, 1, None],
            "g": [0, 0, 0, 1],
        }
    )
    got = df.group_by("g", maintain_order=True).agg(pc.canonical_ece("probs", "y", n_bins=2))
    # Group 0: two used rows in two cells; group 1: no used row.
    assert got["probs"].to_list() == [pytest.approx(0.3), None]
    bad = df.with_columns(
        probs=pl.when(pl.col("g") == 1).then(pl.lit([0.7, 0.7])).otherwise("probs")
    )
    bad = bad.with_columns(y=pl.col("y").fill_null(0))
    got = bad.group_by("g", maintain_order=True).agg(pc.canonical_ece("probs", "y"))
    assert got["probs"][1] is None  # a sum off 1 makes the group null
    ragged = pl.DataFrame({"probs": [[0.2, 0.8], [0.2, 0.3, 0.5]], "y": [1, 0]})
    assert ragged.select(pc.canonical_ece("probs", "y")).item() is None


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="distance"):
        pc.canonical_ece("probs", "y", distance="euclidean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="average"):
        pc.canonical_ece("probs", "y", average="micro")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="median_variance_bins"):
        pc.canonical_ece("probs", "y", strategy="median_variance")
    with pytest.raises(ValueError, match="uniform"):
        pc.canonical_ece("probs", "y", strategy="quantile")
    with pytest.raises(ValueError, match="distance"):
        pc.ece("p", "y", distance="l2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="norm"):
        pc.ece("p", "y", distance="tv", norm="max")
    with pytest.raises(ValueError, match="median_variance_bins"):
        pc.ece("p", "y", strategy="median_variance")
    with pytest.raises(TypeError, match="n_bins"):
        pc.canonical_ece("probs", "y", n_bins=2.0)  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Binary data as [1 - p, p]
# --------------------------------------------------------------------------


def test_binary_identities_off_edges() -> None:
    # No p on an edge of 10 bins (nor 1 - p): TV is the classic ECE, cityblock twice
    # it, the squared Euclidean distance twice the squared RMSCE.
    df = make_log(3, 500, decimals=None)
    assert df.select(((pl.col("p") * 10) % 1 == 0).any()).item() is False
    for weight in (None, "w"):
        classic = df.select(pc.ece("p", "y", n_bins=10, weight=weight)).item()
        rmsce = df.select(pc.rmsce("p", "y", n_bins=10, weight=weight)).item()
        tv = df.select(pc.ece("p", "y", n_bins=10, weight=weight, distance="tv")).item()
        city = df.select(pc.ece("p", "y", n_bins=10, weight=weight, distance="cityblock")).item()
        sq = df.select(pc.ece("p", "y", n_bins=10, weight=weight, distance="sqeuclidean")).item()
        assert tv == pytest.approx(classic, rel=1e-12)
        assert city == pytest.approx(2 * classic, rel=1e-12)
        assert sq == pytest.approx(2 * rmsce**2, rel=1e-12)


def test_binary_on_edges_splits_cells() -> None:
    # p = 0.3 is an edge: [1 - p, p] = [0.7, 0.3] sits in cell (6, 2) while p = 0.25
    # is in (7, 2): binning both components splits the classic bin (0.2, 0.3].
    df = make_log(4, 500, decimals=1)
    p, y = df["p"].to_numpy(), df["y"].to_numpy()
    probs = np.column_stack([1.0 - p, p])
    cells = exact_bin(probs, 10)
    want = canonical_reference(probs, y, cells, "tv")
    got = df.select(pc.ece("p", "y", n_bins=10, distance="tv")).item()
    assert got == pytest.approx(want, rel=1e-12)
    split = pl.DataFrame({"p": [0.3, 0.25], "y": [1, 0]})
    assert split.select(pc.ece("p", "y", n_bins=10)).item() == pytest.approx(0.225)
    # Each row alone in its cell: |0.3 - 1| and |0.25 - 0|, averaged.
    assert split.select(pc.ece("p", "y", n_bins=10, distance="tv")).item() == pytest.approx(0.475)


# --------------------------------------------------------------------------
# Median-variance bins
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("min_size", "max_bins"), [(1, 7), (3, None), (5, 4), (10, None), (2, 1)])
def test_splitter_is_julia(seed: int, min_size: int, max_bins: int | None) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 150))
    points = rng.dirichlet(np.ones(3), n)
    if seed % 2:
        points = np.round(points, 1)  # ties at the medians
    limit = math.inf if max_bins is None else max_bins
    want = partition(julia_median_variance(points, min_size, limit))
    got = split_median_variance(points, min_size, max_bins)
    assert partition(got) == want
    if max_bins is not None:
        assert len(want) <= max_bins
    if n >= min_size:
        assert min(len(rows) for rows in want) >= min_size


def test_split_below_median_goes_left() -> None:
    # Median 0.5 (upper middle value), ties sent right: [0.1, 0.2] | [0.5, 0.5, 0.5, 0.9].
    points = np.array([0.5, 0.1, 0.5, 0.9, 0.2, 0.5])
    assert partition(split_median_variance(points, 2)) == {
        frozenset({1, 4}),
        frozenset({0, 2, 3, 5}),
    }


def test_median_variance_bins_per_group(frame_context: FrameContext) -> None:
    df = LOG.with_columns(pl.col("probs").cast(pl.List(pl.Float64)))
    result = frame_context.collect(
        pc.median_variance_bins(
            frame_context.frame(df), "probs", "cls", by="g", min_size=8, max_bins=12
        )
    )
    assert result.columns == [*df.columns, "bin"]
    assert result.drop("bin").equals(df)
    for (g,), part in result.group_by("g"):
        want = partition(julia_median_variance(vectors_of(part), 8, 12))
        assert partition(part["bin"].to_numpy()) == want, g
    binary = frame_context.collect(
        pc.median_variance_bins(frame_context.frame(df), "p", "y", by="g", min_size=10)
    )
    for (g,), part in binary.group_by("g"):
        points = part["p"].to_numpy()[:, None]
        assert partition(part["bin"].to_numpy()) == partition(
            julia_median_variance(points, 10, math.inf)
        ), g
        # Binary bins are intervals, numbered from the lowest probabilities up.
        ranges = part.group_by("bin").agg(lo=pl.col("p").min(), hi=pl.col("p").max()).sort("bin")
        assert (ranges["hi"].to_numpy()[:-1] < ranges["lo"].to_numpy()[1:]).all()


def test_metrics_over_median_variance_bins() -> None:
    binned = pc.median_variance_bins(LOG, "probs", "cls", by="g", min_size=10)
    got = binned.group_by("g").agg(
        pc.canonical_ece("probs", "cls", bins="bin", distance="sqeuclidean").alias("canon"),
        pc.canonical_ece("probs", "cls", bins="bin", average="bins").alias("mean"),
    )
    for row in got.iter_rows(named=True):
        part = binned.filter(pl.col("g") == row["g"])
        probs, labels, cells = vectors_of(part), part["cls"].to_numpy(), part["bin"].to_numpy()
        assert row["canon"] == pytest.approx(
            canonical_reference(probs, labels, cells, "sqeuclidean"), rel=1e-12
        )
        assert row["mean"] == pytest.approx(
            canonical_reference(probs, labels, cells, "tv", average="bins"), rel=1e-12
        )
    binary = pc.median_variance_bins(LOG, "p", "y", min_size=20)
    classic = binary.select(pc.ece("p", "y", bins="bin", weight="w")).item()
    p = binary["p"].to_numpy()
    want = canonical_reference(
        np.column_stack([1 - p, p]),
        binary["y"].to_numpy(),
        binary["bin"].to_numpy(),
        weights=binary["w"].to_numpy(),
    )
    assert classic == pytest.approx(want, rel=1e-12)


def test_median_variance_bad_data_and_parameters() -> None:
    with pytest.raises(ValueError, match="min_size"):
        pc.median_variance_bins(LOG, "p", "y", min_size=0)
    with pytest.raises(ValueError, match="max_bins"):
        pc.median_variance_bins(LOG, "p", "y", max_bins=0)
    with pytest.raises(TypeError, match="min_size"):
        pc.median_variance_bins(LOG, "p", "y", min_size=2.5)  # type: ignore[arg-type]
    bad = LOG.with_columns(p=pl.when(pl.int_range(pl.len()) == 3).then(1.5).otherwise("p"))
    with pytest.raises(pc.CalibrationDataError, match="outside"):
        pc.median_variance_bins(bad, "p", "y")
    lazy = pc.median_variance_bins(bad.lazy(), "p", "y", min_size=5)
    assert isinstance(lazy, pl.LazyFrame)
    out = lazy.collect()
    assert out["bin"][3] is None
    assert out.select(pc.ece("p", "y", bins="bin")).item() is None


# --------------------------------------------------------------------------
# SKCE
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["exponential", "gaussian"])
@pytest.mark.parametrize(
    ("estimator", "block_size"), [("unbiased", 2), ("biased", 2), ("block", 2), ("block", 5)]
)
def test_skce_matches_reference(kernel: str, estimator: str, block_size: int) -> None:
    got = LOG.group_by("g").agg(
        pc.skce(
            "probs",
            "cls",
            kernel=kernel,
            length_scale=0.6,
            estimator=estimator,  # type: ignore[arg-type]
            block_size=block_size,
        )
    )
    for g, value in got.iter_rows():
        part = LOG.filter(pl.col("g") == g)
        want = skce_reference(
            vectors_of(part), part["cls"].to_numpy(), estimator, kernel, 0.6, block_size
        )
        assert value == pytest.approx(want, rel=1e-10, abs=1e-14)


def test_skce_binary_matches_julia_scalar_form() -> None:
    # Julia's scalar form: h = k(|p - p'|) * 2 (y - p)(y' - p'); [1 - p, p] has
    # distance sqrt(2) |p - p'|, so the length scale is sqrt(2) times larger.
    df = make_log(5, 80)
    p, y = df["p"].to_numpy(), df["y"].to_numpy()
    h = np.exp(-np.abs(p[:, None] - p[None, :]) / 0.5) * 2 * np.outer(y - p, y - p)
    want = (h.sum() - np.trace(h)) / (len(p) * (len(p) - 1))
    got = df.select(
        pc.skce(pc.prob_vector(1 - pl.col("p"), "p"), "y", length_scale=0.5 * math.sqrt(2))
    ).item()
    assert got == pytest.approx(want, rel=1e-10)


def test_skce_unbiased_on_calibrated_data() -> None:
    # Labels drawn from the predictions: the SKCE is 0, and the U-statistic's mean over
    # seeds is near 0 (the V-statistic's is not: it is positive).
    rng = np.random.default_rng(7)
    seeds, n = 60, 80
    probs = rng.dirichlet(np.full(3, 0.7), seeds * n)
    labels = (rng.random(seeds * n)[:, None] > probs.cumsum(1)).sum(1)
    df = pl.DataFrame(
        {"seed": np.repeat(np.arange(seeds), n), "probs": probs.tolist(), "y": labels}
    )
    per_seed = df.group_by("seed").agg(
        u=pc.skce("probs", "y"),
        v=pc.skce("probs", "y", estimator="biased"),
        block=pc.skce("probs", "y", estimator="block", block_size=4),
    )
    for column in ("u", "block"):
        values = per_seed[column].to_numpy()
        assert abs(values.mean()) < 4 * values.std(ddof=1) / math.sqrt(seeds), column
    v = per_seed["v"].to_numpy()
    assert v.mean() > 4 * v.std(ddof=1) / math.sqrt(seeds)


def test_skce_policy_and_parameters() -> None:
    with pytest.raises(ValueError, match="kernel"):
        pc.skce("probs", "y", kernel="laplace")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="estimator"):
        pc.skce("probs", "y", estimator="linear")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="block_size"):
        pc.skce("probs", "y", estimator="block", block_size=1)
    with pytest.raises(ValueError, match="length_scale"):
        pc.skce("probs", "y", length_scale=0.0)
    too_big = pl.DataFrame({"probs": [[0.5, 0.5]] * 2001, "y": [0] * 2001})
    with pytest.raises(pl.exceptions.InvalidOperationError, match="estimator='block'"):
        too_big.select(pc.skce("probs", "y"))
    # Every pair: k = 1 and <g, g> = 0.5**2 + 0.5**2.
    assert too_big.select(pc.skce("probs", "y", estimator="block")).item() == pytest.approx(0.5)
    df = pl.DataFrame({"probs": [[0.2, 0.8], None, [0.6, 0.4], [0.5, 0.5]], "y": [1, 0, 0, 1]})
    # The null row is skipped: the blocks are rows (0, 2) and the rest is dropped.
    got = df.select(pc.skce("probs", "y", estimator="block")).item()
    want = skce_reference(np.array([[0.2, 0.8], [0.6, 0.4]]), np.array([1, 0]), "unbiased")
    assert got == pytest.approx(want)
    bad = df.with_columns(y=pl.lit(5))
    assert bad.select(pc.skce("probs", "y")).item() is None
    assert (
        pl.DataFrame({"probs": [[0.2, 0.8]], "y": [1]}).select(pc.skce("probs", "y")).item() is None
    )


# --------------------------------------------------------------------------
# Contexts
# --------------------------------------------------------------------------

FAMILY = {
    "canonical": pc.canonical_ece("probs", "cls", n_bins=4, weight="w"),
    "canonical_sq": pl.col("probs").calib.canonical_ece("cls", n_bins=3, distance="sqeuclidean"),
    "binary_tv": pl.col("p").calib.ece("y", n_bins=10, distance="tv"),
    "skce_block": pl.col("probs").calib.skce("cls", estimator="block", block_size=3),
    "skce_u": pc.skce("probs", "cls", kernel="gaussian"),
}


@pytest.mark.parametrize("query", ["select", "group_by", "over"])
def test_contexts(frame_context: FrameContext, query: str) -> None:
    df = LOG.with_columns(pl.col("g").cast(pl.String))
    exprs = [expr.alias(name) for name, expr in FAMILY.items()]
    eager = df.group_by("g").agg(exprs).sort("g")
    frame = frame_context.frame(df)
    if query == "select":
        result = frame_context.collect(frame.filter(pl.col("g") == "0").select(exprs))
        expected = eager.filter(pl.col("g") == "0").drop("g")
    elif query == "group_by":
        result = frame_context.collect(frame.group_by("g").agg(exprs).sort("g"))
        expected = eager
    else:
        over = frame.select("g", *(e.over("g") for e in exprs)).unique().sort("g")
        result, expected = frame_context.collect(over), eager
    for name in FAMILY:
        assert result[name].to_list() == pytest.approx(expected[name].to_list(), rel=1e-12), name


# --------------------------------------------------------------------------
# Median-variance bins in the frame functions (binary data)
# --------------------------------------------------------------------------


def test_frame_functions_with_median_variance(frame_context: FrameContext) -> None:
    df = LOG.drop("probs")
    options = {
        "by": "g",
        "strategy": "median_variance",
        "min_size": 25,
        "max_bins": 6,
        "weight": "w",
    }
    summary = frame_context.collect(pc.summary(frame_context.frame(df), "p", "y", **options))
    table = frame_context.collect(pc.reliability(frame_context.frame(df), "p", "y", **options))
    binned = pc.median_variance_bins(df, "p", "y", by="g", min_size=25, max_bins=6, weight="w")
    expected = (
        binned.group_by("g")
        .agg(ece=pc.ece("p", "y", bins="bin", weight="w"), brier=pc.brier("p", "y", weight="w"))
        .sort("g")
    )
    assert summary["ece"].to_list() == pytest.approx(expected["ece"].to_list(), rel=1e-12)
    assert summary["brier"].to_list() == pytest.approx(expected["brier"].to_list(), rel=1e-12)
    ranges = (
        binned.group_by("g", "bin")
        .agg(count=pl.len(), lower=pl.col("p").min(), upper=pl.col("p").max())
        .sort("g", "bin")
    )
    assert table.select("g", "bin", "count", "lower", "upper").equals(
        ranges.select("g", pl.col("bin"), pl.col("count").cast(pl.Int64), "lower", "upper")
    )
    assert table.group_by("g").agg(pl.len())["len"].max() <= 6


def test_median_variance_tables_do_not_merge() -> None:
    halves = [LOG[:200], LOG[200:]]
    stats = pl.concat(
        [pc.bin_statistics(h, "p", "y", strategy="median_variance", min_size=20) for h in halves]
    )
    with pytest.raises(pc.CalibrationDataError, match="cannot be merged"):
        pc.metrics_from_statistics(stats)
    assert pc.metrics_from_statistics(stats.lazy()).collect()["ece"].to_list() == [None]
    with pytest.raises(ValueError, match="binary data"):
        pc.summary(LOG, "probs", "cls", strategy="median_variance")
    with pytest.raises(ValueError, match="min_size"):
        pc.reliability(LOG, "p", "y", strategy="median_variance", min_size=0)
    lazy = pc.summary(LOG.lazy(), "p", "y", strategy="median_variance")
    assert isinstance(lazy, pl.LazyFrame)


def test_no_unstable_api() -> None:
    import warnings

    lists = LOG.with_columns(pl.col("probs").cast(pl.List(pl.Float64)))
    with pl.Config(warn_unstable=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        lists.group_by("g").agg(
            pc.canonical_ece("probs", "cls", n_bins=3),
            pc.skce("probs", "cls").alias("u"),
            pc.skce("probs", "cls", estimator="block").alias("b"),
            pc.ece("p", "y", distance="sqeuclidean").alias("e"),
        )
        for data in (lists, lists.lazy()):
            for result in (
                pc.median_variance_bins(data, "probs", "cls", by="g"),
                pc.summary(data, "p", "y", by="g", strategy="median_variance"),
                pc.reliability(data, "p", "y", strategy="median_variance"),
            ):
                if isinstance(result, pl.LazyFrame):
                    result.collect()


def test_frame_namespace_and_cli() -> None:
    from polars_calib.cli import main

    direct = pc.median_variance_bins(LOG, "p", "y", by="g", min_size=15)
    assert LOG.calib.median_variance_bins("p", "y", by="g", min_size=15).equals(direct)
    lazy = LOG.lazy().calib.median_variance_bins("p", "y", by="g", min_size=15)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(direct)
    # The command line offers the strategies it can run.
    assert main(["report", "x.parquet", "--prob", "p", "--strategy", "median_variance"]) == 2


def test_windows(frame_context: FrameContext) -> None:
    from datetime import datetime, timedelta

    start = datetime(2024, 1, 1)
    df = LOG.head(150).with_columns(ts=pl.Series([start + timedelta(hours=i) for i in range(150)]))
    exprs = [expr.alias(name) for name, expr in FAMILY.items()]
    frame = frame_context.frame(df)
    dynamic = frame_context.collect(frame.group_by_dynamic("ts", every="1d").agg(exprs))
    rolling = frame_context.collect(frame.rolling("ts", period="12h").agg(exprs))
    for day in dynamic.iter_rows(named=True):
        expected = df.filter(pl.col("ts").dt.truncate("1d") == day["ts"]).select(exprs)
        for name in FAMILY:
            assert day[name] == pytest.approx(expected[name].item(), rel=1e-12), name
    last = df.tail(12).select(exprs)
    for name in FAMILY:
        assert rolling[name][-1] == pytest.approx(last[name].item(), rel=1e-12), name


def test_median_variance_groups_without_used_rows() -> None:
    df = pl.DataFrame(
        {
            "g": [0, 0, 0, 1, 1],
            "probs": [[0.2, 0.8], [0.6, 0.4], [0.5, 0.5], None, [0.3, 0.7]],
            "y": [1, 0, 1, 0, None],
        }
    )
    out = pc.median_variance_bins(df, "probs", "y", by="g", min_size=1)
    assert out["bin"].to_list()[3:] == [None, None]
    assert sorted(out["bin"].to_list()[:3]) == [0, 1, 2]
    table = pc.summary(
        df.with_columns(p=pl.col("probs").list.get(1, null_on_oob=True)),
        "p",
        "y",
        by="g",
        strategy="median_variance",
        min_size=1,
    )
    assert table["count"].to_list() == [3, 0]
    assert table["ece"][1] is None


# pycalib 0.1.0.dev6 (classifier-calibration/PyCalib) ``pycalib.metrics.full_ECE(y, probs,
# bins=B, power=q)``: the canonical ECE with sum_k |.|**q, left-closed bins at
# np.linspace(0, 1, B + 1) and a bin of its own for p == 1.0. Its outputs on this log
# (continuous probabilities: no 1.0, no entry on an edge), pinned: pycalib needs
# statsmodels and matplotlib, too heavy for the test extra.
PYCALIB_FULL_ECE = {
    2: (0.1590089504761315, 0.010560201575767585),
    5: (0.5116553932376191, 0.1258910667092838),
    15: (0.9808294457696267, 0.4745343379704493),
}


@pytest.mark.parametrize("n_bins", sorted(PYCALIB_FULL_ECE))
def test_pycalib_full_ece(n_bins: int) -> None:
    df = make_log(21, 300, classes=4, decimals=None, weights=False)
    city, squared = PYCALIB_FULL_ECE[n_bins]
    got = df.select(
        city=pc.canonical_ece("probs", "cls", n_bins=n_bins, closed="left", distance="cityblock"),
        sq=pc.canonical_ece("probs", "cls", n_bins=n_bins, closed="left", distance="sqeuclidean"),
    )
    assert got["city"].item() == pytest.approx(city, rel=1e-12)
    assert got["sq"].item() == pytest.approx(squared, rel=1e-12)
