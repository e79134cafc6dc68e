"""How well rules mined from disguised data match the rules of the original data."""

from __future__ import annotations

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
    compared.  With no true rules, recall is 1; with no found rules, precision is 1.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"antecedent": [["a"], ["b"]], "consequent": [["b"], ["a"]]})
    >>> f = pl.DataFrame({"antecedent": [["a"], ["c"]], "consequent": [["b"], ["a"]]})
    >>> rule_scores(f, t)
    {'precision': 0.5, 'recall': 0.5, 'f1': 0.5, 'found': 2, 'true': 2}
    """
    found_set, true_set = _rule_set(found, "found"), _rule_set(truth, "truth")
    hits = len(found_set & true_set)
    precision = hits / len(found_set) if found_set else 1.0
    recall = hits / len(true_set) if true_set else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "found": len(found_set),
        "true": len(true_set),
    }
