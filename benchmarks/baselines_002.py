"""The three baselines of paper 002's Table 1: RBT, NeNDS and CAMP_CREST.

Paper 002 (Huang, Ni, Wang, Sun, Chong: "LSDP, log-spiral data perturbation for
clustering", Chinese Journal of Computers 2012) compares its log-spiral perturbation
(``polars_ppdm.spiral``) with three earlier perturbations for clustering, citing them as
[8] RBT, [9] NeNDS and [10] CAMP_CREST, and gives almost nothing of them beyond one
sentence each (section 2) and their parameters (section 4: NeNDS c = 6 on Breast Cancer
and 4 on Image Segmentation; CAMP_CREST b = 5 and 9; none for RBT).  These are our
implementations of the cited methods, for the benchmark (``benchmarks/lsdp_clustering.py``)
only: they are not part of the library.  Each docstring says what we had to assume.

Every function takes the data as a float array of shape (rows, attributes), already
normalised as the caller wants (the benchmark normalises each attribute to [0, 10] as
paper 002 does before every method), and returns a new array of the same shape and row
order.  The random ones take an explicit ``numpy.random.Generator``; the benchmark seeds
it from the run number (``numpy.random.default_rng(run)``).  Numpy's global random state
is never used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from polars_ppdm.exceptions import InvalidParameterError

__all__ = [
    "RotationStep",
    "camp_crest",
    "fixed_size_groups",
    "mst_groups",
    "nends",
    "rbt",
    "rbt_plan",
    "variance_of_difference",
]


def _matrix(x: object, func: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        msg = f"The 'x' parameter of {func} must be a numeric array of shape (rows, attributes). Got {type(x).__name__} instead."
        raise InvalidParameterError(msg) from exc
    if a.ndim != 2 or a.shape[0] < 2 or a.shape[1] < 1:
        msg = f"The 'x' parameter of {func} must be a 2-D array with at least 2 rows and 1 column. Got shape {a.shape} instead."
        raise InvalidParameterError(msg)
    if not np.isfinite(a).all():
        msg = f"The 'x' parameter of {func} must hold finite values only (no NaN or infinity)."
        raise InvalidParameterError(msg)
    return a


def _generator(rng: object, func: str) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        msg = (
            f"The 'rng' parameter of {func} must be a numpy.random.Generator "
            f"(e.g. numpy.random.default_rng(run)). Got {type(rng).__name__} instead."
        )
        raise TypeError(msg)
    return rng


def _group_size(size: object, n: int, name: str, func: str) -> int:
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or not 2 <= size <= n:
        msg = f"The '{name}' parameter of {func} must be an integer in [2, rows] = [2, {n}]. Got {size!r} instead."
        raise InvalidParameterError(msg)
    return int(size)


# ---------------------------------------------------------------------------------------
# RBT
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RotationStep:
    """One rotation of RBT: attributes ``i`` and ``j`` turned by ``angle`` (radians).

    ``(x_i, x_j) <- (x_i cos a + x_j sin a, -x_i sin a + x_j cos a)`` about the two
    attributes' means.
    """

    i: int
    j: int
    angle: float


def _rotate(y: np.ndarray, step: RotationStep) -> None:
    c, s = np.cos(step.angle), np.sin(step.angle)
    ui, uj = y[:, step.i].copy(), y[:, step.j].copy()
    mi, mj = ui.mean(), uj.mean()
    y[:, step.i] = mi + c * (ui - mi) + s * (uj - mj)
    y[:, step.j] = mj - s * (ui - mi) + c * (uj - mj)


def variance_of_difference(original: np.ndarray, released: np.ndarray) -> np.ndarray:
    """``Var(X_k - Y_k) / Var(X_k)`` per attribute k: RBT's privacy measure, relative.

    Oliveira and Zaiane (2004) measure the privacy of attribute k by ``Var(X_k - Y_k)``
    on z-score normalised data (where ``Var(X_k) = 1``); dividing by ``Var(X_k)`` gives
    the same number on data of any scale.
    """
    x, y = np.asarray(original, dtype=np.float64), np.asarray(released, dtype=np.float64)
    return (x - y).var(axis=0) / x.var(axis=0)


def _ratios(
    o_i: np.ndarray, u: np.ndarray, v: np.ndarray, o_j: np.ndarray, angles: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Relative variances of difference of both attributes for each candidate angle.

    ``o_i, o_j`` are the original columns, ``u, v`` their current values (equal to the
    original unless the attribute was rotated before).  The new values are
    ``u cos a + v sin a`` and ``-u sin a + v cos a``; the variances are quadratic forms
    in (1, cos a, sin a) of the covariance matrix of (o_i, u, v, o_j).
    """
    cov = np.cov(np.vstack([o_i, u, v, o_j]), ddof=0)
    c, s = np.cos(angles), np.sin(angles)
    # o_i - (c u + s v)
    var_i = (
        cov[0, 0]
        + c * c * cov[1, 1]
        + s * s * cov[2, 2]
        - 2 * c * cov[0, 1]
        - 2 * s * cov[0, 2]
        + 2 * c * s * cov[1, 2]
    )
    # o_j - (-s u + c v)
    var_j = (
        cov[3, 3]
        + s * s * cov[1, 1]
        + c * c * cov[2, 2]
        + 2 * s * cov[3, 1]
        - 2 * c * cov[3, 2]
        - 2 * c * s * cov[1, 2]
    )
    return var_i / cov[0, 0], var_j / cov[3, 3]


