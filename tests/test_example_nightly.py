"""The nightly example (examples/nightly/nightly.py): a continual release and a Gaussian
histogram published night after night by `ppdm run --as-of`, the tree charged once."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from polars_ppdm.ledger import Ledger

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "nightly" / "nightly.py"


@pytest.mark.slow  # a `ppdm run` process per night
def test_the_nightly_example_runs_and_charges_the_tree_once(tmp_path, capfd):
    spec = importlib.util.spec_from_file_location("nightly", EXAMPLE)
    assert spec is not None and spec.loader is not None
    nightly = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nightly)
    nights = 4
    assert nightly.main(["--nights", str(nights), "--folder", str(tmp_path)]) == 0
    held = Ledger(tmp_path / "ledger.duckdb").status("visits")
    assert held.accounting == "zcdp"
    assert held.spent == pytest.approx(0.25 + nights * 0.0025)  # the tree once, the histogram nightly
    out = tmp_path / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rho"]["spent_by_this_run"] == pytest.approx(0.0025)
    assert (out / "report.public.html").exists() and (out / "report.internal.html").exists()
    printed = capfd.readouterr().out
    assert "year ahead, at one run per period" in printed  # the plan of the next night
    assert "dataset 'visits' (zCDP): rho budget" in printed  # the ledger
