"""Randomized-response kernels against brute-force oracles (dense Kronecker products)."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from native_paths import kernel_path  # noqa: F401 - a fixture, used by pytestmark

from polars_ppdm.kernels import rr
from polars_ppdm.kernels.prf import stream_id

# Every test here runs on the compiled kernels and on the pure path: the same bits.
pytestmark = pytest.mark.usefixtures("kernel_path")


@pytest.mark.parametrize(("p", "k"), [(0.9, 2), (0.2, 2), (0.6, 3), (0.1, 5)])
def test_inverse_matrix(p, k):
    assert np.allclose(rr.inverse_rr_matrix(p, k) @ rr.rr_matrix(p, k), np.eye(k))


def test_axis_by_axis_inverse_equals_dense_kronecker_oracle():
    rng = np.random.default_rng(3)
    ks, ps = [2, 3, 2, 4], [0.9, 0.6, 0.3, 0.55]
    counts = rng.integers(0, 50, size=ks).astype(float)
    freq, se = rr.estimate_patterns(counts, ps, ks)
    dense_inverse = functools.reduce(
        np.kron, [rr.inverse_rr_matrix(p, k) for p, k in zip(ps, ks, strict=True)]
    )
    observed = counts.reshape(-1) / counts.sum()
    assert np.allclose(freq.reshape(-1), dense_inverse @ observed)
    variance = ((dense_inverse**2) @ observed - dense_inverse @ observed) / counts.sum()
    assert np.allclose(se.reshape(-1), np.sqrt(np.clip(variance, 0, None)))


def test_subset_coefficients_equal_the_pattern_estimate():
    rng = np.random.default_rng(4)
    ps = [0.9, 0.7, 0.85]
    counts = rng.integers(1, 40, size=(2, 2, 2)).astype(float)
    freq, _ = rr.estimate_patterns(counts, ps, [2, 2, 2])
    n = counts.sum()
    mean_w, _ = rr.subset_coefficients(ps)
    shares = np.empty(8)
    for mask in range(8):
        index = tuple(slice(1, 2) if mask >> j & 1 else slice(None) for j in range(3))
        shares[mask] = counts[index].sum() / n
    assert np.isclose(mean_w @ shares, freq[1, 1, 1])


def test_whole_record_pair_system_inverts_the_disguise():
    p, truth_e, truth_c = 0.8, 0.3, 0.1
    observed_e = p * truth_e + (1 - p) * truth_c
    observed_c = p * truth_c + (1 - p) * truth_e
    est, _ = rr.whole_record_estimate(np.array([observed_e]), np.array([observed_c]), p, 1000)
    assert np.isclose(est[0], truth_e)


@pytest.mark.parametrize("k", [2, 3, 6])
def test_disguise_keeps_with_p_and_lies_uniformly(k):
    n, p = 300_000, 0.55
    codes = np.zeros(n, dtype=np.int64)
    out = rr.disguise_codes(codes, k, p, bytes(16), stream_id("t"), np.arange(n))
    shares = np.bincount(out, minlength=k) / n
    expected = np.array([p] + [(1 - p) / (k - 1)] * (k - 1))
    assert np.all(np.abs(shares - expected) <= 5 * np.sqrt(expected * (1 - expected) / n))


def test_disguise_never_outputs_own_code_when_lying():
    n, k = 50_000, 4
    codes = np.arange(n) % k
    out = rr.disguise_codes(codes, k, 0.0, bytes(16), stream_id("t"), np.arange(n))
    assert not np.any(out == codes)


def test_keep_from_epsilon():
    for eps, k in itertools.product([0.1, 1.0, 3.0], [2, 3, 10]):
        p = rr.keep_from_epsilon(eps, k)
        assert np.isclose(np.log(p * (k - 1) / (1 - p)), eps)


# -- coins keyed by (stream, unit, value) -----------------------------------------------------


def _aes(secret: bytes, blocks: np.ndarray) -> np.ndarray:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    enc = Cipher(algorithms.AES(secret), modes.ECB()).encryptor()
    plain = np.ascontiguousarray(blocks, dtype="<u8").tobytes()
    return np.frombuffer(enc.update(plain) + enc.finalize(), dtype="<u8").reshape(-1, 2)


def test_value_blocks_are_the_documented_aes_blocks():
    """Block of row i: (value_stream(stream) XOR code_i) || key_i, one AES call; checked
    against pyca/cryptography directly, over more than one PRF chunk."""
    from polars_ppdm.kernels.prf import CHUNK_ROWS, derived_stream, value_prf_words, value_stream

    secret, stream = bytes(range(16)), stream_id("x")
    n = CHUNK_ROWS + 123
    rng = np.random.default_rng(0)
    codes, keys = rng.integers(0, 5, n), rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    got = np.empty((n, 2), dtype=np.uint64)

    def consume(start, stop, words):
        got[start:stop] = words

    value_prf_words(secret, stream, codes, keys, consume)
    plain = np.column_stack([np.uint64(value_stream(stream)) ^ codes.astype(np.uint64), keys.view(np.uint64)])
    np.testing.assert_array_equal(got, _aes(secret, plain))
    assert value_stream(stream) == derived_stream(stream, "value")
    import hashlib

    digest = hashlib.sha256(b"polars_ppdm/derived-stream/" + stream.to_bytes(8, "little") + b"value").digest()
    assert value_stream(stream) == int.from_bytes(digest[:8], "little")


def test_chained_blocks_are_the_documented_aes_chain():
    from polars_ppdm.kernels.prf import CHUNK_ROWS, chained_prf_words, derived_stream

    secret, stream = bytes(range(32)), stream_id("y")  # AES-256 too
    n = CHUNK_ROWS + 77
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 2**63, n, dtype=np.int64).view(np.uint64)
    parts = [rng.integers(0, 2**63, n, dtype=np.int64).view(np.uint64) for _ in range(2)]
    got = np.empty((n, 2), dtype=np.uint64)

    def consume(start, stop, words):
        got[start:stop] = words

    chained_prf_words(secret, stream, keys, parts, consume)
    word = _aes(secret, np.column_stack([np.full(n, derived_stream(stream, "unit"), dtype=np.uint64), keys]))[
        :, 0
    ]
    for j, part in enumerate(parts):
        block = _aes(
            secret,
            np.column_stack([np.full(n, derived_stream(stream, f"part/{j}"), dtype=np.uint64), word ^ part]),
        )
        word = block[:, 0]
    np.testing.assert_array_equal(got, block)


def test_equal_values_of_a_unit_share_the_coin_and_different_ones_do_not():
    n = 200_000
    keys = np.repeat(np.arange(n // 2), 2)
    codes = np.tile([0, 1], n // 2)  # each unit: 0 then 1
    out = rr.disguise_codes(codes, 2, 0.7, bytes(16), stream_id("t"), keys)
    lie = out != codes
    # independent coins: both lie with probability 0.09 (one shared coin: 0.3)
    both = float((lie[0::2] & lie[1::2]).mean())
    assert abs(both - 0.09) <= 5 * np.sqrt(0.09 * 0.91 / (n // 2))
    same = rr.disguise_codes(np.zeros(n, dtype=np.int64), 2, 0.7, bytes(16), stream_id("t"), keys)
    np.testing.assert_array_equal(same[0::2], same[1::2])


def test_keep_decisions_are_the_binary_disguise():
    n = 100_000
    rng = np.random.default_rng(2)
    codes, keys = rng.random(n) < 0.5, rng.integers(0, 1000, n)
    kept = rr.keep_decisions(codes, 0.8, bytes(16), 7, keys)
    np.testing.assert_array_equal(codes == kept, rr.disguise_codes(codes, 2, 0.8, bytes(16), 7, keys))
    np.testing.assert_array_equal(
        rr.disguise_codes(codes.astype(np.int8), 2, 0.8, bytes(16), 7, keys), (codes == kept).astype(np.int8)
    )


def test_whole_record_coin_is_keyed_by_the_record():
    n = 100_000
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    keys = np.arange(n)
    base = rr.whole_record_keep(bytes(16), 5, keys, rr.record_words([a, b], [None, None]), 0.7)
    moved = rr.whole_record_keep(bytes(16), 5, keys, rr.record_words([a, 1 - b], [None, None]), 0.7)
    # a changed record: an independent coin (they differ with probability 2 p (1 - p) = 0.42)
    differ = float((base != moved).mean())
    assert abs(differ - 0.42) <= 5 * np.sqrt(0.42 * 0.58 / n)
    # a null is a value of its own, neither 0 nor 1
    nulled = rr.record_words([a, b], [None, np.zeros(n, dtype=bool)])
    assert not np.array_equal(nulled[0], rr.record_words([a, np.zeros(n, np.int64)], [None, None])[0])
    # 33 columns take two record words; the 33rd column changes the coin
    many = [rng.integers(0, 2, n) for _ in range(33)]
    words = rr.record_words(many, [None] * 33)
    assert len(words) == 2
    flipped = rr.record_words([*many[:32], 1 - many[32]], [None] * 33)
    c1 = rr.whole_record_keep(bytes(16), 5, keys, words, 0.7)
    c2 = rr.whole_record_keep(bytes(16), 5, keys, flipped, 0.7)
    assert 0.3 < float((c1 != c2).mean()) < 0.55


#: The value-keyed coins' bits, pinned: a change of the keying must be announced.
DIGEST = "30ea17066f0e0c924ac247f0e22d985878b64ed83ca5b6c6c7f75f8446134c8a"


def test_value_keyed_bits_are_pinned():
    import hashlib

    n = 50_000
    rng = np.random.default_rng(4)
    keys, codes = rng.integers(0, 10_000, n), rng.integers(0, 5, n)
    secret = bytes(range(16))
    parts = (
        rr.disguise_codes(codes, 5, 0.6, secret, stream_id("k"), keys),
        rr.disguise_codes(codes % 2, 2, 0.6, secret, stream_id("b"), keys),
        rr.keep_decisions(codes % 2 == 1, 0.6, secret, stream_id("b"), keys),
        rr.whole_record_keep(
            secret, stream_id("w"), keys, rr.record_words([codes % 2, codes // 3], [None, None]), 0.6
        ),
    )
    assert hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest() == DIGEST


@pytest.mark.parametrize("offset", [0, 1, 7, 8, 21])
def test_bitmap_blocks_are_the_value_blocks(offset):
    """bit_value_prf_words reads 0/1 codes from an LSB-first bitmap from any bit and gives
    value_prf_words' words, over more than one chunk and between other uses of the
    shared buffers (another stream, a plain stream word, longer and shorter calls)."""
    from polars_ppdm.kernels.prf import CHUNK_ROWS, bit_value_prf_words, prf_words, value_prf_words

    secret = bytes(range(16))
    rng = np.random.default_rng(offset)

    def words(driver, *args):
        n = len(args[-1])
        got = np.empty((n, 2), dtype=np.uint64)

        def consume(start, stop, block):
            got[start:stop] = block

        driver(secret, *args, consume)
        return got

    cases = []
    for n, stream in [(5, stream_id("a")), (CHUNK_ROWS + 301, stream_id("a")), (999, stream_id("b")), (3, 0)]:
        codes = rng.random(n) < 0.5
        keys = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
        lead = rng.random(offset) < 0.5
        bits = np.packbits(np.concatenate([lead, codes, [True] * 5]), bitorder="little")
        cases.append(((stream, bits, offset, keys), words(value_prf_words, stream, codes, keys)))
        assert not np.array_equal(words(prf_words, stream, keys), cases[-1][1])
    for case in [0, 1, 0, 1, 1, 2, 1, 3, 0, 1, "plain", 1, "value", 0, 2, 3, 0]:
        if case == "plain":
            words(prf_words, stream_id("a"), np.arange(CHUNK_ROWS))  # the stream word, whole buffer
        elif case == "value":
            words(value_prf_words, stream_id("a"), np.ones(7, np.uint8), np.arange(7))
        else:
            args, expected = cases[case]
            np.testing.assert_array_equal(words(bit_value_prf_words, *args), expected)


def test_bitmap_blocks_need_a_bit_per_key():
    from polars_ppdm.kernels.prf import bit_value_prf_words

    def consume(start, stop, words):
        pass

    with pytest.raises(ValueError, match="one bit per key"):
        bit_value_prf_words(bytes(16), 1, np.zeros(2, np.uint8), 1, np.arange(16), consume)
    with pytest.raises(TypeError, match="uint8 bitmap"):
        bit_value_prf_words(bytes(16), 1, np.zeros(2, bool), 0, np.arange(16), consume)
    bit_value_prf_words(bytes(16), 1, np.zeros(2, np.uint8), 0, np.arange(16), consume)  # exactly enough


@pytest.mark.parametrize("p", [0.3, 0.8, 1.0])
def test_keep_decisions_of_a_bitmap_are_the_keep_decisions(p):
    from polars_ppdm.kernels.prf import CHUNK_ROWS

    n = CHUNK_ROWS * 2 + 17
    rng = np.random.default_rng(5)
    values, keys = rng.random(n) < 0.4, rng.integers(0, 1000, n)
    bits = np.packbits(np.concatenate([[True, False, True], values]), bitorder="little")
    np.testing.assert_array_equal(
        rr.keep_decisions_bits(bits, 3, p, bytes(16), 9, keys),
        rr.keep_decisions(values, p, bytes(16), 9, keys),
    )
    assert rr.keep_decisions_bits(bits[:0], 0, p, bytes(16), 9, keys[:0]).shape == (0,)
