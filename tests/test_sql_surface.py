"""The SQL surface speaks the Python vocabulary: every row-wise perturbation, p or epsilon,
the k-ary corrected frequencies and Polars' column names, bit for bit against Polars."""

from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal, assert_series_equal

import polars_ppdm as ppdm
from polars_ppdm.perturb.noise import DISTRIBUTIONS

SECRET = "5e3a9c1d7f2b4e6085a1c3d5e7f90b2d"  # fixed for the tests; not a repeated pattern


@pytest.fixture(scope="module")
def people() -> pl.DataFrame:
    """Numeric, binary and categorical columns with nulls, an integer and a string key."""
    rng = np.random.default_rng(13)
    n = 6000
    a = rng.random(n) < 0.4

    def holes(values, every):
        return [None if i % every == 0 else v for i, v in enumerate(values)]

    return pl.DataFrame(
        {
            "id": rng.permutation(n).astype(np.int64) * 7 - 20_000,
            "email": [f"p{i}@example.org" for i in range(n)],
            "income": holes(rng.lognormal(10, 1, n).tolist(), 17),
            "age": holes(rng.integers(18, 90, n).tolist(), 23),
            "a": holes(a.tolist(), 11),
            "b": (a ^ (rng.random(n) < 0.3)).tolist(),
            "c": holes((rng.random(n) < 0.6).tolist(), 29),
            "smoker": (rng.random(n) < 0.2).astype(np.int64).tolist(),
            "diet": rng.choice(["vegan", "vegetarian", "omnivore"], n, p=[0.2, 0.3, 0.5]).tolist(),
        }
    )


@pytest.fixture
def table(con, people) -> str:
    con.execute(f"CREATE TABLE people AS SELECT *, ppdm_key(email, '{SECRET}') AS email_key FROM people")
    return "people"


def by_id(con, sql: str) -> pl.DataFrame:
    return con.sql(sql).pl().sort("id")


# -- additive noise ---------------------------------------------------------------------


def test_every_python_noise_distribution_has_a_sql_kernel():
    assert set(ppdm.duckdb.scalar._NOISE_KERNELS) == set(DISTRIBUTIONS)


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_add_noise_matches_polars_bit_for_bit(con, table, people, dist):
    sql = by_id(
        con,
        f"SELECT id, ppdm_add_noise(income, 500.0, '{SECRET}', id, 'income', dist := '{dist}') AS income, "
        f"ppdm_add_noise(age, scale := 2.5, secret := '{SECRET}', key := id, stream := 'age', "
        f"dist := '{dist}') AS age FROM people",
    )
    polars = ppdm.add_noise(people, ["income", "age"], dist=dist, scale=[500.0, 2.5], secret=SECRET, key="id")
    assert_frame_equal(sql, polars.select("id", "income", "age").sort("id"))
    assert sql["income"].null_count() == people["income"].null_count() > 0  # nulls stay null
    # The namespace expression with its default stream is the same draw.
    expr = people.select(
        "id", pl.col("income").ppdm.add_noise(dist=dist, scale=500.0, secret=SECRET, key="id")
    )
    assert_series_equal(sql["income"], expr.sort("id")["income"])


def test_add_noise_with_a_string_key_through_ppdm_key(con, table, people):
    sql = by_id(
        con,
        f"SELECT id, ppdm_add_noise(income, 1.0, '{SECRET}', email_key, 'income', 'uniform') AS income "
        "FROM people",
    )
    polars = ppdm.add_noise(people, "income", dist="uniform", scale=1.0, secret=SECRET, key="email")
    assert_series_equal(sql["income"], polars.sort("id")["income"])


