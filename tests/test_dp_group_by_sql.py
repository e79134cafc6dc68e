"""DuckDB's ppdm_dp_count / ppdm_dp_sum / ppdm_dp_avg: the same bits as dp_group_by."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pytest
from _helpers import SQL_AGGREGATES, SQL_GROUPS, SQL_SECRET

import polars_ppdm as ppdm

SECRET, AGGREGATES, GROUPS = SQL_SECRET, SQL_AGGREGATES, SQL_GROUPS


@pytest.fixture(scope="module")
def visits() -> pl.DataFrame:
    rng = np.random.default_rng(1)
    n = 20_000
    return pl.DataFrame(
        {
            "person": rng.integers(0, 3000, n),
            "email": [f"p{i}@example.org" for i in rng.integers(0, 3000, n)],
            "region": rng.choice(["a", "b", "c"], n),
            "zone": rng.integers(0, 5, n),
            "spend": rng.uniform(-5, 12, n),
        }
    )


@pytest.fixture(scope="module")
def con(visits) -> duckdb.DuckDBPyConnection:
    connection = ppdm.duckdb.register(duckdb.connect())
    connection.register("visits", visits)
    return connection


@pytest.mark.parametrize("public", [True, False], ids=["public groups", "partition selection"])
@pytest.mark.parametrize("unit", ["person", "email", None])
@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("kind", sorted(AGGREGATES))
def test_sql_equals_polars_bit_for_bit(con, visits, kind, group, unit, public):
    make, macro, value = AGGREGATES[kind]
    kwargs: dict = {"epsilon": 1.0, "secret": SECRET}
    sql = f", epsilon := 1.0, secret := '{SECRET}'"
    if unit:
        kwargs |= {"privacy_unit": unit, "max_groups_contributed": 2, "max_rows_per_group": 3}
        sql += f", privacy_unit_column := '{unit}', max_groups_contributed := 2, max_rows_per_group := 3"
    if public:
        kwargs["public_groups"] = pl.DataFrame({group: GROUPS[group]}, schema={group: visits.schema[group]})
        sql += f", public_groups := {GROUPS[group]}"
    else:
        kwargs["delta"] = 1e-5
        sql += ", delta := 1e-5"
    want = ppdm.dp_group_by(visits, group, make(), **kwargs)
    got = con.sql(f"SELECT * FROM {macro}('visits', '{group}'{value}{sql})").pl()
    assert want.height > 0
    assert got.equals(want if public else want.sort(group)), (got, want)


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        (
            "'visits', 'nowhere', epsilon := 1.0, public_groups := ['a']",
            "group column nowhere is not a column",
        ),
        ("'visits', 'spend', epsilon := 1.0, public_groups := [1.0]", "a float is no group key"),
        (
            "'visits', 'region', epsilon := 0, public_groups := ['a']",
            "'epsilon' argument of ppdm_dp_count must be a finite float > 0",
        ),
        ("'visits', 'region', epsilon := 1.0", "'delta' argument of ppdm_dp_count must be in \\(0, 1\\)"),
        ("'visits', 'region', epsilon := 1.0, delta := 1.5", "must be in \\(0, 1\\)"),
        ("'visits', 'region', epsilon := 1.0, delta := 1e-6, public_groups := ['a']", "leave it out"),
        (
            "'visits', 'region', epsilon := 1.0, public_groups := ['a'], privacy_unit_column := 'person', max_groups_contributed := 0",
            "must be integers >= 1",
        ),
        (
            "'visits', 'region', epsilon := 1.0, public_groups := ['a'], privacy_unit_column := 'person', max_groups_contributed := 2.5",
            "must be integers >= 1. Got 2.5",
        ),
        (
            "'visits', 'region', epsilon := 1.0, public_groups := [1]",
            "'public_groups' argument of ppdm_dp_count holds INTEGER values but the group column region is VARCHAR",
        ),
        (
            "'visits', 'region', epsilon := 1.0, public_groups := ['a'], max_rows_per_group := 2",
            "need privacy_unit_column",
        ),
        (
            "'visits', 'region', epsilon := 1.0, public_groups := ['a'], privacy_unit_column := 'who'",
            "privacy_unit_column who is not a column",
        ),
        (
            "'visits', 'region', epsilon := 1.0, public_groups := ['a'], privacy_unit_column := 'region'",
            "cannot be the group column",
        ),
    ],
)
def test_count_errors_name_the_argument(con, arguments, match):
    with pytest.raises(duckdb.Error, match=match):
        con.sql(f"SELECT * FROM ppdm_dp_count({arguments}, secret := '{SECRET}')").fetchall()


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        (
            "'visits', 'region', 'spend', epsilon := 1.0, public_groups := ['a']",
            "contribution_bounds_per_row' argument of ppdm_dp_avg must be \\[low, high\\]",
        ),
        (
            "'visits', 'region', 'spend', contribution_bounds_per_row := [10, 0], epsilon := 1.0, public_groups := ['a']",
            "low < high",
        ),
        (
            "'visits', 'region', 'email', contribution_bounds_per_row := [0, 1], epsilon := 1.0, public_groups := ['a']",
            "must be numeric",
        ),
        (
            "'visits', 'region', 'nothing', contribution_bounds_per_row := [0, 1], epsilon := 1.0, public_groups := ['a']",
            "value column nothing is not a column",
        ),
    ],
)
def test_avg_errors_name_the_argument(con, arguments, match):
    with pytest.raises(duckdb.Error, match=match):
        con.sql(f"SELECT * FROM ppdm_dp_avg({arguments}, secret := '{SECRET}')").fetchall()


@pytest.mark.parametrize("unit", ["person", "email", None])
@pytest.mark.parametrize("function", ["ppdm_dp_count", "ppdm_dp_sum"])
def test_a_release_without_a_secret_is_refused_by_name(con, function, unit):
    """Not through an internal function the user never called (ppdm_key, ppdm_string_bits)."""
    value = ", 'spend', contribution_bounds_per_row := [0, 10]" if function == "ppdm_dp_sum" else ""
    per_unit = f", privacy_unit_column := '{unit}'" if unit else ""
    query = f"SELECT * FROM {function}('visits', 'region'{value}, epsilon := 1.0{per_unit})"
    with pytest.raises(duckdb.Error, match=rf"^[^:]*: The 'secret' argument of {function} is required \("):
        con.sql(query).fetchall()


def test_nulls_are_refused(con, visits):
    con.register(
        "holes",
        visits.with_columns(
            pl.when(pl.col("zone") == 3).then(None).otherwise("person").alias("person"),
            pl.when(pl.col("zone") == 2).then(float("nan")).otherwise("spend").alias("spend"),
        ),
    )
    with pytest.raises(duckdb.Error, match="privacy_unit_column person of ppdm_dp_count has NULL values"):
        con.sql(
            f"SELECT * FROM ppdm_dp_count('holes', 'region', epsilon := 1.0, privacy_unit_column := 'person', "
            f"public_groups := ['a'], secret := '{SECRET}')"
        ).fetchall()
    with pytest.raises(duckdb.Error, match="holds NULL, NaN or infinite values"):
        con.sql(
            f"SELECT * FROM ppdm_dp_sum('holes', 'region', 'spend', contribution_bounds_per_row := [0, 1], "
            f"epsilon := 1.0, public_groups := ['a'], secret := '{SECRET}')"
        ).fetchall()
