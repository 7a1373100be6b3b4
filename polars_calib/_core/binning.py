"""The one bin rule every metric and table uses.

Equal-width (``"uniform"``) bins have edges ``k / n_bins``, each the correctly rounded
float of the exact fraction, so a probability read from a log as ``0.7`` (the double
nearest 7/10) *is* the edge 7/10. Right-closed bins (the default, as scikit-learn's
``calibration_curve``) are ``[0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]``; left-closed
bins are ``[0, 1/B), ..., [(B-1)/B, 1]`` with 1.0 in the last bin.

The bin index is found without searching, with one comparison against one exact
edge: right-closed, the bin of ``p`` is ``k = floor(p * B)`` or ``k - 1``, and it is
``k - 1`` exactly when ``p <= k / B``; left-closed, it is ``c = ceil(p * B)`` or
``c - 1``, and ``c - 1`` exactly when ``p < c / B`` (see :meth:`Binning.value`).
Neither ``floor``/``ceil`` of ``p * B`` alone (``0.07 * 100 == 7.000000000000001``)
nor ``np.linspace`` edges (``0.6000000000000001``) get every edge right.

Every encoding of the rule lives here, so that nothing else compares a probability with
an edge:

* :meth:`Binning.value` / :meth:`Binning.index`: the bin of each row (a Float64 holding
  the integer, or Int32), for a window or a group-by over ``(keys, bin)``;
* :meth:`Binning.cell_words`: the cell of a probability vector on the K-dimensional
  uniform grid (each component's :meth:`Binning.value`), packed into exact integer
  words ``sum_k b_k B**k`` (the canonical statistics table, :mod:`polars_calib._table`);
* :meth:`Binning.within`: whether a value lies in a run of uniform bins, one or two
  comparisons (the union of their masks: a level of a calibration curve);
* :meth:`Binning.masks`: one boolean per uniform bin, for the masked sums of the
  expression path: up to :data:`MAX_MASKED_BINS` bins, an expression sums each bin as
  ``when(mask).then(x).sum()`` (no index, no window: it streams and costs a comparison
  per bin and row); above that, or with quantile bins, it sums over a window keyed by
  the index, whose cost does not grow with the number of bins;
* :func:`uniform_edges` and :meth:`Binning.grid`: the exact edges, as floats and as a
  frame of ``bin, lower, upper``;
* :func:`quantile_edges`: the quantile edges of a group, as expressions;
* :func:`range_edges` and :func:`edge_index`: equal-width edges between two
  expressions (a group's smallest and largest value, or a fixed range), computed as
  ``np.linspace`` computes them, and the bin of a value among any such edges (the
  σ-bins of :mod:`polars_calib._table.variance` and its expressions);
* :class:`GroupedEdges` and :func:`edge_bins`: explicit edges fitted per group (a
  calibrator's quantile bins, its isotonic thresholds), one exact search per row;
* :func:`linear_grid`: the two neighbouring points of a fine grid ``k / G`` and the
  linear-interpolation weight of the upper one, as relplot spreads each row over
  its grid before smoothing (:mod:`polars_calib._smooth`).

Equal-mass (``"quantile"``) bins have edges at the linear-interpolation quantiles
``k / B`` of the probabilities in the current group (numpy's default quantile, as
``calibration_curve(strategy="quantile")``). Tied quantiles give empty bins.

Median-variance bins (``strategy="median_variance"``) are no rule of edges but a
recursive split of a group's rows: :mod:`polars_calib._table.median_variance` computes them
per group, and metrics read them as a bin column.
"""

from __future__ import annotations

import functools
import operator
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

import numpy as np
import polars as pl

from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import (
    CLOSED,
    MAX_EDGE_BINS,
    PEERS,
    STRATEGIES,
    Closed,
    Compat,
    Strategy,
    check_choice,
    check_n_bins,
)

