"""`ppdm run` writes the run's report; `ppdm report` writes it again, from what the run left."""

from __future__ import annotations

import json

import polars as pl
import pytest
from test_pipeline_run import SECRET, copy_example

from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.errors import EXIT_INPUT, EXIT_INVALID, EXIT_OK, EXIT_PLACING, EXIT_REPORT
from polars_ppdm.reporting.html import BANNERS


@pytest.fixture
def survey(tmp_path, monkeypatch):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    return copy_example("survey", tmp_path)


def reports(pipeline):
    out = pipeline.parent / "out"
    return {version: out / f"report.{version}.html" for version in BANNERS}


def test_run_writes_both_versions_beside_the_manifest(survey):
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    for version, path in reports(survey).items():
        page = path.read_text()
        assert BANNERS[version] in page
        assert page.count('<section class="column"') == 7
        assert 'id="release-out-smoker-support-csv"' in page


def test_no_report_and_report_later(survey, capsys):
    assert main(["run", "--quiet", "--no-report", str(survey)]) == EXIT_OK
    assert not any(p.exists() for p in reports(survey).values())
    assert main(["report", "--version", "public", str(survey)]) == EXIT_OK
    assert "report.public.html" in capsys.readouterr().out
    assert reports(survey)["public"].exists() and not reports(survey)["internal"].exists()
    assert main(["report", "--quiet", str(survey)]) == EXIT_OK
    assert all(p.exists() for p in reports(survey).values())
    assert capsys.readouterr().out == ""


def test_report_before_any_run_is_refused(survey, capsys):
    assert main(["report", str(survey)]) == EXIT_INPUT
    assert "run the pipeline first" in capsys.readouterr().err


def test_budget_before_and_after_the_run(survey):
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    page = reports(survey)["public"].read_text()
    budget = page[page.index('id="budget"') :]
    for label, value in [
        ("total epsilon budget", "6"),
        ("spent before this run", "0"),
        ("spent by this run", "2.5"),
        ("remaining", "3.5"),
    ]:
        assert f'<th>{label}</th><td class="num">{value}</td>' in budget
    # A run over changed data spends again: its report starts from what the first spent.
    data = survey.parent / "survey.csv"
    pl.read_csv(data).head(900).write_csv(data)
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    budget = reports(survey)["public"].read_text().split('id="budget"')[1]
    assert '<th>spent before this run</th><td class="num">2.5</td>' in budget
    assert '<th>remaining</th><td class="num">1</td>' in budget


def test_an_identical_rerun_reports_that_it_spent_nothing(survey, capsys):
    """The second run finds its identical twin in the ledger and spends nothing: its
    report says 0 (not the first run's 2.5) and that it repeats an earlier run."""
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    assert main(["run", str(survey)]) == EXIT_OK
    assert "identical to an earlier run: spent nothing" in capsys.readouterr().out
    for path in reports(survey).values():
        budget = path.read_text().split('id="budget"')[1]
        for label, value in [
            ("spent before this run", "2.5"),
            ("spent by this run", "0"),
            ("spent after this run", "2.5"),
            ("remaining", "3.5"),
        ]:
            assert f'<th>{label}</th><td class="num">{value}</td>' in budget, label
        assert "repeats an earlier identical run" in budget


def test_internal_report_refuses_changed_inputs_public_does_not_read_them(survey, capsys):
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    data = survey.parent / "survey.csv"
    frame = pl.read_csv(data)
    frame.with_columns(pl.col("income") + 1).write_csv(data)
    assert main(["report", str(survey)]) == EXIT_INPUT
    assert "has changed since the run" in capsys.readouterr().err
    data.unlink()  # the public version reads the outputs only
    assert main(["report", "--version", "public", str(survey)]) == EXIT_OK


def test_public_report_of_the_pipeline_holds_no_original_value(survey):
    data = survey.parent / "survey.csv"
    frame = pl.read_csv(data).with_columns(
        pl.when(pl.col("respondent_id") == 7).then(pl.lit("Zebulon Quixote")).otherwise("name").alias("name"),
        pl.when(pl.col("respondent_id") == 9).then(987654.321).otherwise("income").alias("income"),
    )
    frame.write_csv(data)
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    public = reports(survey)["public"].read_text()
    for value in ("Zebulon", "987654.32", "987,654", "person 1"):
        assert value not in public
    # Sanity of the test: the internal version does show the original's figures.
    assert "original" in reports(survey)["internal"].read_text()


