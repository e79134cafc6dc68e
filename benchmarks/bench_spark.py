"""Benchmark: polars_ppdm.spark on 10M rows in ``local[2]``, against Polars and plain Spark.

Run ``.venv/bin/python benchmarks/bench_spark.py`` (``--rows`` scales it down).  Every
figure is measured in this one run, each job run once as a warm-up (JVM start-up, JIT,
Python workers) and then timed ``--repeats`` times; the best is reported (the median is
printed beside it).  Input: one parquet file (columns ``id`` int64, ``a``, ``b``, ``c``
Boolean, ``x`` double ~ N(50, 15)) written once to a temporary folder and read by every
job, Polars and Spark alike.

Jobs and their baselines:

* **rr_disguise on a, b, c** (per-attribute, p = 0.9, key ``id``):

  - ``polars_ppdm.spark.rr_disguise`` (mapInArrow into the Polars function);
  - plain Spark: the non-private flip ``when(rand() < p, c).otherwise(~c)`` on the same
    three columns (one ``rand`` per column; not secure, not reproducible: the bar's
    baseline);
  - Polars: ``polars_ppdm.rr_disguise`` on ``scan_parquet`` (streaming engine);
  - plain Spark scan of the same four columns (the floor of any Spark job; informational);
  - with ``--aes-encrypt``: the same coins in Spark SQL alone, no Python on the executors
    (Spark's ``aes_encrypt`` over the library's AES blocks; checked bit for bit against
    the Polars result; informational: Spark builds a Cipher per row, 55 s for 10M rows x
    3 columns against 0.93 s for the plain flips, 60x, on 2026-11-28).

* **dp_histogram of x** (100 bins over (0, 100), epsilon 1):

  - ``polars_ppdm.spark.dp_histogram``;
  - plain Spark: a group-by count of the same bin index (``floor((x - low) * bins /
    (high - low))`` clipped to the edge bins), collected (100 rows);
  - Polars: ``polars_ppdm.dp_histogram`` on ``scan_parquet``.

The sink (``--sink``): ``noop`` (default) writes Spark results with
``df.write.format("noop")``, which evaluates every row and writes nothing, and Polars
collects in memory; ``parquet`` writes every row-level result to a parquet folder/file in
the temporary folder (Spark ``df.write.parquet``, Polars ``sink_parquet``).  Histograms
are 100 rows: always collected.

Each private Spark job is timed three ways: with Spark's Arrow defaults (10,000-row
batches, ``maxBytesPerBatch`` 64 MB), with ``spark.sql.execution.arrow.maxBytesPerBatch``
= 2147483647 (Int.MaxValue: Spark then skips the byte-size check it otherwise makes
after every row written to Python), and with that plus 100,000-row batches; the settings
are changed with ``spark.conf.set`` around the timed job only.  The last is
``polars_ppdm.spark.arrow_batches``' settings, under which the library runs its own
actions (the histogram's aggregate among them, whatever the session says); a lazy
result such as rr_disguise's runs under the settings of the action the user calls.
An identity ``mapInArrow`` (pyarrow batches passed through, no work) is timed with the
defaults and with those settings: the floor of any ``mapInArrow`` step.  CPU seconds are those of
the whole process tree (driver, JVM, Python workers) during the best run: with other work
on the machine, wall times move more than CPU times.

Before timing, the Spark results are checked against the Polars results (the same bits:
per column, the count of true values and the sum of ``id`` over them; the histograms
equal cell by cell), with aggregates only.

Bar (issue 16): the private Spark job <= 2x the plain Spark job.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from _timing import machine  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm
import polars_ppdm.spark as ppdm_spark
from polars_ppdm.spark._engine import ARROW_SETTINGS

P = 0.9
COLUMNS = ["a", "b", "c"]
BOUNDS, BINS, EPSILON = (0.0, 100.0), 100, 1.0
SECRET = ppdm.Secret.generate(128)
# Spark checks an Arrow batch's byte size against maxBytesPerBatch (default 64 MB) after
# every row it writes to Python, unless the limit is Int.MaxValue (Spark 4's
# BatchedPythonArrowInput.writeSizedBatch): that check is half of the JVM's time here.
MAX_BYTES, UNLIMITED = "spark.sql.execution.arrow.maxBytesPerBatch", "2147483647"
NO_SIZE_CHECK = "maxBytesPerBatch=2^31-1"
TUNED_ROWS = 100_000
TUNED = {MAX_BYTES: UNLIMITED, "spark.sql.execution.arrow.maxRecordsPerBatch": str(TUNED_ROWS)}
assert TUNED == ARROW_SETTINGS, "the tuned rows time polars_ppdm.spark.arrow_batches' settings"
IDENTITY = "mapInArrow identity (pyarrow, no work)"


def jvm_rr(F: Any, column: str) -> Any:
    """The library's randomized response of a Boolean column in Spark SQL alone: the same
    AES block per row (the value-keyed stream word XOR the value, then the key,
    both little-endian), encrypted by Spark's own ``aes_encrypt`` (ECB; its PKCS padding
    only appends a second block), the value kept where the first word is below the
    Bernoulli threshold.  No Python on the executors; Spark builds a javax.crypto Cipher
    for every row, which is what this times."""
    from polars_ppdm.kernels.prf import bernoulli_threshold, stream_id, value_stream

    base = value_stream(stream_id(column))
    threshold = bernoulli_threshold(P)
    assert threshold is not None
    stream = F.when(F.col(column), F.lit((base ^ 1).to_bytes(8, "little"))).otherwise(
        F.lit(base.to_bytes(8, "little"))
    )
    hex_key = F.lpad(F.hex(F.col("id")), 16, "0")  # big-endian; the ids are non-negative
    little = F.unhex(F.concat(*[F.substring(hex_key, 15 - 2 * i, 2) for i in range(8)]))
    block = F.aes_encrypt(F.concat(stream, little), F.lit(SECRET.key), F.lit("ECB"), F.lit("PKCS"))
    word = F.concat(*[F.substring(block, 8 - i, 1) for i in range(8)])  # word 0, big-endian
    keep = word < F.lit(threshold.to_bytes(8, "big"))  # binary order: unsigned, bytewise
    return F.when(keep, F.col(column)).otherwise(~F.col(column)).alias(column)


def java_version() -> str:
    java = (
        shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin"))
        if os.environ.get("JAVA_HOME")
        else None
    )
    java = java or shutil.which("java")
    if java is None:
        return "none"
    done = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    return (done.stderr or done.stdout).splitlines()[0] if done.returncode == 0 else "broken"


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and every live descendant: the Spark
    JVM and its Python workers (``/proc``; 0 where it is missing)."""
    parent, ticks = {}, {}
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[pid] = int(fields[1])
        ticks[pid] = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    me, total = os.getpid(), 0
    for pid, used in ticks.items():
        up = pid
        while up in parent and up not in (me, 0, 1):
            up = parent[up]
        total += used if up == me else 0
    return total / os.sysconf("SC_CLK_TCK")


