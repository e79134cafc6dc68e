"""Benchmark: `ppdm run` against the same Polars streaming query written by hand.

    python benchmarks/bench_pipeline.py               # 100M rows (about 2 GB in /tmp)
    python benchmarks/bench_pipeline.py --rows 5000000 # a quick run

The input is a Parquet file generated into a temporary folder (``--folder``): an id
column, three Boolean columns and two float columns.  Both sides disguise the three
Boolean columns by randomized response (epsilon 1, keyed by id) and add Gaussian noise to
the two float columns, streaming scan -> perturb -> sink_parquet, each in a fresh
process whose peak RSS is read from ``resource.getrusage(RUSAGE_CHILDREN)``:

* **by hand**: ``scan_parquet``, ``ppdm.rr_disguise``, ``ppdm.add_noise``,
  ``sink_parquet`` -- the query a user would write;
* **ppdm run**: the pipeline file doing the same, with everything a run adds: the
  ledger (DuckDB), the inputs' SHA-256, the temporary file, fsync and rename, the
  output's SHA-256 and the manifest.

Bars (issue 15): ``ppdm run`` peaks at <= 300 MB RSS and takes <= 1.3x the hand query.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HAND = """
import sys, polars as pl, polars_ppdm as ppdm
source, target, secret = sys.argv[1:4]
frame = pl.scan_parquet(source)
frame = ppdm.rr_disguise(frame, ["a", "b", "c"], epsilon=1.0, secret=secret, key="id")
frame = ppdm.add_noise(frame, ["x", "y"], scale=1.0, secret=secret, key="id")
frame.sink_parquet(target)
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
# the largest child the wrapper ever had, i.e. this side alone.
WRAPPER = """
import resource, subprocess, sys, time
started = time.perf_counter()
subprocess.run(sys.argv[1:], check=True)
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--repeats", type=int, default=1, help="best of N timings per side")
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
    secret = "ab" * 32
    env = {**os.environ, "PPDM_SECRET": secret}
    pipeline = folder / "pipeline.toml"
    pipeline.write_text(PIPELINE.format(source=source, folder=folder))
    sides = {
        "by hand (Polars streaming)": [
            sys.executable,
            "-c",
            HAND,
            str(source),
            str(folder / "hand_out.parquet"),
            secret,
        ],
        "ppdm run": [sys.executable, "-m", "polars_ppdm.pipeline", "run", "--quiet", str(pipeline)],
    }
    results = {}
    for name, command in sides.items():
        best, peak = float("inf"), 0.0
        for _ in range(args.repeats):
            (folder / "ledger.duckdb").unlink(missing_ok=True)  # each repeat a new run that spends
            out = subprocess.run(
                [sys.executable, "-c", WRAPPER, *command], env=env, check=True, capture_output=True, text=True
            ).stdout.split()
            best, peak = min(best, float(out[0])), max(peak, float(out[1]))
        results[name] = (best, peak)
        print(f"{name:30s} {best:8.2f} s   peak RSS {peak:7.0f} MB", flush=True)
    hand, run = results["by hand (Polars streaming)"], results["ppdm run"]
    same = (folder / "hand_out.parquet").stat().st_size, (folder / "pipeline_out.parquet").stat().st_size
    print(
        f"ppdm run / by hand: time {run[0] / hand[0]:.2f}x (bar <= 1.3x); peak RSS {run[1]:.0f} MB (bar <= 300 MB)"
    )
    print(f"output sizes (bytes): by hand {same[0]:,}, ppdm run {same[1]:,}")


if __name__ == "__main__":
    main()
