"""Sorted keyed uniforms from exponential spacings: the definition to the bit, the law of
uniform order statistics, accuracy, and the same bits for every caller and CPU."""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from _helpers import Z, sample_variance_se, stdout_with_numpy_simd_off

from polars_ppdm.kernels.prf import uniform
from polars_ppdm.kernels.spacings import (
    BLOCK,
    GROUP,
    block_offsets,
    block_totals,
    block_uniforms,
    exponentials,
    sorted_uniforms,
    sorted_uniforms_at,
)

SECRET = bytes(range(16))
SIZES = [2, 3, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 1, 40_000, 65_535, 65_536, 65_537]


def _definition(secret: bytes, stream: int, n: int) -> list[float]:
    """The module's definition, one float operation at a time (Python floats are IEEE
    doubles, as NumPy's): running sums in groups, group offsets in blocks, block offsets,
    S_r / S_n."""
    x = exponentials(uniform(secret, stream, np.arange(n + 1))).tolist()
    sums, block_offset = [], 0.0
    for block in range(0, n + 1, BLOCK):
        group_offset = 0.0
        for group in range(block, min(block + BLOCK, n + 1), GROUP):
            q = 0.0
            for value in x[group : min(group + GROUP, n + 1)]:
                q += value
                sums.append(block_offset + (group_offset + q))
            group_offset += q
        block_offset += group_offset
    total = sums[n]
    return [min(s / total, 1.0 - 2.0**-53) for s in sums[:n]]


@pytest.mark.parametrize("n", SIZES)
def test_sorted_uniforms_are_the_definition_bit_for_bit(n):
    want = np.array(_definition(SECRET, 9, n))
    assert np.array_equal(sorted_uniforms(SECRET, 9, n), want)


@pytest.mark.parametrize("n", SIZES)
def test_every_way_of_computing_them_gives_the_same_bits(n):
    """Whole (Polars), from block totals and any ranks (Spark tasks), per block (DuckDB)."""
    whole = sorted_uniforms(SECRET, 9, n)
    totals = block_totals(SECRET, 9, n)
    assert len(totals) == n // BLOCK + 1
    blocks = np.random.default_rng(n).permutation(len(totals))
    assert np.array_equal(block_totals(SECRET, 9, n, blocks), totals[blocks])
    offsets, total = block_offsets(totals)
    ranks = np.random.default_rng(n).integers(0, n, 3000)
    assert np.array_equal(sorted_uniforms_at(SECRET, 9, ranks, offsets, total), whole[ranks])
    assert np.array_equal(sorted_uniforms_at(SECRET, 9, np.arange(n), offsets, total), whole)
    per_block = block_uniforms(SECRET, 9, blocks, offsets[blocks], total)
    for row, b in zip(per_block, blocks, strict=True):
        stop = min((b + 1) * BLOCK, n)
        assert np.array_equal(row[: stop - b * BLOCK], whole[b * BLOCK : stop])
    # The caller's output and key buffers change nothing.
    out, keys = np.empty(n), np.arange(n + 5, dtype=np.uint64)
    assert np.array_equal(sorted_uniforms(SECRET, 9, n, out=out, keys=keys), whole)


@pytest.mark.parametrize("n", [2, 1000, BLOCK, 300_000])
def test_they_are_nondecreasing_in_zero_one(n):
    for stream in range(5):
        u = sorted_uniforms(SECRET, stream, n)
        assert u[0] >= 0.0 and u[-1] < 1.0
        assert (np.diff(u) >= 0).all()


def test_the_sample_is_uniform_kolmogorov_smirnov():
    """The n values, as a sample, against U(0, 1): the DKW bound at Z standard errors."""
    n = 200_000
    u = sorted_uniforms(SECRET, 1, n)  # already sorted
    i = np.arange(1, n + 1)
    statistic = max((i / n - u).max(), (u - (i - 1) / n).max())
    alpha = math.erfc(Z / math.sqrt(2))
    assert statistic <= math.sqrt(math.log(2 / alpha) / (2 * n))