def test_add_noise_default_is_gaussian_and_null_keys_are_fine_where_values_are_null(con):
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1.0, 1), (NULL, NULL), (3.0, 3)) v(x, id)")
    out = con.execute("SELECT ppdm_add_noise(x, 1.0, '1', id, 'x') FROM t").fetchall()
    frame = pl.DataFrame({"x": [1.0, None, 3.0], "id": [1, None, 3]})
    expected = ppdm.add_noise(frame, "x", scale=1.0, secret=1, key="id")["x"].to_list()
    assert [r[0] for r in out] == expected and expected[1] is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "ppdm_add_noise(x, 1.0, '1', id, 's', dist := 'cauchy')",
            r"'dist' parameter of ppdm_add_noise .*'cauchy'",
        ),
        (
            "ppdm_add_noise(x, 0.0, '1', id, 's')",
            r"'scale' parameter of ppdm_add_noise must be a finite float > 0",
        ),
        ("ppdm_add_noise(x, 'inf'::DOUBLE, '1', id, 's')", r"'scale' parameter of ppdm_add_noise"),
        ("ppdm_add_noise(x, NULL, '1', id, 's')", r"'scale' argument of ppdm_add_noise .* Got NULL"),
        ("ppdm_add_noise(x, 1.0, NULL, id, 's')", r"'secret' argument of ppdm_add_noise .* Got NULL"),
        ("ppdm_add_noise(x, 1.0, '1', NULL, 's')", r"'key' argument of ppdm_add_noise .* Got NULL"),
        ("ppdm_add_noise(x, 1.0, '1', id, NULL)", r"'stream' argument of ppdm_add_noise"),
        (
            "ppdm_add_noise(bad, 1.0, '1', id, 's')",
            r"The column 's' \(the 'x' argument\) of ppdm_add_noise must hold finite numbers",
        ),
    ],
)
def test_add_noise_refuses_bad_input(con, call, message):
    con.execute(
        "CREATE TABLE t AS SELECT i AS id, i * 1.5 AS x, if(i = 3, 'nan'::DOUBLE, i) AS bad FROM range(9) r(i)"
    )
    with pytest.raises(duckdb.InvalidInputException, match=message):
        con.execute(f"SELECT {call} FROM t").fetchall()


def test_add_noise_needs_its_stream(con):
    """No default stream: two columns noised on one stream would share their noise (x - y leaks)."""
    with pytest.raises(
        duckdb.InvalidInputException,
        match=r"'stream' argument of ppdm_add_noise is required.*stream := '<column name>'",
    ):
        con.execute("SELECT ppdm_add_noise(1.0, 1.0, '1', 1)").fetchall()


@pytest.mark.parametrize(
    "call",
    [
        "ppdm_rr_disguise({c}, 0.7, '{s}', id)",
        "ppdm_rr_disguise({c}, epsilon := 0.9, secret := '{s}', key := id)",
        "ppdm_rr_disguise_k({c}::VARCHAR, ['true', 'false'], 0.7, '{s}', id)",
    ],
)
def test_two_columns_never_share_coins_by_default(con, call):
    """Issue 14 finding 2: with the default stream ('' then) the flips of two columns disguised
    in one query with the same secret and key were identical (correlation 1.000).  The stream
    is now required, with an error that says what to pass."""
    n = 4000
    con.execute(f"CREATE TABLE two AS SELECT i AS id, true AS a, true AS b FROM range({n}) r(i)")
    query = f"SELECT {call.format(c='a', s=SECRET)} AS a, {call.format(c='b', s=SECRET)} AS b FROM two"
    with pytest.raises(
        duckdb.InvalidInputException,
        match=r"'stream' argument of ppdm_rr_disguise(_k)? is required.*same coins.*stream := '<column name>'",
    ):
        con.execute(query).fetchall()


def test_columns_on_their_own_streams_flip_independently(con):
    """With stream := the column's name (Polars' default) the flips of a and b are independent:
    their correlation is within 5 standard errors (1/sqrt(n)) of 0."""
    n = 20_000
    con.execute(f"CREATE TABLE two AS SELECT i AS id, true AS a, true AS b FROM range({n}) r(i)")
    flips = con.execute(
        f"SELECT NOT ppdm_rr_disguise(a, 0.7, '{SECRET}', id, 'a') AS fa, "
        f"NOT ppdm_rr_disguise(b, 0.7, '{SECRET}', id, 'b') AS fb FROM two"
    ).fetchnumpy()
    r = np.corrcoef(flips["fa"].astype(float), flips["fb"].astype(float))[0, 1]
    assert abs(r) < 5 / np.sqrt(n)
    assert abs(flips["fa"].mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / n)


def test_a_secret_is_never_shown_in_an_error(con):
    con.execute("CREATE TABLE t AS SELECT i AS id, 1.0 AS x, (i * 1000003)::VARCHAR AS s FROM range(9) r(i)")
    with pytest.raises(duckdb.InvalidInputException, match="'secret' argument") as err:
        con.execute("SELECT ppdm_add_noise(x, 1.0, s, id, 's') FROM t").fetchall()
    assert "1000003" not in str(err.value) and "(not shown)" in str(err.value)


# -- whole-record randomized response ---------------------------------------------------


