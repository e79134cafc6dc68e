"""Paper 002's baselines (benchmarks/baselines_002.py): RBT, NeNDS and CAMP_CREST do what
their docstrings promise, and refuse bad input."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from _helpers import Z

from polars_ppdm.exceptions import InvalidParameterError

pytest.importorskip("scipy")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from baselines_002 import (
    camp_crest,
    fixed_size_groups,
    mst_groups,
    nends,
    rbt,
    rbt_plan,
    variance_of_difference,
)


def pairwise(a: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(len(a), 1)
    return np.linalg.norm(a[i] - a[j], axis=1)


def blobs(sizes, dims=3, seed=0, spread=0.01, gap=100.0) -> tuple[np.ndarray, np.ndarray]:
    """Tight clusters of the given sizes, far apart; rows shuffled.  Returns (x, cluster)."""
    rng = np.random.default_rng(seed)
    label = np.repeat(np.arange(len(sizes)), sizes)
    centres = rng.uniform(0, gap * len(sizes), (len(sizes), dims))
    x = centres[label] + rng.normal(0, spread, (len(label), dims))
    order = rng.permutation(len(label))
    return x[order], label[order]


@pytest.fixture
def x() -> np.ndarray:
    rng = np.random.default_rng(2012)
    # correlated attributes of different scales, like real data
    return rng.normal(size=(200, 9)) @ rng.normal(size=(9, 9)) + rng.uniform(0, 10, 9)


# ----------------------------------------------------------------------------- RBT


@pytest.mark.parametrize("d", [2, 3, 8, 9])
def test_rbt_is_a_rotation_keeping_every_distance(x, d):
    y = rbt(x[:, :d], 0.5, np.random.default_rng(d))
    assert np.allclose(pairwise(y), pairwise(x[:, :d]), rtol=1e-12, atol=1e-9)
    # y = x Q + b with Q orthogonal (the map is found from the data by least squares)
    ones = np.c_[x[:, :d], np.ones(len(x))]
    coef, *_ = np.linalg.lstsq(ones, y, rcond=None)
    q = coef[:d]
    assert np.allclose(q.T @ q, np.eye(d), atol=1e-9)
    assert np.allclose(ones @ coef, y, atol=1e-9)
    assert not np.allclose(q, np.eye(d), atol=1e-3)  # it did move


@pytest.mark.parametrize("d", [2, 5, 9])
def test_rbt_respects_the_thresholds_on_every_attribute(x, d):
    # odd d: one attribute is rotated twice; its threshold still holds against the original
    rho = np.linspace(0.3, 1.2, d)
    for run in range(5):
        y = rbt(x[:, :d], rho, np.random.default_rng(run))
        assert (variance_of_difference(x[:, :d], y) >= rho - 1e-12).all()


def test_rbt_pairs_every_attribute_once_and_an_odd_one_twice(x):
    steps = rbt_plan(x, 0.5, np.random.default_rng(1))  # 9 attributes: 4 pairs + 1
    assert len(steps) == 5
    first = [k for s in steps[:4] for k in (s.i, s.j)]
    assert sorted([*first, steps[4].i]) == list(range(9))
    assert steps[4].j in first


def test_rbt_draws_uniformly_from_the_exact_security_range():
    # Uncorrelated columns of equal variance: Var(X - Y) / Var(X) = 2 - 2 cos(a) for both
    # attributes, so rho = 2 leaves exactly a in [pi/2, 3 pi/2].
    rng = np.random.default_rng(0)
    z = rng.normal(size=(500, 2))
    z -= z.mean(axis=0)
    z = z @ np.linalg.inv(np.linalg.cholesky(np.cov(z.T, ddof=0))).T  # sample covariance = I
    angles = np.array([rbt_plan(z, 2.0, np.random.default_rng(s))[0].angle for s in range(400)])
    assert ((angles >= math.pi / 2 - 1e-9) & (angles <= 3 * math.pi / 2 + 1e-9)).all()
    below = (angles < math.pi).mean()  # uniform on the range: 1/2 below pi
    assert abs(below - 0.5) <= Z * math.sqrt(0.25 / len(angles)), below


def test_rbt_is_reproducible_from_its_generator(x):
    a = rbt(x, 0.5, np.random.default_rng(7))
    assert np.array_equal(a, rbt(x, 0.5, np.random.default_rng(7)))
    assert not np.allclose(a, rbt(x, 0.5, np.random.default_rng(8)))


def test_rbt_refuses_an_empty_security_range():
    # iid standard normal pair: Var(X - Y) / Var(X) is at most ~4 (at a = pi)
    z = np.random.default_rng(0).normal(size=(300, 2))
    with pytest.raises(InvalidParameterError, match="security range"):
        rbt(z, 5.0, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("data", "thresholds", "match"),
    [
        (np.ones((5, 1)), 0.1, "at least 2 attributes"),
        (np.c_[np.arange(5.0), np.ones(5)], 0.1, "constant attribute"),
        (np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 1.0]]), 0.1, "finite"),
        (np.arange(4.0), 0.1, "2-D"),
        (np.random.default_rng(0).normal(size=(10, 3)), -0.1, "thresholds"),
        (np.random.default_rng(0).normal(size=(10, 3)), [0.1, 0.2], "thresholds"),
        (np.random.default_rng(0).normal(size=(10, 3)), math.inf, "thresholds"),
    ],
)
def test_rbt_refuses_bad_input(data, thresholds, match):
    with pytest.raises(InvalidParameterError, match=match):
        rbt(data, thresholds, np.random.default_rng(0))


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0)])
def test_the_random_baselines_need_a_generator(x, rng):
    with pytest.raises(TypeError, match=r"numpy\.random\.Generator"):
        rbt(x, 0.5, rng)
    with pytest.raises(TypeError, match=r"numpy\.random\.Generator"):
        nends(x, 4, rng)


# ----------------------------------------------------------------------------- NeNDS


@pytest.mark.parametrize("size", [2, 4, 6, 9])
def test_neighbourhoods_partition_the_rows_in_groups_of_size_to_twice_size(x, size):
    groups = fixed_size_groups(x, size)
    assert sorted(np.concatenate(groups).tolist()) == list(range(len(x)))
    assert all(size <= len(g) < 2 * size for g in groups)
    assert sum(len(g) == size for g in groups) >= len(groups) - 1


def test_neighbourhoods_are_nearest_neighbours():
    x, cluster = blobs([6] * 5 + [8])
    for g in fixed_size_groups(x, 6):
        assert len(set(cluster[g])) == 1


@pytest.mark.parametrize("size", [2, 4, 6])
def test_nends_moves_every_row_within_its_neighbourhood(x, size):
    y = nends(x, size, np.random.default_rng(size))
    groups = fixed_size_groups(x, size)
    group_of = np.empty(len(x), dtype=int)
    for k, g in enumerate(groups):
        group_of[g] = k
    # every released row is a whole original row (rows of x are distinct), never its own,
    # always one of its neighbourhood
    match = (y[:, None, :] == x[None, :, :]).all(axis=2)
    assert (match.sum(axis=1) == 1).all()
    source = match.argmax(axis=1)
    assert (source != np.arange(len(x))).all()
    assert (group_of[source] == group_of).all()
    # so each neighbourhood keeps its multiset of rows (a permutation of them)
    assert np.array_equal(np.sort(source), np.arange(len(x)))


def test_nends_per_attribute_moves_every_value_within_its_neighbourhood(x):
    y = nends(x, 4, np.random.default_rng(3), per_attribute=True)
    for g in fixed_size_groups(x, 4):
        for k in range(x.shape[1]):
            assert np.array_equal(np.sort(y[g, k]), np.sort(x[g, k]))  # same multiset
            assert (y[g, k] != x[g, k]).all()  # values distinct: no value stays
    # rows are mixed: most released rows are no original row
    assert (y[:, None, :] == x[None, :, :]).all(axis=2).any(axis=1).mean() < 0.5


def test_nends_keeps_every_row_in_its_cluster():
    x, cluster = blobs([4] * 6)
    y = nends(x, 4, np.random.default_rng(0))
    nearest = np.linalg.norm(y[:, None, :] - x[None, :, :], axis=2).argmin(axis=1)
    assert (cluster[nearest] == cluster).all()
    assert (nearest != np.arange(len(x))).all()


def test_nends_is_reproducible_from_its_generator(x):
    assert np.array_equal(nends(x, 5, np.random.default_rng(1)), nends(x, 5, np.random.default_rng(1)))
    assert not np.array_equal(nends(x, 5, np.random.default_rng(1)), nends(x, 5, np.random.default_rng(2)))


@pytest.mark.parametrize("size", [1, 0, 201, 2.5, True, "4"])
def test_nends_refuses_a_bad_neighbourhood_size(x, size):
    with pytest.raises(InvalidParameterError, match="'size' parameter of nends"):
        nends(x, size, np.random.default_rng(0))


# ----------------------------------------------------------------------------- CAMP_CREST


@pytest.mark.parametrize("b", [2, 5, 9])
def test_camp_crest_releases_group_means_of_at_least_b_rows(x, b):
    y = camp_crest(x, b)
    groups = mst_groups(x, b)
    assert sorted(np.concatenate(groups).tolist()) == list(range(len(x)))
    assert all(b <= len(g) < 2 * b for g in groups)
    for g in groups:
        assert np.allclose(y[g], x[g].mean(axis=0), rtol=0, atol=1e-12)
    # at least b rows share every released row; the data's mean is kept
    _, counts = np.unique(y, axis=0, return_counts=True)
    assert counts.min() >= b
    assert np.allclose(y.mean(axis=0), x.mean(axis=0), atol=1e-12)


def test_camp_crest_groups_are_cut_from_the_spanning_tree_between_clusters():
    # clusters of 5, 7, 13 and 5 rows with b = 5: the long tree edges between clusters
    # are cut first, so no group straddles two clusters; the clusters under 2b stay whole
    # and the cluster of 13 is split within itself
    x, cluster = blobs([5, 7, 13, 5])
    groups = mst_groups(x, 5)
    assert all(len(set(cluster[g])) == 1 for g in groups)
    per_cluster = sorted((int(cluster[g[0]]), len(g)) for g in groups)
    assert per_cluster[:2] == [(0, 5), (1, 7)] and per_cluster[-1] == (3, 5)
    assert len(per_cluster) == 5 and all(5 <= n <= 9 for _, n in per_cluster[2:4])


def test_camp_crest_handles_duplicate_rows():
    x = np.repeat(np.arange(12.0)[:, None] * [1.0, 2.0], 2, axis=0)  # every row twice
    groups = mst_groups(x, 3)
    assert sorted(np.concatenate(groups).tolist()) == list(range(24))
    assert all(3 <= len(g) < 6 for g in groups)


def test_camp_crest_is_deterministic(x):
    assert np.array_equal(camp_crest(x, 5), camp_crest(x, 5))


@pytest.mark.parametrize("b", [1, 201, 3.0])
def test_camp_crest_refuses_a_bad_group_size(x, b):
    with pytest.raises(InvalidParameterError, match="'size' parameter of camp_crest"):
        camp_crest(x, b)
