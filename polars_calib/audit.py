"""Transitional alias of :mod:`polars_calib._audit`, for modules not yet moved to it.

``polars_calib/forest.py`` still imports :class:`Audit` from here. Delete this module
(and its import in ``polars_calib/__init__.py``) once nothing imports
``polars_calib.audit``.
"""

from polars_calib._audit import MAX_SLICES, Audit, adjusted_p_values, audit

__all__ = ["MAX_SLICES", "Audit", "adjusted_p_values", "audit"]
