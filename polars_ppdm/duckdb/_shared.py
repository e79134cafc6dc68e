"""What every DuckDB UDF of the package needs: the one value of a constant argument, the
query's secret, an Arrow argument as one array or a Series.

DuckDB calls an Arrow UDF once per 2048-row vector and repeats a constant argument over
the vector; these helpers check and decode it once per query (byte comparisons over the
Arrow buffers), and resolve the secret afresh only when its text or what the text names
changes.  :mod:`~polars_ppdm.duckdb.scalar` and :mod:`~polars_ppdm.duckdb.group_by`
import them; this module imports neither.
"""

from __future__ import annotations

import functools
import os
import struct
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.secret import Secret, env_secret, resolve_secret

__all__ = [
    "constant",
    "one_array",
    "secret_of",
    "secret_of_source",
    "secret_of_text",
    "secret_source",
    "series",
]


def constant(arr: pa.Array | pa.ChunkedArray, name: str, func: str, *, optional: bool = False) -> Any:
    """The one value of a parameter column (DuckDB repeats a constant over the vector).

    ``optional``: an all-NULL column is None (a macro argument left at its NULL default).
    An error never shows the values received (the secret's, or a column's passed as an
    argument): only NULL, or that they differ between rows.
    Checked on the Arrow buffers: this runs once per 2048 rows, so a Polars query
    here (~0.2 ms) would cost more than the disguise itself.
    """
    arr = one_array(arr)
    slot = (func, name)
    last = _last_constants.get(slot)
    if last is not None and _as_last_time(arr, last):
        return last[3]
    nulls = arr.null_count
    if optional and nulls == len(arr):
        return None
    if nulls == 0:
        value = _repeated(arr)
        if value is not _DIFFERENT:
            if arr.offset == 0 and arr.type.num_fields == 0:
                _last_constants[slot] = (len(arr), arr.type, arr.buffers(), value)
            return value
    # Values that differ between rows (or a NULL in some) come from the rows: they are not
    # shown, whatever the argument (docs/privacy-model.md, "What an error may say").
    got = "NULL" if nulls == len(arr) else "values that differ between rows, or NULL in some (not shown)"
    msg = f"The {name!r} argument of {func} must be one non-null constant per query. Got {got} instead."
    raise InvalidParameterError(msg)


def one_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """DuckDB hands a UDF chunked arrays of one chunk: that chunk, without a copy."""
    if isinstance(arr, pa.ChunkedArray):
        return arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    return arr


_DIFFERENT = object()


# The last constant verified per (function, argument), with its length, type and buffers:
# DuckDB rebuilds the argument vectors for every 2048 rows, and a vector byte-equal to the
# last one holds the same value, so one memcmp per buffer replaces the checks and the
# decoding.  For the secret argument this keeps the text each function last saw ('env:NAME'
# names only the variable) until it sees another; a literal secret stays in memory no
# longer than the resolved one does in the PRF's key schedule (the last one used).
_last_constants: dict[tuple[str, str], tuple[int, pa.DataType, list[pa.Buffer | None], Any]] = {}


def _as_last_time(arr: pa.Array, last: tuple[int, pa.DataType, list[pa.Buffer | None], Any]) -> bool:
    """Whether ``arr`` is byte-equal to the array ``last`` was verified on (flat types at
    offset 0 only: a nested array's buffers do not show its children's offsets)."""
    if last[0] != len(arr) or arr.offset != 0 or last[1] != arr.type:
        return False
    for one, other in zip(arr.buffers(), last[2], strict=True):
        if one is not other and (one is None or other is None or not one.equals(other)):
            return False
    return True


def _repeated(arr: pa.Array) -> Any:
    """The value that every element of ``arr`` (no nulls) holds, or ``_DIFFERENT``.

    Byte comparisons over the Arrow buffers (a memcmp each, nothing allocated): this runs
    on every 2048-row vector for every constant argument, where a pyarrow.compute call
    costs ~20-70 us of dispatch and NumPy ~2-10 us.  Byte equality is value equality here,
    except that a NaN repeated counts as one value (the parameter's own check then refuses
    it by name) and 0.0 beside -0.0 as two (a column of signed zeros is no constant).
    Lists of anything but non-null strings are compared as Python values (slow, and rare).
    """
    n, kind = len(arr), arr.type
    if _is_text(kind):
        text = _periodic_strings(arr, arr.offset, n, 1)
        return _DIFFERENT if text is None else text.decode()
    if pa.types.is_floating(kind) or pa.types.is_integer(kind):
        width = kind.bit_width // 8
        data = arr.buffers()[1].slice(arr.offset * width, n * width)
        return arr[0].as_py() if _periodic(data, width) else _DIFFERENT
    if (
        (pa.types.is_list(kind) or pa.types.is_large_list(kind))
        and _is_text(kind.value_type)
        and arr.values.null_count == 0
    ):
        # A list of strings (categories, columns): even list offsets, then the values
        # repeat the first list's.
        itemsize = 4 if pa.types.is_list(kind) else 8
        offsets = arr.buffers()[1]
        first, stop = struct.unpack_from(_OFFSET_FORMAT[itemsize] * 2, offsets, arr.offset * itemsize)
        k = stop - first
        values = arr.values
        same = offsets.slice(arr.offset * itemsize, (n + 1) * itemsize).equals(
            _periodic_offsets(n, (0, k), first, itemsize)
        ) and (k == 0 or _periodic_strings(values, values.offset + first, n * k, k) is not None)
        return arr[0].as_py() if same else _DIFFERENT
    values = arr.to_pylist()
    return values[0] if all(value == values[0] for value in values) else _DIFFERENT


