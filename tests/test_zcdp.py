"""zCDP: the conversions against OpenDP's, and the accountant's zCDP composition."""

from __future__ import annotations

import math
import threading

import pytest

from polars_ppdm.dp.accountant import BudgetAccountant
from polars_ppdm.dp.zcdp import rho_for, rho_of_pure_epsilon, rho_to_epsilon
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError

# (rho, delta, epsilon) from OpenDP 0.16:
#   make_zCDP_to_approxDP(make_gaussian(atom_domain(T=float), absolute_distance(T=float), scale=s))
#   .map(1.0).epsilon(delta), with rho = 1 / (2 s^2) for s in (1, sqrt(200), 3, 0.5).
OPENDP = [
    (0.5, 1e-06, 5.22153444453017),
    (0.5, 1e-09, 6.474070020726487),
    (0.5, 0.001, 3.5365618461689596),
    (0.0025, 1e-06, 0.2975041720781903),
    (0.0025, 1e-09, 0.39416740127408634),
    (0.0025, 0.001, 0.15667386303938524),
    (0.05555555555555556, 1e-06, 1.557656057143436),
    (0.05555555555555556, 1e-09, 1.9891639422061373),
    (0.05555555555555556, 0.001, 0.9618191607135612),
    (2.0, 1e-06, 11.688596249354896),
    (2.0, 1e-09, 14.150147553874598),
    (2.0, 0.001, 8.416064294321279),
]


@pytest.mark.parametrize(("rho", "delta", "epsilon"), OPENDP)
def test_the_conversion_is_opendps_to_1e_9(rho, delta, epsilon):
    assert rho_to_epsilon(rho, delta) == pytest.approx(epsilon, rel=0, abs=1e-9)


@pytest.mark.parametrize(("rho", "delta"), [(r, d) for r, d, _ in OPENDP])
def test_the_conversion_is_tighter_than_bun_steinke_and_never_below_rho(rho, delta):
    epsilon = rho_to_epsilon(rho, delta)
    assert rho < epsilon <= rho + 2 * math.sqrt(rho * math.log(1 / delta))


@pytest.mark.parametrize(("epsilon", "delta"), [(8.0, 1e-6), (1.0, 1e-9), (0.1, 1e-5), (30.0, 1e-3)])
def test_rho_for_is_the_largest_rho_within_the_budget(epsilon, delta):
    rho = rho_for(epsilon, delta)
    assert rho_to_epsilon(rho, delta) <= epsilon
    assert rho_to_epsilon(rho * (1 + 1e-9), delta) > epsilon - 1e-12


def test_the_issues_year_of_nights():
    # Noise SD 14.1 for sensitivity 1: rho 1/(2 * 200) = 0.0025 a night; 365 nights.
    rho = 365 * 0.0025
    assert rho == pytest.approx(0.9125)
    assert 7 < rho_to_epsilon(rho, 1e-6) < 8  # "about epsilon 8 at delta 1e-6"
    # Pure epsilon for the same noise: Laplace of scale 1/0.1 has SD 14.1; a year is 36.5.
    assert rho_of_pure_epsilon(0.1) == pytest.approx(0.005)


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "1", None, True])
def test_bad_rho_and_delta_are_refused_by_name(bad):
    with pytest.raises(InvalidParameterError, match="'rho' parameter of rho_to_epsilon"):
        rho_to_epsilon(bad, 1e-6)
    with pytest.raises(InvalidParameterError, match="'delta' parameter of rho_to_epsilon"):
        rho_to_epsilon(0.5, bad)
    with pytest.raises(InvalidParameterError, match="'delta' parameter of rho_to_epsilon"):
        rho_to_epsilon(0.5, 1.0)


# --- the accountant -------------------------------------------------------------------


def test_a_zcdp_accountant_adds_rho_and_converts_laplace_releases_explicitly():
    acc = BudgetAccountant(rho=0.1)
    assert (acc.accounting, acc.unit) == ("zcdp", "rho")
    acc.spend(None, "gaussian counts", rho=0.02)
    acc.spend(0.2, "laplace counts")  # epsilon 0.2 enters as rho 0.02
    assert acc.spent_rho == pytest.approx(0.04)
    assert acc.remaining_rho == pytest.approx(0.06)
    table = acc.ledger
    assert table["rho"].to_list() == pytest.approx([0.02, 0.02])
    assert table["epsilon"].to_list() == [None, 0.2]
    assert table["composition"].to_list() == ["sequential", "sequential (zCDP: rho = epsilon^2/2)"]
    assert acc.epsilon_spent(1e-6) == pytest.approx(rho_to_epsilon(0.04, 1e-6))


