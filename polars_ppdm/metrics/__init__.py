"""Utility metrics: how much the privacy-preserving result keeps of the plain one."""

from polars_ppdm.metrics.rules import rule_scores

__all__ = ["rule_scores"]
