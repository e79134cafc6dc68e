"""Differentially private aggregates per group on Spark: :func:`dp_group_by`, the Polars
release bit for bit.

What runs where:

* executors -- through ``mapInArrow``, the Polars expressions of the Polars release on
  every Arrow batch (:func:`polars_ppdm.dp.group_by.row_helpers`: grid units, squares,
  ranked values, bad values; with a privacy unit also
  :func:`~polars_ppdm.dp.group_by.row_word_exprs`: the keyed pair and row words); then
  Spark bounds the contributions -- per unit the ``max_groups_contributed`` groups of
  smallest pair word (``dense_rank()`` over the unit), in each the ``max_rows_per_group``
  rows of smallest row word (``row_number()`` over unit and group; both windows share the
  one shuffle by unit) -- and aggregates per group (rows, units, grid sums, sums of
  squares, the halves of a quantile's value digests, bad values, and per quantile its
  (candidate code, rows) pairs: a histogram over the candidates, never the values);
* driver -- the checks (the Polars ones, before anything runs), then, on the small
  per-group table with the Polars helper columns and dtypes, the same public-groups join
  and the same release (:func:`polars_ppdm.dp.group_by._release`): the data checks, the
  accountant, the release key from the digest of the per-group statistics, the noise and
  partition selection keyed by group.

What crosses to the driver: one row per non-empty group with its true statistics and,
for a quantile, at most ~2 pairs per candidate (how many kept values lie at or between
candidates) -- no value.  Every statistic is an integer sum or an unordered list of
counts, so neither partitioning nor row order nor a retried task changes a bit.

References
----------
Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo, Gipson, "Differentially private SQL
with bounded user contribution", PoPETs 2020.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_ppdm.dp._common import check_accountant, release_secret
from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock
from polars_ppdm.dp.aggregates import DPAggregate
from polars_ppdm.dp.group_by import (
    GroupByRequest,
    check_group_by,
    row_helpers,
    row_word_exprs,
    with_public_groups,
)

# The shared halves of dp_group_by under this module's old local names (its body uses them).
from polars_ppdm.dp.group_by import bounded_groups as _bounded_groups
from polars_ppdm.dp.group_by import check_flag as _check_flag
from polars_ppdm.dp.group_by import release_groups as _release
from polars_ppdm.secret import SecretLike
from polars_ppdm.spark._engine import (
    map_polars,
    polars_schema,
    shipped_key,
    spark_column,
    spark_frame,
    spark_schema,
)
from polars_ppdm.spark.dp import _collect

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkFrame

__all__ = ["dp_group_by"]

_FUNC = "dp_group_by"
_SIGN = np.uint64(1 << 63)


class _Names:
    """The Spark-side names of the columns: fixed, as the frames that hold them hold no
    column of the user's (the group columns and the unit cross under names of their
    own); each maps back to the Polars name (a group column, the unit or a helper of
    ``request.helpers``) when the per-group table reaches the driver."""

    def __init__(self, request: GroupByRequest) -> None:
        h = request.helpers
        self.groups = [f"_g{i}" for i in range(len(request.by))]
        self.unit = "_unit"
        self.grid = {name: f"_grid{i}" for i, name in enumerate(h.grid.values())}
        self.squares = {name: f"_square{i}" for i, name in enumerate(h.squares.values())}
        self.values = {name: f"_values{i}" for i, name in enumerate(h.values.values())}
        self.ranks = {name: f"_ranks{i}" for i, name in enumerate(h.ranks.values())}
        halves = [half for pair in h.digests.values() for half in pair]
        self.digests = {name: f"_digest{i}" for i, name in enumerate(halves)}
        self.bad, self.rows, self.units = "_bad", "_rows", "_units"
        self.pair_word, self.row_word = "_pair_word", "_row_word"
        self.pair_rank, self.row_rank = "_pair_rank", "_row_rank"
        # Polars name -> Spark name, of every column the per-row frame holds.
        self.per_row = {
            **dict(zip(request.by, self.groups, strict=True)),
            **({request.privacy_unit: self.unit} if request.privacy_unit else {}),
            **self.grid,
            **self.squares,
            **self.values,
            **self.ranks,
            **self.digests,
            h.bad: self.bad,
            h.pair_word: self.pair_word,
            h.row_word: self.row_word,
        }
        # Spark name -> Polars name, of every column of the per-group table.
        self.per_group = {
            **dict(zip(self.groups, request.by, strict=True)),
            self.rows: h.rows,
            self.units: h.units,
            **{
                spark: name
                for name, spark in (
                    *self.grid.items(),
                    *self.squares.items(),
                    *self.ranks.items(),
                    *self.digests.items(),
                )
            },
            self.bad: h.bad,
        }


def _per_row(sdf: SparkFrame, request: GroupByRequest, secret: bytes, names: _Names) -> SparkFrame:
    """Every row's group, unit and helper columns (and, with a unit, its pair and row
    words as signed longs in the words' unsigned order), under the Spark-side names:
    the Polars expressions of the release, batch by batch."""
    unit = request.privacy_unit
    columns = list(dict.fromkeys([*request.by, *([unit] if unit else []), *request.value_columns]))
    source = sdf.select(*(spark_column(c) for c in columns))  # a name "a.b" is no struct field
    words = row_word_exprs(request, secret) if unit else ()

    def rows(lazy: pl.LazyFrame) -> pl.LazyFrame:
        return row_helpers(lazy, request, secret).with_columns(*words)

    schema = rows(pl.LazyFrame(schema=polars_schema(source))).collect_schema()
    word_names = [request.helpers.pair_word, request.helpers.row_word] if unit else []
    out_schema = pl.Schema(
        {names.per_row[c]: (pl.Int64 if c in word_names else dtype) for c, dtype in schema.items()}
    )

    def transform(batch: pl.DataFrame) -> pl.DataFrame:
        out = rows(batch.lazy()).collect()
        # Unsigned order as signed order: Spark has no unsigned 64-bit integer.
        out = out.with_columns(
            pl.Series(c, (out[c].to_numpy() ^ _SIGN).view(np.int64), dtype=pl.Int64) for c in word_names
        )
        return out.rename(names.per_row, strict=False)

    return map_polars(source, transform, out_schema, _FUNC)


def _per_group(rows: SparkFrame, request: GroupByRequest, names: _Names) -> SparkFrame:
    """Per group, after contribution bounding: rows, units, grid sums, sums of squares,
    the halves of the ranked values' digests, bad values and, per quantile, its
    (candidate code, rows) pairs (under the Spark-side names).  With quantiles, first per
    group and codes, then per group: a code may come in several pairs (another
    quantile's code split its rows), which the release adds up."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    groups = [F.col(g) for g in names.groups]
    units = F.count(F.lit(1))  # without a unit each row is its own
    if request.privacy_unit is not None:
        # The Polars sort by (unit, pair word, group, row word), as two windows over the
        # one shuffle by unit: a unit's pairs in keyed order, a pair's rows in keyed order.
        pairs = Window.partitionBy(F.col(names.unit)).orderBy(F.col(names.pair_word), *groups)
        in_pair = Window.partitionBy(F.col(names.unit), *groups).orderBy(F.col(names.row_word))
        rows = (
            rows.withColumn(names.pair_rank, F.dense_rank().over(pairs))
            .withColumn(names.row_rank, F.row_number().over(in_pair))
            .filter(
                (F.col(names.pair_rank) <= request.max_groups) & (F.col(names.row_rank) <= request.max_rows)
            )
        )
        units = F.sum(F.when(F.col(names.row_rank) == 1, 1).otherwise(0))  # a pair's first row
    summed = [*names.grid.values(), *names.squares.values(), *names.digests.values()]

    def sums(count: Column, unit_count: Column) -> list[Column]:
        return [
            count.alias(names.rows),
            unit_count.cast("long").alias(names.units),
            *(F.coalesce(F.sum(F.col(s)), F.lit(0).cast("long")).alias(s) for s in summed),
            F.sum(F.col(names.bad).cast("long")).alias(names.bad),
        ]

    if not names.ranks:
        return rows.groupBy(*groups).agg(*sums(F.count(F.lit(1)), units))
    codes = [F.col(c) for c in names.ranks.values()]
    per_code = rows.groupBy(*groups, *codes).agg(*sums(F.count(F.lit(1)), units))
    return per_code.groupBy(*groups).agg(
        *sums(F.sum(F.col(names.rows)), F.sum(F.col(names.units))),
        *(
            F.collect_list(F.struct(F.col(spark).alias(name), F.col(names.rows).alias("n"))).alias(spark)
            for name, spark in names.ranks.items()
        ),
    )


def dp_group_by(
    sdf: SparkFrame,
    by: str | Sequence[str],
    aggregates: DPAggregate | Sequence[DPAggregate],
    *,
    epsilon: float | None = None,
    privacy_unit: str | None = None,
    max_groups_contributed: int = 1,
    max_rows_per_group: int = 1,
    public_groups: pl.DataFrame | pl.LazyFrame | None = None,
    delta: float | None = None,
    secret: SecretLike = None,
    accountant: BudgetAccountant | ParallelBlock | None = None,
    intervals: bool = False,
    non_negative: bool = False,
    mechanism: str = "laplace",
    rho: float | None = None,
) -> SparkFrame:
    """:func:`polars_ppdm.dp_group_by` on a Spark DataFrame: the same released groups and
    figures, bit for bit, for the same secret, whatever the partitioning and row order.

    The per-row helper columns and keyed contribution words are computed on the executors
    by the Polars expressions of the Polars release, the contributions bounded and the
    groups aggregated by Spark (see the module), and the small per-group table released
    on the driver by the same code as Polars.

    Parameters
    ----------
    sdf : pyspark.sql.DataFrame
        Classic or Spark Connect.
    by, aggregates, epsilon, privacy_unit, max_groups_contributed, max_rows_per_group, \
public_groups, delta, intervals, non_negative, mechanism, rho
        As in :func:`polars_ppdm.dp_group_by` (every aggregate: count, count_units, sum,
        mean, variance, std, quantile / median), checked by the same code from the
        frame's schema as Spark hands it to Python (``public_groups`` stays a Polars frame).
    secret : Secret, bytes, hex str, 'env:NAME' or None
        Resolved once, on the driver, and shipped to the executors with the tasks (it keys
        which rows and groups a unit keeps).
    accountant : BudgetAccountant, optional
        Checked before any Spark job runs (an over-budget call reads nothing); charged, as
        in Polars, after the per-group table is read and checked, before any noise.

    Returns
    -------
    pyspark.sql.DataFrame
        The Polars release's rows and columns, in its order (public groups as given,
        selected groups in the order of their keys), built on the driver.  The Spark jobs
        have run: errors in the data (nulls, NaN, null units) are raised by this call.

    References
    ----------
    Wilson et al., PoPETs 2020 (bounded user contribution); Desfontaines et al., PoPETs
    2022 (partition selection).
    """
    frame = spark_frame(sdf, _FUNC)
    schema = polars_schema(frame)
    request = check_group_by(
        schema,
        by,
        aggregates,
        epsilon=epsilon,
        privacy_unit=privacy_unit,
        max_groups_contributed=max_groups_contributed,
        max_rows_per_group=max_rows_per_group,
        public_groups=public_groups,
        delta=delta,
        intervals=intervals,
        mechanism=mechanism,
        rho=rho,
    )
    non_negative = _check_flag("non_negative", non_negative)
    check_accountant(accountant, _FUNC)
    request.charge(accountant, check_only=True)  # refused before a row is read if over budget
    key = shipped_key(release_secret(secret, _FUNC))
    names = _Names(request)
    collected = _collect(_per_group(_per_row(frame, request, key, names), request, names))
    # The Polars per-group table's columns and dtypes (its plan's schema: nothing runs).
    polars_groups = _bounded_groups(pl.LazyFrame(schema=schema), request, key).collect_schema()
    grouped = collected.rename(names.per_group).select(
        pl.col(c).cast(dtype) for c, dtype in polars_groups.items()
    )
    if request.public_groups is not None:
        grouped = with_public_groups(grouped.lazy(), request).collect()
    released = _release(grouped, request, key, intervals, non_negative, accountant)
    return frame.sparkSession.createDataFrame(
        released.to_arrow(compat_level=pl.CompatLevel.oldest()), schema=spark_schema(released.schema, _FUNC)
    )