__all__ = [
    "MAX_MASKED_BINS",
    "Binning",
    "GroupedEdges",
    "bin_index",
    "binning",
    "cell_width",
    "edge_bins",
    "edge_index",
    "linear_grid",
    "linspace",
    "quantile_edges",
    "range_edges",
    "torch_linspace32",
    "uniform_edges",
]


MAX_MASKED_BINS = 40
"""Up to this many uniform bins, expressions sum each bin through its mask."""


@dataclass(frozen=True)
class Binning:
    """A checked binning rule: number of bins, strategy and closure.

    Raises ``TypeError`` or ``ValueError`` naming the parameter when one is wrong.
    """

    n_bins: int = 15
    strategy: Strategy = "uniform"
    closed: Closed = "right"
    inner: tuple[float, ...] | None = None
    """A peer's inner edges (see :func:`binning`): bin ``k`` of ``p`` is the number of
    inner edges below ``p`` (``closed="right"``) or at most ``p`` (``"left"``)."""
    float32: bool = False
    """Compare float32 probabilities with float32 edges (torchmetrics)."""
    clip: bool = False
    """Clip probabilities to ``[eps, 1 - eps]`` before anything (netcal; done by
    :meth:`polars_calib._core.problem.Problem.seen_by`)."""

    def __post_init__(self) -> None:
        check_n_bins(self.n_bins)
        check_choice("strategy", self.strategy, STRATEGIES)
        if self.strategy == "quantile":
            _check_edge_bins(self.n_bins, "strategy='quantile'")
        if self.strategy == "median_variance":
            # Not a rule of edges: a recursive split of a group's rows (see
            # polars_calib.median_variance), which frame functions compute per group.
            msg = (
                "strategy='median_variance' splits a group's rows recursively and is not "
                "an aggregating expression: bin the rows with `pc.median_variance_bins` "
                "and pass the bin column to `pc.ece` or `pc.canonical_ece` as `bins=`, "
                "or use `summary` / `reliability` (binary data)"
            )
            raise ValueError(msg)
        check_choice("closed", self.closed, CLOSED)
        if self.inner is not None and len(self.inner) != self.n_bins - 1:
            msg = (
                f"{len(self.inner)} inner edges make {len(self.inner) + 1} bins, not {self.n_bins}"
            )
            raise ValueError(msg)

    @property
    def masked(self) -> bool:
        """Whether expressions sum each bin through :meth:`masks` (see the module doc)."""
        return self.strategy == "uniform" and self.n_bins <= MAX_MASKED_BINS

    def index(self, prob: pl.Expr) -> pl.Expr:
        """Int32 bin of probabilities already known to be null or in [0, 1] (no checks).

        Quantile bins use the quantiles of `prob` in the current group (or window).
        """
        if self.strategy == "quantile":
            return _quantile_bins(prob, self.n_bins, self.closed)
        # A non-strict cast: NaN (out-of-range data) becomes null, not an error.
        return self.value(prob).cast(pl.Int32, strict=False)

    def value(self, prob: pl.Expr) -> pl.Expr:
        """The uniform bin of :meth:`index` as a Float64 holding the integer (no cast).

        A cheaper grouping key (the integer cast is a pass of its own), for
        probabilities in [0, 1]; the caller casts the few grouped values.
        """
        if self.inner is not None:
            # A peer's edges: count them (one comparison per edge; compat is for checking).
            return pl.sum_horizontal(
                [self._beyond(prob, edge).cast(pl.Float64) for edge in self.inner]
            ).fill_nan(None) + pl.when(prob.is_not_null()).then(0.0)
        return _uniform_bin_value(prob, self.n_bins, self.closed)

    def cell_words(self, components: Sequence[pl.Expr]) -> list[pl.Expr]:
        """The cell of a vector on the uniform grid: its components' bins, packed exactly.

        Component ``k`` (of `components`, the vector's entries in class order) has bin
        ``b_k = value(p_k)``. Word ``j`` packs the classes ``jm .. jm + m - 1`` as
        ``sum_i b_(jm+i) B**i``, a Float64 holding an integer, with ``m`` the most
        classes whose largest code ``B**m - 1`` is below ``2**53`` (:func:`cell_width`):
        every partial sum is an integer a double holds exactly, so equal words are equal
        bins, with no hashing and no collision, and the same vector gets the same words
        in any partition. One word for ``K <= m`` (K = 22 with 5 bins, 53 with 2); above
        that, ``ceil(K / m)`` words. Only the cells of the rows exist: K = 1000 never
        makes ``B**K`` of them.
        """
        width = cell_width(self.n_bins)
        words = []
        for start in range(0, len(components), width):
            terms = [
                self.value(p) * float(self.n_bins**i)
                for i, p in enumerate(components[start : start + width])
            ]
            # `+`, not sum_horizontal: a null entry makes the word null, not a smaller code.
            words.append(functools.reduce(operator.add, terms))
        return words

    def _beyond(self, prob: pl.Expr, edge: float) -> pl.Expr:
        """Whether `prob` lies above `edge` (right-closed) or at or above it (left-closed)."""
        if self.float32:
            prob, literal = prob.cast(pl.Float32), pl.lit(edge, dtype=pl.Float32)
        else:
            literal = pl.lit(edge, dtype=pl.Float64)
        return prob > literal if self.closed == "right" else prob >= literal

    def masks(self, prob: pl.Expr) -> list[pl.Expr]:
        """Per uniform bin, whether `prob` (null or in [0, 1]) lies in it; a null is in none."""
        if self.inner is not None:
            beyond = [self._beyond(prob, edge) for edge in self.inner]
            if not beyond:
                return [prob.is_not_null()]
            middle = [b & ~c for b, c in pairwise(beyond)]
            return [~beyond[0], *middle, beyond[-1]]
        edges = uniform_edges(self.n_bins)
        if self.n_bins == 1:
            return [prob.is_not_null()]
        right = self.closed == "right"
        masks = [prob <= edges[1] if right else prob < edges[1]]
        for lower, upper in pairwise(edges[1:-1]):
            # One kernel, not two comparisons and an `&` (aggregations have no
            # common-subexpression elimination: each bin pays its mask).
            masks.append(prob.is_between(lower, upper, closed="right" if right else "left"))
        masks.append(prob > edges[-2] if right else prob >= edges[-2])
        return masks

    def within(self, prob: pl.Expr, first: int, last: int) -> pl.Expr:
        """Whether `prob` (null or in [0, 1]) lies in the uniform bins ``first .. last``:
        the union of their :meth:`masks`, one comparison with each outer edge (none at
        0 and 1); a null is in none."""
        if self.inner is not None or self.strategy != "uniform":
            msg = "`within` is for uniform bins of exact edges k / n_bins"
            raise ValueError(msg)
        edges = uniform_edges(self.n_bins)
        lower, upper = edges[first], edges[last + 1]
        right = self.closed == "right"
        if first == 0 and last == self.n_bins - 1:
            return prob.is_not_null()
        if first == 0:
            return prob <= upper if right else prob < upper
        if last == self.n_bins - 1:
            return prob > lower if right else prob >= lower
        return prob.is_between(lower, upper, closed="right" if right else "left")

    def grid(self) -> pl.LazyFrame:
        """The uniform bins with their exact edges: ``bin`` (Int32), ``lower``, ``upper``."""
        if self.inner is None:
            edges = uniform_edges(self.n_bins)
        else:
            edges = [min(0.0, *self.inner), *self.inner, max(1.0, *self.inner)]
        return pl.LazyFrame(
            {"bin": range(self.n_bins), "lower": edges[:-1], "upper": edges[1:]},
            schema={"bin": pl.Int32, "lower": pl.Float64, "upper": pl.Float64},
        )


