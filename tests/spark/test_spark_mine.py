"""rr_support / rr_apriori on Spark equal the Polars results exactly (Spark counts, the
Polars estimators on the driver), whatever the partitioning and row order; bad input gets
the Polars messages."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from spark_frames import PARTITIONS, to_spark

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.spark import mine as spark_mine

pytestmark = pytest.mark.spark

N = 3_000
SECRET = "00112233445566778899aabbccddeeff"
REGIONS = ["north", "south", "east", "west"]
SIZES = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def truth() -> pl.DataFrame:
    """Undisguised rows with correlated items (so that rules exist) of every column type."""
    rng = np.random.default_rng(16)
    bread = rng.random(N) < 0.6
    return pl.DataFrame(
        {
            "id": np.arange(N, dtype=np.int64),
            "bread": bread,  # Boolean
            "milk": ((rng.random(N) < 0.8) & bread | (rng.random(N) < 0.2)).astype(np.int32),  # 0/1 int32
            "eggs": ((rng.random(N) < 0.7) & bread | (rng.random(N) < 0.1)).astype(np.int64),  # 0/1 int64
            "jam": rng.random(N) < 0.3,
            "region": rng.choice(REGIONS, N),  # k-ary string
            "size": rng.choice(SIZES, N).astype(np.int64),  # k-ary integer
        }
    )


@pytest.fixture(scope="module")
def per_attribute(truth: pl.DataFrame) -> pl.DataFrame:
    p = {"bread": 0.8, "milk": 0.75, "eggs": 0.85, "jam": 0.8, "region": 0.7, "size": 0.6}
    cats = {"bread": None, "milk": None, "eggs": None, "jam": None, "region": REGIONS, "size": SIZES}
    return ppdm.rr_disguise(truth, list(p), p=p, categories=cats, secret=SECRET, key="id")


@pytest.fixture(scope="module")
def whole_record(truth: pl.DataFrame) -> pl.DataFrame:
    return ppdm.rr_disguise(truth, ["bread", "milk", "eggs", "jam"], p=0.8, mode="whole_record", secret=SECRET, key="id")


def _same_error(polars_call, spark_call) -> None:
    """Both calls fail with InvalidParameterError and the same message."""
    with pytest.raises(InvalidParameterError) as want:
        polars_call()
    with pytest.raises(InvalidParameterError) as got:
        spark_call()
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_patterns_per_attribute_binary_and_k_ary_are_the_polars_result(spark, per_attribute, partitions):
    params = dict(p={"bread": 0.8, "milk": 0.75, "region": 0.7, "size": 0.6}, categories={"bread": None, "milk": None, "region": REGIONS, "size": SIZES})
    columns = ["bread", "milk", "region", "size"]
    want = ppdm.rr_support(per_attribute, columns, **params)
    got = spark_mine.rr_support(to_spark(spark, per_attribute, partitions, seed=partitions), columns, **params)
    assert isinstance(got, pl.DataFrame)
    assert_frame_equal(got, want, check_exact=True)
    assert len(want) == 2 * 2 * 4 * 5 and want["observed"].sum() == N
    # The correction did something: frequencies are not the observed shares.
    assert not np.allclose(want["frequency"].to_numpy(), want["observed"].to_numpy() / N)


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_patterns_whole_record_are_the_polars_result(spark, whole_record, partitions):
    columns = ["bread", "milk", "eggs"]  # Boolean, int32, int64
    want = ppdm.rr_support(whole_record, columns, p=0.8, mode="whole_record")
    got = spark_mine.rr_support(to_spark(spark, whole_record, partitions, seed=partitions), columns, p=0.8, mode="whole_record")
    assert_frame_equal(got, want, check_exact=True)
    assert want.schema["milk"] == pl.Int32 and want.schema["eggs"] == pl.Int64


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_itemset_supports_in_both_modes_are_the_polars_result(spark, per_attribute, whole_record, partitions):
    itemsets = [["bread"], ["milk", "bread"], ["bread", "milk", "eggs"], ["jam", "eggs"]]
    columns = ["bread", "milk", "eggs", "jam"]
    cases = [
        (per_attribute, dict(epsilon={"bread": 1.4, "milk": 1.1, "eggs": 1.7, "jam": 1.4})),
        (whole_record, dict(p=0.8, mode="whole_record")),
    ]
    for data, params in cases:
        want = ppdm.rr_support(data, columns, itemsets=itemsets, **params)
        got = spark_mine.rr_support(to_spark(spark, data, partitions, seed=partitions), columns, itemsets=itemsets, **params)
        assert_frame_equal(got, want, check_exact=True)
        assert want["itemset"].to_list()[1] == ["bread", "milk"]


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_rr_apriori_in_both_modes_is_the_polars_result(spark, per_attribute, whole_record, partitions):
    columns = ["bread", "milk", "eggs", "jam"]
    cases = [
        (per_attribute, dict(p={"bread": 0.8, "milk": 0.75, "eggs": 0.85, "jam": 0.8}, min_support=0.2, min_confidence=0.5)),
        (whole_record, dict(p=0.8, mode="whole_record", min_support=0.25, min_confidence=0.6, max_length=2)),
    ]
    for data, params in cases:
        want = ppdm.rr_apriori(data, columns, **params)
        got = spark_mine.rr_apriori(to_spark(spark, data, partitions, seed=partitions), columns, **params)
        assert_frame_equal(got, want, check_exact=True)
        assert len(want) >= 2  # the thresholds leave rules to compare


def test_rr_apriori_thresholds_change_the_rules_as_in_polars(spark, per_attribute):
    columns = ["bread", "milk", "eggs", "jam"]
    sdf = to_spark(spark, per_attribute, 3).cache()
    seen = set()
    for min_support, min_confidence, max_length in [(0.1, 0.3, None), (0.1, 0.3, 1), (0.9, 0.1, None)]:
        params = dict(p=0.8, min_support=min_support, min_confidence=min_confidence, max_length=max_length)
        want = ppdm.rr_apriori(per_attribute, columns, **params)
        assert_frame_equal(spark_mine.rr_apriori(sdf, columns, **params), want, check_exact=True)
        seen.add(len(want))
    assert len(seen) >= 2 and 0 in seen  # the thresholds matter, down to no rule at all
    sdf.unpersist()


def test_undisguised_data_gives_plain_frequencies(spark, truth):
    got = spark_mine.rr_support(to_spark(spark, truth, 3), ["bread", "jam"], p=1.0)
    plain = truth.group_by("bread", "jam").len().sort("bread", "jam")
    assert got["frequency"].to_list() == (plain["len"] / N).to_list()


def test_an_empty_frame_gives_the_empty_polars_results(spark, per_attribute):
    empty = per_attribute.clear()
    sdf = to_spark(spark, empty, 2)
    cats = {"bread": None, "region": REGIONS}
    assert_frame_equal(
        spark_mine.rr_support(sdf, ["bread", "region"], p=0.8, categories=cats),
        ppdm.rr_support(empty, ["bread", "region"], p=0.8, categories=cats),
    )
    assert_frame_equal(
        spark_mine.rr_support(sdf, ["bread", "milk"], p=0.8, itemsets=[["bread", "milk"]]),
        ppdm.rr_support(empty, ["bread", "milk"], p=0.8, itemsets=[["bread", "milk"]]),
    )
    rules = dict(p=0.8, min_support=0.1, min_confidence=0.1)
    assert_frame_equal(spark_mine.rr_apriori(sdf, ["bread", "milk"], **rules), ppdm.rr_apriori(empty, ["bread", "milk"], **rules))


def test_a_missing_column_has_the_polars_message(spark, per_attribute):
    sdf = to_spark(spark, per_attribute, 2)
    _same_error(lambda: ppdm.rr_support(per_attribute, ["bread", "butter"], p=0.8), lambda: spark_mine.rr_support(sdf, ["bread", "butter"], p=0.8))
    _same_error(
        lambda: ppdm.rr_apriori(per_attribute, ["butter"], p=0.8, min_support=0.1, min_confidence=0.1),
        lambda: spark_mine.rr_apriori(sdf, ["butter"], p=0.8, min_support=0.1, min_confidence=0.1),
    )


def test_nulls_have_the_polars_message(spark, per_attribute):
    holes = per_attribute.with_columns(pl.when(pl.col("id") % 7 == 0).then(None).otherwise(pl.col("milk")).alias("milk"))
    sdf = to_spark(spark, holes, 3)
    columns = ["bread", "milk"]
    _same_error(lambda: ppdm.rr_support(holes, columns, p=0.8), lambda: spark_mine.rr_support(sdf, columns, p=0.8))
    _same_error(
        lambda: ppdm.rr_support(holes, columns, p=0.8, itemsets=[["milk"]]),
        lambda: spark_mine.rr_support(sdf, columns, p=0.8, itemsets=[["milk"]]),
    )
    _same_error(
        lambda: ppdm.rr_apriori(holes, columns, p=0.8, min_support=0.1, min_confidence=0.1),
        lambda: spark_mine.rr_apriori(sdf, columns, p=0.8, min_support=0.1, min_confidence=0.1),
    )


def test_a_non_binary_integer_column_has_the_polars_message(spark, per_attribute):
    few = per_attribute.with_columns((pl.col("eggs") + (pl.col("id") % 11 == 0) * 2).alias("eggs"))  # 0, 1, 2, 3
    many = per_attribute.with_columns(pl.col("id").alias("eggs"))  # an identifier passed as an item
    columns = ["bread", "eggs"]
    for bad in (few, many):
        sdf = to_spark(spark, bad, 3)
        _same_error(lambda: ppdm.rr_support(bad, columns, p=0.8), lambda: spark_mine.rr_support(sdf, columns, p=0.8))  # noqa: B023
        _same_error(
            lambda: ppdm.rr_support(bad, columns, p=0.8, itemsets=[columns]),  # noqa: B023
            lambda: spark_mine.rr_support(sdf, columns, p=0.8, itemsets=[columns]),  # noqa: B023
        )
        _same_error(
            lambda: ppdm.rr_apriori(bad, columns, p=0.8, min_support=0.1, min_confidence=0.1),  # noqa: B023
            lambda: spark_mine.rr_apriori(sdf, columns, p=0.8, min_support=0.1, min_confidence=0.1),  # noqa: B023
        )


@pytest.mark.parametrize(
    "columns",
    [["eggs", "region"], ["eggs", "size"], ["size", "eggs"]],
)
def test_the_first_culprit_is_named_as_in_polars_when_the_groups_overflow(spark, per_attribute, columns):
    # An identifier passed as an item (too many patterns to fetch) next to a column with
    # nulls, or with categories its dtype cannot hold: the Polars group-by checks nulls
    # first, then each column in order, and so does the fallback that names the culprit.
    bad = per_attribute.with_columns(
        pl.col("id").alias("eggs"),
        pl.when(pl.col("id") == 5).then(None).otherwise(pl.col("region")).alias("region"),
    )
    cats = {"eggs": None, "region": REGIONS, "size": ["small", "large"]}
    cats = {c: cats[c] for c in columns}
    _same_error(
        lambda: ppdm.rr_support(bad, columns, p=0.8, categories=cats),
        lambda: spark_mine.rr_support(to_spark(spark, bad, 3), columns, p=0.8, categories=cats),
    )


def test_values_outside_the_categories_have_the_polars_message(spark, per_attribute):
    bad = per_attribute.with_columns(pl.when(pl.col("id") == 4).then(pl.lit("up")).otherwise(pl.col("region")).alias("region"))
    sdf = to_spark(spark, bad, 3)
    _same_error(
        lambda: ppdm.rr_support(bad, ["region"], p=0.8, categories=REGIONS),
        lambda: spark_mine.rr_support(sdf, ["region"], p=0.8, categories=REGIONS),
    )
    wide = per_attribute.with_columns(pl.format("r{}", pl.col("id")).alias("region"))
    with pytest.raises(InvalidParameterError, match=r"The column 'region' of rr_support holds values outside its 'categories'"):
        spark_mine.rr_support(to_spark(spark, wide, 3), ["region"], p=0.8, categories=REGIONS)


def test_wrong_types_have_the_polars_messages(spark, per_attribute):
    odd = per_attribute.with_columns(weight=pl.col("id").cast(pl.Float64) / 7)
    sdf = to_spark(spark, odd, 2)
    calls = [
        dict(columns=["bread", "weight"], p=0.8),  # a float column
        dict(columns=["region"], p=0.8),  # a string column without categories
        dict(columns=["region", "bread"], p=0.8, categories={"region": REGIONS, "bread": None}, itemsets=[["region"]]),  # k-ary itemset
        dict(columns=["region", "size"], p=0.8, categories={"region": REGIONS, "size": SIZES}, mode="whole_record"),  # k-ary whole record
        dict(columns=["bread"], p=1.5),
        dict(columns=["bread"], p=0.8, mode="both"),
        dict(columns=["size"], p=0.8, categories=["small", "large"]),  # categories of another dtype
    ]
    for call in calls:
        columns = call.pop("columns")
        _same_error(lambda: ppdm.rr_support(odd, columns, **call), lambda: spark_mine.rr_support(sdf, columns, **call))  # noqa: B023
    _same_error(
        lambda: ppdm.rr_apriori(odd, ["bread", "region"], p=0.8, min_support=0.1, min_confidence=0.1),
        lambda: spark_mine.rr_apriori(sdf, ["bread", "region"], p=0.8, min_support=0.1, min_confidence=0.1),
    )
    _same_error(
        lambda: ppdm.rr_apriori(odd, ["bread"], p=0.8, min_support=0.1, min_confidence=2.0),
        lambda: spark_mine.rr_apriori(sdf, ["bread"], p=0.8, min_support=0.1, min_confidence=2.0),
    )


def test_a_polars_frame_is_refused_with_a_pointer(per_attribute):
    pytest.importorskip("pyspark")
    with pytest.raises(InvalidParameterError, match=r"pyspark.sql.DataFrame. Got DataFrame instead .*polars_ppdm.rr_support"):
        spark_mine.rr_support(per_attribute, ["bread"], p=0.8)
    with pytest.raises(InvalidParameterError, match=r"pyspark.sql.DataFrame. Got LazyFrame instead .*polars_ppdm.rr_apriori"):
        spark_mine.rr_apriori(per_attribute.lazy(), ["bread"], p=0.8, min_support=0.1, min_confidence=0.1)


def test_column_names_with_dots_and_backticks_are_taken_literally(spark, whole_record):
    odd = whole_record.rename({"bread": "bread.white", "milk": "milk`s"})
    columns = ["bread.white", "milk`s"]
    sdf = to_spark(spark, odd, 3)
    assert_frame_equal(spark_mine.rr_support(sdf, columns, p=0.8), ppdm.rr_support(odd, columns, p=0.8), check_exact=True)
    itemsets = [columns]
    assert_frame_equal(
        spark_mine.rr_support(sdf, columns, p=0.8, itemsets=itemsets),
        ppdm.rr_support(odd, columns, p=0.8, itemsets=itemsets),
        check_exact=True,
    )


def test_rr_apriori_counts_every_level_over_the_rows_of_its_first(spark, per_attribute, tmp_path, monkeypatch):
    """The search reads its input once: a CSV rewritten between two levels (its size
    unchanged, every item flipped) changes no level's counts, and the snapshot is freed."""
    columns = ["milk", "eggs"]
    params = dict(p=0.8, min_support=0.2, min_confidence=0.5)
    data = per_attribute.select(columns)
    path = tmp_path / "baskets.csv"
    data.write_csv(path)
    sdf = spark.read.csv(str(path), header=True, schema="milk INT, eggs INT")
    stored = spark.sparkContext._jsc.sc().getRDDStorageInfo
    before = len(stored())
    levels = []
    counts_row = spark_mine._counts_row

    def count_then_rewrite(*args):
        levels.append(counts_row(*args))
        data.select((1 - pl.col(c)).alias(c) for c in columns).write_csv(path)
        return levels[-1]

    monkeypatch.setattr(spark_mine, "_counts_row", count_then_rewrite)
    got = spark_mine.rr_apriori(sdf, columns, **params)
    assert len(levels) == 2  # singletons, then the pair: the file changed in between
    assert_frame_equal(got, ppdm.rr_apriori(data, columns, **params), check_exact=True)
    assert len(got) >= 1
    assert len(stored()) == before
