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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_ppdm._frame import as_lazy, schema_of
from polars_ppdm._validation import check_choice, check_columns, check_int, check_numeric
from polars_ppdm.dp._common import (
    charge,
    check_bounds,
    check_max_contributions,
    private_points,
)
from polars_ppdm.dp.accountant import BudgetAccountant, check_epsilon
from polars_ppdm.dp.quadtree import (
    N_SHARE,
    _check_gamma,
    check_tree_noise,
    check_tree_settings,
    noisy_total,
    plan_tree,
    quadtree_leaves,
    split_levels_for,
)
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_kmeans import dp_lloyd, grid_buckets, lloyd_count_scale
from polars_ppdm.kernels.dp_noise import check_integer_scale
from polars_ppdm.kernels.weighted_kmeans import weighted_kmeans
from polars_ppdm.secret import SecretLike, resolve_secret

__all__ = ["DPKMeansResult", "dp_kmeans"]

_FUNC = "dp_kmeans"
METHODS = ("quadtree", "lloyd", "grid")

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


def _fit_buckets(centres: np.ndarray, counts: np.ndarray, k: int, secret: bytes, label: str) -> np.ndarray:
    if len(centres) < k:
        msg = (
            f"The 'k' parameter of {_FUNC} ({k}) is larger than the number of buckets ({len(centres)}); "
            "use a smaller k, a larger epsilon or a finer grid."
        )
        raise InvalidParameterError(msg)
    # Negative noisy counts weigh nothing; with fewer positive buckets than k (tiny
    # epsilon), the seeding takes the remaining centres from the empty buckets.
    return weighted_kmeans(centres, np.maximum(counts, 0).astype(np.float64), k, secret=secret, label=label)


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
    accountant: BudgetAccountant | None = None,
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
        the ``method`` and the noisy ``buckets``.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> rng = np.random.default_rng(0)
    >>> xy = np.concatenate([rng.normal(-2, 0.3, (5000, 2)), rng.normal(2, 0.3, (5000, 2))])
    >>> df = pl.DataFrame({"x": xy[:, 0], "y": xy[:, 1]})
    >>> fit = ppdm.dp_kmeans(df, ["x", "y"], k=2, epsilon=1.0, bounds=[(-4, 4), (-4, 4)], secret=3)
    >>> sorted(fit.centres["x"].round(0).to_list()), fit.epsilon
    ([-2.0, 2.0], 1.0)
    """
    schema = schema_of(frame, _FUNC)
    cols = check_columns(columns, list(schema.names()), _FUNC)
    check_numeric(schema, cols, _FUNC)
    epsilon = check_epsilon(epsilon, _FUNC)
    check_choice("method", method, METHODS, _FUNC)
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
    check_tree_settings(n, max_height, threshold, _FUNC)  # n also sizes the grid method
    if method == "quadtree":
        check_tree_noise(epsilon, gamma, contributions, max_height, len(cols), _FUNC)
    else:  # lloyd: counts at epsilon / 2^(t + 1) in iteration t; grid: one count per cell
        check_integer_scale(
            lloyd_count_scale(contributions, epsilon, int(iterations))  # the last is the largest
            if method == "lloyd"
            else contributions / (epsilon * (1 - N_SHARE)),
            _FUNC,
        )
    bounds_of = check_bounds(bounds, cols, _FUNC, as_lazy(frame))
    spent = epsilon * (1 - 2.0**-iterations) if method == "lloyd" else epsilon
    why = (
        f"epsilon={epsilon:g} halved over iterations={iterations}: {epsilon:g} x (1 - 2^-{iterations})"
        if method == "lloyd"
        else ""
    )
    charge(accountant, spent, f"{_FUNC}({', '.join(cols)}, method={method!r})", _FUNC, why=why)
    secret = resolve_secret(secret).key
    points = private_points(frame, cols, key=key, max_contributions=contributions, secret=secret, func=_FUNC)
    lows = np.array([bounds_of[c][0] for c in cols])
    highs = np.array([bounds_of[c][1] for c in cols])
    label = f"dp_kmeans/{method}/" + "\x1f".join(cols)
    buckets = None
    if method == "lloyd":
        centres = dp_lloyd(
            points, lows, highs, int(k), epsilon, contributions, int(iterations), secret, label
        )
    else:
        if method == "quadtree":
            plan = plan_tree(
                points,
                epsilon,
                gamma=gamma,
                n=n,
                max_height=max_height,
                threshold=threshold,
                contributions=contributions,
                secret=secret,
                label=label,
                func=_FUNC,
                min_height=split_levels_for(int(k), points.shape[1]),
            )
            # The top levels always split, so the tree has at least k leaves to fit.
            leaves = quadtree_leaves(
                points, lows, highs, plan, contributions, secret, label, min_leaves=int(k), func=_FUNC
            )
            bucket_centres, counts = leaves.centre, leaves.count
        else:
            rest = epsilon
            if n is None:
                n = noisy_total(points, N_SHARE * epsilon, contributions, secret, label)
                rest = epsilon * (1 - N_SHARE)
            bucket_centres, counts = grid_buckets(
                points, lows, highs, int(k), rest, contributions, n, secret, label
            )
        centres = _fit_buckets(bucket_centres, counts, int(k), secret, label)
        buckets = pl.DataFrame({**{c: bucket_centres[:, a] for a, c in enumerate(cols)}, "count": counts})
    return DPKMeansResult(
        pl.DataFrame({c: centres[:, a] for a, c in enumerate(cols)}), spent, method, buckets
    )
