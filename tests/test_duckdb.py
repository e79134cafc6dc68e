"""DuckDB front-end: UDF errors, the sql/ macros against Python, and plain DuckDB with no Python."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import polars_ppdm as ppdm

SQL = Path(__file__).resolve().parents[1] / "sql"


@pytest.fixture(scope="module")
def disguised() -> pl.DataFrame:
    rng = np.random.default_rng(2)
    n = 5000
    a = rng.random(n) < 0.4
    df = pl.DataFrame({"a": a, "b": a ^ (rng.random(n) < 0.3), "c": rng.random(n) < 0.6})
    return ppdm.rr_disguise(df, ["a", "b", "c"], p=[0.9, 0.8, 0.7], secret=3)


def pattern_counts(con, frame: pl.DataFrame) -> None:
    con.execute("CREATE OR REPLACE TABLE d AS SELECT * FROM frame")
    con.execute(
        "CREATE OR REPLACE TABLE counts AS SELECT concat(a::INT, b::INT, c::INT) AS pattern, count(*) AS n FROM d GROUP BY ALL"
    )


def _macro_names(con) -> set[str]:
    query = "SELECT function_name FROM duckdb_functions() WHERE function_type LIKE '%macro' AND NOT internal"
    return {row[0] for row in con.execute(query).fetchall()}


def test_register_creates_every_macro_of_the_sql_files_on_each_connection_even_in_threads():
    """The sql/ files are parsed once per process and the parsed statements run on every
    connection registered, also from several threads at once."""
    created = {
        name
        for path in SQL.glob("*.sql")
        for name in re.findall(r"CREATE OR REPLACE MACRO (\w+)", path.read_text(encoding="utf-8"))
    }
    assert len(created) >= 24
    got: list[set[str]] = []
    failures: list[BaseException] = []

    def register_and_use() -> None:
        try:
            con = ppdm.duckdb.register(duckdb.connect())
            epsilon = con.execute("SELECT ppdm_rr_epsilon(0.75)").fetchall()[0][0]
            assert epsilon == pytest.approx(ppdm.rr_epsilon(0.75))
            got.append(_macro_names(con))
        except BaseException as error:  # the assertion reaches the main thread
            failures.append(error)

    threads = [threading.Thread(target=register_and_use) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    # (register_scalar_udfs adds macros of its own: ppdm_key, ppdm_rr_disguise, ...)
    assert len(got) == 4 and all(names == got[0] and created <= names for names in got)


def test_the_macros_are_the_same_whatever_the_connections_parser_settings():
    """The sql/ files are parsed once, under DuckDB's defaults, not under the settings of the
    connection that happens to register first (executing their text under
    integer_division put // in place of / in 54 places)."""
    query = "SELECT function_name, macro_definition FROM duckdb_functions() WHERE function_name LIKE '%ppdm%'"
    default = ppdm.duckdb.register(duckdb.connect())
    other = duckdb.connect()
    other.execute("SET integer_division = true")
    ppdm.duckdb.register(other)
    assert sorted(other.execute(query).fetchall()) == sorted(default.execute(query).fetchall())


def test_every_sql_file_has_a_name_header_and_is_packaged():
    files = sorted(SQL.glob("*.sql"))
    assert files and [f.name for f in ppdm.duckdb.sql_files()] == [f.name for f in files]
    for f in files:
        text = f.read_text(encoding="utf-8")
        first = text.splitlines()[:2]
        # The header names the file's public macros: ppdm_<stem>, or a family of them.
        named = first[0].removeprefix("-- name: ").split(", ")
        assert first[0].startswith("-- name: ") and (named == [f"ppdm_{f.stem}"] or len(named) > 1), f
        assert first[1].startswith("-- ")
        defined = re.findall(r"CREATE OR REPLACE MACRO (ppdm_\w+)", text)
        assert defined == named, (f, defined, named)


def test_pattern_macro_matches_python_per_attribute(con, disguised):
    pattern_counts(con, disguised)
    sql = con.sql("SELECT * FROM ppdm_rr_support_patterns(counts, [0.9, 0.8, 0.7])").pl()
    py = ppdm.rr_support(disguised, ["a", "b", "c"], p=[0.9, 0.8, 0.7])
    assert sql["pattern"].to_list() == [f"{i:03b}" for i in range(8)]
    assert sql["observed"].to_list() == py["observed"].to_list()
    assert np.allclose(sql["frequency"].to_numpy(), py["frequency"].to_numpy())
    assert np.allclose(sql["std_error"].to_numpy(), py["std_error"].to_numpy())


def test_whole_record_macro_matches_python(con, disguised):
    pattern_counts(con, disguised)
    sql = con.sql("SELECT * FROM ppdm_rr_support_whole_record(counts, 0.8)").pl()
    py = ppdm.rr_support(disguised, ["a", "b", "c"], p=0.8, mode="whole_record")
    assert np.allclose(sql["frequency"].to_numpy(), py["frequency"].to_numpy())
    assert np.allclose(sql["std_error"].to_numpy(), py["std_error"].to_numpy())


def test_scalar_macros(con):
    eps, p_back, share = con.execute(
        "SELECT ppdm_rr_epsilon(0.8), ppdm_rr_p_from_epsilon(ppdm_rr_epsilon(0.8, k := 3), k := 3), ppdm_rr_correct_share(0.26, 0.8)"
    ).fetchone()
    assert np.isclose(eps, ppdm.rr_epsilon(0.8))
    assert np.isclose(p_back, 0.8)
    assert np.isclose(share, 0.1)
    for bad in ("ppdm_rr_epsilon(1.5)", "ppdm_rr_p_from_epsilon(0)", "ppdm_rr_correct_share(0.3, 0.5)"):
        with pytest.raises(duckdb.InvalidInputException, match="must be"):
            con.execute(f"SELECT {bad}").fetchall()
    con.execute("CREATE TABLE c1 AS SELECT '0' AS pattern, 3 AS n")
    with pytest.raises(
        duckdb.InvalidInputException, match=r"'p' argument of ppdm_rr_support_patterns .* other than 0\.5"
    ):
        con.execute("SELECT * FROM ppdm_rr_support_patterns(c1, [0.5])").fetchall()


def test_udf_errors_name_the_problem(con):
    con.execute(
        "CREATE TABLE t AS SELECT i AS id, i % 2 = 0 AS x, ['a', 'b', 'z'][i % 3 + 1] AS c FROM range(10) r(i)"
    )
    with pytest.raises(duckdb.InvalidInputException, match="other than 1/k"):
        con.execute("SELECT ppdm_rr_disguise(x, 0.5, '1', id, 'x') FROM t").fetchall()
    with pytest.raises(duckdb.InvalidInputException, match=r"'p' parameter of ppdm_rr_disguise .*\[0, 1\]"):
        con.execute("SELECT ppdm_rr_disguise(x, 1.5, '1', id, 'x') FROM t").fetchall()
    with pytest.raises(duckdb.InvalidInputException, match="outside its 'categories'"):
        con.execute("SELECT ppdm_rr_disguise_k(c, ['a', 'b'], 0.8, '1', id, 'c') FROM t").fetchall()
    with pytest.raises(duckdb.InvalidInputException, match=r"'key' argument of ppdm_rr_disguise .* Got NULL"):
        con.execute("SELECT ppdm_rr_disguise(x, 0.8, '1', NULL::BIGINT, 'x') FROM t").fetchall()
    with pytest.raises(
        duckdb.InvalidInputException, match=r"column 'x' has a value\. Got NULL in such rows instead"
    ):
        con.execute("SELECT ppdm_rr_disguise(x, 0.8, '1', if(id = 3, NULL, id), 'x') FROM t").fetchall()
    with pytest.raises(duckdb.InvalidInputException, match="'secret' parameter"):
        con.execute("SELECT ppdm_rr_disguise(x, 0.8, 'not-a-secret', id, 'x') FROM t").fetchall()
    nulls = con.execute("SELECT ppdm_rr_disguise(NULL::BOOLEAN, 0.8, '1', id, 'x') FROM t").fetchall()
    assert nulls == [(None,)] * 10


def duckdb_shell() -> str | None:
    """The duckdb command-line shell: the test extra installs it beside this Python."""
    beside = Path(sys.executable).parent / "duckdb"
    return str(beside) if beside.exists() else shutil.which("duckdb")


@pytest.mark.skipif(duckdb_shell() is None, reason="the duckdb command-line shell is not installed")
def test_sql_macros_run_in_plain_duckdb_without_python(tmp_path):
    script = tmp_path / "check.sql"
    reads = "\n".join(f".read {f}" for f in sorted(SQL.glob("*.sql")))
    script.write_text(
        reads
        + "\nCREATE TABLE c AS SELECT * FROM (VALUES ('00', 30), ('01', 20), ('10', 10), ('11', 40)) t(pattern, n);"
        + "\n.mode csv\nSELECT pattern, round(frequency, 6) AS f FROM ppdm_rr_support_patterns(c, [0.9, 0.8]);"
        + "\nSELECT round(ppdm_rr_epsilon(0.75), 6) AS eps;\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [duckdb_shell(), "-batch", "-init", str(script), "-c", "SELECT 1 AS done"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "00,0.375" in done.stdout and "11,0.541667" in done.stdout and "1.098612" in done.stdout


def test_env_secret_is_read_on_every_call(con, monkeypatch):
    """A job that rotates the secret in its environment gets the new one, not a cached one."""
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 3 = 0 AS x FROM range(3000) r(i)")
    query = "SELECT list(ppdm_rr_disguise(x, 0.7, 'env:PPDM_TEST_ROTATE', id, 'x') ORDER BY id) FROM t"
    frame = con.sql("SELECT * FROM t ORDER BY id").pl()
    for secret in ("11" * 16, "22" * 16):
        monkeypatch.setenv("PPDM_TEST_ROTATE", secret)
        expected = frame.select(pl.col("x").ppdm.rr_disguise(p=0.7, secret=secret, key="id"))["x"].to_list()
        assert con.execute(query).fetchone()[0] == expected
    monkeypatch.delenv("PPDM_TEST_ROTATE")
    with pytest.raises(
        duckdb.InvalidInputException, match="'PPDM_TEST_ROTATE' holding the secret is not set"
    ):
        con.execute(query).fetchall()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT ppdm_uniform(NULL, 's', 1)",
        "SELECT ppdm_prf_word('1', NULL, 1)",
        "SELECT ppdm_discrete_laplace('5a1f3c9e0b7d2a4866c3e1f09b8d7a25', 's', 1, NULL)",
        "SELECT ppdm_uniform('1', 's', NULL)",
    ],
)
def test_keyed_randomness_refuses_nulls(con, sql):
    # A NULL draw would turn into garbage inside the ECDF and histogram macros.
    with pytest.raises(duckdb.InvalidInputException, match=r"non-null|null value"):
        con.execute(sql).fetchall()


