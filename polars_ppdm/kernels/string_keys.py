"""Keyed 64-bit row keys of string keys: AES-CBC-MAC under the secret.

A string key (an e-mail, a patient id) must become the 64-bit row key of the PRF block.
An unkeyed hash (FNV-1a, as this library used before) lets anyone who picks their own id build one with
the same 64 bits as a neighbour's (a meet-in-the-middle search of ~2^32 steps for FNV-1a)
and then share that neighbour's coins and noise wherever their values are equal.  Under a
keyed hash no one without the secret can even compute a key, let alone steer two into one.

The construction is CBC-MAC with the length in the first block (a prefix-free encoding,
so it is a PRF for strings of any length, up to the birthday bound of AES)::

    s_0 = AES(secret, STRING_KEY_STREAM || len(utf8))
    s_j = AES(secret, s_(j-1) XOR c_j)      c_j = bytes 16(j-1) .. 16j - 1, zero-padded
    key = word 0 of s_m                      m = ceil(len / 16)

with 128-bit blocks as two little-endian 64-bit words, as everywhere in the PRF.  Two
distinct strings share a key with probability about 2^-64 per pair, which no one without
the secret can raise.  Version-stable; every engine (Polars, DuckDB's ``ppdm_key``, Spark)
calls this function.  NumPy over :func:`polars_ppdm.kernels.prf.encrypt_plain`, the rows
of a chunk advancing together; the last few long rows (and those at the very end of the
buffer) finish in one AES-CBC call each (the same chain: CBC with the state as its IV).
"""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from polars_ppdm.kernels._slices import slices
from polars_ppdm.kernels.prf import CHUNK_ROWS, encrypt_plain, stream_id

__all__ = ["STRING_KEY_STREAM", "keyed_string_keys"]

#: The stream word of the first block: none of the library's own draws uses it (a caller
#: holding the secret can name it, e.g. ``ppdm_prf_word(secret, 'row_key/string', n)`` is
#: the first block of every string of n bytes, as anyone with the secret computes any key).
STRING_KEY_STREAM = stream_id("row_key/string")

_BLOCK = 16
#: When this few rows still have chunks, each finishes in one AES-CBC call (OpenSSL, at
#: memory speed): a long key in a chunk of short ones costs one pass per 16 bytes otherwise,
#: a whole NumPy pass for one row (~1.4 MB/s).
_FEW_ROWS = 8


def keyed_string_keys(secret: bytes, offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """The keyed 64-bit row key of each of n byte strings (Arrow layout).

    Parameters
    ----------
    secret : bytes
        16 or 32 bytes: the secret of the draws these keys select.
    offsets : numpy.ndarray
        n + 1 start offsets into ``data``.
    data : numpy.ndarray
        The concatenated UTF-8 bytes, uint8.

    Returns
    -------
    numpy.ndarray
        n uint64 keys.

    Examples
    --------
    >>> import numpy as np
    >>> data = np.frombuffer(b"alicebobalice", dtype=np.uint8)
    >>> k = keyed_string_keys(bytes(16), np.array([0, 5, 8, 13]), data)
    >>> bool(k[0] == k[2]), bool(k[0] != k[1])
    (True, True)
    >>> bool((keyed_string_keys(bytes(range(16)), np.array([0, 5, 8, 13]), data) != k).all())
    True
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    data = np.asarray(data, dtype=np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    n = len(lengths)
    keys = np.empty(n, dtype=np.uint64)
    if n == 0:
        return keys
    # A little-endian 64-bit word at every byte offset (unaligned loads): a chunk is the
    # words at its start and 8 bytes on.  A string's last chunk reads up to 15 bytes past
    # its end: the strings ending in the buffer's last 16 bytes (at most 16 with bytes)
    # are finished by CBC over their own bytes instead (no copy of the buffer).
    words_at = np.ndarray((max(len(data) - 7, 0),), dtype="<u8", buffer=data, strides=(1,))
    near_end = offsets[1:] > len(data) - _BLOCK
    for start, stop in slices(n, CHUNK_ROWS):
        length = lengths[start:stop]
        first = np.empty((stop - start, 2), dtype="<u8")
        first[:, 0] = np.uint64(STRING_KEY_STREAM)
        first[:, 1] = length
        state = encrypt_plain(secret, first)
        # The rows that still have chunks, shrinking: the work is the number of chunks.
        rows = np.flatnonzero((length > 0) & ~near_end[start:stop])
        for row in np.flatnonzero((length > 0) & near_end[start:stop]).tolist():
            state[row] = _cbc_from(secret, state[row], data[starts[start + row] : offsets[start + row + 1]])
        j = 0
        while len(rows):
            if len(rows) <= _FEW_ROWS:
                for row in rows.tolist():
                    at = starts[start + row] + j * _BLOCK
                    state[row] = _cbc_from(secret, state[row], data[at : offsets[start + row + 1]])
                break
            left = length[rows] - j * _BLOCK
            at = starts[start + rows] + j * _BLOCK
            chunk = np.empty((len(rows), 2), dtype="<u8")
            chunk[:, 0] = words_at[at]
            chunk[:, 1] = words_at[at + 8]
            if (left < _BLOCK).any():  # zero the bytes past the string's end
                chunk &= _byte_masks(left)
            whole = len(rows) == stop - start
            chunk ^= state if whole else state[rows]
            if whole:
                state = encrypt_plain(secret, chunk)
            else:
                state[rows] = encrypt_plain(secret, chunk)
            rows = rows[left > _BLOCK]
            j += 1
        keys[start:stop] = state[:, 0]
    return keys


def _cbc_from(secret: bytes, state: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """The CBC-MAC state after ``rest`` (zero-padded to whole chunks) from ``state``: AES-CBC
    with the state as its IV, whose last ciphertext block is the last state."""
    padded = rest.tobytes() + bytes(-len(rest) % _BLOCK)
    encryptor = Cipher(algorithms.AES(secret), modes.CBC(state.astype("<u8").tobytes())).encryptor()
    last = (encryptor.update(padded) + encryptor.finalize())[-_BLOCK:]
    return np.frombuffer(last, dtype="<u8")


def _byte_masks(left: np.ndarray) -> np.ndarray:
    """(m, 2) words keeping the first ``min(left, 16)`` bytes of a 16-byte chunk."""
    bits = np.clip(left, 0, _BLOCK)[:, None] * 8 - np.array([0, 64])
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    # 1 << 64 is undefined in NumPy: whole words are taken apart.
    partial = (np.uint64(1) << np.clip(bits, 0, 63).astype(np.uint64)) - np.uint64(1)
    return np.where(bits >= 64, ones, np.where(bits <= 0, np.uint64(0), partial))
