"""Property tests: for any column, rr_disguise keeps nulls, dtype, length and domain, in every engine."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

CATS = ["a", "b", "c", "d", "e"]

columns = st.one_of(
    st.lists(st.one_of(st.none(), st.booleans()), max_size=300).map(
        lambda v: pl.Series("x", v, dtype=pl.Boolean)
    ),
    st.lists(st.one_of(st.none(), st.integers(0, 1)), max_size=300).map(
        lambda v: pl.Series("x", v, dtype=pl.Int32)
    ),
    st.lists(st.one_of(st.none(), st.sampled_from(CATS)), max_size=300).map(
        lambda v: pl.Series("x", v, dtype=pl.Enum(CATS))
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    column=columns, p=st.floats(0.0, 1.0).filter(lambda p: p not in (0.5, 0.2)), secret=st.integers(0, 2**32)
)
def test_disguise_keeps_shape_nulls_dtype_and_domain(column, p, secret):
    frame = pl.DataFrame([column]).with_row_index("id")
    expr = pl.col("x").ppdm.rr_disguise(p=p, secret=secret, key="id")
    eager = frame.with_columns(expr)
    assert eager.height == frame.height and eager.schema == frame.schema
    assert eager["x"].is_null().equals(frame["x"].is_null())
    assert_frame_equal(frame.lazy().with_columns(expr).collect(engine="streaming"), eager)
    if column.dtype == pl.Int32:
        assert set(eager["x"].drop_nulls().to_list()) <= {0, 1}
    again = frame.reverse().with_columns(expr).reverse()
    assert_frame_equal(again, eager)  # keyed: the row order does not matter
    if p == 1.0:
        assert_frame_equal(eager, frame)
