"""DuckDB's ppdm_dp_count_units / ppdm_dp_var_pop / ppdm_dp_stddev_pop / ppdm_dp_percentile_cont:
the same bits, and the same groups, as dp_group_by with dp.count_units / dp.variance / dp.std /
dp.quantile; their arguments refused before any noise, in dp.quantile's words."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pytest
from _helpers import SQL_GROUPS, SQL_SECRET

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.duckdb import group_by as udfs
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import dp_noise

SECRET, GROUPS = SQL_SECRET, SQL_GROUPS
# The aggregate, its macro and the macro's extra arguments.
AGGREGATES = {
    "count_units": (lambda: dp.count_units(), "ppdm_dp_count_units", ""),
    "var_pop": (
        lambda: dp.variance("spend", bounds=(-2, 10)),
        "ppdm_dp_var_pop",
        ", 'spend', contribution_bounds_per_row := [-2, 10]",
    ),
    "stddev_pop": (
        lambda: dp.std("spend", bounds=(0, 12.5)),
        "ppdm_dp_stddev_pop",
        ", 'spend', contribution_bounds_per_row := [0, 12.5]",
    ),
    "median": (
        lambda: dp.quantile("spend", 0.5, bounds=(-5, 12)),
        "ppdm_dp_percentile_cont",
        ", 'spend', 0.5, contribution_bounds_per_row := [-5, 12]",
    ),
    "q0.9 of 35 points": (
        lambda: dp.quantile("spend", 0.9, bounds=(-5, 12), candidates=35),
        "ppdm_dp_percentile_cont",
        ", 'spend', 0.9, contribution_bounds_per_row := [-5, 12], candidates := 35",
    ),
    "q0.25 of a list": (
        lambda: dp.quantile("spend", 0.25, bounds=(-5, 12), candidates=[-1, 0, 0.5, 1.5, 2, 7.25]),
        "ppdm_dp_percentile_cont",
        ", 'spend', 0.25, contribution_bounds_per_row := [-5, 12], candidates := [-1, 0, 0.5, 1.5, 2, 7.25]",
    ),
}


@pytest.fixture(scope="module")
def visits() -> pl.DataFrame:
    rng = np.random.default_rng(2)
    n = 12_000
    return pl.DataFrame(
        {
            "person": rng.integers(0, 2000, n),
            "email": [f"p{i}@example.org" for i in rng.integers(0, 2000, n)],
            "region": rng.choice(["a", "b", "c"], n),
            "zone": rng.integers(0, 5, n),
            "spend": rng.uniform(-5, 12, n),
            "label": rng.choice(["x", "y"], n),
        }
    )


@pytest.fixture(scope="module")
def con(visits) -> duckdb.DuckDBPyConnection:
    connection = ppdm.duckdb.register(duckdb.connect())
    connection.register("visits", visits)
    return connection


def _both(con, frame, name, kind, group, unit, public, **extra):
    """dp_group_by's release and the macro's, over the table ``name`` (= ``frame``)."""
    make, macro, value = AGGREGATES[kind]
    kwargs: dict = {"secret": SECRET, **extra}
    sql = f", secret := '{SECRET}'" + "".join(f", {k} := {v!r}" for k, v in extra.items())
    if "rho" not in extra:
        kwargs["epsilon"] = 1.0
        sql += ", epsilon := 1.0"
    if unit:
        kwargs |= {"privacy_unit": unit, "max_groups_contributed": 2, "max_rows_per_group": 3}
        sql += f", privacy_unit_column := '{unit}', max_groups_contributed := 2, max_rows_per_group := 3"
    if public:
        kwargs["public_groups"] = pl.DataFrame({group: GROUPS[group]}, schema={group: frame.schema[group]})
        sql += f", public_groups := {GROUPS[group]}"
    else:
        kwargs["delta"] = 1e-5
        sql += ", delta := 1e-5"
    want = ppdm.dp_group_by(frame, group, make(), **kwargs)
    got = con.sql(f"SELECT * FROM {macro}('{name}', '{group}'{value}{sql})").pl()
    return got, want


@pytest.mark.parametrize("public", [True, False], ids=["public groups", "partition selection"])
@pytest.mark.parametrize("unit", ["person", "email", None])
@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("kind", list(AGGREGATES))
def test_sql_equals_polars_bit_for_bit(con, visits, kind, group, unit, public):
    got, want = _both(con, visits, "visits", kind, group, unit, public)
    assert want.height > 0
    assert got.equals(want), (got, want)


@pytest.mark.parametrize("kind", list(AGGREGATES))
def test_gaussian_equals_polars_bit_for_bit(con, visits, kind):
    got, want = _both(con, visits, "visits", kind, "zone", "person", True, mechanism="gaussian", rho=0.5)
    assert got.equals(want), (got, want)


@pytest.mark.parametrize("kind", ["median", "var_pop"])
def test_a_value_changed_anywhere_redraws_the_noise(con, visits, kind):
    """One value changed in group 'a' only (each row its own unit: the row is kept): the
    release key changes, so groups 'b' and 'c', whose statistics did not change, get new
    figures; still Polars' bits.  (A median's choice may land on the same candidate
    under new noise: its fresh noise over 200 groups is tested in
    test_dp_quantile_variance; here its bits must follow Polars' and the variance's
    figures must move.)"""
    changed = visits.with_columns(
        pl.when(pl.int_range(pl.len()) == pl.col("region").eq("a").arg_true().first())
        .then(pl.col("spend").clip(-1, 9) + 0.5)  # within every aggregate's bounds: seen
        .otherwise(pl.col("spend"))
        .alias("spend")
    )
    con.register("changed", changed)
    before, _ = _both(con, visits, "visits", kind, "region", None, True)
    after, want = _both(con, changed, "changed", kind, "region", None, True)
    assert after.equals(want)
    column = after.columns[1]
    if kind == "median":
        return
    assert (
        before.filter(pl.col("region").is_in(["b", "c"]))[column].to_list()
        != after.filter(pl.col("region").is_in(["b", "c"]))[column].to_list()
    )


def test_count_units_counts_units_not_rows(con):
    con.register("one", pl.DataFrame({"unit": [7] * 30, "g": ["a", "b", "c"] * 10}))
    out = con.sql(
        f"SELECT * FROM ppdm_dp_count_units('one', 'g', epsilon := 1e9, privacy_unit_column := 'unit', "
        f"max_groups_contributed := 2, max_rows_per_group := 4, public_groups := ['a', 'b', 'c'], secret := '{SECRET}')"
    ).pl()
    assert out.columns == ["g", "units"] and out.schema["units"] == pl.Int64
    assert sorted(out["units"].to_list()) == [0, 1, 1]


QUANTILE = (
    "'visits', 'region', 'spend', {q}, contribution_bounds_per_row := {bounds}, candidates := {candidates}"
)


@pytest.mark.parametrize(
    ("q", "bounds", "candidates", "match", "polars"),
    [
        (
            "1.5",
            "[-5, 12]",
            "1001",
            "'q' argument of ppdm_dp_percentile_cont must be a number in \\[0, 1\\]. Got 1.5",
            {"q": 1.5},
        ),
        ("-0.1", "[-5, 12]", "1001", "must be a number in \\[0, 1\\]", {"q": -0.1}),
        ("NULL", "[-5, 12]", "1001", "must be a number in \\[0, 1\\]. Got NULL", {"q": None}),
        # A list was taken for a DECIMAL (its type DECIMAL(2,1)[] matched 'DECIMAL.*').
        (
            "[0.1, 0.9]",
            "[-5, 12]",
            "1001",
            "must be a number in \\[0, 1\\]. Got \\[0.1, 0.9\\] .*; one q per call",
            None,
        ),
        (
            "'half'",
            "[-5, 12]",
            "1001",
            "must be a number in \\[0, 1\\]. Got half \\(VARCHAR\\)",
            {"q": "half"},
        ),
        (
            "0.5",
            "[12, -5]",
            "1001",
            "ppdm_dp_percentile_cont must be \\[low, high\\], finite, with low < high",
            None,
        ),
        ("0.5", "[12, -5]", "1001", "low < high", {"bounds": (12, -5)}),
        ("0.5", "NULL", "1001", "contribution_bounds_per_row' argument of ppdm_dp_percentile_cont", None),
        (
            "0.5",
            "[-5, 12]",
            "1",
            "'candidates' argument of ppdm_dp_percentile_cont must be between 2 and 100,000 points",
            {"candidates": 1},
        ),
        (
            "0.5",
            "[-5, 12]",
            "200000",
            "must be between 2 and 100,000 points. Got 200000",
            {"candidates": 200000},
        ),
        (
            "0.5",
            "[-5, 12]",
            "11.5",
            "must be a number of points or a sequence of numbers",
            {"candidates": 11.5},
        ),
        (
            "0.5",
            "[-5, 12]",
            "'many'",
            "must be a number of points or a sequence of numbers",
            {"candidates": "many"},
        ),
        ("0.5", "[-5, 12]", "NULL", "must be a number of points or a sequence of numbers. Got NULL", None),
        (
            "0.5",
            "[-5, 12]",
            "[0, 20]",
            "must lie within the bounds \\[-5.0, 12.0\\]. Got 0.0 to 20.0",
            {"candidates": [0, 20]},
        ),
        ("0.5", "[-5, 12]", "[3, 1]", "must be strictly increasing", {"candidates": [3, 1]}),
        ("0.5", "[-5, 12]", "[1, 1]", "must be strictly increasing", {"candidates": [1, 1]}),
        ("0.5", "[-5, 12]", "[]::DOUBLE[]", "must hold 1 to 100,000 values. Got 0", {"candidates": []}),
        (
            "0.5",
            "[-5, 12]",
            "[1, 'nan'::DOUBLE]",
            "must hold finite numbers only",
            {"candidates": [1, float("nan")]},
        ),
    ],
)
def test_percentile_arguments_are_refused_before_any_noise(
    visits, monkeypatch, q, bounds, candidates, match, polars
):
    """The macro's message names its argument and says what dp.quantile says of the same
    value (``polars``: the dp.quantile arguments that differ from the valid ones).  No
    noise is drawn."""
    drawn = []
    real = udfs._release_value_udf

    def spy(secret, spec, digest, word, rows, grid_sum, squares, values):
        drawn.append(1)
        return real(secret, spec, digest, word, rows, grid_sum, squares, values)

    monkeypatch.setattr(udfs, "_release_value_udf", spy)
    con = ppdm.duckdb.register(duckdb.connect())
    con.register("visits", visits)
    arguments = QUANTILE.format(q=q, bounds=bounds, candidates=candidates)
    with pytest.raises(duckdb.Error, match=match):
        con.sql(
            f"SELECT * FROM ppdm_dp_percentile_cont({arguments}, epsilon := 1.0, public_groups := ['a'], "
            f"secret := '{SECRET}')"
        ).fetchall()
    assert drawn == []
    if polars is not None:
        with pytest.raises(InvalidParameterError) as refused:
            dp.quantile("spend", **{"q": 0.5, "bounds": (-5, 12), **polars})
        said = match.split("must ")[-1].split(". Got")[0].split("\\")[0]
        assert said in str(refused.value), (said, str(refused.value))


@pytest.mark.parametrize(
    ("macro", "arguments", "match"),
    [
        (
            "ppdm_dp_var_pop",
            "'spend', contribution_bounds_per_row := [10, 0]",
            "ppdm_dp_var_pop must be \\[low, high\\]",
        ),
        ("ppdm_dp_stddev_pop", "'spend'", "'contribution_bounds_per_row' argument of ppdm_dp_stddev_pop"),
        (
            "ppdm_dp_var_pop",
            "'label', contribution_bounds_per_row := [0, 1]",
            "ppdm_dp_var_pop: the value column label must be numeric",
        ),
        (
            "ppdm_dp_stddev_pop",
            "'nothing', contribution_bounds_per_row := [0, 1]",
            "value column nothing is not a column",
        ),
        (
            "ppdm_dp_count_units",
            "epsilon := NULL",
            "'epsilon' argument of ppdm_dp_count_units must be a finite float > 0",
        ),
        (
            "ppdm_dp_var_pop",
            "'spend', contribution_bounds_per_row := [0, 1], mechanism := 'gaussian', rho := 0",
            "'rho' argument of ppdm_dp_var_pop must be a finite float > 0",
        ),
    ],
)
def test_errors_name_the_macro_and_argument(con, macro, arguments, match):
    epsilon = "" if "epsilon" in arguments or "rho" in arguments else ", epsilon := 1.0"
    with pytest.raises(duckdb.Error, match=match):
        con.sql(
            f"SELECT * FROM {macro}('visits', 'region', {arguments}{epsilon}, public_groups := ['a'], secret := '{SECRET}')"
        ).fetchall()


def test_result_names_cannot_be_the_group_column(con, visits):
    con.register("named", visits.rename({"region": "units"}))
    with pytest.raises(
        duckdb.Error,
        match="'group_col' argument of ppdm_dp_count_units must differ from the name of the result's column units",
    ):
        con.sql(
            f"SELECT * FROM ppdm_dp_count_units('named', 'units', epsilon := 1.0, public_groups := ['a'], secret := '{SECRET}')"
        ).fetchall()


def test_quantile_nulls_are_refused(con, visits):
    con.register(
        "holes",
        visits.with_columns(pl.when(pl.col("zone") == 2).then(None).otherwise("spend").alias("spend")),
    )
    with pytest.raises(
        duckdb.Error, match="ppdm_dp_percentile_cont: the column spend holds NULL, NaN or infinite values"
    ):
        con.sql(
            f"SELECT * FROM ppdm_dp_percentile_cont('holes', 'zone', 'spend', 0.5, contribution_bounds_per_row := [-5, 12], "
            f"epsilon := 1.0, public_groups := [2], secret := '{SECRET}')"
        ).fetchall()


@pytest.mark.parametrize(
    "name", ["units", "out:spend_var", "__sq", "__xs", "__spec", "q", "candidates", "j", "e", "my col"]
)
@pytest.mark.parametrize("kind", ["count_units", "stddev_pop", "q0.25 of a list"])
def test_any_column_names(con, visits, kind, name):
    """The macros' own names (and their result's) never clash with the table's: each
    column read renamed in turn to one of them, still Polars' bits."""
    for column in ("person", "region", "spend"):
        if kind == "count_units" and name == "units" and column == "region":
            continue  # the result's own name: refused (test_result_names_cannot_be_the_group_column)
        frame = visits.select("person", "region", "spend").rename({column: name})
        con.register("hostile", frame)
        make, macro, value = AGGREGATES[kind]
        n = {c: (name if c == column else c) for c in ("person", "region", "spend")}
        aggregate = make()
        if aggregate.column is not None:
            aggregate = getattr(dp, aggregate.kind)(
                n["spend"],
                bounds=aggregate.bounds,
                **(
                    {"q": float(aggregate.q), "candidates": list(aggregate.candidates)}
                    if aggregate.q is not None
                    else {}
                ),
            )
        want = ppdm.dp_group_by(
            frame,
            n["region"],
            aggregate,
            epsilon=1.0,
            privacy_unit=n["person"],
            secret=SECRET,
            public_groups=pl.DataFrame({n["region"]: ["a", "b", "z"]}),
        )
        value = value.replace("'spend'", "'" + n["spend"].replace("'", "''") + "'")
        got = con.sql(
            f"FROM {macro}('hostile', '{n['region']}'{value}, epsilon := 1.0, privacy_unit_column := '{n['person']}', "
            f"public_groups := ['a', 'b', 'z'], secret := '{SECRET}')"
        ).pl()
        assert got.equals(want), (column, got, want)