def test_ppdm_key_passes_nulls_through(con):
    """The README pattern ppdm_rr_disguise_k(diet, ..., ppdm_key(email, secret)) with a null email and diet."""
    con.execute(
        "CREATE TABLE s AS SELECT * FROM (VALUES ('a@x', 'vegan'), (NULL, NULL), ('b@x', 'omnivore')) t(email, diet)"
    )
    keys = con.execute("SELECT ppdm_key(email, '1') FROM s").fetchall()
    assert keys[1] == (None,) and None not in (keys[0][0], keys[2][0])
    out = con.execute(
        "SELECT ppdm_rr_disguise_k(diet, ['vegan', 'omnivore'], 1.0, '1', ppdm_key(email, '1'), 'diet') FROM s"
    ).fetchall()
    assert out == [("vegan",), (None,), ("omnivore",)]


def test_kary_udf_with_large_arrow_lists(con):
    con.execute("SET arrow_large_buffer_size = true")
    out = con.execute(
        "SELECT ppdm_rr_disguise_k(c, ['a', 'b'], 1.0, '1', i, 'c') FROM (VALUES ('a', 1), ('b', 2)) t(c, i)"
    ).fetchall()
    assert out == [("a",), ("b",)]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "FROM ppdm_dp_histogram('h', 'x', 0, 'nan'::DOUBLE, 5, 0.5, '1')",
            "'low' and 'high' arguments of ppdm_dp_histogram must be finite",
        ),
        (
            "FROM ppdm_dp_histogram('h', 'x', 0, 10, 'nan'::DOUBLE, 0.5, '1')",
            r"'bins' argument .* integer >= 1 \(at most 50,000,000.* Got nan",
        ),
        (
            "FROM ppdm_dp_histogram('h', 'x', 0, 10, 5, 'nan'::DOUBLE, '1')",
            "'epsilon' argument of ppdm_dp_histogram must be a finite float > 0",
        ),
        ("FROM ppdm_dp_histogram('h', 'x', 0, 10, 5, 0.5, NULL)", "'secret' argument"),
        ("FROM ppdm_ecdf_resample('h', 'x', 'id', 3, NULL)", "'secret' argument"),
        ("FROM ppdm_ecdf_resample('h', 'x', 'id', 'inf'::DOUBLE, '1')", "bins must be an integer >= 2"),
        ("FROM ppdm_rr_support_patterns(c, [0.9, NULL])", r"'p' argument .* list of floats in \[0, 1\]"),
        (
            "FROM ppdm_rr_support_patterns(c, epsilon := [1.0, -1.0])",
            r"'epsilon' argument .* Got \[1.0, -1.0\]",
        ),
        (
            "FROM ppdm_rr_support_patterns(c, [0.9, 0.8], epsilon := [1.0, 1.0])",
            "exactly one of 'p' and 'epsilon'",
        ),
        (
            "FROM ppdm_rr_support_patterns(bad_pattern, [0.9, 0.8])",
            r"string of 0 and 1 \(no NULL\); some are not",
        ),
        ("FROM ppdm_rr_support_patterns(null_count, [0.9, 0.8])", "every count n"),
        ("FROM ppdm_rr_support_whole_record(c, NULL)", "exactly one of 'p' and 'epsilon'. Got p=NULL"),
        ("FROM ppdm_rr_support_whole_record(c, 0.5)", r"'p' argument .* other than 0.5. Got 0.5 instead"),
        ("FROM ppdm_rr_support_whole_record(c, epsilon := 0)", r"'epsilon' argument .* > 0. Got 0 instead"),
        ("FROM ppdm_rr_support_whole_record(null_count, 0.9)", "every count n"),
        ("SELECT ppdm_rr_epsilon(0.8, k := 1)", "'k' argument of .* integer >= 2. Got"),
        ("SELECT ppdm_rr_p_from_epsilon(1, k := 0)", "'k' argument of .* integer >= 2. Got"),
        (
            "SELECT ppdm_rr_p_from_epsilon('nan'::DOUBLE)",
            "'epsilon' argument of ppdm_rr_p_from_epsilon must be a float > 0. Got nan",
        ),
        (
            "SELECT ppdm_rr_correct_share(0.3, 'nan'::DOUBLE)",
            r"'p' argument of ppdm_rr_correct_share .* Got nan",
        ),
        ("SELECT ppdm_rr_correct_share(0.3)", "exactly one of 'p' and 'epsilon'"),
        ("SELECT ppdm_rr_correct_share(0.3, epsilon := -2)", r"'epsilon' argument of ppdm_rr_correct_share"),
    ],
)
def test_macros_refuse_bad_input(con, sql, message):
    con.execute("CREATE TABLE h AS SELECT i::DOUBLE AS x, i AS id FROM range(50) r(i)")
    con.execute(
        "CREATE TABLE c AS SELECT * FROM (VALUES ('00', 5), ('01', 3), ('10', 2), ('11', 9)) t(pattern, n)"
    )
    con.execute("CREATE TABLE bad_pattern AS SELECT * FROM (VALUES ('00', 5), ('0a', 3)) t(pattern, n)")
    con.execute("CREATE TABLE null_count AS SELECT * FROM (VALUES ('00', 5), ('11', NULL)) t(pattern, n)")
    with pytest.raises(duckdb.InvalidInputException, match=message):
        con.execute(sql).fetchall()


