"""The compiled Polars plugin of rr_disguise (``native/src/plugin.rs``, issue 30) against
the map_batches path, and the attacks on it: the plan it builds holds no secret, a plan
taken to another process does not run with another key, a second thread gets the same
bits, and a null key under a value is refused with the column's name.

The reference is :func:`polars_ppdm.rr_disguise_expr` (map_batches), on the compiled
kernels and on the pure NumPy / pyca path; the plugin must give their bits on every
layout Polars can hand it: several chunks, chunks that differ between the value and
the key column, arrays at a bit offset, nulls on either side, every integer key dtype.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import polars as pl
import pytest
from _helpers import refusal_in_another_process
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polars_ppdm as ppdm
from polars_ppdm.kernels import _native
from polars_ppdm.kernels.noise import noise_grid
from polars_ppdm.perturb._plugin import plugin_directory, rr_boolean_plugin

NATIVE = _native.load()
pytestmark = pytest.mark.skipif(
    NATIVE is None, reason="the compiled kernels are not installed (or PPDM_NATIVE=0)"
)
SECRET = bytes(range(7, 23))
INTEGER_KEYS = [pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64]


def plan_text(lazy: pl.LazyFrame) -> str:
    return lazy.explain(optimized=False)


def disguised(df: pl.DataFrame, columns, *, key, engine="auto", **params) -> pl.DataFrame:
    """The frame-level function (the plugin where it serves)."""
    return ppdm.rr_disguise(df.lazy(), columns, secret=SECRET, key=key, **params).collect(engine=engine)


def reference(df: pl.DataFrame, columns, *, key, pure: bool, monkeypatch, **params) -> pl.DataFrame:
    """The map_batches path of the same draws, on the compiled or the pure kernels."""
    monkeypatch.setattr(_native, "NATIVE", None if pure else NATIVE)
    try:
        exprs = [ppdm.rr_disguise_expr(pl.col(c), secret=SECRET, key=key, **params) for c in columns]
        return df.lazy().with_columns(exprs).collect()
    finally:
        monkeypatch.setattr(_native, "NATIVE", NATIVE)


def uses_plugin(df: pl.DataFrame, columns, *, key, **params) -> bool:
    return "rr_keep_bool" in plan_text(ppdm.rr_disguise(df.lazy(), columns, secret=SECRET, key=key, **params))


def frame(n: int, *, seed: int = 0, key_dtype=pl.Int64, null_every: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    df = pl.DataFrame({"id": np.arange(n) - n // 3, "a": rng.random(n) < 0.3, "b": rng.random(n) < 0.6})
    if null_every:
        df = df.with_columns(
            pl.when(pl.int_range(pl.len()) % null_every == 0).then(None).otherwise("a").alias("a")
        )
    return df.with_columns(pl.col("id").cast(key_dtype, wrap_numerical=True))


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
@pytest.mark.parametrize("key_dtype", INTEGER_KEYS)
def test_same_bits_every_integer_key(key_dtype, pure, monkeypatch):
    # 2,000 rows: two AES batches of 960 and a partial byte; negative ids wrap in the
    # narrow and unsigned dtypes, so sign- and zero-extension are both exercised.
    df = frame(2_003, key_dtype=key_dtype, null_every=7)
    assert uses_plugin(df, ["a", "b"], key="id", p=0.8)
    got = disguised(df, ["a", "b"], key="id", p=0.8)
    assert got.equals(reference(df, ["a", "b"], key="id", pure=pure, monkeypatch=monkeypatch, p=0.8))


@pytest.mark.parametrize("params", [{"p": 0.8}, {"p": 1.0}, {"p": 0.0}, {"epsilon": 1.5}, {"p": 0.999999}])
def test_same_bits_every_keep_probability(params, monkeypatch):
    df = frame(1_000, null_every=5)
    got = disguised(df, ["a", "b"], key="id", **params)
    assert got.equals(reference(df, ["a", "b"], key="id", pure=True, monkeypatch=monkeypatch, **params))
    if params.get("p") == 1.0:
        assert got.equals(df)


def test_row_position_key_in_memory_and_streaming(monkeypatch):
    df = frame(5_000, null_every=3)
    expected = reference(df, ["a"], key=None, pure=False, monkeypatch=monkeypatch, p=0.7)
    assert uses_plugin(df, ["a"], key=None, p=0.7)
    assert disguised(df, ["a"], key=None, p=0.7).equals(expected)
    assert disguised(df, ["a"], key=None, p=0.7, engine="streaming").equals(expected)


def test_streaming_morsels_give_the_in_memory_bits(monkeypatch):
    df = frame(300_000, seed=3, null_every=11)
    expected = reference(df, ["a", "b"], key="id", pure=False, monkeypatch=monkeypatch, p=0.75)
    assert disguised(df, ["a", "b"], key="id", p=0.75, engine="streaming").equals(expected)


def chunked(series: pl.Series, cuts: list[int]) -> pl.Series:
    """``series`` as several chunks, cut at ``cuts``; each piece a slice (an array at an
    offset, often not a multiple of 8 bits)."""
    pieces, start = [], 0
    for cut in [*sorted(set(cuts)), len(series)]:
        pieces.append(series.slice(start, cut - start))
        start = cut
    out = pieces[0].clone()
    for piece in pieces[1:]:
        out.append(piece)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(0, 2_500),
    data=st.data(),
    p=st.sampled_from([0.55, 0.8, 0.95]),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_any_chunk_layout(n, data, p, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    offset = data.draw(st.integers(0, 9), label="offset")
    values = pl.Series("a", rng.random(n + offset) < 0.5).slice(offset)
    value_nulls = data.draw(st.booleans(), label="value nulls")
    if value_nulls:
        values = values.scatter(np.flatnonzero(rng.random(n) < 0.2), None)
    keys = pl.Series("id", rng.integers(-(2**40), 2**40, n + offset)).slice(offset)
    key_nulls = data.draw(st.booleans(), label="key nulls")
    if key_nulls and n:
        # Null keys only under null values: those rows need no draw.
        under = np.flatnonzero(values.is_null().to_numpy())
        keys = keys.scatter(under, None) if len(under) else keys
    value_cuts = data.draw(st.lists(st.integers(0, n), max_size=4), label="value cuts")
    key_cuts = data.draw(st.lists(st.integers(0, n), max_size=4), label="key cuts")
    df = pl.DataFrame([chunked(keys, key_cuts), chunked(values, value_cuts)])
    got = disguised(df, ["a"], key="id", p=p)
    assert got.equals(reference(df, ["a"], key="id", pure=True, monkeypatch=monkeypatch, p=p))


def test_empty_frame():
    df = pl.DataFrame({"id": pl.Series([], dtype=pl.Int64), "a": pl.Series([], dtype=pl.Boolean)})
    got = disguised(df, ["a"], key="id", p=0.8)
    assert got.schema == df.schema
    assert got.height == 0


def test_null_key_under_a_value_is_refused_with_the_column_name():
    df = pl.DataFrame({"unit": [1, None, 3], "a": [True, False, None]})
    # Lazy, collected by the user (both engines): Polars' ComputeError with the message.
    for engine in ("in-memory", "streaming"):
        with pytest.raises(pl.exceptions.ComputeError, match=r"key column 'unit'.* has null values in rows"):
            disguised(df, ["a"], key="unit", p=0.8, engine=engine)
    # Eager input: the library collects, and raises its own error type.
    with pytest.raises(ppdm.InvalidParameterError, match=r"key column 'unit'.* has null values in rows"):
        ppdm.rr_disguise(df, ["a"], p=0.8, secret=SECRET, key="unit")


def test_null_key_under_a_null_value_draws_nothing(monkeypatch):
    df = pl.DataFrame({"unit": [1, None, 3, 4], "a": [True, None, False, True]})
    got = disguised(df, ["a"], key="unit", p=0.6)
    assert got.equals(reference(df, ["a"], key="unit", pure=True, monkeypatch=monkeypatch, p=0.6))
    assert got["a"].null_count() == 1


def test_other_dtypes_keep_the_map_batches_path():
    strings = pl.DataFrame({"id": ["x", "y"], "a": [True, False]})
    assert not uses_plugin(strings, ["a"], key="id", p=0.8)
    ints = pl.DataFrame({"id": [1, 2], "a": [1, 0]})
    assert not uses_plugin(ints, ["a"], key="id", p=0.8)


def test_plan_and_serialized_plan_hold_no_secret():
    df = frame(100)
    lazy = ppdm.rr_disguise(df.lazy(), ["a"], p=0.8, secret=SECRET, key="id")
    assert "rr_keep_bool" in plan_text(lazy)
    serialized = lazy.serialize()
    assert SECRET not in serialized
    assert SECRET.hex() not in plan_text(lazy)
    # Nor the AES key schedule's first round key (the secret itself for AES-128), in any
    # byte order: the plan carries a handle only.
    assert SECRET[::-1] not in serialized


def test_a_plan_taken_to_another_process_does_not_run_there(tmp_path):
    df = frame(50)
    plan = ppdm.rr_disguise(df.lazy(), ["a"], p=0.8, secret=SECRET, key="id").serialize()
    assert "not known in this process" in refusal_in_another_process(plan, tmp_path)


def test_same_bits_from_a_second_thread(monkeypatch):
    df = frame(50_000, seed=5, null_every=4)
    expected = reference(df, ["a", "b"], key="id", pure=False, monkeypatch=monkeypatch, p=0.8)
    results: list[pl.DataFrame] = []

    def work():
        for _ in range(3):
            results.append(disguised(df, ["a", "b"], key="id", p=0.8, engine="streaming"))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 9
    assert all(r.equals(expected) for r in results)


def test_two_secrets_in_one_process_stay_apart():
    df = frame(2_000)
    one = ppdm.rr_disguise(df.lazy(), ["a"], p=0.6, secret=SECRET, key="id")
    two = ppdm.rr_disguise(df.lazy(), ["a"], p=0.6, secret=bytes(16), key="id")
    a, b = one.collect(), two.collect()
    assert not a.equals(b)
    assert one.collect().equals(a)


def test_without_the_compiled_kernels_no_plugin(monkeypatch):
    monkeypatch.setattr(_native, "NATIVE", None)
    assert plugin_directory() is None
    assert rr_boolean_plugin(pl.col("a"), pl.col("id"), keep=0.8, secret=SECRET, stream=1) is None
    df = frame(10)
    assert not uses_plugin(df, ["a"], key="id", p=0.8)


# ---- add_noise


def noisy(df: pl.DataFrame, columns, *, key, engine="auto", **params) -> pl.DataFrame:
    return ppdm.add_noise(df.lazy(), columns, secret=SECRET, key=key, **params).collect(engine=engine)


def noise_reference(df: pl.DataFrame, columns, *, key, pure: bool, monkeypatch, **params) -> pl.DataFrame:
    monkeypatch.setattr(_native, "NATIVE", None if pure else NATIVE)
    try:
        exprs = [ppdm.add_noise_expr(pl.col(c), secret=SECRET, key=key, **params).alias(c) for c in columns]
        return df.lazy().with_columns(exprs).collect()
    finally:
        monkeypatch.setattr(_native, "NATIVE", NATIVE)


def uses_noise_plugin(df: pl.DataFrame, columns, *, key, **params) -> bool:
    return "add_noise_f64" in plan_text(ppdm.add_noise(df.lazy(), columns, secret=SECRET, key=key, **params))


def real_frame(n: int, *, seed: int = 0, key_dtype=pl.Int64, null_every: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    df = pl.DataFrame(
        {
            "id": np.arange(n) - n // 3,
            "x": rng.normal(50.0, 20.0, n),
            "k": rng.integers(-5, 5, n).astype(np.int32),
            "f": rng.random(n).astype(np.float32),
        }
    )
    df = df.with_columns(pl.col("x").round(1))  # repeated values: same unit and value, same noise
    if null_every:
        df = df.with_columns(
            pl.when(pl.int_range(pl.len()) % null_every == 0).then(None).otherwise("x").alias("x")
        )
    return df.with_columns(pl.col("id").cast(key_dtype, wrap_numerical=True))


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
@pytest.mark.parametrize("dist", ["gaussian", "uniform"])
@pytest.mark.parametrize("key_dtype", [pl.Int8, pl.Int64, pl.UInt16, pl.UInt64])
def test_noise_same_bits(key_dtype, dist, pure, monkeypatch):
    df = real_frame(2_003, key_dtype=key_dtype, null_every=7)
    params = {"dist": dist, "scale": 2.5}
    assert uses_noise_plugin(df, ["x", "k", "f"], key="id", **params)
    got = noisy(df, ["x", "k", "f"], key="id", **params)
    assert got.equals(
        noise_reference(df, ["x", "k", "f"], key="id", pure=pure, monkeypatch=monkeypatch, **params)
    )


def test_noise_row_position_key_and_streaming(monkeypatch):
    df = real_frame(300_000, seed=2, null_every=13)
    expected = noise_reference(df, ["x"], key=None, pure=False, monkeypatch=monkeypatch, scale=1.0)
    assert noisy(df, ["x"], key=None, scale=1.0).equals(expected)
    expected = noise_reference(df, ["x", "f"], key="id", pure=False, monkeypatch=monkeypatch, scale=1.0)
    assert noisy(df, ["x", "f"], key="id", scale=1.0, engine="streaming").equals(expected)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 2_500), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_noise_property_any_chunk_layout(n, data, seed, monkeypatch):
    rng = np.random.default_rng(seed)
    offset = data.draw(st.integers(0, 9), label="offset")
    values = pl.Series("x", rng.choice([-0.0, 0.0, 1.5, -2.25, 1e300, 5e-324], n + offset)).slice(offset)
    if data.draw(st.booleans(), label="value nulls"):
        values = values.scatter(np.flatnonzero(rng.random(n) < 0.2), None)
    keys = pl.Series("id", rng.integers(0, 50, n + offset)).slice(offset)
    df = pl.DataFrame(
        [
            chunked(keys, data.draw(st.lists(st.integers(0, n), max_size=4), label="key cuts")),
            chunked(values, data.draw(st.lists(st.integers(0, n), max_size=4), label="value cuts")),
        ]
    )
    got = noisy(df, ["x"], key="id", scale=0.5)
    assert got.equals(noise_reference(df, ["x"], key="id", pure=True, monkeypatch=monkeypatch, scale=0.5))


@pytest.mark.parametrize("scale", [2.0**-998, 3e-300, 1e-9, 0.7, 3.0, 1e15, 1e300, 1e307])
def test_noise_same_bits_at_every_grid_and_magnitude(scale, monkeypatch):
    # The plugin puts x + r on the grid by the grid's reciprocal (a power of two): the
    # quotient's bits at every scale the API takes, for sums past 2**52 grid steps (kept as
    # they are), sums that overflow, ties, signed zeros and subnormals; nulls beside them.
    grid = noise_grid(scale)
    rng = np.random.default_rng(5)
    special = [
        0.0,
        -0.0,
        5e-324,
        -5e-324,
        1e300,
        -1e300,
        1.79e308,
        -1.79e308,
        min(2.0**52 * grid, 1e308),
        0.5 * grid,
    ]
    n = 4_001
    x = np.where(
        rng.random(n) < 0.5, rng.choice(special, n), rng.normal(0, 10 * scale, n).clip(-1e308, 1e308)
    )
    df = pl.DataFrame({"id": np.arange(n), "x": x}).with_columns(
        pl.when(pl.int_range(pl.len()) % 11 == 3).then(None).otherwise("x").alias("x")
    )
    for dist in ("gaussian", "uniform"):
        with np.errstate(over="ignore"):
            expected = noise_reference(
                df, ["x"], key="id", pure=True, monkeypatch=monkeypatch, scale=scale, dist=dist
            )
        assert noisy(df, ["x"], key="id", scale=scale, dist=dist).equals(expected)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_noise_refuses_nan_and_infinities_by_name(bad):
    df = pl.DataFrame({"id": [1, 2, 3], "x": [1.0, bad, 3.0]})
    with pytest.raises(ppdm.InvalidParameterError, match="column 'x' holds NaN or infinite"):
        ppdm.add_noise(df, "x", scale=1.0, secret=SECRET, key="id")
    # Lazy, collected by the user: Polars' ComputeError carrying the library's message (a
    # compiled plugin cannot raise a Python exception; see plugin_errors).
    with pytest.raises(pl.exceptions.ComputeError, match="column 'x' holds NaN or infinite"):
        noisy(df, ["x"], key="id", scale=1.0, engine="streaming")


def test_noise_nan_under_a_null_is_not_read(monkeypatch):
    # A null whose buffer slot holds NaN: Polars keeps the NaN bits under the validity.
    df = pl.DataFrame({"id": [1, 2, 3], "x": [1.0, float("nan"), 3.0]})
    df = df.with_columns(pl.when(pl.col("x").is_nan()).then(None).otherwise("x").alias("x"))
    got = noisy(df, ["x"], key="id", scale=1.0)
    assert got["x"].null_count() == 1
    assert got.equals(noise_reference(df, ["x"], key="id", pure=True, monkeypatch=monkeypatch, scale=1.0))


def test_noise_null_key_under_a_value_is_refused():
    df = pl.DataFrame({"unit": [1, None, 3], "x": [1.0, 2.0, None]})
    with pytest.raises(
        ppdm.InvalidParameterError, match="key column 'unit' of add_noise has null values in rows that need"
    ):
        ppdm.add_noise(df, "x", scale=1.0, secret=SECRET, key="unit")


def test_noise_plan_holds_no_secret():
    lazy = ppdm.add_noise(real_frame(10).lazy(), ["x"], scale=1.0, secret=SECRET, key="id")
    assert "add_noise_f64" in plan_text(lazy)
    assert SECRET not in lazy.serialize()


def test_noise_string_key_keeps_the_map_batches_path():
    df = pl.DataFrame({"id": ["a", "b"], "x": [1.0, 2.0]})
    assert not uses_noise_plugin(df, ["x"], key="id", scale=1.0)


def test_a_fresh_secret_is_not_kept_registered():
    # secret=None serves one call; the plugin path would keep it for the process's life.
    df = frame(100)
    assert "rr_keep_bool" not in plan_text(ppdm.rr_disguise(df.lazy(), ["a"], p=0.8, key="id"))
    reals = real_frame(100)
    assert "add_noise_f64" not in plan_text(ppdm.add_noise(reals.lazy(), ["x"], scale=1.0, key="id"))


def test_the_registry_is_bounded_and_a_dropped_secret_is_refused_not_replaced():
    # In a process of its own: 4,096 newer secrets push out the plan's, which then fails
    # with a message saying so (it never runs with another key).
    code = """
