"""The row-wise DuckDB UDFs and their SQL faces: randomized response (binary, k-ary, whole
record), additive noise, the keyed randomness for macros (``ppdm_uniform``,
``ppdm_prf_word``, ``ppdm_discrete_laplace``, ``ppdm_discrete_gaussian``), ``ppdm_key``
and the sorted uniforms of ``ppdm_ecdf_resample``; :func:`register_scalar_udfs` adds them
(:func:`polars_ppdm.duckdb.register` calls it).  The package docstring documents the SQL.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
from duckdb.func import ARROW, SPECIAL

from polars_ppdm._encoding import row_keys, with_nulls
from polars_ppdm._validation import keep_probability
from polars_ppdm.duckdb._shared import constant, one_array, secret_of, secret_of_source, secret_source, series
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import _native, prf
from polars_ppdm.kernels.dp_noise import check_gaussian_sigma, discrete_gaussian, discrete_laplace
from polars_ppdm.kernels.noise import gaussian_noise, noisy_values, uniform_noise
from polars_ppdm.kernels.prf import first_words, stream_id, uniform
from polars_ppdm.kernels.release_key import finish_digest, release_key, row_words
from polars_ppdm.kernels.rr import keep_decisions, mechanism_stream
from polars_ppdm.kernels.spacings import BLOCK, block_offsets, block_totals, block_uniforms
from polars_ppdm.perturb.ecdf import column_label
from polars_ppdm.perturb.noise import check_drawable, check_noise
from polars_ppdm.perturb.rr import (
    _disguise_boolean,
    disguise_series,
    whole_record_keep_series,
    whole_record_stream,
)
from polars_ppdm.secret import require_strong_secret

__all__ = ["register_scalar_udfs"]


def _stream(arr: pa.Array | pa.ChunkedArray, func: str, prefix: str = "") -> tuple[str, str]:
    """The column's name (the ``stream`` argument, required) and the stream of its draws,
    made from the name as the Polars function on that column makes its default stream
    (``prefix`` + name: ``'add_noise/'`` for noise, nothing for randomized response).

    SQL cannot see the name of the column passed as ``x``, so the caller gives it; a
    shared default (it was ``''``) made two columns disguised in one query with the same
    secret and key flip together.
    """
    return _stream_label(constant(arr, "stream", func, optional=True), func, prefix)


def _stream_label(column: Any, func: str, prefix: str = "") -> tuple[str, str]:
    """:func:`_stream` once the constant is read (``column`` its value, None for NULL)."""
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


def _check_key(key: pa.Array | pa.ChunkedArray, values: pl.Series, func: str) -> pl.Series:
    """The key column, refused where it is NULL and the value is not (that row needs a
    draw, so a key; a macro's ``key`` left out is NULL everywhere).  The error names the
    user's column (``values``' name), which SQL knows only from its stream."""
    keys = series(key, "key")
    if keys.null_count() and (keys.is_null() & values.is_not_null()).any():
        msg = (
            f"The 'key' argument of {func} must be the row-key column (BIGINT, or ppdm_key(text, secret) "
            f"for a text key), with a key wherever the column {values.name!r} has a value. Got NULL in "
            "such rows instead: fill the key or drop those rows first."
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
    p_value = constant(p, "p", func, optional=True)
    epsilon_value = constant(epsilon, "epsilon", func, optional=True)
    secret_key = secret_of(secret, func).key
    column, label = _stream(stream, func)
    word = stream_id(label)
    if categories is None and pa.types.is_boolean(x.type):
        keep = _keep_probability(p_value, epsilon_value, 2, func)
        return _binary_disguise(func, x, column, key, keep, secret_key, word)
    values = series(x, column)
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
    x, key = one_array(x), one_array(key)
    if _plain_bitmaps(x, key):
        return _negated_where_not(
            x, keep_decisions(_bitmap_codes(x), keep, secret, stream, _bigint_keys(key))
        )
    values = series(x, column)
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
    shared), with 0 under them: the bit there would be the coin of the hidden value."""
    n, start = len(x), x.offset // 8
    validity, bits = x.buffers()
    nbytes = (n + 7) // 8
    flipped = np.packbits(kept, bitorder="little")
    np.bitwise_xor(flipped, np.frombuffer(bits, dtype=np.uint8, count=nbytes, offset=start), out=flipped)
    np.invert(flipped, out=flipped)  # x XOR NOT kept
    valid = validity.slice(start, nbytes) if x.null_count else None
    if valid is not None:
        np.bitwise_and(flipped, np.frombuffer(valid, dtype=np.uint8, count=nbytes), out=flipped)
    return pa.BooleanArray.from_buffers(
        pa.bool_(), n, [valid, pa.py_buffer(flipped)], null_count=x.null_count
    )


