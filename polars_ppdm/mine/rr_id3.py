"""ID3 decision trees on randomized-response data (paper 003, section 5.2).

Every count ID3 needs -- |S|, |S_v| and the class frequencies of each -- is the
frequency of a conjunction of literals (the node's path, an attribute value, a class),
estimated from the disguised data without ever seeing a true record:

* ``whole_record`` (Du & Zhan): one coin per record negates every disguised binary column,
  so for a conjunction E and its complement E' (every disguised literal negated)
  ``P*(E) = p P(E) + (1 - p) P(E')`` and ``P*(E') = p P(E') + (1 - p) P(E)``, whence
  ``P(E) = (p P*(E) - (1 - p) P*(E')) / (2p - 1)``.
* ``per_attribute``: each column is disguised on its own (k-ary allowed), so the
  indicator of a literal ``x_j = v`` has the unbiased estimate
  ``(1{d_j = v} - q_j) / (p_j - q_j)`` with ``q_j = (1 - p_j) / (k_j - 1)``, and the
  indicator of a conjunction is the product over its columns.

For all attributes at once, a node's counts are a few matrix-vector products over the
one-hot disguised data.  Estimated counts can be negative for rare conjunctions; they
enter the entropies clipped at 0.

References
----------
Wen Han (2006), paper 003, section 5.2; Du, Zhan, "Using randomized response techniques
for privacy-preserving data mining", KDD 2003; Quinlan, "Induction of decision trees",
Machine Learning 1986.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._frame import schema_of
from polars_ppdm._validation import check_choice, check_columns, check_fraction
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["RRTree", "rr_accuracy", "rr_id3"]

_FUNC = "rr_id3"
MODES = ("whole_record", "per_attribute")


@dataclass
class _Node:
    counts: np.ndarray  # estimated class counts
    attribute: int | None = None  # split attribute (index), None for a leaf
    children: dict[int, _Node] = field(default_factory=dict)

    @property
    def prediction(self) -> int:
        return int(np.argmax(self.counts))


def _domain(series: pl.Series, categories: Sequence[Any] | None, name: str) -> list[Any]:
    """The public domain of a column: from the dtype (Boolean, Enum), 0/1 integers, or
    ``categories``; never read off the data (that would disclose which values occur)."""
    if categories is not None:
        return list(categories)
    if series.dtype == pl.Boolean:
        return [False, True]
    if isinstance(series.dtype, pl.Enum):
        return list(series.dtype.categories)
    if series.dtype.is_integer():
        return [0, 1]
    msg = (
        f"{_FUNC}: the column {name!r} ({series.dtype}) needs its domain: pass categories={{{name!r}: [...]}} "
        "(an Enum or Boolean dtype carries it)."
    )
    raise InvalidParameterError(msg)


def _codes(series: pl.Series, domain: list[Any], name: str) -> np.ndarray:
    if series.null_count():
        msg = f"{_FUNC}: the column {name!r} holds nulls; drop or fill them first."
        raise InvalidParameterError(msg)
    lookup = {v: i for i, v in enumerate(domain)}
    values = series.to_list()
    unknown = {v for v in values if v not in lookup}
    if unknown:
        msg = f"{_FUNC}: the column {name!r} holds values outside its domain {domain}: {sorted(map(repr, unknown))[:5]}."
        raise InvalidParameterError(msg)
    return np.fromiter((lookup[v] for v in values), dtype=np.int64, count=len(values))


class _Estimator:
    """Estimated counts of conjunctions from the disguised codes."""

    def __init__(self, codes: np.ndarray, sizes: list[int], p: np.ndarray, disguised: np.ndarray, mode: str):
        self.codes, self.sizes, self.p, self.disguised, self.mode = codes, sizes, p, disguised, mode
        self.n = len(codes)
        if mode == "per_attribute":
            q = np.where(np.array(sizes) > 1, (1 - p) / np.maximum(np.array(sizes) - 1, 1), 0.0)
            self.q = np.where(disguised, q, 0.0)
            self.keep = np.where(disguised, p, 1.0)

    def indicator(self, column: int, value: int, *, complement: bool = False) -> np.ndarray:
        """Per-row weight of the literal ``column = value`` (per_attribute: its unbiased
        estimate; whole_record: the observed indicator, of the negated literal with
        ``complement`` on a disguised column)."""
        observed = self.codes[:, column]
        if self.mode == "per_attribute":
            return ((observed == value) - self.q[column]) / (self.keep[column] - self.q[column])
        if complement and self.disguised[column]:
            value = 1 - value
        return (observed == value).astype(np.float64)

    def split_counts(self, path: list[tuple[int, int]], attribute: int, label: int) -> np.ndarray:
        """Estimated counts ``[value, class]`` of path AND attribute = value AND label = class."""
        k_a, k_y = self.sizes[attribute], self.sizes[label]
        out = np.empty((k_a, k_y))
        weight = np.ones(self.n)
        weight_c = np.ones(self.n)
        for column, value in path:
            weight = weight * self.indicator(column, value)
            if self.mode == "whole_record":
                weight_c = weight_c * self.indicator(column, value, complement=True)
        for v in range(k_a):
            for c in range(k_y):
                direct = weight * self.indicator(attribute, v) * self.indicator(label, c)
                if self.mode == "per_attribute":
                    out[v, c] = direct.sum()
                    continue
                mirror = (
                    weight_c
                    * self.indicator(attribute, v, complement=True)
                    * self.indicator(label, c, complement=True)
                )
                theta = self.p[0]
                out[v, c] = (theta * direct.sum() - (1 - theta) * mirror.sum()) / (2 * theta - 1)
        return out


def _entropy(counts: np.ndarray) -> float:
    counts = np.clip(counts, 0, None)
    total = counts.sum()
    if total <= 0:
        return 0.0
    share = counts[counts > 0] / total
    return float(-(share * np.log2(share)).sum())


class RRTree:
    """An ID3 tree fitted on disguised data: :meth:`predict` on any frame with the
    attribute columns (original or disguised), ``str(tree)`` prints it."""

    def __init__(
        self,
        root: _Node,
        attributes: list[str],
        label: str,
        domains: dict[str, list[Any]],
        mode: str,
        p: dict[str, float],
    ):
        self.root, self.attributes, self.label, self.domains, self.mode, self.p = (
            root,
            attributes,
            label,
            domains,
            mode,
            p,
        )

    def predict(self, frame: pl.DataFrame | pl.LazyFrame) -> pl.Series:
        """The predicted class of every row (same order), named after the label."""
        data = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
        codes = np.stack([_codes(data[a], self.domains[a], a) for a in self.attributes], axis=1)
        out = np.empty(len(data), dtype=np.int64)

        def walk(node: _Node, rows: np.ndarray) -> None:
            if node.attribute is None or not node.children:
                out[rows] = node.prediction
                return
            values = codes[rows, node.attribute]
            for v, child in node.children.items():
                walk(child, rows[values == v])
            missing = ~np.isin(values, list(node.children))
            out[rows[missing]] = node.prediction

        walk(self.root, np.arange(len(data)))
        classes = self.domains[self.label]
        return pl.Series(self.label, [classes[i] for i in out])

    def leaves(self) -> list[tuple[list[tuple[str, Any]], Any]]:
        """Every leaf as (path of (attribute, value), predicted class)."""
        found = []

        def walk(node: _Node, path: list[tuple[str, Any]]) -> None:
            if node.attribute is None or not node.children:
                found.append((path, self.domains[self.label][node.prediction]))
                return
            name = self.attributes[node.attribute]
            for v, child in node.children.items():
                walk(child, [*path, (name, self.domains[name][v])])

        walk(self.root, [])
        return found

    def __str__(self) -> str:
        lines = []

        def walk(node: _Node, depth: int) -> None:
            if node.attribute is None or not node.children:
                lines.append(
                    "  " * depth + f"-> {self.label} = {self.domains[self.label][node.prediction]!r}"
                )
                return
            name = self.attributes[node.attribute]
            for v, child in node.children.items():
                lines.append("  " * depth + f"{name} = {self.domains[name][v]!r}:")
                walk(child, depth + 1)

        walk(self.root, 0)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"RRTree(label={self.label!r}, leaves={len(self.leaves())}, mode={self.mode!r})"


def _prepare(frame, attributes, label, p, mode, label_disguised, categories, func):
    schema = schema_of(frame, func)
    names = list(schema.names())
    if label not in names:
        msg = f"The 'label' parameter of {func} names no column: {label!r}. Columns: {names}."
        raise InvalidParameterError(msg)
    attrs = check_columns(attributes, names, func, name="attributes")
    if label in attrs:
        msg = f"{func}: the label {label!r} is also among the attributes."
        raise InvalidParameterError(msg)
    check_choice("mode", mode, MODES, func)
    p = check_fraction("p", p, func)
    if p == 0.5:
        msg = f"The 'p' parameter of {func} must not be 0.5: the disguise then carries no information (2p - 1 = 0). Got 0.5."
        raise InvalidParameterError(msg)
    data = (
        frame.select([*attrs, label]).collect()
        if isinstance(frame, pl.LazyFrame)
        else frame.select([*attrs, label])
    )
    cats = categories or {}
    domains = {c: _domain(data[c], cats.get(c), c) for c in [*attrs, label]}
    if mode == "whole_record":
        wide = [c for c in ([*attrs, label] if label_disguised else attrs) if len(domains[c]) != 2]
        if wide:
            msg = (
                f"{func}: whole_record mode negates binary columns; {wide} have more than two values "
                f"(label classes: {domains[label]}). Use mode='per_attribute' for k-ary columns."
            )
            raise InvalidParameterError(msg)
    codes = np.stack([_codes(data[c], domains[c], c) for c in [*attrs, label]], axis=1)
    sizes = [len(domains[c]) for c in [*attrs, label]]
    disguised = np.array([True] * len(attrs) + [bool(label_disguised)])
    if mode == "per_attribute" and any(1 - p == p * (k - 1) for k in sizes):  # p = 1/k: singular
        msg = f"The 'p' parameter of {func} must differ from 1/k for every column (k values); got p = {p}."
        raise InvalidParameterError(msg)
    estimator = _Estimator(codes, sizes, np.full(len(sizes), p), disguised, mode)
    return attrs, domains, estimator, p


def rr_id3(
    frame: pl.DataFrame | pl.LazyFrame,
    attributes: Sequence[str],
    label: str,
    *,
    p: float,
    mode: str = "whole_record",
    label_disguised: bool = True,
    max_depth: int | None = None,
    min_support: float = 0.01,
    categories: dict[str, Sequence[Any]] | None = None,
) -> RRTree:
    """ID3 whose every count is estimated from randomized-response data.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        The disguised training data (collected).
    attributes : sequence of str
        Categorical attributes: Boolean, 0/1 integers, Enum, or with ``categories``.
    label : str
        The class column (binary in ``whole_record`` mode when disguised).
    p : float
        The keep probability the data was disguised with (not 0.5).
    mode : {'whole_record', 'per_attribute'}
        How the data was disguised (see :func:`polars_ppdm.rr_disguise`);
        ``per_attribute`` allows k-ary attributes and labels.
    label_disguised : bool
        Whether the label went through the disguise with the attributes.
    max_depth : int, optional
        Depth limit (None: until the other rules stop).
    min_support : float
        A node whose estimated share of the rows is below this becomes a leaf.
    categories : mapping column -> domain, optional
        Domains of String or k-ary integer columns (never read off the data).

    Returns
    -------
    RRTree

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.random(20_000) < 0.5, rng.random(20_000) < 0.5
    >>> df = pl.DataFrame({"a": a, "b": b, "y": a & ~b})
    >>> disguised = ppdm.rr_disguise(df, ["a", "b", "y"], p=0.85, mode="whole_record", seed=1)
    >>> tree = ppdm.rr_id3(disguised, ["a", "b"], "y", p=0.85, max_depth=2)
    >>> float((tree.predict(df) == df["y"]).mean())
    1.0

    References
    ----------
    Wen Han (2006), paper 003, section 5.2; Du, Zhan, KDD 2003.
    """
    attrs, domains, estimator, p = _prepare(
        frame, attributes, label, p, mode, label_disguised, categories, _FUNC
    )
    if max_depth is not None and (
        isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0
    ):
        msg = f"The 'max_depth' parameter of {_FUNC} must be an int >= 0 or None. Got {max_depth!r} instead."
        raise InvalidParameterError(msg)
    min_support = check_fraction("min_support", min_support, _FUNC)
    label_index = len(attrs)
    n = estimator.n
    # The root's class counts: the label against itself (an empty path).
    root_counts = np.diag(estimator.split_counts([], label_index, label_index))

    def grow(path: list[tuple[int, int]], counts: np.ndarray, used: set[int]) -> _Node:
        node = _Node(counts)
        total = max(counts.clip(0).sum(), 0.0)
        depth_reached = max_depth is not None and len(path) >= max_depth
        if depth_reached or total < min_support * n or len(used) == len(attrs) or _entropy(counts) == 0.0:
            return node
        base = _entropy(counts)
        best, best_gain, best_table = None, 1e-12, None
        for a in range(len(attrs)):
            if a in used:
                continue
            table = estimator.split_counts(path, a, label_index)  # [value, class]
            sizes = table.clip(0).sum(axis=1)
            if sizes.sum() <= 0:
                continue
            remainder = sum(sizes[v] / sizes.sum() * _entropy(table[v]) for v in range(len(table)))
            gain = base - remainder
            if gain > best_gain:
                best, best_gain, best_table = a, gain, table
        if best is None:
            return node
        node.attribute = best
        for v in range(len(best_table)):
            node.children[v] = grow([*path, (best, v)], best_table[v], used | {best})
        return node

    root = grow([], root_counts, set())
    return RRTree(root, attrs, label, domains, mode, {c: p for c in [*attrs, label]})


def rr_accuracy(
    tree: RRTree, disguised_test: pl.DataFrame | pl.LazyFrame, *, p: float, label_disguised: bool = True
) -> float:
    """Estimated true accuracy of ``tree`` from a disguised test set.

    ``whole_record`` (the thesis' complement system, section 5.2.3): the accuracy A on
    the disguised test set and A' on its complement (every disguised column negated)
    satisfy ``A = p P + (1 - p) P'`` and ``A' = p P' + (1 - p) P``; solved for P.
    ``per_attribute``: the sum over leaves of the estimated share of rows that follow
    the leaf's path and carry its class.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.random(40_000) < 0.5, rng.random(40_000) < 0.5
    >>> df = pl.DataFrame({"a": a, "b": b, "y": a & ~b})
    >>> disguised = ppdm.rr_disguise(df, ["a", "b", "y"], p=0.8, mode="whole_record", seed=2)
    >>> tree = ppdm.rr_id3(disguised, ["a", "b"], "y", p=0.8)
    >>> round(ppdm.rr_accuracy(tree, disguised, p=0.8), 2)
    1.0
    """
    func = "rr_accuracy"
    data = disguised_test.collect() if isinstance(disguised_test, pl.LazyFrame) else disguised_test
    attrs, label = tree.attributes, tree.label
    _, domains, estimator, p = _prepare(
        data, attrs, label, p, tree.mode, label_disguised, {c: tree.domains[c] for c in [*attrs, label]}, func
    )
    if tree.mode == "whole_record":
        codes = estimator.codes
        flipped = np.where(estimator.disguised, 1 - codes, codes)
        accuracy = []
        for table in (codes, flipped):
            frame = pl.DataFrame(
                {c: [domains[c][i] for i in table[:, j]] for j, c in enumerate([*attrs, label])}
            )
            accuracy.append(float((tree.predict(frame).to_numpy() == frame[label].to_numpy()).mean()))
        observed, mirrored = accuracy
        return (p * observed - (1 - p) * mirrored) / (2 * p - 1)
    index = {c: i for i, c in enumerate(attrs)}
    total = 0.0
    for path, predicted in tree.leaves():
        literals = [(index[a], domains[a].index(v)) for a, v in path]
        weight = np.ones(estimator.n)
        for column, value in literals:
            weight = weight * estimator.indicator(column, value)
        weight = weight * estimator.indicator(len(attrs), domains[label].index(predicted))
        total += weight.sum()
    return total / estimator.n if math.isfinite(total) else float("nan")
