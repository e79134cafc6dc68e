"""Benchmark: reconstruct_distribution of 10M noisy values into 100 intervals against
one ``np.histogram`` pass over the same values.

Run ``python benchmarks/bench_reconstruct.py``; both in the same run, best of
``--repeats``; the ratio is printed with the issue's bar (<= 5x).
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from _timing import best_seconds, machine  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--bins", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(0)
    x = np.where(rng.random(args.rows) < 0.4, rng.normal(25, 6, args.rows), rng.normal(70, 8, args.rows))
    noisy = ppdm.add_noise(pl.DataFrame({"x": x}), "x", dist="gaussian", scale=15.0, secret=ppdm.new_secret())
    values = noisy["x"].to_numpy()
    base = best_seconds(lambda: np.histogram(values, bins=args.bins, range=(0, 100)), args.repeats)
    ours = best_seconds(
        lambda: ppdm.reconstruct_distribution(
            noisy, "x", dist="gaussian", scale=15.0, bins=args.bins, bounds=(0, 100)
        ),
        args.repeats,
    )
    print(f"{args.rows:,} values, {args.bins} intervals, best of {args.repeats}")
    print(f"np.histogram                {base:7.3f} s")
    print(f"reconstruct_distribution    {ours:7.3f} s  {ours / base:5.2f}x (bar 5.0)")


if __name__ == "__main__":
    main()
