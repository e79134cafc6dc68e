"""MkDocs build hook: the pipeline steps' tables, generated from the pipeline file's schema.

docs/pipeline-steps.md holds the marker ``<!-- pipeline-steps -->``; the build replaces it
with one table per step (its fields, their types and defaults, read from the pydantic
models of :mod:`polars_ppdm.jobs.config`) and what the step spends, so the page cannot
drift from the schema ``ppdm run`` validates against.  ``tests/test_docs.py`` checks the
tables against the models too.
"""

from __future__ import annotations

import types
import typing
from typing import Any

MARKER = "<!-- pipeline-steps -->"
# The line after the marker, for whoever reads the page in the repository (where the
# tables are not): the build replaces it with the tables too.
UNBUILT = (
    "> In the repository this page has no tables yet: they are written when the site is built "
    "(`make docs`, then `site/pipeline-steps/index.html`)."
)

# What each step charges the dataset's budget (pure accounting; a zCDP dataset is charged
# rho, or epsilon^2 / 2 for a pure step): polars_ppdm.jobs.config.step_cost says the same in code.
SPENDS = {
    "rr_disguise": "`epsilon` (or the epsilon of `p`) per column, summed over its columns, times "
    "`max_values_per_unit` (default 1); whole-record over two or more columns has no finite "
    "epsilon: refused unless `accept_no_finite_epsilon = true`, then charged nothing",
    "ecdf_resample": "nothing: not differentially private (`ppdm plan` says so)",
    "spiral": "nothing: not differentially private; the key file at `path` undoes it",
    "add_noise": "nothing: not differentially private (`ppdm plan` says so)",
    "keep": "nothing: the columns are published as they are (quasi-identifiers in the report's verdict)",
    "drop": "nothing: the columns are not published",
    "rr_support": "nothing new: post-processing of the disguised columns",
    "rr_apriori": "nothing new: post-processing of the disguised columns",
    "dp_histogram": '`epsilon` (Laplace), or `rho` with `mechanism = "gaussian"` (a zCDP dataset)',
    "dp_quadtree": "`epsilon`",
    "dp_kmeans": "`epsilon`",
    "dp_group_by": "`epsilon` (split over the aggregates), plus `delta` with partition selection; "
    'or `rho` with `mechanism = "gaussian"` (public groups only)',
    "dp_continual_counts": "`rho`, once for the whole `horizon` (the run that starts the tree); "
    "later runs are charged nothing for it",
}


def _constraints(metadata: list[Any]) -> list[str]:
    said = []
    # A pydantic Field(...) inside Annotated carries its constraints in its own metadata.
    flat = [inner for item in metadata for inner in (getattr(item, "metadata", None) or [item])]
    for item in flat:
        for name, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(item, name, None)
            if value is not None:
                said.append(f"{sign} {value:,}" if isinstance(value, int) else f"{sign} {value:g}")
    low = next((item.min_length for item in flat if getattr(item, "min_length", None)), None)
    high = next((item.max_length for item in flat if getattr(item, "max_length", None)), None)
    pattern = next((item.pattern for item in flat if getattr(item, "pattern", None)), None)
    if high == 1 and pattern is not None:  # a CSV option's character
        said.append("one ASCII character" + (", or empty" if not low else ""))
    elif low is not None and low == high:
        said.append(f"{low} items")
    elif low:
        said.append(f"at least {low}")
    return said


def type_text(annotation: Any) -> str:
    """A pipeline field's type, in the words of a TOML file."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        base, *metadata = args
        said = _constraints(metadata)
        if base is str and said == ["at least 1"]:
            return "non-empty string"
        return type_text(base) + (f" ({', '.join(said)})" if said else "")
    if origin is typing.Literal:
        return " \\| ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_text(a) for a in args if a is not type(None))
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        return f"table of {type_text(args[1])} per {type_text(args[0])}"
    names = {str: "string", int: "integer", float: "number", bool: "boolean", Any: "any"}
    if annotation in names:
        return names[annotation]
    if isinstance(annotation, type) and annotation.__name__ == "CsvOptions":
        return "table (`[dataset.csv]`, below)"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f"`'{value}'`" if '"' in value else f'`"{value}"`'
    if value == {}:
        return "none"
    if isinstance(value, list):
        return "`[" + ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in value) + "]`"
    return f"`{value}`"


def step_models() -> dict[str, Any]:
    """Every pipeline step's model by its ``step`` name, perturb steps first."""
    from polars_ppdm.jobs import config

    models = {}
    for union in (config.PerturbStep, config.ReleaseStep):
        members = typing.get_args(typing.get_args(union)[0])
        for model in members:
            (name,) = typing.get_args(model.model_fields["step"].annotation)
            models[name] = model
    return models


def _table(model: Any, only: tuple[str, ...] = ()) -> list[str]:
    rows = ["| field | type | default |", "|---|---|---|"]
    for field_name, field in model.model_fields.items():
        if field_name == "step" or field.exclude or (only and field_name not in only):
            continue
        said = _constraints(field.metadata)
        kind = type_text(field.annotation)
        if said == ["at least 1"] and kind == "string":
            kind = "non-empty string"
        elif said:
            kind += f" ({', '.join(said)})"
        rows.append(f"| `{field_name}` | {kind} | {_default(field)} |")
    return [*rows, ""]


def _summary(model: Any) -> str:
    doc = " ".join((model.__doc__ or "").split("\n\n")[0].split())
    return doc.replace("``", "`").replace(":func:", "").replace(":class:", "").replace(":data:", "")


def steps_markdown() -> str:
    """The tables of the page: every step, then the file's other tables."""
    from polars_ppdm.jobs import config

    parts = ["## Steps\n"]
    for name, model in step_models().items():
        section = "perturb" if name in config.PERTURB_STEPS else "release"
        parts.append(f"### `{name}` (`[[{section}]]`)\n")
        if _summary(model):
            parts.append(_summary(model) + "\n")
        parts.append(f"**Spends:** {SPENDS[name]}.\n")
        parts.extend(_table(model))
    parts.append("## The file's other tables\n")
    for title, model in (
        ("one of `dp_group_by`'s `aggregates`", config.Aggregate),
        ("`[dataset]`", config.Dataset),
        ("`[dataset.csv]` (CSV inputs: Polars' reader options)", config.CsvOptions),
        ("`[secret]` (exactly one of the two)", config.SecretSource),
        ("`[output]`", config.Output),
    ):
        parts.append(f"### {title}\n")
        parts.extend(_table(model))
    parts.append("### the top level\n")
    parts.extend(_table(config.Pipeline, only=("engine",)))
    return "\n".join(parts)


def on_page_markdown(markdown: str, **_: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(f"{MARKER}\n{UNBUILT}", MARKER).replace(MARKER, steps_markdown())
    return markdown