def rbt_plan(
    x: np.ndarray, thresholds: float | Sequence[float], rng: np.random.Generator
) -> list[RotationStep]:
    """Choose RBT's pairs of attributes and, for each pair, an angle in its security range.

    Rotation-Based Transformation (Oliveira and Zaiane 2004; paper 002's reference [8],
    their 2003 paper, introduced the rotations): the attributes are split into pairs and
    each pair is rotated by its own angle.  The angle of pair (i, j) is drawn uniformly
    from its *security range*: the angles in [0, 2 pi) for which the rotated attributes
    differ enough from the originals, ``Var(X_i - Y_i) >= rho_i Var(X_i)`` and
    ``Var(X_j - Y_j) >= rho_j Var(X_j)``.  With an odd number of attributes the last one
    is paired with an attribute already rotated (which is rotated a second time).

    What we assume (the 2004 method leaves it to the data owner):

    - The thresholds are relative to each attribute's variance.  The 2004 paper states
      them on z-score normalised data (variance 1), where the two are the same; stated
      relatively they hold on data of any scale (e.g. paper 002's [0, 10] scaling) and the
      rotation needs no rescaling, so every distance is kept.
    - The pairing is random (a random permutation, consecutive pairs); the partner of an
      odd last attribute is drawn among the rotated ones.  For the attribute rotated twice
      the threshold is checked against its *original* values, so the guarantee holds for
      every attribute of the released data.
    - The security range is found on a grid of 36,000 angles (0.01 degree; the 2004 paper
      works in degrees) to detect an empty range; the angle itself is drawn uniformly on
      the exact range by rejection.
    - Each pair is rotated about the means of its two attributes (the 2004 method rotates
      z-scores, i.e. about the mean); the released cloud stays where the original was.

    Parameters
    ----------
    x : array of shape (rows, attributes)
        The data, at least 2 attributes.
    thresholds : float or sequence of floats
        ``rho``, one for every attribute or one per attribute, each >= 0.
    rng : numpy.random.Generator
        The source of the pairing and the angles.

    Returns
    -------
    list of RotationStep
        The rotations, in the order they are applied.

    Raises
    ------
    InvalidParameterError
        Bad data or thresholds, or a pair whose security range is empty (the message
        gives the largest ratios that pair can reach).

    References
    ----------
    S. R. M. Oliveira and O. R. Zaiane, "Achieving privacy preservation when sharing data
    for clustering", Secure Data Management (SDM) workshop, LNCS 3178, 2004, pp. 67-82;
    "Privacy preserving clustering by data transformation", SBBD 2003, pp. 304-318.
    """
    func = "rbt"
    a = _matrix(x, func)
    rng = _generator(rng, func)
    d = a.shape[1]
    if d < 2:
        msg = f"The 'x' parameter of {func} must have at least 2 attributes (they are rotated in pairs). Got {d}."
        raise InvalidParameterError(msg)
    if np.any(a.var(axis=0) == 0):
        msg = (
            f"The 'x' parameter of {func} has a constant attribute; its variance of difference is undefined."
        )
        raise InvalidParameterError(msg)
    rho = (
        np.broadcast_to(np.asarray(thresholds, dtype=np.float64), (d,))
        if np.ndim(thresholds) == 0
        else np.asarray(thresholds, dtype=np.float64)
    )
    if rho.shape != (d,) or not np.isfinite(rho).all() or (rho < 0).any():
        msg = f"The 'thresholds' parameter of {func} must be one finite number >= 0 or {d} of them (one per attribute). Got {thresholds!r} instead."
        raise InvalidParameterError(msg)
    order = [int(k) for k in rng.permutation(d)]
    pairs = [(order[k], order[k + 1]) for k in range(0, d - 1, 2)]
    if d % 2:
        done = [k for pair in pairs for k in pair]
        pairs.append((order[-1], done[int(rng.integers(len(done)))]))
    y = a.copy()
    grid = np.linspace(0.0, 2 * np.pi, 36_000, endpoint=False)
    steps: list[RotationStep] = []
    for i, j in pairs:
        ri, rj = _ratios(a[:, i], y[:, i], y[:, j], a[:, j], grid)
        feasible = (ri >= rho[i]) & (rj >= rho[j])
        if not feasible.any():
            msg = (
                f"{func}: the security range of attributes {i} and {j} is empty for thresholds "
                f"{rho[i]:g} and {rho[j]:g} (the largest ratios any angle reaches are "
                f"{ri.max():.4g} and {rj.max():.4g}); lower the thresholds."
            )
            raise InvalidParameterError(msg)
        angle = None
        for _ in range(100):
            candidates = rng.uniform(0.0, 2 * np.pi, 4096)
            ci, cj = _ratios(a[:, i], y[:, i], y[:, j], a[:, j], candidates)
            ok = np.flatnonzero((ci >= rho[i]) & (cj >= rho[j]))
            if ok.size:
                angle = float(candidates[ok[0]])
                break
        if angle is None:  # a sliver of a range: a feasible grid angle
            angle = float(grid[rng.choice(np.flatnonzero(feasible))])
        step = RotationStep(i, j, angle)
        _rotate(y, step)
        steps.append(step)
    return steps


