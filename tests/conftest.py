from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import polars_ppdm as ppdm

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


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
