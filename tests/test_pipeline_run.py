"""`ppdm run` / `ppdm plan` on the example pipelines (issue 15): plan and run agree on
epsilon, an identical re-run spends nothing and writes byte-identical outputs, a changed
input or secret spends again, overspend is refused before any input is opened, exit
statuses, the secret never leaves, progress only on a terminal."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.jobs.commands import main
from polars_ppdm.jobs.errors import EXIT_BUDGET, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SECRET = (
    "5e3b9a1cc0ffee0071d24f86a9e0b35c2d8e17f64a90c3b5e2718d6f09ab4c31"  # 64 hex digits, no guessable pattern
)
OTHER_SECRET = (
    "cf566d014b7b01c047a305a1f720c1ccbc4ea0eab23f670c1dd25f6d2a0e94f4"  # from os.urandom: not guessable
)


def set_secret(folder: Path, secret: str) -> None:
    """The secret of a copied example: events reads PPDM_SECRET (set by the caller),
    survey its 0600 file ppdm.secret (as `ppdm secret --output` writes it)."""
    from polars_ppdm.secret_files import write_secret_text

    if 'file = "ppdm.secret"' in (folder / "pipeline.toml").read_text():
        write_secret_text(folder / "ppdm.secret", secret, overwrite=True)


def copy_example(name: str, folder: Path, secret: str = SECRET) -> Path:
    target = folder / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("out", "ppdm.secret"))
    set_secret(target, secret)
    return target / "pipeline.toml"


@pytest.fixture
def example(tmp_path, monkeypatch):
    """A copy of examples/NAME (the tests never write into the repository)."""
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    return lambda name: copy_example(name, tmp_path)


def run(*args: str) -> int:
    return main(["run", "--quiet", *args])


def outputs(folder: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes() for p in sorted((folder / "out").iterdir()) if p.suffix in (".parquet", ".csv")
    }


def manifest(path: Path) -> dict:
    return json.loads((path.parent / "out" / "manifest.json").read_text())


@pytest.mark.parametrize("name", ["survey", "events"])
def test_plan_and_run_agree_on_epsilon(example, capsys, name):
    path = example(name)
    assert main(["plan", "--json", str(path)]) == EXIT_OK
    plan = json.loads(capsys.readouterr().out)
    assert run(str(path)) == EXIT_OK
    got = manifest(path)
    planned = [(s["step"], s["epsilon"]) for s in plan["steps"] if s["epsilon"] is not None]
    assert planned == [(r["step"], r["epsilon"]) for r in got["epsilon"]["releases"]]
    assert plan["epsilon"] == got["epsilon"]["total"] == got["epsilon"]["spent_by_this_run"]
    assert got["status"] == "succeeded" and got["exit_code"] == 0
    # The plan after the run starts from what the run left.
    assert main(["plan", "--json", str(path)]) == EXIT_OK
    after = json.loads(capsys.readouterr().out)
    assert after["left_before"] == pytest.approx(plan["left_after"])


def test_survey_outputs(example):
    path = example("survey")
    assert run(str(path)) == EXIT_OK
    table = pl.read_parquet(path.parent / "out" / "survey_perturbed.parquet")
    source = pl.read_csv(path.parent / "survey.csv")
    assert table.columns == ["age", "income", "smoker", "vote", "region"]  # key and name dropped
    assert table.height == source.height
    assert table["region"].to_list() == source["region"].to_list()  # kept as is
    assert set(table["vote"].unique()) <= {"green", "red", "blue", "none"}
    assert (table["income"] != source["income"]).all()
    got = manifest(path)
    assert [o["rows"] for o in got["outputs"]] == [1000, 2]
    for output in got["outputs"]:
        assert hashlib.sha256(Path(output["path"]).read_bytes()).hexdigest() == output["sha256"]
    data = (path.parent / "survey.csv").read_bytes()
    block = hashlib.sha256(data).digest()  # one 64 MiB block
    top = hashlib.sha256(b"polars_ppdm/input/64MiB-blocks\x00" + len(data).to_bytes(8, "big") + block)
    # Keyed: a plain hash would let anyone holding a candidate input confirm it.
    assert got["inputs"][0]["fingerprint"] != top.hexdigest()
    key = ppdm.resolve_secret(SECRET).key
    keyed = hmac.new(key, b"polars_ppdm/manifest-input\x00" + top.hexdigest().encode(), hashlib.sha256)
    assert got["inputs"][0]["fingerprint"] == keyed.hexdigest()


def test_two_datasets_under_one_secret_draw_apart(example):
    """Review 50: the row-wise steps ran under the pipeline's secret itself, so two surveys
    whose ids overlap (1..n in each) gave the person with id 7 in one the coins of the person
    with id 7 in the other, for a column of the same name and the same value: whoever knew
    their own value and released bit learned, with certainty, the other survey's value for
    about a quarter of its people. Each dataset's steps now run under its own secret."""
    path = example("survey")
    other = path.parent / "other.toml"
    other.write_text(
        path.read_text()
        .replace('name = "survey"', 'name = "survey_b"')
        .replace("survey_perturbed.parquet", "b_perturbed.parquet")
        .replace("out/", "out_b/")
    )
    assert run(str(path)) == EXIT_OK and run(str(other)) == EXIT_OK
    a = pl.read_parquet(path.parent / "out" / "survey_perturbed.parquet")
    b = pl.read_parquet(path.parent / "out_b" / "b_perturbed.parquet")
    # The same people and values: under one secret every released bit was the same.
    assert (a["smoker"] != b["smoker"]).sum() > 100
    assert (a["income"] != b["income"]).all()
    # Each is the library's call under HMAC(secret, dataset name), bit for bit.
    from polars_ppdm.jobs.run import perturbation_secret

    source = pl.read_csv(path.parent / "survey.csv")
    own = perturbation_secret(ppdm.resolve_secret(SECRET), "survey")
    expected = ppdm.rr_disguise(source, "smoker", epsilon=1.0, secret=own, key="respondent_id")
    assert a["smoker"].equals(expected["smoker"])


