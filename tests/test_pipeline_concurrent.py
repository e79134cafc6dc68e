"""Two `ppdm run` processes at once against one ledger whose budget fits only one of them
(issue 15): exactly one succeeds, the other is refused for its budget (exit 3) or finds
the ledger busy (exit 5), and the epsilon spent never exceeds the budget.  Real
processes, started together on a ledger that does not exist yet (both race to create
it, then to reserve), repeated."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from polars_ppdm.jobs.errors import EXIT_BUDGET, EXIT_BUSY, EXIT_OK

SECRET = "3ba08187238ba4a4faa09d5e5dfcc8650bdfa9f4ff9825b207e4550b03e57769"  # from os.urandom: not guessable
BUDGET = 1.0
# Each run alone fits; any two together do not.
EPSILONS = {"first": 0.75, "second": 0.6}
PIPELINE = """
[dataset]
name = "shared"
inputs = ["{data}"]
key = "id"
{budget_field} = {budget}
[secret]
env = "PPDM_SECRET"
[[perturb]]
step = "rr_disguise"
columns = ["a"]
epsilon = {epsilon}
[[perturb]]
step = "keep"
columns = ["id"]
[output]
table = "out/table.parquet"
manifest = "out/manifest.json"
"""
REPEATS = 5


def start(pipeline: Path, ledger: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "polars_ppdm", "run", "--quiet", "--ledger", str(ledger), str(pipeline)],
        env={**os.environ, "PPDM_SECRET": SECRET},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


# zCDP: the same steps charge epsilon^2 / 2 each (0.28125 and 0.18): each alone fits 0.4.
ACCOUNTINGS = {"epsilon_budget": (BUDGET, lambda eps: eps), "rho_budget": (0.4, lambda eps: eps * eps / 2)}


@pytest.mark.slow  # ten processes, about 20 s on 2 cores
@pytest.mark.parametrize("budget_field", list(ACCOUNTINGS))
def test_two_concurrent_runs_never_overspend(tmp_path, budget_field):
    from polars_ppdm.ledger import Ledger

    budget, cost = ACCOUNTINGS[budget_field]

    data = tmp_path / "in.parquet"
    rng = np.random.default_rng(15)
    pl.DataFrame({"id": np.arange(2_000), "a": rng.random(2_000) < 0.4}).write_parquet(data)
    pipelines = {}
    for name, epsilon in EPSILONS.items():
        (tmp_path / name).mkdir()
        pipelines[name] = tmp_path / name / "pipeline.toml"
        pipelines[name].write_text(
            PIPELINE.format(data=data, budget=budget, budget_field=budget_field, epsilon=epsilon)
        )
    winners = []
    for attempt in range(REPEATS):
        ledger = tmp_path / f"ledger-{attempt}.duckdb"  # new each time: both race to create it
        for name in pipelines:
            for stale in (tmp_path / name / "out").glob("*"):
                stale.unlink()
        running = {name: start(path, ledger) for name, path in pipelines.items()}
        done = {}
        for name, process in running.items():
            out, err = process.communicate(timeout=120)
            done[name] = (process.returncode, out.decode() + err.decode())
        codes = {name: code for name, (code, _) in done.items()}
        won = [name for name, code in codes.items() if code == EXIT_OK]
        assert len(won) == 1, f"attempt {attempt}: {done}"
        (loser,) = set(codes) - set(won)
        assert codes[loser] in (EXIT_BUDGET, EXIT_BUSY), f"attempt {attempt}: {done}"
        message = done[loser][1]
        assert message.startswith("ppdm run: ") and "Traceback" not in message, message
        if codes[loser] == EXIT_BUDGET:
            assert "nothing was" in message and "spent" in message, message
        book = Ledger(ledger)
        assert book.spent("shared") == pytest.approx(cost(EPSILONS[won[0]]))
        assert book.spent("shared") <= budget
        assert book.table("shared")["status"].to_list() == ["succeeded"]
        # The loser wrote nothing: no table, no manifest.
        assert (tmp_path / won[0] / "out" / "manifest.json").exists()
        assert not (tmp_path / loser / "out").exists() or not any((tmp_path / loser / "out").iterdir())
        winners.append((won[0], codes[loser]))
    print(f"(winner, loser's exit) over {REPEATS} attempts: {winners}")
