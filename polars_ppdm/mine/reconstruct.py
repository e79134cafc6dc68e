"""Reconstruction of a distribution from additively perturbed values (Agrawal-Srikant).

The noisy column is binned once (a Polars group-by); the iterations run on the bin
counts (:mod:`polars_ppdm.kernels.reconstruct`, where the stopping rule is described).

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
from polars_ppdm._validation import check_columns, check_int, check_numeric, check_real
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.reconstruct import reconstruct_histogram, transition
from polars_ppdm.perturb.noise import check_noise

__all__ = ["reconstruct_distribution"]

_FUNC = "reconstruct_distribution"
# The transition matrix (noisy bins x bins doubles) and one array of noise CDFs of the
# same size: 25M cells keep them under 400 MB.
_MAX_TRANSITION_CELLS = 25_000_000
# The most iterations: each costs two products with that matrix (from ~20 us for 10
# intervals to ~0.1 s at 25M cells).  The chi-square rule stops after tens to hundreds;
# max_iter = 10^11 with tol = 0 ran for hours.
MAX_ITER = 100_000


def reconstruct_distribution(
    frame: pl.DataFrame | pl.LazyFrame,
    column: str,
    *,
    dist: str = "gaussian",
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
        Secondary stopping rules (see the module documentation for the main one);
        ``max_iter`` at most 100,000.

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
    >>> noisy = ppdm.add_noise(pl.DataFrame({"x": x}), "x", dist="gaussian", scale=2.0, secret=5)
    >>> h = ppdm.reconstruct_distribution(noisy, "x", dist="gaussian", scale=2.0, bins=10, bounds=(0, 10))
    >>> h["frequency"].round(1).to_list()  # two modes come back out of the noise
    [0.0, 0.2, 0.3, 0.0, 0.0, 0.0, 0.0, 0.3, 0.2, 0.0]
    """
    schema = schema_of(frame, _FUNC)
    (col,) = check_columns([column], list(schema.names()), _FUNC, name="column")
    check_numeric(schema, [col], _FUNC)
    dist, scale = check_noise(dist, scale, _FUNC)
    bins = check_int("bins", bins, _FUNC, low=2)
    tol = check_real("tol", tol, _FUNC, low=0)
    max_iter = check_int(
        "max_iter",
        max_iter,
        _FUNC,
        low=1,
        high=MAX_ITER,
        why=" (each iteration multiplies the noisy bins x bins transition matrix twice; the chi-square rule stops after hundreds)",
    )
    ((low, high),) = check_bounds(bounds, [col], _FUNC, None).values()
    width = (high - low) / bins
    reach = scale if dist == "uniform" else 4 * scale
    if not math.isfinite(reach / width):  # scale 1e308: 4 * scale overflows, the padding never ends
        msg = (
            f"The 'scale' parameter of {_FUNC} must leave the noise's reach ({reach:g}) finite in units "
            f"of the interval width ({width:.3g}). Got {scale!r} instead."
        )
        raise InvalidParameterError(msg)
    pad = math.ceil(reach / width)
    noisy_bins = bins + 2 * pad
    if noisy_bins * bins > _MAX_TRANSITION_CELLS:
        why = (
            "intervals much narrower than the noise cannot be told apart anyway"
            if width < reach
            else "or split the domain"
        )
        msg = (
            f"The 'bins' parameter of {_FUNC}: {bins} intervals of width {width:.3g}, with noise "
            f"reaching {reach:.3g} beyond the bounds, make a {noisy_bins:,} x {bins} transition "
            f"matrix (more than {_MAX_TRANSITION_CELLS:,} cells). Use fewer bins ({why})."
        )
        raise InvalidParameterError(msg)
    start = low - pad * width
    x = pl.col(col).cast(pl.Float64)
    # Non-finite values get a null bin, refused below with the NaN.  The bounds are
    # closed: a value at ``high`` is in the last interval's bin, not the one above it.
    index = pl.when(x.is_finite()).then(
        pl.when(x == high)
        .then(pad + bins - 1)
        .otherwise(((x - start) / width).floor().clip(0, noisy_bins - 1))
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
        msg = f"{_FUNC}: the column {col!r} holds NaN or infinite values; drop them or make them null."
        raise InvalidParameterError(msg)
    counts = np.zeros(noisy_bins)
    counts[grouped["b"].to_numpy()] = grouped["n"].to_numpy()
    if counts.sum() == 0:
        msg = f"{_FUNC}: the column {col!r} has no non-null values."
        raise InvalidParameterError(msg)
    edges = low + width * np.arange(bins + 1)
    edges[-1] = high
    K = transition(edges, start + width * np.arange(noisy_bins + 1), dist, scale)
    unreachable = (K.sum(axis=1) == 0) & (counts > 0)
    if unreachable.any():
        # No interval reaches them (the noise averaged over each interval's sub-points):
        # no estimate explains them, and the iteration would divide 0 by 0.
        msg = (
            f"{_FUNC}: values of the column {col!r} lie in noisy bins that "
            f"{dist} noise of scale {scale:g} does not reach from any interval of the 'bounds' ({low:g}, {high:g}); "
            "widen the bounds, use more bins or check the 'scale' parameter."
        )
        raise InvalidParameterError(msg)
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
