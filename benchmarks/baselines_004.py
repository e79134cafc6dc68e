"""Paper 004's two other baselines: DPk-means++ and IDPk-means (benchmarks only).

Zhang and Cheng (paper 004) compare DPQT k-means with DPk-means (Blum et al. [10]; in the
library as ``ppdm.dp_kmeans(..., method="lloyd")``), EUG k-means (Su et al. [13];
``method="grid"``), and two methods that change only DPk-means' initial centres:

* **DPk-means++** -- their ref. [15] (Hu Chuang et al.): "on the basis of the traditional
  DPk-means algorithm, improves the choice of the initial centres, applying the k-means++
  algorithm to differential privacy";
* **IDPk-means** -- their ref. [11] (Li Yang, Wen Wen, Xie Guangqiang, "Research on
  differential privacy preserving k-means clustering", Computer Science 40(3), 2013):
  "another IDPk-means algorithm, which improves the choice of the initial centres" (its
  abstract: a new IDPk-means that improves DPk-means' poor usability, proved epsilon-DP).

Those sentences are all paper 004 says of them, and the two source papers' texts were not
available to this project (only titles and abstracts), so what follows implements what
the citations say and states every choice made beyond them.  Both methods share DPk-means
as paper 004 describes it: Lloyd iterations releasing a noisy count and a noisy
coordinate sum per cluster, the first round spending epsilon / 2 and each later round
half the one before.

Assumptions common to both (also in each function's docstring):

1. **Rounds and budget.**  The initialisation is round 0 and gets epsilon / 2; the
   ``iterations`` Lloyd rounds then get epsilon / 4, epsilon / 8, ...; the last round gets
   what is left (the same as the one before it), so the rounds spend exactly epsilon.
   (Paper 004's schedule never ends: a finite run of it leaves epsilon 2^-T unspent.  The
   library's DPLloyd keeps that schedule and reports spending epsilon (1 - 2^-T).)
   ``iterations`` defaults to 5, as the library's DPLloyd; the papers give no number.
2. **Each Lloyd round** splits its share in half: counts and sums, as the library's
   DPLloyd (``polars_ppdm.kernels.dp_kmeans.dp_lloyd``).  Neighbouring tables differ by
   one row added or removed (the library's convention): a row is in one cluster, so the
   counts have L1 sensitivity 1 and the sums the L1 norm of the largest centred row,
   ``sum_j (high_j - low_j) / 2`` (in grid units, below).  A cluster whose noisy count is
   <= 0 keeps its centre.
3. **Exact noise.**  Coordinates are clipped to the public bounds, centred and rounded
   to the library's power-of-two grid (``grid_of``, ``to_grid``), sums are integers in
   grid units, and all noise is the library's exact discrete Laplace
   (``discrete_laplace``) drawn from the keyed PRF under a release key derived from the
   secret and a keyed digest of the points (``release_key``, ``table_digest``), as
   ``ppdm.dp_kmeans`` does: same secret and data, same centres; another secret or other
   data, independent noise.  No floating-point Laplace and no NumPy RNG anywhere.
4. **Public bounds** only: ``bounds="data"`` is refused; centres are clipped to them.

References
----------
Zhang, Cheng, "DPQT k-means: differentially private quadtree k-means" (paper 004).
Blum, Dwork, McSherry, Nissim, "Practical privacy: the SuLQ framework", PODS 2005.
Arthur, Vassilvitskii, "k-means++: the advantages of careful seeding", SODA 2007.
Li, Wen, Xie, "Research on differential privacy preserving k-means clustering" (IDPk-means),
Computer Science 40(3), 2013.  Hu et al., DPk-means++ (paper 004's ref. [15]); Fu, Li,
"Research on k-means++ clustering algorithm based on Laplace mechanism for differential
privacy protection", Netinfo Security 19(2), 2019 (a DPk-means++ of the same name whose
abstract says the Laplace noise is added "in the process of initializing the selected
center point and iterating the mean center point").
Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020.
Mironov, "On significance of the least significant bits for differential privacy", CCS 2012.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_ppdm._bounds import check_bounds
from polars_ppdm._frame import schema_of
from polars_ppdm._validation import check_columns, check_int, check_numeric
from polars_ppdm.dp._common import private_points, refuse_data_bounds, release_secret
from polars_ppdm.dp.accountant import check_epsilon
from polars_ppdm.kernels.dp_noise import discrete_laplace, grid_of, to_grid
from polars_ppdm.kernels.prf import stream_id, uniform
from polars_ppdm.kernels.release_key import release_key, table_digest
from polars_ppdm.kernels.weighted_kmeans import nearest
from polars_ppdm.secret import SecretLike

__all__ = ["BaselineFit", "dp_kmeans_pp", "halving_shares", "idp_kmeans"]

MAX_ITERATIONS = 50  # round r spends epsilon / 2^(r+1): past ~50 the shares leave the doubles' exact sums


@dataclass(frozen=True)
class BaselineFit:
    """Centres of one baseline run and the budget its noise draws actually spent.

    ``spent`` lists every noise draw in order as ``(stream, epsilon)``, with ``epsilon =
    sensitivity / scale`` of the draw's discrete Laplace (the scale passed to the sampler,
    so what was spent, not what was meant); ``epsilon`` is their sum.
    """

    centres: np.ndarray
    epsilon: float
    spent: tuple[tuple[str, float], ...]
    method: str

    def per_round(self) -> dict[str, float]:
        """The epsilon spent per round (``"init"``, ``"iteration 1"``, ...)."""
        rounds: dict[str, list[float]] = {}
        for stream, eps in self.spent:
            rounds.setdefault(stream.split("/")[0], []).append(eps)
        return {name: math.fsum(parts) for name, parts in rounds.items()}


def halving_shares(epsilon: float, rounds: int) -> list[float]:
    """Epsilon / 2, / 4, ... over ``rounds`` rounds, the last taking what is left.

    Each share is epsilon times a power of two (an exact double), so their exact sum is
    epsilon: ``math.fsum`` of them gives epsilon back, bit for bit.

    Examples
    --------
    >>> halving_shares(1.0, 4)
    [0.5, 0.25, 0.125, 0.125]
    >>> math.fsum(halving_shares(0.3, 6)) == 0.3, halving_shares(2.0, 1)
    (True, [2.0])
    """
    if rounds < 1:
        msg = f"halving_shares needs rounds >= 1. Got {rounds!r} instead."
        raise ValueError(msg)
    return [math.ldexp(epsilon, -min(r, rounds - 1)) for r in range(1, rounds + 1)]


class _Release:
    """One run's points in grid units and its keyed noise, recording what each draw spends."""

    def __init__(
        self,
        frame: pl.DataFrame | pl.LazyFrame,
        columns: str | Sequence[str],
        k: int,
        epsilon: float,
        bounds: Sequence[tuple[float, float]],
        secret: SecretLike,
        iterations: int,
        func: str,
    ) -> None:
        schema = schema_of(frame, func)
        self.columns = check_columns(columns, list(schema.names()), func)
        check_numeric(schema, self.columns, func)
        self.epsilon = check_epsilon(epsilon, func)
        self.k = check_int("k", k, func, low=1, high=10_000)
        self.iterations = check_int("iterations", iterations, func, low=1, high=MAX_ITERATIONS)
        refuse_data_bounds(bounds)
        box = check_bounds(bounds, self.columns, func, None)
        self.lows = np.array([box[c][0] for c in self.columns], dtype=np.float64)
        self.highs = np.array([box[c][1] for c in self.columns], dtype=np.float64)
        contribution_secret = release_secret(secret, func)
        points = private_points(
            frame, self.columns, key=None, max_contributions=1, secret=contribution_secret, func=func
        )
        self.label = f"benchmarks/baselines_004/{func}/" + "\x1f".join(self.columns)
        # The noise under the release's own key: other points (or another secret), other noise.
        self.key = release_key(
            contribution_secret, self.label, table_digest(contribution_secret, list(points.T))
        )
        # Canonical row order (lexicographic by coordinates): no draw depends on the row order.
        points = np.clip(points, self.lows, self.highs)
        self.points = points[np.lexsort(points.T[::-1])]
        self.middle = (self.lows + self.highs) / 2
        self.grid = grid_of(float(((self.highs - self.lows) / 2).max()), func)
        self.units = to_grid(self.points - self.middle, self.grid)
        low_units, high_units = (
            to_grid(self.lows - self.middle, self.grid),
            to_grid(self.highs - self.middle, self.grid),
        )
        # A row's units lie between those of the bounds (subtraction and rounding are monotone).
        self.reach = float(np.maximum(np.abs(low_units), np.abs(high_units)).sum())  # L1 of the largest row
        self.diameter = float((high_units - low_units).sum())  # L1 distance between any two rows
        self.spent: list[tuple[str, float]] = []

    def noise(self, stream: str, size: int, sensitivity: float, epsilon: float) -> np.ndarray:
        """``size`` discrete Laplace draws of scale ``sensitivity / epsilon``, recorded."""
        scale = sensitivity / epsilon
        self.spent.append((stream, sensitivity / scale))
        keys = np.arange(size, dtype=np.uint64)
        return discrete_laplace(self.key, stream_id(f"{self.label}/{stream}"), keys, scale)

    def to_box(self, units: np.ndarray) -> np.ndarray:
        return np.clip(self.middle + units * self.grid, self.lows, self.highs)

    def noisy_means(self, index: np.ndarray, epsilon: float, name: str, fallback: np.ndarray) -> np.ndarray:
        """One DPk-means round: noisy count and sum of the rows of each of the k groups
        ``index`` names (half of ``epsilon`` each); a group with noisy count <= 0 gets
        its ``fallback`` centre."""
        k, d = self.k, self.points.shape[1]
        counts = np.bincount(index, minlength=k) + self.noise(f"{name}/count", k, 1.0, epsilon / 2)
        sums = np.stack([np.bincount(index, weights=self.units[:, a], minlength=k) for a in range(d)], axis=1)
        sums = sums + self.noise(f"{name}/sum", k * d, self.reach, epsilon / 2).reshape(k, d)
        centres = fallback.copy()
        filled = counts > 0
        centres[filled] = self.to_box(sums[filled] / counts[filled, None])
        return centres

    def lloyd(self, centres: np.ndarray, shares: Sequence[float]) -> np.ndarray:
        """DPk-means' rounds from ``centres``, round t spending ``shares[t - 1]``."""
        for t, share in enumerate(shares, start=1):
            index, _ = nearest(self.points, centres)
            centres = self.noisy_means(index, share, f"iteration {t}", centres)
        return centres

    def fit(self, centres: np.ndarray, method: str) -> BaselineFit:
        total = math.fsum(eps for _, eps in self.spent)
        return BaselineFit(centres, total, tuple(self.spent), method)