def test_identical_rerun_spends_nothing_and_writes_the_same_bytes(example):
    path = example("survey")
    assert run(str(path)) == EXIT_OK
    first, first_manifest = outputs(path.parent), manifest(path)
    assert run(str(path)) == EXIT_OK
    again = manifest(path)
    assert outputs(path.parent) == first
    assert again["run_id"] == first_manifest["run_id"]
    assert again["epsilon"]["spent_by_this_run"] == 0 and again["epsilon"]["identical_rerun"] is True
    from polars_ppdm.ledger import Ledger

    assert Ledger(path.parent / "out" / "ledger.duckdb").spent("survey") == pytest.approx(2.5)


def test_changed_input_or_secret_is_a_new_run_that_spends(example, monkeypatch):
    from polars_ppdm.ledger import Ledger

    path = example("survey")
    book = path.parent / "out" / "ledger.duckdb"
    assert run(str(path)) == EXIT_OK
    first = outputs(path.parent)
    data = path.parent / "survey.csv"
    frame = pl.read_csv(data)
    frame.with_columns(
        pl.when(pl.col("respondent_id") == 1).then(99).otherwise(pl.col("age")).alias("age")
    ).write_csv(data)
    assert run(str(path)) == EXIT_OK
    assert Ledger(book).spent("survey") == pytest.approx(5.0)
    set_secret(path.parent, OTHER_SECRET)
    frame.write_csv(data)  # the first input again, under another secret
    assert main(["run", "--quiet", str(path)]) == EXIT_BUDGET  # 2.5 more than the 1 left
    set_secret(path.parent, SECRET)
    assert run(str(path)) == EXIT_OK  # the first run again: spends nothing, same bytes
    assert outputs(path.parent) == first
    assert Ledger(book).spent("survey") == pytest.approx(5.0)


def test_two_secrets_with_the_same_fingerprint_are_two_runs(example, monkeypatch):
    # The fingerprint is 32 bits (for people, in manifests): the run id must not rest on
    # it, or a colliding secret would pass for an identical re-run and spend nothing.
    from polars_ppdm.jobs.config import load_pipeline
    from polars_ppdm.jobs.run import run_id
    from polars_ppdm.secret import Secret

    monkeypatch.setattr(Secret, "fingerprint", lambda self: "00000000")
    pipeline = load_pipeline(example("survey"))
    first, second = Secret.from_hex(SECRET), Secret.from_hex(OTHER_SECRET)
    assert run_id(pipeline, ["f"], first) == run_id(pipeline, ["f"], Secret.from_hex(SECRET))
    assert run_id(pipeline, ["f"], first) != run_id(pipeline, ["f"], second)


