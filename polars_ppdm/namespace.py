"""The ``ppdm`` namespaces on ``pl.Expr``, ``pl.DataFrame`` and ``pl.LazyFrame``.

Explicit, thin wrappers: each method delegates to the free function of the same name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_ppdm.mine.rr_support import rr_support
from polars_ppdm.perturb.ecdf import ecdf_resample
from polars_ppdm.perturb.noise import add_noise, add_noise_expr
from polars_ppdm.perturb.rr import rr_disguise, rr_disguise_expr
from polars_ppdm.perturb.spiral import spiral
from polars_ppdm.secret import SecretLike

__all__ = ["PPDMExprNamespace", "PPDMFrameNamespace", "PPDMLazyFrameNamespace"]


@pl.api.register_expr_namespace("ppdm")
class PPDMExprNamespace:
    """``pl.col(...).ppdm``: column perturbations."""

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    def rr_disguise(
        self,
        *,
        p: float | None = None,
        epsilon: float | None = None,
        secret: SecretLike = None,
        key: str | pl.Expr | None = None,
        categories: Sequence[Any] | None = None,
        stream: str | None = None,
    ) -> pl.Expr:
        """Randomized response on this column; see :func:`polars_ppdm.rr_disguise_expr`."""
        return rr_disguise_expr(
            self._expr, p=p, epsilon=epsilon, secret=secret, key=key, categories=categories, stream=stream
        )

    def add_noise(
        self,
        *,
        dist: str = "gaussian",
        scale: float,
        secret: SecretLike = None,
        key: str | pl.Expr | None = None,
        stream: str | None = None,
    ) -> pl.Expr:
        """Additive noise on this column; see :func:`polars_ppdm.add_noise_expr`."""
        return add_noise_expr(self._expr, dist=dist, scale=scale, secret=secret, key=key, stream=stream)


class _FrameMethods:
    """Methods shared by the DataFrame and LazyFrame namespaces (same type out as in)."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame

    def rr_disguise(
        self,
        columns: str | Sequence[str],
        *,
        p: Any = None,
        epsilon: Any = None,
        mode: str = "per_attribute",
        secret: SecretLike = None,
        key: str | None = None,
        categories: Any = None,
    ):
        """Randomized response on columns; see :func:`polars_ppdm.rr_disguise`."""
        return rr_disguise(
            self._frame, columns, p=p, epsilon=epsilon, mode=mode, secret=secret, key=key, categories=categories
        )

    def rr_support(
        self,
        columns: str | Sequence[str],
        *,
        p: Any = None,
        epsilon: Any = None,
        mode: str = "per_attribute",
        categories: Any = None,
        itemsets: Sequence[Sequence[str]] | None = None,
    ):
        """Corrected pattern frequencies or itemset supports; see :func:`polars_ppdm.rr_support`."""
        return rr_support(
            self._frame, columns, p=p, epsilon=epsilon, mode=mode, categories=categories, itemsets=itemsets
        )

    def ecdf_resample(
        self,
        columns: str | Sequence[str],
        *,
        bins: Any = 100,
        secret: SecretLike = None,
        key: str | None = None,
        link: str = "rank",
        shuffle: bool = False,
        round_integers: bool = False,
    ):
        """ECDF resampling with rank re-linking; see :func:`polars_ppdm.ecdf_resample`."""
        return ecdf_resample(
            self._frame,
            columns,
            bins=bins,
            secret=secret,
            key=key,
            link=link,
            shuffle=shuffle,
            round_integers=round_integers,
        )

    def add_noise(
        self,
        columns: str | Sequence[str],
        *,
        dist: str = "gaussian",
        scale: Any,
        secret: SecretLike = None,
        key: str | None = None,
    ):
        """Additive noise on columns; see :func:`polars_ppdm.add_noise`."""
        return add_noise(self._frame, columns, dist=dist, scale=scale, secret=secret, key=key)

    def spiral(
        self,
        columns: Sequence[str],
        *,
        rounds: int = 7,
        scale: Any = (0.1, 5.0),
        angle: tuple[float, float] = (0.01 * 3.141592653589793, 0.5 * 3.141592653589793),
        eps: float | None = None,
        bounds: Any = None,
        secret: SecretLike = None,
        return_key: bool = False,
    ):
        """Log-spiral perturbation; see :func:`polars_ppdm.spiral`."""
        return spiral(
            self._frame,
            columns,
            rounds=rounds,
            scale=scale,
            angle=angle,
            eps=eps,
            bounds=bounds,
            secret=secret,
            return_key=return_key,
        )


@pl.api.register_dataframe_namespace("ppdm")
class PPDMFrameNamespace(_FrameMethods):
    """``df.ppdm``: frame perturbations and miners (DataFrame in, DataFrame out)."""


@pl.api.register_lazyframe_namespace("ppdm")
class PPDMLazyFrameNamespace(_FrameMethods):
    """``lf.ppdm``: frame perturbations and miners (LazyFrame in, LazyFrame out)."""
