"""Parameter checks shared by every operation.

Messages follow one form: "The 'p' parameter of rr_disguise must be <allowed>. Got
<received> instead."
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NoReturn, overload

import numpy as np

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.rr import keep_from_epsilon

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "INTERVAL_SUFFIXES",
    "RESERVED_OUTPUTS",
    "check_bool",
    "check_choice",
    "check_columns",
    "check_fraction",
    "check_int",
    "check_numeric",
    "check_output_names",
    "check_p_or_epsilon",
    "check_real",
    "described",
    "is_count",
    "is_real",
    "keep_probability",
    "per_column",
]


def is_real(value: Any) -> bool:
    """A real number, Python's or NumPy's (np.float32, np.int64), but not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_count(value: Any) -> bool:
    """An integer, Python's or NumPy's, but not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def described(value: Any) -> str:
    """What a parameter that may hold the data (points, labels, a sample) is, without its
    values: its type, and an array's dimensions and dtype (never its shape: the number of
    rows is the data's).

    Examples
    --------
    >>> import numpy as np
    >>> described(np.zeros((3, 2))), described([1, 2]), described(np.float64(1.5))
    ('a 2-D float64 array', 'a list', 'a float64')
    """
    kind = type(value).__name__
    if kind == "ndarray":
        return f"a {value.ndim}-D {value.dtype} array"
    if kind == "Series" and hasattr(value, "dtype"):
        return f"a Series of dtype {value.dtype}"
    return f"a {kind}"


def _fail(name: str, func: str, allowed: str, got: Any) -> NoReturn:
    msg = f"The {name!r} parameter of {func} must be {allowed}. Got {got!r} instead."
    raise InvalidParameterError(msg)


def _where(func: str, column: str | None) -> str:
    return func if column is None else f"{func} (column {column!r})"


@overload
def check_int(
    name: str,
    value: Any,
    func: str,
    *,
    low: int,
    high: int | None = None,
    optional: Literal[False] = False,
    column: str | None = None,
    why: str = "",
) -> int: ...
@overload
def check_int(
    name: str,
    value: Any,
    func: str,
    *,
    low: int,
    high: int | None = None,
    optional: bool,
    column: str | None = None,
    why: str = "",
) -> int | None: ...
def check_int(
    name: str,
    value: Any,
    func: str,
    *,
    low: int,
    high: int | None = None,
    optional: bool = False,
    column: str | None = None,
    why: str = "",
) -> int | None:
    """An integer (Python's or NumPy's of any width, not a bool) in [low, high]; None
    too with ``optional``.  Returned as a Python int."""
    if optional and value is None:
        return None
    if not is_count(value) or value < low or (high is not None and value > high):
        allowed = f"an int >= {low}" if high is None else f"an int in [{low}, {high:,}]"
        _fail(name, _where(func, column), allowed + (" or None" if optional else "") + why, value)
    return int(value)


def check_real(
    name: str,
    value: Any,
    func: str,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    column: str | None = None,
    why: str = "",
) -> float:
    """A finite real number (Python's or NumPy's of any width, not a bool) within the
    bounds given; returned as a Python float."""
    ok = is_real(value) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if open_low else value >= low
    if ok and high is not None:
        ok = value < high if open_high else value <= high
    if not ok:
        if low is not None and high is not None:
            allowed = f"a float in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
        elif low is not None:
            allowed = f"a finite float {'>' if open_low else '>='} {low:g}"
        elif high is not None:
            allowed = f"a finite float {'<' if open_high else '<='} {high:g}"
        else:
            allowed = "a finite float"
        _fail(name, _where(func, column), allowed + why, value)
    return float(value)


def check_bool(name: str, value: Any, func: str) -> bool:
    """True or False (NumPy's bool too); not 0/1, not a string."""
    if not isinstance(value, bool | np.bool_):
        _fail(name, func, "True or False", value)
    return bool(value)


def check_choice(name: str, value: Any, allowed: Sequence[str], func: str) -> str:
    """``value`` must be one of ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        _fail(name, func, "one of " + ", ".join(repr(a) for a in allowed), value)
    return value


def check_fraction(name: str, value: Any, func: str, *, low_open: bool = False) -> float:
    """A real number in [0, 1] (or (0, 1] with ``low_open``)."""
    return check_real(name, value, func, low=0, high=1, open_low=low_open)


def check_p_or_epsilon(p: Any, epsilon: Any, func: str, *, column: str | None = None) -> None:
    """Exactly one of ``p`` (in [0, 1]) and ``epsilon`` (> 0), before k is known."""
    where = f" (column {column!r})" if column is not None else ""
    if (p is None) == (epsilon is None):
        msg = f"{func}{where} needs exactly one of 'p' and 'epsilon'. Got p={p!r}, epsilon={epsilon!r}."
        raise InvalidParameterError(msg)
    if epsilon is not None:
        # inf is allowed: p = 1, the truth published (as rr_epsilon(1.0) is inf).
        if not is_real(epsilon) or math.isnan(epsilon) or not epsilon > 0:
            _fail("epsilon", func + where, "a float > 0", epsilon)
    else:
        check_fraction("p", p, func + where)


def keep_probability(p: Any, epsilon: Any, k: int, func: str, *, column: str | None = None) -> float:
    """Resolve ``p=`` or ``epsilon=`` into the probability of keeping the true value.

    ``epsilon`` is the local-DP parameter: ``p = e^eps / (e^eps + k - 1)``.  p = 1/k is
    refused: every output is then equally likely whatever the input, so the frequencies
    cannot be recovered (the disguise matrix is singular).
    """
    where = f" (column {column!r})" if column is not None else ""
    check_p_or_epsilon(p, epsilon, func, column=column)
    singular = f"(with k = {k} categories the disguise cannot be inverted)"
    if epsilon is not None:
        p = keep_from_epsilon(epsilon, k)
        if math.isclose(p, 1.0 / k, rel_tol=0.0, abs_tol=1e-12):
            # p - 1/k ~ epsilon (k - 1) / k^2: below 1e-12 the estimators' matrix is
            # singular in floating point (a division by zero, NaN frequencies).
            smallest = 1e-12 * k * k / (k - 1)
            _fail(
                "epsilon",
                func + where,
                f"a float >= {smallest:.3g}, where p = e^eps / (e^eps + k - 1) is not 1/k {singular}",
                epsilon,
            )
        return p
    p = check_fraction("p", p, func + where)
    if math.isclose(p, 1.0 / k, rel_tol=0.0, abs_tol=1e-12):
        _fail("p", func + where, f"a float in [0, 1] other than 1/k = {1.0 / k:.6g} {singular}", p)
    return p


def check_columns(
    columns: str | Iterable[str], available: Sequence[str], func: str, name: str = "columns"
) -> list[str]:
    """A non-empty list of distinct, existing column names."""
    # A mapping iterates its keys: refused, not read as a list (its values would be lost).
    if not isinstance(columns, str | Iterable) or isinstance(columns, Mapping):
        _fail(name, func, "a column name or a list of column names", columns)
    cols = [columns] if isinstance(columns, str) else list(columns)
    if not cols:
        _fail(name, func, "one or more column names", cols)
    for c in cols:
        if not isinstance(c, str):
            _fail(name, func, "column names (str)", c)
    if len(set(cols)) != len(cols):
        _fail(name, func, "distinct column names", cols)
    missing = [c for c in cols if c not in available]
    if missing:
        _fail(name, func, f"columns of the frame {list(available)}", missing)
    return cols


def per_column(name: str, value: Any, columns: Sequence[str], func: str) -> dict[str, Any]:
    """Spread a scalar, a mapping or a sequence over ``columns``."""
    if isinstance(value, Mapping):
        missing = [c for c in columns if c not in value]
        extra = [c for c in value if c not in columns]
        if missing or extra:
            _fail(name, func, f"a value or a mapping with exactly the keys {list(columns)}", dict(value))
        return {c: value[c] for c in columns}
    if isinstance(value, list | tuple):
        if len(value) != len(columns):
            _fail(name, func, f"a value or a sequence of {len(columns)} values", value)
        return dict(zip(columns, value, strict=True))
    return {c: value for c in columns}


def check_numeric(schema: Mapping[str, pl.DataType], columns: Sequence[str], func: str) -> None:
    """Every column of ``columns`` has an integer or float dtype in ``schema``."""
    for c in columns:
        if not schema[c].is_numeric():
            msg = f"The column {c!r} of {func} must be numeric (integer or float). Got dtype {schema[c]} instead."
            raise InvalidParameterError(msg)


#: The columns an operation adds beside the columns it is given, which keep their names
#: in its result: a given column called like one of them would clash with it.
RESERVED_OUTPUTS: dict[str, tuple[str, ...]] = {
    "rr_support": ("observed", "frequency", "std_error"),  # the patterns (itemsets name no column)
    "dp_kmeans": ("count",),  # the buckets beside the centres ("lloyd" has none)
    "estimate_covariance": ("column",),  # the matrix's row names
}
#: What ``dp_group_by(..., intervals=True)`` adds after each aggregate's own column.
INTERVAL_SUFFIXES = ("_sd", "_ci_low", "_ci_high")
# Operations whose output names cannot clash: fixed names (itemsets and rules name their
# items as values) or each given name with a suffix of its own (x_bin, x_low, x_centre).
_NO_CLASH = ("rr_apriori", "rr_frequent_itemsets", "dp_histogram", "dp_quadtree")


def check_output_names(
    func: str,
    columns: str | Sequence[str] = (),
    *,
    itemsets: Any = None,
    method: str = "quadtree",
    by: str | Sequence[str] = (),
    aggregates: Sequence[str] = (),
    intervals: bool = False,
) -> None:
    """Refuse a call of ``func`` whose result would hold two columns of one name, from the
    names alone: the operations call it before they read a row, and a pipeline can call it
    on the input's schema before it reserves any budget (the same error).

    ``columns`` (with ``itemsets`` for rr_support, ``method`` for dp_kmeans) are the
    columns given; for dp_group_by, ``by``, the ``aggregates``' output names and
    ``intervals``.  Nothing to check for rr_apriori, rr_frequent_itemsets, dp_histogram
    and dp_quadtree (their output names cannot clash).
    """
    check_choice("func", func, ["dp_group_by", *RESERVED_OUTPUTS, *_NO_CLASH], "check_output_names")
    if func == "dp_group_by":
        _check_group_by_names(_names(by), list(aggregates), intervals)
        return
    if func in _NO_CLASH:
        return
    if (func == "rr_support" and itemsets is not None) or (func == "dp_kmeans" and method == "lloyd"):
        return  # no pattern frame, no buckets: nothing beside the given columns
    reserved = RESERVED_OUTPUTS[func]
    clash = next((c for c in _names(columns) if c in reserved), None)
    if clash is not None:
        own = "its result's own column" + ("s" if len(reserved) > 1 else "")
        msg = (
            f"The 'columns' parameter of {func} must name no column called {_either(reserved)} ({own}). "
            f"Got {clash!r}; rename it first, e.g. frame.rename({{{clash!r}: {clash + '_1'!r}}})."
        )
        raise InvalidParameterError(msg)


def _either(names: Sequence[str]) -> str:
    """'a', 'b' or 'c'."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _names(columns: str | Sequence[str]) -> list[str]:
    return [columns] if isinstance(columns, str) else list(columns)


def _check_group_by_names(by: list[str], aggregates: list[str], intervals: bool) -> None:
    """The group columns, the aggregates' names and, with intervals, their accuracy
    columns are the result's columns: each name once (a second would overwrite the first)."""
    outputs = [*by, *aggregates]
    if intervals:
        outputs += [a + suffix for a in aggregates for suffix in INTERVAL_SUFFIXES]
    clash = sorted({n for n in outputs if outputs.count(n) > 1})
    if clash:
        each = ", ".join(f"<name>{s}" for s in INTERVAL_SUFFIXES[:-1]) + f" and <name>{INTERVAL_SUFFIXES[-1]}"
        extra = f" and, with intervals=True, each one's {each}" if intervals else ""
        msg = (
            f"The aggregates of dp_group_by need distinct output names, other than the group columns{extra}. "
            f"Got {clash} twice; rename the column (frame.rename) or give the aggregate another name=."
        )
        raise InvalidParameterError(msg)
