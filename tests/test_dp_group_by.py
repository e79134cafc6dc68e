"""dp_group_by: noisy count / sum / mean per group with a privacy unit."""

from __future__ import annotations

import functools
import math

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.dp.accuracy import geometric_sd, laplace_sd
from polars_ppdm.dp.group_by import selection_threshold
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError

SECRET = "5a1f3c9e0b7d2a4866c3e1f09b8d7a25"  # fixed for the tests; not a repeated pattern
REGIONS = ["north", "south", "east"]


def one_row_each(n: int = 3000, seed: int = 0) -> pl.DataFrame:
    """One row per person: bounding never binds, the truth is the plain group-by."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {"person": np.arange(n), "region": rng.choice(REGIONS, n), "spend": rng.uniform(0, 100, n)}
    )


def truth(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.group_by("region").agg(
        pl.len().alias("count"),
        pl.col("spend").sum().alias("spend_sum"),
        pl.col("spend").mean().alias("spend_mean"),
    )


AGGREGATES = [dp.count(), dp.sum("spend", bounds=(0, 100)), dp.mean("spend", bounds=(0, 100))]
PUBLIC = pl.DataFrame({"region": REGIONS})


def release(frame, secret, **kwargs):
    params = {
        "epsilon": 0.6,
        "privacy_unit": "person",
        "public_groups": PUBLIC,
        "secret": ppdm.Secret.for_tests(secret) if isinstance(secret, int) else secret,
        "intervals": True,
    }
    return ppdm.dp_group_by(frame, "region", AGGREGATES, **{**params, **kwargs})


# ---- statistics over many secrets --------------------------------------------------------


@pytest.fixture(scope="module")
def releases() -> tuple[pl.DataFrame, pl.DataFrame]:
    frame = one_row_each()
    runs = [release(frame, secret).with_columns(pl.lit(secret).alias("secret")) for secret in range(500)]
    return truth(frame), pl.concat(runs)


@pytest.mark.parametrize("name", ["count", "spend_sum", "spend_mean"])
def test_each_aggregate_is_unbiased_over_500_secrets(releases, name):
    true, runs = releases
    joined = runs.join(true.select("region", pl.col(name).alias("true")), on="region")
    for region, group in joined.group_by("region"):
        values = group[name].to_numpy()
        se = values.std(ddof=1) / math.sqrt(len(values))
        assert abs(values.mean() - group["true"][0]) < 4 * se, (region, name)


@pytest.mark.parametrize("name", ["count", "spend_sum", "spend_mean"])
def test_95_percent_intervals_cover_the_truth_93_to_97_percent(releases, name):
    true, runs = releases
    joined = runs.join(true.select("region", pl.col(name).alias("true")), on="region")
    covered = (
        (joined[f"{name}_ci_low"] <= joined["true"]) & (joined["true"] <= joined[f"{name}_ci_high"])
    ).mean()
    assert 0.93 <= covered <= 0.97, covered


def test_the_noise_has_the_declared_scale(releases):
    """epsilon 0.6 over three aggregates: 0.2 each; the count's scale 1 / 0.2, the sum's
    100 / 0.2, the mean's sum (100 - 0) / 2 / 0.2 (its count is the released count)."""
    true, runs = releases
    assert runs["count_sd"].unique().to_list() == [pytest.approx(geometric_sd(5.0))]
    assert runs["spend_sum_sd"].unique().to_list() == [pytest.approx(laplace_sd(500.0))]
    joined = runs.join(true.select("region", pl.col("count").alias("true")), on="region")
    observed = (joined["count"] - joined["true"]).std()
    # The sample SD of 1,500 draws is within 10% of the true one (its SE is ~ 2.6%).
    assert observed == pytest.approx(geometric_sd(5.0), rel=0.1)


# ---- groups --------------------------------------------------------------------------------


def test_public_groups_exactly_in_their_order_empty_ones_too():
    frame = one_row_each(300)
    public = pl.DataFrame({"region": ["west", "south", "north"]})  # west is empty; east is not listed
    out = release(frame, 1, public_groups=public)
    assert out["region"].to_list() == ["west", "south", "north"]
    assert abs(out["count"][0]) < 40  # noise only: scale 5