def test_p_from_epsilon_large_epsilon_and_python_agree(con):
    assert con.execute(
        "SELECT ppdm_rr_p_from_epsilon(1000), ppdm_rr_p_from_epsilon('inf'::DOUBLE)"
    ).fetchone() == (1.0, 1.0)
    assert ppdm.rr_p_from_epsilon(1000.0) == 1.0
    for epsilon in (0.1, 0.5, float(np.log(3)), 2.0, 7.5):
        for k in (2, 3, 10):
            sql = con.execute(f"SELECT ppdm_rr_p_from_epsilon({epsilon!r}::DOUBLE, k := {k})").fetchone()[0]
            assert sql == ppdm.rr_p_from_epsilon(epsilon, k)  # the same bits: same p, same coins


def test_ecdf_macro_keeps_user_columns_with_dunder_names(con):
    con.execute(
        "CREATE TABLE u AS SELECT i AS id, i * 1.5 AS x, -i AS __x, 7 AS __key, 'v' AS __v FROM range(40) r(i)"
    )
    out = con.sql("FROM ppdm_ecdf_resample('u', 'x', 'id', 5, '1')").pl()
    assert out.columns == ["id", "x", "__x", "__key", "__v"]  # the table's order, rows too
    assert out["id"].to_list() == list(range(40))
    assert out["__x"].to_list() == [-i for i in range(40)] and set(out["__key"]) == {7}
    expected = ppdm.ecdf_resample(
        con.sql("SELECT id, x::DOUBLE AS x FROM u ORDER BY id").pl(), "x", bins=5, secret="1", key="id"
    )
    assert out["x"].to_list() == expected["x"].to_list()


