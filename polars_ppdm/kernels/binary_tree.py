"""Continual release of running counts: the binary tree mechanism (pure NumPy).

A scheduled job publishes, after each period ``p`` of a declared horizon of ``T``
periods (``0 .. T-1``, e.g. nights), every group's count of the period and its running
total since period 0.  Releasing the running total afresh each night costs a budget that
grows with ``T`` (each event changes all later totals); summing independently noised
period counts makes the error of the total grow like ``sqrt(p)``.  The binary tree
mechanism (Dwork, Naor, Pitassi, Rothblum 2010; Chan, Shi, Song 2011) releases noisy sums
over the dyadic intervals instead, each once, as soon as its last period is over, so that
every running total is a sum of ``O(log T)`` of them; and the estimator of Honaker (2015)
combines all of them into the variance-optimal estimates.

The tree
--------
Levels ``0 .. L-1`` with ``L = ceil(log2 T) + 1`` (:func:`levels`; level 0 holds the
leaves, one per period; the top level one node).  Node ``(level, index)`` covers the
periods ``[index 2^level, (index + 1) 2^level)`` intersected with ``[0, T)``: a node at the
right edge of a horizon that is not a power of two is truncated (and may cover exactly
what its only child covers).  A node is *complete* -- its value is published -- after
period ``p`` iff its last period is ``<= p`` (:func:`complete_nodes`); a complete node's
children are complete, so the complete nodes form a forest whose roots tile
``[0, p]``.  Arrays of nodes are always ordered by level, then index: at each level the
complete nodes are the indices ``0 .. n_level - 1``.

Privacy (zCDP, discrete Gaussian node noise)
--------------------------------------------
Each node gets independent discrete Gaussian noise of parameter ``sigma``.  The nodes of
one level partition ``[0, T)``, so an event changes exactly one node per level, by 1.  A
privacy unit contributing at most ``k`` events in total (over all periods and groups;
``k = 1`` with each row its own unit is event-level privacy) changes the nodes of one
level by at most ``k`` in L1 norm, hence by at most ``k`` in L2 norm, whichever groups
and periods its events fall in; over the ``L`` levels the L2 change of the vector of all
node values of all groups is at most ``k sqrt(L)`` (equality: ``k`` events of one group
in one period).  The same bound holds for one group's tree and for all the public groups
together.  The multivariate discrete Gaussian of parameter ``sigma`` with L2 sensitivity
``Delta`` is ``Delta^2 / (2 sigma^2)``-zCDP (Canonne, Kamath, Steinke 2020, Theorem 14),
so the whole horizon's release costs ``rho = k^2 L / (2 sigma^2)``, i.e.
``sigma = k sqrt(L / (2 rho))`` (:func:`tree_sigma`).  The nightly publications are
post-processing of that one release: a node's noise is drawn once, keyed, so every night
that republishes it (or an estimate from it) publishes the same value.

Compared at the same total ``rho`` over the horizon (:func:`running_total_variances`):

* leaves only (summing independently noised period counts): a unit's ``k`` events change
  the vector of all groups' period counts by at most ``k`` in L2 (all in one cell), so
  ``sigma_b = k / sqrt(2 rho)`` and the running total at period ``p`` has variance
  ``(p + 1) sigma_b^2``;
* an independent release of the running total each period: an event in period ``q``
  changes the ``T - q`` totals ``q .. T-1`` of its group by 1 each, so ``k`` events in
  period 0 of one group change the vector of ``T`` totals by ``k sqrt(T)`` in L2 (``k``
  events in ``k`` groups only by ``sqrt(k T)``): ``sigma_c = k sqrt(T / (2 rho))``, and
  the variance is ``sigma_c^2`` each period;
* the square-root matrix factorisation (Fichtenberger, Henzinger, Upadhyay 2023;
  Henzinger, Upadhyay, Upadhyay 2023): the lower-triangular all-ones matrix is ``C C``
  with ``C`` lower-triangular Toeplitz of entries ``c_j = binom(2j, j) / 4^j``; releasing
  ``C (C x + z)`` with Gaussian ``z`` of ``sigma = k ||c_0..c_(T-1)|| / sqrt(2 rho)`` (the
  largest column norm of ``C``, times ``k``) gives the running total at ``p`` with
  variance ``sigma^2 sum_(j <= p) c_j^2``.

The estimator
-------------
With all node variances equal and independent, the best linear unbiased estimate of the
period counts ``x_0 .. x_p`` from the complete nodes' noisy values ``y = A x + e`` is the
generalised (here: ordinary) least squares ``(A^T A)^-1 A^T y``, with covariance
``sigma^2 (A^T A)^-1``.  :func:`tree_estimate` computes it in linear time by Honaker's
(2015) two passes, on the forest of complete nodes:

* up: a leaf's estimate from its subtree is ``z = y`` with variance ``V = sigma^2``; an
  inner node combines its own ``y`` (variance ``sigma^2``) with the sum of its children's
  ``z`` (variance ``S``, the sum of their ``V``) by inverse-variance weights:
  ``z = (S y + sigma^2 sum z_c) / (sigma^2 + S)``, ``V = S sigma^2 / (sigma^2 + S)``;
* down: a root keeps ``f = z``; the children of a node share out the difference between
  its final estimate and the sum of their ``z`` in proportion to their ``V``:
  ``f_c = z_c + (V_c / S) (f - sum z_c)``.

The weights depend on ``(T, p)`` only, never on ``sigma`` or the data, so all groups are
estimated at once by a few NumPy passes per level.  The period estimates are consistent by
construction (every node's estimate is the sum of its children's), and the running totals
are their cumulative sums.  Their exact variances (:func:`tree_variance`) follow from the
errors' structure: a root's error has variance ``V``; a child's error is
``r_c + (V_c / S) e_parent`` with the family residuals ``r`` independent of everything
above and of other families, ``Cov(r_i, r_j) = delta_ij V_i - V_i V_j / S``.  The tests
check both against a dense ``(A^T A)^-1``.

Noise keys
----------
A node's noise is ``discrete_gaussian(secret, stream, key, sigma)`` with the 64-bit key
``group << 32 | node_id`` (:func:`noise_keys`): ``group`` the group's number
(``< 2^32``, stable over the nights: e.g. its position in the public groups) and
``node_id = index << 6 | level`` (:func:`node_ids`, ``< 2^32`` for horizons up to
``2^26`` periods), which does not depend on the horizon or the night.  Each sample
depends on its key only, so a node's noise is the same every night and in every engine,
and the noise of two nodes or groups is independent.  ``secret`` and ``stream`` must
therefore stay fixed over one continual release and differ between releases (the
release's own key; a node's noise must never be redrawn over the same horizon).

References
----------
Dwork, Naor, Pitassi, Rothblum, "Differential privacy under continual observation",
STOC 2010.  Chan, Shi, Song, "Private and continual release of statistics", ACM TISSEC
2011.  Honaker, "Efficient use of differentially private binary trees", TPDP 2015.
Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020.
Bun, Steinke, "Concentrated differential privacy", TCC 2016.  Fichtenberger, Henzinger,
Upadhyay, "Constant matters: fine-grained error bound on differentially private continual
observation", ICML 2023.  Henzinger, Upadhyay, Upadhyay, "Almost tight error bounds on
differentially private continual counting", SODA 2023.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import ONE_SECRET, discrete_gaussian, discrete_gaussian_variance

__all__ = [
    "MAX_GROUPS",
    "MAX_HORIZON",
    "Nodes",
    "complete_nodes",
    "dyadic_totals",
    "dyadic_variance",
    "levels",
    "node_ids",
    "node_noise",
    "node_sums",
    "node_variance",
    "noise_keys",
    "running_total_variances",
    "tree_estimate",
    "tree_sigma",
    "tree_variance",
]

#: Longest horizon (periods): a node index fits 26 bits, a node id 32.
MAX_HORIZON = 1 << 26
#: Group numbers are below 2^32 (the high half of a noise key).
MAX_GROUPS = 1 << 32
_LEVEL_BITS = 6


@dataclass(frozen=True)
class Nodes:
    """Nodes of the tree, as parallel int64 arrays (ordered by level, then index);
    iterates as ``level, index, first, last``."""

    level: np.ndarray
    index: np.ndarray
    first: np.ndarray
    last: np.ndarray

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.level, self.index, self.first, self.last))


def _check_horizon(horizon: object, func: str) -> int:
    if (
        isinstance(horizon, bool)
        or not isinstance(horizon, int | np.integer)
        or not 1 <= horizon <= MAX_HORIZON
    ):
        msg = f"{func}: horizon must be an int in [1, {MAX_HORIZON:,}] (periods); got {horizon!r}."
        raise InvalidParameterError(msg)
    return int(horizon)


def _check_through(through: object, horizon: int, func: str) -> int:
    if isinstance(through, bool) or not isinstance(through, int | np.integer) or not 0 <= through < horizon:
        msg = f"{func}: through must be an int in [0, {horizon - 1:,}] (the last period published); got {through!r}."
        raise InvalidParameterError(msg)
    return int(through)


def _check_positive(name: str, value: object, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        msg = f"{func}: {name} must be a finite number > 0; got {value!r}."
        raise InvalidParameterError(msg)
    number = float(value)
    if not 0 < number < math.inf:
        msg = f"{func}: {name} must be a finite number > 0; got {value!r}."
        raise InvalidParameterError(msg)
    return number


def levels(horizon: int) -> int:
    """The number of levels ``L = ceil(log2 T) + 1`` of the tree over ``T`` periods.

    Examples
    --------
    >>> [levels(t) for t in (1, 2, 3, 4, 5, 365, 512, 513)]
    [1, 2, 3, 3, 4, 10, 10, 11]
    """
    horizon = _check_horizon(horizon, "levels")
    return (horizon - 1).bit_length() + 1


def _level_counts(horizon: int, through: int) -> list[int]:
    """The number of complete nodes of each level after period ``through``."""
    if through == horizon - 1:
        return [-(-horizon >> level) for level in range(levels(horizon))]
    return [(through + 1) >> level for level in range(levels(horizon))]


def complete_nodes(horizon: int, through: int) -> Nodes:
    """The nodes complete (publishable) once periods ``0 .. through`` are over.

    Parameters
    ----------
    horizon : int
        The number of periods ``T`` of the release (``0 .. T-1``).
    through : int
        The last period published, in ``[0, T-1]``.

    Returns
    -------
    Nodes
        ``level, index, first, last`` (int64 arrays) of every node whose last period is
        ``<= through``, ordered by level then index.

    Examples
    --------
    >>> nodes = complete_nodes(7, 4)
    >>> nodes.level.tolist(), nodes.index.tolist()
    ([0, 0, 0, 0, 0, 1, 1, 2], [0, 1, 2, 3, 4, 0, 1, 0])
    >>> nodes = complete_nodes(7, 6)  # the last night: the truncated nodes too
    >>> [(int(f), int(t)) for f, t in zip(nodes.first, nodes.last)][-4:]
    [(6, 6), (0, 3), (4, 6), (0, 6)]
    """
    horizon = _check_horizon(horizon, "complete_nodes")
    through = _check_through(through, horizon, "complete_nodes")
    counts = _level_counts(horizon, through)
    level = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    index = np.concatenate([np.arange(n, dtype=np.int64) for n in counts])
    first = index << level
    last = np.minimum((index + 1) << level, horizon) - 1
    return Nodes(level, index, first, last)


def node_ids(level: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The stable number of each node, ``index << 6 | level`` (uint64, below 2^32).

    It depends on the node only (not on the horizon or the night): the noise key's low
    half (:func:`noise_keys`).

    Examples
    --------
    >>> node_ids(np.array([0, 0, 1, 9]), np.array([0, 1, 0, 0])).tolist()
    [0, 64, 1, 9]
    """
    level = np.asarray(level, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    if level.size and (level.min() < 0 or level.max() >= 1 << _LEVEL_BITS):
        msg = f"node_ids: levels must be in [0, {(1 << _LEVEL_BITS) - 1}]."
        raise InvalidParameterError(msg)
    if index.size and (index.min() < 0 or index.max() >= MAX_HORIZON):
        msg = f"node_ids: node indices must be in [0, {MAX_HORIZON - 1:,}]."
        raise InvalidParameterError(msg)
    return ((index.astype(np.uint64) << np.uint64(_LEVEL_BITS)) | level.astype(np.uint64)).astype(np.uint64)


def noise_keys(groups: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The 64-bit noise key of every (group, node): ``group << 32 | node_id``.

    Parameters
    ----------
    groups : numpy.ndarray
        Group numbers in ``[0, 2^32)``, shape ``(G,)``.
    ids : numpy.ndarray
        Node ids from :func:`node_ids`, shape ``(m,)``.

    Returns
    -------
    numpy.ndarray
        uint64 keys of shape ``(G, m)``.

    Examples
    --------
    >>> noise_keys(np.array([0, 1]), np.array([0, 65], dtype=np.uint64)).tolist()
    [[0, 65], [4294967296, 4294967361]]
    """
    groups = np.asarray(groups)
    if groups.size and (groups.min() < 0 or groups.max() >= MAX_GROUPS):
        msg = f"noise_keys: group numbers must be in [0, {MAX_GROUPS - 1:,}]."
        raise InvalidParameterError(msg)
    ids = np.asarray(ids, dtype=np.uint64)
    return (groups.astype(np.uint64)[:, None] << np.uint64(32)) | ids[None, :]


def node_sums(
    period_counts: np.ndarray, level: np.ndarray, index: np.ndarray, *, horizon: int | None = None
) -> np.ndarray:
    """The true value of each node: the sum of its periods' counts, for every group.

    Parameters
    ----------
    period_counts : numpy.ndarray
        Counts per period, shape ``(groups, periods)`` (or ``(periods,)`` for one group);
        the periods published so far (at least through every node's last period).
    level, index : numpy.ndarray
        The nodes (e.g. from :func:`complete_nodes`).
    horizon : int, optional
        The horizon ``T`` (truncates the nodes at the right edge); by default the number
        of periods given.

    Returns
    -------
    numpy.ndarray
        Shape ``(groups, nodes)`` (or ``(nodes,)``), the counts' dtype (int64 for integer
        counts).

    Examples
    --------
    >>> nodes = complete_nodes(4, 3)
    >>> node_sums(np.array([[1, 2, 3, 4], [0, 0, 5, 0]]), nodes.level, nodes.index).tolist()
    [[1, 2, 3, 4, 3, 7, 10], [0, 0, 5, 0, 0, 5, 5]]
    """
    counts = np.asarray(period_counts)
    one = counts.ndim == 1
    counts = np.atleast_2d(counts)
    if counts.ndim != 2:
        msg = f"node_sums: period_counts must be 1-D or 2-D (groups, periods); got {counts.ndim} dimensions."
        raise InvalidParameterError(msg)
    periods = counts.shape[1]
    horizon = periods if horizon is None else _check_horizon(horizon, "node_sums")
    level = np.asarray(level, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    first = index << level
    end = np.minimum((index + 1) << level, horizon)
    if level.size and (end.max() > periods or first.min() < 0 or (first >= end).any()):
        msg = (
            f"node_sums: a node ends after the {periods} periods given (or is not in the horizon "
            f"of {horizon}); pass the counts of every period through the nodes' last."
        )
        raise InvalidParameterError(msg)
    dtype = np.int64 if counts.dtype.kind in "biu" else np.float64
    cumulative = np.zeros((counts.shape[0], periods + 1), dtype=dtype)
    np.cumsum(counts, axis=1, dtype=dtype, out=cumulative[:, 1:])
    sums = cumulative[:, end] - cumulative[:, first]
    return sums[0] if one else sums


def node_noise(
    secret: bytes | Sequence[bytes],
    stream: int,
    level: np.ndarray,
    index: np.ndarray,
    sigma: float,
    *,
    groups: int | np.ndarray,
) -> np.ndarray:
    """The discrete Gaussian noise of every (group, node), keyed (int64).

    The only place this module draws noise: ``discrete_gaussian(secret, stream,
    noise_keys(groups, node_ids(level, index)), sigma)``.  A node's noise depends on
    ``(secret, stream, group, level, index, sigma)`` only, so the nights that publish it
    publish the same value.

    Parameters
    ----------
    secret : bytes or sequence of bytes
        The release's AES key (fixed over its horizon), or one key per node (a
        continual release keys each node by its own data): node ``j`` drawn under
        ``secret[j]``, exactly as ``node_noise(secret[j], ...)`` of that node alone.
    stream : int
        The release's 64-bit stream word.
    level, index : numpy.ndarray
        The nodes.
    sigma : float
        The discrete Gaussian's parameter (:func:`tree_sigma`).
    groups : int or numpy.ndarray
        The number of groups (numbered ``0 .. G-1``) or their numbers (``< 2^32``).

    Returns
    -------
    numpy.ndarray
        int64 noise of shape ``(G, nodes)``.
    """
    sigma = _check_positive("sigma", sigma, "node_noise")
    numbers = (
        np.arange(groups, dtype=np.uint64) if isinstance(groups, int | np.integer) else np.asarray(groups)
    )
    keys = noise_keys(numbers, node_ids(level, index))
    if isinstance(secret, ONE_SECRET):
        draws = discrete_gaussian(secret, stream, keys.reshape(-1), sigma).reshape(keys.shape)
    else:
        if len(secret) != keys.shape[1]:
            msg = f"node_noise: {len(secret)} secrets for {keys.shape[1]} nodes; give one per node."
            raise InvalidParameterError(msg)
        draws = discrete_gaussian(secret, stream, keys.T, sigma).T  # rows: nodes
    return np.ascontiguousarray(draws, dtype=np.int64)


def tree_sigma(rho: float, horizon: int, k: int = 1) -> float:
    """The node noise's ``sigma = k sqrt(L / (2 rho))`` for ``rho``-zCDP over the horizon.

    ``k`` is the most events a privacy unit contributes in total (over all periods and
    groups); the L2 sensitivity of all node values is ``k sqrt(L)`` (module docstring).

    Examples
    --------
    >>> round(tree_sigma(0.5, 365), 4), round(tree_sigma(0.5, 365, k=3), 4)
    (3.1623, 9.4868)
    """
    func = "tree_sigma"
    rho = _check_positive("rho", rho, func)
    horizon = _check_horizon(horizon, func)
    k = int(_check_positive("k", k, func))
    return k * math.sqrt(levels(horizon) / (2 * rho))


def node_variance(sigma: float) -> float:
    """The exact variance of a node's noise: ``dp_noise.discrete_gaussian_variance``,
    the discrete Gaussian's (of the ``sigma`` the sampler uses), which is below
    ``sigma^2`` by a relative ``~8 pi^2 sigma^2 exp(-2 pi^2 sigma^2)`` (2e-7 at
    ``sigma = 1``, nothing in double precision from ``sigma = 1.5``).

    Examples
    --------
    >>> round(node_variance(3.0), 9), round(node_variance(0.5) / 0.25, 4)
    (9.0, 0.8601)
    """
    sigma = _check_positive("sigma", sigma, "node_variance")
    return float(discrete_gaussian_variance(sigma))


class _Forest:
    """The complete nodes after one period, with the estimator's weights in units of the
    node variance: per level the count ``n``, the offset of its nodes in the node arrays,
    ``V`` (the variance of the estimate from the node's subtree), and for inner levels
    ``S`` (the sum of the children's ``V``) and whether the right child exists."""

    def __init__(self, horizon: int, through: int) -> None:
        self.horizon, self.through = horizon, through
        self.counts = _level_counts(horizon, through)
        self.offsets = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        self.v: list[np.ndarray] = [np.ones(self.counts[0])]
        self.s: list[np.ndarray] = [np.zeros(0)]
        self.has_right: list[np.ndarray] = [np.zeros(0, dtype=bool)]
        for level in range(1, len(self.counts)):
            left = 2 * np.arange(self.counts[level])
            below = self.v[level - 1]
            has_right = left + 1 < len(below)
            s = below[left] + np.where(has_right, below[np.minimum(left + 1, len(below) - 1)], 0.0)
            self.s.append(s)
            self.has_right.append(has_right)
            self.v.append(s / (1.0 + s))

    def children_sum(self, level: int, values: np.ndarray) -> np.ndarray:
        """Sum over each node of ``level``'s children of ``values`` (groups, n_(level-1))."""
        left = 2 * np.arange(self.counts[level])
        right = np.minimum(left + 1, max(self.counts[level - 1] - 1, 0))
        if not left.size:
            return np.zeros((values.shape[0], 0))
        return values[:, left] + np.where(self.has_right[level], values[:, right], 0.0)

    def parent_complete(self, level: int) -> np.ndarray:
        """Whether each node of ``level`` has a complete parent."""
        index = np.arange(self.counts[level])
        if level + 1 >= len(self.counts):
            return np.zeros(len(index), dtype=bool)
        return (index >> 1) < self.counts[level + 1]


def _forest(horizon: int, through: int, func: str) -> _Forest:
    horizon = _check_horizon(horizon, func)
    return _Forest(horizon, _check_through(through, horizon, func))


def _as_groups(noisy: np.ndarray, forest: _Forest, func: str) -> tuple[np.ndarray, bool]:
    values = np.asarray(noisy, dtype=np.float64)
    one = values.ndim == 1
    values = np.atleast_2d(values)
    if values.ndim != 2 or values.shape[1] != forest.offsets[-1]:
        msg = (
            f"{func}: noisy must hold the {int(forest.offsets[-1])} complete nodes of horizon "
            f"{forest.horizon} through period {forest.through} (complete_nodes order), per group; "
            f"got shape {np.shape(noisy)}."
        )
        raise InvalidParameterError(msg)
    return values, one


def tree_estimate(noisy: np.ndarray, horizon: int, through: int) -> tuple[np.ndarray, np.ndarray]:
    """The variance-optimal period counts and running totals from the noisy nodes.

    Honaker's (2015) two passes over the forest of complete nodes (module docstring):
    the generalised least-squares estimate ``(A^T A)^-1 A^T y`` of the period counts
    from the noisy node values ``y``, unbiased and of least variance among linear
    unbiased estimators, in time linear in the number of nodes, for all groups at once.

    Parameters
    ----------
    noisy : numpy.ndarray
        The noisy values of the nodes of ``complete_nodes(horizon, through)``, in that
        order, shape ``(groups, nodes)`` (or ``(nodes,)`` for one group).
    horizon : int
        The horizon ``T``.
    through : int
        The last period published.

    Returns
    -------
    periods, totals : numpy.ndarray
        float64 estimates of the counts of periods ``0 .. through`` and of the running
        totals (their cumulative sums), shape ``(groups, through + 1)`` (or 1-D).

    Examples
    --------
    >>> nodes = complete_nodes(4, 3)
    >>> truth = node_sums(np.array([1, 2, 3, 4]), nodes.level, nodes.index)
    >>> periods, totals = tree_estimate(truth + np.array([1, 0, 0, 0, 0, 0, 0]), 4, 3)
    >>> periods.round(3).tolist(), totals.round(3).tolist()
    ([1.619, 1.619, 2.952, 3.952], [1.619, 3.238, 6.19, 10.143])
    """
    func = "tree_estimate"
    forest = _forest(horizon, through, func)
    values, one = _as_groups(noisy, forest, func)
    top = len(forest.counts)
    y = [values[:, forest.offsets[level] : forest.offsets[level + 1]] for level in range(top)]
    z = [y[0]]
    sums = [np.zeros((values.shape[0], 0))]
    for level in range(1, top):
        children = forest.children_sum(level, z[level - 1])
        s = forest.s[level]
        sums.append(children)
        z.append((s * y[level] + children) / (1.0 + s))
    final = z[top - 1]
    for level in range(top - 1, 0, -1):
        below = z[level - 1].copy()
        inside = forest.parent_complete(level - 1)
        parent = np.arange(forest.counts[level - 1])[inside] >> 1
        share = forest.v[level - 1][inside] / forest.s[level][parent]
        below[:, inside] += share * (final[:, parent] - sums[level][:, parent])
        final = below
    periods = final
    totals = np.cumsum(periods, axis=1)
    return (periods[0], totals[0]) if one else (periods, totals)


def tree_variance(horizon: int, through: int, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """The exact variances of :func:`tree_estimate`'s period counts and running totals.

    The diagonal of ``v (A^T A)^-1`` and ``v 1_t^T (A^T A)^-1 1_t`` for every prefix
    ``t = 0 .. through``, with ``v`` = :func:`node_variance` of ``sigma`` (the noise's exact
    variance), computed in ``O(through log T)`` from the errors' tree structure (module
    docstring).  The same for every group and every data set.

    Examples
    --------
    >>> periods, totals = tree_variance(4, 3, 2.0)
    >>> (periods / 4).round(4).tolist(), (totals / 4).round(4).tolist()
    ([0.619, 0.619, 0.619, 0.619], [0.619, 0.4762, 0.9048, 0.5714])
    """
    func = "tree_variance"
    forest = _forest(horizon, through, func)
    unit = node_variance(sigma)
    top = len(forest.counts)
    # Periods: a root's error variance is its V; a child's r-variance V - V^2/S plus its
    # share (V/S)^2 of its parent's.
    p = forest.v[top - 1].copy()
    for level in range(top - 1, 0, -1):
        below = forest.v[level - 1].copy()
        inside = forest.parent_complete(level - 1)
        parent = np.arange(forest.counts[level - 1])[inside] >> 1
        v, s = below[inside], forest.s[level][parent]
        below[inside] = v - v * v / s + (v / s) ** 2 * p[parent]
        p = below
    # Running totals: walk every prefix end t up to its root, keeping the prefix error
    # within the current node as alpha * e_node + R (R independent of e_node and of
    # everything outside the node).
    t = np.arange(through + 1)
    node = t.copy()
    alpha = np.ones(through + 1)
    var_r = np.zeros(through + 1)
    active = np.ones(through + 1, dtype=bool)
    root_v = forest.v[0].copy()
    for level in range(1, top):
        active &= (node >> 1) < forest.counts[level]
        parent = np.where(active, node >> 1, 0)
        if not active.any():
            break
        below = forest.v[level - 1]
        left = np.minimum(2 * parent, len(below) - 1)
        right = np.minimum(2 * parent + 1, len(below) - 1)
        v_left = below[left]
        v_right = np.where(forest.has_right[level][parent], below[right], 0.0)
        s = forest.s[level][parent]
        is_right = (node & 1) == 1
        w_left = np.where(is_right, 1.0, alpha)
        w_right = np.where(is_right, alpha, 0.0)
        weighted = w_left * v_left + w_right * v_right
        step = w_left**2 * v_left + w_right**2 * v_right - weighted**2 / s
        var_r = np.where(active, var_r + step, var_r)
        alpha = np.where(active, weighted / s, alpha)
        root_v = np.where(active, forest.v[level][parent], root_v)
        node = np.where(active, parent, node)
    in_root = alpha**2 * root_v + var_r
    # The roots before t's root: complete, independent, each of variance V.
    root_first, root_var = [], []
    for level in range(top):
        roots = np.flatnonzero(~forest.parent_complete(level))
        root_first.append(roots << level)
        root_var.append(forest.v[level][roots])
    order = np.argsort(np.concatenate(root_first), kind="stable")
    firsts = np.concatenate(root_first)[order]
    before = np.concatenate([[0.0], np.cumsum(np.concatenate(root_var)[order])])
    position = np.searchsorted(firsts, t, side="right") - 1
    totals = before[position] + in_root
    return unit * p, unit * totals


def _dyadic_columns(forest: _Forest) -> tuple[np.ndarray, np.ndarray]:
    """The columns of the nodes of each prefix's dyadic decomposition: (through+1, L) with
    -1 where a level has no node, and how many."""
    through, horizon = forest.through, forest.horizon
    n = np.arange(1, through + 2)
    top = len(forest.counts)
    columns = np.full((through + 1, top), -1, dtype=np.int64)
    for level in range(top):
        use = ((n >> level) & 1) == 1
        columns[use, level] = forest.offsets[level] + (n[use] >> level) - 1
    if through == horizon - 1:  # the last prefix is the (possibly truncated) root
        columns[-1] = -1
        columns[-1, -1] = forest.offsets[top - 1]
    return columns, (columns >= 0).sum(axis=1)


def dyadic_totals(noisy: np.ndarray, horizon: int, through: int) -> np.ndarray:
    """The plain binary-mechanism running totals: each prefix ``[0, t]`` as the sum of the
    noisy nodes of its dyadic decomposition (the fewest complete nodes that tile it: the
    binary digits of ``t + 1``, or the root for ``t = T - 1``).  For comparison with
    :func:`tree_estimate`, which uses every node.

    Examples
    --------
    >>> nodes = complete_nodes(4, 3)
    >>> dyadic_totals(np.arange(7.0), 4, 3).tolist()
    [0.0, 4.0, 6.0, 6.0]
    """
    func = "dyadic_totals"
    forest = _forest(horizon, through, func)
    values, one = _as_groups(noisy, forest, func)
    columns, _ = _dyadic_columns(forest)
    picked = np.where(columns >= 0, values[:, np.maximum(columns, 0)], 0.0)  # (G, t, L)
    totals = picked.sum(axis=2)
    return totals[0] if one else totals


def dyadic_variance(horizon: int, through: int, sigma: float) -> np.ndarray:
    """The variance of :func:`dyadic_totals`: the node variance times the number of nodes
    summed.

    Examples
    --------
    >>> (dyadic_variance(4, 3, 2.0) / 4).tolist()
    [1.0, 1.0, 2.0, 1.0]
    """
    forest = _forest(horizon, through, "dyadic_variance")
    _, count = _dyadic_columns(forest)
    return node_variance(sigma) * count.astype(np.float64)


def _sqrt_factor(horizon: int) -> np.ndarray:
    """``c_j = binom(2j, j) / 4^j``, ``j < T``: the entries of the square root of the
    lower-triangular all-ones matrix."""
    c = np.ones(horizon)
    j = np.arange(1, horizon)
    c[1:] = np.cumprod((2 * j - 1) / (2 * j))
    return c


def running_total_variances(rho: float, horizon: int, through: int, k: int = 1) -> dict[str, float]:
    """The variance of the running total at period ``through`` of each way of releasing
    it, at the same ``rho``-zCDP over the horizon and ``k`` events per unit.

    Gaussian (continuous) variances, ``sigma^2`` per noise draw: the discrete Gaussian's
    is at most that (the same in double precision for ``sigma >= 1.5``).

    Returns
    -------
    dict
        ``"tree"``: the tree with :func:`tree_estimate`; ``"tree_dyadic"``: the tree with
        :func:`dyadic_totals`; ``"leaves"``: the sum of independently noised period
        counts, ``(through + 1) k^2 / (2 rho)``; ``"totals"``: an independent release of
        the running total each period, ``k^2 T / (2 rho)``; ``"sqrt_factorisation"``: the
        square-root matrix factorisation, ``k^2 (sum_(j<T) c_j^2)(sum_(j<=through)
        c_j^2) / (2 rho)``.

    Examples
    --------
    >>> v = running_total_variances(0.5, 365, 363)
    >>> {name: round(value, 2) for name, value in v.items()}
    {'tree': 26.18, 'tree_dyadic': 50.0, 'leaves': 364.0, 'totals': 365.0, 'sqrt_factorisation': 8.66}
    """
    func = "running_total_variances"
    rho = _check_positive("rho", rho, func)
    horizon = _check_horizon(horizon, func)
    through = _check_through(through, horizon, func)
    k = int(_check_positive("k", k, func))
    sigma2 = k * k * levels(horizon) / (2 * rho)  # tree_sigma squared
    forest = _Forest(horizon, through)
    _, totals = tree_variance(horizon, through, 2.0)  # unit variances times 4
    _, count = _dyadic_columns(forest)
    c2 = _sqrt_factor(horizon) ** 2
    base = k * k / (2 * rho)
    return {
        "tree": float(sigma2 * totals[through] / 4.0),
        "tree_dyadic": float(sigma2 * count[through]),
        "leaves": (through + 1) * base,
        "totals": horizon * base,
        "sqrt_factorisation": float(base * c2.sum() * c2[: through + 1].sum()),
    }