def test_partition_selection_never_releases_a_group_of_one_person():
    rng = np.random.default_rng(4)
    crowd = pl.DataFrame({"person": np.arange(400), "region": rng.choice(["north", "south"], 400)})
    loners = pl.DataFrame({"person": [1000, 1001, 1002], "region": ["tiny-a", "tiny-b", "tiny-c"]})
    frame = pl.concat([crowd, loners]).with_columns(spend=pl.lit(1.0))
    released = set()
    for secret in range(300):
        out = ppdm.dp_group_by(
            frame,
            "region",
            dp.count(),
            epsilon=1.0,
            privacy_unit="person",
            delta=1e-6,
            secret=ppdm.Secret.for_tests(secret),
        )
        released |= set(out["region"].to_list())
    assert released == {"north", "south"}
    # The threshold: one unit alone passes with probability <= delta.
    threshold = selection_threshold(0.5, 1e-6, 1)
    alpha = math.exp(-0.5)
    assert alpha ** (threshold - 1) / (1 + alpha) <= 1e-6 < alpha ** (threshold - 2) / (1 + alpha)


# ---- contribution bounding -----------------------------------------------------------------


def busy_people() -> pl.DataFrame:
    """Each person has 5 rows in each of 4 regions."""
    people, regions = np.meshgrid(np.arange(50), np.arange(4), indexing="ij")
    person = np.repeat(people.ravel(), 5)
    region = np.repeat(regions.ravel(), 5)
    return pl.DataFrame({"person": person, "region": region, "spend": np.linspace(0, 9, len(person))})


def test_a_person_adds_at_most_max_rows_to_at_most_max_groups():
    # epsilon so large that the noise is 0: the counts are the bounded counts.
    out = ppdm.dp_group_by(
        busy_people(),
        "region",
        dp.count(),
        epsilon=1e6,
        privacy_unit="person",
        max_groups_contributed=2,
        max_rows_per_group=3,
        public_groups=pl.DataFrame({"region": [0, 1, 2, 3]}),
        secret=SECRET,
    )
    assert out["count"].sum() == 50 * 2 * 3
    # Which two regions each person keeps is keyed: spread over the four, not the first two.
    assert (out["count"] > 0).all() and out["count"].max() < 50 * 3


def test_rows_kept_do_not_depend_on_row_order():
    frame = busy_people()
    kwargs = {
        "epsilon": 1.0,
        "privacy_unit": "person",
        "max_groups_contributed": 2,
        "max_rows_per_group": 3,
        "public_groups": pl.DataFrame({"region": [0, 1, 2, 3]}),
        "secret": SECRET,
    }
    aggregates = [dp.count(), dp.sum("spend", bounds=(0, 10)), dp.mean("spend", bounds=(0, 10))]
    first = ppdm.dp_group_by(frame, "region", aggregates, **kwargs)
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=3)
    assert ppdm.dp_group_by(shuffled, "region", aggregates, **kwargs).equals(first)


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical, pl.Int64])
def test_selected_groups_come_in_key_order_whatever_the_row_order(dtype):
    """The order of released groups is a function of the released keys alone: never of the
    rows' order (a hash table's order follows it) and the same on every run (Polars 1.34's
    was not, and a scheduled job's identical re-run was refused for other bits)."""
    rng = np.random.default_rng(5)
    n = 6000
    names = np.array(["m", "c", "x", "a", "q", None], dtype=object)
    frame = pl.DataFrame({"person": np.arange(n), "spend": rng.uniform(0, 10, n)}).with_columns(
        pl.Series("region", names[rng.integers(0, 6, n)]).cast(pl.String)
    )
    if dtype == pl.Int64:
        frame = frame.with_columns(
            pl.col("region").replace_strict(
                {"m": 5, "c": -2, "x": 40, "a": 3, "q": 0}, default=None, return_dtype=pl.Int64
            )
        )
    else:
        frame = frame.with_columns(pl.col("region").cast(dtype))
    kwargs = {"epsilon": 1.0, "privacy_unit": "person", "delta": 1e-6, "secret": SECRET}
    aggregates = [dp.count(), dp.mean("spend", bounds=(0, 10))]
    first = ppdm.dp_group_by(frame, "region", aggregates, **kwargs)
    keys = first["region"].cast(pl.String).to_list() if dtype != pl.Int64 else first["region"].to_list()
    assert len(keys) == 6 and keys[-1] is None and keys[:-1] == sorted(keys[:-1])
    for seed in range(3):
        shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
        assert ppdm.dp_group_by(shuffled, "region", aggregates, **kwargs).equals(first)


