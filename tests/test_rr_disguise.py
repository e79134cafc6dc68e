"""rr_disguise on Polars: dtypes, nulls, modes, and a clear error for every bad input."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal, assert_series_equal

import polars_ppdm as ppdm
from polars_ppdm.exceptions import InvalidParameterError

N = 20_000


@pytest.fixture
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    return pl.DataFrame(
        {
            "id": np.arange(N),
            "flag": rng.random(N) < 0.3,
            "bit": (rng.random(N) < 0.6).astype(np.int8),
            "colour": rng.choice(["red", "green", "blue"], N),
        }
    )


def flip_share(before: pl.Series, after: pl.Series) -> float:
    return float((before != after).mean())


def within_5_se(share: float, expected: float, n: int) -> bool:
    return abs(share - expected) <= 5 * math.sqrt(expected * (1 - expected) / n)


def test_binary_columns_flip_with_probability_1_minus_p(frame):
    out = frame.with_columns(
        pl.col("flag").ppdm.rr_disguise(p=0.8, secret=1, key="id"),
        pl.col("bit").ppdm.rr_disguise(p=0.7, secret=1, key="id"),
    )
    assert out.schema == frame.schema
    assert within_5_se(flip_share(frame["flag"], out["flag"]), 0.2, N)
    assert within_5_se(flip_share(frame["bit"], out["bit"]), 0.3, N)
    assert set(out["bit"].unique().to_list()) <= {0, 1}


def test_default_stream_is_the_column_name_so_columns_get_independent_coins(frame):
    both = frame.with_columns(pl.col("flag").alias("flag2")).with_columns(
        pl.col("flag").ppdm.rr_disguise(p=0.5001, secret=1, key="id"),
        pl.col("flag2").ppdm.rr_disguise(p=0.5001, secret=1, key="id"),
    )
    agree = float((both["flag"] == both["flag2"]).mean())
    assert within_5_se(agree, 0.5, N)  # independent coins agree half the time
    same = frame.select(
        pl.col("flag").ppdm.rr_disguise(p=0.6, secret=1, key="id"),
        pl.col("flag").ppdm.rr_disguise(p=0.6, secret=1, key="id", stream="flag").alias("explicit"),
    )
    assert same["flag"].equals(same["explicit"].alias("flag"))


def test_kary_string_enum_and_categorical_share_the_draws(frame):
    cats = ["red", "green", "blue"]
    enum = pl.Enum(cats)
    out = frame.select(
        pl.col("colour").ppdm.rr_disguise(p=0.6, secret=2, key="id", categories=cats),
        pl.col("colour").cast(enum).ppdm.rr_disguise(p=0.6, secret=2, key="id", stream="colour").alias("as_enum"),
        pl.col("colour")
        .cast(pl.Categorical)
        .ppdm.rr_disguise(p=0.6, secret=2, key="id", categories=cats, stream="colour")
        .alias("as_cat"),
    )
    assert dict(out.schema) == {"colour": pl.String, "as_enum": enum, "as_cat": pl.Categorical}
    assert out["colour"].equals(out["as_enum"].cast(pl.String).alias("colour"))
    assert out["colour"].equals(out["as_cat"].cast(pl.String).alias("colour"))
    changed = frame["colour"] != out["colour"]
    assert within_5_se(float(changed.mean()), 0.4, N)
    # A lie is uniform over the two other colours.
    lies = frame.filter(changed.to_numpy() & (frame["colour"] == "red").to_numpy())
    lied_to = out.filter(changed.to_numpy() & (frame["colour"] == "red").to_numpy())["colour"]
    assert within_5_se(float((lied_to == "green").mean()), 0.5, len(lies))


def test_nulls_stay_null_and_rows_keep_order(frame):
    with_nulls = frame.with_columns(
        pl.when(pl.col("id") % 7 == 0).then(None).otherwise(pl.col("flag")).alias("flag"),
        pl.when(pl.col("id") % 5 == 0).then(None).otherwise(pl.col("colour")).alias("colour"),
    )
    out = ppdm.rr_disguise(
        with_nulls,
        ["flag", "colour"],
        p=0.9,
        secret=3,
        key="id",
        categories={"flag": None, "colour": ["red", "green", "blue"]},
    )
    assert_series_equal(out["flag"].is_null(), with_nulls["flag"].is_null())
    assert_series_equal(out["colour"].is_null(), with_nulls["colour"].is_null())
    assert_series_equal(out["id"], with_nulls["id"])


def test_frame_in_frame_out_lazy_stays_lazy(frame):
    lazy = ppdm.rr_disguise(frame.lazy(), "flag", p=0.9, secret=4, key="id")
    assert isinstance(lazy, pl.LazyFrame)
    eager = ppdm.rr_disguise(frame, "flag", p=0.9, secret=4, key="id")
    assert isinstance(eager, pl.DataFrame)
    assert_frame_equal(lazy.collect(), eager)
    assert_frame_equal(frame.ppdm.rr_disguise("flag", p=0.9, secret=4, key="id"), eager)
    assert_frame_equal(frame.lazy().ppdm.rr_disguise("flag", p=0.9, secret=4, key="id").collect(), eager)


def test_frame_per_attribute_equals_the_expressions(frame):
    exprs = frame.with_columns(
        pl.col("flag").ppdm.rr_disguise(p=0.9, secret=5, key="id"),
        pl.col("bit").ppdm.rr_disguise(p=0.7, secret=5, key="id"),
    )
    framewise = ppdm.rr_disguise(frame, ["flag", "bit"], p={"flag": 0.9, "bit": 0.7}, secret=5, key="id")
    assert_frame_equal(exprs, framewise)


def test_whole_record_negates_every_column_of_a_lying_row(frame):
    out = ppdm.rr_disguise(frame, ["flag", "bit"], p=0.75, mode="whole_record", secret=6, key="id")
    flag_flipped = (frame["flag"] != out["flag"]).to_numpy()
    bit_flipped = (frame["bit"] != out["bit"]).to_numpy()
    assert np.array_equal(flag_flipped, bit_flipped)
    assert within_5_se(float(flag_flipped.mean()), 0.25, N)


def test_whole_record_refuses_kary_columns(frame):
    with pytest.raises(InvalidParameterError, match="binary"):
        ppdm.rr_disguise(
            frame,
            ["flag", "colour"],
            p=0.8,
            mode="whole_record",
            secret=1,
            categories={"flag": None, "colour": ["red", "green", "blue"]},
        )


def test_p_one_is_identity_and_p_zero_negates(frame):
    same = ppdm.rr_disguise(frame, ["flag", "bit"], p=1.0, secret=1)
    assert_frame_equal(same, frame)
    negated = ppdm.rr_disguise(frame, ["flag"], p=0.0, secret=1)
    assert_series_equal(negated["flag"], ~frame["flag"])


def test_epsilon_sets_p():
    assert math.isclose(ppdm.rr_p_from_epsilon(math.log(4)), 0.8)
    df = pl.DataFrame({"x": [True, False] * 5000})
    a = df.select(pl.col("x").ppdm.rr_disguise(epsilon=math.log(4), secret=9))
    b = df.select(pl.col("x").ppdm.rr_disguise(p=0.8, secret=9))
    assert_frame_equal(a, b)
    assert math.isclose(ppdm.rr_epsilon(0.8), math.log(4))
    assert math.isclose(ppdm.rr_epsilon(0.6, k=3), math.log(0.6 * 2 / 0.4))


def test_string_keys_and_row_position_keys():
    df = pl.DataFrame({"email": ["a@x", "b@x", "c@x", "a@x"] * 500, "x": [True, False, True, True] * 500})
    out = df.with_columns(pl.col("x").ppdm.rr_disguise(p=0.7, secret=1, key="email"))
    # Same key and same value: the same coin, so the same answer.
    first = out.filter(pl.col("email") == "a@x")["x"].unique()
    assert first.len() == 1
    by_position = df.with_columns(pl.col("x").ppdm.rr_disguise(p=0.7, secret=1))
    explicit = (
        df.with_row_index("pos")
        .with_columns(pl.col("x").ppdm.rr_disguise(p=0.7, secret=1, key=pl.col("pos").cast(pl.UInt64)))
        .drop("pos")
    )
    assert_frame_equal(by_position, explicit)


@pytest.mark.parametrize("wide", [pl.Int128, pl.UInt128])
def test_128_bit_keys_give_the_64_bit_keys_bits_or_a_clear_refusal(wide):
    x = [True, False, True, True] * 50
    signed = pl.Series("id", np.arange(200) - (0 if wide == pl.UInt128 else 100))
    narrow = pl.DataFrame({"id": signed, "x": x})
    big = narrow.with_columns(pl.col("id").cast(wide))
    # the same key values: the same draws as Int64 keys (and UInt64 keys above 2^63)
    assert_frame_equal(
        ppdm.rr_disguise(big, "x", p=0.7, secret=1, key="id").drop("id"),
        ppdm.rr_disguise(narrow, "x", p=0.7, secret=1, key="id").drop("id"),
    )
    top = pl.DataFrame({"id": pl.Series([2**64 - 1, 2**63], dtype=pl.UInt64), "x": [True, False]})
    assert_frame_equal(
        ppdm.rr_disguise(top.with_columns(pl.col("id").cast(wide)), "x", p=0.7, secret=1, key="id").drop(
            "id"
        ),
        ppdm.rr_disguise(top, "x", p=0.7, secret=1, key="id").drop("id"),
    )
    beyond = big.with_columns(pl.Series("id", [2**100] * 200, dtype=wide))
    for run in (
        lambda: ppdm.rr_disguise(beyond, "x", p=0.7, secret=1, key="id"),
        lambda: ppdm.add_noise(beyond.with_columns(v=1.0), "v", scale=1.0, secret=1, key="id"),
        lambda: ppdm.ecdf_resample(beyond.with_columns(v=pl.int_range(200) * 1.0), "v", secret=1, key="id"),
    ):
        # was Polars' raw "conversion from `i128` to `i64` failed"
        with pytest.raises(
            InvalidParameterError, match=r"key column 'id' .* must hold integers that fit in 64 bits"
        ):
            run()


def test_no_seed_draws_a_fresh_secret_each_time(frame):
    a = ppdm.rr_disguise(frame, "flag", p=0.5001)
    b = ppdm.rr_disguise(frame, "flag", p=0.5001)
    assert not a.equals(b)


def test_empty_frame_returns_empty():
    empty = pl.DataFrame({"id": [], "x": []}, schema={"id": pl.Int64, "x": pl.Boolean})
    out = ppdm.rr_disguise(empty, "x", p=0.8, secret=1, key="id")
    assert out.shape == (0, 2) and out.schema == empty.schema


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p": 1.5}, r"'p' parameter of rr_disguise \(column 'flag'\) must be a float in \[0, 1\]. Got 1.5"),
        ({"p": -0.1}, r"'p' parameter"),
        ({"p": 0.5}, r"other than 1/k = 0.5"),
        ({"p": float("nan")}, r"'p' parameter"),
        (
            {"epsilon": 0.0},
            r"'epsilon' parameter of rr_disguise \(column 'flag'\) must be a float > 0. Got 0.0",
        ),
        ({"epsilon": -1.0}, r"'epsilon'"),
        ({"p": 0.8, "epsilon": 1.0}, r"exactly one of 'p' and 'epsilon'"),
        ({}, r"exactly one of 'p' and 'epsilon'"),
        (
            {"p": 0.8, "mode": "row"},
            r"'mode' parameter of rr_disguise must be one of 'per_attribute', 'whole_record'. Got 'row'",
        ),
        ({"p": 0.8, "key": "nope"}, r"'key' parameter of rr_disguise must be columns of the frame"),
    ],
)
def test_bad_parameters_are_refused_before_any_data_is_read(frame, kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.rr_disguise(frame.lazy(), ["flag"], **{"secret": 1, **kwargs})


def test_p_one_over_k_for_kary(frame):
    with pytest.raises(InvalidParameterError, match=r"1/k = 0.333333"):
        ppdm.rr_disguise(frame, "colour", p=1 / 3, secret=1, categories=["red", "green", "blue"])


@pytest.mark.parametrize("columns", [[], "missing", ["flag", "flag"]])
def test_bad_columns(frame, columns):
    with pytest.raises(InvalidParameterError, match="'columns' parameter of rr_disguise"):
        ppdm.rr_disguise(frame, columns, p=0.8, secret=1)


def test_values_outside_zero_one_in_a_binary_column():
    df = pl.DataFrame({"x": [0, 1, 2, 1]})
    with pytest.raises(InvalidParameterError, match=r"must hold only 0 and 1\. It holds other values"):
        df.with_columns(pl.col("x").ppdm.rr_disguise(p=0.8, secret=1))
    with pytest.raises(InvalidParameterError, match="must hold only 0 and 1"):
        ppdm.rr_disguise(df, "x", p=0.8, mode="whole_record", secret=1)


def test_string_column_needs_public_categories(frame):
    with pytest.raises(InvalidParameterError, match=r"'categories' parameter of rr_disguise .* is required"):
        ppdm.rr_disguise(frame, "colour", p=0.8, secret=1)
    with pytest.raises(InvalidParameterError, match=r"outside its 'categories'"):
        ppdm.rr_disguise(frame, "colour", p=0.8, secret=1, categories=["red", "green"])
    # A null category would turn real values into nulls: a null is missing, never an output.
    with pytest.raises(
        InvalidParameterError, match=r"distinct, non-null values. Got \['red', 'green', 'blue', None\]"
    ):
        ppdm.rr_disguise(frame, "colour", p=0.8, secret=1, categories=["red", "green", "blue", None])


def test_unsupported_dtypes_and_null_keys():
    with pytest.raises(InvalidParameterError, match="Got dtype Float64"):
        pl.DataFrame({"x": [0.5]}).with_columns(pl.col("x").ppdm.rr_disguise(p=0.8, secret=1))
    df = pl.DataFrame({"k": [1, None], "x": [True, False]})
    with pytest.raises(InvalidParameterError, match="null value"):
        df.with_columns(pl.col("x").ppdm.rr_disguise(p=0.8, secret=1, key="k"))
    with pytest.raises(InvalidParameterError, match="integer or string"):
        pl.DataFrame({"k": [1.0], "x": [True]}).with_columns(
            pl.col("x").ppdm.rr_disguise(p=0.8, secret=1, key="k")
        )


def test_not_a_frame():
    with pytest.raises(InvalidParameterError, match=r"DataFrame or LazyFrame\. Got dict"):
        ppdm.rr_disguise({"x": [1]}, "x", p=0.8)


@pytest.mark.parametrize("offset", [0, 3, 8, 13])
@pytest.mark.parametrize("with_nulls", [False, True])
def test_boolean_bitmap_path_equals_the_code_path(offset, with_nulls):
    """The Boolean fast path (keep decisions applied by Polars to its bitmap) gives the
    bits of the general kernel, also on slices that start mid-byte and with nulls."""
    from polars_ppdm.kernels.prf import stream_id
    from polars_ppdm.kernels.rr import disguise_codes

    n = 70_000 + offset  # more than one PRF chunk
    rng = np.random.default_rng(offset)
    values = rng.random(n) < 0.4
    mask = rng.random(n) < 0.1 if with_nulls else np.zeros(n, dtype=bool)
    series = pl.Series("x", [None if m else bool(v) for v, m in zip(values, mask, strict=True)])
    keys = pl.Series("id", np.arange(n) * 7 - 5)
    sliced, sliced_keys = series.slice(offset), keys.slice(offset)
    out = pl.DataFrame({"x": sliced, "id": sliced_keys}).select(
        pl.col("x").ppdm.rr_disguise(p=0.7, secret=3, key="id")
    )["x"]
    expected = disguise_codes(
        values[offset:],
        2,
        0.7,
        ppdm.resolve_secret(3).key,
        stream_id("x"),
        (np.arange(n) * 7 - 5)[offset:],
    )
    assert out.null_count() == mask[offset:].sum()
    np.testing.assert_array_equal(out.is_null().to_numpy(), mask[offset:])
    valid = ~mask[offset:]
    np.testing.assert_array_equal(out.to_numpy()[valid].astype(bool), expected[valid])


def test_streaming_a_boolean_column_does_not_load_pyarrow():
    """pyarrow costs ~50 MB of RSS: the package and the Boolean streaming path never
    import it (the 200 MB bar of scan -> rr_disguise -> sink depends on it); string keys
    and the DuckDB front-end still use it, on demand."""
    script = (
        "import sys, polars as pl, polars_ppdm as ppdm\n"
        "lf = pl.LazyFrame({'id': range(1000), 'x': [True, None, False, True] * 250})\n"
        "out = lf.with_columns(pl.col('x').ppdm.rr_disguise(p=0.9, secret=1, key='id')).collect(engine='streaming')\n"
        "assert out['x'].null_count() == 250\n"
        "print('pyarrow' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("columns", [None, 5])
def test_columns_must_be_names(frame, columns):
    with pytest.raises(
        InvalidParameterError, match="'columns' parameter of rr_disguise must be a column name or a list"
    ):
        ppdm.rr_disguise(frame, columns, p=0.8, secret=1)


def test_stream_must_be_a_string():
    with pytest.raises(InvalidParameterError, match=r"'stream' label must be a str. Got 5"):
        pl.DataFrame({"x": [True]}).select(pl.col("x").ppdm.rr_disguise(p=0.8, secret=1, stream=5))


def test_boolean_bitmap_of_chunked_and_sliced_series(monkeypatch):
    """The Boolean path reads Polars' bitmap through the Arrow C data interface: the bits
    of every row, from any chunk layout and bit offset, as ``to_numpy`` gives them."""
    from polars_ppdm.kernels.rr import disguise_codes
    from polars_ppdm.perturb.rr import _disguise_boolean, _value_bits

    rng = np.random.default_rng(9)
    parts = [pl.Series("x", rng.random(n) < 0.5) for n in (13, 70_001, 5)]
    chunked = pl.concat([parts[0], parts[1].slice(3), parts[2]], rechunk=False)
    assert chunked.n_chunks() == 3
    for series in (chunked, chunked.slice(11, 40_000), parts[1].slice(5, 7), parts[0].slice(13)):
        bits, offset = _value_bits(series)
        unpacked = np.unpackbits(bits, bitorder="little")[offset : offset + len(series)]
        np.testing.assert_array_equal(unpacked.view(bool), series.to_numpy())
        keys = pl.Series("id", np.arange(len(series)) * 3)
        secret = ppdm.resolve_secret(5).key
        out = _disguise_boolean(series, keys, keep=0.7, secret=secret, stream=1, func="rr_disguise")
        expected = disguise_codes(series.to_numpy(), 2, 0.7, secret, 1, keys.to_numpy())
        np.testing.assert_array_equal(out.to_numpy(), expected)
    # Where Polars exports no bitmap, the unpacked values give the same bits.
    keys = pl.Series("id", np.arange(len(chunked)) * 3)
    bitmap_path = _disguise_boolean(chunked, keys, keep=0.7, secret=secret, stream=1, func="rr_disguise")
    monkeypatch.setattr("polars_ppdm.perturb.rr._value_bits", lambda series: None)
    unpacked_path = _disguise_boolean(chunked, keys, keep=0.7, secret=secret, stream=1, func="rr_disguise")
    assert unpacked_path.equals(bitmap_path)