def test_an_epsilon_delta_budget_becomes_the_largest_rho_within_it():
    acc = BudgetAccountant(epsilon=8.0, delta=1e-6, accounting="zcdp")
    assert acc.rho == pytest.approx(rho_for(8.0, 1e-6))
    for night in range(365):
        acc.spend(None, f"night {night}", rho=0.0025)
    assert acc.epsilon_spent() <= 8.0
    # Basic composition of pure epsilon would have run out after 80 nights at epsilon 0.1.
    pure = BudgetAccountant(8.0)
    nights = 0
    with pytest.raises(BudgetExceededError):
        while True:
            pure.spend(0.1, "night")
            nights += 1
    assert nights == 80


def test_mixing_is_refused_never_silent():
    with pytest.raises(BudgetExceededError, match=r"costing rho 0\.01 \(zCDP\).*a rho is not an epsilon"):
        BudgetAccountant(1.0).spend(None, "gaussian", rho=0.01)
    with pytest.raises(BudgetExceededError, match="partition selection"):
        BudgetAccountant(rho=1.0).spend(0.1, "private groups", delta=1e-7)
    with pytest.raises(InvalidParameterError, match="exactly one"):
        BudgetAccountant(rho=1.0).spend(0.1, "both", rho=0.1)
    with pytest.raises(InvalidParameterError, match="exactly one budget"):
        BudgetAccountant(1.0, rho=1.0)
    with pytest.raises(InvalidParameterError, match="accounting='zcdp'"):
        BudgetAccountant(rho=1.0, accounting="pure")
    with pytest.raises(InvalidParameterError, match="for zCDP accounting"):
        _ = BudgetAccountant(1.0).spent_rho


def test_an_over_budget_zcdp_release_is_refused_with_its_rho():
    acc = BudgetAccountant(rho=0.01)
    acc.spend(0.1, "laplace")  # rho 0.005
    with pytest.raises(
        BudgetExceededError, match=r"needs epsilon 0\.11 \(rho 0\.00605 in zCDP\).*0\.005 left of 0\.01 rho"
    ):
        acc.spend(0.11, "too much")
    assert acc.spent_rho == pytest.approx(0.005)


def test_parallel_blocks_cost_their_largest_rho():
    acc = BudgetAccountant(rho=1.0)
    with acc.parallel("regions") as block:
        block.spend(None, "north", rho=0.3)
        block.spend(0.5, "south")  # rho 0.125
    assert acc.spent_rho == pytest.approx(0.3)


def test_threads_never_overspend_a_zcdp_budget():
    acc = BudgetAccountant(rho=1.0)
    refused = []

    def spend():
        for _ in range(50):
            try:
                acc.spend(None, "r", rho=0.013)
            except BudgetExceededError:
                refused.append(1)

    threads = [threading.Thread(target=spend) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert acc.spent_rho <= 1.0 * (1 + 1e-12)
    assert len(acc.ledger) == 76 and len(refused) == 200 - 76


def test_a_ledger_accountant_of_a_zcdp_dataset_spends_rho_across_sessions(tmp_path):
    import polars as pl

    import polars_ppdm as ppdm

    path = tmp_path / "ledger.duckdb"
    ppdm.Ledger(path).open_dataset("visits", rho_budget=0.5)
    acc = ppdm.Ledger(path).accountant("visits")
    assert (acc.accounting, acc.rho) == ("zcdp", 0.5)
    frame = pl.DataFrame({"x": [0.1, 0.5, 0.9]})
    ppdm.dp_histogram(
        frame,
        "x",
        bounds=(0, 1),
        bins=4,
        mechanism="gaussian",
        rho=0.2,
        accountant=acc,
        secret=ppdm.Secret.for_tests(1),
    )
    acc.spend(0.4, "a Laplace release")  # rho 0.08
    later = ppdm.Ledger(path).accountant("visits")
    assert later.spent == pytest.approx(0.28) and later.remaining_rho == pytest.approx(0.22)
    assert later.ledger["rho"].to_list() == pytest.approx([0.2, 0.08])
    assert later.ledger["epsilon"].to_list() == [None, pytest.approx(0.4)]  # a Gaussian release has none
    with pytest.raises(BudgetExceededError, match=r"needs rho 0\.3 .* 0\.22 left of 0\.5 rho"):
        later.spend(None, "too much", rho=0.3)
    with pytest.raises(
        InvalidParameterError, match=r"has a zCDP budget \(rho_budget\), not an epsilon budget"
    ):
        ppdm.Ledger(path).open_dataset("visits", epsilon_budget=1.0)
