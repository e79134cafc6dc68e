"""Attacks on the keys of DP releases: group and unit ids at the edges of their types,
and what a refusal says about them.

* DuckDB's group-by macros took a UBIGINT id at or above 2^63 through ``TRY_CAST(..
  AS BIGINT)``, which made it NULL: every such group drew one and the same noise (the
  released counts' differences were the true ones, exactly), and every such person was
  bounded as one privacy unit.
* A 128-bit group column, or a UInt64 / 128-bit period of ``dp_continual_counts`` past
  Int64, failed in a strict cast whose message quoted the value.
* A histogram whose ``bins / (high - low)`` overflows refused the data when some value
  equalled ``low`` (0 x inf), and released it otherwise.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pytest
from _helpers import SQL_SECRET

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.exceptions import InvalidParameterError

BIG = 2**63


@pytest.fixture(scope="module")
def wide_ids() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    n = 300
    return pl.DataFrame(
        {
            "g": pl.Series(np.uint64(BIG) + rng.integers(0, 3, n).astype(np.uint64), dtype=pl.UInt64),
            "person": pl.Series(np.uint64(BIG) + (np.arange(n) % 200).astype(np.uint64), dtype=pl.UInt64),
            "v": rng.uniform(0, 10, n),
        }
    )


@pytest.mark.parametrize(
    ("macro", "value", "aggregate"),
    [
        ("ppdm_dp_count", "", lambda: dp.count()),
        ("ppdm_dp_sum", ", 'v', contribution_bounds_per_row := [0, 10]", lambda: dp.sum("v", bounds=(0, 10))),
    ],
)
@pytest.mark.parametrize("unit", [None, "person"])
def test_ubigint_ids_past_2_63_are_their_own_groups_and_units_in_sql(wide_ids, macro, value, aggregate, unit):
    con = ppdm.duckdb.register(duckdb.connect())
    con.register("wide", wide_ids)
    groups = [BIG, BIG + 1, BIG + 2]
    sql = f", epsilon := 1.0, secret := '{SQL_SECRET}', public_groups := {[f'{g}::UBIGINT' for g in groups]}"
    sql = sql.replace("'", "").replace(f"secret := {SQL_SECRET}", f"secret := '{SQL_SECRET}'")
    kwargs: dict = {"epsilon": 1.0, "secret": SQL_SECRET}
    if unit:
        sql += f", privacy_unit_column := '{unit}', max_groups_contributed := 1, max_rows_per_group := 1"
        kwargs |= {"privacy_unit": unit, "max_groups_contributed": 1, "max_rows_per_group": 1}
    kwargs["public_groups"] = pl.DataFrame({"g": pl.Series(groups, dtype=pl.UInt64)})
    want = ppdm.dp_group_by(wide_ids, "g", [aggregate()], **kwargs)
    got = con.sql(f"SELECT * FROM {macro}('wide', 'g'{value}{sql})").pl()
    # The same bits as Polars, which keys a UInt64 by its own 64 bits: before, the three
    # groups shared one draw (and with units, the persons were one unit).
    assert got.equals(want), (got, want)


@pytest.mark.parametrize("dtype", [pl.Int128, *([pl.UInt128] if hasattr(pl, "UInt128") else [])])
def test_a_128_bit_group_column_is_refused_by_its_dtype(dtype):
    secret_value = 2**90 + 31337
    frame = pl.DataFrame({"g": pl.Series([1, 1, secret_value], dtype=dtype), "u": [1, 2, 3]})
    groups = pl.DataFrame({"g": pl.Series([1], dtype=dtype)})
    with pytest.raises(InvalidParameterError, match="at most 64 bits") as refused:
        ppdm.dp_group_by(
            frame, "g", [dp.count()], epsilon=1.0, public_groups=groups, secret=ppdm.Secret.for_tests(1)
        )
    assert str(secret_value) not in str(refused.value)
    with pytest.raises(InvalidParameterError, match="at most 64 bits") as refused:
        ppdm.dp_continual_counts(
            frame.with_columns(night=pl.lit(0)),
            "g",
            period="night",
            through=0,
            horizon=4,
            rho=0.5,
            public_groups=groups,
            secret=ppdm.Secret.for_tests(1),
        )
    assert str(secret_value) not in str(refused.value)


@pytest.mark.parametrize(
    ("dtype", "far"), [(pl.UInt64, 2**63 + 12345), (pl.Int128, 2**80 + 777), (pl.Int128, -(2**80))]
)
def test_a_period_past_int64_is_counted_as_out_of_range_not_quoted(dtype, far):
    frame = pl.DataFrame({"g": ["a", "a", "a"], "night": pl.Series([0, 1, far], dtype=dtype), "u": [1, 2, 3]})
    run = lambda: ppdm.dp_continual_counts(  # noqa: E731
        frame,
        "g",
        period="night",
        through=1,
        horizon=4,
        rho=0.5,
        public_groups=pl.DataFrame({"g": ["a"]}),
        privacy_unit="u",
        secret=ppdm.Secret.for_tests(4),
    )
    if far < 0:  # before period 0: refused as any early row is, without the value
        with pytest.raises(InvalidParameterError, match="before period 0") as refused:
            run()
        assert str(far) not in str(refused.value)
    else:  # past the horizon: not counted through period 1, as any later row
        assert run().table.height == 2


def test_a_histogram_grid_that_overflows_is_refused_in_sql_too():
    con = ppdm.duckdb.register(duckdb.connect())
    for data in ([0.5e-308, 3e-309, 7e-309], [0.0, 3e-309, 7e-309]):
        con.register("tiny", pl.DataFrame({"x": data}))
        with pytest.raises(duckdb.Error, match="bins / \\(high - low\\) overflows"):
            con.sql(f"FROM ppdm_dp_histogram('tiny', 'x', 0.0, 1e-308, 10, 1.0, '{SQL_SECRET}')").fetchall()


def test_a_histogram_grid_that_overflows_is_refused_before_the_data():
    # bins / (high - low) = inf: a value equal to low gave 0 x inf = NaN, and the release
    # was refused only for data holding low.
    for data in ([0.5e-308, 3e-309, 7e-309], [0.0, 3e-309, 7e-309]):
        with pytest.raises(InvalidParameterError, match="bins"):
            ppdm.dp_histogram(
                pl.DataFrame({"x": data}),
                "x",
                bins=10,
                bounds=(0.0, 1e-308),
                epsilon=1.0,
                secret=ppdm.Secret.for_tests(2),
            )
