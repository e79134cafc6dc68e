"""Every notebook under notebooks/ runs top to bottom (small mode), computes what it claims
and is stored without outputs."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

# Run in each notebook's kernel after its last cell (the stored notebook is not changed):
# facts about the notebook's own results that fail if a result is wrong or was never
# computed.  Statistical ones use Z = 5 standard errors, as the test suite does.
CHECKS = {
    "additive_noise_and_rr_id3.ipynb": """
import math
# PCA cell: every cell of noisy - x is N(0, 2^2); sample variance within 5 SE,
# SE(s^2) = sigma^2 sqrt(2 / (N - 1)) for normal draws.
resid = (noisy.to_numpy() - x.to_numpy()).ravel()
assert abs(resid.var(ddof=1) - 4.0) <= 5 * 4.0 * math.sqrt(2 / (resid.size - 1)), resid.var()
# Reconstruction cell: a distribution over the 25 bins.
assert est.height == 25 and abs(est['frequency'].sum() - 1) < 1e-9
# RR-ID3 cell: one row per p, accuracies in percent.
assert means['p'].to_list() == ps
# (the estimate may leave [0, 100]: it is unbiased, not clipped)
assert means.select(pl.col('rr accuracy', 'baseline').is_between(0, 100).all()).row(0) == (True, True)
""",
    "dpqt_kmeans.ipynb": """
assert abs(acc.spent - 1.0) < 1e-12 and acc.ledger.height == 2
assert fit.centres.height == k
centres = fit.to_numpy()
assert ((centres >= bounds[0]) & (centres <= bounds[1])).all()
assert table.height > 0 and table['NICV'].is_finite().all()
""",
    "ecdf_table1.ipynb": """
# Only draws on the smoothed ECDF's point mass (the minimum) can repeat an original value.
assert shared <= (released['salary'] == people['salary'].min()).sum(), shared
assert sorted(table['function'].unique().to_list()) == ['F1', 'F2', 'F3', 'F4', 'F5']
assert table['gap'].is_finite().all()
""",
    "lsdp_clustering.ipynb": """
# The spiral multiplies every distance by one constant; n known pairs undo it.
assert ratio.max() / ratio.min() - 1 < 1e-9, (ratio.min(), ratio.max())
assert rmse < 1e-6, rmse
assert table.height > 0 and table['F'].is_between(0, 1).all()
""",
    "rr_groceries.ipynb": """
# Last p of the support figure: every estimated support within 5 of its standard errors
# of the true support of the same baskets (the SE is the disguise's).
assert est.height == truth.height > 0
assert ((est['support'] - truth['support']).abs() <= 5 * est['std_error']).all()
assert len(rows) == (2 if SMALL else 5)
assert all(0 <= r['F1'] <= 1 for r in rows)
""",
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_and_computes_what_it_claims(path, monkeypatch):
    monkeypatch.setenv("PPDM_NOTEBOOK_SMALL", "1")
    notebook = nbformat.read(path, as_version=4)
    assert path.name in CHECKS, f"add the checks of {path.name} to CHECKS"
    notebook.cells.append(nbformat.v4.new_code_cell(CHECKS[path.name]))
    # kernel "python3" starts this interpreter (jupyter_client maps "python" to sys.executable).
    # A cell that raises, the checks included, raises CellExecutionError here.
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)  # every cell ran, the checks last


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code
    assert all(not c.outputs and c.execution_count is None for c in code)


def test_there_is_a_notebook():
    assert NOTEBOOKS
