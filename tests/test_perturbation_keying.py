"""Perturbation coins keyed by (unit, column, value) (issue 26, item 3).

Keyed by the unit alone, randomized response and additive noise leaked in two ways:

* a unit with several rows drew one coin for all of them, so the XOR of two released
  binary values equalled the true XOR in 100% of units (and two noised values differed
  by exactly the true difference);
* a unit whose value changed between two nights drew the same coin both nights, so
  every change was read off exactly.

Each test here fails on that old keying: it measures the leak against the fresh-coin
expectation, within 5 standard errors of the estimator.  It also checks what the
memoisation keeps: an unchanged value reproduces its bits, a unit's rows with equal
values share their coin, and every engine gives the same bits.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_ppdm as ppdm

SECRET = ppdm.Secret.for_tests(26)
HEX = "8f3a5c1e9b2d4f60718293a4b5c6d7e8"
UNITS = 20_000
P = 0.8
FRESH = P * P + (1 - P) * (1 - P)  # P(released XOR == true XOR) with independent coins


def within_5_se(share: float, expected: float, n: int) -> bool:
    return abs(share - expected) <= 5 * math.sqrt(expected * (1 - expected) / n)


@pytest.fixture(scope="module")
def two_rows() -> pl.DataFrame:
    """Every unit has two rows; in half the units the values differ, in half they agree."""
    rng = np.random.default_rng(26)
    first = rng.random(UNITS) < 0.5
    differ = np.arange(UNITS) % 2 == 0
    second = first ^ differ
    return pl.DataFrame(
        {
            "row": np.arange(2 * UNITS),
            "unit": np.repeat(np.arange(UNITS) * 3 + 1, 2),
            "x": np.column_stack([first, second]).reshape(-1),
            "bit": np.column_stack([first, second]).reshape(-1).astype(np.int8),
            "v": np.column_stack([first * 10.0, second * 10.0]).reshape(-1),
        }
    )


def released_pairs(out: pl.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    values = out.sort("row")[column].to_numpy()
    return values[0::2], values[1::2]


# (a) a unit's two rows of different values: the XOR is not revealed ----------------------------


@pytest.mark.parametrize("column", ["x", "bit"])
def test_a_units_two_different_values_get_independent_coins(two_rows, column):
    out = ppdm.rr_disguise(two_rows, column, p=P, secret=SECRET, key="unit")
    true_a, true_b = released_pairs(two_rows, column)
    got_a, got_b = released_pairs(out, column)
    differ = true_a != true_b
    same_xor = (got_a ^ got_b) == (true_a ^ true_b)
    share = float(same_xor[differ].mean())
    # Old keying (one coin per unit): 1.0.  Fresh coins: p^2 + (1-p)^2 = 0.68.
    assert within_5_se(share, FRESH, int(differ.sum())), share


def test_a_kary_values_of_one_unit_get_independent_coins():
    n = UNITS
    cats = ["a", "b", "c"]
    frame = pl.DataFrame(
        {
            "row": np.arange(2 * n),
            "unit": np.repeat(np.arange(n), 2),
            "c": ["a", "b"] * n,  # every unit holds two different categories
        }
    )
    out = ppdm.rr_disguise(frame, "c", p=0.6, secret=SECRET, key="unit", categories=cats)
    first, second = released_pairs(out, "c")
    # Both kept or both lied independently; equal coins (old keying) keep both or neither:
    # both kept has probability p^2 here, 0.6 under one shared coin.
    both_kept = float(((first == "a") & (second == "b")).mean())
    assert within_5_se(both_kept, 0.6 * 0.6, n), both_kept


@pytest.mark.parametrize("dist", ["gaussian", "uniform"])
def test_a_units_two_different_values_get_independent_noise(two_rows, dist):
    out = ppdm.add_noise(two_rows, "v", dist=dist, scale=1.0, secret=SECRET, key="unit")
    true_a, true_b = released_pairs(two_rows, "v")
    got_a, got_b = released_pairs(out, "v")
    noise_a, noise_b = got_a - true_a, got_b - true_b
    differ = true_a != true_b
    # Old keying: the same noise, so the released difference was the true one in 100%.
    assert not np.any(noise_a[differ] == noise_b[differ])
    r = np.corrcoef(noise_a[differ], noise_b[differ])[0, 1]
    assert abs(r) <= 5 / math.sqrt(differ.sum()), r


# (b) two nights, a changed value: the change is not read off ------------------------------


def nights(n: int, change_share: float, seed: int) -> tuple[pl.DataFrame, pl.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    night1 = rng.random(n) < 0.4
    changed = rng.random(n) < change_share
    night2 = night1 ^ changed
    units = rng.permutation(n) * 11 + 5
    first = pl.DataFrame({"unit": units, "x": night1, "v": night1 * 100.0 + rng.integers(0, 50, n)})
    second = first.with_columns(
        pl.Series("x", night2),
        pl.Series("v", np.where(changed, first["v"].to_numpy() + 1.0, first["v"].to_numpy())),
    )
    return first, second, changed


def test_b_a_changed_value_draws_a_fresh_coin():
    first, second, changed = nights(2 * UNITS, 0.5, 1)
    # The second night arrives in another row order: the coins do not depend on it.
    out1 = ppdm.rr_disguise(first, "x", p=P, secret=SECRET, key="unit")
    out2 = ppdm.rr_disguise(second.reverse(), "x", p=P, secret=SECRET, key="unit").reverse()
    released_change = (out1["x"] != out2["x"]).to_numpy()
    # An attacker calls "changed" when the releases differ.  Old keying: right for 100% of
    # the changes.  Fresh coins: the releases differ with probability p^2 + (1-p)^2.
    share = float(released_change[changed].mean())
    assert within_5_se(share, FRESH, int(changed.sum())), share
    # (c) the unchanged units released exactly the same bits.
    assert not released_change[~changed].any()


@pytest.mark.parametrize("dist", ["gaussian", "uniform"])
def test_b_a_changed_value_draws_fresh_noise(dist):
    first, second, changed = nights(UNITS, 0.5, 2)
    out1 = ppdm.add_noise(first, "v", dist=dist, scale=2.0, secret=SECRET, key="unit")
    out2 = ppdm.add_noise(second, "v", dist=dist, scale=2.0, secret=SECRET, key="unit")
    noise1 = (out1["v"] - first["v"]).to_numpy()
    noise2 = (out2["v"] - second["v"]).to_numpy()
    # Old keying: noise2 == noise1, so out2 - out1 was exactly the change.
    assert not np.any(noise1[changed] == noise2[changed])
    r = np.corrcoef(noise1[changed], noise2[changed])[0, 1]
    assert abs(r) <= 5 / math.sqrt(changed.sum()), r
    # (c) unchanged values keep their noise bit for bit.
    np.testing.assert_array_equal(out1["v"].to_numpy()[~changed], out2["v"].to_numpy()[~changed])


def test_b_whole_record_changed_record_draws_a_fresh_coin():
    rng = np.random.default_rng(3)
    n = 2 * UNITS
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.5
    changed = rng.random(n) < 0.5
    first = pl.DataFrame({"unit": np.arange(n), "a": a, "b": b})
    second = first.with_columns(pl.Series("a", a ^ changed))  # only column a changes
    out1 = ppdm.rr_disguise(first, ["a", "b"], p=P, mode="whole_record", secret=SECRET, key="unit")
    out2 = ppdm.rr_disguise(second, ["a", "b"], p=P, mode="whole_record", secret=SECRET, key="unit")
    # b did not change: under one coin per unit (old keying) its release never changed.
    b_moved = (out1["b"] != out2["b"]).to_numpy()
    # Fresh coins: b's release changes when the two coins differ, 2 p (1 - p) = 0.32.
    assert within_5_se(float(b_moved[changed].mean()), 2 * P * (1 - P), int(changed.sum()))
    assert not b_moved[~changed].any()  # (c) an unchanged record keeps its coin


# (c) unchanged values: identical bits across runs, batches and row orders ---------------------


def test_c_reruns_over_unchanged_values_reproduce_the_bits(two_rows):
    cats = ["a", "b", "c"]
    frame = two_rows.with_columns(c=pl.col("row").mod(3).replace_strict([0, 1, 2], cats))
    run = lambda f: ppdm.rr_disguise(  # noqa: E731
        f, ["x", "bit", "c"], p=0.7, secret=SECRET, key="unit", categories={"x": None, "bit": None, "c": cats}
    )
    once = run(frame)
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=5)
    assert_frame_equal(run(shuffled).sort("row"), once)
    in_pieces = pl.concat([run(frame.slice(0, 12_345)), run(frame.slice(12_345))])
    assert_frame_equal(in_pieces, once)
    noised = ppdm.add_noise(frame, "v", scale=1.0, secret=SECRET, key="unit")
    assert_frame_equal(
        ppdm.add_noise(shuffled, "v", scale=1.0, secret=SECRET, key="unit").sort("row"), noised
    )


# (e) a unit's rows with equal values share their coin ---------------------------------------------


def test_e_equal_values_of_one_unit_share_the_coin(two_rows):
    cats = ["a", "b", "c"]
    frame = two_rows.with_columns(c=pl.col("x").cast(pl.Int8).replace_strict([0, 1], ["a", "c"]))
    out = ppdm.rr_disguise(
        frame,
        ["x", "bit", "c"],
        p=0.55,
        secret=SECRET,
        key="unit",
        categories={"x": None, "bit": None, "c": cats},
    )
    noised = ppdm.add_noise(frame, "v", scale=1.0, secret=SECRET, key="unit")
    whole = ppdm.rr_disguise(frame, ["x", "bit"], p=0.55, mode="whole_record", secret=SECRET, key="unit")
    true_a, true_b = released_pairs(frame, "x")
    equal = true_a == true_b
    assert equal.sum() > 1000
    for released, column in ((out, "x"), (out, "bit"), (out, "c"), (noised, "v"), (whole, "x")):
        first, second = released_pairs(released, column)
        np.testing.assert_array_equal(first[equal], second[equal])


def test_the_same_value_in_two_columns_draws_independent_coins(two_rows):
    frame = two_rows.with_columns(y=pl.col("x"))
    out = ppdm.rr_disguise(frame, ["x", "y"], p=0.5001, secret=SECRET, key="unit")
    agree = float((out["x"] == out["y"]).mean())
    assert within_5_se(agree, 0.5, frame.height)


# (d) the same bits in every engine ----------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed() -> pl.DataFrame:
    """Units with 1 to 4 rows, repeated and changed values, nulls."""
    rng = np.random.default_rng(9)
    n = 30_000
    units = rng.integers(0, n // 3, n)
    x = rng.random(n) < 0.4
    return pl.DataFrame(
        {
            "row": np.arange(n),
            "unit": units * 7 - 1000,
            "x": x,
            "y": rng.random(n) < 0.7,
            "c": rng.choice(["a", "b", "c", "d"], n),
            "v": np.round(rng.normal(50, 10, n), 1),
        }
    ).with_columns(
        pl.when(pl.col("row") % 11 == 0).then(None).otherwise(pl.col("x")).alias("x"),
        pl.when(pl.col("row") % 13 == 0).then(None).otherwise(pl.col("v")).alias("v"),
    )


def polars_engines(frame: pl.DataFrame, build) -> list[pl.DataFrame]:
    eager = build(frame)
    lazy = build(frame.lazy())
    return [eager, lazy.collect(), lazy.collect(engine="streaming"), lazy.collect(engine="in-memory")]


def test_d_polars_engines_and_duckdb_give_the_same_bits(mixed):
    cats = ["a", "b", "c", "d"]
    per_attribute = lambda f: ppdm.rr_disguise(  # noqa: E731
        f,
        ["x", "y", "c"],
        p={"x": 0.8, "y": 0.7, "c": 0.6},
        secret=HEX,
        key="unit",
        categories={"c": cats, "x": None, "y": None},
    )
    whole = lambda f: ppdm.rr_disguise(f, ["x", "y"], p=0.75, mode="whole_record", secret=HEX, key="unit")  # noqa: E731
    noise = lambda f: ppdm.add_noise(f, "v", dist="gaussian", scale=3.0, secret=HEX, key="unit")  # noqa: E731
    results = {}
    for name, build in (("per_attribute", per_attribute), ("whole", whole), ("noise", noise)):
        outs = polars_engines(mixed, build)
        for out in outs[1:]:
            assert_frame_equal(out, outs[0])
        results[name] = outs[0]

    con = ppdm.duckdb.register(duckdb.connect())
    arrow = mixed.to_arrow()  # noqa: F841  (read by the SQL below)
    con.execute("CREATE TABLE t AS SELECT * FROM arrow")  # a table: the bulk path's cursor sees it
    sql = con.sql(
        f"""SELECT row,
            ppdm_rr_disguise(x, 0.8, '{HEX}', unit, 'x') AS x,
            ppdm_rr_disguise(y, 0.7, '{HEX}', unit, 'y') AS y,
            ppdm_rr_disguise_k(c, {cats}, 0.6, '{HEX}', unit, 'c') AS c,
            ppdm_rr_disguise_whole_record(x, ['x', 'y'], 0.75, '{HEX}', unit, record := [x, y]) AS wx,
            ppdm_rr_disguise_whole_record(y, ['x', 'y'], 0.75, '{HEX}', unit, record := [x, y]) AS wy,
            ppdm_add_noise(v, 3.0, '{HEX}', unit, 'v') AS v
        FROM t ORDER BY row"""
    ).pl()
    for column in ("x", "y", "c"):
        assert sql[column].to_list() == results["per_attribute"][column].to_list(), column
    assert sql["wx"].to_list() == results["whole"]["x"].to_list()
    assert sql["wy"].to_list() == results["whole"]["y"].to_list()
    assert sql["v"].to_list() == results["noise"]["v"].to_list()  # bit for bit

    for mode, want, columns in (
        ("per_attribute", results["per_attribute"], ["x", "y", "c"]),
        ("whole_record", results["whole"], ["x", "y"]),
    ):
        params = (
            dict(p={"x": 0.8, "y": 0.7, "c": 0.6}, categories={"c": cats, "x": None, "y": None})
            if mode == "per_attribute"
            else dict(p=0.75)
        )
        reader = ppdm.duckdb.rr_disguise_batches(
            con, "SELECT * FROM t", columns, mode=mode, secret=HEX, key="unit", batch_rows=4_000, **params
        )
        bulk = pl.from_arrow(reader.read_all())
        assert_frame_equal(bulk.sort("row"), want.sort("row"), check_dtypes=False)


def test_d_duckdb_boolean_fast_path_equals_the_polars_path(mixed):
    """The UDF's bitmap path (no NULL keys, byte-aligned vectors) and its Polars path give
    the same bits; both key the coin by unit and value."""
    con = ppdm.duckdb.register(duckdb.connect())
    con.register("t", mixed.to_arrow())
    rows = con.sql(
        f"SELECT ppdm_rr_disguise(y, 0.8, '{HEX}', unit, 'y') AS fast, "
        f"ppdm_rr_disguise(y, 0.8, '{HEX}', if(row < 0, NULL, unit), 'y') AS slow FROM t ORDER BY row"
    ).pl()
    assert rows["fast"].to_list() == rows["slow"].to_list()


# DuckDB's whole-record UDF needs the record --------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "ppdm_rr_disguise_whole_record(a, ['a', 'b'], 0.8, '{s}', id)",
            r"'record' argument .*\(record := \[a, b\]\)",
        ),
        ("ppdm_rr_disguise_whole_record(a, ['a', 'b'], 0.8, '{s}', id, record := [a])", r"'record' argument"),
        (
            "ppdm_rr_disguise_whole_record(a, ['a', 'b'], 0.8, '{s}', id, record := [b, b])",
            r"'x' argument .* one of",
        ),
    ],
)
def test_duckdb_whole_record_needs_the_record(call, message):
    con = ppdm.duckdb.register(duckdb.connect())
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 2 = 0 AS a, i % 3 = 0 AS b FROM range(10) r(i)")
    with pytest.raises(duckdb.Error, match=message) as caught:
        con.sql(f"SELECT {call.format(s=HEX)} FROM t").fetchall()
    assert HEX not in str(caught.value).split("\nLINE ")[0]


def test_add_noise_minus_zero_counts_as_zero():
    frame = pl.DataFrame({"unit": [1, 1], "v": [0.0, -0.0]})
    out = ppdm.add_noise(frame, "v", scale=1.0, secret=SECRET, key="unit")
    assert out["v"][0] == out["v"][1]


def test_duckdb_refuses_nothing_new_for_a_plain_rr_call():
    """The scalar binary UDF is unchanged in signature: value keying needs no argument."""
    con = ppdm.duckdb.register(duckdb.connect())
    got = con.sql(
        f"SELECT ppdm_rr_disguise(x, 1.0, '{HEX}', i, 'x') FROM (VALUES (true, 1), (false, 1)) t(x, i)"
    )
    assert got.fetchall() == [(True,), (False,)]


def test_a_whole_record_with_two_columns_is_not_ldp():
    """Documented, not fixed (it is paper 003's method): under whole-record disguise the XOR
    of two released columns is the true XOR, so some outputs are impossible for some
    inputs (P(00 | true 01) = 0): no finite epsilon bounds it."""
    n = 5_000
    frame = pl.DataFrame({"unit": np.arange(n), "a": [False] * n, "b": [True] * n})
    out = ppdm.rr_disguise(frame, ["a", "b"], p=0.6, mode="whole_record", secret=SECRET, key="unit")
    assert ((out["a"] ^ out["b"]) == (frame["a"] ^ frame["b"])).all()


# ---- spiral keys (review 50) --------------------------------------------------------------


def _spiral(columns, bounds=(0.0, 1.0), secret=11, **params):
    return ppdm.spiral_key(
        columns, bounds={c: bounds for c in columns}, secret=ppdm.Secret.for_tests(secret), **params
    )


def test_spiral_keys_of_other_columns_or_bounds_are_unrelated():
    """A spiral key was drawn under the secret alone: every key of as many columns had one
    matrix (and, with the same bounds, one offset), so 3 rows known of one release undid
    every other release under the secret, to 1e-15 (review 50)."""
    base = _spiral(["salary", "age"])
    others = [
        _spiral(["lat", "lon"]),
        _spiral(["age", "salary"]),  # the order of the columns is part of the key
        _spiral(["salary", "age"], bounds=(0.0, 2.0)),
        _spiral(["salary", "age"], rounds=6),
        _spiral(["salary", "age"], factors=(0.2, 5.0)),
    ]
    for other in others:
        assert not np.allclose(np.abs(other.matrix), np.abs(base.matrix), rtol=1e-3)
    # The same query under the same secret is the same key (a key file is checked against it).
    assert np.array_equal(_spiral(["salary", "age"]).matrix, base.matrix)
    assert not np.allclose(
        np.abs(_spiral(["salary", "age"], secret=12).matrix), np.abs(base.matrix), rtol=1e-3
    )
