"""The report of a zCDP pipeline: a continual release, Gaussian releases, the budget in rho
with the (epsilon, delta) it means, and the year ahead (also one line of `ppdm plan`)."""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from test_pipeline_run import SECRET, copy_example

from polars_ppdm.dp.continual import expected_rmse
from polars_ppdm.dp.mechanism import Mechanism
from polars_ppdm.dp.zcdp import rho_to_epsilon
from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.errors import EXIT_OK
from polars_ppdm.reporting._shown import number
from polars_ppdm.reporting.ahead import ContinualSchedule, ahead_text, year_ahead
from polars_ppdm.reporting.html import BANNERS

PLANTED_PERSON = 987_654_321
PLANTED_AMOUNT = 4242.4242

PIPELINE = """
[dataset]
name = "nightly"
inputs = "events.parquet"
key = "person"
rho_budget = 0.5
ledger = "ledger.duckdb"

[secret]
env = "PPDM_TEST_SECRET"

[output]
manifest = "out/manifest.json"

[[release]]
step = "dp_continual_counts"
by = "region"
period = "{period}"
{start}
horizon = 30
rho = 0.1
max_contributions = 3
public_groups = [{{region = "n"}}, {{region = "s"}}, {{region = "e"}}]
output = "out/counts.parquet"

[[release]]
step = "dp_histogram"
columns = ["night"]
bounds = {{night = [0, 20]}}
bins = 20
mechanism = "gaussian"
rho = 0.02
max_contributions = 3
output = "out/hist.parquet"

[[release]]
step = "dp_group_by"
by = ["region"]
aggregates = [{{ aggregate = "count" }}, {{ aggregate = "sum", column = "amount", bounds = [0.0, 100.0] }}]
mechanism = "gaussian"
rho = 0.04
max_groups_contributed = 2
max_rows_per_group = 2
public_groups = [{{region = "n"}}, {{region = "s"}}, {{region = "e"}}]
output = "out/by_region.parquet"
"""
START = dt.date(2026, 3, 1)
# Each later run: the histogram's 0.02 and the group-by's 0.04 (the tree is charged once).
PER_RUN = 0.06


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("PPDM_TEST_SECRET", SECRET)


def _pipeline(folder: Path, dated: bool = False) -> Path:
    rng = np.random.default_rng(3)
    n = 600
    night = rng.integers(0, 20, n)
    frame = pl.DataFrame(
        {
            "person": rng.integers(0, 200, n),
            "region": rng.choice(["n", "s", "e"], n),
            "night": night,
            "day": [START + dt.timedelta(days=int(d)) for d in night],
            "amount": rng.uniform(0, 100, n).round(2),
        }
    )
    frame = frame.with_columns(
        person=pl.when(pl.int_range(pl.len()) == 5).then(PLANTED_PERSON).otherwise("person"),
        amount=pl.when(pl.int_range(pl.len()) == 5).then(PLANTED_AMOUNT).otherwise("amount"),
    )
    frame.write_parquet(folder / "events.parquet")
    path = folder / "pipeline.toml"
    path.write_text(
        PIPELINE.format(period="day", start=f"start = {START.isoformat()}")
        if dated
        else PIPELINE.format(period="night", start="")
    )
    return path


def _pages(path: Path) -> dict[str, str]:
    out = path.parent / "out"
    return {version: (out / f"report.{version}.html").read_text() for version in BANNERS}


def _section(page: str, slug: str) -> str:
    start = page.index(f'id="{slug}"')
    return page[start : page.index("</section>", start)]


def _row(name: str, value: str) -> str:
    return f'<tr><th>{name}</th><td class="num">{value}</td></tr>'


