"""The fairness audit: calibration of every segment and intersection, from one pass.

:func:`audit` computes the statistics table (:mod:`polars_calib._table`) once, at
the finest grain (every ``by`` attribute, and the bins: :mod:`.cells`), then rolls it up
to every coarser slice by summing (:mod:`.rollup`): the overall population, each
attribute alone, and each intersection of up to ``max_order`` attributes
(:mod:`.slices`). The sums are mergeable, so every slice's numbers equal those of a
summary computed on that slice directly. The small tables are then compared
(:mod:`.compare`: differences and ratios to the overall value, fairlearn's
between-group disparities) and the slices' tests adjusted for multiplicity. The result
is an :class:`Audit` (:mod:`.result`); the options are checked in :mod:`.options`. Keys
kept whole (`within`, such as the model) are keys of every slice's table: each group is
audited on its own; :mod:`.models` refuses an audit that would pool several models.
"""

from polars_calib._audit.api import audit
from polars_calib._audit.compare import adjusted_p_values
from polars_calib._audit.models import check_one_model
from polars_calib._audit.result import Audit
from polars_calib._audit.slices import MAX_SLICES

__all__ = ["MAX_SLICES", "Audit", "adjusted_p_values", "audit", "check_one_model"]
