"""How well rules mined from disguised data match the rules of the original data."""

from __future__ import annotations

import math

import polars as pl

from polars_ppdm._frame import eager
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["rule_scores"]


def _rule_set(rules: pl.DataFrame | pl.LazyFrame, name: str) -> set[tuple[tuple[str, ...], tuple[str, ...]]]:
    rules = eager(rules)
    if not isinstance(rules, pl.DataFrame) or not {"antecedent", "consequent"} <= set(rules.columns):
        got = rules.columns if isinstance(rules, pl.DataFrame) else type(rules).__name__
        msg = f"The {name!r} parameter of rule_scores must be a rules frame with 'antecedent' and 'consequent' columns. Got {got!r} instead."
        raise InvalidParameterError(msg)
    return {
        (tuple(sorted(a)), tuple(sorted(c))) for a, c in rules.select("antecedent", "consequent").iter_rows()
    }


def rule_scores(found: pl.DataFrame | pl.LazyFrame, truth: pl.DataFrame | pl.LazyFrame) -> dict[str, float]:
    """Precision, recall and F1 of the rules ``found`` against the rules ``truth``.

    A rule is its (antecedent, consequent) pair; support and confidence values are not
    compared.  F1 is ``2 |found & true| / (|found| + |true|)``, the harmonic mean of
    precision and recall.

    A score that divides by zero is undefined, and is NaN (never a made-up 1): precision
    when no rule was found, recall when there is no true rule, and F1 when both sets are
    empty -- two empty rule sets agree, but say nothing about the miner (mining with
    thresholds too high, or data read with the wrong separator, gives two empty sets).
    With one set empty and the other not, F1 is 0: every rule was missed or spurious.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"antecedent": [["a"], ["b"]], "consequent": [["b"], ["a"]]})
    >>> f = pl.DataFrame({"antecedent": [["a"], ["c"]], "consequent": [["b"], ["a"]]})
    >>> rule_scores(f, t)
    {'precision': 0.5, 'recall': 0.5, 'f1': 0.5, 'found': 2, 'true': 2}
    >>> rule_scores(f.clear(), t.clear())
    {'precision': nan, 'recall': nan, 'f1': nan, 'found': 0, 'true': 0}
    """
    found_set, true_set = _rule_set(found, "found"), _rule_set(truth, "truth")
    hits = len(found_set & true_set)
    total = len(found_set) + len(true_set)
    precision = hits / len(found_set) if found_set else math.nan
    recall = hits / len(true_set) if true_set else math.nan
    f1 = 2 * hits / total if total else math.nan
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "found": len(found_set),
        "true": len(true_set),
    }