def test_eager_lazy_and_streaming_give_the_same_bits():
    frame = busy_people().with_columns(pl.col("region").cast(pl.String))
    kwargs = {
        "epsilon": 1.0,
        "privacy_unit": "person",
        "max_groups_contributed": 3,
        "max_rows_per_group": 2,
        "delta": 1e-5,
        "secret": SECRET,
        "intervals": True,
    }
    aggregates = [dp.count(), dp.sum("spend", bounds=(0, 10)), dp.mean("spend", bounds=(-5, 10))]
    eager = ppdm.dp_group_by(frame, "region", aggregates, **kwargs).sort("region")
    lazy = ppdm.dp_group_by(frame.lazy(), "region", aggregates, **kwargs)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().sort("region").equals(eager)
    assert lazy.collect(engine="streaming").sort("region").equals(eager)


def test_a_mean_listed_before_the_count_divides_by_it_and_the_columns_keep_their_order():
    # A mean divides by the release's count: listed after the mean, the count was not drawn
    # yet and the release failed with a KeyError.
    frame = one_row_each(300)
    mean_first = ppdm.dp_group_by(
        frame,
        "region",
        [AGGREGATES[2], AGGREGATES[1], AGGREGATES[0]],
        epsilon=0.6,
        privacy_unit="person",
        public_groups=PUBLIC,
        secret=ppdm.Secret.for_tests(3),
        intervals=True,
    )
    suffixes = ("", "_sd", "_ci_low", "_ci_high")
    assert mean_first.columns == [
        "region",
        *(f + s for f in ("spend_mean", "spend_sum", "count") for s in suffixes),
    ]
    assert mean_first["spend_mean"].is_between(0, 100).all()


def test_post_processing_and_accountant():
    frame = one_row_each(30)
    acc = ppdm.BudgetAccountant(1.0)
    out = ppdm.dp_group_by(
        frame,
        "region",
        [dp.count(), dp.sum("spend", bounds=(0, 100))],
        epsilon=0.1,
        public_groups=pl.DataFrame({"region": [f"r{i}" for i in range(50)]}),
        secret=SECRET,
        non_negative=True,
        accountant=acc,
    )
    assert (out["count"] >= 0).all() and (out["spend_sum"] >= 0).all()
    assert acc.spent == pytest.approx(0.1)
    with pytest.raises(BudgetExceededError):
        ppdm.dp_group_by(frame, "region", dp.count(), epsilon=0.95, public_groups=PUBLIC, accountant=acc)


def test_non_negative_clips_each_interval_with_its_value():
    """A clipped figure lies in its own interval: the interval is clipped at 0 too (a true
    count or non-negative sum is >= 0, so it is covered exactly as often).  Found by a
    new user: a count of 0 shown with the interval [-33, -3]."""
    frame = one_row_each(30)
    out = ppdm.dp_group_by(
        frame,
        "region",
        [dp.count(), dp.count_units(), dp.sum("spend", bounds=(0, 100))],
        epsilon=0.1,
        public_groups=pl.DataFrame({"region": [f"r{i}" for i in range(200)]}),
        secret=SECRET,
        non_negative=True,
        intervals=True,
    )
    for name in ("count", "units", "spend_sum"):
        value, low, high = out[name].cast(pl.Float64), out[f"{name}_ci_low"], out[f"{name}_ci_high"]
        assert ((low <= value) & (value <= high) & (low >= 0)).all(), name
        assert (value == 0).sum() > 20  # empty groups clipped: the case is exercised


