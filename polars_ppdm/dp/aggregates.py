"""The aggregates of :func:`polars_ppdm.dp_group_by`: ``dp.count()``, ``dp.count_units()``,
``dp.sum(col, bounds=...)``, ``dp.mean(col, bounds=...)``, ``dp.variance`` and ``dp.std``
(population), ``dp.quantile(col, q, bounds=...)`` and ``dp.median``.

Each is a description (what to compute, over which public bounds, with which share of
epsilon), checked when it is made; :func:`polars_ppdm.dp_group_by` computes them all in
one lazy query.  Named after Polars' expressions (``pl.len()``, ``pl.col(c).sum()``,
``pl.col(c).quantile(q)``) and BigQuery's differentially private aggregates (``COUNT``,
``COUNT(DISTINCT unit)``, ``SUM``, ``AVG``, ``VAR_POP``, ``STDDEV_POP``,
``PERCENTILE_CONT`` with ``contribution_bounds_per_row``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_ppdm._validation import is_count, is_real
from polars_ppdm.dp.accountant import check_epsilon
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import grid_of, to_grid

__all__ = ["DPAggregate", "count", "count_units", "mean", "median", "quantile", "std", "sum", "variance"]

Kind = Literal["count", "count_units", "sum", "mean", "variance", "std", "quantile"]

#: Kinds whose values are summed on a grid (with ``bounds``); a variance or std also sums
#: the squares of its grid values.
SUMMED: tuple[str, ...] = ("sum", "mean", "variance", "std")
#: The candidates of a quantile when none are given: this many points, evenly spaced over
#: the bounds (both ends included).
DEFAULT_CANDIDATES = 1001
#: The most candidates a quantile may have (its noise is one draw per group and candidate).
MAX_CANDIDATES = 100_000
#: q is used exactly, as a fraction with a denominator up to this (0.9 is 9/10, 1/3 is
#: 1/3); a q that is no such fraction (0.1234567) is refused, never rounded.
Q_DENOMINATOR = 1_000_000
#: The square of a grid value is rounded to this many bits (a coarser grid of its own).
SQUARE_BITS = 24


@dataclass(frozen=True)
class DPAggregate:
    """One differentially private aggregate per group (made by :func:`count`, :func:`sum`
    or :func:`mean`)."""

    kind: Kind
    column: str | None
    bounds: tuple[float, float] | None
    name: str
    epsilon: float | None  # None: an even share of what the release's epsilon leaves
    q: Fraction | None = None  # a quantile's q
    candidates: tuple[float, ...] | None = field(default=None, repr=False)  # a quantile's outputs

    @property
    def label(self) -> str:
        """What the noise stream is named after: the kind and the column (and a quantile's q)."""
        if self.kind == "quantile":
            return f"quantile({self.column},{self.q})"
        return f"{self.kind}({self.column or ''})"

    @property
    def summed(self) -> bool:
        """Whether the values are summed on a grid (sum, mean, variance, std)."""
        return self.kind in SUMMED

    @property
    def has_interval(self) -> bool:
        """Whether the release has accuracy columns for it (all but a quantile, whose
        error is in ranks, not in the values)."""
        return self.kind != "quantile"

    @property
    def is_variance(self) -> bool:
        return self.kind in ("variance", "std")

    def row_bound(self) -> float:
        """The most one row moves the aggregate's noisy quantity: 1 for a count, the
        largest |bound| for a sum, half the bounds' width for a mean's (and a variance's)
        normalised sum (the values minus the bounds' midpoint)."""
        if not self.summed:
            return 1.0
        assert self.bounds is not None
        low, high = self.bounds
        return max(abs(low), abs(high)) if self.kind == "sum" else (high - low) / 2

    def grid(self, func: str) -> float:
        """The power-of-two grid this aggregate's values are summed and released on
        (:func:`polars_ppdm.kernels.dp_noise.grid_of` of :meth:`row_bound`); 1 for a count."""
        if not self.summed:
            return 1.0
        return grid_of(self.row_bound(), func, what=f"bounds of dp.{self.kind}({self.column!r})")

    def shift_units(self, func: str) -> int:
        """What a row's grid value is shifted by: 0 for a sum, the bounds' midpoint rounded
        to the grid for a mean, variance or std (so the shift is exact: an integer number
        of grid units)."""
        if self.kind not in ("mean", "variance", "std"):
            return 0
        assert self.bounds is not None
        low, high = self.bounds
        return int(to_grid(low / 2 + high / 2, self.grid(func)))

    def units_bound(self, func: str) -> int:
        """The most one row moves the noisy quantity, in grid units, exactly: the largest
        ``|round(bound / grid) - shift|`` over the two bounds (rounding widens the
        sensitivity by at most half a unit per bound, and this counts it)."""
        if not self.summed:
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

    def square_shift(self, func: str) -> int:
        """A variance's squares are ``(u^2 + 2^(k-1)) // 2^k`` for its grid value ``u``:
        ``k`` makes the largest about 2^SQUARE_BITS (integers, exact in every engine)."""
        bound = self.units_bound(func)
        return max(0, (bound * bound).bit_length() - SQUARE_BITS)

    def square_bound(self, func: str) -> int:
        """The largest rounded square: the squares lie in [0, this]."""
        bound, k = self.units_bound(func), self.square_shift(func)
        return (bound * bound + ((1 << k) >> 1)) >> k

    def square_middle(self, func: str) -> int:
        """What the rounded squares are shifted by (half their range), so that one row
        moves their sum by at most ``square_bound - square_middle``."""
        return self.square_bound(func) // 2

    def square_units_bound(self, func: str) -> int:
        return max(1, self.square_bound(func) - self.square_middle(func))

    def quantile_fraction(self) -> tuple[int, int]:
        """(numerator, denominator) of q."""
        assert self.q is not None
        return self.q.numerator, self.q.denominator


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


def _of_column(
    kind: Kind, column: Any, bounds: Any, name: Any, epsilon: Any, default: str | None = None
) -> DPAggregate:
    """A sum, mean, variance or std of ``column``, each argument checked (named
    ``default``, or ``<column>_<kind>``)."""
    column = _column(kind, column)
    return DPAggregate(
        kind,
        column,
        _bounds(kind, column, bounds),
        _name(kind, name, default or f"{column}_{kind}"),
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
    DPAggregate(kind='count', column=None, bounds=None, name='count', epsilon=None, q=None)
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
    DPAggregate(kind='mean', column='age', bounds=(18.0, 100.0), name='age_mean', epsilon=0.5, q=None)
    """
    return _of_column("mean", column, bounds, name, epsilon)


def count_units(*, name: str | None = None, epsilon: float | None = None) -> DPAggregate:
    """The noisy number of distinct privacy units in each group (Int64; BigQuery's
    ``COUNT(DISTINCT unit)``, Tumult's ``count_distinct`` of the privacy id).

    Each unit counts once in each group it is kept in (at most
    ``max_groups_contributed``): its sensitivity is ``max_groups_contributed`` (L1) and
    ``sqrt(max_groups_contributed)`` (L2), whatever ``max_rows_per_group``.  Without a
    privacy unit every row is one, and this is the count of rows.

    Parameters
    ----------
    name : str, optional
        The output column (default ``"units"``).
    epsilon : float, optional
        This aggregate's share of the release's epsilon (default: an even share).

    Examples
    --------
    >>> from polars_ppdm import dp
    >>> dp.count_units().name
    'units'
    """
    return DPAggregate(
        "count_units", None, None, _name("count_units", name, "units"), _epsilon("count_units", epsilon)
    )


def variance(
    column: str,
    *,
    bounds: tuple[float, float] | None = None,
    name: str | None = None,
    epsilon: float | None = None,
) -> DPAggregate:
    """The noisy population variance of ``column`` per group, each value clamped to
    ``bounds`` (Float64; BigQuery's ``VAR_POP``).

    The standard decomposition (as Google's and Tumult's libraries): a noisy count, a
    noisy sum of the values minus the bounds' midpoint and a noisy sum of their squares,
    each on an integer grid with exact noise; then ``mean of squares - square of the
    mean``, clamped to ``[0, ((high - low) / 2)^2]``.  The epsilon is split evenly
    between the sums (and a count of its own, unless the release has a :func:`count`,
    whose noisy figure it divides by).

    Examples
    --------
    >>> from polars_ppdm import dp
    >>> dp.variance("age", bounds=(18, 100)).name
    'age_var'
    """
    return _of_column("variance", column, bounds, name, epsilon, default=f"{column}_var")


def std(
    column: str,
    *,
    bounds: tuple[float, float] | None = None,
    name: str | None = None,
    epsilon: float | None = None,
) -> DPAggregate:
    """The noisy population standard deviation of ``column`` per group (Float64;
    BigQuery's ``STDDEV_POP``): the square root of :func:`variance` (post-processing).

    Examples
    --------
    >>> from polars_ppdm import dp
    >>> dp.std("age", bounds=(18, 100)).name
    'age_std'
    """
    return _of_column("std", column, bounds, name, epsilon, default=f"{column}_std")


def quantile(
    column: str,
    q: float | Sequence[float],
    *,
    bounds: tuple[float, float] | None = None,
    candidates: int | Sequence[float] | None = None,
    name: str | None = None,
    epsilon: float | None = None,
) -> DPAggregate | list[DPAggregate]:
    """The noisy ``q``-quantile of ``column`` per group, one of public ``candidates``
    (Float64; BigQuery's ``PERCENTILE_CONT``, OpenDP's and Tumult's quantile).

    The exponential mechanism over the candidates (Smith 2011), as report noisy max with
    exact one-sided integer noise (the discrete permute-and-flip of McKenna and Sheldon
    2020): candidate ``c`` scores ``|(1 - q) #{x < c} - q #{x > c}|`` (0 at the true
    quantile; one row moves it by at most ``max(q, 1 - q)``), each score gets one-sided
    geometric noise of scale ``2 x max_groups_contributed x max_rows_per_group x max(q,
    1 - q) / epsilon`` keyed by (release, group, candidate), and the candidate of the
    best noisy score is released (the first on a tie).  Scores are integers: ``q`` must
    be a fraction of denominator at most 1,000,000 (six decimals, or 1/3 and the like),
    used exactly (0.9 is 9/10); another q is refused, not rounded.  Under ``mechanism="gaussian"`` a quantile's
    share ``rho`` makes each group's choice ``sqrt(2 rho / max_groups_contributed)``-DP
    (an epsilon-DP choice is epsilon^2/2-zCDP, and a unit's groups add up in rho, not in
    epsilon: a scale ``sqrt(max_groups_contributed)`` times smaller).  A quantile has no
    interval columns: its error is in ranks, and ranks of the data are not released.

    Parameters
    ----------
    column : str
        The numeric column.
    q : float or sequence of float
        In [0, 1], at most six decimals; several give one aggregate each (a list), named
        ``<column>_q<q>``, each with its own share of the release's epsilon (an
        ``epsilon=`` given here is split evenly between them).
    bounds : (float, float)
        Public bounds of the values: the default candidates span them.  Values outside
        them are not clamped (a rank needs no clamping); the result is a candidate.
    candidates : int or sequence of float, optional
        The public values the result is chosen from: a strictly increasing sequence of
        finite numbers within ``bounds``, or how many points to space evenly over them
        (default 1001, ends included; at most 100,000).  Their spacing is the finest
        resolution of the result.
    name : str, optional
        The output column (one q only).
    epsilon : float, optional
        The aggregate's share of the release's epsilon, split evenly between several q.

    References
    ----------
    Smith, "Privacy-preserving statistical estimation with optimal convergence rates",
    STOC 2011.  McSherry, Talwar, "Mechanism design via differential privacy", FOCS 2007.
    McKenna, Sheldon, "Permute-and-flip: a new mechanism for differentially private
    selection", NeurIPS 2020; Ding, Kifer, Wang, Wang, "The permute-and-flip mechanism is
    identical to report-noisy-max with exponential noise", 2021.
    Dwork, Roth, *The Algorithmic Foundations of Differential Privacy*, 2014, 3.3-3.4
    (report noisy max).

    Examples
    --------
    >>> from polars_ppdm import dp
    >>> [a.name for a in dp.quantile("age", [0.25, 0.75], bounds=(18, 100))]
    ['age_q0.25', 'age_q0.75']
    >>> dp.quantile("age", 0.9, bounds=(18, 100), candidates=83).candidates[:3]
    (18.0, 19.0, 20.0)
    """
    return _quantile(column, q, bounds, candidates, name, epsilon, "quantile")


def _quantile(
    column: Any, q: Any, bounds: Any, candidates: Any, name: Any, epsilon: Any, kind: str
) -> DPAggregate | list[DPAggregate]:
    """:func:`quantile` (or :func:`median`: ``kind`` names the function in messages)."""
    column = _column(kind, column)
    low, high = _bounds(kind, column, bounds)
    grid = _candidates(kind, column, candidates, (low, high))
    many = isinstance(q, Sequence) and not isinstance(q, str)
    given = list(q) if many else [q]
    qs = [_q(column, v) for v in given]
    if not qs:
        msg = f"The 'q' parameter of dp.quantile({column!r}) must be a number in [0, 1] or a non-empty list of them."
        raise InvalidParameterError(msg)
    if len(set(qs)) != len(qs):
        msg = f"The 'q' parameter of dp.quantile({column!r}) repeats a quantile: {given}."
        raise InvalidParameterError(msg)
    if many and name is not None:
        msg = f"The 'name' parameter of dp.quantile({column!r}) names one quantile; with several q leave it out."
        raise InvalidParameterError(msg)
    share = _epsilon(kind, epsilon)
    if share is not None:
        share /= len(qs)
    made = [
        DPAggregate(
            "quantile",
            column,
            (low, high),
            _name("quantile", name, f"{column}_q{float(v):g}"),
            share,
            q=v,
            candidates=grid,
        )
        for v in qs
    ]
    return made if many else made[0]


def median(
    column: str,
    *,
    bounds: tuple[float, float] | None = None,
    candidates: int | Sequence[float] | None = None,
    name: str | None = None,
    epsilon: float | None = None,
) -> DPAggregate:
    """The noisy median of ``column`` per group: :func:`quantile` at 0.5, named
    ``<column>_median``.

    Examples
    --------
    >>> from polars_ppdm import dp
    >>> dp.median("age", bounds=(18, 100)).name
    'age_median'
    """
    made = _quantile(column, 0.5, bounds, candidates, name or f"{column}_median", epsilon, "median")
    assert isinstance(made, DPAggregate)
    return made


def _q(column: str, value: Any) -> Fraction:
    if not is_real(value) or not 0 <= value <= 1 or math.isnan(value):
        msg = (
            f"The 'q' parameter of dp.quantile({column!r}) must be a number in [0, 1]. Got {value!r} instead."
        )
        raise InvalidParameterError(msg)
    decimal = Fraction(str(float(value)))  # 0.9 as 9/10, not as its binary float
    exact = decimal if decimal.denominator <= Q_DENOMINATOR else decimal.limit_denominator(Q_DENOMINATOR)
    if float(exact) != float(value):  # 1/3 passes: its fraction rounds to the very float
        msg = (
            f"The 'q' parameter of dp.quantile({column!r}) must be a fraction of denominator at most "
            f"{Q_DENOMINATOR:,} (at most six decimals), which it is used as exactly. Got {value!r}, which is "
            f"not one (the nearest is {exact}); round it to six decimals."
        )
        raise InvalidParameterError(msg)
    return exact


def _candidates(kind: str, column: str, candidates: Any, bounds: tuple[float, float]) -> tuple[float, ...]:
    where = f"The 'candidates' parameter of dp.{kind}({column!r})"
    low, high = bounds
    if candidates is None:
        candidates = DEFAULT_CANDIDATES
    if isinstance(candidates, pl.Series):  # as a list (a NumPy array is taken as it is)
        candidates = candidates.to_list()
    if is_count(candidates):
        if not 2 <= candidates <= MAX_CANDIDATES:
            msg = f"{where} must be between 2 and {MAX_CANDIDATES:,} points. Got {candidates!r} instead."
            raise InvalidParameterError(msg)
        spaced = np.linspace(low, high, int(candidates))
        spaced[-1] = high
        return tuple(float(v) for v in spaced)
    if isinstance(candidates, str) or not isinstance(candidates, Sequence | np.ndarray):
        msg = f"{where} must be a number of points or a sequence of numbers. Got {candidates!r} instead."
        raise InvalidParameterError(msg)
    values = list(candidates)
    if not all(is_real(v) and math.isfinite(v) for v in values):
        msg = (
            f"{where} must hold finite numbers only. Got {values[:10]!r}{'...' if len(values) > 10 else ''}."
        )
        raise InvalidParameterError(msg)
    points = [float(v) for v in values]
    if not 1 <= len(points) <= MAX_CANDIDATES:
        msg = f"{where} must hold 1 to {MAX_CANDIDATES:,} values. Got {len(points)}."
        raise InvalidParameterError(msg)
    wrong = next(((a, b) for a, b in itertools.pairwise(points) if b <= a), None)
    if wrong is not None:
        msg = (
            f"{where} must be strictly increasing (sorted, no repeats). Got {wrong[1]:g} after {wrong[0]:g}."
        )
        raise InvalidParameterError(msg)
    if points[0] < low or points[-1] > high:
        msg = f"{where} must lie within the bounds {bounds}. Got {points[0]:g} to {points[-1]:g}."
        raise InvalidParameterError(msg)
    return tuple(points)
