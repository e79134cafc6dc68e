"""An aggregate or a literal in an element-wise step: eager, lazy and streaming agree.

Polars broadcasts a one-row input (``pl.col("x").sum()``, ``pl.lit(3)``) into an
element-wise expression of a lazy query, but hands an eager ``select`` the one row as it
is.  The expression forms of ``rr_disguise`` and ``add_noise`` repeat it themselves, so
every mode gives what the lazy query gives: the result of the same step over a column
that holds the one value on every row.  Before, an eager ``rr_disguise`` of an aggregate
read the values' bitmap past its one row (other bits than lazy's), and an eager
``add_noise`` failed with NumPy's message.
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

# name: (the step on an aggregate or literal, the same step on the broadcast column)
CASES: dict[str, tuple[pl.Expr, pl.Expr]] = {
    "add_noise of a sum": (
        pl.col("k").sum().ppdm.add_noise(scale=1.0, secret=SECRET, key="id", stream="s"),
        pl.col("k_sum").ppdm.add_noise(scale=1.0, secret=SECRET, key="id", stream="s"),
    ),
    "add_noise of a sum, row-position keys": (
        pl.col("k").sum().ppdm.add_noise(dist="uniform", scale=2.0, secret=SECRET, stream="s"),
        pl.col("k_sum").ppdm.add_noise(dist="uniform", scale=2.0, secret=SECRET, stream="s"),
    ),
    "rr_disguise of any()": (
        pl.col("a").any().ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", stream="s"),
        pl.col("a_any").ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", stream="s"),
    ),
    "rr_disguise of a string max": (
        pl.col("k")
        .cast(pl.String)
        .max()
        .ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", categories=[str(i) for i in range(8)], stream="s"),
        pl.col("k_max").ppdm.rr_disguise(
            p=0.6, secret=SECRET, key="id", categories=[str(i) for i in range(8)], stream="s"
        ),
    ),
    "rr_disguise under a literal key": (
        pl.col("a").ppdm.rr_disguise(p=0.6, secret=SECRET, key=pl.lit(3), stream="s"),
        pl.col("a").ppdm.rr_disguise(p=0.6, secret=SECRET, key="three", stream="s"),
    ),
}

BROADCAST = FRAME.with_columns(
    k_sum=pl.col("k").sum(),
    a_any=pl.col("a").any(),
    k_max=pl.col("k").cast(pl.String).max(),
    three=pl.lit(3, dtype=pl.Int32),
)

MODES: dict[str, Callable[[pl.Expr], pl.Series]] = {
    "eager": lambda e: FRAME.select(e).to_series(),
    "lazy": lambda e: FRAME.lazy().select(e).collect().to_series(),
    "streaming": lambda e: FRAME.lazy().select(e).collect(engine="streaming").to_series(),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_a_one_row_input_draws_per_row_as_the_broadcast_column(case: str, mode: str) -> None:
    step, on_column = CASES[case]
    want = BROADCAST.select(on_column).to_series()
    got = MODES[mode](step)
    assert got.len() == FRAME.height
    assert got.to_list() == want.to_list()


def test_values_and_keys_of_other_lengths_are_refused() -> None:
    from polars_ppdm._encoding import aligned

    with pytest.raises(InvalidParameterError, match="'x' and the key 'id' have different numbers of rows"):
        aligned(pl.Series("x", [1.0, 2.0]), pl.Series("id", [1, 2, 3]), "add_noise")
