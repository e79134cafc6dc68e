"""A table the report reads: a DataFrame in memory, or files it reads a column at a time.

``ppdm report`` (and ``ppdm run`` after a run) reports on the published table and, for
the internal version, on the run's inputs.  Read whole, the inputs sit in memory for
the whole report -- every column of them, also those no step names -- beside the
published table and every figure's working copies (issue 30).  A :class:`Table` over
a scan of the input files reads only the column a section asks for, and keeps only
the last one.  Each column is read whole, as before: every figure comes from the same
values.  (The published table is read once, into memory: both versions read every
column of it.)

Only a plain scan of files belongs here: a LazyFrame that computes its columns (a
perturbation) would be computed again for every column, and one that draws at random
would not give the same rows twice; :func:`~polars_ppdm.reporting.report` collects
any LazyFrame it is given, as it always did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import polars as pl

__all__ = ["Table"]

_T = TypeVar("_T")


class Table:
    """A table read a column at a time (a scan of files), or a DataFrame.

    Parameters
    ----------
    frame
        A DataFrame, or a LazyFrame that only scans files (Parquet or Arrow IPC: a
        column is read without the others).
    refuse
        What a scan's read error becomes (the job's own error, naming the file), or
        None to let it through.

    A column read from a file comes in chunks (one per row group); NumPy needs it in
    one piece, so every figure computed in NumPy copied it (8 bytes a row, beside the
    column).  A column of a scan is put in one piece once, as it is read: the same
    values, half the memory.  (A DataFrame's column is left as it is: replacing one
    column of a frame by a column in one piece makes Polars put every column of the
    frame in one piece at its next ``select``.)
    """

    def __init__(
        self,
        frame: pl.DataFrame | pl.LazyFrame,
        refuse: Callable[[BaseException], Exception] | None = None,
    ) -> None:
        self._frame = frame
        self._refuse = refuse
        if isinstance(frame, pl.LazyFrame):
            self.schema = self._reading(frame.collect_schema)
            self.height = int(self._reading(lambda: frame.select(pl.len()).collect()).item())
        else:
            self.schema = frame.schema
            self.height = frame.height
        self.columns = list(self.schema.names())
        self.width = len(self.columns)
        self._last: tuple[str, pl.Series] | None = None
        # Figures computed from this table alone (and the parameters in their keys),
        # for the next report of the same table: ppdm report's public version finds
        # there what its internal version computed from the released table.
        self.memo: dict[tuple[Any, ...], Any] = {}

    @property
    def lazy(self) -> bool:
        """True when the columns are read from files as they are asked for."""
        return isinstance(self._frame, pl.LazyFrame)

    def __getitem__(self, column: str) -> pl.Series:
        """One column; of a scan, read once and kept until another column is asked for."""
        if isinstance(self._frame, pl.DataFrame):
            return self._frame[column]
        if self._last is None or self._last[0] != column:
            self._last = None  # the previous column goes before the next one is read
            scan = self._frame
            self._last = (column, self._reading(lambda: scan.select(column).collect().to_series().rechunk()))
        return self._last[1]

    def select(self, columns: Sequence[str]) -> pl.DataFrame:
        """These columns, whole."""
        if isinstance(self._frame, pl.DataFrame):
            return self._frame.select(columns)
        if self._last is not None and list(columns) == [self._last[0]]:
            return self._last[1].to_frame()
        scan = self._frame
        return self._reading(lambda: scan.select(columns).collect())

    def gather(self, columns: Sequence[str], rows: np.ndarray) -> pl.DataFrame:
        """These columns at these row positions; of a scan, one column at a time (each is
        read whole to take its rows), so that only one is in memory."""
        if isinstance(self._frame, pl.DataFrame):
            return self._frame.select(columns)[pl.Series(rows)]
        return pl.DataFrame([self._rows_of(column, rows) for column in columns])

    def _rows_of(self, column: str, rows: np.ndarray) -> pl.Series:
        if self._last is not None and self._last[0] == column:
            return self._last[1][pl.Series(rows)]
        scan = self._frame
        assert isinstance(scan, pl.LazyFrame)
        return self._reading(
            lambda: scan.select(pl.col(column).gather(pl.Series(rows))).collect().to_series()
        )

    def _reading(self, read: Callable[[], _T]) -> _T:
        try:
            return read()
        # A file replaced or rewritten since the scan read its footer can make Polars
        # panic (PanicException, a BaseException) rather than raise.
        except (pl.exceptions.PolarsError, OSError, pl.exceptions.PanicException) as error:
            if self._refuse is None:
                raise
            raise self._refuse(error) from None
