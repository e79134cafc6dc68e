"""A local Spark session for the Spark tests (``local[2]``), and frames moved between engines.

The tests skip, with the reason printed, when PySpark or Java is absent; CI has both and
runs them (.ci/run installs Java when it is missing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest


def _java_problem() -> str | None:
    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if os.environ.get("JAVA_HOME") else None
    java = java or shutil.which("java")
    if java is None:
        return "Java is not installed (PySpark needs a JVM: Java 17 or 21); `apt-get install openjdk-17-jre-headless`"
    done = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"`java -version` failed: {done.stderr.strip()[:200]}"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local session of two cores for the whole run (starting a JVM costs ~5 s).

    ``local[2,2]``: two cores, and a failed task is tried once more (plain ``local[2]``
    gives up at the first failure), so the retry tests can fail a task on purpose."""
    pytest.importorskip("pyspark", reason="PySpark is not installed: pip install 'polars_ppdm[spark]'")
    problem = _java_problem()
    if problem:
        pytest.skip(f"Spark tests need Java: {problem}")
    from pyspark.sql import SparkSession

    # The executors' Python must be this one (with polars_ppdm), not the first python3 on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("polars_ppdm tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        # Small Arrow batches: every test frame crosses several batches per partition.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "97")
        .config("spark.driver.memory", "1g")
        # The JIT's first tier only: the tests' jobs are many and small, and the optimising
        # compiler's work on them never paid back (test_spark_dp + test_spark_rows: 85-92 ->
        # 58-59 s of CPU, 51-55 -> 43 s of wall time). The same bits: the JIT changes no result.
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
