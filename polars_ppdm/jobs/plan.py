"""``ppdm plan``: what a run will read, perturb, release, write and spend, from the
pipeline file, the inputs' metadata and the ledger; no row is read.

:func:`check_columns` is shared with the run: both refuse the same pipelines."""

from __future__ import annotations

import datetime as dt
import math
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from polars_ppdm.jobs.config import (
    FULL_PASS_STEPS,
    DPGroupBy,
    DPHistogram,
    DPKMeans,
    DPQuadtree,
    Drop,
    Keep,
    Pipeline,
    Spiral,
    step_charge_note,
    step_cost,
    step_delta,
    step_epsilon,
    step_label,
    step_rho,
)
from polars_ppdm.jobs.errors import PipelineError
from polars_ppdm.jobs.inputs import InputFile, expand, input_format, metadata, read_schema
from polars_ppdm.reporting.model import YearAhead

__all__ = ["Plan", "check_columns", "ledger_path", "make_plan", "open_dataset", "published_columns"]


def ledger_path(pipeline: Pipeline, override: str | os.PathLike[str] | None) -> Path:
    """``--ledger``, else ``[dataset] ledger``; one of them is required."""
    if override is not None:
        return Path(override)
    if pipeline.ledger_path is not None:
        return pipeline.ledger_path
    msg = (
        "[dataset], field 'ledger': no ledger given; add ledger = \"PATH\" (a DuckDB file "
        "that keeps the budget across runs) or pass --ledger PATH."
    )
    raise PipelineError(msg)


def _budget_differs(pipeline: Pipeline, held: Any, path: Path) -> str | None:
    """Why the pipeline file's budgets cannot be used with what the ledger holds, or None.

    A budget is changed on purpose, by a command, never by editing a pipeline file: the
    ledger's budget holds until ``ppdm ledger --set-budget`` changes it."""
    import math as _math

    from polars_ppdm.dp.accountant import unit_label
    from polars_ppdm.ledger import unit_differs

    dataset = pipeline.dataset
    unit = unit_label(dataset.key)
    if held.unit_conflict(unit):
        return f"[dataset], field 'key': {unit_differs(dataset.name, str(path), held.privacy_unit, unit)}"
    if (held.accounting == "zcdp") != dataset.zcdp:
        return (
            f"[dataset], field {dataset.budget_field!r}: the pipeline file gives {'a zCDP' if dataset.zcdp else 'a pure epsilon'} "
            f"budget but the ledger {str(path)!r} counts dataset {dataset.name!r} in {held.unit}; its spends cannot "
            "be converted afterwards. Give the ledger's kind of budget, or a new dataset name."
        )
    for field_name, asked, recorded, option in (
        (dataset.budget_field, dataset.budget, held.epsilon, "--set-budget"),
        ("delta_budget", dataset.delta_budget, held.delta, "--set-delta-budget"),
    ):
        if asked is not None and not _math.isclose(asked, recorded, rel_tol=1e-12, abs_tol=0.0):
            # A converted (epsilon, delta) zCDP budget is compared as the rho it means.
            converted = field_name == "epsilon_budget" and dataset.zcdp
            says = f"{getattr(dataset, field_name):g}" + (
                f" (with its delta_budget: rho {asked!r})" if converted else ""
            )
            keep = f"rho_budget = {recorded!r}" if converted else f"{recorded!r}"
            return (
                f"[dataset], field {field_name!r}: the pipeline file says {says} but the ledger {str(path)!r} "
                f"holds {recorded!r} for dataset {dataset.name!r}, and the ledger's value stands (a budget is changed "
                f"on purpose, not by editing a file). To change it: ppdm ledger --ledger {shlex.quote(str(path))} "
                f"--dataset {shlex.quote(dataset.name)} {option} {asked!r} (never below what is spent); or write "
                f"{keep} in the file."
            )
    return None


