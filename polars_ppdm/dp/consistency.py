"""Consistent totals across levels of DP releases: free post-processing.

Release the counts (or sums) per cell and per coarser group with their own noise, e.g.
per (region, day) and per region, and :func:`consistent_totals` makes them agree: each
region's figure becomes exactly the sum of its days', and both are the least-squares
combination of everything released (:mod:`polars_ppdm.kernels.consistency`).  The totals
gain the most: a region's sum of 365 noisy days has 365 cells' noise, its own release one
cell's, and the combination less than either.

References
----------
Hay, Rastogi, Miklau, Suciu, VLDB 2010; Cormode, Procopiuc, Srivastava, Shen, Yu, ICDE 2012.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._frame import fresh_names
from polars_ppdm._validation import is_real
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.consistency import consistent_hierarchy

__all__ = ["consistent_totals"]

_FUNC = "consistent_totals"
_Z95 = 1.959963984540054


def _fail(name: str, allowed: str, got: Any) -> None:
    msg = f"The {name!r} parameter of {_FUNC} must be {allowed}. Got {got!r} instead."
    raise InvalidParameterError(msg)


def _levels(levels: Any, value: str, by: Sequence[str]) -> list[pl.DataFrame]:
    if isinstance(levels, pl.DataFrame | pl.LazyFrame) or not isinstance(levels, Sequence) or len(levels) < 2:
        _fail("levels", "a list of at least two releases (DataFrames or LazyFrames), finest first", levels)
    frames = []
    for i, level in enumerate(levels):
        if not isinstance(level, pl.DataFrame | pl.LazyFrame):
            _fail("levels", "a list of DataFrames or LazyFrames", f"a {type(level).__name__} at position {i}")
        frame = level.collect() if isinstance(level, pl.LazyFrame) else level
        if value not in frame.columns or not frame.schema[value].is_numeric():
            _fail("value", f"a numeric column of every level (level {i} has {frame.columns})", value)
        figures = frame[value].cast(pl.Float64)
        if figures.null_count() or not figures.is_finite().all():
            msg = f"{_FUNC}: level {i}'s {value!r} holds nulls, NaN or infinities; only finite figures can be combined."
            raise InvalidParameterError(msg)
        frames.append(frame)
    return frames


def _variances(frames: list[pl.DataFrame], value: str, sd: Any) -> list[np.ndarray]:
    if sd is None:
        column = f"{value}_sd"
        missing = [i for i, f in enumerate(frames) if column not in f.columns]
        if missing:
            _fail(
                "sd",
                f"given (one noise SD per level) when the levels have no {column!r} column "
                f"(dp_group_by(..., intervals=True) adds it; levels {missing} lack it)",
                None,
            )
        spreads = [f[column].cast(pl.Float64).to_numpy() for f in frames]
    else:
        if isinstance(sd, str) or not isinstance(sd, Sequence) or len(sd) != len(frames):
            _fail("sd", f"a list of {len(frames)} noise standard deviations, one per level", sd)
        spreads = [
            np.full(f.height, float(s)) if is_real(s) else np.array([np.nan])
            for f, s in zip(frames, sd, strict=True)
        ]
    for i, spread in enumerate(spreads):
        if not (np.isfinite(spread).all() and (spread >= 0).all()):
            _fail(
                "sd",
                "finite standard deviations >= 0",
                f"{spread[~(np.isfinite(spread) & (spread >= 0))][:3].tolist()} at level {i}",
            )
    return [s**2 for s in spreads]


def _parents(frames: list[pl.DataFrame], by: list[str]) -> list[np.ndarray]:
    keys = [[c for c in by if c in f.columns] for f in frames]
    if keys[0] != by:
        _fail("by", f"the group columns of the finest level (its columns: {frames[0].columns})", by)
    parents = []
    for i in range(len(frames) - 1):
        fine, coarse = keys[i], keys[i + 1]
        if not set(coarse) < set(fine):
            msg = (
                f"{_FUNC}: level {i + 1} must group by fewer of {by} than level {i}: it has {coarse}, level {i} {fine} "
                "(levels go from the finest to the coarsest)."
            )
            raise InvalidParameterError(msg)
        for level, columns in ((i, fine), (i + 1, coarse)):
            if columns and frames[level].select(columns).is_duplicated().any():
                msg = f"{_FUNC}: level {level} lists a group twice (by {columns}); each group is one row."
                raise InvalidParameterError(msg)
        if not coarse:  # the grand total: one row
            if frames[i + 1].height != 1:
                msg = f"{_FUNC}: level {i + 1} has no group column, so it is a grand total of one row. Got {frames[i + 1].height} rows."
                raise InvalidParameterError(msg)
            parents.append(np.zeros(frames[i].height, dtype=np.int64))
            continue
        (row,) = fresh_names(coarse, "__ppdm_row")  # a group column may be called "__ppdm_row" too
        index = frames[i + 1].select(coarse).with_row_index(row)
        linked = (
            frames[i]
            .select(coarse)
            .join(index, on=coarse, how="left", nulls_equal=True, maintain_order="left")
        )
        orphans = linked.filter(pl.col(row).is_null())
        if orphans.height:
            msg = f"{_FUNC}: groups of level {i} have no parent in level {i + 1}, e.g. {orphans.drop(row).row(0, named=True)}; release both levels over the same public groups."
            raise InvalidParameterError(msg)
        parent = linked[row].to_numpy().astype(np.int64)
        childless = np.setdiff1d(np.arange(frames[i + 1].height), parent)
        if len(childless):
            msg = f"{_FUNC}: groups of level {i + 1} have no group below them in level {i}, e.g. {frames[i + 1].select(coarse).row(int(childless[0]), named=True)}."
            raise InvalidParameterError(msg)
        parents.append(parent)
    return parents


def consistent_totals(
    levels: Sequence[pl.DataFrame | pl.LazyFrame],
    value: str,
    *,
    by: str | Sequence[str],
    sd: Sequence[float] | None = None,
) -> list[pl.DataFrame]:
    """Make noisy totals agree across levels: each group's figure the sum of its subgroups'.

    Post-processing of DP releases (no privacy cost): the figures of every level are
    replaced by their weighted least-squares estimates under the constraint that each
    coarser group is the sum of its finer groups (Hay et al. 2010; Cormode et al. 2012),
    the best linear unbiased combination of all levels.  Totals gain the most; cells
    gain little (their own noise dominates what they are told by the totals).

    Parameters
    ----------
    levels : list of polars.DataFrame or LazyFrame
        Releases of the same data, finest first: e.g. counts per (region, day), per
        region, and a grand total.  Each coarser level groups by a subset of the previous
        level's group columns; every group has its parent in the next level, and every
        parent at least one child (release the levels over public groups).
    value : str
        The column to make consistent, in every level (e.g. ``"count"``, ``"amount_sum"``).
    by : str or list of str
        The finest level's group columns; a coarser level's are those of them it has (none:
        a one-row grand total).
    sd : list of float, optional
        The noise standard deviation of each level's figures.  Default: each level's
        ``{value}_sd`` column (``dp_group_by(..., intervals=True)`` adds it).

    Returns
    -------
    list of polars.DataFrame
        The levels with the same rows, in the same order: ``value`` replaced by the
        consistent estimate (Float64; counts are no longer integers), and, where present,
        ``{value}_sd`` by its standard deviation and ``{value}_ci_low`` / ``_ci_high`` by
        ± 1.96 of it (a normal approximation: a cell whose own Laplace noise dominates is
        covered about 94% of the time).  Other columns are kept as they were: a mean
        released beside them is not updated (divide the consistent sum by the consistent
        count for one that agrees).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> days = pl.DataFrame({"region": ["n", "n", "s"], "day": [1, 2, 1], "count": [10, 20, 5], "count_sd": [1.0] * 3})
    >>> regions = pl.DataFrame({"region": ["n", "s"], "count": [33, 5], "count_sd": [1.0, 1.0]})
    >>> fine, coarse = ppdm.consistent_totals([days, regions], "count", by=["region", "day"])
    >>> fine["count"].to_list(), coarse["count"].to_list()
    ([11.0, 21.0, 5.0], [32.0, 5.0])
    """
    if isinstance(by, str):
        by = [by]
    if not isinstance(by, Sequence) or not by or not all(isinstance(c, str) for c in by):
        _fail("by", "a column name or a non-empty list of them", by)
    if not isinstance(value, str):
        _fail("value", "a column name", value)
    frames = _levels(levels, value, list(by))
    variances = _variances(frames, value, sd)
    parents = _parents(frames, list(by))
    figures = [f[value].cast(pl.Float64).to_numpy() for f in frames]
    estimates, spreads = consistent_hierarchy(figures, variances, parents)
    out = []
    for frame, estimate, variance in zip(frames, estimates, spreads, strict=True):
        sd_now = np.sqrt(variance)
        updates = [pl.Series(value, estimate)]
        if f"{value}_sd" in frame.columns:
            updates.append(pl.Series(f"{value}_sd", sd_now))
        if f"{value}_ci_low" in frame.columns:
            updates.append(pl.Series(f"{value}_ci_low", estimate - _Z95 * sd_now))
        if f"{value}_ci_high" in frame.columns:
            updates.append(pl.Series(f"{value}_ci_high", estimate + _Z95 * sd_now))
        out.append(frame.with_columns(updates))
    return out
