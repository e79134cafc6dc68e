"""The differentially private quadtree of DPQT k-means, on Polars frames (paper 004).

References
----------
Zhang, Cheng, DPQT k-means (paper 004).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from polars_ppdm._frame import schema_of
from polars_ppdm._validation import check_columns, check_numeric, check_real, is_count, is_real
from polars_ppdm.dp._common import (
    charge,
    check_accountant,
    check_bounds,
    check_max_contributions,
    check_public_n,
    check_unit_key,
    private_points,
    refuse_data_bounds,
    release_secret,
)
from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock, check_epsilon
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import check_integer_scale, discrete_laplace
from polars_ppdm.kernels.prf import stream_id
from polars_ppdm.kernels.quadtree import (
    CELL_STEPS,
    CODE_BITS,
    CellCounts,
    Leaves,
    grow_quadtree,
    point_counts,
    resolvable_height,
)
from polars_ppdm.kernels.release_key import query_label, release_key, table_digest
from polars_ppdm.secret import SecretLike

__all__ = [
    "QuadtreeRequest",
    "TreePlan",
    "check_code_bits",
    "check_quadtree",
    "check_tree_bounds",
    "check_tree_noise",
    "check_tree_settings",
    "dp_quadtree",
    "leaves_frame",
    "plan_tree",
    "quadtree_leaves",
    "release_quadtree",
]

_FUNC = "dp_quadtree"
# Share of epsilon that buys a noisy N when the caller gives none (the defaults of the
# tree's height and threshold depend on N).
N_SHARE = 0.05


@dataclass(frozen=True)
class TreePlan:
    """How a tree spends its budget: N, height, threshold and the epsilons."""

    n: float
    max_height: int
    threshold: float
    epsilon_n: float
    epsilon_levels: float
    epsilon_leaves: float


def _check_gamma(gamma: object, func: str) -> float:
    return check_real(
        "gamma",
        gamma,
        func,
        low=0,
        high=1,
        open_low=True,
        open_high=True,
        why=" (the tree's share of epsilon)",
    )


def noisy_total(rows: int, epsilon: float, contributions: int, secret: bytes, label: str) -> float:
    """N (``rows``, after contribution bounding) + two-sided geometric noise of scale
    c/epsilon, at least 1."""
    noise = discrete_laplace(
        secret, stream_id(label + "/n"), np.zeros(1, dtype=np.uint64), contributions / epsilon
    )
    return float(max(rows + int(noise[0]), 1))


def check_tree_settings(n: Any, max_height: Any, threshold: Any, func: str) -> None:
    """``n``, ``max_height`` and ``threshold``, checked before any budget is spent."""
    check_public_n(n, func)
    if max_height is not None and (not is_count(max_height) or max_height < 0):
        msg = f"The 'max_height' parameter of {func} must be an int >= 0. Got {max_height!r} instead."
        raise InvalidParameterError(msg)
    if threshold is not None and (not is_real(threshold) or not 0 <= threshold < np.inf):
        msg = (
            f"The 'threshold' parameter of {func} must be a finite number >= 0 (a node whose noisy "
            f"count is at or below it is a leaf). Got {threshold!r} instead."
        )
        raise InvalidParameterError(msg)


def check_tree_noise(
    epsilon: float, gamma: float, contributions: int, max_height: int | None, d: int, func: str
) -> None:
    """``max_height`` fits the cells' codes (:func:`check_code_bits`), and the largest
    noise scales a tree of these settings can draw fit integer noise: checked before the
    budget is charged."""
    check_code_bits(max_height, d, func)
    heights = CODE_BITS // d if max_height is None else int(max_height)
    rest = epsilon * (1 - N_SHARE)  # when n is estimated first
    shares = [N_SHARE * epsilon, (1 - gamma) * rest] + ([gamma * rest] if heights else [])
    if min(shares) == 0.0:  # a subnormal epsilon: its shares underflow to 0, the noise is unbounded
        msg = f"The 'epsilon' parameter of {func} is too small to split over the tree: a share of it is 0. Got {epsilon!r} instead."
        raise InvalidParameterError(msg)
    scales = [contributions / shares[0], contributions / shares[1]]
    if heights:
        scales.append(contributions * heights / shares[2])
    check_integer_scale(max(scales), func)


def check_code_bits(max_height: int | None, d: int, func: str) -> None:
    """``max_height`` fits the cells' Z-order codes: d x max_height <= 62 bits."""
    if max_height is not None and max_height * d > CODE_BITS:
        msg = (
            f"The 'max_height' parameter of {func} must be an int in [0, {CODE_BITS // d}] for {d} columns: a cell's "
            f"Z-order code holds d x max_height <= {CODE_BITS} bits. Got {max_height!r} instead."
        )
        raise InvalidParameterError(msg)