def test_the_sql_bits_of_units_and_groups_are_ppdm_bits():
    """The macros take the 64-bit pattern of integer units and groups in plain SQL
    (``_ppdm_dp_bits``, no UDF per row): the same words as the UDF, negatives and NULL too."""
    con = ppdm.duckdb.register(duckdb.connect())
    values = [0, 1, -1, 2**63 - 1, -(2**63), 123456789, -987654321, None]
    got = con.execute(
        "SELECT _ppdm_dp_bits(x) = ppdm_bits(x), _ppdm_dp_bits(x) FROM unnest($v::BIGINT[]) t(x)",
        {"v": values},
    ).fetchall()
    assert all(same for same, _ in got), got
    assert got[-1][1] == int(dp_noise.NULL_BITS)


def test_a_unit_with_rows_over_the_limit_in_one_group_only_is_ranked_there():
    """Only the pairs of (unit, group) with more rows than max_rows_per_group are worded and
    ranked; a table where one unit crowds one group and every other pair is light still
    gives Polars' bits."""
    rng = np.random.default_rng(5)
    frame = pl.DataFrame(
        {
            "person": np.concatenate([np.arange(300), np.zeros(40, dtype=np.int64)]),
            "zone": np.concatenate([rng.integers(0, 4, 300), np.full(40, 2)]),
            "spend": rng.uniform(-5, 12, 340),
        }
    )
    con = ppdm.duckdb.register(duckdb.connect())
    con.register("crowded", frame)
    for rows in (1, 2):
        want = ppdm.dp_group_by(
            frame,
            "zone",
            dp.sum("spend", bounds=(0, 10)),
            epsilon=1.0,
            privacy_unit="person",
            max_rows_per_group=rows,
            public_groups=pl.DataFrame({"zone": [0, 1, 2, 3]}),
            secret=SECRET,
        )
        got = con.sql(
            f"FROM ppdm_dp_sum('crowded', 'zone', 'spend', contribution_bounds_per_row := [0, 10], epsilon := 1.0, "
            f"privacy_unit_column := 'person', max_rows_per_group := {rows}, public_groups := [0, 1, 2, 3], "
            f"secret := '{SECRET}')"
        ).pl()
        assert got.equals(want), (rows, got, want)