def test_bulk_path_checks_batch_rows(con):
    with pytest.raises(ppdm.exceptions.InvalidParameterError, match="'batch_rows' parameter"):
        ppdm.duckdb.rr_disguise_batches(con, "SELECT true AS x", "x", p=0.8, secret=1, batch_rows=0)


# -- issue 14 finding 5: bounded memory, named columns, checked arguments ----------------

_BOUNDED = """
import sys
import threading
import duckdb
import polars_ppdm as ppdm
con = ppdm.duckdb.register(duckdb.connect())
con.execute("SET memory_limit = '1GB'")
con.execute("SET threads = 2")
con.execute("CREATE TABLE h AS SELECT i::DOUBLE AS x, i AS id FROM range(50) r(i)")
try:
    con.execute(sys.argv[1]).fetchall()
except duckdb.Error as err:
    print(type(err).__name__, err)
"""


def _address_space_limit() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "FROM ppdm_ecdf_resample('h', 'x', 'id', 1e11, '1')",
            r"InvalidInputException .*bins must be an integer >= 2, got 100000000000.0 \(the 'bins' argument: "
            r"an integer in \[2, 10,000,000\], the limit of polars_ppdm.ecdf_resample",
        ),
        (
            "FROM ppdm_dp_histogram('h', 'x', 0, 50, 1e11, 1.0, '1')",
            r"InvalidInputException .*'bins' argument of ppdm_dp_histogram must be an integer >= 1 "
            r"\(at most 50,000,000, the cell limit of polars_ppdm.dp_histogram",
        ),
    ],
)
def test_huge_bins_are_refused_before_any_memory_is_taken(sql, message):
    """Issue 14 finding 5: bins = 1e11 took more than 20 GB in the ECDF macro (and the histogram
    macro ran for minutes generating 1e11 noisy cells).  Run in a child with 3 GB of address
    space, a 1 GB DuckDB limit and a timeout, so that the old behaviour fails the test instead
    of the machine."""
    done = subprocess.run(
        [sys.executable, "-c", _BOUNDED, sql],
        capture_output=True,
        text=True,
        timeout=90,
        preexec_fn=_address_space_limit,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(message, done.stdout), done.stdout


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "FROM ppdm_ecdf_resample('h', 'nosuch', 'id', 5, '1')",
            r"ppdm_ecdf_resample: column 'nosuch' \(the 'col' argument\) not found in table 'h'; "
            r"its columns are \[x, id, email\]",
        ),
        (
            "FROM ppdm_ecdf_resample('h', 'x', 'row_id', 5, '1')",
            r"ppdm_ecdf_resample: column 'row_id' \(the 'key' argument\) not found in table 'h'",
        ),
        (
            "FROM ppdm_dp_histogram('h', 'nosuch', 0, 10, 5, 1.0, '1')",
            r"ppdm_dp_histogram: column 'nosuch' \(the 'col' argument\) not found in table 'h'; "
            r"its columns are \[x, id, email\]",
        ),
        (
            "FROM ppdm_rr_support_k('h', 'nosuch', ['a', 'b'], p := 0.8)",
            r"ppdm_rr_support_k: column 'nosuch' \(the 'col' argument\) not found in table 'h'",
        ),
        # The same on an empty table: the check reads the schema, not the rows.
        (
            "FROM ppdm_ecdf_resample('empty', 'nosuch', 'id', 5, '1')",
            r"column 'nosuch' \(the 'col' argument\) not found in table 'empty'; its columns are \[x, id\]",
        ),
        (
            "FROM ppdm_dp_histogram('empty', 'nosuch', 0, 10, 5, 1.0, '1')",
            r"column 'nosuch' \(the 'col' argument\) not found in table 'empty'",
        ),
    ],
)
def test_a_missing_column_is_named(con, sql, message):
    """Issue 14 finding 5: was DuckDB's 'COLUMNS(...) resulted in an empty set of columns'
    binder error (which also quotes the SQL text, secret literal included)."""
    con.execute("CREATE TABLE h AS SELECT i::DOUBLE AS x, i AS id, 'e' || i AS email FROM range(50) r(i)")
    con.execute("CREATE TABLE empty (x DOUBLE, id BIGINT)")
    with pytest.raises(duckdb.InvalidInputException, match=message) as info:
        con.execute(sql).fetchall()
    assert "LINE 1" not in str(info.value)  # our error, not a binder error quoting the query


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "FROM ppdm_ecdf_resample('h', NULL, 'id', 5, '1')",
            r"'col' argument of ppdm_ecdf_resample .* Got NULL",
        ),
        (
            "FROM ppdm_ecdf_resample('h', 5, 'id', 5, '1')",
            r"'col' argument of ppdm_ecdf_resample .* Got INTEGER",
        ),
        (
            "FROM ppdm_ecdf_resample('h', 'x', NULL, 5, '1')",
            r"'key' argument of ppdm_ecdf_resample .* Got NULL",
        ),
        (
            "FROM ppdm_ecdf_resample('h', 'x', 'email', 5, '1')",
            r"key column email must hold integers .*ppdm_key.* Got VARCHAR",
        ),
        ("FROM ppdm_ecdf_resample('h', 'x', 'id', NULL, '1')", r"bins must be an integer >= 2, got NULL"),
        ("FROM ppdm_ecdf_resample('h', 'x', 'id', 'abc', '1')", r"bins must be an integer >= 2, got VARCHAR"),
        (
            "FROM ppdm_ecdf_resample('h', 'x', 'id', [5], '1')",
            r"bins must be an integer >= 2, got INTEGER\[\]",
        ),
        ("FROM ppdm_ecdf_resample('h', 'x', 'id', 5.5, '1')", r"bins must be an integer >= 2, got 5.5"),
        ("FROM ppdm_ecdf_resample('h', 'x', 'id', 5, 'short')", r"'secret' parameter, as a string"),
        (
            "FROM ppdm_dp_histogram('h', NULL, 0, 10, 5, 1.0, '1')",
            r"'col' argument of ppdm_dp_histogram .* Got NULL",
        ),
        (
            "FROM ppdm_dp_histogram('h', 'email', 0, 10, 5, 1.0, '1')",
            r"column email of ppdm_dp_histogram must be numeric",
        ),
        (
            "FROM ppdm_dp_histogram('h', 'x', 'a', 10, 5, 1.0, '1')",
            r"'low' and 'high' .* Got VARCHAR, INTEGER",
        ),
        ("FROM ppdm_dp_histogram('h', 'x', NULL, 10, 5, 1.0, '1')", r"'low' and 'high' .* Got NULL, 10"),
        (
            "FROM ppdm_dp_histogram('h', 'x', 0, 10, NULL, 1.0, '1')",
            r"'bins' argument of ppdm_dp_histogram .* Got NULL",
        ),
        (
            "FROM ppdm_dp_histogram('h', 'x', 0, 10, 0, 1.0, '1')",
            r"'bins' argument of ppdm_dp_histogram .* Got 0 ",
        ),
        ("FROM ppdm_dp_histogram('h', 'x', 0, 10, 5, 'e', '1')", r"'epsilon' argument .* Got VARCHAR"),
        ("FROM ppdm_dp_histogram('h', 'x', 0, 10, 5, NULL, '1')", r"'epsilon' argument .* Got NULL"),
        ("FROM ppdm_dp_histogram('h', 'x', 0, 10, 5, 1.0, 'short')", r"'secret' parameter, as a string"),
        (
            "FROM ppdm_rr_support_k('h', NULL, ['a', 'b'], p := 0.8)",
            r"'col' argument of ppdm_rr_support_k .* Got NULL",
        ),
        ("FROM ppdm_rr_support_k('h', 'email', 'ab', p := 0.8)", r"'categories' argument .* Got VARCHAR"),
        ("FROM ppdm_rr_support_k('h', 'email', NULL, p := 0.8)", r"'categories' argument .* Got NULL"),
        ("FROM ppdm_rr_support_k('h', 'email', ['a', 'b'], p := 'q')", r"'p' argument .* Got VARCHAR"),
        (
            "FROM ppdm_rr_support_k('h', 'email', ['a', 'b'], epsilon := [1])",
            r"'epsilon' argument .* Got INTEGER\[\]",
        ),
    ],
)
def test_macro_arguments_null_or_of_the_wrong_type(con, sql, message):
    """Issue 14 finding 5: NULLs and wrong types were DuckDB binder or conversion errors
    ('Could not choose a best candidate function for floor(STRING_LITERAL)', ...)."""
    con.execute("CREATE TABLE h AS SELECT i::DOUBLE AS x, i AS id, 'e' || i AS email FROM range(50) r(i)")
    with pytest.raises(duckdb.InvalidInputException, match=message):
        con.execute(sql).fetchall()


