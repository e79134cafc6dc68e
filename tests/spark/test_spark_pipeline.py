"""`ppdm run --engine spark` runs the same pipeline file to the same outputs, bit for bit,
and charges the same ledger: a run on one engine is an identical re-run on the other."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

pytestmark = pytest.mark.spark

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_pipeline_run import SECRET, copy_example  # noqa: E402

from polars_ppdm.jobs.commands import main  # noqa: E402
from polars_ppdm.jobs.errors import EXIT_CHANGED, EXIT_INVALID, EXIT_OK  # noqa: E402


def _run(path: Path, engine: str) -> int:
    return main(["run", "--quiet", "--engine", engine, str(path)])


def _read(path: Path) -> pl.DataFrame:
    if path.is_dir():  # Spark's folder of part files
        parts = sorted(str(p) for p in path.iterdir() if p.name.startswith("part-"))
        return pl.read_parquet(parts) if path.suffix != ".csv" else pl.concat([pl.read_csv(p) for p in parts])
    return pl.read_parquet(path) if path.suffix != ".csv" else pl.read_csv(path)


def _outputs(manifest: Path) -> dict[str, pl.DataFrame]:
    got = json.loads(manifest.read_text())
    assert got["status"] == "succeeded"
    return {Path(o["path"]).name: _read(Path(o["path"])) for o in got["outputs"] if "sha256" in o}


@pytest.mark.parametrize("name", ["survey", "events"])
def test_the_example_pipeline_gives_the_same_outputs_on_spark(spark, tmp_path, monkeypatch, name):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    on_polars = copy_example(name, tmp_path / "polars")
    on_spark = copy_example(name, tmp_path / "spark")
    assert _run(on_polars, "polars") == EXIT_OK
    assert _run(on_spark, "spark") == EXIT_OK
    want = _outputs(on_polars.parent / "out" / "manifest.json")
    got = _outputs(on_spark.parent / "out" / "manifest.json")
    assert sorted(got) == sorted(want)
    for output, frame in want.items():
        # A Spark table has no row order (and the survey's key is not published): compare
        # the rows as a multiset.
        assert got[output].sort(frame.columns).equals(frame.sort(frame.columns)), output
    manifest = json.loads((on_spark.parent / "out" / "manifest.json").read_text())
    assert manifest["epsilon"]["spent_by_this_run"] > 0


def test_a_run_on_spark_after_the_same_run_on_polars_spends_nothing(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = copy_example("survey", tmp_path)
    assert _run(path, "polars") == EXIT_OK
    first = json.loads((path.parent / "out" / "manifest.json").read_text())
    assert _run(path, "spark") == EXIT_OK  # replaces the table file by a folder, atomically
    second = json.loads((path.parent / "out" / "manifest.json").read_text())
    assert first["run_id"] == second["run_id"]
    assert second["epsilon"]["identical_rerun"] is True and second["epsilon"]["spent_by_this_run"] == 0
    assert (path.parent / "out" / "survey_perturbed.parquet").is_dir()
    assert _run(path, "polars") == EXIT_OK  # and back: the folder is replaced by a file
    assert (path.parent / "out" / "survey_perturbed.parquet").is_file()


def test_spark_needs_the_privacy_unit_key(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = copy_example("survey", tmp_path)
    path.write_text(path.read_text().replace('key = "respondent_id"', ""))
    assert _run(path, "spark") == EXIT_INVALID
    assert "[dataset] key is required with engine = 'spark'" in capsys.readouterr().err


def test_engine_in_the_file_and_on_the_command_line(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = copy_example("survey", tmp_path)
    path.write_text('engine = "spark"\n' + path.read_text())
    assert main(["run", "--quiet", str(path)]) == EXIT_OK
    assert (path.parent / "out" / "survey_perturbed.parquet").is_dir()
    path.write_text(path.read_text().replace('engine = "spark"', 'engine = "duckdb"'))
    assert main(["run", "--quiet", str(path)]) == EXIT_INVALID
    assert "engine" in capsys.readouterr().err


def test_quoted_empty_strings_in_a_csv_read_alike_on_both_engines(spark, tmp_path, monkeypatch):
    # Spark's CSV reader took a quoted "" for null by default; Polars reads an empty string.
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    paths = {engine: copy_example("survey", tmp_path / engine) for engine in ("polars", "spark")}
    for path in paths.values():
        data = path.parent / "survey.csv"
        frame = pl.read_csv(data).with_columns(
            pl.when(pl.col("respondent_id") % 5 == 0)
            .then(pl.lit(""))
            .when(pl.col("respondent_id") % 7 == 0)
            .then(None)
            .otherwise("region")
            .alias("region")
        )
        frame.write_csv(data)
        assert '""' in data.read_text()  # the test's premise: quoted empty strings in the file
    for engine, path in paths.items():
        assert _run(path, engine) == EXIT_OK
    want = _outputs(paths["polars"].parent / "out" / "manifest.json")
    got = _outputs(paths["spark"].parent / "out" / "manifest.json")
    table = "survey_perturbed.parquet"
    assert want[table]["region"].eq_missing("").sum() > 0 and want[table]["region"].null_count() > 0
    for output, frame in want.items():
        assert got[output].sort(frame.columns).equals(frame.sort(frame.columns)), output


# [dataset.csv] (tests/test_pipeline_csv.py): the options Spark's reader has, read as Polars reads them.
CSV_CASES = {
    "semicolons, NA, a declared type": (
        "id;zip;smoker;income;name\n1;00123;1;1234.5;'a;b'\n2;04000;0;NA;\n3;10115;1;99.25;''\n4;00007;0;0.5;NA\n",
        '[dataset.csv]\nseparator = ";"\nquote_char = "\'"\nnull_values = ["NA"]\ntypes = { zip = "String" }',
        {},
    ),
    # An Excel export: a BOM, CRLF, a quoted field holding the separator, a line break and
    # doubled quotes (Spark read it as two rows, of nulls, before multiLine and escape).
    "BOM, CRLF, quoted line breaks and doubled quotes": (
        '\ufeffid;zip;smoker;income;name\r\n1;00123;1;1234.5;"a;b\nc ""q"""\r\n2;04000;0;NA;x\r\n'
        '3;10115;1;99.25;""""\r\n4;00007;0;0.5;y',
        '[dataset.csv]\nseparator = ";"\nnull_values = ["NA"]\ntypes = { zip = "String" }',
        {},
    ),
    # A short row: its missing last field is null on both engines (review 54: FAILFAST
    # refused it, after the reservation, quoting the row).
    "a short row": (
        "id;zip;smoker;income;name\n1;00123;1;1234.5;a\n2;04000;0;NA\n3;10115;1;99.25;c\n",
        '[dataset.csv]\nseparator = ";"\nnull_values = ["NA"]\ntypes = { zip = "String" }',
        {},
    ),
    "no header, no quoting": (
        '1|00123|1|1234.5|"a\n2|04000|0||b"\n3|10115|1|99.25|c\n',
        '[dataset.csv]\nseparator = "|"\nhas_header = false\nquote_char = ""\ntypes = { column_2 = "String" }',
        {"id": "column_1", "zip": "column_2", "smoker": "column_3", "income": "column_4", "name": "column_5"},
    ),
}


