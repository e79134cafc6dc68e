"""Perturbations: frame in, frame out."""

from polars_ppdm.perturb.ecdf import ecdf_resample
from polars_ppdm.perturb.noise import add_noise, add_noise_expr
from polars_ppdm.perturb.rr import rr_disguise, rr_disguise_expr
from polars_ppdm.perturb.spiral import SpiralKey, apply_spiral_key, invert_spiral_key, spiral, spiral_key

__all__ = [
    "SpiralKey",
    "add_noise",
    "add_noise_expr",
    "apply_spiral_key",
    "ecdf_resample",
    "invert_spiral_key",
    "rr_disguise",
    "rr_disguise_expr",
    "spiral",
    "spiral_key",
]
