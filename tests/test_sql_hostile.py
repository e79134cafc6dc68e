"""The SQL macros against hostile tables (issue 27): no name of a user's column or table
may break or change a result, and what Polars refuses SQL refuses too."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.exceptions import InvalidParameterError

SQL = Path(__file__).resolve().parents[1] / "sql"
SECRET = "5a1f3c9e0b7d2a4866c3e1f09b8d7a25"  # fixed for the tests; not a repeated pattern


def _words(text: str) -> set[str]:
    """Every identifier-like word of SQL text, comments and string literals left out."""
    text = re.sub(r"'(?:[^']|'')*'", "", re.sub(r"--[^\n]*", "", text))
    return set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", text))


def _builtins() -> set[str]:
    """DuckDB's keywords and functions (ours included): no internal names of a macro."""
    con = ppdm.duckdb.register(duckdb.connect())
    rows = con.execute(
        "SELECT keyword_name FROM duckdb_keywords() UNION SELECT function_name FROM duckdb_functions() "
        "UNION SELECT type_name FROM duckdb_types()"
    ).fetchall()
    return {name.lower() for (name,) in rows}


_BUILTIN = _builtins()
# Names that broke the macros before issue 27: the macros' own columns shared a scope with
# the table's (lo, hi, row_bound, u_type, __grid...; a group column g, r or eps matched G,
# R, eps), a group column __ppdm_group was dropped with the macros' own columns, and a
# counts table named probs or base was read as a CTE of the macro.
EARLIER = {
    "lo",
    "hi",
    "row_bound",
    "u_type",
    "__grid",
    "g",
    "r",
    "eps",
    "G",
    "R",
    "__ppdm_group",
    "__ppdm_none",
}
EARLIER |= {"__PPDM_NONE", "__ppdm_v", "__ppdm_x", "probs", "base", "user:region", "out:count", "my col"}


def _internal(*files: str, extra: str = "") -> list[str]:
    """The names a family of macros uses itself: every word of its SQL but DuckDB's
    keywords and functions, and the earlier offenders."""
    words = set().union(*(_words((SQL / f).read_text()) for f in files), _words(extra))
    return sorted({w for w in words if w.lower() not in _BUILTIN} | EARLIER)


# The base table: the columns the macros read (each renamed in turn) and nothing else.
BASE = ("person", "region", "spend", "id", "v", "c2")
COUNTS = "SELECT * FROM (VALUES ('00', 30), ('01', 20), ('10', 10), ('11', 40)) t(pattern, n)"


@pytest.fixture(scope="module")
def hostile_con() -> duckdb.DuckDBPyConnection:
    return ppdm.duckdb.register(duckdb.connect())


@pytest.fixture(scope="module")
def base() -> pl.DataFrame:
    rng = np.random.default_rng(27)
    n = 120
    return pl.DataFrame(
        {
            "person": rng.integers(0, 40, n),
            "region": rng.choice(["a", "b", "c"], n),
            "spend": rng.uniform(-2, 12, n),
            "id": rng.permutation(n).astype(np.int64),
            "v": rng.normal(5, 3, n),
            "c2": rng.choice(["a", "b", "z"], n),
        }
    )


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _text(name: str) -> str:
    return name.replace("'", "''")


def _dp_sql(kind: str, table: str, n: dict[str, str]) -> str:
    macro, value = {
        "count": ("ppdm_dp_count", ""),
        "sum": ("ppdm_dp_sum", f", '{_text(n['spend'])}', contribution_bounds_per_row := [0, 10]"),
        "mean": ("ppdm_dp_avg", f", '{_text(n['spend'])}', contribution_bounds_per_row := [-1, 10]"),
    }[kind]
    return (
        f"FROM {macro}('{_text(table)}', '{_text(n['region'])}'{value}, epsilon := 1.0, "
        f"privacy_unit_column := '{_text(n['person'])}', max_groups_contributed := 2, secret := '{SECRET}', "
        + ("public_groups := ['a', 'b', 'c'])" if kind != "mean" else "delta := 0.2)")
    )


def _dp_polars(kind: str, frame: pl.DataFrame, n: dict[str, str]) -> pl.DataFrame:
    aggregate = {
        "count": dp.count(),
        "sum": dp.sum(n["spend"], bounds=(0, 10)),
        "mean": dp.mean(n["spend"], bounds=(-1, 10)),
    }
    options = (
        {"public_groups": pl.DataFrame({n["region"]: ["a", "b", "c"]})} if kind != "mean" else {"delta": 0.2}
    )
    out = ppdm.dp_group_by(
        frame,
        n["region"],
        aggregate[kind],
        epsilon=1.0,
        secret=SECRET,
        privacy_unit=n["person"],
        max_groups_contributed=2,
        **options,
    )
    return out if kind != "mean" else out.sort(n["region"])


