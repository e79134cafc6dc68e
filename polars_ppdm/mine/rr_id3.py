"""ID3 decision trees on randomized-response data (paper 003, section 5.2).

Every count ID3 needs -- |S|, |S_v| and the class frequencies of each -- is the
frequency of a conjunction of literals (the node's path, an attribute value, a class),
estimated from the disguised data without ever seeing a true record
(:class:`polars_ppdm.kernels.rr_tree.ConjunctionCounts`: the whole-record complement
system, or per-attribute unbiased indicators).  Estimated counts can be negative for
rare conjunctions; they enter the entropies clipped at 0.

References
----------
Wen Han (2006), paper 003, section 5.2; Du, Zhan, "Using randomized response techniques
for privacy-preserving data mining", KDD 2003; Quinlan, "Induction of decision trees",
Machine Learning 1986.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._design import RRDesign
from polars_ppdm._encoding import Domain
from polars_ppdm._frame import eager, schema_of
from polars_ppdm._validation import check_bool, check_columns, check_fraction, check_int
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.rr_tree import ConjunctionCounts, entropy

__all__ = ["RRTree", "rr_accuracy", "rr_id3"]

_FUNC = "rr_id3"


@dataclass
class _Node:
    counts: np.ndarray  # estimated class counts
    attribute: int | None = None  # split attribute (index), None for a leaf
    children: dict[int, _Node] = field(default_factory=dict)

    @property
    def prediction(self) -> int:
        return int(np.argmax(self.counts))


def _codes(data: pl.DataFrame, domains: dict[str, Domain], columns: list[str], func: str) -> np.ndarray:
    """One column of category codes per named column; nulls are refused."""
    out = np.empty((data.height, len(columns)), dtype=np.int64)
    for j, c in enumerate(columns):
        codes, valid = domains[c].encode(data[c], func=func)
        if valid is not None:
            msg = f"{func}: the column {c!r} holds nulls; drop or fill them first."
            raise InvalidParameterError(msg)
        out[:, j] = codes
    return out


class RRTree:
    """An ID3 tree fitted on disguised data: :meth:`predict` on any frame with the
    attribute ``columns`` (original or disguised), ``str(tree)`` prints it."""

    def __init__(
        self,
        root: _Node,
        columns: list[str],
        label: str,
        domains: dict[str, Domain],
        mode: str,
    ):
        self.root, self.columns, self.label, self.domains, self.mode = (
            root,
            columns,
            label,
            domains,
            mode,
        )

    def predict(self, frame: pl.DataFrame | pl.LazyFrame) -> pl.Series:
        """The predicted class of every row (same order), named after the label."""
        func = "RRTree.predict"
        self._check_schema(schema_of(frame, func), self.columns, func)
        data = eager(frame, self.columns)
        predicted = self._predict_codes(_codes(data, self.domains, self.columns, func))
        return self.domains[self.label].decode(predicted, None, name=self.label)

    def _check_schema(self, schema: pl.Schema, columns: list[str], func: str) -> None:
        """The columns exist with the dtypes the tree was fitted on (a 5 in an integer
        column would otherwise pass for True)."""
        check_columns(columns, list(schema.names()), func)

        def family(dtype: pl.DataType) -> str:
            # Codes come from the values, so dtypes whose values compare alike are one family;
            # a Boolean tree refuses integers (a 5 would pass for True).
            if dtype.is_integer():
                return "integer"
            if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
                return "text"
            return str(dtype)

        for c in columns:
            have, fitted = schema[c], self.domains[c].dtype
            if not (family(have) == family(fitted) or (have == pl.Boolean and fitted.is_integer())):
                msg = f"{func}: the column {c!r} has dtype {schema[c]}; the tree was fitted on {self.domains[c].dtype}."
                raise InvalidParameterError(msg)

    def _predict_codes(self, codes: np.ndarray) -> np.ndarray:
        """Class codes for rows of attribute codes (one column per attribute)."""
        out = np.empty(len(codes), dtype=np.int64)

        def walk(node: _Node, rows: np.ndarray) -> None:
            # Set first: a row whose value has no child keeps this node's majority class.
            out[rows] = node.prediction
            if node.attribute is None:
                return
            values = codes[rows, node.attribute]
            for v, child in node.children.items():
                walk(child, rows[values == v])

        walk(self.root, np.arange(len(codes)))
        return out

    def _leaf_codes(self) -> list[tuple[list[tuple[int, int]], int]]:
        """Every leaf as (path of (attribute index, value code), class code)."""
        found = []

        def walk(node: _Node, path: list[tuple[int, int]]) -> None:
            if node.attribute is None:
                found.append((path, node.prediction))
                return
            for v, child in node.children.items():
                walk(child, [*path, (node.attribute, v)])

        walk(self.root, [])
        return found

    def leaves(self) -> list[tuple[list[tuple[str, Any]], Any]]:
        """Every leaf as (path of (attribute, value), predicted class)."""
        names = self.columns
        return [
            (
                [(names[a], self.domains[names[a]].categories[v]) for a, v in path],
                self.domains[self.label].categories[cls],
            )
            for path, cls in self._leaf_codes()
        ]

    def __str__(self) -> str:
        lines = []

        def walk(node: _Node, depth: int) -> None:
            if node.attribute is None:
                lines.append(
                    "  " * depth
                    + f"-> {self.label} = {self.domains[self.label].categories[node.prediction]!r}"
                )
                return
            name = self.columns[node.attribute]
            for v, child in node.children.items():
                lines.append("  " * depth + f"{name} = {self.domains[name].categories[v]!r}:")
                walk(child, depth + 1)

        walk(self.root, 0)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"RRTree(label={self.label!r}, leaves={len(self.leaves())}, mode={self.mode!r})"


def _prepare(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    label: str,
    p: float | Sequence[float] | Mapping[str, float] | None,
    epsilon: float | Sequence[float] | Mapping[str, float] | None,
    mode: str,
    label_disguised: bool,
    categories: Mapping[str, Sequence[Any]] | None,
    func: str,
) -> tuple[list[str], dict[str, Domain], ConjunctionCounts]:
    schema = schema_of(frame, func)
    names = list(schema.names())
    if not isinstance(label, str) or label not in names:
        msg = f"The 'label' parameter of {func} must name a column of the frame {names}. Got {label!r} instead."
        raise InvalidParameterError(msg)
    attrs = check_columns(columns, names, func)
    if label in attrs:
        msg = f"The 'columns' parameter of {func} must not hold the label {label!r}. Got {attrs!r} instead."
        raise InvalidParameterError(msg)
    label_disguised = check_bool("label_disguised", label_disguised, func)
    everything = [*attrs, label]
    if categories is not None and not (
        isinstance(categories, Mapping) and all(c in everything for c in categories)
    ):
        msg = (
            f"The 'categories' parameter of {func} must map columns of {everything} to their domains. "
            f"Got {categories!r} instead."
        )
        raise InvalidParameterError(msg)
    cats = dict(categories or {})
    # The disguise was applied to the attributes (and the label when label_disguised): the
    # same validation as rr_disguise and the other miners (p or epsilon, per column; mode).
    disguised_columns = everything if label_disguised else attrs
    design = RRDesign(
        schema,
        disguised_columns,
        p=p,
        epsilon=epsilon,
        mode=mode,
        categories={c: cats.get(c) for c in disguised_columns},
        func=func,
    )
    domains = dict(design.domains)
    if not label_disguised:
        domains[label] = Domain.of(schema[label], cats.get(label), func=func, column=label)
    data = eager(frame, everything)
    if data.height == 0:
        msg = f"{func} needs at least one row. Got an empty frame."
        raise InvalidParameterError(msg)
    keep = np.array([design.p.get(c, 1.0) for c in everything])
    disguised = np.array([True] * len(attrs) + [label_disguised])
    sizes = [domains[c].k for c in everything]
    counts = ConjunctionCounts(_codes(data, domains, everything, func), sizes, keep, disguised, design.mode)
    return attrs, domains, counts


def rr_id3(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    label: str,
    *,
    p: float | Sequence[float] | Mapping[str, float] | None = None,
    epsilon: float | Sequence[float] | Mapping[str, float] | None = None,
    mode: str = "per_attribute",
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
    columns : sequence of str
        The disguised attribute columns: Boolean, 0/1 integers, Enum, or with ``categories``.
    label : str
        The class column (binary in ``whole_record`` mode when disguised).
    p, epsilon : float, sequence or mapping, optional
        How the data was disguised, as for :func:`polars_ppdm.rr_disguise`: exactly one of
        the keep probability (not 1/k) and the local-DP epsilon, one for every disguised
        column or one per column (``per_attribute``).
    mode : {'per_attribute', 'whole_record'}
        How the data was disguised (see :func:`polars_ppdm.rr_disguise`);
        ``whole_record`` (the thesis' setting) needs binary columns and label.
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
    >>> disguised = ppdm.rr_disguise(df, ["a", "b", "y"], p=0.85, mode="whole_record", secret=1)
    >>> tree = ppdm.rr_id3(disguised, ["a", "b"], "y", p=0.85, mode="whole_record", max_depth=2)
    >>> float((tree.predict(df) == df["y"]).mean())
    1.0

    References
    ----------
    Wen Han (2006), paper 003, section 5.2; Du, Zhan, KDD 2003.
    """
    attrs, domains, counts = _prepare(frame, columns, label, p, epsilon, mode, label_disguised, categories, _FUNC)
    max_depth = check_int("max_depth", max_depth, _FUNC, low=0, optional=True)
    min_support = check_fraction("min_support", min_support, _FUNC)

    def grow(path: list[tuple[int, int]], class_counts: np.ndarray) -> _Node:
        node = _Node(class_counts)
        unused = [a for a in range(len(attrs)) if a not in {column for column, _ in path}]
        base = entropy(class_counts)
        too_small = class_counts.clip(0).sum() < min_support * counts.n
        if (max_depth is not None and len(path) >= max_depth) or too_small or not unused or base == 0.0:
            return node
        best, best_gain = None, 1e-12
        tables = counts.tables(path, unused)  # every candidate's [value, class] counts at once
        for a, table in tables.items():
            sizes = table.clip(0).sum(axis=1)
            if sizes.sum() <= 0:
                continue
            gain = base - sum(sizes[v] / sizes.sum() * entropy(table[v]) for v in range(len(table)))
            if gain > best_gain:
                best, best_gain = a, gain
        if best is not None:
            node.attribute = best
            node.children = {v: grow([*path, (best, v)], row) for v, row in enumerate(tables[best])}
        return node

    return RRTree(grow([], counts.class_counts([])), attrs, label, domains, counts.mode)


