"""Benchmark: ecdf_resample on 10M rows x 10 columns against a Polars sort of the same columns.

Run ``python benchmarks/bench_ecdf.py`` (``--rows`` scales it).  All are measured in
this one run, in turn (best of ``--repeats`` each); the ratios are printed with issue
19's bars (rank link <= 1.5x, with ``shuffle=True`` <= 2.0x; both with NumPy's AVX-512
sort and without,
``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"``; on a CPU without AVX-512,
``NPY_DISABLE_CPU_FEATURES="X86_V3"`` turns off NumPy's AVX2 sort instead -- see which
names NumPy accepts with ``np.show_runtime()``).  The kernels' large sorts take NumPy's,
Polars' or (with the compiled kernels) the radix sort, whichever
:mod:`polars_ppdm.kernels.sorting` measures fastest here; the rows are also timed with
each forced (``PPDM_SORT``), to show all.  Peak memory is measured
in a fresh process: the high-water RSS during the resampling minus the RSS with the
input loaded, against the input's size (bar <= 3x).

The floor rows time, alone and on the same threads, the work these bits need whatever
the code: per column the sort of its words (the ranks), the running sums of the n + 1
keyed exponentials (the sample: the PRF and the portable logarithm, bit for bit) and the
scatter of n values to their rows; with ``shuffle=True`` also the sort of the n
shuffle words and the gather of the frame's rows.  No code of these bits can be faster
than its floor: when the floor's ratio is above a bar, the bar is out of reach here.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl
from _timing import best_seconds_interleaved, machine  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm
from polars_ppdm.kernels import _native
from polars_ppdm.kernels.ecdf import order_keys
from polars_ppdm.kernels.prf import first_words
from polars_ppdm.kernels.sorting import sort_path, sort_words
from polars_ppdm.kernels.spacings import running_sums


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


def floors(df: pl.DataFrame, secret: bytes) -> dict[str, object]:
    """The floor runs (see the module's notes): their inputs are made here, untimed."""
    n, columns = df.height, df.columns
    # The words the kernel sorts: each value's key prefix above its row index.
    shift = np.uint64(max(1, (n - 1).bit_length()))
    index = np.arange(n + 1, dtype=np.uint64)
    words = {
        c: (order_keys(df[c].to_numpy()).view(np.uint64) >> shift << shift) | index[:-1] for c in columns
    }
    shuffle_words = (first_words(secret, 1, index[:-1]) >> shift << shift) | index[:-1]
    rows = np.random.default_rng(1).permutation(n)

    def column(i: int) -> None:
        ranked = words[columns[i]].copy()
        sort_words(ranked, low_bits=int(shift))
        sums = np.empty(n)
        running_sums(secret, i, n, sums, keys=index)
        released = np.empty(n)
        released[rows] = sums

    def rank() -> None:
        with ThreadPoolExecutor(min(len(columns), pl.thread_pool_size())) as pool:
            list(pool.map(column, range(len(columns))))

    def shuffled() -> None:
        with ThreadPoolExecutor(min(len(columns), pl.thread_pool_size())) as pool:
            slots = pool.submit(sort_words, shuffle_words.copy(), low_bits=int(shift))
            list(pool.map(column, range(len(columns))))
            slots.result()
        df[rows]

    return {"floor rank": rank, "floor shuffle": shuffled}


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
    chosen = sort_path(prefixed=True)  # measured once in this process, before PPDM_SORT is set below
    paths = ("numpy", "polars", "radix") if _native.NATIVE is not None else ("numpy", "polars")

    def with_sort(path: str, run):  # the kernels read PPDM_SORT at call time
        def timed() -> object:
            os.environ["PPDM_SORT"] = path
            try:
                return run()
            finally:
                os.environ.pop("PPDM_SORT")

        return timed

    def rank() -> object:
        return ppdm.ecdf_resample(df, df.columns, bins=100, secret=secret)

    def shuffled() -> object:
        return ppdm.ecdf_resample(df, df.columns, bins=100, secret=secret, shuffle=True)

    seconds = best_seconds_interleaved(
        {
            "sort": lambda: df.select(pl.all().sort()),
            "rank": rank,
            "shuffle": shuffled,
            **{f"rank {path}": with_sort(path, rank) for path in paths},
            **{f"shuffle {path}": with_sort(path, shuffled) for path in paths},
            **floors(df, ppdm.resolve_secret(secret).key),
        },
        args.repeats,
    )
    sort_s = seconds["sort"]
    print(f"{args.rows:,} rows x {args.columns} columns, best of {args.repeats}; the kernels' sort: {chosen}")
    print(f"{'Polars sort of the columns':56s} {sort_s:7.3f} s")
    for label, bar in (("rank", 1.5), ("shuffle", 2.0)):
        name = "rank link" if label == "rank" else "rank link, shuffle"
        for suffix, how in (("", f"{chosen}, measured"), *((f" {path}", f"{path} forced") for path in paths)):
            s = seconds[label + suffix]
            print(f"{f'ecdf_resample ({name}; {how})':56s} {s:7.3f} s  {s / sort_s:5.2f}x sort (bar {bar})")
        s = seconds[f"floor {label}"]
        print(
            f"{f'floor: its sorts, keyed sums, scatter ({chosen})':56s} {s:7.3f} s  {s / sort_s:5.2f}x sort"
        )
    extra, size = peak_memory(args.rows, args.columns)
    print(
        f"peak memory above the input: {extra:.0f} MB for a {size:.0f} MB input = {extra / size:.2f}x (bar 3.0)"
    )


if __name__ == "__main__":
    main()