def _ecdf_polars(frame: pl.DataFrame, n: dict[str, str]) -> pl.DataFrame:
    out = ppdm.ecdf_resample(frame, n["v"], bins=5, secret=SECRET, key=n["id"])
    return out.select(*(c for c in out.columns if c != n["v"]), n["v"])  # SQL puts it last


# family -> (its files, the columns it reads, what its calls are and are compared with)
FAMILIES = {
    "dp_group_by": (("dp_group_by.sql",), ("region", "spend", "person")),
    "dp_histogram": (("dp_histogram.sql",), ("v",)),
    "ecdf_resample": (("ecdf_resample.sql",), ("v", "id")),
    "rr_support_k": (("rr_support_k.sql",), ("c2",)),
    "rr_support_counts": (("rr_support_patterns.sql", "rr_support_whole_record.sql"), ()),
    "row-wise": (("rr_correct_share.sql", "rr_epsilon.sql", "rr_p_from_epsilon.sql"), ()),
}
CASES = [
    (family, name)
    for family, (files, _) in FAMILIES.items()
    for name in _internal(*files, extra=ppdm.duckdb.scalar._MACROS if family == "row-wise" else "")
]


def _calls(family: str, table: str, n: dict[str, str], turn: int | None = None) -> dict[str, str]:
    """The SQL of the family's macros over ``table`` whose columns are named ``n`` (the
    DP aggregates: the one of ``turn``, or all)."""
    if family == "dp_group_by":
        kinds = ("count", "sum", "mean")
        return {
            kind: _dp_sql(kind, table, n)
            for kind in (kinds if turn is None else kinds[turn % 3 : turn % 3 + 1])
        }
    if family == "dp_histogram":
        return {
            "hist": f"FROM ppdm_dp_histogram('{_text(table)}', '{_text(n['v'])}', 0, 10, 4, 1.0, '{SECRET}')"
        }
    if family == "ecdf_resample":
        return {
            "ecdf": f"FROM ppdm_ecdf_resample('{_text(table)}', '{_text(n['v'])}', '{_text(n['id'])}', 5, '{SECRET}') "
            f"ORDER BY {_quoted(n['id'])}"
        }
    if family == "rr_support_k":
        return {
            "k": f"FROM ppdm_rr_support_k('{_text(table)}', '{_text(n['c2'])}', ['a', 'b', 'z'], p := 0.8)"
        }
    if family == "rr_support_counts":
        return {
            "patterns": f"FROM ppdm_rr_support_patterns({_quoted(table)}, [0.9, 0.8])",
            "whole": f"FROM ppdm_rr_support_whole_record({_quoted(table)}, epsilon := 1.0)",
        }
    return {
        "row-wise": f"SELECT ppdm_rr_disguise(region = 'a', 0.7, '{SECRET}', id, 'region') AS a, "
        f"ppdm_rr_disguise_k(c2, ['a', 'b', 'z'], 0.7, '{SECRET}', id, 'c2') AS b, "
        f"ppdm_add_noise(spend, 1.0, '{SECRET}', id, 'spend') AS n, "
        f"ppdm_rr_disguise_whole_record(v > 5, ['x', 'y'], 0.7, '{SECRET}', id, record := [v > 5, spend > 5]) AS w, "
        "ppdm_rr_correct_share(0.3, 0.8) AS s, ppdm_rr_correct_share(0.3, epsilon := 1.0) AS t, "
        f"ppdm_rr_epsilon(0.8) AS e FROM {_quoted(table)} ORDER BY id"
    }


def _wanted(
    family: str, key: str, frame: pl.DataFrame, n: dict[str, str], plain: pl.DataFrame
) -> pl.DataFrame | None:
    """What the call must give: Polars' release on the same names (the names of the group,
    value, histogram and ECDF columns are part of a release's streams), or the result on the
    un-renamed table (``plain``) under the new names; None where Polars refuses the names."""
    try:
        if family == "dp_group_by":
            return _dp_polars(key, frame, n)
        if family == "dp_histogram":
            return ppdm.dp_histogram(frame, n["v"], bounds=(0, 10), bins=4, epsilon=1.0, secret=SECRET)
        if family == "ecdf_resample":
            return _ecdf_polars(frame, n).sort(n["id"])
        if family == "rr_support_k":
            ppdm.rr_support(frame, n["c2"], p=0.8, categories=["a", "b", "z"])  # refuses what Polars refuses
            return plain.rename({"c2": n["c2"]})
    except InvalidParameterError:
        return None
    return plain