def open_dataset(book: Any, pipeline: Pipeline, path: Path) -> None:
    """Record the pipeline's dataset in the ledger, or check that its budgets are the
    ledger's (:class:`PipelineError` saying how to change them otherwise)."""
    dataset = pipeline.dataset
    if dataset.name in book.datasets()["dataset"].to_list():
        problem = _budget_differs(pipeline, book.status(dataset.name), path)
        if problem is not None:
            raise PipelineError(problem)
    if dataset.zcdp:
        book.open_dataset(
            dataset.name,
            delta_budget=dataset.delta_budget,
            rho_budget=dataset.budget,
            privacy_unit=dataset.key,
        )
    else:
        book.open_dataset(
            dataset.name, dataset.epsilon_budget, dataset.delta_budget, privacy_unit=dataset.key
        )


def published_columns(pipeline: Pipeline, schema: pl.Schema) -> list[str]:
    """The columns of the published table, in the input's order (all but dropped)."""
    dropped = {c for s in pipeline.perturb if isinstance(s, Drop) for c in s.columns}
    return [c for c in schema.names() if c not in dropped]


def _fields_naming_columns(step: Any) -> str:
    return "fields 'by' and 'aggregates'" if isinstance(step, DPGroupBy) else "field 'columns'"


def _release_problems(pipeline: Pipeline, schema: pl.Schema) -> list[str]:
    """What the DP releases would refuse once the run has reserved its budget, found
    from the schema before: the privacy unit's dtype, numeric columns, and all of
    dp_group_by's own checks."""
    from polars_ppdm.dp._common import check_unit_key
    from polars_ppdm.dp.group_by import check_group_by
    from polars_ppdm.dp.histogram import check_histogram
    from polars_ppdm.dp.kmeans import check_kmeans
    from polars_ppdm.dp.quadtree import check_quadtree
    from polars_ppdm.exceptions import InvalidParameterError
    from polars_ppdm.jobs.run import dp_arguments

    checks: dict[str, Callable[..., Any]] = {
        "dp_histogram": check_histogram,
        "dp_quadtree": check_quadtree,
        "dp_kmeans": check_kmeans,
    }
    problems = []
    key = pipeline.dataset.key
    for index, step in enumerate(pipeline.release, 1):
        label = step_label("release", index, step)
        try:
            if isinstance(step, DPGroupBy):
                check_group_by(schema, **step.arguments(key), intervals=step.intervals)
            elif isinstance(step, DPHistogram | DPQuadtree | DPKMeans):
                if key is not None:
                    check_unit_key(key, schema, step.step)
                loose = [c for c in step.columns if not schema[c].is_numeric()]
                if loose:
                    problems.append(
                        f"{label}, field 'columns': {loose} are not numeric ({', '.join(str(schema[c]) for c in loose)})."
                    )
                    continue
                checks[step.step](schema, step.columns, **dp_arguments(step, key))
        except InvalidParameterError as error:
            problems.append(f"{label}: {error}")
    return problems


def _category_problems(pipeline: Pipeline, schema: pl.Schema) -> list[str]:
    """rr_disguise categories that cannot be values of their column (text categories of
    an integer column: every row would be outside them)."""
    from polars_ppdm.jobs.config import RRDisguise

    problems = []
    for index, step in enumerate(pipeline.perturb, 1):
        if not isinstance(step, RRDisguise) or step.categories is None:
            continue
        for column in step.columns:
            cats = step.categories.get(column) if isinstance(step.categories, dict) else step.categories
            dtype = schema[column]
            if not cats or dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
                continue
            try:
                pl.Series(cats, strict=False).cast(dtype, strict=True)
            except (pl.exceptions.PolarsError, TypeError, ValueError):
                problems.append(
                    f"{step_label('perturb', index, step)}, field 'categories': {cats!r} cannot be values of column "
                    f"{column!r} ({dtype}); give the column's own values."
                )
    return problems


def _unit_dtype(dtype: pl.DataType) -> bool:
    return dtype.is_integer() or dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)


