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
    """One Float64 expression per column, named after it; zeros in the data under a null.

    Under a null, Polars computes the arithmetic on whatever the inputs' buffers hold
    there (zeros, or the value the input hid), and an Arrow IPC file writes the result
    out: with zeros the slot would be ``offset_i`` itself, a piece of the secret map.
    ``when`` keeps the data of its ``then`` side under the nulls it makes, so the map is
    first set to 0.0 on the rows with a null, then nulled there.
    """
    x = [pl.col(c).cast(pl.Float64) for c in columns]
    complete = pl.all_horizontal(source.is_not_null() for source in x)
    out = []
    for i, c in enumerate(columns):
        expr = pl.lit(float(offset[i]))
        for j, source in enumerate(x):
            expr = expr + float(matrix[i, j]) * source
        out.append(pl.when(complete).then(pl.when(complete).then(expr).otherwise(0.0)).alias(c))
    return out
