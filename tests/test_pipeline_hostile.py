"""`ppdm run`, `plan` and `ledger` tried as a hostile user would (issue 27): an input
changed during the run, outputs over the secret, the pipeline file, a report page or a
FIFO, steps that cannot run on their columns, a damaged CSV, a literal secret, a ledger
that is a FIFO or on a read-only mount, a full disk at the commit, a closed pipe,
Ctrl-C, huge or deep files, a secret file with a byte-order mark, budgets edited in the
file.  Every case: the documented exit status, one line on stderr without the secret,
no file outside the declared outputs changed, and nothing charged unless something was
published."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import socket
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from polars_ppdm.jobs import run as run_module
from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.errors import (
    EXIT_BUDGET,
    EXIT_CHANGED,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_OTHER,
)
from polars_ppdm.ledger import Ledger

SECRET = "9d41c7e2b06a58f3e17c2d945ab0863f71e5c92d4a06b8f3157ce2d90a4b6813"  # no guessable pattern

PIPELINE = """
[dataset]
name = "people"
inputs = ["{input}"]
key = "id"
epsilon_budget = {budget}
ledger = "{ledger}"

[secret]
{secret}

[[perturb]]
step = "rr_disguise"
columns = ["smoker"]
epsilon = 1.0

[[perturb]]
step = "keep"
columns = ["region", "age"]

[[perturb]]
step = "drop"
columns = ["id"]

[[release]]
step = "dp_histogram"
columns = ["age"]
bounds = {{ age = [0, 100] }}
bins = 10
epsilon = 0.5
output = "out/ages.csv"

