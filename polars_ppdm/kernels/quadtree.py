"""The differentially private quadtree of DPQT k-means, in d dimensions (pure NumPy).

A node is a box of the public bounds; a split cuts every axis at the box centre, giving
2^d children (d = 2: the paper's four quadrants).  Each level's nodes get a noisy count
(two-sided geometric noise); a node whose noisy count is at most the threshold T, or
that sits at the height limit, becomes a leaf.  Every child of a split node is examined,
empty ones included: skipping empty cells would tell where the data is not.  The leaves
then get fresh noisy counts from their own budget.

A point lies in exactly one node per level, so the nodes of a level compose in parallel;
the levels compose sequentially.

References
----------
Zhang, Cheng, DPQT k-means (paper 004), buildDPQuadTree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import discrete_laplace, grid_of, to_grid
from polars_ppdm.kernels.prf import stream_id

__all__ = [
    "CODE_BITS",
    "MAX_NODES",
    "CellCounts",
    "Leaves",
    "build_quadtree",
    "cell_index",
    "count_codes",
    "grow_quadtree",
    "morton_codes",
    "point_counts",
    "resolvable_height",
]

#: The tree's only access to the data: ``count(level, nodes)`` gives the true number of
#: points in each node (Z-order codes at ``level``, int64) as int64.  Polars answers it
#: with NumPy over the collected points (:func:`point_counts`), Spark with a group-by.
CellCounts = Callable[[int, np.ndarray], np.ndarray]

# A cell's Z-order code holds d bits per level in an int64: d * height <= 62.
CODE_BITS = 62
# The most nodes one level examines.  Empty nodes split too, whenever their noise passes
# the threshold (about half the time when T is near 0), so a tall tree's frontier can
# double every level: max_height = 31 in 2-D reached 2^31 nodes (a MemoryError).  The
# paper's default height ln(N) / d stays below 2^21 nodes for N up to 10^9.
MAX_NODES = 2**22
# A cell must span this many float64 steps of its bounds (and be a normal double) for
# every cell's float centre to fall back into its own cell (see resolvable_height).
CELL_STEPS = 16


@dataclass(frozen=True)
class Leaves:
    """The leaves: level, Z-order code at that level, box (low, high per dimension)
    and noisy count.  A leaf's noise is keyed by its (level, code), never by a code
    recomputed from its float box (which cells too narrow for the floats would share)."""

    level: np.ndarray  # (m,) int64
    code: np.ndarray  # (m,) int64, the cell's Z-order code at its level
    low: np.ndarray  # (m, d)
    high: np.ndarray  # (m, d)
    count: np.ndarray  # (m,) int64, noisy

    @property
    def centre(self) -> np.ndarray:
        return (self.low + self.high) / 2


def morton_codes(points: np.ndarray, lows: np.ndarray, highs: np.ndarray, level: int) -> np.ndarray:
    """Z-order code of each point's cell at ``level`` (2^level cells per axis, values
    outside the bounds clipped into the edge cells).

    The bits of the axes' cell indices interleave, most significant first, so the code at
    a coarser level is this code shifted right by d bits per level: one sort of the
    finest codes sorts every level.
    """
    d = points.shape[1]
    side = 1 << level
    # Clipped into the box first: (x - low) / width then lies in [0, 1], so neither a far
    # outlier nor a tiny width overflows.
    share = (np.clip(points, lows, highs) - lows) / (highs - lows)
    # Clipped as integers: side - 1 is not a float64 past 2^53 (d = 1, level > 53).
    index = np.minimum(np.floor(share * side).astype(np.int64), side - 1)
    code = np.zeros(len(points), dtype=np.int64)
    for bit in range(level - 1, -1, -1):
        for axis in range(d):
            code = (code << 1) | ((index[:, axis] >> bit) & 1)
    return code


def resolvable_height(lows: np.ndarray, highs: np.ndarray) -> int:
    """The greatest height (at most :data:`CODE_BITS`) whose cells float64 tells apart on
    every axis: a cell at least :data:`CELL_STEPS` float steps of its bounds wide and a
    normal double.  Then each cell's float box and centre lie in that cell alone, and the
    centre's recomputed Z-order code is the cell's own (the rounding of the box, the
    centre and the code's division stays below half a cell).  Bounds narrower than that
    (a subnormal width, or 2^height cells finer than the floats near the bounds) give
    distinct cells one float centre.  Height 0 (one cell) is always told apart.

    Examples
    --------
    >>> resolvable_height(np.zeros(2), np.ones(2))  # 2^-48 >= 16 x 2^-52
    48
    >>> resolvable_height(np.array([0.0, 0.0]), np.array([1e-323, 1.0]))
    0
    """
    height = CODE_BITS
    for low, high in zip(
        np.asarray(lows, dtype=np.float64).tolist(), np.asarray(highs, dtype=np.float64).tolist(), strict=True
    ):
        width = high - low
        step = float(np.spacing(max(abs(low), abs(high))))
        finest = max(CELL_STEPS * step, 2.0**-1022)
        levels = 0
        while levels < height and math.ldexp(width, -(levels + 1)) >= finest:
            levels += 1
        height = levels
    return height


def cell_index(codes: np.ndarray, level: int, d: int) -> np.ndarray:
    """Per-axis cell indices of Z-order codes (the inverse of :func:`morton_codes`)."""
    index = np.zeros((len(codes), d), dtype=np.int64)
    for bit in range(level):
        for axis in range(d):
            shift = bit * d + (d - 1 - axis)
            index[:, axis] |= ((codes >> shift) & 1) << bit
    return index


def count_codes(sorted_codes: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """How many of the (sorted) point codes equal each node code."""
    return np.searchsorted(sorted_codes, nodes, side="right") - np.searchsorted(
        sorted_codes, nodes, side="left"
    )


def point_counts(points: np.ndarray, lows: np.ndarray, highs: np.ndarray, height: int) -> CellCounts:
    """The :data:`CellCounts` of ``points`` for nodes at levels up to ``height``: the
    codes at ``height`` sorted once; a coarser level's codes are shifts of them."""
    d = points.shape[1]
    finest = np.sort(morton_codes(points, lows, highs, height))

    def count(level: int, nodes: np.ndarray) -> np.ndarray:
        return count_codes(finest >> (d * (height - level)), nodes)

    return count


def build_quadtree(
    points: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    *,
    max_height: int,
    threshold: float,
    level_scale: float,
    leaf_scale: float,
    secret: bytes,
    label: str,
    split_levels: int = 0,
    func: str = "build_quadtree",
) -> Leaves:
    """:func:`grow_quadtree` over the (n, d) ``points`` in memory.

    Examples
    --------
    >>> pts = np.random.default_rng(0).random((5000, 2))
    >>> leaves = build_quadtree(pts, np.zeros(2), np.ones(2), max_height=3, threshold=100,
    ...                         level_scale=1.0, leaf_scale=1.0, secret=bytes(16), label="demo")
    >>> int(leaves.level.max()), bool(abs(int(leaves.count.sum()) - 5000) < 300)
    (3, True)
    >>> float(np.prod(leaves.high - leaves.low, axis=1).sum())  # the leaves tile the box
    1.0
    """
    d = points.shape[1]
    _check_height(max_height, d)
    return grow_quadtree(
        point_counts(points, lows, highs, max_height),
        lows,
        highs,
        max_height=max_height,
        threshold=threshold,
        level_scale=level_scale,
        leaf_scale=leaf_scale,
        secret=secret,
        label=label,
        split_levels=split_levels,
        func=func,
    )


def _check_height(max_height: int, d: int) -> None:
    if max_height * d > CODE_BITS:
        msg = f"build_quadtree: max_height * dimensions must be <= {CODE_BITS} (Z-order codes in int64). Got {max_height} * {d}."
        raise ValueError(msg)


def grow_quadtree(
    count: CellCounts,
    lows: np.ndarray,
    highs: np.ndarray,
    *,
    max_height: int,
    threshold: float,
    level_scale: float,
    leaf_scale: float,
    secret: bytes,
    label: str,
    split_levels: int = 0,
    func: str = "build_quadtree",
) -> Leaves:
    """Grow the tree level by level from the true counts ``count(level, nodes)`` (one
    call per level: the nodes it examines; the leaves' fresh noise reuses those counts,
    plus one call for the leaves at ``max_height``).  ``level_scale`` / ``leaf_scale``
    are the noise scales (sensitivity / epsilon) of the split counts and of the leaf
    counts, the noise keyed by the node's code (so it depends on nothing but the node).
    The first ``split_levels`` levels split whatever their counts (a rule that reads no
    data: k-means on the leaves needs at least k of them).  A level of more than
    :data:`MAX_NODES` nodes is refused (an :class:`InvalidParameterError` naming
    ``func``'s max_height and threshold) before it is counted.
    """
    d = len(lows)
    _check_height(max_height, d)
    children = np.arange(1 << d, dtype=np.int64)
    frontier = np.zeros(1, dtype=np.int64)  # codes of the nodes examined at this level
    leaf_levels: list[np.ndarray] = []
    leaf_codes: list[np.ndarray] = []
    leaf_true: list[np.ndarray] = []
    for level in range(max_height + 1):
        if level == max_height:
            leaf_levels.append(np.full(len(frontier), level))
            leaf_codes.append(frontier)
            leaf_true.append(np.asarray(count(level, frontier), dtype=np.int64))
            break
        true = np.asarray(count(level, frontier), dtype=np.int64)
        noisy = true + discrete_laplace(
            secret, stream_id(f"{label}/level{level}"), frontier.astype(np.uint64), level_scale
        )
        is_leaf = (noisy <= threshold) & (level >= split_levels)
        leaf_levels.append(np.full(int(is_leaf.sum()), level))
        leaf_codes.append(frontier[is_leaf])
        leaf_true.append(true[is_leaf])
        splits = len(frontier) - int(is_leaf.sum())
        if splits << d > MAX_NODES:
            msg = (
                f"{func}: the tree would examine {splits << d:,} nodes at level {level + 1}, more than "
                f"{MAX_NODES:,} (2^{MAX_NODES.bit_length() - 1}): the noisy counts of {splits:,} nodes passed the "
                f"threshold {threshold:g}.  Lower the 'max_height' parameter (the tree has {max_height} levels) "
                "or raise the 'threshold' parameter (or epsilon: less noise splits fewer empty nodes).  "
                "The budget of this call is spent."
            )
            raise InvalidParameterError(msg)
        frontier = ((frontier[~is_leaf] << d)[:, None] | children[None, :]).ravel()
        if len(frontier) == 0:  # every node a leaf
            break
    levels, codes, trues = np.concatenate(leaf_levels), np.concatenate(leaf_codes), np.concatenate(leaf_true)
    counts = np.empty(len(codes), dtype=np.int64)
    low, high = np.empty((len(codes), d)), np.empty((len(codes), d))
    for level in np.unique(levels).tolist():
        at = levels == level
        nodes = codes[at]
        counts[at] = trues[at] + discrete_laplace(
            secret, stream_id(f"{label}/leaves/level{level}"), nodes.astype(np.uint64), leaf_scale
        )
        side = 1 << level
        index = cell_index(nodes, level, d)
        width = (highs - lows) / side
        low[at] = lows + index * width
        high[at] = np.where(index == side - 1, highs, lows + (index + 1) * width)
    return Leaves(levels.astype(np.int64), codes.astype(np.int64), low, high, counts)


def leaf_centroids(
    points: np.ndarray,
    leaves: Leaves,
    lows: np.ndarray,
    highs: np.ndarray,
    epsilon: float,
    contributions: int,
    secret: bytes,
    label: str,
) -> np.ndarray:
    """Noisy centroids of the leaves: ``centre + noisy sum of (point - centre) / noisy count``,
    clipped into the leaf.

    A point moves its leaf's sum vector by at most the leaf's half-widths (L1: their sum),
    and a privacy unit's ``contributions`` points by at most ``contributions`` times that,
    so each leaf's sums get noise of scale ``contributions x sum(half-widths) / epsilon``:
    epsilon-DP over disjoint leaves.  The offsets are rounded to a power-of-two grid per
    level and summed as integers; the noise is exact two-sided geometric in grid units
    (the bound widened by the rounding), so the noisy sums are whole grid steps
    (Mironov 2012).  The noise is keyed by the leaf (its level and its own Z-order code,
    ``leaves.code``: distinct for distinct leaves, whatever the floats tell apart) and the
    axis.  Points outside the bounds count in the edge leaves.
    """
    d = points.shape[1]
    centres = leaves.centre
    noisy = np.empty_like(centres)
    scale = np.zeros(len(centres))
    clipped = np.clip(points, lows, highs)
    half = (leaves.high - leaves.low) / 2
    for level in np.unique(leaves.level):
        at = np.flatnonzero(leaves.level == level)
        codes = leaves.code[at]  # the leaf's own cell: a level's codes are distinct
        keys = codes.astype(np.uint64)
        order = np.argsort(codes)
        sorted_codes = codes[order]
        point_codes = morton_codes(clipped, lows, highs, int(level))
        position = np.minimum(np.searchsorted(sorted_codes, point_codes), len(sorted_codes) - 1)
        hit = sorted_codes[position] == point_codes
        leaf = at[order[position[hit]]]
        # One grid per level, from its widest leaf (float widths differ in the last bits).
        level_half = half[at].max(axis=0)
        grid = grid_of(float(level_half.max()), "leaf_centroids")
        inside = to_grid(np.clip(clipped[hit], leaves.low[leaf], leaves.high[leaf]) - centres[leaf], grid)
        # A row's offset lies between its leaf's float extremes minus the centre (monotone
        # rounding): the widest over the level's leaves bounds it exactly.
        reach = np.maximum(
            np.abs(to_grid(leaves.low[at] - centres[at], grid)),
            np.abs(to_grid(leaves.high[at] - centres[at], grid)),
        ).max(axis=0)
        level_scale = contributions * float(reach.sum()) / epsilon  # grid units
        scale[at] = level_scale * grid
        for axis in range(d):
            units = np.bincount(leaf, weights=inside[:, axis], minlength=len(centres))[at]
            noise = discrete_laplace(
                secret, stream_id(f"{label}/centroid/{int(level)}/{axis}"), keys, level_scale
            )
            noisy[at, axis] = (units + noise) * grid
    count = np.maximum(leaves.count, 1)[:, None].astype(np.float64)
    # Post-processing: shrink each noisy offset towards the leaf's centre by the ratio of
    # the offset's spread a priori (a point uniform in the leaf: width^2 / 12 per axis)
    # to that plus the noise's (2 scale^2 / count^2): a sparse leaf keeps nearly its
    # centre, a dense one its centroid.
    prior = (2 * half) ** 2 / 12
    noise = 2 * (scale[:, None] / count) ** 2
    moved = centres + prior / (prior + noise) * noisy / count
    return np.clip(moved, leaves.low, leaves.high)
