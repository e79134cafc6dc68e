"""The contract every public entry point keeps, whatever it is given (issue 14).

A call either

* raises a clear error: a :class:`~polars_ppdm.exceptions.PPDMError` subclass, or a
  ``ValueError`` / ``TypeError`` raised by polars_ppdm itself (or by Python when the call
  does not bind to the signature), whose message names a parameter or a column and holds
  no secret; or
* returns a result that keeps what the function documents (row count, row order, nulls,
  the kind of frame it was given),

and it never lets out a raw internal error (ZeroDivisionError, IndexError, KeyError,
AttributeError, a Polars exception or panic from inside, NumPy's ValueError/TypeError...)
nor a warning other than polars_ppdm's own (a NumPy ``RuntimeWarning`` is a finding).

:func:`checked` is the one place that decides; every fuzz test goes through it.  Findings
in files the suite's author could not change are listed once, in :data:`KNOWN_FINDINGS`,
each with a repro and the file that needs the fix: a violation that matches an entry is
counted, not failed, so the suite stays green while the fix is pending.  Delete an entry
when its fix lands; :func:`test_every_known_finding_still_reproduces` (in
``test_fuzz_known.py``) fails on an entry that no longer reproduces.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import re
import traceback
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import duckdb
import polars as pl

import polars_ppdm as ppdm
from polars_ppdm.exceptions import BudgetExceededError, EstimateWarning, PPDMError, PrivacyLeakWarning

# The one secret every fuzz call uses: no message may hold it in any spelling.
SECRET_HEX = "d1ce5eed3a9c1d7f2b4e6085a1c3d5e7f90b2d4c6e8f0a1b3c5d7e9f1a2b4c6d"  # not a repeated pattern
SECRET = ppdm.Secret(bytes.fromhex(SECRET_HEX))
_SECRET_SPELLINGS = (
    SECRET_HEX,
    repr(bytes.fromhex(SECRET_HEX))[2:26],  # b'\xd1\xce^\xed...' as a repr prints it
    str(int(SECRET_HEX, 16))[:24],
    bytes.fromhex(SECRET_HEX).decode("latin-1")[:8],
)

PACKAGE_DIR = os.path.dirname(ppdm.__file__)

# Wordings of Python's and NumPy's own errors: a ValueError/TypeError with one of these
# is a raw internal error even when polars_ppdm code is where it was raised.
_RAW_WORDINGS = re.compile(
    r"object has no attribute|unsupported operand|not subscriptable|is not iterable|"
    r"cannot convert float NaN|division by zero|index out of range|unhashable type|"
    r"object is not callable|not supported between instances|invalid literal for int\(\)|"
    r"could not convert string to float|zero-size array|math domain error|"
    r"argument must be a string or a (real )?number|object cannot be interpreted as an integer|"
    r"truth value of an array|setting an array element with a sequence|"
    r"cannot be safely interpreted|Python int too large|OverflowError|"
    r"Cannot cast|operands could not be broadcast"
)

# Warnings a call may raise: polars_ppdm's own, which say what the user should know.
ALLOWED_WARNINGS: tuple[type[Warning], ...] = (PrivacyLeakWarning, EstimateWarning)


@dataclasses.dataclass(frozen=True)
class Finding:
    """A contract violation in a file the fuzz suite's author may not edit."""

    id: str
    function: str  # the target name as the suite counts it (see CASES)
    pattern: str  # regex over "<ExceptionType>: <message>" of the violation
    file: str  # the file that needs the fix
    repro: str  # a minimal reproduction, runnable in a Python shell


# One list: each entry is filtered out of the fuzz results (the suite stays green) until
# it is fixed, when the entry must go (test_fuzz_known.py checks that each still fails).
KNOWN_FINDINGS: list[Finding] = []


def _known(function: str, description: str) -> Finding | None:
    for finding in KNOWN_FINDINGS:
        if finding.function == function and re.search(finding.pattern, description, re.S):
            return finding
    return None


class ContractViolation(AssertionError):
    """A call broke the contract (and no KNOWN_FINDINGS entry covers it)."""


# Examples run per target, and how each ended: printed by the fuzz conftest.
COUNTS: collections.Counter[str] = collections.Counter()
OUTCOMES: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
KNOWN_HITS: collections.Counter[str] = collections.Counter()
ERRORS: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)


def secret_free(text: str) -> bool:
    low = text.lower()
    return not any(s.lower() in low for s in _SECRET_SPELLINGS)


