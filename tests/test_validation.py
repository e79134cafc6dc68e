"""Numeric parameters: NumPy scalars of any width are accepted like Python numbers, and
every kind of error has one wording."""

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import InvalidParameterError

FLOATS = [np.float16, np.float32, np.float64, float]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64, int]


@pytest.mark.parametrize("kind", FLOATS)
def test_float_parameters_take_numpy_scalars(kind):
    df = pl.DataFrame({"x": [0.5, 1.5, 2.5] * 10, "flag": [True, False, True] * 10})
    expected = ppdm.rr_disguise(df, "flag", p=0.75, secret=1)
    assert ppdm.rr_disguise(df, "flag", p=kind(0.75), secret=1).equals(expected)
    by_epsilon = ppdm.rr_disguise(df, "flag", epsilon=kind(1.0), secret=1)
    assert by_epsilon.equals(ppdm.rr_disguise(df, "flag", epsilon=float(kind(1.0)), secret=1))
    hist = ppdm.dp_histogram(df, "x", bounds=(0, 3), bins=3, epsilon=kind(0.5), secret=ppdm.Secret.for_tests(1))
    assert hist.equals(ppdm.dp_histogram(df, "x", bounds=(0, 3), bins=3, epsilon=float(kind(0.5)), secret=ppdm.Secret.for_tests(1)))
    assert ppdm.add_noise(df, "x", scale=kind(2.0), secret=1).equals(
        ppdm.add_noise(df, "x", scale=float(kind(2.0)), secret=1)
    )


@pytest.mark.parametrize("kind", INTS)
def test_integer_parameters_take_numpy_scalars(kind):
    df = pl.DataFrame({"a": [1, 1, 0, 1], "b": [1, 0, 0, 1], "x": [1.0, 2.0, 3.0, 4.0]})
    rules = ppdm.rr_apriori(df, ["a", "b"], p=1.0, min_support=0.5, min_confidence=0.5, max_length=kind(2))
    assert rules.equals(
        ppdm.rr_apriori(df, ["a", "b"], p=1.0, min_support=0.5, min_confidence=0.5, max_length=2)
    )
    assert ppdm.ecdf_resample(df, "x", bins=kind(3), secret=1).equals(
        ppdm.ecdf_resample(df, "x", bins=3, secret=1)
    )
    assert ppdm.rr_epsilon(0.9, kind(3)) == ppdm.rr_epsilon(0.9, 3)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda df: ppdm.rr_disguise(df, "flag", p=True, secret=1),
            "'p' parameter of rr_disguise .* must be a float in \\[0, 1\\]. Got True instead.",
        ),
        (
            lambda df: ppdm.rr_disguise(df, "flag", epsilon=np.float32("nan"), secret=1),
            "'epsilon' parameter of rr_disguise .* must be a float > 0. Got",
        ),
        (
            lambda df: ppdm.dp_histogram(df, "x", bounds=(0, 3), epsilon=np.inf),
            "'epsilon' parameter of dp_histogram must be a finite float > 0. Got inf instead.",
        ),
        (
            lambda df: ppdm.dp_histogram(df, "x", bounds=(0, 3), epsilon=1.0, bins=np.float64(3)),
            "'bins' parameter of dp_histogram \\(column 'x'\\) must be an int >= 1. Got",
        ),
        (
            lambda df: ppdm.ecdf_resample(df, "x", bins=2.0),
            "'bins' parameter of ecdf_resample \\(column 'x'\\) must be an int in \\[2, 10,000,000\\]",
        ),
        (
            lambda df: ppdm.ecdf_resample(df, "x", shuffle=1),
            "'shuffle' parameter of ecdf_resample must be True or False. Got 1 instead.",
        ),
        (
            lambda df: ppdm.rr_apriori(
                df, ["flag"], p=1.0, min_support=0.1, min_confidence=0.1, max_length=True
            ),
            "'max_length' parameter of rr_apriori must be an int >= 1 or None. Got True instead.",
        ),
        (
            lambda df: ppdm.add_noise(df, "x", scale=np.float64("inf")),
            "'scale' parameter of add_noise must be a finite float > 0",
        ),
    ],
)
def test_one_wording_per_kind_of_error(call, message):
    df = pl.DataFrame({"x": [0.5, 1.5, 2.5], "flag": [True, False, True]})
    with pytest.raises(InvalidParameterError, match=message):
        call(df)


def test_a_budget_refusal_says_where_its_epsilon_comes_from():
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"x": rng.random(100), "y": rng.random(100)})
    accountant = ppdm.BudgetAccountant(epsilon=0.2)
    with pytest.raises(
        ppdm.BudgetExceededError,
        match=r"needs epsilon 0.290625 \(epsilon=0.3 halved over iterations=5: 0.3 x \(1 - 2\^-5\)\)",
    ):
        ppdm.dp_kmeans(
            df, ["x", "y"], k=2, epsilon=0.3, bounds=[(0, 1)] * 2, method="lloyd", accountant=accountant, secret=1
        )
    assert accountant.spent == 0
