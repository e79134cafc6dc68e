"""The binary tree mechanism for continual release: node layout, node sums, sensitivity,
Honaker's estimator against a dense least-squares oracle, and the running total's RMSE
over a year of simulated nights against its exact variance."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _helpers import Z

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import binary_tree as bt
from polars_ppdm.kernels.prf import stream_id

HORIZONS = [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 365]
SECRET = bytes(range(16))


def _all_nodes(horizon: int) -> list[tuple[int, int, int, int]]:
    """Every node of the tree by definition: (level, index, first, last)."""
    nodes = []
    for level in range(bt.levels(horizon)):
        index = 0
        while index << level < horizon:
            nodes.append((level, index, index << level, min((index + 1) << level, horizon) - 1))
            index += 1
    return nodes


def _design(horizon: int, through: int) -> np.ndarray:
    """The 0/1 matrix of the complete nodes (rows) over the periods 0..through."""
    nodes = bt.complete_nodes(horizon, through)
    a = np.zeros((len(nodes.level), through + 1))
    for row, (first, last) in enumerate(zip(nodes.first, nodes.last, strict=True)):
        a[row, first : last + 1] = 1.0
    return a


def _small_cases() -> list[tuple[int, int]]:
    return [(t, p) for t in (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 33) for p in range(t)]


# -- layout ---------------------------------------------------------------------------


def test_levels():
    assert [bt.levels(t) for t in (1, 2, 3, 4, 5, 7, 8, 9, 365, 512, 513)] == [
        1,
        2,
        3,
        3,
        4,
        4,
        4,
        5,
        10,
        10,
        11,
    ]
    for horizon in HORIZONS:
        top = bt.levels(horizon) - 1
        assert 2**top >= horizon and (top == 0 or 2 ** (top - 1) < horizon)


@pytest.mark.parametrize("horizon", HORIZONS)
def test_complete_nodes_are_those_whose_last_period_is_over(horizon):
    every = _all_nodes(horizon)
    assert sum(1 for node in every if node[0] == bt.levels(horizon) - 1) == 1  # one root on top
    for through in sorted({0, 1, horizon // 2, horizon - 2, horizon - 1} & set(range(horizon))):
        nodes = bt.complete_nodes(horizon, through)
        got = list(zip(*(a.tolist() for a in nodes), strict=True))
        assert got == [node for node in every if node[3] <= through]  # ordered by level, index
        assert all(a.dtype == np.int64 for a in nodes)
        # Each level's complete nodes tile a prefix of [0, through] without overlap.
        for level in range(bt.levels(horizon)):
            mine = nodes.level == level
            cover = np.concatenate(
                [np.arange(f, t + 1) for f, t in zip(nodes.first[mine], nodes.last[mine], strict=True)]
                or [[]]
            )
            assert cover.tolist() == list(range(len(cover)))
        assert (nodes.level == 0).sum() == through + 1


def test_complete_nodes_of_a_week():
    nodes = bt.complete_nodes(7, 6)
    pairs = list(zip(nodes.level.tolist(), nodes.first.tolist(), nodes.last.tolist(), strict=True))
    assert pairs[7:] == [(1, 0, 1), (1, 2, 3), (1, 4, 5), (1, 6, 6), (2, 0, 3), (2, 4, 6), (3, 0, 6)]
    assert len(bt.complete_nodes(7, 5).level) == 6 + 3 + 1  # neither [6,6] nor [4,6] nor the root
    assert bt.complete_nodes(1, 0).level.tolist() == [0]
    assert bt.complete_nodes(2, 0).level.tolist() == [0]
    assert bt.complete_nodes(2, 1).level.tolist() == [0, 0, 1]


def test_node_ids_and_keys_are_stable_and_distinct():
    nodes = bt.complete_nodes(365, 364)
    ids = bt.node_ids(nodes.level, nodes.index)
    assert ids.dtype == np.uint64 and len(np.unique(ids)) == len(ids) and int(ids.max()) < 2**32
    assert ids.tolist()[:3] == [0, 64, 128] and int(ids[-1]) == 9  # level 9, index 0
    keys = bt.noise_keys(np.arange(3), ids)
    assert keys.shape == (3, len(ids)) and len(np.unique(keys)) == keys.size
    assert int(keys[2, 5]) == 2 * 2**32 + int(ids[5])
    with pytest.raises(InvalidParameterError, match="group numbers"):
        bt.noise_keys(np.array([2**32]), ids)


# -- node sums ------------------------------------------------------------------------


@pytest.mark.parametrize("horizon", [1, 2, 7, 365])
def test_node_sums_equal_the_sum_of_their_periods(horizon):
    rng = np.random.default_rng(horizon)
    counts = rng.integers(0, 20, size=(5, horizon))
    for through in {0, horizon // 3, horizon - 1}:
        nodes = bt.complete_nodes(horizon, through)
        sums = bt.node_sums(counts[:, : through + 1], nodes.level, nodes.index, horizon=horizon)
        expected = np.array(
            [[row[f : t + 1].sum() for f, t in zip(nodes.first, nodes.last, strict=True)] for row in counts]
        )
        assert sums.dtype == np.int64 and np.array_equal(sums, expected)
        one = bt.node_sums(counts[0, : through + 1], nodes.level, nodes.index, horizon=horizon)
        assert np.array_equal(one, expected[0])


def test_node_sums_refuse_a_node_past_the_counts():
    with pytest.raises(InvalidParameterError, match="periods given"):
        bt.node_sums(np.ones((1, 3)), np.array([1]), np.array([1]), horizon=7)  # [2, 3]


# -- sensitivity ----------------------------------------------------------------------


@pytest.mark.parametrize(("horizon", "k"), [(5, 1), (5, 2), (7, 2), (8, 3)])
def test_sensitivities_by_brute_force(horizon, k):
    """Every placement of k events over 2 groups and all periods: the largest L2 change of
    the tree's nodes is k sqrt(L), of the period counts k, of the running totals
    k sqrt(T) -- as the docstring (and tree_sigma, running_total_variances) say."""
    nodes = bt.complete_nodes(horizon, horizon - 1)
    cells = list(itertools.product(range(2), range(horizon)))
    tree = leaves = totals = 0.0
    for events in itertools.combinations_with_replacement(cells, k):
        counts = np.zeros((2, horizon), dtype=np.int64)
        for group, period in events:
            counts[group, period] += 1
        tree = max(tree, float((bt.node_sums(counts, nodes.level, nodes.index) ** 2).sum()))
        leaves = max(leaves, float((counts**2).sum()))
        totals = max(totals, float((np.cumsum(counts, axis=1) ** 2).sum()))
    assert tree == k * k * bt.levels(horizon)
    assert leaves == k * k and totals == k * k * horizon
    rho = 0.3
    assert math.isclose(tree / (2 * bt.tree_sigma(rho, horizon, k) ** 2), rho)


def test_running_total_variances_formulas():
    rho, horizon, k = 0.2, 365, 2
    for through in (0, 29, 363, 364):
        v = bt.running_total_variances(rho, horizon, through, k)
        assert math.isclose(v["leaves"], (through + 1) * k * k / (2 * rho))
        assert math.isclose(v["totals"], horizon * k * k / (2 * rho))
        sigma = bt.tree_sigma(rho, horizon, k)
        assert math.isclose(v["tree"], sigma**2 * bt.tree_variance(horizon, through, 4.0)[1][through] / 16)
        assert math.isclose(
            v["tree_dyadic"], sigma**2 * bt.dyadic_variance(horizon, through, 4.0)[through] / 16
        )
    # The square-root factorisation: C C is the lower-triangular all-ones matrix, its
    # largest column norm is column 0's, and the variance is sigma^2 ||row_t of C||^2.
    n = 40
    c = bt._sqrt_factor(n)
    big_c = np.array([[c[i - j] if i >= j else 0.0 for j in range(n)] for i in range(n)])
    assert np.allclose(big_c @ big_c, np.tril(np.ones((n, n))))
    v = bt.running_total_variances(0.5, n, 17)
    sigma2 = (big_c**2).sum(axis=0).max() / (2 * 0.5)
    assert math.isclose(v["sqrt_factorisation"], sigma2 * (big_c[17] ** 2).sum())


# -- the estimator --------------------------------------------------------------------


@pytest.mark.parametrize(("horizon", "through"), _small_cases())
def test_estimator_is_the_least_squares_estimate(horizon, through):
    a = _design(horizon, through)
    rng = np.random.default_rng(horizon * 100 + through)
    noisy = rng.normal(0, 5, size=(4, a.shape[0])) + rng.integers(0, 50, size=(4, a.shape[0]))
    gls = np.linalg.lstsq(a, noisy.T, rcond=None)[0].T
    periods, totals = bt.tree_estimate(noisy, horizon, through)
    assert np.allclose(periods, gls, atol=1e-9)
    assert np.allclose(totals, np.cumsum(periods, axis=1), atol=1e-9)  # consistent
    one_periods, _ = bt.tree_estimate(noisy[1], horizon, through)
    assert np.allclose(one_periods, periods[1])


@pytest.mark.parametrize(("horizon", "through"), _small_cases())
def test_estimator_is_exact_without_noise(horizon, through):
    """Unbiased: a linear estimator that returns x for every noiseless A x."""
    rng = np.random.default_rng(through)
    counts = rng.integers(0, 1000, size=(3, through + 1))
    nodes = bt.complete_nodes(horizon, through)
    periods, totals = bt.tree_estimate(
        bt.node_sums(counts, nodes.level, nodes.index, horizon=horizon), horizon, through
    )
    assert np.allclose(periods, counts) and np.allclose(totals, np.cumsum(counts, axis=1))


@pytest.mark.parametrize(("horizon", "through"), _small_cases())
def test_variance_equals_the_dense_least_squares_covariance(horizon, through):
    a = _design(horizon, through)
    covariance = 2.5**2 * np.linalg.inv(a.T @ a)
    prefix = np.tril(np.ones((through + 1, through + 1)))
    periods, totals = bt.tree_variance(horizon, through, 2.5)
    assert np.allclose(periods, np.diag(covariance), rtol=1e-10)
    assert np.allclose(totals, np.diag(prefix @ covariance @ prefix.T), rtol=1e-10)


def test_variance_known_values():
    # Honaker's three-level tree: the root's optimal estimate has variance 4/7 sigma^2.
    _, totals = bt.tree_variance(4, 3, 2.0)
    assert math.isclose(totals[3], 4 * 4 / 7)
    # One leaf only: sigma^2, the discrete Gaussian's exact variance.
    periods, totals = bt.tree_variance(1, 0, 0.5)
    assert periods[0] == totals[0] == bt.node_variance(0.5) < 0.25


@pytest.mark.parametrize("horizon", [7, 64, 365])
def test_estimator_beats_the_dyadic_sum(horizon):
    for through in {horizon // 2, horizon - 2, horizon - 1}:
        optimal = bt.tree_variance(horizon, through, 3.0)[1]
        plain = bt.dyadic_variance(horizon, through, 3.0)
        assert (optimal <= plain * (1 + 1e-12)).all()
        several = plain > 9.0  # more than one node summed
        assert (optimal[several] < plain[several]).all()
    # The dyadic sum against its oracle: the noisy nodes of t + 1's binary digits.
    nodes = bt.complete_nodes(horizon, horizon - 2)
    noisy = np.arange(len(nodes.level), dtype=np.float64)[None, :] ** 1.5
    position = {(int(lv), int(i)): c for c, (lv, i) in enumerate(zip(nodes.level, nodes.index, strict=True))}
    expected = [
        sum(noisy[0, position[b, ((t + 1) >> b) - 1]] for b in range(bt.levels(horizon)) if (t + 1) >> b & 1)
        for t in range(horizon - 1)
    ]
    assert np.allclose(bt.dyadic_totals(noisy, horizon, horizon - 2)[0], expected)


def test_large_horizon_is_fast():
    horizon = 4000
    nodes = bt.complete_nodes(horizon, 2999)
    noisy = np.random.default_rng(0).normal(size=(200, len(nodes.level)))
    periods, _ = bt.tree_estimate(noisy, horizon, 2999)
    assert periods.shape == (200, 3000)
    _, variance = bt.tree_variance(horizon, 2999, 1.5)
    assert variance.shape == (3000,) and (variance > 0).all()


def test_refusals():
    with pytest.raises(InvalidParameterError, match="horizon"):
        bt.complete_nodes(0, 0)
    with pytest.raises(InvalidParameterError, match="through"):
        bt.complete_nodes(7, 7)
    with pytest.raises(InvalidParameterError, match="rho"):
        bt.tree_sigma(0.0, 7)
    with pytest.raises(InvalidParameterError, match="complete nodes"):
        bt.tree_estimate(np.zeros((2, 5)), 7, 3)


def test_nodes_under_their_own_keys_are_each_node_s_own_noise():
    """One key per node, drawn together: node j's noise is node_noise under key j alone."""
    nodes = bt.complete_nodes(16, 10)
    keys = [bytes([j + 1] * 16) for j in range(len(nodes.level))]
    stream = stream_id("test/binary_tree/per-node")
    together = bt.node_noise(keys, stream, nodes.level, nodes.index, 2.5, groups=3)
    assert together.shape == (3, len(nodes.level)) and together.dtype == np.int64
    for j, key in enumerate(keys):
        at = slice(j, j + 1)
        alone = bt.node_noise(key, stream, nodes.level[at], nodes.index[at], 2.5, groups=3)
        assert np.array_equal(together[:, j], alone[:, 0]), j
    with pytest.raises(InvalidParameterError, match="2 secrets for 19 nodes; give one per node"):
        bt.node_noise(keys[:2], stream, nodes.level, nodes.index, 2.5, groups=3)


