"""Weighted k-means on a few weighted points (noisy buckets): pure NumPy.

Post-processing of a differentially private release costs no privacy, so this runs on
the noisy bucket centres and weights only, never on raw data; the k-means++ seeding
draws from the keyed PRF.
"""

from __future__ import annotations

import numpy as np

from polars_ppdm.kernels.prf import stream_id, uniform

__all__ = ["nearest", "weighted_kmeans"]


def nearest(points: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of, and squared distance to, each point's nearest centre (chunked)."""
    index = np.empty(len(points), dtype=np.int64)
    distance = np.empty(len(points))
    centre_norms = (centres**2).sum(axis=1)
    for start in range(0, len(points), 65536):
        block = points[start : start + 65536]
        d2 = (block**2).sum(axis=1)[:, None] - 2 * block @ centres.T + centre_norms[None, :]
        index[start : start + len(block)] = d2.argmin(axis=1)
        distance[start : start + len(block)] = np.maximum(d2.min(axis=1), 0.0)
    return index, distance


def _seed_centres(points, weights, k, secret, label, restart, trials):
    """k-means++ over weighted points (Arthur and Vassilvitskii 2007), its draws from the
    keyed PRF; with ``trials`` > 1 the greedy choice of scikit-learn: at each step that many
    candidates drawn by D^2 sampling, the one that lowers the weighted potential most kept
    (``trials`` 1 is plain k-means++)."""
    u = uniform(
        secret,
        stream_id(f"{label}/init"),
        np.arange(restart * k * trials, (restart + 1) * k * trials, dtype=np.uint64),
    ).reshape(k, trials)
    first = (
        np.searchsorted(np.cumsum(weights), u[0, 0] * weights.sum(), side="right") if weights.sum() > 0 else 0
    )
    chosen = [int(min(first, len(points) - 1))]
    distance = ((points - points[chosen[0]]) ** 2).sum(axis=1)
    for i in range(1, k):
        mass = weights * distance
        if mass.sum() <= 0:  # fewer weighted points than k: the farthest of the others
            chosen.append(int(np.argmax(np.where(np.isin(np.arange(len(points)), chosen), -1.0, distance))))
            distance = np.minimum(distance, ((points - points[chosen[-1]]) ** 2).sum(axis=1))
            continue
        candidates = np.minimum(
            np.searchsorted(np.cumsum(mass), u[i] * mass.sum(), side="right"), len(points) - 1
        )
        # The potential after adding each candidate; the lowest wins (the first on a tie).
        after = np.minimum(
            distance[None, :], ((points[None, :, :] - points[candidates][:, None, :]) ** 2).sum(axis=2)
        )
        best = int(np.argmin((after * weights[None, :]).sum(axis=1)))
        chosen.append(int(candidates[best]))
        distance = after[best]
    return points[np.minimum(chosen, len(points) - 1)].copy()


def weighted_kmeans(
    points: np.ndarray,
    weights: np.ndarray,
    k: int,
    *,
    secret: bytes,
    label: str,
    restarts: int = 10,
    iterations: int = 100,
    greedy: bool = False,
) -> np.ndarray:
    """Lloyd's algorithm on weighted points, best of ``restarts`` k-means++ seedings
    (lowest weighted inertia).  Weights must be >= 0 and there must be at least k
    points; with fewer than k positive weights, the remaining centres start at the
    farthest zero-weight points and stay there.

    Examples
    --------
    >>> pts = np.array([[0.0, 0], [0, 1], [10, 10], [10, 11]])
    >>> c = weighted_kmeans(pts, np.array([1.0, 1, 1, 3]), 2, secret=bytes(16), label="demo")
    >>> sorted(map(tuple, c.round(2).tolist()))
    [(0.0, 0.5), (10.0, 10.75)]
    """
    if restarts < 1:
        msg = f"weighted_kmeans needs restarts >= 1. Got {restarts!r} instead."
        raise ValueError(msg)
    best: np.ndarray | None = None
    best_inertia = np.inf
    for restart in range(restarts):
        centres = _seed_centres(
            points, weights, k, secret, label, restart, 2 + int(np.log(k)) if greedy else 1
        )
        for _ in range(iterations):
            index, _ = nearest(points, centres)
            mass = np.bincount(index, weights=weights, minlength=k)
            sums = np.stack(
                [
                    np.bincount(index, weights=weights * points[:, a], minlength=k)
                    for a in range(points.shape[1])
                ],
                axis=1,
            )
            moved = centres.copy()
            filled = mass > 0
            moved[filled] = sums[filled] / mass[filled, None]
            if np.allclose(moved, centres, rtol=0, atol=1e-12 * (1 + np.abs(centres).max())):
                break
            centres = moved
        _, distance = nearest(points, centres)
        inertia = float((weights * distance).sum())
        # The first restart always counts: a NaN inertia never compares below inf.
        if best is None or inertia < best_inertia:
            best, best_inertia = centres, inertia
    assert best is not None  # restarts >= 1
    return best
