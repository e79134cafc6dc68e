"""Counts of conjunctions estimated from randomized-response codes (pure NumPy), for
decision trees on disguised data (paper 003, section 5.2).

``codes`` holds one column of category codes per attribute, the label last.

* ``whole_record`` (Du & Zhan): one coin per record negates every disguised binary
  column, so for a conjunction E and its complement E' (every disguised literal negated)
  ``P*(E) = p P(E) + (1 - p) P(E')`` and ``P*(E') = p P(E') + (1 - p) P(E)``, whence
  ``P(E) = (p P*(E) - (1 - p) P*(E')) / (2p - 1)``.
* ``per_attribute``: each column is disguised on its own (k-ary allowed), so the
  indicator of a literal ``x_j = v`` has the unbiased estimate
  ``(1{d_j = v} - q_j) / (p_j - q_j)`` with ``q_j = (1 - p_j) / (k_j - 1)``, and the
  indicator of a conjunction is the product over its columns.

References
----------
Wen Han (2006), paper 003, section 5.2; Du, Zhan, KDD 2003.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ConjunctionCounts", "entropy"]


def entropy(counts: np.ndarray) -> float:
    """Entropy in bits of estimated counts (negative estimates count as 0)."""
    counts = np.clip(counts, 0, None)
    total = counts.sum()
    if total <= 0:
        return 0.0
    share = counts[counts > 0] / total
    return float(-(share * np.log2(share)).sum())


class ConjunctionCounts:
    """Estimated counts of conjunctions of literals ``(column, value)``.

    Examples
    --------
    Undisguised data (p = 1) gives the plain counts:

    >>> codes = np.array([[0, 1], [1, 1], [1, 0], [1, 1]])
    >>> est = ConjunctionCounts(codes, [2, 2], 1.0, np.array([True, True]), "whole_record")
    >>> est.tables([])[0].tolist()        # attribute 0 by label: [value, class]
    [[0.0, 1.0], [1.0, 2.0]]
    """

    def __init__(
        self,
        codes: np.ndarray,
        sizes: list[int],
        p: float | np.ndarray,
        disguised: np.ndarray,
        mode: str,
    ) -> None:
        self.codes, self.sizes, self.disguised, self.mode = codes, list(sizes), disguised, mode
        self.n, self.label = len(codes), codes.shape[1] - 1
        # One keep probability per column (per_attribute may differ by column); whole_record
        # has one coin per record, hence one p.
        keep = np.broadcast_to(np.asarray(p, dtype=np.float64), (codes.shape[1],))
        self.p = float(keep[disguised][0]) if disguised.any() else 1.0
        k = np.array(sizes, dtype=np.float64)
        q = (1 - keep) / np.maximum(k - 1, 1)
        self.q = np.where(disguised, q, 0.0)  # P(report v | true value is another)
        self.keep = np.where(disguised, keep, 1.0)

    def _literal(self, column: int, value: int, *, complement: bool = False) -> np.ndarray:
        """Per-row weight of ``column = value``: per_attribute, its unbiased estimate;
        whole_record, the observed indicator (of the negated literal with ``complement``)."""
        observed = self.codes[:, column]
        if self.mode == "per_attribute":
            return ((observed == value) - self.q[column]) / (self.keep[column] - self.q[column])
        if complement and self.disguised[column]:
            value = 1 - value
        return (observed == value).astype(np.float64)

    def _weights(self, path: list[tuple[int, int]], cls: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Row weights of ``path AND label = cls`` and, whole_record, of its complement."""
        direct = self._literal(self.label, cls)
        mirror = self._literal(self.label, cls, complement=True) if self.mode == "whole_record" else None
        for column, value in path:
            direct = direct * self._literal(column, value)
            if mirror is not None:
                mirror = mirror * self._literal(column, value, complement=True)
        return direct, mirror

    def _correct(self, direct: np.ndarray, mirror: np.ndarray) -> np.ndarray:
        return (self.p * direct - (1 - self.p) * mirror) / (2 * self.p - 1)

    def class_counts(self, path: list[tuple[int, int]]) -> np.ndarray:
        """Estimated count of ``path AND label = c`` for every class c."""
        out = np.empty(self.sizes[self.label])
        for cls in range(len(out)):
            direct, mirror = self._weights(path, cls)
            out[cls] = direct.sum() if mirror is None else self._correct(direct.sum(), mirror.sum())
        return out

    def tables(self, path: list[tuple[int, int]], columns: list[int] | None = None) -> dict[int, np.ndarray]:
        """For each attribute column, the estimated counts ``[value, class]`` of
        ``path AND column = value AND label = class``: one weighted bincount per column
        and class."""
        columns = list(range(self.label)) if columns is None else columns
        k_y = self.sizes[self.label]
        out = {a: np.empty((self.sizes[a], k_y)) for a in columns}
        for cls in range(k_y):
            direct, mirror = self._weights(path, cls)
            total = direct.sum()
            for a in columns:
                k = self.sizes[a]
                raw = np.bincount(self.codes[:, a], weights=direct, minlength=k)
                if self.mode == "per_attribute":
                    out[a][:, cls] = (raw - self.q[a] * total) / (self.keep[a] - self.q[a])
                else:  # the complement of "a = v" is "a = 1 - v" (binary, disguised)
                    flipped = np.bincount(self.codes[:, a], weights=mirror, minlength=k)[::-1]
                    out[a][:, cls] = self._correct(raw, flipped)
        return out
