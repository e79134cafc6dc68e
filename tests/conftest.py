from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import polars_ppdm as ppdm

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

# The tiers (Makefile, .ci/run): these folders and files belong to a tier as a whole, so
# they are marked here, and a new test in one of them lands in its tier with no decorator.
# `make test` runs what none of the tier markers select; .ci/tiers_check.py proves that
# every collected test runs in some leg of CI.
_TESTS = Path(__file__).resolve().parent
TIER_OF_PATH = {
    "spark": "spark",  # a local Spark session (JVM)
    "fuzz": "fuzz",  # Hypothesis; CI's fuzz leg runs it again under the slow profile
    "test_report_browser.py": "browser",  # headless Chromium
    "test_notebooks.py": "notebook",  # a Jupyter kernel per notebook
    "test_pipeline_kill.py": "kill",  # SIGKILL of 4-million-row runs
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(item.path)
        if not path.is_relative_to(_TESTS):
            continue  # the package's doctests: the fast tier
        tier = TIER_OF_PATH.get(path.relative_to(_TESTS).parts[0])
        if tier is not None:
            item.add_marker(tier)


@pytest.fixture
def shared_data() -> Path:
    """The shared real data sets (../shared/data); tests skip when it is absent."""
    if not DATA.is_dir():
        pytest.skip(f"shared data folder {DATA} is absent")
    return DATA


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the polars_ppdm functions and macros registered."""
    return ppdm.duckdb.register(duckdb.connect())
