"""Run the code blocks of a Markdown page as written: the machinery of tests/test_readme.py
(README.md) and tests/test_docs.py (every page of docs/).

A block's fence says how it runs (the table is in docs/architecture.md, "Docs that run"):

- ``python``: Python; a page's blocks share one namespace, as in a notebook.
- ``python title="Spark: ..."``: Python where PySpark and Java are installed (``make test``,
  CI's Spark tier); elsewhere it is skipped and the reason reported.
- ``sql``: plain DuckDB with no Python functions registered; ``.read sql/NAME`` reads the
  installed macro file.
- ``toml``: a pipeline file; its first line names the file (``# nightly.toml ...``), the
  block is written there and validated by the pipeline loader.
- ``bash``: commands.  ``export NAME=$(ppdm ...)`` and ``ppdm ...`` lines run (with the
  ``ppdm`` command of this interpreter; each must exit 0, and a ``# -> TEXT`` comment is
  what it prints: every part of TEXT between ``...`` must appear in its output, in
  order); ``make TARGET`` lines must name a Makefile target; ``pip install`` lines must
  name extras that pyproject.toml declares.
- ``text``: output, a formula or a diagram: never run.

Any other fence is an error, so a block cannot silently go untested.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"python", "sql", "bash", "toml", "text"}
# ```lang, optionally followed by attributes (title="..."), at the start of a line.
OPENING = re.compile(r"^```(?P<kind>\w*)(?P<info>[^\n`]*)$")
SPARK_TITLE = re.compile(r'title="Spark\b')


@dataclass(frozen=True)
class Block:
    page: str
    number: int
    kind: str
    info: str
    code: str

    @property
    def spark(self) -> bool:
        return self.kind == "python" and bool(SPARK_TITLE.search(self.info))

    def __str__(self) -> str:
        return f"{self.page} code block {self.number} ({self.kind}{' spark' if self.spark else ''})"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, in order."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    index = 0
    while index < len(lines):
        match = OPENING.match(lines[index])
        if not match:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        assert end < len(lines), f"{name}: a code block opened on line {index + 1} is never closed"
        code = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(Block(name, len(found) + 1, match["kind"], match["info"].strip(), code))
        index = end + 1
    return found


def spark_missing() -> str | None:
    """Why a Spark block cannot run here (None: it can)."""
    if importlib.util.find_spec("pyspark") is None:
        return "PySpark is not installed (pip install 'polars_ppdm[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed"
    return None


def _ppdm(arguments: list[str]) -> subprocess.CompletedProcess[str]:
    """The ppdm command of this interpreter (the wheel's in CI, the source tree's here)."""
    return subprocess.run(
        [sys.executable, "-m", "polars_ppdm", *arguments], capture_output=True, text=True, check=False
    )


def _check_printed(line: str, printed: str, expected: str) -> None:
    at = 0
    for part in (p.strip() for p in expected.split("...")):
        found = printed.find(part, at)
        assert found >= 0, f"{line!r} printed {printed!r}, which lacks {part!r} (in this order)"
        at = found + len(part)


def _check_pip(line: str) -> None:
    """A ``pip install`` line of the docs installs this project, with extras it declares."""
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ]
    )
    for target in shlex.split(line)[2:]:
        assert "polars_ppdm" in target, f"{line!r}: installs something other than polars_ppdm"
        named = re.search(r"\[([\w,]+)\]", target)
        unknown = set(named.group(1).split(",")) - extras if named else set()
        assert not unknown, (
            f"{line!r}: no extra {sorted(unknown)} in pyproject.toml (it has {sorted(extras)})"
        )


def run_shell(code: str, env: dict[str, str]) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for raw in code.splitlines():
        line, _, comment = raw.partition("#")
        line = line.strip()
        if not line:
            continue
        if line.startswith("make "):
            target = shlex.split(line)[1]
            assert re.search(rf"^{target}:", makefile, re.M), f"no make target {target!r}"
            continue
        if line.startswith("pip install "):
            _check_pip(raw.split(" #")[0].strip())
            continue
        if line.startswith("ppdm "):
            done = _ppdm(shlex.split(line)[1:])
            assert done.returncode == 0, f"{line!r} exited {done.returncode}: {done.stderr}"
            if comment.strip().startswith("->"):
                _check_printed(line, done.stdout, comment.strip()[2:])
            continue
        match = re.fullmatch(r"export (\w+)=\$\((.*)\)", line)
        assert match, f"a shell line the test does not know how to run: {line!r}"
        command = shlex.split(match.group(2))
        assert command[0] == "ppdm", line
        out = _ppdm(command[1:])
        assert out.returncode == 0, out.stderr
        env[match.group(1)] = out.stdout.strip()


def write_pipeline(code: str) -> None:
    """A pipeline file: written under the name its first line gives, then loaded (validated)
    as ``ppdm run`` loads it."""
    from polars_ppdm.jobs import load_pipeline

    match = re.match(r"# (\S+\.toml)\b", code)
    assert match, f"a TOML block's first line names its file ('# NAME.toml'): {code.splitlines()[0]!r}"
    path = Path(match.group(1))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code, encoding="utf-8")
    load_pipeline(path)


def run_sql(code: str) -> None:
    import polars_ppdm as ppdm

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


class Runner:
    """Runs blocks in order in the current directory, Python blocks in one namespace;
    exported variables go to the environment through ``setenv`` (pytest's monkeypatch)."""

    def __init__(self, setenv) -> None:
        self.setenv = setenv
        self.namespace: dict[str, object] = {"__name__": "docs"}
        self.env: dict[str, str] = {}
        self.ran: dict[str, int] = dict.fromkeys(sorted(KINDS), 0)
        self.skipped: list[str] = []

    def run(self, block: Block) -> None:
        assert block.kind in KINDS, (
            f"{block}: the fence must be one of {sorted(KINDS)} (docs/architecture.md)"
        )
        if block.kind == "text":
            self.ran["text"] += 1
            return
        if block.spark:
            why = spark_missing()
            if why:
                self.skipped.append(f"{block}: {why}")
                return
            # The local session's workers must run this interpreter.
            self.setenv("PYSPARK_PYTHON", sys.executable)
        try:
            if block.kind == "bash":
                run_shell(block.code, self.env)
                for name, value in self.env.items():
                    self.setenv(name, value)
            elif block.kind == "toml":
                write_pipeline(block.code)
            elif block.kind == "python":
                exec(compile(block.code, str(block), "exec"), self.namespace)
            else:
                run_sql(block.code)
        except Exception as err:
            msg = f"{block} failed: {type(err).__name__}: {err}"
            raise AssertionError(msg) from err
        self.ran[block.kind] += 1
