"""dp_group_by's issue-29 aggregates: dp.count_units, dp.variance / dp.std, dp.quantile / dp.median.

Tolerances come from the estimators' own spread: 5 standard errors over the secrets, or
the report-noisy-max union bound for a quantile's rank error.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm import dp
from polars_ppdm.dp.accountant import BudgetAccountant
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError

T = ppdm.Secret.for_tests
GROUPS = ["a", "b", "c"]
PUBLIC = pl.DataFrame({"g": GROUPS})
SECRETS = 200


def people(n_units: int = 3000, rows_each: int = 2, seed: int = 0) -> pl.DataFrame:
    """Each unit has ``rows_each`` rows, all in one group: bounding at (1 group,
    rows_each rows) never binds, so the truth is the plain group-by."""
    rng = np.random.default_rng(seed)
    unit = np.repeat(np.arange(n_units), rows_each)
    group = np.array(GROUPS)[unit % 3]
    return pl.DataFrame({"unit": unit, "g": group, "x": rng.normal(40, 12, len(unit)).clip(0, 100)})


def release(frame, secret, aggregates, **kwargs):
    params = {
        "epsilon": 1.0,
        "privacy_unit": "unit",
        "max_groups_contributed": 1,
        "max_rows_per_group": 2,
        "public_groups": PUBLIC,
        "secret": T(secret),
    }
    return ppdm.dp_group_by(frame, "g", aggregates, **{**params, **kwargs})


# ---- count_units ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unit_counts():
    frame = people()
    runs = pl.concat(
        [
            release(frame, s, [dp.count_units()], intervals=True).with_columns(pl.lit(s).alias("s"))
            for s in range(SECRETS)
        ]
    )
    return frame, runs


def test_count_units_is_unbiased_with_its_declared_noise(unit_counts):
    frame, runs = unit_counts
    truth = dict(frame.group_by("g").agg(pl.col("unit").n_unique()).iter_rows())
    declared = runs["units_sd"][0]
    for g, got in runs.group_by("g").agg(pl.col("units").mean()).iter_rows():
        assert abs(got - truth[g]) <= 5 * declared / math.sqrt(SECRETS), (g, got, truth[g])
    # One unit in one group: sensitivity 1, so the geometric scale is 1/epsilon = 1 (sd ~1.39),
    # not max_rows_per_group (2) as a count of rows would need.
    assert declared == pytest.approx(math.sqrt(2 * math.exp(-1)) / (1 - math.exp(-1)))
    sds = runs.group_by("g").agg(pl.col("units").std()).get_column("units").to_numpy()
    assert np.all(np.abs(sds / declared - 1) <= 5 / math.sqrt(2 * (SECRETS - 1)))


def test_count_units_counts_a_unit_once_per_group_it_is_kept_in():
    """A unit with 10 rows in each of 3 groups, bounded to 2 groups: it adds 1 to the unit
    count of exactly 2 groups (the rows count up to max_rows_per_group in each)."""
    frame = pl.DataFrame({"unit": [7] * 30, "g": GROUPS * 10, "x": [1.0] * 30})
    out = release(
        frame, 1, [dp.count(), dp.count_units()], epsilon=1e9, max_groups_contributed=2, max_rows_per_group=4
    )
    assert sorted(out["units"].to_list()) == [0, 1, 1]
    assert sorted(out["count"].to_list()) == [0, 4, 4]


# ---- variance and std -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def spreads():
    frame = people()
    aggs = [dp.count(), dp.variance("x", bounds=(0, 100)), dp.std("x", bounds=(0, 100))]
    runs = pl.concat(
        [
            release(frame, s, aggs, epsilon=3.0, intervals=True).with_columns(pl.lit(s).alias("s"))
            for s in range(SECRETS)
        ]
    )
    return frame, runs


def test_variance_and_std_are_close_to_the_truth_and_their_intervals_cover_it(spreads):
    frame, runs = spreads
    truth = {g: v for g, v in frame.group_by("g").agg(pl.col("x").var(ddof=0)).iter_rows()}
    for g in GROUPS:
        mine = runs.filter(pl.col("g") == g)
        var, sd = mine["x_var"].to_numpy(), mine["x_var_sd"].to_numpy()
        # The ratio estimator's bias is O(sd_count^2 / n^2): nothing at n ~ 2,000.
        assert abs(var.mean() - truth[g]) <= 5 * var.std() / math.sqrt(len(var)), (g, var.mean(), truth[g])
        # The delta-method sd is the spread over secrets (5 standard errors of an sd).
        assert abs(var.std() / sd.mean() - 1) <= 5 / math.sqrt(2 * (len(var) - 1))
        covered = ((mine["x_var_ci_low"] <= truth[g]) & (truth[g] <= mine["x_var_ci_high"])).mean()
        assert abs(covered - 0.95) <= 5 * math.sqrt(0.95 * 0.05 / len(var)), covered
        std_covered = (
            (mine["x_std_ci_low"] <= math.sqrt(truth[g])) & (math.sqrt(truth[g]) <= mine["x_std_ci_high"])
        ).mean()
        assert abs(std_covered - 0.95) <= 5 * math.sqrt(0.95 * 0.05 / len(var)), std_covered


def test_variance_of_a_constant_group_is_near_zero_and_never_negative():
    frame = pl.DataFrame({"unit": np.arange(3000), "g": ["a"] * 3000, "x": [42.0] * 3000})
    out = release(frame, 3, [dp.variance("x", bounds=(0, 100)), dp.std("x", bounds=(0, 100))], epsilon=1e6)
    row = out.filter(pl.col("g") == "a")
    assert 0 <= row["x_var"][0] < 1e-3 and 0 <= row["x_std"][0] < 0.05
    empty = out.filter(pl.col("g") == "b")  # no rows: clamped into [0, 50^2]
    assert 0 <= empty["x_var"][0] <= 2500 and 0 <= empty["x_std"][0] <= 50  # (each its own noise)


def test_the_variance_support_is_the_same_whatever_the_data():
    """Mironov's question for a variance: it is computed from three integer-valued noisy
    figures (sum, sum of squares, count) whose noise has every integer in its support, so
    any output one table gives another gives too; what the grid allows is checked by
    recomputing each release from its integers."""
    a = dp.variance("x", bounds=(0, 100))
    grid, k, middle = a.grid("t"), a.square_shift("t"), a.square_middle("t")
    assert grid == 2.0**-18 and k >= 1 and middle > 0  # (0, 100): row bound 50 -> grid 2^(6 - 24)


# ---- quantiles --------------------------------------------------------------------------------


def rank_error_bound(
    n: int, q: Fraction, epsilon: float, candidates: int, spacing_rows: float, beta: float
) -> float:
    """With probability >= 1 - beta, report noisy max picks a candidate whose score is
    within 2 t of the best, t = scale ln(candidates / beta) (a union bound on the geometric
    tails P(|N| > t) <= exp(-t / scale)); a score s is a rank error of at most s / den + 1,
    and the best candidate's rank error is at most the rows between two candidates."""
    num, den = q.numerator, q.denominator
    scale = 2 * 2 * max(num, den - num) / epsilon  # max_rows 2, max_groups 1
    t = scale * math.log(candidates / beta)
    return 2 * t / den + 1 + spacing_rows


