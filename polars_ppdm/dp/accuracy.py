"""How much a noisy figure is worth: the noise's standard deviation and 95% interval.

For two-sided geometric noise (counts) the interval is the exact smallest integer t with
P(|noise| <= t) >= level, so its coverage is at least the level (more for small scales:
the distribution is discrete); for Laplace noise (sums) it is ``scale x ln(1 / (1 -
level))``, exact.
"""

from __future__ import annotations

import math

from polars_ppdm.kernels.dp_noise import discrete_laplace_variance

__all__ = ["geometric_interval", "geometric_sd", "laplace_interval", "laplace_sd"]


def geometric_interval(scale: float, level: float = 0.95) -> int:
    """The smallest t with P(|X| <= t) >= level for two-sided geometric noise of
    ``scale`` (alpha = exp(-1/scale)): P(|X| > t) = 2 alpha^(t+1) / (1 + alpha).

    Examples
    --------
    >>> geometric_interval(2.0)
    6
    """
    alpha = math.exp(-1.0 / scale)
    if alpha == 0.0:  # scale below ~1/745: the noise is 0
        return 0
    t = math.log((1 - level) * (1 + alpha) / 2) / math.log(alpha) - 1
    return max(0, math.ceil(t - 1e-9))


def geometric_sd(scale: float) -> float:
    """The standard deviation of two-sided geometric noise: sqrt(2 alpha) / (1 - alpha)."""
    return math.sqrt(discrete_laplace_variance(scale))


def laplace_interval(scale: float, level: float = 0.95) -> float:
    """The half-width t with P(|X| <= t) = level for Laplace noise of ``scale``."""
    return scale * math.log(1 / (1 - level))


def laplace_sd(scale: float) -> float:
    """The standard deviation of Laplace noise: sqrt(2) x scale."""
    return math.sqrt(2.0) * scale
