"""Recalibration: fit a map per group on a labelled log, apply it as a lazy expression.

:func:`fit_calibrator` fits one recalibration map per group (``by=``), all groups at
once, on a DataFrame or a LazyFrame (a scan streams), and returns a
:class:`Calibrator`: its ``params`` (one row per group), an ``expr(prob)`` that
applies the fitted maps as a pure Polars expression (``with_columns``, the
streaming engine, a serialized plan), ``save`` / :func:`load_calibrator` (a
readable, versioned JSON file) and ``evaluate`` (before/after metrics and
reliability tables on held-out data).

Every fit starts from the package's problem (:mod:`polars_calib._problem`: the
rows used and the one refused rule) and is a few aggregations of it:

* **Platt** and **beta**: Newton steps of a logistic regression per group, from
  the fit of a deterministic subsample when the data are large; each step is
  **one** aggregation over all groups of the log-likelihood, its gradient and its
  Hessian (sums of per-row terms; the first step also checks each group), then a
  2×2 or 3×3 solve per group in numpy;
* **temperature**: the same, one parameter per group;
* **isotonic**: one aggregation of the weight and the positives per distinct
  probability and group, then pool-adjacent-violators per group in numpy;
* **histogram**: the statistics table (:func:`polars_calib.statistics.statistics_query`),
  one aggregation: a bin's fitted value is its observed frequency.

Applying looks up each row's group in literal tables built from the small
parameter table (the key's code, a ``gather`` from a dense array or an ``Enum``
cast, then a ``gather`` of each parameter: elementwise, so it streams; isotonic
thresholds and quantile edges by one binary search per row against the
concatenated per-group tables, :class:`polars_calib.binning.GroupedEdges`): the
cost per row does not grow with the number of groups, and the literals (a few
numbers per group) travel with the plan.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import polars as pl

from polars_calib._exprs import IntoExpr, to_expr
from polars_calib._options import (
    CALIBRATION_METHODS,
    CLOSED,
    FALLBACKS,
    REDUCTIONS,
    STRATEGIES,
    SUM_TOLERANCE,
    CalibrationMethod,
    Closed,
    Fallback,
    Reduction,
    Strategy,
    check_choice,
    check_n_bins,
    check_sum_tol,
)
from polars_calib._problem import EPS, binary_problem, vector_checks, vector_problem
from polars_calib.binning import Binning, GroupedEdges, edge_bins
from polars_calib.statistics import (
    FrameT,
    Prepared,
    bin_statistics,
    collect_checked,
    metrics_from_statistics,
    prepare,
    reliability_from_statistics,
    statistics_query,
)
from polars_calib.validation import (
    CalibrationDataError,
    is_vector,
    problem_counts,
    raise_for_problems,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:

    class _Numpy:
        """numpy, imported on first use: the fits' small solves need it, importing the
        package does not (runtime dependencies: polars only; numpy comes with the
        ``recalibrate`` extra)."""

        def __getattr__(self, name: str) -> Any:
            try:
                import numpy
            except ImportError as error:
                msg = (
                    "recalibration needs numpy; install it with "
                    "pip install 'polars_calib[recalibrate]'"
                )
                raise ImportError(msg) from error
            return getattr(numpy, name)

    np = _Numpy()

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Calibrator",
    "Evaluation",
    "fit_calibrator",
    "load_calibrator",
]

FORMAT = "polars_calib.calibrator"
"""The ``format`` field of a saved calibrator."""

FORMAT_VERSION = 1
"""The version of the saved file's layout; loading refuses a newer one."""

_PARAMETERS: dict[str, tuple[str, ...]] = {
    "platt": ("a", "b"),
    "beta": ("a", "b", "c"),
    "temperature": ("temperature",),
    "isotonic": ("x", "y"),
    "histogram": ("edges", "values"),
}
# Internal column names of the fitting queries (never in a result).
_P, _Y, _W, _USED, _REFUSED, _G = (
    f"__polars_calib_{n}__" for n in ("p", "y", "w", "used", "refused", "group")
)
_V, _T = "__polars_calib_vector__", "__polars_calib_class__"
_INDEX = "__polars_calib_index__"
_MAX_STEP_HALVINGS = 40
_MAX_CONDITION = 1e13
# Newton fits (:func:`_fit_newton`): the identity map starts a fit, unless a subsample's fit does.
_START: dict[str, tuple[float, ...]] = {
    "platt": (1.0, 0.0), "beta": (1.0, 1.0, 0.0), "temperature": (1.0,),
}  # fmt: skip
_SAMPLE_ROWS = 200_000  # about this many rows fit the start
_SAMPLE_FROM = 4 * _SAMPLE_ROWS  # smaller data start at the identity (their passes are cheap)
_SAMPLE_TOL = 1e-4  # the start's precision: well below its sampling error
# A first pass from a start fitted on at least this many rows of every group has no loss
# (its steps are judged by `_decrease_bound`); from poorer starts, steps too far for the
# bound would be taken again.
_NEAR_ROWS = 1_000
_WEYL = 0x4F1BBCDD  # odd, about 2**31 / golden ratio (the subsample's rule, `_sample_offset`)
_SAFETY = 10.0  # margin of the quadratic-convergence stop (`_newton`)
_CHEBYSHEV_FROM = 1e-5  # a pass computes third derivatives while an error may be above this


# A Newton step's loss, gradient, Hessian and third derivatives (None: not used), per group.
_Terms = tuple[
    "NDArray[np.float64]", "NDArray[np.float64]", "NDArray[np.float64]",
    "NDArray[np.float64] | None",
]