import os, sys
import polars as pl, polars_ppdm as ppdm
from polars_ppdm.perturb._plugin import secret_handle
df = pl.DataFrame({"id": [1, 2, 3], "a": [True, False, True]})
lazy = ppdm.rr_disguise(df.lazy(), ["a"], p=0.8, secret=bytes(range(16)), key="id")
lazy.collect()
for _ in range(4096):
    secret_handle(os.urandom(16))
try:
    lazy.collect()
except Exception as e:
    print(e); sys.exit(3)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "dropped after 4096 newer ones" in run.stdout


def test_the_fuzz_contract_takes_a_plugin_refusal_only_with_the_librarys_message():
    # tests/fuzz holds every error to "clear or the library's own type"; a compiled
    # plugin's refusal is Polars' ComputeError around the library's message.
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fuzz"))
    from fuzz_contract import violation_of_error

    clear = pl.exceptions.ComputeError(
        "the plugin failed with message: The key column 'id' of rr_disguise has null values in rows that "
        "need a random draw; every such row needs a key: fill the key or drop those rows first.\n\nThis error "
        "occurred in the following expression: x"
    )
    assert violation_of_error(clear) is None
    vague = pl.exceptions.ComputeError("the plugin failed with message: something went wrong")
    assert violation_of_error(vague) == "a compiled plugin's refusal names no parameter or column"
    other = pl.exceptions.ComputeError("out of range for the key column")
    assert violation_of_error(other) == "a Polars error leaked from inside"


