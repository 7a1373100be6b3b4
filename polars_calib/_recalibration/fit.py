"""Fitting a calibrator: the arguments checked, the problem's rows, one fit per method.

:func:`fit_calibrator` checks its arguments, prepares the problem (the rows used and
the one refused rule) and hands its rows to the method's fit: Newton steps
(:mod:`~polars_calib._recalibration.newton`), isotonic regression
(:mod:`~polars_calib._recalibration.isotonic`) or histogram binning
(:mod:`~polars_calib._recalibration.histogram`); then the groups that could not be
fitted raise or get their fallback.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import polars as pl

from polars_calib._core.binning import Binning
from polars_calib._core.exprs import GroupKeys, Keys
from polars_calib._core.options import (
    CALIBRATION_METHODS,
    CLOSED,
    FALLBACKS,
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
from polars_calib._core.problem import EPS
from polars_calib._core.validation import CalibrationDataError, is_vector
from polars_calib._recalibration.calibrator import Calibrator
from polars_calib._recalibration.histogram import fit_histogram
from polars_calib._recalibration.isotonic import fit_isotonic
from polars_calib._recalibration.maps import PARAMETERS, identity_params
from polars_calib._recalibration.newton import SAMPLE_ROWS, RowsOf, fit_newton
from polars_calib._recalibration.rows import FitSpec, problem_rows
from polars_calib._table.plan import Prepared, prepare

__all__ = ["fit_calibrator"]

# Columns of `params` (with the method's parameters) and of an evaluation: not key names.
_RESERVED = {"count", "iterations", "fallback", "reason", "stage"}


def fit_calibrator(
    data: pl.DataFrame | pl.LazyFrame,
    prob: str,
    label: str,
    *,
    method: CalibrationMethod = "platt",
    by: Keys = None,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    closed: Closed = "right",
    weight: str | None = None,
    reduction: Reduction | None = None,
    smoothed: bool = False,
    fallback: Fallback | None = None,
    min_rows: int = 10,
    max_iter: int = 50,
    tol: float = 1e-8,
    sum_tol: float = SUM_TOLERANCE,
    pos_label: Any = None,
    sample_rows: int | None = SAMPLE_ROWS,
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
        `smoothed`, Platt's targets), ``p`` clipped to ``[eps, 1 - eps]`` (see
        Notes). ``"sigmoid"``: ``q = sigmoid(a p + b)``, the same fit on the score
        ``p`` itself, unclipped (scikit-learn's ``method="sigmoid"`` on a
        classifier's probabilities, with `smoothed`); no identity map, so no
        ``fallback="identity"``. ``"beta"``: ``q = sigmoid(a ln p - b ln(1 - p)
        + c)`` (Kull et al.'s "abm"). ``"isotonic"``: the non-decreasing
        least-squares fit (pool-adjacent-violators), applied by linear
        interpolation between its points, constant beyond them. ``"histogram"``:
        the observed frequency of each of the package's bins (`n_bins`,
        `strategy`, `closed`). ``"temperature"`` (vectors only):
        ``q = softmax(ln p / T)``, maximum likelihood ``T > 0``.
    by
        Group keys, column names or expressions (``pl.col("ts").dt.year()``): one
        map per group; the calibrator computes the expressions again on the data
        it calibrates. ``None``: one map.
    weight
        Optional column of non-negative sample weights.
    reduction
        Probability vectors with a binary method: ``"top_label"`` (the default:
        per predicted class, the method fitted on the largest probability
        against whether it is right; Gupta & Ramdas), ``"confidence"`` (the same,
        one map for all classes) or ``"classwise"`` (one-vs-rest: per class ``j``,
        ``p_j`` against ``label == j``; applied vectors are renormalised to sum 1).
    smoothed
        Platt and sigmoid only: fit Platt's targets ``(N+ + 1) / (N+ + 2)`` and
        ``1 / (N- + 2)`` instead of 1 and 0 (as scikit-learn's ``method="sigmoid"``).
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
    sample_rows
        Platt, sigmoid, beta and temperature: data of at least ``4 * sample_rows`` rows
        first fit a subsample of about `sample_rows` rows, whose fit starts the
        full-data Newton steps (None: every fit starts at the identity map). The
        answer is the same either way, to `tol`; the subsample saves passes over
        large data.

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
    plans). Platt, sigmoid, beta and temperature: one aggregation per Newton step, the first
    of which also counts, checks and identifies every group (rows used and refused,
    classes, separation); data of at least ``4 * sample_rows`` rows (800,000 by
    default) first select a subsample of about `sample_rows` (in each block of
    ``k = n // sample_rows`` rows by position, the row at the offset
    ``floor(k u_j)``, ``u_j`` the package's counter-based uniform of block ``j``:
    deterministic, spread evenly, the same rows for a DataFrame and a LazyFrame)
    and fit it in memory, which starts the full-data steps near the maximum
    (usually two of them then suffice). Isotonic:
    one aggregation; histogram: the statistics table. A DataFrame's problem columns
    are computed once for all passes; a LazyFrame is read again at each pass (and
    once to count its rows, and once for the subsample when large;
    ``pl.Config.set_engine_affinity("streaming")`` streams them).

    **Clipping.** The logistic methods read ``p`` clipped to ``[eps, 1 - eps]``
    with ``eps = 2.22e-16`` (float64 machine epsilon, as ``betacal`` and
    scikit-learn's log-loss), before ``logit`` or ``ln``; temperature scaling
    clips each entry of the vector the same way before ``ln``. A score of exactly
    0 or 1 becomes ``logit = ±36``: when more than 5% of a group's rows are clipped,
    a Platt or beta fit warns (:class:`~polars_calib.ClippedScoresWarning`);
    ``method="sigmoid"`` reads the score unclipped, as scikit-learn's sigmoid
    method does.

    **Platt / sigmoid / beta.** Newton's method on the weighted log-likelihood,
    started at the subsample's fit (or the identity map, ``a = 1, b = 0``; ``a = b =
    1, c = 0``; for the sigmoid of the score, which has none, ``a = b = 0``; for
    small data or a group the subsample could not fit), halving a step
    that lowers the likelihood; each step is one aggregation over all groups (the
    data are read once per step; every pass sums the log-likelihood, which judges
    the step that reached it), then a 2×2 / 3×3 solve per group in numpy. While
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
    apart too, as its ``_make_unique``), rows of zero weight dropped, PAV, then
    the points inside a constant block removed except its ends; a new ``p`` gets
    ``np.interp`` between the points (the first and last values beyond them).

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
    group = _check_arguments(
        method,
        by,
        fallback,
        n_bins,
        strategy,
        closed,
        smoothed,
        min_rows,
        max_iter,
        tol,
        sample_rows,
    )
    keys = group.names
    check_sum_tol(sum_tol)
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        msg = f"`data` must be a polars DataFrame or LazyFrame, got {type(data).__name__}"
        raise TypeError(msg)
    schema = data.collect_schema()
    vectors = isinstance(prob, str) and prob in schema and is_vector(schema[prob])
    used = _problem_reduction(method, reduction, vectors)
    prepared = prepare(
        data,
        prob,
        label,
        by=by,
        weight=weight,
        reduction=used,
        sum_tol=sum_tol,
        pos_label=pos_label,
        reserved=frozenset({*_RESERVED, *PARAMETERS[method]}),
    )
    kept_reduction = None if method == "temperature" else used
    spec = FitSpec(
        method=method,
        reduction=kept_reduction,
        smoothed=smoothed,
        binning=Binning(n_bins, strategy, closed),
        min_rows=min_rows,
        max_iter=max_iter,
        tol=float(tol),
        sample_rows=sample_rows,
    )

    def rows(lf: pl.LazyFrame) -> pl.LazyFrame:  # the problem's rows of `lf` (checked data)
        return problem_rows(replace(prepared, lf=lf), spec, prob, label, weight, sum_tol)

    group_keys = [*keys, *(["class"] if kept_reduction in ("top_label", "classwise") else [])]
    params, global_params = _fit_all(rows, prepared, spec, group_keys, fallback)
    n_classes = None
    if kept_reduction == "classwise" and params.height:
        n_classes = int(cast(int, params["class"].max())) + 1
    options = {
        "smoothed": smoothed,
        "n_bins": n_bins,
        "strategy": strategy,
        "closed": closed,
        "fallback": fallback,
        "min_rows": min_rows,
        "sum_tol": float(sum_tol),
        "pos_label": pos_label,
        "n_classes": n_classes,
        "eps": EPS,
    }
    fitted = prepared.lf.collect_schema()
    kinds = {prob: str(schema[prob]), **{name: str(fitted[name]) for name in keys}}
    computed = {expr.meta.output_name(): expr for expr in group.computed()}
    return Calibrator(
        method, kept_reduction, tuple(keys), params, global_params, options, kinds, computed
    )


def _check_arguments(
    method: object,
    by: Keys,
    fallback: object,
    n_bins: object,
    strategy: object,
    closed: object,
    smoothed: object,
    min_rows: object,
    max_iter: object,
    tol: object,
    sample_rows: object,
) -> GroupKeys:
    """Check the options of :func:`fit_calibrator` (no data read); return the keys."""
    check_choice("method", method, CALIBRATION_METHODS)
    keys = GroupKeys(by)
    if fallback is not None:
        check_choice("fallback", fallback, FALLBACKS)
    check_n_bins(n_bins)
    check_choice("strategy", strategy, STRATEGIES)
    check_choice("closed", closed, CLOSED)
    if not isinstance(smoothed, bool):
        msg = f"`smoothed` must be a bool, got {type(smoothed).__name__}"
        raise TypeError(msg)
    if smoothed and method not in ("platt", "sigmoid"):
        msg = f"`smoothed` is an option of method='platt' or 'sigmoid', got method={method!r}"
        raise ValueError(msg)
    if method == "sigmoid" and fallback == "identity":
        msg = "method='sigmoid' has no identity map: use fallback='global' (or method='platt')"
        raise ValueError(msg)
    counts = [("min_rows", min_rows), ("max_iter", max_iter)]
    if sample_rows is not None:
        counts.append(("sample_rows", sample_rows))
    for argument, value in counts:
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"`{argument}` must be a positive int, got {type(value).__name__} {value!r}"
            raise TypeError(msg)
        if value < 1:
            msg = f"`{argument}` must be a positive int, got {value!r}"
            raise ValueError(msg)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)):
        msg = f"`tol` must be a number in (0, 1), got {type(tol).__name__} {tol!r}"
        raise TypeError(msg)
    if not 0 < tol < 1:
        msg = f"`tol` must be a number in (0, 1), got {tol!r}"
        raise ValueError(msg)
    return keys


def _problem_reduction(method: str, reduction: Reduction | None, vectors: bool) -> Reduction | None:
    """Return the reduction of the problem a fit reads (None: binary data)."""
    if method == "temperature":
        if reduction is not None:
            msg = "temperature scaling calibrates whole vectors: give no `reduction`"
            raise ValueError(msg)
        return "confidence"  # the vector checks of `prepare`
    if vectors or reduction is not None:
        return reduction or "top_label"
    return None


def _fit_all(
    rows: RowsOf, prepared: Prepared, spec: FitSpec, keys: list[str], fallback: Fallback | None
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """Fit every group, and the global fit with ``fallback="global"``; apply the fallback.

    Returns ``params`` and ``global_params``; without `fallback`, a group that
    cannot be fitted raises.
    """
    params = _fit(rows, prepared, spec, keys)
    global_params = None
    if fallback == "global":
        global_keys = [k for k in keys if k == "class"]
        global_params = _fit(rows, prepared, spec, global_keys)
        _raise_failures(global_params, global_keys, "the global fit (all rows)")
    failed = params.filter(pl.col("reason").is_not_null())
    if failed.height and fallback is None:
        _raise_failures(params, keys, "")
    return _with_fallback(params, global_params, keys, spec, fallback), global_params


def _fit(rows: RowsOf, prepared: Prepared, spec: FitSpec, keys: list[str]) -> pl.DataFrame:
    """Return the parameters per group of `keys`: keys, count, parameters, iterations, reason.

    `rows` gives the problem's rows of ``prepared.lf`` or of a frame of its rows
    (a subsample's).
    """
    if spec.method == "histogram":
        return fit_histogram(prepared, spec, keys)
    if spec.method == "isotonic":
        return fit_isotonic(rows(prepared.lf), prepared, spec, keys)
    return fit_newton(rows, prepared, spec, keys)


def _describe(row: dict[str, Any], keys: list[str]) -> str:
    """Return a group's name for a message: its keys and values."""
    return ", ".join(f"{k}={row[k]!r}" for k in keys) or "the one group"


def _raise_failures(params: pl.DataFrame, keys: list[str], what: str) -> None:
    """Raise for the groups of `params` that were not fitted, naming them and why."""
    failed = params.filter(pl.col("reason").is_not_null())
    if not failed.height:
        return
    shown = [
        f"{_describe(row, keys)}: {row['reason']}" for row in failed.head(5).iter_rows(named=True)
    ]
    more = f"; and {failed.height - 5} more" if failed.height > 5 else ""
    where = f" in {what}" if what else ""
    msg = (
        f"cannot fit {failed.height} group(s){where} (pass fallback='identity' or "
        f"'global' to keep them): " + "; ".join(shown) + more
    )
    raise CalibrationDataError(msg)


def _with_fallback(
    params: pl.DataFrame,
    global_params: pl.DataFrame | None,
    keys: list[str],
    spec: FitSpec,
    fallback: Fallback | None,
) -> pl.DataFrame:
    """Return `params` with failed groups given the identity or the global parameters.

    The ``fallback`` column records which.
    """
    failed = pl.col("reason").is_not_null()
    if fallback is None or not params.filter(failed).height:
        return params
    names = list(PARAMETERS[spec.method])
    if fallback == "identity":
        identity = identity_params(spec.method, spec.binning)
        replaced = params.with_columns(
            pl.when(failed)
            .then(pl.lit(pl.Series([identity[n]], dtype=params.schema[n])).first())
            .otherwise(pl.col(n))
            .alias(n)
            for n in names
        )
    else:
        assert global_params is not None
        on = [k for k in keys if k == "class"]
        source = global_params.select(*on, *(pl.col(n).alias(f"__global_{n}") for n in names))
        joined = params.join(source, on=on, how="left") if on else params.join(source, how="cross")
        replaced = joined.with_columns(
            pl.when(failed).then(pl.col(f"__global_{n}")).otherwise(pl.col(n)).alias(n)
            for n in names
        ).drop([f"__global_{n}" for n in names])
    return replaced.with_columns(pl.when(failed).then(pl.lit(fallback)).alias("fallback"))
