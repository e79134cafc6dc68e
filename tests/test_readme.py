"""Every code block of README.md runs as written, in order, in one fresh directory.

Python blocks share one namespace (as in a notebook); SQL blocks run in plain DuckDB
with no Python functions registered (``.read sql/NAME`` reads the installed macro file);
TOML blocks are pipeline files: the first line names the file (``# nightly.toml ...``),
the test writes the block there and validates it with the pipeline loader; shell blocks
are commands, of which the test runs the ``export`` and ``ppdm ...`` lines (with the
``ppdm`` command of this interpreter; each must exit 0, and a ``# -> TEXT`` comment is
what it prints: every part of TEXT between ``...`` must appear in its output, in order)
and checks that the ``make`` targets exist.
Runs against the source tree in ``make test`` and against the installed wheel in CI.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import polars_ppdm as ppdm

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(README.read_text(encoding="utf-8"))]


def test_the_readme_has_code_to_run():
    kinds = [kind for kind, _ in blocks()]
    assert set(kinds) <= {"python", "sql", "bash", "toml"}, kinds
    assert kinds.count("python") >= 8 and kinds.count("sql") >= 1 and kinds.count("toml") >= 1


def _ppdm(arguments: list[str]) -> subprocess.CompletedProcess[str]:
    """The ppdm command of this interpreter (the wheel's in CI, the source tree's here)."""
    return subprocess.run(
        [sys.executable, "-m", "polars_ppdm", *arguments], capture_output=True, text=True, check=False
    )


def _check_printed(line: str, printed: str, expected: str) -> None:
    at = 0
    for part in (p.strip() for p in expected.split("...")):
        found = printed.find(part, at)
        assert found >= 0, f"README: {line!r} printed {printed!r}, which lacks {part!r} (in this order)"
        at = found + len(part)


def _run_shell(code: str, env: dict[str, str]) -> None:
    makefile = (README.parent / "Makefile").read_text(encoding="utf-8")
    for raw in code.splitlines():
        line, _, comment = raw.partition("#")
        line = line.strip()
        if not line:
            continue
        if line.startswith("make "):
            target = shlex.split(line)[1]
            assert re.search(rf"^{target}:", makefile, re.M), f"README: no make target {target!r}"
            continue
        if line.startswith("ppdm "):
            done = _ppdm(shlex.split(line)[1:])
            assert done.returncode == 0, f"README: {line!r} exited {done.returncode}: {done.stderr}"
            if comment.strip().startswith("->"):
                _check_printed(line, done.stdout, comment.strip()[2:])
            continue
        match = re.fullmatch(r"export (\w+)=\$\((.*)\)", line)
        assert match, f"README shell line the test does not know how to run: {line!r}"
        command = shlex.split(match.group(2))
        assert command[0] == "ppdm", line
        out = _ppdm(command[1:])
        assert out.returncode == 0, out.stderr
        env[match.group(1)] = out.stdout.strip()


def _write_pipeline(code: str) -> None:
    """A pipeline file of the README: written under the name its first line gives, then
    loaded (validated) as ``ppdm run`` loads it."""
    from polars_ppdm.jobs import load_pipeline

    match = re.match(r"# (\S+\.toml)\b", code)
    assert match, f"README: a TOML block's first line names its file ('# NAME.toml'): {code.splitlines()[0]!r}"
    path = Path(match.group(1))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code, encoding="utf-8")
    load_pipeline(path)


def _run_sql(code: str) -> None:
    sql_files = {path.name: path for path in ppdm.duckdb.sql_files()}
    con = duckdb.connect()
    statements = []
    for line in code.splitlines():
        if line.startswith(".read "):
            name = Path(line.split()[1]).name
            con.execute(sql_files[name].read_text(encoding="utf-8"))
        else:
            statements.append(line)
    for statement in "\n".join(statements).split(";"):
        if statement.strip():
            con.execute(statement).fetchall()


def _spark_missing() -> str | None:
    """Why the README's Spark blocks cannot run here (None: they can)."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("pyspark") is None:
        return "PySpark is not installed (pip install 'polars_ppdm[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed"
    return None


def test_every_code_block_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env: dict[str, str] = {}
    namespace: dict[str, object] = {"__name__": "readme"}
    ran = {"python": 0, "sql": 0, "bash": 0, "toml": 0}
    skipped = []
    for number, (kind, code) in enumerate(blocks(), start=1):
        if kind == "python" and code.startswith("# Spark:"):
            # Spark blocks run where PySpark and Java are (make test, CI); elsewhere the
            # test says so. The local session's workers must run this interpreter.
            why = _spark_missing()
            if why:
                skipped.append(f"block {number} (Spark): {why}")
                continue
            monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
        try:
            if kind == "bash":
                _run_shell(code, env)
                for name, value in env.items():
                    monkeypatch.setenv(name, value)
            elif kind == "toml":
                _write_pipeline(code)
            elif kind == "python":
                exec(compile(code, f"README.md block {number}", "exec"), namespace)
            else:
                _run_sql(code)
        except Exception as err:
            pytest.fail(f"README.md code block {number} ({kind}) failed: {type(err).__name__}: {err}")
        ran[kind] += 1
    assert os.environ.get("PPDM_SECRET"), "the README's set-up exports PPDM_SECRET"
    print(f"README blocks run: {ran}; not run: {skipped or 'none'}")
