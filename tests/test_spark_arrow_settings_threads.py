"""arrow_batches on one session from overlapping blocks (two threads, nesting): the
session's own settings come back when the last block ends, whatever the order they end in.
A stand-in session (no Spark needed): the function only reads and writes ``spark.conf``."""

from __future__ import annotations

import threading

import pytest

from polars_ppdm.spark._engine import ARROW_SETTINGS, arrow_batches

ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class _Session:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)


def test_blocks_that_end_out_of_order_leave_the_session_as_it_was():
    session = _Session({ROWS: "7"})
    first, second = arrow_batches(session), arrow_batches(session)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first holder leaves while the second still runs
    assert {k: session.conf.get(k) for k in ARROW_SETTINGS} == ARROW_SETTINGS
    second.__exit__(None, None, None)
    assert session.conf.values == {ROWS: "7"}  # and the unset one stays unset


def test_two_threads_overlapping_restore_the_session_own_values():
    session = _Session({ROWS: "7"})
    inside, leave = threading.Barrier(2), threading.Event()
    seen: list[dict[str, str | None]] = []

    def job(wait: bool) -> None:
        with arrow_batches(session):
            inside.wait(timeout=10)
            if wait:
                leave.wait(timeout=10)
            seen.append({k: session.conf.get(k) for k in ARROW_SETTINGS})
        if not wait:
            leave.set()

    threads = [threading.Thread(target=job, args=(w,)) for w in (False, True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert seen == [ARROW_SETTINGS, ARROW_SETTINGS]
    assert session.conf.values == {ROWS: "7"}


def test_an_error_in_a_nested_block_still_restores():
    session = _Session({})
    with pytest.raises(ZeroDivisionError), arrow_batches(session):
        with arrow_batches(session, {ROWS: "5"}):
            assert session.conf.get(ROWS) == "5"
            _ = 1 / 0
    assert session.conf.values == {}
