"""Randomized-response miners on Spark DataFrames: Spark counts, the Polars estimates.

The disguised data stays on the executors.  Spark aggregates it -- a group-by over the
disguised columns for the pattern counts, one ``agg`` of sums for itemset supports (with
the null and non-binary checks of the Polars functions) -- and only those counts cross to
the driver, where the functions of :mod:`polars_ppdm.mine.rr_support` and
:mod:`polars_ppdm.mine.apriori` that the Polars API uses turn them into estimates.  Counts
are integers, so the results equal the Polars results exactly, whatever the partitioning.

No secret or key is involved: these functions read data that is already disguised.

References
----------
Wen Han, *Randomization methods for privacy-preserving data mining*, Zhejiang University,
2006, chapter 5 (paper 003); Du & Zhan (KDD 2003); Rizvi & Haritsa (VLDB 2002).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_ppdm._design import RRDesign
from polars_ppdm._validation import check_fraction, check_output_names
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.mine.apriori import Itemset, association_rules, frequent_from_counts
from polars_ppdm.mine.rr_support import (
    itemset_counts,
    itemset_request,
    itemsets_frame,
    pattern_codes,
    pattern_estimates,
)
from polars_ppdm.spark._engine import free_checkpoint, polars_schema, spark_column, spark_frame

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column
    from pyspark.sql import DataFrame as SparkFrame

__all__ = ["rr_apriori", "rr_support"]


def _functions() -> Any:
    """``pyspark.sql.functions`` (classic and Connect); PySpark is known to be there."""
    return importlib.import_module("pyspark.sql.functions")


def _arrow_rows(frame: SparkFrame) -> pl.DataFrame:
    """A small Spark result (aggregates) on the driver as a Polars frame."""
    return pl.DataFrame(pl.from_arrow(frame.toArrow()))


def _present(design: RRDesign, column: str) -> Column:
    """Spark's "item present" of a binary column: :meth:`RRDesign.truthy`."""
    if design.domains[column].dtype == pl.Boolean:
        return spark_column(column)
    return spark_column(column) == 1


def _counts_row(
    sdf: SparkFrame, design: RRDesign, itemsets: Sequence[Itemset]
) -> tuple[dict[str, Any], dict]:
    """One Spark aggregation: the row of :func:`polars_ppdm.mine.rr_support.itemset_aggregates`
    (``__n``, the checks of :meth:`RRDesign.checks` under their names, the itemset counts)."""
    F = _functions()
    names = itemset_counts(design, itemsets)
    exprs = [F.count(F.lit(1)).alias("__n")]
    exprs += [
        F.count_if(spark_column(c).isNull()).alias(f"__nulls_{i}") for i, c in enumerate(design.columns)
    ]
    exprs += [
        F.count_if(spark_column(c).isNotNull() & ~spark_column(c).isin(0, 1)).alias(f"__bad_{i}")
        for i, c in enumerate(design.columns)
        if design.domains[c].binary_int
    ]
    for (kind, subset), name in names.items():
        present = [_present(design, c) for c in subset]
        terms = present if kind == "all" else [~e for e in present]
        both = terms[0]
        for term in terms[1:]:
            both = both & term
        exprs.append(F.count_if(both).alias(name))
    row = _arrow_rows(sdf.agg(*exprs)).row(0, named=True)
    return row, names


def _pattern_counts(sdf: SparkFrame, design: RRDesign) -> pl.DataFrame:
    """The disguised count of every observed pattern, as :func:`pattern_estimates` takes it.

    A valid table has at most ``prod(k + 1)`` patterns (each column's categories or
    null), so at most that many groups (plus one) are fetched: a column of other values
    -- an identifier passed by mistake, say -- cannot bring its rows to the driver.
    """
    F = _functions()
    cols = design.columns
    grouped = sdf.groupBy(*[spark_column(c) for c in cols]).agg(F.count(F.lit(1)).alias("observed"))
    bound = math.prod(design.domains[c].k + 1 for c in cols)
    counts = _arrow_rows(grouped.limit(min(bound + 1, 2**31 - 1)))
    if len(counts) <= bound:
        return counts
    _raise_on_values(sdf, design)
    msg = f"{design.func}: more patterns than the columns' domains allow, yet no value outside them."
    raise AssertionError(msg)  # pragma: no cover - a valid table has at most `bound` patterns


def _raise_on_values(sdf: SparkFrame, design: RRDesign) -> None:
    """The Polars error for a table with values outside the columns' domains.

    For each column, its nulls and its five smallest values outside the domain are
    fetched, and go through the same checks as the Polars group-by's rows (nulls first,
    then the columns in order), next to valid values of the other columns.
    """
    schema = polars_schema(sdf)
    evidence: dict[str, pl.Series] = {}
    for c in design.columns:
        domain = design.domains[c]
        column = spark_column(c)
        try:  # categories the column's dtype cannot hold fail in the checks below, in column order
            domain.encode(pl.Series(c, [], dtype=schema[c]), func=design.func)
            outside = column.isNull() | ~column.isin(*domain.categories)
        except InvalidParameterError:
            outside = column.isNull()
        found = sdf.select(column).where(outside).distinct().orderBy(column.asc_nulls_first()).limit(6)
        evidence[c] = _arrow_rows(found).to_series().cast(schema[c])
    height = max(len(s) for s in evidence.values())
    columns = []
    for c, values in evidence.items():
        valid = pl.Series(c, [design.domains[c].categories[0]]).cast(schema[c], strict=False)
        if valid.null_count():  # an integer column with categories of another type: any number
            valid = pl.Series(c, [0], dtype=schema[c])
        columns.append(
            pl.concat([values, pl.Series(c, [valid[0]] * (height - len(values)), dtype=schema[c])])
        )
    pattern_codes(design, pl.DataFrame(columns))


