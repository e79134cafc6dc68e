"""SIGKILL during a large output write (issue 15): the previous output stays
byte-identical, no partial file exists under the final name, and the ledger keeps the
killed run's epsilon spent until the next run, which withdraws it (the killed run never
reached its commit, so it published nothing), completes and removes its temporary."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

SECRET = "236214a3853bb1679962b721fe5019d93c028997806c2dc19675bf2e56f89ad8"  # from os.urandom: not guessable
PIPELINE = """
[dataset]
name = "big"
inputs = ["in.parquet"]
key = "id"
epsilon_budget = 100.0
ledger = "ledger.duckdb"
[secret]
env = "PPDM_SECRET"
[[perturb]]
step = "rr_disguise"
columns = ["a"]
epsilon = 1.0
[[perturb]]
step = "add_noise"
columns = ["x", "y"]
scale = 1.0
[[perturb]]
step = "keep"
columns = ["id"]
[output]
table = "out/table.parquet"
manifest = "out/manifest.json"
"""
ROWS = 4_000_000


def data(folder: Path, version: int) -> None:
    rng = np.random.default_rng(version)
    pl.DataFrame(
        {"id": np.arange(ROWS), "a": rng.random(ROWS) < 0.3, "x": rng.random(ROWS), "y": rng.random(ROWS)}
    ).write_parquet(folder / "in.parquet", compression="uncompressed")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def start(folder: Path) -> subprocess.Popen:
    env = {**os.environ, "PPDM_SECRET": SECRET}
    with open(folder / "stderr.txt", "ab") as errors:
        return subprocess.Popen(
            [sys.executable, "-m", "polars_ppdm.jobs", "run", "--quiet", str(folder / "pipeline.toml")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.7])
def test_sigkill_while_writing_leaves_the_previous_output(tmp_path, fraction):
    (tmp_path / "pipeline.toml").write_text(PIPELINE)
    data(tmp_path, 1)
    first = start(tmp_path)
    assert first.wait(timeout=300) == 0, (tmp_path / "stderr.txt").read_text()
    target = tmp_path / "out" / "table.parquet"
    before, size = sha(target), target.stat().st_size
    manifest_before = sha(tmp_path / "out" / "manifest.json")

    data(tmp_path, 2)  # new input: a new run that writes a different table
    run = start(tmp_path)
    deadline = time.monotonic() + 300
    temporary = None
    while time.monotonic() < deadline and run.poll() is None:
        found = list((tmp_path / "out").glob(".table.parquet.ppdm-*.tmp"))
        if found and found[0].exists():
            try:
                if found[0].stat().st_size > fraction * size:
                    temporary = found[0]
                    break
            except FileNotFoundError:
                pass
        time.sleep(0.002)
    assert temporary is not None, "the run ended before the write could be caught"
    os.kill(run.pid, signal.SIGKILL)
    assert run.wait(timeout=60) == -signal.SIGKILL

    assert sha(target) == before  # the previous output, byte for byte
    assert sha(tmp_path / "out" / "manifest.json") == manifest_before
    finals = {p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")}
    # The first run's outputs and its report; nothing of the killed run.
    assert finals == {"table.parquet", "manifest.json", "report.internal.html", "report.public.html"}
    from polars_ppdm.ledger import Ledger

    book = Ledger(tmp_path / "ledger.duckdb")
    assert book.spent("big") == pytest.approx(2.0)  # the killed run's epsilon stays spent
    statuses = book.table("big")["status"].to_list()
    assert any(s.startswith("reserved") for s in statuses)

    again = start(tmp_path)  # the same run again: the killed run published nothing, so it is
    assert again.wait(timeout=300) == 0  # withdrawn (reclaimed) and this one charged instead
    assert book.spent("big") == pytest.approx(2.0)
    assert not any(s.startswith("reserved") for s in book.table("big")["status"].to_list())
    assert sha(target) != before
    assert not list((tmp_path / "out").glob(".*.tmp"))  # the dead run's temporary removed
