"""CSV inputs as they come (`[dataset.csv]`): another separator, no header, null markers,
a decimal comma, declared column types; each option read as Polars reads it, bad options
refused by name before anything is read, and a pipeline without the table keeps its run
id. (The same files on Spark: tests/spark/test_spark_pipeline.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.config import load_pipeline
from polars_ppdm.jobs.errors import EXIT_INPUT, EXIT_INVALID, EXIT_OK, PipelineError

SECRET = "8d3f0a7b52c94e61b0d2f7a3c6e15984"  # from os.urandom: not guessable

# Semicolons, decimal commas, "NA" for a missing income, a zip code whose leading zeros
# an inferred integer type would drop.
EUROPEAN = "id;zip;smoker;income\n1;00123;1;1234,5\n2;04000;0;NA\n3;10115;1;99,25\n4;00007;0;0,5\n"
PIPELINE = """
[dataset]
name = "csv"
inputs = ["in.csv"]
key = "id"
epsilon_budget = 5.0
ledger = "ledger.duckdb"
{csv}
[secret]
env = "PPDM_SECRET"
[[perturb]]
step = "rr_disguise"
columns = ["{smoker}"]
p = 0.8
[[perturb]]
step = "keep"
columns = {keep}
[output]
table = "out/table.parquet"
manifest = "out/manifest.json"
"""


def write(
    folder: Path, data: str, csv: str, smoker: str = "smoker", keep: str = '["id", "zip", "income"]'
) -> Path:
    (folder / "in.csv").write_text(data)
    path = folder / "pipeline.toml"
    path.write_text(PIPELINE.format(csv=csv, smoker=smoker, keep=keep))
    return path


def run(path: Path) -> int:
    return main(["run", "--quiet", str(path)])


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("PPDM_SECRET", SECRET)


def test_a_european_csv_is_read_as_polars_reads_it(tmp_path):
    options = {
        "separator": ";",
        "decimal_comma": True,
        "null_values": ["NA"],
        "schema_overrides": {"zip": pl.String},
    }
    path = write(
        tmp_path,
        EUROPEAN,
        '[dataset.csv]\nseparator = ";"\ndecimal_comma = true\nnull_values = ["NA"]\ntypes = { zip = "String" }',
    )
    assert run(path) == EXIT_OK
    table = pl.read_parquet(tmp_path / "out" / "table.parquet")
    expected = pl.read_csv(tmp_path / "in.csv", **options)
    assert table.select("id", "zip", "income").equals(expected.select("id", "zip", "income"))
    assert table["zip"].to_list() == ["00123", "04000", "10115", "00007"]
    assert table["income"].to_list() == [1234.5, None, 99.25, 0.5]
    assert table.height == 4 and table["smoker"].is_in([0, 1]).all()


def test_a_file_without_a_header_names_its_columns_column_1_and_on(tmp_path):
    data = "".join(line + "\n" for line in EUROPEAN.splitlines()[1:]).replace(";", "|").replace(",", ".")
    path = write(
        tmp_path,
        data.replace("NA", ""),
        '[dataset.csv]\nseparator = "|"\nhas_header = false\ntypes = { column_2 = "String" }',
        smoker="column_3",
        keep='["column_1", "column_2", "column_4"]',
    )
    path.write_text(path.read_text().replace('key = "id"', 'key = "column_1"'))
    assert run(path) == EXIT_OK
    table = pl.read_parquet(tmp_path / "out" / "table.parquet")
    assert table.columns == ["column_1", "column_2", "column_3", "column_4"]
    assert table["column_2"].to_list() == ["00123", "04000", "10115", "00007"]
    assert table["column_4"].to_list() == [1234.5, None, 99.25, 0.5]


def test_quoting_turned_off_reads_quotes_as_characters(tmp_path):
    data = 'id,smoker,name\n1,1,"a\n2,0,b"\n3,1,c\n'
    path = write(tmp_path, data, '[dataset.csv]\nquote_char = ""', keep='["id", "name"]')
    assert run(path) == EXIT_OK
    assert pl.read_parquet(tmp_path / "out" / "table.parquet")["name"].to_list() == ['"a', 'b"', "c"]


def test_the_same_bits_with_the_options_as_from_the_same_data_in_plain_csv(tmp_path):
    """The options change how the file is parsed, not the draws: a semicolon file and the
    same data with commas give the same perturbed table (the run ids differ: the pipeline
    does)."""
    plain, european = tmp_path / "plain", tmp_path / "european"
    plain.mkdir()
    european.mkdir()
    data = "id,smoker,score\n" + "".join(f"{i},{i % 3 == 0:d},{i / 4}\n" for i in range(200))
    one = write(plain, data, "", keep='["id", "score"]')
    two = write(
        european, data.replace(",", ";").replace(".", ","), '[dataset.csv]\nseparator = ";"\ndecimal_comma = true',
        keep='["id", "score"]',
    )  # fmt: skip
    assert run(one) == EXIT_OK and run(two) == EXIT_OK
    first, second = (pl.read_parquet(p.parent / "out" / "table.parquet") for p in (one, two))
    assert first.equals(second)
    ids = [json.loads((p.parent / "out" / "manifest.json").read_text())["run_id"] for p in (one, two)]
    assert ids[0] != ids[1]


def test_a_pipeline_without_the_table_keeps_its_run_id(tmp_path):
    """[dataset.csv] left out is not in the canonical content (the run ids of pipelines
    written before it do not change); given, even with the defaults, it is."""
    path = write(tmp_path, EUROPEAN, "")
    without = load_pipeline(path).canonical()
    assert "csv" not in without["dataset"]
    path = write(tmp_path, EUROPEAN, "[dataset.csv]")
    assert load_pipeline(path).canonical()["dataset"]["csv"]["separator"] == ","


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('separator = ";;"', "separator"),
        ('separator = ""', "separator"),
        ('separator = "é"', "separator"),
        ("quote_char = \"''\"", "quote_char"),
        ('separator = ";"\nquote_char = ";"', "'quote_char' and 'separator' are both ';'"),
        ("decimal_comma = true", "'decimal_comma' = true needs another 'separator'"),
        ('types = { zip = "Int128" }', "types"),
        ('types = { zip = "str" }', "'Boolean', 'Int8'"),
        ("has_header = 1", "has_header"),
        ('encoding = "latin1"', "encoding"),
    ],
)
def test_bad_options_are_refused_by_name(tmp_path, capsys, table, said):
    path = write(tmp_path, EUROPEAN, "[dataset.csv]\n" + table)
    assert run(path) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "dataset" in err and "csv" in err and said in err, err
    assert not (tmp_path / "out").exists()


def test_a_declared_type_of_an_absent_column_names_the_columns(tmp_path, capsys):
    path = write(tmp_path, EUROPEAN, '[dataset.csv]\nseparator = ";"\ntypes = { postcode = "String" }')
    assert run(path) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "[dataset.csv] types: ['postcode'] are not columns" in err and "'zip'" in err, err


def test_csv_options_for_parquet_inputs_are_refused(tmp_path, capsys):
    path = write(tmp_path, EUROPEAN, '[dataset.csv]\nseparator = ";"')
    pl.DataFrame({"id": [1, 2], "smoker": [0, 1], "zip": ["a", "b"], "income": [1.0, 2.0]}).write_parquet(
        tmp_path / "in.parquet"
    )
    path.write_text(path.read_text().replace("in.csv", "in.parquet"))
    assert run(path) == EXIT_INVALID
    assert (
        "[dataset.csv] gives the options of a CSV reader, but the inputs are 'parquet' files"
        in capsys.readouterr().err
    )


def test_a_value_the_declared_type_cannot_hold_is_refused_before_anything_is_spent(tmp_path, capsys):
    path = write(tmp_path, EUROPEAN, '[dataset.csv]\nseparator = ";"\ntypes = { income = "Float64" }')
    assert run(path) == EXIT_INPUT  # "1234,5" is no float without decimal_comma
    err = capsys.readouterr().err
    assert "cannot be read" in err and "1234" not in err, err
    assert not (tmp_path / "out").exists()


def test_a_null_in_a_disguised_column_is_refused_unless_the_step_keeps_it(tmp_path, capsys):
    """Randomized response publishes a null as null: whether a person's answer is missing
    would go out undisguised, with certainty, whatever the epsilon. Refused before
    anything is reserved; nulls = "keep" publishes them and says so."""
    data = "id,smoker,income\n1,1,5.0\n2,,6.0\n3,0,7.0\n"
    path = write(tmp_path, data, "", keep='["id", "income"]')
    assert run(path) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "field 'nulls': column 'smoker' has null values" in err and 'nulls = "keep"' in err, err
    assert not (tmp_path / "out").exists()
    from polars_ppdm.ledger import Ledger

    if (tmp_path / "ledger.duckdb").exists():
        assert Ledger(tmp_path / "ledger.duckdb").table().height == 0
    path.write_text(path.read_text().replace("p = 0.8\n", 'p = 0.8\nnulls = "keep"\n'))
    assert run(path) == EXIT_OK
    table = pl.read_parquet(tmp_path / "out" / "table.parquet")
    assert table["smoker"].is_null().to_list() == [False, True, False]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert "whether a value is missing is not disguised" in json.dumps(manifest)


def test_a_header_only_file_is_a_table_of_no_rows_when_every_type_is_declared(tmp_path, capsys):
    header = "id,smoker,zip,income\n"
    path = write(tmp_path, header, "")
    assert run(path) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "has a header but no rows" in err and "[dataset.csv] types" in err, err
    path = write(
        tmp_path,
        header,
        '[dataset.csv]\ntypes = { id = "Int64", smoker = "Int64", zip = "String", income = "Float64" }',
    )
    assert run(path) == EXIT_OK
    table = pl.read_parquet(tmp_path / "out" / "table.parquet")
    assert table.height == 0 and table.schema["income"] == pl.Float64 and table.schema["zip"] == pl.String


def test_files_of_a_glob_read_as_other_types_are_told_to_declare_them(tmp_path, capsys):
    (tmp_path / "day").mkdir()
    (tmp_path / "day" / "1.csv").write_text("id,smoker,zip,income\n1,1,00123,5.5\n")
    (tmp_path / "day" / "2.csv").write_text("id,smoker,zip,income\n2,0,04000,6\n")
    path = write(tmp_path, "", "")
    path.write_text(path.read_text().replace('inputs = ["in.csv"]', 'inputs = ["day/*.csv"]'))
    assert run(path) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "declare them in [dataset.csv] types" in err, err
    path = write(tmp_path, "", '[dataset.csv]\ntypes = { income = "Float64" }')
    path.write_text(path.read_text().replace('inputs = ["in.csv"]', 'inputs = ["day/*.csv"]'))
    assert run(path) == EXIT_OK
    assert pl.read_parquet(tmp_path / "out" / "table.parquet")["income"].to_list() == [5.5, 6.0]


def test_a_number_with_a_decimal_comma_read_as_text_is_told_what_reads_it(tmp_path, capsys):
    path = write(tmp_path, 'id,smoker,zip,income\n1,1,00123,"5,5"\n', "")
    path.write_text(
        path.read_text().replace(
            'step = "keep"', 'step = "add_noise"\nscale = 1.0\n[[perturb]]\nstep = "keep"'
        )
    )
    path.write_text(path.read_text().replace('columns = ["id", "zip", "income"]', 'columns = ["id", "zip"]'))
    path.write_text(
        path.read_text().replace(
            'step = "add_noise"\nscale = 1.0\n[[perturb]]',
            'step = "add_noise"\nscale = 1.0\ncolumns = ["income"]\n[[perturb]]',
        )
    )
    assert run(path) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "Got dtype String" in err and "decimal_comma = true" in err, err


def test_a_null_a_dp_release_would_refuse_is_refused_before_anything_is_reserved(tmp_path, capsys):
    from polars_ppdm.ledger import Ledger

    path = write(
        tmp_path, EUROPEAN, '[dataset.csv]\nseparator = ";"\ndecimal_comma = true\nnull_values = ["NA"]'
    )
    path.write_text(
        path.read_text().replace(
            "[output]",
            '[[release]]\nstep = "dp_histogram"\ncolumns = ["income"]\nbounds = { income = [0.0, 2000.0] }\n'
            'epsilon = 0.5\noutput = "out/income.parquet"\n\n[output]',
        )
    )
    assert run(path) == EXIT_INVALID
    err = capsys.readouterr().err
    assert (
        "[[release]] 1 dp_histogram(income): column 'income' has null, NaN or infinite values, which a DP release refuses"
        in err
    )
    assert "Nothing was reserved or released." in err
    ledger = tmp_path / "ledger.duckdb"
    assert not ledger.exists() or Ledger(ledger).table().height == 0


def test_a_wrong_separator_is_suggested_and_one_null_value_may_be_a_string(tmp_path, capsys):
    path = write(tmp_path, EUROPEAN, '[dataset.csv]\nnull_values = "NA"')
    # "1;00123;1;1234,5" read with ',': two fields in a row under a one-field header.
    assert run(path) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "found more fields than defined" in err and "is [dataset.csv] separator the file's?" in err, err
    assert "1234" not in err and "00123" not in err


def test_timestamps_read_as_a_declared_datetime(tmp_path):
    data = "id,smoker,seen\n1,1,2026-11-29 10:00:00\n2,0,2026-11-30 11:30:00\n"
    path = write(tmp_path, data, '[dataset.csv]\ntypes = { seen = "Datetime" }', keep='["id", "seen"]')
    assert run(path) == EXIT_OK
    table = pl.read_parquet(tmp_path / "out" / "table.parquet")
    assert isinstance(table.schema["seen"], pl.Datetime) and table["seen"].dt.hour().to_list() == [10, 11]


def test_the_report_reads_a_published_csv_with_the_declared_types(tmp_path):
    """The run read zip as text (00123); the report re-read the published CSV by inference
    and drew 123 (review 54)."""
    from polars_ppdm.jobs.report import _published

    path = write(
        tmp_path,
        EUROPEAN,
        '[dataset.csv]\nseparator = ";"\ndecimal_comma = true\nnull_values = ["NA"]\ntypes = { zip = "String" }',
    )
    path.write_text(path.read_text().replace('table = "out/table.parquet"', 'table = "out/table.csv"'))
    assert run(path) == EXIT_OK
    table, _ = _published(tmp_path / "out" / "table.csv", {"zip": "String"})
    assert table["zip"].to_list() == ["00123", "04000", "10115", "00007"]
    assert main(["report", str(path)]) == EXIT_OK


def test_a_nan_or_infinity_a_dp_release_would_refuse_is_refused_before_anything_is_reserved(tmp_path, capsys):
    from polars_ppdm.ledger import Ledger

    path = write(
        tmp_path,
        EUROPEAN.replace("99,25", "inf"),
        '[dataset.csv]\nseparator = ";"\ndecimal_comma = true\nnull_values = ["NA"]',
    )
    path.write_text(
        path.read_text().replace(
            "[output]",
            '[[release]]\nstep = "dp_histogram"\ncolumns = ["id"]\nbounds = { id = [0.0, 10.0] }\n'
            'epsilon = 0.5\noutput = "out/id.parquet"\n\n'
            '[[release]]\nstep = "dp_group_by"\nby = ["smoker"]\nepsilon = 0.5\n'
            "public_groups = [{ smoker = 0 }, { smoker = 1 }]\n"
            'aggregates = [{ aggregate = "sum", column = "income", bounds = [0.0, 2000.0] }]\n'
            'output = "out/income.parquet"\n\n[output]',
        )
    )
    assert run(path) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "[[release]] 2 dp_group_by" in err and "column 'income' has null, NaN or infinite values" in err, (
        err
    )
    assert "dp_histogram" not in err
    ledger = tmp_path / "ledger.duckdb"
    assert not ledger.exists() or Ledger(ledger).table().height == 0


@pytest.mark.parametrize(
    ("data", "counts", "refused"),
    [
        (b"a,b\n1,2\n3,4\n", (0, 3, 0, b"\n"), False),
        (b"a,b\r\n1,2\r\n3,4\r\n", (3, 0, 0, b"\r\n"), False),
        (b"a,b\r\n1,2\n3,4\n", (1, 2, 0, b"\r\n"), True),  # the header's CRLF over rows' LF (review 71)
        (b'a,b\r\n1,"x\ny"\r\n3,"p""\nq"\r\n', (3, 0, 0, b"\r\n"), False),  # quoted line breaks
        (b'1,"x\ny",a\r\n2,z,b\r\n', (2, 0, 0, b"\n"), True),  # Spark takes the quoted LF (review 72)
        (b"a,b\r1,2\r", (0, 0, 2, b"\r"), True),
        (b"a,b\n" + b"1,2\r\n" * 300_000, (300_000, 1, 0, b"\n"), True),  # CRLFs across 1 MiB chunks
        (b"a,b", (0, 0, 0, b""), False),
    ],
)
def test_line_endings_are_counted_outside_quoted_fields(tmp_path, data, counts, refused):
    """What --engine spark refuses before anything is reserved: Spark's reader takes one
    line separator per file, from its first line break (a quoted one too), Polars each
    line's own."""
    from polars_ppdm.jobs.spark_engine import _line_endings, check_line_endings

    path = tmp_path / "in.csv"
    path.write_bytes(data)
    assert _line_endings(path, '"') == counts
    if refused:
        with pytest.raises(PipelineError, match="mixes line endings"):
            check_line_endings([path])
    else:
        check_line_endings([path])
