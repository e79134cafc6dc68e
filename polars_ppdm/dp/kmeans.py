"""Differentially private k-means: DPQT (paper 004), DPLloyd and EUG, on Polars frames.

* ``"quadtree"`` (DPQT k-means, paper 004): a DP quadtree's leaves are the buckets; a
  weighted k-means runs on their centres and noisy counts, seeded from the buckets only
  (the paper seeds from a run on the raw data, which leaks).
* ``"lloyd"`` (DPLloyd; Blum, Dwork, McSherry, Nissim, SuLQ 2005): Lloyd iterations on
  the data, each releasing noisy counts and sums per cluster; iteration t spends
  epsilon / 2^t (half on counts, half on sums), as paper 004 describes its baseline.
* ``"grid"`` (EUG k-means; Su, Cao, Li, Bertino, Lin, Wang, "Differentially private
  k-means clustering and a hybrid approach", VLDBJ 2017): a uniform grid of
  ``m = (N epsilon / 10)^(2 / (2 + d))`` cells per axis (rounded up to a power of two,
  and to at least k cells in all, so that k centres exist; at most 2^20 cells in all,
  which m passes only for N epsilon > 10^7 in 2-D) with noisy counts, then the
  weighted k-means of the quadtree method.

References
----------
Zhang, Cheng, DPQT k-means (paper 004).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._frame import schema_of
from polars_ppdm._validation import (
    check_choice,
    check_columns,
    check_int,
    check_numeric,
    check_output_names,
)
from polars_ppdm.dp._common import (
    charge,
    check_accountant,
    check_bounds,
    check_max_contributions,
    check_unit_key,
    private_points,
    refuse_data_bounds,
    release_secret,
)
from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock, check_epsilon
from polars_ppdm.dp.quadtree import (
    N_SHARE,
    _check_gamma,
    check_code_bits,
    check_tree_bounds,
    check_tree_noise,
    check_tree_settings,
    noisy_total,
    plan_tree,
    quadtree_leaves,
    split_levels_for,
    tree_query,
)
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_kmeans import dp_lloyd, grid_counts, grid_level, lloyd_count_scale
from polars_ppdm.kernels.dp_noise import GRID_BITS, check_integer_scale
from polars_ppdm.kernels.quadtree import CellCounts, leaf_centroids, point_counts
from polars_ppdm.kernels.release_key import query_label, release_key, table_digest
from polars_ppdm.kernels.weighted_kmeans import weighted_kmeans
from polars_ppdm.secret import SecretLike

__all__ = ["DPKMeansResult", "KMeansRequest", "check_kmeans", "dp_kmeans", "release_kmeans"]

_FUNC = "dp_kmeans"
METHODS = ("quadtree", "lloyd", "grid", "quadtree_refined")

# The most centres: the fit on the buckets compares every bucket with every centre, and
# "quadtree" and "grid" have at least k buckets, so its work grows as k^2 (k = 10^4
# already takes minutes and GBs).  Asked for more (k = 10^11) it ran out of memory.
MAX_K = 10_000
# The most DPLloyd iterations: iteration t spends epsilon / 2^t, so its noise scale
# doubles each time; past a few dozen the counts are noise, and 2^-t leaves the floats.
MAX_ITERATIONS = 1_000


@dataclass(frozen=True)
class DPKMeansResult:
    """Centres of a differentially private k-means and what they cost.

    ``centres`` has one row per centre and one column per input column; ``buckets``
    holds the noisy buckets the centres were fitted on (None for ``"lloyd"``).
    """

    centres: pl.DataFrame
    epsilon: float
    method: str
    buckets: pl.DataFrame | None = None

    def to_numpy(self) -> np.ndarray:
        return self.centres.to_numpy()


def _fit_buckets(
    centres: np.ndarray,
    counts: np.ndarray,
    k: int,
    secret: bytes,
    label: str,
    *,
    refined_scale: float | None = None,
) -> np.ndarray:
    if len(centres) < k:
        msg = (
            f"The 'k' parameter of {_FUNC} ({k}) is larger than the number of buckets ({len(centres)}); "
            "use a smaller k, a larger epsilon or a finer grid."
        )
        raise InvalidParameterError(msg)
    if refined_scale is None:
        # Negative noisy counts weigh nothing; with fewer positive buckets than k (tiny
        # epsilon), the seeding takes the remaining centres from the empty buckets.
        return weighted_kmeans(
            centres, np.maximum(counts, 0).astype(np.float64), k, secret=secret, label=label
        )
    weights = np.where(counts > empty_cut(refined_scale, len(counts)), counts, 0).astype(np.float64)
    if (weights > 0).sum() < k:  # keep the k heaviest buckets at least
        heaviest = np.argsort(-counts, kind="stable")[:k]
        weights[heaviest] = np.maximum(counts[heaviest], 0)
    return weighted_kmeans(centres, weights, k, secret=secret, label=label, restarts=30, greedy=True)


def empty_cut(scale: float, buckets: int) -> int:
    """The count at or below which a bucket is treated as empty: the smallest t with
    ``buckets x P(noise > t) <= 1`` for two-sided geometric noise of ``scale``, so that
    among all buckets at most one empty bucket is expected to pass (P(X > t) =
    alpha^(t+1) / (1 + alpha)).  Post-processing: it reads the noisy counts only.

    Examples
    --------
    >>> empty_cut(3.0, 100)   # ceil(ln(1.72 / 100) / ln(e^(-1/3)) - 1) = ceil(11.2)
    12
    """
    alpha = math.exp(-1.0 / scale)
    if alpha == 0.0:
        return 0
    return max(0, math.ceil(math.log((1 + alpha) / buckets) / math.log(alpha) - 1 - 1e-9))


def dp_kmeans(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: str | Sequence[str],
    *,
    k: int,
    epsilon: float,
    bounds: Mapping[str, tuple[float, float]] | Sequence | str | None = None,
    method: str = "quadtree",
    gamma: float = 0.3,
    max_height: int | None = None,
    threshold: float | None = None,
    n: float | None = None,
    iterations: int = 5,
    secret: SecretLike = None,
    key: str | None = None,
    max_contributions: int = 1,
    accountant: BudgetAccountant | ParallelBlock | None = None,
) -> DPKMeansResult:
    """Differentially private k-means centres.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        The points (collected).
    columns : str or sequence of str
        Numeric coordinates; nulls and NaN are refused.
    k : int
        Number of centres, in [1, 10,000] (and at most the number of buckets for
        ``"quadtree"`` and ``"grid"``).
    epsilon : float
        The whole release's budget (> 0).
    bounds : mapping column -> (low, high), one pair per column, or "data"
        Public bounds (see :func:`polars_ppdm.dp_histogram`); points outside are clipped.
    method : {'quadtree', 'lloyd', 'grid'}
        See the module documentation.
    gamma, max_height, threshold, n
        The tree of ``"quadtree"`` (see :func:`polars_ppdm.dp_quadtree`); ``n`` also sizes
        the grid of ``"grid"`` (without it, 5% of epsilon buys a noisy count).
    iterations : int
        Iterations of ``"lloyd"``, in [1, 1,000] (epsilon / 2, / 4, ...: together
        epsilon (1 - 2^-T)).
    secret, key, max_contributions, accountant
        As :func:`polars_ppdm.dp_histogram`.

    Returns
    -------
    DPKMeansResult
        ``centres`` (a DataFrame with the input's column names), the ``epsilon`` spent,
        the ``method`` and the noisy ``buckets`` (the columns and ``count``: a column
        named ``count`` is refused, except by ``"lloyd"``, which has no buckets).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> rng = np.random.default_rng(0)
    >>> xy = np.concatenate([rng.normal(-2, 0.3, (5000, 2)), rng.normal(2, 0.3, (5000, 2))])
    >>> df = pl.DataFrame({"x": xy[:, 0], "y": xy[:, 1]})
    >>> fit = ppdm.dp_kmeans(df, ["x", "y"], k=2, epsilon=1.0, bounds=[(-4, 4), (-4, 4)], secret=ppdm.Secret.for_tests(3))
    >>> sorted(fit.centres["x"].round(0).to_list()), fit.epsilon
    ([-2.0, 2.0], 1.0)
    """
    schema = schema_of(frame, _FUNC)
    request = check_kmeans(
        schema,
        columns,
        k=k,
        epsilon=epsilon,
        bounds=bounds,
        method=method,
        gamma=gamma,
        max_height=max_height,
        threshold=threshold,
        n=n,
        iterations=iterations,
        key=key,
        max_contributions=max_contributions,
    )
    check_accountant(accountant, _FUNC)
    request.charge(accountant, check_only=True)  # refused before a row is read if over budget
    contribution_secret = release_secret(secret, _FUNC)
    points = private_points(
        frame,
        request.columns,
        key=key,
        max_contributions=request.contributions,
        secret=contribution_secret,
        func=_FUNC,
    )
    request.charge(accountant)  # after the points are read and checked: a refusal costs nothing
    # The noise under the release's own key: other points, other noise.
    secret = release_key(
        contribution_secret, request.key_label, table_digest(contribution_secret, list(points.T))
    )
    if request.method == "lloyd":
        lows, highs = request.box()
        centres = dp_lloyd(
            points,
            lows,
            highs,
            request.k,
            request.epsilon,
            request.contributions,
            request.iterations,
            secret,
            request.label,
            # The starting centres read no data: under the release's secret and the
            # columns, not the noise's key (which names the unit's column).
            start=contribution_secret,
        )
        return request.result(centres, None)
    lows, highs = request.box()
    return release_kmeans(
        request,
        len(points),
        lambda height: point_counts(points, lows, highs, height),
        secret,
        points=points if request.method == "quadtree_refined" else None,
    )


@dataclass(frozen=True)
class KMeansRequest:
    """The checked parameters of a :func:`dp_kmeans` call (any engine)."""

    columns: list[str]
    bounds: dict[str, tuple[float, float]]
    k: int
    epsilon: float
    method: str
    gamma: float
    max_height: int | None
    threshold: float | None
    n: float | None
    iterations: int
    contributions: int
    unit: str | None = None  # the privacy unit's column (None: each row its own unit)

    @property
    def spent(self) -> float:
        """The epsilon the call spends (DPLloyd: epsilon (1 - 2^-T))."""
        return self.epsilon * (1 - 2.0**-self.iterations) if self.method == "lloyd" else self.epsilon

    @property
    def label(self) -> str:
        return f"dp_kmeans/{self.method}/" + "\x1f".join(self.columns)

    @property
    def key_label(self) -> str:
        """The label of the noise's key: the release and its whole query (the box, k, the
        method's parameters, what a unit contributes, epsilon)
        (:func:`~polars_ppdm.kernels.release_key.query_label`)."""
        return query_label(self.label, {**tree_query(self), "k": self.k, "iterations": self.iterations})

    def box(self) -> tuple[np.ndarray, np.ndarray]:
        """Lows and highs per column (float64)."""
        lows = np.array([self.bounds[c][0] for c in self.columns], dtype=np.float64)
        highs = np.array([self.bounds[c][1] for c in self.columns], dtype=np.float64)
        return lows, highs

    def charge(
        self, accountant: BudgetAccountant | ParallelBlock | None, *, check_only: bool = False
    ) -> None:
        """Spend the call's epsilon on the accountant (before the data is read)."""
        why = (
            f"epsilon={self.epsilon:g} halved over iterations={self.iterations}: "
            f"{self.epsilon:g} x (1 - 2^-{self.iterations})"
            if self.method == "lloyd"
            else ""
        )
        release = f"{_FUNC}({', '.join(self.columns)}, method={self.method!r})"
        charge(accountant, self.spent, release, _FUNC, why=why, check_only=check_only, privacy_unit=self.unit)

    def result(self, centres: np.ndarray, buckets: pl.DataFrame | None) -> DPKMeansResult:
        frame = pl.DataFrame({c: centres[:, a] for a, c in enumerate(self.columns)})
        return DPKMeansResult(frame, self.spent, self.method, buckets)


def check_kmeans(
    schema: pl.Schema,
    columns: str | Sequence[str],
    *,
    k: Any,
    epsilon: Any,
    bounds: Any,
    method: Any,
    gamma: Any,
    max_height: Any,
    threshold: Any,
    n: Any,
    iterations: Any,
    key: Any,
    max_contributions: Any,
) -> KMeansRequest:
    """Every parameter of :func:`dp_kmeans` checked against ``schema``, before any budget
    is spent (``bounds="data"`` is refused)."""
    cols = check_columns(columns, list(schema.names()), _FUNC)
    check_numeric(schema, cols, _FUNC)
    epsilon = check_epsilon(epsilon, _FUNC)
    check_choice("method", method, METHODS, _FUNC)
    check_output_names(_FUNC, cols, method=method)  # the buckets' "count" beside the coordinates
    k = check_int(
        "k",
        k,
        _FUNC,
        low=1,
        high=MAX_K,
        why=" (the fit compares each of at least k buckets with each centre: k^2 work)",
    )
    iterations = check_int(
        "iterations",
        iterations,
        _FUNC,
        low=1,
        high=MAX_ITERATIONS,
        why=" (DPLloyd's iteration t spends epsilon / 2^t: its noise doubles each iteration)",
    )
    gamma = _check_gamma(gamma, _FUNC)
    contributions = check_max_contributions(max_contributions, key, _FUNC)
    if key is not None:
        check_unit_key(key, schema, _FUNC)
    check_tree_settings(n, max_height, threshold, _FUNC)  # n also sizes the grid method
    if method == "quadtree":
        check_tree_noise(epsilon, gamma, contributions, max_height, len(cols), _FUNC)
    else:  # lloyd: counts at epsilon / 2^(t + 1) in iteration t; grid: one count per cell
        if method == "quadtree_refined":  # was cut down to 62 // d silently
            check_code_bits(max_height, len(cols), _FUNC)
        check_integer_scale(
            lloyd_count_scale(contributions, epsilon, int(iterations))  # the last is the largest
            if method == "lloyd"
            else contributions / (epsilon * (1 - N_SHARE)),
            _FUNC,
        )
        if method == "lloyd":  # the last iteration's sums: d coordinates of ~2^24 grid units each
            check_integer_scale(
                lloyd_count_scale(contributions, epsilon, int(iterations)) * len(cols) * 2.0**GRID_BITS, _FUNC
            )
    refuse_data_bounds(bounds)
    bounds_of = check_bounds(bounds, cols, _FUNC, None)
    if method in ("quadtree", "quadtree_refined"):  # cells the floats tell apart: distinct centres and keys
        check_tree_bounds(bounds_of, cols, max_height, _FUNC, min_height=split_levels_for(int(k), len(cols)))
    return KMeansRequest(
        cols,
        bounds_of,
        int(k),
        epsilon,
        method,
        gamma,
        max_height,
        threshold,
        n,
        int(iterations),
        contributions,
        None if key is None else str(key),
    )


def release_kmeans(
    request: KMeansRequest,
    rows: int,
    counts_up_to: Callable[[int], CellCounts],
    secret: bytes,
    *,
    points: np.ndarray | None = None,
) -> DPKMeansResult:
    """The centres of :func:`dp_kmeans` by ``"quadtree"`` or ``"grid"`` (counts only)
    from the number of points after bounding (``rows``, 0 for an empty table) and ``counts_up_to(height)``,
    the true counts of the cells at levels up to ``height``."""
    lows, highs = request.box()
    d, k, label, contributions = len(request.columns), request.k, request.label, request.contributions
    if request.method in ("quadtree", "quadtree_refined"):
        plan = plan_tree(
            rows,
            d,
            request.epsilon,
            box=(lows, highs),
            gamma=request.gamma,
            n=request.n,
            max_height=request.max_height,
            threshold=request.threshold,
            contributions=contributions,
            secret=secret,
            label=label,
            func=_FUNC,
            min_height=split_levels_for(k, d),
        )
        centroids = request.method == "quadtree_refined"
        if centroids:  # the leaves' budget: half for their counts, half for their sums
            plan = replace(plan, epsilon_leaves=plan.epsilon_leaves / 2)
        # The top levels always split, so the tree has at least k leaves to fit.
        leaves = quadtree_leaves(
            counts_up_to(plan.max_height),
            lows,
            highs,
            plan,
            contributions,
            secret,
            label,
            min_leaves=k,
            func=_FUNC,
        )
        bucket_centres, counts = leaves.centre, leaves.count
        refined_scale = contributions / plan.epsilon_leaves if centroids else None
        if centroids:
            assert points is not None
            bucket_centres = leaf_centroids(
                points, leaves, lows, highs, plan.epsilon_leaves, contributions, secret, label
            )
    elif request.method == "grid":
        rest, n = request.epsilon, request.n
        if n is None:
            n = noisy_total(rows, N_SHARE * request.epsilon, contributions, secret, label)
            rest = request.epsilon * (1 - N_SHARE)
        level = grid_level(n, rest, k, d)
        bucket_centres, counts = grid_counts(
            counts_up_to(level), level, lows, highs, rest, contributions, secret, label
        )
        refined_scale = None
    else:
        msg = f"release_kmeans: method {request.method!r} releases sums, not counts only."
        raise ValueError(msg)
    centres = _fit_buckets(bucket_centres, counts, k, secret, label, refined_scale=refined_scale)
    cols = request.columns
    return request.result(
        centres, pl.DataFrame({**{c: bucket_centres[:, a] for a, c in enumerate(cols)}, "count": counts})
    )
