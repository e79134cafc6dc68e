"""Audits for ECDF resampling: privacy Q (mutual information), rank linkage, noise baselines."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from _helpers import Z

import polars_ppdm as ppdm
from polars_ppdm.audit import information
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.ecdf import smoothed_cdf
from polars_ppdm.kernels.noise import gaussian_noise, scale_for_snr, uniform_noise

N = 20_000


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(12)
    a = rng.normal(size=N)
    return pl.DataFrame({"id": np.arange(N), "a": a, "b": np.exp(a) + rng.normal(0, 0.5, N)})


def relinked_floor(table: pl.DataFrame, bins: int) -> float:
    """Least rank linkage of a rank-relinked release of columns a and b, up to Z SE.

    Every rank survives except among draws on the smoothed ECDF's point mass at the
    minimum (paper 000), which tie: m such draws in a column lose at most m rows.  Per
    column m ~ Binomial(N, F(x_0)), so m <= N F(x_0) + Z sqrt(N F(x_0)) + 1.
    """
    lost = 0.0
    for column in ("a", "b"):
        mean = N * smoothed_cdf(table[column].to_numpy(), bins)[1][0]
        lost += mean + Z * math.sqrt(mean) + 1
    return 1 - lost / N


def test_mutual_information_of_independent_columns_is_near_zero(table, monkeypatch):
    # The classes the default estimator cuts each column into, read off the code as it
    # runs (a copy of its rule here could drift from it).
    classes = []
    cut = information._quantile_bins

    def counted(values, bins):
        codes = cut(values, bins)
        classes.append(len(np.unique(codes)))
        return codes

    monkeypatch.setattr(information, "_quantile_bins", counted)
    other = np.random.default_rng(99).normal(size=N)
    mi = ppdm.audit.mutual_information(table["a"], other)
    assert len(classes) == 2 and min(classes) >= 2
    # Independent columns: 2 n ln(2) x the plug-in (bits) is a G statistic, ~ chi-square
    # with df = (bx - 1)(by - 1); the bias correction removes its mean df, so what is left
    # has a spread of sqrt(2 df) / (2 n ln 2) bits.
    df_ = (classes[0] - 1) * (classes[1] - 1)
    assert mi < Z * math.sqrt(2 * df_) / (2 * N * math.log(2))


def test_privacy_q_of_a_rank_preserving_release_is_the_estimators_ceiling(table):
    released = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4)
    q = ppdm.audit.privacy_q(table["a"], released["a"], bins=20)
    ceiling = 1 - 2 ** -(math.log2(20) - 19 * 19 / (2 * N * math.log(2)))
    assert q == pytest.approx(ceiling, abs=1e-9)


def test_privacy_q_falls_as_noise_grows(table):
    x = table["a"].to_numpy()
    keys = np.arange(N)
    qs = [
        ppdm.audit.privacy_q(
            x, x + gaussian_noise(bytes(16), 1, keys, scale_for_snr(x.var(), snr, "gaussian"))
        )
        for snr in (16.0, 4.0, 1.0, 0.25)
    ]
    assert all(a > b for a, b in itertools.pairwise(qs))


@pytest.mark.parametrize("dist", ["uniform", "gaussian"])
def test_noise_has_the_variance_the_snr_asks_for(dist):
    draw = uniform_noise if dist == "uniform" else gaussian_noise
    r = draw(bytes(32), 7, np.arange(200_000), scale_for_snr(9.0, 4.0, dist))
    target = 9.0 / 4.0
    # SE of a sample variance: sqrt((mu4 - sigma^4) / n); mu4 = 1.8 s^4 (uniform), 3 s^4 (normal).
    kurtosis = 1.8 if dist == "uniform" else 3.0
    assert abs(r.var() - target) < 5 * target * math.sqrt((kurtosis - 1) / len(r))
    assert abs(r.mean()) < 5 * math.sqrt(target / len(r))


def test_rank_linkage_is_total_for_rank_relinking_and_near_zero_otherwise(table):
    relinked = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4)
    independent = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4, link="none")
    assert ppdm.audit.rank_linkage(table, relinked, ["a", "b"]) >= relinked_floor(table, 50)
    # link='none': a row keeps its rank in a column with probability 1 / N, in both with
    # 1 / N^2; the count of such rows is ~ Poisson(1 / N), P(2 or more) ~ 1 / (2 N^2) = 1e-9.
    assert ppdm.audit.rank_linkage(table, independent, ["a", "b"]) <= 1 / N


def test_rank_linkage_survives_the_shuffle_through_an_id(table):
    shuffled = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4, shuffle=True)
    assert ppdm.audit.rank_linkage(table, shuffled, ["a", "b"], on="id") >= relinked_floor(table, 50)
    # Without the id the rows are misaligned: the audit is then about the wrong rows; a
    # row is linked only where the shuffle left it in place, ~ Poisson(1) rows: P(10 or
    # more) = 1.1e-7.
    assert ppdm.audit.rank_linkage(table, shuffled, ["a", "b"]) < 10 / N


def test_rank_linkage_guesses_uniformly_among_ties():
    original = pl.DataFrame({"x": [1.0, 1.0, 2.0, 3.0]})
    assert ppdm.audit.rank_linkage(original, original, "x") == pytest.approx((0.5 + 0.5 + 1 + 1) / 4)


def test_compare_to_additive_noise_reports_every_method_and_snr(table):
    released = ppdm.ecdf_resample(table, ["a", "b"], bins=50, secret=4)
    out = ppdm.audit.compare_to_additive_noise(table, released, ["a", "b"], snr=[1.0, 10.0], secret=3)
    assert out.columns == ["method", "snr", "rank_linkage", "privacy_q_a", "privacy_q_b"]
    assert out["method"].to_list() == ["released"] + ["uniform noise", "gaussian noise"] * 2
    assert out["rank_linkage"][0] >= relinked_floor(table, 50)
    noisy = out.filter(pl.col("snr").is_not_null())
    assert (noisy["privacy_q_a"] < out["privacy_q_a"][0]).all()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: ppdm.audit.mutual_information([1.0, 2.0], [1.0, 2.0, 3.0]), "same length"),
        (lambda t: ppdm.audit.mutual_information([1.0, float("nan")], [1.0, 2.0]), "finite"),
        (lambda t: ppdm.audit.privacy_q([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], bins=1), "'bins' parameter"),
        (lambda t: ppdm.audit.rank_linkage(t, t.head(10), "a"), "same height"),
        (lambda t: ppdm.audit.rank_linkage(t, t, "zz"), "'columns' parameter"),
        (lambda t: ppdm.audit.compare_to_additive_noise(t, t, "a", snr=0), "'snr' parameter"),
        (lambda t: ppdm.audit.compare_to_additive_noise(t, t.head(10), "a"), "aligned row by row. Got"),
        (
            lambda t: ppdm.audit.compare_to_additive_noise(
                t.with_columns(a=pl.lit(None, pl.Float64)), t, "a"
            ),
            "original columns \\['a'\\] hold nulls",
        ),
        (
            lambda t: ppdm.audit.pca_noise_stripping(t.drop("a"), t, list(t.columns), scale=1.0),
            "'columns'",
        ),
        (lambda t: ppdm.audit.pca_noise_stripping(t, t, list(t.columns), scale=0), "'scale'"),
    ],
)
def test_bad_audit_input(table, call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call(table)
