"""A re-run is checked by its table's rows where the file's bytes cannot tell (another
engine, another writer): the content digest takes each value by its meaning, whatever the
order, part files, integer width or time unit, and tells apart any value changed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest
from test_pipeline_run import SECRET, copy_example, outputs

import polars_ppdm as ppdm
from polars_ppdm.jobs import run as run_module
from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.errors import EXIT_CHANGED, EXIT_OK
from polars_ppdm.jobs.table_content import content_key, published_content
from polars_ppdm.ledger import Ledger

KEY = content_key(ppdm.Secret.for_tests(7))

TABLE = pl.DataFrame(
    {
        "id": [1, 2, 3, None],
        "x": [0.5, float("nan"), -1.25, None],
        "name": ["a", "", None, "ü"],
        "flag": [True, None, False, True],
        "day": [dt.date(2020, 1, 1), None, dt.date(1969, 12, 31), dt.date(2262, 4, 12)],
        "at": [dt.datetime(2020, 1, 1, 1, 2, 3, 4), None, dt.datetime(1900, 1, 1), dt.datetime(2020, 1, 1)],
        "cat": pl.Series(["x", "y", None, "x"], dtype=pl.Categorical),
        "tags": [[1, 2], None, [], [3]],
    }
)


def _digest(
    tmp_path: Path, frame: pl.DataFrame, *, csv: bool = False, name: str = "t", parts: int = 1
) -> str:
    """The digest of ``frame`` written as one file, or as a folder of ``parts`` part files."""
    suffix = ".csv" if csv else ".parquet"
    if parts == 1:
        path = tmp_path / f"{name}{suffix}"
        frame.write_csv(path) if csv else frame.write_parquet(path)
    else:
        path = tmp_path / f"{name}{suffix}"
        path.mkdir()
        size = -(-frame.height // parts)
        for i, part in enumerate(frame.iter_slices(size)):
            file = path / f"part-{i:05d}-x{suffix}"
            part.write_csv(file) if csv else part.write_parquet(file)
    return published_content(KEY, path, csv=csv, schema=TABLE.schema if not csv else frame.schema)


def test_the_same_rows_stored_otherwise_have_one_digest(tmp_path):
    want = _digest(tmp_path, TABLE, name="whole")
    assert _digest(tmp_path, TABLE.reverse(), name="reversed") == want  # Spark keeps no row order
    assert _digest(tmp_path, TABLE, name="parts", parts=3) == want  # nor one file
    stored_otherwise = TABLE.with_columns(
        pl.col("id").cast(pl.Int32),  # Spark's int
        pl.col("x").cast(pl.Float32).cast(pl.Float64),
        pl.col("at").dt.cast_time_unit("ns"),  # Spark's INT96 reads back in nanoseconds
        pl.col("cat").cast(pl.String),
    )
    assert _digest(tmp_path, stored_otherwise, name="other_types") == want


@pytest.mark.parametrize(
    "change",
    [
        pl.col("x").replace(0.5, 0.5000000000000001),  # the lowest bit of one float
        pl.col("name").replace("", None),  # an empty string for a null
        pl.col("flag").fill_null(False),
        pl.col("at").dt.offset_by("1us"),
        pl.col("id").replace(3, 4),
    ],
    ids=["float bit", "empty string", "null", "microsecond", "integer"],
)
def test_any_value_changed_changes_the_digest(tmp_path, change):
    changed = TABLE.with_columns(change)
    assert not changed.equals(TABLE)
    assert _digest(tmp_path, changed, name="changed") != _digest(tmp_path, TABLE, name="whole")


def test_rows_moved_between_columns_or_renamed_or_dropped_differ(tmp_path):
    want = _digest(tmp_path, TABLE, name="whole")
    swapped = TABLE.with_columns(pl.col("name").reverse())
    assert _digest(tmp_path, swapped, name="swapped") != want  # the same multiset of each column
    assert _digest(tmp_path, TABLE.head(3), name="fewer") != want
    assert _digest(tmp_path, pl.concat([TABLE, TABLE.head(1)]), name="more") != want
    renamed = TABLE.rename({"x": "y"})
    path = tmp_path / "renamed.parquet"
    renamed.write_parquet(path)
    assert published_content(KEY, path, csv=False, schema=renamed.schema) != want


def test_csv_text_is_read_as_the_published_types(tmp_path):
    flat = TABLE.drop("tags", "cat")
    from_csv = _digest(tmp_path, flat, csv=True, name="flat")
    path = tmp_path / "flat.parquet"
    flat.write_parquet(path)
    assert published_content(KEY, path, csv=False, schema=flat.schema) == from_csv
    # Another engine's spelling of the same floats (Java's Double.toString).
    spelled = tmp_path / "spelled.csv"
    spelled.write_text((tmp_path / "flat.csv").read_text().replace("-1.25", "-1.25E0"))
    assert published_content(KEY, spelled, csv=True, schema=flat.schema) == from_csv


def test_another_key_gives_another_digest(tmp_path):
    path = tmp_path / "t.parquet"
    TABLE.write_parquet(path)
    other = content_key(ppdm.Secret.for_tests(8))
    assert published_content(other, path, csv=False, schema=TABLE.schema) != published_content(
        KEY, path, csv=False, schema=TABLE.schema
    )


# ---- the re-run of a recorded run whose table has other bytes ---------------------------------


@pytest.fixture
def survey(tmp_path, monkeypatch):
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    return copy_example("survey", tmp_path)


def _run(path: Path) -> int:
    return main(["run", "--quiet", "--no-report", str(path)])


def _rewrite_table_with(monkeypatch, compression: str) -> None:
    """Polars writes the same rows into other bytes (as another Polars version may)."""
    real = pl.LazyFrame.sink_parquet

    def other_writer(self, path, *args, **kwargs):
        return real(self, path, *args, **{**kwargs, "compression": compression})

    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", other_writer)


def test_a_rerun_writing_the_same_rows_into_other_bytes_is_free(survey, monkeypatch):
    assert _run(survey) == EXIT_OK
    book = Ledger(survey.parent / "out" / "ledger.duckdb")
    spent = book.spent("survey")
    before = pl.read_parquet(survey.parent / "out" / "survey_perturbed.parquet")
    _rewrite_table_with(monkeypatch, "uncompressed")
    assert _run(survey) == EXIT_OK  # compared by its rows with the recorded table in place
    assert book.spent("survey") == spent
    assert pl.read_parquet(survey.parent / "out" / "survey_perturbed.parquet").equals(before)
    run_id = json.loads((survey.parent / "out" / "manifest.json").read_text())["run_id"]
    recorded = book.recorded_outputs(run_id)
    assert recorded is not None and {"perturbed table", "perturbed table (content)"} <= set(recorded)
    # The rows' digest recorded now: the next re-run no longer needs the table in place.
    (survey.parent / "out" / "survey_perturbed.parquet").unlink()
    _rewrite_table_with(monkeypatch, "gzip")
    assert _run(survey) == EXIT_OK
    assert pl.read_parquet(survey.parent / "out" / "survey_perturbed.parquet").equals(before)


def test_a_rerun_with_other_rows_is_refused_whatever_its_bytes(survey, monkeypatch, capsys):
    assert _run(survey) == EXIT_OK
    first = outputs(survey.parent)
    _rewrite_table_with(monkeypatch, "uncompressed")
    real = run_module._perturbed

    def one_coin_more(pipeline, frame, secret, api):  # a step that drew anew for one row
        out = real(pipeline, frame, secret, api)
        return out.with_columns(
            pl.when(pl.col("respondent_id") == 1)
            .then(~pl.col("smoker"))
            .otherwise(pl.col("smoker"))
            .alias("smoker")
        )

    monkeypatch.setattr(run_module, "_perturbed", one_coin_more)
    capsys.readouterr()
    assert _run(survey) == EXIT_CHANGED
    assert "perturbed table now has other bits" in capsys.readouterr().err
    assert outputs(survey.parent) == first  # nothing published


def test_a_rerun_with_other_bytes_and_no_recorded_table_in_place_is_refused(survey, monkeypatch, capsys):
    assert _run(survey) == EXIT_OK
    table = survey.parent / "out" / "survey_perturbed.parquet"
    table.write_bytes(table.read_bytes() + b"\n")  # no longer the recorded bytes
    _rewrite_table_with(monkeypatch, "uncompressed")
    capsys.readouterr()
    assert _run(survey) == EXIT_CHANGED
    err = capsys.readouterr().err
    assert "does not hold that table" in err and "nothing was published and nothing spent" in err


@pytest.mark.parametrize(
    "other",
    [
        pl.col("id").cast(pl.Duration("us")),  # Spark published a Duration as Int64
        pl.col("at").dt.replace_time_zone("UTC"),  # a zoned time is not a wall-clock time
        pl.col("flag").cast(pl.Int8),
        pl.col("name").cast(pl.Binary),
    ],
    ids=["duration", "time zone", "bool as int", "binary"],
)
def test_the_kind_of_a_column_counts_too(tmp_path, other):
    """Attack review 77: the same integers as a Duration, or the same instants in a zone,
    passed as the recorded rows."""
    changed = TABLE.with_columns(other)
    path = tmp_path / "changed.parquet"
    changed.write_parquet(path)
    assert published_content(KEY, path, csv=False, schema=changed.schema) != _digest(
        tmp_path, TABLE, name="whole"
    )


def test_a_recorded_table_swapped_between_its_hash_and_its_read_is_refused(survey, monkeypatch, capsys):
    """Review 79: the recorded table in place was hashed, then read again by its path; a
    file put there in between (the run's own new table) was compared as the recorded one,
    and a run over replaced data was published as a free identical re-run."""
    import shutil

    assert _run(survey) == EXIT_OK
    table = survey.parent / "out" / "survey_perturbed.parquet"
    first = table.read_bytes()
    book = Ledger(survey.parent / "out" / "ledger.duckdb")
    rows = book.table("survey")
    other = survey.parent / "replaced.csv"
    pl.read_csv(survey.parent / "survey.csv").with_columns(pl.col("age") + 1).write_csv(other)
    real_scan, real_sha = run_module.scan, run_module.file_sha256
    monkeypatch.setattr(run_module, "scan", lambda files, fmt: real_scan([other], fmt))

    def swapped_after_its_hash(path, *args, **kwargs):
        digest = real_sha(path, *args, **kwargs)
        if Path(path) == table:
            (new,) = [p for p in table.parent.iterdir() if p.name != table.name and table.stem in p.name]
            shutil.copyfile(new, table)
        return digest

    monkeypatch.setattr(run_module, "file_sha256", swapped_after_its_hash)
    capsys.readouterr()
    assert _run(survey) == EXIT_CHANGED
    assert "does not hold that table" in capsys.readouterr().err
    monkeypatch.undo()
    assert table.read_bytes() != first  # the swap happened (the race's own doing), and yet
    assert book.table("survey").equals(rows)  # nothing recorded or spent