def whole_record_sql(p_arg: str, key: str = "id") -> str:
    group = "['a', 'b', 'c']"
    return (
        f"SELECT id, ppdm_rr_disguise_whole_record(a, {group}, {p_arg}, secret := '{SECRET}', key := {key}, record := [a, b, c]) AS a, "
        f"ppdm_rr_disguise_whole_record(b, {group}, {p_arg}, secret := '{SECRET}', key := {key}, record := [a, b, c]) AS b, "
        f"ppdm_rr_disguise_whole_record(c, {group}, {p_arg}, secret := '{SECRET}', key := {key}, record := [a, b, c]) AS c FROM people"
    )


@pytest.mark.parametrize(
    ("p_arg", "kwargs"), [("p := 0.7", {"p": 0.7}), ("epsilon := 0.9", {"epsilon": 0.9})]
)
def test_whole_record_matches_polars_bit_for_bit(con, table, people, p_arg, kwargs):
    sql = by_id(con, whole_record_sql(p_arg))
    polars = ppdm.rr_disguise(people, ["a", "b", "c"], mode="whole_record", secret=SECRET, key="id", **kwargs)
    assert_frame_equal(sql, polars.select("id", "a", "b", "c").sort("id"))
    assert sql["a"].null_count() == people["a"].null_count() > 0


def test_whole_record_positional_and_string_keys(con, table, people):
    positional = by_id(
        con,
        f"SELECT id, ppdm_rr_disguise_whole_record(a, ['a', 'b', 'c'], 0.7, '{SECRET}', email_key, record := [a, b, c]) AS a, "
        f"ppdm_rr_disguise_whole_record(b, ['a', 'b', 'c'], 0.7, '{SECRET}', email_key, record := [a, b, c]) AS b FROM people",
    )
    polars = ppdm.rr_disguise(people, ["a", "b", "c"], p=0.7, mode="whole_record", secret=SECRET, key="email")
    assert_frame_equal(positional, polars.select("id", "a", "b").sort("id"))


def test_whole_record_flips_the_columns_of_a_row_together(con, table, people):
    """One coin per row: a and b are both kept or both negated, never one of them."""
    sql = by_id(con, whole_record_sql("p := 0.6"))
    truth = people.sort("id")
    flipped_a = (sql["a"] != truth["a"]).to_numpy()
    flipped_b = (sql["b"] != truth["b"]).to_numpy()
    rows = truth["a"].is_not_null().to_numpy()
    assert (flipped_a[rows] == flipped_b[rows]).all() and 0 < flipped_b.mean() < 1


def test_whole_record_on_0_1_integers_through_boolean(con, people):
    frame = people.select("id", pl.col("a").cast(pl.Int64), pl.col("b").cast(pl.Int64))
    con.execute("CREATE TABLE ints AS SELECT * FROM frame")
    sql = by_id(
        con,
        "SELECT id, "
        + ", ".join(
            f"ppdm_rr_disguise_whole_record({c}::BOOLEAN, ['a', 'b'], 0.8, '{SECRET}', id, record := [a::BOOLEAN, b::BOOLEAN])::BIGINT AS {c}"
            for c in ("a", "b")
        )
        + " FROM ints",
    )
    polars = ppdm.rr_disguise(frame, ["a", "b"], p=0.8, mode="whole_record", secret=SECRET, key="id")
    assert_frame_equal(sql, polars.sort("id"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            "[]::VARCHAR[], 0.8, '1', id",
            r"'columns' argument of ppdm_rr_disguise_whole_record must be a non-empty",
        ),
        ("['x', 'x'], 0.8, '1', id", r"'columns' argument .* distinct column names"),
        ("['x'], secret := '1', key := id", r"exactly one of 'p' and 'epsilon'"),
        ("['x'], 0.8, '1', id, epsilon := 1.0", r"exactly one of 'p' and 'epsilon'"),
        ("['x'], 0.5, '1', id", r"'p' parameter of ppdm_rr_disguise_whole_record .*other than 1/k"),
        ("['x'], epsilon := -1.0, secret := '1', key := id", r"'epsilon' parameter .* > 0"),
        ("['x'], 0.8, key := id", r"'secret' argument of ppdm_rr_disguise_whole_record .* Got NULL"),
        ("['x'], 0.8, '1'", r"'key' argument of ppdm_rr_disguise_whole_record .* Got NULL"),
    ],
)
def test_whole_record_refuses_bad_input(con, args, message):
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 2 = 0 AS x FROM range(9) r(i)")
    with pytest.raises(duckdb.InvalidInputException, match=message):
        con.execute(f"SELECT ppdm_rr_disguise_whole_record(x, {args}) FROM t").fetchall()