def check_columns(pipeline: Pipeline, schema: pl.Schema) -> None:
    """Every column a step names exists, the releases accept their columns' dtypes, and
    when a table is published, every input column is named by exactly one perturb step
    (perturbed, kept or dropped)."""
    names = set(schema.names())
    problems = []
    key = pipeline.dataset.key
    if key is not None and key not in names:
        problems.append(f"[dataset], field 'key': the input has no column {key!r}; it has {schema.names()}.")
    elif key is not None and not _unit_dtype(schema[key]):
        # Every step keys its draws by the unit's 64-bit word (integers, hashed strings):
        # refused here, before a row is read or anything reserved, not by the first step.
        problems.append(
            f"[dataset], field 'key': the privacy unit's column {key!r} must be an integer or string column "
            f"(String, Categorical or Enum). Got dtype {schema[key]} instead."
        )
    for section, index, step in pipeline.steps():
        missing = [c for c in step.columns if c not in names]
        if missing:
            problems.append(
                f"{step_label(section, index, step)}, {_fields_naming_columns(step)}: the input has no column(s) {missing}; "
                f"it has {schema.names()}."
            )
    if not problems:
        problems += _category_problems(pipeline, schema)
        problems += _release_problems(pipeline, schema)
    if pipeline.output.table is not None:
        named = {c for s in pipeline.perturb for c in s.columns}
        loose = [c for c in schema.names() if c not in named]
        if loose:
            problems.append(
                f"[[perturb]]: the input column(s) {loose} are neither perturbed, kept nor dropped; "
                "a column is never published by accident: name each in a perturb step, a "
                '[[perturb]] step = "keep" or a [[perturb]] step = "drop".'
            )
    if problems:
        raise PipelineError(
            "\n".join(problems)
            if len(problems) == 1
            else f"{len(problems)} problems:\n" + "\n".join(f"  {p}" for p in problems)
        )


@dataclass
class StepPlan:
    label: str
    section: str
    step: str
    columns: list[str]
    parameters: dict[str, Any]
    epsilon: float | None
    pass_: str  # "row by row" or why a full pass is needed
    output: str | None = None
    rows: int | None = None  # the rows the step reads (from the inputs' metadata), None: unknown
    delta: float = 0.0
    charge: str | None = None  # how a randomized-response step's epsilon was worked out
    rho: float | None = None  # a Gaussian release's rho
    cost: float | None = None  # what the step charges, in the dataset's unit


