"""The pipeline file: a TOML document, validated by a pydantic schema.

Every step's parameters carry the library's names (README, "Parameters across the
library"); the row key and the secret are given once, in ``[dataset]`` and ``[secret]``,
and passed to every step.  A bad file is refused with one line per problem naming the
step, the field, what is allowed and what was found (:class:`PipelineError`); the value
of anything under ``[secret]`` is never shown.

The steps themselves are the vocabulary of :mod:`polars_ppdm.steps` (below this package
and :mod:`polars_ppdm.reporting`, which describes them too); their names are importable
from here as well.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import os
import re
import stat
import tomllib
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from polars_ppdm.jobs.errors import PipelineError

# The steps are the vocabulary of polars_ppdm.steps, below jobs/ and reporting/ (the report
# describes steps without knowing the job); every name stays importable from here.
from polars_ppdm.steps import (
    FULL_PASS_STEPS,  # noqa: F401 -- re-exported
    NO_FINITE_EPSILON,
    PERTURB_STEPS,
    RELEASE_STEPS,
    AddNoise,
    Aggregate,
    Bound,  # noqa: F401 -- re-exported
    Columns,  # noqa: F401 -- re-exported
    DPContinualCounts,
    DPGroupBy,
    DPHistogram,
    DPKMeans,
    DPQuadtree,
    Drop,
    EcdfResample,
    Keep,
    PerturbStep,
    Positive,
    Probability,  # noqa: F401 -- re-exported
    PublicGroup,  # noqa: F401 -- re-exported
    ReleaseStep,
    RRApriori,
    RRDisguise,
    RRSupport,
    Scalar,  # noqa: F401 -- re-exported
    Spiral,
    StrictModel,
    listify,
    step_charge_note,
    step_cost,
    step_delta,
    step_epsilon,
    step_label,
    step_rho,
)

__all__ = [
    "NO_FINITE_EPSILON",
    "PERTURB_STEPS",
    "RELEASE_STEPS",
    "Pipeline",
    "load_pipeline",
    "parse_pipeline",
    "periods_through",
    "step_charge_note",
    "step_cost",
    "step_delta",
    "step_epsilon",
    "step_rho",
]

# ---- the file ----------------------------------------------------------------------------

_HEX_SECRET = re.compile(r"(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{64})")


#: The column types a ``[dataset.csv] types`` table may declare (Polars' names).
CsvType = Literal[
    "Boolean", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
    "Float32", "Float64", "String", "Date", "Datetime",
]  # fmt: skip
_OneByte = Annotated[str, Field(min_length=1, max_length=1, pattern=r"^[\x01-\x7f]$")]


class CsvOptions(StrictModel):
    """How CSV inputs are parsed (``[dataset.csv]``): Polars' reader options, each with
    Polars' default when left out. ``quote_char = ""`` turns quoting off; ``null_values``
    are read as null besides an empty field; ``types`` declares columns' types instead of
    the types Polars infers from the rows (``column_1``, ``column_2``, ... name the columns
    of a file without a header)."""

    separator: _OneByte = ","
    has_header: bool = True
    quote_char: Annotated[str, Field(max_length=1, pattern=r"^[\x01-\x7f]?$")] = '"'
    null_values: list[str] = Field(default_factory=list)
    decimal_comma: bool = False
    types: dict[Annotated[str, Field(min_length=1)], CsvType] = Field(default_factory=dict)

    @field_validator("null_values", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return listify(value)

    @model_validator(mode="after")
    def _apart(self) -> CsvOptions:
        if self.quote_char == self.separator:
            msg = f"'quote_char' and 'separator' are both {self.separator!r}; give two different characters"
            raise ValueError(msg)
        if self.decimal_comma and self.separator == ",":
            msg = "'decimal_comma' = true needs another 'separator' than ',' (e.g. ';')"
            raise ValueError(msg)
        return self

    def polars_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`polars.scan_csv` these options are."""
        import polars as pl

        return {
            "separator": self.separator,
            "has_header": self.has_header,
            "quote_char": self.quote_char or None,
            "null_values": list(self.null_values) or None,
            "decimal_comma": self.decimal_comma,
            "schema_overrides": {name: getattr(pl, kind) for name, kind in self.types.items()} or None,
        }


