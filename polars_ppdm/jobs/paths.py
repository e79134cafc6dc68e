"""Every path a run writes, and the paths it must never write, in one list.

A run writes its published table, its releases, its manifest, the two report pages
beside the manifest, the spiral key files and the ledger (with DuckDB's ``.wal`` beside
it).  It must never write its inputs, its secret file or the pipeline file itself.
:func:`path_problems` checks the written paths against each other and against those, by
their real paths (a symlink or a ``..`` names the file it leads to), and -- before a run
reserves anything -- that every written path which exists is a regular file (or, for a
table, a folder of Spark part files): a FIFO, a device or a socket is never replaced by
a file (as root, ``manifest = "/dev/null"`` would otherwise replace the system's
``/dev/null``).
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from polars_ppdm._durable import file_kind
from polars_ppdm.jobs.config import Pipeline, Spiral, step_label
from polars_ppdm.jobs.errors import PipelineError
from polars_ppdm.reporting.model import VERSIONS, Version

__all__ = ["Written", "check_paths", "path_problems", "report_paths", "written_paths"]

Kind = Literal["table", "release", "manifest", "report", "key", "ledger"]


@dataclass(frozen=True)
class Written:
    """A path a run writes: where the pipeline names it, the path, and what it is."""

    where: str
    path: Path
    kind: Kind


def report_paths(pipeline: Pipeline) -> dict[Version, Path]:
    """Where the two versions of the report go: beside the manifest."""
    manifest = pipeline.resolve(pipeline.output.manifest)
    prefix = "" if manifest.stem == "manifest" else f"{manifest.stem}."
    return {version: manifest.with_name(f"{prefix}report.{version}.html") for version in VERSIONS}


def written_paths(pipeline: Pipeline, ledger: Path | None = None) -> list[Written]:
    """Every path a run of ``pipeline`` writes; ``ledger`` overrides ``[dataset] ledger``."""
    manifest = "[output], field 'manifest'"
    out = [Written(manifest, pipeline.resolve(pipeline.output.manifest), "manifest")]
    out += [
        Written(f"the {version} report page (beside {manifest})", path, "report")
        for version, path in report_paths(pipeline).items()
    ]
    if pipeline.output.table is not None:
        out.append(Written("[output], field 'table'", pipeline.resolve(pipeline.output.table), "table"))
    for section, index, step in pipeline.steps():
        if section == "release":
            out.append(
                Written(
                    f"{step_label(section, index, step)}, field 'output'",
                    pipeline.resolve(step.output),
                    "release",
                )
            )
        elif isinstance(step, Spiral):
            out.append(
                Written(
                    f"{step_label(section, index, step)}, field 'path'", pipeline.resolve(step.path), "key"
                )
            )
    book = ledger if ledger is not None else pipeline.ledger_path
    if book is not None:
        where = "--ledger" if ledger is not None else "[dataset], field 'ledger'"
        out.append(Written(where, book, "ledger"))
        out.append(Written(f"the ledger's write-ahead log (beside {where})", Path(f"{book}.wal"), "ledger"))
    return out


def _protected(pipeline: Pipeline, pipeline_file: Path | None) -> Iterator[tuple[str, Path, bool]]:
    """(what, path, is a glob) of every path a run must never write."""
    for pattern in pipeline.dataset.inputs:
        resolved = pipeline.resolve(pattern)
        yield f"an input ([dataset] inputs {pattern!r})", resolved, glob.has_magic(str(resolved))
    if pipeline.secret.file is not None:
        yield "the secret file ([secret] file)", pipeline.resolve(pipeline.secret.file), False
    if pipeline_file is not None:
        yield "the pipeline file", Path(pipeline_file), False


def _matches(real: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatch(
        real, os.path.realpath(os.path.dirname(pattern)) + os.sep + os.path.basename(pattern)
    ) or fnmatch.fnmatch(real, os.path.abspath(pattern))


def _on_disk_problem(item: Written) -> str | None:
    """Why the existing file at ``item.path`` must not be replaced, or None."""
    try:
        mode = os.stat(item.path).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"{item.where}: {str(item.path)!r} cannot be looked at ({error.strerror or type(error).__name__})."
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode) and item.kind == "table":
        from polars_ppdm.jobs.atomic import check_replaceable_folder

        try:
            check_replaceable_folder(item.path)
        except IsADirectoryError as error:
            return f"{item.where}: {error}"
        return None
    return (
        f"{item.where}: {str(item.path)!r} is {file_kind(mode)}, not a regular file; a run only ever "
        "writes regular files and never replaces anything else. Choose another path."
    )


def path_problems(
    pipeline: Pipeline,
    *,
    pipeline_file: Path | None = None,
    ledger: Path | None = None,
    on_disk: bool = False,
) -> list[str]:
    """What is wrong with the paths a run of ``pipeline`` writes (empty: nothing).

    Each written path is its own, and none is an input, the secret file or the pipeline
    file; tables and releases end in ``.parquet`` or ``.csv``.  ``on_disk`` also checks
    what exists at each written path now (a regular file, or a table folder a run wrote).
    """
    problems: list[str] = []
    items = written_paths(pipeline, ledger)
    protected = list(_protected(pipeline, pipeline_file))
    seen: dict[str, str] = {}
    for item in items:
        real = os.path.realpath(item.path)
        for what, path, is_glob in protected:
            if real == os.path.realpath(path) or (is_glob and _matches(real, str(path))):
                problems.append(
                    f"{item.where}: {str(item.path)!r} is {what}; a run never writes over it. Choose another path."
                )
        if real in seen:
            problems.append(
                f"{item.where}: {str(item.path)!r} is also written as {seen[real]}; each output needs its own path."
            )
        else:
            seen[real] = item.where
        if item.kind in ("table", "release") and item.path.suffix.lower() not in (".parquet", ".csv"):
            problems.append(
                f"{item.where}: {str(item.path)!r} must end in .parquet or .csv (the format written)."
            )
        if on_disk and (problem := _on_disk_problem(item)) is not None:
            problems.append(problem)
    return problems


def check_paths(pipeline: Pipeline, *, pipeline_file: Path, ledger: Path) -> None:
    """Raise :class:`PipelineError` with every problem of :func:`path_problems` (on disk
    too): called by ``ppdm plan`` and by ``ppdm run`` before it reserves anything."""
    problems = path_problems(pipeline, pipeline_file=pipeline_file, ledger=ledger, on_disk=True)
    if len(problems) == 1:
        raise PipelineError(problems[0])
    if problems:
        raise PipelineError(f"{len(problems)} problems:\n" + "\n".join(f"  {p}" for p in problems))