def test_a_failing_report_fails_the_command_but_keeps_the_outputs(survey, capsys, monkeypatch):
    def broken(report):
        msg = "disk full"
        raise OSError(msg)

    monkeypatch.setattr("polars_ppdm.reporting.html.render", broken)
    # Not the error's own status (1 here, 2 for a refusal): the run published and spent.
    assert main(["run", "--quiet", str(survey)]) == EXIT_REPORT
    err = capsys.readouterr().err
    assert (
        "The run had succeeded: its outputs are in place and its budget spent; only its report was not" in err
    )
    assert "disk full" in err
    out = survey.parent / "out"
    assert (out / "survey_perturbed.parquet").exists()


def test_ctrl_c_during_the_report_exits_7_not_130(survey, capsys, monkeypatch):
    # 130 says "nothing published or spent": the run had published and spent.
    def interrupted(report):
        raise KeyboardInterrupt

    monkeypatch.setattr("polars_ppdm.reporting.html.render", interrupted)
    assert main(["run", "--quiet", str(survey)]) == EXIT_REPORT
    assert "The run had succeeded" in capsys.readouterr().err
    assert (survey.parent / "out" / "survey_perturbed.parquet").exists()


def test_a_run_over_an_empty_input_writes_its_report(survey):
    # An empty table is a valid input (its releases are noise alone); the report's
    # rank-linkage figure refused it, after the run had spent its budget.
    data = survey.parent / "survey.csv"
    pl.read_csv(data).head(0).write_parquet(survey.parent / "survey.parquet")
    survey.write_text(survey.read_text().replace('inputs = ["survey.csv"]', 'inputs = ["survey.parquet"]'))
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    for path in reports(survey).values():
        assert "rank linkage" in path.read_text()


def test_a_csv_with_a_header_and_no_rows_is_refused_for_what_it_is(survey, capsys):
    # Its columns would all be strings: the refusal was a step's "not numeric (String)".
    data = survey.parent / "survey.csv"
    pl.read_csv(data).head(0).write_csv(data)
    for command in ("plan", "run"):
        assert main([command, str(survey)]) == EXIT_INPUT
        assert "has a header but no rows" in capsys.readouterr().err


@pytest.mark.parametrize("nulls", ["refuse", "keep"])
def test_a_release_over_a_column_with_nulls_is_refused_before_anything_is_reserved(survey, capsys, nulls):
    # rr_support refuses nulls (a disguised null carries no answer): that used to come
    # after the perturbed table was written, and named no step. rr_disguise itself refuses
    # them unless its step says nulls = "keep" (a null would be published undisguised).
    data = survey.parent / "survey.csv"
    frame = pl.read_csv(data)
    frame.with_columns(smoker=pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise("smoker")).write_csv(
        data
    )
    if nulls == "keep":
        text = survey.read_text()
        survey.write_text(text.replace('columns = ["smoker"]\n', 'columns = ["smoker"]\nnulls = "keep"\n', 1))
    assert main(["run", "--quiet", str(survey)]) == EXIT_INVALID
    err = capsys.readouterr().err
    refusals = {
        "refuse": "[[perturb]] 1 rr_disguise(smoker), field 'nulls': column 'smoker' has null values.",
        "keep": "[[release]] 1 rr_support(smoker): column 'smoker' has null values",
    }
    assert refusals[nulls] in err and refusals["keep" if nulls == "refuse" else "refuse"] not in err, err
    assert "Nothing was reserved or released." in err
    assert not (survey.parent / "out" / "survey_perturbed.parquet").exists()