def rr_support(
    frame: SparkFrame,
    columns: str | Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None = None,
    epsilon: float | Sequence[float] | dict[str, float] | None = None,
    mode: str = "per_attribute",
    categories: Sequence[Any] | dict[str, Sequence[Any]] | None = None,
    itemsets: Sequence[Sequence[str]] | None = None,
) -> pl.DataFrame:
    """:func:`polars_ppdm.rr_support` on a Spark DataFrame: the same estimates, exactly.

    Estimated true frequency of every pattern of disguised columns (per-attribute: the
    Kronecker product of the per-column disguise matrices inverted axis by axis;
    whole-record: the pattern/complement pair system), or the support of each itemset,
    with standard errors.  Spark counts the patterns (a group-by over ``columns``) or the
    itemsets' sums (one aggregation, with the null and 0/1 checks); only those counts
    reach the driver, where the Polars function's estimators run on them.

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        The disguised data (classic or Spark Connect).  Read once.
    columns : str or sequence of str
        The disguised columns: Boolean, 0/1 integer, or k-ary (integer or string) with
        ``categories``.
    p, epsilon, mode, categories, itemsets
        As in :func:`polars_ppdm.rr_support`.

    Returns
    -------
    polars.DataFrame
        The result of :func:`polars_ppdm.rr_support` on the same rows (a small frame, on
        the driver): one row per pattern with ``observed``, ``frequency`` and
        ``std_error`` (a column of one of these names is refused: rename it first), or
        ``itemset``, ``support`` and ``std_error``.  Empty for an empty input.

    Raises
    ------
    InvalidParameterError
        With the Polars function's message: a missing column, an unsupported column
        type, nulls, values outside a column's domain (an integer column other than 0/1
        without ``categories``), bad parameters.

    References
    ----------
    Wen Han (2006), paper 003, sections 5.1-5.3.
    """
    func = "rr_support"
    sdf = spark_frame(frame, func)
    design = RRDesign(
        polars_schema(sdf), columns, p=p, epsilon=epsilon, mode=mode, categories=categories, func=func
    )
    check_output_names(func, design.columns, itemsets=itemsets)  # a column "frequency" would be overwritten
    if itemsets is None:
        return pattern_estimates(design, _pattern_counts(sdf, design))
    wanted = itemset_request(design, itemsets)
    row, names = _counts_row(sdf.select(*[spark_column(c) for c in design.columns]), design, wanted)
    return itemsets_frame(design, wanted, row, names)


def rr_apriori(
    frame: SparkFrame,
    columns: Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None = None,
    epsilon: float | Sequence[float] | dict[str, float] | None = None,
    mode: str = "per_attribute",
    min_support: float,
    min_confidence: float,
    max_length: int | None = None,
) -> pl.DataFrame:
    """:func:`polars_ppdm.rr_apriori` on a Spark DataFrame: the same rules, exactly.

    Apriori (join and prune) on randomized-response-corrected supports, then every rule
    ``A => B`` of a frequent itemset with ``support(A u B) / support(A) >= min_confidence``.
    Each level of the search is one Spark aggregation (the candidates' counts, with the
    null and 0/1 checks); the supports, the search and the rules run on the driver with
    the Polars function's code.

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        One row per transaction, one Boolean or 0/1 integer column per item.  Read once,
        into a local checkpoint of the item columns (the executors' memory and disk) that
        every level of the search counts, freed before the rules are returned.
    columns, p, epsilon, mode, min_support, min_confidence, max_length
        As in :func:`polars_ppdm.rr_apriori`.

    Returns
    -------
    polars.DataFrame
        ``antecedent``, ``consequent``, ``support`` and ``confidence``, as
        :func:`polars_ppdm.rr_apriori` gives for the same rows.

    References
    ----------
    Wen Han (2006), paper 003, section 5.3; Rizvi & Haritsa (VLDB 2002).
    """
    func = "rr_apriori"
    sdf = spark_frame(frame, func)
    min_confidence = check_fraction("min_confidence", min_confidence, func)
    # Every level counts one snapshot of the item columns, taken at the first count (after
    # the parameters were checked): a source that changes during the search cannot give
    # one level's supports over other rows than the next's, and it is read once.
    snapshot: list[SparkFrame] = []

    def count(design: RRDesign, candidates: list[Itemset]) -> tuple[dict[str, Any], dict]:
        if not snapshot:
            items = sdf.select(*[spark_column(c) for c in design.columns])
            snapshot.append(items.localCheckpoint(eager=True))
        return _counts_row(snapshot[0], design, candidates)

    try:
        frequent = frequent_from_counts(
            polars_schema(sdf),
            columns,
            p=p,
            epsilon=epsilon,
            mode=mode,
            min_support=min_support,
            max_length=max_length,
            func=func,
            count=count,
        )
    finally:
        for items in snapshot:
            free_checkpoint(items)
    return association_rules(frequent, min_confidence=min_confidence)
