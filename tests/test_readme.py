"""Every code block of README.md runs as written, in order, in one fresh directory.

The machinery (which fences run how, the ``# ->`` checks of shell lines, Spark blocks where
PySpark and Java exist) is tests/_docblocks.py, shared with tests/test_docs.py, which runs
every page of docs/ the same way. Runs against the source tree in ``make test`` and
against the installed wheel in CI (.ci/wheel.sh).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def _docblocks():
    # By path: the wheel leg runs this file with --import-mode=importlib, which puts no
    # tests folder on sys.path.
    name = "_docblocks"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("_docblocks.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


docblocks = _docblocks()
README = docblocks.ROOT / "README.md"


def test_the_readme_has_code_to_run():
    # The README's promise to a newcomer: one Polars example (with the data it reads), one
    # SQL and one pipeline, the install and the two commands; the rest is in docs/.
    kinds = [block.kind for block in docblocks.blocks(README)]
    assert set(kinds) <= {"python", "sql", "bash", "toml"}, kinds
    assert kinds.count("python") >= 2 and kinds.count("sql") >= 1 and kinds.count("toml") >= 1, kinds
    assert kinds.count("bash") >= 3, kinds  # the two commands, the install, the pipeline's run
    # Read in five minutes: what does not fit belongs in a page of docs/.
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 300, f"README.md has {lines} lines; move detail into docs/ (the site) instead"


def test_every_code_block_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = docblocks.Runner(monkeypatch.setenv)
    for block in docblocks.blocks(README):
        runner.run(block)
    assert os.environ.get("PPDM_SECRET"), "the README's set-up exports PPDM_SECRET"
    print(f"README blocks run: {runner.ran}; not run: {runner.skipped or 'none'}")
