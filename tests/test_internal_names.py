"""A user's column may have any name: every operation gives the same result when the
frame also holds a column named like one of the library's internal helper columns, and
passes that column through untouched where it keeps the frame's other columns; and when
the column it reads (data, group, privacy unit) is itself named like a helper.  A column
named like one of an operation's own output columns is refused up front, from the
schema, where it would clash in the result (never overwritten in silence)."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm._validation import RESERVED_OUTPUTS, check_output_names
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.perturb.spiral import SpiralKey

# Every name the package gives a helper column, an aggregate or a struct field in
# polars_ppdm/dp, mine and perturb (and DuckDB's "__ppdm_position"), plus the siblings
# built with a suffix (f"__a{i}", f"__nulls_{i}", ...) and the old per-aggregate names.
INTERNAL_NAMES = [
    "__draw", "__ppdm_key", "__ppdm_truthful", "__ppdm_bin", "__ppdm_unit_word",
    "__ppdm_position", "__n", "__a0", "__a1", "__nulls_0", "__nulls_1", "__bad_0",
    "__ppdm_row", "__ppdm_row_word", "__ppdm_pair_word", "__ppdm_rows", "__ppdm_units",
    "__ppdm_bad", "__ppdm_keep", "__ppdm_grid_0", "__ppdm_grid_1", "__ppdm_rows_1",
    "__ppdm_sum_x_sum", "__ppdm_shifted_x_mean", "k", "c0", "c1", "n", "b", "m0", "c0_1",
    "lo0", "hi0",
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
            "e": rng.random(n) < 0.6,
            "id": rng.permutation(n),
        }
    )


ROW_WISE = {
    "ecdf_resample shuffle": lambda f: ppdm.ecdf_resample(f, ["x", "y"], secret=1, shuffle=True),
    "ecdf_resample key": lambda f: ppdm.ecdf_resample(f, ["x", "y"], secret=1, key="id"),
    "rr_disguise": lambda f: ppdm.rr_disguise(f, ["a", "e"], p=0.8, secret=1),
    "rr_disguise key": lambda f: ppdm.rr_disguise(f, ["a", "e"], p=0.8, secret=1, key="id"),
    "rr_disguise whole_record": lambda f: ppdm.rr_disguise(
        f, ["a", "e"], p=0.8, secret=1, mode="whole_record"
    ),
    "add_noise": lambda f: ppdm.add_noise(f, ["y"], scale=1.0, secret=1, key="id"),
    "spiral": lambda f: ppdm.spiral(
        f.drop_nulls("x"), ["x", "y"], bounds={"x": (0, 100), "y": (-5, 5)}, secret=1
    ),
}

AGGREGATES = {
    "rr_support": lambda f: ppdm.rr_support(f, ["a", "e"], p=0.8),
    "rr_frequent_itemsets": lambda f: ppdm.rr_frequent_itemsets(f, ["a", "e"], p=0.8, min_support=0.1),
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
    "dp_group_by unit": lambda f: ppdm.dp_group_by(
        f,
        "a",
        [dp.count(), dp.mean("y", bounds=(-3, 3))],
        epsilon=1.0,
        privacy_unit="id",
        public_groups=pl.DataFrame({"a": [True, False]}),
        secret=ppdm.Secret.for_tests(1),
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


# ---- the columns an operation reads, named like a helper ---------------------------------
#
# Each operation reads the columns of the roles "x", "y" (numeric), "a", "e" (binary),
# "g" (a group key) and "id" (the privacy unit or row key) through ``c``, a map from role
# to column name.  The secret keys the noise by the names of the data and group columns
# (each column its own stream), so for those roles the operations run noise-free
# (``quiet``: epsilon 1e9 draws no noise, p = 1 keeps every answer, a scale of 1e-300
# moves no value): the result then depends on the values alone.  The privacy unit's name
# keys no coin of a perturbation: that role is compared with the noise on; a DP release's
# key names its unit's column (bounded per person or per household is another query), so
# there it runs noise-free too.

SECRET = ppdm.Secret.for_tests(3)
GROUPS = ["north", "south", "east"]


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    n = 300
    return pl.DataFrame(
        {
            "x": rng.normal(50, 10, n),
            "y": rng.normal(0, 1, n),
            "a": rng.random(n) < 0.3,
            "e": rng.random(n) < 0.6,
            "g": rng.choice(GROUPS, n),
            "id": rng.integers(0, 120, n),  # a unit has several rows
        }
    )


def _roles(frame: pl.DataFrame, c: dict[str, str], *lists: str) -> pl.DataFrame:
    """Item names (values of list columns) back to their roles."""
    role_of = {name: role for role, name in c.items()}
    return frame.with_columns(pl.col(lists).list.eval(pl.element().replace(role_of)))


def _eps(quiet: bool) -> float:
    return 1e9 if quiet else 1.0


def _kmeans(f, c, quiet, method):
    fit = ppdm.dp_kmeans(
        f,
        [c["x"], c["y"]],
        k=2,
        bounds=[(0, 100), (-5, 5)],
        epsilon=_eps(quiet),
        secret=SECRET,
        key=c["id"],
        max_contributions=2,
        method=method,
        max_height=3,
        threshold=5,
    )
    # The centres' seeding is keyed by the columns' names: noise-free, the buckets are the result.
    return fit.buckets if quiet and fit.buckets is not None else fit.centres


def _group_by(f, c, quiet, **kwargs):
    return ppdm.dp_group_by(
        f,
        c["g"],
        [dp.count(), dp.sum(c["x"], bounds=(0, 100)), dp.mean(c["y"], bounds=(-3, 3))],
        epsilon=_eps(quiet),
        secret=SECRET,
        intervals=True,
        **kwargs,
    )


def _consistent(f, c, quiet):
    fine = f.group_by(c["g"], c["a"]).agg(pl.col(c["x"]).sum()).sort(c["g"], c["a"])
    coarse = f.group_by(c["g"]).agg(pl.col(c["x"]).sum()).sort(c["g"])
    out = ppdm.consistent_totals([fine, coarse], c["x"], by=[c["g"], c["a"]], sd=[1.0, 1.0])
    return pl.concat([out[0].drop(c["a"]), out[1]])


# operation -> (function of (frame, roles, quiet), the roles it reads)
READERS = {
    "ecdf_resample": (lambda f, c, q: ppdm.ecdf_resample(f, [c["x"], c["y"]], secret=1, key=c["id"]), ["id"]),
    "rr_disguise": (
        lambda f, c, q: ppdm.rr_disguise(f, [c["a"], c["e"]], p=1.0 if q else 0.8, secret=1, key=c["id"]),
        ["a", "id"],
    ),
    "rr_disguise whole_record": (
        lambda f, c, q: ppdm.rr_disguise(
            f, [c["a"], c["e"]], p=1.0 if q else 0.8, secret=1, mode="whole_record", key=c["id"]
        ),
        ["a", "id"],
    ),
    "add_noise": (
        lambda f, c, q: ppdm.add_noise(f, [c["x"]], scale=1e-300 if q else 1.0, secret=1, key=c["id"]),
        ["x", "id"],
    ),
    # The key's draw names its columns (another column, another key: review 50), so the
    # transform is checked under the name: one key's matrix applied to the column so named.
    "spiral": (lambda f, c, q: ppdm.apply_spiral_key(f, _spiral_key_for(c["x"], c["y"])), ["x"]),
    "rr_support": (lambda f, c, q: ppdm.rr_support(f, [c["a"], c["e"]], p=0.8), ["a"]),
    "rr_support itemsets": (
        lambda f, c, q: _roles(
            ppdm.rr_support(f, [c["a"], c["e"]], p=0.8, itemsets=[[c["a"]], [c["a"], c["e"]]]), c, "itemset"
        ),
        ["a"],
    ),
    "rr_apriori": (
        lambda f, c, q: _roles(
            ppdm.rr_apriori(f, [c["a"], c["e"]], p=0.8, min_support=0.1, min_confidence=0.1),
            c,
            "antecedent",
            "consequent",
        ),
        ["a"],
    ),
    "rr_id3": (
        lambda f, c, q: (
            ppdm.rr_id3(f, [c["a"], c["g"]], c["e"], p=0.8, categories={c["g"]: GROUPS})
            .predict(f)
            .to_frame("predicted")
        ),
        ["a", "g", "e"],
    ),
    "estimate_covariance": (
        lambda f, c, q: ppdm.estimate_covariance(f, [c["x"], c["y"]], scale=1.0).drop("column"),
        ["x"],
    ),
    "pca_reconstruct": (lambda f, c, q: ppdm.pca_reconstruct(f, [c["x"], c["y"]], scale=0.5), ["x"]),
    "reconstruct_distribution": (
        lambda f, c, q: ppdm.reconstruct_distribution(f, c["x"], scale=1.0, bins=8, bounds=(0, 100)),
        ["x"],
    ),
    "dp_histogram": (
        lambda f, c, q: ppdm.dp_histogram(
            f,
            [c["x"], c["y"]],
            bounds=[(0, 100), (-5, 5)],
            bins=4,
            epsilon=_eps(q),
            secret=SECRET,
            key=c["id"],
            max_contributions=2,
        ),
        ["x", "id"],
    ),
    "dp_quadtree": (
        lambda f, c, q: ppdm.dp_quadtree(
            f,
            [c["x"], c["y"]],
            bounds=[(0, 100), (-5, 5)],
            epsilon=_eps(q),
            secret=SECRET,
            key=c["id"],
            max_contributions=2,
            max_height=3,
            threshold=5,
        ),
        ["x", "id"],
    ),
    "dp_kmeans": (lambda f, c, q: _kmeans(f, c, q, "quadtree"), ["x", "id"]),
    "dp_kmeans lloyd": (lambda f, c, q: _kmeans(f, c, q, "lloyd"), ["id"]),
    "dp_group_by": (
        lambda f, c, q: _group_by(
            f,
            c,
            q,
            privacy_unit=c["id"],
            max_groups_contributed=2,
            max_rows_per_group=2,
            public_groups=pl.DataFrame({c["g"]: [*GROUPS, "west"]}),
        ),
        ["g", "x", "id"],
    ),
    "dp_group_by selection": (
        lambda f, c, q: _group_by(f, c, q, delta=1e-6).sort(c["g"]),
        ["g", "x"],
    ),
    "consistent_totals": (_consistent, ["g", "a"]),
}
ROLES = {"x": "x", "y": "y", "a": "a", "e": "e", "g": "g", "id": "id"}


def _spiral_key_for(x: str, y: str) -> SpiralKey:
    key = ppdm.spiral_key(["x", "y"], bounds={"x": (0, 100), "y": (-5, 5)}, secret=1)
    return SpiralKey((x, y), key.matrix, key.offset, key.scale)


CASES = [(op, role) for op, (_, roles) in READERS.items() for role in roles]


def _run(op: str, frame: pl.DataFrame, roles: dict[str, str], quiet: bool) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the estimators' warnings about negative variances
        return READERS[op][0](frame, roles, quiet)


@pytest.fixture(scope="module")
def baseline(table):
    """Each operation's result on the table as it is (computed once per operation)."""
    cache: dict[tuple[str, bool], pl.DataFrame] = {}

    def expected(op: str, quiet: bool) -> pl.DataFrame:
        if (op, quiet) not in cache:
            cache[op, quiet] = _run(op, table, ROLES, quiet)
        return cache[op, quiet]

    return expected


