"""The Gaussian mechanism in DuckDB SQL: ``mechanism := 'gaussian', rho := ...`` on
ppdm_dp_histogram / ppdm_dp_count / ppdm_dp_sum / ppdm_dp_avg gives the Polars releases
bit for bit; every argument is checked by name; the Laplace releases keep their bits."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import polars as pl
import pytest
from _helpers import SQL_AGGREGATES, SQL_GROUPS, SQL_SECRET

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.kernels.dp_noise import MAX_GAUSSIAN_SIGMA, MIN_GAUSSIAN_SIGMA, discrete_gaussian
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.kernels.release_key import release_key
from polars_ppdm.secret import Secret

SECRET, AGGREGATES, GROUPS = SQL_SECRET, SQL_AGGREGATES, SQL_GROUPS


@pytest.fixture(scope="module")
def visits() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    n = 8_000
    return pl.DataFrame(
        {
            "person": rng.integers(0, 1500, n),
            "email": [f"p{i}@example.org" for i in rng.integers(0, 1500, n)],
            "region": rng.choice(["a", "b", "c"], n),
            "zone": rng.integers(0, 5, n),
            "spend": rng.uniform(-5, 12, n),
            "age": rng.integers(0, 100, n).astype(np.int32),
            "x": rng.uniform(-1, 11, n),
        }
    )


@pytest.fixture(scope="module")
def con(visits) -> duckdb.DuckDBPyConnection:
    connection = ppdm.duckdb.register(duckdb.connect())
    connection.register("visits", visits)
    return connection


# --- ppdm_dp_histogram ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "low", "high", "bins", "rho"),
    [("x", 0, 10, 20, 0.5), ("age", 0, 100, 7, 0.01), ("x", -1.5, 3, 1, 4.0)],
)
def test_histogram_is_the_polars_release(con, visits, column, low, high, bins, rho):
    want = ppdm.dp_histogram(
        visits, column, bounds=(low, high), bins=bins, mechanism="gaussian", rho=rho, secret=SECRET
    )
    got = con.sql(
        f"FROM ppdm_dp_histogram('visits', '{column}', {low}, {high}, {bins}, mechanism := 'gaussian', "
        f"rho := {rho}, secret := '{SECRET}')"
    ).pl()
    assert got.equals(want), (got, want)
    # Positionally: epsilon (NULL), secret, mechanism, rho.
    positional = con.sql(
        f"FROM ppdm_dp_histogram('visits', '{column}', {low}, {high}, {bins}, NULL, '{SECRET}', 'gaussian', {rho})"
    ).pl()
    assert positional.equals(want)


def test_histogram_gaussian_noise_is_not_the_laplace_noise(con, visits):
    laplace = con.sql(f"FROM ppdm_dp_histogram('visits', 'x', 0, 10, 200, 0.5, '{SECRET}')").pl()
    gaussian = con.sql(
        f"FROM ppdm_dp_histogram('visits', 'x', 0, 10, 200, rho := 0.125, secret := '{SECRET}', mechanism := 'gaussian')"
    ).pl()
    # Scale 2 against sigma 2: the two laws differ, and so do most draws.
    assert (laplace["count"] != gaussian["count"]).mean() > 0.5
    assert laplace.drop("count").equals(gaussian.drop("count"))


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        (
            "mechanism := 'gauss', rho := 0.5",
            r"'mechanism' argument of ppdm_dp_histogram must be one of \['laplace', 'gaussian'\]. Got 'gauss'",
        ),
        ("mechanism := NULL, epsilon := 1.0", r"'mechanism' argument of ppdm_dp_histogram .* Got NULL"),
        (
            "mechanism := 'gaussian'",
            r"'rho' argument of ppdm_dp_histogram must be a finite float > 0 .* Got NULL",
        ),
        ("mechanism := 'gaussian', rho := 'a'", r"'rho' argument of ppdm_dp_histogram .* Got VARCHAR"),
        ("mechanism := 'gaussian', rho := 0", r"'rho' argument of ppdm_dp_histogram .* Got 0 instead"),
        ("mechanism := 'gaussian', rho := 'inf'::DOUBLE", r"'rho' argument of ppdm_dp_histogram .* Got inf"),
        (
            "mechanism := 'gaussian', rho := 0.5, epsilon := 1.0",
            r"ppdm_dp_histogram with mechanism := 'gaussian' takes rho .* and no epsilon",
        ),
        ("epsilon := 1.0, rho := 0.5", r"rho is the budget of mechanism := 'gaussian'.* Got rho 0.5"),
        ("mechanism := 'laplace'", r"'epsilon' argument of ppdm_dp_histogram .* Got NULL"),
        (
            "mechanism := 'gaussian', rho := 1e20",
            r"'rho' argument of ppdm_dp_histogram gives the discrete Gaussian a sigma .* outside \[2\^-7, 2\^50\]",
        ),
        (
            "mechanism := 'gaussian', rho := 1e-40",
            r"'rho' argument of ppdm_dp_histogram gives the discrete Gaussian a sigma",
        ),
    ],
)
def test_histogram_arguments_are_checked_by_name(con, arguments, match):
    with pytest.raises(duckdb.Error, match=match):
        con.sql(
            f"FROM ppdm_dp_histogram('visits', 'x', 0, 10, 5, {arguments}, secret := '{SECRET}')"
        ).fetchall()


def test_a_group_by_macro_names_itself_when_it_refuses_a_guessable_secret(con):
    """New-user trial 59: the message named the Polars function (dp_group_by)."""
    with pytest.raises(
        duckdb.Error, match=r"'secret' argument of ppdm_dp_count/sum/avg/\.\.\. \(this DP macro\)"
    ):
        con.sql(
            "FROM ppdm_dp_count('visits', 'zone', epsilon := 1, public_groups := [0, 1], secret := 42)"
        ).fetchall()


def test_histogram_refuses_a_guessable_secret(con):
    with pytest.raises(duckdb.Error, match="'secret' argument of ppdm_dp_histogram is guessable") as refused:
        con.sql(
            "FROM ppdm_dp_histogram('visits', 'x', 0, 10, 5, mechanism := 'gaussian', rho := 1, secret := '7')"
        ).fetchall()
    # The advice in SQL's words (it gave Python's: secret=None, ppdm.Secret.for_tests(seed)).
    assert "'env:NAME' or 'file:PATH'" in str(refused.value)
    assert "secret=None" not in str(refused.value) and "for_tests" not in str(refused.value)


# --- ppdm_dp_count / ppdm_dp_sum / ppdm_dp_avg ---------------------------------------------


@pytest.mark.parametrize("unit", ["person", "email", None])
@pytest.mark.parametrize("group", sorted(GROUPS))
@pytest.mark.parametrize("kind", sorted(AGGREGATES))
def test_group_by_is_the_polars_release(con, visits, kind, group, unit):
    make, macro, value = AGGREGATES[kind]
    groups = pl.DataFrame({group: GROUPS[group]}, schema={group: visits.schema[group]})
    kwargs: dict = {"mechanism": "gaussian", "rho": 0.3, "secret": SECRET, "public_groups": groups}
    sql = f", mechanism := 'gaussian', rho := 0.3, secret := '{SECRET}', public_groups := {GROUPS[group]}"
    if unit:
        kwargs |= {"privacy_unit": unit, "max_groups_contributed": 3, "max_rows_per_group": 2}
        sql += f", privacy_unit_column := '{unit}', max_groups_contributed := 3, max_rows_per_group := 2"
    want = ppdm.dp_group_by(visits, group, make(), **kwargs)
    got = con.sql(f"SELECT * FROM {macro}('visits', '{group}'{value}{sql})").pl()
    assert got.equals(want), (got, want)


def test_group_by_gaussian_noise_grows_with_the_square_root_of_the_groups(con, visits):
    """L2 sensitivity sqrt(G) * R: G = 4 doubles sigma, which the released figures show
    through the same Polars release (its intervals say the sd)."""
    groups = pl.DataFrame({"zone": list(range(5))}, schema={"zone": visits.schema["zone"]})
    for g in (1, 4):
        sql = (
            f"FROM ppdm_dp_count('visits', 'zone', mechanism := 'gaussian', rho := 0.5, privacy_unit_column := 'person', "
            f"max_groups_contributed := {g}, max_rows_per_group := 3, public_groups := [0, 1, 2, 3, 4], secret := '{SECRET}')"
        )
        want = ppdm.dp_group_by(
            visits,
            "zone",
            dp.count(),
            mechanism="gaussian",
            rho=0.5,
            privacy_unit="person",
            max_groups_contributed=g,
            max_rows_per_group=3,
            public_groups=groups,
            secret=SECRET,
            intervals=True,
        )
        assert con.sql(sql).pl().equals(want.select("zone", "count"))
        assert want["count_sd"][0] == pytest.approx(
            np.sqrt(ppdm.kernels.dp_noise.discrete_gaussian_variance(np.sqrt(g) * 3 / 1.0))
        )


@pytest.mark.parametrize(
    ("macro", "arguments", "match"),
    [
        (
            "ppdm_dp_count",
            "mechanism := 'gauss', rho := 0.5, public_groups := ['a']",
            r"'mechanism' argument of ppdm_dp_count must be one of \['laplace', 'gaussian'\]. Got 'gauss'",
        ),
        (
            "ppdm_dp_count",
            "mechanism := 'gaussian', public_groups := ['a']",
            r"'rho' argument of ppdm_dp_count must be a finite float > 0 .* Got NULL",
        ),
        (
            "ppdm_dp_count",
            "mechanism := 'gaussian', rho := -1, public_groups := ['a']",
            r"'rho' argument of ppdm_dp_count .* Got -1",
        ),
        (
            "ppdm_dp_count",
            "mechanism := 'gaussian', rho := 'x', public_groups := ['a']",
            r"'rho' argument of ppdm_dp_count .* Got x \(VARCHAR\)",
        ),
        (
            "ppdm_dp_count",
            "mechanism := 'gaussian', rho := 0.5, epsilon := 1.0, public_groups := ['a']",
            r"ppdm_dp_count with mechanism := 'gaussian' takes rho .* and no epsilon",
        ),
        (
            "ppdm_dp_count",
            "mechanism := 'gaussian', rho := 0.5, delta := 1e-6",
            r"ppdm_dp_count with mechanism := 'gaussian' needs public_groups",
        ),
        (
            "ppdm_dp_count",
            "mechanism := 'gaussian', rho := 0.5, delta := 1e-6, public_groups := ['a']",
            r"'delta' argument of ppdm_dp_count is for partition selection",
        ),
        (
            "ppdm_dp_count",
            "epsilon := 1.0, rho := 0.5, public_groups := ['a']",
            r"ppdm_dp_count: rho is the budget of mechanism := 'gaussian'.* Got rho 0.5",
        ),
        (
            "ppdm_dp_count",
            "mechanism := 'gaussian', rho := 1e20, public_groups := ['a']",
            r"'rho' argument of ppdm_dp_count gives the discrete Gaussian a sigma outside \[2\^-7, 2\^50\]",
        ),
        (
            "ppdm_dp_sum",
            "'spend', contribution_bounds_per_row := [0, 10], mechanism := 'gaussian', public_groups := ['a']",
            r"'rho' argument of ppdm_dp_sum must be a finite float > 0",
        ),
        (
            "ppdm_dp_avg",
            "'spend', contribution_bounds_per_row := [0, 10], mechanism := 'gaussian', rho := 1e-40, "
            "public_groups := ['a']",
            r"'rho' argument of ppdm_dp_avg gives the discrete Gaussian a sigma outside",
        ),
        (
            "ppdm_dp_avg",
            "'spend', contribution_bounds_per_row := [0, 10], mechanism := 'gaussian', rho := 0.5",
            r"ppdm_dp_avg with mechanism := 'gaussian' needs public_groups",
        ),
    ],
)
def test_group_by_arguments_are_checked_by_name(con, macro, arguments, match):
    with pytest.raises(duckdb.Error, match=match):
        con.sql(f"SELECT * FROM {macro}('visits', 'region', {arguments}, secret := '{SECRET}')").fetchall()


# A count's sigma is 1 / sqrt(2 rho): rho = 1 / (2 sigma^2) at the sampler's ends, exactly
# (they are powers of two); a little past them, refused.
_ENDS = [1 / (2 * MIN_GAUSSIAN_SIGMA**2), 1 / (2 * MAX_GAUSSIAN_SIGMA**2)]


@pytest.mark.parametrize(
    ("rho", "refused"),
    [(_ENDS[0], False), (_ENDS[0] * 1.01, True), (_ENDS[1], False), (_ENDS[1] * 0.99, True)],
)
def test_sql_and_python_refuse_the_same_sigmas(con, visits, rho, refused):
    """The SQL checks hold the kernel's range of sigma (check_gaussian_sigma)."""
    assert all(math.frexp(end)[0] == 0.5 for end in (MIN_GAUSSIAN_SIGMA, MAX_GAUSSIAN_SIGMA))
    groups = pl.DataFrame({"region": ["a", "b"]})
    sql = (
        f"FROM ppdm_dp_count('visits', 'region', mechanism := 'gaussian', rho := {rho!r}, "
        f"public_groups := ['a', 'b'], secret := '{SECRET}')"
    )
    histogram = f"FROM ppdm_dp_histogram('visits', 'x', 0, 10, 3, mechanism := 'gaussian', rho := {rho!r}, secret := '{SECRET}')"

    def python() -> pl.DataFrame:
        return ppdm.dp_group_by(
            visits, "region", dp.count(), mechanism="gaussian", rho=rho, public_groups=groups, secret=SECRET
        )

    def python_histogram() -> pl.DataFrame:
        return ppdm.dp_histogram(
            visits, "x", bounds=(0, 10), bins=3, mechanism="gaussian", rho=rho, secret=SECRET
        )

    if refused:
        for call in (python, python_histogram):
            with pytest.raises(
                ppdm.exceptions.InvalidParameterError, match="sigma must be a finite number in"
            ):
                call()
        for query in (sql, histogram):
            with pytest.raises(duckdb.Error, match="gives the discrete Gaussian a sigma"):
                con.sql(query).fetchall()
    else:
        assert con.sql(sql).pl().equals(python())
        assert con.sql(histogram).pl().equals(python_histogram())


