"""Noise of the differentially private releases, from the keyed PRF (pure NumPy).

Each draw uses both 64-bit words of one PRF block: two independent uniforms in (0, 1),
``u = ((w >> 11) + 0.5) * 2**-53`` (never 0 or 1, so their logarithms are finite).

* :func:`discrete_laplace` -- the two-sided geometric distribution,
  ``P(k) proportional to alpha^|k|`` with ``alpha = exp(-1/scale)``: the difference of two
  geometric variables ``floor(-scale * ln u)``.  Counts get integer noise, never
  floating-point Laplace: rounding artefacts of the latter leak (Mironov 2012).
* :func:`laplace` -- ``scale * (ln u2 - ln u1)``, for real-valued sums.

References
----------
Dwork, McSherry, Nissim, Smith, "Calibrating noise to sensitivity", TCC 2006.
Ghosh, Roughgarden, Sundararajan, "Universally utility-maximizing privacy mechanisms",
STOC 2009 (the geometric mechanism).  Zhang, Cheng, DPQT k-means (paper 004).
"""

from __future__ import annotations

import numpy as np

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.prf import prf_words

__all__ = ["check_integer_scale", "discrete_laplace", "discrete_laplace_variance", "laplace", "uniform_pairs"]

_HALF_ULP = 0.5
_TWO_POW_MINUS_53 = 2.0**-53
# -ln u <= 36.8 for these uniforms, so a larger scale could leave int64.
MAX_INTEGER_SCALE = 2.0**57


def uniform_pairs(secret: bytes, stream: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two independent uniforms in the open interval (0, 1) per key."""
    n = len(keys)
    u1, u2 = np.empty(n), np.empty(n)

    def consume(start, stop, words):
        for column, out in ((0, u1), (1, u2)):
            target = out[start:stop]
            np.right_shift(words[:, column], np.uint64(11), out=target, casting="unsafe")
            target += _HALF_ULP
            target *= _TWO_POW_MINUS_53

    prf_words(secret, stream, keys, consume)
    return u1, u2


def check_integer_scale(scale: float, func: str) -> None:
    """Refuse a noise scale whose integer draws could leave int64 (epsilon ~1e-300)."""
    if not 0 < scale <= MAX_INTEGER_SCALE:
        msg = (
            f"{func}: integer noise of scale {scale:.3g} (sensitivity / epsilon) does not fit 64-bit "
            "counts; the scale must be in (0, 2^57]: raise epsilon, or lower max_contributions "
            "(or, for DPLloyd, the iterations, each of which halves the epsilon)."
        )
        raise InvalidParameterError(msg)


def discrete_laplace(secret: bytes, stream: int, keys: np.ndarray, scale: float) -> np.ndarray:
    """Two-sided geometric noise (int64) with ``alpha = exp(-1 / scale)``.

    ``scale = sensitivity / epsilon`` gives epsilon-DP for integer-valued queries.

    Examples
    --------
    >>> from polars_ppdm.kernels.prf import stream_id
    >>> noise = discrete_laplace(bytes(16), stream_id("demo"), np.arange(200_000), 2.0)
    >>> noise.dtype.name, round(float(noise.var()) / discrete_laplace_variance(2.0), 1)
    ('int64', 1.0)
    """
    check_integer_scale(scale, "discrete_laplace")
    u1, u2 = uniform_pairs(secret, stream, np.asarray(keys))
    g1 = np.floor(-scale * np.log(u1))
    g2 = np.floor(-scale * np.log(u2))
    return (g1 - g2).astype(np.int64)


def discrete_laplace_variance(scale: float) -> float:
    """Variance of :func:`discrete_laplace`: ``2 alpha / (1 - alpha)^2``."""
    alpha = np.exp(-1.0 / scale)
    return float(2 * alpha / (1 - alpha) ** 2)


def laplace(secret: bytes, stream: int, keys: np.ndarray, scale: float) -> np.ndarray:
    """Laplace noise (float64) of the given scale (variance ``2 scale^2``)."""
    u1, u2 = uniform_pairs(secret, stream, np.asarray(keys))
    return scale * (np.log(u2) - np.log(u1))
