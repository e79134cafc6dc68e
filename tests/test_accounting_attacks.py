"""Attacks on the accounting: a release that tries to be charged less than it costs.

Parallel composition belongs to the thread that opened the block: a release made by
another thread while the block is open is charged in full (issue 26)."""

from __future__ import annotations

import threading

import pytest

import polars_ppdm as ppdm
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError
from polars_ppdm.ledger import Ledger


def _in_thread(fn):  # type: ignore[no-untyped-def]
    """Run ``fn`` on another thread; return what it returned or raise what it raised."""
    out: dict[str, object] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as error:
            out["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out.get("value")


def _accountants(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "ledger.duckdb"
    Ledger(path).open_dataset("d", epsilon_budget=0.6)
    return [ppdm.BudgetAccountant(0.6), Ledger(path).accountant("d")]


@pytest.mark.parametrize("which", [0, 1], ids=["memory", "ledger"])
def test_another_threads_release_in_an_open_block_is_summed_and_refused(tmp_path, which):
    acc = _accountants(tmp_path)[which]
    with acc.parallel("halves"):
        acc.spend(0.5, "left half")
        # The measured attack: 0.5 charged for 1.0 over a 0.6 budget.
        with pytest.raises(BudgetExceededError, match="released"):
            _in_thread(lambda: acc.spend(0.5, "another thread"))
        _in_thread(lambda: acc.spend(0.1, "small, from another thread"))  # fits: 0.5 + 0.1
        acc.spend(0.4, "right half")  # this thread's block: max()
    assert acc.spent == pytest.approx(0.6)
    compositions = dict(zip(acc.ledger["release"], acc.ledger["composition"], strict=True))
    assert compositions["small, from another thread"] == "sequential"
    assert compositions["left half"] == "parallel: halves"


@pytest.mark.parametrize("which", [0, 1], ids=["memory", "ledger"])
def test_check_from_another_thread_counts_in_full(tmp_path, which):
    acc = _accountants(tmp_path)[which]
    with acc.parallel("halves"):
        acc.spend(0.5, "left half")
        acc.check(0.5, "same thread: max()")
        with pytest.raises(BudgetExceededError):
            _in_thread(lambda: acc.check(0.5, "other thread"))


def test_blocks_of_two_threads_compose_sequentially():
    acc = ppdm.BudgetAccountant(1.0)
    opened, release = threading.Event(), threading.Event()

    def other() -> None:
        with acc.parallel("theirs"):
            acc.spend(0.4, "a")
            acc.spend(0.3, "b")
            opened.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert opened.wait(10)
    with acc.parallel("mine"):
        acc.spend(0.5, "c")
        assert acc.spent == pytest.approx(0.9)  # 0.4 (their block) + 0.5 (mine)
        with pytest.raises(BudgetExceededError):
            acc.spend(0.7, "d")  # would make my block 0.7: 0.4 + 0.7 > 1
        acc.spend(0.6, "e")  # my block 0.6: 0.4 + 0.6 = 1
    release.set()
    thread.join()
    assert acc.spent == pytest.approx(1.0)
    assert acc.ledger.height == 4


def test_blocks_do_not_nest_within_a_thread_and_close_cleanly():
    acc = ppdm.BudgetAccountant(1.0)
    with acc.parallel("outer"):
        acc.spend(0.3, "a")
        with pytest.raises(InvalidParameterError, match="do not nest"), acc.parallel("inner"):
            pass
        acc.spend(0.2, "b")
    assert acc.spent == pytest.approx(0.3)
    acc.spend(0.2, "after")  # the block is closed: sequential again
    assert acc.spent == pytest.approx(0.5)
    with acc.parallel("again"):  # a closed block may be followed by another
        acc.spend(0.1, "c")
    assert acc.spent == pytest.approx(0.6)
    assert list(acc.ledger["composition"]) == [
        "parallel: outer",
        "parallel: outer",
        "sequential",
        "parallel: again",
    ]


def test_a_block_is_closed_even_when_its_body_raises():
    acc = ppdm.BudgetAccountant(1.0)
    with pytest.raises(RuntimeError), acc.parallel("p"):
        acc.spend(0.4, "a")
        raise RuntimeError
    acc.spend(0.6, "b")
    assert acc.spent == pytest.approx(1.0)


def test_ledger_accountant_charges_other_threads_in_full(tmp_path):
    path = tmp_path / "ledger.duckdb"
    Ledger(path).open_dataset("d", epsilon_budget=1.0)
    acc = Ledger(path).accountant("d")
    with acc.parallel("halves"):
        acc.spend(0.5, "left")
        _in_thread(lambda: acc.spend(0.3, "other thread"))
        acc.spend(0.2, "right")  # absorbed by this thread's block
    table = Ledger(path).table("d")
    charged = dict(zip(table["step"], table["charged"], strict=True))
    assert charged == pytest.approx({"left": 0.5, "other thread": 0.3, "right": 0.0})
    assert Ledger(path).spent("d") == pytest.approx(0.8)
