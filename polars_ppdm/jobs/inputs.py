"""The inputs of a pipeline: paths and globs, their format, metadata, fingerprints and
the lazy scan over them.  Everything here but :func:`scan` reads metadata or bytes only,
never rows."""

from __future__ import annotations

import glob
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from polars_ppdm.jobs.config import CsvOptions, Pipeline
from polars_ppdm.jobs.errors import InputChangedError, InputError, PipelineError

__all__ = [
    "InputFile",
    "InputFormat",
    "PinnedInputs",
    "check_readable",
    "expand",
    "fingerprint",
    "input_format",
    "metadata",
    "read_schema",
    "scan",
    "withheld",
]

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
    fingerprint: str | None = None  # see fingerprint()


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


@dataclass(frozen=True)
class InputFormat:
    """How the inputs are read: their ``kind`` (``"parquet"``, ``"csv"`` or ``"ipc"``)
    and, for CSV, the reader's options (``[dataset.csv]``)."""

    kind: str
    csv: CsvOptions = field(default_factory=CsvOptions)

    @property
    def columnar(self) -> bool:
        """Whether a column can be read without the others (Parquet, Arrow IPC)."""
        return self.kind in ("parquet", "ipc")


def input_format(pipeline: Pipeline, files: list[Path]) -> InputFormat:
    """``[dataset] format``, else the files' common suffix; with ``[dataset.csv]``."""
    kind: str | None = pipeline.dataset.format
    if kind is None:
        kinds = {_SUFFIXES.get(f.suffix.lower()) for f in files}
        if len(kinds) != 1 or None in kinds:
            msg = (
                "[dataset], field 'format': the inputs' format cannot be told from their names "
                f"({sorted({f.suffix or '(none)' for f in files})}); give format = one of 'parquet', 'csv', 'ipc'."
            )
            raise PipelineError(msg)
        kind = str(kinds.pop())
    options = pipeline.dataset.csv
    if options is not None and kind != "csv":
        msg = (
            f"[dataset.csv] gives the options of a CSV reader, but the inputs are {kind!r} files; "
            "remove [dataset.csv] (or give format = 'csv' if they are CSV files under another name)."
        )
        raise PipelineError(msg)
    return InputFormat(kind, options or CsvOptions())


# Polars' CSV parse error, whole: the value between the backticks may hold anything
# (backticks, quotes, line breaks, a fake "as dtype ... at column ..."), so the value is
# everything up to the *last* "` as dtype `", and the schema part must end the line.
_CSV_PARSE = re.compile(
    r"could not parse `.*` as dtype `(?P<dtype>\w+)` at column '(?P<column>[^'\n]*)' "
    r"\(column number (?P<number>\d+)\)(?=\n|$)",
    re.DOTALL,
)
# A quoted part (a backslash escapes a quote), or a quote that never closes on the line:
# withheld to the end of the line.
_QUOTED = re.compile(r"`(?:\\.|[^`\\])*(?:`|$)|\"(?:\\.|[^\"\\])*(?:\"|$)|'(?:\\.|[^'\\])*(?:'|$)")


def withheld(error: BaseException) -> str:
    r"""The first line of a reader's error, fit for a log.  A parser's message quotes the
    data ("could not parse" a quoted value, a row's text) and its later lines say where
    (an offset in the file), an engine's may count rows ("for 3 out of 9 values"): only
    the first line is kept, its quoted parts (to the end of the line, for a quote that
    never closes) and its numbers withheld, and it is cut, so no value, count or position
    of the data reaches a log.

    Polars' CSV parse error keeps its dtype and column (the header's name and number):
    they are the file's schema, not its data, and tell the user which column to look at.

    Examples
    --------
    >>> withheld(ValueError("could not parse `abc` as dtype `i64` at column 'b' (row 7)\nat 9 bytes"))
    'could not parse <withheld> as dtype <withheld> at column <withheld> (row <n>)'
    >>> withheld(ValueError("could not parse `x1` as dtype `f64` at column 'pay' (column number 5)\n\nat 9"))
    "could not parse <withheld> as dtype `f64` at column 'pay' (column number 5)"
    >>> withheld(ValueError("could not parse `a` as dtype `i64` at column 'x' (column number 2)` as dtype `f64` "
    ...                     "at column 'pay' (column number 5)"))
    "could not parse <withheld> as dtype `f64` at column 'pay' (column number 5)"
    """
    text = str(error).strip()
    parse = _CSV_PARSE.match(text)
    if parse is not None:
        column = parse["column"] if len(parse["column"]) <= 100 else parse["column"][:100] + "..."
        return f"could not parse <withheld> as dtype `{parse['dtype']}` at column '{column}' (column number {parse['number']})"
    lines = text.splitlines()
    first = lines[0] if lines else type(error).__name__
    first = _QUOTED.sub("<withheld>", first)
    first = re.sub(r"(?<![\w.-])-?\d[\d,._]*(?:e[-+]?\d+)?(?!\w)", "<n>", first)
    # A list of withheld values would still tell how many there were (Polars 1.34 lists
    # each value that failed a cast): one placeholder for the whole list.
    first = re.sub(r"\[(?:<withheld>|<n>|, |\.\.\.|\u2026)+\]", "[<withheld>]", first)
    return first if len(first) <= 200 else f"{first[:200]}..."


