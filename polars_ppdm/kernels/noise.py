"""Additive noise from the keyed PRF: uniform and Gaussian, one draw per (key, value).

Uniform noise on [-a, a) comes from word 0; Gaussian noise from both words by the
Box-Muller transform, so each row's noise is one AES block whatever the batching.

With ``values`` (what :func:`polars_ppdm.add_noise` passes), the block is keyed by the
unit AND the value: :func:`polars_ppdm.kernels.prf.chained_prf_words` over the value's
float64 bits (``x + 0.0``, so -0.0 counts as 0.0), two AES calls per row.  A unit's
unchanged value keeps its noise (re-runs cannot be averaged away), a changed value gets
fresh, independent noise (the change is not revealed), and a unit's rows share noise
only when their values are equal.  Without ``values`` the block is ``stream || key``
(simulations and audits that draw noise for synthetic keys).  The stream is derived by
the distribution and the scale (:func:`noise_stream`), and the released ``x + r`` is
rounded to a power-of-two grid below the scale (:func:`noisy_values`).  Its
logarithm and cosine are :mod:`polars_ppdm.kernels.portable_math`'s, not NumPy's, whose
bits depend on the CPU: the noise is the same on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from polars_ppdm.kernels import _native
from polars_ppdm.kernels.portable_math import _minus_log_centres, _quarter_turn_cells, cos_two_pi
from polars_ppdm.kernels.prf import (
    _as_keys,
    _check_secret,
    chained_prf_words,
    derived_stream,
    prf_words,
    unit_doubles,
)
from polars_ppdm.kernels.spacings import exponentials

__all__ = [
    "gaussian_noise",
    "noise_grid",
    "noise_stream",
    "noisy_values",
    "scale_for_snr",
    "uniform_noise",
    "value_words",
]

#: Below the scale, the grid of released noisy values: 2**-24 of the scale's power of two.
GRID_BITS_BELOW_SCALE = 24


def noise_stream(stream: int, *, gaussian: bool, scale: float) -> int:
    """The stream of one noise mechanism: ``stream`` (the column's) derived by the
    distribution and the scale's float64 bits.

    Two releases of one value under other scales then draw independent noise.  With one
    draw ``z`` shared, ``y1 = x + s1 z`` and ``y2 = x + s2 z`` would give the value back
    exactly: ``x = (s2 y1 - s1 y2) / (s2 - s1)``.

    Examples
    --------
    >>> noise_stream(7, gaussian=True, scale=1.0) != noise_stream(7, gaussian=True, scale=2.0)
    True
    """
    kind = "gaussian" if gaussian else "uniform"
    return derived_stream(stream, f"noise/{kind}/{float(scale).hex()}")


def noise_grid(scale: float) -> float:
    """The power-of-two grid the noisy values are released on: ``2**(floor(log2(scale))
    - 24)``, so that the float's low bits carry nothing of the original.

    The noise itself is on a far finer, value-independent lattice (uniform: multiples of
    ``scale * 2**-52``); released unrounded, ``y - x`` must lie on it wherever ``x + r`` is
    exact, which rules candidate originals in or out (Mironov, CCS 2012, for Laplace).
    Rounded to a grid ~2**28 times coarser, every candidate within the noise's range can
    give every released value.  The rounding moves a value by at most half a grid step,
    ``scale * 2**-24``: nothing next to the noise.

    Examples
    --------
    >>> noise_grid(1.0), noise_grid(5000.0) == 2.0 ** (12 - 24)
    (5.960464477539063e-08, True)
    """
    return math.ldexp(1.0, math.frexp(float(scale))[1] - 1 - GRID_BITS_BELOW_SCALE)


def noisy_values(values: np.ndarray, noise: np.ndarray, scale: float) -> np.ndarray:
    """``x + r`` rounded to :func:`noise_grid` (ties to even; -0.0 as 0.0), in ``noise``'s
    buffer.  Where ``|x + r|`` is past ``2**52`` grid steps, its own float spacing is
    coarser than the grid and it is kept as it is.  The compiled plugin takes the same
    IEEE steps (``native/src/plugin.rs``).

    Examples
    --------
    >>> y = noisy_values(np.array([0.1, 1e300]), np.array([0.25, 1.0]), 1.0)
    >>> float(y[0]) == round(0.35 * 2**24) / 2**24, float(y[1]) == 1e300
    (True, True)
    """
    grid = noise_grid(scale)
    # Near the float maximum the sum may overflow to inf, and the quotient too: such values
    # are kept as they are (off the grid), without NumPy's warning.
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.add(values, noise, out=noise)
        steps = out / grid
    on_grid = np.abs(steps) < 2.0**52  # False for the infinite or NaN quotient of a tiny grid
    np.rint(steps, out=steps)
    steps *= grid
    steps += 0.0
    np.copyto(out, steps, where=on_grid)
    return out


def value_words(values: np.ndarray) -> np.ndarray:
    """The 64-bit words that key the noise of real values: the IEEE-754 float64 bits of
    ``values + 0.0`` (-0.0 folded into 0.0, which it equals).

    Examples
    --------
    >>> bool(value_words(np.array([-0.0]))[0] == value_words(np.array([0.0]))[0])
    True
    """
    return (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)


def _compiled_noise(
    secret: bytes,
    stream: int,
    keys: np.ndarray,
    values: np.ndarray | None,
    scale: float,
    *,
    gaussian: bool,
) -> np.ndarray | None:
    """The noise from the compiled kernel in one call without the GIL (the same blocks
    and the same IEEE steps as below), or None without it."""
    native = _native.NATIVE
    if native is None:
        return None
    secret = _check_secret(secret)
    keys = np.ascontiguousarray(_as_keys(keys))
    if values is None:
        steps = [int(stream)]
    else:
        values = np.ascontiguousarray(values, dtype=np.float64)
        if len(values) != len(keys):
            return None  # the pure path names the mismatch
        steps = [derived_stream(stream, "unit"), derived_stream(stream, "part/0")]
    out = np.empty(len(keys), dtype=np.float64)
    sines, cosines = _quarter_turn_cells()
    native.noise_into(
        secret, steps, keys, values, gaussian, float(scale), _minus_log_centres(), sines, cosines, out
    )
    return out


def _drive(
    secret: bytes,
    stream: int,
    keys: np.ndarray,
    values: np.ndarray | None,
    consume: Callable[[int, int, np.ndarray], None],
) -> None:
    if values is None:
        prf_words(secret, stream, np.asarray(keys), consume)
    else:
        chained_prf_words(secret, stream, np.asarray(keys), [value_words(values)], consume)


def uniform_noise(
    secret: bytes, stream: int, keys: np.ndarray, half_width: float, *, values: np.ndarray | None = None
) -> np.ndarray:
    """Noise uniform on [-half_width, half_width): ``(2u - 1) * half_width``, keyed by
    (key, value) when ``values`` (float64, one per key) are given.

    Examples
    --------
    >>> r = uniform_noise(bytes(16), 1, np.arange(100_000), 2.0)
    >>> bool(abs(r.var() - 4.0 / 3.0) < 0.02), bool(abs(r).max() <= 2.0)
    (True, True)
    >>> r = uniform_noise(bytes(16), 1, np.array([5, 5, 5]), 2.0, values=np.array([1.0, 2.0, 1.0]))
    >>> bool(r[0] == r[2]), bool(r[0] != r[1])
    (True, True)
    """
    half_width = float(half_width)  # float64 on both paths (see gaussian_noise)
    stream = noise_stream(stream, gaussian=False, scale=half_width)
    fast = _compiled_noise(secret, stream, keys, values, half_width, gaussian=False)
    if fast is not None:
        return fast
    out = np.empty(len(keys), dtype=np.float64)

    def consume(start, stop, words):
        out[start:stop] = (2.0 * unit_doubles(words[:, 0]) - 1.0) * half_width

    _drive(secret, stream, keys, values, consume)
    return out


def gaussian_noise(
    secret: bytes, stream: int, keys: np.ndarray, sigma: float, *, values: np.ndarray | None = None
) -> np.ndarray:
    """Normal(0, sigma^2) noise by Box-Muller: ``sigma sqrt(-2 ln(1 - u0)) cos(2 pi u1)``,
    keyed by (key, value) when ``values`` (float64, one per key) are given.

    ``sigma`` (as :func:`uniform_noise`'s ``half_width``) is rounded to float64 first, on
    both paths: the compiled kernel multiplies in doubles, where NumPy multiplied by an
    ``np.longdouble`` in long double (review 64).

    Examples
    --------
    >>> r = gaussian_noise(bytes(16), 1, np.arange(100_000), 3.0)
    >>> bool(abs(r.std() - 3.0) < 0.05), bool(abs(r.mean()) < 0.05)
    (True, True)
    >>> r = gaussian_noise(bytes(16), 1, np.arange(100_000) // 2, 3.0, values=np.arange(100_000) % 2 * 1.0)
    >>> bool(abs(np.corrcoef(r[0::2], r[1::2])[0, 1]) < 0.02)  # a unit's two values: independent noise
    True
    """
    sigma = float(sigma)
    stream = noise_stream(stream, gaussian=True, scale=sigma)
    fast = _compiled_noise(secret, stream, keys, values, sigma, gaussian=True)
    if fast is not None:
        return fast
    out = np.empty(len(keys), dtype=np.float64)

    def consume(start, stop, words):
        radius = np.sqrt(2.0 * exponentials(unit_doubles(words[:, 0])))  # -ln(1 - u0), 1 - u0 in (0, 1]
        out[start:stop] = sigma * radius * cos_two_pi(unit_doubles(words[:, 1]))

    _drive(secret, stream, keys, values, consume)
    return out


def scale_for_snr(variance: float, snr: float, dist: str) -> float:
    """Half-width (uniform) or sigma (gaussian) giving ``Var(X) / Var(noise) = snr``."""
    noise_variance = variance / snr
    return math.sqrt(3.0 * noise_variance) if dist == "uniform" else math.sqrt(noise_variance)
