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
    register_scalar_udfs(con)
    register_group_by_udfs(con)
    for statement in _macro_statements():
        con.execute(statement)
    return con


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