[output]
table = "out/table.parquet"
manifest = "{manifest}"
"""


def people(rows: int = 300, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "id": np.arange(rows),
            "smoker": rng.random(rows) < 0.3,
            "region": rng.choice(["north", "south", "east"], rows),
            "age": rng.integers(18, 90, rows),
        }
    )


def write(
    folder: Path,
    *,
    input: str = "people.csv",
    ledger: str = "out/ledger.duckdb",
    manifest: str = "out/manifest.json",
    budget: float = 10.0,
    secret: str = 'env = "PPDM_SECRET"',
    text: str | None = None,
) -> Path:
    if not (folder / "people.csv").exists():
        people().write_csv(folder / "people.csv")
    path = folder / "pipeline.toml"
    body = text if text is not None else PIPELINE
    path.write_text(body.format(input=input, ledger=ledger, manifest=manifest, budget=budget, secret=secret))
    return path


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("PPDM_SECRET", SECRET)


def run(path: Path, *extra: str) -> int:
    return main(["run", "--quiet", "--no-report", *extra, str(path)])


def files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (but the ledger, whose bytes DuckDB rewrites) -> SHA-256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "ledger" not in p.name
    }


def spent(folder: Path, name: str = "people") -> float:
    path = folder / "out" / "ledger.duckdb"
    if not path.exists():
        return 0.0
    book = Ledger(path)
    return book.spent(name) if name in book.datasets()["dataset"].to_list() else 0.0


def one_clean_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and SECRET not in err and SECRET[:16] not in err
    return lines[0]


# ---- 1. an input changed during the run ---------------------------------------------------


def _replace_input_after_fingerprint(monkeypatch, folder: Path, how: str) -> None:
    """An upstream writer acts after the run fingerprinted its input and before it read
    the rows: it replaces the file by a rename (a new file), or writes into it."""
    real = run_module.check_values_per_unit

    def hook(*args, **kwargs):
        new = people(seed=2).with_columns(pl.col("age") + 1)
        if how == "rename":
            new.write_csv(folder / "incoming.csv")
            os.replace(folder / "incoming.csv", folder / "people.csv")
        else:
            with open(folder / "people.csv", "r+b") as file:
                file.write(new.write_csv().encode())
                file.truncate()
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "check_values_per_unit", hook)


@pytest.mark.parametrize("how", ["rename", "in place"])
def test_input_replaced_after_its_fingerprint_is_refused_not_published_as_an_identical_rerun(
    tmp_path, monkeypatch, capsys, how
):
    """The landed code reported "identical to an earlier run: spent nothing" and published
    the new rows and a DP release of them under the old noise."""
    path = write(tmp_path)
    assert run(path) == EXIT_OK
    before, charged = files(tmp_path), spent(tmp_path)
    _replace_input_after_fingerprint(monkeypatch, tmp_path, how)
    capsys.readouterr()
    assert run(path) == EXIT_CHANGED
    line = one_clean_line(capsys.readouterr().err)
    assert "changed while the run read it" in line and "Nothing was published and nothing spent" in line
    after = files(tmp_path)
    assert after.pop("people.csv") != before.pop("people.csv")  # the writer's change
    assert after == before  # no output, manifest or report changed
    assert spent(tmp_path) == pytest.approx(charged)


def test_input_replaced_during_a_new_run_publishes_nothing_and_charges_nothing(tmp_path, monkeypatch, capsys):
    path = write(tmp_path)
    _replace_input_after_fingerprint(monkeypatch, tmp_path, "rename")
    assert run(path) == EXIT_CHANGED
    assert "reservation was withdrawn" in one_clean_line(capsys.readouterr().err)
    assert not (tmp_path / "out" / "table.parquet").exists() and not (tmp_path / "out" / "ages.csv").exists()
    assert spent(tmp_path) == 0.0
    assert Ledger(tmp_path / "out" / "ledger.duckdb").table("people").height == 0
    assert not list((tmp_path / "out").glob(".*.tmp"))
    monkeypatch.undo()
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    assert run(path) == EXIT_OK  # the new content is a new run, charged once
    assert spent(tmp_path) == pytest.approx(1.5)


def test_input_written_and_restored_during_the_run_is_refused(tmp_path, monkeypatch, capsys):
    """Bytes changed while the table was read and put back before the end: the same
    fingerprint at the end, but the run read other data; the file's times tell."""
    path = write(tmp_path)
    original = (tmp_path / "people.csv").read_bytes()
    _replace_input_after_fingerprint(monkeypatch, tmp_path, "in place")
    real = run_module._write_frame

    def restore(*args, **kwargs):
        with open(tmp_path / "people.csv", "r+b") as file:
            file.write(original)
            file.truncate()
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "_write_frame", restore)
    assert run(path) == EXIT_CHANGED
    assert (tmp_path / "people.csv").read_bytes() == original
    assert spent(tmp_path) == 0.0 and not (tmp_path / "out" / "table.parquet").exists()


# ---- 2, 3, 4. files lost: outputs over the secret, the pipeline, a report page, a FIFO --------


def test_manifest_over_the_secret_file_is_refused_by_plan_and_run(tmp_path, capsys):
    from polars_ppdm.secret_files import write_secret_text

    write_secret_text(tmp_path / "ppdm.secret", SECRET)
    path = write(tmp_path, manifest="ppdm.secret", secret='file = "ppdm.secret"')
    for command in (["plan", str(path)], ["run", "--quiet", str(path)]):
        assert main(command) == EXIT_INVALID
        line = one_clean_line(capsys.readouterr().err)
        assert "is the secret file" in line
    assert (tmp_path / "ppdm.secret").read_text() == SECRET
    assert oct((tmp_path / "ppdm.secret").stat().st_mode & 0o777) == "0o600"


def test_manifest_over_the_pipeline_file_is_refused(tmp_path, capsys):
    path = write(tmp_path, manifest="pipeline.toml")
    text = path.read_text()
    assert run(path) == EXIT_INVALID
    assert "is the pipeline file" in one_clean_line(capsys.readouterr().err)
    assert path.read_text() == text


