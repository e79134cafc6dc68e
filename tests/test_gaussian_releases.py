"""The Gaussian mechanism (discrete Gaussian noise, rho-zCDP) in dp_histogram and dp_group_by:
its noise has the law it claims, it is charged as a rho, and it survives the attacks the
Laplace releases are held to (same secret over changed data, a pure accountant)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError
from polars_ppdm.kernels.dp_noise import discrete_gaussian_quantile, discrete_gaussian_variance

SECRET = ppdm.Secret.for_tests(11)


def _histogram(frame, **kwargs):
    return ppdm.dp_histogram(frame, "x", bounds=(0, 1), secret=SECRET, mechanism="gaussian", **kwargs)


def test_the_histogram_is_the_same_bits_eager_lazy_and_streaming():
    frame = pl.DataFrame({"x": np.linspace(0, 1, 1000)})
    eager = _histogram(frame, bins=50, rho=0.1)
    lazy = _histogram(frame.lazy(), bins=50, rho=0.1)
    assert eager.equals(lazy.collect())
    assert eager.equals(lazy.collect(engine="streaming"))


def test_histogram_noise_has_the_discrete_gaussians_variance():
    # One row in 40,000 bins: the released counts are the noise (but one).
    rho, bins = 0.02, 40_000
    sigma = 1 / math.sqrt(2 * rho)  # max_contributions 1: L2 sensitivity 1
    counts = _histogram(pl.DataFrame({"x": [0.5]}), bins=bins, rho=rho)["count"].to_numpy()
    noise = counts.astype(float)
    noise[bins // 2] -= 1
    variance = discrete_gaussian_variance(sigma)
    # The sample variance of n near-normal draws has SE variance * sqrt(2 / n).
    assert abs(noise.var() - variance) <= 5 * variance * math.sqrt(2 / bins)
    assert abs(noise.mean()) <= 5 * math.sqrt(variance / bins)


def test_the_sensitivity_follows_max_contributions_in_l2():
    frame = pl.DataFrame({"x": [0.5, 0.5, 0.5], "unit": [1, 1, 1]})
    for k in (1, 3):
        request = ppdm.dp.histogram.check_histogram(
            frame.schema,
            "x",
            bounds=(0, 1),
            bins=4,
            epsilon=None,
            key="unit",
            max_contributions=k,
            mechanism="gaussian",
            rho=0.5,
        )
        assert request.scale == pytest.approx(k / math.sqrt(2 * 0.5))


def test_a_gaussian_release_is_charged_as_a_rho_and_refused_by_a_pure_accountant():
    frame = pl.DataFrame({"x": [0.1, 0.7]})
    zcdp = ppdm.BudgetAccountant(rho=0.25)
    _histogram(frame, bins=4, rho=0.1, accountant=zcdp)
    assert zcdp.spent_rho == pytest.approx(0.1)
    assert zcdp.ledger["rho"].to_list() == [pytest.approx(0.1)]
    pure = ppdm.BudgetAccountant(10.0)
    with pytest.raises(BudgetExceededError, match="a rho is not an epsilon"):
        _histogram(frame, bins=4, rho=0.1, accountant=pure)
    assert pure.spent == 0
    with pytest.raises(BudgetExceededError, match=r"needs rho 0\.2"):
        _histogram(frame, bins=4, rho=0.2, accountant=zcdp)
    assert zcdp.spent_rho == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rho": 0.1, "epsilon": 1.0}, "takes rho= .* and no epsilon"),
        ({}, "takes rho="),
        ({"rho": 0.0}, "'rho' parameter of dp_histogram"),
        ({"rho": math.inf}, "'rho' parameter of dp_histogram"),
        (
            {"rho": 0.1, "mechanism": "gauss"},
            r"'mechanism' parameter of dp_histogram must be one of \['laplace', 'gaussian'\]",
        ),
    ],
)
def test_bad_gaussian_parameters_are_refused_by_name(kwargs, match):
    frame = pl.DataFrame({"x": [0.1]})
    mechanism = kwargs.pop("mechanism", "gaussian")
    with pytest.raises(InvalidParameterError, match=match):
        ppdm.dp_histogram(frame, "x", bounds=(0, 1), bins=2, secret=SECRET, mechanism=mechanism, **kwargs)
    with pytest.raises(InvalidParameterError, match="rho= is the budget of mechanism='gaussian'"):
        ppdm.dp_histogram(frame, "x", bounds=(0, 1), bins=2, secret=SECRET, epsilon=1.0, rho=0.1)


def test_same_secret_over_changed_data_draws_fresh_gaussian_noise():
    """The record-replay attack: one row added, the same secret, release again. Were the
    noise keyed by the cell only, every cell would show its exact change."""
    rng = np.random.default_rng(3)
    base = pl.DataFrame({"x": rng.uniform(0, 1, 5000)})
    grown = pl.concat([base, pl.DataFrame({"x": [0.55]})])
    first = _histogram(base, bins=200, rho=0.05)["count"].to_numpy()
    second = _histogram(grown, bins=200, rho=0.05)["count"].to_numpy()
    true = (
        np.histogram(grown["x"], bins=200, range=(0, 1))[0]
        - np.histogram(base["x"], bins=200, range=(0, 1))[0]
    )
    exact = float(np.mean(second - first == true))
    # Fresh noise of sigma sqrt(10): two draws agree with probability ~1 / (2 sigma sqrt(pi)) ~ 9%.
    assert exact < 0.25
    assert _histogram(base, bins=200, rho=0.05)["count"].to_numpy().tolist() == first.tolist()


# --- dp_group_by -------------------------------------------------------------------------

GROUPS = pl.DataFrame({"g": [f"g{i}" for i in range(4000)]})


def _group_by(frame, aggregates, **kwargs):
    return ppdm.dp_group_by(
        frame,
        "g",
        aggregates,
        mechanism="gaussian",
        public_groups=kwargs.pop("public_groups", GROUPS),
        secret=SECRET,
        **kwargs,
    )


def test_group_by_noise_scales_with_the_square_root_of_the_groups_a_unit_touches():
    frame = pl.DataFrame({"g": ["g0", "g1"], "unit": [1, 1], "v": [1.0, 2.0]})
    out = _group_by(
        frame,
        [dp.count()],
        rho=0.5,
        privacy_unit="unit",
        max_groups_contributed=4,
        max_rows_per_group=3,
        intervals=True,
        public_groups=GROUPS.head(10),
    )
    sigma = math.sqrt(4) * 3 / math.sqrt(2 * 0.5)  # L2 sqrt(G) * R, not L1 G * R
    assert out["count_sd"].to_list() == pytest.approx([math.sqrt(discrete_gaussian_variance(sigma))] * 10)


def test_group_by_intervals_are_exact_quantiles_and_cover():
    rho = 0.05
    empty = pl.DataFrame({"g": ["g0"], "v": [1.0]})
    out = _group_by(empty, [dp.count(), dp.sum("v", bounds=(0, 10))], rho=rho, intervals=True)
    sigma = 1 / math.sqrt(2 * rho / 2)  # rho shared by the two aggregates
    half = discrete_gaussian_quantile(sigma, 0.975)
    noise = out["count"].to_numpy().astype(float)
    noise[0] -= 1
    assert (out["count_ci_high"] - out["count"]).to_list() == [half] * len(out)
    covered = float(np.mean(np.abs(noise) <= half))
    n = len(noise)
    assert covered >= 0.95 - 5 * math.sqrt(0.95 * 0.05 / n)


def test_group_by_gaussian_refusals():
    frame = pl.DataFrame({"g": ["a"], "v": [1.0]})
    with pytest.raises(InvalidParameterError, match="needs public_groups"):
        ppdm.dp_group_by(frame, "g", [dp.count()], mechanism="gaussian", rho=0.1, delta=1e-6, secret=SECRET)
    with pytest.raises(InvalidParameterError, match="shares rho evenly"):
        _group_by(frame, [dp.count(epsilon=0.5)], rho=0.1)
    with pytest.raises(InvalidParameterError, match="takes rho="):
        _group_by(frame, [dp.count()], epsilon=1.0)


def test_group_by_gaussian_is_charged_once_per_collect_as_rho():
    frame = pl.DataFrame({"g": ["g1", "g2"], "v": [1.0, 2.0]})
    acc = ppdm.BudgetAccountant(rho=1.0)
    lazy = _group_by(
        frame.lazy(), [dp.mean("v", bounds=(0, 5))], rho=0.2, accountant=acc, public_groups=GROUPS.head(3)
    )
    first = lazy.collect()
    second = lazy.collect()
    assert first.equals(second)
    assert acc.spent_rho == pytest.approx(0.4)  # every collect is a release
