"""Shared helpers for statistical tests: standard errors of the estimators we check.

Statistical tests use fixed seeds and a tolerance of ``Z`` standard errors of the checked
estimator (DESIGN.md, Conventions): a two-sided normal tail of 5 SE is 5.7e-7, so a
failure means a bug, not bad luck.
"""

from __future__ import annotations

import math

import numpy as np

Z = 5.0  # standard errors in every statistical tolerance


def sample_variance_se(variance: float, mu4: float, n: int) -> float:
    """Standard error of the sample variance ``s^2`` (ddof=1) of ``n`` iid draws.

    ``Var(s^2) = (mu4 - (n - 3) / (n - 1) * sigma^4) / n`` with ``mu4`` the fourth
    central moment (exact for any distribution with four moments).
    """
    return math.sqrt((mu4 - (n - 3) / (n - 1) * variance**2) / n)


def sample_variance_se_from(sample: np.ndarray, axis: int = 0) -> np.ndarray:
    """The same standard error with sigma^2 and mu4 estimated from ``sample`` itself
    (plug-in), along ``axis``."""
    sample = np.asarray(sample, dtype=np.float64)
    n = sample.shape[axis]
    centred = sample - sample.mean(axis=axis, keepdims=True)
    variance = (centred**2).mean(axis=axis)
    mu4 = (centred**4).mean(axis=axis)
    return np.sqrt(np.clip(mu4 - (n - 3) / (n - 1) * variance**2, 0.0, None) / n)
