"""What every Spark front-end function shares: the optional import, schema conversion, the
``mapInArrow`` bridge into the Polars/NumPy code, and errors raised on the executors.

Only the DataFrame API is used (no RDD, no SparkContext), so everything here also runs on
Spark Connect.  The Python functions handed to ``mapInArrow`` are pickled with their
arguments -- the resolved secret included -- and shipped to the executors with each task:
turn on ``spark.network.crypto.enabled`` (and ``spark.io.encryption.enabled``) on a
shared cluster so that the secret never crosses the network in the clear.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import polars as pl
import pyarrow as pa

from polars_ppdm._frame import fresh_names
from polars_ppdm.exceptions import InvalidParameterError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkFrame
    from pyspark.sql.types import StructType

__all__ = [
    "ARROW_SETTINGS",
    "ExecutorError",
    "arrow_batches",
    "check_key",
    "free_checkpoint",
    "fresh_columns",
    "map_polars",
    "polars_schema",
    "raise_executor_errors",
    "require_pyspark",
    "shipped_key",
    "spark_column",
    "spark_frame",
    "spark_schema",
]

_EXTRA = "pip install 'polars_ppdm[spark]'"


class ExecutorError(InvalidParameterError):
    """Our own error raised inside a Spark task, re-raised on the driver with its message."""


def require_pyspark(func: str) -> Any:
    """The ``pyspark.sql`` module, or an error naming the extra to install."""
    try:
        return importlib.import_module("pyspark.sql")
    except ImportError:
        msg = f"polars_ppdm.spark.{func} needs PySpark 4, which is not installed: {_EXTRA}"
        raise ImportError(msg) from None


def spark_frame(frame: Any, func: str) -> SparkFrame:
    """``frame`` if it is a Spark DataFrame (classic or Connect), else a clear error."""
    sql = require_pyspark(func)
    kinds: tuple[type, ...] = (sql.DataFrame,)
    try:  # Spark Connect's DataFrame is another class
        kinds += (importlib.import_module("pyspark.sql.connect.dataframe").DataFrame,)
    except ImportError:
        pass
    if not isinstance(frame, kinds):
        msg = (
            f"polars_ppdm.spark.{func} takes a pyspark.sql.DataFrame. Got {type(frame).__name__} "
            "instead (for a polars frame use polars_ppdm." + func + ")."
        )
        raise InvalidParameterError(msg)
    return cast("SparkFrame", frame)


def spark_column(name: str) -> Column:
    """The Spark column called ``name``, whatever characters it holds (dots and backticks
    would otherwise be read as struct fields and quoting)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def fresh_columns(taken: Iterable[str], *bases: str) -> list[str]:
    """:func:`polars_ppdm._frame.fresh_names` as Spark compares names: without case
    (``spark.sql.caseSensitive`` is off by default), so a user's ``__PPDM_RANK`` takes
    ``__ppdm_rank`` too.  The helpers' names are lower case, hence compared with the
    lower-cased ``taken``."""
    return fresh_names({name.lower() for name in taken}, *(base.lower() for base in bases))


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


def polars_schema(frame: SparkFrame) -> pl.Schema:
    """The Polars schema the batches of ``frame`` arrive with."""
    return pl.DataFrame(_arrow_schema(frame.schema).empty_table()).schema