def test_rr_epsilon_in_double_like_python(con):
    """A HUGEINT k overflowed the DECIMAL arithmetic ('Overflow in multiplication'); in DOUBLE
    the macro gives Python's bits."""
    k = 2**127 - 1
    got = con.execute(f"SELECT ppdm_rr_epsilon(0.75, {k}::HUGEINT), ppdm_rr_epsilon(0.8, k := 3)").fetchone()
    assert got[0] == pytest.approx(np.log(0.75 * (float(k) - 1) / 0.25), rel=1e-15)
    assert got[1] == ppdm.rr_epsilon(0.8, 3)


@pytest.mark.parametrize(
    "epsilon",
    [
        "18446744073709551615::UBIGINT",
        "4294967295::UINTEGER",
        "340282366920938463463374607431768211455::UHUGEINT",
        "170141183460469231731687303715884105727::HUGEINT",
        "1e308",
    ],
)
def test_p_from_epsilon_of_any_numeric_type_computes_in_double(con, epsilon):
    """Negating the largest UBIGINT/HUGEINT overflowed ('Overflow in negation', fuzz finding
    sql-p-from-epsilon-overflow); in DOUBLE the macro gives Python's bits."""
    got = con.execute(
        f"SELECT ppdm_rr_p_from_epsilon({epsilon}), ppdm_rr_p_from_epsilon({epsilon}, k := 3)"
    ).fetchone()
    value = con.execute(f"SELECT ({epsilon})::DOUBLE").fetchone()[0]
    assert got == (ppdm.rr_p_from_epsilon(value), ppdm.rr_p_from_epsilon(value, 3)) == (1.0, 1.0)


