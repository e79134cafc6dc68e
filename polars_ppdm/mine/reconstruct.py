"""Reconstruction of a distribution from additively perturbed values (Agrawal-Srikant).

The noisy column is binned once (a Polars group-by); each iteration of the Bayes rule
then costs ``intervals x noisy bins``, never rows:

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
from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_ppdm._bounds import check_bounds
from polars_ppdm._frame import as_lazy, schema_of
from polars_ppdm._validation import check_columns, check_numeric
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.perturb.noise import check_noise

__all__ = ["reconstruct_distribution", "reconstruct_histogram", "transition"]

_FUNC = "reconstruct_distribution"
_SUBPOINTS = 16  # points per interval at which the noise density is averaged


def _noise_cdf(dist: str, scale: float, t: np.ndarray) -> np.ndarray:
    if dist == "uniform":
        return np.clip((t + scale) / (2 * scale), 0.0, 1.0)
    erf = np.vectorize(math.erf, otypes=[float])
    return 0.5 * (1.0 + erf(t / (scale * math.sqrt(2.0))))


def transition(edges: np.ndarray, noisy_edges: np.ndarray, dist: str, scale: float) -> np.ndarray:
    """``K[b, a]``: P(value of interval a, plus noise, lands in noisy bin b); the outer
    noisy bins reach to +-infinity, so every column sums to 1."""
    width = np.diff(edges)
    points = edges[:-1, None] + width[:, None] * (np.arange(_SUBPOINTS) + 0.5) / _SUBPOINTS  # (a, s)
    bounds = noisy_edges.copy()
    bounds[0], bounds[-1] = -np.inf, np.inf
    cdf = _noise_cdf(dist, scale, bounds[:, None, None] - points[None, :, :])  # (b+1, a, s)
    return np.diff(cdf, axis=0).mean(axis=2)


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


def reconstruct_distribution(
    frame: pl.DataFrame | pl.LazyFrame,
    column: str,
    *,
    dist: str,
    scale: float,
    bins: int = 50,
    bounds: tuple[float, float] | Sequence[float],
    tol: float = 1e-7,
    max_iter: int = 2000,
) -> pl.DataFrame:
    """Estimate the histogram of the original values behind a noisy column.

    Parameters
    ----------
    frame : polars.DataFrame or polars.LazyFrame
        Holds the noisy column (``x + r``); nulls are left out.
    column : str
        The noisy numeric column.
    dist, scale
        The noise added (as :func:`polars_ppdm.add_noise`): public by design.
    bins : int
        Intervals of the original domain (>= 2).
    bounds : (low, high)
        The original values' domain; the noisy values are binned with the same width
        over it widened by the noise's reach (uniform: a; gaussian: 4 sigma), outer
        bins catching the rest.
    tol, max_iter
        Secondary stopping rules (see the module documentation for the main one).

    Returns
    -------
    polars.DataFrame
        ``bin``, ``low``, ``high``, ``frequency`` (sums to 1) and ``count``
        (frequency times the number of non-null values).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> x = np.random.default_rng(0).choice([2.0, 8.0], 20_000) + np.random.default_rng(1).normal(0, 0.3, 20_000)
    >>> noisy = ppdm.add_noise(pl.DataFrame({"x": x}), "x", dist="gaussian", scale=2.0, seed=5)
    >>> h = ppdm.reconstruct_distribution(noisy, "x", dist="gaussian", scale=2.0, bins=10, bounds=(0, 10))
    >>> h["frequency"].round(1).to_list()  # two modes come back out of the noise
    [0.0, 0.2, 0.3, 0.0, 0.0, 0.0, 0.0, 0.3, 0.2, 0.0]
    """
    schema = schema_of(frame, _FUNC)
    (col,) = check_columns([column], list(schema.names()), _FUNC)
    check_numeric(schema, [col], _FUNC)
    dist, scale = check_noise(dist, scale, _FUNC)
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 2:
        msg = f"The 'bins' parameter of {_FUNC} must be an int >= 2. Got {bins!r} instead."
        raise InvalidParameterError(msg)
    ((low, high),) = check_bounds(bounds, [col], _FUNC, None).values()
    width = (high - low) / bins
    reach = scale if dist == "uniform" else 4 * scale
    pad = math.ceil(reach / width)
    noisy_bins = bins + 2 * pad
    start = low - pad * width
    index = (
        ((pl.col(col).cast(pl.Float64) - start) / width)
        .floor()
        .clip(0, noisy_bins - 1)
        .cast(pl.Int64, strict=False)
    )
    grouped = (
        as_lazy(frame)
        .filter(pl.col(col).is_not_null())
        .group_by(index.alias("b"))
        .agg(pl.len().alias("n"))
        .collect(engine="streaming")
    )
    if grouped["b"].null_count():
        msg = f"{_FUNC}: the column {col!r} holds NaN values; drop them or make them null."
        raise InvalidParameterError(msg)
    counts = np.zeros(noisy_bins)
    counts[grouped["b"].to_numpy()] = grouped["n"].to_numpy()
    if counts.sum() == 0:
        msg = f"{_FUNC}: the column {col!r} has no non-null values."
        raise InvalidParameterError(msg)
    edges = low + width * np.arange(bins + 1)
    edges[-1] = high
    K = transition(edges, start + width * np.arange(noisy_bins + 1), dist, scale)
    f, _ = reconstruct_histogram(counts, K, tol=tol, max_iter=max_iter)
    return pl.DataFrame(
        {
            "bin": np.arange(bins),
            "low": edges[:-1],
            "high": edges[1:],
            "frequency": f,
            "count": f * counts.sum(),
        }
    )