def cell_width(n_bins: int) -> int:
    """How many classes one exact cell word packs (see :meth:`Binning.cell_words`)."""
    if n_bins == 1:
        return 2**31  # every bin is 0: one word holds any K
    width = 1
    while n_bins ** (width + 1) <= 2**53:
        width += 1
    return width


def binning(
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    compat: Compat | None = None,
) -> Binning:
    """The checked :class:`Binning` of a metric's arguments; `compat` names a peer's rule.

    With `compat`, uniform bins follow the peer's code exactly (the closure is the
    peer's, whatever `closed` says):

    * ``"sklearn"``: ``calibration_curve``: edges ``np.linspace(0, 1, B + 1)``,
      right-closed (``searchsorted(edges[1:-1], p)``);
    * ``"netcal"``: ``netcal.metrics.ECE``: probabilities clipped to ``[eps, 1 - eps]``,
      edges ``np.linspace(0, 1, B + 1)``, left-closed;
    * ``"mapie"``: ``mapie.metrics``: ``num_bins = B`` *edges*
      ``np.linspace(0, 1, B)``, ``digitize(right=True)``: a bin of the exact zeros,
      then ``B - 1`` right-closed bins;
    * ``"torchmetrics"``: ``calibration_error``: float32 probabilities and float32
      edges ``torch.linspace(0, 1, B + 1)`` (its fused-multiply-add CPU kernel),
      left-closed (``bucketize(right=True) - 1``), and an extra bin ``B`` for
      ``p == 1.0``.

    Quantile bins have no compatibility rule (``ValueError``).
    """
    if compat is None:
        return Binning(n_bins, strategy, closed)
    check_choice("compat", compat, PEERS)
    check_n_bins(n_bins)
    _check_edge_bins(n_bins, "`compat`")
    if strategy != "uniform":
        msg = f"`compat` reproduces the peers' uniform bins; got strategy={strategy!r}"
        raise ValueError(msg)
    if compat == "sklearn":
        return Binning(n_bins, "uniform", "right", tuple(linspace(n_bins + 1)[1:-1]))
    if compat == "netcal":
        return Binning(n_bins, "uniform", "left", tuple(linspace(n_bins + 1)[1:-1]), clip=True)
    if compat == "mapie":
        return Binning(n_bins, "uniform", "right", tuple(linspace(n_bins)[:-1]))
    inner = (*torch_linspace32(n_bins + 1)[1:-1], 1.0)
    return Binning(n_bins + 1, "uniform", "left", inner, float32=True)