@pytest.mark.parametrize("key", [pl.lit(1), 1, ["id"]])
def test_bulk_path_refuses_a_key_that_is_not_a_column_name(con, key):
    """A polars expression as key raised Polars' 'truth value of an Expr is ambiguous'
    (fuzz finding duckdb-batches-key-expr)."""
    query = "SELECT true AS b, range AS id FROM range(5)"
    with pytest.raises(ppdm.exceptions.InvalidParameterError, match="'key' parameter of rr_disguise_batches"):
        ppdm.duckdb.rr_disguise_batches(con, query, "b", p=0.75, secret=1, key=key)


@pytest.fixture(scope="module")
def spiral_key() -> ppdm.SpiralKey:
    return ppdm.spiral_key(["a", "b"], bounds={"a": (0, 5), "b": (0, 5)}, rounds=2, secret=1)


@pytest.mark.parametrize("func", ["spiral_macro_sql", "register_spiral_key"])
def test_spiral_macro_checks_key_and_name(spiral_key, func):
    """key=None raised a raw AttributeError (fuzz findings duckdb-spiral-key-type and
    duckdb-spiral-sql-type)."""
    call = getattr(ppdm.duckdb, func)
    args = (duckdb.connect(),) if func == "register_spiral_key" else ()
    for key in (None, "a", {"columns": ["a", "b"]}):
        with pytest.raises(
            ppdm.exceptions.InvalidParameterError, match=f"'key' parameter of {func} must be a SpiralKey"
        ):
            call(*args, key)
    for name in (None, "", 3, pl.lit("x")):
        with pytest.raises(ppdm.exceptions.InvalidParameterError, match=f"'name' parameter of {func}"):
            call(*args, spiral_key, name)


def test_spiral_macro_named_with_a_quote_still_refuses_nan(spiral_key):
    con = ppdm.duckdb.register_spiral_key(duckdb.connect(), spiral_key, "it's")
    con.execute("CREATE TABLE t AS SELECT 'nan'::DOUBLE AS a, 1.0 AS b")
    with pytest.raises(duckdb.InvalidInputException, match="it's: NaN or infinite values"):
        con.sql("""FROM "it's"('t')""").fetchall()


def _words_of_macro(name: str) -> list[str]:
    """Every identifier-like word of a macro's SQL (comments and strings left out), once
    per spelling DuckDB tells apart (it is case-insensitive), except our __ppdm_ names."""
    text = re.sub(r"'(?:[^']|'')*'", "", re.sub(r"--[^\n]*", "", (SQL / f"{name}.sql").read_text()))
    found = {w.lower() for w in re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text)}
    return sorted(w for w in found if not w.startswith("__ppdm"))


@pytest.mark.parametrize(
    ("macro", "query", "columns"),
    [
        (
            "ecdf_resample",
            "FROM ppdm_ecdf_resample('t', 'val', 'id', 5, '42') ORDER BY id",
            "range * 1.5 AS val, range AS id",
        ),
        (
            "dp_histogram",
            "FROM ppdm_dp_histogram('t', 'val', 0, 10, 4, 1.0, '5a1f3c9e0b7d2a4866c3e1f09b8d7a25')",
            "range::DOUBLE AS val",
        ),
        (
            "rr_support_k",
            "FROM ppdm_rr_support_k('t', 'val', ['a', 'b', 'c'], p := 0.8)",
            "['a', 'b', 'c'][range % 3 + 1] AS val",
        ),
    ],
)
def test_table_macros_ignore_user_columns_named_like_their_internals(con, macro, query, columns):
    """A column named b broke ppdm_ecdf_resample ('Ambiguous reference to column name "b"'),
    and lo, hi too: the macro's own columns clashed with the table's.  With a column named
    like every word of the macro, the result is the same."""
    con.execute(f"CREATE TABLE t AS SELECT {columns} FROM range(10)")
    expected = con.sql(query).pl()
    # The words of the macro, and the names its CTEs used before they became __ppdm_ ones.
    before = {"b", "n", "lo", "hi", "j", "x", "g", "cum", "f", "u", "r", "i", "v"}
    words = sorted((set(_words_of_macro(macro)) | before) - {"val", "id"})
    extra = ", ".join(f'(range % 3)::INTEGER AS "{w}"' for w in words)
    con.execute(f"CREATE OR REPLACE TABLE t AS SELECT {columns}, {extra} FROM range(10)")
    got = con.sql(query).pl()
    assert_frame_equal(got.select(expected.columns), expected)


def _polars_disguise(x: pa.Array, key: pa.Array) -> list:
    frame = pl.DataFrame({"x": pl.Series(x), "id": pl.Series(key)})
    return frame.select(pl.col("x").ppdm.rr_disguise(p=0.7, secret="5" * 32, key="id"))["x"].to_list()


def _call_binary_udf(x, key) -> list:
    from polars_ppdm.duckdb.scalar import _rr_binary_udf

    n = len(x)
    constants = (pa.array([0.7] * n), pa.nulls(n, pa.float64()), pa.array(["5" * 32] * n))
    return _rr_binary_udf(x, *constants, key, pa.array(["x"] * n)).to_pylist()


