"""Randomized-response kernels against brute-force oracles (dense Kronecker products)."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from polars_ppdm.kernels import rr
from polars_ppdm.kernels.prf import stream_id


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