def _unreadable(path: Path, error: BaseException) -> InputError:
    """The refusal of an input that cannot be read (:func:`withheld`), with what usually
    causes it in a CSV file."""
    said = withheld(error)
    hint = ""
    if "found more fields than defined" in said:
        hint = " (a row with more fields than the header: is [dataset.csv] separator the file's?)"
    elif "invalid utf-8" in said.lower():
        hint = " (inputs are UTF-8: convert the file first, e.g. iconv -f cp1252 -t utf-8)"
    elif "could not parse" in said:
        hint = " (declare the column's type in [dataset.csv] types, or its missing-value marker in null_values)"
    return InputError(f"[dataset] inputs: {str(path)!r} cannot be read: {said}{hint}")


def metadata(files: list[Path], fmt: InputFormat) -> list[InputFile]:
    """Sizes, and row counts where the format keeps them in its metadata."""
    out = []
    for path in files:
        try:
            size = path.stat().st_size
            rows: int | None = None
            if fmt.columnar:
                # Polars reads the count off the Parquet footer (the IPC file's batch
                # headers): no row is decoded.  (Not pyarrow: importing it for this alone
                # adds ~35 MB to the run's peak memory.)
                rows = int(scan([path], fmt).select(pl.len()).collect().item())
        except (pl.exceptions.PolarsError, OSError) as error:
            raise _unreadable(path, error) from None
        out.append(InputFile(path=path, bytes=size, rows=rows))
    return out


BLOCK = 64 << 20


def fingerprint(path: Path) -> str:
    r"""The file's content fingerprint: SHA-256 over its length and the SHA-256 of each of
    its 64 MiB blocks, the blocks hashed by parallel threads (hashlib releases the GIL;
    a plain SHA-256 is one sequential chain, 2 GB take ~4 s on one core).  Any change to
    the bytes changes it, as a plain SHA-256's would: it names the content, not the
    file's name, size or time.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "data.bin"
    >>> _ = path.write_bytes(b"rows")
    >>> block = hashlib.sha256(b"rows").digest()
    >>> top = hashlib.sha256(b"polars_ppdm/input/64MiB-blocks\x00" + (4).to_bytes(8, "big") + block)
    >>> fingerprint(path) == top.hexdigest()
    True
    """
    from concurrent.futures import ThreadPoolExecutor

    def block(offset: int) -> bytes:
        digest = hashlib.sha256()
        with open(path, "rb") as file:
            file.seek(offset)
            left = BLOCK
            while left and (chunk := file.read(min(left, 1 << 20))):
                digest.update(chunk)
                left -= len(chunk)
        return digest.digest()

    try:
        size = path.stat().st_size
        offsets = range(0, max(size, 1), BLOCK)
        workers = max(1, min(len(offsets), os.cpu_count() or 1, 8))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ppdm-fingerprint") as pool:
            blocks = list(pool.map(block, offsets))
    except OSError as error:
        raise _unreadable(path, error) from None
    top = hashlib.sha256(b"polars_ppdm/input/64MiB-blocks\x00" + size.to_bytes(8, "big"))
    for digest in blocks:
        top.update(digest)
    return top.hexdigest()


def combined_fingerprint(fingerprints: list[str]) -> str:
    return hashlib.sha256("\n".join(fingerprints).encode()).hexdigest()


def scan(files: list[Path], fmt: InputFormat) -> pl.LazyFrame:
    """The inputs as one lazy frame, read as ``fmt`` says."""
    sources = [str(f) for f in files]
    if fmt.kind == "parquet":
        return pl.scan_parquet(sources)
    if fmt.kind == "csv":
        options = fmt.csv.polars_options()
        if not fmt.csv.has_header:
            # Polars names a header-less file's columns column_1, ... in 1.x and column_0, ...
            # in 2.x: named here by position, column_1 on, whatever the version.
            width = pl.scan_csv(sources[0], **{**options, "schema_overrides": None}).collect_schema().len()
            options["new_columns"] = [f"column_{i}" for i in range(1, width + 1)]
        return pl.scan_csv(sources, **options)
    return pl.scan_ipc(sources)


