"""A group of the SQL DP macros is its exact value, as in Polars (attack review 73): no
public group aliases another's keyed word, no collation merges groups or units, and a group
listed twice is released once."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest
from _helpers import SQL_SECRET

import polars_ppdm as ppdm
from polars_ppdm import dp

SECRET = SQL_SECRET


@pytest.fixture
def con():
    connection = ppdm.duckdb.register(duckdb.connect())
    connection.execute(
        "CREATE TABLE t AS SELECT (i % 3)::INTEGER AS g, ['north', 'North', 'NORTH'][i % 3 + 1] AS region, "
        "i AS person, 'p' || i AS email, (i % 50)::DOUBLE AS spend FROM range(60) r(i)"
    )
    return connection


def _count(con, table="t", group="g", groups="NULL", unit="NULL", extra=""):
    return con.sql(
        f"SELECT * FROM ppdm_dp_count('{table}', '{group}', epsilon := 1.0, privacy_unit_column := {unit}, "
        f"public_groups := {groups}, secret := '{SECRET}'{extra})"
    ).pl()


def test_a_public_group_beyond_the_columns_type_is_refused(con):
    """2^64 + 1 has group 1's 64-bit pattern: one noise for group 1 and an empty group, whose
    difference was the exact count (20 of 20 secrets)."""
    with pytest.raises(duckdb.InvalidInputException, match="outside the range of the group column g"):
        _count(con, groups="[1, 18446744073709551617]")
    with pytest.raises(duckdb.InvalidInputException, match="outside the range"):
        _count(con, groups="[1, 3000000000]")  # an INTEGER column: as Polars' strict cast
    frame = con.sql("SELECT * FROM t").pl()
    with pytest.raises(ppdm.exceptions.InvalidParameterError, match="do not cast"):
        ppdm.dp_group_by(
            frame, "g", [dp.count()], epsilon=1.0, secret=ppdm.Secret.from_hex(SECRET),
            public_groups=pl.DataFrame({"g": [1, 3_000_000_000]}),
        )  # fmt: skip


def test_a_group_listed_twice_is_released_once_as_in_polars(con):
    twice = _count(con, groups="[2, 1, 2]")
    assert twice["g"].to_list() == [2, 1]
    assert twice.equals(_count(con, groups="[2, 1]"))
    frame = con.sql("SELECT * FROM t").pl()
    polars = ppdm.dp_group_by(
        frame, "g", [dp.count()], epsilon=1.0, secret=ppdm.Secret.from_hex(SECRET),
        public_groups=pl.DataFrame({"g": pl.Series([2, 1, 2], dtype=pl.Int32)}),
    )  # fmt: skip
    assert polars["count"].to_list() == twice["count"].to_list()


@pytest.mark.parametrize(
    ("setup", "call"),
    [
        ("SET default_collation = 'nocase'", {"group": "region"}),
        (
            "CREATE TABLE c AS SELECT region::VARCHAR COLLATE NOCASE AS region, person FROM t",
            {"table": "c", "group": "region"},
        ),
        (
            "CREATE TABLE c AS SELECT region::VARCHAR COLLATE NOACCENT AS region, person FROM t",
            {"table": "c", "group": "region"},
        ),
        (
            "CREATE TABLE c AS SELECT region::VARCHAR COLLATE NFC AS region, person FROM t",
            {"table": "c", "group": "region"},
        ),
        (
            "CREATE TABLE c AS SELECT g, email::VARCHAR COLLATE NOCASE AS email FROM t",
            {"table": "c", "unit": "'email'"},
        ),
        ("SELECT 1", {"group": "region", "groups": "['north' COLLATE NOCASE]"}),
    ],
    ids=[
        "default_collation",
        "nocase column",
        "noaccent column",
        "nfc column",
        "nocase unit",
        "collated public group",
    ],
)
def test_text_under_a_collation_is_refused_before_any_row_is_read(con, setup, call):
    """Under NOCASE, every spelling of 'north' in public_groups released the merged count
    with its own noise (their mean was the count), and without public groups the spelling
    of the released label told whether one person was there."""
    con.execute(setup).fetchall()
    with pytest.raises(duckdb.InvalidInputException, match="compares text under a collation"):
        _count(con, **call)
    con.execute("RESET default_collation")


def test_exact_text_groups_are_released_apart_as_in_polars(con):
    sql = _count(con, group="region", groups="['north', 'North', 'NORTH']")
    assert sql["region"].to_list() == ["north", "North", "NORTH"]
    frame = con.sql("SELECT * FROM t").pl()
    polars = ppdm.dp_group_by(
        frame, "region", [dp.count()], epsilon=1.0, secret=ppdm.Secret.from_hex(SECRET),
        public_groups=pl.DataFrame({"region": ["north", "North", "NORTH"]}),
    )  # fmt: skip
    assert polars["count"].to_list() == sql["count"].to_list()
