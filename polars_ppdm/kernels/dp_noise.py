"""Noise of the differentially private releases, from the keyed PRF (pure NumPy).

Each draw uses both 64-bit words of one PRF block: two independent uniforms in (0, 1],
``u = ((w >> 11) + 0.5) * 2**-53`` (never 0, so their logarithms are finite; the largest
word rounds to 1, whose logarithm is 0).  The
logarithms are :func:`~polars_ppdm.kernels.portable_math.minus_log`, not ``np.log``, so
the noise has the same bits on every machine.

* :func:`discrete_laplace` -- the two-sided geometric distribution,
  ``P(k) proportional to alpha^|k|`` with ``alpha = exp(-1/scale)``: the difference of two
  geometric variables ``floor(-scale * ln u)``.  Counts get integer noise, never
  floating-point Laplace: rounding artefacts of the latter leak (Mironov 2012).
* :func:`laplace` -- ``scale * (ln u2 - ln u1)``, for real-valued sums.
* :func:`contribution_words` -- the keyed word of each row that decides which rows a
  privacy unit keeps (contribution bounding), a function of the row's content only.

References
----------
Dwork, McSherry, Nissim, Smith, "Calibrating noise to sensitivity", TCC 2006.
Ghosh, Roughgarden, Sundararajan, "Universally utility-maximizing privacy mechanisms",
STOC 2009 (the geometric mechanism).  Zhang, Cheng, DPQT k-means (paper 004).
"""

from __future__ import annotations

import numpy as np

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.portable_math import minus_log
from polars_ppdm.kernels.prf import first_words, prf_words, stream_id

__all__ = [
    "CONTRIBUTION_STREAM",
    "NULL_BITS",
    "check_integer_scale",
    "contribution_words",
    "discrete_laplace",
    "discrete_laplace_variance",
    "laplace",
    "uniform_pairs",
]

_HALF_ULP = 0.5
_TWO_POW_MINUS_53 = 2.0**-53
# -ln u <= 36.8 for these uniforms, so a larger scale could leave int64.
MAX_INTEGER_SCALE = 2.0**57


def uniform_pairs(secret: bytes, stream: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two independent uniforms in (0, 1] per key (1 only for the largest word)."""
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
    g1 = np.floor(scale * minus_log(u1, out=u1))
    g2 = np.floor(scale * minus_log(u2, out=u2))
    return (g1 - g2).astype(np.int64)


def discrete_laplace_variance(scale: float) -> float:
    """Variance of :func:`discrete_laplace`: ``2 alpha / (1 - alpha)^2``."""
    alpha = np.exp(-1.0 / scale)
    return float(2 * alpha / (1 - alpha) ** 2)


def laplace(secret: bytes, stream: int, keys: np.ndarray, scale: float) -> np.ndarray:
    """Laplace noise (float64) of the given scale (variance ``2 scale^2``)."""
    u1, u2 = uniform_pairs(secret, stream, np.asarray(keys))
    return scale * (minus_log(u1, out=u1) - minus_log(u2, out=u2))


#: Stream label of the contribution words; column j of a release chains through
#: ``CONTRIBUTION_STREAM + "/" + str(j)``.
CONTRIBUTION_STREAM = "dp/contributions"
#: The 64 bits that stand for a null value in :func:`contribution_words` (a quiet NaN
#: whose payload spells "ppdmnul"; a NaN of exactly this payload counts as a null there).
NULL_BITS = np.uint64(0x7FF8_7070_646D_6E75)


def contribution_words(
    secret: bytes,
    unit_keys: np.ndarray,
    values: list[np.ndarray],
    nulls: list[np.ndarray | None],
) -> np.ndarray:
    """The keyed word of every row that decides which rows its privacy unit keeps.

    A unit keeps its ``max_contributions`` rows of smallest word.  The word is a keyed
    PRF of the unit's 64-bit key and the row's content in the release's columns, never
    of the row's position, so the rows kept do not depend on row order, batches or
    partitions (every engine computes the same words).  Version-stable definition::

        w_0 = unit key (the 64-bit row key: integer bits, or FNV-1a 64 of a string)
        w_j = word 0 of AES(secret, stream_id("dp/contributions/" + str(j - 1)) || (w_(j-1) XOR b_j))
              for j = 1..d, where b_j is the IEEE-754 float64 bit pattern of the row's
              value in column j - 1 (cast to float64), or NULL_BITS for a null
        word = w_d

    A CBC-MAC-like chain of AES under the secret: within one unit two rows get the same
    word only when their values have the same float64 bits (else with probability
    2^-64, which no one without the secret can steer), and then the release cannot tell
    which of them was kept: the choice does not change it.

    Parameters
    ----------
    secret : bytes
        The AES key.
    unit_keys : numpy.ndarray
        The unit's 64-bit key of every row (uint64 or int64 bits).
    values : list of numpy.ndarray
        One float64 array per release column (d >= 1), the row's values.
    nulls : list of numpy.ndarray or None
        Per column, a boolean mask of null values (their ``values`` are ignored), or None.

    Returns
    -------
    numpy.ndarray
        uint64 words, one per row.

    Examples
    --------
    >>> import numpy as np
    >>> keys = np.array([7, 7, 7], dtype=np.uint64)
    >>> w = contribution_words(bytes(16), keys, [np.array([1.5, 2.5, 1.5])], [None])
    >>> bool(w[0] == w[2]), bool(w[0] != w[1])
    (True, True)
    """
    if not values:
        msg = "contribution_words needs at least one column of values."
        raise ValueError(msg)
    word = np.asarray(unit_keys)
    word = word.view(np.uint64) if word.dtype == np.int64 else word.astype(np.uint64, copy=False)
    for j, (column, null) in enumerate(zip(values, nulls, strict=True)):
        bits = np.ascontiguousarray(column, dtype=np.float64).view(np.uint64)
        if null is not None and null.any():
            bits = np.where(null, NULL_BITS, bits)
        word = first_words(secret, stream_id(f"{CONTRIBUTION_STREAM}/{j}"), word ^ bits)
    return word
