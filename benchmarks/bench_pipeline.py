"""Benchmark: `ppdm run` against the same Polars streaming query written by hand.

    python benchmarks/bench_pipeline.py                    # 100M rows (about 2 GB in /tmp)
    python benchmarks/bench_pipeline.py --rows 5000000     # a quick run
    python benchmarks/bench_pipeline.py --repeats 3        # best of 3, the sides interleaved
    python benchmarks/bench_pipeline.py --morsel-size 20000  # both sides with a smaller Polars morsel

The input is a Parquet file generated into a temporary folder (``--folder``): an id
column, three Boolean columns and two float columns.  Both sides disguise the three
Boolean columns by randomized response (epsilon 1, keyed by id) and add Gaussian noise to
the two float columns, streaming scan -> perturb -> sink_parquet, each in a fresh
process whose peak RSS is read from ``resource.getrusage(RUSAGE_CHILDREN)``:

* **by hand**: ``scan_parquet``, ``ppdm.rr_disguise``, ``ppdm.add_noise``,
  ``sink_parquet`` with the same (default) options -- the query a user would write, under
  the secret ``ppdm run`` derives for the dataset (``perturbation_secret``); the same file,
  byte for byte (checked);
* **by hand + fsync**: the same, then ``os.fsync`` of the output: the durability a run
  needs for its atomic rename (a run's output survives a crash or power loss whole);
* **ppdm run --no-report**: the pipeline file doing the same, with everything a run
  adds: the ledger (DuckDB), the inputs' SHA-256 (before anything is reserved or read:
  the run id needs it), the temporary file, the output's SHA-256 (hashed while Polars
  writes it), fsync and rename, and the manifest;
* **ppdm run**: the same with its default report (issue 17, after the bars were set):
  both HTML pages, which read the output and the inputs back a column at a time.

Bars (issue 15, the run without the report that came later): ``ppdm run`` peaks at <= 300
MB RSS and takes <= 1.3x the hand query; both ratios are printed (against the query alone,
and against the query plus the fsync a durable write needs), with the machine they were
measured on.  What the report adds is printed after them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import machine  # benchmarks/ is the script's own folder

HAND = """
import sys, polars as pl, polars_ppdm as ppdm
from polars_ppdm.jobs.run import perturbation_secret
source, target, secret = sys.argv[1:4]
# What ppdm run keys a dataset's row-wise steps by: HMAC(secret, dataset name).
secret = perturbation_secret(ppdm.Secret.from_hex(secret), "bench")
frame = pl.scan_parquet(source)
frame = ppdm.rr_disguise(frame, ["a", "b", "c"], epsilon=1.0, secret=secret, key="id")
frame = ppdm.add_noise(frame, ["x", "y"], scale=1.0, secret=secret, key="id")
frame.sink_parquet(target)
if len(sys.argv) > 4:  # "fsync": as durable as ppdm run's output
    import os
    with open(target, "rb") as file:
        os.fsync(file.fileno())
"""

PIPELINE = """
[dataset]
name = "bench"
inputs = ["{source}"]
key = "id"
epsilon_budget = 1e9
ledger = "{folder}/ledger.duckdb"
[secret]
env = "PPDM_SECRET"
[[perturb]]
step = "rr_disguise"
columns = ["a", "b", "c"]
epsilon = 1.0
[[perturb]]
step = "add_noise"
columns = ["x", "y"]
scale = 1.0
[[perturb]]
step = "keep"
columns = ["id"]
[output]
table = "{folder}/pipeline_out.parquet"
manifest = "{folder}/manifest.json"
"""


def generate(path: Path, rows: int) -> None:
    """Write the input in chunks (flat memory), with a fixed NumPy seed."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(15)
    chunk = 5_000_000
    writer = None
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        table = pa.table(
            {
                "id": np.arange(start, start + n, dtype=np.int64),
                "a": rng.random(n) < 0.3,
                "b": rng.random(n) < 0.5,
                "c": rng.random(n) < 0.7,
                "x": rng.normal(0, 1, n),
                "y": rng.normal(5, 2, n),
            }
        )
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    assert writer is not None
    writer.close()


