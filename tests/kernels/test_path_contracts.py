"""Inputs on which the compiled and the NumPy path once parted (review 64): both now give
the same bits, or the same refusal naming the parameter, what it may be and what came.

Every test runs on both paths (``kernel_path``): a refusal or a result that only one path
gives fails one of the two cases."""

from __future__ import annotations

import numpy as np
import pytest
from native_paths import kernel_path  # noqa: F401  (the fixture, by name)

from polars_ppdm.kernels import dp_noise, noise, prf, spacings

pytestmark = pytest.mark.usefixtures("kernel_path")

SECRET = bytes(range(16))


# running_sums: an output too short (the compiled call wrote len(out) sums and returned
# another total; NumPy failed to broadcast).


def test_running_sums_refuses_an_output_shorter_than_n():
    out = np.zeros(100)
    with pytest.raises(
        ValueError, match=r"'out' must be a 1-D array of at least n = 5000 .* Got shape \(100,\)"
    ):
        spacings.running_sums(SECRET, 3, 5000, out)
    assert not out.any()  # refused before anything was written
    with pytest.raises(ValueError, match="'out' must be a 1-D array of at least n = 5000"):
        spacings.sorted_uniforms(SECRET, 3, 5000, out=np.zeros(4999))


def test_running_sums_takes_a_longer_output_and_writes_n_values():
    out = np.full(5010, -1.0)
    total = spacings.running_sums(SECRET, 3, 5000, out)
    want = np.empty(5000)
    assert total == spacings.running_sums(SECRET, 3, 5000, want)
    assert np.array_equal(out[:5000], want) and (out[5000:] == -1.0).all()


# running_sums: keys other than 0 .. n (the compiled call ignored them).


@pytest.mark.parametrize(
    ("keys", "got"),
    [
        (np.arange(101, dtype=np.uint64) + np.uint64(7), r"keys\[0\] = 7"),
        (np.arange(100, dtype=np.uint64), r"dtype uint64, shape \(100,\)"),
        (np.arange(101, dtype=np.int64), r"dtype int64, shape \(101,\)"),
        (np.arange(101, dtype=np.uint64)[::-1].copy(), r"keys\[0\] = 100"),
        ([*range(101)], "list"),
    ],
)
def test_running_sums_refuses_keys_other_than_an_arange(keys, got):
    with pytest.raises(
        ValueError,
        match=rf"'keys' must be None or np.arange\(m, dtype=np.uint64\) with m >= n \+ 1 = 101 .* Got {got}",
    ):
        spacings.running_sums(SECRET, 3, 100, np.zeros(100), keys=keys)


def test_running_sums_checks_every_key_not_only_the_first_chunk():
    n = 200_000
    keys = np.arange(n + 1, dtype=np.uint64)
    keys[150_001] = 5
    with pytest.raises(ValueError, match=r"Got keys\[150001\] = 5"):
        spacings.running_sums(SECRET, 3, n, np.empty(n), keys=keys)
    keys[150_001] = 150_001
    out, want = np.empty(n), np.empty(n)
    assert spacings.running_sums(SECRET, 3, n, out, keys=keys) == spacings.running_sums(SECRET, 3, n, want)
    assert np.array_equal(out, want)


# discrete_laplace / discrete_gaussian: a secret of wider items (the compiled sampler drew
# from its 16 bytes, pyca refused its 4 items).

_WIDE = {
    "uint32 x 4": lambda: memoryview(np.arange(4, dtype=np.uint32)),
    "uint16 x 16": lambda: memoryview(np.arange(16, dtype=np.uint16)),
    "float64 x 2": lambda: memoryview(np.zeros(2)),
}


@pytest.mark.parametrize("wide", sorted(_WIDE))
@pytest.mark.parametrize(
    "draw",
    [
        lambda s: dp_noise.discrete_laplace(s, 77, np.arange(30), 2.0),
        lambda s: dp_noise.one_sided_geometric(s, 77, np.arange(30), 2.0),
        lambda s: dp_noise.discrete_gaussian(s, 77, np.arange(30), 2.0),
        lambda s: dp_noise.discrete_gaussian([SECRET, s], 77, np.arange(30).reshape(2, 15), 2.0),
        lambda s: prf.uniform(s, 77, np.arange(30)),
        lambda s: noise.gaussian_noise(s, 77, np.arange(30), 1.0),
    ],
    ids=["laplace", "geometric", "gaussian", "gaussian-several", "uniform", "noise"],
)
def test_a_secret_of_wider_items_is_refused_by_every_kernel(draw, wide):
    with pytest.raises(
        TypeError,
        match=r"16 or 32 bytes .* buffer of format B/b/c\. Got type memoryview, format '[IHd]' \((16|32) bytes\)",
    ):
        draw(_WIDE[wide]())


def test_the_dp_samplers_refuse_what_the_prf_refuses():
    for secret, error, got in [
        (bytes(24), ValueError, "Got 24 bytes"),
        ("x" * 16, TypeError, "Got type str"),
    ]:
        with pytest.raises(error, match=got):
            dp_noise.discrete_laplace(secret, 77, np.arange(30), 2.0)
        with pytest.raises(error, match=got):
            dp_noise.discrete_gaussian([SECRET, secret], 77, np.arange(30).reshape(2, 15), 2.0)
        with pytest.raises(error, match=got):
            prf.uniform(secret, 77, np.arange(30))


def test_byte_buffers_are_their_bytes_on_every_kernel():
    keys = np.arange(300)
    as_bytes = np.frombuffer(SECRET, np.uint8)  # a sequence to discrete_gaussian (one key per row)
    for secret in (
        bytearray(SECRET),
        memoryview(SECRET),
        memoryview(np.repeat(as_bytes, 2))[::2],
        memoryview(as_bytes),
    ):
        assert np.array_equal(
            dp_noise.discrete_laplace(secret, 5, keys, 3.0), dp_noise.discrete_laplace(SECRET, 5, keys, 3.0)
        )
        assert np.array_equal(
            dp_noise.discrete_gaussian(secret, 5, keys, 3.0), dp_noise.discrete_gaussian(SECRET, 5, keys, 3.0)
        )
    for secret in (bytearray(SECRET), memoryview(np.repeat(as_bytes, 2))[::2], as_bytes):
        assert np.array_equal(prf.uniform(secret, 5, keys), prf.uniform(SECRET, 5, keys))
        assert np.array_equal(
            noise.gaussian_noise(secret, 5, keys, 2.0), noise.gaussian_noise(SECRET, 5, keys, 2.0)
        )


# gaussian_noise / uniform_noise: a long double scale (the compiled kernel rounded it to
# float64, NumPy multiplied in long double).  Where long double is double, trivially so.


@pytest.mark.parametrize("draw", [noise.gaussian_noise, noise.uniform_noise])
def test_a_long_double_scale_draws_as_its_float64(draw):
    keys = np.arange(2000)
    values = np.linspace(-5.0, 5.0, len(keys))
    for scale in (np.longdouble(1) / np.longdouble(10), np.longdouble(2) / np.longdouble(3)):
        want = draw(SECRET, 5, keys, float(scale), values=values)
        got = draw(SECRET, 5, keys, scale, values=values)
        assert got.dtype == np.float64 and np.array_equal(got.view(np.uint64), want.view(np.uint64))
        assert np.array_equal(draw(SECRET, 5, keys, scale), draw(SECRET, 5, keys, float(scale)))
