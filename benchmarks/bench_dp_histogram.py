"""Benchmark: dp_histogram over 10M rows against the non-private Polars histogram.

Run ``python benchmarks/bench_dp_histogram.py``.  The baseline is a group-by count on
the same bin-index expression (``polars_ppdm.dp.histogram.bin_index``), in the same
run, best of ``--repeats``; the ratio is printed with the issue's bar (<= 1.5x).

Then the effect of ``non_negative=True`` (clipping at 0, free post-processing) on a
sparse grid: 1M rows of a skewed column in 5,000 bins, epsilon 1, over 20 secrets: how
many bins come out negative, the RMS error per bin and the error of the total, raw and
clipped.
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from _timing import best_seconds, machine  # benchmarks/ is the script's own folder

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
    print(machine())
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
    post_processing()


def post_processing(rows: int = 1_000_000, bins: int = 5_000, secrets: int = 20) -> None:
    df = pl.DataFrame({"x": np.random.default_rng(1).lognormal(2.0, 0.6, rows)})
    params = {"bounds": (0, 100), "bins": bins, "epsilon": 1.0}
    truth = ppdm.dp_histogram(df, "x", **params, secret=ppdm.Secret.for_tests(0))  # the bins; counts replaced below
    true = df.group_by(bin_index("x", 0, 100, bins).alias("x_bin")).agg(pl.len().alias("true"))
    true = truth.select("x_bin").join(true, on="x_bin", how="left").fill_null(0)["true"].to_numpy()
    negative, errors = [], {False: [], True: []}
    for secret in range(secrets):
        for clip in (False, True):
            got = ppdm.dp_histogram(
                df, "x", **params, secret=ppdm.Secret.for_tests(secret), non_negative=clip
            )["count"].to_numpy()
            errors[clip].append((np.sqrt(np.mean((got - true) ** 2)), got.sum() - true.sum()))
            if not clip:
                negative.append(int((got < 0).sum()))
    print(f"non_negative on {rows:,} rows in {bins:,} bins, epsilon 1, {secrets} secrets:")
    print(f"  bins below 0 without it    {np.mean(negative):7.0f} of {bins:,} (on average)")
    for clip, label in ((False, "raw"), (True, "clipped at 0")):
        rms = np.mean([e[0] for e in errors[clip]])
        total = np.mean([e[1] for e in errors[clip]])
        print(
            f"  {label:14s} RMS error per bin {rms:6.3f}; error of the total {total:+9.1f} (mean over secrets)"
        )


if __name__ == "__main__":
    main()
