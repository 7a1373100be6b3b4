"""Shared test setup: the numpy oracle on the path, hypothesis profiles, example data.

Also the one context fixture, :func:`frame_context` (eager, lazy in memory, lazy
streaming, parquet scan), and the one data factory, :func:`make_log`, with the pieces
other tests build on: :func:`sign_changing_labels` (the miscalibration every log has),
:func:`near_edges` (every bin edge and its neighbours), :func:`tempered_log` and
:func:`vectors` (probability vectors on a grid), and :class:`CountingSource` (a
LazyFrame that counts its reads).
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, settings
from polars.io.plugins import register_io_source

sys.path.insert(0, str(Path(__file__).parent))

# tests/data/ holds fixtures and the side-environment scripts that wrote them (they import
# peers the suite does not install): neither test modules nor doctest files.
collect_ignore_glob = ["data/*"]

# The default profile is derandomized: every run of the suite (CI's included) tries the same
# examples, so a landing never hinges on a lucky draw. Explore with
# `pytest --hypothesis-profile=thorough` (random, 1000 examples) and pin what it finds with
# `@example`.
settings.register_profile(
    "default",
    deadline=None,
    max_examples=60,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", deadline=None, max_examples=1000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")

HAS_PLOT = all(importlib.util.find_spec(m) for m in ("altair", "vl_convert"))
"""Whether the plot extra (Altair and vl-convert) is installed."""


def sign_changing_labels(rng: np.random.Generator, p: np.ndarray) -> np.ndarray:
    """Int64 outcomes drawn with rate ``p + 0.25 sin(2 pi p)`` (clipped to [0, 1]).

    Under-confident below 0.5 and over-confident above, so a binning bug cannot hide
    behind a one-sided gap.
    """
    rate = np.clip(p + 0.25 * np.sin(2 * math.pi * p), 0.0, 1.0)
    return (rng.random(len(p)) < rate).astype(np.int64)


def sign_changing_log(
    seed: int, n: int, *, decimals: int | None = 2, groups: int = 1
) -> pl.DataFrame:
    """Probabilities and outcomes whose miscalibration changes sign across [0, 1].

    The outcomes are :func:`sign_changing_labels`. With ``decimals`` the probabilities
    are rounded, putting many on bin edges.
    """
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    if decimals is not None:
        p = np.round(p, decimals)
    y = sign_changing_labels(rng, p)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, n),
            "p": p,
            "y": y,
            "w": rng.random(n) * 2.0,
        }
    )


def make_log(
    seed: int,
    n: int,
    *,
    decimals: int | None = 2,
    groups: int = 1,
    classes: int | None = None,
    nulls: float = 0.0,
    weights: bool = True,
    key_dtype: pl.DataType | type[pl.DataType] = pl.Int64,
) -> pl.DataFrame:
    """The test data: a log whose miscalibration changes sign across [0, 1].

    Columns ``g`` (group key of `key_dtype`, ``groups`` values), ``p``, ``y`` and,
    with `weights`, ``w`` in [0, 2): :func:`sign_changing_log`, whose rows these are
    (the same seed gives the same rows). With ``classes=K``, also ``probs``
    (``Array(Float64, K)``, each row summing to 1; with `decimals`, on the grid of
    ``10**-decimals``, many on bin edges) and ``cls`` (Int64 in ``0 .. K - 1``): the
    arg-max is right with probability ``c + 0.25 sin(2 pi t)`` where ``c`` is the
    confidence and ``t = (c - 1/K) / (1 - 1/K)``, so the model is under-confident at
    low confidence and over-confident at high. With `nulls`, that fraction of rows
    holds one null, in ``p``, ``y`` or ``w`` (also ``probs`` or ``cls`` with classes).
    """
    df = sign_changing_log(seed, n, decimals=decimals, groups=groups)
    # A second stream, so that the binary columns stay those of `sign_changing_log`.
    rng = np.random.default_rng([seed, 1])
    if classes is not None:
        probs, label = _class_probabilities(rng, n, classes, decimals)
        df = df.with_columns(
            probs=pl.Series(probs, dtype=pl.Array(pl.Float64, classes)),
            cls=pl.Series(label, dtype=pl.Int64),
        )
    if not weights:
        df = df.drop("w")
    if nulls:
        columns = ["p", "y", *(["w"] if weights else []), *(["probs", "cls"] if classes else [])]
        hit = rng.random(n) < nulls
        where = rng.integers(0, len(columns), n)
        df = df.with_columns(
            pl.when(pl.Series(~(hit & (where == j)))).then(pl.col(name)).alias(name)
            for j, name in enumerate(columns)
        )
    return df.with_columns(pl.col("g").cast(key_dtype))


def _class_probabilities(
    rng: np.random.Generator, n: int, classes: int, decimals: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Probability vectors (rows summing to 1) and labels, mis-calibrated as :func:`make_log`."""
    if classes < 2:
        msg = f"`classes` must be at least 2, got {classes}"
        raise ValueError(msg)
    logits = rng.normal(size=(n, classes)) * rng.uniform(0.2, 3.0, size=(n, 1))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    if decimals is not None:
        # Largest-remainder rounding onto the grid: the rounded rows still sum to 1.
        scale = 10**decimals
        scaled = probs * scale
        units = np.floor(scaled)
        short = (scale - units.sum(axis=1)).astype(np.int64)
        order = np.argsort(-(scaled - units), axis=1, kind="stable")
        rank = np.argsort(order, axis=1, kind="stable")
        units += rank < short[:, None]
        probs = units / scale
    confidence = probs.max(axis=1)
    predicted = probs.argmax(axis=1)
    t = (confidence - 1 / classes) / (1 - 1 / classes)
    accuracy = np.clip(confidence + 0.25 * np.sin(2 * math.pi * t), 0.0, 1.0)
    right = rng.random(n) < accuracy
    # A wrong label: another class, drawn uniformly.
    shift = rng.integers(1, classes, n)
    label = np.where(right, predicted, (predicted + shift) % classes)
    return probs, label.astype(np.int64)


