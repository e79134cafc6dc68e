"""Continual release of a running count: the budget each mechanism needs for one accuracy.

Run ``python benchmarks/bench_continual.py``.  A running count per group is published
every night of a horizon of ``--horizon`` nights (365), each privacy unit contributing at
most ``--k`` events (1: event-level).  For a target RMSE of the running total published on
night ``--horizon`` (the last), it prints the zCDP budget rho over the whole horizon -- and
the (epsilon, delta) it means by Canonne-Kamath-Steinke 2020
(``polars_ppdm.dp.zcdp.rho_to_epsilon``) -- that each mechanism needs:

* (a) tree, optimal: the binary tree mechanism with Honaker's variance-optimal estimator
  (``polars_ppdm.kernels.binary_tree.tree_estimate``);
* (a') tree, dyadic sum: the same noisy nodes, each total the sum of its dyadic
  decomposition (the classic binary mechanism);
* (b) leaves: independently noised nightly counts, summed;
* (c) totals: an independent release of the running total every night;
* (m) sqrt factorisation: the square-root factorisation of the lower-triangular all-ones
  matrix (Fichtenberger-Henzinger-Upadhyay 2023; Henzinger-Upadhyay-Upadhyay 2023), theory
  only (continuous Gaussian noise).

All theory uses Gaussian variances ``sigma^2``.  "every night" is the budget for the
target on the worst night (the last night is the tree's best: its root is complete).  The
ratio column is the variance of (b), the baseline, over each mechanism's, at the same rho
on the last night.  Then, at the tree's rho, a simulation with the kernel's keyed discrete
Gaussian noise (``--groups`` independent groups = repetitions, one fixed secret): each
mechanism's measured RMSE of the total on nights ``--nights`` beside its exact theory
(the discrete Gaussian's variance), and the measured variance ratios (b)/(x).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _timing import machine  # benchmarks/ is the script's own folder

from polars_ppdm.dp.zcdp import rho_to_epsilon
from polars_ppdm.kernels import binary_tree as bt
from polars_ppdm.kernels.dp_noise import discrete_gaussian
from polars_ppdm.kernels.prf import stream_id

SECRET = bytes(range(16))
NAMES = {
    "tree": "(a) tree, optimal",
    "tree_dyadic": "(a') tree, dyadic sum",
    "leaves": "(b) leaves summed",
    "totals": "(c) totals nightly",
    "sqrt_factorisation": "(m) sqrt factorisation",
}


def coefficients(horizon: int, night: int, k: int) -> dict[str, float]:
    """Each mechanism's variance of the total on ``night`` as a multiple of 1 / (2 rho)."""
    return bt.running_total_variances(0.5 * k * k, horizon, night - 1, k)


