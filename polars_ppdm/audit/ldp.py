"""Local differential privacy of randomized response."""

from __future__ import annotations

import math

from polars_ppdm._validation import check_fraction, check_int, check_p_or_epsilon
from polars_ppdm.kernels.rr import keep_from_epsilon

__all__ = ["rr_epsilon", "rr_p_from_epsilon"]


def _check_k(k: int, func: str) -> int:
    return check_int("k", k, func, low=2)


def rr_epsilon(p: float, k: int = 2) -> float:
    """The local-DP epsilon of k-ary randomized response that keeps a value with prob. p.

    ``eps = |ln(p (k-1) / (1-p))|``: the largest ratio between the probabilities of one
    output under two inputs.  ``inf`` for p = 1 (the truth is published) and for p = 0
    with k = 2 (the negation is published); 0 for p = 1/k (no information, and no
    estimate either).  With m attributes disguised independently, the record's epsilon is
    the sum over attributes; whole-record disguise of binary columns has the epsilon of
    one binary coin.

    Examples
    --------
    >>> round(rr_epsilon(0.75), 4)  # ln 3
    1.0986
    >>> rr_epsilon(1.0)
    inf
    """
    p = check_fraction("p", p, "rr_epsilon")
    k = _check_k(k, "rr_epsilon")
    lie = (1.0 - p) / (k - 1)
    if p == 0.0 or lie == 0.0:
        return math.inf
    return abs(math.log(p / lie))


def rr_p_from_epsilon(epsilon: float, k: int = 2) -> float:
    """The keep probability of k-ary randomized response at local-DP ``epsilon``.

    ``p = e^eps / (e^eps + k - 1)``.

    Examples
    --------
    >>> round(rr_p_from_epsilon(math.log(3)), 6)
    0.75
    """
    check_p_or_epsilon(None, epsilon, "rr_p_from_epsilon")
    k = _check_k(k, "rr_p_from_epsilon")
    return keep_from_epsilon(epsilon, k)
