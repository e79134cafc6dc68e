"""Thirty nights of a scheduled job, with `ppdm run` as cron would call it.

Each night appends the night's visits (synthetic, fixed seed) to ``visits.parquet`` and
runs ``ppdm run --as-of N pipeline.toml``: the continual release publishes nights
0 .. N-1 (its tree charged once, by the first night), the Gaussian histogram is charged
every night. After the last night it prints the ledger and where the report is.

    python examples/nightly/nightly.py                      # 30 nights, in examples/nightly/
    python examples/nightly/nightly.py --nights 10 --folder /tmp/nightly
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
REGIONS = ["north", "south", "east", "west"]


def night_of_visits(night: int, people: int = 20_000, visits: int = 300) -> pl.DataFrame:
    rng = np.random.default_rng(1_000 + night)
    return pl.DataFrame(
        {
            "person": rng.integers(0, people, visits),
            "region": rng.choice(REGIONS, visits, p=[0.4, 0.3, 0.2, 0.1]),
            "hour": rng.integers(0, 24, visits),
            "night": np.full(visits, night, dtype=np.int64),
        }
    )


def ppdm(*args: str) -> int:
    return subprocess.call([sys.executable, "-m", "polars_ppdm", *args])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--folder", type=Path, default=HERE, help="where the log, ledger and outputs go")
    args = parser.parse_args(argv)
    folder: Path = args.folder
    folder.mkdir(parents=True, exist_ok=True)
    pipeline = folder / "pipeline.toml"
    if pipeline.resolve() != (HERE / "pipeline.toml").resolve():
        shutil.copyfile(HERE / "pipeline.toml", pipeline)
    for stale in ("visits.parquet", "ledger.duckdb", "ledger.duckdb.wal"):
        (folder / stale).unlink(missing_ok=True)
    shutil.rmtree(folder / "out", ignore_errors=True)
    if not (folder / "ppdm.secret").exists() and ppdm("secret", "--output", str(folder / "ppdm.secret")):
        return 1
    log = pl.DataFrame(schema=night_of_visits(0).schema)
    for night in range(args.nights):
        log = pl.concat([log, night_of_visits(night)])
        log.write_parquet(folder / "visits.parquet")
        # The night is over: publish every night before the next one.
        code = ppdm("run", "--quiet", "--as-of", str(night + 1), str(pipeline))
        if code:
            print(f"night {night}: ppdm run exited {code}", file=sys.stderr)
            return code
    print(f"== {args.nights} nights published; the ledger:")
    ppdm("ledger", "--pipeline", str(pipeline))
    print(f"\n== ppdm plan --as-of {args.nights + 1} (the next night, and the year ahead):")
    ppdm("plan", "--as-of", str(args.nights + 1), str(pipeline))
    totals = pl.read_parquet(folder / "out" / "visits_per_region.parquet").filter(
        pl.col("period") == args.nights - 1
    )
    print(
        f"\n== running totals after night {args.nights - 1}, true totals beside them (the release counts each "
        "person's first 3 visits of the year: a person with more is bounded):"
    )
    truth = log.group_by("region").len().rename({"len": "true_total"})
    print(totals.join(truth, on="region").select("region", "running_total", "running_total_sd", "true_total"))
    print(f"\nThe report: {folder / 'out' / 'report.public.html'} (and report.internal.html: do not publish it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
