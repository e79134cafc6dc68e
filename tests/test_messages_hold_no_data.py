"""An error message is a channel to an attacker: an analyst who runs SQL against a table,
or reads a pipeline's log, but may not see the rows.  Each refusal here is triggered by two
neighbouring tables (the same schema, other private rows: another constant value, one
more null, other extremes, another row out of place): the two messages must be identical
-- a function of the schema and the parameters only -- and the value that tells the two
tables apart must not appear in either.  Polars (eager and lazy), the compiled plugins,
DuckDB's functions and macros, and ``ppdm run``; Spark's messages are the Polars ones
(``tests/spark/test_spark_messages.py``).

Measured before this file (d30275b): "The column 'x' of ecdf_resample is constant
(42.125)", "spans -1e+308 to 1e+308", "The key column 'id' of rr_disguise has 1 null
value(s)" (2 for the neighbour), "must hold only 0 and 1. Got [424242]", "holds values
outside its 'categories' [...]: ['secret-a']", "Got NULL in 1 such rows", "Got 0.8, 0.6
instead" (a column passed as p), "the rows of period 5, already published", "all 2
transactions are empty", "Got 1 as line 1", "not UTF-8 at byte 7", "Got min=3.5, max=3.5",
a spiral's NaN refusal carrying the key's matrix and offsets in Polars' expression
context, and ``ppdm run`` printing a CSV's unparsable value ("could not parse `abc`").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import _native

SECRET = ppdm.Secret.for_tests(3)
OTHER_SECRET = ppdm.Secret.for_tests(4)


# Polars' expression context, appended to an error raised inside a plan the user collects:
# the plan's text (its helper names count up per process), not the rows.
CONTEXT = "\n\nThis error occurred"
TRACEBACK = "\n\nAt:\n"


def refusal(call: Callable[[], Any]) -> str:
    """The message of the error ``call`` raises (a LazyFrame it returns is collected)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PrivacyLeakWarning of bounds read off the data
        try:
            out = call()
            if isinstance(out, pl.LazyFrame):
                out.collect()
        except (InvalidParameterError, pl.exceptions.ComputeError, duckdb.Error) as error:
            return str(error)
    pytest.fail("not refused")


def same_message(
    message_of: Callable[[Any], str], first: Any, second: Any, hidden: tuple[str, ...] = ()
) -> str:
    """The very same message for both neighbours, holding none of ``hidden``."""
    one, two = message_of(first), message_of(second)
    assert one == two, f"the message depends on the rows:\n{one}\n{two}"
    for text in hidden:
        assert text not in one, f"{text!r} of the data in the message: {one}"
    return one


def same_refusal(call: Callable[[Any], Any], first: Any, second: Any, hidden: tuple[str, ...] = ()) -> str:
    """Both neighbours refused (:func:`refusal`) with the very same message, holding none of
    ``hidden`` (Polars' expression context after it included)."""
    full = {}

    def message_of(table: Any) -> str:
        full[id(table)] = refusal(lambda: call(table))
        # DuckDB 1.x appends the Python traceback of a UDF's error (code lines, not rows).
        return full[id(table)].split(CONTEXT, 1)[0].split(TRACEBACK, 1)[0]

    message = same_message(message_of, first, second, hidden)
    for text in hidden:
        assert not any(text in m for m in full.values()), f"{text!r} of the data in Polars' context"
    return message


def floats(*values: float | None) -> pl.DataFrame:
    return pl.DataFrame(
        {"id": list(range(len(values))), "x": list(values)}, schema={"id": pl.Int64, "x": pl.Float64}
    )


# ---- Polars: eager and lazy ------------------------------------------------------------------

ECDF = lambda t: ppdm.ecdf_resample(t, "x", bins=3, secret=SECRET, key="id")  # noqa: E731

