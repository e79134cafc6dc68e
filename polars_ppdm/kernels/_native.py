"""The compiled kernels (the optional ``polars_ppdm_native`` extension), when installed.

``NATIVE`` is the extension module, or None when it is not installed or the environment
variable ``PPDM_NATIVE`` is ``0``: then every kernel takes the NumPy / pyca-cryptography
path.  Both paths give the same bits (the pinned digests run on both); the compiled one
releases the GIL for each whole call, so Polars' threads encrypt side by side.  The
kernels read ``NATIVE`` at call time, so tests can switch paths in one process.

Examples
--------
>>> from polars_ppdm.kernels import _native
>>> _native.NATIVE is None or callable(_native.NATIVE.encrypt_into)
True
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["NATIVE", "load"]


def load() -> ModuleType | None:
    """The extension module, or None (not installed, or ``PPDM_NATIVE=0``)."""
    if os.environ.get("PPDM_NATIVE", "1").strip() == "0":
        return None
    try:
        return importlib.import_module("polars_ppdm_native")
    except ImportError:
        return None


NATIVE: ModuleType | None = load()
