"""The bridge between Polars Series and kernel arrays: row keys and category codes.

Every front-end (Polars expressions, DuckDB Arrow UDFs, the DuckDB bulk path) turns its
columns into Polars Series (zero-copy from Arrow) and calls these helpers, so the same
input gives the same kernel arrays whatever the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_ppdm.exceptions import InvalidParameterError
from polars_ppdm.kernels.string_keys import keyed_string_keys

__all__ = ["Domain", "RowShape", "aligned", "null_key_message", "row_keys", "row_shape", "with_nulls"]


def null_key_message(column: str, func: str) -> str:
    """The refusal of a null key where a row needs a draw, the same on every engine
    (``native/src/plugin.rs`` writes it too).  Like every message of the library about
    the rows, it names the column and the fault, never a count, value or position of the
    data: two tables with the same schema get the same words (docs/privacy-model.md)."""
    return (
        f"The key column {column!r} of {func} has null values in rows that need a random draw; "
        "every such row needs a key: fill the key or drop those rows first."
    )


@dataclass(frozen=True)
class RowShape:
    """What the expressions of an element-wise step say of their lengths, read when the
    step is built (before any data): ``value_literal``: the value is a literal (public:
    repeated over the key's rows); ``key_scalar``: the key is one value for every row (a
    literal or an aggregate: repeated over the values' rows); None where this Polars
    cannot tell (``Expr.meta.is_scalar`` is newer than 1.34)."""

    value_literal: bool = False
    key_scalar: bool | None = None


def _one_value_message(func: str, value: str, key: str) -> str:
    return (
        f"{func} perturbs each unit's own value, but the column {value!r} is one value (an aggregate) against "
        f"the rows of the key {key!r}: each row would draw its own perturbation of it, and their average would "
        "give it away. Perturb the rows and aggregate after, or release the aggregate with a dp_* function."
    )


def row_shape(value: pl.Expr, key: pl.Expr, func: str) -> RowShape:
    """Refuse, when the step is built, a value that is one value for the whole frame (an
    aggregate such as ``pl.col("x").sum()``; a literal is public and allowed): each row
    would draw its own perturbation of the one value, and their average gives it away.
    Refused here, before any data, it is refused whatever the engine and whether Polars
    broadcasts it before the step sees it (a lazy query on Polars 2 does).

    Examples
    --------
    >>> row_shape(pl.col("x"), pl.lit(3), "add_noise").key_scalar in (True, None)
    True
    """
    is_scalar = getattr(value.meta, "is_scalar", None)
    if is_scalar is None:  # Polars 1.34: the batch tells what it can (see aligned)
        return RowShape()
    literal = value.meta.is_literal(allow_aliasing=True)
    if is_scalar() and not literal:
        raise InvalidParameterError(_one_value_message(func, _name(value), _name(key)))
    return RowShape(value_literal=literal, key_scalar=key.meta.is_scalar())


def _name(expr: pl.Expr) -> str:
    try:
        return expr.meta.output_name()
    except Exception:  # no single output name: the expression's text
        return str(expr)


def aligned(
    values: pl.Series, keys: pl.Series, func: str, shape: RowShape | None = None
) -> tuple[pl.Series, pl.Series]:
    """The values and the row keys of an element-wise step, of one length.

    A one-value key (a literal, ``key=pl.lit(3)``) is repeated over the values' rows, as
    Polars broadcasts it in a lazy query: every row is then one unit, and equal values
    share their coin; so is a literal value.  A key or value cut to another length (a
    ``filter`` of one of them) is refused, in words that do not depend on the lengths.
    ``shape`` is what :func:`row_shape` read off the expressions; without it (Polars
    1.34, which cannot tell), a one-row key is repeated and a one-row value against
    several keys refused as an aggregate.

    Examples
    --------
    >>> v, k = aligned(pl.Series("x", [2.5, 1.0, 4.0]), pl.Series("id", [7]), "add_noise")
    >>> v.to_list(), k.to_list()
    ([2.5, 1.0, 4.0], [7, 7, 7])
    """
    n, m = len(values), len(keys)
    if n == m:
        return values, keys
    known = shape is not None and shape.key_scalar is not None
    if m == 1 and (shape.key_scalar if known else True):  # type: ignore[union-attr]
        return values, keys.new_from_index(0, n)
    if n == 1 and shape is not None and shape.value_literal:
        return values.new_from_index(0, m), keys
    if n == 1 and not known:
        raise InvalidParameterError(_one_value_message(func, values.name, keys.name))
    msg = (
        f"{func}: the column {values.name!r} and the key {keys.name!r} have different numbers of rows (one of "
        "them filtered or aggregated?); an element-wise step needs one key per row, of the same rows."
    )
    raise InvalidParameterError(msg)


def check_key_dtype(dtype: pl.DataType, name: str, func: str) -> None:
    """Refuse a key column that is neither integer nor text (String, Categorical, Enum)."""
    textual = dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)
    if not (dtype.is_integer() or textual):
        msg = f"The key column {name!r} of {func} must be an integer or string column. Got dtype {dtype} instead."
        raise InvalidParameterError(msg)


def row_keys(
    keys: pl.Series, *, secret: bytes, func: str, required_rows: np.ndarray | None = None
) -> np.ndarray:
    """64-bit row keys of a key column.

    Integers give their 64-bit two's-complement pattern; strings a keyed 64-bit hash of
    their UTF-8 bytes under ``secret``
    (:func:`polars_ppdm.kernels.string_keys.keyed_string_keys`): without the secret no
    one can compute a string's key, or choose an id that shares another's.  A null key is
    an error where a row needs a draw (``required_rows``, default all rows): it has no
    identity.  Checks cost nothing when the key column has no nulls (its null count is
    metadata).
    """
    dtype = keys.dtype
    check_key_dtype(dtype, keys.name, func)  # before the nulls: the lazy plan checks the dtype first
    if keys.null_count():
        nulls = keys.is_null().to_numpy()
        if required_rows is not None:
            nulls &= required_rows
        if nulls.any():
            raise InvalidParameterError(null_key_message(keys.name, func))
    # Null keys of rows that need no draw (null values) are 0 / "": any word will do.
    if dtype.is_integer():
        keys = keys.fill_null(0) if keys.null_count() else keys
        if dtype in _WIDE_INTEGERS:
            keys = _narrowed(keys, func)
        if keys.dtype == pl.UInt64:
            return keys.to_numpy()
        return keys.cast(pl.Int64).to_numpy().view(np.uint64)
    import pyarrow as pa  # strings only: ~50 MB of RSS that integer keys never need

    keys = keys.cast(pl.String)
    arr = (keys.fill_null("") if keys.null_count() else keys).to_arrow()
    arr = pa.concat_arrays(arr.chunks) if isinstance(arr, pa.ChunkedArray) else arr
    arr = arr.cast(pa.large_string())
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    return keyed_string_keys(secret, offsets, data)


_WIDE_INTEGERS = tuple(getattr(pl, name) for name in ("Int128", "UInt128") if hasattr(pl, name))


def _narrowed(keys: pl.Series, func: str) -> pl.Series:
    """A 128-bit key column as Int64 or UInt64, the same keys as those dtypes give.

    Refused when its values span more than 64 bits: folding them into 64 would give two
    rows the same random draws.
    """
    if keys.is_empty():
        return keys.cast(pl.Int64)
    low, high = int(keys.min()), int(keys.max())  # type: ignore[arg-type]  # an integer column
    if low >= -(2**63) and high < 2**63:
        return keys.cast(pl.Int64)
    if low >= 0 and high < 2**64:
        return keys.cast(pl.UInt64)
    msg = (
        f"The key column {keys.name!r} of {func} must hold integers that fit in 64 bits "
        f"(all in [-2^63, 2^63) or all in [0, 2^64)). Its {keys.dtype} values do not; cast the key "
        "to String to use wider keys (strings are hashed)."
    )
    raise InvalidParameterError(msg)


@dataclass(frozen=True)
class Domain:
    """The public category domain of a column: what randomized response may output.

    The domain comes from the dtype (Boolean, Enum) or from the user, never from the
    values present in the data: a category that no row has would then never be produced,
    so the output would reveal which categories occur (a rare diagnosis, say), and two
    batches or partitions could see different domains and disguise differently.
    """

    dtype: pl.DataType
    categories: tuple[Any, ...]
    binary_int: bool = False

    @property
    def k(self) -> int:
        return len(self.categories)

    @classmethod
    def of(cls, dtype: pl.DataType, categories: Sequence[Any] | None, *, func: str, column: str) -> Domain:
        where = f"{func} (column {column!r})"
        if categories is not None:
            if isinstance(categories, str | bytes) or not isinstance(categories, Iterable):
                msg = (
                    f"The 'categories' parameter of {where} must be a list of two or more "
                    f"distinct, non-null values. Got {categories!r} instead."
                )
                raise InvalidParameterError(msg)
            cats = tuple(categories)
            # None is refused: a null is a missing value, and it stays null, never an output.
            if len(cats) < 2 or len(set(cats)) != len(cats) or any(c is None for c in cats):
                msg = (
                    f"The 'categories' parameter of {where} must list two or more distinct, "
                    f"non-null values. Got {list(cats)!r} instead."
                )
                raise InvalidParameterError(msg)
            if isinstance(dtype, pl.Enum) and tuple(dtype.categories.to_list()) != cats:
                msg = (
                    f"The 'categories' parameter of {where} must match the Enum's categories "
                    f"{dtype.categories.to_list()} (or be omitted). Got {list(cats)!r} instead."
                )
                raise InvalidParameterError(msg)
            if dtype == pl.Boolean and set(cats) != {False, True}:
                msg = f"A Boolean column has the categories [False, True]; {where} got {list(cats)!r}."
                raise InvalidParameterError(msg)
            if dtype == pl.Boolean:
                return cls(dtype, (False, True))
            if not (
                dtype.is_integer()
                or dtype in (pl.String, pl.Categorical, pl.Boolean)
                or isinstance(dtype, pl.Enum)
            ):
                cls._bad_dtype(dtype, where)
            return cls(dtype, cats)
        if dtype == pl.Boolean:
            return cls(dtype, (False, True))
        if isinstance(dtype, pl.Enum):
            return cls(dtype, tuple(dtype.categories.to_list()))
        if dtype.is_integer():
            return cls(dtype, (0, 1), binary_int=True)
        if dtype in (pl.String, pl.Categorical):
            msg = (
                f"The 'categories' parameter of {where} is required for a {dtype} column: "
                "the domain of a randomized response must be public, never read off the "
                "data (or cast the column to pl.Enum). Got None instead."
            )
            raise InvalidParameterError(msg)
        cls._bad_dtype(dtype, where)
        raise AssertionError  # unreachable

    @staticmethod
    def _bad_dtype(dtype: pl.DataType, where: str) -> None:
        msg = (
            f"{where} accepts Boolean, 0/1 integer, Enum, Categorical or String columns. "
            f"Got dtype {dtype} instead."
        )
        raise InvalidParameterError(msg)

    def encode(self, values: pl.Series, *, func: str) -> tuple[np.ndarray, np.ndarray | None]:
        """Codes in [0, k) (0 where null) and the validity mask (None when nothing is null).

        Binary columns keep a narrow dtype (bool, or the column's own integers) so the
        hot path of :func:`rr_disguise` never widens a column to 64 bits.
        """
        valid = values.is_not_null().to_numpy() if values.null_count() else None
        if valid is not None and (self.dtype == pl.Boolean or self.binary_int):
            values = values.fill_null(False if self.dtype == pl.Boolean else 0)
        if self.dtype == pl.Boolean:
            return values.to_numpy(), valid
        if isinstance(self.dtype, pl.Enum):
            return values.to_physical().fill_null(0).cast(pl.Int64).to_numpy(), valid
        if self.binary_int:
            low, high = values.min(), values.max()
            # An integer column: both are ints, or both None when every value is null.
            if isinstance(low, int) and isinstance(high, int) and (low < 0 or high > 1):
                msg = (
                    f"The column {values.name!r} of {func} is binary (an integer column with no "
                    "'categories') and must hold only 0 and 1. It holds other values; pass "
                    "categories=[...] for a k-ary integer column, or fix those rows first."
                )
                raise InvalidParameterError(msg)
            if values.dtype in (pl.Int128, pl.UInt128):  # NumPy has no 128-bit integers; 0/1 fit in 8
                values = values.cast(pl.Int8)
            return values.to_numpy(), valid
        source = values.cast(pl.String) if self.dtype == pl.Categorical else values
        lookup = pl.Series("categories", list(self.categories))
        if source.dtype != lookup.dtype:
            try:
                lookup = lookup.cast(source.dtype)
            except pl.exceptions.PolarsError:
                msg = (
                    f"The 'categories' parameter of {func} (column {values.name!r}) must hold "
                    f"values of the column's dtype {values.dtype}. Got {list(self.categories)!r} instead."
                )
                raise InvalidParameterError(msg) from None
        if (source.is_not_null() & ~source.is_in(lookup.implode())).any():
            msg = (
                f"The column {values.name!r} of {func} holds values outside its 'categories' "
                f"{list(self.categories)}; list every value the column can hold, or drop or fix those rows first."
            )
            raise InvalidParameterError(msg)
        codes = source.replace_strict(
            lookup, pl.int_range(len(lookup), eager=True), default=0, return_dtype=pl.Int64
        )
        return codes.fill_null(0).to_numpy(), valid

    def decode(self, codes: np.ndarray, valid: np.ndarray | None, *, name: str) -> pl.Series:
        """Series of the original dtype from codes, with nulls where ``valid`` is False."""
        if self.dtype == pl.Boolean or self.binary_int:
            values = codes.astype(bool, copy=False) if self.dtype == pl.Boolean else codes
            return with_nulls(pl.Series(name, values, dtype=self.dtype), valid)
        idx = with_nulls(pl.Series(codes.astype(np.uint32, copy=False)), valid)
        out = pl.Series(list(self.categories)).gather(idx)
        if out.dtype != self.dtype:
            out = out.cast(self.dtype)
        return out.alias(name)


def with_nulls(series: pl.Series, valid: np.ndarray | None) -> pl.Series:
    """``series`` with nulls where ``valid`` is False (None: no nulls), and zeros in the
    data buffer under those nulls.

    Under a null, Arrow keeps whatever the data buffer holds, and an Arrow IPC file
    writes it out.  A perturbation draws for every row, so the slot under a null would
    carry a keyed draw (the coin or the noise of the unit's filler value), or the input's
    own hidden value: the result takes the all-zero data of a null column there instead.
    """
    if valid is None or valid.all():
        return series
    nulls = pl.repeat(None, len(series), dtype=series.dtype, eager=True)
    return series.zip_with(pl.Series(valid), nulls).alias(series.name)