@pytest.mark.parametrize("case", list(CSV_CASES))
def test_csv_reader_options_read_alike_on_both_engines(spark, tmp_path, monkeypatch, case):
    from test_pipeline_csv import write

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    data, options, names = CSV_CASES[case]
    name = {column: names.get(column, column) for column in ("id", "zip", "smoker", "income", "name")}
    tables = {}
    for engine in ("polars", "spark"):
        (tmp_path / engine).mkdir()
        keep = json.dumps([name["id"], name["zip"], name["income"], name["name"]])
        path = write(tmp_path / engine, data, options, smoker=name["smoker"], keep=keep)
        path.write_text(path.read_text().replace('key = "id"', f'key = "{name["id"]}"'))
        assert _run(path, engine) == EXIT_OK
        tables[engine] = _outputs(path.parent / "out" / "manifest.json")["table.parquet"].sort(name["id"])
    assert tables["spark"].equals(tables["polars"])
    assert tables["polars"][name["zip"]].to_list()[:2] == ["00123", "04000"]
    assert tables["polars"][name["income"]].null_count() == 1


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('separator = ";"\nnull_values = ["NA", "-"]', "Spark's CSV reader takes one null marker"),
        ('separator = ";"\ndecimal_comma = true', "Spark's CSV reader has no decimal comma"),
        ('separator = ";"\ntypes = { id = "UInt32" }', "Spark has no unsigned integers, and ['id']"),
    ],
)
def test_csv_options_spark_cannot_read_are_refused_before_anything_is_read(
    spark, tmp_path, monkeypatch, capsys, table, said
):
    from test_pipeline_csv import EUROPEAN, write

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = write(tmp_path, EUROPEAN, "[dataset.csv]\n" + table)
    assert _run(path, "spark") == EXIT_INVALID
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_carriage_return_in_a_quoted_field_is_refused_on_spark(spark, tmp_path, monkeypatch, capsys):
    """Spark's CSV reader reads a quoted field's CRLF as LF (Polars keeps it): the engines
    would publish other values, so the Spark run is refused before anything is reserved."""
    from test_pipeline_csv import write

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    data = 'id,smoker,income,name\r\n1,1,5.0,"a\r\nb"\r\n2,0,6.0,c\r\n'
    path = write(tmp_path, data, "", keep='["id", "income", "name"]')
    assert _run(path, "spark") == EXIT_INVALID
    err = capsys.readouterr().err
    assert "column(s) ['name'] hold a carriage return inside a quoted field" in err and "a\r" not in err, err
    assert not (tmp_path / "out").exists()
    assert _run(path, "polars") == EXIT_OK


