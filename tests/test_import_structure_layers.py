"""The pipeline's words sit below both of their users: :mod:`polars_ppdm.steps` (the step
vocabulary) and :mod:`polars_ppdm._durable` (atomic writes) are imported by
:mod:`polars_ppdm.jobs` and :mod:`polars_ppdm.reporting`; the report never imports the
job (``jobs/`` calls ``reporting/``, never the other way).

Read from the source (ast), every import counted, those inside functions too (a lazy
import hides a layer's breach from Python at import time, not from the reader).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import polars_ppdm

ROOT = Path(polars_ppdm.__file__).parent
JOBS = "polars_ppdm.jobs"
REPORTING = "polars_ppdm.reporting"
VOCABULARY = "polars_ppdm.steps"


def _name(path: Path) -> str:
    parts = ["polars_ppdm", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _known(module: str) -> str:
    """The package module ``module`` names, or the package that holds the name."""
    while module not in MODULES and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def _imports(name: str) -> set[str]:
    """Every module of the package that ``name`` imports, anywhere in its source."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(_known(alias.name) for alias in node.names if _within(alias.name, "polars_ppdm"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from .x import y, from .. import z
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            if not _within(module, "polars_ppdm"):
                continue
            for alias in node.names:  # from polars_ppdm import jobs: the module jobs
                submodule = f"{module}.{alias.name}"
                found.add(submodule if submodule in MODULES else _known(module))
    found.discard(name)
    return found


GRAPH = {name: _imports(name) for name in MODULES}


def _reachable(start: str) -> set[str]:
    """Every package module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        for target in GRAPH[stack.pop()]:
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def test_the_reader_sees_imports_inside_functions():
    # jobs/report.py calls the report from inside a function only, and the report reads
    # the vocabulary lazily (pydantic is imported when a report is made, not before).
    assert REPORTING in GRAPH["polars_ppdm.jobs.report"]
    assert VOCABULARY in GRAPH[REPORTING]


def test_no_reporting_module_imports_the_jobs():
    reporting = [name for name in MODULES if _within(name, REPORTING)]
    assert len(reporting) >= 5
    breaches = {
        name: sorted(m for m in GRAPH[name] if _within(m, JOBS) or m == "polars_ppdm.cli")
        for name in reporting
    }
    assert not {name: jobs for name, jobs in breaches.items() if jobs}


@pytest.mark.parametrize("lower", [VOCABULARY, "polars_ppdm._durable"])
def test_the_shared_modules_import_neither_jobs_nor_reporting(lower):
    assert lower in MODULES
    assert not sorted(m for m in GRAPH[lower] if _within(m, JOBS) or _within(m, REPORTING))


@pytest.mark.parametrize("start", [VOCABULARY, "polars_ppdm._durable", REPORTING])
def test_nothing_below_the_jobs_reaches_them_through_other_modules(start):
    # Not even through a third module: what the report and the vocabulary import, and all
    # that imports in turn, stays clear of jobs/ (and of the command line, which runs them).
    reached = _reachable(start)
    assert not sorted(m for m in reached if _within(m, JOBS) or m == "polars_ppdm.cli")
    if start != REPORTING:
        assert not sorted(m for m in reached if _within(m, REPORTING))


def test_the_jobs_use_the_same_words_and_writes_not_twins():
    from polars_ppdm import _durable, steps
    from polars_ppdm.jobs import atomic, config

    for name in steps.__all__:
        assert getattr(config, name) is getattr(steps, name), name
    for name in ("atomic_path", "remove_stale", "replace_whole", "write_bytes_atomic"):
        assert getattr(atomic, name) is getattr(_durable, name), name


def test_kernels_import_no_dataframe_library_at_module_level():
    """DESIGN.md: kernels are NumPy and know nothing of dataframes.  A kernel may borrow
    Polars' sort inside a function (kernels/sorting.py); importing a kernel never loads
    Polars, DuckDB, PyArrow or Spark."""
    kernels = ROOT / "kernels"
    banned = {"polars", "duckdb", "pyarrow", "pyspark", "pandas"}
    found = []
    for path in sorted(kernels.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in banned]
    assert found == [], found
