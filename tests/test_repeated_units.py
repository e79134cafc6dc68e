"""`ppdm run`'s check of distinct values per privacy unit in bounded memory (issue 30):
the repeat screen never misses a unit seen in two rows (whatever the threads, morsels and
passes), and the verdict is the exact per-unit count's on every path -- the screen, a
screen in several passes with a filter so small it flags nearly everything, and no
compiled kernels at all."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polars_ppdm.jobs import run as run_module
from polars_ppdm.jobs.run import columns_over_bound, repeated_units
from polars_ppdm.kernels import _native, repeats

NATIVE = _native.load()
needs_native = pytest.mark.skipif(
    NATIVE is None, reason="the compiled kernels are not installed (or PPDM_NATIVE=0)"
)


def _exact(frame: pl.DataFrame, key: str, bounds: dict[str, int]) -> set[str]:
    """The columns some unit holds more distinct values of than its bound, unit by unit
    in Python (a null key is one unit, a null value one value)."""
    values: dict[tuple[str, Any], set[Any]] = defaultdict(set)
    for row in frame.iter_rows(named=True):
        for column in bounds:
            values[column, row[key]].add(row[column])
    return {c for (c, _), seen in values.items() if len(seen) > bounds[c]}


@st.composite
def tables(draw: st.DrawFn) -> tuple[pl.DataFrame, dict[str, int]]:
    n = draw(st.integers(0, 60))
    pool = draw(st.integers(1, 80))
    ids = draw(st.lists(st.one_of(st.none(), st.integers(0, pool)), min_size=n, max_size=n))
    a = draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n))
    b = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    frame = pl.DataFrame({"id": ids, "a": a, "b": b}, schema={"id": pl.Int64, "a": pl.Boolean, "b": pl.Int32})
    if draw(st.booleans()):
        frame = frame.with_columns(pl.col("id").cast(pl.String))
    bounds = {"a": draw(st.integers(1, 2)), "b": draw(st.integers(1, 3))}
    return frame, bounds


@needs_native
@settings(max_examples=80, deadline=None)
@given(tables())
def test_the_screen_never_misses_a_repeated_unit(table: tuple[pl.DataFrame, dict[str, int]]) -> None:
    frame, _ = table
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_native, "NATIVE", NATIVE)
        patch.setattr(run_module, "REPEATS_WORTH_SCREENING", 1.0)  # never gives up
        found = repeated_units(frame.lazy(), "id", frame.height)
    assert found is not None
    repeated = frame.group_by("id").len().filter(pl.col("len") > 1).select(pl.col("id").hash(seed=0))
    assert set(repeated.to_series().to_list()) <= set(found["hash"].to_list())


@settings(max_examples=80, deadline=None)
@given(tables(), st.sampled_from(["screen", "screen, never giving up", "passes", "no compiled kernels"]))
def test_the_verdict_is_the_exact_count_s_on_every_path(
    table: tuple[pl.DataFrame, dict[str, int]], path: str
) -> None:
    frame, bounds = table
    with pytest.MonkeyPatch.context() as patch:
        if path == "no compiled kernels" or NATIVE is None:
            patch.setattr(_native, "NATIVE", None)
        else:
            patch.setattr(_native, "NATIVE", NATIVE)
        if path == "passes":  # one 64-bit word a pass: up to 15 passes, most keys flagged
            patch.setattr(repeats, "MAX_WORDS", 1)
        if path in ("passes", "screen, never giving up"):  # the semi-join of the flagged units
            patch.setattr(run_module, "REPEATS_WORTH_SCREENING", 1.0)
        got = columns_over_bound(frame.lazy(), "id", bounds, None)
    assert set(got) == _exact(frame, "id", bounds)
    assert got == [c for c in bounds if c in got]  # in the steps' order


@needs_native
@pytest.mark.parametrize("where", ["first and last rows", "one morsel apart", "next to each other"])
def test_one_unit_with_two_values_among_many_is_found(tmp_path: Path, where: str) -> None:
    # 300,000 units in one row each, in small row groups (many morsels, both threads busy),
    # and one unit in two rows with different values: the attack the check exists for.
    n = 300_000
    frame = pl.DataFrame({"id": pl.int_range(n, eager=True), "a": pl.Series([True] * n)})
    other = {"first and last rows": n - 1, "one morsel apart": 150_001, "next to each other": 1}[where]
    twin = frame["id"][0]
    frame = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == other).then(twin).otherwise(pl.col("id")).alias("id"),
        pl.when(pl.int_range(pl.len()) == other).then(False).otherwise(pl.col("a")).alias("a"),
    )
    path = tmp_path / "units.parquet"
    frame.write_parquet(path, row_group_size=7_000)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_native, "NATIVE", NATIVE)
        assert columns_over_bound(pl.scan_parquet(path), "id", {"a": 1}, None) == ["a"]
        found = repeated_units(pl.scan_parquet(path), "id", n)
        # The same unit twice with the same value is one release: not refused.
        same = frame.with_columns(pl.lit(True).alias("a"))
        assert columns_over_bound(same.lazy(), "id", {"a": 1}, n) == []
    assert found is not None and found.height < n // 100  # the exact count sees few rows


@needs_native
def test_a_key_that_is_constant_within_each_file_is_offered_on_every_row(tmp_path: Path) -> None:
    # A hive-partitioned key arrives as a constant column; a screen run as an
    # element-wise predicate was called once per batch there and missed unit 1's two rows.
    for unit, values in ((1, [True, False]), (2, [True])):
        (tmp_path / f"id={unit}").mkdir()
        pl.DataFrame({"a": values}).write_parquet(tmp_path / f"id={unit}" / "part.parquet")
    units = pl.scan_parquet(tmp_path, hive_partitioning=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_native, "NATIVE", NATIVE)
        assert columns_over_bound(units, "id", {"a": 1}, 3) == ["a"]


@needs_native
def test_each_pass_offers_its_own_keys_alone() -> None:
    # Four passes, each filter sized for a quarter of the keys: a pass offered every key
    # would flag ~7% of keys seen once instead of ~0.1%.
    n = 400_000
    units = pl.DataFrame({"id": pl.int_range(n, eager=True)}).lazy()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_native, "NATIVE", NATIVE)
        patch.setattr(repeats, "MAX_WORDS", n * repeats.BITS_PER_KEY // 64 // 4)
        assert repeats.passes(n) == 4
        found = repeated_units(units, "id", n)
    assert found is not None and found.height < n * 0.005


@needs_native
def test_a_table_whose_units_mostly_repeat_is_counted_whole() -> None:
    # An events table (every unit in 4 rows): the screen flags 3 rows in 4, gives up past
    # 1% of the rows, and every unit is counted -- the same verdict.
    n = 200_000
    ids = pl.int_range(n, eager=True) % (n // 4)
    frame = pl.DataFrame({"id": ids, "a": (ids % 3 == 0)})
    twice = frame.with_columns(  # row 7 is one of unit 7's four rows
        pl.when(pl.int_range(pl.len()) == 7).then(~pl.col("a")).otherwise(pl.col("a")).alias("a")
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_native, "NATIVE", NATIVE)
        assert repeated_units(frame.lazy(), "id", n) is None
        assert columns_over_bound(frame.lazy(), "id", {"a": 1}, n) == []
        assert columns_over_bound(twice.lazy(), "id", {"a": 1}, n) == ["a"]
