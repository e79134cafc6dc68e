"""ECDF resampling with rank re-linking on Spark DataFrames (paper 000), bit for bit the
Polars result.

What runs where, per resampled column:

1. *Census* (one Spark job for all columns): every batch reports, per column, partial
   counts, minima and maxima per *cell* -- the top 16 bits of a value's order key (sign,
   exponent and 4 mantissa bits, so a cell spans at most a factor 1.07 of the value) --
   plus its NaN/inf count, its row count and its null keys; a Spark group-by sums them.
   The driver gets n, min and max of every column (and checks them as Polars does), and
   plans the *sort buckets*: cells in value order, a cell with more than
   :data:`BUCKET_ROWS` rows (or a 256th of the column) split by further bits of the value, or, when it holds one
   value only (a heavy tie, e.g. 60% zeros), by the top bits of the rows' tie words.
2. *Histogram* (a second job): per batch, the counts of values at the minimum and in
   each interval between the cut points (:func:`~polars_ppdm.kernels.ecdf.interval_counts`,
   additive over batches) and the rows per sort bucket; per column, the totals of the
   blocks of 2048 ranks of the sorted uniforms
   (:func:`~polars_ppdm.kernels.spacings.block_totals`, one task computing any block).  A
   Spark group-by sums them; the driver turns the counts into the smoothed CDF with the
   kernel's formula (:func:`~polars_ppdm.kernels.ecdf.cdf_of_counts`), the bucket counts
   into offsets, and the block totals into block offsets
   (:func:`~polars_ppdm.kernels.spacings.block_offsets`, the sequential sum Polars does).
3. *Ranks* (lazy, in the returned plan): each row gets its value's order key ``k``, its
   tie word ``t`` (as in Polars: ``tie_words(secret, stream_id(ecdf_stream(c) + '/ties'),
   row_keys)``), its bucket and the bucket's offset; Spark's own sort ranks the rows
   inside each bucket (``row_number()`` over a window partitioned by bucket, ordered by
   ``(k, t)``), so the rank is offset + row number.  The generated sample needs no
   sort: value r is ``inverse_cdf`` of the r-th smallest keyed uniform, which a task
   draws at rank r from the block offsets and its block's own draws
   (:func:`~polars_ppdm.kernels.spacings.sorted_uniforms_at`, bit for bit the Polars
   :func:`~polars_ppdm.kernels.spacings.sorted_uniforms`); a join on the rank gives the
   row of rank r the r-th smallest generated value, exactly :func:`polars_ppdm.ecdf_resample`.

Buckets are pure functions of a row's value and key, and the order inside a bucket is a
total order on (value, tie word): neither partitioning, nor Spark's adaptive execution,
nor a retried task can move a row to another rank.  Only aggregates cross to the driver:
counts, minima and maxima per (column, cell), counts per histogram interval and per bucket.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from polars_ppdm._encoding import check_key_dtype, null_key_message, row_keys
from polars_ppdm._validation import check_bool, check_choice, check_columns, check_numeric
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.ecdf import (
    cdf_of_counts,
    cut_points,
    interval_counts,
    inverse_cdf,
    order_keys,
    tie_words,
)
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.kernels.release_key import finish_digest, release_key, row_words
from polars_ppdm.kernels.spacings import BLOCK, block_offsets, block_totals, sorted_uniforms_at
from polars_ppdm.perturb.ecdf import (
    LINKS,
    _check_bins,
    column_label,
    constant_message,
    ecdf_stream,
    not_finite_message,
    rounded_into,
    too_few_message,
    too_wide_message,
)
from polars_ppdm.secret import SecretLike, resolve_secret
from polars_ppdm.spark._engine import (
    check_key,
    free_checkpoint,
    fresh_columns,
    map_polars,
    polars_schema,
    raise_executor_errors,
    shipped_key,
    spark_column,
    spark_frame,
    spark_schema,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame as SparkFrame

__all__ = ["BUCKETS", "BUCKET_ROWS", "ecdf_resample"]

_FUNC = "ecdf_resample"

#: Rows a sort bucket holds at most (as far as splitting cells can tell): one bucket is
#: ranked by one task's sort (which spills to disk when it must).  Smaller columns aim at
#: :data:`BUCKETS` buckets, so that the sorts of a column run in parallel.  Neither
#: changes any result.
BUCKET_ROWS = 1 << 20
BUCKETS = 256

_SIGN = np.uint64(1 << 63)
_CELL_SHIFT = np.uint64(48)  # a cell: the top 16 bits of the unsigned order key
_SUB_BITS = 16  # a cell splits into at most 2**16 buckets
_MAX_SUB_BITS = 16


def _finite(batch: pl.DataFrame, column: str) -> tuple[np.ndarray, int]:
    """The column's non-null values as float64 with -0.0 made 0.0 (the values Polars
    ranks and bins), and how many of them were NaN or infinite (left out)."""
    values = batch[column].drop_nulls().cast(pl.Float64).to_numpy()
    finite = np.isfinite(values)
    bad = len(values) - int(finite.sum())
    return (values[finite] if bad else values) + 0.0, bad


def _unsigned_keys(values: np.ndarray) -> np.ndarray:
    """:func:`~polars_ppdm.kernels.ecdf.order_keys` as uint64 (unsigned order = value order)."""
    return order_keys(values).view(np.uint64) ^ _SIGN


@dataclass(frozen=True)
class _Plan:
    """How one column's rows fall into sort buckets: cells (top 16 bits of the unsigned
    order key) in order; a heavy cell split into ``2**bits`` buckets by the next bits of
    the key or, when it holds a single value, by the top bits of the tie word."""

    cells: np.ndarray  # sorted uint64 heavy cells
    bits: np.ndarray  # uint64 split bits per heavy cell
    by_tie: np.ndarray  # bool per heavy cell

    def buckets(self, unsigned: np.ndarray, ties: Any) -> np.ndarray:
        """Bucket key (cell << 16 | sub-bucket), ascending with (value, tie word);
        ``ties(rows)`` gives the tie words of the rows at those indices."""
        cell = unsigned >> _CELL_SHIFT
        sub = np.zeros(len(unsigned), dtype=np.uint64)
        if len(self.cells) and len(unsigned):
            at = np.minimum(np.searchsorted(self.cells, cell), len(self.cells) - 1)
            rows = np.flatnonzero(self.cells[at] == cell)
            bits, by_tie = self.bits[at[rows]], self.by_tie[at[rows]]
            by_key = rows[~by_tie]
            shift = _CELL_SHIFT - bits[~by_tie]
            sub[by_key] = (unsigned[by_key] >> shift) & ((np.uint64(1) << bits[~by_tie]) - np.uint64(1))
            tied = rows[by_tie]
            if len(tied):
                sub[tied] = ties(tied) >> (np.uint64(64) - bits[by_tie])
        return ((cell << np.uint64(_SUB_BITS)) | sub).view(np.int64)


def _plan(cells: np.ndarray, counts: np.ndarray, kmin: np.ndarray, kmax: np.ndarray, target: int) -> _Plan:
    heavy = counts > target
    bits = np.array(
        [min(_MAX_SUB_BITS, math.ceil(math.log2(int(c) / target))) for c in counts[heavy]], dtype=np.uint64
    )
    return _Plan(cells[heavy].astype(np.uint64), bits, kmin[heavy] == kmax[heavy])


def _refuse(link: str, shuffle: bool) -> None:
    if link == "none":
        msg = (
            "polars_ppdm.spark.ecdf_resample supports link='rank' only. Got link='none', which "
            "gives row i the i-th generated value: it needs row positions, and a Spark DataFrame "
            "has none (they would change with the partitioning). Use link='rank' (the default), "
            "or polars_ppdm.ecdf_resample on a Polars frame."
        )
        raise InvalidParameterError(msg)
    if shuffle:
        msg = (
            "polars_ppdm.spark.ecdf_resample cannot shuffle: shuffle=True sets the output row "
            "order, and a Spark DataFrame has no row order to set (nor an input order for the "
            "output to leak: Spark's output order follows its shuffles, not the input rows). "
            "Use shuffle=False (the default), or polars_ppdm.ecdf_resample on a Polars frame."
        )
        raise InvalidParameterError(msg)


def ecdf_resample(
    frame: SparkFrame,
    columns: str | Sequence[str],
    *,
    bins: int | Sequence[int] | Mapping[str, int] = 100,
    secret: SecretLike = None,
    key: str | None = None,
    link: str = "rank",
    shuffle: bool = False,
    round_integers: bool = False,
) -> SparkFrame:
    """:func:`polars_ppdm.ecdf_resample` on a Spark DataFrame: numeric columns replaced by
    draws from their smoothed ECDF, re-linked by rank, with the same bits as Polars for
    the same secret and keys.

    The histogram is a Spark aggregation, the ranks come from Spark's own sort, and the
    generated sample from the keyed randomness (draw i at key i); nothing row-level is
    collected to the driver.  Three Spark jobs run at the call (the input's checkpoint,
    the census and the histogram, whose small results the driver needs); the returned
    frame is lazy, over the checkpoint.

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        Classic or Spark Connect.  Other columns stay with their row.
    columns, bins, round_integers
        As in :func:`polars_ppdm.ecdf_resample`.
    secret : Secret, bytes, hex str, 'env:NAME', int or None
        Resolved once, on the driver, and shipped to the executors with the tasks.  None
        draws one fresh secret for the call.
    key : str
        Required: the row-key column (integer or string, no nulls) whose keyed words break
        ties between equal values.  A Spark DataFrame has no row order to fall back on.
        Rows that share both value and key may swap their released values (as in Polars,
        where they keep their input order, which Spark does not have): keep the key unique.
    link : {'rank'}
        Only ``'rank'``: ``'none'`` gives row i the i-th generated value, and a Spark
        DataFrame has no row positions.
    shuffle : bool
        Only False: a Spark DataFrame has no row order to set.

    Returns
    -------
    pyspark.sql.DataFrame
        Same columns (in order) and rows; the named columns as DoubleType (integer columns
        in their type with ``round_integers``), nulls still null.  Row order is Spark's.

    Raises
    ------
    InvalidParameterError
        With the Polars messages: a column missing or not numeric, bad ``bins``, a key
        with nulls, NaN or infinite values, fewer than 2 non-null values, a constant
        column, a range beyond float64; and for ``link='none'``, ``shuffle=True`` or no key.

    Notes
    -----
    The input is read once, into a local checkpoint (``localCheckpoint``, kept in the
    executors' memory and disk) that the census, the histogram and every action on the
    returned frame read: the release is of the data the call saw, whatever happens to
    the source afterwards.  The checkpoint holds the whole input (every column) until
    the returned frame is garbage-collected; with dynamic allocation, keep executors
    that hold it alive (``spark.dynamicAllocation.cachedExecutorIdleTimeout``) or the
    lost blocks fail a later action.  Per resampled column
    the plan runs one ``mapInArrow`` over the rows (order keys, tie words, buckets), two
    shuffles of the rows (the sort by bucket, the join on the rank) and one of the
    generated sample (the join: its values are drawn in rank order, unsorted).  To the
    driver cross only aggregates: per column and cell of the value's order key its
    count, minimum and maximum; the counts per histogram interval and per sort bucket;
    the total of each block of 2048 of the sample's keyed draws.

    References
    ----------
    Li, Wang, Su, "ECDF-based data perturbation with rank re-linking", *Computer
    Engineering* 2012 (paper 000).
    """
    sdf = spark_frame(frame, _FUNC)
    schema = polars_schema(sdf)
    names = list(schema.names())
    cols = check_columns(columns, names, _FUNC)
    check_numeric(schema, cols, _FUNC)
    bins_of = _check_bins(bins, cols)
    check_choice("link", link, LINKS, _FUNC)
    check_bool("shuffle", shuffle, _FUNC)
    _refuse(link, bool(shuffle))
    key_name = check_key(key, schema, _FUNC)
    check_key_dtype(schema[key_name], key_name, _FUNC)
    resolved = resolve_secret(secret)
    key_bytes = shipped_key(resolved.key)  # the executors need the key itself
    check_bool("round_integers", round_integers, _FUNC)
    out_dtype = {c: (schema[c] if round_integers and schema[c].is_integer() else pl.Float64()) for c in cols}
    out_types = spark_schema(pl.Schema(out_dtype), _FUNC)

    # One snapshot of the input for the census, the histogram and every later action on
    # the result: the draws are fixed at the call from what the census read, so a source
    # read again at a later action (appended to, or a row changed) would be ranked among
    # a sample drawn for other data (attack review 61: one changed row came out null, the
    # others as before). A lost block of it fails the job; it is never recomputed.
    sdf = sdf.localCheckpoint(eager=True)
    try:
        census = _census(sdf, cols, key_name, key_bytes)
        if census.rows and census.key_nulls:
            raise InvalidParameterError(null_key_message(key_name, _FUNC))
        for c in cols if census.rows else ():  # an empty frame: empty in, empty out (below)
            census.check(c)
    except Exception:
        free_checkpoint(sdf)  # a refused call holds nothing
        raise
    if census.rows == 0:  # an empty frame releases nothing: empty in, empty out
        return sdf.select(
            *(
                spark_column(n).cast(out_types[n].dataType).alias(n) if n in cols else spark_column(n)
                for n in names
            )
        )
    # Every draw of a column under its own key, of its values (perturb.ecdf.column_key).
    own = {c: census.key(key_bytes, c, bins_of[c]) for c in cols}
    cuts = {c: cut_points(census.low[c], census.high[c], bins_of[c]) for c in cols}
    target = {c: min(BUCKET_ROWS, max(1, -(-census.n[c] // BUCKETS))) for c in cols}
    plans = {c: census.plan(c, target[c]) for c in cols}
    counts = _histogram(sdf, cols, key_name, own, cuts, plans, census.n, key_bytes)

    # The key may be resampled too: ties use the original key, so keep a copy.
    tie_key = key_name
    if key_name in cols:
        (tie_key,) = fresh_columns(names, "__ppdm_key")
        sdf = sdf.withColumn(tie_key, spark_column(key_name))
    out = sdf
    for i, c in enumerate(cols):
        cdf = cdf_of_counts(counts.intervals(i, bins_of[c] + 1))
        out = _resample_column(
            out,
            c,
            tie_key,
            own[c],
            cuts[c],
            cdf,
            plans[c],
            counts.offsets(i, 1),
            block_offsets(counts.block_totals(i, census.n[c] // BLOCK + 1)),
            census.n[c],
            out_dtype[c],
            key_bytes,
        )
    return out.select(*(spark_column(n) for n in names))


class _Census:
    """The census's aggregates per column, on the driver."""

    def __init__(self, rows: int, key_nulls: int, cols: list[str], cells: list[Any]) -> None:
        self.rows, self.key_nulls, self.cols = rows, key_nulls, cols
        self.n: dict[str, int] = {}
        self.low: dict[str, float] = {}
        self.high: dict[str, float] = {}
        self.bad: dict[str, int] = {}
        self.word_sum: dict[str, int] = {}
        self._cells: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        for i, c in enumerate(cols):
            mine = sorted((r for r in cells if r["col"] == i and r["cell"] >= 0), key=lambda r: r["cell"])
            self.bad[c] = sum(int(r["bad"]) for r in cells if r["col"] == i and r["cell"] < 0)
            # The values' digest words, summed per batch mod 2^64 and then per 32-bit half.
            low_half = sum(int(r["dlo"]) for r in cells if r["col"] == i and r["cell"] < 0)
            high_half = sum(int(r["dhi"]) for r in cells if r["col"] == i and r["cell"] < 0)
            self.word_sum[c] = (low_half + (high_half << 32)) % 2**64
            self.n[c] = sum(int(r["n"]) for r in mine)
            self.low[c] = min((float(r["vmin"]) for r in mine), default=math.nan)
            self.high[c] = max((float(r["vmax"]) for r in mine), default=math.nan)
            self._cells[c] = (
                np.array([r["cell"] for r in mine], dtype=np.uint64),
                np.array([r["n"] for r in mine], dtype=np.int64),
                np.array([r["kmin"] for r in mine], dtype=np.int64),
                np.array([r["kmax"] for r in mine], dtype=np.int64),
            )

    def check(self, c: str) -> None:
        """The checks of the Polars function, with its messages, in its order."""
        if self.bad[c]:
            raise InvalidParameterError(not_finite_message(c))
        if self.n[c] < 2:
            raise InvalidParameterError(too_few_message(c))
        low, high = self.low[c], self.high[c]
        if low == high:
            raise InvalidParameterError(constant_message(c))
        if not np.isfinite(high - low):
            raise InvalidParameterError(too_wide_message(c))

    def plan(self, c: str, target: int) -> _Plan:
        return _plan(*self._cells[c], target)

    def key(self, secret: bytes, c: str, bins: int) -> bytes:
        """The column's own key (:func:`polars_ppdm.perturb.ecdf.column_key`) from the
        census's digest of its values."""
        return release_key(secret, column_label(c, bins), finish_digest(secret, self.word_sum[c], self.n[c]))


def _census(sdf: SparkFrame, cols: list[str], key: str, secret: bytes) -> _Census:
    """Job 1: per (column, cell) counts, minimum and maximum order keys and values; per
    column its NaN/inf count and the halves of its values' digest words; the row count
    and the null keys."""
    from pyspark.sql import functions as F

    fields = {
        "col": pl.Int32(),
        "cell": pl.Int64(),
        "n": pl.Int64(),
        "kmin": pl.Int64(),
        "kmax": pl.Int64(),
        "vmin": pl.Float64(),
        "vmax": pl.Float64(),
        "bad": pl.Int64(),
        "dlo": pl.Int64(),
        "dhi": pl.Int64(),
        "rows": pl.Int64(),
        "key_nulls": pl.Int64(),
    }
    schema = pl.Schema(fields)
    needed = list(dict.fromkeys([*cols, key]))

    def count(batch: pl.DataFrame) -> pl.DataFrame:
        parts = [
            pl.DataFrame(
                {"col": [-1], "cell": [-1], "rows": [batch.height], "key_nulls": [batch[key].null_count()]}
            )
        ]
        for i, c in enumerate(cols):
            values, bad = _finite(batch, c)
            cell = (_unsigned_keys(values) >> _CELL_SHIFT).view(np.int64)
            parts.append(
                pl.DataFrame({"cell": cell, "k": order_keys(values), "v": values})
                .group_by("cell")
                .agg(
                    n=pl.len(),
                    kmin=pl.col("k").min(),
                    kmax=pl.col("k").max(),
                    vmin=pl.col("v").min(),
                    vmax=pl.col("v").max(),
                )
                .with_columns(col=pl.lit(i))
            )
            # The batch's sum of the words mod 2^64, as two 32-bit halves: Spark adds the
            # halves over batches in Int64 without overflow below 2^31 batches (a sum of
            # the words' own halves overflowed past ~4e9 rows: ANSI mode raises).
            total = int(row_words(secret, [values]).sum(dtype=np.uint64)) if len(values) else 0
            halves = {"dlo": [total & 0xFFFF_FFFF], "dhi": [total >> 32]}
            parts.append(pl.DataFrame({"col": [i], "cell": [-1], "bad": [bad], **halves}))
        return pl.concat(parts, how="diagonal_relaxed").select(
            pl.col(name).cast(dtype).fill_null(0)
            if name in ("n", "bad", "dlo", "dhi", "rows", "key_nulls")
            else pl.col(name).cast(dtype)
            for name, dtype in fields.items()
        )

    partial = map_polars(sdf.select(*(spark_column(n) for n in needed)), count, schema, _FUNC)
    totals = partial.groupBy("col", "cell").agg(
        F.sum("n").alias("n"),
        F.min("kmin").alias("kmin"),
        F.max("kmax").alias("kmax"),
        F.min("vmin").alias("vmin"),
        F.max("vmax").alias("vmax"),
        F.sum("bad").alias("bad"),
        F.sum("dlo").alias("dlo"),
        F.sum("dhi").alias("dhi"),
        F.sum("rows").alias("rows"),
        F.sum("key_nulls").alias("key_nulls"),
    )
    result = raise_executor_errors(totals.collect, totals)
    meta = [r for r in result if r["col"] == -1]
    rows = int(meta[0]["rows"]) if meta else 0
    key_nulls = int(meta[0]["key_nulls"]) if meta else 0
    return _Census(rows, key_nulls, cols, [r.asDict() for r in result if r["col"] >= 0])


class _Counts:
    """The histogram job's sums per (column, kind, id), on the driver."""

    def __init__(self, rows: list[Any]) -> None:
        self._by: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        grouped: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for r in rows:
            grouped.setdefault((int(r["col"]), int(r["kind"])), []).append((int(r["id"]), int(r["count"])))
        for where, pairs in grouped.items():
            pairs.sort()
            self._by[where] = (
                np.array([p[0] for p in pairs], dtype=np.int64),
                np.array([p[1] for p in pairs], dtype=np.int64),
            )

    def _get(self, col: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
        empty = np.empty(0, dtype=np.int64)
        return self._by.get((col, kind), (empty, empty))

    def intervals(self, col: int, size: int) -> np.ndarray:
        """Counts at the minimum and per interval (kind 0), zeros included."""
        ids, counts = self._get(col, 0)
        dense = np.zeros(size, dtype=np.int64)
        dense[ids] = counts
        return dense

    def offsets(self, col: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted bucket keys (kind 1) and the rank of each bucket's first row."""
        ids, counts = self._get(col, kind)
        return ids, np.cumsum(counts) - counts

    def block_totals(self, col: int, blocks: int) -> np.ndarray:
        """The totals of the sorted uniforms' blocks (kind 2: a block's float64 total as
        the bits of a long, one row per block, so the group-by's sum is that row)."""
        ids, bits = self._get(col, 2)
        assert np.array_equal(ids, np.arange(blocks))
        return bits.view(np.float64)


def _histogram(
    sdf: SparkFrame,
    cols: list[str],
    key: str,
    own: dict[str, bytes],
    cuts: dict[str, np.ndarray],
    plans: dict[str, _Plan],
    n: dict[str, int],
    secret: bytes,
) -> _Counts:
    """Job 2: per column, the counts per interval (kind 0), rows per sort bucket (kind 1)
    and the totals of the sorted uniforms' blocks (kind 2), summed by a Spark group-by.
    ``secret``: the user's, which string keys are hashed under (as in Polars)."""
    from pyspark.sql import functions as F

    schema = pl.Schema({"col": pl.Int32(), "kind": pl.Int32(), "id": pl.Int64(), "count": pl.Int64()})
    needed = list(dict.fromkeys([*cols, key]))
    streams = {c: stream_id(ecdf_stream(c) + "/ties") for c in cols}

    def part(i: int, kind: int, ids: np.ndarray, counts: np.ndarray) -> pl.DataFrame:
        return pl.DataFrame({"col": i, "kind": kind, "id": ids, "count": counts}, schema=schema)

    def count(batch: pl.DataFrame) -> pl.DataFrame:
        parts = [pl.DataFrame(schema=schema)]
        for i, c in enumerate(cols):
            values, _ = _finite(batch, c)  # the census refused NaN and infinities
            per_interval = interval_counts(np.sort(values), cuts[c])
            filled = np.flatnonzero(per_interval)
            parts.append(part(i, 0, filled, per_interval[filled]))
            keys = batch[key].filter(batch[c].is_not_null())

            def ties(rows: np.ndarray, keys: pl.Series = keys, c: str = c) -> np.ndarray:
                return tie_words(own[c], streams[c], row_keys(keys, secret=secret, func=_FUNC)[rows])

            buckets = plans[c].buckets(_unsigned_keys(values), ties)  # ties only in tied heavy cells
            ids, counts = np.unique(buckets, return_counts=True)
            parts.append(part(i, 1, ids, counts))
        return pl.concat(parts)

    partial = map_polars(sdf.select(*(spark_column(name) for name in needed)), count, schema, _FUNC)
    spark = sdf.sparkSession
    for i, c in enumerate(cols):

        def sums(
            batch: pl.DataFrame,
            i: int = i,
            stream: int = stream_id(ecdf_stream(c)),
            count: int = n[c],
            secret: bytes = own[c],
        ) -> pl.DataFrame:
            blocks = batch["id"].to_numpy()
            return part(i, 2, blocks, block_totals(secret, stream, count, blocks).view(np.int64))

        partial = partial.unionByName(map_polars(spark.range(n[c] // BLOCK + 1), sums, schema, _FUNC))
    totals = partial.groupBy("col", "kind", "id").agg(F.sum("count").alias("count"))
    return _Counts(raise_executor_errors(totals.collect, totals))


def _resample_column(
    sdf: SparkFrame,
    c: str,
    key: str,
    secret: bytes,
    cuts: np.ndarray,
    cdf: np.ndarray,
    plan: _Plan,
    bucket_offsets: tuple[np.ndarray, np.ndarray],
    spacings: tuple[np.ndarray, float],
    n: int,
    dtype: pl.DataType,
    unit_secret: bytes,
) -> SparkFrame:
    """Lazy: ``sdf`` with column ``c`` resampled (the rows' ranks joined to the sample's);
    ``secret`` is the column's own key, ``unit_secret`` the user's (string keys' hash)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    schema = polars_schema(sdf)
    names = list(schema.names())
    k, t, bucket, offset, rank, value = fresh_columns(
        names, *("__ppdm_" + s for s in ("k", "t", "bucket", "offset", "rank", "value"))
    )
    stream, tie_stream = stream_id(ecdf_stream(c)), stream_id(ecdf_stream(c) + "/ties")
    bucket_ids, offsets = bucket_offsets

    def rank_keys(batch: pl.DataFrame) -> pl.DataFrame:
        valid = batch[c].is_not_null().to_numpy()
        values, _ = _finite(batch, c)
        ties = tie_words(secret, tie_stream, row_keys(batch[key], secret=unit_secret, func=_FUNC))
        present = ties[valid]
        keys = plan.buckets(_unsigned_keys(values), lambda rows: present[rows])
        # Rows without a value get no rank, but a negative one spread by their tie word
        # (no sample rank matches it), so that they do not all meet in one task.
        spread = (ties >> np.uint64(1)).view(np.int64)
        ranked = {
            k: np.zeros(len(ties), dtype=np.int64),
            t: (ties ^ _SIGN).view(np.int64),  # signed order = unsigned order
            bucket: -1 - (spread >> 53),
            offset: -1 - spread,
        }
        ranked[k][valid] = order_keys(values)
        ranked[bucket][valid] = keys
        ranked[offset][valid] = offsets[np.searchsorted(bucket_ids, keys)]
        return batch.with_columns(pl.Series(name, column) for name, column in ranked.items())

    with_keys = pl.Schema({**schema, k: pl.Int64(), t: pl.Int64(), bucket: pl.Int64(), offset: pl.Int64()})
    rows = map_polars(sdf, rank_keys, with_keys, _FUNC)
    in_bucket = F.row_number().over(
        Window.partitionBy(spark_column(bucket)).orderBy(spark_column(k), spark_column(t))
    )
    ranked_row = F.when(spark_column(bucket) >= 0, spark_column(offset) + in_bucket - 1).otherwise(
        spark_column(offset)
    )
    rows = rows.withColumn(rank, ranked_row).drop(k, t, bucket, offset)

    block_starts, total = spacings

    def draws(batch: pl.DataFrame) -> pl.DataFrame:
        ranks = batch["id"].to_numpy()
        uniforms = sorted_uniforms_at(secret, stream, ranks, block_starts, total)
        released = pl.Series(value, inverse_cdf(uniforms, cuts, cdf))
        if dtype != pl.Float64:  # round_integers, as Polars rounds
            released = released.to_frame().select(rounded_into(pl.col(value), dtype)).to_series()
        return pl.DataFrame([pl.Series(rank, ranks), released])

    # Value r is drawn at rank r: no sort of the sample, only the join below.
    sample_schema = pl.Schema({rank: pl.Int64(), value: dtype})
    sample = map_polars(sdf.sparkSession.range(n), draws, sample_schema, _FUNC)

    # Rows without a value have a negative rank: no match, so a null, as in Polars.
    released = rows.join(sample, on=rank, how="left")
    # The other columns made a round trip through Arrow: give them back their types.
    types = {field.name: field.dataType for field in sdf.schema.fields}
    out_type = spark_schema(pl.Schema({c: dtype}), _FUNC)[c].dataType
    return released.select(
        *(
            spark_column(value).cast(out_type).alias(c)
            if name == c
            else spark_column(name).cast(types[name]).alias(name)
            for name in names
        )
    )
