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

import functools
import math

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
    "grid_of",
    "to_grid",
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
def _draw_stream(stream: int, t: int, shift: int, path: str) -> int:
    """The PRF stream of one step of the sampler: a function of the noise's stream, its
    scale and the step's path, so two scales (two epsilons) never share a draw."""
    text = f"{stream:016x}/{t:x}/{shift}/{path}"
    return stream_id("dp/discrete_laplace/" + text)


class _Draws:
    """The 64-bit words of one sampler call: word 0 of AES(secret, step stream || key)
    for the keys still pending at that step.  Every step has its own path, so every
    random word of a key is a distinct AES block."""

    def __init__(self, secret: bytes, stream: int, t: int, shift: int) -> None:
        self.secret, self.stream, self.t, self.shift = secret, stream, t, shift

    def words(self, path: str, keys: np.ndarray) -> np.ndarray:
        return first_words(self.secret, _draw_stream(self.stream, self.t, self.shift, path), keys)

    def below(self, path: str, keys: np.ndarray, bound: np.ndarray) -> np.ndarray:
        """Exact uniform integers in [0, bound) (uint64 bound >= 1, per key), by
        rejection: a word at or above the largest multiple of bound below 2^64 is
        redrawn (from the path's next retry)."""
        out = np.empty(len(keys), dtype=np.uint64)
        pending = np.arange(len(keys))
        bound = np.broadcast_to(np.asarray(bound, dtype=np.uint64), (len(keys),))
        retry = 0
        while pending.size:
            b = bound[pending]
            w = self.words(f"{path}/r{retry}", keys[pending])
            excess = (np.uint64(0) - b) % b  # 2^64 mod b
            ok = w <= ~excess
            out[pending[ok]] = w[ok] % b[ok]
            pending = pending[~ok]
            retry += 1
        return out

    def bernoulli_exp(
        self, path: str, keys: np.ndarray, numerator: np.ndarray, denominator: int
    ) -> np.ndarray:
        """Exact Bernoulli(exp(-numerator / denominator)) for 0 <= numerator <= denominator
        (Canonne, Kamath, Steinke 2020, Algorithm 1): K = 1, 2, ... while
        Bernoulli(gamma / K) succeeds; the result is whether K is odd."""
        numerator = np.asarray(numerator, dtype=np.uint64)
        k = np.ones(len(keys), dtype=np.int64)
        alive = np.arange(len(keys))
        step = 1
        while alive.size:
            if denominator * step >= 2**64:  # probability below 1/63! for t < 2^58
                msg = "discrete_laplace: the exact sampler ran out of 64-bit range (probability < 1e-80)."
                raise RuntimeError(msg)
            u = self.below(f"{path}/k{step}", keys[alive], np.uint64(denominator * step))
            success = u < numerator[alive]
            k[alive[success]] += 1
            alive = alive[success]
            step += 1
        return (k & 1) == 1


def discrete_laplace(secret: bytes, stream: int, keys: np.ndarray, scale: float) -> np.ndarray:
    """Two-sided geometric noise (int64), ``P(x) proportional to exp(-|x| / scale)``,
    sampled exactly.

    ``scale = sensitivity / epsilon`` gives epsilon-DP for integer-valued queries (and,
    on a grid, for real ones: :func:`grid_of`).  The sampler is Canonne, Kamath and
    Steinke's (2020, Algorithm 2) for the scale ``t / 2^shift`` of :func:`sampler_scale`
    (the given scale rounded up): rejection sampling from exact uniform integers and
    exact Bernoulli(exp(-gamma)) draws, no floating point at all, so every integer has
    exactly its probability -- no truncated tail, no gaps (Mironov 2012) -- and the
    draws are the same bits on every machine and engine.  Each random word is word 0 of
    AES(secret, step stream || key), the step stream a function of ``stream``, the scale
    and the step, so noise of two scales over one key is independent.

    Examples
    --------
    >>> from polars_ppdm.kernels.prf import stream_id
    >>> noise = discrete_laplace(bytes(16), stream_id("demo"), np.arange(200_000), 2.0)
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
    draws = _Draws(secret, stream, t, shift)
    out = np.zeros(len(keys), dtype=np.int64)
    pending = np.arange(len(keys))
    attempt = 0
    while pending.size:
        k = keys[pending]
        a = f"a{attempt}"
        u = draws.below(f"{a}/U", k, np.uint64(t))
        accepted = draws.bernoulli_exp(f"{a}/D", k, u, t)
        # V ~ Geometric(1 - e^-1): count successes of Bernoulli(e^-1).
        v = np.zeros(len(k), dtype=np.uint64)
        alive = np.flatnonzero(accepted)
        step = 0
        while alive.size:
            more = draws.bernoulli_exp(f"{a}/V{step}", k[alive], np.full(alive.size, t, dtype=np.uint64), t)
            v[alive[more]] += np.uint64(1)
            alive = alive[more]
            step += 1
        if t * (int(v.max(initial=0)) + 1) >= 2**64:  # probability below e^-64
            msg = "discrete_laplace: the exact sampler ran out of 64-bit range (probability < 1e-27)."
            raise RuntimeError(msg)
        x = u + np.uint64(t) * v
        y = (x >> np.uint64(shift)) if shift < 64 else np.zeros_like(x)
        negative = (draws.words(f"{a}/B", k) >> np.uint64(63)) == 1
        done = accepted & ~(negative & (y == 0))
        signed = y.astype(np.int64)
        out[pending[done]] = np.where(negative[done], -signed[done], signed[done])
        pending = pending[~done]
        attempt += 1
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
