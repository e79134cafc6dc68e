"""Packaging and set-up: one version source, py.typed, and the Makefile's install levels.

The wheel itself is built and installed in CI (.ci/wheel.sh); these tests check, without
installing anything, what the README promises about `make demo` and `make test`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import polars_ppdm as ppdm

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def test_the_version_has_one_source_the_module():
    assert "version" not in PYPROJECT["project"]
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "polars_ppdm/__init__.py"
    text = (ROOT / "polars_ppdm" / "__init__.py").read_text(encoding="utf-8")
    assert re.findall(r'^__version__ = "([^"]+)"$', text, re.M) == [ppdm.__version__]


def test_the_package_is_marked_typed_and_shipped_whole():
    assert (ROOT / "polars_ppdm" / "py.typed").is_file()
    wheel = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["polars_ppdm"]  # py.typed rides along with the package folder
    assert wheel["force-include"] == {"sql": "polars_ppdm/sql"}


def test_every_core_dependency_has_a_plain_lower_bound_for_the_minimums_leg():
    for dep in PYPROJECT["project"]["dependencies"]:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+>=[0-9][0-9.]*", dep), dep


def _project_copy(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    # The compiled kernels' sources: the .native stamp depends on them (not its build output).
    shutil.copytree(ROOT / "native", tmp_path / "native", ignore=shutil.ignore_patterns("target"))
    return tmp_path


def _make(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Not PYTHONDONTWRITEBYTECODE (it keeps pip compiling, test_pip_compiles_only_...).
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=folder, capture_output=True, text=True, env=env
    )


def _fake_python(tmp_path: Path, version: str) -> Path:
    """A stand-in interpreter that answers -V and the Makefile's version check like `version`."""
    major, minor = (int(part) for part in version.split(".")[:2])
    script = tmp_path / f"python{major}.{minor}"
    script.write_text(
        f"""#!/bin/sh
case "$1" in
  -V|--version) echo "Python {version}";;
  -c) exit {int((major, minor) < (3, 11))};;
  *) echo "unexpected: $*" >&2; exit 3;;
esac
"""
    )
    script.chmod(0o755)
    return script


@needs_make
@pytest.mark.parametrize("goal", ["demo", "test"])
def test_an_old_python_stops_before_a_venv_is_made(tmp_path, goal):
    folder = _project_copy(tmp_path)
    old = _fake_python(tmp_path, "3.10.14")
    done = _make(folder, goal, f"PYTHON={old}")
    assert done.returncode != 0
    assert "needs Python 3.11 or newer" in done.stderr and "Python 3.10.14" in done.stderr
    assert f"make {goal} PYTHON=python3.12" in done.stderr
    assert not (folder / ".venv").exists()


@needs_make
def test_a_missing_python_is_named(tmp_path):
    folder = _project_copy(tmp_path)
    done = _make(folder, "demo", "PYTHON=python-that-does-not-exist")
    assert done.returncode != 0
    assert "PYTHON=python-that-does-not-exist was not found" in done.stderr
    assert not (folder / ".venv").exists()


@needs_make
def test_demo_installs_the_core_only_and_test_the_test_stack(tmp_path):
    folder = _project_copy(tmp_path)
    demo = _make(folder, "-n", "demo", f"PYTHON={sys.executable}").stdout
    assert re.search(r"pip install --quiet --no-compile -e \.$", demo, re.M), demo
    assert "[test]" not in demo and "ppdm run" in demo
    test = _make(folder, "-n", "test", f"PYTHON={sys.executable}").stdout
    assert "-e '.[test,spark]'" in test and "pytest" in test


@needs_make
def test_pip_compiles_only_where_python_would_not_keep_what_it_compiles(tmp_path):
    """pip install --no-compile, except under PYTHONDONTWRITEBYTECODE: there no process
    writes what it compiles, so what pip compiles at install is all there ever is."""
    folder = _project_copy(tmp_path)
    assert "pip install --quiet --no-compile -e ." in _make(folder, "-n", "demo").stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    demo = subprocess.run(
        ["make", "--no-print-directory", "-n", "demo"],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
    ).stdout
    assert re.search(r"pip install --quiet -e \.$", demo, re.M), demo


@needs_make
def test_demo_and_test_share_one_venv_in_either_order(tmp_path):
    folder = _project_copy(tmp_path)
    venv = folder / ".venv"
    venv.mkdir()
    later = time.time() + 10
    for stamp in (".created", ".native", ".test", ".core"):
        (venv / stamp).touch()
        os.utime(venv / stamp, (later, later))
    # After `make test`, `make demo` installs nothing...
    demo = _make(folder, "-n", "demo").stdout
    assert "pip install" not in demo and "venv " not in demo, demo
    assert "ppdm run examples/survey/pipeline.toml" in demo, demo
    # ...and after `make demo` only, `make test` adds the test stack and nothing else.
    (venv / ".test").unlink()
    test = _make(folder, "-n", "test").stdout.splitlines()
    assert test[0] == ".venv/bin/python -m pip install --quiet --no-compile -e '.[test,spark]'"
    assert not any("venv " in line for line in test)
    # A changed pyproject.toml makes every level stale.
    os.utime(folder / "pyproject.toml", (later + 10, later + 10))
    assert "pip install --quiet --no-compile -e ." in _make(folder, "-n", "demo").stdout
