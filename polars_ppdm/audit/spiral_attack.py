"""The known input/output attack on the log-spiral perturbation (paper 002).

However many rounds, the perturbation is one affine map ``y = A x + b``: n^2 + n
unknowns, which n + 1 known (original, released) pairs in general position determine.
The attacker solves for them by least squares and inverts the map for every other row.

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


def known_io_attack(original_rows: Rows, released_rows: Rows) -> KnownIOAttack:
    """Solve for the perturbation from known pairs (at least n + 1 rows of n columns).

    Examples
    --------
    >>> import polars_ppdm as ppdm
    >>> from polars_ppdm.perturb.spiral import spiral_key
    >>> key = spiral_key(["a", "b", "c"], bounds={c: (0, 1) for c in "abc"}, rounds=10, secret=7)
    >>> x = np.random.default_rng(0).random((100, 3))
    >>> attack = known_io_attack(x[:4], key.apply(x[:4]))   # 4 = n + 1 known pairs
    >>> bool(np.abs(attack.reconstruct(key.apply(x[4:])) - x[4:]).max() < 1e-8)
    True
    """
    x, y = _rows(original_rows, "original_rows"), _rows(released_rows, "released_rows")
    if x.shape != y.shape:
        msg = f"known_io_attack: original_rows and released_rows must have the same shape. Got {x.shape} and {y.shape}."
        raise InvalidParameterError(msg)
    n = x.shape[1]
    if x.shape[0] < n + 1:
        msg = f"known_io_attack needs at least n + 1 = {n + 1} known pairs for {n} columns. Got {x.shape[0]}."
        raise InvalidParameterError(msg)
    design = np.hstack([x, np.ones((len(x), 1))])
    solution, _, rank, _ = np.linalg.lstsq(design, y, rcond=None)
    if rank < n + 1:
        # Known rows on one hyperplane leave the map undetermined off it.
        msg = (
            f"known_io_attack: the {x.shape[0]} known original rows span only {rank - 1} of {n} "
            "dimensions (they lie on one hyperplane), so they do not determine the map; "
            "the attack needs n + 1 rows in general position."
        )
        raise InvalidParameterError(msg)
    return KnownIOAttack(solution[:n], solution[n])
