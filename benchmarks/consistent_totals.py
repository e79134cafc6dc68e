"""The effect of consistent_totals on error: counts per (region, day) and per region.

Run ``python benchmarks/consistent_totals.py``.  A year of visits (1M rows, one per
person: 10 regions x 365 days) released at a total epsilon of 1 in three ways, over
``--secrets`` secrets, each compared with the true counts:

* cells only: epsilon 1 on the (region, day) counts; a region's total is the sum of its
  365 noisy cells;
* two levels: epsilon 0.5 on the cells and 0.5 on the regions, each used as released;
* two levels made consistent: the same releases after ``ppdm.consistent_totals``.

It prints the RMS error of a cell and of a region's total for each, and the ratios
against "cells only" (the baseline).
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from _timing import machine  # benchmarks/ is the script's own folder

import polars_ppdm as ppdm
from polars_ppdm import dp


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--secrets", type=int, default=20)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(0)
    regions = [f"r{i}" for i in range(10)]
    frame = pl.DataFrame(
        {
            "person": np.arange(args.rows),
            "region": rng.choice(regions, args.rows, p=np.arange(1, 11) / 55),
            "day": rng.integers(1, 366, args.rows),
        }
    )
    public_regions = pl.DataFrame({"region": regions})
    cells = public_regions.join(
        pl.DataFrame({"day": np.arange(1, 366)}), how="cross", maintain_order="left_right"
    )
    true_cells = cells.join(
        frame.group_by("region", "day").len(), on=["region", "day"], how="left", maintain_order="left"
    )["len"]
    true_cells = true_cells.fill_null(0).to_numpy()
    true_regions = public_regions.join(frame.group_by("region").len(), on="region", maintain_order="left")[
        "len"
    ].to_numpy()

    def release(by, groups, epsilon, secret):
        return ppdm.dp_group_by(
            frame,
            by,
            dp.count(),
            epsilon=epsilon,
            privacy_unit="person",
            public_groups=groups,
            secret=secret,
            intervals=True,
        )

    def totals(fine):
        return fine.group_by("region", maintain_order=True).agg(pl.col("count").sum())["count"].to_numpy()

    errors: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {
        "cells only": [],
        "two levels": [],
        "consistent": [],
    }
    for _ in range(args.secrets):
        secret = ppdm.new_secret()
        only = release(["region", "day"], cells, args.epsilon, secret)
        errors["cells only"].append((only["count"].to_numpy() - true_cells, totals(only) - true_regions))
        fine = release(["region", "day"], cells, args.epsilon / 2, secret)
        coarse = release("region", public_regions, args.epsilon / 2, secret)
        errors["two levels"].append(
            (fine["count"].to_numpy() - true_cells, coarse["count"].to_numpy() - true_regions)
        )
        fine_c, coarse_c = ppdm.consistent_totals([fine, coarse], "count", by=["region", "day"])
        errors["consistent"].append(
            (fine_c["count"].to_numpy() - true_cells, coarse_c["count"].to_numpy() - true_regions)
        )

    def rms(parts):
        return float(np.sqrt(np.mean(np.concatenate(parts) ** 2)))

    base_cell = rms([e[0] for e in errors["cells only"]])
    base_total = rms([e[1] for e in errors["cells only"]])
    print(
        f"{args.rows:,} rows, 10 regions x 365 days, epsilon {args.epsilon:g} in all, {args.secrets} secrets"
    )
    print(f"{'release':<12} {'RMS cell':>9} {'ratio':>6} {'RMS region total':>17} {'ratio':>6}")
    for name, parts in errors.items():
        cell, total = rms([e[0] for e in parts]), rms([e[1] for e in parts])
        print(f"{name:<12} {cell:9.2f} {cell / base_cell:6.2f} {total:17.2f} {total / base_total:6.3f}")


if __name__ == "__main__":
    main()
