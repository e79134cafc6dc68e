"""pytest plugin for the wheel leg: refuse to run unless polars_ppdm is the installed wheel.

``python -m pytest`` and pytest's default import mode can put the source tree on
``sys.path``; then a test "of the wheel" would quietly test the checkout instead.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest


def _installed() -> Path:
    import polars_ppdm

    here = Path(polars_ppdm.__file__).resolve().parent
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    if not here.is_relative_to(site):
        msg = f"polars_ppdm was imported from {here}, not from the installed wheel in {site}"
        raise pytest.UsageError(msg)
    return here


def pytest_configure(config: pytest.Config) -> None:
    _installed()


def pytest_report_header(config: pytest.Config) -> str:
    import polars_ppdm

    return f"polars_ppdm {polars_ppdm.__version__} from {_installed()} (the installed wheel)"
