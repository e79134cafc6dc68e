"""ECDF resampling on Spark equals the Polars output bit for bit, whatever the partitioning,
row order, sort buckets or task retries; bad input gets the Polars messages."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from spark_frames import PARTITIONS, fail_first_attempt, to_polars, to_spark

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.spark import ecdf as spark_ecdf

pytestmark = pytest.mark.spark

N = 1_000
SECRET = "00112233445566778899aabbccddeeff"


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    return pl.DataFrame(
        {
            "id": np.arange(N, dtype=np.int64) * 7 + 11,
            "name": [f"person-{i}" for i in range(N)],
            "income": rng.gamma(2.0, 20_000.0, N),
            "age": rng.integers(18, 90, N, dtype=np.int32),
            "label": rng.integers(0, 2, N, dtype=np.int64),
        }
    ).with_columns(  # nulls stay null
        pl.when(pl.col("id") % 13 == 0).then(None).otherwise(pl.col("income")).alias("income"),
        pl.when(pl.col("id") % 17 == 0).then(None).otherwise(pl.col("age")).alias("age"),
    )


@pytest.fixture(scope="module")
def tied() -> pl.DataFrame:
    """60% zeros, a fifth of them -0.0; a dense run of near-equal values; a string key."""
    rng = np.random.default_rng(9)
    zero = rng.random(N) < 0.6
    z = np.where(zero, np.where(rng.random(N) < 0.2, -0.0, 0.0), rng.normal(size=N))
    w = np.where(rng.random(N) < 0.5, 1.0 + rng.random(N) * 1e-3, rng.gamma(3.0, size=N))
    return pl.DataFrame({"name": [f"k{i:05d}" for i in range(N)], "z": z, "w": w, "id": np.arange(N)})


def _same(spark_out: object, polars_out: pl.DataFrame, key: str) -> None:
    got = to_polars(spark_out, by=key)
    want = polars_out.sort(key)
    assert got.schema == want.schema
    for column in want.columns:
        if want[column].dtype.is_float():  # bit for bit: -0.0 is not 0.0 here
            bits = [
                got[column].fill_null(0.0).to_numpy().view(np.int64),
                want[column].fill_null(0.0).to_numpy().view(np.int64),
            ]
            assert (bits[0] == bits[1]).all(), column
        assert got[column].to_list() == want[column].to_list(), column


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_ecdf_resample_is_the_polars_result(spark, table, partitions):
    # The key is resampled too: ties are broken by its original values, as in Polars.
    columns = ["income", "age", "id"]
    params = dict(bins={"income": 30, "age": 12, "id": 50}, secret=SECRET, key="id", round_integers=True)
    want = ppdm.ecdf_resample(table, columns, **params)
    got = spark_ecdf.ecdf_resample(to_spark(spark, table, partitions, seed=partitions), columns, **params)
    _same(got, want, "name")
    assert (want["income"] != table["income"]).sum() > N // 2  # the values were replaced


@pytest.mark.parametrize("buckets", [1, N // 40])
def test_heavy_ties_and_signed_zeros(spark, tied, buckets, monkeypatch):
    # One bucket per cell (the zeros' tie words meet in one sort), or buckets of 40 rows:
    # the zeros' cell split by tie word, the dense run by value bits.
    monkeypatch.setattr(spark_ecdf, "BUCKETS", buckets)
    sdf = to_spark(spark, tied, 17, seed=3)
    if buckets > 1:  # both ways of splitting are taken
        census = spark_ecdf._census(sdf, ["z", "w"], "name", bytes(16))
        assert census.plan("z", 40).by_tie.any()
        assert not census.plan("w", 40).by_tie.all()
    params = dict(bins=25, secret=SECRET, key="name")
    want = ppdm.ecdf_resample(tied, ["z", "w"], **params)
    _same(spark_ecdf.ecdf_resample(sdf, ["z", "w"], **params), want, "name")
    # -0.0 and 0.0 share one rank order: a fifth of the zeros are -0.0.
    assert (tied["z"].to_numpy().view(np.int64) < 0).sum() > N // 10


def test_a_sample_of_several_blocks_split_between_tasks(spark):
    """5,000 values: three blocks of 2048 ranks of the sorted uniforms.  Spark's two range
    partitions split the ranks mid-block and the block totals between tasks, and a task
    that fails once draws them again: the Polars bits all the same."""
    from polars_ppdm.kernels.spacings import BLOCK

    n = 5_000
    assert n // BLOCK == 2
    rng = np.random.default_rng(12)
    frame = pl.DataFrame({"id": np.arange(n, dtype=np.int64), "x": rng.lognormal(size=n)})
    params = dict(bins=40, secret=SECRET, key="id")
    want = ppdm.ecdf_resample(frame, "x", **params)
    _same(spark_ecdf.ecdf_resample(to_spark(spark, frame, 3), "x", **params), want, "id")
    flaky = to_spark(spark, frame, 2, seed=1)
    _same(fail_first_attempt(spark_ecdf.ecdf_resample(flaky, "x", **params), after_rows=50), want, "id")


def test_an_empty_frame_gives_an_empty_frame(spark, table):
    empty = table.head(0)
    want = ppdm.ecdf_resample(empty, ["income", "age"], secret=SECRET, key="id", round_integers=True)
    got = spark_ecdf.ecdf_resample(
        to_spark(spark, empty, 1), ["income", "age"], secret=SECRET, key="id", round_integers=True
    )
    _same(got, want, "id")


@pytest.mark.parametrize("buckets", [1, N // 40])
def test_tasks_failing_on_their_first_attempt_change_no_bit(spark, tied, buckets, monkeypatch):
    # Every task reading the rows (the census, the histogram, the ranks) fails once after
    # passing 120 rows on, and so does every task of the last stage (after the join).
    monkeypatch.setattr(spark_ecdf, "BUCKETS", buckets)
    params = dict(bins=15, secret=SECRET, key="name")
    want = ppdm.ecdf_resample(tied, ["z", "id"], **params)
    flaky = fail_first_attempt(to_spark(spark, tied, 3, seed=11), after_rows=120)
    got = fail_first_attempt(spark_ecdf.ecdf_resample(flaky, ["z", "id"], **params), after_rows=50)
    _same(got, want, "name")


# Bad input: the Polars message, or a message saying why Spark cannot.


@pytest.fixture(scope="module")
def bad(table) -> pl.DataFrame:
    rows = 40
    return table.head(rows).with_columns(
        nan=pl.Series([float("nan"), *range(1, rows)], dtype=pl.Float64),
        inf=pl.Series([*range(rows - 1), float("-inf")], dtype=pl.Float64),
        constant=pl.lit(2.5),
        single=pl.Series([None] * (rows - 1) + [3.0], dtype=pl.Float64),
        huge=pl.Series([-1.5e308, 1.5e308] * (rows // 2), dtype=pl.Float64),
        gappy_key=pl.Series([None, None, *range(rows - 2)], dtype=pl.Int64),
    )


def _polars_message(frame: pl.DataFrame, columns: list[str], **params: object) -> str:
    with pytest.raises(InvalidParameterError) as polars_error:
        ppdm.ecdf_resample(frame, columns, **params)
    return str(polars_error.value)


@pytest.mark.parametrize(
    ("columns", "key", "expected"),
    [
        (["nope"], "id", "nope"),
        (["name"], "id", "numeric"),
        (["income"], "gappy_key", "'gappy_key' of ecdf_resample has null values"),
        (["income", "nan"], "id", "holds NaN or infinite values"),
        (["inf"], "id", "holds NaN or infinite values"),
        (["constant"], "id", "constant"),
        (["single"], "id", "at least 2 non-null values"),
        (["huge"], "id", "beyond float64"),
    ],
)
def test_bad_input_gets_the_polars_message(spark, bad, columns, key, expected):
    message = _polars_message(bad, columns, secret=SECRET, key=key)
    assert expected in message
    with pytest.raises(InvalidParameterError) as spark_error:
        spark_ecdf.ecdf_resample(to_spark(spark, bad, 3), columns, secret=SECRET, key=key)
    assert str(spark_error.value) == message


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (dict(link="none", key="id"), r"link=.rank. only"),
        (dict(shuffle=True, key="id"), "cannot shuffle"),
        (dict(key=None), "needs key="),
        (dict(link="ranks", key="id"), "'link'"),
        (dict(bins=1, key="id"), "'bins'"),
    ],
)
def test_what_spark_cannot_do_is_refused_with_the_reason(spark, bad, params, expected):
    with pytest.raises(InvalidParameterError, match=expected):
        spark_ecdf.ecdf_resample(to_spark(spark, bad, 1), ["income"], secret=SECRET, **params)


def test_a_polars_frame_is_refused(spark, table):
    with pytest.raises(InvalidParameterError, match=r"takes a pyspark\.sql\.DataFrame"):
        spark_ecdf.ecdf_resample(table, ["income"], key="id")


def test_a_source_changed_after_the_call_does_not_change_the_release(spark, tmp_path):
    """Attack review 61: the draws were fixed at the call from the census, but the ranks
    read the source again at each action. One row changed in the source between two
    actions on the returned frame: 1,999 rows came out as before and the changed one as
    null, pointing at it. The call reads one snapshot of the input; every action on the
    result releases the data the call saw."""
    rng = np.random.default_rng(61)
    n = 2000
    x = np.round(rng.uniform(100, 900, n), 3)
    source = tmp_path / "source"
    source.mkdir()

    def write(values: np.ndarray) -> None:
        text = "".join(f"{i:06d},{v:07.3f}\n" for i, v in enumerate(values))  # fixed width: one file size
        (source / "part.csv").write_text(text)

    write(x)
    secret = ppdm.Secret.for_tests(61)
    released = spark_ecdf.ecdf_resample(
        spark.read.schema("id long, x double").csv(str(source)), "x", bins=20, secret=secret, key="id"
    )
    first = to_polars(released.select("*"), by="id")
    expected = ppdm.ecdf_resample(
        pl.DataFrame({"id": np.arange(n), "x": x}), "x", bins=20, secret=secret, key="id"
    )
    assert first.equals(expected)
    changed = x.copy()
    changed[int(np.argsort(x)[n // 2])] = 899.999  # the median row moved to the top
    write(changed)
    again = to_polars(released.select("id", "x"), by="id")
    assert again.equals(first)
    assert again["x"].null_count() == 0
