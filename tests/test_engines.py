"""The same secret and keys give the same bits in every engine, whatever the batches."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError

N = 250_000  # more than two streaming morsels and several DuckDB vectors
SECRET = "0123456789abcdef0123456789abcdef"
CATS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(21)
    return pl.DataFrame(
        {
            "id": rng.permutation(N).astype(np.int64) * 7919 - 10**6,
            "email": [f"user{i}@example.org" for i in range(N)],
            "x": rng.random(N) < 0.4,
            "y": rng.random(N) < 0.7,
            "c": rng.choice(CATS, N),
        }
    )


def polars_exprs(key: str) -> list[pl.Expr]:
    return [
        pl.col("id"),
        pl.col("x").ppdm.rr_disguise(p=0.8, secret=SECRET, key=key),
        pl.col("c").ppdm.rr_disguise(p=0.6, secret=SECRET, key=key, categories=CATS),
    ]


@pytest.mark.parametrize("key", ["id", "email"])
def test_eager_lazy_streaming_duckdb_udf_and_bulk_agree(frame, key):
    eager = frame.select(polars_exprs(key))
    lazy = frame.lazy().select(polars_exprs(key))
    assert_frame_equal(lazy.collect(engine="in-memory"), eager)
    assert_frame_equal(lazy.collect(engine="streaming"), eager)

    con = ppdm.duckdb.register(duckdb.connect())
    con.execute("SET threads = 2")
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    sql_key = "id" if key == "id" else f"ppdm_key(email, '{SECRET}')"
    udf = con.sql(
        f"""SELECT id,
                   ppdm_rr_disguise(x, 0.8, '{SECRET}', {sql_key}, 'x') AS x,
                   ppdm_rr_disguise_k(c, ['a', 'b', 'c', 'd'], 0.6, '{SECRET}', {sql_key}, 'c') AS c
            FROM t"""
    ).pl()
    assert_frame_equal(udf.sort("id"), eager.sort("id"))

    reader = ppdm.duckdb.rr_disguise_batches(
        con,
        "SELECT * FROM t",
        ["x", "c"],
        p={"x": 0.8, "c": 0.6},
        secret=SECRET,
        key=key,
        categories={"x": None, "c": CATS},
        batch_rows=10_000,
    )
    bulk = pl.from_arrow(reader.read_all()).select(eager.columns)
    assert_frame_equal(bulk.sort("id"), eager.sort("id"))


def test_batches_of_any_size_and_order_give_the_same_rows(frame):
    expected = frame.select(polars_exprs("id")).sort("id")
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=3)
    pieces = [
        shuffled.slice(0, 1),
        shuffled.slice(1, 4_999),
        shuffled.slice(5_000, 100_000),
        shuffled.slice(105_000),
    ]
    rechunked = pl.concat(pieces, rechunk=False)
    assert rechunked.n_chunks() > 1
    for source in (shuffled, rechunked):
        got = source.lazy().select(polars_exprs("id")).collect(engine="streaming").sort("id")
        assert_frame_equal(got, expected)
    via_parquet_batches = pl.concat([piece.select(polars_exprs("id")) for piece in pieces]).sort("id")
    assert_frame_equal(via_parquet_batches, expected)


def test_row_position_key_matches_duckdb_bulk_path(frame):
    eager = ppdm.rr_disguise(frame.select("x", "y"), ["x", "y"], p=0.9, mode="whole_record", secret=SECRET)
    con = duckdb.connect()
    con.register("t", frame.select("x", "y").to_arrow())  # a view: pass a relation
    reader = ppdm.duckdb.rr_disguise_batches(
        con,
        con.sql("SELECT * FROM t"),
        ["x", "y"],
        p=0.9,
        mode="whole_record",
        secret=SECRET,
        batch_rows=30_000,
    )
    assert_frame_equal(pl.from_arrow(reader.read_all()), eager)


def test_streaming_sink_round_trip(frame, tmp_path):
    source = tmp_path / "in.parquet"
    target = tmp_path / "out.parquet"
    frame.write_parquet(source, row_group_size=20_000)
    pl.scan_parquet(source).select(polars_exprs("id")).sink_parquet(target)
    assert_frame_equal(pl.read_parquet(target), frame.select(polars_exprs("id")))


def test_secret_forms_agree(frame, monkeypatch):
    monkeypatch.setenv("PPDM_TEST_SECRET", SECRET)
    small = frame.head(1000).select("id", "x")
    forms = [
        SECRET,
        bytes.fromhex(SECRET),
        ppdm.Secret.from_hex(SECRET),
        "env:PPDM_TEST_SECRET",
        ppdm.secret_from_env("PPDM_TEST_SECRET"),
    ]
    outs = [small.select(pl.col("x").ppdm.rr_disguise(p=0.7, secret=f, key="id")) for f in forms]
    for out in outs[1:]:
        assert_frame_equal(out, outs[0])


@pytest.mark.parametrize("mode", ["eager", "lazy", "streaming"])
@pytest.mark.parametrize("step", ["rr_disguise", "add_noise"])
def test_a_float_key_with_nulls_is_refused_for_its_dtype_in_every_mode(mode: str, step: str) -> None:
    # The lazy plan checks the key's dtype first; a batch checked its nulls first, so the
    # same mistake read "null values" eagerly and "integer or string" lazily.
    frame = pl.DataFrame({"a": [True, False, True], "v": [1.0, 2.0, 3.0], "x": [1.0, None, 2.0]})
    run = {
        "rr_disguise": lambda f: ppdm.rr_disguise(f, "a", p=0.8, key="x", secret=1),
        "add_noise": lambda f: ppdm.add_noise(f, "v", scale=1.0, key="x", secret=1),
    }[step]
    with pytest.raises(
        InvalidParameterError, match=r"must be an integer or string column\. Got dtype Float64"
    ):
        if mode == "eager":
            run(frame)
        else:
            run(frame.lazy()).collect(engine="streaming" if mode == "streaming" else "in-memory")
