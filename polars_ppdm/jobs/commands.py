"""The ``ppdm run``, ``ppdm plan`` and ``ppdm ledger`` subcommands.

Each handler returns the exit status (see :mod:`polars_ppdm.jobs.errors`) and prints
errors as one line (or one line per problem) on stderr, never a traceback: ``ppdm run:
...``.  Nothing printed holds the secret.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from polars_ppdm.exceptions import BudgetExceededError, InvalidParameterError, PPDMError, SecretError
from polars_ppdm.jobs.errors import (
    EXIT_BUDGET,
    EXIT_BUSY,
    EXIT_CHANGED,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_OTHER,
    EXIT_PLACING,
    EXIT_REPORT,
    InputError,
    ReleaseMismatchError,
    came_after_recording,
)

__all__ = ["EXIT_CODES_HELP", "add_commands", "exit_code", "guarded", "one_line"]

EXIT_CODES_HELP = (
    "exit status: 0 success (an identical re-run too: it spends nothing); 1 other error; "
    "2 invalid pipeline (file, parameters, secret source, columns); 3 budget refused (nothing "
    "read or spent); 4 input (or the pipeline file) missing or unreadable; 5 ledger busy; 6 an input changed while the run "
    "read it, or a re-run of a recorded run computed other outputs than it recorded (nothing published "
    "or spent); 7 the run succeeded (outputs in place, budget spent) but its report or summary failed; "
    "8 the run was recorded (budget spent) but not all its outputs were put in place: run it again "
    "(spends nothing); 130 interrupted (nothing published or spent); "
    "141 the reader of the output closed the pipe (e.g. | head)"
)


def exit_code(error: BaseException) -> int:
    """The exit status of an error of a run."""
    busy = _busy_error()
    if busy is not None and isinstance(error, busy):
        return EXIT_BUSY
    if isinstance(error, BudgetExceededError):
        return EXIT_BUDGET
    if isinstance(error, ReleaseMismatchError):
        return EXIT_CHANGED
    if isinstance(error, InputError):
        return EXIT_INPUT
    if isinstance(error, InvalidParameterError | SecretError):
        return EXIT_INVALID
    return EXIT_OTHER


def _busy_error() -> type[BaseException] | None:
    from polars_ppdm import exceptions

    found = getattr(exceptions, "LedgerBusyError", None)
    return found if isinstance(found, type) else None


# What reaches stderr: one line, at most this long, with any run of 32 or more hex digits
# (the length of a secret) hidden: a scheduler's log keeps it, and others read that log.
_MAX_MESSAGE = 4_000
_HEX_RUN = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{32,}(?![0-9a-fA-F])")


def one_line(error: BaseException) -> str:
    r"""The one line an error prints on stderr (:func:`_fail`): its message (a Polars
    error's first line only, the rest being the query's internals, with the data's values
    and counts it may quote withheld: :func:`~polars_ppdm.jobs.inputs.withheld`), then its notes (what
    happened to the budget), newlines folded, long hex runs hidden, and cut to
    :data:`_MAX_MESSAGE` characters.

    Examples
    --------
    >>> error = ValueError("two\nlines " + "ab" * 32)
    >>> error.add_note("Nothing was spent.")
    >>> one_line(error)
    'ValueError: two lines <hex hidden> Nothing was spent.'
    """
    import polars as pl

    if isinstance(error, KeyboardInterrupt):
        text = "interrupted."
    elif isinstance(error, PPDMError):
        text = str(error)
    elif isinstance(error, pl.exceptions.PolarsError):
        from polars_ppdm.jobs.inputs import withheld  # the values and counts it may quote: withheld

        text = f"{type(error).__name__}: {withheld(error)}"
    else:
        text = f"{type(error).__name__}: {error}"
    parts = [text, *getattr(error, "__notes__", ())]
    folded = " ".join(line.strip() for part in parts for line in str(part).splitlines() if line.strip())
    folded = _HEX_RUN.sub("<hex hidden>", folded)
    if len(folded) > _MAX_MESSAGE:
        folded = f"{folded[:_MAX_MESSAGE]}... ({len(folded) - _MAX_MESSAGE:,} more characters not shown)"
    return folded


EXIT_PIPE = 141  # 128 + SIGPIPE, as a tool killed by it reports


def guarded(command: str, run: Callable[[], int]) -> int:
    """Run a subcommand; Ctrl-C ends in one line and exit 130 (the run has settled its
    ledger by then: see :func:`polars_ppdm.jobs.run.run_pipeline`), a reader that closed
    the pipe (``ppdm ledger | head -1``) in silence and exit 141."""
    try:
        return run()
    except KeyboardInterrupt as error:
        return _fail(command, error)
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit: point it at nothing.
        with open(os.devnull, "wb") as nothing:
            os.dup2(nothing.fileno(), sys.stdout.fileno())
        return EXIT_PIPE


def _fail(command: str, error: BaseException) -> int:
    code = EXIT_INTERRUPTED if isinstance(error, KeyboardInterrupt) else exit_code(error)
    print(f"ppdm {command}: {one_line(error)}", file=sys.stderr)
    return code


def _shown(path: Path) -> str:
    """``path`` relative to the working folder when it lies inside it, else absolute."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _run(args: argparse.Namespace) -> int:
    from polars_ppdm.jobs.progress import make_progress
    from polars_ppdm.jobs.run import run_pipeline

    progress = make_progress(quiet=args.quiet)
    try:
        result = run_pipeline(
            args.pipeline, ledger=args.ledger, progress=progress, engine=args.engine, as_of=args.as_of
        )
    except (Exception, KeyboardInterrupt) as error:
        _close_quietly(progress)
        code = _fail("run", error)
        # After the ledger's commit the budget is spent, whatever the error: not 130
        # ("nothing spent") nor the error's own status, which a scheduler would retry or alert on.
        return EXIT_PLACING if came_after_recording(error) else code
    reports: list[Path] = []
    missed = "its summary line was not printed"
    try:
        progress.close()
        if not args.no_report:
            missed = "its report was not written (ppdm report writes it)"
            reports = _write_report(args.pipeline, args.ledger, None)
            missed = "its summary line was not printed"
        if not args.quiet:
            print(_summary(result, reports))
    except (Exception, KeyboardInterrupt) as error:
        # Not the error's own status (nor 130 for Ctrl-C): a scheduler that reads 2
        # (invalid pipeline) or 130 (nothing spent) would not know that the run
        # published and spent its budget.
        error.add_note(f"The run had succeeded: its outputs are in place and its budget spent; only {missed}.")
        _fail("run", error)
        return EXIT_REPORT
    return EXIT_OK


