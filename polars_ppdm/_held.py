"""Secret material that a query plan holds by handle: pickled, it is a handle, never itself.

A Polars plan keeps the Python functions of its ``map_batches`` steps, and
:meth:`polars.LazyFrame.serialize` pickles them with what they hold: the secret of a
disguise, or a spiral key (attack review 63 took a 32-byte secret out of a serialized
plan, and a spiral key out of the literals that ``explain()`` and Polars' own errors
print).  What such a function holds is registered here when it is pickled, and pickles
as a 64-bit handle (SHA-256 over a label and the material, from which nothing can be
recovered); unpickled in the same process it is the material again, and in another
process it is refused with a message saying why, as the compiled plugins' plans are
(:mod:`polars_ppdm.perturb._plugin`).  The SHA-256 is salted with 16 random bytes of this
process (:func:`handle_of`): a handle does not confirm a guess of a weak secret (review 67
recovered ``secret=4711`` from an unsalted one).

A plan that is never pickled keeps its material itself; at most ``MAX_HELD`` pickled ones
are kept here, the oldest dropped first, so that a process that pickles plans in a loop
does not keep every secret alive.

Spark ships its tasks' functions to other processes, which need the secret itself:
its front-end hands them :class:`~polars_ppdm.secret.Secret` objects, which pickle whole,
or plain key bytes (:func:`polars_ppdm.spark._engine.shipped_key`).

Examples
--------
>>> import pickle
>>> key = HeldKey(bytes(range(16)))
>>> bytes(range(16)) in pickle.dumps(key)
False
>>> pickle.loads(pickle.dumps(key)) == bytes(range(16))
True
"""

from __future__ import annotations

import collections
import hashlib
import os
import threading
from typing import Any

from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["MAX_HELD", "HeldKey", "handle_of", "held", "hold"]

MAX_HELD = 4096
_HELD: collections.OrderedDict[int, Any] = collections.OrderedDict()
_LOCK = threading.Lock()
_SALT = os.urandom(16)


def handle_of(label: bytes, material: bytes) -> int:
    """The 64-bit handle of ``material`` in this process (salted: see the module's docstring)."""
    digest = hashlib.sha256(b"polars_ppdm/held/" + _SALT + label + b"\x00" + material).digest()
    return int.from_bytes(digest[:8], "little")


def hold(label: bytes, material: bytes, value: Any) -> int:
    """Register ``value`` (whose secret content is ``material``) and return its handle."""
    handle = handle_of(label, material)
    with _LOCK:
        _HELD[handle] = value
        _HELD.move_to_end(handle)
        while len(_HELD) > MAX_HELD:
            _HELD.popitem(last=False)
    return handle


def held(handle: int, what: str) -> Any:
    """The value registered under ``handle``; refused when this process has none."""
    with _LOCK:
        value = _HELD.get(handle)
    if value is None:
        msg = (
            f"The {what} of this query is not known in this process: a query plan holds a handle to it, "
            "never the secret material, so a plan built in another process (or deserialized there) cannot "
            f"run here, nor one whose material was dropped after {MAX_HELD} newer ones. Build the query "
            "again in this process."
        )
        raise InvalidParameterError(msg)
    return value


class HeldKey(bytes):
    """Key bytes (a :class:`~polars_ppdm.secret.Secret`'s) that pickle as a handle.

    Everything that takes bytes takes it (it is bytes); only pickling differs."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return (_held_key, (hold(b"key", bytes(self), self),))


def _held_key(handle: int) -> HeldKey:
    return held(handle, "secret")
