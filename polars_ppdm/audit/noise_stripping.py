"""How much additive noise an attacker strips from correlated columns (PCA-DR).

References
----------
Huang, Du, Chen, "Deriving private information from randomized data", SIGMOD 2005;
Wen Han (2006), paper 003, chapter 4.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from polars_ppdm.audit._aligned import aligned_numeric
from polars_ppdm.exceptions import InvalidParameterError, PrivacyLeakWarning
from polars_ppdm.mine.covariance import pca_reconstruct
from polars_ppdm.perturb.noise import noise_variances

__all__ = ["pca_noise_stripping"]


def pca_noise_stripping(
    original: pl.DataFrame | pl.LazyFrame,
    noisy: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    *,
    dist: str = "gaussian",
    scale: float | Sequence[float] | Mapping[str, float],
    components: int | None = None,
) -> pl.DataFrame:
    """Per column: the RMS error of the released (noisy) values and of an attacker's
    PCA reconstruction from them, and the share of the noise the attack removes.

    ``dist`` and ``scale`` are the noise that was added (as :func:`polars_ppdm.add_noise`),
    which the attacker knows: the noise law is public.  Rows must be aligned (same order).  A ``stripped`` near 1 means the noise protects
    little: the columns are so correlated that the released rows give the originals back.
    A released column equal to the original (``noise_rms`` 0: the noise was rounded away
    by values far larger than the scale) has ``stripped`` NaN, with a
    :class:`~polars_ppdm.PrivacyLeakWarning`.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> import polars_ppdm as ppdm
    >>> z = np.random.default_rng(0).normal(0, 5, 20_000)
    >>> df = pl.DataFrame({c: z for c in "abcdefgh"})                 # eight copies of one column
    >>> noisy = ppdm.add_noise(df, list("abcdefgh"), scale=2.0, secret=1)
    >>> report = ppdm.audit.pca_noise_stripping(df, noisy, list("abcdefgh"), dist="gaussian", scale=2.0)
    >>> report["stripped"].round(1).to_list()                         # 1 - sqrt(p / m) = 0.65
    [0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    """
    func = "pca_noise_stripping"
    original, noisy, cols = aligned_numeric(original, noisy, columns, func)
    noise_variances(dist, scale, cols, func)  # > 0 and finite: there is noise to strip on every column
    not_finite = [c for c in cols if not original[c].cast(pl.Float64).is_finite().all()]
    if not_finite:
        msg = f"{func}: the original columns {not_finite} hold NaN or infinite values."
        raise InvalidParameterError(msg)
    attack = pca_reconstruct(noisy, cols, dist=dist, scale=scale, components=components)
    rows = []
    for c in cols:
        truth = original[c].cast(pl.Float64).to_numpy()
        noise_rms = _rms(noisy[c].cast(pl.Float64).to_numpy(), truth)
        attack_rms = _rms(attack[c].to_numpy(), truth)
        if noise_rms == 0:
            msg = (
                f"{func}: the released column {c!r} equals the original (noise_rms 0): the noise was "
                "lost, e.g. rounded away by values far larger than the scale. Its 'stripped' is NaN."
            )
            warnings.warn(msg, PrivacyLeakWarning, stacklevel=2)
        rows.append(
            {
                "column": c,
                "noise_rms": noise_rms,
                "attack_rms": attack_rms,
                "stripped": 1 - attack_rms / noise_rms if noise_rms > 0 else math.nan,
            }
        )
    return pl.DataFrame(rows)


def _rms(values: np.ndarray, truth: np.ndarray) -> float:
    """The root mean square of ``values - truth``, scaled so that no square overflows."""
    diff = values / 2 - truth / 2  # halves: the difference of two finite floats stays finite
    top = float(np.max(np.abs(diff)))
    if top == 0 or not math.isfinite(top):
        return 2 * top
    return 2 * top * math.sqrt(float(np.mean((diff / top) ** 2)))
