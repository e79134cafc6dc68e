"""Corrected frequencies from randomized-response data: patterns and itemset supports.

Counting is a Polars query on the disguised columns (a group-by for patterns, or a sum
per pattern for up to three Boolean columns; one ``select`` of sums for itemsets); the
small aggregate then goes through the estimators of
:mod:`polars_ppdm.kernels.rr`.  The functions from counts to estimates
(:func:`pattern_estimates`, :func:`itemset_estimates`) take no frame of the data, so the
Spark front-end (:mod:`polars_ppdm.spark.mine`) feeds them its own aggregates.

References
----------
Wen Han, *Randomization methods for privacy-preserving data mining*, Zhejiang University,
2006, chapter 5 (paper 003); Du & Zhan (KDD 2003); Rizvi & Haritsa (VLDB 2002).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._design import RRDesign
from polars_ppdm._frame import Frame, as_lazy, like, map_whole, schema_of
from polars_ppdm._validation import check_output_names
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.rr import estimate_patterns, subset_coefficients, whole_record_estimate

__all__ = [
    "ITEMSETS_SCHEMA",
    "boolean_pattern_counts",
    "itemset_aggregates",
    "itemset_counts",
    "itemset_estimates",
    "itemset_request",
    "itemsets_frame",
    "pattern_codes",
    "pattern_estimates",
    "pattern_schema",
    "rr_support",
]

#: The schema of :func:`rr_support`'s itemset result.
ITEMSETS_SCHEMA: dict[str, pl.DataType] = {
    "itemset": pl.List(pl.String),
    "support": pl.Float64(),
    "std_error": pl.Float64(),
}

# Every engine computes the same small aggregates from the disguised data (a count per
# pattern, or the sums of :func:`itemset_counts`) and hands them to the functions below,
# which hold the mathematics: the estimates are then the same whatever computed the counts.


def pattern_schema(design: RRDesign, schema: pl.Schema) -> dict[str, pl.DataType]:
    """The schema of :func:`rr_support`'s pattern result for columns of ``schema``."""
    out: dict[str, pl.DataType] = {c: schema[c] for c in design.columns}
    return out | {"observed": pl.Int64(), "frequency": pl.Float64(), "std_error": pl.Float64()}


def pattern_codes(design: RRDesign, grouped: pl.DataFrame) -> list[np.ndarray]:
    """The category codes of each column of ``grouped`` (one row per observed pattern).

    Refuses nulls (in any column, checked first) and values outside a column's domain.
    """
    for c in design.columns:
        if grouped[c].null_count():
            msg = f"The column {c!r} of {design.func} has null values; nulls carry no disguised answer, so drop or fill them first."
            raise InvalidParameterError(msg)
    return [design.domains[c].encode(grouped[c], func=design.func)[0].astype(np.intp) for c in design.columns]


#: Boolean columns counted by a sum per pattern rather than a group-by (2^3 sums).
BOOLEAN_SUMS_UP_TO = 3


