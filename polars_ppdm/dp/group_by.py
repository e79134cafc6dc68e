"""Differentially private aggregates per group, with a privacy unit: :func:`dp_group_by`.

The query, as one lazy Polars plan plus the keyed noise:

1. **Rows per group.** Each privacy unit keeps at most ``max_rows_per_group`` rows in a
   group: those of smallest contribution word (a keyed PRF of the unit and the row's
   values, :func:`polars_ppdm.kernels.dp_noise.contribution_words`), so the rows kept
   depend neither on row order nor on batches or engines.
2. **Groups per unit.** The unit's rows are summed per group (count, clamped sums); each
   unit keeps at most ``max_groups_contributed`` groups: those of smallest keyed word of
   (unit, group).
3. **Groups released.** Public groups (a frame): exactly those, empty ones too. Otherwise
   partition selection: a group is released when its noisy number of privacy units
   reaches a threshold set by ``delta`` (see :func:`selection_threshold`).
4. **Noise**, exact two-sided geometric, keyed by (release, aggregate, group): counts in
   units of one row, sums and means in units of their power-of-two grid (values are
   rounded to it and summed as integers), scaled by ``max_groups_contributed x
   max_rows_per_group x`` the most one row moves the aggregate in those units, over its
   share of epsilon.  The release's key is derived from the secret and a digest of the
   per-group statistics it adds noise to (:mod:`polars_ppdm.kernels.release_key`): the
   same secret over the same data gives the same numbers on every engine and every retry,
   and over any other data (a row added, a value changed) independent noise.

Sensitivity: one unit changes at most ``max_groups_contributed`` groups, each by at
most ``max_rows_per_group`` rows; that is the L1 sensitivity of the counts, and times the
clamping bound that of the sums.

References
----------
Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo, Gipson, "Differentially private SQL
with bounded user contribution", PoPETs 2020 (contribution bounding per group and
across groups; BigQuery's ``max_groups_contributed``).  Korolova, Kenthapadi, Mishra,
Ntoulas, "Releasing search queries and clicks privately", WWW 2009, and Desfontaines,
Voss, Gipson, Mandayam, "Differentially private partition selection", PoPETs 2022
(Laplace thresholding).  Ghosh, Roughgarden, Sundararajan, STOC 2009 (the geometric
mechanism).
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._frame import Frame, as_lazy, fresh_names, like, map_whole, schema_of
from polars_ppdm._validation import (
    INTERVAL_SUFFIXES,
    check_columns,
    check_int,
    check_output_names,
    check_real,
)
from polars_ppdm.dp._common import (
    NOT_CHARGED,
    charge,
    check_accountant,
    check_unit_key,
    release_secret,
    unit_words,
)
from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock
from polars_ppdm.dp.aggregates import DPAggregate
from polars_ppdm.dp.mechanism import Mechanism, check_mechanism
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import NULL_BITS, check_integer_scale, discrete_laplace, one_sided_geometric
from polars_ppdm.kernels.prf import first_words, stream_id
from polars_ppdm.kernels.release_key import query_label, release_key, row_words, table_digest
from polars_ppdm.secret import SecretLike

__all__ = [
    "GROUP_STREAM",
    "GroupByRequest",
    "GroupDraws",
    "bounded_groups",
    "check_flag",
    "check_group_by",
    "check_group_key_dtype",
    "dp_group_by",
    "group_words",
    "quantile_of",
    "release_groups",
    "release_stream",
    "selection_threshold",
    "string_bits",
    "values_digests",
    "variance_of",
]

_FUNC = "dp_group_by"
_Z95 = 1.959963984540054
GROUP_STREAM = "dp_group_by/group"


@dataclass(frozen=True)
class _Helpers:
    """The names of the query's helper columns, apart from the frame's columns it keeps
    (the group columns and the privacy unit): a user's column may be called anything,
    "__ppdm_rows" included.  A helper's name never enters the release's bits."""

    rows: str  # per group: the rows kept
    units: str  # per group: the privacy units (per row: the first row of a unit's group)
    bad: str  # null, NaN or infinite values
    keep: str  # a row within the contribution bounds
    row_word: str  # orders a unit's rows in a group
    pair_word: str  # orders a unit's groups
    grid: dict[str, str]  # per summed aggregate (by its name): the values in grid units
    squares: dict[str, str]  # per variance or std (by its name): the rounded squares, shifted
    values: dict[str, str]  # per quantile column: its value per row (the row word reads it)
    ranks: dict[str, str]  # per quantile (by its name): per row its candidate code; per group their counts
    digests: dict[str, tuple[str, str]]  # per quantile column: low and high halves of its values' digest

    @classmethod
    def apart_from(cls, kept: Sequence[str], aggregates: Sequence[DPAggregate]) -> _Helpers:
        summed = [a.name for a in aggregates if a.summed]
        squared = [a.name for a in aggregates if a.is_variance]
        ranked = list(dict.fromkeys(a.column for a in aggregates if a.kind == "quantile" and a.column))
        quantiles = [a.name for a in aggregates if a.kind == "quantile"]
        names = iter(
            fresh_names(
                kept,
                *(f"__ppdm_{h}" for h in ("rows", "units", "bad", "keep", "row_word", "pair_word")),
                *(f"__ppdm_grid_{i}" for i in range(len(summed))),
                *(f"__ppdm_square_{i}" for i in range(len(squared))),
                *(f"__ppdm_values_{i}" for i in range(len(ranked))),
                *(f"__ppdm_ranks_{i}" for i in range(len(quantiles))),
                *(f"__ppdm_digest_{half}_{i}" for i in range(len(ranked)) for half in ("low", "high")),
            )
        )
        rows, units, bad, keep, row_word, pair_word = (next(names) for _ in range(6))
        return cls(
            rows,
            units,
            bad,
            keep,
            row_word,
            pair_word,
            {a: next(names) for a in summed},
            {a: next(names) for a in squared},
            {c: next(names) for c in ranked},
            {a: next(names) for a in quantiles},
            {c: (next(names), next(names)) for c in ranked},
        )


def selection_threshold(epsilon: float, delta: float, max_groups: int) -> int:
    """The smallest number of privacy units (true count plus noise) at which a group is
    released by partition selection.

    The noisy unit count of a group is its true count plus two-sided geometric noise of
    scale ``max_groups / epsilon`` (one unit is in at most ``max_groups`` groups).  A group
    of a single unit is released when ``1 + X >= T``, with probability ``alpha^(T-1) /
    (1 + alpha)``; T is the smallest threshold that keeps this at most ``delta /
    max_groups``, so the groups a unit alone creates are released with probability at most
    ``delta`` together (Laplace thresholding, Korolova et al. 2009; Desfontaines et al.
    2022).

    Examples
    --------
    >>> selection_threshold(1.0, 1e-6, 1)   # ln(1e-6 x 1.37) / ln(e^-1) = 13.5
    15
    """
    scale = max_groups / epsilon
    alpha = math.exp(-1.0 / scale)
    per_group = delta / max_groups
    if alpha == 0.0:  # no noise: a group of one unit never reaches 2
        return 2
    return 1 + max(0, math.ceil(math.log(per_group * (1 + alpha)) / math.log(alpha) - 1e-9))


def group_words(secret: bytes, groups: pl.DataFrame) -> np.ndarray:
    """The keyed 64-bit word of each group: the key of its noise.

    A chain of AES under the secret over the group's values, one link per column::

        w_0 = 0
        w_j = word 0 of AES(secret, stream_id("dp_group_by/group/" + str(j - 1)) || (w_(j-1) XOR b_j))
        w_j = word 0 of AES(secret, stream_id("dp_group_by/group/" + str(j - 1) + "/null") || w_(j-1))
              where the value is null

    where b_j is the value's 64-bit pattern for an integer (two's complement), 0/1 for a
    Boolean, the first 8 bytes of HMAC-SHA256(secret, UTF-8) for a string.  A null links
    in a stream of its own: every 64-bit pattern is some integer's, so a pattern standing
    for null would give the null group and that integer's group one noise draw, and the
    difference of their released counts exactly.  Keyed throughout, so no one without the
    secret can make two groups share noise (an unkeyed string hash such as FNV can be
    steered into collisions).
    """
    word = np.zeros(groups.height, dtype=np.uint64)
    for j, column in enumerate(groups.get_columns()):
        linked = word ^ _value_bits(secret, column)
        if not column.null_count():
            word = first_words(secret, stream_id(f"{GROUP_STREAM}/{j}"), linked)
            continue
        nulls = column.is_null().to_numpy()
        valued = ~nulls
        word[valued] = first_words(secret, stream_id(f"{GROUP_STREAM}/{j}"), linked[valued])
        word[nulls] = first_words(secret, stream_id(f"{GROUP_STREAM}/{j}/null"), word[nulls])
    return word


def _value_bits(secret: bytes, column: pl.Series) -> np.ndarray:
    nulls = column.is_null().to_numpy() if column.null_count() else None
    dtype = column.dtype
    if dtype == pl.Boolean:
        bits = column.fill_null(False).cast(pl.UInt64).to_numpy()
    elif dtype.is_integer():
        filled = column.fill_null(0)
        bits = filled.to_numpy() if dtype == pl.UInt64 else filled.cast(pl.Int64).to_numpy().view(np.uint64)
    else:
        bits = string_bits(secret, column.cast(pl.String).fill_null(""))
    bits = np.ascontiguousarray(bits, dtype=np.uint64)
    if nulls is not None:
        bits = np.where(nulls, NULL_BITS, bits)
    return bits


def string_bits(secret: bytes, text: pl.Series) -> np.ndarray:
    """The 64-bit pattern of each string group value: the first 8 bytes (little-endian)
    of HMAC-SHA256 under a key derived from the secret, computed once per distinct value."""
    key = hmac.new(secret, b"polars_ppdm/dp_group_by/string", hashlib.sha256).digest()
    codes = {
        value: int.from_bytes(hmac.new(key, value.encode(), hashlib.sha256).digest()[:8], "little")
        for value in text.unique().to_list()
    }
    return text.replace_strict(codes, return_dtype=pl.UInt64).to_numpy()


_GROUP_DTYPES = "integer, String, Categorical, Enum or Boolean"


def check_group_key_dtype(dtype: pl.DataType, column: str, func: str) -> None:
    """Refuse, by its dtype alone, a group column whose values have no 64-bit pattern: a
    float, or a 128-bit integer (its values past 64 bits would fail a cast whose message
    quotes them)."""
    wide = dtype in (pl.Int128, pl.UInt128) if hasattr(pl, "UInt128") else dtype == pl.Int128
    if not wide and (
        dtype.is_integer() or dtype in (pl.String, pl.Categorical, pl.Boolean) or isinstance(dtype, pl.Enum)
    ):
        return
    msg = (
        f"The 'by' parameter of {func}: group column {column!r} must be {_GROUP_DTYPES} of at most 64 bits (a "
        f"float is no group key; cast a 128-bit integer to String). Got dtype {dtype} instead."
    )
    raise InvalidParameterError(msg)


def _check_group_dtype(schema: pl.Schema, column: str) -> None:
    check_group_key_dtype(schema[column], column, _FUNC)


@dataclass(frozen=True)
class GroupByRequest:
    """The checked parameters of a :func:`dp_group_by` call."""

    by: list[str]
    aggregates: list[DPAggregate]
    epsilons: dict[str, float]  # per aggregate name, and "__select" for partition selection
    privacy_unit: str | None
    max_groups: int
    max_rows: int
    public_groups: pl.DataFrame | None
    delta: float | None
    epsilon: float  # the release's budget, in the mechanism's unit (epsilon, or rho)
    mechanism: Mechanism | None = None  # None: Laplace of budget ``epsilon``

    @property
    def noise(self) -> Mechanism:
        return self.mechanism or Mechanism("laplace", self.epsilon)

    @property
    def contributions(self) -> int:
        """How many rows one unit can add to the whole table: the L1 sensitivity of a count."""
        return self.max_groups * self.max_rows

    def _scale(self, units: int, budget: float) -> float:
        """The noise of a per-group figure to which a unit adds at most ``units`` per row:
        L1 sensitivity ``max_groups * max_rows * units``, L2 ``sqrt(max_groups) * max_rows
        * units`` (at most max_rows rows in each of at most max_groups groups)."""
        l1 = self.contributions * units
        l2 = math.sqrt(self.max_groups) * self.max_rows * units
        return self.noise.scale(l1, l2, budget)

    def _part(self, aggregate: DPAggregate) -> float:
        """The budget of each noisy figure of ``aggregate``: its share split evenly between
        them (epsilon or rho alike).  A mean has a sum and, unless the release has a
        count it divides by (post-processing), a count of its own; a variance or std a sum,
        a sum of squares and maybe its own count."""
        figures = 1
        if aggregate.kind == "mean":
            figures = 1 if self.shared_count() else 2
        elif aggregate.is_variance:
            figures = 2 if self.shared_count() else 3
        return self.epsilons[aggregate.name] / figures

    def scale(self, aggregate: DPAggregate) -> float:
        """The noise scale (Laplace) or sigma (Gaussian) of ``aggregate``'s noisy
        quantity (a mean's or variance's: its normalised sum), in its grid units (rows
        for a count, privacy units for a count of units)."""
        budget = self._part(aggregate)
        if aggregate.kind == "count_units":  # a unit is once in at most max_groups groups
            return self.noise.scale(self.max_groups, math.sqrt(self.max_groups), budget)
        return self._scale(aggregate.units_bound(_FUNC), budget)

    def square_scale(self, aggregate: DPAggregate) -> float:
        """The noise scale of a variance's sum of (shifted, rounded) squares."""
        return self._scale(aggregate.square_units_bound(_FUNC), self._part(aggregate))

    def count_scale(self, aggregate: DPAggregate) -> float:
        """The noise scale of the count a mean or variance divides by: the released
        count's when the release has one (post-processing), else its own."""
        shared = self.shared_count()
        if shared is not None:
            return self.scale(shared)
        return self._scale(1, self._part(aggregate))

    def quantile_epsilon(self, aggregate: DPAggregate) -> float:
        """The epsilon of a quantile's choice in each group.

        A unit is in at most ``max_groups`` groups, each choice independent.  Laplace
        accounting composes them purely: ``share / max_groups`` each.  Under zCDP an
        epsilon-DP choice costs ``epsilon^2 / 2`` and the unit's groups add up:
        ``sqrt(2 rho / max_groups)`` each, ``sqrt(max_groups)`` times more than pure
        composition would allow (Bun and Steinke 2016, Prop. 1.4 and Lemma 2.3)."""
        share = self.epsilons[aggregate.name]
        if self.noise.name == "gaussian":
            return math.sqrt(2 * share / self.max_groups)
        return share / self.max_groups

    def quantile_scale(self, aggregate: DPAggregate) -> float:
        """The geometric noise of a quantile's scores (integers: ``q`` = num/den, scores
        times den): a unit moves a group's scores by at most ``max_rows x max(num, den -
        num)``; report noisy max over scores that move both ways takes twice the
        sensitivity, over the epsilon of one group's choice."""
        num, den = aggregate.quantile_fraction()
        sensitivity = self.max_rows * max(num, den - num)
        return 2 * sensitivity / self.quantile_epsilon(aggregate)

    def shared_count(self) -> DPAggregate | None:
        return next((a for a in self.aggregates if a.kind == "count"), None)

    @cached_property
    def helpers(self) -> _Helpers:
        """The query's helper columns, named apart from the group and unit columns."""
        kept = [*self.by, *([self.privacy_unit] if self.privacy_unit else [])]
        return _Helpers.apart_from(kept, self.aggregates)

    @property
    def value_columns(self) -> list[str]:
        seen: dict[str, None] = {}
        for a in self.aggregates:
            if a.column is not None:
                seen[a.column] = None
        return list(seen)

    def stream_label(self, a: DPAggregate) -> str:
        """What ``a``'s noise streams are named after (:func:`_stream_label`)."""
        return _stream_label(a, self.aggregates)

    @property
    def label(self) -> str:
        """The release's name: in the accountant (every engine)."""
        return f"{_FUNC}({', '.join(self.by)})"

    @property
    def key_label(self) -> str:
        """The label of the noise's key: the release and its whole query (each aggregate's
        kind, column, bounds, quantile and candidates and share of the budget; the privacy
        unit's column and the contribution bounds; public groups or delta; mechanism and
        budget), so that another query never shares its noise where the statistics happen
        to be equal (:func:`~polars_ppdm.kernels.release_key.query_label`).  Not the output
        names, the accuracy columns or ``non_negative``: presentation and post-processing."""
        return query_label(
            self.label,
            {
                "aggregates": [
                    [
                        a.kind,
                        a.column,
                        None if a.bounds is None else tuple(map(float, a.bounds)),
                        a.q,
                        None if a.candidates is None else _candidates_digest(a.candidates),
                        float(self.epsilons[a.name]),
                    ]
                    for a in self.aggregates
                ],
                "selection": self.epsilons.get("__select"),
                # The unit's column by name: bounded per person or per household, the same
                # table gives equal statistics exactly when nobody shares a household.
                "privacy_unit": self.privacy_unit,
                "max_groups": int(self.max_groups),
                "max_rows": int(self.max_rows),
                "public_groups": self.public_groups is not None,
                "delta": None if self.delta is None else float(self.delta),
                "mechanism": self.noise.name,
                "budget": float(self.noise.budget),
            },
        )

    def charge(
        self, accountant: BudgetAccountant | ParallelBlock | None, *, check_only: bool = False
    ) -> None:
        why = ", ".join(f"{name.strip('_')} {eps:g}" for name, eps in self.epsilons.items())
        charge(
            accountant,
            self.noise.epsilon,
            self.label,
            _FUNC,
            why=why,
            delta=self.delta or 0.0,
            check_only=check_only,
            rho=self.noise.rho,
            privacy_unit=self.privacy_unit,
        )