@dataclass
class Plan:
    pipeline: str
    dataset: str
    key: str | None
    ledger: str
    inputs: list[InputFile]
    format: str
    steps: list[StepPlan]
    outputs: list[str]
    epsilon: float
    budget: float
    spent_before: float
    published: list[str] = field(default_factory=list)
    delta: float = 0.0
    delta_budget: float = 0.0
    delta_spent_before: float = 0.0
    secret: str = ""  # what is known of the secret (its fingerprint; never the secret)
    identical_rerun: bool = False  # the budget is short, but the run is an identical re-run
    unit: str = "epsilon"  # of epsilon, budget and spent_before: "epsilon", or "rho" (zCDP)
    ahead: YearAhead | None = None  # the budget over the runs after this one (one line of render)

    @property
    def short(self) -> bool:
        """The budget left cannot pay for the run (``ppdm run`` refuses it unless it is
        an identical re-run, :attr:`identical_rerun`)."""
        return self.left_after < -1e-12 * self.budget or self.delta > self.delta_left_before * (1 + 1e-12)

    @property
    def left_before(self) -> float:
        return max(self.budget - self.spent_before, 0.0)

    @property
    def left_after(self) -> float:
        return self.left_before - self.epsilon

    @property
    def delta_left_before(self) -> float:
        return max(self.delta_budget - self.delta_spent_before, 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            "dataset": self.dataset,
            "key": self.key,
            "ledger": self.ledger,
            "format": self.format,
            "inputs": [{"path": str(i.path), "bytes": i.bytes, "rows": i.rows} for i in self.inputs],
            "steps": [
                {
                    "step": s.label,
                    "columns": s.columns,
                    "parameters": s.parameters,
                    "epsilon": s.epsilon,
                    "rho": s.rho,
                    "cost": s.cost,
                    "delta": s.delta,
                    "charge": s.charge,
                    "pass": s.pass_,
                    "rows": s.rows,
                    "output": s.output,
                }
                for s in self.steps
            ],
            "published_columns": self.published,
            "outputs": self.outputs,
            "epsilon": self.epsilon,
            "budget": self.budget,
            "spent_before": self.spent_before,
            "left_before": self.left_before,
            "left_after": self.left_after,
            "delta": self.delta,
            "delta_budget": self.delta_budget,
            "delta_spent_before": self.delta_spent_before,
            "secret": self.secret,
            "unit": self.unit,
            **self._zcdp_json(),
            "short": self.short,
            "identical_rerun": self.identical_rerun,
        }

    def _epsilon_of(self, rho: float) -> float:
        from polars_ppdm.dp.zcdp import rho_to_epsilon

        return rho_to_epsilon(rho, self.delta_budget) if rho > 0 else 0.0

    def _zcdp_json(self) -> dict[str, Any]:
        """zCDP: the (epsilon, delta) that the spent rho means before and after the run."""
        if self.unit != "rho":
            return {}
        return {
            "epsilon_delta": self.delta_budget,
            "epsilon_spent_before": self._epsilon_of(self.spent_before),
            "epsilon_spent_after": self._epsilon_of(self.spent_before + self.cost_total),
            "epsilon_budget": self._epsilon_of(self.budget),
        }

    @property
    def cost_total(self) -> float:
        """What the run charges, in :attr:`unit` (the same as :attr:`epsilon`)."""
        return self.epsilon

    def render(self) -> str:
        lines = [
            f"pipeline {self.pipeline}: dataset {self.dataset!r}, privacy unit: "
            + (f"column {self.key!r}" if self.key else "the row (no key column)")
        ]
        lines.append(f"read ({self.format}):")
        for i in self.inputs:
            rows = f"{i.rows:,} rows" if i.rows is not None else "rows unknown until read (no metadata)"
            lines.append(f"  {i.path}  {i.bytes:,} bytes, {rows}")
        lines.append("steps:")
        for s in self.steps:
            zcdp_cost = f" (rho {s.cost:g} in zCDP)" if self.unit == "rho" and s.cost is not None else ""
            if s.step == "rr_disguise" and s.charge is not None:
                eps = (f"epsilon {s.epsilon:g}{zcdp_cost}: " if s.epsilon is not None else "") + s.charge
            elif s.rho is not None:
                eps = f"Gaussian, rho {s.rho:g}" + (f": {s.charge}" if s.charge else "")
            elif s.epsilon is not None:
                eps = f"epsilon {s.epsilon:g}{zcdp_cost}" + (f", delta {s.delta:g}" if s.delta else "")
            elif s.step in ("rr_support", "rr_apriori"):
                eps = "no new epsilon (computed from the disguised columns)"
            elif s.step == "keep":
                eps = "published as they are (no protection)"
            elif s.step == "drop":
                eps = "not published"
            else:
                eps = "not differentially private (no epsilon)" + (f"; {s.charge}" if s.charge else "")
            out = f" -> {s.output}" if s.output else ""
            rows = f", {s.rows:,} rows" if s.rows is not None else ""
            lines.append(f"  {s.label}{out}: {eps}; {s.pass_}{rows}")
        if self.published:
            lines.append(f"published columns: {', '.join(self.published)}")
        lines.append("write: " + ", ".join(self.outputs))
        if self.unit == "rho":
            zcdp = self._zcdp_json()
            lines.append(
                f"rho (zCDP): this run spends {self.epsilon:g} (nothing if it is an identical re-run); "
                f"budget {self.budget:g}, left before {self.left_before:g}, after {self.left_after:g}; "
                f"as (epsilon, delta {self.delta_budget:g}): spent {zcdp['epsilon_spent_before']:.4g} before, "
                f"{zcdp['epsilon_spent_after']:.4g} after, of {zcdp['epsilon_budget']:.4g}"
            )
        else:
            lines.append(
                f"epsilon: this run spends {self.epsilon:g} (nothing if it is an identical re-run); "
                f"budget {self.budget:g}, left before {self.left_before:g}, after {self.left_after:g}"
            )
        if self.unit != "rho" and (self.delta or self.delta_budget):
            left = self.delta_left_before
            lines.append(
                f"delta: this run spends {self.delta:g}; delta budget {self.delta_budget:g}, left before "
                f"{left:g}, after {left - self.delta:g}"
            )
        if self.ahead is not None:
            from polars_ppdm.reporting.ahead import ahead_text

            lines.append(ahead_text(self.ahead))
        if self.secret:
            lines.append(f"secret: {self.secret}")
        if self.short and self.identical_rerun:
            lines.append("the budget left is short, but this is an identical re-run: it spends nothing")
        elif self.short:
            lines.append("the budget left is short: `ppdm run` will refuse this run (exit 3)")
        return "\n".join(lines)