def _close_quietly(progress: Any) -> None:
    """Close the progress display after a failed run without hiding the failure."""
    try:
        progress.close()
    except Exception:  # the run's own error is the one to report
        pass


def _summary(result: Any, reports: list[Path]) -> str:
    spent = (
        f"spent {result.unit} {result.spent:g}" if result.new else "identical to an earlier run: spent nothing"
    )
    rows = f"{result.rows:,} rows published, " if result.rows is not None else ""
    if result.reclaimed:
        spent += (
            f"; withdrew the reservation of {len(result.reclaimed)} earlier run(s) killed before they "
            "published anything"
        )
    written = ", ".join(_shown(p) for p in result.outputs) or "none"
    return (
        f"ppdm run: dataset {result.dataset!r}: {rows}{len(result.outputs)} output(s) written; "
        f"{spent} ({result.left:g} left of {result.budget:g}); outputs: {written}; "
        f"manifest: {_shown(result.manifest)} (run {result.run_id[:12]})"
        + (f"; report: {', '.join(_shown(p) for p in reports)}{_spark_note(reports)}" if reports else "")
    )


def _write_report(pipeline_file: str, ledger: str | None, versions: list[str] | None) -> list[Path]:
    from polars_ppdm.jobs.config import load_pipeline
    from polars_ppdm.jobs.paths import check_paths
    from polars_ppdm.jobs.plan import ledger_path
    from polars_ppdm.jobs.report import write_pipeline_report

    pipeline = load_pipeline(pipeline_file)
    book = ledger_path(pipeline, ledger)
    check_paths(
        pipeline, pipeline_file=Path(pipeline_file), ledger=book
    )  # the pages: regular files, nobody's
    return write_pipeline_report(pipeline, ledger=book, versions=cast(Any, versions))