def test_a_zcdp_pipeline_reports_every_release_its_budget_and_the_year_ahead(tmp_path):
    path = _pipeline(tmp_path)
    assert main(["run", "--quiet", "--as-of", "10", str(path)]) == EXIT_OK
    pages = _pages(path)
    for version, page in pages.items():
        assert BANNERS[version] in page
        assert page.count('<section class="release"') == 3

    public = pages["public"]
    # The continual release: rho charged once, horizon, periods 0 .. 9, the running
    # total's SD at period 9 and its 95% half-width (1.96 SD), a plot with bands.
    continual = _section(public, "release-out-counts-parquet")
    sd = expected_rmse(0.1, 30, 9, 3)
    assert "charged to the dataset&#x27;s zCDP budget once" in continual
    assert "30 periods" in continual and "10 of 30" in continual
    assert f'SD of a running total at period 9</div><div class="value">{number(sd)}</div>' in continual
    assert f"± {number(1.959963984540054 * sd)}" in continual
    assert "normal approximation" in continual and "sum of discrete Gaussians" in continual
    assert "Noisy running totals per group (95% bands)" in continual and "<img" in continual

    # The Gaussian group-by: rho split evenly, the exact 95% interval of a count.
    group_by = _section(public, "release-out-by-region-parquet")
    assert "split evenly over the aggregates: count 0.02, amount_sum 0.02" in group_by
    sigma = math.sqrt(2) * 2 / math.sqrt(2 * 0.02)  # L2: sqrt(groups) x rows, rho 0.02
    assert f"± {Mechanism('gaussian', 0.02).half_width(sigma):,}" in group_by
    assert "discrete Gaussian noise of sigma" in group_by and "95% interval of amount_sum" in group_by
    assert "the public groups, every one of them" in group_by

    # The budget in rho, with the epsilon each amount means at delta 1e-6.
    budget = _section(public, "budget")
    assert "Privacy budget of nightly (zCDP)" in budget
    for name, rho in [
        ("total rho budget (zCDP)", 0.5),
        ("rho spent before this run", 0.0),
        ("rho spent by this run", 0.16),
        ("rho spent after this run", 0.16),
        ("rho remaining", 0.34),
    ]:
        epsilon = rho_to_epsilon(rho, 1e-6) if rho else 0.0
        assert f'<th>{name}</th><td class="num">{rho:g}</td><td class="num">{epsilon:.4g}</td>' in budget, (
            name
        )
    assert "epsilon it means at delta 1e-06" in budget
    assert "this run spent rho 0.16; 0.34 of 0.5 left" in _section(public, "verdict")

    # The year ahead: 0.06 a run, 5 more runs fit in the 0.34 left (as of 11 .. 15), the
    # run as of 16 is refused; the running total's SD to the horizon.
    ahead = _section(public, "year-ahead")
    for row in [
        ("rho used so far", f"0.16 (epsilon {rho_to_epsilon(0.16, 1e-6):.4g} at delta 1e-06)"),
        ("rho each future run takes", "0.06"),
        ("next run", "--as-of 11"),
        ("runs left before the horizon ends", "20"),
        ("more runs the budget pays for", "5"),
        ("last run it pays for", "--as-of 15"),
        ("budget runs out: first run refused", "--as-of 16"),
    ]:
        assert _row(*row) in ahead, row
    last = expected_rmse(0.1, 30, 29, 3)
    assert f"{number(last)} at the horizon&#x27;s last period 29" in ahead
    assert "one run per period of the continual release" in ahead
    assert ahead.count("<img") == 2  # the budget over the runs, the SD over the horizon

    # Nothing of the original data in the public version.
    for value in (str(PLANTED_PERSON), "987,654,321", "4242.4", "4,242"):
        assert value not in public, value

    # An identical re-run (same night) spends nothing and says so, in rho.
    assert main(["run", "--quiet", "--as-of", "10", str(path)]) == EXIT_OK
    budget = _section(_pages(path)["public"], "budget")
    assert "repeats an earlier identical run" in budget
    assert '<th>rho spent by this run</th><td class="num">0</td>' in budget


def test_the_plan_says_the_year_ahead_in_one_line(tmp_path, capsys):
    path = _pipeline(tmp_path)
    assert main(["run", "--quiet", "--no-report", "--as-of", "10", str(path)]) == EXIT_OK
    capsys.readouterr()
    assert main(["plan", "--as-of", "11", str(path)]) == EXIT_OK
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("year ahead")]
    assert len(lines) == 1
    (line,) = lines
    # After this run: 0.22 spent, 0.28 left, 4 more runs of 0.06 (as of 12 .. 15).
    assert line.startswith("year ahead, at one run per period of the continual release")
    assert f"used rho 0.22 of 0.5 (epsilon {rho_to_epsilon(0.22, 1e-6):.4g} of" in line
    assert "each run takes rho 0.06" in line
    assert "4 more runs fit in the 0.28 left, the last --as-of 15" in line
    assert "the run --as-of 16 would be refused" in line
    assert f"running total's SD {number(expected_rmse(0.1, 30, 11, 3))} at period 11" in line


def test_a_dated_continual_release_says_the_dates(tmp_path):
    path = _pipeline(tmp_path, dated=True)
    # Periods 0 .. 9 are over as of 11 March: the next run is on the 12th; 5 more fit.
    assert main(["run", "--quiet", "--as-of", "2026-03-11", str(path)]) == EXIT_OK
    ahead = _section(_pages(path)["public"], "year-ahead")
    assert _row("next run", "2026-03-12") in ahead
    assert _row("last run it pays for", "2026-03-16") in ahead
    assert _row("budget runs out: first run refused", "2026-03-17") in ahead
    assert "one run per day of the continual release" in ahead


def test_a_pure_pipelines_budget_section_is_unchanged(tmp_path, monkeypatch):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    survey = copy_example("survey", tmp_path)
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    page = (survey.parent / "out" / "report.public.html").read_text()
    budget = page[page.index('<section class="budget" id="budget">') :]
    budget = budget[: budget.index("</section>") + len("</section>")]
    rows = "".join(
        _row(k, v)
        for k, v in [
            ("total epsilon budget", "6"),
            ("spent before this run", "0"),
            ("spent by this run", "2.5"),
            ("spent after this run", "2.5"),
            ("remaining", "3.5"),
        ]
    )
    assert budget == (
        '<section class="budget" id="budget"><h2>Privacy budget of survey</h2>'
        f'<div class="scroll"><table><tbody>{rows}</tbody></table></div>'
        '<p class="note">Epsilon of every run over this dataset add up (basic composition), as kept in the '
        "ledger.</p></section>"
    )
    assert "rho" not in budget
    # Its year ahead: epsilon, one run a day (no continual release), no conversion.
    ahead = _section(page, "year-ahead")
    assert "one run per day" in ahead and "rho" not in ahead
    assert _row("epsilon each future run takes", "2.5") in ahead
    assert _row("more runs the budget pays for", "1") in ahead


