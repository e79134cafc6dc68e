"""Sample uniques and k-anonymity's k of the columns a table publishes unchanged.

Columns published as they are (a ``keep`` step, or no step at all) are quasi-identifiers:
together they may single a person out, whatever the perturbed columns hide.  sdcMicro
and ARX measure that risk first; the report's verdict puts it beside each perturbed
column's own risk.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from polars_ppdm.reporting.model import Uniqueness

__all__ = ["uniqueness"]


def uniqueness(table: pl.DataFrame, columns: Sequence[str]) -> Uniqueness:
    """How many rows of ``table`` are unique on ``columns`` together, and the smallest group.

    Parameters
    ----------
    table
        The released table (nothing here reads the original).
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
    sizes = table.group_by(list(columns)).len()["len"]
    return Uniqueness(
        columns=tuple(columns),
        rows=table.height,
        groups=sizes.len(),
        uniques=int((sizes == 1).sum()),
        smallest_group=int(sizes.min()),  # type: ignore[arg-type]
    )