@pytest.mark.parametrize(
    "case",
    ["plain", "nulls", "sliced_on_a_byte", "sliced_off_a_byte", "two_chunks", "null_key_of_null_value"],
)
def test_binary_udf_fast_path_gives_the_polars_bits(case):
    """The Boolean path on Arrow's bitmaps and the general path through Polars agree, bit for bit,
    for every layout DuckDB or a caller can hand over (offsets, nulls, chunks)."""
    rng = np.random.default_rng(7)
    n = 3001
    values = rng.random(n) < 0.4
    mask = rng.random(n) < 0.1 if case in ("nulls", "null_key_of_null_value") else None
    x = pa.array(values, mask=mask)
    key = pa.array(np.arange(n) * 7 - 50)
    if case == "null_key_of_null_value":
        key = pa.array(np.arange(n) * 7 - 50, mask=mask)
    if case.startswith("sliced"):
        start = 16 if case == "sliced_on_a_byte" else 5
        x, key = x.slice(start, 2000), key.slice(start, 2000)
    expected = _polars_disguise(x, key)
    if case == "two_chunks":
        x, key = pa.chunked_array([x[:1000], x[1000:]]), pa.chunked_array([key[:1000], key[1000:]])
    assert _call_binary_udf(x, key) == expected


@pytest.mark.parametrize(
    "values",
    [
        ["ab", "a", "bab"],  # the same bytes as 'ab' three times, split elsewhere
        ["x", "x", "y"],
        ["", "", "a"],
        ["a", "a", ""],
    ],
)
def test_a_string_parameter_that_varies_is_refused(values):
    from polars_ppdm.duckdb._shared import constant as _constant

    with pytest.raises(ppdm.InvalidParameterError, match="one non-null constant per query"):
        _constant(pa.array(values), "stream", "f")
    assert _constant(pa.array([values[0]] * 3), "stream", "f") == values[0]


@pytest.mark.parametrize("values", [[0.5, 0.5, 0.25], [0.0, -0.0, 0.0], [1, 1, 2]])
def test_a_number_parameter_that_varies_is_refused(values):
    from polars_ppdm.duckdb._shared import constant as _constant

    with pytest.raises(ppdm.InvalidParameterError, match="one non-null constant per query"):
        _constant(pa.array(values), "p", "f")
    assert _constant(pa.array(values[:1] * 4).slice(1), "p", "f") == values[0]


def test_a_vector_like_the_last_constant_one_is_still_checked():
    """A verified constant is remembered with its buffers; the next vector reuses it only
    when byte-equal, so a column that varies, or has a NULL, right after it is refused."""
    from polars_ppdm.duckdb._shared import constant as _constant

    n = 2048
    assert _constant(pa.array([0.25] * n), "p", "remembered") == 0.25
    assert _constant(pa.chunked_array([pa.array([0.25] * n)]), "p", "remembered") == 0.25
    varying = [0.25] * n
    varying[-1] = 0.5
    with pytest.raises(ppdm.InvalidParameterError, match="one non-null constant per query"):
        _constant(pa.array(varying), "p", "remembered")
    values = pa.array([0.25] * n)
    with_null = pa.Array.from_buffers(
        pa.float64(), n, [pa.array([True] * (n - 1) + [False]).buffers()[1], values.buffers()[1]]
    )
    assert _constant(values, "p", "remembered") == 0.25
    with pytest.raises(ppdm.InvalidParameterError, match="one non-null constant per query"):
        _constant(with_null, "p", "remembered")
    assert _constant(pa.array(["s"] * n), "stream", "remembered") == "s"
    assert _constant(pa.array(["t"] * n), "stream", "remembered") == "t"


def test_categories_with_a_null_are_refused_by_the_categories_check(con):
    """A constant list holding a NULL is a constant: the categories' own check names the
    fault, not the constant check."""
    con.execute("CREATE TABLE cats AS SELECT i AS id, 'a' AS x FROM range(3000) r(i)")
    with pytest.raises(duckdb.InvalidInputException, match="two or more distinct, non-null values"):
        con.execute("SELECT ppdm_rr_disguise_k(x, ['a', NULL], 0.8, '1', id, 'x') FROM cats").fetchall()


def test_a_list_of_numbers_is_compared_as_values():
    from polars_ppdm.duckdb._shared import constant as _constant

    assert _constant(pa.array([[1, 2]] * 4), "numbers", "f") == [1, 2]
    with pytest.raises(ppdm.InvalidParameterError, match="one non-null constant per query"):
        _constant(pa.array([[1, 2], [1, 3]]), "numbers", "f")


def test_the_secret_comes_from_the_variable_value_read_once(monkeypatch):
    """The secret is made from the value whose change it was cached by: a variable that
    changes between the read and the use cannot be cached under its old value."""
    from polars_ppdm.duckdb import _shared

    monkeypatch.setenv("PPDM_TEST_ONCE", "11" * 16)
    reads = []
    real = _shared.os.environ.get

    def counting(name, default=None):
        reads.append(name)
        return real(name, default)

    monkeypatch.setattr(_shared.os.environ, "get", counting)
    text = pa.array(["env:PPDM_TEST_ONCE"] * 4)
    _shared._resolved_secret.cache_clear()
    assert _shared.secret_of(text, "f").key == bytes.fromhex("11" * 16)
    assert reads.count("PPDM_TEST_ONCE") == 1
    with pytest.raises(ppdm.SecretError, match="without '=' or NUL"):
        _shared.secret_of(pa.array(["env:PPDM_\0X"] * 4), "f")


def test_a_parameter_that_changes_late_in_a_vector_is_refused_without_its_values():
    """A change of value far into the vector is still seen; the values are not shown (an
    argument that varies comes from the rows: docs/privacy-model.md)."""
    from polars_ppdm.duckdb._shared import constant as _constant

    with pytest.raises(ppdm.InvalidParameterError, match=r"Got values that differ between rows") as refused:
        _constant(pa.array([0.8] * 2000 + [0.6] * 48), "p", "late")
    assert "0.8" not in str(refused.value) and "0.6" not in str(refused.value)