# Each side runs under this wrapper, in a process of its own: RUSAGE_CHILDREN's ru_maxrss is
# the largest child the wrapper ever had, i.e. this side alone; its CPU time (user + system)
# is less disturbed than the wall time when other processes share the machine.
WRAPPER = """
import resource, subprocess, sys, time
started = time.perf_counter()
subprocess.run(sys.argv[1:], check=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - started, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime)
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument(
        "--repeats", type=int, default=1, help="best of N timings per side (the sides interleaved)"
    )
    parser.add_argument(
        "--morsel-size",
        type=int,
        default=None,
        help="POLARS_IDEAL_MORSEL_SIZE for both sides (rows per streaming batch; Polars' default 100000)",
    )
    parser.add_argument(
        "--folder", type=Path, default=None, help="where the data goes (default: a new /tmp folder)"
    )
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="ppdm-bench-pipeline-"))
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"input_{args.rows}.parquet"
    if not source.exists():
        print(f"generating {args.rows:,} rows into {source} ...", flush=True)
        generate(source, args.rows)
    print(f"input: {source} ({source.stat().st_size / 2**20:,.0f} MiB, {args.rows:,} rows)")
    # Fixed and public (a benchmark, not a release), without a guessable pattern: ppdm run
    # refuses a repeated one such as "ab" * 32.
    secret = "5e3b9a1cc0ffee0071d24f86a9e0b35c2d8e17f64a90c3b5e2718d6f09ab4c31"
    env = {**os.environ, "PPDM_SECRET": secret}
    if args.morsel_size is not None:
        env["POLARS_IDEAL_MORSEL_SIZE"] = str(args.morsel_size)
    pipeline = folder / "pipeline.toml"
    pipeline.write_text(PIPELINE.format(source=source, folder=folder))
    hand = [sys.executable, "-c", HAND, str(source), str(folder / "hand_out.parquet"), secret]
    ppdm_run = [sys.executable, "-m", "polars_ppdm.jobs", "run", "--quiet", str(pipeline)]
    sides = {
        "by hand (Polars streaming)": hand,
        "by hand + fsync": [*hand, "fsync"],
        "ppdm run --no-report": [*ppdm_run, "--no-report"],
        "ppdm run (with its report)": ppdm_run,
    }
    print(machine())
    if args.morsel_size is not None:
        print(f"both sides with POLARS_IDEAL_MORSEL_SIZE={args.morsel_size}")
    results = {name: (float("inf"), 0.0, float("inf")) for name in sides}
    for _ in range(args.repeats):
        for name, command in sides.items():
            (folder / "ledger.duckdb").unlink(missing_ok=True)  # each repeat a new run that spends
            out = subprocess.run(
                [sys.executable, "-c", WRAPPER, *command], env=env, check=True, capture_output=True, text=True
            ).stdout.split()
            best, peak, cpu = results[name]
            results[name] = (min(best, float(out[0])), max(peak, float(out[1])), min(cpu, float(out[2])))
    for name, (best, peak, cpu) in results.items():
        print(f"{name:30s} {best:8.2f} s wall  {cpu:8.2f} s CPU   peak RSS {peak:7.0f} MB")
    plain, durable, run, reported = (results[name] for name in sides)
    print(
        f"ppdm run --no-report / by hand: wall {run[0] / plain[0]:.2f}x, CPU {run[2] / plain[2]:.2f}x; "
        f"/ by hand + fsync: wall {run[0] / durable[0]:.2f}x, CPU {run[2] / durable[2]:.2f}x (bar <= 1.3x); "
        f"peak RSS {run[1]:.0f} MB, by hand {plain[1]:.0f} MB (bar <= 300 MB)"
    )
    print(
        f"the report adds {reported[0] - run[0]:.2f} s wall ({reported[0] / plain[0]:.2f}x by hand with it), "
        f"{reported[2] - run[2]:.2f} s CPU; peak RSS {reported[1]:.0f} MB"
    )
    from polars_ppdm.jobs.atomic import file_sha256

    same = file_sha256(folder / "hand_out.parquet") == file_sha256(folder / "pipeline_out.parquet")
    size = (folder / "pipeline_out.parquet").stat().st_size
    print(f"output: {size:,} bytes; by hand and ppdm run byte-identical: {same}")


if __name__ == "__main__":
    main()
