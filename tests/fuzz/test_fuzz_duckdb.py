"""Fuzz every DuckDB UDF and macro that ``ppdm.duckdb.register(con)`` creates: SQL literals of
every type (NULLs, NaN, inf, huge integers, lists, structs, blobs, dates), named and
positional arguments, and tables with odd column names and types.

SQL has no Python exception classes, so the contract reads DuckDB's error: a binder,
catalog, conversion or parser error is DuckDB refusing the call by its types (it names the
function and its candidates); an error from inside a UDF must be one of polars_ppdm's own
(``Python exception occurred while executing the UDF: InvalidParameterError: ...``); and
no error may hold the secret.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb
import hypothesis.strategies as st
import polars as pl
import pytest
from fuzz_contract import COUNTS, ERRORS, OUTCOMES, SECRET_HEX, _violate, secret_free
from fuzz_strategies import ODD_NAMES, frames
from hypothesis import given

import polars_ppdm as ppdm

SECRET_SQL = f"'{SECRET_HEX}'"

LITERALS = [
    "NULL",
    "true",
    "false",
    "0",
    "1",
    "-1",
    "2",
    "0.5",
    "0.75",
    "1.5",
    "-0.0",
    "'NaN'::DOUBLE",
    "'inf'::DOUBLE",
    "'-inf'::DOUBLE",
    "1e308",
    "4.9e-324",
    "18446744073709551615::UBIGINT",
    "170141183460469231731687303715884105727::HUGEINT",
    "9223372036854775807",
    "'x'",
    "''",
    "'a'",
    "'it''s'",
    "'; DROP TABLE t; --'",
    "[]",
    "['a', 'b']",
    "['a', 'a']",
    "[NULL, 'a']",
    "[1, 2]",
    "{'a': 1}",
    "'\\x00'::BLOB",
    "DATE '2020-01-01'",
    "INTERVAL 1 DAY",
    "1.5::DECIMAL(4, 2)",
    # The secret appears only in the secret slot (VALID): a message that quotes a value the
    # caller wrote into another slot (dist := '<secret>') is not the library leaking it.
    "'0123456789abcdef0123456789abcdef'",
    "'env:PPDM_FUZZ_UNSET'",
    "'42'",
]

# name -> (number of positional arguments, named parameters with defaults)
SCALARS: dict[str, tuple[int, list[str]]] = {
    "ppdm_rr_disguise": (1, ["p", "secret", "key", "stream", "epsilon"]),
    "ppdm_rr_disguise_k": (2, ["p", "secret", "key", "stream", "epsilon"]),
    "ppdm_rr_disguise_whole_record": (2, ["p", "secret", "key", "epsilon", "record"]),
    "ppdm_add_noise": (5, ["dist"]),
    "ppdm_uniform": (3, []),
    "ppdm_prf_word": (3, []),
    "ppdm_discrete_laplace": (4, []),
    "ppdm_key": (1, []),
    "ppdm_rr_epsilon": (1, ["k"]),
    "ppdm_rr_p_from_epsilon": (1, ["k"]),
    "ppdm_rr_correct_share": (1, ["p", "epsilon"]),
}

# A valid call of each, for the calls that mutate one argument of it.
VALID: dict[str, list[str]] = {
    "ppdm_rr_disguise": ["true", "0.75", SECRET_SQL, "1", "'s'"],
    "ppdm_rr_disguise_k": ["'a'", "['a', 'b', 'c']", "0.75", SECRET_SQL, "1", "'s'"],
    "ppdm_rr_disguise_whole_record": ["true", "['a', 'b']", "0.75", SECRET_SQL, "1", "record := [true, false]"],
    "ppdm_add_noise": ["1.0", "2.0", SECRET_SQL, "1", "'s'"],
    "ppdm_uniform": [SECRET_SQL, "'s'", "1"],
    "ppdm_prf_word": [SECRET_SQL, "'s'", "1"],
    "ppdm_discrete_laplace": [SECRET_SQL, "'s'", "1", "2.0"],
    "ppdm_key": ["'alice'"],
    "ppdm_rr_epsilon": ["0.75"],
    "ppdm_rr_p_from_epsilon": ["1.0"],
    "ppdm_rr_correct_share": ["0.4", "0.75"],
}

_UDF_ERROR = re.compile(r"Python exception occurred while executing the UDF: (\w+)")
_OWN = {"InvalidParameterError", "SecretError", "BudgetExceededError", "PPDMError"}


@pytest.fixture(scope="module")
def sql() -> duckdb.DuckDBPyConnection:
    return ppdm.duckdb.register(duckdb.connect())


def sql_checked(con: duckdb.DuckDBPyConnection, target: str, query: str) -> list[tuple[Any, ...]] | None:
    """Run ``query`` under the SQL contract (see the module docs)."""
    COUNTS[target] += 1
    try:
        rows = con.execute(query).fetchall()
    except duckdb.Error as exc:
        # DuckDB quotes the query after "LINE n:": the caller's own SQL text, not a leak
        # (the secret in SQL text is why 'env:NAME' exists); the rest must not hold it.
        message = str(exc).split("\nLINE ")[0]
        # A Conversion Error quotes a literal the caller wrote into a slot of another type
        # (the secret given as the scale): the caller's text again, not the library's.
        if not secret_free(message) and not isinstance(exc, duckdb.ConversionException):
            _violate(target, f"the error message holds the secret: {message}\n{query}")
        udf = _UDF_ERROR.search(message)
        if udf and udf.group(1) not in _OWN:
            _violate(target, f"a raw error inside a UDF: {message}\n{query}")
        elif "resulted in an empty set" in message:
            _violate(target, f"DuckDB's binder error instead of naming the column: {message}\n{query}")
        elif isinstance(exc, duckdb.OutOfRangeException) and "ppdm_" in query:
            _violate(target, f"an arithmetic error inside a macro: {message}\n{query}")
        elif isinstance(exc, duckdb.InternalException | duckdb.FatalException):
            _violate(target, f"an internal DuckDB error: {message}\n{query}")
        else:
            OUTCOMES[target]["clear error"] += 1
            ERRORS[target][message.split("\n")[0][:90]] += 1
        return None
    OUTCOMES[target]["result"] += 1
    return rows


@st.composite
def scalar_calls(draw: st.DrawFn, name: str) -> tuple[str, str]:
    args = list(VALID[name])
    literal = st.sampled_from(LITERALS)
    how = draw(st.sampled_from(["mutate", "mutate", "random", "named"]))
    if how == "mutate":
        for i in draw(st.lists(st.integers(0, len(args) - 1), max_size=2, unique=True)):
            args[i] = draw(literal)
        args = args[: draw(st.integers(max(len(args) - 1, 0), len(args)))]
    elif how == "random":
        args = draw(st.lists(literal, max_size=len(args) + 1))
    else:
        positional, named = SCALARS[name]
        args = (
            args[:positional]
            + [f"{n} := {draw(literal)}" for n in draw(st.lists(st.sampled_from(named), unique=True))]
            if named
            else args
        )
    return name, f"SELECT {name}({', '.join(args)})"


@pytest.mark.fuzz
@pytest.mark.parametrize("function", sorted(SCALARS))
@given(data=st.data())
def test_scalar_udfs_and_macros_keep_the_contract(
    sql: duckdb.DuckDBPyConnection, function: str, data: st.DataObject
) -> None:
    name, query = data.draw(scalar_calls(function))
    sql_checked(sql, f"sql.{name}", query)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _table(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> bool:
    """The frame as table ``t`` (False when DuckDB cannot take one of its dtypes)."""
    frame = frame.with_columns(pl.col(pl.Int128, pl.UInt128).cast(pl.Float64))
    try:
        arrow = frame.to_arrow()
        con.register("fuzz_frame", arrow)
        con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM fuzz_frame")
    except duckdb.Error:
        return False
    finally:
        con.unregister("fuzz_frame")
    return True


@pytest.mark.fuzz
@given(data=st.data())
def test_udfs_over_a_table_keep_rows_and_nulls(sql: duckdb.DuckDBPyConnection, data: st.DataObject) -> None:
    """Scalar UDFs over a table of odd names and types: one output row per input row, in
    order, and a NULL input stays NULL."""
    frame, slots = data.draw(frames({"x": "bool", "c": "cat", "v": "num", "k": "key"}))
    if not _table(sql, frame):
        return
    x, c, v, k = (_ident(slots[s]) for s in "xcvk")
    key = data.draw(st.sampled_from([k, "rowid", f"ppdm_key({k}::VARCHAR, {SECRET_SQL})", "1", "NULL"]))
    column = data.draw(st.sampled_from([x, c, v, k]))
    name, expr = data.draw(
        st.sampled_from(
            [
                ("ppdm_rr_disguise", f"ppdm_rr_disguise({column}, 0.75, {SECRET_SQL}, {key}, 's')"),
                (
                    "ppdm_rr_disguise",
                    f"ppdm_rr_disguise({column}, epsilon := 1.0, secret := {SECRET_SQL}, key := {key})",
                ),
                (
                    "ppdm_rr_disguise_k",
                    f"ppdm_rr_disguise_k({column}, ['a', 'b', 'c'], 0.75, {SECRET_SQL}, {key}, 's')",
                ),
                (
                    "ppdm_rr_disguise_whole_record",
                    f"ppdm_rr_disguise_whole_record({column}, ['a', 'b'], 0.75, {SECRET_SQL}, {key}, record := [{column}, false])",
                ),
                ("ppdm_add_noise", f"ppdm_add_noise({column}, 1.0, {SECRET_SQL}, {key}, 's')"),
                ("ppdm_uniform", f"ppdm_uniform({SECRET_SQL}, {column}::VARCHAR, {key})"),
                ("ppdm_rr_disguise", f"ppdm_rr_disguise({column}, 0.75, {k}::VARCHAR, {key}, 's')"),
            ]
        )
    )
    rows = sql_checked(sql, f"sql.{name}[table]", f"SELECT {column} IS NULL, {expr} FROM t ORDER BY rowid")
    if rows is None:
        return
    if len(rows) != frame.height:
        _violate(f"sql.{name}[table]", f"{frame.height} rows in, {len(rows)} out: {expr}")
    if name.startswith("ppdm_rr") or name == "ppdm_add_noise":
        for was_null, out in rows:
            if was_null and out is not None:
                _violate(f"sql.{name}[table]", f"a NULL input gave {out!r}: {expr}")


@pytest.mark.fuzz
@given(data=st.data())
def test_table_macros_keep_the_contract(sql: duckdb.DuckDBPyConnection, data: st.DataObject) -> None:
    """The table macros with odd table and column names (as SQL strings), NULLs and wrong
    types in every argument."""
    frame, slots = data.draw(frames({"v": "num", "k": "key", "c": "cat"}))
    if not _table(sql, frame):
        return
    name_lit = st.sampled_from(
        [*(f"'{n.replace(chr(39), chr(39) * 2)}'" for n in [*slots.values(), *ODD_NAMES]), "NULL", "1"]
    )
    literal = st.sampled_from(LITERALS)
    v, k, c = (f"'{slots[s].replace(chr(39), chr(39) * 2)}'" for s in "vkc")
    name, args = data.draw(
        st.sampled_from(
            [
                ("ppdm_ecdf_resample", ["'t'", v, k, "10", SECRET_SQL]),
                ("ppdm_dp_histogram", ["'t'", v, "0", "1", "4", "0.5", SECRET_SQL]),
                ("ppdm_rr_support_k", ["'t'", c, "['a', 'b', 'c']", "0.75"]),
            ]
        )
    )
    for i in data.draw(st.lists(st.integers(0, len(args) - 1), max_size=2, unique=True)):
        args[i] = data.draw(
            name_lit if (i in (0, 1, 2) and name != "ppdm_dp_histogram") or i < 2 else literal
        )
    rows = sql_checked(sql, f"sql.{name}", f"SELECT * FROM {name}({', '.join(args)})")
    if rows is not None and name == "ppdm_ecdf_resample" and args[0] == "'t'" and len(rows) != frame.height:
        _violate(f"sql.{name}", f"{frame.height} rows in, {len(rows)} out: {args}")


@pytest.mark.fuzz
@given(literal=st.sampled_from(LITERALS), p=st.sampled_from(LITERALS))
def test_pattern_macros_take_hostile_counts(sql: duckdb.DuckDBPyConnection, literal: str, p: str) -> None:
    for name in ("ppdm_rr_support_patterns", "ppdm_rr_support_whole_record"):
        try:
            sql.execute(
                f"CREATE OR REPLACE TABLE counts AS FROM (VALUES ('10', 5), ('01', {literal})) v(pattern, n)"
            )
        except duckdb.Error:  # a count DuckDB cannot put in one column with 5
            continue
        sql_checked(sql, f"sql.{name}", f"SELECT * FROM {name}(counts, p := [{p}, 0.8])")