POLARS_CASES: dict[str, tuple[Callable[[Any], Any], pl.DataFrame, pl.DataFrame, tuple[str, ...]]] = {
    "ecdf: a constant column (its value)": (
        ECDF,
        floats(42.125, 42.125, 42.125, 42.125),
        floats(7.75, 7.75, 7.75, None),
        ("42.125", "7.75"),
    ),
    "ecdf: NaN and infinities (how many)": (
        ECDF,
        floats(1.0, float("nan"), 3.0, 4.0),
        floats(float("nan"), float("inf"), 3.0, float("-inf")),
        (),
    ),
    "ecdf: fewer than 2 values (how many)": (
        ECDF,
        floats(None, None, 2.5),
        floats(None, None, None),
        ("2.5",),
    ),
    "ecdf: a range beyond float64 (min and max)": (
        ECDF,
        floats(-1e308, 0.0, 1e308),
        floats(-9e307, 1.7e308, 5.0),
        ("e+30", "1e308", "9e307"),
    ),
    "ecdf: null keys (how many)": (
        ECDF,
        pl.DataFrame({"id": [1, None, 3, 4], "x": [1.0, 2.0, 3.0, 4.0]}),
        pl.DataFrame({"id": [None, None, 3, None], "x": [1.0, 2.0, 3.0, 4.0]}),
        (),
    ),
    "rr (map_batches, string key): null keys": (
        lambda t: ppdm.rr_disguise(t, "a", p=0.8, secret=SECRET, key="id"),
        pl.DataFrame({"id": ["u1", None, "u3"], "a": [True, False, True]}),
        pl.DataFrame({"id": [None, None, "u3"], "a": [True, False, False]}),
        (),
    ),
    "rr: a binary integer column holding other values": (
        lambda t: ppdm.rr_disguise(t, "x", p=0.8, secret=SECRET),
        pl.DataFrame({"x": [0, 1, 424242, 1]}),
        pl.DataFrame({"x": [777777, 0, 1, 31337]}),
        ("424242", "777777", "31337"),
    ),
    "rr: values outside the categories": (
        lambda t: ppdm.rr_disguise(t, "region", p=0.8, secret=SECRET, categories=["north", "south"]),
        pl.DataFrame({"region": ["north", "secret-a", "south"]}),
        pl.DataFrame({"region": ["secret-b", "secret-b", "south"]}),
        ("secret-a", "secret-b"),
    ),
    "rr: a 128-bit key beyond 64 bits (its extremes)": (
        lambda t: ppdm.rr_disguise(t, "a", p=0.8, secret=SECRET, key="id"),
        pl.DataFrame({"id": pl.Series([0, 2**70], dtype=pl.Int128), "a": [True, False]}),
        pl.DataFrame({"id": pl.Series([-(2**100), 5], dtype=pl.Int128), "a": [True, True]}),
        (str(2**70), str(-(2**100))),
    ),
    "pattern_rules: nulls in a disguised column (how many)": (
        lambda t: ppdm.pattern_rules(t, ["x", "y"], frequency="f", min_confidence=0.5),
        pl.DataFrame(
            {"x": [True, None, False, True], "y": [True, False, True, True], "f": [0.1, 0.2, 0.3, 0.4]}
        ),
        pl.DataFrame(
            {"x": [None, None, False, None], "y": [True, False, True, True], "f": [0.1, 0.2, 0.3, 0.4]}
        ),
        (),
    ),
    "rr_support: a binary column holding other values (how many)": (
        lambda t: ppdm.rr_support(t, ["a"], p=0.8),
        pl.DataFrame({"a": [0, 1, 5, 1]}),
        pl.DataFrame({"a": [9, 9, 0, 9]}),
        (),
    ),
    "normalise: a constant column (its min and max)": (
        lambda t: ppdm.datasets.normalise(t, "x"),
        floats(3.5, 3.5, None),
        floats(8.25, 8.25, 8.25),
        ("3.5", "8.25"),
    ),
    "reconstruct_distribution: values no noise reaches (how many)": (
        lambda t: ppdm.reconstruct_distribution(t, "x", scale=5e-324, bins=8, bounds=(0, 1)),
        pl.DataFrame({"x": [1.01, 1.01, 0.5, 1.0]}),
        pl.DataFrame({"x": [1.01, 1.01, 1.01, 0.5, 1.0]}),
        (),
    ),
    "estimate_covariance: too few rows (how many)": (
        lambda t: ppdm.estimate_covariance(t, ["x", "y"], scale=1.0),
        pl.DataFrame({"x": [1.0, None], "y": [2.0, 3.0]}),
        pl.DataFrame({"x": [None, None], "y": [2.0, 3.0]}, schema={"x": pl.Float64, "y": pl.Float64}),
        (),
    ),
    "spiral: bounds read off the data (its extremes)": (
        lambda t: ppdm.spiral(t, ["x", "y"], secret=SECRET),
        pl.DataFrame(
            {"x": [None, None, None], "y": [1.0, 2.0, 3.0]}, schema={"x": pl.Float64, "y": pl.Float64}
        ),
        pl.DataFrame({"x": [-1e308, 1.5e308, 0.0], "y": [1.0, 2.0, 4.0]}),
        ("e+30",),
    ),
}


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("case", list(POLARS_CASES))
def test_polars_refusals_are_the_same_for_neighbouring_tables(case, lazy):
    call, first, second, hidden = POLARS_CASES[case]
    if lazy:
        same_refusal(call, first.lazy(), second.lazy(), hidden)
    else:
        same_refusal(call, first, second, hidden)