def simulate(horizon: int, groups: int, rho: float, k: int, nights: list[int]) -> dict[str, dict[int, tuple]]:
    """Measured and exact RMSE of the total on each night, per keyed mechanism."""
    rng = np.random.default_rng(2025)
    events = 50 * groups
    group = rng.integers(0, groups, events)
    period = np.minimum(rng.exponential(horizon / 3, events).astype(np.int64), horizon - 1)
    counts = np.bincount(group * horizon + period, minlength=groups * horizon).reshape(groups, horizon)
    truth = np.cumsum(counts, axis=1)
    sigma_a = bt.tree_sigma(rho, horizon, k)
    sigma_b = k / math.sqrt(2 * rho)
    sigma_c = k * math.sqrt(horizon / (2 * rho))
    numbers = np.arange(groups, dtype=np.uint64)
    everything = bt.complete_nodes(horizon, horizon - 1)
    tree_noise = bt.node_noise(
        SECRET, stream_id("bench/continual/tree"), everything.level, everything.index, sigma_a, groups=groups
    )
    position = {
        (int(lv), int(i)): c for c, (lv, i) in enumerate(zip(everything.level, everything.index, strict=True))
    }
    leaf_keys = bt.noise_keys(numbers, np.arange(horizon, dtype=np.uint64))
    leaf_noise = discrete_gaussian(
        SECRET, stream_id("bench/continual/leaves"), leaf_keys.reshape(-1), sigma_b
    )
    leaf_noise = leaf_noise.reshape(groups, horizon)
    out: dict[str, dict[int, tuple]] = {name: {} for name in ("tree", "tree_dyadic", "leaves", "totals")}
    for night in nights:
        p = night - 1
        nodes = bt.complete_nodes(horizon, p)
        columns = np.array(
            [position[lv, i] for lv, i in zip(nodes.level.tolist(), nodes.index.tolist(), strict=True)]
        )
        noisy = (
            bt.node_sums(counts[:, :night], nodes.level, nodes.index, horizon=horizon)
            + tree_noise[:, columns]
        )
        total_keys = bt.noise_keys(numbers, np.array([p], dtype=np.uint64))[:, 0]
        nightly = truth[:, p] + discrete_gaussian(
            SECRET, stream_id("bench/continual/totals"), total_keys, sigma_c
        )
        estimates = {
            "tree": bt.tree_estimate(noisy, horizon, p)[1][:, p],
            "tree_dyadic": bt.dyadic_totals(noisy, horizon, p)[:, p],
            "leaves": (counts[:, :night] + leaf_noise[:, :night]).sum(axis=1),
            "totals": nightly,
        }
        exact = {
            "tree": bt.tree_variance(horizon, p, sigma_a)[1][p],
            "tree_dyadic": bt.dyadic_variance(horizon, p, sigma_a)[p],
            "leaves": night * bt.node_variance(sigma_b),
            "totals": bt.node_variance(sigma_c),
        }
        for name, estimate in estimates.items():
            error = estimate - truth[:, p]
            m2, m4 = float(np.mean(error**2)), float(np.mean(error**4))
            se = math.sqrt((m4 - m2 * m2) / groups) / (2 * math.sqrt(m2))  # delta method
            out[name][night] = (math.sqrt(m2), se, math.sqrt(exact[name]), m2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--horizon", type=int, default=365)
    parser.add_argument("--k", type=int, default=1, help="events per privacy unit (1: event-level)")
    parser.add_argument("--target-rmse", type=float, default=10.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--groups", type=int, default=2000, help="simulated groups (repetitions)")
    parser.add_argument("--nights", default="1,30,364,365", help="nights of the simulation (1-based)")
    args = parser.parse_args()
    print(machine())
    horizon, k, target = args.horizon, args.k, args.target_rmse
    last = coefficients(horizon, horizon, k)
    worst = {name: 0.0 for name in last}
    for night in range(1, horizon + 1):
        for name, value in coefficients(horizon, night, k).items():
            worst[name] = max(worst[name], value)
    print(
        f"\nhorizon {horizon} nights, k = {k}, L = {bt.levels(horizon)} levels; target RMSE {target:g} "
        f"of the running total; delta = {args.delta:g}; budgets over the whole horizon"
    )
    header = (
        f"{'mechanism':<24} {'var x 2rho/k^2':>14} {'rho (night ' + str(horizon) + ')':>16} {'epsilon':>8}"
        f" {'rho (every night)':>17} {'epsilon':>8} {'var ratio (b)/x':>15}"
    )
    print(header)
    print("-" * len(header))
    for name, label in NAMES.items():
        rho_last = last[name] * k * k / (2 * target**2)
        rho_every = worst[name] * k * k / (2 * target**2)
        print(
            f"{label:<24} {last[name] / (k * k):14.2f} {rho_last:16.4f} {rho_to_epsilon(rho_last, args.delta):8.3f}"
            f" {rho_every:17.4f} {rho_to_epsilon(rho_every, args.delta):8.3f} {last['leaves'] / last[name]:15.2f}"
        )
    typical = coefficients(horizon, horizon - 1, k)
    print(
        f"(on night {horizon - 1}, whose total needs several nodes, the ratios (b)/x are: "
        + ", ".join(f"{NAMES[n].split()[0]} {typical['leaves'] / typical[n]:.2f}" for n in NAMES)
        + ")"
    )

    nights = [int(n) for n in args.nights.split(",")]
    rho = last["tree"] * k * k / (2 * target**2)
    started = time.perf_counter()
    measured = simulate(horizon, args.groups, rho, k, nights)
    seconds = time.perf_counter() - started
    print(
        f"\nsimulation at rho = {rho:.4f} (the tree's budget for the target), {args.groups} groups, "
        f"keyed discrete Gaussian noise, one secret ({seconds:.1f} s)"
    )
    header = f"{'mechanism':<24} {'night':>5} {'RMSE measured':>16} {'RMSE exact':>10} {'z':>6} {'var ratio (b)/x':>22}"
    print(header)
    print("-" * len(header))
    for night in nights:
        base = measured["leaves"][night]
        for name in ("tree", "tree_dyadic", "leaves", "totals"):
            rmse, se, exact, m2 = measured[name][night]
            ratio_theory = base[2] ** 2 / exact**2
            print(
                f"{NAMES[name]:<24} {night:5d} {rmse:9.3f} +- {se:4.3f} {exact:10.3f} {(rmse - exact) / se:6.2f}"
                f" {base[3] / m2:9.2f} (exact {ratio_theory:6.2f})"
            )


if __name__ == "__main__":
    main()
