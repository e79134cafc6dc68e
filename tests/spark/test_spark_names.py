"""A user's column may have any name on Spark too (issue 27): every Spark operation gives
the Polars result of the same frame, bit for bit, when the columns it reads (data, row
key, privacy unit) and the columns it passes through are named like the helper columns
of polars_ppdm/spark; a column named like an operation's own output is refused up front,
from the schema, with the Polars message."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from spark_frames import to_spark

import polars_ppdm as ppdm
import polars_ppdm.spark as ppdm_spark
from polars_ppdm._validation import RESERVED_OUTPUTS
from polars_ppdm.exceptions import InvalidParameterError

pytestmark = pytest.mark.spark

SECRET = "7c2e91d04fa3b85e16d9c07a3e5f28b4"  # not a guessable pattern (DP releases refuse those)

# Every name polars_ppdm/spark gives a helper column or an aggregate ("__..." literals,
# one of each f"..._{i}" family); names Spark would read as a struct field or as quoting
# if passed as a plain string; "__PPDM_RANK" as Spark compares names without case (more
# than len(ROLES) places from "__ppdm_rank", so that no two roles are named alike).
HELPER_NAMES = [
    "__ppdm_unit", "__ppdm_unit_word", "__ppdm_unit_rank", "__ppdm_finite", "__ppdm_code",
    "__ppdm_cell", "__ppdm_digest_0", "__ppdm_digest_3", "__ppdm_bin",
    "__ppdm_key", "__ppdm_k", "__ppdm_t", "__ppdm_bucket", "__ppdm_offset", "__ppdm_rank",
    "__ppdm_value", "__n", "__nulls_0", "__bad_0", "__a0", "a.b", "a`b", "__PPDM_RANK",
]  # fmt: skip
# The columns of the frames Spark aggregates or joins beside them: passed through only.
FRAME_NAMES = [
    "col", "cell", "n", "kmin", "kmax", "vmin", "vmax", "bad", "rows", "key_nulls", "kind",
    "id", "count", "k", "v", "observed", "frequency", "std_error",
]  # fmt: skip
ROLES = ["id", "rid", "x", "y", "a", "e"]  # privacy unit, row key, two numeric, two binary


def test_the_helper_names_are_those_of_the_code():
    """A helper added to polars_ppdm/spark gets into HELPER_NAMES (or this fails)."""
    source = Path(ppdm_spark.__file__).parent
    found = {m for path in source.glob("*.py") for m in re.findall(r'"(__\w+)', path.read_text())}
    assert found, "no helper literal found: the pattern is stale"
    missing = sorted(m for m in found if not any(name.startswith(m) for name in HELPER_NAMES))
    assert missing == []


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(27)
    n = 60
    return pl.DataFrame(
        {
            "id": rng.integers(0, 20, n),  # a unit has about three rows: max_contributions binds
            "rid": rng.permutation(n),
            "x": rng.normal(50, 20, n),
            "y": rng.normal(0, 2, n),
            "a": rng.random(n) < 0.4,
            "e": rng.random(n) < 0.6,
        }
    )


def _named(table: pl.DataFrame, first: int) -> tuple[pl.DataFrame, dict[str, str]]:
    """``table`` with its columns (in ROLES order) named HELPER_NAMES[first], [first + 1],
    ... and every other helper and frame name as a passed-through column (a name Spark
    would take for one already there, case aside, is left out: Spark could not tell them
    apart).  Over all ``first``, every helper name takes every role."""
    c = {role: HELPER_NAMES[(first + i) % len(HELPER_NAMES)] for i, role in enumerate(ROLES)}
    frame = table.rename(c)
    taken = {name.lower() for name in frame.columns}
    assert len(taken) == len(ROLES), "two roles named alike but for case"
    for i, name in enumerate(n for n in [*HELPER_NAMES, *FRAME_NAMES] if n.lower() not in taken):
        taken.add(name.lower())
        frame = frame.with_columns(pl.Series(name, np.arange(frame.height) * 7 + i))
    return frame, c


BOX = [(0.0, 100.0), (-5.0, 5.0)]


def _dp(c: dict[str, str]) -> dict[str, Any]:
    return dict(bounds=BOX, epsilon=1.0, secret=SECRET, key=c["id"], max_contributions=2)


def _spiral(c: dict[str, str]) -> ppdm.SpiralKey:
    return ppdm.spiral_key([c["x"], c["y"]], bounds={c["x"]: BOX[0], c["y"]: BOX[1]}, secret=SECRET)


def _kmeans(engine: Any, f: Any, c: dict[str, str]) -> tuple[pl.DataFrame, ...]:
    fit = engine.dp_kmeans(f, [c["x"], c["y"]], k=2, max_height=1, threshold=4, **_dp(c))
    return fit.centres, fit.buckets


# operation -> (function of (engine, frame, roles), the columns its rows are sorted by)
OPS: dict[str, tuple[Callable[..., Any], Callable[[dict[str, str]], list[str]]]] = {
    "rr_disguise": (
        lambda E, f, c: E.rr_disguise(f, [c["a"], c["e"]], p=0.8, secret=SECRET, key=c["rid"]),
        lambda c: [c["rid"]],
    ),
    "add_noise": (
        lambda E, f, c: E.add_noise(f, [c["x"], c["y"]], scale=1.0, secret=SECRET, key=c["rid"]),
        lambda c: [c["rid"]],
    ),
    "apply_spiral_key": (lambda E, f, c: E.apply_spiral_key(f, _spiral(c)), lambda c: [c["rid"]]),
    "invert_spiral_key": (lambda E, f, c: E.invert_spiral_key(f, _spiral(c)), lambda c: [c["rid"]]),
    "ecdf_resample": (
        lambda E, f, c: E.ecdf_resample(f, c["x"], bins=8, secret=SECRET, key=c["rid"]),
        lambda c: [c["rid"]],
    ),
    "rr_support": (lambda E, f, c: E.rr_support(f, [c["a"], c["e"]], p=0.8), lambda c: []),
    "rr_support itemsets": (
        lambda E, f, c: E.rr_support(f, [c["a"], c["e"]], p=0.8, itemsets=[[c["a"]], [c["a"], c["e"]]]),
        lambda c: [],
    ),
    "rr_apriori": (
        lambda E, f, c: E.rr_apriori(f, [c["a"], c["e"]], p=0.8, min_support=0.1, min_confidence=0.1),
        lambda c: [],
    ),
    "dp_histogram": (
        lambda E, f, c: E.dp_histogram(f, [c["x"], c["y"]], bins=3, **_dp(c)),
        lambda c: [c["x"] + "_bin", c["y"] + "_bin"],
    ),
    "dp_quadtree": (
        lambda E, f, c: E.dp_quadtree(f, [c["x"], c["y"]], max_height=1, threshold=4, **_dp(c)),
        lambda c: [],
    ),
    "dp_kmeans": (lambda E, f, c: _kmeans(E, f, c), lambda c: []),
}


def _frames(result: Any, order: list[str]) -> list[pl.DataFrame]:
    """A result (a Spark or Polars frame, or a tuple of them) as Polars frames in one row order."""
    out = []
    for part in result if isinstance(result, tuple) else (result,):
        frame = part if isinstance(part, pl.DataFrame) else pl.DataFrame(pl.from_arrow(part.toArrow()))
        out.append(frame.sort(order) if order else frame)
    return out


@pytest.fixture(scope="module")
def one_shuffle_partition(spark):
    """Small frames: one partition per shuffle saves most of the tasks' cost."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


