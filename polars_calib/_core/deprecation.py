"""Old names kept working for one release, each with a ``DeprecationWarning``.

Every rename of a public function, method or keyword goes through these helpers, so that
the warning says the same thing everywhere; the CHANGELOG lists every rename.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
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
