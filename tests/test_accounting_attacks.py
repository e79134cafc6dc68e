"""Attacks on the accounting: a release that tries to be charged less than it costs.

Parallel composition belongs to the block: only a release given the block
(``accountant=block``) joins it; anything spent on the accountant itself while a block is
open -- from another thread (issue 26), or from the block's own thread when a thread
pool's next task or another coroutine runs there (review 52) -- is charged in full."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import polars as pl
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
    with acc.parallel("halves") as block:
        block.spend(0.5, "left half")
        # The measured attack: 0.5 charged for 1.0 over a 0.6 budget.
        with pytest.raises(BudgetExceededError, match="released"):
            _in_thread(lambda: acc.spend(0.5, "another thread"))
        _in_thread(lambda: acc.spend(0.1, "small, from another thread"))  # fits: 0.5 + 0.1
        block.spend(0.4, "right half")  # in the block: max()
    assert acc.spent == pytest.approx(0.6)
    compositions = dict(zip(acc.ledger["release"], acc.ledger["composition"], strict=True))
    assert compositions["small, from another thread"] == "sequential"
    assert compositions["left half"] == "parallel: halves"


@pytest.mark.parametrize("which", [0, 1], ids=["memory", "ledger"])
def test_the_accountant_itself_counts_in_full_while_a_block_is_open(tmp_path, which):
    acc = _accountants(tmp_path)[which]
    with acc.parallel("halves") as block:
        block.spend(0.5, "left half")
        block.check(0.5, "in the block: max()")
        with pytest.raises(BudgetExceededError):
            acc.check(0.5, "the accountant itself, same thread")
        with pytest.raises(BudgetExceededError):
            _in_thread(lambda: acc.check(0.5, "other thread"))
        with pytest.raises(BudgetExceededError):
            _in_thread(lambda: block.check(0.7, "the block, from another thread: still the block, 0.7 > 0.6"))
        _in_thread(lambda: block.spend(0.55, "the block, from another thread"))
    assert acc.spent == pytest.approx(0.55)


def test_blocks_of_two_threads_compose_sequentially():
    acc = ppdm.BudgetAccountant(1.0)
    opened, release = threading.Event(), threading.Event()

    def other() -> None:
        with acc.parallel("theirs") as theirs:
            theirs.spend(0.4, "a")
            theirs.spend(0.3, "b")
            opened.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert opened.wait(10)
    with acc.parallel("mine") as mine:
        mine.spend(0.5, "c")
        assert acc.spent == pytest.approx(0.9)  # 0.4 (their block) + 0.5 (mine)
        with pytest.raises(BudgetExceededError):
            mine.spend(0.7, "d")  # would make my block 0.7: 0.4 + 0.7 > 1
        mine.spend(0.6, "e")  # my block 0.6: 0.4 + 0.6 = 1
    release.set()
    thread.join()
    assert acc.spent == pytest.approx(1.0)
    assert acc.ledger.height == 4


def test_nested_blocks_add_up_and_close_cleanly():
    acc = ppdm.BudgetAccountant(1.0)
    with acc.parallel("outer") as outer:
        outer.spend(0.3, "a")
        with acc.parallel("inner") as inner:
            inner.spend(0.2, "b")
            inner.spend(0.1, "c")
            assert acc.spent == pytest.approx(0.5)  # each block its largest, summed
        outer.spend(0.2, "d")
    assert acc.spent == pytest.approx(0.5)
    acc.spend(0.2, "after")
    outer.spend(0.1, "the outer block after it closed: in sequence")
    assert acc.spent == pytest.approx(0.8)
    assert list(acc.ledger["composition"]) == [
        "parallel: inner",
        "parallel: inner",
        "parallel: outer",
        "parallel: outer",
        "sequential",
        "sequential",
    ]
    assert not outer.open and "closed" in repr(outer)
    with pytest.raises(InvalidParameterError, match="label"), acc.parallel(""):
        pass


def test_a_block_is_closed_even_when_its_body_raises():
    acc = ppdm.BudgetAccountant(1.0)
    with pytest.raises(RuntimeError), acc.parallel("p") as block:
        block.spend(0.4, "a")
        raise RuntimeError
    acc.spend(0.6, "b")
    assert acc.spent == pytest.approx(1.0)


def test_ledger_accountant_charges_other_threads_in_full(tmp_path):
    path = tmp_path / "ledger.duckdb"
    Ledger(path).open_dataset("d", epsilon_budget=1.0)
    acc = Ledger(path).accountant("d")
    with acc.parallel("halves") as block:
        block.spend(0.5, "left")
        _in_thread(lambda: acc.spend(0.3, "other thread"))
        block.spend(0.2, "right")  # absorbed by the block
    table = Ledger(path).table("d")
    charged = dict(zip(table["step"], table["charged"], strict=True))
    assert charged == pytest.approx({"left": 0.5, "other thread": 0.3, "right": 0.0})
    assert Ledger(path).spent("d") == pytest.approx(0.8)


# ---- review 52: code that runs on the block's thread is not in the block ------------------


def _histogram(accountant):  # type: ignore[no-untyped-def]
    frame = pl.DataFrame({"x": [1.0, 2.0, 3.0]})
    return ppdm.dp_histogram(
        frame, "x", bounds=(0, 4), bins=4, epsilon=0.5, secret=None, accountant=accountant
    )


@pytest.mark.parametrize("which", [0, 1], ids=["memory", "ledger"])
def test_a_thread_pools_next_task_is_not_charged_to_a_suspended_block(tmp_path, which):
    """A generator opens a block on a pool's only worker and is left suspended; four
    unrelated releases then run on that worker. By thread they joined the block: 2.0
    released, 0.5 charged over a budget of 1.0."""
    acc = _accountants(tmp_path)[which]

    def regions():  # type: ignore[no-untyped-def]
        with acc.parallel("regions") as block:
            block.spend(0.5, "north")
            yield

    with ThreadPoolExecutor(1) as pool:
        suspended = regions()
        pool.submit(next, suspended).result()
        outcomes = []
        for _ in range(4):
            try:
                pool.submit(_histogram, acc).result()
                outcomes.append("released")
            except BudgetExceededError:
                outcomes.append("refused")
        suspended.close()
    assert outcomes.count("released") == 0  # 0.5 (the block) + 0.5 > 0.6
    assert acc.spent == pytest.approx(0.5)


def test_a_coroutine_on_the_same_thread_is_not_charged_to_another_s_block():
    acc = ppdm.BudgetAccountant(1.0)

    async def regions(opened: asyncio.Event, done: asyncio.Event) -> None:
        with acc.parallel("regions") as block:
            block.spend(0.5, "north")
            opened.set()
            await done.wait()

    async def other(opened: asyncio.Event, done: asyncio.Event) -> list[str]:
        await opened.wait()
        outcomes = []
        for _ in range(4):
            try:
                _histogram(acc)
                outcomes.append("released")
            except BudgetExceededError:
                outcomes.append("refused")
        done.set()
        return outcomes

    async def main() -> list[str]:
        opened, done = asyncio.Event(), asyncio.Event()
        _, outcomes = await asyncio.gather(regions(opened, done), other(opened, done))
        return outcomes

    assert asyncio.run(main()) == ["released", "refused", "refused", "refused"]
    assert acc.spent == pytest.approx(1.0)


def test_a_new_thread_given_a_finished_one_s_id_is_not_in_its_block():
    acc = ppdm.BudgetAccountant(1.0)
    holder = {}

    def opener() -> None:
        block = acc.parallel("left open")
        holder["block"] = block
        block.__enter__().spend(0.5, "north")  # a block its thread never closed

    first = threading.Thread(target=opener)
    first.start()
    first.join()
    for _ in range(4):  # new threads, some of them given the finished thread's id
        with contextlib.suppress(BudgetExceededError):
            _in_thread(lambda: _histogram(acc))
    assert acc.spent <= 1.0 + 1e-12
    assert acc.spent == pytest.approx(1.0)  # 0.5 open block + one sequential 0.5


def test_a_lazy_release_given_a_block_is_charged_in_full_after_the_block_closed():
    acc = ppdm.BudgetAccountant(1.0)
    lazy = pl.LazyFrame({"x": [1.0, 2.0, 3.0]})
    with acc.parallel("regions") as block:
        query = ppdm.dp_histogram(
            lazy, "x", bounds=(0, 4), bins=4, epsilon=0.4, secret=None, accountant=block
        )
        block.spend(0.4, "other region")
    query.collect()  # evaluated now, after the block: in sequence
    assert acc.spent == pytest.approx(0.8)


def test_a_block_cannot_be_made_over_another_accountant_s_group():
    first, second = ppdm.BudgetAccountant(1.0), ppdm.BudgetAccountant(1.0)
    with first.parallel("theirs") as theirs:
        with pytest.raises(InvalidParameterError, match=r"made by BudgetAccountant\.parallel"):
            ppdm.ParallelBlock(second, theirs._group)
        theirs.spend(0.5, "a")
    assert first.spent == pytest.approx(0.5) and second.spent == 0.0


# ---- review 58: one budget, one privacy unit ---------------------------------------------


def _visits_histogram(accountant, key):  # type: ignore[no-untyped-def]
    visits = pl.DataFrame(
        {"person": [0, 0, 0, 1, 2], "visit": [1, 2, 3, 4, 5], "x": [1.0, 1.5, 2.0, 3.0, 0.5]}
    )
    return ppdm.dp_histogram(
        visits, "x", bounds=(0, 4), bins=4, epsilon=0.5, key=key, secret=None, accountant=accountant
    )


def test_an_accountant_of_one_privacy_unit_refuses_releases_per_another(tmp_path):
    """The attack of review 58 through the Python API: a dataset spent per person by a
    pipeline, then per visit through its ledger's accountant. Refused before anything
    is charged or released; the same unit is charged as before."""
    path = tmp_path / "ledger.duckdb"
    Ledger(path).open_dataset("visits", 2.0)
    Ledger(path).reserve("visits", "a pipeline's run", [("rr_disguise", 0.5)], privacy_unit="person")
    memory = ppdm.BudgetAccountant(2.0, privacy_unit="person")
    for acc in (Ledger(path).accountant("visits"), memory):
        before = acc.spent
        for key in ("visit", None):
            with pytest.raises(
                InvalidParameterError,
                match="but the budget is counted per privacy unit column 'person'",
            ):
                _visits_histogram(acc, key)
            with acc.parallel("regions") as block, pytest.raises(InvalidParameterError):
                _visits_histogram(block, key)
        assert acc.spent == before
        _visits_histogram(acc, "person")
        assert acc.spent == pytest.approx(before + 0.5)
    # Not told its unit, an accountant takes the first charged release's; refused or
    # over-budget releases set nothing.
    free = ppdm.BudgetAccountant(0.75)
    with pytest.raises(BudgetExceededError):
        ppdm.dp_histogram(
            pl.DataFrame({"x": [1.0]}), "x", bounds=(0, 4), bins=4, epsilon=1.0, secret=None, accountant=free
        )
    assert free.privacy_unit is None
    _visits_histogram(free, "visit")
    assert free.privacy_unit == "column 'visit'"
    with pytest.raises(InvalidParameterError, match="bounds contributions per row \\(no privacy unit\\)"):
        _visits_histogram(free, None)
    assert free.spent == pytest.approx(0.5)
    with pytest.raises(InvalidParameterError, match="'privacy_unit' parameter of BudgetAccountant"):
        ppdm.BudgetAccountant(1.0, privacy_unit=3)


def test_a_ledger_accountant_records_the_unit_of_a_dataset_that_had_none(tmp_path):
    """Spent per visit from Python first, then a pipeline per person: the first release
    records the unit, and the pipeline's other unit is refused."""
    path = tmp_path / "ledger.duckdb"
    Ledger(path).open_dataset("visits", 2.0)
    acc = Ledger(path).accountant("visits")
    _visits_histogram(acc, "visit")
    assert Ledger(path).status("visits").privacy_unit == "column 'visit'"
    with pytest.raises(InvalidParameterError, match="counts its budget per privacy unit column 'visit'"):
        Ledger(path).open_dataset("visits", 2.0, privacy_unit="person")
    with pytest.raises(InvalidParameterError, match="per privacy unit column 'visit'"):
        _visits_histogram(Ledger(path).accountant("visits"), "person")
    # A release refused for its budget records no unit.
    Ledger(path).open_dataset("other", 0.25)
    with pytest.raises(BudgetExceededError):
        _visits_histogram(Ledger(path).accountant("other"), None)
    assert Ledger(path).status("other").privacy_unit is None


def test_a_ledger_accountant_reads_the_unit_the_ledger_holds_now(tmp_path):
    """Two sessions' accountants over one dataset: the unit one session's first release
    records is the other's unit too (read from the ledger, not kept from its opening)."""
    path = tmp_path / "ledger.duckdb"
    Ledger(path).open_dataset("visits", 2.0)
    early = Ledger(path).accountant("visits")
    assert early.privacy_unit is None
    _visits_histogram(Ledger(path).accountant("visits"), "visit")
    assert early.privacy_unit == "column 'visit'"
    with pytest.raises(InvalidParameterError, match="per privacy unit column 'visit'"):
        _visits_histogram(early, "person")
