"""Which privacy units may occur in more than one row: a screen in 2 bytes a unit.

``ppdm run`` refuses, before it reserves any budget, a table in which some unit holds
more distinct values of a randomized-response column than the step is charged for (each
distinct value is one more epsilon-LDP release of the unit: its coins are keyed by unit,
column and value).  A unit seen in one row holds one value; only the units seen in two
rows or more need the exact per-unit count.  This screen finds a superset of them in one
pass over the key hashes: a Bloom filter of :data:`BITS_PER_KEY` bits a key (each key
sets six bits of one 64-bit word), in which a key whose bits were all set already is
flagged.  A unit seen twice is always flagged, at its second row; a unit seen once is
flagged only by a false positive (0.095% of 1M to 100M distinct keys, measured), which
costs the exact count a few rows more.

The exact group-by over every unit it replaces held ~70 bytes a unit: 7 GB for a table
of 100M units (issue 30).  The filter holds 2 bytes a unit, at most :data:`MAX_WORDS`
words (256 MiB); a larger table is screened in :func:`passes`, each over the keys of
one residue of the hash.  The screen is the compiled kernel's
(``screen_repeats_into``, GIL released, safe on several threads at once); without it
:func:`screen` is None and every unit gets the exact count (the same verdict, in memory
that grows with the units).

Examples
--------
>>> import numpy as np
>>> found = screen(3)
>>> found is None or found.offer(np.array([7, 8, 7], dtype=np.uint64)).tolist() == [False, False, True]
True
"""

from __future__ import annotations

import math

import numpy as np

from polars_ppdm.kernels import _native

__all__ = ["BITS_PER_KEY", "MAX_WORDS", "RepeatScreen", "passes", "screen"]

#: Filter bits a key.
BITS_PER_KEY = 16
#: The largest filter, in 64-bit words (256 MiB).
MAX_WORDS = 1 << 25


class RepeatScreen:
    """A Bloom filter sized for ``keys`` keys (see the module), zeroed: its pages are
    touched as keys land on them."""

    def __init__(self, keys: int) -> None:
        self.bits = np.zeros(_words(keys), dtype=np.uint64)

    def offer(self, hashes: np.ndarray) -> np.ndarray:
        """Add the uint64 key ``hashes`` to the filter; True where a hash's bits were all
        set already (by an earlier key, or an earlier row of the same key)."""
        native = _native.NATIVE
        assert native is not None, "screen() gives a RepeatScreen only with the compiled kernels"
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        seen = np.empty(hashes.size, dtype=np.uint8)
        native.screen_repeats_into(self.bits, hashes, seen)
        return seen.view(np.bool_)


def _words(keys: int) -> int:
    return max(1, min(MAX_WORDS, math.ceil(max(keys, 1) * BITS_PER_KEY / 64)))


def passes(keys: int) -> int:
    """How many passes screen ``keys`` keys with a filter of at most :data:`MAX_WORDS`
    words each.

    >>> passes(100_000_000), passes(134_217_728), passes(1_000_000_000)
    (1, 1, 8)
    """
    return max(1, math.ceil(max(keys, 1) * BITS_PER_KEY / 64 / MAX_WORDS))


def screen(keys: int) -> RepeatScreen | None:
    """A screen for one pass over ``keys`` keys, or None without the compiled kernels."""
    if _native.NATIVE is None:
        return None
    return RepeatScreen(keys)
