"""The noise of a DP release: the Laplace (pure epsilon) or the Gaussian (zCDP) mechanism.

Both are exact integer noise from the keyed PRF, on the same grids (counts in rows, sums
in grid units: :func:`polars_ppdm.kernels.dp_noise.grid_of`):

* ``"laplace"``: the discrete Laplace (two-sided geometric) of scale ``l1 / epsilon``,
  epsilon-DP for a query of L1 sensitivity ``l1``;
* ``"gaussian"``: the discrete Gaussian of ``sigma = l2 / sqrt(2 rho)``, rho-zCDP for a
  query of L2 sensitivity ``l2`` (Canonne, Kamath, Steinke 2020, Theorem 14).  A person
  who adds ``r`` rows to each of ``g`` groups changes the vector of counts by ``g r`` in
  L1 but only ``sqrt(g) r`` in L2: the Gaussian's noise grows with the square root of the
  groups a person touches, and its cost composes by addition of rho
  (:class:`~polars_ppdm.dp.accountant.BudgetAccountant` with zCDP accounting).

References
----------
Canonne, Kamath, Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020.
Ghosh, Roughgarden, Sundararajan, STOC 2009 (the geometric mechanism).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from polars_ppdm.dp.accountant import check_epsilon
from polars_ppdm.dp.accuracy import geometric_interval, geometric_sd
from polars_ppdm.dp.zcdp import check_rho
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import (
    check_gaussian_sigma,
    check_integer_scale,
    discrete_gaussian,
    discrete_gaussian_quantile,
    discrete_gaussian_variance,
    discrete_laplace,
)

__all__ = ["MECHANISMS", "Mechanism", "check_mechanism"]

#: The mechanisms of the releases that take ``mechanism=``.
MECHANISMS = ("laplace", "gaussian")


@dataclass(frozen=True)
class Mechanism:
    """A release's mechanism and its budget: ``epsilon`` (Laplace) or ``rho`` (Gaussian)."""

    name: str
    budget: float

    @property
    def unit(self) -> str:
        """What the budget is: "epsilon" or "rho"."""
        return "rho" if self.name == "gaussian" else "epsilon"

    @property
    def epsilon(self) -> float | None:
        """The budget as an accountant charges it: an epsilon (Laplace), else None."""
        return None if self.name == "gaussian" else self.budget

    @property
    def rho(self) -> float | None:
        """The budget as an accountant charges it: a rho (Gaussian), else None."""
        return self.budget if self.name == "gaussian" else None

    def scale(self, l1: float, l2: float, budget: float | None = None) -> float:
        """The noise's scale for a query of sensitivities ``l1`` and ``l2`` given
        ``budget`` (default: the whole): the Laplace's ``l1 / epsilon`` or the Gaussian's
        sigma ``l2 / sqrt(2 rho)``."""
        amount = self.budget if budget is None else budget
        return l2 / math.sqrt(2 * amount) if self.name == "gaussian" else l1 / amount

    def check_scale(self, scale: float, func: str) -> None:
        """Refuse a scale whose integer noise the sampler cannot draw."""
        if self.name == "gaussian":
            check_gaussian_sigma(scale, func)
        else:
            check_integer_scale(scale, func)

    def draw(self, secret: bytes, stream: int, keys: np.ndarray, scale: float) -> np.ndarray:
        """Exact integer noise (int64) of ``scale``, one draw per key (keyed PRF)."""
        if self.name == "gaussian":
            return discrete_gaussian(secret, stream, keys, scale)
        return discrete_laplace(secret, stream, keys, scale)

    def sd(self, scale: float) -> float:
        """The noise's standard deviation (exact, of the discrete law)."""
        if self.name == "gaussian":
            return math.sqrt(discrete_gaussian_variance(scale))
        return geometric_sd(scale)

    def half_width(self, scale: float, level: float = 0.95) -> int:
        """The smallest integer t with ``P(|noise| <= t) >= level`` (exact quantiles of
        the discrete law): a figure +- t is a ``level`` interval."""
        if self.name == "gaussian":
            return max(0, discrete_gaussian_quantile(scale, (1 + level) / 2))
        return geometric_interval(scale, level)


def check_mechanism(mechanism: Any, epsilon: Any, rho: Any, func: str) -> Mechanism:
    """``mechanism=`` with its budget: "laplace" takes ``epsilon`` and "gaussian" takes
    ``rho`` (its zCDP cost), exactly the one."""
    if mechanism not in MECHANISMS:
        msg = f"The 'mechanism' parameter of {func} must be one of {list(MECHANISMS)}. Got {mechanism!r} instead."
        raise InvalidParameterError(msg)
    if mechanism == "gaussian":
        if epsilon is not None or rho is None:
            msg = (
                f"{func} with mechanism='gaussian' takes rho= (its zCDP cost, > 0) and no epsilon; for an "
                "(epsilon, delta) target use polars_ppdm.dp.zcdp.rho_for(epsilon, delta). "
                f"Got epsilon={epsilon!r}, rho={rho!r}."
            )
            raise InvalidParameterError(msg)
        return Mechanism("gaussian", check_rho(rho, func))
    if rho is not None:
        msg = f"{func}: rho= is the budget of mechanism='gaussian'; the Laplace mechanism takes epsilon=. Got rho={rho!r}."
        raise InvalidParameterError(msg)
    if epsilon is None:
        msg = f"{func} needs epsilon= (mechanism='laplace'), or mechanism='gaussian' with rho=."
        raise InvalidParameterError(msg)
    return Mechanism("laplace", check_epsilon(epsilon, func))