def check_tree_bounds(
    bounds: Mapping[str, tuple[float, float]],
    columns: Sequence[str],
    max_height: int | None,
    func: str,
    min_height: int = 0,
) -> None:
    """The cells of the tree's deepest level are told apart by float64 on every axis
    (:func:`~polars_ppdm.kernels.quadtree.resolvable_height`), and every cell's centre
    ``(low + high) / 2`` is finite: checked before any data is read or budget spent.

    A given ``max_height`` (capped at ``CODE_BITS // d``, as :func:`plan_tree` does) must
    be resolvable; without one, the default height is capped at the resolvable height
    (:func:`plan_tree`), which must reach the least height the call builds
    (``max(1, min_height)``).  Otherwise distinct cells would share one float centre:
    k-means' leaf centroids were keyed by it (one noise draw over different sums).
    """
    d = len(columns)
    limit = math.ldexp(float(np.finfo(np.float64).max), -1)
    for c in columns:
        low, high = bounds[c]
        if max(abs(low), abs(high)) > limit:
            msg = (
                f"The 'bounds' parameter of {func} (column {c!r}) must lie within [-{limit:.6g}, {limit:.6g}] "
                f"for a tree: a cell's centre (low + high) / 2 overflows past half the largest double. "
                f"Got ({low!r}, {high!r}) instead; rescale the column."
            )
            raise InvalidParameterError(msg)
    lows = np.array([bounds[c][0] for c in columns], dtype=np.float64)
    highs = np.array([bounds[c][1] for c in columns], dtype=np.float64)
    resolvable = resolvable_height(lows, highs)
    height = max(1, min_height) if max_height is None else min(int(max_height), CODE_BITS // d)
    if height <= resolvable:
        return
    narrowest = min(
        columns, key=lambda c: resolvable_height(np.array([bounds[c][0]]), np.array([bounds[c][1]]))
    )
    low, high = bounds[narrowest]
    got = f"max_height={max_height!r}" if max_height is not None else f"the least default height {height}"
    msg = (
        f"The 'bounds' and 'max_height' parameters of {func}: the 2^{height} cells per axis of bounds "
        f"({low!r}, {high!r}) for column {narrowest!r} are narrower than a float can tell apart (a cell must "
        f"be a normal double at least {CELL_STEPS} float steps of its bounds wide, or distinct cells share "
        f"one float centre).  These bounds allow max_height in [0, {resolvable}]. Got {got} instead; "
        "lower max_height, widen the bounds or rescale the column."
    )
    raise InvalidParameterError(msg)


def plan_tree(
    rows: int,
    d: int,
    epsilon: float,
    *,
    box: tuple[np.ndarray, np.ndarray],
    gamma: float,
    n: float | None,
    max_height: int | None,
    threshold: float | None,
    contributions: int,
    secret: bytes,
    label: str,
    func: str,
    min_height: int = 0,
) -> TreePlan:
    """The paper's defaults: ``maxH = ln(N) / d`` (at least 1) and ``T = N / 1000``;
    N from ``n`` or from a noisy count of the ``rows`` (the points after contribution
    bounding) bought with ``N_SHARE`` of epsilon; ``d`` coordinates.  The default height
    is capped at what the floats resolve over ``box`` (lows, highs:
    :func:`~polars_ppdm.kernels.quadtree.resolvable_height`); a given one was checked
    against it (:func:`check_tree_bounds`)."""
    epsilon_n = 0.0
    if n is None and (max_height is None or threshold is None):
        epsilon_n = N_SHARE * epsilon
        n = noisy_total(rows, epsilon_n, contributions, secret, label)
    if max_height is None:  # the default grows to min_height; a given height is kept
        assert n is not None  # given, or estimated just above
        max_height = min(max(1, round(math.log(n) / d), min_height), resolvable_height(*box))
    max_height = min(int(max_height), CODE_BITS // d)  # Z-order codes of d * height bits in an int64
    if threshold is None:
        assert n is not None  # given, or estimated just above
        threshold = n / 1000
    rest = epsilon - epsilon_n
    tree = gamma * rest if max_height > 0 else 0.0
    return TreePlan(float(n or 0), max_height, float(threshold), epsilon_n, tree, rest - tree)


def quadtree_leaves(
    count: CellCounts,
    lows: npt.ArrayLike,
    highs: npt.ArrayLike,
    plan: TreePlan,
    contributions: int,
    secret: bytes,
    label: str,
    *,
    min_leaves: int = 1,
    func: str = _FUNC,
) -> Leaves:
    """The tree's leaves from the true counts ``count(level, nodes)`` (a
    :data:`~polars_ppdm.kernels.quadtree.CellCounts` for nodes up to
    ``plan.max_height``); with ``min_leaves``, the top levels split until there are at
    least that many cells (the height grows to allow it)."""
    level_scale = contributions * plan.max_height / plan.epsilon_levels if plan.max_height else 1.0
    lows, highs = np.asarray(lows, dtype=np.float64), np.asarray(highs, dtype=np.float64)
    return grow_quadtree(
        count,
        lows,
        highs,
        max_height=plan.max_height,
        threshold=plan.threshold,
        level_scale=level_scale,
        leaf_scale=contributions / plan.epsilon_leaves,
        secret=secret,
        label=label,
        split_levels=split_levels_for(min_leaves, len(lows)),
        func=func,
    )


def split_levels_for(min_leaves: int, d: int) -> int:
    """Levels to split unconditionally so that 2^(d * levels) >= min_leaves."""
    return math.ceil(math.log2(min_leaves) / d) if min_leaves > 1 else 0


def leaves_frame(leaves: Leaves, columns: Sequence[str]) -> pl.DataFrame:
    data = {"level": leaves.level}
    for axis, c in enumerate(columns):
        data[f"{c}_low"] = leaves.low[:, axis]
        data[f"{c}_high"] = leaves.high[:, axis]
        data[f"{c}_centre"] = leaves.centre[:, axis]
    data["count"] = leaves.count
    return pl.DataFrame(data)


def dp_quadtree(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: str | Sequence[str],
    *,
    bounds: Mapping[str, tuple[float, float]] | Sequence | str | None = None,
    epsilon: float,
    gamma: float = 0.3,
    max_height: int | None = None,
    threshold: float | None = None,
    n: float | None = None,
    secret: SecretLike = None,
    key: str | None = None,
    max_contributions: int = 1,
    accountant: BudgetAccountant | ParallelBlock | None = None,
) -> pl.DataFrame:
    """The paper's differentially private quadtree, in any number of dimensions.

    ``eps1 = gamma * epsilon`` is spread evenly over the levels that decide a split
    (each level's nodes are disjoint: parallel composition); ``eps2 = (1 - gamma) *
    epsilon`` buys the leaves' noisy counts.  A split cuts every axis at the box centre
    (2^d children: the paper's quadrants for d = 2; tested up to d = 6, where the
    default height ln(N)/d keeps 2^(d * height) about N^0.7 cells).

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        The points (collected: a tree needs every level's counts).
    columns : str or sequence of str
        Numeric coordinates; nulls and NaN are refused.
    bounds : mapping column -> (low, high), or one pair per column
        Public bounds of the root box; points outside are clipped into the edge cells
        (counted there).  ``"data"`` (the paper reads them off the data) is refused: it
        published the exact extremes.
    epsilon : float
        The release's budget (> 0).
    gamma : float in (0, 1)
        The tree's share of epsilon (paper: 0.3).
    max_height, threshold : optional
        The paper's defaults ``ln(N) / d`` and ``N / 1000``.
    n : float, optional
        A public estimate of the number of rows for those defaults; without it (and
        without both ``max_height`` and ``threshold``), 5% of epsilon buys a noisy count.
    secret, key, max_contributions, accountant
        As :func:`polars_ppdm.dp_histogram`.

    Returns
    -------
    polars.DataFrame
        One row per leaf: ``level``, per column ``<c>_low``, ``<c>_high``, ``<c>_centre``,
        and the noisy ``count`` (Int64, may be negative).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> xy = np.random.default_rng(0).normal(size=(20_000, 2))
    >>> df = pl.DataFrame({"x": xy[:, 0], "y": xy[:, 1]})
    >>> leaves = ppdm.dp_quadtree(df, ["x", "y"], bounds=[(-5, 5), (-5, 5)], epsilon=1.0, secret=ppdm.Secret.for_tests(1))
    >>> leaves.columns[:4], bool(abs(leaves["count"].sum() - 20_000) < 1_000)
    (['level', 'x_low', 'x_high', 'x_centre'], True)

    References
    ----------
    Zhang, Cheng, DPQT k-means (paper 004), buildDPQuadTree.
    """
    schema = schema_of(frame, _FUNC)
    request = check_quadtree(
        schema,
        columns,
        bounds=bounds,
        epsilon=epsilon,
        gamma=gamma,
        max_height=max_height,
        threshold=threshold,
        n=n,
        key=key,
        max_contributions=max_contributions,
    )
    check_accountant(accountant, _FUNC)
    request.charge(accountant, check_only=True)  # refused before a row is read if over budget
    secret = release_secret(secret, _FUNC)
    points = private_points(
        frame, request.columns, key=key, max_contributions=request.contributions, secret=secret, func=_FUNC
    )
    request.charge(accountant)  # after the points are read and checked: a refusal costs nothing
    lows, highs = request.box()
    own_key = release_key(secret, request.key_label, table_digest(secret, list(points.T)))
    return release_quadtree(
        request, len(points), lambda height: point_counts(points, lows, highs, height), own_key
    )


@dataclass(frozen=True)
class QuadtreeRequest:
    """The checked parameters of a :func:`dp_quadtree` call (any engine)."""

    columns: list[str]
    bounds: dict[str, tuple[float, float]]
    epsilon: float
    gamma: float
    max_height: int | None
    threshold: float | None
    n: float | None
    contributions: int
    unit: str | None = None  # the privacy unit's column (None: each row its own unit)

    @property
    def label(self) -> str:
        """The release's name: in the accountant, and in its noise key (every engine)."""
        return f"{_FUNC}({', '.join(self.columns)})"

    @property
    def key_label(self) -> str:
        """The label of the noise's key: the release and its whole query (the box, the
        tree's parameters, what a unit contributes, epsilon): another box never shares the
        noise of a node whose cell it moved (:func:`~polars_ppdm.kernels.release_key.query_label`)."""
        return query_label(self.label, tree_query(self))

    def charge(
        self, accountant: BudgetAccountant | ParallelBlock | None, *, check_only: bool = False
    ) -> None:
        """Spend epsilon on the accountant (once the points are read and checked)."""
        charge(accountant, self.epsilon, self.label, _FUNC, check_only=check_only, privacy_unit=self.unit)

    def box(self) -> tuple[np.ndarray, np.ndarray]:
        """The root box: lows and highs per column (float64)."""
        lows = np.array([self.bounds[c][0] for c in self.columns], dtype=np.float64)
        highs = np.array([self.bounds[c][1] for c in self.columns], dtype=np.float64)
        return lows, highs


def tree_query(request: Any) -> dict[str, Any]:
    """The parameters of a tree over a box, for a key's label (a quadtree's, and a k-means
    release's built on one): real numbers as floats (a threshold of 20 and 20.0 is one
    query)."""
    return {
        "bounds": [tuple(map(float, request.bounds[c])) for c in request.columns],
        "epsilon": float(request.epsilon),
        "gamma": float(request.gamma),
        "max_height": request.max_height,
        "threshold": None if request.threshold is None else float(request.threshold),
        "n": None if request.n is None else float(request.n),
        "contributions": request.contributions,
        "unit": request.unit,
    }


def check_quadtree(
    schema: pl.Schema,
    columns: str | Sequence[str],
    *,
    bounds: Any,
    epsilon: Any,
    gamma: Any,
    max_height: Any,
    threshold: Any,
    n: Any,
    key: Any,
    max_contributions: Any,
) -> QuadtreeRequest:
    """Every parameter of :func:`dp_quadtree` checked against ``schema``, before any budget
    is spent (``bounds="data"`` is refused)."""
    cols = check_columns(columns, list(schema.names()), _FUNC)
    check_numeric(schema, cols, _FUNC)
    epsilon = check_epsilon(epsilon, _FUNC)
    gamma = _check_gamma(gamma, _FUNC)
    contributions = check_max_contributions(max_contributions, key, _FUNC)
    if key is not None:
        check_unit_key(key, schema, _FUNC)
    check_tree_settings(n, max_height, threshold, _FUNC)
    check_tree_noise(epsilon, gamma, contributions, max_height, len(cols), _FUNC)
    refuse_data_bounds(bounds)
    bounds_of = check_bounds(bounds, cols, _FUNC, None)
    check_tree_bounds(bounds_of, cols, max_height, _FUNC)
    unit = None if key is None else str(key)
    return QuadtreeRequest(cols, bounds_of, epsilon, gamma, max_height, threshold, n, contributions, unit)


def release_quadtree(
    request: QuadtreeRequest, rows: int, counts_up_to: Callable[[int], CellCounts], secret: bytes
) -> pl.DataFrame:
    """The leaves of :func:`dp_quadtree` from the number of points after bounding
    (``rows``, 0 for an empty table) and ``counts_up_to(height)``, the true counts of the nodes at levels
    up to ``height`` (the engine's only access to the points)."""
    label = "dp_quadtree/" + "\x1f".join(request.columns)
    lows, highs = request.box()
    plan = plan_tree(
        rows,
        len(request.columns),
        request.epsilon,
        box=(lows, highs),
        gamma=request.gamma,
        n=request.n,
        max_height=request.max_height,
        threshold=request.threshold,
        contributions=request.contributions,
        secret=secret,
        label=label,
        func=_FUNC,
    )
    count = counts_up_to(plan.max_height)
    return leaves_frame(
        quadtree_leaves(count, lows, highs, plan, request.contributions, secret, label), request.columns
    )
