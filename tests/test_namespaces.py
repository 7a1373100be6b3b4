"""The ``.calib`` frame namespaces are the free functions, and ``pc.frame`` is their typed way in.

Every public method of ``df.calib`` and ``lf.calib`` is the free function of the same
name with the same keyword signature less `data` (kept equal here, so the two cannot
drift), delegating every option; the old names warn and give the same results.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_calib as pc
from conftest import CountingSource, sign_changing_log
from polars_calib._namespaces import DataFrameCalibNamespace, LazyFrameCalibNamespace

DEPRECATED = {
    "fit": "fit_calibrator",
    "refused_rows": "refused_counts",
    "smooth_ece": "smooth_ece_summary",
}
"""The old method names, kept for one release, and the methods that replace them."""

NAMESPACES = (DataFrameCalibNamespace, LazyFrameCalibNamespace)


def public_methods(namespace: type) -> list[str]:
    """The namespace's public method names, less the deprecated aliases."""
    return sorted(
        name
        for name, member in inspect.getmembers(namespace, inspect.isfunction)
        if not name.startswith("_") and name not in DEPRECATED
    )


METHODS = public_methods(DataFrameCalibNamespace)


def parameters(function: Callable[..., Any], drop: str) -> list[tuple[str, Any, Any, Any]]:
    """(name, kind, default, annotation) of each parameter, the first (`drop`) left out."""
    params = list(inspect.signature(function).parameters.values())
    assert params[0].name == drop, f"{function.__qualname__} starts with {params[0].name}"
    return [(p.name, p.kind, p.default, p.annotation) for p in params[1:]]


def test_both_namespaces_list_the_same_methods() -> None:
    assert public_methods(LazyFrameCalibNamespace) == METHODS
    assert len(METHODS) >= 10
    for old, new in DEPRECATED.items():
        assert new in METHODS
        assert hasattr(DataFrameCalibNamespace, old) and hasattr(LazyFrameCalibNamespace, old)


@pytest.mark.parametrize("namespace", NAMESPACES, ids=lambda ns: ns.__name__)
@pytest.mark.parametrize("name", METHODS)
def test_each_method_has_the_signature_of_the_free_function_of_its_name(
    namespace: type, name: str
) -> None:
    free = getattr(pc, name)
    assert name in pc.__all__
    assert parameters(getattr(namespace, name), "self") == parameters(free, "data")


