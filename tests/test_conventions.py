"""One spelling per choice: every public callable follows the package's conventions.

The test inspects every function of ``pc.__all__``, the public methods of
``pc.Calibrator`` and ``pc.Audit``, and those of the ``.calib`` namespaces on
expressions and frames, and asserts (one test per callable, so a failure names it):

* a parameter named ``by``, ``weight``, ``n_bins``, ``strategy``, ``closed``,
  ``pos_label``, ``compat``, ``confidence``, ``n_resamples`` or ``seed`` has the one
  agreed annotation and default (:data:`AGREED`; the few exceptions are listed, with
  why, in :data:`EXCEPTIONS`), and is keyword-only;
* the positional parameters are the data and column arguments (:data:`DATA`):
  every option is keyword-only;
* the options shared by frame functions come in one order (:data:`ORDER`);
* the docstring has an ``Examples`` section with a ``>>>`` line (the doctests run
  in the suite, so the examples run).

The rest of the file tests the old spellings, which keep working for one release
with a ``DeprecationWarning`` (see ``polars_calib/_core/deprecation.py``).
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import make_log
from polars_calib import _namespaces
from polars_calib._metrics import namespace

_EMPTY = inspect.Parameter.empty

AGREED: dict[str, tuple[set[str], set[object]]] = {
    # parameter: (accepted annotations, accepted defaults)
    "by": ({"Keys"}, {None}),
    # Expressions (returning ``pl.Expr``) take a column or an expression; frame
    # functions a column name.
    "weight": ({"IntoExpr | None", "str | None"}, {None}),
    "n_bins": ({"int"}, {15}),
    # The levels j / (n_levels - 1) of a regression calibration curve (uncertainty-toolbox's 100).
    "n_levels": ({"int"}, {100}),
    "strategy": ({"Strategy"}, {"uniform"}),
    "closed": ({"Closed"}, {"right"}),
    "pos_label": ({"Any"}, {None}),
    "compat": ({"Compat | None"}, {None}),
    "confidence": ({"float"}, {0.95}),
    # The number of bootstrap replicates; None: no resampled intervals. Its default
    # is each function's: the audit's forest plot wants intervals, a summary does not.
    "n_resamples": ({"int | None"}, {None, 1000}),
    "seed": ({"int"}, {0}),
    # The nominal coverage of a prediction interval, in (0, 1): no default (the
    # intervals' own level, which only the user knows).
    "level": ({"float"}, {_EMPTY}),
}
"""The one annotation and default of each conventional parameter."""

EXCEPTIONS: dict[tuple[str, str], tuple[str, object]] = {
    # The audit needs keys: `by` has no default.
    ("audit", "by"): ("Keys", _EMPTY),
    ("Audit.worst", "by"): ("Keys", _EMPTY),
    # Hosmer-Lemeshow's test is defined on deciles of risk.
    ("hosmer_lemeshow", "n_bins"): ("int", 10),
    ("hosmer_lemeshow", "strategy"): ("Strategy", "quantile"),
    ("hosmer_lemeshow_p", "n_bins"): ("int", 10),
    ("hosmer_lemeshow_p", "strategy"): ("Strategy", "quantile"),
    ("ExprCalibNamespace.hosmer_lemeshow", "n_bins"): ("int", 10),
    ("ExprCalibNamespace.hosmer_lemeshow", "strategy"): ("Strategy", "quantile"),
    ("ExprCalibNamespace.hosmer_lemeshow_p", "n_bins"): ("int", 10),
    ("ExprCalibNamespace.hosmer_lemeshow_p", "strategy"): ("Strategy", "quantile"),
    # The loss split also bins each distinct value of p (strategy="unique").
    ("calibration_loss", "strategy"): ("LossStrategy", "uniform"),
    ("refinement_loss", "strategy"): ("LossStrategy", "uniform"),
    ("ExprCalibNamespace.calibration_loss", "strategy"): ("LossStrategy", "uniform"),
    ("ExprCalibNamespace.refinement_loss", "strategy"): ("LossStrategy", "uniform"),
    # Until 0.3.0, `confidence` given alone still asks for intervals (deprecated): its
    # default None, meaning 0.95, tells "not given" apart.
    ("summary", "confidence"): ("float | None", None),
    # A statistics table holds its replicates already and its schema cannot tell
    # bootstrap ones from consistency ones: `confidence` asks for the intervals.
    ("metrics_from_statistics", "confidence"): ("float | None", None),
    # `resampling` asks for the table's replicates; `n_resamples` is their number.
    ("bin_statistics", "n_resamples"): ("int", 1000),
    # A finisher's grid is the table's: read from a DataFrame, given for a LazyFrame.
    ("regression_metrics_from_statistics", "n_levels"): ("int | None", None),
    ("quantile_reliability_from_statistics", "n_levels"): ("int | None", None),
    # The grid's only argument.
    ("uniform_edges", "n_bins"): ("int", _EMPTY),
    # netcal's default number of σ-bins (ENCE, UCE, QCE are netcal's metrics).
    ("ence", "n_bins"): ("int", 10),
    ("uce", "n_bins"): ("int", 10),
    ("qce", "n_bins"): ("int", 10),
    ("variance_reliability", "n_bins"): ("int", 10),
    ("variance_summary", "n_bins"): ("int", 10),
    # The chi-square of the PIT histogram: ten bins, as a PIT histogram is usually drawn.
    ("pit_chi2", "n_bins"): ("int", 10),
    ("pit_chi2_p", "n_bins"): ("int", 10),
    # MAPIE's `num_bins` of its size-stratified coverage.
    ("size_stratified_coverage", "n_bins"): ("int", 3),
    ("size_stratified_coverage_gap", "n_bins"): ("int", 3),
    # The PIT histogram draws its table's bins unless asked to merge them.
    ("plot_pit_histogram", "n_bins"): ("int | None", None),
    # The central-interval form's nominal levels (one per interval); the other forms
    # have none, so None (a summary of intervals without it is a TypeError).
    ("regression_summary", "level"): ("float | Sequence[float] | None", None),
    ("regression_html_report", "level"): ("float | Sequence[float] | None", None),
    ("quantile_reliability", "level"): ("float | Sequence[float] | None", None),
    # An interval table sums each interval's terms, not its level: given to the finisher.
    ("regression_metrics_from_statistics", "level"): ("float | Sequence[float] | None", None),
    # The conformal recalibration's target coverage (MAPIE's 0.9); unused by σ scaling.
    ("fit_regression_calibrator", "level"): ("float", 0.9),
}
"""Parameters that differ from :data:`AGREED` on purpose: (annotation, default)."""

DATA = {"self", "data", "stats", "prob", "label", "p", "table", "summary", "metric", "time"}
DATA |= {"audit", "chart", "path", "name", "columns", "target"}
"""Names of the data and column arguments, which may be positional."""

POSITIONAL: dict[str, set[str]] = {
    # The count is the argument, as ``DataFrame.head(n)``.
    "Audit.worst": {"k"},
    # The grid's only argument.
    "uniform_edges": {"n_bins"},
    # The column is the data: sharpness reads the standard deviations alone.
    "sharpness": {"std"},
}
"""Options that stay positional, with why."""

ORDER = ("by", "time", "every", "n_bins", "n_levels", "strategy", "closed", "weight")
"""The order of the options frame functions share (keyword-only, so free to hold)."""


def _methods(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            if not name.startswith("_") and inspect.isfunction(member):
                yield f"{cls.__name__}.{name}", member


def _public_callables() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    for name in pc.__all__:
        value = getattr(pc, name)
        if inspect.isfunction(value):
            found[name] = value
    classes = [pc.Calibrator, pc.Audit, namespace.ExprCalibNamespace]
    classes += [_namespaces.DataFrameCalibNamespace, _namespaces.LazyFrameCalibNamespace]
    for cls in classes:
        found.update(_methods(cls))
    return found


CALLABLES = _public_callables()


def _annotation(parameter: inspect.Parameter) -> str:
    annotation = parameter.annotation
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return re.sub(r"\s+", " ", text)


def problems(name: str, function: Callable[..., Any]) -> list[str]:
    """What `function` (named `name`) does against the conventions."""
    found = []
    frame_method = name.startswith(("DataFrameCalibNamespace.", "LazyFrameCalibNamespace."))
    base = name.split(".")[-1] if frame_method else name  # as the function it delegates to
    parameters = inspect.signature(function).parameters
    for parameter in parameters.values():
        if parameter.name in AGREED:
            annotation, default = _annotation(parameter), parameter.default
            if (base, parameter.name) in EXCEPTIONS:
                if (annotation, default) != EXCEPTIONS[base, parameter.name]:
                    found.append(f"{parameter.name}: {annotation} = {default!r} (exception)")
            else:
                annotations, defaults = AGREED[parameter.name]
                if parameter.name == "weight":  # per surface: an expression's, a frame's
                    expression = inspect.signature(function).return_annotation == "pl.Expr"
                    annotations = {"IntoExpr | None" if expression else "str | None"}
                if annotation not in annotations or default not in defaults:
                    found.append(f"{parameter.name}: {annotation} = {default!r}")
        positional = parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
        if positional and parameter.name not in DATA | POSITIONAL.get(name, set()):
            found.append(f"{parameter.name} is positional: options are keyword-only")
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            found.append(f"**{parameter.name}: options are typed, one by one")
    keyword = inspect.Parameter.KEYWORD_ONLY
    shared = [p.name for p in parameters.values() if p.name in ORDER and p.kind is keyword]
    if shared != sorted(shared, key=ORDER.index):
        found.append(f"options {shared} are not in the order {ORDER}")
    doc = inspect.getdoc(function) or ""
    if not re.search(r"^Examples\n-{8}\n(.*\n)*>>> ", doc, re.MULTILINE):
        found.append("no Examples section with a `>>>` example in the docstring")
    return found


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_public_callable_follows_the_conventions(name: str) -> None:
    function = CALLABLES[name]
    if (inspect.getdoc(function) or "").startswith("Deprecated alias"):
        pytest.skip("an old name (polars_calib._core.deprecation), checked under its new one")
    assert problems(name, function) == []


def test_the_conventions_test_can_fail() -> None:
    """A function that breaks each rule is caught, rule by rule."""

    def broken(data: pl.DataFrame, prob: str, n_bins: int = 10, *, by: str = "g") -> None:
        """Do nothing."""

    def misnamed(data: pl.DataFrame, *, weight: str | None = None, seed: int = 1) -> None:
        """Do nothing.

        Examples
        --------
        See elsewhere.
        """

    def misordered(data: pl.DataFrame, *, weight: str | None = None, by: Keys = None) -> None:
        """Do nothing.

        Examples
        --------
        >>> 1
        1
        """

    assert problems("broken", broken) == [
        "n_bins: int = 10",
        "n_bins is positional: options are keyword-only",
        "by: str = 'g'",
        "no Examples section with a `>>>` example in the docstring",
    ]
    assert problems("misnamed", misnamed) == [
        "seed: int = 1",
        "no Examples section with a `>>>` example in the docstring",
    ]

    def expression(prob: str, *, weight: str | None = None) -> pl.Expr:
        """Return nothing useful.

        Examples
        --------
        >>> 1
        1
        """
        return pl.lit(prob)

    assert problems("expression", expression) == ["weight: str | None = None"]
    assert problems("misordered", misordered) == [
        f"options ['weight', 'by'] are not in the order {ORDER}"
    ]

    def untyped(data: pl.DataFrame, prob: str, **options: Any) -> None:
        """Do nothing.

        Examples
        --------
        >>> 1
        1
        """

    assert problems("untyped", untyped) == ["**options: options are typed, one by one"]
    assert len(CALLABLES) > 100  # the functions and every namespace method are found


Keys = pc.Keys  # the annotation `misordered` names, as the package writes it


# --------------------------------------------------------------------------
# The old spellings: one more release, with a DeprecationWarning
# --------------------------------------------------------------------------


def test_weight_by_position_still_works_with_a_warning() -> None:
    df = pl.DataFrame({"p": [0.2, 0.7], "y": [0, 1], "w": [1.0, -1.0]})
    with pytest.raises(pc.CalibrationDataError, match="weight"):
        pc.validate(df, "p", "y", weight="w")
    old = r"pc.validate\(\.\.\., weight\) by position"
    with pytest.warns(DeprecationWarning, match=old), pytest.raises(pc.CalibrationDataError):
        pc.validate(df, "p", "y", "w")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'weight'"):
        pc.validate(df, "p", "y", "w", weight="w")  # type: ignore[misc]
    with pytest.raises(TypeError, match="at most 4 positional arguments"):
        pc.validate(df, "p", "y", "w", ["g"])  # type: ignore[call-arg]
    method = r"\.calib\.validate\(\.\.\., weight\) by position"
    with pytest.warns(DeprecationWarning, match=method), pytest.raises(pc.CalibrationDataError):
        df.calib.validate("p", "y", "w")


def test_adjusted_p_values_takes_correction() -> None:
    df = pl.DataFrame({"p": [0.01, 0.04, 0.03]})
    holm = df.select(pc.adjusted_p_values(pl.col("p")))  # "holm", as the audit's default
    assert holm.to_series().to_list() == pytest.approx([0.03, 0.06, 0.06])
    bh = df.select(pc.adjusted_p_values(pl.col("p"), correction="bh"))
    with pytest.warns(DeprecationWarning, match=r"use pc.adjusted_p_values\(correction=...\)"):
        assert_frame_equal(df.select(pc.adjusted_p_values(pl.col("p"), method="bh")), bh)
    with pytest.warns(DeprecationWarning, match="by position"):
        assert_frame_equal(df.select(pc.adjusted_p_values(pl.col("p"), "bh")), bh)  # type: ignore[call-arg]


def test_n_resamples_asks_for_intervals_and_confidence_is_their_level() -> None:
    """One meaning: `n_resamples` the replicates (None: no intervals), `confidence` the level."""
    df = make_log(25, 400)
    options: dict[str, Any] = {"n_bins": 5, "metrics": ["ece"], "seed": 4}
    plain = pc.summary(df, "p", "y", **options)
    assert plain.columns[-1] == "ece"
    default = pc.summary(df, "p", "y", n_resamples=40, **options)
    at_95 = pc.summary(df, "p", "y", n_resamples=40, confidence=0.95, **options)
    assert_frame_equal(default, at_95)
    at_80 = pc.summary(df, "p", "y", n_resamples=40, confidence=0.8, **options)
    assert at_80["ece_upper"].item() < at_95["ece_upper"].item()
    # The audit and the report hold the same rule: None, no intervals.
    audited = pc.audit(df, "p", "y", by="g", n_resamples=None, test=None, min_count=1)
    assert "ece_lower" not in audited.slices.columns
    # `confidence` alone asked for 1000 replicates: deprecated, the same numbers.
    with pytest.warns(DeprecationWarning, match="n_resamples=1000"):
        alone = pc.summary(df, "p", "y", confidence=0.8, **options)
    assert_frame_equal(alone, pc.summary(df, "p", "y", n_resamples=1000, confidence=0.8, **options))


def test_include_small_has_one_default_that_follows_the_audit() -> None:
    df = pl.DataFrame(
        {
            "sex": ["F"] * 6 + ["M"] * 40,
            "p": [0.9, 0.8, 0.9, 0.7, 0.8, 0.9] + [0.2, 0.6, 0.4, 0.8] * 10,
            "y": [0, 0, 0, 0, 1, 0] + [0, 1, 0, 1] * 10,
        }
    )
    options: dict[str, Any] = {"by": "sex", "min_count": 10, "n_resamples": None, "n_bins": 5}
    default = pc.audit(df, "p", "y", **options)
    assert not default.include_small
    assert default.worst(5)["slice"].to_list() == ["sex=M"]
    drawn = pc.plot_audit(default).to_dict()
    assert "sex=F" not in str(drawn["datasets"])
    counted = pc.audit(df, "p", "y", include_small=True, **options)
    assert counted.worst(5)["slice"].to_list() == ["sex=F", "sex=M"]
    assert "sex=F" in str(pc.plot_audit(counted).to_dict()["datasets"])
    assert "sex=F" not in str(pc.plot_audit(counted, include_small=False).to_dict()["datasets"])
    # A table is drawn as given (its rows were chosen already).
    assert "sex=F" in str(pc.plot_audit(counted.worst(5)).to_dict()["datasets"])


def test_average_defaults_to_none_everywhere() -> None:
    """`average=None` is each function's natural average, the same as naming it."""
    df = make_log(26, 300, classes=3)
    top_label = df.select(pc.top_label_ece("probs", "cls", n_bins=4))
    macro = df.select(pc.top_label_ece("probs", "cls", n_bins=4, average="macro"))
    assert_frame_equal(top_label, macro)
    canonical = df.select(pc.canonical_ece("probs", "cls", n_bins=4))
    weighted = df.select(pc.canonical_ece("probs", "cls", n_bins=4, average="weighted"))
    assert_frame_equal(canonical, weighted)
    functions: list[Callable[..., Any]] = [pc.top_label_ece, pc.canonical_ece, pc.summary]
    functions += [pc.html_report, pc.metrics_from_statistics]
    for function in functions:
        assert inspect.signature(function).parameters["average"].default is None


def test_no_public_default_uses_a_deprecated_spelling() -> None:
    """The package never calls an old spelling itself (warnings are errors in the suite)."""
    df = make_log(27, 200, groups=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pc.summary(df, "p", "y", by="g", n_resamples=5)
        pc.audit(df, "p", "y", by="g", n_resamples=5, min_count=1)