# -- p or epsilon in the per-attribute UDFs ----------------------------------------------


@pytest.mark.parametrize("epsilon", [0.3, math.log(3), 2.0])
def test_epsilon_gives_python_p_bit_for_bit(con, table, people, epsilon):
    sql = by_id(
        con,
        f"SELECT id, ppdm_rr_disguise(smoker::BOOLEAN, epsilon := {epsilon!r}, secret := '{SECRET}', key := id, "
        f"stream := 'smoker')::BIGINT AS smoker, "
        f"ppdm_rr_disguise_k(diet, ['vegan', 'vegetarian', 'omnivore'], secret := '{SECRET}', key := email_key, "
        f"stream := 'diet', epsilon := {epsilon!r}) AS diet FROM people",
    )
    polars = ppdm.rr_disguise(
        people,
        ["smoker", "diet"],
        epsilon=epsilon,
        secret=SECRET,
        key="id",
        categories={"smoker": None, "diet": ["vegan", "vegetarian", "omnivore"]},
    )
    assert_series_equal(sql["smoker"], polars.sort("id")["smoker"])
    by_email = ppdm.rr_disguise(
        people,
        "diet",
        epsilon=epsilon,
        secret=SECRET,
        key="email",
        categories=["vegan", "vegetarian", "omnivore"],
    )
    assert_series_equal(sql["diet"], by_email.sort("id")["diet"])
    # epsilon := e is p := ppdm_rr_p_from_epsilon(e, k) is Python's rr_p_from_epsilon(e, k).
    via_p = by_id(
        con,
        f"SELECT id, ppdm_rr_disguise(smoker::BOOLEAN, ppdm_rr_p_from_epsilon({epsilon!r}), '{SECRET}', id, "
        "'smoker')::BIGINT AS smoker FROM people",
    )
    assert_series_equal(via_p["smoker"], sql["smoker"])
    for k in (2, 3):
        sql_p = con.execute(f"SELECT ppdm_rr_p_from_epsilon({epsilon!r}, k := {k})").fetchone()[0]
        assert sql_p == ppdm.rr_p_from_epsilon(epsilon, k)


def test_positional_calls_still_work(con, table, people):
    sql = by_id(
        con,
        f"SELECT id, ppdm_rr_disguise(smoker::BOOLEAN, 0.8, '{SECRET}', id, 'smoker')::BIGINT AS smoker, "
        f"ppdm_rr_disguise_k(diet, ['vegan', 'vegetarian', 'omnivore'], 0.6, '{SECRET}', email_key, 'diet') AS diet "
        "FROM people",
    )
    assert_series_equal(
        sql["smoker"], ppdm.rr_disguise(people, "smoker", p=0.8, secret=SECRET, key="id").sort("id")["smoker"]
    )
    diet = ppdm.rr_disguise(
        people, "diet", p=0.6, secret=SECRET, key="email", categories=["vegan", "vegetarian", "omnivore"]
    )
    assert_series_equal(sql["diet"], diet.sort("id")["diet"])


@pytest.mark.parametrize(
    "call",
    [
        "ppdm_rr_disguise(x, secret := '1', key := id, stream := 'x')",
        "ppdm_rr_disguise(x, 0.8, '1', id, 'x', epsilon := 1.0)",
        "ppdm_rr_disguise_k(c, ['a', 'b'], secret := '1', key := id, stream := 'c')",
        "ppdm_rr_disguise_k(c, ['a', 'b'], p := 0.8, epsilon := 1.0, secret := '1', key := id, stream := 'c')",
    ],
)
def test_exactly_one_of_p_and_epsilon(con, call):
    con.execute(
        "CREATE TABLE t AS SELECT i AS id, i % 2 = 0 AS x, ['a', 'b'][i % 2 + 1] AS c FROM range(5) r(i)"
    )
    with pytest.raises(duckdb.InvalidInputException, match=r"needs exactly one of 'p' and 'epsilon'"):
        con.execute(f"SELECT {call} FROM t").fetchall()


