"""An affine map of numeric columns as plain Polars arithmetic.

``out_i = offset_i + sum_j matrix[i, j] * x_j``, the terms added in one fixed order: the
expressions stream, run in parallel and give the same bits for any batch size (the
DuckDB macros of a spiral key add them in the same order).  A null anywhere in a row
makes every output of the row null, since every term is kept, zeros included.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

__all__ = ["affine_exprs"]


def affine_exprs(columns: Sequence[str], matrix: np.ndarray, offset: np.ndarray) -> list[pl.Expr]:
    """One Float64 expression per column, named after it."""
    x = [pl.col(c).cast(pl.Float64) for c in columns]
    out = []
    for i, c in enumerate(columns):
        expr = pl.lit(float(offset[i]))
        for j, source in enumerate(x):
            expr = expr + float(matrix[i, j]) * source
        out.append(expr.alias(c))
    return out