def test_an_expression_refusal_is_the_same_for_neighbouring_tables():
    """The expression namespace (map_batches): the same message, Polars' context and all."""

    def call(t: pl.DataFrame) -> pl.DataFrame:
        return t.with_columns(pl.col("x").ppdm.rr_disguise(p=0.8, secret=SECRET))

    same_refusal(call, pl.DataFrame({"x": [0, 1, 424242]}), pl.DataFrame({"x": [5, 5, 5]}), ("424242",))


def test_a_spirals_refusal_holds_no_part_of_its_key():
    """A NaN refused inside the spiral's plan: Polars appended the expression it was
    evaluating, whose literals are the key's matrix and offsets, to the eager call's
    message.  Two secrets (two keys) must give the same message."""
    table = pl.DataFrame({"x": [1.0, float("nan"), 3.0], "y": [2.0, 1.0, 0.5]})
    bounds = {"x": (0, 5), "y": (0, 5)}
    messages = [
        refusal(lambda s=s: ppdm.spiral(table, ["x", "y"], bounds=bounds, secret=s))
        for s in (SECRET, OTHER_SECRET)
    ]
    assert messages[0] == messages[1]
    assert "NaN or infinite" in messages[0] and "This error occurred" not in messages[0]


# ---- the compiled plugins (Boolean rr_disguise, numeric add_noise, integer key) -------------

needs_plugins = pytest.mark.skipif(
    _native.load() is None, reason="the compiled kernels are not installed (or PPDM_NATIVE=0)"
)

PLUGIN_CASES = {
    "rr_keep_bool: null keys under values (how many)": (
        lambda t: ppdm.rr_disguise(t, ["a"], p=0.8, secret=SECRET, key="id"),
        pl.DataFrame({"id": [1, None, 3, 4], "a": [True, False, None, True]}),
        pl.DataFrame({"id": [None, None, 3, None], "a": [True, False, True, False]}),
    ),
    "add_noise_f64: null keys under values (how many)": (
        lambda t: ppdm.add_noise(t, ["x"], scale=1.0, secret=SECRET, key="id"),
        pl.DataFrame({"id": [1, None, 3], "x": [1.5, 2.5, None]}),
        pl.DataFrame(
            {"id": [None, None, None], "x": [1.5, 2.5, 8.0]}, schema={"id": pl.Int64, "x": pl.Float64}
        ),
    ),
    "add_noise_f64: NaN and infinities (how many)": (
        lambda t: ppdm.add_noise(t, ["x"], scale=1.0, secret=SECRET, key="id"),
        pl.DataFrame({"id": [1, 2, 3], "x": [1.5, float("nan"), 3.0]}),
        pl.DataFrame({"id": [1, 2, 3], "x": [float("inf"), float("nan"), 3.0]}),
    ),
}