@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_quantile_rank_error_stays_within_the_report_noisy_max_bound(q):
    frame = people()
    candidates = 201
    out = pl.concat(
        [release(frame, s, dp.quantile("x", q, bounds=(0, 100), candidates=candidates)) for s in range(60)]
    )
    name = f"x_q{q:g}"
    beta = 1e-3
    for g in GROUPS:
        values = np.sort(frame.filter(pl.col("g") == g)["x"].to_numpy())
        n = len(values)
        released = out.filter(pl.col("g") == g)[name].to_numpy()
        ranks = np.searchsorted(values, released, side="left")
        # Rows between two neighbouring candidates near the quantile (the grid's resolution).
        true_q = np.quantile(values, q)
        spacing = 100 / (candidates - 1)
        spacing_rows = np.sum(np.abs(values - true_q) <= spacing)
        bound = rank_error_bound(
            n, Fraction(q).limit_denominator(10_000), 1.0, candidates, spacing_rows, beta
        )
        errors = np.abs(ranks - q * n)
        assert (errors > bound).sum() <= 2, (g, errors.max(), bound)
        assert np.median(errors) < bound / 2


def test_quantile_outputs_are_candidates_and_an_empty_group_gets_one_too():
    frame = people(300)
    grid = [0.0, 12.5, 25.0, 40.0, 41.0, 60.0, 99.0]
    out = release(
        frame,
        4,
        dp.quantile("x", [0.25, 0.5], bounds=(0, 100), candidates=grid),
        public_groups=pl.DataFrame({"g": [*GROUPS, "empty"]}),
    )
    for name in ("x_q0.25", "x_q0.5"):
        assert set(out[name].to_list()) <= set(grid)
    assert out.columns == ["g", "x_q0.25", "x_q0.5"]


def test_several_q_share_the_epsilon_and_each_has_its_own_noise():
    acc = BudgetAccountant(1.0)
    frame = people(600)
    aggs = dp.quantile("x", [0.25, 0.5, 0.75], bounds=(0, 100), epsilon=0.6)
    assert [a.epsilon for a in aggs] == pytest.approx([0.2, 0.2, 0.2])
    release(frame, 5, [dp.count(), *aggs], accountant=acc)
    assert acc.spent == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        release(frame, 5, aggs, accountant=acc, epsilon=0.6)