@pytest.mark.parametrize(
    "files",
    [
        {
            "in.csv": "id,smoker,income,name\r\n1,1,5.0,a\n2,0,6.0,b\n3,1,7.0,c\n"
        },  # a CRLF header over LF rows
        {"in.csv": "id,smoker,income,name\n1,1,5.0,a\r\n2,0,6.0,b\r\n3,1,7.0,c\r\n"},  # the reverse
    ],
)
def test_mixed_line_endings_are_refused_on_spark(spark, tmp_path, monkeypatch, capsys, files):
    """Attack review 71: Spark's CSV reader takes one line separator from a file's first
    line, Polars each line's own. A CRLF header over LF rows published the next person's
    dropped name inside a kept column and lost the other rows; LF over CRLF read every
    key with a trailing CR, so a Spark re-run of a Polars run drew new coins, free."""
    from test_pipeline_csv import write

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = write(tmp_path, "", "", keep='["id", "income", "name"]')
    for name, text in files.items():
        (tmp_path / name).write_bytes(text.encode())
    assert _run(path, "spark") == EXIT_INVALID
    assert "mixes line endings" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert _run(path, "polars") == EXIT_OK


def test_spark_reading_other_rows_than_polars_counted_is_refused_before_the_commit(
    spark, tmp_path, monkeypatch, capsys
):
    """The last guard of attack review 71: whatever makes the two readers split a CSV
    otherwise, Spark's table must have the rows Polars counted, or nothing is published."""
    from test_pipeline_csv import write

    from polars_ppdm.jobs import spark_engine
    from polars_ppdm.jobs.errors import EXIT_CHANGED
    from polars_ppdm.ledger import Ledger

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = write(
        tmp_path,
        "id,smoker,income,name\n1,1,5.0,a\n2,0,6.0,b\n3,1,7.0,c\n",
        "",
        keep='["id", "income", "name"]',
    )
    read = spark_engine.scan

    def one_row_lost(*args, **kwargs):
        return read(*args, **kwargs).limit(2)

    monkeypatch.setattr(spark_engine, "scan", one_row_lost)
    assert _run(path, "spark") == EXIT_CHANGED
    assert "other rows than Polars counts" in capsys.readouterr().err
    ledgers = list(tmp_path.rglob("*.duckdb"))
    assert all(
        Ledger(ledger).table().filter(pl.col("status") == "succeeded").is_empty() for ledger in ledgers
    )
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_spark_run_again_spends_nothing(spark, tmp_path, monkeypatch):
    """Spark names its part files after the write job: a re-run's bytes are never the
    recorded ones, so its table is recorded by its rows (it was refused, exit 6)."""
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = copy_example("survey", tmp_path)
    assert _run(path, "spark") == EXIT_OK
    first = _outputs(path.parent / "out" / "manifest.json")
    assert _run(path, "spark") == EXIT_OK
    second = json.loads((path.parent / "out" / "manifest.json").read_text())
    assert second["epsilon"]["identical_rerun"] is True and second["epsilon"]["spent_by_this_run"] == 0
    again = _outputs(path.parent / "out" / "manifest.json")
    for output, frame in first.items():
        assert again[output].sort(frame.columns).equals(frame.sort(frame.columns)), output
    # ... and on Polars, without the Spark table in place: compared with the recorded rows.
    shutil.rmtree(path.parent / "out" / "survey_perturbed.parquet")
    assert _run(path, "polars") == EXIT_OK