def _spark_note(reports: list[Path]) -> str:
    if any(p.name.endswith("report.internal.html") for p in reports):
        return ""
    return (
        " (public version only: Spark's part files do not keep the row order the internal one pairs rows by)"
    )


def _report(args: argparse.Namespace) -> int:
    versions = None if args.version == "both" else [args.version]
    try:
        written = _write_report(args.pipeline, args.ledger, versions)
    except Exception as error:
        return _fail("report", error)
    if not args.quiet:
        print(
            f"ppdm report: {', '.join(_shown(p) for p in written)}{_spark_note(written) if versions is None else ''}"
        )
    return EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    from pathlib import Path

    from polars_ppdm.jobs.config import load_pipeline
    from polars_ppdm.jobs.plan import make_plan

    try:
        pipeline = load_pipeline(args.pipeline)
        plan = make_plan(pipeline, source=str(Path(args.pipeline)), ledger=args.ledger, as_of=args.as_of)
    except Exception as error:
        return _fail("plan", error)
    print(json.dumps(plan.to_json(), indent=2) if args.json else plan.render())
    # A scheduler gates on plan: it fails wherever run would refuse before reading a row.
    return EXIT_BUDGET if plan.short and not plan.identical_rerun else EXIT_OK


def _ledger(args: argparse.Namespace) -> int:
    from pathlib import Path

    import polars as pl

    try:
        path: Any = args.ledger
        if path is None:
            from polars_ppdm.jobs.config import load_pipeline
            from polars_ppdm.jobs.plan import ledger_path

            if args.pipeline is None:
                print("ppdm ledger: give --ledger PATH or --pipeline FILE", file=sys.stderr)
                return EXIT_INVALID
            path = ledger_path(load_pipeline(args.pipeline), None)
        if not Path(path).exists():
            msg = f"--ledger: {str(path)!r} does not exist (a ledger is made by the first `ppdm run`)."
            raise InputError(msg)
        from polars_ppdm.ledger import Ledger

        book = Ledger(path)
        if args.set_budget is not None or args.set_delta_budget is not None:
            if args.dataset is None:
                msg = "--set-budget and --set-delta-budget need --dataset NAME: the dataset whose budget changes."
                raise InvalidParameterError(msg)
            if book.status(args.dataset).accounting == "zcdp":  # its budget is a rho
                book.set_budget(args.dataset, rho_budget=args.set_budget, delta_budget=args.set_delta_budget)
            else:
                book.set_budget(
                    args.dataset, epsilon_budget=args.set_budget, delta_budget=args.set_delta_budget
                )
        releases = book.table(args.dataset)
        datasets = book.datasets()
        if args.dataset is not None:
            datasets = datasets.filter(pl.col("dataset") == args.dataset)
    except Exception as error:
        return _fail("ledger", error)
    if args.json:
        print(
            json.dumps(
                {"datasets": datasets.to_dicts(), "releases": releases.to_dicts()}, indent=2, default=str
            )
        )
        return EXIT_OK
    from polars_ppdm.ledger import format_ledger

    print(format_ledger(releases, datasets))
    return EXIT_OK


_AS_OF_HELP = (
    "for continual releases: the run's date (YYYY-MM-DD; default today, UTC), or the current period's "
    "number for integer periods; the periods complete before it are published"
)


def as_of_value(text: str) -> dt.date | int:
    """``--as-of``: a date (YYYY-MM-DD) or a period number (an integer >= 0)."""
    if re.fullmatch(r"\d+", text):
        return int(text)
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        msg = (
            f"--as-of must be a date (YYYY-MM-DD) or a period number (an integer >= 0). Got {text!r} instead."
        )
        raise argparse.ArgumentTypeError(msg) from None