def rbt(x: np.ndarray, thresholds: float | Sequence[float], rng: np.random.Generator) -> np.ndarray:
    """RBT: rotate pairs of attributes by angles in their security ranges.

    See :func:`rbt_plan` for the method (Oliveira and Zaiane 2004) and what we assume.
    The result is ``x`` moved by one orthogonal map (a product of plane rotations) about
    a fixed point: every pairwise distance is kept exactly (up to rounding), and
    ``variance_of_difference(x, result) >= thresholds`` for every attribute.

    Parameters
    ----------
    x : array of shape (rows, attributes)
    thresholds : float or sequence of floats
        ``rho`` per attribute (relative to its variance), >= 0.
    rng : numpy.random.Generator
        Seeded by the caller, e.g. ``numpy.random.default_rng(run)``.

    Returns
    -------
    numpy.ndarray
        The released data, same shape and row order.

    References
    ----------
    S. R. M. Oliveira and O. R. Zaiane, "Achieving privacy preservation when sharing data
    for clustering", SDM workshop, LNCS 3178, 2004, pp. 67-82 (paper 002's [7]; [8] is
    their SBBD 2003 paper).
    """
    y = _matrix(x, "rbt").copy()
    for step in rbt_plan(y, thresholds, rng):
        _rotate(y, step)
    return y


# ---------------------------------------------------------------------------------------
# Neighbourhoods: NeNDS's and CAMP_CREST's fixed-size groups
# ---------------------------------------------------------------------------------------


def fixed_size_groups(x: np.ndarray, size: int) -> list[np.ndarray]:
    """Partition the rows into groups of ``size`` nearest neighbours (the last: size to 2 size - 1).

    The MDAV rule of microaggregation (Domingo-Ferrer and Torra 2005): while at least
    ``2 size`` rows are left, the row farthest from the centroid of the rows left starts a
    group with its ``size - 1`` nearest rows left; the rows that remain form the last
    group.  Deterministic (ties go to the lower row number).

    Returns
    -------
    list of numpy.ndarray
        Row numbers of each group; together every row exactly once.
    """
    func = "fixed_size_groups"
    a = _matrix(x, func)
    size = _group_size(size, a.shape[0], "size", func)
    left = np.arange(a.shape[0])
    groups: list[np.ndarray] = []
    while left.size >= 2 * size:
        pts = a[left]
        start = int(np.argmax(((pts - pts.mean(axis=0)) ** 2).sum(axis=1)))
        dist = ((pts - pts[start]) ** 2).sum(axis=1)
        near = np.argsort(dist, kind="stable")[:size]
        groups.append(left[near])
        left = np.delete(left, near)
    groups.append(left)
    return groups


