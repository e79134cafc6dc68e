"""DP releases on Spark equal the Polars releases bit for bit, whatever the partitioning
and row order, with and without a bounded privacy unit; the budget is charged before any
Spark job; bad input gets the Polars messages."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from spark_frames import PARTITIONS, fail_first_attempt, to_spark

import polars_ppdm as ppdm
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError
from polars_ppdm.spark import dp as spark_dp

pytestmark = pytest.mark.spark

N = 1_500
SECRET = "7c2e91d04fa3b85e16d9c07a3e5f28b4"  # not a guessable pattern (DP releases refuse those)
BOX = [(-3.0, 3.0), (-3.0, 3.0)]


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(16)
    centres = rng.choice([-1.5, 1.5], size=(N, 2))
    xy = centres + rng.normal(0.0, 0.6, (N, 2))
    return pl.DataFrame(
        {
            "x": xy[:, 0],
            "y": xy[:, 1],
            "age": rng.integers(0, 100, N, dtype=np.int64).astype(np.int32),
            # ~5 rows per person: max_contributions=2 binds.
            "person": rng.integers(0, 300, N, dtype=np.int64),
            "name": [f"user-{i % 250}" for i in range(N)],
            "label": rng.choice(["a", "b"], N),
        }
    )


def _released(sdf: object) -> pl.DataFrame:
    return pl.DataFrame(pl.from_arrow(sdf.toArrow()))  # type: ignore[attr-defined]


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_dp_histogram_is_the_polars_release(spark, table, partitions):
    sdf = to_spark(spark, table, partitions, seed=partitions)
    # 1-D over an int column, each row its own unit.
    params = dict(bounds=(0, 100), bins=7, epsilon=0.5, secret=SECRET)
    want = ppdm.dp_histogram(table, "age", **params)
    assert_frame_equal(_released(spark_dp.dp_histogram(sdf, "age", **params)).sort("age_bin"), want)
    # 2-D with a string unit bounded to 2 rows (the bound binds: fewer rows counted).
    params = dict(bounds=BOX, bins=[4, 6], epsilon=2.0, secret=SECRET, key="name", max_contributions=2)
    want = ppdm.dp_histogram(table, ["x", "y"], **params)
    got = _released(spark_dp.dp_histogram(sdf, ["x", "y"], **params)).sort("x_bin", "y_bin")
    assert_frame_equal(got, want)
    exact = ppdm.dp_histogram(table, ["x", "y"], **{**params, "epsilon": 1e6})
    assert exact["count"].sum() == 2 * 250 < N
    # Clipped at 0: the same post-processing on both engines.
    params = {**params, "epsilon": 0.05, "non_negative": True}
    got = _released(spark_dp.dp_histogram(sdf, ["x", "y"], **params)).sort("x_bin", "y_bin")
    assert_frame_equal(got, ppdm.dp_histogram(table, ["x", "y"], **params))
    assert got["count"].min() == 0


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_dp_quadtree_is_the_polars_release(spark, table, partitions):
    sdf = to_spark(spark, table, partitions, seed=partitions)
    # n estimated with part of the budget (a count of the bounded rows), default height;
    # a split threshold of 20 stops the sparse cells between the four clusters, so the tree
    # has leaves on several levels whatever the noise (the default split them all under
    # some secrets: one level, no tree).
    params = dict(bounds=BOX, epsilon=1.0, secret=SECRET, key="person", max_contributions=2, threshold=20.0)
    want = ppdm.dp_quadtree(table, ["x", "y"], **params)
    got = spark_dp.dp_quadtree(sdf, ["x", "y"], **params)
    assert_frame_equal(got, want)
    assert want["level"].n_unique() > 1  # a tree, not a single level


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_dp_kmeans_is_the_polars_release(spark, table, partitions):
    sdf = to_spark(spark, table, partitions, seed=partitions)
    cases = [
        dict(method="grid", secret=SECRET),  # n estimated, each row its own unit
        dict(method="quadtree", secret=SECRET, key="person", max_contributions=3, n=1_000.0),
    ]
    for params in cases:
        want = ppdm.dp_kmeans(table, ["x", "y"], k=2, epsilon=1.0, bounds=BOX, **params)
        got = spark_dp.dp_kmeans(sdf, ["x", "y"], k=2, epsilon=1.0, bounds=BOX, **params)
        assert (got.method, got.epsilon) == (want.method, want.epsilon)
        assert_frame_equal(got.centres, want.centres)
        assert_frame_equal(got.buckets, want.buckets)


def test_tasks_retried_after_a_failure_give_the_same_release(spark, table):
    """Every task reading the rows fails once, after passing some on, and runs again: the
    words, the rows a unit keeps and the counts are the same, so is the release."""
    params = dict(bounds=BOX, bins=[5, 5], epsilon=1.0, secret=SECRET, key="person", max_contributions=2)
    want = ppdm.dp_histogram(table, ["x", "y"], **params)
    flaky = fail_first_attempt(to_spark(spark, table, 3), after_rows=120)
    assert_frame_equal(
        _released(spark_dp.dp_histogram(flaky, ["x", "y"], **params)).sort("x_bin", "y_bin"), want
    )


def test_bounds_read_off_the_data_are_refused_as_in_polars(spark, table):
    """bounds='data' published the exact extremes: refused by both engines, before a row is read."""
    sdf = _poisoned(spark, table)
    for release in (ppdm.dp_histogram, spark_dp.dp_histogram):
        with pytest.raises(InvalidParameterError, match="bounds='data' is refused"):
            release(
                sdf if release is spark_dp.dp_histogram else table,
                "x",
                bounds="data",
                bins=5,
                epsilon=1.0,
                secret=SECRET,
            )


def _poisoned(spark, table):
    """A frame whose every Spark job fails: a call that runs one cannot pass."""
    sdf = to_spark(spark, table, 3)

    def boom(batches):
        msg = "a Spark job ran"
        raise RuntimeError(msg)
        yield from batches

    return sdf.mapInArrow(boom, sdf.schema)


@pytest.mark.parametrize(
    "release",
    [
        lambda f, a: spark_dp.dp_histogram(f, "x", bounds=(-3, 3), epsilon=1.0, accountant=a, key="person"),
        lambda f, a: spark_dp.dp_quadtree(f, ["x", "y"], bounds=BOX, epsilon=1.0, accountant=a),
        lambda f, a: spark_dp.dp_kmeans(
            f, ["x", "y"], k=2, bounds=BOX, epsilon=1.0, accountant=a, method="grid"
        ),
    ],
    ids=["dp_histogram", "dp_quadtree", "dp_kmeans"],
)
def test_an_over_budget_call_is_refused_before_any_spark_job(spark, table, release):
    accountant = ppdm.BudgetAccountant(0.5)
    with pytest.raises(BudgetExceededError):
        release(_poisoned(spark, table), accountant)
    assert accountant.spent == 0


@pytest.mark.parametrize(
    ("method", "why"), [("lloyd", "floating-point sums"), ("quadtree_refined", "sum coordinates per leaf")]
)
def test_methods_with_sums_are_refused_on_spark_with_the_reason(spark, table, method, why):
    accountant = ppdm.BudgetAccountant(10.0)
    with pytest.raises(InvalidParameterError, match=rf"'quadtree' or 'grid'.*{why}"):
        spark_dp.dp_kmeans(
            _poisoned(spark, table),
            ["x", "y"],
            k=2,
            bounds=BOX,
            epsilon=1.0,
            method=method,
            accountant=accountant,
        )
    assert accountant.spent == 0


def _message(call, frame):
    """The error's message (its first line: Polars adds the expression it was raised in)."""
    with pytest.raises(InvalidParameterError) as caught:
        call(frame)
    return str(caught.value).splitlines()[0]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda f: ppdm_call(f).dp_histogram(f, "nope", bounds=(0, 1), epsilon=1.0), "nope"),
        (lambda f: ppdm_call(f).dp_quadtree(f, ["x", "label"], bounds=BOX, epsilon=1.0), "must be numeric"),
        (
            lambda f: ppdm_call(f).dp_histogram(f, "x", bounds=(0, 1), epsilon=1.0, key="nope"),
            "names no column",
        ),
        (
            lambda f: ppdm_call(f).dp_histogram(f, "x", bounds=(0, 1), epsilon=1.0, key="x"),
            "must be an integer or string column",
        ),
    ],
    ids=["missing column", "non-numeric column", "missing key", "float key"],
)
def test_bad_parameters_get_the_polars_message_before_any_job(spark, table, call, match):
    want = _message(call, table)
    got = _message(call, _poisoned(spark, table))
    assert got == want
    assert match in got


