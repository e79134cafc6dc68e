"""The ``ppdm`` namespaces on ``pl.Expr``, ``pl.DataFrame`` and ``pl.LazyFrame``.

Explicit, thin wrappers: each method is written out below as the free function of the
same name with the expression or frame as its first argument, so ``lf.ppdm.dp_histogram(
"age", ...)`` is ``ppdm.dp_histogram(lf, "age", ...)`` -- same parameters, same result,
same documentation (``help(ppdm.dp_histogram)``).  The signatures are copied from the
functions, so the two cannot drift apart.

Functions only, and why: the audits (``ppdm.audit.*``) and :func:`polars_ppdm.rule_scores`
compare two tables, so neither is "the" frame; :func:`polars_ppdm.rr_accuracy` starts
from a fitted tree and :func:`polars_ppdm.association_rules` from frequent itemsets;
:func:`polars_ppdm.read_transactions`, :func:`polars_ppdm.spiral_key` and the epsilon
helpers take no frame.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import polars as pl

from polars_ppdm.dp.group_by import dp_group_by
from polars_ppdm.dp.histogram import dp_histogram
from polars_ppdm.dp.kmeans import dp_kmeans
from polars_ppdm.dp.quadtree import dp_quadtree
from polars_ppdm.mine.apriori import pattern_rules, rr_apriori, rr_frequent_itemsets
from polars_ppdm.mine.covariance import estimate_covariance, pca_reconstruct
from polars_ppdm.mine.reconstruct import reconstruct_distribution
from polars_ppdm.mine.rr_id3 import rr_id3
from polars_ppdm.mine.rr_support import rr_support
from polars_ppdm.perturb.ecdf import ecdf_resample
from polars_ppdm.perturb.noise import add_noise, add_noise_expr
from polars_ppdm.perturb.rr import rr_disguise, rr_disguise_expr
from polars_ppdm.perturb.spiral import apply_spiral_key, invert_spiral_key, spiral
from polars_ppdm.transactions import transactions_to_onehot

__all__ = ["FRAME_METHODS", "PPDMExprNamespace", "PPDMFrameNamespace", "PPDMLazyFrameNamespace"]

P = ParamSpec("P")
R = TypeVar("R")


def _method(function: Callable[Concatenate[Any, P], R], subject: str) -> Callable[Concatenate[Any, P], R]:
    """A namespace method calling ``function(self.<subject>, ...)``, with its signature."""

    @functools.wraps(function)
    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return function(getattr(self, subject), *args, **kwargs)

    parameters = list(inspect.signature(function).parameters.values())[1:]
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = inspect.signature(function).replace(  # type: ignore[attr-defined]
        parameters=[self_parameter, *parameters]
    )
    # A pointer, not a copy of the docstring: its examples run once, in the function's module.
    summary = (function.__doc__ or "").strip().split("\n\n")[0]
    method.__doc__ = f"{summary}\n\nThe namespace form of :func:`polars_ppdm.{function.__name__}`."
    return method


@pl.api.register_expr_namespace("ppdm")
class PPDMExprNamespace:
    """``pl.col(...).ppdm``: column perturbations (an expression in, an expression out)."""

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    rr_disguise = _method(rr_disguise_expr, "_expr")
    add_noise = _method(add_noise_expr, "_expr")


class _FrameMethods:
    """Methods shared by the DataFrame and LazyFrame namespaces (see the module docs)."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame

    # perturbations: the same kind of frame out as in
    rr_disguise = _method(rr_disguise, "_frame")
    ecdf_resample = _method(ecdf_resample, "_frame")
    add_noise = _method(add_noise, "_frame")
    # spiral is overloaded on return_key; a ParamSpec would keep only its first overload
    # (return_key=False), so the method takes the function as a plain callable.
    spiral = _method(cast("Callable[..., Any]", spiral), "_frame")
    apply_spiral_key = _method(apply_spiral_key, "_frame")
    invert_spiral_key = _method(invert_spiral_key, "_frame")
    # miners and corrected statistics
    rr_support = _method(rr_support, "_frame")
    rr_frequent_itemsets = _method(rr_frequent_itemsets, "_frame")
    rr_apriori = _method(rr_apriori, "_frame")
    pattern_rules = _method(pattern_rules, "_frame")
    rr_id3 = _method(rr_id3, "_frame")
    reconstruct_distribution = _method(reconstruct_distribution, "_frame")
    estimate_covariance = _method(estimate_covariance, "_frame")
    pca_reconstruct = _method(pca_reconstruct, "_frame")
    transactions_to_onehot = _method(transactions_to_onehot, "_frame")
    # differentially private releases
    dp_histogram = _method(dp_histogram, "_frame")
    dp_group_by = _method(dp_group_by, "_frame")
    dp_quadtree = _method(dp_quadtree, "_frame")
    dp_kmeans = _method(dp_kmeans, "_frame")


FRAME_METHODS = tuple(
    name
    for name, value in vars(_FrameMethods).items()
    if inspect.isfunction(value) and not name.startswith("_")
)


@pl.api.register_dataframe_namespace("ppdm")
class PPDMFrameNamespace(_FrameMethods):
    """``df.ppdm``: every frame operation of polars_ppdm with ``df`` as its frame."""


@pl.api.register_lazyframe_namespace("ppdm")
class PPDMLazyFrameNamespace(_FrameMethods):
    """``lf.ppdm``: every frame operation of polars_ppdm with ``lf`` as its frame."""