def test_the_sql_states_the_kernels_range_of_sigma():
    """The macros' bounds and messages are the kernel's (a change there must change them)."""
    sql = "".join(
        path.read_text(encoding="utf-8") for path in ppdm.duckdb.sql_files() if path.name.startswith("dp_")
    )
    low, high = repr(MIN_GAUSSIAN_SIGMA), str(int(MAX_GAUSSIAN_SIGMA))
    assert sql.count(f"BETWEEN {low} AND {high}") == 3
    exponents = f"[2^{math.frexp(MIN_GAUSSIAN_SIGMA)[1] - 1}, 2^{math.frexp(MAX_GAUSSIAN_SIGMA)[1] - 1}]"
    assert sql.count(exponents) == 2


# --- the Laplace releases keep their bits --------------------------------------------------


def _fixed_table() -> pl.DataFrame:
    i = np.arange(600)
    return pl.DataFrame(
        {
            "person": (i * 7919) % 97,
            "region": [("a", "b", "c")[k % 3] for k in (i * 31) % 11],
            "spend": ((i * 37) % 101) / 10.0 - 1.0,
            "x": ((i * 53) % 1000) / 100.0,
        }
    )


# Released by the macros before they had a mechanism argument (same secret, same table);
# renewed when the release keys came to name the whole query (bounds, bins, budget, unit).
PINNED = {
    f"FROM ppdm_dp_histogram('fixed', 'x', 0, 10, 6, 0.7, '{SECRET}')": [102, 96, 100, 101, 100, 97],
    "FROM ppdm_dp_count('fixed', 'region', epsilon := 1.0, privacy_unit_column := 'person', "
    "max_groups_contributed := 2, max_rows_per_group := 2, public_groups := ['a', 'b', 'c', 'z'], "
    f"secret := '{SECRET}')": [122, 125, 91, -5],
    "FROM ppdm_dp_sum('fixed', 'region', 'spend', contribution_bounds_per_row := [0, 10], epsilon := 1.0, "
    "privacy_unit_column := 'person', max_groups_contributed := 2, public_groups := ['a', 'b', 'c'], "
    f"secret := '{SECRET}')": [186.56222248077393, 272.50821113586426, 225.31392860412598],
    "FROM ppdm_dp_avg('fixed', 'region', 'spend', contribution_bounds_per_row := [-1, 10], epsilon := 2.0, "
    f"delta := 1e-3, secret := '{SECRET}')": [4.020275102902765, 3.9966672254264903, 4.267531219435615],
}


