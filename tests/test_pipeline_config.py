"""Bad pipeline files: each refused with a clear error naming the step and the field
(issue 15), through the command (exit status 2) and the parser."""

from __future__ import annotations

import copy
import os
import textwrap
from pathlib import Path

import pytest

from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.config import load_pipeline, parse_pipeline
from polars_ppdm.jobs.errors import EXIT_INVALID, PipelineError

BASE = {
    "dataset": {
        "name": "d",
        "inputs": ["d.parquet"],
        "key": "id",
        "epsilon_budget": 2.0,
        "ledger": "l.duckdb",
    },
    "secret": {"env": "PPDM_TEST_SECRET"},
    "perturb": [
        {"step": "rr_disguise", "columns": ["a"], "epsilon": 1.0},
        {"step": "keep", "columns": ["id"]},
    ],
    "release": [
        {
            "step": "dp_histogram",
            "columns": ["x"],
            "bounds": {"x": [0.0, 1.0]},
            "epsilon": 0.5,
            "output": "h.parquet",
        }
    ],
    "output": {"table": "out.parquet", "manifest": "m.json"},
}


def refused(change) -> str:
    document = copy.deepcopy(BASE)
    change(document)
    with pytest.raises(PipelineError) as info:
        parse_pipeline(document, base=Path("/data"))
    text = str(info.value)
    assert "Traceback" not in text and "pydantic" not in text and "errors.pydantic.dev" not in text
    return text


def test_the_base_pipeline_is_valid():
    pipeline = parse_pipeline(copy.deepcopy(BASE), base=Path("/data"))
    assert pipeline.epsilons() == [
        ("[[perturb]] 1 rr_disguise(a)", 1.0),
        ("[[release]] 1 dp_histogram(x)", 0.5),
    ]


def test_unknown_step():
    text = refused(lambda d: d["perturb"].append({"step": "rr_flip", "columns": ["b"]}))
    assert "[[perturb]] 3 (rr_flip): unknown step 'rr_flip'" in text
    assert "rr_disguise, ecdf_resample, spiral, add_noise, keep, drop" in text
    text = refused(lambda d: d["release"].append({"step": "dp_mean", "columns": ["x"], "output": "o.csv"}))
    assert "[[release]] 2 (dp_mean): unknown step 'dp_mean'" in text and "dp_histogram" in text


def test_unknown_parameter_names_the_step_and_lists_the_allowed_ones():
    text = refused(lambda d: d["perturb"][0].update(seed=3))
    assert "[[perturb]] 1 (rr_disguise): unknown parameter 'seed'" in text
    assert "columns, nulls, p, epsilon, mode, categories" in text
    text = refused(lambda d: d["release"][0].update(sigma=1.0))
    assert "[[release]] 1 (dp_histogram): unknown parameter 'sigma'" in text and "max_contributions" in text


def test_a_misspelt_name_gets_the_nearest_one():
    """New-user trial 59: `[secrets]` said only that [secret] was required."""
    text = refused(lambda d: d.update(secrets=d.pop("secret")))
    assert "unknown parameter 'secrets' (did you mean 'secret'?)" in text
    text = refused(lambda d: d["perturb"][0].update(epsilom=1.0))
    assert "unknown parameter 'epsilom' (did you mean 'epsilon'?)" in text
    text = refused(lambda d: d["perturb"][0].update(zzz=1.0))
    assert "unknown parameter 'zzz'; rr_disguise takes" in text


def test_a_secret_field_of_the_wrong_type_says_the_type_not_the_value():
    text = refused(lambda d: d.update(secret={"file": 12345}))
    assert "[secret], field 'file': must be a string. Got an integer instead." in text
    assert "12345" not in text


def test_missing_budget():
    text = refused(lambda d: d["dataset"].pop("epsilon_budget"))
    assert "[dataset]: needs a budget: 'epsilon_budget' (the total epsilon this dataset may ever spend" in text


def test_column_perturbed_twice():
    text = refused(lambda d: d["perturb"].append({"step": "add_noise", "columns": ["a"], "scale": 1.0}))
    assert (
        "[[perturb]] 3 add_noise(a), field 'columns': the column 'a' is already named by [[perturb]] 1 rr_disguise(a)"
        in text
    )


@pytest.mark.parametrize("value", [0, -1.0, 0.0])
def test_epsilon_not_positive(value):
    text = refused(lambda d: d["release"][0].update(epsilon=value))
    assert (
        f"[[release]] 1 (dp_histogram), field 'epsilon': must be greater than 0. Got {value!r} instead."
        in text
    )
    text = refused(lambda d: d["perturb"][0].update(epsilon=value))
    assert "[[perturb]] 1 (rr_disguise), field 'epsilon': must be greater than 0" in text


