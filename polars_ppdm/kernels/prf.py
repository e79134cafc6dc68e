"""Keyed pseudo-random function: AES over (stream, row key) blocks.

Every random draw of the library is a pure function of ``(secret, stream, key)``:

* ``secret`` -- 16 or 32 bytes, the AES-128 / AES-256 key;
* ``stream`` -- a 64-bit label of the use (method, column, round), from :func:`stream_id`;
* ``key`` -- the 64-bit row key (a primary key, a string key's keyed hash
  (:mod:`polars_ppdm.kernels.string_keys`) or the row position).

The 16-byte plaintext block is ``stream || key``, both little-endian uint64; the AES
ciphertext gives two 64-bit words ``w0, w1`` per row.  AES under a secret key is a
pseudo-random permutation, so the words are unpredictable to anyone without the secret,
even one who knows the true values of many rows (which a non-cryptographic mixer with a
guessable secret is not).  Because a draw depends on nothing but its own block, results do
not depend on batch sizes, partitioning or row order: every engine calls these functions.

Derived draws (all exact functions of the words, documented so other engines can match):

* uniform double in [0, 1): ``(w0 >> 11) * 2**-53``;
* Bernoulli(p): ``uniform < p``, computed without floats as ``w0 < ceil(p * 2**53) << 11``;
* uniform choice among m values: ``floor(((w1 >> 11) * 2**-53) * m)``.

Perturbations (randomized response, additive noise) key their blocks by value too, so a
unit's draw is stable while its value is and fresh when it changes: :func:`value_prf_words`
(one AES call, a small value code in the stream half) and :func:`chained_prf_words` (an
AES chain over the unit key and 64-bit value words).

This module is pure NumPy plus pyca/cryptography, or the compiled kernels of
:mod:`polars_ppdm.kernels._native` where installed (the same bits, the GIL released); it
knows nothing of dataframes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
from collections.abc import Callable, Iterator
from types import ModuleType

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import _native
from polars_ppdm.kernels._slices import slices

__all__ = [
    "CHUNK_ROWS",
    "bernoulli",
    "bernoulli_threshold",
    "bit_value_prf_words",
    "chained_prf_words",
    "derived_stream",
    "encrypt_blocks",
    "encrypt_plain",
    "prf_words",
    "stream_id",
    "uniform",
    "unit_doubles",
    "value_prf_words",
    "value_stream",
]

#: Rows per chunk: 64k blocks = 1 MiB of plaintext, small enough to stay in cache.
CHUNK_ROWS = 1 << 16

_TWO_POW_53 = float(1 << 53)


def stream_id(label: str) -> int:
    """Map a stream label to the 64-bit stream word of the PRF block.

    The first 8 bytes (little-endian) of SHA-256 over ``b"polars_ppdm/stream/" + label``.
    Version-stable: the same label gives the same word in every release and engine.

    Examples
    --------
    >>> stream_id("smoker") == stream_id("smoker")
    True
    >>> stream_id("smoker") != stream_id("age")
    True
    """
    if not isinstance(label, str):
        msg = f"The 'stream' label must be a str. Got {label!r} instead."
        raise InvalidParameterError(msg)
    return _stream_word(label)


@functools.lru_cache(maxsize=4096)
def _stream_word(label: str) -> int:
    # Cached: a SQL UDF asks for it on every 2048-row vector (a SHA-256 costs ~2 us).
    digest = hashlib.sha256(b"polars_ppdm/stream/" + label.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


#: Buffer formats of single bytes, the only ones a secret may have.
_BYTE_FORMATS = ("B", "b", "c")


def _check_secret(secret: bytes | bytearray | memoryview) -> bytes:
    """The secret as ``bytes``: the one rule of every kernel, on the compiled and the
    NumPy path alike (both then use the bytes returned, never the object given).

    A secret is a bytes-like object of single bytes -- ``bytes``, ``bytearray``, a
    ``memoryview`` or array of format ``B``, ``b`` or ``c``, any shape or stride -- of 16
    or 32 bytes (AES-128 or AES-256).  A buffer of wider items (a memoryview of uint32)
    is refused, not cast: its bytes depend on the machine's byte order, and pyca and
    ``len`` count its items, not its bytes (review 64)."""
    if type(secret) is bytes:  # the common case, once per PRF call
        if len(secret) in (16, 32):
            return secret
        view = memoryview(secret)
    else:
        try:
            view = memoryview(secret)
        except TypeError:
            msg = (
                "The secret must be 16 or 32 bytes (AES-128 or AES-256): bytes, bytearray or a buffer of "
                f"format {'/'.join(_BYTE_FORMATS)}. Got type {type(secret).__name__}."
            )
            raise TypeError(msg) from None
    if view.format not in _BYTE_FORMATS:
        msg = (
            "The secret must be 16 or 32 bytes (AES-128 or AES-256): bytes, bytearray or a buffer of "
            f"format {'/'.join(_BYTE_FORMATS)}. Got type {type(secret).__name__}, format {view.format!r} "
            f"({view.nbytes} bytes)."
        )
        raise TypeError(msg)
    if view.nbytes not in (16, 32):
        msg = f"The secret must be 16 or 32 bytes (AES-128 or AES-256). Got {view.nbytes} bytes."
        raise ValueError(msg)
    return view.tobytes()


def _encryptor(secret: bytes) -> CipherContext:
    return Cipher(algorithms.AES(_check_secret(secret)), modes.ECB()).encryptor()


#: What ``_BlockBuffers.encrypt`` encrypts with: a pyca context, or the secret itself for
#: the compiled kernel (which expands the key per call: ~0.1 us with AES-NI).
_Encryptor = CipherContext | bytes


class _BlockBuffers:
    """Plaintext and ciphertext buffers of one chunk, reused across chunks and calls.

    The stream word of the plaintext blocks is rewritten only when the stream changes;
    each chunk copies only its keys into the key half, then encrypts with ``update_into``
    (no allocation per chunk).  A ``consume`` callback must not call the PRF again: it
    would overwrite the words it is reading.
    """

    def __init__(self, rows: int) -> None:
        self.plain = np.empty((rows, 2), dtype="<u8")
        self.stream: int | None = None
        self._secret: bytes | None = None
        self._encryptor: CipherContext | None = None
        # update_into needs len(data) + block_size - 1 bytes of room.
        self._cipher_raw = np.empty(rows * 16 + 15, dtype=np.uint8)
        self.cipher = self._cipher_raw[: rows * 16].view("<u8").reshape(rows, 2)
        # Byte views made once (slicing a memoryview is cheaper than making one per chunk).
        self._plain_bytes = self.plain.data.cast("B")
        self._cipher_bytes = self._cipher_raw.data

    def for_stream(self, stream: int) -> _BlockBuffers:
        if stream != self.stream:
            self.plain[:, 0] = np.uint64(stream)
            self.stream = stream
        return self

    def encryptor(self, secret: bytes) -> _Encryptor:
        """The AES-ECB context of ``secret``, kept while the secret stays the same: the key
        schedule costs ~45 us, as much as encrypting 20k blocks.  ECB carries no state
        between whole blocks, and the buffers are borrowed by one call at a time.  With
        the compiled kernel, the checked secret itself."""
        secret = _check_secret(secret)  # a copy: a bytearray changed later is not the key (review 52)
        if _native.NATIVE is not None:
            return secret
        if self._encryptor is None or secret != self._secret:
            self._encryptor = _encryptor(secret)
            self._secret = secret
        return self._encryptor

    def encrypt(self, encryptor: _Encryptor, keys: np.ndarray) -> np.ndarray:
        m = len(keys)
        self.plain[:m, 1] = keys
        if isinstance(encryptor, bytes):
            _compiled().encrypt_into(encryptor, self.plain[:m], self.cipher[:m])
        else:
            encryptor.update_into(self._plain_bytes[: m * 16], self._cipher_bytes[: m * 16 + 15])
        return self.cipher[:m]


def _compiled() -> ModuleType:
    """The compiled kernels (the caller checked ``_native.NATIVE``)."""
    native = _native.NATIVE
    assert native is not None
    return native


# Idle buffers, shared by all threads: one per concurrent call at most.  Not thread-local
# storage: Polars calls kernels from its own threads, whose Python thread state (and so
# any threading.local) lives only for one call, and fresh pages per batch cost more than
# the encryption.  list.pop and list.append are atomic.
_idle_buffers: list[_BlockBuffers] = []


def _take_buffers(stream: int | None) -> _BlockBuffers:
    """Idle buffers for ``stream`` (new ones when all are in use); give them back to
    ``_idle_buffers`` when done.  None: only the ciphertext half is used (the compiled
    kernel writes the words straight from the keys), so the plaintext is left as it is."""
    try:
        buffers = _idle_buffers.pop()
    except IndexError:
        buffers = _BlockBuffers(CHUNK_ROWS)
    return buffers if stream is None else buffers.for_stream(stream)


@contextlib.contextmanager
def _borrow_buffers(stream: int) -> Iterator[_BlockBuffers]:
    buffers = _take_buffers(stream)
    try:
        yield buffers
    finally:
        _idle_buffers.append(buffers)


def _as_keys(keys: np.ndarray) -> np.ndarray:
    keys = np.asarray(keys)
    if keys.dtype == np.uint64:
        return keys
    if keys.dtype.kind == "i":
        # Two's-complement bit pattern: -1 and 2**64 - 1 are the same key.
        return keys.astype(np.int64, copy=False).view(np.uint64)
    if keys.dtype.kind == "u":
        return keys.astype(np.uint64)
    msg = f"Row keys must be an integer array. Got dtype {keys.dtype} instead."
    raise TypeError(msg)


def encrypt_blocks(secret: bytes, stream: int, keys: np.ndarray) -> np.ndarray:
    """The raw PRF: AES(secret, stream || key) for every key, as an (n, 2) uint64 array.

    Parameters
    ----------
    secret : bytes
        16 or 32 bytes.
    stream : int
        The 64-bit stream word (see :func:`stream_id`).
    keys : numpy.ndarray
        Integer row keys; signed values are taken as their 64-bit two's complement.

    Examples
    --------
    >>> import numpy as np
    >>> w = encrypt_blocks(bytes(16), 0, np.array([0, 1], dtype=np.uint64))
    >>> w.shape, w.dtype.kind
    ((2, 2), 'u')
    """
    keys = _as_keys(keys)
    n = len(keys)
    out = np.empty((n, 2), dtype="<u8")
    if n == 0:
        return out
    with _borrow_buffers(stream) as buffers:
        enc = buffers.encryptor(secret)
        for start, stop in slices(n, CHUNK_ROWS):
            out[start:stop] = buffers.encrypt(enc, keys[start:stop])
    return out


def encrypt_plain(secret: bytes, plain: np.ndarray) -> np.ndarray:
    """AES-ECB of arbitrary 16-byte blocks: ``plain`` and the result are (n, 2) uint64,
    little-endian words (a chained MAC needs blocks that are not ``stream || key``).

    Examples
    --------
    >>> import numpy as np
    >>> plain = np.array([[5, 7]], dtype="<u8")
    >>> bool((encrypt_plain(bytes(16), plain) == encrypt_blocks(bytes(16), 5, np.array([7]))).all())
    True
    """
    secret = _check_secret(secret)
    plain = np.ascontiguousarray(plain, dtype="<u8")
    if _native.NATIVE is not None:
        out = np.empty_like(plain)
        if len(plain):
            _compiled().encrypt_into(secret, plain, out)
        return out
    raw = np.empty(plain.nbytes + 15, dtype=np.uint8)  # update_into needs a block's room
    _encryptor(secret).update_into(plain.data.cast("B"), raw.data)
    return raw[: plain.nbytes].view("<u8").reshape(plain.shape)


def prf_words(
    secret: bytes, stream: int, keys: np.ndarray, consume: Callable[[int, int, np.ndarray], None]
) -> None:
    """Drive the PRF chunk by chunk: ``consume(start, stop, words)`` for each chunk.

    ``words`` is an (m, 2) uint64 view of reused memory, valid only during the call;
    kernels write what they derive from it straight into their own outputs, so a whole
    batch never holds more than one chunk of ciphertext.
    """
    keys = _as_keys(keys)
    n = len(keys)
    if n == 0:
        return
    # Not _borrow_buffers and slices: a SQL UDF calls this per 2048 rows, where a context
    # manager and a generator cost a fifth of the encryption.  The compiled kernel needs no
    # plaintext: rewriting its stream half (64k rows) cost ~18 us a call of a few rows, so
    # it is written only when the encryptor (asked once) is the pure path's.
    buffers = _take_buffers(None)
    try:
        enc = buffers.encryptor(secret)
        if not isinstance(enc, bytes):
            buffers.for_stream(stream)
        if isinstance(enc, bytes):
            # The compiled kernel writes the words straight from the keys.
            keys = np.ascontiguousarray(keys)
            native = _compiled()
        for start in range(0, n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, n)
            if isinstance(enc, bytes):
                words = buffers.cipher[: stop - start]
                native.prf_words_into(enc, stream, keys[start:stop], words)
                consume(start, stop, words)
            else:
                consume(start, stop, buffers.encrypt(enc, keys[start:stop]))
    finally:
        _idle_buffers.append(buffers)


def first_words(secret: bytes, stream: int, keys: np.ndarray) -> np.ndarray:
    """Word 0 of the PRF block of every key, as uint64: a keyed random order (ties of
    the ECDF ranks, the rows a privacy unit keeps) or the DuckDB ``ppdm_prf_word``."""
    words = np.empty(len(keys), dtype=np.uint64)

    def consume(start, stop, block):
        words[start:stop] = block[:, 0]

    prf_words(secret, stream, keys, consume)
    return words


def bernoulli_threshold(p: float) -> int | None:
    """The word threshold T with ``w0 < T`` iff ``(w0 >> 11) * 2**-53 < p``; None if p >= 1."""
    if p >= 1.0:
        return None
    return math.ceil(p * _TWO_POW_53) << 11


def unit_doubles(words: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """PRF words to doubles in [0, 1): ``(w >> 11) * 2**-53``, the one conversion behind
    every uniform draw (53 bits: every value is exact and equally likely).  Converted
    as int64 (the same values below 2**53): without AVX-512 a CPU has no vector
    instruction for uint64 -> float64, and NumPy's emulation costs twice as much."""
    return np.multiply((words >> np.uint64(11)).view(np.int64), 1.0 / _TWO_POW_53, out=out)