_BOOLEAN = pa.bool_()


def _rr_binary_udf(x, p, epsilon, secret, key, stream):
    # With the compiled kernels, a plain vector (BOOLEAN values, BIGINT keys without NULLs,
    # one chunk, constants that are constants) is one call: it reads the Arrow arguments,
    # gets the query's plan from _rr_plan and disguises the bits with the GIL released.
    # Anything else returns None: the same bits (or the error) through _disguise_arrow.
    native = _native.NATIVE
    if native is not None:
        # Arrow's memory, not a Python object's: DuckDB frees the result without the GIL.
        n = len(x)
        nbytes = (n + 7) // 8
        out = pa.allocate_buffer(2 * nbytes)  # the values, then the validity
        done = native.udf_rr_binary(x, p, epsilon, secret, key, stream, _rr_plan, out)
        if done is not None:
            with_validity, nulls = done
            valid = out.slice(nbytes, nbytes) if with_validity else None
            return pa.BooleanArray.from_buffers(_BOOLEAN, n, [valid, out], null_count=nulls)
    return _disguise_arrow("ppdm_rr_disguise", x, None, p, epsilon, secret, key, stream)


def _rr_plan(
    p: float | None, epsilon: float | None, secret: str | None, column: str | None
) -> tuple[bytes, int, int] | None:
    """The secret key, the value-keyed stream word and the keep threshold of
    ``ppdm_rr_disguise`` from its constant arguments' values (the compiled UDF asks once
    per vector); None where the compiled path does not serve (a NULL secret or stream:
    the Python path names it; p = 1: nothing to draw).

    Cached by the values and by the state of what the secret names (the variable's value
    for 'env:NAME', the file's identity and times for 'file:PATH', read on every call:
    :func:`~polars_ppdm.duckdb._shared.secret_source`), so a rotated secret is a new key,
    never served from the cache.  Errors come in the Python path's order (secret,
    stream, p and epsilon) and are not cached.
    """
    if secret is None or column is None:
        return None
    return _rr_plan_of(p, epsilon, *secret_source(secret), column)


# A few queries' plans (the secret is part of each: no more than a handful are kept).
@functools.lru_cache(maxsize=8)
def _rr_plan_of(
    p: float | None, epsilon: float | None, text: str, state: str | tuple[int, ...] | None, column: str
) -> tuple[bytes, int, int] | None:
    func = "ppdm_rr_disguise"
    key = secret_of_source(text, state).key
    label = _stream_label(column, func)[1]
    threshold = prf.bernoulli_threshold(_keep_probability(p, epsilon, 2, func))
    if threshold is None:
        return None
    return key, prf.value_stream(mechanism_stream(stream_id(label), 2, threshold)), threshold


def _rr_kary_udf(x, categories, p, epsilon, secret, key, stream):
    cats = constant(categories, "categories", "ppdm_rr_disguise_k")
    return _disguise_arrow("ppdm_rr_disguise_k", x, cats, p, epsilon, secret, key, stream)


