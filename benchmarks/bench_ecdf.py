"""Benchmark: ecdf_resample on 10M rows x 10 columns against a Polars sort of the same columns.

Run ``python benchmarks/bench_ecdf.py`` (``--rows`` scales it).  All are measured in
this one run, in turn (best of ``--repeats`` each); the ratios are printed with issue
19's bars (rank link <= 1.5x, with ``shuffle=True`` <= 2.0x; both with NumPy's AVX-512
sort and without,
``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"``).  Peak memory is measured
in a fresh process: the high-water RSS during the resampling minus the RSS with the
input loaded, against the input's size (bar <= 3x).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
from _timing import best_seconds_interleaved, machine  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm


def table(rows: int, columns: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    makers = [
        lambda n: rng.normal(size=n),
        lambda n: rng.lognormal(size=n),
        lambda n: rng.exponential(size=n),
    ]
    return pl.DataFrame({f"c{i}": makers[i % 3](rows) for i in range(columns)})


def peak_memory(rows: int, columns: int) -> tuple[float, float]:
    """(extra peak MB during ecdf_resample, input MB) in a fresh process."""
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(__file__.rsplit("/", 1)[0])!r})
        from bench_ecdf import table
        import polars_ppdm as ppdm

        def rss_mb(field):
            with open("/proc/self/status") as status:
                return int(next(l for l in status if l.startswith(field)).split()[1]) / 1024

        df = table({rows}, {columns})
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        before = rss_mb("VmRSS:")
        ppdm.ecdf_resample(df, df.columns, bins=100, secret=1)
        print(rss_mb("VmHWM:") - before, df.estimated_size() / 2**20)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    extra, size = out.stdout.split()
    return float(extra), float(size)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--columns", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    df = table(args.rows, args.columns)
    secret = ppdm.new_secret()
    seconds = best_seconds_interleaved(
        {
            "sort": lambda: df.select(pl.all().sort()),
            "rank": lambda: ppdm.ecdf_resample(df, df.columns, bins=100, secret=secret),
            "shuffle": lambda: ppdm.ecdf_resample(df, df.columns, bins=100, secret=secret, shuffle=True),
        },
        args.repeats,
    )
    sort_s, ecdf_s, shuffle_s = seconds["sort"], seconds["rank"], seconds["shuffle"]
    print(f"{args.rows:,} rows x {args.columns} columns, best of {args.repeats}")
    print(f"Polars sort of the columns          {sort_s:7.3f} s")
    print(f"ecdf_resample (rank link)           {ecdf_s:7.3f} s  {ecdf_s / sort_s:5.2f}x sort (bar 1.5)")
    print(
        f"ecdf_resample (rank link, shuffle)  {shuffle_s:7.3f} s  {shuffle_s / sort_s:5.2f}x sort (bar 2.0)"
    )
    extra, size = peak_memory(args.rows, args.columns)
    print(
        f"peak memory above the input: {extra:.0f} MB for a {size:.0f} MB input = {extra / size:.2f}x (bar 3.0)"
    )


if __name__ == "__main__":
    main()
