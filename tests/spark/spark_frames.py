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
