"""A literal key or an aggregate value in an element-wise step.

Polars broadcasts a one-row input (``pl.lit(3)``, ``pl.col("x").sum()``) into an
element-wise expression of a lazy query, but hands an eager ``select`` the one row as it
is.  Before, an eager ``rr_disguise`` of an aggregate read the values' bitmap past its
one row (other bits than lazy's), and an eager ``add_noise`` failed with NumPy's message.

* A one-row key is repeated over the rows, as Polars does: every mode gives what the
  same step gives under a column holding that key on every row.
* An aggregate value is refused: each row would draw its own copy of the one value, and
  the copies together give it away.  Where Polars can tell (``Expr.meta.is_scalar``,
  after 1.34) it is refused when the step is built, in every mode (a lazy query on
  Polars 2 broadcasts it before the step sees it); a literal value is public, repeated.
* A key or value filtered to another length is refused in words that do not depend on
  how many rows the filter kept.
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


AGGREGATES: dict[str, Callable[[], pl.Expr]] = {
    "add_noise of a sum": lambda: (
        pl.col("k").sum().ppdm.add_noise(scale=1.0, secret=SECRET, key="id", stream="s")
    ),
    "add_noise of a sum, row-position keys": lambda: (
        pl.col("k").sum().ppdm.add_noise(dist="uniform", scale=2.0, secret=SECRET, stream="s")
    ),
    "rr_disguise of any()": lambda: (
        pl.col("a").any().ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", stream="s")
    ),
    "rr_disguise of a string max": lambda: (
        pl.col("k")
        .cast(pl.String)
        .max()
        .ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", categories=[str(i) for i in range(8)], stream="s")
    ),
}
TELLS_SCALARS = hasattr(pl.col("x").meta, "is_scalar")  # Polars 1.34 cannot tell when building


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", AGGREGATES)
def test_an_aggregate_value_is_refused_in_every_mode(case: str, mode: str) -> None:
    # Where Polars can tell, refused when the step is built: before, a lazy query on
    # Polars 2 broadcast the aggregate and the step perturbed every copy.
    if not TELLS_SCALARS and mode != "eager":
        pytest.skip("Polars < 2 cannot tell an aggregate when the step is built")
    with pytest.raises(InvalidParameterError, match="perturbs each unit's own value, but the column"):
        MODES[mode](AGGREGATES[case]())


@pytest.mark.parametrize("mode", MODES)
def test_a_literal_value_is_public_and_repeated(mode: str) -> None:
    if not TELLS_SCALARS:
        pytest.skip("Polars < 2 cannot tell a literal when the step is built")
    step = pl.lit(True).alias("a").ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", stream="s")
    column = FRAME.with_columns(a=pl.lit(True))  # the literal as a column of the frame's rows
    want = column.select(pl.col("a").ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", stream="s"))
    got = MODES[mode](step)
    assert got.to_list() == want.to_series().to_list()


def _refusal(frame: pl.DataFrame, step: pl.Expr) -> str:
    with pytest.raises(InvalidParameterError, match="have different numbers of rows") as refused:
        frame.select(step)
    return str(refused.value)


# The filter keeps one row of FRAME and two of TWO_SEVENS: the same words for both.
TWO_SEVENS = FRAME.with_columns(k=pl.when(pl.col("id") == 1).then(7).otherwise("k"))
SEVENS = pl.col("k") == 7


def test_a_filtered_key_is_refused_in_the_same_words_whatever_its_length() -> None:
    # Before, a key filtered down to one row was repeated over every row (all rows one
    # unit), and the words of the refusal told one row from several.
    if not TELLS_SCALARS:
        pytest.skip("Polars < 2 cannot tell a filtered key from a literal")
    step = pl.col("k").ppdm.add_noise(scale=1.0, secret=SECRET, key=pl.col("id").filter(SEVENS), stream="s")
    assert _refusal(FRAME, step) == _refusal(TWO_SEVENS, step)


def test_a_filtered_value_is_refused_in_the_same_words_whatever_its_length() -> None:
    if not TELLS_SCALARS:
        pytest.skip("Polars < 2 cannot tell a filtered value from an aggregate")
    step = (
        pl.col("k")
        .filter(SEVENS)
        .ppdm.rr_disguise(p=0.6, secret=SECRET, key="id", categories=list(range(8)), stream="s")
    )
    assert _refusal(FRAME, step) == _refusal(TWO_SEVENS, step)


def test_values_and_keys_of_other_lengths_are_refused() -> None:
    from polars_ppdm._encoding import aligned

    with pytest.raises(InvalidParameterError, match="'x' and the key 'id' have different numbers of rows"):
        aligned(pl.Series("x", [1.0, 2.0]), pl.Series("id", [1, 2, 3]), "add_noise")