def boolean_pattern_counts(
    design: RRDesign, schema: pl.Schema
) -> tuple[list[pl.Expr], Callable[[pl.DataFrame], pl.DataFrame]] | None:
    """For up to :data:`BOOLEAN_SUMS_UP_TO` Boolean columns: the sums that count every
    pattern (and each column's nulls) in one pass, and the function that turns their one
    row into the group-by's frame (one row per pattern seen; a null as a pattern of its
    own, which :func:`pattern_codes` refuses).  None for other columns.

    A group-by of one Boolean column took 0.8 s at 100M rows, its sums 0.1 s."""
    cols = design.columns
    if len(cols) > BOOLEAN_SUMS_UP_TO or any(schema[c] != pl.Boolean for c in cols):
        return None
    patterns = list(itertools.product((False, True), repeat=len(cols)))
    sums = [
        pl.all_horizontal(pl.col(c) if v else ~pl.col(c) for c, v in zip(cols, pattern, strict=True))
        .sum()
        .cast(pl.Int64)
        .alias(f"pattern {i}")
        for i, pattern in enumerate(patterns)
    ] + [pl.col(c).null_count().cast(pl.Int64).alias(f"nulls {c}") for c in cols]

    def grouped(row: pl.DataFrame) -> pl.DataFrame:
        found = row.row(0, named=True)
        seen = [
            (pattern, found[f"pattern {i}"]) for i, pattern in enumerate(patterns) if found[f"pattern {i}"]
        ]
        values: dict[str, list[bool | None]] = {
            c: [pattern[j] for pattern, _ in seen] for j, c in enumerate(cols)
        }
        observed = [n for _, n in seen]
        for c in cols:
            if found[f"nulls {c}"]:  # a null pattern, refused as the group-by's would be
                for other in cols:
                    values[other].append(None if other == c else False)
                observed.append(found[f"nulls {c}"])
                break
        return pl.DataFrame(
            {
                **{c: pl.Series(c, values[c], pl.Boolean) for c in cols},
                "observed": pl.Series(observed, dtype=pl.Int64),
            }
        )

    return sums, grouped


def pattern_estimates(design: RRDesign, grouped: pl.DataFrame) -> pl.DataFrame:
    """Every pattern's estimated frequency from the disguised pattern counts.

    ``grouped`` has one row per observed pattern (in any order): the design's columns and
    ``observed``, the number of disguised rows showing that pattern.  Returns one row per
    pattern of the full grid (see :func:`rr_support`); empty when there is no row.
    """
    cols = design.columns
    shape = tuple(design.domains[c].k for c in cols)
    codes = pattern_codes(design, grouped)
    counts = np.zeros(shape, dtype=np.float64)
    if len(grouped):
        np.add.at(counts, tuple(codes), grouped["observed"].to_numpy())
    n = int(counts.sum())
    if design.mode == "per_attribute":
        freq, se = estimate_patterns(counts, [design.p[c] for c in cols], list(shape))
    else:
        observed = counts / n if n else counts
        complement = observed[tuple(slice(None, None, -1) for _ in cols)]  # binary: flip every axis
        freq, se = whole_record_estimate(observed, complement, design.p[cols[0]], n)
    grid = np.indices(shape).reshape(len(cols), -1)
    all_valid = np.ones(grid.shape[1], dtype=bool)
    out = {c: design.domains[c].decode(grid[j], all_valid, name=c) for j, c in enumerate(cols)}
    out["observed"] = pl.Series("observed", counts.reshape(-1).astype(np.int64))
    out["frequency"] = pl.Series("frequency", freq.reshape(-1))
    out["std_error"] = pl.Series("std_error", se.reshape(-1))
    result = pl.DataFrame(out)
    return result.clear() if n == 0 else result


def itemset_counts(
    design: RRDesign, itemsets: Sequence[tuple[str, ...]]
) -> dict[tuple[str, tuple[str, ...]], str]:
    """The counts needed to estimate the supports of ``itemsets``, each with its output name.

    A key ``("all", S)`` is the number of rows having every item of S, ``("none", S)``
    the number having none of them.  Per-attribute: ``("all", T)`` for every non-empty
    subset T of every itemset (``f(T)`` of :func:`polars_ppdm.kernels.rr.subset_coefficients`).
    Whole-record: ``("all", S)`` and ``("none", S)``.  Besides these, an engine computes
    the row count ``__n`` and the checks of :meth:`RRDesign.checks`.
    """
    names: dict[tuple[str, tuple[str, ...]], str] = {}

    def need(key: tuple[str, tuple[str, ...]]) -> None:
        if key not in names:
            names[key] = f"__a{len(names)}"

    for itemset in itemsets:
        if design.mode == "per_attribute":
            for size in range(1, len(itemset) + 1):
                for subset in itertools.combinations(itemset, size):
                    need(("all", subset))
        else:
            need(("all", itemset))
            need(("none", itemset))
    return names