def test_an_engine_that_reads_one_value_otherwise_is_refused_on_a_rerun(spark, tmp_path, monkeypatch, capsys):
    """Were the engines to differ in one value, a run on the other engine would publish
    new coins for it under the first run's charge: the rows are compared first."""
    import polars_ppdm.spark as ppdm_spark

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = copy_example("survey", tmp_path)
    assert _run(path, "polars") == EXIT_OK
    table = path.parent / "out" / "survey_perturbed.parquet"
    published = table.read_bytes()
    real = ppdm_spark.rr_disguise

    def one_value_read_otherwise(frame, columns, **kwargs):
        from pyspark.sql import functions as F

        if columns == ["smoker"]:  # respondent 1's smoker value read as the other one
            frame = frame.withColumn(
                "smoker", F.when(F.col("respondent_id") == 1, ~F.col("smoker")).otherwise(F.col("smoker"))
            )
        return real(frame, columns, **kwargs)

    monkeypatch.setattr(ppdm_spark, "rr_disguise", one_value_read_otherwise)
    capsys.readouterr()
    assert _run(path, "spark") == EXIT_CHANGED
    assert "perturbed table now has other bits" in capsys.readouterr().err
    assert table.read_bytes() == published  # nothing published
    monkeypatch.setattr(ppdm_spark, "rr_disguise", real)
    table.write_bytes(published + b"\n")  # the recorded table no longer in place: nothing to compare with
    assert _run(path, "spark") == EXIT_CHANGED
    assert "does not hold that table" in capsys.readouterr().err


def test_a_csv_table_written_by_spark_holds_the_polars_rows(spark, tmp_path, monkeypatch):
    """Attack review 77: Spark's CSV writer escaped a quote with a backslash (Polars read
    `say "hi"` back as `say \\hi\\`: two tables had one row digest), trimmed whitespace (a
    tab became an empty string) and cut times to milliseconds. Written as RFC 4180 now:
    a run on either engine after the other spends nothing, and the tables are equal."""
    from test_pipeline_csv import write

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    data = (
        "id,smoker,name,at\n"
        '1,1," lead",2020-01-01T00:00:00.123456\n2,0,"trail ",2020-01-01T00:00:00.000001\n'
        '3,1,"\t",2021-06-30T23:59:59.999999\n4,0,"say ""hi""",2020-01-01T00:00:00\n'
        '5,1,"a\\\\b",2020-01-01T00:00:00\n6,0,"",2020-01-01T00:00:00\n7,1,,2020-01-01T00:00:00\n'
    )
    tables = {}
    for first, second in (("polars", "spark"), ("spark", "polars")):
        folder = tmp_path / first
        folder.mkdir()
        path = write(folder, data, "", keep='["id", "name", "at"]')
        path.write_text(path.read_text().replace("out/table.parquet", "out/table.csv"))
        assert _run(path, first) == EXIT_OK
        tables[first] = _outputs(path.parent / "out" / "manifest.json")["table.csv"]
        assert _run(path, second) == EXIT_OK  # the same rows: an identical re-run
        again = json.loads((path.parent / "out" / "manifest.json").read_text())
        assert again["epsilon"]["spent_by_this_run"] == 0
    names = tables["polars"].sort("id")["name"].to_list()
    assert names == [" lead", "trail ", "\t", 'say "hi"', "a\\\\b", "", None]
    for table in tables.values():
        assert table.sort("id").equals(tables["polars"].sort("id"))