class Dataset(StrictModel):
    """The data, its privacy unit and its budget: ``epsilon_budget`` (pure accounting),
    ``rho_budget`` (zCDP), or ``epsilon_budget`` with ``delta_budget`` and ``accounting =
    "zcdp"`` (converted, explicitly, to the largest rho within them)."""

    name: Annotated[str, Field(min_length=1)]
    inputs: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    epsilon_budget: Positive | None = None
    rho_budget: Positive | None = None
    accounting: Literal["pure", "zcdp"] | None = None
    # Pure: None is whatever the ledger holds (0 for a new dataset); a number is checked
    # against it.  zCDP: the delta at which the rho is stated as an epsilon (1e-6 if None).
    delta_budget: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] | None = None
    key: Annotated[str, Field(min_length=1)] | None = None
    format: Literal["parquet", "csv", "ipc"] | None = None
    csv: CsvOptions | None = None
    ledger: Annotated[str, Field(min_length=1)] | None = None

    @field_validator("inputs", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return listify(value)

    @model_validator(mode="after")
    def _budget_kind(self) -> Dataset:
        if self.epsilon_budget is None and self.rho_budget is None:
            msg = (
                "needs a budget: 'epsilon_budget' (the total epsilon this dataset may ever spend, kept in the "
                "ledger) or 'rho_budget' (a zCDP budget)"
            )
            raise ValueError(msg)
        if self.epsilon_budget is not None and self.rho_budget is not None:
            msg = (
                "has both 'epsilon_budget' and 'rho_budget'; give one (for an (epsilon, delta) budget in zCDP, "
                'epsilon_budget with delta_budget and accounting = "zcdp")'
            )
            raise ValueError(msg)
        if self.rho_budget is not None and self.accounting == "pure":
            msg = 'has \'rho_budget\', a zCDP budget, with accounting = "pure"; leave accounting out or say "zcdp"'
            raise ValueError(msg)
        if self.accounting == "zcdp" and self.epsilon_budget is not None and not self.delta_budget:
            msg = (
                "accounting = \"zcdp\" with 'epsilon_budget' converts (epsilon, delta) to a rho: it needs "
                "'delta_budget' in (0, 1), e.g. 1e-6"
            )
            raise ValueError(msg)
        if self.zcdp and self.delta_budget == 0:
            msg = "'delta_budget' of a zCDP dataset is the delta of its epsilon: in (0, 1), e.g. 1e-6"
            raise ValueError(msg)
        return self

    @property
    def zcdp(self) -> bool:
        """Whether the budget is a rho (zero-concentrated DP)."""
        return self.rho_budget is not None or self.accounting == "zcdp"

    @property
    def unit(self) -> str:
        return "rho" if self.zcdp else "epsilon"

    @property
    def budget(self) -> float:
        """The total budget in :attr:`unit` (an (epsilon, delta) zCDP budget converted by
        :func:`polars_ppdm.dp.zcdp.rho_for`)."""
        if self.rho_budget is not None:
            return self.rho_budget
        assert self.epsilon_budget is not None
        if self.zcdp:
            from polars_ppdm.dp.zcdp import rho_for

            assert self.delta_budget is not None
            return rho_for(self.epsilon_budget, self.delta_budget)
        return self.epsilon_budget

    @property
    def budget_field(self) -> str:
        """The field the budget was given in (for messages)."""
        return "rho_budget" if self.rho_budget is not None else "epsilon_budget"


class SecretSource(StrictModel):
    env: Annotated[str, Field(min_length=1)] | None = None
    file: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one(self) -> SecretSource:
        if (self.env is None) == (self.file is None):
            msg = "needs exactly one of 'env' (an environment variable's name) and 'file' (a 0600 file)"
            raise ValueError(msg)
        for name, value in (("env", self.env), ("file", self.file)):
            if value is not None and _HEX_SECRET.fullmatch(value.strip()):
                what = "a variable's name" if name == "env" else "a file's path"
                msg = f"{name!r} holds 32 or 64 hex digits: that is a secret, not {what}; a literal secret is refused"
                raise ValueError(msg)
        return self


class Output(StrictModel):
    manifest: Annotated[str, Field(min_length=1)]
    table: Annotated[str, Field(min_length=1)] | None = None


#: Where a pipeline runs: the same steps and bits on either (``ppdm run --engine``).
ENGINES = ("polars", "spark")


class Pipeline(StrictModel):
    """A validated pipeline file.  Paths are as written; :attr:`base` resolves them."""

    engine: Literal["polars", "spark"] = "polars"
    dataset: Dataset
    secret: SecretSource
    output: Output
    # pydantic fields (each model gets a copy of the default), not class attributes
    perturb: list[PerturbStep] = []  # noqa: RUF012
    release: list[ReleaseStep] = []  # noqa: RUF012
    base: Path = Field(default=Path(), exclude=True)

    def resolve(self, path: str) -> Path:
        """``path`` relative to the pipeline file's folder (an absolute path as it is)."""
        return self.base / os.path.expanduser(path)

    @property
    def ledger_path(self) -> Path | None:
        return None if self.dataset.ledger is None else self.resolve(self.dataset.ledger)

    def steps(self) -> Iterator[tuple[str, int, Any]]:
        """``(section, index from 1, step)`` of every step in file order."""
        for i, perturb in enumerate(self.perturb, 1):
            yield "perturb", i, perturb
        for i, release in enumerate(self.release, 1):
            yield "release", i, release

    def epsilons(self) -> list[tuple[str, float]]:
        """``(step label, epsilon)`` of everything the run releases that spends budget:
        each rr_disguise step (:func:`step_epsilon`: the sum over its columns of epsilon
        per distinct value x ``max_values_per_unit``; whole-record over two or more columns
        has no finite epsilon and is not in the list) and each DP release."""
        return [(label, eps) for label, eps, _ in self.spends()]

    def spends(self, started: Collection[str] = ()) -> list[tuple[str, float, float]]:
        """``(step label, cost, delta)`` of everything that spends budget, the cost in
        the dataset's unit (:func:`step_cost`: epsilon, or rho for a zCDP dataset), with
        each release's delta (0 but for partition selection).  ``started``: the labels of
        the continual releases whose tree the ledger already holds (charged when it
        started: their later runs spend nothing)."""
        out = []
        for section, index, step in self.steps():
            if isinstance(step, DPContinualCounts) and step_label(section, index, step) in started:
                continue
            cost = step_cost(step, zcdp=self.dataset.zcdp)
            if cost is not None:
                out.append((step_label(section, index, step), cost, step_delta(step)))
        return out

    def canonical(self) -> dict[str, Any]:
        """The file's content after validation (defaults filled in), for the run id.

        Without the engine: both engines give the same bits, so a run on Spark is an
        identical re-run of the same run on Polars (and spends nothing).  The rr_disguise
        options added later (``accept_no_finite_epsilon``, ``max_values_per_unit``) appear
        only when given, so the run ids of pipelines written before them do not change."""
        dumped = self.model_dump(mode="json", exclude={"engine"})
        # Fields added with zCDP appear only when given (pure pipelines keep their run ids).
        for field in ("rho_budget", "accounting", "csv"):  # csv: added after them
            if dumped["dataset"].get(field) is None:
                dumped["dataset"].pop(field, None)
        for step in dumped.get("release", ()):
            for aggregate in step.get("aggregates", ()):  # fields added with quantiles (issue 29)
                for field in ("q", "candidates"):
                    if aggregate.get(field) is None:
                        aggregate.pop(field, None)
            if step.get("step") in ("dp_histogram", "dp_group_by") and step.get("mechanism") == "laplace":
                del step["mechanism"]
                if step.get("rho") is None:
                    step.pop("rho", None)
        for step in dumped.get("perturb", ()):
            if step.get("nulls") == "refuse":  # added later (to each perturbation); the default
                del step["nulls"]
            if step.get("step") == "rr_disguise":
                if step.get("accept_no_finite_epsilon") is False:
                    del step["accept_no_finite_epsilon"]
                if step.get("max_values_per_unit") is None:
                    step.pop("max_values_per_unit", None)
        return dumped


def periods_through(step: DPContinualCounts, as_of: dt.date | int | None) -> int:
    """The last period of continual release ``step`` complete as of ``as_of`` (``ppdm run
    --as-of``: a date for a date ``period``, the current period's number otherwise): the
    periods before it.  Refused (:class:`PipelineError`) when none is complete yet, or
    when ``as_of`` is past the horizon's end.

    Examples
    --------
    >>> from pydantic import TypeAdapter
    >>> step = TypeAdapter(ReleaseStep).validate_python(
    ...     {"step": "dp_continual_counts", "by": "region", "period": "day", "horizon": 30,
    ...      "rho": 0.1, "public_groups": [{"region": "north"}], "output": "c.parquet"})
    >>> periods_through(step, 5)
    4
    """
    if step.start is None:
        if not isinstance(as_of, int) or isinstance(as_of, bool):
            msg = (
                f"{step.title} counts period numbers (no 'start'): give the current period's number, "
                f"`ppdm run --as-of N` (periods 0 .. N-1 are published). Got {_as_of_text(as_of)}."
            )
            raise PipelineError(msg)
        current = as_of
    else:
        day = dt.datetime.now(dt.UTC).date() if as_of is None else as_of
        if not isinstance(day, dt.date):
            msg = f"{step.title} has dated periods (start = {step.start}): --as-of must be a date (YYYY-MM-DD). Got {_as_of_text(as_of)}."
            raise PipelineError(msg)
        current = (day - step.start).days // (7 if step.every == "week" else 1)
    if current < 1:
        msg = f"{step.title}: no period is complete as of {_as_of_text(as_of)} (period 0 ends later); nothing to publish yet."
        raise PipelineError(msg)
    if current > step.horizon:
        msg = (
            f"{step.title}: as of {_as_of_text(as_of)} the release's horizon of {step.horizon} periods is over; a "
            "continual release never publishes past its horizon (start a new release: a new step with its "
            "own output and budget)."
        )
        raise PipelineError(msg)
    return current - 1


def _as_of_text(as_of: dt.date | int | None) -> str:
    """``--as-of`` as the user wrote it (a date as YYYY-MM-DD; none: today)."""
    return "today (UTC)" if as_of is None else str(as_of)


# ---- loading and the messages ------------------------------------------------------------

_LITERAL_SECRET = (
    "a literal secret is refused: anyone who reads the pipeline file could undo the "
    'perturbation. Give [secret] env = "NAME" (an environment variable) or '
    'file = "PATH" (a file of mode 0600, e.g. from `ppdm secret --output PATH`)'
)


_MAX_PIPELINE_BYTES = 16 << 20  # a pipeline file is a few KB; a larger file is not one


def load_pipeline(path: str | os.PathLike[str]) -> Pipeline:
    """Read and validate a pipeline file.

    Raises
    ------
    PipelineError
        One line per problem, each naming the step and the field.
    InputError
        When the file itself cannot be read.
    """
    from polars_ppdm.jobs.errors import InputError

    source = Path(path)
    try:
        # A FIFO or a device would block the read (or never end): only a regular file.
        if not stat.S_ISREG(os.stat(source).st_mode):
            msg = f"The pipeline file {str(source)!r} is not a regular file (a FIFO, a device or a folder)."
            raise InputError(msg)
        if os.stat(source).st_size > _MAX_PIPELINE_BYTES:
            msg = f"The pipeline file {str(source)!r} is larger than {_MAX_PIPELINE_BYTES >> 20} MiB: not a pipeline."
            raise InputError(msg)
        text = source.read_bytes()
    except OSError as error:
        msg = f"The pipeline file {str(source)!r} cannot be read: {error.strerror or error}."
        raise InputError(msg) from None
    try:
        document = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        msg = f"{source}: not a TOML file: {error}"
        raise PipelineError(msg) from None
    except RecursionError:
        msg = f"{source}: not a pipeline file: its tables or arrays are nested too deeply to read."
        raise PipelineError(msg) from None
    return parse_pipeline(document, base=source.resolve().parent, name=str(source))


def parse_pipeline(document: dict[str, Any], *, base: Path = Path(), name: str = "pipeline") -> Pipeline:
    """Validate a parsed TOML document (see :func:`load_pipeline`).

    Examples
    --------
    >>> doc = {"dataset": {"name": "d", "inputs": "d.parquet", "epsilon_budget": 1.0},
    ...        "secret": {"env": "PPDM_SECRET"}, "output": {"manifest": "m.json"},
    ...        "release": [{"step": "dp_histogram", "columns": "x", "bounds": {"x": [0, 1]},
    ...                     "epsilon": 0, "output": "h.parquet"}]}
    >>> parse_pipeline(doc)
    Traceback (most recent call last):
    ...
    polars_ppdm.jobs.errors.PipelineError: pipeline: [[release]] 1 (dp_histogram), field 'epsilon': must be greater than 0. Got 0 instead.
    """
    problems = list(_literal_secrets(document))
    if problems:
        raise _error(name, problems)
    try:
        pipeline = Pipeline.model_validate(document)
    except ValidationError as error:
        raise _error(name, _messages(document, error.errors())) from None
    pipeline = pipeline.model_copy(update={"base": base})
    problems = list(_cross_checks(pipeline))
    if problems:
        raise _error(name, problems)
    return pipeline


def _error(name: str, problems: list[str]) -> PipelineError:
    if len(problems) == 1:
        return PipelineError(f"{name}: {problems[0]}")
    return PipelineError(f"{name}: {len(problems)} problems:\n" + "\n".join(f"  {p}" for p in problems))


def _literal_secrets(document: dict[str, Any]) -> Iterator[str]:
    """A secret written into the file (anywhere a step could take ``secret=``)."""
    section = document.get("secret")
    if isinstance(section, dict):
        for field in section:
            if field not in ("env", "file"):
                yield f"[secret], field {field!r}: {_LITERAL_SECRET}."
    elif "secret" in document:
        yield f"'secret': {_LITERAL_SECRET}."
    for where in ("dataset", "output"):
        if isinstance(document.get(where), dict) and "secret" in document[where]:
            yield f"[{where}], field 'secret': {_LITERAL_SECRET}."
    for section_name in ("perturb", "release"):
        steps = document.get(section_name)
        if isinstance(steps, list):
            for i, step in enumerate(steps, 1):
                if isinstance(step, dict) and "secret" in step:
                    yield f"{_step_where(section_name, i, step)}, field 'secret': {_LITERAL_SECRET}."


def _step_where(section: str, index: int, step: Any) -> str:
    kind = step.get("step") if isinstance(step, dict) else None
    return f"[[{section}]] {index}" + (f" ({kind})" if isinstance(kind, str) else "")


_ALLOWED: dict[str, type[BaseModel]] = {
    "dataset": Dataset,
    "secret": SecretSource,
    "output": Output,
    "rr_disguise": RRDisguise,
    "ecdf_resample": EcdfResample,
    "spiral": Spiral,
    "add_noise": AddNoise,
    "keep": Keep,
    "drop": Drop,
    "rr_support": RRSupport,
    "rr_apriori": RRApriori,
    "dp_histogram": DPHistogram,
    "dp_quadtree": DPQuadtree,
    "dp_kmeans": DPKMeans,
    "dp_group_by": DPGroupBy,
    "aggregates": Aggregate,
}


def _fields(model: type[BaseModel]) -> str:
    return ", ".join(name for name in model.model_fields if name != "step")


_KINDS = {
    "a valid dictionary": "a table (one value per column)",
    "a valid number": "a number",
    "a valid list": "a list",
    "a valid string": "a string",
    "a valid integer": "an integer",
    "a valid boolean": "true or false",
    "a valid tuple": "a [low, high] pair",
}


def _messages(document: dict[str, Any], errors: list[Any]) -> list[str]:
    """The errors in the project's words; the several errors of one union field (a
    number, or a table of one per column) become one line."""
    lines: dict[str, list[str]] = {}

    def field_of(error: Any) -> tuple[Any, ...]:
        loc = tuple(error["loc"])
        return loc[:4] if loc[:1] in (("perturb",), ("release",)) else loc[:2]

    fields = [field_of(e) for e in errors]
    for error in errors:
        if (
            isinstance(error.get("input"), dict)
            and error["type"].endswith("_type")
            and fields.count(field_of(error)) > 1
        ):
            continue  # a table was given: the "must be a number" branch says nothing
        line = _message(document, error)
        head, _, rest = line.partition(": must be ")
        if rest:
            lines.setdefault(head, []).append(rest)
        else:
            lines.setdefault(line, [])
    out = []
    for head, rests in lines.items():
        if not rests:
            out.append(head)
            continue
        kinds, got = [], ""
        for rest in rests:
            kind, _, tail = rest.partition(". Got ")
            kind = kind.removesuffix(".")
            kinds.append(_KINDS.get(kind, kind))
            got = got or (f" Got {tail}" if tail else "")
        unique = list(dict.fromkeys(kinds))
        out.append(f"{head}: must be {' or '.join(unique)}.{got}")
    return out


def _message(document: dict[str, Any], error: Any) -> str:
    """One pydantic error in the project's words: where, what is allowed, what was found."""
    loc = list(error["loc"])
    kind = error["type"]
    where = "the file"
    model: type[BaseModel] | None = None
    if loc and loc[0] in ("perturb", "release") and len(loc) >= 2 and isinstance(loc[1], int):
        section, index = loc[0], loc[1]
        step = document[section][index]
        where = _step_where(section, index + 1, step)
        loc = loc[2:]
        if loc and isinstance(loc[0], str) and loc[0] in _ALLOWED:
            model = _ALLOWED[loc[0]]
            loc = loc[1:]
    elif loc[:2] == ["dataset", "csv"]:
        where, model, loc = "[dataset.csv]", CsvOptions, loc[2:]
    elif loc and loc[0] in ("dataset", "secret", "output"):
        where = f"[{loc[0]}]"
        model = _ALLOWED[str(loc[0])]
        loc = loc[1:]
    # The innermost field named (a union's member types are dropped from the path).
    names = [str(part) for part in loc if isinstance(part, str) and not _is_type_name(part)]
    field = names[0] if names else None
    where_field = f"{where}, field {field!r}" if field else where
    item = loc[1] if len(loc) > 1 and field == loc[0] and isinstance(loc[1], int) else None
    if item is not None:  # an item of a list of tables (an aggregate, a public group)
        where_field += f" item {item + 1}" + (f", field {names[1]!r}" if len(names) > 1 else "")
    elif len(names) > 1:
        where_field += f" for column {names[1]!r}"
    # A [secret] field's text may be the secret itself: only the type of a value is said.
    secret_value = error["loc"][:1] == ("secret",)
    given = error.get("input")
    got = (
        f" Got {_shown_value(given)} instead."
        if not secret_value
        else ""
        if isinstance(given, str | dict) or given is None
        else f" Got {_TYPE_WORDS.get(type(given).__name__, 'a ' + type(given).__name__)} instead."
    )
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden" and item is not None and field in _ALLOWED:
        return f"{where}, field {field!r} item {item + 1}: unknown parameter {names[-1]!r}; it takes: {_fields(_ALLOWED[field])}."
    if kind == "extra_forbidden":
        allowed = f"; {where.split('(')[-1].rstrip(')')} takes: {_fields(model)}" if model else ""
        known = [name for name in model.model_fields if name != "step"] if model else []
        if model is None and where == "the file":
            allowed = "; a pipeline file has [dataset], [secret], [output], [[perturb]] and [[release]]"
            known = ["dataset", "secret", "output", "perturb", "release"]
        close = difflib.get_close_matches(str(field), known, n=1)
        mean = f" (did you mean {close[0]!r}?)" if close else ""
        return f"{where}: unknown parameter {field!r}{mean}{allowed}."
    if kind == "union_tag_invalid":
        section = error["loc"][0]
        steps = PERTURB_STEPS if section == "perturb" else RELEASE_STEPS
        return f"{where}: unknown step {ctx.get('tag')!r}; [[{section}]] steps are: {', '.join(steps)}."
    if kind == "union_tag_not_found":
        section = error["loc"][0]
        steps = PERTURB_STEPS if section == "perturb" else RELEASE_STEPS
        return f"{where}: has no 'step'; give step = one of: {', '.join(steps)}."
    if kind == "missing":
        return f"{where_field}: is required."
    if kind == "literal_error":
        return f"{where_field}: must be one of {ctx.get('expected')}.{got}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = next(iter(ctx.values()), "?")
        bound = f"{bound:g}" if isinstance(bound, float) else bound
        word = {
            "greater_than": "greater than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }[kind]
        return f"{where_field}: must be {word} {bound}.{got}"
    text = str(error["msg"])
    text = text.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    text = text.replace("Input should be", "must be").replace("input should be", "must be")
    if kind == "value_error":
        return f"{where_field}: {text}."
    return f"{where_field}: {text[0].lower() + text[1:]}.{got}"


_TYPE_WORDS = {"int": "an integer", "float": "a number", "bool": "true or false", "list": "a list"}


def _shown_value(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters: a message never echoes a huge value."""
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[:limit]}... ({len(shown):,} characters)"


def _is_type_name(part: str) -> bool:
    # pydantic puts a union member in the path: 'float', 'dict[str,float]', 'list[...]',
    # 'function-after[...]', 'constrained-float' and such.
    return bool(re.fullmatch(r"[a-z_-]+(\[.*\])?", part)) and (
        "[" in part
        or part in ("float", "int", "str", "bool", "list", "dict", "tuple")
        or part.startswith("constrained-")
    )


def _cross_checks(pipeline: Pipeline) -> Iterator[str]:
    """What one field cannot say alone: columns named twice, budget, paths."""
    named: dict[str, str] = {}
    for index, step in enumerate(pipeline.perturb, 1):
        label = step_label("perturb", index, step)
        for column in step.columns:
            if column in named:
                yield (
                    f"{label}, field 'columns': the column {column!r} is already named by "
                    f"{named[column]}; each column gets exactly one perturb step (a perturbation, keep or drop)."
                )
            else:
                named[column] = label
    key = pipeline.dataset.key
    for index, step in enumerate(pipeline.perturb, 1):
        if key is not None and key in step.columns and not isinstance(step, Keep | Drop):
            # Attack review 75: the steps run in file order, each keyed by the key column as
            # the steps before it left it; an ecdf_resample of the ids re-keyed every later
            # step each night (one newcomer redraws them all), and 20 nights' noise averaged.
            yield (
                f"{step_label('perturb', index, step)}, field 'columns': {key!r} is the dataset's key ([dataset] "
                "key), which keys every row-wise step's draws and counts the units; perturbed, it would re-key the "
                "steps after it with new draws each time it changes. Keep or drop it."
            )
    for index, step in enumerate(pipeline.perturb, 1):
        if not isinstance(step, RRDisguise):
            continue
        label = step_label("perturb", index, step)
        if step.no_finite_epsilon and not step.accept_no_finite_epsilon:
            yield (
                f"{label}, field 'mode': whole_record over {len(step.columns)} columns has {NO_FINITE_EPSILON}. "
                "It cannot be charged to the budget as any epsilon, so a pipeline refuses it unless the step "
                'says so explicitly: accept_no_finite_epsilon = true (or use mode = "per_attribute", '
                "epsilon-LDP per column)."
            )
        if step.max_values_per_unit is not None and pipeline.dataset.key is None:
            yield (
                f"{label}, field 'max_values_per_unit': the dataset has no privacy unit ([dataset] key), so "
                "every row is its own unit with one value per column; give [dataset] key or leave it out."
            )
    disguised = {c: s for s in pipeline.perturb if isinstance(s, RRDisguise) for c in s.columns}
    for index, release in enumerate(pipeline.release, 1):
        if isinstance(release, RRSupport | RRApriori):
            label = step_label("release", index, release)
            plain = [c for c in release.columns if c not in disguised]
            if plain:
                yield (
                    f"{label}, field 'columns': {plain} are not disguised by an rr_disguise step; "
                    f"{release.step} estimates from randomized-response columns only."
                )
                continue
            modes = {disguised[c].mode for c in release.columns}
            kinds = {"p" if disguised[c].p is not None else "epsilon" for c in release.columns}
            if len(modes) > 1 or len(kinds) > 1:
                yield (
                    f"{label}, field 'columns': its columns were disguised with different "
                    f"{'modes' if len(modes) > 1 else 'kinds of parameter (p and epsilon)'}; give their rr_disguise "
                    "steps one mode and one of p or epsilon."
                )
            if isinstance(release, RRSupport) and release.itemsets:
                stray = sorted({c for s in release.itemsets for c in s} - set(release.columns))
                if stray:
                    yield f"{label}, field 'itemsets': {stray} are not in 'columns'."
    dataset = pipeline.dataset
    if not dataset.zcdp:
        for section, index, step in pipeline.steps():
            if step_rho(step) is not None:
                what = (
                    "'rho': a continual release"
                    if isinstance(step, DPContinualCounts)
                    else "'mechanism': \"gaussian\""
                )
                yield (
                    f"{step_label(section, index, step)}, field {what} costs a rho (zCDP), "
                    "which a pure epsilon budget does not count; give [dataset] rho_budget (or epsilon_budget with "
                    'delta_budget and accounting = "zcdp"), or use mechanism = "laplace" with epsilon.'
                )
    budget, field = dataset.budget, dataset.budget_field
    # zCDP amounts say they are rho; pure ones are epsilons, as the fields say.
    unit = "rho " if dataset.zcdp else ""
    spends = pipeline.epsilons()
    for label, eps in spends:
        if eps > budget * (1 + 1e-12):
            yield (
                f"{label}, field '{'rho' if dataset.zcdp else 'epsilon'}': spends {unit}{eps:g}, more than the "
                f"whole budget [dataset] {field} = {getattr(dataset, field):g}"
                + (f" (rho {budget:g})" if field != "rho_budget" and dataset.zcdp else "")
                + "; it could never run."
            )
    total = math.fsum(eps for _, eps in spends)
    if total > budget * (1 + 1e-12) and all(eps <= budget for _, eps in spends):
        yield (
            f"[dataset], field '{field}': one run spends {unit}{total:g} ("
            + " + ".join(f"{eps:g}" for _, eps in spends)
            + f") but the budget is {unit}{budget:g}; it could never run."
        )
    if dataset.zcdp:
        for label, _, delta in pipeline.spends():
            if delta:
                yield (
                    f"{label}, field 'delta': partition selection spends a delta, which a zCDP budget does not "
                    "compose; give the step public_groups."
                )
    # A zCDP dataset's delta_budget is the delta of its epsilon, not a budget of deltas.
    delta_budget = None if dataset.zcdp else dataset.delta_budget
    deltas = [(label, delta) for label, _, delta in pipeline.spends() if delta]
    total_delta = math.fsum(delta for _, delta in deltas)
    if delta_budget is not None and total_delta > delta_budget * (1 + 1e-12):
        yield (
            f"[dataset], field 'delta_budget': one run spends delta {total_delta:g} ("
            + ", ".join(f"{label}: {delta:g}" for label, delta in deltas)
            + f") but the delta budget is {delta_budget:g}; it could never run."
            + (" Give the dataset a delta_budget, or the steps public_groups." if delta_budget == 0 else "")
        )
    yield from _path_checks(pipeline)


def _path_checks(pipeline: Pipeline) -> Iterator[str]:
    """The written paths against each other and the inputs (:mod:`polars_ppdm.jobs.paths`,
    which ``ppdm plan`` and ``ppdm run`` call again with the pipeline file, the ledger and
    what is on disk)."""
    from polars_ppdm.jobs.paths import path_problems

    yield from path_problems(pipeline)
