"""Attack review 74: a quadtree leaf's centroid noise is keyed by the leaf's own cell.

``leaf_centroids`` keyed each leaf's noise by a Z-order code recomputed from the leaf's
float centre.  Over bounds whose cells the floats cannot tell apart (x in (0, 1e-323),
max_height=2) 12 leaves got 6 codes: one noise draw over different true sums, whose
difference was then exact.  The leaves now carry their codes (``Leaves.code``), and such
bounds are refused before any data is read.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.dp.kmeans import check_kmeans
from polars_ppdm.dp.quadtree import check_quadtree
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels import quadtree as qt
from polars_ppdm.kernels.prf import stream_id

SECRET = bytes(range(16))
TINY = [(0.0, 1e-323), (0.0, 1.0)]  # x's cells are narrower than a float can tell apart


def _centroid_keys(monkeypatch, points, leaves, lows, highs, label="t"):
    """The keys of every centroid noise draw of ``leaf_centroids``, per (level, axis)."""
    calls = {}
    draw = qt.discrete_laplace

    def spy(secret, stream, keys, scale):
        calls[stream] = np.asarray(keys).copy()
        return draw(secret, stream, keys, scale)

    monkeypatch.setattr(qt, "discrete_laplace", spy)
    qt.leaf_centroids(points, leaves, lows, highs, 1.0, 1, SECRET, label)
    d = points.shape[1]
    return {
        (int(level), axis): calls[stream_id(f"{label}/centroid/{int(level)}/{axis}")]
        for level in np.unique(leaves.level)
        for axis in range(d)
    }


def _leaves(points, lows, highs, max_height, threshold=0.0):
    return qt.build_quadtree(
        points,
        lows,
        highs,
        max_height=max_height,
        threshold=threshold,
        level_scale=1.0,
        leaf_scale=1.0,
        secret=SECRET,
        label="t",
        split_levels=max_height,  # every node splits: all 2^(d h) cells are leaves
    )


def test_leaves_too_fine_for_the_floats_get_distinct_centroid_keys(monkeypatch):
    """The reviewer's box, at the kernel (the front-ends now refuse it): every leaf its
    own key, where the codes recomputed from the float centres collide."""
    rng = np.random.default_rng(1)
    points = np.column_stack([np.zeros(400), rng.random(400)])
    lows, highs = np.array([b[0] for b in TINY]), np.array([b[1] for b in TINY])
    assert qt.resolvable_height(lows, highs) == 0  # the guard refuses max_height >= 1
    leaves = _leaves(points, lows, highs, max_height=2)
    assert len(leaves.level) == 16 and set(leaves.level.tolist()) == {2}
    # The old keying: the centres' recomputed codes collide (x's 4 cells share 2 codes).
    recomputed = qt.morton_codes(leaves.centre, lows, highs, 2)
    assert len(set(recomputed.tolist())) < len(recomputed)
    keys = _centroid_keys(monkeypatch, points, leaves, lows, highs)
    for (level, axis), got in keys.items():
        assert len(set(got.tolist())) == len(got) == 16, (level, axis, got)
        np.testing.assert_array_equal(got, leaves.code[leaves.level == level].astype(np.uint64))


def test_leaf_codes_are_the_cells_of_their_boxes():
    pts = np.random.default_rng(0).random((4000, 2))
    leaves = _leaves(pts, np.zeros(2), np.ones(2), max_height=3)
    for level in np.unique(leaves.level).tolist():
        at = leaves.level == level
        index = qt.cell_index(leaves.code[at], level, 2)
        np.testing.assert_array_equal(leaves.low[at], index / (1 << level))


@pytest.mark.parametrize(
    ("lows", "highs", "height"),
    [
        ([-5.0, -5.0], [5.0, 5.0], 6),
        ([0.0, 0.0], [1.0, 1.0], 31),
        ([0.0], [1.0], 48),  # the deepest resolvable height of (0, 1)
        ([1e15, -3.0], [1e15 + 4096.0, 7.0], 8),
        ([-1e100, 0.0, 2.0], [1e100, 1e-100, 3.0], 20),
    ],
)
def test_normal_bounds_keep_the_recomputed_keys(monkeypatch, lows, highs, height):
    """Where floats tell the cells apart the leaf's code is the one its centre gives:
    the keys (hence the released bits) are what they were, and distinct."""
    lows, highs = np.array(lows), np.array(highs)
    assert qt.resolvable_height(lows, highs) >= height
    d = len(lows)
    rng = np.random.default_rng(3)
    # A sparse tree down to `height`: the cells of a few points split, the rest are leaves.
    points = lows + rng.random((64, d)) * (highs - lows)
    leaves = qt.build_quadtree(
        points,
        lows,
        highs,
        max_height=height,
        threshold=0.5,
        level_scale=1e-9,
        leaf_scale=1.0,
        secret=SECRET,
        label="t",
    )
    assert int(leaves.level.max()) == height
    keys = _centroid_keys(monkeypatch, points, leaves, lows, highs)
    for (level, _axis), got in keys.items():
        at = leaves.level == level
        assert len(set(got.tolist())) == len(got)
        recomputed = qt.morton_codes(leaves.centre[at], lows, highs, level)
        np.testing.assert_array_equal(got, recomputed.astype(np.uint64))


def test_resolvable_height_is_where_float_centres_find_their_cells():
    """At the resolvable height every cell's float centre recomputes to the cell (its
    first, last and sampled cells, over many kinds of bounds); 4 levels deeper the
    floats collapse cells of (0, 1) in 1-D."""
    rng = np.random.default_rng(0)
    for _ in range(400):
        low = float(rng.normal() * 10.0 ** rng.integers(-30, 30))
        high = low + float(abs(rng.normal()) * 10.0 ** rng.integers(-30, 30))
        if not low < high:
            continue
        lows, highs = np.array([low]), np.array([high])
        level = qt.resolvable_height(lows, highs)
        side = 1 << level
        cells = np.unique(
            np.r_[np.arange(min(side, 32)), side - 1 - np.arange(min(side, 32)), rng.integers(0, side, 64)]
        )
        index = cells[:, None]
        width = (highs - lows) / side
        box_low = lows + index * width
        box_high = np.where(index == side - 1, highs, lows + (index + 1) * width)
        np.testing.assert_array_equal(qt.morton_codes((box_low + box_high) / 2, lows, highs, level), cells)
    # Past it the floats do collapse cells: (0, 1) in 1-D resolves 48 levels; at 53 the
    # last cells' centres recompute to other cells.
    lows, highs = np.zeros(1), np.ones(1)
    assert qt.resolvable_height(lows, highs) == 48
    side = 1 << 53
    cells = side - 1 - np.arange(64)
    index = cells[:, None]
    box_low = lows + index * (1.0 / side)
    box_high = np.where(index == side - 1, highs, lows + (index + 1) * (1.0 / side))
    assert not np.array_equal(qt.morton_codes((box_low + box_high) / 2, lows, highs, 53), cells)


def _frame_that_must_not_be_read():
    # A null is refused when the points are read: the bounds' refusal comes first.
    return pl.DataFrame({"x": [None, 0.0], "y": [0.5, 0.25]}, schema={"x": pl.Float64, "y": pl.Float64})


@pytest.mark.parametrize("method", ["quadtree", "quadtree_refined"])
def test_dp_kmeans_refuses_cells_the_floats_cannot_tell_apart(method):
    accountant = ppdm.BudgetAccountant(10.0)
    with pytest.raises(
        InvalidParameterError,
        match=r"'bounds' and 'max_height' parameters of dp_kmeans: the 2\^2 cells per axis of bounds "
        r"\(0\.0, 1e-323\) for column 'x' are narrower than a float can tell apart .* allow max_height in "
        r"\[0, 0\]\. Got max_height=2 instead",
    ):
        ppdm.dp_kmeans(
            _frame_that_must_not_be_read(),
            ["x", "y"],
            k=4,
            epsilon=1.0,
            bounds=TINY,
            method=method,
            max_height=2,
            threshold=0,
            secret=ppdm.Secret.for_tests(2),
            accountant=accountant,
        )
    assert accountant.spent == 0


@pytest.mark.parametrize(
    ("bounds", "max_height", "got"),
    [
        (TINY, 1, "max_height=1"),
        (TINY, None, "the least default height 1"),  # the default height is at least 1
        ([(1e15, 1e15 + 1.0), (0.0, 1.0)], 31, "max_height=31"),  # 2^-31 wide cells near 1e15
    ],
)
def test_dp_quadtree_refuses_cells_the_floats_cannot_tell_apart(bounds, max_height, got):
    accountant = ppdm.BudgetAccountant(10.0)
    with pytest.raises(
        InvalidParameterError,
        match=rf"'bounds' and 'max_height' parameters of dp_quadtree: .* narrower than a float can tell apart.*"
        rf"Got {got} instead",
    ):
        ppdm.dp_quadtree(
            _frame_that_must_not_be_read(),
            ["x", "y"],
            bounds=bounds,
            epsilon=1.0,
            max_height=max_height,
            threshold=0,
            secret=ppdm.Secret.for_tests(2),
            accountant=accountant,
        )
    assert accountant.spent == 0


def test_bounds_whose_cell_centres_overflow_are_refused():
    with pytest.raises(
        InvalidParameterError, match=r"'bounds' parameter of dp_quadtree \(column 'x'\) must lie within"
    ):
        ppdm.dp_quadtree(
            _frame_that_must_not_be_read(),
            ["x", "y"],
            bounds=[(1e308, 1.7e308), (0.0, 1.0)],
            epsilon=1.0,
            max_height=0,
            secret=ppdm.Secret.for_tests(2),
        )


def test_the_default_height_stops_at_what_the_floats_resolve():
    """Without max_height the paper's ln(N) / d is capped at the resolvable height: 1-D
    bounds (1e15, 1e15 + 2^8) resolve 7 levels (cells of 16 float steps of 1/8), and
    N = 10^9 would ask for 21."""
    df = pl.DataFrame({"x": np.linspace(1e15, 1e15 + 256, 500)})
    lows, highs = np.array([1e15]), np.array([1e15 + 256.0])
    assert qt.resolvable_height(lows, highs) == 7
    leaves = ppdm.dp_quadtree(
        df,
        ["x"],
        bounds=(1e15, 1e15 + 256.0),
        epsilon=1.0,
        n=1e9,
        threshold=0,
        secret=ppdm.Secret.for_tests(2),
    )
    assert leaves["level"].max() == 7
    assert leaves["x_centre"].n_unique() == leaves.height


def test_the_spark_and_pipeline_checks_refuse_too():
    """Spark's dp_quadtree / dp_kmeans and a pipeline's plan validate with these checks."""
    schema = pl.Schema({"x": pl.Float64, "y": pl.Float64})
    common = dict(
        bounds=TINY,
        epsilon=1.0,
        gamma=0.3,
        max_height=2,
        threshold=0.0,
        n=None,
        key=None,
        max_contributions=1,
    )
    with pytest.raises(InvalidParameterError, match="narrower than a float can tell apart"):
        check_quadtree(schema, ["x", "y"], **common)
    with pytest.raises(InvalidParameterError, match="narrower than a float can tell apart"):
        check_kmeans(schema, ["x", "y"], k=2, method="quadtree_refined", iterations=5, **common)
    # The grid and Lloyd methods build no tree: their bounds are not checked for it.
    check_kmeans(schema, ["x", "y"], k=2, method="lloyd", iterations=5, **common)


def _digest(frame: pl.DataFrame) -> str:
    h = hashlib.sha256()
    for c in frame.columns:
        h.update(c.encode())
        h.update(frame[c].to_numpy().tobytes())
    return h.hexdigest()[:16]


# Computed with the code before this fix (b715615): the released bits are unchanged.
PINNED = {
    ("quadtree", None): "8f159d96c6fc34cc",
    ("quadtree", 3): "fe935f996338d45c",
    ("quadtree", 6): "93f924210490db0a",
    ("quadtree_refined", None): "f7e59e03fccaf7af",
    ("quadtree_refined", 3): "aa51aea2edd304ed",
    ("quadtree_refined", 6): "ce84702582944ba3",
}


@pytest.mark.parametrize(("method", "max_height"), list(PINNED))
def test_normal_releases_keep_their_bits(method, max_height):
    rng = np.random.default_rng(7)
    xy = np.concatenate([rng.normal(-2, 0.5, (600, 2)), rng.normal(2, 0.7, (600, 2))])
    df = pl.DataFrame({"x": xy[:, 0], "y": xy[:, 1]})
    fit = ppdm.dp_kmeans(
        df,
        ["x", "y"],
        k=3,
        epsilon=1.0,
        bounds=[(-5, 5), (-5, 5)],
        method=method,
        max_height=max_height,
        secret=ppdm.Secret.for_tests(5),
    )
    assert _digest(fit.buckets) == PINNED[method, max_height]


def test_normal_quadtree_keeps_its_bits():
    rng = np.random.default_rng(7)
    xy = np.concatenate([rng.normal(-2, 0.5, (600, 2)), rng.normal(2, 0.7, (600, 2))])
    df = pl.DataFrame({"x": xy[:, 0], "y": xy[:, 1]})
    leaves = ppdm.dp_quadtree(
        df, ["x", "y"], bounds=[(-5, 5), (-5, 5)], epsilon=1.0, max_height=4, secret=ppdm.Secret.for_tests(5)
    )
    assert _digest(leaves) == "d29a914b24d81e3e"


def test_a_refined_tree_deeper_than_its_codes_is_refused_not_cut_down():
    """quadtree_refined took a max_height beyond d x max_height <= 62 bits and cut it to
    62 // d silently; the quadtree method refused it."""
    frame = pl.DataFrame({"x": [0.1, 0.5], "y": [0.2, 0.9]})
    with pytest.raises(
        InvalidParameterError, match=r"'max_height' parameter of dp_kmeans must be an int in \[0, 31\]"
    ):
        ppdm.dp_kmeans(
            frame, ["x", "y"], k=2, bounds={"x": (0, 1), "y": (0, 1)}, epsilon=1.0, method="quadtree_refined",
            max_height=40, secret=ppdm.Secret.for_tests(1),
        )  # fmt: skip