def _uses_a_plugin(lazy: pl.LazyFrame) -> bool:
    plan = lazy.explain(optimized=False)
    return "rr_keep_bool" in plan or "add_noise_f64" in plan


@needs_plugins
@pytest.mark.parametrize("engine", ["eager", "in-memory", "streaming"])
@pytest.mark.parametrize("case", list(PLUGIN_CASES))
def test_plugin_refusals_are_the_same_for_neighbouring_tables(case, engine):
    call, first, second = PLUGIN_CASES[case]
    assert _uses_a_plugin(call(first.lazy()))
    if engine == "eager":  # the library collects: its own error type, its message alone
        same_refusal(call, first, second)
    else:  # collected by the user: Polars' ComputeError around the plugin's message
        same_refusal(lambda t: call(t.lazy()).collect(engine=engine), first, second)


@needs_plugins
def test_the_plugins_words_are_the_python_paths_words(monkeypatch):
    """native/src/plugin.rs writes the null-key refusal itself: word for word the
    message of the map_batches path (polars_ppdm._encoding.null_key_message)."""
    table = pl.DataFrame({"id": [1, None, 3], "a": [True, False, True]})
    compiled = refusal(lambda: ppdm.rr_disguise(table, ["a"], p=0.8, secret=SECRET, key="id"))
    monkeypatch.setattr(_native, "NATIVE", None)
    python = refusal(lambda: ppdm.rr_disguise(table, ["a"], p=0.8, secret=SECRET, key="id"))
    assert compiled == python
    assert compiled.startswith("The key column 'id' of rr_disguise has null values in rows that need")


# ---- functions over data that is not a frame -------------------------------------------------


def test_transactions_refusals_name_no_count_item_or_line():
    onehot = ppdm.transactions_to_onehot
    strings = pl.List(pl.String)
    same_refusal(
        onehot,
        pl.Series("items", [["a"], None], dtype=strings),
        pl.Series("items", [None, None, ["b"]], dtype=strings),
    )
    same_refusal(
        onehot, pl.Series("items", [[], []], dtype=strings), pl.Series("items", [[], [], []], dtype=strings)
    )
    same_refusal(
        lambda s: onehot(s, items=["a"]),
        pl.Series("items", [["a", "zz-secret-1"]]),
        pl.Series("items", [["zz-secret-2"], ["a"], ["zz-secret-3"]]),
        ("zz-secret",),
    )
    same_refusal(
        ppdm.read_transactions, ["a b", 31337], [424242, "a", "b"], ("31337", "424242", "line 0", "line 1")
    )


def test_a_file_that_is_not_utf8_is_refused_without_the_offset(tmp_path):
    from polars_ppdm.cli import read_baskets

    path = tmp_path / "baskets.dat"

    def read(content: bytes, reader: Callable[[Path], Any]) -> Any:
        path.write_bytes(content)
        return reader(path)

    for reader in (ppdm.read_transactions, read_baskets):
        message = same_refusal(
            lambda content, reader=reader: read(content, reader),
            b"milk \xff bread\n",
            b"a b\nc d e f g\n\xfe\n",
        )
        assert "byte" not in message and "position" not in message and "0xff" not in message


