"""A privacy and utility report of a published table: one self-contained HTML page.

A data owner who publishes a perturbed table answers two questions before signing it
off: how much did the data change (utility), and what can an attacker still learn
(risk)?  :func:`report` answers both per column, per aggregate release and for the
privacy budget, in two versions, as sdcMicro's reports do:

* ``"internal"`` -- everything, including figures and plots of the original data;
* ``"public"`` -- computed from the released table, the releases and the steps'
  parameters only: the original is never read, so the page can be published beside the
  data.

The steps are described in the pipeline file's vocabulary (``[[perturb]]`` and
``[[release]]`` entries of ``ppdm run``), as dicts or as the validated models; ``ppdm
run`` writes both versions after every run, and ``ppdm report`` writes them for a
pipeline that has run.

References
----------
Templ, Kowarik, Meindl, "Statistical disclosure control for micro-data using the R
package sdcMicro", Journal of Statistical Software 67(4), 2015 (the two reports).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import polars as pl

from polars_ppdm._validation import check_choice, check_int
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.reporting._table import Table
from polars_ppdm.reporting.model import VERSIONS, Budget, ColumnSection, ReleaseSection, Report, Version

__all__ = ["VERSIONS", "Budget", "Report", "Version", "build_report", "report"]

_FUNC = "report"


def _refuse(parameter: str, allowed: str, got: Any) -> NoReturn:
    msg = f"The {parameter!r} parameter of {_FUNC} must be {allowed}. Got {got!r} instead."
    raise InvalidParameterError(msg)


def _steps(steps: Any) -> tuple[list[Any], list[Any]]:
    """The ``[[perturb]]`` and ``[[release]]`` steps, validated as in a pipeline file."""
    from pydantic import TypeAdapter, ValidationError

    from polars_ppdm.steps import PERTURB_STEPS, RELEASE_STEPS, PerturbStep, ReleaseStep

    if isinstance(steps, str | bytes | Mapping) or not isinstance(steps, Sequence):
        _refuse("steps", "a list of steps (dicts in the pipeline file's vocabulary)", steps)
    perturb: list[Any] = []
    release: list[Any] = []
    adapters: dict[str, TypeAdapter[Any]] = {
        "perturb": TypeAdapter(PerturbStep),
        "release": TypeAdapter(ReleaseStep),
    }
    for index, step in enumerate(steps):
        name = step.get("step") if isinstance(step, Mapping) else getattr(step, "step", None)
        if name in PERTURB_STEPS:
            section, into = "perturb", perturb
        elif name in RELEASE_STEPS:
            section, into = "release", release
        else:
            allowed = ", ".join(PERTURB_STEPS + RELEASE_STEPS)
            msg = f"Step {index} of the 'steps' parameter of {_FUNC} has no known 'step' (one of {allowed}). Got {name!r}."
            raise InvalidParameterError(msg)
        if not isinstance(step, Mapping):
            into.append(step)
            continue
        try:
            into.append(adapters[section].validate_python(_as_toml(step)))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'][1:]) or 'step'}: {err['msg']}" for err in exc.errors()
            )
            msg = f"Step {index} ({name}) of the 'steps' parameter of {_FUNC} is invalid: {problems}."
            raise InvalidParameterError(msg) from None
    return perturb, release


def _as_toml(value: Any) -> Any:
    """A step as TOML would give it: tuples (``bounds=(0, 1)`` in Python) become lists."""
    if isinstance(value, Mapping):
        return {k: _as_toml(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_as_toml(v) for v in value]
    return value


def _frame(frame: Any, parameter: str) -> pl.DataFrame:
    if isinstance(frame, pl.LazyFrame):
        return frame.collect()
    if isinstance(frame, pl.DataFrame):
        return frame
    _refuse(parameter, "a polars DataFrame or LazyFrame", type(frame).__name__)


def _table(frame: Any, parameter: str) -> Table:
    """A table given to the report: a :class:`Table` as it is (files read a column at a
    time, as ``ppdm report`` gives them), any other frame in memory (a LazyFrame collected)."""
    return frame if isinstance(frame, Table) else Table(_frame(frame, parameter))


def build_report(
    released: pl.DataFrame | pl.LazyFrame | Table,
    steps: Sequence[Mapping[str, Any] | Any],
    *,
    original: pl.DataFrame | pl.LazyFrame | Table | None = None,
    version: Version = "internal",
    releases: Mapping[str, pl.DataFrame] | None = None,
    budget: Budget | None = None,
    title: str = "Privacy and utility report",
    sample_rows: int = 100_000,
) -> Report:
    """The report's content (:class:`~polars_ppdm.reporting.model.Report`), not rendered.

    Parameters as :func:`report`.  The public version never reads ``original``.
    """
    from polars_ppdm.reporting.columns import column_sections
    from polars_ppdm.reporting.releases import release_sections
    from polars_ppdm.reporting.uniqueness import uniqueness

    check_choice("version", version, VERSIONS, _FUNC)
    if not isinstance(title, str) or not title.strip():
        _refuse("title", "a non-empty string", title)
    sample_rows = check_int("sample_rows", sample_rows, _FUNC, low=1000)
    if budget is not None and not isinstance(budget, Budget):
        _refuse("budget", "a polars_ppdm.reporting.Budget or None", type(budget).__name__)
    perturb, release = _steps(steps)
    table = _table(released, "released")
    source: Table | None = None
    if version == "internal":
        if original is None:
            msg = (
                f"The internal version of {_FUNC} compares with the original table: pass original= "
                "(or version='public', which never reads it)."
            )
            raise InvalidParameterError(msg)
        source = _table(original, "original")
    if releases is not None and not isinstance(releases, Mapping):
        _refuse("releases", "a mapping of each release step's output to its frame", type(releases).__name__)
    found = {name: _frame(frame, f"releases[{name!r}]") for name, frame in (releases or {}).items()}
    columns: tuple[ColumnSection, ...] = column_sections(perturb, table, source, sample_rows=sample_rows)
    aggregates: tuple[ReleaseSection, ...] = release_sections(release, perturb, found)
    described = {c for step in perturb for c in step.columns}
    undescribed = [c for c in table.columns if c not in described]
    # Published unchanged: kept, or named by no step (a pipeline publishes every column
    # it does not drop).  A dropped column still in the table is published too.
    perturbed = {c for step in perturb if step.step not in {"keep", "drop"} for c in step.columns}
    unchanged = [c for c in table.columns if c not in perturbed]
    notes = (
        (
            f"Published columns no step describes (their protection is not reported): {', '.join(undescribed)}.",
        )
        if perturb and undescribed
        else ()
    )
    singled_out = None
    if table.width:  # of the released table alone: remembered for the run's other version
        key = ("uniqueness", tuple(unchanged))
        if key not in table.memo:
            table.memo[key] = uniqueness(table, unchanged)
        singled_out = table.memo[key]
    return Report(
        title=title,
        version=version,
        created=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        rows=table.height,
        columns=columns,
        releases=aggregates,
        budget=budget,
        notes=notes,
        uniqueness=singled_out,
    )


def report(
    released: pl.DataFrame | pl.LazyFrame | Table,
    steps: Sequence[Mapping[str, Any] | Any],
    *,
    original: pl.DataFrame | pl.LazyFrame | Table | None = None,
    version: Version = "internal",
    releases: Mapping[str, pl.DataFrame] | None = None,
    budget: Budget | None = None,
    output: str | Path | None = None,
    title: str = "Privacy and utility report",
    sample_rows: int = 100_000,
) -> str:
    """A privacy and utility report of a published table, as one self-contained HTML page.

    Per column: the method and its parameters, the original and released distributions
    (internal version only for the original), the utility figure that fits the method
    (corrected shares with error bars for randomized response, Kolmogorov-Smirnov distance
    and rank correlation for ECDF resampling, the reconstructed distribution for additive
    noise, distance preservation for the spiral), the attack that exists for it (the local
    DP epsilon of randomized response, rank linkage, PCA noise stripping, the known
    input/output attack on the spiral) and a one-line verdict.  Per release (titled by
    what it releases): epsilon, the noise scale and the 95% interval of a cell.  The
    budget before and after the run (an identical re-run says it spent nothing).  At the
    top, a verdict puts the risks side by side: the released rows unique on the columns
    published unchanged taken together (sample uniques) and the smallest group
    (k-anonymity's k), beside each perturbed column's headline risk and the budget.

    Parameters
    ----------
    released
        The published table.
    steps
        What was done, in the pipeline file's vocabulary: the ``[[perturb]]`` steps
        (``{"step": "rr_disguise", "columns": ["smoker"], "epsilon": 1.0}``, ...) and the
        ``[[release]]`` steps (``{"step": "dp_histogram", "columns": ["age"], "output":
        "age.csv", ...}``), in any order.
    original
        The table before perturbation, rows in the same order as ``released`` (needed by
        the internal version; never read by the public one).  A LazyFrame is collected
        once; ``ppdm report`` gives the run's input files as a ``Table``
        (:mod:`polars_ppdm.reporting._table`), read a column at a time.
    version
        ``"internal"`` (everything) or ``"public"`` (nothing computed from the original:
        safe to publish beside the data).
    releases
        The frame of each release step, by its ``output``.
    budget
        The privacy budget around this run (:class:`Budget`), or None.
    output
        Where to write the page (its folder must exist; written atomically), or None.
    title
        The page's title.
    sample_rows
        Figures that cost more than linear time (linkage, pairwise distances, attacks)
        use a systematic sample of at most this many rows; the page says so.

    Returns
    -------
    str
        The HTML page.

    Raises
    ------
    InvalidParameterError
        Unknown or invalid steps, a column a step names that the tables lack, tables of
        different heights where a figure pairs their rows, a release missing from
        ``releases``, an ``output`` in a folder that does not exist.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_ppdm as ppdm
    >>> people = pl.DataFrame({"id": range(1000), "smoker": [i % 4 == 0 for i in range(1000)]})
    >>> released = ppdm.rr_disguise(people, "smoker", epsilon=1.0, secret="00" * 16, key="id")
    >>> page = ppdm.report(released, [{"step": "rr_disguise", "columns": ["smoker"], "epsilon": 1.0}],
    ...                    original=people)
    >>> page.startswith("<!DOCTYPE html>") and 'id="column-smoker"' in page
    True
    """
    from polars_ppdm.reporting.html import render

    target = None
    if output is not None:
        if not isinstance(output, str | Path) or not str(output):
            _refuse("output", "a file path or None", output)
        target = Path(output)
        if target.is_dir():
            msg = f"The 'output' parameter of {_FUNC} is a folder: {str(target)!r}. Give the path of the page's file."
            raise InvalidParameterError(msg)
        if not target.parent.is_dir():
            msg = f"The 'output' parameter of {_FUNC} is in a folder that does not exist: {str(target.parent)!r}."
            raise InvalidParameterError(msg)
    content = build_report(
        released,
        steps,
        original=original,
        version=version,
        releases=releases,
        budget=budget,
        title=title,
        sample_rows=sample_rows,
    )
    page = render(content)
    if target is not None:
        from polars_ppdm._durable import write_bytes_atomic

        write_bytes_atomic(target, page.encode(), private=version == "internal")
    return page
