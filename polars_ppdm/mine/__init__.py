"""Miners: corrected statistics from perturbed data."""

from polars_ppdm.mine.apriori import association_rules, pattern_rules, rr_apriori, rr_frequent_itemsets
from polars_ppdm.mine.covariance import estimate_covariance, pca_reconstruct
from polars_ppdm.mine.reconstruct import reconstruct_distribution
from polars_ppdm.mine.rr_id3 import RRTree, rr_accuracy, rr_id3
from polars_ppdm.mine.rr_support import rr_support

__all__ = [
    "RRTree",
    "association_rules",
    "estimate_covariance",
    "pattern_rules",
    "pca_reconstruct",
    "reconstruct_distribution",
    "rr_accuracy",
    "rr_apriori",
    "rr_frequent_itemsets",
    "rr_id3",
    "rr_support",
]
