"""Benchmark: spiral on 10M rows x 10 columns (t = 7) against one numpy ``X @ W + b``.

Run ``python benchmarks/bench_spiral.py``.  Both in the same run, best of ``--repeats``;
the ratio is printed with the issue's bar (<= 1.5x).  The baseline starts from the same
Polars frame (``to_numpy`` included), as a user's numpy version would.
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
    parser.add_argument("--columns", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    cols = [f"c{i}" for i in range(args.columns)]
    df = pl.DataFrame(np.random.default_rng(0).uniform(0, 10, (args.rows, args.columns)), schema=cols)
    key = ppdm.spiral_key(cols, bounds={c: (0, 10) for c in cols}, rounds=7, secret=ppdm.new_secret())
    W, b = key.matrix.T.copy(), key.offset

    def numpy_baseline():
        x = df.to_numpy()
        return pl.DataFrame(x @ W + b, schema=cols)

    base = best_seconds(numpy_baseline, args.repeats)
    eager = best_seconds(lambda: ppdm.apply_spiral_key(df, key), args.repeats)
    streaming = best_seconds(
        lambda: ppdm.apply_spiral_key(df.lazy(), key).collect(engine="streaming"), args.repeats
    )
    print(f"{args.rows:,} rows x {args.columns} columns, t = 7, best of {args.repeats}")
    print(f"numpy X @ W + b (from and to Polars)  {base:7.3f} s")
    print(f"spiral, eager                         {eager:7.3f} s  {eager / base:5.2f}x (bar 1.5)")
    print(f"spiral, lazy streaming                {streaming:7.3f} s  {streaming / base:5.2f}x")


if __name__ == "__main__":
    main()
