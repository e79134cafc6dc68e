"""Every error and warning class of polars_ppdm, in one place."""

from __future__ import annotations

__all__ = ["BudgetExceededError", "InvalidParameterError", "PPDMError", "PrivacyLeakWarning", "SecretError"]


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


class BudgetExceededError(PPDMError):
    """A release would spend more privacy budget than its accountant has left.

    Raised before anything is computed or released.
    """