def _split_epsilon(epsilon: float, aggregates: Sequence[DPAggregate], selection: bool) -> dict[str, float]:
    """Each aggregate's epsilon: as given, or an even share of what is left (partition
    selection takes one share like an aggregate without its own epsilon)."""
    given = {a.name: a.epsilon for a in aggregates if a.epsilon is not None}
    shares = [a.name for a in aggregates if a.epsilon is None] + (["__select"] if selection else [])
    left = epsilon - math.fsum(given.values())
    if left < -1e-12 * epsilon or (shares and left <= 0):
        msg = (
            f"The aggregates' epsilons of {_FUNC} ({', '.join(f'{k} {v:g}' for k, v in given.items())}) "
            f"must add up to less than the release's epsilon {epsilon:g}"
            + (
                f", leaving a share for {', '.join(n if n != '__select' else 'partition selection' for n in shares)}"
                if shares
                else ""
            )
            + "."
        )
        raise InvalidParameterError(msg)
    out = dict(given)
    for name in shares:
        out[name] = left / len(shares)
    return out


def noise_request(
    aggregates: Sequence[DPAggregate],
    *,
    epsilon: float | None,
    max_groups_contributed: int,
    max_rows_per_group: int,
    delta: float | None,
    mechanism: str = "laplace",
    rho: float | None = None,
) -> GroupByRequest:
    """The noise of a release with these (already checked) parameters, without its data:
    what a report shows of a released frame.  ``mechanism="gaussian"`` takes ``rho`` (no
    ``epsilon``), split evenly between the aggregates as :func:`dp_group_by` splits it."""
    noise = check_mechanism(mechanism, epsilon, rho, _FUNC)
    epsilons = _split_epsilon(noise.budget, aggregates, selection=delta is not None)
    return GroupByRequest(
        [],
        list(aggregates),
        epsilons,
        None,
        max_groups_contributed,
        max_rows_per_group,
        None,
        delta,
        noise.budget,
        noise if noise.name == "gaussian" else None,
    )


