"""What every differentially private release shares: public bounds, the privacy unit,
the budget, and the keyed noise streams."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm._bounds import DATA_BOUNDS, check_bounds
from polars_ppdm._encoding import check_key_dtype, row_keys
from polars_ppdm._frame import fresh_names
from polars_ppdm._validation import check_int, is_real
from polars_ppdm.dp.accountant import BudgetAccountant, ParallelBlock
from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.dp_noise import contribution_words
from polars_ppdm.secret import SecretLike, require_strong_secret, resolve_secret

__all__ = [
    "DATA_BOUNDS",
    "NOT_CHARGED",
    "bound_contributions",
    "charge",
    "check_accountant",
    "check_bounds",
    "check_max_contributions",
    "check_points",
    "check_public_n",
    "check_unit_key",
    "private_points",
    "refuse_data_bounds",
    "release_secret",
    "unit_words",
]

# Said by every error raised after charge(): the budget stays spent.
# Said by every refusal of bad data: it happens before any charge.
NOT_CHARGED = "nothing was released or charged"


def check_max_contributions(max_contributions: Any, key: str | None, func: str) -> int:
    max_contributions = check_int("max_contributions", max_contributions, func, low=1)
    if key is None and max_contributions != 1:
        msg = (
            f"{func}: max_contributions={max_contributions} needs key= (the column naming the person); "
            "without a key each row is its own privacy unit."
        )
        raise InvalidParameterError(msg)
    return int(max_contributions)


def check_public_n(n: Any, func: str) -> float | None:
    """``n=``: None (then estimated with part of the budget) or a public row count."""
    if n is not None and (not is_real(n) or not 0 < n < np.inf):
        msg = f"The 'n' parameter of {func} must be a finite number > 0 (a public estimate of the row count). Got {n!r} instead."
        raise InvalidParameterError(msg)
    return n


def check_unit_key(key: Any, schema: pl.Schema, func: str, name: str = "key") -> str:
    """The privacy unit's column: present, integer or string (checked before any budget
    is spent and before the data is read); ``name``: the parameter's name."""
    if not isinstance(key, str) or key not in schema:
        msg = f"The {name!r} parameter of {func} names no column: {key!r}. Columns: {list(schema.names())}."
        raise InvalidParameterError(msg)
    check_key_dtype(schema[key], key, func)
    return key


def unit_words(
    units: pl.Series, columns: Sequence[pl.Series], secret: bytes, func: str, *, key: str
) -> np.ndarray:
    """The contribution word of every row (element-wise: any batch, any engine):
    :func:`polars_ppdm.kernels.dp_noise.contribution_words` of the unit's 64-bit row
    key (``units``, the column named ``key``) and the row's values in the release's
    ``columns`` cast to float64.  A null unit is refused: over() would make every null
    one unit, many people bounded as if they were one."""
    if units.null_count():
        msg = (
            f"The key column {key!r} of {func} has null values; every row needs its privacy "
            f"unit. Drop or fill them first ({NOT_CHARGED})."
        )
        raise InvalidParameterError(msg)
    values, nulls = [], []
    for series in columns:
        column = series.cast(pl.Float64)
        null = column.is_null().to_numpy() if column.null_count() else None
        values.append((column.fill_null(0.0) if null is not None else column).to_numpy())
        nulls.append(null)
    return contribution_words(secret, row_keys(units.rename(key), secret=secret, func=func), values, nulls)


def bound_contributions(
    frame: pl.LazyFrame,
    key: str | None,
    max_contributions: int,
    secret: bytes,
    func: str,
    columns: Sequence[str],
) -> pl.LazyFrame:
    """Keep at most ``max_contributions`` rows per privacy unit (the ``key`` value).

    The rows kept are those of smallest contribution word (:func:`unit_words`): a keyed
    PRF of the unit and of the row's values in the release's ``columns``, so the rows
    kept depend neither on the row order nor on batches or partitions, and a re-run with
    the same secret over the same rows keeps the same ones.  Rows of equal word hold the
    same values in ``columns``: which of them is kept does not change the release.
    """
    if key is None:
        return frame
    schema = frame.collect_schema()
    check_unit_key(key, schema, func)
    # Apart from every column: named like the key, the word would replace the units it ranks within.
    (word_column,) = fresh_names(schema.names(), "__ppdm_unit_word")
    cols = list(columns)
    fields = [pl.col(key).alias("k"), *(pl.col(c).alias(f"c{i}") for i, c in enumerate(cols))]

    def words(rows: pl.Series) -> pl.Series:
        batch = rows.struct.unnest()
        values = [batch[f"c{i}"] for i in range(len(cols))]
        return pl.Series(word_column, unit_words(batch["k"], values, secret, func, key=key), dtype=pl.UInt64)

    word = pl.struct(fields).map_batches(words, return_dtype=pl.UInt64, is_elementwise=True)
    # The words first, as a column: inside over() the function would run once per unit.
    return (
        frame.with_columns(word.alias(word_column))
        .filter(pl.col(word_column).rank("ordinal").over(key) <= max_contributions)
        .drop(word_column)
    )


