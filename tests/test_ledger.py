"""The persistent privacy-budget ledger (issue 15): all-or-nothing reservations, idempotent
run ids, budgets that do not change by accident, persistence across sessions, and real
processes racing for one budget, killed while they hold it, or holding the file too long."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError, LedgerBusyError, PPDMError
from polars_ppdm.ledger import SCHEMA_VERSION, Ledger, Reservation, format_ledger

SHA = "0f" * 32


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.duckdb"


@contextlib.contextmanager
def _start(code: str, *args: object, stdin: bool = False) -> Iterator[subprocess.Popen[str]]:
    """A child Python running ``code``; killed on the way out whatever happened."""
    with subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            yield proc
        finally:
            proc.kill()


def _expect(proc: subprocess.Popen[str], line: str) -> None:
    got = proc.stdout.readline().strip() if proc.stdout else ""
    if got != line:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"child said {got!r}, expected {line!r}; stderr: {err[-2000:]}")


def _consistent(path: Path) -> None:
    """The invariants a ledger keeps whatever happened to the processes that wrote it."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        runs = con.execute("SELECT run_id, dataset, epsilon FROM ppdm_runs").fetchall()
        charged = dict(
            con.execute("SELECT run_id, sum(charged) FROM ppdm_releases GROUP BY run_id").fetchall()
        )
        orphans = con.execute(
            "SELECT count(*) FROM ppdm_releases WHERE run_id NOT IN (SELECT run_id FROM ppdm_runs)"
        ).fetchone()
        budgets = dict(con.execute("SELECT dataset, epsilon_budget FROM ppdm_datasets").fetchall())
    finally:
        con.close()
    assert orphans == (0,)
    for run_id, dataset, epsilon in runs:
        assert math.isclose(charged.get(run_id, 0.0), epsilon, abs_tol=1e-12), run_id
        assert dataset in budgets
    for dataset, budget in budgets.items():
        assert math.fsum(eps for _, d, eps in runs if d == dataset) <= budget * (1 + 1e-12)


# --- one process ---------------------------------------------------------------------------


