"""DuckDB front-end: Arrow UDFs over the same kernels, the ``sql/`` macros, a bulk path.

``register(con)`` adds to a connection (arguments named as in Python; DuckDB macros take
them by position or by name, ``epsilon := 1.0``; defaulted ones may be left out):

Row-wise perturbations, the same bits as Polars for the same secret, key and column name
(every coin and noise draw is keyed by the unit ``key``, the stream and the value, so an
unchanged value keeps its bits across runs and a changed one draws anew):

* ``ppdm_rr_disguise(x BOOLEAN, p, secret, key, stream, epsilon := NULL)`` --
  binary randomized response (cast 0/1 integers with ``x::BOOLEAN``; the cast makes any
  non-zero true, where the Polars expression refuses values other than 0 and 1, so check
  ``x IN (0, 1)`` first);
* ``ppdm_rr_disguise_k(x VARCHAR, categories VARCHAR[], p, secret, key, stream,
  epsilon := NULL)`` -- k-ary randomized response over a public domain;
* ``ppdm_rr_disguise_whole_record(x BOOLEAN, columns VARCHAR[], p, secret, key,
  epsilon := NULL, record := [...])`` -- whole-record randomized response: one coin per
  row for the group ``columns`` (its stream is
  :func:`~polars_ppdm.perturb.rr.whole_record_stream` of them), keyed by the unit and
  the row's values in the group, which ``record`` lists (BOOLEAN[], in the order of
  ``columns``; required, and ``x`` must be one of them).  Calling it on each column of
  the group with the same ``columns`` and ``record`` keeps or negates the row's columns
  together, as ``rr_disguise(df, columns, p=..., mode="whole_record", secret=...,
  key=...)``; each call draws the coin again (the same coin: the PRF is a function).
  Not epsilon-LDP for two or more columns (see :func:`polars_ppdm.rr_disguise`);
* ``ppdm_add_noise(x DOUBLE, scale, secret, key, stream, dist := 'gaussian')`` --
  additive noise (``dist`` 'gaussian': ``scale`` is the standard deviation; 'uniform':
  the half-width of [-scale, scale]); DOUBLE out, NULL stays NULL, NaN and infinities
  refused.

``stream`` is the column's name, and is required by ``ppdm_rr_disguise``,
``ppdm_rr_disguise_k`` and ``ppdm_add_noise`` (a NULL or missing stream is an error saying
what to pass): SQL cannot see the column's name, and one default stream for two columns
disguised in one query gave them the same coins (they flipped together).  The library
makes the stream of the draws from the name as the Polars function on that column does
(the name itself for randomized response, ``'add_noise/' + name`` for noise; the table
macros make theirs from their column arguments), so the same column name and secret give
Polars' bits in every engine without knowing how streams are named.  The full stream of
before, ``'add_noise/income'``, is refused with what to pass instead (``'income'``).
Errors name the column by this name.

Randomized response takes exactly one of ``p`` (keep probability, not 1/k) and
``epsilon`` (local DP; p = ``ppdm_rr_p_from_epsilon(epsilon, k)``, the bits of
:func:`polars_ppdm.rr_p_from_epsilon`).  ``ppdm_rr_disguise(smoker, 0.8, secret, id,
'smoker')`` is positional; ``ppdm_rr_disguise(smoker, epsilon := 1.0, secret := secret,
key := id, stream := 'smoker')`` the same with epsilon.  A missing ``secret``, ``key`` or
``stream`` is an error naming it.

The keyed randomness itself, for macros:

* ``ppdm_uniform(secret, stream VARCHAR, key BIGINT) -> DOUBLE`` and
  ``ppdm_prf_word(secret, stream, key) -> UBIGINT``: uniform in [0, 1), and the first
  64-bit word of the PRF block (the ties of ``ppdm_ecdf_resample``);
* ``ppdm_discrete_laplace(secret, stream, key, scale DOUBLE) -> BIGINT``: exact two-sided
  geometric noise of ``scale = sensitivity / epsilon``, keyed by (secret, stream, key)
  only -- a building block, not a release: the same arguments over changed data draw the
  same noise, which then cancels between two releases.  The DP macros
  (``ppdm_dp_histogram``, ``ppdm_dp_count``...) key theirs by a digest of the data they
  release (``ppdm_release_noise``); a query built on this function must put what
  differs between its releases into ``stream``.  Guessable secrets are refused;
* ``ppdm_discrete_gaussian(secret, stream, key, sigma DOUBLE) -> BIGINT``: the same for
  the Gaussian mechanism, exact discrete Gaussian noise of ``sigma = l2 / sqrt(2 rho)``
  (in [2^-7, 2^50]; the Gaussian DP macros draw theirs with ``ppdm_release_gaussian``);
* ``ppdm_key(s VARCHAR) -> BIGINT`` -- the FNV-1a 64-bit reduction of a string key, the
  one Polars applies to string key columns (``key := ppdm_key(email)`` equals Polars'
  ``key="email"``).

Every macro of ``sql/`` (pure SQL, each file documents its arguments): the corrections
``ppdm_rr_support_k(tbl, col, categories, p := NULL, epsilon := NULL)`` (k-ary, one
column), ``ppdm_rr_support_patterns(counts, p := NULL, epsilon := NULL)`` (binary,
per attribute; lists), ``ppdm_rr_support_whole_record(counts, p := NULL, epsilon :=
NULL)``, ``ppdm_rr_correct_share(observed_share, p := NULL, epsilon := NULL)``; the
epsilon conversions ``ppdm_rr_epsilon(p, k := 2)``, ``ppdm_rr_p_from_epsilon(epsilon,
k := 2)``; and the table macros ``ppdm_ecdf_resample(tbl, col, key, bins, secret)`` and
``ppdm_dp_histogram(tbl, col, low, high, bins, epsilon, secret, mechanism := 'laplace',
rho := NULL)`` (columns ``<col>_bin, <col>_low, <col>_high, count`` as in Polars); and
the DP aggregates per group with a privacy unit, ``ppdm_dp_count(tbl, group_col, ...)``,
``ppdm_dp_count_units(tbl, group_col, ...)`` (distinct privacy units),
``ppdm_dp_sum(tbl, group_col, value_col, contribution_bounds_per_row := [low, high],
...)``, ``ppdm_dp_avg(...)``, ``ppdm_dp_var_pop(...)``, ``ppdm_dp_stddev_pop(...)`` and
``ppdm_dp_percentile_cont(tbl, group_col, value_col, q, contribution_bounds_per_row :=
[low, high], candidates := 1001, ...)`` (``candidates``: a number of points or a list, as
``dp.quantile``'s) with BigQuery's names and option names (``epsilon``,
``privacy_unit_column``, ``max_groups_contributed``, ``max_rows_per_group``,
``public_groups`` (a list), ``delta``, ``secret``) and ``mechanism``, ``rho``: the same
numbers as :func:`polars_ppdm.dp_group_by` with that one aggregate (their keyed words and
noise come from :mod:`polars_ppdm.duckdb_group_by`).  Every DP macro takes
``mechanism := 'gaussian', rho := ...`` (and no epsilon) for the Gaussian mechanism, as
the Python functions' ``mechanism="gaussian", rho=...``: discrete Gaussian noise, rho-zCDP,
the same bits as Polars (the group-by macros need ``public_groups`` then), e.g.
``FROM ppdm_dp_histogram('t', 'age', 0, 100, 10, mechanism := 'gaussian', rho := 0.5,
secret := 'env:PPDM_SECRET')``.

:func:`register_spiral_key` adds a pure-SQL table macro for one log-spiral key.

``secret`` is a VARCHAR: 32/64 hex digits, ``'env:NAME'`` or ``'file:PATH'`` (a file of
mode 0600 as ``ppdm secret --output`` writes it, checked by
:func:`polars_ppdm.secret_files.read_secret_file`; either way the secret never appears in
SQL text or logs, and the variable's value or the file's identity, size, times and mode
are looked at on every call, per 2048-row vector, so a secret rotated between queries is
read afresh: rotate it between queries, never during one) or decimal digits (a guessable
integer secret, for tests); errors never show it.  ``key`` is a BIGINT row key and is
required: DuckDB has no stable row position in a parallel scan.
``ppdm_rr_disguise(smoker, p, secret, id, 'smoker')`` equals
``pl.col("smoker").ppdm.rr_disguise(p=p, secret=secret, key="id")`` bit for bit.

DuckDB calls a Python UDF once per 2048-row vector: ``ppdm_rr_disguise`` costs ~130 ns
per row on a 2-core EPYC, of which ~70 is DuckDB's own cost of calling any Python UDF of
its signature (``benchmarks/bench_rr.py`` measures both).  For big tables
:func:`rr_disguise_batches` streams Arrow record batches of a query through the kernel
instead, near NumPy speed.

Examples
--------
>>> import duckdb
>>> import polars as pl
>>> import polars_ppdm as ppdm
>>> con = ppdm.duckdb.register(duckdb.connect())
>>> df = pl.DataFrame({"id": [1, 2, 3], "a": [True, False, None], "b": [True, True, False]})
>>> sql = con.sql(
...     "SELECT id, ppdm_rr_disguise_whole_record(a, ['a', 'b'], 0.7, '9', id, record := [a, b]) AS a, "
...     "ppdm_rr_disguise_whole_record(b, ['a', 'b'], 0.7, '9', id, record := [a, b]) AS b FROM df ORDER BY id"
... ).pl()
>>> sql.equals(ppdm.rr_disguise(df, ["a", "b"], p=0.7, mode="whole_record", secret=9, key="id"))
True
"""

