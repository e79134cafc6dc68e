from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, settings

import polars_ppdm as ppdm

# Hypothesis profiles (issue 14's fuzz suite, tests/fuzz/): "default" for the normal run,
# "slow" with many more examples for CI's fuzz leg; HYPOTHESIS_PROFILE picks one. The
# deadline flags a hang or a pathological slowdown in one example.
_FUZZ_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("default", max_examples=40, deadline=5_000, suppress_health_check=_FUZZ_HEALTH)
settings.register_profile("slow", max_examples=250, deadline=20_000, suppress_health_check=_FUZZ_HEALTH)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

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
