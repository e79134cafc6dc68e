"""The aggregates of :func:`polars_ppdm.dp_group_by`: ``dp.count()``, ``dp.sum(col, bounds=...)``,
``dp.mean(col, bounds=...)``.

Each is a description (what to compute, over which public bounds, with which share of
epsilon), checked when it is made; :func:`polars_ppdm.dp_group_by` computes them all in
one lazy query.  Named after Polars' expressions (``pl.len()``, ``pl.col(c).sum()``) and
BigQuery's differentially private aggregates (``COUNT``, ``SUM``, ``AVG`` with
``contribution_bounds_per_row``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from polars_ppdm._validation import is_real
from polars_ppdm.dp.accountant import check_epsilon
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import grid_of, to_grid

__all__ = ["DPAggregate", "count", "mean", "sum"]

Kind = Literal["count", "sum", "mean"]


@dataclass(frozen=True)
class DPAggregate:
    """One differentially private aggregate per group (made by :func:`count`, :func:`sum`
    or :func:`mean`)."""

    kind: Kind
    column: str | None
    bounds: tuple[float, float] | None
    name: str
    epsilon: float | None  # None: an even share of what the release's epsilon leaves

    @property
    def label(self) -> str:
        """What the noise stream is named after: the kind and the column."""
        return f"{self.kind}({self.column or ''})"

    def row_bound(self) -> float:
        """The most one row moves the aggregate's noisy quantity: 1 for a count, the
        largest |bound| for a sum, half the bounds' width for a mean's normalised sum
        (the values minus the bounds' midpoint)."""
        if self.kind == "count":
            return 1.0
        assert self.bounds is not None
        low, high = self.bounds
        return max(abs(low), abs(high)) if self.kind == "sum" else (high - low) / 2

    def grid(self, func: str) -> float:
        """The power-of-two grid this aggregate's values are summed and released on
        (:func:`polars_ppdm.kernels.dp_noise.grid_of` of :meth:`row_bound`); 1 for a count."""
        if self.kind == "count":
            return 1.0
        return grid_of(self.row_bound(), func, what=f"bounds of dp.{self.kind}({self.column!r})")

    def shift_units(self, func: str) -> int:
        """What a row's grid value is shifted by: 0 for a sum, the bounds' midpoint rounded
        to the grid for a mean (so the shift is exact: an integer number of grid units)."""
        if self.kind != "mean":
            return 0
        assert self.bounds is not None
        low, high = self.bounds
        return int(to_grid(low / 2 + high / 2, self.grid(func)))

    def units_bound(self, func: str) -> int:
        """The most one row moves the noisy quantity, in grid units, exactly: the largest
        ``|round(bound / grid) - shift|`` over the two bounds (rounding widens the
        sensitivity by at most half a unit per bound, and this counts it)."""
        if self.kind == "count":
            return 1
        assert self.bounds is not None
        grid, shift = self.grid(func), self.shift_units(func)
        ends = [int(to_grid(b, grid)) - shift for b in self.bounds]
        if max(abs(int(to_grid(b, grid))) for b in self.bounds) >= 2**53:
            msg = (
                f"{func}: the bounds {self.bounds} of dp.{self.kind}({self.column!r}) lie too far from zero for "
                "their width (more than 2^53 grid steps); shift the values towards zero first."
            )
            raise InvalidParameterError(msg)
        return max(1, *(abs(e) for e in ends))


def _bounds(kind: str, column: str, bounds: Any) -> tuple[float, float]:
    where = f"The 'bounds' parameter of dp.{kind}({column!r})"
    if bounds is None:
        msg = (
            f"{where} is missing: a {kind} needs public bounds=(low, high) to clamp each value to "
            "(they set the noise; never read them off the data)."
        )
        raise InvalidParameterError(msg)
    try:
        low, high = bounds
    except (TypeError, ValueError):
        msg = f"{where} must be a (low, high) pair of finite numbers. Got {bounds!r} instead."
        raise InvalidParameterError(msg) from None
    if not (is_real(low) and is_real(high) and math.isfinite(low) and math.isfinite(high)):
        msg = f"{where} must be a (low, high) pair of finite numbers. Got {bounds!r} instead."
        raise InvalidParameterError(msg)
    if not low < high:
        msg = f"{where} must have low < high. Got {bounds!r} instead (reversed or empty)."
        raise InvalidParameterError(msg)
    return float(low), float(high)


def _name(kind: str, name: Any, default: str) -> str:
    if name is None:
        return default
    if not isinstance(name, str) or not name:
        msg = f"The 'name' parameter of dp.{kind} must be a non-empty string (the output column). Got {name!r} instead."
        raise InvalidParameterError(msg)
    return name


def _column(kind: str, column: Any) -> str:
    if not isinstance(column, str) or not column:
        msg = f"The 'column' parameter of dp.{kind} must be a column name. Got {column!r} instead."
        raise InvalidParameterError(msg)
    return column


def _epsilon(kind: str, epsilon: Any) -> float | None:
    return None if epsilon is None else check_epsilon(epsilon, f"dp.{kind}")


def _of_column(kind: Kind, column: Any, bounds: Any, name: Any, epsilon: Any) -> DPAggregate:
    """A sum or mean of ``column``, each argument checked (named ``<column>_<kind>``)."""
    column = _column(kind, column)
    return DPAggregate(
        kind,
        column,
        _bounds(kind, column, bounds),
        _name(kind, name, f"{column}_{kind}"),
        _epsilon(kind, epsilon),
    )


def count(*, name: str | None = None, epsilon: float | None = None) -> DPAggregate:
    """The noisy number of rows of each group (Int64; two-sided geometric noise).

    Parameters
    ----------
    name : str, optional
        The output column (default ``"count"``).
    epsilon : float, optional
        This aggregate's share of the release's epsilon (default: an even share).

    Examples
    --------
    >>> from polars_ppdm import dp
    >>> dp.count()
    DPAggregate(kind='count', column=None, bounds=None, name='count', epsilon=None)
    """
    return DPAggregate("count", None, None, _name("count", name, "count"), _epsilon("count", epsilon))


def sum(
    column: str,
    *,
    bounds: tuple[float, float] | None = None,
    name: str | None = None,
    epsilon: float | None = None,
) -> DPAggregate:
    """The noisy total of ``column`` per group, each value clamped to ``bounds`` (Float64).

    The values are rounded to a power-of-two grid (about ``max(|low|, |high|) x 2^-24``)
    and summed as integers; the noise is two-sided geometric in grid units, of scale
    ``max_groups_contributed x max_rows_per_group x max(|low|, |high|) / epsilon`` (the
    bound widened by the rounding), so the released figure is a whole number of grid
    steps whatever the data: its low-order bits reveal nothing (Mironov 2012).

    Examples
    --------
    >>> from polars_ppdm import dp
    >>> dp.sum("income", bounds=(0, 100_000)).name
    'income_sum'
    """
    return _of_column("sum", column, bounds, name, epsilon)


def mean(
    column: str,
    *,
    bounds: tuple[float, float] | None = None,
    name: str | None = None,
    epsilon: float | None = None,
) -> DPAggregate:
    """The noisy mean of ``column`` per group, each value clamped to ``bounds`` (Float64).

    Computed as ``midpoint + noisy sum of (value - midpoint) / noisy count`` (the
    normalised sum of PipelineDP): the shifted values lie in ``±(high - low) / 2``, so
    the sum never needs more noise than a plain sum (which scales with ``max(|low|,
    |high|)``) and far less when the bounds lie away from zero (age in [18, 100]: 41 instead
    of 100).  When the release also has a :func:`count`, the
    mean divides by that released count (free post-processing) and spends its whole
    epsilon on the sum; otherwise it splits its epsilon between a count and the sum.
    The result is clamped to ``bounds``.

    Examples
    --------
    >>> from polars_ppdm import dp
    >>> dp.mean("age", bounds=(18, 100), epsilon=0.5)
    DPAggregate(kind='mean', column='age', bounds=(18.0, 100.0), name='age_mean', epsilon=0.5)
    """
    return _of_column("mean", column, bounds, name, epsilon)