def test_the_plugins_outputs_are_allocated_by_polars_allocator():
    """The plugins' output buffers come from Polars' own allocator (``polars._plr``'s
    capsule), which reuses freed pages; glibc gave them back to the kernel, and every
    streaming query faulted them in again (``native/src/polars_memory.rs``)."""
    from polars_ppdm.perturb._plugin import _share_polars_allocator

    lazy = ppdm.add_noise(real_frame(1000).lazy(), ["x"], scale=1.0, secret=SECRET, key="id")
    assert _share_polars_allocator() is True
    before = NATIVE.buffers_from_polars()
    lazy.collect(engine="streaming")
    assert NATIVE.buffers_from_polars() > before


def test_a_polars_without_an_allocator_capsule_is_not_an_error(monkeypatch):
    """A Polars that exports no allocator capsule (or names its compiled module otherwise):
    nothing is registered (the system's allocator serves a process in which nothing was),
    and the plugin gives the same bits."""
    import importlib
    import types

    from polars.testing import assert_frame_equal

    from polars_ppdm.perturb import _plugin

    frame = real_frame(500)
    expected = noisy(frame, ["x"], key="id", scale=1.0, engine="streaming")
    real_import = importlib.import_module

    for lacking in (types.ModuleType("polars._plr"), None):

        def fake_import(name, *args, lacking=lacking):
            if name != "polars._plr":
                return real_import(name, *args)
            if lacking is None:
                raise ImportError(name)
            return lacking

        monkeypatch.setattr(importlib, "import_module", fake_import)
        _plugin._share_polars_allocator.cache_clear()
        try:
            assert _plugin._share_polars_allocator() is False
            assert_frame_equal(noisy(frame, ["x"], key="id", scale=1.0, engine="streaming"), expected)
        finally:
            monkeypatch.setattr(importlib, "import_module", real_import)
            _plugin._share_polars_allocator.cache_clear()


def test_only_polars_allocator_capsule_is_read():
    """A capsule of another name may hold anything: it is not taken for an allocator."""
    import _datetime  # the datetime module's C API capsule
    import importlib

    assert NATIVE.register_polars_allocator(_datetime.datetime_CAPI) is False
    assert NATIVE.register_polars_allocator(object()) is False
    assert NATIVE.register_polars_allocator(importlib.import_module("polars._plr")._allocator) is True
