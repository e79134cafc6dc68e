"""The ``ppdm`` command line: the main job of the README."""

from __future__ import annotations

import json
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