def test_epsilon_per_column_table_names_the_column():
    text = refused(lambda d: d["perturb"][0].update(epsilon={"a": -2.0}))
    assert "field 'epsilon' for column 'a': must be greater than 0. Got -2.0 instead." in text


@pytest.mark.parametrize(
    "secret",
    [{"value": "ab" * 32}, {"hex": "ab" * 16}, {"env": "ab" * 32}, {"env": "X", "secret": "ab" * 16}],
)
def test_literal_secret_refused_and_never_shown(secret):
    text = refused(lambda d: d.update(secret=secret))
    assert "literal secret is refused" in text
    assert "ab" * 16 not in text


def test_literal_secret_in_a_step_refused():
    text = refused(lambda d: d["perturb"][0].update(secret="ab" * 16))
    assert "[[perturb]] 1 (rr_disguise), field 'secret': a literal secret is refused" in text
    assert "ab" * 16 not in text


def test_output_path_equal_to_an_input_path():
    text = refused(lambda d: d["output"].update(table="./d.parquet"))
    assert "[output], field 'table': '/data/d.parquet' is an input" in text
    text = refused(
        lambda d: (
            d["dataset"].update(inputs=["parts/*.parquet"]),
            d["release"][0].update(output="parts/h.parquet"),
        )
    )
    assert "[[release]] 1 dp_histogram(x), field 'output'" in text and "is an input" in text


def test_budget_lower_than_one_release():
    text = refused(lambda d: d["release"][0].update(epsilon=3.0))
    assert (
        "[[release]] 1 dp_histogram(x), field 'epsilon': spends 3, more than the whole budget [dataset] epsilon_budget = 2"
        in text
    )


def test_budget_lower_than_one_run():
    text = refused(lambda d: d["release"].append({**d["release"][0], "epsilon": 0.9, "output": "h2.parquet"}))
    assert "[dataset], field 'epsilon_budget': one run spends 2.4 (1 + 0.5 + 0.9) but the budget is 2" in text


def test_bad_choice_lists_the_allowed_values():
    text = refused(lambda d: d["perturb"][0].update(mode="record"))
    assert "field 'mode': must be one of 'per_attribute' or 'whole_record'. Got 'record' instead." in text


def test_bounds_must_cover_the_columns():
    text = refused(lambda d: d["release"][0].update(bounds={"y": [0.0, 1.0]}))
    assert "[[release]] 1 (dp_histogram): 'bounds' needs one public [low, high] pair per column" in text


def test_rr_support_needs_disguised_columns():
    text = refused(lambda d: d["release"].append({"step": "rr_support", "columns": ["x"], "output": "s.csv"}))
    assert (
        "[[release]] 2 rr_support(x), field 'columns': ['x'] are not disguised by an rr_disguise step" in text
    )


def test_several_problems_are_listed_together():
    text = refused(lambda d: (d["release"][0].update(epsilon=-1), d["perturb"][0].update(mode="x")))
    assert "2 problems" in text and "field 'epsilon'" in text and "field 'mode'" in text


def write(folder: Path, text: str) -> Path:
    path = folder / "pipeline.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_not_toml(tmp_path):
    with pytest.raises(PipelineError, match="not a TOML file"):
        load_pipeline(write(tmp_path, "[dataset\n"))


def test_the_command_exits_2_with_one_line_per_problem(tmp_path, capsys):
    path = write(
        tmp_path,
        """
        [dataset]
        name = "d"
        inputs = ["d.parquet"]
        ledger = "l.duckdb"
        [secret]
        env = "PPDM_TEST_SECRET"
        [[perturb]]
        step = "rr_disguise"
        columns = ["a"]
        epsilon = 0
        [output]
        manifest = "m.json"
        """,
    )
    for command in ("run", "plan"):
        assert main([command, str(path)]) == EXIT_INVALID
        err = capsys.readouterr().err
        assert err.startswith(f"ppdm {command}: {path}: 2 problems:")
        assert "[dataset]: needs a budget: 'epsilon_budget'" in err
        assert (
            "[[perturb]] 1 (rr_disguise), field 'epsilon': must be greater than 0 or a table (one value per column). Got 0 instead."
            in err
        )
        assert "Traceback" not in err


