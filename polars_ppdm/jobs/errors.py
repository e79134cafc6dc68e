"""The errors of a pipeline run, and the exit status of each.

==== ================================================================================
exit meaning
==== ================================================================================
0    success (also an identical re-run, which spends nothing)
1    any other error (a bug, a full disk, a failed write); the message says what failed
2    invalid pipeline: the pipeline file, a step's parameters, the secret's source, or
     the input's columns against the steps (also a bad command line)
3    budget refused: the run would spend more epsilon than the dataset has left;
     nothing was read and nothing was spent
4    an input is missing or unreadable (no file matches, a damaged file)
5    the ledger is busy (another run held it longer than its timeout); nothing spent
6    an input changed while the run read it (its bytes, size, times or inode differ
     from when it was fingerprinted), or a re-run of a recorded run id computed other
     outputs than the run recorded (a step that is not deterministic); nothing was
     published and nothing spent
7    ``ppdm run``: the run succeeded (its outputs are in place, its budget spent) but
     what followed failed or was interrupted: its report (``ppdm report`` writes it; a
     re-run spends nothing) or its summary line
8    ``ppdm run``: the ledger had recorded the run as published (its budget is spent)
     when putting its outputs in place failed or was interrupted: some outputs may be
     missing; running the same pipeline again places them and spends nothing
130  interrupted (Ctrl-C, SIGINT) before the run was recorded: nothing was published
     and nothing spent
==== ================================================================================
"""

from __future__ import annotations

from polars_ppdm.exceptions import InvalidParameterError, PPDMError

__all__ = [
    "EXIT_BUDGET",
    "EXIT_BUSY",
    "EXIT_CHANGED",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_OTHER",
    "EXIT_PLACING",
    "EXIT_REPORT",
    "InputChangedError",
    "InputError",
    "PipelineError",
    "ReleaseMismatchError",
    "came_after_recording",
    "mark_recorded",
]

EXIT_OK = 0
EXIT_OTHER = 1
EXIT_INVALID = 2
EXIT_BUDGET = 3
EXIT_INPUT = 4
EXIT_BUSY = 5
EXIT_CHANGED = 6
EXIT_REPORT = 7
EXIT_PLACING = 8
EXIT_INTERRUPTED = 130


def mark_recorded(error: BaseException) -> None:
    """Say on ``error`` that it came after the ledger recorded the run as published."""
    error.ppdm_run_recorded = True  # type: ignore[attr-defined]


def came_after_recording(error: BaseException) -> bool:
    """Whether ``error`` came after the ledger recorded the run (see :func:`mark_recorded`):
    its budget is spent whatever the error, so a scheduler must not read it as nothing done."""
    return bool(getattr(error, "ppdm_run_recorded", False))


class PipelineError(InvalidParameterError):
    """A pipeline file that cannot run: the message names the step and the field."""


class InputError(PPDMError):
    """An input of a pipeline is missing or cannot be read."""


class ReleaseMismatchError(PPDMError):
    """A re-run of a recorded run id would publish other bits than the run recorded: it
    is refused (never released under the earlier run's charge)."""


class InputChangedError(ReleaseMismatchError):
    """An input changed between its fingerprint and the end of the run: the outputs may
    be over other data than the run id names, so nothing is published (exit 6)."""
