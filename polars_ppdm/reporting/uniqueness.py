"""Sample uniques and k-anonymity's k of the columns a table publishes unchanged.

Columns published as they are (a ``keep`` step, or no step at all) are quasi-identifiers:
together they may single a person out, whatever the perturbed columns hide.  sdcMicro
and ARX measure that risk first; the report's verdict puts it beside each perturbed
column's own risk.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_ppdm.reporting._table import Table
from polars_ppdm.reporting.model import Uniqueness

__all__ = ["uniqueness"]


def uniqueness(table: pl.DataFrame | Table, columns: Sequence[str]) -> Uniqueness:
    """How many rows of ``table`` are unique on ``columns`` together, and the smallest group.

    Parameters
    ----------
    table
        The released table (nothing here reads the original): only ``columns`` are read.
    columns
        The columns published unchanged, in the table's order.

    Returns
    -------
    Uniqueness
        Null is a value like any other (Polars groups nulls together), as a person's
        missing age is as telling as a given one; with no column or no row, every count is 0.
    """
    if not columns or table.height == 0:
        return Uniqueness(tuple(columns), table.height, 0, 0, 0)
    sizes = _group_sizes(table, list(columns))
    return Uniqueness(
        columns=tuple(columns),
        rows=table.height,
        groups=sizes.len(),
        uniques=int((sizes == 1).sum()),
        smallest_group=int(sizes.min()),  # type: ignore[arg-type]
    )


def _group_sizes(table: pl.DataFrame | Table, columns: list[str]) -> pl.Series:
    """The size of each group of equal rows on ``columns``, in no particular order.

    Sorted, equal rows are neighbours, so the groups are the runs of equal rows: a sort
    and a run-length pass, where a group-by over a table whose rows are mostly unique
    (an id kept as it is) builds a hash table of every row -- several times slower, and
    several times the memory of the columns (issue 30).  Equality is the group-by's:
    nulls equal each other, NaN equals NaN and -0.0 equals 0.0 (tests pin both ways on
    such tables); a type the sort refuses falls back to the group-by.
    """
    chosen = table.select(columns)
    try:
        ordered = chosen.sort(columns)
        runs = ordered.to_series() if len(columns) == 1 else ordered.select(pl.struct(columns)).to_series()
        return runs.rle().struct.field("len")
    except pl.exceptions.PolarsError:
        return chosen.group_by(columns).len()["len"]
