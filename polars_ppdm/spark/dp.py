"""Differentially private releases on Spark DataFrames: the Polars releases, counted by
Spark aggregations and noised on the driver.

What runs where:

* executors -- through ``mapInArrow``, the Polars/NumPy code of the release on every
  Arrow batch: the contribution words of the privacy unit
  (:func:`polars_ppdm.dp._common.unit_words`), the flat bin of a histogram
  (:meth:`~polars_ppdm.dp.histogram.HistogramRequest.flat_bin`), the Z-order cell of a
  point (:func:`polars_ppdm.kernels.quadtree.morton_codes`); then Spark keeps each
  unit's ``max_contributions`` rows of smallest word (a window ``row_number()``) and
  counts the rows per bin / per tree node / per grid cell (group-bys);
* driver -- the checks (the Polars ones, before anything runs), the accountant (charged
  before any Spark job), and the release from the true counts by the same code as
  Polars: the noise keyed by bin or node, so that neither partitioning nor a retried task
  changes a bit.

What crosses to the driver: the number of rows after bounding and of non-finite ones,
and true counts per non-empty bin, per examined tree node or per grid cell.  Never a row.
The result equals the Polars release for the same secret, whatever the partitioning and
row order.

References
----------
Dwork, McSherry, Nissim, Smith, "Calibrating noise to sensitivity", TCC 2006.
Zhang, Cheng, DPQT k-means (paper 004).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pyarrow as pa

from polars_ppdm._validation import check_bool
from polars_ppdm.dp._common import check_accountant, check_points, release_secret, unit_words
from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock
from polars_ppdm.dp.histogram import BIN, check_histogram, noisy_grid
from polars_ppdm.dp.kmeans import DPKMeansResult, check_kmeans, release_kmeans
from polars_ppdm.dp.quadtree import check_quadtree, release_quadtree
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.quadtree import CODE_BITS, CellCounts, morton_codes
from polars_ppdm.kernels.release_key import finish_digest, release_key, row_words
from polars_ppdm.secret import SecretLike
from polars_ppdm.spark._engine import (
    free_checkpoint,
    fresh_columns,
    map_polars,
    polars_schema,
    raise_executor_errors,
    shipped_key,
    spark_column,
    spark_frame,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame as SparkFrame

__all__ = ["dp_histogram", "dp_kmeans", "dp_quadtree"]

# The points' columns: fixed names, as the frames that hold them hold no column of the
# user's (the points are computed from the source's batches, not added to them).
_FINITE = "__ppdm_finite"
_CODE = "__ppdm_code"
_CELL = "__ppdm_cell"
_WORD_QUARTERS = tuple(f"__ppdm_digest_{i}" for i in range(4))
_SIGN = np.uint64(1 << 63)


def _bounded(
    sdf: SparkFrame,
    columns: list[str],
    key: str | None,
    contributions: int,
    secret: bytes,
    func: str,
    outputs: Callable[[pl.DataFrame], pl.DataFrame],
    out_schema: pl.Schema,
) -> SparkFrame:
    """``outputs(batch)`` of every row a privacy unit keeps: without ``key`` every row;
    with it, each unit's ``contributions`` rows of smallest contribution word (the words
    of :func:`~polars_ppdm.dp._common.unit_words`, computed with the outputs in one
    ``mapInArrow``; kept by a window ``row_number()`` over the unit ordered by word).
    Rows of equal word hold the same values in ``columns``: whichever Spark keeps, the
    release is the same."""
    names = list(dict.fromkeys([*([key] if key is not None else []), *columns]))
    source = sdf.select(*(spark_column(name) for name in names))  # a name "a.b" is no struct field
    if key is None:
        return map_polars(source, outputs, out_schema, func)
    unit_dtype = polars_schema(source)[key]
    # Named apart from the outputs, whatever ``outputs`` names them.
    unit, word, rank = fresh_columns(
        out_schema.names(), "__ppdm_unit", "__ppdm_unit_word", "__ppdm_unit_rank"
    )

    def transform(batch: pl.DataFrame) -> pl.DataFrame:
        words = unit_words(batch[key], [batch[c] for c in columns], secret, func, key=key)
        # Unsigned order as signed order: Spark has no unsigned 64-bit integer.
        ordered = (words ^ _SIGN).view(np.int64)
        return outputs(batch).with_columns(batch[key].alias(unit), pl.Series(word, ordered, dtype=pl.Int64))

    schema = pl.Schema([*out_schema.items(), (unit, unit_dtype), (word, pl.Int64)])
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    mapped = map_polars(source, transform, schema, func)
    order = Window.partitionBy(spark_column(unit)).orderBy(spark_column(word))
    return (
        mapped.withColumn(rank, F.row_number().over(order))
        .filter(spark_column(rank) <= contributions)
        .drop(unit, word, rank)
    )


def _collect(sdf: SparkFrame) -> pl.DataFrame:
    """An aggregate's (small) result on the driver; our errors raised in a task come back
    as themselves."""
    table = raise_executor_errors(sdf.toArrow, sdf)  # under arrow_batches: no tuning by the user
    return pl.DataFrame(pl.from_arrow(table))


def dp_histogram(
    frame: SparkFrame,
    columns: str | Sequence[str],
    *,
    bounds: Mapping[str, tuple[float, float]] | Sequence | str | None = None,
    bins: int | Sequence[int] | Mapping[str, int] = 10,
    epsilon: float | None = None,
    secret: SecretLike = None,
    key: str | None = None,
    max_contributions: int = 1,
    accountant: BudgetAccountant | ParallelBlock | None = None,
    non_negative: bool = False,
    mechanism: str = "laplace",
    rho: float | None = None,
) -> SparkFrame:
    """:func:`polars_ppdm.dp_histogram` on a Spark DataFrame: the same noisy grid, bit
    for bit, for the same secret.

    The bins of the rows are computed on the executors by the Polars expression of the
    Polars release (same float operations), the privacy unit bounded there (see the
    module), the rows counted per bin by a Spark group-by; the non-empty bins' counts
    come to the driver, where the same code as Polars fills the grid and adds the
    noise keyed by the bin's flat index: two-sided geometric (``mechanism="laplace"``) or
    discrete Gaussian (``mechanism="gaussian"``, rho-zCDP).

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        Classic or Spark Connect.
    columns, bounds, bins, epsilon, max_contributions, mechanism, rho
        As in :func:`polars_ppdm.dp_histogram` (``bounds="data"`` is refused there and
        here; ``mechanism="gaussian"`` takes ``rho`` and no ``epsilon``, and charges the
        accountant a rho).
    secret : Secret, bytes, hex str, 'env:NAME', int or None
        Resolved once, on the driver, and shipped to the executors with the tasks (it
        keys which rows a unit keeps).
    key : str, optional
        The privacy unit's column (integer or string); nulls are refused.  Without it
        each row is its own unit.
    accountant : BudgetAccountant, optional
        Charged before any Spark job runs; an over-budget call reads nothing.
    non_negative : bool
        Clip the noisy counts at 0 (post-processing), as in Polars.

    Returns
    -------
    pyspark.sql.DataFrame
        One row per grid cell (the grid is built on the driver, at most 50 million cells):
        ``<c>_bin``, ``<c>_low``, ``<c>_high`` per column, then the noisy ``count``.
        The counting job has run: errors in the data (nulls, NaN, null keys) are raised
        by this call, not by a later action.

    References
    ----------
    Ghosh, Roughgarden, Sundararajan, STOC 2009 (geometric mechanism); Zhang, Cheng,
    DPQT k-means (paper 004).
    """
    func = "dp_histogram"
    sdf = spark_frame(frame, func)
    request = check_histogram(
        polars_schema(sdf),
        columns,
        bounds=bounds,
        bins=bins,
        epsilon=epsilon,
        key=key,
        max_contributions=max_contributions,
        mechanism=mechanism,
        rho=rho,
    )
    non_negative = check_bool("non_negative", non_negative, func)
    check_accountant(accountant, func)
    request.charge(accountant, check_only=True)  # refused before a row is read if over budget
    key_bytes = shipped_key(release_secret(secret, func))
    flat = request.flat_bin().alias(BIN)
    rows = _bounded(
        sdf,
        request.columns,
        key,
        request.contributions,
        key_bytes,
        func,
        lambda batch: batch.select(flat),
        pl.Schema({BIN: pl.Int64}),
    )
    counts = _collect(rows.groupBy(BIN).count())
    grid = noisy_grid(
        request, counts.lazy(), key_bytes, non_negative=non_negative, accountant=accountant
    ).collect()
    return sdf.sparkSession.createDataFrame(grid.to_arrow(compat_level=pl.CompatLevel.oldest()))


class _Points:
    """The points a release reads, as Spark holds them after contribution bounding: each
    one's Z-order code at the finest height the codes hold (``CODE_BITS // d``) and
    whether it is finite, computed once on the executors by the Polars kernel and cached.
    The tree (or grid) reads them only through :meth:`rows` and :meth:`counts_up_to`.

    A code at a coarser level is the finest code shifted right by d bits per level: the
    cell index ``floor(share * 2^L)`` is ``floor(share * 2^H) >> (H - L)`` exactly (the
    scaling by a power of two is exact, the clip into the box commutes with the shift),
    so the counts equal those of :func:`~polars_ppdm.kernels.quadtree.point_counts`.
    """

    def __init__(
        self,
        sdf: SparkFrame,
        columns: list[str],
        key: str | None,
        contributions: int,
        secret: bytes,
        func: str,
        lows: np.ndarray,
        highs: np.ndarray,
    ) -> None:
        d = len(columns)
        finest = CODE_BITS // d

        def outputs(batch: pl.DataFrame) -> pl.DataFrame:
            points = batch.select(pl.col(c).cast(pl.Float64) for c in columns).to_numpy()
            # The points' digest words (as table_digest of the Polars path), in four 16-bit
            # quarters: Spark adds longs (ANSI mode raises on overflow), and 2^47 rows of
            # 16-bit values still fit.
            words = row_words(secret, list(points.T))
            finite = np.isfinite(points).all(axis=1)
            if not finite.all():  # refused before any count is read; no NaN in the kernel
                points = np.where(finite[:, None], points, lows)
            return pl.DataFrame(
                {
                    _CODE: morton_codes(points, lows, highs, finest),
                    _FINITE: finite,
                    **{
                        name: ((words >> np.uint64(16 * i)) & np.uint64(0xFFFF)).astype(np.int64)
                        for i, name in enumerate(_WORD_QUARTERS)
                    },
                }
            )

        schema = pl.Schema(
            [(_CODE, pl.Int64()), (_FINITE, pl.Boolean()), *((name, pl.Int64()) for name in _WORD_QUARTERS)]
        )
        # A local checkpoint, not a cache: the digest and every count are read from the same
        # points, which are never recomputed from a source that may have changed since.
        self.points = _bounded(
            sdf, columns, key, contributions, secret, func, outputs, schema
        ).localCheckpoint(eager=True)
        self.columns, self.func, self.d, self.finest = columns, func, d, finest
        self.session = sdf.sparkSession
        self.secret = secret
        self.digest: int | None = None

    def rows(self) -> int:
        """The number of points after bounding; a non-finite point is refused with the
        Polars message (the counts cross to the driver)."""
        from pyspark.sql import functions as F

        totals = _collect(
            self.points.agg(
                F.count(F.lit(1)).alias("rows"),
                F.sum(F.when(F.col(_FINITE), 0).otherwise(1)).alias("bad"),
                *(F.sum(name).alias(name) for name in _WORD_QUARTERS),
            )
        ).row(0)
        rows, bad = int(totals[0]), int(totals[1] or 0)
        check_points(bad, self.columns, self.func)
        word_sum = sum(int(total or 0) << (16 * i) for i, total in enumerate(totals[2:])) % 2**64
        self.digest = finish_digest(self.secret, word_sum, rows)
        return rows

    def release_key(self, label: str) -> bytes:
        """The key of the release's noise (:func:`~polars_ppdm.kernels.release_key.release_key`
        of the points' digest, which :meth:`rows` computed)."""
        assert self.digest is not None, "rows() first"
        return release_key(self.secret, label, self.digest)

    def counts_up_to(self, height: int) -> CellCounts:
        """The true counts of nodes at levels up to ``height``: one group-by per call, of
        the examined nodes only (a broadcast join with them when they are not the whole
        level), so only their counts cross to the driver."""
        from pyspark.sql import functions as F

        if height > self.finest:
            msg = f"counts_up_to: height {height} is past the {self.finest} levels the codes hold."
            raise ValueError(msg)

        def count(level: int, nodes: np.ndarray) -> np.ndarray:
            shift = self.d * (self.finest - level)
            cells = self.points.select(F.shiftright(F.col(_CODE), shift).alias(_CELL))
            if len(nodes) < 1 << (self.d * level):
                wanted = self.session.createDataFrame(pa.table({_CELL: pa.array(nodes, pa.int64())}))
                cells = cells.join(F.broadcast(wanted), _CELL)
            got = _collect(cells.groupBy(_CELL).count()).sort(_CELL)
            found = got[_CELL].to_numpy()
            at = np.minimum(np.searchsorted(found, nodes), max(len(found) - 1, 0))
            out = np.zeros(len(nodes), dtype=np.int64)
            if len(found):
                hit = found[at] == nodes
                out[hit] = got["count"].to_numpy()[at[hit]]
            return out

        return count

    def release(self) -> None:
        free_checkpoint(self.points)


