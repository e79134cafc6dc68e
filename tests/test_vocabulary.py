"""Every public signature speaks the vocabulary of the README's "Parameters across the
library" table: each parameter name is in the table, the retired names are gone, and the
shared parameters behave alike everywhere."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import duckdb
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import cli, namespace

README = Path(__file__).resolve().parents[1] / "README.md"
RETIRED = {"seed", "items", "attributes", "noise_sigma", "disguised_test", "patterns", "eps"}
# Where a retired-looking name still means something else, said in the table.
RESULTS = {"RRTree", "SpiralKey", "DPKMeansResult", "KnownIOAttack", "ParallelBlock"}
ALLOWED = {("seed", "polars_ppdm.datasets"), ("items", "transactions_to_onehot")}


def table_names() -> set[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Parameters across the library", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            first_cell = row.split("|")[1]
            names |= set(re.findall(r"`(\w+)`", first_cell))
    return names


def public_callables():
    """(qualified name, callable) for every public function, class and method."""
    modules = [ppdm, ppdm.audit, ppdm.duckdb, ppdm.datasets]
    seen = set()
    for module in modules:
        for name in getattr(module, "__all__", dir(module)):
            obj = getattr(module, name, None)
            if obj is None or name.startswith("_") or id(obj) in seen:
                continue
            if inspect.isfunction(obj) and obj.__module__.startswith("polars_ppdm"):
                seen.add(id(obj))
                yield f"{obj.__module__}.{name}", obj
            elif inspect.isclass(obj) and obj.__module__.startswith("polars_ppdm") and not issubclass(obj, BaseException):
                seen.add(id(obj))
                if name not in RESULTS:  # results are made by the library, not by users
                    yield f"{obj.__module__}.{name}", obj
                for attr, member in vars(obj).items():
                    if callable(member) and not attr.startswith("_"):
                        yield f"{obj.__module__}.{name}.{attr}", member
    for cls in (namespace.PPDMExprNamespace, namespace.PPDMFrameNamespace):
        for attr, member in inspect.getmembers(cls, inspect.isfunction):
            if not attr.startswith("_"):
                yield f"namespace.{cls.__name__}.{attr}", member


def parameters(function) -> list[inspect.Parameter]:
    function = function.__func__ if isinstance(function, classmethod | staticmethod) else function
    if isinstance(function, property):
        return []
    try:
        found = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p for p in found if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


CALLABLES = list(public_callables())


def test_the_walk_finds_the_public_surface():
    names = {name.rsplit(".", 1)[-1] for name, _ in CALLABLES}
    assert {"rr_disguise", "dp_histogram", "rank_linkage", "rr_disguise_batches", "agrawal", "dp_kmeans"} <= names
    assert len(CALLABLES) > 60


@pytest.mark.parametrize(("name", "function"), CALLABLES, ids=[name for name, _ in CALLABLES])
def test_every_parameter_is_in_the_readme_table(name, function):
    table = table_names()
    for parameter in parameters(function):
        allowed_elsewhere = any(parameter.name == word and place in name for word, place in ALLOWED)
        assert parameter.name not in RETIRED or allowed_elsewhere, f"{name}: retired name {parameter.name!r}"
        assert parameter.name in table, f"{name}: parameter {parameter.name!r} is not in the README's table"


@pytest.mark.parametrize(("name", "function"), CALLABLES, ids=[name for name, _ in CALLABLES])
def test_shared_parameters_behave_alike(name, function):
    found = {p.name: p for p in parameters(function)}
    if "mode" in found:
        assert found["mode"].default == "per_attribute", name
    if "p" in found and not name.endswith(("rr_epsilon",)):
        assert "epsilon" in found, f"{name} takes p but not epsilon"
    if "dist" in found:
        assert "scale" in found and found["dist"].default == "gaussian", name
    if "secret" in found and found["secret"].kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
        assert found["secret"].default is None, name
    if "columns" in found:
        # After the frame (audits: both frames; the DuckDB bulk path: connection and query).
        assert list(found).index("columns") <= 2, f"{name}: 'columns' comes right after the frame(s)"


def test_the_namespaces_are_the_functions():
    for method_name in namespace.FRAME_METHODS:
        method = getattr(namespace.PPDMFrameNamespace, method_name)
        function = getattr(ppdm, method_name)
        assert parameters(method) == parameters(function)[1:], method_name
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "flag": [True, False, True, True]})
    assert df.ppdm.dp_histogram("x", bounds=(0, 5), bins=2, epsilon=1.0, secret=ppdm.Secret.for_tests(1)).equals(
        ppdm.dp_histogram(df, "x", bounds=(0, 5), bins=2, epsilon=1.0, secret=ppdm.Secret.for_tests(1))
    )
    lazy = df.lazy().ppdm.rr_disguise("flag", p=0.7, secret=2)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(ppdm.rr_disguise(df, "flag", p=0.7, secret=2))


def test_the_command_line_and_sql_use_the_same_names():
    table = table_names()
    commands = {name: sub for action in cli._parser()._subparsers._group_actions for name, sub in action.choices.items()}
    flags = [a.dest for a in commands["rules"]._actions]
    assert "secret" in flags and "seed" not in flags
    for name, sub in commands.items():  # every flag of every command, beside the Python names
        for action in sub._actions:
            assert action.dest == "help" or action.dest in table, f"ppdm {name}: flag {action.dest!r} is not in the table"
    con = ppdm.duckdb.register(duckdb.connect())
    rows = con.sql(
        "SELECT function_name, parameters FROM duckdb_functions() "
        "WHERE function_name LIKE 'ppdm_%' AND function_type IN ('macro', 'table_macro')"
    ).fetchall()
    assert rows
    # SQL-only argument names: the value, the table macros' table/column names and bounds.
    sql_only = {"x", "tbl", "col", "low", "high", "counts", "observed_share"}
    for function_name, arguments in rows:
        for argument in arguments:
            assert argument not in RETIRED, f"{function_name}: retired name {argument!r}"
            assert argument in table | sql_only, f"{function_name}: argument {argument!r} is not in the table"
