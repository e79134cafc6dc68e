"""A year of nightly releases: the budget pure epsilon and zCDP need for the same accuracy.

Run ``python benchmarks/bench_zcdp.py``.  A nightly job publishes one count per group
(sensitivity 1) with noise of standard deviation ``--sd`` (14.1) every night for
``--nights`` nights (365).  Baseline: the Laplace mechanism (discrete Laplace of the same
SD), pure epsilon, basic composition (the ledger's pure accounting).  Against it: the
Gaussian mechanism (discrete Gaussian of the same SD) under zCDP, rho adding up, stated as
(epsilon, delta) by Canonne-Kamath-Steinke 2020 (``polars_ppdm.dp.zcdp``).  It prints the
year's budget both ways, their ratio, how many nights a budget of (``--epsilon``,
``--delta``) pays for each way, and checks with the keyed samplers that the two noises
have the SD claimed (1e6 draws each), with their draw rates.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _timing import machine  # benchmarks/ is the script's own folder

from polars_ppdm.dp.zcdp import rho_for, rho_to_epsilon
from polars_ppdm.kernels.dp_noise import discrete_gaussian, discrete_laplace, discrete_laplace_variance
from polars_ppdm.kernels.prf import stream_id

SECRET = bytes(range(32))


def laplace_scale_for(sd: float) -> float:
    """The discrete Laplace scale whose SD is ``sd`` (its variance is 2a/(1-a)^2, a = e^(-1/scale))."""
    low, high = 1e-3, 10 * sd
    for _ in range(200):
        mid = (low + high) / 2
        if math.sqrt(discrete_laplace_variance(mid)) < sd:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sd", type=float, default=14.1, help="the noise SD of each nightly count")
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--epsilon", type=float, default=8.0, help="a year's (epsilon, delta) budget")
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--draws", type=int, default=1_000_000)
    args = parser.parse_args()
    print(machine())
    scale = laplace_scale_for(args.sd)
    epsilon_night = 1 / scale
    rho_night = 1 / (2 * args.sd**2)
    pure_year = args.nights * epsilon_night
    zcdp_year = rho_to_epsilon(args.nights * rho_night, args.delta)
    print(f"\nnoise SD {args.sd:g} per nightly count, {args.nights} nights, sensitivity 1")
    print(f"{'mechanism':<44} {'per night':>16} {'the year':>22}")
    print(
        f"{'Laplace, pure epsilon (baseline)':<44} {'epsilon ' + format(epsilon_night, '.4f'):>16} {'epsilon ' + format(pure_year, '.2f'):>22}"
    )
    print(
        f"{'Gaussian, zCDP':<44} {'rho ' + format(rho_night, '.5f'):>16} "
        f"{'rho ' + format(args.nights * rho_night, '.4f'):>22}"
    )
    print(
        f"{'  as (epsilon, delta ' + format(args.delta, 'g') + ')':<44} {'':>16} {'epsilon ' + format(zcdp_year, '.2f'):>22}"
    )
    print(f"ratio of the year's epsilon, Laplace / Gaussian: {pure_year / zcdp_year:.2f}x")
    nights_pure = math.floor(args.epsilon / epsilon_night + 1e-9)
    nights_zcdp = math.floor(rho_for(args.epsilon, args.delta) / rho_night + 1e-9)
    print(
        f"a budget of (epsilon {args.epsilon:g}, delta {args.delta:g}) pays for {nights_pure} nights of Laplace, "
        f"{nights_zcdp} of Gaussian ({nights_zcdp / max(nights_pure, 1):.2f}x as long)"
    )
    keys = np.arange(args.draws, dtype=np.uint64)
    for name, draw in (
        ("discrete Laplace", lambda: discrete_laplace(SECRET, stream_id("bench/laplace"), keys, scale)),
        ("discrete Gaussian", lambda: discrete_gaussian(SECRET, stream_id("bench/gaussian"), keys, args.sd)),
    ):
        started = time.perf_counter()
        noise = draw()
        took = time.perf_counter() - started
        sd = float(noise.std())
        se = sd / math.sqrt(2 * args.draws)
        print(
            f"{name}: measured SD {sd:.3f} (claimed {args.sd:g}, SE {se:.3f}); "
            f"{args.draws / took / 1e6:.2f} M draws/s"
        )


if __name__ == "__main__":
    main()
