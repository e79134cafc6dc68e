"""Hypothesis strategies for hostile input: dtypes, values, column names, parameters.

Columns are drawn per *role* (what the function expects: a binary answer, a number, a
category, a row key).  Most of the time a column gets its role's dtype with hostile
values (nulls, NaN, inf, -0.0, huge, subnormal, 0 or 1 rows); otherwise any dtype of
:data:`HOSTILE_DTYPES`, with values from Polars' parametric strategies
(``polars.testing.parametric.series``).
"""

from __future__ import annotations

import decimal
import math
from typing import Any

import hypothesis.strategies as st
import numpy as np
import polars as pl
from polars.testing.parametric import series as pl_series

# Column names a user might have: spaces, quotes, unicode, SQL metacharacters, names
# that start like polars_ppdm's internal columns.
ODD_NAMES = [
    "x",
    "a b",
    "it's",
    'say "hi"',
    "ünï©ødé",
    "列",
    "x; DROP TABLE t; --",
    "__draw",
    "__ppdm_key",
    "__index",
    "1",
    "select",
    "a.b",
    "$x",
    "col)",
    "tab\there",
    "",
]

SPECIAL_FLOATS = [
    math.nan,
    math.inf,
    -math.inf,
    -0.0,
    0.0,
    1e308,
    -1e308,
    5e-324,
    2.2250738585072014e-308,
    1.0,
    0.5,
]

HOSTILE_DTYPES: list[pl.DataType] = [
    pl.Boolean(),
    pl.Int8(),
    pl.Int64(),
    pl.UInt64(),
    pl.Int128(),
    pl.UInt128(),
    pl.Float32(),
    pl.Float64(),
    pl.Decimal(12, 3),
    pl.Date(),
    pl.Datetime("us"),
    pl.Datetime("ns", "UTC"),
    pl.Duration("ms"),
    pl.Time(),
    pl.String(),
    pl.Categorical(),
    pl.Enum(["a", "b", "c"]),
    pl.Binary(),
    pl.List(pl.Int64()),
    pl.Struct({"a": pl.Int64(), "b": pl.String()}),
    pl.Null(),
]

CATEGORIES = ["a", "b", "c"]


def floats() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats(allow_nan=True, allow_infinity=True))


def _nullable(values: st.SearchStrategy[Any], null: bool) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), values) if null else values


def _clean(role: str, name: str, n: int, draw: st.DrawFn) -> pl.Series:
    """Valid values of the role's usual dtype: a call that must succeed can be drawn."""
    values = {
        "bool": st.booleans(),
        "num": st.floats(-1e6, 1e6),
        "int": st.integers(0, 120),
        "cat": st.sampled_from(CATEGORIES),
        "basket": st.lists(st.sampled_from(CATEGORIES), max_size=3),
        "key": st.integers(-(2**63), 2**63 - 1),
    }[role]
    return pl.Series(name, draw(st.lists(values, min_size=n, max_size=n, unique=role == "key")))