def _check_edge_bins(n_bins: int, option: str) -> None:
    """``ValueError`` above :data:`MAX_EDGE_BINS` bins, whose edges are expressions."""
    if n_bins > MAX_EDGE_BINS:
        msg = (
            f"`n_bins` must be at most {MAX_EDGE_BINS:_} with {option} (each edge is an "
            f"expression of its own; see docs/binning.md), got {n_bins:_}"
        )
        raise ValueError(msg)


def linspace(n: int) -> list[float]:
    """``np.linspace(0.0, 1.0, n)``, bit for bit: ``i * step`` in float64, then 1.0."""
    if n == 1:
        return [0.0]
    step = 1.0 / (n - 1)
    return [*(i * step for i in range(n - 1)), 1.0]


def _float32(value: float) -> float:
    """The nearest float32 of a double (round to nearest, ties to even)."""
    return float(struct.unpack("f", struct.pack("f", value))[0])


def torch_linspace32(n: int) -> list[float]:
    """``torch.linspace(0, 1, n, dtype=torch.float32)`` of the x86-64 CPU kernel.

    ``step = fl32(1 / (n - 1))``; element ``i`` is ``fl32(i * step)`` for ``i < n // 2``
    and ``fl32(1 - (n - 1 - i) * step)`` otherwise, each one fused multiply-add (one
    rounding), as the AVX2/AVX512 builds do. Exact products are rationals, rounded once.
    """
    if n == 1:
        return [0.0]
    step = Fraction(_float32(1.0 / (n - 1)))
    half = n // 2
    out = []
    for i in range(n):
        exact = step * i if i < half else 1 - step * (n - 1 - i)
        out.append(_float32(float(exact)))  # exact in float64 for these sizes
    return out