def test_year_ahead_without_a_continual_release_counts_days():
    ahead = year_ahead(unit="epsilon", budget=2.0, spent=0.5, per_run=0.5, today=dt.date(2026, 1, 1))
    assert (ahead.cadence, ahead.when_next, ahead.runs_fit, ahead.runs_possible) == (
        "day",
        "2026-01-02",
        3,
        None,
    )
    assert (ahead.last_fit, ahead.refused) == ("2026-01-04", "2026-01-05")
    # The plot: spent climbs 0.5 a run to the budget, then stays (refused runs spend nothing).
    spent = ahead.plots[0].series[0]
    assert max(spent.y) == pytest.approx(2.0) and spent.y[0] == pytest.approx(0.5)
    assert ahead.plots[0].series[1].y == (2.0, 2.0)
    # Exact fits count despite float dust (0.1 x 3 > 0.3 in binary).
    assert (
        year_ahead(unit="epsilon", budget=0.3, spent=0.0, per_run=0.1, today=dt.date(2026, 1, 1)).runs_fit
        == 3
    )


def test_year_ahead_of_a_run_that_does_not_fit_says_this_run_is_refused():
    """New-user trial 59: over budget, the plan said 'the next (tomorrow) would be refused',
    as if today's run fitted."""
    over = year_ahead(unit="epsilon", budget=4.0, spent=6.0, per_run=2.0, today=dt.date(2026, 1, 1))
    text = ahead_text(over)
    assert "this run does not fit in the budget: it would be refused, and every run after it" in text
    assert "the next" not in text
    # Review 60: over its delta, or over budget at a continual release's last period, too.
    short_of_delta = year_ahead(
        unit="epsilon", budget=4.0, spent=2.0, per_run=1.0, today=dt.date(2026, 1, 1), delta_left=-1e-7
    )
    tree = ContinualSchedule("[[release]] 1 dp_continual_counts(g)", horizon=8, through=7, rho=0.5)
    last = year_ahead(
        unit="rho", budget=1.0, spent=1.5, per_run=0.5, continual=[tree], today=dt.date(2026, 1, 1)
    )
    for ahead in (short_of_delta, last):
        assert "this run does not fit in the budget" in ahead_text(ahead), ahead_text(ahead)


def test_year_ahead_when_the_runs_spend_nothing_or_the_horizon_comes_first():
    tree = ContinualSchedule("[[release]] 1 dp_continual_counts(g)", horizon=8, through=2, rho=0.5)
    free = year_ahead(
        unit="rho", budget=1.0, spent=0.5, per_run=0.0, continual=[tree], today=dt.date(2026, 1, 1)
    )
    assert free.runs_fit is None and free.runs_possible == 5 and free.refused is None
    assert "the runs spend nothing: the budget does not run out" in ahead_text(free)
    assert free.continual[0].periods == (3, 4, 5, 6, 7)
    assert free.continual[0].sd == tuple(expected_rmse(0.5, 8, p) for p in range(3, 8))
    cheap = year_ahead(
        unit="rho",
        budget=1.0,
        spent=0.5,
        per_run=0.01,
        continual=[tree],
        today=dt.date(2026, 1, 1),
        epsilon_delta=1e-6,
    )
    assert cheap.runs_fit == 50 and cheap.refused is None
    text = ahead_text(cheap)
    assert "the 5 runs left before the horizon ends all fit (leaving 0.45)" in text
    assert re.search(r"used rho 0\.5 of 1 \(epsilon [0-9.]+ of [0-9.]+ at delta 1e-06\)", text)
    # A long horizon is drawn with at most 400 points, both ends kept.
    long = ContinualSchedule("r", horizon=100_000, through=0, rho=0.5)
    far = year_ahead(
        unit="rho", budget=1.0, spent=0.5, per_run=0.0, continual=[long], today=dt.date(2026, 1, 1)
    )
    periods = far.continual[0].periods
    assert len(periods) <= 400 and (periods[0], periods[-1]) == (1, 99_999)


def test_a_budget_beyond_the_calendar_is_reported_not_a_crash():
    """A budget of 1e9 at 2.5 a daily run pays for 4e8 days: the last run falls past
    9999-12-31 (the benchmark's pipeline found ppdm run's report failing on it)."""
    ahead = year_ahead(unit="epsilon", budget=1e9, spent=2.5, per_run=2.5, today=dt.date(2026, 11, 27))
    assert ahead.runs_fit == 399_999_999
    assert ahead.last_fit == "after 9999-12-31" and ahead.refused == "after 9999-12-31"
    assert ahead.when_next == "2026-11-28"