def test_dp_noise_is_fresh_when_the_data_changed(example):
    # Same secret, tonight's data differs only in an x of one row, so the amount
    # histogram's true counts are the same.  Noise keyed by the secret alone would repeat
    # and the two releases would be equal (a difference of two nights would then be the
    # exact difference of the true counts); keyed by the run, the noise is fresh.  An
    # identical re-run still draws the same noise.
    path = example("events")
    release = path.parent / "out" / "amount_histogram.parquet"
    assert run(str(path)) == EXIT_OK
    first = pl.read_parquet(release)
    assert run(str(path)) == EXIT_OK
    assert pl.read_parquet(release).equals(first)
    data = path.parent / "events.parquet"
    frame = pl.read_parquet(data)
    frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(pl.col("x") / 2).otherwise("x").alias("x")
    ).write_parquet(data)
    assert run(str(path)) == EXIT_OK
    second = pl.read_parquet(release)
    assert second.drop("count").equals(first.drop("count"))
    # 10 bins of independent discrete Laplace noise (scale 8 / 0.5): all 10 equal by chance
    # has probability below 0.04^10
    assert (second["count"] != first["count"]).sum() >= 5


def test_overspend_refused_before_the_input_is_opened(example, capsys):
    path = example("events")
    assert run(str(path)) == EXIT_OK  # spends 2 of 4
    text = path.read_text().replace("bins = 10\nepsilon = 0.5", "bins = 10\nepsilon = 1.5")
    assert "epsilon = 1.5" in text
    path.write_text(text)  # now needs 3, 2 are left
    (path.parent / "events.parquet").unlink()  # and the input cannot be opened at all
    assert main(["run", str(path)]) == EXIT_BUDGET
    err = capsys.readouterr().err
    assert "needs epsilon 3 but 2 is left of the budget 4" in err and "nothing was read" in err
    assert "--set-budget TOTAL" in err
    # With the budget enough, the same missing input is an input error (exit 4).
    path.write_text(
        text.replace("epsilon = 1.5", "epsilon = 0.5").replace(
            "k = 3\nepsilon = 1.0", "k = 3\nepsilon = 0.25"
        )
    )
    assert main(["run", str(path)]) == EXIT_INPUT
    assert "events.parquet' does not exist" in capsys.readouterr().err


def test_columns_neither_perturbed_nor_kept_are_refused(example, capsys):
    path = example("survey")
    path.write_text(
        path.read_text()
        .replace('columns = ["region"]', 'columns = ["respondent_id"]', 1)
        .replace('columns = ["respondent_id", "name"]', 'columns = ["name"]')
    )
    assert main(["run", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "the input column(s) ['region'] are neither perturbed, kept nor dropped" in err
    assert not (path.parent / "out" / "survey_perturbed.parquet").exists()
    from polars_ppdm.ledger import Ledger

    assert Ledger(path.parent / "out" / "ledger.duckdb").spent("survey") == 0  # refused before reserving


def test_unknown_column_refused(example, capsys):
    path = example("events")
    path.write_text(
        path.read_text()
        .replace('columns = ["amount"]', 'columns = ["amount_eur"]')
        .replace("amount = [0.0, 500.0]", "amount_eur = [0.0, 500.0]")
    )
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert (
        "[[release]] 1 dp_histogram(amount_eur), field 'columns': the input has no column(s) ['amount_eur']"
        in capsys.readouterr().err
    )


def secret_forms(hex_text: str) -> list[bytes]:
    raw = bytes.fromhex(hex_text)
    forms = [
        hex_text.encode(),
        hex_text.upper().encode(),
        raw,
        base64.b64encode(raw),
        base64.urlsafe_b64encode(raw),
    ]
    forms += [f.rstrip(b"=") for f in forms[-2:]]
    return forms


def test_the_secret_never_appears_in_files_or_output(tmp_path):
    env = {**os.environ, "PPDM_SECRET": SECRET, "NO_COLOR": "1"}
    seen = b""
    for name in ("survey", "events"):
        copy_example(name, tmp_path)
        before = {p for p in tmp_path.rglob("*")}
        for command in (["plan"], ["run"], ["run"], ["ledger", "--pipeline"]):
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "polars_ppdm.jobs",
                    *command,
                    str(tmp_path / name / "pipeline.toml"),
                ],
                capture_output=True,
                env=env,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            seen += done.stdout + done.stderr
        written = [p for p in tmp_path.rglob("*") if p.is_file() and p not in before]
        assert len(written) >= 4
        seen += b"".join(p.read_bytes() for p in written)
    # A failing run's message too.
    bad = subprocess.run(
        [sys.executable, "-m", "polars_ppdm.jobs", "run", str(tmp_path / "nowhere.toml")],
        capture_output=True,
        env=env,
        check=False,
    )
    seen += bad.stdout + bad.stderr
    for form in secret_forms(SECRET):
        assert form not in seen


def test_summary_line_when_not_a_terminal_and_quiet(example, capsys):
    path = example("survey")
    assert main(["run", str(path)]) == EXIT_OK
    out, err = capsys.readouterr()
    assert err == ""
    assert len(out.splitlines()) == 1
    assert out.startswith(
        "ppdm run: dataset 'survey': 1,000 rows published, 2 output(s) written; spent epsilon 2.5 (3.5 left of 6)"
    )
    assert main(["run", str(path)]) == EXIT_OK
    assert "identical to an earlier run: spent nothing (3.5 left of 6)" in capsys.readouterr().out
    assert main(["run", "--quiet", str(path)]) == EXIT_OK
    assert capsys.readouterr() == ("", "")


def test_progress_on_a_terminal(tmp_path):
    """Under a pseudo-terminal the run draws rows done of rows total per step."""
    import pty

    copy_example("events", tmp_path)
    env = {**os.environ, "PPDM_SECRET": SECRET, "COLUMNS": "160"}
    main_fd, child_fd = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-m", "polars_ppdm.jobs", "run", str(tmp_path / "events" / "pipeline.toml")],
        stdin=child_fd,
        stdout=subprocess.PIPE,
        stderr=child_fd,
        env=env,
        check=False,
        timeout=120,
    )
    os.close(child_fd)
    drawn = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main_fd)
    assert done.returncode == 0
    text = drawn.decode(errors="replace")
    assert "[[release]] 1 dp_histogram(amount)" in text and "ETA" in text
    assert done.stdout.decode().startswith("ppdm run: dataset 'events'")


