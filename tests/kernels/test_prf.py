"""The keyed PRF kernel: it is AES, its derived draws are exact, and chunks do not matter."""

from __future__ import annotations

import math

import numpy as np
import pytest
from native_paths import kernel_path  # noqa: F401 - a fixture, used by pytestmark

from polars_ppdm.kernels import prf

# Every test here runs on the compiled kernels and on the pure path: the same bits.
pytestmark = pytest.mark.usefixtures("kernel_path")

# FIPS-197, Appendix C.1 (AES-128) and C.3 (AES-256).
PLAINTEXT = bytes.fromhex("00112233445566778899aabbccddeeff")
FIPS_197 = [
    (bytes.fromhex("000102030405060708090a0b0c0d0e0f"), "69c4e0d86a7b0430d8cdb78070b4c55a"),
    (
        bytes.fromhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"),
        "8ea2b7ca516745bfeafc49904b496089",
    ),
]


@pytest.mark.parametrize(("secret", "ciphertext"), FIPS_197)
def test_kernel_is_aes_fips_197(secret, ciphertext):
    stream = int.from_bytes(PLAINTEXT[:8], "little")
    key = np.array([int.from_bytes(PLAINTEXT[8:], "little")], dtype=np.uint64)
    words = prf.encrypt_blocks(secret, stream, key)
    assert words.astype("<u8").tobytes().hex() == ciphertext


def test_chunking_does_not_change_the_draws():
    keys = np.arange(3 * prf.CHUNK_ROWS + 17, dtype=np.uint64)
    whole = prf.encrypt_blocks(bytes(16), 5, keys)
    pieces = np.concatenate(
        [prf.encrypt_blocks(bytes(16), 5, keys[i : i + 1000]) for i in range(0, len(keys), 1000)]
    )
    assert np.array_equal(whole, pieces)
    shuffled = np.random.default_rng(0).permutation(len(keys))
    assert np.array_equal(prf.encrypt_blocks(bytes(16), 5, keys[shuffled]), whole[shuffled])


def test_uniform_and_bernoulli_follow_the_documented_formulas():
    keys = np.arange(200_000)
    words = prf.encrypt_blocks(bytes(32), prf.stream_id("s"), keys)
    expected_u = (words[:, 0] >> np.uint64(11)).astype(np.float64) * 2.0**-53
    u = prf.uniform(bytes(32), prf.stream_id("s"), keys)
    assert np.array_equal(u, expected_u)
    for p in (0.0, 1e-9, 0.3, 0.5, 0.999999, 1.0):
        assert np.array_equal(prf.bernoulli(bytes(32), prf.stream_id("s"), keys, p), u < p)


def test_bernoulli_rate_within_five_standard_errors():
    n, p = 400_000, 0.37
    share = prf.bernoulli(b"k" * 16, prf.stream_id("rate"), np.arange(n), p).mean()
    assert abs(share - p) <= 5 * math.sqrt(p * (1 - p) / n)


def test_signed_keys_are_their_twos_complement():
    signed = prf.encrypt_blocks(bytes(16), 1, np.array([-1, -2], dtype=np.int64))
    unsigned = prf.encrypt_blocks(bytes(16), 1, np.array([2**64 - 1, 2**64 - 2], dtype=np.uint64))
    assert np.array_equal(signed, unsigned)


def test_different_streams_and_secrets_give_independent_words():
    keys = np.arange(1000)
    a = prf.encrypt_blocks(bytes(16), prf.stream_id("a"), keys)
    b = prf.encrypt_blocks(bytes(16), prf.stream_id("b"), keys)
    c = prf.encrypt_blocks(b"\x01" + bytes(15), prf.stream_id("a"), keys)
    assert not np.any(a == b) and not np.any(a == c)


def test_secret_length_is_checked():
    with pytest.raises(ValueError, match="16 or 32 bytes"):
        prf.encrypt_blocks(bytes(8), 0, np.arange(3))


def test_a_secret_changed_in_place_after_a_call_draws_under_its_new_key():
    """The pure path kept a key schedule while the secret compared equal to the one it was
    made from, and kept the caller's object: a bytearray changed in place afterwards still
    compared equal, and a later call with the new bytes drew under the old key (review 52)."""
    keys = np.arange(8, dtype=np.uint64)
    secret = bytearray(range(16))
    prf.first_words(secret, 7, keys)
    secret[0] ^= 0xFF
    assert np.array_equal(
        prf.first_words(bytes(secret), 7, keys), prf.first_words(bytes(secret), 7, keys.copy())
    )
    fresh = bytes(secret)
    expected = prf.first_words(fresh, 7, keys)
    prf.first_words(bytes(range(16)), 7, keys)  # another key between
    assert np.array_equal(prf.first_words(secret, 7, keys), expected)
    assert not np.array_equal(expected, prf.first_words(bytes(range(16)), 7, keys))