@st.composite
def role_series(draw: st.DrawFn, role: str, name: str, n: int, clean: bool = False) -> pl.Series:
    """``n`` values for a column of ``role`` (usually of its dtype, sometimes any)."""
    if clean:
        return _clean(role, name, n, draw)
    if draw(st.integers(0, 4)) == 0:  # any dtype at all
        dtype = draw(st.sampled_from(HOSTILE_DTYPES))
        if dtype == pl.Null():
            return pl.Series(name, [None] * n, dtype=pl.Null)
        return draw(pl_series(name=name, dtype=dtype, min_size=n, max_size=n, allow_chunks=False))
    null = draw(st.integers(0, 2)) == 0
    if draw(st.integers(0, 14)) == 0:  # all null, of the role's dtype
        dtype = {
            "bool": pl.Boolean,
            "num": pl.Float64,
            "int": pl.Int64,
            "cat": pl.String,
            "key": pl.Int64,
            "basket": pl.List(pl.String),
        }[role]
        return pl.Series(name, [None] * n, dtype=dtype)
    if role == "bool":
        kind = draw(st.sampled_from(["bool", "int01", "float01"]))
        vals = draw(st.lists(_nullable(st.booleans(), null), min_size=n, max_size=n))
        if kind == "bool":
            return pl.Series(name, vals, dtype=pl.Boolean)
        dtype = pl.Int64 if kind == "int01" else pl.Float64
        return pl.Series(name, [None if v is None else int(v) for v in vals], dtype=dtype)
    if role == "num":
        kind = draw(st.sampled_from(["float", "float", "int", "uint64", "int128", "float32", "decimal"]))
        if kind == "float":
            return pl.Series(
                name, draw(st.lists(_nullable(floats(), null), min_size=n, max_size=n)), dtype=pl.Float64
            )
        if kind == "float32":
            vals = draw(st.lists(_nullable(st.floats(width=32), null), min_size=n, max_size=n))
            return pl.Series(name, vals, dtype=pl.Float32)
        if kind == "int":
            vals = draw(st.lists(_nullable(st.integers(-(2**63), 2**63 - 1), null), min_size=n, max_size=n))
            return pl.Series(name, vals, dtype=pl.Int64)
        if kind == "uint64":
            vals = draw(
                st.lists(_nullable(st.integers(2**64 - 2**12, 2**64 - 1), null), min_size=n, max_size=n)
            )
            return pl.Series(name, vals, dtype=pl.UInt64)
        if kind == "int128":
            vals = draw(st.lists(_nullable(st.integers(-(2**127), 2**127 - 1), null), min_size=n, max_size=n))
            return pl.Series(name, vals, dtype=pl.Int128)
        vals = draw(
            st.lists(
                _nullable(st.decimals(min_value=-(10**8), max_value=10**8, places=3, allow_nan=False), null),
                min_size=n,
                max_size=n,
            )
        )
        return pl.Series(name, vals, dtype=pl.Decimal(12, 3))
    if role == "int":
        vals = draw(st.lists(_nullable(st.integers(0, 120), null), min_size=n, max_size=n))
        return pl.Series(name, vals, dtype=pl.Int64)
    if role == "cat":
        dtype = draw(st.sampled_from([pl.String(), pl.Categorical(), pl.Enum(CATEGORIES)]))
        vals = draw(st.lists(_nullable(st.sampled_from(CATEGORIES), null), min_size=n, max_size=n))
        return pl.Series(name, vals, dtype=dtype)
    if role == "basket":
        item = st.sampled_from(["a", "b", "c", "", "a b", "it's"])
        vals = draw(
            st.lists(_nullable(st.lists(_nullable(item, null), max_size=4), null), min_size=n, max_size=n)
        )
        return pl.Series(name, vals, dtype=pl.List(pl.String))
    if role == "key":
        kind = draw(st.sampled_from(["int", "int", "str", "uint64", "int128", "float", "dup"]))
        if kind == "int":
            return pl.Series(
                name, draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n, unique=True))
            )
        if kind == "str":
            return pl.Series(name, draw(st.lists(st.text(max_size=6), min_size=n, max_size=n, unique=True)))
        if kind == "uint64":
            vals = draw(st.lists(st.integers(2**64 - 2**12, 2**64 - 1), min_size=n, max_size=n, unique=True))
            return pl.Series(name, vals, dtype=pl.UInt64)
        if kind == "int128":
            vals = draw(st.lists(st.integers(-(2**127), 2**127 - 1), min_size=n, max_size=n, unique=True))
            return pl.Series(name, vals, dtype=pl.Int128)
        if kind == "float":
            return pl.Series(
                name, draw(st.lists(_nullable(floats(), null), min_size=n, max_size=n)), dtype=pl.Float64
            )
        vals = draw(st.lists(_nullable(st.integers(0, 2), null), min_size=n, max_size=n))
        return pl.Series(name, vals, dtype=pl.Int64)
    raise AssertionError(role)


@st.composite
def frames(
    draw: st.DrawFn, roles: dict[str, str], *, max_rows: int = 8
) -> tuple[pl.DataFrame, dict[str, str]]:
    """A frame with one column per slot of ``roles`` (slot -> role), under odd names, and
    the slot -> column-name map."""
    names = draw(st.lists(st.sampled_from(ODD_NAMES), min_size=len(roles), max_size=len(roles), unique=True))
    n = draw(st.one_of(st.sampled_from([0, 1, 2]), st.integers(0, max_rows), st.just(40), st.just(40)))
    slots = dict(zip(roles, names, strict=True))
    clean = draw(st.integers(0, 2)) == 0  # a third of the frames are valid data
    if clean:
        n = draw(st.sampled_from([2, 3, 10, 40]))
    cols = [draw(role_series(role, slots[slot], n, clean)) for slot, role in roles.items()]
    return pl.DataFrame({s.name: s for s in cols}), slots  # a dict keeps the name ""


# Values a parameter should refuse (or take, if it documents them): NumPy scalars,
# strings, None, bools, NaN / inf / -0.0 / huge, containers, objects.
HOSTILE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2,
    2**64,
    10**30,
    np.int64(3),
    np.uint64(2**64 - 1),
    np.float32(0.5),
    np.float64(math.nan),
    np.bool_(True),
    math.nan,
    math.inf,
    -math.inf,
    -0.0,
    5e-324,
    1e308,
    0.5,
    "0.5",
    "x",
    "",
    [],
    [None],
    [1, 2],
    (0.0, 1.0),
    (1.0, 0.0),
    {},
    {"x": 1},
    b"bytes",
    complex(1, 1),
    decimal.Decimal("0.5"),
    np.array([0.5]),
    pl.lit(1),
    object(),
]


def hostile() -> st.SearchStrategy[Any]:
    return st.sampled_from(HOSTILE_VALUES)
