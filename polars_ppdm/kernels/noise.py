"""Additive noise from the keyed PRF: uniform and Gaussian, one draw per row key.

Uniform noise on [-a, a) comes from word 0; Gaussian noise from both words by the
Box-Muller transform, so each row's noise is one AES block whatever the batching.  Its
logarithm and cosine are :mod:`polars_ppdm.kernels.portable_math`'s, not NumPy's, whose
bits depend on the CPU: the noise is the same on every machine.
"""

from __future__ import annotations

import math

import numpy as np

from polars_ppdm.kernels.portable_math import cos_two_pi
from polars_ppdm.kernels.prf import prf_words, unit_doubles
from polars_ppdm.kernels.spacings import exponentials

__all__ = ["gaussian_noise", "scale_for_snr", "uniform_noise"]


def uniform_noise(secret: bytes, stream: int, keys: np.ndarray, half_width: float) -> np.ndarray:
    """Noise uniform on [-half_width, half_width): ``(2u - 1) * half_width``.

    Examples
    --------
    >>> r = uniform_noise(bytes(16), 1, np.arange(100_000), 2.0)
    >>> bool(abs(r.var() - 4.0 / 3.0) < 0.02), bool(abs(r).max() <= 2.0)
    (True, True)
    """
    out = np.empty(len(keys), dtype=np.float64)

    def consume(start, stop, words):
        out[start:stop] = (2.0 * unit_doubles(words[:, 0]) - 1.0) * half_width

    prf_words(secret, stream, np.asarray(keys), consume)
    return out


def gaussian_noise(secret: bytes, stream: int, keys: np.ndarray, sigma: float) -> np.ndarray:
    """Normal(0, sigma^2) noise by Box-Muller: ``sigma sqrt(-2 ln(1 - u0)) cos(2 pi u1)``.

    Examples
    --------
    >>> r = gaussian_noise(bytes(16), 1, np.arange(100_000), 3.0)
    >>> bool(abs(r.std() - 3.0) < 0.05), bool(abs(r.mean()) < 0.05)
    (True, True)
    """
    out = np.empty(len(keys), dtype=np.float64)

    def consume(start, stop, words):
        radius = np.sqrt(2.0 * exponentials(unit_doubles(words[:, 0])))  # -ln(1 - u0), 1 - u0 in (0, 1]
        out[start:stop] = sigma * radius * cos_two_pi(unit_doubles(words[:, 1]))

    prf_words(secret, stream, np.asarray(keys), consume)
    return out


def scale_for_snr(variance: float, snr: float, dist: str) -> float:
    """Half-width (uniform) or sigma (gaussian) giving ``Var(X) / Var(noise) = snr``."""
    noise_variance = variance / snr
    return math.sqrt(3.0 * noise_variance) if dist == "uniform" else math.sqrt(noise_variance)