def test_table_progress_counts_rows(example):
    from polars_ppdm.jobs.progress import Progress
    from polars_ppdm.jobs.run import run_pipeline

    class Counting(Progress):
        active = True

        def __init__(self):
            self.rows: dict[str, int] = {}
            self.totals: dict[str, int | None] = {}

        def start(self, label, total):
            self.totals[label] = total
            self.rows[label] = 0

            def advance(n):
                self.rows[label] += n

            return advance

    path = example("survey")
    shown = Counting()
    result = run_pipeline(path, progress=shown)
    assert shown.rows["perturbed table"] == result.rows == 1000
    assert shown.totals["perturbed table"] is None  # CSV: no row count in metadata


def test_exit_codes_are_documented():
    from polars_ppdm.jobs import commands, errors

    for code in (0, 1, 2, 3, 4, 5):
        assert f"{code} " in commands.EXIT_CODES_HELP
        assert f"\n{code}    " in errors.__doc__


def test_missing_pipeline_file_is_an_input_error(tmp_path, capsys):
    assert main(["run", str(tmp_path / "absent.toml")]) == EXIT_INPUT
    assert "cannot be read" in capsys.readouterr().err


def test_plan_reads_no_rows_and_writes_nothing(example, capsys):
    path = example("events")
    assert main(["plan", str(path)]) == EXIT_OK
    text = capsys.readouterr().out
    size = (path.parent / "events.parquet").stat().st_size
    assert f"events.parquet  {size:,} bytes, 5,000 rows" in text
    assert "[[release]] 2 dp_kmeans(x, y) -> " in text and "epsilon 1;" in text
    assert "a pass over the input rows, 5,000 rows" in text  # each step's rows, from metadata
    assert "this run spends 2" in text and "left before 4, after 2" in text
    assert not (path.parent / "out").exists()


