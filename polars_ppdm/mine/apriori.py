"""Apriori on corrected supports, and association rules.

The level-wise search is the classical one (Agrawal & Srikant 1994): candidates of size
k + 1 join two frequent k-itemsets sharing their first k - 1 items, and are pruned unless
every k-subset is frequent.  Supports come from a callback, so the same search runs on
randomized-response estimates, on undisguised counts (p = 1) or on a table of pattern
frequencies.  Each level of :func:`rr_frequent_itemsets` is one Polars query over the data
(one Spark aggregation in :mod:`polars_ppdm.spark.mine`, through :func:`frequent_from_counts`).

References
----------
Wen Han, *Randomization methods for privacy-preserving data mining*, Zhejiang University,
2006, section 5.3 (paper 003), Table 5.2.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from polars_ppdm._frame import as_lazy, eager, schema_of
from polars_ppdm._validation import check_columns, check_fraction, check_int, is_real
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.mine.rr_support import RRDesign, itemset_aggregates, itemset_estimates

__all__ = [
    "LevelCounts",
    "apriori",
    "association_rules",
    "frequent_from_counts",
    "pattern_rules",
    "rr_apriori",
    "rr_frequent_itemsets",
]

Itemset = tuple[str, ...]
SupportFn = Callable[[list[Itemset]], list[tuple[float, float]]]

_ITEMSETS_SCHEMA: dict[str, pl.DataType] = {
    "itemset": pl.List(pl.String),
    "support": pl.Float64(),
    "std_error": pl.Float64(),
}
_RULES_SCHEMA: dict[str, pl.DataType] = {
    "antecedent": pl.List(pl.String),
    "consequent": pl.List(pl.String),
    "support": pl.Float64(),
    "confidence": pl.Float64(),
}


def _check_max_length(max_length: Any, func: str) -> int | None:
    return check_int("max_length", max_length, func, low=1, optional=True)


def apriori(
    items: Sequence[str],
    support_of: SupportFn,
    *,
    min_support: float,
    max_length: int | None = None,
) -> dict[Itemset, tuple[float, float]]:
    """Frequent itemsets: ``{itemset: (support, std_error)}`` with support >= min_support.

    ``support_of`` receives one level's candidates (tuples in the order of ``items``) and
    returns (support, standard error) for each.

    Examples
    --------
    >>> sup = {("a",): 0.6, ("b",): 0.5, ("c",): 0.1, ("a", "b"): 0.4}
    >>> found = apriori(["a", "b", "c"], lambda cs: [(sup[c], 0.0) for c in cs], min_support=0.3)
    >>> sorted(found)
    [('a',), ('a', 'b'), ('b',)]
    """
    rank = {item: i for i, item in enumerate(items)}
    frequent: dict[Itemset, tuple[float, float]] = {}
    candidates: list[Itemset] = [(item,) for item in items]
    size = 1
    while candidates and (max_length is None or size <= max_length):
        level = {
            c: est for c, est in zip(candidates, support_of(candidates), strict=True) if est[0] >= min_support
        }
        frequent.update(level)
        candidates = _next_candidates(sorted(level, key=lambda s: [rank[i] for i in s]), set(level))
        size += 1
    return frequent


def _next_candidates(level: list[Itemset], frequent: set[Itemset]) -> list[Itemset]:
    """Join itemsets sharing all but their last item; prune by the Apriori property."""
    out = []
    for prefix, group in itertools.groupby(level, key=lambda s: s[:-1]):
        for a, b in itertools.combinations(list(group), 2):
            candidate = (*prefix, a[-1], b[-1])
            if all(sub in frequent for sub in itertools.combinations(candidate, len(candidate) - 1)):
                out.append(candidate)
    return out


def association_rules(
    frequent: pl.DataFrame | dict[Itemset, tuple[float, float]] | dict[Itemset, float],
    *,
    min_confidence: float,
) -> pl.DataFrame:
    """Rules A => B from frequent itemsets: every split of an itemset of size >= 2.

    ``confidence = support(A u B) / support(A)``; rules below ``min_confidence`` are
    dropped.  Sorted by confidence, then support, descending.

    Parameters
    ----------
    frequent : polars.DataFrame or dict
        The frame of :func:`rr_frequent_itemsets` (``itemset``, ``support``), or a mapping
        from item tuples to a support (or a ``(support, std_error)`` pair).
    min_confidence : float
        In [0, 1].

    Examples
    --------
    >>> rules = association_rules({("a",): 0.6, ("b",): 0.5, ("a", "b"): 0.4}, min_confidence=0.7)
    >>> rules.select("antecedent", "consequent", "confidence").rows()
    [(['b'], ['a'], 0.8)]
    """
    func = "association_rules"
    min_confidence = check_fraction("min_confidence", min_confidence, func)
    support = _supports(frequent, func)
    rows = []
    for itemset, both in support.items():
        for size in range(1, len(itemset)):
            for antecedent in itertools.combinations(itemset, size):
                base = support.get(antecedent)
                if base is None or base <= 0:
                    continue
                confidence = both / base
                if confidence >= min_confidence:
                    consequent = tuple(i for i in itemset if i not in antecedent)
                    rows.append((list(antecedent), list(consequent), both, confidence))
    rules = pl.DataFrame(rows, schema=_RULES_SCHEMA, orient="row")
    return rules.sort(
        ["confidence", "support", "antecedent", "consequent"], descending=[True, True, False, False]
    )


def _supports(frequent: Any, func: str) -> dict[Itemset, float]:
    """``{item tuple: support}`` from a frequent-itemsets frame or mapping (subsets are
    looked up with their items in the same relative order, as Apriori makes them)."""
    frequent = eager(frequent)
    if isinstance(frequent, pl.DataFrame):
        check_columns(["itemset", "support"], frequent.columns, func, name="frequent")
        pairs = frequent.select("itemset", "support").iter_rows()
    elif isinstance(frequent, Mapping):
        pairs = ((s, v[0] if isinstance(v, tuple) else v) for s, v in frequent.items())
    else:
        msg = (
            f"The 'frequent' parameter of {func} must be the frame of rr_frequent_itemsets or a "
            f"mapping of item tuples to supports. Got {type(frequent).__name__} instead."
        )
        raise InvalidParameterError(msg)
    support = {}
    for itemset, value in pairs:
        if not is_real(value):
            msg = f"The 'frequent' parameter of {func} must hold numeric supports. Got {value!r} for {itemset!r}."
            raise InvalidParameterError(msg)
        support[tuple(itemset)] = float(value)
    return support


def _itemsets_frame(frequent: dict[Itemset, tuple[float, float]]) -> pl.DataFrame:
    rows = [(list(s), v[0], v[1]) for s, v in frequent.items()]
    return pl.DataFrame(rows, schema=_ITEMSETS_SCHEMA, orient="row").sort(
        [pl.col("itemset").list.len(), "support"], descending=[False, True]
    )


#: One level's counts: ``(design, candidates) -> (row, names)``, the single row of
#: :func:`polars_ppdm.mine.rr_support.itemset_aggregates`' sums (``__n``, the checks,
#: the counts of :func:`~polars_ppdm.mine.rr_support.itemset_counts`) and the map from
#: each needed count to its name.  Each engine counts its own way; the estimates are shared.
LevelCounts = Callable[[RRDesign, list[Itemset]], tuple[dict[str, Any], dict]]


def frequent_from_counts(
    schema: pl.Schema,
    columns: Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None,
    epsilon: float | Sequence[float] | dict[str, float] | None,
    mode: str,
    min_support: float,
    max_length: int | None,
    func: str,
    count: LevelCounts,
) -> dict[Itemset, tuple[float, float]]:
    """Apriori on corrected supports, the data seen only through ``count`` (one call a level).

    ``schema`` is the data's, for validating the design before any count.
    """
    design = RRDesign(schema, columns, p=p, epsilon=epsilon, mode=mode, categories=None, func=func)
    design.require_binary()
    min_support = check_fraction("min_support", min_support, func)
    max_length = _check_max_length(max_length, func)

    def support_of(candidates: list[Itemset]) -> list[tuple[float, float]]:
        row, names = count(design, candidates)
        # No rows: every support is NaN, so nothing is frequent and the result is empty.
        return itemset_estimates(design, candidates, row, names)

    return apriori(design.columns, support_of, min_support=min_support, max_length=max_length)


def _rr_frequent(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None,
    epsilon: float | Sequence[float] | dict[str, float] | None,
    mode: str,
    min_support: float,
    max_length: int | None,
    func: str,
) -> dict[Itemset, tuple[float, float]]:
    schema = schema_of(frame, func)

    def count(design: RRDesign, candidates: list[Itemset]) -> tuple[dict[str, Any], dict]:
        exprs, names = itemset_aggregates(design, candidates)
        return as_lazy(frame).select(design.columns).select(exprs).collect().row(0, named=True), names

    return frequent_from_counts(
        schema,
        columns,
        p=p,
        epsilon=epsilon,
        mode=mode,
        min_support=min_support,
        max_length=max_length,
        func=func,
        count=count,
    )


def rr_frequent_itemsets(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None = None,
    epsilon: float | Sequence[float] | dict[str, float] | None = None,
    mode: str = "per_attribute",
    min_support: float,
    max_length: int | None = None,
) -> pl.DataFrame:
    """Frequent itemsets of disguised binary item columns, by Apriori on corrected supports.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        One row per transaction, one Boolean or 0/1 column per item (see
        :func:`polars_ppdm.transactions_to_onehot`).  A LazyFrame is scanned once per level.
    columns : sequence of str
        The disguised item columns.
    p, epsilon, mode
        How the columns were disguised (see :func:`polars_ppdm.rr_support`); ``p=1`` for
        undisguised data.
    min_support : float
        Minimum estimated support, in [0, 1].
    max_length : int, optional
        Largest itemset size.

    Returns
    -------
    polars.DataFrame
        ``itemset``, ``support``, ``std_error``; empty for an empty frame (no transaction,
        no support).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"bread": [1, 1, 1, 0], "milk": [1, 1, 0, 0]})
    >>> ppdm.rr_frequent_itemsets(df, ["bread", "milk"], p=1.0, min_support=0.5)["itemset"].to_list()
    [['bread'], ['milk'], ['bread', 'milk']]
    """
    func = "rr_frequent_itemsets"
    frequent = _rr_frequent(
        frame,
        columns,
        p=p,
        epsilon=epsilon,
        mode=mode,
        min_support=min_support,
        max_length=max_length,
        func=func,
    )
    return _itemsets_frame(frequent)


def rr_apriori(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    *,
    p: float | Sequence[float] | dict[str, float] | None = None,
    epsilon: float | Sequence[float] | dict[str, float] | None = None,
    mode: str = "per_attribute",
    min_support: float,
    min_confidence: float,
    max_length: int | None = None,
) -> pl.DataFrame:
    """Association rules mined from disguised binary item columns.

    Frequent itemsets by Apriori (join and prune) on randomized-response-corrected
    supports (:func:`rr_frequent_itemsets`), then every rule ``A => B`` of a frequent
    itemset with ``support(A u B) / support(A) >= min_confidence``.

    Returns
    -------
    polars.DataFrame
        ``antecedent``, ``consequent`` (lists of item names), ``support`` (of A u B) and
        ``confidence``, by confidence then support, descending; empty for an empty frame.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"bread": [1, 1, 1, 0], "milk": [1, 1, 0, 0]})
    >>> ppdm.rr_apriori(df, ["bread", "milk"], p=1.0, min_support=0.5, min_confidence=0.9).rows()
    [(['milk'], ['bread'], 0.5, 1.0)]

    References
    ----------
    Wen Han (2006), paper 003, section 5.3; Rizvi & Haritsa (VLDB 2002).
    """
    func = "rr_apriori"
    min_confidence = check_fraction("min_confidence", min_confidence, func)
    frequent = _rr_frequent(
        frame,
        columns,
        p=p,
        epsilon=epsilon,
        mode=mode,
        min_support=min_support,
        max_length=max_length,
        func=func,
    )
    return association_rules(frequent, min_confidence=min_confidence)


def pattern_rules(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    *,
    frequency: str = "frequency",
    min_support: float = 0.0,
    min_confidence: float,
) -> pl.DataFrame:
    """Association rules from a table of pattern frequencies (e.g. :func:`rr_support`'s).

    ``frame`` has one row per pattern: the item ``columns`` (0/1 or Boolean) and its
    ``frequency``.

    The support of an itemset is the summed frequency of the patterns in which all its
    items are present.  This is the thesis's route: solve for the 2^k pattern
    frequencies, then read supports and confidences off them.

    Examples
    --------
    >>> import polars as pl
    >>> pats = pl.DataFrame({"A": [0, 0, 1, 1], "B": [0, 1, 0, 1], "frequency": [0.3, 0.1, 0.2, 0.4]})
    >>> pattern_rules(pats, ["A", "B"], min_confidence=0.7).select("antecedent", "consequent", "confidence").rows()
    [(['B'], ['A'], 0.8)]
    """
    func = "pattern_rules"
    schema_of(frame, func)  # a clear error for anything but a frame
    patterns = eager(frame)  # a table of at most 2^k rows
    cols = check_columns(columns, patterns.columns, func)
    check_columns([frequency], patterns.columns, func, name="frequency")
    if not patterns.schema[frequency].is_numeric():
        msg = f"The 'frequency' column of {func} must be numeric. Got dtype {patterns.schema[frequency]} instead."
        raise InvalidParameterError(msg)
    if not patterns[frequency].cast(pl.Float64).is_finite().fill_null(False).all():
        msg = f"The 'frequency' column of {func} holds null, NaN or infinite values; every pattern needs its frequency."
        raise InvalidParameterError(msg)
    min_support = check_fraction("min_support", min_support, func)
    design = RRDesign(
        patterns.schema,
        cols,
        p=1.0,
        epsilon=None,
        mode="per_attribute",
        categories=None,
        func=func,
    )
    design.require_binary()
    design.raise_on_checks(
        patterns.select(design.checks()).row(0, named=True)
    )  # nulls, values other than 0/1

    def support_of(candidates: list[Itemset]) -> list[tuple[float, float]]:
        sums = patterns.select(
            pl.col(frequency).filter(pl.all_horizontal([design.truthy(c) for c in c_])).sum().alias(str(i))
            for i, c_ in enumerate(candidates)
        ).row(0)
        return [(float(s), float("nan")) for s in sums]

    frequent = apriori(cols, support_of, min_support=min_support)
    return association_rules(frequent, min_confidence=min_confidence)
