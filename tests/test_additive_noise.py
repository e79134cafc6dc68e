"""Additive noise and what can be mined from it (paper 003, chapter 4): the noise, the
Agrawal-Srikant reconstruction, covariance and PCA-DR."""

from __future__ import annotations

import math
import warnings

import duckdb
import numpy as np
import polars as pl
import pytest
from _helpers import Z
from polars.testing import assert_frame_equal

import polars_ppdm as ppdm
from polars_ppdm.exceptions import EstimateWarning, InvalidParameterError


@pytest.mark.parametrize(("dist", "variance"), [("uniform", 3.0**2 / 3), ("gaussian", 3.0**2)])
def test_noise_has_the_stated_distribution_and_follows_the_key(dist, variance):
    n = 200_000
    df = pl.DataFrame({"id": np.arange(n) * 7, "x": np.zeros(n)})
    out = ppdm.add_noise(df, "x", dist=dist, scale=3.0, secret=4, key="id")
    r = out["x"].to_numpy()
    # 5 standard errors of a variance estimate: sd(s^2) ~ sigma^2 sqrt((kurtosis - 1) / n), kurtosis <= 3
    assert abs(r.var() - variance) < 5 * variance * math.sqrt(2 / n)
    assert abs(r.mean()) < 5 * math.sqrt(variance / n)
    if dist == "uniform":
        assert np.abs(r).max() <= 3.0
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=1)
    again = ppdm.add_noise(shuffled, "x", dist=dist, scale=3.0, secret=4, key="id")
    assert_frame_equal(again.sort("id"), out.sort("id"))


def test_engines_and_expression_agree_and_nulls_stay():
    df = pl.DataFrame({"x": [1.0, None, 3.0] * 50_000, "y": np.arange(150_000)})
    eager = ppdm.add_noise(df, ["x", "y"], scale=[0.5, 2.0], secret=9)
    lazy = df.lazy().ppdm.add_noise(["x", "y"], scale=[0.5, 2.0], secret=9)
    assert_frame_equal(lazy.collect(engine="streaming"), eager)
    assert_frame_equal(lazy.collect(engine="in-memory"), eager)
    expr = df.with_columns(pl.col("x").ppdm.add_noise(scale=0.5, secret=9))
    assert_frame_equal(expr["x"].to_frame(), eager["x"].to_frame())
    assert eager["x"].null_count() == 50_000 and eager.schema["y"] == pl.Float64


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(scale=0.0), "'scale'"),
        (dict(scale=-1.0), "'scale'"),
        (dict(scale=1.0, dist="laplace"), "'dist'"),
    ],
)
def test_bad_noise_parameters(kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.add_noise(pl.DataFrame({"x": [1.0]}), "x", **kwargs)
    with pytest.raises(InvalidParameterError, match="'key' parameter of add_noise"):
        ppdm.add_noise(pl.DataFrame({"x": [1.0]}), "x", scale=1.0, key="typo")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(max_iter=0), "'max_iter' parameter .* Got 0"),
        (dict(max_iter=2.5), "'max_iter'"),
        # max_iter = 10^11 with tol = 0 ran for hours; one past the cap still ran to the end.
        (
            dict(max_iter=100_001, tol=0.0),
            "'max_iter' parameter of reconstruct_distribution must be an int in \\[1, 100,000\\]",
        ),
        (dict(tol=float("nan")), "'tol' parameter .* Got nan"),
        (dict(tol=-1.0), "'tol'"),
        (dict(bins=1000, scale=100.0), "transition matrix"),
    ],
)
def test_reconstruct_bad_settings(kwargs, message):
    frame = pl.DataFrame({"x": np.linspace(0, 10, 100)})
    settings = dict(dist="gaussian", scale=0.5, bins=10, bounds=(0, 10)) | kwargs
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.reconstruct_distribution(frame, "x", **settings)


