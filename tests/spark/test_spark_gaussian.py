"""The Gaussian mechanism on Spark: ``dp_histogram(..., mechanism="gaussian", rho=...)``
equals the Polars release bit for bit, whatever the partitioning, is charged as a rho,
and runs in ``ppdm run --engine spark`` to the Polars engine's outputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from spark_frames import PARTITIONS, to_spark

import polars_ppdm as ppdm
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError
from polars_ppdm.spark import dp as spark_dp

pytestmark = pytest.mark.spark

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_pipeline_run import SECRET as PIPELINE_SECRET  # noqa: E402
from test_pipeline_run import copy_example  # noqa: E402

from polars_ppdm.jobs.commands import main  # noqa: E402
from polars_ppdm.jobs.errors import EXIT_OK  # noqa: E402

N = 1_500
SECRET = "7c2e91d04fa3b85e16d9c07a3e5f28b4"  # not a guessable pattern (DP releases refuse those)
BOX = [(-3.0, 3.0), (-3.0, 3.0)]


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(23)
    xy = rng.choice([-1.5, 1.5], size=(N, 2)) + rng.normal(0.0, 0.6, (N, 2))
    return pl.DataFrame(
        {
            "x": xy[:, 0],
            "y": xy[:, 1],
            "age": rng.integers(0, 100, N, dtype=np.int64).astype(np.int32),
            "name": [f"user-{i % 250}" for i in range(N)],  # 6 rows per person
        }
    )


def _released(sdf: object) -> pl.DataFrame:
    return pl.DataFrame(pl.from_arrow(sdf.toArrow()))  # type: ignore[attr-defined]


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_gaussian_histogram_is_the_polars_release(spark, table, partitions):
    sdf = to_spark(spark, table, partitions, seed=partitions)
    params = dict(bounds=(0, 100), bins=7, mechanism="gaussian", rho=0.2, secret=SECRET)
    want = ppdm.dp_histogram(table, "age", **params)
    assert_frame_equal(_released(spark_dp.dp_histogram(sdf, "age", **params)).sort("age_bin"), want)
    # 2-D, a string unit bounded to 2 rows (L2 sensitivity 2), clipped at 0.
    params = dict(
        bounds=BOX,
        bins=[4, 6],
        mechanism="gaussian",
        rho=0.05,
        secret=SECRET,
        key="name",
        max_contributions=2,
        non_negative=True,
    )
    want = ppdm.dp_histogram(table, ["x", "y"], **params)
    got = _released(spark_dp.dp_histogram(sdf, ["x", "y"], **params)).sort("x_bin", "y_bin")
    assert_frame_equal(got, want)
    laplace = ppdm.dp_histogram(
        table, ["x", "y"], **{**params, "mechanism": "laplace", "rho": None, "epsilon": 1.0}
    )
    assert not laplace.equals(want)  # the mechanism changes the noise


def test_gaussian_histogram_is_charged_as_a_rho(spark, table):
    sdf = to_spark(spark, table, 3)
    zcdp = ppdm.BudgetAccountant(rho=0.3)
    spark_dp.dp_histogram(
        sdf, "x", bounds=(-3, 3), bins=5, mechanism="gaussian", rho=0.2, secret=SECRET, accountant=zcdp
    )
    assert zcdp.spent_rho == pytest.approx(0.2)
    with pytest.raises(BudgetExceededError, match=r"needs rho 0\.2"):
        spark_dp.dp_histogram(
            sdf, "x", bounds=(-3, 3), bins=5, mechanism="gaussian", rho=0.2, secret=SECRET, accountant=zcdp
        )
    pure = ppdm.BudgetAccountant(10.0)
    with pytest.raises(BudgetExceededError, match="a rho is not an epsilon"):
        spark_dp.dp_histogram(
            sdf, "x", bounds=(-3, 3), bins=5, mechanism="gaussian", rho=0.2, secret=SECRET, accountant=pure
        )
    assert pure.spent == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mechanism": "gaussian", "rho": 0.1, "epsilon": 1.0}, "takes rho= .* and no epsilon"),
        ({"mechanism": "gaussian"}, "takes rho="),
        ({"mechanism": "gaussian", "rho": 0.0}, "'rho' parameter of dp_histogram"),
        ({"mechanism": "gauss", "rho": 0.1}, r"'mechanism' parameter of dp_histogram must be one of"),
        ({"epsilon": 1.0, "rho": 0.1}, "rho= is the budget of mechanism='gaussian'"),
        ({}, "needs epsilon="),
        ({"mechanism": "gaussian", "rho": 1e20}, "sigma must be a finite number"),
    ],
)
def test_bad_gaussian_parameters_get_the_polars_message(spark, table, kwargs, match):
    sdf = to_spark(spark, table, 1)
    with pytest.raises(InvalidParameterError, match=match):
        spark_dp.dp_histogram(sdf, "x", bounds=(-3, 3), bins=5, secret=SECRET, **kwargs)


def test_a_gaussian_pipeline_gives_the_same_outputs_on_spark(spark, tmp_path, monkeypatch):
    """``ppdm run --engine spark`` passes mechanism and rho to the Spark dp_histogram: the
    release and the ledger's rho are the Polars engine's."""
    monkeypatch.setenv("PPDM_SECRET", PIPELINE_SECRET)
    outputs = {}
    for engine in ("polars", "spark"):
        path = copy_example("events", tmp_path / engine)
        text = path.read_text()
        text = text.replace("epsilon_budget = 4.0", "rho_budget = 1.0")
        # Only the histogram, Gaussian (the other releases are the Laplace tests' business).
        head, releases = text.split("[[release]]", 1)
        histogram = releases.split("[[release]]")[0].replace(
            "epsilon = 0.5", 'mechanism = "gaussian"\nrho = 0.25'
        )
        tail = "[output]" + text.split("[output]", 1)[1]
        path.write_text(head + "[[release]]" + histogram + tail)
        assert main(["run", "--quiet", "--engine", engine, str(path)]) == EXIT_OK
        manifest = json.loads((path.parent / "out" / "manifest.json").read_text())
        assert manifest["status"] == "succeeded"
        outputs[engine] = (pl.read_parquet(path.parent / "out" / "amount_histogram.parquet"), manifest)
    (want, first), (got, second) = outputs["polars"], outputs["spark"]
    assert_frame_equal(got.sort("amount_bin"), want.sort("amount_bin"))
    assert first["run_id"] == second["run_id"]