@pytest.mark.parametrize("sql", list(PINNED), ids=["histogram", "count", "sum", "avg"])
def test_laplace_releases_keep_their_bits(con, sql):
    con.register("fixed", _fixed_table())
    got = con.sql(sql).pl()
    assert got[got.columns[-1]].to_list() == PINNED[sql]
    # ... and say mechanism := 'laplace' by default.
    explicit = con.sql(sql[:-1] + ", mechanism := 'laplace')").pl()
    assert explicit.equals(got)


# --- the noise UDFs ------------------------------------------------------------------------


def test_release_gaussian_is_the_kernel_under_the_release_key(con):
    keys = np.array([0, 1, 5, 2**63 + 7], dtype=np.uint64)
    sigma, digest = 3.7, 123456789
    got = con.sql(
        f"SELECT ppdm_release_gaussian('{SECRET}', 'dp_histogram(x)', {digest}::UBIGINT, 'dp_histogram/x', k, {sigma}) "
        "AS n FROM (SELECT unnest($keys::UBIGINT[]) AS k, generate_subscripts($keys::UBIGINT[], 1) AS i) ORDER BY i",
        params={"keys": [int(k) for k in keys]},
    ).fetchall()
    secret = Secret.from_hex(SECRET).key
    want = discrete_gaussian(
        release_key(secret, "dp_histogram(x)", digest), stream_id("dp_histogram/x"), keys, sigma
    )
    assert [n for (n,) in got] == want.tolist()


