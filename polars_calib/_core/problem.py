"""The input of every feature: a binary problem and its one row-level validity rule.

Every metric, table, error message and diagnostic starts from a :class:`Problem`:
probabilities ``p`` and 0/1 outcomes ``y`` (Float64), an optional weight, an optional
class key, the per-row score terms (squared error, log-loss), and the checks that
decide which rows are **refused**. Binary data give one problem
(:func:`binary_problem`); probability vectors give one per reduction
(:func:`vector_problem`):

* ``"confidence"``: the largest probability against whether its arg-max (first
  maximal index on ties, as ``numpy.argmax``) is the label;
* ``"top_label"``: the same, keyed by the predicted class;
* ``"classwise"``: ``p_j`` against ``label == j`` for every class ``j``, keyed by the
  class: the columns are lists, one entry per class, exploded by the caller;
* ``"canonical"``: no reduction: ``prob`` is the vector (a list) and ``label`` the
  true class (Float64), for the statistics table keyed by the vector's cell of the
  simplex grid (:func:`polars_calib._table.canonical.canonical_statistics`).

A row is **present** when its probability, label and weight are all non-null; a
present or partly null row is **refused** when any of its non-null values breaks a
check (a probability outside [0, 1] or NaN, a label other than 0/1 or a NaN label, a
negative, NaN, infinite or subnormal weight; for vectors, a bad entry, a sum off 1, a
label that is not a class). A weighted group is refused as a whole when its weights
sum to ``WEIGHT_LIMIT`` (1e300) or more, where its sums would overflow (see
docs/reliability-and-summary.md, "Weights"). The number of classes
K is the length of a row's vector, so a label beside a null vector is refused when it
is no class index at all (negative, fractional, NaN) but is not compared with K: the
row is ignored. Rows that are not
present are ignored; expressions give a group holding a refused row null, frame
functions count refused rows per group. The checks' texts are the error messages.

Non-numeric inputs are refused when the query is planned: a binary problem's probability
and label (without ``pos_label``) named by column fail then with a message naming the
column and the fix (``pos_label=``, the multi-class functions; see ``_numbers_only``),
and otherwise the rule compares them, uncast, with numbers, which Polars rejects for
strings, categoricals and vectors before reading any data. Booleans are numbers here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl
import polars.selectors as cs

from polars_calib._core.draws import bernoulli, categorical
from polars_calib._core.exprs import IntoExpr, to_expr
from polars_calib._core.options import TABLE_REDUCTIONS, TableReduction, check_choice

__all__ = ["EPS", "WEIGHT_LIMIT", "Check", "Problem", "binary_problem", "vector_problem"]

# float64 machine epsilon: log-loss clips probabilities to [EPS, 1 - EPS], as scikit-learn does.
EPS = 2.220446049250313e-16

# The smallest normal float64: a positive weight below it is subnormal, and its products
# with probabilities lose their digits (5e-324 * 0.3 is 5e-324) or vanish (docs/weights.md).
TINY = 2.2250738585072014e-308
# The largest finite float64.
HUGE = 1.7976931348623157e308
# The largest total weight of a group: its weighted sums stay far from overflow.
WEIGHT_LIMIT = 1e300


@dataclass(frozen=True)
class Check:
    """One data problem: the rows of `column` where `bad` holds, described as `problem`.

    `bad` is null where the check does not apply (a null value). `shown` is the
    Float64 value quoted from the first bad row, if any is worth quoting. With
    `whole`, `bad` and `shown` are aggregates over the group: a flag and a
    description (a check that compares rows with each other); `between` says whether
    the problem can lie between parts of the rows that each pass it (counted per
    partition by an engine, it is then reported on the merged table's word).
    """

    column: str
    problem: str
    bad: pl.Expr
    shown: pl.Expr | None = None
    whole: bool = False
    between: bool = True


@dataclass(frozen=True)
class Problem:
    """A binary calibration problem over the rows of a frame or group.

    ``refused`` is the row-level rule: true on a row holding a value the checks
    refuse, false or null otherwise (``when`` takes null as false); it is one cheap
    expression, evaluated on every row, and the ``checks`` are its breakdown by
    reason, counted only to explain a refusal (a test keeps the two equal).

    ``prob`` and ``label`` are Float64 (``label`` 0/1 on valid rows), ``weight``
    Float64 or None, ``key`` an integer class or None; they are not masked: a null
    input makes them null. ``terms`` are per-row sums a score needs (``squared_error``
    and ``log_loss``; for the classwise reduction also ``confidence`` and
    ``correct``), defined so that summing them over a group's entries gives the
    group's total. With ``exploded``, ``prob``, ``label``, ``key`` and ``terms`` are
    lists (one entry per class) that the caller explodes together.
    """

    prob: pl.Expr
    label: pl.Expr
    weight: pl.Expr | None
    present: pl.Expr
    refused: pl.Expr
    checks: tuple[Check, ...]
    terms: dict[str, pl.Expr] = field(default_factory=dict)
    key: pl.Expr | None = None
    exploded: bool = False
    # Resampling (`polars_calib._table.replicates`): `draw` turns a random 32-bit word per row
    # into a label drawn from the row's own probabilities (the raw label `relabel`
    # takes); `relabel` rebuilds the problem's label and terms for another raw label.
    # With `binary`, labels are 0/1 and every term is affine in the label.
    draw: Callable[[pl.Expr], pl.Expr] | None = field(default=None, compare=False, repr=False)
    relabel: Callable[[pl.Expr], Problem] | None = field(default=None, compare=False, repr=False)
    binary: bool = False
    ok: pl.Expr | None = None
    """``refused`` and ``present`` in one expression, when a problem has one cheaper
    than their combination: true on a used row, false on a refused one, null on an
    ignored one (a null input, nothing refused)."""

    @property
    def invalid(self) -> pl.Expr:
        """Aggregate: true when the group holds a refused row or fails a whole check."""
        flag = self.refused.any()
        for check in self.checks:
            if check.whole:
                flag = flag | check.bad.fill_null(False)
        return flag

    def seen_by(self, clip: bool, float32: bool) -> Problem:
        """The problem with probabilities as a peer reads them (see ``binning.binning``):
        clipped to ``[EPS, 1 - EPS]`` and/or rounded to float32; the rule is unchanged."""
        if not (clip or float32):
            return self

        def seen(p: pl.Expr) -> pl.Expr:
            p = p.clip(EPS, 1.0 - EPS) if clip else p
            return p.cast(pl.Float32).cast(pl.Float64) if float32 else p

        prob = self.prob.list.eval(seen(pl.element())) if self.exploded else seen(self.prob)
        return replace(self, prob=prob)

    def weighted(self, value: pl.Expr) -> pl.Expr:
        """`value` times the row weight (unchanged when unweighted)."""
        return value if self.weight is None else value * self.weight


def _name(value: IntoExpr, default: str) -> str:
    return to_expr(value, default).meta.output_name(raise_if_undetermined=False) or default


def _weight_checks(weight: IntoExpr | None) -> tuple[pl.Expr | None, list[Check]]:
    if weight is None:
        return None, []
    w = to_expr(weight, "weight").cast(pl.Float64)
    name = _name(weight, "weight")
    return w, [
        Check(name, "weight negative", w < 0.0, w),
        Check(name, "weight NaN or infinite", ~w.is_finite(), w),
        Check(name, "weight positive but subnormal (below 2.2e-308)", (w > 0.0) & (w < TINY), w),
    ]


_NUMBERS = cs.numeric() | cs.boolean() | cs.by_dtype(pl.Null)


def _numbers_only(value: IntoExpr, default: str, problem: str) -> pl.Expr:
    """`value` as an expression that, when it names a column holding anything but numbers
    or booleans, fails as the query is planned with `problem` as its message.

    Polars has no expression that raises, but a struct whose two fields share a name
    fails with that name: the second field exists only when a selector of the column
    and its dtype matches (the dtype is known only when the query is planned). Other
    expressions are left as they are (the rule's comparisons refuse strings).
    """
    expr = to_expr(value, default)
    if not isinstance(value, str):
        return expr
    other = (cs.by_name(value) - _NUMBERS).name.map(lambda _: problem)
    return pl.struct(expr.alias(problem), other).struct.field(problem).alias(value)


def _weight_total_check(
    weight: IntoExpr | None, w: pl.Expr | None, present: pl.Expr
) -> list[Check]:
    """The group's check of its total weight: at most ``WEIGHT_LIMIT``, so that every
    weighted sum (terms up to ``-log(EPS)``, about 36, times bootstrap counts) stays finite."""
    if w is None or weight is None:
        return []
    total = pl.when(present & weight_ok(w)).then(w).sum()
    problem = "weights of a group summing to 1e300 or more (rescale them)"
    # A total over partitions is checked on the merged table (plan.check_weight_totals).
    bad = total >= WEIGHT_LIMIT
    return [Check(_name(weight, "weight"), problem, bad, total, whole=True, between=False)]


def weight_ok(w: pl.Expr) -> pl.Expr:
    """True on a usable weight: 0, or a normal positive float (``TINY`` to ``HUGE``);
    false on a negative, NaN, infinite or subnormal one; null on a null one."""
    return (w == 0.0) | w.is_between(TINY, HUGE)


def _present(*values: pl.Expr | None) -> pl.Expr:
    return pl.all_horizontal([value.is_not_null() for value in values if value is not None])


def binary_problem(
    prob: IntoExpr,
    label: IntoExpr,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> Problem:
    """The problem of binary probabilities `prob` and outcomes `label`.

    Without `pos_label`, labels must be 0/1 (or boolean); with it, a label is 1 when
    it equals `pos_label` and 0 otherwise (any non-null label but NaN is valid: 1/2,
    -1/1 or strings, as scikit-learn's ``pos_label``).
    """
    p_name, y_name = _name(prob, "prob"), _name(label, "label")
    raw_p = _numbers_only(
        prob,
        "prob",
        f"column {p_name!r} must hold binary probabilities (numbers); for probability "
        "vectors use pc.confidence_ece, pc.classwise_ece, pc.top_label_ece, "
        "pc.multiclass_brier or pc.multiclass_log_loss",
    )
    raw_y = to_expr(label, "label")
    if pos_label is None:
        raw_y = _numbers_only(
            label,
            "label",
            f"column {y_name!r} must hold 0/1 or boolean labels; for other labels give "
            "pos_label= (the label of the positive class)",
        )
    p = raw_p.cast(pl.Float64)
    w, checks = _weight_checks(weight)
    checks = [
        # On the Float64 cast: a boolean probability has no `is_nan`.
        Check(p_name, "probability NaN", p.is_nan()),
        Check(p_name, "probability outside [0, 1]", ~p.is_nan() & ~p.is_between(0.0, 1.0), p),
        *checks,
    ]
    if pos_label is None:
        # Compared uncast: a string or categorical label is refused when planned.
        checks.insert(
            2,
            Check(
                y_name, "label not 0 or 1", ~((raw_y == 0) | (raw_y == 1)), raw_y.cast(pl.Float64)
            ),
        )
        y = raw_y.cast(pl.Float64)
        nan_label = None
    else:
        # A NaN label is no class (as a null is none); the physical cast reads a
        # categorical's codes and a text's number ("NaN", as a CSV writes a NaN).
        nan_label = raw_y.to_physical().cast(pl.Float64, strict=False).is_nan()
        checks.insert(2, Check(y_name, "label NaN", nan_label))
        y = (raw_y == pos_label).cast(pl.Float64)
    # The rule, in one pass: is_between is false for NaN and null for null; compared
    # uncast, a string or a vector fails when the query is planned.
    refused = ~raw_p.is_between(0.0, 1.0)
    refused = refused | (~((raw_y == 0) | (raw_y == 1)) if nan_label is None else nan_label)
    if w is not None:
        refused = refused | ~weight_ok(w)
    # The same rule negated, each part null exactly when its input is, so that (Kleene
    # logic) it is false on a refused row, true on a used one, and null when an input
    # is null and nothing is refused: `refused` and `present` in half their passes.
    ok = raw_p.is_between(0.0, 1.0)
    if nan_label is None:
        ok = ok & ((raw_y == 0) | (raw_y == 1))
    else:
        ok = ok & pl.when(raw_y.is_not_null()).then(~nan_label.fill_null(False))
    if w is not None:
        ok = ok & weight_ok(w)
    terms = {
        "squared_error": (p - y) * (p - y),
        "log_loss": _log_loss_term(p, y),
        **_test_terms(p, y),
    }
    present = _present(p, y, w)
    return Problem(
        p,
        y,
        w,
        present,
        refused,
        (*checks, *_weight_total_check(weight, w, present)),
        terms,
        draw=lambda word: bernoulli(word, p),
        relabel=lambda drawn: binary_problem(prob, drawn, weight),
        binary=True,
        ok=ok,
    )


def _test_terms(p: pl.Expr, y: pl.Expr) -> dict[str, pl.Expr]:
    """Row terms of the calibration tests and decompositions (``_metrics.diagnostics``).

    Spiegelhalter's numerator ``(y - p)(1 - 2p)`` and its variance under calibration
    ``(1 - 2p)**2 p (1 - p)``; ``p**2`` and ``p y`` (the within-bin variance and
    covariance of the Brier decomposition).
    """
    one_minus_2p = 1.0 - 2.0 * p
    return {
        "spiegelhalter_numerator": (y - p) * one_minus_2p,
        "spiegelhalter_variance": one_minus_2p * one_minus_2p * p * (1.0 - p),
        "squared_p": p * p,
        "p_y": p * y,
    }


def _log_loss_term(p: pl.Expr, y: pl.Expr) -> pl.Expr:
    """``-(y log p + (1 - y) log(1 - p))`` with p clipped to ``[EPS, 1 - EPS]``."""
    clipped = p.clip(EPS, 1.0 - EPS)
    return -(clipped.log() * y + (1.0 - clipped).log() * (1.0 - y))


def vector_checks(
    prob: IntoExpr, label: IntoExpr, weight: IntoExpr | None, sum_tol: float
) -> tuple[pl.Expr, pl.Expr, pl.Expr | None, pl.Expr, list[Check]]:
    """Vectors as ``List(Float64)``, labels, weights, the refused rule and its checks."""
    # Non-strict: an Array always converts to a List, but Polars' strict cast fails on
    # a null it meets inside a masked ``when/then`` (a null label beside an Array).
    vectors = to_expr(prob, "prob").cast(pl.List(pl.Float64), strict=False)
    raw_y = to_expr(label, "label")
    y = raw_y.cast(pl.Float64)
    p_name, y_name = _name(prob, "prob"), _name(label, "label")
    w, weight_checks = _weight_checks(weight)
    n_classes = vectors.list.len()
    entries_ok = vectors.list.eval(pl.element().is_between(0.0, 1.0).fill_null(False)).list.all()
    total = vectors.list.sum()
    # A label beside a null vector (an ignored row) is checked for being a class index,
    # not against K: K is the length of the row's vector (see the module doc).
    is_class = (raw_y >= 0) & (y == y.floor()) & (y < n_classes).fill_null(True)
    checks = [
        Check(p_name, "vector holding a null, NaN or value outside [0, 1]", ~entries_ok),
        Check(
            p_name,
            f"vector sum off 1 by more than {sum_tol:g}",
            entries_ok & ((total - 1.0).abs() > sum_tol),
            total,
        ),
        # Compared uncast first: a string or categorical label is refused when planned.
        Check(y_name, "label not a class 0 .. K - 1", ~is_class, y),
        *weight_checks,
    ]
    refused = ~entries_ok | ((total - 1.0).abs() > sum_tol) | ~is_class
    if w is not None:
        refused = refused | ~weight_ok(w)
    return vectors, y, w, refused, checks


def vector_problem(
    prob: IntoExpr,
    label: IntoExpr,
    weight: IntoExpr | None,
    sum_tol: float,
    reduction: TableReduction,
) -> Problem:
    """The binary problem(s) of probability vectors under `reduction` (see the module)."""
    check_choice("reduction", reduction, TABLE_REDUCTIONS)
    vectors, y, w, refused, checks = vector_checks(prob, label, weight, sum_tol)
    present = _present(vectors, y, w)
    checks += _weight_total_check(weight, w, present)
    predicted = vectors.list.arg_max().cast(pl.Int64)
    # A refused row may hold an out-of-range label: index it safely (its result is unused).
    true_class = y.cast(pl.Int64, strict=False)
    if reduction == "classwise":
        n_classes = vectors.list.len()
        classes = pl.int_ranges(0, n_classes, dtype=pl.Int64)
        # Never null beside a present vector (a null label gives zeros), so that every
        # list of the row explodes to the same length; `present` marks the rows used.
        hit = _one_hot(true_class.fill_null(-1), n_classes)
        # An empty or all-null vector has no arg-max: zeros too (a null list would explode
        # to another length than the vector's; the row is refused).
        on_predicted = _one_hot(predicted.fill_null(-1), n_classes)
        lengths = pl.when(present).then(n_classes)
        checks.append(
            Check(
                _name(prob, "prob"),
                "vectors of different lengths",
                lengths.min() != lengths.max(),
                pl.format("from {} to {} entries", lengths.min(), lengths.max()),
                whole=True,
            )
        )
        gap = vectors - hit
        terms = {
            "squared_error": gap * gap,
            "log_loss": vectors.list.eval(-pl.element().clip(EPS, 1.0 - EPS).log()) * hit,
            "confidence": vectors * on_predicted,
            "correct": hit * on_predicted,
        }
        return Problem(
            vectors,
            hit,
            w,
            present,
            refused,
            tuple(checks),
            terms,
            classes,
            exploded=True,
            draw=lambda word: categorical(word, vectors),
            relabel=lambda drawn: vector_problem(prob, drawn, weight, sum_tol, reduction),
        )
    confidence = vectors.list.max()
    correct = (predicted == true_class).cast(pl.Float64)
    true_prob = vectors.list.get(true_class, null_on_oob=True)
    # sum_c (p_c - [c = y])^2 = sum_c p_c^2 - 2 p_y + 1
    squares = vectors.list.eval(pl.element() * pl.element()).list.sum()
    terms = {
        "squared_error": squares - 2.0 * true_prob + 1.0,
        "log_loss": -true_prob.clip(EPS, 1.0 - EPS).log(),
    }
    if reduction == "canonical":
        return Problem(
            vectors,
            y,
            w,
            present,
            refused,
            tuple(checks),
            terms,
            draw=lambda word: categorical(word, vectors),
            relabel=lambda drawn: vector_problem(prob, drawn, weight, sum_tol, reduction),
        )
    key = predicted if reduction == "top_label" else None
    return Problem(
        confidence,
        correct,
        w,
        present,
        refused,
        tuple(checks),
        terms,
        key,
        draw=lambda word: categorical(word, vectors),
        relabel=lambda drawn: vector_problem(prob, drawn, weight, sum_tol, reduction),
    )


def _one_hot(index: pl.Expr, n_classes: pl.Expr) -> pl.Expr:
    """A Float64 list of length `n_classes`, 1.0 at `index` (null where `index` is)."""
    # int_ranges(-i, K - i) is 0 exactly at position i.
    return pl.int_ranges(-index, n_classes - index).list.eval((pl.element() == 0).cast(pl.Float64))
