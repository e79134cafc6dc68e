"""The compiled kernels (polars_ppdm_native) give the pure path's bits: random secrets
(16 and 32 bytes), streams, keys and values; empty and non-contiguous inputs; and the
switch between the paths."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polars_ppdm.kernels import _native, noise, prf, rr, spacings

NATIVE = _native.load()
pytestmark = pytest.mark.skipif(
    NATIVE is None, reason="the compiled kernels are not installed (or PPDM_NATIVE=0)"
)


def both(monkeypatch, run):
    """``run()`` on the compiled path, then on the pure path."""
    monkeypatch.setattr(_native, "NATIVE", NATIVE)
    fast = run()
    monkeypatch.setattr(_native, "NATIVE", None)
    return fast, run()


def all_kernels(secret, stream, keys, codes, values, p):
    """Every kernel the compiled path serves, on one input."""
    bits = np.packbits(codes, bitorder="little")
    return [
        prf.encrypt_blocks(secret, stream, keys),
        prf.uniform(secret, stream, keys),
        prf.bernoulli(secret, stream, keys, p),
        rr.keep_decisions(codes, p, secret, stream, keys),
        rr.keep_decisions(codes.view(np.uint8), p, secret, stream, keys),
        rr.keep_decisions_bits(bits, 0, p, secret, stream, keys),
        rr.disguise_codes(codes.astype(np.int64), 2, p, secret, stream, keys),
        rr.disguise_codes(np.arange(len(keys)) % 5, 5, p, secret, stream, keys),
        rr.whole_record_keep(secret, stream, keys, rr.record_words([codes, ~codes], [None, None]), p),
        noise.uniform_noise(secret, stream, keys, 2.0, values=values),
        noise.gaussian_noise(secret, stream, keys, 3.0, values=values),
        noise.gaussian_noise(secret, stream, keys, 3.0),
    ]


def assert_same(fast, pure):
    assert len(fast) == len(pure)
    for i, (a, b) in enumerate(zip(fast, pure, strict=True)):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"kernel {i} differs"


@settings(max_examples=25, deadline=None)
@given(
    secret=st.binary(min_size=16, max_size=16) | st.binary(min_size=32, max_size=32),
    stream=st.integers(0, 2**64 - 1),
    n=st.integers(0, 700),
    seed=st.integers(0, 2**32 - 1),
    p=st.floats(0.0, 1.0),
)
def test_same_bits_on_random_inputs(secret, stream, n, seed, p):
    rng = np.random.default_rng(seed)
    keys = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    codes = rng.integers(0, 2, n).astype(bool)
    values = rng.normal(0, 10, n)
    with pytest.MonkeyPatch.context() as mp:
        assert_same(*both(mp, lambda: all_kernels(secret, stream, keys, codes, values, p)))


def test_same_bits_across_chunks_and_empty(monkeypatch):
    n = 2 * prf.CHUNK_ROWS + 301
    rng = np.random.default_rng(0)
    keys, codes, values = (
        rng.integers(0, 2**64 - 1, n, dtype=np.uint64),
        rng.integers(0, 2, n).astype(bool),
        rng.normal(size=n),
    )
    assert_same(*both(monkeypatch, lambda: all_kernels(bytes(range(32)), 77, keys, codes, values, 0.7)))
    empty = np.empty(0, dtype=np.uint64)
    assert_same(
        *both(
            monkeypatch,
            lambda: all_kernels(bytes(16), 1, empty, empty.astype(bool), empty.astype(float), 0.7),
        )
    )


def test_non_contiguous_inputs(monkeypatch):
    n = 5_001
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 2**63, 2 * n, dtype=np.uint64)[::2]
    codes = rng.integers(0, 2, 3 * n).astype(bool)[::3]
    values = rng.normal(size=(n, 2))[:, 1]
    assert not keys.flags.c_contiguous and not codes.flags.c_contiguous and not values.flags.c_contiguous
    assert_same(*both(monkeypatch, lambda: all_kernels(bytes(16), 5, keys, codes, values, 0.6)))


@pytest.mark.parametrize("offset", [0, 1, 7, 8, 13])
def test_bitmap_offsets(monkeypatch, offset):
    rng = np.random.default_rng(offset)
    n = 1_000
    codes = rng.integers(0, 2, n + offset).astype(bool)
    bits = np.packbits(codes, bitorder="little")
    keys = np.arange(n)
    fast, pure = both(monkeypatch, lambda: rr.keep_decisions_bits(bits, offset, 0.6, bytes(16), 3, keys))
    assert np.array_equal(fast, pure)
    assert np.array_equal(fast, rr.keep_decisions(codes[offset:], 0.6, bytes(16), 3, keys))


def spacing_kernels(secret, stream, n):
    """The ECDF's keyed running sums: all n at once, and whole blocks in any order."""
    out = np.empty(n)
    total = spacings.running_sums(secret, stream, n, out)
    blocks = np.array([n // spacings.BLOCK, 0, 3, 3, 2**40], dtype=np.int64)
    offsets, whole = spacings.block_offsets(spacings.block_totals(secret, stream, n))
    ranks = np.array([0, n // 2, n - 1]) if n else np.array([], dtype=np.int64)
    return [
        out,
        np.array([total]),
        spacings._draws_of_blocks(secret, stream, blocks),
        spacings.sorted_uniforms_at(secret, stream, ranks, offsets, whole),
    ]


@settings(max_examples=20, deadline=None)
@given(
    secret=st.binary(min_size=16, max_size=16) | st.binary(min_size=32, max_size=32),
    stream=st.integers(0, 2**64 - 1),
    n=st.integers(0, 3 * spacings.BLOCK + 40)
    | st.sampled_from([spacings.BLOCK - 1, spacings.BLOCK, prf.CHUNK_ROWS - 1, prf.CHUNK_ROWS]),
)
def test_spacing_sums_same_bits(secret, stream, n):
    """The blocked sums of keyed exponentials (one compiled call without the GIL) are the
    NumPy path's, to the bit, around block, group and chunk ends."""
    with pytest.MonkeyPatch.context() as mp:
        assert_same(*both(mp, lambda: spacing_kernels(secret, stream, n)))


def test_spacing_sums_into_a_strided_output_takes_the_pure_path(monkeypatch):
    """An output the compiled call cannot write in place (a strided view) still gets the bits."""

    def strided():
        out = np.zeros(2 * 5_000)
        total = spacings.running_sums(bytes(16), 3, 5_000, out[::2])
        return [out, np.array([total])]

    assert_same(*both(monkeypatch, strided))


def test_errors_are_the_pure_paths(monkeypatch):
    monkeypatch.setattr(_native, "NATIVE", NATIVE)
    with pytest.raises(ValueError, match="16 or 32 bytes"):
        prf.encrypt_blocks(bytes(8), 0, np.arange(3))
    with pytest.raises(ValueError, match="16 or 32 bytes"):
        rr.keep_decisions_bits(np.zeros(1, np.uint8), 0, 0.5, bytes(8), 0, np.arange(3))
    with pytest.raises(TypeError, match="integer array"):
        prf.encrypt_blocks(bytes(16), 0, np.array([1.5]))
    with pytest.raises(ValueError, match="16 or 32 bytes"):
        spacings.running_sums(bytes(8), 0, 10, np.empty(10))
    with pytest.raises(ValueError, match="16 or 32 bytes"):
        spacings.block_totals(bytes(8), 0, 10)


def test_ppdm_native_0_forces_the_pure_path():
    code = "from polars_ppdm.kernels import _native; print(_native.NATIVE is None)"
    env = {**os.environ, "PPDM_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_sql_rr_disguise_same_bits(monkeypatch):
    """The scalar UDF's compiled path against the pure one, on vectors with NULL values, NULL
    keys where the value is NULL, text keys and p = 1 (the last three take the old path)."""
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    import polars_ppdm as ppdm

    n = 10_007
    rng = np.random.default_rng(5)
    x = rng.random(n) < 0.4
    df = pl.DataFrame(
        {"id": rng.integers(-(2**62), 2**62, n), "x": x, "name": [f"u{i % 997}" for i in range(n)]}
    ).with_columns(
        xn=pl.when(pl.col("id") % 5 == 0).then(None).otherwise(pl.col("x")),
        idn=pl.when(pl.col("id") % 5 == 0).then(None).otherwise(pl.col("id")),
    )
    secret = "00112233445566778899aabbccddeeff"
    sql = (
        f"SELECT ppdm_rr_disguise(x, 0.7, '{secret}', id, 'x') AS a, "
        f"ppdm_rr_disguise(xn, 0.7, '{secret}', id, 'x') AS b, "
        f"ppdm_rr_disguise(xn, 0.7, '{secret}', idn, 'x') AS c, "
        f"ppdm_rr_disguise(x, epsilon := 1.5, secret := '{secret}', key := ppdm_key(name, '{secret}'), stream := 'x') AS d, "
        f"ppdm_rr_disguise(x, 1.0, '{secret}', id, 'x') AS e FROM df"
    )

    def run():
        con = ppdm.duckdb.register(duckdb.connect())
        con.register("df", df)
        return con.sql(sql).pl()

    fast, pure = both(monkeypatch, run)
    assert fast.equals(pure)
    polars_bits = df.select(ppdm.rr_disguise_expr(pl.col("x"), p=0.7, secret=secret, key="id"))["x"]
    assert fast["a"].equals(polars_bits.alias("a"))
    assert fast["e"].equals(df["x"].alias("e"))


def test_misaligned_or_overlapping_buffers_are_refused_not_read():
    """The extension holds its output as the only reference and reads u64 slices: a buffer at
    an odd byte offset, or an output sharing memory with an input, is an error (never UB)."""
    secret = bytes(range(16))
    raw = np.zeros(8 * 8 + 1, dtype=np.uint8)
    misaligned = raw[1:].view(np.uint64)
    with pytest.raises(ValueError, match="'keys' must be aligned to 8 bytes"):
        NATIVE.prf_words_into(secret, 1, misaligned, np.empty(16, dtype=np.uint64))
    shared = np.zeros(16, dtype=np.uint64)
    with pytest.raises(ValueError, match="'out' must not share memory with an input"):
        NATIVE.prf_words_into(secret, 1, shared[:8], shared)
    plain = np.zeros(16, dtype=np.uint64)
    with pytest.raises(ValueError, match="'out' must not share memory with an input"):
        NATIVE.encrypt_into(secret, plain, plain)


def test_an_extension_lacking_a_kernel_is_not_used(monkeypatch):
    """An extension built from an older crate (a missing function) leaves the pure path in
    charge, with a warning that names the rebuild, instead of an AttributeError mid-query."""
    import types

    stale = types.ModuleType("polars_ppdm_native")
    stale.encrypt_into = NATIVE.encrypt_into
    monkeypatch.setitem(sys.modules, "polars_ppdm_native", stale)
    with pytest.warns(RuntimeWarning, match="lack prf_words_into.*rebuild them"):
        assert _native.load() is None


def test_a_bytearray_secret_works_on_both_paths(monkeypatch):
    """pyca takes a bytearray key; the compiled kernels took only bytes and failed with a
    TypeError where the pure path gave the draws."""
    keys, codes = np.arange(50, dtype=np.uint64), np.arange(50) % 2 == 0
    for secret in (bytearray(range(16)), bytearray(range(32))):
        fast, pure = both(
            monkeypatch,
            lambda secret=secret: [
                rr.keep_decisions(codes, 0.7, secret, 3, keys),
                rr.keep_decisions_bits(np.packbits(codes, bitorder="little"), 0, 0.7, secret, 3, keys),
                noise.uniform_noise(secret, 3, keys, 2.0),
                prf.uniform(secret, 3, keys),
                prf.encrypt_blocks(secret, 3, keys),
            ],
        )
        assert_same(fast, pure)


def test_an_extension_built_for_features_this_cpu_lacks_is_not_loaded(tmp_path, monkeypatch):
    """A .venv built where the CPU has VAES, used on one without: the extension is not
    imported (it would die on an illegal instruction); the pure kernels serve."""
    features, cpuinfo = tmp_path / "ppdm-native-features", tmp_path / "cpuinfo"
    features.write_text("aes ssse3 avx2 vaes\n")
    cpuinfo.write_text("processor : 0\nflags : fpu sse2 aes ssse3 avx2\n")
    assert _native._features_lacking(features, cpuinfo) == ["vaes"]
    cpuinfo.write_text("processor : 0\nflags : fpu sse2 aes ssse3 avx2 vaes\n")
    assert _native._features_lacking(features, cpuinfo) == []
    assert _native._features_lacking(tmp_path / "absent", cpuinfo) == []
    monkeypatch.setattr(_native, "_features_lacking", lambda: ["vaes"])
    with pytest.warns(RuntimeWarning, match=r"lacks \(vaes\).*not loaded"):
        assert _native.load() is None


def test_sql_udf_on_sliced_vectors_matches_the_pure_path(monkeypatch):
    """The scalar UDF called directly on Arrow slices at byte offsets 0, 8 and 16 (with
    nulls): the same bits on both paths (a review found non-zero offsets untested)."""
    pa = pytest.importorskip("pyarrow")
    from polars_ppdm.duckdb.scalar import _rr_binary_udf

    n = 3_000
    rng = np.random.default_rng(9)
    values = pa.array([None if i % 7 == 0 else bool(b) for i, b in enumerate(rng.random(n) < 0.4)])
    keys = pa.array(rng.integers(-(2**62), 2**62, n), type=pa.int64())
    secret = "00112233445566778899aabbccddeeff"
    for start in (0, 8, 16):
        x, key = values.slice(start, n - 64), keys.slice(start, n - 64)
        m = len(x)
        args = (
            x,
            pa.array([0.7] * m),
            pa.array([None] * m, type=pa.float64()),
            pa.array([secret] * m),
            key,
            pa.array(["x"] * m),
        )
        fast, pure = both(monkeypatch, lambda args=args: _rr_binary_udf(*args))
        assert fast.equals(pure), start
        assert fast.null_count == x.null_count
