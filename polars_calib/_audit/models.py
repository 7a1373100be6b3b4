"""The models of a log: an audit that would pool several of them is refused.

The slices of a log holding several models' predictions, pooled, describe no model
(the example log's two models have ECE 0.033 and 0.109; pooled, 0.066): an audit runs
within the model key (:func:`polars_calib.audit`'s `within`). The surfaces (the
command line, the HTML report) know the model key when they are told it; otherwise
:func:`check_one_model` looks for a column named like one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

__all__ = ["check_one_model", "model_columns"]

# Column names taken for a model's name or version: model, model_name, model-id, Model...
_MODEL = re.compile(r"model(?:[_\- ]?(?:name|id|version))?", re.IGNORECASE)

# The most values named in the message.
_NAMED = 3


def model_columns(schema: pl.Schema, used: Sequence[str] = ()) -> list[str]:
    """Return the columns of `schema` named like a model's key, other than `used`."""
    return [name for name in schema.names() if _MODEL.fullmatch(name) and name not in used]


def check_one_model(
    data: pl.DataFrame | pl.LazyFrame, used: Sequence[str] = (), fix: str = "within={!r}"
) -> None:
    """Raise ``ValueError`` if a column named like a model's key holds several values.

    One pass over those columns, and only when there are such columns that `used`
    (the audit's keys) does not name. `fix` says how the caller's user audits per
    model, the column's name in place of ``{}`` (``"--within {}"`` on the command
    line).
    """
    columns = model_columns(data.collect_schema(), used)
    if not columns:
        return
    counts = data.lazy().select(
        *(pl.col(name).n_unique().alias(name) for name in columns),
        *(
            pl.col(name)
            .unique()
            .sort(nulls_last=True)
            .head(_NAMED)
            .implode()
            .alias(f"{name} values")
            for name in columns
        ),
    )
    found = counts.collect(engine="streaming").row(0, named=True)
    for name in columns:
        if found[name] > 1:
            values = ", ".join(map(str, found[f"{name} values"]))
            more = ", ..." if found[name] > _NAMED else ""
            msg = (
                f"the log holds {found[name]:,} models in column {name!r} ({values}{more}): "
                f"an audit of them pooled describes none of them; audit each model on its own "
                f"({fix.format(name)}), or audit one model's rows"
            )
            raise ValueError(msg)
