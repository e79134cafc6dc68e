"""Market-basket transactions to one-hot frames (one Boolean column per item)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from pathlib import Path

import numpy as np
import polars as pl

from polars_ppdm._frame import eager
from polars_ppdm._validation import check_columns
from polars_ppdm.exceptions import InvalidParameterError

__all__ = ["read_transactions", "transactions_to_onehot"]


def read_transactions(source: str | PathLike | Iterable[str], *, sep: str | None = None) -> pl.DataFrame:
    """Read transactions, one per line, into a frame with a list column ``items``.

    Parameters
    ----------
    source : path or iterable of str
        A file (groceries: comma-separated; FIMI ``.dat``: space-separated) or lines.
    sep : str, optional
        Item separator; None splits on whitespace.  Empty items are ignored; a line with
        no items is an empty transaction (kept: it counts in every support).

    Examples
    --------
    >>> read_transactions(["milk,bread", "bread", ""], sep=",")["items"].to_list()
    [['milk', 'bread'], ['bread'], []]
    """
    if sep is not None and (not isinstance(sep, str) or sep == ""):
        msg = f"The 'sep' parameter of read_transactions must be a non-empty string or None (whitespace). Got {sep!r} instead."
        raise InvalidParameterError(msg)
    allowed = "a path (str or os.PathLike) or an iterable of lines (str)"
    if isinstance(source, str | PathLike):
        try:
            with Path(source).open(encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except UnicodeDecodeError:
            # Not the decoder's own words: they quote the file's bytes and their offset.
            msg = f"The 'source' parameter of read_transactions must be a UTF-8 text file. {str(source)!r} is not."
            raise InvalidParameterError(msg) from None
    elif isinstance(source, bytes | bytearray | memoryview) or not isinstance(source, Iterable):
        msg = f"The 'source' parameter of read_transactions must be {allowed}. Got {source!r:.80} instead."
        raise InvalidParameterError(msg)
    else:
        lines = []
        for line in source:
            if not isinstance(line, str):
                msg = (
                    f"The 'source' parameter of read_transactions must be {allowed}. "
                    f"Got a line of type {type(line).__name__} instead."
                )
                raise InvalidParameterError(msg)
            lines.append(line.rstrip("\r\n"))
    baskets = [[item.strip() for item in line.split(sep) if item.strip()] for line in lines]
    return pl.DataFrame({"items": baskets}, schema={"items": pl.List(pl.String)})


def transactions_to_onehot(
    transactions: pl.DataFrame | pl.Series,
    column: str = "items",
    *,
    items: Sequence[str] | None = None,
) -> pl.DataFrame:
    """One Boolean column per item: True where the transaction holds the item.

    Parameters
    ----------
    transactions : polars.DataFrame or polars.Series
        A list column of item names (a frame's ``column``, or a Series).
    column : str, default 'items'
        The list column of a frame (the column :func:`read_transactions` makes); ignored
        for a Series.
    items : sequence of str, optional
        The item columns, in this order.  Default: every item seen, sorted.  An item of
        the data missing from ``items`` is an error (nothing is dropped silently).

    Returns
    -------
    polars.DataFrame
        One row per transaction, in order; duplicates within a transaction count once.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.Series("items", [["milk", "bread"], ["bread"], []])
    >>> transactions_to_onehot(t).rows()
    [(True, True), (True, False), (False, False)]
    """
    transactions = eager(transactions)
    if isinstance(transactions, pl.DataFrame):
        check_columns([column], transactions.columns, "transactions_to_onehot", name="column")
        series = transactions[column]
    elif isinstance(transactions, pl.Series):
        series = transactions
    else:
        msg = (
            "The 'transactions' parameter of transactions_to_onehot must be a polars DataFrame, "
            f"LazyFrame or Series with a list column. Got {type(transactions).__name__} instead."
        )
        raise InvalidParameterError(msg)
    if items is not None and not isinstance(items, Iterable):
        msg = f"The 'items' parameter of transactions_to_onehot must be a list of item names (str). Got {items!r} instead."
        raise InvalidParameterError(msg)
    items = items if items is None or isinstance(items, str) else list(items)  # once: it may be a generator
    if isinstance(items, str) or (items is not None and not all(isinstance(i, str) for i in items)):
        msg = f"The 'items' parameter of transactions_to_onehot must be a list of item names (str). Got {items!r} instead."
        raise InvalidParameterError(msg)
    if not isinstance(series.dtype, pl.List):
        msg = f"transactions_to_onehot needs a list column of items. Got dtype {series.dtype} instead."
        raise InvalidParameterError(msg)
    if series.null_count():
        msg = "transactions_to_onehot: some transactions are null; use [] for an empty basket."
        raise InvalidParameterError(msg)
    lists = series.cast(pl.List(pl.String))
    flat = lists.filter(lists.list.len() > 0).explode()  # (explode turns [] into a null)
    rows = np.repeat(np.arange(len(series)), series.list.len().to_numpy())
    if flat.null_count():
        msg = "transactions_to_onehot: some transactions hold null items."
        raise InvalidParameterError(msg)
    if items is None and not len(flat) and len(series):
        msg = (
            "transactions_to_onehot: all the transactions are empty, so there are no "
            "items to make columns of (a frame without columns has no rows); pass items=[...]."
        )
        raise InvalidParameterError(msg)
    names = sorted(flat.unique().to_list()) if items is None else list(items)
    if len(set(names)) != len(names):
        msg = (
            f"The 'items' parameter of transactions_to_onehot must be distinct names. Got {names!r} instead."
        )
        raise InvalidParameterError(msg)
    lookup = pl.Series(names, dtype=pl.String)
    if (~flat.is_in(lookup.implode())).any():
        msg = "transactions_to_onehot: the transactions hold items that are not in 'items'; list every item."
        raise InvalidParameterError(msg)
    index = (
        flat.replace_strict(lookup, pl.int_range(len(names), eager=True), return_dtype=pl.Int64)
        .to_numpy()
        .astype(np.int64, copy=False)
    )
    matrix = np.zeros((len(names), len(series)), dtype=bool)
    matrix[index, rows] = True
    return pl.DataFrame(
        {name: matrix[j] for j, name in enumerate(names)}, schema={n: pl.Boolean for n in names}
    )
