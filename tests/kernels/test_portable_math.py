"""The logarithm and cosine of the noise, defined to the bit: accuracy against 50-digit
decimal arithmetic, the same bits as a plain-Python evaluation of the same steps and
whatever SIMD NumPy dispatches to, and noise with the stated laws."""

from __future__ import annotations

import hashlib
import math
import struct
from decimal import Decimal, localcontext

import numpy as np
import pytest
from _helpers import stdout_with_numpy_simd_off

from polars_ppdm.kernels import portable_math
from polars_ppdm.kernels.dp_noise import discrete_laplace
from polars_ppdm.kernels.noise import gaussian_noise
from polars_ppdm.kernels.portable_math import cos_two_pi, minus_log
from polars_ppdm.kernels.prf import stream_id

SECRET = bytes(range(16))
ULP = 2.0**-53  # half the spacing of doubles in [1, 2): one unit in the last place of [0.5, 1)
# The error bound: the table entry and each correctly rounded step leave at most about
# one unit in the last place of the result (the series' truncation is below 2**-57),
# and the reference is exact to 40 digits; 2 units allow for the sum of the roundings.
BOUND = 2 * 2 * ULP


def _uniforms(n: int, seed: int) -> np.ndarray:
    """Uniforms as the PRF makes them, k * 2**-53, with the ends."""
    k = np.random.default_rng(seed).integers(0, 2**53, size=n)
    return np.concatenate(([0.0, 0.25, 0.5, 0.75, 1 - ULP, ULP], k * ULP))


def _logarithm_inputs() -> np.ndarray:
    """v in [2**-54, 1]: the DP noise's uniforms, 1 - u of the spacings', powers of two
    and a spread over every binade."""
    rng = np.random.default_rng(3)
    dp = (rng.integers(0, 2**53, size=700) + 0.5) * ULP
    spread = 2.0 ** -rng.uniform(0, 54, size=700)
    ends = [2.0**-54, 2.0**-53, 0.5, 1.0, 1 - ULP, 1 - 2 * ULP]
    return np.concatenate((ends, 2.0 ** -np.arange(55.0), dp, 1 - _uniforms(600, 4), spread))


def _decimal_cos_two_pi(u: float) -> Decimal:
    """cos(2 pi u) to 40 digits by its Taylor series (a separate code path from the
    module's tables)."""
    pi = Decimal("3.14159265358979323846264338327950288419716939937510")
    x = 2 * pi * Decimal(u)
    total, term, k = Decimal(0), Decimal(1), 0
    while abs(term) > Decimal(10) ** -45:
        total += term
        term = -term * x * x / ((k + 1) * (k + 2))
        k += 2
    return total


def test_minus_log_is_within_two_units_in_the_last_place():
    v = _logarithm_inputs()
    got = minus_log(v)
    with localcontext() as ctx:
        ctx.prec = 50
        for vi, gi in zip(v.tolist(), got.tolist(), strict=True):
            exact = -Decimal(vi).ln()
            assert abs(Decimal(gi) - exact) <= Decimal(BOUND) * max(Decimal(1), exact), vi
    assert set(got[v == 1.0].tolist()) == {0.0} and (got >= 0).all()


def test_cos_two_pi_is_within_two_units_in_the_last_place():
    u = _uniforms(3000, 5)
    got = cos_two_pi(u)
    with localcontext() as ctx:
        ctx.prec = 50
        for ui, gi in zip(u.tolist(), got.tolist(), strict=True):
            assert abs(Decimal(gi) - _decimal_cos_two_pi(ui)) <= Decimal(BOUND), ui
    assert got[:4].tolist() in ([1.0, 0.0, -1.0, 0.0], [1.0, -0.0, -1.0, 0.0])


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _python_minus_log(v: float) -> float:
    """minus_log's steps in plain Python floats (IEEE doubles, each operation rounded)."""
    low = 52 - portable_math._CELL_BITS
    keep = ~((1 << low) - 1) & 0xFFFF_FFFF_FFFF_FFFF
    centre = _double((_bits(v) & keep) | (1 << (low - 1)))
    t = (v - centre) / centre
    index = (_bits(v) >> low) - ((1023 + portable_math._LOWEST_E) << portable_math._CELL_BITS)
    series = ((((t * -0.25) + 1.0 / 3.0) * t - 0.5) * t) * t + t
    return max(float(portable_math._minus_log_centres()[index]) - series, 0.0)


