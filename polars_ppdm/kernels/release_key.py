"""The key of one differentially private release: fresh noise whenever the data differ.

A release's noise is drawn under a key of its own, derived from the secret and a digest of
exactly the statistics the release adds noise to (its per-group counts and grid sums, its
bins' counts, its points), computed by the same pass that read them::

    digest = sum over rows r of word(r)  (mod 2^64)
    word(r) = chain of AES(secret, stream_id("dp/digest/" + str(j)) || (w XOR b_j)) over r's
              values b_j (64-bit patterns), from w = 0
    key = HMAC-SHA256(secret, "polars_ppdm/release/" || label || digest, little-endian)
          truncated to the secret's length

The sum is a multiset hash: it does not depend on row order, batches or partitions, so
every engine computes the same key; and it is keyed, so no one without the secret can find
two different tables with the same digest (each word is an AES output they cannot compute).

What this buys (DESIGN.md, "Randomness"):

* two releases over different data -- one row added, one value changed, the same table a
  night later -- draw independent noise: their difference is not the exact change;
* the identical release over the identical data reproduces its bits (a re-run publishes
  nothing new, and a ledger may let it cost nothing);
* the statistic is what the noise is added to, so the digest cannot differ from the data
  released (there is no second read to race with).

The label names the whole query, not only the function and its columns
(:func:`query_label`: every parameter that changes what the statistics mean or how the
noise is drawn -- bounds, bins, contribution bounds, aggregates, mechanism and budget).
With the function's name alone, two releases of one column under other bounds shared their
noise wherever their statistics happened to be equal: two histograms with edges 5 and 5.1
released identical counts unless someone's value lay between the edges, and fresh ones if
so -- a certain answer about that person, whatever the epsilons.

What it reveals: only whether the statistics of two releases of the same query are
identical, which two identical outputs would show anyway.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from polars_ppdm.kernels.prf import first_words, stream_id

__all__ = [
    "DIGEST_STREAM",
    "finish_digest",
    "query_label",
    "release_key",
    "row_words",
    "table_digest",
    "value_bits",
]

DIGEST_STREAM = "dp/digest"


def value_bits(values: np.ndarray) -> np.ndarray:
    """The 64-bit pattern of each value: integers as two's complement, floats as their
    IEEE-754 float64 bits (``-0.0`` as ``0.0``), Booleans as 0/1."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        as_double = np.ascontiguousarray(values, dtype=np.float64) + 0.0  # -0.0 -> 0.0
        return as_double.view(np.uint64)
    if values.dtype.kind == "b":
        return values.astype(np.uint64)
    if values.dtype.kind == "u":
        return values.astype(np.uint64, copy=False)
    return np.ascontiguousarray(values, dtype=np.int64).view(np.uint64)


def row_words(secret: bytes, columns: Sequence[np.ndarray]) -> np.ndarray:
    """The keyed word of every row of ``columns`` (64-bit patterns, :func:`value_bits`)."""
    word = None  # the chain starts at 0: the first column's bits as they are (no XOR pass)
    for j, column in enumerate(columns):
        bits = value_bits(column)
        word = first_words(secret, stream_id(f"{DIGEST_STREAM}/{j}"), bits if word is None else word ^ bits)
    return np.zeros(0, dtype=np.uint64) if word is None else word


def table_digest(secret: bytes, columns: Sequence[np.ndarray]) -> int:
    """The order-free keyed digest of a table given as columns of equal length.

    Examples
    --------
    >>> import numpy as np
    >>> a = table_digest(bytes(range(16)), [np.array([1, 2, 3]), np.array([0.5, 1.5, 2.5])])
    >>> b = table_digest(bytes(range(16)), [np.array([3, 1, 2]), np.array([2.5, 0.5, 1.5])])
    >>> a == b, a == table_digest(bytes(range(16)), [np.array([1, 2, 4]), np.array([0.5, 1.5, 2.5])])
    (True, False)
    """
    if not columns:
        msg = "table_digest needs at least one column."
        raise ValueError(msg)
    rows = len(columns[0])
    total = 0
    # In slices that stay in cache: whole-column temporaries (the bits, the words) cost
    # more in page faults than the AES itself.
    for start in range(0, rows, _DIGEST_SLICE):
        words = row_words(secret, [np.asarray(c)[start : start + _DIGEST_SLICE] for c in columns])
        total += int(np.sum(words, dtype=np.uint64))
    return finish_digest(secret, total % 2**64, rows)


_DIGEST_SLICE = 1 << 16


def finish_digest(secret: bytes, word_sum: int, rows: int) -> int:
    """The digest from the sum of the rows' words (any order, any partial sums: an engine
    that adds them per partition passes their total) and the number of rows: one more
    word, of the count, so that tables of different sizes differ even if their words
    happened to add up alike."""
    count = first_words(secret, stream_id(f"{DIGEST_STREAM}/rows"), np.array([rows], dtype=np.uint64))
    return (int(word_sum) + int(count[0])) % 2**64


def query_label(name: str, parameters: Mapping[str, Any]) -> str:
    """The label of a release's key: its ``name`` and every parameter of its query, in a
    canonical text (floats by their exact hexadecimal form, strings quoted, sequences in
    order), so that two queries that differ in anything draw apart.

    Examples
    --------
    >>> query_label("dp_histogram(age)", {"bins": 10, "bounds": (0.0, 100.0)})
    'dp_histogram(age)?bins=10&bounds=[0x0.0p+0,0x1.9000000000000p+6]'
    """
    return name + "?" + "&".join(f"{key}={_canonical(value)}" for key, value in sorted(parameters.items()))


def _canonical(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return (float(value) + 0.0).hex()  # -0.0 and 0.0: one bound
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_canonical(k)}:{_canonical(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence | np.ndarray):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    msg = f"query_label: no canonical text for a {type(value).__name__}."
    raise TypeError(msg)


def release_key(secret: bytes, label: str, digest: int) -> bytes:
    """The AES key of one release's noise: HMAC-SHA256 of the label and the digest under
    the secret, as long as the secret (16 or 32 bytes).

    Examples
    --------
    >>> k1 = release_key(bytes(range(16)), "dp_histogram(age)", 1)
    >>> len(k1), k1 == release_key(bytes(range(16)), "dp_histogram(age)", 2)
    (16, False)
    """
    message = b"polars_ppdm/release/" + label.encode("utf-8") + b"\x00" + int(digest).to_bytes(8, "little")
    return hmac.new(secret, message, hashlib.sha256).digest()[: len(secret)]