def dp_kmeans_pp(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: str | Sequence[str],
    *,
    k: int,
    epsilon: float,
    bounds: Sequence[tuple[float, float]],
    secret: SecretLike = None,
    iterations: int = 5,
) -> BaselineFit:
    """DPk-means++ (paper 004's ref. [15]): k-means++ seeds released with noise, then
    DPk-means.

    What the sources say: DPk-means with its initial centres chosen by k-means++ (paper
    004), the Laplace noise added "in the process of initializing the selected center
    point and iterating the mean center point" (Fu and Li's DPk-means++).  What is
    assumed beyond that (the source's text was not available):

    * Seeding (round 0, epsilon / 2, split evenly over the k seeds): k-means++ (Arthur
      and Vassilvitskii) on the clipped rows -- the first seed a uniformly drawn row,
      each next one a row drawn with probability proportional to its squared distance to
      the nearest row already chosen -- each chosen row released as its grid units plus
      discrete Laplace noise of scale ``diameter / (epsilon / (2k))`` per coordinate,
      ``diameter`` the L1 distance (grid units) between opposite corners of the bounds.
      The draws are keyed uniforms over the rows in a canonical order.
    * Then ``iterations`` DPk-means rounds (module notes 1-2) from the noisy seeds.

    Privacy (epsilon-DP, add/remove one row).  Seed j is ``q(x_I) + Z`` for a row index
    I chosen in any way from the data and the seeds before it, and Z with density
    proportional to ``exp(-(epsilon_s / diameter) |z|_1)``.  Given the earlier seeds, its
    law is a mixture over rows of densities that are each within a factor
    ``exp(epsilon_s)`` of every other (any two rows are at most ``diameter`` apart), so
    on neighbouring tables its densities are too, whatever the mixture weights: the
    selection costs nothing beyond the noise, each seed costs ``epsilon_s = epsilon /
    (2k)``, the seeding epsilon / 2 (sequential composition).  The Lloyd rounds spend
    epsilon / 4, / 8, ..., the last what is left: counts sensitivity 1 at half a round's
    share, sums sensitivity ``sum_j (high_j - low_j) / 2`` (grid units) at the other half.
    In all exactly ``epsilon``; ``BaselineFit.spent`` records every draw's
    ``sensitivity / scale``.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        The points (one row per person); nulls, NaN and an empty table are refused.
    columns : str or sequence of str
        The numeric coordinates.
    k : int
        Number of centres.
    epsilon : float
        The budget of the whole run (> 0).
    bounds : sequence of (low, high)
        Public bounds, one pair per column; rows outside are clipped.
    secret : Secret, str, bytes or None
        The run's secret (None: fresh OS entropy); guessable secrets are refused.
    iterations : int
        DPk-means rounds after the seeding, in [1, 50].

    Returns
    -------
    BaselineFit

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> rng = np.random.default_rng(0)
    >>> xy = np.concatenate([rng.normal(-2, 0.3, (5000, 2)), rng.normal(2, 0.3, (5000, 2))])
    >>> df = pl.DataFrame({"x": xy[:, 0], "y": xy[:, 1]})
    >>> fit = dp_kmeans_pp(df, ["x", "y"], k=2, epsilon=1.0, bounds=[(-4, 4)] * 2, secret=ppdm.Secret.for_tests(3))
    >>> fit.epsilon, [round(e, 4) for e in fit.per_round().values()]
    (1.0, [0.5, 0.25, 0.125, 0.0625, 0.0312, 0.0312])

    References
    ----------
    Paper 004's ref. [15]; Arthur and Vassilvitskii, SODA 2007; Fu and Li, Netinfo
    Security 2019; Blum et al., PODS 2005 (see the module documentation).
    """
    run = _Release(frame, columns, k, epsilon, bounds, secret, iterations, "dp_kmeans_pp")
    shares = halving_shares(run.epsilon, 1 + run.iterations)
    points, k, d = run.points, run.k, run.points.shape[1]
    n = len(points)
    u = uniform(run.key, stream_id(f"{run.label}/init/pick"), np.arange(k, dtype=np.uint64))
    chosen = [min(int(u[0] * n), n - 1)]
    distance = ((points - points[chosen[0]]) ** 2).sum(axis=1)
    for j in range(1, k):
        total = float(distance.sum())
        if total > 0:
            pick = int(np.searchsorted(np.cumsum(distance), u[j] * total, side="right"))
        else:  # every row on a seed already: any row
            pick = int(u[j] * n)
        chosen.append(min(pick, n - 1))
        distance = np.minimum(distance, ((points - points[chosen[-1]]) ** 2).sum(axis=1))
    seed_epsilon = shares[0] / k
    noisy = np.stack(
        [
            run.units[i] + run.noise(f"init/seed {j + 1}", d, run.diameter, seed_epsilon)
            for j, i in enumerate(chosen)
        ]
    )
    return run.fit(run.lloyd(run.to_box(noisy), shares[1:]), "DPk-means++")