# -- the release over a year ----------------------------------------------------------


@pytest.mark.slow
def test_running_total_rmse_over_a_year_of_nights():
    """A continual release over a generated year (365 nights) of events: the running total
    published on nights 1, 30 and 365 has the RMSE tree_variance says, within Z
    standard errors of the RMSE estimate, and no bias."""
    horizon, groups, rho = 365, 4000, 0.5
    rng = np.random.default_rng(365)
    events = 400_000
    group = rng.integers(0, groups, events)
    period = np.minimum(rng.exponential(120.0, events).astype(np.int64), horizon - 1)
    counts = np.bincount(group * horizon + period, minlength=groups * horizon).reshape(groups, horizon)
    sigma = bt.tree_sigma(rho, horizon)
    stream = stream_id("test/binary_tree/year")
    last = bt.complete_nodes(horizon, horizon - 1)
    noise = bt.node_noise(SECRET, stream, last.level, last.index, sigma, groups=groups)
    position = {(int(lv), int(i)): c for c, (lv, i) in enumerate(zip(last.level, last.index, strict=True))}
    published = np.full((groups, horizon), np.nan)
    # The nights checked below, each published as on its night (the nodes complete so far
    # and their noise; a night's release reads no other night's): 17 s for all 365.
    for through in (0, 29, 200, 364):
        nodes = bt.complete_nodes(horizon, through)
        columns = np.array(
            [position[lv, i] for lv, i in zip(nodes.level.tolist(), nodes.index.tolist(), strict=True)]
        )
        if through in (0, 200):  # keyed: drawing a night's nodes alone gives the same noise
            some = np.array([0, 7, groups - 1])
            alone = bt.node_noise(SECRET, stream, nodes.level, nodes.index, sigma, groups=some)
            assert np.array_equal(alone, noise[np.ix_(some, columns)])
        noisy = bt.node_sums(counts[:, : through + 1], nodes.level, nodes.index, horizon=horizon)
        _, totals = bt.tree_estimate(noisy + noise[:, columns], horizon, through)
        published[:, through] = totals[:, through]
    error = published - np.cumsum(counts, axis=1)
    for night in (1, 30, 365):
        through = night - 1
        theory = math.sqrt(bt.tree_variance(horizon, through, sigma)[1][through])
        e = error[:, through]
        n = len(e)
        # RMSE = sqrt(m2) with m2 = mean(e^2) over n independent groups (each its own
        # keys).  Var(m2) = (E e^4 - (E e^2)^2) / n, estimated by the sample moments; by
        # the delta method, SE(sqrt(m2)) = SE(m2) / (2 sqrt(m2)).
        m2, m4 = float(np.mean(e**2)), float(np.mean(e**4))
        se = math.sqrt((m4 - m2 * m2) / n) / (2 * math.sqrt(m2))
        assert abs(math.sqrt(m2) - theory) < Z * se, (night, math.sqrt(m2), theory, se)
        assert abs(float(e.mean())) < Z * theory / math.sqrt(n), night