def test_audit_and_metrics_refusals_name_no_row_count_or_value():
    x, y = pl.DataFrame({"x": [1.0, 2.0, 3.0]}), pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
    same_refusal(lambda r: ppdm.audit.rank_linkage(x, r, "x"), y, y.head(2))
    same_refusal(
        lambda o: ppdm.audit.compare_to_additive_noise(o, o, "x", snr=5e-324, secret=SECRET),
        pl.DataFrame({"x": [1.0, 2.0, 3.0]}),
        pl.DataFrame({"x": [10.0, 200.0, 3000.0]}),
    )
    same_refusal(
        lambda v: ppdm.audit.mutual_information(v, [1.0, 2.0, 3.0]),
        [1.0, float("nan"), 123456.5],
        [98765.25, None, 2.0],
        ("123456", "98765"),
    )
    from polars_ppdm.metrics.clustering import f_measure

    same_refusal(lambda pair: f_measure(*pair), ([0, 1, 1], [1, 1]), ([0, 1], [1, 1, 0, 0]))


def test_a_continual_release_names_no_changed_period():
    from test_continual import GROUPS

    def log(changed_night: int | None) -> pl.DataFrame:
        rng = np.random.default_rng(4)
        base = pl.DataFrame(
            {
                "person": rng.integers(0, 10_000, 240),
                "region": rng.choice(["n", "s", "e"], 240),
                "night": np.repeat(np.arange(6), 40),
            }
        )
        if changed_night is None:
            return base
        return pl.concat(
            [base, pl.DataFrame({"person": [99_999], "region": ["n"], "night": [changed_night]})]
        )

    def release(events: pl.DataFrame, state: Any = None) -> Any:
        return ppdm.dp_continual_counts(
            events,
            "region",
            period="night",
            through=5,
            horizon=30,
            rho=0.5,
            public_groups=GROUPS,
            secret=SECRET,
            state=state,
        )

    first = release(log(None))
    same_refusal(lambda night: release(log(night), first.state), 5, 2, ("period 5", "period 2"))


# ---- DuckDB: the UDFs and the SQL macros -----------------------------------------------------


@pytest.fixture
def con():
    return ppdm.duckdb.register(duckdb.connect())


def sql_query(con, query: str) -> Callable[[pl.DataFrame], Any]:
    """``query`` over the table ``t`` of the given rows (the same name for both neighbours)."""

    def call(rows: pl.DataFrame) -> Any:
        con.execute("DROP TABLE IF EXISTS t")
        con.register("t_source", rows.to_arrow())
        con.execute("CREATE TABLE t AS FROM t_source")
        con.unregister("t_source")
        return con.execute(query).fetchall()

    return call