# --------------------------------------------------------------------------
# The calibrator
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Calibrator:
    """Recalibration maps fitted per group; see :func:`fit_calibrator`.

    Attributes
    ----------
    method
        ``"platt"``, ``"beta"``, ``"isotonic"``, ``"histogram"`` or ``"temperature"``.
    reduction
        For probability vectors: ``"top_label"``, ``"confidence"`` or ``"classwise"``
        (one-vs-rest); None for binary data and temperature scaling.
    by
        The group-key columns.
    params
        One row per fitted group (and class): the keys, ``class`` (Int32, with the
        top-label and classwise reductions), ``count`` (Int64, rows used), the
        method's parameters, ``iterations`` (Int64 Newton steps over all the
        data, each one pass, of the iterative methods; a subsample's steps not
        counted; null otherwise), ``fallback`` (String: null when
        fitted, else ``"identity"`` or ``"global"``) and ``reason`` (String: why the
        group was not fitted).
    global_params
        With ``fallback="global"``: the same columns, fitted on all rows (per class
        for the keyed reductions), without the keys; else None.
    options
        The fit's options (``smoothed``, ``n_bins``, ``strategy``, ``closed``,
        ``fallback``, ``min_rows``, ``sum_tol``, ``pos_label``, ``n_classes``).
    schema
        The input column dtypes at fit time, as strings: the probability and each key.
    """

    method: CalibrationMethod
    reduction: Reduction | None
    by: tuple[str, ...]
    params: pl.DataFrame
    global_params: pl.DataFrame | None = None
    options: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, str] = field(default_factory=dict)

    @property
    def keys(self) -> list[str]:
        """The lookup keys of a row's parameters: `by`, then ``class`` when keyed."""
        keyed = self.reduction in ("top_label", "classwise")
        return [*self.by, *(["class"] if keyed else [])]

    def expr(self, prob: IntoExpr) -> pl.Expr:
        """The calibrated probability of each row, as an expression.

        Parameters
        ----------
        prob
            The probability column (binary), or the probability vectors, as at fit
            time. The group keys are read from the columns named in ``by``.

        Returns
        -------
        Expr
            Float64 (binary data, and the calibrated confidence of the predicted
            class with ``reduction="top_label"`` or ``"confidence"``), or
            ``List(Float64)`` vectors summing to 1 (``"temperature"`` and
            ``reduction="classwise"``). Null where the probability is null, refused
            (outside [0, 1], NaN; a bad vector), or its group was not seen at fit
            time and there is no ``fallback``.

        Notes
        -----
        Each row's group is found from its key columns (an integer key: a
        ``gather`` from a dense array indexed by the key; another key: a cast to
        an ``Enum`` of the fitted values), its parameters with a ``gather`` from
        literal columns of the parameter table: elementwise, so the expression
        streams, and the cost per row is independent of the number of groups; the
        literals, a few numbers per group, are part of the plan (a million groups
        make a plan of tens of megabytes). Isotonic and quantile-histogram maps
        also search their thresholds or edges (``search_sorted``), which Polars'
        streaming engine evaluates in memory for that column. With ``fallback``,
        a group not seen at fit time gets the identity map or the global fit.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_calib as pc
        >>> train = pl.DataFrame({
        ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
        ...     "y": [0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1],
        ... })
        >>> cal = pc.fit_calibrator(train, "p", "y", method="platt")
        >>> pl.DataFrame({"p": [0.05, 0.5, 0.95]}).with_columns(p_cal=cal.expr("p"))
        shape: (3, 2)
        ┌──────┬──────────┐
        │ p    ┆ p_cal    │
        │ ---  ┆ ---      │
        │ f64  ┆ f64      │
        ╞══════╪══════════╡
        │ 0.05 ┆ 0.064736 │
        │ 0.5  ┆ 0.689345 │
        │ 0.95 ┆ 0.986138 │
        └──────┴──────────┘
        """
        return _apply(self, prob)

    def apply(self, data: FrameT, prob: str, *, alias: str | None = None) -> FrameT:
        """`data` with the calibrated column added (``with_columns(cal.expr(prob))``).

        The key columns and the probability column are checked against the fit's
        dtypes from the schema (no data read); a LazyFrame stays a plan. The new
        column is named `alias` (default ``f"{prob}_calibrated"``).
        """
        if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
            msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
            raise TypeError(msg)
        schema = data.collect_schema()
        problems = []
        for name in [prob, *self.by]:
            if name not in schema:
                problems.append(f"column {name!r} is missing")
        for name in self.by:
            if name in schema and str(schema[name]) != self.schema.get(name, str(schema[name])):
                problems.append(
                    f"column {name!r} holds {schema[name]}, fitted on {self.schema[name]}"
                )
        if problems:
            raise CalibrationDataError("cannot apply the calibrator: " + "; ".join(problems))
        return data.with_columns(self.expr(prob).alias(alias or f"{prob}_calibrated"))

    def evaluate(
        self,
        data: pl.DataFrame | pl.LazyFrame,
        prob: str,
        label: str,
        *,
        weight: str | None = None,
        n_bins: int = 15,
        strategy: Strategy = "uniform",
        closed: Closed = "right",
        confidence: float = 0.95,
    ) -> Evaluation:
        """Calibration before and after, per group, on held-out data: one statistics table.

        The rows are stacked twice (``stage`` ``"before"``: the input
        probabilities; ``"after"``: :meth:`expr`), and one
        :func:`polars_calib.bin_statistics` table per (keys, stage, bin) gives both
        the metrics (:func:`polars_calib.metrics_from_statistics`: ECE, Brier,
        log-loss) and the reliability table
        (:func:`polars_calib.reliability_from_statistics`). Top-label and
        confidence calibrators are evaluated on the confidence (the largest
        probability against whether its class is right, binary Brier and
        log-loss); vector outputs (temperature, classwise) with the confidence
        reduction and the multi-class Brier and log-loss. Runs the query (a
        LazyFrame is collected); a DataFrame holding refused rows raises
        :class:`~polars_calib.CalibrationDataError`.

        Returns
        -------
        Evaluation
            ``metrics`` (keys, ``stage``, ``count``, ``refused``,
            ``mean_predicted``, ``observed``, ``ece``, ``brier``, ``log_loss``) and
            ``reliability`` (keys, ``stage``, then the reliability columns);
            ``Evaluation.plot()`` draws both stages.
        """
        return _evaluate(self, data, prob, label, weight, n_bins, strategy, closed, confidence)

    def to_dict(self) -> dict[str, Any]:
        """The calibrator as the JSON-ready dictionary :meth:`save` writes."""
        from polars_calib import __version__

        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "package_version": __version__,
            "method": self.method,
            "reduction": self.reduction,
            "by": list(self.by),
            "options": self.options,
            "schema": self.schema,
            "params": _frame_to_json(self.params),
            "global_params": None
            if self.global_params is None
            else _frame_to_json(self.global_params),
        }

    def save(self, path: str | Path) -> Path:
        """Write the calibrator to `path` as readable JSON (see :func:`load_calibrator`)."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")
        return path


@dataclass(frozen=True)
class Evaluation:
    """Before/after metrics and reliability tables of a calibrator on held-out data."""

    metrics: pl.DataFrame
    reliability: pl.DataFrame
    keys: tuple[str, ...] = ()

    def plot(self, *, backend: Literal["altair", "matplotlib"] = "altair",
             title: str | None = None) -> Any:  # fmt: skip
        """The reliability diagram of both stages (``stage`` colours, a panel per key).

        Draws :attr:`reliability` with :func:`polars_calib.plot_reliability`
        (needs the ``plot`` extra).
        """
        from polars_calib._plot.reliability import plot_reliability

        # One panel per key (a colour per stage); several keys: a panel per stage.
        colour, facet = ["stage"], self.keys[0] if self.keys else None
        if len(self.keys) > 1:
            colour, facet = list(self.keys), "stage"
        return plot_reliability(
            self.reliability.with_columns(pl.col("stage").cast(pl.String)),
            backend=backend, by=colour, facet=facet, title=title,
        )  # fmt: skip


# --------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------


def fit_calibrator(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    method: CalibrationMethod = "platt",
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    reduction: Reduction | None = None,
    smoothed: bool = False,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    fallback: Fallback | None = None,
    min_rows: int = 10,
    max_iter: int = 50,
    tol: float = 1e-8,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
) -> Calibrator:
    """Fit a recalibration map per group of a prediction log.

    Parameters
    ----------
    data
        DataFrame or LazyFrame (a scan is read a few times, streaming).
    prob
        The probability column (binary), or probability vectors (``Array`` or
        ``List``; labels ``0 .. K - 1``).
    label
        The 0/1 (or boolean) outcome, or the true class of a vector.
    method
        ``"platt"``: ``q = sigmoid(a logit(p) + b)``, maximum likelihood (with
        `smoothed`, Platt's targets). ``"beta"``: ``q = sigmoid(a ln p - b ln(1 - p)
        + c)`` (Kull et al.'s "abm"). ``"isotonic"``: the non-decreasing
        least-squares fit (pool-adjacent-violators), applied by linear
        interpolation between its points, constant beyond them. ``"histogram"``:
        the observed frequency of each of the package's bins (`n_bins`,
        `strategy`, `closed`). ``"temperature"`` (vectors only):
        ``q = softmax(ln p / T)``, maximum likelihood ``T > 0``.
    by
        Group-key column names: one map per group. None: one map.
    weight
        Optional column of non-negative sample weights.
    reduction
        Probability vectors with a binary method: ``"top_label"`` (the default:
        per predicted class, the method fitted on the largest probability
        against whether it is right; Gupta & Ramdas), ``"confidence"`` (the same,
        one map for all classes) or ``"classwise"`` (one-vs-rest: per class ``j``,
        ``p_j`` against ``label == j``; applied vectors are renormalised to sum 1).
    smoothed
        Platt only: fit Platt's targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)``
        instead of 1 and 0 (scikit-learn's ``method="sigmoid"``).
    n_bins, strategy, closed
        Histogram binning: the bins (:func:`polars_calib.bin_index`).
    fallback
        A group that cannot be fitted (fewer than `min_rows` rows; for the
        logistic methods, one class only or separated classes; no convergence)
        raises :class:`~polars_calib.CalibrationDataError` naming it, unless
        `fallback` is ``"identity"`` (the map ``q = p``) or ``"global"`` (the fit
        on all rows, per class for the keyed reductions), recorded in the
        ``fallback`` and ``reason`` columns of ``params``. At apply time, a group
        not seen at fit time gets the same fallback (null without one).
    min_rows
        The fewest used rows a group needs.
    max_iter, tol
        Newton steps at most (each is one pass over the data), and the relative
        distance to the maximum at which they end: a group stops after a step of at
        most ``tol * (1 + max |θ|)``, or after a step that quadratic (cubic, when
        corrected) convergence, at the rate its last two steps show, predicts leaves
        it within a tenth of that (the step is applied; no pass only confirms).
    sum_tol
        Vectors: the largest accepted ``|sum(p) - 1|``.
    pos_label
        Binary data: the label of the positive class when labels are not 0/1.

    Returns
    -------
    Calibrator
        ``params`` (one row per group), ``expr(prob)``, ``apply``, ``evaluate``,
        ``save``.

    Raises
    ------
    CalibrationDataError
        A missing or mistyped column; refused rows (naming column, problem and
        count, as :func:`polars_calib.validate`); a group that cannot be fitted,
        without `fallback` (naming the group and why).

    Notes
    -----
    **Reading.** A fit runs queries (unlike the LazyFrame methods that return
    plans). Platt, beta and temperature: one aggregation per Newton step, the first
    of which also counts, checks and identifies every group (rows used and refused,
    classes, separation); data of at least 800,000 rows first select a subsample of
    about 200,000 (one row in each block of ``k`` rows, at the offset
    ``floor(k frac(j / φ))`` in block ``j``: deterministic, spread evenly; a
    DataFrame's are gathered by position) and fit it in memory, which starts the
    full-data steps near the maximum (usually two of them then suffice). Isotonic:
    one aggregation; histogram: the statistics table. A DataFrame's problem columns
    are computed once for all passes; a LazyFrame is read again at each pass (and
    once to count its rows, and once for the subsample when large;
    ``pl.Config.set_engine_affinity("streaming")`` streams them).

    **Clipping.** The logistic methods read ``p`` clipped to ``[eps, 1 - eps]``
    with ``eps = 2.22e-16`` (float64 machine epsilon, as ``betacal`` and
    scikit-learn's log-loss), before ``logit`` or ``ln``; temperature scaling
    clips each entry of the vector the same way before ``ln``.

    **Platt / beta.** Newton's method on the weighted log-likelihood, started at
    the subsample's fit (or the identity map, ``a = 1, b = 0``; ``a = b = 1,
    c = 0``, for small data or a group the subsample could not fit), halving a step
    that lowers the likelihood; each step is one aggregation over all groups (the
    data are read once per step), then a 2×2 / 3×3 solve per group in numpy. From
    a subsample's start fitted on at least 1,000 rows of every group, Platt shows a
    step near the maximum does not lower the likelihood by a bound from the
    derivatives at its end (Taylor's remainder with the logistic function's
    largest derivatives and the sums of ``w x^m``, ``m <= 4``), or that it
    shrank the Newton decrement, so those passes skip the log-likelihood (one
    logarithm a row); another step is taken again with both likelihoods. While
    a group may still be far from the maximum, the step also sums the third
    derivatives and takes Chebyshev's correction ``-H⁻¹ T[s, s] / 2`` of the Newton
    step ``s`` (cubic convergence; not taken when larger than half the step).
    Beta calibration keeps ``betacal``'s rule: if ``a < 0`` the fit is redone with
    ``a = 0``, else if ``b < 0`` with ``b = 0`` (a monotone map). A group whose
    outcomes are all equal, whose classes are separated by ``p`` (every positive
    above every negative, or below), or whose probabilities take too few
    distinct values for the parameters (a singular Hessian) cannot be fitted.

    **Isotonic.** scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``:
    rows of equal ``p`` pooled (weighted mean outcome; values less than ``1e-15``
    apart too, as its ``_make_unique``), rows of zero weight dropped, PAV, then the points inside a constant block removed except its
    ends; a new ``p`` gets ``np.interp`` between the points (the first and last
    values beyond them).

    **Histogram.** The fitted value of a bin is its weighted observed
    frequency; an **empty bin leaves the probability unchanged** (no evidence).
    The bin rule is the package's (right-closed by default); netcal's
    ``HistogramBinning`` fits with left-closed bins and applies right-closed ones.
    Quantile edges are each group's, kept in ``params`` and applied to new data
    with the same rule.

    **Temperature.** Newton's method on the inverse temperature ``1 / T``
    (netcal's ``TemperatureScaling`` stores that inverse as its weight); ``params``
    holds ``temperature = T``.

    References
    ----------
    Platt, "Probabilistic outputs for support vector machines", 1999.
    Kull, Silva Filho & Flach, "Beta calibration", AISTATS 2017.
    Zadrozny & Elkan, "Transforming classifier scores into accurate multiclass
    probability estimates", KDD 2002 (isotonic, histogram binning).
    Guo et al., "On calibration of modern neural networks", ICML 2017 (temperature).
    Gupta & Ramdas, "Top-label calibration and multiclass-to-binary reductions",
    ICLR 2022.

    See Also
    --------
    load_calibrator, polars_calib.summary, polars_calib.reliability

    Examples
    --------
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "model": ["a"] * 8 + ["b"] * 8,
    ...     "p": [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9] * 2,
    ...     "y": [0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1],
    ... })
    >>> cal = pc.fit_calibrator(log, "p", "y", method="platt", by="model", min_rows=5)
    >>> cal.params.with_columns(pl.col("a", "b").round(4))
    shape: (2, 7)
    ┌───────┬───────┬────────┬────────┬────────────┬──────────┬────────┐
    │ model ┆ count ┆ a      ┆ b      ┆ iterations ┆ fallback ┆ reason │
    │ ---   ┆ ---   ┆ ---    ┆ ---    ┆ ---        ┆ ---      ┆ ---    │
    │ str   ┆ i64   ┆ f64    ┆ f64    ┆ i64        ┆ str      ┆ str    │
    ╞═══════╪═══════╪════════╪════════╪════════════╪══════════╪════════╡
    │ a     ┆ 8     ┆ 2.4146 ┆ 1.4468 ┆ 4          ┆ null     ┆ null   │
    │ b     ┆ 8     ┆ 0.2155 ┆ 0.0    ┆ 4          ┆ null     ┆ null   │
    └───────┴───────┴────────┴────────┴────────────┴──────────┴────────┘
    >>> log.with_columns(p_cal=cal.expr("p")).head(3)
    shape: (3, 4)
    ┌───────┬─────┬─────┬──────────┐
    │ model ┆ p   ┆ y   ┆ p_cal    │
    │ ---   ┆ --- ┆ --- ┆ ---      │
    │ str   ┆ f64 ┆ i64 ┆ f64      │
    ╞═══════╪═════╪═════╪══════════╡
    │ a     ┆ 0.1 ┆ 0   ┆ 0.020662 │
    │ a     ┆ 0.2 ┆ 0   ┆ 0.13005  │
    │ a     ┆ 0.3 ┆ 1   ┆ 0.354556 │
    └───────┴─────┴─────┴──────────┘
    """
    check_choice("method", method, CALIBRATION_METHODS)
    keys = _check_by(by)
    if fallback is not None:
        check_choice("fallback", fallback, FALLBACKS)
    check_n_bins(n_bins)
    check_choice("strategy", strategy, STRATEGIES)
    check_choice("closed", closed, CLOSED)
    if not isinstance(smoothed, bool):
        msg = f"`smoothed` must be a bool, got {type(smoothed).__name__}"
        raise TypeError(msg)
    if smoothed and method != "platt":
        msg = f"`smoothed` is an option of method='platt', got method={method!r}"
        raise ValueError(msg)
    for argument, value, low in (("min_rows", min_rows, 1), ("max_iter", max_iter, 1)):
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"`{argument}` must be a positive int, got {type(value).__name__} {value!r}"
            raise TypeError(msg)
        if value < low:
            msg = f"`{argument}` must be a positive int, got {value!r}"
            raise ValueError(msg)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)):
        msg = f"`tol` must be a number in (0, 1), got {type(tol).__name__} {tol!r}"
        raise TypeError(msg)
    if not 0 < tol < 1:
        msg = f"`tol` must be a number in (0, 1), got {tol!r}"
        raise ValueError(msg)
    check_sum_tol(sum_tol)

    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    schema = data.collect_schema()
    vectors = isinstance(prob, str) and prob in schema and is_vector(schema[prob])
    if method == "temperature":
        if reduction is not None:
            msg = "temperature scaling calibrates whole vectors: give no `reduction`"
            raise ValueError(msg)
        used: Reduction | None = "confidence"  # the vector checks of `prepare`
    elif vectors or reduction is not None:
        used = reduction or "top_label"
    else:
        used = None
    prepared = prepare(
        data, prob, label, by=keys, weight=weight, reduction=used, sum_tol=sum_tol,
        pos_label=pos_label, reserved=frozenset({*_RESERVED, *_PARAMETERS[method]}),
    )  # fmt: skip
    kept_reduction = None if method == "temperature" else used
    spec = _Spec(
        method=method, reduction=kept_reduction, smoothed=smoothed, binning=Binning(
            n_bins, strategy, closed
        ), min_rows=min_rows, max_iter=max_iter, tol=float(tol),
    )  # fmt: skip

    def rows(lf: pl.LazyFrame) -> pl.LazyFrame:  # the problem's rows of `lf` (checked data)
        return _rows(replace(prepared, lf=lf), spec, prob, label, weight, sum_tol)

    group_keys = [*keys, *(["class"] if kept_reduction in ("top_label", "classwise") else [])]
    params = _fit(rows, prepared, spec, group_keys)
    global_params = None
    if fallback == "global":
        global_keys = [k for k in group_keys if k == "class"]
        global_params = _fit(rows, prepared, spec, global_keys)
        _raise_failures(global_params, global_keys, "the global fit (all rows)")
    failed = params.filter(pl.col("reason").is_not_null())
    if failed.height and fallback is None:
        _raise_failures(params, group_keys, "")
    params = _with_fallback(params, global_params, group_keys, spec, fallback)
    n_classes = None
    if kept_reduction == "classwise" and params.height:
        n_classes = int(cast(int, params["class"].max())) + 1
    options = {
        "smoothed": smoothed, "n_bins": n_bins, "strategy": strategy, "closed": closed,
        "fallback": fallback, "min_rows": min_rows, "sum_tol": float(sum_tol),
        "pos_label": pos_label, "n_classes": n_classes, "eps": EPS,
    }  # fmt: skip
    kinds = {name: str(schema[name]) for name in [prob, *keys]}
    return Calibrator(
        method, kept_reduction, tuple(keys), params, global_params, options, kinds
    )


# Columns of `params` (with the method's parameters) and of an evaluation: not key names.
_RESERVED = {"count", "iterations", "fallback", "reason", "stage"}


def _check_by(by: str | Sequence[str] | None) -> list[str]:
    values = [] if by is None else [by] if isinstance(by, (str, pl.Expr)) else list(by)
    for value in values:
        if not isinstance(value, str):
            msg = f"`by` must be column names (a calibrator reads its keys by name), got {value!r}"
            raise TypeError(msg)
    return values


@dataclass(frozen=True)
class _Spec:
    method: CalibrationMethod
    reduction: Reduction | None
    smoothed: bool
    binning: Binning
    min_rows: int
    max_iter: int
    tol: float


def _rows(
    prepared: Prepared, spec: _Spec, prob: str, label: str, weight: str | None, sum_tol: float
) -> pl.LazyFrame:
    """The rows of the problem: keys, [class], p, y (or vector, true class), weight, flags."""
    keys = prepared.keys
    if spec.method == "temperature":
        vectors, y, w, refused, _ = vector_checks(prob, label, weight, sum_tol)
        present = pl.all_horizontal(
            [e.is_not_null() for e in (vectors, y, *([] if w is None else [w]))]
        )
        refused = refused.fill_null(False)
        return prepared.lf.select(
            *keys,
            vectors.alias(_V),
            y.cast(pl.Int64, strict=False).alias(_T),
            (pl.lit(1.0) if w is None else w).alias(_W),
            (present & ~refused).alias(_USED),
            refused.alias(_REFUSED),
        )
    problem = prepared.problem
    refused = problem.refused.fill_null(False)
    columns = {
        _P: problem.prob,
        _Y: problem.label,
        _W: pl.lit(1.0) if problem.weight is None else problem.weight,
        _USED: problem.present & ~refused,
        _REFUSED: refused,
    }
    if problem.key is not None:
        columns["class"] = problem.key
    lf = prepared.lf.select(*keys, *(e.alias(n) for n, e in columns.items()))
    if problem.exploded:
        lf = lf.explode(_P, _Y, "class")
    if "class" in columns:
        lf = lf.with_columns(pl.col("class").cast(pl.Int32))
    return lf


def _fit(
    rows: Callable[[pl.LazyFrame], pl.LazyFrame], prepared: Prepared, spec: _Spec,
    keys: list[str],
) -> pl.DataFrame:
    """Parameters per group of `keys`: keys, count, parameters, iterations, reason.

    `rows` gives the rows of the problem (:func:`_rows`) of ``prepared.lf`` or of a
    frame of its rows (a subsample's).
    """
    if spec.method == "histogram":
        return _fit_histogram(prepared, spec, keys)
    if spec.method == "isotonic":
        return _fit_isotonic(rows(prepared.lf), prepared, spec, keys)
    return _fit_newton(rows, prepared, spec, keys)


def _grouped(lf: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """`lf` with a constant key when there are none (one group, as in `statistics`)."""
    return lf if keys else lf.with_columns(pl.lit(0, pl.Int64).alias(_G))


def _keys_or_constant(keys: list[str]) -> list[str]:
    return keys or [_G]


def _check_refused(prepared: Prepared, refused: int) -> None:
    """Raise for refused rows, counted per check (a second read, only on bad data)."""
    if refused:
        checks = prepared.problem.checks
        raise_for_problems(problem_counts(prepared.lf, checks).collect(), checks)


def _fit_newton(
    rows: Callable[[pl.LazyFrame], pl.LazyFrame], prepared: Prepared, spec: _Spec,
    keys: list[str],
) -> pl.DataFrame:
    """Platt, beta and temperature: Newton steps from a subsample's fit, checks in the first.

    The rows each pass reads (:func:`_newton_rows`) are computed once for a
    DataFrame. Data of at least :data:`_SAMPLE_FROM` rows first fit a deterministic
    subsample of about :data:`_SAMPLE_ROWS` rows (in memory), whose parameters start
    the full-data steps; the first full-data step also counts, checks and
    identifies each group (:func:`_newton_fit`).
    """
    group = _keys_or_constant(keys)
    weighted = prepared.problem.weight is not None

    def newton_rows(lf: pl.LazyFrame) -> pl.LazyFrame:
        return _newton_rows(_grouped(rows(lf), keys), group, spec.method, weighted)

    source = newton_rows(prepared.lf)
    covering = None
    if isinstance(prepared.data, pl.DataFrame):
        # In memory already: the regressors once, not once per pass.
        computed = source.collect()
        source, size, covering = computed.lazy(), prepared.data.height, _key_range(computed, group)
    else:
        # One read (a parquet scan answers from its metadata).
        size = int(prepared.lf.select(pl.len()).collect().item())
    start = None
    if size >= _SAMPLE_FROM:
        # The subsample's rows of the data (before the problem's rows are computed).
        every = size // _SAMPLE_ROWS
        engine: Literal["auto", "in-memory"] = "auto"
        if isinstance(prepared.data, pl.DataFrame):
            # In memory: the chosen rows' positions, then one gather of them (a gather
            # of scattered rows is several times faster in the in-memory engine).
            blocks = np.arange(-(-size // every), dtype=np.int64)
            position = blocks * every + _sample_offset(blocks, every)
            chosen = prepared.lf.select(pl.all().gather(position[position < size]))
            engine = "in-memory"
        else:
            index = pl.col(_INDEX).cast(pl.Int64)
            chosen = prepared.lf.with_row_index(_INDEX).filter(
                index % every == _sample_offset(index // every, every)
            ).drop(_INDEX)  # fmt: skip
        sample = newton_rows(chosen).filter(~pl.col(_REFUSED)).collect(engine=engine)
        fitted, theta, _, failures = _newton_fit(
            sample.lazy(), group, spec, weighted, None, _SAMPLE_TOL, spec.max_iter, None, False
        )
        keep = [f is None and bool(np.all(np.isfinite(t))) for f, t in zip(failures, theta)]
        start = fitted.select(*group, pl.col("count").alias("__sampled")).with_columns(
            pl.Series(f"__start{j}", theta[:, j], dtype=pl.Float64) for j in range(theta.shape[1])
        ).filter(pl.Series(keep, dtype=pl.Boolean))

    def check(groups: pl.DataFrame) -> None:
        _check_refused(prepared, int(groups["refused"].sum()))

    groups, theta, iterations, reasons = _newton_fit(
        source, group, spec, weighted, start, spec.tol, spec.max_iter, check, True, covering
    )
    n = groups.height
    names = _PARAMETERS[spec.method]
    if spec.method == "temperature":
        todo = np.array([reason is None for reason in reasons], dtype=bool)
        beta = theta[:, 0]
        for g in np.flatnonzero(todo & (beta <= 0.0)).tolist():
            reasons[g] = f"no positive temperature (inverse temperature {beta[g]:.3g})"
        theta = np.where(beta[:, None] > 0.0, 1.0 / np.where(beta > 0, beta, 1.0)[:, None], 1.0)
    values = {
        name: [None if reasons[i] is not None else float(theta[i, k]) for i in range(n)]
        for k, name in enumerate(names)
    }
    return groups.select(*keys, "count").with_columns(
        *(pl.Series(name, values[name], dtype=pl.Float64) for name in names),
        pl.Series("iterations", [int(v) for v in iterations], dtype=pl.Int64),
        pl.lit(None, pl.String).alias("fallback"),
        pl.Series("reason", reasons, dtype=pl.String),
    )


_Ints = TypeVar("_Ints", pl.Expr, "NDArray[np.int64]")


def _sample_offset(block: _Ints, every: int) -> _Ints:
    """The subsample's row in block ``j`` of `every` rows (rows ``j * every`` on): its
    offset ``floor(every * frac(j / φ))``.

    One row a block, at a Weyl sequence's offset (integer arithmetic below
    ``2**63`` for blocks up to ``2**32`` rows): deterministic, spread evenly over
    the rows, and blind to a period in their order (every k-th row would pick one
    group of rows that cycle through k groups). The same expression selects a
    LazyFrame's rows (``i % every == offset(i // every)``) and gives a DataFrame's
    positions (numpy), so both choose the same rows.
    """
    return ((block % 2**31) * _WEYL % 2**31) * every // 2**31


def _newton_rows(
    rows: pl.LazyFrame, group: list[str], method: str, weighted: bool
) -> pl.LazyFrame:
    """The rows a Newton pass reads: the used ones and the refused ones (a refused row
    makes the fit raise after its first pass), with the regressors computed."""
    keep = pl.col(_USED) | pl.col(_REFUSED)
    weight = [pl.col(_W)] if weighted else []
    if method == "temperature":
        logs = pl.col(_V).list.eval(pl.element().clip(EPS, 1.0).log())
        return rows.filter(keep).select(
            *group, logs.alias("__logs"),
            logs.list.get(pl.col(_T), null_on_oob=True).alias("__true"),
            *weight, pl.col(_REFUSED),
        )  # fmt: skip
    features = _features(method, pl.col(_P))[:-1]  # the intercept's regressor is 1
    return rows.filter(keep).select(
        *group, *(f.alias(f"__f{i}") for i, f in enumerate(features)), pl.col(_Y),
        *weight, pl.col(_REFUSED),
    )  # fmt: skip


def _newton_fit(
    source: pl.LazyFrame,
    group: list[str],
    spec: _Spec,
    weighted: bool,
    start: pl.DataFrame | None,
    tol: float,
    max_iter: int,
    check: Callable[[pl.DataFrame], None] | None,
    constrained: bool,
    covering: tuple[int, int] | None = None,
) -> tuple[pl.DataFrame, NDArray[np.float64], NDArray[np.int64], list[str | None]]:
    """Newton per group over `source`, each step one aggregation over all groups.

    `covering` is :func:`_key_range` of `source`, when known (the first pass's
    lookup of the start; the later passes' is the groups').

    The first pass, at `start` (a group's ``__start{j}`` columns, fitted on
    ``__sampled`` rows; the identity map for a group it lacks), also counts each
    group's rows and refused rows, and what identifies a fit (its classes, their
    separation) and the sums that do not change between steps; `check` sees those
    counts before any step is taken.
    Returns the first pass's table (one row per group, sorted by `group`), the
    parameters, the passes per group and why a group was not fitted.
    """
    method = spec.method
    logistic = method != "temperature"
    identity = _START[method]
    k = len(identity)
    key_exprs = [pl.col(name) for name in group]
    if start is None or not start.height:
        thetas = [pl.lit(value, pl.Float64) for value in identity]
    else:
        thetas = _per_group(
            key_exprs, start.select(group),
            start.select(f"__start{j}" for j in range(k)).to_numpy(), list(identity), covering,
        )  # fmt: skip
    # From a subsample's start of enough rows a group, the steps are near the maximum:
    # Platt's first pass has no loss (the steps' `_decrease_bound` judges them).
    bounded = method == "platt"
    sampled = start["__sampled"].min() if start is not None and start.height else None
    near = sampled is not None and int(sampled) >= _NEAR_ROWS  # type: ignore[arg-type]
    rows, sums = _pass_sums(
        source, method, thetas, weighted, third=True, loss=not (bounded and near)
    )  # fmt: skip
    counts = [pl.len().alias("__rows"), pl.col(_REFUSED).sum().cast(pl.Int64).alias("refused")]
    if logistic:
        # By group and outcome: the class's extremes are a plain min and max, and its
        # sums give both the group's sums and the positives' (sum w y F = the y = 1 row's).
        by_class = rows.group_by(*group, _Y).agg(
            *counts, *_logistic_checks(k, weighted, bounded), *sums
        )  # fmt: skip
        first = _identified(
            by_class.collect(), group, method, [s.meta.output_name() for s in sums], bounded
        )  # fmt: skip
    else:
        first = rows.group_by(group).agg(*counts, *sums).collect()
    if group == [_G]:
        # The one group exists in empty data too (as a whole-frame statistics table).
        first = pl.DataFrame({_G: [0]}, schema={_G: pl.Int64}).join(first, on=_G, how="left")
    groups = first.sort(group, nulls_last=True).with_columns(
        (pl.col("__rows").fill_null(0) - pl.col("refused").fill_null(0)).cast(pl.Int64)
        .alias("count"),
        pl.col("refused").fill_null(0),
    )  # fmt: skip
    if check is not None:
        check(groups)
    n = groups.height
    reasons = [_precheck(row, spec, logistic) for row in groups.iter_rows(named=True)]
    theta = np.tile(np.array(identity), (n, 1))
    if start is not None and start.height:
        starts = groups.select(group).join(
            start, on=group, how="left", nulls_equal=True, maintain_order="left"
        )
        theta = np.column_stack([
            starts[f"__start{j}"].fill_null(value).to_numpy() for j, value in enumerate(identity)
        ])  # fmt: skip
    todo = np.array([reason is None for reason in reasons], dtype=bool)
    targets = _targets(groups, spec) if logistic else None
    constants = {
        name: groups[name].fill_null(0.0).to_numpy()
        for name in (*(f"f{i}" for i in range(k)), *(f"y{i}" for i in range(k)))
    } if logistic else {}  # fmt: skip

    def terms(
        sums: pl.DataFrame, index: NDArray[np.int64], at: NDArray[np.float64]
    ) -> _Terms:
        if logistic:
            assert targets is not None
            fixed = {name: values[index] for name, values in constants.items()}
            return _logistic_step(sums, fixed, at, targets[index])
        return _temperature_step(sums)

    def evaluate(
        index: NDArray[np.int64], at: NDArray[np.float64], far: bool, loss: bool
    ) -> _Terms:
        # Each row's parameters, looked up among the active groups' (NaN: another group's
        # row, left out; every row's group is active when all are).
        active = groups.select(group)[index]
        thetas = _per_group(key_exprs, active, at, [math.nan] * k, every_key)
        lf = source if len(index) == n else source.filter(thetas[0].is_not_nan())
        step_rows, step_sums = _pass_sums(lf, method, thetas, weighted, third=far, loss=loss)
        sums = step_rows.group_by(group).agg(step_sums).collect()  # one step's sums
        # In the order of `index`; a group without rows gets NaN sums.
        aligned = active.with_row_index(_INDEX).join(
            sums, on=group, how="left", nulls_equal=True
        ).sort(_INDEX).drop(_INDEX, *group).fill_null(math.nan)  # fmt: skip
        return terms(aligned, index, at)

    every_key = _key_range(groups, group)  # every row's group is one of these
    first_terms = terms(groups, np.arange(n), theta)
    constrain = _beta_constraint if method == "beta" and constrained else None
    decrease = _decrease_bound(groups, k) if bounded else None
    theta, iterations, failures = _newton(
        evaluate, theta, todo, tol, max_iter, constrain, first_terms, decrease
    )
    for i, failure in enumerate(failures):
        if failure is not None and reasons[i] is None:
            reasons[i] = failure
    return groups, theta, iterations, reasons


def _moments(k: int) -> list[tuple[int, ...]]:
    """The products of two to four regressors (their indices, the intercept's left
    out) whose weighted sums the first pass keeps for :func:`_decrease_bound`, as
    ``m{indices}``: 3 for Platt, 12 for beta (whose passes keep the loss: those
    sums would cost more than the logarithm they save)."""
    return [c for d in (2, 3, 4) for c in itertools.combinations_with_replacement(range(k - 1), d)]


def _decrease_bound(
    groups: pl.DataFrame, k: int
) -> Callable[[int, NDArray[np.float64], _Terms], float]:
    """An upper bound on the change of a group's logistic loss over a step `s`, from
    the derivatives at the point it reached (a pass without the loss).

    Along the step, ``φ(t) = L(θ - s + t s)`` (``t`` from 0 to 1) and, by Taylor at
    ``t = 1`` with the remainder's largest value,
    ``φ(1) - φ(0) <= φ'(1) - φ''(1) / 2 + φ'''(1) / 6 + max |φ''''| / 24``, or
    ``<= φ'(1) - φ''(1) / 2 + max |φ'''| / 6`` without the third derivatives. Per
    row the loss is ``w (softplus(η) - t η)``, whose derivatives along the step are
    ``w σ^(j-1)(η) δ^j`` with ``δ = s·x``; ``|σ''| <= 1 / (6√3)``, ``|σ'''| <= 1/8``,
    and ``Σ w |δ|³ <= (Σ w δ² Σ w δ⁴)^(1/2)`` (Cauchy-Schwarz). ``Σ w δ²`` and
    ``Σ w δ⁴`` are ``s`` contracted with the moments ``Σ w x⊗x`` and
    ``Σ w x⊗x⊗x⊗x`` (the first pass's sums, :func:`_moments`), plus their rounding
    error. Near the maximum ``φ'(1)`` is of order ``|s|³`` and the bound about
    ``-sᵀ H s / 2``.
    """
    n = groups.height
    # The moment tensor Σ w x_a x_b x_c x_d (the intercept's x is 1) and Σ w x_a x_b.
    fourth = np.empty((k, k, k, k, n))
    for a, b, c, d in itertools.product(range(k), repeat=4):
        factors = sorted(i for i in (a, b, c, d) if i != k - 1)
        name = f"m{''.join(map(str, factors))}" if len(factors) > 1 else (
            f"f{factors[0]}" if factors else f"f{k - 1}"
        )  # fmt: skip
        fourth[a, b, c, d] = groups[name].fill_null(0.0).to_numpy()
    fourth = np.moveaxis(fourth, -1, 0)  # group first
    second = fourth[:, :, :, k - 1, k - 1]
    rounding = 64 * np.finfo(np.float64).eps

    def contracted(tensor: NDArray[np.float64], s: NDArray[np.float64]) -> float:
        """``tensor[s, ..., s]``, at least its value plus its rounding error (>= 0)."""
        value, size = tensor, np.abs(tensor)
        for _ in range(tensor.ndim):
            value, size = value @ s, size @ np.abs(s)
        return max(float(value) + rounding * float(size), 0.0)

    def bound(g: int, s: NDArray[np.float64], terms: _Terms) -> float:
        _, grad, hess, third = terms
        squares, fourths = contracted(second[g], s), contracted(fourth[g], s)  # Σ w δ², δ⁴
        value = float(grad @ s) - 0.5 * float(s @ hess @ s)
        if third is None:
            return value + math.sqrt(squares * fourths) / (36.0 * math.sqrt(3.0))
        cubic = float(np.einsum("ijl,i,j,l->", third, s, s, s))
        return value + cubic / 6.0 + fourths / 192.0

    return bound


def _logistic_checks(k: int, weighted: bool, moments: bool) -> list[pl.Expr]:
    """The first pass's sums per group and outcome that do not change between steps
    (``f{i}``: ``sum w F_i``, the intercept's the weight; ``m{i}{j}...``: the sums of
    ``w`` times two to four other regressors, :func:`_moments`), and the extremes of
    the first regressor (increasing in ``p``) over the rows of positive weight."""
    features = [pl.col(f"__f{i}") for i in range(k - 1)]
    w = pl.col(_W)

    def weighted_by(value: pl.Expr) -> pl.Expr:
        return w * value if weighted else value

    def positive(value: pl.Expr) -> pl.Expr:
        return pl.when(w > 0.0).then(value) if weighted else value

    weight = w.sum() if weighted else pl.len().cast(pl.Float64)
    out = [weight.alias(f"f{k - 1}")]
    out += [weighted_by(f).sum().alias(f"f{i}") for i, f in enumerate(features)]
    for factors in _moments(k) if moments else []:
        product = features[factors[0]]
        for i in factors[1:]:
            product = product * features[i]
        out.append(weighted_by(product).sum().alias(f"m{''.join(map(str, factors))}"))
    f0 = positive(features[0])
    return [*out, f0.min().alias("__low"), f0.max().alias("__high")]


def _identified(
    by_class: pl.DataFrame, group: list[str], method: str, sums: list[str], moments: bool
) -> pl.DataFrame:
    """Per group, from the first pass's rows per (group, outcome): the counts, the
    constant sums (``y{i}``: ``sum w y F_i``; with `moments`, :func:`_moments`'), a
    step's `sums`, the weight, the positives, each class's extremes of the first
    regressor, their extremes over both classes (``__low``, ``__high``) and as
    probabilities (``min_p``, ``max_p``)."""
    k = len(_START[method])
    positive, negative = pl.col(_Y) == 1.0, pl.col(_Y) == 0.0
    low, high = pl.col("__low"), pl.col("__high")
    groups = by_class.group_by(group).agg(
        pl.col("__rows", "refused").sum(),
        *(pl.col(f"f{i}").sum() for i in range(k)),
        *(pl.col(f"f{i}").filter(positive).sum().alias(f"y{i}") for i in range(k)),
        *(pl.col(name).sum() for name in sums),
        *(pl.col(f"m{''.join(map(str, factors))}").sum() for factors in _moments(k) if moments),
        low.filter(positive).min().alias("min_positive"),
        high.filter(positive).max().alias("max_positive"),
        low.filter(negative).min().alias("min_negative"),
        high.filter(negative).max().alias("max_negative"),
    )
    lowest = pl.min_horizontal("min_positive", "min_negative")
    highest = pl.max_horizontal("max_positive", "max_negative")
    # The first regressor back to p (for the message only): logit or ln p.
    def to_p(f: pl.Expr) -> pl.Expr:
        return _sigmoid(f) if method == "platt" else f.exp()

    return groups.with_columns(
        pl.col(f"f{k - 1}").alias("weight"),
        pl.col(f"y{k - 1}").alias("positives"),
        lowest.alias("__low"), highest.alias("__high"),
        to_p(lowest).alias("min_p"), to_p(highest).alias("max_p"),
    )  # fmt: skip


def _precheck(row: dict[str, Any], spec: _Spec, logistic: bool) -> str | None:
    """Why a group cannot be fitted, from its checks' row, or None."""
    count = row["count"]
    if count < spec.min_rows:
        return f"{count} rows, fewer than min_rows={spec.min_rows}"
    if not logistic:
        return None
    weight, positives = row["weight"], row["positives"]
    if not weight > 0.0:
        return "no row of positive weight"
    if positives <= 0.0 or positives >= weight:
        return f"one class only (every outcome is {1 if positives > 0 else 0})"
    if row["__low"] == row["__high"]:
        shown = float(f"{row['min_p']:.12g}")  # p from its regressor, to 12 digits
        return f"not identifiable (every probability is {shown})"
    if not spec.smoothed:
        if row["max_negative"] <= row["min_positive"]:
            return "separated classes (every positive has p at or above every negative)"
        if row["max_positive"] <= row["min_negative"]:
            return "separated classes (every positive has p at or below every negative)"
    return None


def _targets(groups: pl.DataFrame, spec: _Spec) -> NDArray[np.float64]:
    """Per group, the target of a positive and of a negative (1 and 0, or Platt's)."""
    positives = groups["positives"].fill_null(0.0).to_numpy()
    negatives = groups["weight"].fill_null(0.0).to_numpy() - positives
    if spec.smoothed:
        return np.column_stack([(positives + 1.0) / (positives + 2.0), 1.0 / (negatives + 2.0)])
    return np.column_stack([np.ones_like(positives), np.zeros_like(positives)])


def _features(method: str, p: pl.Expr) -> list[pl.Expr]:
    """The regressors of a logistic method, of ``p`` clipped to ``[EPS, 1 - EPS]``."""
    clipped = p.clip(EPS, 1.0 - EPS)
    if method == "platt":
        # One logarithm, not two: ln(p / (1 - p)) is within an ulp or two of
        # ln p - ln(1 - p) (1 - p and the quotient are each rounded once).
        return [(clipped / (1.0 - clipped)).log(), pl.lit(1.0)]
    return [clipped.log(), -((1.0 - clipped).log()), pl.lit(1.0)]


def _linear(coefficients: list[pl.Expr], features: list[pl.Expr]) -> pl.Expr:
    """``Σ c_i f_i + c_k``: the regressors without the intercept's (1, not multiplied);
    the fit's ``η`` and the applied map's ``-η`` (negated coefficients) alike."""
    total = coefficients[-1]
    for c, f in zip(coefficients, features):
        total = c * f + total
    return total


def _sigmoid(eta: pl.Expr) -> pl.Expr:
    return 1.0 / (1.0 + (-eta).exp())


def _pass_sums(
    rows: pl.LazyFrame, method: str, thetas: list[pl.Expr], weighted: bool, third: bool,
    loss: bool = True,
) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """The rows with one Newton step's per-row terms at `thetas`, and their sums (with
    `third`, the third derivatives too, for Chebyshev's correction; without `loss`,
    no loss: a logistic step then judges the step that reached `thetas` by
    :func:`_decrease_bound`)."""
    if method == "temperature":
        return _temperature_sums(rows, thetas[0], weighted)
    return _logistic_sums(rows, thetas, weighted, third, loss)


def _logistic_sums(
    rows: pl.LazyFrame, thetas: list[pl.Expr], weighted: bool, third: bool, loss: bool
) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """Per-row terms of one Newton step, and their sums: softplus, μF, μ(1-μ)FF and
    μ(1-μ)(1-2μ)FFF (weighted; the third derivatives, for Chebyshev's correction).

    ``η = Σ θ_i f_i + θ_k``, clipped below at -700 (``exp(-η)`` overflows below -709;
    there ``μ`` is about 1e-304 and ``softplus(η)`` 0, either way); ``d = 1 + exp(-η)``
    gives ``μ = 1 / d`` and ``softplus(η) = η + ln d`` (one exponential and one
    logarithm per row). The sums of ``w F`` and ``w y F`` do not change between
    steps (:func:`_logistic_checks`, in the first pass only).
    """
    k = len(thetas)
    features = [pl.col(f"__f{i}") for i in range(k - 1)]
    eta = _linear(thetas, features)
    w = pl.col(_W)

    def weighted_by(value: pl.Expr) -> pl.Expr:
        return w * value if weighted else value

    mu = pl.col("__mu")
    softplus = weighted_by(pl.col("__eta") + pl.col("__d").log()).alias("__softplus")
    terms = (
        rows.with_columns(eta.clip(lower_bound=-700.0).alias("__eta"))
        .with_columns((1.0 + (-pl.col("__eta")).exp()).alias("__d"))
        .with_columns((1.0 / pl.col("__d")).alias("__mu"))
        .with_columns(
            *([softplus] if loss else []),
            weighted_by(mu).alias("__wmu"),
            weighted_by(mu * (1.0 - mu)).alias("__wvar"),
        )
    )
    if third:
        terms = terms.with_columns((pl.col("__wvar") * (1.0 - 2.0 * mu)).alias("__wthird"))
    wmu, wvar, wthird = pl.col("__wmu"), pl.col("__wvar"), pl.col("__wthird")

    def times(term: pl.Expr, *indices: int) -> pl.Expr:
        for i in indices:
            term = term if i == k - 1 else term * features[i]  # the intercept's F is 1
        return term

    sums = [pl.col("__softplus").sum().alias("softplus")] if loss else []
    for i in range(k):
        sums.append(times(wmu, i).sum().alias(f"mu{i}"))
        for j in range(i, k):
            sums.append(times(wvar, i, j).sum().alias(f"h{i}{j}"))
            for m in range(j, k) if third else ():
                sums.append(times(wthird, i, j, m).sum().alias(f"t{i}{j}{m}"))
    return terms, sums


def _logistic_step(
    sums: pl.DataFrame,
    fixed: dict[str, NDArray[np.float64]],
    theta: NDArray[np.float64],
    targets: NDArray[np.float64],
) -> _Terms:
    """Loss, gradient and Hessian per group from one step's sums (targets linear in y).

    `fixed` holds the sums that do not change between steps (``f{i}``: ``sum w F_i``,
    ``y{i}``: ``sum w y F_i``), `sums` one step's (``softplus``, ``mu{i}``, ``h{ij}``).
    """
    k = theta.shape[1]
    col = {name: sums[name].to_numpy() for name in sums.columns if name != _INDEX}
    positive, negative = targets[:, :1], targets[:, 1:]
    # sum w t F with t = T+ y + T- (1 - y)
    target_f = np.column_stack(
        [positive[:, 0] * fixed[f"y{i}"] + negative[:, 0] * (fixed[f"f{i}"] - fixed[f"y{i}"])
         for i in range(k)]
    )  # fmt: skip
    loss = (
        col["softplus"] - np.sum(theta * target_f, axis=1) if "softplus" in col
        else np.full(len(theta), np.nan)
    )  # fmt: skip
    grad = np.column_stack([col[f"mu{i}"] for i in range(k)]) - target_f
    hess = np.empty((len(theta), k, k))
    third = np.empty((len(theta), k, k, k))
    for i in range(k):
        for j in range(i, k):
            hess[:, i, j] = hess[:, j, i] = col[f"h{i}{j}"]
            for m in range(j, k) if "t000" in col else ():
                for a, b, c in itertools.permutations((i, j, m)):
                    third[:, a, b, c] = col[f"t{i}{j}{m}"]
    return loss, grad, hess, third if "t000" in col else None


def _temperature_sums(
    rows: pl.LazyFrame, inverse: pl.Expr, weighted: bool
) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """Per-row terms of a Newton step in ``β = 1 / T``, and their sums: loss, gradient, Hessian."""
    logs = pl.col("__logs")
    scaled = logs * inverse
    top = scaled.list.max()
    exps = (scaled - top).list.eval(pl.element().exp())
    w = pl.col(_W) if weighted else pl.lit(1.0)
    terms = rows.with_columns(
        inverse.alias("__beta"), top.alias("__top"), exps.alias("__exps")
    ).with_columns(
        pl.col("__exps").list.sum().alias("__total"),
        (pl.col("__exps") * logs).list.sum().alias("__first"),
        (pl.col("__exps") * logs * logs).list.sum().alias("__second"),
    ).with_columns(
        (pl.col("__first") / pl.col("__total")).alias("__mean"),
    )
    mean, true_log = pl.col("__mean"), pl.col("__true")
    return terms, [
        (w * (pl.col("__top") + pl.col("__total").log() - pl.col("__beta") * true_log))
        .sum().alias("loss"),
        (w * (mean - true_log)).sum().alias("grad"),
        (w * (pl.col("__second") / pl.col("__total") - mean * mean)).sum().alias("hess"),
    ]  # fmt: skip


def _temperature_step(
    sums: pl.DataFrame,
) -> _Terms:
    loss = sums["loss"].to_numpy()
    grad = sums["grad"].to_numpy()[:, None]
    hess = sums["hess"].to_numpy()[:, None, None]
    return loss, grad, hess, None


def _beta_constraint(theta: NDArray[np.float64], free: NDArray[np.bool_]) -> bool:
    """betacal's rule: refit with a = 0 if a < 0, else with b = 0 if b < 0 (once)."""
    if not free.all():
        return False
    for k in (0, 1):
        if theta[k] < 0.0:
            free[k], theta[k] = False, 0.0
            return True
    return False


def _newton(
    evaluate: Callable[[NDArray[np.int64], NDArray[np.float64], bool, bool], _Terms],
    theta: NDArray[np.float64],
    todo: NDArray[np.bool_],
    tol: float,
    max_iter: int,
    constrain: Callable[[NDArray[np.float64], NDArray[np.bool_]], bool] | None,
    first: _Terms | None = None,
    decrease: Callable[[int, NDArray[np.float64], _Terms], float] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64], list[str | None]]:
    """Damped Newton per group; one `evaluate` (one data pass) per step for all groups.

    `first` is the evaluation at `theta` of every group, if already made. A group
    stops after the step that leaves it within ``tol * (1 + max |θ|)`` of the
    maximum (the step is applied): a step that size or smaller, or, after two full
    (undamped) steps ``s'`` then ``s``, a step whose quadratic-convergence
    prediction is that small: Newton's error after a step is ``C |s|²``, with
    ``C ≈ |s| / |s'|²`` observed (the largest of the group's last two such
    ratios), so the rule is ``max(C) |s|² <= tol (1 + max |θ|) / 10`` once
    ``|s'| <= 0.1 (1 + max |θ|)``. Neither rule needs a pass that only confirms.

    A step that raises the loss is halved. With `decrease` (``(group, step,
    terms at the new point) -> bound``: an upper bound on the loss's change from
    the new point's derivatives alone), a pass computes the loss only if some
    group's loss before it is known (as every pass's is when `first` has it) or
    its last step was above ``0.1 (1 + max |θ|)``; a step from a point of unknown
    loss stands when its bound is at most 0 or the Newton decrement ``g H⁻¹ g``
    (the gradient's size in the Hessian's metric, which Newton's steps shrink near
    the maximum) fell, and is otherwise taken again from that point with both
    losses computed. The answer does not depend on these: a group stops only by
    the size of its steps. Without `decrease`, every pass computes the loss.

    The per-group solves are :func:`_steps`.
    """
    n, k = theta.shape
    active = todo.copy()
    free = np.ones((n, k), dtype=bool)
    failures: list[str | None] = [None] * n
    passes = np.zeros(n, dtype=np.int64)
    last_loss = np.full(n, np.inf)
    last_theta = theta.copy()
    step = np.zeros_like(theta)
    halvings = np.zeros(n, dtype=np.int64)
    # The size of the full Newton step that reached the current point (NaN: none),
    # and the largest contraction ratio |s| / |s'|² seen.
    reached = np.full(n, np.nan)
    cubic = np.zeros(n, dtype=bool)  # that step was corrected
    ratio = np.zeros(n)
    orders = np.zeros(n, dtype=np.int64)  # the order of `ratio`
    decrement = np.full(n, np.inf)  # the Newton decrement g H^-1 g where the last step began
    while active.any():
        index = np.flatnonzero(active)
        if first is not None:
            loss, grad, hess = first[0][index], first[1][index], first[2][index]
            third = None if first[3] is None else first[3][index]
            first = None
        else:
            # Third derivatives (Chebyshev) while a group's error, about |s|**3 after a
            # corrected step |s| and |s|**2 after a Newton step, may be above 1e-5.
            sizes = np.max(np.abs(step[index]), axis=1)
            scales = 1.0 + np.max(np.abs(theta[index]), axis=1)
            error = np.where(cubic[index], sizes**3, sizes**2)
            far = bool(np.any(error > _CHEBYSHEV_FROM * scales))
            # The loss (compared exactly) once a group's is known, or after a step that
            # may be far from the maximum; else each step's `decrease` bound judges it.
            exact = decrease is None or bool(
                np.any(~np.isnan(last_loss[index]) | (sizes > 0.1 * scales))
            )  # fmt: skip
            loss, grad, hess, third = evaluate(index, theta[index], far, exact)
        passes[index] += 1
        moves, chebyshev, usable, decrements = _steps(grad, hess, third, free[index])
        for local, g in enumerate(index):
            value = loss[local]
            known = not np.isnan(value)  # NaN: this pass computed no loss
            if (known and not np.isfinite(value)) or not np.all(np.isfinite(grad[local])):
                failures[g], active[g] = "the log-likelihood is not finite", False
                continue
            if np.isinf(last_loss[g]):
                raised = False  # the first point, or a new problem (`constrain`)
            elif known and not np.isnan(last_loss[g]):
                raised = value > last_loss[g] + 1e-12 * abs(last_loss[g])
            else:
                assert decrease is not None
                terms = (loss[local], grad[local], hess[local],
                         None if third is None else third[local])  # fmt: skip
                shown = decrease(int(g), theta[g] - last_theta[g], terms) <= 0.0
                if not shown and not decrements[local] < decrement[g]:
                    # Neither shown to decrease nor nearer the maximum by the Newton
                    # decrement, and the loss it left is unknown: back to that point,
                    # to take the step again with both losses computed.
                    theta[g], last_loss[g], step[g] = last_theta[g], np.inf, 0.0
                    reached[g], cubic[g] = np.nan, False
                    continue
                raised = False
            if raised:
                # The step overshot: halve it (another pass for this group).
                halvings[g] += 1
                reached[g], cubic[g] = np.nan, False
                if halvings[g] > _MAX_STEP_HALVINGS:
                    failures[g] = "no step improves the likelihood (separated classes?)"
                    active[g] = False
                    continue
                step[g] /= 2.0
                theta[g] = last_theta[g] + step[g]
                continue
            halvings[g] = 0
            if not usable[local]:
                failures[g], active[g] = (
                    "not identifiable (the probabilities take too few distinct values, "
                    "or the classes are separated)"
                ), False
                continue
            move, corrected = moves[local], bool(chebyshev[local])
            last_theta[g], last_loss[g], step[g] = theta[g], value, move
            decrement[g] = decrements[local]
            theta[g] = theta[g] + move
            size = float(np.max(np.abs(move)))
            scale = 1.0 + float(np.max(np.abs(theta[g])))
            # The order of convergence: 3 when this step and the one before it were
            # both corrected (Chebyshev), else 2 (Newton).
            order = 3 if corrected and cubic[g] else 2
            before, reached[g], cubic[g] = reached[g], size, corrected
            predicted = np.inf
            if np.isfinite(before) and 0.0 < before <= 0.1 * scale:
                rate = size / before**order  # C in error' = C error**order
                ratio[g] = max(ratio[g], rate) if order == orders[g] else rate
                orders[g] = order
                predicted = ratio[g] * size**order
            if size <= tol * scale or predicted <= tol * scale / _SAFETY:
                if constrain is not None and constrain(theta[g], free[g]):
                    last_loss[g] = np.inf  # a new problem: start its line search afresh
                    reached[g], ratio[g], orders[g] = np.nan, 0.0, 0
                    continue
                active[g] = False
            elif passes[g] >= max_iter or np.max(np.abs(theta[g])) > 1e8:
                failures[g] = (
                    f"did not converge in {passes[g]} Newton steps (separated classes?)"
                )
                active[g] = False
    return theta, passes, failures


def _steps(
    grad: NDArray[np.float64],
    hess: NDArray[np.float64],
    third: NDArray[np.float64] | None,
    free: NDArray[np.bool_],
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_], NDArray[np.float64]]:
    """Per group, its Newton step over its free parameters (0 for the others),
    whether Chebyshev's correction was added, whether its Hessian is usable
    (finite, condition number at most :data:`_MAX_CONDITION`), and its Newton
    decrement ``g H⁻¹ g`` over the free parameters (NaN if unusable).

    Chebyshev's correction ``-H^-1 T[s, s] / 2`` gives cubic convergence near the
    maximum; far from it (a correction above half the step) the step is plain
    Newton. The 1×1 to 3×3 solves are numpy, outside the row path, batched over the
    groups that share their free parameters (a Polars expression has no linear
    solve, and these are a few numbers per group).
    """
    m, k = grad.shape
    moves, corrected = np.zeros((m, k)), np.zeros(m, dtype=bool)
    usable, decrements = np.zeros(m, dtype=bool), np.full(m, np.nan)
    for pattern in np.unique(free, axis=0):
        rows = np.flatnonzero((free == pattern).all(axis=1))
        f = np.flatnonzero(pattern)
        h = hess[np.ix_(rows, f, f)]
        eye = np.eye(len(f))
        with np.errstate(all="ignore"):
            ok = np.asarray(np.isfinite(h).all(axis=(1, 2)), dtype=bool)
            h = np.where(ok[:, None, None], h, eye)  # an unusable one: solved, then dropped
            ok &= np.linalg.cond(h) <= _MAX_CONDITION
            h = np.where(ok[:, None, None], h, eye)
            gradient = grad[np.ix_(rows, f)]
            newton = -np.linalg.solve(h, gradient[..., None])[..., 0]
            decrements[rows] = np.where(ok, -np.sum(gradient * newton, axis=1), np.nan)
            if third is not None:
                tensor = third[np.ix_(rows, f, f, f)]
                pulled = np.einsum("nijl,nj,nl->ni", tensor, newton, newton)
                correction = -0.5 * np.linalg.solve(h, pulled[..., None])[..., 0]
                small = np.max(np.abs(correction), axis=1) <= 0.5 * np.max(np.abs(newton), axis=1)
                newton = np.where(small[:, None], newton + correction, newton)
                corrected[rows] = small
        moves[np.ix_(rows, f)] = newton
        usable[rows] = ok
    return moves, corrected, usable, decrements


def _fit_isotonic(
    rows: pl.LazyFrame, prepared: Prepared, spec: _Spec, keys: list[str]
) -> pl.DataFrame:
    """One aggregation per (group, distinct p), then PAV per group in numpy.

    PAV is a sequential scan over a group's distinct values (pooling adjacent
    blocks): not an aggregation Polars has, on a table no larger than the number
    of distinct probabilities, so numpy, outside the row path.
    """
    group = _keys_or_constant(keys)
    lf = _grouped(rows, keys)
    used = pl.col(_USED)
    # Rows of zero weight carry nothing (scikit-learn drops them).
    kept = used & (pl.col(_W) > 0.0)
    points = (
        lf.group_by(*group, pl.when(kept).then(pl.col(_P)).alias("x"))
        .agg(
            used.sum().cast(pl.Int64).alias("count"),
            pl.col(_REFUSED).sum().cast(pl.Int64).alias("refused"),
            pl.when(kept).then(pl.col(_W)).sum().alias("weight"),
            pl.when(kept).then(pl.col(_W) * pl.col(_Y)).sum().alias("positives"),
        )
        .collect()
    )
    _check_refused(prepared, int(points["refused"].sum()))
    # Each group's distinct values in increasing order (sorted within each group, the
    # groups in parallel: several times faster than one sort of the table by key and x).
    distinct = pl.col("x").filter(pl.col("x").is_not_null())
    per_group = (
        points.lazy()
        .group_by(group)
        .agg(
            pl.col("count").sum(),
            distinct.sort(),
            *(pl.col(n).filter(pl.col("x").is_not_null()).sort_by(distinct)
              for n in ("weight", "positives")),
        )
        .sort(group, nulls_last=True)
        .collect()
    )
    if not keys and not per_group.height:
        # The one group exists in empty data too.
        per_group = pl.DataFrame(
            {_G: [0], "count": [0], "x": [[]], "weight": [[]], "positives": [[]]},
            schema={_G: pl.Int64, "count": pl.Int64, "x": pl.List(pl.Float64),
                    "weight": pl.List(pl.Float64), "positives": pl.List(pl.Float64)},
        )  # fmt: skip
    xs: list[list[float] | None] = []
    ys: list[list[float] | None] = []
    reasons: list[str | None] = []
    # Each group's points as slices of flat arrays (no Python list of them).
    ends = np.cumsum(per_group["x"].list.len().to_numpy())
    flat = {
        name: per_group[name].explode().drop_nulls().cast(pl.Float64).to_numpy()
        for name in ("x", "weight", "positives")
    }  # (an empty list explodes to one null; the values are not null)
    for g, count in enumerate(per_group["count"].to_list()):
        reason = None if count >= spec.min_rows else (
            f"{count} rows, fewer than min_rows={spec.min_rows}"
        )  # fmt: skip
        part = slice(0 if g == 0 else int(ends[g - 1]), int(ends[g]))
        x, weight = flat["x"][part], flat["weight"][part]
        if reason is None and not x.size:
            reason = "no row of positive weight"
        if reason is not None:
            xs.append(None)
            ys.append(None)
        else:
            fitted_x, fitted_y = _isotonic_points(x, flat["positives"][part] / weight, weight)
            xs.append(fitted_x.tolist())
            ys.append(fitted_y.tolist())
        reasons.append(reason)
    return per_group.select(*keys, "count").with_columns(
        pl.Series("x", xs, dtype=pl.List(pl.Float64)),
        pl.Series("y", ys, dtype=pl.List(pl.Float64)),
        pl.lit(None, pl.Int64).alias("iterations"),
        pl.lit(None, pl.String).alias("fallback"),
        pl.Series("reason", reasons, dtype=pl.String),
    )


def _pav(y: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weighted pool-adjacent-violators: the non-decreasing least-squares fit of `y`.

    Adjacent blocks are pooled while the first's mean is at least the next's. The
    fit is the same whatever the order of the pooling, so numpy first pools, in
    rounds, every chain of adjacent blocks of non-increasing means at once (a
    chain's pooled mean stays at least its next block's, so each is a sequence of
    such pools); while a round still removes a tenth of the blocks. The few
    blocks left then go through the sequential scan (a Python loop over blocks).
    """
    sums, weights = y * w, w.astype(np.float64)
    starts = np.arange(len(y))
    while len(starts) > 1:
        means = sums / weights
        joined = means[:-1] >= means[1:]  # block i + 1 pools into block i
        if not joined.any():
            return np.repeat(means, np.diff(np.append(starts, len(y))))
        keep = np.flatnonzero(np.concatenate([[True], ~joined]))
        if len(keep) > 0.9 * len(starts):
            break  # slow progress: the sequential scan
        sums, weights = np.add.reduceat(sums, keep), np.add.reduceat(weights, keep)
        starts = starts[keep]
    return _pav_scan(sums / weights, weights, np.diff(np.append(starts, len(y))))


def _pav_scan(
    y: NDArray[np.float64], w: NDArray[np.float64], sizes: NDArray[np.int64]
) -> NDArray[np.float64]:
    """The sequential pool-adjacent-violators scan of blocks (means `y`, weights `w`,
    `sizes` points each): each point's fitted value."""
    means: list[float] = []
    weights: list[float] = []
    counts: list[int] = []
    for value, weight, size in zip(y.tolist(), w.tolist(), sizes.tolist()):
        means.append(value)
        weights.append(weight)
        counts.append(size)
        while len(means) > 1 and means[-2] >= means[-1]:
            total = weights[-2] + weights[-1]
            means[-2] = (means[-2] * weights[-2] + means[-1] * weights[-1]) / total
            weights[-2] = total
            counts[-2] += counts[-1]
            del means[-1], weights[-1], counts[-1]
    return np.repeat(np.array(means), np.array(counts, dtype=np.int64))


def _pool_close(
    x: NDArray[np.float64], mean: NDArray[np.float64], weight: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Pool sorted distinct values closer than ``1e-15`` to the first of their run."""
    resolution = float(np.finfo(np.float64).resolution)
    if len(x) < 2 or np.min(np.diff(x)) >= resolution:
        return x, mean, weight
    starts = [0]
    for j in range(1, len(x)):
        if x[j] - x[starts[-1]] >= resolution:
            starts.append(j)
    index = np.array(starts)
    totals = np.add.reduceat(weight, index)
    positives = np.add.reduceat(mean * weight, index)
    return x[index], positives / totals, totals


def _isotonic_points(
    x: NDArray[np.float64], mean: NDArray[np.float64], weight: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """scikit-learn's fitted thresholds: PAV, clipped to [0, 1], block interiors dropped.

    As scikit-learn's ``_make_unique``, values less than ``1e-15`` (float64
    resolution) above the first of a run are pooled into it.
    """
    x, mean, weight = _pool_close(x, mean, weight)
    fitted = np.clip(_pav(mean, weight), 0.0, 1.0)
    if len(fitted) > 2:
        keep = np.ones(len(fitted), dtype=bool)
        keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
        return x[keep], fitted[keep]
    return x, fitted


def _fit_histogram(prepared: Prepared, spec: _Spec, keys: list[str]) -> pl.DataFrame:
    """The statistics table (one aggregation): a bin's value is its observed frequency."""
    base = [k for k in keys if k != "class"]
    plan = statistics_query(prepared.lf, prepared.problem, base, spec.binning, ())
    checked = Prepared(prepared.data, prepared.lf, prepared.problem, base, prepared.reduction)
    stats = collect_checked(checked, plan).filter(pl.col("bin").is_not_null())
    group = _keys_or_constant(keys)
    value = pl.when(pl.col("weight") > 0.0).then(pl.col("sum_y") / pl.col("weight"))
    table = (
        _grouped(stats.lazy(), keys)
        .sort([*group, "bin"], nulls_last=True)
        .group_by(group, maintain_order=True)
        .agg(
            pl.col("count").sum().alias("count"),
            pl.col("lower").first().alias("first"),
            pl.col("upper"),
            value.alias("values"),
        )
        .with_columns(pl.concat_list("first", "upper").alias("edges"))
        .collect()
    )
    min_rows = spec.min_rows
    reason = pl.when(pl.col("count") < min_rows).then(
        pl.format("{} rows, fewer than min_rows={}", pl.col("count"), pl.lit(min_rows))
    )
    return table.select(
        *keys,
        pl.col("count").cast(pl.Int64),
        pl.when(reason.is_null()).then(pl.col("edges")).alias("edges"),
        pl.when(reason.is_null()).then(pl.col("values")).alias("values"),
        pl.lit(None, pl.Int64).alias("iterations"),
        pl.lit(None, pl.String).alias("fallback"),
        reason.cast(pl.String).alias("reason"),
    )


def _describe(row: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={row[k]!r}" for k in keys) or "the one group"


def _raise_failures(params: pl.DataFrame, keys: list[str], what: str) -> None:
    failed = params.filter(pl.col("reason").is_not_null())
    if not failed.height:
        return
    shown = [f"{_describe(row, keys)}: {row['reason']}" for row in failed.head(5).iter_rows(named=True)]
    more = f"; and {failed.height - 5} more" if failed.height > 5 else ""
    where = f" in {what}" if what else ""
    msg = (
        f"cannot fit {failed.height} group(s){where} (pass fallback='identity' or "
        f"'global' to keep them): " + "; ".join(shown) + more
    )
    raise CalibrationDataError(msg)


def _identity_row(method: str, binning: Binning) -> dict[str, Any]:
    """The parameters of the map q = p."""
    if method == "platt":
        return {"a": 1.0, "b": 0.0}
    if method == "beta":
        return {"a": 1.0, "b": 1.0, "c": 0.0}
    if method == "temperature":
        return {"temperature": 1.0}
    if method == "isotonic":
        return {"x": [0.0, 1.0], "y": [0.0, 1.0]}
    edges = [k / binning.n_bins for k in range(binning.n_bins + 1)]
    return {"edges": edges, "values": [None] * binning.n_bins}


def _with_fallback(
    params: pl.DataFrame,
    global_params: pl.DataFrame | None,
    keys: list[str],
    spec: _Spec,
    fallback: Fallback | None,
) -> pl.DataFrame:
    """Failed groups get the identity or the global parameters, recorded in ``fallback``."""
    failed = pl.col("reason").is_not_null()
    if fallback is None or not params.filter(failed).height:
        return params
    names = list(_PARAMETERS[spec.method])
    if fallback == "identity":
        identity = _identity_row(spec.method, spec.binning)
        replaced = params.with_columns(
            pl.when(failed).then(pl.lit(pl.Series([identity[n]], dtype=params.schema[n])).first())
            .otherwise(pl.col(n)).alias(n)
            for n in names
        )  # fmt: skip
    else:
        assert global_params is not None
        on = [k for k in keys if k == "class"]
        source = global_params.select(*on, *(pl.col(n).alias(f"__global_{n}") for n in names))
        joined = params.join(source, on=on, how="left") if on else params.join(
            source, how="cross"
        )
        replaced = joined.with_columns(
            pl.when(failed).then(pl.col(f"__global_{n}")).otherwise(pl.col(n)).alias(n)
            for n in names
        ).drop([f"__global_{n}" for n in names])
    return replaced.with_columns(pl.when(failed).then(pl.lit(fallback)).alias("fallback"))


# --------------------------------------------------------------------------
# Applying
# --------------------------------------------------------------------------


_DENSE = 1 << 22  # integer keys spanning up to this many values are looked up in a dense array


def _dense_span(known: pl.Series) -> tuple[int, int] | None:
    """``(low, size)`` of a dense array for the distinct non-null integer keys `known`:
    key ``v`` in slot ``v - low``, with a spare slot at either end (``low`` is the
    smallest key less 1); None if they are not integers or span more than :data:`_DENSE`."""
    if not known.len() or not known.dtype.is_integer():
        return None
    smallest, largest = int(known.min()), int(known.max())  # type: ignore[arg-type]
    if largest - smallest >= _DENSE or smallest <= -(2**63):
        return None
    return smallest - 1, largest - smallest + 3


def _dense_slot(expr: pl.Expr, span: tuple[int, int]) -> pl.Expr:
    """Each row's slot in a dense array of :func:`_dense_span`: a key outside the
    fitted range is clipped onto a spare end slot (one clip, no mask); a null key
    gives null."""
    low, size = span
    return (expr.cast(pl.Int64) - low).clip(0, size - 1)


def _key_range(frame: pl.DataFrame, group: list[str]) -> tuple[int, int] | None:
    """The smallest and largest key of `frame`'s rows, if `group` is one integer key
    without nulls spanning at most :data:`_DENSE` values (else None)."""
    if len(group) != 1 or frame[group[0]].null_count():
        return None
    span = _dense_span(frame[group[0]])
    return None if span is None else (span[0] + 1, span[0] + span[1] - 2)


def _per_group(
    key_exprs: list[pl.Expr], table: pl.DataFrame, columns: NDArray[np.float64],
    default: list[float], covering: tuple[int, int] | None = None,
) -> list[pl.Expr]:
    """Each row's value of column ``j`` of `columns` (one row per row of `table`, its
    key columns) for the row's group; ``default[j]`` for a group not in `table`.

    One integer key without nulls (the usual ``by="model_id"``) looks the values
    up directly: a ``gather`` from a dense array of each column, the defaults in
    its empty slots, by the row's slot (a null key onto a spare slot), so the
    result has no nulls to fill. With `covering` (:func:`_key_range` of the rows
    looked up), the arrays span those keys and the key itself, less the smallest,
    is the slot (no clip, no null). Any other key gathers by the row's
    :func:`_group_index`, then fills the default.
    """
    if len(table.columns) == 1 and not table[:, 0].null_count():
        span = _dense_span(table[:, 0])
        slot, low, size = None, 0, 0
        if covering is not None:
            low, size = covering[0], covering[1] - covering[0] + 1
            slot = key_exprs[0] if low == 0 else key_exprs[0].cast(pl.Int64) - low
        elif span is not None:
            low, size = span
            slot = _dense_slot(key_exprs[0], span).fill_null(0)
        if slot is not None:
            slots = table[:, 0].cast(pl.Int64).to_numpy() - low
            lookups = []
            for j, value in enumerate(default):
                dense = np.full(size, value, dtype=np.float64)
                dense[slots] = columns[:, j]
                lookups.append(pl.lit(pl.Series(dense)).gather(slot))
            return lookups
    code = _group_index(key_exprs, table)
    return [
        _gather(pl.Series(columns[:, j], dtype=pl.Float64), code).fill_null(value)
        for j, value in enumerate(default)
    ]


def _code(expr: pl.Expr, values: pl.Series) -> tuple[pl.Expr, list[int]]:
    """Each row's code among the distinct `values` (null if not among them), and theirs.

    Streaming-friendly lookups only (``replace_strict`` and ``search_sorted`` would
    make Polars' streaming engine fall back to memory for the column): integer keys
    spanning at most :data:`_DENSE` values are a ``gather`` from a dense array
    indexed by ``key - min + 1``, clipped onto the null slot at either end (one
    clip, no mask); any other key is cast to String and then to an
    ``Enum`` of the fitted values' strings (non-strict: another value becomes null),
    whose physical code is the position. A null key has a code of its own when a
    null group was fitted.
    """
    distinct = values.unique(maintain_order=True)
    known = distinct.drop_nulls()
    n = known.len()
    position = {value: i for i, value in enumerate(known.to_list())}
    codes = [n if value is None else position[value] for value in values.to_list()]
    code: pl.Expr
    span = _dense_span(known)
    if not n:
        code = pl.lit(None, pl.Int64)
    elif span is not None:
        low, size = span
        dense: list[int | None] = [None] * size
        for value, i in position.items():
            dense[value - low] = i
        code = pl.lit(pl.Series(dense, dtype=pl.Int64)).gather(_dense_slot(expr, span))
    else:
        labels = known.cast(pl.String).to_list()
        code = expr.cast(pl.String).cast(pl.Enum(labels), strict=False).to_physical()
        code = code.cast(pl.Int64)
    if distinct.null_count():
        code = pl.when(expr.is_null()).then(pl.lit(n, pl.Int64)).otherwise(code)
    return code, codes


def _group_index(key_exprs: list[pl.Expr], table: pl.DataFrame) -> pl.Expr:
    """Each row's position (Int64) among the rows of `table` (its key columns), or null.

    Each key column's code (:func:`_code`), the codes combined into one integer,
    and that integer's code among the fitted rows' combinations: every step is an
    elementwise ``gather`` or cast, so the lookup streams, and its cost per row does
    not grow with the number of groups.
    """
    names = table.columns
    if not names:
        return pl.lit(0, pl.Int64)
    if len(names) == 1:
        code, codes = _code(key_exprs[0], table[names[0]])
        if codes == list(range(table.height)):
            return code  # one key, distinct values: its code is the row's position
    combined: pl.Expr | None = None
    rows = [0] * table.height
    stride = 1
    for expr, name in zip(key_exprs, names):
        code, codes = _code(expr, table[name])
        combined = code * stride if combined is None else combined + code * stride
        rows = [r + c * stride for r, c in zip(rows, codes)]
        stride *= max(codes, default=0) + 1
        if stride > 2**62:
            msg = "too many combinations of key values to look them up"
            raise ValueError(msg)
    assert combined is not None
    index, _ = _code(combined, pl.Series(rows, dtype=pl.Int64))
    return index


def _lookup_table(cal: Calibrator) -> tuple[pl.DataFrame, Callable[[pl.Expr], pl.Expr]]:
    """The rows whose parameters a row may read, and the row's index into them.

    The fitted rows, then the fallback rows: the identity map (one row) or the
    global fit (one row, or one per class). Returns the table and a function of
    the row's class expression (a literal for binary data) giving the index.
    """
    params = cal.params
    keys = cal.keys
    names = list(_PARAMETERS[cal.method])
    fallback = cal.options.get("fallback")
    binning = Binning(cal.options.get("n_bins", 15), cal.options.get("strategy", "uniform"),
                      cal.options.get("closed", "right"))  # fmt: skip
    rows = params.select(names)
    extra: pl.DataFrame | None = None
    if fallback == "identity":
        identity = _identity_row(cal.method, binning)
        extra = pl.DataFrame({n: [identity[n]] for n in names}, schema=rows.schema)
    elif fallback == "global" and cal.global_params is not None:
        extra = cal.global_params.select(names)
    table = rows if extra is None else pl.concat([rows, extra])

    def index(class_expr: pl.Expr) -> pl.Expr:
        by_exprs = [pl.col(k) for k in cal.by]
        exprs = [*by_exprs, *([class_expr] if "class" in keys else [])]
        fitted = _group_index(exprs, params.select(keys))
        if extra is None:
            return fitted
        if fallback == "global" and "class" in keys and cal.global_params is not None:
            other = _group_index([class_expr], cal.global_params.select("class"))
            return fitted.fill_null(other + params.height)
        return fitted.fill_null(pl.lit(params.height, pl.Int64))

    return table, index


def _gather(values: pl.Series, index: pl.Expr) -> pl.Expr:
    return pl.lit(values).gather(index)


def _binary_map(cal: Calibrator, table: pl.DataFrame, g: pl.Expr, p: pl.Expr) -> pl.Expr:
    """The fitted map of each row's group (`g`, an index into `table`) at `p` in [0, 1]."""
    method = cal.method
    if not table.height:
        return pl.lit(None, pl.Float64)  # nothing was fitted: every group is unseen
    if method in ("platt", "beta"):
        # 1 / (1 + exp(-η)) with -η = Σ (-θ_i) f_i + (-θ_k): the parameters negated in
        # the literal tables, the intercept's regressor (1) not multiplied.
        negated = [_gather(-table[n], g) for n in _PARAMETERS[method]]
        minus_eta = _linear(negated, _features(method, p)[:-1])
        return 1.0 / (1.0 + minus_eta.exp())
    if method == "isotonic":
        return _interpolate(table, g, p)
    return _histogram_map(cal, table, g, p)


def _interpolate(table: pl.DataFrame, g: pl.Expr, p: pl.Expr) -> pl.Expr:
    """``np.interp(p, x, y)`` of each row's group (constant beyond its points).

    A group of ``n`` points has ``n + 1`` pieces (before its first point, between
    neighbours, after its last), each ``slope * (p - x0) + y0`` (the ends: slope 0),
    computed in numpy as ``np.interp`` does; the row's piece is its position among
    its group's points (:class:`~polars_calib.binning.GroupedEdges`, one slot per
    group past its points), so one search and three gathers per row.
    """
    xs = [np.asarray(v, dtype=np.float64) for v in table["x"].to_list()]
    ys = [np.asarray(v, dtype=np.float64) for v in table["y"].to_list()]
    slopes, lefts, values = [], [], []
    for x, y in zip(xs, ys):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            inner = (y[1:] - y[:-1]) / (x[1:] - x[:-1])
        slopes.append(np.concatenate([[0.0], inner, [0.0]]))
        lefts.append(np.concatenate([[0.0], x[:-1], [0.0]]))
        values.append(np.concatenate([y[:1], y[:-1], y[-1:]]))
    edges = GroupedEdges([x.tolist() for x in xs], sentinel=True)
    piece = edges.position(g, p, strict=False)
    slope, left, value = (
        _gather(pl.Series(np.concatenate(part), dtype=pl.Float64), piece)
        for part in (slopes, lefts, values)
    )
    # At a point itself, its value (as np.interp: an infinite slope must not give NaN).
    return pl.when(p == left).then(value).otherwise(slope * (p - left) + value)


def _histogram_map(cal: Calibrator, table: pl.DataFrame, g: pl.Expr, p: pl.Expr) -> pl.Expr:
    """The observed frequency of the row's bin; an empty bin leaves `p` unchanged."""
    n_bins = int(cal.options["n_bins"])
    closed = cast(Closed, cal.options["closed"])
    values = table["values"].explode()
    if cal.options["strategy"] == "uniform":
        bins = Binning(n_bins, "uniform", closed).index(p).cast(pl.Int64)
    else:
        inner = GroupedEdges([edges[1:-1] for edges in table["edges"].to_list()])
        bins = edge_bins(g, p, inner, n_bins, closed)
    return pl.when(g.is_not_null()).then(pl.coalesce(_gather(values, g * n_bins + bins), p))


def _apply(cal: Calibrator, prob: IntoExpr) -> pl.Expr:
    table, index = _lookup_table(cal)
    if cal.method == "temperature":
        return _apply_temperature(cal, table, index, prob)
    if cal.reduction is None:
        problem = binary_problem(prob, pl.lit(0))
        p = problem.prob
        g = index(pl.lit(None, pl.Int32))
        if cal.method in ("platt", "beta"):
            # A refused p gets a null group index, so null parameters: the map's
            # arithmetic keeps it null (p itself unmasked, computed once when shared).
            return _binary_map(cal, table, pl.when(~problem.refused).then(g), p)
        valid = p.is_not_null() & ~problem.refused.fill_null(False)
        return pl.when(valid).then(_binary_map(cal, table, g, p))
    sum_tol = float(cal.options.get("sum_tol", SUM_TOLERANCE))
    if cal.reduction in ("top_label", "confidence"):
        problem = vector_problem(prob, pl.lit(0), None, sum_tol, "top_label")
        assert problem.key is not None
        g = index(problem.key.cast(pl.Int32))
        mapped = _binary_map(cal, table, g, problem.prob)
        valid = problem.prob.is_not_null() & ~problem.refused.fill_null(False)
        return pl.when(valid).then(mapped)
    # One-vs-rest: each class's map on its entry, renormalised (uniform if all are 0).
    n_classes = int(cal.options["n_classes"])
    vectors, _, _, refused, _ = vector_checks(prob, pl.lit(0), None, sum_tol)
    entries = []
    for j in range(n_classes):
        g = index(pl.lit(j, pl.Int32))
        entries.append(_binary_map(cal, table, g, vectors.list.get(j, null_on_oob=True)))
    mapped = pl.concat_list(entries)
    total = mapped.list.sum()
    uniform = pl.concat_list([pl.lit(1.0 / n_classes)] * n_classes)
    ok = ~refused.fill_null(False) & (vectors.list.len() == n_classes)
    ok = ok & pl.all_horizontal([e.is_not_null() for e in entries])
    return pl.when(ok & (total > 0.0)).then(mapped / total).when(ok).then(uniform)


def _apply_temperature(
    cal: Calibrator, table: pl.DataFrame, index: Callable[[pl.Expr], pl.Expr], prob: IntoExpr
) -> pl.Expr:
    sum_tol = float(cal.options.get("sum_tol", SUM_TOLERANCE))
    vectors, _, _, refused, _ = vector_checks(prob, pl.lit(0), None, sum_tol)
    inverse = 1.0 / _gather(table["temperature"], index(pl.lit(None, pl.Int32)))
    scaled = vectors.list.eval(pl.element().clip(EPS, 1.0).log()) * inverse
    exps = (scaled - scaled.list.max()).list.eval(pl.element().exp())
    return pl.when(~refused.fill_null(False) & inverse.is_not_null()).then(
        exps / exps.list.sum()
    )


# --------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------


def _evaluate(
    cal: Calibrator,
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    weight: str | None,
    n_bins: int,
    strategy: Strategy,
    closed: Closed,
    confidence: float,
) -> Evaluation:
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    keys = list(cal.by)
    lf = data.lazy()
    extra = [weight] if weight is not None else []
    stage = pl.Enum(["before", "after"])
    after = cal.expr(prob)
    sum_tol = float(cal.options.get("sum_tol", SUM_TOLERANCE))
    if cal.reduction in ("top_label", "confidence"):
        problem = vector_problem(prob, label, None, sum_tol, "confidence")
        # A refused vector becomes a NaN probability, which the binary rule refuses.
        bad = problem.refused.fill_null(False)
        before_p = pl.when(bad).then(float("nan")).otherwise(problem.prob)
        after_p = pl.when(bad).then(float("nan")).otherwise(after)
        y: pl.Expr = problem.label
        pos_label = None
    elif cal.method == "temperature" or cal.reduction == "classwise":
        before_p = pl.col(prob).cast(pl.List(pl.Float64))
        after_p, y, pos_label = after, pl.col(label), None
    else:
        before_p, after_p, y = pl.col(prob), after, pl.col(label)
        pos_label = cal.options.get("pos_label")
    stacked = pl.concat([
        lf.select(*keys, before_p.alias(prob), y.alias(label), *extra,
                  pl.lit("before", stage).alias("stage")),
        lf.select(*keys, after_p.alias(prob), y.alias(label), *extra,
                  pl.lit("after", stage).alias("stage")),
    ], how="vertical_relaxed")  # fmt: skip
    group = [*keys, "stage"]
    options: dict[str, Any] = {
        "by": group, "n_bins": n_bins, "strategy": strategy, "closed": closed,
        "weight": weight, "pos_label": pos_label, "metrics": ["ece", "brier", "log_loss"],
    }  # fmt: skip
    if isinstance(data, pl.DataFrame):
        # Eager: refused rows raise, naming them.
        table = bin_statistics(stacked.collect(), prob, label, **options)
    else:
        table = bin_statistics(stacked, prob, label, **options).collect()
    metrics = metrics_from_statistics(table, by=group, metrics=["ece", "brier", "log_loss"])
    reliability = reliability_from_statistics(table, by=group, confidence=confidence)
    return Evaluation(metrics, reliability, tuple(keys))


# --------------------------------------------------------------------------
# Saving and loading
# --------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        msg = f"cannot save a non-finite parameter: {value!r}"
        raise ValueError(msg)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def _frame_to_json(frame: pl.DataFrame) -> dict[str, Any]:
    """Column dtypes and rows; temporal values as their integers (exact)."""
    physical = frame.with_columns(
        pl.col(name).to_physical() for name, dtype in frame.schema.items() if dtype.is_temporal()
    )
    return {
        "columns": {name: str(dtype) for name, dtype in frame.schema.items()},
        "rows": [
            {k: _json_value(v) for k, v in row.items()} for row in physical.iter_rows(named=True)
        ],
    }


_SIMPLE = {
    name: getattr(pl, name)
    for name in (
        "Boolean", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
        "Float32", "Float64", "String", "Date", "Time", "Categorical", "Null",
    )
}  # fmt: skip


def _parse_dtype(text: str) -> pl.DataType:
    """A dtype from its ``str``: the simple ones, ``List(...)``, ``Datetime``/``Duration``, ``Enum``."""
    text = text.strip()
    if text in _SIMPLE:
        return cast(pl.DataType, _SIMPLE[text]())
    match = re.fullmatch(r"(\w+)\((.*)\)", text)
    if match:
        name, inner = match.groups()
        if name in _SIMPLE:  # e.g. Categorical(ordering=...)
            return cast(pl.DataType, _SIMPLE[name]())
        if name == "List":
            return pl.List(_parse_dtype(inner))
        options = {
            key.strip(): ast.literal_eval(value.strip())
            for key, value in (
                part.split("=", 1) for part in re.split(r",\s*(?=\w+=)", inner) if part
            )
        }
        if name == "Datetime":
            return pl.Datetime(options.get("time_unit", "us"), options.get("time_zone"))
        if name == "Duration":
            return pl.Duration(options.get("time_unit", "us"))
        if name == "Enum":
            return pl.Enum(options["categories"])
    msg = f"cannot read a column of dtype {text!r} from a saved calibrator"
    raise CalibrationDataError(msg)


def _frame_from_json(content: dict[str, Any]) -> pl.DataFrame:
    dtypes = {name: _parse_dtype(text) for name, text in content["columns"].items()}
    rows = content["rows"]
    columns = {}
    for name, dtype in dtypes.items():
        values = [row[name] for row in rows]
        if dtype.is_temporal():
            physical = pl.Series(name, values, dtype=pl.Int32 if dtype == pl.Date else pl.Int64)
            columns[name] = physical.cast(dtype)
        else:
            columns[name] = pl.Series(name, values, dtype=dtype)
    return pl.DataFrame(list(columns.values())) if columns else pl.DataFrame()


def load_calibrator(path: str | Path) -> Calibrator:
    """Read a calibrator written by ``Calibrator.save``.

    The file is JSON: ``format`` (``"polars_calib.calibrator"``),
    ``format_version``, ``package_version`` (of the writer), ``method``,
    ``reduction``, ``by``, ``options``, ``schema`` (the input dtypes at fit time),
    ``params`` and ``global_params`` (each ``columns``: name to dtype, and
    ``rows``). Floats are written with Python's shortest round-trip repr, so the
    parameters are read back bit for bit; Date and Datetime keys as their
    integers.

    Raises
    ------
    CalibrationDataError
        Not a calibrator file, a newer format version, an unknown method, or
        parameter columns that do not match the method.

    See Also
    --------
    fit_calibrator

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> train = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8] * 3, "y": [0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1]})
    >>> cal = pc.fit_calibrator(train, "p", "y", method="beta")
    >>> path = cal.save(pathlib.Path(tempfile.mkdtemp()) / "beta.json")
    >>> pc.load_calibrator(path).params.equals(cal.params)
    True
    """
    try:
        content = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        msg = f"{str(path)!r} is not a calibrator file: {error}"
        raise CalibrationDataError(msg) from error
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        msg = f"{str(path)!r} is not a calibrator file (no format {FORMAT!r})"
        raise CalibrationDataError(msg)
    version = content.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        msg = (
            f"{str(path)!r} has format version {version!r}; this polars_calib reads "
            f"up to {FORMAT_VERSION}"
        )
        raise CalibrationDataError(msg)
    method = content.get("method")
    if method not in CALIBRATION_METHODS:
        msg = f"{str(path)!r}: unknown method {method!r}"
        raise CalibrationDataError(msg)
    reduction, by = content.get("reduction"), content.get("by")
    if reduction not in (None, *REDUCTIONS) or not isinstance(by, list) or not all(
        isinstance(name, str) for name in by
    ):
        msg = f"{str(path)!r}: unknown reduction {reduction!r} or keys {by!r}"
        raise CalibrationDataError(msg)
    params = _frame_from_json(content["params"])
    missing = [n for n in _PARAMETERS[method] if n not in params.columns]
    missing += [n for n in content["by"] if n not in params.columns]
    if missing:
        msg = f"{str(path)!r}: the parameters lack the column(s) {missing}"
        raise CalibrationDataError(msg)
    global_content = content.get("global_params")
    return Calibrator(
        method=method,
        reduction=reduction,
        by=tuple(by),
        params=params,
        global_params=None if global_content is None else _frame_from_json(global_content),
        options=dict(content.get("options", {})),
        schema=dict(content.get("schema", {})),
    )