def test_a_value_moved_within_its_candidate_interval_redraws_the_noise():
    """The same secret over changed data draws fresh noise even when no score changed
    (the release key covers every value a quantile ranks): at epsilon 0.05 the choice is
    nearly uniform, so fresh noise moves most groups' quantile; noise keyed by the
    scores alone would move none."""
    rng = np.random.default_rng(9)
    n_groups = 200
    frame = pl.DataFrame(
        {
            "unit": np.arange(n_groups * 5),
            "g": np.repeat(np.arange(n_groups), 5),
            "x": rng.uniform(1, 99, n_groups * 5),
        }
    )
    moved = frame.with_columns(
        pl.col("x") + 1e-9
    )  # every value stays between the same candidates (spacing 1)
    public = pl.DataFrame({"g": np.arange(n_groups)})

    def median(table):
        return ppdm.dp_group_by(
            table,
            "g",
            dp.median("x", bounds=(0, 100), candidates=101),
            epsilon=0.05,
            privacy_unit="unit",
            public_groups=public,
            secret=T(6),
        )["x_median"].to_numpy()

    first = median(frame)
    assert np.array_equal(first, median(frame))  # the identical release: the same bits
    assert (median(moved) != first).mean() > 0.8


def test_quantile_bits_are_the_same_eager_lazy_streaming_and_for_shuffled_rows():
    frame = people(900)
    aggs = [dp.count_units(), dp.median("x", bounds=(0, 100)), dp.std("x", bounds=(0, 100))]
    kwargs = {"epsilon": 1.0, "privacy_unit": "unit", "max_rows_per_group": 1, "delta": 1e-6, "secret": T(8)}
    eager = ppdm.dp_group_by(frame, "g", aggs, **kwargs)
    assert ppdm.dp_group_by(frame.lazy(), "g", aggs, **kwargs).collect().equals(eager)
    assert ppdm.dp_group_by(frame.lazy(), "g", aggs, **kwargs).collect(engine="streaming").equals(eager)
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=2)
    assert ppdm.dp_group_by(shuffled, "g", aggs, **kwargs).equals(eager)


def test_a_units_kept_rows_do_not_depend_on_row_order_when_only_a_quantile_reads_them():
    """Bounding to one row per unit keeps the row of smallest keyed word of (unit, values):
    the quantile's column is among the values, so two rows that differ only there are
    told apart by the key, never by their order."""
    frame = pl.DataFrame({"unit": [1, 1] * 400, "g": ["a"] * 800, "x": [10.0, 90.0] * 400}).with_columns(
        pl.col("unit") + pl.int_range(pl.len()) // 2
    )
    kwargs = {
        "epsilon": 1e6,
        "privacy_unit": "unit",
        "max_rows_per_group": 1,
        "public_groups": pl.DataFrame({"g": ["a"]}),
        "secret": T(2),
    }
    one = ppdm.dp_group_by(frame, "g", dp.median("x", bounds=(0, 100), candidates=101), **kwargs)
    flipped = frame.reverse()
    assert ppdm.dp_group_by(flipped, "g", dp.median("x", bounds=(0, 100), candidates=101), **kwargs).equals(
        one
    )


def test_a_quantile_under_zcdp_buys_the_epsilon_of_its_rho():
    frame = people(600)
    acc = BudgetAccountant(rho=0.5)
    out = ppdm.dp_group_by(
        frame,
        "g",
        [dp.count(), dp.median("x", bounds=(0, 100))],
        mechanism="gaussian",
        rho=0.5,
        privacy_unit="unit",
        max_rows_per_group=2,
        public_groups=PUBLIC,
        secret=T(1),
        accountant=acc,
    )
    assert acc.spent_rho == pytest.approx(0.5) and out.height == 3