def test_unreadable_secret_file(tmp_path, capsys):
    import polars as pl

    pl.DataFrame({"id": [1, 2], "a": [True, False]}).write_parquet(tmp_path / "d.parquet")
    secret = tmp_path / "ppdm.secret"
    secret.write_text("ab" * 32 + "\n")
    os.chmod(secret, 0o644)
    path = write(
        tmp_path,
        """
        [dataset]
        name = "d"
        inputs = ["d.parquet"]
        key = "id"
        epsilon_budget = 1.0
        ledger = "l.duckdb"
        [secret]
        file = "ppdm.secret"
        [[perturb]]
        step = "keep"
        columns = ["id", "a"]
        [output]
        table = "o.parquet"
        manifest = "m.json"
        """,
    )
    assert main(["run", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "[secret], field 'file'" in err and "mode 0644" in err and "chmod 600" in err
    assert "ab" * 16 not in err
    secret.unlink()
    assert main(["run", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "[secret], field 'file': the secret file" in err and "cannot be read" in err
    assert not (tmp_path / "o.parquet").exists()


def test_union_member_types_never_named_as_a_column():
    # bins is an int or a table of ints: pydantic puts 'constrained-int' in the error's
    # path; the message must name the field, never that as a column.
    text = refused(lambda d: d["release"][0].update(bins=[10, 30]))
    assert "[[release]] 1 (dp_histogram), field 'bins'" in text
    assert "constrained" not in text and "for column" not in text


GROUP_BY = {
    "step": "dp_group_by",
    "by": "region",
    "aggregates": [{"aggregate": "count"}, {"aggregate": "mean", "column": "x", "bounds": [0.0, 1.0]}],
    "epsilon": 0.5,
    "public_groups": [{"region": "north"}, {"region": "south"}],
    "output": "g.parquet",
}


def with_group_by(**changes):
    def change(document):
        step = copy.deepcopy(GROUP_BY) | changes
        document["release"].append({k: v for k, v in step.items() if v is not None})

    return change


def test_a_dp_group_by_step_is_valid_and_spends_its_delta():
    document = copy.deepcopy(BASE)
    with_group_by(public_groups=None, delta=1e-6)(document)
    document["dataset"]["delta_budget"] = 1e-5
    pipeline = parse_pipeline(document, base=Path("/data"))
    assert pipeline.spends()[-1] == ("[[release]] 2 dp_group_by(region)", 0.5, 1e-6)
    assert pipeline.release[1].columns == ["region", "x"]  # what it reads from the input


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"aggregates": [{"aggregate": "sum", "column": "x"}]},
            "field 'aggregates' item 1: a sum needs 'column' and 'bounds'",
        ),
        (
            {"aggregates": [{"aggregate": "mean", "column": "x", "bounds": [1.0, 0.0]}]},
            "field 'aggregates' item 1: 'bounds' must have low < high. Got [1, 0]",
        ),
        ({"aggregates": [{"aggregate": "count", "column": "x"}]}, "a count takes no 'column' or 'bounds'"),
        (
            {"aggregates": [{"aggregate": "mode"}]},
            "item 1, field 'aggregate': must be one of 'count', 'count_units', 'sum', 'mean', 'variance', 'std', 'quantile' or 'median'",
        ),
        (
            {"aggregates": [{"aggregate": "count", "colour": 1}]},
            "item 1: unknown parameter 'colour'; it takes: aggregate,",
        ),
        ({"aggregates": []}, "field 'aggregates'"),
        (
            {"public_groups": None},
            "needs exactly one of 'public_groups' (the groups to release, listed) and 'delta'",
        ),
        ({"delta": 1e-6}, "needs exactly one of 'public_groups'"),
        ({"public_groups": [{"regio": "north"}]}, "must give a value for each column of 'by' ['region']"),
        ({"max_groups_contributed": 0}, "field 'max_groups_contributed': must be at least 1"),
        ({"public_groups": None, "delta": 1.0}, "field 'delta': must be less than 1"),
    ],
)
def test_a_bad_dp_group_by_step_is_refused_by_field(changes, message):
    assert message in refused(with_group_by(**changes))


def test_a_run_needing_more_delta_than_the_budget_is_refused():
    document = copy.deepcopy(BASE)
    with_group_by(public_groups=None, delta=1e-6)(document)
    parse_pipeline(document, base=Path("/data"))  # no delta_budget given: the ledger's decides at run time

    def over(document):
        with_group_by(public_groups=None, delta=1e-6)(document)
        document["dataset"]["delta_budget"] = 5e-7

    assert "[dataset], field 'delta_budget': one run spends delta 1e-06" in refused(over)


@pytest.mark.parametrize(
    "step",
    [
        {"step": "ecdf_resample", "columns": ["id"], "bins": 10, "round_integers": True},
        {"step": "add_noise", "columns": ["id"], "scale": 1.0},
        {"step": "rr_disguise", "columns": ["id"], "epsilon": 1.0},
    ],
    ids=["ecdf_resample", "add_noise", "rr_disguise"],
)
def test_a_perturbation_of_the_key_column_is_refused(step):
    """Attack review 75: the steps run in file order, each keyed by the key column as the
    steps before left it: an ecdf_resample of the ids, first, re-keyed every later step each
    night (one newcomer redraws all the ids), and 20 nights of add_noise averaged away."""

    def change(document):
        document["perturb"] = [step, {"step": "add_noise", "columns": ["x"], "scale": 1.0}]

    text = refused(change)
    assert "[[perturb]] 1" in text and "'id' is the dataset's key" in text and "Keep or drop it" in text