def _rr_whole_record_udf(x, record, columns, p, epsilon, secret, key):
    """One coin per row for the column group ``columns``, keyed by the unit and the row's
    values ``record`` in the group: the coin of ``rr_disguise(..., mode="whole_record")``,
    whichever column of the group ``x`` is (kept where the coin says truthful, negated
    elsewhere; nulls stay null)."""
    func = "ppdm_rr_disguise_whole_record"
    if len(x) == 0:
        return pa.array([], type=pa.bool_())
    cols = constant(columns, "columns", func)
    if not cols or any(not isinstance(c, str) for c in cols) or len(set(cols)) != len(cols):
        msg = (
            f"The 'columns' argument of {func} must be a non-empty list of distinct column names "
            f"(the group of binary columns sharing one coin per row). Got {cols!r} instead."
        )
        raise InvalidParameterError(msg)
    keep = _keep_probability(
        constant(p, "p", func, optional=True), constant(epsilon, "epsilon", func, optional=True), 2, func
    )
    secret_key = secret_of(secret, func).key
    values = series(x, "x")
    keys = _check_key(key, values, func)
    group = _record_columns(one_array(record), cols, values, func)
    kept = whole_record_keep_series(
        group, keys, keep=keep, secret=secret_key, stream=stream_id(whole_record_stream(cols)), func=func
    )
    out = values == pl.Series(kept)
    return with_nulls(out, values.is_not_null().to_numpy()).to_arrow()  # zeros under NULLs


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
    dist, scale = check_noise(constant(dist, "dist", func), constant(scale, "scale", func), func)
    check_drawable(scale, func)
    column, label = _stream(stream, func, _NOISE_STREAM)
    values = series(x, column)
    valid = values.is_not_null()
    if not np.isfinite(values.filter(valid).to_numpy()).all():
        msg = (
            f"The column {column!r} (the 'x' argument) of {func} must hold finite numbers or NULL. Got NaN "
            "or infinite values instead; replace them or make them NULL."
        )
        raise InvalidParameterError(msg)
    secret = secret_of(secret, func).key
    keys = row_keys(_check_key(key, values, func), secret=secret, func=func, required_rows=valid.to_numpy())
    data = values.fill_null(0.0).to_numpy()
    noise = _NOISE_KERNELS[dist](secret, stream_id(label), keys, scale, values=data)
    # x + r on the scale's grid; zeros under a NULL, not the noise of the filler 0.0 (see with_nulls).
    return with_nulls(pl.Series(column, noisy_values(data, noise, scale)), valid.to_numpy()).to_arrow()


def _uniform_udf(secret, stream, key):
    func = "ppdm_uniform"
    if len(key) == 0:
        return pa.array([], type=pa.float64())
    secret, label = secret_of(secret, func), constant(stream, "stream", func)
    return pa.array(
        uniform(secret.key, stream_id(label), row_keys(series(key, "key"), secret=secret.key, func=func))
    )


def _prf_word_udf(secret, stream, key):
    func = "ppdm_prf_word"
    if len(key) == 0:
        return pa.array([], type=pa.uint64())
    secret, label = secret_of(secret, func), constant(stream, "stream", func)
    return pa.array(
        first_words(secret.key, stream_id(label), row_keys(series(key, "key"), secret=secret.key, func=func))
    )


def _discrete_laplace_udf(secret, stream, key, scale):
    if len(key) == 0:
        return pa.array([], type=pa.int64())
    func = "ppdm_discrete_laplace"
    secret, label = (
        require_strong_secret(secret_of(secret, func), func, sql=True),
        constant(stream, "stream", func),
    )
    scale = constant(scale, "scale", func)
    if not (isinstance(scale, float) and 0 < scale < float("inf")):
        msg = f"The 'scale' argument of {func} must be a finite float > 0 (sensitivity / epsilon). Got {scale!r} instead."
        raise InvalidParameterError(msg)
    keys = row_keys(series(key, "key"), secret=secret.key, func=func)
    return pa.array(discrete_laplace(secret.key, stream_id(label), keys, scale))


def _discrete_gaussian_udf(secret, stream, key, sigma):
    if len(key) == 0:
        return pa.array([], type=pa.int64())
    func = "ppdm_discrete_gaussian"
    secret, label = (
        require_strong_secret(secret_of(secret, func), func, sql=True),
        constant(stream, "stream", func),
    )
    sigma = constant(sigma, "sigma", func)
    if not isinstance(sigma, float):
        msg = f"The 'sigma' argument of {func} must be a finite float > 0 (l2 / sqrt(2 rho)). Got {sigma!r} instead."
        raise InvalidParameterError(msg)
    check_gaussian_sigma(sigma, func)
    keys = row_keys(series(key, "key"), secret=secret.key, func=func)
    return pa.array(discrete_gaussian(secret.key, stream_id(label), keys, sigma))