def _python_cos_two_pi(u: float) -> float:
    """cos_two_pi's steps in plain Python floats."""
    sines, cosines = portable_math._quarter_turn_cells()
    r = u * 4.0
    quadrant = math.floor(r)
    r -= quadrant
    cell = math.floor(r * portable_math._CELLS)
    a = (r - (cell + 0.5) / portable_math._CELLS) * portable_math._HALF_PI
    s, c = float(sines[cell]), float(cosines[cell])
    a2 = a * a
    cos_a_minus_1 = a2 * (a2 * (1.0 / 24.0) - 0.5)
    sin_a = a + a * a2 * (a2 * (1.0 / 120.0) - 1.0 / 6.0)
    value = s + (s * cos_a_minus_1 + c * sin_a) if quadrant % 2 else c + (c * cos_a_minus_1 - s * sin_a)
    return value * (1.0, -1.0, -1.0, 1.0)[quadrant]


def test_the_same_bits_as_plain_python_floats():
    """Every step is one correctly rounded IEEE operation (no fused multiply-add, no
    approximation), so a scalar evaluation gives the very same doubles.  (It takes the
    module's tables: their values are checked by the accuracy tests above.)"""
    v = _logarithm_inputs()
    assert [_bits(x) for x in minus_log(v).tolist()] == [_bits(_python_minus_log(x)) for x in v.tolist()]
    u = _uniforms(5000, 6)
    assert [_bits(x) for x in cos_two_pi(u).tolist()] == [_bits(_python_cos_two_pi(x)) for x in u.tolist()]


_NOISE = """
import hashlib, numpy as np
from polars_ppdm.kernels.dp_noise import discrete_laplace
from polars_ppdm.kernels.noise import gaussian_noise
from polars_ppdm.kernels.prf import stream_id
keys, secret = np.arange(200_000), bytes(range(16))
parts = (discrete_laplace(secret, stream_id("b"), keys, 3.0), gaussian_noise(secret, stream_id("c"), keys, 3.0))
print(hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest())
"""


#: The noise's bits, pinned (the exact discrete Laplace sampler of issue 26, and the Gaussian):
#: the same on every machine and in every version that does not
#: announce a change (a CPU whose NumPy dispatches np.log to AVX-512 gave other bits).
NOISE_DIGEST = "ca5c54971caba8a6b13cd75fae921272b1e568b8ab75495b919fa169ee5316ce"


def test_noise_has_the_same_bits_whatever_simd_numpy_dispatches_to():
    keys = np.arange(200_000)
    parts = (
        discrete_laplace(SECRET, stream_id("b"), keys, 3.0),
        gaussian_noise(SECRET, stream_id("c"), keys, 3.0),
    )
    assert hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest() == NOISE_DIGEST
    assert stdout_with_numpy_simd_off(_NOISE) == NOISE_DIGEST


@pytest.mark.parametrize(
    ("function", "values"),
    [(minus_log, [0.0, 2.0**-55, 1.5, float("nan")]), (cos_two_pi, [-0.25, 1.0, float("nan")])],
)
def test_a_value_outside_the_domain_is_refused(function, values):
    """The table lookup would give a wrong number for it, not an error."""
    for value in values:
        with pytest.raises(ValueError, match="takes values in"):
            function(np.array([0.5, value]))


def _dkw_bound(n: int, failure: float = 1e-6) -> float:
    """Dvoretzky-Kiefer-Wolfowitz: P(sup |F_n - F| > e) <= 2 exp(-2 n e^2)."""
    return math.sqrt(math.log(2 / failure) / (2 * n))


def _two_sided_geometric_cdf(x: float, scale: float = 2.0) -> float:
    """P(X <= x) for P(X = k) = (1 - a) / (1 + a) a^|k|, a = exp(-1 / scale): P(X >= m) =
    a^m / (1 + a) for m >= 1, and the law is symmetric."""
    alpha, k = math.exp(-1.0 / scale), math.floor(x)
    return alpha ** (-k) / (1 + alpha) if k < 0 else 1 - alpha ** (k + 1) / (1 + alpha)


@pytest.mark.parametrize(
    ("draw", "cdf"),
    [
        (gaussian_noise, lambda x: 0.5 * (1 + math.erf(x / (2.0 * math.sqrt(2))))),
        (discrete_laplace, _two_sided_geometric_cdf),
    ],
    ids=["gaussian", "discrete_laplace"],
)
def test_noise_follows_its_law(draw, cdf):
    """The empirical CDF within the DKW band of the law's (sigma or scale 2) everywhere."""
    n = 400_000
    noise = np.sort(draw(SECRET, stream_id("law"), np.arange(n), 2.0))
    grid = np.linspace(-8.0, 8.0, 321)
    empirical = np.searchsorted(noise, grid, side="right") / n
    exact = np.array([cdf(x) for x in grid])
    assert np.abs(empirical - exact).max() <= _dkw_bound(n)
