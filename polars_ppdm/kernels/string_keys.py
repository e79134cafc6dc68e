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
calls this function.  Pure NumPy over :func:`polars_ppdm.kernels.prf.encrypt_plain`.
"""

from __future__ import annotations

import numpy as np

from polars_ppdm.kernels._slices import slices
from polars_ppdm.kernels.prf import CHUNK_ROWS, encrypt_plain, stream_id

__all__ = ["STRING_KEY_STREAM", "keyed_string_keys"]

#: The stream word of the first block: no other use of the PRF has it.
STRING_KEY_STREAM = stream_id("row_key/string")

_BLOCK = 16


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
    # words at its start and 8 bytes on.  The last chunk of a string may run past the end
    # of the buffer, so the buffer needs 16 bytes of room (copied only when it has none).
    used = int(offsets[-1])
    if len(data) < used + _BLOCK:
        data = np.concatenate([data[:used], np.zeros(_BLOCK, dtype=np.uint8)])
    words_at = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    for start, stop in slices(n, CHUNK_ROWS):
        length = lengths[start:stop]
        first = np.empty((stop - start, 2), dtype="<u8")
        first[:, 0] = np.uint64(STRING_KEY_STREAM)
        first[:, 1] = length
        state = encrypt_plain(secret, first)
        # The rows that still have chunks, shrinking: the work is the number of chunks.
        rows = np.flatnonzero(length > 0)
        j = 0
        while len(rows):
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


def _byte_masks(left: np.ndarray) -> np.ndarray:
    """(m, 2) words keeping the first ``min(left, 16)`` bytes of a 16-byte chunk."""
    bits = np.clip(left, 0, _BLOCK)[:, None] * 8 - np.array([0, 64])
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    # 1 << 64 is undefined in NumPy: whole words are taken apart.
    partial = (np.uint64(1) << np.clip(bits, 0, 63).astype(np.uint64)) - np.uint64(1)
    return np.where(bits >= 64, ones, np.where(bits <= 0, np.uint64(0), partial))
