"""Continual release: each period's counts per public group and their running totals, by
the binary tree mechanism, published night after night under one zCDP charge.

:func:`dp_continual_counts` is the dataframe front-end of
:mod:`polars_ppdm.kernels.binary_tree`: it bounds each privacy unit to its first
``max_contributions`` events in time, counts the events of every (group, period), draws
the discrete Gaussian noise of every tree node that is complete through the period
published (each node once: nodes published before are taken from ``state``, never
redrawn; the nodes one call draws are keyed by a digest of their true values, as every
release of the library: the same data give the same noise, other data independent
noise), and returns Honaker's variance-optimal estimates of the period counts and
running totals with their exact standard deviations.

References
----------
Dwork, Naor, Pitassi, Rothblum, "Differential privacy under continual observation", STOC
2010.  Chan, Shi, Song, "Private and continual release of statistics", ACM TISSEC 2011.
Honaker, "Efficient use of differentially private binary trees", TPDP 2015.  Canonne,
Kamath, Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from polars_ppdm._encoding import row_keys
from polars_ppdm._frame import Frame, as_lazy, fresh_names, schema_of
from polars_ppdm._validation import check_columns, check_int
from polars_ppdm.dp._common import (
    NOT_CHARGED,
    charge,
    check_accountant,
    check_unit_key,
    release_secret,
)
from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock
from polars_ppdm.dp.group_by import check_group_key_dtype, group_words, public_groups_as_columns
from polars_ppdm.dp.zcdp import check_rho
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import binary_tree as tree
from polars_ppdm.kernels.dp_noise import check_gaussian_sigma, contribution_words
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.kernels.release_key import finish_digest, release_key, row_words, table_digest
from polars_ppdm.secret import SecretLike

__all__ = [
    "EVERY",
    "ContinualResult",
    "TreeState",
    "dp_continual_counts",
    "expected_rmse",
    "period_index",
    "release_config",
]

_FUNC = "dp_continual_counts"
#: Period lengths for a Date or Datetime ``period`` column, in days.
EVERY = {"day": 1, "week": 7}
_NODE_SCHEMA = {"group": pl.UInt32, "level": pl.Int32, "index": pl.Int64, "value": pl.Int64}
_PERIOD_SCHEMA = {"period": pl.Int64, "digest": pl.Int64}


@dataclass(frozen=True)
class TreeState:
    """What a continual release has published: every node drawn so far.

    ``config`` names the release (a SHA-256 of its label, groups, horizon, rho and
    contribution bound): a state is refused by any other release.  ``nodes``: ``group``
    (its position in the public groups), ``level``, ``index`` and the noisy ``value``.
    A node is drawn once: a later call takes it from here, whatever the data say then.
    ``periods``: a keyed digest of the rows of every period published (``period``,
    ``digest``; no data), so that a later call refuses an event log whose published
    periods changed.  Keep it as the release does (a pipeline keeps it in its ledger):
    without it the release cannot go on (a call without it starts a new release, charged
    again).
    """

    config: str
    nodes: pl.DataFrame
    periods: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_PERIOD_SCHEMA))


class ContinualResult(NamedTuple):
    """The published table and the release's state after it."""

    table: pl.DataFrame
    state: TreeState


_WIDER_THAN_INT64 = tuple(getattr(pl, name) for name in ("Int128", "UInt128") if hasattr(pl, name))


def period_index(column: str, dtype: pl.DataType, start: Any, every: str) -> pl.Expr:
    """The period number of each row: the integer column as it is, or ``(date - start)
    // every`` days for a Date or Datetime column (the date part, in the column's time
    zone)."""
    if dtype.is_integer():
        # Clipped into Int64 first: a strict cast of a UInt64 or 128-bit period past Int64
        # fails with a message that quotes the value; clipped, it stays before period 0 or
        # past any horizon, as it was.
        if dtype in (pl.UInt64, *_WIDER_THAN_INT64):
            lowest = None if dtype.is_unsigned_integer() else -(2**63)
            return pl.col(column).clip(lowest, 2**63 - 1).cast(pl.Int64)
        return pl.col(column).cast(pl.Int64)
    days = EVERY[every]
    return ((pl.col(column).cast(pl.Date) - pl.lit(start, dtype=pl.Date)).dt.total_days() // days).cast(
        pl.Int64
    )


