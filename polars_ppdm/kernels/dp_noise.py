"""Noise of the differentially private releases, from the keyed PRF (pure NumPy).

* :func:`discrete_laplace` -- the two-sided geometric distribution,
  ``P(k) proportional to exp(-|k| / scale)``, sampled exactly (Canonne, Kamath, Steinke
  2020) from the PRF's 64-bit words, with no floating point: every DP release draws its
  noise from it, counts in units of one row, real values in units of their power-of-two
  grid (:func:`grid_of`, :func:`to_grid`).  Floating-point Laplace noise is not offered:
  its low-order bits leak (Mironov 2012).
* :func:`discrete_gaussian` -- ``P(k) proportional to exp(-k^2 / (2 sigma^2))``, sampled
  exactly the same way (Canonne, Kamath, Steinke 2020, Algorithm 3), for rho-zCDP
  releases; :func:`discrete_gaussian_variance` and :func:`discrete_gaussian_quantile`
  give its exact variance and quantiles (intervals of Gaussian releases).
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
import numbers
from collections.abc import Callable, Sequence
from statistics import NormalDist

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import _native
from polars_ppdm.kernels.prf import _check_secret, first_words, stream_id

__all__ = [
    "CONTRIBUTION_STREAM",
    "NULL_BITS",
    "ONE_SECRET",
    "check_gaussian_sigma",
    "check_integer_scale",
    "contribution_words",
    "discrete_gaussian",
    "discrete_gaussian_quantile",
    "discrete_gaussian_variance",
    "discrete_laplace",
    "discrete_laplace_variance",
    "gaussian_sampler_sigma",
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
def _draw_stream(prefix: str, draw: int) -> int:
    """The PRF stream of a sample's ``draw``-th random word: ``stream_id(prefix + "/" +
    str(draw))``, the prefix naming the sampler, the noise's stream and its scale
    (:func:`_laplace_prefix`, :func:`_gaussian_prefix`), so two samplers or two scales
    (two epsilons) never share a word, and no two words of one key share an AES block."""
    return stream_id(f"{prefix}/{draw}")


def _laplace_prefix(stream: int, t: int, shift: int) -> str:
    return f"dp/discrete_laplace/{stream:016x}/{t:x}/{shift}"


#: What one AES key is given as (else a sequence of keys, one per row of draws).
ONE_SECRET = (bytes, bytearray, memoryview)


class _Words:
    """Word 0 of AES(secret, stream(draw) || key) for many (draw, key) pairs at once: each
    sample reads its own next word, whatever step of the sampler it is at.

    With several secrets, sample ``i`` is under ``secrets[owners[i]]``; ``owners`` is
    sorted (the samplers keep their pending samples in order), so each secret encrypts
    one contiguous slice."""

    def __init__(self, secrets: bytes | Sequence[bytes], prefix: str) -> None:
        """``secrets``: the key(s) as :func:`_secrets` checked them."""
        keys = [secrets] if isinstance(secrets, ONE_SECRET) else list(secrets)
        self._encryptors = [Cipher(algorithms.AES(key), modes.ECB()).encryptor() for key in keys]
        self._prefix = prefix
        self._table = np.empty(0, dtype=np.uint64)

    def _streams(self, draws: np.ndarray) -> np.ndarray:
        top = int(draws.max()) + 1
        if top > len(self._table):
            grown = [_draw_stream(self._prefix, j) for j in range(len(self._table), top)]
            self._table = np.concatenate([self._table, np.array(grown, dtype=np.uint64)])
        return self._table[draws]

    def __call__(self, draws: np.ndarray, keys: np.ndarray, owners: np.ndarray | None = None) -> np.ndarray:
        m = len(keys)
        plain = np.empty((m, 2), dtype="<u8")
        plain[:, 0] = self._streams(draws)
        plain[:, 1] = keys
        cipher = np.empty(m * 16 + 15, dtype=np.uint8)  # update_into wants a block of room
        if owners is None:
            self._encryptors[0].update_into(plain.data.cast("B"), cipher.data)
        else:
            bounds = np.searchsorted(owners, np.arange(len(self._encryptors) + 1)).tolist()
            for encryptor, lo, hi in zip(self._encryptors, bounds[:-1], bounds[1:], strict=True):
                if hi > lo:
                    encryptor.update_into(plain[lo:hi].data.cast("B"), cipher[lo * 16 : hi * 16 + 15].data)
        return cipher[: m * 16].view("<u8")[0::2].copy()


def _secrets(secret: bytes | Sequence[bytes]) -> list[bytes]:
    """The AES key(s) as ``bytes``, checked once for both paths by the PRF's one rule
    (:func:`~polars_ppdm.kernels.prf._check_secret`: 16 or 32 bytes, a buffer of single
    bytes): a memoryview of four uint32 was drawn by the compiled sampler (16 bytes) and
    refused by pyca (4 items), review 64; AES-192 keys, which the NumPy path alone used to
    take, are refused as everywhere else."""
    if isinstance(secret, ONE_SECRET):
        return [_check_secret(secret)]
    return [_check_secret(s) for s in secret]


def _compiled_draws(
    law: str,
    secrets: Sequence[bytes],
    prefix: str,
    keys: np.ndarray,
    per_secret: int,
    t: int,
    shift: int,
    m: int = 0,
) -> np.ndarray | None:
    """The same draws by the compiled sampler (``native/src/dp_sampler.rs``: the same
    state machine, word for word, the GIL released), or None where it is not installed.
    ``secrets``: as :func:`_secrets` checked them."""
    native = _native.NATIVE
    if native is None:
        return None
    out = np.empty(len(keys), dtype=np.int64)
    keys = np.require(keys, np.uint64, ["C", "A"])  # contiguous and aligned (a view at an odd offset is not)
    native.discrete_noise_into(law, list(secrets), prefix, keys, per_secret, t, shift, m, out)
    return out


def _below(words: np.ndarray, bound: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact uniform integers in [0, bound) from 64-bit words (uint64 bound >= 1): a word
    at or above the largest multiple of ``bound`` below 2^64 is rejected (the sample
    draws again).  Returns (accepted, value)."""
    excess = (np.uint64(0) - bound) % bound  # 2^64 mod bound
    accepted = words <= ~excess
    return accepted, words % bound


