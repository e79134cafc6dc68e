"""The Agrawal-Srikant iterative Bayes reconstruction over intervals (pure NumPy).

Each iteration costs ``intervals x noisy bins``, never rows:

``f(a) <- sum_b (n_b / n) K(b, a) f(a) / sum_a' K(b, a') f(a')``

where ``K(b, a)`` is the probability that a value of interval a lands, after noise, in
noisy bin b.  Stopping rule: the iteration stops as soon as the noisy histogram that the
estimate predicts fits the observed one as well as sampling noise allows (Pearson
chi-square at or below its degrees of freedom, its expected value: more iterations would
fit the sampling noise; the 95% quantile stops too early and blurs modes), or when no
interval moves by more than ``tol``, or after ``max_iter`` iterations.

References
----------
Agrawal, Srikant, "Privacy-preserving data mining", SIGMOD 2000; Wen Han (2006), paper
003, chapter 4.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["reconstruct_histogram", "transition"]

_SUBPOINTS = 16  # points per interval at which the noise density is averaged


def _noise_cdf(dist: str, scale: float, t: np.ndarray) -> np.ndarray:
    # A subnormal scale makes t / scale overflow to +-inf, where the CDF is its limit (0
    # or 1): the exact answer for noise that small, so the overflow is not a warning.
    with np.errstate(over="ignore"):
        if dist == "uniform":
            return np.clip((t + scale) / (2 * scale), 0.0, 1.0)
        erf = np.vectorize(math.erf, otypes=[float])
        return 0.5 * (1.0 + erf(t / (scale * math.sqrt(2.0))))


def transition(edges: np.ndarray, noisy_edges: np.ndarray, dist: str, scale: float) -> np.ndarray:
    """``K[b, a]``: P(value of interval a, plus noise, lands in noisy bin b); the outer
    noisy bins reach to +-infinity, so every column sums to 1."""
    width = np.diff(edges)
    bounds = noisy_edges.copy()
    bounds[0], bounds[-1] = -np.inf, np.inf
    K = np.zeros((len(noisy_edges) - 1, len(width)))
    for s in range(_SUBPOINTS):  # one sub-point at a time: memory of K, not 16 times K
        points = edges[:-1] + width * (s + 0.5) / _SUBPOINTS  # (a,)
        K += np.diff(_noise_cdf(dist, scale, bounds[:, None] - points[None, :]), axis=0)
    return K / _SUBPOINTS


def reconstruct_histogram(
    counts: np.ndarray, K: np.ndarray, *, tol: float = 1e-7, max_iter: int = 2000
) -> tuple[np.ndarray, int]:
    """The iterative Bayes estimate (frequencies over intervals) and its iteration count."""
    n = counts.sum()
    observed = counts / n
    f = np.full(K.shape[1], 1.0 / K.shape[1])  # start from uniform
    degrees = max(int((counts > 0).sum()) - 1, 1)  # the expected chi-square of a right model
    for iteration in range(1, max_iter + 1):
        predicted = K @ f
        share = np.divide(observed, predicted, out=np.zeros_like(observed), where=predicted > 0)
        updated = f * (K.T @ share)
        updated /= updated.sum()
        change = np.abs(updated - f).max()
        f = updated
        expected = n * (K @ f)
        fit = expected > 0
        chi2 = float((((counts - expected) ** 2)[fit] / expected[fit]).sum())
        if chi2 <= degrees or change < tol:
            return f, iteration
    return f, max_iter
