"""Frame plumbing shared by the operations: DataFrame in, DataFrame out; lazy stays lazy."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar, overload

import polars as pl

from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["Frame", "as_lazy", "eager", "fresh_names", "like", "map_whole", "schema_of"]

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)
_T = TypeVar("_T")

# The engines ``like`` collects an eager result on.
Engine = Literal["in-memory", "streaming"]


def schema_of(frame: pl.DataFrame | pl.LazyFrame, func: str) -> pl.Schema:
    """The frame's schema (resolving a lazy plan), or a clear error for a non-frame."""
    if isinstance(frame, pl.LazyFrame):
        return frame.collect_schema()
    if isinstance(frame, pl.DataFrame):
        return frame.schema
    msg = f"{func} takes a polars DataFrame or LazyFrame. Got {type(frame).__name__} instead."
    raise InvalidParameterError(msg)


def as_lazy(frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    return frame if isinstance(frame, pl.LazyFrame) else frame.lazy()


def map_whole(
    lazy: pl.LazyFrame, function: Callable[[pl.DataFrame], pl.DataFrame], schema: Mapping[str, Any]
) -> pl.LazyFrame:
    """``lazy`` through ``function``, a function of the whole frame (an estimate, a noisy
    release, a permutation), as one step no optimisation sees through.

    Polars 1's ``LazyFrame.map_batches`` lets a filter, slice or projection written after
    it move before it by default (Polars 2 does not): on Polars 1.34 ``head(2)`` after
    ``rr_support`` estimated from the first two rows' patterns, and a filter after
    ``ecdf_resample`` resampled the filtered rows only.  A function of the whole frame
    must see the whole frame, whatever is chained after it.
    """
    return lazy.map_batches(
        function, schema=schema, predicate_pushdown=False, projection_pushdown=False, slice_pushdown=False
    )


@overload
def eager(frame: pl.DataFrame | pl.LazyFrame, columns: list[str] | None = None) -> pl.DataFrame: ...
@overload
def eager(frame: _T, columns: list[str] | None = None) -> _T: ...
def eager(frame: object, columns: list[str] | None = None) -> object:
    """A LazyFrame collected (only ``columns`` when given); anything else as it is."""
    if isinstance(frame, pl.LazyFrame):
        return (frame if columns is None else frame.select(columns)).collect()
    return frame


@overload
def like(original: pl.DataFrame, result: pl.LazyFrame, *, engine: Engine = "in-memory") -> pl.DataFrame: ...
@overload
def like(original: pl.LazyFrame, result: pl.LazyFrame, *, engine: Engine = "in-memory") -> pl.LazyFrame: ...
@overload
def like(
    original: pl.DataFrame | pl.LazyFrame, result: pl.LazyFrame, *, engine: Engine = "in-memory"
) -> pl.DataFrame | pl.LazyFrame: ...
def like(
    original: pl.DataFrame | pl.LazyFrame, result: pl.LazyFrame, *, engine: Engine = "in-memory"
) -> pl.DataFrame | pl.LazyFrame:
    """``result`` as the same kind of frame as ``original`` (collect for a DataFrame).

    An eager frame is already in memory, so a plan of per-row kernels runs on the
    in-memory engine by default: one call per column instead of one per ~100k-row
    morsel (same bits either way).  Aggregations pass ``engine="streaming"``, which
    groups twice as fast here.

    A refusal of the library raised inside the plan comes out as its own message alone:
    Polars appends the expression it was evaluating, whose literals may be a key's (the
    spiral's matrix and offsets), and an error message is read by more people than the
    data owner (docs/privacy-model.md).
    """
    if isinstance(original, pl.LazyFrame):
        return result
    try:
        return result.collect(engine=engine)
    except InvalidParameterError as error:
        text = str(error)
        if _POLARS_CONTEXT not in text:
            raise
        raise InvalidParameterError(text.split(_POLARS_CONTEXT, 1)[0]) from None


# How Polars starts the expression context it appends to an error raised inside a plan.
_POLARS_CONTEXT = "\n\nThis error occurred"


def fresh_names(taken: Iterable[str], *bases: str) -> list[str]:
    """Names for helper columns: each of ``bases`` as it is, or with the smallest suffix
    ``_1``, ``_2``, ... that names no column of ``taken`` nor an earlier helper.

    A user's column may have any name, "__ppdm_rows" included: a helper column named
    apart from the frame's cannot overwrite one of them, nor be overwritten.
    """
    used = set(taken)
    out = []
    for base in bases:
        name, i = base, 0
        while name in used:
            i += 1
            name = f"{base}_{i}"
        used.add(name)
        out.append(name)
    return out
