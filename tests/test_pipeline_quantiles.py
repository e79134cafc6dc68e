"""Pipeline aggregates of issue 29: count_units, variance, std, quantile and median in a
dp_group_by step: the same bits as the library, the plan's charge, the report, and
clear errors."""

from __future__ import annotations

import json

import polars as pl
import pytest
from test_pipeline_run import SECRET, copy_example

from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.errors import EXIT_INVALID, EXIT_OK

STEP = """
[[release]]
step = "dp_group_by"
by = ["channel"]
aggregates = [
  {{ aggregate = "count_units" }},
  {{ aggregate = "median", column = "amount", bounds = [0.0, 500.0], candidates = 501 }},
  {{ aggregate = "quantile", column = "amount", q = [0.1, 0.9], bounds = [0.0, 500.0] }},
  {{ aggregate = "std", column = "amount", bounds = [0.0, 500.0] }},
  {{ aggregate = "variance", column = "amount", bounds = [0.0, 500.0], epsilon = 0.1 }},
]
epsilon = 1.0
max_groups_contributed = 3
max_rows_per_group = 4
{groups}
intervals = true
output = "out/spread/spread.csv"

[output]
manifest = "out/spread/manifest.json"
"""

HEAD_END = "[[release]]"


def pipeline(tmp_path, monkeypatch, groups: str = "delta = 1e-6", **edits: str):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    base = copy_example("events", tmp_path).parent / "by_channel.toml"
    head = base.read_text().split(HEAD_END)[0]
    text = head + STEP.format(groups=groups)
    for old, new in edits.items():
        text = text.replace(old, new)
    path = base.parent / "spread.toml"
    path.write_text(text)
    return path


def test_a_run_releases_the_library_bits_and_charges_its_epsilon(tmp_path, monkeypatch, capsys):
    import polars_ppdm as ppdm
    from polars_ppdm import dp
    from polars_ppdm.jobs.run import release_secret
    from polars_ppdm.secret import Secret

    path = pipeline(tmp_path, monkeypatch)
    assert main(["plan", "--json", str(path)]) == EXIT_OK
    plan = json.loads(capsys.readouterr().out)
    assert (plan["epsilon"], plan["delta"]) == (1.0, 1e-6)
    assert main(["run", "--quiet", str(path)]) == EXIT_OK
    got = json.loads((path.parent / "out" / "spread" / "manifest.json").read_text())
    released = pl.read_csv(path.parent / "out" / "spread" / "spread.csv")
    bounds = (0, 500)
    expected = ppdm.dp_group_by(
        pl.read_parquet(path.parent / "events.parquet"),
        "channel",
        [
            dp.count_units(),
            dp.median("amount", bounds=bounds, candidates=501),
            dp.quantile("amount", [0.1, 0.9], bounds=bounds),
            dp.std("amount", bounds=bounds),
            dp.variance("amount", bounds=bounds, epsilon=0.1),
        ],
        epsilon=1.0,
        privacy_unit="user_id",
        max_groups_contributed=3,
        max_rows_per_group=4,
        delta=1e-6,
        intervals=True,
        secret=release_secret(Secret(bytes.fromhex(SECRET)), got["run_id"]),
    )
    assert released.columns == expected.columns
    assert released.columns[:4] == ["channel", "units", "units_sd", "units_ci_low"]
    assert "amount_median_sd" not in released.columns  # a quantile has no interval columns
    assert released.equals(expected, null_equal=True)
    # The identical re-run: the same bits (groups in key order), nothing more spent.
    assert main(["run", "--quiet", str(path)]) == EXIT_OK
    assert pl.read_csv(path.parent / "out" / "spread" / "spread.csv").equals(released)
    report = (path.parent / "out" / "spread" / "report.public.html").read_text()
    assert "quantile 0.9 of amount" in report and "public candidates" in report


def test_pipelines_written_before_quantiles_keep_their_run_ids(tmp_path, monkeypatch):
    """The aggregates' new fields (q, candidates) appear in the canonical form only when
    given: the by_channel example's run id (count, sum, mean) is what it was."""
    from polars_ppdm.jobs.config import load_pipeline

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    old = load_pipeline(copy_example("events", tmp_path).parent / "by_channel.toml")
    aggregates = old.canonical()["release"][0]["aggregates"]
    assert aggregates[1] == {
        "aggregate": "sum",
        "column": "amount",
        "bounds": [0.0, 500.0],
        "name": None,
        "epsilon": None,
    }
    assert all(set(a) == {"aggregate", "column", "bounds", "name", "epsilon"} for a in aggregates)
    new = load_pipeline(pipeline(tmp_path / "new", monkeypatch)).canonical()["release"][0]["aggregates"]
    assert new[1]["candidates"] == 501 and new[2]["q"] == [0.1, 0.9] and "q" not in new[3]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            '{ aggregate = "count_units" }',
            '{ aggregate = "count_units", column = "amount" }',
            "takes no 'column'",
        ),
        ("q = [0.1, 0.9], ", "", "a quantile needs 'q'"),
        ("q = [0.1, 0.9]", "q = 1.5", "must be a number in [0, 1]. Got 1.5"),
        ("q = [0.1, 0.9]", "q = [0.5, 2]", "must be a number in [0, 1]. Got 2"),
        ("q = [0.1, 0.9]", 'q = "high"', "must be a number in [0, 1]. Got 'high'"),
        ("candidates = 501", "candidates = 1", "between 2 and 100,000 points. Got 1"),
        ("q = [0.1, 0.9]", "q = [0.5, 0.5]", "repeats a quantile"),
        ("candidates = 501", "candidates = [0.0, 600.0]", r"within the bounds"),
        (
            '{ aggregate = "std", column = "amount", bounds = [0.0, 500.0] }',
            '{ aggregate = "std", column = "amount", bounds = [0.0, 500.0], q = 0.5 }',
            "a std takes no 'q'",
        ),
        (
            '{ aggregate = "std", column = "amount", bounds = [0.0, 500.0] }',
            '{ aggregate = "std", column = "amount", bounds = [0.0, 500.0], candidates = 5 }',
            "takes no 'candidates'",
        ),
    ],
)
def test_bad_aggregates_are_refused_by_plan_naming_the_item(tmp_path, monkeypatch, capsys, old, new, message):
    path = pipeline(tmp_path, monkeypatch, **{old: new})
    assert main(["plan", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert message in err and "aggregates" in err, err
    assert ".." not in err, err  # the library's sentence, not doubled by the pipeline's