from __future__ import annotations

import functools
import os
import struct
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
from duckdb.func import ARROW, SPECIAL

from polars_ppdm._encoding import row_keys
from polars_ppdm._validation import is_count, keep_probability
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import check_gaussian_sigma, discrete_gaussian, discrete_laplace
from polars_ppdm.kernels.noise import gaussian_noise, uniform_noise
from polars_ppdm.kernels.prf import first_words, stream_id, uniform
from polars_ppdm.kernels.rr import keep_decisions
from polars_ppdm.kernels.spacings import BLOCK, block_offsets, block_totals, block_uniforms
from polars_ppdm.perturb.noise import check_drawable, check_noise
from polars_ppdm.perturb.rr import (
    _disguise_boolean,
    disguise_series,
    rr_disguise,
    whole_record_keep_series,
    whole_record_stream,
)
from polars_ppdm.perturb.spiral import SpiralKey
from polars_ppdm.secret import Secret, SecretLike, env_secret, require_strong_secret, resolve_secret

__all__ = ["register", "register_spiral_key", "rr_disguise_batches", "spiral_macro_sql", "sql_files"]

_POSITION = "__ppdm_position"


def sql_files() -> list[Path]:
    """The ``.sql`` macro files shipped with the package (one macro, or one family, per file)."""
    packaged = resources.files("polars_ppdm") / "sql"
    if packaged.is_dir():
        return sorted(Path(str(p)) for p in packaged.iterdir() if p.name.endswith(".sql"))
    # Editable install / source tree: the top-level sql/ folder.
    return sorted((Path(__file__).resolve().parent.parent / "sql").glob("*.sql"))


