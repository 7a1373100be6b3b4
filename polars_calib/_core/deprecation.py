"""Old names kept working for one release, each with a ``DeprecationWarning``.

Every rename of a public function, method or keyword goes through these helpers, so that
the warning says the same thing everywhere; the CHANGELOG lists every rename.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

REMOVED_IN = "0.3.0"
"""The release that drops the old names (they work, with a warning, throughout 0.2)."""


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that `old` is deprecated in favour of `new` (both as the user writes them)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in polars_calib {REMOVED_IN}; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def deprecated_alias(function: F, old: str, new: str) -> F:
    """Return `function` under its old name `old`, warning once per call that `new` replaces it.

    `old` and `new` are the spellings a user reads, such as ``"pc.smooth_ece"`` and
    ``"pc.smooth_ece_summary"``.

    Examples
    --------
    >>> import warnings
    >>> from polars_calib._core.deprecation import deprecated_alias
    >>> def area(side: float) -> float:
    ...     return side * side
    >>> square = deprecated_alias(area, "square()", "area()")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     square(3.0)
    9.0
    >>> str(caught[0].message)
    'square() is deprecated and will be removed in polars_calib 0.3.0; use area()'
    """

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warn_renamed(old, new)
        return function(*args, **kwargs)

    alias.__doc__ = f"Deprecated alias of {new}: {old} will be removed in {REMOVED_IN}."
    return alias  # type: ignore[return-value]


def renamed_keyword(where: str, old: str, new: str, old_value: T | None, new_value: T) -> T:
    """Return a renamed keyword's value: `old_value` (with a warning) if given, else `new_value`.

    A deprecated keyword is kept in the signature with the default ``None``, which
    means "not given"; `where` names the function for the message (``"pc.audit"``).

    Examples
    --------
    >>> import warnings
    >>> from polars_calib._core.deprecation import renamed_keyword
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     renamed_keyword("f", "method", "correction", "bonferroni", "holm")
    'bonferroni'
    >>> renamed_keyword("f", "method", "correction", None, "holm")
    'holm'
    """
    if old_value is None:
        return new_value
    warn_renamed(f"{where}({old}=...)", f"{where}({new}=...)", stacklevel=4)
    return old_value


def positional_options(where: str, names: Sequence[str]) -> Callable[[F], F]:
    """Accept options that became keyword-only by position for one more release, with a warning.

    The decorated function keeps its keyword-only signature (what editors, type checkers
    and :func:`inspect.signature` show); a call giving more positional arguments than
    the function's positional parameters passes the extra ones, in order, as the
    keywords `names` and warns once. `where` names the function for the message.

    Examples
    --------
    >>> import warnings
    >>> from polars_calib._core.deprecation import positional_options
    >>> @positional_options("f", ["scale"])
    ... def f(x: float, *, scale: float = 1.0) -> float:
    ...     return x * scale
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     f(2.0, 3.0)
    6.0
    >>> message = str(caught[0].message)
    >>> message.startswith("f(..., scale) by position is deprecated")
    True
    >>> message.endswith("; use f(..., scale=...)")
    True
    """

    def decorate(function: F) -> F:
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        parameters = inspect.signature(function).parameters.values()
        n_positional = sum(parameter.kind in kinds for parameter in parameters)

        @functools.wraps(function)
        def accepting(*args: Any, **kwargs: Any) -> Any:
            if len(args) > n_positional:
                extra = args[n_positional:]
                if len(extra) > len(names):
                    most = n_positional + len(names)
                    msg = f"{where}() takes at most {most} positional arguments"
                    raise TypeError(msg)
                moved = dict(zip(names, extra))
                for name in moved:
                    if name in kwargs:
                        msg = f"{where}() got multiple values for argument {name!r}"
                        raise TypeError(msg)
                given = ", ".join(moved)
                keywords = ", ".join(f"{name}=..." for name in moved)
                warn_renamed(f"{where}(..., {given}) by position", f"{where}(..., {keywords})")
                kwargs.update(moved)
                args = args[:n_positional]
            return function(*args, **kwargs)

        return accepting  # type: ignore[return-value]

    return decorate
