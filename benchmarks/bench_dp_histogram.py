"""Benchmark: dp_histogram over 10M rows against the non-private Polars histogram.

Run ``python benchmarks/bench_dp_histogram.py``.  The baseline is a group-by count on
the same bin-index expression (``polars_ppdm.dp.histogram.bin_index``), in the same
run, best of ``--repeats``; the ratio is printed with the issue's bar (<= 1.5x).
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from _timing import best_seconds  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm
from polars_ppdm.dp.histogram import bin_index


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--bins", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    df = pl.DataFrame({"x": np.random.default_rng(0).normal(50, 15, args.rows)})
    secret = ppdm.new_secret()
    plain = best_seconds(
        lambda: df.lazy().group_by(bin_index("x", 0, 100, args.bins).alias("bin")).agg(pl.len()).collect(),
        args.repeats,
    )
    private = best_seconds(
        lambda: ppdm.dp_histogram(df, "x", bounds=(0, 100), bins=args.bins, epsilon=1.0, secret=secret),
        args.repeats,
    )
    print(f"{args.rows:,} rows, {args.bins} bins, best of {args.repeats}")
    print(f"non-private group-by count   {plain:7.3f} s")
    print(f"dp_histogram                 {private:7.3f} s  {private / plain:5.2f}x (bar 1.5)")


if __name__ == "__main__":
    main()