def itemset_aggregates(design: RRDesign, itemsets: Sequence[tuple[str, ...]]) -> tuple[list[pl.Expr], dict]:
    """The Polars expressions of the sums one query must compute for ``itemsets``.

    The row count ``__n``, the checks of :meth:`RRDesign.checks` and the counts of
    :func:`itemset_counts`.  Returns the expressions and a map from each needed key to
    its output column.
    """
    names = itemset_counts(design, itemsets)
    exprs = [pl.len().alias("__n"), *design.checks()]
    for (kind, subset), name in names.items():
        present = [design.truthy(c) for c in subset]
        exprs.append(pl.all_horizontal(present if kind == "all" else [~e for e in present]).sum().alias(name))
    return exprs, names


def itemset_estimates(
    design: RRDesign, itemsets: Sequence[tuple[str, ...]], row: dict[str, Any], names: dict
) -> list[tuple[float, float]]:
    """(support, standard error) of each itemset from the aggregates' single row."""
    design.raise_on_checks(row)
    n = int(row["__n"])
    if n == 0:
        return [(float("nan"), float("nan")) for _ in itemsets]
    out = []
    for itemset in itemsets:
        if design.mode == "whole_record":
            est, se = whole_record_estimate(
                np.array([row[names[("all", itemset)]] / n]),
                np.array([row[names[("none", itemset)]] / n]),
                design.p[itemset[0]],
                n,
            )
            out.append((float(est[0]), float(se[0])))
            continue
        mean_w, square_w = subset_coefficients([design.p[c] for c in itemset])
        shares = np.ones(1 << len(itemset))
        for mask in range(1, 1 << len(itemset)):
            subset = tuple(c for j, c in enumerate(itemset) if mask >> j & 1)
            shares[mask] = row[names[("all", subset)]] / n
        support = float(mean_w @ shares)
        variance = (float(square_w @ shares) - support) / n
        out.append((support, float(np.sqrt(max(variance, 0.0)))))
    return out


def itemsets_frame(
    design: RRDesign, itemsets: Sequence[tuple[str, ...]], row: dict[str, Any], names: dict
) -> pl.DataFrame:
    """:func:`rr_support`'s itemset result from the aggregates' single row."""
    if row["__n"] == 0:
        return pl.DataFrame(schema=ITEMSETS_SCHEMA)
    estimates = itemset_estimates(design, itemsets, row, names)
    return pl.DataFrame(
        {
            "itemset": [list(s) for s in itemsets],
            "support": [e[0] for e in estimates],
            "std_error": [e[1] for e in estimates],
        },
        schema=ITEMSETS_SCHEMA,
    )