def _check_period(schema: pl.Schema, period: Any, start: Any, every: Any) -> tuple[str, Any, str]:
    if not isinstance(period, str) or period not in schema:
        msg = (
            f"The 'period' parameter of {_FUNC} names no column: {period!r}. Columns: {list(schema.names())}."
        )
        raise InvalidParameterError(msg)
    dtype = schema[period]
    if dtype.is_integer():
        if start is not None:
            msg = f"The 'start' parameter of {_FUNC} is for a Date or Datetime period column; {period!r} holds period numbers ({dtype}). Leave it out."
            raise InvalidParameterError(msg)
        return period, None, every
    if dtype != pl.Date and not isinstance(dtype, pl.Datetime):
        msg = f"The 'period' column {period!r} of {_FUNC} must hold period numbers (integers) or dates (Date, Datetime). Got {dtype} instead."
        raise InvalidParameterError(msg)
    if not isinstance(start, dt.date) or isinstance(start, dt.datetime):
        msg = f"The 'start' parameter of {_FUNC} must be a datetime.date (the first day of period 0) for the date column {period!r}. Got {start!r} instead."
        raise InvalidParameterError(msg)
    if every not in EVERY:
        msg = f"The 'every' parameter of {_FUNC} must be one of {list(EVERY)}. Got {every!r} instead."
        raise InvalidParameterError(msg)
    return period, start, every


def _config(
    label: str,
    groups: pl.DataFrame,
    horizon: int,
    rho: float,
    k: int,
    start: Any = None,
    every: str | None = None,
    unit: str | None = None,
) -> str:
    # Every parameter that decides the periods' counts: the periods' first day and length
    # and the privacy unit too, or two releases whose periods start a day apart drew one
    # noise, identical unless someone's row fell on a boundary day (a certain answer).
    described = json.dumps(
        {
            "label": label,
            "groups": groups.rows(),
            "horizon": horizon,
            "rho": rho.hex(),
            "k": k,
            "start": None if start is None else str(start),
            "every": every if start is not None else None,  # numbered periods have no length
            "unit": unit,
        },
        default=str,
        sort_keys=True,
    )
    return hashlib.sha256(described.encode()).hexdigest()


def release_config(
    label: str,
    public_groups: pl.DataFrame,
    schema: pl.Schema,
    horizon: int,
    rho: float,
    max_contributions: int,
    start: Any = None,
    every: str | None = None,
    privacy_unit: str | None = None,
) -> str:
    """The configuration digest of a release (:attr:`TreeState.config`), from its
    parameters and the input's schema: what a ledger compares before a run reserves."""
    groups = _check_groups(public_groups, list(public_groups.columns), schema)
    return _config(label, groups, horizon, rho, max_contributions, start, every, privacy_unit)


