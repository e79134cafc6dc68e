"""Noise of the differentially private releases, from the keyed PRF (pure NumPy).

* :func:`discrete_laplace` -- the two-sided geometric distribution,
  ``P(k) proportional to exp(-|k| / scale)``, sampled exactly (Canonne, Kamath, Steinke
  2020) from the PRF's 64-bit words, with no floating point: every DP release draws its
  noise from it, counts in units of one row, real values in units of their power-of-two
  grid (:func:`grid_of`, :func:`to_grid`).  Floating-point Laplace noise is not offered:
  its low-order bits leak (Mironov 2012).
* :func:`contribution_words` -- the keyed word of each row that decides which rows a
  privacy unit keeps (contribution bounding), a function of the row's content only.

References
----------
Dwork, McSherry, Nissim, Smith, "Calibrating noise to sensitivity", TCC 2006.
Ghosh, Roughgarden, Sundararajan, "Universally utility-maximizing privacy mechanisms",
STOC 2009 (the geometric mechanism).  Canonne, Kamath, Steinke, "The discrete Gaussian for
differential privacy", NeurIPS 2020 (the exact sampler).  Mironov, "On significance of the
least significant bits for differential privacy", CCS 2012.  Zhang, Cheng, DPQT k-means
(paper 004).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.prf import first_words, stream_id

__all__ = [
    "CONTRIBUTION_STREAM",
    "NULL_BITS",
    "check_integer_scale",
    "contribution_words",
    "discrete_laplace",
    "discrete_laplace_variance",
    "grid_of",
    "to_grid",
]

# The sampler's integers stay below 2^63 (t < 2^58 and a geometric part of ~40 t at most).
MAX_INTEGER_SCALE = 2.0**57


def check_integer_scale(scale: float, func: str) -> None:
    """Refuse a noise scale whose integer draws could leave int64 (epsilon ~1e-300)."""
    if not 0 < scale <= MAX_INTEGER_SCALE:
        msg = (
            f"{func}: integer noise of scale {scale:.3g} (sensitivity / epsilon) does not fit 64-bit "
            "counts; the scale must be in (0, 2^57]: raise epsilon, or lower max_contributions "
            "(or, for DPLloyd, the iterations, each of which halves the epsilon)."
        )
        raise InvalidParameterError(msg)


#: Significant bits of the sampler's scale: a float scale is rounded UP to
#: ``m * 2^e`` with ``m < 2^SCALE_BITS`` (at most 2^-31 more noise; never less).
SCALE_BITS = 32


def sampler_scale(scale: float) -> tuple[int, int]:
    """The scale the exact sampler uses, as ``(t, shift)`` with ``t / 2^shift >= scale``.

    ``t < 2^58`` is an integer of at most :data:`SCALE_BITS` significant bits; the
    distribution drawn is exactly the discrete Laplace of scale ``t / 2^shift`` (the
    given scale rounded up by at most 2^-31 relative, which only adds privacy).

    Examples
    --------
    >>> sampler_scale(1.0), sampler_scale(0.75)
    ((2147483648, 31), (3221225472, 32))
    """
    mantissa, exponent = math.frexp(scale)  # scale = mantissa * 2^exponent, mantissa in [0.5, 1)
    m = math.ceil(mantissa * 2**SCALE_BITS)
    power = exponent - SCALE_BITS
    if power >= 0:
        return m << power, 0
    return m, -power


@functools.lru_cache(maxsize=65536)
def _draw_stream(stream: int, t: int, shift: int, draw: int) -> int:
    """The PRF stream of a sample's ``draw``-th random word: a function of the noise's
    stream, its scale and the draw's index, so two scales (two epsilons) never share a
    word, and no two words of one key share an AES block."""
    return stream_id(f"dp/discrete_laplace/{stream:016x}/{t:x}/{shift}/{draw}")


class _Words:
    """Word 0 of AES(secret, stream(draw) || key) for many (draw, key) pairs at once: each
    sample reads its own next word, whatever step of the sampler it is at."""

    def __init__(self, secret: bytes, stream: int, t: int, shift: int) -> None:
        self._encryptor = Cipher(algorithms.AES(secret), modes.ECB()).encryptor()
        self._stream, self._t, self._shift = stream, t, shift
        self._table = np.empty(0, dtype=np.uint64)

    def _streams(self, draws: np.ndarray) -> np.ndarray:
        top = int(draws.max()) + 1
        if top > len(self._table):
            grown = [
                _draw_stream(self._stream, self._t, self._shift, j) for j in range(len(self._table), top)
            ]
            self._table = np.concatenate([self._table, np.array(grown, dtype=np.uint64)])
        return self._table[draws]

    def __call__(self, draws: np.ndarray, keys: np.ndarray) -> np.ndarray:
        m = len(keys)
        plain = np.empty((m, 2), dtype="<u8")
        plain[:, 0] = self._streams(draws)
        plain[:, 1] = keys
        cipher = np.empty(m * 16 + 15, dtype=np.uint8)  # update_into wants a block of room
        self._encryptor.update_into(plain.data.cast("B"), cipher.data)
        return cipher[: m * 16].view("<u8")[0::2].copy()


def _below(words: np.ndarray, bound: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact uniform integers in [0, bound) from 64-bit words (uint64 bound >= 1): a word
    at or above the largest multiple of ``bound`` below 2^64 is rejected (the sample
    draws again).  Returns (accepted, value)."""
    excess = (np.uint64(0) - bound) % bound  # 2^64 mod bound
    accepted = words <= ~excess
    return accepted, words % bound