def test_spiral_key_goes_to_a_0600_file_never_into_outputs(tmp_path, monkeypatch):
    import stat

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    frame = pl.DataFrame(
        {"id": range(200), "a": [float(i % 17) for i in range(200)], "b": [float(i % 5) for i in range(200)]}
    )
    frame.write_parquet(tmp_path / "in.parquet")
    path = tmp_path / "p.toml"
    path.write_text(
        """
[dataset]
name = "s"
inputs = "in.parquet"
key = "id"
epsilon_budget = 1.0
ledger = "l.duckdb"
[secret]
env = "PPDM_SECRET"
[[perturb]]
step = "spiral"
columns = ["a", "b"]
bounds = { a = [0.0, 20.0], b = [0.0, 5.0] }
rounds = 3
path = "keys/spiral.key"
[[perturb]]
step = "keep"
columns = ["id"]
[output]
table = "out/t.parquet"
manifest = "out/m.json"
"""
    )
    assert run(str(path)) == EXIT_OK
    key = tmp_path / "keys" / "spiral.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    secret_key = json.loads(key.read_text())
    text = (tmp_path / "out" / "m.json").read_text()
    assert str(key) in text and "matrix" not in text
    assert json.dumps(secret_key["matrix"])[:20] not in text
    from polars_ppdm import SpiralKey, invert_spiral_key

    back = invert_spiral_key(pl.read_parquet(tmp_path / "out" / "t.parquet"), SpiralKey.load(key))
    assert back["a"].round(6).to_list() == frame["a"].to_list()
    assert run(str(path)) == EXIT_OK  # the same key: kept
    monkeypatch.setenv("PPDM_SECRET", OTHER_SECRET)
    assert main(["run", "--quiet", str(path)]) == EXIT_INVALID  # another key would replace it: refused


def test_damaged_parquet_input_is_an_input_error(example, capsys):
    # Row counts come from Polars reading the footer: a damaged file is exit 4 with the
    # file named, never a traceback or another library's exception class.
    path = example("events")
    (path.parent / "events.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    for command in ("plan", "run"):
        assert main([command, str(path)]) == EXIT_INPUT
        err = capsys.readouterr().err
        assert f"ppdm {command}: [dataset] inputs: " in err and "events.parquet' cannot be read" in err


def test_table_hashed_while_written_matches_the_file(tmp_path, monkeypatch):
    # The table's SHA-256 is computed while Polars writes it (GrowingFileHash): over a
    # table of many row groups, written in many pieces, it must be the finished file's.
    import numpy as np

    monkeypatch.setenv("PPDM_SECRET", SECRET)
    rng = np.random.default_rng(3)
    rows = 900_000
    pl.DataFrame({"id": np.arange(rows), "a": rng.random(rows) < 0.5, "x": rng.random(rows)}).write_parquet(
        tmp_path / "in.parquet", row_group_size=50_000
    )
    path = tmp_path / "p.toml"
    path.write_text(
        """
[dataset]
name = "t"
inputs = "in.parquet"
key = "id"
epsilon_budget = 10.0
ledger = "l.duckdb"
[secret]
env = "PPDM_SECRET"
[[perturb]]
step = "rr_disguise"
columns = ["a"]
epsilon = 1.0
[[perturb]]
step = "add_noise"
columns = ["x"]
scale = 1.0
[[perturb]]
step = "keep"
columns = ["id"]
[output]
table = "out/t.parquet"
manifest = "out/m.json"
"""
    )
    for suffix in ("parquet", "csv"):
        path.write_text(path.read_text().replace('"out/t.parquet"', f'"out/t.{suffix}"'))
        assert run(str(path)) == EXIT_OK
        table = json.loads((tmp_path / "out" / "m.json").read_text())["outputs"][0]
        written = Path(table["path"])
        assert written.suffix == f".{suffix}" and written.stat().st_size > 4 << 20
        assert table["sha256"] == hashlib.sha256(written.read_bytes()).hexdigest()
        assert table["rows"] == rows
        path.write_text(path.read_text().replace(f'"out/t.{suffix}"', '"out/t.parquet"'))


def test_a_dp_group_by_release_spends_epsilon_and_delta_and_matches_the_library(example, capsys):
    import polars_ppdm as ppdm
    from polars_ppdm import dp
    from polars_ppdm.jobs.run import release_secret
    from polars_ppdm.ledger import Ledger
    from polars_ppdm.secret import Secret

    path = example("events").parent / "by_channel.toml"
    assert main(["plan", "--json", str(path)]) == EXIT_OK
    plan = json.loads(capsys.readouterr().out)
    assert (plan["epsilon"], plan["delta"], plan["delta_budget"]) == (1.0, 1e-6, 1e-5)
    assert run(str(path)) == EXIT_OK
    got = json.loads((path.parent / "out" / "by_channel" / "manifest.json").read_text())
    assert got["epsilon"]["releases"] == [
        {"step": "[[release]] 1 dp_group_by(channel)", "epsilon": 1.0, "delta": 1e-6}
    ]
    released = pl.read_csv(path.parent / "out" / "by_channel" / "by_channel.csv")
    expected = ppdm.dp_group_by(
        pl.read_parquet(path.parent / "events.parquet"),
        "channel",
        [dp.count(), dp.sum("amount", bounds=(0, 500)), dp.mean("amount", bounds=(0, 500))],
        epsilon=1.0,
        privacy_unit="user_id",
        max_groups_contributed=3,
        max_rows_per_group=4,
        delta=1e-6,
        intervals=True,
        secret=release_secret(Secret(bytes.fromhex(SECRET)), got["run_id"]),
    )
    assert released.sort("channel").equals(expected.sort("channel").select(released.columns), null_equal=True)
    book = Ledger(path.parent / "out" / "ledger.duckdb")
    assert book.status("events")[:4] == (4.0, 1.0, 1e-5, 1e-6)
    assert run(str(path)) == EXIT_OK  # the identical run: nothing more spent
    assert book.status("events")[:4] == (4.0, 1.0, 1e-5, 1e-6)
    # pipeline.toml charges the same dataset: its file says nothing of delta, so it is not checked.
    assert run(str(path.parent / "pipeline.toml")) == EXIT_OK
    assert book.status("events")[:4] == (4.0, 3.0, 1e-5, 1e-6)
    report = (path.parent / "out" / "by_channel" / "report.public.html").read_text()
    assert "dp_group_by" in report and "delta spent by this run" in report and "groups released" in report


def test_a_dp_group_by_run_short_of_delta_is_refused_before_anything_is_written(example, capsys):
    from polars_ppdm.ledger import Ledger

    path = example("events").parent / "by_channel.toml"
    path.write_text(path.read_text().replace("delta = 1e-6 ", "delta = 4e-6 "))
    for _ in range(2):  # two runs of fresh data: 8e-6 of 1e-5
        assert run(str(path)) == EXIT_OK
        frame = pl.read_parquet(path.parent / "events.parquet")
        frame.with_columns(pl.col("amount") + 1).write_parquet(path.parent / "events.parquet")
    book = Ledger(path.parent / "out" / "ledger.duckdb")
    before = book.table()
    capsys.readouterr()
    assert main(["plan", str(path)]) == EXIT_BUDGET
    ahead = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("year ahead"))
    # This run is short of delta itself (it said "2 more runs fit in the 2 left", of epsilon,
    # and later "the next would be refused", beside "ppdm run will refuse this run").
    assert "this run does not fit in the budget: it would be refused" in ahead
    assert main(["run", str(path)]) == EXIT_BUDGET
    err = capsys.readouterr().err
    assert (
        "needs delta 4e-06 on dataset 'events' but the ledger has 2e-06 left of its delta budget 1e-05" in err
    )
    # The command it gives runs as written: the ledger named (without it, ppdm ledger refused).
    ledger = str(path.parent / "out" / "ledger.duckdb")
    assert f"`ppdm ledger --ledger {shlex.quote(ledger)} --dataset events --set-delta-budget DELTA`" in err
    assert "a pipeline file's delta_budget must then say the same" in err
    assert book.table().equals(before)


