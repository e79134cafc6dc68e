"""Benchmark: randomized response on 100M rows, against numpy and against our own kernel.

Run ``python benchmarks/bench_rr.py`` (or ``make bench``); ``--rows`` scales it down.
Every figure is measured in this one run (best of ``--repeats``) and printed as a ratio
to a baseline measured in the same run:

* **numpy flip**: ``x ^ (default_rng().random(n) >= p)`` on a numpy bool array -- the
  obvious way, which is not secure (a seed an attacker can solve for, and no row keys);
* **AES kernel**: the same keyed AES draws and the same bits as every engine, with no
  dataframe around them -- :func:`polars_ppdm.kernels.rr.disguise_codes` on a numpy bool
  array, and :func:`polars_ppdm.kernels.rr.keep_decisions`, the keep decisions alone (what
  the Polars path runs for a Boolean column, which Polars then applies to its bitmap); both
  key each row's block by its unit and value; the bar uses the faster of the two;
* **AES alone**: block encryption at ``stream || key`` with a no-op consumer (the floor of
  any AES-based disguise, without the value in the block; informational);
* **AES to uniform doubles, then flip**: the pipeline DESIGN.md measured at ~6 ns/row
  (informational: the kernel skips the doubles and compares the words directly).

Three floors measured in the same run show what the engines cost by themselves:

* **Polars streaming, identity UDF**: a Python UDF on the same two inputs that returns its
  first one -- what the streaming engine spends handing each morsel to Python and back;
* **DuckDB identity Arrow UDF**: a Python Arrow UDF of ``ppdm_rr_disguise``'s signature
  that returns ``x`` -- what DuckDB spends calling Python per 2048-row vector;
* **DuckDB disguise alone**: a UDF of the same signature that runs ``ppdm_rr_disguise``'s
  disguise (the same AES draws and bitmap work, the same bits) with its arguments resolved
  once, skipping the per-vector checks that the constant arguments are constant and the
  secret's variable unchanged -- the floor of any Python UDF that disguises per vector.

Bars (issues 2 and 19): Polars streaming <= 2.0x numpy and <= 1.3x the AES kernel; DuckDB
bulk path <= 2.0x numpy; the scalar ``ppdm_rr_disguise`` <= 1.5x the identity Arrow UDF,
on one DuckDB thread and on the default threads; peak RSS of scan_parquet -> rr_disguise
-> sink_parquet over the rows <= 200 MB (a fresh process).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
from _timing import best_seconds, machine  # benchmarks/ is the script's own folder
from duckdb.func import ARROW, SPECIAL

import polars_ppdm as ppdm
from polars_ppdm._validation import keep_probability
from polars_ppdm.duckdb.scalar import _binary_disguise
from polars_ppdm.kernels.prf import prf_words, stream_id, uniform
from polars_ppdm.kernels.rr import disguise_codes, keep_decisions

P = 0.9
SECRET = ppdm.Secret.generate(128)


def peak_rss_mb(source: Path, target: Path, disguise: bool) -> tuple[float, float, int]:
    """Peak RSS of a fresh process streaming the parquet file through (optionally) rr_disguise.

    The peak is reset after start-up (``/proc/self/clear_refs``) where Linux allows it,
    since a child can inherit its parent's high-water mark; the import cost is printed
    separately so the pipeline's own share is visible.
    """
    script = textwrap.dedent(
        f"""
        import resource, polars as pl, polars_ppdm as ppdm

        def peak_mb():
            try:
                with open("/proc/self/status") as status:
                    line = next(l for l in status if l.startswith("VmHWM:"))
                return int(line.split()[1]) / 1024
            except OSError:
                return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
        except OSError:
            pass
        imported = peak_mb()
        lf = pl.scan_parquet({str(source)!r})
        if {disguise}:
            lf = lf.with_columns(pl.col("x").ppdm.rr_disguise(p={P}, secret=ppdm.Secret.generate(128), key="id"))
        lf.sink_parquet({str(target)!r})
        peak = peak_mb()
        rows = pl.scan_parquet({str(target)!r}).select(pl.len()).collect().item()
        print(imported, peak, rows)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    imported, peak, rows = out.stdout.split()
    return float(imported), float(peak), int(rows)


def streaming_with_morsel_size(n: int, morsel_rows: int, repeats: int) -> float:
    """Seconds of the keyed Polars streaming query in a process with bigger morsels.

    Polars reads ``POLARS_IDEAL_MORSEL_SIZE`` once at start-up, hence the subprocess.
    Fewer, bigger batches amortise the fixed cost of each Python call.
    """
    script = textwrap.dedent(
        f"""
        import time, numpy as np, polars as pl, polars_ppdm as ppdm
        frame = pl.DataFrame({{"id": np.arange({n}), "x": np.random.default_rng(0).random({n}) < 0.3}})
        query = frame.lazy().select(pl.col("x").ppdm.rr_disguise(p={P}, secret=ppdm.Secret.generate(128), key="id"))
        best = float("inf")
        for _ in range({repeats}):
            started = time.perf_counter()
            query.collect(engine="streaming")
            best = min(best, time.perf_counter() - started)
        print(best)
        """
    )
    env = {**os.environ, "POLARS_IDEAL_MORSEL_SIZE": str(morsel_rows)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout)