def test_discrete_gaussian_udf_is_the_kernel(con):
    got = con.sql(
        f"SELECT ppdm_discrete_gaussian('{SECRET}', 's', i, 2.5) AS n FROM range(50) t(i) ORDER BY i"
    ).fetchall()
    want = discrete_gaussian(Secret.from_hex(SECRET).key, stream_id("s"), np.arange(50, dtype=np.uint64), 2.5)
    assert [n for (n,) in got] == want.tolist()


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        (
            f"SELECT ppdm_discrete_gaussian('{SECRET}', 's', 1, 1e16)",
            r"sigma must be a finite number in \[2\^-7, 2\^50\]",
        ),
        (
            f"SELECT ppdm_discrete_gaussian('{SECRET}', 's', 1, 'nan'::DOUBLE)",
            r"sigma must be a finite number",
        ),
        ("SELECT ppdm_discrete_gaussian('7', 's', 1, 2.0)", "guessable"),
        (
            f"SELECT ppdm_release_gaussian('{SECRET}', 'r', 1::UBIGINT, 's', 1::UBIGINT, 0.001)",
            r"sigma must be a finite number in \[2\^-7, 2\^50\]",
        ),
        (
            f"SELECT ppdm_release_gaussian('{SECRET}', 'r', 1::UBIGINT, 's', 1::UBIGINT, NULL)",
            r"'sigma' argument of r must be one non-null constant",
        ),
    ],
)
def test_noise_udfs_check_sigma_and_secret(con, sql, match):
    with pytest.raises(duckdb.Error, match=match):
        con.sql(sql).fetchall()