def test_epsilon_must_be_positive(con):
    with pytest.raises(duckdb.InvalidInputException, match=r"'epsilon' parameter of ppdm_rr_disguise .* > 0"):
        con.execute(
            "SELECT ppdm_rr_disguise(true, epsilon := 0.0, secret := '1', key := 1, stream := 'x')"
        ).fetchall()


# -- k-ary corrected frequencies ---------------------------------------------------------

CATS = ["vegan", "vegetarian", "omnivore", "pescatarian"]  # one category no row has


@pytest.fixture
def disguised_diet(con, people) -> pl.DataFrame:
    out = ppdm.rr_disguise(people, "diet", p=0.7, secret=SECRET, key="id", categories=CATS)
    con.execute("CREATE TABLE d AS SELECT * FROM out")
    return out


@pytest.mark.parametrize(
    ("arg", "kwargs"), [("p := 0.7", {"p": 0.7}), ("0.7", {"p": 0.7}), ("epsilon := 1.2", {"epsilon": 1.2})]
)
def test_rr_support_k_matches_python(con, disguised_diet, arg, kwargs):
    sql = con.sql(f"FROM ppdm_rr_support_k('d', 'diet', {CATS!r}, {arg})").pl()
    py = ppdm.rr_support(disguised_diet, "diet", categories=CATS, **kwargs)
    assert sql.columns == py.columns == ["diet", "observed", "frequency", "std_error"]
    assert sql["diet"].to_list() == py["diet"].to_list() == CATS
    assert sql["observed"].to_list() == py["observed"].to_list()
    # The same linear formula summed in another order: the two differ by a few ulps times
    # the largest inverse entry |1/a| (< 10 here), far below 1e-12.
    for c in ("frequency", "std_error"):
        np.testing.assert_allclose(sql[c].to_numpy(), py[c].to_numpy(), rtol=0, atol=1e-12)


def test_rr_support_k_recovers_the_true_shares(con, people, disguised_diet):
    """Statistical: each estimate within 5 standard errors of the true share in this table."""
    sql = con.sql(f"FROM ppdm_rr_support_k('d', 'diet', {CATS!r}, p := 0.7)").pl()
    truth = people["diet"].value_counts(normalize=True)
    share = dict(zip(truth["diet"], truth["proportion"], strict=True))
    for row in sql.iter_rows(named=True):
        assert abs(row["frequency"] - share.get(row["diet"], 0.0)) <= 5 * row["std_error"], row


def test_rr_support_k_integer_categories_and_empty_table(con):
    frame = pl.DataFrame({"grade": [1, 2, 2, 3, 3, 3, 1, 2]})
    con.execute("CREATE TABLE g AS SELECT * FROM frame")
    sql = con.sql("FROM ppdm_rr_support_k('g', 'grade', [1, 2, 3], p := 0.8)").pl()
    py = ppdm.rr_support(frame, "grade", p=0.8, categories=[1, 2, 3])
    assert sql["grade"].to_list() == [1, 2, 3]
    np.testing.assert_allclose(sql["frequency"].to_numpy(), py["frequency"].to_numpy(), rtol=0, atol=1e-12)
    con.execute("CREATE TABLE e (grade BIGINT)")
    empty = con.sql("FROM ppdm_rr_support_k('e', 'grade', [1, 2, 3], p := 0.8)").pl()
    assert empty.height == 0 and empty.columns == ["grade", "observed", "frequency", "std_error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("['a', 'b', 'c'], p := 0.7", r"holds values outside its 'categories' \[a, b, c\]; list every value"),
        ("['a', 'b', 'c', 'd']", r"needs exactly one of 'p' and 'epsilon'. Got p=NULL, epsilon=NULL"),
        ("['a', 'b', 'c', 'd'], p := 0.7, epsilon := 1", r"needs exactly one of 'p' and 'epsilon'"),
        ("['a', 'b', 'c', 'd'], p := 0.25", r"'p' argument of ppdm_rr_support_k .* other than 1/k = 0.25"),
        (
            "['a', 'b', 'c', 'd'], p := 1.5",
            r"'p' argument of ppdm_rr_support_k must be a float in \[0, 1\]. Got 1.5",
        ),
        (
            "['a', 'b', 'c', 'd'], epsilon := 'nan'::DOUBLE",
            r"'epsilon' argument of ppdm_rr_support_k .* > 0. Got nan",
        ),
        (
            "['a', 'a', 'c', 'd'], p := 0.7",
            r"'categories' argument of ppdm_rr_support_k .* Got \[a, a, c, d\]",
        ),
        ("['a', NULL, 'c', 'd'], p := 0.7", r"'categories' argument .* Got \[a, NULL, c, d\]"),
        ("['a'], p := 0.7", r"'categories' argument .* k >= 2"),
    ],
)
def test_rr_support_k_refuses_bad_input(con, args, message):
    con.execute("CREATE TABLE t AS SELECT ['a', 'b', 'c', 'd'][i % 4 + 1] AS x FROM range(20) r(i)")
    with pytest.raises(duckdb.InvalidInputException, match=message):
        con.execute(f"FROM ppdm_rr_support_k('t', 'x', {args})").fetchall()


