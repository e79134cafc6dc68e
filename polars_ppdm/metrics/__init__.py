"""Utility metrics: how much the privacy-preserving result keeps of the plain one."""

from polars_ppdm.metrics.clustering import assign, f_measure, nicv, rcp
from polars_ppdm.metrics.rules import rule_scores

__all__ = ["assign", "f_measure", "nicv", "rcp", "rule_scores"]