def _ecdf_words_udf(secret, x):
    """Each value's keyed digest word (:func:`~polars_ppdm.kernels.release_key.row_words`
    of its float64 bits, -0.0 as 0.0); the macro sums them into the column's digest."""
    func = "ppdm_ecdf_resample"
    if len(x) == 0:
        return pa.array([], type=pa.uint64())
    values = series(x, "x").cast(pl.Float64).to_numpy()
    return pa.array(row_words(secret_of(secret, func).key, [values]), type=pa.uint64())


def _ecdf_key_udf(secret, column, bins, word_sum, rows):
    """The hex AES key of one column's resample
    (:func:`polars_ppdm.perturb.ecdf.column_key`), from the sum of the values' words mod
    2^64 and their count: the key the other ECDF UDFs then take as their secret."""
    func = "ppdm_ecdf_resample"
    if len(bins) == 0:
        return pa.array([], type=pa.string())
    key = secret_of(secret, func).key
    label = column_label(str(constant(column, "col", func)), int(constant(bins, "bins", func)))
    digest = finish_digest(key, int(constant(word_sum, "digest", func)), int(constant(rows, "rows", func)))
    return pa.array([release_key(key, label, digest).hex()] * len(bins), type=pa.string())


def _ecdf_offsets_udf(secret, stream, n):
    """The offset of every block of ranks of the sorted uniforms of ``ppdm_ecdf_resample``,
    then their total (:func:`~polars_ppdm.kernels.spacings.block_offsets`): one list per row,
    from one pass over the n + 1 draws."""
    func = "ppdm_ecdf_resample"
    if len(n) == 0:
        return pa.array([], type=pa.list_(pa.float64()))
    secret, label = secret_of(secret, func), constant(stream, "stream", func)
    count = int(constant(n, "n", func))
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
    secret, label = secret_of(secret, func), constant(stream, "stream", func)
    count, whole = int(constant(n, "n", func)), float(constant(total, "total", func))
    blocks = series(block, "block").to_numpy()
    uniforms = block_uniforms(
        secret.key, stream_id(label), blocks, series(offset, "offset").to_numpy(), whole
    )
    lengths = np.clip(count - blocks * BLOCK, 0, BLOCK)
    values = (
        uniforms.reshape(-1) if (lengths == BLOCK).all() else uniforms[np.arange(BLOCK) < lengths[:, None]]
    )
    return pa.LargeListArray.from_arrays(np.concatenate(([0], np.cumsum(lengths))), values)


def _key_udf(s, secret):
    # NULL in, NULL out: the disguise UDFs accept a null key where the value is null too.
    func = "ppdm_key"
    if len(s) == 0:
        return pa.array([], type=pa.int64())
    if constant(secret, "secret", func, optional=True) is None:
        msg = (
            "ppdm_key(text, secret) needs the secret of the draws the key selects: text keys are hashed under it, "
            "so that no one without it can compute a key or choose a text that shares another's. Got no secret "
            "(ppdm_key(text) alone, without one, is no longer accepted); pass the same secret as the query's."
        )
        raise InvalidParameterError(msg)
    keys = series(s, "s")
    words = row_keys(
        keys, secret=secret_of(secret, func).key, func=func, required_rows=np.zeros(len(keys), dtype=bool)
    )
    return pa.array(words.view("int64"), mask=keys.is_null().to_numpy() if keys.null_count() else None)


# The SQL faces of the random UDFs: named arguments with defaults, so that
# ppdm_rr_disguise(x, 0.8, secret, id, 'x') and ppdm_rr_disguise(x, epsilon := 1.0,
# secret := secret, key := id, stream := 'x') both work (DuckDB fills defaulted
# parameters positionally too); the UDF refuses a missing secret, key or stream (NULL
# defaults, so that the error is ours and says what to pass, not DuckDB's binder error,
# which would also quote the SQL text and a secret written in it), and wants exactly one
# of p and epsilon.  ppdm_rr_disguise refuses x of another type than BOOLEAN by name (the
# check folds away at bind time; it was DuckDB's binder error naming _ppdm_rr_binary).
# The key likewise: a text or 64-bit unsigned key is refused by name (a text key goes
# through ppdm_key); the integer types that fit a BIGINT are cast to it, as before.
_KEY_TYPES = "'TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', '\"NULL\"'"