def test_dp_group_by_is_refused_on_spark_before_anything_runs(example, capsys):
    path = example("events").parent / "by_channel.toml"
    assert main(["run", "--engine", "spark", str(path)]) == EXIT_INVALID
    assert "dp_group_by runs on the Polars engine only" in capsys.readouterr().err
    assert not (path.parent / "out" / "by_channel").exists()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('by = ["channel"]', 'by = ["amount"]', "group column 'amount' must be"),
        (
            'column = "amount", bounds = [0.0, 500.0] },\n  { aggregate = "mean"',
            'column = "channel", bounds = [0.0, 500.0] },\n  { aggregate = "mean"',
            "needs a numeric column",
        ),
        # The privacy unit of every step: refused as the dataset's key, before any step.
        (
            'key = "user_id"',
            'key = "amount"',
            "[dataset], field 'key': the privacy unit's column 'amount' must be",
        ),
        ('{ aggregate = "count" }', '{ aggregate = "count", name = "amount_sum" }', "distinct output names"),
        (
            "delta = 1e-6 ",
            "public_groups = [{ channel = 1 }] ",
            "column 'channel' is Int64 but the frame's is String",
        ),
    ],
)
def test_a_dp_group_by_the_data_would_refuse_is_refused_before_the_budget(example, capsys, old, new, message):
    from polars_ppdm.ledger import Ledger

    path = example("events").parent / "by_channel.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    assert main(["plan", str(path)]) == EXIT_INVALID
    assert message in capsys.readouterr().err
    assert main(["run", str(path)]) == EXIT_INVALID
    assert ("[dataset]" if "[dataset]" in message else "[[release]] 1 dp_group_by") in capsys.readouterr().err
    ledger = path.parent / "out" / "ledger.duckdb"
    assert not ledger.exists() or Ledger(ledger).spent("events") == 0
    assert not (path.parent / "out" / "by_channel").exists()