def read_schema(files: list[Path], fmt: InputFormat) -> pl.Schema:
    """The inputs' schema (footers or headers only); files with different columns refused."""
    schema: pl.Schema | None = None
    for path in files:
        try:
            found = scan([path], fmt).collect_schema()
            empty = fmt.kind == "csv" and scan([path], fmt).head(1).collect().height == 0
        except (pl.exceptions.PolarsError, OSError) as error:
            raise _unreadable(path, error) from None
        unknown = sorted(set(fmt.csv.types) - set(found.names()))
        if unknown:
            msg = (
                f"[dataset.csv] types: {unknown} are not columns of {str(path)!r}, which has "
                f"{found.names()}; name its columns as it does"
                + ("" if fmt.csv.has_header else " (without a header: column_1, column_2, ...)")
                + "."
            )
            raise InputError(msg)
        undeclared = [name for name in found.names() if name not in fmt.csv.types]
        if empty and undeclared:
            msg = (
                f"[dataset] inputs: {str(path)!r} has a header but no rows. A CSV's column types are read from "
                f"its rows, so the columns {undeclared} of this one would be text: declare every column's type in "
                "[dataset.csv] types, or give an empty table as Parquet or Arrow IPC, which carry their types."
            )
            raise InputError(msg)
        if schema is None:
            schema = found
        elif found != schema:
            msg = (
                f"[dataset] inputs: {str(path)!r} has the columns {dict(found)} but {str(files[0])!r} has "
                f"{dict(schema)}; every input needs the same columns and types"
                + (
                    ", in the same order. A CSV file's types are inferred from its own rows (a day of whole numbers "
                    "reads as integers, of empty fields as text): declare them in [dataset.csv] types."
                    if fmt.kind == "csv"
                    else "."
                )
            )
            raise InputError(msg)
    assert schema is not None
    return schema


def check_readable(files: list[Path], fmt: InputFormat) -> None:
    """Parse every field of every CSV input once, before anything is reserved: a damaged
    file (ragged rows, bytes that are not UTF-8, a value of another type than its
    column's) is refused by name (:class:`InputError`, exit 4) instead of failing the run
    half-way.  Parquet and IPC files were read by their footers (:func:`metadata`)."""
    if fmt.kind != "csv":
        return
    for path in files:
        try:
            scan([path], fmt).select(pl.all().null_count()).collect()
        except (pl.exceptions.PolarsError, OSError) as error:
            raise _unreadable(path, error) from None


@dataclass(frozen=True)
class _Identity:
    """What the file system says of a file: any write, truncation, rename over it or
    change of owner or mode changes it (the ctime is set by the kernel, never by a user)."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int


def _identity(path: Path) -> _Identity:
    found = os.stat(path)
    return _Identity(found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


class PinnedInputs:
    """The inputs' content as the run fingerprints it, and the check, before anything is
    published, that it is still the content: the data a run fingerprints (its run id, an
    identical re-run's free pass) is the data it read.

    Each file's identity (device, inode, size, modification and change times) is taken
    before its fingerprint; :meth:`check_unchanged` takes it again and fingerprints the
    file again.  A writer that replaced a file (a rename over it: a new inode), wrote
    into it, or wrote and restored its bytes, changes the identity; a writer that
    changed the bytes changes the fingerprint.  Left open: a write that restores the
    bytes within one tick of the kernel's file clock of the file's previous change.
    """

    def __init__(self, files: list[Path]) -> None:
        self.files = list(files)
        try:
            self._identities = [_identity(path) for path in self.files]
        except OSError as error:
            raise _unreadable(Path(getattr(error, "filename", "") or "?"), error) from None
        self.fingerprints = [fingerprint(path) for path in self.files]

    def check_unchanged(self) -> None:
        """Raise :class:`InputChangedError` (exit 6) if an input is not what was fingerprinted."""
        for path, before, digest in zip(self.files, self._identities, self.fingerprints, strict=True):
            try:
                same = _identity(path) == before and fingerprint(path) == digest
            except (OSError, InputError):
                same = False
            if not same:
                msg = (
                    f"[dataset] inputs: {str(path)!r} changed while the run read it (its bytes, size, times or "
                    "file differ from when it was fingerprinted), so the outputs may be over other data than the "
                    "run's id names. Refused: nothing was published and nothing spent. Run again once the "
                    "writer of the input has finished: its new content is a new run."
                )
                raise InputChangedError(msg)
