"""The data set helpers refuse what they cannot use by name (issue 14's fuzz findings)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from polars_ppdm import datasets
from polars_ppdm.exceptions import InvalidParameterError


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: datasets.agrawal(20, pl.lit(1)),
            "'function' parameter of agrawal must be one of 1, 2, 3, 4, 5",
        ),
        (lambda: datasets.agrawal(20, 1.0), "'function' parameter of agrawal"),
        (lambda: datasets.agrawal(20, 1, seed="3"), "'seed' parameter of agrawal must be an int"),
        (lambda: datasets.generated_baskets(20, seed=float("nan")), "'seed' parameter of generated_baskets"),
        (lambda: datasets.generated_baskets(20, seed=1.5), "'seed' parameter of generated_baskets"),
        # 10^11 baskets were drawn until a MemoryError (745 GiB); refused before any draw.
        (
            lambda: datasets.generated_baskets(10**11),
            "'n' parameter of generated_baskets must be an int in \\[1, 100,000,000\\]",
        ),
        (
            lambda: datasets.agrawal(10**11, 1),
            "'n' parameter of agrawal must be an int in \\[1, 100,000,000\\]",
        ),
    ],
)
def test_generator_parameters_are_checked(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()


def test_the_largest_call_is_allowed_up_to_the_cap():
    assert datasets.MAX_ROWS == 10**8
    assert datasets.generated_baskets(7, seed=np.int64(3)).equals(datasets.generated_baskets(7, seed=3))


FRAME = pl.DataFrame({"x": [2.0, 4.0, None, 6.0], "s": ["a", "b", "c", "d"], "c": [1, 1, 1, 1]})


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: datasets.normalise(None, ["x"]), "normalise takes a polars DataFrame or LazyFrame"),
        (lambda: datasets.normalise(FRAME, [0]), "'columns' parameter of normalise must be column names"),
        (
            lambda: datasets.normalise(FRAME, ["zz"]),
            "'columns' parameter of normalise must be columns of the frame",
        ),
        (lambda: datasets.normalise(FRAME, ["s"]), "column 's' of normalise must be numeric"),
        (
            lambda: datasets.normalise(FRAME, ["c"]),
            "column 'c' of normalise must hold finite values with a finite range",
        ),
        (lambda: datasets.normalise(FRAME, ["x"], 1.0, 1.0), "normalise needs low < high"),
        (lambda: datasets.normalise(FRAME, ["x"], float("nan"), 1.0), "'low' parameter of normalise"),
        (
            lambda: datasets.normalise(pl.DataFrame({"x": [-1e308, 1e308]}), "x"),
            "column 'x' of normalise must hold finite values with a finite range",
        ),
        (
            lambda: datasets.normalise(pl.DataFrame({"x": [0.0, float("inf")]}), "x"),
            "column 'x' of normalise must hold finite values",
        ),
    ],
)
def test_normalise_refuses_what_it_cannot_scale(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()


def test_normalise_scales_each_column_to_low_high_and_keeps_lazy_lazy():
    frame = pl.DataFrame({"x": [2.0, 4.0, None, 6.0], "k": [10, 0, 5, 20]})
    out = datasets.normalise(frame, ["x", "k"], -1.0, 1.0)
    assert out["x"].to_list() == [-1.0, 0.0, None, 1.0]
    assert out["k"].to_list() == [0.0, -1.0, -0.5, 1.0]
    lazy = datasets.normalise(frame.lazy(), ["x", "k"], -1.0, 1.0)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(out)
