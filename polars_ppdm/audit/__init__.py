"""Attacks and privacy measures: what each method does and does not protect."""

from polars_ppdm.audit.ldp import rr_epsilon, rr_p_from_epsilon

__all__ = ["rr_epsilon", "rr_p_from_epsilon"]
