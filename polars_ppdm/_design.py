"""How columns were (or will be) disguised by randomized response, validated once.

Shared by ``rr_disguise`` and the miners, so both refuse the same inputs with the same
messages before any data is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_ppdm._encoding import Domain
from polars_ppdm._validation import check_choice, check_columns, keep_probability, per_column
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["MODES", "RRDesign"]

MODES = ("per_attribute", "whole_record")


class RRDesign:
    """How a set of columns was disguised: domains and keep probabilities, validated.

    Built from a frame's schema and the ``p``/``epsilon``/``mode``/``categories``
    arguments shared by the miners.
    """

    def __init__(
        self,
        schema: pl.Schema,
        columns: str | Sequence[str],
        *,
        p: Any,
        epsilon: Any,
        mode: str,
        categories: Any,
        func: str,
        name: str = "columns",
    ) -> None:
        self.func = func
        self.columns = check_columns(columns, list(schema), func, name=name)
        self.mode = check_choice("mode", mode, MODES, func)
        cats = (
            per_column("categories", categories, self.columns, func)
            if isinstance(categories, dict)
            else {c: categories for c in self.columns}
        )
        self.domains = {c: Domain.of(schema[c], cats[c], func=func, column=c) for c in self.columns}
        ps = per_column("p", p, self.columns, func)
        eps = per_column("epsilon", epsilon, self.columns, func)
        self.p = {c: keep_probability(ps[c], eps[c], self.domains[c].k, func, column=c) for c in self.columns}
        if self.mode == "whole_record":
            wide = [c for c in self.columns if self.domains[c].k != 2]
            if wide:
                msg = f"mode='whole_record' of {func} needs binary columns; {wide} are k-ary. Use mode='per_attribute'."
                raise InvalidParameterError(msg)
            if len(set(self.p.values())) > 1:
                msg = f"mode='whole_record' of {func} has one coin per record, so one 'p'. Got {self.p} instead."
                raise InvalidParameterError(msg)

    def require_binary(self) -> None:
        wide = [c for c in self.columns if self.domains[c].k != 2]
        if wide:
            msg = f"Itemset supports in {self.func} need binary (Boolean or 0/1) columns; {wide} are k-ary."
            raise InvalidParameterError(msg)

    def truthy(self, column: str) -> pl.Expr:
        """The "item present" expression of a binary column."""
        if self.domains[column].dtype == pl.Boolean:
            return pl.col(column)
        return pl.col(column) == 1

    def checks(self) -> list[pl.Expr]:
        """Aggregates counting nulls and non-binary values, to fail loudly on bad rows."""
        out = [pl.col(c).null_count().alias(f"__nulls_{i}") for i, c in enumerate(self.columns)]
        for i, c in enumerate(self.columns):
            # An integer column: 0 or 1 is between 0 and 1 (is_in fails on UInt128 in Polars 1.34).
            if self.domains[c].binary_int:
                out.append((~pl.col(c).is_between(0, 1)).fill_null(False).sum().alias(f"__bad_{i}"))
        return out

    def raise_on_checks(self, row: dict[str, Any]) -> None:
        for i, c in enumerate(self.columns):
            if row.get(f"__nulls_{i}", 0):
                msg = (
                    f"The column {c!r} of {self.func} has null values; "
                    "nulls carry no disguised answer, so drop or fill them first."
                )
                raise InvalidParameterError(msg)
            if row.get(f"__bad_{i}", 0):
                msg = (
                    f"The column {c!r} of {self.func} is binary and must hold only 0 and 1; it holds other "
                    "values: fix or drop those rows first (or pass categories=[...] for a k-ary column)."
                )
                raise InvalidParameterError(msg)
