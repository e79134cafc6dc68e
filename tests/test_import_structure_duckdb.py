"""The modules of :mod:`polars_ppdm.duckdb` import each other in one direction only.

Read from the source (ast), every import counted, those inside functions too (a lazy
import hides a circle from Python, not from the reader): no module may reach itself
through the imports of package modules, so no two modules import each other's names
(private ones included), and the helpers both UDF families use live in one module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import polars_ppdm.duckdb

PACKAGE = "polars_ppdm.duckdb"
ROOT = Path(polars_ppdm.duckdb.__file__).parent
MODULES = {path.stem: path for path in sorted(ROOT.glob("*.py"))}


def _imports(name: str) -> dict[str, set[str]]:
    """The package modules ``name`` imports, each with the names it takes from it."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    found.setdefault(alias.name.removeprefix(PACKAGE).lstrip(".") or "__init__", set())
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x / from .x import y
                base = PACKAGE if node.level == 1 else None
                assert base, f"{name}: an import above the package ({'.' * node.level}{node.module})"
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            if module == PACKAGE:
                for alias in node.names:  # from polars_ppdm.duckdb import <module or name>
                    target = alias.name if alias.name in MODULES else "__init__"
                    found.setdefault(target, set()).add(alias.name)
            elif module.startswith(PACKAGE + "."):
                target = module.removeprefix(PACKAGE + ".").split(".")[0]
                found.setdefault(target, set()).update(alias.name for alias in node.names)
    found.pop(name, None)
    return found


GRAPH = {name: _imports(name) for name in MODULES}


def _circle_from(start: str) -> list[str] | None:
    """A path of imports from ``start`` back to itself, or None."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for target in GRAPH.get(node, {}):
            if target == start:
                return [*path, start]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def _reachable(start: str) -> set[str]:
    """Every package module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        for target in GRAPH.get(stack.pop(), {}):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def test_the_package_has_the_modules_it_documents():
    assert {"__init__", "_shared", "scalar", "group_by", "bulk", "spiral", "macros"} <= set(MODULES)


def test_no_module_imports_itself_through_others():
    circles = [circle for name in MODULES if (circle := _circle_from(name))]
    assert not circles, f"import circles in {PACKAGE}: {[' -> '.join(c) for c in circles]}"


def test_no_two_modules_import_each_others_names():
    pairs = [
        (a, sorted(names), b, sorted(GRAPH[b][a]))
        for a in GRAPH
        for b, names in GRAPH[a].items()
        if a in GRAPH.get(b, {})
    ]
    assert not pairs, f"modules importing each other: {pairs}"


def test_private_names_come_only_from_modules_that_import_nothing_back():
    """A module may take another's private name (tests and benchmarks do), never from a
    module that depends on it: the helpers both sides need belong in ``_shared``."""
    for name, targets in GRAPH.items():
        for target, names in targets.items():
            private = sorted(n for n in names if n.startswith("_") and n not in MODULES)
            if private:
                assert name not in _reachable(target), (
                    f"{name} takes {private} from {target}, which imports {name}"
                )


def test_the_shared_helpers_import_no_other_module_of_the_package():
    assert GRAPH["_shared"] == {}


def test_no_function_is_defined_in_two_modules():
    """One home per helper: no twin of a function under the same name in two modules."""
    homes: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                homes.setdefault(node.name, []).append(name)
    twins = {fn: where for fn, where in homes.items() if len(where) > 1}
    assert not twins, f"defined in more than one module: {twins}"


def test_the_old_group_by_module_is_gone():
    """``polars_ppdm.duckdb_group_by`` was private plumbing; its UDFs live in ``group_by``."""
    assert not (ROOT.parent / "duckdb_group_by.py").exists()
    assert not (ROOT.parent / "duckdb.py").exists()
