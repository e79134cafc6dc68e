"""The DP k-means baselines of paper 004: DPLloyd and EUG's grid buckets (pure NumPy).

References
----------
Blum, Dwork, McSherry, Nissim, "Practical privacy: the SuLQ framework", PODS 2005.
Su, Cao, Li, Bertino, Lin, Wang, "Differentially private k-means clustering and a hybrid
approach", VLDB Journal 2017.  Zhang, Cheng, DPQT k-means (paper 004).
"""

from __future__ import annotations

import math

import numpy as np

from polars_ppdm.kernels.dp_noise import discrete_laplace, grid_of, to_grid
from polars_ppdm.kernels.prf import stream_id, uniform
from polars_ppdm.kernels.quadtree import CellCounts, cell_index, point_counts
from polars_ppdm.kernels.weighted_kmeans import nearest

__all__ = ["MAX_GRID_BITS", "dp_lloyd", "grid_buckets", "grid_counts", "grid_level", "lloyd_count_scale"]

# The grid has at most 2^20 cells: the weighted k-means then fits every one of them (10
# restarts of up to 100 iterations: ~30 s at 2^20 buckets, minutes at 2^22).  Su et al.'s
# m passes it only for N epsilon > 10^7 in 2-D; n = 1e30 asked for 2^62 cells.
MAX_GRID_BITS = 20


def grid_level(n: float, epsilon: float, k: int, d: int) -> int:
    """EUG's grid level: ``m = (N epsilon / 10)^(2 / (2 + d))`` cells per axis (Su et
    al.), rounded up to a power of two 2^level (the quadtree's Z-order cells) and to at
    least k cells in all; at most ``2^MAX_GRID_BITS`` cells in all."""
    wanted = min((n * epsilon / 10) ** (2 / (2 + d)), 2.0**MAX_GRID_BITS)  # inf for a huge n epsilon
    side = max(1, math.ceil(wanted), math.ceil(k ** (1 / d)))
    level = max(0, math.ceil(math.log2(side)))  # a power of two: the quadtree's cell codes
    return min(level, MAX_GRID_BITS // d)


def grid_counts(
    count: CellCounts,
    level: int,
    lows: np.ndarray,
    highs: np.ndarray,
    epsilon: float,
    contributions: int,
    secret: bytes,
    label: str,
) -> tuple[np.ndarray, np.ndarray]:
    """EUG's buckets from the true counts ``count(level, cells)`` of every cell of the
    grid at ``level``: the cell centres and their noisy counts (noise keyed by cell)."""
    d = len(lows)
    cells = np.arange(1 << (d * level), dtype=np.int64)
    counts = np.asarray(count(level, cells), dtype=np.int64) + discrete_laplace(
        secret, stream_id(label + "/grid"), cells.astype(np.uint64), contributions / epsilon
    )
    width = (highs - lows) / (1 << level)
    return lows + (cell_index(cells, level, d) + 0.5) * width, counts


def grid_buckets(
    points: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    k: int,
    epsilon: float,
    contributions: int,
    n: float,
    secret: bytes,
    label: str,
) -> tuple[np.ndarray, np.ndarray]:
    """EUG's buckets of the (n, d) ``points`` in memory: cell centres of the uniform
    grid of :func:`grid_level` and their noisy counts (:func:`grid_counts`)."""
    level = grid_level(n, epsilon, k, points.shape[1])
    count = point_counts(points, lows, highs, level)
    return grid_counts(count, level, lows, highs, epsilon, contributions, secret, label)


def lloyd_count_scale(contributions: int, epsilon: float, t: int) -> float:
    """Noise scale of DPLloyd's counts in iteration t: half of ``epsilon / 2^t``."""
    share = epsilon * 2.0**-t / 2
    return contributions / share if share > 0 else math.inf  # a share below the floats: no bound


def dp_lloyd(
    points: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    k: int,
    epsilon: float,
    contributions: int,
    iterations: int,
    secret: bytes,
    label: str,
    start: bytes | None = None,
) -> np.ndarray:
    """DPLloyd (Blum et al.): Lloyd iterations releasing noisy counts and sums per
    cluster, iteration t spending epsilon / 2^t (half on counts, half on sums); the
    centres start uniform inside the bounds, drawn under ``start`` (default ``secret``):
    they read no data, so they need not change with what keys the noise."""
    d = points.shape[1]
    middle, half = (lows + highs) / 2, (highs - lows) / 2
    u = uniform(start or secret, stream_id(label + "/init"), np.arange(k * d, dtype=np.uint64)).reshape(k, d)
    centres = lows + u * (highs - lows)
    # Sums on a power-of-two grid (the centred coordinates rounded to it, summed as
    # integers, integer noise): the released sums are whole grid steps (Mironov 2012).
    grid = grid_of(float(half.max()), "dp_kmeans")
    units = to_grid(np.clip(points, lows, highs) - middle, grid)
    # A row's units lie between those of the float extremes (subtraction and rounding are
    # monotone): that, not round(half / grid), bounds it when middle is itself rounded.
    reach = np.maximum(np.abs(to_grid(lows - middle, grid)), np.abs(to_grid(highs - middle, grid)))
    sum_sensitivity = contributions * float(reach.sum())  # L1 over the d coordinates, in units
    for t in range(1, iterations + 1):
        eps_t = epsilon / 2**t
        index, _ = nearest(points, centres)
        keys = np.arange(k, dtype=np.uint64)
        counts = np.bincount(index, minlength=k) + discrete_laplace(
            secret, stream_id(f"{label}/count{t}"), keys, lloyd_count_scale(contributions, epsilon, t)
        )
        true_units = np.stack(
            [np.bincount(index, weights=units[:, a], minlength=k) for a in range(d)], axis=1
        )
        noise_units = discrete_laplace(
            secret,
            stream_id(f"{label}/sum{t}"),
            np.arange(k * d, dtype=np.uint64),
            sum_sensitivity / (eps_t / 2),
        ).reshape(k, d)
        sums = (true_units + noise_units) * grid  # whole grid steps
        moved = counts > 0
        centres[moved] = np.clip(middle + sums[moved] / counts[moved, None], lows, highs)
    return centres
