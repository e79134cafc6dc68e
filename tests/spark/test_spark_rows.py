"""Row-wise perturbations on Spark equal the Polars output bit for bit, whatever the
partitioning and row order; bad input gets the Polars messages."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from spark_frames import PARTITIONS, fail_first_attempt, to_polars, to_spark

import polars_ppdm as ppdm
import polars_ppdm.spark as ppdm_spark
from polars_ppdm.exceptions import InvalidParameterError

pytestmark = pytest.mark.spark

N = 1_000
SECRET = "00112233445566778899aabbccddeeff"


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    return pl.DataFrame(
        {
            "id": np.arange(N, dtype=np.int64) * 7 + 11,
            "name": [f"person-{i}" for i in range(N)],
            "smoker": rng.random(N) < 0.3,
            "owner": (rng.random(N) < 0.6).astype(np.int32),
            "region": rng.choice(["north", "south", "east", "west"], N),
            "income": rng.gamma(2.0, 20_000.0, N),
            "age": rng.integers(18, 90, N, dtype=np.int64),
        }
    ).with_columns(
        # Nulls stay null in every engine.
        pl.when(pl.col("id") % 13 == 0).then(None).otherwise(pl.col("smoker")).alias("smoker"),
        pl.when(pl.col("id") % 17 == 0).then(None).otherwise(pl.col("income")).alias("income"),
    )


def _same(spark_out: object, polars_out: pl.DataFrame, key: str = "id") -> None:
    got = to_polars(spark_out, by=key)
    want = polars_out.sort(key)
    assert got.columns == want.columns
    for column in want.columns:  # dtypes as Spark holds them, values bit for bit
        assert got[column].to_list() == want[column].cast(got[column].dtype).to_list(), column


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_rr_disguise_per_attribute_is_the_polars_result(spark, table, partitions):
    params = dict(p={"smoker": 0.8, "owner": 0.7, "region": 0.6}, secret=SECRET, key="id")
    params["categories"] = {"smoker": None, "owner": None, "region": ["north", "south", "east", "west"]}
    want = ppdm.rr_disguise(table, ["smoker", "owner", "region"], **params)
    got = ppdm_spark.rr_disguise(
        to_spark(spark, table, partitions, seed=partitions), ["smoker", "owner", "region"], **params
    )
    _same(got, want)
    assert (want["region"] != table["region"]).sum() > 0  # something was disguised


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_rr_disguise_whole_record_with_a_string_key_is_the_polars_result(spark, table, partitions):
    params = dict(p=0.75, mode="whole_record", secret=SECRET, key="name")
    want = ppdm.rr_disguise(table, ["smoker", "owner"], **params)
    got = ppdm_spark.rr_disguise(
        to_spark(spark, table, partitions, seed=partitions), ["smoker", "owner"], **params
    )
    _same(got, want)


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_add_noise_is_the_polars_result(spark, table, partitions):
    params = dict(dist="uniform", scale={"income": 5_000.0, "age": 2.0}, secret=SECRET, key="id")
    want = ppdm.add_noise(table, ["income", "age"], **params)
    got = ppdm_spark.add_noise(
        to_spark(spark, table, partitions, seed=partitions), ["income", "age"], **params
    )
    _same(got, want)


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_spiral_key_applied_and_inverted_is_the_polars_result(spark, table, partitions):
    key = ppdm.spiral_key(
        ["income", "age"], bounds={"income": (0.0, 400_000.0), "age": (0, 120)}, secret=SECRET
    )
    want = ppdm.apply_spiral_key(table, key)
    moved = ppdm_spark.apply_spiral_key(to_spark(spark, table, partitions, seed=partitions), key)
    _same(moved, want)
    back = to_polars(ppdm_spark.invert_spiral_key(moved, key), by="id")
    original = table.sort("id")
    whole = original["income"].is_not_null().to_numpy()  # a null nulls its row's spiral columns
    assert np.allclose(back["age"].to_numpy()[whole], original["age"].to_numpy()[whole])
    assert back["age"].is_null().to_numpy()[~whole].all()


@pytest.fixture(scope="module")
def units() -> pl.DataFrame:
    """Privacy units with several rows, repeated and changed values (the coins are keyed
    by unit, column and value: equal values of a unit share them, others do not)."""
    rng = np.random.default_rng(26)
    n = 1_500
    return pl.DataFrame(
        {
            "row": np.arange(n, dtype=np.int64),
            "unit": rng.integers(0, 400, n).astype(np.int64),
            "smoker": rng.random(n) < 0.5,
            "owner": (rng.random(n) < 0.5).astype(np.int32),
            "region": rng.choice(["north", "south"], n),
            "income": rng.choice([10.0, 20.0, 30.0], n),
        }
    )


@pytest.mark.parametrize("partitions", [1, 17])
def test_units_with_several_rows_get_the_polars_bits_in_every_mode(spark, units, partitions):
    sdf = to_spark(spark, units, partitions, seed=partitions)
    cats = {"region": ["north", "south"], "smoker": None, "owner": None}
    for mode, columns, p in (
        ("per_attribute", ["smoker", "owner", "region"], 0.7),
        ("whole_record", ["smoker", "owner"], 0.7),
    ):
        params = dict(p=p, mode=mode, secret=SECRET, key="unit")
        if mode == "per_attribute":
            params["categories"] = cats
        _same(
            ppdm_spark.rr_disguise(sdf, columns, **params),
            ppdm.rr_disguise(units, columns, **params),
            key="row",
        )
    params = dict(dist="gaussian", scale=1.0, secret=SECRET, key="unit")
    _same(ppdm_spark.add_noise(sdf, "income", **params), ppdm.add_noise(units, "income", **params), key="row")


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_task_retried_after_a_failure_gives_the_same_bits(spark, table, where):
    """Every task fails once -- before the disguise reads its rows, or after it has sent
    some on -- and is run again; the output is still the Polars output."""
    params = dict(
        p=0.7,
        secret=SECRET,
        key="id",
        categories={"region": ["north", "south", "east", "west"], "smoker": None},
    )
    want = ppdm.rr_disguise(table, ["smoker", "region"], **params)
    sdf = to_spark(spark, table, 3)
    if where == "before":
        got = ppdm_spark.rr_disguise(fail_first_attempt(sdf), ["smoker", "region"], **params)
    else:
        got = fail_first_attempt(ppdm_spark.rr_disguise(sdf, ["smoker", "region"], **params), after_rows=150)
    _same(got, want)


def test_key_is_required_on_spark(spark, table):
    with pytest.raises(InvalidParameterError, match=r"needs key=.*no row order"):
        ppdm_spark.rr_disguise(to_spark(spark, table, 2), "smoker", p=0.8, secret=SECRET)


def test_missing_column_is_named_before_any_task(spark, table):
    with pytest.raises(InvalidParameterError, match="smokers"):
        ppdm_spark.rr_disguise(to_spark(spark, table, 2), "smokers", p=0.8, secret=SECRET, key="id")
    with pytest.raises(InvalidParameterError, match=r"'key' parameter .*names no column: 'ident'"):
        ppdm_spark.add_noise(to_spark(spark, table, 2), "income", scale=1.0, secret=SECRET, key="ident")


def test_non_numeric_column_where_numbers_are_needed(spark, table):
    with pytest.raises(InvalidParameterError, match="region"):
        ppdm_spark.add_noise(to_spark(spark, table, 2), "region", scale=1.0, secret=SECRET, key="id")


def test_key_column_with_nulls_fails_the_action_with_our_message(spark, table):
    holes = table.with_columns(pl.when(pl.col("age") < 30).then(None).otherwise(pl.col("id")).alias("id"))
    out = ppdm_spark.rr_disguise(to_spark(spark, holes, 3), "owner", p=0.8, secret=SECRET, key="id")
    with pytest.raises(Exception, match=r"The key column 'id' of rr_disguise has null values in rows"):
        out.collect()


def test_a_polars_frame_is_refused_with_a_pointer(table):
    pytest.importorskip("pyspark")
    with pytest.raises(
        InvalidParameterError, match=r"pyspark.sql.DataFrame. Got DataFrame instead .*polars_ppdm.rr_disguise"
    ):
        ppdm_spark.rr_disguise(table, "smoker", p=0.8, secret=SECRET, key="id")


def test_without_pyspark_the_error_names_the_extra(monkeypatch, table):
    """Importing polars_ppdm.spark needs no PySpark; calling a function says what to install."""
    for name in ("pyspark", "pyspark.sql", "pyspark.sql.connect.dataframe"):
        monkeypatch.setitem(sys.modules, name, None)  # import of these now fails
    with pytest.raises(
        ImportError,
        match=r"polars_ppdm.spark.rr_disguise needs PySpark 4.*pip install 'polars_ppdm\[spark\]'",
    ):
        ppdm_spark.rr_disguise(table, "smoker", p=0.8, secret=SECRET, key="id")
    code = "import sys; sys.modules['pyspark'] = None; import polars_ppdm.spark; print('imported')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "imported", done.stderr


def test_batches_are_gathered_into_chunks_without_losing_or_reordering_rows(monkeypatch):
    # The executors hand Spark's small batches to the Polars function in larger chunks;
    # the cut falls on the size limits, empty batches are dropped, every row is kept in order.
    import pyarrow as pa

    from polars_ppdm.spark import _engine

    monkeypatch.setattr(_engine, "_CHUNK_ROWS", 25)
    sizes = [10, 0, 10, 10, 3, 0, 30, 7]
    batches = []
    start = 0
    for size in sizes:
        batches.append(pa.record_batch({"x": pa.array(range(start, start + size), pa.int64())}))
        start += size
    chunks = list(_engine._gathered(iter(batches)))
    assert [c.num_rows for c in chunks] == [30, 33, 7]
    assert pa.concat_tables(chunks).column("x").to_pylist() == list(range(sum(sizes)))
    monkeypatch.setattr(_engine, "_CHUNK_BYTES", 8 * 10)  # 10 int64 values
    assert [c.num_rows for c in _engine._gathered(iter(batches))] == [10, 10, 10, 3 + 30, 7]
    assert list(_engine._gathered(iter([batches[1]]))) == []
