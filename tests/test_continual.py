"""dp_continual_counts: the binary tree mechanism over a horizon, charged once, each node
drawn once, and the attacks a nightly job invites (a re-run over changed data, a late
event, a unit with many events, a restart without the state)."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.dp.continual import TreeState, expected_rmse
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError
from polars_ppdm.kernels import binary_tree as tree

SECRET = ppdm.Secret.for_tests(5)
GROUPS = pl.DataFrame({"region": ["n", "s", "e"]})


def _log(nights: int, seed: int = 0, per_night: int = 40) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = nights * per_night
    return pl.DataFrame(
        {
            "person": rng.integers(0, 10_000, n),
            "region": rng.choice(["n", "s", "e"], n),
            "night": np.repeat(np.arange(nights), per_night),
        }
    )


def _release(log, through, state=None, **kwargs):
    args = {
        "period": "night",
        "horizon": 30,
        "rho": 0.5,
        "public_groups": GROUPS,
        "secret": SECRET,
    } | kwargs
    return ppdm.dp_continual_counts(log, "region", through=through, state=state, **args)


def test_totals_are_the_sums_of_the_periods_and_the_sds_are_the_theorys():
    result = _release(_log(10), through=9)
    table = result.table
    assert table.height == 3 * 10
    for _, group in table.group_by("region"):
        assert group["running_total"].to_numpy() == pytest.approx(np.cumsum(group["count"].to_numpy()))
    sigma = tree.tree_sigma(0.5, 30)
    periods, totals = tree.tree_variance(30, 9, sigma)
    north = table.filter(pl.col("region") == "n")
    assert north["count_sd"].to_numpy() == pytest.approx(np.sqrt(periods))
    assert north["running_total_sd"].to_numpy() == pytest.approx(np.sqrt(totals))
    assert north["running_total_sd"][-1] == pytest.approx(expected_rmse(0.5, 30, 9))


def test_a_rerun_of_a_night_reproduces_it_and_the_next_night_adds_nodes_only():
    log = _log(12)
    first = _release(log, through=10)
    again = _release(log, through=10, state=first.state)
    assert again.table.equals(first.table)
    assert again.state.nodes.equals(first.state.nodes)
    later = _release(log, through=11, state=first.state)
    assert later.state.nodes.head(first.state.nodes.height).equals(first.state.nodes)
    assert later.state.nodes.height > first.state.nodes.height
    # A re-run of an earlier night from the later state publishes what that night did.
    rerun = _release(log, through=10, state=later.state)
    assert rerun.table.equals(first.table)


def test_a_late_run_fills_the_nights_it_missed():
    log = _log(8)
    skipped = _release(log, through=2)
    late = _release(log, through=6, state=skipped.state)  # nights 3..5 were never run
    every_night = _release(log, through=2)
    for night in range(3, 7):
        every_night = _release(log, through=night, state=every_night.state)
    # The same nodes are published by both schedules.
    nodes = tree.complete_nodes(30, 6)
    assert late.state.nodes.height == every_night.state.nodes.height == 3 * len(nodes.level)
    assert (
        late.state.nodes.select("group", "level", "index")
        .sort(pl.all())
        .equals(every_night.state.nodes.select("group", "level", "index").sort(pl.all()))
    )


def test_changed_rows_of_a_published_night_are_refused_never_redrawn():
    """The attack: publish night 5, change night 5's data (add one person), publish again
    with the same secret. Redrawn noise keyed by the node only would show the exact change;
    a published period's rows may not change at all (refused, nothing charged)."""
    log = _log(6)
    first = _release(log, through=5)
    grown = pl.concat([log, pl.DataFrame({"person": [99_999], "region": ["n"], "night": [5]})])
    with pytest.raises(
        InvalidParameterError, match=r"the rows of some periods already published are not the rows"
    ):
        _release(grown, through=5, state=first.state)
    # The same rows in another order are the same period.
    assert _release(log.reverse(), through=5, state=first.state).table.equals(first.table)