def test_noise_too_small_to_explain_a_value_is_refused_and_the_upper_bound_is_inside():
    # A value at `high` fell in the noisy bin above the domain, which a subnormal noise
    # cannot reach: 0 / 0 in the iteration (NumPy's RuntimeWarning) and NaN frequencies.
    frame = pl.DataFrame({"x": [0.5, 1.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ppdm.reconstruct_distribution(frame, "x", scale=5e-324, bins=8, bounds=(0, 1), max_iter=30)
        assert out["frequency"].to_list() == [0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.5]
        with pytest.raises(
            InvalidParameterError, match="values of the column 'x' lie in noisy bins that gaussian"
        ):
            ppdm.reconstruct_distribution(
                frame.with_columns(x=pl.lit(1.01)).vstack(frame), "x", scale=5e-324, bins=8, bounds=(0, 1)
            )


def test_reconstruct_refuses_infinities():
    # An infinity clipped into the outer noisy bin would be counted as a real value.
    frame = pl.DataFrame({"x": [1.0, 2.0, float("inf")]})
    with pytest.raises(InvalidParameterError, match="NaN or infinite"):
        ppdm.reconstruct_distribution(frame, "x", dist="gaussian", scale=0.5, bins=5, bounds=(0, 10))


def test_nan_and_non_numeric_are_refused():
    with pytest.raises(InvalidParameterError, match="NaN or infinite"):
        ppdm.add_noise(pl.DataFrame({"x": [1.0, float("nan")]}), "x", scale=1.0)
    with pytest.raises(InvalidParameterError, match="must be numeric"):
        ppdm.add_noise(pl.DataFrame({"s": ["a"]}), "s", scale=1.0)
    with pytest.raises(InvalidParameterError, match="'scale'"):
        ppdm.reconstruct_distribution(pl.DataFrame({"x": [1.0]}), "x", dist="uniform", scale=0, bounds=(0, 1))


def samples(shape: str, n: int, rng) -> np.ndarray:
    if shape == "bimodal":
        return np.where(rng.random(n) < 0.4, rng.normal(2.5, 0.6, n), rng.normal(7.0, 0.8, n))
    if shape == "triangular":
        return rng.triangular(0, 7, 10, n)
    return 10 * rng.beta(1.2, 5, n)  # skewed


@pytest.mark.parametrize("shape", ["bimodal", "triangular", "skewed"])
@pytest.mark.parametrize("dist", ["uniform", "gaussian"])
def test_reconstruction_halves_the_distance_to_the_truth(shape, dist):
    rng = np.random.default_rng(7)
    x = np.clip(samples(shape, 100_000, rng), 0, 10)
    std = x.std()
    scale = std * math.sqrt(3) if dist == "uniform" else std  # noise std == data std
    noisy = ppdm.add_noise(pl.DataFrame({"x": x}), "x", dist=dist, scale=scale, secret=1)
    bins = 20
    estimate = ppdm.reconstruct_distribution(noisy, "x", dist=dist, scale=scale, bins=bins, bounds=(0, 10))
    truth = np.histogram(x, bins=bins, range=(0, 10))[0] / len(x)
    raw = np.histogram(np.clip(noisy["x"].to_numpy(), 0, 10), bins=bins, range=(0, 10))[0] / len(x)
    tv_estimate = 0.5 * np.abs(estimate["frequency"].to_numpy() - truth).sum()
    tv_raw = 0.5 * np.abs(raw - truth).sum()
    assert tv_estimate <= 0.5 * tv_raw, (tv_estimate, tv_raw)
    assert estimate["frequency"].sum() == pytest.approx(1.0)
    assert estimate["count"].sum() == pytest.approx(len(x))


def test_covariance_within_five_standard_errors():
    rng = np.random.default_rng(3)
    n, sigma = 200_000, 2.0
    true = np.array([[4.0, 1.5, -1.0], [1.5, 2.0, 0.3], [-1.0, 0.3, 1.0]])
    x = rng.multivariate_normal([10, 0, -5], true, n)
    noisy = ppdm.add_noise(pl.DataFrame(x, schema=["a", "b", "c"]), ["a", "b", "c"], scale=sigma, secret=2)
    estimate = ppdm.estimate_covariance(noisy, ["a", "b", "c"], scale=sigma).drop("column").to_numpy()
    observed = true + sigma**2 * np.eye(3)  # Cov(Y)
    # Var of a sample covariance of normal data: (S_ii S_jj + S_ij^2) / n
    se = np.sqrt((np.outer(np.diag(observed), np.diag(observed)) + observed**2) / n)
    assert (np.abs(estimate - true) <= Z * se).all(), (estimate - true) / se


def test_covariance_with_noise_declared_per_column():
    # Only a and b get noise (uniform, different widths); c is published as it is.
    rng = np.random.default_rng(4)
    n = 200_000
    true = np.array([[4.0, 1.5, -1.0], [1.5, 2.0, 0.3], [-1.0, 0.3, 1.0]])
    x = pl.DataFrame(rng.multivariate_normal([10, 0, -5], true, n), schema=["a", "b", "c"])
    scales = {"a": 3.0, "b": 1.0, "c": 0.0}
    noisy = ppdm.add_noise(x, ["a", "b"], dist="uniform", scale=[3.0, 1.0], secret=2)
    estimate = ppdm.estimate_covariance(noisy, ["a", "b", "c"], dist="uniform", scale=scales)
    estimate = estimate.drop("column").to_numpy()
    observed = true + np.diag([s**2 / 3 for s in scales.values()])  # uniform on [-a, a]: a^2 / 3
    # Var of a sample covariance of normal data: (S_ii S_jj + S_ij^2) / n; exact off the
    # diagonal here (the noises are independent), an overestimate on it (uniform noise has
    # a negative excess kurtosis).
    se = np.sqrt((np.outer(np.diag(observed), np.diag(observed)) + observed**2) / n)
    assert (np.abs(estimate - true) <= Z * se).all(), (estimate - true) / se
    with pytest.raises(
        InvalidParameterError, match="'scale' parameter of add_noise must be a finite float > 0"
    ):
        ppdm.add_noise(x, ["a", "c"], scale={"a": 1.0, "c": 0.0})


def test_pca_reconstruction_error_is_sigma_squared_p_over_m():
    rng = np.random.default_rng(5)
    n, m, p, sigma = 200_000, 10, 2, 1.0
    x = rng.normal(0, 6, (n, p)) @ rng.normal(size=(p, m)) + rng.normal(0, 3, m)
    cols = [f"v{i}" for i in range(m)]
    noisy = ppdm.add_noise(pl.DataFrame(x, schema=cols), cols, scale=sigma, secret=6)
    rebuilt = ppdm.pca_reconstruct(noisy, cols, scale=sigma, components=p)
    mse = float(((rebuilt.to_numpy() - x) ** 2).mean())
    # The data are exactly rank p: what is left of the noise is its projection on the p
    # principal directions, ||U^T e||^2 ~ sigma^2 chi2(p) per row, so the mean over n m
    # cells has mean sigma^2 p / m and SE sigma^2 sqrt(2 p / n) / m (the directions and
    # the mean estimated from n = 200,000 rows add O(1 / n), far below it).
    assert abs(mse - sigma**2 * p / m) <= Z * sigma**2 * math.sqrt(2 * p / n) / m
    default = ppdm.pca_reconstruct(noisy, cols, scale=sigma)  # p found from the eigenvalues
    assert_frame_equal(default, rebuilt)
    report = ppdm.audit.pca_noise_stripping(pl.DataFrame(x, schema=cols), noisy, cols, scale=sigma)
    assert (report["attack_rms"] < report["noise_rms"]).all()  # every column loses noise
    energy = (report["attack_rms"] ** 2).sum() / (report["noise_rms"] ** 2).sum()
    # A ratio of two chi-square means: the noise left (chi2(p) per row, relative SE
    # sqrt(2 / (p n))) over all the noise (chi2(m) per row, relative SE sqrt(2 / (m n)));
    # the ratio's relative SE is at most the sum.
    assert abs(energy / (p / m) - 1) <= Z * (math.sqrt(2 / (p * n)) + math.sqrt(2 / (m * n)))
    with pytest.raises(InvalidParameterError, match="'components'"):
        ppdm.pca_reconstruct(noisy, cols, scale=sigma, components=11)
    with pytest.raises(InvalidParameterError, match="'scale'"):
        ppdm.estimate_covariance(noisy, cols, scale=-1.0)


def test_negative_variance_estimate_is_reported_not_passed_on_silently():
    # Income gets noise of scale 50; rent (variance 100) is published as it is.  Declaring
    # the one scale for both subtracts 2,500 from rent's variance: about -2,400, hundreds
    # of standard errors below 0 -- a wrong declaration, which the warning names.
    rng = np.random.default_rng(8)
    n = 50_000
    x = pl.DataFrame({"income": rng.normal(1_000, 300, n), "rent": rng.normal(500, 10, n)})
    noisy = ppdm.add_noise(x, ["income"], scale=50.0, secret=5)
    with pytest.warns(
        EstimateWarning,
        match=r"column 'rent' is -2\d{3}, [\d,.]+ standard errors below 0.*'scale' given for 'rent'",
    ):
        wrong = ppdm.estimate_covariance(noisy, ["income", "rent"], scale=50.0)
    assert wrong["rent"][1] < 0  # returned as computed: clipping would bias it
    with pytest.warns(EstimateWarning, match="'rent'"):
        ppdm.pca_reconstruct(noisy, ["income", "rent"], scale=50.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declared per column: no warning
        right = ppdm.estimate_covariance(noisy, ["income", "rent"], scale={"income": 50.0, "rent": 0.0})
    # Var of a sample variance of normal data: 2 S^2 / n
    assert abs(right["rent"][1] - 100.0) <= Z * 100.0 * math.sqrt(2 / n)


@pytest.mark.parametrize("func", ["pca_reconstruct", "estimate_covariance"])
@pytest.mark.parametrize(("dist", "scale"), [("gaussian", 1e308), ("gaussian", 1e154), ("uniform", 1e308)])
def test_a_scale_whose_noise_variance_overflows_is_refused_by_name(func, dist, scale):
    """scale**2 raised a raw OverflowError (fuzz finding pca-reconstruct-scale-overflow);
    1e154 squares to 1e308, finite, but two of them sum to inf in the noise's mean."""
    df = pl.DataFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, 0.0, 2.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            InvalidParameterError, match=rf"'scale' parameter of {func} .* finite floats: at most about"
        ):
            getattr(ppdm, func)(df, ["x", "y"], dist=dist, scale=scale)


def test_the_largest_accepted_scale_gives_an_estimate_without_numpy_warnings():
    df = pl.DataFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, 0.0, 2.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", EstimateWarning)  # the declared noise exceeds the data's
        cov = ppdm.estimate_covariance(df, ["x", "y"], scale=9e153)
        rebuilt = ppdm.pca_reconstruct(df, ["x", "y"], scale=9e153)
    assert cov["x"][0] == 1.0 - 9e153**2 and rebuilt.height == 3


@pytest.mark.parametrize("engine", ["frame", "expr", "duckdb"])
def test_a_scale_whose_draws_overflow_is_refused(engine):
    """Gaussian draws reach 8.6 sigma: a scale of 1e308 made inf values with a raw
    RuntimeWarning (fuzz, slow profile)."""
    df = pl.DataFrame({"x": [0.0, 1.0], "id": [1, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises((InvalidParameterError, duckdb.Error), match="at most 1e\\+307"):
            if engine == "frame":
                ppdm.add_noise(df, "x", scale=1e308, secret=1, key="id")
            elif engine == "expr":
                df.with_columns(pl.col("x").ppdm.add_noise(scale=1e308, secret=1, key="id"))
            else:
                con = ppdm.duckdb.register(duckdb.connect())
                con.sql("SELECT ppdm_add_noise(x, 1e308, '1', id, 'x') FROM df").fetchall()


def test_columns_as_a_mapping_are_refused():
    """A dict iterates its keys: {'x': 1} was read as ['x'] (fuzz, slow profile)."""
    df = pl.DataFrame({"x": [0.0, 1.0]})
    with pytest.raises(
        InvalidParameterError, match="'columns' parameter of add_noise must be a column name or a list"
    ):
        ppdm.add_noise(df, {"x": 1}, scale=1.0, secret=1)


#: add_noise's bits, pinned: keyed by (unit, column, value) through the AES chain of
#: kernels.prf.chained_prf_words; a change of the keying must be announced.
KEYED_NOISE_DIGEST = "57995c22164326b06102501f00a36a0289f63606692aab7164272dc7242be427"


def test_noise_keyed_by_value_is_pinned_and_the_same_in_duckdb():
    import hashlib

    n = 20_000
    rng = np.random.default_rng(26)
    df = pl.DataFrame({"unit": rng.integers(0, 3_000, n), "v": np.round(rng.normal(0, 5, n), 2)})
    secret = "00112233445566778899aabbccddeeff"
    outs = [
        ppdm.add_noise(df, "v", dist=dist, scale=2.0, secret=secret, key="unit")["v"]
        for dist in ("gaussian", "uniform")
    ]
    digest = hashlib.sha256(b"".join(o.to_numpy().tobytes() for o in outs)).hexdigest()
    assert digest == KEYED_NOISE_DIGEST
    con = ppdm.duckdb.register(duckdb.connect())
    sql = con.sql(
        f"SELECT ppdm_add_noise(v, 2.0, '{secret}', unit, 'v') AS g, "
        f"ppdm_add_noise(v, 2.0, '{secret}', unit, 'v', dist := 'uniform') AS u FROM df"
    ).pl()
    assert sql["g"].to_list() == outs[0].to_list() and sql["u"].to_list() == outs[1].to_list()
