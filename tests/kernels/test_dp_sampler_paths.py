"""The compiled exact samplers (``native/src/dp_sampler.rs``) draw the NumPy path's bits:
the discrete Laplace, its one-sided magnitude and the discrete Gaussian, over the whole
range of scales and sigmas each accepts, AES-128 and AES-256 keys, and several secrets
at once."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from polars_ppdm.kernels import _native
from polars_ppdm.kernels.dp_noise import discrete_gaussian, discrete_laplace, one_sided_geometric
from polars_ppdm.kernels.prf import stream_id

INSTALLED = _native.load()
pytestmark = pytest.mark.skipif(
    INSTALLED is None, reason="the compiled kernels are not installed (or PPDM_NATIVE=0)"
)
KEYS = (bytes(range(16)), bytes(range(32)))
#: The first 2000 draws of each law at a few scales under the 16-byte key, pinned (both paths).
PINNED = "850fd889b2bd32237ad9dccfc77b3715c6631f67333af26351c816ac9e9000ee"


def _both(monkeypatch, draw, *args):
    monkeypatch.setattr(_native, "NATIVE", INSTALLED)
    compiled = draw(*args)
    monkeypatch.setattr(_native, "NATIVE", None)
    pure = draw(*args)
    monkeypatch.setattr(_native, "NATIVE", INSTALLED)
    return compiled, pure


@pytest.mark.parametrize("key", KEYS, ids=["aes128", "aes256"])
@pytest.mark.parametrize("scale", [1e-300, 1e-9, 0.01, 0.3, 1.0, 2.5, 100.0, 1e9, 2.0**57])
@pytest.mark.parametrize("draw", [discrete_laplace, one_sided_geometric])
def test_the_laplace_samplers_draw_the_same_bits(monkeypatch, key, scale, draw):
    keys = np.random.default_rng(1).integers(-(2**63), 2**63 - 1, size=5000, dtype=np.int64)
    compiled, pure = _both(monkeypatch, draw, key, stream_id("t/paths"), keys, scale)
    assert compiled.dtype == pure.dtype == np.int64
    assert np.array_equal(compiled, pure)


@pytest.mark.parametrize("key", KEYS, ids=["aes128", "aes256"])
@pytest.mark.parametrize("sigma", [2.0**-7, 0.01, 0.3, 0.8, 1.0, 3.0, 12345.678, 2e6, 2.0**31, 2.0**50])
def test_the_gaussian_sampler_draws_the_same_bits(monkeypatch, key, sigma):
    keys = np.random.default_rng(2).integers(0, 2**64 - 1, size=5000, dtype=np.uint64)
    compiled, pure = _both(monkeypatch, discrete_gaussian, key, stream_id("t/paths"), keys, sigma)
    assert np.array_equal(compiled, pure)


@pytest.mark.parametrize("sigma", [0.05, 3.0, 2e6])
def test_several_secrets_draw_the_same_bits(monkeypatch, sigma):
    secrets = [bytes([j + 1] * 16) for j in range(4)] + [bytes(range(32))]
    keys = np.arange(5 * 700, dtype=np.uint64).reshape(5, 700) * np.uint64(104729)
    compiled, pure = _both(monkeypatch, discrete_gaussian, secrets, stream_id("t/many"), keys, sigma)
    assert compiled.shape == pure.shape == (5, 700)
    assert np.array_equal(compiled, pure)


def test_the_draws_are_pinned_on_both_paths(monkeypatch):
    keys = np.arange(2000)
    for path in (INSTALLED, None):
        monkeypatch.setattr(_native, "NATIVE", path)
        parts = [
            discrete_laplace(KEYS[0], stream_id("t/pin"), keys, 0.7),
            one_sided_geometric(KEYS[0], stream_id("t/pin"), keys, 3.0),
            discrete_gaussian(KEYS[0], stream_id("t/pin"), keys, 0.02),
            discrete_gaussian(KEYS[0], stream_id("t/pin"), keys, 5e9),
        ]
        assert hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest() == PINNED, path


def test_a_key_of_another_length_is_refused_on_both_paths(monkeypatch):
    """pyca-cryptography also takes 24-byte AES keys, the compiled sampler does not: the
    NumPy path alone used to draw under one.  Review 64: the samplers check their keys by
    the PRF's one rule (16 or 32 bytes), before either path."""
    for path in (INSTALLED, None):
        monkeypatch.setattr(_native, "NATIVE", path)
        with pytest.raises(ValueError, match=r"16 or 32 bytes .* Got 24 bytes"):
            discrete_laplace(bytes(range(24)), stream_id("t/24"), np.arange(300), 2.0)
        with pytest.raises(ValueError, match=r"16 or 32 bytes .* Got 24 bytes"):
            discrete_gaussian([KEYS[0], bytes(24)], stream_id("t/24"), np.arange(300).reshape(2, 150), 2.0)


def test_keys_at_an_odd_offset_and_other_secret_types_behave_as_on_the_numpy_path(monkeypatch):
    """Review 60: a contiguous uint64 view at an odd byte offset was refused by the
    compiled path only, and a NumPy array given as the secret worked on it only.  Review
    64: a uint8 array is a buffer of bytes, the secret of its bytes on both paths (the
    PRF's one rule), and a buffer of wider items is refused on both."""
    raw = np.zeros(8 * 40 + 1, dtype=np.uint8)
    raw[1:] = np.random.default_rng(3).integers(0, 255, 8 * 40)
    keys = np.frombuffer(raw.data, dtype=np.uint64, count=40, offset=1)
    compiled, pure = _both(monkeypatch, discrete_gaussian, KEYS[0], stream_id("t/odd"), keys, 2.0)
    assert np.array_equal(compiled, pure)
    as_array = np.frombuffer(KEYS[0], dtype=np.uint8)
    compiled, pure = _both(monkeypatch, discrete_laplace, as_array, stream_id("t/odd"), keys, 2.0)
    assert np.array_equal(compiled, pure)
    assert np.array_equal(compiled, discrete_laplace(KEYS[0], stream_id("t/odd"), keys, 2.0))
    for path in (INSTALLED, None):
        monkeypatch.setattr(_native, "NATIVE", path)
        with pytest.raises(TypeError, match=r"Got type ndarray, format '\w+' \(16 bytes\)"):
            discrete_laplace(as_array.view(np.uint64), stream_id("t/odd"), keys, 2.0)