def test_a_nightly_release_over_one_more_user_does_not_reveal_the_change(example):
    """The attack of issue 26 on `ppdm run`: same pipeline, same secret, one user added to
    the input, run again. Were the noise keyed by the secret alone, the second histogram
    minus the first would be the new user's exact counts; keyed by the run (its inputs)
    and the release's statistics it is fresh: the differences are noise. (The run key
    already made it so before issue 26; this holds it for `ppdm run`, as the attack suite
    does for the Python API, the DuckDB macros and Spark.)"""
    path = example("events")
    assert run(str(path)) == EXIT_OK
    before = pl.read_parquet(path.parent / "out" / "amount_histogram.parquet")
    events = pl.read_parquet(path.parent / "events.parquet")
    newcomer = events.head(3).with_columns(
        pl.lit(10**9, dtype=pl.Int64).alias("user_id"), pl.lit(250.0).alias("amount")
    )
    pl.concat([events, newcomer]).write_parquet(path.parent / "events.parquet")
    assert run(str(path)) == EXIT_OK
    after = pl.read_parquet(path.parent / "out" / "amount_histogram.parquet")
    change = (after["count"] - before["count"]).to_list()
    exact = [3 if b == 5 else 0 for b in before["amount_bin"].to_list()]  # 250 falls in bin 5 of 10
    assert change != exact, change
    # Fresh noise of scale 8 / 0.5 = 16 in every bin: hardly any bin moves by its exact change.
    assert sum(c == e for c, e in zip(change, exact, strict=True)) <= 3, (change, exact)


def _killed_run(ledger: Path, pipeline: str, leftover_beside: Path) -> Path:
    """A run reserved by a process that is gone, which left a temporary (a whole release,
    say) beside an output."""
    code = (
        "import os, sys; from polars_ppdm.ledger import Ledger; "
        "Ledger(sys.argv[1]).reserve('survey', 'killed', [('s', 1.0)], pipeline=sys.argv[2], record_outputs=True); "
        "print(os.getpid())"
    )
    pid = subprocess.run(
        [sys.executable, "-c", code, str(ledger), pipeline], check=True, capture_output=True, text=True
    ).stdout.strip()
    leftover = leftover_beside.with_name(f".{leftover_beside.name}.ppdm-{pid}-0badcafe.tmp")
    leftover.write_text("a complete release")
    return leftover


@pytest.mark.parametrize("name", ["survey", "events"])
def test_a_run_stopped_before_its_commit_left_nothing_another_user_could_read(example, monkeypatch, name):
    """Attack review 64: a watcher copied a whole DP release from its temporary (mode 0644)
    beside the output, then the run was interrupted and its reservation withdrawn: a free
    release.  Before the commit the releases are bytes in memory and the perturbed table a
    temporary of mode 0600; after it, the outputs have the mode the umask gives."""
    from polars_ppdm.jobs import run as run_module

    path = example(name)
    out = path.parent / "out"
    seen: dict[str, int] = {}

    def look_then_interrupt(self):
        for entry in out.rglob("*"):
            if not entry.name.startswith("ledger.duckdb"):
                seen[entry.name] = stat.S_IMODE(entry.stat().st_mode)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module.PinnedInputs, "check_unchanged", look_then_interrupt)
    assert run(str(path)) == EXIT_INTERRUPTED
    assert all(name.endswith(".tmp") and mode == 0o600 for name, mode in seen.items()), seen
    assert len(seen) == (1 if name == "survey" else 0)  # the perturbed table, private
    assert not [p for p in out.iterdir() if not p.name.startswith("ledger.duckdb")]
    monkeypatch.undo()
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    assert run(str(path)) == EXIT_OK
    umask = os.umask(0o022)
    os.umask(umask)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir() if not p.name.startswith("ledger")}
    # The operator's records are theirs alone (review 78); the outputs get the umask's mode.
    records = {"manifest.json", "report.internal.html"}
    assert {m for p, m in modes.items() if p in records} == {0o600}, modes
    assert {m for p, m in modes.items() if p not in records} == {0o666 & ~umask}, modes
    # An operator's chmod of a published output survives the next run (review 67).
    for published in modes:
        (out / published).chmod(0o600)
    (path.parent / "extra.txt").write_text("a change of the folder, not of the inputs")
    assert run(str(path)) == EXIT_OK
    assert {stat.S_IMODE((out / p).stat().st_mode) for p in modes} == {0o600}


