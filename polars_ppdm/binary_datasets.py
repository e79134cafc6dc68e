"""Paper 003's decision-tree data sets as binary attributes, ready for randomized response.

Whole-record randomized response (and the thesis' ID3 on it) needs binary attributes:
UCI Mushroom as one-hot items (``../shared/data/mushroom.dat``, item 1 = poisonous is
the label) and Agrawal et al.'s generator with every numeric attribute cut into 10
equal-width intervals of its *public* range (the generator's documented range, never
the data's, so the cut leaks nothing) and every attribute one-hot encoded.

Used by the tests, ``benchmarks/rr_id3_accuracy.py`` and the notebooks, so that none of
them depends on another's code.

References
----------
Wen Han (2006), paper 003, section 5.2; R. Agrawal, T. Imielinski, A. Swami, "Database
mining: a performance perspective", IEEE TKDE 5(6), 1993.
"""

from __future__ import annotations

from os import PathLike

import polars as pl

from polars_ppdm.datasets import agrawal, find_shared_data
from polars_ppdm.transactions import read_transactions, transactions_to_onehot

__all__ = ["AGRAWAL_CODES", "AGRAWAL_RANGES", "agrawal_binary", "mushroom"]

# Public ranges of the generator's numeric attributes (Agrawal, Imielinski, Swami 1993).
AGRAWAL_RANGES = {
    "salary": (20_000, 150_000),
    "commission": (0, 75_000),
    "age": (20, 81),
    "hvalue": (0, 1_350_000),
    "hyears": (1, 31),
    "loan": (0, 500_000),
}
# The codes of its categorical attributes.
AGRAWAL_CODES = {"elevel": range(5), "car": range(1, 21), "zipcode": range(9)}


def mushroom(path: str | PathLike[str] | None = None) -> tuple[pl.DataFrame, list[str], str]:
    """UCI Mushroom as binary attributes: ``(frame, attributes, label)``.

    ``path`` defaults to ``mushroom.dat`` in the shared data folder
    (:func:`polars_ppdm.datasets.find_shared_data`); items 1 and 2 (poisonous, edible)
    are the class, item 1 the label.  Raises ``FileNotFoundError`` when it is absent.
    """
    if path is None:
        path = find_shared_data("mushroom.dat")
        if path is None:
            msg = "mushroom.dat not found: put ../shared/data beside the project or set PPDM_DATA"
            raise FileNotFoundError(msg)
    onehot = transactions_to_onehot(read_transactions(path))
    return onehot, [c for c in onehot.columns if c not in ("1", "2")], "1"


def agrawal_binary(function: int, rows: int = 20_000) -> tuple[pl.DataFrame, list[str], str]:
    """Agrawal data as binary attributes: ``(frame, attributes, label)``.

    :func:`polars_ppdm.datasets.agrawal` (``seed=function``), each numeric attribute cut
    into 10 equal-width intervals of its public range (:data:`AGRAWAL_RANGES`, values
    outside in the edge intervals), every interval and categorical code one Boolean
    column ``<attribute>_<i>``; the label is ``group_a``.

    Examples
    --------
    >>> frame, attributes, label = agrawal_binary(1, rows=100)
    >>> frame.shape, len(attributes), label
    ((100, 95), 94, 'group_a')
    >>> bool(frame.select(pl.sum_horizontal(pl.col("^age_.*$")) == 1).to_series().all())
    True
    """
    people = agrawal(rows, function, seed=function)
    columns = {}
    for name, (low, high) in AGRAWAL_RANGES.items():
        interval = ((people[name] - low) / (high - low) * 10).floor().clip(0, 9).cast(pl.Int64)
        for i in range(10):
            columns[f"{name}_{i}"] = interval == i
    for name, codes in AGRAWAL_CODES.items():
        for code in codes:
            columns[f"{name}_{code}"] = people[name] == code
    frame = pl.DataFrame(columns).with_columns(people["group_a"].alias("group_a"))
    return frame, [c for c in frame.columns if c != "group_a"], "group_a"
