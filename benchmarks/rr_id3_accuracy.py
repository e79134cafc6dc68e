"""Paper 003, section 5.2: ID3 on whole-record randomized-response data.

Run ``python benchmarks/rr_id3_accuracy.py``.  UCI Mushroom (``../shared/data/mushroom.dat``,
items as binary attributes; item 1 = poisonous is the label) and Agrawal et al.'s data
(functions F1-F3, 20,000 rows; each numeric attribute cut into 10 equal-width intervals
of its public range and every attribute one-hot encoded), two thirds for training.  For
p in {0.6, 0.7, 0.8, 0.9} and ``--secrets`` secrets: the training set and the test set
are disguised (whole_record, label included); the tree grown on the disguised training
set is scored on the *original* test set (true accuracy) and estimated from the
disguised test set alone (``rr_accuracy``, the thesis' complement system).  The baseline
is the same ID3 on the original training set.
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl

import polars_ppdm as ppdm
from polars_ppdm.binary_datasets import agrawal_binary
from polars_ppdm.binary_datasets import mushroom as _mushroom


def mushroom() -> tuple[pl.DataFrame, list[str], str]:
    """UCI Mushroom as binary attributes; exits with a message when the file is absent."""
    try:
        return _mushroom()
    except FileNotFoundError as error:
        raise SystemExit(str(error)) from None


def evaluate(
    frame: pl.DataFrame, attributes: list[str], label: str, ps, secrets: int, *, first_secret: int | None = None
):
    """Per p and secret: baseline, true accuracy of the RR tree, its estimate.  ``first_secret``
    fixes the (guessable) secrets first_secret, first_secret + 1, ... (tests); None draws fresh ones."""
    frame = frame.with_row_index("row_id")
    order = np.random.default_rng(0).permutation(frame.height)
    train, test = frame[order[: 2 * frame.height // 3]], frame[order[2 * frame.height // 3 :]]
    plain = ppdm.rr_id3(train, attributes, label, p=1.0)
    baseline = float((plain.predict(test) == test[label]).mean())
    rows = []
    for p in ps:
        for i in range(secrets):
            secret = ppdm.new_secret() if first_secret is None else first_secret + i
            columns = [*attributes, label]
            disguised_train = ppdm.rr_disguise(
                train, columns, p=p, mode="whole_record", secret=secret, key="row_id"
            )
            disguised_test = ppdm.rr_disguise(
                test, columns, p=p, mode="whole_record", secret=secret, key="row_id"
            )
            tree = ppdm.rr_id3(disguised_train, attributes, label, p=p, mode="whole_record")
            true = float((tree.predict(test) == test[label]).mean())
            rows.append(
                {
                    "p": p,
                    "baseline": 100 * baseline,
                    "rr accuracy": 100 * true,
                    "estimated": 100 * ppdm.rr_accuracy(tree, disguised_test, p=p),
                }
            )
    return pl.DataFrame(rows).with_columns(
        (pl.col("rr accuracy") - pl.col("baseline")).alias("gap"),
        (pl.col("estimated") - pl.col("rr accuracy")).alias("estimate error"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--secrets", type=int, default=5)
    args = parser.parse_args()
    ps = (0.6, 0.7, 0.8, 0.9)
    sets = {"mushroom": mushroom()} | {f"agrawal F{f}": agrawal_binary(f) for f in (1, 2, 3)}
    summary = []
    for name, (frame, attributes, label) in sets.items():
        result = evaluate(frame, attributes, label, ps, args.secrets)
        summary.append(
            result.group_by("p", maintain_order=True)
            .agg(
                pl.col("baseline").first(),
                pl.col("rr accuracy").mean().alias("mean accuracy"),
                pl.col("gap").min().alias("worst gap"),
                pl.col("estimate error").abs().max().alias("max |estimate error|"),
            )
            .with_columns(pl.lit(name).alias("data"))
        )
    table = pl.concat(summary).select("data", pl.exclude("data"))
    with pl.Config(tbl_rows=-1, float_precision=2, tbl_hide_dataframe_shape=True, tbl_width_chars=160):
        print(f"accuracy in %, {args.secrets} secrets per cell")
        print(table)
    at = table.filter(pl.col("p") == 0.8)
    print("bar at p = 0.8, worst gap >= -3 points:", bool((at["worst gap"] >= -3).all()))
    print("bar at p = 0.8, |estimate error| <= 2 points:", bool((at["max |estimate error|"] <= 2).all()))


if __name__ == "__main__":
    main()