def _raised_in(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return frames[-1].filename if frames else ""


def _in_package(filename: str) -> bool:
    return os.path.abspath(filename).startswith(PACKAGE_DIR + os.sep)


def _signature_error(exc: BaseException) -> bool:
    """Python's own refusal to bind a call (unexpected/missing argument): raised before
    any polars_ppdm code runs, and it names the argument."""
    return isinstance(exc, TypeError) and bool(
        re.search(
            r"(unexpected keyword argument|missing \d+ required|positional argument|"
            r"takes \d+ positional|got multiple values)",
            str(exc),
        )
    )


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _names_something(message: str, names: Iterable[str]) -> bool:
    """The message names a parameter, a column, the frame, or the function that refused."""
    if re.search(r"^\w+(\(|:| got| takes| needs)", message):
        return True
    if re.search(
        r"\bcolumns?\b|parameter|argument|\bkey\b|\bsecret\b|\bframe\b|DataFrame|LazyFrame", message, re.I
    ):
        return True
    return any(n and (repr(n) in message or f"'{n}'" in message or f"{n}=" in message) for n in names)


_PLUGIN_REFUSAL = "the plugin failed with message: "


def violation_of_error(
    exc: BaseException, names: Iterable[str] = (), *, expression: bool = False
) -> str | None:
    """Why ``exc`` is not a clear error (None when it is one)."""
    message = str(exc)
    if not secret_free(message) or not secret_free(repr(exc)):
        return "the error message holds the secret"
    if isinstance(exc, PPDMError):
        if not message.strip():
            return "a PPDMError with an empty message"
        if not _names_something(message, names) and not isinstance(exc, BudgetExceededError):
            return "the message names no parameter or column"
        return None
    if isinstance(exc, pl.exceptions.ColumnNotFoundError) and expression:
        # An expression cannot see the frame it will run on: Polars' own error for a
        # missing column (it names the column) is the error a user gets from pl.col too.
        return None
    if isinstance(exc, pl.exceptions.ComputeError) and message.startswith(_PLUGIN_REFUSAL):
        # A compiled plugin of the library cannot raise a Python exception: Polars wraps its
        # refusal in ComputeError (polars_ppdm.perturb._plugin.plugin_errors). Clear only if
        # the library's own message inside names what is wrong.
        inner = message[len(_PLUGIN_REFUSAL) :].split("\n\n", 1)[0]
        if not _names_something(inner, names):
            return "a compiled plugin's refusal names no parameter or column"
        return None
    if isinstance(exc, pl.exceptions.PolarsError | pl.exceptions.PanicException):
        return "a Polars error leaked from inside"
    if isinstance(exc, duckdb.Error):
        return "a DuckDB error leaked from inside"
    if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError) and exc.filename is not None:
        return None  # the OS's own error for a path, which it names
    if isinstance(exc, ValueError | TypeError):
        if _signature_error(exc):
            return None
        if not _in_package(_raised_in(exc)):
            return f"a {type(exc).__name__} raised outside polars_ppdm ({_raised_in(exc)})"
        if _RAW_WORDINGS.search(message):
            return "a Python/NumPy internal wording"
        if not _names_something(message, names):
            return "the message names no parameter or column"
        return None
    return f"a raw {type(exc).__name__}"


def checked(
    target: str,
    call: Callable[[], Any],
    *,
    names: Iterable[str] = (),
    check_result: Callable[[Any], None] | None = None,
) -> Any:
    """Run ``call`` under the contract; returns its result, or None when it raised a clear
    error (or a violation covered by KNOWN_FINDINGS).

    ``names``: the parameter and column names a clear message may name; ``check_result``
    asserts what a successful result must keep.
    """
    COUNTS[target] += 1
    names = list(names)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            if isinstance(exc, ContractViolation):
                raise
            why = violation_of_error(exc, names, expression=target.startswith("expr."))
            if why is None:
                OUTCOMES[target]["clear error"] += 1
                ERRORS[target][re.sub(r"Got .*", "", str(exc).split("\n")[0])[:90]] += 1
                _check_warnings(target, caught)
                return None
            _violate(target, f"{why}: {describe(exc)}", exc)
            return None
        _check_warnings(target, caught)
    if check_result is not None:
        try:
            check_result(result)
        except AssertionError as exc:
            _violate(target, f"wrong result: {exc}", exc)
            return None
    OUTCOMES[target]["result"] += 1
    return result


def _check_warnings(target: str, caught: list[warnings.WarningMessage]) -> None:
    for w in caught:
        text = str(w.message)
        if not secret_free(text):
            _violate(target, f"a warning holds the secret: {w.category.__name__}: {text}")
        if not issubclass(w.category, ALLOWED_WARNINGS):
            _violate(target, f"a raw warning: {w.category.__name__}: {text} ({w.filename}:{w.lineno})")


def _violate(target: str, description: str, exc: BaseException | None = None) -> None:
    finding = _known(target, description)
    if finding is not None:
        KNOWN_HITS[finding.id] += 1
        OUTCOMES[target]["known finding"] += 1
        return
    detail = "".join(traceback.format_exception(exc)) if exc is not None else ""
    msg = f"[{target}] {description}\n{detail}"
    raise ContractViolation(msg) from None


# -- result checks ---------------------------------------------------------------------


def collected(result: Any) -> Any:
    return result.collect() if isinstance(result, pl.LazyFrame) else result


def same_kind(frame: Any, result: Any) -> None:
    assert type(result) is type(frame), f"a {type(frame).__name__} in, a {type(result).__name__} out"


def rows_kept(
    before: pl.DataFrame,
    after: pl.DataFrame,
    changed: Iterable[str],
    *,
    nulls: str = "same",
    order: bool = True,
) -> None:
    """``after`` keeps the rows of ``before``: same height and columns, the columns not in
    ``changed`` equal (in order unless ``order`` is False), and nulls of the changed
    columns kept (``nulls="same"``: each its own; ``"row"``: a null anywhere in the
    changed columns nulls the row's every changed column; ``"any"``: not checked)."""
    changed = list(changed)
    assert after.height == before.height, f"{before.height} rows in, {after.height} out"
    assert set(before.columns) <= set(after.columns), (
        f"columns lost: {set(before.columns) - set(after.columns)}"
    )
    if order:
        for c in before.columns:
            if c not in changed:
                assert after[c].equals(before[c]), f"the untouched column {c!r} changed (row order?)"
    if nulls == "same":
        for c in changed:
            assert after[c].is_null().equals(before[c].is_null()), f"the nulls of {c!r} moved"
    elif nulls == "row" and changed and before.height:
        any_null = before.select(pl.any_horizontal(pl.col(changed).is_null())).to_series()
        for c in changed:
            assert after[c].is_null().equals(any_null.alias(c)), f"the nulls of {c!r} are not the row's"


def finite_or_null(value: Any) -> bool:
    return (
        value is None or (isinstance(value, float) and not math.isnan(value)) or not isinstance(value, float)
    )
