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
import sys
import warnings
from pathlib import Path
from types import ModuleType

__all__ = ["FUNCTIONS", "NATIVE", "load"]


#: The functions the kernels call.  An extension built from an older crate lacks some: it
#: is not used (with a warning naming the rebuild), rather than failing halfway through a
#: query with an AttributeError.
FUNCTIONS = (
    "encrypt_into",
    "prf_words_into",
    "keep_bits_into",
    "keep_codes_into",
    "chained_words_into",
    "noise_into",
    "discrete_noise_into",
    "register_secret",
    "register_polars_allocator",
    "plugins",
    "udf_rr_binary",
    "spacing_sums_into",
    "block_sums_into",
    "screen_repeats_into",
)


def load() -> ModuleType | None:
    """The extension module, or None (not installed, out of date, or ``PPDM_NATIVE=0``)."""
    if os.environ.get("PPDM_NATIVE", "1").strip() == "0":
        return None
    lacking = _features_lacking()
    if lacking:
        warnings.warn(
            f"The compiled kernels (polars_ppdm_native) were built for CPU features this CPU lacks "
            f"({', '.join(lacking)}): they are not loaded (they would stop the process with an illegal "
            "instruction). The pure-Python kernels are used (the same bits, slower); rebuild them on "
            "this machine with `make test` or `pip install ./native`.",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    try:
        module = importlib.import_module("polars_ppdm_native")
    except ImportError:
        return None
    missing = [name for name in FUNCTIONS if not hasattr(module, name)]
    if missing:
        warnings.warn(
            f"The installed compiled kernels (polars_ppdm_native) are older than this polars_ppdm: they "
            f"lack {', '.join(missing)}. The pure-Python kernels are used (the same bits, slower); "
            "rebuild them with `make test` or `pip install ./native`.",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return module


def _features_lacking(features: Path | None = None, cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The CPU features the extension was compiled for (``ppdm-native-features`` beside the
    environment, written by the Makefile) that this CPU's flags lack; empty when either
    file is absent (a build for any CPU, or a system without /proc/cpuinfo)."""
    features = Path(sys.prefix) / "ppdm-native-features" if features is None else features
    try:
        wanted = features.read_text().split()
        text = cpuinfo.read_text()
    except OSError:
        return []
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return [f for f in wanted if f not in flags] if flags else []


NATIVE: ModuleType | None = load()