def test_a_killed_run_is_taken_back_only_by_its_pipeline_once_its_leftovers_are_gone(example, monkeypatch):
    # Before, any next run of the dataset took the killed run's epsilon back while its
    # temporaries (whole DP releases) lay in the output folder.
    from polars_ppdm.jobs import run as run_module
    from polars_ppdm.ledger import Ledger

    path = example("survey")
    assert run(str(path)) == EXIT_OK
    ledger = path.parent / "out" / "ledger.duckdb"
    leftover = _killed_run(ledger, str(path), path.parent / "out" / "smoker_support.csv")
    spent = Ledger(ledger).spent("survey")
    # A leftover that cannot be removed keeps the reservation spent (the releases are
    # written after the commit, through _durable's atomic writes).
    from polars_ppdm import _durable

    monkeypatch.setattr(run_module, "remove_stale", lambda target: [])
    monkeypatch.setattr(_durable, "remove_stale", lambda target: [])
    assert run(str(path)) == EXIT_OK
    assert Ledger(ledger).spent("survey") == pytest.approx(spent) and leftover.exists()
    # Another pipeline file of the dataset leaves it to its own pipeline.
    monkeypatch.undo()
    other = path.with_name("other.toml")
    other.write_text(path.read_text())
    assert run(str(other)) == EXIT_OK
    assert Ledger(ledger).spent("survey") == pytest.approx(spent)
    # Its own pipeline removes the leftover, then takes the reservation back.
    assert not leftover.exists()  # the other pipeline writes the same file: it removed it
    # A temporary whose pid a live process holds now (pid 1 here) may be a dead run's: it
    # is not removed, and it keeps the reservation spent.
    alive = leftover.with_name(".smoker_support.csv.ppdm-1-0badcafe.tmp")
    alive.write_text("a complete release, or a live run's")
    assert run(str(path)) == EXIT_OK
    assert Ledger(ledger).spent("survey") == pytest.approx(spent) and alive.exists()
    alive.unlink()
    leftover.write_text("a complete release")
    # By another spelling of the same file (the ledger records the real path).
    monkeypatch.chdir(path.parent)
    assert run("./" + path.name) == EXIT_OK
    assert not leftover.exists()
    assert Ledger(ledger).spent("survey") == pytest.approx(spent - 1.0)


def test_continual_releases_of_two_datasets_under_one_secret_draw_apart(tmp_path, monkeypatch):
    """Review 51: a pipeline's continual release was keyed by the pipeline's secret itself, so
    a log and a copy without one person (two datasets) published identical tables exactly
    when that person had no row. Each tree now has its own secret (dataset and tree)."""
    monkeypatch.setenv("PPDM_SECRET", SECRET)
    log = pl.DataFrame(
        {"person": [1, 2, 3, 4, 5, 6], "region": ["n", "s", "n", "s", "n", "n"], "night": [0, 0, 1, 1, 2, 2]}
    )
    tables = []
    for name in ("visits", "visits_copy"):
        folder = tmp_path / name
        folder.mkdir()
        log.write_parquet(folder / "in.parquet")
        (folder / "p.toml").write_text(
            f"""
[dataset]
name = "{name}"
inputs = "in.parquet"
key = "person"
epsilon_budget = 8.0
delta_budget = 1e-6
accounting = "zcdp"
ledger = "l.duckdb"
[secret]
env = "PPDM_SECRET"
[output]
manifest = "out/m.json"
[[release]]
step = "dp_continual_counts"
by = "region"
period = "night"
horizon = 16
rho = 0.25
public_groups = [{{ region = "n" }}, {{ region = "s" }}]
output = "out/c.parquet"
"""
        )
        assert main(["run", "--quiet", "--as-of", "3", str(folder / "p.toml")]) == EXIT_OK
        tables.append(pl.read_parquet(folder / "out" / "c.parquet"))
    assert not tables[0]["count"].equals(tables[1]["count"])