def _same_under(name: str, op: str, role: str, table: pl.DataFrame, baseline) -> None:
    quiet = role != "id" or op.startswith("dp_")
    expected = baseline(op, quiet)
    got = _run(op, table.rename({role: name}), {**ROLES, role: name}, quiet)
    # Output columns named after the column read ("x", "x_bin", "x_sum_sd") follow it.
    renamed = {c: name + c[len(role) :] for c in expected.columns if c == role or c.startswith(role + "_")}
    assert_frame_equal(got, expected.rename(renamed))


@pytest.mark.parametrize("name", INTERNAL_NAMES)
@pytest.mark.parametrize(("op", "role"), CASES, ids=[f"{op}-{role}" for op, role in CASES])
def test_a_column_read_under_a_helper_name_gives_the_same_result(table, baseline, op, role, name):
    _same_under(name, op, role, table, baseline)


# ---- a column named like an operation's output ---------------------------------------------


def test_every_reserved_output_is_an_output():
    """RESERVED_OUTPUTS lists exactly the columns an operation adds beside those it is given."""
    t = pl.DataFrame({"p": [True, False, True, True], "q": [1.0, 2.0, 3.0, 5.0], "r": [2.0, 1.0, 0.0, 4.0]})
    fit = ppdm.dp_kmeans(t, ["q", "r"], k=1, bounds=[(0, 9), (0, 9)], epsilon=1.0, secret=SECRET)
    added = {
        "rr_support": set(ppdm.rr_support(t, ["p"], p=0.8).columns) - {"p"},
        "dp_kmeans": set(fit.buckets.columns) - {"q", "r"},
        "estimate_covariance": set(ppdm.estimate_covariance(t, ["q", "r"], scale=0.0).columns) - {"q", "r"},
    }
    assert {k: set(v) for k, v in RESERVED_OUTPUTS.items()} == added


