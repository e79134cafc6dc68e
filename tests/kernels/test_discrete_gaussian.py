"""The exact discrete Gaussian sampler (Canonne, Kamath, Steinke 2020, Algorithm 3): its
law, its bits (keyed, per key, pinned), its variance and quantiles, its refusals."""

from __future__ import annotations

import hashlib
import math
import re
from statistics import NormalDist

import numpy as np
import pytest
from _helpers import stdout_with_numpy_simd_off
from native_paths import kernel_path  # noqa: F401 - a fixture, used by pytestmark

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import (
    _bernoulli_after_tie,
    _gaussian_tails,
    _tail_euler_maclaurin,
    _TieWords,
    _Words,
    check_gaussian_sigma,
    discrete_gaussian,
    discrete_gaussian_quantile,
    discrete_gaussian_variance,
    discrete_laplace,
    gaussian_sampler_sigma,
)
from polars_ppdm.kernels.prf import stream_id

pytestmark = pytest.mark.usefixtures("kernel_path")

SECRET = bytes(range(16))
OTHER_SECRET = bytes(range(16, 32))
#: Chi-square goodness of fit is refused below this p-value, the DKW band holds with
#: probability 1 - DKW_FAILURE: a correct sampler fails one check once in ~10^4 runs.
P_VALUE = 1e-4
DKW_FAILURE = 1e-6
QUANTILES = (1e-9, 0.001, 0.025, 0.1, 0.5, 0.6, 0.9, 0.975, 0.999, 1 - 1e-9)


# ---------------------------------------------------------------------------- the exact law