def spark_schema(schema: pl.Schema, func: str) -> StructType:
    """The Spark schema of a Polars schema (refusing what Spark cannot hold)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    arrow = pl.DataFrame(schema=schema).to_arrow(compat_level=pl.CompatLevel.oldest()).schema
    try:
        return from_arrow_schema(arrow)
    except Exception as exc:  # pyspark raises its own errors for unsupported types
        msg = f"polars_ppdm.spark.{func}: the result has a column type Spark cannot hold ({exc})."
        raise InvalidParameterError(msg) from None


def check_key(key: Any, schema: pl.Schema, func: str) -> str:
    """The row-key column, required on Spark: a Spark DataFrame has no row order, so the
    row position that Polars falls back on does not exist (it would differ per partition)."""
    if key is None:
        msg = (
            f"polars_ppdm.spark.{func} needs key= (a column naming each row, integer or string): "
            "a Spark DataFrame has no row order, so the draws cannot fall back on the row position."
        )
        raise InvalidParameterError(msg)
    if not isinstance(key, str) or key not in schema:
        msg = f"The 'key' parameter of polars_ppdm.spark.{func} names no column: {key!r}. Columns: {list(schema.names())}."
        raise InvalidParameterError(msg)
    return key


def shipped_key(key: bytes) -> bytes:
    """The key itself, as plain bytes, for the functions Spark pickles and ships to its
    executors: a :class:`~polars_ppdm.secret.Secret`'s key pickles as a handle that only
    this process knows (:mod:`polars_ppdm._held`, which keeps it out of serialized Polars
    plans)."""
    return bytes(key)


def map_polars(
    frame: SparkFrame,
    transform: Callable[[pl.DataFrame], pl.DataFrame],
    out_schema: pl.Schema,
    func: str,
) -> SparkFrame:
    """``frame`` with ``transform`` applied to every Arrow batch on the executors.

    ``transform`` is the Polars code of the same operation (so the same kernels and the
    same bits); it must be element-wise (each row's output depends only on that row), as
    batches are cut wherever Spark cuts them.  Batches cross Arrow <-> Polars without a
    copy where the types allow.  The result has the declared schema ``out_schema``.
    """
    target = spark_schema(out_schema, func)
    arrow = _arrow_schema(target)
    names = frame.columns
    # PySpark's mapInArrow reads its input columns by name, which a name like "a.b" (a
    # struct field) or "a`b" (quoting) breaks: they cross under positional names.
    positional = frame.toDF(*(f"_{i}" for i in range(len(names))))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for chunk in _gathered(batches):
            try:
                out = transform(pl.DataFrame(pl.from_arrow(chunk.rename_columns(names))))
            except InvalidParameterError as exc:  # our message, carried to the driver
                msg = f"[polars_ppdm] {exc}"
                raise ExecutorError(msg) from None
            table = out.to_arrow(compat_level=pl.CompatLevel.oldest())
            if table.schema != arrow:
                table = table.cast(arrow)
            yield from table.to_batches()

    return positional.mapInArrow(run, target)


# Spark hands Python 10,000-row batches by default: the per-call cost of the Polars
# function (schema checks, key resolution, one AES call) is paid per chunk of these sizes.
_CHUNK_ROWS = 1 << 20
_CHUNK_BYTES = 64 << 20


def _gathered(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """Consecutive non-empty batches gathered into tables of about ``_CHUNK_ROWS`` rows or
    ``_CHUNK_BYTES`` bytes (the transforms are row-wise, so where the cut falls does not matter)."""
    pending: list[pa.RecordBatch] = []
    rows = size = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        size += batch.nbytes
        if rows >= _CHUNK_ROWS or size >= _CHUNK_BYTES:
            yield pa.Table.from_batches(pending)
            pending, rows, size = [], 0, 0
    if pending:
        yield pa.Table.from_batches(pending)


#: Spark SQL settings under which the library runs its own actions (:func:`arrow_batches`).
#: Spark checks an Arrow batch's byte size against ``maxBytesPerBatch`` after every row
#: it writes to Python unless the limit is Int.MaxValue (Spark 4's
#: ``BatchedPythonArrowInput``), and cuts batches of 10,000 rows: in ``local[2]`` on 10M
#: rows the two made a ``mapInArrow`` step about twice as slow (benchmarks/bench_spark.py).
ARROW_SETTINGS = {
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
}


@dataclass
class _Held:
    """The session's own values of the settings some block holds, and how many blocks do."""

    saved: dict[str, str | None]
    holders: int = 0


_HELD: dict[int, _Held] = {}
_HELD_LOCK = threading.Lock()


@contextmanager
def arrow_batches(spark: Any, settings: Mapping[str, str] | None = None) -> Iterator[None]:
    """Spark's Arrow batches sized for ``mapInArrow`` steps while the block runs, the
    session's own settings restored after it.

    Spark reads these settings when an action runs, not when a DataFrame is defined: the
    library's own actions (the aggregates of ``dp_*``, ``dp_group_by`` and
    ``ecdf_resample``) run under them; a lazy result (``rr_disguise``, ``add_noise``,
    ``apply_spiral_key``, ``ecdf_resample``) runs under them when the user's action is
    wrapped too.  The settings are the session's while the block runs, so another thread's
    job in the same session sees them as well; overlapping blocks (threads, nesting) on one
    session hold them together, and the last to leave puts the session's own values back.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        Classic or Spark Connect.
    settings : mapping of str to str, optional
        Spark SQL settings to hold; :data:`ARROW_SETTINGS` when None (no byte-size check,
        100,000-row batches).

    Examples
    --------
    >>> import polars_ppdm.spark as ppdm_spark
    >>> with ppdm_spark.arrow_batches(spark):  # doctest: +SKIP
    ...     ppdm_spark.rr_disguise(sdf, ["a"], p=0.9, key="id").write.parquet("out")
    """
    wanted = dict(ARROW_SETTINGS if settings is None else settings)
    # Holders of one session counted under a lock: two threads (or nested blocks) whose
    # blocks overlap would otherwise restore each other's values and leave the session
    # tuned.  The first holder saves the session's values, the last one puts them back.
    with _HELD_LOCK:
        held = _HELD.setdefault(id(spark), _Held(saved={}))
        for k, v in wanted.items():
            if k not in held.saved:
                held.saved[k] = spark.conf.get(k, None)
            spark.conf.set(k, v)
        held.holders += 1
    try:
        yield
    finally:
        with _HELD_LOCK:
            held.holders -= 1
            if held.holders == 0:
                del _HELD[id(spark)]
                for k, own in held.saved.items():
                    if own is None:
                        spark.conf.unset(k)
                    else:
                        spark.conf.set(k, own)


_OUR_MESSAGE = re.compile(r"ExecutorError: \[polars_ppdm\] (.*)")


def raise_executor_errors(action: Callable[[], Any], frame: SparkFrame | None = None) -> Any:
    """Run a Spark action; an error of ours raised in a task comes back as itself.

    Spark wraps a task's Python exception in its own, with the worker's traceback; the
    user asked a polars_ppdm question and gets polars_ppdm's one-line answer.  With the
    ``frame`` the action computes, it runs under :func:`arrow_batches` of its session.
    """
    try:
        if frame is not None:
            with arrow_batches(frame.sparkSession):
                return action()
        return action()
    except Exception as exc:
        found = _OUR_MESSAGE.search(str(exc))
        if found is None:
            raise
        raise InvalidParameterError(found.group(1)) from None


def free_checkpoint(frame: Any) -> None:
    """Free a local checkpoint's blocks (``DataFrame.unpersist`` does not: Spark's cache
    manager does not know them).  Classic Spark unpersists the checkpoint's RDD; Spark
    Connect has no handle on it, and its server frees it once the frame is dropped."""
    jdf = getattr(frame, "_jdf", None)
    if jdf is None:
        return
    try:
        jdf.queryExecution().analyzed().rdd().unpersist(False)
    except Exception:
        frame.unpersist()