def _constant(
    arr: pa.Array | pa.ChunkedArray, name: str, func: str, *, optional: bool = False, reveal: bool = True
) -> Any:
    """The one value of a parameter column (DuckDB repeats a constant over the vector).

    ``optional``: an all-NULL column is None (a macro argument left at its NULL default).
    ``reveal=False`` (the secret): an error never shows the values received.
    Checked on the Arrow buffers: this runs once per 2048 rows, so a Polars query
    here (~0.2 ms) would cost more than the disguise itself.
    """
    arr = _one_array(arr)
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
    if nulls == len(arr):
        got = "NULL"
    elif not reveal:
        got = "values that differ between rows (not shown)"
    else:
        # The first distinct values of the whole vector (a change of value may lie past
        # any prefix of it); the error path only.
        got = ", ".join(list(dict.fromkeys(map(_sql_repr, arr.to_pylist())))[:3])
    msg = f"The {name!r} argument of {func} must be one non-null constant per query. Got {got} instead."
    raise InvalidParameterError(msg)


def _one_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """DuckDB hands a UDF chunked arrays of one chunk: that chunk, without a copy."""
    if isinstance(arr, pa.ChunkedArray):
        return arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    return arr


def _sql_repr(value: Any) -> str:
    return "NULL" if value is None else repr(value)


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


def _secret(arr: pa.Array | pa.ChunkedArray, func: str) -> Secret:
    """The secret of a query, resolved when its text or what the text names differs from
    the last call's: 'env:NAME' follows the variable and 'file:PATH' the file when a job
    rotates it between queries.  Errors never show the value (resolve_secret's do not
    either)."""
    text = str(_constant(arr, "secret", func, reveal=False)).strip()
    # What the text stands for is part of the cache key, so a rotated variable or file is
    # read afresh, once: the secret is made from the value read.  The one cached secret
    # is no more than the PRF's buffers already keep (the last AES key schedule).
    return _resolved_secret(text, _source_state(text))


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


def _stream(arr: pa.Array | pa.ChunkedArray, func: str, prefix: str = "") -> tuple[str, str]:
    """The column's name (the ``stream`` argument, required) and the stream of its draws,
    made from the name as the Polars function on that column makes its default stream
    (``prefix`` + name: ``'add_noise/'`` for noise, nothing for randomized response).

    SQL cannot see the name of the column passed as ``x``, so the caller gives it; a
    shared default (it was ``''``) made two columns disguised in one query with the same
    secret and key flip together.
    """
    column = _constant(arr, "stream", func, optional=True)
    if column is None:
        msg = (
            f"The 'stream' argument of {func} is required: it labels the draws of one column, and two "
            "columns on the same stream with the same secret and key would get the same coins. Pass "
            "stream := '<column name>' (e.g. 'smoker'): the library makes the stream from it as the Polars "
            "expression on that column does, so that SQL and Polars give the same bits. Got NULL instead."
        )
        raise InvalidParameterError(msg)
    column = str(column)
    if prefix and column.startswith(prefix):
        # The form documented before issue 27: taken as a column's name it would be other
        # noise than the runs before, silently (and two runs averaged undo noise).
        msg = (
            f"The 'stream' argument of {func} must be the column's name (the library makes the stream "
            f"'{prefix}<name>' from it, as Polars does). Got {column!r} instead; pass {column[len(prefix) :]!r}."
        )
        raise InvalidParameterError(msg)
    return column, prefix + column


def _series(arr: pa.Array | pa.ChunkedArray, name: str) -> pl.Series:
    return pl.Series(name, arr)


def _check_key(key: pa.Array | pa.ChunkedArray, values: pl.Series, func: str) -> pl.Series:
    """The key column, refused where it is NULL and the value is not (that row needs a
    draw, so a key; a macro's ``key`` left out is NULL everywhere).  The error names the
    user's column (``values``' name), which SQL knows only from its stream."""
    keys = _series(key, "key")
    if keys.null_count():
        missing = int((keys.is_null() & values.is_not_null()).sum())
        if missing:
            msg = (
                f"The 'key' argument of {func} must be the row-key column (BIGINT, or ppdm_key(text) for a "
                f"text key), with a key wherever the column {values.name!r} has a value. Got NULL in "
                f"{missing} such rows instead."
            )
            raise InvalidParameterError(msg)
    return keys


def _disguise_arrow(
    func: str,
    x: pa.Array,
    categories: Sequence[Any] | None,
    p: pa.Array,
    epsilon: pa.Array,
    secret: pa.Array,
    key: pa.Array,
    stream: pa.Array,
) -> pa.Array:
    if len(x) == 0:
        return pa.array([], type=x.type)
    p_value = _constant(p, "p", func, optional=True)
    epsilon_value = _constant(epsilon, "epsilon", func, optional=True)
    secret_key = _secret(secret, func).key
    column, label = _stream(stream, func)
    word = stream_id(label)
    if categories is None and pa.types.is_boolean(x.type):
        keep = _keep_probability(p_value, epsilon_value, 2, func)
        return _binary_disguise(func, x, column, key, keep, secret_key, word)
    values = _series(x, column)
    out = disguise_series(
        values,
        _check_key(key, values, func),
        p=p_value,
        epsilon=epsilon_value,
        categories=categories,
        secret=secret_key,
        stream=word,
        func=func,
    )
    return out.to_arrow()