def _derangement(m: int, rng: np.random.Generator) -> np.ndarray:
    """A permutation of range(m) with no fixed point, uniform over all of them (m >= 2)."""
    while True:  # accepted with probability ~1/e (1/2 for m = 2)
        p = rng.permutation(m)
        if not (p == np.arange(m)).any():
            return p


def nends(x: np.ndarray, size: int, rng: np.random.Generator, *, per_attribute: bool = False) -> np.ndarray:
    """NeNDS, nearest-neighbour data substitution: rows swap values inside small neighbourhoods.

    Parameswaran and Blough (paper 002's reference [9]) group the data into neighbourhoods
    of ``size`` nearest neighbours and substitute every data item by another item of its
    neighbourhood, never by itself; paper 002 describes it as "exchanging the data points
    nearest in space" and runs it with c = 6 (Breast Cancer) and c = 4 (Image
    Segmentation).  Every row's values are replaced by those of another row of its
    neighbourhood, so each neighbourhood keeps its multiset of values and no row keeps
    its own.

    What we assume:

    - Neighbourhoods are formed in the space of all the attributes by the MDAV rule
      (:func:`fixed_size_groups`): groups of ``size`` nearest rows, the last one of
      ``size`` to ``2 size - 1`` rows, so every neighbourhood can be deranged.
    - The substitution is a permutation with no fixed point drawn uniformly at random
      within each neighbourhood (NeNDS picks its permutation by the items' distances; the
      cited text is not available to us, and the uniform derangement is the weakest
      assumption with the same guarantees: same neighbourhood, never itself).
    - ``per_attribute=False`` (default, paper 002's wording): whole rows are substituted,
      one derangement per neighbourhood.  ``per_attribute=True``: each attribute gets its
      own derangement within the same neighbourhoods, so rows become mixtures of their
      neighbours.

    Parameters
    ----------
    x : array of shape (rows, attributes)
    size : int
        The neighbourhood size c, 2 <= c <= rows.
    rng : numpy.random.Generator
        Seeded by the caller, e.g. ``numpy.random.default_rng(run)``.
    per_attribute : bool, default False
        One derangement per attribute instead of one per neighbourhood.

    Returns
    -------
    numpy.ndarray
        The released data, same shape and row order.

    References
    ----------
    R. Parameswaran and D. M. Blough, "Privacy preserving data obfuscation for inherently
    clustered data", International Journal of Information and Computer Security 2(1),
    2008, pp. 4-26; "A robust data-obfuscation approach for privacy preservation of
    clustered data", ICDM workshop on privacy and security aspects of data mining, 2005.
    """
    func = "nends"
    a = _matrix(x, func)
    size = _group_size(size, a.shape[0], "size", func)
    rng = _generator(rng, func)
    y = np.empty_like(a)
    for group in fixed_size_groups(a, size):
        if per_attribute:
            for k in range(a.shape[1]):
                y[group, k] = a[group[_derangement(group.size, rng)], k]
        else:
            y[group] = a[group[_derangement(group.size, rng)]]
    return y


# ---------------------------------------------------------------------------------------
# CAMP_CREST
# ---------------------------------------------------------------------------------------