def timed(run: Callable[[], Any], repeats: int) -> tuple[float, float, float]:
    """(best, median) wall seconds of ``repeats`` runs after one warm-up run, and the CPU
    seconds of the run with the best wall time (every core of the process tree)."""
    run()
    times, cpus = [], []
    for _ in range(repeats):
        cpu = tree_cpu_seconds()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
        cpus.append(tree_cpu_seconds() - cpu)
    best = int(np.argmin(times))
    return times[best], statistics.median(times), cpus[best]


def with_conf(spark: Any, conf: dict[str, str], run: Callable[[], Any]) -> Callable[[], Any]:
    """``run`` with Spark SQL settings changed for its duration (read when a job runs)."""

    def wrapped() -> Any:
        saved = {k: spark.conf.get(k) for k in conf}
        for k, v in conf.items():
            spark.conf.set(k, v)
        try:
            return run()
        finally:
            for k, v in saved.items():
                spark.conf.set(k, v)

    return wrapped


def write_input(path: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    pl.DataFrame(
        {
            "id": np.arange(n, dtype=np.int64),
            "a": rng.random(n) < 0.3,
            "b": rng.random(n) < 0.5,
            "c": rng.random(n) < 0.7,
            "x": rng.normal(50, 15, n),
        }
    ).write_parquet(path, row_group_size=1_000_000)


def session(driver_memory: str, batch_rows: int) -> Any:
    from pyspark.sql import SparkSession

    # The Python workers must be this interpreter (with polars_ppdm), not python3 on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("polars_ppdm bench_spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_rows))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sink", choices=["noop", "parquet"], default="noop")
    parser.add_argument(
        "--driver-memory", default="8g", help="spark.driver.memory (local mode: the whole JVM)"
    )
    parser.add_argument(
        "--batch-rows",
        type=int,
        default=10_000,
        help="spark.sql.execution.arrow.maxRecordsPerBatch (Spark's default: 10000)",
    )
    parser.add_argument("--skip-histogram", action="store_true")
    parser.add_argument(
        "--aes-encrypt",
        action="store_true",
        help="also time the same coins in Spark SQL alone, with Spark's aes_encrypt (one timed run: ~1 min)",
    )
    args = parser.parse_args()
    n = args.rows

    import pyspark
    from pyspark.sql import functions as F

    print(machine())
    print(
        f"python {platform.python_version()}, pyspark {pyspark.__version__}, {java_version()}, polars {pl.__version__}, "
        f"pyarrow {pa.__version__}, numpy {np.__version__}, polars_ppdm {ppdm.__version__}"
    )
    print(
        f"{n:,} rows, local[2], driver memory {args.driver_memory}, Arrow batches of {args.batch_rows:,} rows, "
        f"sink {args.sink}, warm-up excluded, best (median) of {args.repeats}"
    )

    with tempfile.TemporaryDirectory(prefix="bench_spark_") as tmp_name:
        tmp = Path(tmp_name)
        source = tmp / "in.parquet"
        write_input(source, n)
        spark = session(args.driver_memory, args.batch_rows)
        sdf = spark.read.parquet(str(source))
        print(
            f"input: {source.stat().st_size / 2**20:.0f} MB parquet, {sdf.rdd.getNumPartitions()} Spark partitions"
        )

        def spark_sink(frame: Any, name: str) -> Callable[[], None]:
            if args.sink == "noop":
                return lambda: frame.write.format("noop").mode("overwrite").save()
            return lambda: frame.write.mode("overwrite").parquet(str(tmp / name))

        def polars_sink(lazy: pl.LazyFrame, name: str) -> Callable[[], None]:
            if args.sink == "noop":
                return lambda: lazy.collect(engine="streaming")
            return lambda: lazy.sink_parquet(tmp / f"{name}.parquet")

        # ---- rr_disguise on three Boolean columns
        rows = sdf.select("id", *COLUMNS)
        private = ppdm_spark.rr_disguise(rows, COLUMNS, p=P, secret=SECRET, key="id")
        plain = rows.select(
            "id", *[F.when(F.rand() < P, F.col(c)).otherwise(~F.col(c)).alias(c) for c in COLUMNS]
        )
        lazy = ppdm.rr_disguise(
            pl.scan_parquet(source).select("id", *COLUMNS), COLUMNS, p=P, secret=SECRET, key="id"
        )

        checks = [
            agg for c in COLUMNS for agg in (F.count_if(F.col(c)), F.sum(F.when(F.col(c), F.col("id"))))
        ]
        got = tuple(private.agg(*checks).first())
        want = tuple(
            lazy.select(
                [
                    e
                    for c in COLUMNS
                    for e in (
                        pl.col(c).sum().cast(pl.Int64),
                        pl.col("id").filter(pl.col(c)).sum().alias(f"id_{c}"),
                    )
                ]
            )
            .collect()
            .row(0)
        )
        assert got == want, f"Spark and Polars disagree: {got} != {want}"

        rr: dict[str, tuple[float, float, float]] = {}
        rr["plain Spark scan (no flip)"] = timed(spark_sink(rows, "scan"), args.repeats)
        rr["plain Spark rand() < p flip"] = timed(spark_sink(plain, "plain"), args.repeats)

        def identity(batches: Any) -> Any:  # no work: what any mapInArrow step costs at least
            yield from batches

        passed = rows.mapInArrow(identity, rows.schema)
        rr[IDENTITY] = timed(spark_sink(passed, "identity"), args.repeats)
        rr[f"{IDENTITY}, arrow_batches"] = timed(
            with_conf(spark, TUNED, spark_sink(passed, "identity")), args.repeats
        )
        rr["polars_ppdm.spark.rr_disguise"] = timed(spark_sink(private, "private"), args.repeats)
        rr[f"  same, {NO_SIZE_CHECK}"] = timed(
            with_conf(spark, {MAX_BYTES: UNLIMITED}, spark_sink(private, "private")), args.repeats
        )
        rr[f"  same, {NO_SIZE_CHECK}, {TUNED_ROWS:,}-row batches"] = timed(
            with_conf(spark, TUNED, spark_sink(private, "private")), args.repeats
        )
        rr["Polars polars_ppdm.rr_disguise"] = timed(polars_sink(lazy, "polars"), args.repeats)
        if args.aes_encrypt:
            jvm = rows.select("id", *[jvm_rr(F, c) for c in COLUMNS])
            assert tuple(jvm.agg(*checks).first()) == want, "aes_encrypt's coins are not the library's"
            rr["Spark SQL alone: aes_encrypt, the same coins"] = timed(spark_sink(jvm, "jvm"), 1)

        hist: dict[str, tuple[float, float, float]] = {}
        if not args.skip_histogram:
            from polars_ppdm.spark.dp import dp_histogram as spark_dp_histogram

            low, high = BOUNDS
            x = F.col("x").cast("double")
            index = F.least(F.greatest(F.floor((x - low) * (BINS / (high - low))), F.lit(0)), F.lit(BINS - 1))
            plain_hist = sdf.groupBy(index.cast("long").alias("bin")).count()
            params: dict[str, Any] = {"bounds": BOUNDS, "bins": BINS, "epsilon": EPSILON, "secret": SECRET}

            def materialise(result: Any) -> pl.DataFrame:
                if isinstance(result, pl.LazyFrame):
                    return result.collect()
                if isinstance(result, pl.DataFrame):
                    return result
                return pl.from_arrow(result.toArrow())  # a small Spark DataFrame

            got_hist = materialise(spark_dp_histogram(sdf, "x", **params)).sort("x_bin")
            want_hist = ppdm.dp_histogram(pl.scan_parquet(source), "x", **params).collect()
            assert got_hist.equals(want_hist), "Spark and Polars histograms disagree"
            hist["plain Spark group-by count"] = timed(plain_hist.collect, args.repeats)
            hist["polars_ppdm.spark.dp_histogram"] = timed(
                lambda: materialise(spark_dp_histogram(sdf, "x", **params)), args.repeats
            )
            hist[f"  same, {NO_SIZE_CHECK}"] = timed(
                with_conf(
                    spark, {MAX_BYTES: UNLIMITED}, lambda: materialise(spark_dp_histogram(sdf, "x", **params))
                ),
                args.repeats,
            )
            hist[f"  same, {NO_SIZE_CHECK}, {TUNED_ROWS:,}-row batches"] = timed(
                with_conf(spark, TUNED, lambda: materialise(spark_dp_histogram(sdf, "x", **params))),
                args.repeats,
            )
            hist["Polars polars_ppdm.dp_histogram"] = timed(
                lambda: ppdm.dp_histogram(pl.scan_parquet(source), "x", **params).collect(), args.repeats
            )
        spark.stop()

    def table(
        title: str, timings: dict[str, tuple[float, float, float]], private: str, plain: str, polars: str
    ) -> None:
        print(
            f"\n{title:58s} {'best s':>7s} {'median':>7s} {'CPU s':>6s} {'ns/row':>7s} {'x plain':>8s} {'x Polars':>9s}"
        )
        for name, (best, median, cpu) in timings.items():
            print(
                f"{name:58s} {best:7.3f} {median:7.3f} {cpu:6.2f} {best / n * 1e9:7.1f} "
                f"{best / timings[plain][0]:8.2f} {best / timings[polars][0]:9.2f}"
            )
        for name in [
            private,
            f"  same, {NO_SIZE_CHECK}",
            f"  same, {NO_SIZE_CHECK}, {TUNED_ROWS:,}-row batches",
        ]:
            ratio = timings[name][0] / timings[plain][0]
            cpu_ratio = timings[name][2] / max(timings[plain][2], 1e-9)
            print(
                f"{name.strip()} / {plain}: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU  "
                f"(bar 2.0: {'ok' if ratio <= 2.0 else 'MISSED'}); / {polars}: {timings[name][0] / timings[polars][0]:.2f}x"
            )

    table(
        f"rr_disguise, {len(COLUMNS)} columns, p = {P}",
        rr,
        "polars_ppdm.spark.rr_disguise",
        "plain Spark rand() < p flip",
        "Polars polars_ppdm.rr_disguise",
    )
    if hist:
        table(
            f"dp_histogram, {BINS} bins, epsilon {EPSILON}",
            hist,
            "polars_ppdm.spark.dp_histogram",
            "plain Spark group-by count",
            "Polars polars_ppdm.dp_histogram",
        )


if __name__ == "__main__":
    main()
