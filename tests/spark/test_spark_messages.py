"""Spark's refusals hold no data either (``tests/test_messages_hold_no_data.py`` for the
other engines): two neighbouring tables -- another constant value, more nulls, other
extremes -- give the very same message, the Polars one, without the value that tells
them apart.  Before (d30275b) Spark said "is constant (42.125)", "holds 2 NaN or infinite
value(s)", "spans -1e+308 to 1e+308" and "has 2 null value(s)"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest
from spark_frames import to_spark

import polars_ppdm as ppdm
import polars_ppdm.spark as ppdm_spark
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.spark import ecdf as spark_ecdf

SECRET = ppdm.Secret.for_tests(5)


def _frame(values: list[float | None], ids: list[int | None] | None = None) -> pl.DataFrame:
    ids = list(range(len(values))) if ids is None else ids
    return pl.DataFrame({"id": ids, "x": values}, schema={"id": pl.Int64, "x": pl.Float64})


def _message(call: Callable[[], Any]) -> str:
    with pytest.raises(InvalidParameterError) as refused:
        out = call()
        if not isinstance(out, pl.DataFrame) and hasattr(out, "collect"):
            out.collect()
    return str(refused.value)


ECDF_NEIGHBOURS = {
    "a constant column": (_frame([42.125] * 6), _frame([7.75] * 5 + [None]), ("42.125", "7.75")),
    "NaN and infinities": (
        _frame([1.0, float("nan"), 3.0, 4.0]),
        _frame([float("nan"), float("inf"), 3.0, float("-inf")]),
        (),
    ),
    "fewer than 2 values": (_frame([None, 2.5, None]), _frame([None, None, None]), ("2.5",)),
    "a range beyond float64": (_frame([-1e308, 0.0, 1e308]), _frame([-9e307, 1.7e308, 5.0]), ("e+30",)),
    "null keys": (
        _frame([1.0, 2.0, 3.0, 4.0], [1, None, 3, 4]),
        _frame([1.0, 2.0, 3.0, 4.0], [None, None, 3, None]),
        (),
    ),
}


@pytest.mark.parametrize("case", list(ECDF_NEIGHBOURS))
def test_ecdf_refusals_are_the_same_for_neighbouring_tables(spark, case):
    first, second, hidden = ECDF_NEIGHBOURS[case]
    messages = [
        _message(
            lambda t=t: spark_ecdf.ecdf_resample(to_spark(spark, t, 2), "x", bins=3, secret=SECRET, key="id")
        )
        for t in (first, second)
    ]
    assert messages[0] == messages[1]
    assert messages[0] == _message(lambda: ppdm.ecdf_resample(first, "x", bins=3, secret=SECRET, key="id"))
    assert not [text for text in hidden if text in messages[0]], messages[0]


def test_a_null_key_refused_on_the_executors_names_no_count(spark):
    """A row-wise release refuses in a Spark task; the message comes back to the driver."""
    table = pl.DataFrame({"id": list(range(40)), "a": [True, False] * 20})
    messages = []
    for holes in ([3], [3, 9, 27, 31]):
        gappy = table.with_columns(pl.when(pl.col("id").is_in(holes)).then(None).otherwise("id").alias("id"))
        out = ppdm_spark.rr_disguise(to_spark(spark, gappy, 3), "a", p=0.8, secret=SECRET, key="id")
        with pytest.raises(Exception) as refused:  # Spark's own wrapper around our message
            out.collect()
        found = [line for line in str(refused.value).splitlines() if "The key column 'id'" in line]
        assert found, str(refused.value)[:2000]
        messages.append(found[0].split("The key column", 1)[1])
    assert messages[0] == messages[1]
    assert "has null values in rows that need a random draw" in messages[0]