def uniform_edges(n_bins: int) -> list[float]:
    """Return the ``n_bins + 1`` edges ``k / n_bins`` of equal-width bins.

    Python's ``k / n`` is the correctly rounded double of the fraction.

    Examples
    --------
    >>> import polars_calib as pc
    >>> pc.uniform_edges(5)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    """
    check_n_bins(n_bins)
    return [k / n_bins for k in range(n_bins + 1)]


def bin_index(
    prob: IntoExpr,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
) -> pl.Expr:
    """Return the 0-based bin of each probability.

    Parameters
    ----------
    prob
        Probabilities in [0, 1]: a column name or an expression.
    n_bins
        Number of bins, a positive int.
    strategy
        ``"uniform"`` (equal width) or ``"quantile"`` (equal mass within the group).
    closed
        ``"right"`` (default): ``[0, 1/B], (1/B, 2/B], ...``; ``"left"``:
        ``[0, 1/B), ..., [(B-1)/B, 1]``.

    Returns
    -------
    Expr
        ``Int32`` bin index in ``0 .. n_bins - 1``; null where the probability is
        null, NaN or outside [0, 1].

    See Also
    --------
    uniform_edges : the edges of the uniform bins.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> df = pl.DataFrame({"p": [0.0, 0.1, 0.7, 0.71, 1.0]})
    >>> df.with_columns(
    ...     right=pc.bin_index("p", n_bins=10),
    ...     left=pc.bin_index("p", n_bins=10, closed="left"),
    ... )
    shape: (5, 3)
    ┌──────┬───────┬──────┐
    │ p    ┆ right ┆ left │
    │ ---  ┆ ---   ┆ ---  │
    │ f64  ┆ i32   ┆ i32  │
    ╞══════╪═══════╪══════╡
    │ 0.0  ┆ 0     ┆ 0    │
    │ 0.1  ┆ 0     ┆ 1    │
    │ 0.7  ┆ 6     ┆ 7    │
    │ 0.71 ┆ 7     ┆ 7    │
    │ 1.0  ┆ 9     ┆ 9    │
    └──────┴───────┴──────┘
    """
    binning = Binning(n_bins, strategy, closed)
    p = to_expr(prob, "prob").cast(pl.Float64)
    return binning.index(pl.when(p.is_between(0.0, 1.0)).then(p))


def _uniform_bin_value(p: pl.Expr, n_bins: int, closed: str) -> pl.Expr:
    """Uniform bin, a Float64 integer, of probabilities in [0, 1].

    Why one comparison suffices: rounding is monotone and the integers involved are
    doubles, so with ``t = fl(p * B)`` (the rounded product), ``t < k + 1`` implies
    ``p * B < k + 1`` and ``t > k - 1`` implies ``p * B > k - 1``; and ``t`` is within
    half an ulp of ``p * B``, far less than ``1/2``. Right-closed, ``k = floor(t)``
    gives ``(k - 1/2) / B < p < (k + 1) / B``, so ``e_(k-1) < p <= e_(k+1)`` for the
    correctly rounded edges ``e_j = fl(j / B)``: the bin is ``k`` if ``p > e_k``, else
    ``k - 1``. Left-closed, ``c = ceil(t)`` gives ``(c - 1) / B < p < (c + 1/2) / B``,
    so ``e_(c-1) <= p < e_(c+1)``: the bin is ``c`` if ``p >= e_c``, else ``c - 1``.
    ``p = 0`` (right) and ``p = 1`` (left) are the first and last bin. A probability
    outside [0, 1] gets a value outside ``0 .. B - 1`` (or NaN), never a bin.

    One ``when/then`` rather than ``k - (p <= e_k)`` clipped to the bins: a cast and a
    clip are passes of their own, and the chain cost a 10M-row table 1.2x the plain
    ``ceil(p * B)`` key where this costs 1.1x (``bench/core.py speed``).
    """
    # Polars divides by a scalar through its reciprocal (7 / 10 -> 0.7000000000000001);
    # dividing by a column-shaped B keeps each edge the correctly rounded k / B and
    # stays elementwise, which the per-bin windows need.
    if closed == "right":
        k = (p * n_bins).floor()
        below = p <= k / k.clip(n_bins, n_bins)
        end, end_bin = 0.0, 0.0
    else:
        k = (p * n_bins).ceil()
        below = p < k / k.clip(n_bins, n_bins)
        end, end_bin = 1.0, n_bins - 1.0
    value = pl.when(p == end).then(end_bin).when(below).then(k - 1.0).otherwise(k)
    # Named after the probability, as the other encodings (the first branch is a literal).
    name = p.meta.output_name(raise_if_undetermined=False)
    return value if name is None else value.alias(name)


