"""Scheduled privacy jobs: a pipeline file, ``ppdm plan``, ``ppdm run``, the manifest.

A pipeline file (TOML, :mod:`polars_ppdm.jobs.config`) names a dataset (its inputs,
row key and total ``epsilon_budget``), where the secret comes from, the perturbation of
every column, the releases and the outputs.  :func:`run_pipeline` runs it against a
persistent ledger (:class:`polars_ppdm.ledger.Ledger`); :func:`make_plan` shows what a run
would do.  Exit statuses: :mod:`polars_ppdm.jobs.errors`.
"""

from polars_ppdm.jobs.config import Pipeline, load_pipeline, parse_pipeline
from polars_ppdm.jobs.errors import InputError, PipelineError
from polars_ppdm.jobs.plan import Plan, make_plan
from polars_ppdm.jobs.run import RunResult, run_pipeline

__all__ = [
    "InputError",
    "Pipeline",
    "PipelineError",
    "Plan",
    "RunResult",
    "load_pipeline",
    "make_plan",
    "parse_pipeline",
    "run_pipeline",
]
