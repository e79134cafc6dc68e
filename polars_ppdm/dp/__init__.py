"""Differentially private releases: histograms, group-by aggregates, continual counts, the DPQT
quadtree, k-means (paper 004); their accounting (pure epsilon or zCDP)."""

from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock
from polars_ppdm.dp.aggregates import (
    DPAggregate,
    count,
    count_units,
    mean,
    median,
    quantile,
    std,
    sum,
    variance,
)
from polars_ppdm.dp.consistency import consistent_totals
from polars_ppdm.dp.continual import ContinualResult, TreeState, dp_continual_counts
from polars_ppdm.dp.group_by import dp_group_by
from polars_ppdm.dp.histogram import dp_histogram
from polars_ppdm.dp.kmeans import DPKMeansResult, dp_kmeans
from polars_ppdm.dp.quadtree import dp_quadtree

__all__ = [
    "BudgetAccountant",
    "ContinualResult",
    "DPAggregate",
    "DPKMeansResult",
    "ParallelBlock",
    "TreeState",
    "consistent_totals",
    "count",
    "count_units",
    "dp_continual_counts",
    "dp_group_by",
    "dp_histogram",
    "dp_kmeans",
    "dp_quadtree",
    "mean",
    "median",
    "quantile",
    "std",
    "sum",
    "variance",
]