def uniform(secret: bytes, stream: int, keys: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Uniform doubles in [0, 1) from word 0: ``(w0 >> 11) * 2**-53`` (into ``out``,
    a float64 array of len(keys), when given).

    Examples
    --------
    >>> import numpy as np
    >>> u = uniform(bytes(16), stream_id("demo"), np.arange(1000))
    >>> bool(((u >= 0) & (u < 1)).all())
    True
    """
    keys = _as_keys(keys)
    out = np.empty(len(keys), dtype=np.float64) if out is None else out

    def consume(start, stop, words):
        unit_doubles(words[:, 0], out=out[start:stop])

    prf_words(secret, stream, keys, consume)
    return out


def bernoulli(secret: bytes, stream: int, keys: np.ndarray, p: float) -> np.ndarray:
    """Bernoulli(p) booleans: True with probability p, i.e. ``uniform(...) < p``.

    Examples
    --------
    >>> import numpy as np
    >>> b = bernoulli(bytes(16), stream_id("demo"), np.arange(100_000), 0.25)
    >>> bool(abs(b.mean() - 0.25) < 0.01)
    True
    """
    out = np.empty(len(keys), dtype=bool)
    threshold = bernoulli_threshold(p)
    if threshold is None:
        _as_keys(keys)  # the same errors as with any p
        out[:] = True
        return out
    below = np.uint64(threshold)

    def consume(start, stop, words):
        np.less(words[:, 0], below, out=out[start:stop])

    prf_words(secret, stream, keys, consume)
    return out


def choice_index(words1: np.ndarray, m: int) -> np.ndarray:
    """Uniform index in [0, m) from word 1: ``floor(((w1 >> 11) * 2**-53) * m)``."""
    u = unit_doubles(words1)
    return np.floor(u * m).astype(np.int64)


# --- Draws keyed by (unit, value): perturbations that must not reveal change -----------------
#
# A perturbation keyed by the unit alone gives a unit's rows one coin (their XOR survives)
# and gives a unit whose value changed between two runs the same coin (the change is read
# off exactly).  Perturbations key their blocks by unit, stream and value instead (RAPPOR's
# memoisation): the same (unit, stream, value) gets the same draw, a different value an
# independent one.  Two constructions, both version-stable:
#
# * a small value code c (randomized response): one AES call,
#   block = (value_stream(stream) XOR c) || unit key   (value_stream_words);
# * any 64-bit value words b_1..b_m (real values, whole records): an AES chain,
#   w = word 0 of AES(derived_stream(stream, "unit") || unit key), then
#   block_j = AES(derived_stream(stream, "part/" + str(j - 1)) || (w XOR b_j)), w = word 0
#   of block_j, for j = 1..m; the draw is the last block   (chained_prf_words).
#   The unit key goes through AES before any value bits touch it, so nobody without the
#   secret can pick a value whose block equals another unit's block (a plain XOR of key and
#   value bits would let a participant collide with a neighbour's key and share its noise).


def derived_stream(stream: int, tag: str) -> int:
    """A stream word derived from another: the first 8 bytes (little-endian) of SHA-256 over
    ``b"polars_ppdm/derived-stream/" + stream (8 bytes, little-endian) + tag (UTF-8)``.

    Examples
    --------
    >>> derived_stream(stream_id("x"), "unit") != derived_stream(stream_id("x"), "value")
    True
    """
    return _derived_word(int(stream) & 0xFFFF_FFFF_FFFF_FFFF, tag)


@functools.lru_cache(maxsize=4096)
def _derived_word(stream: int, tag: str) -> int:
    data = b"polars_ppdm/derived-stream/" + stream.to_bytes(8, "little") + tag.encode("utf-8")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "little")


def value_stream(stream: int) -> int:
    """The base word of the value-keyed blocks of ``stream``: ``derived_stream(stream,
    "value")``.  Code c of a column draws at block ``(value_stream(stream) XOR c) || key``:
    for one stream, distinct codes give distinct blocks; the words of two different
    streams (or of a stream and any other stream word) coincide only by a 64-bit hash
    collision, with probability about k^2 * 2^-64 for k codes."""
    return derived_stream(stream, "value")


def _take_free_buffers() -> _BlockBuffers:
    """Idle buffers whose stream half the caller rewrites per row (give them back to
    ``_idle_buffers`` when done)."""
    try:
        buffers = _idle_buffers.pop()
    except IndexError:
        buffers = _BlockBuffers(CHUNK_ROWS)
    buffers.stream = None  # the stream half no longer holds one stream word
    return buffers


def _as_codes(codes: np.ndarray) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.dtype == np.bool_:
        return codes.view(np.uint8)
    if codes.dtype.kind not in "iu":
        msg = f"Value codes must be an integer or boolean array. Got dtype {codes.dtype} instead."
        raise TypeError(msg)
    return codes


def value_prf_words(
    secret: bytes,
    stream: int,
    codes: np.ndarray,
    keys: np.ndarray,
    consume: Callable[[int, int, np.ndarray], None],
) -> None:
    """:func:`prf_words` at the blocks ``(value_stream(stream) XOR code) || key``: one AES
    call per row, keyed by (stream, unit, value code).

    ``codes`` are small non-negative integers (booleans count as 0/1), one per key: the
    same code of the same key gives the same words, another code independent ones.

    Examples
    --------
    >>> import numpy as np
    >>> got = []
    >>> value_prf_words(bytes(16), 1, np.array([0, 1, 0]), np.array([7, 7, 7]), lambda a, b, w: got.append(w.copy()))
    >>> w = got[0]
    >>> bool((w[0] == w[2]).all()), bool((w[0] != w[1]).all())
    (True, True)
    """
    keys = _as_keys(keys)
    codes = _as_codes(codes)
    n = len(keys)
    if len(codes) != n:
        msg = f"value_prf_words needs one code per key. Got {len(codes)} codes for {n} keys."
        raise ValueError(msg)
    if n == 0:
        return
    base = np.uint64(value_stream(stream))
    buffers = _take_free_buffers()
    try:
        enc = buffers.encryptor(secret)
        staged = np.empty(min(n, CHUNK_ROWS), dtype=np.uint64)
        for start in range(0, n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, n)
            m = stop - start
            # Widen the codes contiguously, then one strided XOR into the stream half.
            np.copyto(staged[:m], codes[start:stop], casting="unsafe")
            np.bitwise_xor(staged[:m], base, out=buffers.plain[:m, 0])
            consume(start, stop, buffers.encrypt(enc, keys[start:stop]))
    finally:
        _idle_buffers.append(buffers)


#: Row i of a byte b of an LSB-first bitmap: ``_BIT_BYTES[b]`` holds bit i of b in its byte i
#: (as one little-endian uint64), so a lookup spreads 8 bits of a bitmap over 8 bytes.
_BIT_BYTES = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
_BIT_BYTES = _BIT_BYTES.view("<u8")[:, 0]

#: ``_BlockBuffers.stream`` while the stream half of the first r blocks holds one word
#: except in its low byte: ``r * _LOW_BYTE_FREE + (word >> 8)``.  Never a stream word
#: (those are below 2**64), so ``for_stream`` rewrites the half before any other use.
_LOW_BYTE_FREE = 1 << 64


def bit_value_prf_words(
    secret: bytes,
    stream: int,
    bits: np.ndarray,
    bit_offset: int,
    keys: np.ndarray,
    consume: Callable[[int, int, np.ndarray], None],
) -> None:
    """:func:`value_prf_words` with 0/1 codes read from a bitmap: code i is bit
    ``bit_offset + i`` of ``bits`` (uint8, least significant bit first: the Arrow and
    Polars Boolean layout), so ``bits`` need never be unpacked to one byte per row.  The
    same blocks ``(value_stream(stream) XOR code) || key`` and so the same words, chunk
    by chunk.

    A 0/1 code changes only the low byte of the stream word: each chunk writes just that
    byte of each block (the upper seven stay in the reused buffers between calls), from a
    table lookup per bitmap byte.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1], dtype=np.uint8)
    >>> bits = np.packbits(np.concatenate([[0, 0, 0], codes]), bitorder="little")
    >>> keys = np.arange(10, 20)
    >>> a, b = [], []
    >>> bit_value_prf_words(bytes(16), 1, bits, 3, keys, lambda s, e, w: a.append(w.copy()))
    >>> value_prf_words(bytes(16), 1, codes, keys, lambda s, e, w: b.append(w.copy()))
    >>> bool(np.array_equal(a[0], b[0]))
    True
    """
    keys = _as_keys(keys)
    bits = np.asarray(bits)
    if bits.dtype != np.uint8 or bits.ndim != 1:
        msg = f"bit_value_prf_words needs a one-dimensional uint8 bitmap. Got {bits.dtype} x {bits.shape}."
        raise TypeError(msg)
    n = len(keys)
    bit_offset = int(bit_offset)
    if bit_offset < 0 or len(bits) * 8 < bit_offset + n:
        msg = (
            f"bit_value_prf_words needs one bit per key: {n} keys from bit {bit_offset} "
            f"of a {len(bits)}-byte bitmap."
        )
        raise ValueError(msg)
    if n == 0:
        return
    base = value_stream(stream)
    # The low byte of (base XOR code) for 8 rows per bitmap byte.
    table = _BIT_BYTES ^ np.uint64(0x0101_0101_0101_0101 * (base & 0xFF))
    rows = min(n, CHUNK_ROWS)
    try:
        buffers = _idle_buffers.pop()
    except IndexError:
        buffers = _BlockBuffers(CHUNK_ROWS)
    try:
        # The upper bytes of the stream word stay from the last call when they can.
        filled, upper = divmod(buffers.stream or 0, _LOW_BYTE_FREE)
        if upper != base >> 8 or filled < rows:
            buffers.plain[:rows, 0] = np.uint64(base)
            buffers.stream = rows * _LOW_BYTE_FREE + (base >> 8)
        enc = buffers.encryptor(secret)
        low = buffers.plain.view(np.uint8)[:, 0]  # byte 0 of each block: the stream word's low byte
        spread = np.empty(rows // 8 + 2, dtype="<u8")
        spread_bytes = spread.view(np.uint8)
        for start in range(0, n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, n)
            m = stop - start
            first = bit_offset + start
            packed = bits[first >> 3 : (bit_offset + stop + 7) >> 3]
            np.take(table, packed, out=spread[: len(packed)], mode="clip")
            shift = first & 7
            np.copyto(low[:m], spread_bytes[shift : shift + m])
            consume(start, stop, buffers.encrypt(enc, keys[start:stop]))
    finally:
        _idle_buffers.append(buffers)


def chained_prf_words(
    secret: bytes,
    stream: int,
    keys: np.ndarray,
    parts: list[np.ndarray],
    consume: Callable[[int, int, np.ndarray], None],
) -> None:
    """:func:`prf_words` keyed by a unit key and 64-bit value words, chained through AES::

        w = word 0 of AES(secret, derived_stream(stream, "unit") || key)
        block_j = AES(secret, derived_stream(stream, "part/" + str(j - 1)) || (w XOR b_j)),
                  w = word 0 of block_j,  for j = 1..m  (b_j = parts[j - 1], uint64)
        consume(start, stop, block_m)

    1 + m AES calls per row.  The same key and value words give the same block; any other
    value words an independent one (within a unit, two values collide only if their words
    are equal; across units with probability 2^-64 that no one without the secret can
    steer, since the key's word is secret).

    Examples
    --------
    >>> import numpy as np
    >>> got = []
    >>> bits = np.array([1.5, 2.5, 1.5]).view(np.uint64)
    >>> chained_prf_words(bytes(16), 1, np.array([7, 7, 7]), [bits], lambda a, b, w: got.append(w.copy()))
    >>> w = got[0]
    >>> bool((w[0] == w[2]).all()), bool((w[0] != w[1]).all())
    (True, True)
    """
    keys = _as_keys(keys)
    n = len(keys)
    if not parts:
        msg = "chained_prf_words needs at least one array of value words."
        raise ValueError(msg)
    parts = [np.asarray(part) for part in parts]
    for part in parts:
        if part.dtype != np.uint64 or len(part) != n:
            msg = f"chained_prf_words needs uint64 value words, one per key ({n}). Got {part.dtype} x {len(part)}."
            raise ValueError(msg)
    if n == 0:
        return
    steps = [derived_stream(stream, "unit")] + [
        derived_stream(stream, f"part/{j}") for j in range(len(parts))
    ]
    buffers = _take_free_buffers()
    try:
        enc = buffers.encryptor(secret)
        if isinstance(enc, bytes):
            # The compiled kernel runs the whole chain of a chunk without the GIL.
            native = _compiled()
            keys = np.ascontiguousarray(keys)
            parts = [np.ascontiguousarray(part) for part in parts]
            for start in range(0, n, CHUNK_ROWS):
                stop = min(start + CHUNK_ROWS, n)
                words = buffers.cipher[: stop - start]
                native.chained_words_into(enc, steps, keys[start:stop], [p[start:stop] for p in parts], words)
                consume(start, stop, words)
            return
        word = np.empty(min(n, CHUNK_ROWS), dtype=np.uint64)
        for start in range(0, n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, n)
            m = stop - start
            buffers.for_stream(steps[0])
            word[:m] = buffers.encrypt(enc, keys[start:stop])[:, 0]
            for j, part in enumerate(parts):
                np.bitwise_xor(word[:m], part[start:stop], out=word[:m])
                buffers.for_stream(steps[j + 1])
                block = buffers.encrypt(enc, word[:m])
                if j + 1 < len(parts):
                    word[:m] = block[:, 0]
            consume(start, stop, block)
    finally:
        _idle_buffers.append(buffers)
