"""A query chained after a lazy whole-frame result sees that result, not a shortcut.

``rr_support``, ``ecdf_resample``, ``dp_histogram`` and ``dp_group_by`` return a lazy
frame that is a function of the whole input (an estimate, a resample, a noisy release).
Polars 1's ``LazyFrame.map_batches`` let a ``head``, ``slice``, ``filter`` or ``select``
written after it move before it by default: on Polars 1.34 (the declared minimum, run by
CI's minimum-versions leg) ``rr_support(lf).head(2)`` estimated from the first two input
rows, and ``ecdf_resample(lf).filter(...)`` resampled the filtered rows alone.  Every
chained query must equal the same query over the collected result.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import dp

N = 600
SECRET = ppdm.Secret.for_tests(3)


def _table() -> pl.LazyFrame:
    rng = np.random.default_rng(11)
    return pl.LazyFrame(
        {
            "id": np.arange(N),
            "a": rng.random(N) < 0.4,
            "b": rng.random(N) < 0.6,
            "x": rng.normal(50.0, 10.0, N),
            "g": rng.integers(0, 4, N),
        }
    )


def _zero_one(lf: pl.LazyFrame) -> pl.LazyFrame:
    # Integer columns take rr_support's group-by path (Booleans take the sums path).
    return lf.with_columns(pl.col("a", "b").cast(pl.Int64), c=(pl.col("g") % 2), d=(pl.col("g") // 2))


RESULTS: dict[str, Callable[[pl.LazyFrame], pl.LazyFrame]] = {
    "rr_support sums": lambda lf: ppdm.rr_support(lf, ["a", "b"], p=0.8),
    "rr_support group-by": lambda lf: ppdm.rr_support(_zero_one(lf), ["a", "b", "c", "d"], p=0.8),
    "rr_support itemsets": lambda lf: ppdm.rr_support(lf, ["a", "b"], p=0.8, itemsets=[["a"], ["a", "b"]]),
    "ecdf_resample": lambda lf: ppdm.ecdf_resample(lf, ["x"], secret=SECRET, key="id"),
    "dp_histogram": lambda lf: ppdm.dp_histogram(
        lf, "x", bins=10, bounds=(0, 100), epsilon=1.0, secret=SECRET
    ),
    "dp_group_by": lambda lf: ppdm.dp_group_by(
        lf,
        "g",
        [dp.count(), dp.sum("x", bounds=(0, 100))],
        epsilon=1.0,
        privacy_unit="id",
        public_groups=pl.DataFrame({"g": [0, 1, 2, 3]}),
        secret=SECRET,
    ),
}

CHAINED: dict[str, Callable[[pl.LazyFrame], pl.LazyFrame]] = {
    "head": lambda q: q.head(2),
    "slice": lambda q: q.slice(1, 2),
    "tail": lambda q: q.tail(1),
    # The last column is a number in every result (a frequency, a count, a value).
    "filter": lambda q: q.filter(pl.last() == pl.last().max()),
    "select the last column": lambda q: q.select(pl.last()),
    "filter then select": lambda q: q.filter(pl.last() != pl.last().min()).select(pl.first()),
}


@pytest.mark.parametrize("chained", CHAINED, ids=str)
@pytest.mark.parametrize("result", RESULTS, ids=str)
def test_a_query_after_the_result_sees_the_whole_result(result: str, chained: str) -> None:
    lazy = RESULTS[result](_table())
    whole = lazy.collect()
    assert whole.height >= 2
    got = CHAINED[chained](lazy).collect()
    want = CHAINED[chained](whole.lazy()).collect()
    assert got.equals(want), (result, chained, got, want)