@pytest.fixture(scope="module")
def plain(hostile_con, base) -> dict[tuple[str, str], pl.DataFrame]:
    """Every call's result on the base table and counts, with no hostile name anywhere."""
    hostile_con.register("hostile_base", base)
    # A DuckDB table, the hostile ones Polars frames: the same bits from either source
    # (the patterns' float sums went in the order the scan handed out the rows).
    hostile_con.execute(f"CREATE TABLE hostile_counts AS {COUNTS}")
    names = {c: c for c in BASE}
    out = {}
    for family in FAMILIES:
        table = "hostile_counts" if family == "rr_support_counts" else "hostile_base"
        for key, sql in _calls(family, table, names).items():
            out[family, key] = hostile_con.sql(sql).pl()
    return out


@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f}-{n}" for f, n in CASES])
def test_a_name_a_macro_uses_itself_is_any_column_or_table(hostile_con, base, plain, family, name):
    """A table named like a word of the macro, holding every other such word as a column
    (text, integer, float and boolean in turn), with the columns the macro reads renamed:
    the first to the name, the others to other words of the list (so every word is, over
    the cases, each of them).  The same bits as Polars on the same names, or as the plain
    table where the names are no part of the result; where Polars refuses a name, SQL
    refuses it too, with its own error (no binder error)."""
    reads = FAMILIES[family][1]
    words = [w for f, w in CASES if f == family]
    turn = words.index(name)  # the DP aggregate of this case (one per case: each call costs ~0.2 s)
    chosen: dict[str, str] = {}
    for j, column in enumerate(reads):
        candidate = words[(turn + 7 * j) % len(words)]
        taken = {c.lower() for c in BASE if c not in reads} | {c.lower() for c in chosen.values()}
        chosen[column] = candidate if candidate.lower() not in taken else column
    n = {c: chosen.get(c, c) for c in BASE}
    seen = {v.lower() for v in n.values()} | {c.lower() for c in BASE} | {"pattern", "n"}
    extra = []
    for w in words:
        if w.lower() not in seen:
            seen.add(w.lower())
            extra.append(w)
    kinds = [
        pl.format("text {}", pl.int_range(pl.len())),
        pl.int_range(pl.len()),
        pl.int_range(pl.len()) * 0.5,
        pl.int_range(pl.len()) % 2 == 0,
    ]
    marks = [kinds[i % 4].alias(w) for i, w in enumerate(extra)]
    con = hostile_con
    if family == "rr_support_counts":
        frame = con.sql(COUNTS).pl().with_columns(marks)
    else:
        frame = base.rename({c: n[c] for c in BASE if n[c] != c}).with_columns(marks)
    con.register(name, frame)
    failures = {}
    try:
        for key, sql in _calls(family, name, n, turn).items():
            want = _wanted(family, key, frame, n, plain[family, key])
            try:
                got = con.sql(sql).pl()
            except duckdb.Error as error:
                if want is not None or not isinstance(error, duckdb.InvalidInputException):
                    failures[key] = str(error).splitlines()[0][:300]
                continue
            if want is None:
                failures[key] = "Polars refuses these names, SQL did not"
            elif family == "ecdf_resample":
                if sorted(got.columns) != sorted(want.columns) or not got.equals(want.select(got.columns)):
                    failures[key] = f"another result: {got.columns}"
            elif not got.equals(want):
                failures[key] = f"another result: {got.columns} vs {want.columns}"
    finally:
        con.unregister(name)
    assert not failures, (n, failures)


# -- what Polars refuses, SQL refuses (issue 27) ------------------------------------------


def _far_apart() -> pl.DataFrame:
    """Values from -1e308 to 9e307: each finite, their span not (it overflows to inf)."""
    return pl.DataFrame({"id": range(20), "v": [(i - 10) * 1e307 for i in range(20)]})