class _Trees:
    """What an accountant knows of the continual releases charged to it: whether a tree
    is (its ledger names it), and the latest state of each it returned in this process.

    A node is released once.  A state continued twice (a job that lost last night's state
    and went on from an older one after late events) drew the later nodes again over
    other rows, with fresh noise and no charge (attack review 69: 200 draws of one node
    averaged to its count): an accountant refuses a state other than the latest it
    returned, and a second call continuing a release while one runs (review 70: four
    threads drew one node four times).  One book serves an accountant and its copies, and
    every accountant of one ledger dataset.  Across processes, keep the state the release
    returns (``ppdm run`` keeps its nodes in the ledger)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.heads: dict[str, str] = {}
        self.busy: set[str] = set()

    @classmethod
    def of(cls, accountant: BudgetAccountant | ParallelBlock) -> _Trees:
        owner = accountant.accountant if isinstance(accountant, ParallelBlock) else accountant
        ledger, dataset = getattr(owner, "_ledger", None), getattr(owner, "dataset", None)
        with _TREES_LOCK:
            if ledger is not None:  # a LedgerAccountant: its dataset, whichever object
                book: _Trees = _LEDGER_TREES.setdefault(
                    (str(Path(ledger.path).resolve()), str(dataset)), cls()
                )
            else:  # kept on the accountant, so that a copy shares it
                book = owner.__dict__.setdefault("_continual_trees", cls())
        return book

    @staticmethod
    def charged(accountant: BudgetAccountant | ParallelBlock, names: tuple[str, ...]) -> bool:
        """Whether the accountant's ledger names the tree (a release before the tree's
        name was in its label, one of ``names`` too, is taken to name it)."""
        owner = accountant.accountant if isinstance(accountant, ParallelBlock) else accountant
        return not set(names).isdisjoint(owner.ledger["release"].to_list())

    @contextlib.contextmanager
    def continuing(self, config: str, state: TreeState | None) -> Iterator[Callable[[TreeState], None]]:
        """Claim the release for one call from ``state``; the caller gives the state it
        returns (the new latest), and the claim ends with the call."""
        given = None if state is None or state.nodes.is_empty() else _state_digest(state)
        with self.lock:
            head = self.heads.get(config)
            if given is not None and head is not None and head != given:
                msg = (
                    f"The 'state' given to {_FUNC} is not the latest this accountant returned for the release: "
                    "it was continued already, and a node is released once (continuing an older state again "
                    f"draws its later nodes anew, over other rows). Pass the state the last call returned ({NOT_CHARGED})."
                )
                raise InvalidParameterError(msg)
            if config in self.busy:
                msg = (
                    f"{_FUNC}: another call is continuing this release under the same accountant; continue it "
                    f"from the state that call returns ({NOT_CHARGED})."
                )
                raise InvalidParameterError(msg)
            self.busy.add(config)

        def latest(new: TreeState) -> None:
            with self.lock:
                self.heads[config] = _state_digest(new)

        try:
            yield latest
        finally:
            with self.lock:
                self.busy.discard(config)


_LEDGER_TREES: dict[tuple[str, str], _Trees] = {}
_TREES_LOCK = threading.Lock()


def _state_digest(state: TreeState) -> str:
    """A digest of the state's content, whatever its row order, chunks or dtypes: the
    nodes by (group, level, index), the periods by period, each column named and framed."""
    digest = hashlib.sha256(state.config.encode())
    ordered = (state.nodes.sort("group", "level", "index"), state.periods.sort("period"))
    for frame in ordered:
        for column in frame.columns:
            values = np.ascontiguousarray(frame[column].cast(pl.Int64).to_numpy())
            digest.update(f"\x00{column}\x00{len(values)}\x00".encode() + values.tobytes())
    return digest.hexdigest()


def _check_state(state: Any, config: str) -> TreeState | None:
    if state is None:
        return None
    if not isinstance(state, TreeState):
        msg = f"The 'state' parameter of {_FUNC} must be the TreeState an earlier call returned, or None (a new release). Got {type(state).__name__} instead."
        raise InvalidParameterError(msg)
    if state.config != config:
        msg = (
            f"The 'state' given to {_FUNC} belongs to another release (other groups, horizon, rho, "
            "max_contributions or privacy unit): a release's nodes are never reused by another, and a release's parameters do "
            f"not change over its horizon ({NOT_CHARGED})."
        )
        raise InvalidParameterError(msg)
    return state


def dp_continual_counts(
    frame: Frame,
    by: str | Sequence[str],
    *,
    period: str,
    through: int,
    horizon: int,
    rho: float,
    public_groups: pl.DataFrame,
    start: dt.date | None = None,
    every: str = "day",
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    secret: SecretLike = None,
    accountant: BudgetAccountant | ParallelBlock | None = None,
    state: TreeState | None = None,
) -> ContinualResult:
    """Counts per public group of every period ``0 .. through`` and their running totals,
    released continually by the binary tree mechanism under one rho-zCDP charge.

    The release covers a declared horizon of ``horizon`` periods and is charged ``rho``
    once, when it starts (``state=None``, or a state with no node drawn yet); every later call with the returned ``state``
    publishes the periods up to ``through`` from the nodes published before and the
    nodes completed since, and is charged nothing (post-processing of the one tree).  A
    node's noise is drawn once (discrete Gaussian, keyed by the secret, the group, the
    node and a digest of the true values of the nodes drawn with it): a re-run of a
    period gives the same figures, and a late run publishes the periods it missed.  The
    event log must only grow: a unit's first events in time are then never displaced by
    later ones, so the nodes of one level together count at most ``max_contributions``
    of its events, whenever each was drawn.  A keyed digest of every published period's
    rows is kept in ``state``, and a call whose published periods have other rows
    (events deleted, or added late) is refused: give late events the next period.  Rows
    dated after ``through`` wait for their period.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        The event log (one row per event), all periods so far.
    by : str or sequence of str
        The group columns.
    period : str
        The period of each row: an integer column (period numbers, 0 the first) or a
        Date / Datetime column (with ``start`` and ``every``).  Nulls and periods before
        0 are refused.
    through : int
        The last period to publish, in ``[0, horizon)``.
    horizon : int
        The periods the release covers (>= 1); periods past it are refused.
    rho : float
        The zCDP cost of the whole horizon (> 0).
    public_groups : polars.DataFrame
        The groups, with exactly the ``by`` columns, in a fixed order (a group's
        position keys its noise; rows of other groups are not counted).
    start : datetime.date, optional
        The first day of period 0, for a date ``period`` column.
    every : {"day", "week"}
        The period's length for a date ``period`` column.
    privacy_unit : str, optional
        The column naming the person; each person counts with their first
        ``max_contributions`` events in time (ties broken by the keyed randomness) over the
        whole horizon: user-level privacy.  Without it each row is its own unit
        (event-level privacy; ``max_contributions`` must be 1).
    max_contributions : int
        Events per unit over the horizon (>= 1): the noise grows in proportion.
    secret : Secret, bytes, hex str, 'env:NAME' or None
        The secret (None: fresh OS entropy, and the release cannot be continued: a
        call with ``state`` needs the secret the release started with).  Guessable
        secrets are refused.
    accountant : BudgetAccountant, optional
        Charged ``rho`` when the release starts (a zCDP accountant; a pure-epsilon one
        refuses a rho), and when it goes on under an accountant that did not charge it
        (whose ledger does not name its tree: another dataset's, or an in-memory one of
        another session).  It refuses a ``state`` older than the latest it returned for the
        release in this process: a state continued twice would draw its later nodes again.
    state : TreeState, optional
        What the last call of this release returned (None: start the release).  Keep only
        the latest, and continue it once: an older one draws the later nodes anew, over
        whatever rows are there then (``ppdm run`` keeps the nodes in its ledger).

    Returns
    -------
    ContinualResult
        ``table``: one row per group and period ``0 .. through``: the ``by`` columns,
        ``period`` (Int64), ``count`` and ``running_total`` (Float64, the optimal
        estimates; a total is the sum of its periods' counts) with ``count_sd`` and
        ``running_total_sd`` (their exact standard deviations, the same for every group).
        ``state``: pass it to the next call.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> log = pl.DataFrame({"region": ["n", "s", "n", "n"], "night": [0, 0, 1, 2]})
    >>> groups = pl.DataFrame({"region": ["n", "s"]})
    >>> first = ppdm.dp_continual_counts(log, "region", period="night", through=1, horizon=365, rho=0.5,
    ...                                  public_groups=groups, secret=ppdm.Secret.for_tests(7))
    >>> first.table.columns
    ['region', 'period', 'count', 'count_sd', 'running_total', 'running_total_sd']
    >>> later = ppdm.dp_continual_counts(log, "region", period="night", through=2, horizon=365, rho=0.5,
    ...                                  public_groups=groups, secret=ppdm.Secret.for_tests(7), state=first.state)
    >>> later.table.height, later.state.nodes.height > first.state.nodes.height
    (6, True)

    References
    ----------
    Dwork, Naor, Pitassi, Rothblum, STOC 2010; Chan, Shi, Song, ACM TISSEC 2011 (the
    binary tree mechanism).  Honaker, TPDP 2015 (the estimator).  Canonne, Kamath,
    Steinke, NeurIPS 2020 (the discrete Gaussian).
    """
    schema = schema_of(frame, _FUNC)
    by = check_columns(by, list(schema.names()), _FUNC, name="by")
    period, start, every = _check_period(schema, period, start, every)
    horizon = check_int("horizon", horizon, _FUNC, low=1, high=tree.MAX_HORIZON)
    through = check_int("through", through, _FUNC, low=0)
    if through >= horizon:
        msg = (
            f"The 'through' parameter of {_FUNC} is period {through}, past the release's horizon of {horizon} "
            f"periods (0 .. {horizon - 1}); a release never publishes past its horizon ({NOT_CHARGED})."
        )
        raise InvalidParameterError(msg)
    rho = check_rho(rho, _FUNC)
    k = check_int("max_contributions", max_contributions, _FUNC, low=1)
    if privacy_unit is None and k != 1:
        msg = f"{_FUNC}: max_contributions={k} needs privacy_unit= (the column naming the person); without it each row is its own unit."
        raise InvalidParameterError(msg)
    if privacy_unit is not None:
        check_unit_key(privacy_unit, schema, _FUNC, name="privacy_unit")
    groups = _check_groups(public_groups, by, schema)
    sigma = tree.tree_sigma(rho, horizon, k)
    check_gaussian_sigma(sigma, _FUNC)
    label = f"{_FUNC}({', '.join(by)})"
    config = _config(label, groups, horizon, rho, k, start, every, privacy_unit)
    state = _check_state(state, config)
    if state is not None and secret is None:
        msg = (
            f"{_FUNC}: continuing a release (state=) needs the secret it started with; secret=None draws a new "
            f"one, under which its published periods cannot be recognised ({NOT_CHARGED})."
        )
        raise InvalidParameterError(msg)
    check_accountant(accountant, _FUNC)
    book = None if accountant is None else _Trees.of(accountant)
    with contextlib.nullcontext(None) if book is None else book.continuing(config, state) as latest:
        # A state with no node drawn (one made by hand) has published nothing, and a tree
        # this accountant never charged was charged to another (attack review 69: dataset B
        # went on with A's state for free): this call starts the release here, charged.
        charged = label + f" [tree {config[:16]}]"  # names the tree in the accountant's ledger
        starts = (
            state is None
            or state.nodes.is_empty()
            or (accountant is not None and not _Trees.charged(accountant, (charged, label)))
        )
        if starts:
            charge(accountant, None, charged, _FUNC, rho=rho, check_only=True, privacy_unit=privacy_unit)
        key = release_secret(secret, _FUNC)

        counts, digests = _period_counts(
            frame, schema, by, groups, period, start, every, through, privacy_unit, k, key
        )
        if state is not None:
            _check_published_periods(state, digests)
        if starts:
            charge(accountant, None, charged, _FUNC, rho=rho, privacy_unit=privacy_unit)
        if state is None:
            state = TreeState(config, pl.DataFrame(schema=_NODE_SCHEMA))
        known = state.periods["period"].max()
        fresh = digests.filter(pl.col("period") > (-1 if known is None else known))
        state = TreeState(state.config, state.nodes, pl.concat([state.periods, fresh]))
        nodes = tree.complete_nodes(horizon, through)
        noisy, state = _noisy_nodes(state, nodes, counts, digests, horizon, sigma, key, label)
        if latest is not None:
            latest(state)
    periods, totals = tree.tree_estimate(noisy, horizon, through)
    period_var, total_var = tree.tree_variance(horizon, through, sigma)
    g, p = periods.shape
    table = pl.DataFrame(
        {
            **{c: groups[c].gather(np.repeat(np.arange(g), p)) for c in by},
            "period": np.tile(np.arange(p, dtype=np.int64), g),
            "count": periods.reshape(-1),
            "count_sd": np.tile(np.sqrt(period_var), g),
            "running_total": totals.reshape(-1),
            "running_total_sd": np.tile(np.sqrt(total_var), g),
        }
    )
    return ContinualResult(table, state)


def _check_groups(public_groups: Any, by: list[str], schema: pl.Schema) -> pl.DataFrame:
    if isinstance(public_groups, pl.LazyFrame):
        public_groups = public_groups.collect()
    if not isinstance(public_groups, pl.DataFrame) or sorted(public_groups.columns) != sorted(by):
        msg = f"The 'public_groups' parameter of {_FUNC} must be a DataFrame with exactly the 'by' columns {by}. Got {public_groups!r} instead."
        raise InvalidParameterError(msg)
    for c in by:
        check_group_key_dtype(schema[c], c, _FUNC)
    # Duplicates counted in the column's own type (attack review 74: "1", "01" and "001"
    # were three groups before a cast made each the integer 1, each released with noise
    # of its own under one charge, and their mean was the count).
    groups = public_groups_as_columns(public_groups, by, schema, _FUNC)
    duplicated = groups.height and groups.is_duplicated().any()
    if groups.height == 0 or groups.height >= tree.MAX_GROUPS or duplicated:
        msg = f"The 'public_groups' of {_FUNC} must list between 1 and 2^32 - 1 distinct groups (in the columns' own types). Got {groups.height} rows{' with duplicates' if duplicated else ''}."
        raise InvalidParameterError(msg)
    return groups


def _period_counts(
    frame: Frame,
    schema: pl.Schema,
    by: list[str],
    groups: pl.DataFrame,
    period: str,
    start: Any,
    every: str,
    through: int,
    unit: str | None,
    k: int,
    secret: bytes,
) -> tuple[np.ndarray, pl.DataFrame]:
    """The (groups, through + 1) counts of the events kept: each unit's first ``k`` in
    time up to ``through`` (ties by the keyed contribution word); and the keyed digest of
    every period's rows, all of them (:func:`_period_digests`)."""
    (number, word, rank) = fresh_names([*schema.names(), *by], "__ppdm_group", "__ppdm_word", "__ppdm_rank")
    (at,) = fresh_names([*schema.names(), number, word, rank], "__ppdm_period")
    # Read once (attack review 74): the checks, the periods' digests and the counts all
    # come from these rows. Read three times, a source that changed between the reads
    # (files rewritten while the job ran) passed the published periods' check with the
    # rows of one read and was counted from another: a deleted event let a later one take
    # its place, beyond max_contributions.
    needed = list(dict.fromkeys([period, *by, *([unit] if unit else [])]))
    lazy = (
        as_lazy(frame)
        .select(needed)
        .with_columns(period_index(period, schema[period], start, every).alias(at))
        .collect()
        .lazy()
    )
    bad = lazy.select(
        pl.col(at).is_null().any().alias("null"),
        (pl.col(at) < 0).any().alias("early"),
        pl.any_horizontal(*(pl.col(c).is_null() for c in by)).any().alias("null_group"),
        *([pl.col(unit).is_null().any().alias("null_unit")] if unit else []),
    ).collect()
    if bad["null"][0] or bad["null_group"][0] or (unit and bad["null_unit"][0]):
        msg = f"{_FUNC}: the period, group{' and privacy unit' if unit else ''} columns must have no null values; drop or fill them first ({NOT_CHARGED})."
        raise InvalidParameterError(msg)
    if bad["early"][0]:
        msg = f"{_FUNC}: some rows are dated before period 0 (before 'start'); a release counts periods 0 .. horizon - 1 only ({NOT_CHARGED})."
        raise InvalidParameterError(msg)
    known = lazy.filter(pl.col(at) <= through)
    digests = _period_digests(known, at, by, unit, through, secret)
    if unit is not None:
        fields = [
            pl.col(unit).alias("unit"),
            pl.col(at).alias("at"),
            *(pl.col(c).alias(f"g{i}") for i, c in enumerate(by)),
        ]

        def words(rows: pl.Series) -> pl.Series:
            # The unit's key chained with the row's period and its group's keyed word
            # (strings too): ties between a unit's events are broken by their content,
            # the same way in any batch or engine.
            batch = rows.struct.unnest()
            group = group_words(secret, batch.select(f"g{i}" for i in range(len(by))))
            values = [batch["at"].cast(pl.Float64).to_numpy(), group.view(np.float64)]
            chained = contribution_words(
                secret, row_keys(batch["unit"].rename(unit), secret=secret, func=_FUNC), values, [None, None]
            )
            return pl.Series(word, chained, dtype=pl.UInt64)

        known = (
            known.with_columns(
                pl.struct(fields).map_batches(words, return_dtype=pl.UInt64, is_elementwise=True).alias(word)
            )
            .sort(unit, at, word)
            .filter(pl.int_range(pl.len()).over(unit) < k)
        )
    numbered = groups.with_row_index(number)
    counted = (
        known.join(numbered.lazy(), on=by, how="inner", nulls_equal=True)
        .group_by(number, at)
        .agg(pl.len().alias("n"))
        .collect()
    )
    counts = np.zeros((groups.height, through + 1), dtype=np.int64)
    counts[counted[number].to_numpy().astype(np.int64), counted[at].to_numpy()] = counted["n"].to_numpy()
    return counts, digests


def _period_digests(
    rows: pl.LazyFrame, at: str, by: list[str], unit: str | None, through: int, secret: bytes
) -> pl.DataFrame:
    """A keyed multiset digest of each period's rows (its unit, group and period), for
    the periods ``0 .. through``, empty ones too: the same rows in any order give the same
    digest (:func:`polars_ppdm.kernels.release_key.table_digest`); no one without the
    secret learns anything from it but equality."""
    fields = [pl.col(at).alias("at"), *(pl.col(c).alias(f"g{i}") for i, c in enumerate(by))]
    if unit is not None:
        fields.append(pl.col(unit).alias("unit"))

    def words(batch_rows: pl.Series) -> pl.Series:
        batch = batch_rows.struct.unnest()
        group = group_words(secret, batch.select(f"g{i}" for i in range(len(by))))
        units = (
            row_keys(batch["unit"].rename(unit), secret=secret, func=_FUNC)
            if unit is not None
            else np.zeros(batch.height, dtype=np.uint64)
        )
        return pl.Series(row_words(secret, [batch["at"].to_numpy(), group, units]), dtype=pl.UInt64)

    table = rows.select(
        pl.col(at).alias("period"),
        pl.struct(fields).map_batches(words, return_dtype=pl.UInt64, is_elementwise=True).alias("word"),
    ).collect()
    periods = table["period"].to_numpy()
    order = np.argsort(periods, kind="stable")
    periods, word = periods[order], table["word"].to_numpy()[order]
    out = []
    for p in range(through + 1):
        lo, hi = np.searchsorted(periods, [p, p + 1])
        total = int(np.sum(word[lo:hi], dtype=np.uint64))  # wraps modulo 2^64
        out.append(finish_digest(secret, total, int(hi - lo)))
    digests = np.array(out, dtype=np.uint64).view(np.int64)
    return pl.DataFrame(
        {"period": np.arange(through + 1, dtype=np.int64), "digest": digests}, schema=_PERIOD_SCHEMA
    )


def _check_published_periods(state: TreeState, digests: pl.DataFrame) -> None:
    """Refuse an event log whose published periods have other rows than when they were
    published: a deleted event would let a person count more than max_contributions
    (later events would take its place), and a late one would go only into nodes drawn
    later."""
    joined = state.periods.join(digests, on="period", how="inner", suffix="_now")
    # Which periods changed, and how many, come from the rows: the message names neither.
    if (joined["digest"] != joined["digest_now"]).any():
        msg = (
            f"{_FUNC}: the rows of some periods already published are not the rows they were published "
            "from (rows deleted or added late; or the secret is not the release's). A continual release "
            "needs an event log whose published periods never change: after a deletion a person's later events "
            "would take the deleted one's place and count beyond max_contributions, and a late event would "
            "reach only the nodes drawn after it. Give late events the current period (e.g. max(period, the "
            "next one to publish)); to remove events, start a new release (a new output, charged anew) "
            f"({NOT_CHARGED})."
        )
        raise InvalidParameterError(msg)


def _prefix_digests(secret: bytes, digests: pl.DataFrame) -> np.ndarray:
    """For each period p of ``digests`` (``0 .. through``, in order), the keyed digest of
    the periods ``0 .. p`` (their numbers and digests), as uint64."""
    words = row_words(secret, [digests["period"].to_numpy(), digests["digest"].to_numpy()])
    sums = np.cumsum(words, dtype=np.uint64)  # wraps modulo 2^64
    return np.array(
        [finish_digest(secret, int(total), p + 1) for p, total in enumerate(sums)], dtype=np.uint64
    )


def _noisy_nodes(
    state: TreeState,
    nodes: tree.Nodes,
    counts: np.ndarray,
    digests: pl.DataFrame,
    horizon: int,
    sigma: float,
    secret: bytes,
    label: str,
) -> tuple[np.ndarray, TreeState]:
    """The noisy value of every complete node, (groups, nodes): from the state where it
    was published, else drawn now (and added to the state)."""
    g = counts.shape[0]
    wanted = pl.DataFrame(
        {"level": nodes.level.astype(np.int32), "index": nodes.index, "position": np.arange(len(nodes.level))}
    )
    known = state.nodes.join(wanted, on=["level", "index"], how="inner")
    noisy = np.zeros((g, len(nodes.level)), dtype=np.int64)
    have = np.zeros((g, len(nodes.level)), dtype=bool)
    if known.height:
        rows, cols = known["group"].to_numpy().astype(np.int64), known["position"].to_numpy()
        noisy[rows, cols] = known["value"].to_numpy()
        have[rows, cols] = True
    missing = ~have.all(axis=0)
    if have[:, missing].any():
        msg = f"{_FUNC}: the state holds some groups of a node but not all; it is damaged ({NOT_CHARGED})."
        raise InvalidParameterError(msg)
    if missing.any():
        level, index = nodes.level[missing], nodes.index[missing]
        true = tree.node_sums(counts, level, index, horizon=horizon)
        groups = np.arange(g)
        before = _prefix_digests(secret, digests)
        last = nodes.last[missing]
        # Each node keyed by its own value in every group and by the digest of every
        # period up to its last: the same log reproduces its draw whichever other nodes
        # come with it (keyed by the set drawn together, a state taken back to an earlier
        # night drew it anew, and the copies averaged away), and a change in any period up
        # to it draws afresh (so a restart over changed data does not show which nodes the
        # change reached).  The nodes are then drawn together, each under its own key.
        node_keys = [
            release_key(
                secret,
                f"{label}/{state.config}",
                table_digest(
                    secret,
                    [
                        groups,
                        np.repeat(level[j], g),
                        np.repeat(index[j], g),
                        true[:, j],
                        np.repeat(before[last[j]], g),
                    ],
                ),
            )
            for j in range(len(level))
        ]
        drawn = true + tree.node_noise(node_keys, stream_id(label), level, index, sigma, groups=g)
        noisy[:, missing] = drawn
        added = pl.DataFrame(
            {
                "group": np.repeat(np.arange(g, dtype=np.uint32), len(level)),
                "level": np.tile(level.astype(np.int32), g),
                "index": np.tile(index, g),
                "value": drawn.reshape(-1),
            },
            schema=_NODE_SCHEMA,
        )
        state = TreeState(state.config, pl.concat([state.nodes, added]), state.periods)
    return noisy, state


def expected_rmse(rho: float, horizon: int, through: int, max_contributions: int = 1) -> float:
    """The running total's standard deviation at period ``through`` (the same in every
    group): what a plan shows before anything is published."""
    sigma = tree.tree_sigma(rho, horizon, max_contributions)
    return float(math.sqrt(tree.tree_variance(horizon, through, sigma)[1][through]))