@contextmanager
def _points(
    sdf: SparkFrame,
    columns: list[str],
    key: str | None,
    contributions: int,
    secret: bytes,
    func: str,
    box: tuple[np.ndarray, np.ndarray],
) -> Iterator[_Points]:
    points = _Points(sdf, columns, key, contributions, secret, func, *box)
    try:
        yield points
    finally:
        points.release()


def dp_quadtree(
    frame: SparkFrame,
    columns: str | Sequence[str],
    *,
    bounds: Mapping[str, tuple[float, float]] | Sequence | str | None = None,
    epsilon: float,
    gamma: float = 0.3,
    max_height: int | None = None,
    threshold: float | None = None,
    n: float | None = None,
    secret: SecretLike = None,
    key: str | None = None,
    max_contributions: int = 1,
    accountant: BudgetAccountant | ParallelBlock | None = None,
) -> pl.DataFrame:
    """:func:`polars_ppdm.dp_quadtree` on a Spark DataFrame: the same leaves, bit for bit,
    for the same secret.

    The points stay on the executors: each one's Z-order cell at the tree's height is
    computed there (the Polars kernel), and the tree is grown on the driver from one
    Spark group-by per level that counts the points of the nodes it examines (their
    counts are all that crosses); the noise is keyed by node, as in Polars.

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        Classic or Spark Connect.
    columns, bounds, epsilon, gamma, max_height, threshold, n, max_contributions
        As in :func:`polars_ppdm.dp_quadtree`.
    secret, key, accountant
        As in :func:`polars_ppdm.spark.dp_histogram`.

    Returns
    -------
    polars.DataFrame
        The leaves (a small table, on the driver), as :func:`polars_ppdm.dp_quadtree`.

    References
    ----------
    Zhang, Cheng, DPQT k-means (paper 004), buildDPQuadTree.
    """
    func = "dp_quadtree"
    sdf = spark_frame(frame, func)
    request = check_quadtree(
        polars_schema(sdf),
        columns,
        bounds=bounds,
        epsilon=epsilon,
        gamma=gamma,
        max_height=max_height,
        threshold=threshold,
        n=n,
        key=key,
        max_contributions=max_contributions,
    )
    check_accountant(accountant, func)
    request.charge(accountant, check_only=True)  # refused before a row is read if over budget
    key_bytes = shipped_key(release_secret(secret, func))
    with _points(sdf, request.columns, key, request.contributions, key_bytes, func, request.box()) as points:
        rows = points.rows()  # the points checked: a refusal costs nothing
        request.charge(accountant)
        return release_quadtree(request, rows, points.counts_up_to, points.release_key(request.key_label))


