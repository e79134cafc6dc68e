"""Differentially private releases: histograms, the DPQT quadtree, k-means (paper 004)."""

from polars_ppdm.dp.accountant import BudgetAccountant
from polars_ppdm.dp.histogram import dp_histogram
from polars_ppdm.dp.kmeans import DPKMeansResult, dp_kmeans
from polars_ppdm.dp.quadtree import dp_quadtree

__all__ = ["BudgetAccountant", "DPKMeansResult", "dp_histogram", "dp_kmeans", "dp_quadtree"]