@pytest.mark.parametrize(
    "change",
    [
        {"ledger": "out/report.public.html"},
        {"input": "report.public.html"},
        {"ledger": "out/report.internal.html"},
    ],
)
def test_a_report_page_never_replaces_the_ledger_or_an_input(tmp_path, capsys, change):
    if "input" in change:
        people().write_csv(tmp_path / "report.public.html")
        change = {**change, "manifest": "manifest.json"}
    path = write(tmp_path, **change)
    before = files(tmp_path)
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert main(["run", "--quiet", str(path)]) == EXIT_INVALID
    assert "report page" in one_clean_line(capsys.readouterr().err.splitlines()[-1])
    assert files(tmp_path) == before


def test_spiral_key_file_named_like_a_report_page_is_refused(tmp_path, capsys):
    text = PIPELINE.replace(
        'columns = ["region", "age"]',
        'columns = ["region"]\n\n[[perturb]]\nstep = "spiral"\ncolumns = ["age", "id2"]\n'
        'bounds = {{ age = [0, 100], id2 = [0, 1000] }}\npath = "out/report.internal.html"',
    )
    people().with_columns(id2=pl.col("id") * 2).write_csv(tmp_path / "people.csv")
    path = write(tmp_path, text=text)
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert "report page" in one_clean_line(capsys.readouterr().err)


def test_an_output_that_is_a_fifo_or_a_socket_is_refused_and_left_as_it_is(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "out" / "ages.csv")
    path = write(tmp_path)
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert run(path) == EXIT_INVALID
    assert "a FIFO (named pipe), not a regular file" in capsys.readouterr().err
    assert (tmp_path / "out" / "ages.csv").is_fifo()
    assert spent(tmp_path) == 0.0
    os.unlink(tmp_path / "out" / "ages.csv")
    with socket.socket(socket.AF_UNIX) as held:
        held.bind(str(tmp_path / "out" / "manifest.json"))
        assert run(path) == EXIT_INVALID
        assert "a socket" in capsys.readouterr().err


def test_a_character_device_as_output_is_refused_before_anything():
    """manifest = "/dev/null" (as root the run would replace the system's /dev/null):
    looked at only, never run, so this test cannot harm the machine if it fails."""
    from polars_ppdm.jobs.config import parse_pipeline
    from polars_ppdm.jobs.paths import path_problems

    doc = {
        "dataset": {"name": "d", "inputs": "d.csv", "epsilon_budget": 1.0, "ledger": "l.duckdb"},
        "secret": {"env": "PPDM_SECRET"},
        "output": {"manifest": "/dev/null"},
    }
    problems = path_problems(parse_pipeline(doc, base=Path("/tmp")), on_disk=True)
    assert any("'/dev/null' is a character device, not a regular file" in p for p in problems)


# ---- 5, 16. steps that cannot run on their columns, damaged inputs: refused before the charge -


PARQUET_COLUMNS = {
    "date": pl.Series([dt.date(2020, 1, 1)] * 300),
    "datetime": pl.Series([dt.datetime(2020, 1, 1)] * 300),
    "decimal": pl.Series([Decimal("1.50")] * 300, dtype=pl.Decimal(10, 2)),
    "float32": pl.Series([0.5] * 300, dtype=pl.Float32),
    "list": pl.Series([[1, 2]] * 300),
    "struct": pl.Series([{"a": 1}] * 300),
    "categorical": pl.Series(["a", "b"] * 150, dtype=pl.Categorical),
    "uint64 text categories": pl.Series([0, 1] * 150, dtype=pl.UInt64),
    "string": pl.Series(["a", "b"] * 150),
}