def idp_kmeans(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: str | Sequence[str],
    *,
    k: int,
    epsilon: float,
    bounds: Sequence[tuple[float, float]],
    secret: SecretLike = None,
    iterations: int = 5,
) -> BaselineFit:
    """IDPk-means (Li, Wen, Xie 2013; paper 004's ref. [11]): DPk-means from initial
    centres that are noisy means of a fixed partition of the space.

    What the sources say: IDPk-means is DPk-means with an improved choice of the initial
    centres, and is epsilon-DP (paper 004; the source's abstract).  What is assumed
    beyond that (the source's text was not available): the initial centres are the noisy
    means of k parts of the data fixed in advance -- the public box cut into k bands of
    equal width across its main diagonal (a row's band: ``floor(k s)``, ``s`` the mean
    of its coordinates rescaled to [0, 1] by the bounds) -- instead of DPk-means' random
    points.  A band whose noisy count is <= 0 gets the point of the diagonal at its
    middle (``low + (b + 1/2) / k (high - low)``: the classic "k points spread along the
    diagonal" start).  The partition depends on the bounds only, never on the data.

    Privacy (epsilon-DP, add/remove one row).  Round 0 is a DPk-means round over the
    bands instead of the nearest-centre cells: each row is in exactly one band, so the k
    noisy counts (sensitivity 1) spend epsilon / 4 and the k noisy sums (sensitivity
    ``sum_j (high_j - low_j) / 2`` in grid units) epsilon / 4: round 0 spends epsilon /
    2.  The ``iterations`` Lloyd rounds then spend epsilon / 4, / 8, ..., the last what is
    left (module notes 1-2): exactly ``epsilon`` in all, by sequential composition;
    ``BaselineFit.spent`` records every draw's ``sensitivity / scale``.

    Parameters
    ----------
    frame, columns, k, epsilon, bounds, secret, iterations
        As :func:`dp_kmeans_pp`.

    Returns
    -------
    BaselineFit

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> rng = np.random.default_rng(0)
    >>> xy = np.concatenate([rng.normal(-2, 0.3, (5000, 2)), rng.normal(2, 0.3, (5000, 2))])
    >>> df = pl.DataFrame({"x": xy[:, 0], "y": xy[:, 1]})
    >>> fit = idp_kmeans(df, ["x", "y"], k=2, epsilon=1.0, bounds=[(-4, 4)] * 2, secret=ppdm.Secret.for_tests(3))
    >>> sorted(fit.centres[:, 0].round(0).tolist()), fit.epsilon
    ([-2.0, 2.0], 1.0)

    References
    ----------
    Li, Wen, Xie, Computer Science 40(3), 2013; Blum et al., PODS 2005 (see the module
    documentation).
    """
    run = _Release(frame, columns, k, epsilon, bounds, secret, iterations, "idp_kmeans")
    shares = halving_shares(run.epsilon, 1 + run.iterations)
    k, width = run.k, run.highs - run.lows
    position = ((run.points - run.lows) / width).mean(axis=1)
    band = np.clip(np.floor(position * k), 0, k - 1).astype(np.int64)
    diagonal = run.lows + ((np.arange(k) + 0.5) / k)[:, None] * width
    start = run.noisy_means(band, shares[0], "init", diagonal)
    return run.fit(run.lloyd(start, shares[1:]), "IDPk-means")
