"""``ppdm run`` on Spark (``engine = "spark"`` or ``--engine spark``): the same pipeline
file, the same ledger, the same bits.

The run's order and bookkeeping stay those of :mod:`polars_ppdm.jobs.run`; only three
things change: the inputs are read by Spark, every step calls the function of the same
name in :mod:`polars_ppdm.spark` (same parameters, same draws), and the perturbed table is
written by Spark's executors as a folder of Parquet (or CSV) part files, placed under its
final name atomically.  The releases are small frames on the driver, written as with
Polars.  Only aggregates cross to the driver.

The session is ``SparkSession.builder.getOrCreate()``: whatever ``spark-submit``,
``spark-defaults.conf`` or ``SPARK_REMOTE`` (Spark Connect) configure; with nothing
configured, a local session on every core.  The executors need polars_ppdm installed.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._durable import fsync_folder, table_files
from polars_ppdm.jobs import inputs
from polars_ppdm.jobs.atomic import file_sha256, make_readable, private_temporary, replace_whole
from polars_ppdm.jobs.config import DPContinualCounts, DPGroupBy, EcdfResample, Pipeline
from polars_ppdm.jobs.errors import PipelineError, ReleaseMismatchError
from polars_ppdm.jobs.inputs import InputFormat

__all__ = [
    "check_csv_values",
    "check_for_spark",
    "check_types_for_spark",
    "parts_digest",
    "scan",
    "session",
    "sink_table",
]


def check_for_spark(pipeline: Pipeline, fmt: InputFormat) -> None:
    """What a pipeline needs to run on Spark, checked before anything is read."""
    problems = []
    if pipeline.dataset.key is None:
        problems.append(
            "[dataset] key is required with engine = 'spark': a Spark table has no row order, so the "
            "draws are keyed by the privacy-unit column, never by the row position"
        )
    if fmt.kind == "ipc":
        problems.append("[dataset] format 'ipc' cannot be read by Spark; convert the inputs to Parquet")
    if len(fmt.csv.null_values) > 1:
        problems.append(
            f"[dataset.csv] null_values: Spark's CSV reader takes one null marker besides an empty field, "
            f"the file gives {len(fmt.csv.null_values)}; give one, or run with --engine polars"
        )
    unsigned = sorted(name for name, kind in fmt.csv.types.items() if kind.startswith("UInt"))
    if unsigned:
        problems.append(
            f"[dataset.csv] types: Spark has no unsigned integers, and {unsigned} are declared so; declare them "
            "Int64, or run with --engine polars"
        )
    if fmt.csv.decimal_comma:
        problems.append(
            "[dataset.csv] decimal_comma: Spark's CSV reader has no decimal comma; run with --engine polars"
        )
    for index, step in enumerate(pipeline.perturb, 1):
        if isinstance(step, EcdfResample) and (step.link != "rank" or step.shuffle):
            problems.append(
                f"[[perturb]] {index} ecdf_resample: link = 'none' and shuffle = true depend on the row "
                "order, which a Spark table does not have; use link = 'rank' without shuffle on Spark"
            )
    for index, release in enumerate(pipeline.release, 1):
        if isinstance(release, DPGroupBy | DPContinualCounts):
            problems.append(
                f"[[release]] {index} {release.step} runs on the Polars engine only (the Spark front-end has no "
                f"{release.step} yet); run this pipeline with --engine polars"
            )
    if problems:
        raise PipelineError("; ".join(problems) + ".")


def session() -> Any:
    """The active or configured Spark session (see the module's docstring)."""
    from polars_ppdm.spark._engine import require_pyspark

    sql = require_pyspark("the pipeline runner (engine = 'spark')")
    # A local session's Python workers must be this interpreter (with polars_ppdm), not
    # the first python3 on PATH; on a cluster, set PYSPARK_PYTHON to the executors' one.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = sql.SparkSession.builder.appName("ppdm run").config("spark.ui.showConsoleProgress", "false")
    return builder.getOrCreate()


def check_types_for_spark(schema: pl.Schema) -> None:
    """Refuse input columns whose type Spark cannot hold as Polars does, before anything
    is reserved (attack review 77): a Duration (Spark wrote its microseconds as Int64), a
    time in a zone (Spark keeps the instant, not the zone: the published wall-clock time
    moved, or pyspark failed with a bare AssertionError after the reservation), a UInt64
    (Spark holds it as a Decimal).  Names the columns."""
    kinds = {
        "a Duration (Spark has no duration type; cast it to an integer of a stated unit)": [
            c for c, t in schema.items() if isinstance(t, pl.Duration)
        ],
        "a Datetime in a time zone (Spark keeps no zone; convert it, e.g. to UTC, and drop the zone)": [
            c for c, t in schema.items() if isinstance(t, pl.Datetime) and t.time_zone is not None
        ],
        "a UInt64 (Spark holds it as a Decimal; cast it to Int64)": [
            c for c, t in schema.items() if t == pl.UInt64
        ],
        # Review 79: an Int128 came out as 16-byte Binary, a Null column as Int32; a Time
        # and a time in nanoseconds failed after the reservation.
        "an Int128 (Spark has none; cast it to Int64 or String)": [
            c for c, t in schema.items() if t == pl.Int128
        ],
        "of type Null (Spark writes Int32; give the column a type)": [
            c for c, t in schema.items() if t == pl.Null
        ],
        "a Time (Spark has no time-of-day type; cast it to String)": [
            c for c, t in schema.items() if t == pl.Time
        ],
        "a Datetime in nanoseconds (Spark holds microseconds; cast it to Datetime('us'))": [
            c for c, t in schema.items() if isinstance(t, pl.Datetime) and t.time_unit == "ns"
        ],
    }
    problems = [f"{columns} are {what}" for what, columns in kinds.items() if columns]
    if problems:
        msg = (
            "ppdm run --engine spark: the input columns "
            + "; ".join(problems)
            + ". Spark would publish other "
            "values than Polars. Run with --engine polars, or change the column's type first."
        )
        raise PipelineError(msg)


def check_csv_values(files: list[Path], fmt: InputFormat, schema: pl.Schema) -> None:
    """Refuse CSV text that Spark's reader would read as other values than Polars: line
    endings mixed within or across the files (:func:`check_line_endings`), and a carriage
    return in a quoted field (a line break of a Windows export), which Spark reads as a
    line feed. Before anything is reserved; the message names a file or a column, never a
    value."""
    if fmt.kind != "csv":
        return
    check_line_endings(files, fmt.csv.quote_char)
    strings = [name for name, dtype in schema.items() if dtype == pl.String]
    if not strings:
        return
    found = inputs.scan(files, fmt).select(pl.col(strings).str.contains("\r", literal=True).any()).collect()
    returns = [name for name in strings if found[name][0]]
    if returns:
        msg = (
            f"[dataset] inputs: column(s) {returns} hold a carriage return inside a quoted field (a line break "
            "of a Windows export), which Spark's CSV reader reads as a line feed: the engines would publish "
            "other values. Run with --engine polars, or give the inputs as Parquet."
        )
        raise PipelineError(msg)


def _line_endings(path: Path, quote: str) -> tuple[int, int, int, bytes]:
    """Counts of CRLF, bare LF and bare CR line endings in the bytes of ``path``, outside
    quoted fields (``quote``, "" for none): a quoted field may hold its own line breaks.
    A byte is inside a field where an odd number of quotes came before it (a doubled
    quote inside one adds two).  Last, the file's first line ending by its raw bytes,
    quotes or not (b"" for none): Spark's reader takes its separator from that one."""
    mark = quote.encode()[0] if quote else None
    crlf = lf = cr = 0
    inside = 0
    first = b""
    carried = b""
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            chunk = carried + chunk
            # A CR at a chunk's end may be the first half of a CRLF: read it with the next.
            carried, chunk = (b"\r", chunk[:-1]) if chunk.endswith(b"\r") else (b"", chunk)
            data = np.frombuffer(chunk, dtype=np.uint8)
            if not len(data):
                continue
            if not first:
                breaks = np.flatnonzero((data == 10) | (data == 13))
                if len(breaks):
                    at = int(breaks[0])
                    first = b"\r\n" if chunk[at : at + 2] == b"\r\n" else chunk[at : at + 1]
            if mark is None:
                outside = np.ones(len(data), dtype=bool)
            else:
                parity = (np.cumsum(data == mark) + inside) & 1
                outside, inside = parity == 0, int(parity[-1])
            newline, ret = data == 10, data == 13
            after_cr = np.zeros_like(newline)
            after_cr[1:] = ret[:-1]
            before_lf = np.zeros_like(ret)
            before_lf[:-1] = newline[1:]
            crlf += int((newline & after_cr & outside).sum())
            lf += int((newline & ~after_cr & outside).sum())
            cr += int((ret & ~before_lf & outside).sum())
    if not first and carried:
        first = b"\r"
    return crlf, lf, cr + (len(carried) if not inside else 0), first


def check_line_endings(files: list[Path], quote: str = '"') -> None:
    """Refuse CSV inputs whose rows do not all end alike (LF, or CRLF), that hold a bare
    CR, or whose first line break (a quoted one too) is not of the rows' kind: Spark's
    reader takes one separator per file, from its first line break, where Polars takes
    each line's own, so a CRLF header over LF rows (or the reverse, or an Excel file whose
    first line break is an LF inside a quoted cell) read as other rows and values on Spark
    (attack review 71: a dropped name published inside a kept column, rows lost, a
    disguised column read as nulls, another randomized-response draw taken for an
    identical re-run; review 72: the quoted first line break)."""
    for path in files:
        crlf, lf, cr, first = _line_endings(path, quote)
        rows = b"\r\n" if crlf else b"\n" if lf else first
        if cr or (crlf and lf) or (first and first != rows):
            msg = (
                f"[dataset] inputs: {str(path)!r} mixes line endings (LF and CRLF, or a bare CR, counting a "
                "quoted field's line break), which Spark's CSV reader splits otherwise than Polars: the engines "
                "would publish other rows or values. Convert it to one ending (e.g. dos2unix), run with --engine "
                "polars, or give the inputs as Parquet."
            )
            raise PipelineError(msg)


def check_rows(frame: Any, counted: int | None, files: list[Path], fmt: InputFormat) -> None:
    """Refuse a run whose inputs Spark reads as other rows than Polars counts (``counted``,
    from the columnar formats' metadata; a CSV's is counted here), or with other nulls in
    some column, before any output: the last guard of attack review 71, whatever makes the
    two readers split a file otherwise; and of review 77, whatever text Spark's reader
    takes for a null where Polars reads a value (``inf``, ``nan``, a date as
    ``2020/01/01``, a time with its zone), which the re-run check refused only after a
    Spark run had published the nulls.  Names columns, never a value or a count."""
    from pyspark.sql import functions as F

    names = list(frame.columns)
    spark_counts = frame.select(
        F.count(F.lit(1)).alias("rows"),
        *(F.count_if(F.col(c).isNull()).alias(f"n{i}") for i, c in enumerate(names)),
    ).first()
    polars_counts = (
        inputs.scan(files, fmt)
        .select(pl.len().alias("rows"), *(pl.col(c).null_count().alias(f"n{i}") for i, c in enumerate(names)))
        .collect()
        .row(0, named=True)
    )
    rows = polars_counts["rows"] if counted is None else counted
    advice = ", or give the inputs as Parquet" if fmt.kind == "csv" else ""
    if spark_counts["rows"] != rows:
        msg = (
            "ppdm run --engine spark: Spark's reader read the inputs as other rows than Polars counts, so the "
            f"engines would publish other outputs. Run with --engine polars{advice}."
        )
        raise ReleaseMismatchError(msg)
    nulls = [c for i, c in enumerate(names) if spark_counts[f"n{i}"] != polars_counts[f"n{i}"]]
    if nulls:
        msg = (
            f"ppdm run --engine spark: Spark's reader reads some values of {nulls} as nulls where Polars reads "
            "values (e.g. inf or nan in a float column, a date or time in a form Spark does not parse), so the "
            f"engines would publish other outputs. Write those values as Spark reads them, or run with --engine "
            f"polars{advice}."
        )
        raise ReleaseMismatchError(msg)


def scan(spark: Any, files: list[Path], fmt: InputFormat, schema: pl.Schema) -> Any:
    """The inputs as one Spark DataFrame with the columns and types Polars reads."""
    from polars_ppdm.spark._engine import spark_schema

    paths = [str(f) for f in files]
    if fmt.kind == "parquet":
        return spark.read.parquet(*paths)
    # CSV: Polars' inferred types, declared, so that both engines read the same values,
    # and the columns named by them in file order (with a header or without). Spark's
    # default nullValue "" reads a quoted empty string ("") as null, where Polars reads an
    # empty string (and only an empty field, or a declared null value, as null): the
    # declared marker, else one no file holds, keeps the two apart as Polars does.
    # As Polars parses (RFC 4180): a quoted field may hold line breaks (multiLine) and its
    # quote doubled (escape). Spark's default mode, as Polars, reads a short row's missing
    # fields as nulls (FAILFAST would refuse it, after the reservation, quoting the row).
    options = fmt.csv
    return spark.read.csv(
        paths,
        header=options.has_header,
        schema=spark_schema(schema, "run"),
        enforceSchema=True,
        sep=options.separator,
        quote=options.quote_char,  # "" turns quoting off, as Polars' quote_char=None
        escape=options.quote_char or "\\",
        multiLine=True,
        nullValue=options.null_values[0] if options.null_values else f"\x00ppdm-null-{secrets.token_hex(16)}",
    )


# Spark's CSV writer, told to write what Polars writes and reads (RFC 4180): its defaults
# escape a quote with a backslash (Polars read `say "hi"` back as `say \hi\`, and the
# row digest took two different tables for one), trim leading and trailing whitespace (a
# tab became an empty string) and cut times to milliseconds (attack review 77).
_CSV_AS_POLARS = {
    "header": True,
    "quote": '"',
    "escape": '"',
    "escapeQuotes": True,
    "ignoreLeadingWhiteSpace": False,
    "ignoreTrailingWhiteSpace": False,
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}


def sink_table(
    frame: Any, target: Path, put: Callable[[Path, Path, str], None] | None = None
) -> tuple[int, str]:
    """Write ``frame`` as a folder of part files named ``target``; (rows, sha256).

    The executors write into a temporary folder beside ``target``, renamed into place
    whole (:func:`~polars_ppdm.jobs.atomic.replace_whole`), so a reader never sees a
    partial table under the final name.
    The digest is the SHA-256 over the sorted part files' names and SHA-256s.
    ``put(temporary, target, digest)``, if given, puts the finished folder in place
    instead (or keeps it to put later; what it keeps is not removed here).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Only this user can enter it until the commit (make_readable): see private_temporary.
    temporary = private_temporary(target, folder=True)
    csv = target.suffix.lower() == ".csv"
    taken = False
    try:
        writer = frame.write.mode("append")  # into the fresh, empty private folder
        if csv:
            writer.options(**_CSV_AS_POLARS).csv(str(temporary))
        else:
            writer.parquet(str(temporary))
        digest = parts_digest(temporary, sync=True)
        rows = _rows(table_files(temporary), csv)
        fsync_folder(temporary)
        if put is None:
            make_readable(temporary, target)
            replace_whole(temporary, target)
        else:
            put(temporary, target, digest)
            taken = True
    finally:
        if temporary.is_dir() and not taken:
            shutil.rmtree(temporary, ignore_errors=True)
    return rows, digest


def parts_digest(folder: Path, *, sync: bool = False) -> str:
    """The SHA-256 over the sorted part files' names and SHA-256s of a Spark table
    (``sync``: fsync each too).  Another write of the same rows has other part names."""
    digest = hashlib.sha256()
    for part in table_files(folder):
        digest.update(f"{part.name}\x00{file_sha256(part, sync=sync)}\x00".encode())
    return digest.hexdigest()


def _rows(parts: list[Path], csv: bool) -> int:
    if not parts:
        return 0
    paths = [str(p) for p in parts]
    scanned = pl.scan_csv(paths) if csv else pl.scan_parquet(paths)
    return int(scanned.select(pl.len()).collect().item())
