"""Benchmark: DP count + sum + mean per group with a privacy unit, against plain Polars.

Run ``python benchmarks/bench_dp_group_by.py`` (``--rows`` to change the size).  The table:
10M rows, 1,000 groups, 1M privacy units (10 rows each, spread over groups).  Three
timings, best of ``--repeats``, each a lazy query collected from the same in-memory frame:

* **plain** -- ``group_by(group).agg(len, sum, mean)``: no bounding, no noise;
* **plain + bounding** -- the same contribution bounding as one writes it in plain
  Polars (each unit keeps ``max_rows_per_group`` rows per group and
  ``max_groups_contributed`` groups, ranked with window functions over Polars' own
  ``hash`` instead of our keyed AES words), then the group-by;
* **group_by(unit) alone** -- a floor for any bounding: it must at least gather each
  unit's rows (1M groups instead of 1,000);
* **dp_group_by** -- ``ppdm.dp_group_by`` with ``max_groups_contributed=1``,
  ``max_rows_per_group=1``, public groups.

The issue's bars: dp_group_by <= 2.0x plain and <= 1.3x plain + bounding.
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from _timing import best_seconds, machine  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm
from polars_ppdm import dp

SECRET = "0123456789abcdef" * 2
BOUNDS = (0.0, 500.0)


def table(rows: int, groups: int, units: int) -> pl.DataFrame:
    rng = np.random.default_rng(7)
    return pl.DataFrame(
        {
            "unit": rng.integers(0, units, rows),
            "group": rng.integers(0, groups, rows),
            "amount": rng.gamma(2.0, 40.0, rows),
        }
    )


def plain(frame: pl.DataFrame) -> pl.DataFrame:
    return (
        frame.lazy()
        .group_by("group")
        .agg(pl.len(), pl.col("amount").sum().alias("sum"), pl.col("amount").mean().alias("mean"))
        .collect()
    )


def plain_bounded(frame: pl.DataFrame, max_groups: int, max_rows: int) -> pl.DataFrame:
    amount = pl.col("amount").clip(*BOUNDS)
    return (
        frame.lazy()
        .filter(pl.struct("unit", "amount").hash().rank("ordinal").over(["unit", "group"]) <= max_rows)
        .group_by(["unit", "group"])
        .agg(pl.len().alias("n"), amount.sum().alias("s"))
        .filter(pl.struct("unit", "group").hash().rank("ordinal").over("unit") <= max_groups)
        .group_by("group")
        .agg(pl.col("n").sum(), pl.col("s").sum(), (pl.col("s").sum() / pl.col("n").sum()).alias("mean"))
        .collect()
    )


def private(frame: pl.DataFrame, groups: pl.DataFrame, max_groups: int, max_rows: int) -> pl.DataFrame:
    return ppdm.dp_group_by(
        frame.lazy(),
        "group",
        [dp.count(), dp.sum("amount", bounds=BOUNDS), dp.mean("amount", bounds=BOUNDS)],
        epsilon=1.0,
        privacy_unit="unit",
        max_groups_contributed=max_groups,
        max_rows_per_group=max_rows,
        public_groups=groups,
        secret=SECRET,
    ).collect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--units", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    frame = table(args.rows, args.groups, args.units)
    groups = pl.DataFrame({"group": np.arange(args.groups)})
    print(f"{args.rows:,} rows, {args.groups:,} groups, {args.units:,} privacy units; best of {args.repeats}")
    base = best_seconds(lambda: plain(frame), args.repeats)
    bounded = best_seconds(lambda: plain_bounded(frame, 1, 1), args.repeats)
    floor = best_seconds(lambda: frame.lazy().group_by("unit").agg(pl.len()).collect(), args.repeats)
    ours = best_seconds(lambda: private(frame, groups, 1, 1), args.repeats)
    print(f"plain group-by                     {base:6.2f} s")
    print(f"plain + the same bounding          {bounded:6.2f} s")
    print(f"group_by(unit) alone (a floor)     {floor:6.2f} s   ({floor / base:.1f}x plain)")
    print(f"dp_group_by                        {ours:6.2f} s")
    print(f"dp_group_by / plain                {ours / base:6.2f}x   (bar <= 2.0x)")
    print(f"dp_group_by / plain + bounding     {ours / bounded:6.2f}x   (bar <= 1.3x)")


if __name__ == "__main__":
    main()