def ppdm_call(frame):
    """The module of the engine of ``frame``: polars_ppdm or polars_ppdm.spark.dp."""
    return ppdm if isinstance(frame, pl.DataFrame) else spark_dp


@pytest.mark.parametrize(
    "call",
    [
        lambda f: ppdm_call(f).dp_histogram(
            f, "x", bounds=(-3, 3), epsilon=1.0, secret=SECRET, key="person", max_contributions=2
        ),
    ],
    ids=["dp_histogram"],
)
def test_a_key_column_with_nulls_is_refused_with_the_polars_message(spark, table, call):
    nulls = table.with_columns(
        pl.when(pl.col("person") == 7).then(None).otherwise(pl.col("person")).alias("person")
    )
    want = _message(call, nulls)
    assert "key column 'person'" in want and "null values" in want
    assert _message(call, to_spark(spark, nulls, 3)) == want


@pytest.mark.parametrize(
    "call",
    [
        lambda f: ppdm_call(f).dp_histogram(f, ["x", "y"], bounds=BOX, epsilon=1.0, secret=SECRET),
        lambda f: ppdm_call(f).dp_quadtree(
            f, ["x", "y"], bounds=BOX, epsilon=1.0, secret=SECRET, key="person", max_contributions=50
        ),
        lambda f: ppdm_call(f).dp_kmeans(
            f, ["x", "y"], k=2, bounds=BOX, epsilon=1.0, secret=SECRET, method="grid"
        ),
    ],
    ids=["dp_histogram", "dp_quadtree", "dp_kmeans"],
)
def test_nan_values_are_refused_with_the_polars_message(spark, table, call):
    bad = table.with_columns(
        pl.when(pl.col("age") < 3).then(float("nan")).otherwise(pl.col("x")).alias("x"),
        pl.when(pl.col("age") == 50).then(None).otherwise(pl.col("y")).alias("y"),
    )
    want = _message(call, bad)
    assert "null, NaN or infinite" in want
    assert _message(call, to_spark(spark, bad, 3)) == want