SQL_CASES = {
    "ppdm_rr_disguise: NULL keys under values (how many)": (
        "SELECT ppdm_rr_disguise(a, 0.8, '{s}', id, 'a') FROM t",
        pl.DataFrame({"id": [1, None, 3], "a": [True, False, True]}),
        pl.DataFrame({"id": [None, None, 3], "a": [True, False, True]}),
        (),
    ),
    "ppdm_add_noise: NULL keys under values (how many)": (
        "SELECT ppdm_add_noise(x, 1.0, '{s}', id, 'x') FROM t",
        pl.DataFrame({"id": [1, None, 3], "x": [1.5, 2.5, 3.5]}),
        pl.DataFrame({"id": [None, None, None], "x": [1.5, 2.5, 3.5]}),
        (),
    ),
    "ppdm_add_noise: NaN (how many)": (
        "SELECT ppdm_add_noise(x, 1.0, '{s}', id, 'x') FROM t",
        pl.DataFrame({"id": [1, 2, 3], "x": [1.5, float("nan"), 3.5]}),
        pl.DataFrame({"id": [1, 2, 3], "x": [float("nan"), float("nan"), 3.5]}),
        (),
    ),
    "ppdm_rr_disguise_k: values outside the categories": (
        "SELECT ppdm_rr_disguise_k(c, ['north', 'south'], 0.8, '{s}', id, 'c') FROM t",
        pl.DataFrame({"id": [1, 2, 3], "c": ["north", "secret-a", "south"]}),
        pl.DataFrame({"id": [1, 2, 3], "c": ["secret-b", "south", "secret-b"]}),
        ("secret-a", "secret-b"),
    ),
    "ppdm_rr_disguise: a column passed as p (its values)": (
        "SELECT ppdm_rr_disguise(a, p, '{s}', id, 'a') FROM t",
        pl.DataFrame({"id": [1, 2, 3], "a": [True, False, True], "p": [0.8, 0.8, 0.6]}),
        pl.DataFrame({"id": [1, 2, 3], "a": [True, False, True], "p": [0.7, 0.65, 0.7]}),
        ("0.6", "0.7", "0.8"),
    ),
    "ppdm_ecdf_resample: a constant column": (
        "FROM ppdm_ecdf_resample('t', 'x', 'id', 3, '{s}')",
        floats(42.125, 42.125, 42.125),
        floats(7.75, None, 7.75, 7.75),
        ("42.125", "7.75"),
    ),
    "ppdm_ecdf_resample: fewer than 2 values (how many)": (
        "FROM ppdm_ecdf_resample('t', 'x', 'id', 3, '{s}')",
        floats(None, 2.5, None),
        floats(None, None, None),
        ("2.5",),
    ),
    "ppdm_ecdf_resample: a range beyond float64 (min and max)": (
        "FROM ppdm_ecdf_resample('t', 'x', 'id', 3, '{s}')",
        floats(-1e308, 0.0, 1e308),
        floats(-9e307, 1.7e308, 5.0),
        ("e+30", "1e308"),
    ),
    "ppdm_ecdf_resample: NULL keys (how many)": (
        "FROM ppdm_ecdf_resample('t', 'x', 'id', 3, '{s}')",
        pl.DataFrame({"id": [1, None, 3], "x": [1.0, 2.0, 3.0]}),
        pl.DataFrame({"id": [None, None, 3], "x": [1.0, 2.0, 3.0]}),
        (),
    ),
    "ppdm_rr_support_k: values outside the categories": (
        "FROM ppdm_rr_support_k('t', 'c', ['north', 'south'], p := 0.8)",
        pl.DataFrame({"c": ["north", "secret-a", "south"]}),
        pl.DataFrame({"c": ["secret-b", "south", "secret-c"]}),
        ("secret-a", "secret-b", "secret-c"),
    ),
    "ppdm_rr_support_k: NULLs (how many)": (
        "FROM ppdm_rr_support_k('t', 'c', ['north', 'south'], p := 0.8)",
        pl.DataFrame({"c": ["north", None, "south"]}),
        pl.DataFrame({"c": [None, None, "south"]}),
        (),
    ),
    "ppdm_rr_support_patterns: a pattern that is not 0 and 1": (
        "FROM ppdm_rr_support_patterns(t, [0.9, 0.8])",
        pl.DataFrame({"pattern": ["00", "0a"], "n": [5, 3]}),
        pl.DataFrame({"pattern": ["2b", "11"], "n": [5, 3]}),
        ("0a", "2b"),
    ),
}


@pytest.mark.parametrize("case", list(SQL_CASES))
def test_sql_refusals_are_the_same_for_neighbouring_tables(con, case):
    query, first, second, hidden = SQL_CASES[case]
    same_refusal(sql_query(con, query.format(s=SECRET.reveal_hex())), first, second, hidden)


# ---- ppdm run: the pipeline's one line on stderr ---------------------------------------------


@pytest.fixture
def pipeline(tmp_path, monkeypatch):
    from test_pipeline_hostile import PIPELINE, people, write
    from test_pipeline_hostile import SECRET as PIPELINE_SECRET

    monkeypatch.setenv("PPDM_SECRET", PIPELINE_SECRET)
    return tmp_path, people, lambda text=PIPELINE: write(tmp_path, text=text)


