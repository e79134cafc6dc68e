"""The accuracy figures a release publishes are the same bits on every NumPy.

Standard deviations and interval quantiles of the noise are published beside the
releases (``*_sd`` columns, the report).  They were built on ``np.exp``, whose last bit
differs between NumPy versions and CPUs, and the geometric noise's ``1 - exp(-1/scale)``
lost half of a double's digits at a fine grid's scale: ``dp_group_by``'s ``x_sum_sd``
below was 70.7106781115756 on NumPy 2.4 and 70.7106781630244 on NumPy 1.26 (the minimum,
run by CI's minimum-versions leg), both about 1e-10 off.  They are now built on the C
library's ``exp`` and ``expm1``: the values are pinned here, and checked against 60-digit
decimal arithmetic.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.dp.accuracy import geometric_sd
from polars_ppdm.kernels.dp_noise import discrete_gaussian_quantile, discrete_gaussian_variance


def test_noise_figures_are_pinned() -> None:
    assert geometric_sd(1.0) == 1.3569624860015788
    assert discrete_gaussian_variance(0.7) == 0.48880563069423344
    assert discrete_gaussian_variance(1.3) == 1.6900000007256981
    assert [discrete_gaussian_quantile(s, 0.975) for s in (0.5, 3.3, 100.7, 5000.1)] == [1, 6, 197, 9800]


def test_a_released_sd_is_pinned() -> None:
    out = ppdm.dp_group_by(
        pl.DataFrame({"g": [0, 0, 1], "x": [10.0, 20.0, 30.0]}),
        "g",
        [dp.sum("x", bounds=(0, 100))],
        epsilon=2.0,
        public_groups=pl.DataFrame({"g": [0]}),
        secret=ppdm.Secret.for_tests(1),
        intervals=True,
    )
    assert out["x_sum_sd"][0] == 70.71067811865468


@pytest.mark.parametrize("scale", [0.05, 0.3, 1.0, 3.0, 1e3, 6553600.0, 1e9, 1e12])
def test_the_geometric_sd_is_exact_to_a_few_ulps(scale: float) -> None:
    with localcontext() as ctx:
        ctx.prec = 60
        alpha = (Decimal(-1) / Decimal(scale)).exp()
        exact = float((2 * alpha).sqrt() / (1 - alpha))
    assert abs(geometric_sd(scale) - exact) <= 4 * abs(exact) * 2.0**-52