def test_a_deleted_event_cannot_let_a_person_count_beyond_the_bound():
    """Found by a new user: 200 people with 5 events on night 0 and 5 on night 1, bound 5.
    Publish night 0; delete night 0's rows; publish night 1. The first-5 rule would then
    count each person's night-1 events too: 10 on one level of the tree, the noise sized
    for 5. Refused: a published period's rows never change."""
    people = np.repeat(np.arange(200), 10)
    log = pl.DataFrame({"person": people, "region": ["n"] * 2000, "night": np.tile([0] * 5 + [1] * 5, 200)})
    args = {"privacy_unit": "person", "max_contributions": 5, "horizon": 8, "rho": 500.0}
    first = _release(log, through=0, **args)
    assert first.table.filter(pl.col("region") == "n")["count"][0] == pytest.approx(1000, abs=1)
    with pytest.raises(InvalidParameterError, match="the rows of some periods already published"):
        _release(log.filter(pl.col("night") == 1), through=1, state=first.state, **args)
    # The log as it was: night 1 adds nothing (each person's first 5 events were on night 0).
    later = _release(log, through=1, state=first.state, **args).table.filter(pl.col("region") == "n")
    assert later["running_total"][-1] == pytest.approx(1000, abs=1)


def test_a_restart_without_the_state_is_a_new_release_charged_again_with_fresh_noise_over_new_data():
    """Restarting without the state is a new release, charged again. Over the same data it
    reproduces the same bits (nothing new comes out); over changed data -- one person
    added -- its noise is drawn afresh: were it keyed by the secret and the node only, the
    difference of two releases would be the exact change."""
    log = _log(10)
    acc = ppdm.BudgetAccountant(rho=2.0)
    one = _release(log, through=9, accountant=acc)
    assert _release(log, through=9, accountant=acc).table.equals(one.table)
    assert acc.spent_rho == pytest.approx(1.0)
    grown = pl.concat([log, pl.DataFrame({"person": [99_999], "region": ["s"], "night": [0]})])
    two = _release(grown, through=9)
    same = (one.state.nodes["value"] == two.state.nodes["value"]).mean()
    assert same < 0.3  # sigma ~2.2: two independent draws agree ~13% of the time
    _release(log, through=9, accountant=acc, state=one.state)
    assert acc.spent_rho == pytest.approx(1.0)  # a continuation is post-processing


def test_a_state_made_by_hand_with_no_node_is_a_start_and_charged():
    """Attack review 58: TreeState(config, no nodes) built from the public release_config
    was taken for a continuation, so the release drew every node and was charged nothing."""
    log = _log(10)
    acc = ppdm.BudgetAccountant(rho=0.75)
    honest = _release(log, through=3, accountant=acc)
    assert acc.spent_rho == pytest.approx(0.5)
    forged = TreeState(honest.state.config, honest.state.nodes.clear())
    with pytest.raises(BudgetExceededError):
        _release(log, through=3, accountant=acc, state=forged)
    fresh = ppdm.BudgetAccountant(rho=0.75)
    assert _release(log, through=3, accountant=fresh, state=forged).table.equals(honest.table)
    assert fresh.spent_rho == pytest.approx(0.5)


def test_a_state_taken_back_to_an_earlier_night_draws_each_node_once():
    # Keyed by the set of nodes drawn in one call, a leaf drawn from one saved state with
    # through = 2, 3, 4, 5 came out 11, 6, 13, 11: copies of one node's noise to average.
    log = _log(10)
    saved = _release(log, through=1).state

    def leaf(through: int) -> list[int]:
        nodes = _release(log, through=through, state=saved).state.nodes
        return nodes.filter((pl.col("level") == 0) & (pl.col("index") == 2)).sort("group")["value"].to_list()

    first = leaf(2)
    assert all(leaf(through) == first for through in (3, 4, 5, 9))
    # And a restart without the state, over the same log, reproduces it too.
    assert (
        leaf(2)
        == _release(log, through=7)
        .state.nodes.filter((pl.col("level") == 0) & (pl.col("index") == 2))
        .sort("group")["value"]
        .to_list()
    )