UDF, IDENTITY_UDF, DISGUISE_ALONE = "ppdm_rr_disguise", "identity Arrow UDF", "disguise alone"


def scalar_udf_seconds(con: duckdb.DuckDBPyConnection, repeats: int) -> dict[tuple[str, str], float]:
    """``ppdm_rr_disguise``, an identity Arrow UDF of its signature and its disguise alone
    over table ``u``, on one DuckDB thread and on the default threads, interleaved so that
    all see the same machine."""
    keep, word = keep_probability(P, None, 2, UDF), stream_id("x")

    def disguise_alone(x, p, epsilon, secret, key, stream):
        return _binary_disguise(UDF, x, "x", key, keep, SECRET.key, word)

    T = duckdb.sqltypes
    for name, func in (
        ("_bench_identity", lambda x, p, epsilon, secret, key, stream: x),
        ("_bench_disguise", disguise_alone),
    ):
        con.create_function(
            name,
            func,
            [T.BOOLEAN, T.DOUBLE, T.DOUBLE, T.VARCHAR, T.BIGINT, T.VARCHAR],
            T.BOOLEAN,
            type=ARROW,
            null_handling=SPECIAL,
            side_effects=True,
        )
    os.environ["PPDM_BENCH_SECRET"] = SECRET.reveal_hex()
    queries = {
        UDF: "ppdm_rr_disguise(x, 0.9, 'env:PPDM_BENCH_SECRET', id, 'x')",
        IDENTITY_UDF: "_bench_identity(x, 0.9, NULL, 'env:PPDM_BENCH_SECRET', id, 'x')",
        DISGUISE_ALONE: "_bench_disguise(x, 0.9, NULL, 'env:PPDM_BENCH_SECRET', id, 'x')",
    }
    same = f"SELECT count(*) FILTER (WHERE {queries[UDF]} IS DISTINCT FROM {queries[DISGUISE_ALONE]}) FROM u"
    assert con.execute(same).fetchone()[0] == 0, "the disguise alone must give ppdm_rr_disguise's bits"
    default_threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    seconds = {}
    for threads, setting in (("1 thread", 1), ("default threads", default_threads)):
        con.execute(f"SET threads = {setting}")
        for name, call in queries.items():
            sql = f"SELECT count(*) FILTER (WHERE {call}) FROM u"
            seconds[name, threads] = best_seconds(lambda sql=sql: con.execute(sql).fetchone(), repeats)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--udf-rows", type=int, default=10_000_000, help="rows for the scalar DuckDB UDF")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-rss", action="store_true")
    args = parser.parse_args()
    print(machine())
    n = args.rows
    print(
        f"polars {pl.__version__}, duckdb {duckdb.__version__}, numpy {np.__version__}, "
        f"{os.cpu_count()} cores, {n:,} rows, p = {P}, best of {args.repeats}"
    )

    rss_lines, rss_bar = [], None
    if not args.skip_rss:
        # First, while this process is small: a fresh process streams a parquet file.
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "in.parquet"
            duckdb.execute(
                f"COPY (SELECT i AS id, hash(i) % 10 < 3 AS x FROM range({n}) r(i)) TO '{source}' (FORMAT parquet)"
            )
            imported, plain, _ = peak_rss_mb(source, Path(tmp) / "plain.parquet", disguise=False)
            _, peak, rows = peak_rss_mb(source, Path(tmp) / "out.parquet", disguise=True)
        assert rows == n
        rss_lines = [
            f"peak RSS after importing polars and polars_ppdm (no pyarrow, no duckdb): {imported:.0f} MB",
            f"peak RSS scan_parquet -> sink_parquet, no disguise: {plain:.0f} MB",
            f"peak RSS scan_parquet -> rr_disguise -> sink_parquet: {peak:.0f} MB ({rows:,} rows out)",
        ]
        rss_bar = ("peak RSS <= 200 MB", peak, 200.0)

    x = np.random.default_rng(0).random(n) < 0.3
    ids = np.arange(n, dtype=np.int64)
    frame = pl.DataFrame({"id": ids, "x": x})
    secret, stream = SECRET.key, stream_id("x")

    timings: dict[str, float] = {}
    timings["numpy flip"] = best_seconds(lambda: x ^ (np.random.default_rng(1).random(n) >= P), args.repeats)
    timings["AES alone"] = best_seconds(
        lambda: prf_words(secret, stream, ids, lambda start, stop, words: None), args.repeats
    )
    timings["AES to uniform doubles, then flip (DESIGN.md)"] = best_seconds(
        lambda: x ^ (uniform(secret, stream, ids) >= P), args.repeats
    )
    timings["AES kernel, numpy bool array"] = best_seconds(
        lambda: disguise_codes(x, 2, P, secret, stream, ids), args.repeats
    )
    timings["AES kernel, keep mask (what Polars runs)"] = best_seconds(
        lambda: keep_decisions(x, P, secret, stream, ids), args.repeats
    )
    keyed = frame.lazy().select(pl.col("x").ppdm.rr_disguise(p=P, secret=SECRET, key="id"))
    timings["Polars streaming, key column"] = best_seconds(
        lambda: keyed.collect(engine="streaming"), args.repeats
    )
    positional = frame.lazy().select(pl.col("x").ppdm.rr_disguise(p=P, secret=SECRET))
    timings["Polars streaming, row position"] = best_seconds(
        lambda: positional.collect(engine="streaming"), args.repeats
    )
    timings["Polars streaming, key column, 1M-row morsels"] = streaming_with_morsel_size(
        n, 1_000_000, args.repeats
    )
    timings["Polars in-memory, key column"] = best_seconds(
        lambda: keyed.collect(engine="in-memory"), args.repeats
    )
    identity = frame.lazy().select(
        pl.map_batches(["x", "id"], lambda inputs: inputs[0], return_dtype=pl.Boolean, is_elementwise=True)
    )
    timings["Polars streaming, identity UDF (floor)"] = best_seconds(
        lambda: identity.collect(engine="streaming"), args.repeats
    )

    # Same bits everywhere: the benchmark checks it before reporting speed.
    kernel_bits = disguise_codes(x, 2, P, secret, stream, ids)
    assert np.array_equal(keyed.collect(engine="streaming")["x"].to_numpy(), kernel_bits)

    con = ppdm.duckdb.register(duckdb.connect())
    con.execute(f"CREATE TABLE t AS SELECT i AS id, hash(i) % 10 < 3 AS x FROM range({n}) r(i)")

    def duckdb_bulk() -> None:
        reader = ppdm.duckdb.rr_disguise_batches(
            con, "SELECT id, x FROM t", "x", p=P, secret=SECRET, key="id"
        )
        for _ in reader:
            pass

    timings["DuckDB bulk path"] = best_seconds(duckdb_bulk, args.repeats)
    timings["DuckDB table scan to Arrow (no disguise)"] = best_seconds(
        lambda: [None for _ in con.cursor().sql("SELECT id, x FROM t").to_arrow_reader(1_000_000)],
        args.repeats,
    )
    udf_rows = min(args.udf_rows, n)
    con.execute(f"CREATE TABLE u AS SELECT * FROM t LIMIT {udf_rows}")
    udf_seconds = scalar_udf_seconds(con, args.repeats)

    numpy_s = timings["numpy flip"]
    kernel_s = min(
        timings["AES kernel, numpy bool array"], timings["AES kernel, keep mask (what Polars runs)"]
    )
    print(f"\n{'':46s} {'seconds':>8s} {'ns/row':>7s} {'x numpy':>8s} {'x kernel':>9s}")
    for name, seconds in timings.items():
        print(
            f"{name:46s} {seconds:8.3f} {seconds / n * 1e9:7.2f} "
            f"{seconds / numpy_s:8.2f} {seconds / kernel_s:9.2f}"
        )
    print()
    for (name, threads), seconds in udf_seconds.items():
        label = f"DuckDB {name}, {threads} ({udf_rows:,} rows)"
        print(f"{label:62s} {seconds:8.3f} {seconds / udf_rows * 1e9:7.1f} ns/row")

    stream_s = timings["Polars streaming, key column"]
    bars = [
        ("Polars streaming <= 2.0x numpy", stream_s / numpy_s, 2.0),
        ("Polars streaming <= 1.3x AES kernel (faster one)", stream_s / kernel_s, 1.3),
        ("DuckDB bulk path <= 2.0x numpy", timings["DuckDB bulk path"] / numpy_s, 2.0),
    ]
    for threads in ("1 thread", "default threads"):
        ratio = udf_seconds[UDF, threads] / udf_seconds[IDENTITY_UDF, threads]
        bars.append((f"ppdm_rr_disguise <= 1.5x identity UDF, {threads}", ratio, 1.5))
        floor = udf_seconds[DISGUISE_ALONE, threads] / udf_seconds[IDENTITY_UDF, threads]
        print(f"  {threads}: disguise alone {floor:.2f}x the identity UDF (floor of a per-vector disguise)")
    for line in rss_lines:
        print(line)
    if rss_bar:
        bars.append(rss_bar)
    print()
    for label, value, bar in bars:
        print(f"{label:50s} {value:8.2f}  {'ok' if value <= bar else 'MISSED'}")


if __name__ == "__main__":
    main()