def run_line(capsys, path: Path) -> str:
    from polars_ppdm.jobs.commands import main

    code = main(["run", "--quiet", "--no-report", str(path)])
    assert code != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_pipelines_refusals_are_the_same_for_neighbouring_inputs(pipeline, capsys):
    folder, people, write = pipeline
    from test_pipeline_hostile import PIPELINE

    def null_keys(ids: list[int]) -> str:
        frame = people().with_columns(
            pl.when(pl.col("id").is_in(ids)).then(None).otherwise(pl.col("id")).alias("id")
        )
        frame.write_csv(folder / "people.csv")
        return run_line(capsys, write())

    # Rows of one smoker value: the null key is one unit, within max_values_per_unit.
    quiet = people().filter(~pl.col("smoker"))["id"].to_list()
    line = same_message(null_keys, quiet[:1], quiet[:4])
    assert "The key column 'id' of rr_disguise has null values" in line

    def outside(value: str) -> str:
        people().with_columns(
            smoker=pl.when(pl.col("id") == 7).then(pl.lit(value)).otherwise(pl.col("region"))
        ).write_csv(folder / "people.csv")
        text = PIPELINE.replace(
            "epsilon = 1.0\n", 'epsilon = 1.0\ncategories = ["north", "south", "east"]\n', 1
        )
        return run_line(capsys, write(text))

    same_message(outside, "secret-a", "secret-bb", ("secret-a", "secret-bb"))

    def damaged(value: bytes) -> str:
        # Past the rows Polars infers the types from: the age column is an integer one.
        good = b"".join(b"%d,true,north,%d\n" % (i, 20 + i % 50) for i in range(300))
        (folder / "people.csv").write_bytes(
            b"id,smoker,region,age\n" + good + b"300,false,south," + value + b"\n"
        )
        return run_line(capsys, write())

    line = same_message(damaged, b"abc", b"zq-private", ("abc", "zq-private"))
    assert "cannot be read" in line
    # The file's schema is not its data: the user is told which column to look at.
    assert "as dtype `i64` at column 'age' (column number 4)" in line


def test_a_polars_errors_line_withholds_its_values_and_counts():
    """``ppdm``'s one line for an engine's error: its quoted values and its numbers withheld."""
    from polars_ppdm.jobs.commands import one_line

    def line(values: list[str]) -> str:  # a str: not refused by us
        try:
            pl.DataFrame({"x": values}).lazy().select(pl.col("x").cast(pl.Int64)).collect()
        except pl.exceptions.PolarsError as error:
            return one_line(error)
        pytest.fail("not refused")

    assert same_message(
        line, ["1", "abc"], ["zz-private", "2", "qq"], ("abc", "zz-private", "qq")
    ).startswith("InvalidOperationError: conversion from")


@pytest.mark.parametrize(
    "value",
    [
        "SECRETVAL",
        "\"x` as dtype `i64` at column 'SECRETVAL'\"",  # a fake schema part inside the value
        "x` as dtype `i64` at column 'SECRETVAL'",
        '"SECRET\nVAL"',  # a line break: Polars' first line ends inside the value
        "pre`SECRETVAL",  # one backtick
        "\"it's SECRETVAL\"",
    ],
)
def test_a_csv_parse_error_keeps_its_schema_and_withholds_any_value(tmp_path: Path, value: str) -> None:
    """``withheld`` keeps the dtype and column of Polars' parse error; the value, whatever
    it holds, stays withheld (a value faking the schema part must not pass as one)."""
    from polars_ppdm.jobs.inputs import withheld

    path = tmp_path / "people.csv"
    # Past the rows Polars infers the types from: column b is an integer column.
    path.write_text("a,b\n" + "1,2\n" * 200 + f"1,{value}\n")
    with pytest.raises(pl.exceptions.PolarsError) as info:
        pl.scan_csv(path).collect()
    line = withheld(info.value)
    assert "SECRET" not in line and "VAL" not in line, line
    assert line == "could not parse <withheld> as dtype `i64` at column 'b' (column number 2)", line
