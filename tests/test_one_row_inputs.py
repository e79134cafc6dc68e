"""A literal key or an aggregate value in an element-wise step.

Polars broadcasts a one-row input (``pl.lit(3)``, ``pl.col("x").sum()``) into an
element-wise expression of a lazy query, but hands an eager ``select`` the one row as it
is.  Before, an eager ``rr_disguise`` of an aggregate read the values' bitmap past its
one row (other bits than lazy's), and an eager ``add_noise`` failed with NumPy's message.

* A one-row key is repeated over the rows, as Polars does: every mode gives what the
  same step gives under a column holding that key on every row.
* A one-row value against several keys is refused: each row would draw its own copy of
  the one value (an aggregate), and the copies together give it away.  Where Polars
  broadcasts it first (a lazy query on Polars 2) the step cannot tell it from a column of
  equal values; the docstrings say not to perturb an aggregate.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError

SECRET = ppdm.Secret.for_tests(1)
FRAME = pl.DataFrame(
    {
        "id": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        "k": [0, 1, 5, 2, 1, 4, 4, 0, 3, 2, 7],
        "a": [True, False, True, True, False, False, True, None, True, False, True],
    }
)
BROADCAST = FRAME.with_columns(three=pl.lit(3, dtype=pl.Int32))

# name: (the step under a literal key, the same step under the broadcast key column)
LITERAL_KEYS: dict[str, tuple[pl.Expr, pl.Expr]] = {
    "rr_disguise": (
        pl.col("a").ppdm.rr_disguise(p=0.6, secret=SECRET, key=pl.lit(3), stream="s"),
        pl.col("a").ppdm.rr_disguise(p=0.6, secret=SECRET, key="three", stream="s"),
    ),
    "rr_disguise k-ary": (
        pl.col("k").ppdm.rr_disguise(
            p=0.6, secret=SECRET, key=pl.lit(3), categories=list(range(8)), stream="s"
        ),
        pl.col("k").ppdm.rr_disguise(
            p=0.6, secret=SECRET, key="three", categories=list(range(8)), stream="s"
        ),
    ),
    "add_noise": (
        pl.col("k").ppdm.add_noise(scale=1.0, secret=SECRET, key=pl.lit(3), stream="s"),
        pl.col("k").ppdm.add_noise(scale=1.0, secret=SECRET, key="three", stream="s"),
    ),
}

MODES: dict[str, Callable[[pl.Expr], pl.Series]] = {
    "eager": lambda e: FRAME.select(e).to_series(),
    "lazy": lambda e: FRAME.lazy().select(e).collect().to_series(),
    "streaming": lambda e: FRAME.lazy().select(e).collect(engine="streaming").to_series(),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", LITERAL_KEYS)
def test_a_literal_key_is_repeated_over_the_rows_in_every_mode(case: str, mode: str) -> None:
    step, on_column = LITERAL_KEYS[case]
    want = BROADCAST.select(on_column).to_series()
    got = MODES[mode](step)
    assert got.len() == FRAME.height
    assert got.to_list() == want.to_list()


AGGREGATES = {
    "add_noise of a sum": pl.col("k").sum().ppdm.add_noise(scale=1.0, secret=SECRET, key="id", stream="s"),
    "add_noise of a sum, row-position keys": pl.col("k")
    .sum()
    .ppdm.add_noise(dist="uniform", scale=2.0, secret=SECRET, stream="s"),
    "rr_disguise of any()": pl.col("a").any().ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", stream="s"),
    "rr_disguise of a string max": pl.col("k")
    .cast(pl.String)
    .max()
    .ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", categories=[str(i) for i in range(8)], stream="s"),
}


@pytest.mark.parametrize("case", AGGREGATES)
def test_an_aggregate_value_handed_over_as_one_row_is_refused(case: str) -> None:
    with pytest.raises(InvalidParameterError, match="perturbs each unit's own value, but the column"):
        FRAME.select(AGGREGATES[case])


def test_values_and_keys_of_other_lengths_are_refused() -> None:
    from polars_ppdm._encoding import aligned

    with pytest.raises(InvalidParameterError, match="'x' and the key 'id' have different numbers of rows"):
        aligned(pl.Series("x", [1.0, 2.0]), pl.Series("id", [1, 2, 3]), "add_noise")
