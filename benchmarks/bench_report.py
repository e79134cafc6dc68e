"""Benchmark: the privacy and utility report of a 1M-row, 10-column table.

Run ``python benchmarks/bench_report.py``.  The table has every kind of column a report
handles: binary and k-ary randomized response (per-attribute), additive noise on two
columns (so PCA noise stripping runs), ECDF resampling on two, a spiral over two, a kept
and a dropped column; one rr_support release and one dp_histogram.  The perturbation is
done once, untimed; then each version of ``ppdm.report`` (computing every figure and plot,
rendering, writing the file) is timed, best of ``--repeats``, against the issue's bar
(<= 10 s).  The ratio to a baseline, the perturbation of the same table, says what a
report costs next to producing the release.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from _timing import best_seconds, machine  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm

SECRET = ppdm.Secret.for_tests(2026)  # public: a benchmark, not a release
BAR_SECONDS = 10.0
REGIONS = ["north", "south", "east", "west", "centre"]


def table(rows: int) -> pl.DataFrame:
    rng = np.random.default_rng(17)
    return pl.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64),
            "smoker": rng.random(rows) < 0.25,
            "region": rng.choice(REGIONS, rows),
            "income": rng.lognormal(10.5, 0.6, rows),
            "rent": rng.gamma(4.0, 250.0, rows),
            "age": rng.integers(18, 95, rows).astype(np.float64),
            "weight": rng.normal(75.0, 12.0, rows),
            "lat": rng.normal(48.0, 1.0, rows),
            "lon": rng.normal(11.0, 1.5, rows),
            "owner": rng.random(rows) < 0.6,
        }
    )


def steps() -> list[dict]:
    return [
        {"step": "rr_disguise", "columns": ["smoker"], "epsilon": 1.0},
        {"step": "rr_disguise", "columns": ["region"], "epsilon": 2.0, "categories": REGIONS},
        {"step": "add_noise", "columns": ["income", "rent"], "scale": {"income": 5000.0, "rent": 100.0}},
        {"step": "ecdf_resample", "columns": ["age", "weight"], "bins": 50},
        {
            "step": "spiral",
            "columns": ["lat", "lon"],
            "bounds": {"lat": [40, 56], "lon": [0, 22]},
            "path": "key.json",
        },
        {"step": "keep", "columns": ["owner"]},
        {"step": "drop", "columns": ["id"]},
        {"step": "rr_support", "columns": ["smoker"], "output": "smoker.csv"},
        {
            "step": "dp_histogram",
            "columns": ["income"],
            "epsilon": 0.5,
            "bounds": {"income": [0, 200_000]},
            "bins": 20,
            "output": "income.csv",
        },
    ]


def perturb(original: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    key = ppdm.spiral_key(["lat", "lon"], bounds={"lat": (40, 56), "lon": (0, 22)}, secret=SECRET)
    out = ppdm.rr_disguise(original, "smoker", epsilon=1.0, secret=SECRET, key="id")
    out = ppdm.rr_disguise(out, "region", epsilon=2.0, categories=REGIONS, secret=SECRET, key="id")
    out = ppdm.add_noise(
        out, ["income", "rent"], scale={"income": 5000.0, "rent": 100.0}, secret=SECRET, key="id"
    )
    out = ppdm.ecdf_resample(out, ["age", "weight"], bins=50, secret=SECRET, key="id")
    out = ppdm.apply_spiral_key(out, key)
    releases = {
        "smoker.csv": ppdm.rr_support(out, "smoker", epsilon=1.0),
        "income.csv": ppdm.dp_histogram(
            original, "income", epsilon=0.5, bounds={"income": (0, 200_000)}, bins=20, secret=SECRET, key="id"
        ),
    }
    return out.drop("id"), releases


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    original = table(args.rows)
    started = time.perf_counter()
    released, releases = perturb(original)
    perturbing = time.perf_counter() - started
    print(f"{args.rows:,} rows x {original.width} columns; best of {args.repeats}")
    print(f"perturbation (baseline)     {perturbing:7.2f} s")
    with tempfile.TemporaryDirectory() as folder:
        for version in ("internal", "public"):
            target = Path(folder) / f"report.{version}.html"

            def write(version: str = version, target: Path = target) -> None:
                ppdm.report(
                    released,
                    steps(),
                    original=original,
                    version=version,
                    releases=releases,
                    output=target,
                )

            seconds = best_seconds(write, args.repeats)
            size = target.stat().st_size / 1e6
            print(
                f"report, {version:8}           {seconds:7.2f} s  {seconds / perturbing:5.2f}x the perturbation; "
                f"{size:.1f} MB; bar {BAR_SECONDS:g} s: {'met' if seconds <= BAR_SECONDS else 'MISSED'}"
            )


if __name__ == "__main__":
    main()
