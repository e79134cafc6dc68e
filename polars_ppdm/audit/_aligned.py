"""The input every before/after audit shares: two tables aligned row by row."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_ppdm._frame import eager, schema_of
from polars_ppdm._validation import check_columns, check_numeric
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["aligned_numeric"]


def aligned_numeric(
    original: pl.DataFrame | pl.LazyFrame,
    released: pl.DataFrame | pl.LazyFrame,
    columns: str | Sequence[str],
    func: str,
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """Both tables collected, with numeric, null-free ``columns`` and the same rows.

    Row i of one table must be row i of the other: an attack or a measure that pairs
    rows reads garbage from tables of different heights or with holes.
    """
    schemas = [schema_of(t, func) for t in (original, released)]  # before reading any row
    cols = check_columns(columns, list(schemas[0].names()), func)
    check_columns(cols, list(schemas[1].names()), func)
    for schema in schemas:
        check_numeric(schema, cols, func)
    tables = [eager(t, cols) for t in (original, released)]
    original, released = tables
    if original.height != released.height or original.height == 0:
        msg = (
            f"{func} needs two non-empty tables aligned row by row (the same number of rows, in the "
            "same order); the tables given are not."
        )
        raise InvalidParameterError(msg)
    for name, table in zip(("original", "released"), tables, strict=True):
        nulls = [c for c in cols if table[c].null_count()]
        if nulls:
            msg = f"{func}: the {name} columns {nulls} hold nulls; drop those rows from both tables first."
            raise InvalidParameterError(msg)
    return original, released, cols
