"""Randomized response and additive noise as compiled Polars expression plugins
(``native/src/plugin.rs``).

A ``map_batches`` step calls back into Python for every morsel and holds the GIL for its
glue, so Polars' threads queue behind each other (issue 30: a second thread gained 1.37x
at best).  A plugin runs inside Polars' threads without Python.  They serve where the
frame-level functions know the dtypes up front: :func:`polars_ppdm.rr_disguise` on a
Boolean column and :func:`polars_ppdm.add_noise` on a numeric one, each keyed by an
integer column (or by the row position).  Everything else (the expression namespace,
other dtypes, string keys), and every call without the compiled kernels
(``PPDM_NATIVE=0``), takes the ``map_batches`` path, with the same bits
(``tests/test_plugins.py``).

The query plan holds the plugin's arguments, and :meth:`polars.LazyFrame.serialize`
writes them out: so they carry a SHA-256 fingerprint of the secret, never the secret.
The extension keeps the secret in process memory under that handle; a plan taken to
another process cannot run there (the error says so) rather than run with another key.

Examples
--------
>>> import polars as pl
>>> from polars_ppdm.perturb._plugin import rr_boolean_plugin
>>> expr = rr_boolean_plugin(pl.col("b"), pl.col("id"), keep=0.8, secret=bytes(16), stream=1)
>>> expr is None or isinstance(expr, pl.Expr)
True
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import struct
from collections.abc import Iterator
from pathlib import Path

import polars as pl
from polars.plugins import register_plugin_function

from polars_ppdm._encoding import _WIDE_INTEGERS
from polars_ppdm._held import handle_of
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import _native
from polars_ppdm.kernels.noise import noise_grid, noise_stream
from polars_ppdm.kernels.portable_math import _minus_log_centres, _quarter_turn_cells
from polars_ppdm.kernels.prf import _check_secret, bernoulli_threshold, derived_stream, value_stream
from polars_ppdm.kernels.rr import mechanism_stream

__all__ = [
    "noise_plugin",
    "plugin_directory",
    "plugin_errors",
    "plugin_key_dtype",
    "rr_boolean_plugin",
    "secret_handle",
]


def plugin_directory(name: str = "rr_keep_bool") -> Path | None:
    """The folder of the compiled extension when it serves and exports plugin ``name``."""
    native = _native.NATIVE
    if native is None or native.__file__ is None or name not in native.plugins():
        return None
    _share_polars_allocator()
    return Path(native.__file__).parent


@functools.cache
def _share_polars_allocator() -> bool:
    """Hand Polars' allocator to the extension, once per process: the plugins' outputs
    are then allocated as Polars' own are, and freed pages are reused rather than given
    back to the kernel and faulted in again by the next query (``docs/speed.md``).
    False where this Polars exports no allocator capsule (the system's allocator serves)."""
    try:
        capsule = getattr(importlib.import_module("polars._plr"), "_allocator", None)
    except ImportError:  # a Polars whose compiled module is named otherwise
        capsule = None
    native = _native.NATIVE
    return native is not None and capsule is not None and native.register_polars_allocator(capsule)


def plugin_key_dtype(dtype: pl.DataType | type[pl.DataType]) -> bool:
    """Whether the plugin reads this key dtype: integers up to 64 bits (a 128-bit key is
    narrowed, or refused, by :func:`polars_ppdm._encoding.row_keys`)."""
    return dtype.is_integer() and dtype not in _WIDE_INTEGERS


def secret_handle(secret: bytes) -> int:
    """The handle of ``secret`` in the plan (registered with the extension): 64 bits of
    SHA-256 over this process's salt, a label and the secret, which reveal nothing
    usable about it (:func:`polars_ppdm._held.handle_of`)."""
    secret = _check_secret(secret)
    handle = handle_of(b"plugin-secret", secret)  # salted per process: confirms no guess
    native = _native.NATIVE
    if native is not None:
        native.register_secret(handle, secret)
    return handle


@contextlib.contextmanager
def plugin_errors() -> Iterator[None]:
    """Where the library collects itself (eager input, ``ppdm run``): a refusal from inside
    the query as :class:`~polars_ppdm.exceptions.InvalidParameterError` with the library's
    message alone (Polars appends the expression it was evaluating, which is cut here).

    A compiled plugin cannot raise a Python exception: Polars reports its refusal (a null
    key under a value, a NaN to noise, a secret unknown in this process) as a
    ``ComputeError`` wrapping the library's message.  A lazy query collected by the user
    raises that.  A check in Python in front of each plugin would raise the library's
    type there too, but measured at 0.052 -> 0.104 s at 2 threads for 10M x 3 rows (the
    callback per morsel serialises the threads again), so it is not made."""
    try:
        yield
    except InvalidParameterError as error:
        text = str(error)
        if _CONTEXT not in text:
            raise
        raise InvalidParameterError(text.split(_CONTEXT, 1)[0]) from None
    except pl.exceptions.ComputeError as error:
        text = str(error)
        if _PREFIX not in text or not any(name in text for name in ("rr_keep_bool", "add_noise_f64")):
            raise
        message = text.split(_PREFIX, 1)[1].split("\n\n", 1)[0]
        raise InvalidParameterError(message) from None


_PREFIX = "the plugin failed with message: "
_CONTEXT = "\n\nThis error occurred"


def rr_boolean_plugin(
    values: pl.Expr, keys: pl.Expr, *, keep: float, secret: bytes, stream: int
) -> pl.Expr | None:
    """Randomized response on a Boolean column keyed by an integer column, as the
    ``rr_keep_bool`` plugin; None where the compiled plugin is not available.

    The same bits as :func:`polars_ppdm.perturb.rr.disguise_series` on those dtypes: row i
    keeps its value where word 0 of ``AES((value_stream(stream) XOR bit_i) || key_i)`` is
    below ``bernoulli_threshold(keep)``; a null stays null; a null key under a value is an
    error naming the key column.
    """
    directory = plugin_directory()
    if directory is None:
        return None
    threshold = bernoulli_threshold(keep)
    coins = stream if threshold is None else mechanism_stream(stream, 2, threshold)
    args = struct.pack(
        "<QQQB", secret_handle(secret), value_stream(coins), threshold or 0, threshold is None
    )
    return register_plugin_function(
        plugin_path=directory,
        function_name="rr_keep_bool",
        args=[values, keys],
        kwargs={"args": args},
        is_elementwise=True,
        use_abs_path=True,
    )


def noise_plugin(
    values: pl.Expr, keys: pl.Expr, *, gaussian: bool, scale: float, secret: bytes, stream: int
) -> pl.Expr | None:
    """``x + r`` for a numeric column (cast to Float64) keyed by an integer column, as
    the ``add_noise_f64`` plugin; None where the compiled plugin is not available.

    The same bits as :func:`polars_ppdm.add_noise_expr`: the noise of
    :func:`polars_ppdm.kernels.noise.gaussian_noise` (or ``uniform_noise``) keyed by the
    unit and the value's float64 bits; a null stays null; NaN, infinities and a null
    key under a value are errors naming the column.
    """
    directory = plugin_directory("add_noise_f64")
    if directory is None:
        return None
    _register_noise_tables()
    coins = noise_stream(stream, gaussian=gaussian, scale=scale)
    steps = (derived_stream(coins, "unit"), derived_stream(coins, "part/0"))
    args = struct.pack("<QQQBdd", secret_handle(secret), *steps, gaussian, scale, noise_grid(scale))
    return register_plugin_function(
        plugin_path=directory,
        function_name="add_noise_f64",
        args=[values.cast(pl.Float64), keys],
        kwargs={"args": args},
        is_elementwise=True,
        use_abs_path=True,
    )


@functools.cache
def _register_noise_tables() -> None:
    """Hand the ``portable_math`` tables to the extension, once per process."""
    sines, cosines = _quarter_turn_cells()
    native = _native.NATIVE
    if native is not None:  # the caller found the plugin, so the extension serves
        native.register_noise_tables(_minus_log_centres(), sines, cosines)
