"""The one-sided geometric sampler (the quantile's report-noisy-max noise): its law, its
words apart from the two-sided sampler's, and the privacy of report noisy max with it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from native_paths import kernel_path  # noqa: F401 - a fixture, used by pytestmark

from polars_ppdm.kernels.dp_noise import discrete_laplace, one_sided_geometric
from polars_ppdm.kernels.prf import stream_id

pytestmark = pytest.mark.usefixtures("kernel_path")

KEY = bytes(range(16))
N = 200_000


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 40.0])
def test_the_law_is_geometric(scale):
    noise = one_sided_geometric(KEY, stream_id("law"), np.arange(N), scale)
    a = math.exp(-1 / scale)
    assert noise.min() >= 0
    for x in range(4):  # P(X = x) = (1 - a) a^x, each within 5 standard errors
        p = (1 - a) * a**x
        assert abs((noise == x).mean() - p) <= 5 * math.sqrt(p * (1 - p) / N), x
    mean, variance = a / (1 - a), a / (1 - a) ** 2
    assert abs(noise.mean() - mean) <= 5 * math.sqrt(variance / N)


def test_its_words_are_not_the_two_sided_samplers():
    keys = np.arange(50_000)
    one = one_sided_geometric(KEY, stream_id("s"), keys, 3.0)
    two = discrete_laplace(KEY, stream_id("s"), keys, 3.0)
    # Had they shared words, every magnitude would agree (the two-sided is the one-sided
    # magnitude with a sign, re-drawn only on a negative zero).
    assert (np.abs(two) == one).mean() < 0.3
    assert np.array_equal(one, one_sided_geometric(KEY, stream_id("s"), keys, 3.0))


def test_report_noisy_max_with_it_spends_at_most_epsilon():
    """Two candidates, scores moved by the sensitivity in opposite directions on the
    neighbour (the worst case of the survival-ratio argument): the winning frequency of
    candidate 0 changes by at most e^epsilon (5 standard errors of the log-ratio)."""
    epsilon, sensitivity = 1.0, 3
    scale = 2 * sensitivity / epsilon
    n = 400_000
    keys = np.arange(2 * n)
    noise = one_sided_geometric(KEY, stream_id("rnm"), keys, scale).reshape(n, 2)
    before = np.array([10, 10])  # scores as utilities: higher wins; candidate 0 first on a tie
    after = before + np.array([-sensitivity, sensitivity])
    wins = [(np.argmax(noise + s, axis=1) == 0).mean() for s in (before, after)]
    ratio = math.log(wins[0] / wins[1])
    se = math.sqrt((1 - wins[0]) / (wins[0] * n) + (1 - wins[1]) / (wins[1] * n))
    assert ratio <= epsilon + 5 * se, (wins, ratio)
    assert ratio > 0.5 * epsilon  # the bound is nearly reached: the test can fail