def _brute_pmf(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Integers -L..L and their probabilities, exp(-x^2 / 2s^2) summed by math.fsum (the
    terms beyond L = 40 s + 2 are below exp(-800): nothing in double precision)."""
    s = gaussian_sampler_sigma(sigma)
    half = math.ceil(40 * s) + 2
    support = np.arange(-half, half + 1)
    terms = [math.exp(-(x * x) / (2 * s * s)) for x in support.tolist()]
    total = math.fsum(terms)
    return support, np.array(terms) / total


def _cdf(sigma: float, x: np.ndarray) -> np.ndarray:
    """P(X <= x) of the law drawn: summed pmf for moderate sigma; for large sigma the
    normal law with the continuity correction, Phi((x + 1/2) / s), whose gap to the
    discrete law's CDF is of order phi / (24 s^2) by Euler-Maclaurin (< 1e-13 at s = 2e6,
    far below what 10^6 draws can see)."""
    s = gaussian_sampler_sigma(sigma)
    if s <= 1000:
        support, pmf = _brute_pmf(sigma)
        cdf = np.cumsum(pmf)
        at = np.clip(np.asarray(x) - support[0], -1, len(support) - 1)
        return np.where(at < 0, 0.0, cdf[np.maximum(at, 0)])
    special = pytest.importorskip("scipy.special")
    return special.ndtr((np.asarray(x, dtype=np.float64) + 0.5) / s)


def _chi_square_p_value(sigma: float, draws: np.ndarray) -> float:
    """Pearson's chi-square over bins of >= 5 expected draws (integers alone for small
    sigma, integer intervals cut at the normal law's quantiles for large), tails pooled."""
    stats = pytest.importorskip("scipy.stats")
    n = len(draws)
    s = gaussian_sampler_sigma(sigma)
    if s <= 10:
        support, pmf = _brute_pmf(sigma)
        inner = support[pmf * n >= 5]
        cuts = np.concatenate(([inner[0] - 1], inner))
    else:
        z = [NormalDist().inv_cdf(i / 200) for i in range(1, 200)]
        cuts = np.unique(np.round(np.array(z) * s).astype(np.int64))
    # Bins: (-inf, cuts[0]], (cuts[0], cuts[1]], ..., (cuts[-1], inf).
    probabilities = np.diff(np.concatenate(([0.0], _cdf(sigma, cuts), [1.0])))
    observed = np.bincount(np.searchsorted(cuts, draws, side="left"), minlength=len(cuts) + 1)
    # Pool neighbouring bins (from the left) until each expects >= 5 draws.
    pooled: list[list[float]] = []
    waiting = [0.0, 0.0]
    for e, o in zip(probabilities * n, observed, strict=True):
        waiting = [waiting[0] + e, waiting[1] + o]
        if waiting[0] >= 5:
            pooled.append(waiting)
            waiting = [0.0, 0.0]
    pooled[-1] = [pooled[-1][0] + waiting[0], pooled[-1][1] + waiting[1]]
    if len(pooled) < 2:  # (sigma 0.05: one value has all the mass that n draws can see)
        return 1.0
    expected, counts = np.array(pooled).T
    statistic = float(((counts - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(statistic, len(expected) - 1))


def _dkw_distance(sigma: float, draws: np.ndarray) -> float:
    """sup_x |F_n(x) - F(x)|: both are step functions jumping at integers only, so the sup
    is reached at an observed value v (F_n(v)) or just before it (F_n(v - 1))."""
    values, counts = np.unique(draws, return_counts=True)
    after = np.cumsum(counts) / len(draws)
    before = after - counts / len(draws)
    return float(
        max(np.abs(after - _cdf(sigma, values)).max(), np.abs(before - _cdf(sigma, values - 1)).max())
    )


def _dkw_bound(n: int) -> float:
    """Dvoretzky-Kiefer-Wolfowitz (Massart): P(sup |F_n - F| > e) <= 2 exp(-2 n e^2)."""
    return math.sqrt(math.log(2 / DKW_FAILURE) / (2 * n))


def _check_law(sigma: float, n: int) -> None:
    draws = discrete_gaussian(SECRET, stream_id(f"t/law/{sigma!r}"), np.arange(n), sigma)
    assert draws.dtype == np.int64
    # No value that n draws should not see (expected count below 1e-9: a false alarm
    # once in ~10^8 runs), e.g. a nonzero draw at sigma 0.05 (probability ~1e-87).
    s = gaussian_sampler_sigma(sigma)
    values = np.unique(draws).astype(np.float64)
    density = np.exp(-(values**2) / (2 * s * s)) / (s * math.sqrt(2 * math.pi) + 1)
    if s <= 1e8:
        assert (n * density).min() >= 1e-9
    else:  # every single value is rarer than 1e-9 / n there: no draw beyond 12 sigma (p ~ 1e-32)
        assert np.abs(values).max() <= 12 * s
    assert _chi_square_p_value(sigma, draws) > P_VALUE
    assert _dkw_distance(sigma, draws) <= _dkw_bound(n)
    # The quantiles bracket the empirical CDF (within the DKW band).
    for q in (0.025, 0.5, 0.975):
        x = discrete_gaussian_quantile(sigma, q)
        assert np.mean(draws <= x) >= q - _dkw_bound(n)
        assert np.mean(draws <= x - 1) <= q + _dkw_bound(n)
    # The variance: within 6 standard errors (the fourth moment of the exact pmf, or the
    # normal law's 3 s^4 for large sigma).
    variance = discrete_gaussian_variance(sigma)
    if s <= 1000:
        support, pmf = _brute_pmf(sigma)
        fourth = float((support.astype(np.float64) ** 4 * pmf).sum())
    else:
        fourth = 3 * s**4
    se = math.sqrt((fourth - variance**2) / n)
    assert abs(float(np.mean(draws.astype(np.float64) ** 2)) - variance) <= 6 * se


@pytest.mark.parametrize("sigma", [0.3, 3.0, 2e6, 3.3e12, 2.0**50])
def test_draws_follow_the_exact_law(sigma):
    """Fast tier: 50,000 draws."""
    _check_law(sigma, 50_000)


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.05, 0.3, 0.8, 3.0, 50.0, 2e6])
def test_a_million_draws_follow_the_exact_law(sigma):
    _check_law(sigma, 1_000_000)


# ---------------------------------------------------------------------------- the bits

