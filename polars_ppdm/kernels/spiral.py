"""Log-spiral perturbation (LSDP, paper 002): rounds of block rotations and scalings
composed into one similarity transform (pure NumPy).

One round splits the n coordinates at random into disjoint groups of 2 and 3
(n = 2i + 3j); each group gets a random centre O inside the public bounds, a random angle
dtheta and, in 3-D, a random axis; all groups share the round's scale k.  A point moves
along the log spiral: ``A' = O + k R(dtheta) (A - O)``.  Every round is affine, so the t
rounds compose into ``x -> A x + b`` with ``A = s Q`` (Q orthogonal, s the product of the
k's): one matrix product applies them all, and every pairwise distance is multiplied by
s (the paper's theorem).

References
----------
Huang et al., "LSDP: logarithmic-spiral data perturbation for privacy-preserving
clustering", Chinese Journal of Computers, 2012 (paper 002).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from polars_ppdm.kernels.prf import stream_id, uniform

__all__ = ["Round", "affine", "compose", "draw_rounds", "rotation_2d", "rotation_3d"]


@dataclass(frozen=True)
class Round:
    """One round: groups of coordinate indices, their centres, angles, 3-D axes, and k."""

    groups: list[list[int]]
    centres: list[list[float]]
    angles: list[float]
    axes: list[list[float] | None]
    k: float


def rotation_2d(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def rotation_3d(axis: np.ndarray, theta: float) -> np.ndarray:
    """Rodrigues' rotation by ``theta`` about the unit vector ``axis``."""
    x, y, z = axis
    cross = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + math.sin(theta) * cross + (1 - math.cos(theta)) * cross @ cross


def _u(secret: bytes, label: str, count: int) -> np.ndarray:
    return uniform(secret, stream_id("spiral/" + label), np.arange(count, dtype=np.uint64))


def draw_rounds(
    secret: bytes,
    lows: np.ndarray,
    highs: np.ndarray,
    rounds: int,
    *,
    scales: list[float] | tuple[float, float] | None,
    angle: tuple[float, float],
    eps: float | None,
) -> list[Round]:
    """The random parameters of each round, from the keyed PRF.

    ``scales``: a (low, high) range for k, or one k per round.  With ``eps`` instead, each
    round draws one dtheta shared by its groups and sets ``k = e^(eps * dtheta)`` (one k
    per round, so the theorem holds; the paper ties k to dtheta the same way).
    """
    n = len(lows)
    out = []
    for r in range(rounds):
        u = _u(secret, f"round{r}", 8)
        triples = [j for j in range(n // 3 + 1) if (n - 3 * j) % 2 == 0]
        j = triples[min(int(u[0] * len(triples)), len(triples) - 1)]
        order = np.argsort(_u(secret, f"round{r}/permutation", n), kind="stable").tolist()
        groups = [order[3 * g : 3 * g + 3] for g in range(j)]
        groups += [order[3 * j + 2 * g : 3 * j + 2 * g + 2] for g in range((n - 3 * j) // 2)]
        g_count = len(groups)
        shared = angle[0] + u[1] * (angle[1] - angle[0])
        thetas = angle[0] + _u(secret, f"round{r}/angles", g_count) * (angle[1] - angle[0])
        angles = [shared] * g_count if eps is not None else thetas.tolist()
        if eps is not None:
            k = math.exp(eps * shared)
        elif isinstance(scales, list):
            k = float(scales[r])
        elif scales is not None:
            k = scales[0] + u[2] * (scales[1] - scales[0])
        else:
            msg = "draw_rounds needs 'scales' or 'eps'. Got neither."
            raise ValueError(msg)
        centre_u = _u(secret, f"round{r}/centres", n)
        centre = lows + centre_u * (highs - lows)
        axis_u = _u(secret, f"round{r}/axes", 2 * g_count).reshape(g_count, 2)
        axes: list[list[float] | None] = []
        for g, members in enumerate(groups):
            if len(members) == 3:
                z = 2 * axis_u[g, 0] - 1
                phi = 2 * math.pi * axis_u[g, 1]
                rho = math.sqrt(max(1 - z * z, 0.0))
                axes.append([rho * math.cos(phi), rho * math.sin(phi), z])
            else:
                axes.append(None)
        out.append(Round(groups, [centre[m].tolist() for m in groups], angles, axes, k))
    return out


def compose(rounds: list[Round], n: int) -> tuple[np.ndarray, np.ndarray, float]:
    """``(A, b, s)`` with ``x -> A x + b`` equal to the rounds applied in turn."""
    A, b, s = np.eye(n), np.zeros(n), 1.0
    for rnd in rounds:
        M = np.zeros((n, n))
        origin = np.zeros(n)
        for members, centre, theta, axis in zip(rnd.groups, rnd.centres, rnd.angles, rnd.axes, strict=True):
            R = rotation_2d(theta) if axis is None else rotation_3d(np.array(axis), theta)
            M[np.ix_(members, members)] = R
            origin[members] = centre
        step = rnd.k * M  # x' = O + k M (x - O) = step x + (O - step O)
        A, b = step @ A, step @ b + (origin - step @ origin)
        s *= rnd.k
    return A, b, s


def affine(x: np.ndarray, matrix: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """Rows of ``x`` through ``x -> matrix x + offset``."""
    return affine_columns([x[:, j] for j in range(x.shape[1])], matrix, offset).T.copy()


_BLOCK = 1 << 14  # rows a step: a block's terms stay in the cache


def affine_columns(columns: Sequence[np.ndarray], matrix: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """The map of the rows whose coordinates are ``columns`` (d arrays of n float64), as
    a (d, n) array: output i is ``offset[i]``, then each term ``matrix[i, j] * x_j``
    added in order of j.  Column by column in that fixed order, not BLAS: the same bits
    for any batch size, so eager, lazy and streaming agree (a GEMM's blocking depends on
    the shape).  An overflow gives inf without a warning (the callers refuse it)."""
    n = len(columns[0]) if len(columns) else 0
    out = np.empty((matrix.shape[0], n))
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, n, _BLOCK):
            rows = slice(start, start + _BLOCK)
            for i in range(matrix.shape[0]):
                acc = out[i, rows]
                acc.fill(offset[i])
                for j, column in enumerate(columns):
                    acc += matrix[i, j] * column[rows]
    return out
