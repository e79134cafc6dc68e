"""Smoke check of the installed wheel: run by the wheel venv's python, outside the tree.

Usage: python -P .ci/wheel_smoke.py WHEEL SOURCE_TREE

Checks that polars_ppdm imports from site-packages (not the checkout), that the wheel
carries the sql/ macros and py.typed and nothing but the package, that the version is
the same in the metadata, the module and ``ppdm --version``, and that the console script,
the DuckDB macros and the main job run.
"""

from __future__ import annotations

import importlib.metadata
import math
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

wheel, source = Path(sys.argv[1]), Path(sys.argv[2]).resolve()
checks: list[str] = []


def check(condition: bool, what: str) -> None:
    if not condition:
        sys.exit(f"wheel smoke: FAILED: {what}")
    checks.append(what)


import duckdb  # noqa: E402

import polars_ppdm as ppdm  # noqa: E402

package = Path(ppdm.__file__).resolve().parent
site = Path(sysconfig.get_paths()["purelib"]).resolve()
check(package.is_relative_to(site) and not package.is_relative_to(source), f"imported from {package}")

names = zipfile.ZipFile(wheel).namelist()
tops = {name.split("/", 1)[0] for name in names}
check(
    tops == {"polars_ppdm", f"polars_ppdm-{ppdm.__version__}.dist-info"},
    f"the wheel holds the package and its metadata only: {sorted(tops)}",
)
check("polars_ppdm/py.typed" in names, "py.typed is in the wheel")
macros = sorted(p.name for p in (source / "sql").glob("*.sql"))
shipped = sorted(p.name for p in ppdm.duckdb.sql_files())
check(bool(macros) and shipped == macros, f"the {len(macros)} sql/ macros are in the wheel")
check(all(p.resolve().is_relative_to(package) for p in ppdm.duckdb.sql_files()), "macros read from the wheel")

version = importlib.metadata.version("polars_ppdm")
check(version == ppdm.__version__, f"metadata version {version} == polars_ppdm.__version__")
ppdm_exe = str(Path(sys.executable).parent / "ppdm")
out = subprocess.run([ppdm_exe, "--version"], capture_output=True, text=True, check=True).stdout
# The wheel installs no compiled kernels (native/ is a package of its own): the pure ones serve.
check(out.strip() == f"ppdm {version} (pure-Python kernels)", f"ppdm --version prints {out.strip()!r}")
made = subprocess.run([ppdm_exe, "secret", "--bits", "128"], capture_output=True, text=True, check=True)
check(len(made.stdout.strip()) == 32, "ppdm secret --bits 128 prints 32 hex digits")
rules = subprocess.run(
    [ppdm_exe, "rules", "--generated", "--generated-rows", "2000", "--secret", "1"],
    capture_output=True,
    text=True,
    check=True,
)
check("F1" in rules.stdout, "ppdm rules runs from the wheel")

con = ppdm.duckdb.register(duckdb.connect())
epsilon = con.execute("SELECT ppdm_rr_epsilon(0.75)").fetchall()[0][0]
check(math.isclose(epsilon, math.log(3)), "ppdm.duckdb.register loads the macros")

print("\n".join(f"  ok  {what}" for what in checks))
print(f"wheel smoke: {len(checks)} passed, 0 failed")