# The sampler's steps (one random word each).
_U, _D, _V, _B = 0, 1, 2, 3


def discrete_laplace(secret: bytes, stream: int, keys: np.ndarray, scale: float) -> np.ndarray:
    """Two-sided geometric noise (int64), ``P(x) proportional to exp(-|x| / scale)``,
    sampled exactly.

    ``scale = sensitivity / epsilon`` gives epsilon-DP for integer-valued queries (and,
    on a grid, for real ones: :func:`grid_of`).  The sampler is Canonne, Kamath and
    Steinke's (2020, Algorithm 2, with Algorithm 1 for the Bernoulli(exp(-gamma)) draws)
    for the scale ``t / 2^shift`` of :func:`sampler_scale` (the given scale rounded up):
    rejection sampling from exact uniform integers, no floating point at all, so every
    integer has exactly its probability -- no truncated tail, no gaps, no rounding
    artefacts (Mironov 2012) -- and the draws are the same bits on every machine and
    engine.  A sample's j-th random word is word 0 of AES(secret, stream_j || key) with
    ``stream_j`` a function of ``stream``, the scale and j (:func:`_draw_stream`): noise of
    two scales over one key is independent, and a sample's value depends on nothing but
    its own key.

    Each sample walks the algorithm one word at a time (U: a uniform in [0, t); D: the
    Bernoulli(exp(-U/t)) loop, K = 1, 2, ... while uniform[0, tK) < U, accepted if K is
    odd; V: Bernoulli(exp(-1)) loops, counting successes; B: the sign), all pending
    samples advancing together, so a call costs ~10 AES blocks per sample and a few
    dozen NumPy passes whatever the number of samples.

    Examples
    --------
    >>> from polars_ppdm.kernels.prf import stream_id
    >>> noise = discrete_laplace(bytes(range(16)), stream_id("demo"), np.arange(200_000), 2.0)
    >>> noise.dtype.name, round(float(noise.var()) / discrete_laplace_variance(2.0), 1)
    ('int64', 1.0)

    References
    ----------
    Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020.  Ghosh, Roughgarden, Sundararajan, STOC 2009.
    """
    check_integer_scale(scale, "discrete_laplace")
    keys = np.asarray(keys)
    keys = keys.view(np.uint64) if keys.dtype == np.int64 else keys.astype(np.uint64, copy=False)
    t, shift = sampler_scale(scale)
    n = len(keys)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    words_of = _Words(secret, stream, t, shift)
    # The pending samples' state, compacted as samples finish (no gathers or scatters
    # per step: element-wise updates over the pending ones).
    index = np.arange(n)
    key = keys.copy()
    state = np.full(n, _U, dtype=np.int8)
    draw = np.zeros(n, dtype=np.int64)
    u = np.zeros(n, dtype=np.uint64)
    k = np.ones(n, dtype=np.uint64)
    v = np.zeros(n, dtype=np.uint64)
    t64, one, zero = np.uint64(t), np.uint64(1), np.uint64(0)
    k_limit = np.uint64((2**64 - 1) // t)
    while index.size:
        words = words_of(draw, key)
        draw += 1
        in_u, in_d, in_v, in_b = state == _U, state == _D, state == _V, state == _B
        if (in_d & (k >= k_limit)).any() or (in_v & (v >= k_limit - one)).any():  # below 1e-27
            msg = "discrete_laplace: the exact sampler ran out of 64-bit range (probability < 1e-27)."
            raise RuntimeError(msg)
        # U draws a uniform in [0, t); D a uniform in [0, tK) (Bernoulli(U / tK): below U);
        # V a uniform in [0, K) (Bernoulli(1 / K): zero).
        bound = np.where(in_u, t64, np.where(in_d, t64 * k, np.where(in_v, k, one)))
        ok, value = _below(words, bound)
        new_u = in_u & ok
        d_success = in_d & ok & (value < u)
        d_end = in_d & ok & (value >= u)
        v_success = in_v & ok & (value == zero)
        v_end = in_v & ok & (value != zero)
        odd = (k & one) == one
        d_accept, d_reject = d_end & odd, d_end & ~odd
        v_more, v_stop = v_end & odd, v_end & ~odd
        # B: the sign; +0 and -0 are one value, so a negative zero is rejected.
        negative = (words >> np.uint64(63)) == one
        y = ((u + t64 * v) >> np.uint64(shift)) if shift < 64 else np.zeros_like(u)
        b_reject = in_b & negative & (y == zero)
        finished = in_b & ~b_reject
        if finished.any():
            signed = y[finished].astype(np.int64)
            out[index[finished]] = np.where(negative[finished], -signed, signed)
        u = np.where(new_u, value, u)
        k = np.where(new_u | d_accept | v_more, one, np.where(d_success | v_success, k + one, k))
        v = np.where(d_accept, zero, np.where(v_more, v + one, v))
        state = np.where(new_u, _D, state)
        state = np.where(d_accept, _V, np.where(d_reject | b_reject, _U, state))
        state = np.where(v_stop, _B, state).astype(np.int8)
        if finished.any():
            keep = ~finished
            index, key, state, draw, u, k, v = (a[keep] for a in (index, key, state, draw, u, k, v))
    return out


#: Real values are released on a grid of 2^-GRID_BITS of their row bound, rounded down to a
#: power of two: the rounded values are integers of at most GRID_BITS + 1 bits.
GRID_BITS = 24


def grid_of(row_bound: float, func: str, what: str = "bounds") -> float:
    """The power-of-two grid a real value with this row bound is released on.

    ``2^(e - GRID_BITS)`` for ``row_bound = m * 2^e`` (``m`` in [0.5, 1)): between
    ``row_bound * 2^-24`` and ``row_bound * 2^-23``.  Values are rounded to it and get
    integer noise in its units (:func:`discrete_laplace`), as OpenDP's
    ``sample_discrete_laplace_Z2k`` and Google's granularity do: a released figure is
    then an integer times a power of two, whatever the data, so its low-order bits say
    nothing (a float Laplace release does: Mironov 2012).  A grid below the smallest
    normal double (bounds below ~1e-300) is refused.

    Examples
    --------
    >>> grid_of(100.0, "demo") == 2.0**-17, grid_of(1.0, "demo") == 2.0**-23
    (True, True)
    """
    if not (0 < row_bound < math.inf):
        msg = f"{func}: the {what} give a row bound of {row_bound!r}; it must be finite and > 0."
        raise InvalidParameterError(msg)
    _, exponent = math.frexp(row_bound)
    grid = math.ldexp(1.0, exponent - GRID_BITS)
    if grid < 2.0**-1022:
        msg = (
            f"{func}: the {what} are too close to zero (row bound {row_bound:.3g}): their release grid "
            f"{grid:.3g} would be a subnormal double. Rescale the values (e.g. to other units) first."
        )
        raise InvalidParameterError(msg)
    return grid


def to_grid(values: np.ndarray | float, grid: float) -> np.ndarray:
    """``floor(x / grid + 0.5)``: the nearest grid point (halves up), in grid units,
    as float64 (exact below 2^53).  The same IEEE operations in every engine."""
    return np.floor(np.asarray(values, dtype=np.float64) / grid + 0.5)


def discrete_laplace_variance(scale: float) -> float:
    """Variance of :func:`discrete_laplace`: ``2 alpha / (1 - alpha)^2``."""
    alpha = np.exp(-1.0 / scale)
    return float(2 * alpha / (1 - alpha) ** 2)


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