def _binary_disguise(
    func: str, x: pa.Array, column: str, key: pa.Array, keep: float, secret: bytes, stream: int
) -> pa.BooleanArray:
    """``x`` kept where its row's Bernoulli(keep) draw (keyed by unit and value) says so,
    negated elsewhere; nulls stay null (:func:`polars_ppdm.perturb.rr.disguise_series` on a
    Boolean column).

    The common case runs on Arrow's buffers without a Polars round trip (two Series and an
    Arrow export cost ~20 us, as much as the disguise of 2048 rows): a vector starting on
    a byte boundary and a BIGINT key without NULLs.  Anything else takes Polars; the two
    give the same bits (tested).
    """
    x, key = _one_array(x), _one_array(key)
    if _plain_bitmaps(x, key):
        return _negated_where_not(
            x, keep_decisions(_bitmap_codes(x), keep, secret, stream, _bigint_keys(key))
        )
    values = _series(x, column)
    keys = _check_key(key, values, func)
    return _disguise_boolean(values, keys, keep=keep, secret=secret, stream=stream, func=func).to_arrow()


def _bitmap_codes(x: pa.BooleanArray) -> np.ndarray:
    """The value bits of a Boolean array starting on a byte boundary, one bool per row
    (under a null: whatever bit is there, a draw the output does not use)."""
    bits = x.buffers()[1]
    nbytes = (len(x) + 7) // 8
    packed = np.frombuffer(bits, dtype=np.uint8, count=nbytes, offset=x.offset // 8)
    return np.unpackbits(packed, count=len(x), bitorder="little").view(bool)


def _plain_bitmaps(x: pa.Array, key: pa.Array) -> bool:
    return (
        isinstance(x, pa.BooleanArray)
        and x.offset % 8 == 0
        and isinstance(key, pa.Int64Array)
        and key.null_count == 0
    )


# Per query, not per vector: the checks of p and epsilon cost ~1.5 us.  Errors are not cached.
_keep_probability = functools.lru_cache(maxsize=64)(keep_probability)


def _bigint_keys(key: pa.Int64Array) -> np.ndarray:
    """The keys' two's-complement bit patterns, as the PRF takes them (a view, no copy)."""
    return np.frombuffer(key.buffers()[1], dtype=np.uint64, count=len(key), offset=key.offset * 8)


def _negated_where_not(x: pa.BooleanArray, kept: np.ndarray) -> pa.BooleanArray:
    """``x`` where ``kept``, its negation elsewhere; nulls stay null (the validity bitmap is
    shared, and the bits under a null are never read)."""
    n, start = len(x), x.offset // 8
    validity, bits = x.buffers()
    nbytes = (n + 7) // 8
    flipped = np.packbits(kept, bitorder="little")
    np.bitwise_xor(flipped, np.frombuffer(bits, dtype=np.uint8, count=nbytes, offset=start), out=flipped)
    np.invert(flipped, out=flipped)  # x XOR NOT kept
    valid = validity.slice(start, nbytes) if x.null_count else None
    return pa.BooleanArray.from_buffers(
        pa.bool_(), n, [valid, pa.py_buffer(flipped)], null_count=x.null_count
    )


def _rr_binary_udf(x, p, epsilon, secret, key, stream):
    return _disguise_arrow("ppdm_rr_disguise", x, None, p, epsilon, secret, key, stream)


def _rr_kary_udf(x, categories, p, epsilon, secret, key, stream):
    cats = _constant(categories, "categories", "ppdm_rr_disguise_k")
    return _disguise_arrow("ppdm_rr_disguise_k", x, cats, p, epsilon, secret, key, stream)


def _rr_whole_record_udf(x, record, columns, p, epsilon, secret, key):
    """One coin per row for the column group ``columns``, keyed by the unit and the row's
    values ``record`` in the group: the coin of ``rr_disguise(..., mode="whole_record")``,
    whichever column of the group ``x`` is (kept where the coin says truthful, negated
    elsewhere; nulls stay null)."""
    func = "ppdm_rr_disguise_whole_record"
    if len(x) == 0:
        return pa.array([], type=pa.bool_())
    cols = _constant(columns, "columns", func)
    if not cols or any(not isinstance(c, str) for c in cols) or len(set(cols)) != len(cols):
        msg = (
            f"The 'columns' argument of {func} must be a non-empty list of distinct column names "
            f"(the group of binary columns sharing one coin per row). Got {cols!r} instead."
        )
        raise InvalidParameterError(msg)
    keep = _keep_probability(
        _constant(p, "p", func, optional=True), _constant(epsilon, "epsilon", func, optional=True), 2, func
    )
    secret_key = _secret(secret, func).key
    values = _series(x, "x")
    keys = _check_key(key, values, func)
    group = _record_columns(_one_array(record), cols, values, func)
    kept = whole_record_keep_series(
        group, keys, keep=keep, secret=secret_key, stream=stream_id(whole_record_stream(cols)), func=func
    )
    return (values == pl.Series(kept)).to_arrow()


def _record_columns(record: pa.Array, cols: list[str], x: pl.Series, func: str) -> list[pl.Series]:
    """The group's columns from the ``record`` lists (one BOOLEAN list per row, in the
    order of ``columns``), refused when a row has no list, a list of another length, or
    ``x`` is none of its values."""
    d, n = len(cols), len(record)
    if record.null_count or (np.asarray(record.value_lengths()) != d).any():
        msg = (
            f"The 'record' argument of {func} must list the row's values in the columns "
            f"{cols!r}, in that order (record := [{', '.join(cols)}]): the coin is keyed by the "
            f"whole record. Got NULL or a list of another length instead."
        )
        raise InvalidParameterError(msg)
    flat = pl.Series("record", record.flatten())
    group = [flat.gather_every(d, offset=j).alias(c) for j, c in enumerate(cols)]
    matches = pl.zeros(n, dtype=pl.Boolean, eager=True)
    for column in group:
        matches |= column.eq_missing(x)
    if not matches.all():
        msg = (
            f"The 'x' argument of {func} must be one of the columns listed in 'record' (the value "
            f"of one of {cols!r} in each row). Got a value that is not in its row's record instead."
        )
        raise InvalidParameterError(msg)
    return group


# dist -> kernel of polars_ppdm.add_noise (tests check it covers perturb.noise.DISTRIBUTIONS).
_NOISE_KERNELS = {"uniform": uniform_noise, "gaussian": gaussian_noise}
# The prefix of add_noise_expr's default stream, "add_noise/" + the column's name (tests
# check that SQL and Polars draw the same noise from the column's name).
_NOISE_STREAM = "add_noise/"


def _add_noise_udf(x, dist, scale, secret, key, stream):
    """``x + r`` with the noise of :func:`polars_ppdm.add_noise_expr` (same stream, same key)."""
    func = "ppdm_add_noise"
    if len(x) == 0:
        return pa.array([], type=pa.float64())
    dist, scale = check_noise(_constant(dist, "dist", func), _constant(scale, "scale", func), func)
    check_drawable(scale, func)
    column, label = _stream(stream, func, _NOISE_STREAM)
    values = _series(x, column)
    valid = values.is_not_null()
    if not np.isfinite(values.filter(valid).to_numpy()).all():
        msg = (
            f"The column {column!r} (the 'x' argument) of {func} must hold finite numbers or NULL. Got NaN "
            "or infinite values instead; replace them or make them NULL."
        )
        raise InvalidParameterError(msg)
    keys = row_keys(_check_key(key, values, func), func=func, required_rows=valid.to_numpy())
    noise = _NOISE_KERNELS[dist](
        _secret(secret, func).key, stream_id(label), keys, scale, values=values.fill_null(0.0).to_numpy()
    )
    return (values + pl.Series(noise)).to_arrow()


def _uniform_udf(secret, stream, key):
    func = "ppdm_uniform"
    if len(key) == 0:
        return pa.array([], type=pa.float64())
    secret, label = _secret(secret, func), _constant(stream, "stream", func)
    return pa.array(uniform(secret.key, stream_id(label), row_keys(_series(key, "key"), func=func)))


def _prf_word_udf(secret, stream, key):
    func = "ppdm_prf_word"
    if len(key) == 0:
        return pa.array([], type=pa.uint64())
    secret, label = _secret(secret, func), _constant(stream, "stream", func)
    return pa.array(first_words(secret.key, stream_id(label), row_keys(_series(key, "key"), func=func)))


def _discrete_laplace_udf(secret, stream, key, scale):
    if len(key) == 0:
        return pa.array([], type=pa.int64())
    func = "ppdm_discrete_laplace"
    secret, label = require_strong_secret(_secret(secret, func), func), _constant(stream, "stream", func)
    scale = _constant(scale, "scale", func)
    if not (isinstance(scale, float) and 0 < scale < float("inf")):
        msg = f"The 'scale' argument of {func} must be a finite float > 0 (sensitivity / epsilon). Got {scale!r} instead."
        raise InvalidParameterError(msg)
    keys = row_keys(_series(key, "key"), func=func)
    return pa.array(discrete_laplace(secret.key, stream_id(label), keys, scale))


def _discrete_gaussian_udf(secret, stream, key, sigma):
    if len(key) == 0:
        return pa.array([], type=pa.int64())
    func = "ppdm_discrete_gaussian"
    secret, label = require_strong_secret(_secret(secret, func), func), _constant(stream, "stream", func)
    sigma = _constant(sigma, "sigma", func)
    if not isinstance(sigma, float):
        msg = f"The 'sigma' argument of {func} must be a finite float > 0 (l2 / sqrt(2 rho)). Got {sigma!r} instead."
        raise InvalidParameterError(msg)
    check_gaussian_sigma(sigma, func)
    keys = row_keys(_series(key, "key"), func=func)
    return pa.array(discrete_gaussian(secret.key, stream_id(label), keys, sigma))


def _ecdf_offsets_udf(secret, stream, n):
    """The offset of every block of ranks of the sorted uniforms of ``ppdm_ecdf_resample``,
    then their total (:func:`~polars_ppdm.kernels.spacings.block_offsets`): one list per row,
    from one pass over the n + 1 draws."""
    func = "ppdm_ecdf_resample"
    if len(n) == 0:
        return pa.array([], type=pa.list_(pa.float64()))
    secret, label = _secret(secret, func), _constant(stream, "stream", func)
    count = int(_constant(n, "n", func))
    offsets, total = block_offsets(block_totals(secret.key, stream_id(label), count))
    one = np.append(offsets, total)
    starts = np.arange(len(n) + 1, dtype=np.int64) * len(one)
    return pa.LargeListArray.from_arrays(starts, np.tile(one, len(n)))


def _ecdf_uniforms_udf(secret, stream, n, block, offset, total):
    """The sorted uniforms of ``ppdm_ecdf_resample`` at the ranks of each ``block``
    (those below n), one list per row (:func:`~polars_ppdm.kernels.spacings.block_uniforms`)."""
    func = "ppdm_ecdf_resample"
    if len(block) == 0:
        return pa.array([], type=pa.list_(pa.float64()))
    secret, label = _secret(secret, func), _constant(stream, "stream", func)
    count, whole = int(_constant(n, "n", func)), float(_constant(total, "total", func))
    blocks = _series(block, "block").to_numpy()
    uniforms = block_uniforms(
        secret.key, stream_id(label), blocks, _series(offset, "offset").to_numpy(), whole
    )
    lengths = np.clip(count - blocks * BLOCK, 0, BLOCK)
    values = (
        uniforms.reshape(-1) if (lengths == BLOCK).all() else uniforms[np.arange(BLOCK) < lengths[:, None]]
    )
    return pa.LargeListArray.from_arrays(np.concatenate(([0], np.cumsum(lengths))), values)


def _key_udf(s):
    # NULL in, NULL out: the disguise UDFs accept a null key where the value is null too.
    series = _series(s, "s")
    words = row_keys(series, func="ppdm_key", required_rows=np.zeros(len(series), dtype=bool))
    return pa.array(words.view("int64"), mask=series.is_null().to_numpy() if series.null_count() else None)


# The SQL faces of the random UDFs: named arguments with defaults, so that
# ppdm_rr_disguise(x, 0.8, secret, id, 'x') and ppdm_rr_disguise(x, epsilon := 1.0,
# secret := secret, key := id, stream := 'x') both work (DuckDB fills defaulted
# parameters positionally too); the UDF refuses a missing secret, key or stream (NULL
# defaults, so that the error is ours and says what to pass, not DuckDB's binder error,
# which would also quote the SQL text and a secret written in it), and wants exactly one
# of p and epsilon.  ppdm_rr_disguise refuses x of another type than BOOLEAN by name (the
# check folds away at bind time; it was DuckDB's binder error naming _ppdm_rr_binary).
_MACROS = """
CREATE OR REPLACE MACRO ppdm_rr_disguise(x, p := NULL, secret := NULL, key := NULL, stream := NULL, epsilon := NULL) AS
    CASE WHEN typeof(x) NOT IN ('BOOLEAN', '"NULL"')
         THEN error('The ''x'' argument of ppdm_rr_disguise must be BOOLEAN (binary randomized response; 0/1 '
                    || 'integers as x::BOOLEAN). Got ' || typeof(x) || ' (the column '
                    || coalesce('''' || stream::VARCHAR || '''', 'passed as x') || ') instead; for categories '
                    || 'use ppdm_rr_disguise_k(x, categories, ...) with the column''s public categories.')
         ELSE _ppdm_rr_binary(TRY_CAST(x AS BOOLEAN), p, epsilon, secret, key, stream) END;
CREATE OR REPLACE MACRO ppdm_rr_disguise_k(
    x, categories, p := NULL, secret := NULL, key := NULL, stream := NULL, epsilon := NULL
) AS _ppdm_rr_kary(x, categories, p, epsilon, secret, key, stream);
CREATE OR REPLACE MACRO ppdm_rr_disguise_whole_record(
    x, columns, p := NULL, secret := NULL, key := NULL, epsilon := NULL, record := NULL
) AS _ppdm_rr_whole_record(x, record, columns, p, epsilon, secret, key);
CREATE OR REPLACE MACRO ppdm_add_noise(x, scale, secret, key, stream := NULL, dist := 'gaussian') AS
    _ppdm_add_noise(x, dist, scale, secret, key, stream);
"""


def register(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Register the polars_ppdm UDFs and ``sql/`` macros on a DuckDB connection.

    Examples
    --------
    >>> import duckdb
    >>> import polars_ppdm as ppdm
    >>> con = ppdm.duckdb.register(duckdb.connect())
    >>> con.sql("SELECT ppdm_rr_disguise(x, 1.0, '42', i, 'x') AS y FROM (VALUES (true, 1), (false, 2)) t(x, i)").fetchall()
    [(True,), (False,)]
    >>> round(con.execute("SELECT ppdm_rr_epsilon(0.75)").fetchall()[0][0], 4)
    1.0986
    >>> con.sql(
    ...     "SELECT ppdm_rr_disguise(x, epsilon := 1e9, secret := '42', key := i, stream := 'x') AS y "
    ...     "FROM (VALUES (true, 1), (false, 2)) t(x, i)"
    ... ).fetchall()
    [(True,), (False,)]
    """
    T = duckdb.sqltypes
    # Arrow UDFs; null_handling SPECIAL: a NULL secret, stream or key is an error, not a
    # NULL draw that a macro would turn into garbage.
    rr_tail = [T.DOUBLE, T.DOUBLE, T.VARCHAR, T.BIGINT]  # p, epsilon, secret, key
    con.create_function(
        "_ppdm_rr_binary",
        _rr_binary_udf,
        [T.BOOLEAN, *rr_tail, T.VARCHAR],
        T.BOOLEAN,
        type=ARROW,
        null_handling=SPECIAL,
        side_effects=True,
    )
    con.create_function(
        "_ppdm_rr_kary",
        _rr_kary_udf,
        [T.VARCHAR, duckdb.list_type(T.VARCHAR), *rr_tail, T.VARCHAR],
        T.VARCHAR,
        type=ARROW,
        null_handling=SPECIAL,
        side_effects=True,
    )
    con.create_function(
        "_ppdm_rr_whole_record",
        _rr_whole_record_udf,
        [T.BOOLEAN, duckdb.list_type(T.BOOLEAN), duckdb.list_type(T.VARCHAR), *rr_tail],
        T.BOOLEAN,
        type=ARROW,
        null_handling=SPECIAL,
        side_effects=True,
    )
    con.create_function(
        "_ppdm_add_noise",
        _add_noise_udf,
        [T.DOUBLE, T.VARCHAR, T.DOUBLE, T.VARCHAR, T.BIGINT, T.VARCHAR],
        T.DOUBLE,
        type=ARROW,
        null_handling=SPECIAL,
        side_effects=True,
    )
    keyed = (T.VARCHAR, T.VARCHAR, T.BIGINT)  # secret, stream, key
    con.create_function("ppdm_uniform", _uniform_udf, [*keyed], T.DOUBLE, type=ARROW, null_handling=SPECIAL)
    con.create_function(
        "ppdm_prf_word", _prf_word_udf, [*keyed], T.UBIGINT, type=ARROW, null_handling=SPECIAL
    )
    con.create_function(
        "ppdm_discrete_laplace",
        _discrete_laplace_udf,
        [*keyed, T.DOUBLE],
        T.BIGINT,
        type=ARROW,
        null_handling=SPECIAL,
    )
    con.create_function(
        "ppdm_discrete_gaussian",
        _discrete_gaussian_udf,
        [*keyed, T.DOUBLE],
        T.BIGINT,
        type=ARROW,
        null_handling=SPECIAL,
    )
    con.create_function("ppdm_key", _key_udf, [T.VARCHAR], T.BIGINT, type=ARROW, null_handling=SPECIAL)
    # The sorted uniforms of ppdm_ecdf_resample (sql/ecdf_resample.sql), from the same kernel as Polars.
    doubles = duckdb.list_type(T.DOUBLE)
    con.create_function(
        "_ppdm_ecdf_offsets",
        _ecdf_offsets_udf,
        [T.VARCHAR, T.VARCHAR, T.BIGINT],
        doubles,
        type=ARROW,
        null_handling=SPECIAL,
    )
    con.create_function(
        "_ppdm_ecdf_uniforms",
        _ecdf_uniforms_udf,
        [T.VARCHAR, T.VARCHAR, T.BIGINT, T.BIGINT, T.DOUBLE, T.DOUBLE],
        doubles,
        type=ARROW,
        null_handling=SPECIAL,
    )
    from polars_ppdm.duckdb_group_by import register_group_by_udfs  # it imports this module's helpers

    register_group_by_udfs(con)
    con.execute(_MACROS)
    for path in sql_files():
        con.execute(path.read_text(encoding="utf-8"))
    return con


def _double(value: float) -> str:
    # 17 significant digits with an exponent: DuckDB reads it as a DOUBLE (not a DECIMAL)
    # and rounds it back to exactly this float.
    return f"{float(value):.17e}::DOUBLE"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _check_spiral_macro(key: Any, name: Any, func: str) -> None:
    if not isinstance(key, SpiralKey):
        msg = f"The 'key' parameter of {func} must be a SpiralKey (from spiral_key). Got {type(key).__name__} instead."
        raise InvalidParameterError(msg)
    if not isinstance(name, str) or not name:
        msg = f"The 'name' parameter of {func} must be a non-empty str (the macro's name). Got {name!r} instead."
        raise InvalidParameterError(msg)


def spiral_macro_sql(key: SpiralKey, name: str = "ppdm_spiral") -> str:
    """The SQL of a table macro ``name(tbl)`` applying a :class:`~polars_ppdm.SpiralKey`.

    Pure SQL with the matrix as constants: ``SELECT * REPLACE (...)`` with, per column,
    ``b_i + A_i0 * x_0 + A_i1 * x_1 + ...`` in the order Polars adds them, so the values
    are the same bits.  The SQL text *is* the key: anyone who reads the macro (e.g. in
    ``duckdb_functions()``) can undo the perturbation; use it on connections the data
    owner controls.
    """
    _check_spiral_macro(key, name, "spiral_macro_sql")
    cols = list(key.columns)
    x = {c: f"{_identifier(c)}::DOUBLE" for c in cols}
    checks = " OR ".join(f"isnan({x[c]}) OR isinf({x[c]})" for c in cols)
    moved = []
    for i, c in enumerate(cols):
        terms = [_double(key.offset[i])] + [
            f"{_double(key.matrix[i, j])} * {x[src]}" for j, src in enumerate(cols)
        ]
        expr = "(" + " + ".join(terms) + ")"
        if i == 0:  # refuse NaN and infinities, as Polars does
            message = f"{name}: NaN or infinite values; replace them or make them null".replace("'", "''")
            expr = f"CASE WHEN {checks} THEN error('{message}') ELSE {expr} END"
        moved.append(f"{expr} AS {_identifier(c)}")
    return f"CREATE OR REPLACE MACRO {_identifier(name)}(tbl) AS TABLE SELECT * REPLACE ({', '.join(moved)}) FROM query_table(tbl);"


def register_spiral_key(
    con: duckdb.DuckDBPyConnection, key: SpiralKey, name: str = "ppdm_spiral"
) -> duckdb.DuckDBPyConnection:
    """Register ``name(tbl)``: the table with the key's columns moved (see :func:`spiral_macro_sql`).

    Examples
    --------
    >>> import duckdb
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "id": [1, 2]})
    >>> key = ppdm.spiral_key(["a", "b"], bounds={"a": (0, 5), "b": (0, 5)}, rounds=3, secret=1)
    >>> con = ppdm.duckdb.register_spiral_key(duckdb.connect(), key, "perturb")
    >>> con.sql("FROM perturb('df') ORDER BY id").pl().equals(ppdm.apply_spiral_key(df, key))
    True
    """
    _check_spiral_macro(key, name, "register_spiral_key")
    con.execute(spiral_macro_sql(key, name))
    return con


def rr_disguise_batches(
    con: duckdb.DuckDBPyConnection,
    query: str | duckdb.DuckDBPyRelation,
    columns: str | Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None = None,
    epsilon: float | Sequence[float] | dict[str, float] | None = None,
    mode: str = "per_attribute",
    secret: SecretLike = None,
    key: str | None = None,
    categories: Sequence[Any] | dict[str, Sequence[Any]] | None = None,
    batch_rows: int = 1_000_000,
) -> pa.RecordBatchReader:
    """Bulk path: stream a DuckDB query's Arrow batches through :func:`polars_ppdm.rr_disguise`.

    The same draws as Polars for the same secret and key (or row position: the position
    in the query's output order, counted across batches), in the query's row order.
    DuckDB scans ahead while two threads disguise: at most about four batches are held at
    once (the one returned, two being disguised, one being read); nothing more is
    materialised.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection; the query runs on a cursor of it, so ``con`` itself stays free to
        consume the result.
    query : str or duckdb.DuckDBPyRelation
        E.g. ``"SELECT * FROM survey"``, run on a cursor of ``con`` (so it sees tables,
        not the connection-local views of ``con.register``).  A relation is read as it
        is; then consume the reader elsewhere than on its own connection (pyarrow,
        Polars, or a cursor), as DuckDB allows one open result per connection.
    columns, p, epsilon, mode, secret, key, categories
        As :func:`polars_ppdm.rr_disguise`.
    batch_rows : int
        Rows per disguise call: DuckDB's batches (a table scan hands out one row group,
        122,880 rows, at a time) are gathered up to about this many.  The reader returns
        them as they came.

    Returns
    -------
    pyarrow.RecordBatchReader
        Query it from DuckDB (``con.sql("SELECT * FROM reader")``) or write it out.

    Examples
    --------
    >>> import duckdb
    >>> import polars_ppdm as ppdm
    >>> con = duckdb.connect()
    >>> query = "SELECT i AS id, i % 2 = 0 AS x FROM range(10) t(i)"
    >>> reader = ppdm.duckdb.rr_disguise_batches(con, query, "x", p=1.0, secret=1, key="id")
    >>> con.from_arrow(reader).aggregate("count(*) AS n, sum(x::INT) AS xs").fetchall()
    [(10, 5)]
    """
    if not is_count(batch_rows) or batch_rows < 1:
        msg = f"The 'batch_rows' parameter of rr_disguise_batches must be an int >= 1. Got {batch_rows!r} instead."
        raise InvalidParameterError(msg)
    if key is not None and not isinstance(key, str):
        msg = f"The 'key' parameter of rr_disguise_batches must be a column name (str) or None. Got {key!r} instead."
        raise InvalidParameterError(msg)
    secret = resolve_secret(secret)  # once, so every batch shares a secret=None secret
    relation = con.cursor().sql(query) if isinstance(query, str) else query
    reader = relation.to_arrow_reader(batch_rows)

    def disguise(batch: pa.RecordBatch | pa.Table, offset: int) -> pa.Table:
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)  # a batch or table comes back as a frame
        if key is None:
            frame = frame.with_columns(
                pl.int_range(offset, offset + frame.height, dtype=pl.UInt64).alias(_POSITION)
            )
        out = rr_disguise(
            frame,
            columns,
            p=p,
            epsilon=epsilon,
            mode=mode,
            secret=secret,
            key=_POSITION if key is None else key,
            categories=categories,
        )
        return (out.drop(_POSITION) if key is None else out).to_arrow()

    # The output schema, and every parameter error, before the first row is read.
    out_schema = disguise(reader.schema.empty_table(), 0).schema

    def batches() -> Iterator[pa.RecordBatch]:
        # DuckDB scans the next batch while a worker disguises the ones before it (both
        # release the GIL): the two costs overlap instead of adding up.  Batches leave in
        # the order they came, at most _BATCHES_AHEAD of them read ahead.
        offset = 0
        pending: deque[Future[pa.Table]] = deque()
        tables = _coalesced(reader, batch_rows)
        with ThreadPoolExecutor(_BATCHES_AHEAD, thread_name_prefix="ppdm-disguise") as workers:
            try:
                while True:
                    try:
                        table = next(tables)
                    except StopIteration:
                        break
                    except Exception:
                        # The query failed mid-scan: the rows read before it still go
                        # out, in order (or an earlier batch's own error), then its error.
                        while pending:
                            yield from _as_batches(pending.popleft().result(), out_schema)
                        raise
                    pending.append(workers.submit(disguise, table, offset))
                    offset += table.num_rows
                    if len(pending) > _BATCHES_AHEAD:
                        yield from _as_batches(pending.popleft().result(), out_schema)
                while pending:
                    yield from _as_batches(pending.popleft().result(), out_schema)
            finally:  # an error or an abandoned reader: drop the work not yet started
                for future in pending:
                    future.cancel()

    return pa.RecordBatchReader.from_batches(out_schema, batches())


#: Batches of rr_disguise_batches read ahead of the one being returned (and disguised at once).
_BATCHES_AHEAD = 2


def _coalesced(reader: pa.RecordBatchReader, rows: int) -> Iterator[pa.Table]:
    """The reader's batches gathered into tables of about ``rows`` rows (fewer at the end).

    A table scan hands out one row group (122,880 rows) at a time whatever batch size is
    asked for, and each disguise call costs ~0.25 ms besides the kernel: gathering them
    halves the cost per row."""
    group: list[pa.RecordBatch] = []
    held = 0
    batches = iter(reader)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            break
        except Exception:
            if group:  # the rows read before a failure still go out, then the error
                yield pa.Table.from_batches(group, reader.schema)
            raise
        group.append(batch)
        held += batch.num_rows
        if held >= rows:
            yield pa.Table.from_batches(group, reader.schema)
            group, held = [], 0
    if group:
        yield pa.Table.from_batches(group, reader.schema)


def _as_batches(table: pa.Table, schema: pa.Schema) -> list[pa.RecordBatch]:
    return (table if table.schema == schema else table.cast(schema)).to_batches()