# ---- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (
            lambda: dp.quantile("x", 1.5, bounds=(0, 1)),
            r"'q' parameter of dp.quantile\('x'\) must be a number in \[0, 1\]. Got 1.5",
        ),
        (lambda: dp.quantile("x", float("nan"), bounds=(0, 1)), r"'q' parameter .* Got nan"),
        (lambda: dp.quantile("x", [], bounds=(0, 1)), r"non-empty list"),
        (lambda: dp.quantile("x", [0.5, 0.5], bounds=(0, 1)), r"repeats a quantile"),
        (lambda: dp.quantile("x", [0.1, 0.5], bounds=(0, 1), name="p"), r"names one quantile"),
        (lambda: dp.quantile("x", 0.5), r"'bounds' parameter of dp.quantile\('x'\) is missing"),
        (lambda: dp.quantile("x", 0.5, bounds=(0, 1), candidates=[0.5, 0.2]), r"strictly increasing"),
        (
            lambda: dp.quantile("x", 0.5, bounds=(0, 1), candidates=[0.5, 2.0]),
            r"within the bounds \(0.0, 1.0\)",
        ),
        (lambda: dp.quantile("x", 0.5, bounds=(0, 1), candidates=[0.1, float("inf")]), r"finite numbers"),
        (lambda: dp.quantile("x", 0.5, bounds=(0, 1), candidates=1), r"between 2 and 100,000 points. Got 1"),
        (lambda: dp.quantile("x", 0.5, bounds=(0, 1), candidates=10**6), r"Got 1000000"),
        (
            lambda: dp.quantile("x", 0.5, bounds=(0, 1), candidates="many"),
            r"a number of points or a sequence",
        ),
        (lambda: dp.variance("x", bounds=(5, 5)), r"low < high"),
        (lambda: dp.std("x"), r"'bounds' parameter of dp.std\('x'\) is missing"),
        (lambda: dp.count_units(name=""), r"'name' parameter of dp.count_units"),
    ],
)
def test_bad_aggregates(make, match):
    with pytest.raises(InvalidParameterError, match=match):
        make()


def test_a_string_column_is_refused_for_a_quantile_and_a_variance():
    frame = pl.DataFrame({"unit": [1], "g": ["a"], "s": ["x"]})
    for aggregate in (dp.median("s", bounds=(0, 1)), dp.variance("s", bounds=(0, 1))):
        with pytest.raises(InvalidParameterError, match=r"needs a numeric column. Got dtype String"):
            ppdm.dp_group_by(
                frame, "g", aggregate, epsilon=1.0, public_groups=pl.DataFrame({"g": ["a"]}), secret=T(1)
            )


def test_q_is_used_exactly_or_refused():
    """q is the fraction it is (at most six decimals, or 1/3 and the like), never snapped:
    0.999999 stays below 1 (a new user saw it become the maximum when q was rounded to
    a denominator of 10,000), 0.1234567 is refused, not moved."""
    assert dp.quantile("x", 0.9, bounds=(0, 1)).q == Fraction(9, 10)
    assert dp.quantile("x", 1 / 3, bounds=(0, 1)).q == Fraction(1, 3)
    assert dp.quantile("x", 0.999999, bounds=(0, 1)).q == Fraction(999999, 1000000)
    assert dp.median("x", bounds=(0, 1)).label == "quantile(x,1/2)"
    with pytest.raises(InvalidParameterError, match=r"at most six decimals.* Got 0.1234567, which is not one"):
        dp.quantile("x", 0.1234567, bounds=(0, 1))
    with pytest.raises(InvalidParameterError, match=r"repeats a quantile: \[0.5, 0.5\]"):
        dp.quantile("x", [0.5, 0.5], bounds=(0, 1))


def test_median_errors_say_median_and_candidates_may_be_a_series():
    with pytest.raises(InvalidParameterError, match=r"'bounds' parameter of dp.median\('x'\)"):
        dp.median("x", bounds=(1, 0))
    with pytest.raises(InvalidParameterError, match=r"candidates' parameter of dp.median\('x'\) .* Got 2 after 3"):
        dp.median("x", bounds=(0, 5), candidates=[1, 3, 2])
    assert dp.median("x", bounds=(0, 5), candidates=pl.Series([1.0, 2.0])).candidates == (1.0, 2.0)


def test_under_zcdp_a_units_groups_compose_in_rho():
    """A unit in g groups: each group's choice is sqrt(2 rho / g)-DP (g choices of
    epsilon^2/2 each add up to rho); pure accounting would give sqrt(2 rho) / g."""
    from polars_ppdm.dp.group_by import noise_request

    median = dp.median("x", bounds=(0, 1))
    zcdp = noise_request(
        [median],
        epsilon=None,
        max_groups_contributed=4,
        max_rows_per_group=3,
        delta=None,
        mechanism="gaussian",
        rho=0.5,
    )
    pure = noise_request([median], epsilon=1.0, max_groups_contributed=4, max_rows_per_group=3, delta=None)
    assert zcdp.quantile_epsilon(median) == pytest.approx(math.sqrt(2 * 0.5 / 4))
    assert pure.quantile_epsilon(median) == pytest.approx(1.0 / 4)
    assert zcdp.quantile_scale(median) == pytest.approx(
        2 * 3 * 1 / math.sqrt(2 * 0.5 / 4)
    )  # q = 1/2: max(1, 1) = 1