@pytest.mark.parametrize("kind", list(PARQUET_COLUMNS))
def test_rr_disguise_on_a_column_it_cannot_disguise_fails_plan_and_charges_nothing(tmp_path, capsys, kind):
    """The landed code's plan passed; run reserved epsilon, then exited 2 with it spent."""
    people().with_columns(smoker=PARQUET_COLUMNS[kind]).write_parquet(tmp_path / "people.parquet")
    text = PIPELINE
    if kind == "uint64 text categories":
        text = text.replace("epsilon = 1.0\n", 'epsilon = 1.0\ncategories = ["yes", "no"]\n', 1)
    path = write(tmp_path, input="people.parquet", text=text)
    assert main(["plan", str(path)]) == EXIT_INVALID
    line = one_clean_line(capsys.readouterr().err)
    assert "[[perturb]] 1 rr_disguise(smoker)" in line and "python_udf" not in line
    assert run(path) == EXIT_INVALID
    assert one_clean_line(capsys.readouterr().err) == line.replace("ppdm plan", "ppdm run")
    assert spent(tmp_path) == 0.0 and not (tmp_path / "out" / "table.parquet").exists()


@pytest.mark.parametrize(
    "damage",
    [
        b"id,smoker,region,age\n1,true,north,30\n2,false,south,40,99\n",
        b"id,smoker,region,age\n1,true,caf\xe9,30\n",
    ],
)
def test_a_damaged_csv_is_named_with_exit_4_and_charges_nothing(tmp_path, capsys, damage):
    (tmp_path / "people.csv").write_bytes(damage)
    path = write(tmp_path)
    assert run(path) == EXIT_INPUT
    line = one_clean_line(capsys.readouterr().err)
    assert str(tmp_path / "people.csv") in line and "cannot be read" in line
    assert spent(tmp_path) == 0.0


def test_k_ary_string_without_categories_and_a_missing_secret_fail_plan(tmp_path, capsys):
    """The newcomer's pipeline: plan exited 0 twice; run kept epsilon 3 of 4 spent."""
    people().with_columns(smoker=pl.col("region")).write_csv(tmp_path / "people.csv")
    path = write(tmp_path)
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert "'categories' parameter of rr_disguise" in one_clean_line(capsys.readouterr().err)
    missing = write(tmp_path, secret='file = "no-such.secret"')
    assert main(["plan", str(missing)]) == EXIT_INVALID
    assert "no-such.secret" in one_clean_line(capsys.readouterr().err)


def test_a_value_outside_the_categories_is_refused_before_the_charge_without_the_value(tmp_path, capsys):
    people().with_columns(
        smoker=pl.when(pl.col("id") == 7).then(pl.lit("secret-value")).otherwise(pl.col("region"))
    ).write_csv(tmp_path / "people.csv")
    text = PIPELINE.replace("epsilon = 1.0\n", 'epsilon = 1.0\ncategories = ["north", "south", "east"]\n', 1)
    path = write(tmp_path, text=text)
    assert main(["plan", str(path)]) == EXIT_OK  # plan reads no row
    capsys.readouterr()
    assert run(path) == EXIT_INVALID
    line = one_clean_line(capsys.readouterr().err)
    assert "holds values outside its categories" in line and "secret-value" not in line
    assert spent(tmp_path) == 0.0


def test_a_failure_after_the_reservation_withdraws_it(tmp_path, monkeypatch, capsys):
    """Whatever fails between the reservation and the commit (here a release), nothing
    was published, so nothing stays spent; the earlier outputs stay as they were."""
    path = write(tmp_path)
    assert run(path) == EXIT_OK
    people(seed=3).write_csv(tmp_path / "people.csv")  # a new night: a new run
    before, charged = files(tmp_path), spent(tmp_path)

    def broken(*args, **kwargs):
        msg = "the release failed"
        raise RuntimeError(msg)

    monkeypatch.setattr(run_module, "_release", broken)
    assert run(path) == EXIT_OTHER
    line = one_clean_line(capsys.readouterr().err)
    assert "the release failed" in line and "reservation was withdrawn" in line
    assert files(tmp_path) == before and spent(tmp_path) == pytest.approx(charged)


# ---- 9. a literal secret in the file -------------------------------------------------------


def test_a_literal_secret_as_the_secret_file_is_refused_without_printing_it(tmp_path, capsys):
    path = write(tmp_path, secret=f'file = "{SECRET}"')
    for command in (["plan", str(path)], ["run", "--quiet", str(path)]):
        assert main(command) == EXIT_INVALID
        line = one_clean_line(capsys.readouterr().err)
        assert "a literal secret is refused" in line


