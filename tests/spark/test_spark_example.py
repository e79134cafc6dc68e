"""The README's runnable Spark example runs in local mode and finds the Polars bits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark" / "spark_example.py"


def test_the_spark_example_runs_and_matches_polars(spark):
    # `spark` only for its skip when PySpark or Java is absent: the example starts its own JVM.
    # Its JVM with the JIT's first tier only, as the tests' session (tests/spark/conftest.py).
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "JDK_JAVA_OPTIONS": "-XX:TieredStopAtLevel=1"}
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "identical to Polars: True" in done.stdout
    assert "DP histogram of income (epsilon 0.5; 0.5 of 1 left)" in done.stdout
