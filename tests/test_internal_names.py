"""A user's column may have any name: every operation gives the same result when the
frame also holds a column named like one of the library's internal helper columns, and
passes that column through untouched where it keeps the frame's other columns."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_ppdm as ppdm

# Every "__..." name the package uses for a helper column or an aggregate, plus its
# siblings with a suffix (the names built as f"__a{i}", f"__nulls_{i}", ...).
INTERNAL_NAMES = [
    "__draw", "__ppdm_key", "__ppdm_truthful", "__ppdm_bin", "__ppdm_unit_word",
    "__ppdm_position", "__n", "__a0", "__nulls_0", "__bad_0",
]  # fmt: skip


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    n = 200
    return pl.DataFrame(
        {
            "x": pl.Series(rng.normal(50, 10, n)).scatter(np.flatnonzero(rng.random(n) < 0.1), None),
            "y": rng.normal(0, 1, n),
            "a": rng.random(n) < 0.3,
            "b": rng.random(n) < 0.6,
            "id": rng.permutation(n),
        }
    )


ROW_WISE = {
    "ecdf_resample shuffle": lambda f: ppdm.ecdf_resample(f, ["x", "y"], secret=1, shuffle=True),
    "ecdf_resample key": lambda f: ppdm.ecdf_resample(f, ["x", "y"], secret=1, key="id"),
    "rr_disguise": lambda f: ppdm.rr_disguise(f, ["a", "b"], p=0.8, secret=1),
    "rr_disguise key": lambda f: ppdm.rr_disguise(f, ["a", "b"], p=0.8, secret=1, key="id"),
    "rr_disguise whole_record": lambda f: ppdm.rr_disguise(
        f, ["a", "b"], p=0.8, secret=1, mode="whole_record"
    ),
    "add_noise": lambda f: ppdm.add_noise(f, ["y"], scale=1.0, secret=1, key="id"),
    "spiral": lambda f: ppdm.spiral(
        f.drop_nulls("x"), ["x", "y"], bounds={"x": (0, 100), "y": (-5, 5)}, secret=1
    ),
}

AGGREGATES = {
    "rr_support": lambda f: ppdm.rr_support(f, ["a", "b"], p=0.8),
    "rr_frequent_itemsets": lambda f: ppdm.rr_frequent_itemsets(f, ["a", "b"], p=0.8, min_support=0.1),
    "dp_histogram": lambda f: ppdm.dp_histogram(
        f, "y", bounds=(-3, 3), bins=4, epsilon=1.0, secret=ppdm.Secret.for_tests(1)
    ),
    "dp_histogram unit": lambda f: ppdm.dp_histogram(
        f,
        "y",
        bounds=(-3, 3),
        bins=4,
        epsilon=1.0,
        secret=ppdm.Secret.for_tests(1),
        key="id",
        max_contributions=1,
    ),
}


@pytest.mark.parametrize("name", INTERNAL_NAMES)
@pytest.mark.parametrize("op", list(ROW_WISE), ids=list(ROW_WISE))
def test_row_wise_operations_keep_a_column_named_like_an_internal_one(frame, op, name):
    marker = pl.Series(name, [f"user {i}" for i in range(frame.height)])
    marked = frame.with_columns(marker)
    expected, got = ROW_WISE[op](frame), ROW_WISE[op](marked)
    assert_frame_equal(got.drop(name), expected)
    if op == "ecdf_resample shuffle":  # rows are permuted: the marker moves with its row
        assert got["id"].to_list() != frame["id"].to_list()
        assert dict(zip(got["id"], got[name], strict=True)) == dict(zip(frame["id"], marker, strict=True))
    else:  # spiral refuses nulls: its lambda drops the rows with a null x first
        kept = marked.drop_nulls("x") if op == "spiral" else marked
        assert got[name].to_list() == kept[name].to_list()


@pytest.mark.parametrize("name", INTERNAL_NAMES)
@pytest.mark.parametrize("op", list(AGGREGATES), ids=list(AGGREGATES))
def test_aggregates_ignore_a_column_named_like_an_internal_one(frame, op, name):
    marker = pl.Series(name, np.arange(frame.height) * 7)
    assert_frame_equal(AGGREGATES[op](frame.with_columns(marker)), AGGREGATES[op](frame))
