"""Randomized response: the disguise and the unbiased estimators, in NumPy.

Disguise (k-ary generalised randomized response, Warner 1965; MASK for binary
attributes): a value is kept with probability p, otherwise replaced by one of the other
k - 1 categories uniformly.  For k = 2 that is the related-question model of Du & Zhan
(KDD 2003): keep with probability p, else negate.

Coins (all engines call these kernels): row i draws at the PRF block keyed by its
stream, its unit key AND its value code, ``(value_stream(stream) XOR code_i) || key_i``
(:func:`polars_ppdm.kernels.prf.value_prf_words`, one AES call per row): a unit keeps its
bits while its value is unchanged (re-runs cannot be averaged), draws fresh, independent
coins when the value changes (the change is not revealed), and its several rows share a
coin only when their values are equal (so the XOR of two different values is not
revealed).  Whole-record disguise keys its one coin by the unit and the whole record
(:func:`whole_record_keep`).  The stream itself is the column's stream and the
mechanism's parameters (:func:`mechanism_stream`): a release of the same value under
another p or k draws independent coins.

Estimation: the observed category frequencies are ``lambda = M pi`` with
``M = p I + (1 - p)/(k - 1) (J - I)``; several attributes disguised independently give
``M_1 (x) ... (x) M_m`` (Kronecker).  We invert axis by axis on the count tensor, never a
(k^m x k^m) matrix.  Whole-record disguise (one coin per record, negate every binary
attribute) gives the pattern/complement pair system
``P*(E) = p P(E) + (1-p) P(E')``.

Standard errors are for the estimand "frequency in this table" (the randomness is the
disguise only): for any unbiased linear estimate ``theta = a . lambda_hat`` of
``sum_c w_c pi_c`` with 0/1 weights w, ``Var = ((a*a) . lambda - theta) / n``.  Derivation: row i contributes the
one-hot observation e_Y with ``E[e_Y] = M e_x``; summing ``a^T Cov(e_Y) a`` over rows
gives ``(a*a)^T M pi - sum_c w_c^2 pi_c``, and ``w^2 = w``, ``M pi = lambda``.

References
----------
Wen Han, *Randomization methods for privacy-preserving data mining*, master's thesis,
Zhejiang University, 2006, chapter 5 (paper 003 of this project).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from polars_ppdm.kernels import _native
from polars_ppdm.kernels.prf import (
    CHUNK_ROWS,
    _as_keys,
    _check_secret,
    bernoulli_threshold,
    bit_value_prf_words,
    chained_prf_words,
    choice_index,
    derived_stream,
    value_prf_words,
    value_stream,
)

__all__ = [
    "disguise_codes",
    "estimate_patterns",
    "inverse_rr_matrix",
    "keep_decisions",
    "keep_decisions_bits",
    "keep_from_epsilon",
    "mechanism_stream",
    "record_words",
    "rr_matrix",
    "subset_coefficients",
    "whole_record_estimate",
    "whole_record_keep",
]


def keep_from_epsilon(epsilon: float, k: int) -> float:
    """Keep probability of k-ary RR at local-DP epsilon: ``e^eps / (e^eps + k - 1)``.

    Computed as ``1 / (1 + (k - 1) e^-eps)``, which stays finite for any epsilon (the
    ratio form overflows to NaN above eps ~ 709), with the C library's ``exp`` that the
    ``ppdm_rr_p_from_epsilon`` SQL macro uses too.
    """
    return 1.0 / (1.0 + (k - 1) * math.exp(-float(epsilon)))  # float: -np.uint64 wraps


def rr_matrix(p: float, k: int) -> np.ndarray:
    """The k x k disguise matrix ``M[observed, true]``.

    Examples
    --------
    >>> rr_matrix(0.8, 2).tolist()
    [[0.8, 0.19999999999999996], [0.19999999999999996, 0.8]]
    """
    off = (1.0 - p) / (k - 1)
    return np.full((k, k), off) + (p - off) * np.eye(k)


def inverse_rr_matrix(p: float, k: int) -> np.ndarray:
    """Closed-form inverse of :func:`rr_matrix` (requires p != 1/k).

    ``M = a I + b J`` with ``a = p - (1-p)/(k-1)``, ``b = (1-p)/(k-1)``, so
    ``M^-1 = (I - b/(a + k b) J) / a``.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.allclose(inverse_rr_matrix(0.7, 3) @ rr_matrix(0.7, 3), np.eye(3)))
    True
    """
    b = (1.0 - p) / (k - 1)
    a = p - b
    return (np.eye(k) - (b / (a + k * b)) * np.ones((k, k))) / a


def mechanism_stream(stream: int, k: int, threshold: int) -> int:
    """The stream of the coins of one randomized-response mechanism: ``stream`` (the
    column's) derived by the mechanism's parameters, k (0 for whole-record disguise) and
    the keep threshold (:func:`polars_ppdm.kernels.prf.bernoulli_threshold` of p).

    Two releases of one value under other parameters then draw independent coins.  With
    shared coins (one uniform compared with p1 < p2), two binary releases that differ
    would say that the one with the larger p told the truth: no finite epsilon.

    Examples
    --------
    >>> mechanism_stream(5, 2, bernoulli_threshold(0.8)) != mechanism_stream(5, 2, bernoulli_threshold(0.9))
    True
    """
    return derived_stream(stream, f"rr/k={int(k)}/keep-below={int(threshold)}")


def disguise_codes(
    codes: np.ndarray,
    k: int,
    p: float,
    secret: bytes,
    stream: int,
    keys: np.ndarray,
) -> np.ndarray:
    """Disguise integer category codes in [0, k) with k-ary randomized response.

    Row i draws at the block ``(value_stream(stream) XOR code_i) || key_i``, keyed by its
    unit and its value (:func:`polars_ppdm.kernels.prf.value_prf_words`).  It keeps its
    code when the Bernoulli(p) draw (word 0) says so; otherwise it takes ``j`` or
    ``j + 1`` with ``j = choice(k - 1)`` from word 1, skipping its own code, so the k - 1
    other categories are equally likely.  For k = 2 this is a flip.

    Examples
    --------
    >>> import numpy as np
    >>> from polars_ppdm.kernels.prf import stream_id
    >>> codes = np.zeros(100_000, dtype=np.int64)
    >>> out = disguise_codes(codes, 2, 0.9, bytes(16), stream_id("x"), np.arange(100_000))
    >>> bool(abs(out.mean() - 0.1) < 0.005)
    True

    One unit, the same value twice and another value: equal values share the coin.

    >>> one = disguise_codes(np.array([0, 0, 1] * 4), 2, 0.5001, bytes(16), 5, np.repeat(np.arange(4), 3))
    >>> bool((one[0::3] == one[1::3]).all())
    True
    """
    codes = np.asarray(codes)
    out = np.empty_like(codes)
    threshold = bernoulli_threshold(p)
    if threshold is None:
        out[:] = codes
        return out
    t = np.uint64(threshold)
    stream = mechanism_stream(stream, k, threshold)

    if k == 2:

        def consume(start, stop, words):
            lie = words[:, 0] >= t
            np.bitwise_xor(codes[start:stop], lie, out=out[start:stop], casting="unsafe")

    else:

        def consume(start, stop, words):
            lie = words[:, 0] >= t
            own = codes[start:stop]
            other = choice_index(words[:, 1], k - 1)
            other += other >= own
            out[start:stop] = np.where(lie, other, own)

    value_prf_words(secret, stream, codes, keys, consume)
    return out


def keep_decisions(codes: np.ndarray, p: float, secret: bytes, stream: int, keys: np.ndarray) -> np.ndarray:
    """The keep decisions of :func:`disguise_codes` alone (True: the row keeps its value),
    at the same value-keyed blocks: ``word 0 < bernoulli_threshold(p)``.

    For a binary column, ``value == kept`` is the disguise; the Boolean hot paths (Polars
    and DuckDB) apply it to their bitmaps.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([True, False, True])
    >>> kept = keep_decisions(codes, 0.8, bytes(16), 3, np.arange(3))
    >>> bool(np.array_equal(codes == kept, disguise_codes(codes, 2, 0.8, bytes(16), 3, np.arange(3))))
    True
    """
    codes = np.asarray(codes)
    out = np.empty(len(codes), dtype=bool)
    threshold = bernoulli_threshold(p)
    if threshold is None:
        out[:] = True
        return out
    stream = mechanism_stream(stream, 2, threshold)
    native = _native.NATIVE
    if native is not None and codes.dtype in (np.bool_, np.uint8) and len(codes) == len(keys):
        # One call without the GIL: the blocks, AES and the compare, per row.
        secret = _check_secret(secret)
        native.keep_codes_into(
            secret,
            value_stream(stream),
            np.ascontiguousarray(codes).view(np.uint8),
            np.ascontiguousarray(_as_keys(keys)),
            threshold,
            out.view(np.uint8),
        )
        return out
    value_prf_words(secret, stream, codes, keys, _keep_into(out, threshold))
    return out


def _keep_into(out: np.ndarray, threshold: int) -> Callable[[int, int, np.ndarray], None]:
    """A PRF consumer writing ``words[:, 0] < threshold`` into ``out[start:stop]`` (bool).

    It compares both words of each block (one contiguous, vectorised pass) into a
    scratch pair of bools per row, then keeps the first of each pair by reading the pair
    as a little-endian uint16 and truncating it to its low byte: about half the cost of
    comparing the strided words 0 alone.
    """
    below = np.uint64(threshold)
    scratch = np.empty((min(len(out), CHUNK_ROWS), 2), dtype=bool)
    target = out.view(np.uint8)

    def consume(start: int, stop: int, words: np.ndarray) -> None:
        pair = scratch[: stop - start]
        np.less(words, below, out=pair)
        np.copyto(target[start:stop], pair.view("<u2")[:, 0], casting="unsafe")

    return consume


def keep_decisions_bits(
    bits: np.ndarray, bit_offset: int, p: float, secret: bytes, stream: int, keys: np.ndarray
) -> np.ndarray:
    """:func:`keep_decisions` of a Boolean column given as its bitmap: value i is bit
    ``bit_offset + i`` of ``bits`` (uint8, least significant bit first, as Arrow and
    Polars store Booleans), one per key.  The same decisions as ``keep_decisions`` of
    the unpacked values, without one byte per row of them
    (:func:`polars_ppdm.kernels.prf.bit_value_prf_words`).

    Examples
    --------
    >>> import numpy as np
    >>> values = np.array([True, False, True, True, False])
    >>> bits = np.packbits(values, bitorder="little")
    >>> same = keep_decisions(values, 0.8, bytes(16), 3, np.arange(5))
    >>> bool(np.array_equal(keep_decisions_bits(bits, 0, 0.8, bytes(16), 3, np.arange(5)), same))
    True
    """
    out = np.empty(len(keys), dtype=bool)
    threshold = bernoulli_threshold(p)
    if threshold is None:
        out[:] = True
        return out
    stream = mechanism_stream(stream, 2, threshold)
    native = _native.NATIVE
    bits = np.asarray(bits)
    if native is not None and bits.dtype == np.uint8 and bits.ndim == 1 and int(bit_offset) >= 0:
        # One call without the GIL: each row's bit, its block, AES and the compare.
        secret = _check_secret(secret)
        native.keep_bits_into(
            secret,
            value_stream(stream),
            np.ascontiguousarray(bits),
            int(bit_offset),
            np.ascontiguousarray(_as_keys(keys)),
            threshold,
            out.view(np.uint8),
        )
        return out
    bit_value_prf_words(secret, stream, bits, bit_offset, keys, _keep_into(out, threshold))
    return out


#: Columns of a record per 64-bit record word (2 bits each: 0, 1, or 2 for a null).
RECORD_COLUMNS_PER_WORD = 32


def record_words(codes: list[np.ndarray], valid: list[np.ndarray | None]) -> list[np.ndarray]:
    """The record of binary columns as 64-bit words: column j of the record sets bits
    ``2 (j mod 32)`` and up of word ``j // 32`` to 0 (false), 1 (true) or 2 (null).

    Parameters
    ----------
    codes : list of numpy.ndarray
        One 0/1 (or bool) array per column, in the record's column order.
    valid : list of numpy.ndarray or None
        Per column, False where the value is null (its code is then ignored), or None.

    Examples
    --------
    >>> import numpy as np
    >>> [w.tolist() for w in record_words([np.array([1, 0]), np.array([1, 1])], [None, np.array([True, False])])]
    [[5, 8]]
    """
    n = len(codes[0]) if codes else 0
    words = []
    for first in range(0, len(codes), RECORD_COLUMNS_PER_WORD):
        word = np.zeros(n, dtype=np.uint64)
        for j in range(first, min(first + RECORD_COLUMNS_PER_WORD, len(codes))):
            bits = np.asarray(codes[j]).astype(np.uint64)
            mask = valid[j]
            if mask is not None:
                bits = np.where(mask, bits, np.uint64(2))
            word |= bits << np.uint64(2 * (j - first))
        words.append(word)
    return words


def whole_record_keep(
    secret: bytes, stream: int, keys: np.ndarray, records: list[np.ndarray], p: float
) -> np.ndarray:
    """The one coin per record of whole-record disguise (True: sent truthfully), keyed by
    the unit and the whole record: word 0 of the last block of
    :func:`polars_ppdm.kernels.prf.chained_prf_words` over the :func:`record_words`,
    compared with ``bernoulli_threshold(p)``.  A unit's rows with the same record share
    the coin; a changed record draws a fresh one.

    Examples
    --------
    >>> import numpy as np
    >>> rec = record_words([np.array([1, 1, 0]), np.array([0, 0, 0])], [None, None])
    >>> kept = whole_record_keep(bytes(16), 9, np.array([4, 4, 4]), rec, 0.5001)
    >>> bool(kept[0] == kept[1])
    True
    """
    keys = np.asarray(keys)
    out = np.empty(len(keys), dtype=bool)
    threshold = bernoulli_threshold(p)
    if threshold is None:
        out[:] = True
        return out
    below = np.uint64(threshold)

    def consume(start, stop, words):
        np.less(words[:, 0], below, out=out[start:stop])

    chained_prf_words(secret, mechanism_stream(stream, 0, threshold), keys, records, consume)
    return out


def _apply_along(tensor: np.ndarray, matrix: np.ndarray, axis: int) -> np.ndarray:
    moved = np.moveaxis(tensor, axis, 0)
    shape = moved.shape
    result = matrix @ moved.reshape(shape[0], -1)
    return np.moveaxis(result.reshape(shape), 0, axis)


def estimate_patterns(counts: np.ndarray, ps: list[float], ks: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Estimated true pattern frequencies and standard errors, per-attribute disguise.

    Parameters
    ----------
    counts : numpy.ndarray
        Observed count tensor of shape ``(k_1, ..., k_m)``.
    ps, ks : list
        Keep probability and number of categories of each axis.

    Returns
    -------
    frequency, std_error : numpy.ndarray
        Tensors of the same shape.  ``frequency`` sums to 1; entries may be negative
        (the estimator is unbiased, not constrained).

    Examples
    --------
    >>> import numpy as np
    >>> f, se = estimate_patterns(np.array([20.0, 80.0]), [0.8], [2])
    >>> np.round(f, 6).tolist()
    [0.0, 1.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum()
    if n == 0:
        nan = np.full(counts.shape, np.nan)
        return nan, nan.copy()
    observed = counts / n
    freq = observed
    squared = observed
    for axis, (p, k) in enumerate(zip(ps, ks, strict=True)):
        inverse = inverse_rr_matrix(p, k)
        freq = _apply_along(freq, inverse, axis)
        squared = _apply_along(squared, inverse * inverse, axis)
    variance = np.clip((squared - freq) / n, 0.0, None)
    return freq, np.sqrt(variance)


def subset_coefficients(ps: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Weights of the observed subset supports in a per-attribute itemset estimate.

    With ``alpha_j = -(1-p_j)/(2p_j-1)`` and ``beta_j = 1/(2p_j-1)`` the support of an
    itemset S is ``sum_{T subset S} prod_{S\\T} alpha prod_T beta * f(T)`` where f(T) is
    the observed share of rows having every item of T (f(empty) = 1); the second moment
    used by the standard error has ``alpha^2`` and ``beta^2 + 2 alpha beta``.

    Returns the two weight vectors over the 2^s subsets, indexed by bitmask (bit j set
    when item j of S is in T).
    """
    s = len(ps)
    mean_w = np.ones(1 << s)
    square_w = np.ones(1 << s)
    masks = np.arange(1 << s)
    for j, p in enumerate(ps):
        alpha = -(1.0 - p) / (2.0 * p - 1.0)
        beta = 1.0 / (2.0 * p - 1.0)
        has = (masks >> j) & 1 == 1
        mean_w *= np.where(has, beta, alpha)
        square_w *= np.where(has, beta * beta + 2.0 * alpha * beta, alpha * alpha)
    return mean_w, square_w


def whole_record_estimate(
    share_pattern: np.ndarray, share_complement: np.ndarray, p: float, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``P*(E) = p P(E) + (1-p) P(E')`` for P(E), with its standard error.

    Parameters
    ----------
    share_pattern, share_complement : numpy.ndarray
        Observed shares of rows matching the pattern E and its complement E'.
    p : float
        Probability that a record was sent unchanged.
    n : int
        Number of records.

    Examples
    --------
    >>> import numpy as np
    >>> est, se = whole_record_estimate(np.array([0.62]), np.array([0.38]), 0.8, 100)
    >>> round(float(est[0]), 6)
    0.7
    """
    share_pattern = np.asarray(share_pattern, dtype=np.float64)
    share_complement = np.asarray(share_complement, dtype=np.float64)
    a = p / (2.0 * p - 1.0)
    b = -(1.0 - p) / (2.0 * p - 1.0)
    estimate = a * share_pattern + b * share_complement
    if n == 0:
        return np.full_like(estimate, np.nan), np.full_like(estimate, np.nan)
    variance = (a * a * share_pattern + b * b * share_complement - estimate) / n
    return estimate, np.sqrt(np.clip(variance, 0.0, None))
