"""Every error and warning class of polars_ppdm, in one place."""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "EstimateWarning",
    "InvalidParameterError",
    "LedgerBusyError",
    "PPDMError",
    "PrivacyLeakWarning",
    "SecretError",
]


class PPDMError(Exception):
    """Base class of polars_ppdm errors."""


class InvalidParameterError(PPDMError, ValueError):
    """A parameter or an input column is outside what the operation accepts.

    The message names the parameter, the allowed values and what was received, in the
    form "The 'p' parameter of rr_disguise must be ... Got ... instead."
    """


class SecretError(PPDMError, ValueError):
    """A secret could not be read or has the wrong form (its value is never shown)."""


class PrivacyLeakWarning(UserWarning):
    """The call does something that leaks information the user may not expect."""


class EstimateWarning(UserWarning):
    """An estimate from perturbed data is outside the range its quantity can take.

    For example a variance below 0 after the declared noise variance is subtracted: the
    declared noise is larger than the noise the column got, or sampling error dominates.
    The estimate is returned as computed (clipping it would bias it); the warning says
    which values and by how many standard errors.
    """


class BudgetExceededError(PPDMError):
    """A release would spend more privacy budget than its accountant has left.

    Raised before anything is computed or released.
    """


class LedgerWriteError(PPDMError, OSError):
    """The privacy-budget ledger's file could not be written (a full disk, a read-only
    mount) or read.  The transaction was rolled back: the ledger is as it was before the
    operation, and the message names the file."""


class LedgerBusyError(PPDMError, TimeoutError):
    """Another process held the privacy-budget ledger's file for longer than the timeout.

    DuckDB lets one process at a time open a database file for writing; the ledger
    retries with growing pauses and raises this (naming the file and what to do) when
    the wait runs out.  Nothing was spent.
    """
