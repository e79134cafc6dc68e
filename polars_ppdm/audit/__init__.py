"""Attacks and privacy measures: what each method does and does not protect."""

from polars_ppdm.audit.information import mutual_information, privacy_q
from polars_ppdm.audit.ldp import rr_epsilon, rr_p_from_epsilon
from polars_ppdm.audit.linkage import rank_linkage, rank_linkage_report
from polars_ppdm.audit.noise_comparison import compare_to_additive_noise
from polars_ppdm.audit.noise_stripping import pca_noise_stripping
from polars_ppdm.audit.spiral_attack import KnownIOAttack, known_io_attack

__all__ = [
    "KnownIOAttack",
    "compare_to_additive_noise",
    "known_io_attack",
    "mutual_information",
    "pca_noise_stripping",
    "privacy_q",
    "rank_linkage",
    "rank_linkage_report",
    "rr_epsilon",
    "rr_p_from_epsilon",
]