def test_rr_support_k_refuses_nulls(con):
    con.execute("CREATE TABLE t AS SELECT if(i = 2, NULL, ['a', 'b'][i % 2 + 1]) AS x FROM range(6) r(i)")
    with pytest.raises(
        duckdb.InvalidInputException, match="The column x of ppdm_rr_support_k has null values"
    ):
        con.execute("FROM ppdm_rr_support_k('t', 'x', ['a', 'b'], p := 0.8)").fetchall()


# -- Polars' column names ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["age", "bin", "count", "my age"])
def test_dp_histogram_has_the_polars_columns(con, name):
    rng = np.random.default_rng(4)
    df = pl.DataFrame({name: rng.normal(45, 15, 3000), "other": 1})
    con.execute("CREATE TABLE h AS SELECT * FROM df")
    sql = con.sql(f"FROM ppdm_dp_histogram('h', '{name}', 0, 100, 9, 0.4, '{SECRET}')").pl()
    py = ppdm.dp_histogram(df, name, bounds=(0, 100), bins=9, epsilon=0.4, secret=SECRET)
    assert sql.columns == [f"{name}_bin", f"{name}_low", f"{name}_high", "count"]
    assert_frame_equal(sql, py)


# -- p or epsilon in the binary corrections ----------------------------------------------


def test_binary_corrections_take_epsilon_like_python(con, people):
    eps = [1.5, 0.8, 2.2]
    frame = people.select("a", "b", "c").drop_nulls()
    per_attribute = ppdm.rr_disguise(frame, ["a", "b", "c"], epsilon=eps, secret=SECRET)
    whole = ppdm.rr_disguise(frame, ["a", "b", "c"], epsilon=1.1, mode="whole_record", secret=SECRET)
    for name, data in (("pa", per_attribute), ("wr", whole)):
        con.register(f"{name}_rows", data)
        con.execute(
            f"CREATE TABLE {name} AS SELECT concat(a::INT, b::INT, c::INT) AS pattern, count(*) AS n "
            f"FROM {name}_rows GROUP BY ALL"
        )
    sql = con.sql(f"FROM ppdm_rr_support_patterns(pa, epsilon := {eps})").pl()
    py = ppdm.rr_support(per_attribute, ["a", "b", "c"], epsilon=eps)
    for c in ("frequency", "std_error"):  # the Kronecker inverse summed in another order
        np.testing.assert_allclose(sql[c].to_numpy(), py[c].to_numpy(), rtol=0, atol=1e-12)
    sql = con.sql("FROM ppdm_rr_support_whole_record(wr, epsilon := 1.1)").pl()
    py = ppdm.rr_support(whole, ["a", "b", "c"], epsilon=1.1, mode="whole_record")
    for c in ("frequency", "std_error"):
        np.testing.assert_allclose(sql[c].to_numpy(), py[c].to_numpy(), rtol=0, atol=1e-12)
    share = per_attribute["a"].mean()
    by_eps, by_p = con.execute(
        f"SELECT ppdm_rr_correct_share({share!r}, epsilon := 1.5), "
        f"ppdm_rr_correct_share({share!r}, {ppdm.rr_p_from_epsilon(1.5)!r})"
    ).fetchone()
    assert by_eps == by_p
    assert by_eps == pytest.approx(
        py_share := ppdm.rr_support(per_attribute, "a", epsilon=1.5)["frequency"][1]
    )
    assert 0 < py_share < 1


# -- one naming of streams, the user's column in errors, 'file:PATH' secrets (issue 27) ---