def _key_words(keys: np.ndarray) -> np.ndarray:
    """The keys as uint64 (int64 keys by their two's complement bits)."""
    keys = np.asarray(keys)
    return keys.view(np.uint64) if keys.dtype == np.int64 else keys.astype(np.uint64, copy=False)


# The sampler's steps (one random word each).
_U, _D, _V, _B = 0, 1, 2, 3


class _LaplaceStep:
    """One step of Canonne, Kamath and Steinke's Algorithm 2 for every pending sample
    (the discrete Laplace of scale ``t / 2^shift``), one random word each: U draws a
    uniform in [0, t); D runs the Bernoulli(exp(-U/t)) loop, K = 1, 2, ... while
    uniform[0, tK) < U, accepted if K is odd; V counts Bernoulli(exp(-1)) successes
    (loops of uniform[0, K) == 0); B draws the sign.  Samples in states other than these
    four are left as they are (the discrete Gaussian adds its own)."""

    def __init__(self, t: int, shift: int, func: str) -> None:
        self.t, self.shift, self.func = np.uint64(t), np.uint64(shift), func
        self.k_limit = np.uint64((2**64 - 1) // t)

    def __call__(
        self, words: np.ndarray, state: np.ndarray, u: np.ndarray, k: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Returns (state, u, k, v, finished, magnitude, negative): ``finished`` marks the
        samples whose draw is ``-magnitude`` if ``negative`` else ``magnitude`` (their
        state is left at B)."""
        t64, one, zero = self.t, np.uint64(1), np.uint64(0)
        in_u, in_d, in_v, in_b = state == _U, state == _D, state == _V, state == _B
        if (in_d & (k >= self.k_limit)).any() or (in_v & (v >= self.k_limit - one)).any():  # below 1e-27
            msg = f"{self.func}: the exact sampler ran out of 64-bit range (probability < 1e-27)."
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
        y = ((u + t64 * v) >> self.shift) if self.shift < 64 else np.zeros_like(u)
        b_reject = in_b & negative & (y == zero)
        finished = in_b & ~b_reject
        u = np.where(new_u, value, u)
        k = np.where(new_u | d_accept | v_more, one, np.where(d_success | v_success, k + one, k))
        v = np.where(d_accept, zero, np.where(v_more, v + one, v))
        state = np.where(new_u, _D, state)
        state = np.where(d_accept, _V, np.where(d_reject | b_reject, _U, state))
        state = np.where(v_stop, _B, state).astype(np.int8)
        return state, u, k, v, finished, y, negative


def _compact(keep: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    """The pending samples' arrays, the finished ones dropped (``keep``: the others)."""
    return [a[keep] for a in arrays]


def _signed(magnitude: np.ndarray, negative: np.ndarray) -> np.ndarray:
    signed = magnitude.astype(np.int64)
    return np.where(negative, -signed, signed)


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
    ``stream_j = stream_id(f"dp/discrete_laplace/{stream:016x}/{t:x}/{shift}/{j}")``
    (:func:`_draw_stream`): noise of two scales over one key is independent, and a
    sample's value depends on nothing but its own key.

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
    return _geometric(secret, stream, keys, scale, two_sided=True)


def one_sided_geometric(secret: bytes, stream: int, keys: np.ndarray, scale: float) -> np.ndarray:
    """One-sided geometric noise (int64, >= 0), ``P(x) = (1 - a) a^x`` with ``a =
    exp(-1 / scale)``, sampled exactly: the magnitude of :func:`discrete_laplace`'s
    sampler (Canonne, Kamath and Steinke's Algorithm 2 before its sign), with words of
    its own (``dp/discrete_geometric/...`` streams).

    Report noisy max with it (the discrete exponential noise of permute-and-flip, McKenna
    and Sheldon 2020; Ding et al. 2021) is epsilon-DP at ``scale = 2 sensitivity /
    epsilon``: for fixed other draws a candidate wins on an upper set ``x >= r`` of its
    own draw, and ``P(X >= r) / P(X >= r + 2 sensitivity) <= a^(-2 sensitivity) =
    e^epsilon``.

    Examples
    --------
    >>> from polars_ppdm.kernels.prf import stream_id
    >>> noise = one_sided_geometric(bytes(range(16)), stream_id("demo"), np.arange(200_000), 2.0)
    >>> a = math.exp(-1 / 2.0)
    >>> int(noise.min()), round(float(noise.mean()) / (a / (1 - a)), 1)
    (0, 1.0)
    """
    return _geometric(secret, stream, keys, scale, two_sided=False)


def _geometric(secret: bytes, stream: int, keys: np.ndarray, scale: float, *, two_sided: bool) -> np.ndarray:
    """The exact sampler of :func:`discrete_laplace` (``two_sided``) or of its magnitude
    alone (:func:`one_sided_geometric`, whose samples finish at the sign step)."""
    name = "discrete_laplace" if two_sided else "one_sided_geometric"
    check_integer_scale(scale, name)
    secrets = [_check_secret(secret)]  # one key (the PRF's rule, for both paths)
    keys = _key_words(keys)
    t, shift = sampler_scale(scale)
    n = len(keys)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    prefix = (
        _laplace_prefix(stream, t, shift)
        if two_sided
        else f"dp/discrete_geometric/{stream:016x}/{t:x}/{shift}"
    )
    compiled = _compiled_draws("laplace" if two_sided else "geometric", secrets, prefix, keys, 0, t, shift)
    if compiled is not None:
        return compiled
    words_of = _Words(secrets, prefix)
    step = _LaplaceStep(t, shift, name)
    # The pending samples' state, compacted as samples finish (no gathers or scatters
    # per step: element-wise updates over the pending ones).
    index = np.arange(n)
    key = keys.copy()
    state = np.full(n, _U, dtype=np.int8)
    draw = np.zeros(n, dtype=np.int64)
    u = np.zeros(n, dtype=np.uint64)
    k = np.ones(n, dtype=np.uint64)
    v = np.zeros(n, dtype=np.uint64)
    while index.size:
        words = words_of(draw, key)
        draw += 1
        at_sign = state == _B
        state, u, k, v, finished, y, negative = step(words, state, u, k, v)
        if not two_sided:  # the magnitude is the draw: every sample at the sign step is done
            finished, negative = at_sign, np.zeros_like(negative)
        if finished.any():
            out[index[finished]] = _signed(y[finished], negative[finished])
            index, key, state, draw, u, k, v = _compact(~finished, index, key, state, draw, u, k, v)
    return out


#: The discrete Gaussian's supported sigma: [2^-7, 2^50] (~0.0078 to ~1.1e15).  Below,
#: the noise is zero with probability > 1 - 1e-3400 (and the sampler's exp(-1) loops
#: run long); above, the Laplace proposal's scale t = floor(sigma) + 1 nears the exact
#: Laplace sampler's limit (2^57: its integers must stay below 2^63).  Sums released in
#: grid units (2^-24 of their row bound) need sigmas far above 2^27.
MIN_GAUSSIAN_SIGMA = 2.0**-7
MAX_GAUSSIAN_SIGMA = 2.0**50


def check_gaussian_sigma(sigma: float, func: str) -> None:
    """Refuse a discrete Gaussian sigma that is not a finite number in [2^-7, 2^50].

    Examples
    --------
    >>> check_gaussian_sigma(3.0, "demo")
    >>> check_gaussian_sigma(float("nan"), "demo")
    Traceback (most recent call last):
    ...
    polars_ppdm.exceptions.InvalidParameterError: demo: the discrete Gaussian's sigma must be ...
    """
    number = isinstance(sigma, numbers.Real) and not isinstance(sigma, bool)
    if not (number and MIN_GAUSSIAN_SIGMA <= float(sigma) <= MAX_GAUSSIAN_SIGMA):  # nan: False
        msg = (
            f"{func}: the discrete Gaussian's sigma must be a finite number in [2^-7, 2^50] "
            f"(~0.0078 to ~1.1e15). Got {sigma!r} instead: change rho or the sensitivity."
        )
        raise InvalidParameterError(msg)


def _gaussian_sigma(sigma: float) -> tuple[int, int]:
    """``(m, shift)`` with ``sigma' = m / 2^shift``: sigma rounded UP to at most
    :data:`SCALE_BITS` significant bits (:func:`sampler_scale`'s rule), so that
    ``sigma'^2 = m^2 / 4^shift`` is a dyadic rational the sampler computes with exactly."""
    return sampler_scale(float(sigma))


def gaussian_sampler_sigma(sigma: float) -> float:
    """The sigma :func:`discrete_gaussian` actually samples with (an exact float).

    ``sigma`` rounded UP to ``m * 2^e`` with an integer ``m < 2^32`` (at most
    :data:`SCALE_BITS` significant bits; at most 2^-31 relative more): a larger sigma
    is more noise, so the rounding only adds privacy.  Idempotent.

    Examples
    --------
    >>> gaussian_sampler_sigma(3.0), gaussian_sampler_sigma(0.1) - 0.1 < 1e-10 * 0.1
    (3.0, True)
    >>> gaussian_sampler_sigma(0.1) >= 0.1
    True
    """
    check_gaussian_sigma(sigma, "gaussian_sampler_sigma")
    m, shift = _gaussian_sigma(sigma)
    return math.ldexp(m, -shift)


def _gaussian_prefix(stream: int, m: int, shift: int) -> str:
    return f"dp/discrete_gaussian/{stream:016x}/{m:x}/{shift}"


# The discrete Gaussian's own steps, after its Laplace proposal's U, D, V, B.
_E, _F = 4, 5


class _Acceptance:
    """The acceptance test of CKS Algorithm 3 as exact integers: a proposal ``Y`` is
    kept with probability ``exp(-gamma)``, ``gamma = (|Y| - sigma^2/t)^2 / (2 sigma^2)``.
    With ``sigma = m / 2^shift``: ``gamma = a^2 / den``, ``a = |Y| t 4^shift - m^2`` and
    ``den = 2 (m t 2^shift)^2`` (~2^129, so Python integers: NumPy has none that wide).
    Algorithm 1 draws it as ``floor(gamma)`` Bernoulli(exp(-1)) trials (state E), then
    Bernoulli(exp(-f)) for the fraction ``f = gamma - floor(gamma)`` (state F)."""

    def __init__(self, m: int, shift: int, t: int) -> None:
        self.scaled_t = t << (2 * shift)
        self.m2 = m * m
        self.den = 2 * ((m * t) << shift) ** 2

    def numerator(self, magnitude: int) -> int:
        """``a^2 mod den``: the fraction ``f = numerator / den`` of gamma."""
        a = magnitude * self.scaled_t - self.m2
        return (a * a) % self.den

    def __call__(self, magnitudes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(whole, fraction, exact)`` per |Y|: ``floor(gamma)``, ``floor(f 2^64)`` and
        whether ``f 2^64`` is an integer.  Computed once per distinct |Y|."""
        distinct, inverse = np.unique(magnitudes, return_inverse=True)
        whole, fraction, exact = [], [], []
        for y in distinct.tolist():
            a = y * self.scaled_t - self.m2
            g, rest = divmod(a * a, self.den)
            f, remainder = divmod(rest << 64, self.den)
            whole.append(g)
            fraction.append(f)
            exact.append(remainder == 0)
        if whole[-1] >= 2**63:  # |Y| above ~2^31 sigma: probability below 1e-1000
            msg = "discrete_gaussian: the exact sampler ran out of 64-bit range (probability < 1e-1000)."
            raise RuntimeError(msg)
        return (
            np.array(whole, dtype=np.uint64)[inverse],
            np.array(fraction, dtype=np.uint64)[inverse],
            np.array(exact, dtype=bool)[inverse],
        )


def _bernoulli_after_tie(words: list[int] | _TieWords, remainder: int, denominator: int) -> tuple[bool, int]:
    """Finish ``U < p`` after U's first 64 bits equalled p's (a tie: probability 2^-64).

    ``remainder / denominator`` is what is left of ``p 2^64`` after its integer part
    (``0 < remainder < denominator``); U's next 64-bit digits are ``words[0], words[1],
    ...``, compared with p's next digits until they differ (exact: p's binary expansion
    is computed, never rounded).  Returns (U < p, digits read).

    Examples
    --------
    >>> _bernoulli_after_tie([5, 0], 1, 2)  # p's next digit is 2^63 > 5
    (True, 1)
    >>> _bernoulli_after_tie([2**63, 7], 1, 2)  # equal, and p's expansion ends: U >= p
    (False, 1)
    """
    used = 0
    while True:
        digit, remainder = divmod(remainder << 64, denominator)
        word = words[used]
        used += 1
        if word != digit:
            return word < digit, used
        if remainder == 0:
            return False, used


class _TieWords:
    """A sample's words from a given draw on, read one at a time (ties only)."""

    def __init__(self, words_of: _Words, draw: int, key: np.uint64, owner: int) -> None:
        self._words_of, self._draw, self._key, self._owner = words_of, draw, key, owner

    def __getitem__(self, j: int) -> int:
        draws = np.array([self._draw + j], dtype=np.int64)
        keys = np.array([self._key], dtype=np.uint64)
        return int(self._words_of(draws, keys, np.array([self._owner]))[0])


def discrete_gaussian(
    secret: bytes | Sequence[bytes], stream: int, keys: np.ndarray, sigma: float
) -> np.ndarray:
    """Discrete Gaussian noise (int64), ``P(x) proportional to exp(-x^2 / (2 sigma^2))``
    over the integers, sampled exactly.

    ``sigma = sensitivity / sqrt(2 rho)`` gives rho-zCDP for integer-valued queries of
    that L2 sensitivity (Canonne, Kamath, Steinke 2020).  The sampler is their
    Algorithm 3: a discrete Laplace proposal ``Y`` of scale ``t = floor(sigma) + 1``
    (Algorithm 2, :func:`discrete_laplace`'s steps), kept with probability
    ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))`` by Algorithm 1, else drawn again -- all
    in exact integer arithmetic, no floating point, so every integer has exactly its
    probability and the bits are the same on every machine and engine.

    ``sigma`` is first rounded UP to :func:`gaussian_sampler_sigma`: ``m / 2^shift``
    with an integer ``m < 2^32`` (at most :data:`SCALE_BITS` significant bits, at most
    2^-31 relative more noise, which only adds privacy), so ``sigma^2`` is a dyadic
    rational; the law drawn is exactly the discrete Gaussian of that sigma.

    A sample's j-th random word is word 0 of AES(secret, stream_j || key) with
    ``stream_j = stream_id(f"dp/discrete_gaussian/{stream:016x}/{m:x}/{shift}/{j}")``:
    never a word of :func:`discrete_laplace` or of another sigma, and a sample's value
    depends on nothing but its own key.  Each sample walks its own state machine (the
    proposal's U, D, V, B; E: the ``floor(gamma)`` Bernoulli(exp(-1)) trials, each a
    loop of uniform[0, K) == 0 from K = 2, as the draw for K = 1 always succeeds; F:
    Bernoulli(exp(-f)) for gamma's fraction f, A_K = Bernoulli(f / K) read off one word
    as ``U < f / K`` against ``floor(f 2^64) // K``, the rare tie on all 64 bits
    continued digit by digit), all pending samples advancing together.  Gamma's integers
    reach ~2^130: they are computed with Python integers once per distinct |Y|.

    Parameters
    ----------
    secret : bytes or sequence of bytes
        The AES key; or ``J`` AES keys, with ``keys`` of shape ``(J, n)``: row ``j`` is
        drawn under ``secret[j]``, exactly ``discrete_gaussian(secret[j], stream, keys[j],
        sigma)``, all rows advancing together (the per-step NumPy work is paid once, not
        ``J`` times: a continual release draws each node under its own key).
    stream : int
        The 64-bit stream word of the release (:func:`polars_ppdm.kernels.prf.stream_id`).
    keys : numpy.ndarray
        One 64-bit key per draw (uint64, or int64 by its bits).
    sigma : float
        The standard deviation parameter, in [2^-7, 2^50] (:func:`check_gaussian_sigma`).

    Returns
    -------
    numpy.ndarray
        int64 noise, one value per key (of the shape of ``keys``).

    Examples
    --------
    >>> from polars_ppdm.kernels.prf import stream_id
    >>> noise = discrete_gaussian(bytes(range(16)), stream_id("demo"), np.arange(200_000), 2.0)
    >>> noise.dtype.name, round(float(noise.var()) / discrete_gaussian_variance(2.0), 1)
    ('int64', 1.0)
    >>> bool((discrete_gaussian(bytes(range(16)), stream_id("demo"), np.arange(5), 2.0) == noise[:5]).all())
    True
    >>> two = discrete_gaussian([bytes(range(16)), bytes(16)], stream_id("demo"), np.arange(10).reshape(2, 5), 2.0)
    >>> bool((two[0] == noise[:5]).all())
    True

    References
    ----------
    Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020 (Algorithms 1, 2 and 3).
    """
    check_gaussian_sigma(sigma, "discrete_gaussian")
    shape = np.shape(keys)
    several = not isinstance(secret, ONE_SECRET)
    if several and (len(shape) != 2 or shape[0] != len(secret)):
        msg = (
            f"discrete_gaussian: with {len(secret)} secrets, keys must have shape "
            f"({len(secret)}, n); got {shape}."
        )
        raise InvalidParameterError(msg)
    per_secret = shape[1] if several else 0
    secrets = _secrets(secret)
    keys = _key_words(np.asarray(keys).reshape(-1))
    m, shift = _gaussian_sigma(sigma)
    t = (m >> shift) + 1  # floor(sigma) + 1
    n = len(keys)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out.reshape(shape)
    prefix = _gaussian_prefix(stream, m, shift)
    compiled = _compiled_draws("gaussian", secrets, prefix, keys, per_secret, t, shift, m)
    if compiled is not None:
        return compiled.reshape(shape)
    words_of = _Words(secrets, prefix)
    step = _LaplaceStep(t, 0, "discrete_gaussian")
    acceptance = _Acceptance(m, shift, t)
    one, two = np.uint64(1), np.uint64(2)
    index = np.arange(n)
    key = keys.copy()
    state = np.full(n, _U, dtype=np.int8)
    draw = np.zeros(n, dtype=np.int64)
    u = np.zeros(n, dtype=np.uint64)
    k = np.ones(n, dtype=np.uint64)
    v = np.zeros(n, dtype=np.uint64)
    y = np.zeros(n, dtype=np.uint64)  # the proposal's |Y| and sign, in E and F
    negative = np.zeros(n, dtype=bool)
    whole = np.zeros(n, dtype=np.uint64)  # exp(-1) trials left, in E
    fraction = np.zeros(n, dtype=np.uint64)  # floor(f 2^64), in E and F
    exact = np.zeros(n, dtype=bool)  # f 2^64 is an integer
    while index.size:
        # The pending samples stay in order, so their secrets' numbers stay sorted.
        words = words_of(draw, key, index // per_secret if several else None)
        draw += 1
        at_e, at_f = np.flatnonzero(state == _E), np.flatnonzero(state == _F)
        state, u, k, v, proposed, magnitude, sign = step(words, state, u, k, v)
        # E (on its samples only): one Bernoulli(exp(-1)) trial, A_K = (uniform[0, K) == 0)
        # for K = 2, 3, ...; it ends at the first A_K = 0 and passes if K is odd.
        ke = k[at_e]
        ok, value = _below(words[at_e], ke)
        e_pass = ok & (value != 0) & ((ke & one) == one)
        e_fail = ok & (value != 0) & ((ke & one) == 0)
        left = whole[at_e] - e_pass.astype(np.uint64)
        whole[at_e] = left
        k[at_e] = np.where(ok & (value == 0), ke + one, np.where(e_pass, np.where(left == 0, one, two), ke))
        state[at_e] = np.where(e_fail, _U, np.where(e_pass & (left == 0), _F, _E))
        # F: A_K = (U < f / K), U's first 64 bits against floor(f 2^64 / K) (= floor(floor(f 2^64) / K));
        # it ends at the first A_K = 0 and keeps the proposal if K is odd.
        kf, wf = k[at_f], words[at_f]
        bound = fraction[at_f] // kf
        f_more = wf < bound
        f_end = (wf > bound) | ((wf == bound) & exact[at_f] & (fraction[at_f] % kf == 0))
        for j in np.flatnonzero((wf == bound) & ~f_end).tolist():  # probability 2^-64 per word
            i = int(at_f[j])
            p_den = acceptance.den * int(kf[j])
            rest = (acceptance.numerator(int(y[i])) << 64) - int(bound[j]) * p_den
            owner = int(index[i]) // per_secret if several else 0
            below, used = _bernoulli_after_tie(_TieWords(words_of, int(draw[i]), key[i], owner), rest, p_den)
            draw[i] += used
            f_more[j], f_end[j] = below, not below
        odd_f = (kf & one) == one
        k[at_f] = np.where(f_more, kf + one, kf)
        state[at_f] = np.where(f_end & ~odd_f, _U, _F)
        # The proposals just drawn enter the acceptance test: E if gamma >= 1, else F.
        new = np.flatnonzero(proposed)
        if new.size:
            y[new], negative[new] = magnitude[new], sign[new]
            trials, fraction[new], exact[new] = acceptance(magnitude[new])
            whole[new] = trials
            k[new] = np.where(trials == 0, one, two)
            state[new] = np.where(trials == 0, _F, _E)
        done = at_f[f_end & odd_f]
        if done.size:
            out[index[done]] = _signed(y[done], negative[done])
            keep = np.ones(index.size, dtype=bool)
            keep[done] = False
            index, key, state, draw, u, k, v, y, negative, whole, fraction, exact = _compact(
                keep, index, key, state, draw, u, k, v, y, negative, whole, fraction, exact
            )
    return out.reshape(shape)


#: The quantiles sum the pmf term by term up to this sigma; above, the Euler-Maclaurin
#: formula gives the same sums in a few operations (its error is below 1e-20 relative:
#: what is left is erfc's and the summation's rounding, ~1e-16 and ~1e-13).
_SUMMED_SIGMA = 2.0**14


@functools.lru_cache(maxsize=8)
def _gaussian_tails(sigma: float) -> np.ndarray:
    """``T[m] = sum_{k >= m} exp(-k^2 / (2 sigma^2))`` for m = 0 .. L, summed from the far
    end (small terms first); the terms beyond ``L = 38.7 sigma`` underflow to 0.0."""
    count = math.ceil(38.7 * sigma) + 2
    k = np.arange(count, dtype=np.float64)
    terms = _libm_exp(-(k * k) / (2.0 * sigma * sigma))
    return np.cumsum(terms[::-1])[::-1]


def _libm_exp(x: np.ndarray) -> np.ndarray:
    """``exp`` of each value by the C library (``math.exp``), not ``np.exp``: NumPy's
    vectorised exp differs in the last bit between NumPy versions and CPUs, and the
    figures built on it (variances, interval quantiles) are published."""
    return np.fromiter(map(math.exp, x.tolist()), dtype=np.float64, count=len(x))


def _tail_euler_maclaurin(sigma: float, m: int) -> float:
    """``sum_{k >= m} f(k)``, ``f(x) = exp(-x^2 / (2 sigma^2))``, by Euler-Maclaurin:
    ``int_m^inf f + f(m)/2 - (B2/2!) f'(m) - (B4/4!) f'''(m) + R``, the integral
    ``sigma sqrt(pi/2) erfc(m / (sigma sqrt 2))``.  f's n-th derivative is
    ``f * O((x / sigma^2)^n + sigma^-n)``: for sigma >= 2^14 and the m of non-negligible
    mass (m < 38.7 sigma) the next term and R are below 1e-20 of the sum."""
    s2 = sigma * sigma
    f = math.exp(-(m * m) / (2.0 * s2))
    x = m / s2
    integral = sigma * math.sqrt(math.pi / 2) * math.erfc(m / (sigma * math.sqrt(2.0)))
    return integral + f / 2 + x * f / 12 + (3 * x / s2 - x**3) * f / 720


def _largest_true(holds: Callable[[int], bool], start: int) -> int:
    """The largest m >= 0 with ``holds(m)`` for a predicate true at 0 and then false
    from some m on, searched from a guess outwards (doubling steps) then by bisection."""
    lo = max(start, 0)
    if holds(lo):
        step, hi = 1, lo + 1
        while holds(hi):
            lo, step = hi, step * 2
            hi = lo + step
    else:
        hi, step = lo, 1
        lo = max(hi - 1, 0)
        while lo > 0 and not holds(lo):
            hi, step = lo, step * 2
            lo = max(hi - step, 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid
    return lo


def discrete_gaussian_variance(sigma: float) -> float:
    """Variance of :func:`discrete_gaussian` (the law of :func:`gaussian_sampler_sigma`).

    The pmf series ``sum k^2 exp(-k^2/2s^2) / sum exp(-k^2/2s^2)``, summed exactly
    (``math.fsum``) for sigma < 2, below sigma^2; from sigma = 2 on it is sigma^2 to
    double precision (the Poisson summation bound in the code).

    Examples
    --------
    >>> round(discrete_gaussian_variance(0.5), 6), discrete_gaussian_variance(3.0)
    (0.215013, 9.0)

    References
    ----------
    Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020 (the variance is below sigma^2).
    """
    check_gaussian_sigma(sigma, "discrete_gaussian_variance")
    s = gaussian_sampler_sigma(sigma)
    # Poisson summation: Var = s^2 (1 - 4 pi^2 s^2 S1 / S0) with S0 = 1 + 2 sum_j
    # exp(-2 pi^2 s^2 j^2) and S1 = 2 sum_j j^2 exp(-2 pi^2 s^2 j^2), j >= 1: below s^2,
    # by a relative 8 pi^2 s^2 exp(-2 pi^2 s^2), under 1e-30 for s >= 2 (exp(-79)) and
    # so far under a double's 2^-53: there the series sums to s^2 to the last bit (a
    # summation would only add its rounding), and below it is summed and kept <= s^2.
    if s >= 2:
        return s * s
    k = np.arange(1, math.ceil(40 * s) + 1, dtype=np.float64)  # exp(-800): beyond, nothing
    terms = _libm_exp(-(k * k) / (2 * s * s))
    return min(s * s, 2 * math.fsum((k * k * terms).tolist()) / (1 + 2 * math.fsum(terms.tolist())))


def discrete_gaussian_quantile(sigma: float, q: float) -> int:
    """The smallest integer x with ``P(X <= x) >= q`` for the law of
    :func:`discrete_gaussian` (of :func:`gaussian_sampler_sigma`): exact quantiles,
    for intervals of Gaussian releases.

    ``P(X <= x)`` is the pmf summed in float64, by symmetry from the tail sums
    ``T(m) = sum_{k >= m} exp(-k^2 / (2 s^2))``: ``P(X <= x) = T(-x) / Z`` for x < 0
    and ``1 - T(x + 1) / Z`` for x >= 0, ``Z = 2 T(0) - 1``; compared as
    ``T(m) >= q Z`` (``T(m) <= (1 - q) Z``), never by a subtraction from 1.  For
    s <= 2^14 every term is summed (from the tail inwards, up to 38.7 s where the terms
    underflow: the tail bound is exact); above, the Euler-Maclaurin formula gives the
    same sums to double precision in O(1) (:func:`_tail_euler_maclaurin`), so the
    quantile is fast up to sigma = 2^50.  The search starts at the normal law's
    quantile.

    Examples
    --------
    >>> discrete_gaussian_quantile(1.0, 0.975), discrete_gaussian_quantile(1.0, 0.025)
    (2, -2)
    >>> discrete_gaussian_quantile(1000.0, 0.975)  # the normal law's 1959.96
    1960

    References
    ----------
    Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020.
    """
    check_gaussian_sigma(sigma, "discrete_gaussian_quantile")
    if not 0 < q < 1:
        msg = f"discrete_gaussian_quantile: the probability q must be in (0, 1). Got {q!r} instead."
        raise InvalidParameterError(msg)
    s = gaussian_sampler_sigma(sigma)
    if s <= _SUMMED_SIGMA:
        tails = _gaussian_tails(s)

        def tail(m: int) -> float:
            return float(tails[m]) if m < len(tails) else 0.0

        total = 2 * float(tails[0]) - 1
    else:

        def tail(m: int) -> float:
            return _tail_euler_maclaurin(s, m)

        total = s * math.sqrt(2 * math.pi)  # 2 T(0) - 1, Euler-Maclaurin (and Poisson) exact
    guess = round(s * abs(NormalDist().inv_cdf(q)))
    if q <= 0.5:  # x = -(largest m with P(X >= m) >= q)
        target = q * total
        return -_largest_true(lambda m: tail(m) >= target, guess)
    target = (1 - q) * total  # x = largest m with P(X > m - 1) > 1 - q, i.e. T(m) > ...
    return _largest_true(lambda m: tail(m) > target, guess)


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
    """Variance of :func:`discrete_laplace`: ``2 alpha / (1 - alpha)^2``, ``alpha = exp(-1 / scale)``."""
    # 1 - alpha by expm1: at a fine grid's scale (millions of units) 1 - exp(-1/scale)
    # would keep about half of a double's digits.
    return 2 * math.exp(-1.0 / scale) / math.expm1(-1.0 / scale) ** 2


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

        w_0 = unit key (the 64-bit row key: integer bits, or a string's keyed hash)
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