REFUSED = {
    "rr_support": lambda f, n: ppdm.rr_support(f, [n, "e"], p=0.8),
    "dp_kmeans": lambda f, n: ppdm.dp_kmeans(
        f, [n, "y"], k=2, bounds=[(0, 100), (-5, 5)], epsilon=1.0, secret=SECRET
    ),
    "dp_kmeans grid": lambda f, n: ppdm.dp_kmeans(
        f, [n, "y"], k=2, bounds=[(0, 100), (-5, 5)], epsilon=1.0, secret=SECRET, method="grid"
    ),
    "estimate_covariance": lambda f, n: ppdm.estimate_covariance(f, [n, "y"], scale=1.0),
}
REFUSALS = [(op, name) for op in REFUSED for name in RESERVED_OUTPUTS[op.split()[0]]]


@pytest.mark.parametrize(("op", "name"), REFUSALS, ids=[f"{op}-{name}" for op, name in REFUSALS])
def test_a_column_named_like_an_output_is_refused_from_the_schema(table, op, name):
    """Refused when the call is made, before a row is read: the error names the parameter,
    the column and the reserved names, and how to rename; the same error as the
    schema-only check the pipeline runs before it reserves any budget."""
    source = "a" if op == "rr_support" else "x"
    lazy = table.lazy().rename({source: name}).map_batches(_never_read, schema=None)
    with pytest.raises(InvalidParameterError) as refused:
        REFUSED[op](lazy, name)
    message = str(refused.value)
    func = op.split()[0]
    assert f"The 'columns' parameter of {func}" in message and repr(name) in message
    assert all(repr(r) in message for r in RESERVED_OUTPUTS[func]) and ".rename(" in message
    assert "\n" not in message
    method = "grid" if op.endswith("grid") else "quadtree"
    with pytest.raises(InvalidParameterError) as planned:
        check_output_names(func, [name, "y"], method=method)
    assert str(planned.value) == message


