"""The content digest of a published table: the same rows, whichever engine wrote them.

An identical re-run of a recorded run spends nothing because it publishes the very bits
the run paid for; the re-run checks its outputs against the SHA-256 the ledger recorded.
The file's bytes serve for a table Polars wrote (Polars writes the same file each time),
but not for one Spark wrote: its part files are named after the write job, and how the
rows fall into them depends on the session's partitions.  A Spark re-run was refused for
that alone, and a run on the other engine was compared with nothing at all: had the
engines read one value differently, the re-run would have published new draws over it for
free (attack review 72: a line ending did exactly that).

So a table also has a digest of its content, read back from what was written: the
multiset of its rows (order and part files do not matter), each row's values in the
published column order, with the column names.  Each value is taken by its meaning, not
its storage: integers of any width as 64-bit integers, floats as float64 bits (every NaN
alike; ``-0.0`` as ``0.0``), strings, categoricals and decimals by their text, times in
microseconds (Spark's unit) -- what two engines may store differently for one value.
The words are those of the DP releases' data digests
(:func:`polars_ppdm.kernels.release_key.row_words`), under a key derived from the
dataset's secret: the digest tells nothing of the table to anyone without it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from polars_ppdm._durable import table_files
from polars_ppdm.kernels.release_key import finish_digest, row_words
from polars_ppdm.kernels.string_keys import keyed_string_keys
from polars_ppdm.secret import Secret

__all__ = ["content_key", "frame_word_sum", "kind_of", "published_content", "table_content_digest"]

_BATCH_ROWS = 1 << 16


def content_key(secret: Secret) -> bytes:
    """The key of a dataset's table digests: HMAC(secret, purpose), 32 bytes (no draw
    uses it)."""
    return hmac.new(secret.key, b"polars_ppdm/table-content", hashlib.sha256).digest()


def frame_word_sum(key: bytes, frame: pl.DataFrame) -> int:
    """The sum (mod 2^64) of the row words of ``frame``: add the sums of any split of a
    table's rows (batches, part files, partitions) to get the table's."""
    total = 0
    for start in range(0, frame.height, _BATCH_ROWS):
        part = frame.slice(start, _BATCH_ROWS)
        columns: list[np.ndarray] = []
        for series in part.get_columns():
            columns.extend(_value_words(key, series))
        total += int(np.sum(row_words(key, columns), dtype=np.uint64))
    return total % 2**64


def table_content_digest(key: bytes, schema: pl.Schema, word_sum: int, rows: int) -> str:
    """The digest (64 hex digits, as a SHA-256 is recorded) of a table of ``rows`` rows
    whose row words add up to ``word_sum``, with the columns of ``schema`` in that order,
    each with the kind of its values (:func:`kind_of`)."""
    digest = finish_digest(key, word_sum, rows)
    columns = [f"{name}\x02{kind_of(dtype)}" for name, dtype in schema.items()]
    named = "\x00".join(columns).encode() + b"\x01" + digest.to_bytes(8, "little")
    return hmac.new(key, named, hashlib.sha256).hexdigest()


def published_content(key: bytes, path: Path, *, csv: bool, schema: pl.Schema) -> str:
    """The content digest of the table at ``path`` (a file, or a folder of Spark's part
    files), read by Polars a batch at a time.  A CSV is read with the published
    ``schema`` (Polars' types of the query that wrote it), so that both engines' text is
    taken as values of the same types."""
    files = [str(f) for f in table_files(Path(path))]
    names = list(schema.names())
    total, rows = 0, 0
    read = schema
    if files:
        query = pl.scan_csv(files, schema=schema, raise_if_empty=False) if csv else pl.scan_parquet(files)
        query = query.select(names)
        read = query.collect_schema()  # the types as written (Spark's may be another width)
        for batch in _batches(query):
            total += frame_word_sum(key, batch)
            rows += batch.height
    return table_content_digest(key, read, total % 2**64, rows)


def kind_of(dtype: pl.DataType) -> str:
    """What a column's values are, whatever their width or storage: two engines may store
    one value as Int32 and Int64, Float32 and Float64, Categorical and String, a time in
    nanoseconds or microseconds; but a duration is not an integer, and a time in a zone
    is not a wall-clock time (attack review 77: Spark published a Duration as Int64, and
    a zoned time as a naive one, and the rows alone passed the check)."""
    if dtype == pl.UInt64:  # 2^64 - 1 has -1's bits (review 79)
        return "unsigned 64-bit integer"
    if dtype.is_integer():
        return "integer"
    if dtype.is_float():
        return "float"
    if dtype in (pl.String, pl.Categorical, pl.Enum):
        return "text"
    if isinstance(dtype, pl.Datetime):
        return f"datetime[{dtype.time_zone or ''}]"
    if isinstance(dtype, pl.Decimal):
        return f"decimal[{dtype.scale}]"
    return str(dtype.base_type())  # Boolean, Date, Time, Duration, Binary, List, Struct, Null


def _batches(query: pl.LazyFrame) -> Iterable[pl.DataFrame]:
    collect_batches = getattr(query, "collect_batches", None)
    if collect_batches is None:  # an older Polars: the table whole (the lower bound's)
        yield from query.collect(engine="streaming").iter_slices(_BATCH_ROWS)
        return
    yield from collect_batches(chunk_size=_BATCH_ROWS)


def _value_words(key: bytes, series: pl.Series) -> list[np.ndarray]:
    """Two 64-bit patterns per row: whether the value is there, and the value by its
    meaning (nulls as 0)."""
    present = series.is_not_null().to_numpy()
    dtype = series.dtype
    if dtype == pl.Null:
        return [present, np.zeros(len(series), dtype=np.uint64)]
    if dtype.is_temporal():
        series = _microseconds(series)
    elif dtype in (pl.String, pl.Categorical, pl.Enum, pl.Binary) or isinstance(dtype, pl.Decimal):
        return [present, _text_words(key, series)]
    elif dtype.is_nested() or dtype == pl.Object:
        # By Python's text of the value (both sides are read back by Polars): floats by
        # their repr, NaN, inf and None apart, which JSON text made one null (review 79).
        text = pl.Series([repr(v) for v in series.to_list()], dtype=pl.String)
        return [present, _text_words(key, text)]
    if dtype.is_float():
        values = series.cast(pl.Float64).fill_null(0.0).fill_nan(float("nan")).to_numpy()
        values = np.where(np.isnan(values), np.nan, values)  # one NaN, whatever its payload
        return [present, values]
    return [present, series.fill_null(False if dtype == pl.Boolean else 0).to_numpy()]


def _microseconds(series: pl.Series) -> pl.Series:
    dtype = series.dtype
    if isinstance(dtype, (pl.Datetime, pl.Duration)):
        return series.dt.cast_time_unit("us").to_physical().cast(pl.Int64)
    if dtype == pl.Time:  # nanoseconds since midnight
        return (series.to_physical().cast(pl.Int64) // 1000).cast(pl.Int64)
    return series.to_physical().cast(pl.Int64)  # Date: days


def _text_words(key: bytes, series: pl.Series) -> np.ndarray:
    """The keyed word of each value's UTF-8 text (bytes for a binary column)."""
    if series.dtype != pl.Binary:
        series = series.cast(pl.String)
    array = series.fill_null(b"" if series.dtype == pl.Binary else "").to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = pa.concat_arrays(array.chunks) if array.num_chunks != 1 else array.chunk(0)
    array = array.cast(pa.large_binary())
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    data_buffer = array.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return keyed_string_keys(key, offsets, data)