_DIGEST_SCRIPT = """
import hashlib, numpy as np
from polars_ppdm.kernels.dp_noise import discrete_gaussian
from polars_ppdm.kernels.prf import stream_id
keys, secret = np.arange(1000), bytes(range(16))
parts = [discrete_gaussian(secret, stream_id("t/pinned"), keys, s) for s in (0.8, 1e6)]
print(hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest())
"""

#: The first 1000 draws at sigma 0.8 and 1e6, pinned: the same bits on every machine,
#: engine and version (a change of the sampler's bits must be announced).
GAUSSIAN_DIGEST = "2d666883acc8223f4803b0e39f9fa932fade28982a6d76455a5d33dc42298949"


def test_bits_are_pinned_whatever_simd_numpy_dispatches_to():
    keys = np.arange(1000)
    parts = [discrete_gaussian(SECRET, stream_id("t/pinned"), keys, s) for s in (0.8, 1e6)]
    assert hashlib.sha256(b"".join(p.tobytes() for p in parts)).hexdigest() == GAUSSIAN_DIGEST
    assert stdout_with_numpy_simd_off(_DIGEST_SCRIPT) == GAUSSIAN_DIGEST


@pytest.mark.parametrize("sigma", [0.3, 10.0, 1e6])
def test_a_value_depends_only_on_its_own_key(sigma):
    keys = np.random.default_rng(5).integers(0, 2**63, size=20_000)
    whole = discrete_gaussian(SECRET, stream_id("t/own"), keys, sigma)
    assert np.array_equal(discrete_gaussian(SECRET, stream_id("t/own"), keys, sigma), whole)
    subset = np.arange(0, 20_000, 7)
    assert np.array_equal(discrete_gaussian(SECRET, stream_id("t/own"), keys[subset], sigma), whole[subset])
    order = np.random.default_rng(6).permutation(len(keys))
    assert np.array_equal(discrete_gaussian(SECRET, stream_id("t/own"), keys[order], sigma), whole[order])
    alone = [discrete_gaussian(SECRET, stream_id("t/own"), keys[i : i + 1], sigma)[0] for i in range(5)]
    assert alone == whole[:5].tolist()
    assert np.array_equal(discrete_gaussian(SECRET, stream_id("t/own"), keys.astype(np.uint64), sigma), whole)


def _looks_independent(a: np.ndarray, b: np.ndarray, sigma: float) -> None:
    """Independent draws: correlation within 6 / sqrt(n) of 0, and agreeing as often as
    two independent draws do (sum of p^2, within 6 standard errors)."""
    n = len(a)
    assert abs(float(np.corrcoef(a, b)[0, 1])) <= 6 / math.sqrt(n)
    _, pmf = _brute_pmf(sigma)
    same = float((pmf**2).sum())
    assert abs(float(np.mean(a == b)) - same) <= 6 * math.sqrt(same * (1 - same) / n)


def test_other_sigma_stream_or_secret_give_independent_draws():
    keys = np.arange(100_000)
    base = discrete_gaussian(SECRET, stream_id("t/indep"), keys, 3.0)
    _looks_independent(base, discrete_gaussian(SECRET, stream_id("t/indep2"), keys, 3.0), 3.0)
    _looks_independent(base, discrete_gaussian(OTHER_SECRET, stream_id("t/indep"), keys, 3.0), 3.0)
    nearby = 3.0 * (1 + 2.0**-28)  # another sampler sigma: another stream
    assert gaussian_sampler_sigma(nearby) != gaussian_sampler_sigma(3.0)
    _looks_independent(base, discrete_gaussian(SECRET, stream_id("t/indep"), keys, nearby), 3.0)
    # The Laplace sampler of the same stream and scale shares no word with it.
    laplace = discrete_laplace(SECRET, stream_id("t/indep"), keys, 4.0)
    assert abs(float(np.corrcoef(base, laplace)[0, 1])) <= 6 / math.sqrt(len(keys))