def test_an_empty_table_is_released_as_polars_releases_it(spark, table):
    """Attack review 68: an empty table was refused (for free): it is released, the noise alone."""
    want = ppdm.dp_quadtree(table.head(0), ["x", "y"], bounds=BOX, epsilon=1.0, secret=SECRET)
    got = spark_dp.dp_quadtree(to_spark(spark, table, 3).limit(0), ["x", "y"], bounds=BOX, epsilon=1.0, secret=SECRET)
    assert_frame_equal(got, want)


def test_the_points_checkpoint_is_freed_after_the_release_and_a_refused_ecdf_holds_none(spark):
    """Review 62: the local checkpoints that replaced a cache were never freed
    (DataFrame.unpersist does not reach them): every call left the points, and a refused
    ECDF its whole input, in the executors."""
    from polars_ppdm.spark import ecdf as spark_ecdf

    stored = spark.sparkContext._jsc.sc().getRDDStorageInfo
    before = len(stored())
    rng = np.random.default_rng(62)
    table = pl.DataFrame({"x": rng.uniform(-3, 3, 500), "y": rng.uniform(-3, 3, 500)})
    for _ in range(2):
        spark_dp.dp_quadtree(
            to_spark(spark, table, 2), ["x", "y"], bounds=BOX, epsilon=1.0, secret=ppdm.Secret.for_tests(3)
        )
    assert len(stored()) == before
    bad = to_spark(spark, pl.DataFrame({"id": [1, 2, 3], "x": [1.0, float("nan"), 2.0]}), 2)
    with pytest.raises(InvalidParameterError):
        spark_ecdf.ecdf_resample(bad, "x", key="id", secret=ppdm.Secret.for_tests(3))
    assert len(stored()) == before