@pytest.mark.parametrize(
    ("column", "values", "types"),
    [
        ("x", ["1.5", "inf", "nan"], 'x = "Float64"'),
        ("day", ["2020-01-01", "2020/01/02", "2020-01-03"], 'day = "Date"'),
    ],
)
def test_values_spark_reads_as_null_are_refused_before_any_output(
    spark, tmp_path, monkeypatch, capsys, column, values, types
):
    """Attack review 77: Spark's CSV reader took inf, nan or a date as 2020/01/02 for a
    null where Polars reads a value; a Spark run published the nulls, exit 0."""
    from test_pipeline_csv import write

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    rows = "".join(f"{i},{i % 2},{v}\n" for i, v in enumerate(values, 1))
    path = write(
        tmp_path,
        f"id,smoker,{column}\n{rows}",
        f"[dataset.csv]\ntypes = {{ {types} }}",
        keep=f'["id", "{column}"]',
    )
    assert _run(path, "spark") == EXIT_CHANGED
    err = capsys.readouterr().err
    assert f"reads some values of ['{column}'] as nulls" in err and "inf" not in err.split("(e.g.")[0]
    assert not (tmp_path / "out" / "table.parquet").exists()
    assert _run(path, "polars") == EXIT_OK


@pytest.mark.parametrize(
    ("column", "said"),
    [
        (pl.Series("d", [1, -86_400_000_000, None]).cast(pl.Duration("us")), "['d'] are a Duration"),
        (
            pl.Series("t", [0, 1, 2]).cast(pl.Datetime("us")).dt.replace_time_zone("Europe/Paris"),
            "['t'] are a Datetime in a time zone",
        ),
        (pl.Series("u", [0, 2**64 - 1, None], dtype=pl.UInt64), "['u'] are a UInt64"),
        (pl.Series("i", [0, 2**100, None], dtype=pl.Int128), "['i'] are an Int128"),  # review 79
        (pl.Series("n", [None, None, None], dtype=pl.Null), "['n'] are of type Null"),
        (pl.Series("h", [0, 1, 2]).cast(pl.Time), "['h'] are a Time"),
        (pl.Series("s", [0, 1, 2]).cast(pl.Datetime("ns")), "['s'] are a Datetime in nanoseconds"),
    ],
    ids=["duration", "zoned time", "uint64", "int128", "null", "time", "nanoseconds"],
)
def test_types_spark_holds_otherwise_are_refused_before_anything_is_reserved(
    spark, tmp_path, monkeypatch, capsys, column, said
):
    """Attack review 77: Spark published a Duration as Int64 and a zoned time as a naive
    one (moved), or failed with a bare AssertionError after the reservation."""
    from test_pipeline_csv import write

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    path = write(tmp_path, "", "", keep=f'["id", "{column.name}"]')
    path.write_text(path.read_text().replace('"in.csv"', '"in.parquet"'))
    pl.DataFrame({"id": [1, 2, 3], "smoker": [True, False, True], column.name: column}).write_parquet(
        tmp_path / "in.parquet"
    )
    assert _run(path, "spark") == EXIT_INVALID
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert _run(path, "polars") == EXIT_OK
