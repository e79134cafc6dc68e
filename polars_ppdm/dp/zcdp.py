"""Zero-concentrated differential privacy (zCDP): conversions to and from (epsilon, delta).

rho-zCDP (Bun and Steinke 2016) composes by addition: k releases of rho_i cost
``sum(rho_i)``, and the (epsilon, delta) it means grows with the square root of the
number of releases, where basic composition of pure epsilon grows linearly.  A budget
given as (epsilon, delta) becomes the largest rho whose conversion stays within it.

The conversion is Canonne, Kamath and Steinke's (2020, Proposition 12 / Corollary 13),
the tightest known for zCDP and the one OpenDP calls ``cks20``: rho-zCDP implies
(epsilon, delta)-DP for every alpha > 1 with ::

    epsilon = alpha rho + (log(1/delta) + (alpha - 1) log(alpha - 1) - alpha log(alpha)) / (alpha - 1)

and :func:`rho_to_epsilon` takes the smallest over alpha (every alpha gives a valid
guarantee, so the minimum found is one too).  It agrees with OpenDP 0.16's
``make_zCDP_to_approxDP`` to 1e-15 (``tests/test_zcdp.py``).

Pure epsilon-DP implies (epsilon^2 / 2)-zCDP (Bun and Steinke 2016, Proposition 1.4):
:func:`rho_of_pure_epsilon`, how a Laplace release enters a zCDP budget.

References
----------
Bun, Steinke, "Concentrated differential privacy: simplifications, extensions, and lower
bounds", TCC 2016.  Canonne, Kamath, Steinke, "The discrete Gaussian for differential
privacy", NeurIPS 2020.
"""

from __future__ import annotations

import functools
import math

from polars_ppdm._validation import check_real

__all__ = ["check_rho", "rho_for", "rho_of_pure_epsilon", "rho_to_epsilon"]

_GOLDEN = (math.sqrt(5) - 1) / 2


def check_rho(rho: object, func: str, name: str = "rho") -> float:
    """A finite float > 0."""
    return check_real(name, rho, func, low=0, open_low=True)


def _check_delta(delta: object, func: str) -> float:
    return check_real("delta", delta, func, low=0, high=1, open_low=True, open_high=True)


def _epsilon_at(rho: float, log_inv_delta: float, u: float) -> float:
    """The epsilon of CKS Corollary 13 at alpha = 1 + e^u (u = log(alpha - 1): alpha
    near 1 stays exact)."""
    above = math.exp(u)  # alpha - 1
    alpha = 1.0 + above
    return alpha * rho + (log_inv_delta + above * u - alpha * math.log1p(above)) / above


def rho_to_epsilon(rho: float, delta: float) -> float:
    """The epsilon that rho-zCDP means at ``delta`` (CKS 2020, the tight conversion).

    Parameters
    ----------
    rho : float
        The zCDP budget, > 0.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The smallest epsilon of Canonne, Kamath and Steinke's Corollary 13 over
        alpha > 1: the release is (epsilon, delta)-DP.

    Examples
    --------
    >>> round(rho_to_epsilon(0.5, 1e-6), 9)
    5.221534445
    >>> round(rho_to_epsilon(365 * 0.0025, 1e-6), 3)  # a year of nightly releases
    7.365

    References
    ----------
    Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy",
    NeurIPS 2020, Corollary 13.
    """
    func = "rho_to_epsilon"
    return _rho_to_epsilon(check_rho(rho, func), _check_delta(delta, func))


# Cached: pure functions of two floats, asked again and again by accountants, reports and
# the ledger (a conversion costs ~1.6 ms, rho_for ~60 of them); checked arguments only.
@functools.lru_cache(maxsize=1024)
def _rho_to_epsilon(rho: float, delta: float) -> float:
    log_inv_delta = -math.log(delta)

    def f(u: float) -> float:
        return _epsilon_at(rho, log_inv_delta, u)

    # A grid over log(alpha - 1), then golden-section search around its best point (the
    # bound is unimodal in alpha).
    low, high, steps = -30.0, 40.0, 1400
    grid = [low + (high - low) * i / steps for i in range(steps + 1)]
    values = [f(u) for u in grid]
    best = min(range(len(grid)), key=values.__getitem__)
    a, b = grid[max(best - 1, 0)], grid[min(best + 1, steps)]
    for _ in range(120):
        c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
        if f(c) < f(d):
            b = d
        else:
            a = c
    return min(f((a + b) / 2), values[best])


def rho_for(epsilon: float, delta: float) -> float:
    """The largest rho whose (epsilon, delta) conversion (:func:`rho_to_epsilon`) is
    within ``epsilon`` at ``delta``: an (epsilon, delta) budget as a zCDP budget.

    Examples
    --------
    >>> rho = rho_for(8.0, 1e-6)
    >>> round(rho, 4), rho_to_epsilon(rho, 1e-6) <= 8.0
    (1.0524, True)
    """
    func = "rho_for"
    return _rho_for(check_real("epsilon", epsilon, func, low=0, open_low=True), _check_delta(delta, func))


@functools.lru_cache(maxsize=1024)
def _rho_for(epsilon: float, delta: float) -> float:
    # rho_to_epsilon is increasing in rho; bisect on a bracket [low, high].
    low, high = 0.0, max(epsilon, 1e-300)
    while _rho_to_epsilon(high, delta) <= epsilon:
        low, high = high, high * 2
    for _ in range(200):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        if _rho_to_epsilon(mid, delta) <= epsilon:
            low = mid
        else:
            high = mid
    return low


def rho_of_pure_epsilon(epsilon: float) -> float:
    """``epsilon^2 / 2``: the zCDP cost of a pure epsilon-DP release (Bun and Steinke 2016,
    Proposition 1.4), how a Laplace release enters a zCDP budget.

    Examples
    --------
    >>> rho_of_pure_epsilon(0.1)
    0.005000000000000001
    """
    epsilon = check_real("epsilon", epsilon, "rho_of_pure_epsilon", low=0, open_low=True)
    return epsilon * epsilon / 2
