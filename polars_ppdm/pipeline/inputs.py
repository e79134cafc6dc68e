"""The inputs of a pipeline: paths and globs, their format, metadata, fingerprints and
the lazy scan over them.  Everything here but :func:`scan` reads metadata or bytes only,
never rows."""

from __future__ import annotations

import glob
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from polars_ppdm.pipeline.atomic import file_sha256
from polars_ppdm.pipeline.config import Pipeline
from polars_ppdm.pipeline.errors import InputError, PipelineError

__all__ = ["InputFile", "expand", "fingerprint", "input_format", "metadata", "read_schema", "scan"]

_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".arrow": "ipc",
    ".ipc": "ipc",
    ".feather": "ipc",
}


@dataclass
class InputFile:
    path: Path
    bytes: int
    rows: int | None = None  # None: not in the file's metadata (CSV)
    sha256: str | None = None


def expand(pipeline: Pipeline) -> list[Path]:
    """The files of ``[dataset] inputs``, globs expanded (sorted), each checked to exist."""
    files: list[Path] = []
    for pattern in pipeline.dataset.inputs:
        resolved = pipeline.resolve(pattern)
        if glob.has_magic(str(resolved)):
            found = sorted(Path(p) for p in glob.glob(str(resolved)) if os.path.isfile(p))
            if not found:
                msg = f"[dataset] inputs {pattern!r}: no file matches {str(resolved)!r}."
                raise InputError(msg)
            files += found
        else:
            if not resolved.is_file():
                problem = "is not a file" if resolved.exists() else "does not exist"
                msg = f"[dataset] inputs {pattern!r}: {str(resolved)!r} {problem}."
                raise InputError(msg)
            files.append(resolved)
    return files


def input_format(pipeline: Pipeline, files: list[Path]) -> str:
    """``[dataset] format``, else the files' common suffix."""
    if pipeline.dataset.format is not None:
        return pipeline.dataset.format
    kinds = {_SUFFIXES.get(f.suffix.lower()) for f in files}
    if len(kinds) == 1 and None not in kinds:
        return str(kinds.pop())
    msg = (
        "[dataset], field 'format': the inputs' format cannot be told from their names "
        f"({sorted({f.suffix or '(none)' for f in files})}); give format = one of 'parquet', 'csv', 'ipc'."
    )
    raise PipelineError(msg)


def _unreadable(path: Path, error: BaseException) -> InputError:
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    return InputError(f"[dataset] inputs: {str(path)!r} cannot be read: {first}")


def metadata(files: list[Path], fmt: str) -> list[InputFile]:
    """Sizes, and row counts where the format keeps them in its metadata."""
    out = []
    for path in files:
        try:
            size = path.stat().st_size
            rows: int | None = None
            if fmt == "parquet":
                import pyarrow.parquet as pq

                rows = int(pq.read_metadata(path).num_rows)
            elif fmt == "ipc":
                import pyarrow as pa

                with pa.memory_map(str(path)) as source:
                    reader = pa.ipc.open_file(source)
                    rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
        except Exception as error:  # pyarrow raises its own classes for a damaged file
            raise _unreadable(path, error) from None
        out.append(InputFile(path=path, bytes=size, rows=rows))
    return out


def fingerprint(path: Path) -> str:
    """SHA-256 of the file's bytes."""
    try:
        return file_sha256(path)
    except OSError as error:
        raise _unreadable(path, error) from None


def combined_fingerprint(fingerprints: list[str]) -> str:
    return hashlib.sha256("\n".join(fingerprints).encode()).hexdigest()


def scan(files: list[Path], fmt: str) -> pl.LazyFrame:
    sources = [str(f) for f in files]
    if fmt == "parquet":
        return pl.scan_parquet(sources)
    if fmt == "csv":
        return pl.scan_csv(sources)
    return pl.scan_ipc(sources)


def read_schema(files: list[Path], fmt: str) -> pl.Schema:
    """The inputs' schema (footers or headers only); files with different columns refused."""
    schema: pl.Schema | None = None
    for path in files:
        try:
            found = scan([path], fmt).collect_schema()
        except (pl.exceptions.PolarsError, OSError) as error:
            raise _unreadable(path, error) from None
        if schema is None:
            schema = found
        elif found != schema:
            msg = (
                f"[dataset] inputs: {str(path)!r} has the columns {dict(found)} but {str(files[0])!r} has "
                f"{dict(schema)}; every input needs the same columns and types."
            )
            raise InputError(msg)
    assert schema is not None
    return schema
