"""Covariance and PCA reconstruction from additively perturbed columns (paper 003, ch. 4).

With independent noise of variance sigma^2 on every column, ``Cov(Y) = Cov(X) +
sigma^2 I``: the off-diagonal covariances are those of the original data, and the
variances exceed them by sigma^2.  PCA-DR projects the noisy rows on the top p
eigenvectors of that estimate, ``X_hat = mean + (Y - mean) Q_p Q_p^T``: when the columns
are correlated (the data live near a p-dimensional subspace), most of the noise lies
outside it and is stripped -- an analyst's tool, and an attacker's
(:func:`polars_ppdm.audit.pca_noise_stripping`).

References
----------
Wen Han (2006), paper 003, chapter 4; Huang, Du, Chen, "Deriving private information
from randomized data", SIGMOD 2005.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from polars_ppdm._affine import affine_exprs
from polars_ppdm._frame import Frame, as_lazy, like, schema_of
from polars_ppdm._validation import check_columns, check_int, check_numeric, check_output_names
from polars_ppdm.exceptions import EstimateWarning, InvalidParameterError
from polars_ppdm.perturb.noise import noise_variances

__all__ = ["estimate_covariance", "pca_reconstruct", "principal_axes"]


def _noise_variances(dist: object, scale: object, cols: list[str], func: str) -> np.ndarray:
    """The variance of the noise on each column (``scale`` 0: a column left without noise)."""
    variances = noise_variances(dist, scale, cols, func, allow_zero=True)
    return np.array([variances[c] for c in cols])


def _subtract_noise(cov: np.ndarray, noise: np.ndarray, n: int, cols: list[str], func: str) -> np.ndarray:
    """``Cov(Y) - diag(noise)``, with an :class:`EstimateWarning` for each variance below 0.

    A negative variance means the declared noise is larger than the noise the column
    carries (a wrong ``scale``; 0 for a column that got none), or that the column's own
    variance is small next to the sampling error of ``Var(Y)``.  The standard error quoted
    is the Gaussian one, ``Var(Y) sqrt(2 / (n - 1))``.
    """
    observed = np.diag(cov).copy()
    cov = cov - np.diag(noise)
    for i in np.flatnonzero(np.diag(cov) < 0):
        se = observed[i] * np.sqrt(2.0 / (n - 1))
        # As Python floats: a subnormal standard error overflows the ratio to inf quietly.
        below = float(-cov[i, i]) / float(se) if se > 0 else np.inf
        below_text = f"{below:,.1f}" if below < 1e6 else f"{below:.3g}"
        msg = (
            f"{func}: the estimated variance of column {cols[i]!r} is {cov[i, i]:.4g}, "
            f"{below_text} standard errors below 0: the declared noise variance "
            f"{noise[i]:.4g} exceeds the noisy column's variance {observed[i]:.4g}. Check the "
            f"'scale' given for {cols[i]!r} (0 if it got no noise); the estimate is returned as computed."
        )
        warnings.warn(msg, EstimateWarning, stacklevel=3)
    return cov


def _moments(
    frame: pl.DataFrame | pl.LazyFrame, cols: list[str], func: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """Mean vector, sample covariance and row count over rows with no null (Polars)."""
    lazy = as_lazy(frame).select(pl.col(c).cast(pl.Float64) for c in cols).drop_nulls()
    pairs = [(i, j) for i in range(len(cols)) for j in range(i, len(cols))]
    row = (
        lazy.select(
            pl.len().alias("n"),
            *(pl.col(c).mean().alias(f"m{i}") for i, c in enumerate(cols)),
            *(pl.cov(cols[i], cols[j]).alias(f"c{i}_{j}") for i, j in pairs),
        )
        .collect(engine="streaming")
        .row(0, named=True)
    )
    n = int(row["n"])
    if n < 2:
        msg = f"{func} needs at least 2 rows without nulls in {cols}, and the table has fewer."
        raise InvalidParameterError(msg)
    mean = np.array([row[f"m{i}"] for i in range(len(cols))])
    cov = np.empty((len(cols), len(cols)))
    for i, j in pairs:
        cov[i, j] = cov[j, i] = row[f"c{i}_{j}"]
    if not (np.isfinite(mean).all() and np.isfinite(cov).all()):
        msg = (
            f"{func}: the columns {cols} hold NaN or infinite values, or values so large that their "
            "mean or covariance overflows a float."
        )
        raise InvalidParameterError(msg)
    return mean, cov, n


def estimate_covariance(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    *,
    dist: str = "gaussian",
    scale: float | Sequence[float] | Mapping[str, float],
) -> pl.DataFrame:
    """The covariance of the original columns: ``Cov(Y) - diag(noise variances)`` (rows
    with a null are left out).

    ``dist`` and ``scale`` are the noise :func:`polars_ppdm.add_noise` added: one scale,
    or one per column (a sequence or a mapping; 0 for a column that got no noise).  A
    variance estimate below 0 is returned as computed, with an
    :class:`~polars_ppdm.EstimateWarning` naming the column: the declared noise exceeds
    what the column carries, or sampling error dominates its variance.

    Returns
    -------
    polars.DataFrame
        A ``column`` column and one column per input column: the estimated matrix (an
        input column named ``column`` is refused: rename it first).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=100_000)
    >>> df = pl.DataFrame({"a": z, "b": 2 * z})
    >>> noisy = ppdm.add_noise(df, ["a", "b"], dist="gaussian", scale=1.0, secret=3)
    >>> ppdm.estimate_covariance(noisy, ["a", "b"], dist="gaussian", scale=1.0).drop("column").to_numpy().round(1).tolist()
    [[1.0, 2.0], [2.0, 4.0]]
    """
    func = "estimate_covariance"
    schema = schema_of(frame, func)
    cols = check_columns(columns, list(schema.names()), func)
    check_numeric(schema, cols, func)
    check_output_names(func, cols)  # a column named "column" would lose its values to the row names
    noise = _noise_variances(dist, scale, cols, func)
    _, cov, n = _moments(frame, cols, func)
    cov = _subtract_noise(cov, noise, n, cols, func)
    return pl.DataFrame({"column": cols, **{c: cov[:, i] for i, c in enumerate(cols)}})


def principal_axes(cov: np.ndarray, components: int) -> np.ndarray:
    """The top ``components`` eigenvectors (columns) of a symmetric matrix."""
    values, vectors = np.linalg.eigh(cov)
    return vectors[:, np.argsort(values)[::-1][:components]]


def pca_reconstruct(
    frame: Frame,
    columns: Sequence[str],
    *,
    dist: str = "gaussian",
    scale: float | Sequence[float] | Mapping[str, float],
    components: int | None = None,
) -> Frame:
    """PCA-DR: replace the noisy columns by their projection on the top p principal axes
    of the estimated original covariance, ``mean + (Y - mean) Q_p Q_p^T``.

    ``dist`` and ``scale`` are the noise added, as for :func:`estimate_covariance`.
    ``components`` defaults to the number of estimated eigenvalues above the mean noise
    variance sigma^2 (the directions where the data's spread exceeds the noise's).  Rows
    with a null stay null in the named columns.  The expected squared error per value is
    about ``sigma^2 p / m`` (m columns) when the data span p dimensions and the noise is
    the same on every column.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> z = np.random.default_rng(0).normal(0, 5, 50_000)
    >>> df = pl.DataFrame({c: z for c in "abcd"})                     # one dimension
    >>> noisy = ppdm.add_noise(df, list("abcd"), scale=1.0, secret=2)
    >>> rebuilt = ppdm.pca_reconstruct(noisy, list("abcd"), dist="gaussian", scale=1.0)
    >>> round(float(((rebuilt - df).to_numpy() ** 2).mean()), 2)     # sigma^2 p / m = 0.25
    0.25
    """
    func = "pca_reconstruct"
    schema = schema_of(frame, func)
    cols = check_columns(columns, list(schema.names()), func)
    check_numeric(schema, cols, func)
    noise = _noise_variances(dist, scale, cols, func)
    mean, cov, n = _moments(frame, cols, func)
    cov = _subtract_noise(cov, noise, n, cols, func)
    if components is None:
        components = max(1, int((np.linalg.eigvalsh(cov) > noise.mean()).sum()))
    else:
        components = check_int("components", components, func, low=1, high=len(cols))
    Q = principal_axes(cov, int(components))
    P = Q @ Q.T  # the projection, symmetric
    exprs = affine_exprs(cols, P, mean - P @ mean)  # mean + P (y - mean)
    return like(frame, as_lazy(frame).with_columns(exprs), engine="streaming")
