"""The README's runnable Spark example runs in local mode and finds the Polars bits."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark" / "spark_example.py"


def test_the_spark_example_runs_and_matches_polars(spark, capsys, monkeypatch):
    # Run as a script, on the tests' session: its builder's getOrCreate() returns the running
    # session (a JVM of its own cost 15 of the example's 19 s), and its spark.stop() at the
    # end is recorded instead of stopping the session the other tests use.
    stopped = []
    monkeypatch.setattr(type(spark), "stop", lambda session: stopped.append(session))
    runpy.run_path(str(EXAMPLE), run_name="__main__")  # a mismatch would sys.exit
    shown = capsys.readouterr().out
    assert "identical to Polars: True" in shown
    assert "DP histogram of income (epsilon 0.5; 0.5 of 1 left)" in shown
    assert stopped == [spark]
