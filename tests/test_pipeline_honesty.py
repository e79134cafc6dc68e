"""`ppdm run` refuses what would be charged less than it costs (issue 26): a re-run of a
recorded run id whose outputs differ, whole-record randomized response without a finite
epsilon, guessable secrets, and units with more distinct values than declared."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import polars as pl
import pytest
from test_pipeline_run import SECRET, copy_example, outputs

from polars_ppdm.jobs import run as run_module
from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.config import NO_FINITE_EPSILON
from polars_ppdm.jobs.errors import EXIT_CHANGED, EXIT_INVALID, EXIT_OK
from polars_ppdm.ledger import Ledger, format_ledger

SECRET_HEX = os.urandom(32).hex()  # a strong secret, fresh per session


@pytest.fixture
def example(tmp_path, monkeypatch):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    return lambda name: copy_example(name, tmp_path)


def run(path: Path) -> int:
    return main(["run", "--quiet", "--no-report", str(path)])


# ---- 2. a recorded run id whose releases differ is refused --------------------------------


def _replaced_read(monkeypatch, path: Path) -> None:
    """The input is replaced between its fingerprint and its read: the run scans other
    data than it fingerprinted (the ages of the survey, all shifted by one year)."""
    source = path.parent / "survey.csv"
    other = path.parent / "replaced.csv"
    pl.read_csv(source).with_columns(pl.col("age") + 1).write_csv(other)
    real_scan = run_module.scan
    monkeypatch.setattr(run_module, "scan", lambda files, fmt: real_scan([other], fmt))


def test_identical_rerun_is_free_and_checked_against_the_recorded_outputs(example):
    path = example("survey")
    assert run(path) == EXIT_OK
    first = outputs(path.parent)
    book = Ledger(path.parent / "out" / "ledger.duckdb")
    run_id = json.loads((path.parent / "out" / "manifest.json").read_text())["run_id"]
    recorded = book.recorded_outputs(run_id)
    assert recorded is not None and set(recorded) == {"perturbed table", "[[release]] 1 rr_support(smoker)"}
    spent = book.spent("survey")
    assert run(path) == EXIT_OK  # identical: free, and its outputs match the recorded ones
    assert outputs(path.parent) == first
    assert book.spent("survey") == spent


def test_rerun_whose_input_was_replaced_after_its_fingerprint_is_refused(example, monkeypatch, capsys):
    path = example("survey")
    assert run(path) == EXIT_OK
    first = outputs(path.parent)
    manifest = (path.parent / "out" / "manifest.json").read_bytes()
    book = Ledger(path.parent / "out" / "ledger.duckdb")
    before = book.table("survey")
    _replaced_read(monkeypatch, path)
    capsys.readouterr()
    assert run(path) == EXIT_CHANGED
    err = capsys.readouterr().err
    assert "perturbed table now has other bits" in err and "Refused: nothing was published" in err
    assert outputs(path.parent) == first  # nothing published
    assert (path.parent / "out" / "manifest.json").read_bytes() == manifest
    assert book.table("survey").equals(before)  # nothing charged, nothing changed
    assert not [p for p in (path.parent / "out").iterdir() if p.name.endswith(".tmp")]


def test_a_run_recorded_by_an_older_version_is_checked_by_its_manifest(example, monkeypatch):
    path = example("survey")
    assert run(path) == EXIT_OK
    ledger = path.parent / "out" / "ledger.duckdb"
    with duckdb.connect(str(ledger)) as con:  # as an older polars_ppdm left it: no outputs recorded
        con.execute("DELETE FROM ppdm_outputs")
        con.execute("UPDATE ppdm_runs SET outputs_recorded = NULL")
    assert run(path) == EXIT_OK  # its manifest is the one the ledger names: checked by it
    with duckdb.connect(str(ledger)) as con:
        con.execute("DELETE FROM ppdm_outputs")
        con.execute("UPDATE ppdm_runs SET outputs_recorded = NULL")
    _replaced_read(monkeypatch, path)
    assert run(path) == EXIT_CHANGED  # checked by the manifest, and differs
    (path.parent / "out" / "manifest.json").unlink()
    monkeypatch.undo()
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    assert run(path) == EXIT_CHANGED  # cannot be checked at all: refused, not free


def test_old_ledgers_stay_readable_and_are_upgraded_by_a_run(tmp_path, example):
    path = example("survey")
    ledger = path.parent / "out" / "ledger.duckdb"
    ledger.parent.mkdir()
    Ledger(ledger).open_dataset("survey", 6.0)  # a version-1 file, as older releases wrote
    Ledger(ledger).reserve("survey", "older-run", [("x", 0.5)])
    with duckdb.connect(str(ledger)) as con:
        assert con.execute("SELECT max(version) FROM ppdm_ledger_schema").fetchone() == (1,)
    assert Ledger(ledger).recorded_outputs("older-run") is None
    assert run(path) == EXIT_OK
    with duckdb.connect(str(ledger)) as con:
        assert con.execute("SELECT max(version) FROM ppdm_ledger_schema").fetchone() == (6,)
    assert Ledger(ledger).spent("survey") == pytest.approx(3.0)
    # The unit is recorded from this run on (what the older runs spent it per is unknown).
    assert Ledger(ledger).status("survey").privacy_unit == "column 'respondent_id'"
    assert Ledger(ledger).recorded_outputs("older-run") is None


# ---- 3. whole-record randomized response --------------------------------------------------


def _write_pipeline(folder: Path, perturb: str, *, key: str | None = "id", rows: dict | None = None) -> Path:
    rows = rows or {"id": [1, 2, 3, 4, 5, 6], "a": [0, 1, 1, 0, 1, 0], "b": [1, 1, 0, 0, 1, 0]}
    pl.DataFrame(rows).write_parquet(folder / "data.parquet")
    path = folder / "pipeline.toml"
    path.write_text(
        f"""