# --- hostile names -------------------------------------------------------------------------

# The words the Gaussian path added to the macros: as the table's, the group's and the
# value's names, the release is still Polars'.
NEW_WORDS = [
    "mechanism",
    "rho",
    "gaussian",
    "__rho",
    "__gauss",
    "__sigma",
    "__count_sigma",
    "__scale",
    "__count_scale",
    "__noise",
    "__count_noise",
    "__release",
    "__stream",
    "__count_stream",
    "sigmas",
    "noise_params",
    "drawn",
    "__ppdm_rho",
    "__ppdm_gauss",
]


@pytest.mark.parametrize("word", NEW_WORDS)
def test_new_internal_words_are_any_column_or_table(visits, word):
    con = ppdm.duckdb.register(duckdb.connect())
    others = [w for w in NEW_WORDS if w != word][:3]
    frame = (
        visits.head(500)
        .select(
            pl.col("region").alias(word),
            pl.col("spend").alias(others[0]),
            pl.col("x").alias(others[1]),
            "person",
        )
        .with_columns(pl.lit(1.5).alias(others[2]))
    )
    con.register(word, frame)
    groups = pl.DataFrame({word: ["a", "b", "c"]})
    want = ppdm.dp_group_by(
        frame,
        word,
        dp.mean(others[0], bounds=(0, 10)),
        mechanism="gaussian",
        rho=0.5,
        privacy_unit="person",
        max_groups_contributed=2,
        public_groups=groups,
        secret=SECRET,
    )
    got = con.sql(
        f"FROM ppdm_dp_avg('{word}', '{word}', '{others[0]}', contribution_bounds_per_row := [0, 10], "
        f"mechanism := 'gaussian', rho := 0.5, privacy_unit_column := 'person', max_groups_contributed := 2, "
        f"public_groups := ['a', 'b', 'c'], secret := '{SECRET}')"
    ).pl()
    assert got.equals(want), (got, want)
    hist = ppdm.dp_histogram(
        frame, others[1], bounds=(0, 10), bins=4, mechanism="gaussian", rho=0.5, secret=SECRET
    )
    got = con.sql(
        f"FROM ppdm_dp_histogram('{word}', '{others[1]}', 0, 10, 4, mechanism := 'gaussian', rho := 0.5, "
        f"secret := '{SECRET}')"
    ).pl()
    assert got.equals(hist), (got, hist)
