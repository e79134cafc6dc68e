"""Consistent totals: the least-squares estimates of a hierarchy of noisy totals (pure NumPy).

Each level of a hierarchy (cells, their groups, the grand total, ...) holds independent
noisy estimates with known variances; every node of a coarser level is the sum of its
children.  The estimates of all levels are made consistent (each parent exactly the sum
of its children) by weighted least squares, which is the best linear unbiased estimate
under these constraints: two linear passes over the tree, as in Hay et al. (uniform
noise) and Cormode et al. (noise that varies by level).  Pure post-processing of noisy
releases: it costs no privacy.

The upward pass combines each node's own estimate with the sum of its children's
(inverse-variance weights); the downward pass hands each parent's final figure back to
its children in proportion to their variances.  The variances that come out are the
exact variances of the final estimates (of a linear estimator, whatever the noise's
distribution).

References
----------
Hay, Rastogi, Miklau, Suciu, "Boosting the accuracy of differentially private histograms
through consistency", VLDB 2010.  Cormode, Procopiuc, Srivastava, Shen, Yu,
"Differentially private spatial decompositions", ICDE 2012 (non-uniform noise).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["consistent_hierarchy"]


def consistent_hierarchy(
    values: Sequence[np.ndarray],
    variances: Sequence[np.ndarray],
    parents: Sequence[np.ndarray],
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The consistent estimates of a hierarchy of noisy totals, and their variances.

    Parameters
    ----------
    values, variances : sequences of 1-D float arrays
        Per level, finest first: each node's noisy estimate and its noise's variance
        (>= 0; 0: exact).
    parents : sequence of 1-D int arrays
        ``parents[i][j]``: the index, in level ``i + 1``, of the parent of node ``j`` of
        level ``i`` (one array per level but the coarsest).  Every node of a coarser
        level has at least one child.

    Returns
    -------
    (estimates, variances) : two lists of arrays, one per level.

    Examples
    --------
    Two cells and their total, each with noise of variance 1: the cells' difference is
    kept, and every level ends up with the average of what each says of the total.

    >>> est, var = consistent_hierarchy(
    ...     [np.array([10.0, 20.0]), np.array([33.0])], [np.ones(2), np.ones(1)], [np.array([0, 0])])
    >>> est[0].tolist(), est[1].tolist()
    ([11.0, 21.0], [32.0])
    >>> var[1].round(4).tolist()   # 1 / (1 + 1/2)
    [0.6667]
    """
    levels = len(values)
    # Upward: each node's estimate from its own figure and its subtree's.
    up, up_var = [np.asarray(values[0], dtype=np.float64)], [np.asarray(variances[0], dtype=np.float64)]
    child_sums, child_vars = [], []
    for i in range(1, levels):
        own, own_var = np.asarray(values[i], dtype=np.float64), np.asarray(variances[i], dtype=np.float64)
        below = np.bincount(parents[i - 1], weights=up[-1], minlength=len(own))
        below_var = np.bincount(parents[i - 1], weights=up_var[-1], minlength=len(own))
        # The weight of the node's own figure: S / (S + v); both exact (0 / 0): its own.
        total_var = below_var + own_var
        gain = np.divide(below_var, total_var, out=np.ones_like(total_var), where=total_var > 0)
        up.append(below + gain * (own - below))
        up_var.append(gain * own_var)
        child_sums.append(below)
        child_vars.append(below_var)
    # Downward: each parent's final figure shared out in proportion to the children's variances.
    final, final_var = [up[-1]], [up_var[-1]]
    for i in range(levels - 2, -1, -1):
        parent = parents[i]
        share_var = child_vars[i][parent]
        share = np.divide(up_var[i], share_var, out=np.zeros_like(up_var[i]), where=share_var > 0)
        final.insert(0, up[i] + share * (final[0][parent] - child_sums[i][parent]))
        final_var.insert(0, up_var[i] + share**2 * (final_var[0][parent] - share_var))
    return final, [np.maximum(v, 0.0) for v in final_var]