[dataset]
name = "d"
inputs = ["data.parquet"]
{f'key = "{key}"' if key else ""}
epsilon_budget = 5.0
ledger = "out/ledger.duckdb"

[secret]
env = "PPDM_SECRET"

{perturb}

[[perturb]]
step = "drop"
columns = ["id"]

[output]
table = "out/table.parquet"
manifest = "out/manifest.json"
"""
    )
    return path


DP_HISTOGRAM = """
[[perturb]]
step = "keep"
columns = ["a", "b", "visit"]

[[release]]
step = "dp_histogram"
columns = ["a"]
bounds = { a = [0, 2] }
bins = 2
epsilon = 1.0
output = "out/histogram.parquet"
"""


@pytest.mark.parametrize("second", ["visit", None], ids=["another key", "no key"])
def test_a_dataset_spends_its_budget_per_one_privacy_unit(tmp_path, monkeypatch, capsys, second):
    """The attack: the same dataset's budget spent per person, then per visit (or per row):
    a person with many visits would have spent many times the epsilon the ledger shows.
    The second unit is refused by the plan and the run, nothing spent."""
    monkeypatch.setenv("PPDM_SECRET", SECRET_HEX)
    rows = {"id": [1, 1, 1, 2, 3, 4], "visit": [1, 2, 3, 4, 5, 6], "a": [0, 1, 1, 0, 1, 0], "b": [1, 1, 0, 0, 1, 0]}
    path = _write_pipeline(tmp_path, DP_HISTOGRAM, key="id", rows=rows)
    assert main(["run", "--quiet", str(path)]) == EXIT_OK
    ledger = Ledger(tmp_path / "out" / "ledger.duckdb")
    assert ledger.status("d").privacy_unit == "column 'id'"
    assert ledger.spent("d") == pytest.approx(1.0)
    path.write_text(path.read_text().replace('key = "id"', f'key = "{second}"' if second else ""))
    for command in (["plan"], ["run", "--quiet"]):
        assert main([*command, str(path)]) == EXIT_INVALID
        err = capsys.readouterr().err
        unit = f"column {second!r}" if second else "each row"
        assert f"counts its budget per privacy unit column 'id', and this run would spend it per {unit}" in err
    assert ledger.spent("d") == pytest.approx(1.0)
    assert "remaining 4; per privacy unit: column 'id'" in format_ledger(ledger.table(), ledger.datasets())


WHOLE = """
[[perturb]]
step = "rr_disguise"
columns = ["a", "b"]
mode = "whole_record"
p = 0.8
"""


def test_whole_record_is_refused_without_saying_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PPDM_SECRET", SECRET_HEX)
    path = _write_pipeline(tmp_path, WHOLE)
    for command in (["plan"], ["run", "--quiet"]):
        assert main([*command, str(path)]) == EXIT_INVALID
        err = capsys.readouterr().err
        assert "whole_record over 2 columns has no finite epsilon" in err
        assert "deniable only up to its complement" in err and "accept_no_finite_epsilon = true" in err
    assert not (tmp_path / "out").exists()


def test_whole_record_accepted_is_said_as_it_is_and_never_charged_as_one_coin(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PPDM_SECRET", SECRET_HEX)
    path = _write_pipeline(tmp_path, WHOLE + "accept_no_finite_epsilon = true\n")
    assert main(["plan", "--json", str(path)]) == EXIT_OK
    plan = json.loads(capsys.readouterr().out)
    step = plan["steps"][0]
    assert step["epsilon"] is None and NO_FINITE_EPSILON in step["charge"]
    assert plan["epsilon"] == 0
    assert main(["plan", str(path)]) == EXIT_OK
    assert "the record is deniable only up to its complement" in capsys.readouterr().out
    assert main(["run", "--quiet", str(path)]) == EXIT_OK
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["steps"][0]["epsilon"] is None and NO_FINITE_EPSILON in manifest["steps"][0]["charge"]
    assert manifest["epsilon"]["releases"] == []
    assert Ledger(tmp_path / "out" / "ledger.duckdb").spent("d") == 0
    page = (tmp_path / "out" / "report.public.html").read_text()
    assert "deniable only up to its complement" in page and "no finite epsilon" in page


def test_accept_no_finite_epsilon_only_where_there_is_none(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PPDM_SECRET", SECRET_HEX)
    path = _write_pipeline(
        tmp_path, WHOLE.replace('mode = "whole_record"', "") + "accept_no_finite_epsilon = true\n"
    )
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert "'accept_no_finite_epsilon' is only for mode" in capsys.readouterr().err


# ---- 4. guessable secrets -------------------------------------------------------------------

PER_ATTRIBUTE = """
[[perturb]]
step = "rr_disguise"
columns = ["a", "b"]
epsilon = 1.0
"""


@pytest.mark.parametrize("weak", ["00" * 32, "ab" * 16, "01020304" * 8])
def test_guessable_env_secret_is_refused_before_anything(tmp_path, monkeypatch, capsys, weak):
    monkeypatch.setenv("PPDM_SECRET", weak)
    path = _write_pipeline(tmp_path, PER_ATTRIBUTE)
    assert main(["run", "--quiet", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "the environment variable 'PPDM_SECRET' holds a guessable secret" in err
    assert weak not in err and weak[:8] not in err
    assert not (tmp_path / "out").exists()  # no ledger, nothing reserved or written
    # plan refuses what run refuses, with the same words and exit status (a scheduler gates on it)
    assert main(["plan", str(path)]) == EXIT_INVALID
    plan_err = capsys.readouterr().err
    assert "holds a guessable secret" in plan_err and weak[:8] not in plan_err


def test_guessable_secret_file_is_refused_naming_the_file(tmp_path, monkeypatch, capsys):
    from polars_ppdm.secret_files import write_secret_text

    path = _write_pipeline(tmp_path, PER_ATTRIBUTE)
    path.write_text(path.read_text().replace('env = "PPDM_SECRET"', 'file = "ppdm.secret"'))
    write_secret_text(tmp_path / "ppdm.secret", "5a" * 32)
    assert main(["run", "--quiet", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "the secret file" in err and "ppdm.secret" in err and "guessable" in err and "5a5a" not in err
    write_secret_text(tmp_path / "ppdm.secret", SECRET_HEX, overwrite=True)
    assert main(["run", "--quiet", "--no-report", str(path)]) == EXIT_OK


# ---- 5. randomized response charged per distinct value ----------------------------------------

MANY = {"id": [1, 1, 2, 3, 3, 3], "a": [0, 1, 1, 0, 0, 0], "b": [1, 1, 0, 0, 0, 0]}


def test_a_unit_with_more_distinct_values_than_declared_is_refused_before_reserving(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("PPDM_SECRET", SECRET_HEX)
    path = _write_pipeline(tmp_path, PER_ATTRIBUTE, rows=MANY)  # unit 1 has a = 0 and a = 1
    assert main(["run", "--quiet", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert (
        "field 'max_values_per_unit': some privacy unit ('id') has more distinct values of column 'a'" in err
    )
    assert "column 'b'" not in err  # b has one value per unit
    assert "Nothing was reserved" in err and " 2 " not in err  # no count from the data
    assert Ledger(tmp_path / "out" / "ledger.duckdb").spent("d") == 0
    assert not (tmp_path / "out" / "table.parquet").exists()


@pytest.mark.parametrize(
    ("ids", "dtype"),
    [([1.0, 1.0, 2.0, 3.0, 3.0, 3.0], "Float64"), ([[1], [1], [2], [3], [3], [3]], "List(Int64)")],
)
def test_a_privacy_unit_that_is_neither_integer_nor_string_is_refused_before_reading(
    tmp_path, monkeypatch, capsys, ids, dtype
):
    # Every step keys its draws by the unit's integer or hashed string; a float unit
    # would reach the per-unit check and the steps first (a List key panicked Polars 1.34's hash).
    monkeypatch.setenv("PPDM_SECRET", SECRET_HEX)
    path = _write_pipeline(tmp_path, PER_ATTRIBUTE, rows={**MANY, "id": ids})
    for command in ("plan", "run"):
        assert (
            main([command, "--quiet", str(path)] if command == "run" else [command, str(path)])
            == EXIT_INVALID
        )
        err = capsys.readouterr().err
        assert (
            "[dataset], field 'key': the privacy unit's column 'id' must be an integer or string column"
            in err
        )
        assert f"Got dtype {dtype} instead." in err
    assert not (tmp_path / "out" / "table.parquet").exists()
    assert (
        not (tmp_path / "out" / "ledger.duckdb").exists()
        or Ledger(tmp_path / "out" / "ledger.duckdb").spent("d") == 0
    )


def test_declared_values_per_unit_are_charged(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PPDM_SECRET", SECRET_HEX)
    path = _write_pipeline(tmp_path, PER_ATTRIBUTE + "max_values_per_unit = 2\n", rows=MANY)
    assert main(["plan", "--json", str(path)]) == EXIT_OK
    plan = json.loads(capsys.readouterr().out)
    assert plan["epsilon"] == pytest.approx(4.0)  # (1 + 1) per distinct value x 2
    assert "max_values_per_unit = 2 (a declared public bound)" in plan["steps"][0]["charge"]
    assert main(["run", "--quiet", "--no-report", str(path)]) == EXIT_OK
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["epsilon"]["spent_by_this_run"] == pytest.approx(4.0)
    assert "declared public bound" in manifest["steps"][0]["charge"]
    assert Ledger(tmp_path / "out" / "ledger.duckdb").spent("d") == pytest.approx(4.0)


def test_max_values_per_unit_needs_a_privacy_unit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PPDM_SECRET", SECRET_HEX)
    path = _write_pipeline(tmp_path, PER_ATTRIBUTE + "max_values_per_unit = 2\n", key=None)
    path.write_text(path.read_text().replace('[[perturb]]\nstep = "drop"\ncolumns = ["id"]', ""))
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert "no privacy unit ([dataset] key)" in capsys.readouterr().err


def test_old_pipelines_keep_their_run_ids(tmp_path):
    from polars_ppdm.jobs.config import load_pipeline

    path = _write_pipeline(tmp_path, PER_ATTRIBUTE)
    step = load_pipeline(path).canonical()["perturb"][0]
    assert "accept_no_finite_epsilon" not in step and "max_values_per_unit" not in step
