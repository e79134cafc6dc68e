"""An affine map of numeric columns as plain Polars arithmetic.

``out_i = offset_i + sum_j matrix[i, j] * x_j``, the terms added in one fixed order: the
expressions stream, run in parallel and give the same bits for any batch size (the
DuckDB macros of a spiral key add them in the same order).  A null anywhere in a row
makes every output of the row null, since every term is kept, zeros included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._held import held, hold
from polars_ppdm.kernels.spiral import affine_columns

__all__ = ["affine_exprs", "held_affine_exprs"]


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


# ---- A secret map: the plan holds a handle, never the matrix or the offset
# A LazyFrame's plan holds its expressions' literals, which explain(), str(), serialize()
# and Polars' own errors ("Resolved plan until failure") print; a spiral key's would be
# the key (attack review 63). The map is held by polars_ppdm._held instead.


class _HeldMap:
    """A secret map as a ``map_batches`` function giving a struct of the ``columns``
    moved.  It holds the map itself; pickled (``LazyFrame.serialize``), it is a handle
    (:mod:`polars_ppdm._held`): a plan taken to another process fails there, saying so,
    rather than run with another map."""

    def __init__(self, matrix: np.ndarray, offset: np.ndarray, columns: Sequence[str]) -> None:
        self._map = (matrix, offset)
        self.columns = list(columns)

    def __repr__(self) -> str:
        return "secret_map"

    def __reduce__(self) -> tuple[Any, tuple[int, list[str]]]:
        matrix, offset = self._map
        return (
            _held_map,
            (hold(b"affine-map", matrix.tobytes() + offset.tobytes(), self._map), self.columns),
        )

    def __call__(self, inputs: Sequence[pl.Series]) -> pl.Series:
        matrix, offset = self._map
        n = len(inputs[0])
        complete = np.ones(n, dtype=bool)
        for source in inputs:
            if source.null_count():
                complete &= source.is_not_null().to_numpy()
        # An overflow is refused after, by the caller.
        out = affine_columns([source.fill_null(0.0).to_numpy() for source in inputs], matrix, offset)
        missing = ~complete
        out[:, missing] = 0.0  # zeros under the nulls (affine_exprs' docstring says why)
        moved = pl.DataFrame({c: out[i] for i, c in enumerate(self.columns)})
        if missing.any():  # nulls over those zeros (when keeps its then side's data)
            kept = pl.Series(complete)
            moved = moved.select(pl.when(kept).then(pl.col(c)).alias(c) for c in self.columns)
        return moved.to_struct()


def held_affine_exprs(columns: Sequence[str], matrix: np.ndarray, offset: np.ndarray) -> pl.Expr:
    """:func:`affine_exprs` for a secret map, as one struct expression (field per column,
    named after it): the same bits and nulls, computed by a ``map_batches`` function
    that holds a handle to the map."""
    x = [pl.col(c).cast(pl.Float64) for c in columns]
    fields = pl.Struct({c: pl.Float64 for c in columns})
    moved = _HeldMap(np.array(matrix, dtype=np.float64), np.array(offset, dtype=np.float64), columns)
    return pl.map_batches(x, moved, return_dtype=fields, is_elementwise=True)


def _held_map(handle: int, columns: list[str]) -> _HeldMap:
    """A pickled :class:`_HeldMap` read back: its map, where this process holds it."""
    matrix, offset = held(handle, "spiral key")
    return _HeldMap(matrix, offset, columns)
