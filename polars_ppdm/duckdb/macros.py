"""Registration: :func:`register` puts every UDF (:mod:`~polars_ppdm.duckdb.scalar`,
:mod:`~polars_ppdm.duckdb.group_by`) and every macro of ``sql/`` (:func:`sql_files`) on a
connection.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

import duckdb

from polars_ppdm.duckdb.group_by import register_group_by_udfs
from polars_ppdm.duckdb.scalar import register_scalar_udfs
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["register", "sql_files"]


def sql_files() -> list[Path]:
    """The ``.sql`` macro files shipped with the package (one macro, or one family, per file)."""
    packaged = resources.files("polars_ppdm") / "sql"
    if packaged.is_dir():
        return sorted(Path(str(p)) for p in packaged.iterdir() if p.name.endswith(".sql"))
    # Editable install / source tree: the top-level sql/ folder.
    return sorted((Path(__file__).resolve().parents[2] / "sql").glob("*.sql"))


def register(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Register the polars_ppdm UDFs and ``sql/`` macros on a DuckDB connection.

    Examples
    --------
    >>> import duckdb
    >>> import polars_ppdm as ppdm
    >>> con = ppdm.duckdb.register(duckdb.connect())
    >>> con.sql("SELECT ppdm_rr_disguise(x, 1.0, '42', i, 'x') AS y FROM (VALUES (true, 1), (false, 2)) t(x, i)").fetchall()
    [(True,), (False,)]
    >>> round(con.execute("SELECT ppdm_rr_epsilon(0.75)").fetchall()[0][0], 4)
    1.0986
    >>> con.sql(
    ...     "SELECT ppdm_rr_disguise(x, epsilon := 1e9, secret := '42', key := i, stream := 'x') AS y "
    ...     "FROM (VALUES (true, 1), (false, 2)) t(x, i)"
    ... ).fetchall()
    [(True,), (False,)]
    """
    _refuse_shadowed_builtins(con)
    register_scalar_udfs(con)
    register_group_by_udfs(con)
    for statement in _macro_statements():
        con.execute(statement)
    return con


# A function of the database (a macro, a table macro) named as one of DuckDB's own comes
# first in name resolution, also inside polars_ppdm's macros, which call the built-ins.
# Names compared without case (DuckDB resolves them so: a planted LEAST was found too, review
# 79), and the catalogue read by its full name (a planted duckdb_functions() hid them).
_SHADOWING = """
SELECT DISTINCT database_name, schema_name, function_name FROM system.main.duckdb_functions()
WHERE NOT internal AND system.main.lower(function_name) IN
      (SELECT system.main.lower(function_name) FROM system.main.duckdb_functions() WHERE internal)
ORDER BY ALL
"""


def _refuse_shadowed_builtins(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a database whose own functions shadow built-ins that the macros call.

    Attack review 73: whoever could write to a database file (no secret, no polars_ppdm)
    left ``CREATE MACRO least(a, b) AS system.main.greatest(a, b)`` in it; after the
    operator registered and released, ``ppdm_dp_sum``'s clamp kept the largest value, and
    one person's salary came out of a sum bounded to [0, 100]; a planted ``abs`` cut the
    noise's scale to one grid unit, and the exact sum came out with nothing amiss.
    """
    shadowing = con.execute(_SHADOWING).fetchall()
    if shadowing:
        names = [".".join(row) for row in shadowing]
        msg = (
            f"The 'con' parameter of polars_ppdm.duckdb.register: the database defines {names}, named as DuckDB's "
            "built-in functions: they would replace the built-ins inside polars_ppdm's macros, and so change what "
            "a release computes and how much noise it adds. Drop them (DROP MACRO, DROP MACRO TABLE) or connect "
            "to a database without them; nothing was registered."
        )
        raise InvalidParameterError(msg)


@functools.cache
def _macro_statements() -> tuple[duckdb.Statement, ...]:
    """Every statement of the ``sql/`` files, parsed once per process: parsing was half of a
    registration (23 of 46 ms), and a parsed statement runs on any connection (each run
    copies it, so threads may share them)."""
    parser = duckdb.connect()
    try:
        return tuple(
            statement
            for path in sql_files()
            for statement in parser.extract_statements(path.read_text(encoding="utf-8"))
        )
    finally:
        parser.close()