def check_group_by(
    schema: pl.Schema,
    by: Any,
    aggregates: Any,
    *,
    epsilon: Any,
    privacy_unit: Any,
    max_groups_contributed: Any,
    max_rows_per_group: Any,
    public_groups: Any,
    delta: Any,
    intervals: Any = False,
    mechanism: Any = "laplace",
    rho: Any = None,
) -> GroupByRequest:
    """Every parameter of :func:`dp_group_by`, checked before any budget is spent (from
    the schema and the names: nothing is read)."""
    by = check_columns(by, list(schema.names()), _FUNC, name="by")
    for column in by:
        _check_group_dtype(schema, column)
    if isinstance(aggregates, DPAggregate):
        aggregates = [aggregates]
    if isinstance(aggregates, Sequence) and not isinstance(
        aggregates, str
    ):  # dp.quantile(c, [q, ...]) is a list
        aggregates = [b for a in aggregates for b in (a if isinstance(a, list) else [a])]
    if (
        not isinstance(aggregates, Sequence)
        or not aggregates
        or not all(isinstance(a, DPAggregate) for a in aggregates)
    ):
        msg = (
            f"The 'aggregates' parameter of {_FUNC} must be a non-empty list of dp.count(), dp.count_units(), "
            "dp.sum / dp.mean / dp.variance / dp.std(column, bounds=...) and dp.quantile(column, q, bounds=...). "
            f"Got {aggregates!r} instead."
        )
        raise InvalidParameterError(msg)
    aggregates = list(aggregates)
    intervals = check_flag("intervals", intervals)
    check_output_names(_FUNC, by=by, aggregates=[a.name for a in aggregates], intervals=intervals)
    _check_streams_apart(aggregates, by)
    for a in aggregates:
        if a.column is None:
            continue
        if a.column not in schema:
            msg = f"dp.{a.kind}({a.column!r}) of {_FUNC} names no column of the frame {list(schema.names())}."
            raise InvalidParameterError(msg)
        if not schema[a.column].is_numeric():
            msg = f"dp.{a.kind}({a.column!r}) of {_FUNC} needs a numeric column. Got dtype {schema[a.column]} instead."
            raise InvalidParameterError(msg)
    noise = check_mechanism(mechanism, epsilon, rho, _FUNC)
    if noise.name == "gaussian":
        own = [a.name for a in aggregates if a.epsilon is not None]
        if own:
            msg = (
                f"{_FUNC} with mechanism='gaussian' shares rho evenly between its aggregates; {own} have an "
                "epsilon= of their own, which is a Laplace budget. Leave it out (or use mechanism='laplace')."
            )
            raise InvalidParameterError(msg)
        if public_groups is None:
            msg = (
                f"{_FUNC} with mechanism='gaussian' needs public_groups: partition selection spends a delta, "
                "which zCDP accounting does not compose. Give the groups to release."
            )
            raise InvalidParameterError(msg)
    unit = None
    if privacy_unit is not None:
        unit = check_unit_key(privacy_unit, schema, _FUNC, name="privacy_unit")
        if unit in by:
            msg = f"The 'privacy_unit' parameter of {_FUNC} ({unit!r}) cannot be a group column: every group would be one person."
            raise InvalidParameterError(msg)
    max_groups = check_int("max_groups_contributed", max_groups_contributed, _FUNC, low=1)
    max_rows = check_int("max_rows_per_group", max_rows_per_group, _FUNC, low=1)
    if unit is None and (max_groups, max_rows) != (1, 1):
        msg = (
            f"{_FUNC}: max_groups_contributed={max_groups} and max_rows_per_group={max_rows} need privacy_unit= "
            "(the column naming the person); without it each row is its own privacy unit."
        )
        raise InvalidParameterError(msg)
    groups = _check_public_groups(public_groups, by, schema)
    if groups is None:
        if delta is None:
            msg = (
                f"The 'delta' parameter of {_FUNC} is missing: without public_groups the groups are chosen by "
                "partition selection, which needs a delta in (0, 1), e.g. 1e-6 (the chance that a group of one "
                "person is released)."
            )
            raise InvalidParameterError(msg)
        delta = check_real("delta", delta, _FUNC, low=0, high=1, open_low=True, open_high=True)
    elif delta is not None:
        msg = (
            f"The 'delta' parameter of {_FUNC} is for partition selection; with public_groups no group is "
            f"selected from the data, so leave delta out. Got {delta!r}."
        )
        raise InvalidParameterError(msg)
    epsilons = _split_epsilon(noise.budget, aggregates, selection=groups is None)
    request = GroupByRequest(
        by, aggregates, epsilons, unit, int(max_groups), int(max_rows), groups, delta, noise.budget, noise
    )
    # Integer noise for every figure: counts in rows, sums and means in grid units (a
    # mean's own count too).
    for a in aggregates:
        if a.kind == "quantile":  # report noisy max: geometric noise whatever the mechanism
            check_integer_scale(request.quantile_scale(a), _FUNC)
            continue
        noise.check_scale(request.scale(a), _FUNC)
        if a.kind == "mean" or a.is_variance:
            noise.check_scale(request.count_scale(a), _FUNC)
        if a.is_variance:
            noise.check_scale(request.square_scale(a), _FUNC)
    if groups is None:  # partition selection's noise
        check_integer_scale(int(max_groups) / epsilons["__select"], _FUNC)
    return request