def test_the_charge_is_a_rho_and_a_pure_accountant_refuses_it():
    with pytest.raises(BudgetExceededError, match="a rho is not an epsilon"):
        _release(_log(2), through=1, accountant=ppdm.BudgetAccountant(5.0))
    small = ppdm.BudgetAccountant(rho=0.4)
    with pytest.raises(BudgetExceededError, match=r"needs rho 0\.5"):
        _release(_log(2), through=1, accountant=small)
    assert small.spent_rho == 0


def test_each_unit_counts_with_its_first_events_only():
    """A unit with many events: only its first max_contributions (in time) are counted,
    so a heavy user cannot move the totals by more than the noise covers."""
    heavy = pl.DataFrame({"person": [1] * 50, "region": ["n"] * 50, "night": np.arange(50) % 10})
    result = _release(heavy, through=9, privacy_unit="person", max_contributions=2, rho=1e3, horizon=10)
    north = result.table.filter(pl.col("region") == "n")
    assert north["running_total"][-1] == pytest.approx(2, abs=0.1)
    assert north["count"].to_numpy()[:1] == pytest.approx([2], abs=0.1)  # both on night 0


def test_date_periods():
    log = pl.DataFrame(
        {"region": ["n", "n", "s"], "day": [dt.date(2026, 1, 1), dt.date(2026, 1, 8), dt.date(2026, 1, 9)]}
    )
    result = ppdm.dp_continual_counts(
        log,
        "region",
        period="day",
        start=dt.date(2026, 1, 1),
        every="week",
        through=1,
        horizon=52,
        rho=1e3,
        public_groups=GROUPS,
        secret=SECRET,
    )
    counts = result.table.filter(pl.col("region") != "e").sort("region", "period")["count"].round(0).to_list()
    assert counts == [1, 1, 0, 1]  # n: week 0, week 1; s: week 0, week 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"through": 30}, "past the release's horizon of 30"),
        ({"rho": 0}, "'rho' parameter of dp_continual_counts"),
        ({"horizon": 0}, "'horizon' parameter"),
        ({"period": "when"}, "'period' parameter of dp_continual_counts names no column"),
        ({"max_contributions": 3}, "needs privacy_unit"),
        ({"public_groups": pl.DataFrame({"region": ["n", "n"]})}, "distinct groups"),
        ({"start": dt.date(2026, 1, 1)}, "'start' parameter .* holds period numbers"),
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs, match):
    args = {"through": 1} | kwargs
    with pytest.raises(InvalidParameterError, match=match):
        _release(_log(2), **args)


@pytest.mark.parametrize(
    ("groups", "match"),
    [
        (["1", "01", "001"], "give the groups in the column's own type"),
        ([1.0, 1.5], "give the groups in the column's own type"),
        ([1, 2**40 + 1], "do not cast to the frame's dtypes"),
        (pl.Series([1, 1], dtype=pl.Int16), "with duplicates"),
    ],
    ids=["spellings", "floats", "too wide", "duplicates after the cast"],
)
def test_one_group_listed_twice_is_refused_whatever_its_spelling(groups, match):
    """Attack review 74: "1", "01" and "001" were three groups until a cast made each the
    integer 1: three figures of one count, each with its own noise under one charge,
    whose mean (3,000 spellings) was the count exactly."""
    log = pl.DataFrame({"night": [0] * 40, "g": pl.Series([1] * 40, dtype=pl.Int32)})
    with pytest.raises(InvalidParameterError, match=match):
        ppdm.dp_continual_counts(
            log,
            "g",
            through=0,
            period="night",
            horizon=4,
            rho=0.5,
            public_groups=pl.DataFrame({"g": groups}),
            secret=SECRET,
        )


def test_a_state_of_another_release_is_refused():
    state = _release(_log(2), through=1).state
    with pytest.raises(InvalidParameterError, match="belongs to another release"):
        _release(_log(2), through=1, state=state, rho=0.25)


def test_nulls_and_rows_before_period_zero_are_refused_uncharged():
    acc = ppdm.BudgetAccountant(rho=1.0)
    with pytest.raises(InvalidParameterError, match="no null values"):
        _release(_log(2).with_columns(pl.lit(None, dtype=pl.Int64).alias("night")), through=1, accountant=acc)
    with pytest.raises(InvalidParameterError, match="before period 0"):
        _release(_log(2).with_columns(pl.col("night") - 1), through=1, accountant=acc)
    assert acc.spent_rho == 0