def rr_accuracy(
    tree: RRTree,
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    p: float | Sequence[float] | Mapping[str, float] | None = None,
    epsilon: float | Sequence[float] | Mapping[str, float] | None = None,
    label_disguised: bool = True,
) -> float:
    """Estimated true accuracy of ``tree`` from a disguised test set ``frame``.

    The test set was disguised as the training set was (the tree's ``mode``); give its
    ``p`` or ``epsilon`` as for :func:`rr_id3`.

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
    >>> disguised = ppdm.rr_disguise(df, ["a", "b", "y"], p=0.8, mode="whole_record", secret=2)
    >>> tree = ppdm.rr_id3(disguised, ["a", "b"], "y", p=0.8, mode="whole_record")
    >>> round(ppdm.rr_accuracy(tree, disguised, p=0.8), 2)
    1.0
    """
    func = "rr_accuracy"
    tree._check_schema(schema_of(frame, func), [*tree.columns, tree.label], func)
    categories = {c: list(tree.domains[c].categories) for c in [*tree.columns, tree.label]}
    _, _, counts = _prepare(frame, tree.columns, tree.label, p, epsilon, tree.mode, label_disguised, categories, func)
    label, keep = counts.label, counts.p
    if tree.mode == "whole_record":
        flipped = np.where(counts.disguised, 1 - counts.codes, counts.codes)
        observed, mirrored = (
            float((tree._predict_codes(codes[:, :label]) == codes[:, label]).mean())
            for codes in (counts.codes, flipped)
        )
        return (keep * observed - (1 - keep) * mirrored) / (2 * keep - 1)
    hits = sum(counts.class_counts(path)[predicted] for path, predicted in tree._leaf_codes())
    return float(hits / counts.n)
