"""Benchmark: how each row-wise step and ``dp_group_by`` scale from 1 thread to all cores.

Run ``.venv/bin/python benchmarks/bench_scaling.py`` (10M rows; ``--quick``: 200,000
rows, for a check that it runs; ``--rows N`` for any size).  CI does not run it.

Every step runs in a fresh subprocess per thread count, with ``POLARS_MAX_THREADS`` set
before Polars is imported (Polars sizes its thread pool once, at import) and DuckDB's
``threads`` setting to the same count.  Each step is timed against a baseline: a plain,
non-private Polars (or DuckDB) expression of the same shape on the same frame -- the same
columns in, the same columns out, one cheap per-row operation instead of the keyed draw:

===================  ==================================================  ===============================
step                 polars_ppdm call                                    baseline
===================  ==================================================  ===============================
rr_disguise          3 Boolean columns, p = 0.9, ``key="id"``              ``c ^ (hash(id) % 10 == 0)``
add_noise            3 float columns, Gaussian, ``key="id"``               ``c + hash(id) * 2**-64``
spiral               ``apply_spiral_key`` on 3 float columns, 7 rounds     ``c * 1.5 + 0.25`` per column
ecdf_resample        2 float columns, 100 bins, rank link                  a sort of each column
DuckDB scalar UDF    ``ppdm_rr_disguise`` on a Boolean column (rows / 10)  ``x <> (hash(id) % 10 = 0)``
dp_group_by          count, sum, mean by 100 groups, bounded units         ``group_by().agg(len, sum, mean)``
===================  ==================================================  ===============================

Printed per step: seconds at 1 and N threads (after a warm-up call, best of ``--repeats``, both sides timed
in turn in the same process), the speed-up from 1 to N threads of each, and the ratio
private / baseline at each thread count.  The top line says whether the compiled kernels
(``polars_ppdm.kernels._native``) or the NumPy ones ran, and which sort the ECDF kernel
took.  On a shared machine the absolute times move; the ratios, measured side by side,
move less (the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = ["rr_disguise", "add_noise", "spiral", "ecdf_resample", "duckdb_udf", "dp_group_by"]


def kernels_in_use() -> str:
    """Which per-row kernels the public API runs: compiled or NumPy (detected, never required)."""
    try:
        from polars_ppdm.kernels import _native
    except ImportError:
        return "NumPy kernels (no polars_ppdm.kernels._native)"
    native = getattr(_native, "NATIVE", None)
    if native is None:
        return "NumPy kernels (polars_ppdm_native not installed, or PPDM_NATIVE=0)"
    return f"compiled kernels ({getattr(native, '__name__', 'polars_ppdm_native')})"


def worker(rows: int, threads: int, repeats: int, steps: list[str]) -> dict[str, list[float]]:
    """In a subprocess whose POLARS_MAX_THREADS is ``threads``: {step: [private s, baseline s]}."""
    import numpy as np
    import polars as pl

    import polars_ppdm as ppdm
    from polars_ppdm import dp

    sys.path.insert(0, str(HERE))
    from _timing import best_seconds_interleaved

    assert pl.thread_pool_size() == threads, (pl.thread_pool_size(), threads)
    secret = ppdm.Secret.for_tests(2026)  # public: a benchmark, not a release
    rng = np.random.default_rng(0)
    ids = np.arange(rows, dtype=np.int64)
    bools = pl.DataFrame({"id": ids, **{c: rng.random(rows) < 0.5 for c in "abc"}})
    floats = pl.DataFrame({"id": ids, **{c: rng.normal(5.0, 2.0, rows) for c in "xyz"}})
    hashed = pl.col("id").hash(7)
    pairs = {}
    if "rr_disguise" in steps:
        pairs["rr_disguise"] = (
            lambda: ppdm.rr_disguise(bools, list("abc"), p=0.9, secret=secret, key="id"),
            lambda: bools.with_columns(pl.col(c) ^ (hashed % 10 == 0) for c in "abc"),
        )
    if "add_noise" in steps:
        pairs["add_noise"] = (
            lambda: ppdm.add_noise(floats, list("xyz"), dist="gaussian", scale=1.0, secret=secret, key="id"),
            lambda: floats.with_columns(pl.col(c) + hashed.cast(pl.Float64) * 2.0**-64 for c in "xyz"),
        )
    if "spiral" in steps:
        key = ppdm.spiral_key(list("xyz"), bounds={c: (-5.0, 15.0) for c in "xyz"}, rounds=7, secret=secret)
        pairs["spiral"] = (
            lambda: ppdm.apply_spiral_key(floats, key),
            lambda: floats.with_columns(pl.col(c) * 1.5 + 0.25 for c in "xyz"),
        )
    if "ecdf_resample" in steps:
        pairs["ecdf_resample"] = (
            lambda: ppdm.ecdf_resample(floats, ["x", "y"], bins=100, secret=secret),
            lambda: floats.select(pl.col("x", "y").sort()),
        )
    if "duckdb_udf" in steps:
        try:
            import duckdb
        except ImportError:
            duckdb = None
        if duckdb is not None:
            con = ppdm.duckdb.register(duckdb.connect())
            con.execute(f"SET threads = {threads}")
            con.execute(
                f"CREATE TABLE u AS SELECT i AS id, hash(i) % 10 < 3 AS x FROM range({max(rows // 10, 1)}) r(i)"
            )
            os.environ["PPDM_BENCH_SECRET"] = secret.reveal_hex()
            udf = "SELECT count(*) FILTER (WHERE ppdm_rr_disguise(x, 0.9, 'env:PPDM_BENCH_SECRET', id, 'x')) FROM u"
            plain = "SELECT count(*) FILTER (WHERE x <> (hash(id) % 10 = 0)) FROM u"
            pairs["duckdb_udf"] = (lambda: con.execute(udf).fetchall(), lambda: con.execute(plain).fetchall())
    if "dp_group_by" in steps:
        frame = pl.DataFrame(
            {
                "unit": rng.integers(0, max(rows // 4, 1), rows),
                "group": rng.integers(0, 100, rows),
                "amount": rng.gamma(2.0, 50.0, rows),
            }
        )
        groups = pl.DataFrame({"group": np.arange(100)})
        aggs = [dp.count(), dp.sum("amount", bounds=(0.0, 500.0)), dp.mean("amount", bounds=(0.0, 500.0))]
        pairs["dp_group_by"] = (
            lambda: ppdm.dp_group_by(
                frame.lazy(),
                "group",
                aggs,
                epsilon=1.0,
                privacy_unit="unit",
                max_groups_contributed=4,
                max_rows_per_group=8,
                public_groups=groups,
                secret=secret,
            ).collect(),
            lambda: frame.group_by("group").agg(
                pl.len(), pl.col("amount").sum(), pl.col("amount").mean().alias("mean")
            ),
        )
    out = {}
    for step, (private, baseline) in pairs.items():
        private(), baseline()  # warm-up: first-call costs (imports, JIT-less caches, thread pools)
        seconds = best_seconds_interleaved({"private": private, "baseline": baseline}, repeats)
        out[step] = [seconds["private"], seconds["baseline"]]
    return out


def run_worker(rows: int, threads: int, repeats: int, steps: list[str]) -> dict[str, list[float]]:
    env = {**os.environ, "POLARS_MAX_THREADS": str(threads)}
    command = [sys.executable, __file__, "--worker", "--rows", str(rows), "--threads", str(threads)]
    command += ["--repeats", str(repeats), "--steps", ",".join(steps)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        msg = f"worker with {threads} threads failed:\n{done.stderr[-3000:]}"
        raise SystemExit(msg)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rows", type=int, default=None, help="rows per frame (default 10M; --quick 200,000)"
    )
    parser.add_argument("--quick", action="store_true", help="small frames: a check that every step runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="N, the many-thread count")
    parser.add_argument(
        "--steps", default=",".join(STEPS), help=f"comma-separated subset of {','.join(STEPS)}"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows = args.rows or (200_000 if args.quick else 10_000_000)
    steps = [s for s in args.steps.split(",") if s]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        parser.error(f"--steps: unknown {unknown}; allowed: {STEPS}")
    if args.worker:
        print(json.dumps(worker(rows, args.threads, args.repeats, steps)))
        return

    sys.path.insert(0, str(HERE))
    from _timing import machine

    from polars_ppdm.kernels.sorting import sort_path

    print(machine())
    print(f"{kernels_in_use()}; the ECDF kernel's sort here: {sort_path()}")
    counts = sorted({1, args.threads})
    print(f"{rows:,} rows (DuckDB UDF: {max(rows // 10, 1):,}), threads {counts}, best of {args.repeats}")
    started = time.perf_counter()
    results = {t: run_worker(rows, t, args.repeats, steps) for t in counts}
    one, many = counts[0], counts[-1]
    head = (
        f"{'step':15s} {'private 1':>10s} {f'private {many}':>10s} {'speed-up':>8s} "
        f"{'base 1':>8s} {f'base {many}':>8s} {'speed-up':>8s} {'ratio 1':>8s} {f'ratio {many}':>8s}"
    )
    print(head)
    for step in steps:
        if step not in results[one]:
            print(f"{step:15s} skipped (DuckDB not installed)")
            continue
        (p1, b1), (pn, bn) = results[one][step], results[many][step]
        print(
            f"{step:15s} {p1:10.3f} {pn:10.3f} {p1 / pn:7.2f}x {b1:8.3f} {bn:8.3f} {b1 / bn:7.2f}x "
            f"{p1 / b1:7.2f}x {pn / bn:7.2f}x"
        )
    print(f"(seconds; ratio = private / baseline; {time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