def _dtype_kind(dtype: pl.DataType) -> str:
    """What a group value is, whatever its width: public groups must match it."""
    if dtype.is_integer():
        return "integer"
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum | pl.Categorical):
        return "string"
    if dtype.is_float():
        return "float"
    return str(dtype.base_type())


def _check_public_groups(public_groups: Any, by: list[str], schema: pl.Schema) -> pl.DataFrame | None:
    if public_groups is None:
        return None
    if isinstance(public_groups, pl.LazyFrame):
        public_groups = public_groups.collect()
    if not isinstance(public_groups, pl.DataFrame):
        msg = f"The 'public_groups' parameter of {_FUNC} must be a polars DataFrame of the group columns {by}. Got {type(public_groups).__name__}."
        raise InvalidParameterError(msg)
    extra = [c for c in public_groups.columns if c not in by]
    missing = [c for c in by if c not in public_groups.columns]
    if extra or missing:
        msg = (
            f"The 'public_groups' parameter of {_FUNC} must hold exactly the group columns {by}: "
            + (f"{extra} are not group keys" if extra else "")
            + ("; " if extra and missing else "")
            + (f"{missing} are missing" if missing else "")
            + "."
        )
        raise InvalidParameterError(msg)
    return public_groups_as_columns(public_groups, by, schema, _FUNC).unique(maintain_order=True)


def public_groups_as_columns(
    public_groups: pl.DataFrame, by: list[str], schema: pl.Schema, func: str
) -> pl.DataFrame:
    """The ``by`` columns of ``public_groups`` in the frame's own dtypes, duplicates kept:
    a group given in another kind of type is refused, not converted (``"01"`` would be
    the integer 1, and ``1.5`` too: one group listed twice), and a cast that fails is too."""
    try:
        for c in by:
            if _dtype_kind(public_groups.schema[c]) != _dtype_kind(schema[c]):
                msg = (
                    f"The 'public_groups' parameter of {func}: column {c!r} is {public_groups.schema[c]} but the "
                    f"frame's is {schema[c]}; give the groups in the column's own type (no conversion is guessed: "
                    "1 is not '1', 1.5 is not 1)."
                )
                raise InvalidParameterError(msg)
        return public_groups.select(pl.col(c).cast(schema[c], strict=True) for c in by)
    except pl.exceptions.PolarsError as error:
        msg = f"The 'public_groups' parameter of {func}: its columns do not cast to the frame's dtypes ({error})."
        raise InvalidParameterError(msg) from None


# ---- the query -----------------------------------------------------------------------------


def _per_row_sums(request: GroupByRequest) -> list[pl.Expr]:
    """Per sum and mean: the value clamped to the bounds, rounded to the aggregate's
    power-of-two grid and, for a mean, minus the midpoint's grid value (Int64 grid units:
    integer sums are exact and the same in any order, so every engine, batch size and
    thread count gives the same bits); a null or NaN value is counted as bad instead.
    Per variance or std also the square of the grid value, rounded to its own coarser
    grid and shifted by half its range (:meth:`DPAggregate.square_shift`), all in Int64."""
    exprs: list[pl.Expr] = []
    for a in request.aggregates:
        if not a.summed:
            continue
        assert a.column is not None and a.bounds is not None
        low, high = a.bounds
        clamped = pl.col(a.column).cast(pl.Float64).clip(low, high)
        # floor(x / grid + 0.5), not round(): the same bits in every engine and Polars version.
        units = ((clamped / a.grid(_FUNC) + 0.5).floor() - a.shift_units(_FUNC)).fill_nan(0).cast(pl.Int64)
        exprs.append(units.alias(request.helpers.grid[a.name]))
        if a.is_variance:
            k = a.square_shift(_FUNC)
            square = (units * units + ((1 << k) >> 1)) // (1 << k) - a.square_middle(_FUNC)
            exprs.append(square.alias(request.helpers.squares[a.name]))
    return exprs


