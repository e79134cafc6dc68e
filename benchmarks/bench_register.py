"""Benchmark: ``ppdm.duckdb.register`` on a new connection, against the connection alone.

Run ``python benchmarks/bench_register.py`` (``--repeats`` rounds, best of each, taken in
turn). A job or a test that opens many connections pays the registration on each:

* **connect** -- ``duckdb.connect()`` and nothing else: the baseline;
* **connect + register** -- the UDFs and the ``sql/`` macros, as the package registers
  them (the macros' statements parsed once per process, then run on each connection);
* **connect + register, parsing the sql/ files each time** -- what it did before: every
  file's text executed, so DuckDB parsed 91 kB of SQL on every connection.

Prints milliseconds per connection and the ratios to the baseline.
"""

from __future__ import annotations

import argparse

import duckdb
from _timing import best_seconds_interleaved, machine  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm
from polars_ppdm.duckdb.group_by import register_group_by_udfs
from polars_ppdm.duckdb.macros import sql_files
from polars_ppdm.duckdb.scalar import register_scalar_udfs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=50, help="connections per timed run")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    texts = [path.read_text(encoding="utf-8") for path in sql_files()]
    ppdm.duckdb.register(duckdb.connect())  # the parse of the first registration, not timed

    def connect() -> None:
        for _ in range(args.connections):
            duckdb.connect().close()

    def register() -> None:
        for _ in range(args.connections):
            ppdm.duckdb.register(duckdb.connect()).close()

    def register_parsing_each_time() -> None:
        for _ in range(args.connections):
            con = duckdb.connect()
            register_scalar_udfs(con)
            register_group_by_udfs(con)
            for text in texts:
                con.execute(text)
            con.close()

    runs = {
        "connect": connect,
        "connect + register": register,
        "connect + register, parsing the sql/ files each time": register_parsing_each_time,
    }
    best = best_seconds_interleaved(runs, args.repeats)
    print(
        f"{machine()}; duckdb {duckdb.__version__}; best of {args.repeats}, {args.connections} connections each"
    )
    base = best["connect"]
    for name, seconds in best.items():
        per = seconds / args.connections * 1000
        print(f"  {name:<55} {per:6.1f} ms per connection  {seconds / base:5.2f}x connect")


if __name__ == "__main__":
    main()