def test_sigmas_that_round_to_the_same_sampler_sigma_give_the_same_draws():
    sigma = 0.1  # not a dyadic rational: rounded up
    rounded = gaussian_sampler_sigma(sigma)
    assert sigma < rounded <= sigma * (1 + 2.0**-31)
    assert gaussian_sampler_sigma(rounded) == rounded
    keys = np.arange(2000)
    assert np.array_equal(
        discrete_gaussian(SECRET, stream_id("t/round"), keys, sigma),
        discrete_gaussian(SECRET, stream_id("t/round"), keys, rounded),
    )
    assert gaussian_sampler_sigma(3.0) == 3.0


def test_no_keys_give_no_draws():
    empty = discrete_gaussian(SECRET, stream_id("t/empty"), np.array([], dtype=np.uint64), 2.0)
    assert empty.dtype == np.int64
    assert empty.size == 0


@pytest.mark.parametrize("sigma", [0.05, 0.8, 3.0, 2e6])
def test_several_secrets_at_once_give_each_secret_s_own_draws(sigma):
    """Row j under secrets[j], all rows advancing together, is exactly the draw of row j
    alone: the same bits whether a release draws its nodes one by one or together."""
    secrets = [bytes([j] * 16) for j in range(5)]
    keys = np.arange(5 * 300, dtype=np.uint64).reshape(5, 300) * np.uint64(7919)
    together = discrete_gaussian(secrets, stream_id("t/many"), keys, sigma)
    assert together.shape == keys.shape and together.dtype == np.int64
    for j, secret in enumerate(secrets):
        assert np.array_equal(together[j], discrete_gaussian(secret, stream_id("t/many"), keys[j], sigma)), j
    empty = discrete_gaussian(secrets[:2], stream_id("t/many"), np.zeros((2, 0), dtype=np.uint64), sigma)
    assert empty.shape == (2, 0)
    # One key given as a bytearray is one key, not a sequence of 16 one-byte keys.
    alone = discrete_gaussian(bytearray(secrets[1]), stream_id("t/many"), keys[1], sigma)
    assert np.array_equal(alone, together[1])


def test_a_tie_reads_its_own_secret_s_next_words():
    """The rare tie continues with the words of the sample's own secret, not the first's."""
    secrets = [SECRET, OTHER_SECRET]
    words_of = _Words(secrets, "t/tie")
    alone = _Words(OTHER_SECRET, "t/tie")
    key = np.uint64(12345)
    tie = _TieWords(words_of, 3, key, owner=1)
    assert [tie[0], tie[1]] == [int(w) for w in alone(np.array([3, 4]), np.array([key, key]))]


def test_several_secrets_need_one_row_of_keys_each():
    with pytest.raises(
        InvalidParameterError, match=r"with 3 secrets, keys must have shape \(3, n\); got \(2, 4\)"
    ):
        discrete_gaussian([SECRET] * 3, stream_id("t/many"), np.zeros((2, 4), dtype=np.uint64), 1.0)


def test_a_tie_on_all_64_bits_is_continued_exactly():
    """The comparison U < p after U's first 64 bits equalled p's (probability 2^-64, never
    met by the draws): p's next digits are compared exactly, digit by digit."""
    # p 2^64 = w + 1/3: p's next digit is floor(2^64 / 3).
    third = (2**64) // 3
    assert _bernoulli_after_tie([third - 1], 1, 3) == (True, 1)
    assert _bernoulli_after_tie([third + 1], 1, 3) == (False, 1)
    # Equal again: 1/3's expansion never ends, so on to the next digit.
    assert _bernoulli_after_tie([third, third - 5], 1, 3) == (True, 2)
    # p 2^64 = w + 1/2: the next digit 2^63 ends the expansion; U >= p on equality.
    assert _bernoulli_after_tie([2**63], 1, 2) == (False, 1)


# ---------------------------------------------------------------------------- variance and quantiles


@pytest.mark.parametrize("sigma", [0.05, 0.3, 0.5, 0.8, 1.0, 2.0, 3.0, 50.0])
def test_variance_is_the_pmf_series(sigma):
    support, pmf = _brute_pmf(sigma)
    brute = math.fsum((support.astype(np.float64) ** 2 * pmf).tolist())
    assert discrete_gaussian_variance(sigma) == pytest.approx(brute, rel=1e-13)
    assert discrete_gaussian_variance(sigma) <= gaussian_sampler_sigma(sigma) ** 2


