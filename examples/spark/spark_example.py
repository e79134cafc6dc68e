"""polars_ppdm on Spark, in local mode: perturb a table, release DP counts, and check that
the bits are those of Polars.

    pip install 'polars_ppdm[spark]'         # PySpark 4; Java 17 or 21 on the machine
    python examples/spark/spark_example.py   # reads examples/survey/survey.csv

On a cluster, the same calls run under spark-submit (the executors need polars_ppdm);
on Spark Connect, build the session with SparkSession.builder.remote(...).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import polars as pl
from pyspark.sql import SparkSession

import polars_ppdm as ppdm
import polars_ppdm.spark as ppdm_spark

HERE = Path(__file__).resolve().parent
SURVEY = HERE.parent / "survey" / "survey.csv"
VOTES = ["green", "red", "blue", "none"]


def main() -> None:
    if not SURVEY.exists():  # the survey example's data, made by examples/make_data.py
        sys.exit(f"{SURVEY} is missing: run `python examples/make_data.py` first")
    # The local workers must run this interpreter (the one with polars_ppdm).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("polars_ppdm example")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    # A public secret, for a reproducible example only (DP releases accept no other
    # guessable secret): a real job reads ppdm.secret_from_env("PPDM_SECRET") or a 0600 file.
    secret = ppdm.Secret.for_tests(2026)

    survey = pl.read_csv(SURVEY)
    table = spark.createDataFrame(survey.to_arrow()).repartition(7)

    # Row-wise perturbations: on the executors, through mapInArrow (lazy until written).
    disguised = ppdm_spark.rr_disguise(
        table, ["smoker", "vote"], epsilon=1.0, secret=secret, key="respondent_id", categories={"smoker": None, "vote": VOTES}
    )
    noised = ppdm_spark.add_noise(disguised, "income", scale=5_000.0, secret=secret, key="respondent_id")
    published = ppdm_spark.ecdf_resample(noised, "age", bins=20, secret=secret, key="respondent_id")

    with tempfile.TemporaryDirectory() as folder:
        target = str(Path(folder) / "published")
        published.drop("name").write.parquet(target)
        on_spark = pl.read_parquet(f"{target}/*.parquet").sort("respondent_id")

    # The same steps in Polars: the same bits.
    on_polars = ppdm.ecdf_resample(
        ppdm.add_noise(
            ppdm.rr_disguise(
                survey, ["smoker", "vote"], epsilon=1.0, secret=secret, key="respondent_id",
                categories={"smoker": None, "vote": VOTES},
            ),
            "income", scale=5_000.0, secret=secret, key="respondent_id",
        ),
        "age", bins=20, secret=secret, key="respondent_id",
    ).drop("name").sort("respondent_id")
    same = on_spark.select(on_polars.columns).equals(on_polars)
    print(f"published {on_spark.height:,} rows from 7 partitions; identical to Polars: {same}")

    # Aggregates: Spark aggregations; only counts reach the driver.
    support = ppdm_spark.rr_support(published, "smoker", epsilon=1.0)
    print("corrected share of smokers, from the disguised column only:")
    print(support)
    accountant = ppdm.BudgetAccountant(1.0)
    histogram = ppdm_spark.dp_histogram(
        table, "income", epsilon=0.5, bounds={"income": (0.0, 200_000.0)}, bins=8,
        secret=secret, key="respondent_id", accountant=accountant,
    )
    print(f"DP histogram of income (epsilon 0.5; {accountant.remaining:g} of 1 left):")
    histogram.orderBy("income_bin").show()  # a Spark DataFrame: a grid may have millions of cells
    if not same:
        sys.exit("the Spark output differs from the Polars output")
    spark.stop()


if __name__ == "__main__":
    main()
