"""The manifest of a run: one JSON file that says what was read, done, written and spent.

It holds the pipeline's hash, the versions of polars_ppdm, Polars, DuckDB, NumPy and
Python, the inputs (paths, sizes, row counts, content fingerprints: SHA-256 over the
SHA-256 of each 64 MiB block, :func:`polars_ppdm.jobs.inputs.fingerprint`), each
step's parameters and
epsilon, the outputs (paths, row counts, SHA-256), the epsilon spent, the secret's
fingerprint (eight hex digits of a hash, never the secret), start and end times and the
exit status.  A spiral key appears by its file's path only.
"""

from __future__ import annotations

import json
import math
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "Manifest", "versions"]

FORMAT = "polars_ppdm.manifest/1"


def versions() -> dict[str, str]:
    import duckdb
    import numpy
    import polars

    from polars_ppdm import __version__

    return {
        "polars_ppdm": __version__,
        "polars": polars.__version__,
        "duckdb": duckdb.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
    }


@dataclass
class Manifest:
    pipeline: str
    pipeline_sha256: str
    dataset: str
    run_id: str
    secret_fingerprint: str
    started: str
    inputs: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    releases: list[dict[str, Any]] = field(default_factory=list)
    spent: float = 0.0
    identical_rerun: bool = False
    finished: str = ""
    status: str = "running"
    exit_code: int | None = None
    error: str | None = None
    unit: str = "epsilon"  # of the releases' amounts: "epsilon", or "rho" for a zCDP dataset
    epsilon_delta: float | None = None  # zCDP: the delta at which rho is stated as an epsilon

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "run_id": self.run_id,
            "status": self.status,
            "exit_code": self.exit_code,
            "error": self.error,
            "pipeline": {"path": self.pipeline, "sha256": self.pipeline_sha256},
            "dataset": self.dataset,
            "versions": versions(),
            "inputs": self.inputs,
            "steps": self.steps,
            "outputs": self.outputs,
            self.unit: {
                "releases": self.releases,
                "total": math.fsum(r[self.unit] for r in self.releases),
                "spent_by_this_run": self.spent,
                "identical_rerun": self.identical_rerun,
                **self._as_epsilon(),
            },
            "secret_fingerprint": self.secret_fingerprint,
            "started": self.started,
            "finished": self.finished,
        }

    def _as_epsilon(self) -> dict[str, Any]:
        """zCDP: what this run's rho means as (epsilon, delta) alone (CKS 2020)."""
        if self.unit != "rho" or self.epsilon_delta is None:
            return {}
        from polars_ppdm.dp.zcdp import rho_to_epsilon

        total = math.fsum(r["rho"] for r in self.releases)
        return {
            "accounting": "zCDP (rho adds up); Laplace and randomized-response steps enter as epsilon^2/2",
            "delta": self.epsilon_delta,
            "epsilon_of_this_run": rho_to_epsilon(total, self.epsilon_delta) if total > 0 else 0.0,
        }

    def dumps(self) -> bytes:
        return (json.dumps(self.to_json(), indent=2) + "\n").encode("utf-8")

    def write(self, path: Path) -> str:
        """Write atomically; returns the file's SHA-256 (recorded in the ledger)."""
        from polars_ppdm.jobs.atomic import write_bytes_atomic

        return write_bytes_atomic(path, self.dumps())