@pytest.mark.parametrize("name", METHODS)
def test_each_method_delegates_every_option_by_keyword_in_one_call(name: str) -> None:
    method = getattr(DataFrameCalibNamespace, name)
    body = ast.parse(textwrap.dedent(inspect.getsource(method))).body[0]
    assert isinstance(body, ast.FunctionDef)
    _docstring, *statements = body.body
    assert ast.get_docstring(body) and len(statements) == 1, f"{name}: a docstring, one call"
    assert isinstance(statements[0], (ast.Return, ast.Expr))
    call = statements[0].value
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    assert call.func.id == name
    signature = inspect.signature(method)
    positional = [
        p.name
        for p in signature.parameters.values()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.name != "self"
    ]
    keywords = [
        p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    assert ast.unparse(call.args[0]) == "self._data"
    assert [ast.unparse(arg) for arg in call.args[1:]] == positional
    assert {k.arg: ast.unparse(k.value) for k in call.keywords} == {k: k for k in keywords}


def test_frame_gives_the_namespace_of_its_kind() -> None:
    df = pl.DataFrame({"p": [0.2, 0.4, 0.6, 0.8], "y": [0, 1, 0, 1]})
    eager = pc.frame(df)
    lazy = pc.frame(df.lazy())
    assert type(eager) is DataFrameCalibNamespace
    assert type(lazy) is LazyFrameCalibNamespace
    assert_frame_equal(eager.summary("p", "y"), df.calib.summary("p", "y"))
    plan = lazy.summary("p", "y", n_bins=2)
    assert isinstance(plan, pl.LazyFrame)
    assert_frame_equal(plan.collect(), df.calib.summary("p", "y", n_bins=2))
    assert "frame" in pc.__all__


@pytest.mark.parametrize("data", [{"p": [0.5]}, "frame.parquet", None])
def test_frame_refuses_anything_but_a_polars_frame(data: object) -> None:
    with pytest.raises(TypeError, match=f"DataFrame or LazyFrame, got {type(data).__name__}"):
        pc.frame(data)  # type: ignore[call-overload]


def test_new_names_are_public_and_old_ones_importable_but_not_listed() -> None:
    for name in ("refused_counts", "smooth_ece_summary", "fit_calibrator", "frame"):
        assert name in pc.__all__
    assert "smooth_ece" not in pc.__all__
    from polars_calib import smooth_ece  # noqa: F401  (still importable, with a warning on call)

    assert callable(pc.smooth_ece)
    assert "refused_rows" in pc.__all__  # the expression stays


def test_old_smooth_ece_warns_and_gives_the_summary() -> None:
    df = sign_changing_log(3, 200, groups=2)
    with pytest.warns(DeprecationWarning, match=r"pc\.smooth_ece is deprecated.*_summary"):
        old = pc.smooth_ece(df, "p", "y", by="g", weight="w")
    assert_frame_equal(old, pc.smooth_ece_summary(df, "p", "y", by="g", weight="w"))


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize(
    ("old", "new", "options"),
    [
        ("smooth_ece", "smooth_ece_summary", {"by": "g", "weight": "w"}),
        ("refused_rows", "refused_counts", {"by": "g", "weight": "w"}),
    ],
)
def test_old_method_names_warn_and_give_the_same_table(
    lazy: bool, old: str, new: str, options: dict[str, Any]
) -> None:
    df = sign_changing_log(4, 200, groups=3)
    data = df.lazy() if lazy else df
    with pytest.warns(DeprecationWarning, match=rf"\.calib\.{old} is deprecated.*\.calib\.{new}"):
        got = getattr(data.calib, old)("p", "y", **options)
    expected = getattr(data.calib, new)("p", "y", **options)
    assert isinstance(got, type(data))
    if lazy:
        got, expected = got.collect(), expected.collect()
    assert_frame_equal(got, expected)


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_old_fit_warns_and_fits_the_same_calibrator(lazy: bool) -> None:
    df = sign_changing_log(5, 300, groups=2)
    data = df.lazy() if lazy else df
    with pytest.warns(DeprecationWarning, match=r"\.calib\.fit is deprecated.*fit_calibrator"):
        old = data.calib.fit("p", "y", method="platt", by="g", weight="w")
    new = data.calib.fit_calibrator("p", "y", method="platt", by="g", weight="w")
    assert_frame_equal(old.params, new.params)
    assert_frame_equal(new.params, pc.fit_calibrator(df, "p", "y", by="g", weight="w").params)


def refused_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "g": [1, 1, 1, 2, 2, 3],
            "p": [0.2, float("nan"), 1.4, 0.5, 0.6, 0.7],
            "y": [0, 1, 1, 1, 2, 0],
            "w": [1.0, 1.0, -1.0, 1.0, 1.0, 2.0],
        }
    )


def test_refused_counts_are_the_expression_per_group() -> None:
    df = refused_frame()
    got = pc.refused_counts(df, "p", "y", by="g", weight="w")
    expected = (
        df.group_by("g", maintain_order=True)
        .agg(pc.refused_rows("p", "y", weight="w"))
        .unnest("refused_rows")
    )
    assert_frame_equal(got, expected)
    assert got.select("g", "rows", "refused", "probability NaN", "weight negative").rows() == [
        (1, 3, 2, 1, 1),
        (2, 2, 1, 0, 0),
        (3, 1, 0, 0, 0),
    ]
    assert_frame_equal(df.calib.refused_counts("p", "y", by="g", weight="w"), got)


def test_refused_counts_of_a_lazy_frame_is_a_plan_that_reads_nothing() -> None:
    source = CountingSource(refused_frame())
    plan = pc.refused_counts(source.frame(), "p", "y", by=pl.col("g") > 1)
    assert isinstance(plan, pl.LazyFrame) and source.reads == 0
    got = plan.collect()
    assert source.reads == 1
    assert got.select("g", "rows", "refused").rows() == [(False, 3, 2), (True, 3, 1)]


def test_refused_counts_without_keys_is_one_row_even_for_no_rows() -> None:
    df = refused_frame()
    whole = pc.refused_counts(df, "p", "y", pos_label=1)
    assert whole.select("rows", "refused", "probability NaN").row(0) == (6, 2, 1)
    empty = pc.refused_counts(df.clear(), "p", "y")
    assert empty.select("rows", "refused").row(0) == (0, 0)


def test_refused_counts_refuse_bad_arguments_by_name() -> None:
    df = refused_frame()
    with pytest.raises(pc.CalibrationDataError, match="column 'q' is missing"):
        pc.refused_counts(df, "q", "y")
    with pytest.raises(ValueError, match="`by` cannot hold 'refused'"):
        pc.refused_counts(df.rename({"g": "refused"}), "p", "y", by="refused")
    with pytest.raises(TypeError, match="DataFrame or LazyFrame, got dict"):
        pc.refused_counts(df.to_dict(), "p", "y")  # type: ignore[type-var]