def _ranked_values(request: GroupByRequest, secret: bytes) -> list[pl.Expr]:
    """Per quantile column: its values as Float64 (not clamped: a rank needs no bound) and
    the two 32-bit halves of each value's keyed digest word (summed per group: the
    group's :func:`values_digests`); per quantile: each value's candidate code
    (:func:`candidate_codes`).  All element-wise."""
    h = request.helpers
    exprs: list[pl.Expr] = []
    for c, name in h.values.items():
        value = pl.col(c).cast(pl.Float64)
        exprs.append(value.alias(name))
        word = pl.struct(
            *(pl.col(b).alias(f"g{i}") for i, b in enumerate(request.by)), value.alias("v")
        ).map_batches(
            lambda batch: pl.Series(_row_digest_words(batch, secret)),
            return_dtype=pl.UInt64,
            is_elementwise=True,
        )
        low, high = h.digests[c]
        exprs += [
            (word % (1 << 32)).cast(pl.Int64).alias(low),
            (word // (1 << 32)).cast(pl.Int64).alias(high),
        ]
    for a in request.aggregates:
        if a.kind == "quantile":
            assert a.candidates is not None and a.column is not None
            exprs.append(
                pl.col(a.column)
                .cast(pl.Float64)
                .map_batches(_coder(a.candidates), return_dtype=pl.Int64, is_elementwise=True)
                .alias(h.ranks[a.name])
            )
    return exprs


def _coder(candidates: Sequence[float]) -> Callable[[pl.Series], pl.Series]:
    """The batch function of :func:`candidate_codes` over these candidates."""
    points = np.asarray(candidates, dtype=np.float64)
    return lambda x: pl.Series(candidate_codes(x.fill_null(0.0).to_numpy(), points))


def _row_digest_words(batch: pl.Series, secret: bytes) -> np.ndarray:
    """Each row's digest word: the keyed word of (its group's word, its value)."""
    frame = batch.struct.unnest()
    words = group_words(secret, frame.drop("v"))
    return row_words(secret, [words, frame["v"].fill_null(0.0).to_numpy()])


def candidate_codes(values: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Each value's place among the candidates, as ``at_or_below * (C + 1) + below``
    (the candidates at or below it, those below it): what its rank score needs."""
    width = len(candidates) + 1
    at_or_below = np.searchsorted(candidates, values, side="right")
    below = np.searchsorted(candidates, values, side="left")
    return at_or_below.astype(np.int64) * width + below


def _bad_rows(request: GroupByRequest) -> pl.Expr:
    bad = pl.lit(False)
    for column in request.value_columns:
        value = pl.col(column).cast(pl.Float64)
        bad = bad | value.is_null() | ~value.is_finite()
    return bad


def row_helpers(lazy: pl.LazyFrame, request: GroupByRequest, secret: bytes) -> pl.LazyFrame:
    """Per row: the group columns, the privacy unit and the helper columns that are
    functions of the row alone (grid units, squares, ranked values with their digest
    halves and candidate codes, bad) -- element-wise, so any engine may compute them batch
    by batch (Spark does, through ``mapInArrow``)."""
    unit = request.privacy_unit
    return lazy.select(
        *request.by,
        *([unit] if unit else []),
        *_per_row_sums(request),
        *_ranked_values(request, secret),
        _bad_rows(request).alias(request.helpers.bad),
    )


def row_word_exprs(request: GroupByRequest, secret: bytes) -> tuple[pl.Expr, pl.Expr]:
    """Over :func:`row_helpers`' columns, with a privacy unit: the pair word (orders a
    unit's groups, ``helpers.pair_word``) and the row word (orders a unit's rows in a
    group, ``helpers.row_word``), both element-wise."""
    unit, h = request.privacy_unit, request.helpers
    assert unit is not None
    summed = [e.meta.output_name() for e in _per_row_sums(request)]  # in their order: it keys the word
    ranked = list(h.values.values())
    pair = _words(unit, request.by, secret, h.pair_word, groups=True)
    row = (
        _words(unit, summed + ranked, secret, h.row_word)
        if summed or ranked
        else pl.lit(0, dtype=pl.UInt64).alias(h.row_word)
    )
    return pair, row


def with_public_groups(grouped: pl.LazyFrame, request: GroupByRequest) -> pl.LazyFrame:
    """The per-group statistics of exactly the public groups, in their order (empty ones:
    zeros and empty lists of candidate counts)."""
    assert request.public_groups is not None
    lists = list(request.helpers.ranks.values())
    schema = grouped.collect_schema()
    return (
        request.public_groups.lazy()
        .join(grouped, on=request.by, how="left", nulls_equal=True, maintain_order="left")
        .with_columns(
            pl.exclude(*request.by, *lists).fill_null(0),
            *(pl.col(v).fill_null(pl.lit([], dtype=schema[v])) for v in lists),
        )
    )


def bounded_groups(lazy: pl.LazyFrame, request: GroupByRequest, secret: bytes) -> pl.LazyFrame:
    """Per group: the rows, the privacy units, the sums and the bad values (the helper
    columns of ``request.helpers``), after contribution bounding.

    The first half of :func:`dp_group_by`, shared with the Spark front-end (which computes
    the same table on Spark and takes only its columns and dtypes from here); the second
    half is :func:`release_groups`.  ``secret`` is the release's key
    (:func:`~polars_ppdm.dp._common.release_secret`).  An example: :func:`release_groups`.
    """
    by, unit, h = request.by, request.privacy_unit, request.helpers
    sum_names = [e.meta.output_name() for e in _per_row_sums(request)]
    rows = row_helpers(lazy, request, secret)
    per_group = [
        *(pl.col(s).sum() for s in sum_names),
        *(pl.col(half).sum() for halves in h.digests.values() for half in halves),
        *(pl.col(r).value_counts(name="n") for r in h.ranks.values()),  # (code, rows) pairs
        pl.col(h.bad).sum(),
    ]
    if unit is None:
        return rows.group_by(by).agg(pl.len().alias(h.rows), pl.len().alias(h.units), *per_group)
    # One sort by (unit, pair word, group, row word) puts each unit's groups in keyed
    # order and each group's rows in keyed order; positions then say which pairs and rows
    # to keep, in linear passes (window ranks over millions of units cost ~10x more).
    pair, row = row_word_exprs(request, secret)
    first = pl.int_range(pl.len()) == 0
    new_unit = first | pl.col(unit).ne_missing(pl.col(unit).shift(1))
    new_pair = new_unit | pl.col(h.pair_word).ne(pl.col(h.pair_word).shift(1))
    for column in by:  # two groups of one unit sharing a word stay two pairs
        new_pair = new_pair | pl.col(column).ne_missing(pl.col(column).shift(1))
    position = pl.int_range(pl.len(), dtype=pl.Int64)
    pair_number = new_pair.cast(pl.Int64).cum_sum()
    pair_in_unit = pair_number - pl.when(new_unit).then(pair_number).forward_fill() + 1
    row_in_pair = position - pl.when(new_pair).then(position).forward_fill() + 1
    kept = (
        rows.with_columns(pair, row)
        .sort([unit, h.pair_word, *by, h.row_word], maintain_order=False)
        .with_columns(
            new_pair.alias(h.units),
            ((pair_in_unit <= request.max_groups) & (row_in_pair <= request.max_rows)).alias(h.keep),
        )
        .filter(h.keep)
    )
    return kept.group_by(by).agg(
        pl.len().alias(h.rows),
        pl.col(h.units).sum(),  # a unit's kept rows in a group: one pair, its first row
        *per_group,
    )


def _words(unit: str, columns: list[str], secret: bytes, alias: str, *, groups: bool = False) -> pl.Expr:
    """The contribution word of each row of (unit, ``columns``), as a column (elementwise)."""
    fields = [pl.col(unit).alias("k"), *(pl.col(c).alias(f"c{i}") for i, c in enumerate(columns))]

    def words(batch: pl.Series) -> pl.Series:
        frame = batch.struct.unnest()
        values = [frame[f"c{i}"] for i in range(len(columns))]
        if groups:  # group values of any key dtype, as 64-bit patterns seen as float64 bits
            values = [pl.Series(_value_bits(secret, v).view(np.float64)) for v in values]
        return pl.Series(alias, unit_words(frame["k"], values, secret, _FUNC, key=unit), dtype=pl.UInt64)

    return pl.struct(fields).map_batches(words, return_dtype=pl.UInt64, is_elementwise=True).alias(alias)


#: Grid sums are int64: a group may hold at most this many rows of the largest grid value.
_MAX_SUM_UNITS = 2**62


def _refuse_bad_data(groups: pl.DataFrame, request: GroupByRequest) -> None:
    """The data-dependent refusals, before any charge; their messages say nothing
    computed from the data (no count, no value)."""
    if groups[request.helpers.bad].sum():
        msg = (
            f"{_FUNC}: the columns {request.value_columns} hold null, NaN or infinite values in the rows kept; "
            f"drop or fill them first ({NOT_CHARGED})."
        )
        raise InvalidParameterError(msg)
    bound = max((a.units_bound(_FUNC) for a in request.aggregates if a.summed), default=0)
    rows = groups[request.helpers.rows]
    if bound and groups.height and int(rows.to_numpy().max()) * bound >= _MAX_SUM_UNITS:
        msg = (
            f"{_FUNC}: a group holds more rows than its integer grid sums can add up exactly "
            f"(2^62 grid units); lower max_rows_per_group or split the release ({NOT_CHARGED})."
        )
        raise InvalidParameterError(msg)


def statistics_digest(groups: pl.DataFrame, words: np.ndarray, request: GroupByRequest, secret: bytes) -> int:
    """The digest the release's noise is keyed by: of every candidate group's word, rows,
    privacy units and grid sums, in the aggregates' order (the same table in every
    engine; :func:`polars_ppdm.kernels.release_key.table_digest`)."""
    h = request.helpers
    columns = [words, groups[h.rows].cast(pl.Int64).to_numpy(), groups[h.units].cast(pl.Int64).to_numpy()]
    for a in request.aggregates:
        if a.summed:
            columns.append(groups[h.grid[a.name]].cast(pl.Int64).to_numpy())
        if a.is_variance:
            columns.append(groups[h.squares[a.name]].cast(pl.Int64).to_numpy())
    for low, high in h.digests.values():  # every value a quantile ranks, per group
        halves = [groups[half].cast(pl.Int64).to_numpy().view(np.uint64) for half in (low, high)]
        columns.append(halves[0] + (halves[1] << np.uint64(32)))  # the words' sum, modulo 2^64
    return table_digest(secret, columns)


def values_digests(values: pl.Series, words: np.ndarray, secret: bytes) -> np.ndarray:
    """Per group (a list of values): the order-free keyed digest of its values, so that a
    quantile's noise changes whenever any value it ranks changes: the sum modulo 2^64 of
    the keyed words of (group word, value), which the engines add up per group from
    their 32-bit halves (:func:`row_helpers`)."""
    lengths = values.list.len().fill_null(0).to_numpy()
    flat = values.explode().drop_nulls().to_numpy().astype(np.float64)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    row = row_words(secret, [words[owner], flat])
    out = np.zeros(len(lengths), dtype=np.uint64)
    np.add.at(out, owner, row)  # wraps modulo 2^64, in any order
    return out


def _stream_label(a: DPAggregate, aggregates: Sequence[DPAggregate]) -> str:
    """What ``a``'s noise streams are named after: its label (the kind and the column),
    and where another aggregate of the release has the same label (a second sum of one
    column with other bounds, a second count under another name) its output name too.
    Two figures of one release never share a draw: over different true values (other
    bounds clip differently), the difference of two figures would be exact
    (:func:`_check_streams_apart` refuses names that would make two streams alike)."""
    if sum(b.label == a.label for b in aggregates) > 1:
        return f"{a.label}{chr(31)}{a.name}"
    return a.label


def _check_streams_apart(aggregates: Sequence[DPAggregate], by: Sequence[str]) -> None:
    """Refuse a release two of whose noise streams would have one name: each figure's,
    and a mean's or variance's own count and squares.  Labels are text, so a column named
    ``x)`` + chr(31) + ``s`` gave its sum the stream of a second sum of ``x`` named ``s)``:
    one draw over two truths, whose difference was then exact.  From the names alone.

    Nor one stream id: an id is 64 bits of a hash of the name (:func:`release_stream`),
    and someone who names columns could search about 2^32 names for two that share it
    (attack review 74's lead): refused as well, though no one has seen it happen."""
    names: list[str] = ["select"]
    for a in aggregates:
        label = _stream_label(a, aggregates)
        names.append(label)
        if a.kind in ("mean", "variance", "std"):
            names.append(f"count-of-{label}")
        if a.is_variance:
            names.append(f"squares-of-{label}")
    twice = sorted({n for n in names if names.count(n) > 1})
    ids = [release_stream(by, n) for n in names]
    twice += sorted({n for n, i in zip(names, ids, strict=True) if ids.count(i) > 1} - set(twice))
    if twice:
        msg = (
            f"The aggregates of {_FUNC} would draw their noise in one stream ({twice!r}): a column or output "
            "name holding ')' or the character \\x1f makes two figures' streams alike (or their names' 64-bit "
            "stream ids coincide), and one draw over two "
            "truths gives their difference away. Rename the column (frame.rename) or give the aggregate "
            "another name=."
        )
        raise InvalidParameterError(msg)


def _candidates_digest(candidates: Sequence[float]) -> str:
    """A quantile's candidates in a key's label: the SHA-256 of their float64 bytes (up
    to 100,000 of them)."""
    return hashlib.sha256((np.asarray(candidates, dtype="<f8") + 0.0).tobytes()).hexdigest()


def release_stream(by: Sequence[str], label: str) -> int:
    """The noise stream of a figure of a release by ``by``: an aggregate's label,
    ``count-of-<label>`` or ``squares-of-<label>`` for its own count and squares, or
    ``select`` for partition selection."""
    return stream_id(f"{_FUNC}/{chr(31).join(by)}/{label}")


@dataclass
class GroupDraws:
    """What every aggregate of one release draws its noise from: the released groups'
    helper columns (``request.helpers``), their keyed words, the request and the release
    key; and the counts already released (a mean or variance divides by the release's
    count).  Every engine builds one to release the same bits (DuckDB's variance and
    quantile UDFs too)."""

    request: GroupByRequest
    key: bytes
    words: np.ndarray
    groups: pl.DataFrame
    counts: dict[str, np.ndarray] = field(default_factory=dict)

    @cached_property
    def rows(self) -> np.ndarray:
        return self.groups[self.request.helpers.rows].cast(pl.Int64).to_numpy()

    def stream(self, label: str) -> int:
        return release_stream(self.request.by, label)

    def draw(self, label: str, scale: float) -> np.ndarray:
        """Exact integer noise of ``scale``, one draw per group, in the stream of ``label``."""
        return self.request.noise.draw(self.key, self.stream(label), self.words, scale)

    def column(self, name: str) -> np.ndarray:
        """A per-group helper column as int64 (grid sums, squares, units)."""
        return self.groups[name].cast(pl.Int64).to_numpy()


def release_groups(
    groups: pl.DataFrame,
    request: GroupByRequest,
    secret: bytes,
    intervals: bool,
    non_negative: bool,
    accountant: BudgetAccountant | ParallelBlock | None = None,
) -> pl.DataFrame:
    """The released groups with their noisy aggregates (small: one row per group).

    Runs when the query is evaluated: refuses bad data, then charges the accountant
    (every evaluation of a lazy release is a release), then draws the noise under the key
    of this release's statistics.  The second half of :func:`dp_group_by` after
    :func:`bounded_groups` (and :func:`with_public_groups`), shared with the Spark
    front-end: every engine releases through it, so the bits are the same.

    Examples
    --------
    >>> import polars as pl
    >>> from polars_ppdm import dp
    >>> from polars_ppdm.dp._common import release_secret
    >>> from polars_ppdm.secret import Secret
    >>> visits = pl.DataFrame({"region": ["n", "s", "n", "n"], "id": [1, 2, 3, 4]})
    >>> groups = pl.DataFrame({"region": ["n", "s"]})
    >>> args = dict(epsilon=1.0, privacy_unit="id", max_groups_contributed=1,
    ...             max_rows_per_group=1, public_groups=groups, delta=None)
    >>> request = check_group_by(visits.schema, "region", [dp.count()], **args)
    >>> key = release_secret(Secret.for_tests(1), "dp_group_by")
    >>> grouped = with_public_groups(bounded_groups(visits.lazy(), request, key), request)
    >>> released = release_groups(grouped.collect(), request, key, False, False)
    >>> released.equals(dp_group_by(visits, "region", dp.count(), secret=Secret.for_tests(1), **args))
    True
    """
    _refuse_bad_data(groups, request)
    request.charge(accountant)
    by = request.by
    words = group_words(secret, groups.select(by))
    key = release_key(secret, request.key_label, statistics_digest(groups, words, request, secret))
    if request.public_groups is None:
        assert request.delta is not None
        scale = request.max_groups / request.epsilons["__select"]
        noise = discrete_laplace(key, release_stream(by, "select"), words, scale)
        keep = groups[request.helpers.units].to_numpy() + noise >= selection_threshold(
            request.epsilons["__select"], request.delta, request.max_groups
        )
        groups, words = groups.filter(pl.Series(keep)), words[keep]
        # In the order of their keys: the hash table's order is neither stable across
        # runs (Polars 1.34) nor free of the data (it follows the rows' order).
        order = groups.select(pl.arg_sort_by([_sort_key(groups[c]) for c in by], nulls_last=True)).to_series()
        groups, words = groups[order], words[order.to_numpy()]
    out: dict[str, pl.Series] = {c: groups[c] for c in by}
    draws = GroupDraws(request, key, words, groups)
    # Counts first: a mean or variance divides by the release's count wherever it is listed.
    for a in sorted(request.aggregates, key=lambda a: a.kind not in ("count", "count_units")):
        sd: float | np.ndarray
        if a.kind in ("count", "count_units"):
            scale = request.scale(a)
            truth = draws.rows if a.kind == "count" else draws.column(request.helpers.units)
            value = truth + draws.draw(request.stream_label(a), scale)
            draws.counts[a.name] = value.astype(np.float64)
            shown = np.maximum(value, 0) if non_negative else value
            out[a.name] = pl.Series(a.name, shown.astype(np.int64))
            sd, half = request.noise.sd(scale), float(request.noise.half_width(scale))
            low, high = value - half, value + half
            if non_negative:  # a true count is >= 0: the interval clipped covers it as often
                low, high = np.maximum(low, 0), np.maximum(high, 0)
        elif a.kind == "quantile":
            out[a.name] = pl.Series(a.name, quantile_of(a, draws), dtype=pl.Float64)
            continue
        elif a.is_variance:
            value, sd, low, high = variance_of(a, draws)
            out[a.name] = pl.Series(a.name, value)
        elif a.kind == "sum":
            scale, grid = request.scale(a), a.grid(_FUNC)
            units = draws.column(request.helpers.grid[a.name]) + draws.draw(request.stream_label(a), scale)
            value = units.astype(np.float64) * grid  # an integer number of grid steps
            sd, half = request.noise.sd(scale) * grid, float(request.noise.half_width(scale)) * grid
            low, high = value - half, value + half
            assert a.bounds is not None
            if non_negative and a.bounds[0] >= 0:  # the value and its interval clipped alike
                value, low, high = np.maximum(value, 0.0), np.maximum(low, 0.0), np.maximum(high, 0.0)
            out[a.name] = pl.Series(a.name, value)
        else:
            value, sd_values = _mean(a, draws)
            out[a.name] = pl.Series(a.name, value)
            assert a.bounds is not None
            low = np.clip(value - _Z95 * sd_values, *a.bounds)
            high = np.clip(value + _Z95 * sd_values, *a.bounds)
            sd = sd_values
        if intervals and a.has_interval:  # INTERVAL_SUFFIXES' columns (check_output_names keeps them apart)
            spread = np.broadcast_to(np.asarray(sd, dtype=np.float64), (len(words),))
            for suffix, values in zip(INTERVAL_SUFFIXES, (spread, low, high), strict=True):
                out[a.name + suffix] = pl.Series(a.name + suffix, np.asarray(values, dtype=np.float64))
    # In the order the aggregates were given (the counts were drawn first).
    shown = [
        (a.name, *(a.name + suffix for suffix in INTERVAL_SUFFIXES if intervals and a.has_interval))
        for a in request.aggregates
    ]
    return pl.DataFrame(out).select(*by, *(c for columns in shown for c in columns))


def _own_count(a: DPAggregate, draws: GroupDraws) -> np.ndarray:
    """The noisy count a mean or variance divides by: the release's count (post-processing)
    or its own, drawn in a stream of its own."""
    shared = draws.request.shared_count()
    if shared is not None:
        return draws.counts[shared.name]
    label = f"count-of-{draws.request.stream_label(a)}"
    return (draws.rows + draws.draw(label, draws.request.count_scale(a))).astype(np.float64)


def variance_of(a: DPAggregate, draws: GroupDraws) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A variance (or its square root, a std) with its standard deviation and 95% interval.

    In grid units ``u`` (values minus the midpoint): ``m1 = noisy sum u / n`` and ``m2 =
    (noisy sum of shifted rounded squares / n + middle) 2^k``; the variance is ``(m2 -
    m1^2) grid^2``, clamped to ``[0, (width / 2)^2]`` (post-processing).  Its standard
    deviation by the delta method over the three noises; the interval is clamped, and a
    std's is the square root of the variance's (a monotone map)."""
    assert a.bounds is not None
    request, h = draws.request, draws.request.helpers
    grid, k, middle = a.grid(_FUNC), a.square_shift(_FUNC), a.square_middle(_FUNC)
    sum_scale, square_scale = request.scale(a), request.square_scale(a)
    label = request.stream_label(a)
    units = draws.column(h.grid[a.name]) + draws.draw(label, sum_scale)
    squares = draws.column(h.squares[a.name]) + draws.draw(f"squares-of-{label}", square_scale)
    count = _own_count(a, draws)
    n = np.maximum(count, 1.0)
    m1 = units.astype(np.float64) / n
    m2 = (squares.astype(np.float64) / n + middle) * 2.0**k
    largest = ((a.bounds[1] - a.bounds[0]) / 2) ** 2
    variance = np.clip((m2 - m1 * m1) * grid * grid, 0.0, largest)
    sd_sum, sd_squares, sd_count = (
        request.noise.sd(sum_scale),
        request.noise.sd(square_scale),
        request.noise.sd(request.count_scale(a)),
    )
    spread = (
        np.sqrt(
            (2.0**k * sd_squares / n) ** 2
            + (2 * m1 * sd_sum / n) ** 2
            + ((m2 - middle * 2.0**k - 2 * m1 * m1) / n * sd_count) ** 2
        )
        * grid
        * grid
    )
    low = np.clip(variance - _Z95 * spread, 0.0, largest)
    high = np.clip(variance + _Z95 * spread, 0.0, largest)
    if a.kind == "std":
        deviation = np.sqrt(variance)
        return deviation, spread / (2 * np.maximum(deviation, np.sqrt(spread))), np.sqrt(low), np.sqrt(high)
    return variance, spread, low, high


#: Groups x candidates scored at once (the scores are a dense matrix).
_SCORE_BLOCK = 1 << 22


def quantile_of(a: DPAggregate, draws: GroupDraws) -> np.ndarray:
    """Report noisy max over the candidates, per group: scores ``|(den - num) L - num G|``
    (L values below the candidate, G above) against one-sided geometric noise keyed by
    (group, candidate) (:func:`~polars_ppdm.kernels.dp_noise.one_sided_geometric`: the
    discrete permute-and-flip, which beat two-sided noise by 3-4% in rank error, as
    theory says); the first best candidate wins."""
    assert a.candidates is not None and a.column is not None
    request, key, words = draws.request, draws.key, draws.words
    stream = draws.stream(request.stream_label(a))
    counted = draws.groups[request.helpers.ranks[a.name]]
    candidates = np.asarray(a.candidates, dtype=np.float64)
    width = len(candidates)
    num, den = a.quantile_fraction()
    scale = request.quantile_scale(a)
    pairs = counted.list.len().fill_null(0).to_numpy()
    owner = np.repeat(np.arange(len(pairs)), pairs)
    flat = counted.explode().drop_nulls().struct.unnest()
    codes = flat.to_series(0).cast(pl.Int64).to_numpy()
    weight = flat.to_series(1).cast(pl.Int64).to_numpy()
    below_or_at = codes // (width + 1)  # candidates <= x: x < c_j iff j >= this
    below = codes % (width + 1)  # candidates < x: x > c_j iff j < this
    lengths = np.bincount(owner, weights=weight, minlength=len(pairs)).astype(np.int64)
    chosen = np.empty(len(lengths), dtype=np.int64)
    per_block = max(1, _SCORE_BLOCK // width)
    for start in range(0, len(lengths), per_block):
        stop = min(len(lengths), start + per_block)
        mine = (owner >= start) & (owner < stop)
        local, weights = owner[mine] - start, weight[mine]
        size = (stop - start) * (width + 1)
        # L[g, j] = #{x < c_j}: rows whose below_or_at <= j; G[g, j] = #{x > c_j} = n - #{below <= j}
        under = np.bincount(local * (width + 1) + below_or_at[mine], weights, minlength=size)
        not_over = np.bincount(local * (width + 1) + below[mine], weights, minlength=size)
        under = under.astype(np.int64).reshape(-1, width + 1)
        not_over = not_over.astype(np.int64).reshape(-1, width + 1)
        less = np.cumsum(under, axis=1)[:, :width]
        greater = lengths[start:stop, None] - np.cumsum(not_over, axis=1)[:, :width]
        scores = np.abs((den - num) * less - num * greater)
        # One keyed word per (group, candidate): the group's word plus the candidate's
        # index, through the PRF.  Two cells share a word only if two group words lie
        # within `width` of each other: odds ~ groups^2 x width / 2^64.
        cells = first_words(
            key,
            stream_id(f"{_FUNC}/quantile-candidate"),
            (words[start:stop, None] + np.arange(width, dtype=np.uint64)[None, :]).ravel(),
        )
        noise = one_sided_geometric(key, stream, cells, scale).reshape(stop - start, width)
        chosen[start:stop] = np.argmax(noise - scores, axis=1)
    return candidates[chosen]


def _sort_key(column: pl.Series) -> pl.Series:
    """What a group column sorts by: a Categorical by its text (its physical codes follow
    the order the data met them in), any other group dtype by itself (an Enum by its
    declared order)."""
    return column.cast(pl.String) if column.dtype == pl.Categorical else column


def _mean(a: DPAggregate, draws: GroupDraws) -> tuple[np.ndarray, np.ndarray]:
    """midpoint + noisy normalised sum / noisy count, clamped to the bounds (all on the
    grid until the division, post-processing); and its standard deviation by the delta
    method (the noise's, from the noisy figures)."""
    assert a.bounds is not None
    low, high = a.bounds
    grid = a.grid(_FUNC)
    mid = a.shift_units(_FUNC) * grid
    request = draws.request
    sum_scale = request.scale(a)
    units = draws.column(request.helpers.grid[a.name]) + draws.draw(request.stream_label(a), sum_scale)
    shifted = units.astype(np.float64) * grid
    count_scale = request.count_scale(a)
    count = _own_count(a, draws)
    denominator = np.maximum(count, 1.0)
    value = np.clip(mid + shifted / denominator, low, high)
    variance = (
        (request.noise.sd(sum_scale) * grid) ** 2
        + (shifted / denominator) ** 2 * request.noise.sd(count_scale) ** 2
    ) / denominator**2
    return value, np.sqrt(variance)


def dp_group_by(
    frame: Frame,
    by: str | Sequence[str],
    aggregates: DPAggregate | Sequence[DPAggregate],
    *,
    epsilon: float | None = None,
    privacy_unit: str | None = None,
    max_groups_contributed: int = 1,
    max_rows_per_group: int = 1,
    public_groups: pl.DataFrame | pl.LazyFrame | None = None,
    delta: float | None = None,
    secret: SecretLike = None,
    accountant: BudgetAccountant | ParallelBlock | None = None,
    intervals: bool = False,
    non_negative: bool = False,
    mechanism: str = "laplace",
    rho: float | None = None,
) -> Frame:
    """Differentially private count, sum and mean per group, each person protected.

    ``group_by(by).agg(...)`` with a privacy unit: each person (``privacy_unit``) adds at
    most ``max_rows_per_group`` rows to at most ``max_groups_contributed`` groups (the rows
    and groups kept chosen by the keyed randomness, never by row order), each value is
    clamped to its aggregate's public bounds, and every released figure gets noise scaled
    to what one person can change.  The groups are the ``public_groups`` (all of them,
    empty ones too, no other) or, without them, those that partition selection releases
    (``delta``: a group of one person comes out with probability at most delta).

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Returned as the same type (lazy stays lazy; with a privacy unit the plan sorts the
        rows by unit, which holds them in memory, as any per-person bounding must).
    by : str or sequence of str
        The group columns (integer, String, Categorical, Enum or Boolean).
    aggregates : list of DPAggregate
        :func:`polars_ppdm.dp.count`, :func:`polars_ppdm.dp.sum`,
        :func:`polars_ppdm.dp.mean`, each with its public ``bounds`` and optional share
        of epsilon.
    epsilon : float
        The release's budget (> 0): the aggregates' given epsilons, an even share of the
        rest for the others, and one share for partition selection when it runs.
    privacy_unit : str, optional
        The column naming the person (integer or string, no nulls).  Without it each row
        is its own unit (which assumes one row per person).
    max_groups_contributed, max_rows_per_group : int
        Contribution bounds (>= 1; BigQuery's names), 1 by default: a unit's one row in
        one group, so on an events table a count counts about the units, not the rows.
        Set them to what a unit typically contributes (the noise grows with their
        product); both 1 without a privacy unit.
    public_groups : polars.DataFrame, optional
        The groups to release, with exactly the ``by`` columns.
    delta : float, optional
        For partition selection (without public groups), in (0, 1); refused with them.
    secret : Secret, bytes, hex str, 'env:NAME' or None
        The secret of the noise, the rows kept and the groups selected (None: a fresh one
        from the OS).  The noise is keyed by the secret and a digest of the statistics
        released: the same secret over the same data reproduces the release bit for bit
        (on every engine), and over any other data (a row added, a value changed) draws
        independent noise.  Guessable secrets (an int, all-zero bytes) are refused: use
        ``ppdm.Secret.for_tests(seed)`` in tests.
    accountant : BudgetAccountant, optional
        Charged ``epsilon`` each time the release is computed (a LazyFrame: at every
        collect), after the data is read and checked, before any noise is drawn; bad data
        (nulls, NaN) is refused without a charge.
    intervals : bool
        Add per aggregate ``<name>_sd`` (the noise's standard deviation), ``<name>_ci_low``
        and ``<name>_ci_high`` (a 95% interval of the figure: exact for counts and sums,
        by the delta method for means).
    non_negative : bool
        Post-processing at no privacy cost: counts, and sums with bounds >= 0, clipped
        at 0 (this biases them upwards near 0; the intervals are those of the unclipped
        figures).
    mechanism : {"laplace", "gaussian"}
        The noise: discrete Laplace (pure epsilon-DP; takes ``epsilon``) or discrete
        Gaussian (rho-zCDP; takes ``rho``, shared evenly by the aggregates, public groups
        only).  A person's rows change the figures by ``max_groups_contributed *
        max_rows_per_group`` units in L1 but ``sqrt(max_groups_contributed) *
        max_rows_per_group`` in L2: the Gaussian pays off when people touch many groups
        and when many releases compose (zCDP).
    rho : float, optional
        The zCDP cost of a Gaussian release (> 0).

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        One row per released group: the ``by`` columns, then each aggregate's column
        (count Int64, sum and mean Float64) and, with ``intervals``, its accuracy
        columns.  Public groups come in their given order; selected groups in the order of
        their ``by`` values (nulls last), never in an order that follows the rows.

    Notes
    -----
    The bounding sorts every row by unit and keyed words.  An eager frame is released
    on Polars' in-memory engine; collect a lazy result with ``engine="in-memory"`` too:
    with Polars 2.1, the streaming engine (the default of ``collect()``) took 1.8x the
    time and 2x the memory on 10M rows (``benchmarks/bench_dp_group_by.py``).  The bits
    are the same on every engine.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> from polars_ppdm import dp
    >>> visits = pl.DataFrame({"person": [1, 1, 2, 3, 3, 3] * 500, "region": ["n", "s", "n", "s", "s", "n"] * 500,
    ...                        "spend": [10.0, 20.0, 5.0, 40.0, 8.0, 12.0] * 500})
    >>> out = ppdm.dp_group_by(visits, "region", [dp.count(), dp.mean("spend", bounds=(0, 50))],
    ...                        epsilon=1.0, privacy_unit="person", max_groups_contributed=2, max_rows_per_group=10,
    ...                        public_groups=pl.DataFrame({"region": ["n", "s", "w"]}), secret=ppdm.Secret.for_tests(7))
    >>> out.columns, out["region"].to_list()
    (['region', 'count', 'spend_mean'], ['n', 's', 'w'])
    """
    schema = schema_of(frame, _FUNC)
    request = check_group_by(
        schema,
        by,
        aggregates,
        epsilon=epsilon,
        privacy_unit=privacy_unit,
        max_groups_contributed=max_groups_contributed,
        max_rows_per_group=max_rows_per_group,
        public_groups=public_groups,
        delta=delta,
        intervals=intervals,
        mechanism=mechanism,
        rho=rho,
    )
    non_negative = check_flag("non_negative", non_negative)
    check_accountant(accountant, _FUNC)
    request.charge(accountant, check_only=True)  # refused before a row is read if over budget
    key = release_secret(secret, _FUNC)
    grouped = bounded_groups(as_lazy(frame), request, key)
    if request.public_groups is not None:
        grouped = with_public_groups(grouped, request)
    schema_out = _output_schema(request, schema, intervals)
    query = map_whole(
        grouped, lambda g: release_groups(g, request, key, intervals, non_negative, accountant), schema_out
    )
    # The in-memory engine: the bounding sorts every row at once, and Polars 2's streaming
    # sort took twice the time and memory on this plan (bench_dp_group_by); Polars 1 ran both
    # engines alike here.
    return like(frame, query, engine="in-memory")


def check_flag(name: str, value: Any) -> bool:
    """``value`` of the flag parameter ``name`` of :func:`dp_group_by` (``intervals``,
    ``non_negative``), refused unless True or False (every front-end says it alike).

    Examples
    --------
    >>> check_flag("intervals", True)
    True
    >>> check_flag("intervals", 1)
    Traceback (most recent call last):
    ...
    polars_ppdm.exceptions.InvalidParameterError: The 'intervals' parameter of dp_group_by must be True or False. Got 1 instead.
    """
    if not isinstance(value, bool):
        msg = f"The {name!r} parameter of {_FUNC} must be True or False. Got {value!r} instead."
        raise InvalidParameterError(msg)
    return value


def _output_schema(request: GroupByRequest, schema: pl.Schema, intervals: bool) -> dict[str, pl.DataType]:
    out: dict[str, pl.DataType] = {c: schema[c] for c in request.by}
    for a in request.aggregates:
        out[a.name] = pl.Int64() if a.kind in ("count", "count_units") else pl.Float64()
        if intervals and a.has_interval:
            for suffix in INTERVAL_SUFFIXES:
                out[a.name + suffix] = pl.Float64()
    return out
