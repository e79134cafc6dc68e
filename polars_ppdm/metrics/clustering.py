"""Clustering quality: NICV, the F-measure against labels, RCP (paper 004; paper 002).

References
----------
Zhang, Cheng, DPQT k-means (paper 004): NICV and RCP.  Huang et al., LSDP (paper 002)
and paper 004: the F-measure of a clustering against reference classes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from polars_ppdm._validation import check_real, described, is_count
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.weighted_kmeans import nearest

__all__ = ["assign", "f_measure", "nicv", "rcp"]


def _matrix(value: Any, name: str, func: str) -> np.ndarray:
    """A non-empty 2-D array of finite real numbers (rows: points, columns: coordinates)."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):  # ragged nested lists
        array = np.full((0, 0), np.nan)
    if array.dtype.kind not in "biuf" or array.ndim != 2 or 0 in array.shape or not np.isfinite(array).all():
        msg = (
            f"The {name!r} parameter of {func} must be a non-empty 2-D array of finite real numbers "
            f"(one row a point, one column a coordinate). Got {described(value)} instead."
        )
        raise InvalidParameterError(msg)
    return array.astype(np.float64)


def _points_and_centres(points: Any, centres: Any, func: str) -> tuple[np.ndarray, np.ndarray]:
    xs, cs = _matrix(points, "points", func), _matrix(centres, "centres", func)
    if xs.shape[1] != cs.shape[1]:
        msg = (
            f"{func} needs points and centres of the same width. "
            f"Got {xs.shape[1]} coordinates for the points and {cs.shape[1]} for the centres."
        )
        raise InvalidParameterError(msg)
    # Squared distances are sums of d squares of coordinate differences: past this size
    # they overflow a float (and every point would tie at infinity).
    reach = math.sqrt(np.finfo(np.float64).max / (4 * xs.shape[1]))
    if max(np.abs(xs).max(), np.abs(cs).max()) > reach:
        msg = (
            f"The coordinates of {func}'s points and centres must be at most {reach:.3g} in magnitude "
            "(their squared distances overflow a float beyond)."
        )
        raise InvalidParameterError(msg)
    return xs, cs


def _labels(value: Any, name: str, func: str) -> np.ndarray:
    """A non-empty 1-D array of labels: integers, strings or finite floats."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.full((0, 0), np.nan)
    if array.dtype.kind == "O" and array.ndim == 1:
        items = list(array)
        if all(isinstance(v, str) for v in items) or all(is_count(v) for v in items):
            array = np.array(items if items and isinstance(items[0], str) else [int(v) for v in items])
    ok = array.ndim == 1 and len(array) > 0 and array.dtype.kind in "biufUS"
    if ok and array.dtype.kind == "f":
        ok = bool(np.isfinite(array).all())
    if not ok:
        msg = (
            f"The {name!r} parameter of {func} must be a non-empty 1-D array of labels "
            f"(integers, strings or finite floats; no nulls). Got {described(value)} instead."
        )
        raise InvalidParameterError(msg)
    return array


def assign(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Index of each point's nearest centre.

    Examples
    --------
    >>> assign(np.array([[0.0, 0], [2, 0]]), np.array([[0.0, 0], [3, 0]])).tolist()
    [0, 1]
    """
    return nearest(*_points_and_centres(points, centres, "assign"))[0]


def nicv(points: np.ndarray, centres: np.ndarray) -> float:
    """Normalised intra-cluster variance: mean squared distance of each point to its
    nearest centre, ``(1/N) sum_x min_c ||x - c||^2``.

    Examples
    --------
    >>> nicv(np.array([[0.0, 0], [2, 0]]), np.array([[1.0, 0]]))
    1.0
    """
    _, distance = nearest(*_points_and_centres(points, centres, "nicv"))
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
    reference = _labels(reference, "reference", "f_measure")
    clusters = _labels(clusters, "clusters", "f_measure")
    if len(reference) != len(clusters):
        msg = (
            "f_measure needs reference and clusters of the same length (one label each per point); "
            "the two given differ."
        )
        raise InvalidParameterError(msg)
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
    (paper 004 uses EUG k-means as the baseline; positive = better than it).

    Examples
    --------
    >>> rcp(0.5, 2.0)
    0.75
    """
    method = check_real("nicv_method", nicv_method, "rcp", low=0)
    baseline = check_real("nicv_baseline", nicv_baseline, "rcp", low=0, open_low=True)
    return (baseline - method) / baseline
