"""The README's runnable Spark example runs in local mode and finds the Polars bits."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark" / "spark_example.py"


def test_the_spark_example_runs_and_matches_polars(spark, capsys):
    # On the tests' session: a JVM of its own cost 15 of the example's 19 s (its builder
    # lines are the only ones this leaves out), and main() leaves a session it was given running.
    spec = importlib.util.spec_from_file_location("spark_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main(spark)
    shown = capsys.readouterr().out
    assert "identical to Polars: True" in shown
    assert "DP histogram of income (epsilon 0.5; 0.5 of 1 left)" in shown
    assert not spark.sparkContext._jsc.sc().isStopped()
