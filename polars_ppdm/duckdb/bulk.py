"""The bulk path: a DuckDB query's Arrow batches streamed through :func:`polars_ppdm.rr_disguise`
(:func:`rr_disguise_batches`), near NumPy speed where a UDF pays DuckDB's cost per call."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from polars_ppdm._validation import is_count
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.perturb.rr import rr_disguise
from polars_ppdm.secret import SecretLike, resolve_secret

__all__ = ["rr_disguise_batches"]

_POSITION = "__ppdm_position"


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
