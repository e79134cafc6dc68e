"""The report's figures where issue 30 restructured their computation for speed and
memory: each new way against the way it replaced (kept here as the reference), on small
tables with the values that tell them apart (nulls, NaN, -0.0, infinities, one value)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from polars_ppdm.reporting.columns import _BINS, _distribution, _edges, _finite, _Tables
from polars_ppdm.reporting.uniqueness import uniqueness


def _old_uniqueness(table: pl.DataFrame, columns: list[str]) -> tuple[int, int, int, int]:
    """The group-by the sort and run-length pass replaced."""
    sizes = table.group_by(columns).len()["len"]
    return table.height, sizes.len(), int((sizes == 1).sum()), int(sizes.min())  # type: ignore[arg-type]


def _table(seed: int, n: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    floats = rng.choice([0.0, -0.0, 1.5, np.nan, -np.nan, np.inf, -np.inf, 2.25], n)
    missing = rng.random((5, n)) < 0.2
    return pl.DataFrame(
        {
            "i": pl.Series(rng.integers(0, 4, n)).scatter(np.flatnonzero(missing[0]), None),
            "f": pl.Series(floats).scatter(np.flatnonzero(missing[1]), None),
            "s": pl.Series(rng.choice(["a", "b", "", "ä"], n)).scatter(np.flatnonzero(missing[2]), None),
            "c": pl.Series(rng.choice(["x", "y", "z"], n), dtype=pl.Categorical).scatter(
                np.flatnonzero(missing[3]), None
            ),
            "b": pl.Series(rng.random(n) < 0.5).scatter(np.flatnonzero(missing[4]), None),
            "d": pl.Series([dt.date(2020, 1, 1) + dt.timedelta(days=int(k)) for k in rng.integers(0, 3, n)]),
            "u": np.arange(n),
        }
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "columns",
    [
        ["i"],
        ["f"],
        ["s"],
        ["c"],
        ["b"],
        ["d"],
        ["u"],
        ["i", "f"],
        ["f", "s", "b"],
        ["c", "d", "i"],
        ["u", "f"],
    ],
)
def test_uniqueness_is_the_group_by_s(seed: int, columns: list[str]) -> None:
    table = _table(seed, n=40 + 37 * seed)
    got = uniqueness(table, columns)
    assert (got.rows, got.groups, got.uniques, got.smallest_group) == _old_uniqueness(table, columns)


def test_uniqueness_counts_zero_and_minus_zero_as_one_value_and_nan_as_one() -> None:
    # The group-by's equality, which the verdict's counts have always used.
    table = pl.DataFrame({"f": [0.0, -0.0, float("nan"), -float("nan"), None, None, 1.0]})
    got = uniqueness(table, ["f"])
    assert (got.groups, got.uniques, got.smallest_group) == (4, 1, 1)
    both = pl.DataFrame({"f": [0.0, -0.0, float("nan"), float("nan")], "k": [1, 1, None, None]})
    got = uniqueness(both, ["f", "k"])
    assert (got.groups, got.uniques, got.smallest_group) == (2, 0, 2)


def test_uniqueness_of_a_type_the_sort_refuses_falls_back_to_the_group_by() -> None:
    table = pl.DataFrame({"o": pl.Series([object(), object()], dtype=pl.Object)})
    assert uniqueness(table, ["o"]).groups == 2


@pytest.mark.parametrize(
    "values",
    [
        np.array([3.0]),
        np.array([-2.5, -2.5]),
        np.random.default_rng(1).normal(0, 1, 1001),
        np.random.default_rng(2).lognormal(10, 2, 999),
        np.array([1e-300, 2e-300, 5e-301]),
        np.array([-1e300, 1e300]),
        np.array([0.1, 0.7, 0.3, 0.9]),
    ],
)
def test_bins_from_the_extremes_are_numpys_bins_of_the_values(values: np.ndarray) -> None:
    # The histogram's bins were NumPy's of the values of both tables concatenated.
    old = np.histogram_bin_edges(values, bins=_BINS)
    new = _edges(float(values.min()), float(values.max()), integers=False)
    assert new.dtype == old.dtype and np.array_equal(new, old)


def test_finite_values_are_the_old_copy_s() -> None:
    cases = [
        pl.Series([1.0, None, float("nan"), float("inf"), -2.0]),
        pl.Series([1.0, 2.0, 3.5]),
        pl.Series([4, None, 7], dtype=pl.Int32),
        pl.Series([None, None], dtype=pl.Float64),
        pl.Series([], dtype=pl.Float64),
    ]
    for series in cases:
        values = series.drop_nulls().cast(pl.Float64).to_numpy()
        old = values[np.isfinite(values)]
        new = _finite(series)
        assert new.dtype == old.dtype and np.array_equal(new, old)


def test_a_randomized_response_section_s_notes_are_those_of_the_plot_it_no_longer_draws() -> None:
    rng = np.random.default_rng(5)
    n = 500
    original = pl.DataFrame(
        {
            "many": rng.choice([f"v{i}" for i in range(25)], n),
            "few": rng.choice(["a", "b"], n),
            "code": rng.integers(0, 3, n),
            "none": pl.Series([None] * n, dtype=pl.Float64),
            "flag": pl.Series(rng.random(n) < 0.3).scatter([1, 2], None),
        }
    )
    released = original.with_columns(pl.col("many").shuffle(seed=1), pl.col("flag").shuffle(seed=2))
    for frame in (original, None):
        tables = _Tables(released, frame, 100)
        for column in original.columns:
            _, notes = _distribution(column, tables)
            assert _distribution(column, tables, plot=False) == ([], notes)
    tables = _Tables(released, original, 100)
    assert _distribution("many", tables, plot=False)[1] == [
        "25 distinct values; the 15 most frequent released ones are shown."
    ]
    assert _distribution("none", tables, plot=False)[1] == ["No finite value to plot."]
