"""Clustering quality: NICV, the F-measure against labels, RCP (paper 004; paper 002).

References
----------
Zhang, Cheng, DPQT k-means (paper 004): NICV and RCP.  Huang et al., LSDP (paper 002)
and paper 004: the F-measure of a clustering against reference classes.
"""

from __future__ import annotations

import numpy as np

from polars_ppdm.kernels.weighted_kmeans import nearest

__all__ = ["assign", "f_measure", "nicv", "rcp"]


def assign(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of each point's nearest centre."""
    return nearest(np.asarray(points, dtype=np.float64), np.asarray(centres, dtype=np.float64))[0]


def nicv(points: np.ndarray, centres: np.ndarray) -> float:
    """Normalised intra-cluster variance: mean squared distance of each point to its
    nearest centre, ``(1/N) sum_x min_c ||x - c||^2``.

    Examples
    --------
    >>> nicv(np.array([[0.0, 0], [2, 0]]), np.array([[1.0, 0]]))
    1.0
    """
    _, distance = nearest(np.asarray(points, dtype=np.float64), np.asarray(centres, dtype=np.float64))
    return float(distance.mean())


def f_measure(reference: np.ndarray, clusters: np.ndarray) -> float:
    """F-measure of a clustering against reference classes.

    For class i and cluster j with ``n_ij`` shared points, precision ``n_ij / n_j``,
    recall ``n_ij / n_i`` and ``F(i, j) = 2PR / (P + R)``; the overall F-measure is
    ``sum_i (n_i / N) max_j F(i, j)``: 1 when the clustering reproduces the classes.

    Examples
    --------
    >>> f_measure(np.array([0, 0, 1, 1]), np.array([5, 5, 7, 7]))
    1.0
    >>> round(f_measure(np.array([0, 0, 1, 1]), np.array([5, 5, 5, 7])), 4)
    0.7333
    """
    reference, clusters = np.asarray(reference), np.asarray(clusters)
    _, ref = np.unique(reference, return_inverse=True)
    _, clu = np.unique(clusters, return_inverse=True)
    table = np.zeros((ref.max() + 1, clu.max() + 1))
    np.add.at(table, (ref, clu), 1)
    n_i, n_j = table.sum(axis=1, keepdims=True), table.sum(axis=0, keepdims=True)
    precision, recall = table / n_j, table / n_i
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(table > 0, 2 * precision * recall / (precision + recall), 0.0)
    return float((n_i[:, 0] / len(reference) * f.max(axis=1)).sum())


def rcp(nicv_method: float, nicv_baseline: float) -> float:
    """Relative change in performance: ``(NICV_baseline - NICV_method) / NICV_baseline``
    (paper 004 uses EUG k-means as the baseline; positive = better than it)."""
    return (nicv_baseline - nicv_method) / nicv_baseline
