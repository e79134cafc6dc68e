"""The privacy-budget accountant: sequential and parallel composition.

Every differentially private release of polars_ppdm takes ``accountant=``; it asks the
accountant for its epsilon *before* it computes anything, so an over-budget release is
refused with :class:`~polars_ppdm.exceptions.BudgetExceededError` and nothing leaves.

* Sequential composition (the default): releases over the same data add up.
* Parallel composition (``with accountant.parallel("..."):``): releases over disjoint
  parts of the data (one per region, one per month, ...) cost the largest of them.  The
  disjointness is the caller's promise; the accountant cannot check it.

  **The block belongs to the thread that opened it.**  Only spends made on that thread
  while the block is open join it (and cost the block's maximum); a spend from any
  other thread -- another user of a shared accountant, or a worker thread of Polars or
  DuckDB evaluating a lazy release -- composes sequentially and is charged in full, as
  if no block were open.  That is the conservative side: a release cannot slip into
  someone else's block and be charged nothing.  (A DP release evaluated lazily inside a
  block may thus be charged in full when its engine calls the accountant from one of its
  own threads; collect it on the block's thread to share the block.)  Each thread may
  hold one open block of its own; blocks do not nest within a thread.

A release may also cost a ``delta`` (partition selection of :func:`polars_ppdm.dp_group_by`):
the accountant composes (epsilon, delta) pairs by basic composition, both sums, and has a
delta budget of its own (default 0: no release with a delta is accepted).

One accountant may be shared by threads: each spend checks and records under a lock, so
concurrent releases never spend more than the total between them.

References
----------
McSherry, "Privacy integrated queries", SIGMOD 2009 (sequential and parallel
composition).  Zhang, Cheng, DPQT k-means (paper 004).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import polars as pl

from polars_ppdm._validation import check_real
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError

__all__ = ["BudgetAccountant", "check_epsilon"]

# Float sums of budget shares (0.1 + 0.2 ...) must not refuse an exact fit.
_SLACK = 1e-12


def check_epsilon(epsilon: object, func: str, name: str = "epsilon") -> float:
    """A finite float > 0."""
    return check_real(name, epsilon, func, low=0, open_low=True)


@dataclass
class _Group:
    label: str
    releases: list[tuple[str, float]] = field(default_factory=list)
    deltas: list[float] = field(default_factory=list)

    @property
    def cost(self) -> float:
        return max((eps for _, eps in self.releases), default=0.0)

    @property
    def delta_cost(self) -> float:
        return max(self.deltas, default=0.0)


class BudgetAccountant:
    """A total epsilon, spent release by release; refuses to overspend.

    Parameters
    ----------
    epsilon : float
        The total budget, > 0.
    delta : float
        The total delta budget, in [0, 1) (default 0: releases with a delta are refused).

    Examples
    --------
    >>> acc = BudgetAccountant(1.0)
    >>> acc.spend(0.4, "histogram of age")
    >>> with acc.parallel("one count per region"):
    ...     acc.spend(0.5, "north")
    ...     acc.spend(0.5, "south")
    >>> round(acc.spent, 6), round(acc.remaining, 6)
    (0.9, 0.1)
    >>> acc.spend(0.2, "one more")
    Traceback (most recent call last):
    ...
    polars_ppdm.exceptions.BudgetExceededError: 'one more' needs epsilon 0.2 but the accountant has 0.1 left of 1 (spent 0.9); nothing was released.
    """

    def __init__(self, epsilon: float, delta: float = 0.0) -> None:
        self.epsilon = check_epsilon(epsilon, "BudgetAccountant")
        self.delta = check_real("delta", delta, "BudgetAccountant", low=0, high=1, open_high=True)
        self._entries: list[tuple[str, float, str]] = []  # (release, epsilon, composition)
        self._deltas: list[float] = []  # per entry
        # The open parallel blocks, by the thread that opened each (threading.get_ident()).
        self._groups: dict[int, _Group] = {}
        self._spent_before_group = 0.0  # everything but the open blocks
        # Re-entrant: spend() holds it while calling check(), which reads spent.
        self._lock = threading.RLock()

    @property
    def _group(self) -> _Group | None:
        """The open parallel block of the calling thread (None: its spends are sequential)."""
        return self._groups.get(threading.get_ident())

    def _open_cost(self) -> tuple[float, float]:
        """What the open blocks of every thread cost together (epsilon, delta): each its
        largest release, the blocks of different threads summed (sequential)."""
        groups = list(self._groups.values())
        return math.fsum(g.cost for g in groups), math.fsum(g.delta_cost for g in groups)

    @property
    def spent(self) -> float:
        """Epsilon spent so far (an open parallel block counts its largest release)."""
        with self._lock:
            return self._spent_before_group + self._open_cost()[0]

    @property
    def remaining(self) -> float:
        return max(self.epsilon - self.spent, 0.0)

    @property
    def spent_delta(self) -> float:
        """Delta spent so far (basic composition: the sum; a parallel block its largest)."""
        with self._lock:
            return math.fsum(self._deltas) + self._open_cost()[1]

    @property
    def ledger(self) -> pl.DataFrame:
        """Every release: its label, its epsilon and how it composed."""
        with self._lock:
            rows = [(*entry, delta) for entry, delta in zip(self._entries, self._deltas, strict=True)]
            for group in self._groups.values():
                rows += [
                    (name, eps, f"parallel: {group.label}", d)
                    for (name, eps), d in zip(group.releases, group.deltas, strict=True)
                ]
        return pl.DataFrame(
            rows,
            schema={
                "release": pl.String,
                "epsilon": pl.Float64,
                "composition": pl.String,
                "delta": pl.Float64,
            },
            orient="row",
        )

    def check(self, epsilon: float, release: str, *, why: str = "", delta: float = 0.0) -> None:
        """Raise :class:`BudgetExceededError` if ``release`` cannot spend ``epsilon`` (and
        ``delta``) on the calling thread; ``why`` (how the release worked ``epsilon`` out)
        goes into the message."""
        epsilon = check_epsilon(epsilon, release)
        delta = check_real("delta", delta, release, low=0, high=1, open_high=True)
        with self._lock:
            group, spent, spent_delta = self._group, self.spent, self.spent_delta
            # Only the calling thread's own block absorbs the release (up to its largest).
            after = spent + (max(group.cost, epsilon) - group.cost if group else epsilon)
            delta_after = spent_delta + (max(group.delta_cost, delta) - group.delta_cost if group else delta)
        if delta_after > self.delta * (1 + _SLACK) + 0.0:
            msg = (
                f"{release!r} needs delta {delta:g} but the accountant has {max(self.delta - spent_delta, 0.0):g} "
                f"left of its delta budget {self.delta:g}"
                + (" (make it with BudgetAccountant(epsilon, delta=...))" if self.delta == 0 else "")
                + "; nothing was released."
            )
            raise BudgetExceededError(msg)
        if after > self.epsilon * (1 + _SLACK):
            msg = (
                f"{release!r} needs epsilon {epsilon:g}{f' ({why})' if why else ''} but the accountant has {max(self.epsilon - spent, 0.0):g} left of "
                f"{self.epsilon:g} (spent {spent:g}); nothing was released."
            )
            raise BudgetExceededError(msg)

    def _record(self, epsilon: float, release: str, delta: float) -> None:
        """Record a checked release: in the calling thread's open block, else sequential."""
        group = self._group
        if group is not None:
            group.releases.append((release, float(epsilon)))
            group.deltas.append(float(delta))
        else:
            self._entries.append((release, float(epsilon), "sequential"))
            self._deltas.append(float(delta))
            self._spent_before_group += float(epsilon)

    def spend(self, epsilon: float, release: str, *, why: str = "", delta: float = 0.0) -> None:
        """Record ``epsilon`` (and ``delta``) for ``release``, or refuse it (see :meth:`check`).

        Inside a ``parallel`` block opened by the calling thread the release joins the
        block; from any other thread it is sequential (charged in full)."""
        with self._lock:  # check and record as one step: threads never overspend
            self.check(epsilon, release, why=why, delta=delta)
            self._record(epsilon, release, delta)

    @contextlib.contextmanager
    def parallel(self, label: str) -> Iterator[BudgetAccountant]:
        """Releases made by this thread inside the block touch disjoint data: together
        they cost their maximum.  Releases of other threads meanwhile are sequential."""
        owner = threading.get_ident()
        with self._lock:
            if owner in self._groups:
                msg = "BudgetAccountant.parallel blocks do not nest; close the open one first."
                raise InvalidParameterError(msg)
            self._groups[owner] = group = _Group(label)
        try:
            yield self
        finally:
            with self._lock:
                del self._groups[owner]
                self._entries += [(name, eps, f"parallel: {group.label}") for name, eps in group.releases]
                # The group's delta is its largest; recorded on its first entry.
                self._deltas += [group.delta_cost if i == 0 else 0.0 for i in range(len(group.releases))]
                self._spent_before_group += group.cost

    def __repr__(self) -> str:
        delta = (
            f", delta={self.delta:g}, spent_delta={self.spent_delta:g}"
            if self.delta or self.spent_delta
            else ""
        )
        return f"BudgetAccountant(epsilon={self.epsilon:g}, spent={self.spent:g}{delta}, releases={len(self.ledger)})"
