"""How many values an ECDF release gives back exactly, with and without ``round_integers``.

Run ``python benchmarks/ecdf_exact_values.py``.  For each data set, each numeric column is
resampled (paper 000: ``bins`` equal-width intervals, rank re-linking) once with
``round_integers=False`` and once with ``True``, and two shares of the released values
are counted per column:

* ``in original``: the released value equals some original value of the column (it is a
  real value of someone);
* ``own``: the released value equals the original value of its own row.

Data: Agrawal et al.'s synthetic people (our generator, ``polars_ppdm.datasets.agrawal``:
continuous salary, commission (0 for salaries of 75k and more), hvalue, loan; integer age
20-80 and hyears 1-30), 100,000 rows; the Statlog Shuttle sensor readings (49,097 rows,
9 integer columns, river's copy, skipped when river is absent); the S1 clustering points
(5,000 rows, integer coordinates, ``../shared/data/s1.data.gz``, read as integers); the
Breast Cancer Wisconsin features (569 rows, the 8 continuous "mean" columns of
``polars_ppdm.datasets.breast_cancer``, scikit-learn's copy).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

import polars_ppdm as ppdm
from polars_ppdm.datasets import agrawal, find_shared_data


def data_sets() -> dict[str, pl.DataFrame]:
    found = {
        "agrawal (generated)": agrawal(100_000, 1, seed=2).select(
            "salary", "commission", "age", "hvalue", "hyears", "loan"
        )
    }
    try:
        import river
    except ImportError:
        print("river not installed: Shuttle skipped")
    else:
        path = Path(river.__file__).parent / "datasets" / "shuttle.csv.gz"
        found["shuttle (real)"] = pl.read_csv(path).drop("anomaly")
    s1 = find_shared_data("s1.data.gz")
    if s1 is None:
        print("s1.data.gz not found (../shared/data): S1 skipped")
    else:
        found["s1 (real)"] = pl.DataFrame(np.loadtxt(s1).astype(np.int64), schema=["x", "y"], orient="row")
    try:
        found["breast cancer (real)"] = ppdm.datasets.breast_cancer().select(pl.selectors.float())
    except ImportError:
        print("scikit-learn not installed: Breast Cancer skipped")
    return found


def exact_shares(frame: pl.DataFrame, bins: int, secret: int) -> pl.DataFrame:
    """Per column and ``round_integers``: shares of released values in the original / own."""
    rows = []
    columns = [c for c, dtype in frame.schema.items() if dtype.is_numeric() and frame[c].n_unique() > 1]
    for round_integers in (False, True):
        released = ppdm.ecdf_resample(frame, columns, bins=bins, secret=secret, round_integers=round_integers)
        for c in columns:
            original, out = frame[c].cast(pl.Float64).to_numpy(), released[c].cast(pl.Float64).to_numpy()
            rows.append(
                {
                    "round_integers": round_integers,
                    "column": c,
                    "integer": frame.schema[c].is_integer(),
                    "values": len(np.unique(original)),
                    "in original": float(np.isin(out, original).mean()),
                    "own": float((out == original).mean()),
                }
            )
    return pl.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bins", type=int, default=100)
    parser.add_argument("--secret", type=int, default=1)
    args = parser.parse_args()
    pl.Config.set_tbl_rows(200)
    pl.Config.set_tbl_hide_dataframe_shape(True)
    pl.Config.set_float_precision(4)
    for name, frame in data_sets().items():
        shares = exact_shares(frame, args.bins, args.secret)
        print(f"\n{name}: {frame.height:,} rows, bins={args.bins}")
        print(shares)
        total = shares.group_by("round_integers", "integer", maintain_order=True).agg(
            pl.col("in original").mean(), pl.col("own").mean(), pl.len().alias("columns")
        )
        print("mean over columns:")
        print(total)


if __name__ == "__main__":
    main()