def _beta_moments(a: float, b: float) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of Beta(a, b)."""
    s = a + b
    mean, variance = a / s, a * b / (s * s * (s + 1))
    excess = 6 * ((a - b) ** 2 * (s + 1) - a * b * (s + 2)) / (a * b * (s + 2) * (s + 3))
    return mean, variance, (excess + 3) * variance**2


def test_a_fixed_rank_follows_its_beta_law_over_many_secrets():
    """U_(r) of n uniforms is Beta(r, n + 1 - r) (r from 1): mean and variance over 1,000
    secrets within Z standard errors, at ranks on both sides of block boundaries."""
    n, secrets = 5000, 1000
    ranks = np.array([1, 2, BLOCK, BLOCK + 1, 2500, 2 * BLOCK + 1, n - 1, n])
    draws = np.array([sorted_uniforms(i.to_bytes(16, "little"), 4, n)[ranks - 1] for i in range(secrets)])
    for column, r in enumerate(ranks):
        mean, variance, mu4 = _beta_moments(r, n + 1 - r)
        got = draws[:, column]
        assert abs(got.mean() - mean) <= Z * math.sqrt(variance / secrets), r
        assert abs(got.var(ddof=1) - variance) <= Z * sample_variance_se(variance, mu4, secrets), r


def test_blocked_sums_stay_within_their_error_bound():
    """Against exact sums (integers in units of 2**-110: every draw is 0 or a multiple of
    2**-106): S_r and S_n are each at most GROUP + BLOCK / GROUP + n / BLOCK + 2 rounded
    additions of positive terms away from exact, each a relative error of 2**-53 at most,
    and the quotient one more."""
    n = 300_000
    x = exponentials(uniform(SECRET, 3, np.arange(n + 1)))
    scaled = [int(v) for v in (x * 2.0**110).tolist()]  # exact: a power-of-two scaling
    assert np.array_equal(np.array([float(s) for s in scaled]) * 2.0**-110, x)
    exact, running = [], 0
    for s in scaled:
        running += s
        exact.append(running)
    want = np.array([e / exact[n] for e in exact[:n]])  # int / int: correctly rounded
    bound = (2 * (GROUP + BLOCK / GROUP + n / BLOCK + 2) + 1) * 2.0**-53
    assert np.abs(sorted_uniforms(SECRET, 3, n) - want).max() <= bound


def test_exponentials_are_minus_log_one_minus_u_to_two_units():
    rng = np.random.default_rng(1)
    k = np.concatenate(
        [
            rng.integers(0, 2**53, 5000, dtype=np.int64),
            np.arange(500),  # u near 0: tiny exponentials
            2**53 - 1 - np.arange(500),  # u near 1: the largest
            2**53 - (1 << rng.integers(0, 53, 500)),  # v = 1 - u a power of two
            rng.integers(2**52 - 500, 2**52 + 500, 500),  # around u = 1/2
        ]
    )
    u = k.astype(np.float64) * 2.0**-53
    got = exponentials(u)
    assert (got >= 0).all() and got[k == 0].tolist() == [0.0]
    with localcontext() as ctx:
        ctx.prec = 40
        for ui, ei in zip(u.tolist(), got.tolist(), strict=True):
            v = 1 - Decimal(ui)
            exact = -v.ln() if v != 1 else Decimal(0)
            assert abs(Decimal(ei) - exact) <= Decimal(2.5 * 2.0**-53) * max(Decimal(1), exact), ui
    tiny = np.arange(1, 100_000) * 2.0**-53
    assert (exponentials(tiny) > 0).all()  # v just below 1 never rounds to 0 or below


SPACINGS_DIGEST = "4c4600445189c7f18d7624a72bb9f8d98c00206685d38f4f3f36addb8ca24e48"
_BITS = """
import hashlib, numpy as np
from polars_ppdm.kernels.prf import uniform
from polars_ppdm.kernels.spacings import exponentials, sorted_uniforms
u = uniform(bytes(16), 5, np.arange(300_000))
print(hashlib.sha256(exponentials(u).tobytes() + sorted_uniforms(bytes(16), 5, 300_000).tobytes()).hexdigest())
"""


def test_the_same_bits_whatever_simd_numpy_dispatches_to():
    """NumPy picks AVX-512, AVX2 or baseline loops at run time (np.log's bits differ
    between them); these use correctly rounded operations only, so they do not."""
    u = uniform(bytes(16), 5, np.arange(300_000))
    here = hashlib.sha256(exponentials(u).tobytes() + sorted_uniforms(bytes(16), 5, 300_000).tobytes())
    assert here.hexdigest() == SPACINGS_DIGEST  # pinned: the same on every machine and version
    assert stdout_with_numpy_simd_off(_BITS) == SPACINGS_DIGEST