@pytest.mark.parametrize(
    ("sql", "python", "message"),
    [
        (
            f"FROM ppdm_dp_histogram('far', 'v', -1e308, 1e308, 4, 1.0, '{SECRET}')",
            lambda df: ppdm.dp_histogram(df, "v", bounds=(-1e308, 1e308), bins=4, epsilon=1.0, secret=SECRET),
            r"The 'low' and 'high' arguments of ppdm_dp_histogram must be finite bounds with low < high "
            r"\(and high - low finite\)\. Got -1e\+308, 1e\+308 instead\.",
        ),
        (
            f"FROM ppdm_dp_histogram('far', 'v', 0, 10, 4, 1.0, '{SECRET}')",
            lambda df: ppdm.dp_histogram(
                df.with_columns(v=pl.col("v") * 100), "v", bounds=(0, 10), bins=4, epsilon=1.0, secret=SECRET
            ),
            r"The column v of ppdm_dp_histogram holds null, NaN or infinite values",
        ),
        (
            f"FROM ppdm_ecdf_resample('far', 'v', 'id', 5, '{SECRET}')",
            lambda df: ppdm.ecdf_resample(df, "v", bins=5, secret=SECRET, key="id"),
            r"ppdm_ecdf_resample: column v has a range beyond float64 \(its maximum minus its minimum must be "
            r"finite, or the cut points would be NaN\); rescale the column first\.",
        ),
    ],
    ids=["histogram bounds", "histogram infinite value", "ecdf span"],
)
def test_sql_refuses_the_extremes_polars_refuses(hostile_con, sql, python, message):
    """SQL counted every row of a histogram over (-1e308, 1e308) in bin 0 (its edges NaN and
    inf), counted an infinite value in the edge bin, and gave NaN for 8 of 20 rows of an
    ECDF over a column spanning -1e308 to 9e307; Polars refuses all three."""
    far = _far_apart()
    hostile_con.register("far", far.with_columns(v=pl.col("v") * 100) if "0, 10" in sql else far)
    with pytest.raises(InvalidParameterError):
        python(far)
    with pytest.raises(duckdb.InvalidInputException, match=message):
        hostile_con.sql(sql).fetchall()


@pytest.mark.parametrize(
    "planted",
    [
        "CREATE MACRO least(a, b) AS system.main.greatest(a, b)",  # the clamp kept the largest value
        "CREATE MACRO abs(x) AS CASE WHEN typeof(x) = 'BIGINT' THEN 0 ELSE system.main.abs(x) END",
        "CREATE MACRO range(n) AS TABLE SELECT 1 AS range",
    ],
    ids=["least", "abs", "table macro"],
)
def test_a_database_whose_functions_shadow_builtins_is_refused(tmp_path, planted):
    """Attack review 73: whoever could write the database file planted a macro named as a
    built-in that polars_ppdm's macros call; after the operator registered, a sum bounded
    to [0, 100] published one person's salary, or the exact sum (the noise cut to one grid
    unit)."""
    path = str(tmp_path / "planted.duckdb")
    with duckdb.connect(path) as con:
        con.execute(planted)
    con = duckdb.connect(path)
    with pytest.raises(
        InvalidParameterError, match=r"planted\.main\.(least|abs|range).*nothing was registered"
    ):
        ppdm.duckdb.register(con)
    assert not con.execute("SELECT * FROM duckdb_functions() WHERE function_name LIKE 'ppdm%'").fetchall()
    con.execute("DROP MACRO " + ("TABLE range" if "TABLE" in planted else planted.split()[2].split("(")[0]))
    ppdm.duckdb.register(con)  # once dropped, registered
    assert con.execute("SELECT least(1, 2)").fetchall() == [(1,)]


def test_a_shadow_in_other_case_or_attached_later_is_refused(tmp_path):
    """Review 79: names were compared with their case (a planted LEAST passed), and a
    database attached after register() and put first in the search_path was not looked
    at; each release checks now, with the built-ins named in full."""
    path = str(tmp_path / "planted.duckdb")
    with duckdb.connect(path) as con:
        con.execute("CREATE MACRO LEAST(a, b) AS system.main.greatest(a, b)")
    with pytest.raises(InvalidParameterError, match=r"planted\.main\.LEAST"):
        ppdm.duckdb.register(duckdb.connect(path))
    con = ppdm.duckdb.register(duckdb.connect())
    con.execute(
        "CREATE TABLE pay AS SELECT 'a' AS dept, i AS person, i * 1000.0 AS salary FROM range(30) r(i)"
    )
    call = (
        "SELECT * FROM memory.main.ppdm_dp_sum('pay', 'dept', 'salary', contribution_bounds_per_row := [0.0, 100.0], "
        f"epsilon := 1.0, privacy_unit_column := 'person', public_groups := ['a'], secret := '{SECRET}')"
    )
    con.execute(call).fetchall()  # a clean connection releases
    con.execute(f"ATTACH '{path}' AS s")
    con.execute("SET search_path = 's.main,memory.main'")
    with pytest.raises(
        duckdb.InvalidInputException, match="a search_path is set"
    ):
        con.execute(call).fetchall()