def refuse_data_bounds(bounds: Any) -> None:
    """Refuse ``bounds="data"`` for a DP release (before :func:`check_bounds`, which would
    read them): the bounds set the grid and the clamping, so a release over the data's own
    min and max publishes them, unprotected (the top bin's edge is the exact maximum).
    Bounds of a DP release are public inputs."""
    if isinstance(bounds, str) and bounds == DATA_BOUNDS:
        msg = (
            "The 'bounds' parameter of a differentially private release must be public (low, high) pairs; "
            "bounds='data' is refused: it published the data's exact minimum and maximum, which no epsilon "
            "covers. Take bounds from the column's definition (a codebook, a schema, the domain)."
        )
        raise InvalidParameterError(msg)


def release_secret(secret: SecretLike, func: str) -> bytes:
    """The AES key behind a DP release: ``secret`` resolved (None: fresh OS entropy),
    refused if guessable (an int, one repeated byte or short pattern), unless made by
    :meth:`~polars_ppdm.secret.Secret.for_tests`."""
    return require_strong_secret(resolve_secret(secret), func).key


def check_accountant(accountant: Any, func: str) -> None:
    """``accountant=``: a BudgetAccountant, a block of its ``parallel()``, or None (checked
    when the release is set up)."""
    if accountant is not None and not isinstance(accountant, BudgetAccountant | ParallelBlock):
        msg = (
            f"The 'accountant' parameter of {func} must be a BudgetAccountant, a block of its parallel(), or None. "
            f"Got {type(accountant).__name__} instead."
        )
        raise InvalidParameterError(msg)


def charge(
    accountant: BudgetAccountant | ParallelBlock | None,
    epsilon: float | None,
    release: str,
    func: str,
    *,
    why: str = "",
    delta: float = 0.0,
    check_only: bool = False,
    rho: float | None = None,
    privacy_unit: str | None,
) -> None:
    """Spend ``epsilon`` (or, for a Gaussian release, ``rho``) on the accountant (if
    any), once per computed release; ``privacy_unit`` is the release's (its column, None
    for each row), refused by an accountant that counts per another.

    Called after the data is read and checked (a refusal of bad data costs nothing and
    says nothing computed from the data) and before any noise is drawn: an over-budget
    release is refused with nothing released.  ``check_only``: only refuse a release the
    accountant has no room for (when it is set up, before the data is read).
    """
    if accountant is None:
        return
    check_accountant(accountant, func)
    if check_only:  # when the release is set up: an over-budget call never reads the data
        accountant.check(epsilon, release, why=why, delta=delta, rho=rho, privacy_unit=privacy_unit)
        return
    accountant.spend(epsilon, release, why=why, delta=delta, rho=rho, privacy_unit=privacy_unit)


def private_points(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    *,
    key: str | None,
    max_contributions: int,
    secret: bytes,
    func: str,
) -> np.ndarray:
    """The (n, d) float64 points of ``columns`` after contribution bounding; nulls, NaN
    and infinities are refused (an empty table gives no point: its release is noise alone)."""
    lazy = bound_contributions(
        frame if isinstance(frame, pl.LazyFrame) else frame.lazy(),
        key,
        max_contributions,
        secret,
        func,
        columns,
    )
    points = lazy.select(pl.col(c).cast(pl.Float64) for c in columns).collect().to_numpy()
    check_points(int((~np.isfinite(points)).any(axis=1).sum()), columns, func)
    return np.ascontiguousarray(points)


def check_points(bad: int, columns: Sequence[str], func: str) -> None:
    """Refuse rows with a null, NaN or infinite coordinate (after contribution bounding,
    by any engine), before any charge; the message says no count computed from the data.

    An empty table is released like any other (the noise alone): refusing it told with
    certainty whether anyone was there, for free (attack review 68)."""
    if bad:
        msg = f"{func}: the columns {list(columns)} hold null, NaN or infinite values; drop or fill them first ({NOT_CHARGED})."
        raise InvalidParameterError(msg)
