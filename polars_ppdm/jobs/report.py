"""The report of a pipeline's last run: ``ppdm report``, and ``ppdm run`` after every run.

Everything comes from what the run left behind: the manifest (which run, which inputs
and their fingerprints, what each step did), the published table and the releases as
written, the ledger (the budget before and after the run) and -- for the internal
version only -- the inputs, checked against the fingerprints in the manifest so that the
report never compares the release with a different original.  Both versions are
written beside the manifest: ``report.internal.html`` and ``report.public.html``
(prefixed with the manifest's name when it is not ``manifest``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from polars_ppdm._durable import file_identity, table_files
from polars_ppdm.jobs.config import Pipeline
from polars_ppdm.jobs.errors import InputError, PipelineError
from polars_ppdm.jobs.paths import report_paths
from polars_ppdm.reporting._table import Table
from polars_ppdm.reporting.model import VERSIONS, Budget, Version, YearAhead

__all__ = ["report_paths", "write_pipeline_report"]


def _manifest(pipeline: Pipeline) -> dict[str, Any]:
    path = pipeline.resolve(pipeline.output.manifest)
    try:
        found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        msg = (
            f"{str(path)!r}: no manifest; the report describes a run, so run the pipeline first (`ppdm run`)."
        )
        raise InputError(msg) from None
    except (OSError, ValueError) as error:
        msg = f"{str(path)!r}: the manifest cannot be read ({error})."
        raise InputError(msg) from None
    if found.get("status") != "succeeded":
        msg = f"{str(path)!r}: the last run did not succeed (status {found.get('status')!r}); nothing to report."
        raise InputError(msg)
    return found


def _unreadable(what: str, path: Path, error: BaseException) -> InputError:
    """The refusal of a file the run wrote: missing since, or unreadable (Polars' reason)."""
    if isinstance(error, FileNotFoundError):
        return InputError(
            f"{what} {str(path)!r} is missing: it was written by the run, and moved or deleted since."
        )
    return InputError(f"{what} {str(path)!r} cannot be read: {error}")


def _read(path: Path, what: str, types: dict[str, Any] | None = None) -> pl.DataFrame:
    """A published table or a release as the run wrote it (a Spark table: a folder of parts).
    A CSV file's columns of ``types`` (``[dataset.csv] types``) are read as declared: the
    run read its input so (a zip code ``00037`` as text), and inferring again would not."""
    try:
        if path.suffix.lower() == ".csv":  # a file, or Spark's folder of CSV part files
            files = table_files(path)
            header = pl.read_csv(files[0], n_rows=0).columns if files else []
            declared = {name: getattr(pl, kind) for name, kind in (types or {}).items() if name in header}
            return pl.scan_csv(files, schema_overrides=declared or None, raise_if_empty=False).collect()
        if path.is_dir():
            return pl.read_parquet(path / "*.parquet")
        if path.suffix.lower() in {".arrow", ".ipc", ".feather"}:
            return pl.read_ipc(path)
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as error:
        raise _unreadable(what, path, error) from None


def _published(path: Path, types: dict[str, Any] | None = None) -> tuple[Table, dict[Path, tuple[int, ...]]]:
    """The published table, and the identities of the files it is read from: Parquet and
    Arrow files (a Spark folder's parts) a column at a time, as the inputs are -- read
    whole, 100M rows held 2.7 GB before the first figure -- a CSV file whole."""
    parts = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    columnar = path.is_dir() or path.suffix.lower() in {".parquet", ".arrow", ".ipc", ".feather"}
    if not columnar or not parts:
        return Table(_read(path, "The published table", types)), {}
    try:
        identities = {part: file_identity(part) for part in parts}
        if path.suffix.lower() == ".parquet" or path.is_dir():
            frame = pl.scan_parquet(path / "*.parquet" if path.is_dir() else path)
        else:
            frame = pl.scan_ipc(path)
        frame.collect_schema()  # a damaged file is named here, with Polars' reason
    except (pl.exceptions.PolarsError, OSError) as error:
        what = "The published table"
        raise _unreadable(what, path, error) from None

    def refuse(error: BaseException) -> InputError:
        msg = (
            f"The published table {str(path)!r}: a column cannot be read any more ({type(error).__name__}): "
            "did a run replace it while the report read it? Write the report again."
        )
        return InputError(msg)

    return Table(frame, refuse), identities


def _still(read: dict[Path, tuple[int, ...]], published: dict[Path, tuple[int, ...]] | None = None) -> None:
    """Refuse to write a report whose inputs (or published table) changed while it read
    them a column at a time: its figures would mix two versions of the data."""
    for files, why in (
        (read, "the internal report read it: the report compares with the inputs of the run"),
        (published or {}, "the report read it (a run replaced the published table?): write the report again"),
    ):
        for path, identity in files.items():
            try:
                same = file_identity(path) == identity
            except OSError:
                same = False
            if not same:
                msg = f"{str(path)!r} changed while {why}."
                raise InputError(msg)


def _original(pipeline: Pipeline, manifest: dict[str, Any], read: dict[Path, tuple[int, ...]]) -> Table:
    """The inputs the run read, refused if any has changed since: Parquet and Arrow
    files read a column at a time (noted in ``read``), CSV files in memory."""
    from polars_ppdm.jobs.inputs import expand, fingerprint, input_format, scan
    from polars_ppdm.jobs.run import keyed_fingerprint, read_secret

    files = expand(pipeline)
    recorded = {str(item["path"]): item.get("fingerprint") for item in manifest.get("inputs", [])}
    if sorted(recorded) != sorted(str(f) for f in files):
        msg = (
            f"[dataset] inputs are now {[str(f) for f in files]}, but the run read {sorted(recorded)}: "
            "the internal report compares with the inputs of the run."
        )
        raise InputError(msg)
    fmt = input_format(pipeline, files)
    identities = {path: file_identity(path) for path in files}  # before the fingerprints they vouch for
    secret = read_secret(pipeline)  # the manifest's fingerprints are keyed by it
    for path in files:
        if keyed_fingerprint(secret, fingerprint(path)) != recorded[str(path)]:
            msg = (
                f"{str(path)!r} has changed since the run: the internal report compares with the inputs of the run "
                "(the public version reads none: ppdm report --version public)."
            )
            raise InputError(msg)
    if not fmt.columnar:
        return Table(scan(files, fmt).collect())
    read.update(identities)

    def refuse(error: BaseException) -> InputError:
        msg = (
            f"[dataset] inputs: a column cannot be read any more ({type(error).__name__}): did an input change "
            "while the internal report read it? The report compares with the inputs of the run."
        )
        return InputError(msg)

    return Table(scan(files, fmt), refuse)


def _budget(
    pipeline: Pipeline, ledger: Path | None, manifest: dict[str, Any], releases: dict[str, pl.DataFrame]
) -> Budget | None:
    """The dataset's budget just before and just after this run, from the ledger."""
    run_id = str(manifest.get("run_id", ""))
    if ledger is None or not ledger.exists():
        return None
    from polars_ppdm.ledger import Ledger

    name = pipeline.dataset.name
    book = Ledger(ledger)
    table = book.table(name)
    mine = table["run_id"] == run_id
    if not mine.any():
        return None
    # An identical re-run spends nothing: the ledger's rows of its run id are the earlier
    # run's, so 'before' is all that was reserved before this run started (rows are in
    # time order), and this run adds 0.
    # The run's spend is kept under its unit: "epsilon", or "rho" for a zCDP dataset.
    amounts = manifest.get("rho") if isinstance(manifest.get("rho"), dict) else manifest.get("epsilon")
    repeats = bool(isinstance(amounts, dict) and amounts.get("identical_rerun"))
    if repeats:
        first = int((table["time"] < dt.datetime.fromisoformat(manifest["started"])).sum())
    else:
        first = int(mine.arg_true()[0])
    spent = {
        column: (
            math.fsum(table[column][:first].to_list()),
            0.0 if repeats else math.fsum(table.filter(mine)[column].to_list()),
        )
        for column in ("charged", "delta_charged")
    }
    (before, this_run), (delta_before, delta_this_run) = spent["charged"], spent["delta_charged"]
    held = book.status(name)
    zcdp = held.accounting == "zcdp"
    return Budget(
        dataset=name,
        total=held.epsilon,
        spent_before=before,
        spent_after=before + this_run,
        # A zCDP dataset's delta is the one its rho is stated at, not a budget it spends.
        delta_total=0.0 if zcdp else held.delta,
        delta_before=0.0 if zcdp else delta_before,
        delta_after=0.0 if zcdp else delta_before + delta_this_run,
        repeats=table.filter(mine)["time"][0].isoformat(timespec="seconds") if repeats else None,
        unit=held.unit,
        epsilon_delta=held.delta if zcdp else 0.0,
        ahead=_year_ahead(pipeline, book, held, manifest, releases),
    )


def _year_ahead(
    pipeline: Pipeline, book: Any, held: Any, manifest: dict[str, Any], releases: dict[str, pl.DataFrame]
) -> YearAhead:
    """The year ahead from the ledger (spent so far, the trees started) and the pipeline
    (what each future run takes); a continual release's last period published is its
    table's (its periods are public)."""
    from polars_ppdm.jobs.config import DPContinualCounts, step_label
    from polars_ppdm.jobs.run import started_trees
    from polars_ppdm.reporting.ahead import pipeline_year_ahead

    throughs = {}
    for index, step in enumerate(pipeline.release, 1):
        frame = releases.get(step.output)
        if isinstance(step, DPContinualCounts) and frame is not None and frame.height:
            throughs[step_label("release", index, step)] = int(frame["period"].cast(pl.Int64).max())  # type: ignore[arg-type]
    started = started_trees(pipeline, throughs, book)
    started_at = manifest.get("started")
    today = dt.datetime.fromisoformat(started_at).date() if started_at else dt.datetime.now(dt.UTC).date()
    return pipeline_year_ahead(
        pipeline,
        spent=held.spent,
        budget=held.epsilon,
        throughs=throughs,
        started=started,
        today=today,
        epsilon_delta=held.delta if held.accounting == "zcdp" else 0.0,
        delta_left=None if held.accounting == "zcdp" else held.remaining_delta,
    )


def write_pipeline_report(
    pipeline: Pipeline,
    *,
    ledger: Path | None,
    versions: Sequence[Version] | None = None,
) -> list[Path]:
    """Write the report of the pipeline's last run; returns the files written.

    ``versions`` None writes both where it can: only the public one for a table Spark
    wrote, as its part files do not keep the input's row order, by which the internal
    figures pair original and released rows (asking for the internal one then is refused).
    """
    from polars_ppdm.jobs.atomic import write_bytes_atomic
    from polars_ppdm.reporting import report

    manifest = _manifest(pipeline)
    run_id = str(manifest.get("run_id", ""))
    read: dict[Path, tuple[int, ...]] = {}  # inputs read a column at a time, as they were when fingerprinted
    published: dict[Path, tuple[int, ...]] = {}  # the published table's files, read so too
    released = Table(pl.DataFrame())  # one Table for both versions: the public finds its figures (Table.memo)
    steps: list[Any] = [*pipeline.release]
    if pipeline.output.table is not None:
        table_path = pipeline.resolve(pipeline.output.table)
        csv_types = dict(pipeline.dataset.csv.types) if pipeline.dataset.csv is not None else None
        released, published = _published(table_path, csv_types)
        steps = [*pipeline.perturb, *steps]
        if table_path.is_dir() and versions is None:
            versions = ("public",)
        elif table_path.is_dir() and versions is not None and "internal" in versions:
            msg = (
                f"{str(table_path)!r} was written by Spark as part files, which do not keep the input's "
                "row order: the internal report pairs original and released rows by position. Write the "
                "public version (--version public), or run the pipeline on Polars for the internal one."
            )
            raise PipelineError(msg)
    versions = VERSIONS if versions is None else tuple(versions)
    releases = {step.output: _read(pipeline.resolve(step.output), "The release") for step in pipeline.release}
    budget = _budget(pipeline, ledger, manifest, releases)
    title = f"{pipeline.dataset.name}: privacy and utility report"
    original = _original(pipeline, manifest, read) if "internal" in versions else None
    written = []
    for version, path in report_paths(pipeline).items():
        if version not in versions:
            continue
        page = report(
            released,
            steps,
            original=original,
            version=version,
            releases=releases,
            budget=budget,
            title=f"{title} (run {run_id[:12]})",
        )
        _still(read if version == "internal" else {}, published)
        # The internal page holds the original's figures (review 78: it was 0644).
        write_bytes_atomic(path, page.encode(), private=version == "internal")
        written.append(path)
    return written