def mst_groups(x: np.ndarray, size: int) -> list[np.ndarray]:
    """Groups of at least ``size`` rows cut from the Euclidean minimum spanning tree.

    The MST partitioning of Laszlo and Mukherjee (2005): the tree's edges are visited from
    the longest to the shortest and an edge is removed when both parts it separates keep
    at least ``size`` rows.  A part that still has ``2 size`` rows or more is split by the
    MDAV rule (:func:`fixed_size_groups`), as Laszlo and Mukherjee split their large
    trees with a fixed-size method.  Every group has ``size`` to ``2 size - 1`` rows.
    Deterministic.
    """
    from scipy.sparse.csgraph import breadth_first_order, minimum_spanning_tree
    from scipy.spatial.distance import pdist, squareform

    func = "mst_groups"
    a = _matrix(x, func)
    n = a.shape[0]
    size = _group_size(size, n, "size", func)
    # Zero distances (duplicate rows) would vanish from a sparse graph: add a tiny constant.
    dist = squareform(pdist(a)) + 1e-300
    np.fill_diagonal(dist, 0.0)
    tree = minimum_spanning_tree(dist).tocoo()
    sym = tree + tree.T
    order, parent = breadth_first_order(sym, 0, directed=False, return_predecessors=True)
    if order.size != n:  # cannot happen for a complete graph
        msg = f"{func}: the spanning tree does not reach every row."
        raise RuntimeError(msg)
    # Subtree sizes, counting only rows still attached (after the cuts below each node).
    alive = np.ones(n, dtype=np.int64)
    for v in order[::-1]:
        if parent[v] >= 0:
            alive[parent[v]] += alive[v]
    cut = np.zeros(n, dtype=bool)  # cut[v]: the edge (parent[v], v) was removed
    cut[order[0]] = True  # the root heads its component
    child = np.where(parent[tree.row] == tree.col, tree.row, tree.col)
    for e in np.argsort(-tree.data, kind="stable"):
        c = int(child[e])
        r = int(parent[c])
        while not cut[r]:
            r = int(parent[r])
        below, rest = alive[c], alive[r] - alive[c]
        if below >= size and rest >= size:
            cut[c] = True
            p = int(parent[c])
            while True:
                alive[p] -= below
                if cut[p]:
                    break
                p = int(parent[p])
    # The components: each row belongs to its nearest ancestor (itself included) that was cut.
    head = np.empty(n, dtype=np.int64)
    for v in order:
        head[v] = v if cut[v] else head[parent[v]]
    groups: list[np.ndarray] = []
    for h in np.unique(head):
        members = np.flatnonzero(head == h)
        if members.size >= 2 * size:
            groups.extend(members[g] for g in fixed_size_groups(a[members], size))
        else:
            groups.append(members)
    return groups


def camp_crest(x: np.ndarray, size: int) -> np.ndarray:
    """CAMP_CREST as paper 002 describes it: MST groups of b neighbours replaced by their mean.

    Paper 002 (section 2) on its reference [10]: every record is a node of a tree; the
    minimum spanning tree is built from the records' Euclidean distances; the
    quasi-identifiers of a node's b neighbouring records are replaced by their mean,
    the sensitive attribute unchanged.  It runs it with b = 5 (Breast Cancer) and b = 9
    (Image Segmentation).  Every released row is the mean of a group of at least b
    original rows that are neighbours in the tree, so every group's sum (and the data's
    mean) is kept and at least b rows share each released value.

    What we assume (paper 002 gives one sentence; Li and Sarkar's paper is not available
    to us):

    - The groups are those of MST partitioning for microaggregation (Laszlo and Mukherjee
      2005, :func:`mst_groups`): remove the longest tree edges that leave both sides with
      at least b rows, then split parts of 2b rows or more by the MDAV rule; so every
      group has b to 2b - 1 rows.
    - "Replaced by the mean" is taken literally: no micro-perturbation noise is added
      around the mean (paper 002 mentions none), so the method is deterministic and takes
      no random generator.
    - All the clustering attributes are the quasi-identifiers; the sensitive attribute
      (e.g. the class) is not passed in and stays as it is; groups are not restricted by
      it.

    Parameters
    ----------
    x : array of shape (rows, attributes)
        The quasi-identifiers.
    size : int
        b, the least number of rows per group, 2 <= b <= rows.

    Returns
    -------
    numpy.ndarray
        The released data, same shape and row order.

    References
    ----------
    X.-B. Li and S. Sarkar, "Data clustering and micro-perturbation for privacy-preserving
    data sharing and analysis", ICIS 2010, paper 58; M. Laszlo and S. Mukherjee,
    "Minimum spanning tree partitioning for microaggregation", IEEE TKDE 17(7), 2005,
    pp. 902-911.
    """
    func = "camp_crest"
    a = _matrix(x, func)
    size = _group_size(size, a.shape[0], "size", func)
    y = np.empty_like(a)
    for group in mst_groups(a, size):
        y[group] = a[group].mean(axis=0)
    return y