# ---- 10, 12. the ledger: a FIFO, a read-only mount ------------------------------------------


@pytest.mark.parametrize("command", ["run", "plan", "ledger"])
def test_a_ledger_that_is_a_fifo_is_refused_without_hanging(tmp_path, command):
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "out" / "ledger.duckdb")
    path = write(tmp_path)
    args = [command, str(path)] if command != "ledger" else [command, "--pipeline", str(path)]
    done = subprocess.run(
        [sys.executable, "-m", "polars_ppdm.jobs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PPDM_SECRET": SECRET},
    )
    assert done.returncode == EXIT_INVALID, done.stderr
    assert "FIFO" in one_clean_line(done.stderr)


def test_the_ledger_is_shown_and_planned_on_a_read_only_mount(tmp_path, monkeypatch, capsys):
    path = write(tmp_path)
    assert run(path) == EXIT_OK
    real = duckdb.connect

    def read_only_mount(database=":memory:", read_only=False, *args, **kwargs):
        if str(database).endswith("ledger.duckdb") and not read_only:
            msg = f'IO Error: Cannot open file "{database}": Read-only file system'
            raise duckdb.IOException(msg)
        return real(database, read_only, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", read_only_mount)
    capsys.readouterr()
    assert main(["ledger", "--pipeline", str(path)]) == EXIT_OK
    assert "people" in capsys.readouterr().out
    assert main(["plan", str(path)]) == EXIT_OK


# ---- 11. a full disk when the ledger records the run ---------------------------------------


def test_a_full_disk_at_the_commit_publishes_nothing_and_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    path = write(tmp_path)
    assert run(path) == EXIT_OK
    people(seed=4).write_csv(tmp_path / "people.csv")
    before, charged = files(tmp_path), spent(tmp_path)

    def full(self, con, *args, **kwargs):
        msg = "IO Error: No space left on device"
        raise duckdb.IOException(msg)

    monkeypatch.setattr(Ledger, "_complete", full)
    assert run(path) == EXIT_OTHER
    line = one_clean_line(capsys.readouterr().err)
    assert "could not be written" in line and "No space left on device" in line
    assert "Nothing was published" in line and "TransactionException" not in line
    assert files(tmp_path) == before  # the manifest still says the earlier run; outputs as they were
    assert spent(tmp_path) == pytest.approx(charged)


# ---- 13. a closed pipe, Ctrl-C --------------------------------------------------------------


def test_ledger_into_a_closed_pipe_is_quiet(tmp_path):
    path = write(tmp_path)
    assert run(path) == EXIT_OK
    done = subprocess.run(
        f"{sys.executable} -m polars_ppdm.jobs ledger --pipeline {path} --json | head -c 1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr == ""


def test_ctrl_c_during_the_run_exits_130_in_one_line_with_nothing_spent(tmp_path, monkeypatch, capsys):
    path = write(tmp_path)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "_write_frame", interrupt)
    assert run(path) == EXIT_INTERRUPTED
    line = one_clean_line(capsys.readouterr().err)
    assert line.startswith("ppdm run: interrupted.") and "nothing spent" in line
    assert spent(tmp_path) == 0.0 and not list((tmp_path / "out").glob(".*.tmp"))


# ---- 14, 15. huge and deep files, a byte-order mark --------------------------------------


def test_a_deeply_nested_pipeline_fails_in_one_line(tmp_path, capsys):
    path = tmp_path / "pipeline.toml"
    path.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert "nested too deeply" in one_clean_line(capsys.readouterr().err)


def test_a_huge_value_is_not_echoed(tmp_path, capsys):
    path = write(tmp_path)
    path.write_text(
        path.read_text().replace("epsilon_budget = 10.0", f'epsilon_budget = "{"9" * 5_000_000}"')
    )
    assert main(["plan", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert len(err) < 5_000 and "epsilon_budget" in one_clean_line(err)


def test_a_secret_file_with_a_byte_order_mark_is_read(tmp_path):
    """Saved by an editor as "UTF-8 with BOM": refused as "a string of 65 characters"."""
    import json

    from polars_ppdm import Secret
    from polars_ppdm.secret_files import write_secret_text

    write_secret_text(tmp_path / "ppdm.secret", "\ufeff" + SECRET + "\r\n")
    path = write(tmp_path, secret='file = "ppdm.secret"')
    assert run(path) == EXIT_OK
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["secret_fingerprint"] == Secret.from_hex(SECRET).fingerprint()


# ---- 17. a budget edited in the file -----------------------------------------------------


def test_a_budget_raised_in_the_file_fails_plan_until_the_ledger_is_told(tmp_path, capsys):
    path = write(tmp_path, budget=2.0)
    assert run(path) == EXIT_OK
    path.write_text(path.read_text().replace("epsilon_budget = 2.0", "epsilon_budget = 4.0"))
    people(seed=5).write_csv(tmp_path / "people.csv")
    capsys.readouterr()
    assert main(["plan", str(path)]) == EXIT_INVALID
    line = one_clean_line(capsys.readouterr().err)
    assert "says 4 but the ledger" in line and "--set-budget 4" in line and "Ledger.set_budget" not in line
    ledger = str(tmp_path / "out" / "ledger.duckdb")
    assert main(["ledger", "--ledger", ledger, "--dataset", "people", "--set-budget", "4"]) == EXIT_OK
    assert main(["plan", str(path)]) == EXIT_OK
    assert run(path) == EXIT_OK and spent(tmp_path) == pytest.approx(3.0)


def test_plan_exits_3_when_run_would_refuse_the_budget_and_0_for_an_identical_rerun(tmp_path, capsys):
    path = write(tmp_path, budget=2.0)
    assert run(path) == EXIT_OK
    assert main(["plan", str(path)]) == EXIT_OK  # identical: spends nothing
    assert "identical re-run" in capsys.readouterr().out
    people(seed=6).write_csv(tmp_path / "people.csv")
    assert main(["plan", str(path)]) == EXIT_BUDGET
    assert run(path) == EXIT_BUDGET


def test_ppdm_report_never_writes_a_page_over_a_fifo(tmp_path, capsys):
    path = write(tmp_path)
    assert run(path) == EXIT_OK
    os.mkfifo(tmp_path / "out" / "report.public.html")
    assert main(["report", str(path)]) == EXIT_INVALID
    assert "a FIFO" in one_clean_line(capsys.readouterr().err)
    assert (tmp_path / "out" / "report.public.html").is_fifo()


def test_a_pipeline_file_that_is_a_fifo_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "pipeline.toml")
    done = subprocess.run(
        [sys.executable, "-m", "polars_ppdm.jobs", "plan", str(tmp_path / "pipeline.toml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_INPUT
    assert "not a regular file" in one_clean_line(done.stderr)


@pytest.mark.parametrize(
    ("release", "problem"),
    [
        ('step = "dp_histogram"\ncolumns = ["age"]\nbounds = { age = [-1e308, 1e308] }\nbins = 10', "finite"),
        (
            'step = "dp_quadtree"\ncolumns = ["age", "id"]\nbounds = { age = [-1e308, 1e308], id = [0, 1000] }',
            "finite",
        ),
        (
            'step = "dp_kmeans"\ncolumns = ["age", "id"]\nk = 2\nbounds = { age = [0, 100], id = [-1e308, 1e308] }',
            "finite",
        ),
    ],
)
def test_a_dp_release_that_its_function_refuses_fails_plan_and_charges_nothing(
    tmp_path, capsys, release, problem
):
    """Every check a DP release makes from the schema and its parameters is made by plan
    and before the reservation (the landed plan checked only the dtypes)."""
    text = PIPELINE.replace(
        'step = "dp_histogram"\ncolumns = ["age"]\nbounds = {{ age = [0, 100] }}\nbins = 10',
        release.replace("{", "{{").replace("}", "}}"),
    )
    path = write(tmp_path, text=text)
    assert main(["plan", str(path)]) == EXIT_INVALID
    line = one_clean_line(capsys.readouterr().err)
    assert "[[release]] 1" in line and problem in line
    assert run(path) == EXIT_INVALID
    assert spent(tmp_path) == 0.0


def test_a_column_named_like_a_release_output_fails_plan_and_charges_nothing(tmp_path, capsys):
    """rr_support on a column named `frequency` silently overwrote its values (you could
    not tell which share was True); `observed` failed after the charge."""
    for name in ("frequency", "observed"):
        folder = tmp_path / name
        folder.mkdir()
        people().rename({"smoker": name}).write_csv(folder / "people.csv")
        text = PIPELINE.replace('columns = ["smoker"]', f'columns = ["{name}"]').replace(
            'step = "dp_histogram"\ncolumns = ["age"]\nbounds = {{ age = [0, 100] }}\nbins = 10\nepsilon = 0.5',
            f'step = "rr_support"\ncolumns = ["{name}"]',
        )
        path = write(folder, text=text)
        assert main(["plan", str(path)]) == EXIT_INVALID
        line = one_clean_line(capsys.readouterr().err)
        assert "[[release]] 1 rr_support" in line and name in line and "rename" in line
        assert run(path) == EXIT_INVALID
        assert name in one_clean_line(capsys.readouterr().err)
        assert spent(folder) == 0.0


def test_dp_group_by_interval_columns_clashing_with_a_group_column_fail_plan(tmp_path, capsys):
    people().rename({"region": "count_sd"}).write_csv(tmp_path / "people.csv")
    text = PIPELINE.replace('columns = ["region", "age"]', 'columns = ["count_sd", "age"]').replace(
        'step = "dp_histogram"\ncolumns = ["age"]\nbounds = {{ age = [0, 100] }}\nbins = 10\nepsilon = 0.5',
        'step = "dp_group_by"\nby = ["count_sd"]\naggregates = [{{ aggregate = "count" }}]\nepsilon = 0.5\n'
        'intervals = true\npublic_groups = [{{ count_sd = "north" }}]',
    )
    path = write(tmp_path, text=text)
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert "count_sd" in one_clean_line(capsys.readouterr().err)
    assert run(path) == EXIT_INVALID and spent(tmp_path) == 0.0


def test_a_value_that_does_not_parse_is_not_echoed(tmp_path, capsys):
    """Found by a new user: the parser's message quoted the value (`SECRETVALUE`)."""
    people().with_columns(pl.col("age").cast(pl.String)).with_columns(
        age=pl.when(pl.col("id") == 250).then(pl.lit("SECRETVALUE")).otherwise(pl.col("age"))
    ).write_csv(tmp_path / "people.csv")
    path = write(tmp_path)
    assert run(path) in (EXIT_INPUT, EXIT_INVALID)
    line = one_clean_line(capsys.readouterr().err)
    assert "SECRETVALUE" not in line and spent(tmp_path) == 0.0


# ---- a null key under a disguised value ----------------------------------------------------


def test_null_key_under_a_disguised_value_names_the_key_column_and_publishes_nothing(tmp_path, capsys):
    # The Boolean rr step runs as a compiled Polars plugin where the extension is
    # installed: its refusal must reach the user as the library's own one line.
    frame = people().with_columns(pl.when(pl.col("id") == 5).then(None).otherwise(pl.col("id")).alias("id"))
    frame.write_csv(tmp_path / "people.csv")
    assert run(write(tmp_path)) == 2
    line = one_clean_line(capsys.readouterr().err)
    assert "The key column 'id' of rr_disguise has null values in rows that need a random draw" in line
    assert "plugin" not in line and ".so" not in line
    assert not (tmp_path / "out" / "table.parquet").exists()
    assert spent(tmp_path) == 0.0