def quantile_edges(prob: pl.Expr, n_bins: int) -> list[pl.Expr]:
    """The ``n_bins + 1`` linear-interpolation quantiles ``k / n_bins`` of `prob`."""
    return [prob.quantile(k / n_bins, interpolation="linear") for k in range(n_bins + 1)]


def range_edges(lo: pl.Expr, hi: pl.Expr, n_bins: int) -> list[pl.Expr]:
    """The ``n_bins + 1`` edges ``np.linspace(lo, hi, n_bins + 1)``, bit for bit.

    numpy computes ``step = (hi - lo) / n_bins``, then ``k * step + lo``, and sets the
    last edge to ``hi``; ``lo == hi`` gives ``n_bins + 1`` equal edges. netcal's σ-bins
    are these edges (``docs/regression.md``, "Variance calibration").
    """
    check_n_bins(n_bins)
    _check_edge_bins(n_bins, "equal-width edges between two expressions")
    # Polars divides a column by a literal through its reciprocal (see
    # `_uniform_bin_value`), and a group-by's aggregates are a column: a column-shaped
    # divisor keeps numpy's division in every context.
    width = hi - lo
    step = width / width.clip(float(n_bins), float(n_bins))
    inner = [step * float(k) + lo for k in range(1, n_bins)]
    return [lo, *inner, hi]


def edge_index(value: pl.Expr, edges: Sequence[pl.Expr], closed: Closed) -> pl.Expr:
    """The Int32 bin of `value` among `edges` (null: outside ``[e_0, e_B]``, null or NaN).

    Right-closed: ``[e_0, e_1], (e_1, e_2], ..., (e_(B-1), e_B]``; left-closed:
    ``[e_0, e_1), ..., [e_(B-1), e_B]``: the rule of :class:`Binning` (the number of
    inner edges below the value, or at or below it when left-closed), with both outer
    edges closed. Equal edges make empty bins: with all edges equal, the value ``e_0``
    is in the first bin (right-closed) or the last (left-closed), as ``np.histogram``.
    """
    inside = (value >= edges[0]) & (value <= edges[-1])
    if closed == "right":
        beyond = [(value > edge).cast(pl.Int32) for edge in edges[1:-1]]
    else:
        beyond = [(value >= edge).cast(pl.Int32) for edge in edges[1:-1]]
    count = pl.sum_horizontal(beyond) if beyond else pl.lit(0, pl.Int32)
    return pl.when(inside).then(count.cast(pl.Int32))


def _quantile_bins(p: pl.Expr, n_bins: int, closed: str) -> pl.Expr:
    inner = quantile_edges(p, n_bins)[1:-1]
    if not inner:
        return pl.when(p.is_not_null()).then(pl.lit(0, dtype=pl.Int32))
    if closed == "right":
        above = [(p > edge).cast(pl.Int32) for edge in inner]
    else:
        above = [(p >= edge).cast(pl.Int32) for edge in inner]
    # sum_horizontal skips nulls, so keep the null of a missing probability explicitly.
    return pl.when(p.is_not_null()).then(pl.sum_horizontal(above).cast(pl.Int32))