def near_edges(n_bins: int, *, ulps: int = 1, seed: int = 0, most: int = 200) -> np.ndarray:
    """Every edge ``k / n_bins`` and its neighbours within `ulps` ulps, inside [0, 1].

    Sorted, without repeats. Above `most` edges, `most` of them drawn with `seed`.
    Two-decimal probabilities are the edges of ``n_bins=100``.
    """
    if n_bins + 1 <= most:
        ks = np.arange(n_bins + 1)
    else:
        ks = np.random.default_rng(seed).integers(0, n_bins + 1, most)
    edges = ks / n_bins  # correctly rounded, as the package's edges
    values, up, down = [edges], edges, edges
    for _ in range(ulps):
        up, down = np.nextafter(up, 2.0), np.nextafter(down, -1.0)
        values += [up, down]
    p = np.unique(np.concatenate(values))
    return p[(p >= 0.0) & (p <= 1.0)]


def tempered_log(
    seed: int,
    n: int,
    n_classes: int,
    *,
    temperature: float,
    resolution: int,
    tie_rate: float,
    groups: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Probability vectors on a ``1/resolution`` grid, and labels drawn from ``P**temperature``.

    Returns the vectors ``P`` (n × n_classes), the labels, weights in (0.01, 2.01) and
    group keys in ``0 .. groups - 1``. Labels come from the renormalised tempered
    vector: a temperature below 1 makes the truth flatter than the prediction
    (confident predictions over-confident, small probabilities under-confident), above
    1 the reverse, so the gap changes sign across [0, 1]. Some rows get their top two
    entries tied. The last entry is ``1 - sum(others)``, so vectors sum to 1 up to
    rounding.
    """
    rng = np.random.default_rng(seed)
    raw = rng.dirichlet(np.full(n_classes, rng.uniform(0.3, 2.0)), size=n)
    counts = rng.multinomial(resolution, raw)
    for i in np.flatnonzero(rng.random(n) < tie_rate):
        top = np.argsort(-counts[i], kind="stable")
        total = counts[i, top[0]] + counts[i, top[1]]
        counts[i, top[0]] = counts[i, top[1]] = total // 2
        counts[i, top[-1] if n_classes > 2 else top[0]] += total % 2
    P = counts / resolution
    P[:, -1] = np.clip(1.0 - P[:, :-1].sum(axis=1), 0.0, 1.0)
    truth = P**temperature
    truth /= truth.sum(axis=1, keepdims=True)
    y = (rng.random((n, 1)) > np.cumsum(truth, axis=1)).sum(axis=1).clip(0, n_classes - 1)
    return P, y, rng.random(n) * 2.0 + 0.01, rng.integers(0, groups, n)


def vectors(P: np.ndarray, dtype: str = "array") -> pl.Series:
    """The rows of `P` as a ``probs`` column: ``Array(Float64, K)``, or ``List`` with ``"list"``."""
    series = pl.Series("probs", P.tolist(), dtype=pl.List(pl.Float64))
    return series.cast(pl.Array(pl.Float64, P.shape[1])) if dtype == "array" else series


def streams(lf: pl.LazyFrame) -> bool:
    """Whether the streaming engine runs a group-by of `lf` as its own node, with no node
    holding its whole input (Polars' "in-memory engine fallback", ``in-memory-map``)."""
    graph = lf.show_graph(engine="streaming", plan_stage="physical", raw_output=True, show=False)
    assert isinstance(graph, str)
    return "in-memory-map" not in graph and 'label="group-by' in graph


class CountingSource:
    """A LazyFrame over `data` that counts how often the engine reads it."""

    def __init__(self, data: pl.DataFrame) -> None:
        self.data = data
        self.reads = 0
        self.predicates: list[pl.Expr | None] = []
        """The filter each read was given (None: every row was asked for)."""

    def frame(self) -> pl.LazyFrame:
        """Return a LazyFrame whose every scan adds one to :attr:`reads`."""

        def source(
            with_columns: list[str] | None,
            predicate: pl.Expr | None,
            n_rows: int | None,
            batch_size: int | None,
        ) -> Iterator[pl.DataFrame]:
            self.reads += 1
            self.predicates.append(predicate)
            out = self.data if with_columns is None else self.data.select(with_columns)
            yield out if predicate is None else out.filter(predicate)

        # Not marked pure: Polars may not deduplicate the source itself.
        return register_io_source(source, schema=self.data.schema)


@dataclass(frozen=True)
class FrameContext:
    """One data context: how a test's frame is given and its result collected.

    ``"eager"``: a DataFrame, results must be DataFrames; ``"lazy"``: a LazyFrame
    collected in memory; ``"streaming"``: a LazyFrame collected by the streaming
    engine; ``"scan"``: the frame written to parquet and scanned, collected by the
    streaming engine. Lazy contexts require lazy results: a LazyFrame method must
    return a plan.
    """

    name: str
    directory: Path

    @property
    def lazy(self) -> bool:
        return self.name != "eager"

    def frame(self, df: pl.DataFrame) -> pl.DataFrame | pl.LazyFrame:
        if self.name == "eager":
            return df
        if self.name == "scan":
            path = self.directory / f"frame_{next(_SCANS)}.parquet"
            df.write_parquet(path)
            return pl.scan_parquet(path)
        return df.lazy()

    def collect(self, result: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
        if self.name == "eager":
            assert isinstance(result, pl.DataFrame), f"eager gave {type(result).__name__}"
            return result
        assert isinstance(result, pl.LazyFrame), f"{self.name} gave {type(result).__name__}"
        if self.name == "lazy":
            return result.collect()
        return result.collect(engine="streaming")


_SCANS = itertools.count()


@pytest.fixture(params=["eager", "lazy", "streaming", "scan"])
def frame_context(request: pytest.FixtureRequest, tmp_path: Path) -> FrameContext:
    """Every data context a metric claims (narwhals' ``constructor`` fixture)."""
    return FrameContext(request.param, tmp_path)


@pytest.fixture
def example_log() -> pl.DataFrame:
    """The bundled example prediction log."""
    return pl.read_parquet(Path(__file__).parents[1] / "examples" / "data" / "predictions.parquet")
