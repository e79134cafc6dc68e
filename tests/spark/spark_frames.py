"""Frames moved between Polars and Spark for the tests, in random row order."""

from __future__ import annotations

from typing import Any

import polars as pl

#: The partition counts every bit-identity test runs with.
PARTITIONS = [1, 3, 17]


def to_spark(spark: Any, frame: pl.DataFrame, partitions: int, *, seed: int = 0) -> Any:
    """``frame`` as a Spark DataFrame of ``partitions`` partitions, rows in a random order."""
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
    sdf = spark.createDataFrame(shuffled.to_arrow(compat_level=pl.CompatLevel.oldest()))
    return sdf.repartition(partitions)


def to_polars(sdf: Any, *, by: str | list[str]) -> pl.DataFrame:
    """A Spark result as a Polars frame sorted by ``by`` (Spark has no row order)."""
    return pl.from_arrow(sdf.toArrow()).sort(by)  # type: ignore[return-value]


def fail_first_attempt(sdf: Any, *, after_rows: int = 0) -> Any:
    """``sdf`` unchanged, except that the first attempt of every task fails after passing
    ``after_rows`` rows on (as an executor lost mid-task would): Spark runs each task again
    (the session allows one retry), and the result must not change."""
    from pyspark import TaskContext

    def run(batches: Any) -> Any:
        first = TaskContext.get().attemptNumber() == 0
        passed = 0
        for batch in batches:
            if first and passed >= after_rows:
                msg = "a task that fails on its first attempt (test)"
                raise RuntimeError(msg)
            passed += batch.num_rows
            yield batch
        if first and passed < after_rows:  # a short partition fails all the same
            msg = "a task that fails on its first attempt (test)"
            raise RuntimeError(msg)

    return sdf.mapInArrow(run, sdf.schema)
