"""One BudgetAccountant shared by threads never overspends: threads race real DP releases
(dp_histogram) and bare spend() calls against one budget; the ledger must sum to at most
the budget, and every release that ran must be in it."""

from __future__ import annotations

import sys
import threading

import numpy as np
import polars as pl
import pytest
from fuzz_contract import SECRET

import polars_ppdm as ppdm
from polars_ppdm.exceptions import BudgetExceededError

THREADS = 8
ATTEMPTS = 12  # per thread; the budget fits five


ROUNDS = 40  # fresh accountants, each with room for a few releases: many races at the edge


def race(accountant_class: type = ppdm.BudgetAccountant) -> None:
    """Threads race releases against one accountant per round; fails on any overspend."""
    frame = pl.DataFrame({"x": np.linspace(0, 1, 20)})
    eps = 0.01
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
    try:
        for _ in range(ROUNDS):
            accountant = accountant_class(5 * eps)
            released: list[float] = []
            errors: list[Exception] = []
            start = threading.Barrier(THREADS)

            def worker(
                i: int,
                accountant: object = accountant,
                released: list[float] = released,
                errors: list = errors,
                start: threading.Barrier = start,
            ) -> None:
                start.wait()
                for j in range(ATTEMPTS):
                    try:
                        if j % 8 == 0:
                            ppdm.dp_histogram(
                                frame,
                                "x",
                                bounds=(0, 1),
                                bins=2,
                                epsilon=eps,
                                secret=SECRET,
                                accountant=accountant,
                            )
                        else:
                            accountant.spend(eps, f"thread {i} release {j}")  # type: ignore[attr-defined]
                        released.append(eps)
                    except BudgetExceededError:
                        pass
                    except Exception as exc:  # anything else fails the test, not just the thread
                        errors.append(exc)

            threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not errors, errors[:3]
            ledger = accountant.ledger  # type: ignore[attr-defined]
            assert ledger.height == len(released), (
                f"{len(released)} releases ran, the ledger has {ledger.height}"
            )
            assert sum(released) <= 5 * eps * (1 + 1e-9), f"spent {sum(released):.4f} of {5 * eps}"
            assert ledger["epsilon"].sum() == pytest.approx(accountant.spent)  # type: ignore[attr-defined]
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.fuzz
def test_threads_sharing_an_accountant_never_overspend() -> None:
    race()