@pytest.mark.parametrize("sigma", [3.0, 100.0, 2e6, 1e7, 2.0**27, 2.0**50])
def test_variance_is_sigma_squared_for_large_sigma(sigma):
    assert discrete_gaussian_variance(sigma) == pytest.approx(gaussian_sampler_sigma(sigma) ** 2, rel=1e-15)


@pytest.mark.parametrize("sigma", [0.05, 0.3, 0.8, 1.0, 3.0, 50.0, 700.0])
def test_quantile_is_the_smallest_x_of_the_summed_cdf(sigma):
    support, pmf = _brute_pmf(sigma)
    cdf = np.cumsum(pmf)
    for q in QUANTILES:
        expected = int(support[np.searchsorted(cdf, q, side="left")])
        assert discrete_gaussian_quantile(sigma, q) == expected, q


@pytest.mark.parametrize("sigma", [2e4, 2e6, 1e7, 2.0**27, 1e12, 2.0**50])
def test_quantile_is_the_normal_law_s_for_large_sigma(sigma):
    """x_q = ceil(s z_q - 1/2) up to one integer (the continuity-corrected normal law)."""
    s = gaussian_sampler_sigma(sigma)
    for q in QUANTILES:
        x = discrete_gaussian_quantile(sigma, q)
        assert abs(x - (s * NormalDist().inv_cdf(q) - 0.5)) <= 1, q
    assert discrete_gaussian_quantile(sigma, 0.3) == -discrete_gaussian_quantile(sigma, 0.7)


@pytest.mark.parametrize("sigma", [2.0**14, 2e4, 1e5])
def test_euler_maclaurin_tails_are_the_summed_tails(sigma):
    """Above 2^14 the quantiles' tail sums come from Euler-Maclaurin: the term-by-term sums
    agree to the summation's rounding (~sqrt(n) units in the last place of n terms)."""
    tails = _gaussian_tails(sigma)
    for m in (0, 1, int(sigma), int(2 * sigma), int(5 * sigma), int(20 * sigma), int(37 * sigma)):
        assert _tail_euler_maclaurin(sigma, m) == pytest.approx(float(tails[m]), rel=1e-11), m


# ---------------------------------------------------------------------------- refusals

BAD_SIGMAS = [
    0.0,
    -1.0,
    1e-3,
    2.0**50 * 1.01,
    1e300,
    float("nan"),
    float("inf"),
    -float("inf"),
    None,
    "3",
    True,
]


@pytest.mark.parametrize("sigma", BAD_SIGMAS, ids=repr)
def test_a_bad_sigma_is_refused_naming_the_function_range_and_value(sigma):
    message = rf"\[2\^-7, 2\^50\].*Got {re.escape(repr(sigma))} instead"
    with pytest.raises(InvalidParameterError, match="my_release: the discrete Gaussian's sigma .*" + message):
        check_gaussian_sigma(sigma, "my_release")
    with pytest.raises(InvalidParameterError, match="discrete_gaussian: .*" + message):
        discrete_gaussian(SECRET, stream_id("t/bad"), np.arange(3), sigma)
    for function in (gaussian_sampler_sigma, discrete_gaussian_variance):
        with pytest.raises(InvalidParameterError, match=function.__name__):
            function(sigma)
    with pytest.raises(InvalidParameterError, match="discrete_gaussian_quantile"):
        discrete_gaussian_quantile(sigma, 0.5)


@pytest.mark.parametrize("q", [0.0, 1.0, -0.5, 2.0, float("nan")])
def test_a_bad_probability_is_refused(q):
    with pytest.raises(InvalidParameterError, match=r"q must be in \(0, 1\)"):
        discrete_gaussian_quantile(3.0, q)


def test_the_supported_range_ends_are_accepted():
    for sigma in (2.0**-7, 2.0**27):
        check_gaussian_sigma(sigma, "demo")
        assert discrete_gaussian(SECRET, stream_id("t/ends"), np.arange(100), sigma).dtype == np.int64