def _continual_note(step: Any, through: int, started: bool) -> str:
    """What a continual release's run publishes and costs, and the error of its totals."""
    from polars_ppdm.dp.continual import expected_rmse

    sd = expected_rmse(step.rho, step.horizon, through, step.max_contributions)
    charged = (
        "its tree was charged when it started: nothing now"
        if started
        else f"this run starts its tree: rho {step.rho:g} for all {step.horizon} periods, once"
    )
    return (
        f"publishes periods 0 .. {through} of {step.horizon}; {charged}; running total's SD at period "
        f"{through}: {sd:.3g} (the same in every group)"
    )


def _pass(section: str, step: Any) -> str:
    if section == "release":
        return "a pass over the " + ("perturbed" if step.step.startswith("rr_") else "input") + " rows"
    if step.step in FULL_PASS_STEPS:
        return f"full pass ({FULL_PASS_STEPS[step.step]})"
    if isinstance(step, Keep | Drop):
        return "row by row (streamed)"
    return "row by row (streamed)"


def make_plan(
    pipeline: Pipeline,
    *,
    source: str,
    ledger: str | os.PathLike[str] | None = None,
    as_of: dt.date | int | None = None,
) -> Plan:
    """The plan of a run (reads metadata and the ledger; creates no file).

    Refuses what ``ppdm run`` would refuse before it reads a row, with the same error
    (and so the same exit status): the paths, the secret (missing, unreadable or
    guessable), budgets that differ from the ledger's, the columns and dtypes against
    the steps.  A budget too short for the run is said in :attr:`Plan.short`; then the
    inputs are fingerprinted (their bytes read, no row) to tell an identical re-run,
    which spends nothing, as ``ppdm run`` does."""
    from polars_ppdm.jobs.paths import check_paths
    from polars_ppdm.jobs.run import (
        check_continual_state,
        check_steps_on_schema,
        continual_throughs,
        read_secret,
        started_trees,
    )

    path = ledger_path(pipeline, ledger)
    check_paths(pipeline, pipeline_file=Path(source), ledger=path)
    secret = read_secret(pipeline)
    throughs = continual_throughs(pipeline, as_of)
    dataset = pipeline.dataset
    budget = dataset.budget
    delta_budget = dataset.delta_budget or (1e-6 if dataset.zcdp else 0.0)
    spent = delta_spent = 0.0
    book = None
    if path.exists():
        from polars_ppdm.ledger import Ledger

        book = Ledger(path)
        known = book.datasets()
        if pipeline.dataset.name in known["dataset"].to_list():
            held = book.status(pipeline.dataset.name)
            problem = _budget_differs(pipeline, held, path)
            if problem is not None:
                raise PipelineError(problem)
            budget, spent, delta_budget, delta_spent = held.epsilon, held.spent, held.delta, held.spent_delta
    files = expand(pipeline)
    fmt = input_format(pipeline, files)
    inputs = metadata(files, fmt)
    schema = read_schema(files, fmt)
    check_columns(pipeline, schema)
    check_steps_on_schema(pipeline, schema, fmt)
    check_continual_state(pipeline, schema, book)
    started = started_trees(pipeline, throughs, book)
    spends = pipeline.spends(started)
    steps = []
    outputs = []
    total = sum(i.rows or 0 for i in inputs) if all(i.rows is not None for i in inputs) else None
    for section, index, step in pipeline.steps():
        params = step.parameters()
        out = None
        if section == "release":
            out = str(pipeline.resolve(step.output))
            outputs.append(out)
        elif isinstance(step, Spiral):
            out = f"key file {pipeline.resolve(step.path)} (mode 0600)"
            outputs.append(str(pipeline.resolve(step.path)))
        label = step_label(section, index, step)
        steps.append(
            StepPlan(
                label=label,
                section=section,
                step=step.step,
                columns=list(step.columns),
                parameters=params,
                epsilon=step_epsilon(step),
                rho=step_rho(step),
                cost=0.0 if label in started else step_cost(step, zcdp=dataset.zcdp),
                delta=step_delta(step),
                charge=_continual_note(step, throughs[label], label in started)
                if label in throughs
                else step_charge_note(step, pipeline.dataset.key),
                pass_=_pass(section, step),
                output=out,
                rows=total,
            )
        )
    if pipeline.output.table is not None:
        outputs.insert(0, str(pipeline.resolve(pipeline.output.table)))
    outputs.append(str(pipeline.resolve(pipeline.output.manifest)))
    plan = Plan(
        pipeline=source,
        dataset=pipeline.dataset.name,
        key=pipeline.dataset.key,
        ledger=str(path),
        inputs=inputs,
        format=fmt.kind,
        steps=steps,
        outputs=outputs,
        epsilon=math.fsum(eps for _, eps, _ in spends),
        budget=budget,
        spent_before=spent,
        published=published_columns(pipeline, schema) if pipeline.output.table is not None else [],
        delta=math.fsum(delta for _, _, delta in spends),
        delta_budget=delta_budget,
        delta_spent_before=delta_spent,
        secret=f"fingerprint {secret.fingerprint()} (not guessable)",
        unit=dataset.unit,
    )
    if plan.short and book is not None:
        from polars_ppdm.jobs.inputs import PinnedInputs
        from polars_ppdm.jobs.run import run_id

        candidate = run_id(pipeline, PinnedInputs(files).fingerprints, secret, throughs)
        plan.identical_rerun = book.run_spent(candidate) is not None
    plan.ahead = _year_ahead(pipeline, plan, throughs, as_of)
    return plan


def _year_ahead(
    pipeline: Pipeline, plan: Plan, throughs: dict[str, int], as_of: dt.date | int | None
) -> YearAhead:
    """The runs after this one at this pipeline: this run's spend counted (unless it is an
    identical re-run), every continual tree started by then (their runs take nothing)."""
    from polars_ppdm.reporting.ahead import pipeline_year_ahead

    today = as_of if isinstance(as_of, dt.date) else dt.datetime.now(dt.UTC).date()
    return pipeline_year_ahead(
        pipeline,
        spent=plan.spent_before + (0.0 if plan.identical_rerun else plan.epsilon),
        budget=plan.budget,
        throughs=throughs,
        started=set(throughs),
        today=today,
        epsilon_delta=plan.delta_budget if plan.unit == "rho" else 0.0,
        # A pure-DP dataset spends delta on partition selection: left after this run.
        delta_left=None
        if plan.unit == "rho"
        else plan.delta_left_before - (0.0 if plan.identical_rerun else plan.delta),
    )