def _periodic(data: pa.Buffer, period: int) -> bool:
    """Whether ``data`` repeats its first ``period`` bytes: it equals itself shifted by
    one period (one memcmp, no copy)."""
    size = data.size
    return size <= period or data.slice(period).equals(data.slice(0, size - period))


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


_OFFSET_FORMAT = {4: "i", 8: "q"}


def _periodic_strings(strings: pa.Array, first: int, count: int, period: int) -> bytes | None:
    """The bytes of the first ``period`` of the ``count`` strings from physical index
    ``first`` if the rest repeat them, else None (``count`` a multiple of ``period``; no
    nulls among them)."""
    itemsize = 4 if pa.types.is_string(strings.type) else 8
    _, offsets, data = strings.buffers()
    bounds = struct.unpack_from(_OFFSET_FORMAT[itemsize] * (period + 1), offsets, first * itemsize)
    base, width, repeats = bounds[0], bounds[-1] - bounds[0], count // period
    shape = (0, width) if period == 1 else tuple(bound - base for bound in bounds)
    if not offsets.slice(first * itemsize, (count + 1) * itemsize).equals(
        _periodic_offsets(repeats, shape, base, itemsize)
    ):
        return None
    if width == 0:
        return b""
    text = data.slice(base, width * repeats)
    return text.slice(0, width).to_pybytes() if _periodic(text, width) else None


@functools.lru_cache(maxsize=64)
def _periodic_offsets(repeats: int, period: tuple[int, ...], base: int, itemsize: int) -> pa.Buffer:
    """Arrow offsets from ``base`` of ``repeats`` copies of one period whose own offsets
    (from 0) are ``period`` (lengths only, no value: nothing secret is cached)."""
    one = np.asarray(period[:-1], dtype=np.int64)
    steps = np.arange(repeats, dtype=np.int64)[:, None] * period[-1]
    offsets = np.append((steps + one).ravel(), repeats * period[-1]) + base
    return pa.py_buffer(offsets.astype(f"<i{itemsize}").tobytes())


def secret_of(arr: pa.Array | pa.ChunkedArray, func: str) -> Secret:
    """The secret of a query, resolved when its text or what the text names differs from
    the last call's: 'env:NAME' follows the variable and 'file:PATH' the file when a job
    rotates it between queries.  Errors never show the value (resolve_secret's do not
    either)."""
    return secret_of_text(str(constant(arr, "secret", func)))


def secret_of_text(text: str) -> Secret:
    """The secret named by the ``secret`` argument's text (:func:`secret_of` once the
    constant is read), cached by the text and the state of what it names."""
    # What the text stands for is part of the cache key, so a rotated variable or file is
    # read afresh, once: the secret is made from the value read.  The one cached secret
    # is no more than the PRF's buffers already keep (the last AES key schedule).
    return secret_of_source(*secret_source(text))


def secret_source(text: str) -> tuple[str, str | tuple[int, ...] | None]:
    """The secret text (stripped) and the state of what it names (the variable's value,
    the file's identity, size and times): what a cache of anything made from the secret
    must be keyed by, so that a rotated variable or file is a new key."""
    text = text.strip()
    return text, _source_state(text)


def secret_of_source(text: str, state: str | tuple[int, ...] | None) -> Secret:
    """The secret of :func:`secret_source`'s ``(text, state)``, made from that state (the
    variable's value read there), not read again."""
    return _resolved_secret(text, state)


def _source_state(text: str) -> str | tuple[int, ...] | None:
    """The variable's value for 'env:NAME'; for 'file:PATH' the file's identity, size,
    times, mode and owner (one stat per vector, where reading and checking the file would
    cost ~20 us): a new file, new content or a chmod reads it again (and checks it)."""
    if text.startswith("env:"):
        return _variable(text[4:])
    if text.startswith("file:"):
        try:
            info = os.stat(text[5:])
        except (OSError, ValueError):  # absent or unreadable: resolve_secret names the fault
            return None
        return (
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
            info.st_mode,
            info.st_uid,
        )
    return None


def _variable(name: str) -> str | None:
    try:
        return os.environ.get(name)
    except ValueError:  # a NUL in the name: no such variable (env_secret names the fault)
        return None


@functools.lru_cache(maxsize=1)
def _resolved_secret(text: str, state: str | tuple[int, ...] | None) -> Secret:
    if text.startswith("env:"):
        return env_secret(text[4:], state if isinstance(state, str) else None)
    return resolve_secret(text)  # 'file:PATH' too, read and checked by secret_files


def series(arr: pa.Array | pa.ChunkedArray, name: str) -> pl.Series:
    return pl.Series(name, arr)