def dp_kmeans(
    frame: SparkFrame,
    columns: str | Sequence[str],
    *,
    k: int,
    epsilon: float,
    bounds: Mapping[str, tuple[float, float]] | Sequence | str | None = None,
    method: str = "quadtree",
    gamma: float = 0.3,
    max_height: int | None = None,
    threshold: float | None = None,
    n: float | None = None,
    iterations: int = 5,
    secret: SecretLike = None,
    key: str | None = None,
    max_contributions: int = 1,
    accountant: BudgetAccountant | ParallelBlock | None = None,
) -> DPKMeansResult:
    """:func:`polars_ppdm.dp_kmeans` on a Spark DataFrame, by ``method="quadtree"``
    (DPQT, paper 004) or ``"grid"`` (EUG): the same centres and buckets, bit for bit,
    for the same secret.

    Both release noisy counts only: the buckets' true counts come from Spark group-bys
    (see :func:`dp_quadtree`), the weighted k-means on them runs on the driver.
    ``method="lloyd"`` is refused (before any budget is spent): DPLloyd releases noisy
    floating-point sums per cluster, and a floating-point sum's last bits depend on the
    order of its terms, which depends on partitioning; its result could neither equal
    the Polars one nor stay the same when a task is retried.  Use ``"quadtree"`` (the
    paper's method, better on unbalanced clusters) or ``"grid"``.

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        Classic or Spark Connect.
    columns, k, epsilon, bounds, method, gamma, max_height, threshold, n, iterations, max_contributions
        As in :func:`polars_ppdm.dp_kmeans`.
    secret, key, accountant
        As in :func:`polars_ppdm.spark.dp_histogram`.

    Returns
    -------
    DPKMeansResult
        As :func:`polars_ppdm.dp_kmeans` (centres and buckets on the driver).

    References
    ----------
    Zhang, Cheng, DPQT k-means (paper 004); Su, Cao, Li, Bertino, Lin, Wang, VLDB
    Journal 2017 (EUG).
    """
    func = "dp_kmeans"
    sdf = spark_frame(frame, func)
    if method == "lloyd":
        msg = (
            "The 'method' parameter of polars_ppdm.spark.dp_kmeans must be 'quadtree' or 'grid' on Spark. "
            "Got 'lloyd': DPLloyd releases noisy floating-point sums per cluster, whose last bits depend on "
            "the order Spark adds the rows in (the partitioning, a retried task), so it could not give the "
            "Polars result nor the same bits twice. Use method='quadtree' (DPQT) or 'grid' (EUG), which "
            "release counts only, or polars_ppdm.dp_kmeans on a Polars frame."
        )
        raise InvalidParameterError(msg)
    if method == "quadtree_refined":
        msg = (
            "The 'method' parameter of polars_ppdm.spark.dp_kmeans must be 'quadtree' or 'grid' on Spark. "
            "Got 'quadtree_refined': its leaf centroids sum coordinates per leaf, which Spark would add in an "
            "order that depends on the partitioning. Use polars_ppdm.dp_kmeans on a Polars frame for it."
        )
        raise InvalidParameterError(msg)
    request = check_kmeans(
        polars_schema(sdf),
        columns,
        k=k,
        epsilon=epsilon,
        bounds=bounds,
        method=method,
        gamma=gamma,
        max_height=max_height,
        threshold=threshold,
        n=n,
        iterations=iterations,
        key=key,
        max_contributions=max_contributions,
    )
    check_accountant(accountant, func)
    request.charge(accountant, check_only=True)  # refused before a row is read if over budget
    key_bytes = shipped_key(release_secret(secret, func))
    with _points(sdf, request.columns, key, request.contributions, key_bytes, func, request.box()) as points:
        rows = points.rows()  # the points checked: a refusal costs nothing
        request.charge(accountant)
        return release_kmeans(request, rows, points.counts_up_to, points.release_key(request.key_label))
