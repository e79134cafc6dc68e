"""The privacy-budget accountant: sequential and parallel composition.

Every differentially private release of polars_ppdm takes ``accountant=``; it asks the
accountant for its epsilon *before* it computes anything, so an over-budget release is
refused with :class:`~polars_ppdm.exceptions.BudgetExceededError` and nothing leaves.

* Sequential composition (the default): releases over the same data add up.
* Parallel composition (``with accountant.parallel("...") as block:``): releases over
  disjoint parts of the data (one per region, one per month, ...), each given
  ``accountant=block``, cost the largest of them.  The disjointness is the caller's
  promise; the accountant cannot check it.

  **A release joins a block only through the block it was given.**  Whatever is spent on
  the accountant itself meanwhile -- on the block's own thread or any other, by another
  user of a shared accountant, by a task a thread pool or an event loop runs in between
  -- composes sequentially and is charged in full, as if no block were open; so is a
  release given the block and evaluated after the block has closed (a lazy release
  collected later).  That is the conservative side: a release cannot slip into
  someone else's block and be charged nothing.  (Membership by the calling thread, as
  before, let any code that ran on that thread while the block was open -- a thread
  pool's next task, another coroutine, a new thread given a finished one's id -- be
  charged nothing.)  Blocks may be open on several threads, or nested: each costs its
  largest release, and the blocks add up.

A release may also cost a ``delta`` (partition selection of :func:`polars_ppdm.dp_group_by`):
the accountant composes (epsilon, delta) pairs by basic composition, both sums, and has a
delta budget of its own (default 0: no release with a delta is accepted).

**zCDP accounting** (``BudgetAccountant(rho=...)``, or an (epsilon, delta) budget converted
with ``accounting="zcdp"``): the budget is a rho of zero-concentrated DP, and releases add
their rho (Bun and Steinke 2016).  Gaussian releases (``mechanism="gaussian"``) cost a rho;
a pure-epsilon (Laplace) release enters as ``rho = epsilon^2 / 2``, said in its row of
:attr:`BudgetAccountant.ledger`.  A pure-epsilon accountant refuses a Gaussian release (a
rho is not an epsilon), and a zCDP accountant refuses a release with a delta of its own
(partition selection: give public groups).  :meth:`BudgetAccountant.epsilon_spent` says
what the spent rho means in (epsilon, delta) (Canonne, Kamath, Steinke 2020:
:mod:`polars_ppdm.dp.zcdp`).

One accountant may be shared by threads: each spend checks and records under a lock, so
concurrent releases never spend more than the total between them.

References
----------
McSherry, "Privacy integrated queries", SIGMOD 2009 (sequential and parallel
composition).  Bun, Steinke, "Concentrated differential privacy", TCC 2016.  Zhang, Cheng,
DPQT k-means (paper 004).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any

import polars as pl

from polars_ppdm._validation import check_real
from polars_ppdm.dp.zcdp import check_rho, rho_for, rho_of_pure_epsilon, rho_to_epsilon
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError

__all__ = ["ACCOUNTINGS", "BudgetAccountant", "ParallelBlock", "check_epsilon"]

#: How a budget composes: "pure" (epsilon and delta add up) or "zcdp" (rho adds up).
ACCOUNTINGS = ("pure", "zcdp")

# Float sums of budget shares (0.1 + 0.2 ...) must not refuse an exact fit.
_SLACK = 1e-12


def check_epsilon(epsilon: object, func: str, name: str = "epsilon") -> float:
    """A finite float > 0."""
    return check_real(name, epsilon, func, low=0, open_low=True)


@dataclass(eq=False)  # a block is itself: two blocks of one label and releases are two
class _Group:
    label: str
    closed: bool = False
    # (release, epsilon or None, rho or None, cost in the accountant's unit)
    releases: list[tuple[str, float | None, float | None, float]] = field(default_factory=list)
    deltas: list[float] = field(default_factory=list)

    @property
    def cost(self) -> float:
        return max((cost for *_, cost in self.releases), default=0.0)

    @property
    def delta_cost(self) -> float:
        return max(self.deltas, default=0.0)


def unit_label(privacy_unit: str | None) -> str:
    """How a privacy unit is named in accountants and ledgers: its column, or each row (None)."""
    return "each row" if privacy_unit is None else f"column {privacy_unit!r}"


# Why one budget is counted per one privacy unit (the ledger's and the accountants' refusals).
UNITS_DO_NOT_ADD = (
    "epsilons spent per different units do not add up to one budget (spent per row, a person with 60 rows "
    "has spent 60 times the epsilon)"
)


def unit_refusal(release: str, privacy_unit: str | None, held: str) -> str:
    """Why ``release`` cannot be charged to a budget counted per ``held``."""
    per = (
        "per row (no privacy unit)"
        if privacy_unit is None
        else f"per privacy unit {unit_label(privacy_unit)}"
    )
    return (
        f"{release!r} bounds contributions {per}, but the budget is counted per privacy unit {held}: "
        f"{UNITS_DO_NOT_ADD}. Give the release the budget's unit (key= / privacy_unit=); nothing was released."
    )


def check_unit_column(privacy_unit: Any, func: str) -> str | None:
    """``privacy_unit=``: a column name, or None (each row a unit)."""
    if privacy_unit is not None and not (isinstance(privacy_unit, str) and privacy_unit):
        msg = (
            f"The 'privacy_unit' parameter of {func} must be a column name or None (each row a unit). "
            f"Got {privacy_unit!r} instead."
        )
        raise InvalidParameterError(msg)
    return privacy_unit


class BudgetAccountant:
    """A total budget, spent release by release; refuses to overspend.

    Parameters
    ----------
    epsilon : float, optional
        The total epsilon budget, > 0 (pure accounting; with ``accounting="zcdp"`` the
        epsilon that the zCDP budget must stay within at ``delta``).
    delta : float
        Pure accounting: the total delta budget, in [0, 1) (default 0: releases with a
        delta are refused).  zCDP accounting: the delta at which the budget's epsilon is
        stated (in (0, 1)).
    rho : float, optional
        A zCDP budget, > 0 (instead of ``epsilon``): Gaussian releases then cost their
        rho and pure-epsilon ones ``epsilon^2 / 2``.
    accounting : {"pure", "zcdp"}, optional
        How releases compose; default "zcdp" when ``rho`` is given, else "pure".
        ``accounting="zcdp"`` with ``epsilon`` and ``delta`` converts that budget to the
        largest rho whose conversion stays within it (:func:`polars_ppdm.dp.zcdp.rho_for`).
    privacy_unit : str or None, optional
        Who one unit of the budget is: the column of the privacy unit, or None for each
        row, as the releases' ``key`` / ``privacy_unit``.  A release that bounds
        contributions per another unit is refused (epsilons spent per visit and per
        person do not add up to a budget per person).  Not given, the first release
        charged sets it.

    Examples
    --------
    >>> acc = BudgetAccountant(1.0)
    >>> acc.spend(0.4, "histogram of age")
    >>> with acc.parallel("one count per region") as block:
    ...     block.spend(0.5, "north")
    ...     block.spend(0.5, "south")
    >>> round(acc.spent, 6), round(acc.remaining, 6)
    (0.9, 0.1)
    >>> acc.spend(0.2, "one more")
    Traceback (most recent call last):
    ...
    polars_ppdm.exceptions.BudgetExceededError: 'one more' needs epsilon 0.2 but the accountant has 0.1 left of 1 (spent 0.9); nothing was released.

    A year of nightly Gaussian releases under zCDP:

    >>> year = BudgetAccountant(epsilon=8.0, delta=1e-6, accounting="zcdp")
    >>> round(year.rho, 4)
    1.0524
    >>> for night in range(365):
    ...     year.spend(None, f"night {night}", rho=0.0025)
    >>> round(year.spent_rho, 4), round(year.epsilon_spent(), 2)
    (0.9125, 7.36)
    """

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        accounting: str | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        func = "BudgetAccountant"
        #: Who one unit of the budget is ("column 'person'", "each row"); None until a
        #: release charged says it, when not given.
        self.privacy_unit: str | None = (
            None if privacy_unit is ... else unit_label(check_unit_column(privacy_unit, func))
        )
        if accounting is None:
            accounting = "zcdp" if rho is not None else "pure"
        if accounting not in ACCOUNTINGS:
            msg = f"The 'accounting' parameter of {func} must be one of {list(ACCOUNTINGS)}. Got {accounting!r} instead."
            raise InvalidParameterError(msg)
        self.accounting = accounting
        if accounting == "pure":
            if rho is not None:
                msg = f"{func}: rho= is a zCDP budget; it needs accounting='zcdp' (or no accounting=). Got accounting='pure'."
                raise InvalidParameterError(msg)
            if epsilon is None:
                msg = f"{func} needs a budget: epsilon= (pure accounting) or rho= (zCDP). Got neither."
                raise InvalidParameterError(msg)
            self.epsilon = check_epsilon(epsilon, func)
            self.delta = check_real("delta", delta, func, low=0, high=1, open_high=True)
            self.rho = math.nan
        else:
            if (rho is None) == (epsilon is None):
                msg = (
                    f"{func} with accounting='zcdp' needs exactly one budget: rho=, or epsilon= with delta= "
                    f"(converted to the largest rho within it). Got epsilon={epsilon!r}, rho={rho!r}."
                )
                raise InvalidParameterError(msg)
            if rho is not None:
                self.rho = check_rho(rho, func)
                # The delta at which the spent rho is shown as an epsilon (1e-6 unless given).
                self.delta = check_real(
                    "delta", delta or 1e-6, func, low=0, high=1, open_low=True, open_high=True
                )
            else:
                self.delta = check_real("delta", delta, func, low=0, high=1, open_low=True, open_high=True)
                self.rho = rho_for(check_epsilon(epsilon, func), self.delta)
            self.epsilon = rho_to_epsilon(self.rho, self.delta)
        # (release, epsilon or None, composition, rho or None, cost in the accountant's unit)
        self._entries: list[tuple[str, float | None, str, float | None, float]] = []
        self._deltas: list[float] = []  # per entry
        # The open parallel blocks (a release joins one only through its ParallelBlock).
        self._groups: list[_Group] = []
        self._spent_before_group = 0.0  # everything but the open blocks, in the unit
        # Re-entrant: spend() holds it while calling check(), which reads spent.
        self._lock = threading.RLock()

    def _refuse_unit(self, privacy_unit: str | EllipsisType | None, release: str) -> None:
        """Refuse ``release`` if it bounds contributions per another privacy unit (its
        column, None for each row) than the one the accountant counts per (``...``: the
        caller did not say)."""
        if privacy_unit is ... or self.privacy_unit is None:
            return
        if unit_label(privacy_unit) != self.privacy_unit:
            raise InvalidParameterError(unit_refusal(release, privacy_unit, self.privacy_unit))

    @property
    def unit(self) -> str:
        """What :attr:`spent` and :attr:`remaining` count: "epsilon" or "rho"."""
        return "rho" if self.accounting == "zcdp" else "epsilon"

    @property
    def _budget(self) -> float:
        return self.rho if self.accounting == "zcdp" else self.epsilon

    def _open_cost(self) -> tuple[float, float]:
        """What the open blocks cost together (unit, delta): each its largest release, the
        blocks summed (sequential)."""
        groups = list(self._groups)
        return math.fsum(g.cost for g in groups), math.fsum(g.delta_cost for g in groups)

    @property
    def spent(self) -> float:
        """The budget spent so far, in :attr:`unit` (an open parallel block counts its
        largest release)."""
        with self._lock:
            return self._spent_before_group + self._open_cost()[0]

    @property
    def remaining(self) -> float:
        """The budget left, in :attr:`unit`."""
        return max(self._budget - self.spent, 0.0)

    @property
    def spent_rho(self) -> float:
        """The rho spent (zCDP accounting)."""
        self._need_zcdp("spent_rho")
        return self.spent

    @property
    def remaining_rho(self) -> float:
        """The rho left (zCDP accounting)."""
        self._need_zcdp("remaining_rho")
        return self.remaining

    def epsilon_spent(self, delta: float | None = None) -> float:
        """zCDP accounting: the epsilon the spent rho means at ``delta`` (default: the
        accountant's), by Canonne, Kamath and Steinke's conversion; 0 before any release."""
        self._need_zcdp("epsilon_spent")
        spent = self.spent
        return rho_to_epsilon(spent, self.delta if delta is None else delta) if spent > 0 else 0.0

    def _need_zcdp(self, what: str) -> None:
        if self.accounting != "zcdp":
            msg = f"BudgetAccountant.{what} is for zCDP accounting; this accountant counts pure epsilon (spent, remaining)."
            raise InvalidParameterError(msg)

    @property
    def spent_delta(self) -> float:
        """Delta spent so far (basic composition: the sum; a parallel block its largest)."""
        with self._lock:
            return math.fsum(self._deltas) + self._open_cost()[1]

    @property
    def ledger(self) -> pl.DataFrame:
        """Every release: its label, its epsilon (null for a Gaussian release), how it
        composed, its delta and its rho (null under pure accounting)."""
        with self._lock:
            rows = [
                (release, eps, composition, delta, rho)
                for (release, eps, composition, rho, _), delta in zip(
                    self._entries, self._deltas, strict=True
                )
            ]
            for group in self._groups:
                rows += [
                    (name, eps, f"parallel: {group.label}", d, rho)
                    for (name, eps, rho, _), d in zip(group.releases, group.deltas, strict=True)
                ]
        return pl.DataFrame(
            rows,
            schema={
                "release": pl.String,
                "epsilon": pl.Float64,
                "composition": pl.String,
                "delta": pl.Float64,
                "rho": pl.Float64,
            },
            orient="row",
        )

    def cost(
        self, epsilon: float | None, release: str, *, delta: float = 0.0, rho: float | None = None
    ) -> float:
        """What a release of ``epsilon`` (pure) or ``rho`` (zCDP) costs in :attr:`unit`:
        refuses a rho under pure accounting and a delta under zCDP accounting."""
        if (epsilon is None) == (rho is None):
            msg = (
                f"{release!r}: give exactly one of the 'epsilon' parameter (what a Laplace release costs) and the "
                f"'rho' parameter (what a Gaussian release costs). Got epsilon={epsilon!r}, rho={rho!r}."
            )
            raise InvalidParameterError(msg)
        if self.accounting == "pure":
            if rho is not None:
                msg = (
                    f"{release!r} is a Gaussian release costing rho {rho:g} (zCDP), but this accountant counts pure "
                    "epsilon; a rho is not an epsilon. Account in zCDP: BudgetAccountant(rho=...) or "
                    "BudgetAccountant(epsilon=..., delta=..., accounting='zcdp'); nothing was released."
                )
                raise BudgetExceededError(msg)
            return check_epsilon(epsilon, release)
        if delta:
            msg = (
                f"{release!r} needs delta {delta:g}, which a zCDP accountant does not compose (a delta of its "
                "own, e.g. dp_group_by's partition selection: give the release public groups), or account in pure "
                "epsilon; nothing was released."
            )
            raise BudgetExceededError(msg)
        if rho is not None:
            return check_rho(rho, release)
        return rho_of_pure_epsilon(check_epsilon(epsilon, release))

    def check(
        self,
        epsilon: float | None,
        release: str,
        *,
        why: str = "",
        delta: float = 0.0,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """Raise :class:`BudgetExceededError` if ``release`` cannot spend ``epsilon`` (or
        ``rho``; and ``delta``) in sequence; ``why`` (how the release worked its cost out)
        goes into the message.  ``privacy_unit``: the release's (its column, None for each
        row), refused if the accountant counts per another (:class:`InvalidParameterError`)."""
        self._check(None, epsilon, release, why=why, delta=delta, rho=rho, privacy_unit=privacy_unit)

    def _check(
        self,
        group: _Group | None,
        epsilon: float | None,
        release: str,
        *,
        why: str = "",
        delta: float = 0.0,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """:meth:`check`, in ``group`` (an open block: it absorbs the release up to its
        largest) or in sequence (None)."""
        self._refuse_unit(privacy_unit, release)
        delta = check_real("delta", delta, release, low=0, high=1, open_high=True)
        cost = self.cost(epsilon, release, delta=delta, rho=rho)
        with self._lock:
            spent, spent_delta = self.spent, self.spent_delta
            after = spent + (max(group.cost, cost) - group.cost if group else cost)
            delta_after = spent_delta + (max(group.delta_cost, delta) - group.delta_cost if group else delta)
        if delta_after > self.delta * (1 + _SLACK) + 0.0 and self.accounting == "pure":
            msg = (
                f"{release!r} needs delta {delta:g} but the accountant has {max(self.delta - spent_delta, 0.0):g} "
                f"left of its delta budget {self.delta:g}"
                + (" (make it with BudgetAccountant(epsilon, delta=...))" if self.delta == 0 else "")
                + "; nothing was released."
            )
            raise BudgetExceededError(msg)
        budget = self._budget
        if after > budget * (1 + _SLACK):
            needs = f"epsilon {epsilon:g}" if rho is None else f"rho {rho:g}"
            if self.accounting == "zcdp" and rho is None:
                needs += f" (rho {cost:g} in zCDP)"
            msg = (
                f"{release!r} needs {needs}{f' ({why})' if why else ''} but the accountant has "
                f"{max(budget - spent, 0.0):g} left of {budget:g}"
                + (" rho" if self.accounting == "zcdp" else "")
                + f" (spent {spent:g}); nothing was released."
            )
            raise BudgetExceededError(msg)

    def _composition(self, epsilon: float | None, rho: float | None, how: str) -> str:
        if self.accounting == "zcdp" and rho is None:
            return f"{how} (zCDP: rho = epsilon^2/2)"
        return how

    def _record(
        self,
        group: _Group | None,
        epsilon: float | None,
        release: str,
        delta: float,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """Record a checked release: in ``group`` (an open block), else sequential; the
        first release that says its privacy unit sets the accountant's."""
        if privacy_unit is not ... and self.privacy_unit is None:
            self.privacy_unit = unit_label(privacy_unit)
        cost = self.cost(epsilon, release, delta=delta, rho=rho)
        shown_rho = cost if self.accounting == "zcdp" else None
        eps = None if epsilon is None else float(epsilon)
        if group is not None:
            group.releases.append((release, eps, shown_rho, cost))
            group.deltas.append(float(delta))
        else:
            self._entries.append(
                (release, eps, self._composition(epsilon, rho, "sequential"), shown_rho, cost)
            )
            self._deltas.append(float(delta))
            self._spent_before_group += cost

    def spend(
        self,
        epsilon: float | None,
        release: str,
        *,
        why: str = "",
        delta: float = 0.0,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """Record ``epsilon`` or ``rho`` (and ``delta``) for ``release`` in sequence (charged
        in full, whatever block is open), or refuse it (see :meth:`check`)."""
        self._spend(None, epsilon, release, why=why, delta=delta, rho=rho, privacy_unit=privacy_unit)

    def _spend(
        self,
        group: _Group | None,
        epsilon: float | None,
        release: str,
        *,
        why: str = "",
        delta: float = 0.0,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """:meth:`spend`, in ``group`` (an open block) or in sequence (None)."""
        with self._lock:  # check and record as one step: threads never overspend
            self._check(group, epsilon, release, why=why, delta=delta, rho=rho, privacy_unit=privacy_unit)
            self._record(group, epsilon, release, delta, rho, privacy_unit)

    @contextlib.contextmanager
    def parallel(self, label: str) -> Iterator[ParallelBlock]:
        """A block of releases over disjoint data: those given the block it yields
        (``accountant=block``, or ``block.spend``) cost their maximum together.

        Anything spent on the accountant itself meanwhile, from any thread, is sequential
        (charged in full); so is a release given the block after it has closed."""
        if not isinstance(label, str) or not label:
            msg = f"The 'label' parameter of BudgetAccountant.parallel must be a non-empty string. Got {label!r} instead."
            raise InvalidParameterError(msg)
        group = _Group(label)
        with self._lock:
            self._groups.append(group)
        try:
            yield ParallelBlock(self, group)
        finally:
            with self._lock:
                self._groups.remove(group)  # by identity (_Group compares so)
                group.closed = True
                self._entries += [
                    (
                        name,
                        eps,
                        self._composition(eps, rho if eps is None else None, f"parallel: {group.label}"),
                        rho,
                        cost,
                    )
                    for name, eps, rho, cost in group.releases
                ]
                # The group's delta is its largest; recorded on its first entry.
                self._deltas += [group.delta_cost if i == 0 else 0.0 for i in range(len(group.releases))]
                self._spent_before_group += group.cost

    def __repr__(self) -> str:
        if self.accounting == "zcdp":
            return (
                f"BudgetAccountant(rho={self.rho:g}, spent_rho={self.spent:g}, "
                f"epsilon_spent={self.epsilon_spent():g} at delta={self.delta:g}, releases={len(self.ledger)})"
            )
        delta = (
            f", delta={self.delta:g}, spent_delta={self.spent_delta:g}"
            if self.delta or self.spent_delta
            else ""
        )
        return f"BudgetAccountant(epsilon={self.epsilon:g}, spent={self.spent:g}{delta}, releases={len(self.ledger)})"


class ParallelBlock:
    """The releases of one :meth:`BudgetAccountant.parallel` block, over disjoint parts of
    the data: give it as ``accountant=`` to each (or call :meth:`spend`); together they
    cost the largest of them.

    Only what is given the block joins it: a release cannot slip into someone else's
    block.  After the block has closed, a release given it (a lazy release collected
    later) is charged in sequence, in full.

    Examples
    --------
    >>> acc = BudgetAccountant(1.0)
    >>> with acc.parallel("one count per region") as block:
    ...     block.spend(0.5, "north")
    ...     acc.spend(0.25, "not in the block")  # the accountant itself: in sequence
    ...     block.spend(0.5, "south")
    >>> round(acc.spent, 6)
    0.75
    >>> block.spend(0.25, "after the block")  # closed: in sequence
    >>> round(acc.spent, 6)
    1.0
    """

    def __init__(self, accountant: BudgetAccountant, group: _Group) -> None:
        # Made by BudgetAccountant.parallel only: a block over another accountant's group
        # would charge that one's block instead of its own (review 54).
        if not isinstance(accountant, BudgetAccountant) or not any(g is group for g in accountant._groups):
            msg = "A ParallelBlock is made by BudgetAccountant.parallel: with acc.parallel(label) as block."
            raise InvalidParameterError(msg)
        self._accountant = accountant
        self._group = group

    @property
    def accountant(self) -> BudgetAccountant:
        """The accountant the block charges."""
        return self._accountant

    @property
    def label(self) -> str:
        return self._group.label

    @property
    def open(self) -> bool:
        """Whether the block is still open (its releases then cost their largest)."""
        return not self._group.closed

    def _joining(self) -> _Group | None:
        return None if self._group.closed else self._group

    def check(
        self,
        epsilon: float | None,
        release: str,
        *,
        why: str = "",
        delta: float = 0.0,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """:meth:`BudgetAccountant.check` for a release in this block."""
        with self._accountant._lock:
            self._accountant._check(
                self._joining(), epsilon, release, why=why, delta=delta, rho=rho, privacy_unit=privacy_unit
            )

    def spend(
        self,
        epsilon: float | None,
        release: str,
        *,
        why: str = "",
        delta: float = 0.0,
        rho: float | None = None,
        privacy_unit: str | EllipsisType | None = ...,
    ) -> None:
        """Record a release in this block (in sequence once it has closed), or refuse it."""
        with self._accountant._lock:
            self._accountant._spend(
                self._joining(), epsilon, release, why=why, delta=delta, rho=rho, privacy_unit=privacy_unit
            )

    @property
    def spent(self) -> float:
        """The accountant's spent budget (see :attr:`BudgetAccountant.spent`)."""
        return self._accountant.spent

    @property
    def remaining(self) -> float:
        """The accountant's remaining budget."""
        return self._accountant.remaining

    def __repr__(self) -> str:
        state = "open" if self.open else "closed"
        return f"ParallelBlock({self.label!r}, {state}, of {self._accountant!r})"