@pytest.mark.slow
def test_running_total_rmse_over_365_nights_matches_theory():
    """365 nights, 300 public groups of a generated event log: the RMSE of the running
    total at nights 1, 30 and 365 (period 0, 29, 364) against its theoretical value,
    within 5 standard errors (SE of an RMSE from the errors' 4th moment: Var(e^2)/(4 n MSE))."""
    rng = np.random.default_rng(1)
    groups = pl.DataFrame({"g": [f"g{i}" for i in range(300)]})
    n = 365 * 200
    log = pl.DataFrame({"g": rng.choice(groups["g"].to_numpy(), n), "night": rng.integers(0, 365, n)})
    truth = log.group_by("g", "night").len().pivot(on="night", index="g", values="len").fill_null(0)
    result = ppdm.dp_continual_counts(
        log, "g", period="night", through=364, horizon=365, rho=0.5, public_groups=groups, secret=SECRET
    )
    table = result.table.join(groups.with_row_index("gi"), on="g").sort("gi", "period")
    estimate = table["running_total"].to_numpy().reshape(300, 365)
    true_counts = np.zeros((300, 365))
    index = {g: i for i, g in enumerate(groups["g"])}
    for row in log.group_by("g", "night").len().iter_rows():
        true_counts[index[row[0]], row[1]] = row[2]
    errors = estimate - np.cumsum(true_counts, axis=1)
    sd = table["running_total_sd"].to_numpy().reshape(300, 365)[0]
    for night in (0, 29, 364):
        e2 = errors[:, night] ** 2
        mse = e2.mean()
        se = math.sqrt(e2.var() / (4 * len(e2) * mse))
        assert abs(math.sqrt(mse) - sd[night]) <= 5 * se, (night, math.sqrt(mse), sd[night], se)
    del truth


def test_a_release_is_continued_only_under_its_secret():
    state = _release(_log(3), through=1).state
    with pytest.raises(InvalidParameterError, match="needs the secret it started with"):
        ppdm.dp_continual_counts(
            _log(3),
            "region",
            period="night",
            through=2,
            horizon=30,
            rho=0.5,
            public_groups=GROUPS,
            state=state,
        )
    with pytest.raises(InvalidParameterError, match="the rows of some periods already published"):
        _release(_log(3), through=2, state=state, secret=ppdm.Secret.for_tests(6))


def test_a_state_continued_twice_under_one_accountant_is_refused():
    """Attack review 69: one state continued 200 times over logs that differed by one
    uncounted row drew a later node 200 times, charged nothing (their mean: the count).
    An accountant refuses a state older than the latest it returned."""
    log = _log(10)
    acc = ppdm.BudgetAccountant(rho=0.75)
    early = _release(log.filter(pl.col("night") <= 2), through=2, accountant=acc).state
    later = _release(log, through=3, accountant=acc, state=early).state
    assert acc.spent_rho == pytest.approx(0.5)
    late = log.vstack(pl.DataFrame({"person": [1], "region": ["w"], "night": [3]}))  # uncounted: no group w
    with pytest.raises(InvalidParameterError, match="not the latest this accountant returned"):
        _release(late, through=3, accountant=acc, state=early)
    _release(log, through=4, accountant=acc, state=later)  # the latest goes on, free
    assert acc.spent_rho == pytest.approx(0.5)


def test_a_tree_goes_on_free_only_under_the_ledger_that_charged_it(tmp_path):
    """Attack review 69: dataset B continued dataset A's state (charged to A) over its own
    people, and was charged nothing.  An accountant whose ledger does not name the tree
    charges it as a start; the dataset that charged it goes on free in a new session."""
    from polars_ppdm.ledger import Ledger

    path = tmp_path / "ledger.duckdb"
    for name in ("a", "b"):
        Ledger(path).open_dataset(name, rho_budget=1.0)
    log = _log(10)
    state = _release(log, through=1, accountant=Ledger(path).accountant("a")).state
    _release(log, through=3, accountant=Ledger(path).accountant("b"), state=state)
    assert Ledger(path).spent("b") == pytest.approx(0.5)
    _release(log, through=3, accountant=Ledger(path).accountant("a"), state=state)  # a new session of a
    assert Ledger(path).spent("a") == pytest.approx(0.5)


