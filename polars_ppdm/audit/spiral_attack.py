"""The known input/output attack on the log-spiral perturbation (paper 002).

However many rounds, the perturbation is one similarity ``y = s Q x + b`` (Q a rotation,
s > 0): n(n - 1)/2 + n + 1 unknowns for n columns, which n known (original, released)
pairs in general position determine. Their n - 1 differences fix Q on the hyperplane they
span and s; Q's determinant (+1) fixes its last axis; any pair then gives b. The attacker
solves for them (orthogonal Procrustes, Kabsch's sign correction) and inverts the map for
every other row. With n + 1 pairs or more that span every dimension, any affine map
``y = A x + b`` is solved by least squares instead.

References
----------
Huang et al., LSDP (paper 002); Liu, Giannella, Kargupta, "An attacker's view of
distance preserving maps for privacy preserving data mining", PKDD 2006.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["KnownIOAttack", "known_io_attack"]

# Rows of numbers: a DataFrame, a 2-D array, or a sequence of rows.
Rows = pl.DataFrame | np.ndarray | Sequence[Sequence[float]]


@dataclass(frozen=True)
class KnownIOAttack:
    """The fitted map ``y = x @ matrix + offset`` and its inverse."""

    matrix: np.ndarray
    offset: np.ndarray

    def reconstruct(self, released: Rows) -> np.ndarray:
        """The original rows behind released ones (rows x columns)."""
        y = _rows(released, "released")
        return np.linalg.solve(self.matrix.T, (y - self.offset).T).T


def _rows(data: Rows, name: str) -> np.ndarray:
    if isinstance(data, pl.DataFrame):
        data = data.to_numpy()
    try:
        out = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        msg = f"known_io_attack: {name} must hold numbers. Got {type(data).__name__} with non-numeric values."
        raise InvalidParameterError(msg) from None
    if out.ndim != 2:
        msg = f"known_io_attack: {name} must be a 2-D array or DataFrame of rows. Got shape {out.shape}."
        raise InvalidParameterError(msg)
    if not np.isfinite(out).all():
        msg = f"known_io_attack: {name} hold null, NaN or infinite values; every known pair must be complete."
        raise InvalidParameterError(msg)
    return out


def spanned_dimensions(rows: np.ndarray) -> int:
    """How many dimensions the differences of ``rows`` from the first span (the affine
    hull's dimension), with a tolerance relative to the rows' magnitude."""
    if len(rows) < 2:
        return 0
    tolerance = 1e-9 * max(1.0, float(np.abs(rows).max()))
    return int(np.linalg.matrix_rank(rows[1:] - rows[0], tol=tolerance))


def known_io_attack(original_rows: Rows, released_rows: Rows) -> KnownIOAttack:
    """Solve for the perturbation from known pairs: n rows of n >= 2 columns in general
    position undo the spiral (two rows for one column).

    With n pairs, the map is solved as the spiral's similarity ``y = s Q x + b``; with n + 1
    pairs or more that span every dimension, as any affine map (least squares).

    Examples
    --------
    >>> import polars_ppdm as ppdm
    >>> from polars_ppdm.perturb.spiral import spiral_key
    >>> key = spiral_key(["a", "b", "c"], bounds={c: (0, 1) for c in "abc"}, rounds=10, secret=7)
    >>> x = np.random.default_rng(0).random((100, 3))
    >>> attack = known_io_attack(x[:3], key.apply(x[:3]))   # 3 = n known pairs
    >>> bool(np.abs(attack.reconstruct(key.apply(x[3:])) - x[3:]).max() < 1e-8)
    True
    """
    x, y = _rows(original_rows, "original_rows"), _rows(released_rows, "released_rows")
    if x.shape != y.shape:
        msg = f"known_io_attack: original_rows and released_rows must have the same shape. Got {x.shape} and {y.shape}."
        raise InvalidParameterError(msg)
    n = x.shape[1]
    need = max(n, 2)
    if x.shape[0] < need:
        msg = f"known_io_attack needs at least {need} known pairs for {n} column(s). Got {x.shape[0]}."
        raise InvalidParameterError(msg)
    span = spanned_dimensions(x)
    if span == n:
        design = np.hstack([x, np.ones((len(x), 1))])
        solution = np.linalg.lstsq(design, y, rcond=None)[0]
        return KnownIOAttack(solution[:n], solution[n])
    if span == n - 1 and n >= 2:
        return _similarity(x, y)
    # Known rows on a lower-dimensional subspace leave the rotation free off it.
    msg = (
        f"known_io_attack: the {x.shape[0]} known original rows span only {span} of {n} "
        f"dimensions, so they do not determine the map; the attack needs {need} rows in "
        "general position (their differences spanning at least n - 1 dimensions)."
    )
    raise InvalidParameterError(msg)


def _similarity(x: np.ndarray, y: np.ndarray) -> KnownIOAttack:
    """``y = x @ (s R) + b`` with R a rotation (determinant +1) and s > 0, fitted by
    orthogonal Procrustes: R from the SVD of the centred cross-covariance, its last axis
    signed so that det R = +1 (the rows span only n - 1 dimensions: the reflection would
    fit them as well)."""
    x_mean, y_mean = x.mean(axis=0), y.mean(axis=0)
    xc, yc = x - x_mean, y - y_mean
    u, singular, vt = np.linalg.svd(xc.T @ yc)
    signs = np.ones(len(singular))
    signs[-1] = np.sign(np.linalg.det(u @ vt)) or 1.0
    rotation = (u * signs) @ vt
    scale = float((singular * signs).sum() / (xc**2).sum())
    matrix = scale * rotation
    return KnownIOAttack(matrix, y_mean - x_mean @ matrix)
