"""The ``ppdm`` command line: the main job of the README."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys

import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.cli import detect_separator, main
from polars_ppdm.datasets import find_shared_data, generated_baskets


def test_rules_on_generated_baskets_prints_both_rule_sets_and_scores(capsys, monkeypatch):
    secret = ppdm.new_secret()
    monkeypatch.setenv("PPDM_RULES_SECRET", secret)
    assert main(["rules", "--generated", "--secret", "env:PPDM_RULES_SECRET", "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert "generated baskets" in out
    assert "precision" in out and "recall" in out and "F1" in out
    assert "found" in out
    assert secret not in out  # only the fingerprint is shown
    assert ppdm.resolve_secret(secret).fingerprint() in out


def test_rules_json_report_scores_match_the_rules_listed(capsys):
    assert main(["rules", "--generated", "--generated-rows", "4000", "--secret", "7", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    statuses = [r["status"] for r in report["rules"]]
    hits = statuses.count("found")
    assert report["true"] == hits + statuses.count("missed")
    assert report["found"] == hits + statuses.count("spurious")
    assert report["precision"] == pytest.approx(hits / report["found"])
    assert report["recall"] == pytest.approx(hits / report["true"])
    assert report["epsilon_per_item"] == pytest.approx(ppdm.rr_epsilon(0.9))


def test_rules_same_seed_same_report(capsys):
    args = ["rules", "--generated", "--generated-rows", "3000", "--secret", "11", "--json"]
    main(args)
    first = capsys.readouterr().out
    main(args)
    assert capsys.readouterr().out == first


def test_rules_bad_parameter_is_a_clear_error_and_exit_status_2(capsys):
    assert main(["rules", "--generated", "--p", "0.5"]) == 2
    assert "'p' parameter of rr_disguise" in capsys.readouterr().err


def test_rules_missing_data_file(capsys, tmp_path):
    assert main(["rules", "--data", str(tmp_path / "absent.csv")]) == 2
    assert "absent.csv" in capsys.readouterr().err


def test_rules_on_groceries(shared_data, capsys):
    assert main(["rules", "--secret", "1", "--data", str(shared_data / "groceries.csv")]) == 0
    out = capsys.readouterr().out
    assert "9,835 baskets, 169 items" in out
    assert "original 37 rules" in out


def test_console_script_module_entry_point():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "polars_ppdm",
            "rules",
            "--generated",
            "--generated-rows",
            "2000",
            "--secret",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "F1" in done.stdout


def test_shared_data_is_found_through_ppdm_data(monkeypatch, tmp_path):
    (tmp_path / "groceries.csv").write_text("a,b\nb\n")
    monkeypatch.setenv("PPDM_DATA", str(tmp_path))
    assert find_shared_data() == tmp_path / "groceries.csv"
    assert ppdm.datasets.groceries().columns == ["a", "b"]


def test_generated_baskets_are_reproducible_and_hold_rules():
    baskets = generated_baskets(5000, seed=3)
    assert baskets.equals(generated_baskets(5000, seed=3))
    assert not baskets.equals(generated_baskets(5000, seed=4))
    rules = ppdm.rr_apriori(baskets, baskets.columns, p=1.0, min_support=0.02, min_confidence=0.3)
    assert rules.height >= 5


def test_generated_baskets_rejects_bad_n():
    with pytest.raises(ppdm.InvalidParameterError, match="'n' parameter of generated_baskets"):
        generated_baskets(0)


def test_version_flag_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    from polars_ppdm.kernels import _native

    kernels = "compiled kernels" if _native.NATIVE is not None else "pure-Python kernels"
    assert capsys.readouterr().out == f"ppdm {ppdm.__version__} ({kernels})\n"


def test_version_through_the_module_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "polars_ppdm", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().startswith(f"ppdm {ppdm.__version__} (")


@pytest.mark.parametrize(("args", "digits"), [([], 64), (["--bits", "256"], 64), (["--bits", "128"], 32)])
def test_secret_prints_new_hex_of_the_asked_length(capsys, args, digits):
    assert main(["secret", *args]) == 0
    first = capsys.readouterr().out.strip()
    assert len(first) == digits and int(first, 16) >= 0
    assert ppdm.resolve_secret(first).key.hex() == first.lower()
    assert main(["secret", *args]) == 0
    assert capsys.readouterr().out.strip() != first


def test_secret_bad_bits_names_the_parameter_allowed_values_and_value(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["secret", "--bits", "64"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--bits" in err and "64" in err and "128, 256" in err


def test_secret_output_file_is_mode_0600_and_never_printed(capsys, tmp_path):
    target = tmp_path / "ppdm.secret"
    old_umask = os.umask(0)  # the mode must not depend on a permissive umask
    try:
        assert main(["secret", "--bits", "128", "--output", str(target)]) == 0
    finally:
        os.umask(old_umask)
    text = target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert text.endswith("\n") and len(text.strip()) == 32
    out = capsys.readouterr().out
    assert text.strip() not in out
    assert ppdm.resolve_secret(text.strip()).fingerprint() in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ppdm.secret"]  # no temporary left over


def test_secret_output_refuses_to_overwrite(capsys, tmp_path):
    target = tmp_path / "ppdm.secret"
    target.write_text("keep me\n")
    assert main(["secret", "--output", str(target)]) == 2
    err = capsys.readouterr().err
    assert "'output'" in err and "already exists" in err and str(target) in err
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ppdm.secret"]


def test_secret_output_refuses_a_dangling_symlink(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    assert main(["secret", "--output", str(link)]) == 2
    assert not (tmp_path / "elsewhere").exists()


def test_secret_output_in_a_missing_folder(capsys, tmp_path):
    assert main(["secret", "--output", str(tmp_path / "absent" / "s")]) == 2
    err = capsys.readouterr().err
    assert "'output'" in err and "absent" in err


BASKETS = [
    ["whole milk", "bread", "butter"],
    ["whole milk", "bread"],
    ["bread", "butter"],
    ["whole milk", "butter", "eggs"],
    ["whole milk", "bread", "butter"],
    ["eggs"],
    ["whole milk", "bread"],
    ["bread", "butter", "eggs"],
] * 25


def run(args: list[str], capsys) -> tuple[int, str, str]:
    """``ppdm`` in-process: (exit status, stdout, stderr); a raw exception fails the test."""
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rules_report(path, capsys, *extra: str) -> dict:
    code, out, err = run(["rules", "--data", str(path), "--secret", "5", "--json", *extra], capsys)
    assert code == 0, err
    return json.loads(out)


def write_baskets(path, sep: str, baskets=BASKETS):
    path.write_text("\n".join(sep.join(b) for b in baskets) + "\n")
    return path


def same_result(a: dict, b: dict) -> bool:
    keys = ("rows", "items", "precision", "recall", "f1", "found", "true", "rules")
    return all(a[k] == b[k] for k in keys)


def test_a_space_separated_basket_file_is_read_by_detection(tmp_path, capsys):
    # Before: split on commas, every line was one item, and "0 rules, F1 1.000" came out.
    # Item names without spaces here: whitespace separates the items of a FIMI-style file.
    baskets = [[item.replace(" ", "_") for item in b] for b in BASKETS]
    commas = rules_report(write_baskets(tmp_path / "b.csv", ",", baskets), capsys)
    spaces = rules_report(write_baskets(tmp_path / "b.dat", " ", baskets), capsys)
    assert commas["true"] > 0 and commas["items"] == 4
    assert same_result(spaces, commas)
    assert "whitespace (detected)" in spaces["source"] and "',' (detected)" in commas["source"]


@pytest.mark.parametrize(("sep", "flag"), [("\t", "tab"), (";", ";"), ("|", "|"), (" :: ", "::")])
def test_the_separator_can_be_given_or_detected(tmp_path, capsys, sep, flag):
    commas = rules_report(write_baskets(tmp_path / "b.csv", ","), capsys)
    other = write_baskets(tmp_path / "b.txt", sep)
    given = rules_report(other, capsys, "--sep", flag)
    alias = rules_report(other, capsys, "--separator", flag)
    assert same_result(given, commas) and same_result(alias, commas)
    assert "(given)" in given["source"]
    if sep.strip() != "::":
        assert same_result(rules_report(other, capsys), commas)  # detected


def test_detection_prefers_the_separator_of_most_lines_and_whitespace_last():
    assert detect_separator(["a,b", "c,d", "e;f"]) == ","
    assert detect_separator(["a;b", "c;d", "whole milk, 2%;e"]) == ";"
    assert detect_separator(["a\tb", "c\td"]) == "\t"
    assert detect_separator(["whole milk", "bread"]) is None
    assert detect_separator([]) is None
    assert detect_separator(["a,b;c", "d;e,f"]) == ","  # a tie: the earlier in SEPARATORS


def test_mostly_single_item_baskets_warn_about_the_separator(tmp_path, capsys):
    path = write_baskets(tmp_path / "b.dat", " ", [[i.replace(" ", "_") for i in b] for b in BASKETS])
    code, _out, err = run(["rules", "--data", str(path), "--secret", "1", "--sep", ","], capsys)
    assert code == 0
    assert "warning: most baskets" in err and "single item" in err and "--sep" in err and "%" not in err
    code, _out, err = run(["rules", "--data", str(path), "--secret", "1"], capsys)
    assert "warning" not in err  # detected right: no warning


def test_f1_of_two_empty_rule_sets_is_undefined_not_1(tmp_path, capsys):
    path = write_baskets(tmp_path / "b.csv", ",")
    code, out, _err = run(["rules", "--data", str(path), "--secret", "1", "--min-support", "1"], capsys)
    assert code == 0
    assert "F1 undefined (no rules found and none expected)" in out and "F1 1.000" not in out
    assert "nothing was measured" in out
    report = rules_report(path, capsys, "--min-support", "1")
    assert report["f1"] is None and report["precision"] is None and report["recall"] is None


def test_rule_scores_undefined_cases():
    rules = pl.DataFrame({"antecedent": [["a"], ["b"]], "consequent": [["b"], ["c"]]})
    none = rules.clear()
    both_empty = ppdm.rule_scores(none, none)
    assert all(math.isnan(both_empty[k]) for k in ("precision", "recall", "f1"))
    nothing_found = ppdm.rule_scores(none, rules)
    assert (
        math.isnan(nothing_found["precision"]) and nothing_found["recall"] == 0 and nothing_found["f1"] == 0
    )
    nothing_true = ppdm.rule_scores(rules, none)
    assert nothing_true["precision"] == 0 and math.isnan(nothing_true["recall"]) and nothing_true["f1"] == 0
    half = ppdm.rule_scores(rules.head(1), rules)
    assert half["f1"] == pytest.approx(2 * 1.0 * 0.5 / 1.5)


def test_parquet_baskets_are_read_by_content(tmp_path, capsys):
    commas = rules_report(write_baskets(tmp_path / "b.csv", ","), capsys)
    onehot = ppdm.transactions_to_onehot(pl.Series("items", BASKETS))
    onehot.write_parquet(tmp_path / "onehot.csv")  # a misleading name: the content decides
    as_lists = tmp_path / "lists.parquet"
    pl.DataFrame({"basket": BASKETS}).write_parquet(as_lists)
    for path in (tmp_path / "onehot.csv", as_lists):
        report = rules_report(path, capsys)
        assert same_result(report, commas) and "Parquet" in report["source"]


def test_parquet_that_is_not_baskets_is_a_clear_error(tmp_path, capsys):
    # Before: a raw UnicodeDecodeError and a traceback.
    pl.DataFrame({"id": [1, 2], "name": ["a", "b"]}).write_parquet(tmp_path / "people.parquet")
    code, _out, err = run(["rules", "--data", str(tmp_path / "people.parquet")], capsys)
    assert code == 2
    assert err.startswith("ppdm rules: --data") and "one Boolean column per item" in err
    assert "id (Int64), name (String)" in err
    pl.DataFrame({"a": [True, None]}).write_parquet(tmp_path / "nulls.parquet")
    code, _out, err = run(["rules", "--data", str(tmp_path / "nulls.parquet")], capsys)
    assert code == 2 and "hold nulls" in err
    code, _out, err = run(["rules", "--data", str(tmp_path / "nulls.parquet"), "--sep", ","], capsys)
    assert code == 2 and "leave out --sep" in err


def _bad_files(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "blank.csv").write_text("\n \n\t\n")
    (tmp_path / "commas.csv").write_text(",,\n,\n")
    (tmp_path / "random.bin").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "nul.bin").write_bytes(b"milk\x00bread\n")
    (tmp_path / "damaged.parquet").write_bytes(b"PAR1" + b"\x00" * 40 + b"PAR1")
    return {
        "missing": ([str(tmp_path / "absent.csv")], "no such file"),
        "folder": ([str(tmp_path)], "is a folder"),
        "empty": ([str(tmp_path / "empty.csv")], "the file is empty"),
        "blank": ([str(tmp_path / "blank.csv")], "the file is empty"),
        "no items": ([str(tmp_path / "commas.csv")], "no items in any line"),
        "binary": ([str(tmp_path / "random.bin")], "not a text basket file (not UTF-8"),
        "nul": ([str(tmp_path / "nul.bin")], "NUL bytes"),
        "damaged parquet": ([str(tmp_path / "damaged.parquet")], "a damaged Parquet file"),
    }


@pytest.mark.parametrize(
    "case", ["missing", "folder", "empty", "blank", "no items", "binary", "nul", "damaged parquet"]
)
def test_bad_data_files_end_in_one_clear_line(tmp_path, capsys, case):
    args, message = _bad_files(tmp_path)[case]
    code, out, err = run(["rules", "--data", *args], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ppdm rules: --data {args[0]!r}: ")
    assert message in lines[0]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--min-support", "2"], "argument --min-support: must be a number in [0, 1]; got '2'"),
        (["--min-support", "-0.1"], "argument --min-support: must be a number in [0, 1]"),
        (["--min-support", "nan"], "argument --min-support: must be a number in [0, 1]; got 'nan'"),
        (["--min-support", "abc"], "argument --min-support: must be a number in [0, 1]; got 'abc'"),
        (["--min-support", ""], "argument --min-support: must be a number in [0, 1]"),
        (["--min-confidence", "inf"], "argument --min-confidence: must be a number in [0, 1]"),
        (["--max-length", "0"], "argument --max-length: must be an integer >= 1; got '0'"),
        (["--max-length", "2.5"], "argument --max-length: must be an integer >= 1"),
        (["--top", "-1"], "argument --top: must be an integer >= 0"),
        (["--generated-rows", "0"], "argument --generated-rows: must be an integer >= 1"),
        (["--sep", ""], "argument --sep/--separator: must not be empty"),
        (["--data", "x.csv"], "argument --data: not allowed with argument --generated"),
        (["--p", "0.5"], "'p' parameter of rr_disguise"),
        (["--p", "1.5"], "'p' parameter of rr_disguise"),
        (["--secret", "xyz"], "secret"),
    ],
)
def test_bad_flags_end_in_one_clear_line(capsys, flags, message):
    code, out, err = run(["rules", "--generated", "--generated-rows", "200", *flags], capsys)
    assert code == 2 and out == ""
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("ppdm rules: ") and message in last


def test_a_binary_data_file_through_the_console_script_has_no_traceback(tmp_path):
    (tmp_path / "data.parquet").write_bytes(bytes(range(256)) * 4)
    done = subprocess.run(
        [sys.executable, "-m", "polars_ppdm", "rules", "--data", str(tmp_path / "data.parquet")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "not a text basket file" in done.stderr


def test_the_help_says_how_the_separator_is_detected(capsys):
    code, out, _err = run(["rules", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "--sep SEP, --separator SEP" in text and "Default: detected" in text and "else whitespace" in text
    assert "Parquet" in text


def test_rules_refuses_a_hex_secret_on_the_command_line_and_takes_a_file(tmp_path, capsys):
    """Issue 27, item 9: `--secret <hex>` puts the secret in every user's process list."""
    from polars_ppdm.secret_files import write_secret_file

    secret = ppdm.new_secret()
    assert main(["rules", "--generated", "--generated-rows", "500", "--secret", secret]) == 2
    err = capsys.readouterr().err
    assert "process list" in err and "env:NAME" in err and "file:PATH" in err
    assert secret not in err and secret[:8] not in err
    path = write_secret_file(tmp_path / "ppdm.secret", ppdm.resolve_secret(secret))
    assert (
        main(["rules", "--generated", "--generated-rows", "500", "--secret", f"file:{path}", "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["secret_fingerprint"] == ppdm.resolve_secret(secret).fingerprint()
