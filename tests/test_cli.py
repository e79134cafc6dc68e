"""The ``ppdm`` command line: the main job of the README."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

import polars_ppdm as ppdm
from polars_ppdm.cli import main
from polars_ppdm.datasets import find_shared_data, generated_baskets


def test_rules_on_generated_baskets_prints_both_rule_sets_and_scores(capsys):
    secret = ppdm.new_secret()
    assert main(["rules", "--generated", "--secret", secret, "--top", "0"]) == 0
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
    assert capsys.readouterr().out == f"ppdm {ppdm.__version__}\n"


def test_version_through_the_module_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "polars_ppdm", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == f"ppdm {ppdm.__version__}"


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
