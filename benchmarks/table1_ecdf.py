"""Paper 000, Table 1: classifiers trained on original vs ECDF-resampled data.

Run ``python benchmarks/table1_ecdf.py`` (needs the ``eval`` extra: scikit-learn).
Agrawal et al.'s synthetic people (functions F1-F5, our own generator from the 1993
definitions: ``polars_ppdm.datasets.agrawal``), 100,000 training and 10,000 test rows
per function.  The paper runs on the data of its reference [1], Agrawal & Srikant (2000),
whose experiments train on 100,000 records; the issue asks for at least 20,000.  The
size matters for the decision tree: the r-th smallest of n fresh draws lands within
about sqrt(n)/2 ranks of rank r, so the class boundary on a resampled attribute moves
by ~0.35% of the rows at 20,000 and ~0.16% at 100,000 (``--train 20000`` shows it).
The six numeric attributes (salary, commission, age, hvalue, hyears, loan) are resampled
(``bins`` equal-width intervals each, rank re-linking: the paper's method; the integer
attributes age and hyears come back rounded, ``round_integers=True``, else a tree's
threshold learnt between resampled ages 39.6 and 39.7 misplaces every original 40); the
categorical codes elevel, car and zipcode and the class stay with their row.  (Resampling
the codes too interpolates between categories, and a tree's split between elevel 1 and 2
then lands on either side of a category at random: F3 drops to ~86%.)  Each classifier is trained once on
the original and once on the resampled training set, and both are tested on the same
original test set.  The 20 cells are printed beside the paper's.

Classifiers (scikit-learn defaults except where noted): decision tree; nearest neighbour
(k = 1, standardised features); neural network (MLP, one hidden layer of 50, standardised,
max_iter 500); SVM (RBF kernel, standardised).  The paper does not give its settings.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import polars as pl

import polars_ppdm as ppdm
from polars_ppdm.datasets import AGRAWAL_ATTRIBUTES, agrawal

NUMERIC = ["salary", "commission", "age", "hvalue", "hyears", "loan"]

# Paper 000, Table 1 (accuracy %, original / perturbed training data).
PAPER = {
    "decision tree": [(100.00, 99.78), (87.18, 86.85), (99.98, 99.46), (99.14, 99.13), (98.16, 98.16)],
    "nearest neighbour": [(100.00, 100.00), (99.88, 99.88), (99.84, 99.82), (99.86, 99.78), (98.28, 98.68)],
    "neural network": [(99.78, 99.74), (94.92, 93.98), (91.80, 91.56), (98.16, 98.48), (91.66, 92.88)],
    "SVM": [(99.98, 100.00), (99.46, 99.60), (99.04, 99.18), (99.96, 99.90), (98.00, 98.40)],
}


def classifiers():
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    return {
        "decision tree": lambda: DecisionTreeClassifier(random_state=0),
        "nearest neighbour": lambda: make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=1)),
        "neural network": lambda: make_pipeline(
            StandardScaler(), MLPClassifier(hidden_layer_sizes=(50,), max_iter=500, random_state=0)
        ),
        "SVM": lambda: make_pipeline(StandardScaler(), SVC()),
    }


def accuracy(model, train: pl.DataFrame, test: pl.DataFrame) -> float:
    features = list(AGRAWAL_ATTRIBUTES)
    model.fit(train.select(features).to_numpy(), train["group_a"].to_numpy())
    predicted = model.predict(test.select(features).to_numpy())
    return 100.0 * float(np.mean(predicted == test["group_a"].to_numpy()))


def reproduce(train_rows: int, test_rows: int, bins: int, secret, functions) -> pl.DataFrame:
    """The Table 1 cells for ``functions``: ours (original, resampled) beside the paper's."""
    makers = classifiers()
    rows = []
    for f in functions:
        train = agrawal(train_rows, f, seed=2 * f)
        test = agrawal(test_rows, f, seed=2 * f + 1)
        resampled = ppdm.ecdf_resample(train, NUMERIC, bins=bins, secret=secret, round_integers=True)
        for name, make in makers.items():
            started = time.perf_counter()
            ours = (accuracy(make(), train, test), accuracy(make(), resampled, test))
            paper = PAPER[name][f - 1]
            rows.append(
                {
                    "classifier": name,
                    "function": f"F{f}",
                    "original": ours[0],
                    "resampled": ours[1],
                    "gap": ours[1] - ours[0],
                    "paper original": paper[0],
                    "paper resampled": paper[1],
                    "paper gap": paper[1] - paper[0],
                    "seconds": time.perf_counter() - started,
                }
            )
    return pl.DataFrame(rows)


def gap_spread(train_rows: int, test_rows: int, bins: int, secrets: int, functions) -> pl.DataFrame:
    """Decision tree and kNN gaps over fresh secrets (one secret is one draw)."""
    makers = classifiers()
    spread = []
    for f in functions:
        train, test = agrawal(train_rows, f, seed=2 * f), agrawal(test_rows, f, seed=2 * f + 1)
        base = {
            name: accuracy(makers[name](), train, test) for name in ("decision tree", "nearest neighbour")
        }
        for _ in range(secrets):
            resampled = ppdm.ecdf_resample(
                train, NUMERIC, bins=bins, secret=ppdm.new_secret(), round_integers=True
            )
            for name in base:
                gap = accuracy(makers[name](), resampled, test) - base[name]
                spread.append({"function": f"F{f}", "classifier": name, "gap": gap})
    return (
        pl.DataFrame(spread)
        .group_by("classifier", "function", maintain_order=True)
        .agg(
            pl.col("gap").mean().alias("mean gap"),
            pl.col("gap").min().alias("worst gap"),
            pl.col("gap").abs().max().alias("max |gap|"),
            pl.len().alias("secrets"),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--train", type=int, default=100_000)
    parser.add_argument("--test", type=int, default=10_000)
    parser.add_argument("--bins", type=int, default=100)
    parser.add_argument("--secret", default=None, help="secret of the resampling (default: fresh from the OS)")
    parser.add_argument("--functions", default="1,2,3,4,5")
    parser.add_argument("--secrets", type=int, default=10, help="fresh secrets for the DT/kNN gap spread")
    args = parser.parse_args()
    # The MLP may stop at max_iter on F2; its accuracy is reported as reached.
    warnings.filterwarnings("ignore", message="Stochastic Optimizer: Maximum iterations")
    functions = [int(f) for f in args.functions.split(",")]
    table = reproduce(args.train, args.test, args.bins, ppdm.resolve_secret(args.secret), functions)
    with pl.Config(
        tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250, float_precision=2, tbl_hide_dataframe_shape=True
    ):
        print(table)
    if args.secrets:
        spread = gap_spread(args.train, args.test, args.bins, args.secrets, [f for f in functions if f <= 4])
        with pl.Config(tbl_rows=-1, float_precision=2, tbl_hide_dataframe_shape=True):
            print(spread)


if __name__ == "__main__":
    main()