# ---- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: dp.sum("spend"), "'bounds' parameter of dp.sum\\('spend'\\) is missing"),
        (lambda: dp.mean("spend"), "'bounds' parameter of dp.mean\\('spend'\\) is missing"),
        (lambda: dp.sum("spend", bounds=(10, 0)), "low < high"),
        (lambda: dp.mean("spend", bounds=(0, math.inf)), "finite numbers"),
        (lambda: dp.count(epsilon=0), "epsilon"),
    ],
)
def test_bad_aggregates(make, match):
    with pytest.raises(InvalidParameterError, match=match):
        make()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_groups_contributed": 0}, "max_groups_contributed"),
        ({"max_rows_per_group": 0}, "max_rows_per_group"),
        ({"public_groups": None}, "'delta' parameter of dp_group_by is missing"),
        ({"public_groups": None, "delta": 1.0}, "delta"),
        ({"public_groups": None, "delta": 0}, "delta"),
        ({"delta": 1e-6}, "leave delta out"),
        (
            {"public_groups": pl.DataFrame({"region": ["a"], "spend": [1.0]})},
            r"\['spend'\] are not group keys",
        ),
        ({"public_groups": pl.DataFrame({"area": ["a"]})}, "not group keys; \\['region'\\] are missing"),
        ({"privacy_unit": "nobody"}, "names no column"),
        ({"privacy_unit": "region"}, "cannot be a group column"),
        ({"privacy_unit": None, "max_rows_per_group": 2}, "need privacy_unit="),
        ({"epsilon": -1}, "epsilon"),
        ({"aggregates": []}, "non-empty list"),
        ({"aggregates": [dp.count(), dp.count()]}, "distinct output names"),
        (
            {"aggregates": [dp.count(epsilon=0.6), dp.sum("spend", bounds=(0, 1), epsilon=0.5)]},
            "add up to less",
        ),
        (
            {"aggregates": [dp.count(epsilon=1.0), dp.sum("spend", bounds=(0, 1))]},
            "leaving a share for spend_sum",
        ),
        ({"aggregates": [dp.sum("region", bounds=(0, 1))]}, "numeric column"),
        ({"by": "spend"}, "a float is no group key"),
        ({"intervals": "yes"}, "'intervals' parameter"),
    ],
)
def test_bad_parameters(kwargs, match):
    frame = one_row_each(50)
    params = {
        "by": "region",
        "aggregates": [dp.count()],
        "epsilon": 1.0,
        "privacy_unit": "person",
        "public_groups": PUBLIC,
        "secret": SECRET,
        **kwargs,
    }
    with pytest.raises(InvalidParameterError, match=match):
        ppdm.dp_group_by(frame, params.pop("by"), params.pop("aggregates"), **params)


def test_bad_data_is_refused_uncharged_and_the_message_counts_nothing():
    frame = one_row_each(50)
    acc = ppdm.BudgetAccountant(5.0)
    with pytest.raises(InvalidParameterError, match="key column 'person' of dp_group_by has null"):
        ppdm.dp_group_by(
            frame.with_columns(pl.when(pl.col("person") == 3).then(None).otherwise("person").alias("person")),
            "region",
            dp.count(),
            epsilon=1.0,
            privacy_unit="person",
            public_groups=PUBLIC,
            secret=SECRET,
        )
    with pytest.raises(InvalidParameterError, match="hold null, NaN or infinite values") as refused:
        ppdm.dp_group_by(
            frame.with_columns(
                pl.when(pl.col("person") == 3).then(float("nan")).otherwise("spend").alias("spend")
            ),
            "region",
            dp.sum("spend", bounds=(0, 100)),
            epsilon=1.0,
            privacy_unit="person",
            public_groups=PUBLIC,
            secret=SECRET,
            accountant=acc,
        )
    # Refused after the data was read, before any charge; the message says no count (a
    # count of bad rows would be a release of the private data with no noise at all).
    assert acc.spent == 0
    assert "nothing was released or charged" in str(refused.value)
    assert not any(ch.isdigit() for ch in str(refused.value).replace("dp_group_by", ""))


def test_the_accountant_learns_epsilon_and_delta():
    frame = one_row_each(300)
    with pytest.raises(BudgetExceededError, match="delta budget 0"):
        ppdm.dp_group_by(
            frame, "region", dp.count(), epsilon=0.5, delta=1e-6, accountant=ppdm.BudgetAccountant(1.0)
        )
    acc = ppdm.BudgetAccountant(1.0, delta=1.5e-6)
    ppdm.dp_group_by(frame, "region", dp.count(), epsilon=0.5, delta=1e-6, accountant=acc, secret=SECRET)
    assert (acc.spent, acc.spent_delta) == (0.5, 1e-6)
    assert acc.ledger.select("epsilon", "delta").rows() == [(0.5, 1e-6)]
    with pytest.raises(BudgetExceededError, match="needs delta 1e-06 but the accountant has 5e-07 left"):
        ppdm.dp_group_by(frame, "region", dp.count(), epsilon=0.1, delta=1e-6, accountant=acc)


