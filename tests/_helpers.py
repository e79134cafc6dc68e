"""Shared helpers for statistical tests: standard errors of the estimators we check.

Statistical tests use fixed seeds and a tolerance of ``Z`` standard errors of the checked
estimator (DESIGN.md, Conventions): a two-sided normal tail of 5 SE is 5.7e-7, so a
failure means a bug, not bad luck.
"""

from __future__ import annotations

import math

import numpy as np

from polars_ppdm import dp

Z = 5.0  # standard errors in every statistical tolerance


def sample_variance_se(variance: float, mu4: float, n: int) -> float:
    """Standard error of the sample variance ``s^2`` (ddof=1) of ``n`` iid draws.

    ``Var(s^2) = (mu4 - (n - 3) / (n - 1) * sigma^4) / n`` with ``mu4`` the fourth
    central moment (exact for any distribution with four moments).
    """
    return math.sqrt((mu4 - (n - 3) / (n - 1) * variance**2) / n)


def sample_variance_se_from(sample: np.ndarray, axis: int = 0) -> np.ndarray:
    """The same standard error with sigma^2 and mu4 estimated from ``sample`` itself
    (plug-in), along ``axis``."""
    sample = np.asarray(sample, dtype=np.float64)
    n = sample.shape[axis]
    centred = sample - sample.mean(axis=axis, keepdims=True)
    variance = (centred**2).mean(axis=axis)
    mu4 = (centred**4).mean(axis=axis)
    return np.sqrt(np.clip(mu4 - (n - 3) / (n - 1) * variance**2, 0.0, None) / n)


#: NumPy's SIMD dispatch targets above its x86-64 baseline (NumPy 2.4 names them X86_V3,
#: X86_V4, ...; older releases AVX2, FMA3, AVX512F, ...): a process with all of them
#: switched off runs the baseline loops, whose bits differ from AVX-512's for np.log.
NUMPY_SIMD_OFF = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512_SKX AVX2 FMA3"


def stdout_with_numpy_simd_off(script: str) -> str:
    """The stripped stdout of ``script`` run by this Python with NumPy's SIMD dispatch
    above the baseline switched off (``NPY_DISABLE_CPU_FEATURES``), the project on its path."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
        "NPY_DISABLE_CPU_FEATURES": NUMPY_SIMD_OFF,
    }
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return run.stdout.strip()


def refusal_in_another_process(serialized: bytes, folder) -> str:
    """What another process prints when it collects the serialized plan ``serialized``:
    it must refuse (exit 3 here), as a plan holds handles to its secrets, never them."""
    import subprocess
    import sys

    path = folder / "plan.bin"
    path.write_bytes(serialized)
    code = (
        "import io, sys, polars as pl, polars_ppdm\n"
        "try:\n"
        f"    pl.LazyFrame.deserialize(io.BytesIO(open({str(path)!r}, 'rb').read())).collect()\n"
        "except Exception as error:\n"
        "    print(error); sys.exit(3)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stdout + run.stderr
    return run.stdout


# The DP group-by aggregates as Polars and the SQL macros name them (tests/test_dp_group_by_sql.py,
# tests/test_gaussian_sql.py): the aggregate, its macro and the macro's extra arguments.
SQL_SECRET = "5a1f3c9e0b7d2a4866c3e1f09b8d7a25"  # fixed for the tests; not a repeated pattern
SQL_AGGREGATES = {
    "count": (lambda: dp.count(), "ppdm_dp_count", ""),
    "sum": (
        lambda: dp.sum("spend", bounds=(0, 10)),
        "ppdm_dp_sum",
        ", 'spend', contribution_bounds_per_row := [0, 10]",
    ),
    "mean": (
        lambda: dp.mean("spend", bounds=(-2, 10)),
        "ppdm_dp_avg",
        ", 'spend', contribution_bounds_per_row := [-2, 10]",
    ),
}
SQL_GROUPS = {"region": ["a", "b", "c", "z"], "zone": [0, 1, 2, 3, 4, 9]}