def test_a_nan_probability_is_refused_by_name(con):
    con.execute("CREATE TABLE nan_p AS SELECT i AS id, i % 2 = 0 AS x FROM range(5000) r(i)")
    with pytest.raises(duckdb.InvalidInputException, match=r"'p'.*nan"):
        con.execute("SELECT ppdm_rr_disguise(x, 'nan'::DOUBLE, '1', id, 'x') FROM nan_p").fetchall()


def test_bulk_path_keeps_the_query_order_over_many_batches(con):
    """Batches are disguised in worker threads while DuckDB reads ahead; they still leave
    in the query's order, with the positions of a positional key counted across them."""
    query = "SELECT i AS id, (i * 7) % 3 = 0 AS x FROM range(50_000) r(i) ORDER BY hash(i)"
    reader = ppdm.duckdb.rr_disguise_batches(con, query, "x", p=0.6, secret=4, batch_rows=997)
    got = pl.from_arrow(reader.read_all())
    source = con.sql(query).pl()
    assert got["id"].to_list() == source["id"].to_list()
    expected = source.with_columns(pl.col("x").ppdm.rr_disguise(p=0.6, secret=4))
    assert_frame_equal(got, expected)


def test_bulk_path_gathers_a_table_scans_row_groups_into_batch_rows(con, monkeypatch):
    """A table scan hands out one row group at a time, whatever batch size is asked for;
    the bulk path gathers them so that each disguise call has about batch_rows rows."""
    import polars_ppdm.duckdb.bulk as ppdm_duckdb

    heights = []

    def recording(frame, *args, **kwargs):
        heights.append(frame.height)
        return ppdm.rr_disguise(frame, *args, **kwargs)

    monkeypatch.setattr(ppdm_duckdb, "rr_disguise", recording)
    con.execute("CREATE TABLE wide AS SELECT i AS id, i % 3 = 0 AS x FROM range(500_000) r(i)")
    scanned = [b.num_rows for b in con.cursor().sql("SELECT * FROM wide").to_arrow_reader(200_000)]
    reader = ppdm.duckdb.rr_disguise_batches(
        con, "SELECT * FROM wide", "x", p=0.6, secret=4, key="id", batch_rows=200_000
    )
    got = pl.from_arrow(reader.read_all())
    calls = heights[1:]  # the first call is the schema's, on no rows
    assert heights[0] == 0 and sum(calls) == 500_000
    # Two workers disguise batches at once, so the short last one may finish (and be
    # recorded) before a full one: every call but one, in any order, holds batch_rows.
    assert all(height >= 200_000 for height in sorted(calls)[1:])
    if max(scanned) < 200_000:  # DuckDB >= 2.0 scans by row group (older ones honour the size)
        assert len(calls) < len(scanned)
    source = con.sql("SELECT * FROM wide").pl()
    assert_frame_equal(got, source.with_columns(pl.col("x").ppdm.rr_disguise(p=0.6, secret=4, key="id")))


def test_bulk_path_error_in_a_later_batch_surfaces(con):
    query = "SELECT CASE WHEN i = 4321 THEN NULL ELSE i END AS id, i % 2 = 0 AS x FROM range(10_000) r(i) ORDER BY i"
    reader = ppdm.duckdb.rr_disguise_batches(con, query, "x", p=0.6, secret=4, key="id", batch_rows=1000)
    with pytest.raises(ppdm.InvalidParameterError, match="null value"):
        reader.read_all()


def test_bulk_path_delivers_the_rows_read_before_a_failing_query(con):
    """Every row DuckDB hands out before the query fails leaves, disguised, then the
    query's error: the overlap and the gathering of batches hold nothing back."""
    query = (
        "SELECT i AS id, CASE WHEN i = 200000 THEN error('boom') ELSE i % 2 = 0 END AS x "
        "FROM range(300000) r(i)"
    )
    con.execute("SET threads = 1")
    plain = 0
    with pytest.raises((duckdb.Error, OSError), match="boom"):  # pyarrow's reader: OSError
        for batch in con.cursor().sql(query).to_arrow_reader(25_000):  # as the bulk path asks
            plain += batch.num_rows
    reader = ppdm.duckdb.rr_disguise_batches(con, query, "x", p=0.6, secret=4, key="id", batch_rows=25_000)
    got = []
    with pytest.raises((duckdb.Error, OSError), match="boom"):
        for batch in reader:
            got.append(batch)
    assert plain > 0 and sum(batch.num_rows for batch in got) == plain
    ids = pa.Table.from_batches(got)["id"].to_pylist()
    assert ids == list(range(plain))


def test_an_abandoned_bulk_reader_stops_cleanly(con):
    query = "SELECT i AS id, i % 2 = 0 AS x FROM range(100_000) r(i)"
    reader = ppdm.duckdb.rr_disguise_batches(con, query, "x", p=0.6, secret=4, key="id", batch_rows=1000)
    first = reader.read_next_batch()
    assert first.num_rows == 1000
    reader.close()
    del reader
    assert not [t for t in threading.enumerate() if t.name.startswith("ppdm-disguise")]


@pytest.mark.parametrize(
    "lists",
    [
        [["a", "b"], ["a", "c"]],
        [["a", "b"], ["ab", ""]],  # the same bytes, split elsewhere
        [["a", "b"], ["a"]],
        [["a", "b"], ["a", "b"], ["a", "bb"]],
        [[], ["a"]],
        [["a"], ["a", None]],
    ],
)
def test_a_list_parameter_that_varies_is_refused(lists):
    from polars_ppdm.duckdb._shared import constant as _constant

    with pytest.raises(ppdm.InvalidParameterError, match="one non-null constant per query"):
        _constant(pa.array(lists), "categories", "f")
    for kind in (pa.list_(pa.string()), pa.large_list(pa.large_string())):
        assert _constant(pa.array([lists[0]] * 5, kind).slice(2), "categories", "f") == lists[0]