def test_a_ledger_accountant_charges_epsilon_and_delta(tmp_path):
    ledger = ppdm.Ledger(tmp_path / "ledger.duckdb")
    ledger.open_dataset("visits", epsilon_budget=2.0)
    release = functools.partial(
        ppdm.dp_group_by, one_row_each(30), "region", dp.count(), epsilon=0.5, secret=SECRET
    )
    with pytest.raises(BudgetExceededError, match=r"has 0 left of its delta budget 0 .*--set-delta-budget"):
        release(delta=1e-6, accountant=ledger.accountant("visits"))
    assert ledger.spent("visits") == 0
    ledger.set_budget("visits", delta_budget=1.5e-6)
    release(delta=1e-6, accountant=ledger.accountant("visits"))
    assert ledger.status("visits")[:4] == (2.0, 0.5, 1.5e-6, 1e-6)
    with pytest.raises(
        BudgetExceededError, match="needs delta 1e-06 on dataset 'visits' but the ledger has 5e-07 left"
    ):
        release(delta=1e-6, accountant=ledger.accountant("visits"))
    assert ledger.accountant("visits").ledger.select("epsilon", "delta").rows() == [(0.5, 1e-6)]


def test_a_means_own_count_noise_is_checked_before_the_budget():
    """A mean without a dp.count() draws integer noise at half its epsilon, its sum's in grid
    units (2^24 steps per half-width: 2.6e24 here): the scales must fit 64-bit noise,
    checked before anything is charged."""
    acc = ppdm.BudgetAccountant(1.0)
    with pytest.raises(InvalidParameterError, match=r"integer noise of scale 2.6\de\+24"):
        ppdm.dp_group_by(
            one_row_each(30),
            "region",
            dp.mean("spend", bounds=(0, 100)),
            epsilon=1e-17,
            public_groups=PUBLIC,
            secret=SECRET,
            accountant=acc,
        )
    assert acc.spent == 0


@pytest.mark.parametrize(
    ("frame", "groups", "match"),
    [
        (
            one_row_each(30),
            pl.DataFrame({"region": [1, 2]}),
            "column 'region' is Int64 but the frame's is String",
        ),
        (
            one_row_each(30).with_columns(day=pl.lit(1, pl.Int32)),
            pl.DataFrame({"day": [1.5, 1.9]}),
            "column 'day' is Float64 but the frame's is Int32",
        ),
    ],
)
def test_public_groups_of_another_type_are_refused_not_converted(frame, groups, match):
    by = groups.columns[0]
    acc = ppdm.BudgetAccountant(1.0)
    with pytest.raises(InvalidParameterError, match=match):
        ppdm.dp_group_by(
            frame, by, dp.count(), epsilon=0.5, public_groups=groups, secret=SECRET, accountant=acc
        )
    assert acc.spent == 0
    # Integers of another width are the same groups.
    if by == "day":
        out = ppdm.dp_group_by(
            frame, "day", dp.count(), epsilon=0.5, public_groups=pl.DataFrame({"day": [1]}), secret=SECRET
        )
        assert out.schema["day"] == pl.Int32


def test_an_unknown_privacy_unit_is_named_as_the_parameter():
    with pytest.raises(
        InvalidParameterError, match="'privacy_unit' parameter of dp_group_by names no column: 'who'"
    ):
        ppdm.dp_group_by(
            one_row_each(30), "region", dp.count(), epsilon=0.5, privacy_unit="who", public_groups=PUBLIC
        )
    with pytest.raises(InvalidParameterError, match="leaving a share for partition selection"):
        ppdm.dp_group_by(one_row_each(30), "region", dp.count(epsilon=0.5), epsilon=0.5, delta=1e-6)


