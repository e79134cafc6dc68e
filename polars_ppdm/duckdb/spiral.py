"""A :class:`~polars_ppdm.SpiralKey` as a pure-SQL DuckDB table macro (:func:`spiral_macro_sql`,
:func:`register_spiral_key`)."""

from __future__ import annotations

from typing import Any

import duckdb

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.perturb.spiral import SpiralKey

__all__ = ["register_spiral_key", "spiral_macro_sql"]


def _double(value: float) -> str:
    # 17 significant digits with an exponent: DuckDB reads it as a DOUBLE (not a DECIMAL)
    # and rounds it back to exactly this float.
    return f"{float(value):.17e}::DOUBLE"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _check_spiral_macro(key: Any, name: Any, func: str) -> None:
    if not isinstance(key, SpiralKey):
        msg = f"The 'key' parameter of {func} must be a SpiralKey (from spiral_key). Got {type(key).__name__} instead."
        raise InvalidParameterError(msg)
    if not isinstance(name, str) or not name:
        msg = f"The 'name' parameter of {func} must be a non-empty str (the macro's name). Got {name!r} instead."
        raise InvalidParameterError(msg)


def spiral_macro_sql(key: SpiralKey, name: str = "ppdm_spiral") -> str:
    """The SQL of a table macro ``name(tbl)`` applying a :class:`~polars_ppdm.SpiralKey`.

    Pure SQL with the matrix as constants: ``SELECT * REPLACE (...)`` with, per column,
    ``b_i + A_i0 * x_0 + A_i1 * x_1 + ...`` in the order Polars adds them, so the values
    are the same bits.  The SQL text *is* the key: anyone who reads the macro (e.g. in
    ``duckdb_functions()``) can undo the perturbation; use it on connections the data
    owner controls.
    """
    _check_spiral_macro(key, name, "spiral_macro_sql")
    cols = list(key.columns)
    x = {c: f"{_identifier(c)}::DOUBLE" for c in cols}
    checks = " OR ".join(f"isnan({x[c]}) OR isinf({x[c]})" for c in cols)
    moved = []
    for i, c in enumerate(cols):
        terms = [_double(key.offset[i])] + [
            f"{_double(key.matrix[i, j])} * {x[src]}" for j, src in enumerate(cols)
        ]
        expr = "(" + " + ".join(terms) + ")"
        if i == 0:  # refuse NaN and infinities, as Polars does
            message = f"{name}: NaN or infinite values; replace them or make them null".replace("'", "''")
            expr = f"CASE WHEN {checks} THEN error('{message}') ELSE {expr} END"
        moved.append(f"{expr} AS {_identifier(c)}")
    return f"CREATE OR REPLACE MACRO {_identifier(name)}(tbl) AS TABLE SELECT * REPLACE ({', '.join(moved)}) FROM query_table(tbl);"


def register_spiral_key(
    con: duckdb.DuckDBPyConnection, key: SpiralKey, name: str = "ppdm_spiral"
) -> duckdb.DuckDBPyConnection:
    """Register ``name(tbl)``: the table with the key's columns moved (see :func:`spiral_macro_sql`).

    Examples
    --------
    >>> import duckdb
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> df = pl.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "id": [1, 2]})
    >>> key = ppdm.spiral_key(["a", "b"], bounds={"a": (0, 5), "b": (0, 5)}, rounds=3, secret=1)
    >>> con = ppdm.duckdb.register_spiral_key(duckdb.connect(), key, "perturb")
    >>> con.sql("FROM perturb('df') ORDER BY id").pl().equals(ppdm.apply_spiral_key(df, key))
    True
    """
    _check_spiral_macro(key, name, "register_spiral_key")
    con.execute(spiral_macro_sql(key, name))
    return con
