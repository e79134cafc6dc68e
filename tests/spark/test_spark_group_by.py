"""dp_group_by on Spark is the Polars release bit for bit: every aggregate kind, public
groups and partition selection, with and without a privacy unit, at 1, 3 and 17
partitions in a random row order; bad input gets the Polars messages."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from spark_frames import PARTITIONS, fail_first_attempt, to_spark

import polars_ppdm as ppdm
import polars_ppdm.spark as ppdm_spark
from polars_ppdm import dp
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError

pytestmark = pytest.mark.spark

SECRET = "7c2e91d04fa3b85e16d9c07a3e5f28b4"  # not a guessable pattern (DP releases refuse those)
N = 900
BOUNDS = (0.0, 100.0)
# Public groups of (g, h): in an order of their own, one never seen in the data, one null.
PUBLIC = pl.DataFrame(
    {"g": ["c", "a", "z", None, "b"], "h": [1, 0, 2, 1, 2]}, schema={"g": pl.String, "h": pl.Int32}
)
AGGREGATES: dict[str, Any] = {
    "count": dp.count(),
    "count_units": dp.count_units(),
    "sum": dp.sum("x", bounds=BOUNDS),
    "mean": dp.mean("x", bounds=BOUNDS),
    "variance": dp.variance("x", bounds=BOUNDS),
    "std": dp.std("y", bounds=(-50, 50)),
    "quantile": dp.quantile("x", [0.25, 0.5, 0.9], bounds=BOUNDS),
    "median": dp.median("y", bounds=(-50, 50)),
}


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(29)
    g = rng.choice(["a", "b", "c", "d"], N).astype(object)
    g[rng.random(N) < 0.05] = None  # a null group value is a group
    return pl.DataFrame(
        {
            # ~7.5 rows per person over a few groups: both bounds bind.
            "person": rng.integers(0, 120, N),
            "name": [f"user-{i}" for i in rng.integers(0, 150, N)],
            "g": pl.Series(g, dtype=pl.String),
            "h": rng.integers(0, 3, N).astype(np.int32),
            "x": rng.normal(40, 15, N),
            "y": rng.integers(-60, 60, N),  # integers, some out of bounds (clamped)
        }
    )


def _same(spark_frame: Any, polars_frame: pl.DataFrame) -> None:
    got = pl.DataFrame(pl.from_arrow(spark_frame.toArrow()))
    assert_frame_equal(got, polars_frame)  # the same rows in the same order, the same bits


def _both(table: pl.DataFrame, sdf: Any, by: Any, aggregates: Any, **params: Any) -> pl.DataFrame:
    params = {"epsilon": 4.0, "secret": SECRET, **params}
    want = ppdm.dp_group_by(table, by, aggregates, **params)
    _same(ppdm_spark.dp_group_by(sdf, by, aggregates, **params), want)
    return want


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_every_aggregate_with_a_unit_and_public_groups(spark, table, partitions):
    sdf = to_spark(spark, table, partitions, seed=partitions)
    unit = {"privacy_unit": "person", "max_groups_contributed": 2, "max_rows_per_group": 2}
    want = _both(
        table, sdf, ["g", "h"], list(AGGREGATES.values()), public_groups=PUBLIC, intervals=True, **unit
    )
    assert want.select("g", "h").equals(PUBLIC)
    assert want.height == 5 and want.width > 20
    # The bounds bind: fewer rows are counted than the table has in those groups.
    exact = ppdm.dp_group_by(
        table, ["g", "h"], dp.count(), epsilon=1e6, public_groups=PUBLIC, secret=SECRET, **unit
    )
    assert 0 < exact["count"].sum() < table.join(PUBLIC, on=["g", "h"], nulls_equal=True).height


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_partition_selection_with_and_without_a_unit(spark, table, partitions):
    sdf = to_spark(spark, table, partitions, seed=partitions + 100)
    # A string unit; groups selected (and sorted by their keys, the null group last).
    unit = {"privacy_unit": "name", "max_groups_contributed": 3, "max_rows_per_group": 2}
    aggregates = [dp.count(), dp.mean("x", bounds=BOUNDS), dp.median("y", bounds=(-50, 50))]
    want = _both(table, sdf, "g", aggregates, delta=1e-4, **unit)
    assert want.height >= 3
    # Each row its own unit, two group columns, non-negative post-processing.
    aggregates = [dp.count_units(), dp.sum("x", bounds=BOUNDS), dp.std("x", bounds=BOUNDS)]
    want = _both(table, sdf, ["h", "g"], aggregates, delta=1e-5, non_negative=True, intervals=True)
    assert want.height >= 8


@pytest.mark.parametrize("kind", list(AGGREGATES))
def test_each_aggregate_alone(spark, table, kind):
    """Alone, a mean or variance draws a count of its own, a quantile its own scores."""
    partitions = PARTITIONS[list(AGGREGATES).index(kind) % len(PARTITIONS)]
    sdf = to_spark(spark, table, partitions, seed=7)
    unit = {"privacy_unit": "person", "max_groups_contributed": 3, "max_rows_per_group": 1}
    public = PUBLIC.select("g")
    _both(table, sdf, "g", AGGREGATES[kind], public_groups=public, intervals=True, **unit)


def test_the_gaussian_mechanism_and_a_retried_task(spark, table):
    flaky = fail_first_attempt(to_spark(spark, table, 3), after_rows=100)
    params = {"privacy_unit": "person", "max_groups_contributed": 2, "max_rows_per_group": 3}
    aggregates = [dp.count(), dp.sum("x", bounds=BOUNDS), dp.variance("x", bounds=BOUNDS)]
    params |= {"epsilon": None, "mechanism": "gaussian", "rho": 0.5, "public_groups": PUBLIC}
    _both(table, flaky, ["g", "h"], aggregates, **params)


def test_columns_named_like_the_helpers_give_the_same_bits(spark, table):
    """Spark's own names and Polars' helper names, a name Spark would read as a struct field."""
    names = {"person": "_unit", "g": "_g1", "h": "a.b", "x": "_grid0", "y": "_values0", "name": "__ppdm_rows"}
    renamed = table.rename(names)
    sdf = to_spark(spark, renamed, 3)
    aggregates = [dp.count(), dp.mean("_grid0", bounds=BOUNDS), dp.median("_values0", bounds=(-50, 50))]
    unit = {"privacy_unit": "_unit", "max_groups_contributed": 2, "max_rows_per_group": 2}
    _both(renamed, sdf, ["a.b", "_g1"], aggregates, delta=1e-4, **unit)


def test_the_accountant_is_charged_as_in_polars(spark, table):
    sdf = to_spark(spark, table, 3)
    params = {"epsilon": 1.0, "delta": 1e-6, "secret": SECRET}
    polars_acc, spark_acc = ppdm.BudgetAccountant(1.5, delta=1e-5), ppdm.BudgetAccountant(1.5, delta=1e-5)
    ppdm.dp_group_by(table, "g", dp.count(), accountant=polars_acc, **params)
    ppdm_spark.dp_group_by(sdf, "g", dp.count(), accountant=spark_acc, **params)
    assert (
        (spark_acc.spent, spark_acc.spent_delta) == (polars_acc.spent, polars_acc.spent_delta) == (1.0, 1e-6)
    )
    with pytest.raises(BudgetExceededError):  # refused before any Spark job
        ppdm_spark.dp_group_by(sdf, "g", dp.count(), accountant=spark_acc, **params)


def _nulled(column: str, value: Any) -> pl.Expr:
    return pl.when(pl.int_range(pl.len()) % 50 == 7).then(value).otherwise(pl.col(column)).alias(column)


@pytest.mark.parametrize(
    ("change", "by", "aggregates", "params"),
    [
        (None, "x", dp.count(), {"delta": 1e-6}),  # a float is no group key
        (None, "g", dp.sum("nope", bounds=BOUNDS), {"delta": 1e-6}),
        (None, "g", dp.sum("x", bounds=BOUNDS), {"public_groups": PUBLIC.select("g"), "delta": 1e-6}),
        (None, "g", dp.count(), {"privacy_unit": "g", "delta": 1e-6}),
        (None, "g", dp.count(), {"max_rows_per_group": 2, "delta": 1e-6}),
        (None, "g", dp.count(), {"delta": 1e-6, "non_negative": "yes"}),
        (None, "g", dp.count(), {"public_groups": PUBLIC.select(pl.col("h").alias("g"))}),
        (None, "g", dp.count(), {"mechanism": "gaussian", "epsilon": None, "rho": 0.5, "delta": 1e-6}),
        (
            _nulled("person", None),
            "g",
            dp.count(),
            {"privacy_unit": "person", "delta": 1e-6},
        ),  # on the executors
        (_nulled("x", float("nan")), "g", dp.median("x", bounds=BOUNDS), {"delta": 1e-6}),  # on the driver
        (_nulled("y", None), "g", dp.std("y", bounds=BOUNDS), {"privacy_unit": "person", "delta": 1e-6}),
    ],
)
def test_bad_input_gets_the_polars_message(spark, table, change, by, aggregates, params):
    frame = table if change is None else table.with_columns(change)
    params = {"epsilon": 1.0, "secret": SECRET, **params}
    acc_polars, acc_spark = ppdm.BudgetAccountant(5.0, delta=1e-3), ppdm.BudgetAccountant(5.0, delta=1e-3)
    with pytest.raises(InvalidParameterError) as polars_error:
        ppdm.dp_group_by(frame, by, aggregates, accountant=acc_polars, **params)
    with pytest.raises(InvalidParameterError) as spark_error:
        ppdm_spark.dp_group_by(to_spark(spark, frame, 3), by, aggregates, accountant=acc_spark, **params)
    # Polars adds the expression a UDF's error came from, on lines of its own.
    assert str(spark_error.value) == str(polars_error.value).split("\n")[0]
    assert acc_spark.spent == acc_polars.spent == 0  # refused before any charge


def test_a_polars_frame_is_refused(spark, table):
    """(Through the spark fixture: without PySpark the call says PySpark is missing.)"""
    with pytest.raises(InvalidParameterError, match=r"takes a pyspark\.sql\.DataFrame"):
        ppdm_spark.dp_group_by(table, "g", dp.count(), epsilon=1.0, delta=1e-6)