def itemset_request(design: RRDesign, itemsets: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """The requested itemsets, validated (binary columns only) and in column order."""
    design.require_binary()
    return _canonical_itemsets(design, itemsets)


def _canonical_itemsets(design: RRDesign, itemsets: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    order = {c: i for i, c in enumerate(design.columns)}
    allowed = f"a list of non-empty lists of distinct names from 'columns' {design.columns}"
    if isinstance(itemsets, str) or not isinstance(itemsets, Iterable):
        msg = f"The 'itemsets' parameter of {design.func} must be {allowed}. Got {itemsets!r} instead."
        raise InvalidParameterError(msg)
    out = []
    for itemset in itemsets:
        if not isinstance(itemset, str | Iterable):
            msg = f"The 'itemsets' parameter of {design.func} must be {allowed}. Got the itemset {itemset!r}."
            raise InvalidParameterError(msg)
        items = [itemset] if isinstance(itemset, str) else list(itemset)
        unknown = [c for c in items if not isinstance(c, str) or c not in order]
        if not items or unknown or len(set(items)) != len(items):
            msg = f"The 'itemsets' parameter of {design.func} must be {allowed}. Got the itemset {items!r}."
            raise InvalidParameterError(msg)
        out.append(tuple(sorted(items, key=order.__getitem__)))
    return out


def rr_support(
    frame: Frame,
    columns: str | Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None = None,
    epsilon: float | Sequence[float] | dict[str, float] | None = None,
    mode: str = "per_attribute",
    categories: Sequence[Any] | dict[str, Sequence[Any]] | None = None,
    itemsets: Sequence[Sequence[str]] | None = None,
) -> Frame:
    """Estimated true frequency of every pattern of disguised columns, with standard errors.

    Per-attribute mode inverts the Kronecker product of the per-column disguise matrices
    axis by axis (never a k^m x k^m matrix); whole-record mode solves the
    pattern/complement pair system ``P*(E) = p P(E) + (1-p) P(E')``.  Estimates are
    unbiased and may fall outside [0, 1] for rare patterns.  Standard errors are for the
    frequency in this table: the randomness is the disguise (add the sampling variance
    ``pi (1 - pi) / n`` for a population frequency).

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        The disguised data; the result has the same type (lazy stays lazy).
    columns : str or sequence of str
        The disguised columns (Boolean, 0/1 integer, or k-ary with ``categories``/Enum).
    p, epsilon : float or one per column
        The keep probabilities (or local-DP epsilons) the data was disguised with.
        ``p=1`` gives the plain frequencies of undisguised data.
    mode : {'per_attribute', 'whole_record'}
        How the data was disguised (see :func:`polars_ppdm.rr_disguise`).
    categories : sequence or mapping, optional
        Domains of String, Categorical or k-ary integer columns.
    itemsets : list of lists of column names, optional
        Instead of every pattern, the support (share of rows with all items present) of
        each itemset of binary columns.

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        Patterns: one row per pattern of the full grid (empty patterns included), with
        the columns, ``observed`` (disguised count), ``frequency`` and ``std_error``
        (a column of one of these names is refused: rename it first).
        Itemsets: ``itemset`` (list of names), ``support`` and ``std_error``.
        An empty input gives an empty result.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"a": [True] * 60 + [False] * 40, "b": [True, False] * 50})
    >>> ppdm.rr_support(df, ["a", "b"], p=1.0)["frequency"].to_list()
    [0.2, 0.2, 0.3, 0.3]
    >>> ppdm.rr_support(df, ["a", "b"], p=1.0, itemsets=[["a"], ["a", "b"]])["support"].to_list()
    [0.6, 0.3]

    References
    ----------
    Wen Han (2006), paper 003, sections 5.1-5.3.
    """
    func = "rr_support"
    schema = schema_of(frame, func)
    design = RRDesign(schema, columns, p=p, epsilon=epsilon, mode=mode, categories=categories, func=func)
    check_output_names(func, design.columns, itemsets=itemsets)  # a column "frequency" would be overwritten
    lazy = as_lazy(frame)
    if itemsets is None:
        counted = boolean_pattern_counts(design, schema)
        if counted is not None:  # a sum per pattern: one pass, no table of groups
            sums, grouped = counted

            def estimates(row: pl.DataFrame) -> pl.DataFrame:
                return pattern_estimates(design, grouped(row))

            return like(frame, map_whole(lazy.select(sums), estimates, pattern_schema(design, schema)))
        patterns = lazy.group_by(design.columns).agg(pl.len().cast(pl.Int64).alias("observed"))
        query = map_whole(patterns, lambda g: pattern_estimates(design, g), pattern_schema(design, schema))
        return like(frame, query)
    wanted = itemset_request(design, itemsets)
    exprs, names = itemset_aggregates(design, wanted)

    def finish(aggregates: pl.DataFrame) -> pl.DataFrame:
        return itemsets_frame(design, wanted, aggregates.row(0, named=True), names)

    return like(frame, map_whole(lazy.select(exprs), finish, ITEMSETS_SCHEMA))