def linear_grid(p: pl.Expr, intervals: int) -> tuple[pl.Expr, pl.Expr]:
    """relplot's linear spread of `p` over the grid ``0, 1/G, ..., 1`` (``G = intervals``).

    The lower point ``k = min(floor(p * G), G - 1)`` (Float64 holding the integer) and
    the fraction ``p * G - k`` in [0, 1] that goes to point ``k + 1``, the rest to
    ``k``: ``relplot.kernels.smooth_round_to_grid``, whose ``(f * (n - 1)).astype(int)``
    is the same product and truncation (``n - 1 == G``).
    """
    check_n_bins(intervals)
    scaled = p * float(intervals)
    lower = scaled.floor().clip(0.0, intervals - 1.0)
    return lower, scaled - lower


class GroupedEdges:
    """Sorted values per group (fitted edges or thresholds), searched exactly per row.

    Group ``g`` (``0, 1, ...``) holds ``values[g]``, sorted. :meth:`position` gives, per
    row, the absolute position just past the row's group's values below its
    probability (``strict``) or at or below it, in the concatenation of all groups
    (each followed by one slot of its own with ``sentinel``, so that every position
    belongs to one group): two binary searches against literals, whatever the
    number of groups.

    The encoding is exact: the distinct values of all groups, sorted, give each
    value its rank ``k`` (1-based); a row's probability gets the number ``r`` of
    distinct values below it (or at or below it), and a value of its group lies
    below the probability exactly when its rank is at most ``r``. Group and rank are
    packed into one integer, ``g * (U + 2) + k`` (``U`` distinct values; the
    sentinel's rank is ``U + 1``), so one integer search finds the position.
    """

    def __init__(self, values: Sequence[Sequence[float]], sentinel: bool = False) -> None:
        arrays = [np.asarray(v, dtype=np.float64) for v in values]
        distinct = np.unique(np.concatenate(arrays)) if arrays else np.zeros(0)
        stride = len(distinct) + 2
        keys, starts, lengths = [], [], []
        start = 0
        for g, array in enumerate(arrays):
            ranks = np.searchsorted(distinct, array, side="left") + 1
            extra = [len(distinct) + 1] if sentinel else []
            keys.append(g * stride + np.concatenate([ranks, extra]).astype(np.int64))
            starts.append(start)
            lengths.append(len(array))
            start += len(array) + len(extra)
        self.distinct = pl.Series(distinct, dtype=pl.Float64)
        self.keys = pl.Series(np.concatenate(keys) if keys else [], dtype=pl.Int64)
        self.stride = stride
        self.starts = pl.Series(starts, dtype=pl.Int64)
        self.lengths = pl.Series(lengths, dtype=pl.Int64)

    def position(self, group: pl.Expr, prob: pl.Expr, strict: bool) -> pl.Expr:
        """Per row (Int64): the position past its group's values below `prob`.

        Below is ``< prob`` when `strict`, else ``<= prob``. Null where the group or the
        probability is null.
        """
        rank = pl.lit(self.distinct).search_sorted(prob, side="left" if strict else "right")
        key = group.cast(pl.Int64) * self.stride + rank.cast(pl.Int64)
        # search_sorted places a null first: keep it null (an unseen group, a null p).
        found = pl.lit(self.keys).search_sorted(key, side="right").cast(pl.Int64)
        return pl.when(group.is_not_null() & prob.is_not_null()).then(found)


def edge_bins(
    group: pl.Expr, prob: pl.Expr, edges: GroupedEdges, n_bins: int, closed: Closed
) -> pl.Expr:
    """The bin (Int64) of `prob` among explicit per-group edges: the rule of :class:`Binning`.

    `edges` holds each group's ``n_bins - 1`` inner edges. Right-closed, the bin is
    the number of the group's inner edges below `prob` (as the quantile bins of a
    statistics table); left-closed, the number at or below it. Fitted quantile
    edges are applied to new data this way.
    """
    if n_bins == 1:
        return pl.when(prob.is_not_null()).then(pl.lit(0, pl.Int64))
    start = group.cast(pl.Int64) * (n_bins - 1)
    return edges.position(group, prob, strict=closed == "right") - start