def test_a_reservation_is_all_or_nothing(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    got = ledger.reserve("visits", "run-a", [("histogram", 0.25), ("kmeans", 0.5)], pipeline="nightly.toml")
    assert got == Reservation("run-a", 0.75, True)
    assert (
        ledger.spent("visits") == 0.75 and ledger.remaining("visits") == 0.25 and ledger.budget("visits") == 1
    )
    before = ledger.table()
    with pytest.raises(BudgetExceededError) as refused:
        ledger.reserve("visits", "run-b", [("small", 0.2), ("big", 0.1)])
    message = str(refused.value)
    for part in (
        "'visits'",
        "needs epsilon 0.3",
        "0.25 left of 1",
        "spent 0.75",
        "nothing was spent",
        str(path),
    ):
        assert part in message, (part, message)
    assert ledger.table().equals(before) and ledger.run_spent("run-b") is None
    table = ledger.table("visits")
    assert table.columns[:8] == [
        "dataset", "run_id", "step", "epsilon", "composition", "status", "time", "manifest_sha256",
    ]  # fmt: skip
    assert table.select("step", "epsilon", "composition", "status").rows() == [
        ("histogram", 0.25, "sequential", "reserved"),
        ("kmeans", 0.5, "sequential", "reserved"),
    ]
    assert table.get_column("time").dtype == pl.Datetime("us", "UTC")
    age = time.time() - table.get_column("time")[0].timestamp()
    assert 0 <= age < 60


def test_exact_fit_of_float_shares_is_not_refused(path):
    ledger = Ledger(path)
    ledger.open_dataset("d", epsilon_budget=0.3)
    ledger.reserve("d", "r1", [("a", 0.1)])
    ledger.reserve("d", "r2", [("b", 0.2)])  # 0.1 + 0.2 > 0.3 in floats
    assert ledger.remaining("d") < 1e-12


def test_reserving_a_recorded_run_again_spends_nothing(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    ledger.reserve("visits", "run-a", [("histogram", 0.6)])
    ledger.complete("run-a", manifest_sha256=SHA)
    before = ledger.table()
    # The budget has no room for 0.6 more, but the identical run costs nothing.
    again = ledger.reserve("visits", "run-a", [("histogram", 0.6)])
    assert again == Reservation("run-a", 0.6, False)
    assert ledger.run_spent("run-a") == 0.6 and ledger.spent("visits") == 0.6
    ledger.complete("run-a", manifest_sha256="ee" * 32)  # the re-run's manifest: ledger unchanged
    assert ledger.table().equals(before)
    ledger.open_dataset("other", epsilon_budget=1.0)
    with pytest.raises(InvalidParameterError, match=r"recorded .* for dataset 'visits', not 'other'"):
        ledger.reserve("other", "run-a", [("histogram", 0.6)])


def test_a_budget_changes_only_on_purpose(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    ledger.open_dataset("visits", epsilon_budget=1.0)  # the same budget: fine
    with pytest.raises(InvalidParameterError) as changed:
        ledger.open_dataset("visits", epsilon_budget=2.0)
    assert "1" in str(changed.value) and "Got 2 instead" in str(changed.value)
    assert "set_budget" in str(changed.value)
    assert ledger.budget("visits") == 1.0
    ledger.reserve("visits", "run-a", [("histogram", 0.7)])
    with pytest.raises(InvalidParameterError, match=r"at least what dataset 'visits' has spent, 0\.7"):
        ledger.set_budget("visits", 0.5)
    ledger.set_budget("visits", 2.0)
    assert ledger.budget("visits") == 2.0 and math.isclose(ledger.remaining("visits"), 1.3)
    ledger.set_budget("visits", 0.7)  # down to exactly what is spent
    assert ledger.remaining("visits") == 0.0
    with pytest.raises(InvalidParameterError, match=r"'dataset' parameter of Ledger.set_budget .*'visits'"):
        ledger.set_budget("nope", 1.0)


def test_a_failed_run_keeps_its_epsilon_spent(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    ledger.reserve("visits", "run-a", [("histogram", 0.4)])
    ledger.complete("run-a", manifest_sha256=None, status="failed")
    assert ledger.spent("visits") == 0.4
    assert ledger.table().get_column("status").to_list() == ["failed"]
    # Retrying the identical run costs nothing, and its success is recorded.
    assert not ledger.reserve("visits", "run-a", [("histogram", 0.4)]).new
    ledger.complete("run-a", manifest_sha256=SHA.upper())
    assert ledger.table().select("status", "manifest_sha256").row(0) == ("succeeded", SHA)
    assert ledger.spent("visits") == 0.4


def test_bad_arguments_are_named(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    cases = [
        (
            lambda: ledger.open_dataset("visits", epsilon_budget=0),
            "'epsilon_budget' parameter of Ledger.open_dataset",
        ),
        (lambda: ledger.open_dataset("", epsilon_budget=1), "'dataset' parameter of Ledger.open_dataset"),
        (lambda: ledger.reserve("visits", "r", [("a", -1.0)]), "'releases' parameter"),
        (lambda: ledger.reserve("visits", "r", [("a", 0.1, "x")]), "'releases' parameter of Ledger.reserve"),
        (lambda: ledger.reserve("visits", "r", "a"), "'releases' parameter of Ledger.reserve"),
        (lambda: ledger.reserve("visits", "", [("a", 0.1)]), "'run_id' parameter of Ledger.reserve"),
        (
            lambda: ledger.reserve("nope", "r", [("a", 0.1)]),
            r"'dataset' parameter of Ledger.reserve .*'visits'",
        ),
        (lambda: ledger.complete("r", manifest_sha256=SHA), "'run_id' parameter of Ledger.complete"),
        (lambda: ledger.spent("nope"), "'dataset' parameter of Ledger.spent"),
        (lambda: Ledger(path, timeout=-1), "'timeout' parameter of Ledger"),
        (lambda: Ledger(path.parent / "missing" / "l.duckdb"), "'path' parameter of Ledger"),
    ]
    for call, pattern in cases:
        with pytest.raises(InvalidParameterError, match=pattern):
            call()
    ledger.reserve("visits", "r", [("a", 0.1)])
    with pytest.raises(InvalidParameterError, match=r"'manifest_sha256' parameter of Ledger\.complete"):
        ledger.complete("r", manifest_sha256="not a hash")
    with pytest.raises(InvalidParameterError, match=r"'status' parameter of Ledger\.complete"):
        ledger.complete("r", manifest_sha256=SHA, status="reserved")
    assert ledger.spent("visits") == pytest.approx(0.1)


def test_a_run_with_no_release_is_recorded_and_costs_nothing(path):
    ledger = Ledger(path)
    ledger.open_dataset("survey", epsilon_budget=1.0)
    assert ledger.reserve("survey", "perturb-only", []) == Reservation("perturb-only", 0.0, True)
    assert ledger.table().select("run_id", "step", "epsilon").rows() == [("perturb-only", None, 0.0)]
    assert ledger.run_spent("perturb-only") == 0.0 and ledger.spent("survey") == 0.0


def test_a_newer_schema_or_a_foreign_file_is_refused_clearly(path, tmp_path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    con = duckdb.connect(str(path))
    assert con.execute("SELECT version FROM ppdm_ledger_schema").fetchall() == [(1,)]  # no delta yet
    con.execute("UPDATE ppdm_ledger_schema SET version = ?", [SCHEMA_VERSION + 1])
    con.close()
    with pytest.raises(PPDMError, match=rf"schema version {SCHEMA_VERSION + 1} .*Upgrade polars_ppdm"):
        ledger.spent("visits")

    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE sales (x INT)")
    con.close()
    with pytest.raises(PPDMError, match=r"not a polars_ppdm ledger .*\['sales'\]"):
        Ledger(other).datasets()
    junk = tmp_path / "junk.duckdb"
    junk.write_bytes(b"not a database at all" * 400)
    with pytest.raises(PPDMError, match=r"Could not open the ledger file .*junk\.duckdb"):
        Ledger(junk).datasets()


def test_deltas_add_up_and_a_run_must_fit_both_budgets(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0, delta_budget=1e-5)
    ledger.open_dataset("visits", epsilon_budget=1.0, delta_budget=1e-5)  # the same budgets: fine
    with pytest.raises(InvalidParameterError, match=r"'delta_budget' parameter .* 1e-05. Got 2e-05"):
        ledger.open_dataset("visits", epsilon_budget=1.0, delta_budget=2e-5)
    got = ledger.reserve("visits", "run-a", [("counts", 0.25, 4e-6), ("histogram", 0.25)])
    assert got == Reservation("run-a", 0.5, True, 4e-6)
    assert ledger.reserve("visits", "run-a", [("counts", 0.25, 4e-6), ("histogram", 0.25)]) == (
        Reservation("run-a", 0.5, False, 4e-6)
    )
    before = ledger.table()
    assert before.select("step", "epsilon", "delta").rows() == [
        ("counts", 0.25, 4e-6),
        ("histogram", 0.25, 0.0),
    ]
    with pytest.raises(
        BudgetExceededError, match=r"needs delta 8e-06 .* 6e-06 left of its delta budget 1e-05"
    ):
        ledger.reserve("visits", "run-b", [("counts", 0.1, 8e-6)])  # epsilon fits, delta does not
    assert ledger.table().equals(before)  # nothing recorded
    ledger.reserve("visits", "run-c", [("counts", 0.1, 6e-6)])  # an exact fit
    assert ledger.status("visits")[:4] == pytest.approx((1.0, 0.6, 1e-5, 1e-5), rel=1e-12)
    row = ledger.datasets().row(0, named=True)
    assert (row["delta_budget"], row["delta_remaining"]) == (1e-5, 0.0)
    with pytest.raises(
        InvalidParameterError, match=r"'delta_budget' parameter of Ledger.set_budget .*at least"
    ):
        ledger.set_budget("visits", delta_budget=5e-6)
    for bad in (-1e-6, 1.0, float("nan")):
        with pytest.raises(InvalidParameterError, match=r"'delta_budget' parameter of Ledger\.open_dataset"):
            ledger.open_dataset("other", epsilon_budget=1.0, delta_budget=bad)
    with pytest.raises(InvalidParameterError, match=r"'releases' parameter of Ledger\.reserve"):
        ledger.reserve("visits", "run-d", [("counts", 0.1, 1.5)])
    text = format_ledger(ledger.table(), ledger.datasets())
    assert "delta budget 1e-05, spent 1e-05, remaining 0" in text and "4e-06" in text


def test_a_version_1_file_is_read_as_it_is_and_upgraded_only_for_a_delta(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    ledger.reserve("visits", "run-a", [("histogram", 0.25)])
    versions = "SELECT list(version ORDER BY version) FROM ppdm_ledger_schema"
    with duckdb.connect(str(path)) as con:
        assert con.execute(versions).fetchone() == ([1],)
        assert "delta" not in {c[0] for c in con.execute("DESCRIBE ppdm_runs").fetchall()}
    assert ledger.table().get_column("delta").to_list() == [0.0]
    ledger.set_budget("visits", delta_budget=0)  # no delta: nothing to upgrade
    with duckdb.connect(str(path)) as con:
        assert con.execute(versions).fetchone() == ([1],)
    ledger.set_budget("visits", delta_budget=1e-6)
    with duckdb.connect(str(path)) as con:
        assert con.execute(versions).fetchone() == ([1, 2],)
    assert ledger.status("visits")[:4] == (1.0, 0.25, 1e-6, 0.0)  # the old run spent no delta
    assert ledger.table().select("run_id", "epsilon", "delta").rows() == [("run-a", 0.25, 0.0)]
    ledger.reserve("visits", "run-b", [("counts", 0.25, 1e-6)])
    assert ledger.status("visits").spent_delta == 1e-6


@pytest.mark.parametrize("second_path", ["the same path", "hard link", "symbolic link"])
def test_threads_sharing_a_ledger_never_overspend(path, second_path):
    # Half the threads open the file by a second path: a per-path lock (realpath) parted
    # the threads of a hard link, and 5-6 of 8 reservations of 0.3 "succeeded" on a
    # budget of 1.0 while the file kept 3.
    Ledger(path).open_dataset("d", epsilon_budget=1.0)
    other = path
    if second_path != "the same path":
        other = path.with_name("other.duckdb")
        (os.link if second_path == "hard link" else os.symlink)(path, other)
    results: list[bool] = []

    def worker(number: int) -> None:
        ledger = Ledger(path if number % 2 else other)  # one object per thread, one file
        try:
            ledger.reserve("d", f"run-{number}", [("r", 0.3)])
            results.append(True)
        except BudgetExceededError:
            results.append(False)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 5 + [True] * 3
    assert Ledger(path).spent("d") == pytest.approx(0.9)
    _consistent(path)


def test_format_ledger_shows_every_status_and_the_budgets(path):
    ledger = Ledger(path)
    assert format_ledger(ledger.table(), ledger.datasets()) == "The ledger has no datasets yet."
    ledger.open_dataset("visits", epsilon_budget=2.0)
    ledger.open_dataset("empty", epsilon_budget=1.0)
    ledger.reserve("visits", "a" * 64, [("histogram", 0.5)], pipeline="p.toml")
    ledger.reserve("visits", "b" * 64, [("kmeans", 0.25)])
    ledger.reserve("visits", "c" * 64, [("quadtree", 0.125)])
    ledger.complete("a" * 64, manifest_sha256=SHA)
    ledger.complete("b" * 64, manifest_sha256=None, status="failed")
    text = format_ledger(ledger.table(), ledger.datasets())
    assert "dataset 'visits': budget 2, spent 0.875, remaining 1.125" in text
    assert "dataset 'empty': budget 1, spent 0, remaining 1\n  (no releases yet)" in text
    lines = {line.split()[3]: line for line in text.splitlines() if line.startswith("  20")}
    assert (
        "succeeded" in lines["histogram"]
        and SHA[:12] in lines["histogram"]
        and "a" * 12 in lines["histogram"]
    )
    assert "a" * 13 not in text  # run ids and hashes shortened
    assert "failed (budget kept spent)" in lines["kmeans"]
    assert "reserved (run did not finish; budget kept spent)" in lines["quadtree"]
    one = format_ledger(ledger.table("visits"))
    assert one.startswith("dataset 'visits'\n") and "empty" not in one
    with pytest.raises(InvalidParameterError, match="'table' parameter of format_ledger"):
        format_ledger(ledger.datasets())


# --- the accountant -------------------------------------------------------------------------


def test_the_accountant_persists_across_sessions(path):
    Ledger(path).open_dataset("visits", epsilon_budget=1.0)
    frame = pl.DataFrame({"x": [0.5, 1.5, 2.5, 3.5] * 5})
    first = Ledger(path).accountant("visits")  # session 1
    assert isinstance(first, ppdm.BudgetAccountant) and first.epsilon == 1.0
    ppdm.dp_histogram(
        frame, "x", bounds=(0, 4), bins=4, epsilon=0.5, secret=ppdm.Secret.for_tests(1), accountant=first
    )
    assert first.spent == 0.5

    second = Ledger(path).accountant("visits")  # session 2: a new process would see the same file
    assert second.spent == 0.5 and second.remaining == 0.5
    with pytest.raises(BudgetExceededError, match=r"needs epsilon 0\.6 .*0\.5 left of 1"):
        ppdm.dp_histogram(
            frame, "x", bounds=(0, 4), bins=4, epsilon=0.6, secret=ppdm.Secret.for_tests(1), accountant=second
        )
    with pytest.raises(BudgetExceededError):
        second.check(0.6, "too much")
    second.check(0.5, "fits")
    with second.parallel("one per half") as block:  # disjoint parts: the block costs its largest release
        block.spend(0.2, "left half")
        block.spend(0.3, "right half")
        block.spend(0.1, "a smaller one")
    assert second.spent == pytest.approx(0.8) and first.spent == pytest.approx(0.8)
    assert second.ledger.drop("delta", "rho").rows() == [
        ("dp_histogram(x)", 0.5, "sequential"),
        ("left half", 0.2, "parallel: one per half"),
        ("right half", 0.3, "parallel: one per half"),
        ("a smaller one", 0.1, "parallel: one per half"),
    ]
    assert Ledger(path).table("visits").get_column("charged").to_list() == pytest.approx([0.5, 0.2, 0.1, 0.0])
    assert set(Ledger(path).table().get_column("status")) == {"accountant"}
    with pytest.raises(InvalidParameterError, match="set_budget"):
        second.epsilon = 5.0
    Ledger(path).set_budget("visits", 2.0)
    assert second.epsilon == 2.0 and second.remaining == pytest.approx(1.2)
    assert "LedgerAccountant(dataset='visits'" in repr(second)
    _consistent(path)


# --- several processes ----------------------------------------------------------------------

RACER = r"""
import sys, time, pathlib
from polars_ppdm.ledger import Ledger
from polars_ppdm.exceptions import BudgetExceededError
path, name, rounds, folder = sys.argv[1], sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4])
ledger = Ledger(path, timeout=20)
print("ready", flush=True)
for r in range(rounds):
    while not (folder / f"go{r}").exists():
        time.sleep(0.0005)
    try:
        ledger.reserve(f"round{r}", f"{name}-{r}", [("release", 0.6)])
        print("won", flush=True)
    except BudgetExceededError as err:
        assert "0.4 left of 1" in str(err), str(err)
        print("lost", flush=True)
"""


def test_processes_racing_for_a_budget_that_fits_one(path, tmp_path):
    rounds, racers = 10, 3
    ledger = Ledger(path)
    for r in range(rounds):
        ledger.open_dataset(f"round{r}", epsilon_budget=1.0)
    with contextlib.ExitStack() as stack:
        procs = [
            stack.enter_context(_start(RACER, path, f"racer{n}", rounds, tmp_path)) for n in range(racers)
        ]
        for proc in procs:
            _expect(proc, "ready")
        for r in range(rounds):
            (tmp_path / f"go{r}").touch()  # all racers start this round at once
            said = [proc.stdout.readline().strip() for proc in procs if proc.stdout]
            assert sorted(said) == ["lost"] * (racers - 1) + ["won"], (r, said)
        for proc in procs:
            _, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
    spent = ledger.datasets()
    assert spent.get_column("spent").to_list() == [0.6] * rounds
    assert ledger.table().height == rounds
    _consistent(path)


def test_a_new_ledger_file_appears_whole(path, monkeypatch):
    """Two runs racing to create one ledger: DuckDB's connect() creates the file and only
    then writes its header, so a second process opening it in between was told "not a
    valid DuckDB database file" (seen in CI: stop 43). The ledger's own path is therefore
    never handed to connect() while absent: the file is made under another name and linked
    into place whole."""
    real_connect = duckdb.connect
    seen: list[tuple[str, bool]] = []

    def spy(database: str = ":memory:", *args: object, **kwargs: object) -> duckdb.DuckDBPyConnection:
        seen.append((str(database), Path(str(database)).exists()))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", spy)
    Ledger(path).open_dataset("visits", epsilon_budget=1.0)
    at_the_path = [existed for database, existed in seen if database == str(path)]
    assert at_the_path and all(at_the_path), seen
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no draft left
    monkeypatch.undo()
    assert Ledger(path).remaining("visits") == 1.0


def test_a_file_system_without_hard_links_still_gets_a_ledger(path, monkeypatch):
    def no_links(*args: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    Ledger(path).open_dataset("visits", epsilon_budget=1.0)
    assert Ledger(path).remaining("visits") == 1.0
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


CREATOR = r"""
import sys, time, pathlib
from polars_ppdm.ledger import Ledger
folder, name, rounds = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
for r in range(rounds):
    while not (folder / f"go{r}").exists():
        time.sleep(0.0002)
    ledger = Ledger(folder / f"new{r}.duckdb", timeout=20)
    ledger.open_dataset("d", epsilon_budget=1.0)
    ledger.reserve("d", f"{name}-{r}", [("release", 0.1)])
    print("done", flush=True)
"""


def test_processes_racing_to_create_one_ledger(tmp_path):
    rounds, racers = 12, 3
    with contextlib.ExitStack() as stack:
        procs = [stack.enter_context(_start(CREATOR, tmp_path, f"racer{n}", rounds)) for n in range(racers)]
        for proc in procs:
            _expect(proc, "ready")
        for r in range(rounds):
            (tmp_path / f"go{r}").touch()  # every racer opens the same absent file at once
            for proc in procs:
                _expect(proc, "done")
        for proc in procs:
            _, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
    for r in range(rounds):
        assert Ledger(tmp_path / f"new{r}.duckdb").table().height == racers
        _consistent(tmp_path / f"new{r}.duckdb")
    assert not list(tmp_path.glob(".*.new*"))  # no drafts left


HOLD_RESERVED = r"""
import sys, time
from polars_ppdm.ledger import Ledger
ledger = Ledger(sys.argv[1])
print(ledger.reserve("visits", "killed-run", [("histogram", 0.4), ("kmeans", 0.2)]).new, flush=True)
time.sleep(60)  # the run "computes" and is killed
"""

HOLD_IN_TRANSACTION = r"""
import sys, time
from polars_ppdm.ledger import Ledger
ledger = Ledger(sys.argv[1])
sys.stdin.readline()  # the cue
with ledger._transaction() as con:  # reserve's transaction, stopped half-way
    con.execute("INSERT INTO ppdm_runs VALUES ('half-run', 'visits', '', 0.3, 'reserved', now()::TIMESTAMP, NULL, NULL)")
    print("inside", flush=True)
    time.sleep(60)
"""


def test_a_killed_run_keeps_its_reservation_and_a_killed_transaction_leaves_nothing(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    with _start(HOLD_RESERVED, path) as reserved, _start(HOLD_IN_TRANSACTION, path, stdin=True) as inside:
        _expect(reserved, "True")
        reserved.send_signal(signal.SIGKILL)
        reserved.wait()
        assert ledger.spent("visits") == pytest.approx(0.6)
        assert set(ledger.table().get_column("status")) == {"reserved"}
        text = format_ledger(ledger.table(), ledger.datasets())
        assert "reserved (run did not finish; budget kept spent)" in text
        with pytest.raises(BudgetExceededError, match=r"0\.4 left of 1"):
            ledger.reserve("visits", "next-run", [("histogram", 0.5)])

        assert inside.stdin is not None
        inside.stdin.write("go\n")
        inside.stdin.flush()
        _expect(inside, "inside")
        inside.send_signal(signal.SIGKILL)
    assert ledger.run_spent("half-run") is None  # never committed: not spent, not shown
    assert ledger.spent("visits") == pytest.approx(0.6)
    assert ledger.reserve("visits", "next-run", [("histogram", 0.4)]).new
    _consistent(path)


CHURN = r"""
import sys
from polars_ppdm.ledger import Ledger
from polars_ppdm.exceptions import BudgetExceededError
ledger = Ledger(sys.argv[1])
print("started", flush=True)
n = 0
while True:
    n += 1
    try:
        ledger.reserve("churn", f"run-{n}", [("a", 1e-4), ("b", 2e-4)], pipeline="churn")
    except BudgetExceededError:
        ledger.set_budget("churn", ledger.budget("churn") + 1)  # keep writing: budgets too
        continue
    print(f"run-{n}", flush=True)  # committed
    ledger.complete(f"run-{n}", manifest_sha256="ab" * 32)
"""


def test_processes_killed_at_any_point_of_writing_leave_a_consistent_ledger(tmp_path):
    """Four writers, each on its ledger, each killed a different pause after one of its
    commits: in complete(), in the next reserve's transaction, in DuckDB's checkpoint on
    close, or in set_budget, as the timing falls."""
    pauses = [0.0, 0.004, 0.013, 0.029]
    paths = [tmp_path / f"ledger{n}.duckdb" for n in range(len(pauses))]
    for path in paths:
        Ledger(path).open_dataset("churn", epsilon_budget=0.001)  # run 4 first raises the budget
    with contextlib.ExitStack() as stack:
        procs = [stack.enter_context(_start(CHURN, path)) for path in paths]
        for proc in procs:
            _expect(proc, "started")
        outputs = []
        for proc, pause in zip(procs, pauses, strict=True):
            first = proc.stdout.readline().strip() if proc.stdout else ""
            time.sleep(pause)
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate()
            assert proc.returncode == -signal.SIGKILL
            outputs.append([first, *(line for line in out.splitlines() if line.startswith("run-"))])
    for path, committed in zip(paths, outputs, strict=True):
        assert committed[0].startswith("run-"), committed
        ledger = Ledger(path)
        for run_id in committed:  # every reservation the child saw committed is spent
            assert ledger.run_spent(run_id) == pytest.approx(3e-4)
        table = ledger.table()
        assert ledger.spent("churn") == pytest.approx(3e-4 * table.get_column("run_id").n_unique())
        assert set(table.get_column("status")) <= {"reserved", "succeeded"}
        _consistent(path)
        assert ledger.reserve("churn", "after-the-kill", [("a", 1e-4)]).new  # and it still works


HOLD_FILE = r"""
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])  # e.g. a DuckDB shell left open on the ledger
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_file_held_too_long_gives_a_clear_busy_error(path):
    ledger = Ledger(path, timeout=0.3)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    with _start(HOLD_FILE, path, 60) as holder:
        _expect(holder, "holding")
        started = time.monotonic()
        with pytest.raises(LedgerBusyError) as busy:
            ledger.reserve("visits", "run-a", [("histogram", 0.5)])
        assert time.monotonic() - started >= 0.3
        message = str(busy.value)
        assert str(path) in message and f"PID {holder.pid}" in message and "timeout" in message
        assert "try again" in message and "Ledger(path, timeout=SECONDS)" in message
        assert "Could not set lock" not in message and "IO Error" not in message
        assert busy.value.__cause__ is None and busy.value.__suppress_context__
        assert isinstance(busy.value, PPDMError) and isinstance(busy.value, TimeoutError)
        holder.kill()
    assert ledger.spent("visits") == 0.0  # nothing was spent; the file is free again


def test_a_waiting_process_gets_the_file_when_it_is_released(path):
    ledger = Ledger(path, timeout=20)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    with _start(HOLD_FILE, path, 0.6) as holder:
        _expect(holder, "holding")
        started = time.monotonic()
        assert ledger.reserve("visits", "run-a", [("histogram", 0.5)]).new  # waits, then succeeds
        assert time.monotonic() - started > 0.2
        holder.wait(timeout=30)
    assert holder.returncode == 0  # it let go of the file by ending, not by being killed
    assert ledger.spent("visits") == 0.5


def test_the_ledger_object_holds_no_connection(path):
    ledger = Ledger(path)
    ledger.open_dataset("visits", epsilon_budget=1.0)
    # Between operations the file is free: another process opens it read-write at once.
    code = "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('SELECT 1'); print('ok')"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    assert os.path.exists(path)


def test_reclaim_withdraws_only_runs_whose_process_died_before_publishing(tmp_path):
    """A run killed before its commit published nothing (outputs go in place only after
    Ledger.publish): the next run takes its reservation back.  A live process's run, a
    run that recorded an output, and a run of another host stay spent."""
    import subprocess
    import sys

    path = tmp_path / "ledger.duckdb"
    book = Ledger(path)
    book.open_dataset("d", 10.0)
    code = (
        "from polars_ppdm.ledger import Ledger; "
        f"Ledger({str(path)!r}).reserve('d', 'killed', [('s', 1.0)], record_outputs=True)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)  # its process is gone now
    book.reserve("d", "alive", [("s", 1.0)], record_outputs=True)  # this process
    book.reserve("d", "published", [("s", 1.0)], record_outputs=True)
    book.record_output("published", "table", "ab" * 32)
    subprocess.run([sys.executable, "-c", code.replace("'killed'", "'elsewhere'")], check=True, timeout=120)
    import duckdb

    with duckdb.connect(str(path)) as con:
        con.execute(
            "UPDATE ppdm_runs SET owner = 'other-host' || owner[position(chr(9) in owner):] WHERE run_id = 'elsewhere'"
        )
    assert book.spent("d") == pytest.approx(4.0)
    assert book.reclaim("d") == ["killed"]
    assert book.spent("d") == pytest.approx(3.0)
    assert sorted(book.table("d")["run_id"].to_list()) == ["alive", "elsewhere", "published"]
    assert book.reclaim("d") == []


def test_a_dataset_keeps_the_privacy_unit_it_first_spent_per(path):
    """Epsilons spent per visit and per person do not add up to a budget per person: the
    first spend that says its unit records it, and another is refused once something is
    spent; a unit of a run withdrawn (nothing spent) binds nothing; None checks nothing."""
    ledger = Ledger(path)
    ledger.open_dataset("visits", 2.0, privacy_unit="person")  # a check: nothing recorded
    assert ledger.status("visits").privacy_unit is None
    ledger.reserve("visits", "run-1", [("a", 0.5)], privacy_unit="person")
    assert ledger.status("visits").privacy_unit == "column 'person'"
    ledger.open_dataset("visits", 2.0)
    ledger.open_dataset("visits", 2.0, privacy_unit="person")
    ledger.reserve("visits", "run-2", [("b", 0.5)], privacy_unit="person")
    ledger.reserve("visits", "run-3", [("c", 0.25)])  # a caller that says no unit: not checked
    for other in (None, "visit"):  # None: each row a unit
        with pytest.raises(InvalidParameterError, match="counts its budget per privacy unit column 'person'"):
            ledger.open_dataset("visits", 2.0, privacy_unit=other)
        with pytest.raises(InvalidParameterError, match="counts its budget per privacy unit column 'person'"):
            ledger.reserve("visits", f"run-{other}", [("d", 0.25)], privacy_unit=other)
    assert ledger.spent("visits") == pytest.approx(1.25)
    assert ledger.datasets()["privacy_unit"].to_list() == ["column 'person'"]
    with duckdb.connect(str(path)) as con:
        assert con.execute("SELECT max(version) FROM ppdm_ledger_schema").fetchone() == (SCHEMA_VERSION,)
    # A run that recorded its unit and was withdrawn spent nothing: the unit may change.
    ledger.open_dataset("fresh", 1.0)
    ledger.reserve("fresh", "run-w", [("a", 0.5)], privacy_unit="visit")
    ledger.withdraw("run-w")
    ledger.open_dataset("fresh", 1.0, privacy_unit="person")
    ledger.reserve("fresh", "run-p", [("a", 0.5)], privacy_unit="person")
    assert ledger.status("fresh").privacy_unit == "column 'person'"


def test_epsilons_reserved_on_a_zcdp_dataset_are_charged_as_rho(path):
    """The attack: three epsilon-3 releases reserved on a dataset of rho budget 10 were
    charged 9 (the epsilons taken as rho); in zCDP they cost 3 x 3^2/2 = 13.5."""
    ledger = Ledger(path)
    ledger.open_dataset("visits", rho_budget=10.0)
    ledger.reserve("visits", "run-1", [("a", 3.0)])
    ledger.reserve("visits", "run-2", [("b", 3.0)])
    assert ledger.spent("visits") == pytest.approx(9.0)
    with pytest.raises(BudgetExceededError):
        ledger.reserve("visits", "run-3", [("c", 3.0)])
    ledger.reserve("visits", "run-4", [("d", 0.5)], unit="rho")  # amounts in rho, said so
    assert ledger.spent("visits") == pytest.approx(9.5)
    ledger.open_dataset("pure", epsilon_budget=1.0)
    with pytest.raises(InvalidParameterError, match=r"'unit'.*'epsilon' for dataset 'pure'"):
        ledger.reserve("pure", "run-5", [("e", 0.5)], unit="rho")
    with pytest.raises(InvalidParameterError, match="'unit'"):
        ledger.reserve("pure", "run-5", [("e", 0.5)], unit="delta")
    # zCDP composes no delta: an (epsilon, delta) release is refused, in either unit.
    for unit in ("epsilon", "rho"):
        with pytest.raises(BudgetExceededError, match="composes no delta"):
            ledger.reserve("visits", f"run-d-{unit}", [("f", 0.1, 1e-7)], unit=unit)
    assert ledger.spent("visits") == pytest.approx(9.5)