def _never_read(batch: pl.DataFrame) -> pl.DataFrame:
    msg = "the refusal read the data"
    raise AssertionError(msg)


@pytest.mark.parametrize(
    ("op", "name"),
    [
        ("rr_support itemsets", "frequency"),
        ("rr_support itemsets", "observed"),
        ("rr_support itemsets", "std_error"),
        ("rr_apriori", "frequency"),
        ("dp_kmeans lloyd", "count"),  # no buckets: nothing to clash with
        ("dp_histogram", "count"),
        ("dp_quadtree", "count"),
        ("dp_quadtree", "level"),
        ("reconstruct_distribution", "count"),
        ("dp_group_by", "column"),
    ],
)
def test_a_column_named_like_an_output_that_cannot_clash_is_read(table, baseline, op, name):
    _same_under(name, op, READERS[op][1][0], table, baseline)


def test_check_output_names_knows_every_release_step():
    for func in (
        "rr_support",
        "rr_apriori",
        "dp_histogram",
        "dp_quadtree",
        "dp_kmeans",
        "estimate_covariance",
    ):
        check_output_names(func, ["a", "e"])
    check_output_names("dp_group_by", by=["a"], aggregates=["count", "x_sum"], intervals=True)
    with pytest.raises(ValueError, match="rr_disguise"):
        check_output_names("rr_disguise", ["a"])