def test_a_release_s_refusal_names_the_release(survey, capsys, monkeypatch):
    from polars_ppdm.exceptions import InvalidParameterError

    def refused(*args, **kwargs):
        msg = "a refusal in the release's own words."
        raise InvalidParameterError(msg)

    monkeypatch.setattr("polars_ppdm.jobs.run._release", refused)
    assert main(["run", "--quiet", str(survey)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "a refusal in the release's own words. (In [[release]] 1 rr_support(smoker).)" in err
    assert "nothing spent" in err


def test_report_version_is_checked(survey, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--version", "secret", str(survey)])
    assert exit_.value.code == EXIT_INVALID


def test_a_pipeline_of_dp_releases_only(tmp_path, monkeypatch):
    """examples/events: no table published, three DP releases; each gets its section with
    its epsilon and the noise of a cell."""
    from polars_ppdm.dp.accuracy import geometric_interval

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    events = copy_example("events", tmp_path)
    assert main(["run", "--quiet", str(events)]) == EXIT_OK
    for path in reports(events).values():
        page = path.read_text()
        assert '<section class="column"' not in page
        assert page.count('<section class="release"') == 3
        # dp_histogram: scale 8 / 0.5 = 16; the quadtree's leaves: 8 / (0.7 x 0.95 x 0.5).
        assert f"± {geometric_interval(16.0):,}" in page
        assert f"± {geometric_interval(8 / (0.7 * 0.95 * 0.5)):,}" in page
        assert 'spent by this run</th><td class="num">2</td>' in page


def test_an_output_that_names_a_users_folder_is_refused_and_the_folder_kept(survey, capsys):
    """A table, release or manifest path naming a folder of the user's is refused before
    any budget is reserved; nothing in the folder is touched."""
    folder = survey.parent / "out" / "survey_perturbed.parquet"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    assert main(["run", "--quiet", str(survey)]) == EXIT_INVALID
    assert "holding files no run wrote (notes.txt)" in capsys.readouterr().err
    assert (folder / "notes.txt").read_text() == "mine"
    assert not (survey.parent / "out" / "manifest.json").exists()


def test_a_table_folder_spark_wrote_is_replaced(survey):
    folder = survey.parent / "out" / "survey_perturbed.parquet"
    folder.mkdir(parents=True)
    for name in ("part-00000-abc.snappy.parquet", "_SUCCESS", ".part-00000-abc.snappy.parquet.crc"):
        (folder / name).write_bytes(b"")
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    assert (survey.parent / "out" / "survey_perturbed.parquet").is_file()


def test_report_output_that_is_a_folder_is_refused(tmp_path):
    import polars_ppdm as ppdm
    from polars_ppdm.exceptions import InvalidParameterError

    (tmp_path / "keep.txt").write_text("mine")
    frame = pl.DataFrame({"x": [1.0, 2.0]})
    with pytest.raises(InvalidParameterError, match="is a folder"):
        ppdm.report(frame, [{"step": "keep", "columns": ["x"]}], version="public", output=tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("stop", [KeyboardInterrupt, BrokenPipeError])
def test_ctrl_c_or_a_failure_while_printing_the_summary_exits_7(survey, capsys, monkeypatch, stop):
    def cut(result, reports):
        raise stop

    monkeypatch.setattr("polars_ppdm.jobs.commands._summary", cut)
    assert main(["run", "--no-report", str(survey)]) == EXIT_REPORT
    assert "only its summary line was not printed" in capsys.readouterr().err


def test_ctrl_c_while_closing_the_progress_display_exits_7(survey, capsys, monkeypatch):
    from polars_ppdm.jobs import progress

    made = progress.make_progress

    def closing_interrupted(quiet):
        shown = made(quiet=quiet)

        def close():
            raise KeyboardInterrupt

        shown.close = close
        return shown

    monkeypatch.setattr(progress, "make_progress", closing_interrupted)
    assert main(["run", "--quiet", "--no-report", str(survey)]) == EXIT_REPORT
    assert "The run had succeeded" in capsys.readouterr().err


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_a_failure_after_the_ledger_commit_exits_8_and_a_rerun_places_the_outputs_free(
    survey, capsys, monkeypatch, stop
):
    # Neither 130 ("nothing spent") nor 1: the ledger had recorded the run, its epsilon is spent.
    from polars_ppdm.jobs import run as run_module
    from polars_ppdm.ledger import Ledger

    placed = {"replace_whole": run_module.replace_whole, "write_bytes_atomic": run_module.write_bytes_atomic}
    calls = []

    def fails_on_the_second(name):
        def place(kept, target):  # the table's temporary, or a release's bytes
            calls.append(target)
            if len(calls) > 1:
                msg = "disk gone"
                raise stop(msg)
            return placed[name](kept, target)

        return place

    for name in placed:
        monkeypatch.setattr(run_module, name, fails_on_the_second(name))
    assert main(["run", "--quiet", "--no-report", str(survey)]) == EXIT_PLACING
    err = capsys.readouterr().err
    assert "recorded the run as published" in err and "running the same pipeline again" in err
    out = survey.parent / "out"
    spent = Ledger(out / "ledger.duckdb").spent("survey")
    assert spent > 0
    assert not (out / "manifest.json").exists()

    for name, function in placed.items():
        monkeypatch.setattr(run_module, name, function)
    assert main(["run", "--quiet", "--no-report", str(survey)]) == EXIT_OK
    assert (out / "manifest.json").exists()
    assert Ledger(out / "ledger.duckdb").spent("survey") == spent


def test_ctrl_c_between_the_ledger_commit_and_its_return_exits_8(survey, capsys, monkeypatch):
    # The COMMIT had happened (the ledger shows the run published) but Ledger.publish had
    # not returned: 130 said "nothing published or spent".
    from polars_ppdm.ledger import Ledger

    committed = Ledger.publish

    def then_interrupted(self, *args, **kwargs):
        committed(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Ledger, "publish", then_interrupted)
    assert main(["run", "--quiet", "--no-report", str(survey)]) == EXIT_PLACING
    assert "recorded the run as published" in capsys.readouterr().err
    monkeypatch.setattr(Ledger, "publish", committed)
    assert main(["run", "--quiet", "--no-report", str(survey)]) == EXIT_OK  # places the outputs, free


@pytest.mark.parametrize(("column", "step"), [("income", "add_noise"), ("age", "ecdf_resample")])
def test_a_null_under_noise_or_an_ecdf_is_refused_unless_the_step_keeps_it(survey, capsys, column, step):
    """Attack review 75: add_noise and ecdf_resample published a null as null, with no field
    and no word in the plan or manifest; whether someone's income is missing went out
    undisguised."""
    data = survey.parent / "survey.csv"
    frame = pl.read_csv(data)
    frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col(column)).alias(column)
    ).write_csv(data)
    assert main(["run", "--quiet", str(survey)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"{step}({column}), field 'nulls': column {column!r} has null values." in err, err
    assert "Nothing was reserved or released." in err
    text = survey.read_text()
    survey.write_text(
        text.replace(f'columns = ["{column}"]\n', f'columns = ["{column}"]\nnulls = "keep"\n', 1)
    )
    assert main(["plan", str(survey)]) == 0
    assert 'nulls = "keep": nulls are published as they are' in capsys.readouterr().out
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    published = pl.read_parquet(survey.parent / "out" / "survey_perturbed.parquet")
    assert published[column].null_count() == 1
    manifest = json.loads((survey.parent / "out" / "manifest.json").read_text())
    assert any("nulls are published as they are" in s.get("charge", "") for s in manifest["steps"])


def test_the_operators_records_are_theirs_alone_and_a_chmod_survives(survey):
    """Attack review 78: under umask 022 the internal page (the original's shares and
    histograms) and the manifest (exact input counts) were 0644 beside the outputs."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        assert main(["run", "--quiet", str(survey)]) == EXIT_OK
        out = survey.parent / "out"
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir() if p.is_file()}
        assert modes["report.internal.html"] == 0o600 and modes["manifest.json"] == 0o600
        assert modes["report.public.html"] == 0o644 and modes["survey_perturbed.parquet"] == 0o644
        (out / "manifest.json").chmod(0o640)  # the operator shares it with a group
        (out / "report.internal.html").unlink()
        assert main(["report", str(survey)]) == EXIT_OK
        assert stat.S_IMODE((out / "report.internal.html").stat().st_mode) == 0o600
        assert main(["run", "--quiet", str(survey)]) == EXIT_OK
        assert stat.S_IMODE((out / "manifest.json").stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_a_small_noise_scale_still_gives_both_pages(survey, capsys):
    """Attack review 78: at scale 10 the released incomes beyond the middle 99% were out of
    the noise's reach from the reconstruction's bounds; the report failed (exit 7, no
    public page) with the two quantiles in its message."""
    survey.write_text(survey.read_text().replace("scale = 5000.0", "scale = 10.0", 1))
    assert main(["run", "--quiet", str(survey)]) == EXIT_OK
    assert capsys.readouterr().err == ""
    for path in reports(survey).values():
        assert "reconstructed from the released values" in path.read_text()