def add_commands(subparsers: Any) -> None:
    """Add ``run``, ``report``, ``plan`` and ``ledger`` to the ``ppdm`` command's subparsers."""
    run = subparsers.add_parser(
        "run",
        help="run a pipeline file: perturb, release, write atomically, record the budget spent",
        description="Run a pipeline file (TOML): check the budget in the ledger, stream the inputs "
        "through the perturb steps into the published table, compute the releases, write every "
        "output atomically and then a manifest. An identical re-run spends nothing.",
        epilog=EXIT_CODES_HELP,
    )
    run.add_argument("pipeline", metavar="PIPELINE", help="the pipeline file (TOML)")
    run.add_argument("--ledger", metavar="PATH", help="the ledger (DuckDB file); default: [dataset] ledger")
    run.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    run.add_argument(
        "--engine",
        choices=["polars", "spark"],
        help="where the steps run (same outputs, bit for bit); default: the file's engine, else polars",
    )
    run.add_argument(
        "--no-report", action="store_true", help="do not write the run's report (ppdm report writes it later)"
    )
    run.add_argument("--as-of", type=as_of_value, metavar="DATE|N", help=_AS_OF_HELP)
    run.set_defaults(run=_run)

    report = subparsers.add_parser(
        "report",
        help="write the privacy and utility report of a pipeline's last run (HTML)",
        description="Write the report of the pipeline's last run beside its manifest, as `ppdm run` "
        "does after every run: report.internal.html (with figures of the original data: do not "
        "publish) and report.public.html (computed from the released data only: safe to publish).",
        epilog=EXIT_CODES_HELP,
    )
    report.add_argument("pipeline", metavar="PIPELINE", help="the pipeline file (TOML) of the run")
    report.add_argument(
        "--ledger", metavar="PATH", help="the ledger (DuckDB file); default: [dataset] ledger"
    )
    report.add_argument(
        "--version",
        choices=["internal", "public", "both"],
        default="both",
        help="which version to write (default: both; only the public one for a table Spark wrote)",
    )
    report.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    report.set_defaults(run=_report)

    plan = subparsers.add_parser(
        "plan",
        help="show what a pipeline would read, perturb, release, write and spend (reads no row)",
        description="A dry run: the inputs (row counts from metadata), each step's columns and "
        "epsilon, the outputs, and the budget left before and after, from the ledger.",
        epilog=EXIT_CODES_HELP,
    )
    plan.add_argument("pipeline", metavar="PIPELINE", help="the pipeline file (TOML)")
    plan.add_argument("--ledger", metavar="PATH", help="the ledger (DuckDB file); default: [dataset] ledger")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--as-of", type=as_of_value, metavar="DATE|N", help=_AS_OF_HELP)
    plan.set_defaults(run=_plan)

    ledger = subparsers.add_parser(
        "ledger",
        help="print the privacy-budget ledger: budgets, and every release with its epsilon",
        description="Print each dataset's budget, spent and left, and every release recorded.",
    )
    where = ledger.add_mutually_exclusive_group()
    where.add_argument("--ledger", metavar="PATH", help="the ledger (DuckDB file)")
    where.add_argument("--pipeline", metavar="FILE", help="read the ledger's path from this pipeline file")
    ledger.add_argument("--dataset", metavar="NAME", help="only this dataset")
    ledger.add_argument(
        "--set-budget",
        type=float,
        metavar="BUDGET",
        help="change the dataset's total budget, in its unit: epsilon, or rho for a zCDP dataset (with "
        "--dataset; never below what it has spent), then print the ledger",
    )
    ledger.add_argument(
        "--set-delta-budget",
        type=float,
        metavar="DELTA",
        help="change the dataset's total delta budget, in [0, 1) (with --dataset; never below what is spent)",
    )
    ledger.add_argument("--json", action="store_true", help="print JSON")
    ledger.set_defaults(run=_ledger)


def main(argv: list[str] | None = None) -> int:
    """``python -m polars_ppdm.jobs``: the three subcommands alone (for tests)."""
    parser = argparse.ArgumentParser(prog="ppdm")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return guarded(args.command, lambda: int(args.run(args)))