def _keyed(func: str, call: str) -> str:
    """``call`` (which reads the key as ``__key``) behind the check of the key's type."""
    return (
        f"CASE WHEN typeof(key) NOT IN ({_KEY_TYPES})\n"
        f"         THEN error('The ''key'' argument of {func} must be an integer column (BIGINT or narrower). Got '\n"
        "                    || typeof(key) || ' instead; for a text key pass ppdm_key(key, secret), which gives '\n"
        "                    || 'the row keys Polars gives a string key (a number in quotes: write it without them).')\n"
        f"         ELSE {call.replace('__key', 'TRY_CAST(key AS BIGINT)')} END"
    )


_MACROS = f"""
CREATE OR REPLACE MACRO ppdm_rr_disguise(x, p := NULL, secret := NULL, key := NULL, stream := NULL, epsilon := NULL) AS
    CASE WHEN typeof(x) NOT IN ('BOOLEAN', '"NULL"')
         THEN error('The ''x'' argument of ppdm_rr_disguise must be BOOLEAN (binary randomized response; 0/1 '
                    || 'integers as x::BOOLEAN). Got ' || typeof(x) || ' (the column '
                    || coalesce('''' || stream::VARCHAR || '''', 'passed as x') || ') instead; for categories '
                    || 'use ppdm_rr_disguise_k(x, categories, ...) with the column''s public categories.')
         ELSE {_keyed("ppdm_rr_disguise", "_ppdm_rr_binary(TRY_CAST(x AS BOOLEAN), p, epsilon, secret, __key, stream)")}
    END;
CREATE OR REPLACE MACRO ppdm_rr_disguise_k(
    x, categories, p := NULL, secret := NULL, key := NULL, stream := NULL, epsilon := NULL
) AS {_keyed("ppdm_rr_disguise_k", "_ppdm_rr_kary(x, categories, p, epsilon, secret, __key, stream)")};
CREATE OR REPLACE MACRO ppdm_rr_disguise_whole_record(
    x, columns, p := NULL, secret := NULL, key := NULL, epsilon := NULL, record := NULL
) AS {_keyed("ppdm_rr_disguise_whole_record", "_ppdm_rr_whole_record(x, record, columns, p, epsilon, secret, __key)")};
CREATE OR REPLACE MACRO ppdm_key(key, secret := NULL) AS _ppdm_key(key, secret);
CREATE OR REPLACE MACRO ppdm_add_noise(x, scale, secret, key, stream := NULL, dist := 'gaussian') AS
    {_keyed("ppdm_add_noise", "_ppdm_add_noise(x, dist, scale, secret, __key, stream)")};
"""


def register_scalar_udfs(con: duckdb.DuckDBPyConnection) -> None:
    """Register the UDFs above and their SQL faces (``_MACROS``) on ``con``
    (:func:`polars_ppdm.duckdb.register` calls it)."""
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
    con.create_function(
        "_ppdm_key", _key_udf, [T.VARCHAR, T.VARCHAR], T.BIGINT, type=ARROW, null_handling=SPECIAL
    )
    # The sorted uniforms of ppdm_ecdf_resample (sql/ecdf_resample.sql), from the same kernel
    # as Polars, under the column's own key (from its values' digest).
    con.create_function(
        "_ppdm_ecdf_words",
        _ecdf_words_udf,
        [T.VARCHAR, T.DOUBLE],
        T.UBIGINT,
        type=ARROW,
        null_handling=SPECIAL,
    )
    con.create_function(
        "_ppdm_ecdf_key",
        _ecdf_key_udf,
        [T.VARCHAR, T.VARCHAR, T.BIGINT, T.UBIGINT, T.BIGINT],
        T.VARCHAR,
        type=ARROW,
        null_handling=SPECIAL,
    )
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
    con.execute(_MACROS)