def test_copies_threads_and_a_second_ledger_accountant_share_the_latest_state(tmp_path):
    """Review 70: the latest state was kept per accountant object, checked and updated in
    two steps: a copy, a second accountant of one ledger dataset, or threads racing one
    accountant drew a later node again, free.  A reordered latest state goes on."""
    import copy
    import threading

    from polars_ppdm.ledger import Ledger

    log = _log(10)
    late = log.vstack(pl.DataFrame({"person": [1], "region": ["w"], "night": [3]}))  # uncounted
    acc = ppdm.BudgetAccountant(rho=0.75)
    early = _release(log, through=2, accountant=acc).state
    later = _release(log, through=3, accountant=acc, state=early).state
    with pytest.raises(InvalidParameterError, match="not the latest"):
        _release(late, through=3, accountant=copy.copy(acc), state=early)
    shuffled = TreeState(later.config, later.nodes.reverse(), later.periods.reverse())
    _release(log, through=4, accountant=acc, state=shuffled)
    assert acc.spent_rho == pytest.approx(0.5)

    path = tmp_path / "ledger.duckdb"
    Ledger(path).open_dataset("d", rho_budget=1.0)
    early = _release(log, through=2, accountant=Ledger(path).accountant("d")).state
    _release(log, through=3, accountant=Ledger(path).accountant("d"), state=early)
    with pytest.raises(InvalidParameterError, match="not the latest"):
        _release(late, through=3, accountant=Ledger(path).accountant("d"), state=early)

    racing = ppdm.BudgetAccountant(rho=0.75)
    start = _release(log, through=2, accountant=racing).state
    drawn, refused = [], []

    def go(extra: int) -> None:
        rows = log.vstack(
            pl.DataFrame({"person": list(range(extra)), "region": ["w"] * extra, "night": [3] * extra})
        )
        try:
            drawn.append(_release(rows, through=3, accountant=racing, state=start))
        except InvalidParameterError:
            refused.append(extra)

    threads = [threading.Thread(target=go, args=(extra,)) for extra in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(drawn) + len(refused) == 4 and len(drawn) <= 1


def test_the_source_is_read_once_so_the_guard_sees_the_rows_counted():
    """Attack review 74: the null checks, the published periods' digests and the counts
    were three reads. A source that dropped an already published event after the second
    (a log rewritten while the job ran) passed the guard with the full log and was counted
    without it: the person's later event took the deleted one's place."""
    groups = pl.DataFrame({"g": ["a"]})
    base = pl.DataFrame({"u": list(range(100)), "g": ["a"] * 100, "p": [0] * 50 + [1] * 50})
    early, late = (pl.DataFrame({"u": [999], "g": ["a"], "p": [p]}) for p in (0, 1))
    kw = {"period": "p", "horizon": 8, "rho": 0.5, "public_groups": groups, "privacy_unit": "u"}
    kw |= {"max_contributions": 1, "secret": SECRET}
    night0 = ppdm.dp_continual_counts(pl.concat([base.filter(pl.col("p") == 0), early]), "g", through=0, **kw)
    full, deleted = pl.concat([base, early, late]), pl.concat([base, late])
    with pytest.raises(InvalidParameterError, match="already published are not the rows"):
        ppdm.dp_continual_counts(deleted, "g", through=1, state=night0.state, **kw)
    reads = []

    def source():
        reads.append(1)
        return full if len(reads) == 1 else deleted

    night1 = ppdm.dp_continual_counts(
        pl.defer(source, schema=full.schema), "g", through=1, state=night0.state, **kw
    )
    assert len(reads) == 1
    want = ppdm.dp_continual_counts(full, "g", through=1, state=night0.state, **kw)
    assert night1.table.equals(want.table)
