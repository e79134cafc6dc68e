"""Scheduled jobs in zCDP: rho budgets in the ledger, Gaussian steps, and a continual release
night after night (`ppdm run --as-of`), with the attacks a nightly job invites."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from polars_ppdm.dp.zcdp import rho_for, rho_to_epsilon
from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.errors import EXIT_BUDGET, EXIT_INVALID, EXIT_OK
from polars_ppdm.ledger import Ledger

SECRET = "5f0d2c1e9a8b7c6d5e4f30211a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"

HEAD = """
[dataset]
name = "events"
inputs = "events.parquet"
key = "person"
{budget}
ledger = "ledger.duckdb"

[secret]
env = "PPDM_TEST_SECRET"

[output]
manifest = "out/manifest.json"
"""

CONTINUAL = """
[[release]]
step = "dp_continual_counts"
by = "region"
period = "night"
horizon = {horizon}
rho = {rho}
max_contributions = 5
public_groups = [{{region = "n"}}, {{region = "s"}}, {{region = "e"}}]
output = "out/counts.parquet"
"""

HISTOGRAM = """
[[release]]
step = "dp_histogram"
columns = ["night"]
bounds = {{night = [0, 40]}}
bins = 40
{noise}
max_contributions = 5
output = "out/hist.parquet"
"""


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("PPDM_TEST_SECRET", SECRET)


def _events(folder: Path, nights: int = 40, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n = 100 * nights
    pl.DataFrame(
        {
            "person": rng.integers(0, 800, n),
            "region": rng.choice(["n", "s", "e"], n),
            "night": rng.integers(0, nights, n),
        }
    ).write_parquet(folder / "events.parquet")


def _pipeline(folder: Path, budget: str = "rho_budget = 1.0", releases: str | None = None, **kwargs) -> Path:
    releases = (
        CONTINUAL.format(horizon=kwargs.get("horizon", 365), rho=kwargs.get("rho", 0.25))
        + HISTOGRAM.format(noise='mechanism = "gaussian"\nrho = 0.01')
        if releases is None
        else releases
    )
    path = folder / "pipeline.toml"
    path.write_text(HEAD.format(budget=budget) + releases)
    if not (folder / "events.parquet").exists():
        _events(folder)
    return path


def _run(path: Path, *extra: str) -> int:
    return main(["run", "--quiet", "--no-report", *extra, str(path)])


def test_a_rho_budget_is_charged_in_rho_and_shown_as_epsilon_delta(tmp_path, capsys):
    path = _pipeline(tmp_path)
    assert main(["plan", "--as-of", "10", "--json", str(path)]) == EXIT_OK
    plan = json.loads(capsys.readouterr().out)
    assert plan["unit"] == "rho" and plan["epsilon"] == pytest.approx(0.26)
    assert plan["epsilon_spent_after"] == pytest.approx(rho_to_epsilon(0.26, 1e-6))
    assert _run(path, "--as-of", "10") == EXIT_OK
    book = Ledger(tmp_path / "ledger.duckdb")
    held = book.status("events")
    assert (held.accounting, held.unit, held.epsilon, held.spent) == ("zcdp", "rho", 1.0, pytest.approx(0.26))
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["rho"]["total"] == pytest.approx(0.26)
    assert manifest["steps"][0]["periods_published"] == [0, 9]  # --as-of 10
    assert manifest["rho"]["epsilon_of_this_run"] == pytest.approx(rho_to_epsilon(0.26, 1e-6))
    assert main(["ledger", "--ledger", str(tmp_path / "ledger.duckdb")]) == EXIT_OK
    text = capsys.readouterr().out
    assert "dataset 'events' (zCDP): rho budget 1, spent 0.26" in text


def test_an_epsilon_delta_budget_in_zcdp_is_converted_explicitly(tmp_path):
    path = _pipeline(tmp_path, 'epsilon_budget = 8.0\ndelta_budget = 1e-6\naccounting = "zcdp"')
    assert _run(path, "--as-of", "10") == EXIT_OK
    held = Ledger(tmp_path / "ledger.duckdb").status("events")
    assert held.accounting == "zcdp" and held.epsilon == pytest.approx(rho_for(8.0, 1e-6))
    assert held.delta == 1e-6


def test_a_gaussian_step_needs_a_zcdp_budget(tmp_path, capsys):
    path = _pipeline(tmp_path, "epsilon_budget = 5.0")
    assert _run(path, "--as-of", "10") == EXIT_INVALID
    err = capsys.readouterr().err
    assert "field 'rho': a continual release costs a rho (zCDP)" in err
    assert "field 'mechanism': \"gaussian\" costs a rho (zCDP)" in err
    assert not (tmp_path / "ledger.duckdb").exists()


def test_a_laplace_step_enters_a_zcdp_budget_as_epsilon_squared_over_two(tmp_path):
    path = _pipeline(tmp_path, releases=HISTOGRAM.format(noise="epsilon = 0.5"))
    assert _run(path) == EXIT_OK
    assert Ledger(tmp_path / "ledger.duckdb").status("events").spent == pytest.approx(0.125)


def test_the_accounting_of_a_dataset_never_changes(tmp_path, capsys):
    path = _pipeline(tmp_path, releases=HISTOGRAM.format(noise="epsilon = 0.5"))
    assert _run(path) == EXIT_OK
    _pipeline(tmp_path, "epsilon_budget = 5.0", releases=HISTOGRAM.format(noise="epsilon = 0.5"))
    assert _run(path) == EXIT_INVALID
    assert "counts dataset 'events' in rho; its spends cannot be converted" in capsys.readouterr().err


def test_the_tree_is_charged_once_over_the_nights(tmp_path):
    path = _pipeline(tmp_path)
    book = Ledger(tmp_path / "ledger.duckdb")
    assert _run(path, "--as-of", "10") == EXIT_OK
    first = pl.read_parquet(tmp_path / "out" / "counts.parquet")
    assert first["period"].max() == 9 and first.height == 30
    assert _run(path, "--as-of", "11") == EXIT_OK  # the tree: nothing; the histogram: 0.01
    assert book.status("events").spent == pytest.approx(0.27)
    tree = book.tree(
        "events", f"[[release]] 1 dp_continual_counts(region) -> {tmp_path / 'out' / 'counts.parquet'}"
    )
    assert tree is not None and tree[1].height > 0
    # The earlier night again: an identical re-run (same inputs, same --as-of) spends
    # nothing and publishes the same bits.
    assert _run(path, "--as-of", "10") == EXIT_OK
    assert pl.read_parquet(tmp_path / "out" / "counts.parquet").equals(first)
    assert book.status("events").spent == pytest.approx(0.27)


def test_changed_rows_of_a_published_night_are_refused(tmp_path, capsys):
    """The attack: publish night 9, add one person's events to night 5 (a late arrival) or
    delete night 5's rows, publish again. Nodes redrawn over the changed data would show
    the change exactly, and after a deletion later events would take the deleted ones'
    place beyond max_contributions: refused, nothing published or spent."""
    path = _pipeline(tmp_path, releases=CONTINUAL.format(horizon=365, rho=0.25))
    assert _run(path, "--as-of", "10") == EXIT_OK
    first = pl.read_parquet(tmp_path / "out" / "counts.parquet")
    events = pl.read_parquet(tmp_path / "events.parquet")
    spent = Ledger(tmp_path / "ledger.duckdb").status("events").spent
    late = pl.DataFrame({"person": [9_999] * 3, "region": ["n"] * 3, "night": [5] * 3})
    for changed in (pl.concat([events, late]), events.filter(pl.col("night") != 5)):
        changed.write_parquet(tmp_path / "events.parquet")
        assert _run(path, "--as-of", "11") == EXIT_INVALID
        assert "the rows of some periods already published are not the rows" in capsys.readouterr().err
        assert pl.read_parquet(tmp_path / "out" / "counts.parquet").equals(first)
        assert Ledger(tmp_path / "ledger.duckdb").status("events").spent == spent
    # Late events given the next period to publish are fine.
    pl.concat([events, late.with_columns(night=pl.lit(10, dtype=pl.Int64))]).write_parquet(
        tmp_path / "events.parquet"
    )
    assert _run(path, "--as-of", "11") == EXIT_OK


def test_a_late_run_fills_the_nights_it_missed(tmp_path):
    path = _pipeline(tmp_path, releases=CONTINUAL.format(horizon=365, rho=0.25))
    assert _run(path, "--as-of", "3") == EXIT_OK
    assert _run(path, "--as-of", "9") == EXIT_OK  # nights 3..7 were never run
    table = pl.read_parquet(tmp_path / "out" / "counts.parquet")
    assert sorted(table["period"].unique().to_list()) == list(range(9))
    for _, group in table.group_by("region"):
        assert group["running_total"].to_numpy() == pytest.approx(np.cumsum(group["count"].to_numpy()))


@pytest.mark.parametrize(
    ("as_of", "message"),
    [("0", "no period is complete"), ("366", "horizon of 365 periods is over")],
)
def test_periods_outside_the_horizon_are_refused(tmp_path, capsys, as_of, message):
    path = _pipeline(tmp_path, releases=CONTINUAL.format(horizon=365, rho=0.25))
    assert _run(path, "--as-of", as_of) == EXIT_INVALID
    assert message in capsys.readouterr().err
    assert (
        not (tmp_path / "ledger.duckdb").exists()
        or Ledger(tmp_path / "ledger.duckdb").status("events").spent == 0
    )


def test_integer_periods_need_as_of(tmp_path, capsys):
    path = _pipeline(tmp_path, releases=CONTINUAL.format(horizon=365, rho=0.25))
    assert _run(path) == EXIT_INVALID
    assert "give the current period's number, `ppdm run --as-of N`" in capsys.readouterr().err


def test_a_release_keeps_its_parameters_over_its_horizon(tmp_path, capsys):
    path = _pipeline(tmp_path, releases=CONTINUAL.format(horizon=365, rho=0.25))
    assert _run(path, "--as-of", "5") == EXIT_OK
    spent = Ledger(tmp_path / "ledger.duckdb").status("events").spent
    _pipeline(tmp_path, releases=CONTINUAL.format(horizon=365, rho=0.1))
    assert _run(path, "--as-of", "6") == EXIT_INVALID
    assert "keeps this continual release with other parameters" in capsys.readouterr().err
    assert Ledger(tmp_path / "ledger.duckdb").status("events").spent == spent


def test_a_budget_too_short_for_the_tree_is_refused_before_any_read(tmp_path, capsys):
    path = _pipeline(tmp_path, "rho_budget = 0.1", releases=CONTINUAL.format(horizon=365, rho=0.25))
    assert _run(path, "--as-of", "5") == EXIT_INVALID  # one run could never fit: the file is refused
    assert "spends rho 0.25, more than the whole budget [dataset] rho_budget = 0.1" in capsys.readouterr().err
    path = _pipeline(tmp_path, "rho_budget = 0.3", releases=CONTINUAL.format(horizon=365, rho=0.25))
    assert _run(path, "--as-of", "5") == EXIT_OK
    other = tmp_path / "other"
    other.mkdir()
    os.link(tmp_path / "events.parquet", other / "events.parquet")
    second = other / "pipeline.toml"
    second.write_text(
        (HEAD.format(budget="rho_budget = 0.3") + CONTINUAL.format(horizon=100, rho=0.25)).replace(
            '"ledger.duckdb"', repr(str(tmp_path / "ledger.duckdb")).replace("'", '"')
        )
    )
    assert _run(second, "--as-of", "5") == EXIT_BUDGET  # another tree does not fit what is left


def test_ppdm_ledger_sets_a_zcdp_budget_in_rho(tmp_path, capsys):
    path = _pipeline(tmp_path, releases=HISTOGRAM.format(noise='mechanism = "gaussian"\nrho = 0.01'))
    assert _run(path) == EXIT_OK
    book = tmp_path / "ledger.duckdb"
    assert main(["ledger", "--ledger", str(book), "--dataset", "events", "--set-budget", "2.5"]) == EXIT_OK
    assert Ledger(book).status("events")[:2] == (2.5, pytest.approx(0.01))
    assert main(["ledger", "--ledger", str(book), "--dataset", "events", "--set-budget", "0.001"]) != EXIT_OK
    assert (
        "at least what dataset 'events' has spent, 0.01 (spent rho cannot be unspent)"
        in capsys.readouterr().err
    )


def test_the_run_says_what_it_spent_in_rho(tmp_path, capsys):
    path = _pipeline(tmp_path)
    assert main(["run", "--no-report", "--as-of", "10", str(path)]) == EXIT_OK
    assert "spent rho 0.26 (0.74 left of 1)" in capsys.readouterr().out


def test_as_of_may_not_go_back_over_new_data(tmp_path, capsys):
    """Found by a new user: --as-of 1 after --as-of 4 overwrote the published table with
    period 0 alone (and charged the nightly steps again). Refused unless it is the
    identical earlier run."""
    path = _pipeline(tmp_path)
    assert _run(path, "--as-of", "4") == EXIT_OK
    assert _run(path, "--as-of", "5") == EXIT_OK
    published = pl.read_parquet(tmp_path / "out" / "counts.parquet")
    assert _run(path, "--as-of", "4") == EXIT_OK  # the identical earlier run: reproduced, free
    assert _run(path, "--as-of", "5") == EXIT_OK
    events = pl.read_parquet(tmp_path / "events.parquet")
    extra = pl.DataFrame({"person": [1], "region": ["n"], "night": [39]}, schema=events.schema)
    pl.concat([events, extra]).write_parquet(tmp_path / "events.parquet")
    spent = Ledger(tmp_path / "ledger.duckdb").status("events").spent
    assert _run(path, "--as-of", "3") == EXIT_INVALID
    assert "has published periods up to 4; --as-of would publish only up to 2" in capsys.readouterr().err
    assert pl.read_parquet(tmp_path / "out" / "counts.parquet").equals(published)
    assert Ledger(tmp_path / "ledger.duckdb").status("events").spent == spent


def test_the_budget_change_a_refusal_suggests_works(tmp_path, capsys):
    """Found by a new user: an (epsilon, delta) zCDP budget edited from 8 to 10 was shown as
    the rho rounded to 6 digits, and the command suggested with it did not match."""
    budget = 'epsilon_budget = {}\ndelta_budget = 1e-6\naccounting = "zcdp"'
    path = _pipeline(tmp_path, budget.format(8.0), releases=HISTOGRAM.format(noise="epsilon = 0.5"))
    assert _run(path) == EXIT_OK
    _pipeline(tmp_path, budget.format(10.0), releases=HISTOGRAM.format(noise="epsilon = 0.5"))
    assert main(["plan", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"the pipeline file says 10 (with its delta_budget: rho {rho_for(10.0, 1e-6)!r})" in err
    suggested = err.split("To change it: ppdm ledger ")[1].split(" (never below")[0]
    args = [a.strip("'") for a in suggested.split()]
    assert main(["ledger", *args]) == EXIT_OK
    capsys.readouterr()
    assert main(["plan", str(path)]) == EXIT_OK