@pytest.fixture(scope="module")
def frames(spark, table, one_shuffle_partition):
    """Each case's Polars and Spark frames (made once per case)."""
    cache: dict[int, tuple[pl.DataFrame, Any, dict[str, str]]] = {}

    def get(first: int) -> tuple[pl.DataFrame, Any, dict[str, str]]:
        if first not in cache:
            frame, c = _named(table, first)
            cache[first] = (frame, to_spark(spark, frame, 2, seed=first), c)
        return cache[first]

    return get


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("first", range(len(HELPER_NAMES)), ids=HELPER_NAMES)
def test_every_operation_is_the_polars_result_under_helper_names(frames, op, first):
    """The id is the name of the privacy unit; the row key, x, y, a and e take the next
    names, and every other name is passed through."""
    frame, sdf, c = frames(first)
    run, order = OPS[op]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the estimators' warnings about negative variances
        want = _frames(run(ppdm, frame, c), order(c))
        got = _frames(run(ppdm_spark, sdf, c), order(c))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert_frame_equal(g, w)


# ---- a column named like an operation's output ---------------------------------------------


def _never_read(spark: Any, table: pl.DataFrame, renamed: dict[str, str]) -> Any:
    """The table renamed, as a Spark frame whose rows cannot be read: a refusal made from
    the schema raises our error, a read raises Spark's."""
    sdf = to_spark(spark, table.rename(renamed), 1)

    def fail(batches: Any) -> Any:
        msg = "the refusal read the data"
        raise AssertionError(msg)
        yield from batches

    return sdf.mapInArrow(fail, sdf.schema)