def test_every_perturbation_takes_the_column_name_and_gives_the_polars_bits(con, table, people):
    """Each SQL perturbation, given the column's name as its stream, draws what the Polars
    function draws on that column with the same secret and key: ppdm_add_noise(...,
    stream := 'income') was another draw than add_noise on income (whose stream is
    'income'), so SQL users had to know the library's internal stream names."""
    sql = by_id(
        con,
        f"""SELECT id,
            ppdm_rr_disguise(a, 0.7, '{SECRET}', id, 'a') AS a,
            ppdm_rr_disguise_k(diet, ['vegan', 'vegetarian', 'omnivore'], 0.6, '{SECRET}', id, 'diet') AS diet,
            ppdm_add_noise(income, 500.0, '{SECRET}', id, 'income') AS income,
            ppdm_add_noise(age, 2.5, '{SECRET}', id, stream := 'age', dist := 'uniform') AS age
        FROM people""",
    )
    polars = people.lazy().select(
        "id",
        pl.col("a").ppdm.rr_disguise(p=0.7, secret=SECRET, key="id"),
        pl.col("diet").ppdm.rr_disguise(
            p=0.6, secret=SECRET, key="id", categories=["vegan", "vegetarian", "omnivore"]
        ),
        pl.col("income").ppdm.add_noise(scale=500.0, secret=SECRET, key="id"),
        pl.col("age").ppdm.add_noise(dist="uniform", scale=2.5, secret=SECRET, key="id"),
    )
    assert_frame_equal(sql, polars.collect().sort("id"))
    whole = by_id(con, whole_record_sql("0.7"))
    want = ppdm.rr_disguise(people, ["a", "b", "c"], p=0.7, mode="whole_record", secret=SECRET, key="id")
    assert_frame_equal(whole, want.select("id", "a", "b", "c").sort("id"))
    ecdf = con.sql(f"FROM ppdm_ecdf_resample('people', 'income', 'id', 50, '{SECRET}') ORDER BY id").pl()
    want = ppdm.ecdf_resample(people, "income", bins=50, secret=SECRET, key="id").sort("id")
    assert_series_equal(ecdf["income"], want["income"])


def test_the_full_noise_stream_of_before_is_refused_by_name(con, table):
    """'add_noise/income' was the documented form: now it would be the stream of a column
    named so, silently other noise than the runs before (which averaged together would
    undo it); it is refused, saying what to pass."""
    with pytest.raises(
        duckdb.InvalidInputException,
        match=r"The 'stream' argument of ppdm_add_noise must be the column's name \(the library makes the stream "
        r"'add_noise/<name>' from it, as Polars does\)\. Got 'add_noise/income' instead; pass 'income'\.",
    ):
        con.execute(
            f"SELECT ppdm_add_noise(income, 1.0, '{SECRET}', id, 'add_noise/income') FROM people"
        ).fetchall()


@pytest.mark.parametrize(
    ("column", "kind"), [("diet", "VARCHAR"), ("smoker", "BIGINT"), ("income", "DOUBLE")]
)
def test_binary_rr_on_another_type_says_what_to_use(con, table, column, kind):
    """A text column gave DuckDB's binder error naming the internal _ppdm_rr_binary."""
    with pytest.raises(duckdb.InvalidInputException) as info:
        con.execute(
            f"SELECT ppdm_rr_disguise({column}, 0.8, '{SECRET}', id, '{column}') FROM people"
        ).fetchall()
    message = str(info.value)
    assert "_ppdm_rr_binary" not in message and "LINE 1" not in message
    assert re.search(
        rf"The 'x' argument of ppdm_rr_disguise must be BOOLEAN \(binary randomized response; 0/1 integers as "
        rf"x::BOOLEAN\)\. Got {kind} \(the column '{column}'\) instead; for categories use ppdm_rr_disguise_k\(x, "
        r"categories, \.\.\.\) with the column's public categories\.",
        message,
    ), message


