"""Spark's Arrow batch settings: the library's own actions run under its own and give the
session's back; a lazy result run under them has the Polars bits."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from spark_frames import to_polars, to_spark

import polars_ppdm as ppdm
import polars_ppdm.spark as ppdm_spark
from polars_ppdm.spark._engine import ARROW_SETTINGS

pytestmark = pytest.mark.spark

SECRET = ppdm.Secret.for_tests(31)
ROWS, BYTES = "spark.sql.execution.arrow.maxRecordsPerBatch", "spark.sql.execution.arrow.maxBytesPerBatch"


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    n = 3_000
    return pl.DataFrame(
        {"id": np.arange(n, dtype=np.int64), "a": rng.random(n) < 0.4, "x": rng.normal(50, 15, n)}
    )


def test_settings_hold_inside_the_block_and_are_restored_after(spark):
    before = {k: spark.conf.get(k) for k in ARROW_SETTINGS}
    with ppdm_spark.arrow_batches(spark):
        assert {k: spark.conf.get(k) for k in ARROW_SETTINGS} == ARROW_SETTINGS
    assert {k: spark.conf.get(k) for k in ARROW_SETTINGS} == before
    with pytest.raises(ZeroDivisionError), ppdm_spark.arrow_batches(spark, {ROWS: "5"}):
        assert spark.conf.get(ROWS) == "5"
        _ = 1 / 0
    assert spark.conf.get(ROWS) == before[ROWS]  # restored on an error too


def test_a_library_action_leaves_the_session_settings_as_they_were(spark, table):
    before = {k: spark.conf.get(k) for k in (ROWS, BYTES)}
    params = dict(bounds=(0.0, 100.0), bins=10, epsilon=1.0, secret=SECRET)
    got = ppdm_spark.dp_histogram(to_spark(spark, table, 3), "x", **params)
    want = ppdm.dp_histogram(table, "x", **params)
    assert {k: spark.conf.get(k) for k in (ROWS, BYTES)} == before
    assert to_polars(got, by="x_bin")["count"].to_list() == want.sort("x_bin")["count"].to_list()


@pytest.mark.parametrize("rows", ["7", "100000"])
def test_a_lazy_result_has_the_polars_bits_under_any_batch_size(spark, table, rows):
    want = ppdm.rr_disguise(table, ["a"], p=0.8, secret=SECRET, key="id").sort("id")
    lazy = ppdm_spark.rr_disguise(to_spark(spark, table, 3), ["a"], p=0.8, secret=SECRET, key="id")
    with ppdm_spark.arrow_batches(spark, {**ARROW_SETTINGS, ROWS: rows}):
        got = to_polars(lazy, by="id")
    assert got["a"].to_list() == want["a"].to_list()