REFUSED = {
    "rr_support": ("a", lambda E, f, n: E.rr_support(f, [n, "e"], p=0.8)),
    "rr_support whole_record": (
        "a",
        lambda E, f, n: E.rr_support(f, [n, "e"], p=0.8, mode="whole_record"),
    ),
    "dp_kmeans": ("x", lambda E, f, n: E.dp_kmeans(f, [n, "y"], k=2, bounds=BOX, epsilon=1.0, secret=SECRET)),
    "dp_kmeans grid": (
        "x",
        lambda E, f, n: E.dp_kmeans(f, [n, "y"], k=2, bounds=BOX, epsilon=1.0, secret=SECRET, method="grid"),
    ),
}
REFUSALS = [(op, name) for op in REFUSED for name in RESERVED_OUTPUTS[op.split()[0]]]


@pytest.mark.parametrize(("op", "name"), REFUSALS, ids=[f"{op}-{name}" for op, name in REFUSALS])
def test_a_column_named_like_an_output_is_refused_with_the_polars_message(spark, table, op, name):
    source, call = REFUSED[op]
    with pytest.raises(InvalidParameterError) as want:
        call(ppdm, table.rename({source: name}), name)
    with pytest.raises(InvalidParameterError) as got:
        call(ppdm_spark, _never_read(spark, table, {source: name}), name)
    assert str(got.value) == str(want.value)
    assert f"The 'columns' parameter of {op.split()[0]}" in str(got.value) and repr(name) in str(got.value)


# Output names of the operation that cannot clash with these columns: read as any other.
UNCLASHED = [
    ("rr_support itemsets", "a", "frequency"),
    ("rr_support itemsets", "e", "observed"),
    ("rr_apriori", "a", "std_error"),
    ("dp_histogram", "x", "count"),
    ("dp_quadtree", "x", "count"),
    ("dp_quadtree", "y", "level"),
]


@pytest.mark.parametrize(("op", "role", "name"), UNCLASHED, ids=[f"{o}-{n}" for o, _, n in UNCLASHED])
def test_a_column_named_like_an_output_that_cannot_clash_is_read(spark, table, op, role, name):
    c = {r: r for r in ROLES} | {role: name}
    frame = table.rename({role: name})
    run, order = OPS[op]
    want = _frames(run(ppdm, frame, c), order(c))
    got = _frames(run(ppdm_spark, to_spark(spark, frame, 2), c), order(c))
    for g, w in zip(got, want, strict=True):
        assert_frame_equal(g, w)