@pytest.mark.parametrize(
    ("func", "call"),
    [
        ("ppdm_rr_disguise", "ppdm_rr_disguise(smoker::BOOLEAN, 0.8, '{s}', {key}, 'smoker')"),
        (
            "ppdm_rr_disguise_k",
            "ppdm_rr_disguise_k(diet, ['vegan', 'vegetarian', 'omnivore'], 0.8, '{s}', {key}, 'diet')",
        ),
        (
            "ppdm_rr_disguise_whole_record",
            "ppdm_rr_disguise_whole_record(a, ['a'], 0.8, '{s}', {key}, record := [a])",
        ),
        ("ppdm_add_noise", "ppdm_add_noise(income, 1.0, '{s}', {key}, 'income')"),
    ],
)
@pytest.mark.parametrize(
    ("key", "kind"), [("email", "VARCHAR"), ("id::UBIGINT", "UBIGINT"), ("id::DOUBLE", "DOUBLE")]
)
def test_a_key_of_another_type_says_what_to_use(con, table, func, call, key, kind):
    """A text key gave DuckDB's binder error naming the internal UDF and its types."""
    with pytest.raises(duckdb.InvalidInputException) as info:
        con.execute(f"SELECT {call.format(s=SECRET, key=key)} FROM people").fetchall()
    message = str(info.value)
    assert "_ppdm_" not in message and "LINE 1" not in message
    assert (
        f"The 'key' argument of {func} must be an integer column (BIGINT or narrower). Got {kind} instead; for a "
        "text key pass ppdm_key(key, secret), which gives the row keys Polars gives a string key (a number in quotes: write "
        "it without them)." in message
    ), message


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "ppdm_rr_disguise_k(diet, ['vegan', 'omnivore'], 0.8, '{s}', id, 'diet')",
            r"The column 'diet' of ppdm_rr_disguise_k holds values outside its 'categories'",
        ),
        (
            "ppdm_add_noise(if(id % 3 = 0, 'nan'::DOUBLE, income), 1.0, '{s}', id, 'income')",
            r"The column 'income' \(the 'x' argument\) of ppdm_add_noise must hold finite numbers or NULL\. Got NaN "
            r"or infinite values instead",
        ),
        (
            "ppdm_rr_disguise(b, 0.8, '{s}', if(id % 3 = 0, NULL, id), 'b')",
            r"The 'key' argument of ppdm_rr_disguise must be the row-key column \(BIGINT, or ppdm_key\(text, secret\) for a "
            r"text key\), with a key wherever the column 'b' has a value\. Got NULL in such rows instead: fill the key "
            r"or drop those rows first\.",
        ),
        (
            "ppdm_add_noise(income, 1.0, '{s}', NULL, 'income')",
            r"The 'key' argument of ppdm_add_noise .* the column 'income' has a value\. Got NULL in such rows",
        ),
    ],
)
def test_errors_name_the_users_column(con, table, call, message):
    """The errors called every column 'x' (the macro's parameter) and every key 'key'."""
    with pytest.raises(duckdb.InvalidInputException, match=message) as info:
        con.execute(f"SELECT {call.format(s=SECRET)} FROM people").fetchall()
    assert "column 'x'" not in str(info.value) and "key column 'key'" not in str(info.value)


def test_a_secret_file_is_a_secret_argument(con, table, people, tmp_path):
    """'file:PATH' wherever 'env:NAME' is accepted, read by the pipeline's reader (mode 0600
    only, never shown in an error), and followed when a job rotates the file between two
    queries: the secret was cached by the text alone, so the same query kept the old one
    and a file opened to others stayed in use."""
    from polars_ppdm.secret_files import write_secret_text

    path = tmp_path / "ppdm.secret"
    write_secret_text(path, SECRET + "\n")
    query = (
        f"SELECT id, ppdm_rr_disguise(a, 0.7, 'file:{path}', id, 'a') AS a, "
        f"ppdm_add_noise(income, 1.0, 'file:{path}', id, 'income') AS income FROM people"
    )
    hist = f"FROM ppdm_dp_histogram('people', 'smoker', 0, 2, 2, 1.0, 'file:{path}')"
    other = "9b3e71c04a5fd2886e17a3c95b0d4f2e"
    want = {
        s: (by_id(con, query.replace(f"file:{path}", s)), con.sql(hist.replace(f"file:{path}", s)).pl())
        for s in (SECRET, other)
    }
    assert_frame_equal(by_id(con, query), want[SECRET][0])
    assert con.sql(hist).pl().equals(want[SECRET][1])
    write_secret_text(path, other + "\n", overwrite=True)  # rotated between two queries
    assert_frame_equal(by_id(con, query), want[other][0])
    assert con.sql(hist).pl().equals(want[other][1])
    path.chmod(0o644)  # others can read it now: refused, with the fix
    with pytest.raises(duckdb.InvalidInputException, match=r"has mode 0644.*chmod 600") as info:
        con.execute(query).fetchall()
    assert other not in str(info.value) and SECRET not in str(info.value)
    with pytest.raises(duckdb.InvalidInputException, match=r"The secret file '.*nowhere' cannot be read"):
        con.execute(query.replace(str(path), str(tmp_path / "nowhere"))).fetchall()
