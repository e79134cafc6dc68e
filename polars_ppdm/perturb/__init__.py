"""Perturbations: frame in, frame out."""

from polars_ppdm.perturb.ecdf import ecdf_resample
from polars_ppdm.perturb.rr import rr_disguise, rr_disguise_expr

__all__ = ["ecdf_resample", "rr_disguise", "rr_disguise_expr"]