@pytest.mark.parametrize(
    ("by", "aggregates", "clash"),
    [
        # The group column came out holding the count's noise SD instead of the groups.
        ("count_sd", [dp.count()], "count_sd"),
        # The sum came out overwritten by the count's lower interval bound.
        ("region", [dp.count(), dp.sum("spend", bounds=(0, 100), name="count_ci_low")], "count_ci_low"),
        ("region", [dp.count(name="spend_sum_sd"), dp.sum("spend", bounds=(0, 100))], "spend_sum_sd"),
    ],
)
def test_interval_columns_named_like_another_output_are_refused(by, aggregates, clash):
    """Was a silent overwrite: with intervals=True, '<name>_sd', '_ci_low' and '_ci_high'
    replaced a group column or another aggregate of the same name."""
    from polars_ppdm._validation import check_output_names
    from polars_ppdm.dp.group_by import check_group_by

    frame = one_row_each(60).rename({"region": by})
    groups = PUBLIC.rename({"region": by})
    args = {"epsilon": 1.0, "public_groups": groups, "secret": SECRET}
    message = (
        rf"^The aggregates of dp_group_by need distinct output names, other than the group columns and, with "
        rf"intervals=True, each one's <name>_sd, <name>_ci_low and <name>_ci_high\. Got \['{clash}'\] twice; "
        rf"rename the column \(frame\.rename\) or give the aggregate another name=\.$"
    )
    with pytest.raises(InvalidParameterError, match=message):
        ppdm.dp_group_by(frame, by, aggregates, intervals=True, **args)
    # Refused from the schema and the names alone, as a pipeline checks before any charge.
    with pytest.raises(InvalidParameterError, match=message):
        check_group_by(
            frame.schema,
            by,
            aggregates,
            epsilon=1.0,
            privacy_unit=None,
            max_groups_contributed=1,
            max_rows_per_group=1,
            public_groups=groups,
            delta=None,
            intervals=True,
        )
    with pytest.raises(InvalidParameterError, match=message):
        check_output_names("dp_group_by", by=[by], aggregates=[a.name for a in aggregates], intervals=True)
    # Without the intervals there is nothing to clash with.
    out = ppdm.dp_group_by(frame, by, aggregates, **args)
    assert out.columns == [by, *(a.name for a in aggregates)]
    assert out[by].to_list() == REGIONS


@pytest.mark.parametrize("helper", ["__ppdm_rows", "__ppdm_pair_word", "__ppdm_row_word", "__ppdm_keep"])
def test_a_privacy_unit_or_group_column_named_like_a_helper_gives_the_same_bits(helper):
    """Were raw Polars errors (DuplicateError, a join's SchemaError), or worse, a unit
    column overwritten by a helper: rows bounded per pair word instead of per person."""
    frame = one_row_each(400).with_columns(pl.col("person") // 3)  # three rows a person
    args = {"max_groups_contributed": 2, "max_rows_per_group": 1, "intervals": True}
    # The unit's and a group column's names key the noise (bounded per person or per
    # household is another query; the release is named after its groups): noise-free.
    quiet = {"epsilon": 1e9, **args}
    expected = release(frame, 4, **quiet)
    got = release(frame.rename({"person": helper}), 4, privacy_unit=helper, **quiet)
    assert got.equals(expected)
    expected = release(frame, 4, **quiet)
    got = ppdm.dp_group_by(
        frame.rename({"region": helper}),
        helper,
        AGGREGATES,
        privacy_unit="person",
        public_groups=PUBLIC.rename({"region": helper}),
        secret=ppdm.Secret.for_tests(4),
        **quiet,
    )
    assert got.equals(expected.rename({"region": helper}))


@pytest.mark.parametrize("release", ["dp_group_by", "dp_histogram"])
def test_a_null_privacy_unit_is_refused_before_any_charge_and_says_so(release):
    """The message said "an accountant keeps the epsilon charged" while nothing was
    charged (a new user's finding): the unit's words are made before the charge."""
    frame = pl.DataFrame(
        {"person": [1, None, 3] * 50, "region": ["a", "b", "a"] * 50, "spend": [1.0, 2.0, 3.0] * 50}
    )
    acc = ppdm.BudgetAccountant(5.0)
    with pytest.raises(InvalidParameterError, match=r"has null values.*\(nothing was released or charged\)"):
        if release == "dp_group_by":
            ppdm.dp_group_by(
                frame,
                "region",
                dp.count_units(),
                epsilon=1.0,
                privacy_unit="person",
                public_groups=pl.DataFrame({"region": ["a", "b"]}),
                secret=SECRET,
                accountant=acc,
            )
        else:
            ppdm.dp_histogram(
                frame,
                "spend",
                bounds=(0, 4),
                bins=4,
                epsilon=1.0,
                key="person",
                secret=SECRET,
                accountant=acc,
            )
    assert acc.spent == 0
