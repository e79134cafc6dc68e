"""Perturbations: frame in, frame out."""

from polars_ppdm.perturb.rr import rr_disguise, rr_disguise_expr

__all__ = ["rr_disguise", "rr_disguise_expr"]
